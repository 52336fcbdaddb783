/* schema.c -- compile a JSON Schema (text) into the node table of
 * internal.h, for response_format json_schema
 * (include/strata/json_schema.h says which subset and why).
 *
 * One pass over the schema with the span reader of chat/json/json.c builds a node
 * per schema object; a $ref becomes a JS_REF node naming its definition.
 * Then the definitions that were named are compiled (each once, looked up
 * by name), every reference is replaced by the node it leads to, and
 * anyOf members that are anyOfs themselves are flattened into their
 * parent. Errors carry the schema path ("/properties/age") and the keyword.
 * What a scalar may be (ranges, multipleOf, lengths, enum / const) is
 * compiled in values.c, pattern and format in
 * pattern.c, on the context of cc.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/json/json.h"
#include "grammar/schema/cc.h"
#include "grammar/schema/internal.h"

/* Keywords that change what is valid and that we do not enforce. */
static const char *const refused[] = {
    "patternProperties", "not", "if", "then", "else",
    "dependentRequired", "dependentSchemas", "dependencies", "propertyNames", "minProperties",
    "maxProperties", "uniqueItems", "contains", "minContains", "maxContains",
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
    "$recursiveRef", "contentSchema",
};

static size_t path_push(struct js_cc *c, const char *seg, size_t n)
{
    size_t old = c->path_len;
    int w = snprintf(c->path + old, sizeof(c->path) - old, "/%.*s", (int)ST_MIN(n, 60), seg);
    if (w > 0)
        c->path_len = ST_MIN(old + (size_t)w, sizeof(c->path) - 1);
    return old;
}

static void path_pop(struct js_cc *c, size_t old)
{
    c->path_len = old;
    c->path[old] = '\0';
}

/* A member key (a JSON string span, quotes included) equals 'name'. */
static bool key_is(struct st_str key, const char *name)
{
    size_t n = strlen(name);
    return key.len == n + 2 && memcmp(key.ptr + 1, name, n) == 0;
}

static enum st_status new_node(struct js_cc *c, int32_t *id)
{
    if (c->nodes.len / sizeof(struct js_node) >= ST_JSON_SCHEMA_MAX_NODES)
        return jsc_fail(c, "the schema is too big: more than %s nodes", "4096");
    struct js_node n = { .kind = JS_PLAIN, .types = JT_ALL, .additional = 0, .items = 0,
                         .max_items = UINT32_MAX, .target = -1, .imin = -JS_INT_OPEN,
                         .imax = JS_INT_OPEN, .max_len = UINT32_MAX, .rx = -1 };
    *id = (int32_t)(c->nodes.len / sizeof(n));
    return st_buf_append(&c->nodes, &n, sizeof(n));
}

static enum st_status parse_type_name(struct js_cc *c, struct st_str v, uint8_t *types)
{
    static const char *const names[] = { "object", "array", "string", "number",
                                         "integer", "boolean", "null" };
    for (size_t i = 0; i < 7; i++) {
        if (st_json_type(v) == ST_JSON_STRING && key_is(v, names[i])) {
            *types |= (uint8_t)(1u << i);
            return ST_OK;
        }
    }
    return jsc_fail(c, "unknown 'type': %s", "expected object, array, string, number, integer, "
                    "boolean or null");
}

static enum st_status parse_type(struct js_cc *c, struct st_str v, uint8_t *types)
{
    *types = 0;
    if (st_json_type(v) != ST_JSON_ARRAY)
        return parse_type_name(c, v, types);
    size_t pos = 0;
    bool bad = false;
    struct st_str e;
    while (st_json_array_next(v, &pos, &e, &bad)) {
        enum st_status rc = parse_type_name(c, e, types);
        if (rc != ST_OK)
            return rc;
    }
    return *types ? ST_OK : jsc_fail(c, "'type' is an empty array: %s", "nothing is valid");
}

static enum st_status compile(struct js_cc *c, struct st_str v, int32_t *id);


