/* bench_spec_cost.c -- what a draft-verify step is made of, on a model with
 * an MTP layer (docs/ENGINE.md "Draft length: cost-aware"): the numbers the
 * engine's cost model (src/engine/draft/spec_cost.c) learns online, measured here
 * directly on the model so they can be read side by side.
 *
 * For n = 1, 2, 4 slots (each holding a P-token prompt) it times, as the
 * lower quartile of R calls:
 *   - the main forward alone with q = 1..Q rows per slot (all logits), and
 *     one row per slot drawn on the backend (a plain greedy decode);
 *   - st_mtp_forward, the same rows plus the MTP upkeep;
 *   - st_mtp_draft of k = 1..Q-1 drafts for the n slots.
 * Then, for each n, the tokens per second a step of k drafts would give at
 * acceptance a (0.9 and 0.6), tokens = n (1 + a + .. + a^k), against the
 * plain decode (k = 0, no MTP at all): what drafting buys at this size.
 *
 * Usage: bench_spec_cost MODEL.gguf [reps (30)] [threads (2)] [Q (5)]
 * Not a test: not registered with ctest, asserts no timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/clock.h"
#include "strata/forward.h"
#include "strata/mtp.h"

#define MAX_N 4
#define MAX_Q 5
#define PROMPT 32
#define MAX_REPS 200

struct ctx {
    struct st_model *m;
    struct st_mtp *mtp;
    int reps;
    int32_t tok[MAX_N * PROMPT], slot[MAX_N * PROMPT];
    int64_t pos[MAX_N * PROMPT], out[MAX_N * PROMPT];
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The lower quartile: on a shared machine the upper half is mostly other
 * processes' time, the lowest single call an outlier the other way. */
static double quartile_ms(int64_t *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), cmp_i64);
    return (double)t[n / 4] / 1e6;
}

/* n slots, q rows each at positions PROMPT .. PROMPT + q - 1; logits of
 * every row (n_out = n q) unless draw (one row per slot, drawn). */
static void fill(struct ctx *c, int n, int q, struct st_model_batch *b)
{
    int64_t r = 0;
    for (int s = 0; s < n; s++)
        for (int j = 0; j < q; j++, r++) {
            c->tok[r] = 40 + (int32_t)((s * 7 + j * 3) % 50);
            c->slot[r] = s;
            c->pos[r] = PROMPT + j;
            c->out[r] = r;
        }
    *b = (struct st_model_batch){ .n_rows = r, .tokens = c->tok, .slots = c->slot,
                                  .pos = c->pos, .n_out = r, .out_rows = c->out };
}

enum how { MAIN, MAIN_DRAW, UPKEEP };

/* Median ms of one forward of n slots x q rows. */
static double time_forward(struct ctx *c, int n, int q, enum how how)
{
    int64_t t[MAX_REPS];
    struct st_model_batch b;
    struct st_draw draw[MAX_N];
    int32_t ids[MAX_N];
    struct st_err err = { 0 };
    fill(c, n, q, &b);
    for (int i = 0; i < n; i++)
        draw[i] = (struct st_draw){ .top_k = 1, .top_p = 1.0f, .temp = 0.0f };
    for (int i = 0; i < c->reps; i++) {
        const float *lg = NULL;
        int64_t t0 = st_clock_now(st_clock_real());
        enum st_status rc = how == UPKEEP ? st_mtp_forward(c->mtp, &b, &lg, &err)
                            : how == MAIN ? st_model_forward(c->m, &b, &lg, &err)
                                          : st_model_forward_draw(c->m, &b, draw, ids, &err);
        t[i] = st_clock_now(st_clock_real()) - t0;
        if (rc != ST_OK) {
            fprintf(stderr, "bench_spec_cost: forward: %s\n", err.msg);
            exit(1);
        }
    }
    return quartile_ms(t, c->reps);
}

static double time_draft(struct ctx *c, int n, int k)
{
    int64_t t[MAX_REPS];
    int32_t out[MAX_N][MAX_Q];
    struct st_mtp_draft d[MAX_N];
    struct st_err err = { 0 };
    for (int i = 0; i < c->reps; i++) {
        for (int s = 0; s < n; s++)
            d[s] = (struct st_mtp_draft){ .slot = s, .token = 40 + s, .pos = PROMPT,
                                          .n_draft = k, .out = out[s] };
        int64_t t0 = st_clock_now(st_clock_real());
        enum st_status rc = st_mtp_draft(c->mtp, d, n, &err);
        t[i] = st_clock_now(st_clock_real()) - t0;
        if (rc != ST_OK) {
            fprintf(stderr, "bench_spec_cost: draft: %s\n", err.msg);
            exit(1);
        }
    }
    return quartile_ms(t, c->reps);
}

