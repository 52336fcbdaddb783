/* gen_view.h -- gen/'s internal view of a generation (gen_view.c): the
 * pieces the event side, the reply and the log line all read. Callers
 * hold call->lock. */
#ifndef STRATA_SERVER_GEN_GEN_VIEW_H
#define STRATA_SERVER_GEN_GEN_VIEW_H

#include "server/gen/gen.h"

/* The real clock, in nanoseconds. */
int64_t st_gen_now_ns(void);
/* The id, model and kind every chunk and body carries. */
struct st_oai_meta st_gen_meta(const struct st_gen *g);
/* The usage so far (prompt tokens once per prompt, not once per choice). */
struct st_oai_usage st_gen_usage(const struct st_gen *g);
/* Ended with stop or length. */
bool st_gen_finished_ok(const struct st_gen_choice *ch);
/* The error a choice that did not finish normally is answered with. */
void st_gen_choice_error(const struct st_gen_choice *ch, struct st_api_error *e);

#endif /* STRATA_SERVER_GEN_GEN_VIEW_H */
