/* metrics_epp.c -- the part of GET /metrics a router's endpoint picker reads
 * (the Gateway API Inference Extension's model server protocol; llm-d's
 * EPP, docs/SCALE-OUT.md "Metrics"), under vLLM's names and Strata's own:
 *
 *   vllm:num_requests_waiting    strata:num_requests_waiting{band}   gauge
 *   vllm:num_requests_running    strata:num_requests_running{band}   gauge
 *   vllm:kv_cache_usage_perc     strata:kv_cache_usage_ratio         gauge  0..1
 *   vllm:cache_config_info       strata:cache_config_info            gauge  1; labels
 *       block_size, num_gpu_blocks
 *   vllm:lora_requests_info      strata:models_info                  gauge  unix time; labels
 *       max_lora, running_lora_adapters, waiting_lora_adapters
 *   strata:model_swaps_in_progress                                   gauge
 *   strata:kv_pool_capacity_tokens                                   gauge  (--kv-unified)
 *   strata:kv_pool_held_tokens{state}                                gauge  total, busy, cached
 *
 * The picker keeps the first series of a family when its spec has no label
 * filter, so every strata: family starts with the unlabeled pod-wide total;
 * the per-band series follow it (an autoscaler reads band="interactive").
 * It reads only gauges and counters with a # TYPE line: an untyped sample
 * reads as 0.
 *
 * The models-info gauge reuses the LoRA gauge's meaning for whole models:
 * running = the models (and their aliases) loaded on some engine, waiting
 * = models with queued requests that no engine has loaded, max = engines
 * (each holds one model). The picker's affinity scorer then prefers a pod
 * that holds the requested model and avoids a swap.
 *
 * Everything is read from snapshots taken in O(bands + engines + models):
 * nothing here walks the queue.
 */
#include <stdio.h>
#include <string.h>

#include "server/http/http.h"

