/* make_vocab_hf.c -- import a Hugging Face tokenizer.json (byte-level BPE)
 * for make-model --vocab.
 *
 * Reads model.vocab ({token: id}), model.merges ("a b" strings or [a, b]
 * pairs; written as "a b"), added_tokens ({id, content, special}). Types
 * follow the GGUF converter (docs/design/ENGINE.md 5.1): vocab entries NORMAL; added
 * tokens CONTROL when special or shaped like <|...|>, else USER_DEFINED;
 * holes in the id range become [PAD<i>] UNUSED.
 *
 * Beside the file, when present: tokenizer_config.json gives chat_template,
 * bos/eos/pad tokens and add_bos_token; config.json gives vocab_size (the
 * padded embedding row count) and bos/eos ids. Without config.json, a
 * Qwen2/3 vocabulary (<|im_start|> = 151644) is padded to Qwen's 151936.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/synth/synth.h"
#include "strata/xalloc.h"

#define MAX_JSON_BYTES (512u << 20)
#define MAX_VOCAB (1 << 22)
#define QWEN_VOCAB 151936

/* Parse a JSON file; NULL if absent (optional) or an error. */
static enum st_status load_json(const char *path, bool optional, cJSON **out, struct st_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return optional ? ST_OK : st_err_errno(err, ST_ERR_IO, "open %s", path);
    enum st_status rc = ST_OK;
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || (unsigned long)n > MAX_JSON_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        rc = st_err_set(err, ST_ERR_INVALID, "%s: unreadable or larger than 512 MiB", path);
    } else if (!(buf = malloc((size_t)n + 1))) {
        rc = st_err_set(err, ST_ERR_NOMEM, "no memory to read %s", path);
    } else if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        rc = st_err_errno(err, ST_ERR_IO, "read %s", path);
    } else {
        buf[n] = 0;
        *out = cJSON_ParseWithLength(buf, (size_t)n);
        if (!*out)
            rc = st_err_set(err, ST_ERR_INVALID, "%s: not valid JSON", path);
    }
    free(buf);
    fclose(f);
    return rc;
}

/* dir/name for the file beside 'path'. */
static void sibling(const char *path, const char *name, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path + 1) : 0;
    snprintf(out, cap, "%.*s%s", dlen, path, name);
}

static enum st_status set_token(struct st_mm_vocab *v, int64_t id, const char *s, int32_t type,
                                const char *path, struct st_err *err)
{
    if (id < 0 || id >= v->n)
        return st_err_set(err, ST_ERR_INVALID, "%s: token id %lld out of range", path, (long long)id);
    free(v->tokens[id]);
    v->tokens[id] = st_xstrdup(s);
    v->types[id] = type;
    return ST_OK;
}

/* Largest id in model.vocab and added_tokens, + 1. */
static int64_t count_ids(const cJSON *vocab, const cJSON *added)
{
    int64_t n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        if (cJSON_IsNumber(it))
            n = ST_MAX(n, (int64_t)it->valuedouble + 1);
    }
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsNumber(id))
            n = ST_MAX(n, (int64_t)id->valuedouble + 1);
    }
    return n;
}

static enum st_status read_merges(struct st_mm_vocab *v, const cJSON *merges, const char *path,
                                  struct st_err *err)
{
    int n = cJSON_GetArraySize(merges);
    v->merges = st_xcalloc((size_t)ST_MAX(n, 1), sizeof(*v->merges));
    const cJSON *it;
    cJSON_ArrayForEach(it, merges) {
        if (cJSON_IsString(it)) {
            v->merges[v->n_merges++] = st_xstrdup(it->valuestring);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
            const char *a = cJSON_GetArrayItem(it, 0)->valuestring;
            const char *b = cJSON_GetArrayItem(it, 1)->valuestring;
            char *m = st_xmalloc(strlen(a) + strlen(b) + 2);
            sprintf(m, "%s %s", a, b);
            v->merges[v->n_merges++] = m;
        } else {
            return st_err_set(err, ST_ERR_INVALID, "%s: merge #%lld is neither \"a b\" nor [a, b]",
                              path, (long long)v->n_merges);
        }
    }
    return ST_OK;
}

static bool looks_control(const char *s)
{
    size_t n = strlen(s);
    return n >= 4 && strncmp(s, "<|", 2) == 0 && strcmp(s + n - 2, "|>") == 0;
}

static enum st_status read_tokens(struct st_mm_vocab *v, const cJSON *vocab, const cJSON *added,
                                  const char *path, struct st_err *err)
{
    const cJSON *it;
    enum st_status rc = ST_OK;
    cJSON_ArrayForEach(it, vocab) {
        if (!cJSON_IsNumber(it))
            return st_err_set(err, ST_ERR_INVALID, "%s: vocab entry is not a number", path);
        rc = set_token(v, (int64_t)it->valuedouble, it->string, 1, path, err);
        if (rc != ST_OK)
            return rc;
    }
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *special = cJSON_GetObjectItemCaseSensitive(it, "special");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(content))
            return st_err_set(err, ST_ERR_INVALID, "%s: added token without id/content", path);
        int32_t type = cJSON_IsTrue(special) || looks_control(content->valuestring) ? 3 : 4;
        rc = set_token(v, (int64_t)id->valuedouble, content->valuestring, type, path, err);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

static int32_t find_token(const struct st_mm_vocab *v, const char *s)
{
    for (int64_t i = v->n - 1; s && i >= 0; i--) {
        if (strcmp(v->tokens[i], s) == 0)
            return (int32_t)i;
    }
    return -1;
}

