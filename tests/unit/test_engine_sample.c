/* test_engine_sample.c -- the sampler on hand-made logits: greedy, seeded
 * RNG, temperature, top-k, top-p, min-p, banned tokens, logprobs, and
 * logit_bias and the presence/frequency/repeat penalties (penalty.c), and
 * the json_object mask on a tiny synthetic vocabulary. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "engine/pool.h"
#include "support.h"

static struct st_gen_params params(float temp, int32_t top_k, float top_p, float min_p,
                                   uint64_t seed)
{
    struct st_gen_params p;
    st_gen_params_defaults(&p);
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.has_seed = true;
    p.seed = seed;
    return p;
}

/* Draw n tokens; counts[id]++ for each. */
static void draw_n(const struct st_gen_params *p, const float *logits, int32_t n_vocab, int n,
                   int *counts)
{
    struct st_sampler s;
    struct st_sample_result res;
    st_sampler_init(&s);
    st_sampler_reset(&s, p);
    memset(counts, 0, sizeof(int) * (size_t)n_vocab);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(st_sampler_sample(&s, logits, n_vocab, NULL, 0, &res), ST_OK);
        ck_assert(res.token >= 0 && res.token < n_vocab);
        counts[res.token]++;
    }
    st_sampler_fini(&s);
}

START_TEST(test_engine_sample_greedy_is_argmax)
{
    const float logits[5] = { 0.5f, 3.0f, -1.0f, 3.0f, 2.9f };
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    int counts[5];
    draw_n(&p, logits, 5, 50, counts);
    ck_assert_int_eq(counts[1], 50);   /* ties: the lower id */
}
END_TEST

START_TEST(test_engine_sample_seed_repeats)
{
    float logits[64];
    for (int i = 0; i < 64; i++)
        logits[i] = (float)((i * 37) % 11) * 0.3f;
    struct st_gen_params p = params(1.0f, 0, 1.0f, 0.0f, 42);
    struct st_sampler a, b, c;
    struct st_sample_result ra, rb, rc;
    st_sampler_init(&a);
    st_sampler_init(&b);
    st_sampler_init(&c);
    st_sampler_reset(&a, &p);
    st_sampler_reset(&b, &p);
    p.seed = 43;
    st_sampler_reset(&c, &p);
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        ck_assert_int_eq(st_sampler_sample(&a, logits, 64, NULL, 0, &ra), ST_OK);
        ck_assert_int_eq(st_sampler_sample(&b, logits, 64, NULL, 0, &rb), ST_OK);
        ck_assert_int_eq(st_sampler_sample(&c, logits, 64, NULL, 0, &rc), ST_OK);
        ck_assert_int_eq(ra.token, rb.token);
        differ += ra.token != rc.token;
    }
    ck_assert_int_gt(differ, 50);
    st_sampler_fini(&a);
    st_sampler_fini(&b);
    st_sampler_fini(&c);
}
END_TEST

START_TEST(test_engine_sample_temperature_follows_softmax)
{
    /* p = 1/4, 3/4 at T=1; at T=0.5 the odds square: 1/10, 9/10. */
    const float logits[2] = { 0.0f, logf(3.0f) };
    int counts[2];
    struct st_gen_params p = params(1.0f, 0, 1.0f, 0.0f, 7);
    draw_n(&p, logits, 2, 40000, counts);
    ck_assert(fabs(counts[1] / 40000.0 - 0.75) < 0.01);
    p = params(0.5f, 0, 1.0f, 0.0f, 8);
    draw_n(&p, logits, 2, 40000, counts);
    ck_assert(fabs(counts[1] / 40000.0 - 0.9) < 0.01);
}
END_TEST

START_TEST(test_engine_sample_top_k)
{
    /* 1000 tokens; top-k 5 only ever draws the 5 largest logits. */
    enum { V = 1000 };
    float *logits = malloc(V * sizeof(float));
    int *counts = malloc(V * sizeof(int));
    for (int i = 0; i < V; i++)
        logits[i] = (float)((i * 7919) % V) / 100.0f;   /* a permutation of 0..9.99 */
    struct st_gen_params p = params(5.0f, 5, 1.0f, 0.0f, 3);
    draw_n(&p, logits, V, 5000, counts);
    int drawn = 0;
    for (int i = 0; i < V; i++) {
        if (counts[i] > 0) {
            ck_assert(logits[i] >= 9.95f);   /* 9.95 .. 9.99 are the top 5 */
            drawn++;
        }
    }
    ck_assert_int_eq(drawn, 5);
    free(logits);
    free(counts);
}
END_TEST

