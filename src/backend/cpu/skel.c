/*
 * The CPU's skeletons, their common frame.  Every array operation's
 * kernels are a skeleton with holes for the scalar code (paper s.4.3;
 * shared/seeds/002_946734f7812f4e06.txt), one file each, with the same
 * names as the GPU's (src/backend/gpu): map.c (the producers), fold.c
 * (and the segmented folds), scan.c, permute.c, stencil.c, filter.c and
 * loop.c.  Every kernel is a C function over an index range [start, end)
 * that the host splits across the thread pool (docs/ARCHITECTURE.md, "The pipeline");
 * what the range counts depends on the role (cgen.h CgRole): output
 * positions, rows, (row, chunk) pairs, ...
 *
 * This file writes what they all share: the kernel's frame (its
 * arguments hoisted into typed locals, its pre_ condition and deferred
 * checks, its checked copy), scratch areas for partial results, the loops
 * over positions, the thunks, and the entry that emits one operation's
 * functions.  The element-level code (reading operands, a DELAYED one's
 * code inlined; storing results; the scalar code) is the shared
 * generator's (src/backend/cgen).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the kernel frame */

/* Declares the argument table's buffers and extents (slots from `first`)
 * and the parameters as typed locals: loads through restrict pointers and
 * loop bounds in locals are what the vectoriser needs. */
static void hoist(G *g, int first, bool outputs, bool params)
{
    const CgNode *cn = g->cn;
    g->unit_ld = 0;
    for (int s = first; s < cn->nslot; s++) {
        bool out = s < cn->nout;
        if (out && !outputs) continue;
        const Type *at = cg_slot_type(cn, s);
        bool delayed = !out && s < cn->nout + cn->nopd && cg_opd_node(cn, s - cn->nout)->op == OP_DELAYED;
        if (!delayed)
            for (int k = 0; k < at->elt->width; k++) {
                const char *T = cg_ctype(ty_leaf(at->elt, k));
                cg_line(g, "%s%s *restrict a%d_%d = (%s%s *)c->a[%d].buf[%d];", out ? "" : "const ", T, s, k,
                        out ? "" : "const ", T, s, k);
            }
        /* a rank-0 input's element (one, always in bounds), read once */
        if (!delayed && !out && at->rank == 0 && s < 64) {
            for (int k = 0; k < at->elt->width; k++) {
                ax_scalar l = ty_leaf(at->elt, k);
                cg_line(g, "const %s u%d_%d = %s;", cg_ctype(l), s, k, cg_load(g, l, s, k, "0"));
            }
            g->unit_ld |= 1ull << s;
        }
        for (int d = 0; d < at->rank; d++) cg_line(g, "const i64 s%d_%d = c->a[%d].shape[%d];", s, d, s, d);
        cg_line(g, "const i64 n%d = c->a[%d].size;", s, s);
    }
    if (!params) return;
    for (int t = 0; t < cn->nthunk; t++) {
        const Type *tt = cn->thunk[t]->type;
        for (int l = 0; l < tt->width; l++) {
            ax_scalar s = ty_leaf(tt, l);
            int i = cn->poff[t] + l;
            const char *rd = s == AX_F32 ? cg_fmt(g, "c->p[%d].f32", i)
                           : s == AX_F64 ? cg_fmt(g, "c->p[%d].f64", i)
                           : s == AX_BOOL ? cg_fmt(g, "(u8)(c->p[%d].b != 0)", i)
                           : (s >= AX_I8 && s <= AX_I64) ? cg_fmt(g, "(%s)c->p[%d].i", cg_ctype(s), i)
                                                         : cg_fmt(g, "(%s)c->p[%d].u", cg_ctype(s), i);
            cg_line(g, "const %s p%d_%d = %s;", cg_ctype(s), t, l, rd);
        }
    }
}

/* A kernel: its header and argument locals, its body and its pre_
 * condition (G.fact) are built in buffers of their own, so that
 * cpu_kernel_end can put pre_ and the deferred-check flag (G.defer) in front
 * of the body.  The checked copy of a kernel (G.chk) is static and named
 * with _chk; one that its deferred kernel never calls is not emitted. */
static Buf *new_buf(G *g)
{
    Buf *b = arena_alloc(g->ar, sizeof *b);
    if (!b) cg_fail(g, "cpu codegen: out of memory");
    return b;
}

