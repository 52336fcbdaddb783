/* test_engine_embed.c -- embedding requests (params.embed, docs/ENGINE.md
 * "Embeddings"): the hidden row of the model (st_model_hidden) equals the
 * scalar reference's final state (forward_ref.c ref_hidden); through the
 * engine on the tiny model an embedding is that state of the last prompt
 * token, L2-normalized, whether the prompt is read in one chunk or many or
 * comes from a slot's cached prefix, or MTP drafting is on; embeddings
 * mixed into other slots of generating requests leave their tokens
 * unchanged; and on the sim runner
 * the vector is the sim's made-up one and the request ends like a request
 * that generated nothing; a GGUF whose <arch>.pooling_type asks for mean
 * pooling is refused.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "model_fixture.h"
#include "runner/runner_sim.h"
#include "strata/forward.h"
#include "strata/gguf.h"
#include "strata/gguf_write.h"
#include "support.h"

static char dir[256];
static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static const char *tiny(void)
{
    static char path[320];
    return fixture_make_model(path, sizeof(path), dir, "tiny", "f32", 5, false);
}

#define N_PROMPT 100
#define MAX_EMBD 512

/* What an embedding request received. */
struct got_embd {
    float   v[MAX_EMBD];
    int32_t n;               /* floats in v; 0: no EMBED event */
    int     n_embed_events;
    int     n_tokens;        /* TOKEN events (none expected) */
    bool    embed_after_end;
    bool    ended;
    enum st_finish finish;
    enum st_status status;
    int64_t n_prompt, n_generated, n_cached;
};

static void got_emit(void *ctx, const struct st_event *ev)
{
    struct got_embd *g = ctx;
    if (ev->kind == ST_EVENT_EMBED) {
        g->n_embed_events++;
        g->embed_after_end |= g->ended;
        ck_assert_int_le(ev->n_embd, MAX_EMBD);
        memcpy(g->v, ev->embd, (size_t)ev->n_embd * sizeof(float));
        g->n = ev->n_embd;
    } else if (ev->kind == ST_EVENT_TOKEN) {
        g->n_tokens++;
    } else if (ev->kind == ST_EVENT_END) {
        g->ended = true;
        g->finish = ev->finish;
        g->status = ev->status;
        g->n_prompt = ev->n_prompt;
        g->n_generated = ev->n_generated;
        g->n_cached = ev->n_cached;
    }
}

static struct st_request *submit_embed(struct st_engine_pool *p, const int32_t *ids, int64_t n,
                                       struct got_embd *g)
{
    memset(g, 0, sizeof(*g));
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "embd");
    req->tokens = malloc((size_t)n * sizeof(*ids));
    ck_assert(req->tokens);
    memcpy(req->tokens, ids, (size_t)n * sizeof(*ids));
    req->n_tokens = n;
    req->params.embed = true;
    req->params.max_tokens = 0;
    req->emit = got_emit;
    req->emit_ctx = g;
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(p, req, &err) == ST_OK, "submit: %s", err.msg);
    return req;
}

static void l2(float *v, int32_t n)
{
    double ss = 0;
    for (int32_t i = 0; i < n; i++)
        ss += (double)v[i] * v[i];
    for (int32_t i = 0; i < n; i++)
        v[i] = (float)(v[i] / sqrt(ss));
}

