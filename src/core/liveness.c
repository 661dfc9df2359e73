/*
 * Array liveness for the executors: how many times the body of each
 * array let reads each array its variable binds, so that an executor can
 * release the bound arrays right after their last read instead of at the
 * end of the let's scope.
 *
 * Why: fusion floats lets outwards (fusion.c, "let floating"), so a
 * program becomes one long chain `let a1 = .. in let a2 = .. in ...`
 * whose scopes all end at the very end.  Released at scope end, every
 * intermediate of Stam's fluid solver (82 relaxation sweeps of 8 MB
 * each) stays alive at once: 650 MB of fresh memory per run, page faults
 * on every buffer, and no buffer reuse (array.c's spare buffers).  Counting
 * reads gives each array the lifetime the program's data flow gives it.
 *
 * Counts are per leaf (each array of a binder's array tuple), because a
 * loop's state is a tuple whose components die at different times: in
 * `awhile (\s -> (stencil (stencil (aproj 0 s)), succ (aproj 1 s)))` the
 * grid (aproj 0 s) is dead once the first stencil has read it, but the
 * counter is read after the second.  Counted per variable, the old grid
 * would stay until the step ends, and a sweep would hold three grids
 * where it needs two (the suite's loops keep two, in place).
 *
 * The binders are array lets and the parameters of awhile bodies (the
 * loop state, bound once per step; a condition's parameter is not
 * counted: the body reads the same arrays after it).  A read is an AVAR
 * node (every leaf of the variable) or an APROJ straight over one (the
 * leaves of that component): the host walk (host.c) decrements the same
 * way, from the AVARs it evaluates and from the ones in an operation's
 * scalar code.  An executor resets a binder's counters each time it
 * binds it (so lets inside awhile bodies work per iteration), and
 * releases a leaf's array when its counter reaches 0.  A read that may
 * run more than once per binding (inside an awhile nested in the
 * binder's scope) makes the leaves it reads -1: never released early.  A
 * read that does not run (an acond branch not taken) only keeps a count
 * above 0: the arrays then go at scope end, as before.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <stdlib.h>

typedef struct Walk {
    Liveness *lv;
    int *depth;      /* per binder: the awhile nesting depth of its scope */
} Walk;

static int array_width(const Type *t)
{
    return t && (t->kind == TY_ARRAY || t->kind == TY_ARRAYS) ? t->width : 0;
}

static bool tracked(const Walk *w, int id)
{
    return (unsigned)id < (unsigned)w->lv->nvars && w->lv->first[id] >= 0;
}

static void bind(Walk *w, int id, int loop)
{
    if (!tracked(w, id)) return;
    Liveness *lv = w->lv;
    for (int j = 0; j < lv->width[id]; j++) lv->count[lv->first[id] + j] = 0;
    w->depth[id] = loop;
}

/* One read of leaves [off, off + n) of variable id at awhile depth loop. */
static void read_leaves(Walk *w, int id, int off, int n, int loop)
{
    if (!tracked(w, id)) return;
    int *c = w->lv->count + w->lv->first[id];
    for (int j = off; j < off + n; j++) {
        if (c[j] < 0) continue;
        c[j] = loop > w->depth[id] ? -1 : c[j] + 1;
    }
}

bool liveness_read(const Node *x, int *id, int *off, int *n)
{
    if (x->op == OP_AVAR) {
        *id = x->id;
        *off = 0;
        *n = array_width(x->type);
        return true;
    }
    if (x->op == OP_APROJ && x->n == 1 && x->kid[0] && x->kid[0]->op == OP_AVAR) {
        const Type *tt = x->kid[0]->type;
        if (!tt || tt->kind != TY_ARRAYS || x->a < 0 || x->a >= tt->n) return false;
        *id = x->kid[0]->id;
        *off = ty_leaf_offset(tt, x->a);
        *n = array_width(tt->elts[x->a]);
        return true;
    }
    return false;
}

/* Iterative over let chains (bodies), recursive elsewhere: the source
 * graph's depth is bounded (sharing.c), let chains are not. */
static void walk(Walk *w, const Node *x, int loop)
{
    while (x) {
        int id, off, n;
        if (liveness_read(x, &id, &off, &n)) {
            read_leaves(w, id, off, n, loop);
            return;
        }
        if (x->op == OP_ALET && x->n == 2) {
            bind(w, x->id, loop);
            walk(w, x->kid[0], loop);
            x = x->kid[1];
            continue;
        }
        if (x->op == OP_AWHILE && x->n == 3 && x->kid[1] && x->kid[1]->op == OP_LAM)
            for (int k = 0; k < x->kid[1]->nparam; k++)
                if (x->kid[1]->param[k]) bind(w, x->kid[1]->param[k]->id, loop + 1);
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

Liveness *liveness_counts(const Program *p)
{
    int nv = p->nvars > 0 ? p->nvars : 0;
    int64_t nleaves = 0;
    for (int i = 0; i < nv; i++) nleaves += array_width(p->vartype ? p->vartype[i] : NULL);
    if (nleaves > INT32_MAX) return NULL;
    /* one block: the struct, first[nv], width[nv], count[nleaves] (free()
     * frees it) */
    size_t size = sizeof(Liveness) + sizeof(int) * (2 * (size_t)nv + (size_t)nleaves);
    Liveness *lv = ax__calloc(1, size);
    int *depth = ax__calloc((size_t)(nv > 0 ? nv : 1), sizeof *depth);
    if (!lv || !depth) {
        free(lv);
        free(depth);
        return NULL;
    }
    lv->nvars = nv;
    lv->nleaves = (int)nleaves;
    lv->first = (int *)(lv + 1);
    lv->width = lv->first + nv;
    lv->count = lv->width + nv;
    int off = 0;
    for (int i = 0; i < nv; i++) {
        int n = array_width(p->vartype ? p->vartype[i] : NULL);
        lv->first[i] = n > 0 ? off : -1;
        lv->width[i] = n;
        off += n;
    }
    /* not a binder: untracked, never released early */
    for (int j = 0; j < lv->nleaves; j++) lv->count[j] = -1;
    Walk w = {lv, depth};
    walk(&w, p->root, 0);
    free(depth);
    return lv;
}