START_TEST(test_engine_sample_top_p_and_min_p)
{
    /* p = 0.5, 0.3, 0.2 */
    const float logits[3] = { logf(0.5f), logf(0.3f), logf(0.2f) };
    int counts[3];
    struct st_gen_params p = params(1.0f, 0, 0.75f, 0.0f, 11);   /* 0.5 + 0.3 covers 0.75 */
    draw_n(&p, logits, 3, 4000, counts);
    ck_assert_int_eq(counts[2], 0);
    ck_assert(counts[0] > 0 && counts[1] > 0);
    ck_assert(fabs(counts[0] / 4000.0 - 0.625) < 0.03);   /* renormalised 0.5/0.8 */
    p = params(1.0f, 0, 0.45f, 0.0f, 12);
    draw_n(&p, logits, 3, 500, counts);
    ck_assert_int_eq(counts[0], 500);
    /* min-p 0.5: 0.2/0.5 = 0.4 is cut, 0.3/0.5 = 0.6 stays */
    p = params(1.0f, 0, 1.0f, 0.5f, 13);
    draw_n(&p, logits, 3, 4000, counts);
    ck_assert_int_eq(counts[2], 0);
    ck_assert(counts[1] > 0);
}
END_TEST

START_TEST(test_engine_sample_banned_tokens)
{
    const float logits[4] = { 9.0f, 1.0f, 0.5f, 8.0f };
    const int32_t ban[2] = { 0, 3 };
    struct st_sampler s;
    struct st_sample_result res;
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 4, ban, 2, &res), ST_OK);
    ck_assert_int_eq(res.token, 1);
    p.temperature = 1.0f;
    st_sampler_reset(&s, &p);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(st_sampler_sample(&s, logits, 4, ban, 2, &res), ST_OK);
        ck_assert(res.token == 1 || res.token == 2);
    }
    const int32_t all[4] = { 0, 1, 2, 3 };
    ck_assert_int_eq(st_sampler_sample(&s, logits, 4, all, 4, &res), ST_ERR_INVALID);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 0, NULL, 0, &res), ST_ERR_INVALID);
    st_sampler_fini(&s);
}
END_TEST

START_TEST(test_engine_sample_logprobs)
{
    const float logits[4] = { 1.0f, 3.0f, 2.0f, -1.0f };
    double z = exp(1.0) + exp(3.0) + exp(2.0) + exp(-1.0);
    struct st_sampler s;
    struct st_sample_result res;
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    p.logprobs = true;
    p.top_logprobs = 3;
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 4, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 1);
    ck_assert(fabs(res.logprob - (3.0 - log(z))) < 1e-5);
    ck_assert_int_eq(res.n_top, 3);
    ck_assert_int_eq(res.top[0].token, 1);
    ck_assert_int_eq(res.top[1].token, 2);
    ck_assert_int_eq(res.top[2].token, 0);
    ck_assert(fabs(res.top[1].logprob - (2.0 - log(z))) < 1e-5);
    /* more than the vocabulary: clipped */
    p.top_logprobs = ST_MAX_TOP_LOGPROBS;
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 4, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.n_top, 4);
    ck_assert_int_eq(res.top[3].token, 3);
    /* no logprobs asked: none computed */
    p.logprobs = false;
    p.top_logprobs = 0;
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 4, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.n_top, 0);
    st_sampler_fini(&s);
}
END_TEST

START_TEST(test_engine_sample_uniform_range)
{
    struct st_sampler s;
    struct st_gen_params p = params(1.0f, 0, 1.0f, 0.0f, 99);
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    double sum = 0.0;
    for (int i = 0; i < 10000; i++) {
        double u = st_sampler_uniform(&s);
        ck_assert(u >= 0.0 && u < 1.0);
        sum += u;
    }
    ck_assert(fabs(sum / 10000.0 - 0.5) < 0.02);
    st_sampler_fini(&s);
}
END_TEST

/* The generator is C++'s std::mt19937 (the standard's check: the 10000th
 * output of the default seed 5489 is 4123659995) and the uniform double is
 * std::uniform_real_distribution<double>(0, 1)'s with libstdc++, whose
 * first draws from seed 42 are these (printed with %.17g by a C++ program):
 * llama-server's draw, so a seed gives its text. */
START_TEST(test_engine_sample_llama_generator)
{
    struct st_mt19937 m;
    st_mt_seed(&m, 5489);
    uint32_t v = 0;
    for (int i = 0; i < 10000; i++)
        v = st_mt_next(&m);
    ck_assert_uint_eq(v, 4123659995u);
    st_mt_seed(&m, 42);
    ck_assert(st_mt_uniform(&m) == 0.79654298428784598);
    ck_assert(st_mt_uniform(&m) == 0.18343478789336848);
    ck_assert(st_mt_uniform(&m) == 0.77969099761266125);
    st_mt_seed(&m, 4294967295u);
    ck_assert(st_mt_uniform(&m) == 0.11160666544400902);
    /* the sampler: a request's seed starts it, as 32 bits */
    struct st_sampler s;
    struct st_gen_params p = params(1.0f, 0, 1.0f, 0.0f, 42);
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    ck_assert(st_sampler_uniform(&s) == 0.79654298428784598);
    p.seed = 42 + (UINT64_C(1) << 32);
    st_sampler_reset(&s, &p);
    ck_assert(st_sampler_uniform(&s) == 0.79654298428784598);
    st_sampler_fini(&s);
}
END_TEST

