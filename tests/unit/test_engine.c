/* test_engine.c -- the engine loop through the simulated runner, on a
 * manual clock with st_engine_pool_step (no threads, no sleeps): timing,
 * chunked reads, stop strings, limits, cancel, requests' references,
 * several engines, shutdown, stats and the text side. The scheduler
 * scenarios of docs/design/SCHEDULER.md section 9 are in test_engine_sched.c. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_fixture.h"
#include "strata/engine.h"
#include "strata/log.h"
#include "support.h"

#define SEC(x) ((int64_t)((x) * (double)ST_NS_PER_SEC + 0.5))

/* ---- timing ---------------------------------------------------------- */

START_TEST(test_engine_sim_timing_prompt_then_decode)
{
    /* 1000 prompt tokens at 1000 tok/s (chunks 512 + 488): the first token
     * at 1.0 s; 9 more at 10 tok/s: the tenth at 1.9 s. */
    struct fixture f;
    struct rec r;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    struct st_request *req = fx_submit(&f, "a", 0, 1000, 10, &r);
    ck_assert_ptr_nonnull(req);
    fx_run_idle(&f);
    ck_assert(r.ended);
    ck_assert_int_eq(r.first_ns, SEC(1.0));
    ck_assert_int_eq(r.end_ns, SEC(1.9));
    ck_assert_int_eq(r.finish, ST_FINISH_LENGTH);
    ck_assert_int_eq(r.n_generated, 10);
    ck_assert_int_eq(r.n_prompt, 1000);
    ck_assert_str_eq(r.text, "tok1 tok2 tok3 tok4 tok5 tok6 tok7 tok8 tok9 tok10");
    ck_assert_int_eq(req->first_token_ns, SEC(1.0));
    st_request_unref(req);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_sim_tokens_end_with_stop_one_step_later)
{
    /* --sim-tokens 10 without max_tokens: the model "says" end of
     * generation in an 11th step, finish_reason stop. */
    struct fixture f;
    struct rec r;
    fx_defaults(&f);
    f.pcfg.sim.tokens = 10;
    ck_assert(fx_start(&f));
    struct st_request *req = fx_submit(&f, "a", 0, 1000, -1, &r);
    fx_run_idle(&f);
    ck_assert_int_eq(r.end_ns, SEC(2.0));
    ck_assert_int_eq(r.finish, ST_FINISH_STOP);
    ck_assert_int_eq(r.n_generated, 10);
    ck_assert_int_eq(r.n_token_events, 10);
    st_request_unref(req);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_reads_in_ubatch_chunks)
{
    struct fixture f;
    struct rec r;
    struct st_slot_view v;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    struct st_request *req = fx_submit(&f, "a", 0, 1300, 2, &r);
    const int64_t want_read[] = { 512, 1024, 1300 };
    const double want_t[] = { 0.512, 1.024, 1.300 };
    for (int i = 0; i < 3; i++) {
        ck_assert(st_engine_pool_step(f.pool, 0));
        ck_assert_int_eq(st_engine_pool_slots(f.pool, &v, 1), 1);
        ck_assert_int_eq(v.n_read, want_read[i]);
        ck_assert_int_eq(st_clock_now(&f.clk.clock), SEC(want_t[i]));
        ck_assert_int_eq(r.n_token_events, i == 2 ? 1 : 0);
    }
    ck_assert_int_eq(v.state, ST_SLOT_DECODING);
    ck_assert_str_eq(v.request_id, "a");
    fx_run_idle(&f);
    ck_assert_int_eq(r.n_generated, 2);
    st_request_unref(req);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_decoding_slots_share_a_step)
{
    /* Two slots decode in parallel: 5 tokens each take 4 decode steps after
     * their reads, not 8. */
    struct fixture f;
    struct rec a, b;
    fx_defaults(&f);
    f.pcfg.model.parallel = 2;
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 100, 5, &a);
    struct st_request *rb = fx_submit(&f, "b", 0, 100, 5, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(a.first_ns, SEC(0.1));
    /* b reads in the second step, while a decodes: 0.1 + 0.1 + 0.1 */
    ck_assert_int_eq(b.first_ns, SEC(0.3));
    ck_assert_int_eq(a.end_ns, SEC(0.3 + 0.3));   /* 4 decodes: 0.2 (with b's read), 3 x 0.1 */
    ck_assert_int_eq(b.end_ns, SEC(0.3 + 0.4));
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

/* ---- text: stop strings and limits ----------------------------------- */

static void run_one(int32_t max_tokens, const char *stop0, const char *stop1, bool ignore_eos,
                    int32_t sim_tokens, struct rec *r)
{
    struct fixture f;
    fx_defaults(&f);
    f.pcfg.sim.tokens = sim_tokens;
    ck_assert(fx_start(&f));
    memset(r, 0, sizeof(*r));
    r->clock = &f.clk.clock;
    r->first_ns = -1;
    struct st_request *req = st_request_new();
    strcpy(req->id, "x");
    req->prompt = strdup("say something");
    req->params.max_tokens = max_tokens;
    req->params.ignore_eos = ignore_eos;
    if (stop0)
        req->params.stop[req->params.n_stop++] = strdup(stop0);
    if (stop1)
        req->params.stop[req->params.n_stop++] = strdup(stop1);
    req->emit = rec_emit;
    req->emit_ctx = r;
    ck_assert_int_eq(st_engine_pool_submit(f.pool, req, NULL), ST_OK);
    fx_run_idle(&f);
    ck_assert_int_eq(r->n_end, 1);
    st_request_unref(req);
    fx_stop(&f);
}

START_TEST(test_engine_stop_string_across_tokens)
{
    struct rec r;
    /* "tok3 to" spans the pieces " tok3" and " tok4". */
    run_one(-1, "tok3 to", NULL, false, 16, &r);
    ck_assert_str_eq(r.text, "tok1 tok2 ");
    ck_assert_int_eq(r.finish, ST_FINISH_STOP);
    ck_assert_int_eq(r.n_generated, 4);
    ck_assert_str_eq(r.stop_text, "tok3 to");   /* END names the string that matched */
    /* "1 tok" starts inside the first piece: "tok" shows, "1" is held back. */
    run_one(-1, "1 tok", NULL, false, 16, &r);
    ck_assert_str_eq(r.text, "tok");
    ck_assert_int_eq(r.n_generated, 2);
    /* The earliest of several stop strings wins. */
    run_one(-1, "tok5", "2 tok", false, 16, &r);
    ck_assert_str_eq(r.text, "tok1 tok");
    ck_assert_str_eq(r.stop_text, "2 tok");
    /* cut by max_tokens before a stop string came: none named */
    run_one(2, "tok9", NULL, false, 16, &r);
    ck_assert_int_eq(r.finish, ST_FINISH_LENGTH);
    ck_assert_str_eq(r.stop_text, "");
}
END_TEST

START_TEST(test_engine_stop_prefix_released_at_the_end)
{
    struct rec r;
    /* " tok4x" never completes: the held " tok4" is shown when the model
     * ends (4 words) ... */
    run_one(-1, " tok4x", NULL, false, 4, &r);
    ck_assert_str_eq(r.text, "tok1 tok2 tok3 tok4");
    ck_assert_int_eq(r.finish, ST_FINISH_STOP);
    ck_assert_int_eq(r.n_generated, 4);
    /* ... and when max_tokens ends it. */
    run_one(3, " tok3x", NULL, false, 16, &r);
    ck_assert_str_eq(r.text, "tok1 tok2 tok3");
    ck_assert_int_eq(r.finish, ST_FINISH_LENGTH);
}
END_TEST

START_TEST(test_engine_max_tokens_and_sim_tokens)
{
    struct rec r;
    run_one(3, NULL, NULL, false, 16, &r);
    ck_assert_str_eq(r.text, "tok1 tok2 tok3");
    ck_assert_int_eq(r.finish, ST_FINISH_LENGTH);
    run_one(-1, NULL, NULL, false, 5, &r);
    ck_assert_str_eq(r.text, "tok1 tok2 tok3 tok4 tok5");
    ck_assert_int_eq(r.finish, ST_FINISH_STOP);
    /* ignore_eos: past --sim-tokens, up to max_tokens */
    run_one(8, NULL, NULL, true, 5, &r);
    ck_assert_int_eq(r.n_generated, 8);
    ck_assert_int_eq(r.finish, ST_FINISH_LENGTH);
    /* max_tokens 0: nothing generated */
    run_one(0, NULL, NULL, false, 5, &r);
    ck_assert_int_eq(r.n_generated, 0);
    ck_assert_int_eq(r.len, 0);
    ck_assert_int_eq(r.finish, ST_FINISH_LENGTH);
    /* sim tokens 0: ends at once with stop */
    run_one(-1, NULL, NULL, false, 0, &r);
    ck_assert_int_eq(r.n_generated, 0);
    ck_assert_int_eq(r.finish, ST_FINISH_STOP);
}
END_TEST

START_TEST(test_engine_context_full_ends_with_length)
{
    struct fixture f;
    struct rec r;
    fx_defaults(&f);
    f.pcfg.model.ctx_size = 10;
    f.pcfg.sim.tokens = 100;
    ck_assert(fx_start(&f));
    /* 5 prompt tokens: the first token comes from position 4, each decode
     * fills one more cell; the 6th token is sampled from the last cell. */
    struct st_request *req = fx_submit(&f, "a", 0, 5, -1, &r);
    fx_run_idle(&f);
    ck_assert_int_eq(r.finish, ST_FINISH_LENGTH);
    ck_assert_int_eq(r.n_generated, 6);
    st_request_unref(req);
    /* A prompt that fills the context cannot start. */
    enum st_status rc;
    ck_assert_ptr_null(fx_submit_full(&f, "b", 0, 10, -1, &r, &rc));
    ck_assert_int_eq(rc, ST_ERR_TOO_LONG);
    fx_stop(&f);
}
END_TEST

/* ---- cancel ---------------------------------------------------------- */

START_TEST(test_engine_cancel_while_waiting)
{
    struct fixture f;
    struct rec a, b;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 10, 5, &a);
    struct st_request *rb = fx_submit(&f, "b", 0, 10, 5, &b);
    ck_assert(st_engine_pool_step(f.pool, 0));   /* a takes the only slot */
    st_engine_pool_cancel(f.pool, rb);
    ck_assert(b.ended);                          /* at once, on this thread */
    ck_assert_int_eq(b.finish, ST_FINISH_CANCELLED);
    ck_assert_int_eq(b.n_token_events, 0);
    fx_run_idle(&f);
    ck_assert_int_eq(a.finish, ST_FINISH_LENGTH);
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    ck_assert_int_eq(ss.waiting, 0);
    ck_assert_int_eq(ss.running, 0);
    ck_assert_int_eq(ss.band[ST_BAND_NORMAL].outcomes[ST_OUTCOME_CANCELLED], 1);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_cancel_while_decoding_frees_the_slot)
{
    struct fixture f;
    struct rec a, b;
    struct st_slot_view v;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 10, 100, &a);
    struct st_request *rb = fx_submit(&f, "b", 0, 10, 3, &b);
    for (int i = 0; i < 4; i++)
        ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert_int_eq(a.n_token_events, 4);
    st_engine_pool_cancel(f.pool, ra);
    ck_assert(!a.ended);                 /* running: ends at the next step boundary */
    ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert(a.ended);
    ck_assert_int_eq(a.finish, ST_FINISH_CANCELLED);
    ck_assert_int_eq(a.n_token_events, 4);   /* nothing after the cancel */
    st_engine_pool_slots(f.pool, &v, 1);
    ck_assert_str_eq(v.request_id, "b");     /* the slot came back and b took it */
    fx_run_idle(&f);
    ck_assert_int_eq(b.finish, ST_FINISH_LENGTH);
    st_engine_pool_slots(f.pool, &v, 1);
    ck_assert_int_eq(v.state, ST_SLOT_IDLE);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_cancel_while_reading)
{
    struct fixture f;
    struct rec a;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 2000, 5, &a);
    ck_assert(st_engine_pool_step(f.pool, 0));
    st_engine_pool_cancel(f.pool, ra);
    ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert_int_eq(a.finish, ST_FINISH_CANCELLED);
    ck_assert(!st_engine_pool_step(f.pool, 0));
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    ck_assert_int_eq(ss.slots_idle, 1);
    st_request_unref(ra);
    fx_stop(&f);
}
END_TEST

