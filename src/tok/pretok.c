/* pretok.c -- the pre-tokenizer regexes, written by hand (no regex library).
 *
 * qwen2 (tokenizer.json form; llama-bpe differs only in \p{N}{1,3}):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * gpt2:
 *   's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+
 *   | \s+(?!\S) | \s+
 * tekken (Mistral Nemo / Small 3.x / Devstral / Magistral; the "pattern" of
 * mistral-common's tekken.json, also the Split regex of their tokenizer.json),
 * with U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and W = [\p{Ll}\p{Lm}\p{Lo}\p{M}]:
 *   [^\r\n\p{L}\p{N}]?U*W+ | [^\r\n\p{L}\p{N}]?U+W* | \p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 *   Lm, Lo and marks are in both U and W, so U*W+ backtracks: U* gives back
 *   characters until one that is in W follows (match_tekken_uw). A mark is
 *   not \p{L}: it also counts as "other" for the optional prefix and for
 *   the punctuation run.
 * Alternation is ordered (first alternative that matches wins, as in
 * Oniguruma/PCRE), and every code point is matched by one alternative, so
 * the pieces tile the input. Each match_* returns the match length in code
 * points (0 = no match) at position i of the decoded array.
 */
#include <stdlib.h>

#include "strata/xalloc.h"

#include "tok/internal.h"
#include "tok/unicode/unicode.h"

/* Code point classes, precomputed once per fragment. */
enum {
    C_LETTER = 1,
    C_NUMBER = 2,
    C_SPACE  = 4,
    C_CRLF   = 8,       /* \r or \n (also C_SPACE) */
    C_UP     = 16,      /* tekken's U class (ST_UNI_CASE_UP), tekken only */
    C_LOW    = 32,      /* tekken's W class (ST_UNI_CASE_LOW), tekken only */
};

struct cps {
    uint32_t *cp;       /* [n] code points (lowercased ASCII not applied) */
    uint8_t  *cls;      /* [n] C_* bits */
    size_t   *off;      /* [n + 1] byte offset of each code point */
    size_t    n;
};

#define IS(c, i, f) ((c)->cls[i] & (f))
#define OTHER(c, i) (!IS(c, i, C_LETTER | C_NUMBER | C_SPACE))

static size_t run(const struct cps *c, size_t i, uint8_t f)
{
    size_t j = i;
    while (j < c->n && IS(c, j, f))
        j++;
    return j - i;
}

/* run() that stops after max: a bounded repeat must not scan the whole run,
 * or a long run (a million digits) costs the square of its length. */
static size_t run_max(const struct cps *c, size_t i, uint8_t f, size_t max)
{
    size_t j = i;
    while (j < c->n && j - i < max && IS(c, j, f))
        j++;
    return j - i;
}

static size_t run_other(const struct cps *c, size_t i)
{
    size_t j = i;
    while (j < c->n && OTHER(c, j))
        j++;
    return j - i;
}

static uint32_t lower(uint32_t cp)
{
    return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
}

/* 's 't 're 've 'm 'll 'd; case-insensitive when 'icase'. */
static size_t match_contraction(const struct cps *c, size_t i, bool icase)
{
    uint32_t a, b;

    if (c->cp[i] != '\'' || i + 1 >= c->n)
        return 0;
    a = icase ? lower(c->cp[i + 1]) : c->cp[i + 1];
    b = i + 2 < c->n ? (icase ? lower(c->cp[i + 2]) : c->cp[i + 2]) : 0;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    return 0;
}

/* \s*[\r\n]+ : up to and including the last \r/\n of the whitespace run. */
static size_t match_space_newline(const struct cps *c, size_t i)
{
    size_t len = run(c, i, C_SPACE), k;

    for (k = len; k > 0; k--)
        if (IS(c, i + k - 1, C_CRLF))
            return k;
    return 0;
}

/* \s+(?!\S) | \s+ : a whitespace run leaves its last char to the next word. */
static size_t match_space(const struct cps *c, size_t i)
{
    size_t len = run(c, i, C_SPACE);

    if (i + len < c->n && len >= 2)
        return len - 1;
    return len;
}

static size_t match_qwen2(const struct cps *c, size_t i, size_t max_digits)
{
    size_t k;

    if ((k = match_contraction(c, i, true)) != 0)
        return k;
    if (IS(c, i, C_LETTER))                                   /* \p{L}+ */
        return run(c, i, C_LETTER);
    if (!IS(c, i, C_CRLF | C_NUMBER) && i + 1 < c->n && IS(c, i + 1, C_LETTER))
        return 1 + run(c, i + 1, C_LETTER);                   /* x\p{L}+ */
    if (IS(c, i, C_NUMBER))                                   /* \p{N}{1,max} */
        return run_max(c, i, C_NUMBER, max_digits);
    if (c->cp[i] == ' ' && i + 1 < c->n && OTHER(c, i + 1)) { /* ' '?[^\s L N]+[\r\n]* */
        k = 1 + run_other(c, i + 1);
        return k + run(c, i + k, C_CRLF);
    }
    if (OTHER(c, i)) {
        k = run_other(c, i);
        return k + run(c, i + k, C_CRLF);
    }
    if ((k = match_space_newline(c, i)) != 0)
        return k;
    return match_space(c, i);
}

