/* activity_json.c -- one activity record as GET /api/activity shows it
 * (docs/API.md "/api/activity"): written by h_info.c for the scheduler's
 * ring and by state.c for the records --state-dir keeps, so both read the
 * same.
 */
#include "server/daemon.h"

/* "key":v, or "key":null while v is unknown (< 0). */
static void opt_ms(struct st_out *o, const char *key, double v)
{
    if (v < 0)
        st_out_kv_raw(o, key, "null");
    else
        st_out_kv_num(o, key, v);
}

void st_activity_json(struct st_out *o, struct st_server *srv, const struct st_activity *a)
{
    st_out_text(o, "{");
    st_out_kv_u64(o, "id", a->id);
    st_out_kv_str(o, "request_id", a->request_id);
    st_out_kv_str(o, "model", st_engine_pool_model_name(srv->pool, a->model));
    st_out_kv_i64(o, "engine", a->engine);
    st_out_kv_i64(o, "slot", a->slot);
    st_out_kv_i64(o, "serial_priority", a->priority);
    st_out_kv_str(o, "serial_band", st_band_name(a->band));
    st_out_kv_num(o, "serial_score", a->score);
    st_out_kv_num(o, "serial_queue_wait_ms", a->queue_wait_ms);
    st_out_kv_i64(o, "prompt_tokens", a->prompt_tokens);
    st_out_kv_i64(o, "completion_tokens", a->n_generated);
    st_out_kv_i64(o, "give_ways", a->give_ways);
    st_out_kv_bool(o, "swapped", a->swapped);
    /* the model the engine had before this dispatch; null: no swap, or none */
    st_out_kv_str(o, "swap_from", a->swapped && a->swap_from >= 0
                                      ? st_engine_pool_model_name(srv->pool, a->swap_from)
                                      : NULL);
    st_out_kv_num(o, "load_ms", a->load_ms);
    st_out_kv_bool(o, "finished", a->finished);
    st_out_kv_str(o, "outcome", a->finished ? st_outcome_name(a->outcome) : NULL);
    opt_ms(o, "ttft_ms", a->ttft_ms);
    opt_ms(o, "total_ms", a->total_ms);
    st_out_kv_i64(o, "mtp_drafted", a->mtp_drafted);
    st_out_kv_i64(o, "mtp_accepted", a->mtp_accepted);
    st_out_kv_i64(o, "dispatched_unix_ms", a->dispatched_unix_ms);
    st_out_text(o, "}");
}
