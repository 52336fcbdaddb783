/* test_engine_kv_pool.c -- the unified KV pool (--kv-unified,
 * src/engine/kv_pool.c, docs/BATCHING.md "The unified KV pool").
 *
 * Sim part, on a manual clock (prompt 1000 tok/s, decode 10 tok/s, one
 * token a word): one slot reads a prompt longer than pool / slots; two
 * long prompts at once: the second waits for room, then runs; idle cached
 * prefixes are evicted least recently freed first, and only when room is
 * needed; a decode that finds the pool dry ends with "length"; a prompt
 * longer than the pool is refused at submit; a random mix finishes. After
 * every step the slots hold at most the pool (st_pool_stats kv_pool_held).
 * Memory part: the CPU backend's lazy tensors (committed when written,
 * given back by discard) and the model runner giving a cut slot's tail
 * back, measured with mincore (st_backend_resident).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "model_fixture.h"
#include "prefix_fixture.h"
#include "runner/runner.h"
#include "runner/runner_model.h"
#include "strata/backend.h"
#include "strata/forward.h"
#include "support.h"

/* ---- sim: accounting ------------------------------------------------------ */

/* The sim pool of np slots and a context of ctx tokens, with a unified KV
 * pool of 'pool' tokens (0: per-slot regions, the default). */
static void start_kv(struct fixture *f, int32_t np, int64_t ctx, int64_t pool)
{
    fx_defaults(f);
    f->pcfg.model.parallel = np;
    f->pcfg.model.ctx_size = ctx;
    f->pcfg.model.kv_pool = pool;
    ck_assert(fx_start(f));
}

/* The sim pool with a unified KV pool of 'pool' tokens over np slots. */
static void start_pool(struct fixture *f, int32_t np, int64_t pool)
{
    start_kv(f, np, pool, pool);
}

/* Step engine 0 until idle, checking after every step that the slots hold
 * at most the pool; returns the most they held. */
static int64_t run_checked(struct fixture *f, int64_t pool)
{
    int64_t most = 0;
    for (int n = 0; n < 1000000 && st_engine_pool_step(f->pool, 0); n++) {
        int64_t held = stats(f).kv_pool_held;
        ck_assert_msg(held <= pool, "the slots hold %lld of a pool of %lld", (long long)held,
                      (long long)pool);
        most = ST_MAX(most, held);
    }
    return most;
}

START_TEST(test_kv_pool_one_slot_reads_past_its_share)
{
    struct fixture f;
    struct prec a;
    start_pool(&f, 4, 4000);
    struct st_request *ra = submit(&f, "a", words("a", 0, 3000), 2, &a);   /* > 4000 / 4 */
    int64_t most = run_checked(&f, 4000);
    ck_assert(a.r.ended);
    ck_assert_int_eq(a.r.status, ST_OK);
    ck_assert_int_eq(a.r.n_prompt, 3000);
    ck_assert_int_eq(a.r.n_generated, 2);
    ck_assert_int_ge(most, 3000);
    st_request_unref(ra);
    fx_stop(&f);

    /* per-slot regions (the default): the same prompt cannot fit 1000 a slot */
    struct rec r;
    enum st_status rc = ST_OK;
    start_kv(&f, 4, 1000, 0);
    ck_assert_ptr_null(fx_submit_full(&f, "b", 0, 3000, 2, &r, &rc));
    ck_assert_int_eq(rc, ST_ERR_TOO_LONG);
    fx_stop(&f);
}
END_TEST

/* Two prompts of 2500 in a pool of 4000: both cannot be held, so the second
 * waits for the first to end (no preemption), then runs; the first's idle
 * cache is evicted for it. */
