/*
 * The GPU's skeletons, their shared declarations (skel.c is the common
 * frame; map.c, fold.c, scan.c, permute.c, stencil.c, filter.c, loop.c and sort.c
 * one skeleton each, as in src/backend/cpu).  Private to the GPU kernel
 * generator.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_GPU_SKEL_H
#define AX_GPU_SKEL_H

#include "gpu.h"

/* ------------------------------------------------- helpers (skel.c) */

/* Opens kernel axk_<num>_<role> with the operation's parameter list. */
void gpu_kernel_begin(G *g, CgRole r);
/* Shared arrays (one element per thread) for a value of type t: the
 * names, declared here at the kernel's top (OpenCL allows __local
 * variables nowhere else). */
Val gpu_shared(G *g, const Type *t, const char *prefix);
/* A copy of v in fresh locals. */
Val gpu_snap(G *g, const Type *t, Val v);
/* Pointers to the leaves of m partial results in scratch area `area`
 * (s1_ or s2_), laid out as cg_scratch_bytes says. */
Val gpu_scratch(G *g, const Type *elt, const char *area, const char *m);
/* for (i = first thread; i < count; i += all threads), left open. */
void gpu_grid_loop(G *g, const char *i, const char *count);
/* The index of row-major position lin in the shape of slot (rank r). */
Val gpu_index_of(G *g, int slot, int r, const char *lin);

/* (A row skeleton reads operand 0 through cgen's CgRowRead.) */
/* The fold's or scan's z, of type elt. */
Val gpu_zval(G *g, const Type *elt);
/* acc = have ? f(acc, v) : v; have = 1 */
void gpu_accumulate(G *g, const Node *f, const Type *elt, Val acc, const char *have, Val v);

/* The team reduction kernel (fold.c): fold's part (the row's result when
 * a row is one chunk, else the chunk's partial), a scan's chunk totals,
 * or a segmented fold's segments. */
typedef enum { GPU_RED_FOLD, GPU_RED_SCAN, GPU_RED_SEG } GpuRedKind;
void gpu_team_reduce(G *g, GpuRedKind kind);

/* ------------------------------------------------- the skeletons */

void gpu_emit_producer(G *g, CgRole role);   /* map.c */
void gpu_emit_fold(G *g);                    /* fold.c */
void gpu_emit_foldseg(G *g);                 /* fold.c */
void gpu_emit_scan(G *g);                    /* scan.c */
void gpu_emit_permute(G *g);                 /* permute.c */
void gpu_emit_stencil(G *g);                 /* stencil.c */
void gpu_emit_filter(G *g);                  /* filter.c */
void gpu_emit_loop(G *g);                    /* loop.c */
void gpu_emit_sort(G *g);                    /* sort.c */

#endif /* AX_GPU_SKEL_H */
