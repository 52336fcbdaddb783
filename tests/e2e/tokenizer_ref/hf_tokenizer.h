/* hf_tokenizer.h -- TEST support: build a st_tok from a Hugging Face
 * tokenizer.json (+ optional tokenizer_config.json), the way the GGUF
 * converter would (docs/design/ENGINE.md 5.1): vocab + added tokens, added tokens typed
 * CONTROL when "special" or shaped like <|...|>, else USER_DEFINED; eos,
 * pad and add_bos from tokenizer_config.json. Not part of the product
 * (make-model's --vocab import lives in src/model). */
#ifndef STRATA_TEST_HF_TOKENIZER_H
#define STRATA_TEST_HF_TOKENIZER_H

#include "strata/err.h"
#include "strata/tokenizer.h"

/* Read a whole file; returns owned NUL-terminated bytes (free()), NULL on
 * failure. *len may be NULL. */
char *hf_read_file(const char *path, size_t *len);

/* config_path may be NULL. On success *out is owned (st_tok_free) and, when
 * chat_template is not NULL, *chat_template is the config's template
 * (owned, free(); NULL if none). */
enum st_status hf_tokenizer_load(const char *json_path, const char *config_path,
                                 struct st_tok **out, char **chat_template,
                                 struct st_err *err);

#endif /* STRATA_TEST_HF_TOKENIZER_H */
