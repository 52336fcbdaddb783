/* messages_request.c -- a POST /v1/messages body (Anthropic's Messages
 * API) -> the chat completion request it means (struct st_oai_request, by
 * way of a chat body tree and the chat parser); docs/API.md "/v1/messages".
 *
 * The translation (Messages field -> chat field):
 *   max_tokens (required)        -> max_tokens
 *   system (string / text blocks)-> a system message first
 *   messages[i] {role user|assistant, content string or blocks}:
 *     text blocks                -> the message's content (joined)
 *     tool_use {id,name,input}   -> tool_calls of the assistant message
 *                                   (arguments = input as JSON text)
 *     tool_result {tool_use_id, content, is_error} (user turns)
 *                                -> {role:tool, tool_call_id, content} messages,
 *                                   before the turn's text; is_error: "Error: " first
 *     thinking {thinking, signature} -> reasoning_content of the assistant message
 *                                   (joined; the template decides whether to render
 *                                   it: Qwen3 keeps it in a tool loop after the last
 *                                   user query, so the prompt matches what was
 *                                   generated and the prefix cache holds)
 *     redacted_thinking          -> dropped (encrypted: nothing to render)
 *     image, document, others    -> 400 (text only)
 *   tools [{name, description, input_schema}] -> function tools; a tool with a
 *                                   server tool 'type' (web_search_..., bash_...) is a 400
 *   tool_choice {type auto|any|tool|none, name, disable_parallel_tool_use}
 *                                -> "auto" / "required" / {function:{name}} / "none",
 *                                   parallel_tool_calls
 *   stop_sequences               -> stop
 *   thinking {type:enabled, budget_tokens} -> thinking_budget;
 *            {type:disabled}     -> chat_template_kwargs.enable_thinking false
 *   model, stream, temperature, top_p, top_k, priority (+ strata's chat
 *   extensions seed, min_p, cache_prompt, logit_bias, and llama-server's
 *   grammar: GBNF, a 400 with tool_choice any / tool) -> as they are
 * Every other field (metadata, service_tier, ...) is ignored. A 400 names
 * the Messages field (stop_sequences, thinking.budget_tokens,
 * tools[i].input_schema, ...), never the chat field it became: the
 * translation checks what it moves, and the chat parser calls stop
 * stop_sequences ('names' below). The pieces shared with /v1/responses
 * (chat messages, tool calls, the parse path): translate.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"
#include "server/anthropic/anthropic.h"

/* Passed to the chat parser as they are. */
static const char *const passed[] = {
    "model", "stream", "temperature", "top_p", "top_k", "priority", "seed", "min_p",
    "cache_prompt", "logit_bias", "max_tokens", "grammar",
};

/* The type of a block, or NULL when it is not an object with a string type. */
static const char *block_type(const cJSON *b)
{
    const cJSON *t = cJSON_IsObject(b) ? cJSON_GetObjectItemCaseSensitive(b, "type") : NULL;
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* Text blocks (only) joined into b; 'where' names the array in errors. */
static enum st_status join_text(const cJSON *blocks, const char *where, const char *param,
                                struct st_buf *b, struct st_api_error *e)
{
    size_t j = 0;
    const cJSON *blk;
    cJSON_ArrayForEach(blk, blocks) {
        const char *t = block_type(blk);
        const cJSON *text = cJSON_IsObject(blk) ? cJSON_GetObjectItemCaseSensitive(blk, "text")
                                                : NULL;
        if (!t)
            return st_api_error_set(e, ST_ERR_INVALID, param, NULL,
                                    "%s[%zu]: expected a content block (an object with a "
                                    "string 'type').", where, j);
        if (strcmp(t, "text") != 0)
            return st_api_error_set(e, ST_ERR_UNSUPPORTED, param, NULL,
                                    "%s[%zu]: content block type '%.40s' is not supported "
                                    "here: this server takes text only.", where, j, t);
        if (!cJSON_IsString(text))
            return st_api_error_set(e, ST_ERR_INVALID, param, NULL,
                                    "%s[%zu].text: expected a string.", where, j);
        if (st_buf_append(b, text->valuestring, strlen(text->valuestring)) != ST_OK)
            return st_tr_nomem(e);
        j++;
    }
    return ST_OK;
}

/* A string or an array of text blocks, as one string into b. */
static enum st_status text_of(const cJSON *v, const char *where, const char *param,
                              struct st_buf *b, struct st_api_error *e)
{
    if (cJSON_IsString(v))
        return st_buf_append(b, v->valuestring, strlen(v->valuestring)) == ST_OK ? ST_OK
                                                                                 : st_tr_nomem(e);
    if (cJSON_IsArray(v))
        return join_text(v, where, param, b, e);
    return st_api_error_set(e, ST_ERR_INVALID, param, NULL,
                            "%s: expected a string or an array of text blocks.", where);
}

/* ---- content blocks of one turn ------------------------------------------- */

struct turn {
    size_t i;              /* messages[i] */
    bool user;
    struct st_buf text;    /* the turn's text blocks */
    struct st_buf thought; /* assistant: its thinking blocks' text */
    bool thinks;           /* a thinking block came (maybe empty) */
    cJSON *calls;          /* assistant: chat tool_calls (owned until attached) */
};

static enum st_status tool_use(struct turn *t, const cJSON *blk, size_t j,
                               struct st_api_error *e)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(blk, "id");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(blk, "name");
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(blk, "input");
    if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsObject(input))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "messages[%zu].content[%zu]: a tool_use block needs a string "
                                "'id', a string 'name' and an object 'input'.", t->i, j);
    if (!t->calls && !(t->calls = cJSON_CreateArray()))
        return st_tr_nomem(e);
    char *args = cJSON_PrintUnformatted(input);
    bool ok = args && st_tr_add_call(t->calls, id->valuestring, name->valuestring, args);
    cJSON_free(args);
    return ok ? ST_OK : st_tr_nomem(e);
}

