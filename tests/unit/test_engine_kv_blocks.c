/* test_engine_kv_blocks.c -- the slots' KV as the blocks the KV events
 * announce (src/engine/kv_blocks.c, docs/KV-EVENTS.md), on the sim with a
 * manual clock and the events kept in the queue (st_kv_blocks_open with
 * no endpoint: no ZeroMQ, so this runs in every build):
 *
 *   - a request's full blocks of final KV go out as one BlockStored (no
 *     parent, its prompt's token ids); the next turn adds its new blocks
 *     with the last one as parent; /slots' kv_blocks and kv_last_block
 *     follow;
 *   - a block two slots hold is stored once and removed only when the
 *     last holder drops it;
 *   - with the events on, a one-block share is copied across slots (under
 *     ST_PREFIX_COPY_MIN); with them off it is not;
 *   - a swap removes every block of the model, then AllBlocksCleared.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_blocks.h"
#include "engine/kvev/queue.h"
#include "engine/pool.h"
#include "prefix_fixture.h"
#include "support.h"

/* Two slots, 16-token blocks, the events kept in the queue (on = false:
 * off). */
static void start_kv(struct fixture *f, bool on, struct st_model_config *extra)
{
    fx_defaults(f);
    f->pcfg.model.parallel = 2;
    f->pcfg.kv_block = 16;
    if (extra) {
        *extra = f->pcfg.model;
        extra->name = (char *)"m1";
        f->pcfg.model.name = (char *)"m0";
        f->pcfg.extra_models = extra;
        f->pcfg.n_extra_models = 1;
    }
    ck_assert(fx_start(f));
    struct st_err err = { 0 };
    if (on)
        ck_assert_msg(st_kv_blocks_open(f->pool, NULL, &err) == ST_OK, "%s", err.msg);
}

/* The events queued since the last call, as a counted array view. */
struct evs {
    struct st_kv_event *list;
    struct st_kv_event *at[64];
    int n;
};

static void take(struct fixture *f, struct evs *v)
{
    st_kv_events_free(v->list);
    memset(v, 0, sizeof(*v));
    v->list = st_kv_blocks_take(f->pool);
    for (struct st_kv_event *e = v->list; e && v->n < 64; e = e->next)
        v->at[v->n++] = e;
}

static struct st_request *run(struct fixture *f, const char *id, char *text, struct prec *p)
{
    struct st_request *r = submit(f, id, text, 5, p);
    fx_run_idle(f);
    ck_assert(p->r.ended);
    return r;
}

START_TEST(test_engine_kv_blocks_stored_then_chained)
{
    struct fixture f;
    struct prec a, b;
    struct evs v = { 0 };
    start_kv(&f, true, NULL);
    /* 40 prompt words + 4 tokens fed back (the 5th is not): 44 in the KV */
    struct st_request *ra = run(&f, "a", words("a", 0, 40), &a);
    take(&f, &v);
    ck_assert_int_eq(v.n, 1);
    ck_assert_int_eq(v.at[0]->kind, ST_KV_STORED);
    ck_assert_int_eq(v.at[0]->n, 2);
    ck_assert_uint_eq(v.at[0]->parent, 0);
    ck_assert_int_eq(v.at[0]->block, 16);
    ck_assert_mem_eq(v.at[0]->tokens, ra->tokens, 32 * sizeof(int32_t));
    uint64_t k1 = v.at[0]->keys[1];
    struct st_slot_view s = slot_view(&f, 0);
    ck_assert_int_eq(s.n_cached, 44);
    ck_assert_int_eq(s.kv_blocks, 2);
    ck_assert_uint_eq(s.kv_last_block, k1);

    /* the next turn: the same 40 words and 30 more reuse 40; 74 in the KV */
    char *head = words("a", 0, 40), *tail = words("b", 0, 30);
    struct st_request *rb = run(&f, "b", join(head, tail), &b);
    free(head);
    free(tail);
    ck_assert_int_eq(b.n_cached_end, 40);
    take(&f, &v);
    ck_assert_int_eq(v.n, 1);
    ck_assert_int_eq(v.at[0]->kind, ST_KV_STORED);
    ck_assert_int_eq(v.at[0]->n, 2);
    ck_assert_uint_eq(v.at[0]->parent, k1);
    ck_assert_mem_eq(v.at[0]->tokens, rb->tokens + 32, 32 * sizeof(int32_t));
    ck_assert_int_eq(slot_view(&f, 0).kv_blocks, 4);
    ck_assert_uint_eq(slot_view(&f, 0).kv_last_block, v.at[0]->keys[1]);
    take(&f, &v);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_kv_blocks_shared_stored_once)
{
    /* a (600 shared words) decodes in slot 0; b shares them and copies
     * them into slot 1: only b's own blocks are new to the pod. When b's
     * slot is reused by an unrelated c, only b's own blocks go. */
    struct fixture f;
    struct prec a, b, c;
    struct evs v = { 0 };
    start_kv(&f, true, NULL);
    struct st_request *ra = submit(&f, "a", shared_then(600, "a", 100), 50, &a);
    for (int i = 0; i < 1000 && a.r.first_ns < 0; i++)
        ck_assert(st_engine_pool_step(f.pool, 0));
    take(&f, &v);
    int64_t a_blocks = 0;
    for (int i = 0; i < v.n; i++) {
        ck_assert_int_eq(v.at[i]->kind, ST_KV_STORED);
        a_blocks += v.at[i]->n;
    }
    ck_assert_int_eq(a_blocks, 700 / 16);
    struct st_request *rb = submit(&f, "b", shared_then(600, "b", 100), 1, &b);
    for (int i = 0; i < 1000 && !b.r.ended; i++)
        ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert_int_eq(b.slot, 1);
    ck_assert_int_eq(b.n_cached_end, 600);
    take(&f, &v);
    ck_assert_int_eq(v.n, 1);
    ck_assert_int_eq(v.at[0]->kind, ST_KV_STORED);
    ck_assert_int_eq(v.at[0]->n, 700 / 16 - 600 / 16);   /* from block 37 on */
    /* c, unrelated, while a still decodes: slot 1's own blocks go, not
     * the 37 a holds too */
    struct st_request *rc = submit(&f, "c", words("c", 0, 10), 1, &c);
    for (int i = 0; i < 1000 && !c.r.ended; i++)
        ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert_int_eq(c.slot, 1);
    take(&f, &v);
    ck_assert_int_eq(v.n, 1);
    ck_assert_int_eq(v.at[0]->kind, ST_KV_REMOVED);
    ck_assert_int_eq(v.at[0]->n, 700 / 16 - 600 / 16);
    take(&f, &v);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    fx_stop(&f);
}
END_TEST

