/* responses_request.c -- a POST /v1/responses body (OpenAI's Responses
 * API) -> the chat completion request it means (struct st_oai_request, by
 * way of a chat body tree and the chat parser), plus the request fields
 * every response object echoes back (docs/API.md "/v1/responses").
 *
 * The translation (Responses field -> chat field):
 *   input (string)              -> messages [{role:user, content}]
 *   input (array of items)      -> messages: {role, content} items (content a
 *                                  string or input_text/output_text/refusal parts,
 *                                  joined); function_call items -> tool_calls of
 *                                  the assistant message before them (a new one
 *                                  when the last message is not an assistant's);
 *                                  function_call_output -> {role:tool,
 *                                  tool_call_id, content}; reasoning items ->
 *                                  reasoning_content of the assistant turn they
 *                                  open (the message / calls after them join it)
 *   instructions                -> a system message first
 *   tools [{type:function, name, description, parameters, strict}]
 *                               -> tools [{type:function, function:{...}}]
 *   tool_choice {type:function, name} -> {type:function, function:{name}}
 *   max_output_tokens           -> max_tokens
 *   text.format                 -> response_format (json_schema's members move
 *                                  under "json_schema")
 *   reasoning.effort "none"     -> chat_template_kwargs.enable_thinking false
 *                                  (unless the body sets it); other efforts: no effect
 * Everything else of the body is handed to the chat parser as it is (model,
 * stream, temperature, top_p, user, priority, parallel_tool_calls and
 * strata's chat extensions such as top_k, seed or llama-server's GBNF
 * grammar, with chat's 400s: not with a JSON text.format or an enforced
 * tool_choice), except the chat fields
 * whose Responses meaning differs or that a response cannot carry (listed
 * in 'dropped' below). Refused with a 400 naming the field: conversation,
 * background: true, prompt (stored prompts), tool types other than
 * function, input items that need stored state or are not text.
 * store and previous_response_id: responses_chain.c, before the translation
 * (which then reads the expanded input).
 *
 * A 400 names the Responses field (max_output_tokens, text.format, input,
 * tools), never the chat field it became: the translation checks what it
 * moves, and the chat parser calls response_format text.format ('names'
 * below). The pieces
 * shared with /v1/messages (chat messages, tool calls, the parse path):
 * translate.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"
#include "server/responses/responses.h"
#include "strata/mutf8.h"

/* Chat fields a Responses body does not pass on under the same name. */
static const char *const dropped[] = {
    "input", "instructions", "tools", "tool_choice", "text", "reasoning", "max_output_tokens",
    "messages", "prompt", "max_tokens", "max_completion_tokens", "response_format",
    "json_schema", "n", "logprobs", "top_logprobs", "echo", "prompt_logprobs", "suffix",
    "stream_options", "metadata", "store", "include", "previous_response_id", "conversation",
    "background", "truncation", "service_tier", "max_tool_calls", "functions",
};

/* ---- input items -> messages ------------------------------------------- */

/* The text of a content array: input_text / output_text / text parts'
 * "text" and refusal parts' "refusal", joined. idx: the item's index. */
static enum st_status join_parts(const cJSON *parts, size_t idx, struct st_buf *b,
                                 struct st_api_error *e)
{
    size_t pi = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, parts) {
        const cJSON *type = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "type") : NULL;
        if (!cJSON_IsString(type))
            return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                    "Invalid content part input[%zu].content[%zu]: expected an "
                                    "object with a string 'type'.", idx, pi);
        const char *t = type->valuestring;
        bool refusal = strcmp(t, "refusal") == 0;
        if (!refusal && strcmp(t, "input_text") != 0 && strcmp(t, "output_text") != 0 &&
            strcmp(t, "text") != 0)
            return st_api_error_set(e, ST_ERR_UNSUPPORTED, "input", NULL,
                                    "Content part type '%.40s' (input[%zu].content[%zu]) is not "
                                    "supported: this server takes text only.", t, idx, pi);
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(p, refusal ? "refusal" : "text");
        if (!cJSON_IsString(text))
            return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                    "Invalid content part input[%zu].content[%zu]: '%s' must be a "
                                    "string.", idx, pi, refusal ? "refusal" : "text");
        if (st_buf_append(b, text->valuestring, strlen(text->valuestring)) != ST_OK)
            return st_tr_nomem(e);
        pi++;
    }
    return ST_OK;
}

