/*
 * The thread pool.  A program's awhile loop may launch thousands of kernels
 * on tiny arrays, so a launch must cost about a cache-line round trip, not
 * a system call: idle workers spin for a short while on a generation
 * counter before they block on a condition variable.
 *
 * Protocol.  `gen` is odd while no job is open and even while one is:
 *
 *   caller (pool_run)                     worker
 *   write fn, arg, ntasks; next = 0
 *   gen = g (even, seq_cst)  ------------> sees gen != seen: g
 *   claim tasks from next                  inside += 1 (seq_cst)
 *                                          gen still g?  yes: read fn, arg,
 *                                          ntasks; claim tasks from next
 *   (next exhausted) gen = g+1 (seq_cst)   inside -= 1
 *   wait until inside == 0
 *
 * The worker announces itself (inside) and then re-reads gen; the caller
 * closes the job (gen = g+1) and then reads inside.  With sequentially
 * consistent operations at least one of them sees the other (Dekker): a
 * worker that saw the job still open is counted, so the caller waits for
 * it before it returns or rewrites the job fields; a worker that arrives
 * too late sees the job closed and touches nothing.  Hence the job fields
 * need no atomics, and no per-task completion counter is needed: every task
 * was claimed by the caller or by a counted worker when the caller closes.
 *
 * Blocking uses the same pattern twice: a worker going to sleep counts
 * itself in `sleepers` under the mutex before its last look at gen, so a
 * publisher that reads sleepers == 0 may skip the mutex; a caller waiting
 * for stragglers sets `waiting` before its last look at inside.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "pool.h"
#include "fault.h"
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

/* Busy-wait budget.  Pause-spinning costs a core but reacts in well under a
 * microsecond; after SPIN_NS the waiter yields (which lets an oversubscribed
 * machine run the thread that has work), and after BLOCK_NS it sleeps.  The
 * gap between two launches of an awhile loop is the host's loop overhead,
 * a few microseconds, so these cover it with room to spare while bounding
 * the CPU burnt after the program moves on. */
enum { SPIN_NS = 20000, BLOCK_NS = 100000 };
enum { MAX_THREADS = 4096 };

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __asm__ __volatile__("pause" ::: "memory")
#elif defined(__aarch64__) || defined(__arm__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() atomic_signal_fence(memory_order_seq_cst)
#endif

typedef struct Worker {
    Pool *pool;
    int id;
    pthread_t thread;
} Worker;

struct Pool {
    /* Read by every spinning worker; written once per launch.  The job
     * fields live on the same line: a worker reads them right after gen. */
    alignas(64) _Atomic uint64_t gen;
    PoolTask fn;
    void *arg;
    int64_t ntasks;
    _Atomic bool stop;
    /* The task counter is the hot line while a job runs. */
    alignas(64) _Atomic int64_t next;
    alignas(64) _Atomic int inside;     /* workers inside the current job */
    _Atomic int sleepers;               /* workers blocked (or about to) on wake */
    _Atomic bool waiting;               /* the caller blocked (or about to) on done */
    alignas(64) pthread_mutex_t mu;
    pthread_cond_t wake;                /* workers: gen changed */
    pthread_cond_t done;                /* caller: inside dropped to 0 */
    int nthreads;
    Worker *workers;                    /* nthreads-1 of them */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One step of a bounded busy wait; false when the budget is spent.  The
 * clock is read every 64 steps only: it costs more than a pause. */
static bool backoff(unsigned *i, int64_t *start)
{
    unsigned k = (*i)++;
    if ((k & 63) != 63) {
        cpu_relax();
        return true;
    }
    int64_t t = now_ns();
    if (!*start) {
        *start = t;
        return true;
    }
    if (t - *start > BLOCK_NS) return false;
    if (t - *start > SPIN_NS) sched_yield();
    return true;
}

/* Waits until gen differs from seen and returns it. */
static uint64_t wait_for_gen(Pool *p, uint64_t seen)
{
    uint64_t g;
    unsigned i = 0;
    int64_t start = 0;
    do {
        g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (g != seen) return g;
    } while (backoff(&i, &start));
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    while ((g = atomic_load(&p->gen)) == seen)
        pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    return g;
}

/* Claims and runs tasks until none are left. */
static void drain(Pool *p, PoolTask fn, void *arg, int64_t ntasks, int id)
{
    for (;;) {
        int64_t t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= ntasks) return;
        fn(arg, t, id);
    }
}

