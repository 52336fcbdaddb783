/* test_engine_think.c -- response_format json_object / json_schema after
 * a reasoning model's think block (include/strata/think_block.h,
 * json_mask.c), in the sampler and through the engine loop:
 *
 *   - on a small hand-made vocabulary (tags whole and split, tokens that
 *     cross from the block into the document, '[' that may be "[THINK]"
 *     or an array), along sampled walks, the mask allows exactly the
 *     tokens a brute-force feed of each token's bytes through the think
 *     state and the document's validator allows, for both modes, both
 *     tag spellings, optional and open blocks, with and without a cap;
 *     a walk that ends did so on a complete document;
 *   - the CPU model runner (tiny synthetic model) with a think block
 *     opened by the prompt and a cap: the text parses (reply_parse.h)
 *     into reasoning and a content that is a valid prefix of a document
 *     of the schema (complete when it ended with STOP), and MTP and
 *     n-gram drafts give the same tokens;
 *   - the thinking budget (think_budget.c): counted from after the
 *     opening tag, the closing sequence forced at exactly N tokens (budget
 *     0: at once), either spelling, nothing forced once the model closed
 *     the block or never opened one; on the tiny model, with and without
 *     a schema after it, the reasoning the reply parser splits out is
 *     exactly the first N tokens' text, and drafts change nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "mask_fixture.h"
#include "model_fixture.h"
#include "strata/json_schema.h"
#include "strata/reply_parse.h"
#include "support.h"

static const char *const vocab[] = {
    "<eos>", "{", "}", "\"", "a", "\":", ":", "1", " ", "\n", "\n\n", "<", "<think>",
    "</think>", "</", "think", ">", "</think>\n\n{", "<think>\n", "hello", " world", "[",
    "[THINK]", "[/THINK]", "[/", "THINK", "]", "<b>", "x<", "{\"", "\"a\":1}", "\n{", "}\n",
    "", "  ", "</think>\n\n", "k>\n", "<th", "ink>", "[TH", "INK]", "[1", ",", "2]", "/",
    "\"a", "{\"a\":", "\t", "]\n", "K]\n[", "> {", "1}",
};
#define NV ((int32_t)(sizeof(vocab) / sizeof(vocab[0])))

/* The document's state, either mode (a copy the brute force owns). */
struct doc {
    struct st_json_schema_state jss;
    struct st_json_prefix js;
    bool schema;
};

static bool doc_push(struct doc *d, unsigned char b)
{
    return d->schema ? st_json_schema_push(&d->jss, b) : st_json_prefix_push(&d->js, b);
}

static bool doc_empty(const struct doc *d)
{
    return d->schema ? st_json_schema_empty(&d->jss) : st_json_prefix_empty(&d->js);
}

static bool doc_complete(const struct doc *d)
{
    return d->schema ? st_json_schema_complete(&d->jss) : st_json_prefix_complete(&d->js);
}

static void doc_from(struct doc *d, const struct st_sampler *s)
{
    d->schema = s->schema != NULL;
    if (d->schema)
        st_json_schema_state_copy(&d->jss, &s->jss);
    d->js = s->js;
}

/* The rule by brute force: end of generation only on a complete document;
 * a token's bytes through the think state, then (from the byte that opens
 * the document, after the held tag bytes) the document's validator, which
 * may not open with a blank; in the document, the first byte under the
 * mask's whitespace policy (no blanks after a complete document unless
 * end of generation is banned; json_object: nothing then). */
static bool expected(const struct st_sampler *s, int32_t id, bool eb)
{
    struct doc d;
    doc_from(&d, s);
    bool in_doc = st_think_in_doc(&s->th), done = in_doc && doc_complete(&d);
    if (id == 0)
        return done;
    const unsigned char *p = (const unsigned char *)vocab[id];
    if (!p[0])
        return false;
    bool blank = mask_is_ws((unsigned char)p[0]);
    if (in_doc && ((doc_empty(&d) && blank) || (done && !eb && (blank || !d.schema))))
        return false;
    struct st_think_state t = s->th;
    for (size_t i = 0; p[i]; i++) {
        uint32_t held = 0;
        enum st_think_push r = st_think_push(&t, p[i], &held);
        if (r == ST_THINK_REFUSED)
            return false;
        if (r == ST_THINK_TAKEN)
            continue;
        char open[ST_THINK_MAX_HELD];
        ck_assert_uint_eq(st_think_held(&t, open), held);
        if (doc_empty(&d) && mask_is_ws(held ? (unsigned char)open[0] : p[i]))
            return false;
        for (uint32_t k = 0; k < held; k++) {
            if (!doc_push(&d, (unsigned char)open[k]))
                return false;
        }
        if (!doc_push(&d, p[i]))
            return false;
    }
    return true;
}

