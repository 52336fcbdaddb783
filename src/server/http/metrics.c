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
 *   strata_mtp_draft_tokens_total, strata_mtp_accepted_tokens_total,
 *   strata_mtp_steps_total                                   counter  MTP drafts only
 *   strata_ngram_draft_tokens_total, strata_ngram_accepted_tokens_total,
 *   strata_ngram_steps_total                                 counter  n-gram drafts (--spec ngram)
 *   strata_drawn_tokens_total                                counter  tokens drawn on the backend
 *   strata_spec_plain_steps_total                            counter  steps where drafts did not pay
 *   strata_mtp_acceptance_rate (accepted / drafted),
 *   strata_mtp_mean_accepted_length (1 + accepted / steps)   gauge    0 until MTP drafts
 *   strata_time_to_first_token_seconds{band}                 histogram
 *   strata_inter_token_latency_seconds{band}                 histogram
 *   strata_http_responses_total{code}                        counter
 *   strata_server_draining                                   gauge    1 while a shutdown drains
 *   strata_responses_stored, strata_responses_stored_bytes   gauge    the /v1/responses store
 *   strata_responses_evicted_total                           counter  ... entries dropped for room
 *   strata_model_loaded{model}                               gauge    engines that have it loaded
 *   strata_model_load_seconds{model}                         histogram every load attempt
 *   strata_model_load_failures_total{model}                  counter
 *   strata_model_swaps_total{from,to}                        counter  from="none": onto an empty engine
 *   vllm:* and strata:* gauges a router's endpoint picker reads (queue, running,
 *   KV use, cache geometry, models resident): metrics_epp.c
 *   llamacpp:* (metrics_llamacpp.c)                          llama-server's names
 *
 * Rendering reads two snapshots and formats ~250 lines plus ~25 per model
 * and one per swap pair: tens of microseconds, cheap enough for a picker
 * scraping every 50 ms. The swap pairs grow with the square of the models,
 * so every pair is shown only up to ST_METRICS_ALL_PAIRS_MAX models; above
 * that, the "none" row is complete and the other pairs are those between
 * models that have loaded at least once (a pair is zero until both have).
 * Model names are label values, escaped as the text format requires.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/http/http.h"

const int st_http_codes[ST_HTTP_CODES_TRACKED] = { 200, 400, 401, 404, 405, 413,
                                                   429, 499, 500, 503, 0 };

/* ---- Prometheus lines ---------------------------------------------------- */

