/* mtp_catch.c -- the MTP layer catches up over positions whose upkeep was
 * skipped (include/strata/mtp.h "Catch-up", docs/ENGINE.md "MTP catch-up").
 *
 * A forward without the upkeep (the engine found drafts would not pay,
 * runner.h no_mtp_upkeep) leaves the MTP KV cache without those positions.
 * The upkeep row of position q needs the token t_q and the main model's
 * final state h_{q-1} (after output_norm); the plain forward computes
 * h_q for every logit row anyway (st_fwd_head_ops normalizes hout in
 * place), so st_mtp_skipped copies it, with the token, into the slot's
 * stash: up to K = ST_MTP_KEEP consecutive positions per slot, the latest
 * (device -> device copies of E floats, one per row; no compute).
 *
 * When the slot's next pass (a draft, or a forward with the upkeep) comes
 * at position P = the stash's end, st_mtp_catch_up writes the MTP cache
 * rows of the stashed positions exactly as the upkeep would have: row q
 * gets (t_q, h_{q-1}), h_{q-1} from the stash, or for the first stashed
 * position from the carried state the last upkeep left (the state of the
 * position before the skipped stretch). Every slot's rows go through ONE
 * kv-only pass of the block (st_mtp_rows_ops, kv_only: the k/v of each row
 * depend on its own input only, so the order of rows does not matter and
 * they need not be in position order), in chunks of R rows; then each slot
 * carries the stashed state of P - 1 and drafts from it at once.
 *
 * A stretch longer than K: the positions before the kept ones stay as they
 * were (zeros or an older request's rows), and the first kept position
 * too unless its predecessor's state is carried (it is not then): the
 * drafts attend to those few stale rows among many fresh ones. The output
 * never depends on them (the verify is exact).
 *
 * Thread: the model's thread, like every st_mtp_* call.
 */
#include <string.h>

#include "mtp_internal.h"
#include "strata/log.h"

/* The hbuf row that keeps position p of slot s (inside the window). */
static int64_t stash_row(const struct st_mtp *t, int32_t s, int64_t p)
{
    return t->S + 1 + t->R + (int64_t)s * t->K + p % t->K;
}

static void stash_clear(struct st_mtp *t, int32_t s)
{
    t->stash_lo[s] = -1;
    t->stash_hi[s] = -1;
}

void st_mtp_stash_cut(struct st_mtp *t, int32_t s, int64_t p)
{
    if (s < 0 || s >= t->S || t->stash_hi[s] <= p)
        return;
    if (p <= t->stash_lo[s])
        stash_clear(t, s);
    else
        t->stash_hi[s] = p;
}

/* Keep the state of hout row j (the normed final state of a logit row)
 * and token tok as position p of slot s. The window stays one run of
 * consecutive positions: a position that does not extend it starts a new
 * one. A failed copy keeps nothing (the catch-up then has less to do). */
static void stash_put(struct st_mtp *t, int32_t s, int64_t p, int32_t tok, int64_t j)
{
    int64_t lo = t->stash_lo[s], hi = t->stash_hi[s];
    if (lo < 0 || p < lo || p > hi)
        lo = p;
    size_t row = st_tensor_row_bytes(&t->hbuf);
    struct st_err err = { 0 };
    if (st_backend_copy(t->m->be, &t->hbuf, (size_t)stash_row(t, s, p) * row, &t->m->act.hout,
                        (size_t)j * row, row, &err) != ST_OK) {
        st_log(ST_LOG_DEBUG, "model", "MTP: slot %d keeps no state of position %lld: %s",
               (int)s, (long long)p, err.msg);
        stash_clear(t, s);
        return;
    }
    t->stash_tok[s * t->K + p % t->K] = tok;
    t->stash_lo[s] = ST_MAX(lo, p + 1 - t->K);
    t->stash_hi[s] = p + 1;
}

