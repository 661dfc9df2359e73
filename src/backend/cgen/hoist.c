/*
 * Row-invariant terms.  The row skeletons' fold (cpu_fold_range: folds,
 * segmented folds, the scans' partial sums) reads its operand's elements
 * along a row: index (o_0, ..., o_k, j) with the row's coordinates o fixed
 * and j running.  The parts of the operand's element function that depend
 * on the row alone (lavaMD's particle i, its neighbour box and whether
 * the box is inside the space) are the same for every j.  cg_row_hoist
 * emits them once, before the row's loops, and cg_exp then uses those
 * values (G.hoist) instead of emitting the terms again in the loop.  A
 * read a[c, j] with c fixed for the row and j the row's own position has
 * its bounds checked there too, once for the row (h_row_read), and the
 * loop reads a[base + j] unchecked.
 *
 * Why not leave it to GCC: it does not move a guarded read (`ok ? a[i] :
 * 0`, a conditional load) out of a loop; the row skeletons' lane loop is
 * short, so GCC unrolls it completely and vectorises the copies as
 * straight-line code, which GCC 12 cannot do for a conditional load; and
 * it does not unswitch a loop on a condition past a few dozen
 * instructions.  So a row whose element reads through a checked index
 * stayed scalar.  This is loop-invariant code motion at the level of the
 * element function, the code generator's share of the seeds' hoisting of
 * invariant terms (seed 003, s.4; Halide computes such terms at the
 * outer loop by default).
 *
 * What moves: maximal terms that do not depend on j, whose evaluation the
 * element code makes anyway (a row has at least one element where the
 * skeleton calls this): not the arm of a conditional that branches, nor
 * the speculated arm of one whose condition depends on j (its checks
 * would then count where the arm is not taken, G.spec), nor anything in or
 * under a loop or a function.  Only in a kernel with deferred checks or
 * in unsafe mode: a checked copy reports each fault at its element.
 *
 * The same walk serves a generate's rows (cg_row_hoist_gen) and a
 * permute's index function (cg_row_target), which also says when a row's
 * targets can be tested once for the whole row.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cgen.h"
#include <stdlib.h>
#include <string.h>

enum {
    H_VAR = 1,     /* depends on the row's running position j */
    H_STOP = 2,    /* holds what is not followed (a loop, a function, an unknown variable) */
    H_SEEN = 4,    /* a let's variable, bound once already */
};

typedef struct Hoist {
    G *g;
    int pid, inner;            /* the index parameter; j's component */
    int ext;                   /* the slot whose last extent bounds j */
    unsigned char *let;        /* H_ bits of each let-bound variable, by id */
    const Node **rhs;          /* what each let-bound variable is bound to, by id */
    bool dup;                  /* a variable bound twice: the terms are not trees */
} Hoist;

/* Is e worth a local of its own before the loop (not a constant, a
 * variable or a projection of one)? */
static bool h_worth(const Node *e)
{
    switch (e->op) {
    case OP_CONST: case OP_VAR: case OP_SHAPE: return false;
    case OP_PROJ: case OP_IXGET: return h_worth(e->kid[0]);
    case OP_TUPLE: case OP_IXCONS:
        for (int k = 0; k < e->n; k++)
            if (h_worth(e->kid[k])) return true;
        return false;
    default: return true;
    }
}

/* Emits invariant e before the loop and remembers its value, with the
 * condition its checks were emitted under (G.spec): the value serves
 * the loop's code under that same condition, or, emitted under none,
 * under any (a check that counts where an arm is not taken only sends
 * the range to the checked copy). */
static void h_emit(Hoist *h, const Node *e)
{
    G *g = h->g;
    if (!h_worth(e) || g->nhoist >= CG_HOIST_MAX) return;
    for (int k = 0; k < g->nhoist; k++)
        if (g->hoist[k].e == e) return;
    Val v = cg_exp(g, e);
    if (g->failed) return;
    g->hoist[g->nhoist].e = e;
    g->hoist[g->nhoist].v = v;
    g->hoist[g->nhoist].spec = g->spec;
    g->nhoist++;
}