static void family(struct st_out *o, const char *name, const char *type, const char *help)
{
    st_out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* value as Prometheus reads it: integers plainly, others with %.9g. */
static void sample(struct st_out *o, const char *name, const char *labels, double v)
{
    if (labels && *labels)
        st_out_printf(o, "%s{%s} %.9g\n", name, labels, v);
    else
        st_out_printf(o, "%s %.9g\n", name, v);
}

static void counter_u64(struct st_out *o, const char *name, const char *labels, uint64_t v)
{
    if (labels && *labels)
        st_out_printf(o, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
    else
        st_out_printf(o, "%s %llu\n", name, (unsigned long long)v);
}

static void band_label(char *out, size_t cap, int band)
{
    snprintf(out, cap, "band=\"%s\"", st_band_name((enum st_band)band));
}

/* ---- families ------------------------------------------------------------- */

static void scheduler_families(struct st_out *o, const struct st_sched_stats *ss)
{
    char l[96];
    family(o, "llamaswap_scheduler_queue_depth", "gauge",
           "Requests waiting for a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        sample(o, "llamaswap_scheduler_queue_depth", l, (double)ss->band[i].queue_depth);
    }
    family(o, "llamaswap_scheduler_queue_oldest_wait_seconds", "gauge",
           "Longest current wait for a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        sample(o, "llamaswap_scheduler_queue_oldest_wait_seconds", l,
               ss->band[i].oldest_wait_s);
    }
    family(o, "llamaswap_scheduler_dispatched_total", "counter",
           "Requests given a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        counter_u64(o, "llamaswap_scheduler_dispatched_total", l, ss->band[i].dispatched);
    }
    family(o, "llamaswap_scheduler_reorders_total", "counter",
           "Dispatches where the aging or swap_affinity term changed the pick.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        const char *band = st_band_name((enum st_band)i);
        snprintf(l, sizeof(l), "band=\"%s\",term=\"aging\"", band);
        counter_u64(o, "llamaswap_scheduler_reorders_total", l, ss->band[i].reorders_aging);
        snprintf(l, sizeof(l), "band=\"%s\",term=\"swap_affinity\"", band);
        counter_u64(o, "llamaswap_scheduler_reorders_total", l,
                    ss->band[i].reorders_affinity);
    }
}

/* Submitted and running by band, and the 429 count: with the outcome
 * counters they add up (sched.h):
 *   submitted  = sum(outcomes) + queue_depth + running
 *   dispatched = sum(outcomes) - sum(undispatched) + running */
static void queue_families(struct st_out *o, const struct st_sched_stats *ss)
{
    char l[64];
    family(o, "strata_requests_submitted_total", "counter",
           "Requests submitted to the scheduler (queued or rejected), by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        counter_u64(o, "strata_requests_submitted_total", l, ss->band[i].submitted);
    }
    family(o, "strata_requests_running", "gauge", "Requests holding a slot, by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        sample(o, "strata_requests_running", l, (double)ss->band[i].running);
    }
    family(o, "strata_queue_full_total", "counter",
           "Requests answered 429 because the waiting queue was full: rejected on "
           "arrival, or shed for a higher priority.");
    counter_u64(o, "strata_queue_full_total", NULL, ss->shed);
}

/* One family of per-band, per-outcome counters: outcomes[] or undispatched[]. */
static void outcome_family(struct st_out *o, const struct st_sched_stats *ss, const char *name,
                           const char *help, bool undispatched)
{
    char l[96];
    family(o, name, "counter", help);
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        for (int k = 0; k < ST_OUTCOME_COUNT; k++) {
            snprintf(l, sizeof(l), "band=\"%s\",outcome=\"%s\"", st_band_name((enum st_band)i),
                     st_outcome_name((enum st_outcome)k));
            counter_u64(o, name, l,
                        undispatched ? ss->band[i].undispatched[k] : ss->band[i].outcomes[k]);
        }
    }
}

static void slot_and_outcome_families(struct st_out *o, const struct st_sched_stats *ss)
{
    static const char *const states[] = { "idle", "admitted", "reading", "parked", "decoding" };
    const int64_t counts[] = { ss->slots_idle, ss->slots_admitted, ss->slots_reading,
                               ss->slots_parked, ss->slots_decoding };
    char l[96];
    family(o, "strata_slots", "gauge", "Engine slots by state.");
    for (size_t i = 0; i < ST_ARRAY_LEN(states); i++) {
        snprintf(l, sizeof(l), "state=\"%s\"", states[i]);
        sample(o, "strata_slots", l, (double)counts[i]);
    }
    family(o, "strata_give_ways_total", "counter",
           "Prompt reads that gave way to another request, by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        counter_u64(o, "strata_give_ways_total", l, ss->band[i].give_ways);
    }
    outcome_family(o, ss, "strata_requests_total",
                   "Requests that left the scheduler, by band and outcome.", false);
    outcome_family(o, ss, "strata_requests_undispatched_total",
                   "Requests that left without ever holding a slot, by band and outcome.", true);
    queue_families(o, ss);
}