void cpu_kernel_begin(G *g, CgRole r, int first, bool outputs)
{
    g->kmain = g->b;
    g->role = r;
    Buf *head = new_buf(g), *body = new_buf(g);
    if (!head || !body) return;
    g->b = g->khead = head;
    cg_line(g, "void axk_%d_%s%s(const AxCall *c, i64 start, i64 end)", g->cn->x->num, cg_role_name[r],
            g->chk ? "_chk" : "");
    cg_line(g, "{");
    g->ind++;
    ((CgNode *)g->cn)->role[r] = true;
    hoist(g, first, outputs, true);
    g->nfact = g->npre = g->ndefer = g->nhoist = 0;
    g->b = body;
}

void cpu_kernel_end(G *g)
{
    Buf *body = g->b, *main = g->kmain, *head = g->khead;
    if (!body || !head || body == main) return;
    g->b = main;
    bool keep = !g->chk || g->need_chk[g->role];
    bool deferred = g->defer && (g->ndefer > 0 || g->npre > 0);
    if (deferred) g->need_chk[g->role] = true;
    /* permute combines into its result, so a range cannot be rerun: when
     * the checked copy is not there yet, the host redoes the whole permute
     * checked (ax_chk_redo) */
    bool perm = g->role == R_PERM || g->role == R_PPRIV;
    if (head->oom || body->oom) cg_fail(g, "cpu codegen: out of memory");
    /* (GCC's attribute: Clang, which has no such target attribute, would
     * warn, and an exported program is compiled with either) */
    if (keep && g->narrow)
        buf_put(main, "#ifndef __clang__\n__attribute__((target(\"prefer-vector-width=256\")))\n#endif\n");
    else if (keep && g->wide)
        buf_put(main, "#if defined(__AVX512F__) && !defined(__clang__)\n"
                      "__attribute__((target(\"prefer-vector-width=512\")))\n#endif\n");
    g->narrow = g->wide = false;
    if (keep && head->s) buf_put(main, head->s);
    if (deferred && g->role == R_PERM)   /* the host's checked redo (permute.c) */
        cg_line(g, "if (start < 0) { ax_chk(c, %d, -1 - start, end); return; }", (int)g->role);
    if (keep && g->npre > 0) {
        Buf c = {0};
        for (int k = 0; k < g->npre; k++) buf_printf(&c, "%s(%s)", k ? " & " : "", g->pre[k]);
        cg_line(g, "const u8 pre_ = %s;", cg_buf_text(g, &c, "0"));
        free(c.s);
    }
    if (deferred && g->npre > 0) {
        cg_line(g, "if (__builtin_expect(!pre_, 0)) {");
        cg_line(g, "    ax_chk%s(c, %d, start, end);", perm ? "_redo" : "", (int)g->role);
        cg_line(g, "    return;");
        cg_line(g, "}");
    }
    if (deferred) cg_line(g, "u8 bad_ = 0;");
    if (keep && body->s) buf_put(main, body->s);
    if (deferred && (g->role == R_PERM || g->role == R_PPRIV)) {
        /* permute combines into its result, so a range cannot be rerun:
         * the host redoes the whole permute checked (permute.c) */
        cg_line(g, "/* a check failed: the host redoes the permute checked, reporting the first fault */");
        cg_line(g, "if (__builtin_expect(bad_, 0)) __atomic_store_n(&c->err->redo, 1, __ATOMIC_RELAXED);");
    } else if (deferred) {
        cg_line(g, "/* a check failed: rerun the range checked, to report the first fault */");
        cg_line(g, "if (__builtin_expect(bad_, 0)) ax_chk(c, %d, start, end);", (int)g->role);
    }
    free(head->s);
    free(body->s);
    g->nfact = g->npre = g->ndefer = g->nhoist = 0;
    g->ind--;
    if (keep) cg_line(g, "}");
}


/* Pointers to the leaves of m partial results of type elt in scratch area
 * `area` (c->s1 or c->s2): struct of arrays, each leaf 64-byte aligned
 * (cg_scratch_bytes). */
Val cpu_scratch(G *g, const Type *elt, const char *area)
{
    Val v = cg_val(g, elt->width);
    const char *off = cg_fresh(g, "so");
    cg_line(g, "i64 %s = 0;", off);
    for (int l = 0; l < v.n; l++) {
        const char *T = cg_ctype(ty_leaf(elt, l));
        v.v[l] = cg_fresh(g, "q");
        cg_line(g, "%s *restrict %s = (%s *)((char *)%s + %s);", T, v.v[l], T, area, off);
        cg_line(g, "%s += ax_r64(c->m * (i64)sizeof(%s));", off, T);
    }
    return v;
}


