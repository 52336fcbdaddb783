/* config.h -- everything `strata serve` is told, from the YAML file and the
 * command line, in one struct (../docs/CONFIG.md, ../docs/CLI.md).
 *
 * Order of precedence: built-in defaults < the --config file < flags on the
 * command line. A flag given on the command line also overrides the same
 * setting inside every `models:` entry (--parallel 8 means 8 for every
 * model). st_config_from_args() runs the whole chain: it checks every flag
 * first (so a bad flag is reported before any file is read), loads the
 * file, applies the flags on top and resolves the result.
 *
 * The config module depends on util only: it has its own small enums for
 * backend, scheduler and priority order, and main.c maps them onto the
 * engine, scheduler and server configs.
 *
 * Messages are ready to print after "strata: ": file errors read
 * "strata.yaml:12: models[0].parallel: expected a positive integer, got
 * \"four\"", flag errors "--port: expected an integer 0..65535, got \"abc\"".
 *
 * Threads: the config is built and read by main's thread before any other
 * thread starts; nothing here is thread-safe or needs to be.
 */
#ifndef STRATA_CONFIG_H
#define STRATA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/log.h"
#include "strata/kv_type.h"
#include "strata/rope.h"
#include "strata/str.h"

#define ST_CONFIG_MAX_GPUS 16

enum st_cfg_backend {
    ST_CFG_BACKEND_AUTO,   /* not said: sim without a model, cpu with one */
    ST_CFG_BACKEND_SIM,
    ST_CFG_BACKEND_CPU,
    ST_CFG_BACKEND_CUDA,
};

enum st_cfg_scheduler {
    ST_CFG_SCHED_SERIAL,   /* score = priority + affinity + aging (default) */
    ST_CFG_SCHED_FIFO,     /* priority, then arrival */
};

enum st_cfg_reasoning {
    ST_CFG_REASONING_DEEPSEEK,   /* <think> -> message.reasoning_content (default) */
    ST_CFG_REASONING_NONE,       /* <think> stays in the content */
};

enum st_cfg_spec {
    ST_CFG_SPEC_NONE,    /* no drafts besides --batch-mtp (default) */
    ST_CFG_SPEC_NGRAM,   /* n-gram (prompt-lookup) drafts from each slot's own history */
};

enum st_cfg_priority_order {
    ST_CFG_ORDER_HIGH_FIRST,   /* llama-swap: a higher number goes first (default) */
    ST_CFG_ORDER_LOW_FIRST,    /* vLLM / LiteLLM: a lower number goes first */
};

/* "auto", "sim", "cpu", "cuda"; static storage. */
const char *st_cfg_backend_name(enum st_cfg_backend b);

/* Device ids: --gpus 0,1 or `gpus: [0, 1]`. n = 0: none given. */
struct st_config_gpus {
    int32_t ids[ST_CONFIG_MAX_GPUS];
    int32_t n;
};

/* One entry of `models:` (or the model of -m, or the built-in default).
 * After st_config_resolve() every field is final: the inherited values
 * (0 / AUTO / n = 0 below) are filled from the server-level settings. */
struct st_config_model {
    char   *name;            /* owned; the id clients send as "model" */
    char   *path;            /* owned; GGUF file, NULL = none (sim) */
    char  **aliases;         /* owned array of owned strings */
    size_t  n_aliases;
    char  **tags;            /* owned: labels /v1/models shows (llama-server's --tags) */
    size_t  n_tags;
    enum st_cfg_backend backend;   /* AUTO before resolve = the server's */
    int32_t priority;        /* added to every request's priority (default 0) */
    int32_t parallel;        /* slots per engine with --batch; 0 before resolve = the server's */
    int64_t ctx_size;        /* tokens of all its slots on one engine together (llama-
                              * server's -c); 0: ST_CFG_SLOT_CTX per slot. Per slot:
                              * st_config_slot_ctx() */
    enum st_rope_scaling rope_scaling;   /* MODEL before resolve = the server's */
    double  rope_scale;      /* rope scaling factor; 0 = the server's, then the file's */
    int64_t yarn_orig_ctx;   /* yarn's trained context; 0 = the server's, then the file's */
    struct st_config_gpus gpus;    /* n = 0 before resolve = the server's */
    double  ttl_s;           /* unload after this long idle; 0 = never */
    bool    preload;         /* load at start instead of on first use */
    int32_t line;            /* where it was defined in the file; 0 = not from a file */
};