static size_t match_gpt2(const struct cps *c, size_t i)
{
    size_t k, sp;

    if ((k = match_contraction(c, i, false)) != 0)
        return k;
    sp = (c->cp[i] == ' ' && i + 1 < c->n) ? 1 : 0;
    if (IS(c, i + sp, C_LETTER))
        return sp + run(c, i + sp, C_LETTER);
    if (IS(c, i + sp, C_NUMBER))
        return sp + run(c, i + sp, C_NUMBER);
    if (OTHER(c, i + sp))
        return sp + run_other(c, i + sp);
    return match_space(c, i);
}

/* tekken's U*W+ at i (no prefix): U* is greedy and gives back characters
 * until W+ can start; 0 = no match. */
static size_t match_tekken_uw(const struct cps *c, size_t i)
{
    size_t u = run(c, i, C_UP), k;

    for (k = u + 1; k-- > 0;)
        if (i + k < c->n && IS(c, i + k, C_LOW))
            return k + run(c, i + k, C_LOW);
    return 0;
}

/* tekken's U+W* at i (no prefix); 0 = no match. */
static size_t match_tekken_u(const struct cps *c, size_t i)
{
    size_t u = run(c, i, C_UP);

    return u ? u + run(c, i + u, C_LOW) : 0;
}

/* [\r\n/]* */
static size_t run_crlf_slash(const struct cps *c, size_t i)
{
    size_t j = i;

    while (j < c->n && (IS(c, j, C_CRLF) || c->cp[j] == '/'))
        j++;
    return j - i;
}

static size_t match_tekken(const struct cps *c, size_t i)
{
    bool pre = !IS(c, i, C_CRLF | C_LETTER | C_NUMBER) && i + 1 < c->n;
    size_t k;

    /* alternation order: prefix then without, for each letter alternative */
    if (pre && (k = match_tekken_uw(c, i + 1)) != 0)
        return 1 + k;
    if ((k = match_tekken_uw(c, i)) != 0)
        return k;
    if (pre && (k = match_tekken_u(c, i + 1)) != 0)
        return 1 + k;
    if ((k = match_tekken_u(c, i)) != 0)
        return k;
    if (IS(c, i, C_NUMBER))
        return 1;
    if (c->cp[i] == ' ' && i + 1 < c->n && OTHER(c, i + 1)) { /* ' '?[^\s L N]+[\r\n/]* */
        k = 1 + run_other(c, i + 1);
        return k + run_crlf_slash(c, i + k);
    }
    if (OTHER(c, i)) {
        k = run_other(c, i);
        return k + run_crlf_slash(c, i + k);
    }
    if ((k = match_space_newline(c, i)) != 0)
        return k;
    return match_space(c, i);
}

static uint8_t classify(uint32_t cp, bool cases)
{
    uint8_t cc;

    if (cp & ST_UNI_INVALID)
        return 0;
    cc = cases ? st_uni_case_class(cp) : 0;
    if (cc)
        return (uint8_t)(((cc & ST_UNI_CASE_UP) ? C_UP : 0) | ((cc & ST_UNI_CASE_LOW) ? C_LOW : 0) |
                         (st_uni_is_letter(cp) ? C_LETTER : 0));
    if (cp == '\r' || cp == '\n')
        return C_SPACE | C_CRLF;
    if (st_uni_is_space(cp))
        return C_SPACE;
    if (st_uni_is_letter(cp))
        return C_LETTER;
    if (st_uni_is_number(cp))
        return C_NUMBER;
    return 0;
}

/* cases: also compute the tekken C_UP / C_LOW bits. */
static enum st_status decode_all(const char *s, size_t n, struct cps *c, bool cases)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, bytes, cp_bytes;

    c->n = 0;
    if (!st_mul_ok(n + 1, sizeof(size_t), &bytes) ||
        !st_mul_ok(n + 1, sizeof(uint32_t), &cp_bytes))
        return ST_ERR_NOMEM;
    c->cp = malloc(cp_bytes);
    c->cls = malloc(n + 1);
    c->off = malloc(bytes);
    if (!c->cp || !c->cls || !c->off)
        return ST_ERR_NOMEM;
    while (i < n) {
        uint32_t cp;
        size_t k = p[i] < 0x80 ? (cp = p[i], 1) : st_utf8_decode(p + i, n - i, &cp);
        c->cp[c->n] = cp;
        c->cls[c->n] = classify(cp, cases);
        c->off[c->n++] = i;
        i += k;
    }
    c->off[c->n] = n;
    return ST_OK;
}

enum st_status st_pretok_split(enum st_pretok kind, const char *s, size_t n,
                               st_pretok_emit_fn *emit, void *ctx)
{
    struct cps c = { NULL, NULL, NULL, 0 };
    enum st_status rc;
    size_t i = 0, k;

    rc = decode_all(s, n, &c, kind == ST_PRETOK_TEKKEN);
    while (rc == ST_OK && i < c.n) {
        if (kind == ST_PRETOK_GPT2)
            k = match_gpt2(&c, i);
        else if (kind == ST_PRETOK_TEKKEN)
            k = match_tekken(&c, i);
        else
            k = match_qwen2(&c, i, kind == ST_PRETOK_LLAMA3 ? 3 : 1);
        if (k == 0)
            k = 1;                  /* unreachable: the alternatives cover all */
        rc = emit(ctx, c.off[i], c.off[i + k] - c.off[i]);
        i += k;
    }
    free(c.cp);
    free(c.cls);
    free(c.off);
    return rc;
}
