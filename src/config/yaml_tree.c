/* yaml_tree.c -- libyaml's event stream into a small tree of scalars,
 * mappings and sequences, each node with its line number.
 *
 * Why a tree and not libyaml's own document loader: we want every error
 * to carry a line, duplicate keys rejected, aliases rejected (an alias can
 * make a sequence contain itself, and nothing in a config needs them) and
 * the nesting depth bounded (the loader recurses), all in one place.
 *
 * libyaml rule (STYLE.md b.5): every yaml_event_t that yaml_parser_parse()
 * filled goes to yaml_event_delete() on every path. Here each event is
 * deleted by the function that parsed it, right after its fields were
 * copied, before anything else can fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "internal.h"

#define MAX_DEPTH 32

struct builder {
    yaml_parser_t parser;
    const char   *name;      /* source name for messages; borrowed */
    struct st_err *err;
};

void st_ynode_free(struct st_ynode *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->n; i++)
        st_ynode_free(n->items[i]);
    free(n->items);
    free(n->text);
    free(n);
}

static enum st_status nomem(struct builder *b)
{
    return st_err_set(b->err, ST_ERR_NOMEM, "%s: out of memory while reading the config",
                      b->name);
}

static enum st_status bad(struct builder *b, size_t line0, const char *what)
{
    return st_err_set(b->err, ST_ERR_BAD_CONFIG, "%s:%zu: %s", b->name, line0 + 1, what);
}

/* Parse the next event into *ev; on failure *ev is zeroed (libyaml clears
 * it first), so deleting it is still safe. */
static enum st_status next(struct builder *b, yaml_event_t *ev)
{
    if (yaml_parser_parse(&b->parser, ev))
        return ST_OK;
    return st_err_set(b->err, ST_ERR_BAD_CONFIG, "%s:%zu: YAML syntax error: %s%s%s", b->name,
                      b->parser.problem_mark.line + 1,
                      b->parser.problem ? b->parser.problem : "unreadable input",
                      b->parser.context ? " " : "", b->parser.context ? b->parser.context : "");
}

static struct st_ynode *node_new(enum st_ynode_kind kind, size_t line0)
{
    struct st_ynode *n = calloc(1, sizeof(*n));
    if (n) {
        n->kind = kind;
        n->line = (int32_t)ST_MIN(line0 + 1, (size_t)INT32_MAX);
    }
    return n;
}

static bool push(struct st_ynode *parent, struct st_ynode *child)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 8;
        struct st_ynode **grown = realloc(parent->items, cap * sizeof(*grown));
        if (grown == NULL)
            return false;
        parent->items = grown;
        parent->cap = cap;
    }
    parent->items[parent->n++] = child;
    return true;
}

