/*
 * The planner's second step (plan.c): vertical fusion of a filter into a
 * fold (seed 003, vertical case "consume collect", with the filter as a
 * conditional Collect; seed 001 s."Subtype optimisations": the filter's
 * output is a sub-size of its input's, so the consumer can run over the
 * input's size): when folds are the only readers of a filter's output,
 * each reading it at its own index, they range over the filter's input
 * instead (and, as siblings, then share one pass), and an element the
 * predicate drops adds nothing.  For an operator the CPU backend knows
 * (componentwise +, *, min, max, and the bit operations) "nothing" is its
 * neutral element, which keeps the element function branch-free: x +
 * (-0.0) = x exactly for every float x, and a NaN is neutral for min and
 * max, whose NaN loses (prim.c FMINMAX), so the result is bit for bit the
 * fold of the filtered elements in the same order.  Any other operator is
 * lifted to (kept, value) pairs: (k1, a) . (k2, b) = (k1 || k2, k1 ? (k2
 * ? a.b : a) : b), associative and order-keeping, with z as (true, z);
 * the fold's result is the pair's second component.  The filter's output
 * is then read by nothing and its let is removed.
 *
 * Every element the filter read is still read and its predicate
 * evaluated; the fold's own element function runs only where the
 * predicate holds (a lazy cond).  The clustering (ilp.c) decides: a
 * filter fuses into its folds only if it puts the filter in its first
 * fold's pass (plan_absorbs and plan_absorb_keeps_fold are the loop
 * graph's view of this step).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plan_int.h"

/* The fold's operand reads the filter's output `ys` only as
 * linearIndex ys i of its own parameter i (and its extent is shape ys, or
 * it is ys itself). */
static bool reads_only_at_param(const Node *x, int ys, int i, int depth)
{
    if (depth > OPT_MAX_DEPTH) return false;
    if (x->op == OP_LINDEX && x->kid[0]->op == OP_AVAR && x->kid[0]->id == ys)
        return x->kid[1]->op == OP_VAR && x->kid[1]->id == i;
    if (x->op == OP_AVAR && x->id == ys) return false;
    if (x->op == OP_VAR && x->id == i) return false;
    for (int k = 0; k < x->n; k++)
        if (!reads_only_at_param(x->kid[k], ys, i, depth + 1)) return false;
    return true;
}

/* Can the fold `fold` read the input of the filter bound by flt instead of
 * its output?  Its operand must read the output at its own position only
 * (and nothing else in the fold read it); *occ: the reads. */
static bool can_absorb(const Node *fold, const Node *flt, int *occ)
{
    if (fold->op != OP_FOLD || fold->type->rank != 0) return false;
    int ys = flt->id;
    const Node *d = flt->kid[0]->kid[1];
    const Node *o = fold->kid[2], *g = fold->kid[0], *z = fold->kid[1];
    *occ = plan_occurrences(o, ys, 0);
    if (d->type->rank != 1 || *occ == 0 || plan_occurrences(fold, ys, 0) != *occ) return false;
    if (o->op == OP_AVAR) {
        if (o->id != ys) return false;
    } else if (o->op == OP_DELAYED) {
        const Node *ln = o->kid[2];
        if (!reads_only_at_param(ln->kid[0], ys, ln->param[0]->id, 0)) return false;
        /* the extent must be ys's (the fold's rows are the filter's) */
        if (!(o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR && o->kid[0]->kid[0]->id == ys))
            return false;
    } else {
        return false;
    }
    Prim ops[16];
    return pl_known_lam(g, ops, 16) || pl_is_const_term(z, 0);
}

/* Rewrites *site (a fold for which can_absorb holds: the term of let
 * `owner`, or the body of the chain whose last let is `owner`) to read
 * the filter's input; true if it did. */