static enum st_status tool_result(const struct turn *t, const cJSON *blk, size_t j, cJSON *msgs,
                                  struct st_api_error *e)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(blk, "tool_use_id");
    const cJSON *content = st_oai_field(blk, "content");
    char where[64];
    snprintf(where, sizeof(where), "messages[%zu].content[%zu].content", t->i, j);
    if (!cJSON_IsString(id))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "messages[%zu].content[%zu]: a tool_result block needs a string "
                                "'tool_use_id'.", t->i, j);
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = ST_OK;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(blk, "is_error")))
        rc = st_buf_append(&b, ST_LIT("Error: ")) == ST_OK ? ST_OK : st_tr_nomem(e);
    if (rc == ST_OK && content)
        rc = text_of(content, where, "messages", &b, e);
    cJSON *m = NULL;
    if (rc == ST_OK && (!st_tr_add_msg(msgs, "tool", b.data ? b.data : "", &m) ||
                        !cJSON_AddStringToObject(m, "tool_call_id", id->valuestring)))
        rc = st_tr_nomem(e);
    st_buf_fini(&b);
    return rc;
}

static enum st_status thinking(struct turn *t, const cJSON *blk, size_t j,
                               struct st_api_error *e)
{
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(blk, "thinking");
    if (!cJSON_IsString(text))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "messages[%zu].content[%zu]: a thinking block needs a string "
                                "'thinking'.", t->i, j);
    t->thinks = true;
    return st_buf_append(&t->thought, text->valuestring, strlen(text->valuestring)) == ST_OK
               ? ST_OK : st_tr_nomem(e);
}

static enum st_status block(struct turn *t, const cJSON *blk, size_t j, cJSON *msgs,
                            struct st_api_error *e)
{
    const char *type = block_type(blk);
    if (!type)
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "messages[%zu].content[%zu]: expected a content block (an object "
                                "with a string 'type').", t->i, j);
    if (strcmp(type, "text") == 0) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(blk, "text");
        if (!cJSON_IsString(text))
            return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                    "messages[%zu].content[%zu].text: expected a string.", t->i,
                                    j);
        return st_buf_append(&t->text, text->valuestring, strlen(text->valuestring)) == ST_OK
                   ? ST_OK : st_tr_nomem(e);
    }
    if (!t->user && strcmp(type, "tool_use") == 0)
        return tool_use(t, blk, j, e);
    if (t->user && strcmp(type, "tool_result") == 0)
        return tool_result(t, blk, j, msgs, e);
    if (!t->user && strcmp(type, "thinking") == 0)
        return thinking(t, blk, j, e);
    if (!t->user && strcmp(type, "redacted_thinking") == 0)
        return ST_OK;
    return st_api_error_set(e, ST_ERR_UNSUPPORTED, "messages", NULL,
                            "messages[%zu].content[%zu]: content block type '%.40s' is not "
                            "supported in a%s turn: this server takes text only (text, tool_use, "
                            "tool_result, thinking).", t->i, j, type,
                            t->user ? " user" : "n assistant");
}

