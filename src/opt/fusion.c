/*
 * Array fusion (thesis s.4, paper s.4; docs/ARCHITECTURE.md, "The pipeline").
 *
 * Phase 1, producer/producer (thesis 4.2-4.3): a bottom-up contraction of
 * each array term into a delayed value, a Cunctation:
 *
 *   Done v             a manifest array (or tuple of arrays) in variable v;
 *   Yield sh f         extent sh, element at ix is f ix;
 *   Step sh p f v      extent sh, element at ix is f (v ! p ix), v manifest.
 *
 * A smart constructor per producer (generate, map, zipWith, backpermute,
 * replicate, slice, reshape, transform) fuses it into the delayed value of
 * its input; `compute` turns a delayed value back into the most specific
 * node (variable, map, backpermute, transform, generate).  The thesis' Embed
 * pairs a delayed value with the bindings that bring its manifest arrays
 * into scope (Extend); here those bindings go, in evaluation order, onto
 * one list per "level" (the whole program, a branch of acond, the body of
 * an awhile function), and the level's result is wrapped in them.  That
 * list is the thesis' let floating: manifest data bound in the middle of a
 * producer chain moves out of the chain's way.
 *
 * Let elimination (thesis 4.5, aletD; paper 4.4): `alet a = bnd in body`
 * with bnd fusible is inlined when a's data is used at most once in body.
 * Uses are counted once for the whole program before the contraction
 * (variable ids are unique, so one count per id serves every binding):
 *  - an array operand `a` counts 1;
 *  - shape-only uses (shape a) are free: they become the delayed value's
 *    extent;
 *  - a read from scalar code (a ! ix, linear reads) counts as MANY: scalar
 *    code runs per element, so inlining there would recompute the producer
 *    at every read; except that a producer that does no work, only picks
 *    components of a manifest array's elements where they are (map fst, the
 *    unzip of an array of tuples), is inlined even so when it has at most
 *    one array operand use: reading it costs what reading a copy of it
 *    would, and the copy (a kernel and an array as long as the source) goes;
 *  - an operand inside an awhile function counts as MANY (per iteration)
 *    when its binding is outside that function.
 * Otherwise bnd is computed and the binding kept, so a producer used by two
 * consumers stays manifest and no work is duplicated (the paper's p1).
 *
 * Phase 2, producer/consumer (thesis 4.4): every consumer (fold, fold1,
 * the segmented folds, the six scans, permute's source, filter) takes each
 * array input either manifest (a variable) or as a DELAYED node carrying
 * the extent, the index form and the linear-index form; the linear form
 * reads the source linearly when the index map keeps linear order (a Step
 * with the identity map over the source's own extent, or a reshape), else
 * it is the index form at fromLinear(extent, i).  Stencil inputs and
 * permute's defaults are made manifest, as in the seeds.  Boundaries (acond
 * branches, awhile functions and its initial value, array tuples) compute
 * their arrays; a consumer's result is manifest and never fuses into what
 * reads it (the paper's c2 into p6 and p7).
 *
 * Kernel size.  Fusion makes one kernel of a chain of producers however
 * long, and a C compiler's time grows faster than linearly in the size of
 * a function (docs/guide/performance.md, "Long programs compile in linear
 * time", has the figures).  So each delayed value counts the scalar
 * nodes of the functions fused into it (Cunc.work, additive because
 * composition let-binds), and a producer that would take a delayed input
 * of at least KERNEL_WORK / 2 past KERNEL_WORK makes that input first: a
 * chain is cut into kernels of between half and all of the bound, so the
 * compile grows linearly with the program, and each cut costs one store
 * and one load per element against thousands of operations.  One large
 * function is never cut: only chains are (the bound is above the chain
 * of Mandelbrot's unrolled iterations, which is not cut).
 *
 * Terms.  Functions are LAM nodes; composing two means applying one to the
 * other's body.  Application (the rewrite kit's rw_apply) let-binds each
 * non-trivial argument (the thesis' `combine` does the same), so an
 * argument is evaluated once; the simplifier that runs after fusion
 * shrinks the lets that are used once.  The core IR is a tree whose
 * binders are unique program-wide, so every piece of a delayed value is a
 * template that is copied, with fresh binders, each time it is placed in
 * the result (the kit's rw_copy, in its rw->flat way, with reads() below
 * as its rule).
 *
 * Each source array node's `num` ends up holding the number (from 1) of
 * the kernel it was fused into, 0 for none; the Graphviz view (dot.c)
 * draws the network before fusion grouped that way, as the paper's Figure
 * 3 does.
 *
 * Deviations from the seeds:
 *  - zipWith takes two or more arrays (zipWith3); Step is kept when all
 *    inputs read one array through one index map.
 *  - A Yield may carry a linear-index form (from a Done or linear Step
 *    input, or a zipWith of such inputs of rank <= 1 or of equal extents),
 *    so that the dot product's consumer reads both vectors linearly; in
 *    rank 0 and 1 the linear form never needs fromLinear.
 *  - reshape fuses as a backpermute; when its new extent does not
 *    provably have the size of its input (the same extent, or a flatten /
 *    unflatten), the extent and the index transform carry its size check
 *    (prim RESHAPE), so the fault it makes unfused is made still.
 *  - compute also recovers replicate and slice of a manifest array, so
 *    that their run-time errors still name the operation.
 *  - Segment lengths of the segmented folds may be delayed too.
 *  - Uses are counted once, on the program before fusion, rather than on
 *    each let's fused body, which the thesis' aletD then fuses a second
 *    time after an elimination (twice per level of nested lets): as
 *    conservative or more, in linear time.
 *  - A fused producer computes only the elements its consumer reads: a
 *    run-time fault in an element nobody reads (an integer division by
 *    zero, an index out of bounds) does not happen, as in the seeds.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rewrite.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MANY = 2, READ = 4 };   /* uses: a count up to MANY, READ: read from scalar code */

typedef enum { C_DONE, C_YIELD, C_STEP } CKind;

/* The source producers fused into a delayed value: a rope (join nodes have
 * n == NULL), for tagging them with the kernel they end up in. */
typedef struct Org {
    Node *n;
    const struct Org *a, *b;
} Org;

/* A delayed array (thesis Listing "Cunctation").  The Node fields are
 * templates: never placed in the result directly, always copied. */
typedef struct Cunc {
    CKind k;
    const Type *type;     /* the array (tuple) type */
    int v;                /* DONE: the variable; STEP: the source array */
    Node *sh;             /* YIELD, STEP: the extent; STEP: NULL = the source's */
    Node *p;              /* STEP: LAM(ix)->source ix; NULL = identity */
    Node *f;              /* YIELD: LAM(ix)->e; STEP: LAM(a)->b, NULL = identity */
    Node *lf;             /* YIELD: LAM(i64)->e, the linear form, or NULL */
    bool lin;             /* STEP: element i (row-major) of the result is element i of v */
    Node *pure;           /* STEP: the source replicate / slice this is, over a manifest v */
    const Org *org;
    int64_t work;         /* scalar nodes of the functions fused in (Kernel size) */
} Cunc;

