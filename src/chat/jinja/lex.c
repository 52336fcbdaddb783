/* lex.c -- template source -> tokens: text between tags (with Jinja's
 * whitespace control: "{%-" / "-%}", and trim_blocks + lstrip_blocks as
 * Hugging Face's apply_chat_template sets them), tag delimiters, and the
 * names, literals and operators inside tags. Comments are dropped here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja/internal.h"

struct jlexer {
    struct jarena *a;
    const char    *s;
    size_t         len, i;
    size_t         at;       /* position 'line'/'col' describe */
    int            line, col;
    struct jtok   *toks;
    size_t         n, cap;
    struct st_err *err;
};

static void where(struct jlexer *l, size_t pos, int *line, int *col)
{
    while (l->at < pos) {
        if (l->s[l->at] == '\n') {
            l->line++;
            l->col = 1;
        } else if (((unsigned char)l->s[l->at] & 0xC0) != 0x80) {
            l->col++;
        }
        l->at++;
    }
    *line = l->line;
    *col = l->col;
}

static enum st_status lex_fail(struct jlexer *l, size_t pos, const char *fmt, ...)
    ST_PRINTF(3, 4);

static enum st_status lex_fail(struct jlexer *l, size_t pos, const char *fmt, ...)
{
    char msg[160];
    int line, col;
    va_list ap;

    where(l, pos, &line, &col);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return st_err_set(l->err, ST_ERR_INVALID, "chat template: line %d, column %d: %s", line,
                      col, msg);
}

static struct jtok *emit(struct jlexer *l, enum jt_kind kind, size_t pos, const char *p,
                         size_t n)
{
    struct jtok *t;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        struct jtok *nt = ja_alloc(l->a, cap * sizeof(*nt));
        if (!nt)
            return NULL;
        if (l->n)
            memcpy(nt, l->toks, l->n * sizeof(*nt));
        l->toks = nt;
        l->cap = cap;
    }
    t = &l->toks[l->n++];
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    t->text.ptr = p;
    t->text.len = n;
    where(l, pos, &t->line, &t->col);
    return t;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static unsigned hexval(char c)
{
    if (is_digit(c))
        return (unsigned)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (unsigned)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (unsigned)(c - 'A' + 10);
    return 16;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \xHH, \uHHHH, \UHHHHHHHH at s[i] (after the backslash and letter). */
static bool hex_escape(const char *s, size_t n, size_t i, size_t digits, uint32_t *cp)
{
    uint32_t v = 0;

    if (i + digits > n)
        return false;
    for (size_t k = 0; k < digits; k++) {
        unsigned h = hexval(s[i + k]);
        if (h > 15)
            return false;
        v = v * 16 + h;
    }
    *cp = v > 0x10FFFF ? 0xFFFD : v;
    return true;
}

static char simple_escape(char c)
{
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '\\': return '\\';
    case '\'': return '\'';
    case '"': return '"';
    case 'a': return '\a';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0': return '\0';
    }
    return 0;
}

/* A quoted literal at l->i, decoded as Python decodes it. */
static enum st_status lex_string(struct jlexer *l)
{
    size_t start = l->i, i = l->i + 1, o = 0;
    char q = l->s[start], *buf, c;
    uint32_t cp;

    while (i < l->len && l->s[i] != q)
        i += (l->s[i] == '\\' && i + 1 < l->len) ? 2 : 1;
    if (i >= l->len)
        return lex_fail(l, start, "unterminated string");
    buf = ja_alloc(l->a, (i - start) * 2 + 1);
    if (!buf)
        return ST_ERR_NOMEM;
    for (size_t k = start + 1; k < i; k++) {
        if (l->s[k] != '\\') {
            buf[o++] = l->s[k];
            continue;
        }
        c = l->s[++k];
        size_t d = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
        if (d && hex_escape(l->s, i, k + 1, d, &cp)) {
            o += put_utf8(buf + o, cp);
            k += d;
        } else if (simple_escape(c) || c == '0') {
            buf[o++] = simple_escape(c);
        } else if (c == '\n') {
            continue;              /* a backslash-newline continues the literal */
        } else {
            buf[o++] = '\\';
            buf[o++] = c;
        }
    }
    if (!emit(l, JT_STRING, start, buf, o))
        return ST_ERR_NOMEM;
    l->i = i + 1;
    return ST_OK;
}

