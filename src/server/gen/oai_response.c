/* oai_response.c -- engine events -> OpenAI JSON, the only place that knows
 * the response wire format. Shapes (one line each on the wire):
 *
 * chat chunk       {"id":"chatcmpl-..","object":"chat.completion.chunk","created":T,
 *                   "model":"m","choices":[{"index":0,"delta":{"content":"Hi"},
 *                   "logprobs":null,"finish_reason":null}]}
 * completion chunk {"id":"cmpl-..","object":"text_completion","created":T,"model":"m",
 *                   "choices":[{"index":0,"text":"Hi","logprobs":null,"finish_reason":null}]}
 * usage chunk      {...,"choices":[],"usage":{"prompt_tokens":..,"completion_tokens":..,
 *                   "total_tokens":..,"prompt_tokens_details":{"cached_tokens":..},
 *                   "completion_tokens_details":{"reasoning_tokens":..}}}
 * bodies           "chat.completion" with choices[].message, "text_completion" with
 *                   choices[].text; both with "usage".
 * logprobs         chat: {"content":[{"token","logprob","bytes","top_logprobs":[..]}]}
 *                  completions (legacy): {"tokens":[..],"token_logprobs":[..],
 *                   "top_logprobs":[{"tok":lp,..}],"text_offset":[..]}; with echo the
 *                   prompt's tokens lead, the first with null logprob and top_logprobs
 * prompt_logprobs  (vLLM) [null,{"<id>":{"logprob":..,"rank":..,"decoded_token":".."},..},..]:
 *                   completions per choice, chat at the top level beside "choices"
 *
 * parsed chat (tool calls and reasoning, docs/API.md):
 *   message          {"role":"assistant","content":null|"..","reasoning_content":"..",
 *                     "tool_calls":[{"id":"call_..","type":"function",
 *                     "function":{"name":"f","arguments":"{..}"}}]}
 *   deltas           {"reasoning_content":".."}, {"content":".."},
 *                    {"tool_calls":[{"index":i,"id":..,"type":"function",
 *                     "function":{"name":"f","arguments":""}}]}, then
 *                    {"tool_calls":[{"index":i,"function":{"arguments":".."}}]}
 *
 * With stream_options.include_usage every chunk carries "usage":null and
 * one last chunk carries the usage with "choices":[] (as OpenAI does).
 * Renderers append to 'out' and return ST_ERR_NOMEM on allocation failure.
 */
#include <string.h>

#include "server/gen/gen.h"

const char *st_oai_finish_reason(enum st_finish f)
{
    switch (f) {
    case ST_FINISH_STOP:      return "stop";
    case ST_FINISH_LENGTH:    return "length";
    case ST_FINISH_CANCELLED: return "stop";
    case ST_FINISH_ERROR:     return "stop";
    }
    return "stop";
}

static const char *object_name(enum st_oai_kind k, bool chunk)
{
    if (k == ST_OAI_CHAT)
        return chunk ? "chat.completion.chunk" : "chat.completion";
    return "text_completion";
}

/* {"id":..,"object":..,"created":..,"model":..,"choices":[ */
static enum st_status head(struct st_buf *out, const struct st_oai_meta *m, bool chunk)
{
    enum st_status rc = st_buf_append(out, ST_LIT("{\"id\":"));
    if (rc == ST_OK)
        rc = st_json_cstr(out, m->id);
    if (rc == ST_OK)
        rc = st_buf_printf(out, ",\"object\":\"%s\",\"created\":%lld,\"model\":",
                           object_name(m->kind, chunk), (long long)m->created);
    if (rc == ST_OK)
        rc = st_json_cstr(out, m->model);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"choices\":["));
    return rc;
}

/* ]} closing a chunk, with "usage":null when the client asked for usage. */
static enum st_status chunk_tail(struct st_buf *out, const struct st_oai_meta *m)
{
    if (m->include_usage)
        return st_buf_append(out, ST_LIT("],\"usage\":null}"));
    return st_buf_append(out, ST_LIT("]}"));
}

