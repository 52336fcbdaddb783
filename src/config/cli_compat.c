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

/* --reasoning on|off|auto (and llama-server's other spellings): off is no
 * thinking, i.e. a budget of 0; on and auto leave the template's default. */
static const char *const reasoning_map[] = {
    "off", "0", "disabled", "0", "false", "0", "0", "0",
    "on", "-1", "enabled", "-1", "true", "-1", "1", "-1", "auto", "-1", "-1", "-1", NULL
};

static const struct st_cli_compat compat[] = {
    /* mapped onto our settings */
    { "--cont-batching", "-cb", false, ST_OPT_BATCH, "true", NULL, NULL },
    { "--no-cont-batching", "-nocb", false, ST_OPT_BATCH, "false", NULL, NULL },
    { "--ubatch-size", "-ub", true, ST_OPT_UBATCH, NULL, NULL, NULL },
    { "--verbose", "-v", false, ST_OPT_LOG_LEVEL, "debug", NULL, NULL },
    { "--reasoning", "-rea", true, ST_OPT_REASONING_BUDGET, NULL, NULL, reasoning_map },
    /* accepted, no effect */
    { "--batch-size", "-b", true, ST_OPT_COUNT, NULL,
      "the logical batch is the step; --ubatch is the prompt chunk", NULL },
    { "--threads-batch", "-tb", true, ST_OPT_COUNT, NULL, "--threads serves both", NULL },
    { "--n-gpu-layers", "-ngl", true, ST_OPT_COUNT, NULL,
      "--backend picks where the whole model runs", NULL },
    { "--flash-attn", "-fa", true, ST_OPT_COUNT, NULL, "the engine has one attention path", NULL },
    { "--pooling", NULL, true, ST_OPT_COUNT, NULL, "embeddings use last-token pooling", NULL },
    { "--cache-ram", "-cram", true, ST_OPT_COUNT, NULL, "prompt reuse lives in the slots' KV", NULL },
    { "--sleep-idle-seconds", NULL, true, ST_OPT_COUNT, NULL, "the model stays loaded", NULL },
    { "--grp-attn-n", "-gan", true, ST_OPT_COUNT, NULL, "no self-extend", NULL },
    { "--grp-attn-w", "-gaw", true, ST_OPT_COUNT, NULL, "no self-extend", NULL },
    { "--offline", NULL, false, ST_OPT_COUNT, NULL, "models are local files; nothing is fetched", NULL },
    { "--no-ui", NULL, false, ST_OPT_COUNT, NULL, "--no-webui turns the dashboard off", NULL },
    { "--metrics", NULL, false, ST_OPT_COUNT, NULL, "/metrics is always served", NULL },
    { "--embedding", "--embeddings", false, ST_OPT_COUNT, NULL,
      "/v1/embeddings is always served", NULL },
    { "--swa-full", NULL, false, ST_OPT_COUNT, NULL, "no sliding-window models", NULL },
    { "--context-shift", NULL, false, ST_OPT_COUNT, NULL,
      "no context shift: a full context ends the reply", NULL },
    { "--no-context-shift", NULL, false, ST_OPT_COUNT, NULL, "already so", NULL },
    { "--no-cache-idle-slots", NULL, false, ST_OPT_COUNT, NULL,
      "prompt reuse lives in the slots' KV", NULL },
    { "--no-mmproj", NULL, false, ST_OPT_COUNT, NULL, "text models only", NULL },
    { "--backend-sampling", "-bs", false, ST_OPT_COUNT, NULL, "sampling runs on the CPU", NULL },
    { "--no-warmup", NULL, false, ST_OPT_COUNT, NULL, "no warm-up run", NULL },
    { "--mlock", NULL, false, ST_OPT_COUNT, NULL, "no effect on how weights load", NULL },
    { "--no-mmap", NULL, false, ST_OPT_COUNT, NULL, "no effect on how weights load", NULL },
};

static bool same(const char *flag, const char *arg, size_t len)
{
    return flag != NULL && strlen(flag) == len && strncmp(flag, arg, len) == 0;
}

const char *st_cli_compat_value(const struct st_cli_compat *x, const char *value)
{
    if (x->value != NULL)
        return x->value;
    if (x->map == NULL)
        return value;
    for (size_t i = 0; x->map[i] != NULL; i += 2)
        if (strcmp(x->map[i], value) == 0)
            return x->map[i + 1];
    return NULL;
}

const struct st_cli_compat *st_cli_compat_find(const char *arg, size_t len)
{
    for (size_t i = 0; i < ST_ARRAY_LEN(compat); i++)
        if (same(compat[i].lng, arg, len) || same(compat[i].shrt, arg, len))
            return &compat[i];
    return NULL;
}
