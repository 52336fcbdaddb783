/* metrics.c -- GET /metrics in the Prometheus text format 0.0.4.
 *
 * Families (every band label present from the first scrape, zeros
 * included, so dashboards and alerts work at once):
 *   llamaswap_scheduler_queue_depth{band}                    gauge
 *   llamaswap_scheduler_queue_oldest_wait_seconds{band}      gauge
 *   llamaswap_scheduler_dispatched_total{band}               counter
 *   llamaswap_scheduler_reorders_total{band,term}            counter  term: aging|swap_affinity
 *   strata_slots{state}                                      gauge    idle|admitted|reading|parked|decoding
 *   strata_give_ways_total{band}                             counter
 *   strata_requests_total{band,outcome}                      counter  completed|cancelled|rejected|failed
 *   strata_requests_undispatched_total{band,outcome}         counter  left without a slot
 *   strata_requests_submitted_total{band}                    counter
 *   strata_requests_running{band}                            gauge
 *   strata_queue_full_total                                  counter  429s: rejected or shed
 *   strata_prompt_tokens_total, strata_generated_tokens_total,
 *   strata_cached_prompt_tokens_total                        counter
 *   strata_mtp_draft_tokens_total, strata_mtp_accepted_tokens_total  counter
 *   strata_time_to_first_token_seconds{band}                 histogram
 *   strata_inter_token_latency_seconds{band}                 histogram
 *   strata_http_responses_total{code}                        counter
 *   vllm:num_requests_waiting, vllm:num_requests_running,
 *   vllm:kv_cache_usage_perc (0..1)                          gauge    (Gateway API Inference Extension)
 *
 * Rendering reads two snapshots and formats ~250 lines: tens of
 * microseconds, cheap enough for a picker scraping every 50 ms.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const int st_http_codes[ST_HTTP_CODES_TRACKED] = { 200, 400, 401, 404, 405, 413,
                                                   429, 499, 500, 503, 0 };

static enum st_status family(struct st_buf *b, const char *name, const char *type,
                             const char *help)
{
    return st_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* value as Prometheus reads it: integers plainly, others with %.9g. */
static enum st_status sample(struct st_buf *b, const char *name, const char *labels, double v)
{
    if (labels && *labels)
        return st_buf_printf(b, "%s{%s} %.9g\n", name, labels, v);
    return st_buf_printf(b, "%s %.9g\n", name, v);
}

static enum st_status counter_u64(struct st_buf *b, const char *name, const char *labels,
                                  uint64_t v)
{
    if (labels && *labels)
        return st_buf_printf(b, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
    return st_buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static enum st_status scheduler_families(struct st_buf *b, const struct st_sched_stats *ss)
{
    char l[96];
    enum st_status rc = family(b, "llamaswap_scheduler_queue_depth", "gauge",
                               "Requests waiting for a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        snprintf(l, sizeof(l), "band=\"%s\"", st_band_name((enum st_band)i));
        rc = sample(b, "llamaswap_scheduler_queue_depth", l, (double)ss->band[i].queue_depth);
    }
    if (rc == ST_OK)
        rc = family(b, "llamaswap_scheduler_queue_oldest_wait_seconds", "gauge",
                    "Longest current wait for a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        snprintf(l, sizeof(l), "band=\"%s\"", st_band_name((enum st_band)i));
        rc = sample(b, "llamaswap_scheduler_queue_oldest_wait_seconds", l,
                    ss->band[i].oldest_wait_s);
    }
    if (rc == ST_OK)
        rc = family(b, "llamaswap_scheduler_dispatched_total", "counter",
                    "Requests given a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        snprintf(l, sizeof(l), "band=\"%s\"", st_band_name((enum st_band)i));
        rc = counter_u64(b, "llamaswap_scheduler_dispatched_total", l, ss->band[i].dispatched);
    }
    if (rc == ST_OK)
        rc = family(b, "llamaswap_scheduler_reorders_total", "counter",
                    "Dispatches where the aging or swap_affinity term changed the pick.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        const char *band = st_band_name((enum st_band)i);
        snprintf(l, sizeof(l), "band=\"%s\",term=\"aging\"", band);
        rc = counter_u64(b, "llamaswap_scheduler_reorders_total", l,
                         ss->band[i].reorders_aging);
        snprintf(l, sizeof(l), "band=\"%s\",term=\"swap_affinity\"", band);
        if (rc == ST_OK)
            rc = counter_u64(b, "llamaswap_scheduler_reorders_total", l,
                             ss->band[i].reorders_affinity);
    }
    return rc;
}

