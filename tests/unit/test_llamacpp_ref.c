/* test_llamacpp_ref.c -- next-token choices against llama.cpp's.
 *
 * tests/data/llamacpp/ holds, for models that `strata make-model` writes
 * (preset, quant, seed), what llama.cpp computed for one teacher-forced
 * token sequence, read in chunks of 100 tokens: at every position its top-1
 * token and the margin of its top-1 logit over its top-2. Here the same
 * file is made again and read in chunks of 100 rows, every row's logits
 * out, and where llama.cpp's margin is clear Strata's arg-max must be its
 * top-1.
 *
 * "Clear" is per file: the two engines round differently (summation order,
 * and for quantized weights how activations are quantized before each
 * matmul), and in a mixture of experts a router near-tie that rounding
 * tips changes the logits far more than the rounding itself: llama.cpp
 * flips its own choices at margins up to 0.47 when only its chunk size
 * changes. Each file gives its threshold ('clear', from both measurements)
 * and the share of ALL positions that must agree ('agree'), so a file of
 * near-ties cannot pass by checking nothing. The headers name the
 * llama.cpp build that made them (tests/data/llamacpp/README.md).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/forward.h"
#include "strata/make_model.h"
#include "support.h"

#define MAX_TOK 1024
#define CHUNK 100          /* rows per forward, as llama.cpp read the files' sequence */

/* The reference files; a missing one fails its test. */
static const char *const files[] = {
    "glm-tiny-f32", "glm-tiny-q8_0", "next-tiny-f16", "next-tiny-f32", "next-tiny-q4_0",
    "next-tiny-q4_1", "next-tiny-q5_0", "next-tiny-q5_1", "next-tiny-q8_0", "next80-tiny-f32",
    "next80-tiny-q8_0", "next80-tiny-ssm-in-f32", "qwen35-tiny-f32", "qwen35-tiny-q8_0",
    "small-f32", "small-iq3_s", "small-iq3_xxs", "small-iq4_xs", "small-q2_k", "small-q3_k",
    "small-q4_k", "small-q4_k_m", "small-q5_k", "small-q6_k", "small-q8_0",
};
/* The 12-layer presets (140 M parameters; 526 MiB at f32): tagged slow, so
 * the sanitizer pass leaves them out (ctest llamacpp_ref_slow). */
static const char *const files_medium[] = {
    "medium-f32", "medium-q4_k_m", "next-medium-f32", "next-medium-q4_k_m",
};

struct ref {
    char     preset[32], quant[16];
    uint64_t seed;
    double   clear;             /* margin from which the choice must agree */
    double   agree;             /* share of all positions that must agree */
    int32_t  n;
    int32_t  tok[MAX_TOK];
    int32_t  top1[MAX_TOK];
    float    margin[MAX_TOK];
};

/* Header lines "key value", '#' comments, then "tokens ID...", then one
 * "pos top1 margin top1_logit" line per position. */
static void parse(const char *text, const char *name, struct ref *r)
{
    const char *p = text;
    int32_t rows = 0;
    memset(r, 0, sizeof(*r));
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[8192];
        ck_assert_msg(len < sizeof(line), "%s: line too long", name);
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (eol ? 1 : 0);
        if (line[0] == '#' || line[0] == '\0')
            continue;
        unsigned long long seed;
        int pos, top1, used;
        float margin, logit;
        if (sscanf(line, "preset %31s", r->preset) == 1 || sscanf(line, "quant %15s", r->quant) == 1 ||
            sscanf(line, "clear %lf", &r->clear) == 1 || sscanf(line, "agree %lf", &r->agree) == 1 ||
            strncmp(line, "llama.cpp ", 10) == 0 ||
            strncmp(line, "chunk ", 6) == 0)
            continue;
        if (sscanf(line, "seed %llu", &seed) == 1) {
            r->seed = seed;
        } else if (strncmp(line, "tokens ", 7) == 0) {
            for (const char *t = line + 7; sscanf(t, "%d%n", &top1, &used) == 1; t += used) {
                ck_assert_msg(r->n < MAX_TOK, "%s: too many tokens", name);
                r->tok[r->n++] = top1;
            }
        } else if (sscanf(line, "%d %d %f %f", &pos, &top1, &margin, &logit) == 4) {
            ck_assert_msg(pos == rows && rows < r->n, "%s: row %d out of order", name, pos);
            r->top1[rows] = top1;
            r->margin[rows++] = margin;
        } else {
            ck_abort_msg("%s: cannot read line '%s'", name, line);
        }
    }
    ck_assert_msg(r->preset[0] && r->quant[0] && r->seed && r->clear > 0.0 && r->agree > 0.5,
                  "%s: preset, quant, seed, clear and agree (> 0.5) are all needed", name);
    ck_assert_msg(r->n > 0 && rows == r->n, "%s: %d tokens but %d rows", name, r->n, rows);
}