/* The bytes of a top-logprob candidate's token (n_bytes clamped). */
static size_t top_len(const struct st_top_logprob *t)
{
    return t->n_bytes < 0 ? 0 : (size_t)ST_MIN(t->n_bytes, (int32_t)sizeof(t->bytes));
}

/* {"token":..,"logprob":..,"bytes":[..]  (left open: the fields every chat
 * logprob entry starts with). */
static enum st_status token_fields(struct st_buf *out, const char *text, size_t n,
                                   double logprob)
{
    enum st_status rc = st_buf_append(out, ST_LIT("{\"token\":"));
    if (rc == ST_OK)
        rc = st_json_str(out, text, n);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"logprob\":"));
    if (rc == ST_OK)
        rc = st_json_num(out, logprob);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"bytes\":"));
    if (rc == ST_OK)
        rc = st_json_bytes(out, text, n);
    return rc;
}

static enum st_status top_entry(struct st_buf *out, const struct st_top_logprob *t)
{
    enum st_status rc = token_fields(out, t->bytes, top_len(t), t->logprob);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT("}"));
    return rc;
}

/* One chat logprobs "content" entry. */
static enum st_status chat_lp_entry(struct st_buf *out, const struct st_oai_logprob *lp)
{
    enum st_status rc = token_fields(out, lp->text, lp->text_len, lp->logprob);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"top_logprobs\":["));
    for (int32_t i = 0; i < lp->n_top && rc == ST_OK; i++) {
        if (i)
            rc = st_buf_append(out, ST_LIT(","));
        if (rc == ST_OK)
            rc = top_entry(out, &lp->top[i]);
    }
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT("]}"));
    return rc;
}

/* "tok":lp inside the legacy top_logprobs item. */
static enum st_status legacy_pair(struct st_buf *out, bool first, const char *text, size_t n,
                                  double logprob)
{
    enum st_status rc = first ? ST_OK : st_buf_append(out, ST_LIT(","));
    if (rc == ST_OK)
        rc = st_json_str(out, text, n);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(":"));
    if (rc == ST_OK)
        rc = st_json_num(out, logprob);
    return rc;
}

/* The legacy top_logprobs item: {"tok": lp, ...} (null for a null entry;
 * with add_self the token itself when it is not among the alternatives). */
static enum st_status legacy_top(struct st_buf *out, const struct st_oai_logprob *lp)
{
    if (lp->null_entry)
        return st_buf_append(out, ST_LIT("null"));
    enum st_status rc = st_buf_append(out, ST_LIT("{"));
    bool self = false;
    for (int32_t i = 0; i < lp->n_top && rc == ST_OK; i++) {
        const struct st_top_logprob *t = &lp->top[i];
        self |= t->token == lp->token;
        rc = legacy_pair(out, i == 0, t->bytes, top_len(t), t->logprob);
    }
    if (rc == ST_OK && lp->add_self && !self)
        rc = legacy_pair(out, lp->n_top == 0, lp->text, lp->text_len, lp->logprob);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT("}"));
    return rc;
}

void st_oai_lp_acc_init(struct st_oai_lp_acc *a)
{
    st_buf_init(&a->content);
    st_buf_init(&a->tokens);
    st_buf_init(&a->token_logprobs);
    st_buf_init(&a->top_logprobs);
    st_buf_init(&a->text_offset);
    a->n = 0;
}

void st_oai_lp_acc_fini(struct st_oai_lp_acc *a)
{
    st_buf_fini(&a->content);
    st_buf_fini(&a->tokens);
    st_buf_fini(&a->token_logprobs);
    st_buf_fini(&a->top_logprobs);
    st_buf_fini(&a->text_offset);
    a->n = 0;
}

