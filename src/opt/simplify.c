/*
 * The simplifier (docs/ARCHITECTURE.md, "The pipeline"; thesis "Simplification" and
 * "Ordering"): rounds of
 *
 *    CSE (cse.c)  ->  shrinking + constant folding + propagation + algebra
 *
 * until a round changes nothing (at most MAX_ROUNDS).  CSE comes first in
 * each round, as the thesis argues ("Ordering"): shrinking first would
 * inline two equal single-use bindings (two reads of one element, say)
 * into two equal terms, and the let-based CSE would no longer see that
 * they are one.  AXLE_DEBUG=no-cse leaves CSE out;
 * no-simplify (driver/pipeline.c) skips the whole pass.  With AXLE_DEBUG=verify the
 * verifier runs after every sub-pass of every round.
 *
 * Each round is one walk over the whole program (every scalar context:
 * lambda bodies, shapes, fold's initial value, slice and replicate
 * indices, boundary constants, acond's condition, unit's element; and the
 * array level), preceded by a census: the number of occurrences of every
 * variable, and whether an occurrence is inside a lambda (a while loop's
 * functions) or a lazy region (cond branch, second operand of and/or,
 * while body) that its binder is not.  The walk rebuilds the tree in the
 * program's arena (input nodes are never modified), keeping the census up
 * to date as it drops, moves and copies code, so that one round does what
 * the thesis' naive shrink does by re-traversing the reduct (the linear
 * "census" technique of Appel and Jim, "Shrinking lambda expressions in
 * linear time").
 *
 * Shrinking (thesis "Shrinking"; SIMP_SHRINK)
 *  - A let whose variable is unused is dropped, unless its bound term can
 *    fault or loop (opt_op_fallible, transitively).  Our choice: axle's
 *    backends evaluate a let strictly, so a program that divides by zero
 *    in a binding fails even if the binding is unused, and the simplifier
 *    keeps that (faults are never optimised away; only a branch that is
 *    never taken is).
 *  - A let whose variable is used once is inlined at the use, unless the
 *    use is inside a while loop's function (the work would repeat per
 *    iteration), or the bound term can fault and the use is in a lazy
 *    region the let is not in (the fault would go away).  An inlined term
 *    is simplified at its new place.  Inlining may move a faulting term
 *    after another faulting term: then the error reported can change, not
 *    whether there is one.
 *  - Array lets are left to fusion (its let elimination), except that a
 *    dead one whose bound term is trivially pure (a variable, a use, unit
 *    of a pure expression, tuples and projections of those) is dropped,
 *    and one bound to an array variable is substituted.
 *
 * Constant folding (thesis "Constant Folding"; SIMP_FOLD) with prim_eval,
 * the interpreter's own semantics, for every primitive and element type,
 * except:
 *  - an operation that faults (integer division by zero, a shapesize of a
 *    negative or overflowing shape) is left to fault at run time;
 *  - exp, log, sin, cos, tan, the inverse and hyperbolic functions, pow,
 *    logbase and atan2 are never folded: IEEE 754 does not require them to
 *    be correctly rounded, and the CPU backend may use vector math
 *    libraries whose last bit differs from the C library's, so folding
 *    could change results.  Everything else on floats (+ - * /, sqrt,
 *    neg, abs, signum, min, max, comparisons, isnan, isinf, floor, ceiling,
 *    round, truncate, conversions, bitcast) is exactly determined by IEEE
 *    754 and prim.c, and the generated C computes exactly that (it is
 *    compiled with -ffp-contract=off and without -ffast-math).
 *
 * Constant propagation (thesis "Constant Propagation"): a let bound to a
 * constant, a variable, or a (small) tuple or index of constants is
 * substituted; the components of a let bound to any other tuple or index
 * are read through projections (proj i x becomes the i-th component when
 * that is an atom or a small tuple of atoms); proj of a tuple, ixget of an
 * index, a cond with a constant condition (the other branch is dropped
 * unevaluated), an acond with a constant condition, and a while loop whose
 * condition is constantly false are reduced.
 *
 * Algebraic identities and reassociation (thesis "Algebraic
 * Simplification", "Algebraic Reassociation").  Constants go first in
 * commutative operations (add, mul, min, max, and the bit operations), so
 * `x + 1 + 2` becomes `1 + x + 2` and then `3 + x`.  Integers wrap, so
 * their arithmetic is associative and commutative and everything below
 * holds exactly.  Floats follow IEEE 754, so only exact identities are
 * used:
 *    integers                          floats
 *    0 + x = x                         -0.0 + x = x   (0.0 + x is not: -0.0)
 *    x - c = (-c) + x, 0 - x = -x      x - 0.0 = x    (0.0 - x is not -x)
 *    x - x = 0                         (not for floats: NaN, infinities)
 *    1 * x = x, -1 * x = -x            1.0 * x = x
 *    0 * x = 0  (x cannot fault)       (not for floats: NaN, inf, -0.0)
 *    x / 1 = x, x / -1 = -x            x / 1.0 = x, x / 2^k = 2^-k * x
 *    c1 op (c2 op x) = (c1 op c2) op x for op in + * min max and or xor
 *                                      min and max reassociate (prim.c's
 *                                      rule is associative), and NaN min
 *                                      x = x; products never do (below)
 *  and for all types: neg (neg x) = x, not (not x) = x, bnot (bnot x) = x,
 *  abs (abs x) = abs x, abs (neg x) = abs x, min x x = x, shifts by 0,
 *  band/bor/bxor with 0 and all ones, x == x on integers, a conversion to
 *  the operand's own type, and/or with a constant operand (a constant
 *  second operand only drops a first operand that cannot fault), not of an
 *  integer comparison, cond c x x = x (c cannot fault), cond c true false
 *  = c, cond (not c) a b = cond c b a, tuples of all the projections of
 *  one variable.
 *  Every rule is exact for every input (the README promises IEEE
 *  semantics).  Reassociating a product of constants is not, even when a
 *  constant is a power of two: the intermediate product c2*x may overflow
 *  or become subnormal, and scaling by 2^k does not undo either
 *  (2^-10 * (3072 * 1e306) is inf, (2^-10 * 3072) * 1e306 is 3e306).  So
 *  the thesis' example reduces to 2.0 * (21.0 * x) on floats, and to
 *  42 * x on integers, whose products wrap and are associative.
 *  Constants that are NaN are not moved (a NaN's payload would depend on
 *  the operand order).  Dropping an operation that would only quiet a
 *  signalling NaN (1.0 * x) keeps the NaN signalling; every other result
 *  is bit for bit the same.
 *
 * Refused on purpose: x + 0.0 -> x, x * 0 -> 0, x - x -> 0 and 0 - x -> -x
 * on floats; float reassociation of +, - and *; x * -1 -> -x on floats (NaN's
 * sign); strength reduction (left to the C compiler, thesis); folding the
 * shape of a use (the generated code would be specialised to one size and
 * the kernel cache would miss for every other).
 *
 * Cost: each round is linear in the program (the census, the walk, and
 * CSE's hash-consing), and a program takes a few rounds (blackscholes:
 * see tests/test_simplify.c).  Node.num carries, on the nodes this pass
 * made, whether the node can fault or loop (FALLIBLE).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opt.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rounds of CSE + simplification; programs settle in two or three. */
