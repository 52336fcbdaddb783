/* test_config_cli.c -- the command line: commands, every flag of serve,
 * overrides of the config file, bad flags and values, the help texts. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/config.h"
#include "support.h"
#include "test_config.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Apply 'argv' onto fresh defaults; fails the test on error. */
static void apply_ok(struct st_config *c, int argc, const char **argv)
{
    struct st_err err = { 0 };
    bool help = true;

    st_config_init(c);
    ck_assert_msg(st_cli_apply(c, argc, (char **)argv, &help, &err) == ST_OK, "%s", err.msg);
    ck_assert(!help);
}

/* Applying 'argv' fails with exactly 'want' (or containing it, when 'exact'
 * is false). */
static void apply_err(int argc, const char **argv, const char *want, bool exact)
{
    struct st_config c;
    struct st_err err = { 0 };
    bool help = false;
    enum st_status rc;

    st_config_init(&c);
    rc = st_cli_apply(&c, argc, (char **)argv, &help, &err);
    st_config_fini(&c);
    ck_assert_int_eq(rc, ST_ERR_BAD_CONFIG);
    if (exact)
        ck_assert_str_eq(err.msg, want);
    else
        ck_assert_msg(strstr(err.msg, want) != NULL, "\"%s\" lacks \"%s\"", err.msg, want);
}

START_TEST(test_config_cli_commands)
{
    const char *serve[] = { "strata", "serve", "--port", "1" };
    const char *mm[] = { "strata", "make-model", "-o", "x.gguf" };
    const char *v[] = { "strata", "--version" };
    const char *h[] = { "strata", "--help" };
    const char *bad[] = { "strata", "srve" };
    const char *flag[] = { "strata", "-m", "x" };
    struct st_cli cli;
    struct st_err err = { 0 };

    ck_assert_int_eq(st_cli_parse_command(ARGC(serve), (char **)serve, &cli, &err), ST_OK);
    ck_assert_int_eq(cli.command, ST_CLI_SERVE);
    ck_assert_int_eq(cli.argc, 2);
    ck_assert_str_eq(cli.argv[0], "--port");
    ck_assert_int_eq(st_cli_parse_command(ARGC(mm), (char **)mm, &cli, &err), ST_OK);
    ck_assert_int_eq(cli.command, ST_CLI_MAKE_MODEL);
    ck_assert_int_eq(cli.argc, 3);
    ck_assert_str_eq(cli.argv[0], "make-model");
    ck_assert_int_eq(st_cli_parse_command(ARGC(v), (char **)v, &cli, &err), ST_OK);
    ck_assert_int_eq(cli.command, ST_CLI_VERSION);
    ck_assert_int_eq(st_cli_parse_command(ARGC(h), (char **)h, &cli, &err), ST_OK);
    ck_assert_int_eq(cli.command, ST_CLI_HELP);
    ck_assert_int_eq(st_cli_parse_command(1, (char **)h, &cli, &err), ST_ERR_BAD_CONFIG);
    ck_assert_msg(strstr(err.msg, "missing command"), "%s", err.msg);
    ck_assert_int_eq(st_cli_parse_command(ARGC(bad), (char **)bad, &cli, &err), ST_ERR_BAD_CONFIG);
    ck_assert_str_eq(err.msg, "unknown command 'srve'; see 'strata --help'");
    ck_assert_int_eq(st_cli_parse_command(ARGC(flag), (char **)flag, &cli, &err),
                     ST_ERR_BAD_CONFIG);
    ck_assert_msg(strstr(err.msg, "-m: a command comes first"), "%s", err.msg);
    for (const char *const *n = (const char *const[]){ "inspect", "run", "bench", NULL }; *n; n++) {
        const char *a[] = { "strata", *n };
        ck_assert_int_eq(st_cli_parse_command(2, (char **)a, &cli, &err), ST_OK);
        ck_assert_str_eq(cli.name, *n);
    }
}
END_TEST

