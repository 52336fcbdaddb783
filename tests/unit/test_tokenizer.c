/* test_tokenizer.c -- st_tok on a small synthetic byte-level vocabulary:
 * byte mapping, rank-ordered merges, special-token split, pre-tokenizer
 * pieces, Unicode classes and NFC, eog set, errors. The real Qwen3
 * vocabulary is checked by tests/e2e/tokenizer_ref. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tok/internal.h"
#include "tok/unicode/unicode.h"
#include "strata/tokenizer.h"
#include "support.h"

/* ---- a small vocabulary: 256 byte tokens (ids = byte values), merged
 * tokens, then special tokens ---- */
static const char *const merges[] = {
    "h e", "l l", "he ll", "hell o", "\xc4\xa0 w", "\xc4\xa0w o", "r l",
    "\xc4\xa0wo rl", "\xc4\xa0worl d", "a a", "b c", "a b", "x y", "1 2",
};
static const char *const merged[] = {
    "he", "ll", "hell", "hello", "\xc4\xa0w", "\xc4\xa0wo", "rl",
    "\xc4\xa0worl", "\xc4\xa0world", "aa", "bc", "ab", "xy", "12",
};
static const struct { const char *text; int32_t type; } specials[] = {
    { "<|im_start|>", ST_TOK_CONTROL }, { "<|im_end|>", ST_TOK_CONTROL },
    { "<|endoftext|>", ST_TOK_CONTROL }, { "<think>", ST_TOK_USER_DEFINED },
    { "<x>", ST_TOK_USER_DEFINED }, { "<x>y", ST_TOK_USER_DEFINED },
    { "[PAD1]", ST_TOK_UNUSED },
};
#define N_BYTES 256
#define N_MERGED ((int32_t)ST_ARRAY_LEN(merged))
#define ID_MERGED(i) (N_BYTES + (i))
#define ID_SPECIAL(i) (N_BYTES + N_MERGED + (i))
#define N_VOCAB (N_BYTES + N_MERGED + (int32_t)ST_ARRAY_LEN(specials))

static char byte_text[N_BYTES][4];

static struct st_tok *make_tok_special(const char *pre, bool add_bos, bool add_eos)
{
    static struct st_str toks[N_VOCAB], mrg[ST_ARRAY_LEN(merges)];
    static int32_t types[N_VOCAB];
    struct st_tok_desc d;
    struct st_tok *tok = NULL;
    struct st_err err = { 0 };
    int32_t i;

    memset(&d, 0, sizeof(d));
    for (i = 0; i < N_BYTES; i++) {
        size_t n = st_utf8_encode(st_bytemap_cp((unsigned char)i), byte_text[i]);
        toks[i].ptr = byte_text[i];
        toks[i].len = n;
        types[i] = ST_TOK_NORMAL;
    }
    for (i = 0; i < N_MERGED; i++) {
        toks[ID_MERGED(i)] = st_str_c(merged[i]);
        types[ID_MERGED(i)] = ST_TOK_NORMAL;
        mrg[i] = st_str_c(merges[i]);
    }
    for (i = 0; i < (int32_t)ST_ARRAY_LEN(specials); i++) {
        toks[ID_SPECIAL(i)] = st_str_c(specials[i].text);
        types[ID_SPECIAL(i)] = specials[i].type;
    }
    d.n_tokens = N_VOCAB;
    d.tokens = toks;
    d.types = types;
    d.n_merges = (int32_t)ST_ARRAY_LEN(merges);
    d.merges = mrg;
    d.bos_id = ID_SPECIAL(2);
    d.eos_id = ID_SPECIAL(1);
    d.pad_id = -1;
    d.add_bos = add_bos;
    d.add_eos = add_eos;
    d.pre = pre;
    ck_assert_int_eq(st_tok_new(&d, &tok, &err), ST_OK);
    return tok;
}

static struct st_tok *make_tok(const char *pre, bool add_bos)
{
    return make_tok_special(pre, add_bos, false);
}

/* Encode and compare with the expected ids (terminated by -2). */
static void expect_ids(const struct st_tok *tok, const char *text, bool add_special,
                       bool parse_special, const int32_t *want)
{
    int32_t *ids = NULL;
    size_t n = 0, k = 0;

    ck_assert_int_eq(st_tok_encode(tok, text, strlen(text), add_special, parse_special,
                                   &ids, &n, NULL), ST_OK);
    while (want[k] != -2)
        k++;
    ck_assert_msg(n == k, "'%s': %zu ids, want %zu", text, n, k);
    for (k = 0; k < n; k++)
        ck_assert_msg(ids[k] == want[k], "'%s': id %zu is %d, want %d", text, k,
                      (int)ids[k], (int)want[k]);
    free(ids);
}

