/*
 * The rewrite kit: making terms of the core IR, substituting for their
 * variables, copying them with fresh names, and comparing them up to
 * renaming.  Every pass that builds code uses it (fusion.c, licm.c, the
 * planner's rewrites plan*.c, and libaxle_mpi's normalise.c and
 * localise.c; fusion.c and acse.c compare with it), as every
 * transformation of Haskell's Accelerate uses
 * Data/Array/Accelerate/Trafo/Substitution.hs: one way to rename, written
 * once.  (The simplifier and CSE rebuild terms with bookkeeping of their
 * own, counts and fallibility per node, and make their nodes
 * themselves.)
 *
 * Ownership.  A pass opens a Rewrite on a program (rw_open) and closes it
 * when done (rw_close).  Every node, type and parameter array the kit
 * makes is allocated in that program's arena (rw->p->arena) and lives as
 * long as the program; nothing is freed node by node, and a node the kit
 * made may be placed in the program, kept as a template, or dropped.  The
 * kit's own tables (the substitution and its undo stack) are malloc'd and
 * freed by rw_close.  A copy never modifies the nodes it copies.
 *
 * Failure.  Out of memory, a term nested deeper than OPT_MAX_DEPTH, or an
 * ill-formed term sets rw->failed, and it stays set: every maker returns
 * NULL once failed and when given a NULL operand, so a pass builds whole
 * expressions and checks once.  The kit records no error on the context:
 * the pass says what failed, in its own words (rw->internal, when set,
 * says that a term was ill-formed rather than that memory ran out).
 *
 * Variables.  The core IR binds each variable id once in the whole
 * program (binders are unique), so a copy gives every binder in it (a
 * let's variable, a lambda's parameters) a fresh id of the program
 * (rw_fresh) and renames its uses; substitution then never captures.
 *
 * Two ways to copy lets.  Fusion's (rw->flat) flattens a let bound to a
 * let into the chain, `let x = (let y = e in b) in body` becoming `let y
 * = e in let x = b in body` (nothing is captured, and the order of
 * evaluation is the same): its composed functions nest that way, n maps
 * deep, and must not be copied (nor later walked) n deep.  The other
 * passes' copies keep lets as they are.  The two also take fresh ids in
 * their own order, fusion a let's before copying its bound term, the
 * others after, a lambda's parameters before its body in both: so each
 * pass's output, variable names included, is what it was before the kit
 * (one order for all would rename variables in the planner's output).
 *
 * The substitution.  Per variable id, a term that stands for the variable
 * while copying (rw_sub): each use is replaced by a copy of that term,
 * itself copied with the substitution in force.  Entries are scoped:
 * rw_mark before setting them, rw_restore(mark) after, which puts back
 * what they replaced.
 *
 * A pass's own rule (rw->rule, may be NULL): asked about every node a
 * copy meets that is not a binder (let, lambda) or a substituted variable,
 * before the kit copies it node for node; it may answer with the copy
 * itself (fusion: reads of an inlined array become its delayed value's
 * element; the planner: reads of a merged loop's array become the
 * member's element; the MPI localiser: reads become reads of the rank's
 * rows).  rw->pass is the pass's state, for the rule.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_OPT_REWRITE_H
#define AX_OPT_REWRITE_H

#include "opt.h"

typedef struct RwSave RwSave;
typedef struct Rewrite Rewrite;
struct Rewrite {
    ax_ctx *cx;             /* the context the nodes are made in (Node.cx) */
    Program *p;             /* the program: its arena, its variables */
    bool failed;            /* sticky (see the top) */
    bool flat;              /* fusion's way to copy lets (see the top) */
    const char *internal;   /* what was ill-formed (the first), or NULL */
    /* the pass's (may be NULL) */
    void *pass;
    bool (*rule)(Rewrite *rw, const Node *x, Node **out);   /* true: *out is x's copy */
    bool (*grow)(Rewrite *rw, int nvars);   /* after a fresh variable: the pass's per-variable
                                               tables cover ids below nvars (false: out of memory) */
    /* the kit's own */
    Node **sub;             /* per variable id: what stands for it while copying */
    int capsub;
    RwSave *save;           /* the substitution's undo stack */
    int nsave, capsave;
    int depth;              /* of the copy under way */
};

/* Opens a rewrite of p (nodes made in cx); false when out of memory (then
 * rw_close is still called). */
bool rw_open(Rewrite *rw, ax_ctx *cx, Program *p);
void rw_close(Rewrite *rw);
/* Failure: sets rw->failed and returns NULL (rw_internal also records
 * what was ill-formed, when it is the first failure). */
void *rw_fail(Rewrite *rw);
void *rw_internal(Rewrite *rw, const char *what);

/* ------------------------------------------------------------ variables and substitution */

/* A new variable of the program, of type t; -1 when failed. */
int rw_fresh(Rewrite *rw, const Type *t);
/* Fresh variables of types t[0..n) into ids; false when failed. */
bool rw_params(Rewrite *rw, int n, const Type *const *t, int *ids);
/* A use of variable id (VAR, or AVAR for an array), of the type the
 * program gives it. */