/* A string, or an array of text parts, as one string (added to 'msg' under 'key'). */
static enum st_status add_text(cJSON *msg, const char *key, const cJSON *v, size_t idx,
                               const char *what, struct st_api_error *e)
{
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = ST_OK;
    if (cJSON_IsString(v))
        rc = st_buf_append(&b, v->valuestring, strlen(v->valuestring)) == ST_OK ? ST_OK
                                                                                : st_tr_nomem(e);
    else if (cJSON_IsArray(v))
        rc = join_parts(v, idx, &b, e);
    else
        rc = st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                              "Invalid 'input[%zu].%s': expected a string or an array of text "
                              "parts.", idx, what);
    if (rc == ST_OK && !cJSON_AddStringToObject(msg, key, b.data ? b.data : ""))
        rc = st_tr_nomem(e);
    st_buf_fini(&b);
    return rc;
}

static bool role_ok(const char *r)
{
    return strcmp(r, "user") == 0 || strcmp(r, "assistant") == 0 || strcmp(r, "system") == 0 ||
           strcmp(r, "developer") == 0;
}

/* An assistant turn a reasoning item opened that nothing has joined yet
 * (reasoning, empty content, no calls). */
static bool is_reasoning_alone(const cJSON *m)
{
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    return cJSON_IsString(role) && strcmp(role->valuestring, "assistant") == 0 &&
           cJSON_GetObjectItemCaseSensitive(m, "reasoning_content") &&
           !cJSON_GetObjectItemCaseSensitive(m, "tool_calls") && cJSON_IsString(content) &&
           !content->valuestring[0];
}

/* The last message when it is such a turn; else NULL. */
static cJSON *reasoning_alone(cJSON *msgs)
{
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    return last && is_reasoning_alone(last) ? last : NULL;
}

static enum st_status message_item(const cJSON *it, size_t idx, cJSON *msgs,
                                   struct st_api_error *e)
{
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
    if (!cJSON_IsString(role) || !role_ok(role->valuestring))
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                "Invalid 'input[%zu].role': expected one of user, assistant, "
                                "system, developer.", idx);
    cJSON *m = strcmp(role->valuestring, "assistant") == 0 ? reasoning_alone(msgs) : NULL;
    if (m)
        cJSON_DeleteItemFromObjectCaseSensitive(m, "content");   /* the reasoning's turn */
    else if (!st_tr_add_msg(msgs, role->valuestring, NULL, &m))
        return st_tr_nomem(e);
    return add_text(m, "content", cJSON_GetObjectItemCaseSensitive(it, "content"), idx,
                    "content", e);
}

/* A reasoning item's text becomes the reasoning_content of the assistant
 * turn it opens: a new assistant message that the next assistant message or
 * function_call joins. The template decides whether to render it (Qwen3's
 * and GLM-4.5's keep it after the last user query, i.e. in a tool loop, so
 * a chained or resent loop's prompt is what the model wrote and the prefix
 * cache holds). Only `content` (reasoning_text parts, as this server
 * writes them) counts: a summary is not what the model wrote, and an item
 * without content (encrypted, or summaries only) adds nothing. */
static enum st_status reasoning_item(const cJSON *it, size_t idx, cJSON *msgs,
                                     struct st_api_error *e)
{
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(it, "content");
    if (!cJSON_IsArray(parts) || cJSON_GetArraySize(parts) == 0)
        return ST_OK;
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = ST_OK;
    size_t pi = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, parts) {
        const cJSON *text = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "text") : NULL;
        if (!cJSON_IsString(text)) {
            rc = st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                  "Invalid content part input[%zu].content[%zu]: expected an "
                                  "object with a string 'text'.", idx, pi);
            break;
        }
        if (st_buf_append(&b, text->valuestring, strlen(text->valuestring)) != ST_OK) {
            rc = st_tr_nomem(e);
            break;
        }
        pi++;
    }
    cJSON *m = NULL;
    if (rc == ST_OK && (!st_tr_add_msg(msgs, "assistant", "", &m) ||
                        !cJSON_AddStringToObject(m, "reasoning_content", b.data ? b.data : "")))
        rc = st_tr_nomem(e);
    st_buf_fini(&b);
    return rc;
}

