/* options.c -- the table of settings (flag, YAML key, kind, range, field)
 * and the value parsers both the command line and the YAML loader use.
 *
 * Values arrive as text (argv or a YAML scalar). Integers are decimal with
 * an optional sign; sizes accept binary suffixes (k, m, g, t, with an
 * optional "b", "ib" or "iB": 8m = 8MiB = 8388608 bytes); booleans are
 * true/false/yes/no/on/off; GPU lists are comma-separated ids. A bad value
 * never touches the field.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define OFF(f) offsetof(struct st_config, f)
#define MOFF(f) offsetof(struct st_config_model, f)
#define KOFF(f) offsetof(struct st_config_key, f)
#define NO_HAS (-1)

static const char *const backend_choices[] = { "auto", "sim", "cpu", "cuda", NULL };
static const char *const sched_choices[] = { "serial", "fifo", NULL };
static const char *const order_choices[] = { "high-first", "low-first", NULL };
static const char *const logfmt_choices[] = { "text", "json", NULL };
static const char *const reasoning_choices[] = { "deepseek", "none", NULL };
static const char *const loglevel_choices[] = { "debug", "info", "warn", "error", NULL };
static const char *const spec_choices[] = { "none", "ngram", NULL };

/* Enums are stored through the table as int: make sure that is their size. */
_Static_assert(sizeof(enum st_cfg_backend) == sizeof(int), "enum size");
_Static_assert(sizeof(enum st_log_level) == sizeof(int), "enum size");
_Static_assert(sizeof(enum st_cfg_reasoning) == sizeof(int), "enum size");
_Static_assert(sizeof(enum st_cfg_spec) == sizeof(int), "enum size");
_Static_assert(sizeof(enum st_rope_scaling) == sizeof(int), "enum size");
_Static_assert(sizeof(enum st_kv_type) == sizeof(int), "enum size");

#define I32(lo, hi) .imin = (lo), .imax = (hi)

