/*
 * Making core IR for libaxle_mpi's passes (normalise.c, localise.c): the
 * nodes of the forms they build, in the program's arena, typed as the
 * verifier wants them.  A failure (out of memory) is sticky (Mk.failed)
 * and every maker passes a NULL operand on as NULL.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"

Node *mk_node(Mk *k, Op op, int n, const Type *t)
{
    if (k->failed || !t) {
        k->failed = true;
        return NULL;
    }
    Node *x = node_new(&k->p->arena, op, n, t);
    if (!x) {
        k->failed = true;
        return NULL;
    }
    x->cx = k->cx;
    return x;
}

int mk_fresh(Mk *k, const Type *t)
{
    int v = k->failed ? -1 : program_fresh_var(k->p, t);
    if (v < 0) k->failed = true;
    return v;
}

Node *mk_var(Mk *k, int id, const Type *t)
{
    Node *x = id >= 0 ? mk_node(k, OP_VAR, 0, t) : NULL;
    if (x) x->id = id;
    else k->failed = true;
    return x;
}

Node *mk_avar(Mk *k, int id, const Type *t)
{
    Node *x = id >= 0 ? mk_node(k, OP_AVAR, 0, t) : NULL;
    if (x) x->id = id;
    else k->failed = true;
    return x;
}

Node *mk_i64(Mk *k, int64_t v)
{
    Node *x = mk_node(k, OP_CONST, 0, ty_i64());
    if (x) x->c.i = v;
    return x;
}

Node *mk_bool(Mk *k, bool v)
{
    Node *x = mk_node(k, OP_CONST, 0, ty_bool());
    if (x) {
        x->c.u = 0;
        x->c.b = v;
    }
    return x;
}

Node *mk_prim(Mk *k, Prim p, const Type *t, Node *a, Node *b)
{
    int n = b ? 2 : 1;
    if (!a) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_PRIM, n, t);
    if (!x) return NULL;
    x->a = p;
    x->kid[0] = a;
    if (b) x->kid[1] = b;
    return x;
}

Node *mk_ixget(Mk *k, int dim, Node *ix)
{
    if (!ix) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_IXGET, 1, ty_i64());
    if (!x) return NULL;
    x->a = dim;
    x->kid[0] = ix;
    return x;
}

const Type *mk_tindex(Mk *k, int rank)
{
    const Type *t = k->failed ? NULL : ty_index(&k->p->arena, rank);
    if (!t) k->failed = true;
    return t;
}

const Type *mk_tarray(Mk *k, const Type *elt, int rank)
{
    const Type *t = k->failed || !elt ? NULL : ty_array(&k->p->arena, elt, rank);
    if (!t) k->failed = true;
    return t;
}

Node *mk_ixcons(Mk *k, int n, Node *const *comps)
{
    Node *x = mk_node(k, OP_IXCONS, n, mk_tindex(k, n));
    if (!x) return NULL;
    for (int i = 0; i < n; i++) {
        if (!comps[i]) return k->failed = true, NULL;
        x->kid[i] = comps[i];
    }
    return x;
}

Node *mk_shape(Mk *k, Node *arr)
{
    if (!arr) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_SHAPE, 1, mk_tindex(k, arr->type->rank));
    if (x) x->kid[0] = arr;
    return x;
}

Node *mk_index(Mk *k, Node *arr, Node *ix)
{
    if (!arr || !ix) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_INDEX, 2, arr->type->elt);
    if (!x) return NULL;
    x->kid[0] = arr;
    x->kid[1] = ix;
    return x;
}

Node *mk_lindex(Mk *k, Node *arr, Node *pos)
{
    if (!arr || !pos) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_LINDEX, 2, arr->type->elt);
    if (!x) return NULL;
    x->kid[0] = arr;
    x->kid[1] = pos;
    return x;
}

Node *mk_let(Mk *k, int id, Node *bound, Node *body)
{
    if (!bound || !body) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_LET, 2, body->type);
    if (!x) return NULL;
    x->id = id;
    x->kid[0] = bound;
    x->kid[1] = body;
    return x;
}

Node *mk_cond(Mk *k, Node *c, Node *t, Node *e)
{
    if (!c || !t || !e) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_COND, 3, t->type);
    if (!x) return NULL;
    x->kid[0] = c;
    x->kid[1] = t;
    x->kid[2] = e;
    return x;
}

Node *mk_tuple(Mk *k, int n, Node *const *comps)
{
    if (n == 1) return comps[0];
    const Type **ts = k->failed ? NULL : arena_alloc(&k->p->arena, sizeof *ts * (size_t)(n + 1));
    if (!ts) return k->failed = true, NULL;
    for (int i = 0; i < n; i++) {
        if (!comps[i]) return k->failed = true, NULL;
        ts[i] = comps[i]->type;
    }
    Node *x = mk_node(k, OP_TUPLE, n, ty_tuple(&k->p->arena, n, ts));
    if (!x) return NULL;
    for (int i = 0; i < n; i++) x->kid[i] = comps[i];
    return x;
}

Node *mk_lam(Mk *k, int n, const int *ids, const Type *const *types, Node *body)
{
    if (!body) return k->failed = true, NULL;
    Node *x = mk_node(k, OP_LAM, 1, body->type);
    Node **ps = k->failed ? NULL : arena_alloc(&k->p->arena, sizeof *ps * (size_t)(n + 1));
    if (!x || !ps) return k->failed = true, NULL;
    for (int i = 0; i < n; i++)
        if (!(ps[i] = mk_var(k, ids[i], types[i]))) return NULL;
    x->nparam = n;
    x->param = ps;
    x->kid[0] = body;
    return x;
}