#define MAX_ROUNDS 8
/* Node.num on nodes this pass made: it can fault or loop (transitively). */
#define FALLIBLE 1
/* Largest tuple (in nodes) that a projection may copy out of a let. */
#define SMALL_NODES 16
/* Budget of the structural comparison of cond's branches. */
#define SAME_BUDGET 256

/* Census flags per variable. */
enum { V_IN_LAM = 1, V_IN_LAZY = 2, V_BFALL = 4 };

typedef struct Frame {
    const Node *let;      /* the input let */
    Node *b;              /* its simplified bound term */
} Frame;

typedef struct SimplifyState {
    ax_ctx *cx;
    Program *p;
    unsigned what;        /* SIMP_SHRINK | SIMP_FOLD */
    bool changed;
    bool failed;          /* stop: out of memory (an error on cx) or too deep */
    bool deep;            /* gave up on a program nested too deeply */
    int *count;           /* occurrences of each variable now */
    unsigned char *vflag; /* V_* */
    int *blam, *blazy;    /* lambda and lazy depth at each binder */
    int lam, lazy;        /* census: current depths */
    Node **sub;           /* what a variable is replaced by (an atom or
                             a tuple of constants: copied per use) */
    const Node **pending; /* the bound term to inline at the single use */
    Node **known;         /* the tuple or index a let variable holds */
    Frame *stk;           /* let chains being rebuilt */
    int nstk, capstk;
} SimplifyState;

static void *nomem(SimplifyState *s)
{
    if (!s->failed) ctx_error(s->cx, AX_ERR_NOMEM, "simplify: out of memory");
    s->failed = true;
    return NULL;
}

/* Too deep to walk safely: the round gives up and leaves the program as
 * it is (only a malformed program gets here; see OPT_MAX_DEPTH). */
static void *too_deep(SimplifyState *s)
{
    s->failed = s->deep = true;
    return NULL;
}

/* ================================================================ census */

static void use_var(SimplifyState *s, int id)
{
    s->count[id]++;
    if (s->lam > s->blam[id]) s->vflag[id] |= V_IN_LAM;
    if (s->lazy > s->blazy[id]) s->vflag[id] |= V_IN_LAZY;
}

static void bind_var(SimplifyState *s, int id, bool fallible)
{
    s->count[id] = 0;
    s->vflag[id] = fallible ? V_BFALL : 0;
    s->blam[id] = s->lam;
    s->blazy[id] = s->lazy;
}

/* Counts the occurrences of every variable below n; returns whether n can
 * fault or loop. */
static bool census(SimplifyState *s, const Node *n, int depth)
{
    if (depth > OPT_MAX_DEPTH) return too_deep(s), true;
    bool f = false;
    for (;;) {
        switch (n->op) {
        case OP_VAR: case OP_AVAR:
            use_var(s, n->id);
            return f;
        case OP_CONST: case OP_USE:
            return f;
        case OP_LET: case OP_ALET: {
            bool bf = census(s, n->kid[0], depth + 1);
            bind_var(s, n->id, bf);
            f |= bf;
            n = n->kid[1];
            continue;
        }
        case OP_LAM:
            s->lam++;
            for (int i = 0; i < n->nparam; i++) bind_var(s, n->param[i]->id, false);
            f |= census(s, n->kid[0], depth + 1);
            s->lam--;
            return f;
        default: {
            f |= opt_op_fallible(s->cx, n);
            bool scalar = !op_is_array(n->op);
            for (int i = 0; i < n->n; i++) {
                bool lz = scalar && opt_lazy_operand(n, i);
                s->lazy += lz;
                f |= census(s, n->kid[i], depth + 1);
                s->lazy -= lz;
            }
            return f;
        }
        }
    }
}

/* Takes the code below n out of the program: its variables lose these
 * occurrences (a single-use binding waiting to be inlined there goes too). */
static void drop(SimplifyState *s, const Node *n, int depth)
{
    if (depth > OPT_MAX_DEPTH) { too_deep(s); return; }
    for (;;) {
        switch (n->op) {
        case OP_VAR: case OP_AVAR: {
            int id = n->id;
            s->count[id]--;
            const Node *t = s->pending[id];
            if (t && s->count[id] <= 0) {
                s->pending[id] = NULL;
                n = t;
                continue;
            }
            return;
        }
        case OP_LAM:
            n = n->kid[0];
            continue;
        default:
            if (n->n == 0) return;
            for (int i = 0; i < n->n - 1; i++) drop(s, n->kid[i], depth + 1);
            n = n->kid[n->n - 1];   /* the last operand (a let's body) in the loop */
            continue;
        }
    }
}

/* ========================================================== construction */

static Node *fresh(SimplifyState *s, Op op, int n, const Type *t)
{
    Node *x = node_new(&s->p->arena, op, n, t);
    if (!x) return nomem(s);
    x->cx = s->cx;
    return x;
}

