/* auth.c -- API keys and request ids.
 *
 * Keys (docs/design/SCHEDULER.md section 7): with keys configured, every route that
 * needs one takes "Authorization: Bearer KEY" (OpenAI's SDKs) or
 * "x-api-key: KEY" (Anthropic's); the key found decides the request's
 * default and maximum priority. Each comparison touches every
 * byte of both strings so timing does not reveal a key's prefix.
 *
 * The matched key also owns the stored responses its calls make
 * (st_auth_owner), and sees only its own requests on /api/activity and
 * /slots unless it is an admin key (st_auth_sees). /metrics takes any key
 * or the separate --metrics-key (../http.c).
 *
 * Request ids: a client's X-Request-Id is echoed when it is short and made
 * of safe characters (it lands in logs, headers and JSON); otherwise a
 * random "req-<24 hex>" is made.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/http/http.h"

/* Constant-time for equal lengths; different lengths differ anyway. */
static bool key_eq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    unsigned diff = alen != blen;
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned)(unsigned char)a[i] ^ (unsigned)(unsigned char)b[i];
    return diff == 0;
}

/* The key k (blanks around it ignored) among keys[0..n_keys), or NULL. */
static const struct st_api_key *key_find(const struct st_api_key *keys, size_t n_keys,
                                         const char *k)
{
    while (*k == ' ' || *k == '\t')
        k++;
    size_t len = strlen(k);
    while (len && (k[len - 1] == ' ' || k[len - 1] == '\t'))
        len--;
    const struct st_api_key *found = NULL;
    for (size_t i = 0; i < n_keys; i++)   /* no early exit: same work for every key; an empty key never matches */
        if (keys[i].key && keys[i].key[0] && key_eq(k, len, keys[i].key) && !found)
            found = &keys[i];
    return found;
}

const struct st_api_key *st_auth_find(const struct st_api_key *keys, size_t n_keys,
                                      const char *value)
{
    if (!value)
        return NULL;
    while (*value == ' ' || *value == '\t')
        value++;
    if (strncasecmp(value, "Bearer", 6) != 0 || (value[6] != ' ' && value[6] != '\t'))
        return NULL;
    return key_find(keys, n_keys, value + 7);
}

const struct st_api_key *st_auth_find_plain(const struct st_api_key *keys, size_t n_keys,
                                            const char *value)
{
    return value ? key_find(keys, n_keys, value) : NULL;
}

/* The tag of the key's place in srv->keys (not its name: names may
 * repeat; config.c checks only that keys differ). A key always matches the
 * same place (key_find takes the first equal entry). In memory the tag is
 * 1 + the place; with --state-dir, whose rows outlive the key list's
 * order, a keyed digest of the key under the database's salt
 * (state/state_db.h), so no key is written to disk. */
uint64_t st_auth_owner(const struct st_call *c)
{
    return c->key ? c->srv->key_owners[c->key - c->srv->keys] : 0;
}

bool st_auth_sees(const struct st_call *c, uint64_t owner)
{
    if (c->srv->cfg.n_keys == 0 || (c->key && c->key->admin))
        return true;
    return owner != 0 && owner != ST_OWNER_AMBIGUOUS && owner == st_auth_owner(c);
}

bool st_request_id_sane(const char *v)
{
    if (!v)
        return false;
    size_t n = 0;
    for (; v[n]; n++) {
        char c = v[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == ':' || c == '-';
        if (!ok || n >= 40)
            return false;
    }
    return n > 0;
}

void st_request_id_pick(const char *client_value, char *out, size_t cap)
{
    if (st_request_id_sane(client_value)) {
        snprintf(out, cap, "%s", client_value);
        return;
    }
    st_random_hex_id(out, cap, "req-", 12);
}
