/* prefix_fixture.h -- the sim helpers of the prefix suites
 * (test_engine_prefix.c: reuse in a slot's own KV; test_engine_prefix_copy.c:
 * copies across slots): a recorder of what one request saw plus its
 * prefix-reuse numbers (n_cached, slot, the sim's prompt scores), prompts
 * of numbered words that share a prefix, a submit with the options those
 * suites vary (priority, model, cache_prompt false, scored), and views of
 * the pool's slots and counters. Header-only (static inline), on top of
 * engine_fixture.h (the sim pool on a manual clock). */
#ifndef STRATA_TEST_PREFIX_FIXTURE_H
#define STRATA_TEST_PREFIX_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "strata/str.h"

/* x seconds in clock nanoseconds, rounded. */
#define SEC(x) ((int64_t)((x) * (double)ST_NS_PER_SEC + 0.5))

/* What one request saw, plus the prefix-reuse numbers. 'r' first: rec_emit
 * gets a pointer to it. */
struct prec {
    struct rec r;
    int64_t n_cached_token;   /* n_cached of the first TOKEN event; -1 none */
    int64_t n_cached_end;     /* n_cached of END; -1 none */
    int32_t slot;             /* job.slot at the first TOKEN event; -1 none */
    int64_t submit_ns;
    int64_t n_pos, n_scored;  /* PROMPT positions seen, and those with a logprob */
    bool    scores_ok;        /* positions in order, every logprob the sim's for its token */
};

/* The sim's made-up logprob of prompt token 'next' (runner_sim.c sim_score):
 * prompt words hash below ST_SIM_GEN_BASE, so -0.75 - 0.5 (next mod 8). */
static inline float prec_sim_lp(int32_t next)
{
    return (float)(-0.75 - 0.5 * (next % 8));
}

/* The emit callback (ctx: the struct prec). Scored requests ask for 2
 * alternatives (struct prec_opts), which scores_ok checks too. */
static inline void prec_emit(void *ctx, const struct st_event *ev)
{
    struct prec *p = ctx;
    if (ev->kind == ST_EVENT_TOKEN && p->n_cached_token < 0) {
        p->n_cached_token = ev->n_cached;
        p->slot = p->r.req->job.slot;
    }
    if (ev->kind == ST_EVENT_END)
        p->n_cached_end = ev->n_cached;
    if (ev->kind == ST_EVENT_PROMPT) {
        for (int32_t i = 0; i < ev->n_ptok; i++) {
            const struct st_prompt_token *t = &ev->ptok[i];
            p->scores_ok &= t->pos == p->n_pos++;
            if (t->has_logprob) {
                p->n_scored++;
                p->scores_ok &= t->logprob == prec_sim_lp(t->token) && t->n_top == 2;
            }
        }
        return;   /* rec_emit takes every other event for END */
    }
    rec_emit(&p->r, ev);
}

/* "<tag><from> <tag><from+1> ..." (n words); owned. */
static inline char *words(const char *tag, int from, int n)
{
    struct st_buf b;
    st_buf_init(&b);
    for (int i = 0; i < n; i++)
        ck_assert(st_buf_printf(&b, "%s%s%d", i ? " " : "", tag, from + i) == ST_OK);
    return st_buf_steal(&b);
}

/* "a b"; owned. */
static inline char *join(const char *a, const char *b)
{
    char *s = malloc(strlen(a) + strlen(b) + 2);
    ck_assert_ptr_nonnull(s);
    sprintf(s, "%s %s", a, b);
    return s;
}

/* n_shared words "s0 s1 ..." then n_own words of 'tag'; owned. */
static inline char *shared_then(int n_shared, const char *tag, int n_own)
{
    char *a = words("s", 0, n_shared), *b = words(tag, 0, n_own);
    char *s = join(a, b);
    free(a);
    free(b);
    return s;
}

/* What a submit may vary; zero is the default request. */
struct prec_opts {
    int32_t prio;       /* job.priority */
    int32_t model;      /* index into the pool's models */
    bool    no_cache;   /* cache_prompt: false */
    bool    scored;     /* echo and prompt logprobs with 2 alternatives */
};

/* Submit 'text' (taken: owned by the request) for max_tokens, recorded in
 * *p; returns the test's reference. */
static inline struct st_request *submit_opts(struct fixture *f, const char *id, char *text,
                                             int32_t max_tokens, struct prec_opts o,
                                             struct prec *p)
{
    memset(p, 0, sizeof(*p));
    p->r.clock = &f->clk.clock;
    p->r.first_ns = -1;
    p->r.engine = -1;
    p->n_cached_token = -1;
    p->n_cached_end = -1;
    p->slot = -1;
    p->scores_ok = true;
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "%s", id);
    req->prompt = text;
    req->model = o.model;
    req->params.max_tokens = max_tokens;
    req->job.priority = o.prio;
    req->no_prompt_cache = o.no_cache;
    req->params.echo = o.scored;
    req->params.prompt_logprobs = o.scored;
    req->params.prompt_top_logprobs = o.scored ? 2 : 0;
    req->emit = prec_emit;
    req->emit_ctx = p;
    p->r.req = req;
    p->submit_ns = st_clock_now(&f->clk.clock);
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(f->pool, req, &err) == ST_OK, "%s", err.msg);
    return req;
}

/* submit_opts with the defaults. */
static inline struct st_request *submit(struct fixture *f, const char *id, char *text,
                                        int32_t max_tokens, struct prec *p)
{
    return submit_opts(f, id, text, max_tokens, (struct prec_opts){ 0 }, p);
}

static inline struct st_slot_view slot_view(struct fixture *f, int32_t slot)
{
    struct st_slot_view v[8];
    size_t n = st_engine_pool_slots(f->pool, v, 8);
    ck_assert((size_t)slot < n);
    return v[slot];
}

static inline struct st_pool_stats stats(struct fixture *f)
{
    struct st_pool_stats st;
    st_engine_pool_stats(f->pool, &st);
    return st;
}

/* ---- the scheduler's slot-choosing admit, alone ---- */

/* A slot-choosing callback that names *(int32_t *)ctx whatever is offered. */
static inline int32_t fx_choose_const(void *ctx, const struct st_sched_job *job,
                                      int32_t offered)
{
    (void)job;
    (void)offered;
    return *(const int32_t *)ctx;
}

/* A batching scheduler on 'clk' (set to 0) with one engine of n_slots and
 * the jobs j[0..n) submitted, 10 prompt tokens each, ids "j0", "j1", ... */
static inline struct st_sched *fx_sched_with_jobs(struct st_clock_manual *clk, int32_t n_slots,
                                                  struct st_sched_job *j, int n)
{
    struct st_sched_config sc;
    struct st_sched *s = NULL;
    st_clock_manual_init(clk, 0);
    st_sched_config_defaults(&sc);
    sc.batch = true;
    sc.log_dispatch = false;
    ck_assert(st_sched_new(&sc, &clk->clock, &s, NULL) == ST_OK);
    ck_assert_int_eq(st_sched_add_engine(s, n_slots, 0), 0);
    memset(j, 0, (size_t)n * sizeof(*j));
    for (int i = 0; i < n; i++) {
        j[i].prompt_tokens = 10;
        snprintf(j[i].request_id, sizeof(j[i].request_id), "j%d", i);
        ck_assert(st_sched_submit(s, &j[i], NULL) == ST_OK);
    }
    return s;
}

#endif /* STRATA_TEST_PREFIX_FIXTURE_H */
