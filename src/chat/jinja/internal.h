/* chat/jinja/internal.h -- what the interpreter's files share: the arena
 * (arena.c), tokens (lex.c), the syntax tree (parse_*.c), values (value.c,
 * write.c, json.c), and the render state the evaluator (eval.c, exec.c), filters
 * (filters.c, tests.c) and methods (methods.c) work on.
 */
#ifndef STRATA_CHAT_JINJA_INTERNAL_H
#define STRATA_CHAT_JINJA_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "chat/jinja/jinja.h"

/* Return the status of x unless it is ST_OK (strata/status.h). */
#define TRY(x) ST_TRY(x)

/* ---- arena.c: bump allocation with a byte cap; everything a parse or a
 * render allocates lives until the arena is freed ---- */
struct ja_chunk;
struct jarena {
    struct ja_chunk *head;
    size_t used;          /* bytes handed out, all chunks */
    size_t cap;           /* limit on 'used' */
};
void  ja_init(struct jarena *a, size_t cap);
void  ja_fini(struct jarena *a);
void *ja_alloc(struct jarena *a, size_t n);              /* zeroed; NULL past the cap */
char *ja_strdup(struct jarena *a, const char *s, size_t n); /* NUL-terminated copy */

/* ---- lex.c ---- */
enum jt_kind {
    JT_TEXT, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
    JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP, JT_EOF,
};
struct jtok {
    enum jt_kind  kind;
    struct st_str text;   /* TEXT: the text after whitespace control; STRING: decoded;
                             NAME / OP: the spelling */
    int64_t       ival;
    double        fval;
    int           line, col;  /* 1-based, where the token starts */
};
enum st_status jl_lex(struct jarena *a, const char *src, size_t len, struct jtok **toks,
                      size_t *n, struct st_err *err);

/* ---- the syntax tree (parse_expr.c, parse_stmt.c) ---- */
enum jn_kind {
    /* expressions */
    JN_LIT, JN_NAME, JN_LIST, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL, JN_FILTER,
    JN_TEST, JN_NOT, JN_NEG, JN_BIN, JN_AND, JN_OR, JN_COND,
    /* statements */
    JN_SEQ, JN_TEXT, JN_OUT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_MACRO, JN_BREAK,
    JN_CONTINUE, JN_FILTER_BLOCK,
};
enum jop { JO_ADD, JO_SUB, JO_MUL, JO_DIV, JO_FDIV, JO_MOD, JO_POW, JO_CAT,
           JO_EQ, JO_NE, JO_LT, JO_LE, JO_GT, JO_GE, JO_IN, JO_NOTIN };

struct jv;
struct jnode {
    enum jn_kind   kind;
    int            line, col;
    enum jop       op;
    bool           negate;        /* TEST: "is not"; LIST: a tuple */
    struct st_str  name;          /* NAME, ATTR, FILTER, TEST, SET and MACRO names, TEXT */
    struct st_str  attr;          /* SET ns.attr = ... */
    struct jv     *lit;           /* LIT */
    struct jnode  *a, *b, *c, *d; /* operands; IF cond/body/else; FOR iter/body/else/filter */
    struct jnode **kids;          /* LIST / DICT (k, v pairs) / CALL args / SEQ statements /
                                     MACRO defaults (NULL = none) */
    struct st_str *kw;            /* CALL / FILTER / TEST: keyword of kids[i] (len 0 = positional) */
    size_t         n_kids;
    struct st_str *names;         /* FOR / SET targets, MACRO parameters */
    size_t         n_names;
};

struct jparser {
    struct jarena *a;
    struct jtok   *t;
    size_t         n, i;
    int            depth;
    struct st_err *err;
};
enum st_status jp_expr(struct jparser *p, struct jnode **out);       /* a full expression */
enum st_status jp_expr_nocond(struct jparser *p, struct jnode **out); /* no trailing 'if' */
enum st_status jp_template(struct jparser *p, struct jnode **out);   /* parse_stmt.c */
/* (args) into call->kids / call->kw; the '(' is next. */
enum st_status jp_args(struct jparser *p, struct jnode *call);
struct jnode  *jp_node(struct jparser *p, enum jn_kind kind);
enum st_status jp_fail(struct jparser *p, const char *fmt, ...) ST_PRINTF(2, 3);
bool jp_is_op(struct jparser *p, const char *op);
bool jp_is_name(struct jparser *p, const char *name);
enum st_status jp_expect_op(struct jparser *p, const char *op);
enum st_status jp_push(struct jparser *p, struct jnode ***arr, size_t *n, struct jnode *x);

