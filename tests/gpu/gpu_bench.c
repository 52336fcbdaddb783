/* gpu_bench.c -- the GPU check's own measuring tool (tests/gpu/run.sh).
 *
 * It needs only st_model and st_backend (no server, config or engine), so
 * it builds with -DSTRATA_SERVER=OFF on the GPU machine, which lacks the
 * server's libraries:
 *
 *   gpu_bench make OUT.gguf PRESET QUANT      write a synthetic model
 *                                             (st_make_model; seed 1)
 *   gpu_bench run MODEL.gguf [-b cuda] [-np N[,N..]] [-n STEPS] [-p PROMPT] [-c CTX]
 *   gpu_bench kern [-b cuda]                  matmul kernels alone (no model)
 *
 * 'run' loads the model on the backend, then
 *   prompt: one forward of PROMPT rows on slot 0 (logits of the last row),
 *           timed after one warm-up forward;
 *   decode: for each N of -np (the model is loaded once with the largest N
 *           slots): STEPS forwards of N rows (one per slot, positions
 *           0..STEPS-1, random token ids, logits for every row), timed after
 *           4 warm-up steps,
 * and prints tokens/s, kernel launches per step and per layer (st_backend_stats;
 * STRATA_CUDA_FUSE=0 in the environment measures the unfused kernels) and
 * the achieved fraction of memory bandwidth:
 * bytes read per decode step / step time / 4.8 TB/s (H200). The bytes per
 * step are counted from the GGUF tensor table: every non-expert weight in
 * full (the output head too), one embedding row per token, and for expert
 * tensors the share of experts a step touches, X * (1 - (1 - k/X)^N) of X
 * (independent routing), plus the F16 KV cache read at the mean position.
 *
 * 'kern' times st_backend_matmul alone on a [2048 -> 32768] weight of each
 * main type (random bytes: the speed does not depend on the values), at 1
 * and 4 rows, 20 calls per timing, eagerly and replayed as a CUDA graph:
 * weight GB/s against the 4.8 TB/s peak, and what launches cost. Before
 * that, the a3b decode shapes (wq, wk/wv, wo, the experts as dense
 * stand-ins, the F32 router) "cold": each call reads another copy of the
 * weight, >= 160 MB in all, so the bytes come from HBM as in a decode step;
 * and wq + wk + wv of one x as three matmuls against one matmul3.
 * Then it times the delta rule alone (st_backend_delta_net) on a 512-row
 * prompt read of one slot at D = 128, 16 q/k and 32 v heads: the chunked
 * form (the default) against the row-by-row recurrence (a second backend
 * opened with STRATA_CUDA_DELTA_CHUNK=0), and how far apart their outputs are.
 * Each line it prints starts with "bench:" so run.sh can grep them.
 */
#define _POSIX_C_SOURCE 200809L   /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/backend.h"
#include "strata/backend_ssm.h"
#include "strata/forward.h"
#include "strata/gguf.h"
#include "strata/make_model.h"
#include "strata/model_desc.h"

#define PEAK_BW 4.8e12

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void)
{
    fputs("usage: gpu_bench make OUT.gguf PRESET QUANT\n"
          "       gpu_bench run MODEL.gguf [-b cuda] [-np N[,N..]] [-n STEPS] [-p PROMPT] [-c CTX]\n"
          "       gpu_bench kern [-b cuda]\n",
          stderr);
    return 2;
}

static int cmd_make(int argc, char **argv)
{
    struct st_make_model_opts o;
    struct st_err err;
    double t0 = now_s();

    if (argc != 5)
        return usage();
    memset(&o, 0, sizeof(o));
    o.out_path = argv[2];
    o.preset = argv[3];
    o.quant = argv[4];
    o.seed = 1;
    if (st_make_model(&o, &err) != ST_OK) {
        fprintf(stderr, "gpu_bench: make-model %s %s: %s\n", argv[3], argv[4], err.msg);
        return 1;
    }
    printf("bench: made %s (preset %s, %s) in %.1f s\n", argv[2], argv[3], argv[4],
           now_s() - t0);
    return 0;
}

