/* spec_fixture.h -- the harness of the draft suites (test_engine_mtp.c,
 * test_engine_ngram.c): up to four seeded requests of fixed length run
 * together on one CPU engine, with MTP and/or n-gram drafts or none, and
 * the results compared token for token; the checks both suites make (a
 * drafted run equals the run without drafts, the counters add up, the
 * penalties case). Header-only; needs the engine's pool.h (the MTP
 * test hook), model_fixture.h and support.h. */
#ifndef STRATA_TEST_SPEC_FIXTURE_H
#define STRATA_TEST_SPEC_FIXTURE_H

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "model_fixture.h"
#include "strata/sched.h"
#include "support.h"

struct spec_run {
    const char *path;
    int32_t np;                        /* slots, and requests submitted together (<= 4) */
    int32_t mtp_draft;                 /* 0 = MTP off */
    int32_t ngram_draft;               /* 0 = n-gram drafts off */
    int32_t n_gen;
    float   temperature;
    bool    json;                      /* response_format json_object */
    const struct st_mtp_test *hook;
    const struct st_gen_params *pen;   /* penalties and logit_bias to use, or NULL */
    int32_t same_prompt;               /* > 0: every request gets prompts[same_prompt - 1] */
};

struct spec_result {
    struct fixture_out out[4];
    struct st_pool_stats stats;
    struct st_activity act[4];
    size_t n_act;
};

/* ---- models ------------------------------------------------------------- */

/* The suite's model directory: spec_setup / spec_teardown are its Check
 * fixture. */
static char spec_dir[256];

static inline void spec_setup(void)
{
    support_tmpdir(spec_dir, sizeof(spec_dir));
}

static inline void spec_teardown(void)
{
    support_rmtree(spec_dir);
}

/* A model of 'preset' in spec_dir (Q8_0; an MTP layer when mtp); the path
 * stays valid for the next three calls. */
static inline const char *spec_make(const char *preset, bool mtp, uint64_t seed)
{
    static char path[4][320];
    static int next;
    return fixture_make_model(path[next++ % 4], 320, spec_dir, preset, "q8_0", seed, mtp);
}

/* The pool spec_run_prompts is stepping (for a test hook), else NULL. */
static struct st_engine_pool *spec_pool;
/* The pool's counters as the last END went out: a client that scrapes
 * /metrics after its reply must find its last verify step counted. */
static struct st_pool_stats spec_last_end;

static inline void spec_record(void *ctx, const struct st_event *ev)
{
    fixture_record(ctx, ev);
    if (ev->kind == ST_EVENT_END && spec_pool)
        st_engine_pool_stats(spec_pool, &spec_last_end);
}

static inline void spec_submit(struct st_engine_pool *p, int32_t i, const struct spec_run *r,
                               const char *prompt, struct fixture_out *o)
{
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "r%d", (int)i);
    req->prompt = strdup(prompt);
    req->params.max_tokens = r->n_gen;
    req->params.ignore_eos = true;   /* fixed lengths: the comparison covers every token */
    req->params.temperature = r->temperature;
    req->params.has_seed = true;
    req->params.seed = 42 + (uint64_t)i;
    req->params.logprobs = true;
    req->params.json_object = r->json;
    if (r->pen) {
        req->params.presence_penalty = r->pen->presence_penalty;
        req->params.frequency_penalty = r->pen->frequency_penalty;
        req->params.repeat_penalty = r->pen->repeat_penalty;
        req->params.repeat_last_n = r->pen->repeat_last_n;
        ck_assert(st_gen_params_copy_bias(&req->params, r->pen) == ST_OK);
    }
    req->emit = spec_record;
    req->emit_ctx = o;
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(p, req, &err) == ST_OK, "submit: %s", err.msg);
    st_request_unref(req);
}

/* Run r with request i asking prompts[i]; every request must end with
 * exactly n_gen tokens. */