static enum st_status turn(const cJSON *m, size_t i, cJSON *msgs, struct st_api_error *e)
{
    const cJSON *role = cJSON_IsObject(m) ? cJSON_GetObjectItemCaseSensitive(m, "role") : NULL;
    const cJSON *content = cJSON_IsObject(m) ? cJSON_GetObjectItemCaseSensitive(m, "content")
                                             : NULL;
    if (!cJSON_IsString(role) || (strcmp(role->valuestring, "user") != 0 &&
                                  strcmp(role->valuestring, "assistant") != 0))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "messages[%zu].role: expected \"user\" or \"assistant\" (the "
                                "system prompt goes in the top-level 'system').", i);
    if (!cJSON_IsString(content) && !cJSON_IsArray(content))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "messages[%zu].content: expected a string or an array of "
                                "content blocks.", i);
    if (cJSON_IsString(content))
        return st_tr_add_msg(msgs, role->valuestring, content->valuestring, NULL)
                   ? ST_OK : st_tr_nomem(e);
    struct turn t = { .i = i, .user = strcmp(role->valuestring, "user") == 0 };
    st_buf_init(&t.text);
    st_buf_init(&t.thought);
    enum st_status rc = ST_OK;
    size_t j = 0;
    bool results = false;
    const cJSON *blk;
    cJSON_ArrayForEach(blk, content) {
        results |= t.user && block_type(blk) && strcmp(block_type(blk), "tool_result") == 0;
        if ((rc = block(&t, blk, j++, msgs, e)) != ST_OK)
            break;
    }
    /* a user turn of tool results alone adds no user message */
    cJSON *msg = NULL;
    if (rc == ST_OK && (t.text.len || !results) &&
        !st_tr_add_msg(msgs, role->valuestring, t.text.data ? t.text.data : "", &msg))
        rc = st_tr_nomem(e);
    if (rc == ST_OK && t.thinks &&
        !cJSON_AddStringToObject(msg, "reasoning_content", t.thought.data ? t.thought.data : ""))
        rc = st_tr_nomem(e);
    if (rc == ST_OK && t.calls) {
        if (cJSON_AddItemToObject(msg, "tool_calls", t.calls))
            t.calls = NULL;
        else
            rc = st_tr_nomem(e);
    }
    cJSON_Delete(t.calls);
    st_buf_fini(&t.text);
    st_buf_fini(&t.thought);
    return rc;
}

/* A last turn of the assistant's text is a prefill: the reply continues it
 * (chat's continue_final_message) and holds only what follows. Anthropic's
 * rule: that text may not end in whitespace. An empty one is dropped: the
 * reply is a new turn, as without it. */
static enum st_status prefill(cJSON *chat, cJSON *msgs, struct st_api_error *e)
{
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(last, "content");
    if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant") != 0 ||
        cJSON_GetObjectItemCaseSensitive(last, "tool_calls") || !cJSON_IsString(text))
        return ST_OK;
    size_t n = strlen(text->valuestring);
    if (n == 0) {
        cJSON_DeleteItemFromArray(msgs, cJSON_GetArraySize(msgs) - 1);
        return ST_OK;
    }
    if (strchr(" \t\r\n\f\v", text->valuestring[n - 1]))
        return st_tr_bad(e, "messages", "messages: final assistant content cannot end with "
                                        "trailing whitespace");
    return cJSON_AddTrueToObject(chat, "continue_final_message") ? ST_OK : st_tr_nomem(e);
}

static enum st_status build_messages(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    const cJSON *sys = st_oai_field(root, "system");
    const cJSON *in = st_oai_field(root, "messages");
    if (!in)
        return st_tr_bad(e, "messages", "messages: Field required.");
    if (!cJSON_IsArray(in))
        return st_tr_bad(e, "messages", "messages: expected an array of messages.");
    cJSON *msgs = cJSON_AddArrayToObject(chat, "messages");
    if (!msgs)
        return st_tr_nomem(e);
    if (sys) {
        struct st_buf b;
        st_buf_init(&b);
        enum st_status rc = text_of(sys, "system", "system", &b, e);
        if (rc == ST_OK && !st_tr_add_msg(msgs, "system", b.data ? b.data : "", NULL))
            rc = st_tr_nomem(e);
        st_buf_fini(&b);
        if (rc != ST_OK)
            return rc;
    }
    enum st_status rc = st_tr_each(in, turn, msgs, e);
    /* An empty list (Anthropic: 400) is one empty user turn, as lenient as
     * llama-server, which answers it (docs/API.md "Messages"). */
    if (rc == ST_OK && cJSON_GetArraySize(in) == 0 && !st_tr_add_msg(msgs, "user", "", NULL))
        rc = st_tr_nomem(e);
    return rc == ST_OK ? prefill(chat, msgs, e) : rc;
}