/* ---- references ------------------------------------------------------ */

static atomic_int freed;
static void count_free(struct st_request *req)
{
    (void)req;
    atomic_fetch_add(&freed, 1);
}

START_TEST(test_engine_request_refcount)
{
    atomic_store(&freed, 0);
    struct st_request *req = st_request_new();
    ck_assert_int_eq(atomic_load(&req->refs), 1);
    req->on_free = count_free;
    req->params.stop[0] = strdup("x");
    req->params.n_stop = 1;
    req->prompt = strdup("p");
    st_request_ref(req);
    st_request_unref(req);
    ck_assert_int_eq(atomic_load(&freed), 0);
    st_request_unref(req);
    ck_assert_int_eq(atomic_load(&freed), 1);
    st_request_unref(NULL);

    /* Submitted: the engine side holds one until its END. */
    struct fixture f;
    struct rec r;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    req = fx_submit(&f, "a", 0, 10, 2, &r);
    req->on_free = count_free;
    ck_assert_int_eq(atomic_load(&req->refs), 2);
    fx_run_idle(&f);
    ck_assert(r.ended);
    ck_assert_int_eq(atomic_load(&req->refs), 1);
    st_request_unref(req);
    ck_assert_int_eq(atomic_load(&freed), 2);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_rejected_and_shed_requests)
{
    struct fixture f;
    struct rec a, b, c, d;
    fx_defaults(&f);
    f.scfg.max_queue = 1;
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 10, 2, &a);
    ck_assert(st_engine_pool_step(f.pool, 0));               /* a holds the slot */
    struct st_request *rb = fx_submit(&f, "b", 0, 10, 2, &b);   /* waits */
    enum st_status rc;
    ck_assert_ptr_null(fx_submit_full(&f, "c", 0, 10, 2, &c, &rc));
    ck_assert_int_eq(rc, ST_ERR_QUEUE_FULL);
    ck_assert_int_eq(c.n_end, 0);                             /* the caller answers 429 */
    struct st_request *rd = fx_submit(&f, "d", 100, 10, 2, &d);   /* outranks b */
    ck_assert_ptr_nonnull(rd);
    ck_assert(b.ended);
    ck_assert_int_eq(b.finish, ST_FINISH_ERROR);
    ck_assert_int_eq(b.status, ST_ERR_QUEUE_FULL);
    fx_run_idle(&f);
    ck_assert_int_eq(d.finish, ST_FINISH_LENGTH);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rd);
    fx_stop(&f);
}
END_TEST

