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
 * Renderers append to 'out' and return ST_ERR_NOMEM on allocation failure;
 * inside, each is a list of appends to one struct st_out.
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

/* The build that answered, in llama-server's "b<build>-<commit>" form:
 * OpenAI clients log it to tell server builds apart. */
#ifndef STRATA_VERSION
#define STRATA_VERSION "unknown"
#endif
#define ST_SYSTEM_FINGERPRINT "b" STRATA_VERSION "-strata"

/* {"id":..,"object":..,"created":..,"model":..,"system_fingerprint":..,"choices":[ */
static void head(struct st_out *o, const struct st_oai_meta *m, bool chunk)
{
    st_out_text(o, "{");
    st_out_kv_str(o, "id", m->id);
    st_out_kv_str(o, "object", object_name(m->kind, chunk));
    st_out_kv_i64(o, "created", m->created);
    st_out_kv_str(o, "model", m->model);
    st_out_kv_str(o, "system_fingerprint", ST_SYSTEM_FINGERPRINT);
    st_out_kv_raw(o, "choices", "[");
}

/* ]} closing a chunk, with "usage":null when the client asked for usage. */
static void chunk_tail(struct st_out *o, const struct st_oai_meta *m)
{
    st_out_text(o, m->include_usage ? "],\"usage\":null}" : "]}");
}

/* The bytes of a top-logprob candidate's token (n_bytes clamped). */
static size_t top_len(const struct st_top_logprob *t)
{
    return t->n_bytes < 0 ? 0 : (size_t)ST_MIN(t->n_bytes, (int32_t)sizeof(t->bytes));
}

/* {"token":..,"logprob":..,"bytes":[..]  (left open: the fields every chat
 * logprob entry starts with). */
static void token_fields(struct st_out *o, const char *text, size_t n, double logprob)
{
    st_out_text(o, "{");
    st_out_key(o, "token");
    st_out_json_str(o, text, n);
    st_out_kv_num(o, "logprob", logprob);
    st_out_key(o, "bytes");
    st_out_json_bytes(o, text, n);
}

/* One chat logprobs "content" entry. */
static void chat_lp_entry(struct st_out *o, const struct st_oai_logprob *lp)
{
    token_fields(o, lp->text, lp->text_len, lp->logprob);
    st_out_kv_raw(o, "top_logprobs", "[");
    for (int32_t i = 0; i < lp->n_top; i++) {
        const struct st_top_logprob *t = &lp->top[i];
        st_out_sep(o);
        token_fields(o, t->bytes, top_len(t), t->logprob);
        st_out_text(o, "}");
    }
    st_out_text(o, "]}");
}

/* "tok":lp inside the legacy top_logprobs item. */
static void legacy_pair(struct st_out *o, const char *text, size_t n, double logprob)
{
    st_out_sep(o);
    st_out_json_str(o, text, n);
    st_out_text(o, ":");
    st_out_json_num(o, logprob);
}

/* The legacy top_logprobs item: {"tok": lp, ...} (null for a null entry;
 * with add_self the token itself when it is not among the alternatives). */
static void legacy_top(struct st_out *o, const struct st_oai_logprob *lp)
{
    if (lp->null_entry) {
        st_out_text(o, "null");
        return;
    }
    st_out_text(o, "{");
    bool self = false;
    for (int32_t i = 0; i < lp->n_top; i++) {
        const struct st_top_logprob *t = &lp->top[i];
        self |= t->token == lp->token;
        legacy_pair(o, t->bytes, top_len(t), t->logprob);
    }
    if (lp->add_self && !self)
        legacy_pair(o, lp->text, lp->text_len, lp->logprob);
    st_out_text(o, "}");
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
    struct st_out o;
    if (kind == ST_OAI_CHAT) {
        st_out_init(&o, &a->content);
        st_out_text(&o, sep);
        chat_lp_entry(&o, lp);
    } else {
        st_out_init(&o, &a->tokens);
        st_out_text(&o, sep);
        st_out_json_str(&o, lp->text, lp->text_len);
        st_out_to(&o, &a->token_logprobs);
        st_out_text(&o, sep);
        if (lp->null_entry)
            st_out_text(&o, "null");
        else
            st_out_json_num(&o, lp->logprob);
        st_out_to(&o, &a->top_logprobs);
        st_out_text(&o, sep);
        legacy_top(&o, lp);
        st_out_to(&o, &a->text_offset);
        st_out_printf(&o, "%s%lld", sep, (long long)lp->text_offset);
    }
    enum st_status rc = st_out_finish(&o);
    if (rc == ST_OK)
        a->n++;
    return rc;
}