static void gauge_family(struct st_out *o, const char *name, const char *help)
{
    st_out_printf(o, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void total_and_bands(struct st_out *o, const char *name, const char *help, int64_t total,
                            const int64_t by_band[ST_BAND_COUNT])
{
    gauge_family(o, name, help);
    st_out_printf(o, "%s %lld\n", name, (long long)total);
    for (int b = 0; b < ST_BAND_COUNT; b++)
        st_out_printf(o, "%s{band=\"%s\"} %lld\n", name, st_band_name((enum st_band)b),
                      (long long)by_band[b]);
}

static void load_gauges(struct st_out *o, const struct st_sched_stats *ss,
                        const struct st_pool_stats *ps)
{
    double kv = ps->kv_usage < 0 ? 0 : (ps->kv_usage > 1 ? 1 : ps->kv_usage);
    gauge_family(o, "vllm:num_requests_waiting", "Requests waiting for a slot.");
    st_out_printf(o, "vllm:num_requests_waiting %lld\n", (long long)ss->waiting);
    gauge_family(o, "vllm:num_requests_running", "Requests holding a slot.");
    st_out_printf(o, "vllm:num_requests_running %lld\n", (long long)ss->running);
    gauge_family(o, "vllm:kv_cache_usage_perc", "KV cache in use over allocated, 0 to 1.");
    st_out_printf(o, "vllm:kv_cache_usage_perc %.9g\n", kv);

    int64_t waiting[ST_BAND_COUNT], running[ST_BAND_COUNT];
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        waiting[b] = ss->band[b].queue_depth;
        running[b] = ss->band[b].running;
    }
    total_and_bands(o, "strata:num_requests_waiting",
                    "Requests waiting for a slot: the pod's total, then by band.", ss->waiting,
                    waiting);
    total_and_bands(o, "strata:num_requests_running",
                    "Requests holding a slot: the pod's total, then by band.", ss->running,
                    running);
    gauge_family(o, "strata:kv_cache_usage_ratio", "KV cache in use over allocated, 0 to 1.");
    st_out_printf(o, "strata:kv_cache_usage_ratio %.9g\n", kv);
}

/* The unified KV pool (--kv-unified, docs/BATCHING.md): its size and what
 * the slots hold in it, busy grants (counted by kv_cache_usage) and idle
 * cached prefixes (committed memory, evicted when room is needed). All 0
 * with per-slot regions. */
static void kv_pool_gauges(struct st_out *o, const struct st_pool_stats *ps)
{
    gauge_family(o, "strata:kv_pool_capacity_tokens",
                 "Tokens of the unified KV pools (--kv-unified) of the loaded engines; 0: "
                 "per-slot regions.");
    st_out_printf(o, "strata:kv_pool_capacity_tokens %lld\n", (long long)ps->kv_pool_tokens);
    int64_t cached = ST_MAX((int64_t)0, ps->kv_pool_held - ps->kv_pool_busy);
    gauge_family(o, "strata:kv_pool_held_tokens",
                 "Tokens the slots hold in the unified KV pools: the total, then busy slots' "
                 "grants and idle slots' cached prefixes.");
    st_out_printf(o, "strata:kv_pool_held_tokens %lld\n", (long long)ps->kv_pool_held);
    st_out_printf(o, "strata:kv_pool_held_tokens{state=\"busy\"} %lld\n",
                  (long long)ps->kv_pool_busy);
    st_out_printf(o, "strata:kv_pool_held_tokens{state=\"cached\"} %lld\n", (long long)cached);
}

static void cache_info(struct st_out *o, const char *name, int32_t block_size, int64_t blocks)
{
    gauge_family(o, name,
                 "Always 1; labels: tokens per KV block as routers should count them, and "
                 "the blocks all engines' slots hold.");
    st_out_printf(o, "%s{block_size=\"%d\",num_gpu_blocks=\"%lld\"} 1\n", name, (int)block_size,
                  (long long)blocks);
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void label_value(struct st_out *o, const char *v)
{
    const char *run = v;
    for (; *v; v++) {
        if (*v != '\\' && *v != '"' && *v != '\n')
            continue;
        st_out_raw(o, run, (size_t)(v - run));
        st_out_text(o, *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : "\\n");
        run = v + 1;
    }
    st_out_raw(o, run, (size_t)(v - run));
}

static bool model_running(const struct st_metrics_models *mm, int32_t m)
{
    return mm->status[m].n_loaded > 0;
}

static bool model_waiting(const struct st_metrics_models *mm, int32_t m)
{
    return !model_running(mm, m) && mm->resident && mm->resident[m].waiting > 0;
}

/* The names of the models 'pick' selects, comma-separated: each model's
 * name, then its aliases (a client may ask for either). */
static void model_list(struct st_out *o, const struct st_metrics_models *mm,
                       bool (*pick)(const struct st_metrics_models *, int32_t))
{
    bool first = true;
    for (int32_t m = 0; m < mm->n_models; m++) {
        if (!pick(mm, m))
            continue;
        if (!first)
            st_out_text(o, ",");
        first = false;
        label_value(o, mm->names[m] ? mm->names[m] : "");
        const struct st_metrics_resident *r = mm->resident ? &mm->resident[m] : NULL;
        for (int32_t a = 0; r && a < r->n_aliases; a++) {
            st_out_text(o, ",");
            label_value(o, r->aliases[a]);
        }
    }
}

static void models_info(struct st_out *o, const char *name, const struct st_metrics_models *mm)
{
    gauge_family(o, name,
                 "Models resident on the pod, in the LoRA-info gauge's terms: loaded "
                 "(running_lora_adapters), queued but not loaded (waiting_lora_adapters), "
                 "the most loaded at once (max_lora); the value is when it was read, unix "
                 "seconds.");
    st_out_printf(o, "%s{max_lora=\"%d\",running_lora_adapters=\"", name,
                  (int)mm->pod.max_resident);
    model_list(o, mm, model_running);
    st_out_text(o, "\",waiting_lora_adapters=\"");
    model_list(o, mm, model_waiting);
    st_out_printf(o, "\"} %.3f\n", mm->pod.now_unix);
}

void st_metrics_epp_render(struct st_out *o, const struct st_sched_stats *ss,
                           const struct st_pool_stats *ps, const struct st_metrics_models *mm)
{
    load_gauges(o, ss, ps);
    kv_pool_gauges(o, ps);
    if (!mm)
        return;
    int32_t bs = mm->pod.block_size > 0 ? mm->pod.block_size : 1;
    int64_t blocks = ps->kv_tokens / bs;
    cache_info(o, "vllm:cache_config_info", bs, blocks);
    cache_info(o, "strata:cache_config_info", bs, blocks);
    models_info(o, "vllm:lora_requests_info", mm);
    models_info(o, "strata:models_info", mm);
    int64_t loading = 0;   /* engines loading a model they do not hold yet */
    for (int32_t m = 0; m < mm->n_models; m++)
        loading += ST_MAX(0, mm->status[m].n_engines - mm->status[m].n_loaded);
    gauge_family(o, "strata:model_swaps_in_progress", "Engines loading a model right now.");
    st_out_printf(o, "strata:model_swaps_in_progress %lld\n", (long long)loading);
}
