/* chat.c -- chat template recognition and the simple renderers (ChatML,
 * Llama 3, Mistral, Gemma). Qwen3 and Qwen2.5 live in chat_qwen3.c, Qwen3-Coder
 * in chat_qwen3coder.c, Llama 3.1+ in chat_llama31.c, Mistral v7 / v11 in
 * chat_mistral.c.
 *
 * Fingerprints (substrings of the Jinja source), checked in this order:
 *   "[gMASK]<sop>"                                    -> GLM-4.5 / 4.6
 *   "<|im_start|>" + "<function=" + "<parameter="   -> Qwen3-Coder
 *   "<|im_start|>" + "<tool_call>" + a think marker  -> Qwen3
 *       ("enable_thinking" present: the flag is honoured; the literal
 *        '<|im_start|>assistant\n<think>\n' means Thinking-2507)
 *   "<|im_start|>" + "<tool_call>" + Qwen2.5's system text -> Qwen2.5
 *   "<|im_start|>"                                    -> ChatML
 *   "<|start_header_id|>" + "Cutting Knowledge Date"  -> Llama 3.1+
 *       ("strftime_now" present: the default date is today, as in 3.2)
 *   "<|start_header_id|>"                             -> Llama 3
 *   "<start_of_turn>"                                 -> Gemma
 *   "[TOOL_CALLS]" + "[ARGS]"                         -> Mistral v11
 *   "[SYSTEM_PROMPT]"                                 -> Mistral v7
 *       (both: the default system message is read from the template)
 *   "[INST]"                                          -> Mistral
 * Each renderer reproduces its template's Jinja output for the message
 * shapes that template handles (see docs/TOKENIZER.md for the exact forms).
 */
#include <string.h>

#include "strata/log.h"

#include "chat_internal.h"
#include "internal.h"

enum st_status st_chat_put(struct st_buf *out, struct st_str s)
{
    return st_buf_append(out, s.ptr, s.len);
}

enum st_status st_chat_puts(struct st_buf *out, const char *s)
{
    return st_buf_append(out, s, strlen(s));
}

enum st_status st_chat_call_args(struct st_str args, st_chat_arg_fn *arg, struct st_buf *out)
{
    struct st_buf dec;
    struct st_str obj = args, k, v;
    enum st_status rc = ST_OK;
    size_t pos = 0;

    st_buf_init(&dec);
    if (st_json_type(args) == ST_JSON_STRING) {
        rc = st_json_string_append(args, &dec);
        if (rc != ST_OK || !st_json_value((struct st_str){ dec.data ? dec.data : "", dec.len },
                                          &obj))
            obj.ptr = NULL;
    }
    if (rc == ST_OK && obj.ptr && st_json_type(obj) == ST_JSON_OBJECT)
        while (rc == ST_OK && st_json_object_next(obj, &pos, &k, &v))
            rc = arg(k, v, out);
    st_buf_fini(&dec);
    return rc == ST_ERR_NOMEM ? rc : ST_OK;
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

static bool has(const char *src, size_t len, const char *needle)
{
    return src && memmem(src, len, needle, strlen(needle)) != NULL;
}

static void copy_token(char *dst, size_t cap, const char *src)
{
    dst[0] = '\0';
    if (src && strlen(src) < cap)
        memcpy(dst, src, strlen(src) + 1);
}

void st_chat_tmpl_init(struct st_chat_tmpl *t, const char *source, size_t len,
                       const char *bos, const char *eos, const char *model_name)
{
    memset(t, 0, sizeof(*t));
    copy_token(t->bos, sizeof(t->bos), bos);
    copy_token(t->eos, sizeof(t->eos), eos);
    t->known = true;
    if (has(source, len, "[gMASK]<sop>")) {
        t->kind = ST_CHAT_GLM45;
        t->thinking_flag = has(source, len, "enable_thinking");
    } else if (has(source, len, "<|im_start|>") && has(source, len, "<function=") &&
        has(source, len, "<parameter=")) {
        t->kind = ST_CHAT_QWEN3_CODER;
    } else if (has(source, len, "<|im_start|>") && has(source, len, "<tool_call>") &&
        (has(source, len, "<think>") || has(source, len, "reasoning_content"))) {
        t->kind = ST_CHAT_QWEN3;
        t->think_open = has(source, len, "<|im_start|>assistant\\n<think>\\n'");
        t->thinking_flag = has(source, len, "enable_thinking");
    } else if (has(source, len, "<|im_start|>") && has(source, len, "<tool_call>") &&
               has(source, len, ST_CHAT_QWEN25_SYSTEM)) {
        t->kind = ST_CHAT_QWEN25;
    } else if (has(source, len, "<|im_start|>")) {
        t->kind = ST_CHAT_CHATML;
    } else if (has(source, len, "<|start_header_id|>") && has(source, len, "<|end_header_id|>") &&
               has(source, len, "Cutting Knowledge Date")) {
        t->kind = ST_CHAT_LLAMA31;
        t->date_today = has(source, len, "strftime_now");
    } else if (has(source, len, "<|start_header_id|>") && has(source, len, "<|end_header_id|>")) {
        t->kind = ST_CHAT_LLAMA3;
    } else if (has(source, len, "<start_of_turn>")) {
        t->kind = ST_CHAT_GEMMA;
    } else if (has(source, len, "[TOOL_CALLS]") && has(source, len, "[ARGS]")) {
        t->kind = ST_CHAT_MISTRAL_V11;
        st_chat_mistral_scan(t, source, len, model_name);
    } else if (has(source, len, "[SYSTEM_PROMPT]")) {
        t->kind = ST_CHAT_MISTRAL_V7;
        st_chat_mistral_scan(t, source, len, model_name);
    } else if (has(source, len, "[INST]")) {
        t->kind = ST_CHAT_MISTRAL;
    } else {
        t->kind = ST_CHAT_CHATML;
        t->known = false;
        st_log(ST_LOG_WARN, "chat", "%s: %s chat template; using ChatML",
               model_name ? model_name : "model",
               (source && len) ? "unrecognized" : "no");
    }
}

const char *st_chat_kind_name(enum st_chat_kind kind)
{
    switch (kind) {
    case ST_CHAT_CHATML:  return "chatml";
    case ST_CHAT_QWEN3:   return "qwen3";
    case ST_CHAT_QWEN25:  return "qwen2.5";
    case ST_CHAT_LLAMA3:  return "llama3";
    case ST_CHAT_LLAMA31: return "llama3.1";
    case ST_CHAT_MISTRAL: return "mistral";
    case ST_CHAT_GEMMA:   return "gemma";
    case ST_CHAT_QWEN3_CODER: return "qwen3-coder";
    case ST_CHAT_MISTRAL_V7:  return "mistral-v7";
    case ST_CHAT_MISTRAL_V11: return "mistral-v11";
    case ST_CHAT_GLM45:       return "glm4.5";
    }
    return "chatml";
}

enum st_status st_chat_im_turn(const struct st_chat_msg *m, struct st_buf *out)
{
    enum st_status rc = st_chat_puts(out, "<|im_start|>");

