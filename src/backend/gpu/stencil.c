/*
 * The GPU's stencil: one grid-stride kernel over the output's positions,
 * each in the interior (every neighbour of every input inside: reads at
 * fixed offsets) or on the border (each coordinate through the boundary
 * rule).  The prologue and the neighbourhoods are cgen's
 * (cgen/stencil.c), shared with the CPU's.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"
#include <stdlib.h>

void gpu_emit_stencil(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Stencil *st = x->sten;
    int r = st->rank;
    const Type *elt = x->type->elt;
    if (!cg_sten_check(g)) return;
    gpu_kernel_begin(g, R_MAIN);
    cg_sten_prologue(g, true);
    cg_stencil_index_fact(g, x->kid[0]);
    gpu_grid_loop(g, "i", "n0");
    g->pos = "i";
    Val ix = gpu_index_of(g, 0, r, "i");
    cg_line(g, "const i64 j = %s;", ix.v[r - 1]);
    Buf b = {0};
    buf_put(&b, "1");
    for (int d = 0; d < r; d++) buf_printf(&b, " & (%s >= lo%d) & (%s < hi%d)", ix.v[d], d, ix.v[d], d);
    cg_line(g, "const int inner = %s;", cg_buf_text(g, &b, "0"));
    free(b.s);
    cg_line(g, "if (inner) {");
    cg_open(g);
    cg_sten_row_bases(g, ix);
    int na = 0;
    Val *args = cg_sten_args(g, STEN_INTERIOR, ix, "j", &na);
    if (args) cg_store(g, 0, elt, "i", cg_apply(g, x->kid[0], args, na));
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    args = cg_sten_args(g, STEN_BORDER, ix, "j", &na);
    if (args) cg_store(g, 0, elt, "i", cg_apply(g, x->kid[0], args, na));
    cg_close(g);
    cg_close(g);
    cg_close(g);
}
