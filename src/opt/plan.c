/*
 * The planner's rewrites (issue 11): multi-generator loops after
 * Accelerate's fusion, as IR rewrites that every backend runs.
 *
 * After fusion (fusion.c) every array operation that is computed is
 * let-bound: a kernel, a loop over an iteration space with one generator
 * (seed 001 s."Function -> graph"; seed 003 s."Loop Fusion and
 * Deforestation": Collect for map/generate, Reduce for fold, a
 * conditional Collect for filter).  Accelerate fuses producers into
 * consumers only, and a producer with two readers not at all; the
 * rewrites here merge loops it leaves apart, greedily, in this order per
 * chain of lets (src/opt/plangraph.c shows the resulting clusters):
 *
 *  - A producer that only moves data (a zip of arrays into tuples) read
 *    at their own index by several filters and folds is copied into each
 *    of them (it does no work to copy) and not made.
 *
 *  - Horizontal fusion of sibling reductions (seed 003, Figure "Loop
 *    fusion", horizontal case): folds of one let chain whose operands
 *    range over the same extent become one fold of the tuple of their
 *    elements with the componentwise operator, one pass computing every
 *    generator.  The operator stays associative and keeps the order of
 *    its operands, so the fold skeletons' ordered chunked combine is
 *    right for non-commutative operators; a tuple of commutative
 *    primitives is still recognised as commutative by the CPU backend
 *    (cg_skel.c lam_comm) and gets its lane-parallel loop.  The results
 *    are read back by projection: every scalar read of a member's result
 *    reads its component of the tuple; a member still used as an array
 *    (the program's result, a kernel's operand) keeps a one-element-per-
 *    row map that projects it.  A producer (a map of an array, a
 *    generate) that only the members read, each at its own index, is
 *    inlined into the one pass (seed 003's vertical case) and not made.
 *
 *  - Vertical fusion of a filter into a fold (seed 003, vertical case
 *    "consume collect", with the filter as a conditional Collect; seed
 *    001 s."Subtype optimisations": the filter's output is a sub-size of
 *    its input's, so the consumer can run over the input's size): when
 *    folds are the only readers of a filter's output, each reading it at
 *    its own index, they range over the filter's input instead (and, as
 *    siblings, then share one pass), and an element the predicate drops
 *    adds nothing.  For an operator the CPU backend knows (componentwise +, *,
 *    min, max, and the bit operations) "nothing" is its neutral element,
 *    which keeps the element function branch-free: x + (-0.0) = x exactly
 *    for every float x, and a NaN is neutral for min and max, whose NaN
 *    loses (prim.c FMINMAX), so the result is bit for bit the fold of the
 *    filtered elements in the same order.  Any other operator is lifted
 *    to (kept, value) pairs: (k1, a) . (k2, b) = (k1 || k2, k1 ? (k2 ? a.b
 *    : a) : b), associative and order-keeping, with z as (true, z); the
 *    fold's result is the pair's second component.  The filter's output
 *    is then read by nothing and its let is removed.
 *
 * The rewrites keep evaluation strict where it was: every element the
 * filter read is still read and its predicate evaluated; the fold's own
 * element function runs only where the predicate holds (a lazy cond).
 * The member folds of a horizontal group are all evaluated before and
 * after (lets of one chain are evaluated in order, unconditionally); the
 * merged fold sits at the first member's place, so a member whose operand
 * reads a let bound between the two is not merged.
 *
 * Which loops merge is the clustering's to say (ilp.c: seed 001's integer
 * linear program over the loop graph of plangraph.c, which offers it only
 * the pairs these rewrites can carry out): a filter fuses into its folds
 * only if the clustering puts it in its first fold's pass, folds merge
 * and a producer is inlined only into a pass the clustering makes of
 * them (plan_together); without a clustering (the greedy planner) every
 * rewrite that applies is made, as above.  Copying a producer that only
 * moves data is no merge: it is always made.  The multi-generator loops
 * and epilogues below come after the clustering's rewrites and merge
 * what the loop graph does not model (a map with a fold of one array, a
 * filter with the folds of its output and its other readers, a map
 * applied as a fold's results are stored), but never two loops the
 * clustering kept apart where it could have merged them (plan_apart):
 * the ILP's clusters are carried out, and may only grow.
 *
 * AX_DEBUG_NO_PLANNER turns the pass off (Accelerate's fusion alone);
 * AX_DEBUG_NO_LOOPS and AX_DEBUG_NO_EPILOGUES the last two steps alone.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rewrite.h"
#include <math.h>
#include <string.h>

typedef struct PlanRewriteState {
    Rewrite rw;          /* the program's; its rule is reads() below */
    int cap;             /* room in the per-variable tables below */
    int *uses;           /* per array variable id: occurrences in the program */
    /* while copying: reads of array `rd` (index / linearIndex) become a
     * copy of rd_to */
    int rd;
    Node *rd_to;
    const Node *rd_prod;   /* or: reads of rd (and its shape) become this producer's */
    Node **rdv;          /* per array variable id: while copying, its element
                            reads (index / linearIndex) become a copy of this
                            (a loop member's element, read at its own index) */
    int changed;         /* rewrites made */
    PlanLog *log;
    /* the clustering the rewrites follow (ilp.c; NULL: greedy, every
     * rewrite that applies), and per let variable the key it has there
     * when a rewrite gave its loop a new variable (else PLAN_KEY_NONE) */
    const PlanClusters *cl;
    int64_t *key;
    int *member;         /* per array variable id: retarget's group (0: none) */
} PlanRewriteState;

/* (rw.grow) The per-variable tables cover every variable. */
static bool grow(Rewrite *rw, int nvars)
{
    PlanRewriteState *s = rw->pass;
    int need = nvars + 1;
    if (need <= s->cap) return true;
    int cap = need * 2 + 16;
    int *u = ax__realloc(s->uses, sizeof *u * (size_t)cap);
    Node **r = u ? ax__realloc(s->rdv, sizeof *r * (size_t)cap) : NULL;
    int64_t *k = r ? ax__realloc(s->key, sizeof *k * (size_t)cap) : NULL;
    int *g = k ? ax__realloc(s->member, sizeof *g * (size_t)cap) : NULL;
    if (u) s->uses = u;
    if (r) s->rdv = r;
    if (k) s->key = k;
    if (g) s->member = g;
    if (!u || !r || !k || !g) return false;
    for (int i = s->cap; i < cap; i++) s->uses[i] = 0, s->rdv[i] = NULL, s->key[i] = PLAN_KEY_NONE, s->member[i] = 0;
    s->cap = cap;
    return true;
}

/* ------------------------------------------------------------ copying */

static Node *opd_lin(PlanRewriteState *s, const Node *o, Node *i);
static Node *opd_ix(PlanRewriteState *s, const Node *o, Node *ix);
static Node *opd_extent(PlanRewriteState *s, const Node *o);

/* (rw.rule) While copying, reads of s->rd become copies of s->rd_to, or
 * the element of the producer s->rd_prod; reads of a loop member's array
 * become its element (s->rdv). */
static bool reads(Rewrite *rw, const Node *x, Node **out)
{
    PlanRewriteState *s = rw->pass;
    bool rd = (x->op == OP_INDEX || x->op == OP_LINDEX) && x->kid[0]->op == OP_AVAR;
    if (rd && x->kid[0]->id == s->rd && s->rd_to) return *out = rw_copy(rw, s->rd_to), true;
    if (rd && x->kid[0]->id < s->cap && s->rdv[x->kid[0]->id]) return *out = rw_copy(rw, s->rdv[x->kid[0]->id]), true;
    if (s->rd_prod && (rd || x->op == OP_SHAPE) && x->kid[0]->op == OP_AVAR && x->kid[0]->id == s->rd) {
        const Node *pr = s->rd_prod;
        if (x->op == OP_SHAPE) return *out = opd_extent(s, pr), true;
        Node *e = rw_copy(rw, x->kid[1]);
        *out = x->op == OP_INDEX ? opd_ix(s, pr, e) : opd_lin(s, pr, e);
        return true;
    }
    return false;
}

/* lam's body, its two parameters replaced by copies of a and b (cheap:
 * projections of a variable). */
static Node *subst2(PlanRewriteState *s, const Node *lam, Node *a, Node *b)
{
    Node *args[2] = {a, b};
    return rw_subst(&s->rw, lam, 2, args);
}

/* A consumer operand's element at linear position i / index ix, and its
 * extent: an array variable read directly, a delayed array's forms, or a
 * producer inlined into a cluster (map of an array variable, generate). */
static Node *opd_extent(PlanRewriteState *s, const Node *o)
{
    if (o->op == OP_DELAYED || o->op == OP_GENERATE) return rw_copy(&s->rw, o->kid[0]);
    if (o->op == OP_MAP) return opd_extent(s, o->kid[1]);
    return rw_op1(&s->rw, OP_SHAPE, rw_tindex(&s->rw, o->type->rank), rw_copy(&s->rw, o));
}

