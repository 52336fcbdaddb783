/* publish_off.c -- a build without libzmq or msgpack-c (CMake found
 * neither pair): --kv-events says what to install. No publisher is ever
 * opened, so the push functions are never reached with one. */
#include <stddef.h>

#include "engine/kvev/publish.h"

enum st_status st_kv_pub_open(const char *endpoint, const char *const *model_names,
                              int32_t n_models, int32_t block_size, struct st_kv_pub **out,
                              struct st_err *err)
{
    (void)endpoint;
    (void)model_names;
    (void)n_models;
    (void)block_size;
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

void st_kv_pub_stored(struct st_kv_pub *p, int32_t model, const uint64_t *hashes, int64_t n,
                      uint64_t parent, const int32_t *tokens)
{
    (void)p;
    (void)model;
    (void)hashes;
    (void)n;
    (void)parent;
    (void)tokens;
}

void st_kv_pub_removed(struct st_kv_pub *p, int32_t model, const uint64_t *hashes, int64_t n)
{
    (void)p;
    (void)model;
    (void)hashes;
    (void)n;
}

void st_kv_pub_cleared(struct st_kv_pub *p, int32_t model)
{
    (void)p;
    (void)model;
}

void st_kv_pub_free(struct st_kv_pub *p)
{
    (void)p;
}

bool st_kv_pub_built(void)
{
    return false;
}
