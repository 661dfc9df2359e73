/*
 * The CPU's scans: the six scans (interp.c op_scan for the meaning of
 * each) in three phases, the thesis' and Accelerate's multicore scan:
 * chunk totals (fold.c's row machinery, any grouping: the operator is
 * associative), a sequential scan of the totals per row (the carries),
 * and each chunk scanned from its carry-in.  With one chunk per row (many
 * rows) each row is one sequential scan.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"
#include <stdlib.h>

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
    if (t->width > (int)(sizeof ops / sizeof *ops) || t->width != acc.n || !cg_lam_comm(f, ops)) return NULL;
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
    (void)cg_read_lin(g, 0, "rb + jv");
    bool r = g->ndefer > nd;
    g->ndefer = nd;
    g->b = b;
    free(aside.s);
    return r;
}

void cpu_emit_scan(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    Op op = x->op;
    bool left = op == OP_SCANL || op == OP_SCANL1 || op == OP_SCANLEX;
    bool z = cg_has_z(op), ex = op == OP_SCANLEX || op == OP_SCANREX, incl_z = z && !ex;
    const Type *at = ex ? x->type->elts[0] : x->type, *elt = at->elt;
    cn->comm = cg_lam_comm(f, NULL);
    cn->scratch_leaves = elt->width;
    const char *ext = incl_z ? "(n + 1)" : "n";

    /* part: chunk totals (any grouping: f is associative) */
    Val q;
    CgRowRead rr = cpu_part_begin(g, elt, &q);
    cg_put(g, q, "t", cpu_fold_range(g, f, elt, "lo", "hi", cn->comm, at->rank == 1, &rr));
    cg_close(g);
    cpu_kernel_end(g);

    /* carry: per row, sequentially, the value entering each chunk */
    cpu_kernel_begin(g, R_CARRY, 0, true);
    cg_line(g, "const i64 nch = c->nchunk;");
    q = cpu_scratch(g, elt, "c->s1");
    Val cy = cpu_scratch(g, elt, "c->s2");
    cg_line(g, "for (i64 r = start; r < end; r++) {");
    g->ind++;
    cg_line(g, "const i64 base = r * nch;");
    Val acc = cg_decl(g, elt, "y");
    if (left) {
        cg_assign(g, acc, z ? cpu_zval(g, elt) : cg_at(g, q, "base"));
        cg_line(g, "for (i64 k = %d; k < nch; k++) {", z ? 0 : 1);
        g->ind++;
        cpu_keep_loop(g);
        cg_put(g, cy, "base + k", acc);
        cg_update(g, elt, acc, cg_apply2(g, f, acc, cg_at(g, q, "base + k")));
        cg_close(g);
    } else {
        cg_assign(g, acc, z ? cpu_zval(g, elt) : cg_at(g, q, "base + nch - 1"));
        cg_line(g, "for (i64 k = nch - %d; k >= 0; k--) {", z ? 1 : 2);
        g->ind++;
        cpu_keep_loop(g);
        cg_put(g, cy, "base + k", acc);
        cg_update(g, elt, acc, cg_apply2(g, f, cg_at(g, q, "base + k"), acc));
        cg_close(g);
    }
    if (ex) cg_store(g, 1, elt, "r", acc);
    cg_close(g);
    cpu_kernel_end(g);

    /* scan: each chunk from its carry-in */
    cpu_kernel_begin(g, R_SCAN, 0, true);
    cg_line(g, "const i64 n = c->n, ch = c->chunk, nch = c->nchunk;");
    cy = cpu_scratch(g, elt, "c->s2");
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 row = nch == 1 ? t : t / nch, k = nch == 1 ? 0 : t %% nch;");   /* fold.c cpu_part_loop */
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
        cg_assign(g, acc, cpu_zval(g, elt));
        if (incl_z) cg_store(g, 0, elt, zpos, acc);
    } else {
        g->pos = cg_fmt(g, "(rb + %s)", first);
        cg_assign(g, acc, cg_read_lin(g, 0, cg_fmt(g, "rb + %s", first)));
        cg_store(g, 0, elt, cg_fmt(g, "ob + %s", first), acc);
        cg_line(g, "j = %s;", next);
    }
    g->ind--;
    cg_line(g, "} else {");
    g->ind++;
    cg_line(g, "hc = 1;");
    cg_assign(g, cv, cg_at(g, cy, "t"));
    if (ex) cg_store(g, 0, elt, cg_fmt(g, "ob + %s", first), cv);
    g->pos = cg_fmt(g, "(rb + %s)", first);
    cg_assign(g, acc, cg_read_lin(g, 0, cg_fmt(g, "rb + %s", first)));
    if (!ex) {
        const char *at0 = left && incl_z ? cg_fmt(g, "ob + %s + 1", first) : cg_fmt(g, "ob + %s", first);
        cg_store(g, 0, elt, at0, left ? cg_apply2(g, f, cv, acc) : cg_apply2(g, f, acc, cv));
    }
    cg_line(g, "j = %s;", next);
    cg_close(g);
    /* The loop twice, with and without a carry: no test per element.  An
     * operator that is an OpenMP reduction on every leaf scans under
     * `omp simd reduction(inscan)`, which GCC
     * vectorises (log-step prefix sums in registers); -fopenmp-simd
     * honours it without the OpenMP runtime. */
    /* A delayed operand's code may check indices: in a kernel with
     * deferred checks the flag bad_ joins the scan as an inscan `|`
     * (OpenMP allows no other reduction beside inscan ones); its checked
     * copy, which calls ax_fail, keeps the plain loop. */
    bool delayed = cg_opd_node(cn, 0)->op == OP_DELAYED;
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
                Val xj = cg_read_lin(g, 0, "rb + jv");
                cg_update(g, elt, acc, left ? cg_apply2(g, f, acc, xj) : cg_apply2(g, f, xj, acc));
            } else {
                cg_store(g, 0, elt, out, !carry ? acc : left ? cg_apply2(g, f, cv, acc) : cg_apply2(g, f, acc, cv));
            }
            if (red) cg_close(g);
            if (red && pass == 0) cg_line(g, "#pragma omp scan %s(%s)", ex ? "exclusive" : "inclusive", rvars);
        }
        cg_close(g);
        g->ind--;
    }
    cg_line(g, "}");
    if (ex) {
        /* one chunk per row: the row's total is here (else: carry's) */
        cg_line(g, "if (nch == 1) {");
        g->ind++;
        cg_store(g, 1, elt, "row", acc);
        cg_close(g);
    }
    cg_close(g);
    cpu_kernel_end(g);
}

