/* sse.c -- Server-Sent Events framing, as OpenAI streams it:
 *
 *   data: {"id":"chatcmpl-...","object":"chat.completion.chunk",...}\n
 *   \n
 *   ...
 *   data: [DONE]\n
 *   \n
 *
 * One event per chunk, one "data:" line per event (the JSON has no raw
 * newline), a blank line ending each event. Comment lines (": ...") are
 * ignored by clients and serve as keep-alives.
 */
#include <string.h>

#include "server/http/http.h"

enum st_status st_sse_data(struct st_buf *out, const char *json, size_t len)
{
    if (memchr(json, '\n', len) || memchr(json, '\r', len))
        return ST_ERR_INVALID;
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "data: ");
    st_out_raw(&o, json, len);
    st_out_text(&o, "\n\n");
    return st_out_finish(&o);
}

enum st_status st_sse_done(struct st_buf *out)
{
    return st_buf_append(out, ST_LIT("data: [DONE]\n\n"));
}

enum st_status st_sse_comment(struct st_buf *out, const char *text)
{
    if (strchr(text, '\n') || strchr(text, '\r'))
        return ST_ERR_INVALID;
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, ": ");
    st_out_text(&o, text);
    st_out_text(&o, "\n\n");
    return st_out_finish(&o);
}