static double max_diff(const float *a, const float *b, int32_t n)
{
    double d = 0;
    for (int32_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static double cosine(const float *a, const float *b, int32_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int32_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

/* The reference's final state after output_norm at the prompt's last
 * token, normalized: the embedding the engine must give. */
static int32_t ref_embedding(const char *path, const int32_t *ids, int64_t n, float *out)
{
    struct st_model *m = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    int64_t nv = st_model_hparams(m)->n_vocab;
    int32_t e = (int32_t)st_model_hparams(m)->n_embd;
    ck_assert_int_le(e, MAX_EMBD);
    struct ref_model *r = ref_new(st_model_description(m), 256, true);
    float *lg = malloc((size_t)nv * sizeof(float));
    for (int64_t p = 0; p < n; p++)
        ref_step(r, ids[p], p, lg);
    memcpy(out, ref_hidden(r), (size_t)e * sizeof(float));
    l2(out, e);
    free(lg);
    ref_free(r);
    st_model_free(m);
    return e;
}

static void prompt_ids(const char *path, int32_t *ids, int64_t n, uint64_t seed)
{
    struct st_model *m = NULL;
    struct st_err err = { 0 };
    ck_assert(st_model_open(path, &m, &err) == ST_OK);
    ref_tokens(seed, ids, n, st_model_hparams(m)->n_vocab);
    st_model_free(m);
}

/* The embedding of ids through an engine with np slots and this ubatch. */
static void engine_embedding(const char *path, const int32_t *ids, int64_t n, int32_t ubatch,
                             struct got_embd *g)
{
    struct fixture_pool f;
    fixture_pool_start_ub(&f, path, 1, ubatch, 0, 0);
    struct st_request *req = submit_embed(f.pool, ids, n, g);
    fixture_pool_drain(&f);
    st_request_unref(req);
    fixture_pool_stop(&f);
    ck_assert(g->ended);
    ck_assert_int_eq(g->finish, ST_FINISH_STOP);
    ck_assert_int_eq(g->n_embed_events, 1);
}

/* st_model_hidden: the normed final state of each logit row = the reference's. */
START_TEST(test_engine_embed_model_hidden_matches_reference)
{
    const char *path = tiny();
    struct st_model *m = NULL;
    struct st_err err = { 0 };
    ck_assert(st_model_open(path, &m, &err) == ST_OK);
    struct st_model_params p = { .n_threads = 2, .n_slots = 1, .n_ctx = 64, .max_out = 8 };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    int64_t nv = st_model_hparams(m)->n_vocab;
    int32_t e = (int32_t)st_model_hparams(m)->n_embd;
    int32_t tok[20], slots[20] = { 0 };
    int64_t pos[20], outs[2] = { 9, 19 };
    ref_tokens(3, tok, 20, nv);
    for (int i = 0; i < 20; i++)
        pos[i] = i;
    struct st_model_batch b = { 20, tok, slots, pos, 2, outs };
    const float *lg = NULL;
    ck_assert(st_model_forward(m, &b, &lg, &err) == ST_OK);
    float h[2][MAX_EMBD];
    ck_assert(st_model_hidden(m, 0, h[0], &err) == ST_OK);
    ck_assert(st_model_hidden(m, 1, h[1], &err) == ST_OK);
    ck_assert_int_eq(st_model_hidden(m, 2, h[1], &err), ST_ERR_INVALID);   /* no such row */
    struct ref_model *r = ref_new(st_model_description(m), 64, true);
    float *rl = malloc((size_t)nv * sizeof(float));
    for (int i = 0; i < 20; i++) {
        ref_step(r, tok[i], i, rl);
        if (i == 9 || i == 19) {
            double c = cosine(ref_hidden(r), h[i == 19], e);
            ck_assert_msg(c > 0.9995, "row %d: cosine %.7f", i, c);
        }
    }
    free(rl);
    ref_free(r);
    st_model_free(m);
}
END_TEST

/* Through the engine (two chunks of 64): the reference's last state, unit length. */
START_TEST(test_engine_embed_matches_reference)
{
    const char *path = tiny();
    int32_t ids[N_PROMPT];
    prompt_ids(path, ids, N_PROMPT, 7);
    float want[MAX_EMBD];
    int32_t e = ref_embedding(path, ids, N_PROMPT, want);
    struct got_embd g;
    engine_embedding(path, ids, N_PROMPT, 64, &g);
    ck_assert_int_eq(g.n, e);
    ck_assert_int_eq(g.n_tokens, 0);
    ck_assert_int_eq(g.n_generated, 0);
    ck_assert_int_eq(g.n_prompt, N_PROMPT);
    ck_assert(!g.embed_after_end);
    double norm = 0;
    for (int32_t i = 0; i < e; i++)
        norm += (double)g.v[i] * g.v[i];
    ck_assert_msg(fabs(norm - 1.0) < 1e-5, "norm^2 %.8f", norm);
    double c = cosine(want, g.v, e), d = max_diff(want, g.v, e);
    ck_assert_msg(c > 0.9995 && d < 0.01, "cosine %.7f, max diff %.5f", c, d);
}
END_TEST

/* Many chunks (ubatch 16: seven reads) = one read (ubatch 128). */
START_TEST(test_engine_embed_chunked_equals_one_read)
{
    const char *path = tiny();
    int32_t ids[N_PROMPT];
    prompt_ids(path, ids, N_PROMPT, 8);
    struct got_embd one, many;
    engine_embedding(path, ids, N_PROMPT, 128, &one);
    engine_embedding(path, ids, N_PROMPT, 16, &many);
    ck_assert_int_eq(one.n, many.n);
    double d = max_diff(one.v, many.v, one.n);
    ck_assert_msg(d < 1e-4, "max diff %.7f", d);
}
END_TEST

/* The same prompt again in the same slot reuses its cached prefix (only
 * the last token is read) and gives the same vector. */
START_TEST(test_engine_embed_prefix_cached_same_vector)
{
    const char *path = tiny();
    int32_t ids[N_PROMPT];
    prompt_ids(path, ids, N_PROMPT, 9);
    struct fixture_pool f;
    fixture_pool_start_ub(&f, path, 1, 64, 0, 0);
    struct got_embd a, b;
    struct st_request *ra = submit_embed(f.pool, ids, N_PROMPT, &a);
    fixture_pool_drain(&f);
    struct st_request *rb = submit_embed(f.pool, ids, N_PROMPT, &b);
    fixture_pool_drain(&f);
    st_request_unref(ra);
    st_request_unref(rb);
    fixture_pool_stop(&f);
    ck_assert(a.ended && b.ended && a.n > 0 && a.n == b.n);
    ck_assert_int_eq(a.n_cached, 0);
    ck_assert_int_eq(b.n_cached, N_PROMPT - 1);
    double d = max_diff(a.v, b.v, a.n);
    ck_assert_msg(d < 1e-4, "max diff %.7f", d);
}
END_TEST

/* Greedy generation alone, and again while embedding requests come and go
 * in the other slots: the same tokens; the embeddings are their solo ones. */
START_TEST(test_engine_embed_mixed_with_generation)
{
    const char *path = tiny();
    int32_t gen_ids[30], e_ids[2][N_PROMPT];
    prompt_ids(path, gen_ids, 30, 10);
    prompt_ids(path, e_ids[0], N_PROMPT, 11);
    prompt_ids(path, e_ids[1], 40, 12);
    struct fixture_ask ask = { .max_tokens = 24, .ignore_eos = true };
    struct fixture_got solo, mixed;
    struct fixture_pool f;
    fixture_pool_start_ub(&f, path, 3, 64, 0, 0);
    st_request_unref(fixture_submit_ids(f.pool, gen_ids, 30, &ask, &solo));
    fixture_pool_drain(&f);
    fixture_pool_stop(&f);
    ck_assert_int_eq(solo.n_gen, 24);

    struct got_embd ge[2], alone[2];
    engine_embedding(path, e_ids[0], N_PROMPT, 64, &alone[0]);
    engine_embedding(path, e_ids[1], 40, 64, &alone[1]);
    fixture_pool_start_ub(&f, path, 3, 64, 0, 0);
    struct st_request *rg = fixture_submit_ids(f.pool, gen_ids, 30, &ask, &mixed);
    for (int i = 0; i < 3; i++)   /* the generation reads its prompt and decodes */
        st_engine_pool_step(f.pool, 0);
    struct st_request *r0 = submit_embed(f.pool, e_ids[0], N_PROMPT, &ge[0]);
    st_engine_pool_step(f.pool, 0);
    struct st_request *r1 = submit_embed(f.pool, e_ids[1], 40, &ge[1]);
    fixture_pool_drain(&f);
    st_request_unref(rg);
    st_request_unref(r0);
    st_request_unref(r1);
    fixture_pool_stop(&f);
    ck_assert_int_eq(mixed.n_gen, 24);
    for (int i = 0; i < 24; i++)
        ck_assert_int_eq(mixed.gen[i], solo.gen[i]);
    for (int k = 0; k < 2; k++) {
        ck_assert(ge[k].ended && ge[k].finish == ST_FINISH_STOP);
        double d = max_diff(ge[k].v, alone[k].v, ge[k].n);
        ck_assert_msg(d < 1e-4, "embedding %d: max diff %.7f", k, d);
    }
}
END_TEST

/* The sim: its made-up vector of the last token and position, normalized;
 * END with STOP and nothing generated; the n_embd the pool reports. */
START_TEST(test_engine_embed_sim_vector)
{
    struct fixture_pool f;
    fixture_pool_start_ub(&f, NULL, 2, 4, 0, 0);
    int32_t n = 0;
    struct st_err err = { 0 };
    ck_assert(st_engine_pool_n_embd(f.pool, 0, &n, &err) == ST_OK);
    ck_assert_int_eq(n, ST_SIM_EMBD);
    int32_t ids[10] = { 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 };
    struct got_embd g;
    struct st_request *req = submit_embed(f.pool, ids, 10, &g);
    fixture_pool_drain(&f);
    st_request_unref(req);
    fixture_pool_stop(&f);
    float want[ST_SIM_EMBD];
    st_runner_sim_embd(14, 9, want);
    l2(want, ST_SIM_EMBD);
    ck_assert(g.ended && g.finish == ST_FINISH_STOP && g.status == ST_OK);
    ck_assert_int_eq(g.n, ST_SIM_EMBD);
    ck_assert_int_eq(g.n_tokens, 0);
    ck_assert_int_eq(g.n_generated, 0);
    ck_assert(max_diff(want, g.v, ST_SIM_EMBD) < 1e-6);
}
END_TEST


/* With MTP drafting on (--batch-mtp: every forward is st_mtp_forward) the
 * vector is the plain forward's, and a generation beside it still runs. */
START_TEST(test_engine_embed_with_mtp)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "tiny", "f32", 6, true);
    int32_t ids[N_PROMPT], gen_ids[20];
    prompt_ids(path, ids, N_PROMPT, 13);
    prompt_ids(path, gen_ids, 20, 14);
    struct got_embd plain, mtp;
    engine_embedding(path, ids, N_PROMPT, 64, &plain);
    struct fixture_pool f;
    fixture_pool_start(&f, path, 2, 2);
    struct fixture_ask ask = { .max_tokens = 8, .ignore_eos = true };
    struct fixture_got gen;
    struct st_request *rg = fixture_submit_ids(f.pool, gen_ids, 20, &ask, &gen);
    st_engine_pool_step(f.pool, 0);
    struct st_request *re = submit_embed(f.pool, ids, N_PROMPT, &mtp);
    fixture_pool_drain(&f);
    st_request_unref(rg);
    st_request_unref(re);
    fixture_pool_stop(&f);
    ck_assert_int_eq(gen.n_gen, 8);
    ck_assert(mtp.ended && mtp.finish == ST_FINISH_STOP && mtp.n == plain.n);
    double d = max_diff(plain.v, mtp.v, plain.n);
    ck_assert_msg(d < 1e-4, "max diff %.7f", d);
}
END_TEST

/* ---- a copy of a model file with <arch>.pooling_type set ------------------ */

static size_t gguf_type_size(enum st_gguf_type t)
{
    switch (t) {
    case ST_GGUF_U8: case ST_GGUF_I8: case ST_GGUF_BOOL: return 1;
    case ST_GGUF_U16: case ST_GGUF_I16: return 2;
    case ST_GGUF_U32: case ST_GGUF_I32: case ST_GGUF_F32: return 4;
    default: return 8;
    }
}

/* One number of type t (from the i64 / u64 / f64 getter) as little-endian bytes. */
static void le_bytes(enum st_gguf_type t, int64_t i, uint64_t u, double f, unsigned char *out)
{
    size_t n = gguf_type_size(t);
    uint64_t bits = t == ST_GGUF_U64 ? u : (uint64_t)i;
    if (t == ST_GGUF_F32) {
        float x = (float)f;
        uint32_t b;
        memcpy(&b, &x, 4);
        bits = b;
    } else if (t == ST_GGUF_F64) {
        memcpy(&bits, &f, 8);
    }
    for (size_t k = 0; k < n; k++)
        out[k] = (unsigned char)(bits >> (8 * k));
}

static void copy_arr(struct st_gguf_writer *w, const char *key, const struct st_gguf_kv *kv)
{
    uint64_t n = st_gguf_arr_n(kv);
    enum st_gguf_type et = st_gguf_arr_type(kv);
    if (et == ST_GGUF_STRING) {
        char **v = calloc(n ? n : 1, sizeof(*v));
        for (uint64_t i = 0; i < n; i++) {
            struct st_str sv;
            ck_assert(st_gguf_arr_str(kv, i, &sv));
            v[i] = strndup(sv.ptr, sv.len);
        }
        st_gguf_writer_set_arr_str(w, key, (const char *const *)v, n);
        for (uint64_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
        return;
    }
    size_t es = gguf_type_size(et);
    unsigned char *buf = malloc(n * es + 1);
    for (uint64_t i = 0; i < n; i++) {
        int64_t iv = 0;
        double fv = 0;
        if (et == ST_GGUF_F32 || et == ST_GGUF_F64)
            ck_assert(st_gguf_arr_f64(kv, i, &fv));
        else
            ck_assert(st_gguf_arr_i64(kv, i, &iv));
        le_bytes(et, iv, (uint64_t)iv, fv, buf + i * es);
    }
    st_gguf_writer_set_arr(w, key, et, buf, n);
    free(buf);
}

static void copy_with_pooling(const char *src, const char *dst, uint32_t pooling)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    ck_assert(st_gguf_open(src, &g, &err) == ST_OK);
    struct st_gguf_writer *w = st_gguf_writer_new(st_gguf_alignment(g));
    for (int64_t i = 0; i < st_gguf_n_kv(g); i++) {
        const struct st_gguf_kv *kv = st_gguf_kv_at(g, i);
        struct st_str k = st_gguf_kv_key(kv);
        char key[256];
        snprintf(key, sizeof(key), "%.*s", (int)k.len, k.ptr);
        enum st_gguf_type t = st_gguf_kv_type(kv);
        struct st_str sv;
        int64_t iv = 0;
        uint64_t uv = 0;
        double fv = 0;
        bool bv = false;
        unsigned char le[8];
        if (t == ST_GGUF_STRING) {
            ck_assert(st_gguf_kv_str(kv, &sv));
            st_gguf_writer_set_strn(w, key, sv);
        } else if (t == ST_GGUF_ARRAY) {
            copy_arr(w, key, kv);
        } else if (t == ST_GGUF_BOOL) {
            ck_assert(st_gguf_kv_bool(kv, &bv));
            st_gguf_writer_set_bool(w, key, bv);
        } else {
            if (t == ST_GGUF_F32 || t == ST_GGUF_F64)
                ck_assert(st_gguf_kv_f64(kv, &fv));
            else if (t == ST_GGUF_U64)
                ck_assert(st_gguf_kv_u64(kv, &uv));
            else
                ck_assert(st_gguf_kv_i64(kv, &iv));
            le_bytes(t, iv, uv, fv, le);
            st_gguf_writer_set_scalar(w, key, t, le);
        }
    }
    st_gguf_writer_set_u32(w, "qwen3moe.pooling_type", pooling);
    for (int64_t i = 0; i < st_gguf_n_tensors(g); i++) {
        const struct st_gguf_tensor *t = st_gguf_tensor(g, i);
        char name[80];
        snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.ptr);
        st_gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data);
    }
    ck_assert_msg(st_gguf_writer_write(w, dst, &err) == ST_OK, "write: %s", err.msg);
    st_gguf_writer_free(w);
    st_gguf_close(g);
}

