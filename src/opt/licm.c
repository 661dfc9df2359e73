/*
 * Loop-invariant code motion of array terms out of awhile bodies (issue
 * 11; seed 003 s."Loop Fusion and Deforestation": code motion of whole
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
#include "opt.h"
#include <string.h>

typedef struct L {
    ax_ctx *cx;
    Program *p;
    Node **sub;       /* per variable id: its replacement while copying */
    bool *variant;    /* per array variable id: changes between iterations */
    int cap;
    bool failed;
    int hoisted;
} L;

static void *oom(L *s)
{
    s->failed = true;
    return NULL;
}

static bool grow(L *s)
{
    int need = s->p->nvars + 1;
    if (need <= s->cap) return true;
    int cap = need * 2 + 16;
    Node **n = ax__realloc(s->sub, sizeof *n * (size_t)cap);
    if (n) s->sub = n;
    bool *v = n ? ax__realloc(s->variant, sizeof *v * (size_t)cap) : NULL;
    if (v) s->variant = v;
    if (!n || !v) return oom(s), false;
    for (int i = s->cap; i < cap; i++) s->sub[i] = NULL, s->variant[i] = false;
    s->cap = cap;
    return true;
}

static Node *mk(L *s, Op op, int n, const Type *t)
{
    if (s->failed) return NULL;
    Node *x = node_new(&s->p->arena, op, n, t);
    if (!x) return oom(s);
    x->cx = s->cx;
    return x;
}

static int fresh(L *s, const Type *t)
{
    int id = s->failed ? -1 : program_fresh_var(s->p, t);
    if (id < 0 || !grow(s)) return oom(s), -1;
    return id;
}

static Node *var(L *s, int id)
{
    if (id < 0) return NULL;
    const Type *t = s->p->vartype[id];
    Node *x = mk(s, t->kind == TY_ARRAY || t->kind == TY_ARRAYS ? OP_AVAR : OP_VAR, 0, t);
    if (x) x->id = id;
    return x;
}

/* A deep copy with s->sub in force and fresh binders (each id is bound
 * once in the core IR). */
static Node *cp(L *s, const Node *x, int depth)
{
    if (s->failed) return NULL;
    if (!x || depth > OPT_MAX_DEPTH) return oom(s);
    if ((x->op == OP_VAR || x->op == OP_AVAR) && x->id < s->cap && s->sub[x->id]) return cp(s, s->sub[x->id], depth + 1);
    Node *y = node_clone(&s->p->arena, x);
    if (!y) return oom(s);
    y->cx = s->cx;
    if (x->op == OP_LET || x->op == OP_ALET) {
        if (!(y->kid[0] = cp(s, x->kid[0], depth + 1))) return NULL;
        int id = fresh(s, s->p->vartype[x->id]);
        Node *v = var(s, id);
        if (!v) return NULL;
        y->id = id;
        Node *was = s->sub[x->id];
        s->sub[x->id] = v;
        y->kid[1] = cp(s, x->kid[1], depth + 1);
        s->sub[x->id] = was;
        return y->kid[1] ? y : NULL;
    }
    Node **saved = NULL;
    if (x->op == OP_LAM && x->nparam > 0) {
        if (!(y->param = arena_alloc(&s->p->arena, sizeof *y->param * (size_t)x->nparam)) ||
            !(saved = arena_alloc(&s->p->arena, sizeof *saved * (size_t)x->nparam)))
            return oom(s);
        for (int i = 0; i < x->nparam; i++) {
            int id = fresh(s, x->param[i]->type);
            Node *q = var(s, id), *r = var(s, id);
            if (!q || !r) return NULL;
            y->param[i] = q;
            saved[i] = s->sub[x->param[i]->id];
            s->sub[x->param[i]->id] = r;
        }
    }
    for (int i = 0; i < x->n && !s->failed; i++) y->kid[i] = cp(s, x->kid[i], depth + 1);
    if (saved)
        for (int i = 0; i < x->nparam; i++) s->sub[x->param[i]->id] = saved[i];
    return s->failed ? NULL : y;
}

static bool reads_variant(const L *s, const Node *x, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return true;
    if (x->op == OP_AVAR && x->id < s->cap && s->variant[x->id]) return true;
    for (int i = 0; i < x->n; i++)
        if (reads_variant(s, x->kid[i], depth + 1)) return true;
    return false;
}

/* A constant of element type t (zeros), or NULL. */
static Node *zero(L *s, const Type *t)
{
    if (t->kind == TY_SCALAR) {
        Node *c = mk(s, OP_CONST, 0, t);
        if (c) memset(&c->c, 0, sizeof c->c);
        return c;
    }
    if (t->kind != TY_TUPLE && t->kind != TY_INDEX) return NULL;
    int n = t->n;
    Node *x = mk(s, t->kind == TY_TUPLE ? OP_TUPLE : OP_IXCONS, n, t);
    for (int i = 0; x && i < n; i++)
        if (!(x->kid[i] = zero(s, t->kind == TY_TUPLE ? t->elts[i] : ty_i64()))) return NULL;
    return x;
}

