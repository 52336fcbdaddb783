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

enum st_status st_infill_chunk(struct st_buf *o, const struct st_gen *g,
                               const struct st_gen_choice *ch, const char *text, size_t len)
{
    (void)g;
    enum st_status rc = st_buf_append(o, ST_LIT("{\"index\":0,\"content\":"));
    if (rc == ST_OK)
        rc = st_json_str(o, text, len);
    if (rc == ST_OK)
        rc = st_buf_printf(o, ",\"tokens\":[],\"stop\":false,\"id_slot\":-1,"
                           "\"tokens_predicted\":%lld,\"tokens_evaluated\":%lld}",
                           (long long)ch->n_generated, (long long)ch->n_prompt);
    return rc;
}

/* llama-server's timings: prompt = from the request's arrival to its first
 * token (strata's includes the time queued), predicted = the rest. */
static enum st_status timings(struct st_buf *o, const struct st_gen_choice *ch)
{
    int64_t end = now_ns();
    int64_t first = ch->first_token_ns ? ch->first_token_ns : end;
    double p_ms = (double)(first - ch->call->start_ns) / 1e6;
    double d_ms = (double)(end - first) / 1e6;
    double pn = (double)ch->n_prompt, dn = (double)ch->n_generated;
    return st_buf_printf(o, ",\"timings\":{\"prompt_n\":%lld,\"prompt_ms\":%.3f,"
                         "\"prompt_per_token_ms\":%.3f,\"prompt_per_second\":%.3f,"
                         "\"predicted_n\":%lld,\"predicted_ms\":%.3f,"
                         "\"predicted_per_token_ms\":%.3f,\"predicted_per_second\":%.3f}",
                         (long long)ch->n_prompt, p_ms, pn > 0 ? p_ms / pn : 0.0,
                         p_ms > 0 ? pn * 1e3 / p_ms : 0.0, (long long)ch->n_generated, d_ms,
                         dn > 0 ? d_ms / dn : 0.0, d_ms > 0 ? dn * 1e3 / d_ms : 0.0);
}

enum st_status st_infill_final(struct st_buf *o, const struct st_gen *g,
                               const struct st_gen_choice *ch, bool stream)
{
    const char *text = !stream && ch->text.data ? ch->text.data : "";
    size_t len = !stream ? ch->text.len : 0;
    enum st_status rc = st_buf_append(o, ST_LIT("{\"index\":0,\"content\":"));
    if (rc == ST_OK)
        rc = st_json_str(o, text, len);
    if (rc == ST_OK)
        rc = st_buf_append(o, ST_LIT(",\"tokens\":[],\"id_slot\":-1,\"stop\":true,\"model\":"));
    if (rc == ST_OK)
        rc = st_json_cstr(o, g->model_name);
    if (rc == ST_OK)
        rc = st_buf_printf(o, ",\"tokens_predicted\":%lld,\"tokens_evaluated\":%lld,"
                           "\"tokens_cached\":%lld,\"has_new_line\":%s,\"truncated\":%s,"
                           "\"stop_type\":\"%s\",\"stopping_word\":\"\"",
                           (long long)ch->n_generated, (long long)ch->n_prompt,
                           (long long)ch->n_cached, memchr(text, '\n', len) ? "true" : "false",
                           g->infill_truncated ? "true" : "false",
                           ch->finish == ST_FINISH_LENGTH ? "limit" : "eos");
    if (rc == ST_OK)
        rc = timings(o, ch);
    if (rc == ST_OK)
        rc = st_buf_append(o, ST_LIT("}"));
    return rc;
}