/* The cost model's view of a term: how the consumer that will read it
 * walks it.  `inner` is the term's dimension that the consumer's innermost
 * loop runs along (a fold's or a scan's row; -1: none known, as for a
 * kernel that writes its result in row-major order, where a transposed
 * read is strided whether it is fused or stored); `reuse` is how many
 * times each element is read (a replicate on the way multiplies it; 0:
 * more than once, by extents known only at run time). */
typedef struct Access {
    int inner;
    int64_t reuse;
} Access;

/* What a source array variable stands for while its binding's body is
 * fused: another variable (let floating, Done), or an inlined delayed value
 * (let elimination). */
typedef struct Repl {
    bool inl;
    int v;
    Cunc cc;
} Repl;

typedef struct FuseState {
    Rewrite rw;           /* the program's (rw.flat: fusion's way to copy lets);
                             its rule is reads() below */
    int nvars0;           /* ids below this are the source program's */
    int cap;              /* room in repl, uses */
    Repl **repl;          /* array variable id -> what it stands for */
    unsigned char *uses;  /* data uses of each array variable (0, 1, MANY; | READ) */
    int *bid;             /* the current level's bindings, in order */
    Node **bnd;
    int nb, capb;
    AlphaEq eq;           /* binders paired while comparing (aeq) */
    int ntag;             /* kernels numbered so far */
    Access acc;           /* how the consumer being built reads the term being embedded */
    bool costs;           /* the cost model is on (not AX_DEBUG_NO_COST_MODEL) */
    char *notes;          /* its decisions, a line each (malloc'd; the plan dump shows them) */
    size_t nnotes, capnotes;
} FuseState;

/* ------------------------------------------------------------ plumbing */

/* (rw.grow) repl and uses cover every variable. */
static bool grow(Rewrite *rw, int nvars)
{
    FuseState *f = rw->pass;
    int need = nvars + 1;
    if (need <= f->cap) return true;
    int cap = f->cap ? f->cap : 64;
    while (cap < need) cap *= 2;
    Repl **r = ax__realloc(f->repl, sizeof *r * (size_t)cap);
    if (r) f->repl = r;
    unsigned char *u = r ? ax__realloc(f->uses, (size_t)cap) : NULL;
    if (!u) return false;
    f->uses = u;
    for (int i = f->cap; i < cap; i++) {
        f->repl[i] = NULL;
        f->uses[i] = 0;
    }
    f->cap = cap;
    return true;
}

/* The extent of array variable v. */
static Node *shape_of(FuseState *f, int v) { return rw_shape(&f->rw, rw_var(&f->rw, v)); }

/* ---------------------------------------------------------- provenance */

static const Org *org_leaf(FuseState *f, Node *n)
{
    Org *o = arena_alloc(&f->rw.p->arena, sizeof *o);
    if (!o) return rw_fail(&f->rw);
    o->n = n;
    return o;
}

static const Org *org_join(FuseState *f, const Org *a, const Org *b)
{
    if (!a) return b;
    if (!b) return a;
    Org *o = arena_alloc(&f->rw.p->arena, sizeof *o);
    if (!o) return rw_fail(&f->rw);
    o->a = a;
    o->b = b;
    return o;
}

static void org_tag(const Org *o, int tag)
{
    for (; o; o = o->b) {
        if (o->n) o->n->num = tag;
        org_tag(o->a, tag);
    }
}

/* ---------------------------------------------------------- copying */

static Node *cc_shape(FuseState *f, const Cunc *c);
static Node *cc_index(FuseState *f, const Cunc *c, Node *ix);
static Node *cc_linear(FuseState *f, const Cunc *c, Node *i);

/* (rw.rule) The kit copies scalar code with the substitution in force and
 * fresh binders; array variables floated or inlined (f->repl) are
 * fusion's: a floated one is its new variable, and reads of an inlined
 * one become its delayed value's extent / element (let elimination,
 * thesis 4.5, replaceA). */
static bool reads(Rewrite *rw, const Node *x, Node **out)
{
    FuseState *f = rw->pass;
    if (x->op == OP_AVAR && f->repl[x->id]) {
        if (f->repl[x->id]->inl) *out = rw_internal(rw, "an inlined array where a variable is needed");
        else *out = rw_var(rw, f->repl[x->id]->v);
        return true;
    }
    if (x->op != OP_SHAPE && x->op != OP_INDEX && x->op != OP_LINDEX) return false;
    const Node *a = x->kid[0];
    const Repl *r = a->op == OP_AVAR ? f->repl[a->id] : NULL;
    if (!r || !r->inl) return false;
    if (x->op == OP_SHAPE) {
        *out = cc_shape(f, &r->cc);
    } else {
        Node *e = rw_copy(rw, x->kid[1]);
        *out = x->op == OP_INDEX ? cc_index(f, &r->cc, e) : cc_linear(f, &r->cc, e);
    }
    return true;
}

/* g . h as a template; NULL is the identity.  Nothing is copied:
 *   \x -> let y = (h's body) in (g's body)
 * with x h's parameter and y g's.  A chain of n maps so composes in time
 * linear in n; the copy made when the result is placed renames every
 * binder, and scoping is lexical, so a template shared twice in one term
 * (g == h) is still right. */
static Node *compose(FuseState *f, Node *g, Node *h)
{
    if (!g) return h;
    if (!h) return g;
    Node *body = rw_let(&f->rw, g->param[0]->id, h->kid[0], g->kid[0]);
    Node *l = body ? rw_op1(&f->rw, OP_LAM, body->type, body) : NULL;
    if (!l) return NULL;
    l->nparam = 1;
    l->param = h->param;
    return l;
}

/* ------------------------------------------------------- comparisons */

/* Alpha-equivalence of two scalar terms (the thesis' match, s.3). */
static bool aeq(FuseState *f, const Node *a, const Node *b)
{
    bool eq = alpha_eq(&f->eq, a, b, NULL);
    if (f->eq.failed) rw_fail(&f->rw);
    return eq;
}

/* Is the function \x -> x (on an index: its components in order; on a
 * tuple: its projections in order)? */
static bool is_id(const Node *l)
{
    if (!l || l->op != OP_LAM || l->nparam != 1) return false;
    const Node *b = l->kid[0], *q = l->param[0];
    if (b->op == OP_VAR) return b->id == q->id;
    bool ix = b->op == OP_IXCONS && q->type->kind == TY_INDEX;
    bool tu = b->op == OP_TUPLE && q->type->kind == TY_TUPLE;
    if (!(ix || tu) || b->n != q->type->n) return false;
    for (int d = 0; d < b->n; d++) {
        const Node *k = b->kid[d];
        if (k->op != (ix ? OP_IXGET : OP_PROJ) || k->a != d || k->kid[0]->op != OP_VAR || k->kid[0]->id != q->id)
            return false;
    }
    return true;
}

/* Does scalar term e only pick components (variables, projections,
 * tuples, constants, lets of those)? */
static bool no_work(const Node *e)
{
    switch (e->op) {
    case OP_VAR: case OP_CONST: return true;
    case OP_PROJ: return no_work(e->kid[0]);
    case OP_TUPLE: case OP_LET:
        for (int i = 0; i < e->n; i++)
            if (!no_work(e->kid[i])) return false;
        return true;
    default: return false;
    }
}

