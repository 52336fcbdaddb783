/* tokenizer.c -- build a st_tok from plain arrays, and the read-only
 * accessors (pieces, types, eog set, lookup by text).
 *
 * Building: every token is decoded once into raw bytes (one pool), indexed
 * by a hash map; each merge "left right" becomes a (left id, right id) ->
 * (rank, merged id) entry, so BPE works on ids, never on strings. The
 * special tokens (CONTROL, USER_DEFINED, UNKNOWN) are listed longest text
 * first for the special-token split of encode.c.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "strata/tokenizer.h"
#include "strata/xalloc.h"

#include "tok/internal.h"

static bool is_special_type(int32_t t)
{
    return t == ST_TOK_CONTROL || t == ST_TOK_USER_DEFINED || t == ST_TOK_UNKNOWN;
}

void st_tok_free(struct st_tok *tok)
{
    if (!tok)
        return;
    free(tok->pool);
    free(tok->off);
    free(tok->type);
    free(tok->flags);
    st_strmap_fini(&tok->map);
    st_pairmap_fini(&tok->merges);
    free(tok->specials);
    free(tok->eog);
    free(tok);
}

static enum st_status check_desc(const struct st_tok_desc *d, struct st_err *err)
{
    int32_t i;

    if (d->n_tokens <= 0 || !d->tokens)
        return st_err_set(err, ST_ERR_BAD_MODEL, "tokenizer: no tokens");
    if (d->n_merges < 0 || (d->n_merges > 0 && !d->merges))
        return st_err_set(err, ST_ERR_BAD_MODEL, "tokenizer: bad merge count %d",
                          (int)d->n_merges);
    if (d->bos_id < -1 || d->bos_id >= d->n_tokens || d->eos_id < -1 ||
        d->eos_id >= d->n_tokens || d->pad_id < -1 || d->pad_id >= d->n_tokens)
        return st_err_set(err, ST_ERR_BAD_MODEL,
                          "tokenizer: bos/eos/pad id (%d/%d/%d) outside the %d-token vocabulary",
                          (int)d->bos_id, (int)d->eos_id, (int)d->pad_id, (int)d->n_tokens);
    for (i = 0; i < d->n_tokens; i++) {
        if (d->tokens[i].len > 0 && !d->tokens[i].ptr)
            return st_err_set(err, ST_ERR_BAD_MODEL, "tokenizer: token %d has no text", (int)i);
        if (d->types && (d->types[i] < 0 || d->types[i] > ST_TOK_BYTE))
            return st_err_set(err, ST_ERR_BAD_MODEL, "tokenizer: token %d has type %d",
                              (int)i, (int)d->types[i]);
    }
    return ST_OK;
}

/* "<0xAB>" -> 0xAB, else -1 (BYTE tokens of SentencePiece-style vocabs). */
static int byte_token(struct st_str s)
{
    unsigned v = 0;
    size_t i;

    if (s.len != 6 || s.ptr[0] != '<' || s.ptr[1] != '0' || s.ptr[2] != 'x' || s.ptr[5] != '>')
        return -1;
    for (i = 3; i < 5; i++) {
        char c = s.ptr[i];
        v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' :
                                c >= 'A' && c <= 'F' ? c - 'A' + 10 :
                                c >= 'a' && c <= 'f' ? c - 'a' + 10 : 99);
    }
    return v < 256 ? (int)v : -1;
}

/* Decode every token into tok->pool (raw bytes never outgrow the mapped
 * form, so the pool is sized by the total input length). */
static enum st_status build_pool(struct st_tok *tok, const struct st_tok_desc *d)
{
    struct st_buf b;
    enum st_status rc = ST_OK;
    int32_t i;

    st_buf_init(&b);
    for (i = 0; i < d->n_tokens && rc == ST_OK; i++) {
        struct st_str s = d->tokens[i];
        int32_t t = d->types ? d->types[i] : ST_TOK_NORMAL;
        int byte = t == ST_TOK_BYTE ? byte_token(s) : -1;
        tok->off[i] = b.len;
        tok->type[i] = (uint8_t)t;
        tok->flags[i] = is_special_type(t) ? ST_TOKF_SPECIAL : 0;
        if (byte >= 0) {
            char c = (char)byte;
            rc = st_buf_append(&b, &c, 1);
        } else if (is_special_type(t)) {
            rc = st_buf_append(&b, s.ptr, s.len);
        } else {
            rc = st_bytemap_decode(s.ptr, s.len, &b);
        }
    }
    tok->off[d->n_tokens] = b.len;
    if (rc == ST_OK && b.len == 0)
        rc = st_buf_append(&b, "", 0);      /* a pool pointer even if empty */
    tok->pool = st_buf_steal(&b);
    st_buf_fini(&b);
    return rc;
}

