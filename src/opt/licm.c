/*
 * Loop-invariant code motion of array terms out of awhile bodies (seed
 * 003 s."Loop Fusion and Deforestation": code motion of whole
 * array operations, as Delite's IR does for any pure node).
 *
 * A let in an awhile body whose term reads none of the loop's variables
 * (the body's parameters, and the lets of the body that are not hoisted
 * themselves) is the same array on every iteration: it is computed once,
 * before the loop.  Array CSE (acse.c) already merges a body term equal to
 * one bound before the loop; this pass moves those that have no twin.
 *
 * Speculation.  A body runs only when the condition holds for the initial
 * value, so a hoisted term computed unconditionally before the loop could
 * fault (an index out of bounds, a division by zero), run long or take
 * memory where the program, whose loop runs zero times, would not.  Our
 * choice: guard with the condition.  The initial value is let-bound, the
 * condition evaluated on it once more before the loop (one evaluation of
 * the condition's function: a kernel, usually a unit of a comparison),
 * and each hoisted term becomes `acond c t empty`, where `empty` is a
 * generate of zero extent (rank 0: one element, a constant), never read
 * when the loop does not run.  So a program faults, loops and allocates
 * exactly when it did, less the repeated work.
 *
 * Nested terms.  The pass runs twice: before fusion and after it.  Before
 * fusion, a body's terms are still nested (a map of an invariant array
 * inside a zipWith with the loop's state); fusion would inline such a
 * producer into the body's kernel, where it is computed again on every
 * iteration and no longer a let this pass can move.  So the first run also
 * takes the largest invariant subterms of the body's terms that compute
 * something (a map, zipWith or generate whose function does work, a
 * reduction, a scan, a permute, ...), binds each to a let and moves it.
 * It does not take a term that only moves data (a backpermute, a slice, a
 * replicate), which costs as much to read again as to store, nor one whose
 * extent may be larger than what it is computed from (a map of a
 * replicate: storing it would cost memory the program never asked for),
 * nor anything under an acond's branch or an inner loop's function, which
 * may not run at all.  A use in the body is the same array every
 * iteration: it moves too, unguarded (it cannot fault), in both runs, so
 * that what is built on it can move.
 *
 * AX_DEBUG_NO_LICM turns the pass off.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rewrite.h"
#include <stdlib.h>
#include <string.h>

typedef struct LicmState {
    Rewrite rw;       /* the program's, and the guard's copy of the condition */
    bool *variant;    /* per array variable id: changes between iterations */
    int cap;
    int hoisted;
    bool nested;      /* before fusion: invariant subterms move too */
} LicmState;

/* (rw.grow) The variant table covers every variable. */
static bool grow(Rewrite *rw, int nvars)
{
    LicmState *s = rw->pass;
    if (nvars + 1 <= s->cap) return true;
    int cap = nvars * 2 + 16;
    bool *v = ax__realloc(s->variant, sizeof *v * (size_t)cap);
    if (!v) return false;
    for (int i = s->cap; i < cap; i++) v[i] = false;
    s->variant = v;
    s->cap = cap;
    return true;
}

static bool reads_variant(const LicmState *s, const Node *x, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return true;
    if (x->op == OP_AVAR && x->id < s->cap && s->variant[x->id]) return true;
    for (int i = 0; i < x->n; i++)
        if (reads_variant(s, x->kid[i], depth + 1)) return true;
    return false;
}

/* Does scalar term x compute anything (an operation, a read of an array,
 * a loop), beyond naming a variable or a constant? */
static bool does_work(const Node *x, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return true;
    if (x->op == OP_PRIM || x->op == OP_INDEX || x->op == OP_LINDEX || x->op == OP_WHILE) return true;
    for (int i = 0; i < x->n; i++)
        if (x->kid[i] && !op_is_array(x->kid[i]->op) && does_work(x->kid[i], depth + 1)) return true;
    return false;
}

/* May array term t (an operand inside a delayed term) have more elements
 * than the arrays it is computed from?  A replicate, a backpermute or a
 * generate may; a zipWith has its smallest operand's extent; a reduction
 * or a slice is smaller than its input. */
