/* sched_sim.h -- a tiny simulated engine for the scheduler suites.
 *
 * It drives st_sched exactly as an engine thread does, one step at a time:
 * admit into every free slot, ask for the lines, read one chunk of the
 * holder's prompt, then one decode token per decoding slot (the job whose
 * read just completed gets its first token in the same step), finish the
 * jobs that generated all their tokens or were cancelled. Time moves only
 * on the manual clock, by step_ns per step. No threads, no sleeps.
 *
 * The real sim engine (src/engine on the sim runner, src/runner/runner_sim.c) runs the same
 * rules end to end; this one exists so the rules are tested at the pure
 * level, step by step.
 */
#ifndef STRATA_TEST_SCHED_SIM_H
#define STRATA_TEST_SCHED_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/clock.h"
#include "strata/sched.h"

#define SIM_MAX_ENGINES 4
#define SIM_MAX_SLOTS   16

struct sim_job {
    struct st_sched_job job;    /* what the scheduler sees */
    int64_t n_decode;           /* tokens to generate (>= 1) */
    int64_t generated;
    bool    cancel;             /* client gone: the engine ends it at its next step */
    bool    done;               /* left the scheduler (any outcome) */
    enum st_outcome outcome;
    int64_t first_token_ns;     /* 0 until the first token */
    int64_t done_ns;
    int     finish_order;       /* 1, 2, ... in finishing order */
    enum st_job_state prev;     /* state seen at the end of the last step */
};

struct sim {
    struct st_clock_manual clock;
    struct st_sched *s;
    int32_t n_engines;
    int32_t n_slots;
    struct sim_job *slot[SIM_MAX_ENGINES][SIM_MAX_SLOTS];   /* borrowed */
    int64_t chunk;              /* prompt tokens read per step */
    int64_t step_ns;            /* clock time per step */
    int     n_done;
    int64_t steps;
    int64_t reads[SIM_MAX_ENGINES];   /* chunks read so far, per engine */
    struct sim_job *last_reader[SIM_MAX_ENGINES];   /* who read the last chunk */
};

/* A scheduler from 'cfg' (log_dispatch forced off) with n_engines engines
 * of n_slots slots each, all with model 0 loaded. Aborts the test on error. */
void sim_init(struct sim *sim, const struct st_sched_config *cfg, int32_t n_engines,
              int32_t n_slots, int64_t chunk);
void sim_fini(struct sim *sim);

/* Fill and submit; returns the submit status. 'shed' may be NULL. */
enum st_status sim_submit(struct sim *sim, struct sim_job *j, int32_t priority, int32_t model,
                          int64_t prompt, int64_t n_decode, struct st_sched_job **shed);

/* The client leaves: removed at once when waiting, else at the next step. */
void sim_cancel(struct sim *sim, struct sim_job *j);

/* Admit into every free slot of every engine (what an engine does first at
 * each step); returns how many were admitted. */
int sim_admit_all(struct sim *sim);

/* One step of every engine, then advance the clock. */
void sim_step(struct sim *sim);

/* Step until every job of jobs[0..n) is done or 'max_steps' passed;
 * returns true when all are done. */
bool sim_run(struct sim *sim, struct sim_job *jobs, int n, int64_t max_steps);

/* Seconds since the scheduler started (manual clock). */
double sim_now_s(const struct sim *sim);

#endif /* STRATA_TEST_SCHED_SIM_H */
