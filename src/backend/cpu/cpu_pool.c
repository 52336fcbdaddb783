/* cpu_pool.c -- persistent worker threads for the CPU backend.
 *
 * One pool per backend, sized by the thread count (the caller is thread
 * 0, so n threads means n-1 pthreads). A parallel region is published by
 * bumping a generation counter; workers spin on it for a short while
 * (decode steps issue regions microseconds apart, and a futex wake costs
 * more than that) and then sleep on a condition variable, so an idle
 * server does not burn its cores. The barrier inside a region is a plain
 * spinning counter barrier: within a region every thread is busy, so the
 * wait is short.
 *
 * Two kinds of region: cpu_pool_run waits for all nth threads (static
 * splits and barriers allowed); cpu_pool_run_dyn lets the caller close
 * the region once its own work loop ends, so a worker that has not
 * started yet (descheduled on a shared machine, or still waking up) is
 * simply left out: its fn must claim work dynamically (cpu_claim).
 *
 * Memory order: every shared counter is seq_cst. The wake-up protocol
 * relies on it (a poster either sees a sleeper or the sleeper sees the new
 * generation), and the cost is irrelevant next to a matmul.
 *
 * Threads: cpu_pool_run is called by the one thread that drives the
 * backend; cpu_pool_barrier only from inside a running region.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "cpu.h"
#include "strata/log.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define SPIN_NS 200000   /* how long an idle worker polls before it sleeps */

struct cpu_pool {
    int              n;          /* threads including the caller */
    pthread_t       *threads;    /* n - 1 workers */
    int              n_started;

    cpu_task_fn      fn;         /* the current region */
    void            *ctx;
    int              nth;

    /* (generation << 32) | open worker slots. A region is published by
     * bumping the generation with nth - 1 open slots; a worker joins by
     * taking a slot with a CAS on the whole word, so it can only join the
     * region it saw, and its ith (nth - slots) is unique in that region. */
    _Atomic uint64_t state;
    atomic_int       pending;    /* joined-or-expected workers not yet done */
    atomic_int       stop;
    atomic_int       sleeping;

    atomic_int       bar_count;
    atomic_uint      bar_gen;

    pthread_mutex_t  mu;
    pthread_cond_t   cv;
};

struct worker_arg {
    struct cpu_pool *p;
    int              ith;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned gen_of(uint64_t s)
{
    return (unsigned)(s >> 32);
}

/* Wait for a generation other than 'seen'; returns it. */
static unsigned wait_gen(struct cpu_pool *p, unsigned seen)
{
    uint64_t t0 = now_ns();
    for (unsigned spin = 1;; spin++) {
        unsigned g = gen_of(atomic_load(&p->state));
        if (g != seen || atomic_load(&p->stop))
            return g;
        CPU_RELAX();
        if ((spin & 255) == 0 && now_ns() - t0 > SPIN_NS)
            break;
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleeping, 1);
    while (gen_of(atomic_load(&p->state)) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->cv, &p->mu);
    atomic_fetch_sub(&p->sleeping, 1);
    pthread_mutex_unlock(&p->mu);
    return gen_of(atomic_load(&p->state));
}

/* Take a slot of region g; returns ith (>= 1), or 0 when g is over or full. */
static int join_region(struct cpu_pool *p, unsigned g)
{
    uint64_t s = atomic_load(&p->state);
    while (gen_of(s) == g && (uint32_t)s > 0) {
        if (atomic_compare_exchange_weak(&p->state, &s, s - 1))
            return p->nth - (int)(uint32_t)s;
    }
    return 0;
}

static void *worker_main(void *argp)
{
    struct worker_arg *arg = argp;
    struct cpu_pool *p = arg->p;
    int ith = arg->ith;
    unsigned seen = 0;

    free(arg);
    (void)ith;
    for (;;) {
        seen = wait_gen(p, seen);
        if (atomic_load(&p->stop))
            break;
        int me = join_region(p, seen);
        if (me > 0) {
            p->fn(p->ctx, me, p->nth);
            atomic_fetch_sub(&p->pending, 1);
        }
    }
    return NULL;
}

struct cpu_pool *cpu_pool_new(int n_threads)
{
    struct cpu_pool *p = calloc(1, sizeof(*p));

    if (!p || n_threads < 1)
        goto fail;
    p->n = n_threads;
    p->nth = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        if (!p->threads)
            goto fail;
    }
    for (int i = 1; i < n_threads; i++) {
        struct worker_arg *arg = malloc(sizeof(*arg));
        if (!arg)
            goto fail;
        arg->p = p;
        arg->ith = i;
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, arg) != 0) {
            free(arg);
            goto fail;
        }
        p->n_started++;
    }
    return p;
fail:
    cpu_pool_free(p);
    return NULL;
}

void cpu_pool_free(struct cpu_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

int cpu_pool_size(const struct cpu_pool *p)
{
    return p->n;
}

/* Publish a region of nth threads (nth >= 2); the caller runs it as 0. */
static void publish(struct cpu_pool *p, cpu_task_fn fn, void *ctx, int nth)
{
    uint64_t s = atomic_load(&p->state);
    p->fn = fn;
    p->ctx = ctx;
    p->nth = nth;
    atomic_store(&p->bar_count, 0);
    atomic_store(&p->pending, nth - 1);
    atomic_store(&p->state, ((uint64_t)(gen_of(s) + 1) << 32) | (uint64_t)(nth - 1));
    if (atomic_load(&p->sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

static void wait_pending(struct cpu_pool *p)
{
    for (unsigned spin = 1; atomic_load(&p->pending) > 0; spin++) {
        CPU_RELAX();
        if ((spin & 1023) == 0)
            sched_yield();
    }
    p->nth = 1;
}

/* Run fn as a region of up to nth threads, the caller being thread 0; false
 * when it ran on the caller alone (nothing to wait for). */
static bool start_region(struct cpu_pool *p, cpu_task_fn fn, void *ctx, int nth)
{
    nth = nth > p->n ? p->n : nth;
    if (nth <= 1) {
        p->nth = 1;
        fn(ctx, 0, 1);
        return false;
    }
    publish(p, fn, ctx, nth);
    fn(ctx, 0, nth);
    return true;
}

void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *ctx, int nth)
{
    if (start_region(p, fn, ctx, nth))
        wait_pending(p);
}

void cpu_pool_run_dyn(struct cpu_pool *p, cpu_task_fn fn, void *ctx, int nth)
{
    if (!start_region(p, fn, ctx, nth))
        return;
    /* Close the region: slots nobody took now will never be taken (a
     * worker still asleep or descheduled must not hold the caller up;
     * the work it would have claimed is already done). */
    uint64_t s = atomic_load(&p->state);
    while ((uint32_t)s > 0 &&
           !atomic_compare_exchange_weak(&p->state, &s, s & ~(uint64_t)0xffffffffu))
        ;
    if ((uint32_t)s > 0)
        atomic_fetch_sub(&p->pending, (int)(uint32_t)s);
    wait_pending(p);
}

void cpu_pool_barrier(struct cpu_pool *p)
{
    int nth = p->nth;
    if (nth <= 1)
        return;
    unsigned g = atomic_load(&p->bar_gen);
    if (atomic_fetch_add(&p->bar_count, 1) == nth - 1) {
        atomic_store(&p->bar_count, 0);
        atomic_fetch_add(&p->bar_gen, 1);
        return;
    }
    for (unsigned spin = 1; atomic_load(&p->bar_gen) == g; spin++) {
        CPU_RELAX();
        if ((spin & 1023) == 0)
            sched_yield();
    }
}