enum st_status st_oai_lp_acc_add(struct st_oai_lp_acc *a, enum st_oai_kind kind,
                                 const struct st_oai_logprob *lp)
{
    const char *sep = a->n ? "," : "";
    enum st_status rc;
    if (kind == ST_OAI_CHAT) {
        rc = st_buf_append(&a->content, sep, strlen(sep));
        if (rc == ST_OK)
            rc = chat_lp_entry(&a->content, lp);
    } else {
        rc = st_buf_append(&a->tokens, sep, strlen(sep));
        if (rc == ST_OK)
            rc = st_json_str(&a->tokens, lp->text, lp->text_len);
        if (rc == ST_OK)
            rc = st_buf_append(&a->token_logprobs, sep, strlen(sep));
        if (rc == ST_OK)
            rc = lp->null_entry ? st_buf_append(&a->token_logprobs, ST_LIT("null"))
                                : st_json_num(&a->token_logprobs, lp->logprob);
        if (rc == ST_OK)
            rc = st_buf_append(&a->top_logprobs, sep, strlen(sep));
        if (rc == ST_OK)
            rc = legacy_top(&a->top_logprobs, lp);
        if (rc == ST_OK)
            rc = st_buf_printf(&a->text_offset, "%s%lld", sep, (long long)lp->text_offset);
    }
    if (rc == ST_OK)
        a->n++;
    return rc;
}

/* "logprobs": value of an accumulator (or null). */
static enum st_status lp_value(struct st_buf *out, enum st_oai_kind kind,
                               const struct st_oai_lp_acc *a)
{
    if (!a)
        return st_buf_append(out, ST_LIT("null"));
    if (kind == ST_OAI_CHAT)
        return st_buf_printf(out, "{\"content\":[%s]}", a->content.data ? a->content.data : "");
    return st_buf_printf(out,
                         "{\"tokens\":[%s],\"token_logprobs\":[%s],\"top_logprobs\":[%s],"
                         "\"text_offset\":[%s]}",
                         a->tokens.data ? a->tokens.data : "",
                         a->token_logprobs.data ? a->token_logprobs.data : "",
                         a->top_logprobs.data ? a->top_logprobs.data : "",
                         a->text_offset.data ? a->text_offset.data : "");
}

/* A choice's text, the close of the chat "delta"/"message" object, and the
 * "logprobs" key whose value the caller writes. */
static enum st_status text_then_logprobs_key(struct st_buf *out, bool chat, const char *text,
                                             size_t len)
{
    enum st_status rc = st_json_str(out, text, len);
    if (rc == ST_OK && chat)
        rc = st_buf_append(out, ST_LIT("}"));
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"logprobs\":"));
    return rc;
}

/* The end of a token's chunk after its "logprobs" key: that token's
 * logprobs (or null), finish_reason null, and the chunk's tail. */
static enum st_status token_chunk_tail(struct st_buf *out, const struct st_oai_meta *m,
                                       const struct st_oai_logprob *lp)
{
    enum st_status rc = ST_OK;
    if (lp) {
        struct st_oai_lp_acc one;
        st_oai_lp_acc_init(&one);
        rc = st_oai_lp_acc_add(&one, m->kind, lp);
        if (rc == ST_OK)
            rc = lp_value(out, m->kind, &one);
        st_oai_lp_acc_fini(&one);
    } else {
        rc = st_buf_append(out, ST_LIT("null"));
    }
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"finish_reason\":null}"));
    return rc == ST_OK ? chunk_tail(out, m) : rc;
}

enum st_status st_oai_chunk_role(struct st_buf *out, const struct st_oai_meta *m, int32_t index)
{
    enum st_status rc = head(out, m, true);
    if (rc == ST_OK)
        rc = st_buf_printf(out,
                           "{\"index\":%d,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                           "\"logprobs\":null,\"finish_reason\":null}",
                           (int)index);
    if (rc == ST_OK)
        rc = chunk_tail(out, m);
    return rc;
}

enum st_status st_oai_chunk_text(struct st_buf *out, const struct st_oai_meta *m, int32_t index,
                                 const char *text, size_t len, const struct st_oai_logprob *lp)
{
    bool chat = m->kind == ST_OAI_CHAT;
    enum st_status rc = head(out, m, true);
    if (rc == ST_OK)
        rc = st_buf_printf(out, chat ? "{\"index\":%d,\"delta\":{\"content\":"
                                     : "{\"index\":%d,\"text\":", (int)index);
    if (rc == ST_OK)
        rc = text_then_logprobs_key(out, chat, text, len);
    return rc == ST_OK ? token_chunk_tail(out, m, lp) : rc;
}

