/* state_keep.h -- the DeltaNet inputs a forward keeps so that a slot's
 * accepted verify rows can be read into its restored recurrent state
 * again by the recurrent ops alone (st_model_state_keep /
 * st_model_state_reread: state_reread.c; forward.c fills rows/slot/pos,
 * forward_hybrid.c writes the projections there). Private to src/model.
 */
#ifndef STRATA_MODEL_STATE_KEEP_H
#define STRATA_MODEL_STATE_KEEP_H

#include "strata/backend.h"

struct st_model;
struct st_fwd_layer;

struct st_state_keep {
    struct st_tensor mix;     /* f32 [C3, cap, Lr]: row i of the last forward, per layer */
    struct st_tensor alpha;   /* f32 [Hv, cap, Lr] */
    struct st_tensor beta;    /* f32 [Hv, cap, Lr] */
    int64_t          cap;     /* 0: nothing is kept */
    int64_t          rows;    /* rows the last forward kept: all of it, one chunk <= cap; 0 */
    int32_t         *slot;    /* owned [cap]: their slots */
    int64_t         *pos;     /* owned [cap]: their positions */
};

/* Frees what st_model_state_keep took (unload). */
void st_model_state_keep_release(struct st_model *m);

/* forward_hybrid.c: a DeltaNet layer's recurrent ops over rows already
 * projected (mix [C3, n], alpha and beta [Hv, n]): the conv into conv and
 * the delta rule into y, advancing the slots' state (the forward, and the
 * re-read of kept rows). */
ST_MUST_CHECK
enum st_status st_fwd_delta_rule(struct st_model *m, const struct st_fwd_layer *w,
                                 const struct st_tensor *mix, const struct st_tensor *alpha,
                                 const struct st_tensor *beta, const struct st_tensor *slot,
                                 const struct st_tensor *pos, const struct st_tensor *conv,
                                 const struct st_tensor *y, struct st_err *err);

#endif /* STRATA_MODEL_STATE_KEEP_H */