static enum st_status lex_number(struct jlexer *l)
{
    size_t start = l->i, i = l->i;
    bool flt = false;
    char tmp[64];
    struct jtok *t;

    while (i < l->len && (is_digit(l->s[i]) || l->s[i] == '_'))
        i++;
    if (i + 1 < l->len && l->s[i] == '.' && is_digit(l->s[i + 1])) {
        flt = true;
        for (i++; i < l->len && is_digit(l->s[i]); i++)
            ;
    }
    if (i < l->len && (l->s[i] == 'e' || l->s[i] == 'E')) {
        size_t k = i + 1;
        if (k < l->len && (l->s[k] == '+' || l->s[k] == '-'))
            k++;
        if (k < l->len && is_digit(l->s[k])) {
            flt = true;
            for (i = k; i < l->len && is_digit(l->s[i]); i++)
                ;
        }
    }
    size_t n = 0;
    for (size_t k = start; k < i && n + 1 < sizeof(tmp); k++)
        if (l->s[k] != '_')
            tmp[n++] = l->s[k];
    tmp[n] = '\0';
    t = emit(l, flt ? JT_FLOAT : JT_INT, start, l->s + start, i - start);
    if (!t)
        return ST_ERR_NOMEM;
    if (flt)
        t->fval = strtod(tmp, NULL);
    else
        t->ival = strtoll(tmp, NULL, 10);
    l->i = i;
    return ST_OK;
}

static const char *const two_char_ops[] = { "==", "!=", "<=", ">=", "//", "**" };

static enum st_status lex_op(struct jlexer *l, int *braces)
{
    const char *p = l->s + l->i;
    size_t n = 1;

    for (size_t k = 0; k < sizeof(two_char_ops) / sizeof(two_char_ops[0]); k++)
        if (l->i + 1 < l->len && p[0] == two_char_ops[k][0] && p[1] == two_char_ops[k][1])
            n = 2;
    if (n == 1 && !strchr("()[]{}.,:|+-*/%~<>=", p[0]))
        return lex_fail(l, l->i, "unexpected character '%c'", p[0]);
    if (p[0] == '{' || p[0] == '(' || p[0] == '[')
        (*braces)++;
    else if (n == 1 && (p[0] == '}' || p[0] == ')' || p[0] == ']') && *braces > 0)
        (*braces)--;
    if (!emit(l, JT_OP, l->i, p, n))
        return ST_ERR_NOMEM;
    l->i += n;
    return ST_OK;
}

/* The inside of {{ }} or {% %} from l->i; stops after the closing
 * delimiter. *trim: it was "-}}" / "-%}". */
static enum st_status lex_code(struct jlexer *l, bool block, bool *trim)
{
    const char *close = block ? "%}" : "}}";
    int braces = 0;
    size_t close_at = l->i;
    enum st_status rc = ST_OK;

    while (rc == ST_OK) {
        while (l->i < l->len && is_ws(l->s[l->i]))
            l->i++;
        if (l->i >= l->len)
            return lex_fail(l, l->i, "missing '%s'", close);
        const char *p = l->s + l->i;
        size_t left = l->len - l->i;
        close_at = l->i;
        if (braces == 0 && left >= 3 && p[0] == '-' && !memcmp(p + 1, close, 2)) {
            *trim = true;
            l->i += 3;
            break;
        }
        if (braces == 0 && left >= 2 && !memcmp(p, close, 2)) {
            *trim = false;
            l->i += 2;
            break;
        }
        if (is_name_start(p[0])) {
            size_t k = 1;
            while (k < left && (is_name_start(p[k]) || is_digit(p[k])))
                k++;
            rc = emit(l, JT_NAME, l->i, p, k) ? ST_OK : ST_ERR_NOMEM;
            l->i += k;
        } else if (is_digit(p[0])) {
            rc = lex_number(l);
        } else if (p[0] == '\'' || p[0] == '"') {
            rc = lex_string(l);
        } else {
            rc = lex_op(l, &braces);
        }
    }
    if (rc == ST_OK && !emit(l, block ? JT_BLOCK_END : JT_VAR_END, close_at, close, 2))
        rc = ST_ERR_NOMEM;
    return rc;
}

