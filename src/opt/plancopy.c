/*
 * The planner's first step (plan.c): a producer that only moves data (a
 * zip of arrays into tuples) read at their own index by several filters
 * and folds is copied into each of them (it does no work to copy) and not
 * made.
 *
 * Such a producer (QuickHull's points) is left manifest by fusion because
 * several consumers read it, every one at its own index: each reads the
 * producer's sources instead, and the array is not made (seed 003's
 * vertical case, with the producer copied into each consumer: it does no
 * work to copy).  Copying merges no loops: the clustering (ilp.c) is not
 * asked, and the loop graph (plangraph.c) counts such a producer as never
 * made (plan_copies).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plan_int.h"

/* An element function that only moves data (reads, tuples, projections,
 * index arithmetic of constants): computing it again in each reader costs
 * what reading its array would, so copying it into several readers
 * duplicates no work. */
static bool moves_only(const Node *x, int depth)
{
    if (depth > 64) return false;
    switch (x->op) {
    case OP_VAR: case OP_CONST: case OP_AVAR: case OP_TUPLE: case OP_PROJ: case OP_IXGET: case OP_IXCONS:
    case OP_INDEX: case OP_LINDEX: case OP_SHAPE: case OP_LET: case OP_LAM:
        break;
    default:
        return false;
    }
    for (int i = 0; i < x->n; i++)
        if (!moves_only(x->kid[i], depth + 1)) return false;
    return true;
}

/* A producer the loop graph (plangraph.c) may count as copied into its
 * readers: one whose element function only moves data. */
bool plan_copies(const Node *t)
{
    /* (a generate of rank 2 or more is read linearly through fromLinear, a
     * division per dimension: not free to copy) */
    return (t->op == OP_GENERATE && t->type->rank <= 1 && moves_only(t->kid[1], 0)) ||
           (t->op == OP_MAP && t->kid[1]->op == OP_AVAR && moves_only(t->kid[0], 0));
}

/* The operand of consumer c that ranges over its input (a filter's, a
 * fold's), or -1. */
static int input_kid(const Node *c) { return c->op == OP_FILTER || c->op == OP_FOLD1 ? 1 : c->op == OP_FOLD ? 2 : -1; }

/* Each producer that only moves data and is read by consumers of the
 * chain alone, each reading it once as its input (at its own index):
 * its readers' inputs become delayed copies of it, its let goes. */
void pl_copy_movers(PlanRewriteState *s, Node **slot, Node **lets, int nl, Node *last)
{
    for (int k = 0; k < nl && !s->rw.failed && !s->over_budget; k++) {
        const Node *t = lets[k]->kid[0];
        if (!plan_copies(t)) continue;
        pl_recount(s);
        int pid = lets[k]->id, readers = 0;
        bool ok = s->uses[pid] > 1;
        for (int j = k + 1; j <= nl && ok; j++) {
            Node *c = j < nl ? lets[j]->kid[0] : last->kid[1];
            int o = plan_occurrences(c, pid, 0);
            if (!o) continue;
            int at = input_kid(c);
            ok = o == 1 && at > 0 && c->kid[at]->op == OP_AVAR && c->kid[at]->id == pid;
            readers += ok;
        }
        if (!ok || readers != s->uses[pid]) continue;
        for (int j = k + 1; j <= nl && !s->rw.failed; j++) {
            Node *c = j < nl ? lets[j]->kid[0] : last->kid[1];
            int at = input_kid(c);
            if (at < 0 || c->kid[at]->op != OP_AVAR || c->kid[at]->id != pid) continue;
            const Type *ixt = rw_tindex(&s->rw, t->type->rank), *i64 = ty_i64();
            int xid, iid;
            if (!rw_params(&s->rw, 1, &ixt, &xid) || !rw_params(&s->rw, 1, &i64, &iid)) break;
            Node *lix = rw_lam1(&s->rw, xid, pl_opd_ix(s, t, rw_var(&s->rw, xid)));
            Node *llin = rw_lam1(&s->rw, iid, pl_opd_lin(s, t, rw_var(&s->rw, iid)));
            Node *dl = lix && llin ? rw_op3(&s->rw, OP_DELAYED, t->type, pl_opd_extent(s, t), lix, llin) : NULL;
            if (!dl) break;
            c->kid[at] = dl;
        }
        if (s->rw.failed) break;
        pl_note(s, "a%d (moving data only) copied into its %d readers", pid, readers);
        pl_removed(s, pid);
        pl_splice_out(slot, lets[k]);
    }
}