/* "logprobs": value of an accumulator (or null). */
static void lp_value(struct st_out *o, enum st_oai_kind kind, const struct st_oai_lp_acc *a)
{
    if (!a)
        st_out_text(o, "null");
    else if (kind == ST_OAI_CHAT)
        st_out_printf(o, "{\"content\":[%s]}", a->content.data ? a->content.data : "");
    else
        st_out_printf(o,
                      "{\"tokens\":[%s],\"token_logprobs\":[%s],\"top_logprobs\":[%s],"
                      "\"text_offset\":[%s]}",
                      a->tokens.data ? a->tokens.data : "",
                      a->token_logprobs.data ? a->token_logprobs.data : "",
                      a->top_logprobs.data ? a->top_logprobs.data : "",
                      a->text_offset.data ? a->text_offset.data : "");
}

/* A choice's text, the close of the chat "delta"/"message" object, and the
 * "logprobs" key whose value the caller writes. */
static void text_then_logprobs_key(struct st_out *o, bool chat, const char *text, size_t len)
{
    st_out_json_str(o, text, len);
    if (chat)
        st_out_text(o, "}");
    st_out_key(o, "logprobs");
}

/* The end of a token's chunk after its "logprobs" key: that token's
 * logprobs (or null), finish_reason null, and the chunk's tail. */
static void token_chunk_tail(struct st_out *o, const struct st_oai_meta *m,
                             const struct st_oai_logprob *lp)
{
    if (lp) {
        struct st_oai_lp_acc one;
        st_oai_lp_acc_init(&one);
        if (st_out_ok(o))
            st_out_check(o, st_oai_lp_acc_add(&one, m->kind, lp));
        lp_value(o, m->kind, &one);
        st_oai_lp_acc_fini(&one);
    } else {
        st_out_text(o, "null");
    }
    st_out_kv_raw(o, "finish_reason", "null");
    st_out_text(o, "}");
    chunk_tail(o, m);
}

enum st_status st_oai_chunk_role(struct st_buf *out, const struct st_oai_meta *m, int32_t index)
{
    struct st_out o;
    st_out_init(&o, out);
    head(&o, m, true);
    st_out_printf(&o,
                  "{\"index\":%d,\"delta\":{\"role\":\"assistant\",\"content\":null},"
                  "\"logprobs\":null,\"finish_reason\":null}",
                  (int)index);
    chunk_tail(&o, m);
    return st_out_finish(&o);
}

enum st_status st_oai_chunk_text(struct st_buf *out, const struct st_oai_meta *m, int32_t index,
                                 const char *text, size_t len, const struct st_oai_logprob *lp)
{
    bool chat = m->kind == ST_OAI_CHAT;
    struct st_out o;
    st_out_init(&o, out);
    head(&o, m, true);
    st_out_printf(&o, chat ? "{\"index\":%d,\"delta\":{\"content\":" : "{\"index\":%d,\"text\":",
                  (int)index);
    text_then_logprobs_key(&o, chat, text, len);
    token_chunk_tail(&o, m, lp);
    return st_out_finish(&o);
}

enum st_status st_oai_chunk_text_acc(struct st_buf *out, const struct st_oai_meta *m,
                                     int32_t index, const char *text, size_t len,
                                     const struct st_oai_lp_acc *acc)
{
    struct st_out o;
    st_out_init(&o, out);
    head(&o, m, true);
    st_out_printf(&o, "{\"index\":%d,\"text\":", (int)index);
    text_then_logprobs_key(&o, false, text, len);
    lp_value(&o, ST_OAI_COMPLETION, acc);
    st_out_kv_raw(&o, "finish_reason", "null");
    st_out_text(&o, "}");
    chunk_tail(&o, m);
    return st_out_finish(&o);
}

/* "<id>":{"logprob":..,"rank":..,"decoded_token":".."} */
static void vllm_entry(struct st_out *o, int32_t id, double logprob, int32_t rank,
                       const char *text, size_t n)
{
    st_out_sep(o);
    st_out_printf(o, "\"%d\":{", (int)id);
    st_out_kv_num(o, "logprob", logprob);
    st_out_kv_i64(o, "rank", rank);
    st_out_key(o, "decoded_token");
    st_out_json_str(o, text, n);
    st_out_text(o, "}");
}

