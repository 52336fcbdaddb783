/* test_models.c -- several models on shared engines (issue 8, docs/MODELS.md):
 * swap affinity, priority and aging across models, a model that fails to
 * load, ttl, two engines, pinning. The scheduler drives the sim engine on
 * a manual clock (st_engine_pool_step, no threads, exact times).
 *
 * Time model in every test: prompt 1000 tok/s, decode 10 tok/s per slot,
 * a model load takes 1 s unless a test says otherwise. Dispatch order is
 * read from the activity records (oldest first), which name each request.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "internal.h"   /* src/sched: st_sched_check_invariants */
#include "strata/log.h"
#include "support.h"

#define SEC(x) ((int64_t)((x) * (double)ST_NS_PER_SEC + 0.5))

enum { A, B, C };

static struct st_model_config model(const char *name, int32_t parallel)
{
    struct st_model_config m;
    memset(&m, 0, sizeof(m));
    m.name = (char *)name;
    m.backend = ST_BACKEND_SIM;
    m.parallel = parallel;
    m.ctx_size = 1 << 20;
    return m;
}

/* Fixture defaults plus models: 'first' is model 0, extra[] the rest;
 * aging 60 s per point and bonus 10 (the seed's defaults), loads 1 s. */
static void mfx(struct fixture *f, struct st_model_config first,
                const struct st_model_config *extra, int32_t n_extra)
{
    fx_defaults(f);
    f->scfg.aging_divisor_s = 60;
    f->scfg.swap_affinity_bonus = 10;
    f->pcfg.model = first;
    f->pcfg.extra_models = extra;
    f->pcfg.n_extra_models = n_extra;
    f->pcfg.sim.load_seconds = 1.0;
}

static struct st_request *sub_rc(struct fixture *f, const char *id, int32_t m, int32_t prio,
                                 int32_t max_tokens, struct rec *r, enum st_status *rc,
                                 struct st_err *err)
{
    memset(r, 0, sizeof(*r));
    r->clock = &f->clk.clock;
    r->first_ns = -1;
    r->engine = -1;
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "%s", id);
    req->prompt = fx_words(10);
    req->params.max_tokens = max_tokens;
    req->job.priority = prio;
    req->model = m;
    req->emit = rec_emit;
    req->emit_ctx = r;
    r->req = req;
    *rc = st_engine_pool_submit(f->pool, req, err);
    return req;
}

/* Submit a 10-word request for model m; the test keeps its reference. */
static struct st_request *sub(struct fixture *f, const char *id, int32_t m, int32_t prio,
                              int32_t max_tokens, struct rec *r)
{
    enum st_status rc;
    struct st_request *req = sub_rc(f, id, m, prio, max_tokens, r, &rc, NULL);
    ck_assert_msg(rc == ST_OK, "submit %s: %s", id, st_status_name(rc));
    return req;
}

/* The request ids of every dispatch so far, in dispatch order: "a1 b1 ...". */
static const char *order(struct fixture *f)
{
    static char out[512];
    struct st_activity act[32];
    size_t n = st_sched_activity(f->sched, act, 32);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(out, act[i].request_id, sizeof(out) - strlen(out) - 2);
        if (i + 1 < n)
            strcat(out, " ");
    }
    return out;
}

static const struct st_activity *activity_of(struct fixture *f, const char *id)
{
    static struct st_activity act[64];
    size_t n = st_sched_activity(f->sched, act, 64);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(act[i].request_id, id) == 0)
            return &act[i];
    }
    return NULL;
}

static void check_invariants(struct fixture *f)
{
    char why[256];
    ck_assert_msg(st_sched_check_invariants(f->sched, why, sizeof(why)), "%s", why);
}

static void unref_all(struct st_request **reqs, int n)
{
    for (int i = 0; i < n; i++)
        st_request_unref(reqs[i]);
}

/* ---- affinity --------------------------------------------------------- */