/* Records whether x can fault or loop (its operands are final). */
static Node *finish(SimplifyState *s, Node *x)
{
    if (!x) return NULL;
    bool f = !op_is_array(x->op) && opt_op_fallible(s->cx, x);
    int nk = x->op == OP_LAM ? 1 : x->n;
    for (int i = 0; i < nk; i++)
        if (x->kid[i]->num & FALLIBLE) f = true;
    x->num = f ? FALLIBLE : 0;
    return x;
}

static bool fallible(const Node *x) { return (x->num & FALLIBLE) != 0; }

static Node *mk_const(SimplifyState *s, const Type *t, Scalar v)
{
    Node *x = fresh(s, OP_CONST, 0, t);
    if (x) x->c = sc_norm(v, t->s);
    return x;
}

static Node *mk_var(SimplifyState *s, Op op, int id, const Type *t)
{
    Node *x = fresh(s, op, 0, t);
    if (x) x->id = id;
    return x;
}

static Node *mk_prim(SimplifyState *s, Prim p, const Type *t, Node *a, Node *b)
{
    if (!a || (b == NULL) != (prim_info[p].arity == 1)) return NULL;
    Node *x = fresh(s, OP_PRIM, b ? 2 : 1, t);
    if (!x) return NULL;
    x->a = p;
    x->kid[0] = a;
    if (b) x->kid[1] = b;
    return finish(s, x);
}

/* A copy of an atom or small tuple of atoms; each variable in it gains an
 * occurrence. */
static Node *copy_small(SimplifyState *s, const Node *n)
{
    switch (n->op) {
    case OP_CONST: return mk_const(s, n->type, n->c);
    case OP_VAR: case OP_AVAR:
        s->count[n->id]++;
        return mk_var(s, n->op, n->id, n->type);
    default: {
        Node *x = fresh(s, n->op, n->n, n->type);
        if (!x) return NULL;
        x->a = n->a;
        for (int i = 0; i < n->n; i++)
            if (!(x->kid[i] = copy_small(s, n->kid[i]))) return NULL;
        return finish(s, x);
    }
    }
}

/* An atom, or a tuple / index of small values, of at most *budget nodes. */
static bool small_within(const Node *n, int *budget)
{
    if (--*budget < 0) return false;
    if (opt_is_atom(n)) return true;
    if (n->op != OP_TUPLE && n->op != OP_IXCONS) return false;
    for (int i = 0; i < n->n; i++)
        if (!small_within(n->kid[i], budget)) return false;
    return true;
}

static bool small(const Node *n)
{
    int budget = SMALL_NODES;
    return small_within(n, &budget);
}

/* A tuple or index of constants (nested), small enough to copy. */
static bool const_value(const Node *n)
{
    int budget = SMALL_NODES;
    if (n->op != OP_TUPLE && n->op != OP_IXCONS) return false;
    if (!small_within(n, &budget)) return false;
    for (int i = 0; i < n->n; i++)
        if (n->kid[i]->op != OP_CONST && !const_value(n->kid[i])) return false;
    return true;
}

/* Structurally equal (within a budget of nodes; false beyond it). */
static bool same_tree(const Node *a, const Node *b, int *budget)
{
    if (--*budget < 0) return false;
    if (a->op != b->op || a->n != b->n || a->a != b->a || !ty_eq(a->type, b->type)) return false;
    switch (a->op) {
    case OP_CONST: return sc_eq_bits(a->type->s, a->c, b->c);
    case OP_VAR: case OP_AVAR: return a->id == b->id;
    case OP_PROJ: case OP_IXGET: case OP_PRIM: case OP_TUPLE: case OP_IXCONS: case OP_COND:
    case OP_INDEX: case OP_LINDEX: case OP_SHAPE:
        for (int i = 0; i < a->n; i++)
            if (!same_tree(a->kid[i], b->kid[i], budget)) return false;
        return true;
    default:
        return false;   /* binders: never equal */
    }
}

/* ========================================================= constant views */

static bool isc(const Node *k) { return k->op == OP_CONST; }

static ax_scalar sk(const Node *k) { return k->type->kind == TY_SCALAR ? k->type->s : AX_I64; }

static bool truth(const Node *k)
{
    Scalar z;
    z.u = 0;
    return !sc_eq_bits(AX_BOOL, k->c, z);
}

/* An integer constant equal to v (wrapped to its type: -1 is all ones). */
static bool is_int(const Node *k, int64_t v)
{
    if (!isc(k) || !sc_is_int(sk(k))) return false;
    Scalar w;
    w.i = v;
    return sc_eq_bits(sk(k), k->c, sc_norm(w, sk(k)));
}

static double fval(const Node *k) { return sk(k) == AX_F32 ? (double)k->c.f32 : k->c.f64; }

/* A float constant with exactly the bits of v (so -0.0 is not 0.0). */
static bool is_f(const Node *k, double v)
{
    if (!isc(k) || !sc_is_float(sk(k))) return false;
    Scalar w;
    w.u = 0;
    if (sk(k) == AX_F32) w.f32 = (float)v;
    else w.f64 = v;
    return sc_eq_bits(sk(k), k->c, w);
}

static bool is_nan_c(const Node *k) { return isc(k) && sc_is_float(sk(k)) && isnan(fval(k)); }

static bool normal_in(ax_scalar s, double v)
{
    return isfinite(v) && fabs(v) >= (s == AX_F32 ? (double)FLT_MIN : DBL_MIN);
}

/* A float constant +-2^k, itself normal. */
static bool pow2(const Node *k)
{
    if (!isc(k) || !sc_is_float(sk(k))) return false;
    double v = fval(k);
    int e;
    return normal_in(sk(k), v) && frexp(fabs(v), &e) == 0.5;
}

static bool is_prim(const Node *k, Prim p) { return k->op == OP_PRIM && k->a == (int)p; }

/* A binary primitive p with a constant first operand. */
static bool is_cprim(const Node *k, Prim p) { return is_prim(k, p) && k->n == 2 && isc(k->kid[0]); }

static bool same_var(const Node *a, const Node *b)
{
    return a->op == OP_VAR && b->op == OP_VAR && a->id == b->id;
}

/* p applied to two constants (or one): a new constant, or NULL if it
 * faults. */