START_TEST(test_config_cli_every_flag)
{
    const char *argv[] = {
        "-m", "/m/qwen.gguf", "--alias", "q", "--config", "c.yaml", "--host", "0.0.0.0",
        "--port", "9000", "--api-key", "k1", "--body-limit", "64k", "--max-queue", "7",
        "--http-threads", "3", "--cors-origin", "https://a.example",
        "--allowed-hosts", "strata.example", "--metrics-key", "mk", "--sse-keepalive", "30",
        "--responses-store-mb", "0", "--shutdown-timeout", "20", "--max-connections", "9",
        "--max-connections-per-ip", "4", "--header-timeout", "12",
        "--timeout", "30", "--stream-buffer", "1m",
        "--priority-order", "low-first", "--backend", "sim", "--no-webui",
        "--no-slots",
        "--gpus", "0,1,2", "-np", "6", "--batch", "-c", "2048", "--ubatch", "128", "-t", "5",
        "--rope-scaling", "linear", "--rope-scale", "2", "--yarn-orig-ctx", "8192",
        "--batch-mtp", "--mtp-draft", "3", "--spec", "ngram", "--spec-ngram-min", "1",
        "--spec-ngram-max", "6", "--spec-draft", "12", "--scheduler", "fifo", "--aging-divisor", "30",
        "--swap-affinity-bonus", "5", "--give-way-tokens", "4096", "--yields-max", "1",
        "--sim-reply", "<think>x</think>", "--reasoning-format", "none",
        "--reasoning-budget", "256", "-n", "64", "--temp", "0.25", "-s", "7", "--sim-prompt-tps", "10", "--sim-decode-tps", "20.5",
        "--sim-load-seconds", "1.5", "--sim-tokens", "3", "--log-format", "json",
        "--log-level", "warn", "--kv-events", "tcp://*:5557", "--kv-events-host", "10.0.0.7",
        "--kv-block-size", "32", "--state-dir", "/var/lib/strata", "--state-max-rows", "500",
        "--chat-template", "chatml", "--chat-template-file", "t.jinja", "--no-jinja",
        "--slot-save-path", "/var/slots", "--ctx-checkpoints", "7", "-ctk", "q8_0",
        "--cache-type-v", "q8_0", "-kvu", "--tags", "chat, small", "--no-prefill-assistant",
    };
    struct st_config c;

    apply_ok(&c, ARGC(argv), argv);
    ck_assert_str_eq(c.model_path, "/m/qwen.gguf");
    ck_assert_str_eq(c.model_alias, "q");
    ck_assert_str_eq(c.config_path, "c.yaml");
    ck_assert_str_eq(c.host, "0.0.0.0");
    ck_assert_int_eq(c.port, 9000);
    ck_assert_uint_eq(c.n_keys, 1);
    ck_assert_str_eq(c.keys[0].key, "k1");
    ck_assert_str_eq(c.keys[0].name, "cli-key-1");
    ck_assert_uint_eq(c.body_limit, 65536);
    ck_assert_int_eq(c.max_queue, 7);
    ck_assert_int_eq(c.http_threads, 3);
    ck_assert_str_eq(c.cors_origins, "https://a.example");
    ck_assert_str_eq(c.allowed_hosts, "strata.example");
    ck_assert_str_eq(c.metrics_key, "mk");
    ck_assert_int_eq(c.sse_keepalive_s, 30);
    ck_assert_int_eq(c.responses_store_mb, 0);
    ck_assert_int_eq(c.shutdown_timeout_s, 20);
    ck_assert_int_eq(c.max_connections, 9);
    ck_assert_int_eq(c.max_connections_per_ip, 4);
    ck_assert_int_eq(c.timeout_s, 30);
    ck_assert_int_eq(c.header_timeout_s, 12);
    ck_assert_uint_eq(c.stream_buffer, 1u << 20);
    ck_assert_int_eq(c.priority_order, ST_CFG_ORDER_LOW_FIRST);
    ck_assert(!c.webui);
    ck_assert(!c.slots);
    ck_assert_int_eq(c.backend, ST_CFG_BACKEND_SIM);
    ck_assert_int_eq(c.gpus.n, 3);
    ck_assert_int_eq(c.parallel, 6);
    ck_assert(c.batch && c.batch_mtp);
    ck_assert_int_eq(c.ctx_size, 2048);
    ck_assert_int_eq(c.rope_scaling, ST_ROPE_SCALING_LINEAR);
    ck_assert(c.rope_scale == 2 && c.yarn_orig_ctx == 8192);
    ck_assert_int_eq(c.ubatch, 128);
    ck_assert_int_eq(c.cache_type_k, ST_KV_Q8_0);
    ck_assert_int_eq(c.cache_type_v, ST_KV_Q8_0);
    ck_assert(c.kv_unified);
    ck_assert_int_eq(c.threads, 5);
    ck_assert_int_eq(c.mtp_draft, 3);
    ck_assert_int_eq(c.spec, ST_CFG_SPEC_NGRAM);
    ck_assert_int_eq(c.spec_ngram_min, 1);
    ck_assert_int_eq(c.spec_ngram_max, 6);
    ck_assert_int_eq(c.spec_draft, 12);
    ck_assert_int_eq(c.ctx_checkpoints, 7);
    ck_assert_int_eq(c.scheduler, ST_CFG_SCHED_FIFO);
    ck_assert(c.aging_divisor_s == 30);
    ck_assert_int_eq(c.swap_affinity_bonus, 5);
    ck_assert_int_eq(c.give_way_tokens, 4096);
    ck_assert_int_eq(c.yields_max, 1);
    ck_assert(c.sim_prompt_tps == 10 && c.sim_decode_tps == 20.5 && c.sim_load_seconds == 1.5);
    ck_assert_int_eq(c.sim_tokens, 3);
    ck_assert_str_eq(c.sim_reply, "<think>x</think>");
    ck_assert_int_eq(c.reasoning_format, ST_CFG_REASONING_NONE);
    ck_assert_int_eq(c.reasoning_budget, 256);
    ck_assert_int_eq(c.n_predict, 64);
    ck_assert(c.temp == 0.25 && c.seed == 7);
    ck_assert_int_eq(c.log_format, ST_LOG_JSON);
    ck_assert_int_eq(c.log_level, ST_LOG_WARN);
    ck_assert_str_eq(c.kv_events, "tcp://*:5557");
    ck_assert_str_eq(c.kv_events_host, "10.0.0.7");
    ck_assert_int_eq(c.kv_block_size, 32);
    ck_assert_str_eq(c.state_dir, "/var/lib/strata");
    ck_assert_int_eq(c.state_max_rows, 500);
    ck_assert_str_eq(c.chat_template, "chatml");
    ck_assert_str_eq(c.chat_template_file, "t.jinja");
    ck_assert(!c.jinja);
    ck_assert_str_eq(c.model_tags, "chat, small");
    ck_assert(!c.prefill_assistant);
    ck_assert_str_eq(c.slot_save_path, "/var/slots");
    for (int o = 0; o < ST_OPT_COUNT; o++)
        ck_assert_msg(st_config_given(&c, (enum st_opt)o), "option %d not marked given", o);
    st_config_fini(&c);
}
END_TEST