/* ---- several engines, shutdown -------------------------------------- */

START_TEST(test_engine_several_engines_share_the_queue)
{
    struct fixture f;
    struct rec r[6];
    struct st_request *req[6];
    fx_defaults(&f);
    f.pcfg.n_engines = 2;
    ck_assert(fx_start(&f));
    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "r%d", i);
        req[i] = fx_submit(&f, id, 0, 20, 3, &r[i]);
    }
    fx_run_all_idle(&f, 2);
    int per_engine[2] = { 0, 0 };
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(r[i].finish, ST_FINISH_LENGTH);
        ck_assert(r[i].engine == 0 || r[i].engine == 1);
        per_engine[r[i].engine]++;
        st_request_unref(req[i]);
    }
    ck_assert_int_eq(per_engine[0], 3);
    ck_assert_int_eq(per_engine[1], 3);
    struct st_slot_view v[4];
    ck_assert_int_eq(st_engine_pool_slots(f.pool, v, 4), 2);
    ck_assert_int_eq(v[1].engine, 1);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_shutdown_ends_everything)
{
    atomic_store(&freed, 0);
    struct fixture f;
    struct rec r[4];
    struct st_request *req[4];
    fx_defaults(&f);
    f.pcfg.model.parallel = 2;
    ck_assert(fx_start(&f));
    for (int i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof(id), "r%d", i);
        req[i] = fx_submit(&f, id, 0, 600, 100, &r[i]);
        req[i]->on_free = count_free;
    }
    for (int i = 0; i < 3; i++)
        ck_assert(st_engine_pool_step(f.pool, 0));   /* two in slots, two waiting */
    fx_stop(&f);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(r[i].n_end, 1);
        ck_assert_int_eq(r[i].finish, ST_FINISH_ERROR);
        ck_assert_int_eq(r[i].status, ST_ERR_SHUTDOWN);
        ck_assert_int_eq(atomic_load(&req[i]->refs), 1);
        st_request_unref(req[i]);
    }
    ck_assert_int_eq(atomic_load(&freed), 4);
}
END_TEST

