/*
 * GPU skeletons: the kernels of each array operation (paper s.4.3: a
 * skeleton per collective operation, with holes for the scalar code; the
 * algorithms follow accelerate-llvm-ptx and CUB where they apply).  The
 * element code comes from the CPU generator's shared pieces (cg.h), in
 * the GPU dialect; this file writes the parallel structure around it.
 *
 * Every kernel runs on groups of AX_WG threads and loops over its work
 * (grid-stride), so the host may launch fewer groups than work items.
 * Loops that contain barriers are uniform over the group: their bounds
 * depend only on the group's id and the launch's counts, never on a
 * thread's data (OpenCL requires it, CUDA deadlocks without it).
 *
 * Reductions (fold, the scans' chunk totals, segmented folds) run in
 * teams of w_ threads (a power of two up to AX_WG, chosen by the host
 * from the row length: a warp or a block per row, or one thread per row
 * for short rows), AX_WG / w_ teams per group.  Each team reduces one
 * task (a row, a chunk of a row, a segment): an operator that is
 * commutative as well as associative (cg_lam_comm) lets thread l take
 * the elements l, l + w, ... (coalesced loads); any other keeps the
 * order: thread l takes the l-th contiguous part.  The team's values then
 * meet in a tree that always combines a left neighbour with its right
 * one, so a non-commutative operator stays correct (CUB's Reduce is not).
 *
 * Scans use three phases (as on the CPU): chunk totals, a per-row scan of
 * the totals (the carries), and each chunk scanned in tiles of w_
 * elements by a team (an in-order Hillis-Steele scan in shared memory),
 * each tile's values combined with the running prefix.  Right scans are
 * the mirror image: they run in "scan order" from the end of the row, the
 * operator's operands swapped (x (.) y = f(y, x) is associative too).
 *
 * Filter: per chunk, a count; the host turns the counts into offsets; per
 * chunk again, each tile's kept elements are placed by a scan of their
 * flags, in order.  Permute: defaults copied, then one thread per source
 * element combining into the target with an atomic: a native one where
 * the operator and type have one, a compare-and-swap loop on the
 * element's bits otherwise (on its 32-bit word for 8- and 16-bit types),
 * and striped locks for a combination of several components.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "gpu.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static void open_(G *g) { g->ind++; }
static void close_(G *g)
{
    g->ind--;
    cg_line(g, "}");
}

static void kbegin(G *g, CgRole r)
{
    CgNode *cn = (CgNode *)g->cn;
    cn->role[r] = true;
    g->role = r;
    cg_line(g, "AX_KERNEL axk_%d_%s(%s)", cn->x->num, cg_role_name[r], gpu_param_list(g, cn));
    cg_line(g, "{");
    open_(g);
}

/* Shared arrays (one element per thread) for a value of type t: the
 * names, declared here at the kernel's top (OpenCL allows __local
 * variables nowhere else). */
