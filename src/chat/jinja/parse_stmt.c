/* parse_stmt.c -- the template's statements: text, {{ output }}, and the
 * tags if / elif / else, for (with else and a filter), set (to a name, to
 * ns.attr, several names, or a block), macro, filter blocks, break,
 * continue, and generation (Hugging Face's marker, rendered as its body).
 */
#include <string.h>

#include "chat/jinja/internal.h"

#define NODE(var, kind) do { if (!((var) = jp_node(p, (kind)))) return ST_ERR_NOMEM; } while (0)

/* The tag that closes a body: its name, and where its opener was (for
 * the error when it never comes). */
struct jends {
    const char *const *names;
    const char        *opener;
    int                line;
};

static enum st_status parse_body(struct jparser *p, const struct jends *ends, struct jnode **out);

static bool at_end_tag(struct jparser *p, const struct jends *ends)
{
    if (!ends || p->t[p->i].kind != JT_BLOCK_BEGIN || p->t[p->i + 1].kind != JT_NAME)
        return false;
    for (const char *const *e = ends->names; *e; e++)
        if (st_str_eq_c(p->t[p->i + 1].text, *e))
            return true;
    return false;
}

static enum st_status expect_block_end(struct jparser *p)
{
    if (p->t[p->i].kind != JT_BLOCK_END)
        return jp_fail(p, "expected '%%}'");
    p->i++;
    return ST_OK;
}

/* Consume "{% name", the body's end tag (at_end_tag was true). */
static struct st_str take_end(struct jparser *p)
{
    p->i += 2;
    return p->t[p->i - 1].text;
}

static enum st_status push_name(struct jparser *p, struct jnode *n, struct st_str name)
{
    if ((n->n_names & (n->n_names - 1)) == 0) {
        struct st_str *nn = ja_alloc(p->a, (n->n_names ? n->n_names * 2 : 1) * sizeof(*nn));
        if (!nn)
            return ST_ERR_NOMEM;
        if (n->n_names)
            memcpy(nn, n->names, n->n_names * sizeof(*nn));
        n->names = nn;
    }
    n->names[n->n_names++] = name;
    return ST_OK;
}

static enum st_status expect_name(struct jparser *p, struct st_str *out)
{
    if (p->t[p->i].kind != JT_NAME)
        return jp_fail(p, "expected a name");
    *out = p->t[p->i++].text;
    return ST_OK;
}

static enum st_status parse_if(struct jparser *p, int line, struct jnode **out)
{
    static const char *const names[] = { "elif", "else", "endif", NULL };
    static const char *const endif[] = { "endif", NULL };
    struct jends ends = { names, "if", line }, last = { endif, "if", line };
    struct jnode *n;
    struct st_str tag;

    NODE(n, JN_IF);
    TRY(jp_expr(p, &n->a));
    TRY(expect_block_end(p));
    TRY(parse_body(p, &ends, &n->b));
    tag = take_end(p);
    if (st_str_eq_c(tag, "elif")) {
        TRY(parse_if(p, line, &n->c));
        *out = n;
        return ST_OK;
    }
    TRY(expect_block_end(p));
    if (st_str_eq_c(tag, "else")) {
        TRY(parse_body(p, &last, &n->c));
        take_end(p);
        TRY(expect_block_end(p));
    }
    *out = n;
    return ST_OK;
}

static enum st_status parse_for(struct jparser *p, int line, struct jnode **out)
{
    static const char *const names[] = { "else", "endfor", NULL };
    static const char *const endfor[] = { "endfor", NULL };
    struct jends ends = { names, "for", line }, last = { endfor, "for", line };
    struct jnode *n;
    struct st_str name = { "", 0 };

    NODE(n, JN_FOR);
    do {
        if (n->n_names)
            p->i++;
        TRY(expect_name(p, &name));
        TRY(push_name(p, n, name));
    } while (jp_is_op(p, ",") && n->n_names < 2);
    if (!jp_is_name(p, "in"))
        return jp_fail(p, "expected 'in'");
    p->i++;
    TRY(jp_expr_nocond(p, &n->a));
    if (jp_is_name(p, "if")) {
        p->i++;
        TRY(jp_expr_nocond(p, &n->d));
    }
    if (jp_is_name(p, "recursive"))
        return jp_fail(p, "recursive loops are not supported");
    TRY(expect_block_end(p));
    TRY(parse_body(p, &ends, &n->b));
    if (st_str_eq_c(take_end(p), "else")) {
        TRY(expect_block_end(p));
        TRY(parse_body(p, &last, &n->c));
        take_end(p);
    }
    TRY(expect_block_end(p));
    *out = n;
    return ST_OK;
}

static enum st_status parse_set(struct jparser *p, int line, struct jnode **out)
{
    static const char *const endset[] = { "endset", NULL };
    struct jends ends = { endset, "set", line };
    struct jnode *n;
    struct st_str name = { "", 0 };

    NODE(n, JN_SET);
    TRY(expect_name(p, &name));
    TRY(push_name(p, n, name));
    if (jp_is_op(p, ".")) {
        p->i++;
        TRY(expect_name(p, &n->attr));
    }
    while (jp_is_op(p, ",") && !n->attr.len) {
        p->i++;
        TRY(expect_name(p, &name));
        TRY(push_name(p, n, name));
    }
    if (p->t[p->i].kind == JT_BLOCK_END && n->n_names == 1 && !n->attr.len) {
        n->kind = JN_SET_BLOCK;
        p->i++;
        TRY(parse_body(p, &ends, &n->b));
        take_end(p);
        TRY(expect_block_end(p));
        *out = n;
        return ST_OK;
    }
    TRY(jp_expect_op(p, "="));
    TRY(jp_expr(p, &n->a));
    TRY(expect_block_end(p));
    *out = n;
    return ST_OK;
}