enum st_status st_oai_prompt_lp_add(struct st_buf *out, bool first,
                                    const struct st_prompt_token *t, int32_t k)
{
    struct st_out o;
    st_out_init(&o, out);
    if (!first)
        st_out_text(&o, ",");
    if (!t->has_logprob) {
        st_out_text(&o, "null");
        return st_out_finish(&o);
    }
    size_t n = (size_t)ST_MIN(ST_MAX(t->n_text, 0), (int32_t)sizeof(t->text));
    st_out_text(&o, "{");
    vllm_entry(&o, t->token, t->logprob, t->rank, t->text, n);
    int32_t top = ST_MIN(ST_MAX(k, 0), t->n_top);
    for (int32_t i = 0; i < top; i++) {
        const struct st_top_logprob *a = &t->top[i];
        if (a->token != t->token)
            vllm_entry(&o, a->token, a->logprob, i + 1, a->bytes, top_len(a));
    }
    st_out_text(&o, "}");
    return st_out_finish(&o);
}

enum st_status st_oai_chunk_finish(struct st_buf *out, const struct st_oai_meta *m,
                                   int32_t index, enum st_finish finish)
{
    return st_oai_chunk_finish_reason(out, m, index, st_oai_finish_reason(finish));
}

enum st_status st_oai_chunk_finish_reason(struct st_buf *out, const struct st_oai_meta *m,
                                          int32_t index, const char *reason)
{
    struct st_out o;
    st_out_init(&o, out);
    head(&o, m, true);
    st_out_printf(&o,
                  m->kind == ST_OAI_CHAT
                      ? "{\"index\":%d,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"%s\"}"
                      : "{\"index\":%d,\"text\":\"\",\"logprobs\":null,"
                        "\"finish_reason\":\"%s\"}",
                  (int)index, reason);
    chunk_tail(&o, m);
    return st_out_finish(&o);
}

/* The members of a parsed delta (no braces). */
static void delta_members(struct st_out *o, const struct st_oai_delta *d)
{
    switch (d->kind) {
    case ST_OAI_DELTA_CONTENT:
        st_out_key(o, "content");
        st_out_json_str(o, d->text, d->len);
        break;
    case ST_OAI_DELTA_REASONING:
        st_out_key(o, "reasoning_content");
        st_out_json_str(o, d->text, d->len);
        break;
    case ST_OAI_DELTA_TOOL_START:
        st_out_kv_raw(o, "tool_calls", "[{");
        st_out_kv_i64(o, "index", d->tool_index);
        st_out_kv_str(o, "id", d->tool_id);
        st_out_kv_str(o, "type", "function");
        st_out_kv_raw(o, "function", "{");
        st_out_key(o, "name");
        st_out_json_str(o, d->text, d->len);
        st_out_kv_raw(o, "arguments", "\"\"");
        st_out_text(o, "}}]");
        break;
    case ST_OAI_DELTA_TOOL_ARGS:
        st_out_kv_raw(o, "tool_calls", "[{");
        st_out_kv_i64(o, "index", d->tool_index);
        st_out_kv_raw(o, "function", "{");
        st_out_key(o, "arguments");
        st_out_json_str(o, d->text, d->len);
        st_out_text(o, "}}]");
        break;
    case ST_OAI_DELTA_NONE:
        break;
    }
}

enum st_status st_oai_chunk_delta(struct st_buf *out, const struct st_oai_meta *m,
                                  int32_t index, const struct st_oai_delta *d,
                                  const struct st_oai_logprob *lp)
{
    struct st_out o;
    st_out_init(&o, out);
    head(&o, m, true);
    st_out_printf(&o, "{\"index\":%d,\"delta\":{", (int)index);
    delta_members(&o, d);
    st_out_text(&o, "}");
    st_out_key(&o, "logprobs");
    token_chunk_tail(&o, m, lp);
    return st_out_finish(&o);
}

enum st_status st_oai_tool_call_json(struct st_buf *out, const char *id, const char *name,
                                     size_t name_len, const char *args, size_t args_len)
{
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_str(&o, "id", id);
    st_out_kv_str(&o, "type", "function");
    st_out_kv_raw(&o, "function", "{");
    st_out_key(&o, "name");
    st_out_json_str(&o, name, name_len);
    st_out_key(&o, "arguments");
    st_out_json_str(&o, args, args_len);
    st_out_text(&o, "}}");
    return st_out_finish(&o);
}

