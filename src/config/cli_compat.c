/* cli_compat.c -- llama-server's flags that are not Strata settings.
 *
 * A llama-server command line should start Strata unchanged (its own test
 * suite passes --temp, --seed, --no-slots, -fa ... to every server). Each
 * flag here either sets one of our settings (--cont-batching is --batch)
 * or is accepted and has no effect, with a start-up warning that says why;
 * docs/CLI.md "llama-server flags" lists them. A flag whose feature Strata
 * leaves out on purpose (--lora, --mmproj) stays unknown: exit 2 is better
 * than a server that silently lacks what was asked for.
 */
#include <string.h>

#include "internal.h"

static const struct st_cli_compat compat[] = {
    /* mapped onto our settings */
    { "--cont-batching", "-cb", false, ST_OPT_BATCH, "true", NULL },
    { "--no-cont-batching", "-nocb", false, ST_OPT_BATCH, "false", NULL },
    { "--ubatch-size", "-ub", true, ST_OPT_UBATCH, NULL, NULL },
    { "--verbose", "-v", false, ST_OPT_LOG_LEVEL, "debug", NULL },
    /* accepted, no effect */
    { "--temp", NULL, true, ST_OPT_COUNT, NULL, "a request's temperature sets it" },
    { "--seed", "-s", true, ST_OPT_COUNT, NULL, "a request's seed sets it" },
    { "--n-predict", "-n", true, ST_OPT_COUNT, NULL,
      "a request's max_tokens / n_predict sets it" },
    { "--batch-size", "-b", true, ST_OPT_COUNT, NULL,
      "the logical batch is the step; --ubatch is the prompt chunk" },
    { "--threads-batch", "-tb", true, ST_OPT_COUNT, NULL, "--threads serves both" },
    { "--n-gpu-layers", "-ngl", true, ST_OPT_COUNT, NULL,
      "--backend picks where the whole model runs" },
    { "--flash-attn", "-fa", true, ST_OPT_COUNT, NULL, "the engine has one attention path" },
    { "--pooling", NULL, true, ST_OPT_COUNT, NULL, "embeddings use last-token pooling" },
    { "--tags", NULL, true, ST_OPT_COUNT, NULL, "no model tags" },
    { "--cache-ram", "-cram", true, ST_OPT_COUNT, NULL, "prompt reuse lives in the slots' KV" },
    { "--sleep-idle-seconds", NULL, true, ST_OPT_COUNT, NULL, "the model stays loaded" },
    { "--grp-attn-n", "-gan", true, ST_OPT_COUNT, NULL, "no self-extend" },
    { "--grp-attn-w", "-gaw", true, ST_OPT_COUNT, NULL, "no self-extend" },
    { "--offline", NULL, false, ST_OPT_COUNT, NULL, "models are local files; nothing is fetched" },
    { "--no-ui", NULL, false, ST_OPT_COUNT, NULL, "--no-webui turns the dashboard off" },
    { "--metrics", NULL, false, ST_OPT_COUNT, NULL, "/metrics is always served" },
    { "--slots", NULL, false, ST_OPT_COUNT, NULL, "/slots is always served" },
    { "--no-slots", NULL, false, ST_OPT_COUNT, NULL, "/slots is always served" },
    { "--embedding", "--embeddings", false, ST_OPT_COUNT, NULL,
      "/v1/embeddings is always served" },
    { "--kv-unified", "-kvu", false, ST_OPT_COUNT, NULL, "each slot has its own KV region" },
    { "--no-kv-unified", NULL, false, ST_OPT_COUNT, NULL, "each slot has its own KV region" },
    { "--swa-full", NULL, false, ST_OPT_COUNT, NULL, "no sliding-window models" },
    { "--context-shift", NULL, false, ST_OPT_COUNT, NULL,
      "no context shift: a full context ends the reply" },
    { "--no-context-shift", NULL, false, ST_OPT_COUNT, NULL, "already so" },
    { "--no-cache-idle-slots", NULL, false, ST_OPT_COUNT, NULL,
      "prompt reuse lives in the slots' KV" },
    { "--no-mmproj", NULL, false, ST_OPT_COUNT, NULL, "text models only" },
    { "--no-warmup", NULL, false, ST_OPT_COUNT, NULL, "no warm-up run" },
    { "--mlock", NULL, false, ST_OPT_COUNT, NULL, "no effect on how weights load" },
    { "--no-mmap", NULL, false, ST_OPT_COUNT, NULL, "no effect on how weights load" },
};

static bool same(const char *flag, const char *arg, size_t len)
{
    return flag != NULL && strlen(flag) == len && strncmp(flag, arg, len) == 0;
}

const struct st_cli_compat *st_cli_compat_find(const char *arg, size_t len)
{
    for (size_t i = 0; i < ST_ARRAY_LEN(compat); i++)
        if (same(compat[i].lng, arg, len) || same(compat[i].shrt, arg, len))
            return &compat[i];
    return NULL;
}
