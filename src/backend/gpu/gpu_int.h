/*
 * The GPU backends' host side, its shared declarations (private to
 * src/backend/gpu): the per-context and per-program state and what the
 * three host files call in each other.
 *
 *   gpu.c     the Backend functions both device APIs share: prepare (the
 *             kernel text, built by the device API), run, release,
 *             counters
 *   device.c  the context's device: its buffers (a pool per context),
 *             uploads and downloads, the fault word
 *   exec.c    the executor: each operation's parameters, results and
 *             kernel launches
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_GPU_INT_H
#define AX_GPU_INT_H

#include "gpu.h"
#include "runtime/pool.h"
#include "runtime/host.h"
#include "runtime/array.h"
#include <time.h>

enum { GPU_CTX_MAGIC = 0x47505543, GPU_PROG_MAGIC = 0x47505550 };

/* A device buffer kept for reuse. */
typedef struct PoolBuf {
    uint64_t h;
    int64_t bytes;
} PoolBuf;

/* Per context and device API: cx->backend_state[kind], released by
 * ax_ctx_free (gpu_release, told from a GpuProg by its magic). */
typedef struct GpuCtx {
    int magic;
    const GpuBackendDef *def;
    const GpuApi *api;
    void *d;                  /* the device API's state */
    ax_ctx *cx;
    uint64_t errbuf;          /* the fault word (u32) */
    bool faulted;             /* a read of the device found the fault word set */
    int units;                /* the device's compute units */
    bool lookback;            /* single-pass scans (gpu_lookback_wanted) */
    PoolBuf *pool;
    int npool, cappool;
    int64_t pool_bytes;
    DevOps dops;              /* for the arrays' device copies */
    GpuCounters counters;
    Pool *host;               /* threads for the work run on the host (a
                                 sort: exec.c ex_sort), made on first use */
} GpuCtx;

/* Per program: its description, kernels and their arguments. */
typedef struct GpuProg {
    int magic;
    GpuCtx *gc;
    CgProg *cg;
    void *(*k)[R_NROLE];      /* per node number: its kernels */
    GpuArgDesc **args;        /* per node number: its kernels' arguments */
    int *nargs;
    Liveness *live;
} GpuProg;

static inline double gpu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Bytes rounded up to a multiple of 64, at least 64. */
static inline int64_t gpu_round64(int64_t b) { return b <= 0 ? 64 : (b + 63) & ~(int64_t)63; }

/* ------------------------------------------------- device.c */

/* The context's device, opened on first use; NULL with an error on cx. */
GpuCtx *gpu_ctx_state(const GpuBackendDef *def, ax_ctx *cx);
void gpu_ctx_release(GpuCtx *gc);
/* A device buffer of `bytes` (a multiple of 64, at least 64): from the
 * pool, else new; 0 with an error on cx.  gpu_dev_free gives it back. */
uint64_t gpu_dev_alloc(GpuCtx *gc, int64_t bytes);
void gpu_dev_free(GpuCtx *gc, uint64_t h, int64_t bytes);
/* The fault word: 0 when clear, else the first fault's status (and
 * gc->faulted set).  -1 if it cannot be read. */
int gpu_read_fault(GpuCtx *gc);
/* Reads `bytes` of device buffer h into dst, and the fault word after
 * it: nothing computed after a fault is used.  0, or -1 with an error. */
int gpu_download(GpuCtx *gc, ax_ctx *cx, void *dst, uint64_t h, int64_t bytes);
/* Gives a a device copy (uploading its host contents) unless it has a
 * current one here. */
int gpu_to_device(GpuCtx *gc, ax_array *a);
/* A new array whose contents will be made on the device. */
ax_array *gpu_dev_array(GpuCtx *gc, const Type *elt, int rank, const int64_t *shape, const char *what);

/* ------------------------------------------------- exec.c */

/* Runs program p (prepared into gp) into out: Backend.run's contract,
 * or AXB_RERUN_ON_HOST after a fault on the device. */
int gpu_exec(GpuCtx *gc, GpuProg *gp, ax_ctx *cx, Program *p, ax_array **out, int max);

#endif /* AX_GPU_INT_H */