/* ---- tools, tool_choice ------------------------------------------------------ */

static enum st_status tool(const cJSON *t, size_t i, cJSON *out, struct st_api_error *e)
{
    const char *type = block_type(t);
    if (type && strcmp(type, "custom") != 0)
        return st_api_error_set(e, ST_ERR_UNSUPPORTED, "tools", NULL,
                                "tools[%zu]: server tool type '%.60s' is not supported: this "
                                "server runs client tools ({name, description, input_schema}) "
                                "only.", i, type);
    const cJSON *name = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "name") : NULL;
    const cJSON *desc = cJSON_IsObject(t) ? st_oai_field(t, "description") : NULL;
    const cJSON *schema = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "input_schema")
                                            : NULL;
    if (!cJSON_IsString(name) || !name->valuestring[0])
        return st_api_error_set(e, ST_ERR_INVALID, "tools", NULL,
                                "tools[%zu].name: expected a non-empty string.", i);
    if (!cJSON_IsObject(schema))
        return st_api_error_set(e, ST_ERR_INVALID, "tools", NULL,
                                "tools[%zu].input_schema: expected an object (a JSON Schema).",
                                i);
    if (desc && !cJSON_IsString(desc))
        return st_api_error_set(e, ST_ERR_INVALID, "tools", NULL,
                                "tools[%zu].description: expected a string.", i);
    cJSON *fn = st_tr_add_tool(out);
    if (!fn || !cJSON_AddStringToObject(fn, "name", name->valuestring) ||
        (desc && !cJSON_AddStringToObject(fn, "description", desc->valuestring)))
        return st_tr_nomem(e);
    cJSON *p = cJSON_Duplicate(schema, true);
    if (!p || !cJSON_AddItemToObject(fn, "parameters", p)) {
        cJSON_Delete(p);
        return st_tr_nomem(e);
    }
    return ST_OK;
}

static enum st_status tool_choice(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    const cJSON *tc = st_oai_field(root, "tool_choice");
    if (!tc)
        return ST_OK;
    const char *type = block_type(tc);
    const cJSON *name = type ? cJSON_GetObjectItemCaseSensitive(tc, "name") : NULL;
    const cJSON *dp = type ? st_oai_field(tc, "disable_parallel_tool_use") : NULL;
    static const char *const map[][2] = { { "auto", "auto" }, { "any", "required" },
                                          { "none", "none" } };
    const char *to = NULL;
    for (size_t i = 0; type && i < ST_ARRAY_LEN(map); i++)
        to = strcmp(type, map[i][0]) == 0 ? map[i][1] : to;
    bool named = type && strcmp(type, "tool") == 0;
    if ((!to && !named) || (named && !cJSON_IsString(name)) || (dp && !cJSON_IsBool(dp)))
        return st_tr_bad(e, "tool_choice",
                         "tool_choice: expected {\"type\": \"auto\" | \"any\" | "
                         "\"none\"} or {\"type\": \"tool\", \"name\": ...}, with an "
                         "optional boolean 'disable_parallel_tool_use'.");
    if (dp && !cJSON_AddBoolToObject(chat, "parallel_tool_calls", !cJSON_IsTrue(dp)))
        return st_tr_nomem(e);
    if (to)
        return cJSON_AddStringToObject(chat, "tool_choice", to) ? ST_OK : st_tr_nomem(e);
    return st_tr_named_choice(chat, name->valuestring, e);
}

static enum st_status build_tools(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    enum st_status rc = st_tr_tools(st_oai_field(root, "tools"), tool, "tools: expected an array.",
                                    chat, e);
    return rc == ST_OK ? tool_choice(root, chat, e) : rc;
}

/* ---- stop_sequences, thinking ------------------------------------------------- */

