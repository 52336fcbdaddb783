/* chat.h -- chat templates: messages -> the prompt text a model expects.
 *
 * A GGUF carries its template as Jinja source (tokenizer.chat_template).
 * st_chat_tmpl_load() runs it with the Jinja interpreter of chat/jinja/
 * (docs/TEMPLATES.md), except where a renderer written in C is known to
 * produce the same bytes (a fast path: the template's hash is in
 * chat/fast_path.c, checked by tests/unit/test_chat_fast_path.c), and
 * st_chat_tmpl_choose() applies llama-server's --chat-template,
 * --chat-template-file and --no-jinja. st_chat_tmpl_init() alone recognizes
 * the template by fingerprints (substrings) and picks the C renderer whose
 * output matches what that template's own Jinja produces (tests compare
 * against @huggingface/jinja); the reply parsers read its kind either way. Recognized: ChatML, Qwen3 (hybrid thinking, tools;
 * also the Thinking-2507 variant that opens <think> itself), Qwen2.5
 * (tools, "You are Qwen..." when no system message is given), Qwen3-Coder
 * (tools and calls in its XML-like <function=..><parameter=..> form), Llama 3,
 * Llama 3.1/3.2/3.3 (the "Cutting Knowledge Date" system header, tools),
 * Mistral ([INST], v3 style), Mistral v7 and v11 (the tekken-era
 * [SYSTEM_PROMPT] templates with tools: chat/formats/mistral.c), Gemma, GLM-4.5 /
 * 4.6 (thinking, tools, <arg_key>/<arg_value> calls: chat/formats/glm45.c).
 * Without the interpreter (--no-jinja), anything else renders as ChatML and
 * logs a warning naming the model.
 *
 * Messages are plain views (struct st_str, not NUL-terminated; ptr == NULL
 * means "absent", which templates distinguish from "" in a few places).
 * tool_calls and tools are JSON text (OpenAI shapes); they are parsed by
 * the renderer and re-serialized the way Jinja's tojson does (Python
 * json.dumps: ", " and ": " separators, non-ASCII unescaped, key order kept).
 *
 * Threads: a st_chat_tmpl is read-only after init; render from any thread.
 */
#ifndef STRATA_CHAT_H
#define STRATA_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/err.h"
#include "strata/str.h"

struct cJSON;
struct st_jinja_tmpl;

enum st_chat_kind {
    ST_CHAT_CHATML,
    ST_CHAT_QWEN3,
    ST_CHAT_QWEN25,     /* Qwen2.5 (and -Coder): tools, default system prompt, no thinking */
    ST_CHAT_LLAMA3,
    ST_CHAT_LLAMA31,    /* Llama 3.1-3.3: date header, JSON tool calls, ipython turns */
    ST_CHAT_MISTRAL,
    ST_CHAT_GEMMA,
    ST_CHAT_QWEN3_CODER, /* Qwen3-Coder: XML-style tools and calls (<function=..>), no thinking */
    ST_CHAT_MISTRAL_V7,  /* Mistral Small 3/3.1, Devstral 2505: [SYSTEM_PROMPT], tools,
                            [TOOL_CALLS] [{..., "id": ..}] calls */
    ST_CHAT_MISTRAL_V11, /* Small 3.2, Devstral 2507, Magistral, Ministral 3:
                            [TOOL_CALLS]name[ARGS]{..} calls */
    ST_CHAT_GLM45,       /* GLM-4.5 / 4.5-Air / 4.6: [gMASK]<sop>, <|user|> turns, thinking,
                            <tool_call>NAME\n<arg_key>..<arg_value>.. calls */
    ST_CHAT_COMMAND_R,   /* llama.cpp's built-in "command-r" (only by --chat-template) */
};
#define ST_CHAT_KIND_LAST ST_CHAT_COMMAND_R

struct st_chat_tmpl {
    enum st_chat_kind kind;
    bool   think_open;      /* Qwen3 Thinking-2507: generation prompt ends "<think>\n" */
    bool   thinking_flag;   /* the template reads enable_thinking */
    bool   date_today;      /* Llama 3.2+: default date_string is today (strftime_now) */
    bool   known;           /* false: fell back to ChatML */
    char   bos[32];         /* bos_token text for templates that print it ("" = none) */
    char   eos[32];         /* eos_token text (Mistral ends assistant turns with it) */
    /* Mistral v7 / v11 only (chat/formats/mistral.c): the template's own default
     * system message and v7's parallel_tool_prompt, decoded from its Jinja
     * string literals ('\x01' where it concatenates today's date). */
    bool   has_default_system;
    bool   tools_last_user; /* [AVAILABLE_TOOLS] before the last user message */
    char   mistral_system[16384];
    char   mistral_tools_prompt[1024];
    /* st_chat_tmpl_load: the template run by the Jinja interpreter (owned;
     * st_chat_tmpl_fini); NULL = the C renderer of 'kind' */
    struct st_jinja_tmpl *jinja;
    bool   jinja_tools;     /* its source mentions tools */
    bool   jinja_object_args; /* it prints a tool call's arguments right only as an object
                               (| tojson, .items()): string arguments are parsed for it */
    bool   jinja_no_system;   /* it has no system role (Gemma 2 raises): the system message
                                 is merged into the next one, as llama.cpp does */
};

