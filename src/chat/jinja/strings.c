/* strings.c -- Python's str methods the templates call, shared by the
 * methods (x.strip()) and the filters (x | trim): strip, split, replace,
 * case changes, find.
 */
#include <string.h>

#include "chat/formats/internal.h"
#include "chat/jinja/strings.h"

enum st_status js_strip(struct jrender *r, struct st_str s, int which, const struct jv *chars,
                        struct st_str *out)
{
    char *set = NULL;

    if (chars && chars->kind == JV_STR) {
        /* st_chat_strip reads a C string: bytes after a NUL would be lost */
        if (!(set = ja_strdup(r->a, chars->u.s.ptr, chars->u.s.len)))
            return jr_nomem(r);
    } else if (chars && chars->kind != JV_NONE && chars->kind != JV_UNDEF) {
        return jr_fail(r, "strip arg must be None or str");
    }
    *out = st_chat_strip(s, which, set);
    return ST_OK;
}

static bool ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static enum st_status push_str(struct jrender *r, struct jlist *l, const char *p, size_t n)
{
    return jv_list_push(r->a, l, jv_str((struct st_str){ p, n })) == ST_OK ? ST_OK : jr_nomem(r);
}

enum st_status js_split(struct jrender *r, struct st_str s, const struct jv *sep,
                        int64_t maxsplit, struct jv *out)
{
    struct jlist *l = jv_list_new(r->a, 0);
    size_t i = 0, start;

    if (!l)
        return jr_nomem(r);
    out->kind = JV_LIST;
    out->u.l = l;
    if (!sep || sep->kind == JV_NONE || sep->kind == JV_UNDEF) {
        while (i < s.len) {
            while (i < s.len && ascii_space(s.ptr[i]))
                i++;
            if (i >= s.len)
                break;
            start = i;
            if (maxsplit >= 0 && (int64_t)l->n >= maxsplit) {
                size_t end = s.len;
                while (end > start && ascii_space(s.ptr[end - 1]))
                    end--;
                return push_str(r, l, s.ptr + start, end - start);
            }
            while (i < s.len && !ascii_space(s.ptr[i]))
                i++;
            TRY(push_str(r, l, s.ptr + start, i - start));
        }
        return ST_OK;
    }
    if (sep->kind != JV_STR || sep->u.s.len == 0)
        return jr_fail(r, "split: empty or non-string separator");
    for (start = 0;;) {
        const char *hit = NULL;
        if (maxsplit < 0 || (int64_t)l->n < maxsplit)
            hit = s.len - start >= sep->u.s.len
                      ? memmem(s.ptr + start, s.len - start, sep->u.s.ptr, sep->u.s.len)
                      : NULL;
        if (!hit)
            return push_str(r, l, s.ptr + start, s.len - start);
        TRY(push_str(r, l, s.ptr + start, (size_t)(hit - (s.ptr + start))));
        start = (size_t)(hit - s.ptr) + sep->u.s.len;
    }
}

enum st_status js_replace(struct jrender *r, struct st_str s, struct st_str old,
                          struct st_str new, int64_t count, struct st_str *out)
{
    struct st_buf b;
    enum st_status rc = ST_OK;
    size_t i = 0;
    int64_t done = 0;

    st_buf_init(&b);
    while (rc == ST_OK && i <= s.len) {
        const char *hit = NULL;
        if (count < 0 || done < count)
            hit = old.len == 0 ? s.ptr + i
                  : (s.len - i >= old.len ? memmem(s.ptr + i, s.len - i, old.ptr, old.len) : NULL);
        if (!hit) {
            rc = st_buf_append(&b, s.ptr + i, s.len - i);
            break;
        }
        size_t at = (size_t)(hit - s.ptr);
        rc = st_buf_append(&b, s.ptr + i, at - i);
        if (rc == ST_OK)
            rc = st_buf_append(&b, new.ptr, new.len);
        done++;
        if (old.len == 0) {          /* Python inserts between every character */
            if (at < s.len && rc == ST_OK)
                rc = st_buf_append(&b, s.ptr + at, 1);
            i = at + 1;
        } else {
            i = at + old.len;
        }
        if (b.len > r->lim->max_output_bytes)
            rc = ST_ERR_INVALID;
    }
    if (rc == ST_OK) {
        out->ptr = ja_strdup(r->a, b.data ? b.data : "", b.len);
        out->len = b.len;
        rc = out->ptr ? ST_OK : ST_ERR_NOMEM;
    }
    st_buf_fini(&b);
    if (rc == ST_ERR_INVALID)
        return jr_fail(r, "replace grew past %zu bytes", r->lim->max_output_bytes);
    return rc == ST_OK ? ST_OK : jr_nomem(r);
}

/* mode: 'u' upper, 'l' lower, 'c' capitalize, 't' title (ASCII letters). */
enum st_status js_case(struct jrender *r, struct st_str s, char mode, struct st_str *out)
{
    char *p = ja_strdup(r->a, s.ptr, s.len);
    bool word = false;

    if (!p)
        return jr_nomem(r);
    for (size_t i = 0; i < s.len; i++) {
        char c = p[i];
        bool up = mode == 'u' || (mode == 'c' && i == 0) || (mode == 't' && !word);
        if (up && c >= 'a' && c <= 'z')
            p[i] = (char)(c - 32);
        else if (!up && mode != 'u' && c >= 'A' && c <= 'Z')
            p[i] = (char)(c + 32);
        word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               ((unsigned char)c >= 0x80);
    }
    out->ptr = p;
    out->len = s.len;
    return ST_OK;
}

bool js_starts(struct st_str s, struct st_str p)
{
    return s.len >= p.len && (p.len == 0 || !memcmp(s.ptr, p.ptr, p.len));
}

bool js_ends(struct st_str s, struct st_str p)
{
    return s.len >= p.len && (p.len == 0 || !memcmp(s.ptr + s.len - p.len, p.ptr, p.len));
}

int64_t js_find(struct st_str s, struct st_str sub)
{
    const char *hit;

    if (sub.len == 0)
        return 0;
    hit = s.len >= sub.len ? memmem(s.ptr, s.len, sub.ptr, sub.len) : NULL;
    return hit ? (int64_t)(hit - s.ptr) : -1;
}

size_t js_cp_len(struct st_str s)
{
    size_t n = 0;

    for (size_t i = 0; i < s.len; i++)
        if (((unsigned char)s.ptr[i] & 0xC0) != 0x80)
            n++;
    return n;
}
