/* spec_cost.c -- what drafting costs, and the draft lengths that pay
 * (docs/ENGINE.md "Draft length: cost-aware").
 *
 * Drafting pays only when the tokens it adds are worth more than the time
 * it adds, and that depends on the machine, the model and the load: on
 * this project's 2-core VM the mtp-demo preset's weights sit in cache, so
 * a step's time grows almost linearly with its rows (bench_spec_cost:
 * 1 row 1.3 ms, each more row +0.8 ms at -t 1) and at four slots even
 * 93%-accepted MTP drafts lost 10%; on a GPU or a large model streamed from
 * DRAM, rows are nearly free. So the engine measures instead of assuming:
 *
 *   - the cost model (st_spec_cost) learns, per engine, the time of a
 *     decode step (the forward plus taking its tokens) as a function of
 *     the rows it carries, on two curves: LEAN (no MTP upkeep) and FULL
 *     (with it): an EWMA per row count, with a decayed linear fit
 *     t = a + b rows to fill row counts not measured yet; and the time of
 *     an MTP draft call as d0 per pass (chained steps) + d1 per slot-pass
 *     (a decayed least-squares fit). Timings come from the engine's clock
 *     (step.c, mtp.c); a zero timing (a manual test clock) teaches
 *     nothing, so a model that never saw time keeps the acceptance-only
 *     rule.
 *   - the plan (st_spec_plan) is a pure function of the slots' acceptance
 *     estimates, their limits and the cost model: it gives each slot k_i
 *     drafts maximizing expected tokens per second,
 *         sum_i (1 + a_i + .. + a_i^k_i)  /  (T(n + sum k_i) + D(k)),
 *     (T: the FULL curve on an engine with an MTP layer, whose drafting
 *     steps keep the upkeep) against k = 0 everywhere, n / T_LEAN(n): a
 *     step without drafts skips the upkeep. For a given total K of draft
 *     rows the best split takes the K largest increments a_i^j (each slot's
 *     increments fall with j, so this is a merge); the plan scans K
 *     upwards and keeps the best rate. Where the model cannot price a row
 *     count it says so (the caller then measures).
 *
 * Thread: the engine's thread (one cost model per engine).
 */
#include <math.h>
#include <string.h>

#include "engine/draft/draft.h"
#include "engine/draft/spec_cost.h"

#define STEP_EWMA 0.1      /* weight of a new step time once a row count has 10 */
#define STALE 8            /* ... unless it was last measured more than 8 steps ago: */
#define STALE_EWMA 0.5
#define FIT_DECAY 0.98     /* per sample: the fit remembers ~50 steps */
#define DRAFT_DECAY 0.95   /* per draft call */
#define SHRINK 2.0         /* a row count's estimate: its samples + 2 of the fitted line */
#define CLIP 3.0           /* a sample above 3x the estimate counts as 3x (preemption) */
#define RIDGE 1e-4         /* draft fit: keeps a one-slot history solvable */

/* Cold starts. The first steps and draft calls of a model touch its
 * weights for the first time (page faults of the mapping, cold caches):
 * on mtp-demo the first draft call took 0.67 ms, later ones ~0.1 ms. A
 * plan made from those alone judged drafts too dear, stopped drafting and
 * never saw a warm one (MTP at one slot fell from 1.15x to 0.98x). So the
 * first draft calls are not learned, and the plan waits for WARM_STEPS
 * samples of the curve its drafting steps run on (the acceptance rule
 * decides until then). */
#define DRAFT_SKIP 2
#define WARM_STEPS 6

void st_spec_cost_init(struct st_spec_cost *c, bool mtp)
{
    memset(c, 0, sizeof(*c));
    c->mtp = mtp;
}

/* The linear fit's slope (ns per row), or -1 when the samples do not give
 * one (fewer than two row counts). */
static double fit_slope(const struct st_spec_steps *c)
{
    double w = c->fit_w, var = w * c->fit_rr - c->fit_r * c->fit_r;
    if (w <= 0.0 || var <= 1e-9 * w * w)
        return -1.0;
    double b = (w * c->fit_rt - c->fit_r * c->fit_t) / var;
    return b > 0.0 ? b : 0.0;
}

