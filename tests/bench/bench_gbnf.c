/* bench_gbnf.c -- what the GBNF mask costs per token (docs/API.md
 * "Grammars (GBNF)"), against the JSON masks on the same documents.
 *
 * usage: bench_gbnf [tokenizer.json [tokenizer_config.json]]
 * (default: the tokenizer_ref test's Qwen3 tokenizer, 151,936 tokens).
 *
 * Each case walks the tokens of a fixed document through one sampler and,
 * before every token, times (a) the step's tables (st_json_mask_step: all
 * a greedy request pays when the model's top token passes) and (b) the
 * whole mask (the step, then st_json_mask_allows over every token: what a
 * sampled request pays), then checks that the document's token passes and
 * accepts it; each token's times are the least of three runs. Cases: a
 * grammar for one object of three typed fields vs json_schema on the
 * equivalent schema; llama.cpp's generic JSON grammar vs json_object; a
 * choice among 300 words (merged by left factoring into a few stacks).
 * Prints the mean and the worst per token; the summary
 * row is the schema's whole-mask mean over the grammar's (how many times
 * cheaper the schema is: about 1x or above means the grammar costs as
 * much or less).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_summary.h"
#include "bench_qwen3.h"
#include "hf_tokenizer.h"
#include "engine/pool.h"
#include "engine/sample/json_mask.h"
#include "strata/gbnf.h"
#include "gbnf_fixture.h"
#include "strata/json_schema.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const doc =
    "{\"name\": \"Ada Lovelace, n\xc3\xa9" "e Byron\", \"age\": 36, \"tags\": [\"math\", "
    "\"poetry\", \"analytical engines\", \"\xe6\x95\xb0\xe5\xad\xa6\"]}";

static const char *const schema =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
    "\"required\":[\"name\",\"age\",\"tags\"],\"additionalProperties\":false}";

static const char *const object_gbnf =
    "root ::= \"{\" ws \"\\\"name\\\"\" ws \":\" ws string ws \",\" ws \"\\\"age\\\"\" ws \":\" ws "
    "integer ws \",\" ws \"\\\"tags\\\"\" ws \":\" ws "
    "\"[\" ws ( string ws ( \",\" ws string ws )* )? "
    "\"]\" ws \"}\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "             \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* "
    "\"\\\"\"\n"
    "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]* )\n"
    "ws ::= [ \\t\\n]{0,20}\n";

static const char *const json_gbnf = FIXTURE_JSON_GBNF;

#define MAX_STEPS 256
#define REPS 3   /* each step's time: the least of REPS runs (the machine is shared) */

struct result {
    double step_mean, step_max, mask_mean, mask_max;
    int    n;
    double step[MAX_STEPS], mask[MAX_STEPS];   /* per token, the least over the runs */
};

/* Walk ids[0..n) through a sampler for p; false if a token is refused. */
static bool run(const struct st_tok *tok, const struct st_gen_params *p, const int32_t *ids,
                size_t n, struct result *r)
{
    int32_t nv = st_tok_n_vocab(tok);
    struct st_sampler s;
    st_sampler_init(&s);
    st_sampler_reset(&s, p);
    bool ok = st_sampler_json_vocab(&s, tok, 0, nv, bench_tok_piece, bench_tok_eog, tok) == ST_OK;
    r->n = 0;
    for (size_t k = 0; k < n && k < MAX_STEPS && ok; k++) {
        struct st_json_step st;
        double t0 = now_s();
        st_json_mask_step(&s, false, &st);
        double t1 = now_s();
        int32_t allowed = 0;
        for (int32_t id = 0; id < nv; id++)
            allowed += st_json_mask_allows(&s, &st, id);
        double t2 = now_s();
        ok = st_json_mask_allows(&s, &st, ids[k]) && allowed > 0;
        r->step[k] = t1 - t0 < r->step[k] ? t1 - t0 : r->step[k];
        r->mask[k] = t2 - t0 < r->mask[k] ? t2 - t0 : r->mask[k];
        r->n++;
        if (getenv("BENCH_GBNF_VERBOSE")) {
            struct st_str pc = st_tok_piece(tok, ids[k]);
            fprintf(stderr, "    %.3f ms  %6d allowed  gloop %d between %d n_two %d  then '%.*s'\n",
                    (t2 - t0) * 1e3, (int)allowed, (int)st.gloop, (int)st.between,
                    (int)st.n_two, (int)pc.len, pc.ptr);
        }
        st_sampler_accept(&s, ids[k]);
    }
    st_sampler_fini(&s);
    return ok;
}

/* REPS runs; then the means and worst of the per-token least times. */
static bool runs(const struct st_tok *tok, const struct st_gen_params *p, const int32_t *ids,
                 size_t n, struct result *r)
{
    bool ok = true;
    memset(r, 0, sizeof(*r));
    for (int k = 0; k < MAX_STEPS; k++)
        r->step[k] = r->mask[k] = 1e30;
    for (int rep = 0; rep < REPS && ok; rep++)
        ok = run(tok, p, ids, n, r);
    for (int k = 0; k < r->n; k++) {
        r->step_mean += r->step[k] / r->n;
        r->mask_mean += r->mask[k] / r->n;
        r->step_max = r->step[k] > r->step_max ? r->step[k] : r->step_max;
        r->mask_max = r->mask[k] > r->mask_max ? r->mask[k] : r->mask_max;
    }
    return ok;
}

