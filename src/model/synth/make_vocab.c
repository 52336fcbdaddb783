/* make_vocab.c -- the built-in byte-level BPE tokenizer of make-model, and
 * writing any tokenizer into GGUF keys (docs/design/ENGINE.md 5.1).
 *
 * Built-in vocabulary, fully deterministic:
 *   ids 0..255      the 256 bytes, in byte order, as GPT-2 byte-to-unicode
 *                   strings (type NORMAL, as the Qwen converter writes them)
 *   256..           one token per learned merge, in merge order
 *   then            <|endoftext|> <|im_start|> <|im_end|> (CONTROL),
 *                   <think> </think> (USER_DEFINED)
 *   then            Qwen's fill-in-the-middle tokens <|fim_prefix|> <|fim_middle|>
 *                   <|fim_suffix|> <|fim_pad|> <|repo_name|> <|file_sep|> (CONTROL,
 *                   as llama.cpp's converter types them: shaped like <|...|>), in
 *                   Qwen2.5's order; left out with fim = false (make-model --no-fim)
 *   then            [PAD<i>] (UNUSED) up to a multiple of 64.
 * The FIM tokens took six of the [PAD] slots, so every earlier id and the
 * vocabulary size (576) are what they were before they were added.
 * st_mm_vocab_glm (make-model's glm-* presets) keeps the bytes and merges
 * and puts GLM-4.5's special tokens where ChatML's and the FIM tokens were
 * (synth.h lists them), with GLM's ids, pre-tokenizer name and a
 * GLM-style chat template.
 * Merges are learned by classic BPE training on make_corpus.c's text: split
 * into chunks (an optional space + letters, single digits, an optional
 * space + other symbols, whitespace runs), count adjacent pairs weighted
 * by chunk frequency, merge the most frequent (ties: lowest ids), repeat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/synth/synth.h"
#include "strata/xalloc.h"

#define N_MERGES 400
#define MAX_SYMS 64                      /* longest chunk kept for training */

const char *st_mm_corpus(void);