    if (rc == ST_OK)
        rc = st_chat_put(out, m->role);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n");
    if (rc == ST_OK)
        rc = st_chat_put(out, chat_content(m));
    return rc == ST_OK ? st_chat_puts(out, "<|im_end|>\n") : rc;
}

/* <|im_start|>{role}\n{content}<|im_end|>\n per message. */
static enum st_status render_chatml(const struct st_chat_req *req, struct st_buf *out)
{
    enum st_status rc = ST_OK;
    size_t i;

    for (i = 0; i < req->n_msgs && rc == ST_OK; i++)
        rc = st_chat_im_turn(&req->msgs[i], out);
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, "<|im_start|>assistant\n");
    return rc;
}

/* Llama 3: bos, then <|start_header_id|>{role}<|end_header_id|>\n\n
 * {content|trim}<|eot_id|> per message. */
static enum st_status render_llama3(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req, struct st_buf *out)
{
    enum st_status rc = st_chat_puts(out, t->bos);
    size_t i;

    for (i = 0; i < req->n_msgs && rc == ST_OK; i++) {
        rc = st_chat_puts(out, "<|start_header_id|>");
        if (rc == ST_OK)
            rc = st_chat_put(out, req->msgs[i].role);
        if (rc == ST_OK)
            rc = st_chat_puts(out, "<|end_header_id|>\n\n");
        if (rc == ST_OK)
            rc = st_chat_put(out, st_chat_strip(chat_content(&req->msgs[i]), 3, NULL));
        if (rc == ST_OK)
            rc = st_chat_puts(out, "<|eot_id|>");
    }
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return rc;
}

/* After an optional leading system message, roles must alternate
 * user/assistant starting with user (Mistral and Gemma raise otherwise). */
