/*
 * The CPU's stencil: one kernel over the output's positions, a row
 * segment at a time, split into the interior (every neighbour of every
 * input inside: reads at fixed offsets, no bounds tests) and the border
 * (each coordinate through the boundary rule).  The prologue and the
 * neighbourhoods are cgen's (cgen/stencil.c), shared with the GPU's.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"
#include <stdlib.h>

/* ------------------------------------------------------------ index comparisons
 *
 * An ax_stencil_ix function that keeps the border, as the suites' Jacobi
 * sweeps do (`1 <= i < n - 1 ? average : edge[i]`, n an array's extent),
 * compares its index with values that do not change in the kernel.  In
 * the interior such a comparison usually holds for a whole row segment:
 * then the segment runs a copy of the interior loop in which it is the
 * constant 1 (G.hoist), so the arm not taken, and the read of a third
 * array in it, drops out of the loop.  Whether it holds is decided per
 * row: the row's own coordinates compared once, j's at the segment's ends
 * (a comparison is monotone in j). */
enum { IXC_MAX = 16 };
typedef struct IxCmp {
    const Node *cmp, *e;      /* the comparison; the side that is not the index */
    int d;                    /* index component d on the left */
    Prim p;                   /* P_LT, P_LE, P_GT or P_GE, the index on the left */
    bool held;                /* in ixc_row_holds' condition */
} IxCmp;
typedef struct IxScan {
    const G *g;
    int pid, rank;
    unsigned char *kind;      /* variable id -> 1 closed let, 2 + d index component d */
    const Node **bound;       /* a closed let's expression */
    int *lets, nlets;         /* closed lets, in order */
    IxCmp c[IXC_MAX];
    int n;
} IxScan;

static bool is_i64(const Node *e) { return e && e->type && e->type->width == 1 && ty_leaf(e->type, 0) == AX_I64; }

/* e is the same in the whole kernel and cannot fault: constants, the
 * kernel's arrays' extents, closed lets, and +, -, *, min, max of them */
static bool ixc_closed(const IxScan *s, const Node *e, int depth)
{
    if (!e || depth > 32) return false;
    switch (e->op) {
    case OP_CONST: return true;
    case OP_VAR: return (unsigned)e->id < (unsigned)s->g->nvars && s->kind[e->id] == 1;
    case OP_SHAPE: return e->n == 1 && cg_free_slot(s->g->cn, e->kid[0]) >= 0;
    case OP_IXGET: return e->n == 1 && ixc_closed(s, e->kid[0], depth + 1);
    case OP_PRIM:
        if (e->a != P_ADD && e->a != P_SUB && e->a != P_MUL && e->a != P_MIN && e->a != P_MAX) return false;
        for (int i = 0; i < e->n; i++)
            if (!ixc_closed(s, e->kid[i], depth + 1)) return false;
        return true;
    default: return false;
    }
}

/* the index component e is (ixget d of the index, or a let of one), or -1 */
static int ixc_index(const IxScan *s, const Node *e)
{
    if (e->op == OP_VAR && (unsigned)e->id < (unsigned)s->g->nvars && s->kind[e->id] >= 2) return s->kind[e->id] - 2;
    if (e->op == OP_IXGET && e->n == 1 && e->kid[0]->op == OP_VAR && e->kid[0]->id == s->pid && e->a >= 0 && e->a < s->rank)
        return e->a;
    return -1;
}

