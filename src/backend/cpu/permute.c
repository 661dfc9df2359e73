/*
 * The CPU's permute: the defaults copied, then each source element
 * combined into its target with an atomic read-modify-write (or, for a
 * small target, into per-task private copies merged in task order); the
 * host picks (cpu/exec.c ex_permute).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"
#include <stdlib.h>

/* Task `task`'s private copy of the result (cpu_emit_permute's layout): the
 * pointers axq_<leaf>; for the task itself (`fill`), each filled with the
 * identity; for the merge, each combined into the result at
 * [start, end). */
static void private_copies(G *g, const Type *elt, const Prim *ops, const char *task, bool fill)
{
    cg_line(g, "%schar *axqb_ = (%schar *)c->s2 + %s * c->m;", fill ? "" : "const ", fill ? "" : "const ", task);
    cg_line(g, "i64 axqo_ = 0;");
    for (int k = 0; k < elt->width; k++) {
        ax_scalar sk = ty_leaf(elt, k);
        const char *T = cg_ctype(sk), *q = fill ? "" : "const ";
        cg_line(g, "%s%s *restrict axq_%d = (%s%s *)(axqb_ + axqo_);", q, T, k, q, T);
        cg_line(g, "axqo_ += (n0 * (i64)sizeof(%s) + 63) & ~(i64)63;", T);
        if (fill)
            cg_line(g, "for (i64 i = 0; i < n0; i++) axq_%d[i] = %s;", k, cpu_leaf_identity(g, ops[k], sk));
        else
            cg_line(g, "for (i64 i = start; i < end; i++) a0_%d[i] = %s;", k,
                    cpu_leaf_op(g, ops[k], sk, cg_fmt(g, "axq_%d[i]", k), cg_fmt(g, "a0_%d[i]", k)));
    }
}

/* The leaves' primitives of a permute combination that private copies
 * can compute (every leaf a commutative primitive with an identity), in
 * ops; false otherwise. */
static bool priv_ops(const Node *comb, const Type *elt, Prim *ops)
{
    int w = elt->width;
    if (w > 64 || !cg_lam_comm(comb, ops)) return false;
    for (int k = 0; k < w; k++)
        if (!cg_comm_op(ops[k], ty_leaf(elt, k))) return false;
    return true;
}

/* Combines v into output element lin: an atomic read-modify-write per
 * leaf when the combination is componentwise (a fetch-op for integer
 * add/and/or/xor, else a compare-and-swap loop on the element's bits, which
 * works for any function of 1-8 byte leaves, floats included), striped
 * spinlocks otherwise.  comb(new, old): kid[0]'s first parameter is the
 * new value. */