static int32_t argmax(const float *v, int64_t n)
{
    int32_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = (int32_t)i;
    return best;
}

/* Strata's arg-max at every position of r's sequence, into got[]. */
static void run(const struct ref *r, const char *dir, int32_t *got)
{
    char path[512];
    struct st_err err = { 0 };
    snprintf(path, sizeof(path), "%s/%s-%s.gguf", dir, r->preset, r->quant);
    struct st_make_model_opts o = { .out_path = path, .preset = r->preset, .quant = r->quant,
                                    .seed = r->seed };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model %s %s: %s", r->preset,
                  r->quant, err.msg);
    struct st_model *m = NULL;
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    struct st_model_params p = { .n_threads = 2, .n_slots = 1, .n_ctx = r->n + 1,
                                 .max_rows = CHUNK, .max_out = CHUNK };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    int64_t nv = st_model_hparams(m)->n_vocab;
    static int32_t slots[CHUNK];
    static int64_t pos[CHUNK], outs[CHUNK];
    for (int32_t p0 = 0; p0 < r->n; p0 += CHUNK) {
        int32_t k = r->n - p0 < CHUNK ? r->n - p0 : CHUNK;
        for (int32_t i = 0; i < k; i++) {
            slots[i] = 0;
            pos[i] = p0 + i;
            outs[i] = i;
        }
        struct st_model_batch b = { k, r->tok + p0, slots, pos, k, outs };
        const float *logits = NULL;
        ck_assert_msg(st_model_forward(m, &b, &logits, &err) == ST_OK, "forward: %s", err.msg);
        for (int32_t i = 0; i < k; i++)
            got[p0 + i] = argmax(logits + (size_t)i * (size_t)nv, nv);
    }
    st_model_free(m);
    remove(path);
}

static void check_file(const char *name)
{
    char path[512], dir[256];
    snprintf(path, sizeof(path), "%s/tests/data/llamacpp/%s.ref", support_source_dir(), name);
    char *text = support_read_file(path);
    ck_assert_msg(text != NULL, "%s is missing", path);
    static struct ref r;
    static int32_t got[MAX_TOK];
    parse(text, name, &r);
    free(text);
    support_tmpdir(dir, sizeof(dir));
    run(&r, dir, got);
    support_rmtree(dir);

    int clear = 0, agree = 0, agree_all = 0;
    for (int32_t i = 0; i < r.n; i++) {
        agree_all += got[i] == r.top1[i];
        if (r.margin[i] < r.clear)
            continue;
        clear++;
        agree += got[i] == r.top1[i];
        ck_assert_msg(got[i] == r.top1[i],
                      "%s position %d: llama.cpp %d (margin %.4f), strata %d", name, i,
                      r.top1[i], (double)r.margin[i], got[i]);
    }
    printf("llamacpp_ref: %s: %d of %d positions clear (margin >= %g), %d agree; "
           "%d of all %d agree\n", name, clear, r.n, r.clear, agree, agree_all, r.n);
    ck_assert_msg(agree_all >= r.agree * r.n, "%s: %d of %d positions agree, below %.3f", name,
                  agree_all, r.n, r.agree);
}

START_TEST(test_llamacpp_next_token)
{
    check_file(files[_i]);
}
END_TEST

START_TEST(test_llamacpp_next_token_medium)
{
    check_file(files_medium[_i]);
}
END_TEST

static Suite *llamacpp_suite(void)
{
    Suite *s = suite_create("llamacpp_ref");
    TCase *tc = tcase_create("next_token");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_llamacpp_next_token, 0, sizeof(files) / sizeof(files[0]));
    suite_add_tcase(s, tc);
    TCase *medium = tcase_create("next_token_medium");
    tcase_set_tags(medium, "slow");
    tcase_set_timeout(medium, 600);
    tcase_add_loop_test(medium, test_llamacpp_next_token_medium, 0,
                        sizeof(files_medium) / sizeof(files_medium[0]));
    suite_add_tcase(s, medium);
    return s;
}

int main(void)
{
    return support_run_suite(llamacpp_suite(), CK_FORK);
}
