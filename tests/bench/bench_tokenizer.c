/* bench_tokenizer.c -- tokenizer throughput on a ~100K-token prompt.
 *
 * usage: bench_tokenizer [tokenizer.json [tokenizer_config.json]]
 * Default paths: the npm package installed by the tokenizer_ref test
 * (build/tokenizer_ref/node_modules/...) or, failing that, the one in the
 * source tree (tests/e2e/tokenizer_ref/node_modules/...). Prints the load
 * time, tokens, and tokens/s for encode and decode (each the best of 5
 * runs), and a baseline measured in the same process: a "byte split" that
 * maps every byte to one id through a 256-entry table (the least any
 * tokenizer does: touch each input byte and write ids), in bytes/s. The
 * ratio encode / byte split (both in bytes/s) is far below 1; it puts the
 * encoder's figure next to a floor measured on the same machine at the
 * same moment, so a slower run on a loaded machine shows as such. With
 * STRATA_BENCH_SUMMARY set (scripts/bench.sh) it appends summary rows
 * (bench_summary.h). Not a ctest.
 *
 * Then long runs of one kind of character (a million digits, letters,
 * blanks, newlines, CJK, ...), the inputs where a pre-tokenizer or merge
 * loop that rescans its run costs the square of the length (a million
 * digits once took 200 s): each is encoded at 128 KB and at 512 KB and the
 * time ratio printed, ~4 for linear work, ~16 for quadratic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_summary.h"
#include "bench_qwen3.h"
#include "hf_tokenizer.h"
#include "strata/tokenizer.h"

static const char *const paragraphs[] = {
    "The quick brown fox jumps over the lazy dog. It's 5 o'clock and we'll see what they've done.\n",
    "int main(void)\n{\n    for (int i = 0; i < 10; i++)\n        printf(\"%d\\n\", i * 2);\n    return 0;\n}\n",
    ("\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c\xef\xbc\x81\xe4\xbb\x8a\xe5\xa4\xa9\xe7\x9a\x84"
     "\xe5\xa4\xa9\xe6\xb0\x94\xe6\x80\x8e\xe4\xb9\x88\xe6\xa0\xb7\xef\xbc\x9f\n"),
    "Numbers 1234567890 and 3.14159, emoji \xf0\x9f\x98\x80\xf0\x9f\x91\x8d, caf\xc3\xa9 na\xc3\xafve.\n",
    "    indented\t\ttabs   and    spaces\n\n\n",
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define REPS 5

/* The baseline: one id per byte through a table; best seconds of REPS. */
static double byte_split_s(const char *text, size_t len, int32_t *out)
{
    int32_t table[256];
    double best = 1e30;
    for (int i = 0; i < 256; i++)
        table[i] = i * 7 + 3;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        for (size_t i = 0; i < len; i++)
            out[i] = table[(unsigned char)text[i]];
        __asm__ volatile("" : : "r"(out) : "memory");   /* the stores happen, every run */
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

/* Best seconds of REPS encodes of text[0, len); < 0 on an error. */
static double encode_s(const struct st_tok *tok, const char *text, size_t len)
{
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        int32_t *ids = NULL;
        size_t n = 0;
        struct st_err err = { 0 };
        double t0 = now_s();
        enum st_status rc = st_tok_encode(tok, text, len, false, false, &ids, &n, &err);
        double dt = now_s() - t0;
        free(ids);
        if (rc != ST_OK)
            return -1;
        best = dt < best ? dt : best;
    }
    return best;
}

/* A run of one unit repeated to len bytes (whole units) into buf. */
static size_t fill_run(char *buf, size_t len, const char *unit)
{
    size_t u = strlen(unit), n = 0;
    while (n + u <= len) {
        memcpy(buf + n, unit, u);
        n += u;
    }
    return n;
}