START_TEST(test_tokenizer_byte_mapping)
{
    struct st_tok *tok = make_tok("qwen2", false);
    struct st_str p;

    ck_assert_uint_eq(st_bytemap_cp(' '), 0x120);
    ck_assert_uint_eq(st_bytemap_cp('\n'), 0x10A);
    ck_assert_uint_eq(st_bytemap_cp('\t'), 0x109);
    ck_assert_uint_eq(st_bytemap_cp(0xAD), 0x143);
    ck_assert_uint_eq(st_bytemap_cp('A'), 'A');
    p = st_tok_piece(tok, ' ');
    ck_assert_uint_eq(p.len, 1);
    ck_assert_int_eq(p.ptr[0], ' ');
    p = st_tok_piece(tok, 0xFF);
    ck_assert_uint_eq(p.len, 1);
    ck_assert_int_eq((unsigned char)p.ptr[0], 0xFF);
    p = st_tok_piece(tok, ID_MERGED(8));            /* "Ġworld" */
    ck_assert(st_str_eq_c(p, " world"));
    p = st_tok_piece(tok, ID_SPECIAL(0));
    ck_assert(st_str_eq_c(p, "<|im_start|>"));
    ck_assert_ptr_null(st_tok_piece(tok, N_VOCAB).ptr);
    ck_assert_int_eq(st_tok_find(tok, " world", 6), ID_MERGED(8));
    ck_assert_int_eq(st_tok_find(tok, "nope", 4), -1);
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_merges_by_rank)
{
    struct st_tok *tok = make_tok("qwen2", false);
    const int32_t hw[] = { ID_MERGED(3), ID_MERGED(8), -2 };
    const int32_t aaa[] = { ID_MERGED(9), 'a', -2 };            /* leftmost tie */
    const int32_t abc[] = { 'a', ID_MERGED(10), -2 };           /* "b c" ranks before "a b" */
    const int32_t abab[] = { ID_MERGED(11), ID_MERGED(11), -2 };

    expect_ids(tok, "hello world", false, false, hw);
    expect_ids(tok, "aaa", false, false, aaa);
    expect_ids(tok, "abc", false, false, abc);
    expect_ids(tok, "abab", false, false, abab);
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_special_split)
{
    struct st_tok *tok = make_tok("qwen2", false);
    const int32_t parsed[] = { ID_SPECIAL(0), 'x', ID_SPECIAL(1), -2 };
    const int32_t literal[] = { '<', '|', 'i', 'm', '_', 's', 't', 'a', 'r', 't', '|', '>',
                                'x', ID_SPECIAL(1), -2 };
    const int32_t user[] = { ID_SPECIAL(3), 'a', -2 };
    const int32_t longest[] = { ID_SPECIAL(5), ID_SPECIAL(4), 'z', -2 };

    expect_ids(tok, "<|im_start|>x<|im_end|>", false, true, parsed);
    /* control tokens are text unless parse_special; here the pre-tokenizer
     * makes "<|" "im" "_start" ... pieces of single bytes except merges */
    {
        int32_t *ids = NULL;
        size_t n = 0;
        ck_assert_int_eq(st_tok_encode(tok, "<|im_start|>x", 13, false, false, &ids, &n, NULL), ST_OK);
        ck_assert_uint_eq(n, 13);
        ck_assert_mem_eq(ids, literal, 13 * sizeof(int32_t));
        free(ids);
    }
    expect_ids(tok, "<think>a", false, false, user);         /* USER_DEFINED always */
    expect_ids(tok, "<x>y<x>z", false, false, longest);      /* longest text first */
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_add_bos)
{
    struct st_tok *tok = make_tok("qwen2", true);
    const int32_t with[] = { ID_SPECIAL(2), 'q', -2 };
    const int32_t without[] = { 'q', -2 };

    expect_ids(tok, "q", true, false, with);
    expect_ids(tok, "q", false, false, without);
    ck_assert(st_tok_add_bos(tok));
    ck_assert_int_eq(st_tok_bos(tok), ID_SPECIAL(2));
    st_tok_free(tok);
    /* GLM (pre glm4 / chatglm-bpe): its template writes the bos
     * "[gMASK]<sop>" itself, so none is added; the pieces are llama-bpe's */
    static const char *const glm_pres[] = { "glm4", "chatglm-bpe" };
    for (size_t i = 0; i < ST_ARRAY_LEN(glm_pres); i++) {
        tok = make_tok(glm_pres[i], true);
        expect_ids(tok, "q", true, false, without);
        ck_assert(!st_tok_add_bos(tok));
        ck_assert_str_eq(st_tok_pre_name(tok), "llama-bpe");
        st_tok_free(tok);
    }
}
END_TEST

