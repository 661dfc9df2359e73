/*
 * The CPU's filter: per chunk, the number of elements kept (the host
 * turns the counts into offsets), then per chunk again the kept elements
 * written from the chunk's offset.
 *
 * Staged, when the elements come from a fused producer that calls a
 * maths function (filter p (map exp xs)): each element would be computed
 * twice, once per pass, and one at a time, where a map's loop computes a
 * vector of them at once.  The count pass then computes a block of
 * elements into local arrays (a loop the compiler vectorises, as a
 * map's), applies the predicate to the block and compacts the elements
 * kept into a scratch buffer, at the chunk's own place; the scatter pass
 * copies each chunk's kept elements to its offset.  The buffer's traffic
 * (the kept elements written and read once more) is small against a
 * maths function computed again.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

enum { STAGE_BLOCK = 256 };   /* elements a block (local arrays on the stack) */

/* Does scalar code e call a maths function (exp, log, sin, pow, ...)? */
static bool calls_maths(const Node *e, int depth)
{
    if (!e || depth > 64) return e != NULL;
    if (e->op == OP_PRIM && e->a >= P_EXP && e->a <= P_ATAN2 && e->a != P_SQRT) return true;
    for (int k = 0; k < e->n; k++)
        if (e->kid[k] && !op_is_array(e->kid[k]->op) && calls_maths(e->kid[k], depth + 1)) return true;
    return false;
}

/* Is the filter's input a fused producer whose element calls a maths
 * function (the staged form's case)? */
static bool staged(const Node *x)
{
    const Node *in = x->kid[1];
    return in->op == OP_DELAYED && in->n >= 3 && in->kid[2]->op == OP_LAM && calls_maths(in->kid[2]->kid[0], 0);
}

/* The scratch buffer's leaves, after the chunks' offsets in c->s2 (the
 * executor's layout, cpu/exec.c ex_filter). */
static Val scratch_leaves(G *g, const Type *elt)
{
    Val sc = cg_val(g, elt->width);
    cg_line(g, "char *sb_ = (char *)c->s2 + ((c->m + 1) * 8 + 63) / 64 * 64;");
    for (int l = 0; l < elt->width; l++) {
        ax_scalar s = ty_leaf(elt, l);
        sc.v[l] = cg_fresh(g, "sc");
        cg_line(g, "%s *restrict %s = (%s *)sb_;", cg_ctype(s), sc.v[l], cg_ctype(s));
        cg_line(g, "sb_ += (n * %d + 63) / 64 * 64;", (int)ax_scalar_size(s));
    }
    return sc;
}

static void emit_staged(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[0];
    const Type *elt = x->type->elt;
    ((CgNode *)cn)->scratch_leaves = elt->width;
    /* count: blocks computed, then tested and compacted */
    cpu_kernel_begin(g, R_COUNT, cn->nout, false);
    cg_line(g, "const i64 n = c->n, ch = c->chunk;");
    cg_line(g, "i64 *restrict cnt = (i64 *)c->s1;");
    Val sc = scratch_leaves(g, elt);
    Val e = cg_leaf_arrays(g, elt, "eb", STAGE_BLOCK);
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 lo = t * ch, hi = ax_min64(lo + ch, n);");
    cg_line(g, "i64 m = lo;");
    cg_line(g, "for (i64 bl = lo; bl < hi; bl += %d) {", STAGE_BLOCK);
    g->ind++;
    cg_line(g, "const i64 bn = ax_min64(%d, hi - bl);", STAGE_BLOCK);
    /* (the block is a local array: nothing it stores is read in the loop) */
    cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 j = 0; j < bn; j++) {");
    g->ind++;
    cg_line(g, "const i64 i = bl + j;");
    g->pos = "i";
    cg_put(g, e, "j", cg_read_lin(g, 0, "i"));
    cg_close(g);
    /* the elements kept, compacted without a branch (as the scatter
     * below: an element not kept is overwritten by the next) */
    cg_line(g, "for (i64 j = 0; j < bn; j++) {");
    g->ind++;
    cg_line(g, "const i64 i = bl + j;");
    g->pos = "i";
    Val v = cg_at(g, e, "j");
    cg_value_fact(g, p, 0, "i");
    Val k = cg_apply(g, p, &v, 1);
    if (k.n == 1) {
        cg_put(g, sc, "m", v);
        cg_line(g, "m += %s;", k.v[0]);
    }
    cg_close(g);
    cg_close(g);
    cg_line(g, "cnt[t] = m - lo;");
    cg_close(g);
    cpu_kernel_end(g);
    /* scatter: each chunk's kept elements to its offset (through the
     * epilogue's map, when there is one: ir_epilogue) */
    cpu_kernel_begin(g, R_SCATTER, 0, true);
    cg_line(g, "const i64 n = c->n, ch = c->chunk;");
    cg_line(g, "const i64 *restrict offs = (const i64 *)c->s2, *restrict cnt = (const i64 *)c->s1;");
    sc = scratch_leaves(g, elt);
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 lo = t * ch, o = offs[t], kn = cnt[t];");
    cg_line(g, "for (i64 j = 0; j < kn; j++) {");
    g->ind++;
    g->pos = "(lo + j)";
    cg_store(g, 0, elt, "o + j", cg_at(g, sc, "lo + j"));
    cg_close(g);
    cg_close(g);
    cpu_kernel_end(g);
}

void cpu_emit_filter(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[0];
    const Type *elt = x->type->elt;
    if (staged(x)) {
        emit_staged(g);
        return;
    }
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
