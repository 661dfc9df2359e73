/*
 * The CPU backend (docs/ARCHITECTURE.md, "The pipeline"), its declarations for the rest of axle.
 *
 * A core program becomes C translation units (the Delite seed: emit a
 * target source language and let its compiler do the low-level work).
 * For each array operation of the program (named by its preorder number,
 * Node.num) they hold
 *   - thunks  axt_<num>_<t>(c, out): the operation's scalar parameters
 *     (shapes, fold's z, boundary constants, slice indices, acond's
 *     condition), evaluated once on the host before the kernels run;
 *   - kernels axk_<num>_<role>(c, start, end): the skeleton's phases
 *     (paper s.4.3), each a function over an index range that the runtime
 *     splits across the thread pool.
 * The host executor (exec.c) walks the array stratum like the interpreter,
 * allocates every array, calls the thunks and runs the kernels.
 *
 *   cpu.c        the Backend (cpu_int.h: the host side's state); stored.c
 *                the compiled programs in the disk cache; exec.c the
 *                executor
 *   codegen.c    the prelude, the units and the driver of the generator
 *   skel.c       the skeletons' common frame and the entry of an
 *                operation; map.c, fold.c, scan.c, permute.c, stencil.c,
 *                filter.c and loop.c one skeleton each (the GPU's files
 *                have the same names: src/backend/gpu; the code both
 *                share is src/backend/cgen)
 *
 * Both sides see one argument block, AxCall: an argument table (for each
 * array of the operation: component buffers, rank, shape, size; its slots
 * as cgen.h lays them out), the scalar parameters, scratch buffers for
 * partial results, the problem size and an error slot.  Its C
 * declaration is written once (AXC_SHARED below), compiled into the host
 * and pasted as text into every generated unit, so the two cannot drift
 * apart.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_CPU_CG_H
#define AX_CPU_CG_H

#include "backend/cgen/cgen.h"

/* ------------------------------------------------- the shared ABI */

/* AxScalar has Scalar's layout (ir.h): integers sign- or zero-extended to
 * 64 bits, f32 in the low bytes.  The literal 8 is AX_MAX_RANK (checked
 * below).  AxErr.code/lock are updated with atomics by the kernels;
 * AxErr.redo asks the host to run a permute over, checked (permute.c). */
#define AXC_SHARED                                                                              \
    typedef union AxScalar { __INT64_TYPE__ i; __UINT64_TYPE__ u; double f64; float f32;       \
                             __UINT8_TYPE__ b; } AxScalar;                                      \
    typedef struct AxArg { void *const *buf; __INT64_TYPE__ size; __INT64_TYPE__ shape[8];      \
                           __INT32_TYPE__ rank; } AxArg;                                        \
    typedef struct AxErr { __INT32_TYPE__ lock, code, site, aux, rank; __INT64_TYPE__ pos;      \
                           __INT64_TYPE__ ix[8], shape[8]; __INT32_TYPE__ redo, need; } AxErr;  \
    typedef struct AxCall { const AxArg *a; const AxScalar *p; void *s1; void *s2;              \
                            __INT64_TYPE__ n, m, chunk, nchunk; AxErr *err;                    \
                            void (*const *chk)(const struct AxCall *, __INT64_TYPE__,          \
                                               __INT64_TYPE__); } AxCall;                       \
    typedef void (*AxKernel)(const AxCall *c, __INT64_TYPE__ start, __INT64_TYPE__ end);       \
    typedef void (*AxThunk)(const AxCall *c, AxScalar *out);

AXC_SHARED

#define AXC_STR_(...) #__VA_ARGS__
#define AXC_STR(x) AXC_STR_(x)

_Static_assert(AX_MAX_RANK == 8, "AXC_SHARED spells AX_MAX_RANK as 8");
_Static_assert(sizeof(AxScalar) == sizeof(Scalar), "AxScalar mirrors Scalar");

/* Options that change the generated text. */
typedef struct CgConfig {
    bool safe;                /* bounds checks on user-computed indices */
    unsigned simd_mask;       /* CG_SIMD_* functions that have vector versions */
    bool finite;              /* ax_options.finite_math: the unit asks for
                                 -funsafe-math-optimizations (emit_prelude) */
    bool fast;                /* fast_math or finite_math: the compiler may
                                 reassociate (fold.c cpu_fold_range) */
} CgConfig;

/* The flags a unit with gathers or maths functions is compiled with
 * (CgUnit.cflags; codegen.c UNIT_CFLAGS says which and why). */
extern const char cg_unit_cflags[];

/* Generates the unit for a verified core program; numbers its array nodes
 * (Node.num).  NULL with a message in err on failure (out of memory, or a
 * program the generator does not understand). */
CgProg *cg_program(const Program *p, const CgConfig *cfg, char *err, size_t errsize);
/* Every unit of g, each under a heading naming the operations that run
 * its code (for dumps): malloc'd, NULL when memory is lacking. */
char *cg_join(const CgProg *g);
/* Units idx[0..n) of g as one translation unit (a batch, for fewer
 * compiler processes than units): one prelude of what they use, then
 * each unit's code with its names axk_u_/axt_u_ made axk_b<i>_/axt_b<i>_
 * (i its place in idx), or axk_<name>_b<i>_/axt_<name>_b<i>_ when name is
 * not NULL (an exported program's, which must not clash with another's).
 * malloc'd, its length in *len; NULL when memory is lacking. */
char *cg_batch(const CgProg *g, const CgConfig *cfg, const int *idx, int n, const char *name, size_t *len);
/* Emits the thunks and kernels of one operation (skel.c). */
void cpu_emit_node(G *g, CgNode *cn);

/* ------------------------------------------------- backend extras */

/* Counters of the context's CPU backend (for tests and traces): programs
 * prepared, compiled by the C compiler, found in a cache. */
typedef struct CpuCounters {
    int64_t prepared, compiled, cached;
    int64_t checked;          /* cold units loaded (checked copies, on first need) */
    int64_t blas;             /* matrix products handed to the BLAS */
    int64_t tiled;            /* matrix products by the register-tiled kernel */
    double last_compile_ms;
} CpuCounters;
bool cpu_counters(ax_ctx *cx, CpuCounters *out);

/* The generated C of a program (for ax_dump's "c" stage): a malloc'd
 * string, or NULL with an error on cx. */
char *cpu_c_text(ax_ctx *cx, Program *p);

/* The backend itself (cpu.c). */
extern const Backend backend_cpu;

/* One array operation x run for a walk that is not the CPU backend's own
 * (src/mpi walks the array level itself, binding h's environment, and
 * runs each operation on a backend): h's environment and liveness
 * counters are used as they are; x must be one of the operations of the
 * program whose prepare made state.  0 with host_width(x->type) new
 * references in out, or -1 with an error (exec.c). */
struct Host;
int cpu_run_op(struct Host *h, void *state, const Node *x, ax_array **out);

#endif /* AX_CPU_CG_H */
