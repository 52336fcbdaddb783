/* common.c -- what the renderers of chat/formats/ share: a tool call's
 * arguments as the templates' items() loop sees them, Python's
 * str.strip(), and the role check of Mistral and Gemma.
 */
#include <string.h>

#include "chat/formats/internal.h"
#include "chat/json/json.h"
#include "tok/unicode/unicode.h"

void st_chat_call_args(struct st_out *o, struct st_str args, st_chat_arg_fn *arg)
{
    struct st_buf dec;
    struct st_str obj = args, k, v;
    struct st_out a;    /* the arguments' own status: see internal.h */
    size_t pos = 0;

    if (!st_out_ok(o))
        return;
    st_buf_init(&dec);
    st_out_init(&a, o->buf);
    if (st_json_type(args) == ST_JSON_STRING) {
        enum st_status rc = st_json_string_append(args, &dec);
        st_out_check(&a, rc);
        if (rc != ST_OK || !st_json_value((struct st_str){ dec.data ? dec.data : "", dec.len },
                                          &obj))
            obj.ptr = NULL;
    }
    if (obj.ptr && st_json_type(obj) == ST_JSON_OBJECT)
        while (st_out_ok(&a) && st_json_object_next(obj, &pos, &k, &v))
            arg(&a, k, v);
    st_buf_fini(&dec);
    if (st_out_finish(&a) == ST_ERR_NOMEM)
        st_out_check(o, ST_ERR_NOMEM);
}

/* Python's str.isspace() for one code point at s (ASCII fast path). */
static size_t py_space_at(const char *s, size_t n, bool back)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i, k;
    uint32_t cp;

    if (!back) {
        if (p[0] < 0x80)
            return (st_uni_is_space(p[0]) || (p[0] >= 0x1C && p[0] <= 0x1F)) ? 1 : 0;
        k = st_utf8_decode(p, n, &cp);
        return (!(cp & ST_UNI_INVALID) && st_uni_is_space(cp)) ? k : 0;
    }
    if (p[n - 1] < 0x80)
        return (st_uni_is_space(p[n - 1]) || (p[n - 1] >= 0x1C && p[n - 1] <= 0x1F)) ? 1 : 0;
    for (i = n - 1; i > 0 && n - i < 4 && (p[i] & 0xC0) == 0x80; i--)
        ;
    k = st_utf8_decode(p + i, n - i, &cp);
    return (i + k == n && !(cp & ST_UNI_INVALID) && st_uni_is_space(cp)) ? k : 0;
}

struct st_str st_chat_strip(struct st_str s, int which, const char *chars)
{
    size_t k;

    while ((which & 1) && s.len > 0) {
        k = chars ? (strchr(chars, s.ptr[0]) && s.ptr[0] ? 1 : 0) : py_space_at(s.ptr, s.len, false);
        if (!k)
            break;
        s.ptr += k;
        s.len -= k;
    }
    while ((which & 2) && s.len > 0) {
        k = chars ? (strchr(chars, s.ptr[s.len - 1]) && s.ptr[s.len - 1] ? 1 : 0)
                  : py_space_at(s.ptr, s.len, true);
        if (!k)
            break;
        s.len -= k;
    }
    return s;
}

/* After an optional leading system message, roles must alternate
 * user/assistant starting with user (Mistral and Gemma raise otherwise). */
enum st_status st_chat_check_alternating(const struct st_chat_req *req, size_t first,
                                         const char *tmpl, struct st_err *err)
{
    size_t i;

    for (i = first; i < req->n_msgs; i++) {
        bool user = chat_role_is(&req->msgs[i], "user");
        if (user != ((i - first) % 2 == 0) || (!user && !chat_role_is(&req->msgs[i], "assistant")))
            return st_err_set(err, ST_ERR_INVALID,
                              "%s template: message %zu: roles must alternate user/assistant "
                              "after an optional system message", tmpl, i);
    }
    return ST_OK;
}