static void make_sampler(struct st_sampler *s, struct st_json_schema *sc, enum st_think_mode m,
                         enum st_think_tags tags, int32_t cap, uint64_t seed)
{
    struct st_gen_params p = mask_params(1.0f, seed);
    p.json_schema = sc;   /* borrowed by the sampler */
    p.json_object = sc == NULL;
    p.json_think = (uint8_t)m;
    p.json_think_tags = (uint8_t)tags;
    p.json_think_max = cap;
    mask_sampler(s, &p, vocab, NV);
}

/* Compare mask and brute force at every step of one sampled walk; true
 * when the walk ended (end of generation, on a complete document). */
static bool walk_once(struct st_sampler *w, uint64_t rng, const char *what)
{
    for (int step = 0; step < 120; step++) {
        for (int eb = 0; eb < 2; eb++) {
            struct st_json_step st;
            st_json_mask_step(w, eb == 1, &st);
            for (int32_t id = 0; id < NV; id++) {
                bool want = expected(w, id, eb == 1);
                ck_assert_msg(st_json_mask_allows(w, &st, id) == want,
                              "%s step %d eos_banned %d token '%s': want %d", what, step, eb,
                              vocab[id], (int)want);
            }
        }
        float logits[NV];
        for (int32_t t = 0; t < NV; t++)
            logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f;
        logits[0] += 3.0f;
        struct st_sample_result res;
        if (st_sampler_sample(w, logits, NV, NULL, 0, &res) != ST_OK)
            return false;   /* stuck: nothing in this small vocabulary goes on */
        if (res.token == 0) {
            struct doc d;
            doc_from(&d, w);
            ck_assert(st_think_in_doc(&w->th) && doc_complete(&d));
            return true;
        }
        st_sampler_accept(w, res.token);
    }
    return false;
}

START_TEST(test_engine_think_mask_matches_validator)
{
    static const char *const schemas[] = {
        NULL,   /* json_object */
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
        "\"required\":[\"a\"],\"additionalProperties\":false}",
        "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}",
    };
    int ended = 0, walks = 0;
    for (int si = 0; si < 3; si++) {
        struct st_json_schema *sc = schemas[si] ? mask_schema(schemas[si]) : NULL;
        for (int m = ST_THINK_NONE; m <= ST_THINK_OPEN; m++) {
            for (int tags = 0; tags < 2; tags++) {
                for (int run = 0; run < 12; run++) {
                    char what[96];
                    int32_t cap = run % 3 == 0 ? 0 : run % 3;
                    snprintf(what, sizeof(what), "schema %d mode %d tags %d run %d cap %d", si,
                             m, tags, run, (int)cap);
                    struct st_sampler w;
                    make_sampler(&w, sc, (enum st_think_mode)m, (enum st_think_tags)tags, cap,
                                 (uint64_t)run);
                    ended += walk_once(&w, (uint64_t)(run * 131 + si * 7 + m * 3 + tags), what);
                    walks++;
                    st_sampler_fini(&w);
                }
            }
        }
        st_json_schema_unref(sc);
    }
    fprintf(stderr, "think mask: %d of %d walks ended on a complete document\n", ended, walks);
    ck_assert_int_gt(ended, walks / 4);
}
END_TEST

/* A cap of 1 token: the token after the first in the block can only be
 * the closing tag (whole or its start), so the document starts soon. */
START_TEST(test_engine_think_cap_forces_close)
{
    struct st_sampler w;
    make_sampler(&w, NULL, ST_THINK_OPEN, ST_THINK_ANGLE, 1, 5);
    st_sampler_accept(&w, 19);   /* "hello" */
    struct st_json_step st;
    st_json_mask_step(&w, false, &st);
    for (int32_t id = 0; id < NV; id++) {
        bool closes = strncmp(vocab[id], "</think>", strlen(vocab[id])) == 0 ||
                      strncmp(vocab[id], "</think>", 8) == 0;
        bool ok = id != 0 && vocab[id][0] && closes;
        ck_assert_msg(st_json_mask_allows(&w, &st, id) == ok, "'%s'", vocab[id]);
    }
    st_sampler_fini(&w);
}
END_TEST

/* ---- the engine loop on the tiny model ------------------------------- */