/* Every slot reads its PROMPT tokens (the carried MTP state is then set). */
static void read_prompts(struct ctx *c)
{
    struct st_err err = { 0 };
    int64_t r = 0;
    for (int s = 0; s < MAX_N; s++)
        for (int j = 0; j < PROMPT; j++, r++) {
            c->tok[r] = 30 + (int32_t)((s + j) % 60);
            c->slot[r] = s;
            c->pos[r] = j;
            c->out[s] = r;   /* the slot's last row: one logit row per slot */
        }
    struct st_model_batch b = { .n_rows = r, .tokens = c->tok, .slots = c->slot, .pos = c->pos,
                                .n_out = MAX_N, .out_rows = c->out };
    const float *lg = NULL;
    if (st_mtp_forward(c->mtp, &b, &lg, &err) != ST_OK) {
        fprintf(stderr, "bench_spec_cost: prompt read: %s\n", err.msg);
        exit(1);
    }
}

static void table(struct ctx *c, int q_max)
{
    printf("| n | rows/slot | main ms | main+upkeep ms | upkeep | draft k=rows-1 ms |\n"
           "| -: | -: | -: | -: | -: | -: |\n");
    double plain[MAX_N + 1] = { 0 }, step[MAX_N + 1][MAX_Q + 1], draft[MAX_N + 1][MAX_Q + 1];
    for (int n = 1; n <= MAX_N; n *= 2) {
        read_prompts(c);
        plain[n] = time_forward(c, n, 1, MAIN_DRAW);
        printf("| %d | 1 (drawn) | %.3f | | | |\n", n, plain[n]);
        for (int q = 1; q <= q_max; q++) {
            double a = time_forward(c, n, q, MAIN), b = time_forward(c, n, q, UPKEEP);
            double d = 0.0;
            read_prompts(c);   /* the forwards moved the carried states: set them again */
            if (q > 1)
                d = time_draft(c, n, q - 1);
            step[n][q] = b;
            draft[n][q] = d;
            printf("| %d | %d | %.3f | %.3f | %+.0f%% | %.3f |\n", n, q, a, b,
                   100.0 * (b / a - 1.0), d);
        }
    }
    printf("\nModelled speedup over a plain decode (no MTP) of k drafts per slot, every slot\n"
           "drafting, tokens n (1 + a + .. + a^k) per step of (draft + main+upkeep) ms:\n\n"
           "| n | k | a 0.9 | a 0.6 |\n| -: | -: | -: | -: |\n");
    for (int n = 1; n <= MAX_N; n *= 2)
        for (int q = 1; q <= q_max; q++) {
            double t = step[n][q] + draft[n][q], s9 = 0, s6 = 0, p9 = 1, p6 = 1;
            for (int j = 0; j < q; j++, p9 *= 0.9, p6 *= 0.6) {
                s9 += p9;
                s6 += p6;
            }
            printf("| %d | %d | %.2fx | %.2fx |\n", n, q - 1, s9 * plain[n] / t,
                   s6 * plain[n] / t);
        }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: bench_spec_cost MODEL.gguf [reps (30)] [threads (2)] [Q (5)]\n", stderr);
        return 2;
    }
    struct ctx c = { .reps = argc > 2 ? atoi(argv[2]) : 30 };
    int threads = argc > 3 ? atoi(argv[3]) : 2, q_max = argc > 4 ? atoi(argv[4]) : MAX_Q;
    c.reps = c.reps < 1 ? 1 : c.reps > MAX_REPS ? MAX_REPS : c.reps;
    q_max = q_max < 1 ? 1 : q_max > MAX_Q ? MAX_Q : q_max;
    struct st_err err = { 0 };
    struct st_model_params p = { .n_threads = threads, .n_slots = MAX_N, .n_ctx = 256,
                                 .max_rows = MAX_N * PROMPT, .max_out = MAX_N * MAX_Q };
    if (st_model_open(argv[1], &c.m, &err) != ST_OK ||
        st_model_load(c.m, &p, NULL, NULL, &err) != ST_OK ||
        st_mtp_new(c.m, MAX_Q - 1, &c.mtp, &err) != ST_OK) {
        fprintf(stderr, "bench_spec_cost: %s\n", err.msg);
        st_model_free(c.m);
        return 1;
    }
    table(&c, q_max);
    st_mtp_free(c.mtp);
    st_model_free(c.m);
    return 0;
}
