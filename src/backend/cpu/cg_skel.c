/*
 * Skeletons: the kernels of each array operation (paper s.4.3, "each
 * collective operation is a skeleton with holes for the scalar code";
 * shared/seeds/002_946734f7812f4e06.txt).  Every kernel is a C function
 * over an index range [start, end) that the host splits across the thread
 * pool (DESIGN.md s.2 "Runtime"); what the range counts depends on the
 * role (cg.h CgRole): output positions, rows, (row, chunk) pairs, ...
 *
 * Every consumer reads its array operands through read_lin / read_ix, which
 * load from a manifest buffer or inline a DELAYED operand's element
 * function (its linear form or its index form; thesis s.4.4), so fusion
 * can hand any consumer a delayed input.
 *
 * Reductions (thesis s.4, Accelerate's "fold" skeleton): an operator that
 * is syntactically commutative and associative (add, mul, min, max, the
 * bit and boolean and/or/xor, componentwise on tuples) is folded into
 * LANES independent accumulators, combined in lane order at the end; GCC
 * vectorises that loop without -ffast-math.  Any other operator is folded
 * strictly left to right.  Few long rows are split into chunks whose
 * partial results are combined in chunk order (so a non-commutative
 * operator stays correct); scans use three phases (chunk totals, a
 * sequential scan of the totals, chunk scans with their carry-in).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cg.h"
#include <stdlib.h>
#include <string.h>

void cg_emit_node(G *g, CgNode *cn);

/* Accumulators of the lane-parallel reduction loop: 128 bytes of the
 * smallest leaf, four AVX2 registers (four independent dependency chains
 * hide the add latency; measured 2 chains with 16 f32 lanes), but for a
 * tuple no more lanes than fit 256 bytes of accumulators in all (eight of
 * the sixteen AVX2 registers: the element code needs the rest) and no
 * fewer than one 32-byte vector of the smallest leaf.  N-body's (x, y, z)
 * f32 sums had 32 lanes, twelve vectors of accumulators that GCC spilled
 * to the stack in the loop; 16 lanes (six) keep them in registers (with
 * the identity start of fold_range: 0.95x of its kernel's time, 1 thread,
 * GCC 12, Zen 4 with AVX2).  A scalar or a pair keeps its 128 bytes. */
static int lanes_of(const Type *elt)
{
    size_t m = 8, all = 0;
    for (int l = 0; l < elt->width; l++) {
        size_t z = ax_scalar_size(ty_leaf(elt, l));
        if (z < m) m = z;
        all += z;
    }
    int lanes = (int)(128 / m), lo = (int)(32 / m);
    while (lanes > lo && (size_t)lanes * all > 256) lanes /= 2;
    return lanes;
}

/* ------------------------------------------------------------ helpers */

static const Node *opd_node(const CgNode *cn, int i) { return cn->x->kid[cn->opd_kid[i]]; }
static int opd_slot(const CgNode *cn, int i) { return cn->nout + i; }
static const Type *opd_elt(const CgNode *cn, int i) { return opd_node(cn, i)->type->elt; }

static bool is_atom(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static const char *atom(G *g, const char *e) { return is_atom(e) ? e : cg_local(g, AX_I64, e); }

/* Records a fact about variable id (G.fact), once. */
static void push_fact(G *g, int id, int slot, bool lin, ax_scalar conv, const char *pos)
{
    for (int k = 0; k < g->nfact; k++)
        if (g->fact[k].id == id) return;
    if (g->nfact >= (int)(sizeof g->fact / sizeof *g->fact)) return;
    g->fact[g->nfact].id = id;
    g->fact[g->nfact].slot = slot;
    g->fact[g->nfact].lin = lin;
    g->fact[g->nfact].conv = conv;
    g->fact[g->nfact].pos = pos;
    g->nfact++;
}

/* Every consumer applies a DELAYED operand's element functions only at
 * positions / indices inside the operand's extent (loops run over it,
 * backpermute checks first): a fact about the function's parameter. */
static void add_fact(G *g, const Node *lam, int slot, bool lin)
{
    if (lam && lam->op == OP_LAM && lam->nparam == 1 && lam->param[0])
        push_fact(g, lam->param[0]->id, slot, lin, AX_I64, NULL);
}

/* A value fact (G.fact) about the parameter of f, which is applied to the
 * elements of operand i: when i is DELAYED and its element at position p
 * is p itself, or p converted to an integer type (generate's \ix -> i32
 * (ixget 0 ix) over a vector, as linear form \p -> i32 p); pos is the
 * C expression of the position. */
static void add_value_fact(G *g, const Node *f, int i, const char *pos)
{
    const Node *y = opd_node(g->cn, i), *lam = y->op == OP_DELAYED ? y->kid[2] : NULL;
    if (!f || f->op != OP_LAM || f->nparam != 1 || !f->param[0] || !lam || lam->op != OP_LAM || lam->nparam != 1 ||
        !lam->param[0])
        return;
    const Node *b = lam->kid[0];
    if (b->op == OP_PRIM && b->a == P_CVT && b->n == 1) b = b->kid[0];
    const Type *bt = lam->kid[0]->type;
    ax_scalar t = bt->kind == TY_SCALAR ? bt->s : AX_BOOL;
    if (b->op == OP_VAR && b->id == lam->param[0]->id && t >= AX_I8 && t <= AX_U64)
        push_fact(g, f->param[0]->id, opd_slot(g->cn, i), true, t, pos);
}

/* The element of operand i at linear position pos. */
static Val read_lin(G *g, int i, const char *pos)
{
    const CgNode *cn = g->cn;
    const Node *y = opd_node(cn, i);
    pos = atom(g, pos);
    if (y->op == OP_DELAYED) {
        Val p = cg_val(g, 1);
        if (p.n) p.v[0] = pos;
        add_fact(g, y->kid[2], opd_slot(cn, i), true);
        return cg_apply(g, y->kid[2], &p, 1);
    }
    const Type *elt = y->type->elt;
    int slot = opd_slot(cn, i);
    Val r = cg_val(g, elt->width);
    for (int k = 0; k < r.n; k++) r.v[k] = cg_local(g, ty_leaf(elt, k), cg_load(g, ty_leaf(elt, k), slot, k, pos));
    return r;
}

/* Row-major position of ix within slot's shape. */
static const char *linear(G *g, int slot, Val ix)
{
    if (ix.n == 0) return "0";
    const char *acc = ix.v[0];
    for (int d = 1; d < ix.n; d++) acc = cg_fmt(g, "(%s) * s%d_%d + %s", acc, slot, d, ix.v[d]);
    return atom(g, acc);
}

/* The element of operand i at index ix (in bounds: callers check). */
static Val read_ix(G *g, int i, Val ix)
{
    const CgNode *cn = g->cn;
    const Node *y = opd_node(cn, i);
    if (y->op == OP_DELAYED) {
        add_fact(g, y->kid[1], opd_slot(cn, i), false);
        return cg_apply(g, y->kid[1], &ix, 1);
    }
    return read_lin(g, i, linear(g, opd_slot(cn, i), ix));
}

static void store(G *g, int slot, const Type *elt, const char *pos, Val v)
{
    if (slot == 0 && g->cn->epi) {
        /* the epilogue, as the result is stored (ir_epilogue) */
        const char *was = g->pos;
        g->pos = pos;
        v = cg_apply(g, g->cn->epi, &v, 1);
        g->pos = was;
        elt = cg_slot_type(g->cn, 0)->elt;
    }
    for (int k = 0; k < elt->width && k < v.n; k++) cg_line(g, "a%d_%d[%s] = %s;", slot, k, pos, v.v[k]);
}

/* dst = v, through temporaries when v reads a leaf of dst that an earlier
 * assignment would overwrite (an operator that swaps components). */
static void update(G *g, const Type *t, Val dst, Val v)
{
    bool clash = false;
    for (int k = 0; k < v.n && !clash; k++)
        for (int m = 0; m < dst.n; m++)
            if (m != k && !strcmp(v.v[k], dst.v[m])) clash = true;
    if (clash) v = cg_bind(g, t, v, "u");
    cg_assign(g, dst, v);
}

/* The value of thunk t: its parameter leaves. */
static Val param(G *g, int t, const Type *type)
{
    Val v = cg_val(g, type->width);
    for (int l = 0; l < v.n; l++) v.v[l] = cg_fmt(g, "p%d_%d", t, l);
    return v;
}

static Val apply2(G *g, const Node *f, Val a, Val b)
{
    Val args[2] = {a, b};
    return cg_apply(g, f, args, 2);
}

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
        bool delayed = !out && s < cn->nout + cn->nopd && opd_node(cn, s - cn->nout)->op == OP_DELAYED;
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
 * kernel_end can put pre_ and the deferred-check flag (G.defer) in front
 * of the body.  The checked copy of a kernel (G.chk) is static and named
 * with _chk; one that its deferred kernel never calls is not emitted. */
static Buf *new_buf(G *g)
{
    Buf *b = arena_alloc(g->ar, sizeof *b);
    if (!b) cg_fail(g, "cpu codegen: out of memory");
    return b;
}

static void kernel_begin(G *g, CgRole r, int first, bool outputs)
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
    g->nfact = g->npre = g->ndefer = 0;
    g->b = body;
}

static void kernel_end(G *g)
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
    if (keep && g->narrow) buf_put(main, "__attribute__((target(\"prefer-vector-width=256\")))\n");
    g->narrow = false;
    if (keep && head->s) buf_put(main, head->s);
    if (deferred && g->role == R_PERM)   /* the host's checked redo (emit_permute) */
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
         * the host redoes the whole permute checked (emit_permute) */
        cg_line(g, "/* a check failed: the host redoes the permute checked, reporting the first fault */");
        cg_line(g, "if (__builtin_expect(bad_, 0)) __atomic_store_n(&c->err->redo, 1, __ATOMIC_RELAXED);");
    } else if (deferred) {
        cg_line(g, "/* a check failed: rerun the range checked, to report the first fault */");
        cg_line(g, "if (__builtin_expect(bad_, 0)) ax_chk(c, %d, start, end);", (int)g->role);
    }
    free(head->s);
    free(body->s);
    g->nfact = g->npre = g->ndefer = 0;
    g->ind--;
    if (keep) cg_line(g, "}");
}

static void block_end(G *g)
{
    g->ind--;
    cg_line(g, "}");
}

/* Pointers to the leaves of m partial results of type elt in scratch area
 * `area` (c->s1 or c->s2): struct of arrays, each leaf 64-byte aligned
 * (cg_scratch_bytes). */
static Val scratch(G *g, const Type *elt, const char *area)
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

/* Local arrays of n elements, one per leaf of type t, named prefix<k>_
 * (lanes, accumulators, a stencil's neighbourhood). */
static Val leaf_arrays(G *g, const Type *t, const char *prefix, int n)
{
    Val v = cg_val(g, t->width);
    for (int k = 0; k < v.n; k++) {
        v.v[k] = cg_fresh(g, prefix);
        cg_line(g, "%s %s[%d];", cg_ctype(ty_leaf(t, k)), v.v[k], n);
    }
    return v;
}

static Val at(G *g, Val ptrs, const char *i)
{
    Val v = cg_val(g, ptrs.n);
    for (int l = 0; l < v.n; l++) v.v[l] = cg_fmt(g, "%s[%s]", ptrs.v[l], i);
    return v;
}

static void put(G *g, Val ptrs, const char *i, Val v)
{
    for (int l = 0; l < ptrs.n && l < v.n; l++) cg_line(g, "%s[%s] = %s;", ptrs.v[l], i, v.v[l]);
}

/* ------------------------------------------------------------ index loops */

typedef void (*ElemFn)(G *g, void *env, Val ix, const char *pos);

/* Positions base + [0, m) in blocks of G.nlane lanes (cg_exp.c, "While
 * loops across lanes"), for element code that has while loops: ix is the
 * index of position base, its last leaf advancing with the position. */
static void lane_blocks(G *g, const char *m, const char *base, Val ix, ElemFn f, void *env)
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
    block_end(g);
    block_end(g);
}

