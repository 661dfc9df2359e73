/*
 * The rewrite kit (rewrite.h): the substitution, the copy with fresh
 * names, the makers of well-typed nodes, and equality up to renaming.
 * This file owns every rule of the kit; the passes own only what they
 * add through rw->rule.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rewrite.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct RwSave {
    int id;
    Node *old;
};

/* ------------------------------------------------------------ opening, failing */

static bool cover(Rewrite *rw, int need)
{
    if (need <= rw->capsub) return true;
    int cap = rw->capsub ? rw->capsub : 64;
    while (cap < need) cap *= 2;
    Node **s = ax__realloc(rw->sub, sizeof *s * (size_t)cap);
    if (!s) return false;
    for (int i = rw->capsub; i < cap; i++) s[i] = NULL;
    rw->sub = s;
    rw->capsub = cap;
    return true;
}

bool rw_open(Rewrite *rw, ax_ctx *cx, Program *p)
{
    memset(rw, 0, sizeof *rw);
    rw->cx = cx;
    rw->p = p;
    if (!cover(rw, p->nvars + 1)) return rw_fail(rw), false;
    return true;
}

void rw_close(Rewrite *rw)
{
    free(rw->sub);
    free(rw->save);
    rw->sub = NULL;
    rw->save = NULL;
    rw->capsub = rw->nsave = rw->capsave = 0;
}

void *rw_fail(Rewrite *rw)
{
    rw->failed = true;
    return NULL;
}

void *rw_internal(Rewrite *rw, const char *what)
{
    if (!rw->failed) rw->internal = what;
    return rw_fail(rw);
}

/* ------------------------------------------------------------ variables and substitution */

int rw_fresh(Rewrite *rw, const Type *t)
{
    if (rw->failed) return -1;
    int id = program_fresh_var(rw->p, t);
    if (id < 0 || !cover(rw, id + 1) || (rw->grow && !rw->grow(rw, rw->p->nvars))) return rw_fail(rw), -1;
    return id;
}

bool rw_params(Rewrite *rw, int n, const Type *const *t, int *ids)
{
    for (int i = 0; i < n; i++)
        if ((ids[i] = rw_fresh(rw, t[i])) < 0) return false;
    return !rw->failed;
}

static bool is_arrays(const Type *t) { return t && (t->kind == TY_ARRAY || t->kind == TY_ARRAYS); }

Node *rw_var(Rewrite *rw, int id)
{
    if (rw->failed) return NULL;
    if (id < 0 || id >= rw->p->nvars) return rw_internal(rw, "a variable the program does not have");
    const Type *t = rw->p->vartype[id];
    Node *x = rw_node(rw, is_arrays(t) ? OP_AVAR : OP_VAR, 0, t);
    if (x) x->id = id;
    return x;
}

int rw_mark(const Rewrite *rw) { return rw->nsave; }

void rw_sub(Rewrite *rw, int id, Node *rep)
{
    if (rw->failed) return;
    if (id < 0 || !cover(rw, id + 1)) return (void)rw_fail(rw);
    if (rw->nsave == rw->capsave) {
        int cap = rw->capsave ? 2 * rw->capsave : 64;
        RwSave *s = ax__realloc(rw->save, sizeof *s * (size_t)cap);
        if (!s) return (void)rw_fail(rw);
        rw->save = s;
        rw->capsave = cap;
    }
    rw->save[rw->nsave].id = id;
    rw->save[rw->nsave].old = rw->sub[id];
    rw->nsave++;
    rw->sub[id] = rep;
}

void rw_restore(Rewrite *rw, int mark)
{
    while (rw->nsave > mark) {
        rw->nsave--;
        rw->sub[rw->save[rw->nsave].id] = rw->save[rw->nsave].old;
    }
}

/* ------------------------------------------------------------ copying */

static Node *copy_lets(Rewrite *rw, const Node *x, Node ***tail);

/* A copy of a function with fresh parameters. */
static Node *copy_lam(Rewrite *rw, const Node *x)
{
    Node *l = rw_clone(rw, x);
    if (!l) return NULL;
    l->num = 0;
    int mark = rw_mark(rw);
    if (x->nparam > 0) {
        if (!(l->param = arena_alloc(&rw->p->arena, sizeof *l->param * (size_t)x->nparam))) return rw_fail(rw);
        for (int i = 0; i < x->nparam; i++) {
            int id = rw_fresh(rw, x->param[i]->type);
            Node *q = rw_var(rw, id), *r = rw_var(rw, id);
            if (!q || !r) return NULL;
            rw_sub(rw, x->param[i]->id, r);
            l->param[i] = q;
        }
    }
    for (int i = 0; i < x->n && !rw->failed; i++) l->kid[i] = rw_copy(rw, x->kid[i]);
    rw_restore(rw, mark);
    return rw->failed ? NULL : l;
}