/* ---- values (value.c; as text write.c) ---- */
enum jv_kind { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT,
               JV_MACRO, JV_FUNC, JV_LOOP };
enum jfunc { JF_RANGE, JF_NAMESPACE, JF_RAISE, JF_STRFTIME, JF_DICT };
struct jlist { struct jv *items; size_t n, cap; bool tuple; /* prints as (a, b) */ };
/* Keys are values, as in Python: 512 and '512' are two keys, 1, 1.0 and
 * True one; a key is hashable (jv_hashable). Lookup is linear: a
 * template's dicts are small. */
struct jdict { struct jv *keys; struct jv *vals; size_t n, cap; bool ns; };
struct jloop { int64_t index0, length; struct jlist *items; };
struct jv {
    enum jv_kind kind;
    union {
        bool b; int64_t i; double f; struct st_str s;
        struct jlist *l; struct jdict *d; const struct jnode *macro; enum jfunc fn;
        struct jloop *loop;
    } u;
};

struct jv jv_undef(void);
struct jv jv_none(void);
struct jv jv_bool(bool b);
struct jv jv_int(int64_t i);
struct jv jv_float(double f);
struct jv jv_str(struct st_str s);
bool jv_truthy(const struct jv *v);
bool jv_equal(const struct jv *a, const struct jv *b);
const char *jv_type_name(enum jv_kind k);
struct jlist *jv_list_new(struct jarena *a, size_t cap);
struct jdict *jv_dict_new(struct jarena *a, size_t cap);
enum st_status jv_list_push(struct jarena *a, struct jlist *l, struct jv v);
/* Python's hash() accepts it: none, bool, int, float, str, undefined, a
 * tuple of those (nested at most 64 deep). */
bool jv_hashable(const struct jv *v);
/* d[k] = v / d[k] for any hashable key; find gives NULL for an unhashable one. */
enum st_status jv_dict_put(struct jarena *a, struct jdict *d, struct jv k, struct jv v);
struct jv *jv_dict_find(const struct jdict *d, const struct jv *k);
/* The same with a string key (names, attributes, JSON members). */
enum st_status jv_dict_set(struct jarena *a, struct jdict *d, struct st_str k, struct jv v);
struct jv *jv_dict_get(const struct jdict *d, struct st_str k);
/* d.items() as (key, value) tuples, in the order of the key indices
 * 'order' (NULL: insertion order); NULL when the arena is full. */
struct jlist *jv_dict_items(struct jarena *a, const struct jdict *d, const size_t *order);
/* Python's order of two numbers or two strings: *c <0, 0, >0; false when
 * Python cannot order them (an int and a string). */
bool jv_compare(const struct jv *a, const struct jv *b, int *c);
/* How jv_dict_sort orders: by key or by value, strings lowercased (ASCII)
 * when fold, descending when reverse. */
struct jv_dict_order { bool by_value, fold, reverse; };
/* idx[0..n) = d's entry indices in sorted() order (stable; tmp holds n);
 * ST_ERR_INVALID when two keys (values) cannot be ordered. */
enum st_status jv_dict_sort(const struct jdict *d, const struct jv_dict_order *o, size_t *idx,
                            size_t *tmp);
/* Python's str(v) / repr(v), appended. */
enum st_status jv_write_str(struct st_buf *b, const struct jv *v);
enum st_status jv_write_repr(struct st_buf *b, const struct jv *v);
/* json.dumps(v, ensure_ascii=False, indent=indent (<0 none), sort_keys). */
enum st_status jv_write_json(struct st_buf *b, const struct jv *v, int indent, bool sort_keys,
                             int depth);