/* ---- logit_bias and penalties ------------------------------------------ */

START_TEST(test_engine_sample_bias_bans_greedy_token)
{
    const float logits[4] = { 1.0f, 5.0f, 4.0f, 0.0f };
    double z = exp(1.0) + exp(5.0) + exp(4.0) + exp(0.0);
    struct st_logit_bias bias[2] = { { 1, -100.0f }, { 99, 100.0f } };   /* 99: not in vocab */
    struct st_sampler s;
    struct st_sample_result res;
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    p.logprobs = true;
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 4, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 1);
    p.logit_bias = bias;
    p.n_logit_bias = 2;
    st_sampler_reset(&s, &p);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(st_sampler_sample(&s, logits, 4, NULL, 0, &res), ST_OK);
        ck_assert_int_eq(res.token, 2);   /* the second best */
        /* logprobs are of the raw logits, before the bias */
        ck_assert(fabs(res.logprob - (4.0 - log(z))) < 1e-5);
    }
    /* sampled too: token 1 never comes */
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    st_sampler_reset(&s, &p);
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(st_sampler_sample(&s, logits, 4, NULL, 0, &res), ST_OK);
        ck_assert_int_ne(res.token, 1);
    }
    /* with a ban list as well (the ignore_eos path): bias and ban together */
    const int32_t ban[1] = { 2 };
    p.temperature = 0.0f;
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 4, ban, 1, &res), ST_OK);
    ck_assert_int_eq(res.token, 0);
    st_sampler_fini(&s);
}
END_TEST

START_TEST(test_engine_sample_bias_forces_token)
{
    const float logits[6] = { 2.0f, 9.0f, 1.0f, -3.0f, 4.0f, 0.0f };
    struct st_logit_bias bias[1] = { { 3, 100.0f } };
    struct st_sampler s;
    struct st_sample_result res;
    struct st_gen_params p = params(1.5f, 40, 0.95f, 0.05f, 5);
    p.logit_bias = bias;
    p.n_logit_bias = 1;
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(st_sampler_sample(&s, logits, 6, NULL, 0, &res), ST_OK);
        ck_assert_int_eq(res.token, 3);
    }
    p.temperature = 0.0f;
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 6, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 3);
    st_sampler_fini(&s);
}
END_TEST

/* The penalised candidates of a fresh id-ordered copy of 'logits'. */
static void penalised(const struct st_penalty *pn, const float *logits, int32_t n, float *out)
{
    struct st_draw_cand c[16];
    ck_assert(n <= 16);
    for (int32_t i = 0; i < n; i++)
        c[i] = (struct st_draw_cand){ i, logits[i], 0.0f };
    st_penalty_apply(pn, c, n);
    for (int32_t i = 0; i < n; i++)
        out[i] = c[i].logit;
}

START_TEST(test_engine_sample_presence_frequency_formula)
{
    const float logits[8] = { 1.0f, 2.0f, 3.0f, -1.0f, 0.0f, 0.5f, 4.0f, -2.0f };
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    p.repeat_last_n = 0;   /* repeat off: presence/frequency only */
    const int32_t prompt[3] = { 6, 6, 0 };   /* the prompt does not count for OpenAI's */
    struct st_penalty pn;
    st_penalty_init(&pn);
    st_penalty_reset(&pn, &p);
    ck_assert(st_penalty_active(&pn));
    st_penalty_start(&pn, 256, prompt, 3);
    ck_assert_int_eq(st_penalty_prepare(&pn, 8), ST_OK);
    const int32_t gen[5] = { 2, 2, 5, 2, 7 };
    for (int i = 0; i < 5; i++)
        st_penalty_accept(&pn, gen[i]);
    st_penalty_accept(&pn, 99);   /* outside the vocabulary: ignored */
    float out[8];
    penalised(&pn, logits, 8, out);
    ck_assert_float_eq_tol(out[2], 3.0f - 3 * 0.25f - 0.5f, 1e-6f);
    ck_assert_float_eq_tol(out[5], 0.5f - 0.25f - 0.5f, 1e-6f);
    ck_assert_float_eq_tol(out[7], -2.0f - 0.25f - 0.5f, 1e-6f);
    ck_assert_float_eq(out[6], 4.0f);
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_int_eq(pn.n_seen, 3);   /* only the tokens seen are touched */
    /* negative values encourage repeats */
    p.presence_penalty = -1.0f;
    p.frequency_penalty = 0.0f;
    st_penalty_reset(&pn, &p);
    ck_assert_int_eq(pn.n_seen, 0);   /* the history went with the request */
    st_penalty_start(&pn, 256, prompt, 3);
    ck_assert_int_eq(st_penalty_prepare(&pn, 8), ST_OK);
    st_penalty_accept(&pn, 4);
    st_penalty_accept(&pn, 4);
    penalised(&pn, logits, 8, out);
    ck_assert_float_eq_tol(out[4], 1.0f, 1e-6f);
    ck_assert_float_eq(out[2], 3.0f);
    st_penalty_fini(&pn);
}
END_TEST

