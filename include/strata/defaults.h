/* defaults.h -- the built-in value of every setting that more than one
 * module starts from. The config (config/config.c; what `strata serve
 * --help` prints and what a flag or the config file overrides) and the
 * modules that also run without a config, in tests and tools -- the HTTP
 * server (server/http.c), the scheduler (sched/sched.c), the engine pool
 * (engine/pool.c), a request's sampling (engine/request.c) and `strata
 * run` (app/cli_run.c) -- all take them from here, so a default changes in
 * one place. Zero, false and NULL defaults are not listed: every init
 * starts from a zeroed struct.
 */
#ifndef STRATA_DEFAULTS_H
#define STRATA_DEFAULTS_H

/* ---- HTTP server ---- */
#define ST_DEFAULT_HOST             "127.0.0.1"
#define ST_DEFAULT_PORT             8080
#define ST_DEFAULT_BODY_LIMIT       ((size_t)8 << 20)    /* bytes */
#define ST_DEFAULT_HTTP_THREADS     2
#define ST_DEFAULT_CORS_ORIGINS     "localhost"
#define ST_DEFAULT_SSE_KEEPALIVE_S  15
#define ST_DEFAULT_RESPONSES_MB     64                   /* stored responses, MiB */
#define ST_DEFAULT_STATE_MAX_ROWS   100000
#define ST_DEFAULT_MAX_CONNECTIONS  1024
#define ST_DEFAULT_TIMEOUT_S        60
#define ST_DEFAULT_HEADER_TIMEOUT_S 30
#define ST_DEFAULT_STREAM_BUFFER    ((size_t)2 << 20)    /* bytes */

/* ---- sampling (a request's, and strata run's) ---- */
#define ST_DEFAULT_TEMPERATURE      0.8f
#define ST_DEFAULT_TOP_K            40
#define ST_DEFAULT_TOP_P            0.95f
#define ST_DEFAULT_MIN_P            0.05f
#define ST_DEFAULT_SEED             (-1)                 /* a random seed per request */

/* ---- scheduler ---- */
#define ST_DEFAULT_AGING_DIVISOR_S  60.0                 /* seconds per priority point */
#define ST_DEFAULT_AFFINITY_BONUS   10
#define ST_DEFAULT_GIVE_WAY_TOKENS  16384
#define ST_DEFAULT_YIELDS_MAX       4

/* ---- engine pool ---- */
#define ST_DEFAULT_UBATCH           512                  /* tokens per forward chunk */
#define ST_DEFAULT_MTP_DRAFT        1
#define ST_DEFAULT_NGRAM_MIN        2
#define ST_DEFAULT_NGRAM_MAX        4
#define ST_DEFAULT_SPEC_DRAFT       8
#define ST_DEFAULT_CTX_CHECKPOINTS  3
#define ST_DEFAULT_SIM_PROMPT_TPS   5000.0
#define ST_DEFAULT_SIM_DECODE_TPS   50.0
#define ST_DEFAULT_SIM_TOKENS       16
#define ST_DEFAULT_KV_BLOCK         16                   /* tokens per KV block (/metrics) */

#endif /* STRATA_DEFAULTS_H */
