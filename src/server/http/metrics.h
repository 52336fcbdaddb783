/* http/metrics.h -- the Prometheus text of GET /metrics (metrics.c): the
 * server's own counters, the scheduler's and the pool's, every model's.
 * Rendering is pure: it reads plain stats structs snapshotted beforehand.
 */
#ifndef STRATA_SERVER_HTTP_METRICS_H
#define STRATA_SERVER_HTTP_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/engine.h"
#include "strata/sched.h"
#include "strata/str.h"

/* ---- metrics (metrics.c) ---------------------------------------------- */

#define ST_HTTP_CODES_TRACKED 11

/* The server's own counters, kept with atomics in struct st_server (http.h:
 * reply.c counts the responses). */
struct st_http_stats {
    uint64_t responses[ST_HTTP_CODES_TRACKED];   /* by st_http_codes[] */
    bool     draining;                           /* drain.c: refusing new generations */
    /* the response store (responses/responses_store.h; all 0 when off) */
    uint64_t resp_stored;                        /* responses held */
    uint64_t resp_stored_bytes;                  /* their size against the budget */
    uint64_t resp_evicted;                       /* dropped for room since start */
};
extern const int st_http_codes[ST_HTTP_CODES_TRACKED];   /* 0 = "other" */

/* The per-model part of /metrics (docs/MODELS.md), snapshotted from the
 * pool by st_metrics_models_take so that rendering stays pure. */
struct st_metrics_swap {
    int32_t  from;                          /* -1: the engine had none (label "none") */
    int32_t  to;
    uint64_t n;                             /* strata_model_swaps_total{from,to} */
};

/* What a router's endpoint picker needs beyond the stats (metrics_epp.c). */
struct st_metrics_resident {
    int64_t waiting;                        /* requests queued for the model */
    const char *const *aliases;             /* [n_aliases], borrowed from the pool */
    int32_t n_aliases;
};

struct st_metrics_pod {
    int32_t block_size;                     /* tokens per KV block (st_engine_pool_kv_block_size) */
    int32_t max_resident;                   /* models the pod holds at once: its engines */
    double  now_unix;                       /* when the snapshot was taken, unix seconds */
};

struct st_metrics_models {
    int32_t n_models;
    const char **names;                     /* [n_models], owned array; strings borrowed */
    struct st_model_status *status;         /* [n_models], owned */
    struct st_metrics_swap *swaps;          /* [n_swaps], owned: the pairs shown */
    size_t n_swaps;
    struct st_metrics_resident *resident;   /* [n_models], owned; NULL: nothing waits */
    struct st_metrics_pod pod;
};

/* Every (from, to) swap pair is shown up to this many models (17 x 16
 * series); above it, the from="none" row and the pairs between models
 * that have loaded at least once (the others are zero), so a server with
 * hundreds of models does not render tens of thousands of zero series. */
#define ST_METRICS_ALL_PAIRS_MAX 16
/* A label 'name="value"' at most (longer values are cut). */
#define ST_METRICS_LABEL_MAX 320

/* Snapshot every model's status and the swap counters, and with 'sched'
 * (NULL: none waiting) the requests waiting for each. ST_ERR_NOMEM (out
 * left empty). Release with st_metrics_models_fini (safe on an empty one). */
ST_MUST_CHECK
enum st_status st_metrics_models_take(struct st_engine_pool *p, struct st_sched *sched,
                                      struct st_metrics_models *out);
void st_metrics_models_fini(struct st_metrics_models *m);

/* Prometheus text format 0.0.4: every family with HELP and TYPE, every band
 * label present, and with 'models' (NULL: none) every model's series.
 * Pure: reads only its arguments. */
ST_MUST_CHECK
enum st_status st_metrics_render(struct st_buf *out, const struct st_sched_stats *ss,
                                 const struct st_pool_stats *ps, const struct st_http_stats *hs,
                                 const struct st_metrics_models *models);

/* The router-facing families (metrics_epp.c): vllm: and strata: queue,
 * running and KV gauges from the stats, and with 'models' (NULL: left out)
 * the cache geometry and the models resident. Pure, as st_metrics_render. */
struct st_out;
void st_metrics_epp_render(struct st_out *o, const struct st_sched_stats *ss,
                           const struct st_pool_stats *ps, const struct st_metrics_models *models);
/* llama-server's llamacpp:* families Strata counts alike (metrics_llamacpp.c). */
void st_metrics_llamacpp(struct st_out *o, const struct st_sched_stats *ss,
                         const struct st_pool_stats *ps);

#endif /* STRATA_SERVER_HTTP_METRICS_H */
