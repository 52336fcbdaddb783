/* fuzz_messages_request.c -- libFuzzer on a POST /v1/messages body
 * (messages_request.c, Anthropic's Messages API): the translation onto a
 * chat request and the chat parser behind it, for messages and for
 * count_tokens (no max_tokens needed).
 *
 * Besides "no crash, no leak, no UB" it checks the contract: a rejected
 * body is a 400 whose param names a Messages field (never the chat fields
 * stop / thinking_budget / parallel_tool_calls it was translated to) and
 * whose Anthropic error body parses; an accepted one is a one-choice chat
 * request whose messages and tools are JSON that parses.
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/anthropic/anthropic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_json(const char *s, size_t len)
{
    if (!s)
        return;
    cJSON *j = cJSON_ParseWithLength(s, len);
    if (!j)
        abort();   /* we handed on JSON that does not parse */
    cJSON_Delete(j);
}

/* Does the body itself hold 's'? (A message may quote the client's text.) */
static bool in_body(const uint8_t *data, size_t size, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(data + i, s, n) == 0)
            return true;
    return false;
}

static void check_error(enum st_status rc, const struct st_api_error *e, const uint8_t *data,
                        size_t size)
{
    if (e->message[0] == '\0' || (rc != ST_ERR_NOMEM && st_api_error_http(e) != 400))
        abort();
    if (strcmp(e->param, "stop") == 0 || strstr(e->param, "thinking_budget") ||
        strstr(e->param, "parallel_tool_calls") || strstr(e->param, ".function.") ||
        (strstr(e->message, "thinking_budget") && !in_body(data, size, "thinking_budget")))
        abort();   /* a chat field's name leaked out */
    struct st_buf b;
    st_buf_init(&b);
    if (st_anthropic_error_json(&b, e) == ST_OK)
        check_json(b.data, b.len);
    st_buf_fini(&b);
}

static void check_ok(const struct st_oai_request *r)
{
    if (r->kind != ST_OAI_CHAT || r->n != 1 || !cJSON_IsArray(r->chat.messages) ||
        r->params.logprobs || r->params.echo || r->prompt_logprobs != -1)
        abort();
    if (r->chat.kwargs && !cJSON_IsObject(r->chat.kwargs))
        abort();
    if (r->chat.tools)
        check_json(r->chat.tools, strlen(r->chat.tools));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int count = 0; count < 2; count++) {
        struct st_oai_request r;
        struct st_api_error e;
        memset(&e, 0, sizeof(e));
        enum st_status rc = count ? st_msg_parse_count((const char *)data, size, &r, &e)
                                  : st_msg_parse((const char *)data, size, &r, &e);
        if (rc != ST_OK)
            check_error(rc, &e, data, size);
        else
            check_ok(&r);
        st_oai_request_fini(&r);
    }
    return 0;
}