static bool filter_into_fold(PlanRewriteState *s, Node **site, Node *owner, bool at_body, const Node *flt)
{
    Node *fold = *site;
    int ys = flt->id;
    const Node *filter = flt->kid[0], *pred = filter->kid[0], *d = filter->kid[1];
    const Node *o = fold->kid[2], *g = fold->kid[0], *z = fold->kid[1];
    const Type *elt = fold->type->elt, *delt = d->type->elt;
    Prim ops[16];
    bool known = pl_known_lam(g, ops, 16);

    /* element i of the new operand: let v = d[i] in p v ? e v : none */
    int iid = rw_fresh(&s->rw, ty_i64()), vid = rw_fresh(&s->rw, delt);
    if (iid < 0 || vid < 0) return false;
    Node *v = rw_var(&s->rw, vid);
    Node *keep = rw_apply1(&s->rw, pred, v);
    Node *val;
    if (o->op == OP_AVAR) {
        val = rw_var(&s->rw, vid);
    } else {
        s->rd = ys, s->rd_to = rw_var(&s->rw, vid);
        val = rw_apply1(&s->rw, o->kid[2], rw_var(&s->rw, iid));   /* its parameter appears only in the read */
        s->rd = -1, s->rd_to = NULL;
    }
    Node *none, *some;
    const Type *nelt = elt;
    if (known) {
        none = pl_neutrals(s, ops, elt);
        some = val;
    } else {
        const Type *pe[2] = {ty_bool(), elt};
        nelt = rw_ttuple(&s->rw, 2, pe);
        some = rw_op2(&s->rw, OP_TUPLE, nelt, rw_bool(&s->rw, true), val);
        none = rw_op2(&s->rw, OP_TUPLE, nelt, rw_bool(&s->rw, false), rw_copy(&s->rw, z));
    }
    Node *body = rw_let(&s->rw, vid, pl_opd_lin(s, d, rw_var(&s->rw, iid)), rw_cond(&s->rw, keep, some, none));
    if (!body || !nelt) return rw_fail(&s->rw), false;
    Node *llin = rw_lam1(&s->rw, iid, body);
    /* the index form: the linear one at ixget 0 ix */
    const Type *ixt = rw_tindex(&s->rw, 1);
    int xid;
    if (!llin || !rw_params(&s->rw, 1, &ixt, &xid)) return false;
    Node *lix = rw_lam1(&s->rw, xid, rw_apply1(&s->rw, llin, rw_ixget(&s->rw, 0, rw_var(&s->rw, xid))));
    Node *dl = lix ? rw_op3(&s->rw, OP_DELAYED, rw_tarray(&s->rw, nelt, 1), pl_opd_extent(s, d), lix, llin) : NULL;
    if (!dl) return false;

    if (known) {
        Node *nf = rw_node(&s->rw, OP_FOLD, 3, fold->type);
        if (!nf) return false;
        nf->kid[0] = fold->kid[0], nf->kid[1] = fold->kid[1], nf->kid[2] = dl;
        *site = nf;
        return !s->rw.failed;
    }
    /* (kept, value) pairs: the fold of pairs, then its second component */
    const Type *pt[2] = {nelt, nelt};
    int pid[2];
    if (!rw_params(&s->rw, 2, pt, pid)) return false;
    Node *k1 = rw_proj(&s->rw, 0, rw_var(&s->rw, pid[0])), *k2 = rw_proj(&s->rw, 0, rw_var(&s->rw, pid[1]));
    Node *a = rw_proj(&s->rw, 1, rw_var(&s->rw, pid[0])), *b = rw_proj(&s->rw, 1, rw_var(&s->rw, pid[1]));
    Node *both = pl_subst2(s, g, rw_proj(&s->rw, 1, rw_var(&s->rw, pid[0])), rw_proj(&s->rw, 1, rw_var(&s->rw, pid[1])));
    Node *kk = rw_prim(&s->rw, P_OR, ty_bool(), k1, k2);
    Node *inner = rw_cond(&s->rw, rw_proj(&s->rw, 0, rw_var(&s->rw, pid[1])), both, a);
    Node *pb = rw_op2(&s->rw, OP_TUPLE, nelt, kk, rw_cond(&s->rw, rw_proj(&s->rw, 0, rw_var(&s->rw, pid[0])), inner, b));
    Node *nz = rw_op2(&s->rw, OP_TUPLE, nelt, rw_bool(&s->rw, true), rw_copy(&s->rw, z));
    Node *nf = rw_op3(&s->rw, OP_FOLD, rw_tarray(&s->rw, nelt, 0), rw_lam(&s->rw, 2, pid, pb), nz, dl);
    if (!nf) return false;
    /* the pair fold gets a let of its own; *site becomes its second
     * component (a map over a rank-0 array: one element) */
    int pidv = rw_fresh(&s->rw, nf->type);
    if (pidv < 0) return false;
    Node *m = pl_proj_map(s, pidv, 1);
    if (!m) return rw_fail(&s->rw), false;
    if (at_body) {
        Node *al = rw_op2(&s->rw, OP_ALET, m->type, nf, m);
        if (!al) return false;
        al->id = pidv;
        s->key[pidv] = plan_body_key(fold);   /* the body's loop, now let-bound */
        *site = al;
    } else {
        Node *nl = rw_op2(&s->rw, OP_ALET, owner->type, m, owner->kid[1]);
        if (!nl) return false;
        nl->id = owner->id;
        s->key[pidv] = pl_key_of(s, owner->id);
        s->key[owner->id] = PLAN_KEY_GONE;   /* now a projection */
        owner->id = pidv;
        owner->kid[0] = nf;
        owner->kid[1] = nl;
    }
    return !s->rw.failed;
}

