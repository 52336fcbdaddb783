/* choice.c -- which template renders a model's chats: llama-server's
 * --chat-template (a built-in name or Jinja source), --chat-template-file
 * and --jinja / --no-jinja (st_chat_tmpl_choose, once per process), and
 * st_chat_tmpl_load, which applies the choice to a model's own template:
 * the Jinja interpreter, or a C renderer where one is known to match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "strata/xalloc.h"

#include "chat/internal.h"
#include "chat/jinja/jinja.h"

/* Set once by st_chat_tmpl_choose before models load; read-only after. */
static struct {
    bool               set;
    bool               no_jinja;
    bool               has_kind;      /* a built-in name was chosen */
    enum st_chat_kind  kind;
    char              *source;        /* owned: chosen Jinja source, or NULL */
    size_t             len;
    char               origin[200];   /* where 'source' came from, for errors */
} choice;

void st_chat_tmpl_choice_reset(void)
{
    free(choice.source);
    memset(&choice, 0, sizeof(choice));
}

static enum st_status read_file(const char *path, char **out, size_t *len, struct st_err *err)
{
    FILE *f = fopen(path, "rb");
    struct st_buf b;
    char chunk[8192];
    size_t n;

    if (!f)
        return st_err_errno(err, ST_ERR_BAD_CONFIG, "--chat-template-file %s", path);
    st_buf_init(&b);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (st_buf_append(&b, chunk, n) != ST_OK || b.len > ((size_t)16 << 20)) {
            fclose(f);
            st_buf_fini(&b);
            return st_err_set(err, ST_ERR_BAD_CONFIG, "--chat-template-file %s: larger than "
                              "16 MiB or out of memory", path);
        }
    fclose(f);
    *len = b.len;
    *out = st_buf_steal(&b);
    return ST_OK;
}

static enum st_status unknown_name(const char *name, struct st_err *err)
{
    char names[256] = "";
    size_t o = 0;

    for (int k = ST_CHAT_CHATML; k <= ST_CHAT_KIND_LAST; k++)
        o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", k ? ", " : "",
                              st_chat_kind_name((enum st_chat_kind)k));
    return st_err_set(err, ST_ERR_BAD_CONFIG, "--chat-template '%.40s': not a built-in template "
                      "(%s) and not Jinja source ({{ or {%%})", name, names);
}

enum st_status st_chat_tmpl_choose(const struct st_chat_tmpl_choice *c, struct st_err *err)
{
    struct st_jinja_tmpl *probe = NULL;
    struct st_err e = { 0 };
    enum st_status rc = ST_OK;

    st_chat_tmpl_choice_reset();
    choice.set = true;
    choice.no_jinja = !c->jinja;
    if (c->file) {
        rc = read_file(c->file, &choice.source, &choice.len, err);
        snprintf(choice.origin, sizeof(choice.origin), "--chat-template-file %s", c->file);
    } else if (c->name && st_chat_kind_from_name(c->name, &choice.kind)) {
        choice.has_kind = true;
    } else if (c->name && (strstr(c->name, "{{") || strstr(c->name, "{%"))) {
        choice.len = strlen(c->name);
        choice.source = st_xstrndup(c->name, choice.len);
        snprintf(choice.origin, sizeof(choice.origin), "--chat-template");
    } else if (c->name) {
        rc = unknown_name(c->name, err);
    }
    if (rc == ST_OK && choice.source && c->jinja) {
        rc = st_jinja_parse(choice.source, choice.len, &probe, &e);
        st_jinja_free(probe);
        if (rc != ST_OK)
            rc = st_err_set(err, ST_ERR_BAD_CONFIG, "%s: %s", choice.origin, e.msg);
    }
    if (rc != ST_OK)
        st_chat_tmpl_choice_reset();
    return rc;
}

/* A built-in name chosen: that renderer, with the flags the model's own
 * template gives when it is of the same kind. */
static void use_builtin(struct st_chat_tmpl *t)
{
    if (t->kind == choice.kind)
        return;
    t->kind = choice.kind;
    t->known = true;
    t->thinking_flag = choice.kind == ST_CHAT_QWEN3 || choice.kind == ST_CHAT_GLM45;
    t->think_open = false;
    t->has_default_system = false;
}

enum st_status st_chat_tmpl_load(struct st_chat_tmpl *t, const char *source, size_t len,
                                 const char *bos, const char *eos, const char *model_name,
                                 struct st_err *err)
{
    const char *origin = "the model's chat template (tokenizer.chat_template)";
    struct st_err e = { 0 };
    enum st_status rc;

    if (choice.source) {
        source = choice.source;
        len = choice.len;
        origin = choice.origin;
    }
    st_chat_tmpl_recognize(t, source, len, bos, eos, model_name,
                           choice.no_jinja || !source || !len);
    if (choice.has_kind) {
        use_builtin(t);
        return ST_OK;
    }
    if (choice.no_jinja || !source || !len)
        return ST_OK;
    if (t->known && st_chat_fast_path(source, len, t->kind)) {
        st_log(ST_LOG_INFO, "chat", "%s: chat template rendered by the built-in %s renderer "
               "(known to match it)", model_name ? model_name : "model",
               st_chat_kind_name(t->kind));
        return ST_OK;
    }
    rc = st_jinja_parse(source, len, &t->jinja, &e);
    if (rc != ST_OK)
        return st_err_set(err, rc == ST_ERR_NOMEM ? rc : ST_ERR_BAD_MODEL, "%s: %s: %s",
                          model_name ? model_name : "model", origin, e.msg);
    t->jinja_tools = memmem(source, len, "tools", 5) != NULL;
    st_chat_jinja_probe_args(t);
    st_log(ST_LOG_INFO, "chat", "%s: chat template rendered by the Jinja interpreter%s",
           model_name ? model_name : "model", choice.source ? " (chosen by flag)" : "");
    return ST_OK;
}

void st_chat_tmpl_fini(struct st_chat_tmpl *t)
{
    st_jinja_free(t->jinja);
    t->jinja = NULL;
}
