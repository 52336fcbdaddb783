/* gen_submit.c -- a parsed completion body -> engine requests, submitted.
 *
 * Steps, each answering the client at once when it fails:
 *   model     "model" names one of the pool's models by name or alias
 *             (404 model_not_found); absent = the first; with one model
 *             served, any name runs on it (as with llama-server)
 *   ready     the engines have loaded (else 503, Retry-After: 1)
 *   priority  body "priority", X-LlamaSwap-Priority, the API key's defaults
 *             and cap, the model's priority (docs/design/SCHEDULER.md section 2)
 *   room      a full queue this priority outranks nobody in: 429 queue_full
 *             before the prompt is rendered or tokenized (st_gen_check_room)
 *   prompts   chat: the model's template over the messages; completions:
 *             the prompt text, or the client's token ids as given
 *   budget    chat: the thinking budget (body or --reasoning-budget) for a
 *             prompt whose reply may think: the closing sequence's tokens
 *             (docs/API.md "Thinking budget"); budget 0 also asks the
 *             template not to think (enable_thinking false, unless the body
 *             set it)
 *   prepare   tokenize and check the context (400 context_length_exceeded;
 *             a prompt whose byte length alone proves it too long is
 *             refused before the tokenizer runs: engine/text.c)
 *   submit    one engine request per choice (prompts x n); a full queue is
 *             429 with Retry-After, a model in its load back-off 503 with
 *             the reason and Retry-After (the seconds until the next try),
 *             and every choice already queued is cancelled so nothing is
 *             left behind.
 * Then the call waits (suspended) for events: gen_emit.c and gen.c take over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server/gen/gen.h"
#include "server/gen/gen_vocab.h"
#include "strata/call_grammar.h"
#include "strata/gbnf.h"
#include "strata/json_schema.h"
#include "strata/log.h"
#include "strata/think_block.h"

enum st_status st_gen_pick_model(struct st_call *c, const char *name, int32_t *model,
                                 struct st_api_error *e)
{
    struct st_engine_pool *pool = c->srv->pool;
    *model = st_engine_pool_pick_model(pool, name);
    if (*model >= 0)
        return ST_OK;
    if (!name)
        return st_api_error_set(e, ST_ERR_NOT_FOUND, "model", "model_not_found",
                                "No model is configured.");
    return st_api_error_set(e, ST_ERR_NOT_FOUND, "model", "model_not_found",
                            "The model `%.120s` does not exist. GET /v1/models lists the models "
                            "this server has.", name);
}

enum st_status st_gen_check_ready(struct st_call *c, struct st_api_error *e)
{
    if (st_engine_pool_ready(c->srv->pool))
        return ST_OK;
    st_api_error_set(e, ST_ERR_LOADING, NULL, "model_loading",
                     "The model is loading; retry in a moment.");
    e->retry_after_s = 1;
    return ST_ERR_LOADING;
}

static int32_t model_priority(const struct st_server *srv, int32_t model)
{
    if (!srv->cfg.model_priority || model < 0 || (size_t)model >= srv->cfg.n_model_priority)
        return 0;
    return srv->cfg.model_priority[model];
}

int32_t st_gen_priority(struct st_call *c, bool has_body, int32_t body, int32_t model)
{
    struct st_priority_inputs in;
    memset(&in, 0, sizeof(in));
    in.has_body = has_body;
    in.body = body;
    const char *h = st_call_header(c, "X-LlamaSwap-Priority");
    if (h)
        in.has_header = st_priority_parse_header_ex(st_str_c(h), &in.header, &in.has_alias);
    if (c->key) {
        in.has_key_default = c->key->has_default_priority;
        in.key_default = c->key->default_priority;
        in.has_key_max = c->key->has_max_priority;
        in.key_max = c->key->max_priority;
    }
    in.model_priority = model_priority(c->srv, model);
    in.order = c->srv->cfg.priority_order;
    return st_priority_resolve(&in);
}

static struct st_gen *gen_setup(struct st_call *c, const struct st_oai_request *oq,
                                const struct st_gen_shape *shape, int32_t model, int32_t prio)
{
    int32_t per_prompt = oq->n;
    size_t n_prompts = oq->kind == ST_OAI_CHAT ? 1 : oq->n_prompts;
    struct st_gen *g = st_gen_new(per_prompt * (int32_t)n_prompts);
    if (!g)
        return NULL;
    g->kind = oq->kind;
    g->stream = oq->stream;
    g->include_usage = oq->stream && oq->include_usage;
    g->logprobs = oq->params.logprobs;
    g->echo = oq->kind == ST_OAI_COMPLETION && oq->echo;
    g->llama = oq->llama;                         /* llama-server's answer options */
    g->llama.settings = NULL;
    if (oq->llama.settings && !(g->llama.settings = strdup(oq->llama.settings))) {
        st_gen_free(g);
        return NULL;
    }
    g->echo_top = oq->params.top_logprobs;
    g->prompt_lp = oq->prompt_logprobs;
    g->shape = shape;   /* before any event can come */
    snprintf(g->id, sizeof(g->id), "%s%s", shape->id_prefix, c->request_id);
    st_gen_set_model(c, g, model, prio);
    for (int32_t i = 0; i < g->n_choices; i++)
        g->choices[i].prompt = i / per_prompt;
    return g;
}

