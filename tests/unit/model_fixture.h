/* model_fixture.h -- a synthetic model file for a test: `strata make-model`
 * run in-process (include/strata/make_model.h), failing the test when it
 * cannot be made; a CPU engine pool on it stepped by the test; recorders
 * of what a request received: generated tokens and text (fixture_out), or
 * for a request of token ids its prompt scores too (fixture_got, used by
 * test_engine_echo.c, test_engine_score_cache.c, test_engine_prefix_copy.c).
 * Header-only (static inline), for the suites that link st_model. */
#ifndef STRATA_TEST_MODEL_FIXTURE_H
#define STRATA_TEST_MODEL_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/clock.h"
#include "strata/defaults.h"
#include "strata/engine.h"
#include "strata/make_model.h"
#include "strata/sched.h"

/* Write <dir>/<preset>-<quant>[-mtp]-<seed>.gguf and its path into path
 * (cap bytes); returns path. */
static inline const char *fixture_make_model(char *path, size_t cap, const char *dir,
                                             const char *preset, const char *quant,
                                             uint64_t seed, bool mtp)
{
    snprintf(path, cap, "%s/%s-%s%s-%llu.gguf", dir, preset, quant, mtp ? "-mtp" : "",
             (unsigned long long)seed);
    struct st_make_model_opts o = { .out_path = path, .preset = preset, .quant = quant,
                                    .seed = seed, .mtp = mtp };
    struct st_err err = { 0 };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model %s %s: %s", preset, quant,
                  err.msg);
    return path;
}

/* A batching scheduler and one CPU engine serving the model at 'path' on a
 * manual clock, as struct fixture_knobs says (slots of 256 tokens, 2
 * threads). Stepped by the test (st_engine_pool_step), never by threads. */
struct fixture_pool {
    struct st_clock_manual clk;
    struct st_sched       *sched;
    struct st_engine_pool *pool;
};

/* What fixture_pool_start_with sets; every field is read, so start from
 * fixture_knobs(np). */
struct fixture_knobs {
    int32_t np;            /* slots */
    int32_t ubatch;        /* rows a READ step at most */
    int32_t mtp_draft;     /* > 0: MTP drafting up to this many tokens */
    int32_t ngram_draft;   /* > 0: n-gram drafting (--spec ngram, n 2..4) up to this many */
    int32_t ckpts;         /* state checkpoints kept a slot (--ctx-checkpoints) */
    int64_t give_way;      /* > 0: the scheduler's give_way_tokens; else its default */
};

/* np slots, ubatch 64, no drafting, the default checkpoints and give-way. */
static inline struct fixture_knobs fixture_knobs(int32_t np)
{
    return (struct fixture_knobs){ .np = np, .ubatch = 64, .ckpts = ST_DEFAULT_CTX_CHECKPOINTS };
}

/* The pool as k says, on the sim runner when path is NULL. */
static inline void fixture_pool_start_with(struct fixture_pool *f, const char *path,
                                           const struct fixture_knobs *k)
{
    st_clock_manual_init(&f->clk, 0);
    struct st_sched_config sc;
    st_sched_config_defaults(&sc);
    sc.batch = true;
    sc.log_dispatch = false;
    if (k->give_way > 0)
        sc.give_way_tokens = k->give_way;
    struct st_pool_config pc;
    st_pool_config_defaults(&pc);
    pc.model.name = "m";
    pc.model.path = (char *)path;
    pc.model.backend = path ? ST_BACKEND_CPU : ST_BACKEND_SIM;
    pc.model.parallel = k->np;
    pc.model.ctx_size = 256;
    pc.threads = 2;
    pc.ubatch = k->ubatch;
    pc.mtp = k->mtp_draft > 0;
    pc.mtp_draft = k->mtp_draft > 0 ? k->mtp_draft : 1;
    pc.ngram = k->ngram_draft > 0;
    if (k->ngram_draft > 0)
        pc.spec_draft = k->ngram_draft;
    pc.ctx_checkpoints = k->ckpts;
    struct st_err err = { 0 };
    f->sched = NULL;
    f->pool = NULL;
    ck_assert(st_sched_new(&sc, &f->clk.clock, &f->sched, &err) == ST_OK);
    ck_assert_msg(st_engine_pool_new(&pc, f->sched, &f->clk.clock, &f->pool, &err) == ST_OK,
                  "%s", err.msg);
}

/* The pool with the chunk size chosen ('ubatch' rows a READ step at most),
 * MTP drafting up to mtp_draft tokens when mtp_draft > 0, n-gram drafting
 * up to ngram_draft tokens when ngram_draft > 0. */