const struct st_cfg_def st_cfg_opts[ST_OPT_COUNT] = {
    [ST_OPT_MODEL] = { ST_OPT_MODEL, "--model", "-m", NULL, ST_CFG_STRING, OFF(model_path),
        NO_HAS, .metavar = "PATH",
        .help = "GGUF model to serve (replaces the config's models:); none: a tiny built-in one" },
    [ST_OPT_ALIAS] = { ST_OPT_ALIAS, "--alias", "-a", NULL, ST_CFG_STRING, OFF(model_alias),
        NO_HAS, .metavar = "NAME",
        .help = "model id clients send as \"model\"; unset: the file name less .gguf, or "
                "\"default\"; a comma-separated list: every one is an id" },
    [ST_OPT_TAGS] = { ST_OPT_TAGS, "--tags", NULL, NULL, ST_CFG_STRING, OFF(model_tags),
        NO_HAS, .metavar = "LIST",
        .help = "labels of the --model model, comma-separated: /v1/models shows them as \"tags\"" },
    [ST_OPT_CONFIG] = { ST_OPT_CONFIG, "--config", NULL, NULL, ST_CFG_STRING, OFF(config_path),
        NO_HAS, .metavar = "FILE", .help = "YAML config file; flags given here override it" },
    [ST_OPT_HOST] = { ST_OPT_HOST, "--host", NULL, "host", ST_CFG_STRING, OFF(host), NO_HAS,
        .metavar = "HOST", .help = "address to bind" },
    [ST_OPT_PORT] = { ST_OPT_PORT, "--port", NULL, "port", ST_CFG_INT32, OFF(port), NO_HAS,
        I32(0, 65535), .metavar = "N", .help = "port to listen on; 0 picks a free one (logged)" },
    [ST_OPT_API_KEY] = { ST_OPT_API_KEY, "--api-key", NULL, NULL, ST_CFG_KEY, 0, NO_HAS,
        .metavar = "KEY",
        .help = "require this bearer key (repeatable; adds to the config's api_keys:)" },
    [ST_OPT_BODY_LIMIT] = { ST_OPT_BODY_LIMIT, "--body-limit", NULL, "body_limit", ST_CFG_SIZE,
        OFF(body_limit), NO_HAS, .imin = 1, .imax = INT64_C(16) << 30, .metavar = "BYTES",
        .help = "largest request body (k, m, g suffixes); larger gets 413" },
    [ST_OPT_MAX_QUEUE] = { ST_OPT_MAX_QUEUE, "--max-queue", NULL, "max_queue", ST_CFG_INT32,
        OFF(max_queue), NO_HAS, I32(0, INT32_MAX), .metavar = "N",
        .help = "waiting requests at most, 0 = unlimited; past it 429 (lowest score shed)" },
    [ST_OPT_HTTP_THREADS] = { ST_OPT_HTTP_THREADS, "--http-threads", NULL, "http_threads",
        ST_CFG_INT32, OFF(http_threads), NO_HAS, I32(1, 256), .metavar = "N",
        .help = "libmicrohttpd threads" },
    [ST_OPT_CORS_ORIGINS] = { ST_OPT_CORS_ORIGINS, "--cors-origins", "--cors-origin",
        "cors_origins", ST_CFG_STRING, OFF(cors_origins), NO_HAS, .metavar = "LIST",
        .help = "browser origins allowed (CORS), comma-separated or repeated; localhost = this "
                "machine's pages; * = any; none = no CORS headers" },
    [ST_OPT_ALLOWED_HOSTS] = { ST_OPT_ALLOWED_HOSTS, "--allowed-hosts", NULL, "allowed_hosts",
        ST_CFG_STRING, OFF(allowed_hosts), NO_HAS, .metavar = "LIST",
        .help = "Host header names served besides localhost, IP literals and --host "
                "(against DNS rebinding), comma-separated; * = any" },
    [ST_OPT_METRICS_KEY] = { ST_OPT_METRICS_KEY, "--metrics-key", NULL, "metrics_key",
        ST_CFG_STRING, OFF(metrics_key), NO_HAS, .metavar = "KEY",
        .help = "with API keys set, this bearer key also reads /metrics (a scraper's own)" },
    [ST_OPT_SLOT_SAVE_PATH] = { ST_OPT_SLOT_SAVE_PATH, "--slot-save-path", NULL,
        "slot_save_path", ST_CFG_STRING, OFF(slot_save_path), NO_HAS, .metavar = "DIR",
        .help = "POST /slots/{id}?action=save|restore files live in DIR; unset = refused" },
    [ST_OPT_SSE_KEEPALIVE] = { ST_OPT_SSE_KEEPALIVE, "--sse-keepalive", NULL, "sse_keepalive",
        ST_CFG_INT32, OFF(sse_keepalive_s), NO_HAS, I32(0, 3600), .metavar = "S",
        .help = "stream: send headers and an SSE comment after S idle seconds; 0 = off" },
    [ST_OPT_RESPONSES_STORE_MB] = { ST_OPT_RESPONSES_STORE_MB, "--responses-store-mb", NULL,
        "responses_store_mb", ST_CFG_INT32, OFF(responses_store_mb), NO_HAS, I32(0, 1048576),
        .metavar = "N",
        .help = "/v1/responses: MiB of stored responses (GET, previous_response_id), least "
                "recently used evicted; 0 = store none" },
    [ST_OPT_SHUTDOWN_TIMEOUT] = { ST_OPT_SHUTDOWN_TIMEOUT, "--shutdown-timeout", NULL,
        "shutdown_timeout", ST_CFG_INT32, OFF(shutdown_timeout_s), NO_HAS, I32(0, 86400),
        .metavar = "S",
        .help = "on SIGINT/SIGTERM refuse new requests and let those in progress finish for up "
                "to S seconds; 0 = stop at once" },
    [ST_OPT_MAX_CONNECTIONS] = { ST_OPT_MAX_CONNECTIONS, "--max-connections", NULL,
        "max_connections", ST_CFG_INT32, OFF(max_connections), NO_HAS, I32(1, 1000000),
        .metavar = "N",
        .help = "open connections served; past it 503 too_many_connections (/health and "
                "/metrics keep a reserve)" },
    [ST_OPT_MAX_CONNECTIONS_PER_IP] = { ST_OPT_MAX_CONNECTIONS_PER_IP,
        "--max-connections-per-ip", NULL, "max_connections_per_ip", ST_CFG_INT32,
        OFF(max_connections_per_ip), NO_HAS, I32(0, 1000000), .metavar = "N",
        .help = "open connections one client address is served; past it 503 "
                "too_many_connections, as --max-connections; 0 = no per-address cap" },
    [ST_OPT_TIMEOUT] = { ST_OPT_TIMEOUT, "--timeout", "-to", "timeout", ST_CFG_INT32,
        OFF(timeout_s), NO_HAS, I32(1, 86400), .metavar = "S",
        .help = "close a connection idle for S seconds (a client sending or reading nothing; "
                "time waiting on the engine does not count)" },
    [ST_OPT_HEADER_TIMEOUT] = { ST_OPT_HEADER_TIMEOUT, "--header-timeout", NULL,
        "header_timeout", ST_CFG_INT32, OFF(header_timeout_s), NO_HAS, I32(0, 86400),
        .metavar = "S",
        .help = "cut a connection whose request headers are not complete S seconds after it "
                "opened (or after its previous request), however slowly they trickle; 0 = off" },
    [ST_OPT_STREAM_BUFFER] = { ST_OPT_STREAM_BUFFER, "--stream-buffer", NULL, "stream_buffer",
        ST_CFG_SIZE, OFF(stream_buffer), NO_HAS, .imin = 65536, .imax = INT64_C(1) << 30,
        .metavar = "BYTES",
        .help = "stream output held for a client that does not read; past it the request is "
                "cancelled (its slot freed)" },
    [ST_OPT_PRIORITY_ORDER] = { ST_OPT_PRIORITY_ORDER, "--priority-order", NULL,
        "priority_order", ST_CFG_CHOICE, OFF(priority_order), NO_HAS,
        .choices = order_choices,
        .help = "high-first: a higher priority number goes first; low-first: vLLM's convention" },
    [ST_OPT_WEBUI] = { ST_OPT_WEBUI, "--webui", NULL, "webui", ST_CFG_FLAG, OFF(webui), NO_HAS,
        .help = "serve the dashboard at / (docs/DASHBOARD.md; --no-webui: off, / answers 404)" },
    [ST_OPT_SLOTS] = { ST_OPT_SLOTS, "--slots", NULL, "slots", ST_CFG_FLAG, OFF(slots), NO_HAS,
        .help = "serve GET /slots (--no-slots: 501, as llama-server's; the slot actions stay)" },
    [ST_OPT_BACKEND] = { ST_OPT_BACKEND, "--backend", NULL, "backend", ST_CFG_CHOICE,
        OFF(backend), NO_HAS, .choices = backend_choices,
        .help = "engine backend; auto = cpu, or sim for a config file's model without a path" },
    [ST_OPT_GPUS] = { ST_OPT_GPUS, "--gpus", NULL, "gpus", ST_CFG_GPUS, OFF(gpus), NO_HAS,
        .metavar = "LIST",
        .help = "device ids, comma-separated: one engine each (sim: one sim engine per entry)" },
    [ST_OPT_PARALLEL] = { ST_OPT_PARALLEL, "--parallel", "-np", "parallel", ST_CFG_INT32,
        OFF(parallel), NO_HAS, I32(1, 1024), .metavar = "N",
        .help = "slots per engine with --batch (without --batch: 1)" },
    [ST_OPT_BATCH] = { ST_OPT_BATCH, "--batch", NULL, "batch", ST_CFG_FLAG, OFF(batch), NO_HAS,
        .help = "batch slots in every step, with the control lines and give-way (--no-batch: off)" },
    [ST_OPT_CTX_SIZE] = { ST_OPT_CTX_SIZE, "--ctx-size", "-c", "ctx_size", ST_CFG_INT64,
        OFF(ctx_size), NO_HAS, .imin = 1, .imax = INT32_MAX, .metavar = "N",
        .help = "context tokens of all the slots together, shared evenly (as llama-server's "
                "-c)", .zero = "4096 per slot" },
    [ST_OPT_ROPE_SCALING] = { ST_OPT_ROPE_SCALING, "--rope-scaling", NULL, "rope_scaling",
        ST_CFG_CHOICE, OFF(rope_scaling), NO_HAS, .choices = st_rope_scaling_names,
        .help = "rope scaling past the trained context: none, linear, yarn; model = the GGUF's" },
    [ST_OPT_ROPE_SCALE] = { ST_OPT_ROPE_SCALE, "--rope-scale", NULL, "rope_scale", ST_CFG_DOUBLE,
        OFF(rope_scale), NO_HAS, .dmin = 0, .dmin_excl = true, .metavar = "N",
        .help = "rope scaling factor: the context grows N times (Qwen3 with yarn: 4)",
        .zero = "model" },
    [ST_OPT_YARN_ORIG_CTX] = { ST_OPT_YARN_ORIG_CTX, "--yarn-orig-ctx", NULL, "yarn_orig_ctx",
        ST_CFG_INT64, OFF(yarn_orig_ctx), NO_HAS, .imin = 1, .imax = INT32_MAX, .metavar = "N",
        .help = "yarn: the context the model was trained on (Qwen3: 32768)", .zero = "model" },
    [ST_OPT_CACHE_TYPE_K] = { ST_OPT_CACHE_TYPE_K, "--cache-type-k", "-ctk", "cache_type_k",
        ST_CFG_CHOICE, OFF(cache_type_k), NO_HAS, .choices = st_kv_type_names,
        .help = "KV cache type of the keys (as llama-server's): f16, q8_0 at about half the "
                "memory (head dim a multiple of 32), f32 (twice f16's, cpu backend) or bf16 "
                "(cpu backend); docs/ENGINE.md" },
    [ST_OPT_CACHE_TYPE_V] = { ST_OPT_CACHE_TYPE_V, "--cache-type-v", "-ctv", "cache_type_v",
        ST_CFG_CHOICE, OFF(cache_type_v), NO_HAS, .choices = st_kv_type_names,
        .help = "KV cache type of the values: f16, q8_0, f32 or bf16, as --cache-type-k" },
    [ST_OPT_KV_UNIFIED] = { ST_OPT_KV_UNIFIED, "--kv-unified", "-kvu", "kv_unified",
        ST_CFG_FLAG, OFF(kv_unified), NO_HAS,
        .help = "with --batch: one KV pool of -c tokens shared by the slots, any slot up to "
                "all of it, memory committed as slots grow (cpu backend; --no-kv-unified: "
                "each slot -c / -np)" },
    [ST_OPT_UBATCH] = { ST_OPT_UBATCH, "--ubatch", NULL, "ubatch", ST_CFG_INT32, OFF(ubatch),
        NO_HAS, I32(1, 65536), .metavar = "N", .help = "prompt tokens read per step (one chunk)" },
    [ST_OPT_THREADS] = { ST_OPT_THREADS, "--threads", "-t", "threads", ST_CFG_INT32,
        OFF(threads), NO_HAS, I32(0, 1024), .metavar = "N",
        .help = "CPU threads; 0 = every core" },
    [ST_OPT_BATCH_MTP] = { ST_OPT_BATCH_MTP, "--batch-mtp", NULL, "batch_mtp", ST_CFG_FLAG,
        OFF(batch_mtp), NO_HAS, .help = "multi-token-prediction drafts in batched steps" },
    [ST_OPT_MTP_DRAFT] = { ST_OPT_MTP_DRAFT, "--mtp-draft", NULL, "mtp_draft", ST_CFG_INT32,
        OFF(mtp_draft), NO_HAS, I32(1, 4), .metavar = "N", .help = "MTP draft tokens per step" },
    [ST_OPT_SPEC] = { ST_OPT_SPEC, "--spec", NULL, "spec", ST_CFG_CHOICE, OFF(spec), NO_HAS,
        .choices = spec_choices,
        .help = "ngram: drafts by prompt lookup in each slot's own text (first; then MTP)" },
    [ST_OPT_SPEC_NGRAM_MIN] = { ST_OPT_SPEC_NGRAM_MIN, "--spec-ngram-min", NULL,
        "spec_ngram_min", ST_CFG_INT32, OFF(spec_ngram_min), NO_HAS, I32(1, 8), .metavar = "N",
        .help = "shortest n-gram matched (1..8)" },
    [ST_OPT_SPEC_NGRAM_MAX] = { ST_OPT_SPEC_NGRAM_MAX, "--spec-ngram-max", NULL,
        "spec_ngram_max", ST_CFG_INT32, OFF(spec_ngram_max), NO_HAS, I32(1, 8), .metavar = "N",
        .help = "longest n-gram matched, tried first (1..8)" },
    [ST_OPT_SPEC_DRAFT] = { ST_OPT_SPEC_DRAFT, "--spec-draft", NULL, "spec_draft",
        ST_CFG_INT32, OFF(spec_draft), NO_HAS, I32(1, 16), .metavar = "N",
        .help = "n-gram draft tokens per slot and step at most (1..16)" },
    [ST_OPT_CTX_CHECKPOINTS] = { ST_OPT_CTX_CHECKPOINTS, "--ctx-checkpoints", "-ctxcp",
        "ctx_checkpoints", ST_CFG_INT32, OFF(ctx_checkpoints), NO_HAS, I32(0, 64),
        .metavar = "N",
        .help = "recurrent models: state checkpoints kept per slot for prefix reuse (0..64)" },
    [ST_OPT_SCHEDULER] = { ST_OPT_SCHEDULER, "--scheduler", NULL, "routing.scheduler.use",
        ST_CFG_CHOICE, OFF(scheduler), NO_HAS, .choices = sched_choices,
        .help = "serial: priority + affinity + aging; fifo: priority then arrival" },
    [ST_OPT_AGING_DIVISOR] = { ST_OPT_AGING_DIVISOR, "--aging-divisor", NULL,
        "routing.scheduler.settings.serial.agingDivisor", ST_CFG_DOUBLE, OFF(aging_divisor_s),
        NO_HAS, .dmin = 0, .metavar = "S",
        .help = "seconds of waiting per priority point; 0 = no aging" },
    [ST_OPT_SWAP_AFFINITY_BONUS] = { ST_OPT_SWAP_AFFINITY_BONUS, "--swap-affinity-bonus", NULL,
        "routing.scheduler.settings.serial.swapAffinityBonus", ST_CFG_INT32,
        OFF(swap_affinity_bonus), NO_HAS, I32(0, 99), .metavar = "N",
        .help = "score bonus for a request needing no model swap (0..99)" },
    [ST_OPT_GIVE_WAY_TOKENS] = { ST_OPT_GIVE_WAY_TOKENS, "--give-way-tokens", NULL,
        "give_way_tokens", ST_CFG_INT64, OFF(give_way_tokens), NO_HAS,
        .imin = 1, .imax = INT64_MAX, .metavar = "N",
        .help = "a long read checks whether to give way every N tokens" },
    [ST_OPT_YIELDS_MAX] = { ST_OPT_YIELDS_MAX, "--yields-max", NULL, "yields_max",
        ST_CFG_INT32, OFF(yields_max), NO_HAS, I32(0, INT32_MAX), .metavar = "N",
        .help = "give-ways per request at most" },
    [ST_OPT_SIM_PROMPT_TPS] = { ST_OPT_SIM_PROMPT_TPS, "--sim-prompt-tps", NULL,
        "sim.prompt_tps", ST_CFG_DOUBLE, OFF(sim_prompt_tps), NO_HAS, .dmin = 0,
        .dmin_excl = true, .metavar = "N",
        .help = "sim: prompt tokens read per second per engine" },
    [ST_OPT_SIM_DECODE_TPS] = { ST_OPT_SIM_DECODE_TPS, "--sim-decode-tps", NULL,
        "sim.decode_tps", ST_CFG_DOUBLE, OFF(sim_decode_tps), NO_HAS, .dmin = 0,
        .dmin_excl = true, .metavar = "N", .help = "sim: tokens per second per decoding slot" },
    [ST_OPT_SIM_LOAD_SECONDS] = { ST_OPT_SIM_LOAD_SECONDS, "--sim-load-seconds", NULL,
        "sim.load_seconds", ST_CFG_DOUBLE, OFF(sim_load_seconds), NO_HAS, .dmin = 0,
        .metavar = "S", .help = "sim: seconds to \"load\" the model" },
    [ST_OPT_SIM_TOKENS] = { ST_OPT_SIM_TOKENS, "--sim-tokens", NULL, "sim.tokens",
        ST_CFG_INT32, OFF(sim_tokens), NO_HAS, I32(1, INT32_MAX), .metavar = "N",
        .help = "sim: completion length when the request sets no max_tokens" },
    [ST_OPT_SIM_REPLY] = { ST_OPT_SIM_REPLY, "--sim-reply", NULL, "sim.reply", ST_CFG_STRING,
        OFF(sim_reply), NO_HAS, .metavar = "TEXT",
        .help = "sim: generate exactly TEXT (in pieces of 1-7 bytes), then end; docs/SIM.md" },
    [ST_OPT_REASONING_FORMAT] = { ST_OPT_REASONING_FORMAT, "--reasoning-format", NULL,
        "reasoning_format", ST_CFG_CHOICE, OFF(reasoning_format), NO_HAS,
        .choices = reasoning_choices,
        .help = "chat: <think> to reasoning_content (deepseek) or left in content (none)" },
    [ST_OPT_REASONING_BUDGET] = { ST_OPT_REASONING_BUDGET, "--reasoning-budget", NULL,
        "reasoning_budget", ST_CFG_INT32, OFF(reasoning_budget), NO_HAS, I32(-1, INT32_MAX),
        .metavar = "N", .help = "chat: thinking budget in tokens when a request sends none "
        "(-1 = none, 0 = no thinking)" },
    [ST_OPT_N_PREDICT] = { ST_OPT_N_PREDICT, "--n-predict", "-n", "n_predict", ST_CFG_INT32,
        OFF(n_predict), NO_HAS, I32(-1, INT32_MAX), .metavar = "N",
        .help = "tokens a reply may have when the request sets no max_tokens / n_predict "
        "(-1 = until a stop or the context)" },
    [ST_OPT_TEMP] = { ST_OPT_TEMP, "--temp", NULL, "temp", ST_CFG_DOUBLE, OFF(temp), NO_HAS,
        .dmin = 0, .metavar = "T",
        .help = "temperature of a request that sends none (0 = greedy)" },
    [ST_OPT_SEED] = { ST_OPT_SEED, "--seed", "-s", "seed", ST_CFG_INT64, OFF(seed), NO_HAS,
        .imin = -1, .imax = UINT32_MAX, .metavar = "N",
        .help = "sampling seed of a request that sends none (-1 = a random one per request)" },
    [ST_OPT_KV_EVENTS] = { ST_OPT_KV_EVENTS, "--kv-events", NULL, "kv_events", ST_CFG_STRING,
        OFF(kv_events), NO_HAS, .metavar = "URL",
        .help = "publish KV-cache events for llm-d's indexer over ZeroMQ (tcp://*:5557 binds, "
        "tcp://HOST:PORT connects); docs/KV-EVENTS.md" },
    [ST_OPT_KV_EVENTS_HOST] = { ST_OPT_KV_EVENTS_HOST, "--kv-events-host", NULL,
        "kv_events_host", ST_CFG_STRING, OFF(kv_events_host), NO_HAS, .metavar = "ADDR",
        .help = "pod address in the events' topic kv@ADDR:PORT@MODEL (default: $POD_IP, else "
        "--host, else the first IPv4 address)" },
    [ST_OPT_KV_BLOCK_SIZE] = { ST_OPT_KV_BLOCK_SIZE, "--kv-block-size", NULL, "kv_block_size",
        ST_CFG_INT32, OFF(kv_block_size), NO_HAS, I32(1, 4096), .metavar = "N",
        .help = "tokens per KV block in the KV events and /metrics (default 16)" },
    [ST_OPT_LOG_FORMAT] = { ST_OPT_LOG_FORMAT, "--log-format", NULL, "log_format",
        ST_CFG_CHOICE, OFF(log_format), NO_HAS, .choices = logfmt_choices,
        .help = "log lines as text or JSON" },
    [ST_OPT_LOG_LEVEL] = { ST_OPT_LOG_LEVEL, "--log-level", NULL, "log_level", ST_CFG_CHOICE,
        OFF(log_level), NO_HAS, .choices = loglevel_choices, .help = "least important level logged" },
    [ST_OPT_STATE_DIR] = { ST_OPT_STATE_DIR, "--state-dir", NULL, "state_dir", ST_CFG_STRING,
        OFF(state_dir), NO_HAS, .metavar = "DIR",
        .help = "keep stored responses and the activity log in DIR/strata.db (SQLite) across "
                "restarts; unset = in memory" },
    [ST_OPT_STATE_MAX_ROWS] = { ST_OPT_STATE_MAX_ROWS, "--state-max-rows", NULL,
        "state_max_rows", ST_CFG_INT32, OFF(state_max_rows), NO_HAS, I32(1, INT32_MAX),
        .metavar = "N",
        .help = "with --state-dir: stored responses, and activity records, kept at most each "
                "(the oldest pruned)" },
    [ST_OPT_CHAT_TEMPLATE] = { ST_OPT_CHAT_TEMPLATE, "--chat-template", NULL, "chat_template",
        ST_CFG_STRING, OFF(chat_template), NO_HAS, .metavar = "NAME|JINJA",
        .help = "chat: a built-in template (chatml, qwen3, llama3.1, ...) or Jinja source for "
        "every model; docs/TEMPLATES.md" },
    [ST_OPT_CHAT_TEMPLATE_FILE] = { ST_OPT_CHAT_TEMPLATE_FILE, "--chat-template-file", NULL,
        "chat_template_file", ST_CFG_STRING, OFF(chat_template_file), NO_HAS, .metavar = "FILE",
        .help = "chat: a Jinja template file for every model (over --chat-template)" },
    [ST_OPT_JINJA] = { ST_OPT_JINJA, "--jinja", NULL, "jinja", ST_CFG_FLAG, OFF(jinja), NO_HAS,
        .help = "chat: run templates in the Jinja interpreter (default); --no-jinja: built-in "
        "renderers only, ChatML for the rest" },
    [ST_OPT_PREFILL_ASSISTANT] = { ST_OPT_PREFILL_ASSISTANT, "--prefill-assistant", NULL,
        "prefill_assistant", ST_CFG_FLAG, OFF(prefill_assistant), NO_HAS,
        .help = "chat: a last assistant message is continued, as llama-server's (default); "
        "--no-prefill-assistant: it is history and a new turn follows, as OpenAI's" },
};