void st_gen_set_model(struct st_call *c, struct st_gen *g, int32_t model, int32_t prio)
{
    const char *name = st_engine_pool_model_name(c->srv->pool, model);
    snprintf(g->model_name, sizeof(g->model_name), "%s", name ? name : "");
    g->created = st_unix_seconds();
    g->model = model;
    g->priority = prio;
    g->band = st_band_of(prio);
}

/* The prompt text of prompt p (owned). Token prompts are detokenized so the
 * request also has its text; their ids are used as given. */
static enum st_status render_prompt(struct st_call *c, const struct st_oai_request *oq,
                                    int32_t model, size_t p, const struct st_chat_request *chat,
                                    char **text, struct st_api_error *e)
{
    struct st_engine_pool *pool = c->srv->pool;
    struct st_err err = { 0 };
    enum st_status rc;
    if (oq->kind == ST_OAI_CHAT) {
        rc = st_engine_pool_apply_template(pool, model, chat, st_oai_chat_ending(oq), text,
                                           &err);
    } else if (oq->prompts[p].text) {
        *text = st_str_dup(st_str_c(oq->prompts[p].text));
        rc = *text ? ST_OK : st_err_set(&err, ST_ERR_NOMEM, "out of memory");
    } else {
        rc = st_engine_pool_detokenize(pool, model, oq->prompts[p].tokens,
                                       oq->prompts[p].n_tokens, text, &err);
    }
    if (rc == ST_ERR_LOADING) {   /* the template needs the model: its load failed */
        st_api_error_set(e, rc, NULL, NULL, "%s", err.msg[0] ? err.msg : st_status_msg(rc));
        st_gen_load_failed(c, model, e);
    } else if (rc != ST_OK) {
        st_api_error_set(e, rc, oq->kind == ST_OAI_CHAT ? "messages" : "prompt", NULL, "%s",
                         err.msg[0] ? err.msg : st_status_msg(rc));
    }
    return rc;
}

/* Copy the parameters; each choice of one prompt gets its own seed. */
static enum st_status copy_params(struct st_gen_params *dst, const struct st_gen_params *src,
                                  int32_t j)
{
    *dst = *src;
    if (dst->json_schema)   /* immutable: each request holds a reference */
        st_json_schema_ref(dst->json_schema);
    if (dst->grammar)
        st_gbnf_ref(dst->grammar);
    dst->n_stop = 0;
    memset(dst->stop, 0, sizeof(dst->stop));
    if (st_gen_params_copy_bias(dst, src) != ST_OK)   /* each request owns its copy */
        return ST_ERR_NOMEM;
    for (int32_t i = 0; i < src->n_stop; i++) {
        dst->stop[i] = st_str_dup(st_str_c(src->stop[i]));
        if (!dst->stop[i])
            return ST_ERR_NOMEM;
        dst->n_stop = i + 1;
    }
    dst->seed = src->seed + (uint64_t)j;
    return ST_OK;
}

