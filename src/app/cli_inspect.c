/* cli_inspect.c -- `strata inspect FILE`: the metadata and tensor table of
 * a GGUF file, in the shape of gguf-py's gguf-dump.
 *
 * Long strings and arrays are abbreviated unless --full. The header line
 * also says whether the file follows the strict layout (docs/design/ENGINE.md 1.4),
 * and, when the model description loads, a summary of the hparams; a
 * description that does not load is reported but is not an error here
 * (inspect must work on any valid GGUF).
 */
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "strata/gguf.h"
#include "strata/model_desc.h"

#define SHORT_STR 60
#define SHORT_ARR 5

static void print_str(struct st_str s, bool full)
{
    size_t n = full ? s.len : ST_MIN(s.len, (size_t)SHORT_STR);
    putchar('\'');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\'' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('\'');
    if (n < s.len)
        printf("...(%zu bytes)", s.len);
}

static void print_num(enum st_gguf_type t, bool ok_i, int64_t iv, uint64_t uv, double fv)
{
    if (t == ST_GGUF_F32 || t == ST_GGUF_F64)
        printf("%.9g", fv);
    else if (t == ST_GGUF_BOOL)
        fputs(iv ? "True" : "False", stdout);
    else if (ok_i)
        printf("%lld", (long long)iv);
    else
        printf("%llu", (unsigned long long)uv);
}

static void print_scalar(const struct st_gguf_kv *kv, bool full)
{
    struct st_str s;
    int64_t iv = 0;
    uint64_t uv = 0;
    double fv = 0;
    if (st_gguf_kv_str(kv, &s)) {
        print_str(s, full);
        return;
    }
    bool ok_i = st_gguf_kv_i64(kv, &iv);
    if (!ok_i)
        st_gguf_kv_u64(kv, &uv);
    st_gguf_kv_f64(kv, &fv);
    print_num(st_gguf_kv_type(kv), ok_i, iv, uv, fv);
}

static void print_array(const struct st_gguf_kv *kv, bool full)
{
    uint64_t n = st_gguf_arr_n(kv), shown = full ? n : ST_MIN(n, (uint64_t)SHORT_ARR);
    enum st_gguf_type et = st_gguf_arr_type(kv);
    putchar('[');
    for (uint64_t i = 0; i < shown; i++) {
        struct st_str s;
        int64_t iv = 0;
        uint64_t uv = 0;
        double fv = 0;
        if (i)
            fputs(", ", stdout);
        if (st_gguf_arr_str(kv, i, &s)) {
            print_str(s, full);
            continue;
        }
        bool ok_i = st_gguf_arr_i64(kv, i, &iv);
        if (!ok_i && et == ST_GGUF_U64) {
            const unsigned char *p = (const unsigned char *)st_gguf_arr_data(kv) + 8 * i;
            for (int b = 7; b >= 0; b--)
                uv = uv << 8 | p[b];
        }
        st_gguf_arr_f64(kv, i, &fv);
        if (et == ST_GGUF_BOOL)
            iv = iv != 0;
        print_num(et, ok_i, iv, uv, fv);
    }
    if (shown < n)
        fputs(", ...", stdout);
    putchar(']');
}

static void print_kvs(const struct st_gguf *g, bool full)
{
    printf("* Dumping %lld key/value pair(s)\n", (long long)st_gguf_n_kv(g) + 3);
    printf("      1: UINT32     |        1 | GGUF.version = %u\n", st_gguf_version(g));
    printf("      2: UINT64     |        1 | GGUF.tensor_count = %lld\n",
           (long long)st_gguf_n_tensors(g));
    printf("      3: UINT64     |        1 | GGUF.kv_count = %lld\n", (long long)st_gguf_n_kv(g));
    for (int64_t i = 0; i < st_gguf_n_kv(g); i++) {
        const struct st_gguf_kv *kv = st_gguf_kv_at(g, i);
        struct st_str key = st_gguf_kv_key(kv);
        bool arr = st_gguf_kv_type(kv) == ST_GGUF_ARRAY;
        char tname[16];
        snprintf(tname, sizeof(tname), arr ? "[%s]" : "%s",
                 st_gguf_type_name(arr ? st_gguf_arr_type(kv) : st_gguf_kv_type(kv)));
        printf("%7lld: %-10s | %8llu | %.*s = ", (long long)i + 4, tname,
               (unsigned long long)(arr ? st_gguf_arr_n(kv) : 1), (int)key.len, key.ptr);
        if (arr)
            print_array(kv, full);
        else
            print_scalar(kv, full);
        putchar('\n');
    }
}