/* Weight bytes one decode step of np rows reads (see the file comment). */
static double step_weight_bytes(const struct st_model *m, int np)
{
    const struct st_gguf *g = st_model_gguf(m);
    const struct st_hparams *hp = st_model_hparams(m);
    bool tied = st_gguf_find_tensor(g, "output.weight") == NULL;
    double bytes = 0.0, share = 1.0;

    if (hp->n_expert > 0) {
        double kx = (double)hp->n_expert_used / (double)hp->n_expert;
        share = 1.0 - pow(1.0 - kx, np);
    }
    for (int64_t i = 0; i < st_gguf_n_tensors(g); i++) {
        const struct st_gguf_tensor *t = st_gguf_tensor(g, i);
        char name[80];
        int layer = -1;
        snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.ptr);
        if (sscanf(name, "blk.%d.", &layer) == 1 && layer >= hp->n_layer)
            continue;                                   /* MTP blocks: not loaded */
        if (strstr(name, "_exps."))
            bytes += (double)t->nbytes * share;
        else if (strcmp(name, "token_embd.weight") == 0 && !tied)
            bytes += (double)t->nbytes / (double)t->ne[1] * np;
        else
            bytes += (double)t->nbytes;
    }
    return bytes;
}

static double kv_bytes_per_pos(const struct st_model *m)
{
    const struct st_hparams *hp = st_model_hparams(m);
    return (double)hp->n_layer * 2.0 * (double)hp->n_head_kv * (double)hp->head_dim_k * 2.0;
}

struct run_opts {
    const char *path, *backend;
    int np, steps, prompt, ctx;   /* np: the most slots of any decode test */
    int nps[8], n_nps;            /* the -np list */
};

static int parse_run(int argc, char **argv, struct run_opts *o)
{
    *o = (struct run_opts){ argv[2], "cuda", 1, 64, 512, 4096, { 1 }, 1 };
    for (int i = 3; i < argc; i++) {
        bool v = i + 1 < argc;
        if (strcmp(argv[i], "-b") == 0 && v) {
            o->backend = argv[++i];
        } else if (strcmp(argv[i], "-np") == 0 && v) {
            char *p = argv[++i];
            o->n_nps = 0;
            o->np = 0;
            while (*p && o->n_nps < 8) {
                int n = (int)strtol(p, &p, 10);
                if (n < 1 || n > 64)
                    return usage();
                o->nps[o->n_nps++] = n;
                o->np = n > o->np ? n : o->np;
                if (*p == ',')
                    p++;
                else if (*p)
                    return usage();
            }
        }
        else if (strcmp(argv[i], "-n") == 0 && v)
            o->steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-p") == 0 && v)
            o->prompt = atoi(argv[++i]);
        else if (strcmp(argv[i], "-c") == 0 && v)
            o->ctx = atoi(argv[++i]);
        else
            return usage();
    }
    if (o->n_nps < 1 || o->np < 1 || o->steps < 1 || o->prompt < 0 || o->ctx < o->steps + 8 ||
        o->ctx < o->prompt + 1)
        return usage();
    return 0;
}

static int bench_prompt(struct st_model *m, const struct run_opts *o, int32_t *tok,
                        int32_t *slot, int64_t *pos)
{
    const int64_t vocab = st_model_hparams(m)->n_vocab;
    int64_t last = o->prompt - 1;
    struct st_model_batch b = { o->prompt, tok, slot, pos, 1, &last };
    const float *logits;
    struct st_err err;
    double t = 0.0;

    for (int i = 0; i < o->prompt; i++) {
        tok[i] = (int32_t)((i * 7919) % vocab);
        slot[i] = 0;
        pos[i] = i;
    }
    for (int rep = 0; rep < 2; rep++) {                /* warm-up, then timed */
        double t0 = now_s();
        if (st_model_forward(m, &b, &logits, &err) != ST_OK) {
            fprintf(stderr, "gpu_bench: prompt forward: %s\n", err.msg);
            return 1;
        }
        t = now_s() - t0;
    }
    printf("bench: prompt pp%d: %.1f tok/s (%.1f ms)\n", o->prompt, o->prompt / t, t * 1e3);
    return 0;
}