/* A tokenizer_config.json token field: "text" or {"content": "text"}. */
static const char *cfg_token(const cJSON *cfg, const char *key)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(t))
        t = cJSON_GetObjectItemCaseSensitive(t, "content");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

static int32_t cfg_id(const cJSON *cfg, const char *key, int32_t def)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsNumber(t) ? (int32_t)t->valuedouble : def;
}

static void read_config(struct st_mm_vocab *v, const cJSON *tcfg, const cJSON *cfg)
{
    const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(tcfg, "chat_template");
    if (cJSON_IsArray(tpl)) {                    /* [{name, template}]: take "default" */
        const cJSON *it, *pick = NULL;
        cJSON_ArrayForEach(it, tpl) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
            if (!pick || (cJSON_IsString(name) && strcmp(name->valuestring, "default") == 0))
                pick = it;
        }
        tpl = pick ? cJSON_GetObjectItemCaseSensitive(pick, "template") : NULL;
    }
    if (cJSON_IsString(tpl))
        v->chat_template = st_xstrdup(tpl->valuestring);
    int32_t eot = find_token(v, "<|endoftext|>"), im_end = find_token(v, "<|im_end|>");
    int32_t bos = find_token(v, cfg_token(tcfg, "bos_token"));
    int32_t eos = find_token(v, cfg_token(tcfg, "eos_token"));
    int32_t pad = find_token(v, cfg_token(tcfg, "pad_token"));
    v->bos = bos >= 0 ? bos : cfg_id(cfg, "bos_token_id", eot >= 0 ? eot : 0);
    v->eos = eos >= 0 ? eos : cfg_id(cfg, "eos_token_id", im_end >= 0 ? im_end : ST_MAX(eot, 0));
    v->pad = pad >= 0 ? pad : eot >= 0 ? eot : v->eos;
    v->add_bos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tcfg, "add_bos_token"));
}

/* How many rows the vocabulary is padded to (see the file comment). */
static int64_t padded_size(const struct st_mm_vocab *v, const cJSON *cfg, int64_t want)
{
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(cfg, "vocab_size");
    if (want > 0)
        return want;
    if (cJSON_IsNumber(vs))
        return (int64_t)vs->valuedouble;
    if (v->n <= QWEN_VOCAB && v->n > 151644 && strcmp(v->tokens[151644], "<|im_start|>") == 0)
        return QWEN_VOCAB;
    return v->n;
}

static enum st_status build(struct st_mm_vocab *v, const cJSON *tok, const cJSON *tcfg,
                            const cJSON *cfg, const char *path, int64_t pad_to, struct st_err *err)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(tok, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(tok, "added_tokens");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges) ||
        (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "BPE") == 0)))
        return st_err_set(err, ST_ERR_INVALID, "%s: not a BPE tokenizer.json (model.vocab, "
                          "model.merges)", path);
    int64_t n = count_ids(vocab, added);
    if (n <= 0 || n > MAX_VOCAB)
        return st_err_set(err, ST_ERR_INVALID, "%s: %lld tokens is not a usable vocabulary",
                          path, (long long)n);
    v->n = n;
    v->tokens = st_xcalloc((size_t)n, sizeof(*v->tokens));
    v->types = st_xcalloc((size_t)n, sizeof(*v->types));
    ST_TRY(read_tokens(v, vocab, added, path, err));
    ST_TRY(read_merges(v, merges, path, err));
    int64_t total = padded_size(v, cfg, pad_to);
    if (total < v->n || total > MAX_VOCAB)
        return st_err_set(err, ST_ERR_INVALID, "vocab size %lld is smaller than the %lld tokens",
                          (long long)total, (long long)v->n);
    v->tokens = st_xrealloc(v->tokens, (size_t)total * sizeof(*v->tokens));
    v->types = st_xrealloc(v->types, (size_t)total * sizeof(*v->types));
    for (int64_t i = v->n; i < total; i++)
        v->tokens[i] = NULL;
    v->n = total;
    for (int64_t i = 0; i < v->n; i++) {
        if (!v->tokens[i]) {
            char pad[32];
            snprintf(pad, sizeof(pad), "[PAD%lld]", (long long)i);
            v->tokens[i] = st_xstrdup(pad);
            v->types[i] = 5;
        }
    }
    read_config(v, tcfg, cfg);
    return ST_OK;
}

/* tokenizer.json at path and its two optional siblings into the three
 * trees (the caller deletes them), then the vocabulary from them. */
static enum st_status import(struct st_mm_vocab *v, const char *path, int64_t n_vocab_pad,
                             cJSON **tok, cJSON **tcfg, cJSON **cfg, struct st_err *err)
{
    char side[4096];
    ST_TRY(load_json(path, false, tok, err));
    sibling(path, "tokenizer_config.json", side, sizeof(side));
    ST_TRY(load_json(side, true, tcfg, err));
    sibling(path, "config.json", side, sizeof(side));
    ST_TRY(load_json(side, true, cfg, err));
    return build(v, *tok, *tcfg, *cfg, path, n_vocab_pad, err);
}

enum st_status st_mm_vocab_import(struct st_mm_vocab *v, const char *path, int64_t n_vocab_pad,
                                  struct st_err *err)
{
    cJSON *tok = NULL, *tcfg = NULL, *cfg = NULL;
    memset(v, 0, sizeof(*v));
    v->fim_first = -1;   /* no FIM keys: a loader finds them by text (strata/fim.h) */
    enum st_status rc = import(v, path, n_vocab_pad, &tok, &tcfg, &cfg, err);
    cJSON_Delete(tok);
    cJSON_Delete(tcfg);
    cJSON_Delete(cfg);
    if (rc != ST_OK)
        st_mm_vocab_free(v);
    return rc;
}
