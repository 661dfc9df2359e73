/*
 * The stack the passes and the executors run on (driver.h run_deep).
 *
 * The passes (sharing recovery, the verifier, the optimiser, the code
 * generator, the executors) recurse along a program's nesting, which the
 * user controls: up to sharing recovery's limit of AX_DEPTH_LIMIT levels.  The
 * stack that takes depends on the thread, which the user controls too (a
 * thread with a 1 MiB stack overflowed in the verifier at about 2,300
 * chained maps).  So the driver finds the program's depth first (without
 * recursion, ir_depth) and runs each deep phase where the stack has room
 * for it: on the calling thread when its stack has room, else on a helper
 * thread whose stack is sized for it, the caller waiting.
 *
 * The bytes per level of the source graph are measured: over fourteen
 * shapes of nesting (maps, scalar chains, conds, tuples, shared lets,
 * backpermutes, zipWiths, scans, aconds, stencils, permutes, filters,
 * awhiles, generates reading the previous array), both backends and the
 * switches, the most was 724 bytes a level (1,367 in the ASan build at
 * -O0); tests/test_reliability.c checks that the shapes stay within half
 * of STACK_PER_LEVEL.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "driver_int.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define STACK_PER_LEVEL ((int64_t)8192)
#else
#define STACK_PER_LEVEL ((int64_t)4096)
#endif
/* What any phase needs besides the nesting (buffers of the JIT and the
 * code generator, the C library). */
#define STACK_BASE ((int64_t)256 << 10)
/* Below this a phase runs where it is called without asking the thread
 * (asking reads /proc/self/maps on the main thread): every thread has
 * this much (glibc's smallest default is 8 MiB). */
#define STACK_ASSUMED ((int64_t)512 << 10)

int64_t stack_need(int64_t depth) { return STACK_BASE + (depth > 0 ? depth : 0) * STACK_PER_LEVEL; }

/* The calling thread's stack as pthread_getattr_np gave it, asked once a
 * thread.  On the main thread glibc answers by reading /proc/self/maps,
 * whose cost grows with the process's mappings (MPICH's among them), and
 * every compile and every run of a program nested more than a few dozen
 * levels asked: a visible part of a small run of fluid (AXLE_DEBUG=timing
 * on `axle run fluid --size 16 --runs 20`, with and without MPI loaded,
 * measures it).  A thread's stack does not move, so the answer
 * is kept in thread-local storage, the thread's own and gone with it: no
 * state is shared between threads or contexts.  A caller whose stack
 * pointer is outside it (a coroutine on a stack of its own) gets -1,
 * unknown, as it did before, and so a helper thread. */
typedef struct ThreadStack {
    uintptr_t base;           /* lowest address */
    size_t size;
    bool known;
} ThreadStack;
static _Thread_local ThreadStack thread_stack;

/* Bytes left on the calling thread's stack, or -1 if unknown. */
static int64_t stack_room(void)
{
    ThreadStack *ts = &thread_stack;
    if (!ts->known) {
        pthread_attr_t at;
        void *lo;
        size_t size;
        if (pthread_getattr_np(pthread_self(), &at)) return -1;
        int e = pthread_attr_getstack(&at, &lo, &size);
        pthread_attr_destroy(&at);
        if (e) return -1;
        ts->base = (uintptr_t)lo;
        ts->size = size;
        ts->known = true;
    }
    char here;
    uintptr_t sp = (uintptr_t)&here;
    return sp > ts->base && sp - ts->base <= ts->size ? (int64_t)(sp - ts->base) : -1;
}

typedef struct Deep {
    void (*fn)(void *);
    void *arg;
    AxFaults *faults;       /* the caller's fault injector (fault.h), carried over */
    ax_ctx *cx;             /* the context, lent to the helper (ctx_lend) */
} Deep;

static void *deep_main(void *p)
{
    Deep *d = p;
    ax__faults_install(d->faults);
    uintptr_t owner = ctx_lend(d->cx);
    d->fn(d->arg);
    ctx_unlend(d->cx, owner);
    return NULL;
}

bool stack_fits(int64_t depth)
{
    int64_t need = stack_need(depth);
    return need <= STACK_ASSUMED || stack_room() >= need + STACK_BASE;
}

int run_deep(ax_ctx *cx, int64_t depth, const char *what, void (*fn)(void *), void *arg)
{
    int64_t need = stack_need(depth);
    if (stack_fits(depth)) {
        fn(arg);
        return 0;
    }
    Deep d = {fn, arg, ax__faults_tls, cx};
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), sz = ((size_t)need + pg - 1) / pg * pg;
    pthread_attr_t at;
    pthread_t t;
    int e = pthread_attr_init(&at);
    if (!e) e = pthread_attr_setstacksize(&at, sz);
    if (!e) e = fault_hit(AX_FAULT_THREAD) ? EAGAIN : pthread_create(&t, &at, deep_main, &d);
    pthread_attr_destroy(&at);
    if (e) {
        ctx_error(cx, AX_ERR_NOMEM, "%s: cannot start a thread with a %lld KiB stack for a program nested %lld "
                  "levels deep: %s", what, (long long)(sz >> 10), (long long)depth, strerror(e));
        return -1;
    }
    pthread_join(t, NULL);
    return 0;
}
