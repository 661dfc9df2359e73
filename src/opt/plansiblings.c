/*
 * The planner's third step (plan.c): horizontal fusion of sibling
 * reductions (seed 003, Figure "Loop fusion", horizontal case): folds of
 * one let chain whose operands range over the same extent become one fold
 * of the tuple of their elements with the componentwise operator, one
 * pass computing every generator.  The operator stays associative and
 * keeps the order of its operands, so the fold skeletons' ordered chunked
 * combine is right for non-commutative operators; a tuple of commutative
 * primitives is still recognised as commutative by the CPU backend
 * (cg_lam_comm) and gets its lane-parallel loop.  The results are read
 * back by projection: every scalar read of a member's result reads its
 * component of the tuple; a member still used as an array (the program's
 * result, a kernel's operand) keeps a one-element-per-row map that
 * projects it.  A producer (a map of an array, a generate) that only the
 * members read, each at its own index, is inlined into the one pass (seed
 * 003's vertical case) and not made.
 *
 * The member folds of a group are all evaluated before and after (lets of
 * one chain are evaluated in order, unconditionally); the merged fold
 * sits at the first member's place, so a member whose operand reads a let
 * bound between the two is not merged.  Folds merge, and a producer is
 * inlined, only into a pass the clustering (ilp.c) makes of them.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plan_int.h"
#include <stdio.h>
#include <stdlib.h>

/* A producer the planner may inline into the cluster that alone reads it
 * (seed 003's vertical case, "consume collect"): a map of an array
 * variable, or a generate. */
static bool inlinable(const Node *t)
{
    return (t->op == OP_MAP && t->kid[1]->op == OP_AVAR) || t->op == OP_GENERATE;
}

/* Does term x read any array variable bound by lets[from..to)? */
static bool reads_any(const Node *x, Node *const *lets, int from, int to)
{
    for (int k = from; k < to; k++)
        if (plan_occurrences(x, lets[k]->id, 0)) return true;
    return false;
}

/* ------------------------------------------------------------ retargeting */

/* Reads of the group's arrays in x (s->member[id]: its component k + 1
 * in `to`, whose element is a tuple; 0 for no member) become component k
 * of `to`; their shapes, to's.  One walk for the whole group: a group of
 * siblings retargets the rest of its chain once, not once per member
 * (which made merging n folds cost n^2). */