static void combine(G *g, const Node *comb, const Type *elt, const char *lin, Val v)
{
    int w = elt->width;
    const Node *pn = comb->param[0], *po = comb->param[1], *body = comb->kid[0];
    Prim ops[64];
    bool percomp = w <= 64 && cg_lam_comm(comb, ops);
    /* fst (the new value wins) and snd (the old one stays) */
    if (body->op == OP_VAR && body->id == po->id) return;
    bool fst = body->op == OP_VAR && body->id == pn->id;
    if (w == 1 || percomp || fst) {
        for (int k = 0; k < w; k++) {
            ax_scalar s = ty_leaf(elt, k);
            const char *U = cg_utype(s), *T = cg_ctype(s);
            const char *ptr = cg_fmt(g, "(%sa *)&a0_%d[%s]", U, k, lin);
            const char *tobits = s == AX_F32 ? "ax_bits_f32" : s == AX_F64 ? "ax_bits_f64" : "";
            if (fst) {
                cg_line(g, "__atomic_store_n(%s, (%s)%s(%s), __ATOMIC_RELAXED);", ptr, U, tobits, v.v[k]);
                continue;
            }
            Prim op = w == 1 ? P_NPRIM : ops[k];
            if (w == 1) {
                Prim o1;
                if (cg_comm_leaf(body, pn, po, 0, 1, &o1)) op = o1;
            }
            const char *fetch = NULL;
            if (op == P_ADD && s != AX_F32 && s != AX_F64) fetch = "add";
            if (op == P_BAND || op == P_AND) fetch = "and";
            if (op == P_BOR || op == P_OR) fetch = "or";
            if (op == P_BXOR) fetch = "xor";
            if (fetch) {
                cg_line(g, "__atomic_fetch_%s(%s, (%s)%s, __ATOMIC_RELAXED);", fetch, ptr, U, v.v[k]);
                continue;
            }
            /* compare-and-swap on the bits */
            const char *pp = cg_fresh(g, "pp"), *ob = cg_fresh(g, "ob");
            cg_line(g, "{");
            g->ind++;
            cg_line(g, "%sa *%s = %s;", U, pp, ptr);
            cg_line(g, "%s %s = __atomic_load_n(%s, __ATOMIC_RELAXED);", U, ob, pp);
            cg_line(g, "for (;;) {");
            g->ind++;
            const char *old = cg_local(g, s, s == AX_F32 ? cg_fmt(g, "ax_f32_of(%s)", ob)
                                              : s == AX_F64 ? cg_fmt(g, "ax_f64_of(%s)", ob)
                                                            : cg_fmt(g, "(%s)%s", T, ob));
            Val nv;
            if (w == 1) {
                Val o = cg_val(g, 1);
                if (o.n) o.v[0] = old;
                nv = cg_apply2(g, comb, cg_slice(v, k, 1), o);
            } else {
                /* componentwise: leaf k of the result from leaf k alone */
                const char *e = cpu_leaf_op(g, op, s, v.v[k], old);
                if (!e) return cg_fail(g, "cpu codegen: permute combination");
                nv = cg_val(g, 1);
                if (nv.n) nv.v[0] = cg_local(g, s, e);
            }
            if (nv.n == 1)
                cg_line(g, "if (__atomic_compare_exchange_n(%s, &%s, (%s)%s(%s), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;",
                        pp, ob, U, tobits, nv.v[0]);
            cg_close(g);
            cg_close(g);
        }
        return;
    }
    /* Several leaves combined together: a lock per stripe of the output. */
    const char *lk = cg_fresh(g, "lk");
    cg_line(g, "i32 *%s = (i32 *)c->s1 + (%s & 1023);", lk, lin);
    cg_line(g, "ax_lock(%s);", lk);
    Val old = cg_val(g, w);
    for (int k = 0; k < old.n; k++) old.v[k] = cg_local(g, ty_leaf(elt, k), cg_fmt(g, "a0_%d[%s]", k, lin));
    Val nv = cg_apply2(g, comb, v, old);
    cg_store(g, 0, elt, lin, nv);
    cg_line(g, "ax_unlock(%s);", lk);
}

static void permute_elem(G *g, void *envp, Val ix, const char *pos)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    /* the index function runs at the source's indices (radix sort's reads
     * of its flags and counts at the same index: unchecked under pre_) */
    cg_range_fact(g, x->kid[2], cg_opd_slot(cn, 1), false);
    Val t = cg_apply(g, x->kid[2], &ix, 1);
    int tr = x->type->rank;
    if (t.n != tr) return;
    if (tr >= 1 && !g->row_ok) {
        /* The ignore test (every component -1) inside the bounds test's
         * failure branch: such an index is never in bounds, and the
         * element loop then tests once, as a hand-written histogram does
         * (with both tests on the path it was slower than the C
         * baseline). */
        Buf o = {0};
        for (int d = 0; d < tr; d++) buf_printf(&o, "%s((u64)%s < (u64)s0_%d)", d ? " & " : "", t.v[d], d);
        cg_line(g, "if (__builtin_expect(!(%s), 0)) {", cg_buf_text(g, &o, "0"));
        free(o.s);
        g->ind++;
        Buf b = {0};
        for (int d = 0; d < tr; d++) buf_printf(&b, "%s%s == -1", d ? " && " : "", t.v[d]);
        cg_line(g, "if (%s) continue;", cg_buf_text(g, &b, "0"));
        free(b.s);
        if (g->safe) cg_guard(g, "1", cg_fail_ix(g, AX_ERR_INDEX, SITE_PERMUTE, 0, t, tr));
        cg_line(g, "continue;");
        cg_close(g);
    }
    const char *lin = cg_linear(g, 0, t);
    Val v = cg_read_lin(g, 1, pos);
    const Prim *priv = envp;
    if (!priv) return combine(g, x->kid[0], elt, lin, v);
    /* into this task's private copy (cpu_emit_permute): plain code */
    for (int k = 0; k < elt->width && k < v.n; k++) {
        const char *q = cg_fmt(g, "axq_%d[%s]", k, lin);
        cg_line(g, "%s = %s;", q, cpu_leaf_op(g, priv[k], ty_leaf(elt, k), v.v[k], q));
    }
}