/* Token prompts: the client's ids, checked against the context and the
 * vocabulary (an id the model lacks would fail the whole step it shares
 * with other requests, so it is a 400 here). */
enum st_status st_gen_use_tokens(struct st_call *c, struct st_request *req,
                                 const struct st_oai_prompt *pr, const char *param,
                                 struct st_api_error *e)
{
    int64_t ctx = st_engine_pool_ctx_size(c->srv->pool, req->model);
    if ((int64_t)pr->n_tokens >= ctx) {
        st_api_error_set(e, ST_ERR_TOO_LONG, param, "context_length_exceeded",
                         "the %s has %zu tokens, which exceeds the available context size: a "
                         "slot holds %lld (prompt and completion together)", param, pr->n_tokens,
                         (long long)ctx);
        e->n_prompt_tokens = (int64_t)pr->n_tokens;
        e->n_ctx = ctx;
        return ST_ERR_TOO_LONG;
    }
    struct st_err err = { 0 };
    int32_t n_vocab = 0;
    enum st_status rc = st_engine_pool_n_vocab(c->srv->pool, req->model, &n_vocab, &err);
    if (rc != ST_OK)
        return st_api_error_set(e, rc, NULL, NULL, "%s", err.msg[0] ? err.msg
                                                                   : st_status_msg(rc));
    for (size_t i = 0; i < pr->n_tokens; i++) {
        if (pr->tokens[i] >= n_vocab)
            return st_api_error_set(e, ST_ERR_INVALID, param, NULL,
                                    "%s token %zu is %d, not a token of this model (ids 0 "
                                    "to %d)", param, i, (int)pr->tokens[i], (int)n_vocab - 1);
    }
    req->tokens = malloc(pr->n_tokens * sizeof(*req->tokens));
    if (!req->tokens)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    memcpy(req->tokens, pr->tokens, pr->n_tokens * sizeof(*req->tokens));
    req->n_tokens = (int64_t)pr->n_tokens;
    req->job.prompt_tokens = req->n_tokens;
    return ST_OK;
}

enum st_status st_gen_prepare(struct st_call *c, struct st_request *req, const char *param,
                              struct st_api_error *e)
{
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_prepare(c->srv->pool, req, &err);
    if (rc != ST_OK)
        st_api_error_set(e, rc, param, rc == ST_ERR_TOO_LONG ? "context_length_exceeded" : NULL,
                         "%s", err.msg[0] ? err.msg : st_status_msg(rc));
    if (rc == ST_ERR_TOO_LONG) {
        e->n_prompt_tokens = req->job.prompt_tokens;
        e->n_ctx = st_engine_pool_ctx_size(c->srv->pool, req->model);
    }
    return rc;
}

/* A constrained reply (response_format json_object / json_schema, a
 * grammar, an enforced tool_choice) ends only where its grammar lets it: stop strings
 * are not applied to it (docs/API.md "response_format": they could only
 * cut the document or the think block before it). */
static void drop_stops_if_constrained(struct st_gen_params *p)
{
    if ((!p->json_object && !p->json_schema && !p->grammar && !p->tool_calls) ||
        p->n_stop == 0)
        return;
    st_log(ST_LOG_DEBUG, "server", "%d stop string(s) not applied: the reply is constrained",
           (int)p->n_stop);
    for (int32_t i = 0; i < p->n_stop; i++) {
        free(p->stop[i]);
        p->stop[i] = NULL;
    }
    p->n_stop = 0;
}

