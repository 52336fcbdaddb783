/* compiler.h -- attribute macros and small helpers shared by every module. */
#ifndef STRATA_COMPILER_H
#define STRATA_COMPILER_H

#include <stddef.h>

#define ST_MUST_CHECK __attribute__((warn_unused_result))
#define ST_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define ST_UNUSED(x) ((void)(x))
#define ST_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define ST_MIN(a, b) ((a) < (b) ? (a) : (b))
#define ST_MAX(a, b) ((a) > (b) ? (a) : (b))

/* The struct that embeds 'ptr' as its 'member' (intrusive containers). */
#define ST_CONTAINER_OF(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Abort with a message: for broken invariants only, never for bad input. */
_Noreturn void st_panic(const char *what, const char *file, int line);
#define ST_ASSERT(c) ((c) ? (void)0 : st_panic(#c, __FILE__, __LINE__))

#endif /* STRATA_COMPILER_H */