/* The H_ bits of e, which h_walk has seen, without emitting anything
 * (a let inside: H_STOP). */
static unsigned h_dep(Hoist *h, const Node *e)
{
    if (!e) return H_STOP;
    switch (e->op) {
    case OP_VAR:
        if (e->id == h->pid) return H_VAR;
        if ((unsigned)e->id < (unsigned)h->g->nvars) return h->let[e->id] & (H_VAR | H_STOP);
        return H_STOP;
    case OP_IXGET:
        if (e->kid[0] && e->kid[0]->op == OP_VAR && e->kid[0]->id == h->pid) return e->a == h->inner ? H_VAR : 0;
        break;
    case OP_INDEX: case OP_LINDEX:
        return h_dep(h, e->kid[1]);
    case OP_SHAPE: case OP_CONST:
        return 0;
    case OP_LET: case OP_WHILE: case OP_LAM: case OP_AWHILE:
        return H_STOP;
    default:
        break;
    }
    unsigned m = 0;
    for (int k = 0; k < e->n && !(m & H_STOP); k++) m |= h_dep(h, e->kid[k]);
    return m;
}

/* A read a[c_0, ..., c_{r-2}, j] whose c are invariant and whose last
 * component is the row's own position j (lavaMD's neighbour's particle,
 * a stencil's neighbouring row): its bounds are checked once before the
 * loop, for the whole row, so that the loop reads a[base + j], a plain
 * load at a position affine in j, which GCC vectorises (a guarded load,
 * a masked one, it does not in the row skeletons' lane loops).  j is
 * within the last extent of slot h->ext (a range fact: operand 0 of a
 * fold, the result of a generate), so every a[base + j]
 * is inside the array when that extent fits its last dimension and the
 * array is not empty, which pre_ checks for the kernel; base is 0 when
 * the row's check fails, and then bad_ is set (under G.spec), so the
 * checked copy reruns the range and reports the read. */
static void h_row_read(Hoist *h, const Node *e)
{
    G *g = h->g;
    const Node *ix = e->kid[1];
    if (ix->op == OP_VAR && (unsigned)ix->id < (unsigned)g->nvars && h->rhs[ix->id]) ix = h->rhs[ix->id];
    int slot = cg_free_slot(g->cn, e->kid[0]), opd = h->ext;
    const Type *at = slot >= 0 ? cg_slot_type(g->cn, slot) : NULL;
    if (!g->safe || !g->defer || e->op != OP_INDEX || !at || at->kind != TY_ARRAY || at->rank < 1 ||
        ix->op != OP_IXCONS || ix->n != at->rank || g->nhoist >= CG_HOIST_MAX)
        return;
    const Node *last = ix->kid[ix->n - 1];
    if (last->op != OP_IXGET || last->a != h->inner || !last->kid[0] || last->kid[0]->op != OP_VAR ||
        last->kid[0]->id != h->pid)
        return;
    /* c: fixed for the row, and not all of them the row's own
     * coordinates or constants (such a read is in bounds by the
     * operand's extent alone: G.fact, no check at all) */
    int r = at->rank;
    bool own = true;
    for (int d = 0; d < r - 1; d++) {
        const Node *k = ix->kid[d];
        if (h_dep(h, k)) return;
        if (k->op != OP_CONST && !(k->op == OP_IXGET && k->kid[0]->op == OP_VAR && k->kid[0]->id == h->pid)) own = false;
    }
    if (own) return;
    Val c = cg_val(g, r - 1);
    if (c.n != r - 1) return;
    for (int d = 0; d < r - 1; d++) {
        Val v = cg_exp(g, ix->kid[d]);
        if (v.n != 1) return;
        c.v[d] = v.n == 1 ? v.v[0] : "0";
        if (ix->kid[d]->type->kind == TY_SCALAR && ix->kid[d]->type->s != AX_I64) c.v[d] = cg_local(g, AX_I64, cg_fmt(g, "(i64)%s", c.v[d]));
    }
    if (!cg_pre_add(g, cg_fmt(g, "(s%d_%d <= s%d_%d) & (n%d > 0)", opd, h->inner, slot, r - 1, slot))) return;
    Buf t = {0};
    for (int d = 0; d < r - 1; d++) buf_printf(&t, "%s((u64)%s < (u64)s%d_%d)", d ? " & " : "", c.v[d], slot, d);
    const char *ok = cg_local(g, AX_BOOL, cg_buf_text(g, &t, "1"));
    free(t.s);
    Val full = cg_val(g, r);
    if (full.n != r) return;
    for (int d = 0; d < r - 1; d++) full.v[d] = c.v[d];
    full.v[r - 1] = "0";
    cg_guard(g, cg_fmt(g, "!%s", ok), "");
    const char *lin = cg_linear(g, slot, full);
    const char *base = cg_local(g, AX_I64, cg_fmt(g, "%s ? %s : 0", ok, lin));
    if (g->failed) return;
    g->hoist[g->nhoist].e = e;
    g->hoist[g->nhoist].v = cg_val(g, 1);
    if (g->hoist[g->nhoist].v.n == 1) g->hoist[g->nhoist].v.v[0] = base;
    g->hoist[g->nhoist].spec = g->spec;
    g->hoist[g->nhoist].read = true;
    g->nhoist++;
}

