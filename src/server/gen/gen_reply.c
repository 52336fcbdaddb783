/* gen_reply.c -- a chat choice's generated text, parsed into
 * reasoning_content, content and tool_calls (strata/reply_parse.h; the
 * wire shapes are oai_response.c's; docs/API.md "Tool calls and
 * reasoning").
 *
 * Each choice of a chat request gets its own parser when there is
 * something to parse: tools were given (and tool_choice is not "none"), or
 * reasoning is split out (reasoning_format deepseek, the default). Without
 * either, the choice keeps the raw path in gen_emit.c.
 *
 * Non-stream: the parts accumulate; the body is built from them. Stream:
 * the events of one token become chunks, in order, adjacent text of the
 * same kind merged; the token's logprobs ride on its last chunk (or on a
 * chunk with an empty delta when the parser held all its text back).
 *
 * Everything here runs under call->lock (gen.h).
 */
#include <stdlib.h>
#include <string.h>

#include "strata/call_grammar.h"
#include "strata/log.h"
#include "strata/reply_parse.h"
#include "strata/think_block.h"
#include "server/gen/gen.h"

#define ID_LEN 30   /* "call_" + 24 + NUL */

struct st_gen_reply {
    struct st_reply_parser parser;
    struct st_gen *g;              /* borrowed; set for the emit callback */
    struct st_gen_choice *ch;
    int32_t n_calls;               /* calls completed (both modes) */
    /* non-stream: the message so far */
    struct st_buf content, reasoning;
    struct st_buf calls;           /* "[{..},{..}" then "]" at the end */
    struct st_buf name, args;      /* the call being read */
    char id[ID_LEN];
    /* stream: the chunk not yet rendered */
    enum st_oai_delta_kind pend;   /* NONE: nothing pending */
    struct st_buf pend_text;
    int32_t pend_index;
    char pend_id[ID_LEN];
    char *tools;                   /* xml_calls: owned copy of the request's tools */
    bool tok_reasoning;            /* the token being fed produced reasoning text */
    int64_t n_reasoning_tokens;    /* ... how many tokens did (usage, /v1/responses) */
};

/* "call_" and 24 random letters and digits. */
static void new_call_id(char out[ID_LEN])
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char r[24];
    st_random_id_bytes(r, sizeof(r));
    memcpy(out, "call_", 5);
    for (size_t i = 0; i < sizeof(r); i++)
        out[5 + i] = alnum[r[i] % (sizeof(alnum) - 1)];
    out[ID_LEN - 1] = '\0';
}

/* tools: the request's tools JSON, copied for the parser (xml_calls reads
 * parameter types from it); NULL = none. */
static struct st_gen_reply *reply_new(const struct st_reply_opts *o, const char *tools)
{
    struct st_gen_reply *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    struct st_reply_opts own = *o;
    if ((o->xml_calls || o->glm) && tools) {
        r->tools = strdup(tools);
        if (!r->tools) {
            free(r);
            return NULL;
        }
        own.tools_json = st_str_c(r->tools);
    }
    st_reply_parser_init(&r->parser, &own);
    st_buf_init(&r->content);
    st_buf_init(&r->reasoning);
    st_buf_init(&r->calls);
    st_buf_init(&r->name);
    st_buf_init(&r->args);
    st_buf_init(&r->pend_text);
    return r;
}

void st_gen_reply_free(struct st_gen_reply *r)
{
    if (!r)
        return;
    st_reply_parser_fini(&r->parser);
    st_buf_fini(&r->content);
    st_buf_fini(&r->reasoning);
    st_buf_fini(&r->calls);
    st_buf_fini(&r->name);
    st_buf_fini(&r->args);
    st_buf_fini(&r->pend_text);
    free(r->tools);
    free(r);
}

static enum st_reasoning_format resolve_rf(const struct st_oai_request *oq,
                                           enum st_reasoning_format server_default)
{
    return oq->reasoning_format == ST_OAI_REASONING_DEFAULT ? server_default
           : oq->reasoning_format == ST_OAI_REASONING_NONE ? ST_REASONING_NONE
                                                           : ST_REASONING_DEEPSEEK;
}

/* The rendered prompt ends with a closed think block ("</think>" and
 * blanks: Qwen3 with enable_thinking false): no think block may follow. */
