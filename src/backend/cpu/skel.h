/*
 * The CPU's skeletons, their shared declarations (skel.c is the common
 * frame; map.c, fold.c, scan.c, permute.c, stencil.c, filter.c and loop.c
 * one skeleton each, as in src/backend/gpu).  Private to the CPU backend's
 * code generator.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_CPU_SKEL_H
#define AX_CPU_SKEL_H

#include "cg.h"

/* ------------------------------------------------- the kernel frame (skel.c) */

/* Opens kernel axk_<num>_<role> (its arguments from slot `first` on,
 * outputs if asked, hoisted into typed locals; G.fact and pre_ reset);
 * its body follows, then cpu_kernel_end puts the pre_ condition and the
 * deferred-check flag in front of it and closes it. */
void cpu_kernel_begin(G *g, CgRole r, int first, bool outputs);
void cpu_kernel_end(G *g);
/* Pointers to the leaves of c->m partial results of type elt in scratch
 * area `area` (c->s1 or c->s2), laid out as cg_scratch_bytes says. */
Val cpu_scratch(G *g, const Type *elt, const char *area);

/* The element code of a loop over positions: index ix (its leaves) and
 * linear position pos. */
typedef void (*CpuElemFn)(G *g, void *env, Val ix, const char *pos);
/* Before the loop over a row segment, positions j0 + [0, m) of the row
 * whose outer index is outer (the segment's first linear position pos):
 * emits what the row's elements share, and returns a condition under
 * which the element code may take the row's test as passed (G.row_ok),
 * or NULL. */
typedef const char *(*CpuRowFn)(G *g, void *env, Val outer, const char *j0, const char *m, const char *pos);
/* Positions [start, end) of the shape of `slot` (rank r), row-major, the
 * innermost dimension a plain counted loop (in lane blocks when G.nlane);
 * row, when given, at each row segment's head: when it returns a
 * condition, the segment's loop is emitted twice, with G.row_ok for when
 * it holds and without for when it does not. */
void cpu_loop_ix(G *g, int slot, int r, CpuElemFn f, CpuRowFn row, void *env);
/* Positions [start, end), linear. */
void cpu_loop_lin(G *g, CpuElemFn f, void *env);

/* ------------------------------------------------- rows (fold.c; scan.c, loop.c) */

/* Accumulators of the lane-parallel reduction loop for elements of type elt. */
int cpu_lanes(const Type *elt);
/* Writes a statement that keeps the loop it is in as written: not
 * vectorised, and not unrolled and jammed with the loop around it (see
 * fold.c; for loops whose transformation costs compile time only). */
int cpu_mid_lanes(const Type *elt);
void cpu_keep_loop(G *g);
void cpu_no_peel(G *g);

/* (A row skeleton reads operand 0 through cgen's CgRowRead.) */
/* Folds positions [lo, hi) of operand 0 with f into fresh locals (see
 * fold.c; one_row: the operation has a single row). */
Val cpu_fold_range(G *g, const Node *f, const Type *elt, const char *lo, const char *hi, bool comm,
                   bool one_row, const CgRowRead *rr);
/* The fold's or scan's z, of type elt (its thunk's parameters). */
Val cpu_zval(G *g, const Type *elt);
/* Opens the part kernel of a fold or scan and its task loop: task t is
 * chunk k of row `row`, positions [lo, hi); *q the partials in scratch. */
CgRowRead cpu_part_begin(G *g, const Type *elt, Val *q);
/* A commutative primitive (cg_comm_op) on two values of scalar type s, and
 * its identity, as C expressions; NULL for another primitive. */
const char *cpu_leaf_op(G *g, Prim op, ax_scalar s, const char *a, const char *b);
const char *cpu_leaf_identity(G *g, Prim op, ax_scalar s);

/* ------------------------------------------------- the skeletons */

void cpu_emit_producer(G *g, CgRole role);   /* map.c */
void cpu_emit_fold(G *g);                    /* fold.c */
void cpu_emit_foldseg(G *g);                 /* fold.c */
void cpu_emit_scan(G *g);                    /* scan.c */
void cpu_emit_permute(G *g);                 /* permute.c */
void cpu_emit_stencil(G *g);                 /* stencil.c */
void cpu_emit_filter(G *g);                  /* filter.c */
void cpu_emit_loop(G *g);                    /* loop.c */

#endif /* AX_CPU_SKEL_H */
