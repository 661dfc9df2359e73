/*
 * The GPU's multi-generator loops (the planner's fused loops, ir.h Loop).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

/* A multi-generator loop (ir.h Loop; cpu/loop.c on the CPU).
 * part: the fold's teams (a task is a chunk of a row; a whole group per
 * chunk when there are filters), each thread taking its elements as the
 * fold's do (in order for a non-commutative operator), the element read
 * once and handed to every generator: collects stored, filters counted,
 * reductions accumulated (a conditional one only where its predicate
 * holds); then one tree per team for the reductions (a left neighbour
 * with its right one, as the fold's) and the filters' counts.  comb: the
 * fold's, per reduction.  scatter: the filter's tiles, a scan of the kept
 * flags per filter. */
void gpu_emit_loop(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x;
    const Loop *lp = x->loop;
    int ng = lp->ngen, nred = 0, nflt = 0;
    const Type **rts = arena_alloc(g->ar, sizeof *rts * (size_t)(ng + 1));
    int *roff = arena_alloc(g->ar, sizeof *roff * (size_t)(ng + 1));
    Val *sh = arena_alloc(g->ar, sizeof *sh * (size_t)(ng + 1));
    if (!rts || !roff || !sh) return cg_fail(g, "gpu codegen: out of memory");
    bool comm = true;
    int w = 0;
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) nflt++;
        if (gn->kind != LOOP_REDUCE) continue;
        rts[nred++] = loop_comp_type(x, gn->comp);
        roff[q] = w;
        w += rts[nred - 1]->width;
        comm = comm && gn->pred < 0 && cg_lam_comm(x->kid[gn->op], NULL);
    }
    const Type *rt = ty_tuple(g->ar, nred, rts);
    if (!rt) return cg_fail(g, "gpu codegen: out of memory");
    cn->comm = comm;
    cn->scratch_leaves = rt->width;

    /* part */
    gpu_kernel_begin(g, R_PART);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_REDUCE) {
            sh[q] = gpu_shared(g, loop_comp_type(x, gn->comp), "sh");
            cg_line(g, "AX_SHARED u8 hv%d_[AX_WG];", q);
        } else if (gn->kind == LOOP_FILTER) {
            cg_line(g, "AX_SHARED i64 shc%d_[AX_WG];", q);
        }
    }
    cg_line(g, "const i64 W = w_, TPG = AX_WG / W, team = ax_lid / W, lane = ax_lid %% W;");
    Val qp = gpu_scratch(g, rt, "s1_", "m_");
    cg_line(g, "AX_G i64 *cnt = (AX_G i64 *)s2_;");
    cg_line(g, "AX_G u8 *hvp = (AX_G u8 *)(cnt + %d * 2 * m_);", ng);
    cg_line(g, "for (i64 base = ax_grp * TPG; base < m_; base += ax_ngrp * TPG) {");
    cg_open(g);
    cg_line(g, "const i64 t = base + team;");
    cg_line(g, "const int live = t < m_;");
    cg_line(g, "const i64 row = live ? t / nch_ : 0, k = live ? t %% nch_ : 0;");
    cg_line(g, "const i64 lo = row * n_ + k * ch_, hi = live ? ax_min64(lo + ch_, row * n_ + n_) : lo;");
    CgRowRead rr = cg_row_read(g, "row", "row * n_", false);
    Val acc = cg_decl(g, rt, "y");
    for (int q = 0; q < ng; q++) {
        if (lp->gen[q].kind == LOOP_REDUCE) cg_line(g, "int have%d = 0;", q);
        if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "i64 c%d = 0;", q);
    }
    if (comm) {
        cg_line(g, "for (i64 j = lo + lane; j < hi; j += W) {");
    } else {
        cg_line(g, "const i64 per = (hi - lo + W - 1) / W, la = ax_min64(lo + lane * per, hi), lb = ax_min64(la + per, hi);");
        cg_line(g, "for (i64 j = la; j < lb; j++) {");
    }
    cg_open(g);
    g->pos = "j";
    Val v = gpu_snap(g, x->kid[0]->type->elt, cg_read_row(g, &rr, "j"));
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        const Type *ct = loop_comp_type(x, gn->comp);
        Val c = cg_loop_comp(g, v, gn->comp);
        if (gn->kind == LOOP_COLLECT) {
            cg_store(g, q, ct, "j", c);
        } else if (gn->kind == LOOP_FILTER) {
            cg_line(g, "c%d += (i64)%s;", q, cg_loop_comp(g, v, gn->pred).v[0]);
        } else {
            if (gn->pred >= 0) {
                cg_line(g, "if (%s) {", cg_loop_comp(g, v, gn->pred).v[0]);
                cg_open(g);
            }
            gpu_accumulate(g, x->kid[gn->op], ct, cg_slice(acc, roff[q], ct->width), cg_fmt(g, "have%d", q), c);
            if (gn->pred >= 0) cg_close(g);
        }
    }
    cg_close(g);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_REDUCE) {
            const Type *ct = loop_comp_type(x, gn->comp);
            cg_put(g, sh[q], "ax_lid", cg_slice(acc, roff[q], ct->width));
            cg_line(g, "hv%d_[ax_lid] = (u8)have%d;", q, q);
        } else if (gn->kind == LOOP_FILTER) {
            cg_line(g, "shc%d_[ax_lid] = c%d;", q, q);
        }
    }
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = 1; s < W; s <<= 1) {");
    cg_open(g);
    cg_line(g, "if ((lane & (2 * s - 1)) == 0 && lane + s < W) {");
    cg_open(g);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) cg_line(g, "shc%d_[ax_lid] += shc%d_[ax_lid + s];", q, q);
        if (gn->kind != LOOP_REDUCE) continue;
        const Type *ct = loop_comp_type(x, gn->comp);
        cg_line(g, "if (hv%d_[ax_lid + s]) {", q);
        cg_open(g);
        Val a = gpu_snap(g, ct, cg_at(g, sh[q], "ax_lid")), b = gpu_snap(g, ct, cg_at(g, sh[q], "ax_lid + s"));
        cg_line(g, "if (hv%d_[ax_lid]) {", q);
        cg_open(g);
        cg_put(g, sh[q], "ax_lid", cg_apply2(g, x->kid[gn->op], a, b));
        g->ind--;
        cg_line(g, "} else {");
        cg_open(g);
        cg_put(g, sh[q], "ax_lid", b);
        cg_close(g);
        cg_line(g, "hv%d_[ax_lid] = 1;", q);
        cg_close(g);
    }
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_line(g, "if (live && lane == 0) {");
    cg_open(g);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) cg_line(g, "cnt[%d * m_ + t] = shc%d_[ax_lid];", q, q);
        if (gn->kind != LOOP_REDUCE) continue;
        const Type *ct = loop_comp_type(x, gn->comp);
        Val res = gpu_snap(g, ct, cg_at(g, sh[q], "ax_lid"));
        cg_line(g, "if (nch_ == 1) {");
        cg_open(g);
        Val y = cg_decl(g, ct, "r");
        if (gn->z >= 0) {
            Val z = cg_param(g, cn->kid_thunk[gn->z], ct);
            cg_assign(g, y, z);
            cg_line(g, "if (hv%d_[ax_lid]) {", q);
            cg_open(g);
            cg_update(g, ct, y, cg_apply2(g, x->kid[gn->op], z, res));
            cg_close(g);
        } else {
            cg_assign(g, y, res);
        }
        cg_store(g, q, ct, "row", y);
        g->ind--;
        cg_line(g, "} else {");
        cg_open(g);
        cg_put(g, cg_slice(qp, roff[q], ct->width), "t", res);
        cg_line(g, "hvp[%d * m_ + t] = hv%d_[ax_lid];", q, q);
        cg_close(g);
    }
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_close(g);

    /* comb */
    if (nred) {
        gpu_kernel_begin(g, R_COMB);
        qp = gpu_scratch(g, rt, "s1_", "m_");
        cg_line(g, "AX_G const u8 *hvp = (AX_G const u8 *)((AX_G const i64 *)s2_ + %d * 2 * m_);", ng);
        gpu_grid_loop(g, "r", "(m_ / (nch_ > 0 ? nch_ : 1))");
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_REDUCE) continue;
            const Type *ct = loop_comp_type(x, gn->comp);
            Val part = cg_slice(qp, roff[q], ct->width);
            Val y = cg_decl(g, ct, "y");
            const char *have = cg_fresh(g, "have");
            cg_line(g, "int %s = %d;", have, gn->z >= 0);
            if (gn->z >= 0) cg_assign(g, y, cg_param(g, cn->kid_thunk[gn->z], ct));
            cg_line(g, "for (i64 k = 0; k < nch_; k++) {");
            cg_open(g);
            cg_line(g, "if (!hvp[%d * m_ + r * nch_ + k]) continue;", q);
            gpu_accumulate(g, x->kid[gn->op], ct, y, have, cg_at(g, part, "r * nch_ + k"));
            cg_close(g);
            cg_store(g, q, ct, "r", y);
        }
        cg_close(g);
        cg_close(g);
    }

    /* scatter */
    if (nflt) {
        gpu_kernel_begin(g, R_SCATTER);
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "AX_SHARED i64 shc%d_[AX_WG];", q);
        cg_line(g, "AX_G const i64 *offs = (AX_G const i64 *)s2_ + %d * m_;", ng);
        cg_line(g, "for (i64 t = ax_grp; t < m_; t += ax_ngrp) {");
        cg_open(g);
        cg_line(g, "const i64 lo = t * ch_, hi = ax_min64(lo + ch_, n_);");
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "i64 run%d = offs[%d * m_ + t];", q, q);
        cg_line(g, "for (i64 tb = lo; tb < lo + ch_; tb += AX_WG) {");
        cg_open(g);
        cg_line(g, "const i64 i = tb + ax_lid;");
        v = cg_decl(g, x->kid[0]->type->elt, "e");
        cg_line(g, "if (i < hi) {");
        cg_open(g);
        g->pos = "i";
        cg_assign(g, v, cg_read_lin(g, 0, "i"));
        cg_close(g);
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_FILTER) continue;
            cg_line(g, "const u8 keep%d = i < hi && %s;", q, cg_loop_comp(g, v, gn->pred).v[0]);
            cg_line(g, "shc%d_[ax_lid] = keep%d;", q, q);
        }
        cg_line(g, "ax_barrier();");
        cg_line(g, "for (i64 s = 1; s < AX_WG; s <<= 1) {");
        cg_open(g);
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "const i64 y%d = ax_lid >= s ? shc%d_[ax_lid - s] : 0;", q, q);
        cg_line(g, "ax_barrier();");
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "shc%d_[ax_lid] += y%d;", q, q);
        cg_line(g, "ax_barrier();");
        cg_close(g);
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_FILTER) continue;
            cg_line(g, "if (keep%d) {", q);
            cg_open(g);
            cg_store(g, q, loop_comp_type(x, gn->comp), cg_fmt(g, "run%d + shc%d_[ax_lid] - 1", q, q),
                     cg_loop_comp(g, v, gn->comp));
            cg_close(g);
            cg_line(g, "run%d += shc%d_[AX_WG - 1];", q, q);
        }
        cg_line(g, "ax_barrier();");
        cg_close(g);
        cg_close(g);
        cg_close(g);
    }
}