void st_spec_cost_step(struct st_spec_cost *cost, enum st_spec_curve curve, int32_t rows,
                       int64_t ns)
{
    if (rows < 1 || ns <= 0 || curve < 0 || curve >= ST_SPEC_CURVES)
        return;   /* no time passed: a manual clock teaches nothing */
    struct st_spec_steps *c = &cost->curve[curve];
    double t = (double)ns, r = (double)rows;
    cost->timed = true;
    if (rows <= ST_SPEC_COST_ROWS) {
        int32_t n = c->n[rows];
        double est = c->ns[rows];
        if (n >= 3 && t > CLIP * est)
            t = CLIP * est;
        /* a running mean at first; then an EWMA, which weighs a sample more
         * when the row count was not measured for a while (a plan that
         * stopped drafting prices its drafts again from rare explorations) */
        bool stale = n > 0 && cost->steps - c->at[rows] > STALE;
        double w = stale ? fmax(STALE_EWMA, 1.0 / (n + 1)) : n < 10 ? 1.0 / (n + 1) : STEP_EWMA;
        c->ns[rows] = n == 0 ? t : est + w * (t - est);
        c->at[rows] = cost->steps;
        if (n < 1000)
            c->n[rows] = n + 1;
    }
    cost->steps++;
    c->total++;
    c->fit_w = FIT_DECAY * c->fit_w + 1.0;
    c->fit_r = FIT_DECAY * c->fit_r + r;
    c->fit_rr = FIT_DECAY * c->fit_rr + r * r;
    c->fit_t = FIT_DECAY * c->fit_t + t;
    c->fit_rt = FIT_DECAY * c->fit_rt + r * t;
}

void st_spec_cost_draft(struct st_spec_cost *c, int32_t passes, int32_t slot_passes, int64_t ns)
{
    if (passes < 1 || slot_passes < passes || ns <= 0 || ++c->draft_calls <= DRAFT_SKIP)
        return;
    double p = passes, s = slot_passes, t = (double)ns;
    double *d = c->draft;   /* sum p^2, p s, s^2, p t, s t */
    d[0] = DRAFT_DECAY * d[0] + p * p;
    d[1] = DRAFT_DECAY * d[1] + p * s;
    d[2] = DRAFT_DECAY * d[2] + s * s;
    d[3] = DRAFT_DECAY * d[3] + p * t;
    d[4] = DRAFT_DECAY * d[4] + s * t;
}

double st_spec_cost_draft_ns(const struct st_spec_cost *c, int32_t passes, int32_t slot_passes)
{
    const double *d = c->draft;
    if (passes <= 0 || d[0] <= 0.0)
        return 0.0;   /* nothing measured yet: drafting is priced by its rows alone */
    /* t = d0 p + d1 s, least squares; the ridge splits a history of one-slot
     * calls (p == s) evenly, which still prices those exactly */
    double l = RIDGE * (d[0] + d[2]);
    double a = d[0] + l, b = d[1], e = d[2] + l, det = a * e - b * b;
    double d0 = (e * d[3] - b * d[4]) / det, d1 = (a * d[4] - b * d[3]) / det;
    double t = d0 * passes + d1 * slot_passes;
    return t > 0.0 ? t : 0.0;
}

double st_spec_cost_catch_ns(const struct st_spec_cost *c, int32_t rows)
{
    if (rows <= 0 || !c->mtp)
        return 0.0;
    double full = st_spec_cost_step_ns(c, ST_SPEC_FULL, rows);
    double lean = st_spec_cost_step_ns(c, ST_SPEC_LEAN, rows);
    return full > 0.0 && lean > 0.0 && full > lean ? full - lean : 0.0;
}

/* Nearest measured row counts below and above r in the table (0: none). */
static void neighbours(const struct st_spec_steps *c, int32_t r, int32_t *lo, int32_t *hi)
{
    *lo = 0;
    *hi = 0;
    for (int32_t i = ST_MIN(r, ST_SPEC_COST_ROWS + 1) - 1; i >= 1; i--)
        if (c->n[i] > 0) {
            *lo = i;
            break;
        }
    for (int32_t i = r + 1; i <= ST_SPEC_COST_ROWS; i++)
        if (c->n[i] > 0) {
            *hi = i;
            break;
        }
}

/* Row count r's own estimate (measured), pulled towards the fitted line by
 * SHRINK samples' worth: on a loaded machine one step's time is off by up
 * to 2x, and a row count the plan rarely visits has few samples, while the
 * line pools all of them; a row count measured often keeps its own value
 * (where the curve is not a line: a GPU flat up to some rows). */
static double bucket(const struct st_spec_steps *c, int32_t r, double b)
{
    if (b < 0.0)
        return c->ns[r];
    double line = (c->fit_t - b * c->fit_r) / c->fit_w + b * r, n = c->n[r];
    return line > 0.0 ? (n * c->ns[r] + SHRINK * line) / (n + SHRINK) : c->ns[r];
}

double st_spec_cost_step_ns(const struct st_spec_cost *cost, enum st_spec_curve curve,
                            int32_t rows)
{
    if (rows < 1 || curve < 0 || curve >= ST_SPEC_CURVES)
        return -1.0;
    const struct st_spec_steps *c = &cost->curve[curve];
    double b = fit_slope(c);
    if (rows <= ST_SPEC_COST_ROWS && c->n[rows] > 0)
        return bucket(c, rows, b);
    int32_t lo, hi;
    neighbours(c, rows, &lo, &hi);
    double tl = lo ? bucket(c, lo, b) : 0.0, th = hi ? bucket(c, hi, b) : 0.0;
    if (lo && hi)   /* between two measured counts: on the line through them */
        return tl + (th - tl) * (double)(rows - lo) / (double)(hi - lo);
    if (b < 0.0)
        return -1.0;
    double t = lo ? tl + b * (rows - lo)
             : hi ? th - b * (hi - rows)
                  : (c->fit_t - b * c->fit_r) / c->fit_w + b * rows;
    /* below the smallest measured count: at least in proportion to the rows
     * (a step's fixed part only makes fewer rows dearer per row) */
    if (hi)
        t = fmax(t, th * rows / hi);
    return t > 0.0 ? t : -1.0;
}

