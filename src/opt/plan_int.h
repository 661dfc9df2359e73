/*
 * Inside the planner's rewrites (opt.h opt_plan; the essay is plan.c's):
 * their state, and what their files share.  One file per rewrite:
 *
 *   plan.c          the pass: its state, the chains of lets it walks, the
 *                   order of the steps
 *   planterms.c     what the steps share: the elements and extents of
 *                   operands, analyses of terms, known operators and their
 *                   neutral elements, the log and the clustering's answers
 *   plancopy.c      a producer that only moves data, copied into its readers
 *   planfilter.c    a filter fused into the folds that read it
 *   plansiblings.c  sibling folds merged into one pass
 *   planloops.c     multi-generator loops
 *   planepilogue.c  maps applied as a consumer stores its results
 *
 * Terms are made and copied with the rewrite kit (rewrite.h), in the
 * program's arena.  Names: plan_* are the planner's to the rest of axle
 * (opt.h), pl_* the files' to each other.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_OPT_PLAN_INT_H
#define AX_OPT_PLAN_INT_H

#include "rewrite.h"

typedef struct PlanRewriteState {
    Rewrite rw;          /* the program's; its rule is plan.c's reads */
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
    /* The nodes the recounts have walked: each chain's steps recount the
     * whole program, so a program of many chains costs the product; past
     * PLAN_RECOUNT_BUDGET the remaining chains are left as fusion made
     * them (plan.c walk), and the plan dump says so. */
    int64_t walked;
    bool over_budget;
} PlanRewriteState;

/* Node visits of the recounts one planning may make (a fraction of a
 * second; the built-in programs make under 10^6). */
#define PLAN_RECOUNT_BUDGET ((int64_t)50 * 1000 * 1000)

/* ------------------------------------------------------------ the chain (plan.c) */

/* s->uses counted again over the whole program. */
void pl_recount(PlanRewriteState *s);
/* The lets of the chain at *slot, in order (malloc'd; *nl of them). */
Node **pl_collect(PlanRewriteState *s, Node **slot, int *nl);
/* Removes let `dead` from the chain at *slot. */
void pl_splice_out(Node **slot, Node *dead);

/* ------------------------------------------------------------ the steps, per chain */

/* Each rewrites the chain at *slot, whose lets are lets[0..nl) (last: the
 * last one, whose body ends the chain, or NULL): lets it removes are
 * spliced out of the chain, not of lets[]. */
void pl_copy_movers(PlanRewriteState *s, Node **slot, Node **lets, int nl, Node *last);   /* plancopy.c */
void pl_filters_into_folds(PlanRewriteState *s, Node **slot, Node **lets, int nl, Node *last);   /* planfilter.c */
void pl_sibling_folds(PlanRewriteState *s, Node **slot);   /* plansiblings.c */
void pl_bind_results(PlanRewriteState *s, Node **slot);   /* planloops.c */
void pl_loops(PlanRewriteState *s, Node **slot);   /* planloops.c */
void pl_epilogues(PlanRewriteState *s, Node **slot);   /* planepilogue.c */

/* ------------------------------------------------------------ terms (planterms.c) */

/* A consumer operand's extent, and its element at linear position i /
 * index ix (result nodes, placed): an array variable read directly, a
 * delayed array's forms, or a producer inlined into a cluster (map of an
 * array variable, generate). */
Node *pl_opd_extent(PlanRewriteState *s, const Node *o);
Node *pl_opd_lin(PlanRewriteState *s, const Node *o, Node *i);
Node *pl_opd_ix(PlanRewriteState *s, const Node *o, Node *ix);
/* lam's body, its two parameters replaced by copies of a and b (cheap:
 * projections of a variable). */
Node *pl_subst2(PlanRewriteState *s, const Node *lam, Node *a, Node *b);
/* `map (\t -> proj k t) (avar to)`: a member's result as an array, for
 * the uses that need one. */
Node *pl_proj_map(PlanRewriteState *s, int to, int k);

/* Structural equality of binder-free scalar terms (plan_same_term). */
bool pl_same_term(const Node *a, const Node *b, int depth);
/* The extents of two operands, compared without copying. */
bool pl_same_extent(const Node *a, const Node *b);
/* A term made of constants and tuples only. */
bool pl_is_const_term(const Node *x, int depth);
/* Per leaf, the primitive of an operator that is componentwise a
 * commutative one (+, *, min, max, bit operations, and/or); false when it
 * is not.  Only scalars and flat tuples of scalars, of width <= maxw. */
bool pl_known_lam(const Node *f, Prim *ops, int maxw);
/* The neutral element of op on sc; per leaf of t, those of ops. */
Node *pl_neutral(PlanRewriteState *s, Prim op, ax_scalar sc);
Node *pl_neutrals(PlanRewriteState *s, const Prim *ops, const Type *t);

static inline bool pl_is_fold(const Node *x) { return x->op == OP_FOLD || x->op == OP_FOLD1; }
static inline const Node *pl_fold_opd(const Node *x) { return x->kid[x->op == OP_FOLD ? 2 : 1]; }

/* The log (PlanLog): a rewrite made (counted, and its line), two loops
 * now in one pass, a let whose array is no longer made. */
void pl_note(PlanRewriteState *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pl_join(PlanRewriteState *s, int64_t a, int64_t b);
void pl_removed(PlanRewriteState *s, int64_t id);
/* The clustering's answers (opt.h plan_together, plan_apart), for let
 * variables or chain bodies' keys; key_of: the key a let variable has
 * there. */
int64_t pl_key_of(const PlanRewriteState *s, int64_t a);
bool pl_together(const PlanRewriteState *s, int64_t a, int64_t b);
bool pl_apart(const PlanRewriteState *s, int64_t a, int64_t b);

#endif /* AX_OPT_PLAN_INT_H */