static void token_families(struct st_out *o, const struct st_pool_stats *ps)
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
        { "strata_prefix_copied_tokens_total",
          "Cached prompt tokens whose KV was copied from another slot (prefix sharing).",
          offsetof(struct st_pool_stats, copied_tokens) },
        { "strata_mtp_draft_tokens_total", "MTP draft tokens proposed.",
          offsetof(struct st_pool_stats, mtp_drafted) },
        { "strata_mtp_accepted_tokens_total", "MTP draft tokens accepted.",
          offsetof(struct st_pool_stats, mtp_accepted) },
        { "strata_mtp_steps_total", "MTP verify steps (slot steps that checked drafts).",
          offsetof(struct st_pool_stats, mtp_steps) },
        { "strata_ngram_draft_tokens_total", "N-gram (prompt-lookup) draft tokens proposed.",
          offsetof(struct st_pool_stats, ngram_drafted) },
        { "strata_ngram_accepted_tokens_total", "N-gram draft tokens accepted.",
          offsetof(struct st_pool_stats, ngram_accepted) },
        { "strata_ngram_steps_total",
          "N-gram verify steps (slot steps that checked n-gram drafts).",
          offsetof(struct st_pool_stats, ngram_steps) },
        { "strata_drawn_tokens_total",
          "Tokens drawn on the backend (ids copied back, not logits).",
          offsetof(struct st_pool_stats, drawn_tokens) },
        { "strata_spec_plain_steps_total",
          "Engine steps whose slots could draft where the cost model found drafts would not "
          "pay (no drafts, no MTP upkeep).",
          offsetof(struct st_pool_stats, spec_plain_steps) },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(c); i++) {
        uint64_t v;
        memcpy(&v, (const char *)ps + c[i].off, sizeof(v));
        family(o, c[i].name, "counter", c[i].help);
        counter_u64(o, c[i].name, NULL, v);
    }
    /* Ratios of the counters, for dashboards without PromQL at hand; 0
     * until there is something to divide by. */
    double rate = ps->mtp_drafted ? (double)ps->mtp_accepted / (double)ps->mtp_drafted : 0.0;
    double len = ps->mtp_steps ? 1.0 + (double)ps->mtp_accepted / (double)ps->mtp_steps : 0.0;
    family(o, "strata_mtp_acceptance_rate", "gauge",
           "MTP draft tokens accepted over drafted, 0 to 1 (0 before any draft).");
    sample(o, "strata_mtp_acceptance_rate", NULL, rate);
    family(o, "strata_mtp_mean_accepted_length", "gauge",
           "Tokens emitted per MTP verify step: 1 + accepted drafts per step "
           "(0 before any step).");
    sample(o, "strata_mtp_mean_accepted_length", NULL, len);
}

/* One series of a histogram ('labels' e.g. band="normal"): cumulative
 * buckets, +Inf, sum, count. */
static void histogram(struct st_out *o, const char *name, const char *labels,
                      const struct st_histogram *h)
{
    uint64_t cum = 0;
    int32_t nb = h->n_bounds < 0 ? 0 : ST_MIN(h->n_bounds, ST_HIST_BUCKETS);
    for (int32_t i = 0; i < nb; i++) {
        cum += h->counts[i];
        st_out_printf(o, "%s_bucket{%s,le=\"%.9g\"} %llu\n", name, labels, h->bounds[i],
                      (unsigned long long)cum);
    }
    /* +Inf counts everything, whatever the per-bucket counts say */
    unsigned long long total = (unsigned long long)ST_MAX(h->count, cum);
    st_out_printf(o, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, total);
    st_out_printf(o, "%s_sum{%s} %.9g\n", name, labels, h->sum);
    st_out_printf(o, "%s_count{%s} %llu\n", name, labels, total);
}

static void latency_families(struct st_out *o, const struct st_pool_stats *ps)
{
    char l[32];
    family(o, "strata_time_to_first_token_seconds", "histogram",
           "Time from submit to the first token, by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        histogram(o, "strata_time_to_first_token_seconds", l, &ps->ttft[i]);
    }
    family(o, "strata_inter_token_latency_seconds", "histogram",
           "Time between consecutive tokens of a request, by band.");
    for (int i = 0; i < ST_BAND_COUNT; i++) {
        band_label(l, sizeof(l), i);
        histogram(o, "strata_inter_token_latency_seconds", l, &ps->itl[i]);
    }
}

/* The /v1/responses store (docs/API.md "Stored responses"). */
static void response_store_families(struct st_out *o, const struct st_http_stats *hs)
{
    family(o, "strata_responses_stored", "gauge", "Responses held in the /v1/responses store.");
    sample(o, "strata_responses_stored", NULL, hs ? (double)hs->resp_stored : 0.0);
    family(o, "strata_responses_stored_bytes", "gauge",
           "Bytes the stored responses count against --responses-store-mb.");
    sample(o, "strata_responses_stored_bytes", NULL, hs ? (double)hs->resp_stored_bytes : 0.0);
    family(o, "strata_responses_evicted_total", "counter",
           "Stored responses dropped (least recently used) to make room.");
    counter_u64(o, "strata_responses_evicted_total", NULL, hs ? hs->resp_evicted : 0);
}