static enum st_status read_keywords(struct js_cc *c, struct st_str obj, struct js_kw *k)
{
    static const char *const names[] = { "type", "properties", "required",
        "additionalProperties", "enum", "const", "items", "minItems", "maxItems", "nullable",
        "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "multipleOf", "prefixItems", "additionalItems" };
    memset(k, 0, sizeof(*k));
    struct st_str *slots[] = { &k->type, &k->properties, &k->required, &k->additional,
                               &k->en, &k->cn, &k->items, &k->min_items, &k->max_items,
                               &k->nullable, &k->bound[0], &k->bound[1], &k->bound[2],
                               &k->bound[3], &k->min_len, &k->max_len, &k->pattern,
                               &k->mult, &k->prefix_items, &k->additional_items };
    size_t pos = 0;
    struct st_str key, val;
    while (st_json_object_next(obj, &pos, &key, &val)) {
        for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
            if (key_is(key, refused[i]))
                return jsc_fail(c, "the JSON Schema keyword '%s' is not supported", refused[i]);
        }
        for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
            if (key_is(key, names[i])) {
                *slots[i] = val;
                k->n_valid++;
            }
        }
        if (key_is(key, "format"))
            k->format = val;
        else if (key_is(key, "anyOf") || key_is(key, "oneOf"))
            k->any_of = val;
        else if (key_is(key, "allOf"))
            k->all_of = val;
        else if (key_is(key, "$ref"))
            k->ref = val;
    }
    int combos = (k->any_of.ptr != NULL) + (k->all_of.ptr != NULL) + (k->ref.ptr != NULL);
    if (combos > 1 || (combos == 1 && k->n_valid > 0))
        return jsc_fail(c, "%s cannot be combined with other validating keywords in one schema",
                        "'anyOf'/'oneOf'/'allOf'/'$ref'");
    return ST_OK;
}

static enum st_status compile_ref(struct js_cc *c, struct st_str ref, int32_t *id)
{
    static const char *const pre[2] = { "#/$defs/", "#/definitions/" };
    if (st_json_type(ref) != ST_JSON_STRING)
        return jsc_fail(c, "'%s' must be a string", "$ref");
    struct st_str in = { ref.ptr + 1, ref.len - 2 };
    size_t skip = 0;
    if (in.len == 1 && in.ptr[0] == '#') {
        skip = 1;
    } else {
        for (int i = 0; i < 2 && !skip; i++) {
            size_t n = strlen(pre[i]);
            if (in.len > n && memcmp(in.ptr, pre[i], n) == 0 && !memchr(in.ptr + n, '/',
                                                                      in.len - n))
                skip = n;
        }
    }
    if (!skip || memchr(in.ptr, '\\', in.len))
        return jsc_fail(c, "unsupported '$ref' (use \"#\", \"#/$defs/Name\" or "
                        "\"#/definitions/Name\"): %s", "other references are not resolved");
    enum st_status rc = new_node(c, id);
    if (rc != ST_OK)
        return rc;
    NODE(c, *id).kind = JS_REF;
    NODE(c, *id).ref_name = (uint32_t)c->strs.len;
    NODE(c, *id).ref_len = (uint32_t)in.len;   /* the whole reference, "#/$defs/X" */
    return st_buf_append(&c->strs, in.ptr, in.len);
}

static enum st_status compile_union(struct js_cc *c, struct st_str arr, int32_t *id)
{
    int32_t m[ST_JSON_SCHEMA_MAX_ALTS];
    uint32_t n = 0;
    if (st_json_type(arr) != ST_JSON_ARRAY)
        return jsc_fail(c, "'%s' must be a non-empty array of schemas", "anyOf");
    size_t pos = 0;
    bool bad = false;
    struct st_str e;
    while (st_json_array_next(arr, &pos, &e, &bad)) {
        if (n == ST_JSON_SCHEMA_MAX_ALTS)
            return jsc_fail(c, "'anyOf' has more than %s members", "16");
        char seg[16];
        snprintf(seg, sizeof(seg), "anyOf/%u", (unsigned)n);
        size_t old = path_push(c, seg, strlen(seg));
        enum st_status rc = compile(c, e, &m[n++]);
        path_pop(c, old);
        if (rc != ST_OK)
            return rc;
    }
    if (n == 0)
        return jsc_fail(c, "'%s' must be a non-empty array of schemas", "anyOf");
    enum st_status rc = new_node(c, id);
    if (rc != ST_OK)
        return rc;
    NODE(c, *id).kind = JS_UNION;
    NODE(c, *id).alt_first = (uint32_t)(c->alts.len / sizeof(int32_t));
    NODE(c, *id).n_alts = n;
    return st_buf_append(&c->alts, m, n * sizeof(*m));
}