static char dir[256];

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static const char *const engine_schema =
    "{\"type\":\"object\",\"properties\":{"
    "\"color\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"ok\":{\"type\":\"boolean\"}},"
    "\"required\":[\"color\",\"ok\"],\"additionalProperties\":false}";

/* The prompt opens the block, as Qwen3-Thinking-2507's template does. */
static const char *const prompts[2] = { "<|im_start|>assistant\n<think>\n",
                                        "The quick brown fox <think>\n" };

struct parsed {
    struct st_buf reasoning, content;
};

static enum st_status on_part(void *ctx, const struct st_reply_event *ev)
{
    struct parsed *p = ctx;
    if (ev->kind == ST_REPLY_REASONING)
        return st_buf_append(&p->reasoning, ev->text, ev->len);
    ck_assert_int_eq(ev->kind, ST_REPLY_CONTENT);
    return st_buf_append(&p->content, ev->text, ev->len);
}

/* o's text as the server's reply parser splits it, the block open from
 * the start (the prompts open it); parsed_fini frees p. */
static void parse_reply(const struct fixture_out *o, struct parsed *p)
{
    struct st_reply_opts ro = { .reasoning = true, .in_reasoning = true };
    struct st_reply_parser rp;
    st_buf_init(&p->reasoning);
    st_buf_init(&p->content);
    st_reply_parser_init(&rp, &ro);
    ck_assert(st_reply_parser_feed(&rp, o->text, o->len, on_part, p) == ST_OK);
    ck_assert(st_reply_parser_finish(&rp, on_part, p) == ST_OK);
    st_reply_parser_fini(&rp);
}

static void parsed_fini(struct parsed *p)
{
    st_buf_fini(&p->reasoning);
    st_buf_fini(&p->content);
}

/* A two-slot pool on 'path' with the drafts given, the model loaded. */
static void start_loaded(struct fixture_pool *f, const char *path, int32_t mtp, int32_t ngram)
{
    fixture_pool_start_spec(f, path, 2, mtp, ngram);
    (void)st_engine_pool_step(f->pool, 0);   /* loads the model */
}

/* prompts[i] as request "<tag><i>": max_tokens, temp, seeded, recorded into
 * *out (fixture_record). The caller sets the rest, then submit_one. */
static struct st_request *prompt_request(char tag, int32_t i, int32_t max_tokens, float temp,
                                         uint64_t seed, struct fixture_out *out)
{
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "%c%d", tag, (int)i);
    req->prompt = strdup(prompts[i]);
    req->params.max_tokens = max_tokens;
    req->params.temperature = temp;
    req->params.has_seed = true;
    req->params.seed = seed;
    req->emit = fixture_record;
    req->emit_ctx = out;
    return req;
}

/* Submit req and drop the test's reference. */
static void submit_one(struct fixture_pool *f, struct st_request *req)
{
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(f->pool, req, &err) == ST_OK, "%s", err.msg);
    st_request_unref(req);
}

/* Two runs' requests gave the same tokens (and texts, when 'text'). */
static void same_runs(const struct fixture_out off[2], const struct fixture_out on[2], bool text)
{
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(off[i].n, on[i].n);
        ck_assert_mem_eq(off[i].tok, on[i].tok, sizeof(int32_t) * (size_t)off[i].n);
        if (text)
            ck_assert_str_eq(off[i].text, on[i].text);
    }
}

/* The text as the server's reply parser splits it, checked: reasoning,
 * and content a valid prefix of a document of the schema (complete when
 * the request stopped). Returns whether it stopped. */
static bool check_reply(const struct fixture_out *o, struct st_json_schema *sc)
{
    struct parsed p;
    parse_reply(o, &p);
    ck_assert_msg(p.reasoning.len > 0, "no reasoning: '%s'", o->text);
    ck_assert_msg(p.content.len > 0 && p.content.data[0] == '{', "'%s'", o->text);
    struct st_json_schema_state st;
    st_json_schema_state_init(&st, sc);
    ck_assert_msg(st_json_schema_feed(&st, p.content.data, p.content.len), "not valid: '%s'",
                  o->text);
    bool stopped = o->finish == ST_FINISH_STOP;
    if (stopped)
        ck_assert_msg(st_json_schema_complete(&st), "stopped early: '%s'", o->text);
    parsed_fini(&p);
    return stopped;
}

