/*
 * The GPU's skeletons, their common frame.  Every array operation's
 * kernels are a skeleton with holes for the scalar code (paper s.4.3: a
 * skeleton per collective operation; the algorithms follow
 * accelerate-llvm-ptx and CUB where they apply), one file each, with the
 * same names as the CPU's (src/backend/cpu): map.c (the producers),
 * fold.c (and the segmented folds), scan.c, permute.c, stencil.c,
 * filter.c, loop.c and sort.c (the CPU sorts in its executor,
 * runtime/sort.c).  The element code comes from the shared generator
 * (src/backend/cgen) in the GPU dialect; these files write the parallel
 * structure around it, and this one what they all share: the kernel's
 * head, shared memory, scratch areas, the grid-stride loop, the row reads
 * of the reductions, and the entry that emits one operation's kernels.
 *
 * Every kernel runs on groups of AX_WG threads and loops over its work
 * (grid-stride), so the host may launch fewer groups than work items.
 * Loops that contain barriers are uniform over the group: their bounds
 * depend only on the group's id and the launch's counts, never on a
 * thread's data (OpenCL requires it, CUDA deadlocks without it).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

/* ------------------------------------------------------------ helpers */

void gpu_kernel_begin(G *g, CgRole r)
{
    CgNode *cn = (CgNode *)g->cn;
    cn->role[r] = true;
    g->role = r;
    cg_line(g, "AX_KERNEL axk_%d_%s(%s)", cn->x->num, cg_role_name[r], gpu_param_list(g, cn));
    cg_line(g, "{");
    cg_open(g);
}

/* Shared arrays (one element per thread) for a value of type t: the
 * names, declared here at the kernel's top (OpenCL allows __local
 * variables nowhere else). */
Val gpu_shared(G *g, const Type *t, const char *prefix)
{
    Val v = cg_val(g, t->width);
    for (int l = 0; l < v.n; l++) {
        v.v[l] = cg_fresh(g, prefix);
        cg_line(g, "AX_SHARED %s %s[AX_WG];", cg_ctype(ty_leaf(t, l)), v.v[l]);
    }
    return v;
}

/* A copy of v in fresh locals (a value read from shared or global memory
 * that the next statements overwrite). */
Val gpu_snap(G *g, const Type *t, Val v) { return cg_bind(g, t, v, "v"); }

/* Pointers to the leaves of partial results in scratch area `area` (s1_
 * or s2_), m of them, each leaf 64-byte aligned (cg_scratch_bytes: the
 * host sizes the area the same way). */
Val gpu_scratch(G *g, const Type *elt, const char *area, const char *m)
{
    Val v = cg_val(g, elt->width);
    const char *off = cg_fresh(g, "so");
    cg_line(g, "i64 %s = 0;", off);
    for (int l = 0; l < v.n; l++) {
        const char *T = cg_ctype(ty_leaf(elt, l));
        v.v[l] = cg_fresh(g, "q");
        cg_line(g, "AX_G %s *%s = (AX_G %s *)(%s + %s);", T, v.v[l], T, area, off);
        cg_line(g, "%s += ((%s * (i64)sizeof(%s) + 63) & ~(i64)63);", off, m, T);
    }
    return v;
}

/* for (i = first thread; i < count; i += all threads) */
void gpu_grid_loop(G *g, const char *i, const char *count)
{
    cg_line(g, "for (i64 %s = ax_grp * AX_WG + ax_lid; %s < %s; %s += ax_ngrp * AX_WG) {", i, i, count, i);
    cg_open(g);
}

/* The index of row-major position lin in the shape of slot (rank r). */
Val gpu_index_of(G *g, int slot, int r, const char *lin)
{
    Val ix = cg_val(g, r);
    if (r == 0) return ix;
    const char *q = cg_fresh(g, "q");
    cg_line(g, "i64 %s = %s;", q, lin);
    for (int d = r - 1; d >= 1; d--) {
        ix.v[d] = cg_fresh(g, "x");
        cg_line(g, "const i64 %s = %s %% s%d_%d;", ix.v[d], q, slot, d);
        cg_line(g, "%s /= s%d_%d;", q, slot, d);
    }
    ix.v[0] = cg_local(g, AX_I64, q);
    return ix;
}

Val gpu_zval(G *g, const Type *elt) { return cg_param(g, g->cn->kid_thunk[1], elt); }

/* acc = have ? f(acc, v) : v; have = 1 */
void gpu_accumulate(G *g, const Node *f, const Type *elt, Val acc, const char *have, Val v)
{
    cg_line(g, "if (%s) {", have);
    cg_open(g);
    cg_update(g, elt, acc, cg_apply2(g, f, acc, v));
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    cg_assign(g, acc, v);
    cg_close(g);
    cg_line(g, "%s = 1;", have);
}

/* ------------------------------------------------------------ entry */

static const CgSkeletons gpu_skeletons = {
    .producer = gpu_emit_producer,
    .fold = gpu_emit_fold,
    .foldseg = gpu_emit_foldseg,
    .scan = gpu_emit_scan,
    .permute = gpu_emit_permute,
    .stencil = gpu_emit_stencil,
    .filter = gpu_emit_filter,
    .loop = gpu_emit_loop,
    .sort = gpu_emit_sort,
};

void gpu_emit_node(G *g, CgNode *cn)
{
    const Node *x = cn->x;
    buf_printf(g->b, "\n/* %d: %s */\n", x->num, op_name(x->op));
    cg_emit_skeleton(g, &gpu_skeletons);
}