enum st_status st_oai_chunk_text_acc(struct st_buf *out, const struct st_oai_meta *m,
                                     int32_t index, const char *text, size_t len,
                                     const struct st_oai_lp_acc *acc)
{
    enum st_status rc = head(out, m, true);
    if (rc == ST_OK)
        rc = st_buf_printf(out, "{\"index\":%d,\"text\":", (int)index);
    if (rc == ST_OK)
        rc = text_then_logprobs_key(out, false, text, len);
    if (rc == ST_OK)
        rc = lp_value(out, ST_OAI_COMPLETION, acc);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"finish_reason\":null}"));
    return rc == ST_OK ? chunk_tail(out, m) : rc;
}

/* "<id>":{"logprob":..,"rank":..,"decoded_token":".."} */
static enum st_status vllm_entry(struct st_buf *out, bool first, int32_t id, double logprob,
                                 int32_t rank, const char *text, size_t n)
{
    enum st_status rc = st_buf_printf(out, "%s\"%d\":{\"logprob\":", first ? "" : ",",
                                      (int)id);
    if (rc == ST_OK)
        rc = st_json_num(out, logprob);
    if (rc == ST_OK)
        rc = st_buf_printf(out, ",\"rank\":%d,\"decoded_token\":", (int)rank);
    if (rc == ST_OK)
        rc = st_json_str(out, text, n);
    return rc == ST_OK ? st_buf_append(out, ST_LIT("}")) : rc;
}

enum st_status st_oai_prompt_lp_add(struct st_buf *out, bool first,
                                    const struct st_prompt_token *t, int32_t k)
{
    enum st_status rc = first ? ST_OK : st_buf_append(out, ST_LIT(","));
    if (rc != ST_OK || !t->has_logprob)
        return rc == ST_OK ? st_buf_append(out, ST_LIT("null")) : rc;
    size_t n = (size_t)ST_MIN(ST_MAX(t->n_text, 0), (int32_t)sizeof(t->text));
    rc = st_buf_append(out, ST_LIT("{"));
    if (rc == ST_OK)
        rc = vllm_entry(out, true, t->token, t->logprob, t->rank, t->text, n);
    int32_t top = ST_MIN(ST_MAX(k, 0), t->n_top);
    for (int32_t i = 0; i < top && rc == ST_OK; i++) {
        const struct st_top_logprob *a = &t->top[i];
        if (a->token != t->token)
            rc = vllm_entry(out, false, a->token, a->logprob, i + 1, a->bytes, top_len(a));
    }
    return rc == ST_OK ? st_buf_append(out, ST_LIT("}")) : rc;
}

enum st_status st_oai_chunk_finish(struct st_buf *out, const struct st_oai_meta *m,
                                   int32_t index, enum st_finish finish)
{
    return st_oai_chunk_finish_reason(out, m, index, st_oai_finish_reason(finish));
}

enum st_status st_oai_chunk_finish_reason(struct st_buf *out, const struct st_oai_meta *m,
                                          int32_t index, const char *reason)
{
    enum st_status rc = head(out, m, true);
    if (rc == ST_OK)
        rc = st_buf_printf(out,
                           m->kind == ST_OAI_CHAT
                               ? "{\"index\":%d,\"delta\":{},\"logprobs\":null,"
                                 "\"finish_reason\":\"%s\"}"
                               : "{\"index\":%d,\"text\":\"\",\"logprobs\":null,"
                                 "\"finish_reason\":\"%s\"}",
                           (int)index, reason);
    if (rc == ST_OK)
        rc = chunk_tail(out, m);
    return rc;
}

