/* runner_model_text.c -- the text side of the model runner: a tokenizer
 * and a chat template built from the GGUF's tokenizer.* keys, and the
 * OpenAI messages JSON turned into st_chat_msg views for the renderer.
 *
 * GGUF keys read (docs/design/ENGINE.md 5.1): tokenizer.ggml.tokens (required),
 * token_type, merges, bos_token_id, eos_token_id, padding_token_id,
 * add_bos_token, add_eos_token, pre; tokenizer.chat_template. Only byte-level BPE
 * ("gpt2" model) is supported.
 *
 * Everything here is read-only after st_runner_model_text_init, so HTTP
 * threads may call it while the engine steps.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "runner/runner_model.h"
#include "strata/gguf.h"
#include "strata/log.h"

/* ---- tokenizer from GGUF ------------------------------------------------ */

static int32_t key_id(const struct st_gguf *g, const char *key)
{
    int64_t v;
    const struct st_gguf_kv *kv = st_gguf_find_kv(g, key);
    return kv && st_gguf_kv_i64(kv, &v) && v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
}

/* Views of a string array (borrowed from the mapping); owned array. */
static enum st_status str_array(const struct st_gguf *g, const char *key, bool required,
                                struct st_str **out, int32_t *n, struct st_err *err)
{
    const struct st_gguf_kv *kv = st_gguf_find_kv(g, key);
    *out = NULL;
    *n = 0;
    if (!kv || st_gguf_arr_type(kv) != ST_GGUF_STRING || st_gguf_arr_n(kv) > INT32_MAX) {
        if (!required && !kv)
            return ST_OK;
        return st_err_set(err, ST_ERR_BAD_MODEL, "model: '%s' is missing or not a string "
                          "array", key);
    }
    uint64_t count = st_gguf_arr_n(kv);
    *out = malloc((count ? count : 1) * sizeof(**out));
    if (!*out)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %s", key);
    for (uint64_t i = 0; i < count; i++)
        (void)st_gguf_arr_str(kv, i, &(*out)[i]);
    *n = (int32_t)count;
    return ST_OK;
}

/* token_type as int32 (NULL when absent: all NORMAL). */
static enum st_status type_array(const struct st_gguf *g, int32_t n, int32_t **out,
                                 struct st_err *err)
{
    const struct st_gguf_kv *kv = st_gguf_find_kv(g, "tokenizer.ggml.token_type");
    *out = NULL;
    if (!kv)
        return ST_OK;
    if (st_gguf_arr_n(kv) != (uint64_t)n)
        return st_err_set(err, ST_ERR_BAD_MODEL, "model: tokenizer.ggml.token_type has %llu "
                          "entries for %d tokens", (unsigned long long)st_gguf_arr_n(kv), (int)n);
    *out = malloc((size_t)(n ? n : 1) * sizeof(**out));
    if (!*out)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for token types");
    for (int32_t i = 0; i < n; i++) {
        int64_t v = 1;
        (void)st_gguf_arr_i64(kv, (uint64_t)i, &v);
        (*out)[i] = (int32_t)v;
    }
    return ST_OK;
}

/* The vocabulary's arrays (owned copies of the views; the caller frees
 * them, set or not). */
static enum st_status tok_arrays(const struct st_gguf *g, struct st_tok_desc *d,
                                 struct st_str **tokens, struct st_str **merges, int32_t **types,
                                 struct st_err *err)
{
    ST_TRY(str_array(g, "tokenizer.ggml.tokens", true, tokens, &d->n_tokens, err));
    ST_TRY(str_array(g, "tokenizer.ggml.merges", false, merges, &d->n_merges, err));
    return type_array(g, d->n_tokens, types, err);
}