/* Is c a manifest array's elements where they are, at most with components
 * picked (Step with the source's extent, the identity index map and a
 * function that does no work)?  Reading c at an index is then reading the
 * source there: the same work, and the same bounds, so the same faults.
 * (A Step that does a little work, radix sort's bit of each key, is not
 * inlined into the scalar reads of its consumers: on the CPU backend their
 * loops slow down by more than the kernel and the array it saves cost;
 * `axle bench radixsort` measures it.) */
static bool free_step(const Cunc *c)
{
    return c->k == C_STEP && !c->sh && !c->p && !c->pure && (!c->f || (c->f->op == OP_LAM && no_work(c->f->kid[0])));
}

/* The scalar nodes a kernel may be made of before a chain is cut there
 * (Kernel size, at the top). */
enum { KERNEL_WORK = 16384 };

/* -------------------------------------------------- delayed values */

static Cunc done(const Type *t, int v)
{
    Cunc c;
    memset(&c, 0, sizeof c);
    c.k = C_DONE;
    c.type = t;
    c.v = v;
    return c;
}

/* The extent as a template: a Step or Done over v's own extent has none. */
static Node *shape_t(FuseState *f, const Cunc *c)
{
    return c->k != C_DONE && c->sh ? c->sh : shape_of(f, c->v);
}

static Node *cc_shape(FuseState *f, const Cunc *c)
{
    return c->k != C_DONE && c->sh ? rw_copy(&f->rw, c->sh) : shape_of(f, c->v);
}

/* The element at index ix (a result node) of a delayed value. */
static Node *cc_index(FuseState *f, const Cunc *c, Node *ix)
{
    if (c->k == C_YIELD) return rw_apply1(&f->rw, c->f, ix);
    Node *e = rw_node(&f->rw, OP_INDEX, 2, c->k == C_DONE ? c->type->elt : f->rw.p->vartype[c->v]->elt), *a = rw_var(&f->rw, c->v);
    Node *six = c->k == C_STEP && c->p ? rw_apply1(&f->rw, c->p, ix) : ix;
    if (!e || !a || !six) return NULL;
    e->kid[0] = a;
    e->kid[1] = six;
    return c->k == C_STEP && c->f ? rw_apply1(&f->rw, c->f, e) : e;
}

/* The element at row-major position i (a result node). */
static Node *cc_linear(FuseState *f, const Cunc *c, Node *i)
{
    if (c->k == C_YIELD && c->lf) return rw_apply1(&f->rw, c->lf, i);
    if (c->k == C_DONE || (c->k == C_STEP && c->lin)) {
        Node *e = rw_node(&f->rw, OP_LINDEX, 2, f->rw.p->vartype[c->v]->elt), *a = rw_var(&f->rw, c->v);
        if (!e || !a || !i) return NULL;
        e->kid[0] = a;
        e->kid[1] = i;
        return c->k == C_STEP && c->f ? rw_apply1(&f->rw, c->f, e) : e;
    }
    const Type *ixt = rw_tindex(&f->rw, c->type->rank);
    if (c->type->rank <= 1) {
        /* in rank 0 and 1 the row-major position is the index */
        Node *ix = rw_node(&f->rw, OP_IXCONS, c->type->rank, ixt);
        if (!ix || !i) return NULL;
        if (c->type->rank == 1) ix->kid[0] = i;
        return cc_index(f, c, ix);
    }
    return cc_index(f, c, rw_prim(&f->rw, P_FROMLIN, ixt, cc_shape(f, c), i));
}

static Node *index_lam(FuseState *f, const Cunc *c)
{
    int x = rw_fresh(&f->rw, rw_tindex(&f->rw, c->type->rank));
    return rw_lam1(&f->rw, x, cc_index(f, c, rw_var(&f->rw, x)));
}

static Node *linear_lam(FuseState *f, const Cunc *c)
{
    int i = rw_fresh(&f->rw, ty_i64());
    return rw_lam1(&f->rw, i, cc_linear(f, c, rw_var(&f->rw, i)));
}

static bool has_linear(const Cunc *c)
{
    return c->k == C_DONE || (c->k == C_STEP && c->lin) || (c->k == C_YIELD && c->lf);
}

/* The thesis' `yield`: any single array as extent + index function. */
static Cunc yield(FuseState *f, const Cunc *c)
{
    if (c->k == C_YIELD) return *c;
    Cunc y;
    memset(&y, 0, sizeof y);
    y.k = C_YIELD;
    y.type = c->type;
    y.sh = shape_t(f, c);
    y.f = index_lam(f, c);
    y.lf = has_linear(c) ? linear_lam(f, c) : NULL;
    y.org = c->org;
    return y;
}

/* The thesis' `step`: Done and Step as a Step; false for a Yield. */
static bool step(const Cunc *c, Cunc *s)
{
    if (c->k == C_YIELD || c->type->kind != TY_ARRAY) return false;
    *s = *c;
    if (c->k == C_DONE) {
        s->k = C_STEP;
        s->sh = s->p = s->f = NULL;
        s->lin = true;
    }
    return true;
}

/* A Step that changes nothing is its source. */
static Cunc norm(Cunc c)
{
    if (c.k == C_STEP && !c.sh && !c.p && !c.f) {
        const Org *o = c.org;
        c = done(c.type, c.v);
        c.org = o;
    }
    return c;
}

/* ------------------------------------------------- smart constructors */

/* mapD (thesis Listing mapD). */
static Cunc map_d(FuseState *f, const Type *t, Node *fn, const Cunc *in)
{
    Cunc c, s;
    if (is_id(fn)) {
        c = *in;
        return c;
    }
    if (step(in, &s)) {
        c = s;
        c.f = compose(f, fn, s.f);
    } else {
        c = *in;
        c.f = compose(f, fn, in->f);
        c.lf = in->lf ? compose(f, fn, in->lf) : NULL;
    }
    c.type = t;
    c.pure = NULL;
    return norm(c);
}

/* backpermuteD (paper s.4.2): sh' and q (NULL: identity) are templates. */
static Cunc backpermute_d(FuseState *f, const Type *t, Node *sh, Node *q, const Cunc *in)
{
    Cunc c, s;
    if (!q && aeq(f, sh, shape_t(f, in))) {
        c = *in;
        c.type = t;
        return c;
    }
    if (step(in, &s)) {
        c = s;
        c.sh = sh;
        c.p = compose(f, s.p, q);
        c.lin = false;
        if (!c.p && aeq(f, sh, shape_of(f, s.v))) c.sh = NULL, c.lin = true;
    } else {
        c = *in;
        c.sh = sh;
        c.f = compose(f, in->f, q);
        c.lf = NULL;
    }
    c.type = t;
    c.pure = NULL;
    return norm(c);
}

/* The intersection of k extents (templates) as a template (zipWith's
 * result extent). */
static Node *intersect(FuseState *f, int k, Node **sh, int rank)
{
    bool same = true;
    for (int i = 1; i < k && same; i++) same = aeq(f, sh[0], sh[i]);
    if (same) return sh[0];
    const Type *ixt = rw_tindex(&f->rw, rank);
    int *s = arena_alloc(&f->rw.p->arena, sizeof *s * (size_t)k);
    Node *r = rw_node(&f->rw, OP_IXCONS, rank, ixt);
    if (!s) return rw_fail(&f->rw);
    if (!r) return NULL;
    for (int i = 0; i < k; i++) s[i] = rw_fresh(&f->rw, ixt);
    for (int d = 0; d < rank; d++) {
        Node *m = rw_ixget(&f->rw, d, rw_var(&f->rw, s[0]));
        for (int i = 1; i < k; i++) m = rw_prim(&f->rw, P_MIN, ty_i64(), m, rw_ixget(&f->rw, d, rw_var(&f->rw, s[i])));
        if (!(r->kid[d] = m)) return NULL;
    }
    for (int i = k - 1; i >= 0; i--) r = rw_let(&f->rw, s[i], sh[i], r);
    return r;
}

