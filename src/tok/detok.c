/* detok.c -- streaming detokenizer (UTF-8 safe) and st_tok_decode.
 *
 * Invariant: everything appended to 'out' is valid UTF-8 but for U+0000,
 * written as C0 80 (strata/mutf8.h); d->held is always
 * a proper prefix of some valid multi-byte sequence (1..3 bytes). Valid runs
 * are appended in one piece; each maximal invalid subpart becomes U+FFFD.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/detok.h"
#include "strata/mutf8.h"
#include "strata/tokenizer.h"

#include "tok/unicode/unicode.h"

static const char replacement[] = "\xEF\xBF\xBD";     /* U+FFFD */

void st_detok_init(struct st_detok *d, const struct st_tok *tok, bool special)
{
    memset(d, 0, sizeof(*d));
    d->tok = tok;
    d->special = special;
}

size_t st_detok_pending(const struct st_detok *d)
{
    return d->n_held;
}

/* Complete (or give up on) the held sequence with the first bytes of p.
 * Returns the input bytes consumed. */
static size_t finish_held(struct st_detok *d, const unsigned char *p, size_t n,
                          struct st_buf *out, enum st_status *rc)
{
    unsigned char tmp[8];
    size_t take = ST_MIN(n, 4 - d->n_held), len, k;
    uint32_t cp;

    memcpy(tmp, d->held, d->n_held);
    memcpy(tmp + d->n_held, p, take);
    len = d->n_held + take;
    if (st_utf8_incomplete_tail(tmp, len) == len) {
        memcpy(d->held, tmp, len);          /* still incomplete: keep holding */
        d->n_held = len;
        return take;
    }
    k = st_utf8_decode(tmp, len, &cp);
    *rc = (cp & ST_UNI_INVALID) ? st_buf_append(out, replacement, 3)
                                : st_buf_append(out, tmp, k);
    k = k > d->n_held ? k - d->n_held : 0;  /* held bytes are always consumed */
    d->n_held = 0;
    return k;
}

enum st_status st_detok_push_bytes(struct st_detok *d, const void *bytes,
                                   size_t n, struct st_buf *out)
{
    const unsigned char *p = bytes;
    enum st_status rc = ST_OK;
    size_t i = 0, run = 0, k;
    uint32_t cp;

    if (d->n_held && n)
        i = finish_held(d, p, n, out, &rc);
    ST_TRY(rc);
    run = i;
    while (i < n) {
        if (p[i] == 0) {   /* U+0000 as C0 80: text stays a C string (strata/mutf8.h) */
            ST_TRY(st_buf_append(out, p + run, i - run));
            ST_TRY(st_buf_append(out, ST_MUTF8_NUL, 2));
            run = ++i;
            continue;
        }
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        k = st_utf8_decode(p + i, n - i, &cp);
        if (!(cp & ST_UNI_INVALID)) {
            i += k;
            continue;
        }
        ST_TRY(st_buf_append(out, p + run, i - run));
        if (st_utf8_incomplete_tail(p + i, n - i) == n - i) {
            memcpy(d->held, p + i, n - i);  /* a prefix cut by the token end */
            d->n_held = n - i;
            return ST_OK;
        }
        ST_TRY(st_buf_append(out, replacement, 3));
        i += k;
        run = i;
    }
    return st_buf_append(out, p + run, i - run);
}

enum st_status st_detok_push_token(struct st_detok *d, int32_t id,
                                   struct st_buf *out, struct st_err *err)
{
    struct st_str piece;
    enum st_status rc;

    if (!d->tok || id < 0 || id >= st_tok_n_vocab(d->tok))
        return st_err_set(err, ST_ERR_INVALID, "token id %d is outside the vocabulary",
                          (int)id);
    if (!d->special && st_tok_type_of(d->tok, id) == ST_TOK_CONTROL &&
        !st_tok_is_marker(d->tok, id))
        return ST_OK;           /* reply markers ([TOOL_CALLS] ...) stay visible */
    piece = st_tok_piece(d->tok, id);
    rc = st_detok_push_bytes(d, piece.ptr, piece.len, out);
    if (rc != ST_OK)
        return st_err_set(err, rc, "detokenize: out of memory");
    return ST_OK;
}

enum st_status st_detok_flush(struct st_detok *d, struct st_buf *out)
{
    if (!d->n_held)
        return ST_OK;
    d->n_held = 0;
    return st_buf_append(out, replacement, 3);
}

/* ids[0..n) as text into b (a string even for no ids). */
static enum st_status decode_into(struct st_detok *d, const int32_t *ids, size_t n,
                                  struct st_buf *b, struct st_err *err)
{
    ST_TRY(st_buf_append(b, "", 0));
    for (size_t i = 0; i < n; i++)
        ST_TRY(st_detok_push_token(d, ids[i], b, err));
    return st_detok_flush(d, b);
}

enum st_status st_tok_decode(const struct st_tok *tok, const int32_t *ids,
                             size_t n, bool special, char **out, size_t *len,
                             struct st_err *err)
{
    struct st_detok d;
    struct st_buf b;

    *out = NULL;
    *len = 0;
    st_detok_init(&d, tok, special);
    st_buf_init(&b);
    enum st_status rc = decode_into(&d, ids, n, &b, err);
    if (rc != ST_OK) {
        st_buf_fini(&b);
        if (rc == ST_ERR_NOMEM)
            st_err_set(err, rc, "detokenize: out of memory");
        return rc;
    }
    *len = b.len;
    *out = st_buf_steal(&b);
    return ST_OK;
}