START_TEST(test_models_affinity_groups_a_b_a_b_into_a_a_b_b)
{
    /* A is loaded; A B A B arrive at equal priority while a0 runs. The
     * bonus keeps the run of A together: A A B B, one swap, and the
     * reorder counter names the affinity term. */
    struct fixture f;
    struct rec r[5];
    struct st_model_config extra[] = { model("B", 1) };
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.model.preload = true;
    ck_assert(fx_start(&f));
    ck_assert(st_engine_pool_step(f.pool, 0));   /* start-up: loads A (1 s) */
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), A);
    struct st_request *q[5];
    q[0] = sub(&f, "a0", A, 0, 10, &r[0]);
    fx_run_until(&f, SEC(1.1));
    q[1] = sub(&f, "a1", A, 0, 10, &r[1]);
    q[2] = sub(&f, "b1", B, 0, 10, &r[2]);
    q[3] = sub(&f, "a2", A, 0, 10, &r[3]);
    q[4] = sub(&f, "b2", B, 0, 10, &r[4]);
    fx_run_idle(&f);
    ck_assert_str_eq(order(&f), "a0 a1 a2 b1 b2");
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(r[i].n_end, 1);
        ck_assert_int_eq(r[i].status, ST_OK);
    }
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, -1, A), 1);   /* the start-up load */
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, A, B), 1);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, B, A), 0);
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    /* a2 over b1: without the bonus b1 (the earlier arrival) would have
     * gone; a1 went first by arrival anyway. */
    ck_assert_uint_eq(ss.band[ST_BAND_NORMAL].reorders_affinity, 1);
    const struct st_activity *b1 = activity_of(&f, "b1");
    ck_assert(b1 && b1->swapped && b1->swap_from == A);
    ck_assert(b1->load_ms == 1000.0);   /* --sim-load-seconds 1 */
    const struct st_activity *a2 = activity_of(&f, "a2");
    ck_assert(a2 && !a2->swapped && a2->load_ms == 0.0);
    /* b1's first token waited for the load: ready at its dispatch + 1 s + read + decode. */
    ck_assert_int_eq(r[2].first_ns - r[3].end_ns, SEC(1.0) + SEC(0.01));
    check_invariants(&f);
    unref_all(q, 5);
    fx_stop(&f);
}
END_TEST

START_TEST(test_models_affinity_is_bounded_by_aging)
{
    /* The bonus only breaks near-ties: with one point of aging per second,
     * a B that has waited 12 s longer than the next A goes first. */
    struct fixture f;
    struct rec r[3];
    struct st_model_config extra[] = { model("B", 1) };
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.model.preload = true;
    f.scfg.aging_divisor_s = 1;
    ck_assert(fx_start(&f));
    struct st_request *q[3];
    q[0] = sub(&f, "a0", A, 0, 200, &r[0]);   /* 20 s */
    q[1] = sub(&f, "b1", B, 0, 10, &r[1]);
    fx_run_until(&f, SEC(13));
    q[2] = sub(&f, "a1", A, 0, 10, &r[2]);
    fx_run_idle(&f);
    ck_assert_str_eq(order(&f), "a0 b1 a1");
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    ck_assert_uint_eq(ss.band[ST_BAND_NORMAL].reorders_affinity, 0);
    unref_all(q, 3);
    fx_stop(&f);
}
END_TEST

START_TEST(test_models_affinity_never_lifts_batch_above_normal)
{
    /* Even the largest bonus (99) leaves a batch request for the loaded
     * model below a normal one for another model, and a normal one below
     * an interactive one: the engine swaps instead. */
    struct fixture f;
    struct rec r[5];
    struct st_model_config extra[] = { model("B", 1), model("C", 1) };
    mfx(&f, model("A", 1), extra, 2);
    f.pcfg.model.preload = true;
    f.scfg.swap_affinity_bonus = 99;
    f.scfg.aging_divisor_s = 0;
    ck_assert(fx_start(&f));
    struct st_request *q[5];
    q[0] = sub(&f, "a0", A, 0, 10, &r[0]);
    fx_run_until(&f, SEC(1.5));
    q[1] = sub(&f, "a-batch", A, -100, 10, &r[1]);
    q[2] = sub(&f, "b-normal", B, 0, 10, &r[2]);
    q[3] = sub(&f, "b-batch", B, -100, 10, &r[3]);
    q[4] = sub(&f, "c-interactive", C, 100, 10, &r[4]);
    fx_run_idle(&f);
    /* c (100) over b (0 + 0) ... then on C: b-normal 0 vs a-batch -100:
     * b-normal; on B: b-batch (-100 + 99) over a-batch (-100). */
    ck_assert_str_eq(order(&f), "a0 c-interactive b-normal b-batch a-batch");
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, A, C), 1);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, C, B), 1);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, B, A), 1);
    unref_all(q, 5);
    fx_stop(&f);
}
END_TEST

