/* test_forward.c -- the batching rules of st_model_forward (forward.h):
 * four slots with different prompts in one batch give each the logits it
 * gets alone (what makes `-np 4` give every request its own tokens), a
 * batch split into chunks equals one chunk, tokens drawn on the backend
 * are the ones the logits give, and bad batches are refused.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strata/default_model.h"
#include "strata/forward.h"
#include "model_fixture.h"
#include "support.h"

static char dir[256];

static const char *make(const char *preset, const char *quant)
{
    static char path[320];
    return fixture_make_model(path, sizeof(path), dir, preset, quant, 9, false);
}

static struct st_model *load(const char *path, int32_t slots, int32_t max_rows, int32_t threads)
{
    struct st_err err = { 0 };
    struct st_model *m = NULL;
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    struct st_model_params p = { .n_threads = threads, .n_slots = slots, .n_ctx = 64,
                                 .max_rows = max_rows, .max_out = 32 };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    return m;
}

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static int32_t argmax(const float *x, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        b = x[i] > x[b] ? i : b;
    return (int32_t)b;
}

static double max_diff(const float *a, const float *b, int64_t n)
{
    double d = 0;
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

#define N_SLOTS 4
#define N_GEN 5
static const int64_t plen[N_SLOTS] = { 7, 12, 3, 9 };

/* Logits of every step of slot s (prompt, then N_GEN greedy decodes) when
 * it runs alone: out[(step) * nv ...]. Tokens generated go to gen[]. */
static void run_alone(struct st_model *m, int32_t s, const int32_t *prompt, float *out,
                      int32_t *gen)
{
    int64_t nv = st_model_hparams(m)->n_vocab, n = plen[s];
    int32_t slots[16];
    int64_t pos[16], last = n - 1;
    for (int64_t i = 0; i < n; i++) {
        slots[i] = s;
        pos[i] = i;
    }
    const float *lg;
    struct st_err err = { 0 };
    struct st_model_batch b = { n, prompt, slots, pos, 1, &last };
    ck_assert_msg(st_model_forward(m, &b, &lg, &err) == ST_OK, "%s", err.msg);
    memcpy(out, lg, (size_t)nv * sizeof(float));
    for (int g = 0; g < N_GEN; g++) {
        int64_t p = n + g, zero = 0;
        gen[g] = argmax(out + g * nv, nv);
        struct st_model_batch d = { 1, &gen[g], &slots[0], &p, 1, &zero };
        ck_assert_msg(st_model_forward(m, &d, &lg, &err) == ST_OK, "%s", err.msg);
        memcpy(out + (g + 1) * nv, lg, (size_t)nv * sizeof(float));
    }
}

/* All four prompts in one forward, then N_GEN steps of four decode rows. */
static void run_together(struct st_model *m, int32_t prompts[N_SLOTS][16], float *out,
                         int32_t gen[N_SLOTS][N_GEN])
{
    int64_t nv = st_model_hparams(m)->n_vocab, n = 0, outs[N_SLOTS];
    int32_t tok[64], slots[64];
    int64_t pos[64];
    for (int32_t s = 0; s < N_SLOTS; s++) {
        for (int64_t i = 0; i < plen[s]; i++, n++) {
            tok[n] = prompts[s][i];
            slots[n] = s;
            pos[n] = i;
        }
        outs[s] = n - 1;
    }
    const float *lg;
    struct st_err err = { 0 };
    struct st_model_batch b = { n, tok, slots, pos, N_SLOTS, outs };
    ck_assert_msg(st_model_forward(m, &b, &lg, &err) == ST_OK, "%s", err.msg);
    for (int32_t s = 0; s < N_SLOTS; s++)
        memcpy(out + (s * (N_GEN + 1)) * nv, lg + s * nv, (size_t)nv * sizeof(float));
    for (int g = 0; g < N_GEN; g++) {
        for (int32_t s = 0; s < N_SLOTS; s++) {
            gen[s][g] = argmax(out + (s * (N_GEN + 1) + g) * nv, nv);
            tok[s] = gen[s][g];
            slots[s] = s;
            pos[s] = plen[s] + g;
            outs[s] = s;
        }
        struct st_model_batch d = { N_SLOTS, tok, slots, pos, N_SLOTS, outs };
        ck_assert_msg(st_model_forward(m, &d, &lg, &err) == ST_OK, "%s", err.msg);
        for (int32_t s = 0; s < N_SLOTS; s++)
            memcpy(out + (s * (N_GEN + 1) + g + 1) * nv, lg + s * nv,
                   (size_t)nv * sizeof(float));
    }
}

