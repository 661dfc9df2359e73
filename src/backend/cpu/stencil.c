/*
 * The CPU's stencil: one kernel over the output's positions, a row
 * segment at a time, split into the interior (every neighbour of every
 * input inside: reads at fixed offsets, no bounds tests) and the border
 * (each coordinate through the boundary rule).  The prologue and the
 * neighbourhoods are cgen's (cgen/stencil.c), shared with the GPU's.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"
#include <stdlib.h>

void cpu_emit_stencil(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Stencil *st = x->sten;
    int r = st->rank;
    const Type *elt = x->type->elt;
    if (!cg_sten_check(g)) return;
    cpu_kernel_begin(g, R_MAIN, 0, true);
    /* the interior, and the neighbours' offsets unless they are read in loops */
    bool looped = cg_sten_looped(st);
    cg_sten_prologue(g, !looped);
    cg_stencil_index_fact(g, x->kid[0]);
    /* Positions as in cpu_loop_ix, one row segment [j0, j1) at a time. */
    Val ix = cg_val(g, r);
    for (int d = 0; d < ix.n; d++) {
        ix.v[d] = cg_fmt(g, "x%d", d);
        cg_line(g, "i64 x%d = 0;", d);
    }
    cg_line(g, "i64 tq = start;");
    for (int d = r - 1; d >= 1; d--) {
        cg_line(g, "x%d = tq %% s0_%d;", d, d);
        cg_line(g, "tq /= s0_%d;", d);
    }
    cg_line(g, "x0 = tq;");
    cg_line(g, "for (i64 i = start; i < end;) {");
    g->ind++;
    cg_line(g, "const i64 m = ax_min64(s0_%d - x%d, end - i), j0 = x%d, j1 = j0 + m;", r - 1, r - 1, r - 1);
    Buf b = {0};
    buf_put(&b, "1");
    for (int d = 0; d < r - 1; d++) buf_printf(&b, " & (x%d >= lo%d) & (x%d < hi%d)", d, d, d, d);
    cg_line(g, "const int inner = %s;", cg_buf_text(g, &b, "0"));
    free(b.s);
    cg_line(g, "const i64 ja = inner ? ax_max64(j0, ax_min64(lo%d, j1)) : j1;", r - 1);
    cg_line(g, "const i64 jb = inner ? ax_max64(ja, ax_min64(hi%d, j1)) : j1;", r - 1);
    cg_sten_row_bases(g, ix);
    /* interior: each iteration writes its own element of the fresh
     * result (as emit_producer's loops: GCC ivdep, without which a
     * stencil over pairs needs more run-time alias checks than GCC makes,
     * and stays scalar) */
    cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 j = ja; j < jb; j++) {");
    g->ind++;
    g->pos = "(i + j - j0)";
    int na = 0;
    Val *args = looped ? cg_sten_args_loop(g, STEN_INTERIOR, ix, "j", &na) : cg_sten_args(g, STEN_INTERIOR, ix, "j", &na);
    if (args) cg_store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
    cg_close(g);
    /* a row on the border of an outer dimension: [ka, kb), where j's
     * neighbours are inside, without the boundary rule along the row
     * (CgStenPart); inside rows leave it empty */
    if (r >= 2) {
        cg_line(g, "const i64 ka = inner ? ja : ax_max64(j0, ax_min64(lo%d, j1));", r - 1);
        cg_line(g, "const i64 kb = inner ? ja : ax_max64(ka, ax_min64(hi%d, j1));", r - 1);
        if (!looped) cg_sten_row_edge_coords(g, ix);
        cg_line(g, "#pragma GCC ivdep");
        cg_line(g, "for (i64 j = ka; j < kb; j++) {");
        g->ind++;
        g->pos = "(i + j - j0)";
        args = looped ? cg_sten_args_loop(g, STEN_ROW_EDGE, ix, "j", &na) : cg_sten_args(g, STEN_ROW_EDGE, ix, "j", &na);
        if (args) cg_store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
        cg_close(g);
    } else {
        cg_line(g, "const i64 ka = ja, kb = ja;");
    }
    /* border: [j0, ja) and [jb, j1), or [j0, ka) and [kb, j1) */
    cg_line(g, "for (int part = 0; part < 2; part++) {");
    g->ind++;
    cg_line(g, "const i64 from = part ? (inner ? jb : kb) : j0, to = part ? j1 : (inner ? ja : ka);");
    cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 j = from; j < to; j++) {");
    g->ind++;
    args = looped ? cg_sten_args_loop(g, STEN_BORDER, ix, "j", &na) : cg_sten_args(g, STEN_BORDER, ix, "j", &na);
    if (args) cg_store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
    cg_close(g);
    cg_close(g);
    cg_line(g, "i += m;");
    cg_line(g, "x%d += m;", r - 1);
    if (r >= 2) {
        cg_line(g, "if (x%d == s0_%d) {", r - 1, r - 1);
        g->ind++;
        cg_line(g, "x%d = 0;", r - 1);
        int opened = 0;
        for (int d = r - 2; d >= 1; d--) {
            cg_line(g, "if (++x%d == s0_%d) {", d, d);
            g->ind++;
            opened++;
            cg_line(g, "x%d = 0;", d);
        }
        cg_line(g, "++x0;");
        while (opened--) cg_close(g);
        cg_close(g);
    }
    cg_close(g);
    cpu_kernel_end(g);
}