/* \x -> fn (g_1 x) ... (g_k x) for x of type pt; g_i NULL: identity.  A
 * template, made without copying (as compose):
 *   \x -> let a_1 = x in let y_1 = (g_1's body) in ... in (fn's body)
 * with a_i g_i's parameter and y_i fn's i-th. */
static Node *combine(FuseState *f, Node *fn, int k, Node *const *g, const Type *pt)
{
    int x = rw_fresh(&f->rw, pt);
    Node *body = fn->kid[0];
    for (int i = k - 1; i >= 0 && body; i--) {
        body = rw_let(&f->rw, fn->param[i]->id, g[i] ? g[i]->kid[0] : rw_var(&f->rw, x), body);
        if (g[i]) body = rw_let(&f->rw, g[i]->param[0]->id, rw_var(&f->rw, x), body);
    }
    return rw_lam1(&f->rw, x, body);
}

/* zipWithD (thesis Listing zipWithD), for k >= 2 inputs. */
static Cunc zipwith_d(FuseState *f, const Type *t, Node *fn, int k, const Cunc *in)
{
    Cunc c, *s = arena_alloc(&f->rw.p->arena, sizeof *s * (size_t)k);
    Node **g = arena_alloc(&f->rw.p->arena, sizeof *g * (size_t)k), **sh = arena_alloc(&f->rw.p->arena, sizeof *sh * (size_t)k);
    memset(&c, 0, sizeof c);
    c.type = t;
    if (!s || !g || !sh) return rw_fail(&f->rw), c;
    const Org *org = NULL;
    for (int i = 0; i < k; i++) org = org_join(f, org, in[i].org);
    /* Both (all) inputs read one manifest array through one index map:
     * still a Step. */
    bool same = true;
    for (int i = 0; i < k && same; i++)
        same = step(&in[i], &s[i]) && s[i].v == s[0].v &&
               (s[i].p == s[0].p || (s[i].p && s[0].p && aeq(f, s[i].p, s[0].p)));
    if (same) {
        bool nosh = true, lin = true;
        for (int i = 0; i < k; i++) {
            nosh = nosh && !s[i].sh;
            lin = lin && s[i].lin;
            sh[i] = shape_t(f, &s[i]);
            g[i] = s[i].f;
        }
        c = s[0];
        c.type = t;
        c.sh = nosh ? NULL : intersect(f, k, sh, t->rank);
        c.lin = lin && (nosh || (c.sh && aeq(f, c.sh, sh[0])));
        c.f = combine(f, fn, k, g, f->rw.p->vartype[s[0].v]->elt);
        c.org = org;
        c.pure = NULL;
        return norm(c);
    }
    bool lin = true;
    Node **lg = arena_alloc(&f->rw.p->arena, sizeof *lg * (size_t)k);
    if (!lg) return rw_fail(&f->rw), c;
    for (int i = 0; i < k; i++) {
        s[i] = yield(f, &in[i]);
        sh[i] = s[i].sh;
        g[i] = s[i].f;
        lg[i] = s[i].lf;
        lin = lin && lg[i];
    }
    c.k = C_YIELD;
    c.sh = intersect(f, k, sh, t->rank);
    c.f = combine(f, fn, k, g, rw_tindex(&f->rw, t->rank));
    /* Row-major positions agree when the extents do, and always in rank
     * 0 and 1 (the intersection is a prefix of each input). */
    if (lin && t->rank > 1)
        for (int i = 1; i < k && lin; i++) lin = aeq(f, sh[0], sh[i]);
    c.lf = lin ? combine(f, fn, k, lg, ty_i64()) : NULL;
    c.org = org;
    return c;
}

/* ---------------------------------------------------------- the pass */

static bool embed(FuseState *f, Node *x, Cunc *out);

static bool push_bind(FuseState *f, int id, Node *b)
{
    if (!b || id < 0) return false;
    if (f->nb == f->capb) {
        int cap = f->capb ? 2 * f->capb : 32;
        int *i = ax__realloc(f->bid, sizeof *i * (size_t)cap);
        if (i) f->bid = i;
        Node **n = i ? ax__realloc(f->bnd, sizeof *n * (size_t)cap) : NULL;
        if (!n) return rw_fail(&f->rw), false;
        f->bnd = n;
        f->capb = cap;
    }
    f->bid[f->nb] = id;
    f->bnd[f->nb] = b;
    f->nb++;
    return true;
}

/* Binds a manifest computation on the current level: Done of a fresh
 * variable (the thesis' `done` and `embed`). */
static bool bind_done(FuseState *f, Node *y, Cunc *out)
{
    if (!y) return false;
    int id = rw_fresh(&f->rw, y->type);
    if (!push_bind(f, id, y)) return false;
    *out = done(y->type, id);
    return true;
}

/* The thesis' compute': the most specific manifest node for a delayed
 * value; a new kernel unless it is Done. */
static Node *compute(FuseState *f, const Cunc *c)
{
    if (f->rw.failed) return NULL;
    if (c->k == C_DONE) return rw_var(&f->rw, c->v);
    Node *y;
    if (c->k == C_STEP && c->pure) {
        const Node *x = c->pure;
        if ((y = rw_node(&f->rw, x->op, x->n, c->type))) {
            y->slice = x->slice;
            y->kid[0] = rw_var(&f->rw, c->v);
            for (int i = 1; i < x->n; i++) y->kid[i] = rw_copy(&f->rw, x->kid[i]);
        }
    } else if (c->k == C_YIELD) {
        if ((y = rw_node(&f->rw, OP_GENERATE, 2, c->type))) {
            y->kid[0] = rw_copy(&f->rw, c->sh);
            y->kid[1] = rw_copy(&f->rw, c->f);
        }
    } else if (!c->sh && !c->p && !c->f) {
        return rw_var(&f->rw, c->v);
    } else if (!c->sh && !c->p) {
        if ((y = rw_node(&f->rw, OP_MAP, 2, c->type))) {
            y->kid[0] = rw_copy(&f->rw, c->f);
            y->kid[1] = rw_var(&f->rw, c->v);
        }
    } else {
        Node *p = c->p ? rw_copy(&f->rw, c->p) : NULL;
        if (!c->p) {
            int x = rw_fresh(&f->rw, rw_tindex(&f->rw, c->type->rank));
            p = rw_lam1(&f->rw, x, rw_var(&f->rw, x));
        }
        if ((y = rw_node(&f->rw, c->f ? OP_TRANSFORM : OP_BACKPERMUTE, c->f ? 4 : 3, c->type))) {
            y->kid[0] = cc_shape(f, c);
            y->kid[1] = p;
            if (c->f) y->kid[2] = rw_copy(&f->rw, c->f);
            y->kid[y->n - 1] = rw_var(&f->rw, c->v);
        }
    }
    if (!y || f->rw.failed) return NULL;
    for (int i = 0; i < y->n; i++)
        if (!y->kid[i]) return NULL;
    y->num = ++f->ntag;
    org_tag(c->org, y->num);
    return y;
}