/* An array of type at that nobody reads: extent 0 (rank 0: one element). */
static Node *empty(L *s, const Type *at)
{
    const Type *it = ty_index(&s->p->arena, at->rank);
    Node *sh = it ? mk(s, OP_IXCONS, at->rank, it) : NULL;
    for (int i = 0; sh && i < at->rank; i++) {
        Scalar z;
        memset(&z, 0, sizeof z);
        Node *c = mk(s, OP_CONST, 0, ty_i64());
        if (!c) return NULL;
        c->c = z;
        sh->kid[i] = c;
    }
    int pid = fresh(s, it);
    Node *l = mk(s, OP_LAM, 1, at->elt), *q = var(s, pid), *b = zero(s, at->elt);
    Node **ps = l ? arena_alloc(&s->p->arena, sizeof *ps) : NULL;
    Node *g = mk(s, OP_GENERATE, 2, at);
    if (!sh || !l || !q || !b || !ps || !g) return oom(s);
    ps[0] = q;
    l->param = ps, l->nparam = 1, l->kid[0] = b;
    g->kid[0] = sh, g->kid[1] = l;
    return g;
}

/* Moves the invariant lets of awhile x's body out; returns the chain of
 * lets to put before x (*tail its last let, whose body the caller sets),
 * or NULL when none moved. */
static Node *hoist(L *s, Node *x, Node **tail)
{
    Node *cond = x->kid[0], *body = x->kid[1];
    if (!grow(s) || body->op != OP_LAM || cond->op != OP_LAM) return NULL;
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
    int i0 = fresh(s, st), cv = fresh(s, cond->type);
    Node *li = mk(s, OP_ALET, 2, x->type), *lc = mk(s, OP_ALET, 2, x->type);
    if (!li || !lc || cv < 0) return NULL;
    li->id = i0, li->kid[0] = x->kid[2], li->kid[1] = lc;
    if (!(x->kid[2] = var(s, i0))) return NULL;
    for (int i = 0; i < cond->nparam; i++) {
        Node *a = var(s, i0);
        if (a && cond->nparam > 1) {
            Node *pj = mk(s, OP_APROJ, 1, st->elts[i]);
            if (!pj) return NULL;
            pj->a = i, pj->kid[0] = a, a = pj;
        }
        s->sub[cond->param[i]->id] = a;
    }
    lc->id = cv;
    lc->kid[0] = cp(s, cond->kid[0], 0);
    for (int i = 0; i < cond->nparam; i++) s->sub[cond->param[i]->id] = NULL;
    lc->kid[1] = first;
    for (Node *h = first; h && !s->failed; h = h->kid[1]) {
        Scalar z;
        memset(&z, 0, sizeof z);
        Node *c0 = mk(s, OP_CONST, 0, ty_i64()), *rd = mk(s, OP_LINDEX, 2, ty_bool());
        Node *ac = mk(s, OP_ACOND, 3, h->kid[0]->type), *e = empty(s, h->kid[0]->type);
        if (!c0 || !rd || !ac || !e) return NULL;
        c0->c = z;
        rd->kid[0] = var(s, cv), rd->kid[1] = c0;
        ac->kid[0] = rd, ac->kid[1] = h->kid[0], ac->kid[2] = e;
        h->kid[0] = ac;
        s->hoisted++;
    }
    *tail = last;
    return s->failed ? NULL : li;
}

static void chain(L *s, Node **slot, int depth);

static void kids(L *s, Node *x, int depth)
{
    for (int i = 0; i < x->n && !s->failed; i++) {
        Node *k = x->kid[i];
        if (!k) continue;
        if (k->op == OP_LAM) {
            if (k->n > 0 && k->kid[0] && op_is_array(k->kid[0]->op)) chain(s, &k->kid[0], depth + 1);
        } else if (op_is_array(k->op) && k->op != OP_DELAYED) {
            chain(s, &x->kid[i], depth + 1);
        }
    }
}

/* The chain of lets at *slot (maybe none: then *slot is its body). */
static void chain(L *s, Node **slot, int depth)
{
    if (s->failed || depth > OPT_MAX_DEPTH) return;
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
    L s;
    memset(&s, 0, sizeof s);
    s.cx = cx;
    s.p = p;
    if (p && p->root && grow(&s)) chain(&s, &p->root, 0);
    free(s.sub);
    free(s.variant);
    if (s.failed) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory (loop-invariant code motion)");
        return -1;
    }
    return s.hoisted;
}