static Node *eval_c(SimplifyState *s, Prim p, const Type *t, const Node *a, const Node *b)
{
    const Type *at[2] = {a->type, b ? b->type : NULL};
    Scalar args[2], out[AX_MAX_RANK];
    args[0] = a->c;
    if (b) args[1] = b->c;
    memset(out, 0, sizeof out);
    if (prim_eval(p, at, args, t, out) != 0) return NULL;
    return mk_const(s, t, out[0]);
}

/* ============================================================== folding */

/* Folding these could differ from the backends' math libraries. */
static bool foldable(Prim p)
{
    switch (p) {
    case P_EXP: case P_LOG: case P_SIN: case P_COS: case P_TAN: case P_ASIN: case P_ACOS: case P_ATAN:
    case P_SINH: case P_COSH: case P_TANH: case P_ASINH: case P_ACOSH: case P_ATANH:
    case P_POW: case P_LOGBASE: case P_ATAN2:
        return false;
    default:
        return true;
    }
}

static Node *fold_prim(SimplifyState *s, Node *x, int depth);

/* A rewritten primitive, simplified again (each rule makes the term
 * smaller or moves a constant outwards, so this ends). */
static Node *refold(SimplifyState *s, Node *x, int depth)
{
    s->changed = true;
    if (!x) return s->failed ? NULL : nomem(s);
    if (depth > OPT_MAX_DEPTH) return too_deep(s);
    return fold_prim(s, x, depth + 1);
}

#define DONE(e) do { s->changed = true; return (e); } while (0)

/* Comparisons and their negations, for not (a < b) = (a >= b) on
 * integers. */
static Prim negated_cmp(Prim p)
{
    switch (p) {
    case P_EQ: return P_NE;
    case P_NE: return P_EQ;
    case P_LT: return P_GE;
    case P_LE: return P_GT;
    case P_GT: return P_LE;
    case P_GE: return P_LT;
    default: return P_NPRIM;
    }
}

/* The algebraic rules of the header comment, on a primitive whose
 * operands are simplified and not all constant. */