static enum st_status compile_sub(struct js_cc *c, struct st_str v, const char *seg, int32_t *id)
{
    size_t old = path_push(c, seg, strlen(seg));
    enum st_status rc = compile(c, v, id);
    path_pop(c, old);
    return rc;
}

/* required: bits over p[0..*n); a key not listed becomes an additional
 * property (p grows) unless additional keys are forbidden ('add' < 0). */
static enum st_status parse_required(struct js_cc *c, struct st_str req_v, struct js_prop *p,
                                     uint32_t *n, int32_t add, uint64_t *req)
{
    if (st_json_type(req_v) != ST_JSON_ARRAY)
        return jsc_fail(c, "'%s' must be an array of strings", "required");
    size_t pos = 0;
    bool bad = false;
    struct st_str e;
    while (st_json_array_next(req_v, &pos, &e, &bad)) {
        if (st_json_type(e) != ST_JSON_STRING)
            return jsc_fail(c, "'%s' must be an array of strings", "required");
        uint32_t off, len, i = 0;
        enum st_status rc = jsc_put_string(c, e, false, &off, &len);
        if (rc != ST_OK)
            return rc;
        while (i < *n && !(p[i].key_len == len &&
               (len == 0 || memcmp(c->strs.data + p[i].key, c->strs.data + off, len) == 0)))
            i++;
        if (i == *n) {   /* not listed: an additional property */
            if (add < 0)
                return jsc_fail(c, "'required' names a key that 'properties' lacks while "
                                "additionalProperties is false: %s", "nothing is valid");
            if (*n == ST_JSON_SCHEMA_MAX_PROPS)
                return jsc_fail(c, "an object schema has more than %s properties", "64");
            p[(*n)++] = (struct js_prop){ off, len, add };
        }
        *req |= UINT64_C(1) << i;
    }
    return ST_OK;
}

static enum st_status compile_props(struct js_cc *c, int32_t id, const struct js_kw *k)
{
    struct js_prop p[ST_JSON_SCHEMA_MAX_PROPS];
    uint32_t n = 0;
    if (k->properties.ptr) {
        if (st_json_type(k->properties) != ST_JSON_OBJECT)
            return jsc_fail(c, "'%s' must be an object", "properties");
        size_t pos = 0;
        struct st_str key, val;
        while (st_json_object_next(k->properties, &pos, &key, &val)) {
            if (n == ST_JSON_SCHEMA_MAX_PROPS)
                return jsc_fail(c, "an object schema has more than %s properties", "64");
            ST_TRY(jsc_put_string(c, key, false, &p[n].key, &p[n].key_len));
            char seg[80];
            snprintf(seg, sizeof(seg), "properties/%.*s", (int)ST_MIN(key.len - 2, 60),
                     key.ptr + 1);
            size_t old = path_push(c, seg, strlen(seg));
            enum st_status rc = compile(c, val, &p[n++].node);
            path_pop(c, old);
            if (rc != ST_OK)
                return rc;
        }
    }
    int32_t add = 0;
    if (k->additional.ptr) {
        enum st_json_type t = st_json_type(k->additional);
        add = t == ST_JSON_FALSE ? -1 : 0;
        if (t == ST_JSON_OBJECT)
            ST_TRY(compile_sub(c, k->additional, "additionalProperties", &add));
        else if (t != ST_JSON_TRUE && t != ST_JSON_FALSE)
            return jsc_fail(c, "'%s' must be a boolean or a schema", "additionalProperties");
    }
    uint64_t req = 0;
    if (k->required.ptr)
        ST_TRY(parse_required(c, k->required, p, &n, add, &req));
    struct js_node *nd = &NODE(c, id);
    nd->prop_first = (uint32_t)(c->props.len / sizeof(struct js_prop));
    nd->n_props = n;
    nd->required = req;
    nd->additional = add;
    return st_buf_append(&c->props, p, n * sizeof(*p));
}

/* The tuple's schemas (prefixItems, or an array 'items' as drafts 4 to
 * 2019-09 write it), compiled in order into alts. */