/* --cors-origin(s) again adds to the list; the limits flags set theirs. */
START_TEST(test_config_cli_cors_repeats_and_limits)
{
    const char *a[] = { "--cors-origin", "https://a.example", "--cors-origins", "localhost",
                        "--cors-origin=http://b.example:3000", "--max-connections", "7",
                        "-to", "9", "--stream-buffer", "128k" };
    struct st_config c;

    apply_ok(&c, ARGC(a), a);
    ck_assert_str_eq(c.cors_origins, "https://a.example,localhost,http://b.example:3000");
    ck_assert_int_eq(c.max_connections, 7);
    ck_assert_int_eq(c.timeout_s, 9);
    ck_assert_uint_eq(c.stream_buffer, 128u << 10);
    st_config_fini(&c);
}
END_TEST

START_TEST(test_config_cli_forms)
{
    const char *a[] = { "--port=0", "--batch", "--no-batch", "--api-key", "x", "--api-key=y",
                        "--gpus=3", "--aging-divisor=0", "--no-batch-mtp" };
    const char *b[] = { "--model=/x/Model.GGUF" };
    struct st_config c;
    struct st_err err = { 0 };

    apply_ok(&c, ARGC(a), a);
    ck_assert_int_eq(c.port, 0);
    ck_assert(!c.batch && st_config_given(&c, ST_OPT_BATCH));
    ck_assert(!st_config_given(&c, ST_OPT_HOST));
    ck_assert_uint_eq(c.n_keys, 2);
    ck_assert_str_eq(c.keys[1].name, "cli-key-2");
    ck_assert_str_eq(c.keys[1].key, "y");
    ck_assert(c.aging_divisor_s == 0);
    st_config_fini(&c);

    apply_ok(&c, ARGC(b), b);
    ck_assert_int_eq(st_config_resolve(&c, &err), ST_OK);
    ck_assert_str_eq(c.models[0].name, "Model");
    ck_assert_str_eq(c.models[0].path, "/x/Model.GGUF");
    ck_assert_int_eq(c.models[0].backend, ST_CFG_BACKEND_CPU);
    st_config_fini(&c);
}
END_TEST

START_TEST(test_config_cli_unknown_flags)
{
    const char *a[] = { "--bogus" };
    const char *b[] = { "--port", "1", "--prot", "2" };
    const char *c[] = { "serve" };
    const char *d[] = { "--no-port" };
    const char *e[] = { "-x=1" };

    apply_err(ARGC(a), a, "--bogus: unknown flag; see 'strata serve --help'", true);
    apply_err(ARGC(b), b, "--prot: unknown flag (did you mean --port?); see 'strata serve --help'",
              true);
    apply_err(ARGC(c), c, "unexpected argument 'serve'; see 'strata serve --help'", true);
    apply_err(ARGC(d), d, "--no-port: unknown flag", false);
    apply_err(ARGC(e), e, "-x: unknown flag", false);
}
END_TEST