static inline void spec_run_prompts(const struct spec_run *r, const char *const *prompts,
                                    struct spec_result *res)
{
    struct fixture_pool f;
    fixture_pool_start_spec(&f, r->path, r->np, r->mtp_draft, r->ngram_draft);
    if (r->hook)
        st_engine_pool_mtp_test(f.pool, r->hook);
    spec_pool = f.pool;
    memset(&spec_last_end, 0, sizeof(spec_last_end));
    (void)st_engine_pool_step(f.pool, 0);   /* loads the model */
    ck_assert(st_engine_pool_ready(f.pool));
    memset(res, 0, sizeof(*res));
    for (int32_t i = 0; i < r->np; i++)
        spec_submit(f.pool, i, r, prompts[r->same_prompt > 0 ? r->same_prompt - 1 : i],
                    &res->out[i]);
    fixture_pool_drain(&f);
    for (int32_t i = 0; i < r->np; i++) {
        ck_assert_msg(res->out[i].ended, "request %d did not end", (int)i);
        ck_assert_int_eq(res->out[i].n, r->n_gen);
    }
    st_engine_pool_stats(f.pool, &res->stats);
    /* nothing of the drafts was counted after the last END */
    const struct st_pool_stats *e = &spec_last_end, *z = &res->stats;
    ck_assert_uint_eq(e->mtp_drafted, z->mtp_drafted);
    ck_assert_uint_eq(e->mtp_accepted, z->mtp_accepted);
    ck_assert_uint_eq(e->mtp_steps, z->mtp_steps);
    ck_assert_uint_eq(e->ngram_drafted, z->ngram_drafted);
    ck_assert_uint_eq(e->ngram_accepted, z->ngram_accepted);
    ck_assert_uint_eq(e->ngram_steps, z->ngram_steps);
    ck_assert_uint_eq(e->steps, z->steps);
    ck_assert_uint_eq(e->generated_tokens, z->generated_tokens);
    res->n_act = st_sched_activity(f.sched, res->act, 4);
    fixture_pool_stop(&f);
    spec_pool = NULL;
}

/* Same tokens, request by request; logprobs equal to float noise. */
static inline void spec_same(const struct spec_result *a, const struct spec_result *b,
                             int32_t np, const char *what)
{
    for (int32_t i = 0; i < np; i++) {
        const struct fixture_out *x = &a->out[i], *y = &b->out[i];
        ck_assert_int_eq(x->n, y->n);
        for (int t = 0; t < x->n; t++) {
            ck_assert_msg(x->tok[t] == y->tok[t], "%s: request %d token %d: %d vs %d", what,
                          (int)i, t, x->tok[t], y->tok[t]);
            ck_assert_msg(fabsf(x->lp[t] - y->lp[t]) <= 1e-4f, "%s: request %d token %d: "
                          "logprob %.7f vs %.7f", what, (int)i, t, x->lp[t], y->lp[t]);
        }
    }
}

static inline bool spec_differs(const struct spec_result *a, const struct spec_result *b,
                                int32_t np)
{
    for (int32_t i = 0; i < np; i++)
        for (int t = 0; t < a->out[i].n; t++)
            if (a->out[i].tok[t] != b->out[i].tok[t])
                return true;
    return false;
}

/* Penalties that change the output, and the given logit_bias. */
static inline struct st_gen_params spec_penalties(struct st_logit_bias *bias, int32_t n_bias)
{
    struct st_gen_params g;
    st_gen_params_defaults(&g);
    g.presence_penalty = 0.4f;
    g.frequency_penalty = 0.3f;
    g.repeat_penalty = 1.3f;
    g.repeat_last_n = 16;
    g.logit_bias = bias;
    g.n_logit_bias = n_bias;
    return g;
}

/* r, and r without drafts (no MTP, no n-gram, no hook): the same tokens
 * request by request. Results in *off and *on. */
static inline void spec_against_plain(const struct spec_run *r, const char *const *prompts,
                                      struct spec_result *off, struct spec_result *on,
                                      const char *what)
{
    struct spec_run plain = *r;
    plain.mtp_draft = 0;
    plain.ngram_draft = 0;
    plain.hook = NULL;
    spec_run_prompts(&plain, prompts, off);
    spec_run_prompts(r, prompts, on);
    spec_same(off, on, r->np, what);
}

