/* fuzz_embeddings_request.c -- libFuzzer on a POST /v1/embeddings body
 * (embeddings_request.c) and the answer made from it (embeddings_reply.c).
 *
 * Besides "no crash, no leak, no UB" it checks the contract: a rejected
 * body is a 400 naming a field (NOMEM aside); an accepted one has
 * 1..ST_EMBED_MAX_ITEMS items, each a non-empty string or a non-empty
 * token array, at most ST_EMBED_MAX_TOKENS token ids in all, and
 * dimensions >= 0; and the body rendered for it, with made-up vectors
 * truncated to its dimensions, in either encoding, is JSON that parses.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_EMBD 48

static void check_items(const struct st_embed_request *r)
{
    if (r->n_items < 1 || r->n_items > ST_EMBED_MAX_ITEMS || !r->items || r->dimensions < 0)
        abort();
    size_t tokens = 0;
    for (size_t i = 0; i < r->n_items; i++) {
        const struct st_oai_prompt *it = &r->items[i];
        if ((it->text == NULL) == (it->tokens == NULL))
            abort();   /* exactly one form */
        if (it->text ? it->text[0] == '\0' : it->n_tokens == 0)
            abort();   /* empty items are 400s */
        tokens += it->n_tokens;
    }
    if (tokens > ST_EMBED_MAX_TOKENS)
        abort();
}

/* Made-up unit vectors through truncation and the body. */
static void check_body(const struct st_embed_request *r)
{
    size_t n = r->n_items > 4 ? 4 : r->n_items;
    int32_t dims = r->dimensions > 0 && r->dimensions < FUZZ_EMBD ? r->dimensions : FUZZ_EMBD;
    float v[FUZZ_EMBD], out[4][FUZZ_EMBD];
    const float *rows[4];
    for (int32_t k = 0; k < FUZZ_EMBD; k++)
        v[k] = sinf((float)k + (float)r->n_items);
    for (size_t i = 0; i < n; i++) {
        st_embed_truncate(v, FUZZ_EMBD, dims, out[i]);
        rows[i] = out[i];
    }
    struct st_buf b;
    st_buf_init(&b);
    if (st_embed_body(&b, r->model ? r->model : "m", rows, n, dims, r->base64, 7) == ST_OK) {
        cJSON *j = cJSON_ParseWithLength(b.data, b.len);
        if (!j)
            abort();
        cJSON_Delete(j);
    }
    st_buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_embed_request r;
    struct st_api_error e;
    memset(&e, 0, sizeof(e));
    enum st_status rc = st_embed_parse((const char *)data, size, &r, &e);
    if (rc != ST_OK) {
        if (r.items || r.n_items || e.message[0] == '\0' ||
            (rc != ST_ERR_NOMEM && st_api_error_http(&e) != 400))
            abort();
    } else {
        check_items(&r);
        check_body(&r);
    }
    st_embed_request_fini(&r);
    return 0;
}
