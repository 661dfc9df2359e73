/*
 * The GPU's scans.  Three phases (as on the CPU): chunk totals (fold.c's
 * team reduction), a per-row scan of the totals (the carries), and each
 * chunk scanned in tiles of w_ elements by a team (an in-order
 * Hillis-Steele scan in shared memory), each tile's values combined with
 * the running prefix.  Right scans are the mirror image: they run in
 * "scan order" from the end of the row, the operator's operands swapped
 * (x (.) y = f(y, x) is associative too).  Where the device's groups make
 * progress independently, a single pass with decoupled look-back instead
 * (below).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

/* An in-order inclusive Hillis-Steele scan of the values in shared arrays
 * sh over strides s < limit (a team's lanes): a thread for which `take`
 * holds combines the value s places before its own, earlier operand on
 * the scan order's left (x (.) y = f(x, y), or f(y, x) for right scans).
 * Every thread runs the loop (it has barriers). */
static void team_scan(G *g, const Node *f, bool left, const Type *elt, Val sh, const char *limit, const char *take)
{
    cg_line(g, "for (i64 s = 1; s < %s; s <<= 1) {", limit);
    cg_open(g);
    cg_line(g, "const int tk = %s;", take);
    Val tmp = cg_decl(g, elt, "h");
    cg_line(g, "if (tk) {");
    cg_open(g);
    Val a = gpu_snap(g, elt, cg_at(g, sh, "ax_lid - s")), b = gpu_snap(g, elt, cg_at(g, sh, "ax_lid"));
    cg_assign(g, tmp, left ? cg_apply2(g, f, a, b) : cg_apply2(g, f, b, a));
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_line(g, "if (tk) {");
    cg_open(g);
    cg_put(g, sh, "ax_lid", tmp);
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_close(g);
}

static void emit_scan1(G *g);