/* Positions [start, end) of the shape of `slot` (rank r), row-major: the
 * innermost dimension is a plain counted loop (vectorisable), the outer
 * indices advance with a carry once per row. */
static void loop_ix(G *g, int slot, int r, ElemFn f, void *env)
{
    if (r == 0) {
        /* one element; a loop all the same, so the body may `continue` */
        const char *i = cg_fresh(g, "i");
        cg_line(g, "for (i64 %s = start; %s < end; %s++) {", i, i, i);
        g->ind++;
        g->pos = i;
        f(g, env, cg_val(g, 0), i);
        block_end(g);
        return;
    }
    Val ix = cg_val(g, r);
    for (int d = 0; d < ix.n; d++) {
        ix.v[d] = cg_fresh(g, "x");
        cg_line(g, "i64 %s = 0;", ix.v[d]);
    }
    const char *q = cg_fresh(g, "t");
    cg_line(g, "i64 %s = start;", q);
    for (int d = r - 1; d >= 1; d--) {
        cg_line(g, "%s = %s %% s%d_%d;", ix.v[d], q, slot, d);
        cg_line(g, "%s /= s%d_%d;", q, slot, d);
    }
    cg_line(g, "%s = %s;", ix.v[0], q);
    const char *i = cg_fresh(g, "i"), *m = cg_fresh(g, "m"), *j = cg_fresh(g, "j"), *p = cg_fresh(g, "p");
    cg_line(g, "for (i64 %s = start; %s < end;) {", i, i);
    g->ind++;
    cg_line(g, "const i64 %s = ax_min64(s%d_%d - %s, end - %s);", m, slot, r - 1, ix.v[r - 1], i);
    if (g->nlane > 0) {
        lane_blocks(g, m, i, ix, f, env);
    } else {
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
        block_end(g);
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
        while (opened--) block_end(g);
        block_end(g);
    }
    block_end(g);
}

/* Positions [start, end), linear. */
static void loop_lin(G *g, ElemFn f, void *env)
{
    if (g->nlane > 0) return lane_blocks(g, "(end - start)", "start", cg_val(g, 0), f, env);
    const char *i = cg_fresh(g, "i");
    if (g->own_out) cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 %s = start; %s < end; %s++) {", i, i, i);
    g->ind++;
    g->pos = i;
    f(g, env, cg_val(g, 0), i);
    block_end(g);
}

/* ------------------------------------------------------------ producers */

typedef struct PEnv {
    bool lin;
} PEnv;

/* The source index of a backpermute/transform, bounds-checked in safe mode
 * (a bad index reads a zero / the delayed function at index 0). */
static Val bp_read(G *g, Val ix)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[1];
    Val six = cg_apply(g, p, &ix, 1);
    int slot = opd_slot(cn, 0);
    if (!g->safe || six.n == 0) return read_ix(g, 0, six);
    Buf t = {0};
    for (int d = 0; d < six.n; d++) buf_printf(&t, "%s((u64)%s < (u64)s%d_%d)", d ? " & " : "", six.v[d], slot, d);
    const char *ok = cg_local(g, AX_BOOL, cg_buf_text(g, &t, "0"));
    free(t.s);
    cg_guard(g, cg_fmt(g, "!%s", ok), cg_fail_ix(g, AX_ERR_INDEX, SITE_BACKPERMUTE, slot, six, six.n));
    if (opd_node(cn, 0)->op == OP_DELAYED) {
        /* the element function only at indices inside its extent */
        Val r = cg_decl(g, opd_elt(cn, 0), "r");
        cg_line(g, "if (%s) {", ok);
        g->ind++;
        cg_assign(g, r, read_ix(g, 0, six));
        block_end(g);
        return r;
    }
    const char *lin = linear(g, slot, six);
    const Type *elt = opd_elt(cn, 0);
    Val r = cg_val(g, elt->width);
    for (int k = 0; k < r.n; k++) {
        ax_scalar s = ty_leaf(elt, k);
        r.v[k] = cg_local(g, s, cg_fmt(g, "%s ? %s : 0", ok, cg_load(g, s, slot, k, lin)));
    }
    return r;
}

static void producer_elem(G *g, void *envp, Val ix, const char *pos)
{
    PEnv *env = envp;
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    Val v;
    switch (x->op) {
    case OP_GENERATE:
        add_fact(g, x->kid[1], 0, false);   /* its index is inside the result's extent */
        v = cg_apply(g, x->kid[1], &ix, 1);
        break;
    case OP_MAP:
    case OP_ZIPWITH: {
        int k = cn->nopd;
        Val *args = arena_alloc(g->ar, sizeof *args * (size_t)(k > 0 ? k : 1));
        if (!args) return cg_fail(g, "cpu codegen: out of memory");
        for (int j = 0; j < k; j++) args[j] = env->lin ? read_lin(g, j, pos) : read_ix(g, j, ix);
        v = cg_apply(g, x->kid[0], args, k);
        break;
    }
    case OP_BACKPERMUTE:
        v = bp_read(g, ix);
        break;
    case OP_TRANSFORM: {
        Val y = bp_read(g, ix);
        v = cg_apply(g, x->kid[2], &y, 1);
        break;
    }
    case OP_REPLICATE:
    case OP_SLICE: {
        const Slice *sp = x->slice;
        const Type *st = opd_node(cn, 0)->type;
        Val six = cg_val(g, st->rank);
        int r = 0, s = 0, k = 0;
        for (int d = 0; d < sp->n; d++) {
            if (!sp->fixed[d]) {
                if (s < six.n) six.v[s] = ix.v[r];
                s++, r++;
            } else {
                int t = cn->kid_thunk[1 + k++];
                if (x->op == OP_SLICE) {
                    if (s < six.n) six.v[s] = cg_fmt(g, "p%d_0", t);
                    s++;
                } else {
                    r++;
                }
            }
        }
        v = read_ix(g, 0, six);
        break;
    }
    case OP_RESHAPE:
        v = read_lin(g, 0, pos);
        break;
    default:
        cg_fail(g, "cpu codegen: %s is not a producer", op_name(x->op));
        return;
    }
    store(g, 0, elt, pos, v);
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
        if (opd_node(cn, i)->op == OP_DELAYED) return 0;
    return cg_lane_count(x->kid[0]);
}

static void emit_producer(G *g, CgRole role)
{
    PEnv env = {role == R_LIN};
    kernel_begin(g, role, 0, true);
    cg_line(g, "if (ax_stop(c, start)) return;");
    g->nlane = producer_lanes(g->cn);
    /* Each iteration writes its own element of the results, which the
     * executor allocates afresh and which no operand can alias (the
     * operands are held for the whole operation): no loop-carried memory
     * dependence, so say so.  GCC 12 does not apply `restrict` to the
     * kernel's local pointers, and cannot check aliasing at run time for
     * gathers (data-dependent reads, as fluid's advection makes). */
    g->own_out = true;
    if (role == R_LIN) loop_lin(g, producer_elem, &env);
    else loop_ix(g, 0, g->cn->x->type->rank, producer_elem, &env);
    g->own_out = false;
    g->nlane = 0;
    kernel_end(g);
}

/* ------------------------------------------------------------ reductions */

/* The operator \x y -> body is componentwise one of add, mul, min, max,
 * band, bor, bxor, and, or of x and y, in either order: commutative as
 * well as associative, so it may be applied in any grouping and order.
 * ops[k] receives leaf k's primitive (NULL: don't care). */
static bool comm_op(Prim p, ax_scalar s)
{
    switch (p) {
    case P_ADD: case P_MUL: case P_MIN: case P_MAX: return s != AX_BOOL;
    case P_BAND: case P_BOR: case P_BXOR: return s != AX_BOOL && s != AX_F32 && s != AX_F64;
    case P_AND: case P_OR: return s == AX_BOOL;
    default: return false;
    }
}

/* Is e the leaf `k` of parameter v (a scalar VAR, or a PROJ of it)? */
static bool leaf_of(const Node *e, const Node *v, int k, int w)
{
    if (w == 1) return e->op == OP_VAR && e->id == v->id;
    return e->op == OP_PROJ && e->kid[0]->op == OP_VAR && e->kid[0]->id == v->id &&
           e->kid[0]->type->kind == TY_TUPLE && ty_leaf_offset(e->kid[0]->type, e->a) == k &&
           e->type->kind == TY_SCALAR;
}

static bool comm_leaf(const Node *e, const Node *x, const Node *y, int k, int w, Prim *op)
{
    if (e->op != OP_PRIM || e->n != 2 || e->type->kind != TY_SCALAR || !comm_op((Prim)e->a, e->type->s))
        return false;
    const Node *a = e->kid[0], *b = e->kid[1];
    if (!((leaf_of(a, x, k, w) && leaf_of(b, y, k, w)) || (leaf_of(a, y, k, w) && leaf_of(b, x, k, w)))) return false;
    if (op) *op = (Prim)e->a;
    return true;
}

static bool lam_comm(const Node *f, Prim *ops)
{
    if (!f || f->op != OP_LAM || f->nparam != 2 || f->n < 1) return false;
    const Node *x = f->param[0], *y = f->param[1], *b = f->kid[0];
    int w = x->type->width;
    if (w == 1) return comm_leaf(b, x, y, 0, 1, ops);
    /* A flat tuple of scalars, component k combining the k-th leaves. */
    if (b->op != OP_TUPLE || x->type->kind != TY_TUPLE || b->n != w) return false;
    for (int k = 0; k < w; k++)
        if (!comm_leaf(b->kid[k], x, y, k, w, ops ? &ops[k] : NULL)) return false;
    return true;
}

/* Folds positions [lo, hi) (hi > lo; atoms) of operand 0 with f into fresh
 * locals: LANES accumulators when f is commutative (each the fold of one
 * residue class, combined in lane order), then the tail left to right;
 * a non-commutative f, or a short range, strictly left to right. */
/* Whether a node contains a fromLinear. */
static bool has_fromlin(const Node *e)
{
    if (!e) return false;
    if (e->op == OP_PRIM && e->a == P_FROMLIN) return true;
    for (int i = 0; i < e->n; i++)
        if (has_fromlin(e->kid[i])) return true;
    return false;
}

/* How a row skeleton (fold) reads operand 0 at position pos of its row:
 * linearly, or, for a delayed operand of rank >= 2 whose linear form goes
 * through fromLinear (a division and a remainder per dimension and
 * element: fusion.c phase 2), through the index form at (the row's outer
 * index, pos - base), which the skeleton knows without dividing. */
typedef struct RowRead {
    bool ix;
    Val outer;          /* the row's index, rank - 1 components */
    const char *base;   /* the row's first position */
} RowRead;

static RowRead row_read(G *g, const char *row, const char *base)
{
    RowRead rr = {false, cg_val(g, 0), base};
    const CgNode *cn = g->cn;
    const Node *y = opd_node(cn, 0);
    int r = y->type->rank, slot = opd_slot(cn, 0);
    if (y->op != OP_DELAYED || r < 2 || !has_fromlin(y->kid[2])) return rr;
    rr.ix = true;
    rr.outer = cg_val(g, r - 1);
    const char *q = cg_fresh(g, "t");
    cg_line(g, "i64 %s = %s;", q, row);
    for (int d = r - 2; d >= 0 && rr.outer.n == r - 1; d--) {
        rr.outer.v[d] = cg_fresh(g, "o");
        if (d > 0) cg_line(g, "const i64 %s = %s %% s%d_%d; %s /= s%d_%d;", rr.outer.v[d], q, slot, d, q, slot, d);
        else cg_line(g, "const i64 %s = %s;", rr.outer.v[d], q);
    }
    return rr;
}

static Val read_row(G *g, const RowRead *rr, const char *pos)
{
    if (!rr->ix) return read_lin(g, 0, pos);
    Val ix = cg_val(g, rr->outer.n + 1);
    if (ix.n != rr->outer.n + 1) return read_lin(g, 0, pos);
    for (int d = 0; d < rr->outer.n; d++) ix.v[d] = rr->outer.v[d];
    ix.v[rr->outer.n] = atom(g, cg_fmt(g, "%s - %s", pos, rr->base));
    return read_ix(g, 0, ix);
}

