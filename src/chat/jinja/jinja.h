/* chat/jinja/jinja.h -- a Jinja2 interpreter for chat templates: the subset
 * GGUF and Hugging Face templates use (docs/TEMPLATES.md lists it).
 *
 * Whitespace follows Hugging Face's apply_chat_template: trim_blocks and
 * lstrip_blocks on, autoescape off, the loopcontrols extension (break,
 * continue) on. A template is parsed once (st_jinja_parse) and rendered
 * from any thread (st_jinja_render keeps its state on the call's own
 * arena). Every render is bounded: output bytes, memory, evaluation steps
 * and nesting depth (struct st_jinja_opts), so a hostile template in a
 * GGUF fails with an error instead of hanging or exhausting the server.
 */
#ifndef STRATA_CHAT_JINJA_H
#define STRATA_CHAT_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "strata/err.h"
#include "strata/str.h"

struct st_jinja_tmpl;

struct st_jinja_opts {
    int64_t  now_s;             /* strftime_now's clock: 0 = the local time now; else
                                   this Unix time, in UTC (tests) */
    size_t   max_output_bytes;  /* rendered text */
    size_t   max_memory_bytes;  /* the render's arena (values, strings) */
    uint64_t max_steps;         /* expressions + statements evaluated */
    int      max_depth;         /* nesting of expressions, macro calls, statements */
};

/* The real clock; 4 MiB of output, 64 MiB of memory, 20 M steps, depth 200. */
void st_jinja_opts_default(struct st_jinja_opts *lim);

/* Parse 'src' (len bytes). *out: returns owned (st_jinja_free). A syntax
 * error is ST_ERR_INVALID with "line L, column C: ..." in err. */
ST_MUST_CHECK
enum st_status st_jinja_parse(const char *src, size_t len, struct st_jinja_tmpl **out,
                              struct st_err *err);
void st_jinja_free(struct st_jinja_tmpl *t);

/* Render with the variables of 'ctx' (a JSON object, borrowed: messages,
 * tools, add_generation_prompt, bos_token, ...), appended to 'out'.
 * opts NULL = the defaults. Errors: ST_ERR_INVALID (raise_exception, a type
 * error, a limit reached; err names the line), ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_jinja_render(const struct st_jinja_tmpl *t, const cJSON *ctx,
                               const struct st_jinja_opts *opts, struct st_buf *out,
                               struct st_err *err);

#endif /* STRATA_CHAT_JINJA_H */
