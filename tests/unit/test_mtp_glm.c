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

static struct st_mtp *mtp_of(struct st_model *m)
{
    struct st_err err = { 0 };
    struct st_mtp *t = NULL;
    ck_assert(st_mtp_available(m));
    ck_assert_msg(st_mtp_new(m, 4, &t, &err) == ST_OK, "mtp: %s", err.msg);
    return t;
}

static int32_t argmax(const float *x, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        b = x[i] > x[b] ? i : b;
    return (int32_t)b;
}

/* ---- against the reference ------------------------------------------- */

struct tally {
    int n, close, argmax_bad;
    double worst_cos;
};

static void check_row(const float *ref, const float *fast, int64_t nv, struct tally *w)
{
    struct ref_cmp c = ref_compare(ref, fast, nv, 0.001);
    w->n++;
    w->close += c.cos >= 0.999;
    w->argmax_bad += !c.argmax_ok;
    w->worst_cos = fmin(w->worst_cos, c.cos);
}

/* The reference side: main states by position (after output_norm). */
struct refside {
    struct ref_model *r;
    float *hist, *lg, *h;   /* [N_CTX][E], [V], [E] */
    int64_t e, nv;
};

/* Main rows p0.. (ref_step, logits of row i into lg_out[i]), then their
 * MTP upkeep (ref_mtp_step with h_{p-1}). */
static void ref_rows(struct refside *s, const int32_t *tok, int64_t p0, int64_t n, float *lg_out)
{
    for (int64_t i = 0; i < n; i++) {
        ref_step(s->r, tok[i], p0 + i, lg_out + i * s->nv);
        memcpy(s->hist + (p0 + i) * s->e, ref_hidden(s->r), (size_t)s->e * sizeof(float));
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t p = p0 + i;
        ref_mtp_step(s->r, tok[i], p > 0 ? s->hist + (p - 1) * s->e : NULL, p, s->h, s->lg);
    }
}

/* Draft N_DRAFT from (*tok, pos) and compare each step's MTP logits;
 * verify in one forward and compare the main rows; accept greedily; cut.
 * Returns the new position, the next token in *tok. */
static int64_t round_trip(struct st_mtp *t, struct refside *s, int32_t *tok, int64_t pos,
                          struct tally *w)
{
    int64_t nv = s->nv;
    int32_t d[N_DRAFT + 1], slots[N_DRAFT + 1] = { 0 };
    float *dl = malloc((size_t)(N_DRAFT * nv) * sizeof(float));
    float *rl = malloc((size_t)((N_DRAFT + 1) * nv) * sizeof(float));
    struct st_mtp_draft q = { .slot = 0, .token = *tok, .pos = pos, .n_draft = N_DRAFT,
                              .out = d + 1, .logits = dl };
    struct st_err err = { 0 };
    ck_assert_msg(st_mtp_draft(t, &q, 1, &err) == ST_OK, "draft: %s", err.msg);
    ck_assert_int_eq(q.n_draft, N_DRAFT);
    const float *h = s->hist + (pos - 1) * s->e;
    for (int j = 0; j < N_DRAFT; j++) {
        ref_mtp_step(s->r, j == 0 ? *tok : d[j], h, pos + j, s->h, s->lg);
        check_row(s->lg, dl + j * nv, nv, w);
        h = s->h;
    }
    d[0] = *tok;
    int64_t p[N_DRAFT + 1], outs[N_DRAFT + 1];
    for (int i = 0; i <= N_DRAFT; i++)
        p[i] = pos + (outs[i] = i);
    struct st_model_batch b = { N_DRAFT + 1, d, slots, p, N_DRAFT + 1, outs };
    const float *lg;
    ck_assert_msg(st_mtp_forward(t, &b, &lg, &err) == ST_OK, "verify: %s", err.msg);
    ref_rows(s, d, pos, N_DRAFT + 1, rl);
    int a = 0;
    for (int i = 0; i <= N_DRAFT; i++) {
        check_row(rl + i * nv, lg + i * nv, nv, w);
        *tok = argmax(lg + i * nv, nv);
        if (i == N_DRAFT || *tok != d[i + 1])
            break;
        a++;
    }
    st_mtp_truncate(t, 0, pos + a + 1);
    free(dl);
    free(rl);
    return pos + a + 1;
}

static struct tally compare_mtp(const char *path)
{
    struct st_model *m = load(path);
    struct st_mtp *t = mtp_of(m);
    struct refside s = { .r = ref_new(st_model_description(m), N_CTX, true),
                         .e = st_model_hparams(m)->n_embd, .nv = st_model_hparams(m)->n_vocab };
    s.hist = malloc((size_t)(N_CTX * s.e) * sizeof(float));
    s.lg = malloc((size_t)s.nv * sizeof(float));
    s.h = malloc((size_t)s.e * sizeof(float));
    float *rl = malloc((size_t)(N_PROMPT * s.nv) * sizeof(float));
    int32_t tok[N_PROMPT], slots[N_PROMPT] = { 0 };
    int64_t pos[N_PROMPT], outs[N_PROMPT];
    ref_tokens(21, tok, N_PROMPT, s.nv);
    for (int i = 0; i < N_PROMPT; i++)
        pos[i] = outs[i] = i;
    struct st_model_batch b = { N_PROMPT, tok, slots, pos, N_PROMPT, outs };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert_msg(st_mtp_forward(t, &b, &lg, &err) == ST_OK, "prompt: %s", err.msg);
    ref_rows(&s, tok, 0, N_PROMPT, rl);
    struct tally w = { .worst_cos = 1.0 };
    for (int i = 0; i < N_PROMPT; i++)
        check_row(rl + i * s.nv, lg + i * s.nv, s.nv, &w);
    int32_t next = argmax(lg + (N_PROMPT - 1) * s.nv, s.nv);
    int64_t p = N_PROMPT;
    for (int r = 0; r < N_ROUNDS; r++)
        p = round_trip(t, &s, &next, p, &w);
    free(rl);
    free(s.hist);
    free(s.lg);
    free(s.h);
    ref_free(s.r);
    st_mtp_free(t);
    st_model_free(m);
    return w;
}

/* Bounds as test_mtp.c argues them (the emulating reference agrees to
 * ~1e-7 until a quantization boundary or a near-tied expert tips). */
static void judge(const char *what, const struct tally *w)
{
    fprintf(stderr, "mtp glm %s: %d rows, %d within cosine 0.999, worst %.6f, %d argmax "
            "misses\n", what, w->n, w->close, w->worst_cos, w->argmax_bad);
    ck_assert_msg(w->close * 10 >= w->n * 9, "%s: only %d of %d rows within cosine 0.999",
                  what, w->close, w->n);
    ck_assert_msg(w->argmax_bad <= 2, "%s: %d rows with another argmax", what, w->argmax_bad);
}

START_TEST(test_mtp_glm_matches_reference)
{
    struct tally w = compare_mtp(make("q8_0"));
    judge("q8_0", &w);
    w = compare_mtp(make("f32"));
    judge("f32", &w);
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