const struct st_cfg_def st_cfg_model_fields[] = {
    { -1, NULL, NULL, "name", ST_CFG_STRING, MOFF(name), NO_HAS, .help = "model id" },
    { -1, NULL, NULL, "path", ST_CFG_STRING, MOFF(path), NO_HAS, .help = "GGUF file" },
    { -1, NULL, NULL, "aliases", ST_CFG_ALIASES, MOFF(aliases), NO_HAS, .help = "other ids" },
    { -1, NULL, NULL, "tags", ST_CFG_ALIASES, MOFF(tags), NO_HAS, .help = "labels" },
    { -1, NULL, NULL, "backend", ST_CFG_CHOICE, MOFF(backend), NO_HAS,
      .choices = backend_choices },
    { -1, NULL, NULL, "priority", ST_CFG_INT32, MOFF(priority), NO_HAS, I32(INT32_MIN, INT32_MAX) },
    { -1, NULL, NULL, "parallel", ST_CFG_INT32, MOFF(parallel), NO_HAS, I32(1, 1024) },
    { -1, NULL, NULL, "ctx_size", ST_CFG_INT64, MOFF(ctx_size), NO_HAS, .imin = 1,
      .imax = INT32_MAX },
    { -1, NULL, NULL, "rope_scaling", ST_CFG_CHOICE, MOFF(rope_scaling), NO_HAS,
      .choices = st_rope_scaling_names },
    { -1, NULL, NULL, "rope_scale", ST_CFG_DOUBLE, MOFF(rope_scale), NO_HAS, .dmin = 0,
      .dmin_excl = true },
    { -1, NULL, NULL, "yarn_orig_ctx", ST_CFG_INT64, MOFF(yarn_orig_ctx), NO_HAS, .imin = 1,
      .imax = INT32_MAX },
    { -1, NULL, NULL, "gpus", ST_CFG_GPUS, MOFF(gpus), NO_HAS, .help = "devices" },
    { -1, NULL, NULL, "ttl", ST_CFG_DOUBLE, MOFF(ttl_s), NO_HAS, .dmin = 0 },
    { -1, NULL, NULL, "preload", ST_CFG_FLAG, MOFF(preload), NO_HAS, .help = "load at start" },
};
const size_t st_cfg_n_model_fields = ST_ARRAY_LEN(st_cfg_model_fields);

