/* command_r.c -- Cohere Command-R / R+ as llama.cpp's built-in "command-r"
 * template writes it (--chat-template command-r): per system, user or
 * assistant message "<|START_OF_TURN_TOKEN|><|{SYSTEM,USER,CHATBOT}_TOKEN|>"
 * + the content stripped of surrounding whitespace + "<|END_OF_TURN_TOKEN|>";
 * other roles are left out; the generation prompt opens a CHATBOT turn. No
 * BOS, no tools (the models' own Jinja templates have those).
 */
#include "chat/formats/internal.h"

#define CR_TURN "<|START_OF_TURN_TOKEN|>"
#define CR_END  "<|END_OF_TURN_TOKEN|>"

enum st_status st_chat_render_command_r(const struct st_chat_req *req, struct st_buf *out)
{
    enum st_status rc = ST_OK;

    for (size_t i = 0; i < req->n_msgs && rc == ST_OK; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        const char *open = chat_role_is(m, "system")      ? CR_TURN "<|SYSTEM_TOKEN|>"
                           : chat_role_is(m, "user")      ? CR_TURN "<|USER_TOKEN|>"
                           : chat_role_is(m, "assistant") ? CR_TURN "<|CHATBOT_TOKEN|>"
                                                          : NULL;
        if (!open)
            continue;
        rc = st_chat_puts(out, open);
        if (rc == ST_OK)
            rc = st_chat_put(out, st_chat_strip(chat_content(m), 3, NULL));
        if (rc == ST_OK)
            rc = st_chat_puts(out, CR_END);
    }
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, CR_TURN "<|CHATBOT_TOKEN|>");
    return rc;
}