void st_mtp_skipped(struct st_mtp *t, const struct st_model_batch *b)
{
    bool have = t->m->last_n_out >= b->n_out;   /* hout holds the normed logit rows */
    int64_t j = 0;
    for (int64_t r = 0; r < b->n_rows; r++) {
        int32_t s = b->slots[r];
        int64_t p = b->pos[r];
        while (j < b->n_out && b->out_rows[j] < r)
            j++;
        if (s < 0 || s >= t->S)
            continue;
        if (t->carry_pos[s] >= p)
            t->carry_pos[s] = -1;
        for (int64_t i = 0; i < t->chunk_n; i++)   /* -1 matches no lookup */
            if (t->chunk_slot[i] == s && t->chunk_pos[i] >= p)
                t->chunk_pos[i] = -1;
        if (have && j < b->n_out && b->out_rows[j] == r)
            stash_put(t, s, p, b->tokens[r], j);
        else
            st_mtp_stash_cut(t, s, p);   /* no state of p: the run ends before it */
    }
}

/* The first position of slot s to catch up before a pass at position P,
 * or -1 when there is nothing to do (no stash ending at P, or the slot
 * already carries the state of P - 1). The result may be P: nothing to
 * write, but the stashed state of P - 1 is carried. */
static int64_t catch_from(const struct st_mtp *t, int32_t s, int64_t P)
{
    int64_t lo = t->stash_lo[s], hi = t->stash_hi[s];
    if (P <= 0 || lo < 0 || hi != P || t->carry_pos[s] == P - 1)
        return -1;
    /* row lo needs h_{lo-1}: the carry (the last upkeep's) or zeros at 0 */
    return lo == 0 || t->carry_pos[s] == lo - 1 ? lo : lo + 1;
}

/* The catch-up rows of [q0, P) of slot s at rows [n, ..) of the pass. */
static void put_rows(struct st_mtp *t, int32_t s, int64_t q0, int64_t P, int64_t n)
{
    for (int64_t q = q0; q < P; q++, n++) {
        t->ctok[n] = t->stash_tok[s * t->K + q % t->K];
        t->cslot[n] = s;
        t->cpos[n] = q;
        t->hrow_host[n] = q == 0                  ? (int32_t)t->S
                          : q == t->stash_lo[s] ? s   /* the carried h_{lo-1} */
                                                : (int32_t)stash_row(t, s, q - 1);
    }
}

static enum st_status pass(struct st_mtp *t, int64_t n, struct st_err *err)
{
    if (n == 0)
        return ST_OK;
    TRY(st_mtp_rows_write(t, n, t->ctok, t->cslot, t->cpos, t->hrow_host, err));
    TRY(st_mtp_rows_ops(t, n, &t->hbuf, true, err));
    t->caught += (uint64_t)n;
    return ST_OK;
}

/* Slot s carries the stashed state of P - 1 (after every pass that reads
 * its old carry); its stash is spent. */
static enum st_status take_state(struct st_mtp *t, int32_t s, int64_t P, struct st_err *err)
{
    size_t row = st_tensor_row_bytes(&t->hbuf);
    enum st_status rc = st_backend_copy(t->m->be, &t->hbuf, (size_t)s * row, &t->hbuf,
                                        (size_t)stash_row(t, s, P - 1) * row, row, err);
    t->carry_pos[s] = rc == ST_OK ? P - 1 : -1;
    stash_clear(t, s);
    return rc;
}

enum st_status st_mtp_catch_up(struct st_mtp *t, const int32_t *slots, const int64_t *next,
                               int32_t n, struct st_err *err)
{
    enum st_status rc = ST_OK;
    int64_t rows = 0;
    bool any = false;
    for (int32_t i = 0; i < n && rc == ST_OK; i++) {
        int32_t s = slots[i];
        int64_t q = catch_from(t, s, next[i]);
        if (q < 0)
            continue;
        any = true;
        while (q < next[i] && rc == ST_OK) {   /* a full chunk runs before more rows go in */
            int64_t take = ST_MIN(next[i] - q, t->R - rows);
            put_rows(t, s, q, q + take, rows);
            rows += take;
            q += take;
            if (rows == t->R) {
                rc = pass(t, rows, err);
                rows = 0;
            }
        }
    }
    if (rc == ST_OK)
        rc = pass(t, rows, err);
    for (int32_t i = 0; any && i < n; i++) {
        int32_t s = slots[i];
        if (catch_from(t, s, next[i]) < 0)
            continue;
        if (rc == ST_OK)
            rc = take_state(t, s, next[i], err);
        else
            stash_clear(t, s);   /* a failed pass: no state rather than a wrong one */
    }
    return rc;
}

uint64_t st_mtp_caught(const struct st_mtp *t)
{
    return t ? t->caught : 0;
}