/* A copy of a chain of lets (scalar or array), iterated, with fresh
 * binders.  In rw->flat, a scalar let's bound term that is itself a let
 * (or whose copy is one) is flattened into the chain (rewrite.h);
 * composed functions nest that way (fusion.c compose), n maps deep.  So
 * that the copy stays linear in n, the copy of such a bound let hands
 * back where its chain ends (*tail: the slot of its last let's body)
 * instead of being walked again, and only the outermost chain gives its
 * lets their type (tail NULL). */
static Node *copy_lets(Rewrite *rw, const Node *x, Node ***tail)
{
    Op op = x->op;
    int mark = rw_mark(rw);
    Node *head = NULL, **link = &head;
    for (; x->op == op && x->n == 2; x = x->kid[1]) {
        int id = rw->flat ? rw_fresh(rw, x->kid[0]->type) : -1;
        Node *l = rw_node(rw, op, 2, x->type), *b = NULL;
        Node **btail = NULL;
        if (l) {
            if (rw->flat && op == OP_LET && x->kid[0]->op == OP_LET) {
                if (rw->depth >= OPT_MAX_DEPTH) return rw_restore(rw, mark), rw_fail(rw);
                rw->depth++;
                b = copy_lets(rw, x->kid[0], &btail);
                rw->depth--;
            } else {
                b = rw_copy(rw, x->kid[0]);
            }
        }
        if (!rw->flat) id = rw_fresh(rw, x->kid[0]->type);
        Node *r = rw_var(rw, id);
        if (!b || !r) {
            rw_restore(rw, mark);
            return rw_fail(rw);
        }
        rw_sub(rw, x->id, r);
        if (btail && b->op == OP_LET) {
            *link = b;
            link = btail;
            b = *btail;
        }
        for (; rw->flat && b->op == OP_LET; b = b->kid[1]) {
            *link = b;
            link = &b->kid[1];
        }
        l->id = id;
        l->kid[0] = b;
        *link = l;
        link = &l->kid[1];
    }
    *link = rw_copy(rw, x);
    rw_restore(rw, mark);
    if (!*link) return NULL;
    if (tail) {
        *tail = link;
        return head;
    }
    const Node *end = head;
    while (end->op == op) end = end->kid[1];
    for (Node *l = head; l->op == op; l = l->kid[1]) l->type = end->type;
    return head;
}

static Node *copy_node(Rewrite *rw, const Node *x)
{
    if ((x->op == OP_VAR || x->op == OP_AVAR) && x->id >= 0 && x->id < rw->capsub && rw->sub[x->id])
        return rw_copy(rw, rw->sub[x->id]);
    if ((x->op == OP_LET || x->op == OP_ALET) && x->n == 2) return copy_lets(rw, x, NULL);
    if (x->op == OP_LAM) return copy_lam(rw, x);
    Node *y;
    if (rw->rule && rw->rule(rw, x, &y)) return y ? y : rw_fail(rw);
    if (!(y = rw_clone(rw, x))) return NULL;
    y->num = 0;
    for (int i = 0; i < x->n; i++)
        if (!(y->kid[i] = rw_copy(rw, x->kid[i]))) return NULL;
    return y;
}

Node *rw_copy(Rewrite *rw, const Node *x)
{
    if (rw->failed) return NULL;
    if (!x) return rw_internal(rw, "a missing operand");
    if (rw->depth >= OPT_MAX_DEPTH) return rw_fail(rw);
    rw->depth++;
    Node *y = copy_node(rw, x);
    rw->depth--;
    return y;
}

