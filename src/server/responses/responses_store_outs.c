/* responses_store_outs.c -- what every response store implementation does
 * with get()'s optional out pointers (responses_store_impl.h): clear them,
 * fill them with owned copies. Its own file so the implementations and
 * responses_store.c (which names the memory one) all build on it.
 */
#include <stdlib.h>
#include <string.h>

#include "server/responses/responses_store_impl.h"

void st_resp_store_clear_outs(char **input, char **output, char **response, bool owned)
{
    char **outs[] = { input, output, response };
    for (size_t i = 0; i < ST_ARRAY_LEN(outs); i++) {
        if (!outs[i])
            continue;
        if (owned)
            free(*outs[i]);
        *outs[i] = NULL;
    }
}

bool st_resp_store_copy_out(char **out, const void *text, size_t len)
{
    if (!out)
        return true;
    *out = malloc(len + 1);
    if (!*out)
        return false;
    if (len)
        memcpy(*out, text, len);
    (*out)[len] = '\0';
    return true;
}