const char *cg_row_base(G *g, const Node *read)
{
    for (int k = 0; k < g->nhoist; k++)
        if (g->hoist[k].e == read && g->hoist[k].read && g->hoist[k].v.n == 1 &&
            (!g->hoist[k].spec || (g->spec && !strcmp(g->hoist[k].spec, g->spec))))
            return g->hoist[k].v.v[0];
    return NULL;
}

/* Sets G.spec to the outer condition and-ed with `when` (neg: its negation). */
static void h_spec(G *g, const char *outer, const char *when, bool neg)
{
    if (!g->defer || !when) return;
    g->spec = outer;
    g->spec = cg_spec_under(g, neg ? cg_fmt(g, "!%s", when) : when);
}

/* The H_ bits of e's value (0: invariant).  Emits before the loop the
 * invariant parts of e that the element code evaluates whenever it is
 * evaluated itself (`may`): an invariant e is left to its parent (a term
 * moves whole); a varying e moves its invariant kids. */
static unsigned h_walk(Hoist *h, const Node *e, bool may)
{
    if (!e || h->g->failed) return H_STOP;
    G *g = h->g;
    switch (e->op) {
    case OP_LET: {
        /* a chain iteratively: long chains must not use the stack */
        unsigned m = 0;
        while (e->op == OP_LET) {
            if ((unsigned)e->id >= (unsigned)g->nvars) return H_STOP;
            if (h->let[e->id] & H_SEEN) h->dup = true;
            unsigned b = h_walk(h, e->kid[0], may) & (H_VAR | H_STOP);
            if (!b && may) {
                h_emit(h, e->kid[0]);
                g->env[e->id] = cg_exp(g, e->kid[0]);
            } else if (!b) {
                b = H_STOP;   /* not evaluated before the loop: what reads it stays */
            }
            h->let[e->id] = (unsigned char)(b | H_SEEN);
            h->rhs[e->id] = e->kid[0];
            m |= b;
            e = e->kid[1];
        }
        return m | h_walk(h, e, may);   /* an invariant chain moves whole */
    }
    case OP_VAR:
        if (e->id == h->pid) return H_VAR;
        if ((unsigned)e->id < (unsigned)g->nvars) return h->let[e->id] & (H_VAR | H_STOP);
        return H_STOP;
    case OP_IXGET:
        if (e->kid[0] && e->kid[0]->op == OP_VAR && e->kid[0]->id == h->pid) return e->a == h->inner ? H_VAR : 0;
        break;
    case OP_INDEX: case OP_LINDEX: {
        unsigned m = h_walk(h, e->kid[1], may);   /* kid 0 names the array */
        if (m == H_VAR && may) h_row_read(h, e);
        return m;
    }
    case OP_SHAPE: case OP_CONST:
        return 0;
    case OP_WHILE: case OP_LAM: case OP_AWHILE:
        return H_STOP;
    case OP_COND: case OP_PRIM: {
        if (e->op == OP_PRIM && !((e->a == P_AND || e->a == P_OR) && e->n == 2)) break;
        /* a conditional, or the short-circuit and/or: kid 0 is evaluated
         * whenever e is, the others too when speculated (exp.c gen_cond),
         * their checks counting under the condition (G.spec), which must
         * then be invariant for them to move */
        bool and_or = e->op == OP_PRIM;
        unsigned c = h_walk(h, e->kid[0], may);
        bool spec = !c && cg_speculable(g, e->kid[1]) && (and_or || cg_speculable(g, e->kid[2]));
        Val cv = cg_val(g, 0);
        if (spec && may) {
            h_emit(h, e->kid[0]);
            cv = cg_exp(g, e->kid[0]);
        }
        const char *outer = g->spec, *when = cv.n == 1 ? cv.v[0] : NULL;
        unsigned m = c, a[2] = {0, 0};
        int narm = and_or ? 1 : 2;
        for (int k = 0; k < narm; k++) {
            h_spec(g, outer, when, and_or ? e->a == P_OR : k == 1);
            a[k] = h_walk(h, e->kid[1 + k], may && spec);
            g->spec = outer;
            m |= a[k];
        }
        if (m && may) {
            if (!c) h_emit(h, e->kid[0]);
            for (int k = 0; k < narm && spec; k++)
                if (!a[k]) {
                    h_spec(g, outer, when, and_or ? e->a == P_OR : k == 1);
                    h_emit(h, e->kid[1 + k]);
                    g->spec = outer;
                }
        }
        return m;
    }
    default:
        break;
    }
    unsigned m = 0, kb[16];
    for (int k = 0; k < e->n; k++) {
        unsigned b = h_walk(h, e->kid[k], may);
        if (k < 16) kb[k] = b;
        m |= b;
    }
    /* e varies: its invariant kids move (e itself is its parent's to
     * move); the kids of a wide tuple past the 16th stay */
    if (m && may)
        for (int k = 0; k < e->n && k < 16; k++)
            if (!kb[k]) h_emit(h, e->kid[k]);
    return m;
}

