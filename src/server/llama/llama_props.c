/* llama_props.c -- llama-server's generation_settings object (the
 * /completion answer's, built once per request at parse time) and GET
 * /props, whose default_generation_settings has the same fields for a
 * request that sets nothing (docs/API.md "/props").
 */
#include <stdlib.h>
#include <string.h>

#include "server/llama/llama.h"
#include "server/openai/oai_json.h"

/* The settings object of params p: the fields llama-server names that
 * Strata has, with the values the request will run with. */
static void settings(struct st_out *o, const struct st_gen_params *p, bool stream,
                     int32_t n_probs, bool post_sampling, bool cache_prompt)
{
    st_out_text(o, "{");
    st_out_kv_i64(o, "n_predict", p->max_tokens);
    st_out_kv_i64(o, "seed", p->has_seed ? (int64_t)p->seed : 4294967295LL);
    st_out_kv_num(o, "temperature", p->temperature);
    st_out_kv_i64(o, "top_k", p->top_k);
    st_out_kv_num(o, "top_p", p->top_p);
    st_out_kv_num(o, "min_p", p->min_p);
    st_out_kv_i64(o, "repeat_last_n", p->repeat_last_n);
    st_out_kv_num(o, "repeat_penalty", p->repeat_penalty);
    st_out_kv_num(o, "presence_penalty", p->presence_penalty);
    st_out_kv_num(o, "frequency_penalty", p->frequency_penalty);
    st_out_kv_raw(o, "stop", "[");
    for (int32_t i = 0; i < p->n_stop; i++) {
        st_out_sep(o);
        st_out_json_cstr(o, p->stop[i]);
    }
    st_out_text(o, "]");
    st_out_kv_i64(o, "max_tokens", p->max_tokens);
    st_out_kv_bool(o, "ignore_eos", p->ignore_eos);
    st_out_kv_bool(o, "stream", stream);
    st_out_kv_i64(o, "n_probs", n_probs);
    st_out_kv_bool(o, "post_sampling_probs", post_sampling);
    st_out_kv_bool(o, "cache_prompt", cache_prompt);
    st_out_kv_raw(o, "samplers", "[\"penalties\",\"top_k\",\"top_p\",\"min_p\",\"temperature\"]");
    st_out_text(o, "}");
}

enum st_status st_llama_settings(struct st_oai_request *oq, struct st_api_error *e)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    settings(&o, &oq->params, oq->stream, oq->llama.n_probs, oq->llama.post_sampling,
             oq->cache_prompt);
    if (st_out_finish(&o) != ST_OK || st_buf_append(&b, "", 1) != ST_OK) {
        st_buf_fini(&b);
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    free(oq->llama.settings);
    oq->llama.settings = b.data;   /* NUL-terminated, owned */
    return ST_OK;
}

enum st_route_result st_h_props(struct st_call *c)
{
    struct st_server *srv = c->srv;
    int32_t model = st_engine_pool_n_models(srv->pool) > 0 ? 0 : -1;
    const char *name = model >= 0 ? st_engine_pool_model_name(srv->pool, model) : NULL;
    struct st_gen_params p;
    st_gen_params_defaults(&p);
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_text(&o, "{\"default_generation_settings\":{");
    st_out_kv_i64(&o, "id", 0);
    st_out_kv_i64(&o, "id_task", -1);
    st_out_kv_i64(&o, "n_ctx", model >= 0 ? st_engine_pool_ctx_size(srv->pool, model) : 0);
    st_out_kv_bool(&o, "speculative", false);
    st_out_kv_bool(&o, "is_processing", false);
    st_out_key(&o, "params");
    settings(&o, &p, false, 0, false, true);
    st_out_text(&o, "}");
    st_out_kv_i64(&o, "total_slots", (int64_t)st_engine_pool_slots(srv->pool, NULL, 0));
    st_out_kv_str(&o, "model_alias", name ? name : "");
    const char *path = model >= 0 ? st_engine_pool_model_path(srv->pool, model) : NULL;
    st_out_kv_str(&o, "model_path", path ? path : "");
    st_out_kv_raw(&o, "modalities", "{\"vision\":false,\"audio\":false}");
    st_out_kv_str(&o, "build_info", "strata");
    st_out_kv_bool(&o, "is_sleeping", false);
    st_out_text(&o, "}");
    return st_reply_json_built(c, st_out_finish(&o), &b);
}