static void run(const char *path, int32_t mtp, int32_t ngram, float temp,
                struct st_json_schema *sc, struct fixture_out *out)
{
    struct fixture_pool f;
    start_loaded(&f, path, mtp, ngram);
    memset(out, 0, sizeof(*out) * 2);
    for (int32_t i = 0; i < 2; i++) {
        struct st_request *req = prompt_request('t', i, 150, temp, 11 + (uint64_t)i, &out[i]);
        st_json_schema_ref(sc);
        req->params.json_schema = sc;   /* the request's reference */
        req->params.json_think = ST_THINK_OPEN;
        req->params.json_think_max = 8 + 4 * i;
        submit_one(&f, req);
    }
    fixture_pool_drain(&f);
    for (int32_t i = 0; i < 2; i++) {
        ck_assert(out[i].ended);
        ck_assert_msg(out[i].finish == ST_FINISH_STOP || out[i].finish == ST_FINISH_LENGTH,
                      "finish %d", (int)out[i].finish);
    }
    fixture_pool_stop(&f);
}

START_TEST(test_engine_think_model_reasons_then_json)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "mtp-demo", "q8_0", 3, false);
    struct st_json_schema *sc = mask_schema(engine_schema);
    struct fixture_out off[2], on[2];
    const float temps[2] = { 0.0f, 0.7f };
    int stopped = 0;
    for (int ti = 0; ti < 2; ti++) {
        run(path, 0, 0, temps[ti], sc, off);
        for (int i = 0; i < 2; i++)
            stopped += check_reply(&off[i], sc);
        fprintf(stderr, "engine think t=%.1f: '%.160s'\n", (double)temps[ti], off[0].text);
        for (int spec = 0; spec < 2; spec++) {
            run(path, spec == 0 ? 3 : 0, spec == 1 ? 3 : 0, temps[ti], sc, on);
            same_runs(off, on, true);
        }
    }
    fprintf(stderr, "engine think: %d of 4 replies stopped on a whole document\n", stopped);
    st_json_schema_unref(sc);
}
END_TEST

/* ---- the thinking budget ------------------------------------------- */

static int32_t vid(const char *text)
{
    for (int32_t i = 0; i < NV; i++) {
        if (strcmp(vocab[i], text) == 0)
            return i;
    }
    ck_abort_msg("no token '%s'", text);
    return -1;
}

/* Take token 'text' as the engine does (accept, then its bytes). */
static void take(struct st_sampler *s, const char *text)
{
    st_sampler_accept(s, vid(text));
    st_sampler_think_accept(s, text, strlen(text));
}

static struct st_gen_params budget_params(int32_t budget, enum st_think_mode m,
                                          enum st_think_tags tags)
{
    struct st_gen_params p = mask_params(1.0f, 1);
    p.think_budget = budget;
    p.think_mode = (uint8_t)m;
    p.think_tags = (uint8_t)tags;
    p.think_close[ST_THINK_ANGLE][0] = vid("\n");
    p.think_close[ST_THINK_ANGLE][1] = vid("</think>");
    p.think_close[ST_THINK_ANGLE][2] = vid("\n\n");
    p.n_think_close[ST_THINK_ANGLE] = 3;
    p.think_close[ST_THINK_SQUARE][0] = vid("[/THINK]");
    p.n_think_close[ST_THINK_SQUARE] = 1;
    return p;
}

/* The forced sequence comes now, token by token, then nothing more. */
static void expect_forced(struct st_sampler *s, const char *const *seq, int n)
{
    for (int i = 0; i < n; i++) {
        int32_t t = -1;
        ck_assert_msg(st_sampler_forced(s, &t), "token %d of the close not forced", i);
        ck_assert_int_eq(t, vid(seq[i]));
        ck_assert_int_eq(st_sampler_draft_room(s), 0);
        take(s, seq[i]);
    }
    int32_t t;
    ck_assert(!st_sampler_forced(s, &t));
    ck_assert(!st_sampler_budget_on(s));
}