START_TEST(test_config_cli_bad_values)
{
    static const struct { const char *flag, *value, *want; } cases[] = {
        { "--port", "abc", "--port: expected an integer 0..65535, got \"abc\"" },
        { "--port", "65536", "--port: expected an integer 0..65535, got \"65536\"" },
        { "--port", "", "--port: expected an integer 0..65535, got \"\"" },
        { "--port", " 80", "--port: expected an integer 0..65535, got \" 80\"" },
        { "-np", "0", "-np: expected an integer 1..1024, got \"0\"" },
        { "--parallel", "2x", "--parallel: expected an integer 1..1024, got \"2x\"" },
        { "--seed", "-2", "--seed: expected an integer -1..4294967295, got \"-2\"" },
        { "-s", "4294967296", "got \"4294967296\"" },
        { "--temp", "-0.5", "--temp: expected a number >= 0, got \"-0.5\"" },
        { "-c", "-1", "-c: expected an integer 1..2147483647, got \"-1\"" },
        { "--backend", "gpu", "--backend: expected one of auto, sim, cpu, cuda, got \"gpu\"" },
        { "--gpus", "0,0", "--gpus: expected a list of up to 16 distinct device ids 0..1023 (e.g. "
                           "0,1), got \"0,0\"" },
        { "--gpus", "0,,1", "got \"0,,1\"" },
        { "--gpus", "1024", "got \"1024\"" },
        { "--body-limit", "8x", "--body-limit: expected a size in bytes up to 16g (e.g. 65536, "
                                "512k, 8m), got \"8x\"" },
        { "--body-limit", "99999999999999999999", "got \"99999999999999999999\"" },
        { "--log-level", "loud", "--log-level: expected one of debug, info, warn, error, got \"loud\"" },
        { "--log-format", "xml", "--log-format: expected one of text, json, got \"xml\"" },
        { "--priority-order", "up", "--priority-order: expected one of high-first, low-first, got \"up\"" },
        { "--scheduler", "lifo", "--scheduler: expected one of serial, fifo, got \"lifo\"" },
        { "--aging-divisor", "-1", "--aging-divisor: expected a number >= 0, got \"-1\"" },
        { "--aging-divisor", "nan", "got \"nan\"" },
        { "--aging-divisor", "inf", "got \"inf\"" },
        { "--swap-affinity-bonus", "100", "--swap-affinity-bonus: expected an integer 0..99, got \"100\"" },
        { "--sim-prompt-tps", "0", "--sim-prompt-tps: expected a number > 0, got \"0\"" },
        { "--sim-tokens", "0", "--sim-tokens: expected a positive integer, got \"0\"" },
        { "--mtp-draft", "5", "--mtp-draft: expected an integer 1..4, got \"5\"" },
        { "--max-queue", "-1", "--max-queue: expected a non-negative integer, got \"-1\"" },
        { "--give-way-tokens", "0", "--give-way-tokens: expected a positive integer, got \"0\"" },
        { "--host", "", "--host: expected a non-empty string, got \"\"" },
        { "--api-key", "", "--api-key: expected a non-empty key, got \"\"" },
        { "-t", "1025", "-t: expected an integer 0..1024, got \"1025\"" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *argv[] = { cases[i].flag, cases[i].value };
        bool exact = strncmp(cases[i].want, "got", 3) != 0;
        apply_err(2, argv, cases[i].want, exact);
    }
}
END_TEST

START_TEST(test_config_cli_missing_or_extra_values)
{
    const char *a[] = { "--port" };
    const char *b[] = { "--batch=yes" };
    const char *c[] = { "-m" };
    const char *d[] = { "--host", "h", "-" };

    apply_err(ARGC(a), a, "--port: missing value (expected an integer 0..65535)", true);
    apply_err(ARGC(b), b, "--batch: takes no value (got yes)", true);
    apply_err(ARGC(c), c, "-m: missing value (expected a non-empty string)", true);
    apply_err(ARGC(d), d, "unexpected argument '-'", false);
}
END_TEST

START_TEST(test_config_cli_help_flag)
{
    const char *a[] = { "--port", "1", "-h", "--bogus" };
    struct st_config c;
    struct st_err err = { 0 };
    bool help = false;

    ck_assert_int_eq(st_config_from_args(&c, ARGC(a), (char **)a, &help, &err), ST_OK);
    ck_assert(help);
    st_config_fini(&c);
}
END_TEST

/* Write 'text' to dir/name; returns the path in 'out'. */
static void write_file(const char *dir, const char *name, const char *text, char *out, size_t cap)
{
    FILE *f;
    snprintf(out, cap, "%s/%s", dir, name);
    f = fopen(out, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_config_cli_overrides_the_file)
{
    char dir[512], path[600];
    struct st_config c;
    struct st_err err = { 0 };
    bool help;

    support_tmpdir(dir, sizeof(dir));
    write_file(dir, "s.yaml",
               "port: 9000\nhost: 10.0.0.1\nparallel: 2\nbatch: true\nbackend: sim\n"
               "models:\n  - name: a\n    parallel: 8\n  - name: b\n"
               "api_keys:\n  - {name: f, key: kf}\n", path, sizeof(path));
    {
        const char *argv[] = { "--config", path, "--port", "9100", "--api-key", "kc" };
        ck_assert_msg(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err) == ST_OK,
                      "%s", err.msg);
    }
    ck_assert_int_eq(c.port, 9100);                 /* the flag wins */
    ck_assert_str_eq(c.host, "10.0.0.1");           /* the file where no flag */
    ck_assert_int_eq(c.models[0].parallel, 8);      /* the model's own value */
    ck_assert_int_eq(c.models[1].parallel, 2);      /* inherited from the file */
    ck_assert_uint_eq(c.n_keys, 2);                 /* --api-key adds to the file's keys */
    ck_assert_str_eq(c.keys[0].name, "f");
    ck_assert_str_eq(c.keys[1].key, "kc");
    ck_assert_int_eq(c.line[ST_OPT_HOST], 2);
    st_config_fini(&c);
    {
        const char *argv[] = { "--config", path, "-np", "3" };
        ck_assert_int_eq(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err), ST_OK);
    }
    ck_assert_int_eq(c.models[0].parallel, 3);      /* a flag overrides every model */
    ck_assert_int_eq(c.models[1].parallel, 3);
    st_config_fini(&c);
    {
        const char *argv[] = { "--config", path, "-m", "/m/z.gguf", "--backend", "sim" };
        ck_assert_int_eq(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err), ST_OK);
    }
    ck_assert_uint_eq(c.n_models, 1);               /* -m replaces the file's models */
    ck_assert_str_eq(c.models[0].name, "z");
    ck_assert_uint_eq(c.n_warnings, 1);
    ck_assert_msg(strstr(c.warnings[0], "--model /m/z.gguf replaces the 2 model(s)"), "%s",
                  c.warnings[0]);
    st_config_fini(&c);
    {
        const char *argv[] = { "--config", path, "--alias", "x" };
        ck_assert_int_eq(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err),
                         ST_ERR_BAD_CONFIG);
        ck_assert_msg(strstr(err.msg, "--alias: names the model of --model"), "%s", err.msg);
    }
    support_rmtree(dir);
}
END_TEST