const struct st_cfg_def st_cfg_key_fields[] = {
    { -1, NULL, NULL, "name", ST_CFG_STRING, KOFF(name), NO_HAS, .help = "shown in logs" },
    { -1, NULL, NULL, "key", ST_CFG_STRING, KOFF(key), NO_HAS, .help = "the bearer token" },
    { -1, NULL, NULL, "default_priority", ST_CFG_INT32, KOFF(default_priority),
      KOFF(has_default_priority), I32(INT32_MIN, INT32_MAX) },
    { -1, NULL, NULL, "max_priority", ST_CFG_INT32, KOFF(max_priority), KOFF(has_max_priority),
      I32(INT32_MIN, INT32_MAX) },
    { -1, NULL, NULL, "admin", ST_CFG_FLAG, KOFF(admin), NO_HAS,
      .help = "sees every key's requests on /api/activity and /slots" },
};
const size_t st_cfg_n_key_fields = ST_ARRAY_LEN(st_cfg_key_fields);

/* ---- parsing text ---------------------------------------------------- */

static bool parse_i64(const char *s, int64_t *out)
{
    const char *p = s + (*s == '+' || *s == '-');
    char *end;
    long long v;

    if (!isdigit((unsigned char)*p))
        return false;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    const char *p = s + (*s == '+' || *s == '-');
    char *end;
    double v;

    if (!isdigit((unsigned char)*p) && *p != '.')
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* "8388608", "512k", "8m", "8MiB", "1g", "2TB": binary units. */
static bool parse_size(const char *s, uint64_t *out)
{
    static const char units[] = "kmgt";
    uint64_t v = 0, mul = 1;
    const char *p = s;

    if (!isdigit((unsigned char)*p))
        return false;
    for (; isdigit((unsigned char)*p); p++) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return false;
    }
    if (*p != '\0') {
        const char *u = strchr(units, tolower((unsigned char)*p));
        if (u == NULL)
            return false;
        mul = UINT64_C(1) << (10 * (u - units + 1));
        p++;
        if (*p == 'i')
            p++;
        if (*p == 'b' || *p == 'B')
            p++;
        if (*p != '\0')
            return false;
    }
    return !__builtin_mul_overflow(v, mul, out);
}