static const char *leaf_identity(G *g, Prim op, ax_scalar s);

static Val fold_range(G *g, const Node *f, const Type *elt, const char *lo, const char *hi, bool comm,
                      const RowRead *rr)
{
    Val res = cg_decl(g, elt, "r");
    const char *j = cg_fresh(g, "j");
    const int LANES = lanes_of(elt);
    Prim ops[64];
    if (comm && (elt->width > (int)(sizeof ops / sizeof *ops) || !lam_comm(f, ops))) comm = false;
    cg_line(g, "i64 %s = %s + 1;", j, lo);
    if (comm) {
        cg_line(g, "if (%s - %s >= %d) {", hi, lo, 2 * LANES);
        g->ind++;
        Val lane = leaf_arrays(g, elt, "lane", LANES);
        /* Every lane starts at the operator's identity (leaf_identity;
         * float min and max, whose identity is NaN, at the range's first
         * element, which they may take twice), and the blocked loop
         * starts at lo.  The first block peeled into the lanes instead
         * made GCC 12 unroll the blocked loop twice and spill its
         * accumulators (N-body).  The results are the same bit for bit:
         * each lane still folds its residue class from its first element. */
        Val first = cg_val(g, 0);
        const char *init[64];
        for (int k = 0; k < lane.n; k++) {
            ax_scalar s = ty_leaf(elt, k);
            bool fl = s == AX_F32 || s == AX_F64;
            init[k] = (fl && (ops[k] == P_MIN || ops[k] == P_MAX)) ? NULL : leaf_identity(g, ops[k], s);
            if (!init[k] && first.n == 0) {
                g->pos = lo;
                first = cg_bind(g, elt, read_row(g, rr, lo), "x");
            }
            if (!init[k]) init[k] = k < first.n ? first.v[k] : "0";
        }
        const char *l = cg_fresh(g, "l");
        cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
        g->ind++;
        for (int k = 0; k < lane.n; k++) cg_line(g, "%s[%s] = %s;", lane.v[k], l, init[k]);
        block_end(g);
        cg_line(g, "for (%s = %s; %s + %d <= %s; %s += %d) {", j, lo, j, LANES, hi, j, LANES);
        g->ind++;
        cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
        g->ind++;
        g->pos = cg_fmt(g, "(%s + %s)", j, l);
        Val acc = at(g, lane, l);
        Val xj = read_row(g, rr, cg_fmt(g, "%s + %s", j, l));
        update(g, elt, acc, apply2(g, f, acc, xj));
        block_end(g);
        block_end(g);
        cg_assign(g, res, at(g, lane, "0"));
        cg_line(g, "for (int %s = 1; %s < %d; %s++) {", l, l, LANES, l);
        g->ind++;
        update(g, elt, res, apply2(g, f, res, at(g, lane, l)));
        block_end(g);
        g->ind--;
        cg_line(g, "} else {");
        g->ind++;
    }
    g->pos = lo;
    cg_assign(g, res, read_row(g, rr, lo));
    if (comm) block_end(g);
    /* the tail (or the whole range) left to right.  Under the fast
     * modes' reassociation GCC vectorises this loop too, with gathers and
     * a horizontal sum per row: smvm's rows (a few to tens of elements,
     * all of them in this loop) then took 1.17-1.27x the exact mode's
     * time, 1.02-1.04x the hand-written loop's with it scalar (one
     * thread's CPU time, medians of 41, three rounds).  An empty asm keeps
     * the loop scalar, as it is in the exact mode (which it is not
     * emitted in: there it measured 2% slower); GCC 12 has no pragma that
     * says so (`GCC novector` is GCC 14's). */
    cg_line(g, "for (; %s < %s; %s++) {", j, hi, j);
    g->ind++;
    if (!g->gpu && g->fast && comm) cg_line(g, "__asm__(\"\");");
    g->pos = j;
    update(g, elt, res, apply2(g, f, res, read_row(g, rr, j)));
    block_end(g);
    return res;
}

/* Kid indices: the operator, z (-1: none), the array. */
static bool has_z(Op op)
{
    return op == OP_FOLD || op == OP_FOLDSEG || op == OP_SCANL || op == OP_SCANR || op == OP_SCANLEX || op == OP_SCANREX;
}

static Val zval(G *g, const Type *elt)
{
    return param(g, g->cn->kid_thunk[1], elt);
}

/* Opens the part kernel of a fold or scan: n, ch and nch (c->nchunk
 * chunks of c->chunk per row of n), *q the partials in scratch. */
static void part_head(G *g, const Type *elt, Val *q)
{
    kernel_begin(g, R_PART, 0, true);
    cg_line(g, "const i64 n = c->n, ch = c->chunk, nch = c->nchunk;");
    *q = scratch(g, elt, "c->s1");
}

/* Opens the part kernel's task loop from task `from`: task t is chunk k
 * of row `row`, positions [lo, hi).  Leaves the loop open. */
static RowRead part_loop(G *g, const char *from)
{
    cg_line(g, "for (i64 t = %s; t < end; t++) {", from);
    g->ind++;
    cg_line(g, "const i64 row = t / nch, k = t %% nch;");
    cg_line(g, "const i64 lo = row * n + k * ch, hi = ax_min64(lo + ch, row * n + n);");
    return row_read(g, "row", "row * n");
}

static RowRead part_begin(G *g, const Type *elt, Val *q)
{
    part_head(g, elt, q);
    return part_loop(g, "start");
}

/* ------------------------------------------------------------ folds across rows
 *
 * A fold of many rows whose element at (i, j) reads arrays at indices of
 * i alone or of j alone (N-body's all pairs: x[i] and x[j]) runs blocks
 * of LANES rows at once: one loop over j, in order, and in it a loop over
 * the block's rows that GCC vectorises, i's reads a vector (loop
 * invariant), j's a broadcast.  Each row is folded strictly left to
 * right from z, the interpreter's order, whatever the operator, so no
 * lanes are combined at the end.  This is Halide's schedule for N-body
 * (its bodies i in vectors, the loop over j inside).  The lanes along a
 * row (fold_range) stay for the rest: few long rows (chunks), a
 * block's remainder, and elements that read at (i, j) together (a
 * matrix's rows, which across rows would gather).
 * Measured on N-body, 4,096 bodies, one thread's CPU time against the
 * hand-written loop (medians of 21, three rounds each): exact mode
 * 1.00-1.04x of it along rows, 0.92-0.97x across; fast mode 0.85-0.91x
 * along, 0.76x across.  `axle bench nbody --runs 15`, 2 threads: exact
 * 0.92x the hand-written exact C at 4,096 and 0.98x at 32,768 (along
 * rows: 1.03-1.06x).  The price is a second copy of the element code in
 * the unit: N-body's fold unit takes GCC 0.17-0.19 s instead of
 * 0.13-0.16 s, and its cold compile (`axle bench --compile`) about 240 ms
 * instead of 195. */

/* Which dimensions of index parameter pid an expression depends on (a
 * bit each), through the let-bound variables in s; s->ok cleared by a
 * read at an index of both the row's dimensions and the innermost one,
 * or by what the analysis does not follow (loops, lambdas, more than
 * SEP_LETS lets). */
enum { SEP_LETS = 64 };
typedef struct Sep {
    int pid, rank, nlet;
    struct { int id; unsigned m; } let[SEP_LETS];
    bool ok;
} Sep;

static unsigned sep_dep(Sep *s, const Node *e)
{
    unsigned m = 0;
    while (e && s->ok) {
        switch (e->op) {
        case OP_LET:
            if (s->nlet == SEP_LETS || !e->kid[0] || e->kid[0]->type->kind == TY_ARRAY) {
                s->ok = false;
                return 0;
            }
            s->let[s->nlet].m = sep_dep(s, e->kid[0]);
            s->let[s->nlet++].id = e->id;
            e = e->kid[1];
            continue;
        case OP_VAR:
            if (e->id == s->pid) return m | ((1u << s->rank) - 1);
            for (int k = s->nlet - 1; k >= 0; k--)
                if (s->let[k].id == e->id) return m | s->let[k].m;
            return m;
        case OP_IXGET:
            if (e->kid[0] && e->kid[0]->op == OP_VAR && e->kid[0]->id == s->pid)
                return m | (e->a >= 0 && e->a < s->rank ? 1u << e->a : (1u << s->rank) - 1);
            break;
        case OP_INDEX: case OP_LINDEX: {
            unsigned ix = sep_dep(s, e->kid[1]), inner = 1u << (s->rank - 1);
            if ((ix & inner) && (ix & (inner - 1))) s->ok = false;
            return m | ix;
        }
        case OP_WHILE: case OP_LAM: case OP_AWHILE:
            s->ok = false;
            return 0;
        default: break;
        }
        for (int i = 0; i < e->n; i++) m |= sep_dep(s, e->kid[i]);
        return m;
    }
    return m;
}

/* Whether fold x (with z) runs across rows: its array a DELAYED of rank
 * 2 whose index form is separable (above), on the CPU, in the kernel
 * that is not a checked copy. */
static bool fold_across(const G *g, const Node *x)
{
    if (g->gpu || g->chk || x->op != OP_FOLD) return false;
    const Node *y = x->n > 2 ? x->kid[2] : NULL;
    if (!y || y->op != OP_DELAYED || y->n < 2 || y->type->rank != 2) return false;
    const Node *lam = y->kid[1];
    if (!lam || lam->op != OP_LAM || lam->nparam != 1 || !lam->param[0]) return false;
    Sep s = {.pid = lam->param[0]->id, .rank = 2, .ok = true};
    sep_dep(&s, lam->kid[0]);
    return s.ok;
}

/* The blocks of rows of a fold across rows, before the task loop: with
 * one chunk per row task t is row t, and a range [start, end) of at
 * least LANES rows is done here in blocks, the last one moved back to
 * end at end (its first rows, done already, are done again to the same
 * values).  So every row of such a range is folded in the same order,
 * whichever range it falls in, and the row loop keeps only ranges of
 * fewer rows (and chunked rows).  Returns the first task left to the
 * task loop (start stays the range's, which a failed check reruns). */
static const char *fold_rows_across(G *g, const Node *f, const Type *elt)
{
    const int LANES = lanes_of(elt);
    const char *b = cg_fresh(g, "b");
    cg_line(g, "i64 %s = start;", b);
    cg_line(g, "if (nch == 1 && end - start >= %d) {", LANES);
    g->ind++;
    cg_line(g, "for (; %s < end; %s += %d) {", b, b, LANES);
    g->ind++;
    cg_line(g, "if (%s + %d > end) %s = end - %d;", b, LANES, b, LANES);
    Val acc = leaf_arrays(g, elt, "acc", LANES);
    const char *l = cg_fresh(g, "l"), *j = cg_fresh(g, "j");
    Val z = zval(g, elt);
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
    g->ind++;
    put(g, acc, l, z);
    block_end(g);
    cg_line(g, "for (i64 %s = 0; %s < n; %s++) {", j, j, j);
    g->ind++;
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
    g->ind++;
    const char *row = cg_local(g, AX_I64, cg_fmt(g, "%s + %s", b, l));
    Val ix = cg_val(g, 2);
    if (ix.n == 2) {
        ix.v[0] = row;
        ix.v[1] = j;
    }
    g->pos = cg_fmt(g, "(%s * n + %s)", row, j);
    Val a = at(g, acc, l);
    update(g, elt, a, apply2(g, f, a, read_ix(g, 0, ix)));
    block_end(g);
    block_end(g);
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
    g->ind++;
    store(g, 0, elt, cg_fmt(g, "%s + %s", b, l), at(g, acc, l));
    block_end(g);
    block_end(g);
    block_end(g);
    return b;
}

