/* chat.c -- chat template recognition (st_chat_tmpl_init) and the entry
 * point st_chat_render. Each model family's renderer lives in
 * chat/formats/ (one file per family); registry.c picks the renderer of a
 * template's kind; continue.c renders a prompt that ends inside the last
 * message.
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

#include "chat/formats/internal.h"
#include "chat/internal.h"

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
    st_chat_tmpl_recognize(t, source, len, bos, eos, model_name, true);
}

void st_chat_tmpl_recognize(struct st_chat_tmpl *t, const char *source, size_t len,
                            const char *bos, const char *eos, const char *model_name,
                            bool warn)
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
        if (warn)
            st_log(ST_LOG_WARN, "chat", "%s: %s chat template; using ChatML",
                   model_name ? model_name : "model",
                   (source && len) ? "unrecognized" : "no");
    }
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
