/* cuda_graph_drop.c -- letting go of captured graphs (cuda_graph.c): a
 * capture an op left open, every graph when the scratch moves, all of them
 * at close. Below everything that allocates, so the scratch can call it.
 */
#include <string.h>

#include "cuda_internal.h"
#include "strata/log.h"

void cuda_capture_abort(struct cuda_backend *cb)
{
    struct cuda_graph_entry *g;
    cudaGraph_t graph = NULL;

    if (!cb->capturing)
        return;
    g = &cb->graphs[cb->capturing - 1];
    cb->capturing = 0;
    (void)cudaStreamEndCapture(cb->stream, &graph);
    if (graph)
        cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    g->seen = 0;                            /* next time: eager first, then capture */
    st_log(ST_LOG_WARN, "cuda", "device %d: a graph capture was abandoned (an op failed)",
           cb->device);
}

void cuda_graphs_free(struct cuda_backend *cb)
{
    cuda_capture_abort(cb);
    for (int i = 0; i < CUDA_MAX_GRAPHS; i++) {
        if (cb->graphs[i].exec)
            cudaGraphExecDestroy(cb->graphs[i].exec);
        memset(&cb->graphs[i], 0, sizeof(cb->graphs[i]));
    }
}

void cuda_graphs_invalidate(struct cuda_backend *cb)
{
    int n = 0;

    for (int i = 0; i < CUDA_MAX_GRAPHS; i++)
        n += cb->graphs[i].exec != NULL;
    cuda_graphs_free(cb);
    if (n > 0)
        st_log(ST_LOG_DEBUG, "cuda", "device %d: scratch moved, %d captured graphs dropped",
               cb->device, n);
}
