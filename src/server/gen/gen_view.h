/* gen_view.h -- gen/'s internal view of a generation (gen_view.c): the
 * pieces the event side, the reply and the log line all read. Callers
 * hold call->lock. */
#ifndef STRATA_SERVER_GEN_GEN_VIEW_H
#define STRATA_SERVER_GEN_GEN_VIEW_H

#include "server/gen/gen.h"

/* The real clock, in nanoseconds. */
int64_t st_gen_now_ns(void);
/* Ended with stop or length. */
bool st_gen_finished_ok(const struct st_gen_choice *ch);
/* The error a choice that did not finish normally is answered with. */
void st_gen_choice_error(const struct st_gen_choice *ch, struct st_api_error *e);

#endif /* STRATA_SERVER_GEN_GEN_VIEW_H */