static inline void fixture_pool_start_ub(struct fixture_pool *f, const char *path, int32_t np,
                                         int32_t ubatch, int32_t mtp_draft, int32_t ngram_draft)
{
    struct fixture_knobs k = fixture_knobs(np);
    k.ubatch = ubatch;
    k.mtp_draft = mtp_draft;
    k.ngram_draft = ngram_draft;
    fixture_pool_start_with(f, path, &k);
}

static inline void fixture_pool_start_spec(struct fixture_pool *f, const char *path,
                                           int32_t np, int32_t mtp_draft, int32_t ngram_draft)
{
    fixture_pool_start_ub(f, path, np, 64, mtp_draft, ngram_draft);
}

static inline void fixture_pool_start(struct fixture_pool *f, const char *path, int32_t np,
                                      int32_t mtp_draft)
{
    fixture_pool_start_spec(f, path, np, mtp_draft, 0);
}

/* Step until no engine has work left (or a step budget says it is stuck). */
static inline void fixture_pool_drain(struct fixture_pool *f)
{
    for (int steps = 0; steps < 100000 && st_engine_pool_step(f->pool, 0); steps++)
        ;
}

static inline void fixture_pool_stop(struct fixture_pool *f)
{
    st_engine_pool_free(f->pool);
    st_sched_free(f->sched);
    f->pool = NULL;
    f->sched = NULL;
}

/* What one request received: its tokens with their logprobs and text, and
 * how it ended (fixture_record is its emit callback). */
#define FIXTURE_MAX_TOK 256
struct fixture_out {
    int32_t tok[FIXTURE_MAX_TOK];
    float   lp[FIXTURE_MAX_TOK];
    int     n;
    char    text[8192];
    size_t  len;
    bool    ended;
    enum st_finish finish;
};

static inline void fixture_record(void *ctx, const struct st_event *ev)
{
    struct fixture_out *o = ctx;
    if (ev->kind == ST_EVENT_END) {
        o->ended = true;
        o->finish = ev->finish;
        return;
    }
    if (ev->kind != ST_EVENT_TOKEN)
        return;
    if (o->n < FIXTURE_MAX_TOK) {
        o->tok[o->n] = ev->token;
        o->lp[o->n++] = ev->logprob;
    }
    ck_assert(o->len + ev->text_len < sizeof(o->text));
    memcpy(o->text + o->len, ev->text, ev->text_len);
    o->len += ev->text_len;
    o->text[o->len] = '\0';
}

/* Two seeded requests, prompts[i] with seed + i (at most max_tokens,
 * temperature temp), through a fresh 2-slot pool on 'path' (mtp_draft:
 * --mtp-draft), each constrained by what 'constrain' puts into its params
 * (a reference of the request's own), run to the end; each must end by
 * stop or length. out[2]: what each received (the caller checks the text
 * against its constraint). */
typedef void (*fixture_constrain_fn)(struct st_gen_params *p, void *ctx);

struct fixture_pair {
    const char *prompts[2];
    int32_t     max_tokens;
    uint64_t    seed;
};

/* The pair the schema and grammar suites send. */
#define FIXTURE_PAIR_DEFAULT { { "The quick brown fox", "1 2 3 4 5 6" }, 60, 7 }

static inline void fixture_run_constrained_pair(const char *path, int32_t mtp_draft, float temp,
                                                const struct fixture_pair *pair,
                                                fixture_constrain_fn constrain, void *ctx,
                                                struct fixture_out out[2])
{
    struct fixture_pool f;
    fixture_pool_start(&f, path, 2, mtp_draft);
    (void)st_engine_pool_step(f.pool, 0);   /* loads the model */
    memset(out, 0, sizeof(*out) * 2);
    for (int32_t i = 0; i < 2; i++) {
        struct st_request *req = st_request_new();
        snprintf(req->id, sizeof(req->id), "c%d", (int)i);
        req->prompt = strdup(pair->prompts[i]);
        req->params.max_tokens = pair->max_tokens;
        req->params.temperature = temp;
        req->params.has_seed = true;
        req->params.seed = pair->seed + (uint64_t)i;
        constrain(&req->params, ctx);
        req->emit = fixture_record;
        req->emit_ctx = &out[i];
        struct st_err err = { 0 };
        ck_assert_msg(st_engine_pool_submit(f.pool, req, &err) == ST_OK, "%s", err.msg);
        st_request_unref(req);
    }
    fixture_pool_drain(&f);
    fixture_pool_stop(&f);
    for (int32_t i = 0; i < 2; i++) {
        ck_assert(out[i].ended);
        ck_assert_msg(out[i].finish == ST_FINISH_STOP || out[i].finish == ST_FINISH_LENGTH,
                      "request %d: finish %d", (int)i, (int)out[i].finish);
    }
}

/* ---- a request of token ids, with its prompt scores ----------------------- */

/* The test text of the scoring suites (FIXTURE_STORY), and with a
 * multiple-choice question after it (FIXTURE_STORY_QUESTION). */
