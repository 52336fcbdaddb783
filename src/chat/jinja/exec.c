/* exec.c -- statements (text, output, if, for, set, macros, filter
 * blocks, break / continue), macro calls, and the entry points
 * st_jinja_parse / st_jinja_render.
 */
#include <stdlib.h>
#include <string.h>

#include "chat/jinja/internal.h"

struct st_jinja_tmpl {
    struct jarena a;        /* the source copy, tokens and tree */
    struct jnode *root;
};

void st_jinja_opts_default(struct st_jinja_opts *lim)
{
    lim->now_s = 0;
    lim->max_output_bytes = (size_t)4 << 20;
    lim->max_memory_bytes = (size_t)64 << 20;
    lim->max_steps = 20u * 1000 * 1000;
    lim->max_depth = 200;
}

static enum st_status emit(struct jrender *r, struct st_str s)
{
    if (s.len > r->lim->max_output_bytes - r->out->len)
        return jr_fail(r, "the output grew past %zu bytes", r->lim->max_output_bytes);
    return st_buf_append(r->out, s.ptr, s.len) == ST_OK ? ST_OK : jr_nomem(r);
}

/* A new scope over 'parent'; the caller makes it current and restores the
 * previous one before returning. */
static enum st_status new_scope(struct jrender *r, struct jscope *s, struct jscope *parent)
{
    s->parent = parent;
    if (!(s->vars = jv_dict_new(r->a, 0)))
        return jr_nomem(r);
    return ST_OK;
}

/* Run 'body' with its output captured as a string. */
static enum st_status capture(struct jrender *r, const struct jnode *body, struct st_str *out)
{
    struct st_buf buf, *saved = r->out;
    enum st_status rc;
    char *p;

    st_buf_init(&buf);
    r->out = &buf;
    rc = jr_exec(r, body);
    r->out = saved;
    if (rc == ST_OK) {
        p = ja_strdup(r->a, buf.data ? buf.data : "", buf.len);
        out->ptr = p;
        out->len = buf.len;
        if (!p)
            rc = jr_nomem(r);
    }
    st_buf_fini(&buf);
    return rc;
}

static enum st_status bind(struct jrender *r, const struct jnode *n, const struct jv *v)
{
    if (n->n_names == 1)
        return jr_set(r, n->names[0], *v);
    if (v->kind != JV_LIST || v->u.l->n != n->n_names)
        return jr_fail(r, "cannot unpack %s into %zu names", jv_type_name(v->kind), n->n_names);
    for (size_t i = 0; i < n->n_names; i++)
        TRY(jr_set(r, n->names[i], v->u.l->items[i]));
    return ST_OK;
}

/* The items a loop visits: its iterable, less those its "if" rejects. */
static enum st_status loop_items(struct jrender *r, const struct jnode *n, struct jlist **out)
{
    struct jv it, ok;
    struct jlist *all, *kept;

    TRY(jr_eval(r, n->a, &it));
    TRY(jr_iter(r, &it, &all));
    if (!n->d) {
        *out = all;
        return ST_OK;
    }
    if (!(kept = jv_list_new(r->a, all->n)))
        return jr_nomem(r);
    for (size_t i = 0; i < all->n; i++) {
        TRY(bind(r, n, &all->items[i]));
        TRY(jr_eval(r, n->d, &ok));
        if (jv_truthy(&ok))
            kept->items[kept->n++] = all->items[i];
    }
    *out = kept;
    return ST_OK;
}

static enum st_status exec_for(struct jrender *r, const struct jnode *n)
{
    struct jscope scope, *saved = r->scope;
    struct jloop *lp = ja_alloc(r->a, sizeof(*lp));
    struct jlist *items = NULL;
    enum st_status rc;

    if (!lp)
        return jr_nomem(r);
    TRY(new_scope(r, &scope, saved));
    r->scope = &scope;
    rc = loop_items(r, n, &items);
    lp->items = items;
    lp->length = rc == ST_OK ? (int64_t)items->n : 0;
    for (int64_t i = 0; rc == ST_OK && i < lp->length; i++) {
        lp->index0 = i;
        rc = bind(r, n, &items->items[i]);
        if (rc == ST_OK)
            rc = jr_set(r, (struct st_str){ "loop", 4 },
                        (struct jv){ .kind = JV_LOOP, .u.loop = lp });
        if (rc == ST_OK)
            rc = jr_exec(r, n->b);
        if (r->flow == JR_BREAK) {
            r->flow = 0;
            break;
        }
        r->flow = 0;
    }
    r->scope = saved;
    if (rc == ST_OK && lp->length == 0 && n->c)
        rc = jr_exec(r, n->c);
    return rc;
}