START_TEST(test_kv_pool_second_long_read_waits)
{
    struct fixture f;
    struct prec a, b;
    start_pool(&f, 4, 4000);
    struct st_request *ra = submit(&f, "a", words("a", 0, 2500), 5, &a);
    struct st_request *rb = submit(&f, "b", words("b", 0, 2500), 5, &b);
    run_checked(&f, 4000);
    ck_assert(a.r.ended && b.r.ended);
    ck_assert_int_eq(a.r.status, ST_OK);
    ck_assert_int_eq(b.r.status, ST_OK);
    ck_assert_int_eq(a.r.n_generated, 5);
    ck_assert_int_eq(b.r.n_generated, 5);
    /* b read nothing before a ended: 2.5 s of reading after a's end */
    ck_assert_int_ge(b.r.first_ns, a.r.end_ns + SEC(2.5));
    ck_assert_int_ne(b.slot, a.slot);                      /* an empty slot */
    ck_assert_int_eq(slot_view(&f, a.slot).n_cached, 0);   /* evicted for b */
    ck_assert_int_ge(slot_view(&f, b.slot).n_cached, 2500);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

/* Idle caches stay while there is room and go least recently freed first
 * when a prompt needs it. */
START_TEST(test_kv_pool_evicts_idle_prefixes_lru)
{
    struct fixture f;
    struct prec a, b, c, a2, b2;
    start_pool(&f, 3, 3000);
    char *at = words("a", 0, 1000), *bt = words("b", 0, 1000);
    struct st_request *ra = submit(&f, "a", strdup(at), 1, &a);
    run_checked(&f, 3000);
    struct st_request *rb = submit(&f, "b", strdup(bt), 1, &b);
    run_checked(&f, 3000);
    ck_assert_int_eq(a.slot, 0);
    ck_assert_int_eq(b.slot, 1);
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 1000);   /* room for both: both kept */
    ck_assert_int_eq(slot_view(&f, 1).n_cached, 1000);

    struct st_request *rc = submit(&f, "c", words("c", 0, 1500), 1, &c);
    run_checked(&f, 3000);
    ck_assert_int_eq(c.slot, 2);
    ck_assert_int_eq(c.r.status, ST_OK);
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 0);      /* a's, freed first, went */
    ck_assert_int_eq(slot_view(&f, 1).n_cached, 1000);   /* b's stays */

    struct st_request *rb2 = submit(&f, "b2", bt, 1, &b2);
    run_checked(&f, 3000);
    ck_assert_int_eq(b2.n_cached_end, 999);
    struct st_request *ra2 = submit(&f, "a2", at, 1, &a2);
    run_checked(&f, 3000);
    ck_assert_int_eq(a2.n_cached_end, 0);   /* read again */
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    st_request_unref(rb2);
    st_request_unref(ra2);
    fx_stop(&f);
}
END_TEST

/* 400 + 500 prompt tokens in a pool of 1000, both generating up to 1000:
 * the first to find the pool dry ends with "length" far short of its
 * context (the pool's size); the other then evicts its cache and grows to
 * the whole pool. */
START_TEST(test_kv_pool_dry_ends_with_length)
{
    struct fixture f;
    struct prec a, b;
    start_pool(&f, 2, 1000);
    struct st_request *ra = submit(&f, "a", words("a", 0, 400), 999, &a);
    struct st_request *rb = submit(&f, "b", words("b", 0, 500), 999, &b);
    int64_t most = run_checked(&f, 1000);
    ck_assert(a.r.ended && b.r.ended);
    ck_assert_int_eq(a.r.finish, ST_FINISH_LENGTH);
    ck_assert_int_eq(b.r.finish, ST_FINISH_LENGTH);
    ck_assert_int_eq(a.r.status, ST_OK);
    ck_assert_int_eq(b.r.status, ST_OK);
    ck_assert_int_eq(most, 1000);
    const struct prec *first = a.r.end_ns <= b.r.end_ns ? &a : &b;
    const struct prec *last = first == &a ? &b : &a;
    /* the first held prompt + fed tokens (all but its last) beside the other */
    ck_assert_int_lt(first->r.n_prompt + first->r.n_generated, 1000 - 300);
    ck_assert_int_lt(first->r.n_generated, 999);
    ck_assert_int_eq(last->r.n_prompt + last->r.n_generated, 1001);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_kv_pool_refuses_a_prompt_past_the_pool)
{
    struct fixture f;
    struct rec r;
    enum st_status rc = ST_OK;
    start_pool(&f, 2, 1000);
    ck_assert_ptr_null(fx_submit_full(&f, "a", 0, 1500, 2, &r, &rc));
    ck_assert_int_eq(rc, ST_ERR_TOO_LONG);
    fx_stop(&f);
}
END_TEST