Node *rw_apply(Rewrite *rw, const Node *lam, int n, Node **args)
{
    if (rw->failed) return NULL;
    if (!lam || lam->op != OP_LAM || lam->nparam != n)
        return rw_internal(rw, "a function applied to the wrong arguments");
    int *lid = arena_alloc(&rw->p->arena, sizeof *lid * (size_t)(n > 0 ? n : 1));
    if (!lid) return rw_fail(rw);
    for (int i = 0; i < n; i++)
        if (!args[i]) return rw_fail(rw);
    int mark = rw_mark(rw);
    for (int i = 0; i < n; i++) {
        Node *a = args[i];
        lid[i] = -1;
        if (opt_is_atom(a)) {
            rw_sub(rw, lam->param[i]->id, a);
        } else {
            lid[i] = rw_fresh(rw, a->type);
            rw_sub(rw, lam->param[i]->id, rw_var(rw, lid[i]));
        }
    }
    Node *body = rw_copy(rw, lam->kid[0]);
    rw_restore(rw, mark);
    for (int i = n - 1; i >= 0 && body; i--)
        if (lid[i] >= 0) body = rw->flat ? rw_let_flat(rw, lid[i], args[i], body) : rw_let(rw, lid[i], args[i], body);
    return body;
}

Node *rw_apply1(Rewrite *rw, const Node *lam, Node *arg) { return rw_apply(rw, lam, 1, &arg); }

Node *rw_subst(Rewrite *rw, const Node *lam, int n, Node *const *args)
{
    if (rw->failed) return NULL;
    if (!lam || lam->op != OP_LAM || lam->nparam != n)
        return rw_internal(rw, "a function applied to the wrong arguments");
    for (int i = 0; i < n; i++)
        if (!args[i]) return rw_fail(rw);
    int mark = rw_mark(rw);
    for (int i = 0; i < n; i++) rw_sub(rw, lam->param[i]->id, args[i]);
    Node *body = rw_copy(rw, lam->kid[0]);
    rw_restore(rw, mark);
    return body;
}

/* ------------------------------------------------------------ making terms */

Node *rw_node(Rewrite *rw, Op op, int n, const Type *t)
{
    if (rw->failed) return NULL;
    Node *x = node_new(&rw->p->arena, op, n, t);
    if (!x) return rw_fail(rw);
    x->cx = rw->cx;
    return x;
}

Node *rw_clone(Rewrite *rw, const Node *x)
{
    if (rw->failed) return NULL;
    if (!x) return rw_internal(rw, "a missing operand");
    Node *y = node_clone(&rw->p->arena, x);
    if (!y) return rw_fail(rw);
    y->cx = rw->cx;
    return y;
}

Node *rw_op1(Rewrite *rw, Op op, const Type *t, Node *a)
{
    if (!a) return rw_fail(rw);
    Node *x = rw_node(rw, op, 1, t);
    if (x) x->kid[0] = a;
    return x;
}

Node *rw_op2(Rewrite *rw, Op op, const Type *t, Node *a, Node *b)
{
    if (!a || !b) return rw_fail(rw);
    Node *x = rw_node(rw, op, 2, t);
    if (x) x->kid[0] = a, x->kid[1] = b;
    return x;
}

Node *rw_op3(Rewrite *rw, Op op, const Type *t, Node *a, Node *b, Node *c)
{
    if (!a || !b || !c) return rw_fail(rw);
    Node *x = rw_node(rw, op, 3, t);
    if (x) x->kid[0] = a, x->kid[1] = b, x->kid[2] = c;
    return x;
}

Node *rw_const(Rewrite *rw, ax_scalar s, Scalar v)
{
    Node *x = rw_node(rw, OP_CONST, 0, ty_scalar(s));
    if (x) x->c = sc_norm(v, s);
    return x;
}

Node *rw_i64(Rewrite *rw, int64_t v)
{
    Scalar c;
    memset(&c, 0, sizeof c);
    c.i = v;
    return rw_const(rw, AX_I64, c);
}

Node *rw_bool(Rewrite *rw, bool v)
{
    Scalar c;
    memset(&c, 0, sizeof c);
    c.b = v;
    return rw_const(rw, AX_BOOL, c);
}

Node *rw_zero(Rewrite *rw, const Type *t)
{
    if (rw->failed) return NULL;
    if (t->kind == TY_SCALAR) {
        Scalar z;
        memset(&z, 0, sizeof z);
        return rw_const(rw, t->s, z);
    }
    if (t->kind != TY_TUPLE && t->kind != TY_INDEX) return rw_internal(rw, "zeros of a type that is no element type");
    Node *x = rw_node(rw, t->kind == TY_TUPLE ? OP_TUPLE : OP_IXCONS, t->n, t);
    for (int i = 0; x && i < t->n; i++)
        if (!(x->kid[i] = rw_zero(rw, t->kind == TY_TUPLE ? t->elts[i] : ty_i64()))) return NULL;
    return x;
}

