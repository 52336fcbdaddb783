/* cli_names.c -- llama-server's --alias and --tags lists for the model of
 * --model: "--alias tinyllama-2,fim,code" gives one model three ids, and
 * its id (what /v1/models lists first) is the first of them in byte order,
 * as llama-server's (it keeps them in a sorted set). --tags are labels
 * /v1/models shows and nothing routes on.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The items of a comma-separated list, trimmed, without empty ones and
 * repeats, sorted; *out NULL with *n 0 when there are none. */
static enum st_status split_list(const char *text, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    char **v = calloc(cap, sizeof(*v));
    if (!v)
        return ST_ERR_NOMEM;
    size_t k = 0;
    for (const char *p = text; ; p++) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *b = p, *e = end;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > b && !(v[k] = strndup(b, (size_t)(e - b)))) {
            free_names(v, k);
            return ST_ERR_NOMEM;
        }
        k += e > b;
        if (!*end)
            break;
        p = end;
    }
    qsort(v, k, sizeof(*v), cmp_names);
    size_t u = 0;
    for (size_t i = 0; i < k; i++) {
        if (u > 0 && strcmp(v[u - 1], v[i]) == 0)
            free(v[i]);
        else
            v[u++] = v[i];
    }
    if (u == 0) {
        free(v);
        return ST_OK;
    }
    *out = v;
    *n = u;
    return ST_OK;
}

enum st_status st_cfg_cli_names(const struct st_config *c, struct st_config_model *m,
                                struct st_err *err)
{
    char **v = NULL;
    size_t n = 0;
    if (c->model_alias) {
        if (split_list(c->model_alias, &v, &n) != ST_OK)
            return st_err_set(err, ST_ERR_NOMEM, "config: out of memory");
        if (n == 0)
            return st_err_set(err, ST_ERR_BAD_CONFIG, "--alias: expected a name (or "
                              "comma-separated names)");
        free(m->name);
        m->name = v[0];
        m->aliases = n > 1 ? v : NULL;   /* the others become aliases, in place */
        if (n > 1)
            memmove(v, v + 1, (n - 1) * sizeof(*v));
        else
            free(v);
        m->n_aliases = n - 1;
    }
    if (c->model_tags) {
        if (split_list(c->model_tags, &v, &n) != ST_OK)
            return st_err_set(err, ST_ERR_NOMEM, "config: out of memory");
        m->tags = v;
        m->n_tags = n;
    }
    return ST_OK;
}