static enum st_status compile_tuple(struct js_cc *c, int32_t id, struct st_str arr,
                                    const char *kw)
{
    int32_t m[ST_JSON_SCHEMA_MAX_TUPLE];
    uint32_t n = 0;
    size_t pos = 0;
    bool bad = false;
    struct st_str e;
    while (st_json_array_next(arr, &pos, &e, &bad)) {
        if (n == ST_JSON_SCHEMA_MAX_TUPLE)
            return jsc_fail(c, "'%s' has more than %s schemas", kw, "64");
        char seg[32];
        snprintf(seg, sizeof(seg), "%s/%u", kw, (unsigned)n);
        size_t old = path_push(c, seg, strlen(seg));
        enum st_status rc = compile(c, e, &m[n++]);
        path_pop(c, old);
        if (rc != ST_OK)
            return rc;
    }
    if (bad)
        return jsc_fail(c, "'%s' must be an array of schemas", kw);
    NODE(c, id).prefix_first = (uint32_t)(c->alts.len / sizeof(int32_t));
    NODE(c, id).n_prefix = n;
    return st_buf_append(&c->alts, m, n * sizeof(*m));
}

/* The items past the tuple: a schema (node *items), true (any), or false
 * (none: *mx caps the array at the tuple's length). */
static enum st_status compile_rest(struct js_cc *c, struct st_str v, const char *kw,
                                   uint32_t n_prefix, int32_t *items, uint32_t *mx)
{
    enum st_json_type t = st_json_type(v);
    if (t == ST_JSON_FALSE)
        *mx = n_prefix;
    else if (t != ST_JSON_TRUE)
        return compile_sub(c, v, kw, items);
    return ST_OK;
}

static enum st_status compile_items(struct js_cc *c, int32_t id, const struct js_kw *k)
{
    int32_t items = 0;
    uint32_t mn = 0, mx = UINT32_MAX;
    bool old_tuple = k->items.ptr && st_json_type(k->items) == ST_JSON_ARRAY;
    if (k->prefix_items.ptr && old_tuple)
        return jsc_fail(c, "'%s' with an array 'items': give one form of tuple", "prefixItems");
    if (k->prefix_items.ptr) {
        if (st_json_type(k->prefix_items) != ST_JSON_ARRAY)
            return jsc_fail(c, "'%s' must be an array of schemas", "prefixItems");
        ST_TRY(compile_tuple(c, id, k->prefix_items, "prefixItems"));
        if (k->items.ptr)
            ST_TRY(compile_rest(c, k->items, "items", NODE(c, id).n_prefix, &items, &mx));
    } else if (old_tuple) {
        ST_TRY(compile_tuple(c, id, k->items, "items"));
        if (k->additional_items.ptr)
            ST_TRY(compile_rest(c, k->additional_items, "additionalItems",
                                NODE(c, id).n_prefix, &items, &mx));
    } else if (k->items.ptr) {   /* additionalItems alone asserts nothing */
        ST_TRY(compile_rest(c, k->items, "items", 0, &items, &mx));
    }
    if (k->min_items.ptr)
        ST_TRY(jsc_get_count(c, k->min_items, "minItems", &mn));
    if (k->max_items.ptr) {
        uint32_t m;
        ST_TRY(jsc_get_count(c, k->max_items, "maxItems", &m));
        mx = ST_MIN(mx, m);
    }
    if (mn > mx)
        return jsc_fail(c, "'minItems' is above %s: nothing is valid", "'maxItems'");
    NODE(c, id).items = items;
    NODE(c, id).min_items = mn;
    NODE(c, id).max_items = mx;
    return ST_OK;
}

static enum st_status compile_plain(struct js_cc *c, const struct js_kw *k, int32_t *id)
{
    uint8_t types = JT_ALL;
    if (k->type.ptr)
        ST_TRY(parse_type(c, k->type, &types));
    if (k->nullable.ptr && st_json_type(k->nullable) == ST_JSON_TRUE)
        types |= JT_NULL;
    if (types & JT_NUM)
        types |= JT_INT;
    ST_TRY(new_node(c, id));
    NODE(c, *id).types = types;
    ST_TRY(jsc_compile_multiple(c, *id, k));
    ST_TRY(jsc_compile_range(c, *id, k));
    ST_TRY(jsc_compile_lengths(c, *id, k));
    ST_TRY(jsc_compile_pattern(c, *id, k));
    if (k->en.ptr || k->cn.ptr)
        ST_TRY(jsc_parse_enum(c, *id, k->en, k->cn));
    ST_TRY(compile_props(c, *id, k));
    return compile_items(c, *id, k);
}

/* An object schema, compiled by its keywords: a reference, a union, an
 * allOf of one, or a plain node. */