static bool prompt_closes_think(const char *p)
{
    size_t n = strlen(p);
    while (n > 0 && strchr(" \t\r\n", p[n - 1]))
        n--;
    return n >= 8 && memcmp(p + n - 8, "</think>", 8) == 0;
}

/* The reply starts inside a think block: the prompt ends with its opening
 * tag, or (cont: continue_final_message, an Anthropic prefill) the
 * continued message is cut inside one, its last "<think>" after the
 * prompt's last "</think>" (Qwen3 renders "<think>\nLet me" after its
 * own empty block), so the model's "</think>" still ends the reasoning. */
static bool prompt_in_think(const char *prompt, bool cont)
{
    size_t n = strlen(prompt);
    if (st_reply_prompt_opens_think(prompt, n))
        return true;
    if (!cont)
        return false;
    const char *open = NULL, *close = NULL;
    for (const char *q = strstr(prompt, "<think>"); q; q = strstr(q + 1, "<think>"))
        open = q;
    for (const char *q = strstr(prompt, "</think>"); q; q = strstr(q + 1, "</think>"))
        close = q;
    return open && (!close || open > close);
}

/* The think block a constrained reply (tool_choice's calls, response_format's
 * JSON) may start with, from the rendered prompt: none unless reasoning is
 * split out; the reply starts in it when the prompt opened it; none when
 * the prompt closed it (Qwen3 enable_thinking false); none for the
 * formats without one (Qwen3-Coder's xml calls, Llama's bare JSON calls,
 * Mistral v7 unless the prompt opened it); else optional when the model
 * has the tags as tokens (think_vocab; Qwen2.5 renders the same ChatML as
 * Qwen3 but never thinks). Mistral prompts spell it [THINK] .. [/THINK],
 * or <think> .. </think> (Magistral 2506): either where the vocabulary has
 * both (ST_THINK_EITHER: the reply parser reads both there), else the one
 * it has. */
static enum st_think_mode think_mode(const char *prompt, bool cont, bool reasoning,
                                     uint8_t think_vocab, enum st_think_tags *tags)
{
    size_t n = strlen(prompt);
    bool opens = prompt_in_think(prompt, cont);
    bool mistral = st_reply_prompt_is_mistral(prompt, n);
    *tags = mistral ? ST_THINK_SQUARE : ST_THINK_ANGLE;
    if (!reasoning || st_reply_prompt_wants_xml_calls(prompt, n) ||
        st_reply_prompt_wants_json_calls(prompt, n))
        return ST_THINK_NONE;
    if (opens)
        return ST_THINK_OPEN;
    if (prompt_closes_think(prompt) || (mistral && strstr(prompt, "[AVAILABLE_TOOLS] [")))
        return ST_THINK_NONE;
    bool angle = think_vocab >> ST_THINK_ANGLE & 1, square = think_vocab >> ST_THINK_SQUARE & 1;
    if (mistral && angle)
        *tags = square ? ST_THINK_EITHER : ST_THINK_ANGLE;
    else if (mistral ? !square : !angle)
        return ST_THINK_NONE;
    return ST_THINK_OPTIONAL;
}

/* Which call format the reply parser will read (the same tests as
 * st_gen_reply_setup), and whether a think block may come first. false:
 * a format the grammar does not cover (a Mistral prompt without a tools
 * section of v7's or v11's shape). */
static bool call_format(const char *prompt, bool cont, bool reasoning, uint8_t think_vocab,
                        struct st_call_spec *sp)
{
    size_t n = strlen(prompt);
    enum st_think_tags tags;
    enum st_think_mode m = think_mode(prompt, cont, reasoning, think_vocab, &tags);
    sp->think = m == ST_THINK_OPEN ? ST_CALL_THINK_OPEN
                : m == ST_THINK_OPTIONAL ? ST_CALL_THINK_OPTIONAL
                                         : ST_CALL_THINK_NONE;
    sp->think_either = tags == ST_THINK_EITHER;
    if (st_reply_prompt_is_glm(prompt, n)) {
        sp->format = ST_CALL_GLM;   /* <tool_call>NAME\n<arg_key>..: call_grammar_xml.c, GLM tags */
        return true;
    }
    if (st_reply_prompt_wants_xml_calls(prompt, n)) {
        sp->format = ST_CALL_XML;   /* the frame and the name; parameters free */
        return true;
    }
    if (st_reply_prompt_is_mistral(prompt, n)) {
        if (strstr(prompt, "[AVAILABLE_TOOLS]["))
            sp->format = ST_CALL_MISTRAL11;
        else if (strstr(prompt, "[AVAILABLE_TOOLS] ["))
            sp->format = ST_CALL_MISTRAL7;
        else
            return false;
        return true;
    }
    sp->format = st_reply_prompt_wants_json_calls(prompt, n)
                     ? ST_CALL_LLAMA
                     : ST_CALL_HERMES;   /* also templates without tools: the parser reads it */
    return true;
}