static enum st_status need_str(const cJSON *it, const char *key, size_t idx, const char **out,
                               struct st_api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);
    if (!cJSON_IsString(v))
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                "Missing or invalid 'input[%zu].%s': expected a string.", idx,
                                key);
    *out = v->valuestring;
    return ST_OK;
}

/* The assistant message a function_call joins: the last message when it is
 * an assistant's, else a new one with empty content. */
static cJSON *assistant_for_call(cJSON *msgs)
{
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    const cJSON *role = last ? cJSON_GetObjectItemCaseSensitive(last, "role") : NULL;
    if (cJSON_IsString(role) && strcmp(role->valuestring, "assistant") == 0)
        return last;
    cJSON *m = NULL;
    return st_tr_add_msg(msgs, "assistant", "", &m) ? m : NULL;
}

static enum st_status call_item(const cJSON *it, size_t idx, cJSON *msgs,
                                struct st_api_error *e)
{
    const char *call_id = NULL, *name = NULL;
    enum st_status rc = need_str(it, "call_id", idx, &call_id, e);
    if (rc == ST_OK)
        rc = need_str(it, "name", idx, &name, e);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(it, "arguments");
    if (rc == ST_OK && !cJSON_IsString(args))
        rc = st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                              "Missing or invalid 'input[%zu].arguments': expected a string "
                              "(the arguments as JSON text).", idx);
    if (rc != ST_OK)
        return rc;
    cJSON *m = assistant_for_call(msgs);
    if (!m)
        return st_tr_nomem(e);
    cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (!calls && !(calls = cJSON_AddArrayToObject(m, "tool_calls")))
        return st_tr_nomem(e);
    return st_tr_add_call(calls, call_id, name, args->valuestring) ? ST_OK : st_tr_nomem(e);
}

static enum st_status output_item(const cJSON *it, size_t idx, cJSON *msgs,
                                  struct st_api_error *e)
{
    const char *call_id = NULL;
    enum st_status rc = need_str(it, "call_id", idx, &call_id, e);
    if (rc != ST_OK)
        return rc;
    cJSON *m = NULL;
    if (!st_tr_add_msg(msgs, "tool", NULL, &m) ||
        !cJSON_AddStringToObject(m, "tool_call_id", call_id))
        return st_tr_nomem(e);
    return add_text(m, "content", cJSON_GetObjectItemCaseSensitive(it, "output"), idx, "output",
                    e);
}

static enum st_status input_item(const cJSON *it, size_t idx, cJSON *msgs,
                                 struct st_api_error *e)
{
    if (!cJSON_IsObject(it))
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                "Invalid 'input[%zu]': expected an object.", idx);
    const cJSON *type = st_oai_field(it, "type");
    if (type && !cJSON_IsString(type))
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                "Invalid 'input[%zu].type': expected a string.", idx);
    const char *t = type ? type->valuestring : "message";
    if (strcmp(t, "message") == 0)
        return message_item(it, idx, msgs, e);
    if (strcmp(t, "function_call") == 0)
        return call_item(it, idx, msgs, e);
    if (strcmp(t, "function_call_output") == 0)
        return output_item(it, idx, msgs, e);
    if (strcmp(t, "reasoning") == 0)
        return reasoning_item(it, idx, msgs, e);
    if (strcmp(t, "item_reference") == 0)
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                "Invalid 'input[%zu]': item_reference is not supported: send the "
                                "items themselves, or chain responses with "
                                "'previous_response_id'.", idx);
    return st_api_error_set(e, ST_ERR_UNSUPPORTED, "input", NULL,
                            "Input item type '%.40s' (input[%zu]) is not supported: this server "
                            "takes message, function_call, function_call_output and reasoning "
                            "items.", t, idx);
}

