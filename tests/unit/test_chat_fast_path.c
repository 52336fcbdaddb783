/* test_chat_fast_path.c -- the fast path (src/chat/fast_path.c): every
 * real template of tests/data/templates/ that a C renderer is listed as
 * matching is rendered with every conversation of conversations.json
 * through both the C renderer and the Jinja interpreter, which must agree
 * byte for byte (or both refuse). STRATA_FAST_PATH_LIST=1 prints, for every
 * template a C renderer recognizes, whether the two agree and its hash:
 * how entries for the table are found. Also: st_chat_tmpl_load's choices
 * (built-in names, Jinja source, a parse error naming the line), the
 * variables a template gets, and Seed-OSS's thinking_budget. */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "chat/internal.h"
#include "chat/jinja/jinja.h"
#include "model/synth/synth.h"
#include "support.h"


static struct st_str member(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? st_str_c(v->valuestring) : (struct st_str){ NULL, 0 };
}

/* A copy of tool_calls with each function's arguments as a JSON string,
 * as OpenAI clients send them. */
static cJSON *string_args(const cJSON *tc)
{
    cJSON *copy = cJSON_Duplicate(tc, true), *c;

    cJSON_ArrayForEach(c, copy) {
        cJSON *fn = cJSON_GetObjectItem(c, "function");
        cJSON *args = cJSON_GetObjectItem(fn, "arguments");
        if (cJSON_IsObject(args)) {
            char *text = cJSON_PrintUnformatted(args);
            cJSON_ReplaceItemInObject(fn, "arguments", cJSON_CreateString(text));
            free(text);
        }
    }
    return copy;
}

/* conversation -> request; JSON texts it needs are kept in keep[]. */
static void to_req(const cJSON *conv, bool str_args, struct st_chat_req *req,
                   struct st_chat_msg *msgs, char **keep, size_t *n_keep)
{
    const cJSON *m, *tools = cJSON_GetObjectItem(conv, "tools");
    const cJSON *think = cJSON_GetObjectItem(conv, "enable_thinking");
    size_t n = 0;

    memset(req, 0, sizeof(*req));
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(conv, "messages")) {
        const cJSON *tc = cJSON_GetObjectItem(m, "tool_calls");
        memset(&msgs[n], 0, sizeof(msgs[n]));
        msgs[n].role = member(m, "role");
        msgs[n].content = member(m, "content");
        msgs[n].reasoning_content = member(m, "reasoning_content");
        msgs[n].tool_call_id = member(m, "tool_call_id");
        msgs[n].name = member(m, "name");
        if (tc) {
            cJSON *copy = str_args ? string_args(tc) : cJSON_Duplicate(tc, true);
            keep[*n_keep] = cJSON_PrintUnformatted(copy);
            msgs[n].tool_calls = st_str_c(keep[(*n_keep)++]);
            cJSON_Delete(copy);
        }
        n++;
    }
    req->msgs = msgs;
    req->n_msgs = n;
    if (tools) {
        keep[*n_keep] = cJSON_PrintUnformatted(tools);
        req->tools = st_str_c(keep[(*n_keep)++]);
    }
    req->add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItem(conv, "add_generation_prompt"));
    req->enable_thinking = think ? cJSON_IsTrue(think) : -1;
}

