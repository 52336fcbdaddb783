/* call.c -- one HTTP exchange as the handlers see it: a reference, resuming
 * the suspended connection, its headers and query arguments. The daemon
 * (../http.c) creates calls; the last reference (st_call_unref) and
 * suspending (st_call_suspend_locked) live with the generation they wait
 * on (gen/gen.c).
 */
#include <microhttpd.h>

#include "server/http/http.h"

void st_call_ref(struct st_call *c)
{
    atomic_fetch_add(&c->refs, 1);
}

void st_call_resume_locked(struct st_call *c)
{
    if (!c->suspended || c->conn_done)
        return;
    c->suspended = false;
    MHD_resume_connection(c->mhd);
}

const char *st_call_header(struct st_call *c, const char *name)
{
    return MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND, name);
}

const char *st_call_query(struct st_call *c, const char *name)
{
    return MHD_lookup_connection_value(c->mhd, MHD_GET_ARGUMENT_KIND, name);
}
