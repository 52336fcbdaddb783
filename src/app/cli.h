/* cli.h -- the subcommands of the strata binary (main.c) and what their
 * files share. Private to src/app.
 *
 * Each takes the subcommand's own argv (argv[0] = "run", "bench",
 * "inspect", "make-model"), prints
 * to stdout/stderr and returns the process exit status: 0 ok, 1 failure,
 * 2 usage error. Run the binary with no further argument for the usage.
 *
 *   strata run [-m FILE] -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]
 *              [--min-p M] [--seed S] [-t THREADS] [-c CTX] [--chat] [--ignore-eos]
 *       One-shot generation through a real engine pool of one slot, so the
 *       sampler, stop handling and text path are the server's own. Without
 *       -m it uses the default (noise) model. The generated text goes to
 *       stdout as it comes; timings go to stderr.
 *
 *   strata bench -m FILE [-p 128] [-n 64] [-t THREADS] [-r 3] [-np N] [-o md|json]
 *       Prompt (pp) and decode (tg) tokens per second at one slot and, with
 *       -np N > 1, at N slots reading / decoding together, in llama-bench's
 *       table or JSON shape (n_prompt, n_gen, avg_ts, stddev_ts ...).
 *
 *   strata bench --mtp [-m FILE] [-n 128] [-np 1] [--mtp-draft 3] [-t THREADS] [-r 3]
 *       Greedy decode tokens/s through the engine without and with MTP
 *       drafting (--batch-mtp), the draft acceptance rate and the mean
 *       accepted length. Without -m: on the mtp-demo preset (drafts that
 *       agree by construction) and on small --mtp (random MTP weights).
 *
 *   strata inspect FILE [--no-tensors] [--full]
 *   strata make-model OUT.gguf [--preset tiny|small|medium] [--quant TYPE]
 *                     [--seed N] [--vocab tokenizer.json] [--n-vocab N] [--mtp]
 */
#ifndef STRATA_APP_CLI_H
#define STRATA_APP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/config.h"
#include "strata/engine.h"
#include "strata/err.h"

int st_cli_run(int argc, char **argv);          /* cli_run.c */
int st_cli_bench(int argc, char **argv);        /* cli_bench.c */
int st_cli_inspect(int argc, char **argv);      /* cli_inspect.c */
int st_cli_make_model(int argc, char **argv);   /* cli_make_model.c */

/* cli_bench_mtp.c: `strata bench --mtp` and `strata bench --ngram` (argv as
 * st_cli_bench gets it). */
int st_cli_bench_mtp(int argc, char **argv);
int st_cli_bench_ngram(int argc, char **argv);
/* cli_args.c: -h or --help among argv[1..]: the command prints its usage
 * to stdout and exits 0. */
bool st_cli_wants_help(int argc, char **argv);
/* cli_args.c, shared by both bench commands: s as a whole decimal number
 * in [lo, hi] into *out (false otherwise, *out untouched); the mean and
 * sample standard deviation (0 for one value) of v[0, n), n >= 1. */
bool st_cli_int_arg(const char *s, long lo, long hi, int32_t *out);
/* strata bench --backend: "cpu" or "cuda" (static strings); false otherwise. */
bool st_cli_backend_arg(const char *s, const char **out);
/* -ctk / --cache-type-k, -ctv / --cache-type-v: false when 'a' is neither;
 * else *ok says whether 'v' is a KV cache type (a message on stderr when not). */
bool st_cli_kv_type_arg(const char *a, const char *v, enum st_kv_type *k, enum st_kv_type *vt,
                        bool *ok);
/* A bench that could not open its backend (no GPU, not built in): 2, else 1. */
int st_cli_bench_fail_status(enum st_status rc);
void st_cli_mean_sd(const double *v, int n, double *avg, double *sd);
/* cli_rope.c: `strata run` / `strata bench`'s --rope-scaling model|none|
 * linear|yarn, --rope-scale F (> 0), --yarn-orig-ctx N (>= 1) into m's
 * rope fields. False when a is none of them; else *ok says whether v was
 * a valid value (m untouched when not). */
bool st_cli_rope_arg(const char *a, const char *v, struct st_model_config *m, bool *ok);
/* cli_kv_pod.c: the KV events' pod "ADDR:PORT" (--kv-events-host, else
 * $POD_IP, else --host unless a wildcard, else the first non-loopback
 * IPv4 address) for the serving port. */
void st_cli_kv_pod(const struct st_config *c, unsigned port, char *out, size_t cap);

#endif /* STRATA_APP_CLI_H */