/* The thinking budget of a chat request, the same for all its choices. */
struct budget {
    int32_t budget;                /* -1: none */
    uint8_t mode, tags;            /* enum st_think_mode / st_think_tags */
    int32_t close[2][ST_THINK_CLOSE_MAX];
    int32_t n_close[2];
};

static int32_t budget_wanted(const struct st_call *c, const struct st_oai_request *oq)
{
    if (oq->kind != ST_OAI_CHAT)
        return -1;
    return oq->has_thinking_budget ? oq->thinking_budget : c->srv->cfg.reasoning_budget;
}

/* Budget 0 asks the template not to think (Qwen3's enable_thinking
 * false) unless the body's chat_template_kwargs says otherwise: an owned
 * kwargs object, or NULL to keep the body's (also when out of memory). */
static cJSON *budget_kwargs(const struct st_oai_request *oq, int32_t budget)
{
    return budget == 0 ? st_chat_request_kwargs_no_think(&oq->chat) : NULL;
}

/* The tokens of 'text' (special tokens parsed) into out (at most
 * ST_THINK_CLOSE_MAX; 0 when it takes more or fails). */
static int32_t close_tokens(struct st_call *c, int32_t model, const char *text, int32_t *out)
{
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_err err = { 0 };
    if (st_engine_pool_tokenize(c->srv->pool, model, text, strlen(text), false, true, &ids, &n,
                                &err) != ST_OK || n > ST_THINK_CLOSE_MAX)
        n = 0;
    if (n)
        memcpy(out, ids, n * sizeof(*ids));
    free(ids);
    return (int32_t)n;
}

/* The budget for this prompt: ignored (-1) where the reply cannot think. */
static void budget_setup(struct st_call *c, const struct st_gen *g,
                         const struct st_oai_request *oq, const char *text, bool constrained,
                         struct budget *b)
{
    memset(b, 0, sizeof(*b));
    b->budget = -1;
    int32_t want = budget_wanted(c, oq);
    if (want < 0)
        return;
    enum st_think_tags tags;
    enum st_think_mode m = st_gen_reply_budget_think(oq, c->srv->cfg.reasoning_format, text,
                                                     g->think_vocab, constrained, &tags);
    if (m == ST_THINK_NONE) {
        st_log(ST_LOG_DEBUG, "server", "thinking budget %d ignored: the reply cannot open a "
               "think block", (int)want);
        return;
    }
    /* the tag and what the template puts after it (Qwen3: "\n\n") */
    if (tags != ST_THINK_SQUARE)
        b->n_close[ST_THINK_ANGLE] = close_tokens(c, g->model, "\n</think>\n\n",
                                                  b->close[ST_THINK_ANGLE]);
    if (tags != ST_THINK_ANGLE)
        b->n_close[ST_THINK_SQUARE] = close_tokens(c, g->model, "[/THINK]",
                                                   b->close[ST_THINK_SQUARE]);
    b->budget = want;
    b->mode = (uint8_t)m;
    b->tags = (uint8_t)tags;
    st_log(ST_LOG_DEBUG, "server", "thinking budget %d tokens (think block %s)", (int)want,
           m == ST_THINK_OPEN ? "open" : "optional");
}

static void budget_apply(const struct budget *b, struct st_gen_params *p)
{
    p->think_budget = b->budget;
    p->think_mode = b->mode;
    p->think_tags = b->tags;
    memcpy(p->think_close, b->close, sizeof(p->think_close));
    memcpy(p->n_think_close, b->n_close, sizeof(p->n_think_close));
}

/* req's prompt: prompt p's rendered 'text' and its tokens, or the client's
 * ids as given. The one place a generation's prompt tokens come from, so
 * the render endpoints (st_gen_prompt_tokens) answer the same ids. */
