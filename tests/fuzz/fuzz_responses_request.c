/* fuzz_responses_request.c -- libFuzzer on a POST /v1/responses body
 * (responses_request.c): the translation onto a chat request and the chat
 * parser behind it.
 *
 * Besides "no crash, no leak, no UB" it checks the contract: a rejected
 * body is a 400 with a message whose param and text name Responses fields
 * (never the chat fields max_tokens / response_format it was translated
 * to); an accepted one is a one-choice chat request whose messages, tools
 * and echoed fields are JSON that parses.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_json.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The echo is JSON members without braces. */
static void check_echo(const char *echo)
{
    if (!echo)
        abort();
    size_t n = strlen(echo);
    char *w = malloc(n + 3);
    if (!w)
        return;
    w[0] = '{';
    memcpy(w + 1, echo, n);
    w[n + 1] = '}';
    w[n + 2] = '\0';
    cJSON *j = cJSON_Parse(w);
    if (!j || !cJSON_GetObjectItemCaseSensitive(j, "tools") ||
        !cJSON_GetObjectItemCaseSensitive(j, "text"))
        abort();
    cJSON_Delete(j);
    free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_oai_request r;
    struct st_api_error e;
    char *echo = NULL;
    memset(&e, 0, sizeof(e));
    enum st_status rc = st_resp_parse((const char *)data, size, &r, &echo, &e);
    if (rc != ST_OK) {
        if (echo || e.message[0] == '\0' || (rc != ST_ERR_NOMEM && st_api_error_http(&e) != 400))
            abort();
        if (strstr(e.param, "max_tokens") || strstr(e.param, "response_format") ||
            strstr(e.param, "messages"))
            abort();   /* a chat field's name leaked out */
    } else {
        if (r.kind != ST_OAI_CHAT || r.n != 1 || !r.messages_json || r.params.logprobs ||
            r.params.echo || r.prompt_logprobs != -1)
            abort();
        fuzz_check_request_json(&r);
        check_echo(echo);
        free(echo);
    }
    st_oai_request_fini(&r);
    return 0;
}