static struct st_str piece_of(const struct st_tok *tok, int32_t id)
{
    struct st_str s = { tok->pool + tok->off[id], tok->off[id + 1] - tok->off[id] };
    return s;
}

/* Specials first (first id wins among them), then the rest (first wins). */
static enum st_status build_map(struct st_tok *tok)
{
    enum st_status rc = ST_OK;
    int pass;
    int32_t i;

    rc = st_strmap_init(&tok->map, (size_t)tok->n_vocab);
    for (pass = 0; pass < 2 && rc == ST_OK; pass++) {
        for (i = 0; i < tok->n_vocab && rc == ST_OK; i++) {
            struct st_str s = piece_of(tok, i);
            bool special = tok->flags[i] & ST_TOKF_SPECIAL;
            if (s.len == 0 || special != (pass == 0))
                continue;
            rc = st_strmap_put(&tok->map, s.ptr, s.len, i, false);
        }
    }
    for (i = 0; i < 256 && rc == ST_OK; i++) {
        char c = (char)i;
        tok->byte_ids[i] = st_strmap_get(&tok->map, &c, 1);
    }
    return rc;
}

/* One merge line: "left right", split at the first space after position 0. */
static enum st_status add_merge(struct st_tok *tok, struct st_str m, int32_t rank,
                                struct st_buf *scratch, bool *used)
{
    size_t sp, left_len;
    int32_t l, r, res;

    *used = false;
    for (sp = 1; sp < m.len && m.ptr[sp] != ' '; sp++)
        ;
    if (sp >= m.len)
        return ST_OK;
    st_buf_reset(scratch);
    ST_TRY(st_bytemap_decode(m.ptr, sp, scratch));
    left_len = scratch->len;
    ST_TRY(st_bytemap_decode(m.ptr + sp + 1, m.len - sp - 1, scratch));
    l = st_strmap_get(&tok->map, scratch->data, left_len);
    r = st_strmap_get(&tok->map, scratch->data + left_len, scratch->len - left_len);
    res = st_strmap_get(&tok->map, scratch->data, scratch->len);
    if (l < 0 || r < 0 || res < 0)
        return ST_OK;
    st_pairmap_put(&tok->merges, l, r, rank, res);
    *used = true;
    return ST_OK;
}

static enum st_status build_merges(struct st_tok *tok, const struct st_tok_desc *d)
{
    struct st_buf scratch;
    enum st_status rc;
    int32_t i, skipped = 0;
    bool used;

    rc = st_pairmap_init(&tok->merges, (size_t)d->n_merges);
    st_buf_init(&scratch);
    for (i = 0; i < d->n_merges && rc == ST_OK; i++) {
        rc = add_merge(tok, d->merges[i], i, &scratch, &used);
        skipped += !used;
    }
    st_buf_fini(&scratch);
    if (skipped > 0)
        st_log(ST_LOG_DEBUG, "tok", "%d of %d merges skipped (a part is not a token)",
               (int)skipped, (int)d->n_merges);
    return rc;
}

struct special_key {
    size_t  len;        /* text bytes */
    int32_t id;
};