/* llama-server's --alias list and --tags: sorted, blanks and repeats
 * dropped; the first alias is the model's id, the others its aliases. */
START_TEST(test_config_cli_alias_list_and_tags)
{
    struct st_config c;
    struct st_err err = { 0 };
    bool help;
    {
        const char *argv[] = { "-m", "/m/x.gguf", "--backend", "sim", "--alias",
                               " tinyllama-2, fim,,code,fim ", "--tags", "small,chat" };
        ck_assert_int_eq(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err), ST_OK);
    }
    ck_assert_str_eq(c.models[0].name, "code");
    ck_assert_uint_eq(c.models[0].n_aliases, 2);
    ck_assert_str_eq(c.models[0].aliases[0], "fim");
    ck_assert_str_eq(c.models[0].aliases[1], "tinyllama-2");
    ck_assert_uint_eq(c.models[0].n_tags, 2);
    ck_assert_str_eq(c.models[0].tags[0], "chat");
    ck_assert_str_eq(c.models[0].tags[1], "small");
    st_config_fini(&c);
    {
        const char *argv[] = { "--backend", "sim", "--alias", " , " };
        ck_assert_int_eq(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err),
                         ST_ERR_BAD_CONFIG);
        ck_assert_msg(strstr(err.msg, "--alias: expected a name"), "%s", err.msg);
    }
}
END_TEST

START_TEST(test_config_cli_flags_checked_before_the_file)
{
    const char *a[] = { "--config", "/nonexistent.yaml", "--port", "abc" };
    const char *b[] = { "--config", "/nonexistent.yaml" };
    char dir[512], path[600];
    struct st_config c;
    struct st_err err = { 0 };
    bool help;

    ck_assert_int_eq(st_config_from_args(&c, ARGC(a), (char **)a, &help, &err), ST_ERR_BAD_CONFIG);
    ck_assert_str_eq(err.msg, "--port: expected an integer 0..65535, got \"abc\"");
    ck_assert_int_eq(st_config_from_args(&c, ARGC(b), (char **)b, &help, &err), ST_ERR_IO);
    ck_assert_msg(strstr(err.msg, "--config: cannot open /nonexistent.yaml"), "%s", err.msg);

    support_tmpdir(dir, sizeof(dir));
    write_file(dir, "b.yaml", "port: 1\nhost: x\nprot: 2\n", path, sizeof(path));
    {
        const char *argv[] = { "--config", path };
        ck_assert_int_eq(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err),
                         ST_ERR_BAD_CONFIG);
        ck_assert_msg(strstr(err.msg, "b.yaml:3: unknown key \"prot\""), "%s", err.msg);
    }
    support_rmtree(dir);
}
END_TEST

/* An -np above 1 implies --batch (llama-server batches by default); an
 * explicit --no-batch / -nocb keeps one slot and says so; -np 1 and the
 * default parallel do not batch. */
