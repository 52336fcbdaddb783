/* publish_off.c -- a build without libzmq or msgpack-c (CMake found
 * neither pair, or STRATA_KV_EVENTS=OFF): --kv-events says what to
 * install. No publisher is ever opened. */
#include <stddef.h>

#include "engine/kvev/publish.h"

enum st_status st_kv_pub_open(const char *endpoint, const char *const *model_names,
                              int32_t n_models, struct st_kv_queue *queue,
                              struct st_kv_pub **out, struct st_err *err)
{
    (void)endpoint;
    (void)model_names;
    (void)n_models;
    (void)queue;
    *out = NULL;
    return st_err_set(err, ST_ERR_UNSUPPORTED, "--kv-events: this build has no ZeroMQ/msgpack "
                      "support (install libzmq3-dev and libmsgpack-dev, then configure and "
                      "build again)");
}

void st_kv_pub_set_pod(struct st_kv_pub *p, const char *pod)
{
    (void)p;
    (void)pod;
}

void st_kv_pub_free(struct st_kv_pub *p)
{
    (void)p;
}