static bool expands(const Node *t, int depth)
{
    if (depth > OPT_MAX_DEPTH) return true;
    switch (t->op) {
    case OP_AVAR: case OP_USE: case OP_UNIT: case OP_SLICE:
    case OP_FOLD: case OP_FOLD1: case OP_FOLDSEG: case OP_FOLD1SEG: case OP_FILTER: case OP_SORT:
        return false;
    case OP_MAP: case OP_RESHAPE:
        return expands(t->kid[1], depth + 1);
    case OP_ZIPWITH:
        for (int i = 1; i < t->n; i++)
            if (!expands(t->kid[i], depth + 1)) return false;
        return true;
    default:
        return true;
    }
}

/* Is t, invariant, worth an array of its own before the loop?  (The
 * header: it computes, and it is no larger than its sources.) */
static bool worth(const Node *t)
{
    switch (t->op) {
    case OP_ACOND:   /* (one this pass made, moving a term out of an inner loop) */
        return worth(t->kid[1]) || worth(t->kid[2]);
    case OP_AVAR: case OP_USE: case OP_ALET: case OP_AWHILE: case OP_ATUPLE: case OP_APROJ:
    case OP_REPLICATE: case OP_SLICE: case OP_RESHAPE: case OP_BACKPERMUTE: case OP_TRANSFORM: case OP_DELAYED:
        return false;
    case OP_MAP:
        return does_work(t->kid[0]->kid[0], 0) && !expands(t->kid[1], 0);
    case OP_ZIPWITH:
        if (!does_work(t->kid[0]->kid[0], 0)) return false;
        for (int i = 1; i < t->n; i++)
            if (!expands(t->kid[i], 0)) return true;
        return false;
    case OP_GENERATE:
        return does_work(t->kid[1]->kid[0], 0);
    case OP_UNIT:
        return does_work(t->kid[0], 0);
    default:
        return true;   /* a reduction, scan, permute, stencil, filter: made as an array anyway */
    }
}

/* Before fusion: the chain of lets to move, *first..*last. */
typedef struct Moved {
    Node *first, *last;
} Moved;

/* A let, a loop or an acond: a scope of its own, or branches that may not
 * run; never looked into, never bound apart from the term around it. */
static bool closed(const Node *t) { return t->op == OP_ALET || t->op == OP_AWHILE || t->op == OP_ACOND; }

/* *slot, invariant: the largest subterms worth moving (worth) bound to
 * lets appended to m, their variables left in their place. */
static void place(LicmState *s, Node **slot, Moved *m, int depth)
{
    Rewrite *rw = &s->rw;
    Node *t = *slot;
    if (rw->failed || depth > OPT_MAX_DEPTH || closed(t)) return;
    if (t->type->kind == TY_ARRAY && worth(t)) {
        int id = rw_fresh(rw, t->type);
        Node *let = rw_node(rw, OP_ALET, 2, t->type), *v = id < 0 ? NULL : rw_var(rw, id);
        if (!let || !v) return;
        let->id = id;
        let->kid[0] = t;
        let->kid[1] = NULL;
        if (m->last) m->last->kid[1] = let;
        else m->first = let;
        m->last = let;
        *slot = v;
        return;
    }
    Node **k;
    for (int i = 0; (k = opt_array_slot(t, &i));) place(s, k, m, depth + 1);
}

/* Before fusion: does array term *slot read none of the loop's variables?
 * Below a term that does, its invariant operands are placed (above).  Each
 * node is looked at once: a body's terms can be long chains. */
static bool scan(LicmState *s, Node **slot, Moved *m, int depth)
{
    Node *t = *slot;
    if (s->rw.failed || depth > OPT_MAX_DEPTH) return false;
    if (closed(t) || t->op == OP_AVAR) return !reads_variant(s, t, 0);
    enum { FEW = 8 };
    bool few[FEW], *inv = t->n <= FEW ? few : ax__malloc(sizeof *inv * (size_t)t->n);
    if (!inv) return rw_fail(&s->rw), false;
    bool all = true;
    for (int i = 0; i < t->n; i++) {
        Node *k = t->kid[i];
        inv[i] = true;
        if (!k) continue;
        if (k->op != OP_LAM && op_is_array(k->op)) inv[i] = scan(s, &t->kid[i], m, depth + 1);
        else inv[i] = !reads_variant(s, k, 0);   /* scalar: functions, extents */
        all = all && inv[i];
    }
    for (int i = 0; !all && i < t->n; i++)
        if (inv[i] && t->kid[i] && t->kid[i]->op != OP_LAM && op_is_array(t->kid[i]->op)) place(s, &t->kid[i], m, depth + 1);
    if (inv != few) free(inv);
    return all;
}

