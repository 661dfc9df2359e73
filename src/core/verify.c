/*
 * The IR verifier (docs/ARCHITECTURE.md, "The pipeline"): the seeds get type
 * preservation from Haskell's type checker over typed de Bruijn terms; axle
 * uses unique variable ids and checks every core program instead.  It
 * checks, for every node:
 *
 *  - the tree property: no node is reached twice (lambda parameters
 *    included);
 *  - the type against the operands' types, per Op, as ir.h lays the nodes
 *    out (and prim_type for primitives);
 *  - the strata: array operations take array computations and scalar
 *    expressions where ir.h says; scalar code reaches arrays only through
 *    array variables (AVAR under INDEX, LINDEX, SHAPE);
 *  - scoping: every VAR/AVAR is bound by an enclosing LET/ALET/LAM with the
 *    same id, its type is the binder's, no id is bound twice in the
 *    program, ids are below nvars and vartype agrees with each binder.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "hostarray.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deeper trees are refused rather than risking the C stack. */
#define VERIFY_MAX_DEPTH (4 * AX_DEPTH_LIMIT)   /* past OPT_MAX_DEPTH: what the optimiser leaves alone verifies */

typedef struct V {
    const Program *p;
    char *msg;
    size_t size;
    bool failed;
    unsigned char *bound;     /* ever bound (ids are bound once per program) */
    unsigned char *scope;     /* bound by an enclosing binder now */
    const void **seen;        /* visited nodes (open addressing) */
    size_t seen_cap, seen_len;
    int *stk;                 /* ids of the binders being checked */
    size_t nstk, capstk;
    Arena tmp;                /* prim_type results, parameter type lists */
    int depth;
    bool delayed_ok;          /* the next node may be DELAYED (a consumer's operand) */
    char b1[128], b2[128], b3[128];   /* type strings for messages (kept off the stack) */
} V;

static const char *ts(const Type *t, char *buf) { return ty_str(t, buf, 128); }