/* fold, fold1.  part: task t is (row, chunk) over c->nchunk chunks per
 * row; with one chunk per row (many rows) it writes the row's result,
 * else the chunk's partial.  comb: per row, z and the partials in chunk
 * order (with no chunks at all, an empty row: z). */
static void emit_fold(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = x->type->elt;
    bool z = has_z(x->op);
    cn->comm = lam_comm(f, NULL);
    cn->scratch_leaves = elt->width;

    Val q;
    part_head(g, elt, &q);
    RowRead rr = part_loop(g, fold_across(g, x) ? fold_rows_across(g, f, elt) : "start");
    Val res = cg_decl(g, elt, "y");
    Val a = fold_range(g, f, elt, "lo", "hi", cn->comm, &rr);
    if (z) {
        cg_line(g, "if (nch == 1) {");
        g->ind++;
        cg_assign(g, res, apply2(g, f, zval(g, elt), a));
        g->ind--;
        cg_line(g, "} else {");
        g->ind++;
        cg_assign(g, res, a);
        block_end(g);
    } else {
        cg_assign(g, res, a);
    }
    cg_line(g, "if (nch == 1) {");
    g->ind++;
    store(g, 0, elt, "row", res);
    g->ind--;
    cg_line(g, "} else {");
    g->ind++;
    put(g, q, "t", res);
    block_end(g);
    block_end(g);
    kernel_end(g);

    kernel_begin(g, R_COMB, 0, true);
    cg_line(g, "const i64 nch = c->nchunk;");
    q = scratch(g, elt, "c->s1");
    cg_line(g, "for (i64 r = start; r < end; r++) {");
    g->ind++;
    Val acc = cg_decl(g, elt, "y");
    cg_assign(g, acc, z ? zval(g, elt) : at(g, q, "r * nch"));
    cg_line(g, "for (i64 k = %d; k < nch; k++) {", z ? 0 : 1);
    g->ind++;
    update(g, elt, acc, apply2(g, f, acc, at(g, q, "r * nch + k")));
    block_end(g);
    store(g, 0, elt, "r", acc);
    block_end(g);
    kernel_end(g);
}

static void emit_foldseg(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = x->type->elt;
    bool z = has_z(x->op);
    cn->comm = lam_comm(f, NULL);
    kernel_begin(g, R_SEG, 0, true);
    cg_line(g, "const i64 n = c->n, nseg = c->m;");
    cg_line(g, "const i64 *restrict off = (const i64 *)c->s1;");
    /* (row, segment) counted along, not divided out per segment: a
     * division costs as much as folding a short segment (a CSR row) */
    cg_line(g, "i64 row_ = start / nseg, k_ = start %% nseg;");
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 row = row_, k = k_;");
    cg_line(g, "if (++k_ == nseg) k_ = 0, row_++;");
    cg_line(g, "const i64 lo = row * n + off[k], hi = row * n + off[k + 1];");
    RowRead rr = row_read(g, "row", "row * n");
    Val res = cg_decl(g, elt, "y");
    if (z) {
        cg_assign(g, res, zval(g, elt));
        cg_line(g, "if (hi > lo) {");
        g->ind++;
        Val a = fold_range(g, f, elt, "lo", "hi", cn->comm, &rr);
        update(g, elt, res, apply2(g, f, zval(g, elt), a));
        block_end(g);
    } else {
        cg_assign(g, res, fold_range(g, f, elt, "lo", "hi", cn->comm, &rr));
    }
    store(g, 0, elt, "t", res);
    block_end(g);
    kernel_end(g);

    /* mat: a DELAYED segment vector, materialised as i64 for the host */
    if (opd_node(cn, 1)->op == OP_DELAYED) {
        kernel_begin(g, R_MAT, 0, true);
        cg_line(g, "i64 *restrict o = (i64 *)c->s2;");
        cg_line(g, "for (i64 i = start; i < end; i++) {");
        g->ind++;
        g->pos = "i";
        Val v = read_lin(g, 1, "i");
        if (v.n == 1) cg_line(g, "o[i] = (i64)%s;", v.v[0]);
        block_end(g);
        kernel_end(g);
    }
}

/* The six scans (interp.c op_scan for the meaning of each).  scan: task t
 * is (row, chunk); with one chunk per row (many rows) each row is one
 * sequential scan; with several, part and carry run first (three phases). */
/* The variables of v, comma-separated. */
static const char *red_vars(G *g, Val v)
{
    const char *s = "";
    for (int k = 0; k < v.n; k++) s = cg_fmt(g, "%s%s%s", s, k ? ", " : "", v.v[k]);
    return s;
}

/* The reduction clauses ("reduction(inscan, +: y1_) ...") under which a
 * scan with operator f and accumulator leaves acc may run as an OpenMP
 * simd scan, or NULL: each leaf a +, * (any type), min, max, &, |, ^ (integers:
 * float min/max differ from C's on NaN and signed zeros), && or || (bool). */
static const char *simd_scan_clause(G *g, const Node *f, Val acc)
{
    Prim ops[64];
    const Type *t = f->param[0]->type;
    if (t->width > (int)(sizeof ops / sizeof *ops) || t->width != acc.n || !lam_comm(f, ops)) return NULL;
    const char *r = "";
    for (int k = 0; k < acc.n; k++) {
        ax_scalar s = ty_leaf(t, k);
        bool fl = s == AX_F32 || s == AX_F64;
        const char *id = NULL;
        switch (ops[k]) {
        case P_ADD: id = "+"; break;
        case P_MUL: id = "*"; break;
        case P_MIN: id = fl ? NULL : "min"; break;
        case P_MAX: id = fl ? NULL : "max"; break;
        case P_BAND: id = "&"; break;
        case P_BOR: id = "|"; break;
        case P_BXOR: id = "^"; break;
        case P_AND: id = "&&"; break;
        case P_OR: id = "||"; break;
        default: break;
        }
        if (!id) return NULL;
        r = cg_fmt(g, "%s%sreduction(inscan, %s: %s)", r, k ? " " : "", id, acc.v[k]);
    }
    return r;
}

/* Does reading operand 0 (a DELAYED one) defer a check in this kernel?
 * Its code is emitted once aside to find out.  The scan loop's flag bad_
 * joins the scan clause only then: a u8 flag beside the scan's own
 * variable makes GCC's cost model refuse the loop (radix sort's i32
 * counts stayed scalar). */
static bool defers_checks(G *g)
{
    Buf *b = g->b, aside = {0};
    int nd = g->ndefer;
    g->b = &aside;
    g->pos = "(rb + jv)";
    (void)read_lin(g, 0, "rb + jv");
    bool r = g->ndefer > nd;
    g->ndefer = nd;
    g->b = b;
    free(aside.s);
    return r;
}

static void emit_scan(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    Op op = x->op;
    bool left = op == OP_SCANL || op == OP_SCANL1 || op == OP_SCANLEX;
    bool z = has_z(op), ex = op == OP_SCANLEX || op == OP_SCANREX, incl_z = z && !ex;
    const Type *elt = (ex ? x->type->elts[0] : x->type)->elt;
    cn->comm = lam_comm(f, NULL);
    cn->scratch_leaves = elt->width;
    const char *ext = incl_z ? "(n + 1)" : "n";

    /* part: chunk totals (any grouping: f is associative) */
    Val q;
    RowRead rr = part_begin(g, elt, &q);
    put(g, q, "t", fold_range(g, f, elt, "lo", "hi", cn->comm, &rr));
    block_end(g);
    kernel_end(g);

    /* carry: per row, sequentially, the value entering each chunk */
    kernel_begin(g, R_CARRY, 0, true);
    cg_line(g, "const i64 nch = c->nchunk;");
    q = scratch(g, elt, "c->s1");
    Val cy = scratch(g, elt, "c->s2");
    cg_line(g, "for (i64 r = start; r < end; r++) {");
    g->ind++;
    cg_line(g, "const i64 base = r * nch;");
    Val acc = cg_decl(g, elt, "y");
    if (left) {
        cg_assign(g, acc, z ? zval(g, elt) : at(g, q, "base"));
        cg_line(g, "for (i64 k = %d; k < nch; k++) {", z ? 0 : 1);
        g->ind++;
        put(g, cy, "base + k", acc);
        update(g, elt, acc, apply2(g, f, acc, at(g, q, "base + k")));
        block_end(g);
    } else {
        cg_assign(g, acc, z ? zval(g, elt) : at(g, q, "base + nch - 1"));
        cg_line(g, "for (i64 k = nch - %d; k >= 0; k--) {", z ? 1 : 2);
        g->ind++;
        put(g, cy, "base + k", acc);
        update(g, elt, acc, apply2(g, f, at(g, q, "base + k"), acc));
        block_end(g);
    }
    if (ex) store(g, 1, elt, "r", acc);
    block_end(g);
    kernel_end(g);

    /* scan: each chunk from its carry-in */
    kernel_begin(g, R_SCAN, 0, true);
    cg_line(g, "const i64 n = c->n, ch = c->chunk, nch = c->nchunk;");
    cy = scratch(g, elt, "c->s2");
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 row = t / nch, k = t %% nch;");
    cg_line(g, "const i64 rb = row * n, ob = row * %s, lo = k * ch, hi = ax_min64(lo + ch, n);", ext);
    /* Each chunk scans its own elements from its first one and combines
     * the carry into every stored value (rather than starting from the
     * carry): the running value stays the chunk's own, which keeps float
     * sums as accurate as a blocked hand-written scan; the carry stays on
     * the outer side, so the order of a non-commutative operator is kept.
     * A right scan is the mirror image: `first`/`next` walk from hi - 1
     * down, and the outer (earlier in scan order) operand goes right. */
    const char *first = left ? "lo" : "hi - 1", *next = left ? "lo + 1" : "hi - 2";
    const char *nocarry = left ? "k == 0" : "k == nch - 1";
    const char *zpos = left ? "ob" : "ob + n";
    acc = cg_decl(g, elt, "y");
    Val cv = cg_decl(g, elt, "cv");
    cg_line(g, "u8 hc = 0;");
    cg_line(g, "i64 j = %s;", first);
    cg_line(g, "if (%s) {", nocarry);
    g->ind++;
    if (z) {
        cg_assign(g, acc, zval(g, elt));
        if (incl_z) store(g, 0, elt, zpos, acc);
    } else {
        g->pos = cg_fmt(g, "(rb + %s)", first);
        cg_assign(g, acc, read_lin(g, 0, cg_fmt(g, "rb + %s", first)));
        store(g, 0, elt, cg_fmt(g, "ob + %s", first), acc);
        cg_line(g, "j = %s;", next);
    }
    g->ind--;
    cg_line(g, "} else {");
    g->ind++;
    cg_line(g, "hc = 1;");
    cg_assign(g, cv, at(g, cy, "t"));
    if (ex) store(g, 0, elt, cg_fmt(g, "ob + %s", first), cv);
    g->pos = cg_fmt(g, "(rb + %s)", first);
    cg_assign(g, acc, read_lin(g, 0, cg_fmt(g, "rb + %s", first)));
    if (!ex) {
        const char *at0 = left && incl_z ? cg_fmt(g, "ob + %s + 1", first) : cg_fmt(g, "ob + %s", first);
        store(g, 0, elt, at0, left ? apply2(g, f, cv, acc) : apply2(g, f, acc, cv));
    }
    cg_line(g, "j = %s;", next);
    block_end(g);
    /* The loop twice, with and without a carry: no test per element.  An
     * operator that is an OpenMP reduction on every leaf scans under
     * `omp simd reduction(inscan)`, which GCC
     * vectorises (log-step prefix sums in registers); -fopenmp-simd
     * honours it without the OpenMP runtime. */
    /* A delayed operand's code may check indices: in a kernel with
     * deferred checks the flag bad_ joins the scan as an inscan `|`
     * (OpenMP allows no other reduction beside inscan ones); its checked
     * copy, which calls ax_fail, keeps the plain loop. */
    bool delayed = opd_node(cn, 0)->op == OP_DELAYED;
    const char *red = delayed && g->safe && !g->defer ? NULL : simd_scan_clause(g, f, acc);
    const char *rvars = red ? red_vars(g, acc) : NULL;
    if (red && delayed && g->defer && defers_checks(g)) {
        red = cg_fmt(g, "%s reduction(inscan, |: bad_)", red);
        rvars = cg_fmt(g, "%s, bad_", rvars);
        g->ndefer++;   /* declares bad_ */
    }
    const char *out = !ex && left && incl_z ? "ob + jv + 1" : "ob + jv";
    for (int carry = 1; carry >= 0; carry--) {
        cg_line(g, carry ? "if (hc) {" : "} else {");
        g->ind++;
        if (red) cg_line(g, "#pragma omp simd %s", red);
        cg_line(g, left ? "for (i64 jv = j; jv < hi; jv++) {" : "for (i64 jv = j; jv >= lo; jv--) {");
        g->ind++;
        g->pos = "(rb + jv)";
        /* the stored value: before (scanl', scanr') or after x[j]; with
         * the simd clause, the scan directive separates the two phases */
        for (int pass = 0; pass < 2; pass++) {
            if (red) {
                cg_line(g, "{");   /* each phase a structured block */
                g->ind++;
            }
            if (pass == (ex ? 1 : 0)) {
                Val xj = read_lin(g, 0, "rb + jv");
                update(g, elt, acc, left ? apply2(g, f, acc, xj) : apply2(g, f, xj, acc));
            } else {
                store(g, 0, elt, out, !carry ? acc : left ? apply2(g, f, cv, acc) : apply2(g, f, acc, cv));
            }
            if (red) block_end(g);
            if (red && pass == 0) cg_line(g, "#pragma omp scan %s(%s)", ex ? "exclusive" : "inclusive", rvars);
        }
        block_end(g);
        g->ind--;
    }
    cg_line(g, "}");
    if (ex) {
        /* one chunk per row: the row's total is here (else: carry's) */
        cg_line(g, "if (nch == 1) {");
        g->ind++;
        store(g, 1, elt, "row", acc);
        block_end(g);
    }
    block_end(g);
    kernel_end(g);
}