static Val shared(G *g, const Type *t, const char *prefix)
{
    Val v = cg_val(g, t->width);
    for (int l = 0; l < v.n; l++) {
        v.v[l] = cg_fresh(g, prefix);
        cg_line(g, "AX_SHARED %s %s[AX_WG];", cg_ctype(ty_leaf(t, l)), v.v[l]);
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

/* A copy of v in fresh locals (a value read from shared or global memory
 * that the next statements overwrite). */
static Val snap(G *g, const Type *t, Val v) { return cg_bind(g, t, v, "v"); }

/* Pointers to the leaves of partial results in scratch area `area` (s1_
 * or s2_), m of them, each leaf 64-byte aligned (cg_scratch_bytes: the
 * host sizes the area the same way). */
static Val scratch(G *g, const Type *elt, const char *area, const char *m)
{
    Val v = cg_val(g, elt->width);
    const char *off = cg_fresh(g, "so");
    cg_line(g, "i64 %s = 0;", off);
    for (int l = 0; l < v.n; l++) {
        const char *T = cg_ctype(ty_leaf(elt, l));
        v.v[l] = cg_fresh(g, "q");
        cg_line(g, "AX_G %s *%s = (AX_G %s *)(%s + %s);", T, v.v[l], T, area, off);
        cg_line(g, "%s += ((%s * (i64)sizeof(%s) + 63) & ~(i64)63);", off, m, T);
    }
    return v;
}

/* for (i = first thread; i < count; i += all threads) */
static void grid_loop(G *g, const char *i, const char *count)
{
    cg_line(g, "for (i64 %s = ax_grp * AX_WG + ax_lid; %s < %s; %s += ax_ngrp * AX_WG) {", i, i, count, i);
    open_(g);
}

/* The index of row-major position lin in the shape of slot (rank r). */
static Val index_of(G *g, int slot, int r, const char *lin)
{
    Val ix = cg_val(g, r);
    if (r == 0) return ix;
    const char *q = cg_fresh(g, "q");
    cg_line(g, "i64 %s = %s;", q, lin);
    for (int d = r - 1; d >= 1; d--) {
        ix.v[d] = cg_fresh(g, "x");
        cg_line(g, "const i64 %s = %s %% s%d_%d;", ix.v[d], q, slot, d);
        cg_line(g, "%s /= s%d_%d;", q, slot, d);
    }
    ix.v[0] = cg_local(g, AX_I64, q);
    return ix;
}

/* How a row skeleton reads operand 0 at position pos: linearly, or, for
 * a delayed operand of rank >= 2, through its index form at (the row's
 * outer index, pos - base), which needs no division per element. */
typedef struct RowRead {
    bool ix;
    Val outer;
    const char *base;
} RowRead;

static RowRead row_read(G *g, const char *row, const char *base)
{
    RowRead rr = {false, cg_val(g, 0), base};
    const CgNode *cn = g->cn;
    const Node *y = cg_opd_node(cn, 0);
    int r = y->type->rank, slot = cg_opd_slot(cn, 0);
    if (y->op != OP_DELAYED || r < 2) return rr;
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
    if (!rr->ix) return cg_read_lin(g, 0, pos);
    Val ix = cg_val(g, rr->outer.n + 1);
    if (ix.n != rr->outer.n + 1) return cg_read_lin(g, 0, pos);
    for (int d = 0; d < rr->outer.n; d++) ix.v[d] = rr->outer.v[d];
    ix.v[rr->outer.n] = cg_atom(g, cg_fmt(g, "%s - %s", pos, rr->base));
    return cg_read_ix(g, 0, ix);
}

static Val zval(G *g, const Type *elt) { return cg_param(g, g->cn->kid_thunk[1], elt); }

/* acc = have ? f(acc, v) : v; have = 1 */
static void accumulate(G *g, const Node *f, const Type *elt, Val acc, const char *have, Val v)
{
    cg_line(g, "if (%s) {", have);
    open_(g);
    cg_update(g, elt, acc, cg_apply2(g, f, acc, v));
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    cg_assign(g, acc, v);
    close_(g);
    cg_line(g, "%s = 1;", have);
}

/* ------------------------------------------------------------ producers */

static void emit_producer(G *g, CgRole role)
{
    const CgNode *cn = g->cn;
    kbegin(g, role);
    grid_loop(g, "i_", "n0");
    g->pos = "i_";
    Val ix = role == R_LIN ? cg_val(g, 0) : index_of(g, 0, cn->x->type->rank, "i_");
    cg_producer_elem(g, role == R_LIN, ix, "i_");
    close_(g);
    close_(g);
}

/* ------------------------------------------------------------ reductions */

typedef enum { RED_FOLD, RED_SCAN, RED_SEG } RedKind;

/* The team reduction kernel (see the top): fold's part (the row's result
 * when a row is one chunk, else the chunk's partial), a scan's chunk
 * totals, or a segmented fold's segments. */
static void emit_team_reduce(G *g, RedKind kind)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = kind == RED_SCAN && (x->op == OP_SCANLEX || x->op == OP_SCANREX) ? x->type->elts[0]->elt
                                                                                      : x->type->elt;
    bool z = cg_has_z(x->op);
    kbegin(g, kind == RED_SEG ? R_SEG : R_PART);
    Val sh = shared(g, elt, "sh");
    cg_line(g, "AX_SHARED u8 hv_[AX_WG];");
    cg_line(g, "const i64 W = w_, TPG = AX_WG / W, team = ax_lid / W, lane = ax_lid %% W;");
    Val q = cg_val(g, 0);
    if (kind != RED_SEG) q = scratch(g, elt, "s1_", "m_");
    else cg_line(g, "AX_G const i64 *off = (AX_G const i64 *)s1_;");
    cg_line(g, "for (i64 base = ax_grp * TPG; base < m_; base += ax_ngrp * TPG) {");
    open_(g);
    cg_line(g, "const i64 t = base + team;");
    cg_line(g, "const int live = t < m_;");
    cg_line(g, "const i64 row = live ? t / nch_ : 0, k = live ? t %% nch_ : 0;");
    if (kind == RED_SEG) cg_line(g, "const i64 lo = row * n_ + (live ? off[k] : 0), hi = live ? row * n_ + off[k + 1] : lo;");
    else cg_line(g, "const i64 lo = row * n_ + k * ch_, hi = live ? ax_min64(lo + ch_, row * n_ + n_) : lo;");
    RowRead rr = row_read(g, "row", "row * n_");
    Val acc = cg_decl(g, elt, "y");
    cg_line(g, "int have = 0;");
    if (cn->comm) {
        cg_line(g, "for (i64 j = lo + lane; j < hi; j += W) {");
    } else {
        cg_line(g, "const i64 per = (hi - lo + W - 1) / W, la = ax_min64(lo + lane * per, hi), lb = ax_min64(la + per, hi);");
        cg_line(g, "for (i64 j = la; j < lb; j++) {");
    }
    open_(g);
    g->pos = "j";
    accumulate(g, f, elt, acc, "have", read_row(g, &rr, "j"));
    close_(g);
    /* The tree: a left neighbour with its right one.  On CUDA a team of a
     * warp or more does its first five levels within each warp by
     * shuffles (no shared memory, no barrier), the rest in shared memory
     * from level 32 on.  All lanes of a warp take part (W is a multiple
     * of the warp's width there, and lanes without a task carry
     * have = 0). */
    cg_line(g, "i64 s0 = 1;");
    cg_line(g, "#if AX_FAST");
    cg_line(g, "if (W >= 32) {");
    open_(g);
    cg_line(g, "for (int s = 1; s < 32; s <<= 1) {");
    open_(g);
    Val o = cg_val(g, elt->width);
    for (int l = 0; l < o.n; l++)
        o.v[l] = cg_local(g, ty_leaf(elt, l), cg_fmt(g, "ax_shfl_%s(%s, s)", cg_ctype(ty_leaf(elt, l)), acc.v[l]));
    const char *oh = cg_local(g, AX_I32, "ax_shfl_i32(have, s)");
    cg_line(g, "if ((lane & (2 * s - 1)) == 0 && %s) {", oh);
    open_(g);
    accumulate(g, f, elt, acc, "have", o);
    close_(g);
    close_(g);
    cg_line(g, "s0 = 32;");
    close_(g);
    cg_line(g, "#endif");
    put(g, sh, "ax_lid", acc);
    cg_line(g, "hv_[ax_lid] = (u8)have;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = s0; s < W; s <<= 1) {");
    open_(g);
    cg_line(g, "if ((lane & (2 * s - 1)) == 0 && lane + s < W && hv_[ax_lid + s]) {");
    open_(g);
    Val a = snap(g, elt, at(g, sh, "ax_lid")), b = snap(g, elt, at(g, sh, "ax_lid + s"));
    cg_line(g, "if (hv_[ax_lid]) {");
    open_(g);
    put(g, sh, "ax_lid", cg_apply2(g, f, a, b));
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    put(g, sh, "ax_lid", b);
    close_(g);
    cg_line(g, "hv_[ax_lid] = 1;");
    close_(g);
    cg_line(g, "ax_barrier();");
    close_(g);
    cg_line(g, "if (live && lane == 0) {");
    open_(g);
    Val res = snap(g, elt, at(g, sh, "ax_lid"));
    if (kind == RED_SCAN) {
        put(g, q, "t", res);
    } else {
        Val y = cg_decl(g, elt, "r");
        if (z) {
            cg_assign(g, y, zval(g, elt));
            cg_line(g, "if (hv_[ax_lid]) {");
            open_(g);
            cg_update(g, elt, y, cg_apply2(g, f, zval(g, elt), res));
            close_(g);
        } else {
            cg_assign(g, y, res);
        }
        if (kind == RED_SEG) {
            cg_store(g, 0, elt, "t", y);
        } else {
            /* with z, a chunk's partial is its own fold (comb adds z) */
            cg_line(g, "if (nch_ == 1) {");
            open_(g);
            cg_store(g, 0, elt, "row", y);
            g->ind--;
            cg_line(g, "} else {");
            open_(g);
            put(g, q, "t", res);
            close_(g);
        }
    }
    close_(g);
    cg_line(g, "ax_barrier();");
    close_(g);
    close_(g);
}

/* fold's comb: per row, z and the partials in chunk order (no chunks at
 * all, an empty row: z). */
static void emit_fold_comb(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = x->type->elt;
    bool z = cg_has_z(x->op);
    kbegin(g, R_COMB);
    Val q = scratch(g, elt, "s1_", "m_");
    grid_loop(g, "r", "n0");
    Val acc = cg_decl(g, elt, "y");
    cg_assign(g, acc, z ? zval(g, elt) : at(g, q, "r * nch_"));
    cg_line(g, "for (i64 k = %d; k < nch_; k++) {", z ? 0 : 1);
    open_(g);
    cg_update(g, elt, acc, cg_apply2(g, f, acc, at(g, q, "r * nch_ + k")));
    close_(g);
    cg_store(g, 0, elt, "r", acc);
    close_(g);
    close_(g);
}

static void emit_fold(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    cn->comm = cg_lam_comm(cn->x->kid[0], NULL);
    cn->scratch_leaves = cn->x->type->elt->width;
    emit_team_reduce(g, RED_FOLD);
    emit_fold_comb(g);
}

static void emit_foldseg(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    cn->comm = cg_lam_comm(cn->x->kid[0], NULL);
    emit_team_reduce(g, RED_SEG);
    /* mat: a DELAYED segment vector, materialised as i64 for the host */
    if (cg_opd_node(cn, 1)->op == OP_DELAYED) {
        kbegin(g, R_MAT);
        cg_line(g, "AX_G i64 *o = (AX_G i64 *)s2_;");
        grid_loop(g, "i", cg_fmt(g, "n%d", cg_opd_slot(cn, 1)));
        g->pos = "i";
        Val v = cg_read_lin(g, 1, "i");
        if (v.n == 1) cg_line(g, "o[i] = (i64)%s;", v.v[0]);
        close_(g);
        close_(g);
    }
}

/* ------------------------------------------------------------ scans */

/* An in-order inclusive Hillis-Steele scan of the values in shared arrays
 * sh over strides s < limit (a team's lanes): a thread for which `take`
 * holds combines the value s places before its own, earlier operand on
 * the scan order's left (x (.) y = f(x, y), or f(y, x) for right scans).
 * Every thread runs the loop (it has barriers). */
static void team_scan(G *g, const Node *f, bool left, const Type *elt, Val sh, const char *limit, const char *take)
{
    cg_line(g, "for (i64 s = 1; s < %s; s <<= 1) {", limit);
    open_(g);
    cg_line(g, "const int tk = %s;", take);
    Val tmp = cg_decl(g, elt, "h");
    cg_line(g, "if (tk) {");
    open_(g);
    Val a = snap(g, elt, at(g, sh, "ax_lid - s")), b = snap(g, elt, at(g, sh, "ax_lid"));
    cg_assign(g, tmp, left ? cg_apply2(g, f, a, b) : cg_apply2(g, f, b, a));
    close_(g);
    cg_line(g, "ax_barrier();");
    cg_line(g, "if (tk) {");
    open_(g);
    put(g, sh, "ax_lid", tmp);
    close_(g);
    cg_line(g, "ax_barrier();");
    close_(g);
}

static void emit_scan1(G *g);

static void emit_scan(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    Op op = x->op;
    bool left = op == OP_SCANL || op == OP_SCANL1 || op == OP_SCANLEX;
    bool z = cg_has_z(op), ex = op == OP_SCANLEX || op == OP_SCANREX, incl_z = z && !ex;
    const Type *elt = (ex ? x->type->elts[0] : x->type)->elt;
    cn->comm = cg_lam_comm(f, NULL);
    cn->scratch_leaves = elt->width;
    /* a (.) b in scan order */
#define SCANOP(a, b) (left ? cg_apply2(g, f, (a), (b)) : cg_apply2(g, f, (b), (a)))

    /* part: chunk totals */
    emit_team_reduce(g, RED_SCAN);

    /* carry: per row, sequentially, the value entering each chunk */
    kbegin(g, R_CARRY);
    Val q = scratch(g, elt, "s1_", "m_");
    Val cy = scratch(g, elt, "s2_", "m_");
    grid_loop(g, "r", "(m_ / nch_)");
    cg_line(g, "const i64 base = r * nch_;");
    Val acc = cg_decl(g, elt, "y");
    if (left) {
        cg_assign(g, acc, z ? zval(g, elt) : at(g, q, "base"));
        cg_line(g, "for (i64 k = %d; k < nch_; k++) {", z ? 0 : 1);
        open_(g);
        put(g, cy, "base + k", acc);
        cg_update(g, elt, acc, cg_apply2(g, f, acc, at(g, q, "base + k")));
        close_(g);
    } else {
        cg_assign(g, acc, z ? zval(g, elt) : at(g, q, "base + nch_ - 1"));
        cg_line(g, "for (i64 k = nch_ - %d; k >= 0; k--) {", z ? 1 : 2);
        open_(g);
        put(g, cy, "base + k", acc);
        cg_update(g, elt, acc, cg_apply2(g, f, at(g, q, "base + k"), acc));
        close_(g);
    }
    if (ex) cg_store(g, 1, elt, "r", acc);
    close_(g);
    close_(g);

    /* scan: each chunk in tiles, from its carry-in */
    kbegin(g, R_SCAN);
    Val sh = shared(g, elt, "sh");
    cg_line(g, "const i64 W = w_, TPG = AX_WG / W, team = ax_lid / W, lane = ax_lid %% W, tb0 = team * W;");
    cy = scratch(g, elt, "s2_", "m_");
    cg_line(g, "for (i64 base = ax_grp * TPG; base < m_; base += ax_ngrp * TPG) {");
    open_(g);
    cg_line(g, "const i64 t = base + team;");
    cg_line(g, "const int live = t < m_;");
    cg_line(g, "const i64 row = live ? t / nch_ : 0, k = live ? t %% nch_ : 0;");
    cg_line(g, "const i64 rb = row * n_, ob = row * %s, lo = k * ch_, hi = live ? ax_min64(lo + ch_, n_) : lo;",
            incl_z ? "(n_ + 1)" : "n_");
    cg_line(g, "const i64 len = hi - lo;");
    acc = cg_decl(g, elt, "y");
    cg_line(g, "int hacc = 0;");
    cg_line(g, "if (live && %s) {", left ? "k > 0" : "k < nch_ - 1");
    open_(g);
    cg_assign(g, acc, at(g, cy, "t"));
    cg_line(g, "hacc = 1;");
    close_(g);
    if (z) {
        cg_line(g, "if (live && %s) {", left ? "k == 0" : "k == nch_ - 1");
        open_(g);
        cg_assign(g, acc, zval(g, elt));
        cg_line(g, "hacc = 1;");
        if (incl_z) {
            cg_line(g, "if (lane == 0) {");
            open_(g);
            cg_store(g, 0, elt, left ? "ob" : "ob + n_", acc);
            close_(g);
        }
        close_(g);
    }
    cg_line(g, "for (i64 tb = 0; tb < ch_; tb += W) {");
    open_(g);
    cg_line(g, "const i64 i = tb + lane;");
    cg_line(g, "const int pr = live && i < len;");
    cg_line(g, "const i64 j = %s;", left ? "lo + i" : "hi - 1 - i");
    Val v = cg_decl(g, elt, "e");
    cg_line(g, "if (pr) {");
    open_(g);
    g->pos = "(rb + j)";
    cg_assign(g, v, cg_read_lin(g, 0, "rb + j"));
    close_(g);
    put(g, sh, "ax_lid", v);
    cg_line(g, "ax_barrier();");
    team_scan(g, f, left, elt, sh, "W", "pr && lane >= s");
    cg_line(g, "if (pr) {");
    open_(g);
    if (ex) {
        /* before element i: the prefix so far, then the tile's before it */
        Val o = cg_decl(g, elt, "o");
        cg_assign(g, o, acc);
        cg_line(g, "if (lane > 0) {");
        open_(g);
        Val pv = snap(g, elt, at(g, sh, "ax_lid - 1"));
        cg_update(g, elt, o, SCANOP(acc, pv));
        close_(g);
        cg_store(g, 0, elt, "ob + j", o);
    } else {
        Val p = snap(g, elt, at(g, sh, "ax_lid"));
        Val o = cg_decl(g, elt, "o");
        cg_assign(g, o, p);
        cg_line(g, "if (hacc) {");
        open_(g);
        cg_update(g, elt, o, SCANOP(acc, p));
        close_(g);
        cg_store(g, 0, elt, left && incl_z ? "ob + j + 1" : "ob + j", o);
    }
    close_(g);
    cg_line(g, "const i64 last = ax_min64(W, len - tb) - 1;");
    cg_line(g, "if (live && last >= 0) {");
    open_(g);
    Val tot = snap(g, elt, at(g, sh, "tb0 + last"));
    cg_line(g, "if (hacc) {");
    open_(g);
    cg_update(g, elt, acc, SCANOP(acc, tot));
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    cg_assign(g, acc, tot);
    close_(g);
    cg_line(g, "hacc = 1;");
    close_(g);
    cg_line(g, "ax_barrier();");
    close_(g);
    if (ex) {
        /* one chunk per row: the row's total is here (else: carry's) */
        cg_line(g, "if (live && lane == 0 && nch_ == 1) {");
        open_(g);
        cg_store(g, 1, elt, "row", acc);
        close_(g);
    }
    close_(g);
    close_(g);
#undef SCANOP
    emit_scan1(g);
}

/* ------------------------------------------------------------ single-pass scans
 *
 * A scan in one pass over the data with decoupled look-back (Merrill and
 * Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back"):
 * each group takes tiles of GPU_WG * K elements in the order of a counter
 * (so a tile waits only for tiles taken earlier, by groups that are
 * running), scans its tile (K elements per thread in registers, the
 * threads' totals in shared memory), publishes the tile's total, and its
 * first thread walks back over the tiles before it, combining their totals
 * until it finds one that has published its inclusive prefix; it then
 * publishes its own.  The data is read once and written once (the three
 * phases read it twice).  It relies on groups making progress
 * independently, which CUDA's do; elsewhere it runs only when asked
 * (gpu_lookback_wanted).  The flags and published values are read and
 * written with atomics and ordered by fences. */

/* A leaf's bits in a u64 slot, and back. */
static const char *to_u64(G *g, ax_scalar s, const char *v)
{
    if (s == AX_F32) return cg_fmt(g, "(u64)ax_bits_f32(%s)", v);
    if (s == AX_F64) return cg_fmt(g, "ax_bits_f64(%s)", v);
    return cg_fmt(g, "(u64)(%s)%s", cg_utype(s), v);
}
static const char *from_u64(G *g, ax_scalar s, const char *b)
{
    if (s == AX_F32) return cg_fmt(g, "ax_f32_of((u32)%s)", b);
    if (s == AX_F64) return cg_fmt(g, "ax_f64_of(%s)", b);
    return cg_fmt(g, "(%s)(%s)%s", cg_ctype(s), cg_utype(s), b);
}

/* Publishes v as tile t's aggregate (which 0) or inclusive prefix (1),
 * then the flag that says so. */
static void publish(G *g, const Type *elt, Val v, int which)
{
    for (int l = 0; l < elt->width && l < v.n; l++)
        cg_line(g, "ax_xchg64(&vs_[(%d) * m_ + t], %s);", 2 * l + which, to_u64(g, ty_leaf(elt, l), v.v[l]));
    cg_line(g, "ax_fence();");
    cg_line(g, "ax_xchg32(&flag_[1 + t], %du);", which + 1);
}

static void emit_scan1(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    Op op = x->op;
    bool left = op == OP_SCANL || op == OP_SCANL1 || op == OP_SCANLEX;
    bool z = cg_has_z(op), ex = op == OP_SCANLEX || op == OP_SCANREX, incl_z = z && !ex;
    const Type *elt = (ex ? x->type->elts[0] : x->type)->elt;
    int K = gpu_scan_items(elt), w = elt->width;
#define SCANOP(a, b) (left ? cg_apply2(g, f, (a), (b)) : cg_apply2(g, f, (b), (a)))
    cg_line(g, "#if AX_LOOKBACK");
    kbegin(g, R_SCAN1);
    Val tx = cg_val(g, w), px = cg_val(g, w);
    for (int l = 0; l < w; l++) {
        tx.v[l] = cg_fresh(g, "tx");
        px.v[l] = cg_fresh(g, "px");
        cg_line(g, "AX_SHARED %s %s[AX_WG * %d];", cg_ctype(ty_leaf(elt, l)), tx.v[l], K);
        cg_line(g, "AX_SHARED %s %s[1];", cg_ctype(ty_leaf(elt, l)), px.v[l]);
    }
    Val sh = shared(g, elt, "sh");
    cg_line(g, "AX_SHARED u8 hv_[AX_WG];");
    cg_line(g, "AX_SHARED i64 tid_[1];");
    cg_line(g, "AX_SHARED int ph_[1];");
    cg_line(g, "AX_G u32 *flag_ = (AX_G u32 *)s1_;");
    cg_line(g, "AX_G u64 *vs_ = (AX_G u64 *)s2_;");
    cg_line(g, "const i64 ntr = ch_, T = AX_WG * %d;", K);
    cg_line(g, "for (;;) {");
    open_(g);
    cg_line(g, "if (ax_lid == 0) tid_[0] = (i64)ax_fetch_add32(flag_, 1u);");
    cg_line(g, "ax_barrier();");
    cg_line(g, "const i64 t = tid_[0];");
    cg_line(g, "ax_barrier();");
    cg_line(g, "if (t >= m_) break;");
    cg_line(g, "const i64 row = t / ntr, k = t %% ntr;");
    cg_line(g, "const i64 rb = row * n_, ob = row * %s, lo = k * T, len = ax_min64(T, n_ - lo);",
            incl_z ? "(n_ + 1)" : "n_");
    /* striped loads (coalesced) into the tile, in scan order */
    cg_line(g, "for (int r = 0; r < %d; r++) {", K);
    open_(g);
    cg_line(g, "const i64 i = r * AX_WG + ax_lid;");
    cg_line(g, "if (i < len) {");
    open_(g);
    cg_line(g, "const i64 j = %s;", left ? "lo + i" : "n_ - 1 - (lo + i)");
    g->pos = "(rb + j)";
    put(g, tx, "i", cg_read_lin(g, 0, "rb + j"));
    close_(g);
    close_(g);
    cg_line(g, "ax_barrier();");
    /* each thread's K consecutive elements, scanned in place.  The
     * threads' loops over their own elements run K times in every thread,
     * the count of elements a guard inside: with a count that differs
     * between threads (cnt), PoCL 3.1's work-group compiler (loopvec) let
     * every thread follow thread 0 at the branch that enters or skips the
     * loop just after a barrier (it takes the barriers here, all in the
     * tile loop that ends by a break, for conditional ones and decides
     * such branches once, by the first thread), so that in a last tile a
     * thread with no element ran its loop on past the tile until it
     * faulted.  A trip count the same in every thread leaves no such
     * branch; the striped loads and stores have that form too. */
    cg_line(g, "const i64 b0 = ax_lid * %d;", K);
    cg_line(g, "const int cnt = (int)ax_max64(0, ax_min64(%d, len - b0));", K);
    Val run = cg_decl(g, elt, "y");
    cg_line(g, "int hr = 0;");
    cg_line(g, "for (int r = 0; r < %d; r++) {", K);
    open_(g);
    cg_line(g, "if (r < cnt) {");
    open_(g);
    Val it = snap(g, elt, at(g, tx, "b0 + r"));
    cg_line(g, "if (hr) {");
    open_(g);
    cg_update(g, elt, run, SCANOP(run, it));
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    cg_assign(g, run, it);
    close_(g);
    cg_line(g, "hr = 1;");
    put(g, tx, "b0 + r", run);
    close_(g);
    close_(g);
    put(g, sh, "ax_lid", run);
    cg_line(g, "hv_[ax_lid] = (u8)hr;");
    cg_line(g, "ax_barrier();");
    /* the threads' totals */
    team_scan(g, f, left, elt, sh, "AX_WG", "hv_[ax_lid] && ax_lid >= s");
    /* the look-back, by the first thread */
    cg_line(g, "if (ax_lid == 0) {");
    open_(g);
    Val agg = snap(g, elt, at(g, sh, cg_fmt(g, "(len - 1) / %d", K)));
    Val p = cg_decl(g, elt, "p");
    cg_line(g, "int hp = 0;");
    cg_line(g, "if (k == 0) {");
    open_(g);
    if (z) {
        cg_assign(g, p, zval(g, elt));
        cg_line(g, "hp = 1;");
    }
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    publish(g, elt, agg, 0);
    cg_line(g, "for (i64 q = t - 1;; q--) {");
    open_(g);
    cg_line(g, "u32 fl;");
    cg_line(g, "do { fl = ax_cas32(&flag_[1 + q], 0u, 0u); } while (fl == 0u);");
    cg_line(g, "ax_fence();");
    Val pv = cg_val(g, w);
    for (int l = 0; l < w; l++) {
        const char *bits = cg_local(g, AX_U64, cg_fmt(g, "ax_cas64(&vs_[(%d + (fl == 2u)) * m_ + q], (u64)0, (u64)0)", 2 * l));
        pv.v[l] = cg_local(g, ty_leaf(elt, l), from_u64(g, ty_leaf(elt, l), bits));
    }
    cg_line(g, "if (hp) {");
    open_(g);
    cg_update(g, elt, p, SCANOP(pv, p));
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    cg_assign(g, p, pv);
    close_(g);
    cg_line(g, "hp = 1;");
    cg_line(g, "if (fl == 2u) break;");
    close_(g);
    close_(g);
    Val inc = cg_decl(g, elt, "c");
    cg_assign(g, inc, agg);
    cg_line(g, "if (hp) {");
    open_(g);
    cg_update(g, elt, inc, SCANOP(p, agg));
    close_(g);
    publish(g, elt, inc, 1);
    put(g, px, "0", p);
    cg_line(g, "ph_[0] = hp;");
    if (ex) {
        cg_line(g, "if (k == ntr - 1) {");
        open_(g);
        cg_store(g, 1, elt, "row", inc);
        close_(g);
    }
    if (incl_z) {
        cg_line(g, "if (k == 0) {");
        open_(g);
        cg_store(g, 0, elt, left ? "ob" : "ob + n_", zval(g, elt));
        close_(g);
    }
    close_(g);
    cg_line(g, "ax_barrier();");
    /* each element: the prefix before the tile, then the threads' before
     * this one, then its own (ex: the value before it) */
    Val c = cg_decl(g, elt, "q");
    cg_line(g, "int hc = ph_[0];");
    cg_assign(g, c, at(g, px, "0"));
    cg_line(g, "if (ax_lid > 0) {");
    open_(g);
    Val e = snap(g, elt, at(g, sh, "ax_lid - 1"));
    cg_line(g, "if (hc) {");
    open_(g);
    cg_update(g, elt, c, SCANOP(c, e));
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    cg_assign(g, c, e);
    close_(g);
    cg_line(g, "hc = 1;");
    close_(g);
    Val prev = cg_decl(g, elt, "v");
    cg_assign(g, prev, c);
    cg_line(g, "for (int r = 0; r < %d; r++) {", K);
    open_(g);
    cg_line(g, "if (r < cnt) {");
    open_(g);
    Val cur = snap(g, elt, at(g, tx, "b0 + r"));
    Val incv = cg_decl(g, elt, "u");
    cg_assign(g, incv, cur);
    cg_line(g, "if (hc) {");
    open_(g);
    cg_update(g, elt, incv, SCANOP(c, cur));
    close_(g);
    put(g, tx, "b0 + r", ex ? prev : incv);
    if (ex) cg_assign(g, prev, incv);
    close_(g);
    close_(g);
    cg_line(g, "ax_barrier();");
    /* striped stores */
    cg_line(g, "for (int r = 0; r < %d; r++) {", K);
    open_(g);
    cg_line(g, "const i64 i = r * AX_WG + ax_lid;");
    cg_line(g, "if (i < len) {");
    open_(g);
    cg_line(g, "const i64 j = %s;", left ? "lo + i" : "n_ - 1 - (lo + i)");
    cg_store(g, 0, elt, left && incl_z ? "ob + j + 1" : "ob + j", at(g, tx, "i"));
    close_(g);
    close_(g);
    cg_line(g, "ax_barrier();");
    close_(g);
    close_(g);
    cg_line(g, "#endif");
#undef SCANOP
}

/* ------------------------------------------------------------ permute */

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
    open_(g);
    const char *sh, *wp = leaf_word(g, s, k, lin, &sh), *ob = cg_fresh(g, "ob");
    const char *mask = bits == 8 ? "0xffu" : "0xffffu";
    cg_line(g, "u32 %s = 0;", ob);
    cg_line(g, "for (;;) {");
    open_(g);
    const char *nb = cg_fmt(g, "(%s & ~(%s << %s)) | (((u32)(%s)%s & %s) << %s)", ob, mask, sh, cg_utype(s), v, mask, sh);
    const char *seen = cg_local(g, AX_U32, cg_fmt(g, "ax_cas32(%s, %s, %s)", wp, ob, nb));
    cg_line(g, "if (%s == %s) break;", seen, ob);
    cg_line(g, "%s = %s;", ob, seen);
    close_(g);
    close_(g);
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
            open_(g);
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
            open_(g);
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
            close_(g);
            close_(g);
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
    open_(g);
    cg_line(g, "if (ax_cas32(%s, 0u, 1u) == 0u) {", lk);
    open_(g);
    cg_line(g, "ax_fence();");
    Val old = cg_val(g, w);
    for (int k = 0; k < old.n; k++) old.v[k] = atomic_read(g, ty_leaf(elt, k), k, lin);
    Val nv = cg_apply2(g, comb, v, old);
    for (int k = 0; k < w && k < nv.n; k++) atomic_write(g, ty_leaf(elt, k), k, lin, nv.v[k]);
    cg_line(g, "ax_fence();");
    cg_line(g, "ax_xchg32(%s, 0u);", lk);
    cg_line(g, "%s = 1;", done);
    close_(g);
    close_(g);
}

