/*
 * The GPU's permute: defaults copied, then one thread per source element
 * combining into the target with an atomic: a native one where the
 * operator and type have one, a compare-and-swap loop on the element's
 * bits otherwise (on its 32-bit word for 8- and 16-bit types), and
 * striped locks for a combination of several components.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

/* The 32-bit word holding leaf k's element lin of output 0, and the
 * element's shift in it (8- and 16-bit leaves). */
static const char *leaf_word(G *g, ax_scalar s, int k, const char *lin, const char **shift)
{
    const char *byte = cg_local(g, AX_I64, cg_fmt(g, "(%s) * %d", lin, sc_bits(s) / 8));
    *shift = cg_local(g, AX_I32, cg_fmt(g, "(i32)((%s & 3) * 8)", byte));
    const char *wp = cg_fresh(g, "wp");
    cg_line(g, "AX_G u32 *%s = (AX_G u32 *)a0_%d + (%s >> 2);", wp, k, byte);
    return wp;
}

/* Leaf k of output 0's element lin, read atomically (an exchange of 0
 * for 0 returns the value and changes nothing). */
static const char *atomic_read(G *g, ax_scalar s, int k, const char *lin)
{
    int bits = sc_bits(s);
    const char *T = cg_ctype(s);
    if (bits < 32) {
        const char *sh;
        const char *wp = leaf_word(g, s, k, lin, &sh);
        const char *mask = bits == 8 ? "0xffu" : "0xffffu";
        return cg_local(g, s, cg_fmt(g, "(%s)(%s)((ax_cas32(%s, 0u, 0u) >> %s) & %s)", T, cg_utype(s), wp, sh, mask));
    }
    const char *U = bits == 64 ? "u64" : "u32";
    const char *b = cg_fmt(g, "ax_cas%d((AX_G %s *)&a0_%d[%s], 0, 0)", bits, U, k, lin);
    return cg_local(g, s, s == AX_F32 ? cg_fmt(g, "ax_f32_of(%s)", b) : s == AX_F64 ? cg_fmt(g, "ax_f64_of(%s)", b)
                                                                    : cg_fmt(g, "(%s)%s", T, b));
}

/* Leaf k of output 0's element lin := v, atomically (an 8- or 16-bit
 * leaf by a compare-and-swap loop on its word). */
static void atomic_write(G *g, ax_scalar s, int k, const char *lin, const char *v)
{
    int bits = sc_bits(s);
    if (bits >= 32) {
        const char *U = bits == 64 ? "u64" : "u32";
        const char *tobits = s == AX_F32 ? "ax_bits_f32" : s == AX_F64 ? "ax_bits_f64" : "";
        cg_line(g, "ax_xchg%d((AX_G %s *)&a0_%d[%s], (%s)%s(%s));", bits, U, k, lin, U, tobits, v);
        return;
    }
    cg_line(g, "{");
    cg_open(g);
    const char *sh, *wp = leaf_word(g, s, k, lin, &sh), *ob = cg_fresh(g, "ob");
    const char *mask = bits == 8 ? "0xffu" : "0xffffu";
    cg_line(g, "u32 %s = 0;", ob);
    cg_line(g, "for (;;) {");
    cg_open(g);
    const char *nb = cg_fmt(g, "(%s & ~(%s << %s)) | (((u32)(%s)%s & %s) << %s)", ob, mask, sh, cg_utype(s), v, mask, sh);
    const char *seen = cg_local(g, AX_U32, cg_fmt(g, "ax_cas32(%s, %s, %s)", wp, ob, nb));
    cg_line(g, "if (%s == %s) break;", seen, ob);
    cg_line(g, "%s = %s;", ob, seen);
    cg_close(g);
    cg_close(g);
}

