/* bench_jsmask.c -- what the json_schema mask costs per token inside a
 * string with maxLength or a pattern (docs/API.md "Structured outputs"),
 * with the bounded / pattern string fast path (json_mask.c run_allows)
 * and without it (the step's run view cleared: every token whose first
 * byte fits is walked through the validator, as before the fast path).
 *
 * usage: bench_jsmask [tokenizer.json [tokenizer_config.json]]
 * (default: the tokenizer_ref test's Qwen3 tokenizer, 151,936 tokens).
 *
 * Each case walks the tokens of {"s": "<text>"} through one sampler and,
 * before every token, times the whole mask (st_json_mask_step, then
 * st_json_mask_allows over every token: what a sampled request pays) with
 * and without the fast path, interleaved, in thread CPU time (the machine
 * is shared), each the least of three runs; both masks must allow the
 * same tokens (the count is compared). Prints the mean over the tokens
 * inside the string (the opening quote's step to the last character's).
 * The "call:" case is the first one's string as a tool call's argument
 * (tool_choice naming a function, Hermes / Qwen3 format: json_mask.c
 * step_calls): the same text inside <tool_call>\n{"name": "f",
 * "arguments": {"s": "..."}}\n</tool_call>.
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
#include "strata/call_grammar.h"
#include "strata/json_schema.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define REPS 3

/* The whole mask once; 'fast' false: without the run view. Returns the
 * seconds, *allowed the tokens allowed. */
static double mask_once(const struct st_sampler *s, int32_t nv, bool fast, int32_t *allowed)
{
    static struct st_json_step st;   /* 30 KiB: off the stack */
    double t0 = cpu_s();
    st_json_mask_step(s, false, &st);
    if (!fast)
        st.run.kind = ST_JS_RUN_NONE;
    int32_t n = 0;
    for (int32_t id = 0; id < nv; id++)
        n += st_json_mask_allows(s, &st, id);
    *allowed = n;
    return cpu_s() - t0;
}

struct result {
    double slow, fast;   /* mean seconds per token in the string */
    double view;         /* ... of st_json_schema_run_view alone (in the step) */
    int    n;
    bool   ok;
};

/* The constraint of a case: schema as json_schema, or ('call') as the
 * parameters of the function "f" that tool_choice names (Hermes format);
 * *doc the text to walk. */
static enum st_status make_constraint(const char *schema, const char *text, bool call,
                                      struct st_json_schema **sc, struct st_call_grammar **g,
                                      char *doc, size_t cap, struct st_err *err)
{
    if (!call) {
        snprintf(doc, cap, "{\"s\": \"%s\"}", text);
        return st_json_schema_compile(schema, strlen(schema), sc, err);
    }
    char tools[1024];
    snprintf(tools, sizeof(tools),
             "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":%s}}]",
             schema);
    snprintf(doc, cap, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"%s\"}}\n"
             "</tool_call>", text);
    struct st_call_spec sp = { .format = ST_CALL_HERMES, .think = ST_CALL_THINK_NONE,
                               .tools_json = tools, .tools_len = strlen(tools), .name = "f" };
    return st_call_grammar_compile(&sp, g, NULL, err);
}

static struct result run_case(const struct st_tok *tok, const char *schema, const char *text,
                              bool call)
{
    struct result r = { 0, 0, 0, 0, true };
    struct st_err err = { 0 };
    struct st_json_schema *sc = NULL;
    struct st_call_grammar *g = NULL;
    char doc[1024];
    int32_t *ids = NULL, nv = st_tok_n_vocab(tok);
    size_t n = 0;
    if (make_constraint(schema, text, call, &sc, &g, doc, sizeof(doc), &err) != ST_OK ||
        st_tok_encode(tok, doc, strlen(doc), false, false, &ids, &n, &err) != ST_OK) {
        fprintf(stderr, "bench_jsmask: %s\n", err.msg);
        st_json_schema_unref(sc);
        st_call_grammar_unref(g);
        r.ok = false;
        return r;
    }
    struct st_gen_params p;
    st_gen_params_defaults(&p);
    p.json_schema = sc;
    p.tool_calls = g;
    struct st_sampler s;
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    r.ok = st_sampler_json_vocab(&s, tok, 0, nv, bench_tok_piece, bench_tok_eog, tok) == ST_OK;
    for (size_t k = 0; k < n && r.ok; k++) {
        double best[2] = { 1e30, 1e30 };
        int32_t allowed[2] = { 0, 0 };
        for (int rep = 0; rep < REPS; rep++) {
            for (int f = 0; f < 2; f++) {
                double t = mask_once(&s, nv, f == 1, &allowed[f]);
                best[f] = t < best[f] ? t : best[f];
            }
        }
        r.ok = allowed[0] == allowed[1] && allowed[0] > 0;
        struct st_json_step st;
        st_json_mask_step(&s, false, &st);
        r.ok = r.ok && st_json_mask_allows(&s, &st, ids[k]);
        const struct st_json_schema_state *js = call ? st_call_args(&s.cs) : &s.jss;
        if (js && (st.in_str || st.run.kind != ST_JS_RUN_NONE)) {
            static struct st_json_schema_run view;
            double t0 = cpu_s();
            for (int rep = 0; rep < 100; rep++)
                st_json_schema_run_view(js, &view);
            r.view += (cpu_s() - t0) / 100;
            r.slow += best[0];
            r.fast += best[1];
            r.n++;
        }
        if (getenv("BENCH_JSMASK_VERBOSE"))
            fprintf(stderr, "    slow %.3f ms fast %.3f ms  %6d allowed  run %d room %u\n",
                    best[0] * 1e3, best[1] * 1e3, (int)allowed[1], (int)st.run.kind,
                    (unsigned)st.run.room);
        st_sampler_accept(&s, ids[k]);
    }
    if (r.n > 0) {
        r.slow /= r.n;
        r.fast /= r.n;
        r.view /= r.n;
    }
    st_sampler_fini(&s);
    free(ids);
    st_json_schema_unref(sc);
    st_call_grammar_unref(g);
    return r;
}