START_TEST(test_config_cli_parallel_implies_batch)
{
    const char *a[] = { "-np", "8" };
    const char *b[] = { "-np", "8", "--batch" };
    const char *nb[] = { "-np", "8", "-nocb" };
    const char *one[] = { "-np", "1" };
    const char *none[] = { "--port", "0" };
    struct st_config c;
    struct st_err err = { 0 };
    bool help;

    ck_assert_int_eq(st_config_from_args(&c, ARGC(a), (char **)a, &help, &err), ST_OK);
    ck_assert(c.batch && c.batch_implied);
    ck_assert_uint_eq(c.n_warnings, 0);
    ck_assert_int_eq(st_config_slot_ctx(&c, &c.models[0]), ST_CFG_SLOT_CTX);
    st_config_fini(&c);
    ck_assert_int_eq(st_config_from_args(&c, ARGC(b), (char **)b, &help, &err), ST_OK);
    ck_assert(c.batch && !c.batch_implied);
    ck_assert_uint_eq(c.n_warnings, 0);
    ck_assert_int_eq(c.models[0].parallel, 8);
    st_config_fini(&c);
    ck_assert_int_eq(st_config_from_args(&c, ARGC(nb), (char **)nb, &help, &err), ST_OK);
    ck_assert(!c.batch && !c.batch_implied);
    ck_assert_uint_eq(c.n_warnings, 1);
    ck_assert_msg(strstr(c.warnings[0], "with batching off"), "%s", c.warnings[0]);
    st_config_fini(&c);
    ck_assert_int_eq(st_config_from_args(&c, ARGC(one), (char **)one, &help, &err), ST_OK);
    ck_assert(!c.batch);
    st_config_fini(&c);
    ck_assert_int_eq(st_config_from_args(&c, ARGC(none), (char **)none, &help, &err), ST_OK);
    ck_assert(!c.batch);   /* the default parallel 4 is not a choice made */
    st_config_fini(&c);

    char dir[512], path[600];
    support_tmpdir(dir, sizeof(dir));
    write_file(dir, "np.yaml", "parallel: 2\nbackend: sim\n", path, sizeof(path));
    {
        const char *argv[] = { "--config", path };
        ck_assert_int_eq(st_config_from_args(&c, ARGC(argv), (char **)argv, &help, &err), ST_OK);
    }
    ck_assert(c.batch && c.batch_implied);   /* the file's key is a choice too */
    st_config_fini(&c);
    support_rmtree(dir);
}
END_TEST

/* --rope-scaling / --rope-scale / --yarn-orig-ctx: parsed, checked,
 * inherited by the model, and a factor with scaling none refused. */