Node *rw_prim(Rewrite *rw, Prim p, const Type *t, Node *a, Node *b)
{
    if (!a || (prim_info[p].arity > 1 && !b)) return rw_fail(rw);
    Node *x = rw_node(rw, OP_PRIM, b ? 2 : 1, t);
    if (!x) return NULL;
    x->a = p;
    x->kid[0] = a;
    if (b) x->kid[1] = b;
    return x;
}

Node *rw_proj(Rewrite *rw, int k, Node *e)
{
    if (!e) return rw_fail(rw);
    bool arrays = e->type->kind == TY_ARRAYS;
    if ((!arrays && e->type->kind != TY_TUPLE) || k < 0 || k >= e->type->n)
        return rw_internal(rw, "a projection of what is no tuple");
    Node *x = rw_op1(rw, arrays ? OP_APROJ : OP_PROJ, e->type->elts[k], e);
    if (x) x->a = k;
    return x;
}

Node *rw_tuple(Rewrite *rw, int n, Node *const *comps)
{
    if (rw->failed) return NULL;
    if (n == 1) return comps[0] ? comps[0] : rw_fail(rw);
    const Type **ts = arena_alloc(&rw->p->arena, sizeof *ts * (size_t)(n + 1));
    if (!ts) return rw_fail(rw);
    for (int i = 0; i < n; i++) {
        if (!comps[i]) return rw_fail(rw);
        ts[i] = comps[i]->type;
    }
    Node *x = rw_node(rw, OP_TUPLE, n, rw_ttuple(rw, n, ts));
    for (int i = 0; x && i < n; i++) x->kid[i] = comps[i];
    return x;
}

Node *rw_ixget(Rewrite *rw, int dim, Node *ix)
{
    Node *x = rw_op1(rw, OP_IXGET, ty_i64(), ix);
    if (x) x->a = dim;
    return x;
}

Node *rw_ixcons(Rewrite *rw, int n, Node *const *comps)
{
    Node *x = rw_node(rw, OP_IXCONS, n, rw_tindex(rw, n));
    for (int i = 0; x && i < n; i++) {
        if (!comps[i]) return rw_fail(rw);
        x->kid[i] = comps[i];
    }
    return x;
}

Node *rw_shape(Rewrite *rw, Node *arr)
{
    if (!arr) return rw_fail(rw);
    return rw_op1(rw, OP_SHAPE, rw_tindex(rw, arr->type->rank), arr);
}

Node *rw_index(Rewrite *rw, Node *arr, Node *ix)
{
    if (!arr) return rw_fail(rw);
    return rw_op2(rw, OP_INDEX, arr->type->elt, arr, ix);
}

Node *rw_lindex(Rewrite *rw, Node *arr, Node *pos)
{
    if (!arr) return rw_fail(rw);
    return rw_op2(rw, OP_LINDEX, arr->type->elt, arr, pos);
}

Node *rw_cond(Rewrite *rw, Node *c, Node *t, Node *e)
{
    if (!t) return rw_fail(rw);
    return rw_op3(rw, OP_COND, t->type, c, t, e);
}

Node *rw_let(Rewrite *rw, int id, Node *bound, Node *body)
{
    if (!bound || !body || id < 0) return rw_fail(rw);
    Node *x = rw_op2(rw, is_arrays(bound->type) ? OP_ALET : OP_LET, body->type, bound, body);
    if (x) x->id = id;
    return x;
}

Node *rw_let_flat(Rewrite *rw, int id, Node *bound, Node *body)
{
    if (!bound || !body || id < 0) return rw_fail(rw);
    if (bound->op != OP_LET) return rw_let(rw, id, bound, body);
    /* let id = (let y = e in b) in body  =>  let y = e in let id = b in body */
    Node *last = bound;
    while (last->kid[1]->op == OP_LET) last = last->kid[1];
    Node *inner = rw_let(rw, id, last->kid[1], body);
    if (!inner) return NULL;
    last->kid[1] = inner;
    for (Node *l = bound;; l = l->kid[1]) {
        l->type = body->type;
        if (l == last) break;
    }
    return bound;
}

Node *rw_lam(Rewrite *rw, int n, const int *ids, Node *body)
{
    if (!body) return rw_fail(rw);
    Node *x = rw_op1(rw, OP_LAM, body->type, body);
    Node **ps = x ? arena_alloc(&rw->p->arena, sizeof *ps * (size_t)(n + 1)) : NULL;
    if (!x) return NULL;
    if (!ps) return rw_fail(rw);
    for (int i = 0; i < n; i++)
        if (!(ps[i] = rw_var(rw, ids[i]))) return NULL;
    x->nparam = n;
    x->param = ps;
    return x;
}

