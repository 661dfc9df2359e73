/*
 * The loop graph (plangraph.c) as the ILP (ilp.c) reads it: loops, the
 * edges between them, and what the planner's rewrites (plan.c) can
 * carry out, which is all the ILP may choose from.  Tests build small
 * graphs by hand with plan_graph_new and the setters below.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_PLANGRAPH_H
#define AX_PLANGRAPH_H

#include "opt.h"

/* The loop graph's bounds: loops (the ILP's model grows with their cube),
 * lets in one chain (a chain's tables grow with their square), blockers.
 * Past any, the graph is truncated and the planner is greedy. */
enum { PLAN_MAXNODES = 512, PLAN_MAXLETS = 2048, PLAN_MAXBLOCKS = 1 << 16 };

typedef struct GNode {
    int id;             /* the let's variable; -1: the program's result; -2: a nested chain's result */
    int64_t key;        /* its key in a clustering (PlanClusters) */
    Op op;
    const char *gen;    /* generator */
    char op2[24];       /* a reduction's operator, when a primitive */
    char space[72];
    int chain;          /* which chain of lets (loops share a pass only within one) */
    int pos;            /* its place in the chain (the chain's result after every let) */
    int *reads;         /* array variables read (unique) */
    int nreads;
    const Node *term;   /* NULL once the graph is made: the planner then rewrites the terms */
    /* the model (seed 001 s."Graph -> ILP"), in the rewrites' terms */
    int tau;            /* size type: loops of equal tau run over one iteration space */
    int genr;           /* the filter node whose output it runs over (its size's generator), or -1 */
    bool whole;         /* in a cluster only with every fusible reader (a producer inlined into
                           folds), or with its anchor */
    int anchor;         /* a filter fused into its folds: fused into all of them or none, and
                           in the pass of the first (the anchor); the others compute its
                           predicate again in theirs, unless they share that pass.  -1: none */
    signed char made;   /* its array is made: 1 whatever the clustering, 0 never (copied into its
                           readers), -1 unless its fusible readers share its cluster */
} GNode;

typedef struct GEdge {
    int from, to;       /* node indices */
    bool fusible;       /* seed 001's kind (shown) */
    const char *why;
} GEdge;

/* Loops a and b (a first) share a pass only if loop l, read by b and
 * bound between them, is merged, earlier, with one of f[]: the rewrites
 * then read l's result from that group's pass, bound before a. */
typedef struct GBlock {
    int a, b, l;
    int f[16], nf;
} GBlock;

struct PlanGraph {
    GNode n[PLAN_MAXNODES];
    int nn;
    GEdge *e;           /* the reads between loops (shown) */
    int ne;
    int nchains;
    bool truncated;
    char why[128];         /* why it is truncated, when not for its loops */
    /* the budget its tables are charged to (the compile's, from the
     * program's arena; NULL: none), and what they were charged */
    MemBudget *mem;
    int64_t charged;
    /* dependencies within a chain, through lets that are no loop of the
     * graph (a loop's term, an awhile) too: `to` reads `from`'s array;
     * direct: the read is by `to` itself */
    struct GDep { int from, to; bool direct; } *dep;
    int ndep, capdep;
    unsigned char *pair;   /* nn x nn, symmetric: 0 apart; 1 the two may share a pass; 2 the
                              same, one a whole node and the other one of its readers */
    int (*pl)[2];          /* the pairs as found, until the matrix is made */
    int npl, cappl;
    GBlock *block;
    int nblock, capblock;
    int ntau;
};

/* Seed 001's weight of a pair left in separate loops: N^2 when they share
 * an input or one reads the other, 1 otherwise (loops of one chain). */
int64_t plan_graph_weight(const PlanGraph *g, int i, int j);
/* The pair matrix's entry for loops i and j (0 in a graph truncated
 * before its matrix was made: no pairs). */
static inline int plan_graph_pair(const PlanGraph *g, int i, int j)
{
    return g->pair ? g->pair[(size_t)i * (size_t)g->nn + (size_t)j] : 0;
}
/* Does loop n read array variable id? */
bool plan_gnode_reads(const GNode *n, int id);

/* Hand-made graphs (tests): nodes in chain order, then edges (dependencies)
 * and the pairs the rewrites could merge.  Each returns the node's index or
 * 0, or -1 when memory runs out or the graph is full. */
PlanGraph *plan_graph_new(void);
int plan_graph_add(PlanGraph *g, int id, Op op, int chain, int tau, int genr, bool whole, int made);
int plan_graph_read(PlanGraph *g, int from, int to, bool direct);
int plan_graph_input(PlanGraph *g, int node, int array);
int plan_graph_allow(PlanGraph *g, int i, int j);
void plan_graph_anchor(PlanGraph *g, int w, int anchor);
/* After the last of them (plan_graph does it itself): the pair matrix,
 * with every pair the closure of whole nodes adds (a whole node may share
 * a pass with whatever shares one with all its readers), pairs with a
 * dependency through a let that is no loop removed.  0, or -1. */
int plan_graph_finish(PlanGraph *g);

#endif /* AX_PLANGRAPH_H */