/* A row whose targets are one row of the result (permute_row): tested
 * once, so that its combining loop, plain loads and stores into a private
 * copy, vectorises. */
static const char *permute_row(G *g, void *envp, Val outer, const char *j0, const char *m, const char *pos)
{
    (void)envp;
    const CgNode *cn = g->cn;
    if (outer.n < 1) return NULL;   /* a vector's "row" is the task's whole range */
    return cg_row_target(g, cn->x->kid[2], cg_opd_slot(cn, 1), 0, outer, pos, j0, m);
}

static void copy_elem(G *g, void *env, Val ix, const char *pos)
{
    cg_store(g, 0, g->cn->x->type->elt, pos, cg_read_lin(g, 0, pos));
}

void cpu_emit_permute(G *g)
{
    const CgNode *cn = g->cn;
    cpu_kernel_begin(g, R_DFLT, 0, true);
    cpu_loop_lin(g, copy_elem, NULL);
    cpu_kernel_end(g);

    /* The combining kernel.  Other kernels whose deferred check fired
     * rerun their range in their checked copy; this one has combined its
     * elements into the result already (some with a guarded read's
     * stand-in value: a deferred check can fire where the checked code
     * finds no fault), and other ranges combined into the same places.
     * So it only sets err->redo, and the host starts the permute over from
     * the defaults with the checked copy, which the deferred kernel runs
     * when called with start encoded as -1 - start (random seeds 24539
     * and 29228 had ranges combined twice, or with stand-in values). */
    cpu_kernel_begin(g, R_PERM, 0, true);
    cg_line(g, "if (ax_stop(c, start)) return;");
    cpu_loop_ix(g, cg_opd_slot(cn, 1), cg_opd_node(cn, 1)->type->rank, permute_elem, permute_row, NULL);
    cpu_kernel_end(g);

    /* Private copies (a histogram: a small target, many sources; Futhark's
     * reduce-by-index keeps per-thread sub-histograms alike): when every
     * leaf combines by a commutative primitive with an identity, each task
     * (one per thread, a contiguous range of the source) combines into its
     * own copy of the target, filled with the identity, with plain loads
     * and stores, and a second kernel combines the copies into the result
     * in task order.  The host picks this or the atomics above by the
     * target's size (exec.c ex_permute).  Layout of c->s2: per task, c->m
     * bytes; in them leaf k's n0 values at a 64-byte aligned offset. */
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    Prim *ops = arena_alloc(g->ar, sizeof *ops * 64);
    if (!ops || !priv_ops(x->kid[0], elt, ops)) return;
    cpu_kernel_begin(g, R_PPRIV, 0, true);
    cg_line(g, "if (ax_stop(c, start)) return;");
    private_copies(g, elt, ops, "(start / c->chunk)", true);
    cpu_loop_ix(g, cg_opd_slot(cn, 1), cg_opd_node(cn, 1)->type->rank, permute_elem, permute_row, ops);
    cpu_kernel_end(g);

    /* the copies into the result, over the result's positions */
    cpu_kernel_begin(g, R_PMERGE, 0, true);
    cg_line(g, "for (i64 t = 0; t < c->nchunk; t++) {");
    g->ind++;
    private_copies(g, elt, ops, "t", false);
    cg_close(g);
    cpu_kernel_end(g);
}