/* Twelve requests of 300..1400 tokens on 4 slots sharing 2000: every one
 * finishes (no deadlock), the pool is never passed. */
START_TEST(test_kv_pool_mix_finishes)
{
    struct fixture f;
    struct prec p[12];
    struct st_request *req[12];
    start_pool(&f, 4, 2000);
    for (int i = 0; i < 12; i++) {
        char id[16];   /* room for any int (-Wformat-truncation, from -O1) */
        snprintf(id, sizeof(id), "r%d", i);
        req[i] = submit(&f, id, words(id, 0, 300 + (i * 397) % 1100), 3 + i % 5, &p[i]);
    }
    run_checked(&f, 2000);
    for (int i = 0; i < 12; i++) {
        ck_assert_msg(p[i].r.ended, "request %d never ended", i);
        ck_assert_int_eq(p[i].r.status, ST_OK);
        ck_assert_int_eq(p[i].r.n_generated, 3 + i % 5);
        st_request_unref(req[i]);
    }
    fx_stop(&f);
}
END_TEST

/* What /metrics and /slots say of the pool: a busy slot counts its whole
 * grant (the prompt, from admission) in kv_usage and n_kv before it has
 * read it; the request waiting for room adds nothing; an idle slot's cached
 * prefix stays held in the pool (committed) but out of kv_usage. */
START_TEST(test_kv_pool_stats_count_the_pool)
{
    struct fixture f;
    struct prec a, b;
    start_pool(&f, 4, 4000);
    struct st_request *ra = submit(&f, "a", words("a", 0, 2500), 5, &a);
    struct st_request *rb = submit(&f, "b", words("b", 0, 2500), 5, &b);
    ck_assert(st_engine_pool_step(f.pool, 0));   /* a admitted, its first chunk read */
    struct st_pool_stats ps = stats(&f);
    ck_assert_int_eq(ps.kv_tokens, 4000);        /* cache_config_info: the pool */
    ck_assert_int_eq(ps.kv_pool_tokens, 4000);
    ck_assert_int_eq(ps.kv_pool_busy, 2500);
    ck_assert_int_eq(ps.kv_pool_held, 2500);
    ck_assert_int_eq(ps.running, 1);             /* b waits for room */
    ck_assert_msg(ps.kv_usage > 0.6249 && ps.kv_usage < 0.6251, "kv_usage %f", ps.kv_usage);
    int32_t busy = -1;
    for (int32_t i = 0; i < 4; i++)
        if (slot_view(&f, i).state != ST_SLOT_IDLE)
            busy = i;
    ck_assert_int_ge(busy, 0);
    ck_assert_int_lt(slot_view(&f, busy).n_read, 2500);   /* not read yet, but held */
    ck_assert_int_eq(slot_view(&f, busy).n_kv, 2500);

    run_checked(&f, 4000);
    ck_assert(a.r.ended && b.r.ended);
    ps = stats(&f);
    struct st_slot_view vb = slot_view(&f, b.slot);
    ck_assert_int_eq(ps.kv_pool_busy, 0);
    ck_assert_int_gt(vb.n_kv, 2500);                      /* b's cached prefix */
    ck_assert_int_eq(vb.n_kv, vb.n_cached);
    ck_assert_int_eq(ps.kv_pool_held, vb.n_kv);           /* a's was evicted for b */
    ck_assert(ps.kv_usage == 0.0);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);

    /* per-slot regions: no pool; a busy slot counts the rows it read */
    start_kv(&f, 2, 2000, 0);
    ra = submit(&f, "a", words("a", 0, 1500), 5, &a);
    ck_assert(st_engine_pool_step(f.pool, 0));
    ps = stats(&f);
    ck_assert_int_eq(ps.kv_pool_tokens, 0);
    ck_assert_int_eq(ps.kv_pool_held, 0);
    ck_assert_int_eq(ps.kv_pool_busy, 0);
    ck_assert_int_eq(ps.kv_tokens, 4000);
    ck_assert_int_eq(slot_view(&f, 0).n_kv, slot_view(&f, 0).n_read);
    ck_assert(ps.kv_usage * 4000 > slot_view(&f, 0).n_read - 0.5);
    ck_assert(ps.kv_usage * 4000 < slot_view(&f, 0).n_read + 0.5);
    fx_run_idle(&f);
    st_request_unref(ra);
    fx_stop(&f);
}
END_TEST