static enum st_status build_messages(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    const cJSON *ins = st_oai_field(root, "instructions");
    const cJSON *in = st_oai_field(root, "input");
    if (ins && !cJSON_IsString(ins))
        return st_tr_bad(e, "instructions", "Invalid type for 'instructions': expected a string.");
    if (!in)
        return st_tr_bad(e, "input", "Missing required parameter: 'input'.");
    if (!cJSON_IsString(in) && !cJSON_IsArray(in))
        return st_tr_bad(e, "input", "Invalid type for 'input': expected a string or an array of "
                                     "input items.");
    cJSON *msgs = cJSON_AddArrayToObject(chat, "messages");
    if (!msgs)
        return st_tr_nomem(e);
    if (ins && !st_tr_add_msg(msgs, "system", ins->valuestring, NULL))
        return st_tr_nomem(e);
    if (cJSON_IsString(in))
        return st_tr_add_msg(msgs, "user", in->valuestring, NULL) ? ST_OK : st_tr_nomem(e);
    enum st_status rc = st_tr_each(in, input_item, msgs, e);
    if (rc != ST_OK)
        return rc;
    /* a reasoning item last has no turn to join: nothing to render */
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    if (last && is_reasoning_alone(last))
        cJSON_DeleteItemFromArray(msgs, cJSON_GetArraySize(msgs) - 1);
    bool answerable = false;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs)
        answerable |= !is_reasoning_alone(m);
    if (!answerable)
        return st_tr_bad(e, "input", "Invalid 'input': no message to answer (an empty array, or "
                                     "reasoning items only).");
    return ST_OK;
}

/* ---- tools, tool_choice ------------------------------------------------- */

static enum st_status tool_item(const cJSON *t, size_t i, cJSON *out, struct st_api_error *e)
{
    const cJSON *type = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "type") : NULL;
    if (!cJSON_IsString(type))
        return st_api_error_set(e, ST_ERR_INVALID, "tools", NULL,
                                "Invalid 'tools[%zu]': expected an object with a string 'type'.",
                                i);
    if (strcmp(type->valuestring, "function") != 0)
        return st_api_error_set(e, ST_ERR_UNSUPPORTED, "tools", NULL,
                                "Tool type '%.40s' (tools[%zu]) is not supported: this server "
                                "takes function tools only.", type->valuestring, i);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
    const cJSON *params = st_oai_field(t, "parameters");
    const cJSON *desc = st_oai_field(t, "description");
    const cJSON *strict = st_oai_field(t, "strict");
    if (!cJSON_IsString(name) || !name->valuestring[0])
        return st_api_error_set(e, ST_ERR_INVALID, "tools", NULL,
                                "Missing or invalid 'tools[%zu].name': expected a non-empty "
                                "string.", i);
    if ((params && !cJSON_IsObject(params)) || (desc && !cJSON_IsString(desc)) ||
        (strict && !cJSON_IsBool(strict)))
        return st_api_error_set(e, ST_ERR_INVALID, "tools", NULL,
                                "Invalid 'tools[%zu]': 'parameters' must be an object, "
                                "'description' a string and 'strict' a boolean.", i);
    cJSON *fn = st_tr_add_tool(out);
    if (!fn || !st_tr_copy_member(t, "name", fn) || !st_tr_copy_member(t, "description", fn) ||
        !st_tr_copy_member(t, "parameters", fn) || !st_tr_copy_member(t, "strict", fn))
        return st_tr_nomem(e);
    return ST_OK;
}

static enum st_status build_tools(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    enum st_status rc = st_tr_tools(st_oai_field(root, "tools"), tool_item,
                                    "Invalid type for 'tools': expected an array.", chat, e);
    if (rc != ST_OK)
        return rc;
    const cJSON *tc = st_oai_field(root, "tool_choice");
    if (!tc || cJSON_IsString(tc))   /* "auto", "none", "required": the chat parser checks */
        return tc && !st_tr_copy_member(root, "tool_choice", chat) ? st_tr_nomem(e) : ST_OK;
    const cJSON *type = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "type") : NULL;
    const cJSON *name = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "name") : NULL;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 ||
        !cJSON_IsString(name))
        return st_tr_bad(e, "tool_choice", "Invalid value for 'tool_choice': expected \"none\", "
                                           "\"auto\", \"required\" or {\"type\": \"function\", "
                                           "\"name\": ...} (this server has function tools only).");
    return st_tr_named_choice(chat, name->valuestring, e);
}

