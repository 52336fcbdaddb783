/* metrics_llamacpp.c -- llama-server's llamacpp:* names in GET /metrics,
 * beside Strata's own, for dashboards built on llama-server:
 *   llamacpp:prompt_tokens_total       counter  prompt tokens read (not the cached)
 *   llamacpp:prompt_tokens_cached_total counter prompt tokens reused from a slot's cache
 *   llamacpp:prompt_seconds_total      counter  each request's read time, summed
 *   llamacpp:tokens_predicted_total    counter  completion tokens generated
 *   llamacpp:tokens_predicted_seconds_total counter each request's first to last token, summed
 *   llamacpp:n_decode_total            counter  forward passes (engine steps), all engines
 *   llamacpp:n_tokens_max              counter  the longest sequence a slot held
 *   llamacpp:spec_decode_num_draft_tokens_total     counter  drafted tokens (MTP + n-gram)
 *   llamacpp:spec_decode_num_accepted_tokens_total  counter  of those, accepted
 *   llamacpp:spec_decode_num_drafts_total           counter  verification steps
 *   llamacpp:prompt_tokens_seconds     gauge    prompt tokens read per read second
 *   llamacpp:predicted_tokens_seconds  gauge    tokens after the first per generation second
 *   llamacpp:requests_processing       gauge    requests holding a slot
 *   llamacpp:requests_deferred         gauge    requests waiting for a slot
 *   llamacpp:n_busy_slots_per_decode   gauge    slots per forward pass
 * The two rates are averages since the start (llama-server's since the last
 * scrape: a scrape here changes nothing). docs/API.md "/metrics" says how
 * each time is taken.
 */
#include <stdio.h>

#include "server/http/http.h"

static void one(struct st_out *o, const char *name, const char *type, const char *help,
                unsigned long long v)
{
    st_out_printf(o, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

static void real(struct st_out *o, const char *name, const char *type, const char *help,
                 double v)
{
    st_out_printf(o, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

static double per(double n, double d)
{
    return d > 0 ? n / d : 0.0;
}

void st_metrics_llamacpp(struct st_out *o, const struct st_sched_stats *ss,
                         const struct st_pool_stats *ps)
{
    one(o, "llamacpp:prompt_tokens_total", "counter",
        "Number of prompt tokens processed (read; tokens reused from a slot's cache are not).",
        (unsigned long long)ps->prompt_tokens);
    one(o, "llamacpp:prompt_tokens_cached_total", "counter",
        "Number of prompt tokens reused from the cache.", (unsigned long long)ps->cached_tokens);
    real(o, "llamacpp:prompt_seconds_total", "counter",
         "Total time spent processing prompts: each request's read (its first chunk's step to "
         "its first token), summed.", ps->read_seconds);
    one(o, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.",
        (unsigned long long)ps->generated_tokens);
    real(o, "llamacpp:tokens_predicted_seconds_total", "counter",
         "Total time spent generating tokens: each request's first token to its last, summed.",
         ps->gen_seconds);
    one(o, "llamacpp:n_decode_total", "counter",
        "Total number of forward passes (engine steps, all engines).",
        (unsigned long long)ps->steps);
    one(o, "llamacpp:n_tokens_max", "counter",
        "Largest observed sequence length (prompt + generation).",
        (unsigned long long)(ps->seq_max > 0 ? ps->seq_max : 0));
    one(o, "llamacpp:spec_decode_num_draft_tokens_total", "counter",
        "Speculative: Total draft tokens generated (MTP and n-gram drafts).",
        (unsigned long long)(ps->mtp_drafted + ps->ngram_drafted));
    one(o, "llamacpp:spec_decode_num_accepted_tokens_total", "counter",
        "Speculative: Total draft tokens accepted by the target model.",
        (unsigned long long)(ps->mtp_accepted + ps->ngram_accepted));
    one(o, "llamacpp:spec_decode_num_drafts_total", "counter",
        "Speculative: Total speculative decoding verification steps.",
        (unsigned long long)(ps->mtp_steps + ps->ngram_steps));
    real(o, "llamacpp:prompt_tokens_seconds", "gauge",
         "Average prompt throughput in tokens/s since the start.",
         per((double)ps->prompt_tokens, ps->read_seconds));
    real(o, "llamacpp:predicted_tokens_seconds", "gauge",
         "Average generation throughput in tokens/s since the start (the tokens after each "
         "request's first).", per((double)ps->gen_steps, ps->gen_seconds));
    one(o, "llamacpp:requests_processing", "gauge", "Number of requests processing.",
        (unsigned long long)(ss->running > 0 ? ss->running : 0));
    one(o, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.",
        (unsigned long long)(ss->waiting > 0 ? ss->waiting : 0));
    real(o, "llamacpp:n_busy_slots_per_decode", "gauge",
         "Average number of busy slots per forward pass.",
         per((double)ps->step_slots, (double)(ps->steps > 0 ? ps->steps : 1)));
}
