/* chat/formats/internal.h -- the renderers of chat/formats/ (one file per
 * model family), what they share (common.c), and what chat.c and
 * registry.c call.
 */
#ifndef STRATA_CHAT_FORMATS_INTERNAL_H
#define STRATA_CHAT_FORMATS_INTERNAL_H

#include "strata/chat.h"
#include "strata/out.h"

/* Content as a view: NULL content renders as "". */
static inline struct st_str chat_content(const struct st_chat_msg *m)
{
    struct st_str s = m->content;
    if (!s.ptr) {
        s.ptr = "";
        s.len = 0;
    }
    return s;
}

static inline bool chat_role_is(const struct st_chat_msg *m, const char *role)
{
    return st_str_eq_c(m->role, role);
}

/* The renderers append through a struct st_out (strata/out.h): a view
 * here, C strings with st_out_text, JSON with chat/json's st_json_out_*. */
static inline void chat_put(struct st_out *o, struct st_str s)
{
    st_out_raw(o, s.ptr, s.len);
}

/* A tool call's arguments as the templates' `arguments.items()` loop sees
 * them: arg(o, key, value) per member of the object, where a JSON string
 * holding an object (what OpenAI clients send) is parsed first; anything
 * that is not an object renders nothing (the template's |items would
 * fail). Only running out of memory fails o: any other failure of arg
 * stops the loop and the render goes on. */
typedef void st_chat_arg_fn(struct st_out *o, struct st_str key, struct st_str value);
void st_chat_call_args(struct st_out *o, struct st_str args, st_chat_arg_fn *arg);

/* One ChatML turn: "<|im_start|>{role}\n{content}<|im_end|>\n" (ChatML and
 * the Qwen templates' plain turns). */
void st_chat_im_turn(struct st_out *o, const struct st_chat_msg *m);

/* Python str.strip() family on a view: which = 1 left, 2 right, 3 both.
 * chars = NULL strips Python whitespace; else only bytes in 'chars'. */
struct st_str st_chat_strip(struct st_str s, int which, const char *chars);

/* Qwen2.5's system prompt when the messages bring none; also what tells its
 * template apart from other ChatML templates with <tool_call>. */
#define ST_CHAT_QWEN25_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

/* Qwen3 and Qwen2.5 (t->kind says which; Qwen2.5 is Qwen3 less thinking,
 * plus the default system prompt). */
enum st_status st_chat_render_qwen3(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err);

/* Qwen3-Coder (qwen3coder.c). */
enum st_status st_chat_render_qwen3coder(const struct st_chat_tmpl *t,
                                         const struct st_chat_req *req,
                                         struct st_buf *out, struct st_err *err);

/* Llama 3.1, 3.2 and 3.3 (llama31.c). */
enum st_status st_chat_render_llama31(const struct st_chat_tmpl *t,
                                      const struct st_chat_req *req,
                                      struct st_buf *out, struct st_err *err);

/* Mistral v7 / v11 (mistral.c). scan: read the template's default
 * system message (and v7's parallel_tool_prompt) into *t at init; t->kind
 * already set. */
void st_chat_mistral_scan(struct st_chat_tmpl *t, const char *src, size_t len,
                          const char *model_name);
enum st_status st_chat_render_mistral_tekken(const struct st_chat_tmpl *t,
                                             const struct st_chat_req *req,
                                             struct st_buf *out, struct st_err *err);

/* Command-R as llama.cpp's built-in "command-r" (command_r.c). */
enum st_status st_chat_render_command_r(const struct st_chat_req *req, struct st_buf *out);

/* GLM-4.5 / 4.6 (glm45.c). */
enum st_status st_chat_render_glm45(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err);

/* The templates without tools: ChatML (chatml.c), Llama 3 (llama31.c),
 * Mistral v3 (mistral.c), Gemma (gemma.c). */
enum st_status st_chat_render_chatml(const struct st_chat_req *req, struct st_buf *out);
enum st_status st_chat_render_llama3(const struct st_chat_tmpl *t,
                                     const struct st_chat_req *req, struct st_buf *out);
enum st_status st_chat_render_mistral(const struct st_chat_tmpl *t,
                                      const struct st_chat_req *req,
                                      struct st_buf *out, struct st_err *err);
enum st_status st_chat_render_gemma(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err);

/* After an optional leading system message, roles must alternate
 * user/assistant starting with user (Mistral and Gemma raise otherwise;
 * common.c). 'tmpl' names the template in the error. */
enum st_status st_chat_check_alternating(const struct st_chat_req *req, size_t first,
                                         const char *tmpl, struct st_err *err);

/* ---- call_body.c: scanning a tagged call body (the reply hooks of
 * qwen3coder.c and glm45.c) ---- */
#define LIT(s) s, (sizeof(s) - 1)

bool st_chat_is_blank(char c);                               /* ' ' \t \n \r */
size_t st_chat_blanks(const char *s, size_t i, size_t n);    /* past the blanks at s[i] */
/* s[i..n) starts with lit[0..k). */
bool st_chat_at(const char *s, size_t i, size_t n, const char *lit, size_t k);
struct st_str st_chat_trim(struct st_str v);                 /* blanks off both ends */
/* The first occurrence of lit in s[i..n), or n. */
size_t st_chat_find(const char *s, size_t i, size_t n, const char *lit, size_t k);
/* JSON string 's' equals the bytes name[0..len) (tmp: scratch). */
bool st_chat_json_str_is(struct st_str s, const char *name, size_t len, struct st_buf *tmp);
/* Append [", "] "KEY": VALUE. json: the format's typing rule reads the
 * value as JSON text when it parses, Python's True / False too (glm: the
 * value trimmed of blanks, and None as well). */
bool st_chat_put_arg(struct st_buf *out, bool first, struct st_str key, struct st_str val,
                     bool json, bool glm);

#endif /* STRATA_CHAT_FORMATS_INTERNAL_H */