/* ---- text.format, reasoning, max_output_tokens ---------------------------- */

static enum st_status build_format(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    const cJSON *text = st_oai_field(root, "text");
    if (!text)
        return ST_OK;
    if (!cJSON_IsObject(text))
        return st_tr_bad(e, "text", "Invalid type for 'text': expected an object.");
    const cJSON *f = st_oai_field(text, "format");
    if (!f)
        return ST_OK;
    const cJSON *type = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "type") : NULL;
    if (!cJSON_IsString(type))
        return st_tr_bad(e, "text.format",
                         "Invalid 'text.format': expected an object with a string "
                         "'type'.");
    const char *t = type->valuestring;
    if (strcmp(t, "text") == 0)
        return ST_OK;
    cJSON *rf = cJSON_AddObjectToObject(chat, "response_format");
    if (!rf || !cJSON_AddStringToObject(rf, "type", t))
        return st_tr_nomem(e);
    if (strcmp(t, "json_object") == 0)
        return ST_OK;
    if (strcmp(t, "json_schema") != 0)
        return st_tr_bad(e, "text.format",
                         "Invalid value for 'text.format.type': expected \"text\", "
                         "\"json_object\" or \"json_schema\".");
    /* {type, name, schema, strict, description} -> {type, json_schema:{...}};
     * the chat parser checks the members (and names them text.format) */
    cJSON *js = cJSON_AddObjectToObject(rf, "json_schema");
    if (!js || !st_tr_copy_member(f, "name", js) || !st_tr_copy_member(f, "schema", js) ||
        !st_tr_copy_member(f, "strict", js) || !st_tr_copy_member(f, "description", js))
        return st_tr_nomem(e);
    return ST_OK;
}

static const char *const efforts[] = { "none", "minimal", "low", "medium", "high", "xhigh" };

static enum st_status build_reasoning(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    const cJSON *r = st_oai_field(root, "reasoning");
    if (!r)
        return ST_OK;
    if (!cJSON_IsObject(r))
        return st_tr_bad(e, "reasoning", "Invalid type for 'reasoning': expected an object.");
    const cJSON *eff = st_oai_field(r, "effort");
    if (!eff)
        return ST_OK;
    bool known = false;
    for (size_t i = 0; cJSON_IsString(eff) && i < ST_ARRAY_LEN(efforts); i++)
        known |= strcmp(eff->valuestring, efforts[i]) == 0;
    if (!known)
        return st_tr_bad(e, "reasoning.effort",
                         "Invalid value for 'reasoning.effort': expected one "
                         "of none, minimal, low, medium, high, xhigh.");
    if (strcmp(eff->valuestring, "none") != 0)
        return ST_OK;
    /* "none": ask the template not to think (Qwen3's enable_thinking), unless
     * the client's chat_template_kwargs say otherwise */
    cJSON *kw = cJSON_GetObjectItemCaseSensitive(chat, "chat_template_kwargs");
    if (!kw || cJSON_IsNull(kw)) {
        st_oai_delete_all(chat, "chat_template_kwargs");
        kw = cJSON_AddObjectToObject(chat, "chat_template_kwargs");
    }
    if (!cJSON_IsObject(kw))
        return kw ? ST_OK : st_tr_nomem(e);   /* not an object: the chat parser's 400 */
    if (!cJSON_GetObjectItemCaseSensitive(kw, "enable_thinking") &&
        !cJSON_AddFalseToObject(kw, "enable_thinking"))
        return st_tr_nomem(e);
    return ST_OK;
}

/* Fields refused because they need state this server does not keep. */
static enum st_status refuse_stateful(const cJSON *root, struct st_api_error *e)
{
    if (st_oai_field(root, "conversation"))
        return st_tr_bad(e, "conversation",
                         "'conversation' is not supported: this server keeps no "
                         "conversations. Chain responses with 'previous_response_id', or "
                         "send the whole conversation in 'input'.");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "background")))
        return st_tr_bad(e, "background", "'background': true is not supported: this server "
                                          "answers every response in its own request.");
    if (st_oai_field(root, "prompt"))
        return st_tr_bad(e, "prompt", "'prompt' (a stored prompt template) is not supported.");
    const cJSON *md = st_oai_field(root, "metadata");
    if (md && !cJSON_IsObject(md))
        return st_tr_bad(e, "metadata", "Invalid type for 'metadata': expected an object.");
    return ST_OK;
}

