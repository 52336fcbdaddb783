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
#include <string.h>

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

/* What one request received: its tokens with their logprobs and text, and
 * how it ended (fixture_record is its emit callback). */
#define FIXTURE_MAX_TOK 256
struct fixture_out {
    int32_t tok[FIXTURE_MAX_TOK];
    float   lp[FIXTURE_MAX_TOK];
    int     n;
    char    text[8192];
    size_t  len;
    bool    ended;
    enum st_finish finish;
};

static inline void fixture_record(void *ctx, const struct st_event *ev)
{
    struct fixture_out *o = ctx;
    if (ev->kind == ST_EVENT_END) {
        o->ended = true;
        o->finish = ev->finish;
        return;
    }
    if (ev->kind != ST_EVENT_TOKEN)
        return;
    if (o->n < FIXTURE_MAX_TOK) {
        o->tok[o->n] = ev->token;
        o->lp[o->n++] = ev->logprob;
    }
    ck_assert(o->len + ev->text_len < sizeof(o->text));
    memcpy(o->text + o->len, ev->text, ev->text_len);
    o->len += ev->text_len;
    o->text[o->len] = '\0';
}

#endif /* STRATA_TEST_MODEL_FIXTURE_H */
