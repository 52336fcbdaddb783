/* oai_tools.c -- the chat body's tool-call and reasoning fields:
 *
 *   tool_choice          "none" | "auto" (default) | "required" |
 *                        {"type":"function","function":{"name":"..."}}
 *   parallel_tool_calls  boolean, default true; false keeps the first call
 *   reasoning_format     "deepseek" | "auto" (= deepseek) | "none";
 *                        absent: the server's --reasoning-format
 *   thinking_budget      integer >= -1 (Qwen's API; also vLLM's
 *                        thinking_token_budget and llama-server's
 *                        thinking_budget_tokens, which must agree when
 *                        several are sent): reasoning tokens before the
 *                        engine closes the think block; -1 = no budget;
 *                        absent: the server's --reasoning-budget
 *
 * "none": the tools are not given to the chat template and the reply is
 * not parsed for calls. "required" and a named function are enforced by
 * constrained decoding: the reply is one or more calls (of that function)
 * in the model's call format (gen_reply.c st_gen_reply_calls,
 * include/strata/call_grammar.h; docs/API.md "Tool calls and reasoning").
 */
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"

static enum st_status bad_choice(struct st_api_error *e)
{
    return st_api_error_set(e, ST_ERR_INVALID, "tool_choice", NULL,
                            "Invalid value for 'tool_choice': expected \"none\", \"auto\", "
                            "\"required\" or {\"type\": \"function\", \"function\": "
                            "{\"name\": ...}}.");
}

static enum st_status parse_tool_choice(const cJSON *root, struct st_oai_request *r,
                                        struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "tool_choice");
    if (!v)
        return ST_OK;
    if (cJSON_IsString(v)) {
        if (strcmp(v->valuestring, "none") == 0)
            r->tool_choice = ST_OAI_TOOLS_NONE;
        else if (strcmp(v->valuestring, "auto") == 0)
            r->tool_choice = ST_OAI_TOOLS_AUTO;
        else if (strcmp(v->valuestring, "required") == 0)
            r->tool_choice = ST_OAI_TOOLS_REQUIRED;
        else
            return bad_choice(e);
        return ST_OK;
    }
    const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : NULL;
    const cJSON *fn = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "function") : NULL;
    const cJSON *name = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 ||
        !cJSON_IsString(name))
        return bad_choice(e);
    r->tool_choice = ST_OAI_TOOLS_FUNCTION;
    size_t n = strlen(name->valuestring);
    if (n < sizeof(r->tool_choice_name))   /* longer: no tool can have it; not enforced */
        memcpy(r->tool_choice_name, name->valuestring, n + 1);
    return ST_OK;
}

static enum st_status parse_reasoning_format(const cJSON *root, struct st_oai_request *r,
                                             struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "reasoning_format");
    if (!v)
        return ST_OK;
    if (cJSON_IsString(v) && (strcmp(v->valuestring, "deepseek") == 0 ||
                              strcmp(v->valuestring, "auto") == 0)) {
        r->reasoning_format = ST_OAI_REASONING_DEEPSEEK;
        return ST_OK;
    }
    if (cJSON_IsString(v) && strcmp(v->valuestring, "none") == 0) {
        r->reasoning_format = ST_OAI_REASONING_NONE;
        return ST_OK;
    }
    return st_api_error_set(e, ST_ERR_INVALID, "reasoning_format", NULL,
                            "Invalid value for 'reasoning_format': expected \"none\", "
                            "\"deepseek\" or \"auto\".");
}

/* The budget under any of its names; two names with different values
 * are a 400 on the second. */
static enum st_status parse_budget(const cJSON *root, struct st_oai_request *r,
                                   struct st_api_error *e)
{
    static const char *const names[] = { "thinking_budget", "thinking_token_budget",
                                         "thinking_budget_tokens" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int64_t v = 0;
        bool present = false;
        enum st_status rc = st_oai_get_int(root, names[i], -1, INT32_MAX, &v, &present, e);
        if (rc != ST_OK)
            return rc;   /* the 400 names the field */
        if (!present)
            continue;
        if (r->has_thinking_budget && r->thinking_budget != (int32_t)v)
            return st_api_error_set(e, ST_ERR_INVALID, names[i], NULL,
                                    "Invalid value for '%s': %lld, but another thinking budget "
                                    "field says %d.", names[i], (long long)v,
                                    (int)r->thinking_budget);
        r->has_thinking_budget = true;
        r->thinking_budget = (int32_t)v;
    }
    return ST_OK;
}

enum st_status st_oai_parse_tool_fields(const cJSON *root, struct st_oai_request *r,
                                        struct st_api_error *e)
{
    bool parallel = true;
    ST_TRY(parse_tool_choice(root, r, e));
    ST_TRY(st_oai_get_bool(root, "parallel_tool_calls", &parallel, NULL, e));
    r->single_tool_call = !parallel;
    ST_TRY(parse_reasoning_format(root, r, e));
    ST_TRY(parse_budget(root, r, e));
    if (r->tool_choice == ST_OAI_TOOLS_NONE) {
        free(r->chat.tools);
        r->chat.tools = NULL;
    }
    return ST_OK;
}