/* The hoisting proper: lam is the element function whose one parameter
 * is the index (outer..., j), j bounded by the last extent of slot ext;
 * pos is the row's first position.  False when nothing could be looked
 * at (then *hp is not set). */
static bool row_hoist(G *g, const Node *lam, int ext, Val outer, const char *pos, Hoist *hp)
{
    g->nhoist = 0;
    if (g->dialect == CG_GPU || g->chk || (g->safe && !g->defer) || g->lane) return false;
    if (!lam || lam->op != OP_LAM || lam->nparam != 1 || !lam->param[0] || lam->n < 1) return false;
    const Node *p = lam->param[0];
    if ((unsigned)p->id >= (unsigned)g->nvars || p->type->width != outer.n + 1) return false;
    unsigned char *let = arena_alloc(g->ar, (size_t)g->nvars);
    const Node **rhs = arena_alloc(g->ar, sizeof *rhs * (size_t)g->nvars);
    if (!let || !rhs) return false;
    memset(let, H_STOP, (size_t)g->nvars);
    memset(rhs, 0, sizeof *rhs * (size_t)g->nvars);
    Hoist h = {g, p->id, outer.n, ext, let, rhs, false};
    /* the index: the row's coordinates, and j, which nothing emitted here
     * reads (a name that would not compile if it were) */
    Val ix = cg_val(g, outer.n + 1);
    if (ix.n != outer.n + 1) return false;
    for (int d = 0; d < outer.n; d++) ix.v[d] = outer.v[d];
    ix.v[outer.n] = "ax_no_j_";
    g->env[p->id] = ix;
    cg_range_fact(g, lam, ext, false);
    const char *was = g->pos;
    g->pos = pos;
    unsigned m = h_walk(&h, lam->kid[0], true);
    if (!m) h_emit(&h, lam->kid[0]);
    g->pos = was;
    g->hoist_ind = g->ind;
    if (h.dup || g->failed) {
        g->nhoist = 0;
        return false;
    }
    *hp = h;
    return true;
}