/* The members of a parsed delta (no braces). */
static enum st_status delta_members(struct st_buf *out, const struct st_oai_delta *d)
{
    enum st_status rc;
    switch (d->kind) {
    case ST_OAI_DELTA_CONTENT:
        rc = st_buf_append(out, ST_LIT("\"content\":"));
        return rc == ST_OK ? st_json_str(out, d->text, d->len) : rc;
    case ST_OAI_DELTA_REASONING:
        rc = st_buf_append(out, ST_LIT("\"reasoning_content\":"));
        return rc == ST_OK ? st_json_str(out, d->text, d->len) : rc;
    case ST_OAI_DELTA_TOOL_START:
        rc = st_buf_printf(out, "\"tool_calls\":[{\"index\":%d,\"id\":", (int)d->tool_index);
        if (rc == ST_OK)
            rc = st_json_cstr(out, d->tool_id);
        if (rc == ST_OK)
            rc = st_buf_append(out, ST_LIT(",\"type\":\"function\",\"function\":{\"name\":"));
        if (rc == ST_OK)
            rc = st_json_str(out, d->text, d->len);
        return rc == ST_OK ? st_buf_append(out, ST_LIT(",\"arguments\":\"\"}}]")) : rc;
    case ST_OAI_DELTA_TOOL_ARGS:
        rc = st_buf_printf(out, "\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":",
                           (int)d->tool_index);
        if (rc == ST_OK)
            rc = st_json_str(out, d->text, d->len);
        return rc == ST_OK ? st_buf_append(out, ST_LIT("}}]")) : rc;
    case ST_OAI_DELTA_NONE:
        break;
    }
    return ST_OK;
}

enum st_status st_oai_chunk_delta(struct st_buf *out, const struct st_oai_meta *m,
                                  int32_t index, const struct st_oai_delta *d,
                                  const struct st_oai_logprob *lp)
{
    enum st_status rc = head(out, m, true);
    if (rc == ST_OK)
        rc = st_buf_printf(out, "{\"index\":%d,\"delta\":{", (int)index);
    if (rc == ST_OK)
        rc = delta_members(out, d);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT("},\"logprobs\":"));
    return rc == ST_OK ? token_chunk_tail(out, m, lp) : rc;
}

enum st_status st_oai_tool_call_json(struct st_buf *out, const char *id, const char *name,
                                     size_t name_len, const char *args, size_t args_len)
{
    enum st_status rc = st_buf_append(out, ST_LIT("{\"id\":"));
    if (rc == ST_OK)
        rc = st_json_cstr(out, id);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"type\":\"function\",\"function\":{\"name\":"));
    if (rc == ST_OK)
        rc = st_json_str(out, name, name_len);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT(",\"arguments\":"));
    if (rc == ST_OK)
        rc = st_json_str(out, args, args_len);
    return rc == ST_OK ? st_buf_append(out, ST_LIT("}}")) : rc;
}

static enum st_status usage_obj(struct st_buf *out, const struct st_oai_usage *u)
{
    return st_buf_printf(out,
                         "{\"prompt_tokens\":%lld,\"completion_tokens\":%lld,"
                         "\"total_tokens\":%lld,\"prompt_tokens_details\":"
                         "{\"cached_tokens\":%lld},\"completion_tokens_details\":"
                         "{\"reasoning_tokens\":%lld}}",
                         (long long)u->prompt_tokens, (long long)u->completion_tokens,
                         (long long)(u->prompt_tokens + u->completion_tokens),
                         (long long)u->cached_tokens, (long long)u->reasoning_tokens);
}

/* ],"usage":{..}} closing the choices and the whole object. */
static enum st_status usage_tail(struct st_buf *out, const struct st_oai_usage *u)
{
    enum st_status rc = st_buf_append(out, ST_LIT("],\"usage\":"));
    if (rc == ST_OK)
        rc = usage_obj(out, u);
    if (rc == ST_OK)
        rc = st_buf_append(out, ST_LIT("}"));
    return rc;
}

enum st_status st_oai_chunk_usage(struct st_buf *out, const struct st_oai_meta *m,
                                  const struct st_oai_usage *u)
{
    enum st_status rc = head(out, m, true);
    if (rc == ST_OK)
        rc = usage_tail(out, u);
    return rc;
}