/* Combines v into output element lin (see the top).  comb(new, old). */
static void combine(G *g, const Node *comb, const Type *elt, const char *lin, Val v)
{
    int w = elt->width;
    const Node *pn = comb->param[0], *po = comb->param[1], *body = comb->kid[0];
    Prim ops[64];
    bool percomp = w <= 64 && cg_lam_comm(comb, ops);
    if (body->op == OP_VAR && body->id == po->id) return;   /* snd: the old value stays */
    bool fst = body->op == OP_VAR && body->id == pn->id;   /* fst: the new value wins */
    if (w == 1 || percomp || fst) {
        for (int k = 0; k < w; k++) {
            ax_scalar s = ty_leaf(elt, k);
            int bits = sc_bits(s);
            const char *T = cg_ctype(s);
            bool fl = s == AX_F32 || s == AX_F64;
            Prim op = P_NPRIM;
            if (!fst && w == 1) {
                Prim o1;
                if (cg_comm_leaf(body, pn, po, 0, 1, &o1)) op = o1;
            } else if (!fst) {
                op = ops[k];
            }
            const char *addr = cg_fmt(g, "&a0_%d[%s]", k, lin);
            const char *U = bits == 64 ? "u64" : "u32";
            int wb = bits == 64 ? 64 : 32;
            const char *tobits = s == AX_F32 ? "ax_bits_f32" : s == AX_F64 ? "ax_bits_f64" : "";
            /* native atomics: add and exchange on 32- and 64-bit
             * integers, and/or/xor and min/max on 32-bit ones (OpenCL 1.2
             * has the 64-bit forms only as an extension) */
            if (!fl && bits >= 32) {
                const char *fn = fst ? "xchg" : op == P_ADD ? "add" : NULL;
                if (!fn && bits == 32) fn = op == P_BAND ? "and" : op == P_BOR ? "or" : op == P_BXOR ? "xor" : NULL;
                if (fn) {
                    cg_line(g, "ax_%s%d((AX_G %s *)%s, (%s)%s);", fn, bits, U, addr, U, v.v[k]);
                    continue;
                }
                if ((op == P_MIN || op == P_MAX) && bits == 32) {
                    const char *I = sc_is_signed(s) ? "i32" : "u32";
                    cg_line(g, "ax_%s_%s((AX_G %s *)%s, %s);", op == P_MIN ? "min" : "max", I, I, addr, v.v[k]);
                    continue;
                }
            }
            if (fst && bits >= 32) {
                cg_line(g, "ax_xchg%d((AX_G %s *)%s, (%s)%s(%s));", wb, U, addr, U, tobits, v.v[k]);
                continue;
            }
            if (s == AX_F32 && op == P_ADD) {
                /* CUDA's native float atomic add; elsewhere the CAS loop below */
                cg_line(g, "#if AX_FAST");
                cg_line(g, "atomicAdd(%s, %s);", addr, v.v[k]);
                cg_line(g, "#else");
            }
            /* compare-and-swap on the bits: the element's own 32 or 64
             * bits, or the 32-bit word holding an 8- or 16-bit element */
            bool sub = bits < 32;
            const char *wp, *ob = cg_fresh(g, "ob"), *sh = NULL;
            cg_line(g, "{");
            cg_open(g);
            if (sub) {
                wp = leaf_word(g, s, k, lin, &sh);
            } else {
                wp = cg_fresh(g, "wp");
                cg_line(g, "AX_G %s *%s = (AX_G %s *)%s;", U, wp, U, addr);
            }
            /* the first guess is 0: the exchange then reads the value
             * (a plain load here would race with the other threads'
             * exchanges: Oclgrind reports it) */
            cg_line(g, "%s %s = 0;", U, ob);
            cg_line(g, "for (;;) {");
            cg_open(g);
            const char *oldv;
            if (sub) {
                const char *mask = bits == 8 ? "0xffu" : "0xffffu";
                oldv = cg_local(g, s, cg_fmt(g, "(%s)(%s)((%s >> %s) & %s)", T, cg_utype(s), ob, sh, mask));
            } else {
                oldv = cg_local(g, s, s == AX_F32 ? cg_fmt(g, "ax_f32_of(%s)", ob)
                                      : s == AX_F64 ? cg_fmt(g, "ax_f64_of(%s)", ob)
                                                    : cg_fmt(g, "(%s)%s", T, ob));
            }
            Val nv;
            if (fst) {
                nv = cg_slice(v, k, 1);
            } else if (w == 1) {
                Val o = cg_val(g, 1);
                if (o.n) o.v[0] = oldv;
                nv = cg_apply2(g, comb, cg_slice(v, k, 1), o);
            } else {
                /* componentwise: leaf k of the result from leaf k alone */
                const char *a = v.v[k], *b = oldv, *e = NULL;
                const char *P = bits > 32 ? "u64" : "u32";
                switch (op) {
                case P_ADD: e = fl ? cg_fmt(g, "%s + %s", a, b) : cg_fmt(g, "(%s)((%s)%s + (%s)%s)", T, P, a, P, b); break;
                case P_MUL: e = fl ? cg_fmt(g, "%s * %s", a, b) : cg_fmt(g, "(%s)((%s)%s * (%s)%s)", T, P, a, P, b); break;
                case P_MIN: e = fl ? cg_fmt(g, "ax_min_%s(%s, %s)", T, a, b) : cg_fmt(g, "%s <= %s ? %s : %s", a, b, a, b); break;
                case P_MAX: e = fl ? cg_fmt(g, "ax_max_%s(%s, %s)", T, a, b) : cg_fmt(g, "%s >= %s ? %s : %s", a, b, a, b); break;
                case P_BAND: case P_AND: e = cg_fmt(g, "(%s)(%s & %s)", T, a, b); break;
                case P_BOR: case P_OR: e = cg_fmt(g, "(%s)(%s | %s)", T, a, b); break;
                case P_BXOR: e = cg_fmt(g, "(%s)(%s ^ %s)", T, a, b); break;
                default: break;
                }
                if (!e) return cg_fail(g, "gpu codegen: permute combination");
                nv = cg_val(g, 1);
                if (nv.n) nv.v[0] = cg_local(g, s, e);
            }
            if (nv.n == 1) {
                const char *nb;
                if (sub) {
                    const char *mask = bits == 8 ? "0xffu" : "0xffffu";
                    nb = cg_fmt(g, "(%s & ~(%s << %s)) | (((u32)(%s)%s & %s) << %s)", ob, mask, sh, cg_utype(s), nv.v[0],
                                mask, sh);
                } else {
                    nb = cg_fmt(g, "(%s)%s(%s)", U, tobits, nv.v[0]);
                }
                const char *seen = cg_local(g, bits == 64 ? AX_U64 : AX_U32, cg_fmt(g, "ax_cas%d(%s, %s, %s)", wb, wp, ob, nb));
                cg_line(g, "if (%s == %s) break;", seen, ob);
                cg_line(g, "%s = %s;", ob, seen);
            }
            cg_close(g);
            cg_close(g);
            if (s == AX_F32 && op == P_ADD) cg_line(g, "#endif");
        }
        return;
    }
    /* Several leaves combined together: a lock per stripe of the output
     * (1024 stripes in s1_, zeroed by the host).  The lock is taken and
     * released inside one branch of the loop, so that threads of one warp
     * that wait never keep the holder from running (SIMT).  The element's
     * leaves are read and written with atomics too: plain accesses under a
     * lock are a data race in OpenCL 1.2's memory model (Oclgrind says
     * so), and other stripes' elements may share a leaf's 32-bit word. */
    const char *lk = cg_fresh(g, "lk"), *done = cg_fresh(g, "dn");
    cg_line(g, "AX_G u32 *%s = (AX_G u32 *)s1_ + (%s & 1023);", lk, lin);
    cg_line(g, "for (int %s = 0; !%s;) {", done, done);
    cg_open(g);
    cg_line(g, "if (ax_cas32(%s, 0u, 1u) == 0u) {", lk);
    cg_open(g);
    cg_line(g, "ax_fence();");
    Val old = cg_val(g, w);
    for (int k = 0; k < old.n; k++) old.v[k] = atomic_read(g, ty_leaf(elt, k), k, lin);
    Val nv = cg_apply2(g, comb, v, old);
    for (int k = 0; k < w && k < nv.n; k++) atomic_write(g, ty_leaf(elt, k), k, lin, nv.v[k]);
    cg_line(g, "ax_fence();");
    cg_line(g, "ax_xchg32(%s, 0u);", lk);
    cg_line(g, "%s = 1;", done);
    cg_close(g);
    cg_close(g);
}