/* The threaded loop on the real clock with a fast sim: work gets done
 * without anyone stepping, and shutdown joins cleanly. */
START_TEST(test_engine_threads_serve_and_stop)
{
    struct st_sched_config scfg;
    struct st_pool_config pcfg;
    struct st_sched *sched;
    struct st_engine_pool *pool;
    st_sched_config_defaults(&scfg);
    scfg.batch = true;
    scfg.log_dispatch = false;
    st_pool_config_defaults(&pcfg);
    pcfg.model.parallel = 2;
    pcfg.sim.prompt_tps = 1e6;
    pcfg.sim.decode_tps = 1e4;
    pcfg.sim.load_seconds = 0.01;
    pcfg.sim.tokens = 100;
    ck_assert_int_eq(st_sched_new(&scfg, st_clock_real(), &sched, NULL), ST_OK);
    ck_assert_int_eq(st_engine_pool_new(&pcfg, sched, st_clock_real(), &pool, NULL), ST_OK);
    ck_assert(!st_engine_pool_ready(pool));
    ck_assert_int_eq(st_engine_pool_start(pool, NULL), ST_OK);
    struct rec r[5];
    struct st_request *req[5];
    for (int i = 0; i < 5; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        r[i].clock = st_clock_real();
        r[i].first_ns = -1;
        req[i] = st_request_new();
        snprintf(req[i]->id, sizeof(req[i]->id), "t%d", i);
        req[i]->prompt = fx_words(100);
        req[i]->params.max_tokens = 20;
        req[i]->emit = rec_emit;
        req[i]->emit_ctx = &r[i];
        ck_assert_int_eq(st_engine_pool_submit(pool, req[i], NULL), ST_OK);
    }
    /* a bound for a hang (under the tcase timeout), not a speed: a loaded
     * machine, or ASan, is slow */
    int64_t give_up = st_clock_now(st_clock_real()) + 20 * ST_NS_PER_SEC;
    for (;;) {
        int done = 0;
        for (int i = 0; i < 5; i++)
            done += __atomic_load_n(&r[i].ended, __ATOMIC_SEQ_CST);
        if (done == 5 || st_clock_now(st_clock_real()) > give_up)
            break;
        usleep(1000);
    }
    ck_assert(st_engine_pool_ready(pool));
    for (int i = 0; i < 5; i++) {
        ck_assert(__atomic_load_n(&r[i].ended, __ATOMIC_SEQ_CST));
        ck_assert_int_eq(r[i].n_generated, 20);
    }
    st_engine_pool_free(pool);
    st_sched_free(sched);
    for (int i = 0; i < 5; i++)
        st_request_unref(req[i]);
}
END_TEST

