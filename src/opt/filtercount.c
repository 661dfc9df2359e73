/*
 * The size of a filter, counted (seed 001's size types: a filter's
 * output size is a sub-size of its input's, known once the predicate has
 * been counted).  A filter whose result is only ever asked for its shape
 *
 *   let v = filter p a in ... shape v ...
 *
 * need not be made: its size is the number of elements of a that satisfy
 * p.  It becomes
 *
 *   let m = map (\x -> if p x then 1 else 0) a in
 *   let c = fold (+) 0 (reshape (ix (shapesize (shape m))) m) in
 *   let v = generate (ix (c ! ())) (\_ -> 0) in ... shape v ...
 *
 * which fusion makes one reduction (the map and a's producers fused into
 * the fold), and the generate, read for its shape alone, is never made.
 * The predicate is evaluated on every element, as the filter's count
 * evaluates it, so the faults are the filter's.  A use of v other than
 * `shape v` (an element read, v as an operand) keeps the filter.
 *
 * A filter of a filter is one filter (seed 003's vertical fusion, a
 * conditional collect consuming another):
 *
 *   filter q (filter p a)   becomes   filter (\x -> p x && q x) a
 *
 * The && is lazy, so q sees exactly the elements it saw before (those p
 * kept), in the same order, and faults where it faulted; the inner
 * filter's output, which only the outer one read, is never made.  (Only
 * the nested form: a filter bound to a let may be read elsewhere.)
 *
 * Runs before fusion; off with fusion or the planner (AXLE_DEBUG).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opt.h"
#include "rewrite.h"
#include <stdlib.h>

typedef struct FC {
    Rewrite rw;
    int *uses;        /* per array variable: uses other than `shape v` */
    int cap;
    int changed;
} FC;

static void count_uses(FC *f, const Node *x, int depth)
{
    while (x && depth < OPT_MAX_DEPTH) {
        if (x->op == OP_SHAPE && x->kid[0] && x->kid[0]->op == OP_AVAR) return;   /* the extent alone */
        if (x->op == OP_AVAR) {
            if (x->id >= 0 && x->id < f->cap) f->uses[x->id]++;
            return;
        }
        if (x->n == 0) return;
        for (int i = 0; i < x->n - 1; i++) count_uses(f, x->kid[i], depth + 1);
        x = x->kid[x->n - 1];
    }
}

/* The let l (of the filter) preceded by its count, as above; l's bound
 * becomes the generate.  NULL when out of memory. */
static Node *counted(FC *f, Node *l, Node **input)
{
    Rewrite *rw = &f->rw;
    Node *flt = l->kid[0], *p = flt->kid[0], *a = flt->kid[1];
    const Type *elt = a->type->elt, *i64 = ty_i64();
    int r = a->type->rank;
    const Type *mt = rw_tarray(rw, i64, r), *vt = rw_tarray(rw, i64, 1), *ct = rw_tarray(rw, i64, 0);
    if (!mt || !vt || !ct) return NULL;
    /* m = map (\x -> if p x then 1 else 0) a */
    int x = rw_fresh(rw, elt), m = rw_fresh(rw, mt), c = rw_fresh(rw, ct);
    if (x < 0 || m < 0 || c < 0) return NULL;
    Node *one = rw_lam1(rw, x, rw_cond(rw, rw_apply1(rw, p, rw_var(rw, x)), rw_i64(rw, 1), rw_i64(rw, 0)));
    Node *map = rw_op2(rw, OP_MAP, mt, one, a);
    /* c = fold (+) 0 (the map's elements as a vector) */
    Node *flat = rw_var(rw, m);
    if (r != 1) {
        Node *n = rw_prim(rw, P_SHAPESIZE, i64, rw_shape(rw, rw_var(rw, m)), NULL);
        flat = rw_op2(rw, OP_RESHAPE, vt, rw_ixcons(rw, 1, &n), rw_var(rw, m));
    }
    int ab[2];
    const Type *two[2] = {i64, i64};
    if (!rw_params(rw, 2, two, ab)) return NULL;
    Node *add = rw_lam(rw, 2, ab, rw_prim(rw, P_ADD, i64, rw_var(rw, ab[0]), rw_var(rw, ab[1])));
    Node *fold = rw_op3(rw, OP_FOLD, ct, add, rw_i64(rw, 0), flat);
    /* v = generate (ix (c ! ())) (\_ -> 0) */
    Node *count = rw_index(rw, rw_var(rw, c), rw_ixcons(rw, 0, NULL));
    int ix = rw_fresh(rw, rw_tindex(rw, 1));
    if (ix < 0) return NULL;
    Node *gen = rw_op2(rw, OP_GENERATE, flt->type, rw_ixcons(rw, 1, &count), rw_lam1(rw, ix, rw_zero(rw, elt)));
    if (!map || !fold || !gen || rw->failed) return NULL;
    l->kid[0] = gen;
    *input = map;
    return rw_let(rw, m, map, rw_let(rw, c, fold, l));
}

