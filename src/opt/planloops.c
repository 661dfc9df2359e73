/*
 * The planner's multi-generator loops (plan.c; ir.h Loop; seed 003
 * s."Loop Fusion and Deforestation": one loop over an iteration space
 * computing several generators, horizontally and vertically fused).
 * After the clustering's rewrites, what they left over one space becomes
 * one loop: collects (maps of an array, generates), reductions (folds)
 * and filters whose terms read the space at their own position, with the
 * folds of a filter's output in the filter's loop (seed 001's size
 * types).  These loops merge what the loop graph (plangraph.c) does not
 * model (a map with a fold of one array, a filter with the folds of its
 * output and its other readers), but never two loops the clustering kept
 * apart where it could have merged them (plan_apart): the ILP's clusters
 * are carried out, and may only grow.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plan_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reads_at(const Node *x, int a, int p, int depth);

/* A member of a multi-generator loop (ir.h Loop; seed 003's fused loop):
 * a let of the chain whose term is one pass over a space that it reads at
 * its own position: a collect (map of an array, generate), a reduction
 * (fold, fold1) or a filter. */
typedef struct Mem {
    int k;                 /* its index in the chain's lets */
    int id;                /* its let's variable */
    LoopKind kind;
    const Node *t;         /* its term */
    const Node *opd;       /* the operand ranging over the space (NULL: a generate) */
    bool drop;             /* a collect read only by later members, at their positions */
    int via;               /* a fold of filter member via's output (index in the
                              group), or -1 */
    bool neutral;          /* (via) a dropped element adds the operator's neutral
                              element; else the reduction counts only the kept */
} Mem;

static bool loop_member(const Node *t, Mem *m)
{
    const Node *o = NULL;
    switch (t->op) {
    case OP_MAP: m->kind = LOOP_COLLECT, o = t->kid[1]; break;
    case OP_GENERATE: m->kind = LOOP_COLLECT; break;
    case OP_FOLD: case OP_FOLD1: m->kind = LOOP_REDUCE, o = pl_fold_opd(t); break;
    case OP_FILTER: m->kind = LOOP_FILTER, o = t->kid[1]; break;
    default: return false;
    }
    if (o && o->op != OP_AVAR && o->op != OP_DELAYED) return false;
    if ((o ? o->type->rank : t->type->rank) < 1) return false;
    /* (a filter of a matrix keeps its elements in row-major order: a
     * loop's filter is of a vector) */
    if (m->kind == LOOP_FILTER && o->type->rank != 1) return false;
    m->t = t;
    m->opd = o;
    m->drop = false;
    m->via = -1;
    m->neutral = false;
    return true;
}

/* Is j (a fold) a fold of filter member f's output, reading it at its own
 * position only, of a rank-1 filter, that can join f's loop? */
static bool fold_of_filter(const Mem *j, const Mem *f)
{
    if (f->kind != LOOP_FILTER || j->kind != LOOP_REDUCE || j->t->type->rank != 0) return false;
    const Node *o = j->opd;
    int a = f->id;
    if (!(o->op == OP_AVAR ? o->id == a
                           : o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR && o->kid[0]->kid[0]->id == a))
        return false;
    if (plan_occurrences(j->t, a, 0) != plan_occurrences(o, a, 0)) return false;
    if (o->op == OP_DELAYED) {
        const Node *lix = o->kid[1], *lin = o->kid[2];
        if (plan_occurrences(o->kid[0], a, 0) != 1 || !reads_at(lix->kid[0], a, lix->param[0]->id, 0) ||
            !reads_at(lin->kid[0], a, lin->param[0]->id, 0))
            return false;
    }
    Prim ops[16];
    if (pl_known_lam(j->t->kid[0], ops, 16)) return true;
    return j->t->op == OP_FOLD && ir_selection(j->t->kid[0], NULL) && pl_is_const_term(j->t->kid[1], 0);
}

static int space_rank(const Mem *m) { return m->opd ? m->opd->type->rank : m->t->type->rank; }

/* Does operand o range over extent e (a shape expression)? */
static bool opd_has_extent(const Node *o, const Node *e)
{
    if (o->op == OP_DELAYED) return pl_same_term(o->kid[0], e, 0);
    return e->op == OP_SHAPE && e->kid[0]->op == OP_AVAR && o->op == OP_AVAR && e->kid[0]->id == o->id;
}

