/* test_server_metrics_epp.c -- the router-facing families of /metrics
 * (metrics_epp.c) from hand-filled snapshots: the pod-wide total as each
 * family's first series, the KV fraction clamped, cache_config_info's
 * block geometry, the models-info gauge's lists (aliases, escaping, a
 * loaded model never listed as waiting) and the engines loading; the
 * scheduler's per-model waiting counts they come from. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "server/http/http.h"
#include "strata/clock.h"
#include "support.h"

static const char *line_of(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, n) == 0)
            return p;
    return NULL;
}

static void expect_line(const char *text, const char *line)
{
    char want[512];
    snprintf(want, sizeof(want), "%s\n", line);
    ck_assert_msg(line_of(text, want) != NULL, "missing line: %s", line);
}

/* The first sample line of 'name' (a line starting "name " or "name{"). */
static const char *first_sample(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ' ' || p[n] == '{'))
            return p;
    return NULL;
}

static void render(struct st_buf *b, const struct st_sched_stats *ss,
                   const struct st_pool_stats *ps, const struct st_metrics_models *mm)
{
    struct st_out o;
    st_buf_reset(b);
    st_out_init(&o, b);
    st_metrics_epp_render(&o, ss, ps, mm);
    ck_assert_int_eq(st_out_finish(&o), ST_OK);
}

START_TEST(test_epp_load_gauges_total_first)
{
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    memset(&ss, 0, sizeof(ss));
    memset(&ps, 0, sizeof(ps));
    ss.waiting = 7;
    ss.running = 3;
    ss.band[ST_BAND_INTERACTIVE].queue_depth = 5;
    ss.band[ST_BAND_BATCH].queue_depth = 2;
    ss.band[ST_BAND_NORMAL].running = 3;
    ps.kv_usage = 1.5;   /* clamped to 1 */
    struct st_buf b;
    st_buf_init(&b);
    render(&b, &ss, &ps, NULL);
    const char *t = b.data;
    static const char *const names[] = {
        "vllm:num_requests_waiting",   "vllm:num_requests_running",
        "vllm:kv_cache_usage_perc",    "strata:num_requests_waiting",
        "strata:num_requests_running", "strata:kv_cache_usage_ratio",
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(names); i++) {
        char type[96];
        snprintf(type, sizeof(type), "# TYPE %s gauge", names[i]);
        expect_line(t, type);
        const char *first = first_sample(t, names[i]);
        ck_assert_ptr_nonnull(first);
        ck_assert_msg(first[strlen(names[i])] == ' ', "%s: first series is labeled", names[i]);
    }
    expect_line(t, "vllm:num_requests_waiting 7");
    expect_line(t, "vllm:num_requests_running 3");
    expect_line(t, "vllm:kv_cache_usage_perc 1");
    expect_line(t, "strata:num_requests_waiting 7");
    expect_line(t, "strata:num_requests_waiting{band=\"interactive\"} 5");
    expect_line(t, "strata:num_requests_waiting{band=\"normal\"} 0");
    expect_line(t, "strata:num_requests_waiting{band=\"batch\"} 2");
    expect_line(t, "strata:num_requests_running 3");
    expect_line(t, "strata:num_requests_running{band=\"normal\"} 3");
    expect_line(t, "strata:kv_cache_usage_ratio 1");
    /* without a models snapshot, no geometry and no residency */
    ck_assert_ptr_null(strstr(t, "cache_config_info"));
    ck_assert_ptr_null(strstr(t, "models_info"));
    ck_assert_ptr_null(strstr(t, "lora_requests_info"));
    ps.kv_usage = -0.5;
    render(&b, &ss, &ps, NULL);
    expect_line(b.data, "strata:kv_cache_usage_ratio 0");
    st_buf_fini(&b);
}
END_TEST

/* The unified KV pool's gauges: typed, the total first, busy and cached
 * adding up to it; all 0 without a pool. */
