/* encode.c -- st_tok_encode: special-token split, NFC, pre-tokenizer, BPE.
 *
 * Fragments: the text starts as one raw fragment; each allowed special
 * token, longest first, splits every raw fragment at each exact occurrence
 * (llama.cpp's tokenizer_st_partition). A special token absent from the
 * whole text costs one memmem. Raw fragments are then normalized (NFC when
 * enabled), split into pieces by the pre-tokenizer, and each piece merged.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/mutf8.h"
#include "strata/tokenizer.h"
#include "strata/xalloc.h"

#include "tok/internal.h"
#include "tok/unicode/unicode.h"

struct frag {
    size_t  start;      /* byte offset into the text */
    size_t  len;        /* bytes */
    int32_t id;         /* special token id, or -1 for raw text */
};

struct frags {
    struct frag *v;
    size_t       n, cap;
};

static enum st_status frags_push(struct frags *f, size_t start, size_t len, int32_t id)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16, bytes;
        struct frag *p;
        if (!st_mul_ok(cap, sizeof(*p), &bytes) || !(p = realloc(f->v, bytes)))
            return ST_ERR_NOMEM;
        f->v = p;
        f->cap = cap;
    }
    f->v[f->n].start = start;
    f->v[f->n].len = len;
    f->v[f->n++].id = id;
    return ST_OK;
}

/* Split every raw fragment of 'in' at the occurrences of token 'id'. */
static enum st_status split_on(const char *text, const struct frags *in,
                               struct frags *out, int32_t id, struct st_str pat)
{
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        struct frag f = in->v[i];
        const char *p = text + f.start, *end = p + f.len, *hit;
        if (f.id >= 0) {
            ST_TRY(frags_push(out, f.start, f.len, f.id));
            continue;
        }
        while ((hit = memmem(p, (size_t)(end - p), pat.ptr, pat.len))) {
            if (hit > p)
                ST_TRY(frags_push(out, (size_t)(p - text), (size_t)(hit - p), -1));
            ST_TRY(frags_push(out, (size_t)(hit - text), pat.len, id));
            p = hit + pat.len;
        }
        if (p < end)
            ST_TRY(frags_push(out, (size_t)(p - text), (size_t)(end - p), -1));
    }
    return ST_OK;
}

static enum st_status partition(const struct st_tok *tok, const char *text, size_t len,
                                bool parse_special, struct frags *f)
{
    struct frags tmp = { NULL, 0, 0 };
    enum st_status rc = ST_OK;
    size_t i;

    if (len > 0)
        rc = frags_push(f, 0, len, -1);
    for (i = 0; i < tok->n_specials && rc == ST_OK; i++) {
        int32_t id = tok->specials[i];
        struct st_str pat = st_tok_piece(tok, id);
        struct frags swap;
        if (!parse_special && tok->type[id] != ST_TOK_USER_DEFINED)
            continue;
        if (!memmem(text, len, pat.ptr, pat.len))
            continue;
        rc = split_on(text, f, &tmp, id, pat);
        swap = *f;
        *f = tmp;
        tmp = swap;
    }
    free(tmp.v);
    return rc;
}

/* State of one encode call, passed to the pre-tokenizer callback. */
struct enc {
    const struct st_tok *tok;
    const char          *base;   /* the (normalized) fragment */
    struct st_bpe_work   work;
    int32_t             *ids;
    size_t               n, cap;
};

static enum st_status on_piece(void *ctx, size_t start, size_t len)
{
    struct enc *e = ctx;
    const unsigned char *s = (const unsigned char *)e->base + start;

    /* Always merge, never look the whole piece up first: qwen2 has
     * ignore_merges = false, and a lookup could pick a token BPE would not. */
    return st_bpe_piece(&e->work, &e->tok->merges, e->tok->byte_ids, s, len,
                        &e->ids, &e->n, &e->cap);
}

static enum st_status encode_raw(struct enc *e, const char *s, size_t n, struct st_buf *norm)
{
    enum st_status rc;
    bool same = true;

    if (e->tok->nfc) {
        rc = st_uni_nfc(s, n, norm, &same);
        if (rc != ST_OK)
            return rc;
    }
    e->base = same ? s : norm->data;
    return st_pretok_split(e->tok->pre, e->base, same ? n : norm->len, on_piece, e);
}

/* bos, the fragments (special tokens as they are, the rest through BPE),
 * eos; the caller frees f and norm. */
static enum st_status encode_all(struct enc *e, const char *text, size_t len, bool add_special,
                                 bool parse_special, struct frags *f, struct st_buf *norm)
{
    const struct st_tok *tok = e->tok;
    if (add_special && tok->add_bos && tok->bos >= 0)
        ST_TRY(st_ids_push(&e->ids, &e->n, &e->cap, tok->bos));
    ST_TRY(partition(tok, text, len, parse_special, f));
    for (size_t i = 0; i < f->n; i++) {
        if (f->v[i].id >= 0)
            ST_TRY(st_ids_push(&e->ids, &e->n, &e->cap, f->v[i].id));
        else
            ST_TRY(encode_raw(e, text + f->v[i].start, f->v[i].len, norm));
    }
    if (add_special && tok->add_eos && tok->eos >= 0)
        ST_TRY(st_ids_push(&e->ids, &e->n, &e->cap, tok->eos));
    return ST_OK;
}

enum st_status st_tok_encode(const struct st_tok *tok, const char *text,
                             size_t len, bool add_special, bool parse_special,
                             int32_t **ids, size_t *n, struct st_err *err)
{
    struct enc e = { tok, NULL, { NULL, 0, NULL, 0 }, NULL, 0, 0 };
    struct frags f = { NULL, 0, 0 };
    struct st_buf norm;

    *ids = NULL;
    *n = 0;
    char *nul = NULL;   /* the text with U+0000 as the byte 0 (strata/mutf8.h) */
    if (st_mutf8_has_nul(text, len)) {
        nul = malloc(len);
        if (!nul)
            return st_err_set(err, ST_ERR_NOMEM, "tokenize: out of memory (%zu bytes of text)",
                              len);
        memcpy(nul, text, len);
        len = st_mutf8_decode(nul, len);
        text = nul;
    }
    st_buf_init(&norm);
    enum st_status rc = encode_all(&e, text, len, add_special, parse_special, &f, &norm);
    free(f.v);
    free(nul);
    st_buf_fini(&norm);
    st_bpe_work_fini(&e.work);
    if (rc != ST_OK) {
        free(e.ids);
        return st_err_set(err, rc, "tokenize: out of memory (%zu bytes of text)", len);
    }
    *ids = e.ids;
    *n = e.n;
    return ST_OK;
}