void st_gen_reply_json_think(const struct st_oai_request *oq,
                             enum st_reasoning_format server_default, const char *prompt,
                             uint8_t think_vocab, struct st_gen_params *p)
{
    p->json_think = ST_THINK_NONE;
    p->json_think_tags = ST_THINK_ANGLE;
    if (oq->kind != ST_OAI_CHAT || !prompt ||
        (!p->json_object && !p->json_schema && !p->grammar))
        return;
    enum st_think_tags tags;
    enum st_think_mode m =
        think_mode(prompt, oq->continue_final,
                   resolve_rf(oq, server_default) == ST_REASONING_DEEPSEEK, think_vocab, &tags);
    if (m == ST_THINK_OPTIONAL && st_reply_prompt_is_glm(prompt, strlen(prompt)))
        m = ST_THINK_OPTIONAL_LEAD;   /* GLM-4.5 writes "\n<think>" */
    p->json_think = (uint8_t)m;
    p->json_think_tags = (uint8_t)tags;
    static const char *const name[] = { "none", "optional", "open", "optional after blanks" };
    st_log(ST_LOG_DEBUG, "server", "response_format: think block %s (%s) before the document",
           name[m], tags == ST_THINK_EITHER ? "<think>|[THINK]" : st_think_open_tag(tags));
}

enum st_think_mode st_gen_reply_budget_think(const struct st_oai_request *oq,
                                             enum st_reasoning_format server_default,
                                             const char *prompt, uint8_t think_vocab,
                                             bool constrained, enum st_think_tags *tags)
{
    *tags = ST_THINK_ANGLE;
    if (oq->kind != ST_OAI_CHAT || !prompt)
        return ST_THINK_NONE;
    /* a constrained reply's block is its grammar's (reasoning split out or
     * not); an unconstrained reply may think whatever the reply format */
    bool reasoning = !constrained || resolve_rf(oq, server_default) == ST_REASONING_DEEPSEEK;
    return think_mode(prompt, oq->continue_final, reasoning, think_vocab, tags);
}

enum st_status st_gen_reply_calls(const struct st_oai_request *oq,
                                  enum st_reasoning_format server_default, const char *prompt,
                                  uint8_t think_vocab, struct st_call_grammar **out)
{
    *out = NULL;
    bool named = oq->tool_choice == ST_OAI_TOOLS_FUNCTION;
    if (oq->kind != ST_OAI_CHAT || !prompt || !oq->chat.tools ||
        (!named && oq->tool_choice != ST_OAI_TOOLS_REQUIRED) ||
        (named && !oq->tool_choice_name[0]))
        return ST_OK;
    struct st_call_spec sp = { .parallel = !oq->single_tool_call, .tools_json = oq->chat.tools,
                               .tools_len = strlen(oq->chat.tools),
                               .name = named ? oq->tool_choice_name : NULL };
    if (!call_format(prompt, oq->continue_final,
                     resolve_rf(oq, server_default) == ST_REASONING_DEEPSEEK, think_vocab, &sp))
        return ST_OK;
    struct st_err err = { 0 };
    int32_t fallback = 0;
    enum st_status rc = st_call_grammar_compile(&sp, out, &fallback, &err);
    if (rc == ST_ERR_NOMEM)
        return rc;
    if (rc != ST_OK) {   /* not enforced, as before: never a 400 for it */
        st_log(ST_LOG_WARN, "server", "tool_choice not enforced: %s", err.msg);
        return ST_OK;
    }
    static const char *const fmt[] = { "hermes", "llama", "mistral-v11", "mistral-v7", "xml",
                                       "glm" };
    static const char *const think[] = { "none", "optional", "open" };
    st_log(ST_LOG_DEBUG, "server", "tool_choice: reply constrained to calls (format %s, "
           "think %s, %d tool(s), %d with any-object arguments, %s)", fmt[sp.format],
           think[sp.think], (int)st_call_grammar_n_tools(*out), (int)fallback,
           sp.parallel ? "parallel" : "one call");
    return ST_OK;
}