static Node *algebra(SimplifyState *s, Node *x, int depth)
{
    Prim p = (Prim)x->a;
    Node *k0 = x->kid[0], *k1 = x->n > 1 ? x->kid[1] : NULL;
    const Type *t = x->type;
    ax_scalar s0 = sk(k0);
    bool isint = sc_is_int(s0), isflt = sc_is_float(s0);

    /* Commutative operations: the constant first. */
    if ((p == P_ADD || p == P_MUL || p == P_MIN || p == P_MAX || p == P_BAND || p == P_BOR || p == P_BXOR) &&
        isc(k1) && !isc(k0) && !(isflt && (p == P_ADD || p == P_MUL) && is_nan_c(k1))) {
        x->kid[0] = k1;
        x->kid[1] = k0;
        k0 = x->kid[0];
        k1 = x->kid[1];
        s->changed = true;
    }

    switch (p) {
    case P_ADD:
        if (isint) {
            if (is_int(k0, 0)) DONE(k1);
            if (isc(k0) && is_cprim(k1, P_ADD))    /* c1 + (c2 + y) = (c1+c2) + y */
                return refold(s, mk_prim(s, P_ADD, t, eval_c(s, P_ADD, t, k0, k1->kid[0]), k1->kid[1]), depth);
            if (isc(k0) && is_cprim(k1, P_SUB))    /* c1 + (c2 - y) = (c1+c2) - y */
                return refold(s, mk_prim(s, P_SUB, t, eval_c(s, P_ADD, t, k0, k1->kid[0]), k1->kid[1]), depth);
        } else if (isflt && is_f(k0, -0.0)) {
            DONE(k1);
        }
        break;
    case P_SUB:
        if (isint) {
            if (isc(k1))                            /* y - c = (-c) + y */
                return refold(s, mk_prim(s, P_ADD, t, eval_c(s, P_NEG, t, k1, NULL), k0), depth);
            if (is_int(k0, 0)) return refold(s, mk_prim(s, P_NEG, t, k1, NULL), depth);
            if (same_var(k0, k1)) {
                drop(s, k0, depth);
                drop(s, k1, depth);
                DONE(mk_const(s, t, (Scalar){.u = 0}));
            }
            if (isc(k0) && is_cprim(k1, P_ADD))    /* c1 - (c2 + y) = (c1-c2) - y */
                return refold(s, mk_prim(s, P_SUB, t, eval_c(s, P_SUB, t, k0, k1->kid[0]), k1->kid[1]), depth);
            if (isc(k0) && is_cprim(k1, P_SUB))    /* c1 - (c2 - y) = (c1-c2) + y */
                return refold(s, mk_prim(s, P_ADD, t, eval_c(s, P_SUB, t, k0, k1->kid[0]), k1->kid[1]), depth);
        } else if (isflt && is_f(k1, 0.0)) {
            DONE(k0);                               /* y - 0.0 = y, also for y = -0.0 */
        }
        break;
    case P_MUL:
        if (isint) {
            if (is_int(k0, 0) && !fallible(k1)) {
                drop(s, k1, depth);
                DONE(k0);
            }
            if (is_int(k0, 1)) DONE(k1);
            if (is_int(k0, -1)) return refold(s, mk_prim(s, P_NEG, t, k1, NULL), depth);
            if (isc(k0) && is_cprim(k1, P_MUL))    /* c1 * (c2 * y) = (c1*c2) * y */
                return refold(s, mk_prim(s, P_MUL, t, eval_c(s, P_MUL, t, k0, k1->kid[0]), k1->kid[1]), depth);
        } else if (isflt) {
            if (is_f(k0, 1.0)) DONE(k1);
            /* No c1 * (c2 * y) = (c1*c2) * y, not even for powers of two:
             * c2*y may overflow (2^-10 * (3072 * 1e306) is inf, 3e306
             * reassociated) or lose bits as a subnormal, and scaling does
             * not undo either. */
        }
        break;
    case P_DIV:
        if (isflt) {
            if (is_f(k1, 1.0)) DONE(k0);
            if (pow2(k1)) {
                /* y / 2^k = 2^-k * y exactly (one rounding of one value) */
                Scalar one;
                one.u = 0;
                if (s0 == AX_F32) one.f32 = 1.0f;
                else one.f64 = 1.0;
                Node *c1 = mk_const(s, t, one);
                Node *r = c1 ? eval_c(s, P_DIV, t, c1, k1) : NULL;
                if (!r) return nomem(s);
                if (pow2(r)) return refold(s, mk_prim(s, P_MUL, t, r, k0), depth);
            }
            break;
        }
        /* integer division: */
        /* fall through */
    case P_QUOT: case P_IDIV:
        if (isint) {
            if (is_int(k1, 1)) DONE(k0);
            if (sc_is_signed(s0) && is_int(k1, -1)) return refold(s, mk_prim(s, P_NEG, t, k0, NULL), depth);
        }
        break;
    case P_REM: case P_MOD:
        if ((is_int(k1, 1) || (sc_is_signed(s0) && is_int(k1, -1))) && !fallible(k0)) {
            drop(s, k0, depth);
            DONE(mk_const(s, t, (Scalar){.u = 0}));
        }
        break;
    case P_MIN: case P_MAX:
        if (isflt && is_nan_c(k0)) DONE(k1);   /* prim.c: NaN loses */
        if (isc(k0) && is_cprim(k1, p))        /* associative, commutative */
            return refold(s, mk_prim(s, p, t, eval_c(s, p, t, k0, k1->kid[0]), k1->kid[1]), depth);
        if (same_var(k0, k1)) {
            drop(s, k1, depth);
            DONE(k0);
        }
        break;
    case P_BAND: case P_BOR: case P_BXOR:
        if (is_int(k0, 0)) {
            if (p != P_BAND) DONE(k1);
            if (!fallible(k1)) {
                drop(s, k1, depth);
                DONE(k0);
            }
        }
        if (is_int(k0, -1)) {
            if (p == P_BAND) DONE(k1);
            if (p == P_BOR && !fallible(k1)) {
                drop(s, k1, depth);
                DONE(k0);
            }
        }
        if (isc(k0) && is_cprim(k1, p))
            return refold(s, mk_prim(s, p, t, eval_c(s, p, t, k0, k1->kid[0]), k1->kid[1]), depth);
        if (same_var(k0, k1)) {
            drop(s, k1, depth);
            if (p != P_BXOR) DONE(k0);
            drop(s, k0, depth);
            DONE(mk_const(s, t, (Scalar){.u = 0}));
        }
        break;
    case P_SHL: case P_SHR: case P_ROTL: case P_ROTR:
        if (is_int(k1, 0)) DONE(k0);
        break;
    case P_NEG:
        if (is_prim(k0, P_NEG)) DONE(k0->kid[0]);
        break;
    case P_ABS:
        if (is_prim(k0, P_ABS)) DONE(k0);
        /* abs (neg x) = abs x for signed integers (both wrap INT_MIN to
         * itself) and floats, but not for unsigned types, where abs is the
         * identity and neg wraps. */
        if (is_prim(k0, P_NEG) && (t->s == AX_F32 || t->s == AX_F64 || (t->s >= AX_I8 && t->s <= AX_I64)))
            return refold(s, mk_prim(s, P_ABS, t, k0->kid[0], NULL), depth);
        break;
    case P_BNOT:
        if (is_prim(k0, P_BNOT)) DONE(k0->kid[0]);
        break;
    case P_NOT:
        if (is_prim(k0, P_NOT)) DONE(k0->kid[0]);
        if (k0->op == OP_PRIM && negated_cmp((Prim)k0->a) != P_NPRIM) {
            /* not (a < b) = a >= b on integers and bools; on floats only
             * for eq/ne (NaN compares false either way) */
            Prim q = negated_cmp((Prim)k0->a);
            ax_scalar cs = sk(k0->kid[0]);
            if (!sc_is_float(cs) || k0->a == P_EQ || k0->a == P_NE)
                return refold(s, mk_prim(s, q, t, k0->kid[0], k0->kid[1]), depth);
        }
        break;
    case P_EQ: case P_NE: case P_LT: case P_LE: case P_GT: case P_GE:
        if (!isflt && same_var(k0, k1)) {
            drop(s, k0, depth);
            drop(s, k1, depth);
            Scalar v;
            v.u = 0;
            v.b = p == P_EQ || p == P_LE || p == P_GE;
            DONE(mk_const(s, t, v));
        }
        break;
    case P_AND: case P_OR: {
        bool unit = p == P_AND;    /* true and y = y; false or y = y */
        if (isc(k0)) {
            if (truth(k0) == unit) DONE(k1);
            drop(s, k1, depth);    /* never evaluated */
            DONE(k0);
        }
        if (isc(k1)) {
            if (truth(k1) == unit) DONE(k0);
            if (!fallible(k0)) {
                drop(s, k0, depth);
                DONE(k1);
            }
        }
        if (same_var(k0, k1)) {
            drop(s, k1, depth);
            DONE(k0);
        }
        break;
    }
    case P_CVT: case P_BITCAST:
        if (ty_eq(k0->type, t)) DONE(k0);
        break;
    case P_FROMLIN:
        /* fromLinear of a vector's shape is ix(i) whatever the shape (prim.c;
         * a fused producer's linear form over a vector): the read it feeds
         * is then at a known position (cgen/exp.c's range facts) */
        if (k0->type->kind == TY_INDEX && k0->type->n == 1 && !fallible(k0)) {
            Node *ix = fresh(s, OP_IXCONS, 1, t);
            if (!ix) return NULL;
            ix->kid[0] = k1;
            drop(s, k0, depth);
            DONE(finish(s, ix));
        }
        break;
    default:
        break;
    }
    return x;
}

/* A primitive with simplified operands: folded when they are constants,
 * else rewritten by the algebraic rules. */