/* How a decode step's tokens come back: drawn on the device
 * (st_model_forward_draw, ids copied back, as the engine does for requests
 * that need nothing but the draw chain), greedy or with the default
 * sampling (top-k 40, top-p 0.95, min-p 0.05, temperature 0.8); or every
 * row's logits copied back. */
enum decode_back { BACK_GREEDY_IDS, BACK_SAMPLED_IDS, BACK_LOGITS };

/* Kernel launches per decode step from the backend's counters (replayed
 * graphs included), per layer, and the fusion state (STRATA_CUDA_FUSE). */
static void print_launches(const struct st_model *m, int np, const char *how,
                           const struct st_backend_stats *a, const struct st_backend_stats *b,
                           int steps)
{
    const char *f = getenv("STRATA_CUDA_FUSE");
    const double L = (double)st_model_hparams(m)->n_layer;
    const double k = (double)(b->kernels - a->kernels) / steps;
    printf("bench: decode np=%d (%s back): %.1f launches per step (%.2f per layer), %.1f ops "
           "per step, %.1f quantizes skipped per step, %.2f graph replays per step, fusion %s\n",
           np, how, k, k / L, (double)(b->ops - a->ops) / steps,
           (double)(b->quant_skipped - a->quant_skipped) / steps,
           (double)(b->graph_replays - a->graph_replays) / steps,
           f && strcmp(f, "0") == 0 ? "off" : "on");
}

