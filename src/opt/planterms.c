/*
 * What the planner's steps share (plan_int.h): the extent and elements of
 * a consumer's operand (an array variable, a delayed array, a producer
 * inlined into a pass), analyses of terms (reads of a variable, equal
 * extents, constant terms), the operators the CPU backend knows with
 * their neutral elements, the log of rewrites and the clustering's
 * answers.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plan_int.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ operands */

/* A consumer operand's element at linear position i / index ix, and its
 * extent: an array variable read directly, a delayed array's forms, or a
 * producer inlined into a cluster (map of an array variable, generate). */
Node *pl_opd_extent(PlanRewriteState *s, const Node *o)
{
    if (o->op == OP_DELAYED || o->op == OP_GENERATE) return rw_copy(&s->rw, o->kid[0]);
    if (o->op == OP_MAP) return pl_opd_extent(s, o->kid[1]);
    return rw_op1(&s->rw, OP_SHAPE, rw_tindex(&s->rw, o->type->rank), rw_copy(&s->rw, o));
}

Node *pl_opd_lin(PlanRewriteState *s, const Node *o, Node *i)
{
    if (o->op == OP_DELAYED) return rw_apply1(&s->rw, o->kid[2], i);
    if (o->op == OP_MAP) return rw_apply1(&s->rw, o->kid[0], pl_opd_lin(s, o->kid[1], i));
    if (o->op == OP_GENERATE) {
        Node *sh = rw_copy(&s->rw, o->kid[0]);
        return rw_apply1(&s->rw, o->kid[1], sh ? rw_prim(&s->rw, P_FROMLIN, sh->type, sh, i) : NULL);
    }
    return rw_op2(&s->rw, OP_LINDEX, o->type->elt, rw_copy(&s->rw, o), i);
}

Node *pl_opd_ix(PlanRewriteState *s, const Node *o, Node *ix)
{
    if (o->op == OP_DELAYED) return rw_apply1(&s->rw, o->kid[1], ix);
    if (o->op == OP_MAP) return rw_apply1(&s->rw, o->kid[0], pl_opd_ix(s, o->kid[1], ix));
    if (o->op == OP_GENERATE) return rw_apply1(&s->rw, o->kid[1], ix);
    return rw_op2(&s->rw, OP_INDEX, o->type->elt, rw_copy(&s->rw, o), ix);
}

/* lam's body, its two parameters replaced by copies of a and b (cheap:
 * projections of a variable). */
Node *pl_subst2(PlanRewriteState *s, const Node *lam, Node *a, Node *b)
{
    Node *args[2] = {a, b};
    return rw_subst(&s->rw, lam, 2, args);
}

/* `map (\t -> proj k t) (avar to)`: a member's result as an array, for
 * the uses that need one. */
Node *pl_proj_map(PlanRewriteState *s, int to, int k)
{
    const Type *at = s->rw.p->vartype[to], *et = at->elt->elts[k];
    Rewrite *rw = &s->rw;
    int pid;
    if (!rw_params(rw, 1, &at->elt, &pid)) return NULL;
    return rw_op2(rw, OP_MAP, rw_tarray(rw, et, at->rank), rw_lam1(rw, pid, rw_proj(rw, k, rw_var(rw, pid))),
                  rw_var(rw, to));
}

/* ------------------------------------------------------------ analysis */

/* How often x reads array variable id (1 << 20 past the depth limit:
 * more than any count the steps compare it with). */
int plan_occurrences(const Node *x, int id, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return 1 << 20;
    int c = x->op == OP_AVAR && x->id == id;
    for (int i = 0; i < x->n; i++) c += plan_occurrences(x->kid[i], id, depth + 1);
    return c;
}

/* Structural equality of two binder-free scalar terms (extents).  copies:
 * the rewrites compare copies they made of the terms, where a term with a
 * binder is never equal to another, even to its own copy (so a term is
 * not equal to itself by identity either). */