/* One entry of `api_keys:` or an --api-key flag. */
struct st_config_key {
    char   *name;            /* owned; shown in logs, never the key */
    char   *key;             /* owned */
    bool    has_default_priority;
    int32_t default_priority;
    bool    has_max_priority;
    int32_t max_priority;
    bool    admin;           /* sees every key's requests (/api/activity, /slots) */
    int32_t line;            /* 0 = from the command line */
};

/* Every setting with a flag. The order is the order of `strata serve
 * --help`. */
enum st_opt {
    ST_OPT_MODEL, ST_OPT_ALIAS, ST_OPT_TAGS, ST_OPT_CONFIG, ST_OPT_HOST, ST_OPT_PORT, ST_OPT_API_KEY,
    ST_OPT_BODY_LIMIT, ST_OPT_MAX_QUEUE, ST_OPT_HTTP_THREADS, ST_OPT_CORS_ORIGINS,
    ST_OPT_ALLOWED_HOSTS, ST_OPT_METRICS_KEY,
    ST_OPT_SLOT_SAVE_PATH,
    ST_OPT_SSE_KEEPALIVE, ST_OPT_RESPONSES_STORE_MB, ST_OPT_SHUTDOWN_TIMEOUT,
    ST_OPT_MAX_CONNECTIONS, ST_OPT_MAX_CONNECTIONS_PER_IP, ST_OPT_TIMEOUT,
    ST_OPT_HEADER_TIMEOUT, ST_OPT_STREAM_BUFFER,
    ST_OPT_PRIORITY_ORDER,
    ST_OPT_WEBUI, ST_OPT_SLOTS,
    ST_OPT_BACKEND, ST_OPT_GPUS, ST_OPT_PARALLEL, ST_OPT_BATCH, ST_OPT_CTX_SIZE,
    ST_OPT_ROPE_SCALING, ST_OPT_ROPE_SCALE, ST_OPT_YARN_ORIG_CTX,
    ST_OPT_CACHE_TYPE_K, ST_OPT_CACHE_TYPE_V, ST_OPT_KV_UNIFIED,
    ST_OPT_UBATCH, ST_OPT_THREADS, ST_OPT_BATCH_MTP, ST_OPT_MTP_DRAFT,
    ST_OPT_SPEC, ST_OPT_SPEC_NGRAM_MIN, ST_OPT_SPEC_NGRAM_MAX, ST_OPT_SPEC_DRAFT,
    ST_OPT_CTX_CHECKPOINTS,
    ST_OPT_SCHEDULER, ST_OPT_AGING_DIVISOR, ST_OPT_SWAP_AFFINITY_BONUS,
    ST_OPT_GIVE_WAY_TOKENS, ST_OPT_YIELDS_MAX,
    ST_OPT_SIM_PROMPT_TPS, ST_OPT_SIM_DECODE_TPS, ST_OPT_SIM_LOAD_SECONDS, ST_OPT_SIM_TOKENS,
    ST_OPT_SIM_REPLY, ST_OPT_REASONING_FORMAT, ST_OPT_REASONING_BUDGET, ST_OPT_N_PREDICT,
    ST_OPT_TEMP, ST_OPT_SEED,
    ST_OPT_KV_EVENTS, ST_OPT_KV_EVENTS_HOST, ST_OPT_KV_BLOCK_SIZE,
    ST_OPT_LOG_FORMAT, ST_OPT_LOG_LEVEL,
    ST_OPT_STATE_DIR, ST_OPT_STATE_MAX_ROWS,
    ST_OPT_CHAT_TEMPLATE, ST_OPT_CHAT_TEMPLATE_FILE, ST_OPT_JINJA, ST_OPT_PREFILL_ASSISTANT,
    ST_OPT_COUNT
};