static enum st_status compile_object(struct js_cc *c, struct st_str v, int32_t *id)
{
    struct js_kw k;
    ST_TRY(read_keywords(c, v, &k));
    if (k.ref.ptr)
        return compile_ref(c, k.ref, id);
    if (k.any_of.ptr)
        return compile_union(c, k.any_of, id);
    if (k.all_of.ptr) {
        size_t pos = 0;
        bool bad = false;
        struct st_str e, e2;
        if (st_json_type(k.all_of) != ST_JSON_ARRAY ||
            !st_json_array_next(k.all_of, &pos, &e, &bad) ||
            st_json_array_next(k.all_of, &pos, &e2, &bad))
            return jsc_fail(c, "'%s' is only supported with exactly one member", "allOf");
        return compile_sub(c, e, "allOf/0", id);
    }
    return compile_plain(c, &k, id);
}

static enum st_status compile(struct js_cc *c, struct st_str v, int32_t *id)
{
    enum st_json_type t = st_json_type(v);
    if (t == ST_JSON_TRUE) {
        *id = 0;
        return ST_OK;
    }
    if (t != ST_JSON_OBJECT)
        return jsc_fail(c, "a schema must be an object or true; got %s", t == ST_JSON_FALSE
                        ? "false (nothing is valid)" : "another value");
    if (++c->depth > 24) {
        c->depth--;
        return jsc_fail(c, "the schema nests more than %s levels deep", "24");
    }
    enum st_status rc = compile_object(c, v, id);
    c->depth--;
    return rc;
}

/* ---- references ------------------------------------------------------ */

/* Compile the definition REF node 'r' names (or reuse an earlier one). */
static enum st_status resolve_one(struct js_cc *c, int32_t r, int32_t root)
{
    struct js_node nd = NODE(c, r);
    const char *name = c->strs.data + nd.ref_name;
    if (nd.ref_len == 1) {   /* "#" */
        NODE(c, r).target = root;
        return ST_OK;
    }
    for (int32_t i = 0; i < r; i++) {
        struct js_node o = NODE(c, i);
        if (o.kind == JS_REF && o.target >= 0 && o.ref_len == nd.ref_len &&
            memcmp(c->strs.data + o.ref_name, name, nd.ref_len) == 0) {
            NODE(c, r).target = o.target;
            return ST_OK;
        }
    }
    bool defs = name[2] == '$';
    size_t skip = defs ? 8 : 14;
    char key[128];
    if (nd.ref_len - skip >= sizeof(key))
        return jsc_fail(c, "'$ref' name too long: %s", "at most 127 bytes");
    memcpy(key, name + skip, nd.ref_len - skip);
    key[nd.ref_len - skip] = '\0';
    struct st_str def;
    if (!st_json_object_get(defs ? c->defs : c->definitions, key, &def))
        return jsc_fail(c, "'$ref' to an undefined definition: %s", key);
    char seg[140];
    snprintf(seg, sizeof(seg), "%s/%s", defs ? "$defs" : "definitions", key);
    size_t old = path_push(c, seg, strlen(seg));
    int32_t t;
    enum st_status rc = compile(c, def, &t);
    path_pop(c, old);
    NODE(c, r).target = t;
    return rc;
}

/* The node a chain of references leads to. */
static enum st_status follow(struct js_cc *c, int32_t *id)
{
    uint32_t n = (uint32_t)(c->nodes.len / sizeof(struct js_node)), hops = 0;
    while (NODE(c, *id).kind == JS_REF) {
        if (++hops > n)
            return jsc_fail(c, "circular '$ref' (a definition that is only a reference to "
                            "itself): %s", "nothing is valid");
        *id = NODE(c, *id).target;
    }
    return ST_OK;
}

/* Append the plain members of union 'u' (flattened) to out[*n]. */
static enum st_status flatten(struct js_cc *c, int32_t u, int32_t *out, uint32_t *n, int depth)
{
    if (depth > 8)
        return jsc_fail(c, "'anyOf' nests (through '$ref') more than %s levels", "8");
    struct js_node nd = NODE(c, u);
    for (uint32_t i = 0; i < nd.n_alts; i++) {
        int32_t a = ((int32_t *)c->alts.data)[nd.alt_first + i];
        ST_TRY(follow(c, &a));
        if (NODE(c, a).kind == JS_UNION) {
            ST_TRY(flatten(c, a, out, n, depth + 1));
        } else {
            if (*n == ST_JSON_SCHEMA_MAX_ALTS)
                return jsc_fail(c, "'anyOf' has more than %s members (flattened)", "16");
            out[(*n)++] = a;
        }
    }
    return ST_OK;
}