static int bench_decode(struct st_model *m, const struct run_opts *o, int np,
                        enum decode_back back, int32_t *tok, int32_t *slot, int64_t *pos,
                        int64_t *outs)
{
    const int64_t vocab = st_model_hparams(m)->n_vocab;
    const int warm = 4;
    struct st_model_batch b = { np, tok, slot, pos, np, outs };
    struct st_draw draws[64];
    int32_t ids[64];
    const float *logits;
    struct st_err err;
    double t0 = 0.0;

    if (np > 64) {
        fprintf(stderr, "gpu_bench: at most 64 rows a decode step\n");
        return 1;
    }
    bool sampled = back == BACK_SAMPLED_IDS;
    for (int r = 0; r < np; r++)
        draws[r] = (struct st_draw){ .top_k = sampled ? 40 : 1, .top_p = 0.95f, .min_p = 0.05f,
                                     .temp = sampled ? 0.8f : 0.0f, .u = 0.5 };

    struct st_backend_stats st0 = { 0 }, st1;
    for (int s = 0; s < warm + o->steps; s++) {
        if (s == warm) {
            st_backend_stats(st_model_backend(m), &st0);
            t0 = now_s();
        }
        for (int r = 0; r < np; r++) {
            tok[r] = (int32_t)(((s + 1) * 104729 + r * 7) % vocab);
            slot[r] = r;
            pos[r] = s;
            outs[r] = r;
        }
        for (int r = 0; r < np; r++)
            draws[r].u = (double)((s * 7 + r * 13) % 100) / 100.0;
        enum st_status rc = back != BACK_LOGITS ? st_model_forward_draw(m, &b, draws, ids, &err)
                                                : st_model_forward(m, &b, &logits, &err);
        if (rc != ST_OK) {
            fprintf(stderr, "gpu_bench: decode step %d: %s\n", s, err.msg);
            return 1;
        }
    }
    double dt = (now_s() - t0) / o->steps;
    st_backend_stats(st_model_backend(m), &st1);
    double mean_pos = warm + (o->steps - 1) / 2.0 + 1.0;
    double bytes = step_weight_bytes(m, np) + kv_bytes_per_pos(m) * mean_pos * np;
    const char *how = back == BACK_GREEDY_IDS ? "greedy ids"
                    : back == BACK_SAMPLED_IDS ? "sampled ids" : "logits";
    printf("bench: decode np=%d (%s back): %.1f tok/s aggregate, %.1f tok/s per slot, "
           "%.3f ms/step\n", np, how, np / dt, 1.0 / dt, dt * 1e3);
    printf("bench: decode np=%d (%s back): %.3f GB read per step -> %.2f TB/s = %.1f%% of "
           "%.1f TB/s\n", np, how, bytes / 1e9, bytes / dt / 1e12, 100.0 * bytes / dt / PEAK_BW,
           PEAK_BW / 1e12);
    print_launches(m, np, how, &st0, &st1, o->steps);
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    struct st_model *m = NULL;
    struct st_err err;
    int rc = parse_run(argc, argv, &o);
    double t0 = now_s();

    if (rc != 0)
        return rc;
    if (st_model_open(o.path, &m, &err) != ST_OK) {
        fprintf(stderr, "gpu_bench: %s\n", err.msg);
        return 1;
    }
    struct st_model_params p = { .backend = o.backend, .n_slots = o.np, .n_ctx = o.ctx,
                                 .max_rows = o.prompt > o.np ? o.prompt : o.np,
                                 .max_out = o.np };
    if (st_model_load(m, &p, NULL, NULL, &err) != ST_OK) {
        fprintf(stderr, "gpu_bench: load on %s: %s\n", o.backend, err.msg);
        st_model_free(m);
        return err.code == ST_ERR_DEVICE || err.code == ST_ERR_UNSUPPORTED ? 3 : 1;
    }
    printf("bench: loaded %s in %.1f s on %s\n", o.path, now_s() - t0,
           st_backend_describe(st_model_backend(m)));
    size_t n = (size_t)(o.prompt > o.np ? o.prompt : o.np);
    int32_t *tok = calloc(n, 4), *slot = calloc(n, 4);
    int64_t *pos = calloc(n, 8), *outs = calloc(n, 8);
    rc = !tok || !slot || !pos || !outs;
    if (rc == 0 && o.prompt > 0)
        rc = bench_prompt(m, &o, tok, slot, pos);
    for (int i = 0; i < o.n_nps && rc == 0; i++) {
        for (int back = BACK_GREEDY_IDS; back <= BACK_LOGITS && rc == 0; back++)
            rc = bench_decode(m, &o, o.nps[i], (enum decode_back)back, tok, slot, pos, outs);
    }
    free(tok);
    free(slot);
    free(pos);
    free(outs);
    st_model_free(m);
    return rc;
}

/* 20 matmuls, eager or as one graph; returns seconds per matmul. */
static double time_matmuls(struct st_backend *be, const struct st_tensor *y,
                           const struct st_tensor *x, const struct st_tensor *w, int n_w,
                           int calls, bool graph, uint64_t key, struct st_err *err)
{
    double t0 = 0.0;
    for (int rep = 0; rep < 4; rep++) {        /* reps 0-1: warm-up (and capture) */
        bool replayed = false;
        if (rep == 2)
            t0 = now_s();
        if (graph && st_backend_graph_begin(be, key, &replayed, err) != ST_OK)
            return -1.0;
        for (int i = 0; i < calls && !replayed; i++)
            if (st_backend_matmul(be, y, x, &w[i % n_w], err) != ST_OK)
                return -1.0;
        if (graph && !replayed && st_backend_graph_end(be, err) != ST_OK)
            return -1.0;
        if (st_backend_sync(be, err) != ST_OK)
            return -1.0;
    }
    return (now_s() - t0) / (2.0 * calls);
}

