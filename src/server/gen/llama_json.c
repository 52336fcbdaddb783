/* llama_json.c -- answers in llama-server's native /completion shape, for
 * POST /completion and POST /infill (docs/API.md "/completion" lists every
 * field, and those left out):
 *
 *   stream object   {"index":i,"content":"<text>","tokens":[id],"stop":false,
 *                    "id_slot":-1,"tokens_predicted":k,"tokens_evaluated":n
 *                    [,"completion_probabilities":[entry]]}
 *   last object /   {"index":i,"content":"<all text, or \"\" when streamed>",
 *   one result       "tokens":[ids when return_tokens],"id_slot":-1,"stop":true,
 *                    "model":"...","tokens_predicted":k,"tokens_evaluated":n,
 *                    "tokens_cached":c,"has_new_line":b,"truncated":b,
 *                    "stop_type":"eos"|"limit"|"word","stopping_word":"...",
 *                    ["generation_settings":{...},]"timings":{...}
 *                    [,"completion_probabilities":[entries]]}
 *
 * An entry is {"id","token","bytes","logprob","top_logprobs":[{"id","token",
 * "bytes","logprob"}]}; with post_sampling_probs "prob"/"top_probs" hold
 * exp(logprob) of the model's distribution. Several prompts answer an array
 * of results (non-stream) or objects told apart by "index" (stream).
 * Streams are "data: {...}" events with no [DONE], as llama-server's
 * non-OpenAI endpoints. Rendered under the call's lock (llama/llama_shape.c).
 */
#include <math.h>
#include <string.h>

#include "server/gen/llama_json.h"

static int64_t now_ns(void)
{
    return st_clock_now(st_clock_real());
}

/* "logprob":x or, post-sampling, "prob":exp(x). */
static void prob_field(struct st_out *o, const struct st_gen *g, float logprob)
{
    if (g->llama.post_sampling)
        st_out_kv_num(o, "prob", exp((double)logprob));
    else
        st_out_kv_num(o, "logprob", logprob);
}

/* {"id","token","bytes",prob (left open). */
static void token_head(struct st_out *o, const struct st_gen *g, int32_t id, const char *bytes,
                       size_t n, float logprob)
{
    st_out_text(o, "{");
    st_out_kv_i64(o, "id", id);
    st_out_key(o, "token");
    st_out_json_str(o, bytes, n);
    st_out_key(o, "bytes");
    st_out_json_bytes(o, bytes, n);
    prob_field(o, g, logprob);
}

/* One completion_probabilities entry: the sampled token and the best
 * n_probs alternatives (what the engine reported, at most n_probs). */
static void prob_entry(struct st_out *o, const struct st_gen *g, const struct st_event *ev)
{
    const char *bytes = ev->piece ? ev->piece : (ev->text ? ev->text : "");
    size_t n = ev->piece ? ev->piece_len : (ev->text ? ev->text_len : 0);
    token_head(o, g, ev->token, bytes, n, ev->logprob);
    st_out_kv_raw(o, g->llama.post_sampling ? "top_probs" : "top_logprobs", "[");
    int32_t k = ST_MIN(ev->n_top, g->llama.n_probs);
    for (int32_t i = 0; i < k; i++) {
        const struct st_top_logprob *t = &ev->top[i];
        size_t tn = t->n_bytes < 0 ? 0 : (size_t)ST_MIN(t->n_bytes, (int32_t)sizeof(t->bytes));
        st_out_sep(o);
        token_head(o, g, t->token, t->bytes, tn, t->logprob);
        st_out_text(o, "}");
    }
    st_out_text(o, "]}");
}

/* ,"timings":{..} from its counts and times. The generation rates count
 * the tokens after the first (it comes with the read, no step of its own),
 * as llama-server's; numbers are written in full, so a client gets the
 * rate of the predicted_ms it reads. */