/* Both ways agree on every conversation. */
static bool agree(const char *name, const char *src, const cJSON *convs, bool verbose)
{
    struct st_chat_tmpl c, j;
    struct st_err e1 = { 0 }, e2 = { 0 };
    const cJSON *conv;
    bool ok = true;

    st_chat_tmpl_init(&c, src, strlen(src), "<s>", "</s>", name);
    j = c;
    ck_assert_int_eq(st_jinja_parse(src, strlen(src), &j.jinja, &e1), ST_OK);
    st_chat_jinja_probe_args(&j);
    for (int pass = 0; pass < 2; pass++)
    cJSON_ArrayForEach(conv, convs) {
        struct st_chat_msg msgs[16];
        char *keep[16];
        size_t n_keep = 0;
        struct st_chat_req req;
        struct st_buf a, b;
        to_req(conv, pass == 1, &req, msgs, keep, &n_keep);
        st_buf_init(&a);
        st_buf_init(&b);
        enum st_status ra = st_chat_render(&c, &req, &a, &e1);
        enum st_status rb = st_chat_render(&j, &req, &b, &e2);
        bool same = (ra != ST_OK && rb != ST_OK) ||
                    (ra == ST_OK && rb == ST_OK && a.len == b.len &&
                     (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
        if (!same && verbose)
            fprintf(stderr, "%s / %s%s:\n--- C renderer\n%s\n--- interpreter\n%s\n", name,
                    cJSON_GetObjectItem(conv, "name")->valuestring, pass ? " (string arguments)" : "",
                    ra == ST_OK ? a.data : e1.msg, rb == ST_OK ? b.data : e2.msg);
        ok = ok && same;
        st_buf_fini(&a);
        st_buf_fini(&b);
        for (size_t i = 0; i < n_keep; i++)
            free(keep[i]);
    }
    st_chat_tmpl_fini(&j);
    return ok;
}

START_TEST(test_chat_fast_path_matches_interpreter)
{
    char dir[1024], path[1400], conv_path[1400];
    const char *list = getenv("STRATA_FAST_PATH_LIST");
    DIR *d;
    struct dirent *ent;
    uint64_t seen[64];
    size_t checked = 0;
    int bad = 0;

    snprintf(dir, sizeof(dir), "%s/tests/data/templates", support_source_dir());
    snprintf(conv_path, sizeof(conv_path), "%s/conversations.json", dir);
    char *conv_text = support_read_file(conv_path);
    ck_assert_msg(conv_text != NULL, "%s missing", conv_path);
    cJSON *convs = cJSON_Parse(conv_text);
    d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    while ((ent = readdir(d)) != NULL) {
        size_t n = strlen(ent->d_name);
        if (n < 7 || strcmp(ent->d_name + n - 6, ".jinja") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
        char *src = support_read_file(path);
        struct st_chat_tmpl t;
        st_chat_tmpl_recognize(&t, src, strlen(src), "<s>", "</s>", ent->d_name, false);
        bool listed = st_chat_fast_path(src, strlen(src), t.kind);
        if (list && t.known)
            printf("%-40s %-12s %s 0x%016" PRIx64 "\n", ent->d_name, st_chat_kind_name(t.kind),
                   agree(ent->d_name, src, convs, false) ? "agree " : "differ",
                   st_chat_tmpl_hash(src, strlen(src)));
        if (listed) {
            uint64_t h = st_chat_tmpl_hash(src, strlen(src));
            size_t k = 0;
            while (k < checked && seen[k] != h)
                k++;
            if (k == checked && checked < 64)
                seen[checked++] = h;
            if (!agree(ent->d_name, src, convs, true))
                bad++;
        }
        free(src);
    }
    closedir(d);
    ck_assert_msg(bad == 0, "%d fast-path templates differ from the interpreter", bad);
    /* every listed template is among the test data, so none goes unchecked */
    ck_assert_uint_eq(checked, st_chat_fast_path_count());
    cJSON_Delete(convs);
    free(conv_text);
}
END_TEST

/* make-model's stand-in templates name their family's C renderer. */
START_TEST(test_chat_fast_path_synthetic_fixtures)
{
    struct st_mm_vocab v;
    struct st_err err = { 0 };
    const char *chatml = st_mm_chatml_template();

    ck_assert(st_chat_fast_path(chatml, strlen(chatml), ST_CHAT_CHATML));
    memset(&v, 0, sizeof(v));
    ck_assert_int_eq(st_mm_vocab_glm(&v, &err), ST_OK);
    ck_assert(st_chat_fast_path(v.chat_template, strlen(v.chat_template), ST_CHAT_GLM45));
    st_mm_vocab_free(&v);
}
END_TEST

/* One message: its role and content (NULL: none). */
struct turn {
    const char *role, *content;
};

/* m[0..n) from turns[] (every other field zero) and *req on them: zero but
 * for the messages and enable_thinking. */
static void set_turns(struct st_chat_req *req, struct st_chat_msg *m, const struct turn *turns,
                      size_t n, int enable_thinking)
{
    memset(m, 0, n * sizeof(*m));
    for (size_t i = 0; i < n; i++) {
        m[i].role = st_str_c(turns[i].role);
        m[i].content = st_str_c(turns[i].content);
    }
    memset(req, 0, sizeof(*req));
    req->msgs = m;
    req->n_msgs = n;
    req->enable_thinking = enable_thinking;
}

static char *load_render(const char *gguf_src, const struct st_chat_tmpl_choice *c,
                         enum st_status *rc, struct st_err *err)
{
    static const struct turn turns[] = { { "user", "hi" } };
    struct st_chat_tmpl t;
    struct st_chat_msg m[1];
    struct st_chat_req req;
    struct st_buf out;

    set_turns(&req, m, turns, 1, 0);
    req.add_generation_prompt = true;
    *rc = st_chat_tmpl_choose(c, err);
    if (*rc != ST_OK)
        return NULL;
    *rc = st_chat_tmpl_load(&t, gguf_src, gguf_src ? strlen(gguf_src) : 0, "<s>", "</s>",
                            "unit", err);
    st_chat_tmpl_choice_reset();
    if (*rc != ST_OK)
        return NULL;
    st_buf_init(&out);
    *rc = st_chat_render(&t, &req, &out, err);
    st_chat_tmpl_fini(&t);
    return *rc == ST_OK ? st_buf_steal(&out) : (st_buf_fini(&out), NULL);
}

START_TEST(test_chat_tmpl_load_choices)
{
    struct st_chat_tmpl_choice c = { .jinja = true };
    struct st_err err = { 0 };
    enum st_status rc;
    char *got;
    /* DeepSeek-R1's shape: no C renderer; the generation prompt opens a think block */
    const char *r1 = "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}"
                     "{% endfor %}{% if add_generation_prompt %}<|Assistant|><think>\n{% endif %}";

    got = load_render(r1, &c, &rc, &err);
    ck_assert_str_eq(got, "<s><|user|>hi<|Assistant|><think>\n</think>");
    free(got);
    /* --no-jinja: the old ChatML fallback */
    c.jinja = false;
    got = load_render(r1, &c, &rc, &err);
    ck_assert_str_eq(got, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    free(got);
    /* --chat-template llama3 picks that renderer whatever the model has */
    c = (struct st_chat_tmpl_choice){ .name = "llama3", .jinja = true };
    got = load_render(r1, &c, &rc, &err);
    ck_assert_ptr_nonnull(strstr(got, "<|start_header_id|>user<|end_header_id|>\n\nhi"));
    free(got);
    /* --chat-template command-r (--no-jinja, as llama.cpp's suite runs it):
     * llama.cpp's built-in Command-R turns */
    c = (struct st_chat_tmpl_choice){ .name = "command-r", .jinja = false };
    got = load_render(r1, &c, &rc, &err);
    ck_assert_str_eq(got, "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>hi<|END_OF_TURN_TOKEN|>"
                          "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
    free(got);
    /* --chat-template with Jinja source */
    c = (struct st_chat_tmpl_choice){ .name = "{{ messages[0].content | upper }}", .jinja = true };
    got = load_render(r1, &c, &rc, &err);
    ck_assert_str_eq(got, "HI");
    free(got);
    /* an unknown name lists the built-in ones */
    c = (struct st_chat_tmpl_choice){ .name = "nosuch", .jinja = true };
    got = load_render(r1, &c, &rc, &err);
    ck_assert_int_eq(rc, ST_ERR_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "chatml, qwen3"));
    /* a chosen template that does not parse names the line */
    c = (struct st_chat_tmpl_choice){ .name = "ok\n{% if x %}", .jinja = true };
    got = load_render(r1, &c, &rc, &err);
    ck_assert_int_eq(rc, ST_ERR_BAD_CONFIG);
    ck_assert_msg(strstr(err.msg, "--chat-template: chat template: line 2"), "%s", err.msg);
    /* the model's own template that does not parse is a load error, not ChatML */
    c = (struct st_chat_tmpl_choice){ .jinja = true };
    got = load_render("{% for m in messages %}\n\n{{ m.content ) }}{% endfor %}", &c, &rc, &err);
    ck_assert_int_eq(rc, ST_ERR_BAD_MODEL);
    ck_assert_msg(strstr(err.msg, "tokenizer.chat_template): chat template: line 3, column 14"),
                  "%s", err.msg);
    /* no template at all: ChatML */
    got = load_render(NULL, &c, &rc, &err);
    ck_assert_str_eq(got, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    free(got);
}
END_TEST

/* Render src (loaded as a model's own template) with a conversation that
 * has a null content, reasoning, a call with string arguments and tools. */
static char *render_vars(const char *src, const char *kwargs_json)
{
    static const struct turn turns[] = { { "user", NULL }, { "assistant", NULL } };
    struct st_chat_tmpl t;
    struct st_chat_msg m[2];
    struct st_chat_req req;
    struct st_buf out;
    struct st_err err = { 0 };
    cJSON *kw = kwargs_json ? cJSON_Parse(kwargs_json) : NULL;

    set_turns(&req, m, turns, 2, 1);
    m[1].reasoning_content = st_str_c("mull");
    m[1].tool_calls = st_str_c("[{\"id\":\"c1\",\"type\":\"function\",\"function\":"
                               "{\"name\":\"f\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]");
    req.tools = st_str_c("[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]");
    req.date_string = st_str_c("01 Jan 2026");
    req.kwargs = kw;
    ck_assert_int_eq(st_chat_tmpl_load(&t, src, strlen(src), "<s>", "</s>", "unit", &err), ST_OK);
    ck_assert_ptr_nonnull(t.jinja);
    st_buf_init(&out);
    ck_assert_msg(st_chat_render(&t, &req, &out, &err) == ST_OK, "%s", err.msg);
    st_chat_tmpl_fini(&t);
    cJSON_Delete(kw);
    return st_buf_steal(&out);
}

START_TEST(test_chat_jinja_request_variables)
{
    char *got;

    /* arguments printed | tojson: the probe hands the template an object */
    got = render_vars("{% for c in messages[1].tool_calls %}{{ c.function.arguments | tojson }}"
                      "{% endfor %}", NULL);
    ck_assert_str_eq(got, "{\"city\": \"Paris\"}");
    free(got);
    /* arguments walked with .items() into tags (GLM-4.7, MiniMax-M2,
     * Laguna): the string render fails, the object's keys show: objects */
    got = render_vars("{% for c in messages[1].tool_calls %}{% for k, v in "
                      "c.function.arguments.items() %}<arg_key>{{ k }}</arg_key>"
                      "<arg_value>{{ v }}</arg_value>{% endfor %}{% endfor %}", NULL);
    ck_assert_str_eq(got, "<arg_key>city</arg_key><arg_value>Paris</arg_value>");
    free(got);
    /* arguments printed as they are: the string stays a string */
    got = render_vars("{% for c in messages[1].tool_calls %}{{ c.function.arguments }}"
                      "{% endfor %}", NULL);
    ck_assert_str_eq(got, "{\"city\":\"Paris\"}");
    free(got);
    got = render_vars("{{ messages[0].content is none }}|{{ messages[1].reasoning_content }}|"
                      "{{ tools | length }}|{{ date_string }}|{{ enable_thinking }}|"
                      "{{ bos_token }}{{ eos_token }}|{{ custom }}|{{ add_generation_prompt }}",
                      "{\"custom\": [1, \"x\"], \"date_string\": \"ignored\"}");
    ck_assert_str_eq(got, "True|mull|1|01 Jan 2026|True|<s></s>|[1, 'x']|False");
    free(got);
}
END_TEST

/* A plain user turn rendered by src with thinking as given (-1 = not). */
static char *render_plain(const char *src, int enable_thinking)
{
    struct st_chat_tmpl t;
    struct st_chat_msg m = { .role = st_str_c("user"), .content = st_str_c("hi") };
    struct st_chat_req req = { .msgs = &m, .n_msgs = 1, .add_generation_prompt = true,
                               .enable_thinking = enable_thinking };
    struct st_buf out;
    struct st_err err = { 0 };

    ck_assert_int_eq(st_chat_tmpl_load(&t, src, strlen(src), "", "", "unit", &err), ST_OK);
    st_buf_init(&out);
    ck_assert_msg(st_chat_render(&t, &req, &out, &err) == ST_OK, "%s", err.msg);
    st_chat_tmpl_fini(&t);
    return st_buf_steal(&out);
}

/* The variables llama-server gives every template: enable_thinking always
 * defined (true unless off: DeepSeek-R1's "if not enable_thinking" then
 * leaves the think block open), today's date_string and datetime. */
START_TEST(test_chat_jinja_llama_server_defaults)
{
    static const char r1[] =
        "{{ '<A><think>\n' }}{% if not enable_thinking %}{{ '</think>' }}{% endif %}";
    char want[128], d1[32], d2[32], *got;
    time_t now = time(NULL);
    struct tm tm;

    got = render_plain(r1, -1);
    ck_assert_str_eq(got, "<A><think>\n");
    free(got);
    got = render_plain(r1, 0);
    ck_assert_str_eq(got, "<A><think>\n</think>");
    free(got);
    got = render_plain("{{ enable_thinking }}", -1);
    ck_assert_str_eq(got, "True");
    free(got);
    /* the date of the render (a render across midnight is a day off) */
    got = render_plain("{{ date_string }}|{{ datetime }}", -1);
    ck_assert_ptr_nonnull(localtime_r(&now, &tm));
    ck_assert_uint_gt(strftime(d1, sizeof(d1), "%d %b %Y", &tm), 0);
    ck_assert_uint_gt(strftime(d2, sizeof(d2), "%b %d %Y", &tm), 0);
    snprintf(want, sizeof(want), "%s|%s", d1, d2);
    ck_assert_str_eq(got, want);
    free(got);
    /* string + undefined or none is the string, as llama.cpp's interpreter
     * has it (firefunction-v2 adds its undefined 'functions') */
    got = render_plain("{{ 'a' + nosuch }}|{{ none + 'b' }}|{{ 'c' ~ none }}", -1);
    ck_assert_str_eq(got, "a|b|cNone");
    free(got);
    /* none filtered is an empty list (functionary v3.1 sets tools = none
     * and runs tools | selectattr(...)) */
    got = render_plain("{{ none | selectattr('type', 'equalto', 'x') | list | length }}|"
                       "{{ none | rejectattr('a') | list }}|{{ none | map(attribute='a') | list }}|"
                       "{{ none | select | list }}|{{ none | unique | list }}", -1);
    ck_assert_str_eq(got, "0|[]|[]|[]|[]");
    free(got);
    got = render_plain("{{ [3, 1, 2] | min }}|{{ [3, 1, 2] | max }}|{{ ['b', 'a'] | min }}|"
                       "{{ [] | max is undefined }}", -1);
    ck_assert_str_eq(got, "1|3|a|True");
    free(got);
    got = render_plain("{{ '<x{}y{}>'.format('A', 2) }}|{{ 'plain'.format() }}", -1);
    ck_assert_str_eq(got, "<xAy2>|plain");
    free(got);
}
END_TEST

/* Command-R's built-in turns: content stripped, roles other than system,
 * user and assistant left out, no generation prompt when not asked. */
START_TEST(test_chat_command_r_turns)
{
    static const struct turn turns[] = { { "system", " You are a test.\n" },
                                         { "user", "Hi there" },
                                         { "tool", "dropped" },
                                         { "assistant", NULL } };
    struct st_chat_msg m[4];
    struct st_chat_req req;
    struct st_chat_tmpl t;
    struct st_buf out;
    struct st_err err = { 0 };

    set_turns(&req, m, turns, 4, -1);
    st_chat_tmpl_init(&t, NULL, 0, NULL, NULL, "unit");
    t.kind = ST_CHAT_COMMAND_R;
    ck_assert_str_eq(st_chat_kind_name(ST_CHAT_COMMAND_R), "command-r");
    st_buf_init(&out);
    ck_assert_msg(st_chat_render(&t, &req, &out, &err) == ST_OK, "%s", err.msg);
    ck_assert_str_eq(out.data, "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a test."
                               "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi there"
                               "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
                               "<|END_OF_TURN_TOKEN|>");
    st_buf_fini(&out);
    st_chat_tmpl_fini(&t);
}
END_TEST

/* A template without a system role (Gemma 2 raises on one): the system
 * text goes ahead of the next message's, joined by a line break, or away
 * when it is alone, as llama.cpp does. */
START_TEST(test_chat_jinja_no_system_role)
{
    static const char src[] =
        "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}";
    static const struct turn turns[] = { { "system", "Sys" }, { "user", "hi" } };
    struct st_chat_msg m[2];
    struct st_chat_req req;
    struct st_chat_tmpl t;
    struct st_buf out;
    struct st_err err = { 0 };

    set_turns(&req, m, turns, 2, -1);
    ck_assert_int_eq(st_chat_tmpl_load(&t, src, strlen(src), "", "", "unit", &err), ST_OK);
    ck_assert(t.jinja_no_system);
    st_buf_init(&out);
    ck_assert_msg(st_chat_render(&t, &req, &out, &err) == ST_OK, "%s", err.msg);
    ck_assert_str_eq(out.data, "[user:Sys\nhi]");
    st_buf_fini(&out);
    req.n_msgs = 1;
    st_buf_init(&out);
    ck_assert_msg(st_chat_render(&t, &req, &out, &err) == ST_OK, "%s", err.msg);
    ck_assert_str_eq(out.data ? out.data : "", "");
    st_buf_fini(&out);
    st_chat_tmpl_fini(&t);
}
END_TEST

/* ByteDance Seed-OSS (tests/data/templates/seed_oss_36b.jinja) through the
 * chat layer: a system, user, tool-call (string arguments, as OpenAI
 * clients send them), tool-result, user conversation, with the template's
 * thinking_budget from chat_template_kwargs (NULL: none). Its integer-keyed
 * budget table is sorted with dictsort and compared with the budget. */
static char *render_seed_oss(const char *kwargs_json)
{
    static const struct turn turns[] = { { "system", "You can call tools." },
                                         { "user", "Weather in Paris?" },
                                         { "assistant", "" },
                                         { "tool", "{\"temp\": 21}" },
                                         { "user", "Thanks!" } };
    char path[1200];
    char *src = NULL;
    struct st_chat_tmpl t;
    struct st_chat_msg m[5];
    struct st_chat_req req;
    struct st_buf out;
    struct st_err err = { 0 };
    cJSON *kw = kwargs_json ? cJSON_Parse(kwargs_json) : NULL;

    snprintf(path, sizeof(path), "%s/tests/data/templates/seed_oss_36b.jinja",
             support_source_dir());
    ck_assert_ptr_nonnull(src = support_read_file(path));
    set_turns(&req, m, turns, 5, -1);
    m[2].tool_calls = st_str_c("[{\"id\":\"call_1\",\"type\":\"function\",\"function\":"
                               "{\"name\":\"get_weather\",\"arguments\":"
                               "\"{\\\"city\\\":\\\"Paris\\\",\\\"days\\\":2}\"}}]");
    m[3].tool_call_id = st_str_c("call_1");
    req.tools = st_str_c("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                         "\"description\":\"Get the weather\",\"parameters\":{\"type\":"
                         "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
                         "\"required\":[\"city\"]}}}]");
    req.add_generation_prompt = true;
    req.kwargs = kw;
    ck_assert_int_eq(st_chat_tmpl_load(&t, src, strlen(src), "<s>", "</s>", "unit", &err), ST_OK);
    ck_assert_ptr_nonnull(t.jinja);
    st_buf_init(&out);
    ck_assert_msg(st_chat_render(&t, &req, &out, &err) == ST_OK, "%s", err.msg);
    st_chat_tmpl_fini(&t);
    cJSON_Delete(kw);
    free(src);
    return st_buf_steal(&out);
}

START_TEST(test_chat_jinja_seed_oss)
{
    /* budget -> the reflection interval: the first key >= the budget in
     * numeric order (lexicographic order would give 256 for 100 and 1024
     * for 2000), past the largest key the value at 16384 (as Python's
     * jinja2 renders it) */
    static const struct { int budget; const char *every; } want[] = {
        { 1, "every 128 tokens" },     { 100, "every 128 tokens" },
        { 512, "every 128 tokens" },   { 513, "every 256 tokens" },
        { 1024, "every 256 tokens" },  { 2000, "every 512 tokens" },
        { 4096, "every 512 tokens" },  { 5000, "every 1024 tokens" },
        { 20000, "every 1024 tokens" },
    };
    char kw[64], *got;

    got = render_seed_oss(NULL);
    ck_assert_msg(strstr(got, "<seed:bos>system\nYou can call tools.\n\nFunction:\n"
                              "def get_weather(city: str):") != NULL, "%s", got);
    /* the string arguments reach the template as an object (it runs | items) */
    ck_assert_msg(strstr(got, "<seed:bos>assistant\n<seed:tool_call>\n<function=get_weather>\n"
                              "<parameter=city>Paris</parameter>\n<parameter=days>2</parameter>\n"
                              "</function>\n</seed:tool_call><seed:eos>") != NULL, "%s", got);
    ck_assert_msg(strstr(got, "<seed:bos>tool\n{\"temp\": 21}<seed:eos><seed:bos>user\nThanks!"
                              "<seed:eos><seed:bos>assistant\n") != NULL, "%s", got);
    ck_assert_ptr_null(strstr(got, "thinking budget"));
    free(got);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        snprintf(kw, sizeof(kw), "{\"thinking_budget\": %d}", want[i].budget);
        got = render_seed_oss(kw);
        ck_assert_msg(strstr(got, want[i].every) != NULL, "budget %d: %s", want[i].budget, got);
        free(got);
    }
    got = render_seed_oss("{\"thinking_budget\": 0}");
    ck_assert_msg(strstr(got, "your thinking budget is 0") != NULL, "%s", got);
    ck_assert_ptr_null(strstr(got, "You will reflect"));
    ck_assert_msg(strstr(got, "The current thinking budget is 0, so I will directly start "
                              "answering the question.</seed:cot_budget_reflect>\n</seed:think>")
                  != NULL, "%s", got);
    free(got);
}
END_TEST

static Suite *fast_path_suite(void)
{
    Suite *s = suite_create("chat_fast_path");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_chat_fast_path_matches_interpreter);
    tcase_add_test(tc, test_chat_tmpl_load_choices);
    tcase_add_test(tc, test_chat_fast_path_synthetic_fixtures);
    tcase_add_test(tc, test_chat_jinja_request_variables);
    tcase_add_test(tc, test_chat_jinja_llama_server_defaults);
    tcase_add_test(tc, test_chat_command_r_turns);
    tcase_add_test(tc, test_chat_jinja_no_system_role);
    tcase_add_test(tc, test_chat_jinja_seed_oss);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(fast_path_suite(), CK_FORK);
}
