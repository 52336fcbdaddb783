/* gen/request.h -- a parsed generation request: what the body parsers
 * (openai/oai_request.c for chat and completions, and the endpoints built
 * on them: responses/, anthropic/, llama/h_infill.c) produce and the
 * generation (gen_submit.c) consumes. Only the chat request's parsed
 * messages (strata/chat_req.h) are still a JSON tree.
 */
#ifndef STRATA_SERVER_GEN_REQUEST_H
#define STRATA_SERVER_GEN_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/chat.h"
#include "strata/chat_req.h"
#include "strata/engine.h"

enum st_oai_kind {
    ST_OAI_CHAT,          /* /v1/chat/completions */
    ST_OAI_COMPLETION,    /* /v1/completions */
};

/* One prompt of /v1/completions: text, or token ids (then text is NULL),
 * or llama-server's mixed sequence of ids and strings, which needs the
 * model's tokenizer: kept as JSON until st_gen_mixed_prompts makes it ids. */
struct st_oai_prompt {
    char    *text;        /* owned, NUL-terminated, or NULL */
    int32_t *tokens;      /* owned, or NULL */
    size_t   n_tokens;
    struct cJSON *mixed;  /* owned: [id | "text", ...] with at least one string; or NULL */
};

#define ST_OAI_MAX_N       16    /* "n" at most */
#define ST_OAI_MAX_CHOICES 64    /* prompts x n at most */

/* tool_choice: "none" gives no tools to the template and parses nothing;
 * "required" and a named function constrain the reply to calls
 * (include/strata/call_grammar.h, gen_reply.c; docs/API.md). */
enum st_oai_tool_choice {
    ST_OAI_TOOLS_AUTO,
    ST_OAI_TOOLS_NONE,
    ST_OAI_TOOLS_REQUIRED,
    ST_OAI_TOOLS_FUNCTION,
};

/* reasoning_format of one request; DEFAULT = the server's --reasoning-format. */
enum st_oai_reasoning {
    ST_OAI_REASONING_DEFAULT,
    ST_OAI_REASONING_DEEPSEEK,     /* "deepseek" or "auto" */
    ST_OAI_REASONING_NONE,
};

/* llama-server's answer options: those of its native answer (POST
 * /completion and /infill, written by llama/llama_shape.c with
 * gen/llama_json.c; docs/API.md "/completion"), and its stream extras
 * every API variant of it takes. */
struct st_llama_opts {
    bool    on;                    /* the body was one of llama-server's native endpoints
                                    * (their answers: their shape, not this flag) */
    bool    return_tokens;         /* "tokens" holds the generated ids (a stream always) */
    bool    post_sampling;         /* post_sampling_probs: "prob", not "logprob" */
    int32_t n_probs;               /* completion_probabilities: alternatives per token;
                                    * 0: none */
    bool    truncated;             /* /infill: the FIM budget cut something */
    bool    timings_per_token;     /* stream: every chunk but chat's role chunk carries
                                    * "timings" (also chat, completions) */
    char   *settings;              /* "generation_settings" JSON object, owned; NULL:
                                    * left out (/infill) */
};

/* Everything the server takes from a completion body. Owns every pointer;
 * release with st_oai_request_fini(). The only cJSON that survives the
 * parse is the chat request's (strata/chat_req.h), which the engine renders. */
struct st_oai_request {
    enum st_oai_kind kind;
    char   *model;                 /* owned; NULL = the default model */
    struct st_chat_request chat;   /* chat: the normalised messages (content a string or
                                    * null), tools, chat_template_kwargs; owned */
    bool    continue_final;        /* chat: continue_final_message (vLLM's): the prompt
                                    * ends inside the last message, an assistant's */
    bool    continue_given;        /* chat: the body said continue_final_message (else a
                                    * last assistant message is a prefill: st_oai_prefill) */
    int8_t  add_gen_prompt;        /* chat: add_generation_prompt; -1 = not sent; 0: the
                                    * prompt ends after the last message's turn */
    struct st_oai_prompt *prompts; /* completions: n_prompts of them, owned */
    size_t  n_prompts;
    struct st_gen_params params;   /* stop strings owned */
    int32_t n;                     /* choices per prompt, 1..ST_OAI_MAX_N */
    bool    stream;
    bool    include_usage;         /* stream_options.include_usage */
    bool    echo;                  /* completions: the prompt leads the text (params.echo) */
    int32_t prompt_logprobs;       /* vLLM's: alternatives per prompt token; -1 = absent */
    bool    cache_prompt;          /* llama-server's; default true; false: no prefix reuse */
    struct cJSON *bias_text;       /* owned: logit_bias entries keyed by text,
                                    * [[text, bias], ...] (llama-server's): tokenized
                                    * with the model (gen_submit.c); NULL = none */
    bool    temp_sent, seed_sent;  /* the body had temperature / seed (else the server's
                                    * --temp / --seed apply: st_gen_settle_params) */
    int8_t  verbose;               /* llama-server's "verbose": 1 adds "__verbose" to a
                                    * chat or completions answer; -1 = not sent (then on
                                    * with --verbose / --log-level debug) */
    /* chat: tool calls and reasoning (oai_tools.c, docs/API.md) */
    enum st_oai_tool_choice tool_choice;
    char    tool_choice_name[257];  /* FUNCTION: its name ("" when longer than 256 bytes) */
    bool    single_tool_call;      /* parallel_tool_calls: false -> keep the first call */
    enum st_oai_reasoning reasoning_format;
    /* chat: thinking_budget (thinking_token_budget, thinking_budget_tokens):
     * reasoning tokens before the think block is closed (docs/API.md
     * "Thinking budget"); -1 = none; absent: the server's --reasoning-budget */
    bool    has_thinking_budget;
    int32_t thinking_budget;
    bool    has_priority;          /* body "priority" was an integral number */
    int32_t priority;
    char   *user;                  /* owned or NULL */
    char   *suffix;                /* completions: OpenAI's legacy suffix (FIM), owned or NULL */
    struct st_llama_opts llama;    /* llama-server's answer options */
};

/* Where a chat request's prompt ends (strata/chat.h). */
static inline enum st_chat_ending st_oai_chat_ending(const struct st_oai_request *r)
{
    if (r->continue_final)
        return ST_CHAT_END_CONTINUE;
    return r->add_gen_prompt == 0 ? ST_CHAT_END_TURN : ST_CHAT_END_GENERATE;
}

#endif /* STRATA_SERVER_GEN_REQUEST_H */