START_TEST(test_models_bonus_zero_is_priority_then_arrival)
{
    /* swapAffinityBonus 0: A B A B is served A B A B (three swaps), and a
     * higher priority still goes first whatever model it needs. */
    struct fixture f;
    struct rec r[6];
    struct st_model_config extra[] = { model("B", 1) };
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.model.preload = true;
    f.scfg.swap_affinity_bonus = 0;
    ck_assert(fx_start(&f));
    struct st_request *q[6];
    q[0] = sub(&f, "a0", A, 0, 10, &r[0]);
    fx_run_until(&f, SEC(1.5));
    q[1] = sub(&f, "b1", B, 0, 10, &r[1]);
    q[2] = sub(&f, "a1", A, 0, 10, &r[2]);
    q[3] = sub(&f, "b2", B, 0, 10, &r[3]);
    q[4] = sub(&f, "a2", A, 0, 10, &r[4]);
    q[5] = sub(&f, "b-high", B, 5, 10, &r[5]);
    fx_run_idle(&f);
    ck_assert_str_eq(order(&f), "a0 b-high b1 a1 b2 a2");
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, A, B), 2);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, B, A), 2);
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    ck_assert_uint_eq(ss.band[ST_BAND_NORMAL].reorders_affinity, 0);
    unref_all(q, 6);
    fx_stop(&f);
}
END_TEST

/* Drive engine 0 with a steady stream for A (a new request every 2 s,
 * each taking 2.01 s, two to begin with, so one always waits) and one B
 * at t = 0; returns the number of A requests dispatched before b. */
static int starve(double aging_divisor, bool *b_served)
{
    struct fixture f;
    struct rec ra[40], rb;
    struct st_request *qa[40];
    struct st_model_config extra[] = { model("B", 1) };
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.model.preload = true;
    f.pcfg.sim.load_seconds = 0;
    f.scfg.aging_divisor_s = aging_divisor;
    ck_assert(fx_start(&f));
    ck_assert(st_engine_pool_step(f.pool, 0));
    int n = 0;
    for (; n < 2; n++)
        qa[n] = sub(&f, "a", A, 0, 21, &ra[n]);
    struct st_request *qb = sub(&f, "b", B, 0, 21, &rb);
    for (int t = 2; t <= 60; t += 2) {
        fx_run_until(&f, SEC(t) - SEC(0.001));
        qa[n] = sub(&f, "a", A, 0, 21, &ra[n]);
        n++;
    }
    fx_run_idle(&f);
    const struct st_activity *b = activity_of(&f, "b");
    int before = 0;
    struct st_activity act[64];
    size_t na = st_sched_activity(f.sched, act, 64);
    for (size_t i = 0; i < na && strcmp(act[i].request_id, "b") != 0; i++)
        before++;
    *b_served = b && b->queue_wait_ms < 60000.0;
    check_invariants(&f);
    unref_all(qa, n);
    st_request_unref(qb);
    fx_stop(&f);
    return before;
}

START_TEST(test_models_aging_ends_starvation_of_a_rare_model)
{
    /* A steady stream for the loaded A keeps a lone B waiting while its
     * affinity (10) outweighs B's extra aging; at one point per second B
     * goes once it has waited ~10 s longer than the A it competes with.
     * Without aging, B starves for the whole minute. */
    bool served;
    int before = starve(1.0, &served);
    ck_assert(served);
    ck_assert_int_ge(before, 5);    /* affinity held B back at first ... */
    ck_assert_int_le(before, 8);    /* ... but only by about its bonus */
    before = starve(0.0, &served);
    ck_assert(!served);
    ck_assert_int_ge(before, 30);
}
END_TEST

/* ---- faults ------------------------------------------------------------- */

