/*
 * Array liveness for the executors: how many times the body of each
 * array let reads its variable, so that an executor can release the bound
 * arrays right after their last read instead of at the end of the let's
 * scope.
 *
 * Why: fusion floats lets outwards (fusion.c, "let floating"), so a
 * program becomes one long chain `let a1 = .. in let a2 = .. in ...`
 * whose scopes all end at the very end.  Released at scope end, every
 * intermediate of Stam's fluid solver (82 relaxation sweeps of 8 MB
 * each) stays alive at once: 650 MB of fresh memory per run, page faults
 * on every buffer, and no buffer reuse (array.c's spare buffers).  Counting
 * reads gives each array the lifetime the program's data flow gives it.
 *
 * The count of binder x is the number of AVAR x nodes in the let's body.
 * An executor resets its counter from it each time it enters the let (so
 * lets inside awhile bodies work per iteration), decrements it once per
 * node it has finished with, and releases the arrays when it reaches 0.
 * A read that may run more than once per entry of the let (inside an
 * awhile function nested in the let's body) makes the count -1: never
 * released early.  A read that does not run (an acond branch not taken)
 * only keeps the count above 0: the arrays then go at scope end, as
 * before.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <stdlib.h>

typedef struct Walk {
    int *count;      /* per variable id */
    int *depth;      /* per binder: the awhile nesting depth of its let */
    int nvars;
} Walk;

/* Iterative over let chains (bodies), recursive elsewhere: the source
 * graph's depth is bounded (sharing.c), let chains are not. */
static void walk(Walk *w, const Node *x, int loop)
{
    while (x) {
        if (x->op == OP_AVAR) {
            if ((unsigned)x->id < (unsigned)w->nvars && w->count[x->id] >= 0) {
                if (loop > w->depth[x->id]) w->count[x->id] = -1;
                else w->count[x->id]++;
            }
            return;
        }
        if (x->op == OP_ALET && x->n == 2) {
            if ((unsigned)x->id < (unsigned)w->nvars) {
                w->count[x->id] = 0;
                w->depth[x->id] = loop;
            }
            walk(w, x->kid[0], loop);
            x = x->kid[1];
            continue;
        }
        for (int i = 0; i < x->n; i++) {
            /* the condition and body of an awhile run once per iteration */
            int in = x->op == OP_AWHILE && i < 2 ? loop + 1 : loop;
            if (i == x->n - 1 && in == loop) {
                x = x->kid[i];
                goto next;
            }
            walk(w, x->kid[i], in);
        }
        return;
    next:;
    }
}

int *liveness_counts(const Program *p)
{
    int n = p->nvars > 0 ? p->nvars : 1;
    Walk w = {ax__calloc((size_t)n, sizeof(int)), ax__calloc((size_t)n, sizeof(int)), p->nvars};
    if (!w.count || !w.depth) {
        free(w.count);
        free(w.depth);
        return NULL;
    }
    for (int i = 0; i < n; i++) w.count[i] = -1;   /* not a let binder: untracked */
    walk(&w, p->root, 0);
    free(w.depth);
    return w.count;
}
