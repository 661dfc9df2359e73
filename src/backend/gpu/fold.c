/*
 * The GPU's reductions: fold and fold1, the segmented folds, and the team
 * reduction the scans' chunk totals use too.  They run in teams of w_
 * threads (a power of two up to AX_WG, chosen by the host from the row
 * length: a warp or a block per row, or one thread per row for short
 * rows), AX_WG / w_ teams per group.  Each team reduces one task (a row, a
 * chunk of a row, a segment): an operator that is commutative as well as
 * associative (cg_lam_comm) lets thread l take the elements l, l + w, ...
 * (coalesced loads); any other keeps the order: thread l takes the l-th
 * contiguous part.  The team's values then meet in a tree that always
 * combines a left neighbour with its right one, so a non-commutative
 * operator stays correct (CUB's Reduce is not).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

/* The team reduction kernel (see the top): fold's part (the row's result
 * when a row is one chunk, else the chunk's partial), a scan's chunk
 * totals, or a segmented fold's segments. */
void gpu_team_reduce(G *g, GpuRedKind kind)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = kind == GPU_RED_SCAN && (x->op == OP_SCANLEX || x->op == OP_SCANREX) ? x->type->elts[0]->elt
                                                                                      : x->type->elt;
    bool z = cg_has_z(x->op);
    gpu_kernel_begin(g, kind == GPU_RED_SEG ? R_SEG : R_PART);
    Val sh = gpu_shared(g, elt, "sh");
    cg_line(g, "AX_SHARED u8 hv_[AX_WG];");
    cg_line(g, "const i64 W = w_, TPG = AX_WG / W, team = ax_lid / W, lane = ax_lid %% W;");
    Val q = cg_val(g, 0);
    if (kind != GPU_RED_SEG) q = gpu_scratch(g, elt, "s1_", "m_");
    else cg_line(g, "AX_G const i64 *off = (AX_G const i64 *)s1_;");
    cg_line(g, "for (i64 base = ax_grp * TPG; base < m_; base += ax_ngrp * TPG) {");
    cg_open(g);
    cg_line(g, "const i64 t = base + team;");
    cg_line(g, "const int live = t < m_;");
    cg_line(g, "const i64 row = live ? t / nch_ : 0, k = live ? t %% nch_ : 0;");
    if (kind == GPU_RED_SEG) cg_line(g, "const i64 lo = row * n_ + (live ? off[k] : 0), hi = live ? row * n_ + off[k + 1] : lo;");
    else cg_line(g, "const i64 lo = row * n_ + k * ch_, hi = live ? ax_min64(lo + ch_, row * n_ + n_) : lo;");
    CgRowRead rr = cg_row_read(g, "row", "row * n_", false);
    Val acc = cg_decl(g, elt, "y");
    cg_line(g, "int have = 0;");
    if (cn->comm) {
        cg_line(g, "for (i64 j = lo + lane; j < hi; j += W) {");
    } else {
        cg_line(g, "const i64 per = (hi - lo + W - 1) / W, la = ax_min64(lo + lane * per, hi), lb = ax_min64(la + per, hi);");
        cg_line(g, "for (i64 j = la; j < lb; j++) {");
    }
    cg_open(g);
    g->pos = "j";
    gpu_accumulate(g, f, elt, acc, "have", cg_read_row(g, &rr, "j"));
    cg_close(g);
    /* The tree: a left neighbour with its right one.  On CUDA a team of a
     * warp or more does its first five levels within each warp by
     * shuffles (no shared memory, no barrier), the rest in shared memory
     * from level 32 on.  All lanes of a warp take part (W is a multiple
     * of the warp's width there, and lanes without a task carry
     * have = 0). */
    cg_line(g, "i64 s0 = 1;");
    cg_line(g, "#if AX_FAST");
    cg_line(g, "if (W >= 32) {");
    cg_open(g);
    cg_line(g, "for (int s = 1; s < 32; s <<= 1) {");
    cg_open(g);
    Val o = cg_val(g, elt->width);
    for (int l = 0; l < o.n; l++)
        o.v[l] = cg_local(g, ty_leaf(elt, l), cg_fmt(g, "ax_shfl_%s(%s, s)", cg_ctype(ty_leaf(elt, l)), acc.v[l]));
    const char *oh = cg_local(g, AX_I32, "ax_shfl_i32(have, s)");
    cg_line(g, "if ((lane & (2 * s - 1)) == 0 && %s) {", oh);
    cg_open(g);
    gpu_accumulate(g, f, elt, acc, "have", o);
    cg_close(g);
    cg_close(g);
    cg_line(g, "s0 = 32;");
    cg_close(g);
    cg_line(g, "#endif");
    cg_put(g, sh, "ax_lid", acc);
    cg_line(g, "hv_[ax_lid] = (u8)have;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = s0; s < W; s <<= 1) {");
    cg_open(g);
    cg_line(g, "if ((lane & (2 * s - 1)) == 0 && lane + s < W && hv_[ax_lid + s]) {");
    cg_open(g);
    Val a = gpu_snap(g, elt, cg_at(g, sh, "ax_lid")), b = gpu_snap(g, elt, cg_at(g, sh, "ax_lid + s"));
    cg_line(g, "if (hv_[ax_lid]) {");
    cg_open(g);
    cg_put(g, sh, "ax_lid", cg_apply2(g, f, a, b));
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    cg_put(g, sh, "ax_lid", b);
    cg_close(g);
    cg_line(g, "hv_[ax_lid] = 1;");
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_line(g, "if (live && lane == 0) {");
    cg_open(g);
    Val res = gpu_snap(g, elt, cg_at(g, sh, "ax_lid"));
    if (kind == GPU_RED_SCAN) {
        cg_put(g, q, "t", res);
    } else {
        Val y = cg_decl(g, elt, "r");
        if (z) {
            cg_assign(g, y, gpu_zval(g, elt));
            cg_line(g, "if (hv_[ax_lid]) {");
            cg_open(g);
            cg_update(g, elt, y, cg_apply2(g, f, gpu_zval(g, elt), res));
            cg_close(g);
        } else {
            cg_assign(g, y, res);
        }
        if (kind == GPU_RED_SEG) {
            cg_store(g, 0, elt, "t", y);
        } else {
            /* with z, a chunk's partial is its own fold (comb adds z) */
            cg_line(g, "if (nch_ == 1) {");
            cg_open(g);
            cg_store(g, 0, elt, "row", y);
            g->ind--;
            cg_line(g, "} else {");
            cg_open(g);
            cg_put(g, q, "t", res);
            cg_close(g);
        }
    }
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_close(g);
}