static enum st_status parse_macro(struct jparser *p, int line, struct jnode **out)
{
    static const char *const endmacro[] = { "endmacro", NULL };
    struct jends ends = { endmacro, "macro", line };
    struct jnode *n, *def;
    struct st_str name = { "", 0 };

    NODE(n, JN_MACRO);
    TRY(expect_name(p, &n->name));
    TRY(jp_expect_op(p, "("));
    while (!jp_is_op(p, ")")) {
        TRY(expect_name(p, &name));
        TRY(push_name(p, n, name));
        def = NULL;
        if (jp_is_op(p, "=")) {
            p->i++;
            TRY(jp_expr(p, &def));
        }
        TRY(jp_push(p, &n->kids, &n->n_kids, def));
        if (!jp_is_op(p, ","))
            break;
        p->i++;
    }
    TRY(jp_expect_op(p, ")"));
    TRY(expect_block_end(p));
    TRY(parse_body(p, &ends, &n->b));
    take_end(p);
    TRY(expect_block_end(p));
    *out = n;
    return ST_OK;
}

/* {% filter name(args) %}body{% endfilter %}: n->a is a FILTER node with
 * no operand (the executor filters the body's text). */
static enum st_status parse_filter_block(struct jparser *p, int line, struct jnode **out)
{
    static const char *const endfilter[] = { "endfilter", NULL };
    struct jends ends = { endfilter, "filter", line };
    struct jnode *n;

    NODE(n, JN_FILTER_BLOCK);
    NODE(n->a, JN_FILTER);
    TRY(expect_name(p, &n->a->name));
    if (jp_is_op(p, "("))
        TRY(jp_args(p, n->a));
    TRY(expect_block_end(p));
    TRY(parse_body(p, &ends, &n->b));
    take_end(p);
    TRY(expect_block_end(p));
    *out = n;
    return ST_OK;
}

static enum st_status parse_generation(struct jparser *p, int line, struct jnode **out)
{
    static const char *const endgen[] = { "endgeneration", NULL };
    struct jends ends = { endgen, "generation", line };

    TRY(expect_block_end(p));
    TRY(parse_body(p, &ends, out));
    take_end(p);
    return expect_block_end(p);
}

static enum st_status parse_tag(struct jparser *p, struct jnode **out)
{
    const struct jtok *t = &p->t[p->i];
    int line = t->line;

    if (t->kind != JT_NAME)
        return jp_fail(p, "expected a tag name");
    p->i++;
    if (st_str_eq_c(t->text, "if"))
        return parse_if(p, line, out);
    if (st_str_eq_c(t->text, "for"))
        return parse_for(p, line, out);
    if (st_str_eq_c(t->text, "set"))
        return parse_set(p, line, out);
    if (st_str_eq_c(t->text, "macro"))
        return parse_macro(p, line, out);
    if (st_str_eq_c(t->text, "generation"))
        return parse_generation(p, line, out);
    if (st_str_eq_c(t->text, "filter"))
        return parse_filter_block(p, line, out);
    if (st_str_eq_c(t->text, "break") || st_str_eq_c(t->text, "continue")) {
        p->i--;
        struct jnode *n = jp_node(p, st_str_eq_c(t->text, "break") ? JN_BREAK : JN_CONTINUE);
        if (!n)
            return ST_ERR_NOMEM;
        p->i++;
        *out = n;
        return expect_block_end(p);
    }
    p->i--;
    return jp_fail(p, "unknown tag '%.*s'", (int)(t->text.len > 30 ? 30 : t->text.len),
                   t->text.ptr);
}

static enum st_status parse_item(struct jparser *p, struct jnode **out)
{
    const struct jtok *t = &p->t[p->i];
    struct jnode *n;

    if (t->kind == JT_TEXT) {
        NODE(n, JN_TEXT);
        n->name = t->text;
        p->i++;
        *out = n;
        return ST_OK;
    }
    if (t->kind == JT_VAR_BEGIN) {
        p->i++;
        NODE(n, JN_OUT);
        TRY(jp_expr(p, &n->a));
        if (p->t[p->i].kind != JT_VAR_END)
            return jp_fail(p, "expected '}}'");
        p->i++;
        *out = n;
        return ST_OK;
    }
    if (t->kind == JT_BLOCK_BEGIN) {
        p->i++;
        return parse_tag(p, out);
    }
    return jp_fail(p, "unexpected token");
}

static enum st_status parse_body(struct jparser *p, const struct jends *ends, struct jnode **out)
{
    struct jnode *seq, *item;

    if (++p->depth > 100)
        return jp_fail(p, "tags nested too deeply");
    NODE(seq, JN_SEQ);
    while (!at_end_tag(p, ends)) {
        if (p->t[p->i].kind == JT_EOF) {
            if (!ends)
                break;
            const char *const *last = ends->names;
            while (last[1])
                last++;
            return jp_fail(p, "unexpected end of template: {%% %s %%} at line %d is not closed "
                           "(expected {%% %s %%})", ends->opener, ends->line, *last);
        }
        TRY(parse_item(p, &item));
        TRY(jp_push(p, &seq->kids, &seq->n_kids, item));
    }
    p->depth--;
    *out = seq;
    return ST_OK;
}

enum st_status jp_template(struct jparser *p, struct jnode **out)
{
    enum st_status rc = parse_body(p, NULL, out);

    if (rc == ST_OK && p->t[p->i].kind != JT_EOF)
        return jp_fail(p, "unexpected tag");
    return rc;
}