static __attribute__((noinline)) Node *fold_prim(SimplifyState *s, Node *x, int depth)
{
    if (!x) return NULL;
    Prim p = (Prim)x->a;
    if (foldable(p)) {
        /* shapes are indices of constants, laid out leaf after leaf */
        Scalar args[2 * AX_MAX_RANK], out[AX_MAX_RANK];
        const Type *at[2] = {NULL, NULL};
        int off = 0;
        bool all = x->n <= 2;
        for (int i = 0; all && i < x->n; i++) {
            const Node *k = x->kid[i];
            at[i] = k->type;
            if (k->op == OP_CONST) {
                args[off++] = k->c;
            } else if (k->op == OP_IXCONS && k->n <= AX_MAX_RANK) {
                for (int j = 0; all && j < k->n; j++) {
                    if (k->kid[j]->op != OP_CONST) all = false;
                    else args[off++] = k->kid[j]->c;
                }
            } else {
                all = false;
            }
        }
        if (all) {
            memset(out, 0, sizeof out);
            /* A fault (division by zero, a bad shape) is left to happen
             * at run time. */
            if (prim_eval(p, at, args, x->type, out) != 0) return x;
            s->changed = true;
            if (x->type->kind == TY_SCALAR) return mk_const(s, x->type, out[0]);
            Node *ix = fresh(s, OP_IXCONS, x->type->n, x->type);
            for (int j = 0; ix && j < x->type->n; j++)
                if (!(ix->kid[j] = mk_const(s, ty_i64(), out[j]))) return NULL;
            return finish(s, ix);
        }
    }
    return algebra(s, x, depth);
}

/* ================================================================ walks */

static Node *simp(SimplifyState *s, const Node *n, int depth);
static Node *simp_acc(SimplifyState *s, const Node *n, int depth);

/* A function: fresh parameter nodes (same variables), the body simplified. */
static Node *simp_lam(SimplifyState *s, const Node *l, int depth)
{
    Node *x = fresh(s, OP_LAM, 1, l->type);
    if (!x) return NULL;
    x->nparam = l->nparam;
    if (l->nparam > 0) {
        if (!(x->param = arena_alloc(&s->p->arena, sizeof *x->param * (size_t)l->nparam))) return nomem(s);
        for (int i = 0; i < l->nparam; i++)
            if (!(x->param[i] = mk_var(s, l->param[i]->op, l->param[i]->id, l->param[i]->type))) return NULL;
    }
    const Node *b = l->kid[0];
    if (!(x->kid[0] = op_is_array(b->op) ? simp_acc(s, b, depth + 1) : simp(s, b, depth + 1))) return NULL;
    return finish(s, x);
}

static Node *simp_var(SimplifyState *s, const Node *n, int depth)
{
    int id = n->id;
    const Node *t = s->pending[id];
    if (t) {
        /* the single use of a let: its bound term, simplified here */
        s->pending[id] = NULL;
        s->count[id]--;
        return simp(s, t, depth + 1);
    }
    if (s->sub[id]) {
        s->count[id]--;
        return copy_small(s, s->sub[id]);
    }
    return mk_var(s, n->op, id, n->type);
}

static bool push_frame(SimplifyState *s, const Node *let, Node *b)
{
    if (s->nstk == s->capstk) {
        int cap = s->capstk ? 2 * s->capstk : 64;
        Frame *f = ax__realloc(s->stk, sizeof *f * (size_t)cap);
        if (!f) return nomem(s), false;
        s->stk = f;
        s->capstk = cap;
    }
    s->stk[s->nstk++] = (Frame){let, b};
    return true;
}

/* A chain of lets (in a loop: chains can be long). */
static Node *simp_let(SimplifyState *s, const Node *n, int depth)
{
    bool shrink = s->what & SIMP_SHRINK, fold = s->what & SIMP_FOLD;
    int base = s->nstk;
    const Node *x = n;
    for (; x->op == OP_LET; x = x->kid[1]) {
        int id = x->id;
        unsigned fl = s->vflag[id];
        if (shrink && s->count[id] == 0 && !(fl & V_BFALL)) {
            drop(s, x->kid[0], depth + 1);          /* dead */
            s->changed = true;
            continue;
        }
        if (shrink && s->count[id] == 1 && !(fl & V_IN_LAM) && (!(fl & V_IN_LAZY) || !(fl & V_BFALL))) {
            s->pending[id] = x->kid[0];             /* used once: inlined there */
            s->changed = true;
            continue;
        }
        Node *b = simp(s, x->kid[0], depth + 1);
        if (!b) { s->nstk = base; return NULL; }
        if (fold && (opt_is_atom(b) || const_value(b))) {
            /* a constant, a variable or a tuple or index of constants:
             * substituted (b is the template of the copies) */
            s->sub[id] = b;
            if (b->op == OP_VAR) s->count[b->id]--;
            s->changed = true;
            continue;
        }
        if (fold && (b->op == OP_TUPLE || b->op == OP_IXCONS)) s->known[id] = b;
        if (!push_frame(s, x, b)) { s->nstk = base; return NULL; }
    }
    Node *body = simp(s, x, depth + 1);
    while (s->nstk > base) {
        Frame f = s->stk[--s->nstk];
        if (!body) continue;
        int id = f.let->id;
        if (shrink && s->count[id] == 0 && !fallible(f.b)) {
            drop(s, f.b, depth + 1);                /* died while its body was simplified */
            s->changed = true;
            continue;
        }
        Node *l = fresh(s, OP_LET, 2, body->type);
        if (!l) { body = NULL; continue; }
        l->id = id;
        l->kid[0] = f.b;
        l->kid[1] = body;
        body = finish(s, l);
    }
    return body;
}

/* proj / ixget: of a tuple or index it is the component; of a let
 * variable holding one, the component when that is small. */
static Node *simp_proj(SimplifyState *s, const Node *n, int depth)
{
    Node *t = simp(s, n->kid[0], depth + 1);
    if (!t) return NULL;
    if (s->what & SIMP_FOLD) {
        Op want = n->op == OP_PROJ ? OP_TUPLE : OP_IXCONS;
        if (t->op == want && n->a >= 0 && n->a < t->n) {
            bool pure = true;
            for (int i = 0; i < t->n; i++)
                if (i != n->a && fallible(t->kid[i])) pure = false;
            if (pure) {
                for (int i = 0; i < t->n; i++)
                    if (i != n->a) drop(s, t->kid[i], depth + 1);
                DONE(t->kid[n->a]);
            }
        } else if (t->op == OP_VAR && s->known[t->id] && s->known[t->id]->op == want) {
            const Node *c = s->known[t->id]->kid[n->a];
            if (small(c)) {
                s->count[t->id]--;
                DONE(copy_small(s, c));
            }
        }
    }
    Node *x = fresh(s, n->op, 1, n->type);
    if (!x) return NULL;
    x->a = n->a;
    x->kid[0] = t;
    return finish(s, x);
}