/* Shutdown while the threads are mid-flight: nothing hangs, every request
 * ends once with ST_ERR_SHUTDOWN. */
START_TEST(test_engine_threads_shutdown_mid_flight)
{
    struct st_sched_config scfg;
    struct st_pool_config pcfg;
    struct st_sched *sched;
    struct st_engine_pool *pool;
    st_sched_config_defaults(&scfg);
    scfg.batch = true;
    scfg.log_dispatch = false;
    st_pool_config_defaults(&pcfg);
    pcfg.model.parallel = 2;
    pcfg.n_engines = 2;
    pcfg.sim.prompt_tps = 1e5;
    pcfg.sim.decode_tps = 200;
    pcfg.sim.tokens = 100000;
    ck_assert_int_eq(st_sched_new(&scfg, st_clock_real(), &sched, NULL), ST_OK);
    ck_assert_int_eq(st_engine_pool_new(&pcfg, sched, st_clock_real(), &pool, NULL), ST_OK);
    ck_assert_int_eq(st_engine_pool_start(pool, NULL), ST_OK);
    enum { N = 7 };
    struct rec r[N];
    struct st_request *req[N];
    for (int i = 0; i < N; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        r[i].clock = st_clock_real();
        r[i].first_ns = -1;
        req[i] = st_request_new();
        snprintf(req[i]->id, sizeof(req[i]->id), "t%d", i);
        req[i]->prompt = fx_words(1000);
        req[i]->emit = rec_emit;
        req[i]->emit_ctx = &r[i];
        ck_assert_int_eq(st_engine_pool_submit(pool, req[i], NULL), ST_OK);
    }
    usleep(50 * 1000);
    st_engine_pool_free(pool);
    struct st_sched_stats ss;
    st_sched_stats(sched, &ss);
    ck_assert_int_eq(ss.running, 0);
    ck_assert_int_eq(ss.waiting, 0);
    st_sched_free(sched);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(r[i].n_end, 1);
        ck_assert_int_eq(r[i].status, ST_ERR_SHUTDOWN);
        ck_assert_int_eq(atomic_load(&req[i]->refs), 1);
        st_request_unref(req[i]);
    }
}
END_TEST