START_TEST(test_engine_think_budget_counts_and_forces)
{
    static const char *const angle[] = { "\n", "</think>", "\n\n" };
    static const char *const square[] = { "[/THINK]" };
    struct st_sampler s;
    int32_t t;
    /* optional block, blanks before it, two tokens of reasoning */
    struct st_gen_params p = budget_params(2, ST_THINK_OPTIONAL, ST_THINK_ANGLE);
    mask_sampler(&s, &p, vocab, NV);
    ck_assert_int_eq(st_sampler_draft_room(&s), INT32_MAX);
    take(&s, "\n");
    take(&s, "<think>");             /* the tag does not count */
    ck_assert_int_eq(st_sampler_draft_room(&s), 2);
    take(&s, "hello");
    ck_assert(!st_sampler_forced(&s, &t));
    ck_assert_int_eq(st_sampler_draft_room(&s), 1);
    take(&s, " world");
    expect_forced(&s, angle, 3);
    st_sampler_fini(&s);

    /* Magistral: either spelling, closed with its own sequence */
    p = budget_params(1, ST_THINK_OPTIONAL, ST_THINK_EITHER);
    mask_sampler(&s, &p, vocab, NV);
    take(&s, "[THINK]");
    take(&s, "hello");
    expect_forced(&s, square, 1);
    st_sampler_fini(&s);
    mask_sampler(&s, &p, vocab, NV);
    take(&s, "<think>\n");
    take(&s, "x<");
    expect_forced(&s, angle, 3);
    st_sampler_fini(&s);

    /* budget 0: closed as soon as it opens; OPEN mode: at once */
    p = budget_params(0, ST_THINK_OPTIONAL, ST_THINK_ANGLE);
    mask_sampler(&s, &p, vocab, NV);
    ck_assert(!st_sampler_forced(&s, &t));
    take(&s, "<think>");
    expect_forced(&s, angle, 3);
    st_sampler_fini(&s);
    p = budget_params(0, ST_THINK_OPEN, ST_THINK_ANGLE);
    mask_sampler(&s, &p, vocab, NV);
    expect_forced(&s, angle, 3);
    st_sampler_fini(&s);

    /* the model closes the block itself, or never opens one: nothing forced */
    p = budget_params(3, ST_THINK_OPEN, ST_THINK_ANGLE);
    mask_sampler(&s, &p, vocab, NV);
    take(&s, "hello");
    take(&s, "</think>\n\n{");
    ck_assert(!st_sampler_budget_on(&s));
    take(&s, "hello");
    take(&s, "hello");
    ck_assert(!st_sampler_forced(&s, &t));
    st_sampler_fini(&s);
    p = budget_params(1, ST_THINK_OPTIONAL, ST_THINK_ANGLE);
    mask_sampler(&s, &p, vocab, NV);
    take(&s, "hello");
    ck_assert(!st_sampler_budget_on(&s));
    take(&s, "<think>");
    take(&s, "hello");
    ck_assert(!st_sampler_forced(&s, &t));
    st_sampler_fini(&s);

    /* no budget (-1), or a prompt that rules the block out */
    p = budget_params(-1, ST_THINK_OPEN, ST_THINK_ANGLE);
    mask_sampler(&s, &p, vocab, NV);
    ck_assert(!st_sampler_budget_on(&s));
    st_sampler_fini(&s);
    p = budget_params(0, ST_THINK_NONE, ST_THINK_ANGLE);
    mask_sampler(&s, &p, vocab, NV);
    ck_assert(!st_sampler_budget_on(&s));
    st_sampler_fini(&s);

    /* with a constrained answer the forced close is one the mask takes */
    p = budget_params(2, ST_THINK_OPTIONAL, ST_THINK_ANGLE);
    p.json_object = true;
    p.json_think = ST_THINK_OPTIONAL;
    mask_sampler(&s, &p, vocab, NV);
    take(&s, "<think>");
    take(&s, "hello");
    take(&s, "<");
    expect_forced(&s, angle, 3);
    ck_assert(st_think_in_doc(&s.th) || st_think_between(&s.th, &(uint16_t){ 0 }));
    take(&s, "{");
    ck_assert(st_json_prefix_valid(&s.js));
    st_sampler_fini(&s);
}
END_TEST

/* The engine loop: the reply's first N tokens are sampled reasoning, the
 * next ones the closing sequence, forced; the reply parser splits the
 * reasoning (exactly those N tokens' text) from the content; MTP and
 * n-gram drafts give the same tokens. */
