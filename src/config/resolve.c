/* resolve.c -- the chain defaults < file < flags (st_config_from_args) and
 * the final resolve step (inheritance, the built-in model, cross-field
 * checks).
 *
 * Messages about a setting name where it came from: the flag when it was
 * given on the command line, else "file:line: key" when the file set it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "internal.h"

/* ---- resolve --------------------------------------------------------- */

/* Where a server-level setting came from, for a message. */
static void where_opt(const struct st_config *c, enum st_opt o, char *out, size_t cap)
{
    const struct st_cfg_def *d = &st_cfg_opts[o];
    if (st_config_given(c, o) || c->line[o] == 0)
        snprintf(out, cap, "%s", d->lng);
    else
        snprintf(out, cap, "%s:%d: %s", c->config_path ? c->config_path : "config",
                 (int)c->line[o], d->yaml);
}

static void where_model(const struct st_config *c, size_t i, char *out, size_t cap)
{
    const struct st_config_model *m = &c->models[i];
    if (m->line == 0)
        snprintf(out, cap, "%s", c->model_path ? "--model" : "the built-in model");
    else
        snprintf(out, cap, "%s:%d: models[%zu]", c->config_path ? c->config_path : "config",
                 (int)m->line, i);
}

/* "/models/Qwen3-30B.gguf" -> "Qwen3-30B". */
static char *name_from_path(const char *path)
{
    const char *base = strrchr(path, '/');
    size_t len;

    base = base ? base + 1 : path;
    len = strlen(base);
    if (len > 5 && strcasecmp(base + len - 5, ".gguf") == 0)
        len -= 5;
    return len ? strndup(base, len) : strdup("default");
}

/* -m replaces the file's models with one; no model at all gives the
 * built-in default; --alias names either. */
static enum st_status resolve_cli_model(struct st_config *c, struct st_err *err)
{
    struct st_config_model *m;

    if (c->model_alias && !c->model_path && c->n_models > 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "--alias: names the model of --model; the models of %s are named "
                          "with name: there", c->config_path ? c->config_path : "the config");
    if (c->model_path && c->n_models > 0) {
        if (st_cfg_warn(c, "--model %s replaces the %zu model(s) listed in %s", c->model_path,
                        c->n_models, c->config_path ? c->config_path : "the config") != ST_OK)
            return st_err_set(err, ST_ERR_NOMEM, "config: out of memory");
        for (size_t i = 0; i < c->n_models; i++)
            st_cfg_model_fini(&c->models[i]);
        c->n_models = 0;
    }
    if (c->n_models > 0)
        return ST_OK;
    m = st_cfg_add_model(c);
    if (m == NULL)
        return st_err_set(err, ST_ERR_NOMEM, "config: out of memory");
    if (c->model_alias)
        m->name = strdup(c->model_alias);
    else
        m->name = c->model_path ? name_from_path(c->model_path) : strdup("default");
    m->path = c->model_path ? strdup(c->model_path) : NULL;
    if (m->name == NULL || (c->model_path && m->path == NULL))
        return st_err_set(err, ST_ERR_NOMEM, "config: out of memory");
    return ST_OK;
}

/* A flag given on the command line wins over the model's own value; a
 * value the model left unset comes from the server-level setting. */
static void inherit(const struct st_config *c, struct st_config_model *m)
{
    if (st_config_given(c, ST_OPT_BACKEND) || m->backend == ST_CFG_BACKEND_AUTO)
        m->backend = c->backend;
    if (m->backend == ST_CFG_BACKEND_AUTO)
        m->backend = m->path ? ST_CFG_BACKEND_CPU : ST_CFG_BACKEND_SIM;
    if (st_config_given(c, ST_OPT_PARALLEL) || m->parallel == 0)
        m->parallel = c->parallel;
    if (st_config_given(c, ST_OPT_CTX_SIZE) || m->ctx_size == 0)
        m->ctx_size = c->ctx_size;
    if (st_config_given(c, ST_OPT_ROPE_SCALING) || m->rope_scaling == ST_ROPE_SCALING_MODEL)
        m->rope_scaling = c->rope_scaling;
    if (st_config_given(c, ST_OPT_ROPE_SCALE) || m->rope_scale == 0)
        m->rope_scale = c->rope_scale;
    if (st_config_given(c, ST_OPT_YARN_ORIG_CTX) || m->yarn_orig_ctx == 0)
        m->yarn_orig_ctx = c->yarn_orig_ctx;
    if (st_config_given(c, ST_OPT_GPUS) || m->gpus.n == 0)
        m->gpus = c->gpus;
}

static enum st_status check_cuda(struct st_config *c, struct st_err *err)
{
    char where[300];

    if (st_config_cuda_built())
        return ST_OK;
    if (c->backend == ST_CFG_BACKEND_CUDA) {
        where_opt(c, ST_OPT_BACKEND, where, sizeof(where));
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "%s: cuda: this build has no CUDA backend (it was built without the "
                          "CUDA toolkit); use cpu or sim", where);
    }
    for (size_t i = 0; i < c->n_models && !st_config_given(c, ST_OPT_BACKEND); i++) {
        if (c->models[i].backend != ST_CFG_BACKEND_CUDA)
            continue;
        where_model(c, i, where, sizeof(where));
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "%s.backend: cuda: this build has no CUDA backend (it was built "
                          "without the CUDA toolkit); use cpu or sim", where);
    }
    return ST_OK;
}