static bool same_space(const Mem *a, const Mem *b)
{
    if (space_rank(a) != space_rank(b)) return false;
    if (a->opd && b->opd) return pl_same_extent(a->opd, b->opd);
    if (a->opd) return opd_has_extent(a->opd, b->t->kid[0]);
    if (b->opd) return opd_has_extent(b->opd, a->t->kid[0]);
    return pl_same_term(a->t->kid[0], b->t->kid[0], 0);
}

/* Reads of array `a` in x are all element reads at parameter p's value
 * (linearIndex a p, or index a p): a member's own position. */
static bool reads_at(const Node *x, int a, int p, int depth)
{
    if (depth > OPT_MAX_DEPTH) return false;
    if ((x->op == OP_LINDEX || x->op == OP_INDEX) && x->kid[0]->op == OP_AVAR && x->kid[0]->id == a)
        return x->kid[1]->op == OP_VAR && x->kid[1]->id == p;
    if (x->op == OP_AVAR) return x->id != a;
    for (int k = 0; k < x->n; k++)
        if (!reads_at(x->kid[k], a, p, depth + 1)) return false;
    return true;
}

/* May member j read member m's array?  Only a collect's, and only at its
 * own position (a fusible edge); the rest of j's term not at all. */
static bool reads_member_ok(const Mem *j, const Mem *m)
{
    const Node *t = j->t;
    int a = m->id;
    if (!plan_occurrences(t, a, 0)) return true;
    if (m->kind != LOOP_COLLECT) return false;
    if (!j->opd) {   /* a generate: its function at its own index */
        const Node *f = t->kid[1];
        return !plan_occurrences(t->kid[0], a, 0) && reads_at(f->kid[0], a, f->param[0]->id, 0);
    }
    const Node *o = j->opd;
    int in_opd = plan_occurrences(o, a, 0);
    if (plan_occurrences(t, a, 0) != in_opd) return false;   /* an operator, a predicate, z */
    if (o->op == OP_AVAR) return true;
    const Node *lix = o->kid[1], *lin = o->kid[2], *e = o->kid[0];
    /* its extent may be the collect's shape: the loop's space */
    bool shape_only = e->op == OP_SHAPE && e->kid[0]->op == OP_AVAR && e->kid[0]->id == a;
    return (shape_only || !plan_occurrences(e, a, 0)) && reads_at(lix->kid[0], a, lix->param[0]->id, 0) &&
           reads_at(lin->kid[0], a, lin->param[0]->id, 0);
}

/* Can evaluating x fault or not end (sharing recovery's rule, opt.h)? */
static bool fallible(const PlanRewriteState *s, const Node *x, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH || opt_op_fallible(s->rw.cx, x)) return true;
    for (int i = 0; i < x->n; i++)
        if (fallible(s, x->kid[i], depth + 1)) return true;
    return false;
}

/* Member m's element at position i (lin) or index ix, with reads of the
 * earlier members' arrays as their elements (s->rdv). */
static Node *member_elem(PlanRewriteState *s, const Mem *m, Node *at, bool lin)
{
    const Node *o = m->opd;
    if (!o) return lin ? pl_opd_lin(s, m->t, at) : pl_opd_ix(s, m->t, at);   /* a generate's */
    Node *e;
    if (o->op == OP_AVAR && o->id < s->cap && s->rdv[o->id]) e = rw_copy(&s->rw, s->rdv[o->id]);
    else e = lin ? pl_opd_lin(s, o, at) : pl_opd_ix(s, o, at);
    if (m->t->op == OP_MAP) e = rw_apply1(&s->rw, m->t->kid[0], e);
    return e;
}

/* The space's element function in one form: let e1 = .. in let e2 = ..
 * in (components), every member's element once. */