static void budget_run(const char *path, int32_t mtp, int32_t ngram, float temp,
                       const int32_t budget[2], struct st_json_schema *sc,
                       struct fixture_out *out, int32_t *close, size_t *n_close)
{
    struct fixture_pool f;
    start_loaded(&f, path, mtp, ngram);
    int32_t *ids = NULL;
    struct st_err err = { 0 };
    static const char seq[] = "\n</think>\n\n";
    ck_assert(st_engine_pool_tokenize(f.pool, 0, seq, strlen(seq), false, true, &ids, n_close,
                                      &err) == ST_OK);
    ck_assert(*n_close >= 1 && *n_close <= ST_THINK_CLOSE_MAX);
    memcpy(close, ids, *n_close * sizeof(*ids));
    free(ids);
    memset(out, 0, sizeof(*out) * 2);
    for (int32_t i = 0; i < 2; i++) {
        struct st_request *req = prompt_request('b', i, 40, temp, 5 + (uint64_t)i, &out[i]);
        req->params.think_budget = budget[i];
        req->params.think_mode = ST_THINK_OPEN;
        req->params.think_tags = ST_THINK_ANGLE;
        memcpy(req->params.think_close[ST_THINK_ANGLE], close, *n_close * sizeof(*close));
        req->params.n_think_close[ST_THINK_ANGLE] = (int32_t)*n_close;
        if (sc) {
            st_json_schema_ref(sc);
            req->params.json_schema = sc;
            req->params.json_think = ST_THINK_OPEN;
        }
        submit_one(&f, req);
    }
    fixture_pool_drain(&f);
    fixture_pool_stop(&f);
}

/* out's first n tokens are the reasoning, the next ones the close (by
 * id); the reasoning the parser splits out is the text before the first
 * "</think>" (trimmed), which the close put there. */
static void check_budget(const struct fixture_out *o, int32_t n, const int32_t *close,
                         size_t n_close, struct st_json_schema *sc)
{
    ck_assert(o->ended);
    ck_assert_msg(o->n >= n + (int)n_close, "%d tokens: '%s'", o->n, o->text);
    for (size_t k = 0; k < n_close; k++)
        ck_assert_msg(o->tok[n + (int)k] == close[k], "token %d is %d, not the close: '%s'",
                      n + (int)k, (int)o->tok[n + (int)k], o->text);
    struct parsed p;
    parse_reply(o, &p);
    const char *end = strstr(o->text, "</think>");
    ck_assert_ptr_nonnull(end);
    const char *w = o->text;   /* trimmed as reasoning_content is */
    size_t wl = (size_t)(end - w);
    while (wl && strchr(" \t\r\n", *w))
        w++, wl--;
    while (wl && strchr(" \t\r\n", w[wl - 1]))
        wl--;
    ck_assert_int_eq(p.reasoning.len, wl);
    if (wl)
        ck_assert_mem_eq(p.reasoning.data, w, wl);
    if (n == 0)
        ck_assert_int_eq(p.reasoning.len, 0);
    if (sc) {
        struct st_json_schema_state st;
        st_json_schema_state_init(&st, sc);
        ck_assert_msg(p.content.len > 0 && st_json_schema_feed(&st, p.content.data,
                                                               p.content.len), "'%s'", o->text);
    }
    parsed_fini(&p);
}

START_TEST(test_engine_think_budget_on_model)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "mtp-demo", "q8_0", 3, false);
    struct st_json_schema *sc = mask_schema(engine_schema);
    const int32_t budgets[2][2] = { { 5, 0 }, { 9, 2 } };
    for (int c = 0; c < 4; c++) {
        const int32_t *b = budgets[c & 1];
        struct st_json_schema *use = c >= 2 ? sc : NULL;
        float temp = (c & 1) ? 0.8f : 0.0f;
        struct fixture_out off[2], on[2];
        int32_t close[ST_THINK_CLOSE_MAX];
        size_t n_close = 0;
        budget_run(path, 0, 0, temp, b, use, off, close, &n_close);
        fprintf(stderr, "budget %d/%d t=%.1f%s: '%.120s'\n", (int)b[0], (int)b[1], (double)temp,
                use ? " json" : "", off[0].text);
        for (int i = 0; i < 2; i++)
            check_budget(&off[i], b[i], close, n_close, use);
        for (int spec = 0; spec < 2; spec++) {
            budget_run(path, spec == 0 ? 3 : 0, spec == 1 ? 3 : 0, temp, b, use, on, close,
                       &n_close);
            same_runs(off, on, false);
        }
    }
    st_json_schema_unref(sc);
}
END_TEST

static Suite *engine_think_suite(void)
{
    Suite *s = suite_create("engine_think");
    TCase *t = tcase_create("think");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_engine_think_budget_counts_and_forces);
    tcase_add_test(t, test_engine_think_budget_on_model);
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_engine_think_mask_matches_validator);
    tcase_add_test(t, test_engine_think_cap_forces_close);
    tcase_add_test(t, test_engine_think_model_reasons_then_json);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(engine_think_suite(), CK_FORK);
}
