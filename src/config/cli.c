/* cli.c -- the command line: which command, serve's flags, the help texts.
 *
 * Flags follow llama-server: long names with one value each ("--port 8080"
 * or "--port=8080"), a few short ones (-m, -a, -c, -np, -t), boolean flags
 * without a value and their "--no-" forms (--batch / --no-batch), and
 * --api-key repeatable. Nothing here prints or exits: errors come back as
 * ST_ERR_BAD_CONFIG with one line naming the flag, which main prints after
 * "strata: " before exiting with status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strata/out.h"

struct command {
    const char *name;
    enum st_cli_command command;
    const char *help;
};

static const struct command commands[] = {
    { "serve", ST_CLI_SERVE, "run the OpenAI-compatible HTTP server (strata serve --help)" },
    { "make-model", ST_CLI_MAKE_MODEL, "write a small synthetic GGUF model (its text is noise)" },
    { "inspect", ST_CLI_INSPECT, "print what a GGUF file holds" },
    { "run", ST_CLI_RUN, "generate from one prompt on the command line" },
    { "bench", ST_CLI_BENCH, "measure prompt and decode speed" },
};

enum st_status st_cli_parse_command(int argc, char **argv, struct st_cli *out, struct st_err *err)
{
    const char *arg = argc > 1 ? argv[1] : NULL;

    memset(out, 0, sizeof(*out));
    if (arg == NULL)
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "missing command (serve, make-model, inspect, run, bench); "
                          "see 'strata --help'");
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0 || strcmp(arg, "help") == 0) {
        out->command = ST_CLI_HELP;
        out->name = "help";
        return ST_OK;
    }
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "version") == 0) {
        out->command = ST_CLI_VERSION;
        out->name = "version";
        return ST_OK;
    }
    for (size_t i = 0; i < ST_ARRAY_LEN(commands); i++) {
        if (strcmp(arg, commands[i].name) != 0)
            continue;
        out->command = commands[i].command;
        out->name = commands[i].name;
        /* serve: its flags; the others: argv[0] = the command's name. */
        out->argc = commands[i].command == ST_CLI_SERVE ? argc - 2 : argc - 1;
        out->argv = commands[i].command == ST_CLI_SERVE ? argv + 2 : argv + 1;
        return ST_OK;
    }
    if (arg[0] == '-')
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "%s: a command comes first (e.g. strata serve %s ...); "
                          "see 'strata --help'", arg, arg);
    return st_err_set(err, ST_ERR_BAD_CONFIG, "unknown command '%s'; see 'strata --help'", arg);
}

/* ---- serve's flags --------------------------------------------------- */

static bool name_is(const char *flag, const char *arg, size_t len)
{
    return flag != NULL && strlen(flag) == len && strncmp(flag, arg, len) == 0;
}

/* The flag 'arg' (its first 'len' bytes) names; *negated for "--no-x". */
static const struct st_cfg_def *find_flag(const char *arg, size_t len, bool *negated)
{
    *negated = false;
    for (size_t i = 0; i < ST_OPT_COUNT; i++) {
        const struct st_cfg_def *d = &st_cfg_opts[i];
        if (name_is(d->lng, arg, len) || name_is(d->shrt, arg, len))
            return d;
    }
    if (len > 5 && strncmp(arg, "--no-", 5) == 0) {
        for (size_t i = 0; i < ST_OPT_COUNT; i++) {
            const struct st_cfg_def *d = &st_cfg_opts[i];
            if (d->kind == ST_CFG_FLAG && name_is(d->lng + 2, arg + 5, len - 5)) {
                *negated = true;
                return d;
            }
        }
    }
    return NULL;
}

static enum st_status unknown_flag(const char *arg, size_t len, struct st_err *err)
{
    char typed[64], best[64] = "";
    size_t best_d = 3;

    snprintf(typed, sizeof(typed), "%.*s", (int)ST_MIN(len, sizeof(typed) - 1), arg);
    for (size_t i = 0; i < ST_OPT_COUNT; i++) {
        size_t d = st_cfg_edit_distance(typed, st_cfg_opts[i].lng);
        if (d < best_d) {
            best_d = d;
            snprintf(best, sizeof(best), "%s", st_cfg_opts[i].lng);
        }
    }
    return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: unknown flag%s%s%s; see 'strata serve --help'",
                      typed, best[0] ? " (did you mean " : "", best, best[0] ? "?)" : "");
}