/* ---- the delta rule alone --------------------------------------------- */

enum { DN_T_OUT, DN_T_QKV, DN_T_ALPHA, DN_T_BETA, DN_T_DTB, DN_T_A, DN_T_STATE, DN_T_SLOT,
       DN_T_POS, DN_T_N };

/* The delta rule's tensors for 'rows' rows of slot 0 from position 0,
 * random inputs (seeded, the same on every backend). */
static int delta_alloc(struct st_backend *be, const struct st_delta_net_params *p, int64_t rows,
                       struct st_tensor *t, struct st_err *err)
{
    const int64_t D = p->head_dim, hv = p->n_v_heads, c3 = (2 * p->n_k_heads + hv) * D;
    const int64_t ne[DN_T_N][4] = { { hv * D, rows, 1, 1 }, { c3, rows, 1, 1 },
                                    { hv, rows, 1, 1 },     { hv, rows, 1, 1 },
                                    { hv, 1, 1, 1 },        { hv, 1, 1, 1 },
                                    { D, D, hv, 1 },        { rows, 1, 1, 1 },
                                    { rows, 1, 1, 1 } };
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < DN_T_N; i++) {
        enum st_dtype dt = i >= DN_T_SLOT ? ST_DTYPE_I32 : ST_DTYPE_F32;
        if (st_backend_alloc(be, dt, ne[i], &t[i], err) != ST_OK)
            return -1;
        int64_t n = ne[i][0] * ne[i][1] * ne[i][2] * ne[i][3];
        float *v = malloc((size_t)n * sizeof(float));
        for (int64_t e = 0; e < n; e++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            float u = (float)(s >> 40) / 16777216.0f * 2.0f - 1.0f;   /* [-1, 1) */
            if (i == DN_T_SLOT)
                ((int32_t *)v)[e] = 0;
            else if (i == DN_T_POS)
                ((int32_t *)v)[e] = (int32_t)e;
            else
                v[e] = i == DN_T_A ? -1.0f - 0.5f * u : u;   /* a < 0 */
        }
        enum st_status rc = st_backend_write(be, &t[i], 0, v, (size_t)n * sizeof(float), err);
        free(v);
        if (rc != ST_OK)
            return -1;
    }
    return 0;
}

/* Seconds per delta_net call (3 warm-up, 10 timed); the output into 'out'. */
static double time_delta(struct st_backend *be, const struct st_delta_net_params *p,
                         int64_t rows, float *out, struct st_err *err)
{
    struct st_tensor t[DN_T_N] = { 0 };
    double dt = -1.0, t0 = 0.0;
    if (delta_alloc(be, p, rows, t, err) != 0)
        goto done;
    for (int rep = 0; rep < 13; rep++) {
        if (rep == 3) {
            if (st_backend_sync(be, err) != ST_OK)
                goto done;
            t0 = now_s();
        }
        if (st_backend_delta_net(be, &t[DN_T_OUT], &t[DN_T_QKV], &t[DN_T_ALPHA], &t[DN_T_BETA],
                                 &t[DN_T_DTB], &t[DN_T_A], &t[DN_T_STATE], &t[DN_T_SLOT],
                                 &t[DN_T_POS], p, err) != ST_OK)
            goto done;
    }
    if (st_backend_sync(be, err) != ST_OK)
        goto done;
    dt = (now_s() - t0) / 10.0;
    if (st_backend_read(be, &t[DN_T_OUT], 0, out, st_tensor_nbytes(&t[DN_T_OUT]), err) != ST_OK)
        dt = -1.0;
done:
    for (int i = 0; i < DN_T_N; i++)
        if (t[i].data)
            st_backend_release(be, &t[i]);
    return dt;
}

/* Chunked (be) against row by row (a backend opened with
 * STRATA_CUDA_DELTA_CHUNK=0): time and output distance. */