static Node *loop_lam(PlanRewriteState *s, const Mem *ms, int nm, const Type *pt, const Type *et, bool lin)
{
    int pid;
    if (!rw_params(&s->rw, 1, &pt, &pid)) return NULL;
    /* the elements, in order, each reading the earlier ones' */
    Node **ev = arena_alloc(&s->rw.p->arena, sizeof *ev * (size_t)nm);
    int *vid = arena_alloc(&s->rw.p->arena, sizeof *vid * (size_t)nm);
    if (!ev || !vid) return rw_fail(&s->rw);
    for (int q = 0; q < nm && !s->rw.failed; q++) {
        const Mem *m = &ms[q];
        const Type *vt = m->kind == LOOP_COLLECT ? m->t->type->elt : m->opd->type->elt;
        ev[q] = member_elem(s, m, rw_var(&s->rw, pid), lin);
        if (m->via >= 0 && ev[q] && (m->neutral || fallible(s, ev[q], 0))) {
            /* only where the filter keeps the element (lazily: the fold's
             * element code never ran on the others); else its neutral
             * element, or z, which the generator's predicate then skips
             * (it needs none when the element cannot fault) */
            const Mem *f = &ms[m->via];
            Node *keep = rw_apply1(&s->rw, f->t->kid[0], rw_var(&s->rw, vid[m->via]));
            Node *none;
            if (m->neutral) {
                Prim ops[16];
                pl_known_lam(m->t->kid[0], ops, 16);
                none = pl_neutrals(s, ops, m->opd->type->elt);
            } else {
                none = rw_copy(&s->rw, m->t->kid[1]);
            }
            ev[q] = rw_cond(&s->rw, keep, ev[q], none);
        }
        vid[q] = rw_fresh(&s->rw, vt);
        if ((m->kind == LOOP_COLLECT || m->kind == LOOP_FILTER) && vid[q] >= 0) s->rdv[m->id] = rw_var(&s->rw, vid[q]);
    }
    for (int q = 0; q < nm; q++)
        if (ms[q].kind == LOOP_COLLECT || ms[q].kind == LOOP_FILTER) s->rdv[ms[q].id] = NULL;
    if (s->rw.failed) return NULL;
    /* the components */
    Node *tup = et->kind == TY_TUPLE ? rw_node(&s->rw, OP_TUPLE, et->n, et) : NULL;
    Node *one = NULL;
    int c = 0;
    for (int q = 0; q < nm && !s->rw.failed; q++) {
        const Mem *m = &ms[q];
        if (m->drop) continue;
        Node *parts[2] = {NULL, NULL};
        int np = 0;
        if (m->kind == LOOP_FILTER) parts[np++] = rw_apply1(&s->rw, m->t->kid[0], rw_var(&s->rw, vid[q]));
        parts[np++] = rw_var(&s->rw, vid[q]);
        for (int k = 0; k < np; k++) {
            if (tup && c < tup->n) tup->kid[c] = parts[k];
            else one = parts[k];
            c++;
        }
    }
    Node *body = tup ? tup : one;
    for (int q = nm - 1; q >= 0 && body; q--) body = rw_let(&s->rw, vid[q], ev[q], body);
    return rw_lam1(&s->rw, pid, body);
}

/* Builds the loop of members ms[0..nm) (of one chain, in order) at the
 * first one's let: `let t = loop .. in let m1 = aproj 0 t in ..`; the other
 * members' lets are spliced out. */