/* ---- the scheduler: a job with no room stays first in line ----------------- */

START_TEST(test_kv_pool_sched_wait_keeps_the_job_first)
{
    struct st_clock_manual clk;
    struct st_sched_job j[2];
    struct st_sched *s = fx_sched_with_jobs(&clk, 2, j, 2);
    int32_t want = ST_SCHED_SLOT_WAIT;
    ck_assert_ptr_null(st_sched_admit_to(s, 0, 0, fx_choose_const, &want));
    ck_assert_int_eq(j[0].state, ST_JOB_WAITING);   /* not granted, not skipped */
    ck_assert_int_eq(j[1].state, ST_JOB_WAITING);
    struct st_sched_stats st;
    st_sched_stats(s, &st);
    ck_assert_int_eq(st.waiting, 2);
    ck_assert_int_eq(st.running, 0);
    want = 1;   /* room now: the same first job, in the slot chosen */
    ck_assert_ptr_eq(st_sched_admit_to(s, 0, 0, fx_choose_const, &want), &j[0]);
    ck_assert_int_eq(j[0].slot, 1);
    st_sched_finish(s, &j[0], ST_OUTCOME_COMPLETED, NULL);
    ck_assert(st_sched_cancel(s, &j[1]));
    st_sched_free(s);
}
END_TEST

/* ---- memory: lazy tensors and the runner ---------------------------------- */

START_TEST(test_kv_pool_cpu_lazy_tensor)
{
    struct st_backend *be = NULL;
    struct st_err err = { 0 };
    ck_assert(st_backend_open("cpu", NULL, &be, &err) == ST_OK);
    const int64_t ne[ST_TENSOR_DIMS] = { 1024, 1024, 16, 1 };   /* 32 MiB of f16 */
    struct st_tensor t;
    ck_assert_msg(st_backend_alloc_lazy(be, ST_DTYPE_F16, ne, &t, &err) == ST_OK, "%s", err.msg);
    ck_assert_uint_eq(st_backend_resident(be, &t), 0);
    size_t mib = (size_t)1 << 20;
    char *ones = malloc(4 * mib);
    memset(ones, 1, 4 * mib);
    ck_assert(st_backend_write(be, &t, 8 * mib, ones, 4 * mib, &err) == ST_OK);
    size_t res = st_backend_resident(be, &t);
    ck_assert_uint_ge(res, 4 * mib);
    ck_assert_uint_le(res, 4 * mib + 2 * 65536);
    /* give back the middle 2 MiB: pages wholly inside go, reads give zeros */
    ck_assert_uint_eq(st_backend_discard(be, &t, 9 * mib, 2 * mib), 2 * mib);
    ck_assert_uint_le(st_backend_resident(be, &t), res - 2 * mib);
    char back[16];
    ck_assert(st_backend_read(be, &t, 10 * mib, back, sizeof(back), &err) == ST_OK);
    for (size_t i = 0; i < sizeof(back); i++)
        ck_assert_int_eq(back[i], 0);
    ck_assert(st_backend_read(be, &t, 8 * mib, back, sizeof(back), &err) == ST_OK);
    ck_assert_int_eq(back[0], 1);
    /* a plain tensor is never discarded */
    struct st_tensor plain;
    ck_assert(st_backend_alloc(be, ST_DTYPE_F16, ne, &plain, &err) == ST_OK);
    ck_assert_uint_eq(st_backend_discard(be, &plain, 0, 8 * mib), 0);
    ck_assert_uint_eq(st_backend_resident(be, &plain), st_tensor_nbytes(&plain));
    st_backend_release(be, &plain);
    st_backend_release(be, &t);
    free(ones);
    st_backend_close(be);
}
END_TEST