static int bench_delta(struct st_backend *be, const char *name)
{
    const struct st_delta_net_params p = { 16, 32, 128, 1e-6f, false };
    const int64_t rows = 512, n_out = rows * p.n_v_heads * p.head_dim;
    float *oc = malloc((size_t)n_out * sizeof(float)), *orr = malloc((size_t)n_out * sizeof(float));
    struct st_backend *rec = NULL;
    struct st_err err;
    int rc = 1;

    double tc = time_delta(be, &p, rows, oc, &err);
    if (tc < 0)
        goto done;
    setenv("STRATA_CUDA_DELTA_CHUNK", "0", 1);
    enum st_status orc = st_backend_open(name, NULL, &rec, &err);
    unsetenv("STRATA_CUDA_DELTA_CHUNK");
    if (orc != ST_OK)
        goto done;
    double tr = time_delta(rec, &p, rows, orr, &err);
    if (tr < 0)
        goto done;
    double d = 0.0, w = 0.0;
    for (int64_t i = 0; i < n_out; i++)
        d += ((double)oc[i] - orr[i]) * ((double)oc[i] - orr[i]), w += (double)orr[i] * orr[i];
    printf("bench: delta_net D=%d Hk=%d Hv=%d, %lld rows of one slot: %8.1f us row by row, "
           "%8.1f us chunked (%.2fx), outputs %.2g apart (rel)\n", (int)p.head_dim,
           (int)p.n_k_heads, (int)p.n_v_heads, (long long)rows, tr * 1e6, tc * 1e6, tr / tc,
           sqrt(d) / (sqrt(w) + 1e-30));
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "gpu_bench: delta: %s\n", err.msg);
    if (rec)
        st_backend_close(rec);
    free(oc);
    free(orr);
    return rc;
}

/* Random weight bytes (small: finite fp16 scales; the speed does not
 * depend on the values). */
static void kern_fill(uint8_t *host, size_t nb)
{
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < nb; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        host[i] = (uint8_t)(s & 0x3f);
    }
}

/* Time y = x . w^T for a [I -> O] weight of 'type' at 1 and 4 rows. With
 * 'cold' the calls rotate over enough copies of w (>= 160 MB) that each
 * reads its weight from HBM, not from the 50 MB L2, as a decode step does. */
static int kern_shape(struct st_backend *be, enum st_dtype type, int64_t I, int64_t O, bool cold,
                      const char *what, uint64_t key, struct st_err *err)
{
    size_t nb = st_dtype_row_bytes(type, I) * (size_t)O;
    int n_w = cold ? (int)((160u << 20) / nb + 1) : 1;
    n_w = n_w > 256 ? 256 : n_w;
    const int calls = n_w > 20 ? n_w : 20;
    uint8_t *host = malloc(nb);
    struct st_tensor *w = calloc((size_t)n_w, sizeof(*w));
    int rc = host == NULL || w == NULL;
    if (rc)
        snprintf(err->msg, sizeof(err->msg), "out of memory");
    else
        kern_fill(host, nb);
    for (int i = 0; i < n_w && rc == 0; i++)   /* the CPU backend borrows 'host' until release */
        rc = st_backend_wrap(be, type, (int64_t[4]){ I, O, 1, 1 }, host, nb, &w[i], err) != ST_OK;
    for (int n = 1; n <= 4 && rc == 0; n *= 4) {
        struct st_tensor x = { 0 }, y = { 0 };
        rc = st_backend_alloc(be, ST_DTYPE_F32, (int64_t[4]){ I, n, 1, 1 }, &x, err) ||
             st_backend_alloc(be, ST_DTYPE_F32, (int64_t[4]){ O, n, 1, 1 }, &y, err);
        double te = rc ? -1 : time_matmuls(be, &y, &x, w, n_w, calls, false, 0, err);
        double tg = rc ? -1 : time_matmuls(be, &y, &x, w, n_w, calls, true, key + (uint64_t)n,
                                           err);
        if (te < 0 || tg < 0) {
            rc = 1;
        } else {
            printf("bench: kern %-7s %lldx%lld np=%d%s: %7.1f us eager, %7.1f us graphed, "
                   "%6.0f GB/s = %4.1f%% of peak%s\n", st_dtype_info(type)->name, (long long)O,
                   (long long)I, n, cold ? " cold" : "", te * 1e6, tg * 1e6, nb / tg / 1e9,
                   100.0 * nb / tg / PEAK_BW, what);
        }
        st_backend_release(be, &x);
        st_backend_release(be, &y);
    }
    for (int i = 0; w && i < n_w; i++)
        st_backend_release(be, &w[i]);
    free(w);
    free(host);
    return rc;
}