/* ------------------------------------------------------------ index loops */

/* Positions base + [0, m) in blocks of G.nlane lanes (cgen/exp.c, "While
 * loops across lanes"), for element code that has while loops: ix is the
 * index of position base, its last leaf advancing with the position. */
static void lane_blocks(G *g, const char *m, const char *base, Val ix, CpuElemFn f, void *env)
{
    const char *b = cg_fresh(g, "b"), *nl = cg_fresh(g, "nl"), *l = cg_fresh(g, "l");
    cg_line(g, "for (i64 %s = 0; %s < %s; %s += %d) {", b, b, m, b, g->nlane);
    g->ind++;
    cg_line(g, "const i64 %s = ax_min64(%d, %s - %s);", nl, g->nlane, m, b);
    cg_line(g, "for (i64 %s = 0; %s < %s; %s++) {", l, l, nl, l);
    g->ind++;
    g->lane = l;
    g->lane_n = nl;
    g->lane_arr = true;
    Val lix = cg_val(g, ix.n);
    for (int d = 0; d + 1 < ix.n; d++) lix.v[d] = ix.v[d];
    if (ix.n > 0) lix.v[ix.n - 1] = cg_local(g, AX_I64, cg_fmt(g, "%s + %s + %s", ix.v[ix.n - 1], b, l));
    g->pos = cg_fmt(g, "(%s + %s + %s)", base, b, l);
    f(g, env, lix, g->pos);
    g->lane = g->lane_n = NULL;
    g->lane_arr = false;
    cg_close(g);
    cg_close(g);
}

/* Positions i + [0, m) of one row, whose outer index is ix's (its last
 * leaf the segment's first position along the row). */
static void row_loop(G *g, int r, Val ix, const char *m, const char *i, CpuElemFn f, void *env)
{
    const char *j = cg_fresh(g, "j"), *p = cg_fresh(g, "p");
    if (g->own_out) cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 %s = 0; %s < %s; %s++) {", j, j, m, j);
    g->ind++;
    Val inner = cg_val(g, r);
    for (int d = 0; d < r - 1 && d < inner.n; d++) inner.v[d] = ix.v[d];
    const char *jj = cg_fresh(g, "x");
    cg_line(g, "const i64 %s = %s + %s, %s = %s + %s;", jj, ix.v[r - 1], j, p, i, j);
    if (inner.n == r) inner.v[r - 1] = jj;
    g->pos = p;
    f(g, env, inner, p);
    cg_close(g);
}

/* Positions [start, end) of the shape of `slot` (rank r), row-major: the
 * innermost dimension is a plain counted loop (vectorisable), the outer
 * indices advance with a carry once per row. */
void cpu_loop_ix(G *g, int slot, int r, CpuElemFn f, CpuRowFn row, void *env)
{
    if (r == 0) {
        /* one element; a loop all the same, so the body may `continue` */
        const char *i = cg_fresh(g, "i");
        cg_line(g, "for (i64 %s = start; %s < end; %s++) {", i, i, i);
        g->ind++;
        g->pos = i;
        f(g, env, cg_val(g, 0), i);
        cg_close(g);
        return;
    }
    Val ix = cg_val(g, r);
    for (int d = 0; d < ix.n; d++) {
        ix.v[d] = cg_fresh(g, "x");
        cg_line(g, "i64 %s = 0;", ix.v[d]);
    }
    cg_coords(g, "start", cg_extents(g, slot, r), ix, false);
    const char *i = cg_fresh(g, "i"), *m = cg_fresh(g, "m");
    cg_line(g, "for (i64 %s = start; %s < end;) {", i, i);
    g->ind++;
    cg_line(g, "const i64 %s = ax_min64(s%d_%d - %s, end - %s);", m, slot, r - 1, ix.v[r - 1], i);
    if (g->nlane > 0) {
        lane_blocks(g, m, i, ix, f, env);
    } else {
        /* the part of the row in [start, end) has at least one element */
        Val outer = ix;
        outer.n = r - 1;
        const char *ok = row ? row(g, env, outer, ix.v[r - 1], m, i) : NULL;
        if (ok) {
            /* the segment's loop twice: for when the row's test passed,
             * and as it is */
            cg_line(g, "if (%s) {", ok);
            g->ind++;
            g->row_ok = true;
            row_loop(g, r, ix, m, i, f, env);
            g->row_ok = false;
            g->ind--;
            cg_line(g, "} else {");
            g->ind++;
            row_loop(g, r, ix, m, i, f, env);
            cg_close(g);
        } else {
            row_loop(g, r, ix, m, i, f, env);
        }
    }
    cg_line(g, "%s += %s;", i, m);
    cg_line(g, "%s += %s;", ix.v[r - 1], m);
    /* Carry into the outer dimensions once a row is complete. */
    if (r >= 2) {
        cg_line(g, "if (%s == s%d_%d) {", ix.v[r - 1], slot, r - 1);
        g->ind++;
        cg_line(g, "%s = 0;", ix.v[r - 1]);
        int opened = 0;
        for (int d = r - 2; d >= 1; d--) {
            cg_line(g, "if (++%s == s%d_%d) {", ix.v[d], slot, d);
            g->ind++;
            opened++;
            cg_line(g, "%s = 0;", ix.v[d]);
        }
        cg_line(g, "++%s;", ix.v[0]);
        while (opened--) cg_close(g);
        cg_close(g);
    }
    cg_close(g);
}