START_TEST(test_engine_sample_repeat_penalty_window)
{
    const float logits[8] = { 1.0f, 4.0f, 3.0f, -1.0f, 0.0f, 0.5f, 2.0f, -2.0f };
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 3;
    const int32_t prompt[5] = { 5, 0, 1, 3, 2 };   /* window: the last 3 = {1, 3, 2} */
    struct st_penalty pn;
    st_penalty_init(&pn);
    st_penalty_reset(&pn, &p);
    st_penalty_start(&pn, 256, prompt, 5);
    ck_assert_int_eq(st_penalty_prepare(&pn, 8), ST_OK);
    float out[8];
    penalised(&pn, logits, 8, out);
    ck_assert_float_eq_tol(out[1], 2.0f, 1e-6f);    /* > 0: divided */
    ck_assert_float_eq_tol(out[3], -2.0f, 1e-6f);   /* <= 0: multiplied */
    ck_assert_float_eq_tol(out[2], 1.5f, 1e-6f);
    ck_assert_float_eq(out[5], 0.5f);                /* older than the window */
    ck_assert_float_eq(out[0], 1.0f);
    /* generated tokens slide the window: {1,3,2} -> {3,2,6} -> {2,6,6} */
    st_penalty_accept(&pn, 6);
    penalised(&pn, logits, 8, out);
    ck_assert_float_eq(out[1], 4.0f);
    ck_assert_float_eq_tol(out[6], 1.0f, 1e-6f);
    st_penalty_accept(&pn, 6);
    penalised(&pn, logits, 8, out);
    ck_assert_float_eq(out[3], -1.0f);
    ck_assert_float_eq_tol(out[6], 1.0f, 1e-6f);     /* twice in the window: still once */
    ck_assert_int_eq(pn.n_seen, 2);
    /* -1: the whole context; a window as long as the context is the same */
    p.repeat_last_n = -1;
    st_penalty_reset(&pn, &p);
    st_penalty_start(&pn, 256, prompt, 5);
    ck_assert_int_eq(st_penalty_prepare(&pn, 8), ST_OK);
    penalised(&pn, logits, 8, out);
    ck_assert_float_eq_tol(out[5], 0.25f, 1e-6f);
    ck_assert_float_eq_tol(out[0], 0.5f, 1e-6f);
    p.repeat_last_n = 1000000;
    st_penalty_reset(&pn, &p);
    st_penalty_start(&pn, 256, prompt, 5);
    ck_assert_int_eq(st_penalty_prepare(&pn, 8), ST_OK);
    ck_assert_ptr_null(pn.ring);
    penalised(&pn, logits, 8, out);
    ck_assert_float_eq_tol(out[5], 0.25f, 1e-6f);
    /* off: repeat_last_n 0, or repeat_penalty 1 */
    p.repeat_last_n = 0;
    st_penalty_reset(&pn, &p);
    ck_assert(!st_penalty_active(&pn));
    p.repeat_last_n = 64;
    p.repeat_penalty = 1.0f;
    st_penalty_reset(&pn, &p);
    ck_assert(!st_penalty_active(&pn));
    st_penalty_fini(&pn);
}
END_TEST

/* Greedy with a frequency penalty: the argmax moves once the count of the
 * best token has cost it enough, and comes back when the other's has. */
