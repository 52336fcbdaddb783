/* cli_args.c -- small pieces the subcommands share: -h/--help, and for the
 * bench commands (cli_bench.c, cli_bench_mtp.c) whole-number arguments, --backend, the exit status of
 * a bench that could not open its backend, mean and standard deviation.
 */
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"

bool st_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    }
    return false;
}

bool st_cli_int_arg(const char *s, long lo, long hi, int32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = (int32_t)v;
    return true;
}

bool st_cli_backend_arg(const char *s, const char **out)
{
    if (strcmp(s, "cpu") && strcmp(s, "cuda"))
        return false;
    *out = strcmp(s, "cpu") ? "cuda" : "cpu";
    return true;
}

bool st_cli_kv_type_arg(const char *a, const char *v, enum st_kv_type *k, enum st_kv_type *vt,
                        bool *ok)
{
    enum st_kv_type *out;
    if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k"))
        out = k;
    else if (!strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v"))
        out = vt;
    else
        return false;
    *ok = st_kv_type_parse(v, out);
    if (!*ok)
        fprintf(stderr, "strata: %s: expected one of f16, q8_0, f32, bf16, got \"%s\" "
                "(KV cache types)\n", a, v);
    return true;
}

int st_cli_bench_fail_status(enum st_status rc)
{
    return rc == ST_ERR_DEVICE || rc == ST_ERR_UNSUPPORTED || rc == ST_ERR_INVALID ? 2 : 1;
}

void st_cli_mean_sd(const double *v, int n, double *avg, double *sd)
{
    double s = 0, q = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    *avg = s / n;
    for (int i = 0; i < n; i++)
        q += (v[i] - *avg) * (v[i] - *avg);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0.0;
}
