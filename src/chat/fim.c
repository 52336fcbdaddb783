/* fim.c -- fill-in-the-middle prompts as token ids (include/strata/fim.h):
 * finding a vocabulary's FIM tokens by their text, and the layout with its
 * context budget. Pure id arithmetic: the engine tokenizes the texts.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/fim.h"
#include "strata/compiler.h"

void st_fim_ids_none(struct st_fim_ids *f)
{
    f->pre = f->suf = f->mid = f->pad = f->rep = f->sep = -1;
}

/* U+FF5C fullwidth bar and U+2581 lower one-eighth block (DeepSeek's). */
#define FWB "\xef\xbd\x9c"
#define LOB "\xe2\x96\x81"

static const char *const pre_texts[] = { "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                         "<PRE>", LOB "<PRE>", "<" FWB "fim" LOB "begin" FWB ">",
                                         "<|fim" LOB "begin|>", NULL };
static const char *const suf_texts[] = { "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                         "<SUF>", LOB "<SUF>", "<" FWB "fim" LOB "hole" FWB ">",
                                         "<|fim" LOB "hole|>", NULL };
static const char *const mid_texts[] = { "<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                         "<MID>", LOB "<MID>", "<" FWB "fim" LOB "end" FWB ">",
                                         "<|fim" LOB "end|>", NULL };
static const char *const pad_texts[] = { "<|fim_pad|>", "<fim-pad>", "<fim_pad>",
                                         "<|fim" LOB "pad|>", NULL };
static const char *const rep_texts[] = { "<|repo_name|>", "<fim-repo>", "<REPO>",
                                         "<reponame>", NULL };
static const char *const sep_texts[] = { "<|file_sep|>", "<fim-sep>", "<file_sep>",
                                         "<filename>", NULL };

static void find_first(const struct st_tok *tok, const char *const *texts, int32_t *id)
{
    for (size_t i = 0; *id < 0 && texts[i]; i++)
        *id = st_tok_find(tok, texts[i], strlen(texts[i]));
}

void st_fim_detect(const struct st_tok *tok, struct st_fim_ids *f)
{
    find_first(tok, pre_texts, &f->pre);
    find_first(tok, suf_texts, &f->suf);
    find_first(tok, mid_texts, &f->mid);
    find_first(tok, pad_texts, &f->pad);
    find_first(tok, rep_texts, &f->rep);
    find_first(tok, sep_texts, &f->sep);
}

bool st_fim_usable(const struct st_fim_ids *f)
{
    return f->pre >= 0 && f->suf >= 0 && f->mid >= 0;
}

/* ---- budget ------------------------------------------------------------ */

struct plan {
    size_t prefix_take, suffix_take;   /* the last / first tokens kept */
    size_t first_chunk;                /* chunks [first_chunk, n_chunks) are kept */
    bool headers;                      /* repo and current-file headers kept */
};

static int64_t chunk_cost(const struct st_fim_ids *f, const struct st_fim_parts *p, size_t i)
{
    return (f->sep >= 0 ? 1 : 0) + (int64_t)p->chunk_head[i].n + (int64_t)p->chunk_text[i].n;
}

static int64_t header_cost(const struct st_fim_ids *f, const struct st_fim_parts *p)
{
    int64_t c = 0;
    if (f->rep >= 0)
        c += 1 + (int64_t)p->repo.n;
    if (f->sep >= 0)
        c += 1 + (int64_t)p->file.n;
    return c;
}

static void plan_core(const struct st_fim_parts *p, int64_t avail, struct plan *pl)
{
    int64_t np = (int64_t)p->prefix.n, ns = (int64_t)p->suffix.n;
    if (np + ns <= avail) {
        pl->prefix_take = (size_t)np;
        pl->suffix_take = (size_t)ns;
        return;
    }
    int64_t s = ST_MIN(ns, ST_MAX(avail / 4, avail - np));
    pl->suffix_take = (size_t)s;
    pl->prefix_take = (size_t)ST_MIN(np, avail - s);
}