/* ------------------------------------------------------------ permute */

/* Combines v into output element lin: an atomic read-modify-write per
 * leaf when the combination is componentwise (a fetch-op for integer
 * add/and/or/xor, else a compare-and-swap loop on the element's bits, which
 * works for any function of 1-8 byte leaves, floats included), striped
 * spinlocks otherwise.  comb(new, old): kid[0]'s first parameter is the
 * new value. */
/* The C expression of a commutative primitive (comm_op) on two values of
 * scalar type s; NULL for another primitive. */
static const char *leaf_op(G *g, Prim op, ax_scalar s, const char *a, const char *b)
{
    const char *T = cg_ctype(s);
    bool fl = s == AX_F32 || s == AX_F64;
    switch (op) {
    case P_ADD: case P_MUL:
        if (fl) return cg_fmt(g, "%s %s %s", a, op == P_ADD ? "+" : "*", b);
        /* integers wrap: in unsigned arithmetic, as C allows */
        return cg_fmt(g, "(%s)((%s)%s %s (%s)%s)", T, sc_bits(s) > 32 ? "u64" : "u32", a, op == P_ADD ? "+" : "*",
                      sc_bits(s) > 32 ? "u64" : "u32", b);
    case P_MIN: return fl ? cg_fmt(g, "ax_min_%s(%s, %s)", T, a, b) : cg_fmt(g, "%s <= %s ? %s : %s", a, b, a, b);
    case P_MAX: return fl ? cg_fmt(g, "ax_max_%s(%s, %s)", T, a, b) : cg_fmt(g, "%s >= %s ? %s : %s", a, b, a, b);
    case P_BAND: case P_AND: return cg_fmt(g, "(%s)(%s & %s)", T, a, b);
    case P_BOR: case P_OR: return cg_fmt(g, "(%s)(%s | %s)", T, a, b);
    case P_BXOR: return cg_fmt(g, "(%s)(%s ^ %s)", T, a, b);
    default: return NULL;
    }
}

/* The identity of a commutative primitive on type s, as a C expression:
 * op(identity, x) == x for every x, bit for bit (float add: -0, since
 * -0 + +0 is +0; float min and max: NaN, which loses to every value). */
static const char *leaf_identity(G *g, Prim op, ax_scalar s)
{
    const char *T = cg_ctype(s);
    bool fl = s == AX_F32 || s == AX_F64, sg = s >= AX_I8 && s <= AX_I64;
    int bits = sc_bits(s);
    switch (op) {
    case P_ADD: return fl ? cg_fmt(g, "(%s)-0.0", T) : cg_fmt(g, "(%s)0", T);
    case P_MUL: return cg_fmt(g, "(%s)1", T);
    case P_MIN: case P_MAX:
        if (fl) return cg_fmt(g, "(%s)__builtin_nan(\"\")", T);
        if (!sg) return op == P_MIN ? cg_fmt(g, "(%s)~(%s)0", T, T) : cg_fmt(g, "(%s)0", T);
        return op == P_MIN ? cg_fmt(g, "(%s)(((u64)1 << %d) - 1)", T, bits - 1)
                           : cg_fmt(g, "(%s)(-(i64)(((u64)1 << %d) - 1) - 1)", T, bits - 1);
    case P_BAND: return cg_fmt(g, "(%s)~(%s)0", T, T);
    case P_AND: return "(u8)1";
    case P_BOR: case P_BXOR: case P_OR: return cg_fmt(g, "(%s)0", T);
    default: return NULL;
    }
}

/* Task `task`'s private copy of the result (emit_permute's layout): the
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
            cg_line(g, "for (i64 i = 0; i < n0; i++) axq_%d[i] = %s;", k, leaf_identity(g, ops[k], sk));
        else
            cg_line(g, "for (i64 i = start; i < end; i++) a0_%d[i] = %s;", k,
                    leaf_op(g, ops[k], sk, cg_fmt(g, "axq_%d[i]", k), cg_fmt(g, "a0_%d[i]", k)));
    }
}

/* The leaves' primitives of a permute combination that private copies
 * can compute (every leaf a commutative primitive with an identity), in
 * ops; false otherwise. */
static bool priv_ops(const Node *comb, const Type *elt, Prim *ops)
{
    int w = elt->width;
    if (w > 64 || !lam_comm(comb, ops)) return false;
    for (int k = 0; k < w; k++)
        if (!comm_op(ops[k], ty_leaf(elt, k))) return false;
    return true;
}

static void combine(G *g, const Node *comb, const Type *elt, const char *lin, Val v)
{
    int w = elt->width;
    const Node *pn = comb->param[0], *po = comb->param[1], *body = comb->kid[0];
    Prim ops[64];
    bool percomp = w <= 64 && lam_comm(comb, ops);
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
                if (comm_leaf(body, pn, po, 0, 1, &o1)) op = o1;
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
                nv = apply2(g, comb, cg_slice(v, k, 1), o);
            } else {
                /* componentwise: leaf k of the result from leaf k alone */
                const char *e = leaf_op(g, op, s, v.v[k], old);
                if (!e) return cg_fail(g, "cpu codegen: permute combination");
                nv = cg_val(g, 1);
                if (nv.n) nv.v[0] = cg_local(g, s, e);
            }
            if (nv.n == 1)
                cg_line(g, "if (__atomic_compare_exchange_n(%s, &%s, (%s)%s(%s), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;",
                        pp, ob, U, tobits, nv.v[0]);
            block_end(g);
            block_end(g);
        }
        return;
    }
    /* Several leaves combined together: a lock per stripe of the output. */
    const char *lk = cg_fresh(g, "lk");
    cg_line(g, "i32 *%s = (i32 *)c->s1 + (%s & 1023);", lk, lin);
    cg_line(g, "ax_lock(%s);", lk);
    Val old = cg_val(g, w);
    for (int k = 0; k < old.n; k++) old.v[k] = cg_local(g, ty_leaf(elt, k), cg_fmt(g, "a0_%d[%s]", k, lin));
    Val nv = apply2(g, comb, v, old);
    store(g, 0, elt, lin, nv);
    cg_line(g, "ax_unlock(%s);", lk);
}

static void permute_elem(G *g, void *envp, Val ix, const char *pos)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    /* the index function runs at the source's indices (radix sort's reads
     * of its flags and counts at the same index: unchecked under pre_) */
    add_fact(g, x->kid[2], opd_slot(cn, 1), false);
    Val t = cg_apply(g, x->kid[2], &ix, 1);
    int tr = x->type->rank;
    if (t.n != tr) return;
    if (tr >= 1) {
        /* The ignore test (every component -1) inside the bounds test's
         * failure branch: such an index is never in bounds, and the
         * element loop then tests once, as a hand-written histogram does
         * (measured: 1 thread, 10M elements, the loop 1.13x the C
         * baseline's time with both tests on the path). */
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
        block_end(g);
    }
    const char *lin = linear(g, 0, t);
    Val v = read_lin(g, 1, pos);
    const Prim *priv = envp;
    if (!priv) return combine(g, x->kid[0], elt, lin, v);
    /* into this task's private copy (emit_permute): plain code */
    for (int k = 0; k < elt->width && k < v.n; k++) {
        const char *q = cg_fmt(g, "axq_%d[%s]", k, lin);
        cg_line(g, "%s = %s;", q, leaf_op(g, priv[k], ty_leaf(elt, k), v.v[k], q));
    }
}

static void copy_elem(G *g, void *env, Val ix, const char *pos)
{
    store(g, 0, g->cn->x->type->elt, pos, read_lin(g, 0, pos));
}

static void emit_permute(G *g)
{
    const CgNode *cn = g->cn;
    kernel_begin(g, R_DFLT, 0, true);
    loop_lin(g, copy_elem, NULL);
    kernel_end(g);

    /* The combining kernel.  Other kernels whose deferred check fired
     * rerun their range in their checked copy; this one has combined its
     * elements into the result already (some with a guarded read's
     * stand-in value: a deferred check can fire where the checked code
     * finds no fault), and other ranges combined into the same places.
     * So it only sets err->redo, and the host starts the permute over from
     * the defaults with the checked copy, which the deferred kernel runs
     * when called with start encoded as -1 - start (random seeds 24539
     * and 29228 had ranges combined twice, or with stand-in values). */
    kernel_begin(g, R_PERM, 0, true);
    cg_line(g, "if (ax_stop(c, start)) return;");
    loop_ix(g, opd_slot(cn, 1), opd_node(cn, 1)->type->rank, permute_elem, NULL);
    kernel_end(g);

    /* Private copies (a histogram: a small target, many sources; Futhark's
     * reduce-by-index keeps per-thread sub-histograms alike): when every
     * leaf combines by a commutative primitive with an identity, each task
     * (one per thread, a contiguous range of the source) combines into its
     * own copy of the target, filled with the identity, with plain loads
     * and stores, and a second kernel combines the copies into the result
     * in task order.  The host picks this or the atomics above by the
     * target's size (cpu.c ex_permute).  Layout of c->s2: per task, c->m
     * bytes; in them leaf k's n0 values at a 64-byte aligned offset. */
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    Prim *ops = arena_alloc(g->ar, sizeof *ops * 64);
    if (!ops || !priv_ops(x->kid[0], elt, ops)) return;
    kernel_begin(g, R_PPRIV, 0, true);
    cg_line(g, "if (ax_stop(c, start)) return;");
    private_copies(g, elt, ops, "(start / c->chunk)", true);
    loop_ix(g, opd_slot(cn, 1), opd_node(cn, 1)->type->rank, permute_elem, ops);
    kernel_end(g);

    /* the copies into the result, over the result's positions */
    kernel_begin(g, R_PMERGE, 0, true);
    cg_line(g, "for (i64 t = 0; t < c->nchunk; t++) {");
    g->ind++;
    private_copies(g, elt, ops, "t", false);
    block_end(g);
    kernel_end(g);
}

/* ------------------------------------------------------------ stencils */

