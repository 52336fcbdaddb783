/* cli_engine.h -- the engine subcommands of the strata binary.
 *
 * Each takes the subcommand's own argv (argv[0] = "run" / "bench"), prints
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
 */
#ifndef STRATA_CLI_ENGINE_H
#define STRATA_CLI_ENGINE_H

int st_cli_run(int argc, char **argv);
int st_cli_bench(int argc, char **argv);

#endif /* STRATA_CLI_ENGINE_H */
