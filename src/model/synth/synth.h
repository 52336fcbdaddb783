/* synth.h -- the pieces of the synthetic-model writer (make_model.c):
 * the tokenizer it writes (make_vocab.c, make_vocab_hf.c, make_corpus.c)
 * and its random weights (make_random.c). Private to src/model/synth.
 */
#ifndef STRATA_MODEL_SYNTH_H
#define STRATA_MODEL_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/err.h"
#include "strata/gguf_write.h"
#include "strata/str.h"

/* A tokenizer to write into a GGUF (docs/design/ENGINE.md 5.1). All owned. */
struct st_mm_vocab {
    int64_t  n;              /* tokens, after padding */
    char   **tokens;         /* n NUL-terminated strings */
    int32_t *types;          /* n token types (1 normal, 3 control, 4 user, 5 unused) */
    int64_t  n_merges;
    char   **merges;         /* "left right" */
    int32_t  bos, eos, pad;  /* ids */
    int32_t  fim_first;      /* built-in: id of <|fim_prefix|>, the six FIM ids from there
                              * (tokenizer.ggml.fim_*_token_id keys written); -1: none */
    bool     add_bos;
    char    *chat_template;  /* NULL = none */
    const char *pre;         /* tokenizer.ggml.pre (static string); NULL = "qwen2" */
    bool     glm_ids;        /* also write eot/eom/unknown_token_id (GLM's vocabulary) */
    int32_t  eot, eom, unk;  /* with glm_ids: ids */
};

void st_mm_vocab_free(struct st_mm_vocab *v);

/* The built-in byte-level BPE tokenizer: 256 byte tokens, merges learned
 * deterministically from an embedded English text, the ChatML specials,
 * <think>/</think> and (fim) Qwen's six FIM tokens; padded to a multiple of 64. */
ST_MUST_CHECK enum st_status st_mm_vocab_builtin(struct st_mm_vocab *v, bool fim,
                                                 struct st_err *err);

/* The built-in bytes and merges with GLM-4.5's special tokens instead of
 * ChatML's (make-model's glm-* presets): <|endoftext|> [MASK] [gMASK]
 * [sMASK] <sop> <eop> <|system|> <|user|> <|assistant|> <|observation|>
 * (CONTROL: special in GLM's tokenizer.json), then <think> </think>
 * <tool_call> </tool_call> <arg_key> </arg_key> <arg_value> </arg_value>
 * <tool_response> </tool_response> (USER_DEFINED: not special there), in
 * GLM's relative order; pre "glm4"; the ids a GLM-4.5 GGUF sets (bos
 * [gMASK], eos/pad/unk <|endoftext|>, eot <|user|>, eom <|observation|>);
 * no add_bos (the template starts with [gMASK]<sop>); a short GLM-4.5-style
 * chat template. Padded to a multiple of 64. */
ST_MUST_CHECK enum st_status st_mm_vocab_glm(struct st_mm_vocab *v, struct st_err *err);

/* Import a Hugging Face tokenizer.json (and tokenizer_config.json /
 * config.json beside it when present). n_vocab_pad > 0 pads to that size. */
ST_MUST_CHECK enum st_status st_mm_vocab_import(struct st_mm_vocab *v, const char *path,
                                                int64_t n_vocab_pad, struct st_err *err);

/* The ChatML chat template (static storage). */
const char *st_mm_chatml_template(void);

/* Put the tokenizer.* keys of v into w. */
ST_MUST_CHECK enum st_status st_mm_vocab_write_kv(const struct st_mm_vocab *v,
                                                  struct st_gguf_writer *w, struct st_err *err);

/* Fill 'nrows' rows of ne0 elements of type t with random weights of
 * standard deviation about 'sigma', written as blocks directly (no float
 * detour). 'state' is the PRNG state, advanced. */
void st_mm_random_rows(uint64_t *state, int t, int64_t ne0, int64_t nrows, float sigma,
                       void *dst);

uint64_t st_mm_rand(uint64_t *state);

#endif /* STRATA_MODEL_SYNTH_H */