START_TEST(test_epp_kv_pool_gauges)
{
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    memset(&ss, 0, sizeof(ss));
    memset(&ps, 0, sizeof(ps));
    struct st_buf b;
    st_buf_init(&b);
    render(&b, &ss, &ps, NULL);
    expect_line(b.data, "# TYPE strata:kv_pool_capacity_tokens gauge");
    expect_line(b.data, "# TYPE strata:kv_pool_held_tokens gauge");
    expect_line(b.data, "strata:kv_pool_capacity_tokens 0");
    expect_line(b.data, "strata:kv_pool_held_tokens 0");
    ps.kv_pool_tokens = 8192;
    ps.kv_pool_held = 5000;
    ps.kv_pool_busy = 3000;
    ps.kv_usage = 3000.0 / 8192.0;
    render(&b, &ss, &ps, NULL);
    const char *t = b.data;
    expect_line(t, "strata:kv_pool_capacity_tokens 8192");
    const char *first = first_sample(t, "strata:kv_pool_held_tokens");
    ck_assert_ptr_nonnull(first);
    ck_assert(strncmp(first, "strata:kv_pool_held_tokens 5000\n", 32) == 0);
    expect_line(t, "strata:kv_pool_held_tokens{state=\"busy\"} 3000");
    expect_line(t, "strata:kv_pool_held_tokens{state=\"cached\"} 2000");
    expect_line(t, "strata:kv_cache_usage_ratio 0.366210938");
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_epp_cache_and_models)
{
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    memset(&ss, 0, sizeof(ss));
    memset(&ps, 0, sizeof(ps));
    ps.kv_tokens = 2 * 4 * 4096 + 15;   /* two engines, 4 slots of 4096; a partial block */
    const char *names[] = { "alpha", "be\"ta", "gamma", "delta" };
    const char *const alpha_aliases[] = { "a", "first" };
    struct st_model_status st[4];
    memset(st, 0, sizeof(st));
    st[0].n_loaded = 1;              /* alpha: loaded */
    st[0].n_engines = 1;
    st[1].n_engines = 1;             /* beta: loading on the other engine */
    st[3].n_loaded = 1;              /* delta: loaded, with requests waiting too */
    st[3].n_engines = 1;
    struct st_metrics_resident res[4];
    memset(res, 0, sizeof(res));
    res[0].aliases = alpha_aliases;
    res[0].n_aliases = 2;
    res[0].waiting = 0;
    res[1].waiting = 4;
    res[2].waiting = 0;              /* gamma: neither loaded nor wanted */
    res[3].waiting = 9;
    struct st_metrics_models mm = { .n_models = 4, .names = names, .status = st,
                                    .resident = res };
    mm.pod.block_size = 16;
    mm.pod.max_resident = 2;
    mm.pod.now_unix = 1767225600.25;
    struct st_buf b;
    st_buf_init(&b);
    render(&b, &ss, &ps, &mm);
    const char *t = b.data;
    expect_line(t, "# TYPE vllm:cache_config_info gauge");
    expect_line(t, "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"2048\"} 1");
    expect_line(t, "strata:cache_config_info{block_size=\"16\",num_gpu_blocks=\"2048\"} 1");
    expect_line(t, "# TYPE vllm:lora_requests_info gauge");
    expect_line(t, "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"alpha,a,first,"
                   "delta\",waiting_lora_adapters=\"be\\\"ta\"} 1767225600.250");
    expect_line(t, "# TYPE strata:models_info gauge");
    expect_line(t, "strata:models_info{max_lora=\"2\",running_lora_adapters=\"alpha,a,first,"
                   "delta\",waiting_lora_adapters=\"be\\\"ta\"} 1767225600.250");
    expect_line(t, "# TYPE strata:model_swaps_in_progress gauge");
    expect_line(t, "strata:model_swaps_in_progress 1");

    /* no waiting counts (no scheduler): nothing waits; no models loaded:
     * empty lists, still one series */
    memset(st, 0, sizeof(st));
    mm.resident = NULL;
    mm.pod.block_size = 0;   /* a pool that says nothing: blocks of one token */
    ps.kv_tokens = 100;
    render(&b, &ss, &ps, &mm);
    expect_line(b.data, "strata:models_info{max_lora=\"2\",running_lora_adapters=\"\","
                        "waiting_lora_adapters=\"\"} 1767225600.250");
    expect_line(b.data, "strata:cache_config_info{block_size=\"1\",num_gpu_blocks=\"100\"} 1");
    expect_line(b.data, "strata:model_swaps_in_progress 0");
    st_buf_fini(&b);
}
END_TEST

/* The per-model waiting counts the models-info gauge lists from: kept
 * live by the queue, 0 for models nobody queued for (or beyond the
 * scheduler's models), down again when a job leaves. */
START_TEST(test_epp_sched_models_waiting)
{
    struct st_sched_config cfg;
    struct st_sched *s = NULL;
    struct st_err err = { 0 };
    st_sched_config_defaults(&cfg);
    cfg.log_dispatch = false;
    ck_assert_int_eq(st_sched_new(&cfg, st_clock_real(), &s, &err), ST_OK);
    ck_assert_int_ge(st_sched_add_engine(s, 1, 0), 0);
    struct st_sched_job jobs[3];
    memset(jobs, 0, sizeof(jobs));
    const int32_t models[] = { 2, 0, 2 };
    for (int i = 0; i < 3; i++) {
        jobs[i].model = models[i];
        jobs[i].prompt_tokens = 4;
        ck_assert_int_eq(st_sched_submit(s, &jobs[i], NULL), ST_OK);
    }
    int64_t w[5];
    st_sched_models_waiting(s, w, 5);
    ck_assert_int_eq(w[0], 1);
    ck_assert_int_eq(w[1], 0);
    ck_assert_int_eq(w[2], 2);
    ck_assert_int_eq(w[3], 0);
    ck_assert_int_eq(w[4], 0);
    ck_assert(st_sched_cancel(s, &jobs[2]));
    st_sched_models_waiting(s, w, 3);
    ck_assert_int_eq(w[2], 1);
    ck_assert(st_sched_cancel(s, &jobs[0]));
    ck_assert(st_sched_cancel(s, &jobs[1]));
    st_sched_free(s);
}
END_TEST

static Suite *epp_suite(void)
{
    Suite *s = suite_create("server_metrics_epp");
    TCase *tc = tcase_create("render");
    tcase_add_test(tc, test_epp_load_gauges_total_first);
    tcase_add_test(tc, test_epp_kv_pool_gauges);
    tcase_add_test(tc, test_epp_cache_and_models);
    tcase_add_test(tc, test_epp_sched_models_waiting);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(epp_suite(), CK_FORK);
}