static void http_families(struct st_out *o, const struct st_http_stats *hs)
{
    char l[32];
    family(o, "strata_http_responses_total", "counter",
           "HTTP responses by status code (code=\"other\" for the rest).");
    for (int i = 0; i < ST_HTTP_CODES_TRACKED; i++) {
        if (st_http_codes[i])
            snprintf(l, sizeof(l), "code=\"%d\"", st_http_codes[i]);
        else
            snprintf(l, sizeof(l), "code=\"other\"");
        counter_u64(o, "strata_http_responses_total", l, hs ? hs->responses[i] : 0);
    }
    family(o, "strata_server_draining", "gauge",
           "1 while a graceful shutdown drains (new generations get 503).");
    sample(o, "strata_server_draining", NULL, hs && hs->draining ? 1.0 : 0.0);
    response_store_families(o, hs);
}

/* ---- several models ---------------------------------------------------- */

/* 'name="value"' with the value escaped as the text format wants (\\, \",
 * \n). A value that does not fit is cut at a character boundary, so the
 * label stays valid UTF-8 and never ends inside an escape. */
static void label(char *out, size_t cap, const char *name, const char *value)
{
    size_t n = (size_t)snprintf(out, cap, "%s=\"", name);
    const unsigned char *v = (const unsigned char *)(value ? value : "");
    while (*v && n < cap) {
        size_t k = *v >= 0xF0 ? 4 : *v >= 0xE0 ? 3 : *v >= 0xC0 ? 2 : 1;
        bool esc = *v == '\\' || *v == '"' || *v == '\n';
        if (n + k + esc + 2 > cap)       /* + closing quote and NUL */
            break;
        if (esc) {
            out[n++] = '\\';
            out[n++] = *v == '\n' ? 'n' : (char)*v;
            v++;
            continue;
        }
        for (size_t j = 0; j < k && *v; j++)
            out[n++] = (char)*v++;
    }
    out[n++] = '"';
    out[n] = '\0';
}

static const char *model_name_of(const struct st_metrics_models *mm, int32_t m)
{
    return m < 0 ? "none" : (mm->names[m] ? mm->names[m] : "");
}

static void model_gauges(struct st_out *o, const struct st_metrics_models *mm)
{
    char l[ST_METRICS_LABEL_MAX];
    family(o, "strata_model_loaded", "gauge", "Engines that have the model loaded.");
    for (int32_t m = 0; m < mm->n_models; m++) {
        label(l, sizeof(l), "model", model_name_of(mm, m));
        sample(o, "strata_model_loaded", l, (double)mm->status[m].n_loaded);
    }
    family(o, "strata_model_load_failures_total", "counter",
           "Loads of the model that failed (missing file, bad GGUF, out of memory).");
    for (int32_t m = 0; m < mm->n_models; m++) {
        label(l, sizeof(l), "model", model_name_of(mm, m));
        counter_u64(o, "strata_model_load_failures_total", l, mm->status[m].load_failures);
    }
    family(o, "strata_model_load_seconds", "histogram",
           "Time each load attempt of the model took, failed ones included.");
    for (int32_t m = 0; m < mm->n_models; m++) {
        label(l, sizeof(l), "model", model_name_of(mm, m));
        histogram(o, "strata_model_load_seconds", l, &mm->status[m].load_seconds);
    }
}