bool st_cfg_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = { "true", "yes", "on", "1" };
    static const char *const no[] = { "false", "no", "off", "0" };
    for (size_t i = 0; i < ST_ARRAY_LEN(yes); i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* "0,1, 3": ids 0..1023, distinct, at most ST_CONFIG_MAX_GPUS. */
static bool parse_gpus(const char *s, struct st_config_gpus *out)
{
    struct st_config_gpus g = { .n = 0 };
    const char *p = s;

    for (;;) {
        char item[24];
        size_t len;
        int64_t v;

        while (*p == ' ')
            p++;
        len = strcspn(p, ",");
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len == 0 || len >= sizeof(item) || g.n == ST_CONFIG_MAX_GPUS)
            return false;
        memcpy(item, p, len);
        item[len] = '\0';
        if (!parse_i64(item, &v) || v < 0 || v > 1023)
            return false;
        for (int32_t i = 0; i < g.n; i++)
            if (g.ids[i] == v)
                return false;
        g.ids[g.n++] = (int32_t)v;
        p += strcspn(p, ",");
        if (*p == '\0')
            break;
        p++;
    }
    *out = g;
    return true;
}

static int find_choice(const char *const *choices, const char *text)
{
    for (int i = 0; choices[i] != NULL; i++)
        if (strcmp(choices[i], text) == 0)
            return i;
    return -1;
}

