/* tokenizer.h -- byte-level BPE tokenizer (GPT-2 / Qwen2 / Llama 3 style).
 *
 * Built from plain arrays (struct st_tok_desc), so the text module never sees
 * GGUF: the model loader copies tokenizer.ggml.* into a desc and calls
 * st_tok_new(). Everything in the desc is copied; the tokenizer owns its
 * memory and is read-only afterwards.
 *
 * Pipeline of st_tok_encode (docs/design/ENGINE.md 5.2):
 *   1. special tokens split out first, longest text first (CONTROL/UNKNOWN
 *      only with parse_special, USER_DEFINED always);
 *   2. each remaining fragment NFC-normalized (qwen2 default), then split by
 *      the pre-tokenizer (qwen2 / llama-bpe / gpt2 / tekken regex, written by hand);
 *   3. each piece's UTF-8 bytes merged by rank (BPE); a byte without a token
 *      is dropped (byte-level vocabularies have all 256).
 *
 * Token strings in the desc are in the GPT-2 byte-to-unicode mapped form (as
 * GGUF and tokenizer.json store them); CONTROL/USER_DEFINED/UNKNOWN tokens
 * are taken literally. st_tok_piece() returns the raw bytes.
 *
 * Threads: after st_tok_new() returns, every function may be called from any
 * thread concurrently; st_tok_free() must not race with them.
 */
#ifndef STRATA_TOKENIZER_H
#define STRATA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/err.h"
#include "strata/str.h"

struct st_tok;                  /* opaque */

/* tokenizer.ggml.token_type codes (docs/design/ENGINE.md 5.1) */
enum st_tok_type {
    ST_TOK_UNDEFINED    = 0,
    ST_TOK_NORMAL       = 1,
    ST_TOK_UNKNOWN      = 2,
    ST_TOK_CONTROL      = 3,
    ST_TOK_USER_DEFINED = 4,
    ST_TOK_UNUSED       = 5,
    ST_TOK_BYTE         = 6,
};

/* Unicode normalization before pre-tokenizing. DEFAULT = by pre-tokenizer:
 * NFC for "qwen2" (Qwen's tokenizer.json has an NFC normalizer), none for
 * the others. GGUF does not record the normalizer. */
enum st_tok_norm {
    ST_TOK_NORM_DEFAULT = 0,
    ST_TOK_NORM_NONE    = 1,
    ST_TOK_NORM_NFC     = 2,
};

struct st_tok_desc {
    int32_t              n_tokens;   /* vocabulary rows */
    const struct st_str *tokens;     /* [n_tokens] mapped form; borrowed for the call */
    const int32_t       *types;      /* [n_tokens] enum st_tok_type; NULL = all NORMAL */
    int32_t              n_merges;
    const struct st_str *merges;     /* [n_merges] "left right"; rank = index; borrowed */
    int32_t              bos_id;     /* -1 if absent */
    int32_t              eos_id;     /* -1 if absent */
    int32_t              pad_id;     /* -1 if absent */
    bool                 add_bos;    /* prepend bos when add_special */
    bool                 add_eos;    /* append eos when add_special (embedding models such as
                                        Qwen3-Embedding pool the eos row) */
    const char          *pre;        /* "qwen2", "llama-bpe"/"llama3", "gpt2", "tekken";
                                        NULL = qwen2 */
    enum st_tok_norm     norm;
};

/* Build a tokenizer. On success *out is owned by the caller: st_tok_free().
 * Errors: ST_ERR_BAD_MODEL (n_tokens <= 0, ids out of range, a token string
 * that is empty or not valid UTF-8), ST_ERR_NOMEM. An unknown 'pre' logs a
 * warning and uses qwen2. Merges whose parts are not tokens are skipped. */
ST_MUST_CHECK
enum st_status st_tok_new(const struct st_tok_desc *d, struct st_tok **out,
                          struct st_err *err);

/* NULL is a no-op. */
void st_tok_free(struct st_tok *tok);