static enum st_status set_prompt(struct st_call *c, const struct st_oai_request *oq, size_t p,
                                 const char *text, struct st_request *req,
                                 struct st_api_error *e)
{
    req->prompt = st_str_dup(st_str_c(text));
    if (!req->prompt)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    const struct st_oai_prompt *pr = oq->kind == ST_OAI_COMPLETION ? &oq->prompts[p] : NULL;
    if (pr && pr->tokens)
        return st_gen_use_tokens(c, req, pr, "prompt", e);
    return st_gen_prepare(c, req, oq->kind == ST_OAI_CHAT ? "messages" : "prompt", e);
}

/* calls: tool_choice's grammar (gen_reply.c) or NULL; the request takes
 * its own reference. */
static enum st_status make_request(struct st_call *c, struct st_gen *g,
                                   const struct st_oai_request *oq, struct st_gen_choice *ch,
                                   const char *text, struct st_call_grammar *calls,
                                   const struct budget *bud, struct st_api_error *e)
{
    struct st_request *req = st_gen_request_new(c, g, ch);
    if (!req)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    req->no_prompt_cache = !oq->cache_prompt;
    if (copy_params(&req->params, &oq->params, ch->index % oq->n) != ST_OK)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    if (req->params.max_tokens < 0)   /* none sent: the server's --n-predict */
        req->params.max_tokens = c->srv->cfg.n_predict;
    req->params.progress = req->params.progress && oq->stream;   /* only a stream shows it */
    if (calls) {   /* takes the place of response_format in the sampler */
        st_call_grammar_ref(calls);
        req->params.tool_calls = calls;
    } else {
        st_gen_reply_json_think(oq, c->srv->cfg.reasoning_format, text, g->json_think_vocab,
                                &req->params);
    }
    drop_stops_if_constrained(&req->params);
    budget_apply(bud, &req->params);
    return set_prompt(c, oq, (size_t)ch->prompt, text, req, e);
}

struct st_request *st_gen_request_new(struct st_call *c, struct st_gen *g,
                                      struct st_gen_choice *ch)
{
    struct st_request *req = st_request_new();
    if (!req)
        return NULL;
    st_call_ref(c);                     /* dropped by on_free */
    req->emit = st_gen_emit;
    req->emit_ctx = ch;
    req->on_free = st_gen_req_on_free;
    ch->call = c;
    ch->req = req;
    snprintf(req->id, sizeof(req->id), "%s", c->request_id);
    snprintf(req->job.request_id, sizeof(req->job.request_id), "%s", c->request_id);
    req->model = g->model;
    req->choice = ch->index;
    req->job.priority = g->priority;
    req->job.model = g->model;
    req->band = g->band;
    return req;
}

/* The request's chat with the thinking budget's kwargs (a view: borrows
 * oq's); returns the kwargs it made, for the caller to delete, or NULL. */
static cJSON *chat_with_budget(struct st_call *c, const struct st_oai_request *oq,
                               struct st_chat_request *chat)
{
    *chat = oq->chat;
    cJSON *kwargs = budget_kwargs(oq, budget_wanted(c, oq));
    if (kwargs)
        chat->kwargs = kwargs;
    return kwargs;
}

enum st_status st_gen_prompt_tokens(struct st_call *c, const struct st_oai_request *oq,
                                    size_t p, struct st_request *req, struct st_api_error *e)
{
    struct st_chat_request chat;
    cJSON *kwargs = chat_with_budget(c, oq, &chat);
    char *text = NULL;
    enum st_status rc = render_prompt(c, oq, req->model, p, &chat, &text, e);
    cJSON_Delete(kwargs);
    if (rc == ST_OK)
        rc = set_prompt(c, oq, p, text, req, e);
    free(text);
    return rc;
}

/* llama-server's "__verbose" (the body's "verbose", else on with
 * --verbose): OpenAI-shaped chat and completions answers, not streamed. */
static bool want_verbose(const struct st_gen *g,
                         const struct st_oai_request *oq)
{
    bool on = oq->verbose >= 0 ? oq->verbose == 1 : st_log_enabled(ST_LOG_DEBUG);
    return on && !g->stream && g->shape->verbose;
}