/* Before fusion: the largest invariant subterms of *slot worth moving. */
static void extract(LicmState *s, Node **slot, Moved *m)
{
    if (scan(s, slot, m, 0)) place(s, slot, m, 0);
}

/* aproj j (a1, ..., an) as aj, in x (the condition's copy reading the
 * initial tuple's lets: below). */
static void proj_tuples(Node *x, int depth)
{
    if (depth > OPT_MAX_DEPTH) return;
    for (int i = 0; i < x->n; i++) {
        Node *k = x->kid[i];
        if (!k) continue;
        while (k->op == OP_APROJ && k->kid[0]->op == OP_ATUPLE && k->a >= 0 && k->a < k->kid[0]->n)
            k = x->kid[i] = k->kid[0]->kid[k->a];
        proj_tuples(k, depth + 1);
    }
}

/* An array of type at that nobody reads: extent 0 (rank 0: one element). */
static Node *empty(LicmState *s, const Type *at)
{
    Rewrite *rw = &s->rw;
    const Type *it = rw_tindex(rw, at->rank);
    Node *sh = rw_node(rw, OP_IXCONS, at->rank, it);
    for (int i = 0; sh && i < at->rank; i++)
        if (!(sh->kid[i] = rw_i64(rw, 0))) return NULL;
    int pid = rw_fresh(rw, it);
    return rw_op2(rw, OP_GENERATE, at, sh, rw_lam1(rw, pid, rw_zero(rw, at->elt)));
}

/* Moves the invariant lets of awhile x's body out; returns the chain of
 * lets to put before x (*tail its last let, whose body the caller sets),
 * or NULL when none moved. */