/* The slot whose next draft adds the most expected tokens, a_i^(k_i + 1)
 * (each slot's increments fall with j, so taking the largest each time is
 * the best split of a given number of draft rows); -1 when none adds any. */
static int32_t best_slot(const struct st_spec_want *w, int32_t n, const int32_t *k, double *g)
{
    int32_t at = -1;
    *g = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double x = k[i] < w[i].max ? w[i].alpha : 0.0;
        for (int32_t j = 0; j < k[i] && x > *g; j++)
            x *= w[i].alpha;   /* a^(k+1); k <= ST_SPEC_MAX_DRAFT, cheaper than pow */
        if (x > *g) {
            *g = x;
            at = i;
        }
    }
    return at;
}

void st_spec_split(const struct st_spec_want *w, int32_t n, int32_t k_total, int32_t *k)
{
    double g;
    memset(k, 0, (size_t)n * sizeof(*k));
    for (int32_t K = 0; K < k_total; K++) {
        int32_t at = best_slot(w, n, k, &g);
        if (at < 0)
            return;
        k[at]++;
    }
}

/* The rate of the best split of K + 1 draft rows given that of K (k, the
 * passes and slot-passes of its MTP drafts, its expected tokens): k and
 * the running figures move on; 0 when no slot can take another draft,
 * -1 when the model cannot price the step. */
static double step_up(const struct st_spec_cost *c, const struct st_spec_want *w, int32_t n,
                      int32_t K, int32_t *k, int32_t *passes, int32_t *slot_passes,
                      double *tokens, double catch_ns)
{
    double g, t = st_spec_cost_step_ns(c, c->mtp ? ST_SPEC_FULL : ST_SPEC_LEAN, n + K + 1);
    int32_t at = best_slot(w, n, k, &g);
    if (at < 0)
        return 0.0;
    if (t <= 0.0)
        return -1.0;
    k[at]++;
    *tokens += g;
    if (w[at].mtp) {
        (*slot_passes)++;
        *passes = ST_MAX(*passes, k[at]);
    }
    return *tokens / (t + st_spec_cost_draft_ns(c, *passes, *slot_passes) + catch_ns);
}

enum st_spec_verdict st_spec_plan(const struct st_spec_cost *c, const struct st_spec_want *w,
                                  int32_t n, int32_t *k, struct st_spec_plan_out *out)
{
    *out = (struct st_spec_plan_out){ 0 };
    if (n <= 0)
        return ST_SPEC_PLAIN;
    memset(k, 0, (size_t)n * sizeof(*k));
    if (!c->timed || c->curve[c->mtp ? ST_SPEC_FULL : ST_SPEC_LEAN].total < WARM_STEPS)
        return ST_SPEC_UNPRICED;
    double t0 = st_spec_cost_step_ns(c, ST_SPEC_LEAN, n);
    if (t0 <= 0.0)
        return ST_SPEC_MEASURE;   /* a plain step prices the alternative */
    out->rate0 = n / t0;
    double tokens = n;
    int32_t passes = 0, slot_passes = 0, K = 0, gap = 0;
    for (int32_t i = 0; i < n; i++)
        gap += ST_MAX(w[i].gap, 0);
    /* a step with drafts runs the upkeep, which first catches up every
     * slot's skipped positions: a one-off cost of the switch to drafting */
    double catch_ns = st_spec_cost_catch_ns(c, gap) / ST_SPEC_CATCH_AMORT;
    enum st_spec_verdict v = ST_SPEC_PLAIN;
    for (; K < ST_SPEC_PLAN_SCAN; K++) {
        double rate = step_up(c, w, n, K, k, &passes, &slot_passes, &tokens, catch_ns);
        if (rate == 0.0)
            break;   /* every slot at its limit */
        if (rate < 0.0) {
            v = K == 0 ? ST_SPEC_EXPLORE : v;   /* one more row was never priced */
            break;
        }
        if (out->alt_k == 0 || rate > out->alt_rate) {
            out->alt_rate = rate;   /* the best plan with drafts, paying or not */
            out->alt_k = K + 1;
        }
    }
    if (out->alt_k > 0 && out->alt_rate > out->rate0) {
        out->k_total = out->alt_k;
        out->rate = out->alt_rate;
        v = ST_SPEC_DRAFT;
    }
    st_spec_split(w, n, out->k_total, k);
    return v;
}
