/* oai_prefill.c -- llama-server's assistant prefill on /v1/chat/completions:
 * a body whose last message is an assistant's, and that says nothing of
 * continue_final_message, continues that message (the prompt ends inside
 * it, the reply holds what follows), as llama-server does by default
 * (--prefill-assistant). OpenAI treats such a message as history and opens
 * a new turn: --no-prefill-assistant, or the body's own
 * "continue_final_message": false or "add_generation_prompt": true, keep
 * that. Two assistant messages at the end are a 400 under the prefill, as
 * llama-server's. A last message with tool calls stays history (only text
 * can be continued).
 */
#include <string.h>

#include "server/openai/oai_json.h"

static bool is_assistant(const cJSON *m)
{
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    return cJSON_IsString(role) && strcmp(role->valuestring, "assistant") == 0;
}

static bool has_calls(const cJSON *m)
{
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    return cJSON_IsArray(calls) && cJSON_GetArraySize(calls) > 0;
}

enum st_status st_oai_prefill(struct st_call *c, struct st_oai_request *r,
                              struct st_api_error *e)
{
    if (r->kind != ST_OAI_CHAT || r->continue_given || r->add_gen_prompt >= 0 ||
        !c->srv->cfg.prefill_assistant || !r->chat.messages)
        return ST_OK;
    int n = cJSON_GetArraySize(r->chat.messages);
    const cJSON *last = cJSON_GetArrayItem(r->chat.messages, n - 1);
    if (n == 0 || !is_assistant(last) || has_calls(last))
        return ST_OK;
    if (n >= 2 && is_assistant(cJSON_GetArrayItem(r->chat.messages, n - 2)))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "Invalid 'messages': 2 or more assistant messages at the "
                                "end of the list; the last one is continued (an assistant "
                                "prefill), so it may follow only another role. Send "
                                "\"continue_final_message\": false to keep it as history.");
    r->continue_final = true;
    return ST_OK;
}