/* cJSON -> value (json.c); depth-bounded. */
enum st_status jv_from_json(struct jarena *a, const cJSON *j, struct jv *out, int depth);

/* ---- the render (eval.c, exec.c) ---- */
struct jscope {
    struct jscope *parent;
    struct jdict  *vars;
};
struct jrender;
/* A macro call (exec.c); the evaluator reaches it through the render so
 * that expressions and statements, which recurse into each other, keep
 * one direction between their files. */
typedef enum st_status jr_macro_fn(struct jrender *r, const struct jnode *m,
                                   const struct jv *args, const struct st_str *kw, size_t n,
                                   struct jv *out);
struct jrender {
    struct jarena                 *a;
    struct st_buf                 *out;
    struct st_err                 *err;
    const struct st_jinja_opts  *lim;
    uint64_t                       steps;
    int                            depth;
    int                            line, col;   /* the node being evaluated */
    struct jscope                 *scope, *root;
    int                            flow;        /* 0, JR_BREAK or JR_CONTINUE */
    jr_macro_fn                   *call_macro;  /* jr_call_macro */
};
enum { JR_BREAK = 1, JR_CONTINUE = 2 };

enum st_status jr_fail(struct jrender *r, const char *fmt, ...) ST_PRINTF(2, 3);
enum st_status jr_nomem(struct jrender *r);
/* Every node evaluated or executed passes here: it becomes the node errors
 * name, counts one step and one level of depth (the caller leaves the
 * level with r->depth-- once the node is done), and the render fails when
 * either passes its limit (st_jinja_opts max_steps, max_depth). */
enum st_status jr_enter(struct jrender *r, const struct jnode *n);
enum st_status jr_eval(struct jrender *r, const struct jnode *n, struct jv *out);
enum st_status jr_exec(struct jrender *r, const struct jnode *n);
/* a op b (ops.c). */
enum st_status jr_binop(struct jrender *r, enum jop op, const struct jv *a, const struct jv *b,
                        struct jv *out);
/* Strings joined into the arena. */
enum st_status jr_concat(struct jrender *r, struct st_str a, struct st_str b, struct st_str *out);
enum st_status jr_str(struct jrender *r, const struct jv *v, struct st_str *out); /* str(v) */
struct jv *jr_lookup(struct jrender *r, struct st_str name);
enum st_status jr_set(struct jrender *r, struct st_str name, struct jv v);
/* render.c: errors, scopes, str(), iteration, arguments. */
/* A string's code points as one-character strings. */
enum st_status jr_chars(struct jrender *r, struct st_str s, struct jlist **out);
/* Iterate: a list's items, a dict's keys, a string's characters. */
enum st_status jr_iter(struct jrender *r, const struct jv *v, struct jlist **out);
enum st_status jr_call_macro(struct jrender *r, const struct jnode *m, const struct jv *args,
                             const struct st_str *kw, size_t n, struct jv *out);

/* Evaluated call arguments: args[i] with keyword kw[i] (len 0 = positional). */
struct jargs {
    struct jv           *v;
    const struct st_str *kw;
    size_t               n;
};
/* The i-th positional or the keyword 'name'; NULL when absent. */
const struct jv *jargs_get(const struct jargs *x, size_t pos, const char *name);

enum st_status jr_filter(struct jrender *r, struct st_str name, const struct jv *v,
                         const struct jargs *x, struct jv *out);        /* filters.c */
enum st_status jr_test(struct jrender *r, struct st_str name, const struct jv *v,
                       const struct jargs *x, bool *out);               /* tests.c */
/* obj.name(args): str, list and dict methods; *found false when there is none. */
enum st_status jr_method(struct jrender *r, const struct jv *obj, struct st_str name,
                         const struct jargs *x, struct jv *out, bool *found); /* methods.c */
enum st_status jr_call_func(struct jrender *r, enum jfunc fn, const struct jargs *x,
                            struct jv *out);                            /* globals.c */
bool jr_global_func(struct st_str name, enum jfunc *fn);

#endif /* STRATA_CHAT_JINJA_INTERNAL_H */