/* filter q (filter p a) as filter (\x -> p x && q x) a, in place. */
static bool merged(FC *f, Node *x)
{
    Rewrite *rw = &f->rw;
    Node *in = x->kid[1], *p = in->kid[0], *q = x->kid[0];
    int v = rw_fresh(rw, in->kid[1]->type->elt);
    if (v < 0) return false;
    Node *both = rw_prim(rw, P_AND, q->kid[0]->type, rw_apply1(rw, p, rw_var(rw, v)), rw_apply1(rw, q, rw_var(rw, v)));
    Node *lam = rw_lam1(rw, v, both);
    if (!lam || rw->failed) return false;
    x->kid[0] = lam;
    x->kid[1] = in->kid[1];
    return true;
}

/* filter q (let v = t in ... filter p a) as let v = t in ... filter q
 * (filter p a), the lets (sharing recovery's, of what p reads) floated
 * out: q was built outside their scope, so it reads none of them. */
static bool floated(Node **slot)
{
    Node *x = *slot, **end = &x->kid[1];
    int n = 0;
    while ((*end)->op == OP_ALET && (*end)->n == 2 && n++ < OPT_MAX_DEPTH) end = &(*end)->kid[1];
    if ((*end)->op != OP_FILTER) return false;
    Node *first = x->kid[1];
    x->kid[1] = *end;
    *end = x;
    for (Node *l = first; l != x; l = l->kid[1]) l->type = x->type;
    *slot = first;
    return true;
}

static void visit(FC *f, Node **slot, int depth)
{
    while (*slot && depth < OPT_MAX_DEPTH && !f->rw.failed) {
        Node *x = *slot;
        if (x->op == OP_FILTER && x->kid[1]->op == OP_ALET && floated(slot)) continue;
        while (x->op == OP_FILTER && x->kid[1]->op == OP_FILTER) {
            if (!merged(f, x)) {
                rw_fail(&f->rw);
                return;
            }
            f->changed++;
        }
        if (x->op == OP_ALET && x->kid[0]->op == OP_FILTER && x->id >= 0 && x->id < f->cap && f->uses[x->id] == 0) {
            Node *map = NULL, *r = counted(f, x, &map);
            if (!r) {
                rw_fail(&f->rw);
                return;
            }
            *slot = r;
            f->changed++;
            visit(f, &map->kid[1], depth + 1);   /* the filter's input, now the map's */
            slot = &x->kid[1];
            continue;
        }
        if (x->n == 0) return;
        for (int i = 0; i < x->n - 1; i++) visit(f, &x->kid[i], depth + 1);
        slot = &x->kid[x->n - 1];
    }
}

int opt_filter_counts(ax_ctx *cx, Program *p)
{
    if (!p || !p->root) return 0;
    FC f = {0};
    f.cap = p->nvars + 1;
    if (rw_open(&f.rw, cx, p) && (f.uses = ax__calloc((size_t)f.cap, sizeof *f.uses))) {
        count_uses(&f, p->root, 0);
        visit(&f, &p->root, 0);
    } else {
        rw_fail(&f.rw);
    }
    bool failed = f.rw.failed;
    rw_close(&f.rw);
    free(f.uses);
    if (failed) {
        ctx_error(cx, AX_ERR_NOMEM, "filter counts: out of memory");
        return -1;
    }
    return f.changed;
}