START_TEST(test_engine_sample_frequency_counts_repeats)
{
    const float logits[3] = { 3.0f, 2.5f, 0.0f };
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    p.frequency_penalty = 0.3f;
    struct st_sampler s;
    struct st_sample_result res;
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    st_sampler_start(&s, 64, NULL, 0);
    /* 0: 3.0 | 0: 2.7 | 1 (0 at 2.4 < 2.5) | 0 (2.4 > 2.2) | 1 (2.1 < 2.2) */
    const int32_t want[5] = { 0, 0, 1, 0, 1 };
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(st_sampler_sample(&s, logits, 3, NULL, 0, &res), ST_OK);
        ck_assert_msg(res.token == want[i], "step %d: %d", i, res.token);
        st_sampler_accept(&s, res.token);
    }
    /* a new request on the same sampler starts from no history */
    st_sampler_reset(&s, &p);
    st_sampler_start(&s, 64, NULL, 0);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 3, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 0);
    /* a repeat penalty sees the prompt */
    const int32_t prompt[1] = { 0 };
    p.frequency_penalty = 0.0f;
    p.repeat_penalty = 1.5f;   /* 3.0 / 1.5 = 2.0 < 2.5 */
    st_sampler_reset(&s, &p);
    st_sampler_start(&s, 64, prompt, 1);
    ck_assert_int_eq(st_sampler_sample(&s, logits, 3, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 1);
    st_sampler_fini(&s);
}
END_TEST