void gpu_emit_permute(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    gpu_kernel_begin(g, R_DFLT);
    gpu_grid_loop(g, "i", "n0");
    g->pos = "i";
    cg_store(g, 0, elt, "i", cg_read_lin(g, 0, "i"));
    cg_close(g);
    cg_close(g);

    int ss = cg_opd_slot(cn, 1);
    gpu_kernel_begin(g, R_PERM);
    gpu_grid_loop(g, "i", cg_fmt(g, "n%d", ss));
    g->pos = "i";
    Val ix = gpu_index_of(g, ss, cg_opd_node(cn, 1)->type->rank, "i");
    Val t = cg_apply(g, x->kid[2], &ix, 1);
    int tr = x->type->rank;
    if (t.n == tr) {
        if (tr >= 1) {
            Buf b = {0}, o = {0};
            for (int d = 0; d < tr; d++) buf_printf(&b, "%s%s == -1", d ? " && " : "", t.v[d]);
            for (int d = 0; d < tr; d++) buf_printf(&o, "%s((u64)%s < (u64)s0_%d)", d ? " & " : "", t.v[d], d);
            cg_line(g, "if (%s) continue;", cg_buf_text(g, &b, "0"));
            cg_line(g, "if (!(%s)) {", cg_buf_text(g, &o, "0"));
            free(b.s);
            free(o.s);
            cg_open(g);
            if (g->safe) cg_line(g, "%s", cg_fail_ix(g, AX_ERR_INDEX, SITE_PERMUTE, 0, t, tr));
            cg_line(g, "continue;");
            cg_close(g);
        }
        const char *lin = cg_linear(g, 0, t);
        Val v = cg_read_lin(g, 1, "i");
        combine(g, x->kid[0], elt, lin, v);
    }
    cg_close(g);
    cg_close(g);
}