/* Submitted and running by band, and the 429 count: with the outcome
 * counters they add up (sched.h):
 *   submitted  = sum(outcomes) + queue_depth + running
 *   dispatched = sum(outcomes) - sum(undispatched) + running */
static enum st_status queue_families(struct st_buf *b, const struct st_sched_stats *ss)
{
    char l[64];
    enum st_status rc = family(b, "strata_requests_submitted_total", "counter",
                               "Requests submitted to the scheduler (queued or rejected), by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        snprintf(l, sizeof(l), "band=\"%s\"", st_band_name((enum st_band)i));
        rc = counter_u64(b, "strata_requests_submitted_total", l, ss->band[i].submitted);
    }
    if (rc == ST_OK)
        rc = family(b, "strata_requests_running", "gauge", "Requests holding a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        snprintf(l, sizeof(l), "band=\"%s\"", st_band_name((enum st_band)i));
        rc = sample(b, "strata_requests_running", l, (double)ss->band[i].running);
    }
    if (rc == ST_OK)
        rc = family(b, "strata_queue_full_total", "counter",
                    "Requests answered 429 because the waiting queue was full: rejected on "
                    "arrival, or shed for a higher priority.");
    if (rc == ST_OK)
        rc = counter_u64(b, "strata_queue_full_total", NULL, ss->shed);
    return rc;
}

static enum st_status slot_and_outcome_families(struct st_buf *b,
                                                const struct st_sched_stats *ss)
{
    static const char *const states[] = { "idle", "admitted", "reading", "parked", "decoding" };
    const int64_t counts[] = { ss->slots_idle, ss->slots_admitted, ss->slots_reading,
                               ss->slots_parked, ss->slots_decoding };
    char l[96];
    enum st_status rc = family(b, "strata_slots", "gauge", "Engine slots by state.");
    for (size_t i = 0; i < ST_ARRAY_LEN(states) && rc == ST_OK; i++) {
        snprintf(l, sizeof(l), "state=\"%s\"", states[i]);
        rc = sample(b, "strata_slots", l, (double)counts[i]);
    }
    if (rc == ST_OK)
        rc = family(b, "strata_give_ways_total", "counter",
                    "Prompt reads that gave way to another request, by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        snprintf(l, sizeof(l), "band=\"%s\"", st_band_name((enum st_band)i));
        rc = counter_u64(b, "strata_give_ways_total", l, ss->band[i].give_ways);
    }
    if (rc == ST_OK)
        rc = family(b, "strata_requests_total", "counter",
                    "Requests that left the scheduler, by band and outcome.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        for (int o = 0; o < ST_OUTCOME_COUNT && rc == ST_OK; o++) {
            snprintf(l, sizeof(l), "band=\"%s\",outcome=\"%s\"", st_band_name((enum st_band)i),
                     st_outcome_name((enum st_outcome)o));
            rc = counter_u64(b, "strata_requests_total", l, ss->band[i].outcomes[o]);
        }
    }
    if (rc == ST_OK)
        rc = family(b, "strata_requests_undispatched_total", "counter",
                    "Requests that left without ever holding a slot, by band and outcome.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++) {
        for (int o = 0; o < ST_OUTCOME_COUNT && rc == ST_OK; o++) {
            snprintf(l, sizeof(l), "band=\"%s\",outcome=\"%s\"", st_band_name((enum st_band)i),
                     st_outcome_name((enum st_outcome)o));
            rc = counter_u64(b, "strata_requests_undispatched_total", l,
                             ss->band[i].undispatched[o]);
        }
    }
    if (rc == ST_OK)
        rc = queue_families(b, ss);
    return rc;
}

static enum st_status token_families(struct st_buf *b, const struct st_pool_stats *ps)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } c[] = {
        { "strata_prompt_tokens_total", "Prompt tokens read.",
          offsetof(struct st_pool_stats, prompt_tokens) },
        { "strata_generated_tokens_total", "Completion tokens generated.",
          offsetof(struct st_pool_stats, generated_tokens) },
        { "strata_cached_prompt_tokens_total", "Prompt tokens reused from a slot's cache.",
          offsetof(struct st_pool_stats, cached_tokens) },
        { "strata_mtp_draft_tokens_total", "MTP draft tokens proposed.",
          offsetof(struct st_pool_stats, mtp_drafted) },
        { "strata_mtp_accepted_tokens_total", "MTP draft tokens accepted.",
          offsetof(struct st_pool_stats, mtp_accepted) },
    };
    enum st_status rc = ST_OK;
    for (size_t i = 0; i < ST_ARRAY_LEN(c) && rc == ST_OK; i++) {
        uint64_t v;
        memcpy(&v, (const char *)ps + c[i].off, sizeof(v));
        rc = family(b, c[i].name, "counter", c[i].help);
        if (rc == ST_OK)
            rc = counter_u64(b, c[i].name, NULL, v);
    }
    return rc;
}