static Node *opd_lin(PlanRewriteState *s, const Node *o, Node *i)
{
    if (o->op == OP_DELAYED) return rw_apply1(&s->rw, o->kid[2], i);
    if (o->op == OP_MAP) return rw_apply1(&s->rw, o->kid[0], opd_lin(s, o->kid[1], i));
    if (o->op == OP_GENERATE) {
        Node *sh = rw_copy(&s->rw, o->kid[0]);
        Node *fl = sh && i ? rw_node(&s->rw, OP_PRIM, 2, sh->type) : NULL;
        if (fl) fl->a = P_FROMLIN, fl->kid[0] = sh, fl->kid[1] = i;
        return rw_apply1(&s->rw, o->kid[1], fl);
    }
    return rw_op2(&s->rw, OP_LINDEX, o->type->elt, rw_copy(&s->rw, o), i);
}

static Node *opd_ix(PlanRewriteState *s, const Node *o, Node *ix)
{
    if (o->op == OP_DELAYED) return rw_apply1(&s->rw, o->kid[1], ix);
    if (o->op == OP_MAP) return rw_apply1(&s->rw, o->kid[0], opd_ix(s, o->kid[1], ix));
    if (o->op == OP_GENERATE) return rw_apply1(&s->rw, o->kid[1], ix);
    return rw_op2(&s->rw, OP_INDEX, o->type->elt, rw_copy(&s->rw, o), ix);
}

/* A producer the planner may inline into the cluster that alone reads it
 * (seed 003's vertical case, "consume collect"): a map of an array
 * variable, or a generate. */
static bool inlinable(const Node *t)
{
    return (t->op == OP_MAP && t->kid[1]->op == OP_AVAR) || t->op == OP_GENERATE;
}

/* An element function that only moves data (reads, tuples, projections,
 * index arithmetic of constants): computing it again in each reader costs
 * what reading its array would, so copying it into several readers
 * duplicates no work. */
static bool moves_only(const Node *x, int depth)
{
    if (depth > 64) return false;
    switch (x->op) {
    case OP_VAR: case OP_CONST: case OP_AVAR: case OP_TUPLE: case OP_PROJ: case OP_IXGET: case OP_IXCONS:
    case OP_INDEX: case OP_LINDEX: case OP_SHAPE: case OP_LET: case OP_LAM:
        break;
    default:
        return false;
    }
    for (int i = 0; i < x->n; i++)
        if (!moves_only(x->kid[i], depth + 1)) return false;
    return true;
}

/* ------------------------------------------------------------ analysis */