static bool plain_null(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* Copies the scalar out of the event (the caller deletes the event). */
static enum st_status scalar(struct builder *b, const yaml_event_t *ev, struct st_ynode **out)
{
    struct st_ynode *n = node_new(ST_YNODE_SCALAR, ev->start_mark.line);
    size_t len = ev->data.scalar.length;

    if (n == NULL)
        return nomem(b);
    if (memchr(ev->data.scalar.value, '\0', len) != NULL) {
        free(n);
        return bad(b, ev->start_mark.line, "a value contains a NUL byte");
    }
    n->text = malloc(len + 1);
    if (n->text == NULL) {
        free(n);
        return nomem(b);
    }
    memcpy(n->text, ev->data.scalar.value, len);
    n->text[len] = '\0';
    n->is_null = plain_null(ev);
    *out = n;
    return ST_OK;
}

static enum st_status build(struct builder *b, yaml_event_t *ev, int depth, struct st_ynode **out);

static bool key_seen(const struct st_ynode *map, const char *key)
{
    for (size_t i = 0; i < map->n; i += 2)
        if (strcmp(map->items[i]->text, key) == 0)
            return true;
    return false;
}

/* Children of a mapping or sequence until its END event. 'n' is owned by
 * the caller, which frees it on failure. */
static enum st_status children(struct builder *b, struct st_ynode *n, int depth)
{
    yaml_event_type_t end = n->kind == ST_YNODE_MAP ? YAML_MAPPING_END_EVENT
                                                     : YAML_SEQUENCE_END_EVENT;
    for (size_t i = 0;; i++) {
        struct st_ynode *child = NULL;
        yaml_event_t ev;
        enum st_status rc = next(b, &ev);
        if (rc != ST_OK) {
            yaml_event_delete(&ev);
            return rc;
        }
        if (ev.type == end) {
            yaml_event_delete(&ev);
            return ST_OK;
        }
        rc = build(b, &ev, depth + 1, &child);   /* deletes ev */
        if (rc != ST_OK)
            return rc;
        bool is_key = n->kind == ST_YNODE_MAP && i % 2 == 0;
        if (is_key && child->kind != ST_YNODE_SCALAR)
            rc = bad(b, (size_t)child->line - 1, "a key must be a plain word, not a list or map");
        else if (is_key && key_seen(n, child->text))
            rc = st_err_set(b->err, ST_ERR_BAD_CONFIG, "%s:%d: duplicate key '%s'", b->name,
                            (int)child->line, child->text);
        else if (!push(n, child))
            rc = nomem(b);
        if (rc != ST_OK) {
            st_ynode_free(child);
            return rc;
        }
    }
}

/* Build the node that starts with *ev, consuming (deleting) *ev. */
static enum st_status build(struct builder *b, yaml_event_t *ev, int depth, struct st_ynode **out)
{
    enum st_ynode_kind kind = ST_YNODE_SEQ;
    size_t line0 = ev->start_mark.line;
    yaml_event_type_t type = ev->type;
    struct st_ynode *n;
    enum st_status rc;

    *out = NULL;
    if (type == YAML_SCALAR_EVENT) {
        rc = scalar(b, ev, out);
        yaml_event_delete(ev);
        return rc;
    }
    yaml_event_delete(ev);
    if (type == YAML_ALIAS_EVENT)
        return bad(b, line0, "YAML aliases (*name) are not supported in the config");
    if (type == YAML_MAPPING_START_EVENT)
        kind = ST_YNODE_MAP;
    else if (type != YAML_SEQUENCE_START_EVENT)
        return bad(b, line0, "unexpected YAML event");
    if (depth >= MAX_DEPTH)
        return bad(b, line0, "nested too deeply");
    n = node_new(kind, line0);
    if (n == NULL)
        return nomem(b);
    rc = children(b, n, depth);
    if (rc != ST_OK) {
        st_ynode_free(n);
        return rc;
    }
    *out = n;
    return ST_OK;
}

/* After the root: DOCUMENT_END, then STREAM_END (a second document is an
 * error). */
static enum st_status finish(struct builder *b)
{
    yaml_event_t ev;
    enum st_status rc = next(b, &ev);
    yaml_event_type_t type = ev.type;
    size_t line0 = ev.start_mark.line;

    yaml_event_delete(&ev);
    if (rc != ST_OK || type != YAML_DOCUMENT_END_EVENT)
        return rc != ST_OK ? rc : bad(b, line0, "unexpected content after the document");
    rc = next(b, &ev);
    type = ev.type;
    line0 = ev.start_mark.line;
    yaml_event_delete(&ev);
    if (rc == ST_OK && type != YAML_STREAM_END_EVENT)
        rc = bad(b, line0, "only one YAML document is allowed in the config");
    return rc;
}

/* STREAM_START, then DOCUMENT_START or STREAM_END (empty input). Returns
 * with *ev holding the root's first event when *empty is false. */
static enum st_status start(struct builder *b, yaml_event_t *ev, bool *empty)
{
    enum st_status rc = next(b, ev);
    yaml_event_type_t type = ev->type;

    yaml_event_delete(ev);
    if (rc != ST_OK)
        return rc;
    if (type != YAML_STREAM_START_EVENT)
        return bad(b, 0, "not a YAML stream");
    rc = next(b, ev);
    type = ev->type;
    yaml_event_delete(ev);
    *empty = type == YAML_STREAM_END_EVENT;
    if (rc != ST_OK || *empty)
        return rc;
    rc = next(b, ev);   /* the root's first event, left for the caller */
    if (rc != ST_OK)
        yaml_event_delete(ev);
    return rc;
}

enum st_status st_yaml_parse(const char *name, const char *data, size_t len,
                             struct st_ynode **out, struct st_err *err)
{
    struct builder b = { .name = name, .err = err };
    struct st_ynode *root = NULL;
    yaml_event_t ev;
    enum st_status rc;
    bool empty = false;

    *out = NULL;
    if (!yaml_parser_initialize(&b.parser))
        return st_err_set(err, ST_ERR_NOMEM, "%s: cannot start the YAML parser", name);
    yaml_parser_set_input_string(&b.parser, (const unsigned char *)data, len);
    rc = start(&b, &ev, &empty);
    if (rc == ST_OK && !empty)
        rc = build(&b, &ev, 0, &root);   /* deletes ev */
    if (rc == ST_OK && !empty)
        rc = finish(&b);
    yaml_parser_delete(&b.parser);
    if (rc != ST_OK) {
        st_ynode_free(root);
        return rc;
    }
    *out = root;
    return ST_OK;
}