/* tokenizer.ggml.add_eos_token (Qwen3-Embedding's GGUFs set it: the
 * embedding is the eos row's state): eos appended with the special tokens. */
START_TEST(test_tokenizer_add_eos)
{
    struct st_tok *tok = make_tok_special("qwen2", true, true);
    const int32_t with[] = { ID_SPECIAL(2), 'q', ID_SPECIAL(1), -2 };
    const int32_t without[] = { 'q', -2 };

    expect_ids(tok, "q", true, false, with);
    expect_ids(tok, "q", false, false, without);
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_eog_set)
{
    struct st_tok *tok = make_tok("qwen2", false);
    const int32_t *eog;
    size_t n;

    ck_assert(st_tok_is_eog(tok, ID_SPECIAL(1)));     /* eos <|im_end|> */
    ck_assert(st_tok_is_eog(tok, ID_SPECIAL(2)));     /* <|endoftext|> by text */
    ck_assert(!st_tok_is_eog(tok, ID_SPECIAL(0)));
    ck_assert(!st_tok_is_eog(tok, 'a'));
    ck_assert(!st_tok_is_eog(tok, -1));
    eog = st_tok_eog_ids(tok, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(eog[0], ID_SPECIAL(1));
    ck_assert_int_eq(eog[1], ID_SPECIAL(2));
    st_tok_free(tok);
}
END_TEST

/* A GLM vocabulary ([gMASK] special): <|user|> and <|observation|> end
 * generation though the eos is <|endoftext|> (GLM-4.5 GGUFs name them only
 * as eot / eom); GLM's call markers stay visible even when typed CONTROL.
 * Without [gMASK] (Phi-3 also has <|user|>) nothing changes. */
START_TEST(test_tokenizer_glm_turn_tokens_end_generation)
{
    static const char *const texts[] = { "<|endoftext|>", "[gMASK]", "<|user|>",
                                         "<|observation|>", "<|assistant|>", "<arg_key>", "a" };
    int32_t types[7] = { ST_TOK_CONTROL, ST_TOK_CONTROL, ST_TOK_CONTROL, ST_TOK_CONTROL,
                         ST_TOK_CONTROL, ST_TOK_CONTROL, ST_TOK_NORMAL };
    struct st_str toks[7];
    struct st_tok_desc d;
    struct st_tok *tok = NULL;

    for (int i = 0; i < 7; i++)
        toks[i] = st_str_c(texts[i]);
    memset(&d, 0, sizeof(d));
    d.n_tokens = 7;
    d.tokens = toks;
    d.types = types;
    d.bos_id = 1;
    d.eos_id = 0;
    d.pad_id = -1;
    ck_assert_int_eq(st_tok_new(&d, &tok, NULL), ST_OK);
    ck_assert(st_tok_is_eog(tok, 0) && st_tok_is_eog(tok, 2) && st_tok_is_eog(tok, 3));
    ck_assert(!st_tok_is_eog(tok, 1) && !st_tok_is_eog(tok, 4) && !st_tok_is_eog(tok, 6));
    ck_assert(st_tok_is_marker(tok, 5) && !st_tok_is_marker(tok, 4));
    st_tok_free(tok);
    toks[1] = st_str_c("[MASK]");
    ck_assert_int_eq(st_tok_new(&d, &tok, NULL), ST_OK);
    ck_assert(st_tok_is_eog(tok, 0) && !st_tok_is_eog(tok, 2) && !st_tok_is_eog(tok, 3));
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_decode_roundtrip_and_invalid_bytes)
{
    struct st_tok *tok = make_tok("qwen2", false);
    const char text[] = "hello world \xff\xfe ok \xe4\xb8\xad <|im_end|>";
    int32_t *ids = NULL;
    size_t n = 0, len = 0;
    char *back = NULL;

    ck_assert_int_eq(st_tok_encode(tok, text, strlen(text), false, true, &ids, &n, NULL), ST_OK);
    ck_assert_int_eq(st_tok_decode(tok, ids, n, true, &back, &len, NULL), ST_OK);
    ck_assert_str_eq(back, "hello world \xef\xbf\xbd\xef\xbf\xbd ok \xe4\xb8\xad <|im_end|>");
    free(back);
    ck_assert_int_eq(st_tok_decode(tok, ids, n, false, &back, &len, NULL), ST_OK);
    ck_assert_str_eq(back, "hello world \xef\xbf\xbd\xef\xbf\xbd ok \xe4\xb8\xad ");
    free(back);
    ids[0] = N_VOCAB;
    ck_assert_int_eq(st_tok_decode(tok, ids, n, true, &back, &len, NULL), ST_ERR_INVALID);
    ck_assert_ptr_null(back);
    free(ids);
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_rejects_bad_desc)
{
    struct st_tok_desc d;
    struct st_tok *tok = (struct st_tok *)1;
    struct st_err err = { 0 };
    struct st_str one = st_str_c("a");
    int32_t bad_type = 9;

    memset(&d, 0, sizeof(d));
    ck_assert_int_eq(st_tok_new(&d, &tok, &err), ST_ERR_BAD_MODEL);
    ck_assert_ptr_null(tok);
    d.n_tokens = 1;
    d.tokens = &one;
    d.bos_id = 5;
    d.eos_id = d.pad_id = -1;
    ck_assert_int_eq(st_tok_new(&d, &tok, &err), ST_ERR_BAD_MODEL);
    ck_assert_ptr_nonnull(strstr(err.msg, "bos"));
    d.bos_id = -1;
    d.types = &bad_type;
    ck_assert_int_eq(st_tok_new(&d, &tok, &err), ST_ERR_BAD_MODEL);
    d.types = NULL;
    d.pre = "no-such-pre";                            /* warns, falls back */
    ck_assert_int_eq(st_tok_new(&d, &tok, &err), ST_OK);
    ck_assert_str_eq(st_tok_pre_name(tok), "qwen2");
    st_tok_free(tok);
}
END_TEST

/* ---- pre-tokenizer pieces ---- */
struct pieces {
    char   text[64][64];
    size_t n;
    const char *base;
};

static enum st_status collect(void *ctx, size_t start, size_t len)
{
    struct pieces *p = ctx;
    ck_assert_uint_lt(p->n, 64);
    ck_assert_uint_lt(len, 64);
    memcpy(p->text[p->n], p->base + start, len);
    p->text[p->n++][len] = '\0';
    return ST_OK;
}

/* want: pieces separated by '|' */
static void expect_pieces(enum st_pretok kind, const char *text, const char *want)
{
    struct pieces p;
    char joined[1024] = "";
    size_t i;

    memset(&p, 0, sizeof(p));
    p.base = text;
    ck_assert_int_eq(st_pretok_split(kind, text, strlen(text), collect, &p), ST_OK);
    for (i = 0; i < p.n; i++) {
        if (i)
            strcat(joined, "|");
        strcat(joined, p.text[i]);
    }
    ck_assert_str_eq(joined, want);
}

START_TEST(test_tokenizer_pretok_qwen2)
{
    expect_pieces(ST_PRETOK_QWEN2, "Hello world", "Hello| world");
    expect_pieces(ST_PRETOK_QWEN2, "it's IT'S we'LL", "it|'s| IT|'S| we|'LL");
    expect_pieces(ST_PRETOK_QWEN2, "12345 x", "1|2|3|4|5| x");
    expect_pieces(ST_PRETOK_QWEN2, "   x", "  | x");
    expect_pieces(ST_PRETOK_QWEN2, "a  \n\n  b", "a|  \n\n| | b");
    expect_pieces(ST_PRETOK_QWEN2, "x \t ", "x| \t ");
    expect_pieces(ST_PRETOK_QWEN2, "$hello (ok)!!\n\nz", "$hello| (|ok|)!!\n\n|z");
    expect_pieces(ST_PRETOK_QWEN2, "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96",
                  "\xe4\xbd\xa0\xe5\xa5\xbd|\xef\xbc\x8c\xe4\xb8\x96");
    expect_pieces(ST_PRETOK_QWEN2, "\xc2\xb2\xc2\xbd", "\xc2\xb2|\xc2\xbd");    /* No */
    expect_pieces(ST_PRETOK_QWEN2, "a\r\nb", "a|\r\n|b");
}
END_TEST

START_TEST(test_tokenizer_pretok_llama3_and_gpt2)
{
    expect_pieces(ST_PRETOK_LLAMA3, "12345 x", "123|45| x");
    expect_pieces(ST_PRETOK_GPT2, "IT'S 12345 ok!!", "IT|'|S| 12345| ok|!!");
    expect_pieces(ST_PRETOK_GPT2, "a   b", "a|  | b");
}
END_TEST

struct run_pieces {
    size_t n, len1, len3, other;   /* pieces, of 1 and 3 bytes, of another length */
};

static enum st_status count_piece(void *ctx, size_t start, size_t len)
{
    struct run_pieces *p = ctx;
    (void)start;
    p->n++;
    p->len1 += len == 1;
    p->len3 += len == 3;
    p->other += len != 1 && len != 3;
    return ST_OK;
}

/* A long digit run splits exactly as a short one does: \p{N} (qwen2) one
 * digit a piece, \p{N}{1,3} (llama3) three. (The matcher once measured the
 * whole run at every digit: a million digits took minutes; the throughput
 * is bench_tokenizer's "long runs".) */
START_TEST(test_tokenizer_pretok_long_digit_run)
{
    const size_t n = 300001;
    char *text = malloc(n + 2);
    ck_assert_ptr_nonnull(text);
    memset(text, '7', n);
    memcpy(text + n, " x", 2);
    struct run_pieces q = { 0 }, l = { 0 };
    ck_assert_int_eq(st_pretok_split(ST_PRETOK_QWEN2, text, n + 2, count_piece, &q), ST_OK);
    ck_assert_uint_eq(q.n, n + 1);            /* every digit, then " x" */
    ck_assert_uint_eq(q.len1, n);
    ck_assert_uint_eq(q.other, 1);
    ck_assert_int_eq(st_pretok_split(ST_PRETOK_LLAMA3, text, n + 2, count_piece, &l), ST_OK);
    ck_assert_uint_eq(l.len3, n / 3);
    ck_assert_uint_eq(l.len1, 1);             /* the last digit */
    ck_assert_uint_eq(l.n, n / 3 + 2);
    free(text);
}
END_TEST

/* The tekken regex's letter runs split on case; the expectations were
 * checked with node's own backtracking RegExp (/u) running the pattern of
 * mistral-common's tekken.json on the same strings. */
START_TEST(test_tokenizer_pretok_tekken)
{
    expect_pieces(ST_PRETOK_TEKKEN, "Hello world", "Hello| world");
    expect_pieces(ST_PRETOK_TEKKEN, "HTTPServer getURL", "HTTPServer| get|URL");
    expect_pieces(ST_PRETOK_TEKKEN, "camelCaseWord", "camel|Case|Word");
    expect_pieces(ST_PRETOK_TEKKEN, "ABCdef GHI", "ABCdef| GHI");
    /* no contractions */
    expect_pieces(ST_PRETOK_TEKKEN, "it's IT'S we'LL", "it|'s| IT|'S| we|'LL");
    expect_pieces(ST_PRETOK_TEKKEN, "12345 x", "1|2|3|4|5| x");
    expect_pieces(ST_PRETOK_TEKKEN, "   x", "  | x");
    expect_pieces(ST_PRETOK_TEKKEN, "a  \n\n  b", "a|  \n\n| | b");
    expect_pieces(ST_PRETOK_TEKKEN, "  \t\nx", "  \t\n|x");
    expect_pieces(ST_PRETOK_TEKKEN, "$hello (ok)!!\n\nz", "$hello| (|ok|)!!\n\n|z");
    expect_pieces(ST_PRETOK_TEKKEN, "x!\n/\n/y", "x|!\n/\n/|y");          /* [\r\n/]* */
    expect_pieces(ST_PRETOK_TEKKEN, "path/to/file.c", "path|/to|/file|.c");
    expect_pieces(ST_PRETOK_TEKKEN, "__init__", "__|init|__");
    expect_pieces(ST_PRETOK_TEKKEN, "a\r\nb", "a|\r\n|b");
    /* combining acute (Mn) inside and at the start of a word */
    expect_pieces(ST_PRETOK_TEKKEN, "e\xcc\x81te\xcc\x81", "e\xcc\x81te\xcc\x81");
    expect_pieces(ST_PRETOK_TEKKEN, "\xcc\x81" "abc", "\xcc\x81" "abc");
    /* U+01C4 (Lu) U+01C5 (Lt); U+02B0 (Lm, both sides) */
    expect_pieces(ST_PRETOK_TEKKEN, "\xc7\x84ungla \xc7\x85x", "\xc7\x84ungla| \xc7\x85x");
    expect_pieces(ST_PRETOK_TEKKEN, "\xca\xb0" "a\xca\xb0", "\xca\xb0" "a\xca\xb0");
    /* Lo (CJK) and a fullwidth comma prefix */
    expect_pieces(ST_PRETOK_TEKKEN, "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c",
                  "\xe4\xbd\xa0\xe5\xa5\xbd|\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c");
    /* É C O L E (Lu) then lower case */
    expect_pieces(ST_PRETOK_TEKKEN, "\xc3\x89" "COLE \xc3\xa9" "cole",
                  "\xc3\x89" "COLE| \xc3\xa9" "cole");
    expect_pieces(ST_PRETOK_TEKKEN, "\xff\xfe" "Ab", "\xff\xfe|Ab");      /* invalid bytes */
}
END_TEST

/* A tekken-shaped vocab: Mistral's control tokens first (as in the GGUFs:
 * <unk> <s> </s> [INST] ...), then the 256 bytes. */
static const char *const tekken_ctl[] = {
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]",
};
#define N_TCTL ((int32_t)ST_ARRAY_LEN(tekken_ctl))

