/* keepalive.c -- SSE keep-alive for streams that have nothing to send yet.
 *
 * A streaming request may wait minutes before its first token: in the
 * queue behind higher priorities, or reading a long prompt. Proxies and
 * clients drop connections idle that long. So once a stream has handed
 * nothing to libmicrohttpd for --sse-keepalive seconds (default 15), the
 * watcher (watch.c, every 100 ms) appends an SSE comment line
 *
 *   : keep-alive\n\n
 *
 * to its output and resumes the connection. A stream still waiting for
 * its first event then gets its 200 headers with that comment (gen.c's
 * st_gen_resume: data is ready), so the headers go out after the first
 * interval, not at submit: a request that fails sooner (shed, context too
 * long, a model load that fails within the interval) still gets its proper
 * HTTP status; one that fails later gets an in-stream error event
 * ({"error":{...}}) and then data: [DONE] (gen_emit.c stream_end). Comments are
 * ignored by SSE clients (the OpenAI SDKs included).
 *
 * Thread: the watcher, with c->lock held (gen state is under it).
 */
#include "server/gen/gen.h"

static bool can_send_locked(const struct st_call *c)
{
    const struct st_gen *g = c->gen;
    return g && g->stream && c->suspended && !c->conn_done && !c->stopping && !g->broken &&
           !g->stream_done && g->n_ended < g->n_choices && g->out.len == g->out_off;
}

bool st_keepalive_due_locked(struct st_call *c, int64_t now_ns)
{
    int32_t every_s = c->srv->cfg.sse_keepalive_s;
    if (every_s <= 0 || !can_send_locked(c))
        return false;
    if (now_ns - c->gen->last_out_ns < (int64_t)every_s * ST_NS_PER_SEC)
        return false;
    return st_keepalive_probe_locked(c, now_ns);
}

bool st_keepalive_probe_locked(struct st_call *c, int64_t now_ns)
{
    struct st_gen *g = c->gen;
    if (!can_send_locked(c))
        return false;
    if (st_sse_comment(&g->out, "keep-alive") != ST_OK)
        return false;   /* out of memory: try again next time */
    g->last_out_ns = now_ns;   /* the next one an interval later, even if MHD is slow */
    return true;
}