struct st_config {
    /* HTTP */
    char    *host;                 /* owned; default "127.0.0.1" */
    int32_t  port;                 /* 0..65535; 0 = pick a free port; default 8080 */
    size_t   body_limit;           /* bytes; default 8 MiB */
    int32_t  max_queue;            /* waiting requests at most; 0 = unlimited (default) */
    int32_t  http_threads;         /* libmicrohttpd threads; default 2 */
    char    *cors_origins;         /* owned; comma-separated origins, "localhost" (default:
                                    * the loopback ones), "*" (any) or "none" (no CORS
                                    * headers); docs/API.md "CORS" */
    char    *allowed_hosts;        /* owned; Host names served besides the loopback ones, IP
                                    * literals and --host; "*" = any; NULL (default) = none
                                    * (docs/SECURITY.md) */
    char    *metrics_key;          /* owned; with keys set, also reads /metrics; NULL = none */
    char    *slot_save_path;       /* owned; POST /slots save/restore files go here; NULL =
                                    * those actions are refused (docs/API.md "/slots") */
    int32_t  sse_keepalive_s;      /* SSE comment after this many idle seconds; 0 = off;
                                    * default 15 */
    int32_t  responses_store_mb;   /* /v1/responses store budget, MiB; 0 = store nothing;
                                    * default 64 (docs/API.md "Stored responses") */
    char    *state_dir;            /* owned; keep stored responses and the activity log in
                                    * DIR/strata.db (SQLite); NULL (default) = in memory
                                    * (docs/OPERATIONS.md) */
    int32_t  state_max_rows;       /* rows of each kept there at most; default 100000 */
    int32_t  shutdown_timeout_s;   /* on SIGINT/SIGTERM, let requests in progress finish
                                    * for up to this long (no new ones); 0 = stop at once
                                    * (default) */
    int32_t  max_connections;      /* open HTTP connections served; past it 503
                                    * (docs/SECURITY.md "Connections"); default 1024 */
    int32_t  timeout_s;            /* a connection idle this long (no byte read or
                                    * written, not waiting on the engine) is closed;
                                    * default 60 */
    int32_t  max_connections_per_ip; /* connections one address holds; past it 503;
                                    * 0 (default) = no per-address cap */
    int32_t  header_timeout_s;     /* a request's headers complete within this many
                                    * seconds or the connection is cut; 0 = no
                                    * deadline; default 30 */
    size_t   stream_buffer;        /* bytes a stream may hold for a client that does
                                    * not read before it is cut; default 2 MiB */
    enum st_cfg_priority_order priority_order;
    bool     webui;                /* the dashboard at / (docs/DASHBOARD.md); default on */
    bool     slots;                /* GET /slots (llama-server's --slots); default on;
                                    * off: 501 as llama-server's --no-slots */

    /* engines (server-level defaults of every model) */
    enum st_cfg_backend backend;   /* default AUTO */
    struct st_config_gpus gpus;    /* default none */
    int32_t  parallel;             /* slots per engine with --batch; default 4 */
    bool     batch;                /* slots + lines; without it one request per engine */
    bool     batch_implied;        /* batch set by resolve: parallel > 1 given and batch
                                    * not (llama-server batches by default) */
    int64_t  ctx_size;             /* -c: the slots' context together (each slot gets
                                    * ctx_size / its slots); 0 (default): ST_CFG_SLOT_CTX
                                    * tokens per slot */
    enum st_rope_scaling rope_scaling;  /* --rope-scaling; default MODEL (the file's) */
    double   rope_scale;           /* --rope-scale factor (> 0); 0 = the file's (default) */
    int64_t  yarn_orig_ctx;        /* --yarn-orig-ctx; 0 = the file's (default) */
    enum st_kv_type cache_type_k;  /* --cache-type-k / -ctk: every model's K cache; f16 */
    enum st_kv_type cache_type_v;  /* --cache-type-v / -ctv; f16 (default) */
    bool     kv_unified;           /* --kv-unified / -kvu: with --batch the slots share one KV
                                    * pool of ctx_size tokens, any slot up to all of it (CPU);
                                    * default off: each slot its own ctx_size / parallel */
    int32_t  ubatch;               /* read chunk, tokens; default 512 */
    int32_t  threads;              /* CPU threads; 0 = every core (default) */
    bool     batch_mtp;            /* MTP drafting in batched steps */
    int32_t  mtp_draft;            /* draft tokens per step, 1..4; default 1 */
    enum st_cfg_spec spec;         /* --spec: other draft sources; default NONE */
    int32_t  spec_ngram_min;       /* n-gram lengths matched, 1..8, min <= max; */
    int32_t  spec_ngram_max;       /*   defaults 2 and 4 */
    int32_t  spec_draft;           /* n-gram drafts per slot and step at most, 1..16; default 8 */
    int32_t  ctx_checkpoints;      /* recurrent models: state checkpoints per slot, 0..64;
                                    * default 3 */

