/* make_model.h -- write a synthetic qwen3moe (or glm4moe) GGUF with random
 * weights.
 *
 * The file is a real model in every respect but its weights: general.*
 * and qwen3moe.* keys, a byte-level BPE tokenizer (built in, or imported
 * from a Hugging Face tokenizer.json), a chat template, and every tensor
 * docs/design/ENGINE.md section 3 lists, laid out so other GGUF readers accept it.
 * Its text output is noise. The same options and seed give the same file,
 * byte for byte. See docs/GGUF.md for presets and type choices.
 */
#ifndef STRATA_MAKE_MODEL_H
#define STRATA_MAKE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/err.h"

struct st_make_model_opts {
    const char *out_path;    /* required; written through out_path.tmp + rename */
    const char *preset;      /* "tiny" | "small" | "medium" | "mtp-demo" (an MTP block that
                                agrees with the model on purpose; implies mtp) | "a3b" |
                                "glm-tiny" (glm4moe, GLM-4.5's layout and tokens, with a
                                nextn block) | "next-tiny" "next-medium" "next-a3b"
                                (qwen35moe: Gated DeltaNet + gated attention); NULL = "tiny" */
    const char *quant;       /* "f32" "f16" "bf16" "q8_0" "q4_0" "q4_1" "q5_0" "q5_1"
                                "q2_k" "q3_k" "q4_k" "q5_k" "q6_k" "iq3_s" "iq3_xxs"
                                "iq4_xs", or llama-quantize's mixes "q2_k_s" "q3_k_s"
                                "q3_k_m" "q3_k_l" "q4_k_m" ("q2_k" is one too);
                                case-insensitive; NULL = "q8_0" */
    uint64_t    seed;        /* PRNG seed of the weights */
    const char *vocab_path;  /* HF tokenizer.json, or NULL for the built-in tokenizer */
    int64_t     n_vocab;     /* with vocab_path: pad to this many rows (0 = automatic) */
    bool        mtp;         /* append one MTP (nextn) block */
    bool        no_fim;      /* built-in tokenizer without its FIM tokens (tests of a
                                model that cannot infill) */
};

/* Borrowed strings in 'o' are only read during the call. ST_ERR_INVALID
 * (bad option, unreadable tokenizer.json), ST_ERR_IO, ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_make_model(const struct st_make_model_opts *o, struct st_err *err);

#endif /* STRATA_MAKE_MODEL_H */