/* No request of r took 'token'. */
static inline void spec_never_took(const struct spec_result *r, int32_t np, int32_t token)
{
    for (int32_t i = 0; i < np; i++)
        for (int t = 0; t < r->out[i].n; t++)
            ck_assert_int_ne(r->out[i].tok[t], token);
}

/* The activity records carry the per-request draft counts (MTP and n-gram
 * alike), and they add up to the pool's counters. */
static inline void spec_records_add_up(const struct spec_result *r)
{
    int64_t d = 0, a = 0;
    for (size_t i = 0; i < r->n_act; i++) {
        ck_assert(r->act[i].mtp_accepted <= r->act[i].mtp_drafted);
        d += r->act[i].mtp_drafted;
        a += r->act[i].mtp_accepted;
    }
    ck_assert_int_eq(d, (int64_t)(r->stats.mtp_drafted + r->stats.ngram_drafted));
    ck_assert_int_eq(a, (int64_t)(r->stats.mtp_accepted + r->stats.ngram_accepted));
}

/* The penalties case: spec_penalties checked to change the output of
 * 'plain' (greedy, no drafts), plus a logit_bias banning the first token
 * request 0 takes under them. *g (its bias is *ban) is what runs pass as
 * .pen. */
static inline void spec_penalties_that_matter(const struct spec_run *plain,
                                              const char *const *prompts,
                                              struct st_gen_params *g, struct st_logit_bias *ban)
{
    struct spec_result *off = malloc(sizeof(*off)), *pen = malloc(sizeof(*pen));
    struct spec_run r = *plain;
    *g = spec_penalties(NULL, 0);
    spec_run_prompts(&r, prompts, off);
    r.pen = g;
    spec_run_prompts(&r, prompts, pen);
    ck_assert_msg(spec_differs(off, pen, r.np), "the penalties changed nothing");
    *ban = (struct st_logit_bias){ pen->out[0].tok[0], -100.0f };
    *g = spec_penalties(ban, 1);
    free(off);
    free(pen);
}

/* A test hook (st_mtp_test.corrupt) that rewrites each draft set so that
 * its first r drafts are the tokens the model will take (truth: the run
 * without drafts, request i with id "r<i>") and the rest are not, r
 * cycling through 0..n; forced[j] counts the sets first wrong at j (j
 * capped at 3; 4: all right). */
struct spec_forcer {
    const struct spec_result *truth;
    int64_t calls, forced[5];
};

static inline void spec_force(void *ctx, int32_t slot, int32_t *d, int32_t n)
{
    struct spec_forcer *f = ctx;
    const struct st_engine_slot *sl = &spec_pool->engines[0].slots[slot];
    const struct fixture_out *t = &f->truth->out[atoi(sl->req->id + 1)];
    int32_t r = (int32_t)(f->calls++ % (n + 1));
    int32_t nv = st_runner_n_vocab(spec_pool->engines[0].runner);
    for (int32_t j = 0; j < n; j++) {
        int64_t at = sl->n_generated + j;
        int32_t right = at < t->n ? t->tok[at] : 0;
        d[j] = j < r ? right : (right + 1) % nv;   /* not the token the model samples there */
    }
    f->forced[r == n ? 4 : ST_MIN(r, 3)]++;
}

/* Injected timings for the draft cost model (st_mtp_test.step_ns and
 * draft_ns, spec_cost.c): a decode step of r rows takes (a + b r) ms, times
 * 'up' with the MTP upkeep; an MTP draft call 'pass' ms per pass. Counts
 * the steps timed each way. */
struct spec_costs {
    double  a, b, up, pass;
    int64_t lean, full;
};

static inline int64_t spec_cost_step(void *ctx, int32_t rows, bool full)
{
    struct spec_costs *c = ctx;
    *(full ? &c->full : &c->lean) += 1;
    return (int64_t)((c->a + c->b * rows) * (full ? c->up : 1.0) * 1e6);
}

static inline int64_t spec_cost_draft(void *ctx, int32_t passes, int32_t slot_passes)
{
    struct spec_costs *c = ctx;
    (void)slot_passes;
    return (int64_t)(c->pass * passes * 1e6);
}

#endif /* STRATA_TEST_SPEC_FIXTURE_H */
