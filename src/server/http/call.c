/* call.c -- one HTTP exchange as the handlers see it: a reference, resuming
 * the suspended connection, its headers and query arguments. The daemon
 * (../http.c) creates calls; the last reference (st_call_unref) and
 * suspending (st_call_suspend_locked) live with the generation they wait
 * on (gen/gen.c). A sub-call (../gcp.c: one instance of a Vertex AI
 * predict) has no connection of its own: it borrows its parent's for
 * headers, and wakes the parent instead of resuming.
 */
#include <microhttpd.h>

#include "server/http/http.h"

void st_call_ref(struct st_call *c)
{
    atomic_fetch_add(&c->refs, 1);
}

void st_call_resume_locked(struct st_call *c)
{
    if (c->conn_done)
        return;
    struct st_call *p = c->parent;
    if (p) {
        pthread_mutex_lock(&p->lock);
        p->kicked = true;   /* seen by st_call_park_locked if p is not suspended yet */
        st_call_resume_locked(p);
        pthread_mutex_unlock(&p->lock);
        return;
    }
    if (!c->suspended)
        return;
    c->suspended = false;
    MHD_resume_connection(c->mhd);
}

bool st_call_park_locked(struct st_call *c)
{
    if (c->kicked || c->stopping || atomic_load(&c->srv->stopping) || c->conn_done)
        return false;
    c->suspended = true;
    c->suspend_gen++;
    MHD_suspend_connection(c->mhd);
    return true;
}

const char *st_call_header(struct st_call *c, const char *name)
{
    return MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND, name);
}

const char *st_call_query(struct st_call *c, const char *name)
{
    return MHD_lookup_connection_value(c->mhd, MHD_GET_ARGUMENT_KIND, name);
}