static void timings_of(struct st_out *o, int64_t cache_n, int64_t prompt_n, double p_ms,
                       int64_t predicted_n, double d_ms)
{
    double pn = (double)prompt_n;
    double steps = predicted_n > 1 ? (double)(predicted_n - 1) : 0.0;
    st_out_key(o, "timings");
    st_out_text(o, "{");
    st_out_kv_i64(o, "cache_n", cache_n);
    st_out_kv_i64(o, "prompt_n", prompt_n);
    st_out_kv_num(o, "prompt_ms", p_ms);
    st_out_kv_num(o, "prompt_per_token_ms", pn > 0 ? p_ms / pn : 0.0);
    st_out_kv_num(o, "prompt_per_second", p_ms > 0 ? 1e3 / p_ms * pn : 0.0);
    st_out_kv_i64(o, "predicted_n", predicted_n);
    st_out_kv_num(o, "predicted_ms", d_ms);
    st_out_kv_num(o, "predicted_per_token_ms", steps > 0 ? d_ms / steps : 0.0);
    st_out_kv_num(o, "predicted_per_second", d_ms > 0 ? 1e3 / d_ms * steps : 0.0);
    st_out_text(o, "}");
}

/* llama-server's timings: prompt = from the request's arrival to its first
 * token (strata's includes the time queued), predicted = the rest (so
 * far); prompt_n the tokens read, cache_n those reused from the slot's
 * cache. While the prompt is read (p, return_progress): prompt = since
 * the read's first report, prompt_n the tokens read so far, nothing
 * predicted. */
static void timings(struct st_out *o, const struct st_gen_choice *ch,
                    const struct st_gen_progress *p)
{
    if (p) {
        int64_t read = p->processed > p->cache ? p->processed - p->cache : 0;
        timings_of(o, p->cache, read, p->time_ms, 0, 0.0);
        return;
    }
    int64_t end = now_ns();
    int64_t first = ch->first_token_ns ? ch->first_token_ns : end;
    int64_t read = ch->n_prompt > ch->n_cached ? ch->n_prompt - ch->n_cached : 0;
    timings_of(o, ch->n_cached, read, (double)(first - ch->call->start_ns) / 1e6,
               ch->n_generated, (double)(end - first) / 1e6);
}

/* ,"prompt_progress":{"total","cache","processed","time_ms"} */
static void progress(struct st_out *o, const struct st_gen_progress *p)
{
    st_out_key(o, "prompt_progress");
    st_out_text(o, "{");
    st_out_kv_i64(o, "total", p->total);
    st_out_kv_i64(o, "cache", p->cache);
    st_out_kv_i64(o, "processed", p->processed);
    st_out_kv_num(o, "time_ms", p->time_ms);   /* in full, as timings' prompt_ms */
    st_out_text(o, "}");
}

void st_llama_extra_members(struct st_out *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const struct st_gen_progress *p)
{
    if (g->llama.timings_per_token)
        timings(o, ch, p);
    if (p)
        progress(o, p);
}

enum st_status st_llama_extras(struct st_buf *out, const struct st_gen *g,
                               const struct st_gen_choice *ch, const struct st_gen_progress *p)
{
    if ((!g->llama.timings_per_token && !p) || out->len < 2 || out->data[out->len - 1] != '}')
        return ST_OK;
    out->len--;   /* the object's closing brace: the members go before it */
    struct st_out o;
    st_out_init(&o, out);
    st_llama_extra_members(&o, g, ch, p);
    st_out_text(&o, "}");
    return st_out_finish(&o);
}

enum st_status st_llama_chunk(struct st_buf *out, const struct st_gen *g,
                              const struct st_gen_choice *ch, const char *text, size_t len,
                              const struct st_event *ev)
{
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "index", ch->index);
    st_out_key(&o, "content");
    st_out_json_str(&o, text, len);
    st_out_key(&o, "tokens");
    if (ev)
        st_out_printf(&o, "[%d]", (int)ev->token);
    else
        st_out_text(&o, "[]");
    st_out_kv_bool(&o, "stop", false);
    st_out_kv_i64(&o, "id_slot", -1);
    st_out_kv_i64(&o, "tokens_predicted", ch->n_generated);
    st_out_kv_i64(&o, "tokens_evaluated", ch->n_prompt);
    if (g->llama.timings_per_token)
        timings(&o, ch, NULL);
    if (g->llama.n_probs > 0 && ev) {
        st_out_kv_raw(&o, "completion_probabilities", "[");
        prob_entry(&o, g, ev);
        st_out_text(&o, "]");
    }
    st_out_text(&o, "}");
    return st_out_finish(&o);
}

