/* cli_model.h -- the model subcommands of the strata binary.
 *
 * Each takes the subcommand's own argv: argv[0] is the subcommand name
 * ("inspect", "make-model"), options follow. They print to stdout/stderr
 * and return the process exit status: 0 ok, 1 failure, 2 usage error.
 *
 *   strata inspect FILE [--no-tensors] [--full]
 *   strata make-model OUT.gguf [--preset tiny|small|medium] [--quant TYPE]
 *                     [--seed N] [--vocab tokenizer.json] [--n-vocab N] [--mtp]
 */
#ifndef STRATA_CLI_MODEL_H
#define STRATA_CLI_MODEL_H

int st_cli_inspect(int argc, char **argv);
int st_cli_make_model(int argc, char **argv);

#endif /* STRATA_CLI_MODEL_H */