/* fold's comb: per row, z and the partials in chunk order (no chunks at
 * all, an empty row: z). */
static void emit_fold_comb(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = x->type->elt;
    bool z = cg_has_z(x->op);
    gpu_kernel_begin(g, R_COMB);
    Val q = gpu_scratch(g, elt, "s1_", "m_");
    gpu_grid_loop(g, "r", "n0");
    Val acc = cg_decl(g, elt, "y");
    cg_assign(g, acc, z ? gpu_zval(g, elt) : cg_at(g, q, "r * nch_"));
    cg_line(g, "for (i64 k = %d; k < nch_; k++) {", z ? 0 : 1);
    cg_open(g);
    cg_update(g, elt, acc, cg_apply2(g, f, acc, cg_at(g, q, "r * nch_ + k")));
    cg_close(g);
    cg_store(g, 0, elt, "r", acc);
    cg_close(g);
    cg_close(g);
}

void gpu_emit_fold(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    cn->comm = cg_lam_comm(cn->x->kid[0], NULL);
    cn->scratch_leaves = cn->x->type->elt->width;
    gpu_team_reduce(g, GPU_RED_FOLD);
    emit_fold_comb(g);
}

void gpu_emit_foldseg(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    cn->comm = cg_lam_comm(cn->x->kid[0], NULL);
    gpu_team_reduce(g, GPU_RED_SEG);
    /* mat: a DELAYED segment vector, materialised as i64 for the host */
    if (cg_opd_node(cn, 1)->op == OP_DELAYED) {
        gpu_kernel_begin(g, R_MAT);
        cg_line(g, "AX_G i64 *o = (AX_G i64 *)s2_;");
        gpu_grid_loop(g, "i", cg_fmt(g, "n%d", cg_opd_slot(cn, 1)));
        g->pos = "i";
        Val v = cg_read_lin(g, 1, "i");
        if (v.n == 1) cg_line(g, "o[i] = (i64)%s;", v.v[0]);
        cg_close(g);
        cg_close(g);
    }
}
