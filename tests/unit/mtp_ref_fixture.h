/* mtp_ref_fixture.h -- the MTP layer against the naive reference
 * (forward_ref.c: ref_step, ref_mtp_step), shared by test_mtp.c and
 * test_mtp_glm.c: a prompt read, then N_ROUNDS rounds of draft N_DRAFT /
 * verify / accept greedily / truncate on slot 0, every main row and every
 * draft step's MTP logits compared with the reference fed the same tokens
 * (compare_mtp), and the verdict (judge). Header-only; the includer
 * defines N_CTX, N_PROMPT, N_ROUNDS and N_DRAFT and includes check.h,
 * forward_ref.h, strata/forward.h and strata/mtp.h first. */
#ifndef STRATA_TEST_MTP_REF_FIXTURE_H
#define STRATA_TEST_MTP_REF_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- against the reference -------------------------------------------- */

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

/* The reference side of one state: main hidden states by position. */
struct refside {
    struct ref_model *r;
    float *hist;      /* [N_CTX][E]: h_p after output_norm */
    float *lg, *h;    /* scratch [V], [E] */
    int64_t e, nv;
};

/* Main rows at positions p0.. (ref_step), then the MTP upkeep of the same
 * rows (ref_mtp_step with h_{p-1}); logits of main row i into lg_out[i]. */
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

/* One round: draft N_DRAFT from (t, pos), compare each step; verify the
 * drafts in one forward, compare the main rows; accept greedily; cut.
 * Returns the new position and the next token in *t. */
static int64_t round_trip(struct st_mtp *t, struct refside *s, int32_t *tok, int64_t pos,
                          struct tally *w, int *accepted)
{
    int64_t nv = s->nv;
    int32_t d[N_DRAFT + 1], slots[N_DRAFT + 1] = { 0 };
    float *dl = malloc((size_t)(N_DRAFT * nv) * sizeof(float));
    struct st_mtp_draft q = { .slot = 0, .token = *tok, .pos = pos, .n_draft = N_DRAFT,
                              .out = d + 1, .logits = dl };
    struct st_err err = { 0 };
    ck_assert_msg(st_mtp_draft(t, &q, 1, &err) == ST_OK, "draft: %s", err.msg);
    ck_assert_int_eq(q.n_draft, N_DRAFT);
    const float *h = s->hist + (pos - 1) * s->e;
    for (int j = 0; j < N_DRAFT; j++) {   /* the chain, on the engine's tokens */
        ref_mtp_step(s->r, j == 0 ? *tok : d[j], h, pos + j, s->h, s->lg);
        check_row(s->lg, dl + j * nv, nv, w);
        h = s->h;
    }
    d[0] = *tok;
    int64_t p[N_DRAFT + 1], outs[N_DRAFT + 1];
    for (int i = 0; i <= N_DRAFT; i++) {
        p[i] = pos + i;
        outs[i] = i;
    }
    struct st_model_batch b = { N_DRAFT + 1, d, slots, p, N_DRAFT + 1, outs };
    const float *lg;
    ck_assert_msg(st_mtp_forward(t, &b, &lg, &err) == ST_OK, "verify: %s", err.msg);
    float *rl = malloc((size_t)((N_DRAFT + 1) * nv) * sizeof(float));
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
    *accepted += a;
    free(dl);
    free(rl);
    return pos + a + 1;
}

static struct tally compare_mtp(struct st_model *m, int *accepted)
{
    struct st_mtp *t = mtp_of(m);
    struct refside s = { .r = ref_new(st_model_description(m), N_CTX, true),
                         .e = st_model_hparams(m)->n_embd, .nv = st_model_hparams(m)->n_vocab };
    s.hist = malloc((size_t)(N_CTX * s.e) * sizeof(float));
    s.lg = malloc((size_t)s.nv * sizeof(float));
    s.h = malloc((size_t)s.e * sizeof(float));
    int32_t tok[N_PROMPT], slots[N_PROMPT] = { 0 };
    int64_t pos[N_PROMPT], outs[N_PROMPT];
    ref_tokens(21, tok, N_PROMPT, s.nv);
    for (int i = 0; i < N_PROMPT; i++)
        pos[i] = outs[i] = i;
    struct st_model_batch b = { N_PROMPT, tok, slots, pos, N_PROMPT, outs };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert_msg(st_mtp_forward(t, &b, &lg, &err) == ST_OK, "prompt: %s", err.msg);
    float *rl = malloc((size_t)(N_PROMPT * s.nv) * sizeof(float));
    ref_rows(&s, tok, 0, N_PROMPT, rl);
    struct tally w = { .worst_cos = 1.0 };
    for (int i = 0; i < N_PROMPT; i++)
        check_row(rl + i * s.nv, lg + i * s.nv, s.nv, &w);
    int32_t next = argmax(lg + (N_PROMPT - 1) * s.nv, s.nv);
    int64_t p = N_PROMPT;
    *accepted = 0;
    for (int r = 0; r < N_ROUNDS; r++)
        p = round_trip(t, &s, &next, p, &w, accepted);
    free(rl);
    free(s.hist);
    free(s.lg);
    free(s.h);
    ref_free(s.r);
    st_mtp_free(t);
    return w;
}

/* Bounds as test_forward_ref.c argues them (emulating reference: rows
 * agree to ~1e-7 until a quantization boundary or a near-tied expert
 * tips; a wiring bug such as the [h; emb] order moves every row). */
static void judge(const char *what, const struct tally *w)
{
    fprintf(stderr, "mtp %s: %d rows, %d within cosine 0.999, worst %.6f, %d argmax misses\n",
            what, w->n, w->close, w->worst_cos, w->argmax_bad);
    ck_assert_msg(w->close * 10 >= w->n * 9, "%s: only %d of %d rows within cosine 0.999",
                  what, w->close, w->n);
    ck_assert_msg(w->argmax_bad <= 2, "%s: %d rows with another argmax", what, w->argmax_bad);
}

#endif /* STRATA_TEST_MTP_REF_FIXTURE_H */