struct st_chat_msg {
    struct st_str role;              /* "system", "user", "assistant", "tool" */
    struct st_str content;           /* ptr NULL = null/absent (rendered as "") */
    struct st_str reasoning_content; /* ptr NULL = absent */
    struct st_str tool_calls;        /* JSON array of OpenAI tool calls; NULL = none */
    struct st_str tool_call_id;      /* tool messages; ptr NULL = absent */
    struct st_str name;              /* ptr NULL = absent */
};

struct st_chat_req {
    const struct st_chat_msg *msgs;     /* [n_msgs], borrowed for the call */
    size_t                    n_msgs;
    struct st_str             tools;    /* JSON array of tools; ptr NULL or "[]" = none */
    bool                      add_generation_prompt;
    bool                      continue_final;   /* end inside the last message, an
                                                   assistant's (chat/continue.c);
                                                   add_generation_prompt is then ignored */
    int                       enable_thinking;  /* -1 = not given, 0 = false, 1 = true */
    struct st_str             date_string;      /* Llama 3.1+ "Today Date"; ptr NULL = the
                                                   template's default ("26 Jul 2024", or
                                                   today's local date when date_today) */
    const struct cJSON       *kwargs;           /* chat_template_kwargs (borrowed; NULL =
                                                   none): every member is a variable of a
                                                   Jinja template */
};

/* How a rendered prompt ends: after the last message's turn (what
 * /apply-template with add_generation_prompt false shows), with the
 * generation prompt (a new assistant turn: every generation), or inside the
 * last message, an assistant's, so the model goes on writing its text
 * (Anthropic's prefill, vLLM's continue_final_message). */
enum st_chat_ending {
    ST_CHAT_END_TURN,
    ST_CHAT_END_GENERATE,
    ST_CHAT_END_CONTINUE,
};

/* Recognize 'source' (the Jinja template; may be NULL or empty = none) and
 * fill *t. bos/eos: the model's bos/eos token texts (NULL = none; texts
 * longer than 31 bytes are dropped). model_name is used in the warning when
 * the template is not recognized (NULL = "model"). Never fails. */
void st_chat_tmpl_init(struct st_chat_tmpl *t, const char *source, size_t len,
                       const char *bos, const char *eos, const char *model_name);

/* How templates are chosen, as llama-server's flags choose them. */
struct st_chat_tmpl_choice {
    const char *name;   /* --chat-template: a built-in name (st_chat_kind_name), or Jinja
                           source; NULL = the model's own */
    const char *file;   /* --chat-template-file: a Jinja file; NULL = none */
    bool        jinja;  /* --jinja (default) / --no-jinja: false renders recognized
                           templates by their C renderer and others as ChatML */
};

/* Set the choice for every model loaded after it (process-wide; call once,
 * before any model loads). The file is read and parsed here: a template
 * that does not parse is ST_ERR_BAD_CONFIG naming the file, line and
 * column; an unknown built-in name lists the names. Both given: the file wins. */
ST_MUST_CHECK
enum st_status st_chat_tmpl_choose(const struct st_chat_tmpl_choice *c, struct st_err *err);
/* Forget the choice (tests; the end of main). */
void st_chat_tmpl_choice_reset(void);

/* st_chat_tmpl_init, then the choice: the template (the model's, or the
 * chosen one) is run by the interpreter unless --no-jinja or a C renderer
 * is known to match it (a fast path); a built-in name picks that renderer.
 * A template that does not parse is ST_ERR_BAD_MODEL with the line and
 * column, never a silent fallback. Free with st_chat_tmpl_fini. */
ST_MUST_CHECK
enum st_status st_chat_tmpl_load(struct st_chat_tmpl *t, const char *source, size_t len,
                                 const char *bos, const char *eos, const char *model_name,
                                 struct st_err *err);
void st_chat_tmpl_fini(struct st_chat_tmpl *t);

/* The built-in kind named 'name' ("chatml", "qwen3", ...); false when none is. */
bool st_chat_kind_from_name(const char *name, enum st_chat_kind *out);

/* "chatml", "qwen3", "qwen2.5", "qwen3-coder", "llama3", "llama3.1", "mistral",
 * "mistral-v7", "mistral-v11", "gemma", "glm4.5". Static. */

/* Whether the renderer puts the request's tools (and tool calls / tool
 * messages) into the prompt: Qwen3, Qwen2.5, Qwen3-Coder, Llama 3.1+, Mistral
 * v7 / v11 and GLM-4.5, and a Jinja template that mentions tools. The others
 * render the messages' text and leave the tools out. */
bool st_chat_renders_tools(const struct st_chat_tmpl *t);
const char *st_chat_kind_name(enum st_chat_kind kind);

/* Render the prompt, appended to 'out'. Errors: ST_ERR_INVALID for what the
 * template itself would reject (unknown role, roles not alternating where
 * the template requires it, malformed tools/tool_calls JSON, no messages),
 * with a message naming the message index, and for continue_final when the
 * last message is not an assistant's text; ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_chat_render(const struct st_chat_tmpl *t,
                              const struct st_chat_req *req,
                              struct st_buf *out, struct st_err *err);

#endif /* STRATA_CHAT_H */