static enum st_status build_misc(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    const cJSON *stop = st_oai_field(root, "stop_sequences");
    if (stop) {
        if (!cJSON_IsArray(stop))
            return st_tr_bad(e, "stop_sequences", "stop_sequences: expected an array of strings.");
        cJSON *d = cJSON_Duplicate(stop, true);   /* the chat parser checks the members */
        if (!d || !cJSON_AddItemToObject(chat, "stop", d)) {
            cJSON_Delete(d);
            return st_tr_nomem(e);
        }
    }
    const cJSON *th = st_oai_field(root, "thinking");
    if (!th)
        return ST_OK;
    const char *type = block_type(th);
    if (type && strcmp(type, "enabled") == 0) {
        int64_t n = 0;
        bool has = false;
        if (st_oai_get_int(th, "budget_tokens", 0, INT32_MAX, &n, &has, e) != ST_OK || !has)
            return st_tr_bad(e, "thinking.budget_tokens", "thinking.budget_tokens: expected an "
                                                          "integer >= 0 (required with type "
                                                          "\"enabled\").");
        return cJSON_AddNumberToObject(chat, "thinking_budget", (double)n) ? ST_OK : st_tr_nomem(e);
    }
    if (type && strcmp(type, "disabled") == 0) {
        cJSON *kw = cJSON_AddObjectToObject(chat, "chat_template_kwargs");
        return kw && cJSON_AddFalseToObject(kw, "enable_thinking") ? ST_OK : st_tr_nomem(e);
    }
    if (type && strcmp(type, "adaptive") == 0)
        return ST_OK;   /* the model decides: as without the field */
    return st_tr_bad(e, "thinking",
                     "thinking: expected {\"type\": \"enabled\", \"budget_tokens\": N}, "
                     "{\"type\": \"disabled\"} or {\"type\": \"adaptive\"}.");
}

/* The fields passed to the chat parser as they are. */
static enum st_status copy_passed(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    for (size_t i = 0; i < ST_ARRAY_LEN(passed); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, passed[i]);
        cJSON *d = v ? cJSON_Duplicate(v, true) : NULL;
        if (v && (!d || !cJSON_AddItemToObject(chat, passed[i], d))) {
            cJSON_Delete(d);
            return st_tr_nomem(e);
        }
    }
    return ST_OK;
}

/* need_max: max_tokens is required (a message; count_tokens takes none). */
static enum st_status translate(const cJSON *root, bool need_max, cJSON **out,
                                struct st_api_error *e)
{
    static const st_tr_step_fn steps[] = { copy_passed, build_messages, build_tools,
                                           build_misc };
    *out = NULL;
    if (need_max && !st_oai_field(root, "max_tokens"))
        return st_tr_bad(e, "max_tokens", "max_tokens: Field required.");
    int64_t max = 0;
    enum st_status rc = st_oai_get_int(root, "max_tokens", 1, INT32_MAX, &max, NULL, e);
    if (rc != ST_OK)
        return rc;
    cJSON *chat = cJSON_CreateObject();
    if (!chat)
        return st_tr_nomem(e);
    return st_tr_build(root, chat, steps, ST_ARRAY_LEN(steps), out, e);
}

enum st_status st_msg_translate_tree(const cJSON *root, cJSON **chat, struct st_api_error *e)
{
    return translate(root, true, chat, e);
}

/* What the chat parser's 400s call the chat fields a Messages body's fields
 * became (the others: none of its 400s can fire on what translate() built). */
static const struct st_oai_names names = {
    .stop = "stop_sequences",
    .format = "response_format",
    .schema = "response_format.json_schema",
    .json_format = "a JSON 'response_format' or 'json_schema'",
    .forced_calls = "tool_choice {\"type\": \"any\"} or {\"type\": \"tool\"}",
};

/* ctx: a bool, max_tokens required (false for count_tokens). */
static enum st_status translate_cb(const cJSON *root, void *ctx, cJSON **chat,
                                   struct st_api_error *e)
{
    return translate(root, *(const bool *)ctx, chat, e);
}

static const struct st_tr_api api = { .translate = translate_cb, .names = &names };

enum st_status st_msg_parse(const char *body, size_t len, struct st_oai_request *oq,
                            struct st_api_error *e)
{
    bool need_max = true;
    return st_tr_parse(body, len, &api, &need_max, oq, e);
}

enum st_status st_msg_parse_count(const char *body, size_t len, struct st_oai_request *oq,
                                  struct st_api_error *e)
{
    bool need_max = false;
    return st_tr_parse(body, len, &api, &need_max, oq, e);
}