/* Room for a stencil function's arguments: every neighbour of every
 * input (sten_args, sten_args_loop); NULL (codegen failed) when memory
 * runs out. */
static Val *sten_arg_slots(G *g)
{
    const Stencil *st = g->cn->x->sten;
    int np = 0;
    for (int q = 0; q < st->ninputs; q++) {
        int cnt = 1;
        for (int d = 0; d < st->rank; d++) cnt *= st->size[q][d];
        np += cnt;
    }
    Val *args = arena_alloc(g->ar, sizeof *args * (size_t)(np > 0 ? np : 1));
    if (!args) cg_fail(g, "cpu codegen: out of memory");
    return args;
}

/* The neighbourhood of every input as function arguments: interior (no
 * bounds tests: every neighbour is inside) or border (each coordinate
 * through the boundary rule, exactly interp.c's boundary()). */
static Val *sten_args(G *g, bool interior, Val ix, const char *j, int *nargs)
{
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    int r = st->rank, nin = st->ninputs;
    Val *args = sten_arg_slots(g);
    if (!args) return NULL;
    int a = 0;
    for (int q = 0; q < nin; q++) {
        int slot = opd_slot(cn, q);
        const Type *elt = opd_elt(cn, q);
        const Node *y = opd_node(cn, q);
        bool delayed = y->op == OP_DELAYED;
        int h[AX_MAX_RANK], cnt = 1;
        for (int d = 0; d < r; d++) {
            h[d] = st->size[q][d] / 2;
            cnt *= st->size[q][d];
        }
        /* border: the mapped coordinate per dimension and offset */
        const char *crd[AX_MAX_RANK][256];
        if (!interior || delayed) {
            for (int d = 0; d < r; d++)
                for (int o = -h[d]; o <= h[d]; o++) {
                    const char *c = d == r - 1 ? cg_fmt(g, "%s + %d", j, o) : cg_fmt(g, "%s + %d", ix.v[d], o);
                    crd[d][o + h[d]] = interior ? cg_local(g, AX_I64, c)
                                                : cg_local(g, AX_I64, cg_fmt(g, "ax_b%d(%s, s%d_%d)", (int)st->bound[q], c, slot, d));
                }
        }
        Val cval = {0};
        if (st->bound[q] == AX_CONSTANT) cval = param(g, cn->kid_thunk[st->constkid[q]], elt);
        int pos[AX_MAX_RANK] = {0};
        for (int k = 0; k < cnt; k++) {
            if (delayed) {
                Val nix = cg_val(g, r);
                for (int d = 0; d < nix.n; d++) nix.v[d] = crd[d][pos[d]];
                if (!interior && st->bound[q] == AX_CONSTANT) {
                    Buf b = {0};
                    for (int d = 0; d < r; d++) buf_printf(&b, "%s%s >= 0", d ? " & " : "", crd[d][pos[d]]);
                    const char *ok = cg_local(g, AX_BOOL, cg_buf_text(g, &b, "0"));
                    free(b.s);
                    for (int d = 0; d < nix.n; d++) nix.v[d] = cg_local(g, AX_I64, cg_fmt(g, "%s ? %s : 0", ok, nix.v[d]));
                    Val v = read_ix(g, q, nix);
                    Val s = cg_val(g, v.n);
                    for (int l = 0; l < s.n; l++)
                        s.v[l] = cg_local(g, ty_leaf(elt, l), cg_fmt(g, "%s ? %s : %s", ok, v.v[l], cval.v[l]));
                    args[a++] = s;
                } else {
                    args[a++] = read_ix(g, q, nix);
                }
            } else if (interior) {
                args[a++] = read_lin(g, q, cg_fmt(g, "rb%d + %s + o%d_%d", q, j, q, k));
            } else {
                const char *lin = crd[0][pos[0]];
                for (int d = 1; d < r; d++) lin = cg_fmt(g, "(%s) * s%d_%d + %s", lin, slot, d, crd[d][pos[d]]);
                lin = atom(g, lin);
                if (st->bound[q] == AX_CONSTANT) {
                    Buf b = {0};
                    for (int d = 0; d < r; d++) buf_printf(&b, "%s%s >= 0", d ? " & " : "", crd[d][pos[d]]);
                    const char *ok = cg_local(g, AX_BOOL, cg_buf_text(g, &b, "0"));
                    free(b.s);
                    Val s = cg_val(g, elt->width);
                    for (int l = 0; l < s.n; l++)
                        s.v[l] = cg_local(g, ty_leaf(elt, l),
                                          cg_fmt(g, "%s ? %s : %s", ok, cg_load(g, ty_leaf(elt, l), slot, l, lin), cval.v[l]));
                    args[a++] = s;
                } else {
                    args[a++] = read_lin(g, q, lin);
                }
            }
            for (int d = r - 1; d >= 0; d--) {
                if (++pos[d] < st->size[q][d]) break;
                pos[d] = 0;
            }
        }
    }
    *nargs = a;
    return args;
}

/* Stencils of more neighbours than this (per input) read their
 * neighbourhood in loops into local arrays, which the function's
 * parameters then name, instead of one unrolled read per neighbour: a
 * 51x51 stencil unrolled was 848 KB of C that GCC did not compile in ten
 * minutes.  Up to 9x9 the unrolled reads stay (they vectorise best, and
 * the benchmarks' stencils are 3x3 and 5x5). */
enum { STENCIL_UNROLL_MAX = 81 };

static bool sten_looped(const Stencil *st)
{
    for (int q = 0; q < st->ninputs; q++) {
        int cnt = 1;
        for (int d = 0; d < st->rank; d++) cnt *= st->size[q][d];
        if (cnt > STENCIL_UNROLL_MAX) return true;
    }
    return false;
}

/* sten_args in loop form: for each input, a loop nest over the
 * neighbourhood (row-major, as the function receives it) reads every
 * neighbour, through the boundary rule on the border, into one local
 * array per leaf; argument k names element k of those arrays.  The code
 * is the size of one neighbour's read, whatever the neighbourhood. */
static Val *sten_args_loop(G *g, bool interior, Val ix, const char *j, int *nargs)
{
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    int r = st->rank, nin = st->ninputs;
    Val *args = sten_arg_slots(g);
    if (!args) return NULL;
    int a = 0;
    for (int q = 0; q < nin; q++) {
        int slot = opd_slot(cn, q);
        const Type *elt = opd_elt(cn, q);
        const Node *y = opd_node(cn, q);
        bool delayed = y->op == OP_DELAYED;
        int cnt = 1;
        for (int d = 0; d < r; d++) cnt *= st->size[q][d];
        Val nb = leaf_arrays(g, elt, "nb", cnt);
        Val cval = {0};
        if (st->bound[q] == AX_CONSTANT) cval = param(g, cn->kid_thunk[st->constkid[q]], elt);
        const char *k = cg_fresh(g, "k");
        cg_line(g, "i64 %s = 0;", k);
        const char *e[AX_MAX_RANK] = {0};
        for (int d = 0; d < r; d++) {
            int h = st->size[q][d] / 2;
            e[d] = cg_fresh(g, "e");
            cg_line(g, "for (i64 %s = -%d; %s <= %d; %s++) {", e[d], h, e[d], h, e[d]);
            g->ind++;
        }
        /* this neighbour's coordinates (border: through the boundary rule) */
        const char *crd[AX_MAX_RANK] = {0};
        for (int d = 0; d < r; d++) {
            const char *c = cg_fmt(g, "%s + %s", d == r - 1 ? j : ix.v[d], e[d]);
            crd[d] = interior ? cg_local(g, AX_I64, c)
                              : cg_local(g, AX_I64, cg_fmt(g, "ax_b%d(%s, s%d_%d)", (int)st->bound[q], c, slot, d));
        }
        Val v;
        const char *ok = NULL;
        if (!interior && st->bound[q] == AX_CONSTANT) {
            Buf b = {0};
            for (int d = 0; d < r; d++) buf_printf(&b, "%s%s >= 0", d ? " & " : "", crd[d]);
            ok = cg_local(g, AX_BOOL, cg_buf_text(g, &b, "0"));
            free(b.s);
            for (int d = 0; d < r; d++) crd[d] = cg_local(g, AX_I64, cg_fmt(g, "%s ? %s : 0", ok, crd[d]));
        }
        if (delayed) {
            Val nix = cg_val(g, r);
            for (int d = 0; d < nix.n; d++) nix.v[d] = crd[d];
            v = read_ix(g, q, nix);
        } else if (interior) {
            const char *off = e[0];
            for (int d = 1; d < r; d++) off = cg_fmt(g, "(%s) * s%d_%d + %s", off, slot, d, e[d]);
            v = read_lin(g, q, cg_fmt(g, "rb%d + %s + %s", q, j, off));
        } else {
            const char *lin = crd[0];
            for (int d = 1; d < r; d++) lin = cg_fmt(g, "(%s) * s%d_%d + %s", lin, slot, d, crd[d]);
            v = read_lin(g, q, lin);
        }
        for (int l = 0; l < nb.n && l < v.n; l++)
            cg_line(g, "%s[%s] = %s;", nb.v[l], k, ok ? cg_fmt(g, "%s ? %s : %s", ok, v.v[l], cval.v[l]) : v.v[l]);
        cg_line(g, "%s++;", k);
        for (int d = 0; d < r; d++) block_end(g);
        for (int i = 0; i < cnt; i++) {
            Val s1 = cg_val(g, nb.n);
            for (int l = 0; l < s1.n; l++) s1.v[l] = cg_fmt(g, "%s[%d]", nb.v[l], i);
            args[a++] = s1;
        }
    }
    *nargs = a;
    return args;
}

static void emit_stencil(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Stencil *st = x->sten;
    int r = st->rank, nin = st->ninputs;
    const Type *elt = x->type->elt;
    if (r < 1 || r > AX_MAX_RANK || nin < 1 || nin > 2 || cn->nopd != nin) return cg_fail(g, "cpu codegen: bad stencil");
    for (int q = 0; q < nin; q++)
        for (int d = 0; d < r; d++)
            if (st->size[q][d] > 255) return cg_fail(g, "cpu codegen: stencil too wide");
    kernel_begin(g, R_MAIN, 0, true);
    /* The interior [lo_d, hi_d): every neighbour of every input inside. */
    for (int d = 0; d < r; d++) {
        const char *lo = "0", *hi = cg_fmt(g, "s0_%d", d);
        for (int q = 0; q < nin; q++) {
            int h = st->size[q][d] / 2;
            lo = cg_fmt(g, "ax_max64(%s, %d)", lo, h);
            hi = cg_fmt(g, "ax_min64(%s, s%d_%d - %d)", hi, opd_slot(cn, q), d, h);
        }
        cg_line(g, "const i64 lo%d = %s, hi%d = %s;", d, lo, d, hi);
    }
    bool looped = sten_looped(st);
    /* Linear offsets of the neighbours in each input (interior reads). */
    for (int q = 0; q < nin && !looped; q++) {
        int slot = opd_slot(cn, q), cnt = 1;
        for (int d = 0; d < r; d++) cnt *= st->size[q][d];
        int pos[AX_MAX_RANK] = {0};
        for (int k = 0; k < cnt; k++) {
            Buf b = {0};
            buf_put(&b, "0");
            for (int d = 0; d < r; d++) {
                int o = pos[d] - st->size[q][d] / 2;
                if (!o) continue;
                buf_printf(&b, " + (%d)", o);
                for (int e = d + 1; e < r; e++) buf_printf(&b, " * s%d_%d", slot, e);
            }
            cg_line(g, "const i64 o%d_%d = %s;", q, k, cg_buf_text(g, &b, "0"));
            free(b.s);
            for (int d = r - 1; d >= 0; d--) {
                if (++pos[d] < st->size[q][d]) break;
                pos[d] = 0;
            }
        }
    }
    /* Positions as in loop_ix, one row segment [j0, j1) at a time. */
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
    for (int q = 0; q < nin; q++) {
        int slot = opd_slot(cn, q);
        const char *rb = "0";
        for (int d = 0; d < r - 1; d++) rb = d ? cg_fmt(g, "(%s) * s%d_%d + x%d", rb, slot, d, d) : "x0";
        if (r > 1) rb = cg_fmt(g, "(%s) * s%d_%d", rb, slot, r - 1);
        cg_line(g, "const i64 rb%d = %s;", q, rb);
    }
    /* interior: each iteration writes its own element of the fresh
     * result (as emit_producer's loops: GCC ivdep, without which a
     * stencil over pairs needs more run-time alias checks than GCC makes,
     * and stays scalar) */
    cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 j = ja; j < jb; j++) {");
    g->ind++;
    g->pos = "(i + j - j0)";
    int na = 0;
    Val *args = looped ? sten_args_loop(g, true, ix, "j", &na) : sten_args(g, true, ix, "j", &na);
    if (args) store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
    block_end(g);
    /* border: [j0, ja) and [jb, j1) */
    cg_line(g, "for (int part = 0; part < 2; part++) {");
    g->ind++;
    cg_line(g, "const i64 from = part ? jb : j0, to = part ? j1 : ja;");
    cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 j = from; j < to; j++) {");
    g->ind++;
    args = looped ? sten_args_loop(g, false, ix, "j", &na) : sten_args(g, false, ix, "j", &na);
    if (args) store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
    block_end(g);
    block_end(g);
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
        while (opened--) block_end(g);
        block_end(g);
    }
    block_end(g);
    kernel_end(g);
}

