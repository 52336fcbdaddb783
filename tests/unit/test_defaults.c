/* test_defaults.c -- the config module states every default itself (it may
 * not depend on sched or engine, and `strata serve --help` prints them), so
 * its numbers must equal the defaults of the modules that use them. */
#include <check.h>

#include "strata/config.h"
#include "strata/engine.h"
#include "strata/sched.h"
#include "support.h"

START_TEST(test_defaults_config_matches_scheduler)
{
    struct st_config c;
    struct st_sched_config s;
    st_config_init(&c);
    st_sched_config_defaults(&s);
    ck_assert_int_eq(c.scheduler == ST_CFG_SCHED_FIFO, s.policy == ST_SCHED_FIFO);
    ck_assert_double_eq(c.aging_divisor_s, s.aging_divisor_s);
    ck_assert_int_eq(c.swap_affinity_bonus, s.swap_affinity_bonus);
    ck_assert_int_eq(c.give_way_tokens, s.give_way_tokens);
    ck_assert_int_eq(c.yields_max, s.yields_max);
    ck_assert_int_eq(c.max_queue, s.max_queue);
    st_config_fini(&c);
}
END_TEST

START_TEST(test_defaults_config_matches_engine_pool)
{
    struct st_config c;
    struct st_pool_config p;
    st_config_init(&c);
    st_pool_config_defaults(&p);
    ck_assert_int_eq(c.ctx_size, 0);   /* unset: ST_CFG_SLOT_CTX per slot */
    ck_assert_int_eq(ST_CFG_SLOT_CTX, p.model.ctx_size);
    ck_assert_int_eq(c.ubatch, p.ubatch);
    ck_assert_int_eq(c.threads, p.threads);
    ck_assert_int_eq(c.mtp_draft, p.mtp_draft);
    ck_assert_double_eq(c.sim_prompt_tps, p.sim.prompt_tps);
    ck_assert_double_eq(c.sim_decode_tps, p.sim.decode_tps);
    ck_assert_double_eq(c.sim_load_seconds, p.sim.load_seconds);
    ck_assert_int_eq(c.sim_tokens, p.sim.tokens);
    st_config_fini(&c);
}
END_TEST

static Suite *defaults_suite(void)
{
    Suite *s = suite_create("defaults");
    TCase *tc = tcase_create("agree");
    tcase_add_test(tc, test_defaults_config_matches_scheduler);
    tcase_add_test(tc, test_defaults_config_matches_engine_pool);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(defaults_suite(), CK_FORK);
}