static Node *simp_cond(SimplifyState *s, const Node *n, int depth)
{
    bool fold = s->what & SIMP_FOLD;
    Node *c = simp(s, n->kid[0], depth + 1);
    if (!c) return NULL;
    if (fold && isc(c)) {
        /* the branch not taken is never evaluated: dropped unsimplified */
        bool tk = truth(c);
        drop(s, n->kid[tk ? 2 : 1], depth + 1);
        s->changed = true;
        return simp(s, n->kid[tk ? 1 : 2], depth + 1);
    }
    Node *a = simp(s, n->kid[1], depth + 1), *b = a ? simp(s, n->kid[2], depth + 1) : NULL;
    if (!b) return NULL;
    if (fold) {
        int budget = SAME_BUDGET;
        if (!fallible(c) && same_tree(a, b, &budget)) {
            drop(s, c, depth + 1);
            drop(s, b, depth + 1);
            DONE(a);
        }
        if (sk(a) == AX_BOOL && a->type->kind == TY_SCALAR && isc(a) && isc(b) && truth(a) != truth(b)) {
            if (truth(a)) DONE(c);
            return refold(s, mk_prim(s, P_NOT, a->type, c, NULL), depth);
        }
        if (is_prim(c, P_NOT)) {
            Node *t = a;
            c = c->kid[0];
            a = b;
            b = t;
            s->changed = true;
        }
    }
    Node *x = fresh(s, OP_COND, 3, n->type);
    if (!x) return NULL;
    x->kid[0] = c;
    x->kid[1] = a;
    x->kid[2] = b;
    return finish(s, x);
}

static Node *simp_while(SimplifyState *s, const Node *n, int depth)
{
    Node *cl = simp_lam(s, n->kid[0], depth + 1);
    Node *bl = cl ? simp_lam(s, n->kid[1], depth + 1) : NULL;
    Node *init = bl ? simp(s, n->kid[2], depth + 1) : NULL;
    if (!init) return NULL;
    if ((s->what & SIMP_FOLD) && isc(cl->kid[0]) && !truth(cl->kid[0])) {
        drop(s, bl, depth + 1);                     /* the body never runs */
        DONE(init);
    }
    Node *x = fresh(s, OP_WHILE, 3, n->type);
    if (!x) return NULL;
    x->kid[0] = cl;
    x->kid[1] = bl;
    x->kid[2] = init;
    return finish(s, x);
}

/* (proj 0 v, ..., proj n-1 v) = v, and the same for indices. */
static Node *eta(SimplifyState *s, Node *x)
{
    Op want = x->op == OP_TUPLE ? OP_PROJ : OP_IXGET;
    if (x->n < 1) return x;
    const Node *v = NULL;
    for (int i = 0; i < x->n; i++) {
        const Node *k = x->kid[i];
        if (k->op != want || k->a != i || k->kid[0]->op != OP_VAR) return x;
        if (v && k->kid[0]->id != v->id) return x;
        v = k->kid[0];
    }
    if (!ty_eq(v->type, x->type)) return x;
    int id = v->id;
    const Type *t = v->type;
    for (int i = 0; i < x->n; i++) drop(s, x->kid[i], 0);
    s->count[id]++;
    DONE(mk_var(s, OP_VAR, id, t));
}

static Node *simp(SimplifyState *s, const Node *n, int depth)
{
    if (s->failed) return NULL;
    if (depth > OPT_MAX_DEPTH) return too_deep(s);
    switch (n->op) {
    case OP_CONST: return mk_const(s, n->type, n->c);
    case OP_VAR: return simp_var(s, n, depth);
    case OP_AVAR: return simp_acc(s, n, depth);
    case OP_LET: return simp_let(s, n, depth);
    case OP_LAM: return simp_lam(s, n, depth);
    case OP_PROJ: case OP_IXGET: return simp_proj(s, n, depth);
    case OP_COND: return simp_cond(s, n, depth);
    case OP_WHILE: return simp_while(s, n, depth);
    default: {
        Node *x = fresh(s, n->op, n->n, n->type);
        if (!x) return NULL;
        x->a = n->a;
        for (int i = 0; i < n->n; i++)
            if (!(x->kid[i] = simp(s, n->kid[i], depth + 1))) return NULL;
        finish(s, x);
        if (!(s->what & SIMP_FOLD)) return x;
        if (n->op == OP_PRIM) return fold_prim(s, x, depth);
        if (n->op == OP_TUPLE || n->op == OP_IXCONS) return eta(s, x);
        return x;
    }
    }
}

/* ---------------------------------------------------------- array level */

/* Certainly cannot fault or run out of memory (conservative). */
static bool trivially_pure(const Node *a)
{
    switch (a->op) {
    case OP_AVAR: case OP_USE: return true;
    case OP_UNIT: return !fallible(a->kid[0]);
    case OP_APROJ: return trivially_pure(a->kid[0]);
    case OP_ATUPLE:
        for (int i = 0; i < a->n; i++)
            if (!trivially_pure(a->kid[i])) return false;
        return true;
    default: return false;
    }
}