/* ---- stats and text side --------------------------------------------- */

/* What a client reads once it has its answer is settled before END goes
 * out: a client that scrapes /metrics or /slots right after its reply (the
 * e2e suites do, on a loaded machine) finds its slot idle keeping its
 * prompt, the request finished, and every forward pass and token of it
 * counted. The END callback looks, as that client would. */
struct at_end {
    struct rec r;
    struct st_engine_pool *pool;
    struct st_sched *sched;
    struct st_slot_view v;
    struct st_pool_stats ps;
    struct st_sched_stats ss;
    bool seen;
};

static void at_end_emit(void *ctx, const struct st_event *ev)
{
    struct at_end *a = ctx;
    rec_emit(&a->r, ev);
    if (ev->kind != ST_EVENT_END)
        return;
    ck_assert_int_eq(st_engine_pool_slots(a->pool, &a->v, 1), 1);
    st_engine_pool_stats(a->pool, &a->ps);
    st_sched_stats(a->sched, &a->ss);
    a->seen = true;
}

START_TEST(test_engine_state_settled_before_end)
{
    struct fixture f;
    struct at_end a;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    memset(&a, 0, sizeof(a));
    struct st_request *req = fx_submit(&f, "a", 0, 100, 3, &a.r);
    a.pool = f.pool;
    a.sched = f.sched;
    req->emit = at_end_emit;   /* nothing has stepped yet: no event went out */
    req->emit_ctx = &a;
    fx_run_idle(&f);
    ck_assert(a.seen);
    ck_assert_int_eq(a.r.n_end, 1);
    ck_assert_int_eq(a.v.state, ST_SLOT_IDLE);
    ck_assert_str_eq(a.v.request_id, "");
    ck_assert_int_ge(a.v.n_cached, 100);   /* the prompt it keeps for the next request */
    ck_assert_uint_eq(a.ps.steps, 3);      /* the read (and first token), 2 decodes */
    ck_assert_uint_eq(a.ps.generated_tokens, 3);
    ck_assert_int_eq(a.ps.running, 0);
    ck_assert_int_eq(a.ss.running, 0);
    ck_assert_uint_eq(a.ss.band[ST_BAND_NORMAL].outcomes[ST_OUTCOME_COMPLETED], 1);
    st_request_unref(req);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_stats_count_tokens_and_latency)
{
    struct fixture f;
    struct rec a, b;
    struct st_pool_stats ps;
    fx_defaults(&f);
    f.pcfg.model.parallel = 2;
    f.pcfg.model.ctx_size = 1000;
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 100, 100, 4, &a);   /* interactive */
    struct st_request *rb = fx_submit(&f, "b", 0, 50, 4, &b);      /* normal */
    ck_assert(st_engine_pool_step(f.pool, 0));
    st_engine_pool_stats(f.pool, &ps);
    ck_assert_int_eq(ps.running, 2);
    ck_assert_int_eq(ps.prompt_tokens, 100);
    ck_assert(ps.kv_usage > 0.0499 && ps.kv_usage < 0.0501);   /* 100 / (2 * 1000) */
    fx_run_idle(&f);
    st_engine_pool_stats(f.pool, &ps);
    ck_assert_int_eq(ps.running, 0);
    ck_assert(ps.kv_usage == 0.0);
    ck_assert_int_eq(ps.prompt_tokens, 150);
    ck_assert_int_eq(ps.generated_tokens, 8);
    ck_assert_int_eq(ps.ttft[ST_BAND_INTERACTIVE].count, 1);
    ck_assert_int_eq(ps.ttft[ST_BAND_NORMAL].count, 1);
    ck_assert_int_eq(ps.ttft[ST_BAND_BATCH].count, 0);
    ck_assert_int_eq(ps.itl[ST_BAND_NORMAL].count, 3);
    /* a's first token at 0.1 s: bucket "<= 0.1" (index 4) */
    ck_assert_int_eq(ps.ttft[ST_BAND_INTERACTIVE].counts[4], 1);
    ck_assert(ps.ttft[ST_BAND_INTERACTIVE].sum > 0.0999 && ps.ttft[ST_BAND_INTERACTIVE].sum < 0.1001);
    ck_assert(ps.ttft[ST_BAND_NORMAL].bounds[15] == 60.0);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_sim_text_side)
{
    struct fixture f;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    ck_assert_str_eq(st_engine_pool_model_name(f.pool, 0), "strata-sim");
    ck_assert_int_eq(st_engine_pool_find_model(f.pool, "strata-sim"), 0);
    ck_assert_int_eq(st_engine_pool_find_model(f.pool, "other"), -1);
    /* one model served: any name (or none) picks it, as llama-server does */
    ck_assert_int_eq(st_engine_pool_pick_model(f.pool, "other"), 0);
    ck_assert_int_eq(st_engine_pool_pick_model(f.pool, NULL), 0);
    ck_assert_str_eq(st_engine_pool_backend_name(f.pool, 0), "sim");

    char *p = NULL;
    const char *msgs = "[{\"role\":\"system\",\"content\":\"be brief\"},"
                       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi  there\"},"
                       "{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]";
    struct st_chat_request chat;
    st_chat_request_init(&chat);
    chat.messages = cJSON_Parse(msgs);
    ck_assert_int_eq(st_engine_pool_apply_template(f.pool, 0, &chat, true, &p, NULL), ST_OK);
    st_chat_request_fini(&chat);
    ck_assert_str_eq(p, "be brief hi  there");
    int32_t *ids = NULL;
    size_t n = 0;
    ck_assert_int_eq(st_engine_pool_tokenize(f.pool, 0, p, strlen(p), true, true, &ids, &n, NULL),
                     ST_OK);
    ck_assert_uint_eq(n, 4);   /* one token per word */
    free(ids);
    free(p);
    struct st_err err = { 0 };
    chat.messages = cJSON_Parse("{\"a\":1}");
    ck_assert_int_eq(st_engine_pool_apply_template(f.pool, 0, &chat, true, &p, &err),
                     ST_ERR_INVALID);
    st_chat_request_fini(&chat);

    ck_assert_int_eq(st_engine_pool_tokenize(f.pool, 0, "tok1 tok2", 9, true, true, &ids, &n,
                                             NULL), ST_OK);
    char *text = NULL;
    ck_assert_int_eq(st_engine_pool_detokenize(f.pool, 0, ids, n, &text, NULL), ST_OK);
    ck_assert_str_eq(text, "tok1 tok2");
    free(text);
    free(ids);

    struct st_request *req = st_request_new();
    req->prompt = strdup("   ");
    ck_assert_int_eq(st_engine_pool_prepare(f.pool, req, NULL), ST_ERR_INVALID);
    st_request_unref(req);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_sim_load_time_and_ready)
{
    struct fixture f;
    fx_defaults(&f);
    f.pcfg.sim.load_seconds = 2.5;
    ck_assert(fx_start(&f));
    ck_assert(!st_engine_pool_ready(f.pool));
    ck_assert(st_engine_pool_step(f.pool, 0));   /* loads */
    ck_assert(st_engine_pool_ready(f.pool));
    ck_assert_int_eq(st_clock_now(&f.clk.clock), SEC(2.5));
    ck_assert(!st_engine_pool_step(f.pool, 0));
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_rejects_bad_config)
{
    struct st_pool_config c;
    struct st_sched_config sc;
    struct st_sched *s;
    struct st_engine_pool *p = NULL;
    struct st_err err = { 0 };
    st_sched_config_defaults(&sc);
    ck_assert_int_eq(st_sched_new(&sc, st_clock_real(), &s, NULL), ST_OK);
    st_pool_config_defaults(&c);
    c.model.backend = ST_BACKEND_CUDA;
#ifdef STRATA_HAVE_CUDA
    /* Built in: accepted here (the device is opened by the start-up load). */
    c.model.path = (char *)"/nonexistent.gguf";
    ck_assert_int_eq(st_engine_pool_new(&c, s, st_clock_real(), &p, &err), ST_OK);
    st_engine_pool_free(p);
    p = NULL;
#else
    ck_assert_int_eq(st_engine_pool_new(&c, s, st_clock_real(), &p, &err), ST_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "not built in"));
    ck_assert_ptr_nonnull(strstr(err.msg, "--backend sim"));