static bool bad(V *v, const Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool bad(V *v, const Node *n, const char *fmt, ...)
{
    if (v->failed) return false;
    v->failed = true;
    if (!v->msg || !v->size) return false;
    int k = snprintf(v->msg, v->size, "%s: ", n ? op_name(n->op) : "program");
    if (k < 0 || (size_t)k >= v->size) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg + k, v->size - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

static bool nomem(V *v) { return bad(v, NULL, "the verifier ran out of memory"); }

static bool is_arr_t(const Type *t) { return t && (t->kind == TY_ARRAY || t->kind == TY_ARRAYS); }
static bool is_array1(const Type *t) { return t && t->kind == TY_ARRAY && t->elt; }
static bool is_i64(const Type *t) { return t && t->kind == TY_SCALAR && t->s == AX_I64; }
static bool is_bool(const Type *t) { return t && t->kind == TY_SCALAR && t->s == AX_BOOL; }
static bool is_index(const Type *t) { return t && t->kind == TY_INDEX; }
static bool is_arr_of(const Type *t, const Type *elt, int rank)
{
    return is_array1(t) && t->rank == rank && ty_eq(t->elt, elt);
}

/* ------------------------------------------------------------ bookkeeping */

/* Marks n visited; false (with a message) if it was already. */
static bool visit(V *v, const Node *n)
{
    if (2 * (v->seen_len + 1) > v->seen_cap) {
        size_t cap = v->seen_cap ? v->seen_cap * 2 : 1024;
        const void **t = ax__calloc(cap, sizeof *t);
        if (!t) return nomem(v);
        for (size_t i = 0; i < v->seen_cap; i++) {
            if (!v->seen[i]) continue;
            size_t j = ((uintptr_t)v->seen[i] >> 4) * 0x9E3779B97F4A7C15ull >> 20 & (cap - 1);
            while (t[j]) j = (j + 1) & (cap - 1);
            t[j] = v->seen[i];
        }
        free(v->seen);
        v->seen = t;
        v->seen_cap = cap;
    }
    size_t mask = v->seen_cap - 1, i = ((uintptr_t)n >> 4) * 0x9E3779B97F4A7C15ull >> 20 & mask;
    while (v->seen[i]) {
        if (v->seen[i] == n) return bad(v, n, "the node is reached twice (the core IR must be a tree)");
        i = (i + 1) & mask;
    }
    v->seen[i] = n;
    v->seen_len++;
    return true;
}

static bool push_id(V *v, int id)
{
    if (v->nstk == v->capstk) {
        size_t cap = v->capstk ? v->capstk * 2 : 64;
        int *s = ax__realloc(v->stk, sizeof *s * cap);
        if (!s) return nomem(v);
        v->stk = s;
        v->capstk = cap;
    }
    v->stk[v->nstk++] = id;
    return true;
}

static void pop_ids(V *v, size_t base)
{
    while (v->nstk > base) v->scope[v->stk[--v->nstk]] = 0;
}

/* A binder of `id` for a value of type t (LET/ALET or a parameter). */
static bool bind(V *v, const Node *n, int id, const Type *t, bool arr)
{
    char *b1 = v->b1, *b2 = v->b2;
    if (id < 0 || id >= v->p->nvars)
        return bad(v, n, "binds variable %d, out of range (nvars is %d)", id, v->p->nvars);
    if (v->bound[id]) return bad(v, n, "variable %d is bound twice in the program", id);
    const Type *vt = v->p->vartype[id];
    if (!vt) return bad(v, n, "variable %d has no entry in vartype", id);
    if (!ty_eq(vt, t))
        return bad(v, n, "variable %d is bound to a value of %s but vartype says %s", id, ts(t, b1), ts(vt, b2));
    if (is_arr_t(vt) != arr)
        return bad(v, n, "variable %d of %s is bound by a %s binder", id, ts(vt, b1), arr ? "array" : "scalar");
    v->bound[id] = v->scope[id] = 1;
    return push_id(v, id);
}

/* A use of a variable. */
static bool var_ref(V *v, const Node *n, bool arr)
{
    char *b1 = v->b1, *b2 = v->b2;
    int id = n->id;
    if (id < 0 || id >= v->p->nvars) return bad(v, n, "variable %d is out of range (nvars is %d)", id, v->p->nvars);
    if (!v->scope[id])
        return bad(v, n, "%s%d is not in scope (no enclosing binder)", arr ? "a" : "x", id);
    const Type *vt = v->p->vartype[id];
    if (!ty_eq(vt, n->type))
        return bad(v, n, "%s%d is used at %s but bound at %s", arr ? "a" : "x", id, ts(n->type, b1), ts(vt, b2));
    if (is_arr_t(vt) != arr)
        return bad(v, n, "%s%d refers to a %s variable", arr ? "a" : "x", id, arr ? "scalar" : "array");
    return true;
}

/* ------------------------------------------------------------ traversal */

static bool chk(V *v, const Node *n, bool arr);

/* Checks common to every node of a stratum, and marks it visited. */
static bool enter(V *v, const Node *n, bool arr)
{
    if (!n) return bad(v, NULL, "a missing operand");
    if ((unsigned)n->op >= OP_NOPS) return bad(v, NULL, "a node with an unknown op %d", (int)n->op);
    if (n->op == OP_LAM)
        return bad(v, n, "a function where %s is expected", arr ? "an array computation" : "an expression");
    if (op_is_array(n->op) != arr)
        return bad(v, n, arr ? "a scalar expression where an array computation is expected"
                             : "an array computation inside scalar code (scalar code reaches arrays "
                               "only through array variables)");
    if (!n->type) return bad(v, n, "the node has no type");
    if (arr ? !is_arr_t(n->type) : !ty_is_elt(n->type)) {
        char *b = v->b1;
        return bad(v, n, "the node's type %s is not %s", ts(n->type, b), arr ? "an array type" : "an element type");
    }
    if (n->n < 0 || (n->n > 0 && !n->kid)) return bad(v, n, "malformed operand list");
    return visit(v, n);
}

/* A chain of lets (iterated, so a long chain does not use the stack). */
static bool let_chain(V *v, const Node *n, bool arr)
{
    Op lop = arr ? OP_ALET : OP_LET;
    size_t base = v->nstk;
    const Node *x = n, *body = NULL;
    bool ok = false;
    for (;;) {
        if (x->n != 2) { bad(v, x, "a let has %d operands, not 2", x->n); break; }
        if (!chk(v, x->kid[0], arr)) break;
        if (!bind(v, x, x->id, x->kid[0]->type, arr)) break;
        const Node *b = x->kid[1];
        if (b && b->op == lop) {
            if (!enter(v, b, arr)) break;
            x = b;
            continue;
        }
        ok = chk(v, b, arr);
        body = b;
        break;
    }
    pop_ids(v, base);
    if (!ok) return false;
    for (x = n; x != body; x = x->kid[1])
        if (!ty_eq(x->type, body->type)) {
            char *b1 = v->b1, *b2 = v->b2;
            return bad(v, x, "the let has type %s but its body %s", ts(x->type, b1), ts(body->type, b2));
        }
    return true;
}

/* Operand k of n is a function of np parameters of types pt[], with a body
 * of the given stratum; returns the body's type (NULL on failure). */
static const Type *lam(V *v, const Node *n, int k, int np, const Type *const *pt, bool arr_body)
{
    char *b1 = v->b1, *b2 = v->b2;
    const Node *l = n->kid[k];
    if (!l || l->op != OP_LAM) return bad(v, n, "operand %d is not a function", k), NULL;
    if (!visit(v, l)) return NULL;
    if (l->nparam != np) return bad(v, n, "the function (operand %d) takes %d parameters, not %d", k, l->nparam, np), NULL;
    if (l->n != 1) return bad(v, l, "a function has %d operands, not 1 (its body)", l->n), NULL;
    if (np > 0 && !l->param) return bad(v, l, "the function has no parameter list"), NULL;
    size_t base = v->nstk;
    const Type *res = NULL;
    for (int i = 0; i < np; i++) {
        const Node *q = l->param[i];
        bool parr = is_arr_t(pt[i]);
        if (!q) { bad(v, n, "parameter %d of the function (operand %d) is missing", i, k); goto out; }
        if (q->op != (parr ? OP_AVAR : OP_VAR)) {
            bad(v, n, "parameter %d of the function (operand %d) is a %s, not a%s", i, k, op_name(q->op),
                parr ? "n avar" : " var");
            goto out;
        }
        if (!ty_eq(q->type, pt[i])) {
            bad(v, n, "parameter %d of the function (operand %d) is %s where %s is expected", i, k,
                ts(q->type, b1), ts(pt[i], b2));
            goto out;
        }
        if (!visit(v, q) || !bind(v, q, q->id, pt[i], parr)) goto out;
    }
    const Node *body = l->kid[0];
    if (!chk(v, body, arr_body)) goto out;
    if (!ty_eq(l->type, body->type)) {
        bad(v, l, "the function's type %s is not its body's %s", ts(l->type, b1), ts(body->type, b2));
        goto out;
    }
    res = body->type;
out:
    pop_ids(v, base);
    return res;
}

/* Operand k is a scalar expression; its type, or NULL. */
static const Type *exp_kid(V *v, const Node *n, int k)
{
    if (k >= n->n) return bad(v, n, "operand %d is missing", k), NULL;
    return chk(v, n->kid[k], false) ? n->kid[k]->type : NULL;
}

/* Operand k is an array computation; its type, or NULL. */
static const Type *acc_kid(V *v, const Node *n, int k)
{
    if (k >= n->n) return bad(v, n, "operand %d is missing", k), NULL;
    return chk(v, n->kid[k], true) ? n->kid[k]->type : NULL;
}

/* Operand k is a single array (not a tuple of arrays), the input of a
 * consumer: fusion may have made it a DELAYED producer. */
static const Type *arr_kid(V *v, const Node *n, int k)
{
    char *b = v->b1;
    v->delayed_ok = true;
    const Type *t = acc_kid(v, n, k);
    if (t && !is_array1(t)) return bad(v, n, "operand %d is %s, not an array", k, ts(t, b)), NULL;
    return t;
}

/* Operand 0 of INDEX/LINDEX/SHAPE: an array variable. */
static const Type *avar_kid(V *v, const Node *n)
{
    const Node *a = n->n > 0 ? n->kid[0] : NULL;
    if (!a || a->op != OP_AVAR)
        return bad(v, n, "the array operand is %s; scalar code reaches arrays only through array variables",
                   a ? op_name(a->op) : "missing"), NULL;
    if (!enter(v, a, true) || !var_ref(v, a, true)) return NULL;
    if (!is_array1(a->type)) {
        char *b = v->b1;
        return bad(v, n, "the array operand is %s, not an array", ts(a->type, b)), NULL;
    }
    return a->type;
}

static bool want_type(V *v, const Node *n, const Type *want)
{
    if (ty_eq(n->type, want)) return true;
    char *b1 = v->b1, *b2 = v->b2;
    return bad(v, n, "the node's type is %s where %s follows from its operands", ts(n->type, b1), ts(want, b2));
}

static bool want_arr(V *v, const Node *n, const Type *elt, int rank)
{
    if (is_arr_of(n->type, elt, rank)) return true;
    char *b1 = v->b1, *b2 = v->b2;
    return bad(v, n, "the node's type is %s where [%s]^%d follows from its operands", ts(n->type, b1),
               ts(elt, b2), rank);
}

static bool want_nkids(V *v, const Node *n, int k)
{
    return n->n == k || bad(v, n, "%d operands, not %d", n->n, k);
}

/* A primitive's typing, once its operands are checked (kept out of the
 * recursion's frames: the address-taken array is costly on the stack). */
static __attribute__((noinline)) bool prim_type_ok(V *v, const Node *n)
{
    char *b1 = v->b1, *b2 = v->b2;
    const PrimInfo *pi = &prim_info[n->a];
    const Type *at[4];
    for (int i = 0; i < n->n; i++) at[i] = n->kid[i]->type;
    const char *why = "ill-typed";
    const Type *rt = prim_type(&v->tmp, (Prim)n->a, n->n, at, n->type, &why);
    if (!rt)
        return bad(v, n, "%s: %s (operands %s%s%s)", pi->name, why, ts(at[0], b1), n->n > 1 ? ", " : "",
                   n->n > 1 ? ts(at[1], b2) : "");
    if (!ty_eq(rt, n->type))
        return bad(v, n, "%s gives %s, but the node says %s", pi->name, ts(rt, b1), ts(n->type, b2));
    return true;
}

static bool prim_node(V *v, const Node *n)
{
    if ((unsigned)n->a >= P_NPRIM) return bad(v, n, "unknown primitive %d", n->a);
    if (n->n != prim_info[n->a].arity || n->n > 4)
        return bad(v, n, "%s takes %d operands, not %d", prim_info[n->a].name, prim_info[n->a].arity, n->n);
    for (int i = 0; i < n->n; i++)
        if (!chk(v, n->kid[i], false)) return false;
    return prim_type_ok(v, n);
}

/* ------------------------------------------------------------ scalar ops */

static bool exp_node(V *v, const Node *n)
{
    char *b1 = v->b1, *b2 = v->b2;
    const Type *t, *u;
    switch (n->op) {
    case OP_CONST:
        if (!want_nkids(v, n, 0)) return false;
        return n->type->kind == TY_SCALAR || bad(v, n, "a constant of %s, not a scalar", ts(n->type, b1));
    case OP_VAR:
        return want_nkids(v, n, 0) && var_ref(v, n, false);
    case OP_TUPLE:
        if (n->type->kind != TY_TUPLE || n->type->n != n->n)
            return bad(v, n, "%d components but the type is %s", n->n, ts(n->type, b1));
        for (int i = 0; i < n->n; i++) {
            if (!(t = exp_kid(v, n, i))) return false;
            if (!ty_eq(t, n->type->elts[i]))
                return bad(v, n, "component %d is %s but the type says %s", i, ts(t, b1), ts(n->type->elts[i], b2));
        }
        return true;
    case OP_PROJ:
        if (!want_nkids(v, n, 1) || !(t = exp_kid(v, n, 0))) return false;
        if (t->kind != TY_TUPLE) return bad(v, n, "projects from %s, not a tuple", ts(t, b1));
        if (n->a < 0 || n->a >= t->n) return bad(v, n, "component %d is out of range for %s", n->a, ts(t, b1));
        return want_type(v, n, t->elts[n->a]);
    case OP_COND:
        if (!want_nkids(v, n, 3) || !(t = exp_kid(v, n, 0))) return false;
        if (!is_bool(t)) return bad(v, n, "the condition is %s, not bool", ts(t, b1));
        if (!(t = exp_kid(v, n, 1)) || !(u = exp_kid(v, n, 2))) return false;
        if (!ty_eq(t, u)) return bad(v, n, "the branches differ: %s and %s", ts(t, b1), ts(u, b2));
        return want_type(v, n, t);
    case OP_WHILE:
        if (!want_nkids(v, n, 3) || !(t = exp_kid(v, n, 2))) return false;
        if (!want_type(v, n, t)) return false;
        if (!(u = lam(v, n, 0, 1, &t, false))) return false;
        if (!is_bool(u)) return bad(v, n, "the condition returns %s, not bool", ts(u, b1));
        if (!(u = lam(v, n, 1, 1, &t, false))) return false;
        if (!ty_eq(u, t)) return bad(v, n, "the body returns %s, not %s", ts(u, b1), ts(t, b2));
        return true;
    case OP_INDEX:
        if (!want_nkids(v, n, 2) || !(t = avar_kid(v, n)) || !(u = exp_kid(v, n, 1))) return false;
        if (!is_index(u) || u->n != t->rank)
            return bad(v, n, "the index is %s for an array %s", ts(u, b1), ts(t, b2));
        return want_type(v, n, t->elt);
    case OP_LINDEX:
        if (!want_nkids(v, n, 2) || !(t = avar_kid(v, n)) || !(u = exp_kid(v, n, 1))) return false;
        if (!is_i64(u)) return bad(v, n, "the linear index is %s, not i64", ts(u, b1));
        return want_type(v, n, t->elt);
    case OP_SHAPE:
        if (!want_nkids(v, n, 1) || !(t = avar_kid(v, n))) return false;
        if (!is_index(n->type) || n->type->n != t->rank)
            return bad(v, n, "the type %s is not the index of %s", ts(n->type, b1), ts(t, b2));
        return true;
    case OP_IXCONS:
        if (!is_index(n->type) || n->type->n != n->n)
            return bad(v, n, "%d components but the type is %s", n->n, ts(n->type, b1));
        for (int i = 0; i < n->n; i++) {
            if (!(t = exp_kid(v, n, i))) return false;
            if (!is_i64(t)) return bad(v, n, "component %d is %s, not i64", i, ts(t, b1));
        }
        return true;
    case OP_IXGET:
        if (!want_nkids(v, n, 1) || !(t = exp_kid(v, n, 0))) return false;
        if (!is_index(t)) return bad(v, n, "the operand is %s, not an index", ts(t, b1));
        if (n->a < 0 || n->a >= t->n) return bad(v, n, "dimension %d is out of range for %s", n->a, ts(t, b1));
        return want_type(v, n, ty_i64());
    default:
        return bad(v, n, "not a scalar operation");
    }
}

/* ------------------------------------------------------------ array ops */

/* fold, fold1, the segmented folds and the scans. */
static bool reduce(V *v, const Node *n)
{
    char *b1 = v->b1, *b2 = v->b2;
    Op op = n->op;
    bool has_z = op == OP_FOLD || op == OP_FOLDSEG || op == OP_SCANL || op == OP_SCANR || op == OP_SCANLEX ||
                 op == OP_SCANREX;
    bool has_seg = op == OP_FOLDSEG || op == OP_FOLD1SEG;
    if (!want_nkids(v, n, 2 + has_z + has_seg)) return false;
    int ai = 1 + has_z;
    const Type *a = arr_kid(v, n, ai);
    if (!a) return false;
    const Type *e = a->elt;
    if (a->rank < 1) return bad(v, n, "the array %s has rank 0; it needs rank 1 or more", ts(a, b1));
    if (has_z) {
        const Type *z = exp_kid(v, n, 1);
        if (!z) return false;
        if (!ty_eq(z, e)) return bad(v, n, "the initial value is %s but the elements are %s", ts(z, b1), ts(e, b2));
    }
    if (has_seg) {
        const Type *s = arr_kid(v, n, ai + 1);
        if (!s) return false;
        if (s->rank != 1 || !ty_is_int(s->elt))
            return bad(v, n, "the segments %s are not a vector of integers", ts(s, b1));
    }
    const Type *pt[2] = {e, e};
    const Type *r = lam(v, n, 0, 2, pt, false);
    if (!r) return false;
    if (!ty_eq(r, e)) return bad(v, n, "the operator returns %s, not the element type %s", ts(r, b1), ts(e, b2));
    switch (op) {
    case OP_FOLD: case OP_FOLD1: return want_arr(v, n, e, a->rank - 1);
    case OP_SCANLEX: case OP_SCANREX: {
        const Type *t = n->type;
        if (t->kind != TY_ARRAYS || t->n != 2 || !is_arr_of(t->elts[0], e, a->rank) ||
            !is_arr_of(t->elts[1], e, a->rank - 1))
            return bad(v, n, "the type %s is not the pair ([e]^%d, [e]^%d) for e = %s", ts(t, b1), a->rank,
                       a->rank - 1, ts(e, b2));
        return true;
    }
    default: return want_arr(v, n, e, a->rank);
    }
}

static bool stencil(V *v, const Node *n)
{
    char *b1 = v->b1, *b2 = v->b2;
    const Stencil *s = n->sten;
    int k = n->op == OP_STENCIL ? 1 : 2;
    if (!s) return bad(v, n, "no stencil description");
    if (s->ninputs != k) return bad(v, n, "the description has %d inputs, not %d", s->ninputs, k);
    const Type *in[2];
    int count[2], nconst = 0;
    for (int i = 0; i < k; i++) {
        if (!(in[i] = arr_kid(v, n, 1 + i))) return false;
        if (in[i]->rank != s->rank || s->rank < 1 || s->rank > AX_MAX_RANK)
            return bad(v, n, "input %d is %s but the stencil has rank %d", i, ts(in[i], b1), s->rank);
        int64_t c = 1;
        for (int d = 0; d < s->rank; d++) {
            if (s->size[i][d] < 1 || s->size[i][d] % 2 == 0)
                return bad(v, n, "extent %d of stencil %d is %d, not odd", d, i, s->size[i][d]);
            c *= s->size[i][d];
            if (c > (1 << 20)) return bad(v, n, "stencil %d is too large", i);
        }
        count[i] = (int)c;
        if ((unsigned)s->bound[i] > AX_CONSTANT) return bad(v, n, "unknown boundary kind %d", (int)s->bound[i]);
        if (s->bound[i] == AX_CONSTANT) nconst++;
    }
    if (!want_nkids(v, n, 1 + k + nconst)) return false;
    int used[2] = {-1, -1};
    for (int i = 0; i < k; i++) {
        if (s->bound[i] != AX_CONSTANT) continue;
        int c = s->constkid[i];
        if (c < 1 + k || c >= n->n || c == used[0])
            return bad(v, n, "the boundary constant of input %d is operand %d, not a free constant slot", i, c);
        used[i] = c;
        const Type *t = exp_kid(v, n, c);
        if (!t) return false;
        if (!ty_eq(t, in[i]->elt))
            return bad(v, n, "the boundary constant is %s but input %d holds %s", ts(t, b1), i, ts(in[i]->elt, b2));
    }
    int np = count[0] + (k > 1 ? count[1] : 0) + (s->ix ? 1 : 0);
    const Type **pt = arena_alloc(&v->tmp, sizeof *pt * (size_t)np);
    if (!pt) return nomem(v);
    for (int i = 0, p = 0; i < k; i++)
        for (int j = 0; j < count[i]; j++) pt[p++] = in[i]->elt;
    if (s->ix && !(pt[np - 1] = ty_index(&v->tmp, s->rank))) return nomem(v);
    const Type *r = lam(v, n, 0, np, pt, false);
    return r && want_arr(v, n, r, s->rank);
}

/* awhile's functions take the loop's value: one parameter of its type, or
 * one per array of a tuple. */
/* A multi-generator loop (ir.h Loop): the space, then per generator its
 * result; every kid after the space is a reduction's operator or initial
 * value, each used once. */
static bool loop_node(V *v, const Node *n)
{
    char *b1 = v->b1, *b2 = v->b2;
    const Loop *lp = n->loop;
    if (!lp || lp->ngen < 1) return bad(v, n, "a loop without generators");
    const Type *t = n->type;
    if (!t || t->kind != TY_ARRAYS || t->n != lp->ngen)
        return bad(v, n, "the type %s is not a tuple of the %d generators' arrays", ts(t, b1), lp->ngen);
    if (n->n < 1) return bad(v, n, "a loop without its space");
    const Type *sp = arr_kid(v, n, 0);
    if (!sp) return false;
    int r = sp->rank;
    if (r < 1) return bad(v, n, "the space %s has rank 0; it needs rank 1 or more", ts(sp, b1));
    int used = 1;
    for (int g = 0; g < lp->ngen; g++) {
        const LoopGen *gn = &lp->gen[g];
        const Type *ct = loop_comp_type(n, gn->comp);
        if (!ct) return bad(v, n, "generator %d reads component %d of %s", g, gn->comp, ts(sp->elt, b1));
        switch (gn->kind) {
        case LOOP_COLLECT:
            if (!is_arr_of(t->elts[g], ct, r)) return bad(v, n, "generator %d (collect) gives %s, not [%s]^%d", g,
                                                           ts(t->elts[g], b1), ts(ct, b2), r);
            break;
        case LOOP_FILTER: {
            if (r != 1) return bad(v, n, "generator %d (filter) over a space of rank %d, not 1", g, r);
            const Type *pt = loop_comp_type(n, gn->pred);
            if (gn->pred < 0 || !is_bool(pt)) return bad(v, n, "generator %d (filter) decides by a component that is not bool", g);
            if (!is_arr_of(t->elts[g], ct, 1)) return bad(v, n, "generator %d (filter) gives %s, not [%s]^1", g,
                                                           ts(t->elts[g], b1), ts(ct, b2));
            break;
        }
        case LOOP_REDUCE: {
            if (gn->op < 1 || gn->op >= n->n || (gn->z >= 0 && (gn->z < 1 || gn->z >= n->n || gn->z == gn->op)))
                return bad(v, n, "generator %d (reduce) names operands out of range", g);
            if (gn->pred >= 0 && !is_bool(loop_comp_type(n, gn->pred)))
                return bad(v, n, "generator %d (reduce) decides by a component that is not bool", g);
            const Type *pt[2] = {ct, ct};
            const Type *rt = lam(v, n, gn->op, 2, pt, false);
            if (!rt) return false;
            if (!ty_eq(rt, ct)) return bad(v, n, "generator %d's operator returns %s, not %s", g, ts(rt, b1), ts(ct, b2));
            used += 1;
            if (gn->z >= 0) {
                const Type *zt = exp_kid(v, n, gn->z);
                if (!zt) return false;
                if (!ty_eq(zt, ct)) return bad(v, n, "generator %d's initial value is %s, not %s", g, ts(zt, b1), ts(ct, b2));
                used += 1;
            }
            if (!is_arr_of(t->elts[g], ct, r - 1)) return bad(v, n, "generator %d (reduce) gives %s, not [%s]^%d", g,
                                                               ts(t->elts[g], b1), ts(ct, b2), r - 1);
            break;
        }
        default:
            return bad(v, n, "generator %d has an unknown kind", g);
        }
    }
    if (used != n->n) return bad(v, n, "%d operands, but the generators use %d", n->n, used);
    return true;
}

static const Type *awhile_lam(V *v, const Node *n, int k, const Type *t)
{
    const Node *l = n->kid[k];
    if (l && l->op == OP_LAM && t->kind == TY_ARRAYS && l->nparam == t->n && t->n != 1)
        return lam(v, n, k, t->n, t->elts, true);
    return lam(v, n, k, 1, &t, true);
}

static bool acc_node(V *v, const Node *n)
{
    char *b1 = v->b1, *b2 = v->b2;
    const Type *t, *u, *r;
    switch (n->op) {
    case OP_AVAR:
        return want_nkids(v, n, 0) && var_ref(v, n, true);
    case OP_USE:
        if (!want_nkids(v, n, 0)) return false;
        if (!n->arr) return bad(v, n, "no host array");
        return want_arr(v, n, n->arr->elt, n->arr->rank);
    case OP_UNIT:
        if (!want_nkids(v, n, 1) || !(t = exp_kid(v, n, 0))) return false;
        return want_arr(v, n, t, 0);
    case OP_GENERATE:
        if (!want_nkids(v, n, 2) || !(t = exp_kid(v, n, 0))) return false;
        if (!is_index(t)) return bad(v, n, "the shape is %s, not an index", ts(t, b1));
        if (!(r = lam(v, n, 1, 1, &t, false))) return false;
        return want_arr(v, n, r, t->n);
    case OP_MAP:
        if (!want_nkids(v, n, 2) || !(t = arr_kid(v, n, 1))) return false;
        if (!(r = lam(v, n, 0, 1, &t->elt, false))) return false;
        return want_arr(v, n, r, t->rank);
    case OP_ZIPWITH: {
        int k = n->n - 1;
        if (k < 2) return bad(v, n, "%d arrays; zipWith takes 2 or more", k);
        const Type **pt = arena_alloc(&v->tmp, sizeof *pt * (size_t)k);
        if (!pt) return nomem(v);
        int rank = 0;
        for (int i = 0; i < k; i++) {
            if (!(t = arr_kid(v, n, 1 + i))) return false;
            if (i == 0) rank = t->rank;
            else if (t->rank != rank) return bad(v, n, "the arrays differ in rank (%d and %d)", rank, t->rank);
            pt[i] = t->elt;
        }
        if (!(r = lam(v, n, 0, k, pt, false))) return false;
        return want_arr(v, n, r, rank);
    }
    case OP_BACKPERMUTE:
        if (!want_nkids(v, n, 3) || !(t = exp_kid(v, n, 0)) || !(u = arr_kid(v, n, 2))) return false;
        if (!is_index(t)) return bad(v, n, "the shape is %s, not an index", ts(t, b1));
        if (!(r = lam(v, n, 1, 1, &t, false))) return false;
        if (!is_index(r) || r->n != u->rank)
            return bad(v, n, "the index function returns %s for a source %s", ts(r, b1), ts(u, b2));
        return want_arr(v, n, u->elt, t->n);
    case OP_PERMUTE: {
        if (!want_nkids(v, n, 4) || !(t = arr_kid(v, n, 1)) || !(u = arr_kid(v, n, 3))) return false;
        if (!ty_eq(t->elt, u->elt))
            return bad(v, n, "the defaults %s and the source %s differ in element type", ts(t, b1), ts(u, b2));
        const Type *pt[2] = {u->elt, u->elt};
        if (!(r = lam(v, n, 0, 2, pt, false))) return false;
        if (!ty_eq(r, u->elt)) return bad(v, n, "the combination returns %s, not %s", ts(r, b1), ts(u->elt, b2));
        const Type *ix = ty_index(&v->tmp, u->rank);
        if (!ix) return nomem(v);
        if (!(r = lam(v, n, 2, 1, &ix, false))) return false;
        if (!is_index(r) || r->n != t->rank)
            return bad(v, n, "the index function returns %s for defaults %s", ts(r, b1), ts(t, b2));
        return want_arr(v, n, t->elt, t->rank);
    }
    case OP_REPLICATE:
    case OP_SLICE: {
        const Slice *s = n->slice;
        if (!s || s->n < 0 || s->n > AX_MAX_RANK) return bad(v, n, "a missing or malformed slice specifier");
        int nfixed = 0;
        for (int i = 0; i < s->n; i++) nfixed += s->fixed[i] != 0;
        if (!want_nkids(v, n, 1 + nfixed) || !(t = arr_kid(v, n, 0))) return false;
        for (int i = 0; i < nfixed; i++) {
            if (!(u = exp_kid(v, n, 1 + i))) return false;
            if (!is_i64(u)) return bad(v, n, "fixed entry %d is %s, not i64", i, ts(u, b1));
        }
        int src_rank = n->op == OP_REPLICATE ? s->n - nfixed : s->n;
        if (t->rank != src_rank)
            return bad(v, n, "the specifier (%d entries, %d fixed) does not fit the array %s", s->n, nfixed, ts(t, b1));
        return want_arr(v, n, t->elt, n->op == OP_REPLICATE ? s->n : s->n - nfixed);
    }
    case OP_RESHAPE:
        if (!want_nkids(v, n, 2) || !(t = exp_kid(v, n, 0)) || !(u = arr_kid(v, n, 1))) return false;
        if (!is_index(t)) return bad(v, n, "the shape is %s, not an index", ts(t, b1));
        return want_arr(v, n, u->elt, t->n);
    case OP_FOLD: case OP_FOLD1: case OP_FOLDSEG: case OP_FOLD1SEG:
    case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX:
        return reduce(v, n);
    case OP_FILTER:
        if (!want_nkids(v, n, 2) || !(t = arr_kid(v, n, 1))) return false;
        if (!(r = lam(v, n, 0, 1, &t->elt, false))) return false;
        if (!is_bool(r)) return bad(v, n, "the predicate returns %s, not bool", ts(r, b1));
        return want_arr(v, n, t->elt, 1);
    case OP_STENCIL:
    case OP_STENCIL2:
        return stencil(v, n);
    case OP_ACOND:
        if (!want_nkids(v, n, 3) || !(t = exp_kid(v, n, 0))) return false;
        if (!is_bool(t)) return bad(v, n, "the condition is %s, not bool", ts(t, b1));
        if (!(t = acc_kid(v, n, 1)) || !(u = acc_kid(v, n, 2))) return false;
        if (!ty_eq(t, u)) return bad(v, n, "the branches differ: %s and %s", ts(t, b1), ts(u, b2));
        return want_type(v, n, t);
    case OP_AWHILE: {
        if (!want_nkids(v, n, 3) || !(t = acc_kid(v, n, 2))) return false;
        if (!want_type(v, n, t)) return false;
        if (!(r = awhile_lam(v, n, 0, t))) return false;
        if (!is_arr_of(r, ty_bool(), 0)) return bad(v, n, "the condition returns %s, not [bool]^0", ts(r, b1));
        if (!(r = awhile_lam(v, n, 1, t))) return false;
        if (!ty_eq(r, t)) return bad(v, n, "the body returns %s, not %s", ts(r, b1), ts(t, b2));
        return true;
    }
    case OP_ATUPLE:
        if (n->type->kind != TY_ARRAYS || n->type->n != n->n)
            return bad(v, n, "%d components but the type is %s", n->n, ts(n->type, b1));
        for (int i = 0; i < n->n; i++) {
            if (!(t = acc_kid(v, n, i))) return false;
            if (!ty_eq(t, n->type->elts[i]))
                return bad(v, n, "component %d is %s but the type says %s", i, ts(t, b1), ts(n->type->elts[i], b2));
        }
        return true;
    case OP_TRANSFORM: {
        /* backpermute then map: sh, LAM(ix)->source ix, LAM(x)->y, source */
        if (!want_nkids(v, n, 4) || !(t = exp_kid(v, n, 0)) || !(u = arr_kid(v, n, 3))) return false;
        if (!is_index(t)) return bad(v, n, "the shape is %s, not an index", ts(t, b1));
        if (!(r = lam(v, n, 1, 1, &t, false))) return false;
        if (!is_index(r) || r->n != u->rank)
            return bad(v, n, "the index function returns %s for a source %s", ts(r, b1), ts(u, b2));
        if (!(r = lam(v, n, 2, 1, &u->elt, false))) return false;
        return want_arr(v, n, r, t->n);
    }
    case OP_DELAYED: {
        /* extent, index form, linear-index form */
        if (!want_nkids(v, n, 3) || !(t = exp_kid(v, n, 0))) return false;
        if (!is_index(t)) return bad(v, n, "the extent is %s, not an index", ts(t, b1));
        if (!(r = lam(v, n, 1, 1, &t, false))) return false;
        const Type *i64 = ty_i64();
        if (!(u = lam(v, n, 2, 1, &i64, false))) return false;
        if (!ty_eq(r, u))
            return bad(v, n, "the index form gives %s but the linear form %s", ts(r, b1), ts(u, b2));
        return want_arr(v, n, r, t->n);
    }
    case OP_LOOP:
        return loop_node(v, n);
    case OP_COMPUTE:
        if (!want_nkids(v, n, 1) || !(t = arr_kid(v, n, 0))) return false;
        return want_type(v, n, t);
    case OP_SORT:
        if (n->a != 0 && n->a != 1) return bad(v, n, "the order is %d, not 0 or 1", (int)n->a);
        if (n->n != 1 && n->n != 2) return bad(v, n, "%d operands, not 1 or 2", n->n);
        if (!(t = arr_kid(v, n, 0))) return false;
        if (t->rank < 1 || t->elt->kind != TY_SCALAR)
            return bad(v, n, "the keys are %s, not an array of scalars of rank 1 or more", ts(t, b1));
        if (n->n == 1) return want_type(v, n, t);
        if (!(u = arr_kid(v, n, 1))) return false;
        if (u->rank != t->rank) return bad(v, n, "the values %s do not have the keys' rank %d", ts(u, b1), t->rank);
        if (n->type->kind != TY_ARRAYS || n->type->n != 2 || !ty_eq(n->type->elts[0], t) || !ty_eq(n->type->elts[1], u))
            return bad(v, n, "the type %s is not the pair (%s, %s)", ts(n->type, b1), ts(t, b2), ts(u, v->b3));
        return true;
    case OP_APROJ:
        if (!want_nkids(v, n, 1) || !(t = acc_kid(v, n, 0))) return false;
        if (t->kind != TY_ARRAYS) return bad(v, n, "projects from %s, not a tuple of arrays", ts(t, b1));
        if (n->a < 0 || n->a >= t->n) return bad(v, n, "component %d is out of range for %s", n->a, ts(t, b1));
        return want_type(v, n, t->elts[n->a]);
    default:
        return bad(v, n, "not an array operation");
    }
}

static bool chk(V *v, const Node *n, bool arr)
{
    bool delayed_ok = v->delayed_ok;
    v->delayed_ok = false;
    if (!enter(v, n, arr)) return false;
    if (n->op == OP_DELAYED && !delayed_ok)
        return bad(v, n, "a delayed array outside a consumer's operand");
    if (n->op == OP_LET || n->op == OP_ALET) return let_chain(v, n, arr);
    if (v->depth >= VERIFY_MAX_DEPTH) return bad(v, n, "the program is nested more than %d levels deep", VERIFY_MAX_DEPTH);
    v->depth++;
    bool ok = arr ? acc_node(v, n) : n->op == OP_PRIM ? prim_node(v, n) : exp_node(v, n);
    v->depth--;
    return ok;
}

int ir_verify(const Program *p, char *msg, size_t size)
{
    V v;
    memset(&v, 0, sizeof v);
    v.p = p;
    v.msg = msg;
    v.size = size;
    if (msg && size) msg[0] = 0;
    if (!p || !p->root) {
        bad(&v, NULL, "no program");
        return -1;
    }
    if (p->nvars < 0 || (p->nvars > 0 && !p->vartype)) {
        bad(&v, NULL, "nvars is %d but vartype is %s", p->nvars, p->vartype ? "set" : "NULL");
        return -1;
    }
    arena_init(&v.tmp);
    v.bound = ax__calloc((size_t)p->nvars + 1, 1);
    v.scope = ax__calloc((size_t)p->nvars + 1, 1);
    bool ok = v.bound && v.scope ? chk(&v, p->root, true) : nomem(&v);
    free(v.bound);
    free(v.scope);
    free(v.seen);
    free(v.stk);
    arena_free(&v.tmp);
    return ok ? 0 : -1;
}
