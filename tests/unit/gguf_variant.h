/* gguf_variant.h -- for the refused-variant tests of the model loaders
 * (test_model_glm.c, test_forward_next.c): a copy of a made model with
 * one key changed or one tensor left out.
 */
#ifndef STRATA_TEST_GGUF_VARIANT_H
#define STRATA_TEST_GGUF_VARIANT_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "strata/gguf.h"
#include "strata/gguf_write.h"

/* Write to 'out' the general.architecture key and the <prefix>* scalar
 * keys of 'src' (the tokenizer left out: a description does not need it)
 * and its tensors, with u32 key 'set' added or replaced by v (NULL: none)
 * and without tensor 'skip' (NULL: none). */
static inline void gguf_variant_write(const char *src, const char *out, const char *prefix,
                                      const char *set, uint32_t v, const char *skip)
{
    struct st_err err = { 0 };
    struct st_gguf *g;
    ck_assert_int_eq(st_gguf_open(src, &g, &err), ST_OK);
    struct st_gguf_writer *w = st_gguf_writer_new(0);
    for (int64_t i = 0; i < st_gguf_n_kv(g); i++) {
        const struct st_gguf_kv *kv = st_gguf_kv_at(g, i);
        struct st_str k = st_gguf_kv_key(kv), sv;
        char key[128];
        double f;
        uint64_t u;
        bool b;
        snprintf(key, sizeof(key), "%.*s", (int)k.len, k.ptr);
        if ((strncmp(key, prefix, strlen(prefix)) != 0 &&
             strcmp(key, "general.architecture") != 0) ||
            (set && strcmp(key, set) == 0))
            continue;
        enum st_gguf_type t = st_gguf_kv_type(kv);
        if (t == ST_GGUF_STRING && st_gguf_kv_str(kv, &sv))
            st_gguf_writer_set_strn(w, key, sv);
        else if (t == ST_GGUF_BOOL && st_gguf_kv_bool(kv, &b))
            st_gguf_writer_set_bool(w, key, b);
        else if (t == ST_GGUF_F32 && st_gguf_kv_f64(kv, &f))
            st_gguf_writer_set_f32(w, key, (float)f);
        else if (st_gguf_kv_u64(kv, &u))
            st_gguf_writer_set_u32(w, key, (uint32_t)u);
    }
    if (set)
        st_gguf_writer_set_u32(w, set, v);
    for (int64_t i = 0; i < st_gguf_n_tensors(g); i++) {
        const struct st_gguf_tensor *t = st_gguf_tensor(g, i);
        char name[96];
        snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.ptr);
        if (!skip || strcmp(name, skip) != 0)
            st_gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data);
    }
    ck_assert_int_eq(st_gguf_writer_write(w, out, &err), ST_OK);
    st_gguf_writer_free(w);
    st_gguf_close(g);
}

#endif /* STRATA_TEST_GGUF_VARIANT_H */