static void count_uses(PlanRewriteState *s, const Node *x, int depth)
{
    while (x && depth <= OPT_MAX_DEPTH) {
        if (x->op == OP_AVAR && x->id < s->cap) s->uses[x->id]++;
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++) count_uses(s, x->kid[i], depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

static int occurrences(const Node *x, int id, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return 1 << 20;
    int c = x->op == OP_AVAR && x->id == id;
    for (int i = 0; i < x->n; i++) c += occurrences(x->kid[i], id, depth + 1);
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

static bool same_term(const Node *a, const Node *b, int depth) { return term_eq(a, b, depth, false); }

/* Does term x read any array variable bound by lets[from..to)? */
static bool reads_any(const Node *x, Node *const *lets, int from, int to)
{
    for (int k = from; k < to; k++)
        if (occurrences(x, lets[k]->id, 0)) return true;
    return false;
}

/* The primitive combining leaf k of the operator's two parameters, when
 * the operator is componentwise a commutative primitive (+, *, min, max,
 * bit operations, and/or) of its parameters' leaves; as cg_skel.c's
 * lam_comm recognises them. */
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
static bool known_lam(const Node *f, Prim *ops, int maxw)
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

/* The neutral element of op on sc (see the header comment for floats). */
static Node *neutral(PlanRewriteState *s, Prim op, ax_scalar sc)
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

/* A term made of constants and tuples only (cheap and safe to evaluate per
 * element). */
static bool is_const_term(const Node *x, int depth)
{
    if (depth > 16) return false;
    if (x->op == OP_CONST) return true;
    if (x->op != OP_TUPLE && x->op != OP_IXCONS) return false;
    for (int i = 0; i < x->n; i++)
        if (!is_const_term(x->kid[i], depth + 1)) return false;
    return true;
}

/* ------------------------------------------------------------ retargeting */

/* Reads of the group's arrays in x (s->member[id]: its component k + 1
 * in `to`, whose element is a tuple; 0 for no member) become component k
 * of `to`; their shapes, to's.  One walk for the whole group: a group of
 * siblings retargets the rest of its chain once, not once per member
 * (which made merging n folds cost n^2). */
static void retarget(PlanRewriteState *s, Node *x, int to, int depth)
{
    const int *member = s->member;
    while (x && !s->rw.failed && depth <= OPT_MAX_DEPTH) {
        const Node *a = x->n > 0 ? x->kid[0] : NULL;
        int k = a && a->op == OP_AVAR && a->id >= 0 && a->id < s->cap ? member[a->id] - 1 : -1;
        if ((x->op == OP_INDEX || x->op == OP_LINDEX) && k >= 0) {
            Node *rd = rw_op2(&s->rw, x->op, s->rw.p->vartype[to]->elt, rw_var(&s->rw, to), x->kid[1]);
            if (!rd) return;
            retarget(s, x->kid[1], to, depth + 1);
            x->op = OP_PROJ;
            x->n = 1;
            x->a = k;
            x->kid[0] = rd;
            return;
        }
        if (x->op == OP_SHAPE && k >= 0) {
            x->kid[0]->id = to;
            x->kid[0]->type = s->rw.p->vartype[to];
            return;
        }
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++) retarget(s, x->kid[i], to, depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

/* `map (\t -> proj k t) (avar to)`: a member's result as an array, for
 * the uses that need one. */
static Node *proj_map(PlanRewriteState *s, int to, int k)
{
    const Type *at = s->rw.p->vartype[to], *et = at->elt->elts[k];
    Rewrite *rw = &s->rw;
    int pid;
    if (!rw_params(rw, 1, &at->elt, &pid)) return NULL;
    return rw_op2(rw, OP_MAP, rw_tarray(rw, et, at->rank), rw_lam1(rw, pid, rw_proj(rw, k, rw_var(rw, pid))),
                  rw_var(rw, to));
}

static void note(PlanRewriteState *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(PlanRewriteState *s, const char *fmt, ...)
{
    s->changed++;
    if (!s->log || s->log->n >= PLAN_LOG_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->log->line[s->log->n++], sizeof s->log->line[0], fmt, ap);
    va_end(ap);
}

static void join(PlanRewriteState *s, int64_t a, int64_t b)
{
    if (s->log && s->log->njoin < PLAN_JOIN_MAX) {
        s->log->join[s->log->njoin][0] = a;
        s->log->join[s->log->njoin++][1] = b;
    }
}

static void removed(PlanRewriteState *s, int64_t id)
{
    if (s->log && s->log->nremoved < PLAN_JOIN_MAX) s->log->removed[s->log->nremoved++] = id;
}

/* May the loops of let variables (or chain bodies' keys) a and b share a
 * pass?  The clustering decides (ilp.c); without one, yes (greedy). */
static int64_t key_of(const PlanRewriteState *s, int64_t a)
{
    return a >= 0 && a < s->cap && s->key[a] != PLAN_KEY_NONE ? s->key[a] : a;
}

static bool together(const PlanRewriteState *s, int64_t a, int64_t b)
{
    return plan_together(s->cl, key_of(s, a), key_of(s, b));
}

/* Did the clustering keep a and b apart, a pair it could have merged?
 * (The steps after its rewrites, loops and epilogues, merge only what it
 * did not choose to keep apart.) */
static bool apart(const PlanRewriteState *s, int64_t a, int64_t b)
{
    return plan_apart(s->cl, key_of(s, a), key_of(s, b));
}

/* ------------------------------------------------------------ filter into fold */

/* The fold's operand reads the filter's output `ys` only as
 * linearIndex ys i of its own parameter i (and its extent is shape ys, or
 * it is ys itself). */
static bool reads_only_at_param(const Node *x, int ys, int i, int depth)
{
    if (depth > OPT_MAX_DEPTH) return false;
    if (x->op == OP_LINDEX && x->kid[0]->op == OP_AVAR && x->kid[0]->id == ys)
        return x->kid[1]->op == OP_VAR && x->kid[1]->id == i;
    if (x->op == OP_AVAR && x->id == ys) return false;
    if (x->op == OP_VAR && x->id == i) return false;
    for (int k = 0; k < x->n; k++)
        if (!reads_only_at_param(x->kid[k], ys, i, depth + 1)) return false;
    return true;
}

/* Can the fold `fold` read the input of the filter bound by flt instead of
 * its output?  Its operand must read the output at its own position only
 * (and nothing else in the fold read it); *occ: the reads. */
static bool can_absorb(PlanRewriteState *s, const Node *fold, const Node *flt, int *occ)
{
    if (fold->op != OP_FOLD || fold->type->rank != 0) return false;
    int ys = flt->id;
    const Node *d = flt->kid[0]->kid[1];
    const Node *o = fold->kid[2], *g = fold->kid[0], *z = fold->kid[1];
    *occ = occurrences(o, ys, 0);
    if (d->type->rank != 1 || *occ == 0 || occurrences(fold, ys, 0) != *occ) return false;
    if (o->op == OP_AVAR) {
        if (o->id != ys) return false;
    } else if (o->op == OP_DELAYED) {
        const Node *ln = o->kid[2];
        if (!reads_only_at_param(ln->kid[0], ys, ln->param[0]->id, 0)) return false;
        /* the extent must be ys's (the fold's rows are the filter's) */
        if (!(o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR && o->kid[0]->kid[0]->id == ys))
            return false;
    } else {
        return false;
    }
    Prim ops[16];
    return known_lam(g, ops, 16) || is_const_term(z, 0);
}

/* Rewrites *site (a fold for which can_absorb holds: the term of let
 * `owner`, or the body of the chain whose last let is `owner`) to read
 * the filter's input; true if it did. */
static bool filter_into_fold(PlanRewriteState *s, Node **site, Node *owner, bool at_body, const Node *flt)
{
    Node *fold = *site;
    int ys = flt->id;
    const Node *filter = flt->kid[0], *pred = filter->kid[0], *d = filter->kid[1];
    const Node *o = fold->kid[2], *g = fold->kid[0], *z = fold->kid[1];
    const Type *elt = fold->type->elt, *delt = d->type->elt;
    Prim ops[16];
    bool known = known_lam(g, ops, 16);

    /* element i of the new operand: let v = d[i] in p v ? e v : none */
    int iid = rw_fresh(&s->rw, ty_i64()), vid = rw_fresh(&s->rw, delt);
    if (iid < 0 || vid < 0) return false;
    Node *v = rw_var(&s->rw, vid);
    Node *keep = rw_apply1(&s->rw, pred, v);
    Node *val;
    if (o->op == OP_AVAR) {
        val = rw_var(&s->rw, vid);
    } else {
        s->rd = ys, s->rd_to = rw_var(&s->rw, vid);
        val = rw_apply1(&s->rw, o->kid[2], rw_var(&s->rw, iid));   /* its parameter appears only in the read */
        s->rd = -1, s->rd_to = NULL;
    }
    Node *none, *some;
    const Type *nelt = elt;
    if (known) {
        if (elt->kind == TY_SCALAR) {
            none = neutral(s, ops[0], elt->s);
        } else {
            none = rw_node(&s->rw, OP_TUPLE, elt->n, elt);
            for (int k = 0; none && k < elt->n; k++) none->kid[k] = neutral(s, ops[k], elt->elts[k]->s);
        }
        some = val;
    } else {
        const Type *pe[2] = {ty_bool(), elt};
        nelt = rw_ttuple(&s->rw, 2, pe);
        Scalar t = {.b = true}, f = {.b = false};
        some = rw_op2(&s->rw, OP_TUPLE, nelt, rw_const(&s->rw, AX_BOOL, t), val);
        none = rw_op2(&s->rw, OP_TUPLE, nelt, rw_const(&s->rw, AX_BOOL, f), rw_copy(&s->rw, z));
    }
    Node *body = rw_let(&s->rw, vid, opd_lin(s, d, rw_var(&s->rw, iid)), rw_cond(&s->rw, keep, some, none));
    if (!body || !nelt) return rw_fail(&s->rw), false;
    Node *llin = rw_lam1(&s->rw, iid, body);
    /* the index form: the linear one at ixget 0 ix */
    const Type *ixt = rw_tindex(&s->rw, 1);
    int xid;
    if (!llin || !rw_params(&s->rw, 1, &ixt, &xid)) return false;
    Node *lix = rw_lam1(&s->rw, xid, rw_apply1(&s->rw, llin, rw_ixget(&s->rw, 0, rw_var(&s->rw, xid))));
    Node *dl = lix ? rw_op3(&s->rw, OP_DELAYED, rw_tarray(&s->rw, nelt, 1), opd_extent(s, d), lix, llin) : NULL;
    if (!dl) return false;

    if (known) {
        Node *nf = rw_node(&s->rw, OP_FOLD, 3, fold->type);
        if (!nf) return false;
        nf->kid[0] = fold->kid[0], nf->kid[1] = fold->kid[1], nf->kid[2] = dl;
        *site = nf;
        return !s->rw.failed;
    }
    /* (kept, value) pairs: the fold of pairs, then its second component */
    const Type *pt[2] = {nelt, nelt};
    int pid[2];
    if (!rw_params(&s->rw, 2, pt, pid)) return false;
    Node *k1 = rw_proj(&s->rw, 0, rw_var(&s->rw, pid[0])), *k2 = rw_proj(&s->rw, 0, rw_var(&s->rw, pid[1]));
    Node *a = rw_proj(&s->rw, 1, rw_var(&s->rw, pid[0])), *b = rw_proj(&s->rw, 1, rw_var(&s->rw, pid[1]));
    Node *both = subst2(s, g, rw_proj(&s->rw, 1, rw_var(&s->rw, pid[0])), rw_proj(&s->rw, 1, rw_var(&s->rw, pid[1])));
    Node *kk = rw_prim(&s->rw, P_OR, ty_bool(), k1, k2);
    Node *inner = rw_cond(&s->rw, rw_proj(&s->rw, 0, rw_var(&s->rw, pid[1])), both, a);
    Node *pb = rw_op2(&s->rw, OP_TUPLE, nelt, kk, rw_cond(&s->rw, rw_proj(&s->rw, 0, rw_var(&s->rw, pid[0])), inner, b));
    Scalar t = {.b = true};
    Node *nz = rw_op2(&s->rw, OP_TUPLE, nelt, rw_const(&s->rw, AX_BOOL, t), rw_copy(&s->rw, z));
    Node *nf = rw_op3(&s->rw, OP_FOLD, rw_tarray(&s->rw, nelt, 0), rw_lam(&s->rw, 2, pid, pb), nz, dl);
    if (!nf) return false;
    /* the pair fold gets a let of its own; *site becomes its second
     * component (a map over a rank-0 array: one element) */
    int pidv = rw_fresh(&s->rw, nf->type);
    if (pidv < 0) return false;
    Node *m = proj_map(s, pidv, 1);
    if (!m) return rw_fail(&s->rw), false;
    if (at_body) {
        Node *al = rw_op2(&s->rw, OP_ALET, m->type, nf, m);
        if (!al) return false;
        al->id = pidv;
        s->key[pidv] = plan_body_key(fold);   /* the body's loop, now let-bound */
        *site = al;
    } else {
        Node *nl = rw_op2(&s->rw, OP_ALET, owner->type, m, owner->kid[1]);
        if (!nl) return false;
        nl->id = owner->id;
        s->key[pidv] = key_of(s, owner->id);
        s->key[owner->id] = PLAN_KEY_GONE;   /* now a projection */
        owner->id = pidv;
        owner->kid[0] = nf;
        owner->kid[1] = nl;
    }
    return !s->rw.failed;
}

/* ------------------------------------------------------------ siblings */

static bool is_fold(const Node *x) { return x->op == OP_FOLD || x->op == OP_FOLD1; }

static const Node *fold_opd(const Node *x) { return x->kid[x->op == OP_FOLD ? 2 : 1]; }

/* The extent expression of an operand, without copying (for comparison). */
static bool same_extent(const Node *a, const Node *b)
{
    if (a->type->rank != b->type->rank) return false;
    const Node *ea = a->op == OP_DELAYED ? a->kid[0] : NULL, *eb = b->op == OP_DELAYED ? b->kid[0] : NULL;
    int va = a->op == OP_AVAR ? a->id : ea && ea->op == OP_SHAPE && ea->kid[0]->op == OP_AVAR ? ea->kid[0]->id : -1;
    int vb = b->op == OP_AVAR ? b->id : eb && eb->op == OP_SHAPE && eb->kid[0]->op == OP_AVAR ? eb->kid[0]->id : -1;
    if (va >= 0 && vb >= 0) return va == vb;
    if (ea && eb) return same_term(ea, eb, 0);
    return false;
}

/* Merges the folds lets[m[0..nm)] (of one chain, m ascending) into one at
 * lets[m[0]]'s place.  A member's operand that is an array variable bound
 * in the chain by a producer read by the members alone is inlined (its
 * let, dead, is removed by the caller: *inl[k] its let, else NULL). */
static bool merge_siblings(PlanRewriteState *s, Node **lets, const int *m, int nm, Node **inl)
{
    const Node **opd = arena_alloc(&s->rw.p->arena, sizeof *opd * (size_t)nm);
    const Node **prod = arena_alloc(&s->rw.p->arena, sizeof *prod * (size_t)nm);
    int *pv = arena_alloc(&s->rw.p->arena, sizeof *pv * (size_t)nm);
    if (!opd || !prod || !pv) return rw_fail(&s->rw), false;
    /* the array each member's operand reads at its own position (if any):
     * itself, or the one array a delayed operand reads once per element */
    for (int k = 0; k < nm; k++) {
        const Node *o = fold_opd(lets[m[k]]->kid[0]);
        inl[k] = NULL, prod[k] = NULL, opd[k] = o, pv[k] = -1;
        if (o->op == OP_AVAR) pv[k] = o->id;
        else if (o->op == OP_DELAYED && o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR) {
            int a = o->kid[0]->kid[0]->id;
            if (occurrences(o->kid[1], a, 0) == 1 && occurrences(o->kid[2], a, 0) == 1) pv[k] = a;
        }
    }
    for (int k = 0; k < nm; k++) {
        if (pv[k] < 0) continue;
        int users = 0, readers = 0;
        for (int q = 0; q < nm; q++)
            if (pv[q] == pv[k]) users += occurrences(fold_opd(lets[m[q]]->kid[0]), pv[k], 0), readers++;
        if (readers < 2 || users != s->uses[pv[k]] || !together(s, pv[k], lets[m[0]]->id)) continue;
        for (int j = 0; j < m[0]; j++)
            if (lets[j]->id == pv[k] && inlinable(lets[j]->kid[0])) {
                inl[k] = lets[j];
                if (opd[k]->op == OP_AVAR) opd[k] = lets[j]->kid[0];
                else prod[k] = lets[j]->kid[0];
            }
    }
    const Node *f0 = lets[m[0]]->kid[0];
    bool z = f0->op == OP_FOLD;
    int rank = f0->type->rank;
    const Type **et = arena_alloc(&s->rw.p->arena, sizeof *et * (size_t)nm);
    if (!et) return rw_fail(&s->rw), false;
    for (int k = 0; k < nm; k++) et[k] = lets[m[k]]->kid[0]->type->elt;
    const Type *tt = rw_ttuple(&s->rw, nm, et);
    const Type *at = tt ? rw_tarray(&s->rw, tt, rank) : NULL;
    if (!at) return rw_fail(&s->rw), false;
    /* the operator: componentwise */
    const Type *pt[2] = {tt, tt};
    int pid[2];
    if (!rw_params(&s->rw, 2, pt, pid)) return false;
    Node *gb = rw_node(&s->rw, OP_TUPLE, nm, tt);
    for (int k = 0; gb && k < nm; k++)
        gb->kid[k] = subst2(s, lets[m[k]]->kid[0]->kid[0], rw_proj(&s->rw, k, rw_var(&s->rw, pid[0])),
                            rw_proj(&s->rw, k, rw_var(&s->rw, pid[1])));
    Node *g = rw_lam(&s->rw, 2, pid, gb);
    Node *zz = z ? rw_node(&s->rw, OP_TUPLE, nm, tt) : NULL;
    for (int k = 0; zz && k < nm; k++) zz->kid[k] = rw_copy(&s->rw, lets[m[k]]->kid[0]->kid[1]);
    /* the operand: both forms, componentwise */
    const Type *ixt = rw_tindex(&s->rw, rank + 1), *i64 = ty_i64();
    int xid, iid;
    if (!rw_params(&s->rw, 1, &ixt, &xid) || !rw_params(&s->rw, 1, &i64, &iid)) return false;
    Node *bix = rw_node(&s->rw, OP_TUPLE, nm, tt), *blin = rw_node(&s->rw, OP_TUPLE, nm, tt);
    for (int k = 0; bix && blin && k < nm; k++) {
        const Node *o = opd[k];
        s->rd = prod[k] ? pv[k] : -1, s->rd_prod = prod[k];
        bix->kid[k] = opd_ix(s, o, rw_var(&s->rw, xid));
        blin->kid[k] = opd_lin(s, o, rw_var(&s->rw, iid));
    }
    s->rd_prod = prod[0];
    s->rd = prod[0] ? pv[0] : -1;
    Node *lix = rw_lam1(&s->rw, xid, bix), *llin = rw_lam1(&s->rw, iid, blin);
    Node *dl = rw_node(&s->rw, OP_DELAYED, 3, rw_tarray(&s->rw, tt, rank + 1));
    if (!dl || !lix || !llin || (z && !zz) || !g || s->rw.failed) return rw_fail(&s->rw), false;
    dl->kid[0] = opd_extent(s, opd[0]);
    s->rd = -1, s->rd_prod = NULL;
    dl->kid[1] = lix, dl->kid[2] = llin;
    Node *nf = rw_node(&s->rw, f0->op, z ? 3 : 2, at);
    if (!nf || !dl->kid[0]) return rw_fail(&s->rw), false;
    nf->kid[0] = g;
    if (z) nf->kid[1] = zz;
    nf->kid[z ? 2 : 1] = dl;
    int tid = rw_fresh(&s->rw, at);
    if (tid < 0) return false;
    /* let t = fused in let r0 = proj 0 t in ...; each member's let binds
     * its projection, and its scalar reads read t */
    Node *first = lets[m[0]];
    Node *nl = rw_node(&s->rw, OP_ALET, 2, first->type);
    if (!nl) return false;
    nl->id = first->id;
    nl->kid[0] = proj_map(s, tid, 0);
    nl->kid[1] = first->kid[1];
    first->id = tid;
    first->kid[0] = nf;
    first->kid[1] = nl;
    for (int k = 1; k < nm && !s->rw.failed; k++) lets[m[k]]->kid[0] = proj_map(s, tid, k);
    /* the members' variables name projections of the pass now, no loops */
    s->key[nl->id] = PLAN_KEY_GONE;
    for (int k = 1; k < nm; k++) s->key[lets[m[k]]->id] = PLAN_KEY_GONE;
    /* scalar reads of the members read the tuple; retarget the whole rest
     * of the chain (the members' lets included: harmless) */
    int ids[64];
    ids[0] = nl->id;
    for (int k = 1; k < nm; k++) ids[k] = lets[m[k]]->id;
    for (int k = 0; k < nm; k++)
        if (ids[k] >= 0 && ids[k] < s->cap) s->member[ids[k]] = k + 1;
    retarget(s, nl->kid[1], tid, 0);
    for (int k = 0; k < nm; k++)
        if (ids[k] >= 0 && ids[k] < s->cap) s->member[ids[k]] = 0;
    return !s->rw.failed;
}

/* ------------------------------------------------------------ multi-generator loops */

static void recount(PlanRewriteState *s);
static bool reads_at(const Node *x, int a, int p, int depth);
static Node **collect(PlanRewriteState *s, Node **slot, int *nl);
static void splice_out(Node **slot, Node *dead);

/* A member of a multi-generator loop (ir.h Loop; seed 003's fused loop):
 * a let of the chain whose term is one pass over a space that it reads at
 * its own position: a collect (map of an array, generate), a reduction
 * (fold, fold1) or a filter. */
typedef struct Mem {
    int k;                 /* its index in the chain's lets */
    int id;                /* its let's variable */
    LoopKind kind;
    const Node *t;         /* its term */
    const Node *opd;       /* the operand ranging over the space (NULL: a generate) */
    bool drop;             /* a collect read only by later members, at their positions */
    int via;               /* a fold of filter member via's output (index in the
                              group), or -1 */
    bool neutral;          /* (via) a dropped element adds the operator's neutral
                              element; else the reduction counts only the kept */
} Mem;

static bool loop_member(const Node *t, Mem *m)
{
    const Node *o = NULL;
    switch (t->op) {
    case OP_MAP: m->kind = LOOP_COLLECT, o = t->kid[1]; break;
    case OP_GENERATE: m->kind = LOOP_COLLECT; break;
    case OP_FOLD: case OP_FOLD1: m->kind = LOOP_REDUCE, o = fold_opd(t); break;
    case OP_FILTER: m->kind = LOOP_FILTER, o = t->kid[1]; break;
    default: return false;
    }
    if (o && o->op != OP_AVAR && o->op != OP_DELAYED) return false;
    if ((o ? o->type->rank : t->type->rank) < 1) return false;
    /* (a filter of a matrix keeps its elements in row-major order: a
     * loop's filter is of a vector) */
    if (m->kind == LOOP_FILTER && o->type->rank != 1) return false;
    m->t = t;
    m->opd = o;
    m->drop = false;
    m->via = -1;
    m->neutral = false;
    return true;
}

/* Is j (a fold) a fold of filter member f's output, reading it at its own
 * position only, of a rank-1 filter, that can join f's loop? */
static bool fold_of_filter(const Mem *j, const Mem *f)
{
    if (f->kind != LOOP_FILTER || j->kind != LOOP_REDUCE || j->t->type->rank != 0) return false;
    const Node *o = j->opd;
    int a = f->id;
    if (!(o->op == OP_AVAR ? o->id == a
                           : o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR && o->kid[0]->kid[0]->id == a))
        return false;
    if (occurrences(j->t, a, 0) != occurrences(o, a, 0)) return false;
    if (o->op == OP_DELAYED) {
        const Node *lix = o->kid[1], *lin = o->kid[2];
        if (occurrences(o->kid[0], a, 0) != 1 || !reads_at(lix->kid[0], a, lix->param[0]->id, 0) ||
            !reads_at(lin->kid[0], a, lin->param[0]->id, 0))
            return false;
    }
    Prim ops[16];
    if (known_lam(j->t->kid[0], ops, 16)) return true;
    return j->t->op == OP_FOLD && ir_selection(j->t->kid[0], NULL) && is_const_term(j->t->kid[1], 0);
}

static int space_rank(const Mem *m) { return m->opd ? m->opd->type->rank : m->t->type->rank; }

/* Does operand o range over extent e (a shape expression)? */
static bool opd_has_extent(const Node *o, const Node *e)
{
    if (o->op == OP_DELAYED) return same_term(o->kid[0], e, 0);
    return e->op == OP_SHAPE && e->kid[0]->op == OP_AVAR && o->op == OP_AVAR && e->kid[0]->id == o->id;
}

static bool same_space(const Mem *a, const Mem *b)
{
    if (space_rank(a) != space_rank(b)) return false;
    if (a->opd && b->opd) return same_extent(a->opd, b->opd);
    if (a->opd) return opd_has_extent(a->opd, b->t->kid[0]);
    if (b->opd) return opd_has_extent(b->opd, a->t->kid[0]);
    return same_term(a->t->kid[0], b->t->kid[0], 0);
}

/* Reads of array `a` in x are all element reads at parameter p's value
 * (linearIndex a p, or index a p): a member's own position. */
static bool reads_at(const Node *x, int a, int p, int depth)
{
    if (depth > OPT_MAX_DEPTH) return false;
    if ((x->op == OP_LINDEX || x->op == OP_INDEX) && x->kid[0]->op == OP_AVAR && x->kid[0]->id == a)
        return x->kid[1]->op == OP_VAR && x->kid[1]->id == p;
    if (x->op == OP_AVAR) return x->id != a;
    for (int k = 0; k < x->n; k++)
        if (!reads_at(x->kid[k], a, p, depth + 1)) return false;
    return true;
}

/* May member j read member m's array?  Only a collect's, and only at its
 * own position (a fusible edge); the rest of j's term not at all. */
static bool reads_member_ok(const Mem *j, const Mem *m)
{
    const Node *t = j->t;
    int a = m->id;
    if (!occurrences(t, a, 0)) return true;
    if (m->kind != LOOP_COLLECT) return false;
    if (!j->opd) {   /* a generate: its function at its own index */
        const Node *f = t->kid[1];
        return !occurrences(t->kid[0], a, 0) && reads_at(f->kid[0], a, f->param[0]->id, 0);
    }
    const Node *o = j->opd;
    int in_opd = occurrences(o, a, 0);
    if (occurrences(t, a, 0) != in_opd) return false;   /* an operator, a predicate, z */
    if (o->op == OP_AVAR) return true;
    const Node *lix = o->kid[1], *lin = o->kid[2], *e = o->kid[0];
    /* its extent may be the collect's shape: the loop's space */
    bool shape_only = e->op == OP_SHAPE && e->kid[0]->op == OP_AVAR && e->kid[0]->id == a;
    return (shape_only || !occurrences(e, a, 0)) && reads_at(lix->kid[0], a, lix->param[0]->id, 0) &&
           reads_at(lin->kid[0], a, lin->param[0]->id, 0);
}

/* Can evaluating x fault or not end (sharing recovery's rule, opt.h)? */
static bool fallible(const PlanRewriteState *s, const Node *x, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH || opt_op_fallible(s->rw.cx, x)) return true;
    for (int i = 0; i < x->n; i++)
        if (fallible(s, x->kid[i], depth + 1)) return true;
    return false;
}

/* Member m's element at position i (lin) or index ix, with reads of the
 * earlier members' arrays as their elements (s->rdv). */
static Node *member_elem(PlanRewriteState *s, const Mem *m, Node *at, bool lin)
{
    const Node *o = m->opd;
    if (!o) {
        const Node *f = m->t->kid[1];
        if (!lin) return rw_apply1(&s->rw, f, at);
        Node *sh = rw_copy(&s->rw, m->t->kid[0]);
        Node *fl = sh && at ? rw_node(&s->rw, OP_PRIM, 2, sh->type) : NULL;
        if (fl) fl->a = P_FROMLIN, fl->kid[0] = sh, fl->kid[1] = at;
        return rw_apply1(&s->rw, f, fl);
    }
    Node *e;
    if (o->op == OP_AVAR && o->id < s->cap && s->rdv[o->id]) e = rw_copy(&s->rw, s->rdv[o->id]);
    else e = lin ? opd_lin(s, o, at) : opd_ix(s, o, at);
    if (m->t->op == OP_MAP) e = rw_apply1(&s->rw, m->t->kid[0], e);
    return e;
}

/* The space's element function in one form: let e1 = .. in let e2 = ..
 * in (components), every member's element once. */
static Node *loop_lam(PlanRewriteState *s, const Mem *ms, int nm, const Type *pt, const Type *et, bool lin)
{
    int pid;
    if (!rw_params(&s->rw, 1, &pt, &pid)) return NULL;
    /* the elements, in order, each reading the earlier ones' */
    Node **ev = arena_alloc(&s->rw.p->arena, sizeof *ev * (size_t)nm);
    int *vid = arena_alloc(&s->rw.p->arena, sizeof *vid * (size_t)nm);
    if (!ev || !vid) return rw_fail(&s->rw);
    for (int q = 0; q < nm && !s->rw.failed; q++) {
        const Mem *m = &ms[q];
        const Type *vt = m->kind == LOOP_COLLECT ? m->t->type->elt : m->opd->type->elt;
        ev[q] = member_elem(s, m, rw_var(&s->rw, pid), lin);
        if (m->via >= 0 && ev[q] && (m->neutral || fallible(s, ev[q], 0))) {
            /* only where the filter keeps the element (lazily: the fold's
             * element code never ran on the others); else its neutral
             * element, or z, which the generator's predicate then skips
             * (it needs none when the element cannot fault) */
            const Mem *f = &ms[m->via];
            Node *keep = rw_apply1(&s->rw, f->t->kid[0], rw_var(&s->rw, vid[m->via]));
            Node *none;
            if (m->neutral) {
                Prim ops[16];
                known_lam(m->t->kid[0], ops, 16);
                const Type *ot = m->opd->type->elt;
                if (ot->kind == TY_SCALAR) {
                    none = neutral(s, ops[0], ot->s);
                } else {
                    none = rw_node(&s->rw, OP_TUPLE, ot->n, ot);
                    for (int k = 0; none && k < ot->n; k++) none->kid[k] = neutral(s, ops[k], ot->elts[k]->s);
                }
            } else {
                none = rw_copy(&s->rw, m->t->kid[1]);
            }
            ev[q] = rw_cond(&s->rw, keep, ev[q], none);
        }
        vid[q] = rw_fresh(&s->rw, vt);
        if ((m->kind == LOOP_COLLECT || m->kind == LOOP_FILTER) && vid[q] >= 0) s->rdv[m->id] = rw_var(&s->rw, vid[q]);
    }
    for (int q = 0; q < nm; q++)
        if (ms[q].kind == LOOP_COLLECT || ms[q].kind == LOOP_FILTER) s->rdv[ms[q].id] = NULL;
    if (s->rw.failed) return NULL;
    /* the components */
    Node *tup = et->kind == TY_TUPLE ? rw_node(&s->rw, OP_TUPLE, et->n, et) : NULL;
    Node *one = NULL;
    int c = 0;
    for (int q = 0; q < nm && !s->rw.failed; q++) {
        const Mem *m = &ms[q];
        if (m->drop) continue;
        Node *parts[2] = {NULL, NULL};
        int np = 0;
        if (m->kind == LOOP_FILTER) parts[np++] = rw_apply1(&s->rw, m->t->kid[0], rw_var(&s->rw, vid[q]));
        parts[np++] = rw_var(&s->rw, vid[q]);
        for (int k = 0; k < np; k++) {
            if (tup && c < tup->n) tup->kid[c] = parts[k];
            else one = parts[k];
            c++;
        }
    }
    Node *body = tup ? tup : one;
    for (int q = nm - 1; q >= 0 && body; q--) body = rw_let(&s->rw, vid[q], ev[q], body);
    return rw_lam1(&s->rw, pid, body);
}

/* Builds the loop of members ms[0..nm) (of one chain, in order) at the
 * first one's let: `let t = loop .. in let m1 = aproj 0 t in ..`; the other
 * members' lets are spliced out. */
static bool make_loop(PlanRewriteState *s, Node **slot, Node **lets, Mem *ms, int nm)
{
    int ngen = 0, ncomp = 0, nkid = 1;
    for (int q = 0; q < nm; q++) {
        if (ms[q].drop) continue;
        ngen++;
        ncomp += ms[q].kind == LOOP_FILTER ? 2 : 1;
        if (ms[q].kind == LOOP_REDUCE) nkid += ms[q].t->op == OP_FOLD ? 2 : 1;
    }
    Loop *lp = arena_alloc(&s->rw.p->arena, sizeof *lp + sizeof lp->gen[0] * (size_t)ngen);
    const Type **ct = arena_alloc(&s->rw.p->arena, sizeof *ct * (size_t)(ncomp + 1));
    const Type **gt = arena_alloc(&s->rw.p->arena, sizeof *gt * (size_t)(ngen + 1));
    if (!lp || !ct || !gt) return rw_fail(&s->rw), false;
    lp->ngen = ngen;
    int c = 0, g = 0, kid = 1;
    for (int q = 0; q < nm; q++) {
        const Mem *m = &ms[q];
        if (m->drop) continue;
        LoopGen *gn = &lp->gen[g];
        gn->kind = m->kind;
        gn->pred = gn->op = gn->z = -1;
        if (m->kind == LOOP_FILTER) {
            gn->pred = c;
            ct[c++] = ty_bool();
        }
        gn->comp = c;
        ct[c++] = m->kind == LOOP_COLLECT ? m->t->type->elt : m->opd->type->elt;
        if (m->via >= 0 && !m->neutral) {
            /* the filter's predicate component: the filter comes first */
            int fg = 0, fc = 0;
            for (int h = 0; h < m->via; h++)
                if (!ms[h].drop) fg++, fc += ms[h].kind == LOOP_FILTER ? 2 : 1;
            (void)fg;
            gn->pred = fc;
        }
        if (m->kind == LOOP_REDUCE) {
            gn->op = kid++;
            if (m->t->op == OP_FOLD) gn->z = kid++;
        }
        gt[g++] = m->t->type;
    }
    const Type *et = ncomp == 1 ? ct[0] : rw_ttuple(&s->rw, ncomp, ct);
    if (ncomp == 1) lp->gen[0].comp = -1;
    int r = space_rank(&ms[0]);
    const Type *at = et ? rw_tarray(&s->rw, et, r) : NULL, *tt = ty_arrays(&s->rw.p->arena, ngen, gt);
    const Type *ixt = rw_tindex(&s->rw, r), *i64 = ty_i64();
    if (!at || !tt || !ixt) return rw_fail(&s->rw), false;
    Node *dl = rw_node(&s->rw, OP_DELAYED, 3, at), *lo = rw_node(&s->rw, OP_LOOP, nkid, tt);
    if (!dl || !lo) return false;
    dl->kid[0] = ms[0].opd ? opd_extent(s, ms[0].opd) : rw_copy(&s->rw, ms[0].t->kid[0]);
    dl->kid[1] = loop_lam(s, ms, nm, ixt, et, false);
    dl->kid[2] = loop_lam(s, ms, nm, i64, et, true);
    lo->loop = lp;
    lo->kid[0] = dl;
    for (int q = 0, gi = 0; q < nm && !s->rw.failed; q++) {
        const Mem *m = &ms[q];
        if (m->drop) continue;
        const LoopGen *gn = &lp->gen[gi++];
        if (gn->kind != LOOP_REDUCE) continue;
        lo->kid[gn->op] = rw_copy(&s->rw, m->t->kid[0]);
        if (gn->z >= 0) lo->kid[gn->z] = rw_copy(&s->rw, m->t->kid[1]);
    }
    if (s->rw.failed || !dl->kid[0] || !dl->kid[1] || !dl->kid[2]) return rw_fail(&s->rw), false;
    int tid = rw_fresh(&s->rw, tt);
    if (tid < 0) return false;
    /* let t = loop in let m_g = aproj g t in ... (the first member's body) */
    Node *first = lets[ms[0].k];
    Node *body = first->kid[1];
    for (int q = nm - 1, gi = ngen - 1; q >= 0 && body; q--) {
        if (ms[q].drop) continue;
        Node *pj = rw_op1(&s->rw, OP_APROJ, gt[gi], rw_var(&s->rw, tid));
        if (pj) pj->a = gi;
        gi--;
        Node *l = rw_op2(&s->rw, OP_ALET, body->type, pj, body);
        if (l) l->id = ms[q].id;
        body = l;
    }
    if (!body) return rw_fail(&s->rw), false;
    first->id = tid;
    first->kid[0] = lo;
    first->kid[1] = body;
    for (int q = 1; q < nm; q++) splice_out(slot, lets[ms[q].k]);
    return !s->rw.failed;
}

/* Greedy grouping of a chain's members by space (seed 001's clusters of
 * loops over one iteration space; the ILP's objective prefers exactly
 * these merges: a shared input or a fusible edge, weight N^2): starting
 * at each member in order, the later members over the same space that
 * read its group's arrays only at their own positions, read no other let
 * bound since the group's first, and share an input with the group or
 * read a member. */
/* The chain's result, when it is a loop member or a tuple with members
 * among its components, is given lets of its own at the chain's end (in
 * the order the components are evaluated), so that its members can join
 * loops like the lets' terms. */
static void bind_results(PlanRewriteState *s, Node **slot)
{
    Node **bp = slot;
    while ((*bp)->op == OP_ALET && (*bp)->n == 2) bp = &(*bp)->kid[1];
    Node *b = *bp;
    Mem m;
    int nk = b->op == OP_ATUPLE ? b->n : 1;
    Node **kids = b->op == OP_ATUPLE ? b->kid : bp;
    int *ids = arena_alloc(&s->rw.p->arena, sizeof *ids * (size_t)(nk + 1));
    if (!ids) return (void)rw_fail(&s->rw);
    int nb = 0;
    for (int k = 0; k < nk; k++) {
        ids[k] = -1;
        if (kids[k]->type->kind == TY_ARRAY && loop_member(kids[k], &m)) ids[k] = rw_fresh(&s->rw, kids[k]->type), nb++;
    }
    if (!nb || s->rw.failed) return;
    Node *body = b;
    Node **bound = arena_alloc(&s->rw.p->arena, sizeof *bound * (size_t)nk);
    if (!bound) return (void)rw_fail(&s->rw);
    for (int k = 0; k < nk; k++) {
        bound[k] = kids[k];
        if (ids[k] >= 0) kids[k] = rw_var(&s->rw, ids[k]);
    }
    if (b->op != OP_ATUPLE) body = kids[0];
    for (int k = nk - 1; k >= 0 && body; k--) {
        if (ids[k] < 0) continue;
        Node *l = rw_op2(&s->rw, OP_ALET, body->type, bound[k], body);
        if (l) l->id = ids[k];
        body = l;
    }
    if (body) *bp = body;
}

/* The array variables term x reads, each once (seen: per id, the stamp
 * of the last term that listed it), appended to *v. */
static void reads_of(PlanRewriteState *s, const Node *x, int stamp, int *seen, int **v, int *n, int *cap, int depth)
{
    while (x && !s->rw.failed && depth <= OPT_MAX_DEPTH) {
        if (x->op == OP_AVAR && x->id < s->cap && seen[x->id] != stamp) {
            seen[x->id] = stamp;
            if (*n == *cap) {
                int c = *cap ? *cap * 2 : 64, *w = ax__realloc(*v, sizeof *w * (size_t)c);
                if (!w) return (void)rw_fail(&s->rw);
                *v = w, *cap = c;
            }
            (*v)[(*n)++] = x->id;
        }
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++) reads_of(s, x->kid[i], stamp, seen, v, n, cap, depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

/* Adds to inside[g] the reads in x of group member g's array (gidx: per
 * let of the chain, its place in the group or -1; pos: per variable, its
 * let), in one walk. */
static void count_member_reads(const Node *x, const int *pos, int nv, const int *gidx, const Mem *grp, int *inside,
                               int depth)
{
    while (x && depth <= OPT_MAX_DEPTH) {
        int q = x->op == OP_AVAR && x->id >= 0 && x->id < nv ? pos[x->id] : -1;
        if (q >= 0 && gidx[q] >= 0 && grp[gidx[q]].id == x->id) inside[gidx[q]]++;
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++)
            count_member_reads(x->kid[i], pos, nv, gidx, grp, inside, depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

/* How far ahead of a loop's first member its other members are sought:
 * members are lets of one chain, and a chain of many lets (a long
 * program) must not cost its square. */
enum { LOOP_WINDOW = 128, LOOP_MAX = 64 };

static void loops(PlanRewriteState *s, Node **slot)
{
    int nl;
    Node **lets = collect(s, slot, &nl);
    if (!lets) return;
    Mem *grp = ax__malloc(sizeof *grp * (size_t)(LOOP_MAX + 1));
    bool *used = ax__calloc((size_t)nl + 1, sizeof *used);
    /* per let: the variables its term reads (rd[rs[k] .. rs[k + 1])); per
     * variable: the let binding it in this chain (pos, -1 if none), the
     * group's stamp when a member reads it (gmark) */
    int *rs = ax__malloc(sizeof *rs * (size_t)(nl + 1)), *rd = NULL, nrd = 0, caprd = 0;
    int nv = s->cap;
    int *seen = ax__malloc(sizeof *seen * (size_t)nv), *pos = ax__malloc(sizeof *pos * (size_t)nv);
    int *gmark = ax__calloc((size_t)nv, sizeof *gmark), *gidx = ax__malloc(sizeof *gidx * (size_t)(nl + 1));
    if (!grp || !used || !rs || !seen || !pos || !gmark || !gidx) rw_fail(&s->rw);
    for (int i = 0; i < nv && !s->rw.failed; i++) seen[i] = -1, pos[i] = -1;
    for (int k = 0; k < nl && !s->rw.failed; k++) {
        rs[k] = nrd;
        reads_of(s, lets[k]->kid[0], k, seen, &rd, &nrd, &caprd, 0);
        if (lets[k]->id < nv) pos[lets[k]->id] = k;
        gidx[k] = -1;
    }
    if (!s->rw.failed) rs[nl] = nrd, recount(s);
    for (int k = 0; k < nl && !s->rw.failed; k++) {
        if (used[k] || !loop_member(lets[k]->kid[0], &grp[0])) continue;
        int nm = 1, stamp = k + 1;
        grp[0].k = k, grp[0].id = lets[k]->id;
        gidx[k] = 0;
        for (int r = rs[k]; r < rs[k + 1]; r++) gmark[rd[r]] = stamp;
        for (int j = k + 1; j < nl && j <= k + LOOP_WINDOW && nm < LOOP_MAX; j++) {
            Mem mj;
            if (used[j] || !loop_member(lets[j]->kid[0], &mj)) continue;
            mj.k = j, mj.id = lets[j]->id;
            int via = -1;
            for (int g = 0; g < nm && via < 0; g++)
                if (fold_of_filter(&mj, &grp[g])) via = g;
            /* over the space of a collect of the group (its extent is
             * the collect's shape): the group's space */
            bool over_member = false;
            if (mj.opd) {
                const Node *o = mj.opd, *e = o->op == OP_DELAYED ? o->kid[0] : NULL;
                int a = o->op == OP_AVAR ? o->id
                        : e && e->op == OP_SHAPE && e->kid[0]->op == OP_AVAR ? e->kid[0]->id : -1;
                int q = a >= 0 && a < nv ? pos[a] : -1;
                over_member = q >= k && q < j && gidx[q] >= 0 && grp[gidx[q]].id == a &&
                              grp[gidx[q]].kind == LOOP_COLLECT && space_rank(&mj) == space_rank(&grp[0]);
            }
            if (via >= 0) {
                Prim ops[16];
                mj.via = via;
                mj.neutral = known_lam(mj.t->kid[0], ops, 16);
            } else if (!over_member && !same_space(&grp[0], &mj)) {
                continue;
            }
            /* it reads no let bound since the group's first but members,
             * those at its own position only; and shares an input with
             * the group or reads a member */
            bool ok = true, linked = false;
            for (int r = rs[j]; r < rs[j + 1] && ok; r++) {
                int id = rd[r], q = pos[id];
                if (gmark[id] == stamp) linked = true;
                if (q < k || q >= j) continue;
                int in = gidx[q] >= 0 && !used[q] ? gidx[q] : -1;
                if (in < 0) ok = false;
                else if (in == mj.via) linked = true;
                else ok = reads_member_ok(&mj, &grp[in]), linked = true;
            }
            for (int g = 0; g < nm && ok; g++) ok = !apart(s, grp[g].id, mj.id);
            if (!ok || !linked) continue;
            gidx[j] = nm;
            grp[nm++] = mj;
            for (int r = rs[j]; r < rs[j + 1]; r++) gmark[rd[r]] = stamp;
        }
        /* a collect that only later members read, at their positions,
         * is not made (the counts are the chain's: a loop made above it
         * reads nothing bound here) */
        int ngen = 0, inside[LOOP_MAX];
        memset(inside, 0, sizeof inside);
        for (int h = 1; h < nm && nm >= 2; h++) count_member_reads(grp[h].t, pos, nv, gidx, grp, inside, 0);
        for (int g = 0; g < nm; g++) {
            gidx[grp[g].k] = -1;
            grp[g].drop = grp[g].kind == LOOP_COLLECT && inside[g] == s->uses[grp[g].id];
            ngen += !grp[g].drop;
        }
        if (nm < 2) continue;
        if (ngen < 2) continue;
        int ids[LOOP_MAX];
        for (int g = 0; g < nm; g++) ids[g] = grp[g].id, used[grp[g].k] = true;
        if (!make_loop(s, slot, lets, grp, nm)) break;
        char buf[256];
        size_t o = 0;
        for (int g = 0; g < nm && o < sizeof buf; g++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%sa%d%s", g ? ", " : "", ids[g], grp[g].drop ? " (not made)" : "");
        note(s, "%s fused into one loop", buf);
        for (int g = 0; g < nm; g++) {
            join(s, ids[g], ids[0]);
            if (grp[g].drop) removed(s, ids[g]);
        }
        join(s, lets[grp[0].k]->id, ids[0]);
    }
    free(grp);
    free(used);
    free(rs);
    free(rd);
    free(seen);
    free(pos);
    free(gmark);
    free(gidx);
    free(lets);
}

/* ------------------------------------------------------------ epilogues */

/* A map over the result of a fold or a scan that nothing else reads
 * becomes that consumer's epilogue: the consumer moves into the map's
 * operand (not let-bound; src/backend/cpu/codegen.c ir_epilogue: its
 * kernels apply the map's function as they store each result, so there is
 * no pass over the consumer's result).  A map over a stencil's result
 * that nothing else reads becomes the stencil of the two functions
 * composed. */
static void epilogues(PlanRewriteState *s, Node **slot)
{
    int nl;
    Node **lets = collect(s, slot, &nl);
    if (!lets) return;
    recount(s);
    int nv = s->cap, *pos = ax__malloc(sizeof *pos * (size_t)(nv > 0 ? nv : 1));
    if (!pos) return (void)rw_fail(&s->rw), free(lets);
    for (int i = 0; i < nv; i++) pos[i] = -1;
    for (int k = 0; k < nl; k++)
        if (lets[k]->id < nv) pos[lets[k]->id] = k;
    for (int k = 1; k < nl && !s->rw.failed; k++) {
        Node *t = lets[k]->kid[0];
        if (t->op != OP_MAP || t->kid[1]->op != OP_AVAR || s->uses[t->kid[1]->id] != 1) continue;
        int a = t->kid[1]->id, j = a < nv ? pos[a] : -1;
        if (j < 0 || j >= k || apart(s, a, lets[k]->id)) continue;
        Node *c = lets[j]->kid[0];
        switch (c->op) {
        case OP_FOLD: case OP_FOLD1: case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1:
            t->kid[1] = c;
            t->a = MAP_EPILOGUE;
            note(s, "map a%d applied as %s a%d stores its results", lets[k]->id, op_name(c->op), a);
            break;
        case OP_STENCIL: case OP_STENCIL2: {
            Node *f = rw_copy(&s->rw, c->kid[0]), *st = node_clone(&s->rw.p->arena, c);
            if (!f || !st) {
                rw_fail(&s->rw);
                break;
            }
            f->kid[0] = rw_apply1(&s->rw, t->kid[0], f->kid[0]);
            if (!f->kid[0]) break;
            f->type = f->kid[0]->type;
            st->kid[0] = f;
            st->type = t->type;
            lets[k]->kid[0] = st;
            note(s, "map a%d composed into the stencil a%d", lets[k]->id, a);
            break;
        }
        default:
            continue;
        }
        join(s, a, lets[k]->id);
        removed(s, a);
        splice_out(slot, lets[j]);
    }
    free(pos);
    free(lets);
}

/* ------------------------------------------------------------ walking chains */

static void walk(PlanRewriteState *s, Node **slot, int depth);

static void walk_kids(PlanRewriteState *s, Node *n, int depth)
{
    for (int i = 0; i < n->n && !s->rw.failed; i++) {
        Node *k = n->kid[i];
        if (!k) continue;
        if (k->op == OP_LAM) {
            if (k->n > 0 && k->kid[0] && op_is_array(k->kid[0]->op)) walk(s, &k->kid[0], depth + 1);
        } else if (op_is_array(k->op)) {
            walk(s, &n->kid[i], depth + 1);
        }
    }
}

static void recount(PlanRewriteState *s)
{
    if (!grow(&s->rw, s->rw.p->nvars)) return (void)rw_fail(&s->rw);
    memset(s->uses, 0, sizeof *s->uses * (size_t)s->cap);
    count_uses(s, s->rw.p->root, 0);
}

/* The lets of the chain at *slot, in order (malloc'd; *nl of them). */
static Node **collect(PlanRewriteState *s, Node **slot, int *nl)
{
    int cap = 16;
    *nl = 0;
    Node **lets = ax__malloc(sizeof *lets * (size_t)cap);
    if (!lets) return rw_fail(&s->rw);
    for (Node *x = *slot; x->op == OP_ALET && x->n == 2; x = x->kid[1]) {
        if (*nl == cap) {
            Node **l2 = ax__realloc(lets, sizeof *l2 * (size_t)(cap *= 2));
            if (!l2) {
                free(lets);
                return rw_fail(&s->rw);
            }
            lets = l2;
        }
        lets[(*nl)++] = x;
    }
    return lets;
}

/* Removes let `dead` (its variable unused: a filter fused into its fold,
 * a member's projection nothing reads; neither can fault where the
 * rewritten program would not) from the chain at *slot. */
static void splice_out(Node **slot, Node *dead)
{
    for (Node **l = slot; (*l)->op == OP_ALET && (*l)->n == 2; l = &(*l)->kid[1])
        if (*l == dead) {
            *l = dead->kid[1];
            return;
        }
}

/* One chain of array lets starting at *slot. */
static void walk(PlanRewriteState *s, Node **slot, int depth)
{
    if (s->rw.failed || depth > OPT_MAX_DEPTH) return;
    Node *n = *slot;
    if (n->op != OP_ALET) return walk_kids(s, n, depth);
    int nl;
    Node **lets = collect(s, slot, &nl);
    if (!lets) return;
    Node *last = nl ? lets[nl - 1] : NULL;
    /* nested chains first (terms of this chain, the body) */
    for (int k = 0; k < nl && !s->rw.failed; k++) walk(s, &lets[k]->kid[0], depth + 1);
    if (last) walk(s, &last->kid[1], depth + 1);

    /* a data-moving producer (a zip of arrays into tuples: QuickHull's
     * points) that fusion left manifest because several consumers read it,
     * every one at its own index: each reads the producer's sources
     * instead, and the array is not made (seed 003's vertical case, with
     * the producer copied into each consumer: it does no work to copy) */
    for (int k = 0; k < nl && !s->rw.failed; k++) {
        const Node *t = lets[k]->kid[0];
        if (!plan_copies(t)) continue;
        recount(s);
        int pid = lets[k]->id, readers = 0;
        bool ok = s->uses[pid] > 1;
        for (int j = k + 1; j <= nl && ok; j++) {
            Node *c = j < nl ? lets[j]->kid[0] : last->kid[1];
            int o = occurrences(c, pid, 0);
            if (!o) continue;
            int at = c->op == OP_FILTER || c->op == OP_FOLD1 ? 1 : c->op == OP_FOLD ? 2 : -1;
            ok = o == 1 && at > 0 && c->kid[at]->op == OP_AVAR && c->kid[at]->id == pid;
            readers += ok;
        }
        if (!ok || readers != s->uses[pid]) continue;
        for (int j = k + 1; j <= nl && !s->rw.failed; j++) {
            Node *c = j < nl ? lets[j]->kid[0] : last->kid[1];
            int at = c->op == OP_FILTER || c->op == OP_FOLD1 ? 1 : c->op == OP_FOLD ? 2 : -1;
            if (at < 0 || c->kid[at]->op != OP_AVAR || c->kid[at]->id != pid) continue;
            const Type *ixt = rw_tindex(&s->rw, t->type->rank), *i64 = ty_i64();
            int xid, iid;
            if (!rw_params(&s->rw, 1, &ixt, &xid) || !rw_params(&s->rw, 1, &i64, &iid)) break;
            Node *lix = rw_lam1(&s->rw, xid, opd_ix(s, t, rw_var(&s->rw, xid)));
            Node *llin = rw_lam1(&s->rw, iid, opd_lin(s, t, rw_var(&s->rw, iid)));
            Node *dl = lix && llin ? rw_op3(&s->rw, OP_DELAYED, t->type, opd_extent(s, t), lix, llin) : NULL;
            if (!dl) break;
            c->kid[at] = dl;
        }
        if (s->rw.failed) break;
        note(s, "a%d (moving data only) copied into its %d readers", pid, readers);
        removed(s, pid);
        splice_out(slot, lets[k]);
    }

    /* vertical: a filter read only by folds (lets' terms or the body),
     * each reading it at its own position: every one reads the filter's
     * input instead (and the horizontal step below merges them) */
    for (int k = 0; k < nl && !s->rw.failed; k++) {
        if (lets[k]->kid[0]->op != OP_FILTER) continue;
        recount(s);
        int ys = lets[k]->id, seen = 0, nf = 0;
        bool ok = true;
        for (int j = k + 1; j <= nl && ok; j++) {
            Node *t = j < nl ? lets[j]->kid[0] : last->kid[1];
            int occ = 0;
            if (can_absorb(s, t, lets[k], &occ)) {
                /* the clustering puts the filter in its first fold's pass,
                 * or keeps it a loop of its own */
                if (!nf) ok = together(s, ys, j < nl ? lets[j]->id : plan_body_key(t));
                seen += occ, nf++;
            }
            else if (occurrences(t, ys, 0)) ok = false;
        }
        if (!ok || nf == 0 || seen != s->uses[ys]) continue;
        bool first = true;
        for (int j = k + 1; j <= nl && !s->rw.failed; j++) {
            Node **site = j < nl ? &lets[j]->kid[0] : &last->kid[1];
            int occ = 0;
            int64_t was = j < nl ? lets[j]->id : plan_body_key(*site);
            if (!can_absorb(s, *site, lets[k], &occ)) continue;
            ok = filter_into_fold(s, site, j < nl ? lets[j] : last, j == nl, lets[k]);
            /* the filter is in its first reader's pass; the others share
             * it when the horizontal step below merges them (else each
             * computes the predicate again) */
            if (first) join(s, ys, was), first = false;
            int64_t now = j < nl ? lets[j]->id : (*site)->op == OP_ALET ? (*site)->id : was;
            if (now != was) join(s, now, was);   /* the pair fold's let */
        }
        removed(s, ys);
        if (s->rw.failed) break;
        note(s, "filter a%d fused into the %d fold%s reading it", ys, nf, nf > 1 ? "s" : "");
        splice_out(slot, lets[k]);
    }
    /* the chain as it is now */
    free(lets);
    if (s->rw.failed || !(lets = collect(s, slot, &nl))) return;
    /* horizontal: folds over one extent */
    bool *done = ax__calloc((size_t)(nl ? nl : 1), sizeof *done);
    int *m = ax__malloc(sizeof *m * (size_t)(nl ? nl : 1));
    if (!done || !m) rw_fail(&s->rw);
    /* (folds of a filter's output that others read too are left to the
     * filter's loop below, each a reduction of its own) */
    for (int k = 0; k < nl && done; k++) {
        const Node *f = lets[k]->kid[0], *o = is_fold(f) ? fold_opd(f) : NULL;
        int a = !o ? -1 : o->op == OP_AVAR ? o->id
                : o->op == OP_DELAYED && o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR
                    ? o->kid[0]->kid[0]->id : -1;
        for (int j = 0; j < k && a >= 0; j++)
            if (lets[j]->id == a && lets[j]->kid[0]->op == OP_FILTER) done[k] = true;
    }
    for (int k = 0; k < nl && !s->rw.failed; k++) {
        const Node *f = lets[k]->kid[0];
        if (done[k] || !is_fold(f)) continue;
        int nm = 0;
        m[nm++] = k;
        for (int j = k + 1; j < nl && nm < 64; j++) {
            const Node *h = lets[j]->kid[0];
            if (done[j] || h->op != f->op || h->type->rank != f->type->rank) continue;
            if (!together(s, lets[k]->id, lets[j]->id)) continue;
            if (!same_extent(fold_opd(f), fold_opd(h)) || reads_any(h, lets, k, j)) continue;
            m[nm++] = j;
        }
        if (nm < 2) continue;
        recount(s);
        for (int q = 0; q < nm; q++) done[m[q]] = true;
        int ids[64];
        for (int q = 0; q < nm; q++) ids[q] = lets[m[q]]->id;
        Node *inl[64];
        if (merge_siblings(s, lets, m, nm, inl)) {
            join(s, lets[m[0]]->id, ids[0]);   /* the tuple's let */
            for (int q = 0; q < nm; q++) {
                join(s, ids[q], ids[0]);
                if (!inl[q]) continue;
                /* (a projection of an earlier pass inlined is no loop the
                 * clustering knows: nothing joins) */
                if (key_of(s, inl[q]->id) != PLAN_KEY_GONE) join(s, inl[q]->id, ids[0]), removed(s, inl[q]->id);
                splice_out(slot, inl[q]);   /* spliced once: later ones find it gone */
            }
            /* members read only by scalar code (now reading the tuple)
             * need no array of their own */
            recount(s);
            if (s->uses[ids[0]] == 0) {
                Node *first = lets[m[0]];
                if (first->kid[1]->op == OP_ALET && first->kid[1]->id == ids[0]) splice_out(slot, first->kid[1]);
            }
            for (int q = 1; q < nm; q++)
                if (s->uses[ids[q]] == 0) splice_out(slot, lets[m[q]]);
            char buf[256];
            size_t o = 0;
            for (int q = 0; q < nm && o < sizeof buf; q++)
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%sa%d", q ? ", " : "", ids[q]);
            note(s, "sibling folds %s fused into one pass", buf);
        }
    }
    free(done);
    free(m);
    free(lets);
    /* multi-generator loops: what the steps above left over one space */
    unsigned dbg = s->rw.cx->opt.debug;
    if ((dbg & (AX_DEBUG_NO_LOOPS | AX_DEBUG_NO_EPILOGUES)) != (AX_DEBUG_NO_LOOPS | AX_DEBUG_NO_EPILOGUES) && !s->rw.failed)
        bind_results(s, slot);   /* (the body's arrays let-bound: members, maps with epilogues) */
    if (!s->rw.failed && !(dbg & AX_DEBUG_NO_LOOPS)) loops(s, slot);
    /* maps over a fold's, a scan's or a stencil's result: as they store */
    if (!s->rw.failed && !(dbg & AX_DEBUG_NO_EPILOGUES)) epilogues(s, slot);
}

int opt_plan(ax_ctx *cx, Program *p, PlanLog *log, const PlanClusters *cl)
{
    PlanRewriteState s;
    memset(&s, 0, sizeof s);
    s.rd = -1;
    s.log = log;
    s.cl = cl;
    if (p && p->root && rw_open(&s.rw, cx, p)) {
        s.rw.pass = &s;
        s.rw.rule = reads;
        s.rw.grow = grow;
        if (grow(&s.rw, p->nvars)) walk(&s, &p->root, 0);
        else rw_fail(&s.rw);
    }
    rw_close(&s.rw);
    free(s.uses);
    free(s.key);
    free(s.rdv);
    free(s.member);
    if (s.rw.failed) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory (planner)");
        return -1;
    }
    return s.changed;
}

/* ------------------------------------------------------------ for the loop graph */

/* The rewrites' own tests, asked by the loop graph (plangraph.c) so that
 * the pairs it offers the ILP (ilp.c) are the ones the rewrites above can
 * carry out. */
bool plan_copies(const Node *t)
{
    /* (a generate of rank 2 or more is read linearly through fromLinear, a
     * division per dimension: not free to copy) */
    return (t->op == OP_GENERATE && t->type->rank <= 1 && moves_only(t->kid[1], 0)) ||
           (t->op == OP_MAP && t->kid[1]->op == OP_AVAR && moves_only(t->kid[0], 0));
}

bool plan_inlinable(const Node *t) { return inlinable(t); }

bool plan_absorbs(const Node *fold, const Node *flt, int *occ) { return can_absorb(NULL, fold, flt, occ); }

bool plan_absorb_keeps_fold(const Node *fold)
{
    Prim ops[16];
    return known_lam(fold->kid[0], ops, 16);
}

bool plan_same_term(const Node *a, const Node *b, bool copies)
{
    return term_eq(a, b, 0, copies);
}