/* ------------------------------------------------------------ filter */

static void emit_filter(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[0];
    const Type *elt = x->type->elt;
    for (int scatter = 0; scatter < 2; scatter++) {
        kernel_begin(g, scatter ? R_SCATTER : R_COUNT, scatter ? 0 : cn->nout, scatter != 0);
        cg_line(g, "const i64 n = c->n, ch = c->chunk;");
        if (scatter) cg_line(g, "const i64 *restrict offs = (const i64 *)c->s2, *restrict cnt = (const i64 *)c->s1;");
        else cg_line(g, "i64 *restrict cnt = (i64 *)c->s1;");
        cg_line(g, "for (i64 t = start; t < end; t++) {");
        g->ind++;
        cg_line(g, "const i64 lo = t * ch, hi = ax_min64(lo + ch, n);");
        cg_line(g, "i64 m = %s;", scatter ? "offs[t]" : "0");
        /* The scatter stores every element at m and advances m where the
         * predicate holds: no branch on the predicate (a random one
         * mispredicts half the time: the QuickHull step's filters took 5
         * to 7 times as long branching, examples/planner.c).  An element
         * not kept is overwritten by the next one kept; the loop stops at
         * the chunk's last one kept, so every store stays in the chunk's
         * own part of the output. */
        if (scatter) cg_line(g, "const i64 e = m + cnt[t];");
        if (scatter) cg_line(g, "for (i64 i = lo; m < e && i < hi; i++) {");
        else cg_line(g, "for (i64 i = lo; i < hi; i++) {");
        g->ind++;
        g->pos = "i";
        Val v = read_lin(g, 0, "i");
        add_value_fact(g, p, 0, "i");
        Val k = cg_apply(g, p, &v, 1);
        if (k.n == 1) {
            if (scatter) store(g, 0, elt, "m", v);
            cg_line(g, "m += %s;", k.v[0]);
        }
        block_end(g);
        if (!scatter) cg_line(g, "cnt[t] = m;");
        block_end(g);
        kernel_end(g);
    }
}

/* ------------------------------------------------------------ loop */

/* A multi-generator loop (ir.h Loop; seed 003's fused loop with several
 * generators): one pass over the space computes its element once and
 * hands each generator its component: a collect stores it, a filter counts
 * where its predicate holds, a reduction folds it.  The part kernel is the
 * fold's (task t is chunk k of a row; every reduction's partials in one
 * scratch area, the filters' counts per chunk in c->s2) with the lane-
 * parallel loop when every operator is commutative; comb combines the
 * partials in chunk order as fold's does; scatter (rank 1, only with
 * filters) writes each filter's kept components from its chunk's offset. */
typedef struct LoopG {
    const Loop *lp;
    int nred, nflt;
    int *roff;                /* per generator: its first leaf in the partials (reductions) */
    const Type *rt;           /* the partials' element: the tuple of the reductions' */
    Val acc;                  /* per reduction leaf: the accumulators (res) */
    Val *lane;                /* per generator: its lane arrays (reductions, comm) */
    const char **cnt;         /* per generator: its count (filters) */
    const char **hv;          /* per generator: has it an element yet (conditional reductions) */
    bool hv_known;            /* every one has: the elements after the first kept */
    RowRead rr;
} LoopG;

enum { LE_INIT, LE_STEP, LE_LANE0, LE_LANE };

/* The leaves of component comp (-1: all) of the space's element x. */
static Val loop_comp(G *g, Val x, int comp)
{
    const Node *sp = opd_node(g->cn, 0);
    if (comp < 0) return x;
    const Type *e = sp->type->elt;
    return cg_slice(x, ty_leaf_offset(e, comp), e->elts[comp]->width);
}

/* One element at position pos: collects stored, filters counted, the
 * reductions' accumulators (mode LE_INIT/LE_STEP) or lanes at l (LE_LANE0:
 * set, LE_LANE: combined) updated. */
static void loop_elem(G *g, LoopG *L, const char *pos, int mode, const char *l)
{
    const Node *x = g->cn->x;
    g->pos = atom(g, pos);
    Val v = read_row(g, &L->rr, g->pos);
    for (int q = 0; q < L->lp->ngen && !g->failed; q++) {
        const LoopGen *gn = &L->lp->gen[q];
        Val c = loop_comp(g, v, gn->comp);
        const Type *ct = loop_comp_type(x, gn->comp);
        switch (gn->kind) {
        case LOOP_COLLECT:
            store(g, q, ct, g->pos, c);
            break;
        case LOOP_FILTER:
            cg_line(g, "%s += %s;", L->cnt[q], loop_comp(g, v, gn->pred).v[0]);
            break;
        case LOOP_REDUCE: {
            Val acc = cg_slice(L->acc, L->roff[q], ct->width);
            const Node *f = x->kid[gn->op];
            if (gn->pred >= 0 || ((mode == LE_STEP) && ir_selection(f, NULL))) {
                /* a selection operator: the accumulator replaced or not,
                 * a branch (taken rarely by a running max) rather than a
                 * dependency through selects; a conditional one counts
                 * only the elements its predicate keeps, from none
                 * (hv: whether it has one yet) */
                bool keep_then;
                const Node *cnd = ir_selection(f, &keep_then);
                if (!cnd) return cg_fail(g, "cpu codegen: a conditional reduction without a selection operator");
                if (mode == LE_INIT && gn->pred < 0) {
                    cg_assign(g, acc, c);
                    break;
                }
                g->env[f->param[0]->id] = acc;
                g->env[f->param[1]->id] = c;
                Val cv = cg_exp(g, cnd);
                const char *take = cg_fmt(g, "%s%s", keep_then ? "!" : "", cv.n ? cv.v[0] : "0");
                const char *p = gn->pred >= 0 ? loop_comp(g, v, gn->pred).v[0] : NULL;
                if (p && L->hv_known) take = cg_fmt(g, "%s & %s", p, take);
                else if (p) take = cg_fmt(g, "%s & (!%s | %s)", p, L->hv[q], take);
                cg_line(g, "if (__builtin_expect(%s, 0)) {", take);
                g->ind++;
                cg_assign(g, acc, c);
                block_end(g);
                if (p && !L->hv_known) cg_line(g, "%s |= %s;", L->hv[q], p);
                break;
            }
            if (mode == LE_INIT) cg_assign(g, acc, c);
            else if (mode == LE_STEP) update(g, ct, acc, apply2(g, f, acc, c));
            else if (mode == LE_LANE0) put(g, L->lane[q], l, c);
            else update(g, ct, at(g, L->lane[q], l), apply2(g, f, at(g, L->lane[q], l), c));
            break;
        }
        }
    }
}