void st_cfg_expected(const struct st_cfg_def *d, char *out, size_t cap)
{
    size_t len;
    bool top;

    switch (d->kind) {
    case ST_CFG_FLAG:
        snprintf(out, cap, "true or false");
        return;
    case ST_CFG_INT32:
    case ST_CFG_INT64:
        top = d->kind == ST_CFG_INT32 ? d->imax == INT32_MAX : d->imax == INT64_MAX;
        if (d->imin == 1 && top)
            snprintf(out, cap, "a positive integer");
        else if (d->imin == 0 && top)
            snprintf(out, cap, "a non-negative integer");
        else if (d->imin == INT32_MIN && d->imax == INT32_MAX)
            snprintf(out, cap, "a 32-bit integer");
        else
            snprintf(out, cap, "an integer %lld..%lld", (long long)d->imin, (long long)d->imax);
        return;
    case ST_CFG_SIZE:
        snprintf(out, cap, "a size in bytes up to 16g (e.g. 65536, 512k, 8m)");
        return;
    case ST_CFG_DOUBLE:
        snprintf(out, cap, "a number %s %g", d->dmin_excl ? ">" : ">=", d->dmin);
        return;
    case ST_CFG_STRING:
    case ST_CFG_ALIASES:
        snprintf(out, cap, "a non-empty string");
        return;
    case ST_CFG_KEY:
        snprintf(out, cap, "a non-empty key");
        return;
    case ST_CFG_GPUS:
        snprintf(out, cap, "a list of up to %d distinct device ids 0..1023 (e.g. 0,1)",
                 ST_CONFIG_MAX_GPUS);
        return;
    case ST_CFG_CHOICE:
        len = (size_t)snprintf(out, cap, "one of ");
        for (int i = 0; d->choices[i] != NULL && len < cap; i++)
            len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", d->choices[i]);
        return;
    }
}

