/* cpu_attention.c -- causal GQA attention over the per-slot KV cache (F16,
 * Q8_0, F32 or BF16, K and V each), tiled (flash) with the KV range split across
 * threads when there is too little other work (flash-decoding).
 *
 * Layout: cpu_attn_op.h. Tiles are turned into floats (cpu_attn_kern.h
 * attn_kv_io) before the dot products, whatever the type.
 *
 * The step's rows are cut into query blocks: runs of consecutive rows of
 * one slot, at most ATTN_QMAX / group rows, so a block holds up to
 * ATTN_QMAX queries (rows x the query heads of one KV head). A work item
 * is (block, KV head, split): it streams its share of the slot's KV range
 * tile by tile, each key and value row turned into floats once for all
 * the block's queries, and keeps online-softmax state (running max, sum,
 * weighted value sum) per query; a query masks the positions past its
 * row's own (causal). Nothing grows with n_ctx.
 *
 * Splits: when blocks x KV heads give the threads too few items (decode of
 * a few long slots), each block's KV range is cut into n_split pieces whose
 * partial states land in scratch; the last item of a (block, KV head) to
 * finish merges them by log-sum-exp, so no barrier is needed.
 *
 * Regions: up to ATTN_FEW_ROWS rows (decode) the caller writes the new k/v
 * rows and the items are claimed in a barrier-free region; more rows write
 * their k/v on all threads, meet at a barrier, then claim items. Items are
 * claimed heaviest first (late blocks of a chunk see the most keys).
 *
 * STRATA_CPU_ATTN=plain selects the previous per-row path
 * (cpu_attention_plain.c), kept as the baseline of tests/bench/longctx.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "cpu_attn_kern.h"
#include "cpu_attn_op.h"

/* Fewest KV positions a split takes, and the most splits. */
#define SPLIT_MIN 256
#define SPLIT_MAX 64
#define ALIGNF 16   /* floats: scratch pieces start on 64 bytes */

struct attn_block {
    int32_t r0, nr;   /* rows [r0, r0 + nr), all of one slot */
    int32_t kv;       /* positions 0..kv-1 are read (max pos + 1) */
};

