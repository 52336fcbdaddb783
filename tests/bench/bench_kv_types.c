/* bench_kv_types.c -- the accuracy cost of a KV cache type against F16 (or
 * another base type) on
 * one model file (kv_compare.h): max and mean logit difference and top-1
 * agreement over the positions of a prompt, and how many greedy tokens
 * after it come out the same. The figures of docs/ENGINE.md "KV cache
 * types"; speed is strata bench -ctk/-ctv's.
 *
 * Usage: bench_kv_types MODEL.gguf [prompt (300)] [generated (64)] [threads (2)]
 *                       [type_k (q8_0)] [type_v (q8_0)] [base (f16; both caches)]
 * Not a test: not registered with ctest.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kv_compare.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_kv_types MODEL.gguf [prompt 300] [generated 64] "
                        "[threads 2] [type_k q8_0] [type_v q8_0] [base f16]\n");
        return 2;
    }
    int64_t np = argc > 2 ? atoll(argv[2]) : 300, ng = argc > 3 ? atoll(argv[3]) : 64;
    int threads = argc > 4 ? atoi(argv[4]) : 2;
    enum st_kv_type tk = ST_KV_Q8_0, tv = ST_KV_Q8_0, base = ST_KV_F16;
    if (np < 1 || ng < 0 || threads < 1 || (argc > 5 && !st_kv_type_parse(argv[5], &tk)) ||
        (argc > 6 && !st_kv_type_parse(argv[6], &tv)) ||
        (argc > 7 && !st_kv_type_parse(argv[7], &base))) {
        fprintf(stderr, "bench_kv_types: prompt >= 1, generated >= 0, threads >= 1, types f16, "
                        "q8_0, f32 or bf16\n");
        return 2;
    }
    struct kv_compare c;
    struct st_err err = { 0 };
    if (kv_compare_base(argv[1], base, base, tk, tv, np, ng, threads, &c, &err) != 0) {
        fprintf(stderr, "bench_kv_types: %s\n", err.msg);
        return 1;
    }
    printf("KV cache k %s v %s vs %s, %s\n", st_kv_type_name(tk), st_kv_type_name(tv),
           st_kv_type_name(base), argv[1]);
    printf("prompt positions %lld: top-1 agreement %.1f%% (%lld), logit |diff| max %.4f "
           "mean %.5f (mean |logit| %.3f)\n", (long long)c.n_pos,
           100.0 * (double)c.top1_same / (double)c.n_pos, (long long)c.top1_same, c.max_diff,
           c.mean_diff, c.mean_abs);
    printf("mean top-1 margin of the base logits %.3f; where it is >= %.1f (%lld positions) "
           "top-1 agreement %.1f%%\n", c.mean_margin, KVC_CLEAR, (long long)c.n_clear,
           c.n_clear ? 100.0 * (double)c.clear_same / (double)c.n_clear : 100.0);
    printf("greedy after the prompt: the first %lld of %lld tokens equal\n",
           (long long)c.greedy_same, (long long)c.n_gen);
    return 0;
}
