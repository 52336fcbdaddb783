/* config.c -- the config's life cycle: defaults, the lists it owns and
 * the warnings it collects. The chain defaults < file < flags and the
 * resolve step are in resolve.c; the files that fill the struct (cli.c,
 * load.c, options.c) call only this one.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strata/defaults.h"

const char *st_cfg_backend_name(enum st_cfg_backend b)
{
    switch (b) {
    case ST_CFG_BACKEND_AUTO: return "auto";
    case ST_CFG_BACKEND_SIM:  return "sim";
    case ST_CFG_BACKEND_CPU:  return "cpu";
    case ST_CFG_BACKEND_CUDA: return "cuda";
    }
    return "unknown";
}

bool st_config_cuda_built(void)
{
#ifdef STRATA_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

void st_config_init(struct st_config *c)
{
    memset(c, 0, sizeof(*c));
    c->host = strdup(ST_DEFAULT_HOST);
    if (c->host == NULL)
        st_panic("strdup of the default host", __FILE__, __LINE__);
    c->port = ST_DEFAULT_PORT;
    c->body_limit = ST_DEFAULT_BODY_LIMIT;
    c->max_queue = 0;
    c->http_threads = ST_DEFAULT_HTTP_THREADS;
    c->cors_origins = strdup(ST_DEFAULT_CORS_ORIGINS);
    if (c->cors_origins == NULL)
        st_panic("strdup of the default CORS origins", __FILE__, __LINE__);
    c->sse_keepalive_s = ST_DEFAULT_SSE_KEEPALIVE_S;
    c->responses_store_mb = ST_DEFAULT_RESPONSES_MB;
    c->state_max_rows = ST_DEFAULT_STATE_MAX_ROWS;
    c->max_connections = ST_DEFAULT_MAX_CONNECTIONS;
    c->max_connections_per_ip = 0;
    c->timeout_s = ST_DEFAULT_TIMEOUT_S;
    c->header_timeout_s = ST_DEFAULT_HEADER_TIMEOUT_S;
    c->stream_buffer = ST_DEFAULT_STREAM_BUFFER;
    c->priority_order = ST_CFG_ORDER_HIGH_FIRST;
    c->webui = true;
    c->slots = true;
    c->backend = ST_CFG_BACKEND_AUTO;
    c->parallel = 4;
    c->ctx_size = 0;   /* ST_CFG_SLOT_CTX per slot */
    c->ubatch = ST_DEFAULT_UBATCH;
    c->threads = 0;
    c->mtp_draft = ST_DEFAULT_MTP_DRAFT;
    c->spec = ST_CFG_SPEC_NONE;
    c->spec_ngram_min = ST_DEFAULT_NGRAM_MIN;
    c->spec_ngram_max = ST_DEFAULT_NGRAM_MAX;
    c->spec_draft = ST_DEFAULT_SPEC_DRAFT;
    c->ctx_checkpoints = ST_DEFAULT_CTX_CHECKPOINTS;
    c->scheduler = ST_CFG_SCHED_SERIAL;
    c->aging_divisor_s = ST_DEFAULT_AGING_DIVISOR_S;
    c->swap_affinity_bonus = ST_DEFAULT_AFFINITY_BONUS;
    c->give_way_tokens = ST_DEFAULT_GIVE_WAY_TOKENS;
    c->yields_max = ST_DEFAULT_YIELDS_MAX;
    c->sim_prompt_tps = ST_DEFAULT_SIM_PROMPT_TPS;
    c->sim_decode_tps = ST_DEFAULT_SIM_DECODE_TPS;
    c->sim_load_seconds = 0.0;
    c->sim_tokens = ST_DEFAULT_SIM_TOKENS;
    c->kv_block_size = ST_DEFAULT_KV_BLOCK;
    c->reasoning_budget = -1;
    c->n_predict = -1;
    c->temp = ST_DEFAULT_TEMPERATURE;
    c->seed = ST_DEFAULT_SEED;
    c->jinja = true;
    c->prefill_assistant = true;
    c->log_format = ST_LOG_TEXT;
    c->log_level = ST_LOG_INFO;
}

void st_cfg_model_fini(struct st_config_model *m)
{
    free(m->name);
    free(m->path);
    for (size_t i = 0; i < m->n_aliases; i++)
        free(m->aliases[i]);
    free(m->aliases);
    for (size_t i = 0; i < m->n_tags; i++)
        free(m->tags[i]);
    free(m->tags);
    memset(m, 0, sizeof(*m));
}

void st_cfg_key_fini(struct st_config_key *k)
{
    free(k->name);
    free(k->key);
    memset(k, 0, sizeof(*k));
}

void st_config_fini(struct st_config *c)
{
    for (size_t i = 0; i < c->n_models; i++)
        st_cfg_model_fini(&c->models[i]);
    free(c->models);
    for (size_t i = 0; i < c->n_keys; i++)
        st_cfg_key_fini(&c->keys[i]);
    free(c->keys);
    for (size_t i = 0; i < c->n_warnings; i++)
        free(c->warnings[i]);
    free(c->warnings);
    free(c->host);
    free(c->cors_origins);
    free(c->allowed_hosts);
    free(c->metrics_key);
    free(c->state_dir);
    free(c->slot_save_path);
    free(c->config_path);
    free(c->model_path);
    free(c->model_alias);
    free(c->model_tags);
    free(c->sim_reply);
    free(c->kv_events);
    free(c->kv_events_host);
    free(c->chat_template);
    free(c->chat_template_file);
    memset(c, 0, sizeof(*c));
}

/* The array 'arr' of n elements of 'size' bytes, reallocated with one more
 * zeroed element at [n]; NULL when out of memory (arr is then untouched). */
static void *grow_by_one(void *arr, size_t n, size_t size)
{
    unsigned char *grown = realloc(arr, (n + 1) * size);
    if (grown != NULL)
        memset(grown + n * size, 0, size);
    return grown;
}

struct st_config_model *st_cfg_add_model(struct st_config *c)
{
    struct st_config_model *grown = grow_by_one(c->models, c->n_models, sizeof(*grown));
    if (grown == NULL)
        return NULL;
    c->models = grown;
    return &grown[c->n_models++];
}

struct st_config_key *st_cfg_add_key(struct st_config *c)
{
    struct st_config_key *grown = grow_by_one(c->keys, c->n_keys, sizeof(*grown));
    if (grown == NULL)
        return NULL;
    c->keys = grown;
    return &grown[c->n_keys++];
}

enum st_status st_cfg_warn(struct st_config *c, const char *fmt, ...)
{
    char msg[512];
    char **grown;
    char *copy;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    copy = strdup(msg);
    grown = copy ? realloc(c->warnings, (c->n_warnings + 1) * sizeof(*grown)) : NULL;
    if (grown == NULL) {
        free(copy);
        return ST_ERR_NOMEM;
    }
    grown[c->n_warnings++] = copy;
    c->warnings = grown;
    return ST_OK;
}
