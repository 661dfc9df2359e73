/*
 * Internal interface of the optimiser (src/opt): the simplifier's
 * sub-passes (simplify.c, cse.c), which simplify_program runs in rounds,
 * exposed so that the tests can run each one alone and verify the program
 * after it; array CSE, loop-invariant code motion and the planner (its
 * rewrites, loop graph and ILP).  Terms are made and copied with the
 * rewrite kit (rewrite.h).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_OPT_H
#define AX_OPT_H

#include "ir.h"

/* The optimiser (src/opt): each pass rewrites p in place (new nodes in
 * p->arena) and returns 0, or -1 with an error on cx. */
int simplify_program(ax_ctx *cx, Program *p, bool cse);   /* thesis s.2-3, 5 */
int fuse_program(ax_ctx *cx, Program *p, unsigned dbg);                  /* thesis s.4, paper s.4 */
/* A filter asked only for its size becomes a count (filtercount.c);
 * returns the filters rewritten, or -1 with an error on cx. */
int opt_filter_counts(ax_ctx *cx, Program *p);
/* Drops the ax_compute marks fusion did not consume (fusion off). */
int opt_drop_compute(ax_ctx *cx, Program *p);
/* The schedule's figures: kernels the program runs, and intermediate
 * arrays (written by one kernel, read by another). */
void schedule_stats(const Program *p, int64_t *kernels, int64_t *intermediates);

/* The ILP's memo of solved models, kept in the context (cx->plan; ilp.c):
 * freed with the context (driver/context.c). */
typedef struct PlanState PlanState;
void plan_state_free(PlanState *st);

/* Recursion limit of the optimiser's walks.  Sharing recovery refuses
 * graphs deeper than AX_DEPTH_LIMIT, and chains of lets are walked in
 * loops, so only a malformed program reaches this; the passes then leave
 * the program as it is rather than overflow the C stack (the driver runs
 * them on a stack sized for twice the program's depth). */
#define OPT_MAX_DEPTH (2 * AX_DEPTH_LIMIT)

/* Can evaluating node n itself (not its operands) fault or fail to
 * terminate?  The "no speculation" rule of sharing recovery
 * (sharing.c): an integer division family operation whose divisor is not
 * a nonzero constant, shapesize, an array read (in unsafe mode as well:
 * an unchecked read must not leave its guard), a while loop.  Such terms
 * are never moved out of a lazy region, dropped while dead, or merged with
 * copies in other lazy regions. */
bool opt_op_fallible(const ax_ctx *cx, const Node *n);

/* Is operand i of scalar node n evaluated only sometimes?  (cond's
 * branches, the second operand of and/or, a while loop's body; the loop's
 * condition runs at least once.) */
bool opt_lazy_operand(const Node *n, int i);

/* A constant or a variable: copying it costs nothing. */
static inline bool opt_is_atom(const Node *n)
{
    return n->op == OP_CONST || n->op == OP_VAR || n->op == OP_AVAR;
}

/* The next slot below n that holds an array term, from operand *i on
 * (advanced past it), or NULL: an array operand, or the body of an array
 * function (awhile's); a delayed operand holds none.  The passes that
 * walk chains of array lets (acse.c, licm.c, plan.c) go down through it:
 *   for (int i = 0; (slot = opt_array_slot(n, &i));) walk(*slot); */
static inline Node **opt_array_slot(Node *n, int *i)
{
    while (*i < n->n) {
        Node **slot = &n->kid[(*i)++], *k = *slot;
        if (!k || k->op == OP_DELAYED) continue;
        if (k->op == OP_LAM && k->n > 0 && k->kid[0] && op_is_array(k->kid[0]->op)) return &k->kid[0];
        if (k->op != OP_LAM && op_is_array(k->op)) return slot;
    }
    return NULL;
}

/* Common subexpression elimination (thesis s.3 "Common subexpression
 * elimination", and the Delite section's hash-consing), one scalar context
 * at a time.  Sets *changed when it rewrote something.  Returns 0, or -1
 * with an error on cx. */
int opt_cse(ax_ctx *cx, Program *p, bool *changed);

/* Common subexpressions of whole array terms (acse.c): a let-bound array
 * term equal to one an enclosing let binds becomes that let's variable.
 * Run after fusion; the simplifier then removes the aliases.  0, or -1
 * with an error on cx. */
int opt_array_cse(ax_ctx *cx, Program *p, bool *changed);

/* One round of the simplifier proper: with SIMP_SHRINK, the shrinking
 * reduction (dead lets dropped, lets used once inlined); with SIMP_FOLD,
 * constant folding, constant and copy propagation through lets and
 * tuples, algebraic identities and reassociation of constants, and the
 * array-level rules.  Sets *changed when it rewrote something. */
enum { SIMP_SHRINK = 1u, SIMP_FOLD = 2u, SIMP_ALL = 3u };
int opt_simplify_round(ax_ctx *cx, Program *p, unsigned what, bool *changed);

/* The planner's rewrites (plan.c and its steps, plan_int.h; after fusion
 * and array CSE): sibling folds over one extent become one fold of a
 * tuple, and a filter read only by a fold fuses into it (seed 003
 * s."Loop Fusion and Deforestation"; seed 001).  Each rewrite adds a line
 * to log (may be NULL).  Returns the number of rewrites (0: the program is unchanged),
 * or -1 with an error on cx. */