/* <arch>.pooling_type last (3) is served; mean (1) is refused: the pool
 * says the model cannot embed and an embedding request ends with an error. */
START_TEST(test_engine_embed_pooling_type)
{
    const char *path = tiny();
    char last[400], mean[400];
    snprintf(last, sizeof(last), "%s/last.gguf", dir);
    snprintf(mean, sizeof(mean), "%s/mean.gguf", dir);
    copy_with_pooling(path, last, 3);
    copy_with_pooling(path, mean, 1);
    int32_t ids[12];
    prompt_ids(path, ids, 12, 4);
    struct got_embd a, b;
    engine_embedding(path, ids, 12, 64, &a);
    engine_embedding(last, ids, 12, 64, &b);
    ck_assert_int_eq(a.n, b.n);
    ck_assert(max_diff(a.v, b.v, a.n) == 0.0);   /* the same weights: the same vector */

    struct fixture_pool f;
    fixture_pool_start_ub(&f, mean, 1, 64, 0, 0);
    int32_t n = -1;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_engine_pool_n_embd(f.pool, 0, &n, &err), ST_ERR_UNSUPPORTED);
    ck_assert_int_eq(n, 0);
    struct got_embd g;
    struct st_request *req = submit_embed(f.pool, ids, 12, &g);
    fixture_pool_drain(&f);
    st_request_unref(req);
    fixture_pool_stop(&f);
    ck_assert(g.ended);
    ck_assert_int_eq(g.finish, ST_FINISH_ERROR);
    ck_assert_int_eq(g.status, ST_ERR_UNSUPPORTED);
    ck_assert_int_eq(g.n_embed_events, 0);
}
END_TEST

static Suite *embed_suite(void)
{
    Suite *s = suite_create("engine_embed");
    TCase *tc = tcase_create("embed");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_engine_embed_model_hidden_matches_reference);
    tcase_add_test(tc, test_engine_embed_matches_reference);
    tcase_add_test(tc, test_engine_embed_chunked_equals_one_read);
    tcase_add_test(tc, test_engine_embed_prefix_cached_same_vector);
    tcase_add_test(tc, test_engine_embed_mixed_with_generation);
    tcase_add_test(tc, test_engine_embed_sim_vector);
    tcase_add_test(tc, test_engine_embed_pooling_type);
    tcase_add_test(tc, test_engine_embed_with_mtp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(embed_suite(), CK_FORK);
}