START_TEST(test_models_failing_model_does_not_disturb_others)
{
    /* F cannot load: the request that tried gets 503 with the reason, the
     * ones waiting for F too; A keeps serving; during the back-off a new F
     * request is refused at once; after it, the next one tries again. */
    struct fixture f;
    struct rec r[7];
    struct st_request *q[7];
    struct st_err err = { 0 };
    enum st_status rc;
    struct st_model_config extra[] = { model("F", 1) };
    extra[0].path = (char *)"fail:disk on fire";
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.model.preload = true;
    f.pcfg.load_backoff_s = 30;
    ck_assert(fx_start(&f));
    q[0] = sub(&f, "f1", 1, 0, 10, &r[0]);
    q[1] = sub(&f, "a1", A, 0, 10, &r[1]);
    q[2] = sub(&f, "f2", 1, 0, 10, &r[2]);
    fx_run_idle(&f);
    ck_assert_str_eq(order(&f), "a1 f1");   /* f2 never got a slot */
    ck_assert_int_eq(r[1].status, ST_OK);
    ck_assert_int_eq(r[1].finish, ST_FINISH_LENGTH);
    for (int i = 0; i < 3; i += 2) {
        ck_assert_int_eq(r[i].n_end, 1);
        ck_assert_int_eq(r[i].finish, ST_FINISH_ERROR);
        ck_assert_int_eq(r[i].status, ST_ERR_LOADING);
    }
    struct st_model_status ms;
    ck_assert(st_engine_pool_model_status(f.pool, 1, &ms));
    ck_assert_int_eq(ms.state, ST_MODEL_FAILED);
    ck_assert_str_eq(ms.reason, "disk on fire");
    ck_assert_uint_eq(ms.load_failures, 1);
    ck_assert(ms.retry_in_s > 28 && ms.retry_in_s <= 30);
    ck_assert_uint_eq(ms.load_seconds.count, 1);
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), -1);   /* A was swapped out */

    /* A still serves (it loads again); F is refused at once, with why. */
    q[3] = sub(&f, "a2", A, 0, 10, &r[3]);
    q[4] = sub_rc(&f, "f3", 1, 0, 10, &r[4], &rc, &err);
    ck_assert_int_eq(rc, ST_ERR_LOADING);
    ck_assert_ptr_nonnull(strstr(err.msg, "disk on fire"));
    fx_run_idle(&f);
    ck_assert_int_eq(r[3].status, ST_OK);
    ck_assert_int_eq(r[4].n_end, 0);   /* refused: no events */
    ck_assert(st_engine_pool_model_status(f.pool, A, &ms));
    ck_assert_int_eq(ms.state, ST_MODEL_LOADED);

    /* After the back-off the next request tries the load again. */
    st_clock_manual_advance(&f.clk, SEC(31));
    q[5] = sub(&f, "f4", 1, 0, 10, &r[5]);
    fx_run_idle(&f);
    ck_assert_int_eq(r[5].n_end, 1);
    ck_assert_int_eq(r[5].status, ST_ERR_LOADING);
    ck_assert(st_engine_pool_model_status(f.pool, 1, &ms));
    ck_assert_uint_eq(ms.load_failures, 2);
    q[6] = sub(&f, "a3", A, 0, 10, &r[6]);
    fx_run_idle(&f);
    ck_assert_int_eq(r[6].status, ST_OK);
    check_invariants(&f);
    unref_all(q, 7);
    fx_stop(&f);
}
END_TEST

START_TEST(test_models_failed_load_on_one_engine_leaves_the_other)
{
    /* Two engines; F fails wherever it loads, A is fine. While engine 1
     * still may try F, F's waiting request is not failed: it waits for
     * engine 1, which fails it too; then F is blocked and refused. */
    struct fixture f;
    struct rec r[3];
    struct st_request *q[3];
    struct st_err err = { 0 };
    enum st_status rc;
    struct st_model_config extra[] = { model("F", 1) };
    extra[0].path = (char *)"fail:out of memory";
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.n_engines = 2;
    f.pcfg.gpus[0] = 0;
    f.pcfg.gpus[1] = 1;
    ck_assert(fx_start(&f));
    q[0] = sub(&f, "f1", 1, 0, 10, &r[0]);
    q[1] = sub(&f, "f2", 1, 0, 10, &r[1]);
    ck_assert(st_engine_pool_step(f.pool, 0));   /* takes f1, fails; then f2, which fails too */
    ck_assert_int_eq(r[0].status, ST_ERR_LOADING);
    ck_assert_int_eq(r[1].n_end, 0);             /* engine 0 is in back-off for F: f2 waits */
    ck_assert(st_engine_pool_step(f.pool, 1));   /* engine 1 tries F for f2 */
    ck_assert_int_eq(r[1].n_end, 1);
    ck_assert_int_eq(r[1].status, ST_ERR_LOADING);
    q[2] = sub_rc(&f, "f3", 1, 0, 10, &r[2], &rc, &err);
    ck_assert_int_eq(rc, ST_ERR_LOADING);
    ck_assert_ptr_nonnull(strstr(err.msg, "out of memory"));
    check_invariants(&f);
    unref_all(q, 3);
    fx_stop(&f);
}
END_TEST