static struct st_tok *make_tekken_tok(void)
{
    static struct st_str toks[N_TCTL + N_BYTES];
    static int32_t types[N_TCTL + N_BYTES];
    struct st_tok_desc d;
    struct st_tok *tok = NULL;
    int32_t i;

    memset(&d, 0, sizeof(d));
    for (i = 0; i < N_TCTL; i++) {
        toks[i] = st_str_c(tekken_ctl[i]);
        types[i] = i == 0 ? ST_TOK_UNKNOWN : ST_TOK_CONTROL;
    }
    for (i = 0; i < N_BYTES; i++) {
        size_t n = st_utf8_encode(st_bytemap_cp((unsigned char)i), byte_text[i]);
        toks[N_TCTL + i].ptr = byte_text[i];
        toks[N_TCTL + i].len = n;
        types[N_TCTL + i] = ST_TOK_NORMAL;
    }
    d.n_tokens = N_TCTL + N_BYTES;
    d.tokens = toks;
    d.types = types;
    d.bos_id = 1;
    d.eos_id = 2;
    d.pad_id = -1;
    d.add_bos = true;
    d.pre = "tekken";
    ck_assert_int_eq(st_tok_new(&d, &tok, NULL), ST_OK);
    return tok;
}

/* BOS, the control tokens as specials, no NFC. */
START_TEST(test_tokenizer_tekken_vocab)
{
    struct st_tok *tok = make_tekken_tok();
    const int32_t B = N_TCTL;           /* id of byte 0 */
    const int32_t inst[] = { 1, 3, B + 'h', B + 'i', 4, -2 };
    const int32_t tools[] = { 9, B + 'f', 12, B + '{', B + '}', 2, -2 };
    const int32_t think[] = { 14, B + 'a', 15, 5, 6, 7, 8, 10, 11, 13, -2 };
    const int32_t nfd[] = { B + 'e', B + 0xCC, B + 0x81, -2 };
    int32_t *ids = NULL;
    size_t n = 0, i;

    ck_assert_str_eq(st_tok_pre_name(tok), "tekken");
    ck_assert(st_tok_add_bos(tok));
    expect_ids(tok, "[INST]hi[/INST]", true, true, inst);
    expect_ids(tok, "[TOOL_CALLS]f[ARGS]{}</s>", false, true, tools);
    expect_ids(tok, "[THINK]a[/THINK][AVAILABLE_TOOLS][/AVAILABLE_TOOLS][TOOL_RESULTS]"
                    "[/TOOL_RESULTS][SYSTEM_PROMPT][/SYSTEM_PROMPT][CALL_ID]", false, true, think);
    expect_ids(tok, "e\xcc\x81", false, false, nfd);       /* tekken has no normalizer */
    /* the reply markers among the control tokens */
    ck_assert(st_tok_is_marker(tok, 9) && st_tok_is_marker(tok, 12) && st_tok_is_marker(tok, 13));
    ck_assert(st_tok_is_marker(tok, 14) && st_tok_is_marker(tok, 15));
    ck_assert(!st_tok_is_marker(tok, 3) && !st_tok_is_marker(tok, 2));
    ck_assert(!st_tok_is_marker(tok, B + 'a'));
    ck_assert(!st_tok_is_marker(tok, -1) && !st_tok_is_marker(tok, N_TCTL + N_BYTES));
    /* user text: control tokens stay bytes */
    ck_assert_int_eq(st_tok_encode(tok, "[INST]", 6, false, false, &ids, &n, NULL), ST_OK);
    ck_assert_uint_eq(n, 6);
    for (i = 0; i < n; i++)
        ck_assert_int_ge(ids[i], B);
    free(ids);
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_unicode_case_classes)
{
    ck_assert_uint_eq(st_uni_case_class('A'), ST_UNI_CASE_UP);
    ck_assert_uint_eq(st_uni_case_class('z'), ST_UNI_CASE_LOW);
    ck_assert_uint_eq(st_uni_case_class('1'), 0);
    ck_assert_uint_eq(st_uni_case_class(0x01C5), ST_UNI_CASE_UP);          /* Lt */
    ck_assert_uint_eq(st_uni_case_class(0x00DF), ST_UNI_CASE_LOW);         /* ß Ll */
    ck_assert_uint_eq(st_uni_case_class(0x02B0), ST_UNI_CASE_UP | ST_UNI_CASE_LOW); /* Lm */
    ck_assert_uint_eq(st_uni_case_class(0x4E2D), ST_UNI_CASE_UP | ST_UNI_CASE_LOW); /* Lo */
    ck_assert_uint_eq(st_uni_case_class(0x0301), ST_UNI_CASE_UP | ST_UNI_CASE_LOW); /* Mn */
    ck_assert_uint_eq(st_uni_case_class(0x0903), ST_UNI_CASE_UP | ST_UNI_CASE_LOW); /* Mc */
    ck_assert_uint_eq(st_uni_case_class(0x20DD), ST_UNI_CASE_UP | ST_UNI_CASE_LOW); /* Me */
    ck_assert_uint_eq(st_uni_case_class(0xFF0C), 0);                       /* fullwidth comma */
    ck_assert_uint_eq(st_uni_case_class(0x1F600), 0);                      /* emoji */
    ck_assert_uint_eq(st_uni_case_class(0xE01EF), ST_UNI_CASE_UP | ST_UNI_CASE_LOW); /* last Mn */
}
END_TEST

