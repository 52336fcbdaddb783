/* fuzz_jinja.c -- libFuzzer on the Jinja interpreter (src/chat/jinja/):
 * the input is a template, parsed and rendered with a conversation (tools,
 * tool calls, reasoning) under small limits. Checks, besides no crash,
 * leak or undefined behaviour: a rejected template's error names a line;
 * a render stays within its output bound; nothing hangs (the step bound). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat/jinja/jinja.h"

static const char ctx_json[] =
    "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
    "{\"role\":\"user\",\"content\":\"Hi <b>there</b> \\u00e9\"},"
    "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"hmm\","
    "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
    "\"arguments\":{\"a\":1,\"b\":[true,null,2.5]}}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"{\\\"ok\\\":1}\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}}}],"
    "\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cJSON *ctx;
    struct st_jinja_tmpl *t = NULL;
    struct st_jinja_opts opts;
    struct st_err err = { 0 };
    struct st_buf out;

    if (!ctx)
        ctx = cJSON_Parse(ctx_json);
    if (st_jinja_parse((const char *)data, size, &t, &err) != ST_OK) {
        if (err.code == ST_ERR_INVALID && !strstr(err.msg, "line "))
            abort();            /* a syntax error must say where */
        return 0;
    }
    st_jinja_opts_default(&opts);
    opts.now_s = 1767225600;
    opts.max_output_bytes = 1 << 16;
    opts.max_memory_bytes = 8 << 20;
    opts.max_steps = 200000;
    opts.max_depth = 100;
    st_buf_init(&out);
    enum st_status rc = st_jinja_render(t, ctx, &opts, &out, &err);
    if (rc == ST_OK && out.len > opts.max_output_bytes)
        abort();
    if (rc == ST_ERR_INVALID && !strstr(err.msg, "line "))
        abort();
    st_buf_fini(&out);
    st_jinja_free(t);
    return 0;
}
