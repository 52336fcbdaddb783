/* tok/unicode/unicode.h -- UTF-8 decode/encode, the \p{L} \p{N} \s
 * classes and NFC (unicode.c, nfc.c): for the tokenizer, the chat
 * templates' JSON reader and the regex automaton.
 */
#ifndef STRATA_TOK_UNICODE_UNICODE_H
#define STRATA_TOK_UNICODE_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "strata/str.h"

/* ---- unicode.c ---- */
#define ST_UNI_REPLACEMENT 0xFFFDu

/* Decode one code point from s[0..n) (n >= 1). Returns the bytes consumed
 * (1..4). An invalid or truncated sequence consumes its maximal subpart (at
 * least 1 byte) and yields *cp = ST_UNI_INVALID | first byte. */
#define ST_UNI_INVALID 0x80000000u
size_t st_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Encode cp (< 0x110000) into out[4]; returns bytes written. */
size_t st_utf8_encode(uint32_t cp, char *out);
/* Bytes of the longest prefix of s[0..n) that is a prefix of a valid UTF-8
 * sequence but incomplete; 0 when s ends at a character boundary. Looks at
 * the last <= 3 bytes only. */
size_t st_utf8_incomplete_tail(const unsigned char *s, size_t n);
/* true when s[0..n) is entirely valid UTF-8. */
bool st_utf8_valid(const char *s, size_t n);

bool st_uni_is_letter(uint32_t cp);     /* \p{L} */
bool st_uni_is_number(uint32_t cp);     /* \p{N} */
bool st_uni_is_space(uint32_t cp);      /* \s = White_Space property */
/* The classes of tekken's letter runs: ST_UNI_CASE_UP when cp is in
 * [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], ST_UNI_CASE_LOW when in
 * [\p{Ll}\p{Lm}\p{Lo}\p{M}] (both bits for Lm, Lo and marks), 0 otherwise. */
#define ST_UNI_CASE_UP  1u
#define ST_UNI_CASE_LOW 2u
uint8_t st_uni_case_class(uint32_t cp);
uint8_t st_uni_ccc(uint32_t cp);

/* NFC of s[0..n) into *out (cleared first). Invalid bytes pass through
 * unchanged. Returns ST_OK or ST_ERR_NOMEM. *same is set true when the input
 * was already NFC (then *out is left empty: use the input). */
enum st_status st_uni_nfc(const char *s, size_t n, struct st_buf *out, bool *same);

#endif /* STRATA_TOK_UNICODE_UNICODE_H */