/* Seconds per (wq, wk, wv) of one x, graphed: three matmuls, or one
 * matmul3 (on cuda with fusion on, one launch); weight set i % n_w. */
static double time_qkv(struct st_backend *be, const struct st_tensor *y,
                       const struct st_tensor *x, const struct st_tensor *w, int n_w, int calls,
                       bool three, uint64_t key, struct st_err *err)
{
    double t0 = 0.0;
    for (int rep = 0; rep < 4; rep++) {        /* reps 0-1: warm-up (and capture) */
        bool replayed = false;
        if (rep == 2)
            t0 = now_s();
        if (st_backend_graph_begin(be, key, &replayed, err) != ST_OK)
            return -1.0;
        for (int i = 0; i < calls && !replayed; i++) {
            const struct st_tensor *wi = &w[3 * (i % n_w)];
            enum st_status rc = ST_OK;
            for (int j = 0; j < 3 && three && rc == ST_OK; j++)
                rc = st_backend_matmul(be, &y[j], x, &wi[j], err);
            if (!three)
                rc = st_backend_matmul3(be, &y[0], &y[1], &y[2], x, &wi[0], &wi[1], &wi[2], err);
            if (rc != ST_OK)
                return -1.0;
        }
        if (!replayed && st_backend_graph_end(be, err) != ST_OK)
            return -1.0;
        if (st_backend_sync(be, err) != ST_OK)
            return -1.0;
    }
    return (now_s() - t0) / (2.0 * calls);
}

/* The a3b attention projections (wq 4096, wk and wv 512 rows of 2048,
 * Q4_K, read from HBM: the calls rotate over copies) at 1 and 4 rows: three
 * matmuls against one matmul3 (docs/CUDA.md "Launches per layer"). */
static int kern_qkv(struct st_backend *be, uint64_t key, struct st_err *err)
{
    const int64_t I = 2048, O[3] = { 4096, 512, 512 };
    size_t nb[3], set = 0;
    for (int j = 0; j < 3; j++)
        set += nb[j] = st_dtype_row_bytes(ST_DTYPE_Q4_K, I) * (size_t)O[j];
    const int n_w = (int)((160u << 20) / set + 1), calls = n_w > 20 ? n_w : 20;
    uint8_t *host = malloc(nb[0]);
    struct st_tensor *w = calloc((size_t)n_w * 3, sizeof(*w));
    int rc = host == NULL || w == NULL;
    if (rc)
        snprintf(err->msg, sizeof(err->msg), "out of memory");
    else
        kern_fill(host, nb[0]);
    for (int i = 0; i < 3 * n_w && rc == 0; i++)
        rc = st_backend_wrap(be, ST_DTYPE_Q4_K, (int64_t[4]){ I, O[i % 3], 1, 1 }, host,
                             nb[i % 3], &w[i], err) != ST_OK;
    for (int n = 1; n <= 4 && rc == 0; n *= 4) {
        struct st_tensor x = { 0 }, y[3] = { { 0 } };
        rc = st_backend_alloc(be, ST_DTYPE_F32, (int64_t[4]){ I, n, 1, 1 }, &x, err) != ST_OK;
        for (int j = 0; j < 3 && rc == 0; j++)
            rc = st_backend_alloc(be, ST_DTYPE_F32, (int64_t[4]){ O[j], n, 1, 1 }, &y[j],
                                  err) != ST_OK;
        double t3 = rc ? -1 : time_qkv(be, y, &x, w, n_w, calls, true, key + (uint64_t)n, err);
        double t1 = rc ? -1 : time_qkv(be, y, &x, w, n_w, calls, false, key + 2 + (uint64_t)n,
                                       err);
        if (t3 < 0 || t1 < 0)
            rc = 1;
        else
            printf("bench: kern Q4_K a3b wq+wk+wv np=%d cold: %7.1f us three matmuls, %7.1f us "
                   "matmul3 (%.2fx), %4.1f%% of peak\n", n, t3 * 1e6, t1 * 1e6, t3 / t1,
                   100.0 * (double)set / t1 / PEAK_BW);
        if (x.data)
            st_backend_release(be, &x);
        for (int j = 0; j < 3; j++)
            if (y[j].data)
                st_backend_release(be, &y[j]);
    }
    for (int i = 0; w && i < 3 * n_w; i++)
        if (w[i].data)
            st_backend_release(be, &w[i]);
    free(w);
    free(host);
    return rc;
}

