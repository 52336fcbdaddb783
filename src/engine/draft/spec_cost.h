/* spec_cost.h -- the engine's cost model of steps and MTP draft calls,
 * and the plan of draft lengths that pay (spec_cost.c; its state per
 * engine, driven by mtp.c). Module-private to src/engine.
 */
#ifndef STRATA_ENGINE_SPEC_COST_H
#define STRATA_ENGINE_SPEC_COST_H

#include <stdbool.h>
#include <stdint.h>

/* What this engine's steps and MTP draft calls cost (docs/ENGINE.md "Draft
 * length: cost-aware"), learned from its clock. A step's time by the rows
 * it carries is kept on two curves: LEAN, a forward without the MTP upkeep
 * (no MTP layer, or the engine told the runner to skip it), and FULL, with
 * it (every step of an MTP engine that drafts). Zero-initialised = nothing
 * known (st_spec_cost_init). */
#define ST_SPEC_COST_ROWS 256   /* step times kept per row count up to this */
enum st_spec_curve { ST_SPEC_LEAN, ST_SPEC_FULL, ST_SPEC_CURVES };
struct st_spec_steps {
    double  ns[ST_SPEC_COST_ROWS + 1];   /* by rows: step time, ns (EWMA) */
    int32_t n[ST_SPEC_COST_ROWS + 1];    /* samples behind it (0: never measured) */
    int64_t at[ST_SPEC_COST_ROWS + 1];   /* the cost model's step count at the last one */
    double  fit_w, fit_r, fit_rr, fit_t, fit_rt;   /* decayed sums: t = a + b rows */
    int64_t total;                       /* samples, all row counts */
};
struct st_spec_cost {
    struct st_spec_steps curve[ST_SPEC_CURVES];
    double  draft[5];            /* decayed sums for t = d0 passes + d1 slot-passes */
    int32_t draft_calls;         /* MTP draft calls seen (the first few are not learned) */
    int64_t steps;               /* steps learned, both curves */
    bool    timed;               /* some step took time (a manual clock never does) */
    bool    mtp;                 /* steps with drafts run the MTP upkeep (FULL) */
};

/* 'mtp': the engine's runner has an MTP layer (its drafting steps are FULL). */
void st_spec_cost_init(struct st_spec_cost *c, bool mtp);
/* A decode step (no prompt chunk) on 'curve' of 'rows' rows took ns (the
 * forward and taking its tokens). ns <= 0 is ignored. */
void st_spec_cost_step(struct st_spec_cost *c, enum st_spec_curve curve, int32_t rows,
                       int64_t ns);
/* An MTP draft call of 'passes' chained steps over 'slot_passes' slot-steps
 * in all (sum of the slots' k) took ns. */
void st_spec_cost_draft(struct st_spec_cost *c, int32_t passes, int32_t slot_passes, int64_t ns);
/* Estimated step time on 'curve' at 'rows' (measured, else interpolated
 * between measured row counts, else extrapolated with the curve's fitted
 * slope); -1 when unknown. */
double st_spec_cost_step_ns(const struct st_spec_cost *c, enum st_spec_curve curve,
                            int32_t rows);
/* Estimated draft call time (0 before any was measured). */
double st_spec_cost_draft_ns(const struct st_spec_cost *c, int32_t passes, int32_t slot_passes);
/* Estimated time of the MTP layer's catch-up over 'rows' skipped positions
 * (one kv-only pass: what the upkeep of that many rows costs, FULL minus
 * LEAN at 'rows'); 0 when rows <= 0 or the curves cannot price it. */
double st_spec_cost_catch_ns(const struct st_spec_cost *c, int32_t rows);

/* One decoding slot, as the plan sees it. */
struct st_spec_want {
    double  alpha;    /* P(draft j accepted | draft j-1 was), 0..1 */
    int32_t max;      /* drafts it may carry this step (0: none) */
    bool    mtp;      /* drafts from the MTP layer (cost draft passes); else free */
    bool    probe;    /* (the caller's) alpha is the prior shown for a due probe */
    int32_t gap;      /* (MTP) positions the slot decoded without the upkeep since its
                       * last step with it: what a step with drafts catches up first */
};
enum st_spec_verdict {
    ST_SPEC_PLAIN,      /* no drafts: they do not pay (k all 0) */
    ST_SPEC_DRAFT,      /* k pays more tokens per second than no drafts */
    ST_SPEC_UNPRICED,   /* the model never saw time: use the acceptance rule */
    ST_SPEC_MEASURE,    /* a plain step's time is unknown: run one (k all 0) */
    ST_SPEC_EXPLORE,    /* no step with drafts can be priced yet: draft to measure */
};
struct st_spec_plan_out {
    int32_t k_total;    /* draft rows of the plan (sum of k) */
    double  rate, rate0;   /* expected tokens per ns: the plan's, no drafts' */
    int32_t alt_k;      /* the best total with drafts, paying or not (0: none priced) */
    double  alt_rate;
};
/* At most this many draft rows are weighed per step (the scan is O(n) per row). */
#define ST_SPEC_PLAN_SCAN 256
/* The steps a switch to drafting lasts at least: the catch-up it owes is
 * priced at 1 / ST_SPEC_CATCH_AMORT per step (st_spec_plan). */
#define ST_SPEC_CATCH_AMORT 8
/* The draft lengths k[0..n) (caller's array) of the n decoding slots w that
 * maximize expected tokens per second: sum_i (1 + a_i + .. + a_i^k_i) over
 * T(n + sum k) + D(MTP passes) + C(sum gap) / ST_SPEC_CATCH_AMORT (T: the
 * FULL curve for an MTP engine; C: the catch-up, which a step with the
 * upkeep owes for every slot's gap, spread over the steps a switch to
 * drafting lasts at least), against n / T_LEAN(n). Pure: reads c and w.
 * k is all 0 unless the verdict is ST_SPEC_DRAFT. */
enum st_spec_verdict st_spec_plan(const struct st_spec_cost *c, const struct st_spec_want *w,
                                  int32_t n, int32_t *k, struct st_spec_plan_out *out);
/* The best split of k_total draft rows over w (largest a_i^j first) into k. */
void st_spec_split(const struct st_spec_want *w, int32_t n, int32_t k_total, int32_t *k);

/* An engine's draft-length state (mtp.c): its cost model, the plan's
 * scratch, and when to look again at a choice the plan keeps making. */
struct st_spec_engine {
    struct st_spec_cost cost;
    struct st_spec_want *want;   /* owned; n_slots: this step's decoding slots */
    int32_t *k;                  /* owned; n_slots: the plan's draft lengths */
    int32_t *slot;               /* owned; n_slots: the slot of want[i] */
    int32_t  plain_run;          /* priced plans in a row that drafted nothing */
    int32_t  explore_every;      /* ... after which one step drafts anyway (doubling) */
    int32_t  draft_run;          /* priced plans in a row that drafted */
    bool     explored;           /* this step is such an exploration */
    bool     near;               /* ... of a plan close to paying (no doubling) */
    uint32_t explores;           /* exploring steps so far (which neighbour next) */
    int32_t  explore_steps;      /* steps of the current exploration that drafted */
    bool     paid;               /* the last priced plan drafted (a debug line on change) */
    bool     lean;               /* this step drafts nothing by choice: an MTP runner may
                                  * skip its upkeep (runner.h no_mtp_upkeep) */
    uint64_t plain_steps;        /* steps where drafting was possible but did not pay */
};

#endif /* STRATA_ENGINE_SPEC_COST_H */