static void batch_invariance(const char *quant)
{
    struct st_model *m = load(make("small", quant), N_SLOTS, 0, 2);
    int64_t nv = st_model_hparams(m)->n_vocab, per = (N_GEN + 1) * nv;
    int32_t prompts[N_SLOTS][16], gen_t[N_SLOTS][N_GEN], gen_a[N_GEN];
    for (int32_t s = 0; s < N_SLOTS; s++)
        ref_tokens(100 + (uint64_t)s, prompts[s], plen[s], nv);
    float *together = malloc((size_t)(N_SLOTS * per) * sizeof(float));
    float *alone = malloc((size_t)per * sizeof(float));
    run_together(m, prompts, together, gen_t);
    double worst = 0;
    for (int32_t s = 0; s < N_SLOTS; s++) {
        run_alone(m, s, prompts[s], alone, gen_a);
        for (int g = 0; g < N_GEN; g++)
            ck_assert_msg(gen_a[g] == gen_t[s][g], "%s slot %d step %d: token %d alone, %d "
                          "batched", quant, s, g, gen_a[g], gen_t[s][g]);
        worst = fmax(worst, max_diff(alone, together + s * per, per));
    }
    fprintf(stderr, "forward %s: batched vs alone, max |logit diff| %.3g\n", quant, worst);
    ck_assert_msg(worst <= 1e-4, "%s: batched logits differ from alone by %g", quant, worst);
    free(together);
    free(alone);
    st_model_free(m);
}

START_TEST(test_forward_batch_invariant_q8_0)
{
    batch_invariance("q8_0");
}
END_TEST

START_TEST(test_forward_batch_invariant_q4_k)
{
    batch_invariance("q4_k");
}
END_TEST

/* A 20-row prompt through 5-row chunks (and 1 thread) equals one chunk. */
START_TEST(test_forward_chunks_equal_one_batch)
{
    const char *path = make("tiny", "q8_0");
    struct st_model *a = load(path, 1, 0, 2), *b = load(path, 1, 5, 1);
    int64_t nv = st_model_hparams(a)->n_vocab, pos[20], outs[3] = { 4, 5, 19 };
    int32_t tok[20], slots[20] = { 0 };
    ref_tokens(7, tok, 20, nv);
    for (int i = 0; i < 20; i++)
        pos[i] = i;
    struct st_model_batch bt = { 20, tok, slots, pos, 3, outs };
    const float *la, *lb;
    struct st_err err = { 0 };
    ck_assert(st_model_forward(a, &bt, &la, &err) == ST_OK);
    float *keep = malloc((size_t)(3 * nv) * sizeof(float));
    memcpy(keep, la, (size_t)(3 * nv) * sizeof(float));
    ck_assert_msg(st_model_forward(b, &bt, &lb, &err) == ST_OK, "%s", err.msg);
    double d = max_diff(keep, lb, 3 * nv);
    ck_assert_msg(d <= 1e-4, "chunked logits differ by %g", d);
    free(keep);
    st_model_free(a);
    st_model_free(b);
}
END_TEST

/* A long prompt (700 tokens, past many attention tiles) read as one
 * batch on 2 threads, then greedy decode steps (whose attention is split
 * over the context), gives the tokens and logits of the same prompt read
 * in ragged 37-row chunks on 1 thread (no split). */
