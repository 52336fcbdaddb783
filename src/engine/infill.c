/* infill.c -- the fill-in-the-middle prompt of a model (/infill, and the
 * legacy "suffix" of /v1/completions; docs/API.md "/infill"): the texts are
 * tokenized by the model's text runner WITHOUT special-token parsing (code
 * that contains "<|fim_prefix|>" stays text), then laid out around the
 * vocabulary's FIM ids within the context budget by strata/fim.h.
 *
 * Texts llama-server puts in (format_infill), kept so a model sees the same
 * prompt behind either server: the repository line "myproject\n" and the
 * current-file line "filename\n" unless the request names them; an extra
 * chunk without a filename is "tmp"; without a <SEP> token each chunk is led
 * by "\n\n--- snippet ---\n\n".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "strata/fim.h"

#define SNIPPET_SEP "\n\n--- snippet ---\n\n"

/* Token runs made here, freed together. */
struct runs {
    int32_t *ids[8];
    size_t n;
};

static enum st_status tok_text(const struct st_runner *r, const char *text, struct runs *own,
                               struct st_fim_span *out, struct st_err *err)
{
    int32_t *ids = NULL;
    size_t n = 0;
    out->ids = NULL;
    out->n = 0;
    if (!text || !*text)
        return ST_OK;
    enum st_status rc = st_runner_tokenize(r, text, strlen(text), false, false, &ids, &n, err);
    if (rc != ST_OK)
        return rc;
    if (own) {
        own->ids[own->n++] = ids;
    }
    out->ids = ids;
    out->n = n;
    return ST_OK;
}

/* "text\n" tokenized (llama.cpp tokenizes the name and its newline together). */
static enum st_status tok_line(const struct st_runner *r, const char *text, struct runs *own,
                               struct st_fim_span *out, struct st_err *err)
{
    size_t n = strlen(text);
    char *line = malloc(n + 2);
    if (!line)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for an infill line");
    memcpy(line, text, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    enum st_status rc = tok_text(r, line, own, out, err);
    free(line);
    return rc;
}

static void runs_free(struct runs *own)
{
    for (size_t i = 0; i < own->n; i++)
        free(own->ids[i]);
    own->n = 0;
}

/* The extra chunks' heads and texts: 2 * n_extra owned runs in *heap. */
static enum st_status tok_chunks(const struct st_runner *r, const struct st_fim_ids *f,
                                 const struct st_infill_input *in, struct st_fim_span *heads,
                                 struct st_fim_span *texts, struct st_err *err)
{
    for (size_t i = 0; i < in->n_extra; i++) {
        const struct st_infill_chunk *c = &in->extra[i];
        const char *name = c->filename ? c->filename : "tmp";
        ST_TRY(f->sep >= 0 ? tok_line(r, name, NULL, &heads[i], err)
                           : tok_text(r, SNIPPET_SEP, NULL, &heads[i], err));
        ST_TRY(tok_text(r, c->text, NULL, &texts[i], err));
    }
    return ST_OK;
}

static int64_t infill_budget(int64_t ctx, int64_t n_predict)
{
    int64_t reserve = n_predict > 0 ? ST_MIN(n_predict, ctx / 2) : ST_MIN(256, ctx / 4);
    return ctx - ST_MAX(reserve, 1);
}

/* The bos the model's tokenizer adds to a prompt (empty text, add_special),
 * or -1. */
static int32_t bos_of(const struct st_runner *r)
{
    int32_t *b = NULL;
    size_t n = 0;
    struct st_err e = { 0 };
    int32_t bos = -1;
    if (st_runner_tokenize(r, "", 0, true, false, &b, &n, &e) == ST_OK && n == 1)
        bos = b[0];
    free(b);
    return bos;
}

/* Every part tokenized into p (the runs it owns in *own, the chunks' in
 * heads and texts). */
static enum st_status tok_parts(const struct st_runner *r, const struct st_fim_ids *f,
                                const struct st_infill_input *in, struct st_fim_parts *p,
                                struct runs *own, struct st_fim_span *heads,
                                struct st_fim_span *texts, struct st_err *err)
{
    if (f->rep >= 0)
        ST_TRY(tok_line(r, in->repo_name ? in->repo_name : "myproject", own, &p->repo, err));
    if (f->sep >= 0)
        ST_TRY(tok_line(r, in->filename ? in->filename : "filename", own, &p->file, err));
    if (in->prefix_ids)
        p->prefix = (struct st_fim_span){ in->prefix_ids, in->n_prefix_ids };
    else
        ST_TRY(tok_text(r, in->prefix, own, &p->prefix, err));
    ST_TRY(tok_text(r, in->suffix, own, &p->suffix, err));
    ST_TRY(tok_text(r, in->prompt, own, &p->prompt, err));
    return tok_chunks(r, f, in, heads, texts, err);
}

/* With the runner's text side: tokenize every part, then lay it out. */
static enum st_status build(const struct st_runner *r, const struct st_fim_ids *f,
                            const struct st_infill_input *in, int64_t budget, int32_t **ids,
                            size_t *n_ids, struct st_fim_trim *trim, struct st_err *err)
{
    struct runs own = { .n = 0 };
    size_t nx = in->n_extra ? in->n_extra : 1;
    struct st_fim_span *heads = calloc(nx, sizeof(*heads));
    struct st_fim_span *texts = calloc(nx, sizeof(*texts));
    struct st_fim_parts p = { .bos = bos_of(r), .chunk_head = heads, .chunk_text = texts,
                              .n_chunks = in->n_extra };
    enum st_status rc = heads && texts ? tok_parts(r, f, in, &p, &own, heads, texts, err)
                                       : st_err_set(err, ST_ERR_NOMEM, "no memory for infill");
    if (rc == ST_OK)
        rc = st_fim_layout(f, &p, budget, ids, n_ids, trim, err);
    for (size_t i = 0; heads && texts && i < in->n_extra; i++) {
        free((void *)heads[i].ids);
        free((void *)texts[i].ids);
    }
    free(heads);
    free(texts);
    runs_free(&own);
    return rc;
}

enum st_status st_engine_pool_infill_prompt(struct st_engine_pool *p, int32_t model,
                                            const struct st_infill_input *in, int32_t **ids,
                                            size_t *n_ids, struct st_fim_trim *trim,
                                            struct st_err *err)
{
    *ids = NULL;
    *n_ids = 0;
    if (model < 0 || model >= p->n_models)
        return st_err_set(err, ST_ERR_NOT_FOUND, "no model with index %d", (int)model);
    const struct st_runner *r;
    enum st_status rc = st_pool_text(p, model, &r, err);
    if (rc != ST_OK)
        return rc;
    struct st_fim_ids f;
    st_runner_fim_ids(r, &f);
    if (!st_fim_usable(&f))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "the model `%s` has no fill-in-the-middle "
                          "tokens (<|fim_prefix|>, <|fim_suffix|>, <|fim_middle|> or its "
                          "family's equivalents), so it cannot infill",
                          st_engine_pool_model_name(p, model));
    int64_t budget = infill_budget(p->models[model].cfg.ctx_size, in->n_predict);
    return build(r, &f, in, budget, ids, n_ids, trim, err);
}
