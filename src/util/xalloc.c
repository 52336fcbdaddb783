/* xalloc.c -- abort-on-failure allocation for small fixed bookkeeping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/compiler.h"
#include "strata/xalloc.h"

static _Noreturn void out_of_memory(size_t n)
{
    fprintf(stderr, "strata: out of memory allocating %zu bytes\n", n);
    abort();
}

void *st_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *st_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count * size);
    return p;
}

void *st_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(n);
    return q;
}

char *st_xstrdup(const char *s)
{
    return st_xstrndup(s, strlen(s));
}

char *st_xstrndup(const char *s, size_t n)
{
    char *p = st_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}