static enum st_status build_requests(struct st_call *c, struct st_gen *g,
                                     const struct st_oai_request *oq, struct st_api_error *e)
{
    enum st_status rc = st_gen_check_bias(c, oq, g->model, e);
    bool constrained = oq->params.json_object || oq->params.json_schema || oq->params.grammar ||
                       oq->tool_choice == ST_OAI_TOOLS_REQUIRED ||
                       oq->tool_choice == ST_OAI_TOOLS_FUNCTION;
    int32_t budget = budget_wanted(c, oq);
    /* only a constrained reply or a thinking budget asks */
    if (oq->kind == ST_OAI_CHAT && (constrained || budget >= 0))
        g->think_vocab = st_gen_think_vocab(c, g->model);
    /* a thinking budget or enable_thinking true asks for the block whatever
     * the template */
    if (g->think_vocab && constrained)
        g->json_think_vocab = budget >= 0 ||
                              cJSON_IsTrue(st_chat_request_kwarg(&oq->chat, "enable_thinking")) ||
                              st_gen_template_thinks(c, g->model) ? g->think_vocab : 0;
    struct st_chat_request chat;
    cJSON *kwargs = chat_with_budget(c, oq, &chat);
    struct budget bud = { .budget = -1 };
    for (int32_t i = 0; i < g->n_choices && rc == ST_OK; i += oq->n) {
        char *text = NULL;
        struct st_call_grammar *calls = NULL;
        rc = render_prompt(c, oq, g->model, (size_t)g->choices[i].prompt, &chat, &text, e);
        if (rc == ST_OK && i == 0 &&   /* chat: one prompt; replies parsed (gen_reply.c) */
            (st_gen_reply_setup(g, oq, c->srv->cfg.reasoning_format, text) != ST_OK ||
             st_gen_reply_calls(oq, c->srv->cfg.reasoning_format, text, g->think_vocab,
                                &calls) != ST_OK))
            rc = st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
        if (rc == ST_OK && i == 0 && want_verbose(g, oq) &&
            !(g->verbose_prompt = strdup(text)))
            rc = st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
        if (rc == ST_OK && i == 0)
            budget_setup(c, g, oq, text, oq->params.json_object || oq->params.json_schema ||
                                             oq->params.grammar || calls, &bud);
        for (int32_t j = 0; j < oq->n && rc == ST_OK; j++)
            rc = make_request(c, g, oq, &g->choices[i + j], text, calls, &bud, e);
        st_call_grammar_unref(calls);
        free(text);
    }
    cJSON_Delete(kwargs);
    return rc;
}

void st_gen_end_rest(struct st_call *c, struct st_gen *g, int32_t from,
                     const struct st_api_error *e)
{
    /* Nothing reached an engine and the request itself is at fault (a
     * prompt too long for the context: a 4xx, not a full queue's 429): its
     * log line is a refusal with its status, as for a body refused at parse
     * (docs/API.md), not 'failed', which says an engine failed it. */
    int http = st_api_error_http(e);
    bool refused = from == 0 && http >= 400 && http < 500 && http != 429;
    struct st_gen_log log;
    pthread_mutex_lock(&c->lock);
    for (int32_t i = from; i < g->n_choices; i++)
        st_gen_end_unsubmitted_locked(c, &g->choices[i], e->status, e->message);
    st_gen_log_take_locked(c, &log);
    pthread_mutex_unlock(&c->lock);
    if (refused && log.due)
        st_gen_log_refused(c, e);
    else
        st_gen_log_flush(&log);
}

/* A full queue's 429: code queue_full, Retry-After 1. */
static enum st_status queue_full(struct st_api_error *e, const struct st_err *err)
{
    st_api_error_set(e, ST_ERR_QUEUE_FULL, NULL, "queue_full", "%s",
                     err->msg[0] ? err->msg : st_status_msg(ST_ERR_QUEUE_FULL));
    e->retry_after_s = 1;
    return ST_ERR_QUEUE_FULL;
}