enum st_status st_llama_progress(struct st_buf *out, const struct st_gen *g,
                                 const struct st_gen_choice *ch, const struct st_gen_progress *p)
{
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "index", ch->index);
    st_out_kv_raw(&o, "content", "\"\"");
    st_out_kv_raw(&o, "tokens", "[]");
    st_out_kv_bool(&o, "stop", false);
    st_out_kv_i64(&o, "id_slot", -1);
    st_out_kv_i64(&o, "tokens_predicted", 0);
    st_out_kv_i64(&o, "tokens_evaluated", p->total);
    st_out_text(&o, "}");
    enum st_status rc = st_out_finish(&o);
    return rc == ST_OK ? st_llama_extras(out, g, ch, p) : rc;
}

enum st_status st_llama_keep(const struct st_gen *g, struct st_gen_choice *ch,
                             const struct st_event *ev)
{
    struct st_out o;
    if (g->llama.return_tokens) {
        st_out_init(&o, &ch->ids);
        st_out_sep(&o);
        st_out_json_i64(&o, ev->token);
        enum st_status rc = st_out_finish(&o);
        if (rc != ST_OK)
            return rc;
    }
    if (g->llama.n_probs <= 0)
        return ST_OK;
    st_out_init(&o, &ch->probs);
    st_out_sep(&o);
    prob_entry(&o, g, ev);
    return st_out_finish(&o);
}

static const char *stop_type(const struct st_gen_choice *ch)
{
    if (ch->finish == ST_FINISH_LENGTH)
        return "limit";
    return ch->stop_seq ? "word" : "eos";
}

/* The raw JSON text of a comma-separated buffer, inside brackets. */
static void list(struct st_out *o, const char *key, const struct st_buf *b)
{
    st_out_kv_raw(o, key, "[");
    if (b->len)
        st_out_raw(o, b->data, b->len);
    st_out_text(o, "]");
}

enum st_status st_llama_final(struct st_buf *out, const struct st_gen *g,
                              const struct st_gen_choice *ch, bool stream)
{
    const char *text = !stream && ch->text.data ? ch->text.data : "";
    size_t len = !stream ? ch->text.len : 0;
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "index", ch->index);
    st_out_key(&o, "content");
    st_out_json_str(&o, text, len);
    list(&o, "tokens", &ch->ids);
    st_out_kv_i64(&o, "id_slot", -1);
    st_out_kv_bool(&o, "stop", true);
    st_out_kv_str(&o, "model", g->model_name);
    st_out_kv_i64(&o, "tokens_predicted", ch->n_generated);
    st_out_kv_i64(&o, "tokens_evaluated", ch->n_prompt);
    st_out_kv_i64(&o, "tokens_cached", ch->n_cached);
    st_out_kv_bool(&o, "has_new_line", memchr(text, '\n', len) != NULL);
    st_out_kv_bool(&o, "truncated", g->llama.truncated);
    st_out_kv_str(&o, "stop_type", stop_type(ch));
    st_out_kv_str(&o, "stopping_word", ch->stop_seq ? ch->stop_seq : "");
    if (g->llama.settings)
        st_out_kv_raw(&o, "generation_settings", g->llama.settings);
    timings(&o, ch, NULL);
    if (g->llama.n_probs > 0 && !stream)
        list(&o, "completion_probabilities", &ch->probs);
    st_out_text(&o, "}");
    return st_out_finish(&o);
}

enum st_status st_llama_verbose(struct st_buf *out, const struct st_gen *g)
{
    if (out->len < 2 || out->data[out->len - 1] != '}' || g->n_choices < 1)
        return ST_OK;
    out->len--;
    enum st_status rc = st_buf_append(out, ",\"__verbose\":", 13);
    if (rc == ST_OK)
        rc = st_llama_final(out, g, &g->choices[0], false);
    if (rc != ST_OK)
        return rc;
    out->len--;   /* the result's own brace: its "prompt" follows */
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, ",");
    st_out_key(&o, "prompt");
    st_out_json_str(&o, g->verbose_prompt, strlen(g->verbose_prompt));
    st_out_text(&o, "}}");
    return st_out_finish(&o);
}

enum st_status st_llama_body(struct st_buf *out, const struct st_gen *g)
{
    bool many = g->n_choices > 1;
    enum st_status rc = many ? st_buf_append(out, "[", 1) : ST_OK;
    for (int32_t i = 0; i < g->n_choices && rc == ST_OK; i++) {
        if (i)
            rc = st_buf_append(out, ",", 1);
        if (rc == ST_OK)
            rc = st_llama_final(out, g, &g->choices[i], false);
    }
    if (rc == ST_OK && many)
        rc = st_buf_append(out, "]", 1);
    return rc;
}
