/* test_engine_sample.c -- the sampler on hand-made logits: greedy, seeded
 * RNG, temperature, top-k, top-p, min-p, banned tokens, logprobs. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
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

static Suite *sample_suite(void)
{
    Suite *s = suite_create("engine_sample");
    TCase *t = tcase_create("sample");
    tcase_add_test(t, test_engine_sample_greedy_is_argmax);
    tcase_add_test(t, test_engine_sample_seed_repeats);
    tcase_add_test(t, test_engine_sample_temperature_follows_softmax);
    tcase_add_test(t, test_engine_sample_top_k);
    tcase_add_test(t, test_engine_sample_top_p_and_min_p);
    tcase_add_test(t, test_engine_sample_banned_tokens);
    tcase_add_test(t, test_engine_sample_logprobs);
    tcase_add_test(t, test_engine_sample_uniform_range);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(sample_suite(), CK_FORK);
}