struct attn_job {
    struct cpu_pool        *pool;
    const struct attn_kern *kern;
    const float            *q, *k, *v;
    float                  *out;
    const struct attn_kv_io *kio, *vio;
    char                   *kc, *vc;
    size_t                  krow, vrow;   /* bytes per (slot, position) row */
    size_t                  khead, vhead; /* bytes per KV head in a row */
    const int32_t          *slot, *pos;
    int64_t                 n, n_head, n_kv, d, n_ctx;
    float                   scale;
    struct attn_block      *blk;
    int64_t                 n_blk, n_split, n_items;
    float                  *ws;       /* per thread: ws_floats each */
    size_t                  ws_floats;
    float                  *part;     /* [n_blk * n_kv * n_split][part_floats] */
    size_t                  part_floats;
    atomic_int             *done;     /* [n_blk * n_kv] finished splits */
    atomic_llong            next;     /* next item to claim */
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static void kv_write(const struct attn_job *j, int64_t r)
{
    int64_t w = j->n_kv * j->d;
    size_t at = (size_t)j->slot[r] * (size_t)j->n_ctx + (size_t)j->pos[r];
    j->kio->store(j->k + r * w, j->kc + at * j->krow, w);
    j->vio->store(j->v + r * w, j->vc + at * j->vrow, w);
}

/* Per-thread workspace, in floats, carved in this order. */
struct attn_ws {
    float   *qs;    /* [ATTN_QMAX][d] scaled queries */
    float   *kf;    /* [ATTN_TILE][d] */
    float   *vf;    /* [ATTN_TILE][d] */
    float   *s;     /* [ATTN_QMAX][ATTN_TILE] scores, then weights */
    float   *m, *l, *c;   /* [ATTN_QMAX] running max, sum, this tile's rescale */
    float   *acc;   /* [ATTN_QMAX][d] */
    int32_t *qpos;  /* [ATTN_QMAX] the position of each query's row */
};

/* Offsets of the workspace pieces (in floats); returns the total. */
static size_t ws_layout(int64_t d, size_t at[9])
{
    size_t qd = round_up((size_t)ATTN_QMAX * (size_t)d, ALIGNF);
    size_t td = round_up((size_t)ATTN_TILE * (size_t)d, ALIGNF);
    size_t q = round_up(ATTN_QMAX, ALIGNF), st = (size_t)ATTN_QMAX * ATTN_TILE;
    size_t len[9] = { qd, td, td, st, q, q, q, qd, q };
    at[0] = 0;
    for (int i = 1; i < 9; i++)
        at[i] = at[i - 1] + len[i - 1];
    return at[8] + len[8];
}

static struct attn_ws ws_carve(int64_t d, float *base)
{
    size_t at[9];
    ws_layout(d, at);
    return (struct attn_ws){
        .qs = base + at[0], .kf = base + at[1], .vf = base + at[2], .s = base + at[3],
        .m = base + at[4], .l = base + at[5], .c = base + at[6], .acc = base + at[7],
        .qpos = (int32_t *)(base + at[8]),
    };
}

/* The query heads of KV head g of row r start here (q and out). */
static size_t q_at(const struct attn_job *j, int64_t r, int64_t g)
{
    int64_t gq = j->n_head / j->n_kv;
    return (size_t)(r * j->n_head * j->d + g * gq * j->d);
}

/* Fold KV positions [t0, t1) of block b, KV head g into ws's state. */
static void attn_range(const struct attn_job *j, const struct attn_block *b, int64_t g,
                       int64_t t0, int64_t t1, struct attn_ws *ws, int nq)
{
    const struct attn_kern *K = j->kern;
    int d = (int)j->d, nqp = (nq + 1) & ~1;
    size_t row0 = (size_t)j->slot[b->r0] * (size_t)j->n_ctx;
    const char *kb = j->kc + row0 * j->krow + (size_t)g * j->khead;
    const char *vb = j->vc + row0 * j->vrow + (size_t)g * j->vhead;

    for (int64_t tt = t0; tt < t1; tt += ATTN_TILE) {
        int nt = (int)(t1 - tt < ATTN_TILE ? t1 - tt : ATTN_TILE);
        j->kio->load(kb + (size_t)tt * j->krow, j->krow, nt, d, ws->kf);
        if (nt % 4)   /* qk reads whole groups of 4 keys: make the rest finite */
            memset(ws->kf + (size_t)nt * (size_t)d, 0,
                   (size_t)(4 - nt % 4) * (size_t)d * sizeof(float));
        K->qk(ws->qs, nqp, ws->kf, nt, d, ws->s);
        for (int qi = 0; qi < nqp; qi++) {
            float *s = ws->s + qi * ATTN_TILE;
            int64_t lim = qi < nq ? ws->qpos[qi] - tt + 1 : 0;   /* visible keys */
            if (lim > nt)
                lim = nt;
            if (lim <= 0) {
                memset(s, 0, ATTN_TILE * sizeof(float));
                ws->c[qi] = 1.0f;
                continue;
            }
            float mx = -INFINITY;
            for (int t = 0; t < lim; t++)
                mx = s[t] > mx ? s[t] : mx;
            for (int t = (int)lim; t < ATTN_TILE; t++)
                s[t] = -INFINITY;
            float mnew = mx > ws->m[qi] ? mx : ws->m[qi];
            /* 0 on the first visible tile; 1 (no exp) once the max settles */
            ws->c[qi] = mnew == ws->m[qi] ? 1.0f : expf(ws->m[qi] - mnew);
            ws->l[qi] = ws->l[qi] * ws->c[qi] + K->exp_sum(s, mnew);
            ws->m[qi] = mnew;
        }
        j->vio->load(vb + (size_t)tt * j->vrow, j->vrow, nt, d, ws->vf);
        K->pv(ws->s, nqp, ws->vf, nt, d, ws->c, ws->acc);
    }
}

/* Merge the n_split partial states of (block b, KV head g) into out. */
static void attn_merge(const struct attn_job *j, const struct attn_block *b, int64_t g,
                       const float *part0, int nq)
{
    int d = (int)j->d, gq = (int)(j->n_head / j->n_kv);
    for (int qi = 0; qi < nq; qi++) {
        float mx = -INFINITY, sum = 0.0f;
        float *o = j->out + q_at(j, b->r0 + qi / gq, g) + (size_t)(qi % gq) * (size_t)d;
        for (int64_t s = 0; s < j->n_split; s++)
            mx = fmaxf(mx, part0[(size_t)s * j->part_floats + (size_t)qi]);
        memset(o, 0, (size_t)d * sizeof(float));
        for (int64_t s = 0; s < j->n_split; s++) {
            const float *p = part0 + (size_t)s * j->part_floats;
            float l = p[ATTN_QMAX + qi];
            if (l == 0.0f)
                continue;
            float f = expf(p[qi] - mx);
            const float *a = p + 2 * ATTN_QMAX + (size_t)qi * (size_t)d;
            sum += l * f;
            for (int i = 0; i < d; i++)
                o[i] += f * a[i];
        }
        for (int i = 0; i < d; i++)
            o[i] /= sum;
    }
}

static void attn_item(struct attn_job *j, int64_t it, struct attn_ws *ws)
{
    int64_t s = it % j->n_split, bg = it / j->n_split, g = bg % j->n_kv;
    const struct attn_block *b = &j->blk[bg / j->n_kv];
    int d = (int)j->d, gq = (int)(j->n_head / j->n_kv), nq = b->nr * gq;

    /* this split's positions: pieces of whole tiles */
    int64_t piece = round_up((size_t)((b->kv + j->n_split - 1) / j->n_split), ATTN_TILE);
    int64_t t0 = s * piece, t1 = t0 + piece < b->kv ? t0 + piece : b->kv;

    for (int qi = 0; qi < nq; qi++) {
        const float *q = j->q + q_at(j, b->r0 + qi / gq, g) + (size_t)(qi % gq) * (size_t)d;
        for (int i = 0; i < d; i++)
            ws->qs[qi * d + i] = q[i] * j->scale;
        ws->qpos[qi] = j->pos[b->r0 + qi / gq];
        ws->m[qi] = -INFINITY;
        ws->l[qi] = 0.0f;
    }
    if (nq % 2)
        memset(ws->qs + (size_t)nq * (size_t)d, 0, (size_t)d * sizeof(float));
    memset(ws->acc, 0, (size_t)((nq + 1) & ~1) * (size_t)d * sizeof(float));
    attn_range(j, b, g, t0, t1, ws, nq);

    if (j->n_split == 1) {
        for (int qi = 0; qi < nq; qi++) {
            float *o = j->out + q_at(j, b->r0 + qi / gq, g) + (size_t)(qi % gq) * (size_t)d;
            float inv = 1.0f / ws->l[qi];
            for (int i = 0; i < d; i++)
                o[i] = ws->acc[qi * d + i] * inv;
        }
        return;
    }
    float *part0 = j->part + (size_t)bg * (size_t)j->n_split * j->part_floats;
    float *p = part0 + (size_t)s * j->part_floats;
    memcpy(p, ws->m, (size_t)nq * sizeof(float));
    memcpy(p + ATTN_QMAX, ws->l, (size_t)nq * sizeof(float));
    memcpy(p + 2 * ATTN_QMAX, ws->acc, (size_t)nq * (size_t)d * sizeof(float));
    /* seq_cst RMW: the last one sees every other split's stores */
    if (atomic_fetch_add(&j->done[bg], 1) == j->n_split - 1)
        attn_merge(j, b, g, part0, nq);
}

static void claim_items(struct attn_job *j, int ith)
{
    struct attn_ws ws = ws_carve(j->d, j->ws + (size_t)ith * j->ws_floats);
    for (;;) {
        int64_t i = cpu_claim(&j->next);
        if (i >= j->n_items)
            break;
        attn_item(j, j->n_items - 1 - i, &ws);   /* heaviest (last) blocks first */
    }
}

static void attn_task(void *ctx, int ith, int nth)
{
    struct attn_job *j = ctx;
    int64_t lo, hi;
    cpu_split(j->n, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        kv_write(j, r);
    cpu_pool_barrier(j->pool);
    claim_items(j, ith);
}

/* Few rows: the caller wrote the k/v rows; no barrier (cpu_pool_run_dyn). */
static void attn_dyn_task(void *ctx, int ith, int nth)
{
    (void)nth;
    claim_items(ctx, ith);
}

/* Cut the rows into blocks (into j->blk unless it is NULL); returns the
 * count and sets *max_kv to the longest block's KV range. */
static int64_t make_blocks(struct attn_job *j, int64_t *max_kv)
{
    int64_t rpb = ATTN_QMAX / (j->n_head / j->n_kv), nb = 0;
    *max_kv = 0;
    for (int64_t r = 0; r < j->n; nb++) {
        struct attn_block b = { .r0 = (int32_t)r, .nr = 0, .kv = 0 };
        do {
            b.kv = j->pos[r] + 1 > b.kv ? j->pos[r] + 1 : b.kv;
            b.nr++;
            r++;
        } while (r < j->n && b.nr < rpb && j->slot[r] == j->slot[b.r0]);
        *max_kv = b.kv > *max_kv ? b.kv : *max_kv;
        if (j->blk)
            j->blk[nb] = b;
    }
    return nb;
}

/* Splits per block: enough items for ~4 per thread, pieces >= SPLIT_MIN. */
static int64_t pick_split(const struct attn_job *j, int nth, int64_t max_kv)
{
    int64_t base = j->n_blk * j->n_kv, want = 4 * (int64_t)nth;
    if (nth < 2 || base >= want)
        return 1;
    int64_t n = (want + base - 1) / base, cap = (max_kv + SPLIT_MIN - 1) / SPLIT_MIN;
    n = n < cap ? n : cap;
    n = n < SPLIT_MAX ? n : SPLIT_MAX;
    return n > 1 ? n : 1;
}

static bool use_plain(void)
{
    static int plain = -1;   /* benign race: every thread computes the same */
    if (plain < 0) {
        const char *e = getenv("STRATA_CPU_ATTN");
        plain = e && strcmp(e, "plain") == 0;
    }
    return plain == 1;
}

enum st_status cpu_op_attention(struct st_backend *be, ST_T out, ST_T q, ST_T k, ST_T v,
                                ST_T kcache, ST_T vcache, ST_T slot, ST_T pos, int32_t n_head,
                                int32_t n_head_kv, float scale, struct st_err *err)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    struct attn_job j = {
        .pool = cb->pool, .q = q->data, .k = k->data, .v = v->data, .out = out->data,
        .kc = kcache->data, .vc = vcache->data, .slot = slot->data, .pos = pos->data,
        .n = q->ne[1], .n_head = n_head, .n_kv = n_head_kv, .d = q->ne[0] / n_head,
        .n_ctx = kcache->ne[1], .scale = scale,
    };
    int nth = cb->n_threads;

    if (use_plain())
        return cpu_attention_plain(be, out, q, k, v, kcache, vcache, slot, pos, n_head,
                                   n_head_kv, scale, err);
    enum st_status rc = cpu_attn_check(q, kcache, slot, pos, n_head, n_head_kv, err);
    if (rc != ST_OK)
        return rc;
    j.kern = cpu_attn_kern((int)j.d);
    j.kio = cpu_attn_kv_io(kcache->type, (int)j.d);
    j.vio = cpu_attn_kv_io(vcache->type, (int)j.d);
    if (!j.kio || !j.vio)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "attention: KV cache types %d/%d at head_dim "
                          "%lld (f16, f32, bf16, or q8_0 at a multiple of 32)", (int)kcache->type,
                          (int)vcache->type, (long long)j.d);
    j.krow = st_tensor_row_bytes(kcache);
    j.vrow = st_tensor_row_bytes(vcache);
    j.khead = st_dtype_row_bytes(kcache->type, j.d);
    j.vhead = st_dtype_row_bytes(vcache->type, j.d);
    if (j.n <= ATTN_FEW_ROWS && cpu_attn_work(j.pos, j.n, j.n_head, j.d) < ATTN_PAR_MIN_WORK)
        nth = 1;