static enum st_status build_tok(struct model_runner *r, const struct st_gguf *g,
                                struct st_err *err)
{
    struct st_str model = { 0 }, pre = { 0 };
    const struct st_gguf_kv *kv = st_gguf_find_kv(g, "tokenizer.ggml.model");
    if (kv && st_gguf_kv_str(kv, &model) && !st_str_eq_c(model, "gpt2"))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "model: tokenizer '%.*s' is not supported "
                          "(strata reads byte-level BPE, tokenizer.ggml.model = gpt2)",
                          (int)model.len, model.ptr);
    struct st_tok_desc d = { .bos_id = key_id(g, "tokenizer.ggml.bos_token_id"),
                             .eos_id = key_id(g, "tokenizer.ggml.eos_token_id"),
                             .pad_id = key_id(g, "tokenizer.ggml.padding_token_id") };
    struct st_str *tokens = NULL, *merges = NULL;
    int32_t *types = NULL;
    char pre_c[32] = "";
    kv = st_gguf_find_kv(g, "tokenizer.ggml.add_bos_token");
    (void)(kv && st_gguf_kv_bool(kv, &d.add_bos));
    kv = st_gguf_find_kv(g, "tokenizer.ggml.add_eos_token");
    (void)(kv && st_gguf_kv_bool(kv, &d.add_eos));
    kv = st_gguf_find_kv(g, "tokenizer.ggml.pre");
    if (kv && st_gguf_kv_str(kv, &pre) && pre.len < sizeof(pre_c)) {
        memcpy(pre_c, pre.ptr, pre.len);
        pre_c[pre.len] = '\0';
        d.pre = pre_c;
    }
    enum st_status rc = tok_arrays(g, &d, &tokens, &merges, &types, err);
    d.tokens = tokens;
    d.merges = merges;
    d.types = types;
    if (rc == ST_OK)
        rc = st_tok_new(&d, &r->tok, err);
    free(tokens);
    free(merges);
    free(types);
    return rc;
}

/* FIM ids: the GGUF keys (llama.cpp's current names, then the deprecated
 * prefix/suffix/middle ones), the rest found by token text (strata/fim.h). */
static void build_fim(struct model_runner *r, const struct st_gguf *g)
{
    struct st_fim_ids *f = &r->fim;
    f->pre = key_id(g, "tokenizer.ggml.fim_pre_token_id");
    f->suf = key_id(g, "tokenizer.ggml.fim_suf_token_id");
    f->mid = key_id(g, "tokenizer.ggml.fim_mid_token_id");
    f->pad = key_id(g, "tokenizer.ggml.fim_pad_token_id");
    f->rep = key_id(g, "tokenizer.ggml.fim_rep_token_id");
    f->sep = key_id(g, "tokenizer.ggml.fim_sep_token_id");
    if (f->pre < 0)
        f->pre = key_id(g, "tokenizer.ggml.prefix_token_id");
    if (f->suf < 0)
        f->suf = key_id(g, "tokenizer.ggml.suffix_token_id");
    if (f->mid < 0)
        f->mid = key_id(g, "tokenizer.ggml.middle_token_id");
    int32_t n = st_tok_n_vocab(r->tok);
    int32_t *ids[] = { &f->pre, &f->suf, &f->mid, &f->pad, &f->rep, &f->sep };
    for (size_t i = 0; i < ST_ARRAY_LEN(ids); i++)
        if (*ids[i] >= n)
            *ids[i] = -1;   /* a key past the vocabulary: as if absent */
    st_fim_detect(r->tok, f);
}

/* NUL-terminated text of token 'id' into buf (empty when none or too long). */
static const char *token_text(const struct st_tok *tok, int32_t id, char *buf, size_t cap)
{
    struct st_str s = id >= 0 ? st_tok_piece(tok, id) : (struct st_str){ NULL, 0 };
    buf[0] = '\0';
    if (s.ptr && s.len < cap) {
        memcpy(buf, s.ptr, s.len);
        buf[s.len] = '\0';
    }
    return buf[0] ? buf : NULL;
}

enum st_status st_runner_model_text_init(struct model_runner *r, struct st_err *err)
{
    const struct st_gguf *g = st_model_gguf(r->model);
    enum st_status rc = build_tok(r, g, err);
    if (rc != ST_OK)
        return rc;
    build_fim(r, g);
    struct st_str src = { NULL, 0 }, name = { NULL, 0 };
    const struct st_gguf_kv *kv = st_gguf_find_kv(g, "tokenizer.chat_template");
    if (kv)
        (void)st_gguf_kv_str(kv, &src);
    char bos[64], eos[64], model_name[96] = "model";
    kv = st_gguf_find_kv(g, "general.name");
    if (kv && st_gguf_kv_str(kv, &name) && name.len < sizeof(model_name)) {
        memcpy(model_name, name.ptr, name.len);
        model_name[name.len] = '\0';
    }
    rc = st_chat_tmpl_load(&r->tmpl, src.ptr, src.len,
                           token_text(r->tok, st_tok_bos(r->tok), bos, sizeof(bos)),
                           token_text(r->tok, st_tok_eos(r->tok), eos, sizeof(eos)), model_name,
                           err);
    if (rc != ST_OK)
        return rc;
    /* Such a model still serves requests that carry tools (clients such as
     * coding agents send them with every request), so the operator is told
     * once, here, rather than each client refused. */
    if (!st_chat_renders_tools(&r->tmpl))
        st_log(ST_LOG_WARN, "chat", "%s: its chat template is rendered as %s, which has no place "
               "for tools: requests' tools will be left out of the prompt (docs/TOKENIZER.md)",
               st_model_path(r->model),
               r->tmpl.jinja ? "its own Jinja" : st_chat_kind_name(r->tmpl.kind));
    return ST_OK;
}

