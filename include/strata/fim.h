/* fim.h -- fill-in-the-middle (code infill) prompts as token ids.
 *
 * A FIM model is trained on prompts of the shape (Qwen2.5-Coder's repo-level
 * pattern, llama.cpp's format_infill):
 *
 *   [bos] <REP>repo\n <SEP>file0\n text0 <SEP>file1\n text1 ... <SEP>file\n
 *   <PRE>prefix <SUF>suffix <MID>prompt
 *
 * <REP>/<SEP> parts appear only when the vocabulary has those tokens; without
 * <SEP> each extra chunk is led by a plain-text separator instead and the
 * current file gets no header. The layout works on token ids only: the
 * caller tokenizes the texts (without parsing special tokens, so code that
 * contains "<|fim_prefix|>" stays text) and this file places the special ids
 * and applies the context budget (docs/API.md "/infill"):
 *
 *   fixed  = bos + 3 FIM ids + the prompt's tokens; more than the budget: TOO_LONG
 *   avail  = budget - fixed
 *   prefix and suffix over avail: the suffix keeps its first
 *            min(n_suffix, max(avail/4, avail - n_prefix)) tokens, the prefix
 *            its LAST min(n_prefix, avail - suffix kept) tokens (3:1, a short
 *            side gives its share to the other)
 *   extra  gets what is left: the repo header and the current-file header when
 *          both fit (else no extra at all), then whole chunks, the LAST ones
 *          first (nearest the cursor file in the usual editor ordering); a
 *          chunk that does not fit and every chunk before it are dropped.
 * Extra chunks therefore go before the prefix or suffix lose a token.
 */
#ifndef STRATA_FIM_H
#define STRATA_FIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/status.h"
#include "strata/tokenizer.h"

/* The FIM special token ids of a vocabulary; -1 = absent. */
struct st_fim_ids {
    int32_t pre, suf, mid;   /* all three needed for infill */
    int32_t pad, rep, sep;   /* optional: padding, repo name, file separator */
};

/* Every id -1. */
void st_fim_ids_none(struct st_fim_ids *f);

/* Fill the ids still -1 from the token texts llama.cpp recognises:
 * <|fim_prefix|>, <fim-prefix>, <fim_prefix>, <PRE>, ▁<PRE>, <｜fim▁begin｜>,
 * <|fim▁begin|>; the same families for suffix, middle, pad, <|repo_name|> /
 * <fim-repo> / <repo_name> and <|file_sep|> / <fim-sep> / <file_sep>.
 * Ids set from GGUF keys (tokenizer.ggml.fim_*_token_id) are kept. */
void st_fim_detect(const struct st_tok *tok, struct st_fim_ids *f);

/* pre, suf and mid all present. */
bool st_fim_usable(const struct st_fim_ids *f);

/* A run of token ids, borrowed. */
struct st_fim_span {
    const int32_t *ids;
    size_t n;
};

/* The tokenized parts of one infill prompt (all borrowed). */
struct st_fim_parts {
    int32_t bos;                         /* -1: none (the vocabulary adds no bos) */
    struct st_fim_span repo;             /* "name\n" after <REP> (used when rep >= 0) */
    const struct st_fim_span *chunk_head;/* [n_chunks]: "filename\n" after <SEP>, or the
                                          * plain separator when there is no <SEP> */
    const struct st_fim_span *chunk_text;/* [n_chunks] */
    size_t n_chunks;
    struct st_fim_span file;             /* "filename\n" after the last <SEP> (sep >= 0) */
    struct st_fim_span prefix, suffix, prompt;
};

/* What the budget cut (docs/API.md). */
struct st_fim_trim {
    int64_t prefix_dropped;   /* tokens cut from the start of the prefix */
    int64_t suffix_dropped;   /* tokens cut from the end of the suffix */
    int64_t chunks_dropped;   /* extra chunks left out (all of them when the headers do not fit) */
    bool    headers_dropped;  /* the repo / current-file headers were left out */
};

/* Lay out the prompt within 'budget' tokens. *ids is owned (free()).
 * Errors: ST_ERR_UNSUPPORTED (f not usable), ST_ERR_TOO_LONG (bos + 3 + the
 * prompt exceed the budget), ST_ERR_NOMEM. trim may be NULL. */
ST_MUST_CHECK
enum st_status st_fim_layout(const struct st_fim_ids *f, const struct st_fim_parts *p,
                             int64_t budget, int32_t **ids, size_t *n_ids,
                             struct st_fim_trim *trim, struct st_err *err);

#endif /* STRATA_FIM_H */