static void emit_permute(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    kbegin(g, R_DFLT);
    grid_loop(g, "i", "n0");
    g->pos = "i";
    cg_store(g, 0, elt, "i", cg_read_lin(g, 0, "i"));
    close_(g);
    close_(g);

    int ss = cg_opd_slot(cn, 1);
    kbegin(g, R_PERM);
    grid_loop(g, "i", cg_fmt(g, "n%d", ss));
    g->pos = "i";
    Val ix = index_of(g, ss, cg_opd_node(cn, 1)->type->rank, "i");
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
            open_(g);
            if (g->safe) cg_line(g, "%s", cg_fail_ix(g, AX_ERR_INDEX, SITE_PERMUTE, 0, t, tr));
            cg_line(g, "continue;");
            close_(g);
        }
        const char *lin = cg_linear(g, 0, t);
        Val v = cg_read_lin(g, 1, "i");
        combine(g, x->kid[0], elt, lin, v);
    }
    close_(g);
    close_(g);
}

/* ------------------------------------------------------------ stencils */

static void emit_stencil(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Stencil *st = x->sten;
    int r = st->rank;
    const Type *elt = x->type->elt;
    if (!cg_sten_check(g)) return;
    kbegin(g, R_MAIN);
    cg_sten_prologue(g, true);
    grid_loop(g, "i", "n0");
    g->pos = "i";
    Val ix = index_of(g, 0, r, "i");
    cg_line(g, "const i64 j = %s;", ix.v[r - 1]);
    Buf b = {0};
    buf_put(&b, "1");
    for (int d = 0; d < r; d++) buf_printf(&b, " & (%s >= lo%d) & (%s < hi%d)", ix.v[d], d, ix.v[d], d);
    cg_line(g, "const int inner = %s;", cg_buf_text(g, &b, "0"));
    free(b.s);
    cg_line(g, "if (inner) {");
    open_(g);
    cg_sten_row_bases(g, ix);
    int na = 0;
    Val *args = cg_sten_args(g, true, ix, "j", &na);
    if (args) cg_store(g, 0, elt, "i", cg_apply(g, x->kid[0], args, na));
    g->ind--;
    cg_line(g, "} else {");
    open_(g);
    args = cg_sten_args(g, false, ix, "j", &na);
    if (args) cg_store(g, 0, elt, "i", cg_apply(g, x->kid[0], args, na));
    close_(g);
    close_(g);
    close_(g);
}

