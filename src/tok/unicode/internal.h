/* tok/unicode/internal.h -- the generated tables the files of tok/unicode/
 * search: unicode_tables.c (tools/gen_unicode_tables.py) and unicode_cats.c
 * (tools/gen_unicode_cats.mjs). What the rest of src/ uses is unicode.h.
 */
#ifndef STRATA_TOK_UNICODE_INTERNAL_H
#define STRATA_TOK_UNICODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tok/unicode/unicode.h"

/* ---- generated tables (unicode_tables.c) ---- */
struct st_uni_range  { uint32_t lo, hi; };               /* inclusive */
struct st_uni_ccc    { uint32_t lo, hi; uint8_t ccc; };  /* canonical combining class */
struct st_uni_decomp { uint32_t cp; uint16_t off; uint8_t len; }; /* into st_uni_decomp_pool */
struct st_uni_comp   { uint32_t first, second, composite; };     /* sorted by (first, second) */

extern const char st_uni_version[];
extern const struct st_uni_range st_uni_letter[];
extern const size_t st_uni_letter_len;
extern const struct st_uni_range st_uni_number[];
extern const size_t st_uni_number_len;
extern const struct st_uni_range st_uni_nfc_unsafe[];
extern const size_t st_uni_nfc_unsafe_len;
extern const struct st_uni_ccc st_uni_ccc_tab[];
extern const size_t st_uni_ccc_tab_len;
extern const uint32_t st_uni_decomp_pool[];
extern const struct st_uni_decomp st_uni_decomp_tab[];
extern const size_t st_uni_decomp_tab_len;
extern const struct st_uni_comp st_uni_comp_tab[];
extern const size_t st_uni_comp_tab_len;

/* unicode_cats.c: ranges with a tekken case class (st_uni_case_class). */
struct st_uni_ccls   { uint32_t lo, hi; uint8_t cls; };
extern const struct st_uni_ccls st_uni_case_tab[];
extern const size_t st_uni_case_tab_len;

#endif /* STRATA_TOK_UNICODE_INTERNAL_H */
