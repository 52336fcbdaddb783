/* tree.c -- an intrusive AVL tree for the waiting queue.
 *
 * Nodes live inside the jobs (struct st_sched_links), so the queue never
 * allocates and insert/remove cannot fail. Every key is unique (the arrival
 * number breaks ties), so a node is found by comparing it with the nodes on
 * its way down: no parent pointers are needed. Recursion depth is the tree
 * height, at most about 1.44 * log2(n): 25 levels for 100k jobs.
 *
 * Ordering: left is worse, right is better; the maximum is the best job.
 */
#include "internal.h"

static int32_t height(const struct st_sched_node *n)
{
    return n ? n->height : 0;
}

static void fix_height(struct st_sched_node *n)
{
    int32_t l = height(n->left), r = height(n->right);
    n->height = 1 + (l > r ? l : r);
}

static struct st_sched_node *rotate_right(struct st_sched_node *n)
{
    struct st_sched_node *l = n->left;
    n->left = l->right;
    l->right = n;
    fix_height(n);
    fix_height(l);
    return l;
}

static struct st_sched_node *rotate_left(struct st_sched_node *n)
{
    struct st_sched_node *r = n->right;
    n->right = r->left;
    r->left = n;
    fix_height(n);
    fix_height(r);
    return r;
}

/* Restore the AVL property at 'n' after one of its subtrees changed height
 * by at most one; returns the new subtree root. */
static struct st_sched_node *rebalance(struct st_sched_node *n)
{
    fix_height(n);
    int32_t bf = height(n->left) - height(n->right);
    if (bf > 1) {
        if (height(n->left->left) < height(n->left->right))
            n->left = rotate_left(n->left);
        return rotate_right(n);
    }
    if (bf < -1) {
        if (height(n->right->right) < height(n->right->left))
            n->right = rotate_right(n->right);
        return rotate_left(n);
    }
    return n;
}

static struct st_sched_node *insert(struct st_sched_node *t, struct st_sched_node *n,
                                    st_sched_node_cmp_fn *cmp)
{
    if (!t) {
        n->left = n->right = NULL;
        n->height = 1;
        return n;
    }
    if (cmp(n, t) < 0)
        t->left = insert(t->left, n, cmp);
    else
        t->right = insert(t->right, n, cmp);
    return rebalance(t);
}

static struct st_sched_node *remove_min(struct st_sched_node *t, struct st_sched_node **min)
{
    if (!t->left) {
        *min = t;
        return t->right;
    }
    t->left = remove_min(t->left, min);
    return rebalance(t);
}

static struct st_sched_node *remove_node(struct st_sched_node *t, struct st_sched_node *n,
                                         st_sched_node_cmp_fn *cmp)
{
    ST_ASSERT(t != NULL);   /* 'n' is not in this tree: a broken invariant */
    if (t == n) {
        struct st_sched_node *l = t->left, *r = t->right, *m;
        if (!r)
            return l;
        r = remove_min(r, &m);
        m->left = l;
        m->right = r;
        return rebalance(m);
    }
    if (cmp(n, t) < 0)
        t->left = remove_node(t->left, n, cmp);
    else
        t->right = remove_node(t->right, n, cmp);
    return rebalance(t);
}

void st_sched_tree_insert(struct st_sched_node **root, struct st_sched_node *n,
                          st_sched_node_cmp_fn *cmp)
{
    *root = insert(*root, n, cmp);
}

void st_sched_tree_remove(struct st_sched_node **root, struct st_sched_node *n,
                          st_sched_node_cmp_fn *cmp)
{
    *root = remove_node(*root, n, cmp);
    n->left = n->right = NULL;
    n->height = 0;
}

struct st_sched_node *st_sched_tree_max(struct st_sched_node *root)
{
    if (!root)
        return NULL;
    while (root->right)
        root = root->right;
    return root;
}

struct st_sched_node *st_sched_tree_min(struct st_sched_node *root)
{
    if (!root)
        return NULL;
    while (root->left)
        root = root->left;
    return root;
}

/* Count of the subtree, or -1 if a height, the balance or the order between
 * a node and its bounds (lo < n < hi) is wrong. */
static int64_t check(const struct st_sched_node *t, const struct st_sched_node *lo,
                     const struct st_sched_node *hi, st_sched_node_cmp_fn *cmp)
{
    if (!t)
        return 0;
    if ((lo && cmp(t, lo) <= 0) || (hi && cmp(t, hi) >= 0))
        return -1;
    int32_t l = height(t->left), r = height(t->right);
    if (t->height != 1 + (l > r ? l : r) || l - r > 1 || r - l > 1)
        return -1;
    int64_t nl = check(t->left, lo, t, cmp);
    int64_t nr = check(t->right, t, hi, cmp);
    if (nl < 0 || nr < 0)
        return -1;
    return nl + nr + 1;
}

int64_t st_sched_tree_check(const struct st_sched_node *root, st_sched_node_cmp_fn *cmp)
{
    return check(root, NULL, NULL, cmp);
}