static void model_swaps(struct st_out *o, const struct st_metrics_models *mm)
{
    char from[ST_METRICS_LABEL_MAX], to[ST_METRICS_LABEL_MAX], l[2 * ST_METRICS_LABEL_MAX + 2];
    family(o, "strata_model_swaps_total", "counter",
           "Times an engine changed its model from 'from' to 'to' "
           "(from=\"none\": a load onto an empty engine).");
    for (size_t i = 0; i < mm->n_swaps; i++) {
        label(from, sizeof(from), "from", model_name_of(mm, mm->swaps[i].from));
        label(to, sizeof(to), "to", model_name_of(mm, mm->swaps[i].to));
        snprintf(l, sizeof(l), "%s,%s", from, to);
        counter_u64(o, "strata_model_swaps_total", l, mm->swaps[i].n);
    }
}

/* May the pair (from, to) be listed? Every pair up to ST_METRICS_ALL_PAIRS_MAX
 * models; above, the "none" row and pairs of models that have loaded. */
static bool pair_listed(const struct st_metrics_models *mm, int32_t from, int32_t to)
{
    if (from == to)
        return false;              /* an engine never swaps a model for itself */
    if (from < 0 || mm->n_models <= ST_METRICS_ALL_PAIRS_MAX)
        return true;
    return mm->status[to].loads > 0 && mm->status[from].loads > 0;
}

enum st_status st_metrics_models_take(struct st_engine_pool *p, struct st_sched *sched,
                                      struct st_metrics_models *out)
{
    memset(out, 0, sizeof(*out));
    out->pod.block_size = st_engine_pool_kv_block_size(p);
    out->pod.max_resident = st_engine_pool_n_engines(p);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    out->pod.now_unix = (double)wall.tv_sec + (double)wall.tv_nsec * 1e-9;
    int32_t n = st_engine_pool_n_models(p);
    if (n <= 0)
        return ST_OK;
    out->names = calloc((size_t)n, sizeof(*out->names));
    out->status = calloc((size_t)n, sizeof(*out->status));
    out->resident = calloc((size_t)n, sizeof(*out->resident));
    int64_t *waiting = calloc((size_t)n, sizeof(*waiting));
    if (!out->names || !out->status || !out->resident || !waiting) {
        free(waiting);
        st_metrics_models_fini(out);
        return ST_ERR_NOMEM;
    }
    if (sched)
        st_sched_models_waiting(sched, waiting, n);
    out->n_models = n;
    for (int32_t m = 0; m < n; m++) {
        out->names[m] = st_engine_pool_model_name(p, m);
        st_engine_pool_model_status(p, m, &out->status[m]);
        out->resident[m].waiting = waiting[m];
        out->resident[m].aliases = st_engine_pool_model_aliases(p, m, &out->resident[m].n_aliases);
    }
    free(waiting);
    size_t cap = 0;
    for (int32_t from = -1; from < n; from++)
        for (int32_t to = 0; to < n; to++)
            cap += pair_listed(out, from, to);
    out->swaps = calloc(cap ? cap : 1, sizeof(*out->swaps));
    if (!out->swaps) {
        st_metrics_models_fini(out);
        return ST_ERR_NOMEM;
    }
    for (int32_t from = -1; from < n; from++) {
        for (int32_t to = 0; to < n; to++) {
            if (pair_listed(out, from, to))
                out->swaps[out->n_swaps++] =
                    (struct st_metrics_swap){ from, to, st_engine_pool_swaps(p, from, to) };
        }
    }
    return ST_OK;
}

void st_metrics_models_fini(struct st_metrics_models *m)
{
    free(m->names);
    free(m->status);
    free(m->swaps);
    free(m->resident);
    memset(m, 0, sizeof(*m));
}

enum st_status st_metrics_render(struct st_buf *out, const struct st_sched_stats *ss,
                                 const struct st_pool_stats *ps, const struct st_http_stats *hs,
                                 const struct st_metrics_models *models)
{
    struct st_out o;
    st_out_init(&o, out);
    scheduler_families(&o, ss);
    slot_and_outcome_families(&o, ss);
    token_families(&o, ps);
    latency_families(&o, ps);
    if (models) {
        model_gauges(&o, models);
        model_swaps(&o, models);
    }
    http_families(&o, hs);
    st_metrics_epp_render(&o, ss, ps, models);   /* metrics_epp.c: what routers read */
    st_metrics_llamacpp(&o, ss, ps);             /* metrics_llamacpp.c: llama-server's */
    return st_out_finish(&o);
}