void gpu_emit_scan(G *g)
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
    gpu_team_reduce(g, GPU_RED_SCAN);

    /* carry: per row, sequentially, the value entering each chunk */
    gpu_kernel_begin(g, R_CARRY);
    Val q = gpu_scratch(g, elt, "s1_", "m_");
    Val cy = gpu_scratch(g, elt, "s2_", "m_");
    gpu_grid_loop(g, "r", "(m_ / nch_)");
    cg_line(g, "const i64 base = r * nch_;");
    Val acc = cg_decl(g, elt, "y");
    if (left) {
        cg_assign(g, acc, z ? gpu_zval(g, elt) : cg_at(g, q, "base"));
        cg_line(g, "for (i64 k = %d; k < nch_; k++) {", z ? 0 : 1);
        cg_open(g);
        cg_put(g, cy, "base + k", acc);
        cg_update(g, elt, acc, cg_apply2(g, f, acc, cg_at(g, q, "base + k")));
        cg_close(g);
    } else {
        cg_assign(g, acc, z ? gpu_zval(g, elt) : cg_at(g, q, "base + nch_ - 1"));
        cg_line(g, "for (i64 k = nch_ - %d; k >= 0; k--) {", z ? 1 : 2);
        cg_open(g);
        cg_put(g, cy, "base + k", acc);
        cg_update(g, elt, acc, cg_apply2(g, f, cg_at(g, q, "base + k"), acc));
        cg_close(g);
    }
    if (ex) cg_store(g, 1, elt, "r", acc);
    cg_close(g);
    cg_close(g);

    /* scan: each chunk in tiles, from its carry-in */
    gpu_kernel_begin(g, R_SCAN);
    Val sh = gpu_shared(g, elt, "sh");
    cg_line(g, "const i64 W = w_, TPG = AX_WG / W, team = ax_lid / W, lane = ax_lid %% W, tb0 = team * W;");
    cy = gpu_scratch(g, elt, "s2_", "m_");
    cg_line(g, "for (i64 base = ax_grp * TPG; base < m_; base += ax_ngrp * TPG) {");
    cg_open(g);
    cg_line(g, "const i64 t = base + team;");
    cg_line(g, "const int live = t < m_;");
    cg_line(g, "const i64 row = live ? t / nch_ : 0, k = live ? t %% nch_ : 0;");
    cg_line(g, "const i64 rb = row * n_, ob = row * %s, lo = k * ch_, hi = live ? ax_min64(lo + ch_, n_) : lo;",
            incl_z ? "(n_ + 1)" : "n_");
    cg_line(g, "const i64 len = hi - lo;");
    acc = cg_decl(g, elt, "y");
    cg_line(g, "int hacc = 0;");
    cg_line(g, "if (live && %s) {", left ? "k > 0" : "k < nch_ - 1");
    cg_open(g);
    cg_assign(g, acc, cg_at(g, cy, "t"));
    cg_line(g, "hacc = 1;");
    cg_close(g);
    if (z) {
        cg_line(g, "if (live && %s) {", left ? "k == 0" : "k == nch_ - 1");
        cg_open(g);
        cg_assign(g, acc, gpu_zval(g, elt));
        cg_line(g, "hacc = 1;");
        if (incl_z) {
            cg_line(g, "if (lane == 0) {");
            cg_open(g);
            cg_store(g, 0, elt, left ? "ob" : "ob + n_", acc);
            cg_close(g);
        }
        cg_close(g);
    }
    cg_line(g, "for (i64 tb = 0; tb < ch_; tb += W) {");
    cg_open(g);
    cg_line(g, "const i64 i = tb + lane;");
    cg_line(g, "const int pr = live && i < len;");
    cg_line(g, "const i64 j = %s;", left ? "lo + i" : "hi - 1 - i");
    Val v = cg_decl(g, elt, "e");
    cg_line(g, "if (pr) {");
    cg_open(g);
    g->pos = "(rb + j)";
    cg_assign(g, v, cg_read_lin(g, 0, "rb + j"));
    cg_close(g);
    cg_put(g, sh, "ax_lid", v);
    cg_line(g, "ax_barrier();");
    team_scan(g, f, left, elt, sh, "W", "pr && lane >= s");
    cg_line(g, "if (pr) {");
    cg_open(g);
    if (ex) {
        /* before element i: the prefix so far, then the tile's before it */
        Val o = cg_decl(g, elt, "o");
        cg_assign(g, o, acc);
        cg_line(g, "if (lane > 0) {");
        cg_open(g);
        Val pv = gpu_snap(g, elt, cg_at(g, sh, "ax_lid - 1"));
        cg_update(g, elt, o, SCANOP(acc, pv));
        cg_close(g);
        cg_store(g, 0, elt, "ob + j", o);
    } else {
        Val p = gpu_snap(g, elt, cg_at(g, sh, "ax_lid"));
        Val o = cg_decl(g, elt, "o");
        cg_assign(g, o, p);
        cg_line(g, "if (hacc) {");
        cg_open(g);
        cg_update(g, elt, o, SCANOP(acc, p));
        cg_close(g);
        cg_store(g, 0, elt, left && incl_z ? "ob + j + 1" : "ob + j", o);
    }
    cg_close(g);
    cg_line(g, "const i64 last = ax_min64(W, len - tb) - 1;");
    cg_line(g, "if (live && last >= 0) {");
    cg_open(g);
    Val tot = gpu_snap(g, elt, cg_at(g, sh, "tb0 + last"));
    cg_line(g, "if (hacc) {");
    cg_open(g);
    cg_update(g, elt, acc, SCANOP(acc, tot));
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    cg_assign(g, acc, tot);
    cg_close(g);
    cg_line(g, "hacc = 1;");
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_close(g);
    if (ex) {
        /* one chunk per row: the row's total is here (else: carry's) */
        cg_line(g, "if (live && lane == 0 && nch_ == 1) {");
        cg_open(g);
        cg_store(g, 1, elt, "row", acc);
        cg_close(g);
    }
    cg_close(g);
    cg_close(g);
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
    gpu_kernel_begin(g, R_SCAN1);
    Val tx = cg_val(g, w), px = cg_val(g, w);
    for (int l = 0; l < w; l++) {
        tx.v[l] = cg_fresh(g, "tx");
        px.v[l] = cg_fresh(g, "px");
        cg_line(g, "AX_SHARED %s %s[AX_WG * %d];", cg_ctype(ty_leaf(elt, l)), tx.v[l], K);
        cg_line(g, "AX_SHARED %s %s[1];", cg_ctype(ty_leaf(elt, l)), px.v[l]);
    }
    Val sh = gpu_shared(g, elt, "sh");
    cg_line(g, "AX_SHARED u8 hv_[AX_WG];");
    cg_line(g, "AX_SHARED i64 tid_[1];");
    cg_line(g, "AX_SHARED int ph_[1];");
    cg_line(g, "AX_G u32 *flag_ = (AX_G u32 *)s1_;");
    cg_line(g, "AX_G u64 *vs_ = (AX_G u64 *)s2_;");
    cg_line(g, "const i64 ntr = ch_, T = AX_WG * %d;", K);
    cg_line(g, "for (;;) {");
    cg_open(g);
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
    cg_open(g);
    cg_line(g, "const i64 i = r * AX_WG + ax_lid;");
    cg_line(g, "if (i < len) {");
    cg_open(g);
    cg_line(g, "const i64 j = %s;", left ? "lo + i" : "n_ - 1 - (lo + i)");
    g->pos = "(rb + j)";
    cg_put(g, tx, "i", cg_read_lin(g, 0, "rb + j"));
    cg_close(g);
    cg_close(g);
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
    cg_open(g);
    cg_line(g, "if (r < cnt) {");
    cg_open(g);
    Val it = gpu_snap(g, elt, cg_at(g, tx, "b0 + r"));
    cg_line(g, "if (hr) {");
    cg_open(g);
    cg_update(g, elt, run, SCANOP(run, it));
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    cg_assign(g, run, it);
    cg_close(g);
    cg_line(g, "hr = 1;");
    cg_put(g, tx, "b0 + r", run);
    cg_close(g);
    cg_close(g);
    cg_put(g, sh, "ax_lid", run);
    cg_line(g, "hv_[ax_lid] = (u8)hr;");
    cg_line(g, "ax_barrier();");
    /* the threads' totals */
    team_scan(g, f, left, elt, sh, "AX_WG", "hv_[ax_lid] && ax_lid >= s");
    /* the look-back, by the first thread */
    cg_line(g, "if (ax_lid == 0) {");
    cg_open(g);
    Val agg = gpu_snap(g, elt, cg_at(g, sh, cg_fmt(g, "(len - 1) / %d", K)));
    Val p = cg_decl(g, elt, "p");
    cg_line(g, "int hp = 0;");
    cg_line(g, "if (k == 0) {");
    cg_open(g);
    if (z) {
        cg_assign(g, p, gpu_zval(g, elt));
        cg_line(g, "hp = 1;");
    }
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    publish(g, elt, agg, 0);
    cg_line(g, "for (i64 q = t - 1;; q--) {");
    cg_open(g);
    cg_line(g, "u32 fl;");
    cg_line(g, "do { fl = ax_cas32(&flag_[1 + q], 0u, 0u); } while (fl == 0u);");
    cg_line(g, "ax_fence();");
    Val pv = cg_val(g, w);
    for (int l = 0; l < w; l++) {
        const char *bits = cg_local(g, AX_U64, cg_fmt(g, "ax_cas64(&vs_[(%d + (fl == 2u)) * m_ + q], (u64)0, (u64)0)", 2 * l));
        pv.v[l] = cg_local(g, ty_leaf(elt, l), from_u64(g, ty_leaf(elt, l), bits));
    }
    cg_line(g, "if (hp) {");
    cg_open(g);
    cg_update(g, elt, p, SCANOP(pv, p));
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    cg_assign(g, p, pv);
    cg_close(g);
    cg_line(g, "hp = 1;");
    cg_line(g, "if (fl == 2u) break;");
    cg_close(g);
    cg_close(g);
    Val inc = cg_decl(g, elt, "c");
    cg_assign(g, inc, agg);
    cg_line(g, "if (hp) {");
    cg_open(g);
    cg_update(g, elt, inc, SCANOP(p, agg));
    cg_close(g);
    publish(g, elt, inc, 1);
    cg_put(g, px, "0", p);
    cg_line(g, "ph_[0] = hp;");
    if (ex) {
        cg_line(g, "if (k == ntr - 1) {");
        cg_open(g);
        cg_store(g, 1, elt, "row", inc);
        cg_close(g);
    }
    if (incl_z) {
        cg_line(g, "if (k == 0) {");
        cg_open(g);
        cg_store(g, 0, elt, left ? "ob" : "ob + n_", gpu_zval(g, elt));
        cg_close(g);
    }
    cg_close(g);
    cg_line(g, "ax_barrier();");
    /* each element: the prefix before the tile, then the threads' before
     * this one, then its own (ex: the value before it) */
    Val c = cg_decl(g, elt, "q");
    cg_line(g, "int hc = ph_[0];");
    cg_assign(g, c, cg_at(g, px, "0"));
    cg_line(g, "if (ax_lid > 0) {");
    cg_open(g);
    Val e = gpu_snap(g, elt, cg_at(g, sh, "ax_lid - 1"));
    cg_line(g, "if (hc) {");
    cg_open(g);
    cg_update(g, elt, c, SCANOP(c, e));
    g->ind--;
    cg_line(g, "} else {");
    cg_open(g);
    cg_assign(g, c, e);
    cg_close(g);
    cg_line(g, "hc = 1;");
    cg_close(g);
    Val prev = cg_decl(g, elt, "v");
    cg_assign(g, prev, c);
    cg_line(g, "for (int r = 0; r < %d; r++) {", K);
    cg_open(g);
    cg_line(g, "if (r < cnt) {");
    cg_open(g);
    Val cur = gpu_snap(g, elt, cg_at(g, tx, "b0 + r"));
    Val incv = cg_decl(g, elt, "u");
    cg_assign(g, incv, cur);
    cg_line(g, "if (hc) {");
    cg_open(g);
    cg_update(g, elt, incv, SCANOP(c, cur));
    cg_close(g);
    cg_put(g, tx, "b0 + r", ex ? prev : incv);
    if (ex) cg_assign(g, prev, incv);
    cg_close(g);
    cg_close(g);
    cg_line(g, "ax_barrier();");
    /* striped stores */
    cg_line(g, "for (int r = 0; r < %d; r++) {", K);
    cg_open(g);
    cg_line(g, "const i64 i = r * AX_WG + ax_lid;");
    cg_line(g, "if (i < len) {");
    cg_open(g);
    cg_line(g, "const i64 j = %s;", left ? "lo + i" : "n_ - 1 - (lo + i)");
    cg_store(g, 0, elt, left && incl_z ? "ob + j + 1" : "ob + j", cg_at(g, tx, "i"));
    cg_close(g);
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_close(g);
    cg_line(g, "#endif");
#undef SCANOP
}

