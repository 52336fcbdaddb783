/* tok/internal.h -- private interfaces shared by the files of src/tok.
 *
 * pretok.c       : the hand-written pre-tokenizer regexes
 * tokmap.c       : open-addressing hash maps (bytes -> id, pair -> merge)
 * bpe.c          : rank-ordered merges of one piece
 * bytemap.c      : GPT-2's byte <-> code point mapping
 * tokenizer.c    : st_tok_new / st_tok_encode / pieces / eog
 * unicode/       : UTF-8, Unicode classes and NFC (tok/unicode/unicode.h)
 */
#ifndef STRATA_TOK_INTERNAL_H
#define STRATA_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/status.h"
#include "strata/str.h"

/* ---- pretok.c ---- */
enum st_pretok {
    ST_PRETOK_QWEN2,     /* \p{N} single digits */
    ST_PRETOK_LLAMA3,    /* \p{N}{1,3} */
    ST_PRETOK_GPT2,      /* the original GPT-2 pattern */
    ST_PRETOK_TEKKEN,    /* Mistral's tekken: case-split letter runs, no contractions */
};

/* Piece boundaries of s[0..n): calls emit(ctx, start, len) for each piece in
 * order; the pieces tile the input. Stops and returns the first non-OK
 * status emit returns. Code points come from st_utf8_decode (an invalid byte
 * is classified as "other"). */
typedef enum st_status st_pretok_emit_fn(void *ctx, size_t start, size_t len);
enum st_status st_pretok_split(enum st_pretok kind, const char *s, size_t n,
                               st_pretok_emit_fn *emit, void *ctx);

/* ---- tokmap.c: bytes -> int32 and uint64 -> (rank, id) hash maps ---- */
struct st_strmap {
    uint32_t       *slots;  /* [cap] index+1 into keys/vals, 0 = empty */
    size_t          cap;    /* power of two */
    const char    **keys;   /* borrowed key pointers, [n] */
    uint32_t       *klens;  /* [n] key bytes */
    int32_t        *vals;   /* [n] */
    size_t          n;
    size_t          n_cap;  /* allocated entries */
};

enum st_status st_strmap_init(struct st_strmap *m, size_t expected);
void st_strmap_fini(struct st_strmap *m);
/* Insert or, when 'replace' is true, overwrite. Key bytes are borrowed and
 * must outlive the map. */
enum st_status st_strmap_put(struct st_strmap *m, const char *k, size_t len,
                             int32_t val, bool replace);
/* -1 if absent. */
int32_t st_strmap_get(const struct st_strmap *m, const char *k, size_t len);

struct st_pairmap {
    uint64_t *keys;         /* [cap] (left << 32 | right) + 1, 0 = empty */
    int32_t  *rank;         /* [cap] merge rank */
    int32_t  *result;       /* [cap] merged token id */
    size_t    cap;          /* power of two */
    size_t    n;
};

enum st_status st_pairmap_init(struct st_pairmap *m, size_t expected);
void st_pairmap_fini(struct st_pairmap *m);
/* Keeps the first (lowest-rank) entry for a pair. */
void st_pairmap_put(struct st_pairmap *m, int32_t left, int32_t right,
                    int32_t rank, int32_t result);
/* false if the pair has no merge. */
bool st_pairmap_get(const struct st_pairmap *m, int32_t left, int32_t right,
                    int32_t *rank, int32_t *result);

/* ---- bpe.c ---- */
/* Scratch reused across pieces of one st_tok_encode call. */
struct st_bpe_work {
    struct st_bpe_sym  *syms;   /* [cap_syms] */
    size_t              cap_syms;
    struct st_bpe_cand *heap;   /* [cap_heap] min-heap on (rank, pos) */
    size_t              cap_heap;
};

void st_bpe_work_fini(struct st_bpe_work *w);
/* Merge the bytes of one piece. byte_ids[256]: token of each single byte
 * (-1 = none: that byte is dropped). Appends the resulting ids to *ids
 * (grown with realloc; *n and *cap updated). ST_ERR_NOMEM on failure. */
enum st_status st_bpe_piece(struct st_bpe_work *w, const struct st_pairmap *merges,
                            const int32_t *byte_ids, const unsigned char *s,
                            size_t n, int32_t **ids, size_t *n_ids, size_t *cap);

/* Append one id to a growable array. */
enum st_status st_ids_push(int32_t **ids, size_t *n, size_t *cap, int32_t id);

/* ---- byte <-> unicode mapping (tokenizer.c) ---- */
/* Decode a mapped GPT-2 string into raw bytes (appended to out). Code points
 * outside the 256 mapped ones are kept as their UTF-8. */
enum st_status st_bytemap_decode(const char *s, size_t n, struct st_buf *out);
/* The code point byte b maps to. */
uint32_t st_bytemap_cp(unsigned char b);

/* ---- the tokenizer object (tokenizer.c builds it, encode.c reads it) ---- */
enum {
    ST_TOKF_EOG     = 1,    /* ends generation */
    ST_TOKF_SPECIAL = 2,    /* CONTROL, USER_DEFINED or UNKNOWN: literal text */
    ST_TOKF_MARKER  = 4,    /* a reply-format marker (st_tok_is_marker) */
};

struct st_tok {
    int32_t            n_vocab;
    char              *pool;         /* raw token bytes, all tokens back to back */
    size_t            *off;          /* [n_vocab + 1] offsets into pool */
    uint8_t           *type;         /* [n_vocab] enum st_tok_type */
    uint8_t           *flags;        /* [n_vocab] ST_TOKF_* */
    struct st_strmap   map;          /* raw bytes -> id (specials win) */
    struct st_pairmap  merges;       /* (left, right) -> (rank, result) */
    int32_t            byte_ids[256];/* token of each single byte, -1 = none */
    int32_t           *specials;     /* [n_specials] ids, longest text first */
    size_t             n_specials;
    int32_t           *eog;          /* [n_eog] ascending */
    size_t             n_eog;
    int32_t            bos, eos, pad;/* -1 = none */
    bool               add_bos, add_eos;
    enum st_pretok     pre;
    bool               nfc;
    size_t             max_in;       /* st_tok_max_input_bytes */
};

#endif /* STRATA_TOK_INTERNAL_H */
