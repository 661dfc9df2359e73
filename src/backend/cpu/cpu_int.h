/*
 * The CPU backend's host side, its shared declarations (private to
 * src/backend/cpu): the per-context and per-program state and what the
 * backend's three host files call in each other.
 *
 *   cpu.c     the Backend: the context's compiler, pool and machine
 *             probes, prepare (generate, compile or find, look up) and run
 *   stored.c  compiled programs stored in the disk cache (Backend.find,
 *             Backend.keep)
 *   exec.c    the executor: each operation's arguments, thunks, results
 *             and kernels, on the thread pool
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_CPU_INT_H
#define AX_CPU_INT_H

#include "cg.h"
#include "runtime/jit.h"
#include "runtime/pool.h"
#include "frontend/frontend.h"
#include <time.h>

enum { CPU_CTX_MAGIC = 0x43505543, CPU_PROG_MAGIC = 0x43505550 };

/* Per context: cx->backend_state[AX_BACKEND_CPU], released by
 * ax_ctx_free (Backend.release, told from a CpuProg by its magic). */
typedef struct CpuCtx {
    int magic;
    Pool *pool;
    Jit *jit;
    int cc_found;             /* -1 not yet looked for */
    bool probed;              /* libmvec looked for */
    unsigned simd_mask;
    bool mvec;
    CpuCounters counters;
    bool build_id_done;       /* the build ID of axle's code (program entries) */
    uint8_t build_id[64];
    size_t build_id_len;      /* 0: none */
    struct Blas *blas;        /* the fast modes' BLAS (runtime/blas.h), once loaded */
    bool blas_tried;
} CpuCtx;

/* Per program: the generated program's description and its entry points,
 * released by ax_program_free. */
typedef struct CpuProg {
    int magic;
    CgProg *cg;
    const Program *prog;      /* the program it was made for (load_checked) */
    JitModule **mod;          /* per unit: its module (NULL: a cold unit not
                                 loaded yet; a cold unit's is set by a
                                 program from a file, or by its save) */
    int *bpos;                /* per unit: its place in a batch, -1: its own names */
    AxKernel (*k)[R_NROLE];   /* per node number */
    AxKernel (*chk)[R_NROLE]; /* per node number: its checked copies, loaded
                                 on first need (load_checked) */
    AxThunk **th;             /* per node number: its thunks */
    Liveness *live;           /* liveness_counts of the program (at first run) */
} CpuProg;

static inline double cpu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------- cpu.c */

/* The context's state, made on first use; NULL with an error on cx. */
CpuCtx *cpu_ctx_state(ax_ctx *cx);
/* The context's compiler and cache, and its thread pool, made on first
 * use; NULL with an error on cx. */
Jit *cpu_ctx_jit(ax_ctx *cx, CpuCtx *cc);
/* A Jit with the context's compiler and flags, its disk cache in
 * cache_dir (NULL: the context's); NULL when memory is lacking. */
Jit *cpu_new_jit(ax_ctx *cx, CpuCtx *cc, const char *cache_dir);
/* Gives every unit of pp its text (a program found in the disk cache or
 * read from a file has none): 0, or -1 with a message. */
int cpu_unit_texts(ax_ctx *cx, CpuCtx *cc, CpuProg *pp, char *err, size_t errsize);
Pool *cpu_ctx_pool(ax_ctx *cx, CpuCtx *cc);
/* The generator's options in this context. */
CgConfig cpu_config(ax_ctx *cx, CpuCtx *cc);
/* The CpuProg of g (taken, with mod and bpos: per unit, its module and
 * its place in a batch, -1 when its names are its own): every thunk and
 * kernel looked up.  NULL when memory is lacking or a symbol is missing
 * (the name in what[64]). */
CpuProg *cpu_make_prog(const Program *p, CgProg *g, JitModule **mod, int *bpos, char *what);
void cpu_prog_release(CpuProg *pp);

/* ------------------------------------------------- stored.c */

int cpu_find(ax_ctx *cx, const SrcKey *k, Program **prog, void **state, int64_t nl[3]);
void cpu_keep(ax_ctx *cx, const Program *p, void *state, const SrcKey *k, int64_t nodes, int64_t lets);
int cpu_save(ax_ctx *cx, const Program *p, void *state, struct Bytes *w);
int cpu_load(ax_ctx *cx, Program *p, struct Bytes *in, const BundleLink *link, void **state);
int cpu_export(ax_ctx *cx, const Program *p, void *state, const char *name, struct Bytes *w, struct Bytes *k,
               struct Bytes *c);

/* ------------------------------------------------- exec.c */

/* Runs program p (prepared into pp) into out: Backend.run's contract. */
int cpu_exec(ax_ctx *cx, CpuCtx *cc, CpuProg *pp, Program *p, ax_array **out, int max);

#endif /* AX_CPU_INT_H */