static void plan_extra(const struct st_fim_ids *f, const struct st_fim_parts *p, int64_t left,
                       struct plan *pl)
{
    pl->first_chunk = p->n_chunks;
    int64_t h = header_cost(f, p);
    pl->headers = h <= left;
    if (!pl->headers)
        return;
    left -= h;
    while (pl->first_chunk > 0 && chunk_cost(f, p, pl->first_chunk - 1) <= left) {
        left -= chunk_cost(f, p, pl->first_chunk - 1);
        pl->first_chunk--;
    }
}

/* ---- layout ------------------------------------------------------------ */

struct out {
    int32_t *ids;
    size_t n;
};

static void put1(struct out *o, int32_t id)
{
    o->ids[o->n++] = id;
}

static void put(struct out *o, const int32_t *ids, size_t n)
{
    if (n)
        memcpy(o->ids + o->n, ids, n * sizeof(*ids));
    o->n += n;
}

static void write_extra(const struct st_fim_ids *f, const struct st_fim_parts *p,
                        const struct plan *pl, struct out *o)
{
    if (!pl->headers)
        return;
    if (f->rep >= 0) {
        put1(o, f->rep);
        put(o, p->repo.ids, p->repo.n);
    }
    for (size_t i = pl->first_chunk; i < p->n_chunks; i++) {
        if (f->sep >= 0)
            put1(o, f->sep);
        put(o, p->chunk_head[i].ids, p->chunk_head[i].n);
        put(o, p->chunk_text[i].ids, p->chunk_text[i].n);
    }
    if (f->sep >= 0) {
        put1(o, f->sep);
        put(o, p->file.ids, p->file.n);
    }
}

enum st_status st_fim_layout(const struct st_fim_ids *f, const struct st_fim_parts *p,
                             int64_t budget, int32_t **ids, size_t *n_ids,
                             struct st_fim_trim *trim, struct st_err *err)
{
    *ids = NULL;
    *n_ids = 0;
    if (!st_fim_usable(f))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "this model has no fill-in-the-middle "
                          "tokens (prefix, suffix and middle)");
    int64_t fixed = (p->bos >= 0 ? 1 : 0) + 3 + (int64_t)p->prompt.n;
    if (fixed > budget)
        return st_err_set(err, ST_ERR_TOO_LONG, "the infill prompt needs %lld tokens before "
                          "any prefix or suffix; the budget is %lld", (long long)fixed,
                          (long long)budget);
    struct plan pl;
    plan_core(p, budget - fixed, &pl);
    plan_extra(f, p, budget - fixed - (int64_t)(pl.prefix_take + pl.suffix_take), &pl);
    size_t cap = (size_t)fixed + pl.prefix_take + pl.suffix_take;
    if (pl.headers) {
        cap += (size_t)header_cost(f, p);
        for (size_t i = pl.first_chunk; i < p->n_chunks; i++)
            cap += (size_t)chunk_cost(f, p, i);
    }
    struct out o = { malloc(cap * sizeof(int32_t)), 0 };
    if (!o.ids)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for a %zu-token infill prompt", cap);
    if (p->bos >= 0)
        put1(&o, p->bos);
    write_extra(f, p, &pl, &o);
    put1(&o, f->pre);
    put(&o, p->prefix.ids + (p->prefix.n - pl.prefix_take), pl.prefix_take);
    put1(&o, f->suf);
    put(&o, p->suffix.ids, pl.suffix_take);
    put1(&o, f->mid);
    put(&o, p->prompt.ids, p->prompt.n);
    if (trim) {
        trim->prefix_dropped = (int64_t)(p->prefix.n - pl.prefix_take);
        trim->suffix_dropped = (int64_t)(p->suffix.n - pl.suffix_take);
        trim->chunks_dropped = pl.headers ? (int64_t)pl.first_chunk : (int64_t)p->n_chunks;
        trim->headers_dropped = !pl.headers;
    }
    *ids = o.ids;
    *n_ids = o.n;
    return ST_OK;
}