/* ---- runner ops: tokens ----------------------------------------------------- */

static const struct model_runner *mr(const struct st_runner *r)
{
    return (const struct model_runner *)r;
}

enum st_status st_runner_model_tokenize(const struct st_runner *r, const char *text, size_t len,
                                        bool add_special, bool parse_special, int32_t **ids,
                                        size_t *n_ids, struct st_err *err)
{
    return st_tok_encode(mr(r)->tok, text, len, add_special, parse_special, ids, n_ids, err);
}

/* Special tokens show as their text (llama-server's /detokenize does too). */
enum st_status st_runner_model_detokenize(const struct st_runner *r, const int32_t *ids,
                                          size_t n_ids, char **text, struct st_err *err)
{
    size_t len;
    return st_tok_decode(mr(r)->tok, ids, n_ids, true, text, &len, err);
}

/* Generated text: CONTROL and UNUSED (padding) tokens add nothing, as in
 * llama.cpp's token_to_piece without 'special'; everything else adds its
 * raw bytes. */
size_t st_runner_model_max_token_bytes(const struct st_runner *r)
{
    return st_tok_max_input_bytes(mr(r)->tok);
}

size_t st_runner_model_token_piece(const struct st_runner *r, int32_t token, char *buf,
                                   size_t cap)
{
    const struct st_tok *tok = mr(r)->tok;
    enum st_tok_type type = st_tok_type_of(tok, token);
    /* control tokens make no text, except the markers a reply parser reads
     * (Mistral's [TOOL_CALLS], [THINK]: llama.cpp's "preserved tokens") */
    if ((type == ST_TOK_CONTROL && !st_tok_is_marker(tok, token)) || type == ST_TOK_UNUSED ||
        type == ST_TOK_UNDEFINED)
        return 0;
    struct st_str s = st_tok_piece(tok, token);
    memcpy(buf, s.ptr ? s.ptr : "", s.len < cap ? s.len : cap);
    return s.len;
}

bool st_runner_model_is_eog(const struct st_runner *r, int32_t token)
{
    return st_tok_is_eog(mr(r)->tok, token);
}

size_t st_runner_model_eog_ids(const struct st_runner *r, const int32_t **ids)
{
    size_t n = 0;
    *ids = st_tok_eog_ids(mr(r)->tok, &n);
    return n;
}

void st_runner_model_fim_ids(const struct st_runner *r, struct st_fim_ids *out)
{
    *out = mr(r)->fim;
}

/* ---- runner ops: chat template ------------------------------------------- */

/* Owned strings made while converting messages (joined content parts,
 * re-printed tool_calls), freed after the render. */
struct scratch {
    char  **s;
    size_t  n, cap;
};

static struct st_str keep(struct scratch *sc, char *owned)
{
    if (!owned)
        return (struct st_str){ NULL, 0 };
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 8;
        char **s = realloc(sc->s, cap * sizeof(*s));
        if (!s) {
            free(owned);
            return (struct st_str){ NULL, 0 };
        }
        sc->s = s;
        sc->cap = cap;
    }
    sc->s[sc->n++] = owned;
    return st_str_c(owned);
}

static struct st_str str_member(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? st_str_c(v->valuestring) : (struct st_str){ NULL, 0 };
}