/* ---- storing values -------------------------------------------------- */

static enum st_status set_string(char **field, const char *text)
{
    char *copy = strdup(text);
    if (copy == NULL)
        return ST_ERR_NOMEM;
    free(*field);
    *field = copy;
    return ST_OK;
}

/* Append a copy of text to a model's list of names (aliases or tags). */
static enum st_status add_name(char ***list, size_t *n, const char *text)
{
    char **grown;
    char *copy;

    if (*n >= 1024)
        return ST_ERR_BAD_CONFIG;
    copy = strdup(text);
    grown = copy ? realloc(*list, (*n + 1) * sizeof(*grown)) : NULL;
    if (grown == NULL) {
        free(copy);
        return ST_ERR_NOMEM;
    }
    grown[(*n)++] = copy;
    *list = grown;
    return ST_OK;
}

static enum st_status add_alias(struct st_config_model *m, size_t off, const char *text)
{
    if (off == MOFF(tags))
        return add_name(&m->tags, &m->n_tags, text);
    return add_name(&m->aliases, &m->n_aliases, text);
}

static enum st_status add_cli_key(struct st_config *c, const char *text)
{
    struct st_config_key *k;
    char name[32];
    size_t n_cli = 0;

    for (size_t i = 0; i < c->n_keys; i++)
        n_cli += c->keys[i].line == 0;
    snprintf(name, sizeof(name), "cli-key-%zu", n_cli + 1);
    k = st_cfg_add_key(c);
    if (k == NULL)
        return ST_ERR_NOMEM;
    if (set_string(&k->name, name) != ST_OK || set_string(&k->key, text) != ST_OK)
        return ST_ERR_NOMEM;   /* the half-built key is freed with the config */
    return ST_OK;
}

