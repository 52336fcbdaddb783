/* metrics_llamacpp.c -- llama-server's llamacpp:* names in GET /metrics,
 * beside Strata's own, for dashboards built on llama-server:
 *   llamacpp:prompt_tokens_total       counter  prompt tokens read (not the cached)
 *   llamacpp:prompt_tokens_cached_total counter prompt tokens reused from a slot's cache
 *   llamacpp:tokens_predicted_total    counter  completion tokens generated
 *   llamacpp:spec_decode_num_draft_tokens_total     counter  drafted tokens (MTP + n-gram)
 *   llamacpp:spec_decode_num_accepted_tokens_total  counter  of those, accepted
 *   llamacpp:spec_decode_num_drafts_total           counter  verification steps
 *   llamacpp:requests_processing       gauge    requests holding a slot
 *   llamacpp:requests_deferred         gauge    requests waiting for a slot
 * Only the ones Strata counts the same way: the time totals, the rates
 * derived from them and the per-decode counters are left out
 * (docs/API.md "/metrics" says why).
 */
#include <stdio.h>

#include "server/http/http.h"

static void one(struct st_out *o, const char *name, const char *type, const char *help,
                unsigned long long v)
{
    st_out_printf(o, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

void st_metrics_llamacpp(struct st_out *o, const struct st_sched_stats *ss,
                         const struct st_pool_stats *ps)
{
    one(o, "llamacpp:prompt_tokens_total", "counter",
        "Number of prompt tokens processed (read; tokens reused from a slot's cache are not).",
        (unsigned long long)ps->prompt_tokens);
    one(o, "llamacpp:prompt_tokens_cached_total", "counter",
        "Number of prompt tokens reused from the cache.", (unsigned long long)ps->cached_tokens);
    one(o, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.",
        (unsigned long long)ps->generated_tokens);
    one(o, "llamacpp:spec_decode_num_draft_tokens_total", "counter",
        "Speculative: Total draft tokens generated (MTP and n-gram drafts).",
        (unsigned long long)(ps->mtp_drafted + ps->ngram_drafted));
    one(o, "llamacpp:spec_decode_num_accepted_tokens_total", "counter",
        "Speculative: Total draft tokens accepted by the target model.",
        (unsigned long long)(ps->mtp_accepted + ps->ngram_accepted));
    one(o, "llamacpp:spec_decode_num_drafts_total", "counter",
        "Speculative: Total speculative decoding verification steps.",
        (unsigned long long)(ps->mtp_steps + ps->ngram_steps));
    one(o, "llamacpp:requests_processing", "gauge", "Number of requests processing.",
        (unsigned long long)(ss->running > 0 ? ss->running : 0));
    one(o, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.",
        (unsigned long long)(ss->waiting > 0 ? ss->waiting : 0));
}