/* b shares 'shared' words with a, decoding in slot 0, and goes to slot 1:
 * its n_cached (what was copied). */
static int64_t copied_with(bool on, int shared)
{
    struct fixture f;
    struct prec a, b;
    start_kv(&f, on, NULL);
    struct st_request *ra = submit(&f, "a", shared_then(shared, "a", 100), 20, &a);
    for (int i = 0; i < 1000 && a.r.first_ns < 0; i++)
        ck_assert(st_engine_pool_step(f.pool, 0));
    struct st_request *rb = submit(&f, "b", shared_then(shared, "b", 100), 1, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.slot, 1);
    int64_t n = b.n_cached_end;
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
    return n;
}

START_TEST(test_engine_kv_blocks_copy_one_block)
{
    ck_assert_int_eq(copied_with(false, 16), 0);   /* under ST_PREFIX_COPY_MIN */
    ck_assert_int_eq(copied_with(true, 16), 16);   /* a block the slot lacks */
    ck_assert_int_eq(copied_with(true, 15), 0);    /* no full block */
    ck_assert_int_eq(copied_with(true, 20), 20);   /* the block and what follows */
}
END_TEST

START_TEST(test_engine_kv_blocks_swap_clears)
{
    struct fixture f;
    struct st_model_config m1;
    struct prec a, b;
    struct evs v = { 0 };
    start_kv(&f, true, &m1);
    struct st_request *ra = run(&f, "a", words("a", 0, 40), &a);
    take(&f, &v);
    ck_assert_int_eq(v.n, 1);
    uint64_t keys[2] = { v.at[0]->keys[0], v.at[0]->keys[1] };
    struct st_request *rb = submit_opts(&f, "b", words("a", 0, 40), 5,
                                        (struct prec_opts){ .model = 1 }, &b);
    fx_run_idle(&f);
    ck_assert(b.r.ended);
    take(&f, &v);
    ck_assert_int_eq(v.n, 3);
    ck_assert_int_eq(v.at[0]->kind, ST_KV_REMOVED);
    ck_assert_int_eq(v.at[0]->model, 0);
    ck_assert_int_eq(v.at[0]->n, 2);
    ck_assert(v.at[0]->keys[0] == keys[1] && v.at[0]->keys[1] == keys[0]);
    ck_assert_int_eq(v.at[1]->kind, ST_KV_CLEARED);
    ck_assert_int_eq(v.at[1]->model, 0);
    /* the same words under m1: other keys (the model seeds the chain) */
    ck_assert_int_eq(v.at[2]->kind, ST_KV_STORED);
    ck_assert_int_eq(v.at[2]->model, 1);
    ck_assert(v.at[2]->keys[0] != keys[0]);
    take(&f, &v);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_kv_blocks");
    TCase *tc = tcase_create("sim");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_engine_kv_blocks_stored_then_chained);
    tcase_add_test(tc, test_engine_kv_blocks_shared_stored_once);
    tcase_add_test(tc, test_engine_kv_blocks_copy_one_block);
    tcase_add_test(tc, test_engine_kv_blocks_swap_clears);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_NOFORK);
}
