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
    Node *first = NULL, *last = NULL;
    for (Node **l = &body->kid[0]; (*l)->op == OP_ALET && (*l)->n == 2;) {
        Node *let = *l, *t = let->kid[0];
        bool move = t->op != OP_AVAR && t->op != OP_USE && t->type->kind == TY_ARRAY && !reads_variant(s, t, 0);
        if (!move) {
            s->variant[let->id] = true;
            l = &let->kid[1];
            continue;
        }
        *l = let->kid[1];   /* out of the body, in order */
        if (last) last->kid[1] = let;
        else first = let;
        last = let;
        let->kid[1] = NULL;
    }
    if (!first) return NULL;
    /* the guard: let i0 = init in let c = cond i0 in let h = acond c t empty ... */
    const Type *st = x->kid[2]->type;
    int i0 = rw_fresh(rw, st), cv = rw_fresh(rw, cond->type);
    Node *li = rw_node(rw, OP_ALET, 2, x->type), *lc = rw_node(rw, OP_ALET, 2, x->type);
    if (!li || !lc || cv < 0) return NULL;
    li->id = i0, li->kid[0] = x->kid[2], li->kid[1] = lc;
    if (!(x->kid[2] = rw_var(rw, i0))) return NULL;
    int mark = rw_mark(rw);
    for (int i = 0; i < cond->nparam; i++) {
        Node *a = rw_var(rw, i0);
        rw_sub(rw, cond->param[i]->id, cond->nparam > 1 ? rw_proj(rw, i, a) : a);
    }
    lc->id = cv;
    lc->kid[0] = rw_copy(rw, cond->kid[0]);
    rw_restore(rw, mark);
    lc->kid[1] = first;
    for (Node *h = first; h && !rw->failed; h = h->kid[1]) {
        Node *rd = rw_lindex(rw, rw_var(rw, cv), rw_i64(rw, 0));
        Node *ac = rw_op3(rw, OP_ACOND, h->kid[0]->type, rd, h->kid[0], empty(s, h->kid[0]->type));
        if (!ac) return NULL;
        h->kid[0] = ac;
        s->hoisted++;
    }
    *tail = last;
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

int opt_licm(ax_ctx *cx, Program *p)
{
    LicmState s;
    memset(&s, 0, sizeof s);
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