static void print(const char *what, const struct result *r)
{
    printf("  %-34s %3d tokens: step %.4f ms (max %.3f), whole mask %.3f ms (max %.3f)\n", what,
           r->n, r->step_mean * 1e3, r->step_max * 1e3, r->mask_mean * 1e3, r->mask_max * 1e3);
}

int main(int argc, char **argv)
{
    char jbuf[512], cbuf[512];
    const char *json = argc > 1 ? argv[1] : bench_qwen3_file("tokenizer.json", jbuf, sizeof(jbuf));
    const char *cfg = argc > 2 ? argv[2]
                               : bench_qwen3_file("tokenizer_config.json", cbuf, sizeof(cbuf));
    struct st_tok *tok = NULL;
    struct st_err err = { 0 };
    if (!json) {
        fprintf(stderr, "bench_gbnf: no tokenizer.json (run the tokenizer_ref test or pass "
                "a path)\n");
        return 2;
    }
    if (hf_tokenizer_load(json, cfg, &tok, NULL, &err) != ST_OK) {
        fprintf(stderr, "bench_gbnf: %s\n", err.msg);
        return 1;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_json_schema *sc = NULL;
    struct st_gbnf *g1 = NULL, *g2 = NULL;
    if (st_tok_encode(tok, doc, strlen(doc), false, false, &ids, &n, &err) != ST_OK ||
        st_json_schema_compile(schema, strlen(schema), &sc, &err) != ST_OK ||
        st_gbnf_compile(object_gbnf, strlen(object_gbnf), &g1, &err) != ST_OK ||
        st_gbnf_compile(json_gbnf, strlen(json_gbnf), &g2, &err) != ST_OK) {
        fprintf(stderr, "bench_gbnf: %s\n", err.msg);
        return 1;
    }
    printf("bench_gbnf: %d-token vocabulary, a %zu-token document\n", (int)st_tok_n_vocab(tok), n);
    struct st_gen_params p;
    st_gen_params_defaults(&p);
    struct result rs, rg, ro, rj;
    bool ok = true;
    p.json_schema = sc;
    ok = runs(tok, &p, ids, n, &rs) && ok;
    p.json_schema = NULL;
    p.grammar = g1;
    ok = runs(tok, &p, ids, n, &rg) && ok;
    p.grammar = NULL;
    p.json_object = true;
    ok = runs(tok, &p, ids, n, &ro) && ok;
    p.json_object = false;
    p.grammar = g2;
    ok = runs(tok, &p, ids, n, &rj) && ok;
    print("json_schema (3 typed fields)", &rs);
    print("grammar, the same object", &rg);
    print("json_object", &ro);
    print("grammar, llama.cpp's json.gbnf", &rj);
    /* many ways at once: "word0" .. "word299" then " and" and again */
    static char words[300 * 16 + 64];
    size_t wl = (size_t)snprintf(words, sizeof(words), "root ::= w (\" and \" w)*\nw ::= ");
    for (int i = 0; i < 300; i++)
        wl += (size_t)snprintf(words + wl, sizeof(words) - wl, "%s\"word%d\"", i ? " | " : "", i);
    struct st_gbnf *g3 = NULL;
    int32_t *wids = NULL;
    size_t wn = 0;
    const char *wdoc = "word7 and word123 and word299 and word42";
    struct result rw;
    if (st_gbnf_compile(words, strlen(words), &g3, &err) != ST_OK ||
        st_tok_encode(tok, wdoc, strlen(wdoc), false, false, &wids, &wn, &err) != ST_OK) {
        fprintf(stderr, "bench_gbnf: %s\n", err.msg);
        return 1;
    }
    p.grammar = g3;
    ok = runs(tok, &p, wids, wn, &rw) && ok;
    print("grammar, one of 300 words (x4)", &rw);
    free(wids);
    st_gbnf_unref(g3);
    char base[64], fig[64];
    snprintf(base, sizeof(base), "%.3f ms", rs.mask_mean * 1e3);
    snprintf(fig, sizeof(fig), "%.3f ms", rg.mask_mean * 1e3);
    bench_summary("gbnf", "whole mask per token, Qwen3 vocabulary: json_schema vs an equal grammar",
                  base, fig, rg.mask_mean > 0 ? rs.mask_mean / rg.mask_mean : 0);
    free(ids);
    st_json_schema_unref(sc);
    st_gbnf_unref(g1);
    st_gbnf_unref(g2);
    st_tok_free(tok);
    if (!ok) {
        fprintf(stderr, "bench_gbnf: a mask refused a token of the document\n");
        return 1;
    }
    return 0;
}