static bool make_loop(PlanRewriteState *s, Node **slot, Node **lets, Mem *ms, int nm)
{
    int ngen = 0, ncomp = 0, nkid = 1;
    for (int q = 0; q < nm; q++) {
        if (ms[q].drop) continue;
        ngen++;
        ncomp += ms[q].kind == LOOP_FILTER ? 2 : 1;
        if (ms[q].kind == LOOP_REDUCE) nkid += ms[q].t->op == OP_FOLD ? 2 : 1;
    }
    Loop *lp = arena_alloc(&s->rw.p->arena, sizeof *lp + sizeof lp->gen[0] * (size_t)ngen);
    const Type **ct = arena_alloc(&s->rw.p->arena, sizeof *ct * (size_t)(ncomp + 1));
    const Type **gt = arena_alloc(&s->rw.p->arena, sizeof *gt * (size_t)(ngen + 1));
    if (!lp || !ct || !gt) return rw_fail(&s->rw), false;
    lp->ngen = ngen;
    int c = 0, g = 0, kid = 1;
    for (int q = 0; q < nm; q++) {
        const Mem *m = &ms[q];
        if (m->drop) continue;
        LoopGen *gn = &lp->gen[g];
        gn->kind = m->kind;
        gn->pred = gn->op = gn->z = -1;
        if (m->kind == LOOP_FILTER) {
            gn->pred = c;
            ct[c++] = ty_bool();
        }
        gn->comp = c;
        ct[c++] = m->kind == LOOP_COLLECT ? m->t->type->elt : m->opd->type->elt;
        if (m->via >= 0 && !m->neutral) {
            /* the filter's predicate component: the filter comes first */
            int fg = 0, fc = 0;
            for (int h = 0; h < m->via; h++)
                if (!ms[h].drop) fg++, fc += ms[h].kind == LOOP_FILTER ? 2 : 1;
            (void)fg;
            gn->pred = fc;
        }
        if (m->kind == LOOP_REDUCE) {
            gn->op = kid++;
            if (m->t->op == OP_FOLD) gn->z = kid++;
        }
        gt[g++] = m->t->type;
    }
    const Type *et = ncomp == 1 ? ct[0] : rw_ttuple(&s->rw, ncomp, ct);
    if (ncomp == 1) lp->gen[0].comp = -1;
    int r = space_rank(&ms[0]);
    const Type *at = et ? rw_tarray(&s->rw, et, r) : NULL, *tt = ty_arrays(&s->rw.p->arena, ngen, gt);
    const Type *ixt = rw_tindex(&s->rw, r), *i64 = ty_i64();
    if (!at || !tt || !ixt) return rw_fail(&s->rw), false;
    Node *dl = rw_node(&s->rw, OP_DELAYED, 3, at), *lo = rw_node(&s->rw, OP_LOOP, nkid, tt);
    if (!dl || !lo) return false;
    dl->kid[0] = ms[0].opd ? pl_opd_extent(s, ms[0].opd) : rw_copy(&s->rw, ms[0].t->kid[0]);
    dl->kid[1] = loop_lam(s, ms, nm, ixt, et, false);
    dl->kid[2] = loop_lam(s, ms, nm, i64, et, true);
    lo->loop = lp;
    lo->kid[0] = dl;
    for (int q = 0, gi = 0; q < nm && !s->rw.failed; q++) {
        const Mem *m = &ms[q];
        if (m->drop) continue;
        const LoopGen *gn = &lp->gen[gi++];
        if (gn->kind != LOOP_REDUCE) continue;
        lo->kid[gn->op] = rw_copy(&s->rw, m->t->kid[0]);
        if (gn->z >= 0) lo->kid[gn->z] = rw_copy(&s->rw, m->t->kid[1]);
    }
    if (s->rw.failed || !dl->kid[0] || !dl->kid[1] || !dl->kid[2]) return rw_fail(&s->rw), false;
    int tid = rw_fresh(&s->rw, tt);
    if (tid < 0) return false;
    /* let t = loop in let m_g = aproj g t in ... (the first member's body) */
    Node *first = lets[ms[0].k];
    Node *body = first->kid[1];
    for (int q = nm - 1, gi = ngen - 1; q >= 0 && body; q--) {
        if (ms[q].drop) continue;
        Node *pj = rw_op1(&s->rw, OP_APROJ, gt[gi], rw_var(&s->rw, tid));
        if (pj) pj->a = gi;
        gi--;
        Node *l = rw_op2(&s->rw, OP_ALET, body->type, pj, body);
        if (l) l->id = ms[q].id;
        body = l;
    }
    if (!body) return rw_fail(&s->rw), false;
    first->id = tid;
    first->kid[0] = lo;
    first->kid[1] = body;
    for (int q = 1; q < nm; q++) pl_splice_out(slot, lets[ms[q].k]);
    return !s->rw.failed;
}

/* The chain's result, when it is a loop member or a tuple with members
 * among its components, is given lets of its own at the chain's end (in
 * the order the components are evaluated), so that its members can join
 * loops like the lets' terms. */
void pl_bind_results(PlanRewriteState *s, Node **slot)
{
    Node **bp = slot;
    while ((*bp)->op == OP_ALET && (*bp)->n == 2) bp = &(*bp)->kid[1];
    Node *b = *bp;
    Mem m;
    int nk = b->op == OP_ATUPLE ? b->n : 1;
    Node **kids = b->op == OP_ATUPLE ? b->kid : bp;
    int *ids = arena_alloc(&s->rw.p->arena, sizeof *ids * (size_t)(nk + 1));
    if (!ids) return (void)rw_fail(&s->rw);
    int nb = 0;
    for (int k = 0; k < nk; k++) {
        ids[k] = -1;
        if (kids[k]->type->kind == TY_ARRAY && loop_member(kids[k], &m)) ids[k] = rw_fresh(&s->rw, kids[k]->type), nb++;
    }
    if (!nb || s->rw.failed) return;
    Node *body = b;
    Node **bound = arena_alloc(&s->rw.p->arena, sizeof *bound * (size_t)nk);
    if (!bound) return (void)rw_fail(&s->rw);
    for (int k = 0; k < nk; k++) {
        bound[k] = kids[k];
        if (ids[k] >= 0) kids[k] = rw_var(&s->rw, ids[k]);
    }
    if (b->op != OP_ATUPLE) body = kids[0];
    for (int k = nk - 1; k >= 0 && body; k--) {
        if (ids[k] < 0) continue;
        Node *l = rw_op2(&s->rw, OP_ALET, body->type, bound[k], body);
        if (l) l->id = ids[k];
        body = l;
    }
    if (body) *bp = body;
}