/* Long runs: time at 4x the length over time at 1x (linear ~4). */
static int long_runs(const struct st_tok *tok)
{
    static const struct { const char *name, *unit; } runs[] = {
        { "digits", "7" }, { "letters", "a" }, { "upper", "A" }, { "blanks", " " },
        { "newlines", "\n" }, { "tabs", "\t" }, { "punct", "!" }, { "a1", "a1" },
        { "contraction", "'s" }, { "CJK", "\xe6\xbc\xa2" }, { "combining", "e\xcc\x81" },
        { "emoji", "\xf0\x9f\x98\x80" }, { "blank+newline", " \n" },
    };
    const size_t small = 128 * 1024, big = 4 * small;
    char *buf = malloc(big);
    if (!buf)
        return 1;
    double worst = 0;
    printf("long runs (encode time of 512 KB / 128 KB; linear ~4, quadratic ~16):\n");
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        size_t n1 = fill_run(buf, small, runs[i].unit), n4 = fill_run(buf, big, runs[i].unit);
        double t4 = encode_s(tok, buf, n4), t1 = encode_s(tok, buf, n1);
        if (t1 < 0 || t4 < 0) {
            free(buf);
            return 1;
        }
        double ratio = t4 / (t1 > 1e-9 ? t1 : 1e-9);
        worst = ratio > worst ? ratio : worst;
        printf("  %-14s %8.1f MB/s at 512 KB, x%.1f time for x4 length\n", runs[i].name,
               (double)n4 / t4 / 1e6, ratio);
    }
    char fig[48];
    snprintf(fig, sizeof(fig), "x%.1f", worst);
    bench_summary("tokenizer", "long runs: worst time ratio for 4x the input (linear ~4)", "x4.0",
                  fig, 4.0 / worst);   /* > 1: better than linear */
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    char jbuf[512], cbuf[512], *text, *back = NULL;
    const char *json = argc > 1 ? argv[1] : bench_qwen3_file("tokenizer.json", jbuf, sizeof(jbuf));
    const char *cfg = argc > 2 ? argv[2] : bench_qwen3_file("tokenizer_config.json", cbuf, sizeof(cbuf));
    struct st_tok *tok = NULL;
    struct st_err err = { 0 };
    size_t len = 0, cap = 1 << 20, n = 0, blen = 0, i;
    int32_t *ids = NULL;
    double t0, t1, t2, t3;

    if (!json) {
        fprintf(stderr, "bench_tokenizer: no tokenizer.json (run the tokenizer_ref test or pass a path)\n");
        return 2;
    }
    t0 = now_s();
    if (hf_tokenizer_load(json, cfg, &tok, NULL, &err) != ST_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    t1 = now_s();
    text = malloc(cap);
    for (i = 0; len + 200 < cap && len < 420000; i++) {
        const char *p = paragraphs[i % (sizeof(paragraphs) / sizeof(paragraphs[0]))];
        memcpy(text + len, p, strlen(p));
        len += strlen(p);
    }
    double enc = 1e30, dec = 1e30;
    for (int r = 0; r < REPS; r++) {
        free(ids);
        ids = NULL;
        t2 = now_s();
        if (st_tok_encode(tok, text, len, false, false, &ids, &n, &err) != ST_OK) {
            fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
            return 1;
        }
        t3 = now_s();
        enc = t3 - t2 < enc ? t3 - t2 : enc;
    }
    printf("load: %.3f s (%d tokens vocabulary)\n", t1 - t0, (int)st_tok_n_vocab(tok));
    printf("encode: %zu bytes -> %zu tokens in %.4f s = %.0f tokens/s (best of %d)\n", len, n,
           enc, (double)n / enc, REPS);
    for (int r = 0; r < REPS; r++) {
        free(back);
        back = NULL;
        t2 = now_s();
        if (st_tok_decode(tok, ids, n, true, &back, &blen, &err) != ST_OK)
            return 1;
        t3 = now_s();
        dec = t3 - t2 < dec ? t3 - t2 : dec;
    }
    printf("decode: %zu tokens in %.4f s = %.0f tokens/s (round trip %s)\n", n, dec,
           (double)n / dec, blen == len && !memcmp(back, text, len) ? "exact" : "DIFFERS");
    int32_t *bytes = malloc(len * sizeof(int32_t));
    double bs = bytes ? byte_split_s(text, len, bytes) : 0;
    if (bs > 0) {
        char base[48], fig[48];
        printf("baseline: byte split (one id per byte, a table) %.0f MB/s; encode %.1f MB/s = "
               "%.4fx of it\n", (double)len / bs / 1e6, (double)len / enc / 1e6, bs / enc);
        snprintf(base, sizeof(base), "%.0f MB/s", (double)len / bs / 1e6);
        snprintf(fig, sizeof(fig), "%.1f MB/s (%.2fM tok/s)", (double)len / enc / 1e6,
                 (double)n / enc / 1e6);
        bench_summary("tokenizer", "Qwen3 encode, 420 KB: byte split vs BPE encode (bytes/s)",
                      base, fig, bs / enc);
        snprintf(fig, sizeof(fig), "%.2fM tok/s", (double)n / dec / 1e6);
        bench_summary("tokenizer", "Qwen3 decode tokens/s (absolute)", "", fig, 0);
    }
    free(bytes);
    free(back);
    free(ids);
    free(text);
    int rc = long_runs(tok);
    st_tok_free(tok);
    return rc;
}