#define PLAN_LOG_MAX 32
#define PLAN_JOIN_MAX 256
typedef struct PlanLog {
    int n;
    char line[PLAN_LOG_MAX][160];
    /* the clustering, for `axle dump --stage plan` (plangraph.c): pairs of
     * loops now computed in one pass, by key (a let's variable, a new let's
     * joined with the one it replaces; plan_body_key for the loop a chain
     * ends in), and the lets whose arrays are no longer made (filters fused
     * into their folds, producers inlined or copied) */
    int njoin, nremoved;
    int64_t join[PLAN_JOIN_MAX][2];
    int64_t removed[PLAN_JOIN_MAX];
} PlanLog;
/* The clustering the rewrites follow (ilp.c): which loops may share a
 * pass, by key (a let's variable; for the loop a chain of lets ends in,
 * plan_body_key of that term).  Two loops are merged only when
 * plan_together says so; NULL is the greedy planner (every rewrite that
 * applies), and a key the clustering does not know is the greedy's too. */
typedef struct PlanClusters {
    int n;
    int64_t *key;        /* ascending */
    int *cluster;
    unsigned char *offered;   /* n x n, in key order: the pair was the ILP's to choose */
} PlanClusters;
#define PLAN_KEY_NONE INT64_MIN
#define PLAN_KEY_GONE (INT64_MIN + 1)   /* a let that holds no loop of the graph any more */
static inline int64_t plan_body_key(const Node *body) { return -(int64_t)(intptr_t)body - 2; }
bool plan_together(const PlanClusters *c, int64_t a, int64_t b);
/* Did the clustering keep loops a and b apart where it could have merged
 * them (a pair the loop graph offered it, in two clusters)?  The rewrites
 * after the ILP's (multi-generator loops, epilogues) merge what the loop
 * graph does not model, but never a pair the ILP chose to keep apart. */
bool plan_apart(const PlanClusters *c, int64_t a, int64_t b);
int opt_plan(ax_ctx *cx, Program *p, PlanLog *log, const PlanClusters *cl);

/* The rewrites' own tests, for the loop graph: a producer that only
 * moves data, copied into its readers (plancopy.c); one inlined into
 * sibling folds (plansiblings.c); a fold that can absorb the filter bound
 * by let flt (*occ: its reads of the filter's output), and whether it
 * stays a fold of the same type when it does (else it folds (kept, value)
 * pairs; planfilter.c); equal extents (compared as the terms themselves,
 * or as copies of them; planterms.c). */
bool plan_copies(const Node *t);
bool plan_inlinable(const Node *t);
bool plan_absorbs(const Node *fold, const Node *flt, int *occ);
bool plan_absorb_keeps_fold(const Node *fold);
bool plan_same_term(const Node *a, const Node *b, bool copies);
/* The array variable a consumer's operand ranges over: the operand itself
 * (a variable), or the variable whose shape is a delayed operand's
 * extent; else -1. */
int plan_opd_array(const Node *o);
/* How often x reads array variable id (1 << 20 past the depth limit:
 * more than any count it is compared with). */
int plan_occurrences(const Node *x, int id, int depth);

/* Loop-invariant code motion of array terms out of awhile bodies
 * (licm.c), guarded by the loop's condition; with nested (before fusion)
 * also the invariant subterms of the body's terms that compute something.
 * Returns the number of terms moved, or -1 with an error on cx. */
int opt_licm(ax_ctx *cx, Program *p, bool nested);

/* The loop graph of a program after Accelerate's fusion (plangraph.c),
 * printed with the clustering a PlanLog records (`axle dump --stage
 * plan`).  plan_graph returns NULL when memory runs out; its tables are
 * charged to the budget the program's arena has (the compile's), and a
 * graph past that or past its size bounds (plangraph.h) is truncated:
 * the planner is then greedy. */
typedef struct PlanGraph PlanGraph;
typedef struct PlanChoice PlanChoice;
PlanGraph *plan_graph(const Program *p, bool shown);
void plan_graph_print(FILE *f, const PlanGraph *g, const PlanLog *log, bool json, const PlanChoice *ch);
void plan_graph_free(PlanGraph *g);

/* The clustering planner (ilp.c; seed 001): the integer linear program
 * of the loop graph solved by CBC, loaded at run time, within a time
 * limit and the memory cx's compile budget leaves (the model is counted
 * before it is made); else the greedy planner, and why. */
typedef enum { PLAN_GREEDY, PLAN_CBC, PLAN_NONE, PLAN_PRESOLVE } PlanSolver;
struct PlanChoice {
    PlanSolver solver;
    char why[160];           /* why greedy (or why no solver was needed) */
    PlanClusters *cl;        /* the clustering the rewrites follow (NULL: greedy) */
    double solve_ms;         /* making the model and solving it (wall clock) */
    double solve_cpu_ms;     /* the same in the thread's CPU time (what the limit bounds) */
    double load_ms;          /* loading CBC (the first solve of a context) */
    double limit_ms;
    int nx, nc, npi, nrows;  /* the model's variables (x, c, pi) and rows */
    int64_t objective;       /* seed 001's objective of the solution (asked for: full); -1 without one */
    bool cached;             /* the context had solved this model before */
};
int plan_choose(ax_ctx *cx, const PlanGraph *g, PlanChoice *ch, bool full);
void plan_choice_free(PlanChoice *ch);

#endif /* AX_OPT_H */
