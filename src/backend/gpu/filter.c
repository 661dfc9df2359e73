/*
 * The GPU's filter: per chunk, a count; the host turns the counts into
 * offsets; per chunk again, each tile's kept elements are placed by a
 * scan of their flags, in order.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

void gpu_emit_filter(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[0];
    const Type *elt = x->type->elt;
    /* count: per chunk (a group each), the elements kept */
    gpu_kernel_begin(g, R_COUNT);
    cg_line(g, "AX_SHARED i64 shc_[AX_WG];");
    cg_line(g, "AX_G i64 *cnt = (AX_G i64 *)s1_;");
    cg_line(g, "for (i64 t = ax_grp; t < m_; t += ax_ngrp) {");
    cg_open(g);
    cg_line(g, "const i64 lo = t * ch_, hi = ax_min64(lo + ch_, n_);");
    cg_line(g, "i64 c = 0;");
    cg_line(g, "for (i64 i = lo + ax_lid; i < hi; i += AX_WG) {");
    cg_open(g);
    g->pos = "i";
    Val v = cg_read_lin(g, 0, "i");
    Val k = cg_apply(g, p, &v, 1);
    if (k.n == 1) cg_line(g, "c += (i64)%s;", k.v[0]);
    cg_close(g);
    cg_line(g, "shc_[ax_lid] = c;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = AX_WG / 2; s > 0; s >>= 1) {");
    cg_open(g);
    cg_line(g, "if (ax_lid < s) shc_[ax_lid] += shc_[ax_lid + s];");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_line(g, "if (ax_lid == 0) cnt[t] = shc_[0];");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_close(g);

    /* scatter: per chunk, tile by tile, each kept element at its place */
    gpu_kernel_begin(g, R_SCATTER);
    cg_line(g, "AX_SHARED i64 shc_[AX_WG];");
    cg_line(g, "AX_G const i64 *offs = (AX_G const i64 *)s2_;");
    cg_line(g, "for (i64 t = ax_grp; t < m_; t += ax_ngrp) {");
    cg_open(g);
    cg_line(g, "const i64 lo = t * ch_, hi = ax_min64(lo + ch_, n_);");
    cg_line(g, "i64 run = offs[t];");
    cg_line(g, "for (i64 tb = lo; tb < lo + ch_; tb += AX_WG) {");
    cg_open(g);
    cg_line(g, "const i64 i = tb + ax_lid;");
    v = cg_decl(g, elt, "e");
    cg_line(g, "u8 keep = 0;");
    cg_line(g, "if (i < hi) {");
    cg_open(g);
    g->pos = "i";
    cg_assign(g, v, cg_read_lin(g, 0, "i"));
    k = cg_apply(g, p, &v, 1);
    if (k.n == 1) cg_line(g, "keep = %s;", k.v[0]);
    cg_close(g);
    cg_line(g, "shc_[ax_lid] = keep;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = 1; s < AX_WG; s <<= 1) {");
    cg_open(g);
    cg_line(g, "const i64 y = ax_lid >= s ? shc_[ax_lid - s] : 0;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "shc_[ax_lid] += y;");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_line(g, "if (keep) {");
    cg_open(g);
    cg_store(g, 0, elt, "run + shc_[ax_lid] - 1", v);
    cg_close(g);
    cg_line(g, "run += shc_[AX_WG - 1];");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_close(g);
    cg_close(g);
}