/* Apply one flag whose value is 'value' (NULL for none). 'typed' is the
 * flag as the user wrote it, for messages. */
static enum st_status apply_one(struct st_config *c, const struct st_cfg_def *d, bool negated,
                                const char *typed, const char *value, struct st_err *err)
{
    char why[160], got[80];
    enum st_status rc;

    if (d->kind == ST_CFG_FLAG) {
        if (value != NULL)
            return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: takes no value (got %s)", typed,
                              value);
        *(bool *)(void *)((char *)c + d->off) = !negated;
    } else {
        if (value == NULL) {
            st_cfg_expected(d, why, sizeof(why));
            return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: missing value (expected %s)", typed,
                              why);
        }
        rc = st_cfg_set(d, c, value, why, sizeof(why));
        if (rc == ST_ERR_NOMEM)
            return st_err_set(err, rc, "%s: out of memory", typed);
        if (rc != ST_OK) {
            st_cfg_quote(value, got, sizeof(got));
            return st_err_set(err, rc, "%s: expected %s, got %s", typed, why, got);
        }
    }
    c->given[d->id] = true;
    return ST_OK;
}

/* A llama-server flag (cli_compat.c): set the setting it stands for, or
 * accept it with a warning. *i moves past its value. */
static enum st_status apply_compat(struct st_config *c, const struct st_cli_compat *x,
                                   const char *typed, const char *eq_value, int argc,
                                   char **argv, int *i, struct st_err *err)
{
    const char *value = eq_value;

    if (x->takes_value && value == NULL) {
        if (*i + 1 >= argc)
            return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: missing value", typed);
        value = argv[++*i];
    } else if (!x->takes_value && value != NULL) {
        return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: takes no value (got %s)", typed, value);
    }
    if (x->opt == ST_OPT_COUNT) {
        if (st_cfg_warn(c, "%s%s%s: llama-server flag accepted, no effect here: %s", typed,
                        value ? " " : "", value ? value : "", x->why) != ST_OK)
            return st_err_set(err, ST_ERR_NOMEM, "%s: out of memory", typed);
        return ST_OK;
    }
    const struct st_cfg_def *d = &st_cfg_opts[x->opt];
    if (d->kind == ST_CFG_FLAG)
        return apply_one(c, d, strcmp(x->value, "false") == 0, typed, NULL, err);
    const char *ours = st_cli_compat_value(x, value);
    if (ours == NULL) {
        char got[80];
        st_cfg_quote(value, got, sizeof(got));
        return st_err_set(err, ST_ERR_BAD_CONFIG, "%s: expected on, off or auto, got %s", typed,
                          got);
    }
    return apply_one(c, d, false, typed, ours, err);
}

/* --cors-origin(s) given again on the command line adds its origins to
 * the earlier ones (as llama-server's repeatable flag) instead of
 * replacing them. */
static enum st_status add_cors_origins(struct st_config *c, const struct st_cfg_def *d,
                                       const char *typed, const char *value, struct st_err *err)
{
    if (value == NULL || c->cors_origins == NULL)
        return apply_one(c, d, false, typed, value, err);
    size_t n = strlen(c->cors_origins) + strlen(value) + 2;
    char *joined = malloc(n);
    if (joined == NULL)
        return st_err_set(err, ST_ERR_NOMEM, "%s: out of memory", typed);
    snprintf(joined, n, "%s,%s", c->cors_origins, value);
    enum st_status rc = apply_one(c, d, false, typed, joined, err);
    free(joined);
    return rc;
}

