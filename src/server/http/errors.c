/* errors.c -- st_status -> HTTP status + OpenAI error type, and the error
 * body every failure is answered with (Anthropic's on /v1/messages, below):
 *
 *   {"error":{"message":"...","type":"invalid_request_error","param":"n","code":null}}
 *
 * Both maps are switches without a default: a status added to status.h
 * makes -Wswitch point here until it is mapped.
 */
#include <stdarg.h>
#include <stdio.h>

#include "server/http/http.h"

int st_server_http_status(enum st_status s)
{
    switch (s) {
    case ST_OK:              return 200;
    case ST_ERR_INVALID:     return 400;
    case ST_ERR_TOO_LONG:    return 400;
    case ST_ERR_UNSUPPORTED: return 400;   /* the client asked for something we do not do */
    case ST_ERR_AUTH:        return 401;
    case ST_ERR_NOT_FOUND:   return 404;
    case ST_ERR_QUEUE_FULL:  return 429;
    case ST_ERR_CANCELLED:   return 499;   /* nginx's "client closed request": never seen by it */
    case ST_ERR_LOADING:     return 503;
    case ST_ERR_SHUTDOWN:    return 503;
    case ST_ERR_NOMEM:       return 500;
    case ST_ERR_IO:          return 500;
    case ST_ERR_BAD_GGUF:    return 500;
    case ST_ERR_BAD_MODEL:   return 500;
    case ST_ERR_BAD_CONFIG:  return 500;
    case ST_ERR_DEVICE:      return 500;
    case ST_ERR_DEVICE_OOM:  return 503;   /* transient: retry when memory frees */
    case ST_ERR_INTERNAL:    return 500;
    case ST_STATUS_COUNT:    return 500;
    }
    return 500;
}

const char *st_server_error_type(enum st_status s)
{
    switch (s) {
    case ST_OK:              return "none";
    case ST_ERR_INVALID:     return "invalid_request_error";
    case ST_ERR_TOO_LONG:    return "invalid_request_error";
    case ST_ERR_UNSUPPORTED: return "invalid_request_error";
    case ST_ERR_NOT_FOUND:   return "invalid_request_error";   /* as OpenAI answers 404 */
    case ST_ERR_AUTH:        return "authentication_error";
    case ST_ERR_QUEUE_FULL:  return "rate_limit_error";
    case ST_ERR_CANCELLED:   return "cancelled_error";
    case ST_ERR_LOADING:     return "unavailable_error";       /* llama-server's word */
    case ST_ERR_SHUTDOWN:    return "unavailable_error";
    case ST_ERR_DEVICE_OOM:  return "unavailable_error";
    case ST_ERR_NOMEM:       return "server_error";
    case ST_ERR_IO:          return "server_error";
    case ST_ERR_BAD_GGUF:    return "server_error";
    case ST_ERR_BAD_MODEL:   return "server_error";
    case ST_ERR_BAD_CONFIG:  return "server_error";
    case ST_ERR_DEVICE:      return "server_error";
    case ST_ERR_INTERNAL:    return "server_error";
    case ST_STATUS_COUNT:    return "server_error";
    }
    return "server_error";
}

enum st_status st_api_error_set(struct st_api_error *e, enum st_status s, const char *param,
                                const char *code, const char *fmt, ...)
{
    e->status = s;
    e->http = 0;
    e->retry_after_s = 0;
    e->n_prompt_tokens = e->n_ctx = 0;
    snprintf(e->param, sizeof(e->param), "%s", param ? param : "");
    snprintf(e->code, sizeof(e->code), "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    return s;
}

int st_retry_seconds(double s)
{
    if (!(s > 0))                      /* also NaN */
        return 0;
    if (s >= 86400)
        return 86400;
    int whole = (int)s;
    return (double)whole < s ? whole + 1 : whole;
}

int st_api_error_http(const struct st_api_error *e)
{
    return e->http ? e->http : st_server_http_status(e->status);
}

enum st_status st_api_error_json(struct st_buf *out, const struct st_api_error *e)
{
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{\"error\":{");
    st_out_kv_str(&o, "message", e->message);
    st_out_kv_str(&o, "type", st_server_error_type(e->status));
    st_out_kv_str(&o, "param", e->param[0] ? e->param : NULL);
    st_out_kv_str(&o, "code", e->code[0] ? e->code : NULL);
    if (e->n_ctx > 0) {   /* llama-server's fields beside OpenAI's */
        st_out_kv_i64(&o, "n_prompt_tokens", e->n_prompt_tokens);
        st_out_kv_i64(&o, "n_ctx", e->n_ctx);
    }
    st_out_text(&o, "}}");
    return st_out_finish(&o);
}

/* Anthropic's error body, for the routes that speak its API (/v1/messages:
 * its clients parse only this shape):
 *   {"type":"error","error":{"type":"invalid_request_error","message":"..."}}
 * The type follows the HTTP status, as Anthropic's does. */
const char *st_anthropic_error_type(int http)
{
    switch (http) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:                                /* loading, shutting down, device memory */
    case 529: return "overloaded_error";
    default:  return "api_error";
    }
}

enum st_status st_anthropic_error_json(struct st_buf *out, const struct st_api_error *e)
{
    const char *type = st_anthropic_error_type(st_api_error_http(e));
    struct st_out o;
    st_out_init(&o, out);
    st_out_text(&o, "{");
    st_out_kv_str(&o, "type", "error");
    st_out_kv_raw(&o, "error", "{");
    st_out_kv_str(&o, "type", type);
    st_out_kv_str(&o, "message", e->message);
    st_out_text(&o, "}}");
    return st_out_finish(&o);
}