/* A chain of array lets (in a loop). */
static Node *simp_alet(SimplifyState *s, const Node *n, int depth)
{
    int base = s->nstk;
    const Node *x = n;
    for (; x->op == OP_ALET; x = x->kid[1]) {
        Node *b = simp_acc(s, x->kid[0], depth + 1);
        if (!b) { s->nstk = base; return NULL; }
        if ((s->what & SIMP_FOLD) && b->op == OP_AVAR) {
            s->sub[x->id] = b;                      /* let a1 = a0: a1 is a0 */
            s->count[b->id]--;
            s->changed = true;
            continue;
        }
        if (!push_frame(s, x, b)) { s->nstk = base; return NULL; }
    }
    Node *body = simp_acc(s, x, depth + 1);
    while (s->nstk > base) {
        Frame f = s->stk[--s->nstk];
        if (!body) continue;
        int id = f.let->id;
        if ((s->what & SIMP_SHRINK) && s->count[id] == 0 && trivially_pure(f.b)) {
            drop(s, f.b, depth + 1);
            s->changed = true;
            continue;
        }
        Node *l = fresh(s, OP_ALET, 2, body->type);
        if (!l) { body = NULL; continue; }
        l->id = id;
        l->kid[0] = f.b;
        l->kid[1] = body;
        body = l;
    }
    return body;
}

static Node *simp_acc(SimplifyState *s, const Node *n, int depth)
{
    if (s->failed) return NULL;
    if (depth > OPT_MAX_DEPTH) return too_deep(s);
    bool fold = s->what & SIMP_FOLD;
    switch (n->op) {
    case OP_AVAR: {
        int id = n->id;
        if (s->sub[id]) {
            s->count[id]--;
            return copy_small(s, s->sub[id]);
        }
        return mk_var(s, OP_AVAR, id, n->type);
    }
    case OP_ALET:
        return simp_alet(s, n, depth);
    case OP_ACOND: {
        Node *c = simp(s, n->kid[0], depth + 1);
        if (!c) return NULL;
        if (fold && isc(c)) {
            bool tk = truth(c);
            drop(s, n->kid[tk ? 2 : 1], depth + 1);
            s->changed = true;
            return simp_acc(s, n->kid[tk ? 1 : 2], depth + 1);
        }
        Node *x = fresh(s, OP_ACOND, 3, n->type);
        if (!x) return NULL;
        x->kid[0] = c;
        if (!(x->kid[1] = simp_acc(s, n->kid[1], depth + 1)) || !(x->kid[2] = simp_acc(s, n->kid[2], depth + 1)))
            return NULL;
        return x;
    }
    case OP_APROJ: {
        Node *t = simp_acc(s, n->kid[0], depth + 1);
        if (!t) return NULL;
        if (fold && t->op == OP_ATUPLE && n->a >= 0 && n->a < t->n) {
            bool pure = true;
            for (int i = 0; i < t->n; i++)
                if (i != n->a && !trivially_pure(t->kid[i])) pure = false;
            if (pure) {
                for (int i = 0; i < t->n; i++)
                    if (i != n->a) drop(s, t->kid[i], depth + 1);
                DONE(t->kid[n->a]);
            }
        }
        Node *x = fresh(s, OP_APROJ, 1, n->type);
        if (!x) return NULL;
        x->a = n->a;
        x->kid[0] = t;
        return x;
    }
    default: {
        /* Any other operation: its array operands, functions and scalar
         * contexts, each simplified. */
        Node *x = fresh(s, n->op, n->n, n->type);
        if (!x) return NULL;
        x->a = n->a;
        x->id = n->id;
        x->arr = n->arr;
        x->sten = n->sten;
        x->slice = n->slice;
        x->loop = n->loop;
        for (int i = 0; i < n->n; i++) {
            const Node *k = n->kid[i];
            Node *k2 = k->op == OP_LAM ? simp_lam(s, k, depth + 1)
                       : op_is_array(k->op) ? simp_acc(s, k, depth + 1)
                                            : simp(s, k, depth + 1);
            if (!(x->kid[i] = k2)) return NULL;
        }
        return x;
    }
    }
}

/* ================================================================ driver */

int opt_simplify_round(ax_ctx *cx, Program *p, unsigned what, bool *changed)
{
    SimplifyState s;
    memset(&s, 0, sizeof s);
    s.cx = cx;
    s.p = p;
    s.what = what;
    size_t nv = (size_t)p->nvars + 1;
    s.count = ax__calloc(nv, sizeof *s.count);
    s.blam = ax__calloc(nv, sizeof *s.blam);
    s.blazy = ax__calloc(nv, sizeof *s.blazy);
    s.vflag = ax__calloc(nv, sizeof *s.vflag);
    s.sub = ax__calloc(nv, sizeof *s.sub);
    s.pending = ax__calloc(nv, sizeof *s.pending);
    s.known = ax__calloc(nv, sizeof *s.known);
    Node *root = NULL;
    if (!s.count || !s.blam || !s.blazy || !s.vflag || !s.sub || !s.pending || !s.known) {
        nomem(&s);
    } else {
        census(&s, p->root, 0);
        if (!s.failed) root = simp_acc(&s, p->root, 0);
    }
    if (root && !s.failed) {
        p->root = root;
        if (s.changed) *changed = true;
    }
    free(s.count);
    free(s.blam);
    free(s.blazy);
    free(s.vflag);
    free(s.sub);
    free(s.pending);
    free(s.known);
    free(s.stk);
    if (s.failed && s.deep && cx->status == AX_OK) return 0;   /* unchanged */
    return s.failed || !root ? -1 : 0;
}

/* AXLE_DEBUG=verify: the verifier after every sub-pass. */
static bool verified(ax_ctx *cx, const Program *p, const char *pass, int round)
{
    char msg[512];
    if (ir_verify(p, msg, sizeof msg) == 0) return true;
    ctx_error(cx, AX_ERR_BUILD, "simplify: the program is ill-formed after %s (round %d): %s", pass, round + 1, msg);
    return false;
}

int simplify_program(ax_ctx *cx, Program *p, bool cse)
{
    if (!cx || !p || !p->root) return -1;
    bool verify = (cx->opt.debug & AX_DEBUG_VERIFY) != 0;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        bool changed = false;
        if (cse) {
            if (opt_cse(cx, p, &changed) != 0) return -1;
            if (verify && !verified(cx, p, "CSE", round)) return -1;
        }
        if (opt_simplify_round(cx, p, SIMP_ALL, &changed) != 0) return -1;
        if (verify && !verified(cx, p, "shrinking and folding", round)) return -1;
        if (!changed) break;
    }
    return 0;
}