/* The array variables term x reads, each once (seen: per id, the stamp
 * of the last term that listed it), appended to *v. */
static void reads_of(PlanRewriteState *s, const Node *x, int stamp, int *seen, int **v, int *n, int *cap, int depth)
{
    while (x && !s->rw.failed && depth <= OPT_MAX_DEPTH) {
        if (x->op == OP_AVAR && x->id < s->cap && seen[x->id] != stamp) {
            seen[x->id] = stamp;
            if (*n == *cap) {
                int c = *cap ? *cap * 2 : 64, *w = ax__realloc(*v, sizeof *w * (size_t)c);
                if (!w) return (void)rw_fail(&s->rw);
                *v = w, *cap = c;
            }
            (*v)[(*n)++] = x->id;
        }
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++) reads_of(s, x->kid[i], stamp, seen, v, n, cap, depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

/* Adds to inside[g] the reads in x of group member g's array (gidx: per
 * let of the chain, its place in the group or -1; pos: per variable, its
 * let), in one walk. */
static void count_member_reads(const Node *x, const int *pos, int nv, const int *gidx, const Mem *grp, int *inside,
                               int depth)
{
    while (x && depth <= OPT_MAX_DEPTH) {
        int q = x->op == OP_AVAR && x->id >= 0 && x->id < nv ? pos[x->id] : -1;
        if (q >= 0 && gidx[q] >= 0 && grp[gidx[q]].id == x->id) inside[gidx[q]]++;
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++)
            count_member_reads(x->kid[i], pos, nv, gidx, grp, inside, depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

/* How far ahead of a loop's first member its other members are sought:
 * members are lets of one chain, and a chain of many lets (a long
 * program) must not cost its square. */
enum { LOOP_WINDOW = 128, LOOP_MAX = 64 };

/* Greedy grouping of a chain's members by space (seed 001's clusters of
 * loops over one iteration space; the ILP's objective prefers exactly
 * these merges: a shared input or a fusible edge, weight N^2): starting
 * at each member in order, the later members over the same space that
 * read its group's arrays only at their own positions, read no other let
 * bound since the group's first, and share an input with the group or
 * read a member. */
void pl_loops(PlanRewriteState *s, Node **slot)
{
    int nl;
    Node **lets = pl_collect(s, slot, &nl);
    if (!lets) return;
    Mem *grp = ax__malloc(sizeof *grp * (size_t)(LOOP_MAX + 1));
    bool *used = ax__calloc((size_t)nl + 1, sizeof *used);
    /* per let: the variables its term reads (rd[rs[k] .. rs[k + 1])); per
     * variable: the let binding it in this chain (pos, -1 if none), the
     * group's stamp when a member reads it (gmark) */
    int *rs = ax__malloc(sizeof *rs * (size_t)(nl + 1)), *rd = NULL, nrd = 0, caprd = 0;
    int nv = s->cap;
    int *seen = ax__malloc(sizeof *seen * (size_t)nv), *pos = ax__malloc(sizeof *pos * (size_t)nv);
    int *gmark = ax__calloc((size_t)nv, sizeof *gmark), *gidx = ax__malloc(sizeof *gidx * (size_t)(nl + 1));
    if (!grp || !used || !rs || !seen || !pos || !gmark || !gidx) rw_fail(&s->rw);
    for (int i = 0; i < nv && !s->rw.failed; i++) seen[i] = -1, pos[i] = -1;
    for (int k = 0; k < nl && !s->rw.failed; k++) {
        rs[k] = nrd;
        reads_of(s, lets[k]->kid[0], k, seen, &rd, &nrd, &caprd, 0);
        if (lets[k]->id < nv) pos[lets[k]->id] = k;
        gidx[k] = -1;
    }
    if (!s->rw.failed) rs[nl] = nrd, pl_recount(s);
    for (int k = 0; k < nl && !s->rw.failed; k++) {
        if (used[k] || !loop_member(lets[k]->kid[0], &grp[0])) continue;
        int nm = 1, stamp = k + 1;
        grp[0].k = k, grp[0].id = lets[k]->id;
        gidx[k] = 0;
        for (int r = rs[k]; r < rs[k + 1]; r++) gmark[rd[r]] = stamp;
        for (int j = k + 1; j < nl && j <= k + LOOP_WINDOW && nm < LOOP_MAX; j++) {
            Mem mj;
            if (used[j] || !loop_member(lets[j]->kid[0], &mj)) continue;
            mj.k = j, mj.id = lets[j]->id;
            int via = -1;
            for (int g = 0; g < nm && via < 0; g++)
                if (fold_of_filter(&mj, &grp[g])) via = g;
            /* over the space of a collect of the group (its extent is
             * the collect's shape): the group's space */
            bool over_member = false;
            if (mj.opd) {
                int a = plan_opd_array(mj.opd);
                int q = a >= 0 && a < nv ? pos[a] : -1;
                over_member = q >= k && q < j && gidx[q] >= 0 && grp[gidx[q]].id == a &&
                              grp[gidx[q]].kind == LOOP_COLLECT && space_rank(&mj) == space_rank(&grp[0]);
            }
            if (via >= 0) {
                Prim ops[16];
                mj.via = via;
                mj.neutral = pl_known_lam(mj.t->kid[0], ops, 16);
            } else if (!over_member && !same_space(&grp[0], &mj)) {
                continue;
            }
            /* it reads no let bound since the group's first but members,
             * those at its own position only; and shares an input with
             * the group or reads a member */
            bool ok = true, linked = false;
            for (int r = rs[j]; r < rs[j + 1] && ok; r++) {
                int id = rd[r], q = pos[id];
                if (gmark[id] == stamp) linked = true;
                if (q < k || q >= j) continue;
                int in = gidx[q] >= 0 && !used[q] ? gidx[q] : -1;
                if (in < 0) ok = false;
                else if (in == mj.via) linked = true;
                else ok = reads_member_ok(&mj, &grp[in]), linked = true;
            }
            for (int g = 0; g < nm && ok; g++) ok = !pl_apart(s, grp[g].id, mj.id);
            if (!ok || !linked) continue;
            gidx[j] = nm;
            grp[nm++] = mj;
            for (int r = rs[j]; r < rs[j + 1]; r++) gmark[rd[r]] = stamp;
        }
        /* a collect that only later members read, at their positions,
         * is not made (the counts are the chain's: a loop made above it
         * reads nothing bound here) */
        int ngen = 0, inside[LOOP_MAX];
        memset(inside, 0, sizeof inside);
        for (int h = 1; h < nm && nm >= 2; h++) count_member_reads(grp[h].t, pos, nv, gidx, grp, inside, 0);
        for (int g = 0; g < nm; g++) {
            gidx[grp[g].k] = -1;
            grp[g].drop = grp[g].kind == LOOP_COLLECT && inside[g] == s->uses[grp[g].id];
            ngen += !grp[g].drop;
        }
        if (nm < 2) continue;
        if (ngen < 2) continue;
        int ids[LOOP_MAX];
        for (int g = 0; g < nm; g++) ids[g] = grp[g].id, used[grp[g].k] = true;
        if (!make_loop(s, slot, lets, grp, nm)) break;
        char buf[256];
        size_t o = 0;
        for (int g = 0; g < nm && o < sizeof buf; g++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%sa%d%s", g ? ", " : "", ids[g], grp[g].drop ? " (not made)" : "");
        pl_note(s, "%s fused into one loop", buf);
        for (int g = 0; g < nm; g++) {
            pl_join(s, ids[g], ids[0]);
            if (grp[g].drop) pl_removed(s, ids[g]);
        }
        pl_join(s, lets[grp[0].k]->id, ids[0]);
    }
    free(grp);
    free(used);
    free(rs);
    free(rd);
    free(seen);
    free(pos);
    free(gmark);
    free(gidx);
    free(lets);
}
