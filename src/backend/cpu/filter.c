/*
 * The CPU's filter: per chunk, the number of elements kept (the host
 * turns the counts into offsets), then per chunk again the kept elements
 * written from the chunk's offset.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

void cpu_emit_filter(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[0];
    const Type *elt = x->type->elt;
    for (int scatter = 0; scatter < 2; scatter++) {
        cpu_kernel_begin(g, scatter ? R_SCATTER : R_COUNT, scatter ? 0 : cn->nout, scatter != 0);
        cg_line(g, "const i64 n = c->n, ch = c->chunk;");
        if (scatter) cg_line(g, "const i64 *restrict offs = (const i64 *)c->s2, *restrict cnt = (const i64 *)c->s1;");
        else cg_line(g, "i64 *restrict cnt = (i64 *)c->s1;");
        cg_line(g, "for (i64 t = start; t < end; t++) {");
        g->ind++;
        cg_line(g, "const i64 lo = t * ch, hi = ax_min64(lo + ch, n);");
        cg_line(g, "i64 m = %s;", scatter ? "offs[t]" : "0");
        /* The scatter stores every element at m and advances m where the
         * predicate holds: no branch on the predicate (a random one
         * mispredicts half the time, as the QuickHull step's filters do,
         * examples/planner.c).  An element
         * not kept is overwritten by the next one kept; the loop stops at
         * the chunk's last one kept, so every store stays in the chunk's
         * own part of the output. */
        if (scatter) cg_line(g, "const i64 e = m + cnt[t];");
        if (scatter) cg_line(g, "for (i64 i = lo; m < e && i < hi; i++) {");
        else cg_line(g, "for (i64 i = lo; i < hi; i++) {");
        g->ind++;
        g->pos = "i";
        Val v = cg_read_lin(g, 0, "i");
        cg_value_fact(g, p, 0, "i");
        Val k = cg_apply(g, p, &v, 1);
        if (k.n == 1 && scatter && cn->epi) {
            /* a map applied as the elements are stored (ir_epilogue):
             * only to the elements kept, as the map alone would be */
            cg_line(g, "if (%s) {", k.v[0]);
            cg_open(g);
            cg_store(g, 0, elt, "m", v);
            cg_line(g, "m++;");
            cg_close(g);
        } else if (k.n == 1) {
            if (scatter) cg_store(g, 0, elt, "m", v);
            cg_line(g, "m += %s;", k.v[0]);
        }
        cg_close(g);
        if (!scatter) cg_line(g, "cnt[t] = m;");
        cg_close(g);
        cpu_kernel_end(g);
    }
}
