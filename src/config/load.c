/* load.c -- a YAML config (as a tree from yaml_tree.c) onto struct
 * st_config, key by key, against the settings table of options.c.
 *
 * Shape of the file (configs/strata.example.yaml has every key):
 *
 *   host: 127.0.0.1          # server-level settings, one key per flag
 *   sim: { prompt_tps: 2000 }
 *   routing: { scheduler: { use: serial, settings: { serial: { agingDivisor: 60 } } } }
 *   models:   [ { name, path, aliases, backend, priority, parallel, ctx_size, gpus, ttl, preload } ]
 *   api_keys: [ { name, key, default_priority, max_priority } ]
 *
 * Nested keys are looked up by their dotted path
 * ("routing.scheduler.settings.serial.agingDivisor"). An unknown key is an
 * error, with a "did you mean" when a known key is close: a typo must
 * never be silently ignored. A null value (`key:` or `key: ~`) leaves the
 * default.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct loader {
    struct st_config *c;
    const char       *name;   /* source name for messages; borrowed */
    struct st_err    *err;
};

/* Sections that exist but hold no keys of their own yet. */
static const char *const empty_sections[] = { "routing.scheduler.settings.fifo" };

static const char *node_desc(const struct st_ynode *n, char *buf, size_t cap)
{
    if (n->kind == ST_YNODE_MAP)
        return "a mapping";
    if (n->kind == ST_YNODE_SEQ)
        return "a list";
    if (n->is_null)
        return "nothing";
    st_cfg_quote(n->text, buf, cap);
    return buf;
}

static enum st_status expected(struct loader *ld, const struct st_ynode *n, const char *path,
                               const char *what)
{
    char got[80];
    return st_err_set(ld->err, ST_ERR_BAD_CONFIG, "%s:%d: %s: expected %s, got %s", ld->name,
                      (int)n->line, path, what, node_desc(n, got, sizeof(got)));
}

static enum st_status set_text(struct loader *ld, const struct st_cfg_def *d, void *base,
                               const struct st_ynode *n, const char *text, const char *path)
{
    char why[160], got[80];
    enum st_status rc = st_cfg_set(d, base, text, why, sizeof(why));

    if (rc == ST_ERR_NOMEM)
        return st_err_set(ld->err, rc, "%s: out of memory", ld->name);
    if (rc != ST_OK) {
        st_cfg_quote(text, got, sizeof(got));
        return st_err_set(ld->err, rc, "%s:%d: %s: expected %s, got %s", ld->name,
                          (int)n->line, path, why, got);
    }
    return ST_OK;
}

/* gpus: [0, 1] -> "0,1", checked by the same parser as --gpus 0,1. */
static enum st_status set_gpu_list(struct loader *ld, const struct st_cfg_def *d, void *base,
                                   const struct st_ynode *n, const char *path)
{
    char joined[ST_CONFIG_MAX_GPUS * 8 + 8] = "", why[160];
    size_t len = 0;

    for (size_t i = 0; i < n->n; i++) {
        const struct st_ynode *item = n->items[i];
        if (item->kind != ST_YNODE_SCALAR || item->is_null || i >= ST_CONFIG_MAX_GPUS ||
            strlen(item->text) > 6) {
            st_cfg_expected(d, why, sizeof(why));
            return expected(ld, item, path, why);
        }
        len += (size_t)snprintf(joined + len, sizeof(joined) - len, "%s%s", i ? "," : "",
                                item->text);
    }
    if (n->n == 0)
        return ST_OK;   /* gpus: [] = none */
    return set_text(ld, d, base, n, joined, path);
}

/* One value of a known key into its field. */
static enum st_status set_value(struct loader *ld, const struct st_cfg_def *d, void *base,
                                const struct st_ynode *n, const char *path)
{
    char why[160];
    enum st_status rc;

    if (n->kind == ST_YNODE_SCALAR)
        return n->is_null ? ST_OK : set_text(ld, d, base, n, n->text, path);
    if (n->kind == ST_YNODE_SEQ && d->kind == ST_CFG_GPUS)
        return set_gpu_list(ld, d, base, n, path);
    if (n->kind == ST_YNODE_SEQ && d->kind == ST_CFG_ALIASES) {
        for (size_t i = 0; i < n->n; i++) {
            const struct st_ynode *item = n->items[i];
            if (item->kind != ST_YNODE_SCALAR || item->is_null)
                return expected(ld, item, path, "a list of names");
            rc = set_text(ld, d, base, item, item->text, path);
            if (rc != ST_OK)
                return rc;
        }
        return ST_OK;
    }
    st_cfg_expected(d, why, sizeof(why));
    return expected(ld, n, path, why);
}