/* A manifest variable holding c (computing it on the current level). */
static int manifest_var(FuseState *f, const Cunc *c)
{
    if (c->k == C_DONE) return c->v;
    Cunc d;
    return bind_done(f, compute(f, c), &d) ? d.v : -1;
}

static void note(FuseState *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The work of function l (a template, or NULL). */
static int64_t work_of(const Node *l) { return l ? ir_count_nodes(l) : 0; }

/* Before a producer adds `add` nodes of work to its inputs in[0..k):
 * each delayed input of at least KERNEL_WORK / 2 is made, largest first,
 * while the kernel would pass KERNEL_WORK (Kernel size, at the top).
 * False on failure. */
static bool bound_work(FuseState *f, Cunc *in, int k, int64_t add)
{
    for (;;) {
        int64_t total = add;
        int big = -1;
        for (int i = 0; i < k; i++) {
            total += in[i].work;
            if (in[i].k != C_DONE && in[i].work >= KERNEL_WORK / 2 && (big < 0 || in[i].work > in[big].work)) big = i;
        }
        if (total <= KERNEL_WORK || big < 0) return true;
        note(f, "kernel size: %lld scalar nodes would pass %d: the input of %lld is made first",
             (long long)total, KERNEL_WORK, (long long)in[big].work);
        int v = manifest_var(f, &in[big]);
        if (v < 0) return false;
        in[big] = done(in[big].type, v);
    }
}

/* Phase 2 (thesis 4.4, `delayed`): a consumer's input, manifest or delayed
 * with its extent, index and linear-index forms. */
static Node *delayed(FuseState *f, const Cunc *c, const Org **org)
{
    if (c->k == C_DONE) return rw_var(&f->rw, c->v);
    *org = org_join(f, *org, c->org);
    Node *y = rw_node(&f->rw, OP_DELAYED, 3, c->type);
    if (!y) return NULL;
    y->kid[0] = cc_shape(f, c);
    y->kid[1] = index_lam(f, c);
    y->kid[2] = linear_lam(f, c);
    return y->kid[0] && y->kid[1] && y->kid[2] ? y : NULL;
}

/* A level: x fused with the bindings it makes wrapped around it (the
 * whole program, a branch of acond, the body of an awhile function). */
static Node *level(FuseState *f, Node *x)
{
    int nb0 = f->nb;
    Cunc c;
    Node *r = embed(f, x, &c) ? compute(f, &c) : NULL;
    for (int j = f->nb - 1; j >= nb0 && r; j--) {
        if (j == f->nb - 1 && r->op == OP_AVAR && r->id == f->bid[j]) {
            r = f->bnd[j];    /* alet v = X in v  is  X */
            continue;
        }
        Node *l = rw_node(&f->rw, OP_ALET, 2, r->type);
        if (!l) return NULL;
        l->id = f->bid[j];
        l->kid[0] = f->bnd[j];
        l->kid[1] = r;
        r = l;
    }
    f->nb = nb0;
    return r;
}

/* ------------------------------------------------------------ the cost model
 *
 * Fusion inlines a producer into its consumer whenever the rules above
 * allow.  One case makes that slower than storing the producer, and the
 * model below finds it: a producer that permutes dimensions (a transpose,
 * any backpermute whose index function is a reordering of its index's
 * components) read by a fold or a scan along a dimension that is not its
 * source's innermost, so that the consumer's innermost loop strides
 * through the source, and read more than once per element (a replicate
 * between them: a matrix product's transposed operand).  Per element of
 * the source, with S the elements of a cache line that a strided read
 * wastes (64 bytes over the element's size) and R the reuse:
 *
 *   fused:   R strided reads                        cost R * S
 *   stored:  one strided read and a write, then R   cost S + 1 + R
 *            reads in order
 *
 * and the producer is stored when that is cheaper (R >= 2 for any S >= 4;
 * an R known only at run time counts as 2).  The decision and both costs
 * go to the program's notes, which `axle dump P --stage plan` prints;
 * AX_DEBUG_NO_COST_MODEL turns the model off. */

/* Is operand k of consumer x the array whose rows its innermost loop
 * walks (a fold's or a scan's input; not the segment lengths)? */
static bool reduces_rows(const Node *x, int k)
{
    switch (x->op) {
    case OP_FOLD: case OP_FOLDSEG: case OP_SCANL: case OP_SCANR: case OP_SCANLEX: case OP_SCANREX: return k == 2;
    case OP_FOLD1: case OP_FOLD1SEG: case OP_SCANL1: case OP_SCANR1: return k == 1;
    default: return false;
    }
}

/* The source dimension that a backpermute's index function q reads from
 * the result's dimension d, when q only reorders components (source
 * component i is `ixget j x`); -1 when d is not read, q does more, or d is
 * -1. */
static int perm_inner(const Node *q, int d)
{
    if (d < 0 || !q || q->op != OP_LAM || q->nparam != 1) return -1;
    const Node *b = q->kid[0];
    int x = q->param[0]->id, found = -1;
    if (b->op != OP_IXCONS) return -1;
    for (int i = 0; i < b->n; i++) {
        const Node *c = b->kid[i];
        if (c->op != OP_IXGET || c->kid[0]->op != OP_VAR || c->kid[0]->id != x) return -1;
        if ((int)c->a == d) found = i;
    }
    return found;
}

/* A replicate's or a slice's source seen through it: the dimension the
 * consumer walks, renumbered, and the reuse times each constant extent
 * the replicate adds (0 for one known only at run time). */
static Access slice_access(const Node *x, Access a)
{
    const Slice *sp = x->slice;
    bool rep = x->op == OP_REPLICATE;
    int inner = -1;
    for (int d = 0, k = 0, ord = 0; d < sp->n; d++) {
        if (sp->fixed[d]) {
            if (rep) {
                const Node *e = x->kid[1 + k];
                int64_t n = e->op == OP_CONST ? e->c.i : 0;
                a.reuse = a.reuse > 0 && a.reuse < (INT64_C(1) << 31) && n > 0 && n < (INT64_C(1) << 31) ? a.reuse * n : 0;
            }
            k++;
        } else {
            /* replicate: entry d is the result's dimension d and the
             * source's ord; slice: the source's d and the result's ord */
            if (rep ? d == a.inner : ord == a.inner) inner = rep ? ord : d;
            ord++;
        }
    }
    a.inner = inner;
    return a;
}

static void note(FuseState *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(FuseState *f, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = strlen(line);
    if (f->nnotes + len + 2 > f->capnotes) {
        size_t cap = f->capnotes ? f->capnotes * 2 : 1024;
        while (cap < f->nnotes + len + 2) cap *= 2;
        char *p = ax__realloc(f->notes, cap);
        if (!p) return;   /* the notes are for the dump: their loss changes no decision */
        f->notes = p, f->capnotes = cap;
    }
    memcpy(f->notes + f->nnotes, line, len);
    f->nnotes += len;
    f->notes[f->nnotes++] = '\n';
    f->notes[f->nnotes] = 0;
}

/* The model's decision for a backpermute over a source of type st, read
 * through access a, its result's dimension a.inner coming from source
 * dimension sdim: true to store it. */
static bool store_strided(FuseState *f, const Type *st, Access a, int sdim)
{
    int sr = st->rank;
    if (a.inner < 0 || sdim < 0 || sdim == sr - 1 || a.reuse == 1) return false;
    int bytes = st->elt->width > 0 ? sc_bits(ty_leaf(st->elt, 0)) / 8 : 0;
    int64_t S = bytes > 0 && bytes < 64 ? 64 / bytes : 1;
    int64_t R = a.reuse > 1 ? a.reuse : 2;
    double fused = (double)R * (double)S, stored = (double)S + 1 + (double)R;
    bool store = stored < fused;
    note(f, "%s a backpermute reading dimension %d of %d of its source in its consumer's inner loop "
            "(stride), each element read %s%lld times: cost fused %.0f, stored %.0f (per element, "
            "S=%lld)",
         store ? "stored" : "fused", sdim, sr, a.reuse > 1 ? "" : "at least ", (long long)R, fused, stored,
         (long long)S);
    return store;
}

/* How a consumer takes operand k: 0 not an array, 1 delayed or manifest,
 * 2 manifest only (stencil inputs, permute's defaults). */
static int role(const Node *x, int k)
{
    switch (x->op) {
    case OP_FOLD: case OP_SCANL: case OP_SCANR: case OP_SCANLEX: case OP_SCANREX: return k == 2;
    case OP_FOLD1: case OP_SCANL1: case OP_SCANR1: case OP_FILTER: return k == 1;
    case OP_FOLDSEG: return k == 2 || k == 3;
    case OP_FOLD1SEG: return k == 1 || k == 2;
    case OP_PERMUTE: return k == 1 ? 2 : k == 3;
    case OP_STENCIL: return k == 1 ? 2 : 0;
    case OP_STENCIL2: return k == 1 || k == 2 ? 2 : 0;
    case OP_SORT: return 2;   /* every key is read before one is written */
    default: return 0;
    }
}

/* A consumer: its inputs embedded (phase 2), its result a new manifest
 * array on the current level. */
static bool consumer(FuseState *f, Node *x, Cunc *out)
{
    Node *y = rw_clone(&f->rw, x);
    if (!y) return false;
    const Org *org = NULL;
    for (int k = 0; k < x->n; k++) {
        int r = role(x, k);
        if (r == 0) {
            y->kid[k] = rw_copy(&f->rw, x->kid[k]);
        } else {
            Cunc c;
            f->acc = (Access){reduces_rows(x, k) ? x->kid[k]->type->rank - 1 : -1, 1};
            if (!embed(f, x->kid[k], &c)) return false;
            y->kid[k] = r == 2 ? rw_var(&f->rw, manifest_var(f, &c)) : delayed(f, &c, &org);
        }
        if (!y->kid[k]) return false;
    }
    y->num = x->num = ++f->ntag;
    org_tag(org, y->num);
    return bind_done(f, y, out);
}

/* Can reshape sh' of an array of extent `from` be fused?  Only when the
 * sizes provably agree, so that ax_reshape's size check cannot be lost:
 * the same extent, a flatten [size from], or its inverse. */
static bool same_size(FuseState *f, const Node *sh, const Node *from)
{
    if (aeq(f, sh, from)) return true;
    const Node *a = sh, *b = from;
    for (int turn = 0; turn < 2; turn++) {
        if (a->op == OP_IXCONS && a->n == 1 && a->kid[0]->op == OP_PRIM && a->kid[0]->a == P_SHAPESIZE &&
            aeq(f, a->kid[0]->kid[0], b))
            return true;
        a = from;
        b = sh;
    }
    return false;
}

static bool reshape(FuseState *f, Node *x, Cunc *out)
{
    Cunc in, s;
    if (!embed(f, x->kid[1], &in)) return false;
    Node *sh = rw_copy(&f->rw, x->kid[0]), *from = shape_t(f, &in);
    if (!sh || !from) return false;
    if (!same_size(f, sh, from)) {
        /* Not provably size-preserving: ax_reshape's size check goes into
         * the index transform and the extent (prim RESHAPE: sh' if its
         * size is the input's, else the fault unfused reshape makes), and
         * the reshape fuses like a backpermute (issue: reshape as an
         * index transform, its check kept as a check) */
        if (!(sh = rw_prim(&f->rw, P_RESHAPE, sh->type, sh, from))) return false;
    } else if (ty_eq(x->type, in.type) && aeq(f, sh, from)) {
        *out = in;
        return true;
    }
    /* ix -> fromLinear(from, toLinear(sh', ix)): keeps the row-major order,
     * so linear reads stay linear. */
    const Type *ixt = rw_tindex(&f->rw, x->type->rank), *sixt = rw_tindex(&f->rw, in.type->rank);
    int i = rw_fresh(&f->rw, ixt);
    Node *q = rw_lam1(&f->rw, i, rw_prim(&f->rw, P_FROMLIN, sixt, rw_copy(&f->rw, from),
                                         rw_prim(&f->rw, P_TOLIN, ty_i64(), rw_copy(&f->rw, sh), rw_var(&f->rw, i))));
    if (!q) return false;
    Cunc c;
    if (step(&in, &s)) {
        c = s;
        c.p = compose(f, s.p, q);
    } else {
        c = in;
        c.f = compose(f, in.f, q);
    }
    c.sh = sh;
    c.type = x->type;
    c.pure = NULL;
    c.org = org_join(f, in.org, org_leaf(f, x));
    *out = c;
    return !f->rw.failed;
}

/* replicate and slice as backpermutes (thesis Listing "operations"). */
static bool slice(FuseState *f, Node *x, Cunc *out)
{
    Cunc in;
    const Slice *sp = x->slice;
    bool rep = x->op == OP_REPLICATE;
    f->acc = slice_access(x, f->acc);
    if (!embed(f, x->kid[0], &in)) return false;
    int rr = x->type->rank, sr = in.type->rank, s, i;
    const Type *sixt = rw_tindex(&f->rw, sr), *rixt = rw_tindex(&f->rw, rr);
    /* extent: let s = source extent in (...) */
    Node *sh = rw_node(&f->rw, OP_IXCONS, rr, rixt);
    i = rw_fresh(&f->rw, rixt);
    Node *qb = rw_node(&f->rw, OP_IXCONS, sr, sixt);
    if (!sh || i < 0 || !qb || (s = rw_fresh(&f->rw, sixt)) < 0) return false;
    for (int d = 0, k = 0, a = 0, b = 0; d < sp->n; d++) {
        bool fx = sp->fixed[d];
        if (rep) {            /* result dimension d */
            sh->kid[d] = fx ? rw_copy(&f->rw, x->kid[1 + k++]) : rw_ixget(&f->rw, a++, rw_var(&f->rw, s));
            if (!fx) qb->kid[b++] = rw_ixget(&f->rw, d, rw_var(&f->rw, i));
        } else {              /* source dimension d */
            if (fx) {
                qb->kid[d] = rw_copy(&f->rw, x->kid[1 + k++]);
            } else {
                sh->kid[a] = rw_ixget(&f->rw, d, rw_var(&f->rw, s));
                qb->kid[d] = rw_ixget(&f->rw, a++, rw_var(&f->rw, i));
            }
        }
    }
    for (int d = 0; d < rr; d++)
        if (!sh->kid[d]) return false;
    for (int d = 0; d < sr; d++)
        if (!qb->kid[d]) return false;
    Node *ext = rw_let_flat(&f->rw, s, cc_shape(f, &in), sh), *q = rw_lam1(&f->rw, i, qb);
    if (!ext || !q) return false;
    *out = backpermute_d(f, x->type, ext, is_id(q) ? NULL : q, &in);
    /* Computed on its own, it stays a replicate / slice: the most specific
     * node, whose run-time errors name the operation the user wrote. */
    if (in.k == C_DONE && out->k == C_STEP) out->pure = x;
    out->org = org_join(f, out->org, org_leaf(f, x));
    return !f->rw.failed;
}

/* An awhile function: the same parameters, its body a level of its own. */
static Node *alam(FuseState *f, const Node *l)
{
    if (!l || l->op != OP_LAM) return rw_internal(&f->rw, "awhile without a function");
    Node *y = rw_clone(&f->rw, l);
    if (!y) return NULL;
    if (l->nparam > 0) {
        if (!(y->param = arena_alloc(&f->rw.p->arena, sizeof *y->param * (size_t)l->nparam))) return rw_fail(&f->rw);
        for (int i = 0; i < l->nparam; i++)
            if (!(y->param[i] = rw_clone(&f->rw, l->param[i]))) return NULL;
    }
    return (y->kid[0] = level(f, l->kid[0])) ? y : NULL;
}

/* aletD (thesis 4.5): a chain of array lets, iterated. */
static bool alet(FuseState *f, Node *x, Cunc *out)
{
    for (; x->op == OP_ALET; x = x->kid[1]) {
        int a = x->id, nb0 = f->nb;
        Cunc c;
        Access body = f->acc;
        f->acc = (Access){-1, 1};   /* its reader is not known yet */
        bool ok = embed(f, x->kid[0], &c);
        f->acc = body;
        if (!ok) return false;
        if (c.k == C_DONE) {
            /* let floating: manifest data needs no binding of its own.  A
             * manifest computation made just now takes a's name. */
            if (f->nb > nb0 && f->bid[f->nb - 1] == c.v && c.v >= f->nvars0) {
                f->bid[f->nb - 1] = a;
                continue;
            }
            Repl *r = arena_alloc(&f->rw.p->arena, sizeof *r);
            if (!r) return rw_fail(&f->rw), false;
            r->v = c.v;
            f->repl[a] = r;
        } else if ((f->uses[a] & ~READ) <= 1 && (!(f->uses[a] & READ) || free_step(&c))) {
            /* let elimination: used at most once, shape uses free (reads
             * too, of a producer that does no work) */
            Repl *r = arena_alloc(&f->rw.p->arena, sizeof *r);
            if (!r) return rw_fail(&f->rw), false;
            r->inl = true;
            r->cc = c;
            f->repl[a] = r;
        } else {
            /* shared: computed once, kept */
            if (!push_bind(f, a, compute(f, &c))) return false;
        }
    }
    return embed(f, x, out);
}

/* A Yield of x's extent (kid 0) and index function (kid 1): generate, or
 * a delayed input. */
static void yield_of(FuseState *f, const Node *x, Cunc *out)
{
    memset(out, 0, sizeof *out);
    out->k = C_YIELD;
    out->type = x->type;
    out->sh = rw_copy(&f->rw, x->kid[0]);
    out->f = rw_copy(&f->rw, x->kid[1]);
    out->work = work_of(x->kid[1]);
}

/* Phase 1: the delayed value of array term x (thesis embedPreAcc); the
 * manifest arrays it needs are bound on the current level.  The cost
 * model's view (f->acc) is x's on entry; each case sets its operands'
 * (access_through) and embed restores it after. */
static bool embed_node(FuseState *f, Node *x, Cunc *out);
static bool embed(FuseState *f, Node *x, Cunc *out)
{
    Access saved = f->acc;
    bool ok = embed_node(f, x, out);
    f->acc = saved;
    return ok;
}

static bool embed_node(FuseState *f, Node *x, Cunc *out)
{
    if (f->rw.failed) return false;
    if (x && x->op != OP_MAP && x->op != OP_ZIPWITH && x->op != OP_ALET && x->op != OP_BACKPERMUTE &&
        x->op != OP_TRANSFORM && x->op != OP_REPLICATE && x->op != OP_SLICE)
        f->acc = (Access){-1, 1};   /* map and zipWith keep their element's view; the rest set their own */
    if (!x || !op_is_array(x->op)) return rw_internal(&f->rw, "not an array term"), false;
    Cunc in, *ins;
    Node *y;
    switch (x->op) {
    case OP_AVAR: {
        const Repl *r = f->repl[x->id];
        *out = !r ? done(x->type, x->id) : r->inl ? r->cc : done(x->type, r->v);
        return true;
    }
    case OP_ALET:
        return alet(f, x, out);
    case OP_USE:
        if (!(y = rw_clone(&f->rw, x))) return false;
        return bind_done(f, y, out);

    /* producers */
    case OP_GENERATE:
        yield_of(f, x, out);
        out->org = org_leaf(f, x);
        return !f->rw.failed;
    case OP_MAP: {
        int64_t w = work_of(x->kid[0]);
        if (!embed(f, x->kid[1], &in) || !bound_work(f, &in, 1, w)) return false;
        *out = map_d(f, x->type, rw_copy(&f->rw, x->kid[0]), &in);
        out->work = out->k == C_DONE ? 0 : in.work + w;
        out->org = org_join(f, out->org, org_leaf(f, x));
        return !f->rw.failed;
    }
    case OP_ZIPWITH: {
        int k = x->n - 1;
        if (!(ins = arena_alloc(&f->rw.p->arena, sizeof *ins * (size_t)k))) return rw_fail(&f->rw), false;
        for (int i = 0; i < k; i++)
            if (!embed(f, x->kid[1 + i], &ins[i])) return false;
        int64_t w = work_of(x->kid[0]);
        if (!bound_work(f, ins, k, w)) return false;
        *out = zipwith_d(f, x->type, rw_copy(&f->rw, x->kid[0]), k, ins);
        out->work = w;
        for (int i = 0; i < k; i++) out->work += ins[i].work;
        out->org = org_join(f, out->org, org_leaf(f, x));
        return !f->rw.failed;
    }
    case OP_BACKPERMUTE: case OP_TRANSFORM: {
        bool tr = x->op == OP_TRANSFORM;
        Node *src = x->kid[tr ? 3 : 2];
        Access at = f->acc;
        int sdim = perm_inner(x->kid[1], at.inner);
        bool store = f->costs && store_strided(f, src->type, at, sdim);
        f->acc = (Access){sdim, store ? 1 : at.reuse};
        int64_t w = work_of(x->kid[1]) + (tr ? work_of(x->kid[2]) : 0);
        if (!embed(f, src, &in) || !bound_work(f, &in, 1, w)) return false;
        Node *q = rw_copy(&f->rw, x->kid[1]);
        const Type *mid = tr ? rw_tarray(&f->rw, in.type->elt, x->type->rank) : x->type;
        *out = backpermute_d(f, mid, rw_copy(&f->rw, x->kid[0]), is_id(q) ? NULL : q, &in);
        if (tr && !f->rw.failed) *out = map_d(f, x->type, rw_copy(&f->rw, x->kid[2]), out);
        out->work = out->k == C_DONE ? 0 : in.work + w;
        out->org = org_join(f, out->org, org_leaf(f, x));
        if (store && !f->rw.failed) {
            /* computed here, once: its consumer reads it row by row */
            int v = manifest_var(f, out);
            if (v < 0) return false;
            *out = done(x->type, v);
        }
        return !f->rw.failed;
    }
    case OP_REPLICATE: case OP_SLICE:
        return slice(f, x, out);
    case OP_RESHAPE:
        return reshape(f, x, out);
    case OP_DELAYED:
        /* a fused program fused again: its delayed inputs are Yields */
        yield_of(f, x, out);
        out->lf = rw_copy(&f->rw, x->kid[2]);
        return !f->rw.failed;

    /* consumers */
    case OP_FOLD: case OP_FOLD1: case OP_FOLDSEG: case OP_FOLD1SEG:
    case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX:
    case OP_PERMUTE: case OP_FILTER: case OP_STENCIL: case OP_STENCIL2: case OP_SORT:
        return consumer(f, x, out);
    case OP_UNIT:
        if (!(y = rw_node(&f->rw, OP_UNIT, 1, x->type)) || !(y->kid[0] = rw_copy(&f->rw, x->kid[0]))) return false;
        y->num = x->num = ++f->ntag;
        return bind_done(f, y, out);

    /* boundaries: their arrays are computed where they are */
    case OP_ACOND:
        if (!(y = rw_node(&f->rw, OP_ACOND, 3, x->type))) return false;
        if (!(y->kid[0] = rw_copy(&f->rw, x->kid[0])) || !(y->kid[1] = level(f, x->kid[1])) ||
            !(y->kid[2] = level(f, x->kid[2])))
            return false;
        return bind_done(f, y, out);
    case OP_AWHILE:
        if (!(y = rw_node(&f->rw, OP_AWHILE, 3, x->type))) return false;
        if (!embed(f, x->kid[2], &in) || !(y->kid[2] = compute(f, &in))) return false;
        if (!(y->kid[0] = alam(f, x->kid[0])) || !(y->kid[1] = alam(f, x->kid[1]))) return false;
        return bind_done(f, y, out);
    case OP_ATUPLE:
        if (!(y = rw_node(&f->rw, OP_ATUPLE, x->n, x->type))) return false;
        for (int i = 0; i < x->n; i++)
            if (!embed(f, x->kid[i], &in) || !(y->kid[i] = compute(f, &in))) return false;
        return bind_done(f, y, out);
    case OP_APROJ:
        if (!(y = rw_node(&f->rw, OP_APROJ, 1, x->type))) return false;
        y->a = x->a;
        if (!embed(f, x->kid[0], &in) || !(y->kid[0] = compute(f, &in))) return false;
        return bind_done(f, y, out);
    case OP_COMPUTE: {
        /* ax_compute: its operand is fused as usual, then made here,
         * whatever reads it (a manifest array, thesis 4.3's `done`) */
        if (!embed(f, x->kid[0], &in)) return false;
        int v = manifest_var(f, &in);
        if (v < 0) return false;
        *out = done(x->type, v);
        return true;
    }
    default:
        return rw_internal(&f->rw, op_name(x->op)), false;
    }
}

/* ------------------------------------------------------------ counting */

static void add_use(FuseState *f, int id, int k)
{
    if (id < 0 || id >= f->cap) return;
    int r = f->uses[id] & READ, u = (f->uses[id] & ~READ) + k;
    f->uses[id] = (unsigned char)((u >= MANY ? MANY : u) | r);
}

/* Data uses of every array variable (see the top of the file); also
 * clears the kernel numbers of the source's array nodes.  depth counts the
 * awhile functions around x; bdepth[id] is the depth at which let binder
 * id was bound (0 for variables bound otherwise: conservative).  A use
 * deeper than its binding runs once per iteration of a loop that the
 * binding is outside of, and counts as MANY; a let inside an awhile body
 * used inside the same body is used once per iteration of it, as a let
 * outside any loop is used once. */
static void count(FuseState *f, Node *x, int depth, int *bdepth)
{
    while (x) {
        if (op_is_array(x->op)) x->num = 0;
        switch (x->op) {
        case OP_AVAR:
            if (x->id >= 0 && x->id < f->cap) add_use(f, x->id, depth > bdepth[x->id] ? MANY : 1);
            return;
        case OP_ALET:
            if (x->id >= 0 && x->id < f->cap) bdepth[x->id] = depth;
            break;
        case OP_SHAPE:
            return;
        case OP_INDEX: case OP_LINDEX:
            if (x->kid[0]->op == OP_AVAR && x->kid[0]->id >= 0 && x->kid[0]->id < f->cap)
                f->uses[x->kid[0]->id] |= READ;
            x = x->kid[1];
            continue;
        case OP_LAM:
            /* awhile's functions run once per iteration */
            x = x->kid[0];
            if (op_is_array(x->op)) depth++;
            continue;
        default:
            break;
        }
        if (x->n == 0) return;
        for (int i = 0; i < x->n - 1; i++) count(f, x->kid[i], depth, bdepth);
        x = x->kid[x->n - 1];   /* let bodies and the last operand: iterated */
    }
}

int fuse_program(ax_ctx *cx, Program *p, unsigned dbg)
{
    if (!p || !p->root) return 0;
    FuseState f;
    memset(&f, 0, sizeof f);
    f.nvars0 = p->nvars;
    f.costs = !(dbg & AX_DEBUG_NO_COST_MODEL);
    f.acc = (Access){-1, 1};
    int *bdepth = NULL;
    if (rw_open(&f.rw, cx, p)) {
        f.rw.pass = &f;
        f.rw.flat = true;
        f.rw.rule = reads;
        f.rw.grow = grow;
        if (!grow(&f.rw, p->nvars) || !(bdepth = ax__calloc((size_t)f.cap, sizeof *bdepth))) rw_fail(&f.rw);
    }
    if (bdepth) {
        count(&f, p->root, 0, bdepth);
        free(bdepth);
        Node *r = level(&f, p->root);
        if (r && !f.rw.failed) p->root = r;
    }
    if (f.notes && !f.rw.failed) {
        /* the program's notes (for the plan dump), after any earlier pass's */
        size_t had = p->notes ? strlen(p->notes) : 0;
        char *n = arena_alloc(&p->arena, had + f.nnotes + 1);
        if (n) {
            if (had) memcpy(n, p->notes, had);
            memcpy(n + had, f.notes, f.nnotes + 1);
            p->notes = n;
        }
    }
    free(f.notes);
    bool failed = f.rw.failed;
    const char *internal = f.rw.internal;
    rw_close(&f.rw);
    alpha_free(&f.eq);
    free(f.repl);
    free(f.uses);
    free(f.bid);
    free(f.bnd);
    if (failed) {
        if (internal) ctx_error(cx, AX_ERR_BUILD, "fusion: internal error: %s", internal);
        else ctx_error(cx, AX_ERR_NOMEM, "fusion: out of memory");
        return -1;
    }
    return 0;
}
