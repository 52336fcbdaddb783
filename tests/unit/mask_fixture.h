/* mask_fixture.h -- helpers of the constrained-sampling suites
 * (test_engine_schema.c, test_engine_calls.c, test_engine_think.c): a
 * hand-made vocabulary of strings for st_sampler_json_vocab, a small
 * seeded generator, and the schema compile a test cannot do without.
 * Header-only. */
#ifndef STRATA_TEST_MASK_FIXTURE_H
#define STRATA_TEST_MASK_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
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

#endif /* STRATA_TEST_MASK_FIXTURE_H */
