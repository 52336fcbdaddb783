/* oai_sampling.c -- the penalty, bias and output-format fields of a
 * completion body (chat and completions), docs/API.md "Penalties and
 * logit_bias":
 *
 *   presence_penalty, frequency_penalty   numbers in [-2, 2] (OpenAI; 0 = off)
 *   repeat_penalty    number > 0 (llama-server; 1 = off)
 *   repeat_last_n     integer >= -1 (64; 0 = off, -1 = the whole context)
 *   logit_bias        object {"<token id>": number in [-100, 100]}, at most
 *                     ST_MAX_LOGIT_BIAS entries; a token named twice ("7", "07")
 *                     takes the last value, as a JSON parser keeps the last key;
 *                     or llama-server's array [[id, bias or false], ...]; a key
 *                     (or pair) of text is llama-server's too: each token of the
 *                     text gets the bias (kept in bias_text, tokenized with the
 *                     model in gen_submit.c); false is -100 in either form
 *   response_format   {"type": "text"}, {"type": "json_object"} (the output
 *                     is constrained to one JSON object: params.json_object) or
 *                     {"type": "json_schema", "json_schema": {...}} (to a
 *                     document of the schema: params.json_schema, compiled
 *                     here so that an unsupported keyword is a 400);
 *                     llama-server's forms too: {"type": "json_object",
 *                     "schema": {...}} and a top-level "json_schema": {...}
 *   grammar           string, a GBNF grammar (llama-server's field; compiled
 *                     here: params.grammar, docs/API.md "Grammars (GBNF)");
 *                     "" counts as absent; not with a JSON response_format /
 *                     json_schema, nor with tool_choice "required" or a
 *                     named function (400 either way)
 *
 * Same rules as oai_request.c: strict types, null = absent, errors name
 * the param. Ids past the model's vocabulary are checked at submit
 * (gen_submit.c), where the model is known.
 */
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"
#include "strata/gbnf.h"
#include "strata/json_schema.h"

static enum st_status get_float(const cJSON *root, const char *key, double min, bool min_open,
                                double max, float *out, struct st_api_error *e)
{
    double d = *out;
    enum st_status rc = st_oai_get_num(root, key, min, min_open, max, &d, NULL, e);
    if (rc == ST_OK)
        *out = (float)d;
    return rc;
}

/* A token id key: decimal digits only (no sign, space or exponent), at
 * most INT32_MAX. */
static bool token_key(const char *s, int32_t *out)
{
    int64_t v = 0;
    size_t n = 0;
    for (; s[n]; n++) {
        if (s[n] < '0' || s[n] > '9' || n >= 10)
            return false;
        v = v * 10 + (s[n] - '0');
    }
    if (n == 0 || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

/* A bias value: a number in [-100, 100], or false (never: -100). */
static bool bias_value(const cJSON *v, float *out)
{
    if (cJSON_IsFalse(v)) {
        *out = -100.0f;
        return true;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= -100.0 && v->valuedouble <= 100.0))
        return false;
    *out = (float)v->valuedouble;
    return true;
}

/* Keep a text key's entry, [text, bias], for the tokenizer (llama-server
 * biases each token of the text; gen_submit.c tokenizes it). */
static enum st_status keep_text(cJSON **texts, const char *text, float bias,
                                struct st_api_error *e)
{
    if (!*texts && !(*texts = cJSON_CreateArray()))
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    cJSON *pair = cJSON_CreateArray();
    if (!pair || !cJSON_AddItemToArray(*texts, pair) ||
        !cJSON_AddItemToArray(pair, cJSON_CreateString(text)) ||
        !cJSON_AddItemToArray(pair, cJSON_CreateNumber(bias)))
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    return ST_OK;
}

/* OpenAI's form: "<token id>": bias; any other key is text (llama-server).
 * *text set: the entry went to texts, not out. */
static enum st_status bias_entry(const cJSON *it, struct st_logit_bias *out, cJSON **texts,
                                 bool *text, struct st_api_error *e)
{
    const char *key = it->string ? it->string : "";
    if (!bias_value(it, &out->bias))
        return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                "Invalid value in 'logit_bias' for token %.40s: expected a "
                                "number from -100 to 100, or false.", key);
    char *end = NULL;
    (void)strtod(key, &end);
    *text = !token_key(key, &out->token);
    if (*text && (!key[0] || !*end))   /* "", "-1", "1.5": a bad id, not text */
        return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                "Invalid key in 'logit_bias': '%.40s'. Keys must be token ids "
                                "(integers from 0 to 2147483647, as strings) or text.", key);
    return *text ? keep_text(texts, key, out->bias, e) : ST_OK;
}

