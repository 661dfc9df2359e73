/* Tests of the thread pool (src/runtime/pool.c).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "harness.h"
#include "runtime/pool.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct Count {
    _Atomic int *hits;        /* per task */
    _Atomic int bad_worker;   /* tasks that saw a worker id out of range */
    _Atomic int *busy;        /* per worker: tasks in flight (must stay <= 1) */
    _Atomic int overlap;
    int threads;
} Count;

static void count_task(void *arg, int64_t t, int w)
{
    Count *c = arg;
    if (w < 0 || w >= c->threads) {
        atomic_fetch_add(&c->bad_worker, 1);
        return;
    }
    if (atomic_fetch_add(&c->busy[w], 1) != 0) atomic_fetch_add(&c->overlap, 1);
    atomic_fetch_add(&c->hits[t], 1);
    atomic_fetch_sub(&c->busy[w], 1);
}

/* Runs ntasks on p and checks each ran exactly once on a valid worker. */
static void check_counts(Pool *p, int64_t ntasks)
{
    Count c = {.threads = pool_threads(p)};
    c.hits = calloc((size_t)(ntasks ? ntasks : 1), sizeof *c.hits);
    c.busy = calloc((size_t)c.threads, sizeof *c.busy);
    if (!c.hits || !c.busy) {
        CHECK(!"out of memory");
        free(c.hits);
        free(c.busy);
        return;
    }
    pool_run(p, count_task, &c, ntasks);
    int64_t wrong = 0;
    for (int64_t t = 0; t < ntasks; t++) wrong += atomic_load(&c.hits[t]) != 1;
    CHECKF(wrong == 0, "%lld of %lld tasks did not run exactly once (threads %d)",
           (long long)wrong, (long long)ntasks, c.threads);
    CHECK_EQ_I(atomic_load(&c.bad_worker), 0);
    CHECK_EQ_I(atomic_load(&c.overlap), 0);
    free(c.hits);
    free(c.busy);
}

TEST(pool_every_task_once)
{
    static const int threads[] = {1, 2, 3, 8};
    static const int64_t sizes[] = {0, 1, 2, 7, 1000, 100000};
    for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
        Pool *p = pool_new(threads[i]);
        REQUIRE(p);
        CHECK_EQ_I(pool_threads(p), threads[i]);
        for (int rep = 0; rep < 3; rep++)
            for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) check_counts(p, sizes[k]);
        pool_free(p);
    }
}

TEST(pool_no_workers)
{
    Pool *p = pool_new(1);
    REQUIRE(p);
    CHECK_EQ_I(pool_threads(p), 1);
    check_counts(p, 100);
    pool_free(p);
    Pool *q = pool_new(0);   /* clamped to 1 */
    REQUIRE(q);
    CHECK_EQ_I(pool_threads(q), 1);
    check_counts(q, 5);
    pool_free(q);
    pool_free(NULL);
    /* A NULL pool runs in the caller (the backend's serial fallback). */
    check_counts(NULL, 7);
}

/* ntasks == 1 runs inline: on the calling thread, as worker 0. */
typedef struct { pthread_t caller; int same, worker; } Inline;
static void inline_task(void *arg, int64_t t, int w)
{
    Inline *in = arg;
    in->same = pthread_equal(pthread_self(), in->caller);
    in->worker = w;
}

TEST(pool_single_task_inline)
{
    Pool *p = pool_new(4);
    REQUIRE(p);
    Inline in = {.caller = pthread_self(), .worker = -1};
    pool_run(p, inline_task, &in, 1);
    CHECK(in.same);
    CHECK_EQ_I(in.worker, 0);
    pool_free(p);
}

/* Plain (non-atomic) writes by the tasks must be visible after pool_run:
 * under ThreadSanitizer this checks the happens-before edges. */
typedef struct { int64_t *out; } Plain;
static void plain_task(void *arg, int64_t t, int w)
{
    Plain *pl = arg;
    pl->out[t] = t * 3 + 1;
}

TEST(pool_results_visible)
{
    Pool *p = pool_new(4);
    REQUIRE(p);
    enum { N = 4096 };
    int64_t *out = calloc(N, sizeof *out);
    REQUIRE(out);
    Plain pl = {out};
    for (int rep = 0; rep < 200; rep++) {
        int64_t n = 1 + (rep * 37) % N;
        pool_run(p, plain_task, &pl, n);
        int64_t bad = 0;
        for (int64_t t = 0; t < n; t++) bad += out[t] != t * 3 + 1;
        CHECK_EQ_I(bad, 0);
        for (int64_t t = 0; t < n; t++) out[t] = 0;
    }
    free(out);
    pool_free(p);
}

