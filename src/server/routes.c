/* routes.c -- the route table: (path, method) -> handler.
 *
 * A static array, read top to bottom; a path known under other methods
 * answers 405 with an Allow header. GET routes also answer HEAD (libmicro-
 * httpd drops the body). Aliases without /v1 follow llama-server.
 *
 * Auth (when keys are configured): everything but /health, which probes
 * read without credentials, and the dashboard's files (no data in them);
 * /metrics also takes --metrics-key (a scraper's own, ../http.c). "work"
 * routes start a generation: a draining server (st_server_drain) refuses
 * them. "anthropic" routes answer in Anthropic's shapes, errors included
 * (st_route_anthropic).
 */
#include <stdio.h>
#include <string.h>

#include "server/daemon.h"
#include "server/webui/webui.h"

static const struct st_route routes[] = {
    /* path                    method  handler               prefix auth   body   work   anthropic*/
    { "/v1/chat/completions", "POST", st_h_chat,            false, true,  true,  true,  false },
    { "/chat/completions",    "POST", st_h_chat,            false, true,  true,  true,  false },
    { "/v1/completions",      "POST", st_h_completions,     false, true,  true,  true,  false },
    { "/completion",          "POST", st_h_completion,      false, true,  true,  true,  false },
    { "/completions",         "POST", st_h_completion,      false, true,  true,  true,  false },
    { "/v1/responses",        "POST", st_h_responses,       false, true,  true,  true,  false },
    { "/responses",           "POST", st_h_responses,       false, true,  true,  true,  false },
    /* stored responses (responses_get.c): {id}, {id}/input_items */
    { "/v1/responses/",       "GET",  st_h_response_get,    true,  true,  false, false, false },
    { "/v1/responses/",       "DELETE", st_h_response_delete, true, true, false, false, false },
    { "/responses/",          "GET",  st_h_response_get,    true,  true,  false, false, false },
    { "/responses/",          "DELETE", st_h_response_delete, true, true, false, false, false },
    { "/v1/messages",         "POST", st_h_messages,        false, true,  true,  true,  true  },
    { "/v1/messages/count_tokens", "POST", st_h_count_tokens, false, true, true,  false, true  },
    { "/infill",              "POST", st_h_infill,          false, true,  true,  true,  false },
    { "/v1/embeddings",       "POST", st_h_embeddings,      false, true,  true,  true,  false },
    { "/embeddings",          "POST", st_h_embeddings,      false, true,  true,  true,  false },
    { "/v1/models",           "GET",  st_h_models,          false, true,  false, false, false },
    { "/models",              "GET",  st_h_models,          false, true,  false, false, false },
    { "/v1/models/",          "GET",  st_h_model_one,       true,  true,  false, false, false },
    { "/props",               "GET",  st_h_props,           false, true,  false, false, false },
    { "/health",              "GET",  st_h_health,          false, false, false, false, false },
    { "/v1/health",           "GET",  st_h_health,          false, false, false, false, false },
    { "/metrics",             "GET",  st_h_metrics,         false, true,  false, false, false },
    { "/api/activity",        "GET",  st_h_activity,        false, true,  false, false, false },
    { "/slots",               "GET",  st_h_slots,           false, true,  false, false, false },
    { "/slots/",              "POST", st_h_slot_action,     true,  true,  true,  false, false },
    { "/tokenize",            "POST", st_h_tokenize,        false, true,  true,  false, false },
    { "/detokenize",          "POST", st_h_detokenize,      false, true,  true,  false, false },
    { "/apply-template",      "POST", st_h_apply_template,  false, true,  true,  false, false },
    /* the prompt's token ids for a router's prefix scorer (openai/h_render.c) */
    { "/v1/chat/completions/render", "POST", st_h_chat_render, false, true, true, false, false },
    { "/v1/completions/render", "POST", st_h_completions_render, false, true, true, false, false },
    /* llama-server's prompt token count (h_render.c) */
    { "/v1/chat/completions/input_tokens", "POST", st_h_chat_input_tokens, false, true, true, false, false },
    { "/chat/completions/input_tokens", "POST", st_h_chat_input_tokens, false, true, true, false, false },
    /* the dashboard (webui/webui.h): its files hold no data, so no key; 404 with --no-webui */
    { "/",                    "GET",  st_h_webui,           false, false, false, false, false },
    { ST_WEBUI_PREFIX,        "GET",  st_h_webui,           true,  false, false, false, false },
};

const struct st_route *st_route_at(size_t i)
{
    return i < ST_ARRAY_LEN(routes) ? &routes[i] : NULL;
}

static bool path_match(const struct st_route *r, const char *path)
{
    if (!r->prefix)
        return strcmp(r->path, path) == 0;
    size_t n = strlen(r->path);
    return strncmp(r->path, path, n) == 0 && path[n] != '\0';
}

static bool method_match(const struct st_route *r, const char *method)
{
    if (strcmp(r->method, method) == 0)
        return true;
    return strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

/* "GET, HEAD" or "POST", appended once per method. */
static void allow_add(char *allow, size_t cap, const char *method)
{
    const char *add = strcmp(method, "GET") == 0 ? "GET, HEAD" : method;
    if (strstr(allow, add))
        return;
    size_t len = strlen(allow);
    snprintf(allow + len, cap - len, "%s%s", len ? ", " : "", add);
}

const struct st_route *st_route_find(const char *path, const char *method, bool *path_known,
                                     char *allow, size_t allow_cap)
{
    *path_known = false;
    if (allow_cap)
        allow[0] = '\0';
    for (size_t i = 0; i < ST_ARRAY_LEN(routes); i++) {
        const struct st_route *r = &routes[i];
        if (!path_match(r, path))
            continue;
        if (method_match(r, method))
            return r;
        *path_known = true;
        if (allow_cap)
            allow_add(allow, allow_cap, r->method);
    }
    return NULL;
}