START_TEST(test_tokenizer_unicode_classes)
{
    ck_assert(st_uni_is_letter('a'));
    ck_assert(st_uni_is_letter(0x4E2D));        /* 中 */
    ck_assert(st_uni_is_letter(0x00E9));
    ck_assert(!st_uni_is_letter('1'));
    ck_assert(!st_uni_is_letter(0x0301));       /* combining mark: Mn */
    ck_assert(st_uni_is_number(0x0663));        /* Arabic-Indic 3 */
    ck_assert(st_uni_is_number(0x216B));        /* Roman numeral XII: Nl */
    ck_assert(!st_uni_is_number('x'));
    ck_assert(st_uni_is_space(0x3000));
    ck_assert(st_uni_is_space(0x00A0));
    ck_assert(!st_uni_is_space(0x200B));        /* zero width space is not White_Space */
    ck_assert_uint_eq(st_uni_ccc(0x0301), 230);
    ck_assert_uint_eq(st_uni_ccc(0x0323), 220);
    ck_assert_uint_eq(st_uni_ccc('a'), 0);
}
END_TEST

static void expect_nfc(const char *in, const char *want, bool want_same)
{
    struct st_buf out;
    bool same = false;

    st_buf_init(&out);
    ck_assert_int_eq(st_uni_nfc(in, strlen(in), &out, &same), ST_OK);
    ck_assert_int_eq(same, want_same);
    ck_assert_str_eq(same ? in : out.data, want);
    st_buf_fini(&out);
}