/* content: a string, null, or an array of parts whose "text" members join. */
static struct st_str content_of(const cJSON *msg, struct scratch *sc)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (cJSON_IsString(c))
        return st_str_c(c->valuestring);
    if (!cJSON_IsArray(c))
        return (struct st_str){ NULL, 0 };
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_buf_append(&b, "", 0);
    const cJSON *part;
    cJSON_ArrayForEach(part, c) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (rc == ST_OK && cJSON_IsString(t))
            rc = st_buf_append(&b, t->valuestring, strlen(t->valuestring));
    }
    if (rc != ST_OK) {
        st_buf_fini(&b);
        return (struct st_str){ NULL, 0 };
    }
    return keep(sc, st_buf_steal(&b));
}

static enum st_status to_msgs(const cJSON *arr, struct st_chat_msg *msgs, struct scratch *sc,
                              struct st_err *err)
{
    size_t i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, arr) {
        struct st_chat_msg *o = &msgs[i];
        if (!cJSON_IsObject(m) || !(o->role = str_member(m, "role")).ptr)
            return st_err_set(err, ST_ERR_INVALID, "messages[%zu]: needs a string 'role'", i);
        o->content = content_of(m, sc);
        o->reasoning_content = str_member(m, "reasoning_content");
        if (!o->reasoning_content.ptr)   /* vLLM's and OpenRouter's name for it */
            o->reasoning_content = str_member(m, "reasoning");
        o->tool_call_id = str_member(m, "tool_call_id");
        o->name = str_member(m, "name");
        const cJSON *tc = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (cJSON_IsArray(tc) && cJSON_GetArraySize(tc) > 0)
            o->tool_calls = keep(sc, cJSON_PrintUnformatted(tc));
        i++;
    }
    return ST_OK;
}

/* chat_template_kwargs the renderers read: enable_thinking (Qwen3) and
 * date_string (Llama 3.1+; kept in the scratch list). */
static enum st_status template_kwargs(const cJSON *kw, struct st_chat_req *req,
                                      struct scratch *sc, struct st_err *err)
{
    enum st_status rc = ST_OK;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(kw, "enable_thinking");
    req->enable_thinking = cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
    v = cJSON_GetObjectItemCaseSensitive(kw, "date_string");
    if (cJSON_IsString(v)) {
        req->date_string = keep(sc, strdup(v->valuestring));
        if (!req->date_string.ptr)
            rc = st_err_set(err, ST_ERR_NOMEM, "no memory for chat_template_kwargs.date_string");
    }
    return rc;
}

/* The messages read into msgs[n] (their copies kept in sc), then rendered
 * into out (a string even when empty). */
static enum st_status render(const struct st_runner *r, const struct st_chat_request *chat,
                             enum st_chat_ending ending, struct st_chat_msg *msgs, size_t n,
                             struct scratch *sc, struct st_buf *out, struct st_err *err)
{
    struct st_chat_req req = { .msgs = msgs, .n_msgs = n,
                               .add_generation_prompt = ending == ST_CHAT_END_GENERATE,
                               .continue_final = ending == ST_CHAT_END_CONTINUE,
                               .tools = chat->tools ? st_str_c(chat->tools)
                                                    : (struct st_str){ NULL, 0 },
                               .kwargs = chat->kwargs };
    ST_TRY(to_msgs(chat->messages, msgs, sc, err));
    ST_TRY(template_kwargs(chat->kwargs, &req, sc, err));
    ST_TRY(st_chat_render(&mr(r)->tmpl, &req, out, err));
    return out->data ? ST_OK : st_buf_append(out, "", 0);
}

enum st_status st_runner_model_apply_template(const struct st_runner *r,
                                              const struct st_chat_request *chat,
                                              enum st_chat_ending ending, char **prompt,
                                              struct st_err *err)
{
    const cJSON *arr = chat->messages;
    if (!cJSON_IsArray(arr))
        return st_err_set(err, ST_ERR_INVALID, "'messages' must be a JSON array");
    size_t n = (size_t)cJSON_GetArraySize(arr);
    struct st_chat_msg *msgs = calloc(n ? n : 1, sizeof(*msgs));
    struct scratch sc = { 0 };
    struct st_buf out;
    st_buf_init(&out);
    enum st_status rc = msgs ? render(r, chat, ending, msgs, n, &sc, &out, err)
                             : st_err_set(err, ST_ERR_NOMEM, "no memory for %zu messages", n);
    for (size_t i = 0; i < sc.n; i++)
        free(sc.s[i]);
    free(sc.s);
    free(msgs);
    if (rc != ST_OK) {
        st_buf_fini(&out);
        return rc;
    }
    *prompt = st_buf_steal(&out);
    return ST_OK;
}