#define FIXTURE_STORY                                                                        \
    "The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away, "  \
    "there lived a king who had three daughters; the youngest was the cleverest of all, "  \
    "and she could count to 1 2 3 4 5 6 7 8 9 10 faster than anyone in the kingdom."
#define FIXTURE_STORY_QUESTION                                                               \
    FIXTURE_STORY " Which of these is a fruit? An apple, a chair, a river or a song."

/* 'text' tokenized on p's model (BOS first), again and again until 'want'
 * ids; returns want. ids holds want. */
static inline int64_t fixture_text_ids(struct st_engine_pool *p, const char *text, int32_t *ids,
                                       int64_t want)
{
    int64_t n = 0;
    while (n < want) {
        int32_t *t = NULL;
        size_t k = 0;
        struct st_err err = { 0 };
        ck_assert(st_engine_pool_tokenize(p, 0, text, strlen(text), n == 0, true, &t, &k,
                                          &err) == ST_OK);
        for (size_t i = 0; i < k && n < want; i++)
            ids[n++] = t[i];
        free(t);
    }
    return n;
}

/* fixture_text_ids on the model file at 'path' (a pool of its own). */
static inline int64_t fixture_file_text_ids(const char *path, const char *text, int32_t *ids,
                                            int64_t want)
{
    struct fixture_pool f;
    fixture_pool_start(&f, path, 1, 0);
    int64_t n = fixture_text_ids(f.pool, text, ids, want);
    fixture_pool_stop(&f);
    return n;
}

/* Prompt positions and generated tokens a struct fixture_got keeps. */
#define FIXTURE_MAX_POS 256
#define FIXTURE_MAX_GEN 64

/* What one request received (fixture_got_emit is its emit callback): every
 * prompt position (PROMPT events: token, logprob, rank, alternatives,
 * text), the generated tokens with the first one's logprobs, the slot it
 * ran in and how it ended. */
struct fixture_got {
    struct st_request *req;            /* borrowed, for the slot at the first token */
    int64_t n_pos;                     /* prompt positions reported */
    bool    in_order;                  /* positions came as 0, 1, 2, ... and fit */
    bool    prompt_after_token;        /* a PROMPT event came after a TOKEN */
    int32_t tok[FIXTURE_MAX_POS];
    bool    has[FIXTURE_MAX_POS];      /* has a logprob */
    float   lp[FIXTURE_MAX_POS];
    int32_t rank[FIXTURE_MAX_POS];
    int32_t n_top[FIXTURE_MAX_POS];
    int32_t top_id[FIXTURE_MAX_POS][ST_MAX_TOP_LOGPROBS];
    float   top_lp[FIXTURE_MAX_POS][ST_MAX_TOP_LOGPROBS];
    char    text[8192];                /* prompt texts concatenated */
    size_t  text_len;
    int32_t gen[FIXTURE_MAX_GEN];      /* the generated tokens (the first FIXTURE_MAX_GEN) */
    int     n_gen;                     /* TOKEN events */
    float   gen_lp;                    /* the first generated token's logprob ... */
    int32_t gen_n_top;                 /* ... and its alternatives */
    int32_t gen_top_id[ST_MAX_TOP_LOGPROBS];
    float   gen_top_lp[ST_MAX_TOP_LOGPROBS];
    int32_t slot;                      /* job.slot at the first token; -1 none */
    bool    ended;
    enum st_finish finish;
    int64_t n_cached, n_generated;     /* at END */
};

static inline void fixture_got_prompt(struct fixture_got *g, const struct st_event *ev)
{
    if (g->n_gen > 0)
        g->prompt_after_token = true;
    for (int32_t i = 0; i < ev->n_ptok; i++) {
        const struct st_prompt_token *t = &ev->ptok[i];
        if (t->pos != g->n_pos || g->n_pos >= FIXTURE_MAX_POS) {
            g->in_order = false;
            continue;
        }
        int64_t p = g->n_pos++;
        g->tok[p] = t->token;
        g->has[p] = t->has_logprob;
        g->lp[p] = t->logprob;
        g->rank[p] = t->rank;
        g->n_top[p] = t->n_top;
        for (int32_t k = 0; k < t->n_top && k < ST_MAX_TOP_LOGPROBS; k++) {
            g->top_id[p][k] = t->top[k].token;
            g->top_lp[p][k] = t->top[k].logprob;
        }
        if (g->text_len + (size_t)t->n_text < sizeof(g->text)) {
            memcpy(g->text + g->text_len, t->text, (size_t)t->n_text);
            g->text_len += (size_t)t->n_text;
        }
    }
}