/* llama-server's array form: [token id, bias], bias a number in [-100,
 * 100] or false (never this token: the strongest bias, -100). */
static enum st_status bias_pair(const cJSON *it, struct st_logit_bias *out, cJSON **texts,
                                bool *text, struct st_api_error *e)
{
    const cJSON *tok = cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2
                           ? cJSON_GetArrayItem(it, 0) : NULL;
    const cJSON *val = tok ? cJSON_GetArrayItem(it, 1) : NULL;
    *text = cJSON_IsString(tok) && tok->valuestring[0];
    if (*text) {   /* [text, bias]: each of its tokens */
        if (!bias_value(val, &out->bias))
            return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                    "Invalid value in 'logit_bias' for '%.40s': expected a "
                                    "number from -100 to 100, or false.", tok->valuestring);
        return keep_text(texts, tok->valuestring, out->bias, e);
    }
    double t = cJSON_IsNumber(tok) ? tok->valuedouble : -1.0;
    if (!(t >= 0.0 && t <= (double)INT32_MAX && t == (double)(int64_t)t))
        return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                "Invalid entry in 'logit_bias': expected [token id, bias] with "
                                "an integer token id from 0 to 2147483647, or [text, bias].");
    out->token = (int32_t)t;
    if (cJSON_IsFalse(val)) {
        out->bias = -100.0f;
        return ST_OK;
    }
    if (!cJSON_IsNumber(val) || !(val->valuedouble >= -100.0 && val->valuedouble <= 100.0))
        return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                "Invalid value in 'logit_bias' for token %d: expected a number "
                                "from -100 to 100, or false.", (int)out->token);
    out->bias = (float)val->valuedouble;
    return ST_OK;
}

static enum st_status parse_bias(const cJSON *root, struct st_gen_params *p, cJSON **texts,
                                 struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "logit_bias");
    if (!v)
        return ST_OK;
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                "Invalid type for 'logit_bias': expected an object mapping "
                                "token ids to numbers (or llama-server's [[id, bias], ...]).");
    int n = cJSON_GetArraySize(v);
    if (n > ST_MAX_LOGIT_BIAS)
        return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                "Invalid 'logit_bias': %d entries; at most %d are allowed.", n,
                                ST_MAX_LOGIT_BIAS);
    if (n == 0)
        return ST_OK;
    struct st_logit_bias *b = malloc((size_t)n * sizeof(*b));
    if (!b)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    int32_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        bool text = false;
        enum st_status rc = cJSON_IsArray(v) ? bias_pair(it, &b[i], texts, &text, e)
                                              : bias_entry(it, &b[i], texts, &text, e);
        if (rc != ST_OK) {
            free(b);
            return rc;
        }
        if (text)
            continue;
        int32_t j = 0;
        while (j < i && b[j].token != b[i].token)
            j++;
        b[j] = b[i];   /* j < i: the token again, the last value wins */
        if (j == i)
            i++;
    }
    free(p->logit_bias);
    p->logit_bias = b;
    p->n_logit_bias = i;
    return ST_OK;
}

/* Compile 'schema' (NULL: {} -- any JSON document) into p->json_schema;
 * 'param' names the field for errors, 'name' the schema's name. */