/* The next tag at or after 'from': its position, or len. */
static size_t next_tag(const char *s, size_t len, size_t from)
{
    for (size_t i = from; i + 1 < len; i++)
        if (s[i] == '{' && (s[i + 1] == '{' || s[i + 1] == '%' || s[i + 1] == '#'))
            return i;
    return len;
}

/* The text before a tag, after whitespace control: sign is the tag's '-',
 * '+' or 0; lstrip applies to block and comment tags. */
static size_t text_end(const char *s, size_t from, size_t to, char sign, bool lstrip,
                       bool line_start)
{
    size_t l_pos = to, k;

    if (sign == '-') {
        while (to > from && is_ws(s[to - 1]))
            to--;
        return to;
    }
    if (sign == '+' || !lstrip)
        return to;
    while (l_pos > from && s[l_pos - 1] != '\n')
        l_pos--;
    if (l_pos == from && !line_start)
        return to;
    for (k = l_pos; k < to; k++)
        if (!is_ws(s[k]))
            return to;
    return l_pos;
}

/* After a tag: "-" eats all following whitespace; a block or comment tag
 * eats one newline (trim_blocks). Returns whether a line now starts. */
static bool after_tag(struct jlexer *l, bool trim, bool block)
{
    size_t start = l->i;

    if (trim) {
        while (l->i < l->len && is_ws(l->s[l->i]))
            l->i++;
    } else if (block && l->i < l->len && l->s[l->i] == '\n') {
        l->i++;
    }
    return l->i > start ? l->s[l->i - 1] == '\n' : false;
}

static enum st_status lex_comment(struct jlexer *l, size_t tag, bool *trim)
{
    const char *end;

    for (end = l->s + tag + 2; end + 1 < l->s + l->len; end++)
        if (end[0] == '#' && end[1] == '}')
            break;
    if (end + 1 >= l->s + l->len)
        return lex_fail(l, tag, "unterminated comment");
    *trim = end > l->s + tag + 2 && end[-1] == '-';
    l->i = (size_t)(end - l->s) + 2;
    return ST_OK;
}

enum st_status jl_lex(struct jarena *a, const char *src, size_t len, struct jtok **toks,
                      size_t *n, struct st_err *err)
{
    struct jlexer l = { .a = a, .s = src, .len = len, .line = 1, .col = 1, .err = err };
    bool line_start = true, trim = false;
    enum st_status rc = ST_OK;

    while (rc == ST_OK && l.i < len) {
        size_t tag = next_tag(src, len, l.i);
        char kind = tag < len ? src[tag + 1] : 0;
        char sign = tag + 2 < len && (src[tag + 2] == '-' || src[tag + 2] == '+') ? src[tag + 2] : 0;
        size_t end = tag < len ? text_end(src, l.i, tag, sign, kind != '{', line_start) : tag;

        if (end > l.i && !emit(&l, JT_TEXT, l.i, src + l.i, end - l.i))
            return ST_ERR_NOMEM;
        if (tag >= len)
            break;
        l.i = tag + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            rc = lex_comment(&l, tag, &trim);
        } else {
            if (!emit(&l, kind == '%' ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, tag, src + tag, 2))
                return ST_ERR_NOMEM;
            rc = lex_code(&l, kind == '%', &trim);
        }
        if (rc == ST_OK)
            line_start = after_tag(&l, trim, kind != '{');
    }
    if (rc == ST_OK && !emit(&l, JT_EOF, len, src + len, 0))
        rc = ST_ERR_NOMEM;
    *toks = l.toks;
    *n = l.n;
    return rc;
}
