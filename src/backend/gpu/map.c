/*
 * The GPU's producers: generate, map, zipWith, backpermute, transform,
 * replicate, slice and reshape, one grid-stride kernel over the output's
 * positions (R_LIN where every operand is read at the same linear
 * position, R_MAIN with the index).  The element code is cgen's
 * (cg_producer_elem).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

void gpu_emit_producer(G *g, CgRole role)
{
    const CgNode *cn = g->cn;
    gpu_kernel_begin(g, role);
    gpu_grid_loop(g, "i_", "n0");
    g->pos = "i_";
    Val ix = role == R_LIN ? cg_val(g, 0) : gpu_index_of(g, 0, cn->x->type->rank, "i_");
    cg_producer_elem(g, role == R_LIN, ix, "i_");
    cg_close(g);
    cg_close(g);
}
