/* runner_new.c -- a runner for one of the pool's models: the one place
 * that turns a model's backend kind into a runner (src/runner).
 */
#include <string.h>

#include "engine/pool.h"
#include "runner/runner_model.h"
#include "runner/runner_sim.h"

/* Backends this build can make runners for (st_pool_runner_new). */
bool st_pool_backend_built(enum st_backend_kind k)
{
#ifdef STRATA_HAVE_CUDA
    if (k == ST_BACKEND_CUDA)
        return true;
#endif
    return k == ST_BACKEND_SIM || k == ST_BACKEND_CPU;
}

enum st_status st_pool_runner_new(const struct st_engine_pool *p, int32_t model, int32_t device,
                                  struct st_runner **out, struct st_err *err)
{
    const struct st_model_config *m = &p->models[model].cfg;
    *out = NULL;   /* the sim ignores 'device'; cuda opens cuda:device (-1 = no --gpus: 0) */
    switch (m->backend) {
    case ST_BACKEND_SIM: {
        enum st_status rc = st_runner_sim_new(&p->cfg.sim, m->parallel, m->ctx_size, out, err);
        if (rc == ST_OK && m->path && strncmp(m->path, "fail:", 5) == 0)
            st_runner_sim_fail_loads(*out, m->path + 5);
        if (rc == ST_OK && m->path && strncmp(m->path, "reply:", 6) == 0)
            rc = st_runner_sim_set_reply(*out, m->path + 6, err);   /* docs/SIM.md */
        return rc;
    }
    case ST_BACKEND_CPU:    /* the model runner (runner_model.c) */
        return st_runner_model_new_cfg(m, "cpu", -1, p->cfg.threads, p->cfg.ubatch, out, err);
    case ST_BACKEND_CUDA:
        if (!st_pool_backend_built(ST_BACKEND_CUDA))
            break;
        return st_runner_model_new_cfg(m, "cuda", device < 0 ? 0 : device, p->cfg.threads,
                                       p->cfg.ubatch, out, err);
    }
    return st_err_set(err, ST_ERR_UNSUPPORTED,
                      "backend 'cuda' is not built in (this build has no nvcc); start with "
                      "--backend sim or --backend cpu");
}