/* max_output_tokens (checked before any step) -> max_tokens. */
static enum st_status build_max(const cJSON *root, cJSON *chat, struct st_api_error *e)
{
    int64_t n = 0;
    bool has = false;
    enum st_status rc = st_oai_get_int(root, "max_output_tokens", 0, INT32_MAX, &n, &has, e);
    if (rc != ST_OK || !has)
        return rc;
    return cJSON_AddNumberToObject(chat, "max_tokens", (double)n) ? ST_OK : st_tr_nomem(e);
}

enum st_status st_resp_translate_tree(const cJSON *root, cJSON **out, struct st_api_error *e)
{
    static const st_tr_step_fn steps[] = { build_messages, build_tools, build_format,
                                           build_reasoning, build_max };
    *out = NULL;
    int64_t max_out = 0;
    enum st_status rc = refuse_stateful(root, e);
    if (rc == ST_OK)   /* its 400 before the input's */
        rc = st_oai_get_int(root, "max_output_tokens", 0, INT32_MAX, &max_out, NULL, e);
    if (rc != ST_OK)
        return rc;
    cJSON *chat = cJSON_Duplicate(root, true);
    if (!chat)
        return st_tr_nomem(e);
    for (size_t i = 0; i < ST_ARRAY_LEN(dropped); i++)
        st_oai_delete_all(chat, dropped[i]);
    return st_tr_build(root, chat, steps, ST_ARRAY_LEN(steps), out, e);
}

/* What the chat parser's 400s call the chat fields a Responses body's
 * fields became: response_format is text.format, whose members are its own
 * (the others -- max_tokens, messages, tools -- the translation checks). */
static const struct st_oai_names names = {
    .stop = "stop",
    .format = "text.format",
    .schema = "text.format",
    .json_format = "a JSON 'text.format'",
    .forced_calls = "'tool_choice' \"required\" or a named function",
    .schema_name_required = true,
};

/* ---- the fields every response object echoes ------------------------------ */

/* Add a copy of root's 'key' to 'o', or 'dflt' (parsed JSON text) when the
 * field is absent or null. */
static bool echo_or(cJSON *o, const cJSON *root, const char *key, const char *dflt)
{
    const cJSON *v = st_oai_field(root, key);
    cJSON *d = v ? cJSON_Duplicate(v, true) : cJSON_Parse(dflt);
    if (!d || !cJSON_AddItemToObject(o, key, d)) {
        cJSON_Delete(d);
        return false;
    }
    return true;
}

/* A number the client gave, as given; else the server's default (a float:
 * printed with 7 digits so 0.8f reads 0.8). */
static bool echo_num(cJSON *o, const cJSON *root, const char *key, float dflt)
{
    const cJSON *v = st_oai_field(root, key);
    char buf[32];
    snprintf(buf, sizeof(buf), "%.7g", (double)dflt);
    return cJSON_AddNumberToObject(o, key, v ? v->valuedouble : strtod(buf, NULL)) != NULL;
}

/* text: the client's object with its format, {"type":"text"} when it has none. */
static bool echo_text(cJSON *o, const cJSON *root)
{
    if (!echo_or(o, root, "text", "{}"))
        return false;
    cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "text");
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "format");
    if (f && !cJSON_IsNull(f))
        return true;
    cJSON_DeleteItemFromObjectCaseSensitive(t, "format");
    cJSON *nf = cJSON_AddObjectToObject(t, "format");
    return nf && cJSON_AddStringToObject(nf, "type", "text");
}

static bool echo_reasoning(cJSON *o, const cJSON *root)
{
    const cJSON *r = st_oai_field(root, "reasoning");
    cJSON *d = cJSON_AddObjectToObject(o, "reasoning");
    const cJSON *eff = r ? st_oai_field(r, "effort") : NULL;
    return d && (eff ? cJSON_AddStringToObject(d, "effort", eff->valuestring)
                     : cJSON_AddNullToObject(d, "effort")) &&
           cJSON_AddNullToObject(d, "summary");
}

