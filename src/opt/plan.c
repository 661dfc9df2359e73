/*
 * The planner's rewrites: multi-generator loops after
 * Accelerate's fusion, as IR rewrites that every backend runs.  This file
 * owns the pass: its state, the chains of lets it walks, and the order of
 * its steps; each step is a file of its own (plan_int.h lists them).
 *
 * After fusion (fusion.c) every array operation that is computed is
 * let-bound: a kernel, a loop over an iteration space with one generator
 * (seed 001 s."Function -> graph"; seed 003 s."Loop Fusion and
 * Deforestation": Collect for map/generate, Reduce for fold, a
 * conditional Collect for filter).  Accelerate fuses producers into
 * consumers only, and a producer with two readers not at all; the
 * rewrites here merge loops it leaves apart, greedily, in this order per
 * chain of lets, inner chains first (src/opt/plangraph.c shows the
 * resulting clusters):
 *
 *  1. a producer that only moves data, read at their own index by several
 *     filters and folds, is copied into each of them and not made
 *     (plancopy.c);
 *  2. a filter read only by folds is fused into them, which then range
 *     over the filter's input (vertical fusion, planfilter.c);
 *  3. folds over one extent become one fold of a tuple, one pass, and a
 *     producer only they read is inlined into it (horizontal fusion,
 *     plansiblings.c);
 *  4. what is left over one iteration space becomes a multi-generator
 *     loop (planloops.c);
 *  5. a map over a fold's, a scan's or a stencil's result is applied as
 *     that consumer stores its results (planepilogue.c).
 *
 * The rewrites keep evaluation strict where it was: every element a
 * filter read is still read and its predicate evaluated; a fold's own
 * element function runs only where the predicate holds (a lazy cond).
 * The member folds of a horizontal group are all evaluated before and
 * after (lets of one chain are evaluated in order, unconditionally); the
 * merged fold sits at the first member's place, so a member whose operand
 * reads a let bound between the two is not merged.
 *
 * Which loops merge is the clustering's to say (ilp.c: seed 001's integer
 * linear program over the loop graph of plangraph.c, which offers it only
 * the pairs these rewrites can carry out): a filter fuses into its folds
 * only if the clustering puts it in its first fold's pass, folds merge
 * and a producer is inlined only into a pass the clustering makes of
 * them (plan_together); without a clustering (the greedy planner) every
 * rewrite that applies is made, as above.  Copying a producer that only
 * moves data is no merge: it is always made.  The multi-generator loops
 * and epilogues come after the clustering's rewrites and merge what the
 * loop graph does not model (a map with a fold of one array, a filter
 * with the folds of its output and its other readers, a map applied as a
 * fold's results are stored), but never two loops the clustering kept
 * apart where it could have merged them (plan_apart): the ILP's clusters
 * are carried out, and may only grow.
 *
 * AX_DEBUG_NO_PLANNER turns the pass off (Accelerate's fusion alone);
 * AX_DEBUG_NO_LOOPS and AX_DEBUG_NO_EPILOGUES the last two steps alone.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plan_int.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the state */

/* (rw.grow) The per-variable tables cover every variable. */
static bool grow(Rewrite *rw, int nvars)
{
    PlanRewriteState *s = rw->pass;
    int need = nvars + 1;
    if (need <= s->cap) return true;
    int cap = need * 2 + 16;
    int *u = ax__realloc(s->uses, sizeof *u * (size_t)cap);
    Node **r = u ? ax__realloc(s->rdv, sizeof *r * (size_t)cap) : NULL;
    int64_t *k = r ? ax__realloc(s->key, sizeof *k * (size_t)cap) : NULL;
    int *g = k ? ax__realloc(s->member, sizeof *g * (size_t)cap) : NULL;
    if (u) s->uses = u;
    if (r) s->rdv = r;
    if (k) s->key = k;
    if (g) s->member = g;
    if (!u || !r || !k || !g) return false;
    for (int i = s->cap; i < cap; i++) s->uses[i] = 0, s->rdv[i] = NULL, s->key[i] = PLAN_KEY_NONE, s->member[i] = 0;
    s->cap = cap;
    return true;
}

/* (rw.rule) While copying, reads of s->rd become copies of s->rd_to, or
 * the element of the producer s->rd_prod; reads of a loop member's array
 * become its element (s->rdv). */
static bool reads(Rewrite *rw, const Node *x, Node **out)
{
    PlanRewriteState *s = rw->pass;
    bool rd = (x->op == OP_INDEX || x->op == OP_LINDEX) && x->kid[0]->op == OP_AVAR;
    if (rd && x->kid[0]->id == s->rd && s->rd_to) return *out = rw_copy(rw, s->rd_to), true;
    if (rd && x->kid[0]->id < s->cap && s->rdv[x->kid[0]->id]) return *out = rw_copy(rw, s->rdv[x->kid[0]->id]), true;
    if (s->rd_prod && (rd || x->op == OP_SHAPE) && x->kid[0]->op == OP_AVAR && x->kid[0]->id == s->rd) {
        const Node *pr = s->rd_prod;
        if (x->op == OP_SHAPE) return *out = pl_opd_extent(s, pr), true;
        Node *e = rw_copy(rw, x->kid[1]);
        *out = x->op == OP_INDEX ? pl_opd_ix(s, pr, e) : pl_opd_lin(s, pr, e);
        return true;
    }
    return false;
}