/* Every edge to a reference goes to its target; unions hold plain nodes. */
static enum st_status link(struct js_cc *c, int32_t *root)
{
    uint32_t n = (uint32_t)(c->nodes.len / sizeof(struct js_node));
    uint32_t np = (uint32_t)(c->props.len / sizeof(struct js_prop));
    ST_TRY(follow(c, root));
    for (uint32_t i = 0; i < np; i++)
        ST_TRY(follow(c, &((struct js_prop *)c->props.data)[i].node));
    for (uint32_t i = 0; i < n; i++) {
        if (NODE(c, i).kind != JS_PLAIN)
            continue;
        if (NODE(c, i).additional >= 0)
            ST_TRY(follow(c, &NODE(c, i).additional));
        ST_TRY(follow(c, &NODE(c, i).items));
        for (uint32_t t = 0; t < NODE(c, i).n_prefix; t++)
            ST_TRY(follow(c, &((int32_t *)(void *)c->alts.data)[NODE(c, i).prefix_first + t]));
    }
    for (uint32_t i = 0; i < n; i++) {
        if (NODE(c, i).kind != JS_UNION)
            continue;
        int32_t m[ST_JSON_SCHEMA_MAX_ALTS];
        uint32_t k = 0;
        ST_TRY(flatten(c, (int32_t)i, m, &k, 0));
        NODE(c, i).alt_first = (uint32_t)(c->alts.len / sizeof(int32_t));
        NODE(c, i).n_alts = k;
        ST_TRY(st_buf_append(&c->alts, m, k * sizeof(*m)));
    }
    return ST_OK;
}

/* The fewest containers a document of node i must open, from the depths
 * of the nodes it holds (d; above ST_JSON_SCHEMA_MAX_DEPTH = none fits):
 * a scalar or an enum 0, an array 1 (or 1 + its items' when it must have
 * some), an object 1 + its deepest required property, a union its
 * shallowest member. */
static uint32_t fewest_levels(struct js_cc *c, const uint32_t *d, uint32_t i)
{
    const uint32_t none = ST_JSON_SCHEMA_MAX_DEPTH + 1;
    const struct js_node *nd = &NODE(c, i);
    const int32_t *alts = (const int32_t *)(const void *)c->alts.data;
    const struct js_prop *props = (const struct js_prop *)(const void *)c->props.data;
    uint32_t best = none;
    if (nd->kind == JS_UNION) {
        for (uint32_t a = 0; a < nd->n_alts; a++)
            best = ST_MIN(best, d[alts[nd->alt_first + a]]);
        return best;
    }
    if (nd->has_enum)
        return nd->n_lits > 0 ? 0 : none;
    if (nd->types & (JT_STR | JT_NUM | JT_INT | JT_BOOL | JT_NULL))
        return 0;
    if (nd->types & JT_ARR) {   /* 1 + the deepest of the items it must hold */
        uint32_t need = 1;
        for (uint32_t t = 0; t < nd->min_items && t < nd->n_prefix; t++)
            need = ST_MAX(need, ST_MIN(none, 1 + d[alts[nd->prefix_first + t]]));
        if (nd->min_items > nd->n_prefix)
            need = ST_MAX(need, ST_MIN(none, 1 + d[nd->items]));
        best = need;
    }
    if (nd->types & JT_OBJ) {
        uint32_t need = 1;
        for (uint32_t p = 0; p < nd->n_props; p++) {
            if (nd->required >> p & 1)
                need = ST_MAX(need, ST_MIN(none, 1 + d[props[nd->prop_first + p].node]));
        }
        best = ST_MIN(best, need);
    }
    return best;
}

/* A schema whose every document nests deeper than the validator can
 * follow (an array that must hold an array like itself) could never be
 * finished: the request would fail after its tokens were spent, so it is
 * refused here. Depths relax from "none" down, one level per round. */
