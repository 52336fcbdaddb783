/* fuzz_oai_request.c -- libFuzzer on what a client controls in a request:
 * the JSON bodies (chat, completions, llama-server's /completion, tokenize,
 * detokenize, apply-template),
 * the X-LlamaSwap-Priority header, the Authorization header, the
 * X-Request-Id header, the Host, Content-Type and Origin checks, and
 * If-None-Match (the dashboard's 304s).
 *
 * Input layout: byte 0 picks the target (mod 8), the rest is the text.
 * Besides "no crash, no leak, no UB" it checks the parser's contract: a
 * rejected body names a 400 with a message, an accepted one has every
 * field in range and hands out JSON that parses.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_json.h"
#include "server/llama/llama.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* native: llama-server's POST /completion body (st_llama_completion_parse) */
static void fuzz_body(enum st_oai_kind kind, bool native, const char *body, size_t len)
{
    struct st_oai_request r;
    struct st_api_error e;
    memset(&e, 0, sizeof(e));
    enum st_status rc = native ? st_llama_completion_parse(body, len, &r, &e)
                               : st_oai_parse(kind, body, len, &r, &e);
    if (rc != ST_OK) {
        if (e.message[0] == '\0' || (rc != ST_ERR_NOMEM && st_api_error_http(&e) != 400))
            abort();
    } else {
        if (r.n < 1 || r.n > ST_OAI_MAX_N || r.params.n_stop < 0 || r.params.n_stop > ST_MAX_STOP)
            abort();
        if (r.params.max_tokens < -1 || r.params.top_logprobs < 0 ||
            r.params.top_logprobs > ST_MAX_TOP_LOGPROBS)
            abort();
        if (!(r.params.presence_penalty >= -2.0f && r.params.presence_penalty <= 2.0f) ||
            !(r.params.frequency_penalty >= -2.0f && r.params.frequency_penalty <= 2.0f) ||
            !(r.params.repeat_penalty > 0.0f) || r.params.repeat_last_n < -1 ||
            r.params.n_logit_bias < 0 || r.params.n_logit_bias > ST_MAX_LOGIT_BIAS ||
            (r.params.n_logit_bias > 0 && !r.params.logit_bias))
            abort();
        for (int32_t i = 0; i < r.params.n_logit_bias; i++)
            if (r.params.logit_bias[i].token < 0 || !(r.params.logit_bias[i].bias >= -100.0f &&
                                                      r.params.logit_bias[i].bias <= 100.0f))
                abort();
        if (kind == ST_OAI_CHAT && !r.chat.messages)
            abort();
        if (kind == ST_OAI_COMPLETION && (r.n_prompts < 1 || !r.prompts))
            abort();
        for (int32_t i = 0; i < r.params.n_stop; i++)
            if (!r.params.stop[i] || !r.params.stop[i][0])
                abort();
        if (native) {   /* generation_settings as h_completion.c makes it (eog ids) */
            static const int32_t eog[] = { 0, 7 };
            if (st_llama_settings(&r, eog, 2, &e) != ST_OK)
                abort();
            cJSON *gs = r.llama.settings ? cJSON_Parse(r.llama.settings) : NULL;
            if (!r.llama.on || !cJSON_IsObject(gs) || r.llama.n_probs < 0 ||
                r.llama.n_probs > ST_MAX_TOP_LOGPROBS)
                abort();
            cJSON_Delete(gs);
        }
        fuzz_check_request_json(&r);
    }
    st_oai_request_fini(&r);
}

static void fuzz_text(enum st_oai_text_kind kind, const char *body, size_t len)
{
    struct st_oai_text_request r;
    struct st_api_error e;
    enum st_status rc = st_oai_parse_text(kind, body, len, &r, &e);
    if (rc == ST_OK) {
        if (kind == ST_OAI_APPLY_TEMPLATE && !r.chat.messages)
            abort();
        fuzz_check_chat(&r.chat);
        if (kind == ST_OAI_TOKENIZE && !r.content)
            abort();
        st_oai_text_request_fini(&r);
    }
}

static void fuzz_headers(const char *s, size_t len)
{
    int32_t p = 0;
    bool alias = false;
    (void)st_priority_parse_header((struct st_str){ s, len }, &p);
    (void)st_priority_parse_header_ex((struct st_str){ s, len }, &p, &alias);
    /* NUL-terminated copies for the C-string APIs */
    char *z = malloc(len + 1);
    if (!z)
        return;
    memcpy(z, s, len);
    z[len] = '\0';
    struct st_api_key keys[2] = { { "a", "k1", false, 0, false, 0, false },
                                  { "b", "", false, 0, false, 0, false } };
    const struct st_api_key *k = st_auth_find(keys, 2, z);
    if (k && strlen(z) < 8)
        abort();   /* "Bearer " plus a key is at least 8 bytes */
    char id[48];
    st_request_id_pick(z, id, sizeof(id));
    if (!st_request_id_sane(id))
        abort();
    /* the browser checks (guard.c, cors.c): Host, Content-Type, Origin */
    struct st_hosts h;
    struct st_err err = { 0 };
    if (st_hosts_init(&h, "a.example,b.example", "127.0.0.1", &err) == ST_OK) {
        (void)st_hosts_allow(&h, z);
        st_hosts_fini(&h);
    }
    if (st_hosts_init(&h, z, "::1", &err) == ST_OK) {
        (void)st_hosts_allow(&h, "a.example:80");
        st_hosts_fini(&h);
    }
    if (st_content_type_json(z) && strncasecmp(z + strspn(z, " \t"), "application/json", 16) != 0)
        abort();
    struct st_cors c;
    bool vary = false;
    if (st_cors_init(&c, "localhost,https://a.example", &err) == ST_OK) {
        const char *o = st_cors_allow(&c, z, &vary);
        if (o && o != z)
            abort();   /* a listed origin is echoed, never another string */
        st_cors_fini(&c);
    }
    /* a match needs the tag itself or "*" in the header */
    if (st_etag_match(z, "\"0123abcd\"") && !strstr(z, "\"0123abcd\"") && !strchr(z, '*'))
        abort();
    if (st_etag_match(z, "") || st_etag_match(NULL, z))
        abort();
    free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 8) {
    case 0: fuzz_body(ST_OAI_CHAT, false, s, n); break;
    case 1: fuzz_body(ST_OAI_COMPLETION, false, s, n); break;
    case 7: fuzz_body(ST_OAI_COMPLETION, true, s, n); break;
    case 2: fuzz_text(ST_OAI_TOKENIZE, s, n); break;
    case 3: fuzz_text(ST_OAI_DETOKENIZE, s, n); break;
    case 4: fuzz_text(ST_OAI_APPLY_TEMPLATE, s, n); break;
    default: fuzz_headers(s, n); break;
    }
    return 0;
}
