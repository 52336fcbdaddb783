/* responses_store.c -- the response store every route holds
 * (responses_store.h): a reference count around one implementation
 * (responses_store_impl.h), in memory by default or in SQLite under
 * --state-dir, so the routes never know which.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "server/responses/responses_store_impl.h"

struct st_resp_store {
    atomic_int refs;
    const struct st_resp_store_ops *ops;
    void *impl;
};

enum st_status st_resp_store_wrap(const struct st_resp_store_ops *ops, void *impl,
                                  struct st_resp_store **out)
{
    *out = NULL;
    struct st_resp_store *s = calloc(1, sizeof(*s));
    if (!s) {
        ops->free(impl);
        return ST_ERR_NOMEM;
    }
    atomic_init(&s->refs, 1);
    s->ops = ops;
    s->impl = impl;
    *out = s;
    return ST_OK;
}

enum st_status st_resp_store_new(size_t budget, struct st_resp_store **out)
{
    *out = NULL;
    void *impl = st_resp_store_mem_new(budget);
    if (!impl)
        return ST_ERR_NOMEM;
    return st_resp_store_wrap(&st_resp_store_mem_ops, impl, out);
}

void st_resp_store_ref(struct st_resp_store *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
}

void st_resp_store_unref(struct st_resp_store *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    s->ops->free(s->impl);
    free(s);
}

enum st_status st_resp_store_put(struct st_resp_store *s, uint64_t owner, const char *id,
                                 const char *input, size_t input_len, const char *output,
                                 size_t output_len, const char *response, size_t response_len)
{
    if (!s)
        return ST_ERR_INVALID;
    return s->ops->put(s->impl, owner, id, input, input_len, output, output_len, response,
                       response_len);
}

enum st_status st_resp_store_get(struct st_resp_store *s, uint64_t owner, const char *id,
                                 char **input, char **output, char **response)
{
    if (!s) {
        st_resp_store_clear_outs(input, output, response, false);
        return ST_ERR_NOT_FOUND;
    }
    return s->ops->get(s->impl, owner, id, input, output, response);
}

enum st_status st_resp_store_delete(struct st_resp_store *s, uint64_t owner, const char *id)
{
    if (!s)
        return ST_ERR_NOT_FOUND;
    return s->ops->del(s->impl, owner, id);
}

void st_resp_store_stats(struct st_resp_store *s, struct st_resp_store_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (s)
        s->ops->stats(s->impl, out);
}