START_TEST(test_tokenizer_nfc)
{
    expect_nfc("plain ascii", "plain ascii", true);
    expect_nfc("caf\xc3\xa9", "caf\xc3\xa9", true);
    expect_nfc("cafe\xcc\x81", "caf\xc3\xa9", false);                     /* e + U+0301 */
    expect_nfc("a\xcc\xa3\xcc\x82", "\xe1\xba\xad", false);              /* a + dot below + circumflex */
    expect_nfc("a\xcc\x82\xcc\xa3", "\xe1\xba\xad", false);              /* reordered */
    expect_nfc("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81", false); /* jamo -> 각 */
    expect_nfc("\xe2\x84\xab", "\xc3\x85", false);                        /* Angstrom sign */
    expect_nfc("\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc", false);        /* exclusion: stays decomposed */
    expect_nfc("x\xff\xcc\x81", "x\xff\xcc\x81", false);                  /* invalid byte blocks nothing odd */
}
END_TEST

START_TEST(test_tokenizer_nfc_applied_before_bpe)
{
    struct st_tok *tok = make_tok("qwen2", false);
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;

    ck_assert_int_eq(st_tok_encode(tok, "e\xcc\x81", 3, false, false, &a, &na, NULL), ST_OK);
    ck_assert_int_eq(st_tok_encode(tok, "\xc3\xa9", 2, false, false, &b, &nb, NULL), ST_OK);
    ck_assert_uint_eq(na, nb);
    ck_assert_mem_eq(a, b, na * sizeof(int32_t));
    free(a);
    free(b);
    st_tok_free(tok);
}
END_TEST