#endif
    st_pool_config_defaults(&c);
    c.sim.decode_tps = 0;
    ck_assert_int_eq(st_engine_pool_new(&c, s, st_clock_real(), &p, &err), ST_ERR_BAD_CONFIG);
    ck_assert_ptr_null(p);
    st_sched_free(s);
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *t = tcase_create("timing");
    tcase_add_test(t, test_engine_sim_timing_prompt_then_decode);
    tcase_add_test(t, test_engine_sim_tokens_end_with_stop_one_step_later);
    tcase_add_test(t, test_engine_reads_in_ubatch_chunks);
    tcase_add_test(t, test_engine_decoding_slots_share_a_step);
    tcase_add_test(t, test_engine_sim_load_time_and_ready);
    suite_add_tcase(s, t);
    t = tcase_create("text");
    tcase_add_test(t, test_engine_stop_string_across_tokens);
    tcase_add_test(t, test_engine_stop_prefix_released_at_the_end);
    tcase_add_test(t, test_engine_max_tokens_and_sim_tokens);
    tcase_add_test(t, test_engine_context_full_ends_with_length);
    tcase_add_test(t, test_engine_sim_text_side);
    suite_add_tcase(s, t);
    t = tcase_create("lifecycle");
    tcase_add_test(t, test_engine_cancel_while_waiting);
    tcase_add_test(t, test_engine_cancel_while_decoding_frees_the_slot);
    tcase_add_test(t, test_engine_cancel_while_reading);
    tcase_add_test(t, test_engine_request_refcount);
    tcase_add_test(t, test_engine_rejected_and_shed_requests);
    tcase_add_test(t, test_engine_several_engines_share_the_queue);
    tcase_add_test(t, test_engine_shutdown_ends_everything);
    tcase_add_test(t, test_engine_threads_serve_and_stop);
    tcase_add_test(t, test_engine_threads_shutdown_mid_flight);
    tcase_add_test(t, test_engine_rejects_bad_config);
    tcase_set_timeout(t, 30);
    suite_add_tcase(s, t);
    t = tcase_create("stats");
    tcase_add_test(t, test_engine_stats_count_tokens_and_latency);
    tcase_add_test(t, test_engine_state_settled_before_end);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    st_log_set_level(ST_LOG_WARN);
    return support_run_suite(engine_suite(), CK_FORK);
}
