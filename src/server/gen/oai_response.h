/* gen/oai_response.h -- OpenAI's chat and completions answers (oai_response.c):
 * stream chunks and whole bodies, logprobs, usage: the wire renderers of
 * the chat and completions shapes (openai/oai_shape.c, gen_shape.h).
 */
#ifndef STRATA_SERVER_GEN_OAI_RESPONSE_H
#define STRATA_SERVER_GEN_OAI_RESPONSE_H

#include "server/gen/request.h"
#include "server/http/http.h"

/* What every chunk and body of one response shares. Strings borrowed. */
struct st_oai_meta {
    enum st_oai_kind kind;
    const char *id;              /* "chatcmpl-..." / "cmpl-..." */
    const char *model;
    int64_t     created;         /* unix seconds */
    bool        include_usage;   /* chunks carry "usage": null until the last */
};

struct st_oai_usage {
    int64_t prompt_tokens;
    int64_t completion_tokens;
    int64_t cached_tokens;
    int64_t reasoning_tokens;    /* of completion_tokens: the replies' reasoning (approximate:
                                  * docs/API.md "/v1/responses" usage) */
};

/* Logprobs of one token, as the engine reported it (borrowed). */
struct st_oai_logprob {
    const char *text;            /* the token's text */
    size_t      text_len;
    float       logprob;
    const struct st_top_logprob *top;
    int32_t     n_top;
    int64_t     text_offset;     /* completions: offset of the token in the text */
    /* (echoed prompt tokens, legacy shape) */
    bool        null_entry;      /* token_logprobs and top_logprobs null: the first prompt
                                  * token, which nothing comes before */
    bool        add_self;        /* top_logprobs also holds the token itself when it is not
                                  * among 'top' (OpenAI's legacy N + 1) */
    int32_t     token;           /* its id, for add_self */
};

/* Streaming chunks, rendered as one JSON object each (no framing). */
ST_MUST_CHECK enum st_status st_oai_chunk_role(struct st_buf *out, const struct st_oai_meta *m,
                                               int32_t index);
ST_MUST_CHECK enum st_status st_oai_chunk_text(struct st_buf *out, const struct st_oai_meta *m,
                                               int32_t index, const char *text, size_t len,
                                               const struct st_oai_logprob *lp);
struct st_oai_lp_acc;
/* A completions chunk whose text carries a run of tokens (the echoed
 * prompt) with their legacy logprobs (acc; NULL: "logprobs": null). */
ST_MUST_CHECK enum st_status st_oai_chunk_text_acc(struct st_buf *out,
                                                   const struct st_oai_meta *m, int32_t index,
                                                   const char *text, size_t len,
                                                   const struct st_oai_lp_acc *acc);
ST_MUST_CHECK enum st_status st_oai_chunk_finish(struct st_buf *out,
                                                 const struct st_oai_meta *m, int32_t index,
                                                 enum st_finish finish);
ST_MUST_CHECK enum st_status st_oai_chunk_usage(struct st_buf *out, const struct st_oai_meta *m,
                                                const struct st_oai_usage *u);

/* One logprobs entry appended to the accumulators of a non-stream body:
 * chat -> 'content' gets one object; completions -> the four legacy arrays. */
struct st_oai_lp_acc {
    struct st_buf content;       /* chat: comma-separated objects */
    struct st_buf tokens, token_logprobs, top_logprobs, text_offset;   /* legacy */
    int64_t n;                   /* entries so far */
};
void st_oai_lp_acc_init(struct st_oai_lp_acc *a);
void st_oai_lp_acc_fini(struct st_oai_lp_acc *a);
ST_MUST_CHECK enum st_status st_oai_lp_acc_add(struct st_oai_lp_acc *a, enum st_oai_kind kind,
                                               const struct st_oai_logprob *lp);

/* vLLM's prompt_logprobs: append one prompt token's entry to 'out' (a
 * comma first unless it is the first): null for position 0 (or a token
 * without a logprob), else {"<id>":{"logprob","rank","decoded_token"},...}
 * with the token itself first, then its best k alternatives (ranks 1..k). */
ST_MUST_CHECK enum st_status st_oai_prompt_lp_add(struct st_buf *out, bool first,
                                                  const struct st_prompt_token *t, int32_t k);

/* One choice of a finished non-stream response. Borrowed. */
struct st_oai_choice {
    int32_t     index;
    const char *text;
    size_t      text_len;
    enum st_finish finish;
    const struct st_oai_lp_acc *lp;   /* NULL: "logprobs": null */
    /* (chat replies parsed into parts, gen_reply.c) */
    bool        parsed;               /* the fields below count; text = content */
    bool        content_null;         /* "content": null (the reply is only tool calls) */
    const char *reasoning;            /* NULL: no "reasoning_content" */
    size_t      reasoning_len;
    const char *tool_calls;           /* JSON array text; NULL: no "tool_calls" */
    size_t      tool_calls_len;
    const char *finish_reason;        /* NULL: from finish ("tool_calls" overrides) */
    /* vLLM's prompt_logprobs (the entries of the array, comma-separated; NULL:
     * not asked): completions per choice; chat once, top level, from choice 0 */
    const char *prompt_logprobs;
    size_t      prompt_logprobs_len;
};

/* One parsed delta of a chat stream (gen_reply.c). Borrowed. */
enum st_oai_delta_kind {
    ST_OAI_DELTA_NONE,                /* {} (a chunk that only carries logprobs) */
    ST_OAI_DELTA_CONTENT,             /* text */
    ST_OAI_DELTA_REASONING,           /* text */
    ST_OAI_DELTA_TOOL_START,          /* tool_index, tool_id, text = name; arguments "" */
    ST_OAI_DELTA_TOOL_ARGS,           /* tool_index, text = a piece of the arguments */
};

struct st_oai_delta {
    enum st_oai_delta_kind kind;
    const char *text;
    size_t      len;
    int32_t     tool_index;
    const char *tool_id;
};

ST_MUST_CHECK enum st_status st_oai_chunk_delta(struct st_buf *out, const struct st_oai_meta *m,
                                                int32_t index, const struct st_oai_delta *d,
                                                const struct st_oai_logprob *lp);
ST_MUST_CHECK enum st_status st_oai_chunk_finish_reason(struct st_buf *out,
                                                        const struct st_oai_meta *m,
                                                        int32_t index, const char *reason);
/* {"id":..,"type":"function","function":{"name":..,"arguments":".."}} */
ST_MUST_CHECK enum st_status st_oai_tool_call_json(struct st_buf *out, const char *id,
                                                   const char *name, size_t name_len,
                                                   const char *args, size_t args_len);

ST_MUST_CHECK enum st_status st_oai_body(struct st_buf *out, const struct st_oai_meta *m,
                                         const struct st_oai_choice *choices, size_t n,
                                         const struct st_oai_usage *u);

/* OpenAI's finish_reason for 'f' (cancelled and error never reach a client
 * as a normal finish; they map to "stop"). */
const char *st_oai_finish_reason(enum st_finish f);

#endif /* STRATA_SERVER_GEN_OAI_RESPONSE_H */