START_TEST(test_tokenizer_long_input)
{
    struct st_tok *tok = make_tok("qwen2", false);
    size_t len = 1 << 20, n = 0, i;
    char *text = malloc(len);
    int32_t *ids = NULL;

    for (i = 0; i < len; i++)
        text[i] = "hello world  \n\txy12"[i % 19];
    ck_assert_int_eq(st_tok_encode(tok, text, len, false, false, &ids, &n, NULL), ST_OK);
    ck_assert_uint_gt(n, len / 10);
    ck_assert_uint_lt(n, len);
    free(ids);
    memset(text, ' ', len);                        /* one huge whitespace piece */
    ck_assert_int_eq(st_tok_encode(tok, text, len, false, false, &ids, &n, NULL), ST_OK);
    ck_assert_uint_eq(n, len);                     /* no merges for spaces here */
    free(ids);
    free(text);
    st_tok_free(tok);
}
END_TEST

/* A text's bytes bound its tokens from below: every text here has at least
 * ceil(len / st_tok_max_input_bytes) tokens, those that shrink before BPE
 * (NFC, C0 80) included; a vocabulary missing a byte has no bound. */
START_TEST(test_tokenizer_max_input_bytes)
{
    static const char *const texts[] = {
        "hello world", "<|endoftext|><|endoftext|><|im_start|>", "\xe2\x84\xaa\xe2\x84\xaa",
        "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xc0\x80\xc0\x80\xc0\x80", "        ",
        "a\xcc\xa3\xcc\x82<think>x",
    };
    struct st_tok *tok = make_tok("qwen2", false);   /* NFC; longest: <|endoftext|> */
    ck_assert_uint_eq(st_tok_max_input_bytes(tok), 13 * 4);
    for (size_t i = 0; i < ST_ARRAY_LEN(texts); i++) {
        int32_t *ids = NULL;
        size_t n = 0, len = strlen(texts[i]), per = st_tok_max_input_bytes(tok);
        ck_assert_int_eq(st_tok_encode(tok, texts[i], len, false, true, &ids, &n, NULL), ST_OK);
        ck_assert_msg(n >= (len + per - 1) / per, "text %zu: %zu tokens", i, n);
        free(ids);
    }
    st_tok_free(tok);
    tok = make_tok("gpt2", false);                   /* no NFC: only C0 80 shrinks */
    ck_assert_uint_eq(st_tok_max_input_bytes(tok), 13 * 2);
    st_tok_free(tok);

    struct st_tok_desc d;
    struct st_str one = st_str_c("a");
    memset(&d, 0, sizeof(d));
    d.n_tokens = 1;
    d.tokens = &one;
    d.bos_id = d.eos_id = d.pad_id = -1;
    ck_assert_int_eq(st_tok_new(&d, &tok, NULL), ST_OK);
    ck_assert_uint_eq(st_tok_max_input_bytes(tok), 0);   /* "b" would be dropped */
    st_tok_free(tok);
}
END_TEST