static void ixc_walk(IxScan *s, const Node *e, int depth)
{
    while (e && depth < 256) {
        if (e->op == OP_LAM || e->op == OP_WHILE) return;
        if (e->op == OP_LET) {
            if ((unsigned)e->id < (unsigned)s->g->nvars && e->kid[0]) {
                int d = ixc_index(s, e->kid[0]);
                if (d >= 0) {
                    s->kind[e->id] = (unsigned char)(2 + d);
                } else if (ixc_closed(s, e->kid[0], 0)) {
                    s->kind[e->id] = 1;
                    s->bound[e->id] = e->kid[0];
                    s->lets[s->nlets++] = e->id;
                }
            }
            ixc_walk(s, e->kid[0], depth + 1);
            e = e->kid[1];
            continue;
        }
        if (e->op == OP_PRIM && e->n == 2 && (e->a == P_LT || e->a == P_LE || e->a == P_GT || e->a == P_GE) &&
            is_i64(e->kid[0]) && is_i64(e->kid[1]) && s->n < IXC_MAX) {
            static const Prim flip[] = {[P_LT] = P_GT, [P_LE] = P_GE, [P_GT] = P_LT, [P_GE] = P_LE};
            int d0 = ixc_index(s, e->kid[0]), d1 = ixc_index(s, e->kid[1]);
            if (d0 >= 0 && ixc_closed(s, e->kid[1], 0))
                s->c[s->n++] = (IxCmp){e, e->kid[1], d0, (Prim)e->a, false};
            else if (d1 >= 0 && ixc_closed(s, e->kid[0], 0))
                s->c[s->n++] = (IxCmp){e, e->kid[0], d1, flip[e->a], false};
            return;
        }
        for (int i = 0; i + 1 < e->n; i++) ixc_walk(s, e->kid[i], depth + 1);
        e = e->n ? e->kid[e->n - 1] : NULL;
        depth++;
    }
}

/* The index comparisons of stencil function lam (an ax_stencil_ix's),
 * into s; false when there are none (or no room to look). */
static bool ixc_scan(G *g, const Node *lam, int rank, IxScan *s)
{
    if (!lam || lam->op != OP_LAM || lam->nparam < 1 || !lam->param[lam->nparam - 1] || lam->n < 1) return false;
    *s = (IxScan){.g = g, .pid = lam->param[lam->nparam - 1]->id, .rank = rank};
    s->kind = arena_alloc(g->ar, (size_t)g->nvars);
    s->bound = arena_alloc(g->ar, sizeof *s->bound * (size_t)g->nvars);
    s->lets = arena_alloc(g->ar, sizeof *s->lets * (size_t)g->nvars);
    if (!s->kind || !s->bound || !s->lets) return false;
    ixc_walk(s, lam->kid[0], 0);
    return s->n > 0;
}

/* At a row's head: whether every comparison holds on the row's interior
 * segment [ja, jb), as a C expression (the closed lets and the compared
 * values emitted before it). */
static const char *ixc_row_holds(G *g, IxScan *s, Val ix, int rank)
{
    for (int k = 0; k < s->nlets; k++) g->env[s->lets[k]] = cg_exp(g, s->bound[s->lets[k]]);
    Buf b = {0};
    buf_put(&b, "1");
    static const char *const op[] = {[P_LT] = "<", [P_LE] = "<=", [P_GT] = ">", [P_GE] = ">="};
    for (int k = 0; k < s->n; k++) {
        IxCmp *c = &s->c[k];
        Val v = cg_exp(g, c->e);
        if (!(c->held = v.n == 1)) continue;
        /* j's comparisons at the segment's end that decides them */
        const char *at = c->d < rank - 1 ? ix.v[c->d] : (c->p == P_LT || c->p == P_LE) ? "(jb - 1)" : "ja";
        buf_printf(&b, " & (%s %s %s)", at, op[c->p], v.v[0]);
    }
    const char *r = cg_local(g, AX_BOOL, cg_buf_text(g, &b, "0"));
    free(b.s);
    return r;
}