START_TEST(test_config_cli_rope_flags)
{
    const char *a[] = { "-m", "/m/q.gguf", "--rope-scaling", "yarn", "--rope-scale", "4",
                        "--yarn-orig-ctx", "32768", "-c", "131072" };
    const char *none[] = { "-m", "/m/q.gguf" };
    const char *clash[] = { "-m", "/m/q.gguf", "--rope-scaling", "none", "--rope-scale", "2" };
    struct st_config c;
    struct st_err err = { 0 };
    bool help;

    ck_assert_msg(st_config_from_args(&c, ARGC(a), (char **)a, &help, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_int_eq(c.rope_scaling, ST_ROPE_SCALING_YARN);
    ck_assert(c.rope_scale == 4.0);
    ck_assert_int_eq(c.yarn_orig_ctx, 32768);
    ck_assert_int_eq(c.models[0].rope_scaling, ST_ROPE_SCALING_YARN);
    ck_assert(c.models[0].rope_scale == 4.0 && c.models[0].yarn_orig_ctx == 32768);
    st_config_fini(&c);
    ck_assert_int_eq(st_config_from_args(&c, ARGC(none), (char **)none, &help, &err), ST_OK);
    ck_assert_int_eq(c.models[0].rope_scaling, ST_ROPE_SCALING_MODEL);   /* the file's */
    ck_assert(c.models[0].rope_scale == 0 && c.models[0].yarn_orig_ctx == 0);
    st_config_fini(&c);
    ck_assert_int_eq(st_config_from_args(&c, ARGC(clash), (char **)clash, &help, &err),
                     ST_ERR_BAD_CONFIG);
    ck_assert_msg(strstr(err.msg, "rope_scale 2 needs rope_scaling linear or yarn"), "%s",
                  err.msg);
    st_config_fini(&c);

    static const struct { const char *flag, *value, *want; } bad[] = {
        { "--rope-scaling", "ntk", "--rope-scaling: expected one of model, none, linear, yarn, "
                                   "got \"ntk\"" },
        { "--rope-scale", "0", "--rope-scale: expected a number > 0, got \"0\"" },
        { "--rope-scale", "-4", "--rope-scale: expected a number > 0, got \"-4\"" },
        { "--rope-scale", "inf", "--rope-scale: expected a number > 0, got \"inf\"" },
        { "--yarn-orig-ctx", "0", "--yarn-orig-ctx: expected an integer 1..2147483647, got \"0\"" },
        { "--yarn-orig-ctx", "32k", "--yarn-orig-ctx: expected an integer 1..2147483647, got "
                                    "\"32k\"" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *argv[] = { bad[i].flag, bad[i].value };
        apply_err(2, argv, bad[i].want, true);
    }
}
END_TEST

/* --cache-type-k / -ctk, --cache-type-v / -ctv: f16 by default, q8_0, f32,
 * bf16, and llama-server's other types refused naming the four there are;
 * the cuda backend takes q8_0 (f32 / bf16 are refused at its model load). */
START_TEST(test_config_cli_cache_type_flags)
{
    const char *shrt[] = { "-m", "/m/q.gguf", "-ctk", "q8_0" };
    const char *lng[] = { "-m", "/m/q.gguf", "--cache-type-k", "f16", "--cache-type-v", "q8_0" };
    const char *none[] = { "-m", "/m/q.gguf" };
    struct st_config c;
    struct st_err err = { 0 };
    bool help;

    ck_assert_msg(st_config_from_args(&c, ARGC(shrt), (char **)shrt, &help, &err) == ST_OK,
                  "%s", err.msg);
    ck_assert_int_eq(c.cache_type_k, ST_KV_Q8_0);
    ck_assert_int_eq(c.cache_type_v, ST_KV_F16);
    st_config_fini(&c);
    ck_assert_msg(st_config_from_args(&c, ARGC(lng), (char **)lng, &help, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_int_eq(c.cache_type_k, ST_KV_F16);
    ck_assert_int_eq(c.cache_type_v, ST_KV_Q8_0);
    st_config_fini(&c);
    ck_assert_int_eq(st_config_from_args(&c, ARGC(none), (char **)none, &help, &err), ST_OK);
    ck_assert_int_eq(c.cache_type_k, ST_KV_F16);
    ck_assert_int_eq(c.cache_type_v, ST_KV_F16);
    ck_assert_int_eq(c.ctx_checkpoints, 3);
    st_config_fini(&c);
    /* llama-server's short form of --ctx-checkpoints */
    const char *ckpt[] = { "-m", "/m/q.gguf", "-ctxcp", "5" };
    ck_assert_msg(st_config_from_args(&c, ARGC(ckpt), (char **)ckpt, &help, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_int_eq(c.ctx_checkpoints, 5);
    st_config_fini(&c);
    const char *fb[] = { "-m", "/m/q.gguf", "-ctk", "bf16", "--cache-type-v", "f32" };
    ck_assert_msg(st_config_from_args(&c, ARGC(fb), (char **)fb, &help, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_int_eq(c.cache_type_k, ST_KV_BF16);
    ck_assert_int_eq(c.cache_type_v, ST_KV_F32);
    st_config_fini(&c);

    static const char *const other[] = { "F32", "BF16", "q4_0", "q4_1", "iq4_nl", "q5_0",
                                         "q5_1", "Q8_0", "" };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        char want[96];
        snprintf(want, sizeof(want), "expected one of f16, q8_0, f32, bf16, got \"%s\"", other[i]);
        const char *k[] = { "-ctk", other[i] }, *v[] = { "--cache-type-v", other[i] };
        apply_err(2, k, want, false);
        apply_err(2, v, want, false);
    }
    if (st_config_cuda_built()) {   /* the cuda backend has q8_0 too */
        const char *cu[] = { "-m", "/m/q.gguf", "--backend", "cuda", "-ctv", "q8_0" };
        ck_assert_msg(st_config_from_args(&c, ARGC(cu), (char **)cu, &help, &err) == ST_OK,
                      "%s", err.msg);
        ck_assert_int_eq(c.cache_type_v, ST_KV_Q8_0);
        st_config_fini(&c);
    }
}
END_TEST

START_TEST(test_config_cli_cuda_flag)
{
    const char *a[] = { "--backend", "cuda" };
    struct st_config c;
    struct st_err err = { 0 };
    bool help;
    enum st_status rc = st_config_from_args(&c, ARGC(a), (char **)a, &help, &err);

    if (st_config_cuda_built()) {
        ck_assert_int_eq(rc, ST_OK);
        ck_assert_int_eq(c.models[0].backend, ST_CFG_BACKEND_CUDA);
        st_config_fini(&c);
    } else {
        ck_assert_int_eq(rc, ST_ERR_BAD_CONFIG);
        ck_assert_msg(strstr(err.msg, "--backend: cuda: this build has no CUDA backend"), "%s",
                      err.msg);
    }
}
END_TEST

START_TEST(test_config_cli_help_texts)
{
    struct st_buf b;

    st_buf_init(&b);
    ck_assert_int_eq(st_cli_serve_help(&b), ST_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "usage: strata serve"));
    static const char *const flags[] = {
        "-m, --model PATH", "-a, --alias NAME", "--config FILE", "--host HOST", "--port N",
        "--api-key KEY", "--body-limit BYTES", "--max-queue N", "--http-threads N",
        "--cors-origins LIST", "--sse-keepalive S", "--responses-store-mb N",
        "--shutdown-timeout S",
        "--priority-order high-first|low-first", "--backend auto|sim|cpu|cuda", "--gpus LIST",
        "-np, --parallel N", "--batch ", "-c, --ctx-size N", "--ubatch N", "-t, --threads N",
        "--rope-scaling model|none|linear|yarn", "--rope-scale N", "--yarn-orig-ctx N",
        "-ctk, --cache-type-k f16|q8_0", "-ctv, --cache-type-v f16|q8_0",
        "--batch-mtp ", "--mtp-draft N", "--spec none|ngram", "--spec-ngram-min N",
        "--spec-ngram-max N", "--spec-draft N", "--scheduler serial|fifo", "--aging-divisor S",
        "--swap-affinity-bonus N", "--give-way-tokens N", "--yields-max N", "--sim-prompt-tps N",
        "--sim-decode-tps N", "--sim-load-seconds S", "--sim-tokens N", "--sim-reply TEXT",
        "--reasoning-format deepseek|none",
        "--log-format text|json", "--log-level debug|info|warn|error", "-h, --help",
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        ck_assert_msg(strstr(b.data, flags[i]), "serve --help lacks \"%s\"", flags[i]);
    /* Every flag line carries its default, rendered from the real defaults. */
    ck_assert_ptr_nonnull(strstr(b.data, "default: 8080; config: port\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: 127.0.0.1"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: 8m; config: body_limit"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: high-first"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: 16384"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: model; config: rope_scaling\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: model; config: rope_scale\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: model; config: yarn_orig_ctx\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: f16; config: cache_type_k\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: f16; config: cache_type_v\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: localhost; config: cors_origins\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: 15; config: sse_keepalive\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: 64; config: responses_store_mb\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "default: 60; config: routing.scheduler.settings.serial.agingDivisor"));
    size_t n_defaults = 0;
    for (const char *p = b.data; (p = strstr(p, " default: ")) != NULL; p++)
        n_defaults++;
    ck_assert_uint_eq(n_defaults, ST_OPT_COUNT);
    st_buf_reset(&b);
    ck_assert_int_eq(st_cli_help(&b), ST_OK);
    for (const char *const *n = (const char *const[]){ "serve", "make-model", "inspect", "run",
                                                       "bench", "--version", NULL }; *n; n++)
        ck_assert_msg(strstr(b.data, *n), "strata --help lacks %s", *n);
    st_buf_fini(&b);
}
END_TEST

/* llama-server's flags (cli_compat.c): the ones with a Strata meaning
 * set it, the others are accepted with one warning each; --lora (left out
 * on purpose) stays an unknown flag. */
START_TEST(test_config_cli_llama_server_flags)
{
    const char *a[] = { "--temp", "0.8", "--seed=42", "--cont-batching", "-ub", "64",
                        "--no-slots", "-fa", "on", "--verbose", "-np", "2" };
    const char *b[] = { "--batch", "-nocb" };
    const char *c[] = { "--temp" };
    const char *d[] = { "--offline=1" };
    const char *e[] = { "--lora", "x.gguf" };
    const char *f[] = { "--reasoning", "off" };
    const char *g[] = { "-rea", "maybe" };
    const char *h[] = { "-kvu" };   /* a llama-server flag that is ours too: no warning */
    struct st_config cfg;
    struct st_err err = { 0 };
    bool help;

    ck_assert_int_eq(st_config_from_args(&cfg, ARGC(a), (char **)a, &help, &err), ST_OK);
    ck_assert(cfg.batch);
    ck_assert_int_eq(cfg.ubatch, 64);
    ck_assert_int_eq(cfg.log_level, ST_LOG_DEBUG);
    ck_assert(!cfg.slots);   /* --no-slots is ours now: no warning */
    ck_assert(cfg.temp == 0.8 && cfg.seed == 42);   /* ours now: no warning */
    ck_assert_uint_eq(cfg.n_warnings, 1);
    ck_assert_msg(strstr(cfg.warnings[0], "-fa on: llama-server flag accepted"), "%s",
                  cfg.warnings[0]);
    st_config_fini(&cfg);
    ck_assert_int_eq(st_config_from_args(&cfg, ARGC(b), (char **)b, &help, &err), ST_OK);
    ck_assert(!cfg.batch);
    st_config_fini(&cfg);
    apply_err(ARGC(c), c, "--temp: missing value", false);
    apply_err(ARGC(d), d, "--offline: takes no value (got 1)", false);
    apply_err(ARGC(e), e, "--lora: unknown flag", false);
    ck_assert_int_eq(st_config_from_args(&cfg, ARGC(h), (char **)h, &help, &err), ST_OK);
    ck_assert(cfg.kv_unified);
    ck_assert_uint_eq(cfg.n_warnings, 0);
    st_config_fini(&cfg);
    ck_assert_int_eq(st_config_from_args(&cfg, ARGC(f), (char **)f, &help, &err), ST_OK);
    ck_assert_int_eq(cfg.reasoning_budget, 0);
    st_config_fini(&cfg);
    apply_err(ARGC(g), g, "-rea: expected on, off or auto, got \"maybe\"", false);
}
END_TEST

TCase *config_cli_tcase(void)
{
    TCase *t = tcase_create("cli");
    tcase_add_test(t, test_config_cli_commands);
    tcase_add_test(t, test_config_cli_every_flag);
    tcase_add_test(t, test_config_cli_forms);
    tcase_add_test(t, test_config_cli_cors_repeats_and_limits);
    tcase_add_test(t, test_config_cli_unknown_flags);
    tcase_add_test(t, test_config_cli_bad_values);
    tcase_add_test(t, test_config_cli_missing_or_extra_values);
    tcase_add_test(t, test_config_cli_help_flag);
    tcase_add_test(t, test_config_cli_overrides_the_file);
    tcase_add_test(t, test_config_cli_alias_list_and_tags);
    tcase_add_test(t, test_config_cli_flags_checked_before_the_file);
    tcase_add_test(t, test_config_cli_parallel_implies_batch);
    tcase_add_test(t, test_config_cli_cuda_flag);
    tcase_add_test(t, test_config_cli_rope_flags);
    tcase_add_test(t, test_config_cli_cache_type_flags);
    tcase_add_test(t, test_config_cli_help_texts);
    tcase_add_test(t, test_config_cli_llama_server_flags);
    return t;
}
