/* queue.c -- the waiting queue: who waits for a slot, in which order.
 *
 * A waiting job sits in three intrusive structures at once:
 *   - its model's by_score tree, ordered by (key, seq): the tree top is the
 *     model's best job at any 'now' (see internal.h), the tree bottom its
 *     lowest-ranked one (for shedding);
 *   - its model's by_prio tree, ordered by (priority, seq), only while aging
 *     is on: its top is the pick without the aging term (reorder counters);
 *   - its band's list in arrival order: the head is the band's oldest
 *     waiter, so the oldest wait per band costs O(1).
 * Insert and remove are O(log n); nothing allocates per job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strata/xalloc.h"

struct st_sched_job *st_sched_job_of_score(struct st_sched_node *n)
{
    return n ? ST_CONTAINER_OF(n, struct st_sched_job, links.by_score) : NULL;
}

struct st_sched_job *st_sched_job_of_prio(struct st_sched_node *n)
{
    return n ? ST_CONTAINER_OF(n, struct st_sched_job, links.by_prio) : NULL;
}

/* Equal ranks keep arrival order: the earlier job (smaller seq) is better. */
static int cmp_seq(uint64_t a, uint64_t b)
{
    return a > b ? -1 : (a < b ? 1 : 0);
}

static int cmp_score(const struct st_sched_node *a, const struct st_sched_node *b)
{
    const struct st_sched_job *ja = ST_CONTAINER_OF(a, struct st_sched_job, links.by_score);
    const struct st_sched_job *jb = ST_CONTAINER_OF(b, struct st_sched_job, links.by_score);
    if (ja->links.key != jb->links.key)
        return ja->links.key < jb->links.key ? -1 : 1;
    return cmp_seq(ja->seq, jb->seq);
}

static int cmp_prio(const struct st_sched_node *a, const struct st_sched_node *b)
{
    const struct st_sched_job *ja = ST_CONTAINER_OF(a, struct st_sched_job, links.by_prio);
    const struct st_sched_job *jb = ST_CONTAINER_OF(b, struct st_sched_job, links.by_prio);
    if (ja->priority != jb->priority)
        return ja->priority < jb->priority ? -1 : 1;
    return cmp_seq(ja->seq, jb->seq);
}

void st_sched_models_reserve(struct st_sched *s, int32_t model)
{
    ST_ASSERT(model >= 0 && model < ST_SCHED_MAX_MODELS);
    if (model < s->n_models)
        return;
    int32_t n = model + 1;
    /* At most ST_SCHED_MAX_MODELS small records: bookkeeping, xrealloc. */
    s->models = st_xrealloc(s->models, (size_t)n * sizeof(*s->models));
    memset(s->models + s->n_models, 0, (size_t)(n - s->n_models) * sizeof(*s->models));
    s->n_models = n;
}

static void band_append(struct st_sched_band *b, struct st_sched_job *j)
{
    j->links.band_next = NULL;
    j->links.band_prev = b->tail;
    if (b->tail)
        b->tail->links.band_next = j;
    else
        b->head = j;
    b->tail = j;
}

static void band_unlink(struct st_sched_band *b, struct st_sched_job *j)
{
    if (j->links.band_prev)
        j->links.band_prev->links.band_next = j->links.band_next;
    else
        b->head = j->links.band_next;
    if (j->links.band_next)
        j->links.band_next->links.band_prev = j->links.band_prev;
    else
        b->tail = j->links.band_prev;
    j->links.band_prev = j->links.band_next = NULL;
}

/* Jobs are inserted in arrival order (seq is handed out under the same
 * lock), so appending keeps every band list sorted by seq. */
void st_sched_queue_insert(struct st_sched *s, struct st_sched_job *j)
{
    struct st_sched_model *m = &s->models[j->model];
    struct st_sched_band *b = &s->band[st_band_of(j->priority)];

    st_sched_tree_insert(&m->by_score, &j->links.by_score, cmp_score);
    if (st_sched_aging_on(s))
        st_sched_tree_insert(&m->by_prio, &j->links.by_prio, cmp_prio);
    band_append(b, j);
    m->n_waiting++;
    b->st.queue_depth++;
    s->waiting++;
}

void st_sched_queue_remove(struct st_sched *s, struct st_sched_job *j)
{
    struct st_sched_model *m = &s->models[j->model];
    struct st_sched_band *b = &s->band[st_band_of(j->priority)];

    st_sched_tree_remove(&m->by_score, &j->links.by_score, cmp_score);
    if (st_sched_aging_on(s))
        st_sched_tree_remove(&m->by_prio, &j->links.by_prio, cmp_prio);
    band_unlink(b, j);
    m->n_waiting--;
    b->st.queue_depth--;
    s->waiting--;
}

/* The worst over models: the lowest (key, seq) rank, no affinity. With
 * equal keys the later arrival ranks lower. O(models * log n). */
struct st_sched_job *st_sched_queue_worst(const struct st_sched *s)
{
    struct st_sched_job *worst = NULL;
    for (int32_t m = 0; m < s->n_models; m++) {
        struct st_sched_job *j = st_sched_job_of_score(st_sched_tree_min(s->models[m].by_score));
        if (!j)
            continue;
        if (!worst || st_sched_ranks_before(worst->links.key, worst->seq, j->links.key, j->seq))
            worst = j;
    }
    return worst;
}

/* ---- invariants ------------------------------------------------------ */

static bool fail(char *why, size_t cap, const char *what)
{
    if (why && cap)
        snprintf(why, cap, "%s", what);
    return false;
}

bool st_sched_queue_check(const struct st_sched *s, char *why, size_t cap)
{
    int64_t total = 0;
    for (int32_t m = 0; m < s->n_models; m++) {
        const struct st_sched_model *mq = &s->models[m];
        int64_t n = st_sched_tree_check(mq->by_score, cmp_score);
        if (n != mq->n_waiting)
            return fail(why, cap, "by_score tree broken or its size is off");
        if (st_sched_aging_on(s) && st_sched_tree_check(mq->by_prio, cmp_prio) != n)
            return fail(why, cap, "by_prio tree broken or its size is off");
        total += n;
    }
    if (total != s->waiting)
        return fail(why, cap, "waiting count differs from the trees");
    int64_t listed = 0;
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        int64_t n = 0;
        uint64_t last = 0;
        for (const struct st_sched_job *j = s->band[b].head; j; j = j->links.band_next, n++) {
            if (j->state != ST_JOB_WAITING || (int)st_band_of(j->priority) != b || j->seq <= last)
                return fail(why, cap, "band list holds a wrong job or is out of order");
            last = j->seq;
        }
        if (n != s->band[b].st.queue_depth)
            return fail(why, cap, "band queue_depth differs from its list");
        listed += n;
    }
    if (listed != s->waiting)
        return fail(why, cap, "band lists differ from the waiting count");
    return true;
}