static enum st_status use_schema(const cJSON *schema, const char *param, const char *name,
                                 const struct st_oai_names *nm, struct st_gen_params *p,
                                 struct st_api_error *e)
{
    char *text = schema ? cJSON_PrintUnformatted(schema) : strdup("{}");
    if (!text)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    struct st_json_schema *s = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_json_schema_compile(text, strlen(text), &s, &err);
    free(text);
    if (rc == ST_ERR_NOMEM)
        return st_api_error_set(e, rc, NULL, NULL, "out of memory");
    if (rc != ST_OK)
        return st_api_error_set(e, ST_ERR_INVALID, param, NULL,
                                "Invalid schema for %s '%.64s': %s", nm->format, name,
                                err.msg);
    st_json_schema_unref(p->json_schema);
    p->json_schema = s;
    p->json_object = false;
    return ST_OK;
}

/* {"type": "json_schema", "json_schema": {"name", "schema", "strict",
 * "description"}}: name as OpenAI's (^[a-zA-Z0-9_-]{1,64}$), required
 * where names say so, else optional as llama-server's (absent: "response"),
 * schema optional (absent: any JSON document), strict a boolean either way
 * (the schema is always enforced). */
static enum st_status parse_json_schema(const cJSON *v, const struct st_oai_names *nm,
                                        struct st_gen_params *p, struct st_api_error *e)
{
    const char *f = nm->format, *js_name = nm->schema;
    const cJSON *js = st_oai_field(v, "json_schema");
    if (!cJSON_IsObject(js))
        return st_api_error_set(e, ST_ERR_INVALID, f, NULL, js ?
                                "Invalid type for '%s': expected an object." :
                                "Missing required parameter: '%s'.", js_name);
    const cJSON *name = st_oai_field(js, "name");
    if ((name || nm->schema_name_required) && !cJSON_IsString(name))
        return st_api_error_set(e, ST_ERR_INVALID, f, NULL, name ?
                                "Invalid type for '%s.name': expected a string." :
                                "Missing required parameter: '%s.name'.", js_name);
    const char *label = name ? name->valuestring : "response";
    size_t n = strlen(label);
    bool ok = n >= 1 && n <= 64;
    for (size_t i = 0; ok && i < n; i++) {
        char c = label[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-';
    }
    if (!ok)
        return st_api_error_set(e, ST_ERR_INVALID, f, NULL,
                                "Invalid '%s.name': '%.64s'. Expected a string of 1 to 64 "
                                "letters, digits, '_' or '-'.", js_name, label);
    const cJSON *strict = st_oai_field(js, "strict"), *schema = st_oai_field(js, "schema");
    if (strict && !cJSON_IsBool(strict))
        return st_api_error_set(e, ST_ERR_INVALID, f, NULL,
                                "Invalid type for '%s.strict': expected a boolean.", js_name);
    if (schema && !cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return st_api_error_set(e, ST_ERR_INVALID, f, NULL,
                                "Invalid type for '%s.schema': expected an object.", js_name);
    return use_schema(schema, f, label, nm, p, e);
}

static enum st_status parse_format(const cJSON *root, const struct st_oai_names *nm,
                                   struct st_gen_params *p, struct st_api_error *e)
{
    const char *f = nm->format;
    const cJSON *v = st_oai_field(root, "response_format");
    const cJSON *top = st_oai_field(root, "json_schema");   /* llama-server's field */
    if (v && top)
        return st_api_error_set(e, ST_ERR_INVALID, "json_schema", NULL,
                                "Give either '%s' or 'json_schema', not both.", f);
    if (top) {
        if (!cJSON_IsObject(top) && !cJSON_IsBool(top))
            return st_api_error_set(e, ST_ERR_INVALID, "json_schema", NULL,
                                    "Invalid type for 'json_schema': expected an object (a "
                                    "JSON Schema).");
        return use_schema(top, "json_schema", "json_schema", nm, p, e);
    }
    if (!v)
        return ST_OK;
    const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : NULL;
    if (!cJSON_IsString(type))
        return st_api_error_set(e, ST_ERR_INVALID, f, NULL,
                                "Invalid '%s': expected an object with a string 'type'.", f);
    const char *t = type->valuestring;
    if (strcmp(t, "text") == 0) {
        p->json_object = false;
        return ST_OK;
    }
    if (strcmp(t, "json_object") == 0) {
        const cJSON *schema = st_oai_field(v, "schema");   /* llama-server's extension */
        if (schema)
            return cJSON_IsObject(schema)
                ? use_schema(schema, f, "schema", nm, p, e)
                : st_api_error_set(e, ST_ERR_INVALID, f, NULL,
                                   "Invalid type for '%s.schema': expected an object.", f);
        p->json_object = true;
        return ST_OK;
    }
    if (strcmp(t, "json_schema") == 0)
        return parse_json_schema(v, nm, p, e);
    return st_api_error_set(e, ST_ERR_INVALID, f, NULL,
                            "Invalid value for '%s.type': '%.40s'. Supported values are: "
                            "'text', 'json_object', 'json_schema'.", f, t);
}

/* tool_choice "required" or a named function (chat's enforced calls). */
static bool forced_calls(const cJSON *root)
{
    const cJSON *tc = st_oai_field(root, "tool_choice");
    return cJSON_IsObject(tc) || (cJSON_IsString(tc) && strcmp(tc->valuestring, "required") == 0);
}

/* llama-server's "grammar": GBNF text, compiled into p->grammar. */
static enum st_status parse_grammar(const cJSON *root, const struct st_oai_names *nm,
                                    struct st_gen_params *p, struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "grammar");
    if (!v)
        return ST_OK;
    if (!cJSON_IsString(v))
        return st_api_error_set(e, ST_ERR_INVALID, "grammar", NULL,
                                "Invalid type for 'grammar': expected a string (a GBNF "
                                "grammar).");
    if (!v->valuestring[0])
        return ST_OK;   /* llama-server: an empty grammar is none */
    if (p->json_object || p->json_schema)
        return st_api_error_set(e, ST_ERR_INVALID, "grammar", NULL,
                                "'grammar' cannot be combined with %s: give one constraint.",
                                nm->json_format);
    if (forced_calls(root))
        return st_api_error_set(e, ST_ERR_INVALID, "grammar", NULL,
                                "'grammar' cannot be combined with %s: give one constraint.",
                                nm->forced_calls);
    struct st_gbnf *g = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_gbnf_compile(v->valuestring, strlen(v->valuestring), &g, &err);
    if (rc == ST_ERR_NOMEM)
        return st_api_error_set(e, rc, NULL, NULL, "out of memory");
    if (rc != ST_OK)
        return st_api_error_set(e, ST_ERR_INVALID, "grammar", NULL, "Invalid 'grammar': %s",
                                err.msg);
    st_gbnf_unref(p->grammar);
    p->grammar = g;
    return ST_OK;
}

enum st_status st_oai_parse_penalties(const cJSON *root, const struct st_oai_names *names,
                                      struct st_gen_params *p, cJSON **bias_text,
                                      struct st_api_error *e)
{
    int64_t n = p->repeat_last_n;
    ST_TRY(get_float(root, "presence_penalty", -2, false, 2, &p->presence_penalty, e));
    ST_TRY(get_float(root, "frequency_penalty", -2, false, 2, &p->frequency_penalty, e));
    ST_TRY(get_float(root, "repeat_penalty", 0, true, 1e6, &p->repeat_penalty, e));
    ST_TRY(st_oai_get_int(root, "repeat_last_n", -1, INT32_MAX, &n, NULL, e));
    p->repeat_last_n = (int32_t)n;
    ST_TRY(parse_bias(root, p, bias_text, e));
    ST_TRY(parse_format(root, names, p, e));
    return parse_grammar(root, names, p, e);
}
