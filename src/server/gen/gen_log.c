/* gen_log.c -- the one log line of a completion request: its outcome,
 * tokens and timings once every choice has ended, or why it was refused. */
#include <stdio.h>

#include "strata/log.h"
#include "server/gen/gen_view.h"

static const char *outcome_of(const struct st_gen *g)
{
    bool cancelled = false, rejected = false, failed = false;
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        if (st_gen_finished_ok(ch))
            continue;
        if (ch->status == ST_ERR_QUEUE_FULL)
            rejected = true;
        else if (ch->finish == ST_FINISH_CANCELLED &&
                 (ch->status == ST_OK || ch->status == ST_ERR_CANCELLED))
            cancelled = true;
        else
            failed = true;
    }
    return failed ? "failed" : rejected ? "rejected" : cancelled ? "cancelled" : "completed";
}

void st_gen_log_take_locked(struct st_call *c, struct st_gen_log *out)
{
    struct st_gen *g = c->gen;
    out->due = false;
    if (!g || g->logged || g->n_ended < g->n_choices)
        return;
    g->logged = true;
    out->due = true;
    snprintf(out->id, sizeof(out->id), "%s", c->request_id);
    snprintf(out->model, sizeof(out->model), "%s", g->model_name);
    out->priority = g->priority;
    out->band = g->band;
    out->n = g->n_choices;
    out->stream = g->stream;
    struct st_oai_usage u = st_gen_usage(g);
    out->prompt_tokens = u.prompt_tokens;
    out->completion_tokens = u.completion_tokens;
    int64_t first = 0;
    for (int32_t i = 0; i < g->n_choices; i++) {
        int64_t t = g->choices[i].first_token_ns;
        if (t && (!first || t < first))
            first = t;
    }
    out->ttft_ms = first ? (double)(first - c->start_ns) / 1e6 : -1.0;
    out->total_ms = (double)(st_gen_now_ns() - c->start_ns) / 1e6;
    out->outcome = outcome_of(g);
}

void st_gen_log_flush(const struct st_gen_log *l)
{
    if (!l->due)
        return;
    char prio[16], n[16], pt[24], ct[24], ttft[32], total[32];
    snprintf(prio, sizeof(prio), "%d", (int)l->priority);
    snprintf(n, sizeof(n), "%d", (int)l->n);
    snprintf(pt, sizeof(pt), "%lld", (long long)l->prompt_tokens);
    snprintf(ct, sizeof(ct), "%lld", (long long)l->completion_tokens);
    snprintf(ttft, sizeof(ttft), "%.1f", l->ttft_ms);
    snprintf(total, sizeof(total), "%.1f", l->total_ms);
    const char *keys[] = { "id", "model", "priority", "band", "n", "stream", "prompt_tokens",
                           "completion_tokens", "ttft_ms", "total_ms", "outcome" };
    const char *vals[] = { l->id, l->model, prio, st_band_name(l->band), n,
                           l->stream ? "true" : "false", pt, ct, ttft, total, l->outcome };
    const bool num[] = { false, false, true, false, true, true, true, true, true, true, false };
    st_log_kv(ST_LOG_INFO, "http", "request", (int)ST_ARRAY_LEN(keys), keys, vals, num);
}

void st_gen_log_refused(struct st_call *c, const struct st_api_error *e)
{
    char status[8];
    snprintf(status, sizeof(status), "%d", st_api_error_http(e));
    const char *keys[] = { "id", "outcome", "status", "param", "error" };
    const char *vals[] = { c->request_id, "refused", status, e->param, e->message };
    const bool num[] = { false, false, true, false, false };
    st_log_kv(ST_LOG_INFO, "http", "request", (int)ST_ARRAY_LEN(keys), keys, vals, num);
}