static void read_long(struct st_model *m, const int32_t *tok, int64_t n, int32_t *gen,
                      float *last)
{
    int64_t nv = st_model_hparams(m)->n_vocab, out = n - 1, zero = 0;
    int64_t *pos = malloc((size_t)n * sizeof(int64_t));
    int32_t *slots = calloc((size_t)n, sizeof(int32_t));
    for (int64_t i = 0; i < n; i++)
        pos[i] = i;
    const float *lg;
    struct st_err err = { 0 };
    struct st_model_batch b = { n, tok, slots, pos, 1, &out };
    ck_assert_msg(st_model_forward(m, &b, &lg, &err) == ST_OK, "%s", err.msg);
    for (int g = 0; g < 4; g++) {
        int64_t p = n + g;
        gen[g] = argmax(lg, nv);
        struct st_model_batch d = { 1, &gen[g], slots, &p, 1, &zero };
        ck_assert_msg(st_model_forward(m, &d, &lg, &err) == ST_OK, "%s", err.msg);
    }
    memcpy(last, lg, (size_t)nv * sizeof(float));
    free(pos);
    free(slots);
}

START_TEST(test_forward_long_prompt_chunks_equal_one_batch)
{
    const char *path = make("small", "q8_0");
    struct st_err err = { 0 };
    struct st_model *m[2] = { NULL, NULL };
    int32_t rows[2] = { 0, 37 }, threads[2] = { 2, 1 }, gen[2][4], tok[700];
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(st_model_open(path, &m[i], &err) == ST_OK, "open: %s", err.msg);
        struct st_model_params p = { .n_threads = threads[i], .n_slots = 1, .n_ctx = 1024,
                                     .max_rows = rows[i], .max_out = 4 };
        ck_assert_msg(st_model_load(m[i], &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    }
    int64_t nv = st_model_hparams(m[0])->n_vocab;
    float *last = malloc((size_t)(2 * nv) * sizeof(float));
    ref_tokens(11, tok, 700, nv);
    for (int i = 0; i < 2; i++)
        read_long(m[i], tok, 700, gen[i], last + i * nv);
    for (int g = 0; g < 4; g++)
        ck_assert_msg(gen[0][g] == gen[1][g], "step %d: token %d in one batch, %d in chunks", g,
                      gen[0][g], gen[1][g]);
    double d = max_diff(last, last + nv, nv);
    ck_assert_msg(d <= 1e-4, "long prompt: chunked logits differ by %g", d);
    free(last);
    st_model_free(m[0]);
    st_model_free(m[1]);
}
END_TEST

/* st_model_forward_draw gives the tokens the logits of st_model_forward
 * give: greedy rows the argmax, the others st_draw_row's pick (the
 * chain itself is tested in test_backend_sample). */
START_TEST(test_forward_draw_matches_logits)
{
    const char *path = make("small", "q8_0");
    struct st_model *m = load(path, 2, 64, 2);
    int64_t nv = st_model_hparams(m)->n_vocab;
    int32_t tok[9] = { 5, 17, 3, 99, 42, 7, 250, 11, 64 }, slot[9] = { 0 };
    int64_t pos[9], outs[3] = { 2, 5, 8 };
    for (int i = 0; i < 9; i++)
        pos[i] = i;
    struct st_model_batch b = { 9, tok, slot, pos, 3, outs };
    struct st_err err = { 0 };
    const float *lg;
    ck_assert_msg(st_model_forward(m, &b, &lg, &err) == ST_OK, "%s", err.msg);
    float *copy = malloc((size_t)(3 * nv) * sizeof(float));
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, lg, (size_t)(3 * nv) * sizeof(float));

    const struct st_draw draws[3] = {
        { .top_k = 1, .top_p = 1.0f, .temp = 0.0f, .u = 0.0 },
        { .top_k = 5, .top_p = 0.9f, .min_p = 0.05f, .temp = 0.8f, .u = 0.7 },
        { .top_k = 4, .top_p = 1.0f, .temp = 0.0f, .u = 0.9 },
    };
    int32_t ids[3] = { -1, -1, -1 };
    ck_assert_msg(st_model_forward_draw(m, &b, draws, ids, &err) == ST_OK, "%s", err.msg);
    for (int j = 0; j < 3; j++)
        ck_assert_int_eq(ids[j], st_draw_row(copy + j * nv, nv, &draws[j]));
    ck_assert_int_eq(ids[0], argmax(copy, nv));
    free(copy);
    st_model_free(m);
}
END_TEST

