/* fuzz_gguf.c -- libFuzzer target for the GGUF reader.
 *
 * Parses the input with st_gguf_open_mem and, when it parses, walks every
 * key/value, array element and tensor through the public accessors, then
 * tries to describe it as a model, so every code path that touches file
 * bytes runs under ASan/UBSan. Built only with -DSTRATA_FUZZ=ON and clang
 * (tests/fuzz/fuzz.cmake); seeds are in tests/fuzz/corpus/gguf/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strata/gguf.h"
#include "strata/model_desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_kv(const struct st_gguf_kv *kv, volatile size_t *sink)
{
    struct st_str s;
    int64_t iv;
    uint64_t uv;
    double fv;
    bool bv;
    *sink += st_gguf_kv_key(kv).len;
    if (st_gguf_kv_str(kv, &s) && s.len)
        *sink += (uint8_t)s.ptr[s.len - 1];
    *sink += st_gguf_kv_i64(kv, &iv) + st_gguf_kv_u64(kv, &uv) + st_gguf_kv_f64(kv, &fv) +
             st_gguf_kv_bool(kv, &bv);
    uint64_t n = st_gguf_arr_n(kv);
    for (uint64_t i = 0; i < n && i < 4096; i++) {
        if (st_gguf_arr_str(kv, i, &s) && s.len)
            *sink += (uint8_t)s.ptr[0] + (uint8_t)s.ptr[s.len - 1];
        *sink += st_gguf_arr_i64(kv, i, &iv) + st_gguf_arr_f64(kv, i, &fv);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy: the reader must not read past 'size' (ASan checks). */
    uint8_t *buf = malloc(size ? size : 1);
    struct st_gguf *g = NULL;
    struct st_model_desc *d = NULL;
    volatile size_t sink = 0;
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (st_gguf_open_mem(buf, size, &g, NULL) == ST_OK) {
        for (int64_t i = 0; i < st_gguf_n_kv(g); i++)
            walk_kv(st_gguf_kv_at(g, i), &sink);
        for (int64_t i = 0; i < st_gguf_n_tensors(g); i++) {
            const struct st_gguf_tensor *t = st_gguf_tensor(g, i);
            if (t->nbytes)
                sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->nbytes - 1];
            sink += st_gguf_find_tensor(g, "token_embd.weight") != NULL;
        }
        sink += st_gguf_is_strict_layout(g);
        if (st_model_desc_load(g, &d, NULL) == ST_OK)
            st_model_desc_free(d);
        st_gguf_close(g);
    }
    free(buf);
    return 0;
}