    /* scratch: blocks, workspaces, partial states, merge counters */
    int64_t max_kv;
    j.n_blk = make_blocks(&j, &max_kv);
    j.n_split = pick_split(&j, nth, max_kv);
    j.n_items = j.n_blk * j.n_kv * j.n_split;
    size_t at[9];
    j.ws_floats = ws_layout(j.d, at);
    j.part_floats = round_up((size_t)ATTN_QMAX * (size_t)(j.d + 2), ALIGNF);
    size_t n_bg = (size_t)(j.n_blk * j.n_kv);
    size_t blk_bytes = round_up((size_t)j.n_blk * sizeof(struct attn_block), 64);
    size_t ws_bytes = (size_t)nth * j.ws_floats * sizeof(float);
    size_t part_bytes = j.n_split > 1 ? (size_t)j.n_items * j.part_floats * sizeof(float) : 0;
    size_t done_bytes = j.n_split > 1 ? round_up(n_bg * sizeof(atomic_int), 64) : 0;
    char *sc = cpu_scratch(cb, blk_bytes + ws_bytes + part_bytes + done_bytes);
    if (!sc)
        return st_err_set(err, ST_ERR_NOMEM, "attention: no scratch for %lld rows",
                          (long long)j.n);
    j.blk = (struct attn_block *)sc;
    make_blocks(&j, &max_kv);
    j.ws = (float *)(sc + blk_bytes);
    j.part = (float *)(sc + blk_bytes + ws_bytes);
    j.done = (atomic_int *)(sc + blk_bytes + ws_bytes + part_bytes);
    for (size_t i = 0; j.n_split > 1 && i < n_bg; i++)
        atomic_init(&j.done[i], 0);
    atomic_init(&j.next, 0);

    if (j.n_items < 2)
        nth = 1;
    if (j.n <= ATTN_FEW_ROWS || nth == 1) {
        for (int64_t r = 0; r < j.n; r++)
            kv_write(&j, r);
        cpu_pool_run_dyn(cb->pool, attn_dyn_task, &j, nth);
    } else {
        cpu_pool_run(cb->pool, attn_task, &j, nth);
    }
    return ST_OK;
}