/* A chat message parsed into parts: "content" (null when it is only tool
 * calls), "reasoning_content" when there is some, "tool_calls" when any;
 * then the "logprobs" key. */
static enum st_status parsed_message(struct st_buf *out, const struct st_oai_choice *c)
{
    enum st_status rc = ST_OK;
    if (c->content_null)
        rc = st_buf_append(out, ST_LIT("null"));
    else
        rc = st_json_str(out, c->text ? c->text : "", c->text ? c->text_len : 0);
    if (rc == ST_OK && c->reasoning) {
        rc = st_buf_append(out, ST_LIT(",\"reasoning_content\":"));
        if (rc == ST_OK)
            rc = st_json_str(out, c->reasoning, c->reasoning_len);
    }
    if (rc == ST_OK && c->tool_calls) {
        rc = st_buf_append(out, ST_LIT(",\"tool_calls\":"));
        if (rc == ST_OK)
            rc = st_buf_append(out, c->tool_calls, c->tool_calls_len);
    }
    return rc == ST_OK ? st_buf_append(out, ST_LIT("},\"logprobs\":")) : rc;
}

/* ,"prompt_logprobs":[..] of a choice that has them. */
static enum st_status prompt_lp_member(struct st_buf *out, const struct st_oai_choice *c)
{
    enum st_status rc = st_buf_append(out, ST_LIT(",\"prompt_logprobs\":["));
    if (rc == ST_OK)
        rc = st_buf_append(out, c->prompt_logprobs, c->prompt_logprobs_len);
    return rc == ST_OK ? st_buf_append(out, ST_LIT("]")) : rc;
}

static enum st_status body_choice(struct st_buf *out, const struct st_oai_meta *m,
                                  const struct st_oai_choice *c)
{
    bool chat = m->kind == ST_OAI_CHAT;
    enum st_status rc = st_buf_printf(out, chat ? "{\"index\":%d,\"message\":{\"role\":"
                                                  "\"assistant\",\"content\":"
                                                : "{\"index\":%d,\"text\":",
                                      (int)c->index);
    if (rc == ST_OK && chat && c->parsed)
        rc = parsed_message(out, c);
    else if (rc == ST_OK)
        rc = text_then_logprobs_key(out, chat, c->text ? c->text : "", c->text ? c->text_len : 0);
    if (rc == ST_OK)
        rc = lp_value(out, m->kind, c->lp);
    if (rc == ST_OK)
        rc = st_buf_printf(out, ",\"finish_reason\":\"%s\"",
                           c->finish_reason ? c->finish_reason : st_oai_finish_reason(c->finish));
    if (rc == ST_OK && !chat && c->prompt_logprobs)
        rc = prompt_lp_member(out, c);
    return rc == ST_OK ? st_buf_append(out, ST_LIT("}")) : rc;
}

enum st_status st_oai_body(struct st_buf *out, const struct st_oai_meta *m,
                           const struct st_oai_choice *choices, size_t n,
                           const struct st_oai_usage *u)
{
    enum st_status rc = head(out, m, false);
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        if (i)
            rc = st_buf_append(out, ST_LIT(","));
        if (rc == ST_OK)
            rc = body_choice(out, m, &choices[i]);
    }
    /* chat (as vLLM): the prompt's logprobs once, beside "choices" */
    if (rc == ST_OK && m->kind == ST_OAI_CHAT && n > 0 && choices[0].prompt_logprobs) {
        rc = st_buf_append(out, ST_LIT("]"));
        if (rc == ST_OK)
            rc = prompt_lp_member(out, &choices[0]);
        if (rc == ST_OK)
            rc = st_buf_append(out, ST_LIT(",\"usage\":"));
        if (rc == ST_OK)
            rc = usage_obj(out, u);
        return rc == ST_OK ? st_buf_append(out, ST_LIT("}")) : rc;
    }
    if (rc == ST_OK)
        rc = usage_tail(out, u);
    return rc;
}