static enum st_status exec_set(struct jrender *r, const struct jnode *n)
{
    struct jv v, *ns;
    struct st_str s;

    if (n->kind == JN_SET_BLOCK) {
        TRY(capture(r, n->b, &s));
        return jr_set(r, n->names[0], jv_str(s));
    }
    TRY(jr_eval(r, n->a, &v));
    r->line = n->line;
    r->col = n->col;
    if (!n->attr.len)
        return bind(r, n, &v);
    ns = jr_lookup(r, n->names[0]);
    if (!ns || ns->kind != JV_DICT || !ns->u.d->ns)
        return jr_fail(r, "cannot assign attribute on non-namespace '%.*s'",
                       (int)n->names[0].len, n->names[0].ptr);
    return jv_dict_set(r->a, ns->u.d, n->attr, v) == ST_OK ? ST_OK : jr_nomem(r);
}

enum st_status jr_call_macro(struct jrender *r, const struct jnode *m, const struct jv *args,
                             const struct st_str *kw, size_t n, struct jv *out)
{
    struct jscope scope, *saved = r->scope;
    struct jv v;
    struct st_str s;
    size_t pos = 0;
    enum st_status rc;

    TRY(new_scope(r, &scope, r->root));
    r->scope = &scope;
    for (size_t p = 0; p < m->n_names; p++) {
        const struct jv *given = NULL;
        for (size_t i = 0; i < n && !given; i++)
            if (kw && kw[i].len && st_str_eq(kw[i], m->names[p]))
                given = &args[i];
        while (!given && pos < n && kw && kw[pos].len)
            pos++;
        if (!given && pos < n)
            given = &args[pos++];
        v = jv_undef();
        if (given)
            v = *given;
        else if (m->kids[p] && (rc = jr_eval(r, m->kids[p], &v)) != ST_OK)
            return r->scope = saved, rc;
        if ((rc = jr_set(r, m->names[p], v)) != ST_OK)
            return r->scope = saved, rc;
    }
    rc = capture(r, m->b, &s);
    r->flow = 0;
    r->scope = saved;
    if (rc == ST_OK)
        *out = jv_str(s);
    return rc;
}

static enum st_status exec_node(struct jrender *r, const struct jnode *n)
{
    struct jv v;
    struct st_str s;
    struct jargs x;

    switch (n->kind) {
    case JN_SEQ:
        for (size_t i = 0; i < n->n_kids && !r->flow; i++)
            TRY(jr_exec(r, n->kids[i]));
        return ST_OK;
    case JN_TEXT:
        return emit(r, n->name);
    case JN_OUT:
        TRY(jr_eval(r, n->a, &v));
        TRY(jr_str(r, &v, &s));
        return emit(r, s);
    case JN_IF:
        TRY(jr_eval(r, n->a, &v));
        if (jv_truthy(&v))
            return jr_exec(r, n->b);
        return n->c ? jr_exec(r, n->c) : ST_OK;
    case JN_FOR:
        return exec_for(r, n);
    case JN_SET:
    case JN_SET_BLOCK:
        return exec_set(r, n);
    case JN_MACRO:
        return jr_set(r, n->name, (struct jv){ .kind = JV_MACRO, .u.macro = n });
    case JN_BREAK:
    case JN_CONTINUE:
        r->flow = n->kind == JN_BREAK ? JR_BREAK : JR_CONTINUE;
        return ST_OK;
    case JN_FILTER_BLOCK:
        TRY(capture(r, n->b, &s));
        v = jv_str(s);
        x = (struct jargs){ NULL, n->a->kw, n->a->n_kids };
        if (x.n && !(x.v = ja_alloc(r->a, x.n * sizeof(*x.v))))
            return jr_nomem(r);
        for (size_t i = 0; i < x.n; i++)
            TRY(jr_eval(r, n->a->kids[i], &x.v[i]));
        TRY(jr_filter(r, n->a->name, &v, &x, &v));
        TRY(jr_str(r, &v, &s));
        return emit(r, s);
    default:
        return jr_eval(r, n, &v);
    }
}

enum st_status jr_exec(struct jrender *r, const struct jnode *n)
{
    enum st_status rc;

