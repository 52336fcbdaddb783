/* mask_fixture.h -- helpers of the constrained-sampling suites
 * (test_engine_schema.c, test_engine_calls.c, test_engine_think.c): a
 * hand-made vocabulary of strings for st_sampler_json_vocab, a small
 * seeded generator, the schema compile a test cannot do without, and the
 * random walk that checks a mask against a suite's brute-force oracle.
 * Header-only. */
#ifndef STRATA_TEST_MASK_FIXTURE_H
#define STRATA_TEST_MASK_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "engine/pool.h"
#include "engine/sample/json_mask.h"
#include "strata/json_schema.h"

/* Token i is v[i] (ctx: the const char *const *v array); token 0 ends
 * generation. The st_sample_piece_fn / st_sample_eog_fn pair. */
static inline size_t mask_piece(const void *ctx, int32_t token, char *buf, size_t cap)
{
    const char *const *v = ctx;
    size_t n = strlen(v[token]);
    memcpy(buf, v[token], n < cap ? n : cap);
    return n;
}

static inline bool mask_eog(const void *ctx, int32_t token)
{
    (void)ctx;
    return token == 0;
}

static inline uint64_t mask_lcg(uint64_t *x)
{
    *x = *x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *x >> 33;
}

static inline bool mask_is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline struct st_json_schema *mask_schema(const char *text)
{
    struct st_json_schema *s = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_json_schema_compile(text, strlen(text), &s, &err) == ST_OK, "%s", err.msg);
    return s;
}

/* Sampling parameters that leave the mask the only filter: temperature
 * temp, no top-k / top-p / min-p, seeded. The caller adds the constraint. */
static inline struct st_gen_params mask_params(float temp, uint64_t seed)
{
    struct st_gen_params p;
    st_gen_params_defaults(&p);
    p.temperature = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.has_seed = true;
    p.seed = seed;
    return p;
}

/* A sampler for p (its constraint borrowed) on the n strings of v. */
static inline void mask_sampler(struct st_sampler *s, const struct st_gen_params *p,
                                const char *const *v, int32_t n)
{
    st_sampler_init(s);
    st_sampler_reset(s, p);
    ck_assert_int_eq(st_sampler_json_vocab(s, v, 0, n, mask_piece, mask_eog, v), ST_OK);
}

/* A suite's brute-force rule: may token id come next from the sampler's
 * constraint state (eos_banned: end of generation banned at this step)? */
typedef bool mask_oracle_fn(const struct st_sampler *s, int32_t id, bool eos_banned);

/* Walk up to 'steps' tokens sampled from *walk on random logits (from
 * rng; eos_boost added to token 0's): before each, with end of generation
 * banned and not, the mask allows exactly the tokens the oracle does over
 * the n strings of v. Stops at end of generation or when nothing may
 * follow. 'what' names the case in a failure. */
static inline void mask_walk_matches(struct st_sampler *walk, const char *const *v, int32_t n,
                                     uint64_t rng, int steps, float eos_boost,
                                     mask_oracle_fn *oracle, const char *what)
{
    float *logits = malloc((size_t)n * sizeof(*logits));
    ck_assert_ptr_nonnull(logits);
    for (int step = 0; step < steps; step++) {
        for (int eb = 0; eb < 2; eb++) {
            struct st_json_step st;
            st_json_mask_step(walk, eb == 1, &st);
            for (int32_t id = 0; id < n; id++) {
                bool want = oracle(walk, id, eb == 1);
                ck_assert_msg(st_json_mask_allows(walk, &st, id) == want,
                              "%s step %d eos_banned %d token '%s': want %d", what, step, eb,
                              v[id], (int)want);
            }
        }
        for (int32_t t = 0; t < n; t++)
            logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f;
        logits[0] += eos_boost;
        struct st_sample_result res;
        if (st_sampler_sample(walk, logits, n, NULL, 0, &res) != ST_OK || res.token == 0)
            break;   /* stuck (nothing in a small vocabulary goes on), or ended */
        st_sampler_accept(walk, res.token);
    }
    free(logits);
}

#endif /* STRATA_TEST_MASK_FIXTURE_H */