Node *rw_lam1(Rewrite *rw, int id, Node *body) { return rw_lam(rw, 1, &id, body); }

const Type *rw_tindex(Rewrite *rw, int rank)
{
    const Type *t = rw->failed ? NULL : ty_index(&rw->p->arena, rank);
    return t ? t : rw_fail(rw);
}

const Type *rw_tarray(Rewrite *rw, const Type *elt, int rank)
{
    const Type *t = rw->failed || !elt ? NULL : ty_array(&rw->p->arena, elt, rank);
    return t ? t : rw_fail(rw);
}

const Type *rw_ttuple(Rewrite *rw, int n, const Type *const *elts)
{
    const Type *t = rw->failed ? NULL : ty_tuple(&rw->p->arena, n, elts);
    return t ? t : rw_fail(rw);
}

/* ------------------------------------------------------------ equality up to renaming */

static bool pair_push(AlphaEq *q, int a, int b)
{
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 32;
        int (*t)[2] = ax__realloc(q->pair, sizeof *t * (size_t)cap);
        if (!t) return q->failed = true, false;
        q->pair = t;
        q->cap = cap;
    }
    q->pair[q->n][0] = a;
    q->pair[q->n][1] = b;
    q->n++;
    return true;
}

/* Variables a (of the first term) and b (of the second) name the same
 * value: bound at corresponding binders, or the same free variable. */
static bool same_var(const AlphaEq *q, int a, int b)
{
    for (int i = q->n - 1; i >= 0; i--)
        if (q->pair[i][0] == a || q->pair[i][1] == b) return q->pair[i][0] == a && q->pair[i][1] == b;
    return a == b;
}

static bool aeq(AlphaEq *q, const Node *a, const Node *b, int *budget, int depth)
{
    if (a == b) return true;
    if (!a || !b || --*budget < 0 || depth > OPT_MAX_DEPTH || q->failed) return false;
    if (a->op != b->op || a->n != b->n || a->a != b->a || a->nparam != b->nparam) return false;
    if (!(a->type == b->type || (a->type && b->type && ty_eq(a->type, b->type)))) return false;
    int base = q->n;
    bool ok = true;
    switch (a->op) {
    case OP_CONST:
        return a->type->kind == TY_SCALAR && sc_eq_bits(a->type->s, a->c, b->c);
    case OP_VAR: case OP_AVAR:
        return same_var(q, a->id, b->id);
    case OP_USE:
        return a->arr == b->arr;
    case OP_LET: case OP_ALET:
        /* the bound term is outside the variable's scope */
        ok = aeq(q, a->kid[0], b->kid[0], budget, depth + 1) && pair_push(q, a->id, b->id) &&
             aeq(q, a->kid[1], b->kid[1], budget, depth + 1);
        q->n = base;
        return ok;
    case OP_LAM:
        for (int i = 0; i < a->nparam && ok; i++)
            ok = a->param[i] && b->param[i] && ty_eq(a->param[i]->type, b->param[i]->type) &&
                 pair_push(q, a->param[i]->id, b->param[i]->id);
        break;
    case OP_STENCIL: case OP_STENCIL2:
        ok = a->sten && b->sten && !memcmp(a->sten, b->sten, sizeof *a->sten);
        break;
    case OP_REPLICATE: case OP_SLICE:
        ok = a->slice && b->slice && !memcmp(a->slice, b->slice, sizeof *a->slice);
        break;
    case OP_LOOP:
        ok = a->loop && b->loop && a->loop->ngen == b->loop->ngen &&
             !memcmp(a->loop->gen, b->loop->gen, sizeof a->loop->gen[0] * (size_t)a->loop->ngen);
        break;
    default:
        break;
    }
    for (int i = 0; ok && i < a->n; i++) ok = aeq(q, a->kid[i], b->kid[i], budget, depth + 1);
    q->n = base;
    return ok;
}

bool alpha_eq(AlphaEq *q, const Node *a, const Node *b, int *budget)
{
    int unbounded = INT_MAX;
    return aeq(q, a, b, budget ? budget : &unbounded, 0);
}

void alpha_free(AlphaEq *q)
{
    free(q->pair);
    memset(q, 0, sizeof *q);
}