static Suite *tokenizer_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *vocab = tcase_create("vocab");
    TCase *pretok = tcase_create("pretok");
    TCase *uni = tcase_create("unicode");

    tcase_add_test(vocab, test_tokenizer_byte_mapping);
    tcase_add_test(vocab, test_tokenizer_merges_by_rank);
    tcase_add_test(vocab, test_tokenizer_special_split);
    tcase_add_test(vocab, test_tokenizer_add_bos);
    tcase_add_test(vocab, test_tokenizer_add_eos);
    tcase_add_test(vocab, test_tokenizer_eog_set);
    tcase_add_test(vocab, test_tokenizer_glm_turn_tokens_end_generation);
    tcase_add_test(vocab, test_tokenizer_decode_roundtrip_and_invalid_bytes);
    tcase_add_test(vocab, test_tokenizer_rejects_bad_desc);
    tcase_add_test(vocab, test_tokenizer_long_input);
    tcase_add_test(vocab, test_tokenizer_max_input_bytes);
    tcase_set_timeout(vocab, 30);
    tcase_add_test(pretok, test_tokenizer_pretok_qwen2);
    tcase_add_test(pretok, test_tokenizer_pretok_llama3_and_gpt2);
    tcase_add_test(pretok, test_tokenizer_pretok_long_digit_run);
    tcase_add_test(pretok, test_tokenizer_pretok_tekken);
    tcase_add_test(pretok, test_tokenizer_tekken_vocab);
    tcase_add_test(uni, test_tokenizer_unicode_classes);
    tcase_add_test(uni, test_tokenizer_unicode_case_classes);
    tcase_add_test(uni, test_tokenizer_nfc);
    tcase_add_test(uni, test_tokenizer_nfc_applied_before_bpe);
    suite_add_tcase(s, vocab);
    suite_add_tcase(s, pretok);
    suite_add_tcase(s, uni);
    return s;
}

int main(void)
{
    return support_run_suite(tokenizer_suite(), CK_FORK);
}