/* ---- ttl, several engines, pinning ------------------------------------ */

START_TEST(test_models_ttl_unloads_an_idle_model)
{
    struct fixture f;
    struct rec r[2];
    struct st_request *q[2];
    struct st_model_config extra[] = { model("B", 1) };
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.model.ttl_s = 5;
    ck_assert(fx_start(&f));
    q[0] = sub(&f, "a1", A, 0, 10, &r[0]);
    fx_run_idle(&f);   /* load 1 s + read + 1 s decode */
    int64_t idle = r[0].end_ns;
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), A);
    st_clock_manual_advance(&f.clk, idle + SEC(4.9) - st_clock_now(&f.clk.clock));
    ck_assert(!st_engine_pool_step(f.pool, 0));
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), A);
    st_clock_manual_advance(&f.clk, SEC(0.2));
    ck_assert(st_engine_pool_step(f.pool, 0));   /* unloads */
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), -1);
    struct st_model_status ms;
    ck_assert(st_engine_pool_model_status(f.pool, A, &ms));
    ck_assert_int_eq(ms.state, ST_MODEL_UNLOADED);
    ck_assert_uint_eq(ms.ttl_unloads, 1);
    ck_assert_int_eq(ms.n_loaded, 0);
    /* The next request loads it again (a swap from nothing). */
    q[1] = sub(&f, "a2", A, 0, 10, &r[1]);
    fx_run_idle(&f);
    ck_assert_int_eq(r[1].status, ST_OK);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, -1, A), 2);
    const struct st_activity *a2 = activity_of(&f, "a2");
    ck_assert(a2 && a2->swapped && a2->swap_from == -1 && a2->load_ms == 1000.0);
    unref_all(q, 2);
    fx_stop(&f);
}
END_TEST

START_TEST(test_models_two_engines_each_serve_their_loaded_model)
{
    /* Engine 0 loads A for a1, engine 1 loads B for b1; while each is busy
     * it takes only requests for its own model, so A and B requests split
     * by engine and nothing swaps again. */
    struct fixture f;
    struct rec r[6];
    struct st_request *q[6];
    struct st_model_config extra[] = { model("B", 2) };
    mfx(&f, model("A", 2), extra, 1);
    f.pcfg.n_engines = 2;
    f.pcfg.gpus[0] = 0;
    f.pcfg.gpus[1] = 1;
    ck_assert(fx_start(&f));
    q[0] = sub(&f, "a1", A, 0, 100, &r[0]);
    q[1] = sub(&f, "b1", B, 0, 100, &r[1]);
    ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert(st_engine_pool_step(f.pool, 1));
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), A);
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 1), B);
    q[2] = sub(&f, "b2", B, 0, 10, &r[2]);
    q[3] = sub(&f, "a2", A, 0, 10, &r[3]);
    q[4] = sub(&f, "b3", B, 0, 10, &r[4]);
    q[5] = sub(&f, "a3", A, 0, 10, &r[5]);
    fx_run_all_idle(&f, 2);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(r[i].status, ST_OK);
        ck_assert_int_eq(r[i].engine, q[i]->model == A ? 0 : 1);
    }
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, -1, A), 1);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, -1, B), 1);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, A, B) + st_engine_pool_swaps(f.pool, B, A), 0);
    struct st_model_status ms;
    ck_assert(st_engine_pool_model_status(f.pool, B, &ms));
    ck_assert_int_eq(ms.state, ST_MODEL_LOADED);
    ck_assert_int_eq(ms.n_engines, 1);
    ck_assert_int_eq(ms.engines[0], 1);
    check_invariants(&f);
    unref_all(q, 6);
    fx_stop(&f);
}
END_TEST

