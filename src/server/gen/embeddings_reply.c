/* embeddings_reply.c -- the body of a POST /v1/embeddings answer, and the
 * two transformations of a vector on the way there (docs/API.md
 * "/v1/embeddings"):
 *
 *   dimensions      Matryoshka truncation: the first N entries, scaled
 *                   back to unit length (the engine's vectors are unit
 *                   length already; so is every answer);
 *   encoding_format "base64": the float32 values' little-endian bytes in
 *                   standard base64, as OpenAI sends (the SDKs decode it
 *                   into a Float32Array / list of floats).
 *
 * Pure functions of their arguments (thread: any), but for
 * st_embed_gen_body, which gathers a finished call's vectors into that body
 * (c->lock held).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/gen/gen.h"

void st_embed_truncate(const float *v, int32_t n, int32_t dims, float *out)
{
    int32_t m = dims > 0 && dims < n ? dims : n;
    double ss = 0.0;
    for (int32_t i = 0; i < m; i++)
        ss += (double)v[i] * (double)v[i];
    double inv = ss > 0.0 ? 1.0 / sqrt(ss) : 1.0;
    for (int32_t i = 0; i < m; i++)
        out[i] = (float)((double)v[i] * inv);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The little-endian bytes of one float, whatever the host's order. */
static void f32_le(float f, unsigned char out[4])
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(u >> (8 * i));
}

enum st_status st_embed_base64(struct st_buf *b, const float *v, int32_t n)
{
    struct st_out o;
    st_out_init(&o, b);
    char quad[4];
    st_out_text(&o, "\"");
    unsigned char in[3];
    int have = 0;
    for (int32_t k = 0; k < n; k++) {
        unsigned char f[4];
        f32_le(v[k], f);
        for (int j = 0; j < 4; j++) {
            in[have++] = f[j];
            if (have < 3)
                continue;
            quad[0] = b64[in[0] >> 2];
            quad[1] = b64[((in[0] & 3) << 4) | (in[1] >> 4)];
            quad[2] = b64[((in[1] & 15) << 2) | (in[2] >> 6)];
            quad[3] = b64[in[2] & 63];
            st_out_raw(&o, quad, 4);
            have = 0;
        }
    }
    if (have > 0) {   /* 1 or 2 bytes left: '=' padding */
        unsigned char i1 = have > 1 ? in[1] : 0;
        quad[0] = b64[in[0] >> 2];
        quad[1] = b64[((in[0] & 3) << 4) | (i1 >> 4)];
        quad[2] = have > 1 ? b64[(i1 & 15) << 2] : '=';
        quad[3] = '=';
        st_out_raw(&o, quad, 4);
    }
    st_out_text(&o, "\"");
    return st_out_finish(&o);
}

/* The shortest of 7..9 significant digits that reads back as the same
 * float (9 always does); NaN / Inf (never from the engine) as 0. */
static void float_num(struct st_out *o, float v)
{
    char tmp[32];
    if (!isfinite(v))
        v = 0.0f;
    for (int digits = 7; digits <= 9; digits++) {
        snprintf(tmp, sizeof(tmp), "%.*g", digits, (double)v);
        if (strtof(tmp, NULL) == v)
            break;
    }
    st_out_text(o, tmp);
}

static void float_array(struct st_out *o, const float *v, int32_t n)
{
    st_out_text(o, "[");
    for (int32_t i = 0; i < n; i++) {
        st_out_sep(o);
        float_num(o, v[i]);
    }
    st_out_text(o, "]");
}

enum st_status st_embed_body(struct st_buf *out, const char *model, const float *const *vecs,
                             size_t n_items, int32_t n, bool base64, int64_t prompt_tokens)
{
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_str(&o, "object", "list");
    st_out_kv_raw(&o, "data", "[");
    for (size_t i = 0; i < n_items; i++) {
        st_out_sep(&o);
        st_out_text(&o, "{");
        st_out_kv_str(&o, "object", "embedding");
        st_out_kv_u64(&o, "index", i);
        st_out_key(&o, "embedding");
        if (!base64)
            float_array(&o, vecs[i], n);
        else if (st_out_ok(&o))
            st_out_check(&o, st_embed_base64(out, vecs[i], n));
        st_out_text(&o, "}");
    }
    st_out_text(&o, "]");
    st_out_kv_str(&o, "model", model);
    st_out_kv_raw(&o, "usage", "{");
    st_out_kv_i64(&o, "prompt_tokens", prompt_tokens);
    st_out_kv_i64(&o, "total_tokens", prompt_tokens);
    st_out_text(&o, "}}");
    return st_out_finish(&o);
}

enum st_status st_embed_gen_body(struct st_buf *out, const struct st_gen *g)
{
    const struct st_gen_embed *m = &g->embed;
    float *flat = malloc((size_t)g->n_choices * (size_t)m->dims * sizeof(*flat));
    const float **rows = malloc((size_t)g->n_choices * sizeof(*rows));
    enum st_status rc = flat && rows ? ST_OK : ST_ERR_NOMEM;
    int64_t tokens = 0;
    for (int32_t i = 0; rc == ST_OK && i < g->n_choices; i++) {
        float *row = flat + (size_t)i * (size_t)m->dims;
        st_embed_truncate(g->choices[i].embd, m->n_embd, m->dims, row);
        rows[i] = row;
        tokens += g->choices[i].n_prompt;
    }
    if (rc == ST_OK)
        rc = st_embed_body(out, g->model_name, rows, (size_t)g->n_choices, m->dims, m->base64,
                           tokens);
    free(flat);
    free(rows);
    return rc;
}
