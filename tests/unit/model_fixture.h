/* model_fixture.h -- a synthetic model file for a test: `strata make-model`
 * run in-process (include/strata/make_model.h), failing the test when it
 * cannot be made. Header-only (static inline), for the suites that link
 * st_model. */
#ifndef STRATA_TEST_MODEL_FIXTURE_H
#define STRATA_TEST_MODEL_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "strata/clock.h"
#include "strata/engine.h"
#include "strata/make_model.h"
#include "strata/sched.h"

/* Write <dir>/<preset>-<quant>[-mtp]-<seed>.gguf and its path into path
 * (cap bytes); returns path. */
static inline const char *fixture_make_model(char *path, size_t cap, const char *dir,
                                             const char *preset, const char *quant,
                                             uint64_t seed, bool mtp)
{
    snprintf(path, cap, "%s/%s-%s%s-%llu.gguf", dir, preset, quant, mtp ? "-mtp" : "",
             (unsigned long long)seed);
    struct st_make_model_opts o = { .out_path = path, .preset = preset, .quant = quant,
                                    .seed = seed, .mtp = mtp };
    struct st_err err = { 0 };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model %s %s: %s", preset, quant,
                  err.msg);
    return path;
}

/* A batching scheduler and one CPU engine serving the model at 'path' on a
 * manual clock: np slots of 256 tokens, ubatch 64, 2 threads, MTP drafting
 * up to mtp_draft tokens when mtp_draft > 0, n-gram drafting (--spec
 * ngram, n 2..4) up to ngram_draft tokens when ngram_draft > 0. Stepped
 * by the test (st_engine_pool_step), never by threads. */
struct fixture_pool {
    struct st_clock_manual clk;
    struct st_sched       *sched;
    struct st_engine_pool *pool;
};

static inline void fixture_pool_start_spec(struct fixture_pool *f, const char *path,
                                           int32_t np, int32_t mtp_draft, int32_t ngram_draft)
{
    st_clock_manual_init(&f->clk, 0);
    struct st_sched_config sc;
    st_sched_config_defaults(&sc);
    sc.batch = true;
    sc.log_dispatch = false;
    struct st_pool_config pc;
    st_pool_config_defaults(&pc);
    pc.model.name = "m";
    pc.model.path = (char *)path;
    pc.model.backend = ST_BACKEND_CPU;
    pc.model.parallel = np;
    pc.model.ctx_size = 256;
    pc.threads = 2;
    pc.ubatch = 64;
    pc.mtp = mtp_draft > 0;
    pc.mtp_draft = mtp_draft > 0 ? mtp_draft : 1;
    pc.ngram = ngram_draft > 0;
    if (ngram_draft > 0)
        pc.spec_draft = ngram_draft;
    struct st_err err = { 0 };
    f->sched = NULL;
    f->pool = NULL;
    ck_assert(st_sched_new(&sc, &f->clk.clock, &f->sched, &err) == ST_OK);
    ck_assert_msg(st_engine_pool_new(&pc, f->sched, &f->clk.clock, &f->pool, &err) == ST_OK,
                  "%s", err.msg);
}

static inline void fixture_pool_start(struct fixture_pool *f, const char *path, int32_t np,
                                      int32_t mtp_draft)
{
    fixture_pool_start_spec(f, path, np, mtp_draft, 0);
}

/* Step until no engine has work left (or a step budget says it is stuck). */
static inline void fixture_pool_drain(struct fixture_pool *f)
{
    for (int steps = 0; steps < 100000 && st_engine_pool_step(f->pool, 0); steps++)
        ;
}

static inline void fixture_pool_stop(struct fixture_pool *f)
{
    st_engine_pool_free(f->pool);
    st_sched_free(f->sched);
    f->pool = NULL;
    f->sched = NULL;
}

#endif /* STRATA_TEST_MODEL_FIXTURE_H */