static void print_tensors(const struct st_gguf *g)
{
    printf("* Dumping %lld tensor(s)\n", (long long)st_gguf_n_tensors(g));
    for (int64_t i = 0; i < st_gguf_n_tensors(g); i++) {
        const struct st_gguf_tensor *t = st_gguf_tensor(g, i);
        const char *tn = st_gguf_ggml_type_name((uint32_t)t->type);
        printf("%7lld: %10lld | %5lld, %5lld, %5lld, %5lld | %-7s | %.*s\n", (long long)i + 1,
               (long long)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]), (long long)t->ne[0],
               (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], tn ? tn : "?",
               (int)t->name.len, t->name.ptr);
    }
}

static void print_summary(const struct st_gguf *g)
{
    struct st_model_desc *d = NULL;
    struct st_err err = { 0 };
    if (st_model_desc_load(g, &d, &err) != ST_OK) {
        printf("* Model: not loadable by strata: %s\n", err.msg);
        return;
    }
    const struct st_hparams *h = &d->hp;
    printf("* Model: %s, vocab %lld, embd %lld, layers %lld (+%lld MTP), heads %lld/%lld x %lld, "
           "experts %lld top-%lld ffn %lld, dense ffn %lld, ctx %lld, %s output\n", h->arch_name,
           (long long)h->n_vocab, (long long)h->n_embd, (long long)h->n_layer, (long long)h->n_nextn,
           (long long)h->n_head, (long long)h->n_head_kv, (long long)h->head_dim_k,
           (long long)h->n_expert, (long long)h->n_expert_used, (long long)h->n_ff_exp,
           (long long)h->n_ff, (long long)h->n_ctx_train, h->tied_output ? "tied" : "untied");
    st_model_desc_free(d);
}

static int usage(FILE *f)
{
    fputs("usage: strata inspect FILE.gguf [--no-tensors] [--full]\n"
          "  Print a GGUF file's metadata and tensor table (like gguf-dump).\n"
          "  --no-tensors  metadata only\n"
          "  --full        print long strings and arrays in full\n", f);
    return f == stdout ? 0 : 2;   /* --help asked for it: not an error */
}

int st_cli_inspect(int argc, char **argv)
{
    const char *path = NULL;
    bool tensors = true, full = false;
    if (st_cli_wants_help(argc, argv))
        return usage(stdout);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-tensors") == 0)
            tensors = false;
        else if (strcmp(argv[i], "--full") == 0)
            full = true;
        else if (argv[i][0] == '-' || path)
            return usage(stderr);
        else
            path = argv[i];
    }
    if (!path)
        return usage(stderr);
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    if (st_gguf_open(path, &g, &err) != ST_OK) {
        fprintf(stderr, "strata inspect: %s: %s\n", path, err.msg);
        return 1;
    }
    printf("* File %s: GGUF v%u, %zu bytes, alignment %u, tensor data at offset %zu, "
           "strict layout: %s\n", path, st_gguf_version(g), st_gguf_file_size(g),
           st_gguf_alignment(g), st_gguf_data_offset(g), st_gguf_is_strict_layout(g) ? "yes" : "no");
    print_kvs(g, full);
    if (tensors)
        print_tensors(g);
    print_summary(g);
    st_gguf_close(g);
    return 0;
}