/* ---- unknown keys ---------------------------------------------------- */

static void consider(const char *cand, size_t cand_len, const char *key, char *best,
                     size_t *best_d)
{
    char word[65];
    size_t d;

    if (cand_len == 0 || cand_len >= sizeof(word))
        return;
    memcpy(word, cand, cand_len);
    word[cand_len] = '\0';
    d = st_cfg_edit_distance(key, word);
    if (d < *best_d && d <= 2 && d < strlen(word)) {
        *best_d = d;
        memcpy(best, word, cand_len + 1);
    }
}

/* The known key closest to 'key' among the keys under 'prefix' ("" for
 * the top level), or among 'fields'. Empty when none is close. */
static void suggest(const char *prefix, const struct st_cfg_def *fields, size_t n_fields,
                    const char *key, char *best)
{
    size_t best_d = 99, plen = strlen(prefix);

    best[0] = '\0';
    for (size_t i = 0; fields != NULL && i < n_fields; i++)
        consider(fields[i].yaml, strlen(fields[i].yaml), key, best, &best_d);
    for (size_t i = 0; fields == NULL && i < ST_OPT_COUNT; i++) {
        const char *y = st_cfg_opts[i].yaml;
        if (y == NULL || (plen && (strncmp(y, prefix, plen) != 0 || y[plen] != '.')))
            continue;
        y += plen ? plen + 1 : 0;
        consider(y, strcspn(y, "."), key, best, &best_d);
    }
    if (fields == NULL && plen == 0) {
        consider("models", 6, key, best, &best_d);
        consider("api_keys", 8, key, best, &best_d);
    }
}

static enum st_status unknown_key(struct loader *ld, const struct st_ynode *k, const char *path,
                                  const char *prefix, const struct st_cfg_def *fields,
                                  size_t n_fields)
{
    char best[65], shown[80];

    suggest(prefix, fields, n_fields, k->text, best);
    st_cfg_quote(path, shown, sizeof(shown));
    return st_err_set(ld->err, ST_ERR_BAD_CONFIG, "%s:%d: unknown key %s%s%s%s", ld->name,
                      (int)k->line, shown, best[0] ? " (did you mean '" : "", best,
                      best[0] ? "'?)" : "");
}

/* ---- mappings -------------------------------------------------------- */

