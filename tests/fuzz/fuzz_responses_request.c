/* fuzz_responses_request.c -- libFuzzer on a POST /v1/responses body
 * (responses_request.c): the translation onto a chat request and the chat
 * parser behind it.
 *
 * Besides "no crash, no leak, no UB" it checks the contract: a rejected
 * body is a 400 with a message whose param and text name Responses fields
 * (never the chat fields max_tokens / response_format it was translated
 * to), or a 404 on an unknown previous_response_id; an accepted one is a
 * one-choice chat request whose messages, tools and echoed fields are JSON
 * that parses. The body is parsed, as the caller FUZZ_OWNER, against a
 * response store (responses_chain.c) that holds its response "resp_fuzz"
 * (the seed corpus/responses/chained names it), so previous_response_id
 * expands a stored conversation and 'store' keeps the input items: a JSON
 * array whose every item has a string "id"; and "resp_fuzz_other", another
 * API key's (corpus/responses/chained_foreign), which never chains: a body
 * naming it is refused as an unknown id.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_json.h"
#include "server/responses/responses.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_OWNER 1
#define FUZZ_FOREIGN "resp_fuzz_other"

/* The echo is JSON members without braces; its previous_response_id is
 * never another owner's response. */
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
    const cJSON *prev = cJSON_GetObjectItemCaseSensitive(j, "previous_response_id");
    if (!j || !cJSON_GetObjectItemCaseSensitive(j, "tools") ||
        !cJSON_GetObjectItemCaseSensitive(j, "text") ||
        (cJSON_IsString(prev) && strcmp(prev->valuestring, FUZZ_FOREIGN) == 0))
        abort();
    cJSON_Delete(j);
    free(w);
}

/* The stored input items: a JSON array of objects, each with a string "id". */
static void check_items(const char *items)
{
    cJSON *a = cJSON_Parse(items);
    if (!cJSON_IsArray(a))
        abort();
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (cJSON_IsObject(it) && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "id")))
            abort();
    }
    cJSON_Delete(a);
}

/* One stored response of ours (a user turn, reasoning, a call) for chains
 * to expand, and the same conversation under another owner. */
static struct st_resp_store *fuzz_store(void)
{
    static struct st_resp_store *s;
    static const char in[] =
        "[{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
        "\"input_text\",\"text\":\"weather?\"}]}]";
    static const char out[] =
        "[{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[],\"content\":[{\"type\":"
        "\"reasoning_text\",\"text\":\"plan\"}],\"status\":\"completed\"},{\"id\":\"fc_1\","
        "\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"get_weather\","
        "\"arguments\":\"{}\",\"status\":\"completed\"}]";
    if (!s && (st_resp_store_new((size_t)1 << 20, &s) != ST_OK ||
               st_resp_store_put(s, FUZZ_OWNER, "resp_fuzz", in, strlen(in), out, strlen(out),
                                 ST_LIT("{}")) != ST_OK ||
               st_resp_store_put(s, FUZZ_OWNER + 1, FUZZ_FOREIGN, in, strlen(in), out,
                                 strlen(out), ST_LIT("{}")) != ST_OK))
        abort();
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_oai_request r;
    struct st_api_error e;
    struct st_resp_parsed rp;
    memset(&e, 0, sizeof(e));
    enum st_status rc =
        st_resp_parse_stored((const char *)data, size, fuzz_store(), FUZZ_OWNER, &r, &rp, &e);
    char *echo = rp.echo;
    if (rc != ST_OK) {
        bool unknown_prev = st_api_error_http(&e) == 404 &&
                            strcmp(e.param, "previous_response_id") == 0;
        if (echo || rp.input || e.message[0] == '\0' ||
            (rc != ST_ERR_NOMEM && st_api_error_http(&e) != 400 && !unknown_prev))
            abort();
        if (strstr(e.param, "max_tokens") || strstr(e.param, "response_format") ||
            strstr(e.param, "messages"))
            abort();   /* a chat field's name leaked out */
    } else {
        if (r.kind != ST_OAI_CHAT || r.n != 1 || !r.chat.messages || r.params.logprobs ||
            r.params.echo || r.prompt_logprobs != -1)
            abort();
        fuzz_check_request_json(&r);
        check_echo(echo);
        if (rp.store != (rp.input != NULL))
            abort();
        if (rp.input)
            check_items(rp.input);
        st_resp_parsed_fini(&rp);
    }
    st_oai_request_fini(&r);
    return 0;
}