static int cmd_kern(int argc, char **argv)
{
    const enum st_dtype types[] = { ST_DTYPE_Q4_K, ST_DTYPE_IQ3_S, ST_DTYPE_Q6_K, ST_DTYPE_Q8_0,
                                    ST_DTYPE_IQ4_XS, ST_DTYPE_F16, ST_DTYPE_Q2_K, ST_DTYPE_Q3_K,
                                    ST_DTYPE_Q4_1, ST_DTYPE_Q5_0, ST_DTYPE_Q5_1 };
    /* the a3b decode shapes [I -> O], weights read from HBM (cold) */
    static const struct {
        enum st_dtype type;
        int64_t I, O;
        const char *what;
    } a3b[] = {
        { ST_DTYPE_Q4_K, 2048, 4096, " (a3b wq)" },
        { ST_DTYPE_Q4_K, 2048, 512, " (a3b wk, wv)" },
        { ST_DTYPE_Q4_K, 4096, 2048, " (a3b wo)" },
        { ST_DTYPE_Q4_K, 2048, 6144, " (a3b 8 experts' gate, dense)" },
        { ST_DTYPE_Q4_K, 768, 2048, " (a3b one expert's down)" },
        { ST_DTYPE_F32, 2048, 128, " (a3b router)" },
    };
    const char *name = argc > 3 && strcmp(argv[2], "-b") == 0 ? argv[3] : "cuda";
    struct st_backend *be;
    struct st_err err;
    int rc = 0;

    if (st_backend_open(name, NULL, &be, &err) != ST_OK) {
        fprintf(stderr, "gpu_bench: %s\n", err.msg);
        return 3;
    }
    for (size_t t = 0; t < sizeof(a3b) / sizeof(a3b[0]) && rc == 0; t++)
        rc = kern_shape(be, a3b[t].type, a3b[t].I, a3b[t].O, true, a3b[t].what, 200 + t * 8,
                        &err);
    if (rc == 0)
        rc = kern_qkv(be, 300, &err);
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]) && rc == 0; t++)
        rc = kern_shape(be, types[t], 2048, 32768, false, "", 100 + t * 8, &err);
    if (rc)
        fprintf(stderr, "gpu_bench: kern: %s\n", err.msg);
    if (rc == 0)
        rc = bench_delta(be, name);
    st_backend_close(be);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "kern") == 0)
        return cmd_kern(argc, argv);
    if (argc >= 5 && strcmp(argv[1], "make") == 0)
        return cmd_make(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "run") == 0)
        return cmd_run(argc, argv);
    return usage();
}
