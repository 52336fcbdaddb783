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

    atomic_uint      gen;        /* bumped once per region */
    atomic_int       pending;    /* workers that have not finished the region */
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

/* Wait for a generation other than 'seen'; returns it. */
static unsigned wait_gen(struct cpu_pool *p, unsigned seen)
{
    uint64_t t0 = now_ns();
    for (unsigned spin = 1;; spin++) {
        unsigned g = atomic_load(&p->gen);
        if (g != seen || atomic_load(&p->stop))
            return g;
        CPU_RELAX();
        if ((spin & 255) == 0 && now_ns() - t0 > SPIN_NS)
            break;
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleeping, 1);
    while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->cv, &p->mu);
    atomic_fetch_sub(&p->sleeping, 1);
    pthread_mutex_unlock(&p->mu);
    return atomic_load(&p->gen);
}

static void *worker_main(void *argp)
{
    struct worker_arg *arg = argp;
    struct cpu_pool *p = arg->p;
    int ith = arg->ith;
    unsigned seen = 0;

    free(arg);
    for (;;) {
        seen = wait_gen(p, seen);
        if (atomic_load(&p->stop))
            break;
        if (ith < p->nth)
            p->fn(p->ctx, ith, p->nth);
        atomic_fetch_sub(&p->pending, 1);
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

void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *ctx, int nth)
{
    if (nth > p->n)
        nth = p->n;
    if (nth <= 1 || p->n == 1) {
        p->nth = 1;
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->nth = nth;
    atomic_store(&p->bar_count, 0);
    atomic_store(&p->pending, p->n - 1);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, nth);
    for (unsigned spin = 1; atomic_load(&p->pending) > 0; spin++) {
        CPU_RELAX();
        if ((spin & 1023) == 0)
            sched_yield();
    }
    p->nth = 1;
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