void cg_row_hoist(G *g, const CgRowRead *rr)
{
    g->nhoist = 0;
    if (!rr->ix) return;
    const Node *y = cg_opd_node(g->cn, 0);
    Hoist h;
    row_hoist(g, y->op == OP_DELAYED ? y->kid[1] : NULL, cg_opd_slot(g->cn, 0), rr->outer, rr->base, &h);
}

void cg_row_hoist_gen(G *g, Val outer, const char *pos)
{
    g->nhoist = 0;
    const Node *x = g->cn->x;
    Hoist h;
    if (x->op == OP_GENERATE && outer.n >= 1) row_hoist(g, x->kid[1], 0, outer, pos, &h);
}

/* What a let-bound variable stands for (h_walk saw its binding). */
static const Node *h_resolve(const Hoist *h, const Node *e)
{
    while (e && e->op == OP_VAR && (unsigned)e->id < (unsigned)h->g->nvars && h->rhs[e->id]) e = h->rhs[e->id];
    return e;
}

/* A permute's row (cpu/permute.c): kmeans' cluster sums send point i's
 * feature j to ix(cluster[i], j), a whole row of the source to one row of
 * the target.  When the index function maps (outer..., j) to
 * ix(c_0, ..., c_{t-2}, j) with every c fixed for the row, one test before
 * the row's loop says that the row segment's targets are all inside the
 * result: each c inside its extent, j0 + m within the last.  The skeleton
 * then runs the segment without the per-element test (whose branch GCC
 * does not unswitch, so the combining loop stayed scalar) and keeps the
 * tested loop for a segment that fails it. */
const char *cg_row_target(G *g, const Node *lam, int ext, int tslot, Val outer, const char *pos, const char *j0,
                          const char *m)
{
    Hoist h;
    const Type *tt = cg_slot_type(g->cn, tslot);
    if (!tt || tt->kind != TY_ARRAY || tt->rank < 1) return NULL;
    if (!row_hoist(g, lam, ext, outer, pos, &h)) return NULL;
    const Node *b = lam->kid[0];
    while (b && b->op == OP_LET) b = b->kid[1];
    b = h_resolve(&h, b);
    int t = tt->rank;
    if (!b || b->op != OP_IXCONS || b->n != t) return NULL;
    const Node *last = h_resolve(&h, b->kid[t - 1]);
    if (!last || last->op != OP_IXGET || last->a != h.inner || !last->kid[0] || last->kid[0]->op != OP_VAR ||
        last->kid[0]->id != h.pid)
        return NULL;
    for (int d = 0; d < t - 1; d++)
        if (h_dep(&h, b->kid[d])) return NULL;
    Buf c = {0};
    for (int d = 0; d < t - 1; d++) {
        Val v = cg_exp(g, b->kid[d]);
        if (v.n != 1) {
            free(c.s);
            return NULL;
        }
        buf_printf(&c, "((u64)(%s) < (u64)s%d_%d) & ", v.v[0], tslot, d);
    }
    buf_printf(&c, "(%s + %s <= s%d_%d)", j0, m, tslot, t - 1);
    const char *ok = g->failed ? NULL : cg_local(g, AX_BOOL, cg_buf_text(g, &c, "0"));
    free(c.s);
    return ok;
}
