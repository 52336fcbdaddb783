/* llama_props.c -- GET /props: llama-server's server properties, whose
 * default_generation_settings are the generation_settings of a request that
 * sets nothing (completion_request.c; docs/API.md "/props").
 */
#include "server/llama/llama.h"

enum st_route_result st_h_props(struct st_call *c)
{
    struct st_server *srv = c->srv;
    int32_t model = st_engine_pool_n_models(srv->pool) > 0 ? 0 : -1;
    const char *name = model >= 0 ? st_engine_pool_model_name(srv->pool, model) : NULL;
    struct st_gen_params p;
    st_gen_params_defaults(&p);
    p.temperature = srv->cfg.temp;   /* the server's --temp, --seed and -n */
    p.has_seed = srv->cfg.seed >= 0;
    p.seed = (uint64_t)srv->cfg.seed;
    p.max_tokens = srv->cfg.n_predict;
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
    st_llama_settings_json(&o, &p, NULL, 0, false, 0, false, true);
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