/* Does model 'j' (j < i) answer to 'id'? Then 'id' of model i is a clash. */
static bool id_taken(const struct st_config *c, size_t upto, const char *id, size_t *owner)
{
    for (size_t j = 0; j < upto; j++) {
        const struct st_config_model *m = &c->models[j];
        bool hit = m->name && strcmp(m->name, id) == 0;
        for (size_t a = 0; a < m->n_aliases && !hit; a++)
            hit = strcmp(m->aliases[a], id) == 0;
        if (hit) {
            *owner = j;
            return true;
        }
    }
    return false;
}

int64_t st_config_slot_ctx(const struct st_config *c, const struct st_config_model *m)
{
    int64_t slots = c->batch && m->parallel > 0 ? m->parallel : 1;
    return m->ctx_size > 0 ? m->ctx_size / slots : ST_CFG_SLOT_CTX;
}

static enum st_status check_models(struct st_config *c, struct st_err *err)
{
    char where[300];
    size_t owner;

    for (size_t i = 0; i < c->n_models; i++) {
        const struct st_config_model *m = &c->models[i];
        where_model(c, i, where, sizeof(where));
        if (m->name == NULL)
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "%s: missing name (every model needs a name: clients send it "
                              "as \"model\")", where);
        if (id_taken(c, i, m->name, &owner))
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "%s.name: \"%s\" is already the name or an alias of models[%zu]",
                              where, m->name, owner);
        /* the loader takes the factor as a float: 1e-50 would be 0 (= the
         * file's) there and 1e39 infinite */
        if (m->rope_scale != 0 && !(isfinite((float)m->rope_scale) && (float)m->rope_scale > 0)) {
            if (m->line == 0)   /* the implicit model: the server's setting */
                where_opt(c, ST_OPT_ROPE_SCALE, where, sizeof(where));
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "%s: rope_scale %g is out of range (a float above 0)", where,
                              m->rope_scale);
        }
        if (m->ctx_size > 0 && st_config_slot_ctx(c, m) < ST_CFG_SLOT_CTX_MIN) {
            if (m->line == 0)   /* the implicit model: its ctx_size is the server's */
                where_opt(c, ST_OPT_CTX_SIZE, where, sizeof(where));
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "%s: ctx_size %lld shared by %d slots leaves %lld tokens each; "
                              "a slot needs at least %d (ctx_size is all the slots' context "
                              "together, as llama-server's -c)", where, (long long)m->ctx_size,
                              c->batch ? (int)m->parallel : 1,
                              (long long)st_config_slot_ctx(c, m), ST_CFG_SLOT_CTX_MIN);
        }
        if (m->backend == ST_CFG_BACKEND_CUDA && c->kv_unified && c->batch) {
            where_opt(c, ST_OPT_KV_UNIFIED, where, sizeof(where));
            return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: the unified KV pool is not in the "
                              "cuda backend yet (model '%s' runs on cuda); drop it: each slot "
                              "then gets ctx_size / parallel tokens", where,
                              m->name ? m->name : "?");
        }
        if (m->backend == ST_CFG_BACKEND_CUDA && (c->cache_type_k != ST_KV_F16 ||
                                                  c->cache_type_v != ST_KV_F16)) {
            enum st_opt o = c->cache_type_k != ST_KV_F16 ? ST_OPT_CACHE_TYPE_K
                                                         : ST_OPT_CACHE_TYPE_V;
            where_opt(c, o, where, sizeof(where));
            return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: KV cache type q8_0 is not in the "
                              "cuda backend yet (model '%s' runs on cuda); use f16", where,
                              m->name ? m->name : "?");
        }
        if (m->rope_scaling == ST_ROPE_SCALING_NONE && m->rope_scale != 0) {
            if (m->line == 0)
                where_opt(c, ST_OPT_ROPE_SCALE, where, sizeof(where));
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "%s: rope_scale %g needs rope_scaling linear or yarn (it is none)",
                              where, m->rope_scale);
        }
        for (size_t a = 0; a < m->n_aliases; a++) {
            bool self = strcmp(m->aliases[a], m->name) == 0;
            for (size_t b = 0; b < a && !self; b++)
                self = strcmp(m->aliases[a], m->aliases[b]) == 0;
            if (self || id_taken(c, i, m->aliases[a], &owner))
                return st_err_set(err, ST_ERR_BAD_CONFIG,
                                  "%s.aliases: \"%s\" names more than one model", where,
                                  m->aliases[a]);
        }
    }
    return ST_OK;
}

static void where_key(const struct st_config *c, size_t i, char *out, size_t cap)
{
    if (c->keys[i].line == 0)
        snprintf(out, cap, "--api-key");
    else
        snprintf(out, cap, "%s:%d: api_keys[%zu]", c->config_path ? c->config_path : "config",
                 (int)c->keys[i].line, i);
}