    rc = jr_enter(r, n);
    if (rc != ST_OK)
        return rc;
    rc = exec_node(r, n);
    r->depth--;
    return rc;
}

/* Jinja reads the source as Python's splitlines() joined with "\n": every
 * line break (\r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029) becomes
 * "\n", and one trailing newline is dropped (keep_trailing_newline off). */
static char *normalize(struct jarena *a, const char *src, size_t len, size_t *out_len)
{
    char *dst = ja_alloc(a, len + 1);
    size_t o = 0;

    if (!dst)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        size_t skip = 0;
        if (c == '\r' && i + 1 < len && src[i + 1] == '\n')
            skip = 1;
        else if (c == 0xC2 && i + 1 < len && (unsigned char)src[i + 1] == 0x85)
            skip = 1;
        else if (c == 0xE2 && i + 2 < len && (unsigned char)src[i + 1] == 0x80 &&
                 ((unsigned char)src[i + 2] == 0xA8 || (unsigned char)src[i + 2] == 0xA9))
            skip = 2;
        else if (!(c == '\r' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E)))
            skip = SIZE_MAX;
        if (skip == SIZE_MAX) {
            dst[o++] = (char)c;
        } else {
            dst[o++] = '\n';
            i += skip;
        }
    }
    if (o > 0 && dst[o - 1] == '\n')
        o--;
    dst[o] = '\0';
    *out_len = o;
    return dst;
}

enum st_status st_jinja_parse(const char *src, size_t len, struct st_jinja_tmpl **out,
                              struct st_err *err)
{
    struct st_jinja_tmpl *t = calloc(1, sizeof(*t));
    struct jparser p = { .err = err };
    enum st_status rc;
    char *copy;
    size_t n = 0;

    *out = NULL;
    if (!t)
        return st_err_set(err, ST_ERR_NOMEM, "chat template: out of memory");
    ja_init(&t->a, SIZE_MAX / 2);
    p.a = &t->a;
    copy = normalize(&t->a, src ? src : "", src ? len : 0, &n);
    rc = copy ? jl_lex(&t->a, copy, n, &p.t, &p.n, err) : ST_ERR_NOMEM;
    if (rc == ST_OK)
        rc = jp_template(&p, &t->root);
    if (rc == ST_ERR_NOMEM)
        st_err_set(err, rc, "chat template: out of memory");
    if (rc != ST_OK) {
        st_jinja_free(t);
        return rc;
    }
    *out = t;
    return ST_OK;
}

void st_jinja_free(struct st_jinja_tmpl *t)
{
    if (!t)
        return;
    ja_fini(&t->a);
    free(t);
}

static enum st_status load_vars(struct jrender *r, const cJSON *ctx)
{
    struct jv v;

    for (const cJSON *c = ctx ? ctx->child : NULL; c; c = c->next) {
        if (!c->string)
            continue;
        if (jv_from_json(r->a, c, &v, 0) != ST_OK)
            return jr_fail(r, "variable '%s' is too large or too deep", c->string);
        TRY(jr_set(r, (struct st_str){ c->string, strlen(c->string) }, v));
    }
    return ST_OK;
}

/* The root scope (root), the context's variables in it, then the template. */
static enum st_status run(struct jrender *r, struct jscope *root, const struct st_jinja_tmpl *t,
                          const cJSON *ctx)
{
    enum st_status rc = new_scope(r, root, NULL);
    r->scope = r->root = root;
    TRY(rc);
    TRY(load_vars(r, ctx));
    return jr_exec(r, t->root);
}

enum st_status st_jinja_render(const struct st_jinja_tmpl *t, const cJSON *ctx,
                               const struct st_jinja_opts *opts, struct st_buf *out,
                               struct st_err *err)
{
    struct st_jinja_opts dflt;
    struct jarena a;
    struct jscope root;
    struct st_buf buf;
    struct jrender r = { .a = &a, .out = &buf, .err = err, .line = 1, .col = 1,
                         .call_macro = jr_call_macro };
    enum st_status rc;

    st_jinja_opts_default(&dflt);
    r.lim = opts ? opts : &dflt;
    ja_init(&a, r.lim->max_memory_bytes);
    st_buf_init(&buf);
    rc = run(&r, &root, t, ctx);
    if (rc == ST_OK && st_buf_append(out, buf.data ? buf.data : "", buf.len) != ST_OK)
        rc = st_err_set(err, ST_ERR_NOMEM, "chat template: out of memory");
    st_buf_fini(&buf);
    ja_fini(&a);
    return rc;
}