static enum st_status check_alternating(const struct st_chat_req *req, size_t first,
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

/* Mistral v3 ([INST] without tools): bos, "[INST] {user}[/INST]",
 * " {assistant|trim}{eos}"; the system message goes in front of the LAST
 * user message, separated by a blank line. */
static enum st_status render_mistral(const struct st_chat_tmpl *t,
                                     const struct st_chat_req *req,
                                     struct st_buf *out, struct st_err *err)
{
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0, i;
    enum st_status rc = check_alternating(req, first, "mistral", err);

    if (rc == ST_OK)
        rc = st_chat_puts(out, t->bos);
    for (i = first; i < req->n_msgs && rc == ST_OK; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "user")) {
            rc = st_chat_puts(out, "[INST] ");
            if (rc == ST_OK && first && i + 1 == req->n_msgs) {
                rc = st_chat_put(out, chat_content(&req->msgs[0]));
                if (rc == ST_OK)
                    rc = st_chat_puts(out, "\n\n");
            }
            if (rc == ST_OK)
                rc = st_chat_put(out, chat_content(m));
            if (rc == ST_OK)
                rc = st_chat_puts(out, "[/INST]");
        } else {
            rc = st_chat_puts(out, " ");
            if (rc == ST_OK)
                rc = st_chat_put(out, st_chat_strip(chat_content(m), 3, NULL));
            if (rc == ST_OK)
                rc = st_chat_puts(out, t->eos);
        }
    }
    return rc;
}

/* Gemma: bos, "<start_of_turn>{user|model}\n{content|trim}<end_of_turn>\n";
 * a system message becomes a prefix ("{system}\n\n") of the first turn
 * (Gemma 3; Gemma 2's template would refuse a system message instead). */
static enum st_status render_gemma(const struct st_chat_tmpl *t,
                                   const struct st_chat_req *req,
                                   struct st_buf *out, struct st_err *err)
{
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0, i;
    enum st_status rc = check_alternating(req, first, "gemma", err);

    if (rc == ST_OK)
        rc = st_chat_puts(out, t->bos);
    for (i = first; i < req->n_msgs && rc == ST_OK; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        rc = st_chat_puts(out, chat_role_is(m, "assistant") ? "<start_of_turn>model\n"
                                                       : "<start_of_turn>user\n");
        if (rc == ST_OK && first && i == first) {
            rc = st_chat_put(out, chat_content(&req->msgs[0]));
            if (rc == ST_OK)
                rc = st_chat_puts(out, "\n\n");
        }
        if (rc == ST_OK)
            rc = st_chat_put(out, st_chat_strip(chat_content(m), 3, NULL));
        if (rc == ST_OK)
            rc = st_chat_puts(out, "<end_of_turn>\n");
    }
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, "<start_of_turn>model\n");
    return rc;
}

bool st_chat_renders_tools(const struct st_chat_tmpl *t)
{
    return t->kind == ST_CHAT_QWEN3 || t->kind == ST_CHAT_QWEN25 || t->kind == ST_CHAT_LLAMA31 ||
           t->kind == ST_CHAT_QWEN3_CODER || t->kind == ST_CHAT_MISTRAL_V7 ||
           t->kind == ST_CHAT_MISTRAL_V11 || t->kind == ST_CHAT_GLM45;
}

enum st_status st_chat_render(const struct st_chat_tmpl *t,
                              const struct st_chat_req *req,
                              struct st_buf *out, struct st_err *err)
{
    if (req->n_msgs == 0)
        return st_err_set(err, ST_ERR_INVALID, "chat template: no messages");
    for (size_t i = 0; i < req->n_msgs; i++)
        if (!req->msgs[i].role.ptr || req->msgs[i].role.len == 0)
            return st_err_set(err, ST_ERR_INVALID, "chat template: message %zu has no role", i);
    return req->continue_final ? st_chat_render_continued(t, req, out, err)
                               : st_chat_render_turns(t, req, out, err);
}

enum st_status st_chat_render_turns(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err)
{
    enum st_status rc;

    switch (t->kind) {
    case ST_CHAT_QWEN3:
    case ST_CHAT_QWEN25:
        rc = st_chat_render_qwen3(t, req, out, err);
        break;
    case ST_CHAT_QWEN3_CODER:
        rc = st_chat_render_qwen3coder(t, req, out, err);
        break;
    case ST_CHAT_LLAMA3:
        rc = render_llama3(t, req, out);
        break;
    case ST_CHAT_LLAMA31:
        rc = st_chat_render_llama31(t, req, out, err);
        break;
    case ST_CHAT_MISTRAL:
        rc = render_mistral(t, req, out, err);
        break;
    case ST_CHAT_GEMMA:
        rc = render_gemma(t, req, out, err);
        break;
    case ST_CHAT_MISTRAL_V7:
    case ST_CHAT_MISTRAL_V11:
        rc = st_chat_render_mistral_tekken(t, req, out, err);
        break;
    case ST_CHAT_GLM45:
        rc = st_chat_render_glm45(t, req, out, err);
        break;
    case ST_CHAT_CHATML:
    default:
        rc = render_chatml(req, out);
        break;
    }
    if (rc == ST_ERR_NOMEM)
        return st_err_set(err, rc, "chat template: out of memory");
    if (rc != ST_OK)
        return rc;          /* the renderer has filled err */
    return ST_OK;
}
