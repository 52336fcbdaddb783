/* test_mtp_glm.c -- the MTP (nextn) layer of a glm4moe file (make-model's
 * glm-tiny: GLM-4.5's layout, its nextn block a full MoE decoder block with
 * the shared expert, q/k/v biases and its own shared_head_norm).
 *
 *   - the drafts and the verified rows against the naive reference
 *     (forward_ref.c: ref_step / ref_mtp_step), round by round, as
 *     test_mtp.c does for qwen3moe;
 *   - greedy decoding through draft / verify / accept / truncate gives,
 *     token for token, what plain greedy decoding (st_model_forward and
 *     argmax) gives, and the loop did draft (and accept) tokens.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "model_fixture.h"
#include "strata/forward.h"
#include "strata/mtp.h"
#include "support.h"

#define N_CTX 96
#define N_PROMPT 12
#define N_ROUNDS 6
#define N_DRAFT 3
#define N_GEN 40

#include "mtp_ref_fixture.h"   /* needs N_CTX .. N_DRAFT */

static char dir[256];

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static const char *make(const char *quant)
{
    static char path[320];
    return fixture_make_model(path, sizeof(path), dir, "glm-tiny", quant, 3, false);
}

static struct st_model *load(const char *path)
{
    struct st_err err = { 0 };
    struct st_model *m = NULL;
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    struct st_model_params p = { .n_threads = 2, .n_slots = 1, .n_ctx = N_CTX, .max_out = 32 };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    return m;
}

/* The reference comparison (mtp_ref_fixture.h) on a glm-tiny file. */
static struct tally compare_path(const char *path)
{
    struct st_model *m = load(path);
    int accepted;
    struct tally w = compare_mtp(m, &accepted);
    st_model_free(m);
    return w;
}

START_TEST(test_mtp_glm_matches_reference)
{
    struct tally w = compare_path(make("q8_0"));
    judge("glm q8_0", &w);
    w = compare_path(make("f32"));
    judge("glm f32", &w);
    ck_assert_msg(w.worst_cos >= 0.9999, "f32: worst cosine %.7f", w.worst_cos);
}
END_TEST

/* ---- greedy identity ---------------------------------------------------- */

/* The prompt, then N_GEN greedy tokens one forward at a time. */
static void plain_greedy(const char *path, const int32_t *prompt, int32_t *gen)
{
    struct st_model *m = load(path);
    int64_t nv = st_model_hparams(m)->n_vocab, pos[N_PROMPT], last = N_PROMPT - 1, zero = 0;
    int32_t slots[N_PROMPT] = { 0 };
    for (int i = 0; i < N_PROMPT; i++)
        pos[i] = i;
    struct st_model_batch b = { N_PROMPT, (int32_t *)prompt, slots, pos, 1, &last };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert_msg(st_model_forward(m, &b, &lg, &err) == ST_OK, "%s", err.msg);
    gen[0] = argmax(lg, nv);
    for (int64_t i = 1; i < N_GEN; i++) {
        int64_t p = N_PROMPT + i - 1;
        struct st_model_batch d = { 1, &gen[i - 1], slots, &p, 1, &zero };
        ck_assert_msg(st_model_forward(m, &d, &lg, &err) == ST_OK, "%s", err.msg);
        gen[i] = argmax(lg, nv);
    }
    st_model_free(m);
}

/* The same through draft / verify / accept / truncate; *drafted and
 * *accepted count the drafts made and kept. A random-weight model's
 * drafts are (almost) never right, so with 'oracle' (the plain run's
 * tokens) every other round replaces the MTP drafts by the true
 * continuation, its last token spoiled: the verify then accepts all but
 * the last, and the rounds after it draft from the carried state of an
 * accepted row. */
