/* engine_fixture.h -- a scheduler + sim engine pool on a manual clock, and
 * a recorder of the events each request receives. Shared by the engine
 * suites and bench_priority (header-only: static functions). */
#ifndef STRATA_TEST_ENGINE_FIXTURE_H
#define STRATA_TEST_ENGINE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/clock.h"
#include "strata/engine.h"
#include "strata/sched.h"

/* Everything one request received. */
struct rec {
    const struct st_clock *clock;
    char    text[8192];          /* all TOKEN text concatenated */
    size_t  len;
    int     n_token_events;
    int     n_end;               /* END events (must end up 1) */
    bool    ended;
    enum st_finish finish;
    enum st_status status;
    int64_t first_ns;            /* clock at the first TOKEN event; -1 none */
    int64_t end_ns;              /* clock at END */
    int64_t n_generated, n_prompt;
    int32_t engine;              /* job.engine seen at END */
    int32_t yields;              /* job.yields seen at END */
    char    stop_text[64];       /* END's stop string; "" none */
    struct st_request *req;      /* borrowed, for the engine/yields lookup */
};

static inline void rec_emit(void *ctx, const struct st_event *ev)
{
    struct rec *r = ctx;
    if (ev->kind == ST_EVENT_TOKEN) {
        if (r->first_ns < 0)
            r->first_ns = st_clock_now(r->clock);
        r->n_token_events++;
        if (r->len + ev->text_len < sizeof(r->text)) {
            memcpy(r->text + r->len, ev->text, ev->text_len);
            r->len += ev->text_len;
            r->text[r->len] = '\0';
        }
        return;
    }
    r->n_end++;
    r->finish = ev->finish;
    r->status = ev->status;
    r->end_ns = st_clock_now(r->clock);
    r->n_generated = ev->n_generated;
    r->n_prompt = ev->n_prompt;
    snprintf(r->stop_text, sizeof(r->stop_text), "%s", ev->stop_text ? ev->stop_text : "");
    if (r->req) {
        r->engine = r->req->job.engine;
        r->yields = r->req->job.yields;
    }
    __atomic_store_n(&r->ended, true, __ATOMIC_SEQ_CST);   /* last: other threads poll it */
}

struct fixture {
    struct st_clock_manual clk;
    struct st_sched_config scfg;
    struct st_pool_config pcfg;
    struct st_sched *sched;
    struct st_engine_pool *pool;
};

/* Defaults for the tests: batch on, 1 slot, 1000 tok/s prompt, 10 tok/s
 * decode, 1000 sim words, 512-token chunks, no aging (exact priority order). Change
 * f->scfg / f->pcfg between fx_defaults and fx_start. */
static inline void fx_defaults(struct fixture *f)
{
    memset(f, 0, sizeof(*f));
    st_clock_manual_init(&f->clk, 0);
    st_sched_config_defaults(&f->scfg);
    f->scfg.batch = true;
    f->scfg.aging_divisor_s = 0;
    f->scfg.log_dispatch = false;
    st_pool_config_defaults(&f->pcfg);
    f->pcfg.model.parallel = 1;
    f->pcfg.model.ctx_size = 1 << 20;
    f->pcfg.sim.prompt_tps = 1000;
    f->pcfg.sim.decode_tps = 10;
    f->pcfg.sim.tokens = 1000;
    f->pcfg.ubatch = 512;
}

static inline bool fx_start(struct fixture *f)
{
    struct st_err err = { 0 };
    if (st_sched_new(&f->scfg, &f->clk.clock, &f->sched, &err) != ST_OK) {
        fprintf(stderr, "sched: %s\n", err.msg);
        return false;
    }
    if (st_engine_pool_new(&f->pcfg, f->sched, &f->clk.clock, &f->pool, &err) != ST_OK) {
        fprintf(stderr, "pool: %s\n", err.msg);
        return false;
    }
    return true;
}

static inline void fx_stop(struct fixture *f)
{
    st_engine_pool_free(f->pool);
    st_sched_free(f->sched);
    f->pool = NULL;
    f->sched = NULL;
}

/* "w w w ..." with n words (n >= 1); owned. */
static inline char *fx_words(int64_t n)
{
    char *s = malloc((size_t)n * 2 + 1);
    for (int64_t i = 0; i < n; i++) {
        s[2 * i] = 'w';
        s[2 * i + 1] = ' ';
    }
    s[n * 2 - 1] = '\0';
    return s;
}

/* n words whose first is unique to this call ("pK w w ..."); owned. Two
 * such prompts share no prefix, so prefix reuse never shortens the read of
 * a request the scheduling tests time as a full read. */
static inline char *fx_unique_words(int64_t n)
{
    static unsigned long seq;
    char *w = fx_words(n);
    char first[32];
    int len = snprintf(first, sizeof(first), "p%lu", ++seq);
    char *s = malloc(strlen(w) + (size_t)len + 1);
    memcpy(s, first, (size_t)len);
    strcpy(s + len, w + 1);   /* drop the first "w" */
    free(w);
    return s;
}

/* Submit a request of n_words prompt words at 'priority' (a prompt no other
 * request shares: fx_unique_words); returns it with the test's reference
 * (st_request_unref when done), NULL if rejected. */
static inline struct st_request *fx_submit_full(struct fixture *f, const char *id, int32_t priority,
                                         int64_t n_words, int32_t max_tokens, struct rec *r,
                                         enum st_status *rc_out)
{
    memset(r, 0, sizeof(*r));
    r->clock = &f->clk.clock;
    r->first_ns = -1;
    r->engine = -1;
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "%s", id);
    req->prompt = fx_unique_words(n_words);
    req->params.max_tokens = max_tokens;
    req->job.priority = priority;
    req->emit = rec_emit;
    req->emit_ctx = r;
    r->req = req;
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_submit(f->pool, req, &err);
    if (rc_out)
        *rc_out = rc;
    if (rc != ST_OK) {
        st_request_unref(req);
        return NULL;
    }
    return req;
}

static inline struct st_request *fx_submit(struct fixture *f, const char *id, int32_t priority,
                                    int64_t n_words, int32_t max_tokens, struct rec *r)
{
    return fx_submit_full(f, id, priority, n_words, max_tokens, r, NULL);
}

static inline double fx_now_s(const struct fixture *f)
{
    return (double)st_clock_now(&f->clk.clock) / (double)ST_NS_PER_SEC;
}

/* Step engine 0 until it has nothing to do (bounded). Returns steps. */
static inline int fx_run_idle(struct fixture *f)
{
    int n = 0;
    while (n < 1000000 && st_engine_pool_step(f->pool, 0))
        n++;
    return n;
}

/* Step every engine round-robin until all are idle. */
static inline int fx_run_all_idle(struct fixture *f, int32_t n_engines)
{
    int n = 0;
    bool any = true;
    while (any && n < 1000000) {
        any = false;
        for (int32_t e = 0; e < n_engines; e++) {
            if (st_engine_pool_step(f->pool, e)) {
                any = true;
                n++;
            }
        }
    }
    return n;
}

/* Step engine 0 until the clock reaches t_ns (the step that crosses it
 * completes); an idle engine lets the clock jump to t_ns. */
static inline void fx_run_until(struct fixture *f, int64_t t_ns)
{
    while (st_clock_now(&f->clk.clock) < t_ns) {
        if (!st_engine_pool_step(f->pool, 0))
            st_clock_manual_advance(&f->clk, t_ns - st_clock_now(&f->clk.clock));
    }
}

#endif /* STRATA_TEST_ENGINE_FIXTURE_H */