#define OBJ(x) "{\"type\":\"object\",\"properties\":{\"s\":" x "},\"required\":[\"s\"]," \
               "\"additionalProperties\":false}"

static const struct { const char *name, *schema, *text; bool call; } cases[] = {
    { "pattern ^[a-zA-Z ]+$, maxLength 40",
      OBJ("{\"type\":\"string\",\"pattern\":\"^[a-zA-Z ]+$\",\"maxLength\":40}"),
      "The quick brown fox jumps over the dog", false },
    { "string, maxLength 40", OBJ("{\"type\":\"string\",\"maxLength\":40}"),
      "The quick brown fox jumps over the dog", false },
    { "pattern ^[a-zA-Z ]+$", OBJ("{\"type\":\"string\",\"pattern\":\"^[a-zA-Z ]+$\"}"),
      "The quick brown fox jumps over the lazy dog again and again", false },
    { "pattern ^[A-Z]{3}-[0-9]{4}$",
      OBJ("{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{4}$\"}"), "ABC-1234", false },
    { "format date-time", OBJ("{\"type\":\"string\",\"format\":\"date-time\"}"),
      "2024-05-17T12:34:56Z", false },
    { "string (free)", OBJ("{\"type\":\"string\"}"), "The quick brown fox jumps over the dog",
      false },
    { "call: pattern ^[a-zA-Z ]+$, maxLength 40",
      OBJ("{\"type\":\"string\",\"pattern\":\"^[a-zA-Z ]+$\",\"maxLength\":40}"),
      "The quick brown fox jumps over the dog", true },
    { "call: string, maxLength 40", OBJ("{\"type\":\"string\",\"maxLength\":40}"),
      "The quick brown fox jumps over the dog", true },
};

int main(int argc, char **argv)
{
    char jbuf[512], cbuf[512];
    const char *json = argc > 1 ? argv[1] : bench_qwen3_file("tokenizer.json", jbuf, sizeof(jbuf));
    const char *cfg = argc > 2 ? argv[2]
                               : bench_qwen3_file("tokenizer_config.json", cbuf, sizeof(cbuf));
    struct st_tok *tok = NULL;
    struct st_err err = { 0 };
    if (!json) {
        fprintf(stderr, "bench_jsmask: no tokenizer.json (pass a path)\n");
        return 2;
    }
    if (hf_tokenizer_load(json, cfg, &tok, NULL, &err) != ST_OK) {
        fprintf(stderr, "bench_jsmask: %s\n", err.msg);
        return 1;
    }
    printf("bench_jsmask: %d-token vocabulary; whole mask per token inside the string, "
           "thread CPU time\n", (int)st_tok_n_vocab(tok));
    bool ok = true;
    struct result first = { 0, 0, 0, 0, true };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct result r = run_case(tok, cases[c].schema, cases[c].text, cases[c].call);
        ok = ok && r.ok;
        if (c == 0)
            first = r;
        printf("  %-42s %3d tokens: walked %.3f ms, fast path %.3f ms (its view %.4f ms)%s\n",
               cases[c].name, r.n, r.slow * 1e3, r.fast * 1e3, r.view * 1e3,
               r.ok ? "" : "  (MISMATCH or refused)");
    }
    char base[64], fig[64];
    snprintf(base, sizeof(base), "%.3f ms", first.slow * 1e3);
    snprintf(fig, sizeof(fig), "%.3f ms", first.fast * 1e3);
    bench_summary("jsmask", "whole mask per token in a ^[a-zA-Z ]+$ maxLength 40 string, Qwen3 "
                  "vocabulary: walked vs fast path", base, fig,
                  first.fast > 0 ? first.slow / first.fast : 0);
    st_tok_free(tok);
    if (!ok) {
        fprintf(stderr, "bench_jsmask: the masks differ or refused a token of the document\n");
        return 1;
    }
    return 0;
}
