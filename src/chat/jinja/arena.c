/* arena.c -- the interpreter's bump allocator: a parse's tree and a
 * render's values live in one arena each, freed at once; the byte cap is
 * how a render's memory limit is enforced.
 */
#include <stdlib.h>
#include <string.h>

#include "chat/jinja/internal.h"

struct ja_chunk {
    struct ja_chunk *next;
    size_t           size, used;   /* bytes of data[] */
    _Alignas(16) unsigned char data[];
};

#define JA_CHUNK_BYTES ((size_t)64 * 1024)

void ja_init(struct jarena *a, size_t cap)
{
    a->head = NULL;
    a->used = 0;
    a->cap = cap;
}

void ja_fini(struct jarena *a)
{
    struct ja_chunk *c = a->head, *next;

    while (c) {
        next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}

void *ja_alloc(struct jarena *a, size_t n)
{
    struct ja_chunk *c = a->head;
    size_t need = (n + 15) & ~(size_t)15, size;
    void *p;

    if (need < n || need > a->cap || a->used > a->cap - need)
        return NULL;
    if (!c || c->size - c->used < need) {
        size = need > JA_CHUNK_BYTES ? need : JA_CHUNK_BYTES;
        c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    p = c->data + c->used;
    c->used += need;
    a->used += need;
    memset(p, 0, n);
    return p;
}

char *ja_strdup(struct jarena *a, const char *s, size_t n)
{
    char *p = ja_alloc(a, n + 1);

    if (p && n)
        memcpy(p, s, n);
    return p;
}