Node *rw_var(Rewrite *rw, int id);
/* Variable id stands for rep while copying, until rw_restore of a mark
 * taken before. */
int rw_mark(const Rewrite *rw);
void rw_sub(Rewrite *rw, int id, Node *rep);
void rw_restore(Rewrite *rw, int mark);

/* ------------------------------------------------------------ copying */

/* A copy of x with the substitution in force and fresh ids for every
 * binder in it (in rw->flat, lets bound to scalar lets flattened);
 * chains of lets are copied in a loop (they can be long). */
Node *rw_copy(Rewrite *rw, const Node *x);
/* The body of function lam applied to args[0..n): an argument that is a
 * variable or a constant is substituted (copied at each use), any other
 * let-bound, so that it is evaluated once (the thesis' `combine` does the
 * same; in rw->flat with rw_let_flat).  The args are placed, not
 * copied. */
Node *rw_apply(Rewrite *rw, const Node *lam, int n, Node **args);
Node *rw_apply1(Rewrite *rw, const Node *lam, Node *arg);
/* The body of lam with each parameter replaced by a copy of its argument
 * at every use: for arguments as cheap as a variable (a projection of
 * one) whose copies cost nothing. */
Node *rw_subst(Rewrite *rw, const Node *lam, int n, Node *const *args);

/* ------------------------------------------------------------ making terms */

/* A node of n operands (zeroed: the caller fills them) of type t. */
Node *rw_node(Rewrite *rw, Op op, int n, const Type *t);
/* A shallow copy of x (its operands, parameters and num shared, the
 * operand array its own), made in the context: for a node rebuilt with
 * new operands. */
Node *rw_clone(Rewrite *rw, const Node *x);
/* A node of type t with these operands (NULL if any is). */
Node *rw_op1(Rewrite *rw, Op op, const Type *t, Node *a);
Node *rw_op2(Rewrite *rw, Op op, const Type *t, Node *a, Node *b);
Node *rw_op3(Rewrite *rw, Op op, const Type *t, Node *a, Node *b, Node *c);

Node *rw_const(Rewrite *rw, ax_scalar s, Scalar v);     /* v normalised to s */
Node *rw_i64(Rewrite *rw, int64_t v);
Node *rw_bool(Rewrite *rw, bool v);
/* Zeros of element type t (a scalar, a tuple or an index of them). */
Node *rw_zero(Rewrite *rw, const Type *t);
/* prim p of type t on a (and b: NULL for a unary primitive). */
Node *rw_prim(Rewrite *rw, Prim p, const Type *t, Node *a, Node *b);
/* Component k of e: proj of a tuple, aproj of a tuple of arrays. */
Node *rw_proj(Rewrite *rw, int k, Node *e);
/* A tuple of comps[0..n) (one component: the component itself). */
Node *rw_tuple(Rewrite *rw, int n, Node *const *comps);
Node *rw_ixget(Rewrite *rw, int dim, Node *ix);
Node *rw_ixcons(Rewrite *rw, int n, Node *const *comps);
Node *rw_shape(Rewrite *rw, Node *arr);
Node *rw_index(Rewrite *rw, Node *arr, Node *ix);
Node *rw_lindex(Rewrite *rw, Node *arr, Node *pos);
Node *rw_cond(Rewrite *rw, Node *c, Node *t, Node *e);
/* let id = bound in body (alet where bound is an array). */
Node *rw_let(Rewrite *rw, int id, Node *bound, Node *body);
/* The same, a bound scalar let flattened into the chain (its lets made of
 * body's type; bound is modified: pass it a term just made). */
Node *rw_let_flat(Rewrite *rw, int id, Node *bound, Node *body);
/* \ids[0..n) -> body: parameters of existing variables (rw_params). */
Node *rw_lam(Rewrite *rw, int n, const int *ids, Node *body);
Node *rw_lam1(Rewrite *rw, int id, Node *body);

/* Types, in the program's arena. */
const Type *rw_tindex(Rewrite *rw, int rank);
const Type *rw_tarray(Rewrite *rw, const Type *elt, int rank);
const Type *rw_ttuple(Rewrite *rw, int n, const Type *const *elts);

/* ------------------------------------------------------------ equality up to renaming */

/* Alpha-equivalence (the thesis' match, s.3): equal terms up to the ids
 * of the variables they bind themselves, free variables equal.  *budget
 * bounds the nodes compared (false past it).  The binders paired so far
 * are kept in q (malloc'd: alpha_free); q->failed when out of memory. */
typedef struct AlphaEq {
    int (*pair)[2];
    int n, cap;
    bool failed;
} AlphaEq;
bool alpha_eq(AlphaEq *q, const Node *a, const Node *b, int *budget);
void alpha_free(AlphaEq *q);

#endif /* AX_OPT_REWRITE_H */