enum st_status st_gen_reply_setup(struct st_gen *g, const struct st_oai_request *oq,
                                  enum st_reasoning_format server_default, const char *prompt)
{
    if (g->kind != ST_OAI_CHAT)
        return ST_OK;
    enum st_reasoning_format rf = resolve_rf(oq, server_default);
    struct st_reply_opts o;
    memset(&o, 0, sizeof(o));
    o.reasoning = rf == ST_REASONING_DEEPSEEK;
    o.tools = oq->chat.tools && strcmp(oq->chat.tools, "[]") != 0;
    o.in_reasoning = o.reasoning && prompt && prompt_in_think(prompt, oq->continue_final);
    o.max_calls = oq->single_tool_call ? 1 : 0;
    o.bare_json_calls = o.tools && prompt && st_reply_prompt_wants_json_calls(prompt, strlen(prompt));
    o.xml_calls = o.tools && prompt && st_reply_prompt_wants_xml_calls(prompt, strlen(prompt));
    /* Mistral prompts: [THINK] / [TOOL_CALLS] markers (also for reasoning
     * without tools: Magistral) */
    o.mistral = prompt && st_reply_prompt_is_mistral(prompt, strlen(prompt));
    /* GLM-4.5 prompts: <arg_key> calls, and the "\n" the template puts
     * before the content is the format's (dropped even without tools) */
    o.glm = prompt && st_reply_prompt_is_glm(prompt, strlen(prompt));
    o.cont = oq->continue_final;   /* ... but not a prefill's: the text goes on */
    if (!o.reasoning && !o.tools && !o.glm)
        return ST_OK;
    for (int32_t i = 0; i < g->n_choices; i++) {
        g->choices[i].reply = reply_new(&o, oq->chat.tools);
        if (!g->choices[i].reply)
            return ST_ERR_NOMEM;
    }
    return ST_OK;
}

/* ---- non-stream: accumulate ------------------------------------------ */

static enum st_status accumulate(struct st_gen_reply *r, const struct st_reply_event *ev)
{
    enum st_status rc = ST_OK;
    switch (ev->kind) {
    case ST_REPLY_CONTENT:
        return st_buf_append(&r->content, ev->text, ev->len);
    case ST_REPLY_REASONING:
        return st_buf_append(&r->reasoning, ev->text, ev->len);
    case ST_REPLY_TOOL_START:
        new_call_id(r->id);
        st_buf_reset(&r->name);
        st_buf_reset(&r->args);
        return st_buf_append(&r->name, ev->text, ev->len);
    case ST_REPLY_TOOL_ARGS:
        return st_buf_append(&r->args, ev->text, ev->len);
    case ST_REPLY_TOOL_END:
        rc = st_buf_append(&r->calls, r->n_calls ? "," : "[", 1);
        if (rc == ST_OK)
            rc = st_oai_tool_call_json(&r->calls, r->id, r->name.data ? r->name.data : "",
                                       r->name.len, r->args.data ? r->args.data : "",
                                       r->args.len);
        r->n_calls++;
        return rc;
    }
    return ST_OK;
}

/* ---- stream: chunks ----------------------------------------------------- */

/* Hand the pending delta (or an empty one, for logprobs) to the shape. */
static enum st_status flush(struct st_gen_reply *r, const struct st_oai_logprob *lp)
{
    struct st_gen *g = r->g;
    if (r->pend == ST_OAI_DELTA_NONE && !lp)
        return ST_OK;
    struct st_oai_delta d = { r->pend, r->pend_text.data ? r->pend_text.data : "",
                              r->pend_text.len, r->pend_index, r->pend_id };
    g->shape->stream_delta(g, r->ch, &d, lp);
    r->pend = ST_OAI_DELTA_NONE;
    st_buf_reset(&r->pend_text);
    return g->broken ? ST_ERR_NOMEM : ST_OK;
}