START_TEST(test_forward_rejects_bad_batches)
{
    struct st_model *m = load(make("tiny", "q8_0"), 2, 0, 1);
    int64_t nv = st_model_hparams(m)->n_vocab;
    int32_t tok[2] = { 1, 2 }, slots[2] = { 0, 1 };
    int64_t pos[2] = { 0, 0 }, outs[2] = { 1, 0 };
    const float *lg;
    struct st_err err = { 0 };
    struct st_model_batch b = { 2, tok, slots, pos, 2, outs };
    ck_assert_int_eq(st_model_forward(m, &b, &lg, &err), ST_ERR_INVALID);   /* not ascending */
    outs[0] = 0;
    outs[1] = 1;
    tok[1] = (int32_t)nv;
    ck_assert_int_eq(st_model_forward(m, &b, &lg, &err), ST_ERR_INVALID);   /* token */
    ck_assert_ptr_nonnull(strstr(err.msg, "row 1"));
    tok[1] = 2;
    slots[1] = 2;
    ck_assert_int_eq(st_model_forward(m, &b, &lg, &err), ST_ERR_INVALID);   /* slot */
    slots[1] = 1;
    pos[1] = 64;
    ck_assert_int_eq(st_model_forward(m, &b, &lg, &err), ST_ERR_INVALID);   /* n_ctx */
    pos[1] = 0;
    ck_assert_int_eq(st_model_forward(m, &b, &lg, &err), ST_OK);
    ck_assert_ptr_nonnull(lg);
    st_model_unload(m);
    ck_assert_int_eq(st_model_forward(m, &b, &lg, &err), ST_ERR_LOADING);
    st_model_free(m);
}
END_TEST

START_TEST(test_forward_open_reports_missing_file)
{
    struct st_model *m = (struct st_model *)1;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_model_open("/nonexistent/x.gguf", &m, &err), ST_ERR_IO);
    ck_assert_ptr_null(m);
}
END_TEST

/* The load reports its facts: params counted, weights in place, KV sized
 * n_layer x n_slots x n_ctx x 2 (k, v) x Hkv*D x 2 bytes. */
START_TEST(test_forward_load_sizes)
{
    struct st_model *m = load(make("tiny", "q8_0"), 3, 0, 1);
    const struct st_hparams *hp = st_model_hparams(m);
    size_t kv = (size_t)(hp->n_layer * 3 * 64 * 2 * hp->n_head_kv * hp->head_dim_k * 2);
    ck_assert_uint_eq(st_model_kv_bytes(m), kv);
    ck_assert_int_gt(st_model_n_params(m), hp->n_vocab * hp->n_embd);
    ck_assert_uint_gt(st_model_weight_bytes(m), 0);
    ck_assert(st_model_loaded(m));
    ck_assert_int_eq(st_model_params_of(m)->max_rows, 512 + 3);
    struct st_err err = { 0 };
    struct st_model_params p = { .n_slots = 1 };
    ck_assert_int_eq(st_model_load(m, &p, NULL, NULL, &err), ST_ERR_INVALID);   /* twice */
    st_model_free(m);
}
END_TEST