static const char chatml_template[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

const char *st_mm_chatml_template(void)
{
    return chatml_template;
}

/* GPT-2 byte-to-unicode: printable Latin-1 bytes map to themselves, the
 * others to U+0100 + n in byte order. Writes UTF-8 (<= 2 bytes) + NUL. */
static void byte_unicode(int b, char out[3])
{
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) {
        cp = b;
    } else {
        int n = 0;
        for (int x = 0; x < b; x++)
            n += !((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174);
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        out[2] = 0;
    }
}

struct word {
    int n;                               /* symbols */
    int sym[MAX_SYMS];                   /* token ids */
    int freq;
};

struct pair_count {
    int a, b, count;
};

static int cls(int ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
        return 1;
    if (ch >= '0' && ch <= '9')
        return 2;
    if (ch == ' ' || ch == '\n' || ch == '\t')
        return 3;
    return 4;
}

/* Length of the chunk starting at s (see the file comment). */
static int chunk_len(const char *s)
{
    int i = 0, c0 = cls((unsigned char)s[0]);
    if (c0 == 2)
        return 1;
    if (s[0] == ' ' && s[1] && cls((unsigned char)s[1]) != 3 && cls((unsigned char)s[1]) != 2)
        i = 1;
    int c = cls((unsigned char)s[i]);
    while (s[i] && cls((unsigned char)s[i]) == c && (c != 2))
        i++;
    return i > 0 ? i : 1;
}

/* Unique chunks of the corpus with their counts. */
static int collect_words(struct word **out)
{
    const char *s = st_mm_corpus();
    int n = 0, cap = 256;
    struct word *w = st_xmalloc((size_t)cap * sizeof(*w));
    while (*s) {
        int len = ST_MIN(chunk_len(s), MAX_SYMS), found = -1;
        for (int i = 0; i < n && found < 0; i++) {
            if (w[i].n != len)
                continue;
            int j = 0;
            while (j < len && w[i].sym[j] == (unsigned char)s[j])
                j++;
            if (j == len)
                found = i;
        }
        if (found >= 0) {
            w[found].freq++;
        } else {
            if (n == cap)
                w = st_xrealloc(w, (size_t)(cap *= 2) * sizeof(*w));
            w[n].n = len;
            w[n].freq = 1;
            for (int j = 0; j < len; j++)
                w[n].sym[j] = (unsigned char)s[j];
            n++;
        }
        s += chunk_len(s);
    }
    *out = w;
    return n;
}

static int cmp_pair(const void *x, const void *y)
{
    const struct pair_count *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* The most frequent adjacent pair (ties: lowest ids); count 0 if none. */
static struct pair_count best_pair(const struct word *w, int nw)
{
    int np = 0;
    for (int i = 0; i < nw; i++)
        np += w[i].n > 1 ? w[i].n - 1 : 0;
    struct pair_count *p = st_xmalloc((size_t)ST_MAX(np, 1) * sizeof(*p)), best = { 0, 0, 0 };
    np = 0;
    for (int i = 0; i < nw; i++)
        for (int j = 0; j + 1 < w[i].n; j++)
            p[np++] = (struct pair_count){ w[i].sym[j], w[i].sym[j + 1], w[i].freq };
    qsort(p, (size_t)np, sizeof(*p), cmp_pair);
    for (int i = 0; i < np;) {
        int j = i, sum = 0;
        while (j < np && p[j].a == p[i].a && p[j].b == p[i].b)
            sum += p[j++].count;
        if (sum > best.count)
            best = (struct pair_count){ p[i].a, p[i].b, sum };
        i = j;
    }
    free(p);
    return best;
}

static void apply_merge(struct word *w, int nw, int a, int b, int id)
{
    for (int i = 0; i < nw; i++) {
        int k = 0;
        for (int j = 0; j < w[i].n; j++) {
            if (j + 1 < w[i].n && w[i].sym[j] == a && w[i].sym[j + 1] == b) {
                w[i].sym[k++] = id;
                j++;
            } else {
                w[i].sym[k++] = w[i].sym[j];
            }
        }
        w[i].n = k;
    }
}

static char *concat2(const char *a, const char *sep, const char *b)
{
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *r = st_xmalloc(la + ls + lb + 1);
    memcpy(r, a, la);
    memcpy(r + la, sep, ls);
    memcpy(r + la + ls, b, lb + 1);
    return r;
}

/* Learn up to N_MERGES merges; tokens[256..] and merges[] grow together. */
static void learn_merges(struct st_mm_vocab *v)
{
    struct word *w;
    int nw = collect_words(&w);
    for (int m = 0; m < N_MERGES; m++) {
        struct pair_count bp = best_pair(w, nw);
        if (bp.count < 2)
            break;
        char *tok = concat2(v->tokens[bp.a], "", v->tokens[bp.b]);
        int id = (int)v->n;
        for (int i = 0; i < v->n; i++) {          /* the same string by another path */
            if (strcmp(v->tokens[i], tok) == 0)
                id = i;
        }
        v->merges[v->n_merges++] = concat2(v->tokens[bp.a], " ", v->tokens[bp.b]);
        if (id == v->n) {
            v->tokens[id] = tok;
            v->types[id] = 1;
            v->n++;
        } else {
            free(tok);
        }
        apply_merge(w, nw, bp.a, bp.b, id);
    }
    free(w);
}

static const char *const fim_texts[] = { "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
                                         "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>" };

static void add_special(struct st_mm_vocab *v, const char *text, int32_t type)
{
    v->tokens[v->n] = st_xstrdup(text);
    v->types[v->n] = type;
    v->n++;
}

/* A vocabulary of room for cap tokens holding the 256 byte tokens and the
 * learned merges; the caller adds its special tokens after them. */
static void vocab_begin(struct st_mm_vocab *v, int64_t cap)
{
    memset(v, 0, sizeof(*v));
    v->tokens = st_xcalloc((size_t)cap, sizeof(*v->tokens));
    v->types = st_xcalloc((size_t)cap, sizeof(*v->types));
    v->merges = st_xcalloc(N_MERGES, sizeof(*v->merges));
    for (int b = 0; b < 256; b++) {
        char s[3];
        byte_unicode(b, s);
        v->tokens[b] = st_xstrdup(s);
        v->types[b] = 1;
    }
    v->n = 256;
    learn_merges(v);
}

enum st_status st_mm_vocab_builtin(struct st_mm_vocab *v, bool fim, struct st_err *err)
{
    static const char *const specials[] = { "<|endoftext|>", "<|im_start|>", "<|im_end|>",
                                            "<think>", "</think>" };
    int64_t cap = 256 + N_MERGES + 5 + 6 + 64;
    vocab_begin(v, cap);
    for (int i = 0; i < 5; i++)
        add_special(v, specials[i], i < 3 ? 3 : 4);
    v->bos = v->pad = (int32_t)(v->n - 5);
    v->eos = (int32_t)(v->n - 3);
    v->fim_first = -1;
    if (fim) {
        v->fim_first = (int32_t)v->n;
        for (size_t i = 0; i < ST_ARRAY_LEN(fim_texts); i++)
            add_special(v, fim_texts[i], 3);
    }
    while (v->n % 64 != 0) {
        char pad[32];
        snprintf(pad, sizeof(pad), "[PAD%lld]", (long long)v->n);
        add_special(v, pad, 5);
    }
    v->add_bos = false;
    v->chat_template = st_xstrdup(chatml_template);
    (void)err;
    return ST_OK;
}

/* A short GLM-4.5-style template: the [gMASK]<sop> prefix and the role
 * tokens of the real one (tools and thinking controls left out). */
static const char glm_template[] =
    "[gMASK]<sop>{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}<|system|>\n{{ m.content }}"
    "{%- elif m.role == 'user' -%}<|user|>\n{{ m.content }}"
    "{%- elif m.role == 'assistant' -%}<|assistant|>\n{{ m.content }}"
    "{%- elif m.role == 'tool' -%}<|observation|>\n<tool_response>{{ m.content }}"
    "</tool_response>{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}";

enum st_status st_mm_vocab_glm(struct st_mm_vocab *v, struct st_err *err)
{
    static const char *const control[] = { "<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]",
                                           "<sop>", "<eop>", "<|system|>", "<|user|>",
                                           "<|assistant|>", "<|observation|>" };
    static const char *const user[] = { "<think>", "</think>", "<tool_call>", "</tool_call>",
                                        "<arg_key>", "</arg_key>", "<arg_value>",
                                        "</arg_value>", "<tool_response>",
                                        "</tool_response>" };
    int64_t cap = 256 + N_MERGES + 20 + 64;
    vocab_begin(v, cap);
    int32_t first = (int32_t)v->n;
    for (size_t i = 0; i < ST_ARRAY_LEN(control); i++)
        add_special(v, control[i], 3);
    for (size_t i = 0; i < ST_ARRAY_LEN(user); i++)
        add_special(v, user[i], 4);
    while (v->n % 64 != 0) {
        char pad[32];
        snprintf(pad, sizeof(pad), "[PAD%lld]", (long long)v->n);
        add_special(v, pad, 5);
    }
    v->eos = v->pad = v->unk = first;   /* <|endoftext|> */
    v->bos = first + 2;                 /* [gMASK] */
    v->eot = first + 7;                 /* <|user|> */
    v->eom = first + 9;                 /* <|observation|> */
    v->glm_ids = true;
    v->fim_first = -1;
    v->add_bos = false;
    v->pre = "glm4";
    v->chat_template = st_xstrdup(glm_template);
    (void)err;
    return ST_OK;
}

void st_mm_vocab_free(struct st_mm_vocab *v)
{
    if (!v)
        return;
    for (int64_t i = 0; v->tokens && i < v->n; i++)
        free(v->tokens[i]);
    for (int64_t i = 0; v->merges && i < v->n_merges; i++)
        free(v->merges[i]);
    free(v->tokens);
    free(v->types);
    free(v->merges);
    free(v->chat_template);
    memset(v, 0, sizeof(*v));
}

enum st_status st_mm_vocab_write_kv(const struct st_mm_vocab *v, struct st_gguf_writer *w,
                                    struct st_err *err)
{
    st_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    st_gguf_writer_set_str(w, "tokenizer.ggml.pre", v->pre ? v->pre : "qwen2");
    st_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tokens,
                               (size_t)v->n);
    st_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", ST_GGUF_I32, v->types, (size_t)v->n);
    st_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges,
                               (size_t)v->n_merges);
    st_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    st_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    st_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->pad);
    st_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    if (v->glm_ids) {
        st_gguf_writer_set_u32(w, "tokenizer.ggml.eot_token_id", (uint32_t)v->eot);
        st_gguf_writer_set_u32(w, "tokenizer.ggml.eom_token_id", (uint32_t)v->eom);
        st_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)v->unk);
    }
    if (v->fim_first >= 0) {   /* llama.cpp's keys, in fim_texts' order */
        static const char *const keys[] = {
            "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.fim_mid_token_id",
            "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.fim_pad_token_id",
            "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id" };
        for (size_t i = 0; i < ST_ARRAY_LEN(keys); i++)
            st_gguf_writer_set_u32(w, keys[i], (uint32_t)v->fim_first + (uint32_t)i);
    }
    if (v->chat_template)
        st_gguf_writer_set_str(w, "tokenizer.chat_template", v->chat_template);
    (void)err;
    return ST_OK;
}