static bool term_eq(const Node *a, const Node *b, int depth, bool copies)
{
    if (a == b && !copies) return true;
    if (!a || !b || depth > 64 || a->op != b->op || a->n != b->n || a->a != b->a) return false;
    if (!ty_eq(a->type, b->type)) return false;
    switch (a->op) {
    case OP_CONST: if (!sc_eq_bits(a->type->s, a->c, b->c)) return false; break;
    case OP_VAR: case OP_AVAR: if (a->id != b->id) return false; break;
    case OP_USE: if (a->arr != b->arr) return false; break;
    case OP_LET: case OP_ALET: case OP_LAM: return false;
    default: break;
    }
    for (int i = 0; i < a->n; i++)
        if (!term_eq(a->kid[i], b->kid[i], depth + 1, copies)) return false;
    return true;
}

bool pl_same_term(const Node *a, const Node *b, int depth) { return term_eq(a, b, depth, false); }

int plan_opd_array(const Node *o)
{
    if (o->op == OP_AVAR) return o->id;
    const Node *e = o->op == OP_DELAYED ? o->kid[0] : NULL;
    return e && e->op == OP_SHAPE && e->kid[0]->op == OP_AVAR ? e->kid[0]->id : -1;
}

/* The extent expression of an operand, without copying (for comparison). */
bool pl_same_extent(const Node *a, const Node *b)
{
    if (a->type->rank != b->type->rank) return false;
    const Node *ea = a->op == OP_DELAYED ? a->kid[0] : NULL, *eb = b->op == OP_DELAYED ? b->kid[0] : NULL;
    int va = plan_opd_array(a), vb = plan_opd_array(b);
    if (va >= 0 && vb >= 0) return va == vb;
    if (ea && eb) return pl_same_term(ea, eb, 0);
    return false;
}

/* A term made of constants and tuples only (cheap and safe to evaluate per
 * element). */
bool pl_is_const_term(const Node *x, int depth)
{
    if (depth > 16) return false;
    if (x->op == OP_CONST) return true;
    if (x->op != OP_TUPLE && x->op != OP_IXCONS) return false;
    for (int i = 0; i < x->n; i++)
        if (!pl_is_const_term(x->kid[i], depth + 1)) return false;
    return true;
}

/* ------------------------------------------------------------ known operators */

/* The primitive combining leaf k of the operator's two parameters, when
 * the operator is componentwise a commutative primitive (+, *, min, max,
 * bit operations, and/or) of its parameters' leaves; as the CPU backend's
 * cg_lam_comm recognises them. */
static bool leaf_is(const Node *e, const Node *v, int k, int w)
{
    if (w == 1) return e->op == OP_VAR && e->id == v->id;
    return e->op == OP_PROJ && e->kid[0]->op == OP_VAR && e->kid[0]->id == v->id && e->a == k &&
           e->type->kind == TY_SCALAR;
}

static bool known_op(Prim p, ax_scalar sc)
{
    switch (p) {
    case P_ADD: case P_MUL: case P_MIN: case P_MAX: return sc != AX_BOOL;
    case P_BAND: case P_BOR: case P_BXOR: return sc_is_int(sc);
    case P_AND: case P_OR: return sc == AX_BOOL;
    default: return false;
    }
}

static bool leaf_op(const Node *e, const Node *x, const Node *y, int k, int w, Prim *op)
{
    if (e->op != OP_PRIM || e->n != 2 || e->type->kind != TY_SCALAR || !known_op((Prim)e->a, e->type->s))
        return false;
    const Node *a = e->kid[0], *b = e->kid[1];
    if (!((leaf_is(a, x, k, w) && leaf_is(b, y, k, w)) || (leaf_is(a, y, k, w) && leaf_is(b, x, k, w))))
        return false;
    *op = (Prim)e->a;
    return true;
}

/* Per leaf, the operator's primitive; false if it is not componentwise
 * one.  Only scalars and flat tuples of scalars. */
