/* xalloc.h -- allocation for fixed, small bookkeeping: log and abort on
 * failure. Any size that comes from input, the config or a model must use
 * malloc and return ST_ERR_NOMEM instead (docs/design/STYLE.md b.4). */
#ifndef STRATA_XALLOC_H
#define STRATA_XALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *st_xmalloc(size_t n);
void *st_xcalloc(size_t count, size_t size);
void *st_xrealloc(void *p, size_t n);
char *st_xstrdup(const char *s);
char *st_xstrndup(const char *s, size_t n);

/* a*b into *out; false on overflow. */
static inline bool st_mul_ok(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

#endif /* STRATA_XALLOC_H */
