/*
 * What the PolyBench/C 4.2.1 programs in axle (examples/polybench) share:
 * one kind of state (the kernel's sizes, its input arrays, the shapes of
 * its results, the plain-C reference and the last baseline's results),
 * the checks against the reference and the baselines, and the teardown.
 * The helpers live in examples/polybench/polybench.c.
 *
 * Tolerances: a result element got is accepted against want when
 *   |got - want| <= tol * (|want| + max |want| over the whole array),
 * (or both are NaN, or equal).  The second term lets an element that is a
 * sum with cancellation (a centred column, a stencil near zero) carry the
 * error of the array's larger elements; a wrong element is wrong by far
 * more.  Integer results (floyd-warshall) are compared exactly (tol 0).
 * Against a baseline the bound is doubled: both sides round.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_POLYBENCH_H
#define AX_POLYBENCH_H
#include "programs.h"
#include "polybench/baselines.h"
#include <stdbool.h>
#include <stddef.h>

#define PB_MAXBUF 8

/* The shape of one result (rank 1 to 3) and one of its buffers. */
typedef struct pb_shape {
    int rank;
    int64_t ext[3];
} pb_shape;

typedef struct pb_state pb_state;
struct pb_state {
    const char *name;
    ax_scalar elem;              /* AX_F64, or AX_I32 (floyd-warshall) */
    int64_t n;                   /* the size parameter: the suite's first dimension */
    int64_t d[4];                /* the kernel's other sizes (each program says which) */
    double alpha, beta;          /* the BLAS kernels' scalars */
    double tol;                  /* see the header comment */
    int nin, nout;
    ax_array *in[PB_MAXBUF];     /* the inputs, owned by axle, filled by setup */
    void *data[PB_MAXBUF];       /* their buffers, taken once: ax_array_data would mark a
                                    GPU copy out of date at every baseline run */
    pb_shape out[PB_MAXBUF];     /* the results' shapes */
    void *ref[PB_MAXBUF];        /* the plain-C reference (made on first check) */
    void *bl[PB_MAXBUF];         /* the last baseline's results */
    void *work[PB_MAXBUF];       /* the baselines' scratch arrays */
    int nwork;
    bool have_ref;
    /* Computes the reference into ref[] (the suite's loops, in double). */
    void (*reference)(pb_state *s);
};

/* A new state (NULL if out of memory). */
pb_state *pb_new(const char *name, ax_scalar elem, int64_t n, double tol);
/* Adds an input of the given rank and extents (unused extents 0): a new
 * zeroed array of s->elem; returns its buffer to fill, or NULL (then the
 * caller tears s down).  An empty array's buffer may be any pointer. */
void *pb_input(pb_state *s, ax_ctx *cx, int rank, int64_t e0, int64_t e1, int64_t e2);
/* Declares the next result (its reference and baseline buffers); 0 or -1. */
int pb_output(pb_state *s, int rank, int64_t e0, int64_t e1, int64_t e2);
/* A scratch buffer of count elements for the baselines (freed by
 * pb_teardown), or NULL. */
void *pb_scratch(pb_state *s, int64_t count);
/* The input k as a computation. */
ax_acc pb_use(ax_ctx *cx, const pb_state *s, int k);
/* The buffer of input k (for the reference and the baselines). */
void *pb_in(const pb_state *s, int k);
/* A derived extent: n * num / den rounded to the nearest integer (the
 * ratio of two dimensions of the suite's LARGE dataset). */
int64_t pb_dim(int64_t n, int64_t num, int64_t den);

/* The ex_program hooks every kernel shares. */
void pb_teardown(void *st);
int pb_check(void *st, ax_array *const *res, int nres, char *msg, size_t size);
int pb_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size);

/* Shared building blocks of the stencils: a rank-0 i32 counter as the
 * awhile loop's state, and the step count as data (a unit array, so that
 * another count does not compile the program anew). */
ax_acc pb_count_below(ax_acc t, ax_acc steps);   /* t < steps, rank-0 bool */
ax_acc pb_succ(ax_acc t);                         /* t + 1 */
/* The suite's stencils update the interior only: an ax_stencil_ix (one
 * pass) whose element is f of the neighbourhood of `from` inside (every
 * index 1 .. extent-2 in each dimension), and edge's element on the edges
 * (clamped reads; the edges' neighbourhoods are not used). */
ax_acc pb_interior_stencil(ax_fnv f, const int *size, ax_acc edge, ax_acc from);
#endif