void cpu_emit_stencil(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Stencil *st = x->sten;
    int r = st->rank;
    const Type *elt = x->type->elt;
    if (!cg_sten_check(g)) return;
    cpu_kernel_begin(g, R_MAIN, 0, true);
    /* the interior, and the neighbours' offsets unless they are read in loops */
    bool looped = cg_sten_looped(st);
    cg_sten_prologue(g, !looped);
    cg_stencil_index_fact(g, x->kid[0]);
    IxScan ixc;
    bool have_ixc = st->ix && ixc_scan(g, x->kid[0], r, &ixc);
    /* Positions as in cpu_loop_ix, one row segment [j0, j1) at a time. */
    Val ix = cg_val(g, r);
    for (int d = 0; d < ix.n; d++) {
        ix.v[d] = cg_fmt(g, "x%d", d);
        cg_line(g, "i64 x%d = 0;", d);
    }
    cg_coords(g, "start", cg_extents(g, 0, r), ix, false);
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
    cg_sten_row_bases(g, ix);
    /* interior: each iteration writes its own element of the fresh
     * result (as emit_producer's loops: GCC ivdep, without which a
     * stencil over pairs needs more run-time alias checks than GCC makes,
     * and stays scalar) */
    int na = 0;
    Val *args;
    bool spec = have_ixc && !g->chk && !looped;   /* (a looped stencil's function: as below) */
    if (spec) {
        cg_line(g, "if (%s) {", ixc_row_holds(g, &ixc, ix, r));
        g->ind++;
    }
    for (int copy = 0; copy < (spec ? 2 : 1); copy++) {
        if (copy) {
            g->ind--;
            cg_line(g, "} else {");
            g->ind++;
        }
        g->nhoist = 0;
        for (int k = 0; spec && !copy && k < ixc.n && k < CG_HOIST_MAX; k++) {
            if (!ixc.c[k].held) continue;
            Val one = cg_val(g, 1);
            if (one.n == 1) one.v[0] = "((u8)1)";
            g->hoist[g->nhoist].e = ixc.c[k].cmp;
            g->hoist[g->nhoist].v = one;
            g->hoist[g->nhoist].spec = NULL;
            g->hoist[g->nhoist].read = false;
            g->nhoist++;
        }
        g->hoist_ind = g->ind;
        cg_line(g, "#pragma GCC ivdep");
        cg_line(g, "for (i64 j = ja; j < jb; j++) {");
        g->ind++;
        g->pos = "(i + j - j0)";
        args = looped ? cg_sten_args_loop(g, STEN_INTERIOR, ix, "j", &na) : cg_sten_args(g, STEN_INTERIOR, ix, "j", &na);
        if (args) cg_store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
        cg_close(g);
        g->nhoist = 0;
    }
    if (spec) cg_close(g);
    /* a row on the border of an outer dimension: [ka, kb), where j's
     * neighbours are inside, without the boundary rule along the row
     * (CgStenPart); inside rows leave it empty.  Not for a stencil read
     * in loops: its function is large, and a third copy of it costs more
     * compile time than the loop saves (such stencils are rare). */
    if (r >= 2 && !looped) {
        cg_line(g, "const i64 ka = inner ? ja : ax_max64(j0, ax_min64(lo%d, j1));", r - 1);
        cg_line(g, "const i64 kb = inner ? ja : ax_max64(ka, ax_min64(hi%d, j1));", r - 1);
        cg_sten_row_edge_coords(g, ix);
        cg_line(g, "#pragma GCC ivdep");
        cg_line(g, "for (i64 j = ka; j < kb; j++) {");
        g->ind++;
        g->pos = "(i + j - j0)";
        args = cg_sten_args(g, STEN_ROW_EDGE, ix, "j", &na);
        if (args) cg_store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
        cg_close(g);
    } else {
        cg_line(g, "const i64 ka = ja, kb = ja;");
    }
    /* border: [j0, ja) and [jb, j1), or [j0, ka) and [kb, j1) */
    cg_line(g, "for (int part = 0; part < 2; part++) {");
    g->ind++;
    cg_line(g, "const i64 from = part ? (inner ? jb : kb) : j0, to = part ? j1 : (inner ? ja : ka);");
    cg_line(g, "#pragma GCC ivdep");
    cg_line(g, "for (i64 j = from; j < to; j++) {");
    g->ind++;
    args = looped ? cg_sten_args_loop(g, STEN_BORDER, ix, "j", &na) : cg_sten_args(g, STEN_BORDER, ix, "j", &na);
    if (args) cg_store(g, 0, elt, "i + j - j0", cg_apply(g, x->kid[0], args, na));
    cg_close(g);
    cg_close(g);
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
        while (opened--) cg_close(g);
        cg_close(g);
    }
    cg_close(g);
    cpu_kernel_end(g);
}
