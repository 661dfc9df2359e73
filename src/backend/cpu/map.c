/*
 * The CPU's producers: generate, map, zipWith, backpermute, transform,
 * replicate, slice and reshape, one kernel over the output's positions
 * (R_LIN where every operand is read at the same linear position, R_MAIN
 * with the index; the executor picks by the operands' shapes).  The
 * element code is cgen's (cg_producer_elem); element code with while
 * loops that cannot fault runs in lane blocks (cgen/exp.c, "While loops
 * across lanes").
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

static void producer_elem(G *g, void *lin, Val ix, const char *pos) { cg_producer_elem(g, *(bool *)lin, ix, pos); }

/* a generate's row: its terms of the row alone, no test */
static const char *generate_row(G *g, void *env, Val outer, const char *j0, const char *m, const char *pos)
{
    (void)env, (void)j0, (void)m;
    cg_row_hoist_gen(g, outer, pos);
    return NULL;
}


/* The lanes of a block for the producer's element code (cg_lane_count),
 * or 0: generate, map and zipWith of arrays in memory (a fused operand's
 * code may read and fault), at rank >= 1. */
static int producer_lanes(const CgNode *cn)
{
    const Node *x = cn->x;
    if (x->type->rank < 1) return 0;
    if (x->op == OP_GENERATE) return cg_lane_count(x->kid[1]);
    if (x->op != OP_MAP && x->op != OP_ZIPWITH) return 0;
    for (int i = 0; i < cn->nopd; i++)
        if (cg_opd_node(cn, i)->op == OP_DELAYED) return 0;
    return cg_lane_count(x->kid[0]);
}

void cpu_emit_producer(G *g, CgRole role)
{
    bool lin = role == R_LIN;
    cpu_kernel_begin(g, role, 0, true);
    cg_line(g, "if (ax_stop(c, start)) return;");
    g->nlane = producer_lanes(g->cn);
    /* Each iteration writes its own element of the results, which the
     * executor allocates afresh and which no operand can alias (the
     * operands are held for the whole operation): no loop-carried memory
     * dependence, so say so.  GCC 12 does not apply `restrict` to the
     * kernel's local pointers, and cannot check aliasing at run time for
     * gathers (data-dependent reads, as fluid's advection makes). */
    g->own_out = true;
    /* a generate's terms of the row alone, once per row (cgen/hoist.c):
     * floyd-warshall's path[i][k], and its path[k][j] checked per row */
    bool gen = g->cn->x->op == OP_GENERATE && g->cn->x->type->rank >= 2;
    if (role == R_LIN) cpu_loop_lin(g, producer_elem, &lin);
    else cpu_loop_ix(g, 0, g->cn->x->type->rank, producer_elem, gen ? generate_row : NULL, &lin);
    g->own_out = false;
    g->nlane = 0;
    cpu_kernel_end(g);
}