static void usage_obj(struct st_out *o, const struct st_oai_usage *u)
{
    st_out_printf(o,
                  "{\"prompt_tokens\":%lld,\"completion_tokens\":%lld,"
                  "\"total_tokens\":%lld,\"prompt_tokens_details\":"
                  "{\"cached_tokens\":%lld},\"completion_tokens_details\":"
                  "{\"reasoning_tokens\":%lld}}",
                  (long long)u->prompt_tokens, (long long)u->completion_tokens,
                  (long long)(u->prompt_tokens + u->completion_tokens),
                  (long long)u->cached_tokens, (long long)u->reasoning_tokens);
}

/* ],"usage":{..}} closing the choices and the whole object. */
static void usage_tail(struct st_out *o, const struct st_oai_usage *u)
{
    st_out_text(o, "]");
    st_out_key(o, "usage");
    usage_obj(o, u);
    st_out_text(o, "}");
}

enum st_status st_oai_chunk_usage(struct st_buf *out, const struct st_oai_meta *m,
                                  const struct st_oai_usage *u)
{
    struct st_out o;
    st_out_init(&o, out);
    head(&o, m, true);
    usage_tail(&o, u);
    return st_out_finish(&o);
}

/* A chat message parsed into parts: "content" (null when it is only tool
 * calls), "reasoning_content" when there is some, "tool_calls" when any;
 * then the "logprobs" key. */
static void parsed_message(struct st_out *o, const struct st_oai_choice *c)
{
    if (c->content_null)
        st_out_text(o, "null");
    else
        st_out_json_str(o, c->text ? c->text : "", c->text ? c->text_len : 0);
    if (c->reasoning) {
        st_out_key(o, "reasoning_content");
        st_out_json_str(o, c->reasoning, c->reasoning_len);
    }
    if (c->tool_calls) {
        st_out_key(o, "tool_calls");
        st_out_raw(o, c->tool_calls, c->tool_calls_len);
    }
    st_out_text(o, "}");
    st_out_key(o, "logprobs");
}

/* ,"prompt_logprobs":[..] of a choice that has them. */
static void prompt_lp_member(struct st_out *o, const struct st_oai_choice *c)
{
    st_out_kv_raw(o, "prompt_logprobs", "[");
    st_out_raw(o, c->prompt_logprobs, c->prompt_logprobs_len);
    st_out_text(o, "]");
}

static void body_choice(struct st_out *o, const struct st_oai_meta *m,
                        const struct st_oai_choice *c)
{
    bool chat = m->kind == ST_OAI_CHAT;
    st_out_printf(o, chat ? "{\"index\":%d,\"message\":{\"role\":\"assistant\",\"content\":"
                          : "{\"index\":%d,\"text\":",
                  (int)c->index);
    if (chat && c->parsed)
        parsed_message(o, c);
    else
        text_then_logprobs_key(o, chat, c->text ? c->text : "", c->text ? c->text_len : 0);
    lp_value(o, m->kind, c->lp);
    st_out_printf(o, ",\"finish_reason\":\"%s\"",
                  c->finish_reason ? c->finish_reason : st_oai_finish_reason(c->finish));
    if (!chat && c->prompt_logprobs)
        prompt_lp_member(o, c);
    st_out_text(o, "}");
}

enum st_status st_oai_body(struct st_buf *out, const struct st_oai_meta *m,
                           const struct st_oai_choice *choices, size_t n,
                           const struct st_oai_usage *u)
{
    struct st_out o;
    st_out_init(&o, out);
    head(&o, m, false);
    for (size_t i = 0; i < n; i++) {
        st_out_sep(&o);
        body_choice(&o, m, &choices[i]);
    }
    /* chat (as vLLM): the prompt's logprobs once, beside "choices" */
    if (m->kind == ST_OAI_CHAT && n > 0 && choices[0].prompt_logprobs) {
        st_out_text(&o, "]");
        prompt_lp_member(&o, &choices[0]);
        st_out_key(&o, "usage");
        usage_obj(&o, u);
        st_out_text(&o, "}");
    } else {
        usage_tail(&o, u);
    }
    return st_out_finish(&o);
}