    /* scheduler (routing.scheduler in the file) */
    enum st_cfg_scheduler scheduler;   /* default serial */
    double   aging_divisor_s;      /* seconds of waiting per point; 0 = no aging; default 60 */
    int32_t  swap_affinity_bonus;  /* 0..99; default 10 */
    int64_t  give_way_tokens;      /* read boundary for give-way checks; default 16384 */
    int32_t  yields_max;           /* give-ways per request at most; default 4 */

    /* the simulated engine (sim: in the file) */
    double   sim_prompt_tps;       /* prompt tokens read per second per engine; default 5000 */
    double   sim_decode_tps;       /* tokens per second per decoding slot; default 50 */
    double   sim_load_seconds;     /* time to "load"; default 0 */
    int32_t  sim_tokens;           /* default completion length, tokens; default 16 */
    char    *sim_reply;            /* owned; the sim generates exactly this text; NULL = tokN */

    /* chat replies (docs/API.md "Tool calls and reasoning") */
    enum st_cfg_reasoning reasoning_format;   /* default deepseek */
    int32_t  reasoning_budget;     /* chat: thinking budget when the request sends none
                                    * (docs/API.md "Thinking budget"); -1 = none (default) */
    int32_t  n_predict;            /* tokens a reply may have when the request sets no
                                    * max_tokens / n_predict (llama-server's -n); -1 = no cap */
    double   temp;                 /* temperature of a request that sends none (llama-server's
                                    * --temp); default 0.8 */
    int64_t  seed;                 /* seed of a request that sends none (llama-server's
                                    * --seed); -1 = a random one per request (default) */

    /* KV events for llm-d's indexer (docs/KV-EVENTS.md) */
    char    *kv_events;            /* owned; ZeroMQ endpoint (host "*" binds, tcp://HOST:PORT
                                    * connects); NULL = off (default) */
    char    *kv_events_host;       /* owned; the pod address in the topic; NULL = $POD_IP, else
                                    * --host unless a wildcard, else this machine's first
                                    * IPv4 */
    int32_t  kv_block_size;        /* tokens per advertised KV block, 1..4096; default 16 */
    /* chat templates (docs/TEMPLATES.md) */
    char    *chat_template;        /* owned; --chat-template: a built-in name or Jinja; NULL */
    char    *chat_template_file;   /* owned; --chat-template-file; NULL */
    bool     jinja;                /* --jinja / --no-jinja; default true */
    bool     prefill_assistant;    /* chat: a last assistant message is continued
                                    * (llama-server's --prefill-assistant); default true */

    /* logging */
    enum st_log_format log_format; /* default text */
    enum st_log_level  log_level;  /* default info */

    /* lists */
    struct st_config_model *models;    /* owned; n_models (>= 1 after resolve) */
    size_t                  n_models;
    struct st_config_key   *keys;      /* owned; the file's, then the flags' */
    size_t                  n_keys;

    /* where things came from */
    char    *config_path;          /* owned; --config, or NULL */
    char    *model_path;           /* owned; -m, or NULL */
    char    *model_alias;          /* owned; --alias (comma-separated names), or NULL */
    char    *model_tags;           /* owned; --tags (comma-separated), or NULL */
    bool     given[ST_OPT_COUNT];  /* given on the command line */
    int32_t  line[ST_OPT_COUNT];   /* line of the file that set it; 0 = not from the file */

    /* Things worth a warning (owned strings), logged by main once the log
     * format is set: e.g. --model replacing the file's models. */
    char   **warnings;
    size_t   n_warnings;
};

