/* gen_view.c -- what a generation says so far: its meta, usage, outcome
 * of a choice and the error it is answered with. Shared by the event side
 * (gen_emit.c), the reply (gen.c) and the log line (gen_log.c); callers
 * hold call->lock. */
#include <stdio.h>

#include "server/gen/gen_view.h"

int64_t st_gen_now_ns(void)
{
    return st_clock_now(st_clock_real());
}

struct st_oai_meta st_gen_meta(const struct st_gen *g)
{
    struct st_oai_meta m = { g->kind, g->id, g->model_name, g->created, g->include_usage };
    return m;
}

/* Prompt tokens count once per prompt, not once per choice. */
struct st_oai_usage st_gen_usage(const struct st_gen *g)
{
    struct st_oai_usage u = { 0, 0, 0, 0 };
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        if (i == 0 || g->choices[i - 1].prompt != ch->prompt) {
            u.prompt_tokens += ch->n_prompt;
            u.cached_tokens += ch->n_cached;
        }
        u.completion_tokens += ch->n_generated;
        u.reasoning_tokens += st_gen_reply_reasoning_tokens(ch);
    }
    return u;
}

bool st_gen_finished_ok(const struct st_gen_choice *ch)
{
    return ch->ended && (ch->finish == ST_FINISH_STOP || ch->finish == ST_FINISH_LENGTH);
}

/* The error a choice that did not finish normally is answered with. */
void st_gen_choice_error(const struct st_gen_choice *ch, struct st_api_error *e)
{
    enum st_status s = ch->status;
    if (s == ST_OK)
        s = ch->finish == ST_FINISH_CANCELLED ? ST_ERR_CANCELLED : ST_ERR_INTERNAL;
    const char *code = s == ST_ERR_QUEUE_FULL ? "queue_full"
                     : s == ST_ERR_TOO_LONG   ? "context_length_exceeded"
                     : s == ST_ERR_LOADING    ? "model_load_failed"
                                              : NULL;
    st_api_error_set(e, s, NULL, code, "%s", ch->error[0] ? ch->error : st_status_msg(s));
    if (s == ST_ERR_QUEUE_FULL)
        e->retry_after_s = 1;
}