/* The default model is made once under $XDG_CACHE_HOME/strata and reused. */
START_TEST(test_forward_default_model_made_once)
{
    char cache[320], p1[512], p2[512];
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    setenv("XDG_CACHE_HOME", cache, 1);
    struct st_err err = { 0 };
    ck_assert_msg(st_default_model_path(p1, sizeof(p1), &err) == ST_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(p1, "/cache/strata/tiny-q8_0.gguf"));
    struct stat a, b;
    ck_assert_int_eq(stat(p1, &a), 0);
    ck_assert(st_default_model_path(p2, sizeof(p2), &err) == ST_OK);
    ck_assert_str_eq(p1, p2);
    ck_assert_int_eq(stat(p2, &b), 0);
    ck_assert(a.st_ino == b.st_ino && a.st_mtime == b.st_mtime);   /* not rewritten */
    struct st_model *m = load(p1, 1, 0, 1);
    ck_assert_str_eq(st_model_hparams(m)->arch_name, "qwen3moe");
    st_model_free(m);
    char tiny[8];
    ck_assert_int_eq(st_default_model_path(tiny, sizeof(tiny), &err), ST_ERR_INVALID);
}
END_TEST

/* A damaged cache (truncated, or other bytes of the same size) is made
 * again; starts racing on an empty cache all get the file (issue 26). */
START_TEST(test_forward_default_model_repaired)
{
    char cache[320], path[512];
    snprintf(cache, sizeof(cache), "%s/cache-repair", dir);
    setenv("XDG_CACHE_HOME", cache, 1);
    struct st_err err = { 0 };
    /* four processes at once on an empty cache */
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = fork();
        ck_assert_int_ge(kids[i], 0);
        if (kids[i] == 0) {
            char p[512];
            struct st_err e = { 0 };
            _exit(st_default_model_path(p, sizeof(p), &e) == ST_OK ? 0 : 1);
        }
    }
    for (int i = 0; i < 4; i++) {
        int status = 0;
        ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "start %d failed", i);
    }
    ck_assert_msg(st_default_model_path(path, sizeof(path), &err) == ST_OK, "%s", err.msg);
    struct stat good;
    ck_assert_int_eq(stat(path, &good), 0);
    /* truncated */
    ck_assert_int_eq(truncate(path, good.st_size / 2), 0);
    ck_assert_msg(st_default_model_path(path, sizeof(path), &err) == ST_OK, "%s", err.msg);
    struct stat now;
    ck_assert_int_eq(stat(path, &now), 0);
    ck_assert_int_eq(now.st_size, good.st_size);
    /* same size, one byte changed */
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, good.st_size / 3, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, good.st_size / 3, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    ck_assert_msg(st_default_model_path(path, sizeof(path), &err) == ST_OK, "%s", err.msg);
    struct st_model *m = load(path, 1, 0, 1);
    ck_assert_str_eq(st_model_hparams(m)->arch_name, "qwen3moe");
    st_model_free(m);
    /* no temporary file is left behind */
    char dir_path[400];
    snprintf(dir_path, sizeof(dir_path), "%s/strata", cache);
    DIR *d = opendir(dir_path);
    ck_assert_ptr_nonnull(d);
    int n_files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n_files += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(n_files, 1);
    /* an unwritable cache names the file */
    snprintf(cache, sizeof(cache), "/proc/strata-no-cache");
    setenv("XDG_CACHE_HOME", cache, 1);
    ck_assert_int_ne(st_default_model_path(path, sizeof(path), &err), ST_OK);
    ck_assert_msg(strstr(err.msg, "/proc/strata-no-cache") != NULL, "%s", err.msg);
}
END_TEST

static Suite *forward_suite(void)
{
    Suite *s = suite_create("forward");
    TCase *tc = tcase_create("batch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_forward_batch_invariant_q8_0);
    tcase_add_test(tc, test_forward_batch_invariant_q4_k);
    tcase_add_test(tc, test_forward_chunks_equal_one_batch);
    tcase_add_test(tc, test_forward_long_prompt_chunks_equal_one_batch);
    tcase_add_test(tc, test_forward_rejects_bad_batches);
    tcase_add_test(tc, test_forward_draw_matches_logits);
    tcase_add_test(tc, test_forward_open_reports_missing_file);
    tcase_add_test(tc, test_forward_load_sizes);
    tcase_add_test(tc, test_forward_default_model_made_once);
    tcase_add_test(tc, test_forward_default_model_repaired);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(forward_suite(), CK_FORK);
}
