/* cuda_graph.c -- decode steps as CUDA graphs, and sampling and scoring
 * on the GPU.
 *
 * Graphs. A decode step is 18 launches per layer fused, 27 unfused
 * (docs/CUDA.md "Launches per layer"; ~870 / ~1,300 for 48 layers);
 * launched one by one they cost more CPU time than the GPU needs to run
 * them at batch 1. The layer program brackets a step's ops with
 *
 *     st_backend_write(...)                 inputs first (ids, pos, slots)
 *     graph_begin(be, key, &replayed)
 *     if (!replayed) { ...every op of the step...; graph_end(be) }
 *     st_backend_read(...)                  logits or sampled ids
 *
 * 'key' names the shape (e.g. rows in the step + 1000 * output rows): every
 * op's arguments (pointers, row counts) must be the same whenever the key
 * is; positions, slots and ids may differ because the kernels read them
 * from device memory. The first begin() of a key runs the ops eagerly (it
 * sizes the scratch), the second captures them into a graph and launches
 * it, later ones replay it (cudaGraphLaunch: one call). CUDA_MAX_GRAPHS
 * keys are kept; beyond that a key runs eagerly. Capture uses the
 * thread-local mode so another backend's thread is not disturbed. If an op
 * fails during a capture (the caller returns without graph_end), the next
 * begin/write/read/sync abandons the capture and the key starts over.
 * Captured kernels hold scratch pointers: when a scratch grows (a larger
 * step than any before, between steps), every graph is dropped
 * (cuda_graphs_invalidate, cuda_graph_drop.c) and its key starts over.
 *
 * Sampling: ids[r] from logits rows on the device (kernels.h
 * st_kern_sample), so a step reads back n_rows int32 instead of n_rows *
 * n_vocab floats. Scoring: st_kern_score (prompt logprobs), (1 + K)
 * floats and ints per row instead of the row.
 */
#include "cuda_internal.h"

static struct cuda_graph_entry *find_entry(struct cuda_backend *cb, uint64_t key, bool add)
{
    for (int i = 0; i < CUDA_MAX_GRAPHS; i++)
        if (cb->graphs[i].key == key)
            return &cb->graphs[i];
    if (!add)
        return NULL;
    for (int i = 0; i < CUDA_MAX_GRAPHS; i++) {
        if (cb->graphs[i].key == 0) {
            cb->graphs[i].key = key;
            return &cb->graphs[i];
        }
    }
    return NULL;
}

enum st_status cuda_graph_begin(struct st_backend *be, uint64_t key, bool *replayed,
                                struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);
    struct cuda_graph_entry *g;

    *replayed = false;
    if (rc != ST_OK)
        return rc;
    cuda_capture_abort(cb);                 /* a previous step failed mid-capture */
    /* the q8_1 record never crosses a bracket: inside, reuse depends only
     * on the ops of the step, so eager, captured and replayed runs agree
     * (the routing's groups alike) */
    cuda_actq_forget(cb);
    cuda_moe_forget(cb);
    cb->step_kernels0 = cb->kernels;
    cb->step_ops0 = be->n_ops;
    if (key == 0)
        return st_err_set(err, ST_ERR_INVALID, "cuda: graph key 0 is reserved");
    g = find_entry(cb, key, true);
    if (!g)
        return ST_OK;                       /* table full: run eagerly */
    if (g->exec) {
        rc = ST_CUDA(cb, cudaGraphLaunch(g->exec, cb->stream), err);
        *replayed = rc == ST_OK;
        if (*replayed) {
            cb->kernels += g->kernels;
            be->n_ops += g->ops;
            cb->graph_replays++;
            cuda_log_step(cb, "replayed", g->kernels, g->ops);
        }
        return rc;
    }
    if (++g->seen < 2)
        return ST_OK;                       /* first run: eager, sizes the scratch */
    rc = ST_CUDA(cb, cudaStreamBeginCapture(cb->stream, cudaStreamCaptureModeThreadLocal), err);
    if (rc == ST_OK)
        cb->capturing = (int)(g - cb->graphs) + 1;
    return rc;
}

enum st_status cuda_graph_end(struct st_backend *be, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    struct cuda_graph_entry *g;
    cudaGraph_t graph = NULL;
    enum st_status rc;

    const uint64_t kernels = cb->kernels - cb->step_kernels0, ops = be->n_ops - cb->step_ops0;

    cuda_actq_forget(cb);
    cuda_moe_forget(cb);
    if (!cb->capturing) {
        cuda_log_step(cb, "eager", kernels, ops);
        return cuda_enter(cb, err);         /* eager run: nothing to do */
    }
    g = &cb->graphs[cb->capturing - 1];
    cb->capturing = 0;
    g->kernels = kernels;
    g->ops = ops;
    cuda_log_step(cb, "captured", kernels, ops);
    rc = ST_CUDA(cb, cudaStreamEndCapture(cb->stream, &graph), err);
    if (rc == ST_OK)
        rc = ST_CUDA(cb, cudaGraphInstantiate(&g->exec, graph, 0), err);
    if (graph)
        cudaGraphDestroy(graph);
    if (rc != ST_OK) {
        g->exec = NULL;
        g->key = 0;                         /* forget the key: retried from scratch */
        g->seen = 0;
        return rc;
    }
    /* the captured ops did not run: run them now */
    return ST_CUDA(cb, cudaGraphLaunch(g->exec, cb->stream), err);
}

enum st_status cuda_op_sample(struct st_backend *be, const struct st_tensor *ids,
                              const struct st_tensor *logits, const struct st_tensor *draws,
                              struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_actq_wrote_t(cb, ids);
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_sample(ids->data, logits->data, logits->ne[1],
                                             logits->ne[0], draws->data, cb->stream),
                          "sample", err);
}

enum st_status cuda_op_score(struct st_backend *be, const struct st_tensor *vals,
                             const struct st_tensor *ids, const struct st_tensor *logits,
                             const struct st_tensor *next, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    _Static_assert(ST_SCORE_MAX_TOP == 20, "st_kern_score's bound");
    cuda_actq_wrote_t(cb, vals);
    cuda_actq_wrote_t(cb, ids);
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_score(vals->data, ids->data, logits->data, next->data,
                                            logits->ne[1], logits->ne[0],
                                            (int32_t)(vals->ne[0] - 1), cb->err_flag, cb->stream),
                          "score", err);
}