/* One band of a histogram: cumulative buckets, +Inf, sum, count. */
static enum st_status histogram(struct st_buf *b, const char *name, const char *band,
                                const struct st_histogram *h)
{
    enum st_status rc = ST_OK;
    uint64_t cum = 0;
    int32_t nb = h->n_bounds < 0 ? 0 : ST_MIN(h->n_bounds, ST_HIST_BUCKETS);
    for (int32_t i = 0; i < nb && rc == ST_OK; i++) {
        cum += h->counts[i];
        rc = st_buf_printf(b, "%s_bucket{band=\"%s\",le=\"%.9g\"} %llu\n", name, band,
                           h->bounds[i], (unsigned long long)cum);
    }
    /* +Inf counts everything, whatever the per-bucket counts say */
    if (rc == ST_OK)
        rc = st_buf_printf(b, "%s_bucket{band=\"%s\",le=\"+Inf\"} %llu\n", name, band,
                           (unsigned long long)ST_MAX(h->count, cum));
    if (rc == ST_OK)
        rc = st_buf_printf(b, "%s_sum{band=\"%s\"} %.9g\n", name, band, h->sum);
    if (rc == ST_OK)
        rc = st_buf_printf(b, "%s_count{band=\"%s\"} %llu\n", name, band,
                           (unsigned long long)ST_MAX(h->count, cum));
    return rc;
}

static enum st_status latency_families(struct st_buf *b, const struct st_pool_stats *ps)
{
    enum st_status rc = family(b, "strata_time_to_first_token_seconds", "histogram",
                               "Time from submit to the first token, by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++)
        rc = histogram(b, "strata_time_to_first_token_seconds", st_band_name((enum st_band)i),
                       &ps->ttft[i]);
    if (rc == ST_OK)
        rc = family(b, "strata_inter_token_latency_seconds", "histogram",
                    "Time between consecutive tokens of a request, by band.");
    for (int i = 0; i < ST_BAND_COUNT && rc == ST_OK; i++)
        rc = histogram(b, "strata_inter_token_latency_seconds", st_band_name((enum st_band)i),
                       &ps->itl[i]);
    return rc;
}

static enum st_status http_and_gateway(struct st_buf *b, const struct st_sched_stats *ss,
                                       const struct st_pool_stats *ps,
                                       const struct st_http_stats *hs)
{
    char l[32];
    enum st_status rc = family(b, "strata_http_responses_total", "counter",
                               "HTTP responses by status code (code=\"other\" for the rest).");
    for (int i = 0; i < ST_HTTP_CODES_TRACKED && rc == ST_OK; i++) {
        if (st_http_codes[i])
            snprintf(l, sizeof(l), "code=\"%d\"", st_http_codes[i]);
        else
            snprintf(l, sizeof(l), "code=\"other\"");
        rc = counter_u64(b, "strata_http_responses_total", l, hs ? hs->responses[i] : 0);
    }
    double kv = ps->kv_usage < 0 ? 0 : (ps->kv_usage > 1 ? 1 : ps->kv_usage);
    if (rc == ST_OK)
        rc = family(b, "vllm:num_requests_waiting", "gauge", "Requests waiting for a slot.");
    if (rc == ST_OK)
        rc = sample(b, "vllm:num_requests_waiting", NULL, (double)ss->waiting);
    if (rc == ST_OK)
        rc = family(b, "vllm:num_requests_running", "gauge", "Requests holding a slot.");
    if (rc == ST_OK)
        rc = sample(b, "vllm:num_requests_running", NULL, (double)ss->running);
    if (rc == ST_OK)
        rc = family(b, "vllm:kv_cache_usage_perc", "gauge",
                    "KV cache in use over allocated, 0 to 1.");
    if (rc == ST_OK)
        rc = sample(b, "vllm:kv_cache_usage_perc", NULL, kv);
    return rc;
}

enum st_status st_metrics_render(struct st_buf *out, const struct st_sched_stats *ss,
                                 const struct st_pool_stats *ps, const struct st_http_stats *hs)
{
    enum st_status rc = scheduler_families(out, ss);
    if (rc == ST_OK)
        rc = slot_and_outcome_families(out, ss);
    if (rc == ST_OK)
        rc = token_families(out, ps);
    if (rc == ST_OK)
        rc = latency_families(out, ps);
    if (rc == ST_OK)
        rc = http_and_gateway(out, ss, ps, hs);
    return rc;
}
