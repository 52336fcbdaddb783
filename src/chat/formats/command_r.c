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
    struct st_out o;

    st_out_init(&o, out);
    for (size_t i = 0; i < req->n_msgs; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        const char *open = chat_role_is(m, "system")      ? CR_TURN "<|SYSTEM_TOKEN|>"
                           : chat_role_is(m, "user")      ? CR_TURN "<|USER_TOKEN|>"
                           : chat_role_is(m, "assistant") ? CR_TURN "<|CHATBOT_TOKEN|>"
                                                          : NULL;
        if (!open)
            continue;
        st_out_text(&o, open);
        chat_put(&o, st_chat_strip(chat_content(m), 3, NULL));
        st_out_text(&o, CR_END);
    }
    if (req->add_generation_prompt)
        st_out_text(&o, CR_TURN "<|CHATBOT_TOKEN|>");
    return st_out_finish(&o);
}