/* ------------------------------------------------------------ the step */

/* A filter read only by folds (lets' terms or the body), each reading it
 * at its own position: every one reads the filter's input instead (and
 * the sibling step, plansiblings.c, merges them). */
void pl_filters_into_folds(PlanRewriteState *s, Node **slot, Node **lets, int nl, Node *last)
{
    for (int k = 0; k < nl && !s->rw.failed && !s->over_budget; k++) {
        if (lets[k]->kid[0]->op != OP_FILTER) continue;
        pl_recount(s);
        int ys = lets[k]->id, seen = 0, nf = 0;
        bool ok = true;
        for (int j = k + 1; j <= nl && ok; j++) {
            Node *t = j < nl ? lets[j]->kid[0] : last->kid[1];
            int occ = 0;
            if (can_absorb(t, lets[k], &occ)) {
                /* the clustering puts the filter in its first fold's pass,
                 * or keeps it a loop of its own */
                if (!nf) ok = pl_together(s, ys, j < nl ? lets[j]->id : plan_body_key(t));
                seen += occ, nf++;
            }
            else if (plan_occurrences(t, ys, 0)) ok = false;
        }
        if (!ok || nf == 0 || seen != s->uses[ys]) continue;
        bool first = true;
        for (int j = k + 1; j <= nl && !s->rw.failed; j++) {
            Node **site = j < nl ? &lets[j]->kid[0] : &last->kid[1];
            int occ = 0;
            int64_t was = j < nl ? lets[j]->id : plan_body_key(*site);
            if (!can_absorb(*site, lets[k], &occ)) continue;
            ok = filter_into_fold(s, site, j < nl ? lets[j] : last, j == nl, lets[k]);
            /* the filter is in its first reader's pass; the others share
             * it when the horizontal step below merges them (else each
             * computes the predicate again) */
            if (first) pl_join(s, ys, was), first = false;
            int64_t now = j < nl ? lets[j]->id : (*site)->op == OP_ALET ? (*site)->id : was;
            if (now != was) pl_join(s, now, was);   /* the pair fold's let */
        }
        pl_removed(s, ys);
        if (s->rw.failed) break;
        pl_note(s, "filter a%d fused into the %d fold%s reading it", ys, nf, nf > 1 ? "s" : "");
        pl_splice_out(slot, lets[k]);
    }
}

/* ------------------------------------------------------------ for the loop graph */

bool plan_absorbs(const Node *fold, const Node *flt, int *occ) { return can_absorb(fold, flt, occ); }

bool plan_absorb_keeps_fold(const Node *fold)
{
    Prim ops[16];
    return pl_known_lam(fold->kid[0], ops, 16);
}
