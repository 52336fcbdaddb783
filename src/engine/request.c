/* request.c -- the life of a struct st_request: creation, references,
 * generation-parameter defaults, and the plain END event.
 *
 * A request crosses threads (HTTP creates it, the scheduler queues it, an
 * engine serves it), so it is reference counted: the creator's reference
 * plus one for the engine side while it is submitted. The last unref frees
 * it, after calling the owner's on_free hook.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "strata/call_grammar.h"
#include "strata/defaults.h"
#include "strata/gbnf.h"
#include "strata/json_schema.h"

void st_gen_params_defaults(struct st_gen_params *p)
{
    memset(p, 0, sizeof(*p));
    p->max_tokens = -1;
    p->temperature = ST_DEFAULT_TEMPERATURE;
    p->top_p = ST_DEFAULT_TOP_P;
    p->top_k = ST_DEFAULT_TOP_K;
    p->min_p = ST_DEFAULT_MIN_P;
    p->repeat_penalty = 1.0f;
    p->repeat_last_n = 64;
    p->think_budget = -1;
}

enum st_status st_gen_params_copy_bias(struct st_gen_params *dst, const struct st_gen_params *src)
{
    dst->logit_bias = NULL;
    dst->n_logit_bias = 0;
    if (src->n_logit_bias <= 0 || !src->logit_bias)
        return ST_OK;
    size_t bytes = (size_t)src->n_logit_bias * sizeof(*src->logit_bias);
    dst->logit_bias = malloc(bytes);
    if (!dst->logit_bias)
        return ST_ERR_NOMEM;
    memcpy(dst->logit_bias, src->logit_bias, bytes);
    dst->n_logit_bias = src->n_logit_bias;
    return ST_OK;
}

const char *st_finish_name(enum st_finish f)
{
    switch (f) {
    case ST_FINISH_STOP:
        return "stop";
    case ST_FINISH_LENGTH:
        return "length";
    case ST_FINISH_CANCELLED:
        return "cancelled";
    case ST_FINISH_ERROR:
        return "error";
    }
    return "unknown";
}

struct st_request *st_request_new(void)
{
    struct st_request *req = calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    atomic_init(&req->refs, 1);
    atomic_init(&req->cancelled, false);
    st_gen_params_defaults(&req->params);
    req->band = ST_BAND_NORMAL;
    req->job.state = ST_JOB_NEW;
    req->job.engine = -1;
    req->job.slot = -1;
    req->stop_index = -1;
    return req;
}

void st_request_ref(struct st_request *req)
{
    atomic_fetch_add_explicit(&req->refs, 1, memory_order_relaxed);
}

void st_request_unref(struct st_request *req)
{
    if (!req)
        return;
    /* acq_rel: the thread that frees must see every write made by the
     * threads that dropped their references before it. */
    if (atomic_fetch_sub_explicit(&req->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (req->on_free)
        req->on_free(req);
    for (int i = 0; i < ST_MAX_STOP; i++)
        free(req->params.stop[i]);
    free(req->params.logit_bias);
    st_json_schema_unref(req->params.json_schema);
    st_call_grammar_unref(req->params.tool_calls);
    st_gbnf_unref(req->params.grammar);
    free(req->prompt);
    free(req->tokens);
    free(req);
}

void st_request_emit_end(struct st_request *req, enum st_finish finish, enum st_status status,
                         const char *error, int64_t n_generated)
{
    struct st_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = ST_EVENT_END;
    ev.text = "";
    ev.text_len = 0;
    ev.token = -1;
    ev.finish = finish;
    ev.status = status;
    ev.error = error;
    ev.n_prompt = req->n_tokens;
    ev.n_generated = n_generated;
    ev.n_cached = req->n_cached;
    if (finish == ST_FINISH_STOP && req->stop_index >= 0 && req->stop_index < req->params.n_stop)
        ev.stop_text = req->params.stop[req->stop_index];
    if (req->emit)
        req->emit(req->emit_ctx, &ev);
}

bool st_engine_prompt_wanted(const struct st_request *req)
{
    return req->params.echo || req->params.prompt_logprobs;
}

int32_t st_engine_prompt_top(const struct st_request *req)
{
    return ST_MIN(ST_MAX(req->params.prompt_top_logprobs, 0), ST_RUNNER_SCORE_TOP);
}