/* Tokenize 'len' bytes of 'text' (need not be NUL-terminated; invalid UTF-8
 * bytes are tokenized as their bytes; C0 80 is U+0000, strata/mutf8.h). add_special: prepend bos when the
 * model's add_bos is set. parse_special: match CONTROL/UNKNOWN token texts.
 * On success *ids is owned by the caller (free(); may be NULL when *n == 0).
 * Errors: ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_tok_encode(const struct st_tok *tok, const char *text,
                             size_t len, bool add_special, bool parse_special,
                             int32_t **ids, size_t *n, struct st_err *err);

/* The most bytes of st_tok_encode's input one token can stand for, so a
 * text of n bytes has at least ceil(n / this) tokens; 0 when nothing
 * bounds it (a vocabulary without a token for every byte drops bytes).
 * Lets a caller refuse a text too long for a context before encoding it. */
size_t st_tok_max_input_bytes(const struct st_tok *tok);

/* Raw bytes of token 'id' (byte-to-unicode mapping undone; CONTROL,
 * USER_DEFINED and UNKNOWN tokens as their literal text). Borrowed, valid
 * until st_tok_free(). Not NUL-terminated; may be a partial UTF-8 sequence.
 * {NULL, 0} for an id out of range. */
struct st_str st_tok_piece(const struct st_tok *tok, int32_t id);

/* Decode ids to text: pieces concatenated, invalid UTF-8 replaced by U+FFFD.
 * special=false drops CONTROL tokens (as llama.cpp does for output text).
 * On success *out is owned (free(), NUL-terminated), *len its bytes.
 * Errors: ST_ERR_INVALID (an id out of range, named), ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_tok_decode(const struct st_tok *tok, const int32_t *ids,
                             size_t n, bool special, char **out, size_t *len,
                             struct st_err *err);

int32_t          st_tok_n_vocab(const struct st_tok *tok);
int32_t          st_tok_bos(const struct st_tok *tok);   /* -1 if none */
int32_t          st_tok_eos(const struct st_tok *tok);   /* -1 if none */
int32_t          st_tok_pad(const struct st_tok *tok);   /* -1 if none */
bool             st_tok_add_bos(const struct st_tok *tok);
enum st_tok_type st_tok_type_of(const struct st_tok *tok, int32_t id); /* UNDEFINED if out of range */

/* End of generation: eos, plus every token whose text is one of <|im_end|>,
 * <|endoftext|>, <|eot_id|>, <|eom_id|>, <|end|>, <end_of_turn>,
 * <|end_of_text|>, <EOT>, <|fim_pad|>, <|repo_name|>, <|file_sep|>, ...;
 * in a GLM vocabulary (a special "[gMASK]" token) also the special tokens
 * <|user|> and <|observation|>, which end a GLM turn. */
bool st_tok_is_eog(const struct st_tok *tok, int32_t id);
/* A special token whose text a reply parser reads (reply_parse.h): Mistral's
 * [TOOL_CALLS], [ARGS], [CALL_ID], [THINK] and [/THINK]; GLM-4.5's <think>,
 * </think>, <tool_call>, </tool_call>, <arg_key>, </arg_key>, <arg_value>,
 * </arg_value>. They are CONTROL
 * tokens in tekken GGUFs, so generated text must show them even though
 * other control tokens add nothing to it (as llama.cpp's preserved tokens). */
bool st_tok_is_marker(const struct st_tok *tok, int32_t id);
/* The eog ids, ascending; borrowed, valid until st_tok_free(). */
const int32_t *st_tok_eog_ids(const struct st_tok *tok, size_t *n);

/* Id of the token whose raw text is exactly 'text' (special tokens win over
 * normal ones with the same bytes); -1 if none. */
int32_t st_tok_find(const struct st_tok *tok, const char *text, size_t len);

/* Name of the pre-tokenizer in use ("qwen2", "llama-bpe", "gpt2", "tekken"). Static. */
const char *st_tok_pre_name(const struct st_tok *tok);

#endif /* STRATA_TOKENIZER_H */
