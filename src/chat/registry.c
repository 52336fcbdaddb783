/* registry.c -- the chat formats by kind: each kind's name, whether its
 * template renders tools, and which renderer of chat/formats/ writes its
 * turns (or the Jinja interpreter, when the template runs there).
 */
#include <string.h>

#include "chat/formats/internal.h"
#include "chat/internal.h"

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
    case ST_CHAT_COMMAND_R:   return "command-r";
    }
    return "chatml";
}

bool st_chat_kind_from_name(const char *name, enum st_chat_kind *out)
{
    for (int k = ST_CHAT_CHATML; k <= ST_CHAT_KIND_LAST; k++)
        if (name && strcmp(name, st_chat_kind_name((enum st_chat_kind)k)) == 0) {
            *out = (enum st_chat_kind)k;
            return true;
        }
    return false;
}

bool st_chat_renders_tools(const struct st_chat_tmpl *t)
{
    if (t->jinja)
        return t->jinja_tools;
    return t->kind == ST_CHAT_QWEN3 || t->kind == ST_CHAT_QWEN25 || t->kind == ST_CHAT_LLAMA31 ||
           t->kind == ST_CHAT_QWEN3_CODER || t->kind == ST_CHAT_MISTRAL_V7 ||
           t->kind == ST_CHAT_MISTRAL_V11 || t->kind == ST_CHAT_GLM45;
}

enum st_status st_chat_render_turns(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err)
{
    enum st_status rc;

    if (t->jinja)
        return st_chat_render_jinja(t, req, out, err);
    switch (t->kind) {
    case ST_CHAT_QWEN3:
    case ST_CHAT_QWEN25:
        rc = st_chat_render_qwen3(t, req, out, err);
        break;
    case ST_CHAT_QWEN3_CODER:
        rc = st_chat_render_qwen3coder(t, req, out, err);
        break;
    case ST_CHAT_LLAMA3:
        rc = st_chat_render_llama3(t, req, out);
        break;
    case ST_CHAT_LLAMA31:
        rc = st_chat_render_llama31(t, req, out, err);
        break;
    case ST_CHAT_MISTRAL:
        rc = st_chat_render_mistral(t, req, out, err);
        break;
    case ST_CHAT_GEMMA:
        rc = st_chat_render_gemma(t, req, out, err);
        break;
    case ST_CHAT_MISTRAL_V7:
    case ST_CHAT_MISTRAL_V11:
        rc = st_chat_render_mistral_tekken(t, req, out, err);
        break;
    case ST_CHAT_GLM45:
        rc = st_chat_render_glm45(t, req, out, err);
        break;
    case ST_CHAT_COMMAND_R:
        rc = st_chat_render_command_r(req, out);
        break;
    case ST_CHAT_CHATML:
    default:
        rc = st_chat_render_chatml(req, out);
        break;
    }
    if (rc == ST_ERR_NOMEM)
        return st_err_set(err, rc, "chat template: out of memory");
    if (rc != ST_OK)
        return rc;          /* the renderer has filled err */
    return ST_OK;
}