bool pl_known_lam(const Node *f, Prim *ops, int maxw)
{
    if (!f || f->op != OP_LAM || f->nparam != 2) return false;
    const Node *x = f->param[0], *y = f->param[1], *b = f->kid[0];
    int w = x->type->width;
    if (w > maxw) return false;
    if (x->type->kind == TY_SCALAR) return leaf_op(b, x, y, 0, 1, &ops[0]);
    if (x->type->kind != TY_TUPLE || b->op != OP_TUPLE || b->n != w || x->type->n != w) return false;
    for (int k = 0; k < w; k++)
        if (x->type->elts[k]->kind != TY_SCALAR || !leaf_op(b->kid[k], x, y, k, w, &ops[k])) return false;
    return true;
}

/* The neutral element of op on sc (planfilter.c's header says why -0.0
 * and NaN are exactly neutral for floats). */
Node *pl_neutral(PlanRewriteState *s, Prim op, ax_scalar sc)
{
    Scalar v;
    memset(&v, 0, sizeof v);
    bool sg = sc_is_signed(sc);
    int bits = sc_bits(sc);
    switch (op) {
    case P_ADD:
        if (sc == AX_F32) v.f32 = -0.0f;
        else if (sc == AX_F64) v.f64 = -0.0;
        break;
    case P_MUL:
        if (sc == AX_F32) v.f32 = 1;
        else if (sc == AX_F64) v.f64 = 1;
        else v.i = 1;
        break;
    case P_MIN: case P_MAX:
        if (sc == AX_F32) v.f32 = NAN;
        else if (sc == AX_F64) v.f64 = NAN;
        else if (sg) v.i = op == P_MIN ? (int64_t)(~0ull >> (65 - bits)) : -(int64_t)(~0ull >> (65 - bits)) - 1;
        else v.u = op == P_MIN ? ~0ull >> (64 - bits) : 0;
        break;
    case P_BAND: v.u = ~0ull; break;
    case P_AND: v.b = true; break;
    default: break;   /* bor, bxor: 0; or: false */
    }
    return rw_const(&s->rw, sc, v);
}

Node *pl_neutrals(PlanRewriteState *s, const Prim *ops, const Type *t)
{
    if (t->kind == TY_SCALAR) return pl_neutral(s, ops[0], t->s);
    Node *x = rw_node(&s->rw, OP_TUPLE, t->n, t);
    for (int k = 0; x && k < t->n; k++)
        if (!(x->kid[k] = pl_neutral(s, ops[k], t->elts[k]->s))) return NULL;
    return x;
}

/* ------------------------------------------------------------ the log and the clustering */

void pl_note(PlanRewriteState *s, const char *fmt, ...)
{
    s->changed++;
    if (!s->log || s->log->n >= PLAN_LOG_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->log->line[s->log->n++], sizeof s->log->line[0], fmt, ap);
    va_end(ap);
}

void pl_join(PlanRewriteState *s, int64_t a, int64_t b)
{
    if (s->log && s->log->njoin < PLAN_JOIN_MAX) {
        s->log->join[s->log->njoin][0] = a;
        s->log->join[s->log->njoin++][1] = b;
    }
}

void pl_removed(PlanRewriteState *s, int64_t id)
{
    if (s->log && s->log->nremoved < PLAN_JOIN_MAX) s->log->removed[s->log->nremoved++] = id;
}

/* May the loops of let variables (or chain bodies' keys) a and b share a
 * pass?  The clustering decides (ilp.c); without one, yes (greedy). */
int64_t pl_key_of(const PlanRewriteState *s, int64_t a)
{
    return a >= 0 && a < s->cap && s->key[a] != PLAN_KEY_NONE ? s->key[a] : a;
}

bool pl_together(const PlanRewriteState *s, int64_t a, int64_t b)
{
    return plan_together(s->cl, pl_key_of(s, a), pl_key_of(s, b));
}

/* Did the clustering keep a and b apart, a pair it could have merged?
 * (The steps after its rewrites, loops and epilogues, merge only what it
 * did not choose to keep apart.) */
bool pl_apart(const PlanRewriteState *s, int64_t a, int64_t b)
{
    return plan_apart(s->cl, pl_key_of(s, a), pl_key_of(s, b));
}

/* ------------------------------------------------------------ for the loop graph */

bool plan_same_term(const Node *a, const Node *b, bool copies)
{
    return term_eq(a, b, 0, copies);
}
