/* sched_sim.c -- the tiny simulated engine of sched_sim.h. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "sched_sim.h"

/* Check's ck_assert writes to a pipe on every call in fork mode; the sim
 * runs hundreds of thousands of steps, so it only reports failures. */
#define SIM_REQUIRE(c) \
    do { \
        if (!(c)) \
            ck_abort_msg("sim: %s (%s:%d)", #c, __FILE__, __LINE__); \
    } while (0)

void sim_init(struct sim *sim, const struct st_sched_config *cfg, int32_t n_engines,
              int32_t n_slots, int64_t chunk)
{
    struct st_sched_config c = *cfg;
    struct st_err err = {0};

    ck_assert_int_le(n_engines, SIM_MAX_ENGINES);
    ck_assert_int_le(n_slots, SIM_MAX_SLOTS);
    memset(sim, 0, sizeof(*sim));
    st_clock_manual_init(&sim->clock, 1000 * ST_NS_PER_SEC);
    c.log_dispatch = false;
    ck_assert_int_eq(st_sched_new(&c, &sim->clock.clock, &sim->s, &err), ST_OK);
    for (int32_t e = 0; e < n_engines; e++)
        ck_assert_int_eq(st_sched_add_engine(sim->s, n_slots, 0), e);
    sim->n_engines = n_engines;
    sim->n_slots = n_slots;
    sim->chunk = chunk;
    sim->step_ns = 10 * ST_NS_PER_MS;
}

void sim_fini(struct sim *sim)
{
    st_sched_free(sim->s);
    sim->s = NULL;
}

enum st_status sim_submit(struct sim *sim, struct sim_job *j, int32_t priority, int32_t model,
                          int64_t prompt, int64_t n_decode, struct st_sched_job **shed)
{
    static int counter;
    memset(j, 0, sizeof(*j));
    j->job.priority = priority;
    j->job.model = model;
    j->job.prompt_tokens = prompt;
    snprintf(j->job.request_id, sizeof(j->job.request_id), "req-%d", ++counter);
    j->n_decode = n_decode;
    enum st_status rc = st_sched_submit(sim->s, &j->job, shed);
    if (rc != ST_OK) {
        j->done = true;
        j->outcome = ST_OUTCOME_REJECTED;
    }
    if (shed && *shed) {
        struct sim_job *v = ST_CONTAINER_OF(*shed, struct sim_job, job);
        v->done = true;
        v->outcome = ST_OUTCOME_REJECTED;
    }
    j->prev = j->job.state;
    return rc;
}

static void mark_done(struct sim *sim, struct sim_job *j, enum st_outcome o)
{
    j->done = true;
    j->outcome = o;
    j->done_ns = st_clock_now(&sim->clock.clock);
    j->finish_order = ++sim->n_done;
}

void sim_cancel(struct sim *sim, struct sim_job *j)
{
    if (j->done)
        return;
    if (st_sched_cancel(sim->s, &j->job))
        mark_done(sim, j, ST_OUTCOME_CANCELLED);
    else
        j->cancel = true;
}

int sim_admit_all(struct sim *sim)
{
    int n = 0;
    for (int32_t e = 0; e < sim->n_engines; e++) {
        for (int32_t k = 0; k < sim->n_slots; k++) {
            if (sim->slot[e][k])
                continue;
            struct st_sched_job *j = st_sched_admit(sim->s, e, k);
            if (!j)
                continue;   /* another slot may still be blocked by batch-off */
            SIM_REQUIRE(j->engine == e);
            SIM_REQUIRE(j->slot == k);
            SIM_REQUIRE(j->state == ST_JOB_ADMITTED);
            sim->slot[e][k] = ST_CONTAINER_OF(j, struct sim_job, job);
            n++;
        }
    }
    return n;
}

static void end_slot(struct sim *sim, int32_t e, int32_t k, enum st_outcome o)
{
    struct sim_job *j = sim->slot[e][k];
    struct st_job_report rep = { .first_token_ns = j->first_token_ns,
                                 .n_generated = j->generated };
    st_sched_finish(sim->s, &j->job, o, &rep);
    SIM_REQUIRE(j->job.state == ST_JOB_DONE);
    sim->slot[e][k] = NULL;
    mark_done(sim, j, o);
}

/* One step of engine 'e': the read chunk, then one token per decoder. */
static void engine_step(struct sim *sim, int32_t e, int64_t now)
{
    struct sim_job *reader = NULL;
    for (int32_t k = 0; k < sim->n_slots; k++)
        if (sim->slot[e][k] && sim->slot[e][k]->cancel)
            end_slot(sim, e, k, ST_OUTCOME_CANCELLED);
    struct st_sched_job *h = st_sched_lines(sim->s, e);
    if (h) {
        reader = ST_CONTAINER_OF(h, struct sim_job, job);
        SIM_REQUIRE(h->state == ST_JOB_READING);
        SIM_REQUIRE(h->engine == e);
        int64_t left = h->prompt_tokens - h->tokens_read;
        st_sched_read_progress(sim->s, h, left < sim->chunk ? left : sim->chunk);
        sim->reads[e]++;
        sim->last_reader[e] = reader;
    }
    for (int32_t k = 0; k < sim->n_slots; k++) {
        struct sim_job *j = sim->slot[e][k];
        if (!j || j->job.state != ST_JOB_DECODING)
            continue;
        if (j->generated == 0)
            j->first_token_ns = now;
        j->generated++;
        if (j->generated >= j->n_decode)
            end_slot(sim, e, k, ST_OUTCOME_COMPLETED);
    }
}

void sim_step(struct sim *sim)
{
    int64_t now = st_clock_now(&sim->clock.clock);
    sim_admit_all(sim);
    for (int32_t e = 0; e < sim->n_engines; e++)
        engine_step(sim, e, now);
    st_clock_manual_advance(&sim->clock, sim->step_ns);
    sim->steps++;
}

bool sim_run(struct sim *sim, struct sim_job *jobs, int n, int64_t max_steps)
{
    for (int64_t step = 0; step < max_steps; step++) {
        bool all = true;
        for (int i = 0; i < n && all; i++)
            all = jobs[i].done;
        if (all)
            return true;
        sim_step(sim);
    }
    for (int i = 0; i < n; i++)
        if (!jobs[i].done)
            return false;
    return true;
}

double sim_now_s(const struct sim *sim)
{
    return (double)(sim->clock.now_ns - 1000 * ST_NS_PER_SEC) / (double)ST_NS_PER_SEC;
}