static void retarget(PlanRewriteState *s, Node *x, int to, int depth)
{
    const int *member = s->member;
    while (x && !s->rw.failed && depth <= OPT_MAX_DEPTH) {
        const Node *a = x->n > 0 ? x->kid[0] : NULL;
        int k = a && a->op == OP_AVAR && a->id >= 0 && a->id < s->cap ? member[a->id] - 1 : -1;
        if ((x->op == OP_INDEX || x->op == OP_LINDEX) && k >= 0) {
            Node *rd = rw_op2(&s->rw, x->op, s->rw.p->vartype[to]->elt, rw_var(&s->rw, to), x->kid[1]);
            if (!rd) return;
            retarget(s, x->kid[1], to, depth + 1);
            x->op = OP_PROJ;
            x->n = 1;
            x->a = k;
            x->kid[0] = rd;
            return;
        }
        if (x->op == OP_SHAPE && k >= 0) {
            x->kid[0]->id = to;
            x->kid[0]->type = s->rw.p->vartype[to];
            return;
        }
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++) retarget(s, x->kid[i], to, depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

/* ------------------------------------------------------------ merging */

/* Merges the folds lets[m[0..nm)] (of one chain, m ascending) into one at
 * lets[m[0]]'s place.  A member's operand that is an array variable bound
 * in the chain by a producer read by the members alone is inlined (its
 * let, dead, is removed by the caller: *inl[k] its let, else NULL). */
static bool merge_siblings(PlanRewriteState *s, Node **lets, const int *m, int nm, Node **inl)
{
    const Node **opd = arena_alloc(&s->rw.p->arena, sizeof *opd * (size_t)nm);
    const Node **prod = arena_alloc(&s->rw.p->arena, sizeof *prod * (size_t)nm);
    int *pv = arena_alloc(&s->rw.p->arena, sizeof *pv * (size_t)nm);
    if (!opd || !prod || !pv) return rw_fail(&s->rw), false;
    /* the array each member's operand reads at its own position (if any):
     * itself, or the one array a delayed operand reads once per element */
    for (int k = 0; k < nm; k++) {
        const Node *o = pl_fold_opd(lets[m[k]]->kid[0]);
        inl[k] = NULL, prod[k] = NULL, opd[k] = o, pv[k] = -1;
        if (o->op == OP_AVAR) pv[k] = o->id;
        else if (o->op == OP_DELAYED && o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR) {
            int a = o->kid[0]->kid[0]->id;
            if (plan_occurrences(o->kid[1], a, 0) == 1 && plan_occurrences(o->kid[2], a, 0) == 1) pv[k] = a;
        }
    }
    for (int k = 0; k < nm; k++) {
        if (pv[k] < 0) continue;
        int users = 0, readers = 0;
        for (int q = 0; q < nm; q++)
            if (pv[q] == pv[k]) users += plan_occurrences(pl_fold_opd(lets[m[q]]->kid[0]), pv[k], 0), readers++;
        if (readers < 2 || users != s->uses[pv[k]] || !pl_together(s, pv[k], lets[m[0]]->id)) continue;
        for (int j = 0; j < m[0]; j++)
            if (lets[j]->id == pv[k] && inlinable(lets[j]->kid[0])) {
                inl[k] = lets[j];
                if (opd[k]->op == OP_AVAR) opd[k] = lets[j]->kid[0];
                else prod[k] = lets[j]->kid[0];
            }
    }
    const Node *f0 = lets[m[0]]->kid[0];
    bool z = f0->op == OP_FOLD;
    int rank = f0->type->rank;
    const Type **et = arena_alloc(&s->rw.p->arena, sizeof *et * (size_t)nm);
    if (!et) return rw_fail(&s->rw), false;
    for (int k = 0; k < nm; k++) et[k] = lets[m[k]]->kid[0]->type->elt;
    const Type *tt = rw_ttuple(&s->rw, nm, et);
    const Type *at = tt ? rw_tarray(&s->rw, tt, rank) : NULL;
    if (!at) return rw_fail(&s->rw), false;
    /* the operator: componentwise */
    const Type *pt[2] = {tt, tt};
    int pid[2];
    if (!rw_params(&s->rw, 2, pt, pid)) return false;
    Node *gb = rw_node(&s->rw, OP_TUPLE, nm, tt);
    for (int k = 0; gb && k < nm; k++)
        gb->kid[k] = pl_subst2(s, lets[m[k]]->kid[0]->kid[0], rw_proj(&s->rw, k, rw_var(&s->rw, pid[0])),
                            rw_proj(&s->rw, k, rw_var(&s->rw, pid[1])));
    Node *g = rw_lam(&s->rw, 2, pid, gb);
    Node *zz = z ? rw_node(&s->rw, OP_TUPLE, nm, tt) : NULL;
    for (int k = 0; zz && k < nm; k++) zz->kid[k] = rw_copy(&s->rw, lets[m[k]]->kid[0]->kid[1]);
    /* the operand: both forms, componentwise */
    const Type *ixt = rw_tindex(&s->rw, rank + 1), *i64 = ty_i64();
    int xid, iid;
    if (!rw_params(&s->rw, 1, &ixt, &xid) || !rw_params(&s->rw, 1, &i64, &iid)) return false;
    Node *bix = rw_node(&s->rw, OP_TUPLE, nm, tt), *blin = rw_node(&s->rw, OP_TUPLE, nm, tt);
    for (int k = 0; bix && blin && k < nm; k++) {
        const Node *o = opd[k];
        s->rd = prod[k] ? pv[k] : -1, s->rd_prod = prod[k];
        bix->kid[k] = pl_opd_ix(s, o, rw_var(&s->rw, xid));
        blin->kid[k] = pl_opd_lin(s, o, rw_var(&s->rw, iid));
    }
    s->rd_prod = prod[0];
    s->rd = prod[0] ? pv[0] : -1;
    Node *lix = rw_lam1(&s->rw, xid, bix), *llin = rw_lam1(&s->rw, iid, blin);
    Node *dl = rw_node(&s->rw, OP_DELAYED, 3, rw_tarray(&s->rw, tt, rank + 1));
    if (!dl || !lix || !llin || (z && !zz) || !g || s->rw.failed) return rw_fail(&s->rw), false;
    dl->kid[0] = pl_opd_extent(s, opd[0]);
    s->rd = -1, s->rd_prod = NULL;
    dl->kid[1] = lix, dl->kid[2] = llin;
    Node *nf = rw_node(&s->rw, f0->op, z ? 3 : 2, at);
    if (!nf || !dl->kid[0]) return rw_fail(&s->rw), false;
    nf->kid[0] = g;
    if (z) nf->kid[1] = zz;
    nf->kid[z ? 2 : 1] = dl;
    int tid = rw_fresh(&s->rw, at);
    if (tid < 0) return false;
    /* let t = fused in let r0 = proj 0 t in ...; each member's let binds
     * its projection, and its scalar reads read t */
    Node *first = lets[m[0]];
    Node *nl = rw_node(&s->rw, OP_ALET, 2, first->type);
    if (!nl) return false;
    nl->id = first->id;
    nl->kid[0] = pl_proj_map(s, tid, 0);
    nl->kid[1] = first->kid[1];
    first->id = tid;
    first->kid[0] = nf;
    first->kid[1] = nl;
    for (int k = 1; k < nm && !s->rw.failed; k++) lets[m[k]]->kid[0] = pl_proj_map(s, tid, k);
    /* the members' variables name projections of the pass now, no loops */
    s->key[nl->id] = PLAN_KEY_GONE;
    for (int k = 1; k < nm; k++) s->key[lets[m[k]]->id] = PLAN_KEY_GONE;
    /* scalar reads of the members read the tuple; retarget the whole rest
     * of the chain (the members' lets included: harmless) */
    int ids[64];
    ids[0] = nl->id;
    for (int k = 1; k < nm; k++) ids[k] = lets[m[k]]->id;
    for (int k = 0; k < nm; k++)
        if (ids[k] >= 0 && ids[k] < s->cap) s->member[ids[k]] = k + 1;
    retarget(s, nl->kid[1], tid, 0);
    for (int k = 0; k < nm; k++)
        if (ids[k] >= 0 && ids[k] < s->cap) s->member[ids[k]] = 0;
    return !s->rw.failed;
}

/* ------------------------------------------------------------ the step */

/* Folds over one extent, of the chain at *slot as it is now. */
void pl_sibling_folds(PlanRewriteState *s, Node **slot)
{
    int nl;
    Node **lets;
    if (s->rw.failed || !(lets = pl_collect(s, slot, &nl))) return;
    bool *done = ax__calloc((size_t)(nl ? nl : 1), sizeof *done);
    int *m = ax__malloc(sizeof *m * (size_t)(nl ? nl : 1));
    if (!done || !m) rw_fail(&s->rw);
    /* (folds of a filter's output that others read too are left to the
     * filter's loop below, each a reduction of its own) */
    for (int k = 0; k < nl && done; k++) {
        const Node *f = lets[k]->kid[0], *o = pl_is_fold(f) ? pl_fold_opd(f) : NULL;
        int a = o ? plan_opd_array(o) : -1;
        for (int j = 0; j < k && a >= 0; j++)
            if (lets[j]->id == a && lets[j]->kid[0]->op == OP_FILTER) done[k] = true;
    }
    for (int k = 0; k < nl && !s->rw.failed && !s->over_budget; k++) {
        const Node *f = lets[k]->kid[0];
        if (done[k] || !pl_is_fold(f)) continue;
        int nm = 0;
        m[nm++] = k;
        for (int j = k + 1; j < nl && nm < 64; j++) {
            const Node *h = lets[j]->kid[0];
            if (done[j] || h->op != f->op || h->type->rank != f->type->rank) continue;
            if (!pl_together(s, lets[k]->id, lets[j]->id)) continue;
            if (!pl_same_extent(pl_fold_opd(f), pl_fold_opd(h)) || reads_any(h, lets, k, j)) continue;
            m[nm++] = j;
        }
        if (nm < 2) continue;
        pl_recount(s);
        for (int q = 0; q < nm; q++) done[m[q]] = true;
        int ids[64];
        for (int q = 0; q < nm; q++) ids[q] = lets[m[q]]->id;
        Node *inl[64];
        if (merge_siblings(s, lets, m, nm, inl)) {
            pl_join(s, lets[m[0]]->id, ids[0]);   /* the tuple's let */
            for (int q = 0; q < nm; q++) {
                pl_join(s, ids[q], ids[0]);
                if (!inl[q]) continue;
                /* (a projection of an earlier pass inlined is no loop the
                 * clustering knows: nothing joins) */
                if (pl_key_of(s, inl[q]->id) != PLAN_KEY_GONE) pl_join(s, inl[q]->id, ids[0]), pl_removed(s, inl[q]->id);
                pl_splice_out(slot, inl[q]);   /* spliced once: later ones find it gone */
            }
            /* members read only by scalar code (now reading the tuple)
             * need no array of their own */
            pl_recount(s);
            if (s->uses[ids[0]] == 0) {
                Node *first = lets[m[0]];
                if (first->kid[1]->op == OP_ALET && first->kid[1]->id == ids[0]) pl_splice_out(slot, first->kid[1]);
            }
            for (int q = 1; q < nm; q++)
                if (s->uses[ids[q]] == 0) pl_splice_out(slot, lets[m[q]]);
            char buf[256];
            size_t o = 0;
            for (int q = 0; q < nm && o < sizeof buf; q++)
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%sa%d", q ? ", " : "", ids[q]);
            pl_note(s, "sibling folds %s fused into one pass", buf);
        }
    }
    free(done);
    free(m);
    free(lets);
}

/* ------------------------------------------------------------ for the loop graph */

bool plan_inlinable(const Node *t) { return inlinable(t); }