/* Positions [start, end), linear. */
void cpu_loop_lin(G *g, CpuElemFn f, void *env)
{
    if (g->nlane > 0) return lane_blocks(g, "(end - start)", "start", cg_val(g, 0), f, env);
    const char *i = cg_fresh(g, "i");
    if (g->own_out) cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 %s = start; %s < end; %s++) {", i, i, i);
    g->ind++;
    g->pos = i;
    f(g, env, cg_val(g, 0), i);
    cg_close(g);
}

/* ------------------------------------------------------------ thunks */

static void emit_thunk(G *g, int t)
{
    const CgNode *cn = g->cn;
    const Node *e = cn->thunk[t];
    cg_line(g, "void axt_%d_%d(const AxCall *c, AxScalar *out)", cn->x->num, t);
    cg_line(g, "{");
    g->ind++;
    hoist(g, cn->nout + cn->nopd, false, false);
    g->pos = "0";
    Val v = cg_exp(g, e);
    for (int l = 0; l < v.n; l++) {
        ax_scalar s = ty_leaf(e->type, l);
        if (s == AX_F32) {
            cg_line(g, "out[%d].u = 0;", l);
            cg_line(g, "out[%d].f32 = %s;", l, v.v[l]);
        } else if (s == AX_F64) {
            cg_line(g, "out[%d].f64 = %s;", l, v.v[l]);
        } else if (s >= AX_I8 && s <= AX_I64) {
            cg_line(g, "out[%d].i = (i64)%s;", l, v.v[l]);
        } else {
            cg_line(g, "out[%d].u = (u64)%s;", l, v.v[l]);
        }
    }
    cg_close(g);
}


/* ------------------------------------------------------------ entry */

static const CgSkeletons cpu_skeletons = {
    .producer = cpu_emit_producer,
    .fold = cpu_emit_fold,
    .foldseg = cpu_emit_foldseg,
    .scan = cpu_emit_scan,
    .permute = cpu_emit_permute,
    .stencil = cpu_emit_stencil,
    .filter = cpu_emit_filter,
    .loop = cpu_emit_loop,
};

void cpu_emit_node(G *g, CgNode *cn)
{
    const Node *x = cn->x;
    buf_printf(g->b, "\n/* %d: %s */\n", x->num, op_name(x->op));
    for (int t = 0; t < cn->nthunk && !g->failed; t++) emit_thunk(g, t);
    if (g->failed) return;
    /* Safe mode: the kernels with deferred checks, then the checked
     * copies of those that deferred any (G.defer). */
    memset(g->need_chk, 0, sizeof g->need_chk);
    g->defer = g->safe;
    g->chk = false;
    cg_emit_skeleton(g, &cpu_skeletons);
    g->defer = false;
    bool any = false;
    for (int r = 0; r < R_NROLE; r++) any |= g->need_chk[r];
    if (any && !g->failed) {
        Buf *hot = g->b;
        g->b = g->cold;
        buf_printf(g->b, "\n/* %d: %s, checked */\n", x->num, op_name(x->op));
        g->chk = true;
        cg_emit_skeleton(g, &cpu_skeletons);
        g->chk = false;
        g->b = hot;
    }
}