static enum st_status stream_event(struct st_gen_reply *r, const struct st_reply_event *ev)
{
    static const enum st_oai_delta_kind kinds[] = {
        [ST_REPLY_CONTENT] = ST_OAI_DELTA_CONTENT,
        [ST_REPLY_REASONING] = ST_OAI_DELTA_REASONING,
        [ST_REPLY_TOOL_START] = ST_OAI_DELTA_TOOL_START,
        [ST_REPLY_TOOL_ARGS] = ST_OAI_DELTA_TOOL_ARGS,
        [ST_REPLY_TOOL_END] = ST_OAI_DELTA_NONE,
    };
    enum st_oai_delta_kind k = kinds[ev->kind];
    if (ev->kind == ST_REPLY_TOOL_END) {
        r->n_calls++;
        return ST_OK;
    }
    bool merge = k == r->pend && k != ST_OAI_DELTA_TOOL_START &&
                 (k != ST_OAI_DELTA_TOOL_ARGS || ev->index == r->pend_index);
    enum st_status rc = merge ? ST_OK : flush(r, NULL);
    if (rc == ST_OK && !merge) {
        r->pend = k;
        r->pend_index = ev->index;
        if (k == ST_OAI_DELTA_TOOL_START)
            new_call_id(r->pend_id);
    }
    return rc == ST_OK ? st_buf_append(&r->pend_text, ev->text, ev->len) : rc;
}

static enum st_status on_event(void *ctx, const struct st_reply_event *ev)
{
    struct st_gen_reply *r = ctx;
    r->tok_reasoning |= ev->kind == ST_REPLY_REASONING;
    return r->g->stream ? stream_event(r, ev) : accumulate(r, ev);
}

/* ---- hooks from gen_emit.c and gen.c ------------------------------------- */

void st_gen_reply_token(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                        const char *text, size_t len, const struct st_oai_logprob *lp)
{
    struct st_gen_reply *r = ch->reply;
    if (g->broken || (g->stream && c->conn_done))
        return;
    r->g = g;
    r->ch = ch;
    r->tok_reasoning = false;
    enum st_status rc = st_reply_parser_feed(&r->parser, text, len, on_event, r);
    r->n_reasoning_tokens += r->tok_reasoning;
    if (rc == ST_OK && g->stream)
        rc = flush(r, lp);
    if (rc != ST_OK)
        g->broken = true;
}

void st_gen_reply_end(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch)
{
    struct st_gen_reply *r = ch->reply;
    if (g->broken || (g->stream && c->conn_done))
        return;
    r->g = g;
    r->ch = ch;
    enum st_status rc = st_reply_parser_finish(&r->parser, on_event, r);
    if (rc == ST_OK && g->stream)
        rc = flush(r, NULL);
    if (rc == ST_OK && !g->stream && r->n_calls > 0)
        rc = st_buf_append(&r->calls, "]", 1);
    if (rc != ST_OK)
        g->broken = true;
}

int64_t st_gen_reply_reasoning_tokens(const struct st_gen_choice *ch)
{
    return ch->reply ? ch->reply->n_reasoning_tokens : 0;
}

const char *st_gen_reply_finish_reason(const struct st_gen_choice *ch)
{
    if (ch->reply && ch->reply->n_calls > 0 && ch->finish == ST_FINISH_STOP)
        return "tool_calls";
    return st_oai_finish_reason(ch->finish);
}

void st_gen_reply_fill(const struct st_gen_choice *ch, struct st_oai_choice *out)
{
    const struct st_gen_reply *r = ch->reply;
    if (!r)
        return;
    out->parsed = true;
    out->text = r->content.data ? r->content.data : "";
    out->text_len = r->content.len;
    out->content_null = r->n_calls > 0 && r->content.len == 0;
    out->reasoning = r->reasoning.len ? r->reasoning.data : NULL;
    out->reasoning_len = r->reasoning.len;
    out->tool_calls = r->n_calls > 0 ? r->calls.data : NULL;
    out->tool_calls_len = r->calls.len;
    out->finish_reason = st_gen_reply_finish_reason(ch);
}
