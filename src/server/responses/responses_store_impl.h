/* responses/responses_store_impl.h -- what a response store implementation
 * provides to responses_store.c, which holds the reference count and
 * forwards every call: the in-memory table (responses_store_mem.c) and the
 * SQLite table under --state-dir (responses_store_sqlite.c). Each method
 * keeps the contract responses_store.h states, thread safety included.
 */
#ifndef STRATA_SERVER_RESPONSES_STORE_IMPL_H
#define STRATA_SERVER_RESPONSES_STORE_IMPL_H

#include <stdbool.h>

#include "server/responses/responses_store.h"

struct st_resp_store_ops {
    enum st_status (*put)(void *impl, uint64_t owner, const char *id, const char *input,
                          size_t input_len, const char *output, size_t output_len,
                          const char *response, size_t response_len);
    enum st_status (*get)(void *impl, uint64_t owner, const char *id, char **input,
                          char **output, char **response);
    enum st_status (*del)(void *impl, uint64_t owner, const char *id);
    void (*stats)(void *impl, struct st_resp_store_stats *out);
    void (*free)(void *impl);
};

/* Wrap 'impl' (taken over: freed by ops->free with the last reference).
 * ST_ERR_NOMEM (impl freed). */
ST_MUST_CHECK enum st_status st_resp_store_wrap(const struct st_resp_store_ops *ops,
                                                void *impl, struct st_resp_store **out);

/* For get(): set every wanted out (non-NULL) to NULL; 'owned': free what
 * they hold first (a get that fails after copying some). */
void st_resp_store_clear_outs(char **input, char **output, char **response, bool owned);

/* For get(): an owned NUL-terminated copy of text[0, len) into *out when out
 * is wanted (non-NULL). false: out of memory (*out NULL). */
bool st_resp_store_copy_out(char **out, const void *text, size_t len);

extern const struct st_resp_store_ops st_resp_store_mem_ops;
/* The in-memory table's impl, of 'budget' bytes; NULL: out of memory. */
void *st_resp_store_mem_new(size_t budget);

#endif /* STRATA_SERVER_RESPONSES_STORE_IMPL_H */