enum st_status st_gen_check_room(struct st_call *c, const struct st_gen *g,
                                 struct st_api_error *e)
{
    struct st_err err = { 0 };
    if (st_engine_pool_check_room(c->srv->pool, g->priority, &err) != ST_OK)
        return queue_full(e, &err);
    return ST_OK;
}

enum st_status st_gen_submit_all(struct st_call *c, struct st_gen *g, struct st_api_error *e)
{
    for (int32_t i = 0; i < g->n_choices; i++) {
        struct st_gen_choice *ch = &g->choices[i];
        pthread_mutex_lock(&c->lock);
        ch->submitted = true;           /* before: an engine may END it at once */
        pthread_mutex_unlock(&c->lock);
        struct st_err err = { 0 };
        enum st_status rc = st_engine_pool_submit(c->srv->pool, ch->req, &err);
        if (rc == ST_OK)
            continue;
        pthread_mutex_lock(&c->lock);
        ch->submitted = false;
        pthread_mutex_unlock(&c->lock);
        if (rc == ST_ERR_QUEUE_FULL) {
            queue_full(e, &err);
        } else {
            st_api_error_set(e, rc, NULL, NULL, "%s", err.msg[0] ? err.msg : st_status_msg(rc));
            if (rc == ST_ERR_LOADING)   /* err says why and when it retries */
                st_gen_load_failed(c, g->model, e);
        }
        st_gen_end_rest(c, g, i, e);
        st_gen_cancel_all(c);           /* the choices already queued */
        return rc;
    }
    return ST_OK;
}

enum st_route_result st_gen_start(struct st_call *c, struct st_oai_request *oq,
                                  const struct st_gen_shape *shape)
{
    struct st_api_error e;
    int32_t model;
    st_gen_server_defaults(c, oq);
    if (st_gen_pick_model(c, oq->model, &model, &e) != ST_OK ||
        st_gen_check_ready(c, &e) != ST_OK ||
        (oq->bias_text && st_gen_bias_text(c, oq, model, &e) != ST_OK) ||
        st_gen_mixed_prompts(c, oq, model, &e) != ST_OK) {
        st_gen_shape_free(shape);
        st_gen_log_refused(c, &e);
        return st_reply_error(c, &e);
    }
    struct st_gen *g = gen_setup(c, oq, shape, model,
                                 st_gen_priority(c, oq->has_priority, oq->priority, model));
    if (!g) {
        st_gen_shape_free(shape);
        return st_reply_nomem(c);
    }
    pthread_mutex_lock(&c->lock);
    c->gen = g;                         /* freed with the call */
    pthread_mutex_unlock(&c->lock);
    if (st_gen_check_room(c, g, &e) != ST_OK) {
        st_gen_end_rest(c, g, 0, &e);
        return st_reply_error(c, &e);
    }
    if (build_requests(c, g, oq, &e) != ST_OK) {
        if (shape->messages_param && strcmp(e.param, "messages") == 0)   /* the template's input */
            snprintf(e.param, sizeof(e.param), "%s", shape->messages_param);
        st_gen_end_rest(c, g, 0, &e);
        return st_reply_error(c, &e);
    }
    if (st_gen_submit_all(c, g, &e) != ST_OK)
        return st_reply_error(c, &e);
    return ST_ROUTE_WAIT;
}

void st_gen_server_defaults(const struct st_call *c, struct st_oai_request *oq)
{
    const struct st_server_config *cfg = &c->srv->cfg;
    if (!oq->temp_sent)
        oq->params.temperature = cfg->temp;
    if (!oq->seed_sent && cfg->seed >= 0) {
        oq->params.has_seed = true;
        oq->params.seed = (uint64_t)cfg->seed;
    }
}