/* Fill 'c' with the defaults above (nothing allocated but host). */
void st_config_init(struct st_config *c);
/* Free everything 'c' owns; leaves it zeroed. Safe on a zeroed struct. */
void st_config_fini(struct st_config *c);

static inline bool st_config_given(const struct st_config *c, enum st_opt o)
{
    return c->given[o];
}

/* Apply a YAML document onto 'c': only the keys present change; models and
 * api_keys are appended. 'name' (borrowed) names the source in messages,
 * usually the file path. On failure 'c' may hold part of the file: call
 * st_config_fini(). ST_ERR_BAD_CONFIG with a message naming name:line and
 * the key; ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_config_load_buffer(struct st_config *c, const char *name, const char *data,
                                     size_t len, struct st_err *err);

/* Read 'path' and st_config_load_buffer() it. ST_ERR_IO when unreadable. */
ST_MUST_CHECK
enum st_status st_config_load_file(struct st_config *c, const char *path, struct st_err *err);

/* Final checks and inheritance: -m replaces the file's models; no model at
 * all gives the built-in default; each model inherits backend, parallel,
 * ctx_size and gpus (a flag given on the command line always wins); names
 * and aliases must be unique, api keys must have a key, a cuda backend
 * needs a CUDA build. ST_ERR_BAD_CONFIG with a message naming where the
 * setting came from. */
ST_MUST_CHECK
enum st_status st_config_resolve(struct st_config *c, struct st_err *err);

/* A slot's context when no ctx_size is set. */
#define ST_CFG_SLOT_CTX 4096
/* The least context a slot may be left with when ctx_size is shared out. */
#define ST_CFG_SLOT_CTX_MIN 16

/* The context tokens of each of model m's slots (resolved config): its
 * ctx_size shared by its slots (1 without --batch, else parallel), or
 * ST_CFG_SLOT_CTX when none is set. */
int64_t st_config_slot_ctx(const struct st_config *c, const struct st_config_model *m);

/* True when this build has the CUDA backend. */
bool st_config_cuda_built(void);

/* ---- the command line ---------------------------------------------- */

enum st_cli_command {
    ST_CLI_HELP,         /* strata --help */
    ST_CLI_VERSION,      /* strata --version */
    ST_CLI_SERVE,
    ST_CLI_MAKE_MODEL,
    ST_CLI_INSPECT,
    ST_CLI_RUN,
    ST_CLI_BENCH,
};

struct st_cli {
    enum st_cli_command command;
    const char *name;    /* the command as typed ("serve"); static storage */
    /* The command's own arguments: for serve the flags after "serve"
     * (argv[0] is the first flag); for the others argv[0] is the command
     * name, like a program's argv. Borrowed from main's argv. */
    int    argc;
    char **argv;
};

/* Find the command in main's argv. ST_ERR_BAD_CONFIG for a missing or
 * unknown command. */
ST_MUST_CHECK
enum st_status st_cli_parse_command(int argc, char **argv, struct st_cli *out,
                                    struct st_err *err);

/* Apply serve's flags (argv[0] is the first flag) onto 'c' and record each
 * in c->given. -h/--help stops the parse and sets *help. ST_ERR_BAD_CONFIG
 * for an unknown flag or a bad value, with a message naming the flag. */
ST_MUST_CHECK
enum st_status st_cli_apply(struct st_config *c, int argc, char **argv, bool *help,
                            struct st_err *err);

/* The whole serve chain: defaults, flags (checked), the --config file,
 * flags again, st_config_resolve(). 'c' is initialised here; on failure it
 * is left finalised (nothing to free). *help: the user asked for help and
 * nothing else was done (c holds defaults; finalise it). */
ST_MUST_CHECK
enum st_status st_config_from_args(struct st_config *c, int argc, char **argv, bool *help,
                                   struct st_err *err);

/* Help texts, appended to 'out' (which the caller owns). Every flag of
 * serve with its default. */
ST_MUST_CHECK enum st_status st_cli_help(struct st_buf *out);
ST_MUST_CHECK enum st_status st_cli_serve_help(struct st_buf *out);

#endif /* STRATA_CONFIG_H */