/* ------------------------------------------------------------ filter */

static void emit_filter(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[0];
    const Type *elt = x->type->elt;
    /* count: per chunk (a group each), the elements kept */
    kbegin(g, R_COUNT);
    cg_line(g, "AX_SHARED i64 shc_[AX_WG];");
    cg_line(g, "AX_G i64 *cnt = (AX_G i64 *)s1_;");
    cg_line(g, "for (i64 t = ax_grp; t < m_; t += ax_ngrp) {");
    open_(g);
    cg_line(g, "const i64 lo = t * ch_, hi = ax_min64(lo + ch_, n_);");
    cg_line(g, "i64 c = 0;");
    cg_line(g, "for (i64 i = lo + ax_lid; i < hi; i += AX_WG) {");
    open_(g);
    g->pos = "i";
    Val v = cg_read_lin(g, 0, "i");
    Val k = cg_apply(g, p, &v, 1);
    if (k.n == 1) cg_line(g, "c += (i64)%s;", k.v[0]);
    close_(g);
    cg_line(g, "shc_[ax_lid] = c;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = AX_WG / 2; s > 0; s >>= 1) {");
    open_(g);
    cg_line(g, "if (ax_lid < s) shc_[ax_lid] += shc_[ax_lid + s];");
    cg_line(g, "ax_barrier();");
    close_(g);
    cg_line(g, "if (ax_lid == 0) cnt[t] = shc_[0];");
    cg_line(g, "ax_barrier();");
    close_(g);
    close_(g);

    /* scatter: per chunk, tile by tile, each kept element at its place */
    kbegin(g, R_SCATTER);
    cg_line(g, "AX_SHARED i64 shc_[AX_WG];");
    cg_line(g, "AX_G const i64 *offs = (AX_G const i64 *)s2_;");
    cg_line(g, "for (i64 t = ax_grp; t < m_; t += ax_ngrp) {");
    open_(g);
    cg_line(g, "const i64 lo = t * ch_, hi = ax_min64(lo + ch_, n_);");
    cg_line(g, "i64 run = offs[t];");
    cg_line(g, "for (i64 tb = lo; tb < lo + ch_; tb += AX_WG) {");
    open_(g);
    cg_line(g, "const i64 i = tb + ax_lid;");
    v = cg_decl(g, elt, "e");
    cg_line(g, "u8 keep = 0;");
    cg_line(g, "if (i < hi) {");
    open_(g);
    g->pos = "i";
    cg_assign(g, v, cg_read_lin(g, 0, "i"));
    k = cg_apply(g, p, &v, 1);
    if (k.n == 1) cg_line(g, "keep = %s;", k.v[0]);
    close_(g);
    cg_line(g, "shc_[ax_lid] = keep;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = 1; s < AX_WG; s <<= 1) {");
    open_(g);
    cg_line(g, "const i64 y = ax_lid >= s ? shc_[ax_lid - s] : 0;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "shc_[ax_lid] += y;");
    cg_line(g, "ax_barrier();");
    close_(g);
    cg_line(g, "if (keep) {");
    open_(g);
    cg_store(g, 0, elt, "run + shc_[ax_lid] - 1", v);
    close_(g);
    cg_line(g, "run += shc_[AX_WG - 1];");
    cg_line(g, "ax_barrier();");
    close_(g);
    close_(g);
    close_(g);
}

/* ------------------------------------------------------------ loop */

/* A multi-generator loop (ir.h Loop; cg_skel.c emit_loop on the CPU).
 * part: the fold's teams (a task is a chunk of a row; a whole group per
 * chunk when there are filters), each thread taking its elements as the
 * fold's do (in order for a non-commutative operator), the element read
 * once and handed to every generator: collects stored, filters counted,
 * reductions accumulated (a conditional one only where its predicate
 * holds); then one tree per team for the reductions (a left neighbour
 * with its right one, as the fold's) and the filters' counts.  comb: the
 * fold's, per reduction.  scatter: the filter's tiles, a scan of the kept
 * flags per filter. */
static void emit_loop(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x;
    const Loop *lp = x->loop;
    int ng = lp->ngen, nred = 0, nflt = 0;
    const Type **rts = arena_alloc(g->ar, sizeof *rts * (size_t)(ng + 1));
    int *roff = arena_alloc(g->ar, sizeof *roff * (size_t)(ng + 1));
    Val *sh = arena_alloc(g->ar, sizeof *sh * (size_t)(ng + 1));
    if (!rts || !roff || !sh) return cg_fail(g, "gpu codegen: out of memory");
    bool comm = true;
    int w = 0;
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) nflt++;
        if (gn->kind != LOOP_REDUCE) continue;
        rts[nred++] = loop_comp_type(x, gn->comp);
        roff[q] = w;
        w += rts[nred - 1]->width;
        comm = comm && gn->pred < 0 && cg_lam_comm(x->kid[gn->op], NULL);
    }
    const Type *rt = ty_tuple(g->ar, nred, rts);
    if (!rt) return cg_fail(g, "gpu codegen: out of memory");
    cn->comm = comm;
    cn->scratch_leaves = rt->width;

    /* part */
    kbegin(g, R_PART);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_REDUCE) {
            sh[q] = shared(g, loop_comp_type(x, gn->comp), "sh");
            cg_line(g, "AX_SHARED u8 hv%d_[AX_WG];", q);
        } else if (gn->kind == LOOP_FILTER) {
            cg_line(g, "AX_SHARED i64 shc%d_[AX_WG];", q);
        }
    }
    cg_line(g, "const i64 W = w_, TPG = AX_WG / W, team = ax_lid / W, lane = ax_lid %% W;");
    Val qp = scratch(g, rt, "s1_", "m_");
    cg_line(g, "AX_G i64 *cnt = (AX_G i64 *)s2_;");
    cg_line(g, "AX_G u8 *hvp = (AX_G u8 *)(cnt + %d * 2 * m_);", ng);
    cg_line(g, "for (i64 base = ax_grp * TPG; base < m_; base += ax_ngrp * TPG) {");
    open_(g);
    cg_line(g, "const i64 t = base + team;");
    cg_line(g, "const int live = t < m_;");
    cg_line(g, "const i64 row = live ? t / nch_ : 0, k = live ? t %% nch_ : 0;");
    cg_line(g, "const i64 lo = row * n_ + k * ch_, hi = live ? ax_min64(lo + ch_, row * n_ + n_) : lo;");
    RowRead rr = row_read(g, "row", "row * n_");
    Val acc = cg_decl(g, rt, "y");
    for (int q = 0; q < ng; q++) {
        if (lp->gen[q].kind == LOOP_REDUCE) cg_line(g, "int have%d = 0;", q);
        if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "i64 c%d = 0;", q);
    }
    if (comm) {
        cg_line(g, "for (i64 j = lo + lane; j < hi; j += W) {");
    } else {
        cg_line(g, "const i64 per = (hi - lo + W - 1) / W, la = ax_min64(lo + lane * per, hi), lb = ax_min64(la + per, hi);");
        cg_line(g, "for (i64 j = la; j < lb; j++) {");
    }
    open_(g);
    g->pos = "j";
    Val v = snap(g, x->kid[0]->type->elt, read_row(g, &rr, "j"));
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        const Type *ct = loop_comp_type(x, gn->comp);
        Val c = cg_loop_comp(g, v, gn->comp);
        if (gn->kind == LOOP_COLLECT) {
            cg_store(g, q, ct, "j", c);
        } else if (gn->kind == LOOP_FILTER) {
            cg_line(g, "c%d += (i64)%s;", q, cg_loop_comp(g, v, gn->pred).v[0]);
        } else {
            if (gn->pred >= 0) {
                cg_line(g, "if (%s) {", cg_loop_comp(g, v, gn->pred).v[0]);
                open_(g);
            }
            accumulate(g, x->kid[gn->op], ct, cg_slice(acc, roff[q], ct->width), cg_fmt(g, "have%d", q), c);
            if (gn->pred >= 0) close_(g);
        }
    }
    close_(g);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_REDUCE) {
            const Type *ct = loop_comp_type(x, gn->comp);
            put(g, sh[q], "ax_lid", cg_slice(acc, roff[q], ct->width));
            cg_line(g, "hv%d_[ax_lid] = (u8)have%d;", q, q);
        } else if (gn->kind == LOOP_FILTER) {
            cg_line(g, "shc%d_[ax_lid] = c%d;", q, q);
        }
    }
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = 1; s < W; s <<= 1) {");
    open_(g);
    cg_line(g, "if ((lane & (2 * s - 1)) == 0 && lane + s < W) {");
    open_(g);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) cg_line(g, "shc%d_[ax_lid] += shc%d_[ax_lid + s];", q, q);
        if (gn->kind != LOOP_REDUCE) continue;
        const Type *ct = loop_comp_type(x, gn->comp);
        cg_line(g, "if (hv%d_[ax_lid + s]) {", q);
        open_(g);
        Val a = snap(g, ct, at(g, sh[q], "ax_lid")), b = snap(g, ct, at(g, sh[q], "ax_lid + s"));
        cg_line(g, "if (hv%d_[ax_lid]) {", q);
        open_(g);
        put(g, sh[q], "ax_lid", cg_apply2(g, x->kid[gn->op], a, b));
        g->ind--;
        cg_line(g, "} else {");
        open_(g);
        put(g, sh[q], "ax_lid", b);
        close_(g);
        cg_line(g, "hv%d_[ax_lid] = 1;", q);
        close_(g);
    }
    close_(g);
    cg_line(g, "ax_barrier();");
    close_(g);
    cg_line(g, "if (live && lane == 0) {");
    open_(g);
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) cg_line(g, "cnt[%d * m_ + t] = shc%d_[ax_lid];", q, q);
        if (gn->kind != LOOP_REDUCE) continue;
        const Type *ct = loop_comp_type(x, gn->comp);
        Val res = snap(g, ct, at(g, sh[q], "ax_lid"));
        cg_line(g, "if (nch_ == 1) {");
        open_(g);
        Val y = cg_decl(g, ct, "r");
        if (gn->z >= 0) {
            Val z = cg_param(g, cn->kid_thunk[gn->z], ct);
            cg_assign(g, y, z);
            cg_line(g, "if (hv%d_[ax_lid]) {", q);
            open_(g);
            cg_update(g, ct, y, cg_apply2(g, x->kid[gn->op], z, res));
            close_(g);
        } else {
            cg_assign(g, y, res);
        }
        cg_store(g, q, ct, "row", y);
        g->ind--;
        cg_line(g, "} else {");
        open_(g);
        put(g, cg_slice(qp, roff[q], ct->width), "t", res);
        cg_line(g, "hvp[%d * m_ + t] = hv%d_[ax_lid];", q, q);
        close_(g);
    }
    close_(g);
    cg_line(g, "ax_barrier();");
    close_(g);
    close_(g);

    /* comb */
    if (nred) {
        kbegin(g, R_COMB);
        qp = scratch(g, rt, "s1_", "m_");
        cg_line(g, "AX_G const u8 *hvp = (AX_G const u8 *)((AX_G const i64 *)s2_ + %d * 2 * m_);", ng);
        grid_loop(g, "r", "(m_ / (nch_ > 0 ? nch_ : 1))");
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_REDUCE) continue;
            const Type *ct = loop_comp_type(x, gn->comp);
            Val part = cg_slice(qp, roff[q], ct->width);
            Val y = cg_decl(g, ct, "y");
            const char *have = cg_fresh(g, "have");
            cg_line(g, "int %s = %d;", have, gn->z >= 0);
            if (gn->z >= 0) cg_assign(g, y, cg_param(g, cn->kid_thunk[gn->z], ct));
            cg_line(g, "for (i64 k = 0; k < nch_; k++) {");
            open_(g);
            cg_line(g, "if (!hvp[%d * m_ + r * nch_ + k]) continue;", q);
            accumulate(g, x->kid[gn->op], ct, y, have, at(g, part, "r * nch_ + k"));
            close_(g);
            cg_store(g, q, ct, "r", y);
        }
        close_(g);
        close_(g);
    }

    /* scatter */
    if (nflt) {
        kbegin(g, R_SCATTER);
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "AX_SHARED i64 shc%d_[AX_WG];", q);
        cg_line(g, "AX_G const i64 *offs = (AX_G const i64 *)s2_ + %d * m_;", ng);
        cg_line(g, "for (i64 t = ax_grp; t < m_; t += ax_ngrp) {");
        open_(g);
        cg_line(g, "const i64 lo = t * ch_, hi = ax_min64(lo + ch_, n_);");
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "i64 run%d = offs[%d * m_ + t];", q, q);
        cg_line(g, "for (i64 tb = lo; tb < lo + ch_; tb += AX_WG) {");
        open_(g);
        cg_line(g, "const i64 i = tb + ax_lid;");
        v = cg_decl(g, x->kid[0]->type->elt, "e");
        cg_line(g, "if (i < hi) {");
        open_(g);
        g->pos = "i";
        cg_assign(g, v, cg_read_lin(g, 0, "i"));
        close_(g);
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_FILTER) continue;
            cg_line(g, "const u8 keep%d = i < hi && %s;", q, cg_loop_comp(g, v, gn->pred).v[0]);
            cg_line(g, "shc%d_[ax_lid] = keep%d;", q, q);
        }
        cg_line(g, "ax_barrier();");
        cg_line(g, "for (i64 s = 1; s < AX_WG; s <<= 1) {");
        open_(g);
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "const i64 y%d = ax_lid >= s ? shc%d_[ax_lid - s] : 0;", q, q);
        cg_line(g, "ax_barrier();");
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "shc%d_[ax_lid] += y%d;", q, q);
        cg_line(g, "ax_barrier();");
        close_(g);
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_FILTER) continue;
            cg_line(g, "if (keep%d) {", q);
            open_(g);
            cg_store(g, q, loop_comp_type(x, gn->comp), cg_fmt(g, "run%d + shc%d_[ax_lid] - 1", q, q),
                     cg_loop_comp(g, v, gn->comp));
            close_(g);
            cg_line(g, "run%d += shc%d_[AX_WG - 1];", q, q);
        }
        cg_line(g, "ax_barrier();");
        close_(g);
        close_(g);
        close_(g);
    }
}

/* ------------------------------------------------------------ entry */

void gpu_emit_node(G *g, CgNode *cn)
{
    const Node *x = cn->x;
    buf_printf(g->b, "\n/* %d: %s */\n", x->num, op_name(x->op));
    switch (x->op) {
    case OP_GENERATE: case OP_BACKPERMUTE: case OP_TRANSFORM: case OP_REPLICATE: case OP_SLICE:
        emit_producer(g, R_MAIN);
        break;
    case OP_MAP: case OP_RESHAPE:
        emit_producer(g, R_LIN);
        break;
    case OP_ZIPWITH:
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
        break;   /* thunks only: evaluated on the host */
    default:
        cg_fail(g, "gpu codegen: no skeleton for %s", op_name(x->op));
        break;
    }
}