static void mtp_greedy(const char *path, const int32_t *prompt, const int32_t *oracle,
                       int32_t *gen, int *drafted, int *accepted)
{
    struct st_model *m = load(path);
    struct st_mtp *t = mtp_of(m);
    int64_t nv = st_model_hparams(m)->n_vocab, pos[N_PROMPT], last = N_PROMPT - 1;
    int32_t slots[N_DRAFT + 1 > N_PROMPT ? N_DRAFT + 1 : N_PROMPT] = { 0 };
    for (int i = 0; i < N_PROMPT; i++)
        pos[i] = i;
    struct st_model_batch b = { N_PROMPT, (int32_t *)prompt, slots, pos, 1, &last };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert_msg(st_mtp_forward(t, &b, &lg, &err) == ST_OK, "%s", err.msg);
    int n = 0;
    gen[n++] = argmax(lg, nv);
    *drafted = *accepted = 0;
    while (n < N_GEN) {
        int64_t p0 = N_PROMPT + n - 1;
        int32_t d[N_DRAFT + 1];
        struct st_mtp_draft q = { .slot = 0, .token = gen[n - 1], .pos = p0,
                                  .n_draft = N_DRAFT, .out = d + 1 };
        ck_assert_msg(st_mtp_draft(t, &q, 1, &err) == ST_OK, "draft: %s", err.msg);
        *drafted += q.n_draft;
        for (int i = 1; oracle && (n / 2) % 2 == 0 && i <= q.n_draft && n - 1 + i < N_GEN; i++)
            d[i] = i < q.n_draft ? oracle[n - 1 + i] : (oracle[n - 1 + i] + 1) % 256;
        d[0] = gen[n - 1];
        int64_t p[N_DRAFT + 1], outs[N_DRAFT + 1];
        for (int i = 0; i <= q.n_draft; i++)
            p[i] = p0 + (outs[i] = i);
        struct st_model_batch v = { q.n_draft + 1, d, slots, p, q.n_draft + 1, outs };
        ck_assert_msg(st_mtp_forward(t, &v, &lg, &err) == ST_OK, "verify: %s", err.msg);
        int a = 0;
        for (int i = 0; i <= q.n_draft && n < N_GEN; i++) {
            gen[n++] = argmax(lg + i * nv, nv);
            if (i == q.n_draft || gen[n - 1] != d[i + 1])
                break;
            a++;
        }
        *accepted += a;
        st_mtp_truncate(t, 0, p0 + a + 1);
    }
    st_mtp_free(t);
    st_model_free(m);
}

START_TEST(test_mtp_glm_greedy_identical)
{
    static const char *const quants[] = { "q8_0", "f32" };
    for (size_t k = 0; k < 2; k++) {
        const char *path = make(quants[k]);
        int32_t prompt[N_PROMPT], a[N_GEN], b[N_GEN];
        ref_tokens(33, prompt, N_PROMPT, 256);   /* byte tokens: in any vocabulary */
        plain_greedy(path, prompt, a);
        int drafted, accepted;
        mtp_greedy(path, prompt, NULL, b, &drafted, &accepted);
        fprintf(stderr, "mtp glm greedy %s: %d drafts made, %d accepted\n", quants[k], drafted,
                accepted);
        for (int i = 0; i < N_GEN; i++)
            ck_assert_msg(a[i] == b[i], "%s: token %d: plain %d, with MTP %d", quants[k], i,
                          (int)a[i], (int)b[i]);
        ck_assert_msg(drafted >= N_DRAFT * 5, "%s: only %d drafts made", quants[k], drafted);
        mtp_greedy(path, prompt, a, b, &drafted, &accepted);
        fprintf(stderr, "mtp glm greedy %s with oracle drafts: %d drafts, %d accepted\n",
                quants[k], drafted, accepted);
        for (int i = 0; i < N_GEN; i++)
            ck_assert_msg(a[i] == b[i], "%s (oracle): token %d: plain %d, with MTP %d",
                          quants[k], i, (int)a[i], (int)b[i]);
        ck_assert_msg(accepted >= 5, "%s: only %d drafts accepted", quants[k], accepted);
    }
}
END_TEST

static Suite *mtp_glm_suite(void)
{
    Suite *s = suite_create("mtp_glm");
    TCase *tc = tcase_create("glm4moe");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_mtp_glm_matches_reference);
    tcase_add_test(tc, test_mtp_glm_greedy_identical);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(mtp_glm_suite(), CK_FORK);
}