enum st_status st_cli_apply(struct st_config *c, int argc, char **argv, bool *help,
                            struct st_err *err)
{
    bool cors_seen = false;
    *help = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], *eq, *value = NULL;
        const struct st_cfg_def *d;
        char typed[64];
        size_t len;
        bool negated;
        enum st_status rc;

        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            *help = true;
            return ST_OK;
        }
        if (arg[0] != '-' || arg[1] == '\0')
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "unexpected argument '%s'; see 'strata serve --help'", arg);
        eq = strchr(arg, '=');
        len = eq ? (size_t)(eq - arg) : strlen(arg);
        d = find_flag(arg, len, &negated);
        snprintf(typed, sizeof(typed), "%.*s", (int)ST_MIN(len, sizeof(typed) - 1), arg);
        if (d == NULL) {
            const struct st_cli_compat *x = st_cli_compat_find(arg, len);
            if (x == NULL)
                return unknown_flag(arg, len, err);
            rc = apply_compat(c, x, typed, eq ? eq + 1 : NULL, argc, argv, &i, err);
            if (rc != ST_OK)
                return rc;
            continue;
        }
        if (eq != NULL)
            value = eq + 1;
        else if (d->kind != ST_CFG_FLAG && i + 1 < argc)
            value = argv[++i];
        if (d->id == ST_OPT_CORS_ORIGINS && cors_seen)
            rc = add_cors_origins(c, d, typed, value, err);
        else
            rc = apply_one(c, d, negated, typed, value, err);
        if (rc != ST_OK)
            return rc;
        cors_seen |= d->id == ST_OPT_CORS_ORIGINS;
    }
    return ST_OK;
}

/* ---- help ------------------------------------------------------------ */

#define HELP_COL 34   /* column where a flag's description starts */

static void flag_line(struct st_out *o, const struct st_cfg_def *d,
                      const struct st_config *defaults)
{
    char left[96], meta[64] = "", def[64];
    size_t len = 0;

    if (d->kind == ST_CFG_CHOICE) {
        for (int i = 0; d->choices[i] != NULL; i++)
            len += (size_t)snprintf(meta + len, sizeof(meta) - len, "%s%s", i ? "|" : "",
                                    d->choices[i]);
    } else if (d->metavar) {
        snprintf(meta, sizeof(meta), "%s", d->metavar);
    }
    snprintf(left, sizeof(left), "  %s%s%s%s%s", d->shrt ? d->shrt : "", d->shrt ? ", " : "    ",
             d->lng, meta[0] ? " " : "", meta);
    st_cfg_render(d, defaults, def, sizeof(def));
    if (strlen(left) > HELP_COL - 2)
        st_out_printf(o, "%s\n%-*s %s\n", left, HELP_COL, "", d->help);
    else
        st_out_printf(o, "%-*s %s\n", HELP_COL, left, d->help);
    st_out_printf(o, "%-*s default: %s%s%s\n", HELP_COL, "", def, d->yaml ? "; config: " : "",
                  d->yaml ? d->yaml : "");
}

enum st_status st_cli_serve_help(struct st_buf *out)
{
    struct st_config defaults;
    struct st_out o;

    st_config_init(&defaults);
    st_out_init(&o, out);
    st_out_text(&o, "usage: strata serve [flags]\n\n"
                    "Serve the OpenAI-compatible API. Without -m and --config it makes "
                    "(once) and serves a tiny\nbuilt-in model on the CPU engine: its weights "
                    "are random, so its text is noise.\n"
                    "Flags override the --config file; \"--x=v\" works too; "
                    "--no-batch and --no-batch-mtp undo the flags.\n\n");
    for (size_t i = 0; i < ST_OPT_COUNT; i++)
        flag_line(&o, &st_cfg_opts[i], &defaults);
    st_out_printf(&o, "%-*s %s\n", HELP_COL, "  -h, --help", "this help");
    st_config_fini(&defaults);
    return st_out_finish(&o);
}

enum st_status st_cli_help(struct st_buf *out)
{
    struct st_out o;

    st_out_init(&o, out);
    st_out_text(&o, "usage: strata <command> [flags]\n\ncommands:\n");
    for (size_t i = 0; i < ST_ARRAY_LEN(commands); i++)
        st_out_printf(&o, "  %-12s %s\n", commands[i].name, commands[i].help);
    st_out_text(&o, "\n  -h, --help   this help\n"
                    "  --version    print the version\n\n"
                    "strata serve --help lists every flag of the server with its default.\n");
    return st_out_finish(&o);
}