static void *worker_main(void *vw)
{
    Worker *w = vw;
    Pool *p = w->pool;
    uint64_t seen = 1;   /* the pool starts closed at gen 1 */
    for (;;) {
        uint64_t g = wait_for_gen(p, seen);
        seen = g;
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) break;
        if (g & 1) continue;   /* that job is over already */
        atomic_fetch_add(&p->inside, 1);
        if (atomic_load(&p->gen) == g)
            drain(p, p->fn, p->arg, p->ntasks, w->id);
        /* The last one out wakes a caller that gave up spinning.  The
         * decrement also publishes this worker's task effects (release),
         * which the caller acquires when it reads inside == 0. */
        if (atomic_fetch_sub(&p->inside, 1) == 1 && atomic_load(&p->waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

/* Publishes a new gen and wakes up to `want` sleeping workers (a job of
 * three tasks needs at most two helpers).  Waking is only ever a speed-up:
 * the caller drains every task itself if no one comes, so a wake-up that
 * goes to a thread already awake loses time, never work. */
static void publish(Pool *p, uint64_t g, int64_t want)
{
    atomic_store(&p->gen, g);
    int s = atomic_load(&p->sleepers);
    if (s == 0) return;
    pthread_mutex_lock(&p->mu);
    if (want >= s) pthread_cond_broadcast(&p->wake);
    else
        for (int64_t i = 0; i < want; i++) pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
}

static void wait_inside_zero(Pool *p)
{
    unsigned i = 0;
    int64_t start = 0;
    do {
        if (atomic_load(&p->inside) == 0) return;
    } while (backoff(&i, &start));
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->waiting, true);
    while (atomic_load(&p->inside) != 0)
        pthread_cond_wait(&p->done, &p->mu);
    atomic_store(&p->waiting, false);
    pthread_mutex_unlock(&p->mu);
}

static void stop_workers(Pool *p, int started)
{
    atomic_store(&p->stop, true);
    uint64_t g = atomic_load_explicit(&p->gen, memory_order_relaxed);
    publish(p, g + 2, MAX_THREADS);
    for (int i = 0; i < started; i++) pthread_join(p->workers[i].thread, NULL);
}

Pool *pool_new(int nthreads)
{
    if (nthreads < 1) nthreads = 1;
    if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
    /* aligned_alloc: the struct's cache-line alignment must hold. */
    Pool *p = ax__aligned_alloc(alignof(Pool), sizeof(Pool));
    if (!p) return NULL;
    *p = (Pool){.nthreads = nthreads};
    atomic_init(&p->gen, 1);
    atomic_init(&p->stop, false);
    atomic_init(&p->next, 0);
    atomic_init(&p->inside, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->waiting, false);
    if (nthreads == 1) return p;

    p->workers = ax__calloc((size_t)nthreads - 1, sizeof *p->workers);
    if (!p->workers) goto fail_mem;
    if (pthread_mutex_init(&p->mu, NULL)) goto fail_mem;
    if (pthread_cond_init(&p->wake, NULL)) goto fail_mu;
    if (pthread_cond_init(&p->done, NULL)) goto fail_wake;

    /* Workers start with every signal blocked so that the application's
     * signals go to its own threads, not into kernel code. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int started = 0;
    for (; started < nthreads - 1; started++) {
        Worker *w = &p->workers[started];
        w->pool = p;
        w->id = started + 1;
        if (fault_hit(AX_FAULT_THREAD) || pthread_create(&w->thread, NULL, worker_main, w)) break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (started < nthreads - 1) {
        stop_workers(p, started);
        goto fail_done;
    }
    return p;

fail_done:
    pthread_cond_destroy(&p->done);
fail_wake:
    pthread_cond_destroy(&p->wake);
fail_mu:
    pthread_mutex_destroy(&p->mu);
fail_mem:
    free(p->workers);
    free(p);
    return NULL;
}

void pool_free(Pool *p)
{
    if (!p) return;
    if (p->nthreads > 1) {
        stop_workers(p, p->nthreads - 1);
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
    }
    free(p->workers);
    free(p);
}

int pool_threads(const Pool *p)
{
    return p ? p->nthreads : 1;
}

void pool_run(Pool *p, PoolTask fn, void *arg, int64_t ntasks)
{
    if (ntasks <= 0) return;
    if (!p || p->nthreads == 1 || ntasks == 1) {
        for (int64_t t = 0; t < ntasks; t++) fn(arg, t, 0);
        return;
    }
    /* No worker is inside (the previous run waited for them), so the job
     * fields are ours to write; publishing gen releases them. */
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    uint64_t g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    publish(p, g, ntasks - 1);
    drain(p, fn, arg, ntasks, 0);
    atomic_store(&p->gen, g + 1);   /* close: late workers stay out */
    wait_inside_zero(p);
}
