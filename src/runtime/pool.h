/*
 * A thread pool for data-parallel kernels (docs/ARCHITECTURE.md, "The
 * pipeline": run).
 * The CPU backend splits a kernel's index range into tasks and hands them
 * to pool_run; the calling thread works too, as worker 0.
 *
 * A Pool is used by one thread at a time (the thread that runs its
 * context); two Pools may run in two threads at once.  A task function
 * must not call pool_run on the pool that is running it.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_POOL_H
#define AX_POOL_H

#include <stdint.h>

typedef struct Pool Pool;

/* One task: `task` in [0, ntasks), `worker` in [0, pool_threads(p)) names
 * the thread running it (for per-thread scratch space or partial results);
 * a worker id is never used by two tasks at the same time. */
typedef void (*PoolTask)(void *arg, int64_t task, int worker);

/* nthreads counts every thread, the caller included: nthreads-1 workers
 * are started.  nthreads <= 1 makes a pool with no workers whose pool_run
 * runs everything in the caller.  NULL if threads or memory are lacking. */
Pool *pool_new(int nthreads);
/* Stops and joins the workers.  NULL is ignored. */
void pool_free(Pool *p);
/* The thread count, the caller included (>= 1). */
int pool_threads(const Pool *p);
/* Runs fn(arg, t, worker) once for every t in [0, ntasks) and returns when
 * all have finished; their effects are then visible to the caller.  Tasks
 * are claimed dynamically, so uneven tasks balance.  ntasks <= 0 returns at
 * once; ntasks == 1 (or a pool without workers, or p == NULL) runs in the
 * calling thread without waking anyone. */
void pool_run(Pool *p, PoolTask fn, void *arg, int64_t ntasks);

#endif