/* Uneven tasks: a slow task must not make the caller return early. */
static void slow_task(void *arg, int64_t t, int w)
{
    _Atomic int *done = arg;
    if (t % 3 == 0) {
        struct timespec ts = {0, 2000000};   /* 2 ms: past the spin budget */
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(done, 1);
}

TEST(pool_slow_tasks)
{
    Pool *p = pool_new(3);
    REQUIRE(p);
    for (int rep = 0; rep < 5; rep++) {
        _Atomic int done = 0;
        pool_run(p, slow_task, &done, 10);
        CHECK_EQ_I(atomic_load(&done), 10);
        /* Let the workers fall asleep so the next run must wake them. */
        struct timespec ts = {0, 3000000};
        nanosleep(&ts, NULL);
    }
    pool_free(p);
}

typedef struct { _Atomic int64_t sum, by_workers; int work; } Sum;
static void tiny_task(void *arg, int64_t t, int w)
{
    Sum *s = arg;
    /* A little work (about work * 10 ns) so that workers get a share. */
    volatile int sink = 0;
    for (int i = 0; i < s->work; i++) sink += i;
    (void)sink;
    atomic_fetch_add_explicit(&s->sum, t + 1, memory_order_relaxed);
    if (w) atomic_fetch_add_explicit(&s->by_workers, 1, memory_order_relaxed);
}

TEST(pool_many_tiny_runs)
{
    static const int threads[] = {2, 4, 8};
    for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
        Pool *p = pool_new(threads[i]);
        REQUIRE(p);
        enum { RUNS = 10000, TASKS = 8 };
        for (int work = 0; work <= 100; work += 100) {
            Sum s = {.work = work};
            pool_run(p, tiny_task, &s, TASKS);   /* warm up */
            atomic_store(&s.sum, 0);
            atomic_store(&s.by_workers, 0);
            double t0 = now_s();
            for (int r = 0; r < RUNS; r++) pool_run(p, tiny_task, &s, TASKS);
            double dt = now_s() - t0;
            CHECK_EQ_I(atomic_load(&s.sum), (int64_t)RUNS * TASKS * (TASKS + 1) / 2);
            /* Information, not an assertion: timings depend on the machine. */
            fprintf(stderr, "  pool: %d threads, %d runs of %d tasks of %d loop steps: "
                    "%.2f us per run, %.0f%% of tasks run by workers\n",
                    threads[i], RUNS, TASKS, work, dt / RUNS * 1e6,
                    100.0 * atomic_load(&s.by_workers) / ((double)RUNS * TASKS));
        }
        pool_free(p);
    }
}

/* Two pools driven from two threads at once. */
typedef struct { Pool *p; int64_t sum; int ok; } Driver;
static void *drive(void *arg)
{
    Driver *d = arg;
    d->ok = 1;
    for (int r = 0; r < 2000; r++) {
        int64_t n = 1 + r % 50;
        Sum s = {.work = r % 7};
        pool_run(d->p, tiny_task, &s, n);
        if (atomic_load(&s.sum) != n * (n + 1) / 2) d->ok = 0;
        d->sum += atomic_load(&s.sum);
    }
    return NULL;
}

TEST(pool_two_pools_two_threads)
{
    Driver a = {.p = pool_new(3)}, b = {.p = pool_new(2)};
    REQUIRE(a.p && b.p);
    pthread_t ta, tb;
    REQUIRE(pthread_create(&ta, NULL, drive, &a) == 0);
    REQUIRE(pthread_create(&tb, NULL, drive, &b) == 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.ok);
    CHECK(b.ok);
    CHECK_EQ_I(a.sum, b.sum);
    pool_free(a.p);
    pool_free(b.p);
}

/* Pools made and freed repeatedly, some never used, some freed while the
 * workers are still spinning or already asleep. */
TEST(pool_create_free_churn)
{
    for (int r = 0; r < 50; r++) {
        Pool *p = pool_new(1 + r % 5);
        REQUIRE(p);
        if (r % 3) check_counts(p, r);
        pool_free(p);
    }
}