static enum st_status check_keys(struct st_config *c, struct st_err *err)
{
    char where[300];

    for (size_t i = 0; i < c->n_keys; i++) {
        struct st_config_key *k = &c->keys[i];
        where_key(c, i, where, sizeof(where));
        if (k->key == NULL)
            return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: missing key", where);
        if (k->name == NULL) {
            char name[32];
            snprintf(name, sizeof(name), "key-%zu", i + 1);
            k->name = strdup(name);
            if (k->name == NULL)
                return st_err_set(err, ST_ERR_NOMEM, "config: out of memory");
        }
        if (k->has_default_priority && k->has_max_priority &&
            k->default_priority > k->max_priority)
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "%s: default_priority %d is above max_priority %d", where,
                              (int)k->default_priority, (int)k->max_priority);
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->keys[j].key, k->key) == 0)
                return st_err_set(err, ST_ERR_BAD_CONFIG,
                                  "%s (%s): the same key as %s", where, k->name,
                                  c->keys[j].name);
    }
    return ST_OK;
}

/* Led by the bound the user set (a file's line or a flag), like every other
 * config error; the other bound's source in parentheses. */
static enum st_status ngram_range_error(const struct st_config *c, struct st_err *err)
{
    char lo[300], hi[300];
    bool max_set = st_config_given(c, ST_OPT_SPEC_NGRAM_MAX) || c->line[ST_OPT_SPEC_NGRAM_MAX];

    where_opt(c, ST_OPT_SPEC_NGRAM_MIN, lo, sizeof(lo));
    where_opt(c, ST_OPT_SPEC_NGRAM_MAX, hi, sizeof(hi));
    if (max_set)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: %d is below the n-gram minimum %d (%s)",
                          hi, (int)c->spec_ngram_max, (int)c->spec_ngram_min, lo);
    return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: %d is above the n-gram maximum %d (%s)", lo,
                      (int)c->spec_ngram_min, (int)c->spec_ngram_max, hi);
}

enum st_status st_config_resolve(struct st_config *c, struct st_err *err)
{
    enum st_status rc;

    rc = resolve_cli_model(c, err);
    if (rc == ST_OK)
        rc = check_cuda(c, err);
    if (rc != ST_OK)
        return rc;
    for (size_t i = 0; i < c->n_models; i++)
        inherit(c, &c->models[i]);
    rc = check_models(c, err);
    if (rc == ST_OK)
        rc = check_keys(c, err);
    if (rc != ST_OK)
        return rc;
    if (c->spec_ngram_min > c->spec_ngram_max)
        return ngram_range_error(c, err);
    if (!c->batch && (st_config_given(c, ST_OPT_PARALLEL) || c->line[ST_OPT_PARALLEL]) &&
        c->parallel > 1 &&
        st_cfg_warn(c, "parallel %d has no effect without --batch: each engine serves one "
                    "request at a time", (int)c->parallel) != ST_OK)
        return st_err_set(err, ST_ERR_NOMEM, "config: out of memory");
    return ST_OK;
}

/* ---- files and the whole chain --------------------------------------- */

enum st_status st_config_load_file(struct st_config *c, const char *path, struct st_err *err)
{
    enum st_status rc;
    struct stat sb;
    char *data;
    size_t n;
    FILE *f = fopen(path, "rb");

    if (f == NULL)
        return st_err_errno(err, ST_ERR_IO, "--config: cannot open %s", path);
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (16 << 20)) {
        fclose(f);
        return st_err_set(err, ST_ERR_IO, "--config: %s is not a regular file under 16 MiB",
                          path);
    }
    data = malloc((size_t)sb.st_size + 1);
    if (data == NULL) {
        fclose(f);
        return st_err_set(err, ST_ERR_NOMEM, "--config: no memory to read %s", path);
    }
    n = fread(data, 1, (size_t)sb.st_size, f);
    if (ferror(f)) {
        rc = st_err_errno(err, ST_ERR_IO, "--config: cannot read %s", path);
    } else {
        data[n] = '\0';
        rc = st_config_load_buffer(c, path, data, n, err);
    }
    free(data);
    fclose(f);
    return rc;
}

enum st_status st_config_from_args(struct st_config *c, int argc, char **argv, bool *help,
                                   struct st_err *err)
{
    enum st_status rc;
    char *path = NULL;

    *help = false;
    st_config_init(c);
    /* First pass on the defaults: every flag is checked before any file. */
    rc = st_cli_apply(c, argc, argv, help, err);
    if (rc != ST_OK || *help)
        goto out;
    if (c->config_path) {
        path = c->config_path;
        c->config_path = NULL;
        st_config_fini(c);
        st_config_init(c);
        rc = st_config_load_file(c, path, err);
        if (rc != ST_OK)
            goto out;
        /* Second pass: the same flags, now over the file's values. */
        rc = st_cli_apply(c, argc, argv, help, err);
        if (rc != ST_OK)
            goto out;
    }
    rc = st_config_resolve(c, err);
out:
    free(path);
    if (rc != ST_OK)
        st_config_fini(c);
    return rc;
}
