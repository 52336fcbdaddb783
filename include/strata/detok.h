/* detok.h -- streaming detokenizer: token ids (or raw bytes) in, complete
 * valid UTF-8 out.
 *
 * A token may end in the middle of a multi-byte character (byte-level BPE
 * splits emoji and CJK across tokens). The detokenizer holds back an
 * incomplete trailing sequence (at most 3 bytes) until the next piece
 * completes it, and replaces bytes that can never be valid with U+FFFD (one
 * per maximal invalid subpart, as WHATWG TextDecoder does), so the stream a
 * client sees is always valid UTF-8 and odd model output never fails a
 * request. At the end, st_detok_flush() turns a held incomplete tail into
 * U+FFFD. A zero byte comes out as C0 80 (strata/mutf8.h: U+0000 in a C
 * string).
 *
 * The byte interface (st_detok_push_bytes) needs no tokenizer: the simulated
 * engine feeds its words through it. Storage: caller-owned (_init, no _fini:
 * nothing is allocated). Threads: one stream per object.
 */
#ifndef STRATA_DETOK_H
#define STRATA_DETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/err.h"
#include "strata/str.h"

struct st_tok;

struct st_detok {
    const struct st_tok *tok;        /* borrowed; may be NULL (bytes only) */
    bool                 special;    /* render CONTROL tokens as their text */
    unsigned char        held[4];    /* incomplete UTF-8 tail, held back */
    size_t               n_held;     /* bytes in held, 0..3 */
};

/* 'tok' is borrowed and must outlive the detokenizer (NULL when only
 * st_detok_push_bytes is used). special=false drops CONTROL tokens
 * (<|im_end|> ...) from the text, as llama.cpp does for generated text,
 * except the reply markers of st_tok_is_marker ([TOOL_CALLS] ...), which a
 * reply parser reads; USER_DEFINED tokens (<think>, <tool_call>) are always
 * rendered. */
void st_detok_init(struct st_detok *d, const struct st_tok *tok, bool special);

/* Append the text of token 'id' to 'out' (only complete valid UTF-8).
 * Errors: ST_ERR_INVALID for an id outside the vocabulary (nothing is
 * appended), ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_detok_push_token(struct st_detok *d, int32_t id,
                                   struct st_buf *out, struct st_err *err);

/* Same for raw bytes (any bytes; invalid ones become U+FFFD). */
ST_MUST_CHECK
enum st_status st_detok_push_bytes(struct st_detok *d, const void *bytes,
                                   size_t n, struct st_buf *out);

/* End of stream: a held incomplete tail becomes one U+FFFD. */
ST_MUST_CHECK
enum st_status st_detok_flush(struct st_detok *d, struct st_buf *out);

/* Bytes currently held back (0..3). */
size_t st_detok_pending(const struct st_detok *d);

#endif /* STRATA_DETOK_H */
