/* hf_tokenizer.c -- TEST support: tokenizer.json -> struct st_tok_desc ->
 * st_tok_new (see hf_tokenizer.h). Uses cJSON; fine for tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_tokenizer.h"

char *hf_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        if (buf) {
            buf[n] = '\0';
            if (len)
                *len = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

static cJSON *parse_file(const char *path)
{
    size_t len;
    char *text = hf_read_file(path, &len);
    cJSON *j = text ? cJSON_ParseWithLength(text, len) : NULL;

    free(text);
    return j;
}

/* A token name from tokenizer_config.json: a string or {"content": ...}. */
static const char *config_token(const cJSON *cfg, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);

    if (cJSON_IsObject(v))
        v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int looks_control(const char *s)
{
    size_t n = strlen(s);
    return n >= 4 && s[0] == '<' && s[1] == '|' && s[n - 2] == '|' && s[n - 1] == '>';
}

struct loaded {
    struct st_str *tokens;
    int32_t       *types;
    struct st_str *merges;
    char         **merge_bufs;
    int32_t        n_tokens, n_merges;
};

static void loaded_free(struct loaded *l)
{
    int32_t i;

    for (i = 0; l->merge_bufs && i < l->n_merges; i++)
        free(l->merge_bufs[i]);
    free(l->merge_bufs);
    free(l->merges);
    free(l->tokens);
    free(l->types);
}

static int fill_vocab(struct loaded *l, const cJSON *vocab, const cJSON *added)
{
    const cJSON *it;
    int32_t max_id = -1;

    cJSON_ArrayForEach(it, vocab)
        if (it->valueint > max_id)
            max_id = it->valueint;
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsNumber(id) && id->valueint > max_id)
            max_id = id->valueint;
    }
    l->n_tokens = max_id + 1;
    l->tokens = calloc((size_t)l->n_tokens, sizeof(*l->tokens));
    l->types = calloc((size_t)l->n_tokens, sizeof(*l->types));
    if (!l->tokens || !l->types)
        return -1;
    cJSON_ArrayForEach(it, vocab) {
        l->tokens[it->valueint] = st_str_c(it->string);
        l->types[it->valueint] = ST_TOK_NORMAL;
    }
    cJSON_ArrayForEach(it, added) {
        int32_t id = cJSON_GetObjectItemCaseSensitive(it, "id")->valueint;
        const char *content = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        int special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
        l->tokens[id] = st_str_c(content);
        l->types[id] = (special || looks_control(content)) ? ST_TOK_CONTROL : ST_TOK_USER_DEFINED;
    }
    return 0;
}

static int fill_merges(struct loaded *l, const cJSON *merges)
{
    const cJSON *it;
    int32_t i = 0;

    l->n_merges = cJSON_GetArraySize(merges);
    l->merges = calloc((size_t)l->n_merges + 1, sizeof(*l->merges));
    l->merge_bufs = calloc((size_t)l->n_merges + 1, sizeof(char *));
    if (!l->merges || !l->merge_bufs)
        return -1;
    cJSON_ArrayForEach(it, merges) {
        if (cJSON_IsString(it)) {
            l->merges[i++] = st_str_c(it->valuestring);
            continue;
        }
        const char *a = cJSON_GetArrayItem(it, 0)->valuestring;
        const char *b = cJSON_GetArrayItem(it, 1)->valuestring;
        size_t n = strlen(a) + strlen(b) + 2;
        l->merge_bufs[i] = malloc(n);
        if (!l->merge_bufs[i])
            return -1;
        snprintf(l->merge_bufs[i], n, "%s %s", a, b);
        l->merges[i] = st_str_c(l->merge_bufs[i]);
        i++;
    }
    return 0;
}

static int32_t find_token(const struct loaded *l, const char *s)
{
    int32_t i;

    for (i = 0; s && i < l->n_tokens; i++)
        if (l->tokens[i].ptr && st_str_eq_c(l->tokens[i], s))
            return i;
    return -1;
}

enum st_status hf_tokenizer_load(const char *json_path, const char *config_path,
                                 struct st_tok **out, char **chat_template,
                                 struct st_err *err)
{
    cJSON *j = parse_file(json_path), *cfg = config_path ? parse_file(config_path) : NULL;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    struct loaded l;
    struct st_tok_desc d;
    enum st_status rc;

    memset(&l, 0, sizeof(l));
    memset(&d, 0, sizeof(d));
    if (chat_template)
        *chat_template = NULL;
    if (!j || !model || (config_path && !cfg)) {
        cJSON_Delete(j);
        cJSON_Delete(cfg);
        return st_err_set(err, ST_ERR_IO, "cannot read %s", j ? config_path : json_path);
    }
    if (fill_vocab(&l, cJSON_GetObjectItemCaseSensitive(model, "vocab"),
                   cJSON_GetObjectItemCaseSensitive(j, "added_tokens")) != 0 ||
        fill_merges(&l, cJSON_GetObjectItemCaseSensitive(model, "merges")) != 0) {
        rc = st_err_set(err, ST_ERR_NOMEM, "out of memory loading %s", json_path);
        goto out;
    }
    d.n_tokens = l.n_tokens;
    d.tokens = l.tokens;
    d.types = l.types;
    d.n_merges = l.n_merges;
    d.merges = l.merges;
    d.bos_id = find_token(&l, config_token(cfg, "bos_token"));
    d.eos_id = find_token(&l, config_token(cfg, "eos_token"));
    d.pad_id = find_token(&l, config_token(cfg, "pad_token"));
    d.add_bos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token"));
    d.pre = "qwen2";
    rc = st_tok_new(&d, out, err);
    if (rc == ST_OK && chat_template && config_token(cfg, "chat_template"))
        *chat_template = strdup(config_token(cfg, "chat_template"));
out:
    loaded_free(&l);
    cJSON_Delete(j);
    cJSON_Delete(cfg);
    return rc;
}
