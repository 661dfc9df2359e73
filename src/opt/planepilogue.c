/*
 * The planner's last step (plan.c): epilogues.  A map over the result of
 * a fold, a scan or a filter that nothing else reads becomes that
 * consumer's epilogue: the consumer moves into the map's operand (not
 * let-bound; src/backend/cpu/codegen.c ir_epilogue: its kernels apply the
 * map's function as they store each result, so there is no pass over the
 * consumer's result; a filter applies it to the elements it keeps, and
 * only to those).  A map over a stencil's result that nothing else
 * reads becomes the stencil of the two functions composed.  Like the
 * multi-generator loops, epilogues come after the clustering's rewrites
 * and never join two loops the clustering kept apart where it could have
 * merged them (plan_apart).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plan_int.h"
#include <stdlib.h>

void pl_epilogues(PlanRewriteState *s, Node **slot)
{
    int nl;
    Node **lets = pl_collect(s, slot, &nl);
    if (!lets) return;
    pl_recount(s);
    int nv = s->cap, *pos = ax__malloc(sizeof *pos * (size_t)(nv > 0 ? nv : 1));
    if (!pos) return (void)rw_fail(&s->rw), free(lets);
    for (int i = 0; i < nv; i++) pos[i] = -1;
    for (int k = 0; k < nl; k++)
        if (lets[k]->id < nv) pos[lets[k]->id] = k;
    for (int k = 1; k < nl && !s->rw.failed; k++) {
        Node *t = lets[k]->kid[0];
        if (t->op != OP_MAP || t->kid[1]->op != OP_AVAR || s->uses[t->kid[1]->id] != 1) continue;
        int a = t->kid[1]->id, j = a < nv ? pos[a] : -1;
        if (j < 0 || j >= k || pl_apart(s, a, lets[k]->id)) continue;
        Node *c = lets[j]->kid[0];
        switch (c->op) {
        case OP_FOLD: case OP_FOLD1: case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_FILTER:
            t->kid[1] = c;
            t->a = MAP_EPILOGUE;
            pl_note(s, "map a%d applied as %s a%d stores its results", lets[k]->id, op_name(c->op), a);
            break;
        case OP_STENCIL: case OP_STENCIL2: {
            Node *f = rw_copy(&s->rw, c->kid[0]), *st = rw_clone(&s->rw, c);
            if (!f || !st) break;
            f->kid[0] = rw_apply1(&s->rw, t->kid[0], f->kid[0]);
            if (!f->kid[0]) break;
            f->type = f->kid[0]->type;
            st->kid[0] = f;
            st->type = t->type;
            lets[k]->kid[0] = st;
            pl_note(s, "map a%d composed into the stencil a%d", lets[k]->id, a);
            break;
        }
        default:
            continue;
        }
        pl_join(s, a, lets[k]->id);
        pl_removed(s, a);
        pl_splice_out(slot, lets[j]);
    }
    free(pos);
    free(lets);
}