/* A runner of 2 slots sharing a pool of 2048: nothing is committed at load,
 * a read of 512 tokens commits about their rows, the slot cut to nothing
 * gives them back (a few partial pages per layer may stay). */
START_TEST(test_kv_pool_runner_gives_memory_back)
{
    char dir[256], path[320];
    struct st_err err = { 0 };
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 1, false);
    struct st_model_config mc = { .name = "m", .path = path, .backend = ST_BACKEND_CPU,
                                  .parallel = 2, .ctx_size = 2048, .kv_pool = 2048 };
    struct st_runner *r = NULL;
    ck_assert_msg(st_runner_model_new_cfg(&mc, "cpu", -1, 2, 512, &r, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_msg(st_runner_load(r, NULL, NULL, NULL, &err) == ST_OK, "%s", err.msg);
    struct st_model *m = ((struct model_runner *)r)->model;
    size_t total = st_model_kv_bytes(m);
    ck_assert_uint_le(st_model_kv_resident(m), total / 64);   /* nothing written yet */

    int32_t nv = st_runner_n_vocab(r), tok[512];
    for (int i = 0; i < 512; i++)
        tok[i] = (i * 7 + 3) % nv;
    struct st_runner_seq seq = { .kind = ST_SEQ_READ, .slot = 1, .tokens = tok,
                                 .n_tokens = 512, .pos = 0 };
    struct st_runner_row rows[2];
    struct st_runner_out out = { .rows = rows };
    struct st_runner_batch b = { &seq, 1 };
    ck_assert_msg(st_runner_forward(r, &b, &out, &err) == ST_OK, "%s", err.msg);
    size_t written = st_model_kv_resident(m);
    /* 512 of the 2 x 2048 rows: a quarter of a slot's region, an eighth of all */
    ck_assert_uint_ge(written, total / 8);
    ck_assert_uint_le(written, total / 8 + total / 16);

    st_runner_kv_truncate(r, 1, 0);
    ck_assert_uint_le(st_model_kv_resident(m), total / 64);
    st_runner_free(r);
    support_rmtree(dir);
}
END_TEST

static Suite *kv_pool_suite(void)
{
    Suite *s = suite_create("engine_kv_pool");
    TCase *acc = tcase_create("accounting");
    tcase_add_test(acc, test_kv_pool_one_slot_reads_past_its_share);
    tcase_add_test(acc, test_kv_pool_second_long_read_waits);
    tcase_add_test(acc, test_kv_pool_evicts_idle_prefixes_lru);
    tcase_add_test(acc, test_kv_pool_dry_ends_with_length);
    tcase_add_test(acc, test_kv_pool_refuses_a_prompt_past_the_pool);
    tcase_add_test(acc, test_kv_pool_mix_finishes);
    tcase_add_test(acc, test_kv_pool_stats_count_the_pool);
    tcase_add_test(acc, test_kv_pool_sched_wait_keeps_the_job_first);
    suite_add_tcase(s, acc);
    TCase *mem = tcase_create("memory");
    tcase_set_timeout(mem, 60);
    tcase_add_test(mem, test_kv_pool_cpu_lazy_tensor);
    tcase_add_test(mem, test_kv_pool_runner_gives_memory_back);
    suite_add_tcase(s, mem);
    return s;
}

int main(void)
{
    return support_run_suite(kv_pool_suite(), CK_FORK);
}