START_TEST(test_models_pinned_model_runs_only_on_its_gpu)
{
    /* P is pinned to GPU 1. Engine 0 (GPU 0) is free but never takes p1;
     * p1 waits for engine 1, which swaps to P once a1 is done. */
    struct fixture f;
    struct rec r[2];
    struct st_request *q[2];
    struct st_model_config extra[] = { model("P", 1) };
    extra[0].gpus[0] = 1;
    extra[0].n_gpus = 1;
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.n_engines = 2;
    f.pcfg.gpus[0] = 0;
    f.pcfg.gpus[1] = 1;
    ck_assert(fx_start(&f));
    q[0] = sub(&f, "a1", A, 0, 30, &r[0]);
    ck_assert(st_engine_pool_step(f.pool, 1));   /* engine 1 takes a1 */
    q[1] = sub(&f, "p1", 1, 0, 10, &r[1]);
    for (int i = 0; i < 5; i++)
        (void)st_engine_pool_step(f.pool, 0);
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), -1);
    ck_assert_int_eq(q[1]->job.state, ST_JOB_WAITING);
    fx_run_all_idle(&f, 2);
    ck_assert_int_eq(r[1].status, ST_OK);
    ck_assert_int_eq(r[1].engine, 1);
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 1), 1);
    check_invariants(&f);
    unref_all(q, 2);
    fx_stop(&f);
}
END_TEST

START_TEST(test_models_an_empty_engine_loads_before_another_swaps)
{
    /* Engine 0 has A loaded and is idle, engine 1 has nothing: a request
     * for B goes to engine 1, so A stays loaded (no swap that is not needed). */
    struct fixture f;
    struct rec r[2];
    struct st_request *q[2];
    struct st_model_config extra[] = { model("B", 1) };
    mfx(&f, model("A", 1), extra, 1);
    f.pcfg.n_engines = 2;
    f.pcfg.gpus[0] = 0;
    f.pcfg.gpus[1] = 1;
    ck_assert(fx_start(&f));
    q[0] = sub(&f, "a1", A, 0, 10, &r[0]);
    fx_run_idle(&f);                                      /* engine 0 loads A */
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), A);
    q[1] = sub(&f, "b1", B, 0, 10, &r[1]);
    ck_assert(!st_engine_pool_step(f.pool, 0));           /* leaves b1 to engine 1 */
    fx_run_all_idle(&f, 2);
    ck_assert_int_eq(r[1].engine, 1);
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), A);
    ck_assert_uint_eq(st_engine_pool_swaps(f.pool, A, B), 0);
    unref_all(q, 2);
    fx_stop(&f);
}
END_TEST

/* The slot views /slots shows, caught during a load: the test's clock
 * calls the manual clock's sleep and, while 'armed', copies the views at
 * the first sleep (the sim load sleeps in tenths of its time). */
static struct {
    struct st_engine_pool *pool;
    bool armed;
    struct st_slot_view views[8];
    size_t n;
} g_seen;

static void (*g_manual_sleep)(const struct st_clock *, int64_t);

static void sleep_and_look(const struct st_clock *c, int64_t deadline_ns)
{
    if (g_seen.armed) {
        g_seen.armed = false;
        g_seen.n = st_engine_pool_slots(g_seen.pool, g_seen.views, ST_ARRAY_LEN(g_seen.views));
    }
    g_manual_sleep(c, deadline_ns);
}

/* Every slot of 'engine' in v[0..n) shows model m (-1: none) of n_ctx tokens. */
static void check_slots(const struct st_slot_view *v, size_t n, int32_t engine, int32_t m,
                        int64_t n_ctx, const char *when)
{
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].engine != engine)
            continue;
        seen++;
        ck_assert_msg(v[i].model == m && v[i].n_ctx == n_ctx,
                      "%s: engine %d slot %d shows model %d of %lld tokens, expected %d of %lld",
                      when, (int)engine, (int)v[i].slot, (int)v[i].model, (long long)v[i].n_ctx,
                      (int)m, (long long)n_ctx);
    }
    ck_assert_int_eq(seen, 2);
}

