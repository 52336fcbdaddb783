/* json_mask.c -- JSON mode (response_format json_object) for the sampler:
 * which tokens may come next so that the text stays a valid JSON object
 * prefix (include/strata/json_prefix.h), and end of generation only once
 * the object is complete.
 *
 * Per step: a 256-entry table of the bytes the state allows next (256
 * pushes on copies of the 16-byte state), then one lookup per token on its
 * first byte (after its leading whitespace, between values), and a walk
 * from a copy of the state only for the multi-byte tokens that pass it.
 * Every token's bytes are read once per slot and model (st_json_vocab),
 * on the first sample of a JSON request, never for runners that force
 * their tokens (the sim).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void st_json_vocab_free(struct st_json_vocab *v)
{
    free(v->off);
    free(v->bytes);
    free(v->cls);
    free(v->lead);
    free(v->head);
    memset(v, 0, sizeof(*v));
}

/* Read every token's bytes into v (which is empty). */
static enum st_status json_vocab_read(struct st_json_vocab *v, int32_t n_vocab,
                                      st_sample_piece_fn piece, st_sample_eog_fn eog,
                                      const void *ctx)
{
    size_t cap = (size_t)n_vocab * 8, len = 0;
    v->off = malloc(((size_t)n_vocab + 1) * sizeof(*v->off));
    v->cls = malloc((size_t)n_vocab);
    v->lead = malloc((size_t)n_vocab);
    v->head = malloc((size_t)n_vocab);
    v->bytes = malloc(cap);
    if (!v->off || !v->cls || !v->lead || !v->head || !v->bytes)
        return ST_ERR_NOMEM;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (cap - len < ST_SAMPLE_MAX_PIECE) {
            unsigned char *b = realloc(v->bytes, cap * 2);
            if (!b)
                return ST_ERR_NOMEM;
            v->bytes = b;
            cap *= 2;
        }
        size_t n = piece(ctx, i, (char *)v->bytes + len, ST_SAMPLE_MAX_PIECE);
        n = n < ST_SAMPLE_MAX_PIECE ? n : ST_SAMPLE_MAX_PIECE;
        v->off[i] = (uint32_t)len;
        v->cls[i] = eog(ctx, i) ? ST_JV_EOG : 0;
        bool plain = n > 0;
        for (size_t k = 0; k < n && plain; k++) {
            unsigned char b = v->bytes[len + k];
            plain = b >= 0x20 && b != '"' && b != '\\';
        }
        v->cls[i] |= plain ? ST_JV_PLAIN : 0;
        size_t w = 0;
        while (w < n && w < 255 && strchr(" \t\n\r", v->bytes[len + w]) && v->bytes[len + w])
            w++;
        v->lead[i] = (uint8_t)w;
        v->head[i] = w < n ? v->bytes[len + w] : 0;
        v->cls[i] |= n == 0 ? ST_JV_EMPTY : w == n ? ST_JV_ALLWS : n - w == 1 ? ST_JV_ONE : 0;
        len += n;
    }
    v->off[n_vocab] = (uint32_t)len;
    v->n_vocab = n_vocab;
    return ST_OK;
}

enum st_status st_sampler_json_vocab(struct st_sampler *s, const void *owner, int32_t model,
                                     int32_t n_vocab, st_sample_piece_fn piece,
                                     st_sample_eog_fn eog, const void *ctx)
{
    struct st_json_vocab *v = &s->jv;
    if (n_vocab < 1)
        return ST_ERR_INVALID;
    if (v->n_vocab == n_vocab && v->owner == owner && v->model == model)
        return ST_OK;
    st_json_vocab_free(v);
    enum st_status rc = json_vocab_read(v, n_vocab, piece, eog, ctx);
    if (rc != ST_OK) {
        st_json_vocab_free(v);
        return rc;
    }
    v->owner = owner;
    v->model = model;
    return ST_OK;
}

/* json mode: first[b] = the byte b may come next. The reply starts with
 * '{' (JSON allows whitespace first; a model let loose on it may emit
 * nothing else). Once the object is complete only end of generation may
 * come, unless that is banned (ignore_eos): then whitespace, which is all
 * the validator still takes. */
void st_json_mask_first_bytes(const struct st_sampler *s, bool eog_banned, bool first[256])
{
    bool done = st_json_prefix_complete(&s->js), empty = st_json_prefix_empty(&s->js);
    for (int b = 0; b < 256; b++) {
        struct st_json_prefix j = s->js;
        first[b] = (!done || eog_banned) && (!empty || b == '{') &&
                   st_json_prefix_push(&j, (unsigned char)b);
    }
}

/* json mode: may token 'id' come next? 'in_str': the state is inside a
 * string, where string-safe tokens need no walk; 'between': whitespace
 * does not change it, so a token's leading whitespace (" the" and the
 * like, a third of a BPE vocabulary) is skipped and its next byte looked
 * up in 'first' before any walk. */
bool st_json_mask_allows(const struct st_sampler *s, const bool first[256], bool in_str,
                         bool between, int32_t id)
{
    const struct st_json_vocab *v = &s->jv;
    unsigned c = v->cls[id];
    if (c & ST_JV_EOG)
        return st_json_prefix_complete(&s->js);
    if (c & ST_JV_EMPTY)
        return false;   /* an empty piece would not move the text on */
    if (in_str && (c & ST_JV_PLAIN))
        return true;
    uint32_t a = v->off[id], n = v->off[id + 1] - a;
    if (between) {
        /* every whitespace byte does the same here: first[' '] speaks for all */
        if (v->lead[id] > 0 && !first[' '])
            return false;
        if (c & ST_JV_ALLWS)
            return true;
        if (!first[v->head[id]])
            return false;
        if (c & ST_JV_ONE)
            return true;
        a += v->lead[id];
        n -= v->lead[id];
    } else {
        if (!first[v->bytes[a]])
            return false;
        if (n == 1)
            return true;
    }
    struct st_json_prefix j = s->js;
    return st_json_prefix_feed(&j, (const char *)v->bytes + a, n);
}