static enum st_status check_completable(struct js_cc *c, int32_t root)
{
    uint32_t n = (uint32_t)(c->nodes.len / sizeof(struct js_node));
    uint32_t *d = malloc(n * sizeof(*d));
    if (!d)
        return ST_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        d[i] = ST_JSON_SCHEMA_MAX_DEPTH + 1;
    for (int round = 0; round <= ST_JSON_SCHEMA_MAX_DEPTH + 1; round++) {
        for (uint32_t i = 0; i < n; i++) {
            if (NODE(c, i).kind != JS_REF)
                d[i] = ST_MIN(d[i], fewest_levels(c, d, i));
        }
    }
    bool ok = d[root] <= ST_JSON_SCHEMA_MAX_DEPTH;
    free(d);
    return ok ? ST_OK : jsc_fail(c, "no document fits this schema within %d levels of nesting "
                                 "(it requires containers inside containers without end)",
                                 ST_JSON_SCHEMA_MAX_DEPTH);
}

static enum st_status compile_all(struct js_cc *c, struct st_str root, int32_t *out)
{
    int32_t id;
    ST_TRY(new_node(c, &id));   /* node 0: anything */
    if (st_json_type(root) == ST_JSON_OBJECT) {
        (void)st_json_object_get(root, "$defs", &c->defs);
        (void)st_json_object_get(root, "definitions", &c->definitions);
    }
    ST_TRY(compile(c, root, out));
    for (uint32_t i = 0; i < c->nodes.len / sizeof(struct js_node); i++) {
        if (NODE(c, i).kind == JS_REF && NODE(c, i).target < 0)
            ST_TRY(resolve_one(c, (int32_t)i, *out));
    }
    ST_TRY(link(c, out));
    return check_completable(c, *out);
}

enum st_status st_json_schema_compile(const char *text, size_t n, struct st_json_schema **out,
                                      struct st_err *err)
{
    *out = NULL;
    struct st_str root;
    if (n > ST_JSON_SCHEMA_MAX_TEXT)
        return st_err_set(err, ST_ERR_INVALID, "the schema is too big: %zu bytes (at most %d)",
                          n, ST_JSON_SCHEMA_MAX_TEXT);
    if (!st_json_value((struct st_str){ text, n }, &root))
        return st_err_set(err, ST_ERR_INVALID, "the schema is not valid JSON");
    struct js_cc c = { .err = err };
    st_buf_init(&c.nodes);
    st_buf_init(&c.props);
    st_buf_init(&c.lits);
    st_buf_init(&c.alts);
    st_buf_init(&c.strs);
    st_buf_init(&c.rxs);
    st_buf_init(&c.rx_keys);
    int32_t r = 0;
    enum st_status rc = compile_all(&c, root, &r);
    st_buf_fini(&c.rx_keys);
    struct st_json_schema *s = rc == ST_OK ? calloc(1, sizeof(*s)) : NULL;
    if (rc == ST_OK && !s)
        rc = st_err_set(err, ST_ERR_NOMEM, "out of memory");
    if (rc != ST_OK) {
        if (rc == ST_ERR_NOMEM && err && !err->msg[0])
            st_err_set(err, rc, "out of memory");
        st_buf_fini(&c.nodes);
        st_buf_fini(&c.props);
        st_buf_fini(&c.lits);
        st_buf_fini(&c.alts);
        st_buf_fini(&c.strs);
        for (size_t i = 0; i < c.rxs.len / sizeof(struct js_regex); i++)
            st_js_regex_free(&((struct js_regex *)(void *)c.rxs.data)[i]);
        st_buf_fini(&c.rxs);
        return rc;
    }
    atomic_init(&s->refs, 1);
    s->n_nodes = (uint32_t)(c.nodes.len / sizeof(struct js_node));
    s->nodes = (struct js_node *)(void *)st_buf_steal(&c.nodes);
    s->props = (struct js_prop *)(void *)st_buf_steal(&c.props);
    s->lits = (struct js_lit *)(void *)st_buf_steal(&c.lits);
    s->alts = (int32_t *)(void *)st_buf_steal(&c.alts);
    s->strs = st_buf_steal(&c.strs);
    s->n_rx = (uint32_t)(c.rxs.len / sizeof(struct js_regex));
    s->rx = (struct js_regex *)(void *)st_buf_steal(&c.rxs);
    s->root = r;
    *out = s;
    return ST_OK;
}

void st_json_schema_ref(struct st_json_schema *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void st_json_schema_unref(struct st_json_schema *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    free(s->nodes);
    free(s->props);
    free(s->lits);
    free(s->alts);
    free(s->strs);
    for (uint32_t i = 0; i < s->n_rx; i++)
        st_js_regex_free(&s->rx[i]);
    free(s->rx);
    free(s);
}

size_t st_json_schema_n_nodes(const struct st_json_schema *s)
{
    return s->n_nodes;
}
