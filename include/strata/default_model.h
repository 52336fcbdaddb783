/* default_model.h -- the model `strata serve` loads when given none: the
 * make-model tiny preset at q8_0, made once and cached.
 *
 * The file lives at $XDG_CACHE_HOME/strata/tiny-q8_0.gguf, or
 * ~/.cache/strata/tiny-q8_0.gguf when XDG_CACHE_HOME is unset (and
 * /tmp/strata-cache-<uid>/ when there is no HOME either). Its weights are
 * random: it answers with noise, and whoever uses it should say so.
 *
 * Threads: any; processes making it at once are safe (each writes a
 * temporary file of its own, then renames it over the cache). A cached
 * file that is not the expected bytes (size and hash) is made again.
 */
#ifndef STRATA_DEFAULT_MODEL_H
#define STRATA_DEFAULT_MODEL_H

#include <stddef.h>

#include "strata/compiler.h"
#include "strata/err.h"

/* Seed of the default model's weights (part of its identity: a change
 * makes a different file, so the name would have to change too). */
#define ST_DEFAULT_MODEL_SEED 1

/* Write the default model's path into out (cap bytes), making the file
 * (and its directories) first when it is missing or damaged. ST_ERR_IO when the cache
 * directory cannot be made or written, ST_ERR_INVALID when cap is too
 * small, or what st_make_model reports. Logs (info) when it makes the file. */
ST_MUST_CHECK
enum st_status st_default_model_path(char *out, size_t cap, struct st_err *err);

#endif /* STRATA_DEFAULT_MODEL_H */