START_TEST(test_models_slots_show_each_engines_model)
{
    /* A (4096 tokens) preloads on both engines, B (2048) loads on use.
     * /slots must show each engine's model as soon as it has it, even an
     * engine that has served nothing since its start-up load (the views
     * were only refreshed by steps with work: engine 1 showed no model
     * until its first request, and the e2e models suite saw null there
     * when engine 0 happened to serve every request); none while one is
     * loading; the new one after a swap. */
    struct fixture f;
    struct rec r[2];
    struct st_request *q[2];
    struct st_slot_view v[8];
    struct st_model_config extra[] = { model("B", 2) };
    extra[0].ctx_size = 2048;
    mfx(&f, model("A", 2), extra, 1);
    f.pcfg.model.ctx_size = 4096;
    f.pcfg.model.preload = true;
    f.pcfg.n_engines = 2;
    f.pcfg.gpus[0] = 0;
    f.pcfg.gpus[1] = 1;
    g_manual_sleep = f.clk.clock.sleep_until;
    f.clk.clock.sleep_until = sleep_and_look;
    ck_assert(fx_start(&f));
    g_seen.pool = f.pool;
    g_seen.armed = false;
    ck_assert(st_engine_pool_step(f.pool, 0));   /* start-up loads, nothing to serve */
    ck_assert(st_engine_pool_step(f.pool, 1));
    ck_assert(st_engine_pool_ready(f.pool));
    size_t n = st_engine_pool_slots(f.pool, v, ST_ARRAY_LEN(v));
    ck_assert_uint_eq(n, 4);
    check_slots(v, n, 0, A, 4096, "after start-up");
    check_slots(v, n, 1, A, 4096, "after start-up");

    /* a1 and then b1 both go to engine 0 (it steps first); engine 1 idles. */
    q[0] = sub(&f, "a1", A, 0, 2, &r[0]);
    fx_run_idle(&f);
    ck_assert_int_eq(r[0].engine, 0);
    q[1] = sub(&f, "b1", B, 0, 2, &r[1]);
    g_seen.armed = true;
    fx_run_idle(&f);
    ck_assert(!g_seen.armed);
    check_slots(g_seen.views, g_seen.n, 0, -1, 0, "while engine 0 loads B");
    check_slots(g_seen.views, g_seen.n, 1, A, 4096, "while engine 0 loads B");
    ck_assert_int_eq(r[1].status, ST_OK);
    ck_assert_int_eq(r[1].engine, 0);
    const struct st_activity *b1 = activity_of(&f, "b1");
    ck_assert(b1 && b1->swapped && b1->swap_from == A);
    n = st_engine_pool_slots(f.pool, v, ST_ARRAY_LEN(v));
    check_slots(v, n, 0, B, 2048, "after the swap");
    check_slots(v, n, 1, A, 4096, "after the swap");
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 1), A);
    check_invariants(&f);
    unref_all(q, 2);
    fx_stop(&f);
}
END_TEST

/* ---- names, config, status ------------------------------------------- */

START_TEST(test_models_names_aliases_and_config_errors)
{
    struct fixture f;
    char *aliases[] = { (char *)"b-latest", (char *)"bee" };
    struct st_model_config extra[] = { model("B", 3), model("C", 1) };
    extra[0].aliases = aliases;
    extra[0].n_aliases = 2;
    mfx(&f, model("A", 1), extra, 2);
    ck_assert(fx_start(&f));
    ck_assert_int_eq(st_engine_pool_n_models(f.pool), 3);
    ck_assert_int_eq(st_engine_pool_find_model(f.pool, "B"), B);
    ck_assert_int_eq(st_engine_pool_find_model(f.pool, "bee"), B);
    ck_assert_int_eq(st_engine_pool_find_model(f.pool, "C"), C);
    ck_assert_int_eq(st_engine_pool_find_model(f.pool, "b"), -1);
    ck_assert_int_eq(st_engine_pool_find_model(f.pool, NULL), -1);
    /* several models: names and aliases route, unknown is -1, none is the first */
    ck_assert_int_eq(st_engine_pool_pick_model(f.pool, "bee"), B);
    ck_assert_int_eq(st_engine_pool_pick_model(f.pool, "b"), -1);
    ck_assert_int_eq(st_engine_pool_pick_model(f.pool, NULL), 0);
    ck_assert_str_eq(st_engine_pool_model_name(f.pool, B), "B");
    ck_assert_ptr_null(st_engine_pool_model_name(f.pool, 3));
    int32_t n;
    const char *const *al = st_engine_pool_model_aliases(f.pool, B, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(al[1], "bee");
    struct st_model_status ms;
    ck_assert(st_engine_pool_model_status(f.pool, C, &ms));
    ck_assert_int_eq(ms.state, ST_MODEL_UNLOADED);
    ck_assert_str_eq(st_model_state_name(ms.state), "unloaded");
    ck_assert(!st_engine_pool_model_status(f.pool, 5, &ms));
    /* Nothing is preloaded with several models: ready at once. */
    ck_assert(st_engine_pool_step(f.pool, 0) == false);
    ck_assert(st_engine_pool_ready(f.pool));
    /* The engine is sized for the largest model (B: 3 slots). */
    ck_assert_uint_eq(st_engine_pool_slots(f.pool, NULL, 0), 3);
    fx_stop(&f);

    struct st_err err = { 0 };
    struct st_sched *s;
    struct st_engine_pool *p = NULL;
    struct st_sched_config sc;
    st_sched_config_defaults(&sc);
    /* an alias that is another model's name */
    struct st_pool_config pc;
    st_pool_config_defaults(&pc);
    char *dup[] = { (char *)"A" };
    struct st_model_config bad[] = { model("B", 1) };
    bad[0].aliases = dup;
    bad[0].n_aliases = 1;
    pc.model = model("A", 1);
    pc.extra_models = bad;
    pc.n_extra_models = 1;
    ck_assert_int_eq(st_sched_new(&sc, st_clock_real(), &s, NULL), ST_OK);
    ck_assert_int_eq(st_engine_pool_new(&pc, s, st_clock_real(), &p, &err), ST_ERR_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "already used"));
    st_sched_free(s);
    /* pinned to a device the server does not have */
    bad[0] = model("B", 1);
    bad[0].gpus[0] = 7;
    bad[0].n_gpus = 1;
    ck_assert_int_eq(st_sched_new(&sc, st_clock_real(), &s, NULL), ST_OK);
    ck_assert_int_eq(st_engine_pool_new(&pc, s, st_clock_real(), &p, &err), ST_ERR_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "gpu 7"));
    ck_assert_ptr_null(p);
    st_sched_free(s);
}
END_TEST