static void emit_loop(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x;
    LoopG L = {x->loop, 0, 0, NULL, NULL, {0, NULL}, NULL, NULL, NULL, false, {false, {0, NULL}, NULL}};
    const Loop *lp = x->loop;
    int ng = lp->ngen;
    L.roff = arena_alloc(g->ar, sizeof *L.roff * (size_t)ng);
    L.lane = arena_alloc(g->ar, sizeof *L.lane * (size_t)ng);
    L.cnt = arena_alloc(g->ar, sizeof *L.cnt * (size_t)ng);
    L.hv = arena_alloc(g->ar, sizeof *L.hv * (size_t)ng);
    const Type **rts = arena_alloc(g->ar, sizeof *rts * (size_t)ng);
    if (!L.roff || !L.lane || !L.cnt || !L.hv || !rts) return cg_fail(g, "cpu codegen: out of memory");
    bool comm = true, cond = false;
    int w = 0;
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) L.nflt++;
        if (gn->kind != LOOP_REDUCE) continue;
        rts[L.nred++] = loop_comp_type(x, gn->comp);
        L.roff[q] = w;
        w += rts[L.nred - 1]->width;
        comm = comm && gn->pred < 0 && lam_comm(x->kid[gn->op], NULL);
        cond = cond || gn->pred >= 0;
    }
    L.rt = ty_tuple(g->ar, L.nred, rts);
    if (!L.rt) return cg_fail(g, "cpu codegen: out of memory");
    cn->comm = comm;
    cn->scratch_leaves = L.rt->width;

    /* part */
    kernel_begin(g, R_PART, 0, true);
    cg_line(g, "const i64 n = c->n, ch = c->chunk, nch = c->nchunk;");
    Val qp = scratch(g, L.rt, "c->s1");
    if (L.nflt || cond) cg_line(g, "i64 *restrict cnt = (i64 *)c->s2;");
    if (cond) cg_line(g, "u8 *restrict hv = (u8 *)(cnt + %d * 2 * c->m);", ng);
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 row = t / nch, k = t %% nch;");
    cg_line(g, "const i64 lo = row * n + k * ch, hi = ax_min64(lo + ch, row * n + n);");
    L.rr = row_read(g, "row", "row * n");
    for (int q = 0; q < ng; q++)
        if (lp->gen[q].kind == LOOP_FILTER) {
            L.cnt[q] = cg_fresh(g, "cnt");
            cg_line(g, "i64 %s = 0;", L.cnt[q]);
        }
    L.acc = cg_decl(g, L.rt, "r");
    for (int q = 0; q < ng; q++)
        if (lp->gen[q].kind == LOOP_REDUCE && lp->gen[q].pred >= 0) {
            if (lp->gen[q].z < 0) return cg_fail(g, "cpu codegen: a conditional fold1");
            L.hv[q] = cg_fresh(g, "hv");
            cg_line(g, "u8 %s = 0;", L.hv[q]);
        }
    if (L.nred == 0) {
        cg_line(g, "for (i64 j = lo; j < hi; j++) {");
        g->ind++;
        loop_elem(g, &L, "j", LE_STEP, NULL);
        block_end(g);
    } else {
        const char *j = cg_fresh(g, "j");
        const int LANES = lanes_of(L.rt);
        cg_line(g, "i64 %s = lo + 1;", j);
        if (comm) {
            cg_line(g, "if (hi - lo >= %d) {", 2 * LANES);
            g->ind++;
            for (int q = 0; q < ng; q++) {
                if (lp->gen[q].kind != LOOP_REDUCE) continue;
                const Type *ct = loop_comp_type(x, lp->gen[q].comp);
                L.lane[q] = leaf_arrays(g, ct, "lane", LANES);
            }
            const char *l = cg_fresh(g, "l");
            cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
            g->ind++;
            loop_elem(g, &L, cg_fmt(g, "lo + %s", l), LE_LANE0, l);
            block_end(g);
            cg_line(g, "for (%s = lo + %d; %s + %d <= hi; %s += %d) {", j, LANES, j, LANES, j, LANES);
            g->ind++;
            cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
            g->ind++;
            loop_elem(g, &L, cg_fmt(g, "%s + %s", j, l), LE_LANE, l);
            block_end(g);
            block_end(g);
            for (int q = 0; q < ng; q++) {
                if (lp->gen[q].kind != LOOP_REDUCE) continue;
                const Type *ct = loop_comp_type(x, lp->gen[q].comp);
                Val acc = cg_slice(L.acc, L.roff[q], ct->width);
                cg_assign(g, acc, at(g, L.lane[q], "0"));
                cg_line(g, "for (int %s = 1; %s < %d; %s++) {", l, l, LANES, l);
                g->ind++;
                update(g, ct, acc, apply2(g, x->kid[lp->gen[q].op], acc, at(g, L.lane[q], l)));
                block_end(g);
            }
            g->ind--;
            cg_line(g, "} else {");
            g->ind++;
        }
        loop_elem(g, &L, "lo", LE_INIT, NULL);
        if (comm) block_end(g);
        if (cond) {
            /* the conditional reductions' first elements kept, then the
             * rest without asking whether they have one (the loop peeled) */
            const char *all = "1";
            for (int q = 0; q < ng; q++)
                if (lp->gen[q].kind == LOOP_REDUCE && lp->gen[q].pred >= 0) all = cg_fmt(g, "%s & %s", all, L.hv[q]);
            cg_line(g, "for (; %s < hi && !(%s); %s++) {", j, all, j);
            g->ind++;
            loop_elem(g, &L, j, LE_STEP, NULL);
            block_end(g);
            L.hv_known = true;
        }
        cg_line(g, "for (; %s < hi; %s++) {", j, j);
        g->ind++;
        loop_elem(g, &L, j, LE_STEP, NULL);
        block_end(g);
        L.hv_known = false;
        /* one chunk per row: the row's results (after z); else partials */
        cg_line(g, "if (nch == 1) {");
        g->ind++;
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_REDUCE) continue;
            const Type *ct = loop_comp_type(x, gn->comp);
            Val acc = cg_slice(L.acc, L.roff[q], ct->width);
            if (gn->z >= 0) {
                Val z = param(g, cn->kid_thunk[gn->z], ct);
                Val y = cg_bind(g, ct, apply2(g, x->kid[gn->op], z, acc), "y");
                if (gn->pred >= 0) {
                    /* none kept: z */
                    cg_line(g, "if (!%s) {", L.hv[q]);
                    g->ind++;
                    cg_assign(g, y, z);
                    block_end(g);
                }
                acc = y;
            }
            store(g, q, ct, "row", acc);
        }
        g->ind--;
        cg_line(g, "} else {");
        g->ind++;
        put(g, qp, "t", L.acc);
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_REDUCE && lp->gen[q].pred >= 0) cg_line(g, "hv[%d * c->m + t] = %s;", q, L.hv[q]);
        block_end(g);
    }
    for (int q = 0; q < ng; q++)
        if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "cnt[%d * c->m + t] = %s;", q, L.cnt[q]);
    block_end(g);
    kernel_end(g);

    /* comb: per row, z and the partials in chunk order */
    if (L.nred) {
        kernel_begin(g, R_COMB, 0, true);
        cg_line(g, "const i64 nch = c->nchunk;");
        qp = scratch(g, L.rt, "c->s1");
        if (cond) cg_line(g, "const u8 *restrict hv = (const u8 *)((const i64 *)c->s2 + %d * 2 * c->m);", ng);
        cg_line(g, "for (i64 r = start; r < end; r++) {");
        g->ind++;
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_REDUCE) continue;
            const Type *ct = loop_comp_type(x, gn->comp);
            Val part = cg_slice(qp, L.roff[q], ct->width);
            Val acc = cg_decl(g, ct, "y");
            cg_assign(g, acc, gn->z >= 0 ? param(g, cn->kid_thunk[gn->z], ct) : at(g, part, "r * nch"));
            cg_line(g, "for (i64 k = %d; k < nch; k++) {", gn->z >= 0 ? 0 : 1);
            g->ind++;
            /* (a conditional one's chunks without an element kept add nothing) */
            if (gn->pred >= 0) cg_line(g, "if (!hv[%d * c->m + r * nch + k]) continue;", q);
            update(g, ct, acc, apply2(g, x->kid[gn->op], acc, at(g, part, "r * nch + k")));
            block_end(g);
            store(g, q, ct, "r", acc);
        }
        block_end(g);
        kernel_end(g);
    }

    /* scatter: each filter's kept components from its chunk's offset, no
     * branch on the predicates: every element is stored at a filter's
     * next place and the place advances where the predicate holds (the
     * next one kept overwrites it).  Up to the first filter's last kept
     * element (found from the chunk's end: usually its last or so) every
     * place is in the chunk's share; past it, where another filter still
     * has elements to place, a place past the share goes to a local
     * instead (the next chunk's first).  A filter with none kept in the
     * chunk stores nothing. */
    if (L.nflt) {
        kernel_begin(g, R_SCATTER, 0, true);
        cg_line(g, "const i64 n = c->n, ch = c->chunk, m = c->m;");
        cg_line(g, "const i64 *restrict cnt = (const i64 *)c->s2, *restrict offs = cnt + %d * m;", ng);
        L.rr.ix = false;
        const char **e = arena_alloc(g->ar, sizeof *e * (size_t)ng), **has = arena_alloc(g->ar, sizeof *has * (size_t)ng);
        if (!e || !has) return cg_fail(g, "cpu codegen: out of memory");
        cg_line(g, "for (i64 t = start; t < end; t++) {");
        g->ind++;
        cg_line(g, "const i64 lo = t * ch, hi = ax_min64(lo + ch, n);");
        cg_line(g, "i64 stop = hi;");
        const char *more = "0";
        for (int q = 0; q < ng; q++) {
            if (lp->gen[q].kind != LOOP_FILTER) continue;
            const Type *ct = loop_comp_type(x, lp->gen[q].comp);
            L.cnt[q] = cg_fresh(g, "m");
            e[q] = cg_fresh(g, "e");
            has[q] = cg_fresh(g, "h");
            cg_line(g, "i64 %s = offs[%d * m + t];", L.cnt[q], q);
            cg_line(g, "const i64 %s = %s + cnt[%d * m + t];", e[q], L.cnt[q], q);
            cg_line(g, "const u8 %s = %s > %s;", has[q], e[q], L.cnt[q]);
            /* its last element kept, from the chunk's end */
            cg_line(g, "if (%s) {", has[q]);
            g->ind++;
            cg_line(g, "i64 j = hi - 1;");
            cg_line(g, "for (; j > lo; j--) {");
            g->ind++;
            g->pos = "j";
            cg_line(g, "if (%s) break;", loop_comp(g, read_lin(g, 0, "j"), lp->gen[q].pred).v[0]);
            block_end(g);
            cg_line(g, "stop = ax_min64(stop, j + 1);");
            block_end(g);
            for (int k = 0; k < ct->width; k++) cg_line(g, "%s sink%d_%d;", cg_ctype(ty_leaf(ct, k)), q, k);
            more = cg_fmt(g, "%s || %s < %s", more, L.cnt[q], e[q]);
        }
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 0) cg_line(g, "i64 i = lo;");
            if (pass == 0) cg_line(g, "for (; i < stop; i++) {");
            else cg_line(g, "for (; i < hi && (%s); i++) {", more);
            g->ind++;
            g->pos = "i";
            Val v = read_lin(g, 0, "i");
            for (int q = 0; q < ng; q++) {
                const LoopGen *gn = &lp->gen[q];
                if (gn->kind != LOOP_FILTER) continue;
                const Type *ct = loop_comp_type(x, gn->comp);
                Val c = loop_comp(g, v, gn->comp);
                cg_line(g, "if (%s) {", has[q]);
                g->ind++;
                for (int k = 0; k < ct->width && k < c.n; k++) {
                    if (pass == 0) cg_line(g, "a%d_%d[%s] = %s;", q, k, L.cnt[q], c.v[k]);
                    else cg_line(g, "*(%s < %s ? &a%d_%d[%s] : &sink%d_%d) = %s;", L.cnt[q], e[q], q, k, L.cnt[q], q, k,
                                 c.v[k]);
                }
                cg_line(g, "%s += %s;", L.cnt[q], loop_comp(g, v, gn->pred).v[0]);
                block_end(g);
            }
            block_end(g);
        }
        block_end(g);
        kernel_end(g);
    }
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
    block_end(g);
}

/* ------------------------------------------------------------ entry */

static void emit_kernels(G *g, CgNode *cn);

void cg_emit_node(G *g, CgNode *cn)
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
    emit_kernels(g, cn);
    g->defer = false;
    bool any = false;
    for (int r = 0; r < R_NROLE; r++) any |= g->need_chk[r];
    if (any && !g->failed) {
        Buf *hot = g->b;
        g->b = g->cold;
        buf_printf(g->b, "\n/* %d: %s, checked */\n", x->num, op_name(x->op));
        g->chk = true;
        emit_kernels(g, cn);
        g->chk = false;
        g->b = hot;
    }
}

static void emit_kernels(G *g, CgNode *cn)
{
    const Node *x = cn->x;
    switch (x->op) {
    case OP_GENERATE: case OP_BACKPERMUTE: case OP_TRANSFORM: case OP_REPLICATE: case OP_SLICE:
        emit_producer(g, R_MAIN);
        break;
    case OP_MAP: case OP_RESHAPE:
        emit_producer(g, R_LIN);
        break;
    case OP_ZIPWITH:
        /* rank <= 1: the intersection is a prefix, read linearly */
        emit_producer(g, R_LIN);
        if (x->type->rank > 1) emit_producer(g, R_MAIN);
        break;
    case OP_FOLD: case OP_FOLD1:
        emit_fold(g);
        break;
    case OP_FOLDSEG: case OP_FOLD1SEG:
        emit_foldseg(g);
        break;
    case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX:
        emit_scan(g);
        break;
    case OP_PERMUTE:
        emit_permute(g);
        break;
    case OP_STENCIL: case OP_STENCIL2:
        emit_stencil(g);
        break;
    case OP_FILTER:
        emit_filter(g);
        break;
    case OP_LOOP:
        emit_loop(g);
        break;
    case OP_UNIT: case OP_ACOND:
        break;   /* thunks only */
    default:
        cg_fail(g, "cpu codegen: no skeleton for %s", op_name(x->op));
        break;
    }
}

/* ------------------------------------------------------------ shared pieces
 *
 * The element-level parts above, for the GPU generator (cg.h). */

Val cg_read_lin(G *g, int i, const char *pos) { return read_lin(g, i, pos); }
Val cg_read_ix(G *g, int i, Val ix) { return read_ix(g, i, ix); }
const char *cg_linear(G *g, int slot, Val ix) { return linear(g, slot, ix); }
void cg_store(G *g, int slot, const Type *elt, const char *pos, Val v) { store(g, slot, elt, pos, v); }
void cg_update(G *g, const Type *t, Val dst, Val v) { update(g, t, dst, v); }
Val cg_param(G *g, int t, const Type *type) { return param(g, t, type); }
Val cg_apply2(G *g, const Node *f, Val a, Val b) { return apply2(g, f, a, b); }
bool cg_lam_comm(const Node *f, Prim *ops) { return lam_comm(f, ops); }
bool cg_comm_leaf(const Node *e, const Node *x, const Node *y, int k, int w, Prim *op)
{
    return comm_leaf(e, x, y, k, w, op);
}
bool cg_has_z(Op op) { return has_z(op); }
Val *cg_sten_args(G *g, bool interior, Val ix, const char *j, int *nargs) { return sten_args(g, interior, ix, j, nargs); }
const char *cg_atom(G *g, const char *e) { return atom(g, e); }
Val cg_loop_comp(G *g, Val x, int comp) { return loop_comp(g, x, comp); }

void cg_producer_elem(G *g, bool lin, Val ix, const char *pos)
{
    PEnv env = {lin};
    producer_elem(g, &env, ix, pos);
}