/* Two samplers (two choices of one request) keep their own histories. */
START_TEST(test_engine_sample_choices_separate_histories)
{
    const float logits[3] = { 3.0f, 2.9f, 0.0f };
    struct st_gen_params p = params(0.0f, 40, 0.95f, 0.05f, 1);
    p.presence_penalty = 0.5f;
    struct st_sampler a, b;
    struct st_sample_result res;
    st_sampler_init(&a);
    st_sampler_init(&b);
    st_sampler_reset(&a, &p);
    st_sampler_reset(&b, &p);
    st_sampler_start(&a, 64, NULL, 0);
    st_sampler_start(&b, 64, NULL, 0);
    st_sampler_accept(&a, 1);   /* before the first sample: no history yet, ignored */
    ck_assert_int_eq(st_sampler_sample(&a, logits, 3, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 0);
    st_sampler_accept(&a, 0);   /* a took 0; b has taken nothing */
    ck_assert_int_eq(st_sampler_sample(&a, logits, 3, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 1);
    ck_assert_int_eq(st_sampler_sample(&b, logits, 3, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 0);
    st_sampler_fini(&a);
    st_sampler_fini(&b);
}
END_TEST

/* A sim pool (16-word replies) and a 3-token request for it, recorded
 * into *r; the caller sets the sampling options under test. */
static struct st_request *sim_request(struct fixture *f, struct rec *r)
{
    fx_defaults(f);
    f->pcfg.sim.tokens = 16;
    ck_assert(fx_start(f));
    memset(r, 0, sizeof(*r));
    r->clock = &f->clk.clock;
    r->first_ns = -1;
    struct st_request *req = st_request_new();
    strcpy(req->id, "x");
    req->prompt = strdup("say something");
    req->params.max_tokens = 3;
    req->emit = rec_emit;
    req->emit_ctx = r;
    return req;
}

/* Run it: the sim says its three words whatever the sampling options. */
static void expect_sim_words(struct fixture *f, struct st_request *req, const struct rec *r)
{
    ck_assert_int_eq(st_engine_pool_submit(f->pool, req, NULL), ST_OK);
    fx_run_idle(f);
    ck_assert_int_eq(r->n_end, 1);
    ck_assert_str_eq(r->text, "tok1 tok2 tok3");
    ck_assert_int_eq(r->finish, ST_FINISH_LENGTH);
}

/* The sim forces its tokens (no logits): penalties and bias are accepted
 * and change nothing, and its 2^25-id space never gets penalty tables. */
START_TEST(test_engine_sample_sim_ignores_penalties)
{
    struct fixture f;
    struct rec r;
    struct st_request *req = sim_request(&f, &r);
    req->params.presence_penalty = 1.0f;
    req->params.frequency_penalty = 1.0f;
    req->params.repeat_penalty = 1.5f;
    struct st_logit_bias b = { 1, -100.0f };
    struct st_gen_params src = req->params;
    src.logit_bias = &b;
    src.n_logit_bias = 1;
    ck_assert_int_eq(st_gen_params_copy_bias(&req->params, &src), ST_OK);
    ck_assert_ptr_nonnull(req->params.logit_bias);
    ck_assert_ptr_ne(req->params.logit_bias, &b);   /* the request owns a copy */
    expect_sim_words(&f, req, &r);
    ck_assert_ptr_null(f.pool->engines[0].slots[0].sampler.pen.counts);
    st_request_unref(req);
    fx_stop(&f);
}
END_TEST


/* ---- json_object: the JSON mask on a tiny synthetic vocabulary ------- */

/* Token 0 ends generation; the rest are byte strings a BPE vocabulary
 * could hold, valid JSON pieces and junk alike. */
static const char *const jvocab[] = {
    "<eos>", "{", "}", "\"", "a", "\":", ":", "1", "-0.5e+3", " ", "[", "]", ",", "true",
    "hello", "{\"", "\"}", "null", "\\n", "x\"", "}}", "\n", "0", "\xc3\xa9", "",
    " }", "  ,", " \"", " hello", " 1", "\t\n ", " {\"", " true", " :", "\"\\u00", "e9\"",
};
#define JV ((int32_t)(sizeof(jvocab) / sizeof(jvocab[0])))

struct jctx {
    int reads;   /* piece calls: the vocabulary is read once */
};

static size_t jpiece(const void *ctx, int32_t token, char *buf, size_t cap)
{
    ((struct jctx *)(uintptr_t)ctx)->reads++;
    size_t n = strlen(jvocab[token]);
    memcpy(buf, jvocab[token], n < cap ? n : cap);
    return n;
}

static bool jeog(const void *ctx, int32_t token)
{
    (void)ctx;
    return token == 0;
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *x >> 33;
}

/* One generation of up to 'steps' tokens on random logits (eos pushed up
 * by eos_boost); the text in 'text'. Returns true when it ended with eos.
 * Every step: the text is a valid prefix; eos comes only when complete;
 * after complete, eos is the only choice. */
static bool json_run(struct st_sampler *s, uint64_t *rng, float eos_boost, int steps,
                     char *text, size_t cap)
{
    float logits[JV];
    size_t len = 0;
    text[0] = '\0';
    for (int i = 0; i < steps; i++) {
        for (int32_t t = 0; t < JV; t++)
            logits[t] = (float)(lcg(rng) % 1000) / 100.0f;
        logits[0] += eos_boost;
        struct st_json_prefix before = s->js;
        struct st_sample_result res;
        ck_assert_int_eq(st_sampler_sample(s, logits, JV, NULL, 0, &res), ST_OK);
        if (st_json_prefix_complete(&before))
            ck_assert_int_eq(res.token, 0);
        st_sampler_accept(s, res.token);
        if (res.token == 0) {
            ck_assert(st_json_prefix_complete(&before));
            return true;
        }
        size_t n = strlen(jvocab[res.token]);
        ck_assert(n > 0);
        ck_assert(len + n < cap);
        memcpy(text + len, jvocab[res.token], n);
        len += n;
        text[len] = '\0';
        struct st_json_prefix check;
        st_json_prefix_init(&check);
        ck_assert_msg(st_json_prefix_feed(&check, text, len), "invalid: %s", text);
        ck_assert(memcmp(&check, &s->js, sizeof(check)) == 0);   /* accept tracked it */
    }
    return false;
}

static void json_sampler(struct st_sampler *s, struct st_gen_params *p, struct jctx *ctx)
{
    p->json_object = true;
    st_sampler_init(s);
    st_sampler_reset(s, p);
    ck_assert_int_eq(st_sampler_json_vocab(s, ctx, 0, JV, jpiece, jeog, ctx), ST_OK);
}

/* Greedy and sampled runs on random logits only ever build valid JSON
 * prefixes and end (eos) only on a complete object; many do complete. */
START_TEST(test_engine_sample_json_mask_keeps_valid)
{
    const float temps[] = { 0.0f, 1.0f, 2.0f };
    char text[4096];
    for (size_t ti = 0; ti < 3; ti++) {
        int ended = 0;
        for (int run = 0; run < 200; run++) {
            struct st_gen_params p = params(temps[ti], 0, 1.0f, 0.0f, (uint64_t)run);
            struct st_sampler s;
            struct jctx ctx = { 0 };
            json_sampler(&s, &p, &ctx);
            struct st_draw d;
            ck_assert(!st_sampler_backend_draw(&s, &d));   /* the backend must not draw */
            uint64_t rng = (uint64_t)run * 7919 + ti;
            if (json_run(&s, &rng, 3.0f, 300, text, sizeof(text))) {
                ended++;
                struct st_json_prefix j;
                st_json_prefix_init(&j);
                ck_assert(st_json_prefix_feed(&j, text, strlen(text)));
                ck_assert_msg(st_json_prefix_complete(&j), "ended early: %s", text);
                ck_assert_int_eq(text[0], '{');
            }
            st_sampler_fini(&s);
        }
        ck_assert_int_gt(ended, 50);
    }
}
END_TEST

/* What the mask should decide for 'id' after 'text', by brute force. */
static bool json_expected(const struct st_json_prefix *js, int32_t id, bool eos_banned)
{
    if (id == 0)
        return st_json_prefix_complete(js);
    const char *pc = jvocab[id];
    if (!pc[0] || (st_json_prefix_empty(js) && pc[0] != '{'))
        return false;
    if (st_json_prefix_complete(js) && !eos_banned)
        return false;
    struct st_json_prefix j = *js;
    return st_json_prefix_feed(&j, pc, strlen(pc));
}

/* Along random walks, the mask allows exactly the tokens the validator
 * does: greedy (one check on the argmax) and sampled (the full filter,
 * top_k 1 after it) with one token's logit far above the rest. */
START_TEST(test_engine_sample_json_mask_matches_validator)
{
    const int32_t ban[] = { 0 };
    for (int run = 0; run < 40; run++) {
        struct st_gen_params gp = params(1.0f, 0, 1.0f, 0.0f, (uint64_t)run);
        struct st_sampler walk;
        struct jctx ctx = { 0 };
        json_sampler(&walk, &gp, &ctx);
        uint64_t rng = (uint64_t)run + 99;
        float logits[JV];
        for (int step = 0; step < 60; step++) {
            for (int g = 0; g < 2; g++) {
                struct st_gen_params cp = params(g ? 1.0f : 0.0f, 1, 1.0f, 0.0f, 5);
                struct st_sampler c;
                json_sampler(&c, &cp, &ctx);
                for (int eb = 0; eb < 2; eb++) {
                    for (int32_t id = 0; id < JV; id++) {
                        c.js = walk.js;
                        for (int32_t t = 0; t < JV; t++)
                            logits[t] = (float)((t * 7 + step) % 5);
                        logits[id] = 100.0f;
                        struct st_sample_result res;
                        enum st_status rc = st_sampler_sample(&c, logits, JV, ban, (size_t)eb,
                                                              &res);
                        bool want = json_expected(&walk.js, id, eb == 1) && !(eb && id == 0);
                        ck_assert_msg((rc == ST_OK && res.token == id) == want,
                                      "run %d step %d %s eos_banned %d token '%s': want %d",
                                      run, step, g ? "sampled" : "greedy", eb, jvocab[id],
                                      (int)want);
                    }
                }
                st_sampler_fini(&c);
            }
            for (int32_t t = 0; t < JV; t++)
                logits[t] = (float)(lcg(&rng) % 1000) / 100.0f;
            struct st_sample_result res;
            ck_assert_int_eq(st_sampler_sample(&walk, logits, JV, NULL, 0, &res), ST_OK);
            if (res.token == 0)
                break;
            st_sampler_accept(&walk, res.token);
        }
        st_sampler_fini(&walk);
    }
}
END_TEST

/* eos is the top logit every step: it is still refused until the object
 * closes; junk tokens with higher logits than any valid one are skipped. */
START_TEST(test_engine_sample_json_eos_only_when_complete)
{
    struct st_gen_params p = params(0.0f, 0, 1.0f, 0.0f, 1);
    struct st_sampler s;
    struct jctx ctx = { 0 };
    json_sampler(&s, &p, &ctx);
    float logits[JV];
    for (int32_t t = 0; t < JV; t++)
        logits[t] = -(float)t;   /* eos, then "{", "}", ... by id */
    logits[14] = 50.0f;          /* "hello": never valid outside a string */
    struct st_sample_result res;
    const int32_t want[] = { 1, 2, 0 };   /* "{", "}", eos */
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(st_sampler_sample(&s, logits, JV, NULL, 0, &res), ST_OK);
        ck_assert_int_eq(res.token, want[i]);
        st_sampler_accept(&s, res.token);
    }
    /* with eos banned (ignore_eos), a complete object may only take whitespace */
    const int32_t ban[] = { 0 };
    ck_assert_int_eq(st_sampler_sample(&s, logits, JV, ban, 1, &res), ST_OK);
    ck_assert_int_eq(res.token, 9);   /* " ": the best of " ", "\n", "\t\n " */
    /* ... and with whitespace banned too, nothing is left */
    const int32_t ban4[] = { 0, 9, 21, 30 };
    ck_assert_int_eq(st_sampler_sample(&s, logits, JV, ban4, 4, &res), ST_ERR_INVALID);
    st_sampler_fini(&s);
}
END_TEST

/* The mask runs after bias and penalties; a biased-up invalid token stays
 * out and logprobs stay those of the raw logits. */
START_TEST(test_engine_sample_json_with_bias_and_logprobs)
{
    struct st_gen_params p = params(0.0f, 0, 1.0f, 0.0f, 1);
    struct st_logit_bias b[2] = { { 14, 100.0f }, { 15, 5.0f } };
    p.logit_bias = b;
    p.n_logit_bias = 2;
    p.presence_penalty = 1.0f;
    p.logprobs = true;
    struct st_sampler s;
    struct jctx ctx = { 0 };
    json_sampler(&s, &p, &ctx);
    float logits[JV] = { 0 };
    struct st_sample_result res;
    ck_assert_int_eq(st_sampler_sample(&s, logits, JV, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 15);   /* "{\"": the bias picks among the valid */
    ck_assert_float_eq_tol(res.logprob, -logf((float)JV), 1e-4f);
    st_sampler_accept(&s, res.token);
    ck_assert_int_eq(st_sampler_sample(&s, logits, JV, NULL, 0, &res), ST_OK);
    ck_assert_int_eq(res.token, 14);   /* "hello" is fine inside the key string */
    st_sampler_fini(&s);
}
END_TEST

/* The vocabulary is read once per (owner, model); json mode without one,
 * or for another n_vocab, is an error, not an unmasked sample. */
START_TEST(test_engine_sample_json_vocab_cached)
{
    struct st_gen_params p = params(0.0f, 0, 1.0f, 0.0f, 1);
    struct st_sampler s;
    struct jctx ctx = { 0 };
    json_sampler(&s, &p, &ctx);
    ck_assert_int_eq(ctx.reads, JV);
    st_sampler_reset(&s, &p);   /* the next request, same model */
    ck_assert_int_eq(st_sampler_json_vocab(&s, &ctx, 0, JV, jpiece, jeog, &ctx), ST_OK);
    ck_assert_int_eq(ctx.reads, JV);
    ck_assert_int_eq(st_sampler_json_vocab(&s, &ctx, 1, JV, jpiece, jeog, &ctx), ST_OK);
    ck_assert_int_eq(ctx.reads, 2 * JV);   /* another model */
    float logits[JV + 1] = { 0 };
    struct st_sample_result res;
    ck_assert_int_eq(st_sampler_sample(&s, logits, JV + 1, NULL, 0, &res), ST_ERR_INVALID);
    ck_assert_int_eq(st_sampler_json_vocab(&s, &ctx, 1, 0, jpiece, jeog, &ctx), ST_ERR_INVALID);
    st_sampler_fini(&s);
    /* a fresh sampler in json mode with no vocabulary refuses to sample */
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_sample(&s, logits, JV, NULL, 0, &res), ST_ERR_INVALID);
    /* json off: the backend may draw for the same sampler again */
    p.json_object = false;
    st_sampler_reset(&s, &p);
    struct st_draw d;
    ck_assert(st_sampler_backend_draw(&s, &d));
    st_sampler_fini(&s);
}
END_TEST


/* The sim forces its tokens: json_object changes nothing there, and its
 * 2^25-id space is never read into a JSON vocabulary. */
START_TEST(test_engine_sample_sim_ignores_json)
{
    struct fixture f;
    struct rec r;
    struct st_request *req = sim_request(&f, &r);
    req->params.json_object = true;
    expect_sim_words(&f, req, &r);
    ck_assert_int_eq(f.pool->engines[0].slots[0].sampler.jv.n_vocab, 0);
    st_request_unref(req);
    fx_stop(&f);
}
END_TEST

static Suite *sample_suite(void)
{
    Suite *s = suite_create("engine_sample");
    TCase *t = tcase_create("sample");
    tcase_set_timeout(t, 120);   /* the brute-force mask checks take seconds under ASan */
    tcase_add_test(t, test_engine_sample_greedy_is_argmax);
    tcase_add_test(t, test_engine_sample_seed_repeats);
    tcase_add_test(t, test_engine_sample_temperature_follows_softmax);
    tcase_add_test(t, test_engine_sample_top_k);
    tcase_add_test(t, test_engine_sample_top_p_and_min_p);
    tcase_add_test(t, test_engine_sample_banned_tokens);
    tcase_add_test(t, test_engine_sample_logprobs);
    tcase_add_test(t, test_engine_sample_uniform_range);
    tcase_add_test(t, test_engine_sample_llama_generator);
    tcase_add_test(t, test_engine_sample_bias_bans_greedy_token);
    tcase_add_test(t, test_engine_sample_bias_forces_token);
    tcase_add_test(t, test_engine_sample_presence_frequency_formula);
    tcase_add_test(t, test_engine_sample_repeat_penalty_window);
    tcase_add_test(t, test_engine_sample_frequency_counts_repeats);
    tcase_add_test(t, test_engine_sample_choices_separate_histories);
    tcase_add_test(t, test_engine_sample_sim_ignores_penalties);
    tcase_add_test(t, test_engine_sample_json_mask_keeps_valid);
    tcase_add_test(t, test_engine_sample_json_eos_only_when_complete);
    tcase_add_test(t, test_engine_sample_json_mask_matches_validator);
    tcase_add_test(t, test_engine_sample_json_with_bias_and_logprobs);
    tcase_add_test(t, test_engine_sample_json_vocab_cached);
    tcase_add_test(t, test_engine_sample_sim_ignores_json);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(sample_suite(), CK_FORK);
}