static int cmp_special(const void *a, const void *b)
{
    const struct special_key *x = a, *y = b;

    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Special tokens sorted by text length, longest first (ties: lower id). */
static enum st_status build_specials(struct st_tok *tok)
{
    struct special_key *keys;
    int32_t i;
    size_t n = 0, k;

    for (i = 0; i < tok->n_vocab; i++)
        n += (tok->flags[i] & ST_TOKF_SPECIAL) && piece_of(tok, i).len > 0;
    keys = malloc((n ? n : 1) * sizeof(*keys));
    tok->specials = malloc((n ? n : 1) * sizeof(int32_t));
    if (!keys || !tok->specials) {
        free(keys);
        return ST_ERR_NOMEM;
    }
    for (i = 0, k = 0; i < tok->n_vocab; i++) {
        if ((tok->flags[i] & ST_TOKF_SPECIAL) && piece_of(tok, i).len > 0) {
            keys[k].len = piece_of(tok, i).len;
            keys[k++].id = i;
        }
    }
    qsort(keys, n, sizeof(*keys), cmp_special);
    for (k = 0; k < n; k++)
        tok->specials[k] = keys[k].id;
    tok->n_specials = n;
    free(keys);
    return ST_OK;
}

/* Texts that end generation besides eos (llama.cpp's list, docs/design/ENGINE.md 5.1). */
static const char *const eog_texts[] = {
    "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end|>",
    "<end_of_turn>", "<|end_of_text|>", "<EOT>", "_<EOT>", "<|return|>",
    "<|call|>",
    /* DeepSeek's <｜end▁of▁sentence｜> (fullwidth bars, U+2581 separators) */
    ("<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"),
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<fim-pad>", "<fim-repo>",
    "<fim-sep>", "<|fim\xe2\x96\x81pad|>",
};

/* Control tokens a reply parser reads (Mistral's; GLM-4.5's, in case a
 * converter typed them CONTROL; Qwen's markers are USER_DEFINED and
 * visible anyway, which the flag does not change). */
static const char *const marker_texts[] = {
    "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]",
    "<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>",
    "<arg_value>", "</arg_value>",
};

/* GLM's turns have no closing token: the model ends its turn by opening
 * the next one (chat/formats/glm45.c), so these end generation too, in a GLM
 * vocabulary (one with the special token "[gMASK]"): its GGUF names
 * <|endoftext|> as eos and these two only as eot / eom. */
static const char *const glm_turn_texts[] = { "<|user|>", "<|observation|>" };

static void mark_special(struct st_tok *tok, const char *text, uint8_t flag)
{
    int32_t id = st_strmap_get(&tok->map, text, strlen(text));
    if (id >= 0 && (tok->flags[id] & ST_TOKF_SPECIAL))
        tok->flags[id] |= flag;
}

static enum st_status build_eog(struct st_tok *tok)
{
    size_t i;
    int32_t id;

    for (i = 0; i < ST_ARRAY_LEN(marker_texts); i++)
        mark_special(tok, marker_texts[i], ST_TOKF_MARKER);
    id = st_strmap_get(&tok->map, "[gMASK]", 7);
    if (id >= 0 && (tok->flags[id] & ST_TOKF_SPECIAL))
        for (i = 0; i < ST_ARRAY_LEN(glm_turn_texts); i++)
            mark_special(tok, glm_turn_texts[i], ST_TOKF_EOG);
    if (tok->eos >= 0)
        tok->flags[tok->eos] |= ST_TOKF_EOG;
    for (i = 0; i < ST_ARRAY_LEN(eog_texts); i++) {
        id = st_strmap_get(&tok->map, eog_texts[i], strlen(eog_texts[i]));
        if (id >= 0)
            tok->flags[id] |= ST_TOKF_EOG;
    }
    for (id = 0; id < tok->n_vocab; id++)
        tok->n_eog += (tok->flags[id] & ST_TOKF_EOG) != 0;
    tok->eog = malloc((tok->n_eog ? tok->n_eog : 1) * sizeof(int32_t));
    if (!tok->eog)
        return ST_ERR_NOMEM;
    tok->n_eog = 0;
    for (id = 0; id < tok->n_vocab; id++)
        if (tok->flags[id] & ST_TOKF_EOG)
            tok->eog[tok->n_eog++] = id;
    return ST_OK;
}

static enum st_pretok parse_pre(const char *pre, bool *known)
{
    *known = true;
    if (!pre || !strcmp(pre, "qwen2") || !strcmp(pre, "deepseek-r1-qwen") ||
        !strcmp(pre, "kormo") || !strcmp(pre, "f2llmv2"))
        return ST_PRETOK_QWEN2;
    /* glm4 / chatglm-bpe (GLM-4, GLM-4.5): llama.cpp's CHATGLM4 regex is
     * llama-bpe's, its contractions spelled '[sS] ... instead of (?i:) */
    if (!strcmp(pre, "llama-bpe") || !strcmp(pre, "llama3") || !strcmp(pre, "llama-v3") ||
        !strcmp(pre, "glm4") || !strcmp(pre, "chatglm-bpe"))
        return ST_PRETOK_LLAMA3;
    if (!strcmp(pre, "gpt2") || !strcmp(pre, "gpt-2"))
        return ST_PRETOK_GPT2;
    if (!strcmp(pre, "tekken"))
        return ST_PRETOK_TEKKEN;
    *known = false;
    return ST_PRETOK_QWEN2;
}

/* The most input bytes one token can stand for, 0 when a byte has no token
 * (BPE drops it, so no count of bytes bounds the tokens from below). A
 * token's raw bytes are the input it covers, except where the input
 * shrinks before BPE: C0 80 becomes one byte (U+0000, strata/mutf8.h), and
 * NFC composes at most 3 bytes into 1 (KELVIN SIGN -> K, Hangul L+V+T
 * jamo -> one syllable). Special tokens match the input after the first
 * step only. Hence piece bytes x 2, x 4 with NFC (one more for margin). */
static size_t max_input_bytes(const struct st_tok *tok)
{
    size_t longest = 0;
    for (int b = 0; b < 256; b++) {
        if (tok->byte_ids[b] < 0)
            return 0;
    }
    for (int32_t id = 0; id < tok->n_vocab; id++)
        longest = ST_MAX(longest, tok->off[id + 1] - tok->off[id]);
    return longest * (tok->nfc ? 4 : 2);
}

/* The tables, in order: the piece pool, the piece map, the merges, the
 * special tokens, the end-of-generation set. */
static enum st_status build_tables(struct st_tok *tok, const struct st_tok_desc *d)
{
    ST_TRY(build_pool(tok, d));
    ST_TRY(build_map(tok));
    ST_TRY(build_merges(tok, d));
    ST_TRY(build_specials(tok));
    return build_eog(tok);
}

enum st_status st_tok_new(const struct st_tok_desc *d, struct st_tok **out,
                          struct st_err *err)
{
    struct st_tok *tok;
    enum st_status rc;
    size_t n;
    bool known;

    *out = NULL;
    rc = check_desc(d, err);
    if (rc != ST_OK)
        return rc;
    n = (size_t)d->n_tokens;
    tok = calloc(1, sizeof(*tok));
    if (!tok)
        return st_err_set(err, ST_ERR_NOMEM, "tokenizer: out of memory");
    tok->n_vocab = d->n_tokens;
    tok->bos = d->bos_id;
    tok->eos = d->eos_id;
    tok->pad = d->pad_id;
    /* GLM's template writes its own "[gMASK]<sop>" (its bos): never add
     * one (llama.cpp drops the bos id for these pre-tokenizers) */
    tok->add_bos = d->add_bos && !(d->pre && (!strcmp(d->pre, "glm4") ||
                                             !strcmp(d->pre, "chatglm-bpe")));
    tok->add_eos = d->add_eos;
    tok->pre = parse_pre(d->pre, &known);
    if (!known)
        st_log(ST_LOG_WARN, "tok", "unknown pre-tokenizer '%s': using qwen2", d->pre);
    tok->nfc = d->norm == ST_TOK_NORM_NFC ||
               (d->norm == ST_TOK_NORM_DEFAULT && tok->pre == ST_PRETOK_QWEN2);
    tok->off = malloc((n + 1) * sizeof(size_t));
    tok->type = malloc(n);
    tok->flags = malloc(n);
    rc = (tok->off && tok->type && tok->flags) ? build_tables(tok, d) : ST_ERR_NOMEM;
    if (rc != ST_OK) {
        st_tok_free(tok);
        return st_err_set(err, rc, "tokenizer: out of memory building a %d-token vocabulary",
                          (int)d->n_tokens);
    }
    tok->max_in = max_input_bytes(tok);
    *out = tok;
    return ST_OK;
}

size_t st_tok_max_input_bytes(const struct st_tok *tok)
{
    return tok->max_in;
}

struct st_str st_tok_piece(const struct st_tok *tok, int32_t id)
{
    struct st_str none = { NULL, 0 };

    if (id < 0 || id >= tok->n_vocab)
        return none;
    return piece_of(tok, id);
}

int32_t st_tok_n_vocab(const struct st_tok *tok) { return tok->n_vocab; }
int32_t st_tok_bos(const struct st_tok *tok) { return tok->bos; }
int32_t st_tok_eos(const struct st_tok *tok) { return tok->eos; }
int32_t st_tok_pad(const struct st_tok *tok) { return tok->pad; }
bool st_tok_add_bos(const struct st_tok *tok) { return tok->add_bos; }

enum st_tok_type st_tok_type_of(const struct st_tok *tok, int32_t id)
{
    if (id < 0 || id >= tok->n_vocab)
        return ST_TOK_UNDEFINED;
    return (enum st_tok_type)tok->type[id];
}

bool st_tok_is_eog(const struct st_tok *tok, int32_t id)
{
    return id >= 0 && id < tok->n_vocab && (tok->flags[id] & ST_TOKF_EOG);
}

bool st_tok_is_marker(const struct st_tok *tok, int32_t id)
{
    return id >= 0 && id < tok->n_vocab && (tok->flags[id] & ST_TOKF_MARKER);
}

const int32_t *st_tok_eog_ids(const struct st_tok *tok, size_t *n)
{
    *n = tok->n_eog;
    return tok->eog;
}

int32_t st_tok_find(const struct st_tok *tok, const char *text, size_t len)
{
    return st_strmap_get(&tok->map, text, len);
}

const char *st_tok_pre_name(const struct st_tok *tok)
{
    switch (tok->pre) {
    case ST_PRETOK_QWEN2:  return "qwen2";
    case ST_PRETOK_LLAMA3: return "llama-bpe";
    case ST_PRETOK_GPT2:   return "gpt2";
    case ST_PRETOK_TEKKEN: return "tekken";
    }
    return "qwen2";
}