static Node *hoist(LicmState *s, Node *x, Node **tail)
{
    Rewrite *rw = &s->rw;
    Node *cond = x->kid[0], *body = x->kid[1];
    if (!grow(rw, rw->p->nvars) || body->op != OP_LAM || cond->op != OP_LAM) return NULL;
    for (int i = 0; i < body->nparam; i++) s->variant[body->param[i]->id] = true;
    Moved m = {NULL, NULL};
    Node **l;
    for (l = &body->kid[0]; (*l)->op == OP_ALET && (*l)->n == 2;) {
        Node *let = *l, *t = let->kid[0];
        /* before fusion only what is worth an array of its own: fusion
         * would inline the rest into the body's kernels at no cost */
        bool move = t->op != OP_AVAR && t->type->kind == TY_ARRAY &&
                    (!s->nested || t->op == OP_USE || worth(t)) && !reads_variant(s, t, 0);
        if (!move) {
            if (s->nested) extract(s, &let->kid[0], &m);
            s->variant[let->id] = true;
            l = &let->kid[1];
            continue;
        }
        *l = let->kid[1];   /* out of the body, in order */
        if (m.last) m.last->kid[1] = let;
        else m.first = let;
        m.last = let;
        let->kid[1] = NULL;
    }
    if (s->nested) extract(s, l, &m);   /* the body's result */
    if (!m.first || rw->failed) return NULL;
    /* the guard: let i0 = init in let c = cond i0 in let h = acond c t
     * empty ...  A tuple of initial values (an ax_for's counter and
     * state) is bound a component a let, and the condition's projections
     * of it read those lets, so that c reads only the components the
     * condition reads: when they do not change in an enclosing loop, nor
     * does c, and the moved terms can move on out of that loop too. */
    Node *init = x->kid[2];
    const Type *st = init->type;
    bool split = init->op == OP_ATUPLE && (cond->nparam == 1 || cond->nparam == init->n);
    int nl = split ? init->n : 1, cv = rw_fresh(rw, cond->type);
    Node *li = NULL, **at = &li, *lc = rw_node(rw, OP_ALET, 2, x->type);
    Node *tup = split ? rw_node(rw, OP_ATUPLE, nl, st) : NULL, *arg = split ? rw_node(rw, OP_ATUPLE, nl, st) : NULL;
    if (!lc || cv < 0 || (split && (!tup || !arg))) return NULL;
    for (int j = 0; j < nl; j++) {
        Node *b = split ? init->kid[j] : init;
        int id = rw_fresh(rw, b->type);
        Node *let = rw_node(rw, OP_ALET, 2, x->type);
        if (!let || id < 0) return NULL;
        let->id = id, let->kid[0] = b;
        *at = let;
        at = &let->kid[1];
        if (split && (!(tup->kid[j] = rw_var(rw, id)) || !(arg->kid[j] = rw_var(rw, id)))) return NULL;
        if (!split && !(x->kid[2] = rw_var(rw, id))) return NULL;
    }
    if (split) x->kid[2] = tup;
    *at = lc;
    int mark = rw_mark(rw);
    for (int i = 0; i < cond->nparam; i++) {
        Node *a = split ? (cond->nparam == 1 ? arg : arg->kid[i]) : rw_var(rw, li->id);
        rw_sub(rw, cond->param[i]->id, !split && cond->nparam > 1 ? rw_proj(rw, i, a) : a);
    }
    lc->id = cv;
    lc->kid[0] = rw_copy(rw, cond->kid[0]);
    rw_restore(rw, mark);
    if (split && lc->kid[0]) proj_tuples(lc->kid[0], 0);
    lc->kid[1] = m.first;
    for (Node *h = m.first; h && !rw->failed; h = h->kid[1]) {
        s->hoisted++;
        if (h->kid[0]->op == OP_USE) continue;   /* nothing to guard */
        Node *rd = rw_lindex(rw, rw_var(rw, cv), rw_i64(rw, 0));
        Node *ac = rw_op3(rw, OP_ACOND, h->kid[0]->type, rd, h->kid[0], empty(s, h->kid[0]->type));
        if (!ac) return NULL;
        h->kid[0] = ac;
    }
    *tail = m.last;
    return rw->failed ? NULL : li;
}

static void chain(LicmState *s, Node **slot, int depth);

static void kids(LicmState *s, Node *x, int depth)
{
    Node **slot;
    for (int i = 0; !s->rw.failed && (slot = opt_array_slot(x, &i));) chain(s, slot, depth + 1);
}

/* The chain of lets at *slot (maybe none: then *slot is its body). */
static void chain(LicmState *s, Node **slot, int depth)
{
    if (s->rw.failed || depth > OPT_MAX_DEPTH) return;
    Node **l = slot;
    for (;;) {
        bool let = (*l)->op == OP_ALET && (*l)->n == 2;
        Node *t = let ? (*l)->kid[0] : *l;
        if (!let && (*l)->op == OP_ALET) return;
        kids(s, t, depth + 1);   /* inner loops first: their invariants may move on out */
        if (t->op == OP_AWHILE) {
            Node *tail = NULL, *h = hoist(s, t, &tail);
            if (h && tail) {
                Node *at = *l;
                tail->kid[1] = at;     /* ... in the let of the loop (or the loop itself) */
                for (Node *q = h; q != at; q = q->kid[1]) q->type = at->type;
                *l = h;
                while (*l != at) l = &(*l)->kid[1];
            }
        }
        if (!let) return;
        l = &(*l)->kid[1];
    }
}

int opt_licm(ax_ctx *cx, Program *p, bool nested)
{
    LicmState s;
    memset(&s, 0, sizeof s);
    s.nested = nested;
    if (p && p->root && rw_open(&s.rw, cx, p)) {
        s.rw.pass = &s;
        s.rw.grow = grow;
        if (grow(&s.rw, p->nvars)) chain(&s, &p->root, 0);
        else rw_fail(&s.rw);
    }
    rw_close(&s.rw);
    free(s.variant);
    if (s.rw.failed) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory (loop-invariant code motion)");
        return -1;
    }
    return s.hoisted;
}
