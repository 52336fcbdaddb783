/* infill_json.c -- POST /infill answers in llama-server's /completion shape
 * (docs/API.md "/infill" lists every field, and those left out):
 *
 *   stream object   {"index":0,"content":"<text>","tokens":[],"stop":false,
 *                    "id_slot":-1,"tokens_predicted":k,"tokens_evaluated":n}
 *   last object /   {"index":0,"content":"<all text, or \"\" when streamed>",
 *   whole body       "tokens":[],"id_slot":-1,"stop":true,"model":"...",
 *                    "tokens_predicted":k,"tokens_evaluated":n,"tokens_cached":c,
 *                    "has_new_line":b,"truncated":b,"stop_type":"eos"|"limit",
 *                    "stopping_word":"","timings":{...}}
 *
 * Streams are "data: {...}" events with no [DONE], as llama-server's
 * non-OpenAI endpoints. Rendered under the call's lock (gen.c).
 */
#include <string.h>

#include "server/gen/gen.h"

static int64_t now_ns(void)
{
    return st_clock_now(st_clock_real());
}

enum st_status st_infill_chunk(struct st_buf *out, const struct st_gen *g,
                               const struct st_gen_choice *ch, const char *text, size_t len)
{
    (void)g;
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "index", 0);
    st_out_key(&o, "content");
    st_out_json_str(&o, text, len);
    st_out_kv_raw(&o, "tokens", "[]");
    st_out_kv_bool(&o, "stop", false);
    st_out_kv_i64(&o, "id_slot", -1);
    st_out_kv_i64(&o, "tokens_predicted", ch->n_generated);
    st_out_kv_i64(&o, "tokens_evaluated", ch->n_prompt);
    st_out_text(&o, "}");
    return st_out_finish(&o);
}

/* llama-server's timings: prompt = from the request's arrival to its first
 * token (strata's includes the time queued), predicted = the rest. */
static void timings(struct st_out *o, const struct st_gen_choice *ch)
{
    int64_t end = now_ns();
    int64_t first = ch->first_token_ns ? ch->first_token_ns : end;
    double p_ms = (double)(first - ch->call->start_ns) / 1e6;
    double d_ms = (double)(end - first) / 1e6;
    double pn = (double)ch->n_prompt, dn = (double)ch->n_generated;
    st_out_printf(o, ",\"timings\":{\"prompt_n\":%lld,\"prompt_ms\":%.3f,"
                     "\"prompt_per_token_ms\":%.3f,\"prompt_per_second\":%.3f,"
                     "\"predicted_n\":%lld,\"predicted_ms\":%.3f,"
                     "\"predicted_per_token_ms\":%.3f,\"predicted_per_second\":%.3f}",
                  (long long)ch->n_prompt, p_ms, pn > 0 ? p_ms / pn : 0.0,
                  p_ms > 0 ? pn * 1e3 / p_ms : 0.0, (long long)ch->n_generated, d_ms,
                  dn > 0 ? d_ms / dn : 0.0, d_ms > 0 ? dn * 1e3 / d_ms : 0.0);
}

enum st_status st_infill_final(struct st_buf *out, const struct st_gen *g,
                               const struct st_gen_choice *ch, bool stream)
{
    const char *text = !stream && ch->text.data ? ch->text.data : "";
    size_t len = !stream ? ch->text.len : 0;
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "index", 0);
    st_out_key(&o, "content");
    st_out_json_str(&o, text, len);
    st_out_kv_raw(&o, "tokens", "[]");
    st_out_kv_i64(&o, "id_slot", -1);
    st_out_kv_bool(&o, "stop", true);
    st_out_kv_str(&o, "model", g->model_name);
    st_out_kv_i64(&o, "tokens_predicted", ch->n_generated);
    st_out_kv_i64(&o, "tokens_evaluated", ch->n_prompt);
    st_out_kv_i64(&o, "tokens_cached", ch->n_cached);
    st_out_kv_bool(&o, "has_new_line", memchr(text, '\n', len) != NULL);
    st_out_kv_bool(&o, "truncated", g->infill_truncated);
    st_out_kv_str(&o, "stop_type", ch->finish == ST_FINISH_LENGTH ? "limit" : "eos");
    st_out_kv_str(&o, "stopping_word", "");
    timings(&o, ch);
    st_out_text(&o, "}");
    return st_out_finish(&o);
}