static inline void fixture_got_token(struct fixture_got *g, const struct st_event *ev)
{
    if (g->n_gen == 0) {
        g->slot = g->req ? g->req->job.slot : -1;
        g->gen_lp = ev->logprob;
        g->gen_n_top = ev->n_top;
        for (int32_t k = 0; k < ev->n_top && k < ST_MAX_TOP_LOGPROBS; k++) {
            g->gen_top_id[k] = ev->top[k].token;
            g->gen_top_lp[k] = ev->top[k].logprob;
        }
    }
    if (g->n_gen < FIXTURE_MAX_GEN)
        g->gen[g->n_gen] = ev->token;
    g->n_gen++;
}

static inline void fixture_got_emit(void *ctx, const struct st_event *ev)
{
    struct fixture_got *g = ctx;
    if (ev->kind == ST_EVENT_PROMPT) {
        fixture_got_prompt(g, ev);
    } else if (ev->kind == ST_EVENT_TOKEN) {
        fixture_got_token(g, ev);
    } else {
        g->ended = true;
        g->finish = ev->finish;
        g->n_cached = ev->n_cached;
        g->n_generated = ev->n_generated;
    }
}

/* What fixture_submit_ids asks for; zero: max_tokens 0, nothing else. */
struct fixture_ask {
    int32_t max_tokens;
    bool    ignore_eos;
    bool    echo;         /* params.echo */
    bool    score;        /* params.prompt_logprobs ... */
    int32_t top;          /* ... params.prompt_top_logprobs (and logprobs' top with force) */
    bool    no_cache;     /* cache_prompt: false */
    bool    force;        /* logit_bias +100 on force_id; logprobs with 'top' alternatives */
    int32_t force_id;
};

/* A new request for ids[0..n) (id "ids", no prompt text), greedy
 * (temperature 0), its events to emit(ctx); the caller sets the rest and
 * submits it (fixture_submit). */
static inline struct st_request *fixture_ids_request(const int32_t *ids, int64_t n,
                                                     st_emit_fn *emit, void *ctx)
{
    struct st_request *req = st_request_new();
    ck_assert(req);
    snprintf(req->id, sizeof(req->id), "ids");
    req->prompt = strdup("");
    req->tokens = malloc((size_t)n * sizeof(*ids));
    ck_assert(req->prompt && req->tokens);
    memcpy(req->tokens, ids, (size_t)n * sizeof(*ids));
    req->n_tokens = n;
    req->params.temperature = 0.0f;
    req->emit = emit;
    req->emit_ctx = ctx;
    return req;
}

/* Submit req to p (a refusal fails the test); returns req. */
static inline struct st_request *fixture_submit(struct st_engine_pool *p, struct st_request *req)
{
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(p, req, &err) == ST_OK, "submit: %s", err.msg);
    return req;
}

/* Submit ids[0..n) greedily for exactly max_tokens tokens (ignore_eos,
 * top-p 1) at 'priority', its events to emit(ctx); returns the caller's
 * reference (test_engine_model.c, test_engine_ckpt.c). */
static inline struct st_request *fixture_submit_greedy(struct st_engine_pool *p,
                                                       const int32_t *ids, int64_t n,
                                                       int32_t max_tokens, int32_t priority,
                                                       st_emit_fn *emit, void *ctx)
{
    struct st_request *req = fixture_ids_request(ids, n, emit, ctx);
    req->params.max_tokens = max_tokens;
    req->params.ignore_eos = true;
    req->params.top_p = 1.0f;
    req->job.priority = priority;
    return fixture_submit(p, req);
}

/* Submit ids[0..n) greedily (temperature 0) as 'a' asks, recorded in *g
 * (reset first). Returns the caller's reference; g->req is the same
 * request, borrowed. */
static inline struct st_request *fixture_submit_ids(struct st_engine_pool *p, const int32_t *ids,
                                                    int64_t n, const struct fixture_ask *a,
                                                    struct fixture_got *g)
{
    memset(g, 0, sizeof(*g));
    g->in_order = true;
    g->slot = -1;
    struct st_request *req = fixture_ids_request(ids, n, fixture_got_emit, g);
    req->params.max_tokens = a->max_tokens;
    req->params.ignore_eos = a->ignore_eos;
    req->params.echo = a->echo;
    req->params.prompt_logprobs = a->score;
    req->params.prompt_top_logprobs = a->top;
    req->no_prompt_cache = a->no_cache;
    if (a->force) {
        struct st_logit_bias b = { a->force_id, 100.0f };
        struct st_gen_params src = { .logit_bias = &b, .n_logit_bias = 1 };
        ck_assert(st_gen_params_copy_bias(&req->params, &src) == ST_OK);
        req->params.logprobs = true;
        req->params.top_logprobs = a->top;
    }
    g->req = req;
    return fixture_submit(p, req);
}

#endif /* STRATA_TEST_MODEL_FIXTURE_H */
