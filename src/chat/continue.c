/* continue.c -- a prompt that ends inside the last message, an
 * assistant's, so the model goes on writing that message's text instead of
 * starting a new turn (Anthropic's prefill; vLLM's continue_final_message).
 *
 * Every template renders an assistant turn as opening + content + closing,
 * each its own (Qwen3's empty think block before the content, Llama's
 * header, Mistral's </s> after it). Rather than teach every renderer to stop
 * early, the turn is rendered whole, without a generation prompt, with a
 * marker appended to its content, and the prompt is cut where the marker
 * lands: what the template writes before the content stays, nothing after
 * it does. The last occurrence is the one: the final message is the last
 * thing rendered. A template that rewrites the end of the content (Llama's
 * `| trim`) sees the marker there, so the client's text is kept as written.
 */
#include <stdlib.h>
#include <string.h>

#include "chat/formats/internal.h"
#include "chat/internal.h"

/* Bytes no prompt text holds in practice (ESC and unit separators). */
static const char cut_marker[] = "\x1b\x1f" "strata-continue" "\x1f\x1b";

/* Last occurrence of the marker in b, or NULL. */
static const char *find_marker(const struct st_buf *b)
{
    size_t n = sizeof(cut_marker) - 1;
    for (size_t i = b->len >= n ? b->len - n + 1 : 0; i-- > 0;)
        if (memcmp(b->data + i, cut_marker, n) == 0)
            return b->data + i;
    return NULL;
}

static enum st_status check_last(const struct st_chat_req *req, struct st_err *err)
{
    const struct st_chat_msg *last = &req->msgs[req->n_msgs - 1];
    if (!chat_role_is(last, "assistant"))
        return st_err_set(err, ST_ERR_INVALID,
                          "chat template: only an assistant message can be continued; "
                          "message %zu is a '%.*s' message", req->n_msgs - 1,
                          (int)ST_MIN(last->role.len, 32), last->role.ptr);
    if (last->tool_calls.ptr && last->tool_calls.len > 0 &&
        !st_str_eq_c(last->tool_calls, "[]") && !st_str_eq_c(last->tool_calls, "null"))
        return st_err_set(err, ST_ERR_INVALID,
                          "chat template: message %zu has tool calls; only an assistant "
                          "message's text can be continued", req->n_msgs - 1);
    return ST_OK;
}

enum st_status st_chat_render_continued(const struct st_chat_tmpl *t,
                                        const struct st_chat_req *req,
                                        struct st_buf *out, struct st_err *err)
{
    enum st_status rc = check_last(req, err);
    if (rc != ST_OK)
        return rc;
    size_t n = req->n_msgs;
    struct st_str content = chat_content(&req->msgs[n - 1]);
    struct st_chat_msg *msgs = malloc(n * sizeof(*msgs));
    char *marked = malloc(content.len + sizeof(cut_marker));
    struct st_buf whole;
    st_buf_init(&whole);
    if (!msgs || !marked) {
        rc = ST_ERR_NOMEM;
        goto done;
    }
    memcpy(msgs, req->msgs, n * sizeof(*msgs));
    memcpy(marked, content.ptr, content.len);
    memcpy(marked + content.len, cut_marker, sizeof(cut_marker));
    msgs[n - 1].content = (struct st_str){ marked, content.len + sizeof(cut_marker) - 1 };
    struct st_chat_req turns = *req;
    turns.msgs = msgs;
    turns.add_generation_prompt = false;
    turns.continue_final = false;
    rc = st_chat_render_turns(t, &turns, &whole, err);
    const char *cut = rc == ST_OK ? find_marker(&whole) : NULL;
    if (rc == ST_OK && !cut)
        rc = st_err_set(err, ST_ERR_INVALID,
                        "chat template: the %s template drops the text of message %zu, so it "
                        "cannot be continued", st_chat_kind_name(t->kind), n - 1);
    if (rc == ST_OK)
        rc = st_buf_append(out, whole.data, (size_t)(cut - whole.data));
done:
    st_buf_fini(&whole);
    free(marked);
    free(msgs);
    if (rc == ST_ERR_NOMEM)
        return st_err_set(err, rc, "chat template: out of memory");
    return rc;
}