/* The members (no braces) as JSON text, owned. */
static enum st_status build_echo(const cJSON *root, const struct st_oai_request *oq, bool store,
                                 char **out, struct st_api_error *e)
{
    cJSON *o = cJSON_CreateObject();
    const cJSON *max = st_oai_field(root, "max_output_tokens");
    bool ok = o && echo_or(o, root, "instructions", "null") &&
              (max ? cJSON_AddNumberToObject(o, "max_output_tokens", max->valuedouble)
                   : cJSON_AddNullToObject(o, "max_output_tokens")) &&
              echo_or(o, root, "metadata", "{}") &&
              cJSON_AddBoolToObject(o, "parallel_tool_calls", !oq->single_tool_call) &&
              echo_or(o, root, "previous_response_id", "null") && echo_reasoning(o, root) &&
              cJSON_AddBoolToObject(o, "store", store) &&
              echo_num(o, root, "temperature", oq->params.temperature) &&
              echo_text(o, root) && echo_or(o, root, "tool_choice", "\"auto\"") &&
              echo_or(o, root, "tools", "[]") &&
              echo_num(o, root, "top_p", oq->params.top_p) &&
              cJSON_AddStringToObject(o, "truncation", "disabled") &&
              cJSON_AddFalseToObject(o, "background") &&
              cJSON_AddStringToObject(o, "service_tier", "default") &&
              (!oq->user || cJSON_AddStringToObject(o, "user", oq->user));
    char *p = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!p)
        return st_tr_nomem(e);
    size_t n = strlen(p);   /* "{...}" -> "...", U+0000 as \u0000 */
    *out = n >= 2 ? st_mutf8_json_escape(p + 1, n - 2) : NULL;
    cJSON_free(p);
    return *out ? ST_OK : st_tr_nomem(e);
}

struct parse_ctx {
    struct st_resp_store *store;   /* borrowed; NULL: storing off */
    uint64_t owner;                /* the caller's (responses_store.h) */
    struct st_resp_parsed *out;
};

/* store / previous_response_id first (responses_chain.c), then the
 * translation of the body, or of the body with its input expanded. */
static enum st_status translate_cb(const cJSON *root, void *ctx, cJSON **chat,
                                   struct st_api_error *e)
{
    struct parse_ctx *p = ctx;
    cJSON *expanded = NULL;
    enum st_status rc = st_resp_chain(root, p->store, p->owner, &p->out->store, &expanded,
                                      &p->out->input, e);
    if (rc == ST_OK)
        rc = st_resp_translate_tree(expanded ? expanded : root, chat, e);
    cJSON_Delete(expanded);
    return rc;
}

static enum st_status echo_cb(const cJSON *root, const struct st_oai_request *oq, void *ctx,
                              struct st_api_error *e)
{
    struct parse_ctx *p = ctx;
    return build_echo(root, oq, p->out->store, &p->out->echo, e);
}

void st_resp_parsed_fini(struct st_resp_parsed *p)
{
    free(p->echo);
    free(p->input);
    memset(p, 0, sizeof(*p));
}

enum st_status st_resp_parse_stored(const char *body, size_t len, struct st_resp_store *store,
                                    uint64_t owner, struct st_oai_request *oq,
                                    struct st_resp_parsed *out, struct st_api_error *e)
{
    static const struct st_tr_api api = { .translate = translate_cb, .names = &names,
                                          .after = echo_cb };
    memset(out, 0, sizeof(*out));
    struct parse_ctx ctx = { .store = store, .owner = owner, .out = out };
    enum st_status rc = st_tr_parse(body, len, &api, &ctx, oq, e);
    if (rc != ST_OK)
        st_resp_parsed_fini(out);
    return rc;
}

enum st_status st_resp_parse(const char *body, size_t len, struct st_oai_request *oq,
                             char **echo, struct st_api_error *e)
{
    struct st_resp_parsed p;
    enum st_status rc = st_resp_parse_stored(body, len, NULL, 0, oq, &p, e);
    *echo = p.echo;
    p.echo = NULL;
    st_resp_parsed_fini(&p);
    return rc;
}