/* ------------------------------------------------------------ the chain */

static void count_uses(PlanRewriteState *s, const Node *x, int depth)
{
    while (x && depth <= OPT_MAX_DEPTH) {
        s->walked++;
        if (x->op == OP_AVAR && x->id < s->cap) s->uses[x->id]++;
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++) count_uses(s, x->kid[i], depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

void pl_recount(PlanRewriteState *s)
{
    if (!grow(&s->rw, s->rw.p->nvars)) return (void)rw_fail(&s->rw);
    memset(s->uses, 0, sizeof *s->uses * (size_t)s->cap);
    count_uses(s, s->rw.p->root, 0);
    if (s->walked > PLAN_RECOUNT_BUDGET && !s->over_budget) {
        s->over_budget = true;
        pl_note(s, "stopped: the program's chains were recounted past the budget of %lld node visits; the chains "
                   "left are as fusion made them", (long long)PLAN_RECOUNT_BUDGET);
    }
}

/* The lets of the chain at *slot, in order (malloc'd; *nl of them). */
Node **pl_collect(PlanRewriteState *s, Node **slot, int *nl)
{
    int cap = 16;
    *nl = 0;
    Node **lets = ax__malloc(sizeof *lets * (size_t)cap);
    if (!lets) return rw_fail(&s->rw);
    for (Node *x = *slot; x->op == OP_ALET && x->n == 2; x = x->kid[1]) {
        if (*nl == cap) {
            Node **l2 = ax__realloc(lets, sizeof *l2 * (size_t)(cap *= 2));
            if (!l2) {
                free(lets);
                return rw_fail(&s->rw);
            }
            lets = l2;
        }
        lets[(*nl)++] = x;
    }
    return lets;
}

/* Removes let `dead` (its variable unused: a filter fused into its fold,
 * a member's projection nothing reads; neither can fault where the
 * rewritten program would not) from the chain at *slot. */
void pl_splice_out(Node **slot, Node *dead)
{
    for (Node **l = slot; (*l)->op == OP_ALET && (*l)->n == 2; l = &(*l)->kid[1])
        if (*l == dead) {
            *l = dead->kid[1];
            return;
        }
}

/* ------------------------------------------------------------ walking chains */

static void walk(PlanRewriteState *s, Node **slot, int depth);

static void walk_kids(PlanRewriteState *s, Node *n, int depth)
{
    Node **slot;
    for (int i = 0; !s->rw.failed && (slot = opt_array_slot(n, &i));) walk(s, slot, depth + 1);
}

/* One chain of array lets starting at *slot: its nested chains first,
 * then the steps, in order. */
static void walk(PlanRewriteState *s, Node **slot, int depth)
{
    if (s->rw.failed || depth > OPT_MAX_DEPTH) return;
    Node *n = *slot;
    if (n->op != OP_ALET) return walk_kids(s, n, depth);
    int nl;
    Node **lets = pl_collect(s, slot, &nl);
    if (!lets) return;
    Node *last = nl ? lets[nl - 1] : NULL;
    /* nested chains first (terms of this chain, the body) */
    for (int k = 0; k < nl && !s->rw.failed; k++) walk(s, &lets[k]->kid[0], depth + 1);
    if (last) walk(s, &last->kid[1], depth + 1);
    if (s->over_budget) {
        free(lets);
        return;
    }
    pl_copy_movers(s, slot, lets, nl, last);
    pl_filters_into_folds(s, slot, lets, nl, last);
    free(lets);
    pl_sibling_folds(s, slot);   /* (on the chain as it is now) */
    /* multi-generator loops: what the steps above left over one space */
    unsigned dbg = s->rw.cx->opt.debug;
    if ((dbg & (AX_DEBUG_NO_LOOPS | AX_DEBUG_NO_EPILOGUES)) != (AX_DEBUG_NO_LOOPS | AX_DEBUG_NO_EPILOGUES) && !s->rw.failed)
        pl_bind_results(s, slot);   /* (the body's arrays let-bound: members, maps with epilogues) */
    if (!s->rw.failed && !(dbg & AX_DEBUG_NO_LOOPS)) pl_loops(s, slot);
    /* maps over a fold's, a scan's or a stencil's result: as they store */
    if (!s->rw.failed && !(dbg & AX_DEBUG_NO_EPILOGUES)) pl_epilogues(s, slot);
}

int opt_plan(ax_ctx *cx, Program *p, PlanLog *log, const PlanClusters *cl)
{
    PlanRewriteState s;
    memset(&s, 0, sizeof s);
    s.rd = -1;
    s.log = log;
    s.cl = cl;
    if (p && p->root && rw_open(&s.rw, cx, p)) {
        s.rw.pass = &s;
        s.rw.rule = reads;
        s.rw.grow = grow;
        if (grow(&s.rw, p->nvars)) walk(&s, &p->root, 0);
        else rw_fail(&s.rw);
    }
    rw_close(&s.rw);
    free(s.uses);
    free(s.key);
    free(s.rdv);
    free(s.member);
    if (s.rw.failed) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory (planner)");
        return -1;
    }
    return s.changed;
}