/* Numbers: parse and range-check; false for a bad value. */
static bool set_number(const struct st_cfg_def *d, char *field, const char *text)
{
    int64_t i;
    uint64_t u;
    double x;
    size_t sz;
    int32_t i32;

    switch (d->kind) {
    case ST_CFG_INT32:
        if (!parse_i64(text, &i) || i < d->imin || i > d->imax)
            return false;
        i32 = (int32_t)i;
        memcpy(field, &i32, sizeof(i32));
        return true;
    case ST_CFG_INT64:
        if (!parse_i64(text, &i) || i < d->imin || i > d->imax)
            return false;
        memcpy(field, &i, sizeof(i));
        return true;
    case ST_CFG_SIZE:
        if (!parse_size(text, &u) || u < (uint64_t)d->imin || u > (uint64_t)d->imax)
            return false;
        sz = (size_t)u;
        memcpy(field, &sz, sizeof(sz));
        return true;
    case ST_CFG_DOUBLE:
        if (!parse_double(text, &x) || x < d->dmin || (d->dmin_excl && x == d->dmin))
            return false;
        memcpy(field, &x, sizeof(x));
        return true;
    default:
        return false;
    }
}

enum st_status st_cfg_set(const struct st_cfg_def *d, void *base, const char *text,
                          char *why, size_t why_cap)
{
    char *field = (char *)base + d->off;
    enum st_status rc = ST_OK;
    bool ok = true, b;
    int choice;

    switch (d->kind) {
    case ST_CFG_FLAG:
        ok = st_cfg_parse_bool(text, &b);
        if (ok)
            memcpy(field, &b, sizeof(b));
        break;
    case ST_CFG_INT32:
    case ST_CFG_INT64:
    case ST_CFG_SIZE:
    case ST_CFG_DOUBLE:
        ok = set_number(d, field, text);
        break;
    case ST_CFG_STRING:
        ok = text[0] != '\0';
        if (ok)
            rc = set_string((char **)(void *)field, text);
        break;
    case ST_CFG_CHOICE:
        choice = find_choice(d->choices, text);
        ok = choice >= 0;
        if (ok)
            memcpy(field, &choice, sizeof(choice));
        break;
    case ST_CFG_GPUS:
        ok = parse_gpus(text, (struct st_config_gpus *)(void *)field);
        break;
    case ST_CFG_KEY:
        ok = text[0] != '\0';
        if (ok)
            rc = add_cli_key(base, text);
        break;
    case ST_CFG_ALIASES:
        ok = text[0] != '\0';
        if (ok)
            rc = add_alias(base, d->off, text);
        break;
    }
    if (!ok || rc == ST_ERR_BAD_CONFIG) {
        st_cfg_expected(d, why, why_cap);
        return ST_ERR_BAD_CONFIG;
    }
    if (rc == ST_OK && d->has_off >= 0)
        *(bool *)(void *)((char *)base + d->has_off) = true;
    return rc;
}

size_t st_cfg_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[65];

    if (la > 64 || lb > 64)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            best = ST_MIN(best, up + 1);
            best = ST_MIN(best, row[j - 1] + 1);
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* ---- rendering ------------------------------------------------------- */

static void render_size(size_t v, char *out, size_t cap)
{
    static const char units[] = "kmgt";
    int u = -1;
    while (u < 3 && v != 0 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(out, cap, "%zu", v);
    else
        snprintf(out, cap, "%zu%c", v, units[u]);
}

void st_cfg_render(const struct st_cfg_def *d, const void *base, char *out, size_t cap)
{
    const char *field = (const char *)base + d->off;
    int32_t i32;
    int64_t i64;
    size_t sz;
    double x;
    int choice;
    const char *s;
    const struct st_config_gpus *g;

    switch (d->kind) {
    case ST_CFG_FLAG:
        snprintf(out, cap, "%s", *(const bool *)(const void *)field ? "on" : "off");
        return;
    case ST_CFG_INT32:
        memcpy(&i32, field, sizeof(i32));
        snprintf(out, cap, "%d", (int)i32);
        return;
    case ST_CFG_INT64:
        memcpy(&i64, field, sizeof(i64));
        if (i64 == 0 && d->zero)
            snprintf(out, cap, "%s", d->zero);
        else
            snprintf(out, cap, "%lld", (long long)i64);
        return;
    case ST_CFG_SIZE:
        memcpy(&sz, field, sizeof(sz));
        render_size(sz, out, cap);
        return;
    case ST_CFG_DOUBLE:
        memcpy(&x, field, sizeof(x));
        if (x == 0 && d->zero)
            snprintf(out, cap, "%s", d->zero);
        else
            snprintf(out, cap, "%g", x);
        return;
    case ST_CFG_STRING:
        memcpy(&s, field, sizeof(s));
        snprintf(out, cap, "%s", s ? s : "none");
        return;
    case ST_CFG_CHOICE:
        memcpy(&choice, field, sizeof(choice));
        snprintf(out, cap, "%s", d->choices[choice]);
        return;
    case ST_CFG_GPUS:
        g = (const struct st_config_gpus *)(const void *)field;
        snprintf(out, cap, "%s", g->n ? "" : "none");
        for (int32_t i = 0; i < g->n; i++) {
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s%d", i ? "," : "", (int)g->ids[i]);
        }
        return;
    case ST_CFG_KEY:
    case ST_CFG_ALIASES:
        snprintf(out, cap, "none");
        return;
    }
}

void st_cfg_quote(const char *text, char *out, size_t cap)
{
    size_t len = strlen(text), o = 0, max = 60;

    if (cap < 8)
        return;
    out[o++] = '"';
    for (size_t i = 0; i < len && i < max && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)text[i];
        out[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (len > max && o + 5 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
}