/* A mapping of fields (one model, one api key) into the struct at 'base'. */
static enum st_status load_fields(struct loader *ld, const struct st_ynode *map,
                                  const struct st_cfg_def *defs, size_t n_defs, void *base,
                                  const char *where)
{
    char path[160];

    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const struct st_ynode *k = map->items[i];
        const struct st_cfg_def *d = NULL;
        enum st_status rc;

        for (size_t j = 0; j < n_defs && d == NULL; j++)
            if (strcmp(defs[j].yaml, k->text) == 0)
                d = &defs[j];
        snprintf(path, sizeof(path), "%s.%s", where, k->text);
        if (d == NULL)
            return unknown_key(ld, k, path, "", defs, n_defs);
        rc = set_value(ld, d, base, map->items[i + 1], path);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

static enum st_status load_model(struct loader *ld, const struct st_ynode *n, int32_t line,
                                 const char *where, const char *name)
{
    struct st_config_model *m = st_cfg_add_model(ld->c);

    if (m == NULL)
        return st_err_set(ld->err, ST_ERR_NOMEM, "%s: out of memory", ld->name);
    m->line = line;
    if (name != NULL && (m->name = strdup(name)) == NULL)
        return st_err_set(ld->err, ST_ERR_NOMEM, "%s: out of memory", ld->name);
    if (n->kind == ST_YNODE_SCALAR && n->is_null && name != NULL)
        return ST_OK;   /* models: { qwen3: } -- a name and nothing else */
    if (n->kind != ST_YNODE_MAP)
        return expected(ld, n, where, "a mapping (name:, path:, ...)");
    return load_fields(ld, n, st_cfg_model_fields, st_cfg_n_model_fields, m, where);
}

/* models: a list of mappings, or (llama-swap style) a mapping name -> fields. */
static enum st_status load_models(struct loader *ld, const struct st_ynode *n)
{
    char where[160];
    enum st_status rc = ST_OK;

    if (n->kind == ST_YNODE_SCALAR && n->is_null)
        return ST_OK;
    if (n->kind == ST_YNODE_SCALAR)
        return expected(ld, n, "models", "a list of models");
    for (size_t i = 0; rc == ST_OK && n->kind == ST_YNODE_SEQ && i < n->n; i++) {
        snprintf(where, sizeof(where), "models[%zu]", ld->c->n_models);
        rc = load_model(ld, n->items[i], n->items[i]->line, where, NULL);
    }
    for (size_t i = 0; rc == ST_OK && n->kind == ST_YNODE_MAP && i + 1 < n->n; i += 2) {
        const struct st_ynode *k = n->items[i];
        snprintf(where, sizeof(where), "models.%s", k->text);
        rc = load_model(ld, n->items[i + 1], k->line, where, k->text);
    }
    return rc;
}

/* api_keys: a list of mappings, or of bare keys. */
static enum st_status load_keys(struct loader *ld, const struct st_ynode *n)
{
    char where[64];
    enum st_status rc = ST_OK;

    if (n->kind == ST_YNODE_SCALAR && n->is_null)
        return ST_OK;
    if (n->kind != ST_YNODE_SEQ)
        return expected(ld, n, "api_keys", "a list of keys");
    for (size_t i = 0; rc == ST_OK && i < n->n; i++) {
        const struct st_ynode *item = n->items[i];
        struct st_config_key *k = st_cfg_add_key(ld->c);
        if (k == NULL)
            return st_err_set(ld->err, ST_ERR_NOMEM, "%s: out of memory", ld->name);
        k->line = item->line;
        snprintf(where, sizeof(where), "api_keys[%zu]", ld->c->n_keys - 1);
        if (item->kind == ST_YNODE_SCALAR && !item->is_null)
            rc = set_value(ld, &st_cfg_key_fields[1], k, item, where);   /* a bare key */
        else if (item->kind == ST_YNODE_MAP)
            rc = load_fields(ld, item, st_cfg_key_fields, st_cfg_n_key_fields, k, where);
        else
            rc = expected(ld, item, where, "a mapping (name:, key:, ...) or a key");
    }
    return rc;
}

static const struct st_cfg_def *find_opt(const char *path)
{
    for (size_t i = 0; i < ST_OPT_COUNT; i++)
        if (st_cfg_opts[i].yaml && strcmp(st_cfg_opts[i].yaml, path) == 0)
            return &st_cfg_opts[i];
    return NULL;
}

/* Is 'path' a section (a mapping of known keys)? */
static bool is_section(const char *path)
{
    size_t len = strlen(path);
    for (size_t i = 0; i < ST_ARRAY_LEN(empty_sections); i++)
        if (strcmp(empty_sections[i], path) == 0)
            return true;
    for (size_t i = 0; i < ST_OPT_COUNT; i++) {
        const char *y = st_cfg_opts[i].yaml;
        if (y && strncmp(y, path, len) == 0 && y[len] == '.')
            return true;
    }
    return false;
}

static enum st_status walk(struct loader *ld, const struct st_ynode *map, const char *prefix)
{
    char path[256];
    enum st_status rc = ST_OK;

    for (size_t i = 0; rc == ST_OK && i + 1 < map->n; i += 2) {
        const struct st_ynode *k = map->items[i], *v = map->items[i + 1];
        const struct st_cfg_def *d;
        int len = snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", k->text);

        d = len < (int)sizeof(path) ? find_opt(path) : NULL;
        if (!*prefix && strcmp(k->text, "models") == 0) {
            rc = load_models(ld, v);
        } else if (!*prefix && strcmp(k->text, "api_keys") == 0) {
            rc = load_keys(ld, v);
        } else if (d != NULL) {
            rc = set_value(ld, d, ld->c, v, path);
            if (rc == ST_OK && !(v->kind == ST_YNODE_SCALAR && v->is_null))
                ld->c->line[d->id] = k->line;
        } else if (len < (int)sizeof(path) && is_section(path)) {
            if (v->kind == ST_YNODE_MAP)
                rc = walk(ld, v, path);
            else if (!(v->kind == ST_YNODE_SCALAR && v->is_null))
                rc = expected(ld, v, path, "a mapping");
        } else {
            rc = unknown_key(ld, k, path, prefix, NULL, 0);
        }
    }
    return rc;
}

enum st_status st_config_load_buffer(struct st_config *c, const char *name, const char *data,
                                     size_t len, struct st_err *err)
{
    struct loader ld = { .c = c, .name = name, .err = err };
    struct st_ynode *root = NULL;
    enum st_status rc;

    if (c->config_path == NULL && (c->config_path = strdup(name)) == NULL)
        return st_err_set(err, ST_ERR_NOMEM, "%s: out of memory", name);
    rc = st_yaml_parse(name, data, len, &root, err);
    if (rc != ST_OK || root == NULL)
        return rc;
    if (root->kind == ST_YNODE_MAP)
        rc = walk(&ld, root, "");
    else if (!(root->kind == ST_YNODE_SCALAR && root->is_null))
        rc = expected(&ld, root, "the top level", "a mapping of settings (host:, port:, ...)");
    st_ynode_free(root);
    return rc;
}