START_TEST(test_models_preload_and_load_histogram)
{
    /* preload: B (the first preload model) loads at start-up, 2.5 s on the
     * sim clock; the load histogram and the loaded gauge say so. */
    struct fixture f;
    struct st_model_config extra[] = { model("B", 1), model("C", 1) };
    extra[0].preload = true;
    extra[1].preload = true;
    mfx(&f, model("A", 1), extra, 2);
    f.pcfg.sim.load_seconds = 2.5;
    ck_assert(fx_start(&f));
    ck_assert(!st_engine_pool_ready(f.pool));
    ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert(st_engine_pool_ready(f.pool));
    ck_assert_int_eq(st_clock_now(&f.clk.clock), SEC(2.5));
    ck_assert_int_eq(st_engine_pool_engine_model(f.pool, 0), B);
    struct st_model_status ms;
    ck_assert(st_engine_pool_model_status(f.pool, B, &ms));
    ck_assert_int_eq(ms.state, ST_MODEL_LOADED);
    ck_assert_int_eq(ms.n_loaded, 1);
    ck_assert_uint_eq(ms.loads, 1);
    ck_assert_uint_eq(ms.load_seconds.count, 1);
    ck_assert(ms.load_seconds.sum == 2.5);
    ck_assert_uint_eq(ms.load_seconds.counts[4], 1);   /* bucket (1, 2.5] */
    ck_assert(st_engine_pool_model_status(f.pool, C, &ms));
    ck_assert_int_eq(ms.state, ST_MODEL_UNLOADED);
    fx_stop(&f);
}
END_TEST

static Suite *models_suite(void)
{
    Suite *s = suite_create("models");
    TCase *t = tcase_create("affinity");
    tcase_add_test(t, test_models_affinity_groups_a_b_a_b_into_a_a_b_b);
    tcase_add_test(t, test_models_affinity_is_bounded_by_aging);
    tcase_add_test(t, test_models_affinity_never_lifts_batch_above_normal);
    tcase_add_test(t, test_models_bonus_zero_is_priority_then_arrival);
    tcase_add_test(t, test_models_aging_ends_starvation_of_a_rare_model);
    suite_add_tcase(s, t);
    t = tcase_create("faults");
    tcase_add_test(t, test_models_failing_model_does_not_disturb_others);
    tcase_add_test(t, test_models_failed_load_on_one_engine_leaves_the_other);
    suite_add_tcase(s, t);
    t = tcase_create("engines");
    tcase_add_test(t, test_models_ttl_unloads_an_idle_model);
    tcase_add_test(t, test_models_two_engines_each_serve_their_loaded_model);
    tcase_add_test(t, test_models_pinned_model_runs_only_on_its_gpu);
    tcase_add_test(t, test_models_an_empty_engine_loads_before_another_swaps);
    tcase_add_test(t, test_models_slots_show_each_engines_model);
    tcase_add_test(t, test_models_names_aliases_and_config_errors);
    tcase_add_test(t, test_models_preload_and_load_histogram);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    st_log_set_level(ST_LOG_WARN);
    return support_run_suite(models_suite(), CK_FORK);
}
