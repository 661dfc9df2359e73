/*
 * The clustering planner: seed 001's integer linear program
 * over the loop graph (plangraph.c), solved by CBC, whose clusters the
 * planner's rewrites (plan.c and its steps) then follow.
 *
 * The program (seed 001 s."Graph -> ILP", "A slightly smarter version"),
 * for the loops of each chain of lets (loops of different chains are
 * never in one pass), N loops in all:
 *
 *   x_ij   binary, for a pair the rewrites can put in one pass (the
 *          graph's pairs): 0 when i and j are in one cluster.  No
 *          variable across a fusion-preventing edge or between
 *          incompatible iteration spaces: such a pair is apart.
 *   pi_i   real in [0, N], the clusters' order: pi_j - pi_i >= 1 on a
 *          fusion-preventing edge i -> j; x_ij <= pi_j - pi_i <= N x_ij on
 *          a fusible one; -N x_ij <= pi_j - pi_i <= N x_ij for a pair
 *          without an edge.  Loops of one cluster share a pi, and the
 *          clusters are ordered by an edge: the clustering is acyclic.
 *   c_i    binary, for a loop whose array the rewrites can remove (a
 *          filter fused into its folds, a producer inlined): x_ij <= c_i
 *          for its readers j, so c_i = 0 only if they all share its pass.
 *          No c for a loop with a fusion-preventing output: its array is
 *          made.
 *
 * Size types (s."Subtype optimisations"): a fold over a filter's output
 * runs over a sub-size of the filter's space, whose generator is the
 * filter; for a pair i, j of different size types, x_gj <= x_ij where g
 * generates i's (and the same for j's): it shares a pass with a loop over
 * the filter's space only with the filter in the pass.  A pair whose size
 * types no generator relates has no variable.
 *
 * What the rewrites add, so that every solution can be carried out:
 * transitivity (x_ik <= x_ij + x_jk, or x_ij + x_jk >= 1 where i and k
 * are apart), whole loops (a producer shares a pass with all its readers
 * or with none; a filter, which the rewrites fuse into all its folds or
 * none, with its first fold, the anchor, or with none: the other folds
 * then compute its predicate again, unless they share the anchor's
 * pass, so a filter's size generator is present in a fold's pass when it
 * is fused: x_{g,anchor} <= x_ij below), and the blockers of
 * plangraph.h (a later fold reading a fold bound between the pair, which
 * must be merged into a group that starts before it).
 *
 * The objective (s."The objective function"): the sum over pairs left
 * apart of N^2 (they share an input or one reads the other) or 1 (loop
 * overhead), plus N per array made, N = the number of loops.  Pairs
 * without a variable and arrays made whatever the clustering add a
 * constant; the value reported is the whole sum, which
 * `axle dump --stage plan` also computes from the clusters the rewrites
 * made.
 *
 * Before any search, and before any model is made: where every pair
 * with a variable in one pass is a legal clustering (the rules checked
 * from the graph, below), it is the optimum, every x and c at 0; most
 * programs' models are of this kind, and they cost no solver and no
 * model (AXLE_PLANNER=cbc asks CBC anyway).  The transitivity rows are
 * cubic in the loops of a chain (n sibling folds: n (n-1) (n-2) / 2 of
 * them), so a model is made only where one is to be solved, and only
 * after it was counted (formulate, counting: the same walk without
 * storing, the transitivity rows by a formula) and found within the
 * limits below.
 *
 * Bounds.  A choice may spend the thread's CPU time up to the time limit
 * from its start (the pruning's rounds and the model's rows look at the
 * clock as they go) and the memory the context's compile budget leaves
 * (ir.h MemBudget: the memory limit, less the arrays in use and the
 * compile's arenas): the view's tables, the model (its count, before it
 * is made), and an estimate of CBC's own copies while it solves are
 * charged to it.  A model with more nonzeros than the time limit allows
 * (NZ_PER_MS) is not made.  Past either bound the planner is greedy, and
 * the choice says which and by how much (`axle dump P --stage plan`).
 * The loop graph has bounds of its own (plangraph.h).
 *
 * The solver.  CBC (COIN-OR's branch and cut, EPL-2.0) through its C
 * interface, loaded with dlopen at the first solve of a context and
 * called through the declarations of cbc.c (libCbcSolver.so.3 or
 * libCbcSolver.so, or the file AXLE_CBC names), so that axle needs
 * neither its headers nor its library to build and runs without it.  A
 * solve is limited in time (AXLE_PLANNER_LIMIT, milliseconds; 10 by
 * default; of the solving thread's CPU time, so that a loaded machine
 * does not turn a plan greedy), in CBC and by the clock here: past the
 * limit, without CBC,
 * when the solution is not proven optimal, or when its clusters break a
 * rule above (checked again from the graph), the planner is greedy
 * (the planner's rewrites wherever they apply, never worse than Accelerate's
 * fusion alone), and the choice says why.  AXLE_PLANNER=greedy asks for
 * the greedy planner.  A context remembers the last models it solved, so
 * a program compiled again pays no solve.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "cbc.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ bounds
 *
 * What a choice may spend: the thread's CPU time from the start of
 * plan_choose (the graph's pruning, the model's making and the solve, all
 * within the time limit) and the memory the context's compile budget
 * leaves (ir.h MemBudget: the memory limit, less the arrays in use and
 * the compile's arenas).  The model's size is counted exactly before it
 * is made (formulate, counting), so a model that could not be made or
 * solved within either is never begun; the clock and the budget are
 * asked again as it grows.  Past either, the planner is greedy and says
 * why. */

typedef struct Bound {
    MemBudget *mem;
    double cpu0, limit_ms;
    int64_t charged;     /* bytes charged to mem, given back at the end */
    bool stop;
    char why[160];
    int64_t work;        /* steps since the clock was last read (bound_work) */
} Bound;


/* False, with why, past the time limit. */
static bool bound_time(Bound *b, const char *what)
{
    if (b->stop) return false;
    double took = plan_cpu_ms() - b->cpu0;
    if (took <= b->limit_ms) return true;
    b->stop = true;
    snprintf(b->why, sizeof b->why, "%s took %.1f ms of CPU time, past the time limit of %g ms", what, took,
             b->limit_ms);
    return false;
}

/* bound_time after every BOUND_STEPS steps of work: the thread's CPU
 * clock is a system call, which a small graph's whole choice would not
 * cost many times over. */
enum { BOUND_STEPS = 1 << 16 };
static bool bound_work(Bound *b, int64_t steps, const char *what)
{
    if (b->stop) return false;
    if ((b->work += steps) < BOUND_STEPS) return true;
    b->work = 0;
    return bound_time(b, what);
}

/* Charges n bytes (false, with why, past the memory limit). */
static bool bound_mem(Bound *b, int64_t n, const char *what)
{
    if (b->stop) return false;
    /* (checked before charging: a refusal here is the planner's, which
     * falls back to greedy; the compile does not fail) */
    if (n < 0 || n > budget_left(b->mem)) {
        b->stop = true;
        snprintf(b->why, sizeof b->why, "%s would need %lld bytes, past the memory limit (%lld bytes left)", what,
                 (long long)n, (long long)budget_left(b->mem));
        return false;
    }
    budget_charge(b->mem, n);
    if (b->mem) b->charged += n;
    return true;
}

static void bound_release(Bound *b, int64_t n)
{
    if (!b->mem) return;
    if (n > b->charged) n = b->charged;
    budget_release(b->mem, n);
    b->charged -= n;
}

/* ------------------------------------------------------------ the model */

static int64_t model_bytes(int64_t cols, int64_t rows, int64_t nz)
{
    return cols * (int64_t)(3 * sizeof(double) + sizeof(bool)) + rows * (int64_t)(2 * sizeof(double)) +
           nz * (int64_t)(2 * sizeof(int) + sizeof(double));
}

/* The arrays at capacity (cols, rows, nz), charged to m->bd for their
 * growth; false (failed) when memory or the budget runs out. */
static bool model_reserve(Model *m, int cols, int rows, int nz)
{
    cols = cols > m->capcol ? cols : m->capcol;
    rows = rows > m->caprow ? rows : m->caprow;
    nz = nz > m->capnz ? nz : m->capnz;
    int64_t want = model_bytes(cols, rows, nz);
    if (m->bd && want > m->bytes && !bound_mem(m->bd, want - m->bytes, "the ILP's model")) return m->failed = true, false;
    if (m->bd && want > m->bytes) m->bytes = want;
    if (cols > m->capcol) {
        size_t c = (size_t)cols;
        double *l = ax__realloc(m->lo, sizeof *l * c);
        if (l) m->lo = l;
        double *h = l ? ax__realloc(m->hi, sizeof *h * c) : NULL;
        if (h) m->hi = h;
        double *o = h ? ax__realloc(m->obj, sizeof *o * c) : NULL;
        if (o) m->obj = o;
        bool *in = o ? ax__realloc(m->integer, sizeof *in * c) : NULL;
        if (in) m->integer = in;
        if (!in) return m->failed = true, false;
        m->capcol = cols;
    }
    if (rows > m->caprow) {
        double *l = ax__realloc(m->rlo, sizeof *l * (size_t)rows);
        if (l) m->rlo = l;
        double *h = l ? ax__realloc(m->rhi, sizeof *h * (size_t)rows) : NULL;
        if (h) m->rhi = h;
        if (!h) return m->failed = true, false;
        m->caprow = rows;
    }
    if (nz > m->capnz) {
        int *r = ax__realloc(m->ri, sizeof *r * (size_t)nz);
        if (r) m->ri = r;
        int *c = r ? ax__realloc(m->ci, sizeof *c * (size_t)nz) : NULL;
        if (c) m->ci = c;
        double *v = c ? ax__realloc(m->v, sizeof *v * (size_t)nz) : NULL;
        if (v) m->v = v;
        if (!v) return m->failed = true, false;
        m->capnz = nz;
    }
    return true;
}

/* (a capacity doubled, within INT_MAX) */
static int grown(int cap, int least, int first)
{
    int64_t c = cap ? 2 * (int64_t)cap : first;
    while (c < least) c *= 2;
    return c > INT_MAX ? INT_MAX : (int)c;
}

static int add_col(Model *m, double lo, double hi, double obj, bool integer)
{
    if (m->failed) return -1;
    if (m->counting) return m->ncol++;
    if (m->ncol == m->capcol && (m->ncol == INT_MAX || !model_reserve(m, grown(m->capcol, m->ncol + 1, 64), 0, 0)))
        return m->failed = true, -1;
    m->lo[m->ncol] = lo, m->hi[m->ncol] = hi, m->obj[m->ncol] = obj, m->integer[m->ncol] = integer;
    return m->ncol++;
}

/* A row lo <= sum coef[k] col[k] <= hi (n terms; a column < 0 is left out). */
static void add_row(Model *m, double lo, double hi, int n, const int *col, const double *coef)
{
    if (m->failed) return;
    int terms = 0;
    for (int k = 0; k < n; k++) terms += col[k] >= 0;
    if (m->counting) {
        m->rows64++, m->nz64 += terms;
        return;
    }
    /* the clock, now and then: a model counted small enough may still be
     * slow to make on a loaded machine */
    if (m->bd && !bound_work(m->bd, 16, "making the ILP's model")) {
        m->failed = true;
        return;
    }
    if (m->nrow == INT_MAX || m->nz > INT_MAX - terms) {
        m->failed = true;
        return;
    }
    if ((m->nrow == m->caprow || m->nz + terms > m->capnz) &&
        !model_reserve(m, 0, m->nrow == m->caprow ? grown(m->caprow, m->nrow + 1, 64) : 0,
                       m->nz + terms > m->capnz ? grown(m->capnz, m->nz + terms, 256) : 0))
        return;
    for (int k = 0; k < n; k++)
        if (col[k] >= 0) m->ri[m->nz] = m->nrow, m->ci[m->nz] = col[k], m->v[m->nz++] = coef[k];
    m->rlo[m->nrow] = lo, m->rhi[m->nrow++] = hi;
    m->rows64 = m->nrow, m->nz64 = m->nz;
}

static void model_free(Model *m)
{
    free(m->lo), free(m->hi), free(m->obj), free(m->integer);
    free(m->ri), free(m->ci), free(m->v), free(m->rlo), free(m->rhi);
    if (m->bd) bound_release(m->bd, m->bytes);
    memset(m, 0, sizeof *m);
}

#define INF 1e30
#define PAIR(g, i, j) plan_graph_pair(g, i, j)

/* The ILP's view of a graph: which pairs keep a variable (the graph's,
 * less those seed 001's pruning and the rewrites' rules leave apart
 * whatever the clustering), and each pair's column. */
typedef struct View {
    const PlanGraph *g;
    int nn;
    unsigned char *ok;   /* nn x nn: the pair has a variable */
    int *x;              /* nn x nn: its column */
    int *c;              /* per node: its c column, or -1 */
    int *pi;             /* per node: its pi column, or -1 */
    unsigned char *dep;  /* nn x nn, symmetric: a dependency joins the two */
    int *dfirst, *dorder;   /* the dependencies by the node they leave: dorder[dfirst[u] .. dfirst[u + 1]] */
    Bound *bd;
} View;

#define OK(v, i, j) ((v)->ok[(size_t)(i) * (size_t)(v)->nn + (size_t)(j)])
#define X(v, i, j) ((v)->x[(size_t)(i) * (size_t)(v)->nn + (size_t)(j)])
#define DEP(v, i, j) ((v)->dep[(size_t)(i) * (size_t)(v)->nn + (size_t)(j)])

/* The view's bytes (what view_new charges). */
static int64_t view_bytes(const PlanGraph *g)
{
    int64_t n = g->nn ? g->nn : 1;
    return n * n * (int64_t)(2 + sizeof(int)) + (3 * (n + 1) + g->ndep + 1) * (int64_t)sizeof(int);
}

static bool view_new(View *v, const PlanGraph *g, Bound *bd)
{
    int nn = g->nn;
    size_t n2 = (size_t)(nn ? nn : 1) * (size_t)(nn ? nn : 1);
    memset(v, 0, sizeof *v);
    v->g = g, v->nn = nn;
    if (!bound_mem(bd, view_bytes(g), "the ILP's tables")) return false;
    v->bd = bd;
    v->ok = ax__calloc(n2, 1);
    v->x = ax__malloc(n2 * sizeof(int));
    v->c = ax__malloc(sizeof(int) * (size_t)(nn + 1));
    v->pi = ax__malloc(sizeof(int) * (size_t)(nn + 1));
    v->dep = ax__calloc(n2, 1);
    v->dfirst = ax__calloc((size_t)nn + 2, sizeof *v->dfirst);
    v->dorder = ax__malloc(sizeof *v->dorder * ((size_t)g->ndep + 1));
    if (!v->ok || !v->x || !v->c || !v->pi || !v->dep || !v->dfirst || !v->dorder) return false;
    for (int k = 0; k < g->ndep; k++) {
        DEP(v, g->dep[k].from, g->dep[k].to) = DEP(v, g->dep[k].to, g->dep[k].from) = 1;
        v->dfirst[g->dep[k].from + 1]++;
    }
    for (int u = 0; u < nn; u++) v->dfirst[u + 1] += v->dfirst[u];
    int *at = v->pi;   /* (free until formulate numbers the pi columns) */
    for (int u = 0; u < nn; u++) at[u] = v->dfirst[u];
    for (int k = 0; k < g->ndep; k++) v->dorder[at[g->dep[k].from]++] = k;
    return true;
}

static void view_free(View *v)
{
    free(v->ok), free(v->x), free(v->c), free(v->pi), free(v->dep), free(v->dfirst), free(v->dorder);
    if (v->bd) bound_release(v->bd, view_bytes(v->g));
    memset(v, 0, sizeof *v);
}

/* Can i and j be in one pass with their size types (seed 001's check):
 * equal, or each side's generator in the pass as well. */
/* The loop that must share gen's pass for j's sake: j, or where the
 * filter gen is fused into every reader, its anchor. */
static int gen_partner(const PlanGraph *g, int gen, int j) { return g->n[gen].anchor >= 0 ? g->n[gen].anchor : j; }

static bool sizes_ok(const View *v, int i, int j)
{
    const PlanGraph *g = v->g;
    const GNode *a = &g->n[i], *b = &g->n[j];
    if (a->tau == b->tau) return true;
    if (a->genr < 0 && b->genr < 0) return false;
    if (a->genr >= 0 && a->genr != j && gen_partner(g, a->genr, j) != a->genr && !OK(v, a->genr, gen_partner(g, a->genr, j)))
        return false;
    if (b->genr >= 0 && b->genr != i && gen_partner(g, b->genr, i) != b->genr && !OK(v, gen_partner(g, b->genr, i), b->genr))
        return false;
    return true;
}

/* Seed 001 s."Subtype optimisations", its second way: no variable for a
 * pair with a fusion-preventing path between them (one of its edges has
 * no variable): such loops are never in one cluster, as pi grows along
 * the path.  Within a chain the graph's nodes are in program order, so
 * the sets reachable from each node (bitsets: all, and through a
 * fusion-preventing edge) are made from the last node back.  True if it
 * removed a pair (or ran out of memory: then it removes every pair). */
static bool prune_paths(View *v)
{
    const PlanGraph *g = v->g;
    int nn = v->nn;
    size_t w = ((size_t)nn + 63) / 64;
    uint64_t *all = ax__calloc((size_t)nn * w + 1, sizeof *all), *bad = ax__calloc((size_t)nn * w + 1, sizeof *bad);
    bool more = false;
    if (!all || !bad) {
        free(all), free(bad);
        for (size_t k = 0; k < (size_t)nn * (size_t)nn; k++) more |= v->ok[k], v->ok[k] = 0;
        return more;
    }
    for (int u = nn - 1; u >= 0; u--)
        for (int d = v->dfirst[u]; d < v->dfirst[u + 1]; d++) {
            int k = v->dorder[d], t = g->dep[k].to;
            uint64_t *au = all + (size_t)u * w, *bu = bad + (size_t)u * w, *at = all + (size_t)t * w,
                     *bt = bad + (size_t)t * w;
            bool fusible = g->dep[k].direct && OK(v, u, t);
            au[t / 64] |= 1ull << (t % 64);
            for (size_t q = 0; q < w; q++) au[q] |= at[q], bu[q] |= bt[q] | (fusible ? 0 : at[q]);
            if (!fusible) bu[t / 64] |= 1ull << (t % 64);
        }
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < nn; j++)
            if (OK(v, i, j) && ((bad[(size_t)i * w + (size_t)j / 64] >> (j % 64)) & 1))
                OK(v, i, j) = OK(v, j, i) = 0, more = true;
    free(all), free(bad);
    return more;
}

/* The pruning, to a fixpoint: a pair keeps its variable while no
 * fusion-preventing path joins it, its size types allow it, both of a
 * whole node's sides keep every pair with its readers, and each blocker
 * has a fold to go with. */
static void prune(View *v)
{
    const PlanGraph *g = v->g;
    int nn = v->nn;
    int nwhole = 0;
    for (int i = 0; i < nn; i++) {
        nwhole += g->n[i].whole;
        for (int j = 0; j < nn; j++) OK(v, i, j) = i != j && PAIR(g, i, j) && g->n[i].chain == g->n[j].chain;
    }
    /* Each condition only grows as pairs go, so the pairs left are the
     * same whatever order they go in (the greatest set in which none
     * fails): the blockers are checked each in turn, not per pair.  Each
     * round removes a pair or is the last; the clock bounds them. */
    for (bool more = true; more;) {
        if (!bound_work(v->bd, (int64_t)g->ndep * (nn / 64 + 1) + g->nblock, "the ILP's pruning")) return;
        more = prune_paths(v);
        for (int i = 0; i < nn; i++) {
            /* (a row's pairs; with a whole node, each a walk of the loops) */
            if (!bound_work(v->bd, (int64_t)nn * (g->n[i].whole ? nn : 1) + (int64_t)nwhole * nn, "the ILP's pruning"))
                return;
            for (int j = i + 1; j < nn; j++) {
                if (!OK(v, i, j)) continue;
                bool keep = sizes_ok(v, i, j);
                for (int s = 0; s < 2 && keep; s++) {
                    int w = s ? j : i;
                    if (!g->n[w].whole) continue;
                    for (int r = 0; r < nn && keep; r++)
                        if (PAIR(g, w, r) == 2 && !OK(v, w, r)) keep = false;
                }
                if (!keep) OK(v, i, j) = OK(v, j, i) = 0, more = true;
            }
        }
        for (int k = 0; k < g->nblock; k++) {
            const GBlock *bk = &g->block[k];
            if (!OK(v, bk->a, bk->b)) continue;
            bool any = false;
            for (int q = 0; q < bk->nf && !any; q++) any = OK(v, bk->f[q], bk->l);
            if (!any) OK(v, bk->a, bk->b) = OK(v, bk->b, bk->a) = 0, more = true;
        }
    }
}

/* Seed 001's ILP of the graph in m (v: the pairs with a variable); with
 * full, the objective's constant as well (pairs without a variable,
 * arrays made whatever the clustering: for the value reported). */
static void formulate(View *v, Model *m, bool full)
{
    const PlanGraph *g = v->g;
    int nn = v->nn;
    int64_t N = nn;
    double dN = (double)N;
    bool *chain_has = ax__calloc((size_t)(g->nchains ? g->nchains : 1), sizeof *chain_has);
    if (!chain_has) {
        m->failed = true;
        return;
    }
    /* x: the pairs; the others are apart and weigh on the constant */
    for (size_t k = 0; k < (size_t)nn * (size_t)nn; k++) v->x[k] = -1;
    for (int i = 0; i < nn; i++)
        for (int j = i + 1; j < nn; j++) {
            if (g->n[i].chain != g->n[j].chain) continue;
            if (!OK(v, i, j)) {
                if (full) m->constant += plan_graph_weight(g, i, j);
                continue;
            }
            X(v, i, j) = X(v, j, i) = add_col(m, 0, 1, (double)plan_graph_weight(g, i, j), true);
            chain_has[g->n[i].chain] = true;
            m->nx++;
        }
    /* c: arrays the rewrites can remove, read by nothing but loops that
     * may share their pass */
    for (int i = 0; i < nn; i++) {
        v->c[i] = -1;
        if (g->n[i].made == 0) continue;
        bool free_ = g->n[i].made < 0;
        for (int k = 0; k < g->ndep && free_; k++)
            if (g->dep[k].from == i && (g->n[i].anchor < 0 || g->n[i].anchor == g->dep[k].to) &&
                X(v, i, g->dep[k].to) < 0)
                free_ = false;
        if (!free_) {
            m->constant += N;
            continue;
        }
        v->c[i] = add_col(m, 0, 1, dN, true);
        m->nc++;
    }
    /* pi: the loops of chains with a pair */
    for (int i = 0; i < nn; i++) {
        v->pi[i] = chain_has[g->n[i].chain] ? add_col(m, 0, dN, 0, false) : -1;
        m->npi += v->pi[i] >= 0;
    }
    free(chain_has);
    int col[8];
    double cf[8];
    /* precedence on edges (through lets that are no loop as well) */
    for (int k = 0; k < g->ndep; k++) {
        int i = g->dep[k].from, j = g->dep[k].to, x = X(v, i, j);
        if (v->pi[i] < 0 || v->pi[j] < 0) continue;
        col[0] = v->pi[j], cf[0] = 1, col[1] = v->pi[i], cf[1] = -1;
        if (x < 0 || !g->dep[k].direct) {
            add_row(m, 1, INF, 2, col, cf);              /* pi_i < pi_j */
        } else {
            col[2] = x, cf[2] = -1;
            add_row(m, 0, INF, 3, col, cf);              /* x <= pi_j - pi_i */
            cf[2] = -dN;
            add_row(m, -INF, 0, 3, col, cf);             /* pi_j - pi_i <= N x */
        }
    }
    /* pairs without an edge: equal pi when fused */
    for (int i = 0; i < nn; i++)
        for (int j = i + 1; j < nn; j++) {
            int x = X(v, i, j);
            if (x < 0 || DEP(v, i, j)) continue;
            col[0] = v->pi[j], cf[0] = 1, col[1] = v->pi[i], cf[1] = -1, col[2] = x;
            cf[2] = dN;
            add_row(m, 0, INF, 3, col, cf);              /* -N x <= pi_j - pi_i */
            cf[2] = -dN;
            add_row(m, -INF, 0, 3, col, cf);             /* pi_j - pi_i <= N x */
        }
    /* contraction: x_ij <= c_i for i's readers (a filter fused into all
     * its readers: its anchor) */
    for (int k = 0; k < g->ndep; k++) {
        int i = g->dep[k].from;
        if (v->c[i] < 0 || (g->n[i].anchor >= 0 && g->n[i].anchor != g->dep[k].to)) continue;
        col[0] = X(v, i, g->dep[k].to), cf[0] = 1, col[1] = v->c[i], cf[1] = -1;
        add_row(m, -INF, 0, 2, col, cf);
    }
    /* size types: x_gj <= x_ij where g generates i's (and j's) */
    for (int i = 0; i < nn; i++)
        for (int j = i + 1; j < nn; j++) {
            int x = X(v, i, j);
            if (x < 0 || g->n[i].tau == g->n[j].tau) continue;
            int gi = g->n[i].genr, gj = g->n[j].genr;
            if (gi >= 0 && gi != j && gen_partner(g, gi, j) != gi) {
                col[0] = X(v, gi, gen_partner(g, gi, j)), cf[0] = 1, col[1] = x, cf[1] = -1;
                add_row(m, -INF, 0, 2, col, cf);
            }
            if (gj >= 0 && gj != i && gen_partner(g, gj, i) != gj) {
                col[0] = X(v, gen_partner(g, gj, i), gj), cf[0] = 1, col[1] = x, cf[1] = -1;
                add_row(m, -INF, 0, 2, col, cf);
            }
        }
    /* whole loops: with all their readers or none; with anything only
     * with them */
    for (int w = 0; w < nn; w++) {
        if (!g->n[w].whole) continue;
        int r0 = -1;
        for (int r = 0; r < nn; r++)
            if (PAIR(g, w, r) == 2 && X(v, w, r) >= 0) {
                if (r0 < 0) {
                    r0 = r;
                    continue;
                }
                col[0] = X(v, w, r0), cf[0] = 1, col[1] = X(v, w, r), cf[1] = -1;
                add_row(m, 0, 0, 2, col, cf);
            }
        for (int y = 0; y < nn && r0 >= 0; y++)
            if (y != w && X(v, w, y) >= 0 && PAIR(g, w, y) != 2) {
                col[0] = X(v, w, r0), cf[0] = 1, col[1] = X(v, w, y), cf[1] = -1;
                add_row(m, -INF, 0, 2, col, cf);
            }
    }
    /* transitivity, around each loop j: a row for each two others paired
     * with it (counted: as many as the pairs of j's partners) */
    for (int j = 0; j < nn && m->counting; j++) {
        int64_t deg = 0;
        for (int i = 0; i < nn; i++) deg += i != j && X(v, i, j) >= 0;
        m->rows64 += deg * (deg - 1) / 2;
        m->nz64 += 3 * (deg * (deg - 1) / 2);
    }
    for (int j = 0; j < nn && !m->counting && !m->failed; j++)
        for (int i = 0; i < nn; i++) {
            if (i == j || X(v, i, j) < 0) continue;
            for (int k = i + 1; k < nn; k++) {
                if (k == j || X(v, j, k) < 0) continue;
                col[0] = X(v, i, j), col[1] = X(v, j, k);
                if (X(v, i, k) >= 0) {
                    col[2] = X(v, i, k), cf[0] = -1, cf[1] = -1, cf[2] = 1;
                    add_row(m, -INF, 0, 3, col, cf);     /* x_ik <= x_ij + x_jk */
                } else {
                    cf[0] = 1, cf[1] = 1;
                    add_row(m, 1, INF, 2, col, cf);      /* i and k apart */
                }
            }
        }
    /* blockers: x_ab = 0 only if l is merged with one of f[] */
    for (int k = 0; k < g->nblock; k++) {
        const GBlock *bk = &g->block[k];
        int x = X(v, bk->a, bk->b);
        if (x < 0) continue;
        int n = 0, cols[17];
        double cfs[17];
        cols[n] = x, cfs[n++] = 1;
        for (int q = 0; q < bk->nf; q++)
            if (X(v, bk->f[q], bk->l) >= 0) cols[n] = X(v, bk->f[q], bk->l), cfs[n++] = -1;
        add_row(m, 2 - n, INF, n, cols, cfs);            /* x_ab - sum x_fl >= 1 - nf */
    }
}

/* ------------------------------------------------------------ clusters */

static int uf(int *p, int i)
{
    while (p[i] != i) i = p[i] = p[p[i]];
    return i;
}

/* Are the clusters (par: roots) legal on the graph, by the rules above
 * checked afresh: pairs in one cluster are the rewrites' pairs, a whole
 * loop is with all its readers, size types agree or their generators are
 * in, and the clusters are acyclic?  NULL, or what is wrong. */
static const char *legal(const View *v, const int *par)
{
    const PlanGraph *g = v->g;
    int nn = v->nn;
    for (int i = 0; i < nn; i++)
        for (int j = i + 1; j < nn; j++) {
            if (par[i] != par[j]) continue;
            if (!OK(v, i, j)) return "two loops in one cluster that the rewrites cannot put in one pass";
            const GNode *a = &g->n[i], *b = &g->n[j];
            if (a->tau != b->tau &&
                !((a->genr < 0 || par[a->genr] == par[gen_partner(g, a->genr, i)]) &&
                  (b->genr < 0 || par[b->genr] == par[gen_partner(g, b->genr, j)])))
                return "two loops of different sizes in one cluster without the filter that relates them";
        }
    for (int w = 0; w < nn; w++) {
        if (!g->n[w].whole) continue;
        bool alone = true;
        for (int j = 0; j < nn && alone; j++) alone = j == w || par[j] != par[w];
        for (int r = 0; r < nn && !alone; r++)
            if (PAIR(g, w, r) == 2 && par[r] != par[w]) return "a filter or producer in a cluster without its readers";
    }
    for (int k = 0; k < g->ndep; k++)
        if (par[g->dep[k].from] == par[g->dep[k].to] && !g->dep[k].direct)
            return "a cluster around a let that is no loop";
    /* acyclic: Kahn's algorithm over the clusters */
    int *indeg = ax__calloc((size_t)nn + 1, sizeof *indeg), *queue = ax__calloc((size_t)nn + 1, sizeof *queue);
    if (!indeg || !queue) {
        free(indeg), free(queue);
        return "out of memory";
    }
    for (int k = 0; k < g->ndep; k++) {
        int a = par[g->dep[k].from], b = par[g->dep[k].to];
        if (a != b) indeg[b]++;
    }
    int nq = 0, done = 0, roots = 0;
    for (int i = 0; i < nn; i++)
        if (par[i] == i) {
            roots++;
            if (!indeg[i]) queue[nq++] = i;
        }
    for (int h = 0; h < nq; h++) {
        done++;
        for (int k = 0; k < g->ndep; k++) {
            int a = par[g->dep[k].from], b = par[g->dep[k].to];
            if (a == queue[h] && b != a && --indeg[b] == 0) queue[nq++] = b;
        }
    }
    free(indeg), free(queue);
    return done == roots ? NULL : "the clusters depend on each other in a cycle";
}

/* Are the blockers of the pairs in one cluster merged as they must be? */
static bool blockers_ok(const View *v, const int *par)
{
    const PlanGraph *g = v->g;
    for (int k = 0; k < g->nblock; k++) {
        const GBlock *bk = &g->block[k];
        if (par[bk->a] != par[bk->b]) continue;
        bool any = false;
        for (int q = 0; q < bk->nf && !any; q++) any = par[bk->f[q]] == par[bk->l];
        if (!any) return false;
    }
    return true;
}

/* The clustering with every pair that has a variable in one pass (par),
 * and whether it is legal: then it is the ILP's optimum (every x and c at
 * 0), found without a search. */
static bool all_fused(const View *v, int *par)
{
    int nn = v->nn;
    for (int i = 0; i < nn; i++) par[i] = i;
    for (int i = 0; i < nn; i++)
        for (int j = i + 1; j < nn; j++)
            if (OK(v, i, j)) par[uf(par, i)] = uf(par, j);
    for (int i = 0; i < nn; i++) par[i] = uf(par, i);
    bool ok = !legal(v, par) && blockers_ok(v, par);
    if (!ok)
        for (int i = 0; i < nn; i++) par[i] = i;
    return ok;
}

/* Seed 001's objective of a clustering, from the graph (the reported
 * value); with vars, the part the model's variables carry (checked
 * against the solver's). */
static int64_t value(const View *v, const int *par, bool vars)
{
    const PlanGraph *g = v->g;
    int64_t N = v->nn, obj = 0;
    for (int i = 0; i < v->nn; i++) {
        if (vars && v->c[i] < 0) {
            for (int j = i + 1; j < v->nn; j++)
                if (X(v, i, j) >= 0 && par[i] != par[j]) obj += plan_graph_weight(g, i, j);
            continue;
        }
        bool made = g->n[i].made != 0;
        if (g->n[i].made < 0 && v->c[i] >= 0) {
            made = false;
            for (int k = 0; k < g->ndep; k++)
                if (g->dep[k].from == i && (g->n[i].anchor < 0 || g->n[i].anchor == g->dep[k].to) &&
                    par[g->dep[k].to] != par[i])
                    made = true;
        }
        obj += made ? N : 0;
        for (int j = i + 1; j < v->nn; j++)
            if (g->n[i].chain == g->n[j].chain && par[i] != par[j] && (!vars || X(v, i, j) >= 0))
                obj += plan_graph_weight(g, i, j);
    }
    return obj;
}

static int place_of_key(const PlanClusters *c, int64_t k)
{
    int lo = 0, hi = c->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (c->key[mid] == k) return mid;
        if (c->key[mid] < k) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int cluster_of_key(const PlanClusters *c, int64_t k)
{
    int at = place_of_key(c, k);
    return at < 0 ? -1 : c->cluster[at];
}

bool plan_apart(const PlanClusters *c, int64_t a, int64_t b)
{
    if (!c || !c->offered) return false;
    int pa = place_of_key(c, a), pb = place_of_key(c, b);
    if (pa < 0 || pb < 0 || c->cluster[pa] == c->cluster[pb]) return false;
    return c->offered[(size_t)pa * (size_t)c->n + (size_t)pb] != 0;
}

bool plan_together(const PlanClusters *c, int64_t a, int64_t b)
{
    if (!c) return true;
    int ca = cluster_of_key(c, a), cb = cluster_of_key(c, b);
    /* a loop the clustering does not know is the greedy planner's */
    if (ca < 0 || cb < 0) return true;
    return ca == cb;
}

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static PlanClusters *clusters_new(const PlanGraph *g, const int *par)
{
    PlanClusters *c = ax__calloc(1, sizeof *c);
    int64_t (*kv)[2] = ax__calloc((size_t)(g->nn ? g->nn : 1), sizeof *kv);
    if (c) {
        c->key = ax__calloc((size_t)(g->nn ? g->nn : 1), sizeof *c->key);
        c->cluster = ax__calloc((size_t)(g->nn ? g->nn : 1), sizeof *c->cluster);
    }
    if (!c || !kv || !c->key || !c->cluster) {
        if (c) free(c->key), free(c->cluster);
        free(c), free(kv);
        return NULL;
    }
    for (int i = 0; i < g->nn; i++) kv[i][0] = g->n[i].key, kv[i][1] = par[i];
    qsort(kv, (size_t)g->nn, sizeof *kv, cmp_key);
    for (int i = 0; i < g->nn; i++) c->key[i] = kv[i][0], c->cluster[i] = (int)kv[i][1];
    c->n = g->nn;
    free(kv);
    /* the pairs the ILP chose among as the loops after its rewrites
     * would merge them, in key order: not a whole node's (its pairs say
     * whether it is inlined into all its readers, where a loop keeps it
     * made and merges it with some).  A graph made by hand may have no
     * pair matrix: then none. */
    if (g->pair && g->nn) {
        size_t n = (size_t)g->nn;
        c->offered = ax__calloc(n * n, 1);
        if (!c->offered) {
            free(c->key), free(c->cluster), free(c);
            return NULL;
        }
        for (int i = 0; i < g->nn; i++)
            for (int j = 0; j < g->nn; j++)
                if (g->pair[(size_t)i * n + (size_t)j] == 1 && !g->n[i].whole && !g->n[j].whole) {
                    int pi = place_of_key(c, g->n[i].key), pj = place_of_key(c, g->n[j].key);
                    if (pi >= 0 && pj >= 0) c->offered[(size_t)pi * n + (size_t)pj] = 1;
                }
    }
    return c;
}

static void clusters_free(PlanClusters *c)
{
    if (!c) return;
    free(c->key), free(c->cluster), free(c->offered);
    free(c);
}

/* ------------------------------------------------------------ per context */

enum { MEMO = 8 };

/* What a context keeps: CBC once loaded, and the last models it solved
 * (compared whole) with their solutions. */
struct PlanState {
    CbcSolver cbc;       /* CBC, once loaded (cbc.c) */
    struct {
        Model m;
        double *sol;
        int64_t objective;
        unsigned age;
    } memo[MEMO];
    unsigned clock;
};

void plan_state_free(PlanState *st)
{
    if (!st) return;
    for (int k = 0; k < MEMO; k++) model_free(&st->memo[k].m), free(st->memo[k].sol);
    cbc_free(&st->cbc);
    free(st);
}

static bool same_model(const Model *a, const Model *b)
{
    /* (the constant is no part of the problem solved) */
    if (a->ncol != b->ncol || a->nrow != b->nrow || a->nz != b->nz) return false;
    size_t c = (size_t)a->ncol, r = (size_t)a->nrow, z = (size_t)a->nz;
    return !memcmp(a->lo, b->lo, c * sizeof *a->lo) && !memcmp(a->hi, b->hi, c * sizeof *a->hi) &&
           !memcmp(a->obj, b->obj, c * sizeof *a->obj) && !memcmp(a->integer, b->integer, c * sizeof *a->integer) &&
           !memcmp(a->rlo, b->rlo, r * sizeof *a->rlo) && !memcmp(a->rhi, b->rhi, r * sizeof *a->rhi) &&
           !memcmp(a->ri, b->ri, z * sizeof *a->ri) && !memcmp(a->ci, b->ci, z * sizeof *a->ci) &&
           !memcmp(a->v, b->v, z * sizeof *a->v);
}

static bool model_copy(Model *to, const Model *from)
{
    memset(to, 0, sizeof *to);
    *to = *from;
    to->bd = NULL, to->bytes = 0;   /* (the memo's copy is the context's, charged to no choice) */
    to->lo = to->hi = to->obj = to->v = to->rlo = to->rhi = NULL;
    to->integer = NULL;
    to->ri = to->ci = NULL;
    size_t c = (size_t)(from->ncol ? from->ncol : 1), r = (size_t)(from->nrow ? from->nrow : 1),
           z = (size_t)(from->nz ? from->nz : 1);
    to->capcol = (int)c, to->caprow = (int)r, to->capnz = (int)z;
    if (!(to->lo = ax__malloc(c * sizeof *to->lo)) || !(to->hi = ax__malloc(c * sizeof *to->hi)) ||
        !(to->obj = ax__malloc(c * sizeof *to->obj)) || !(to->integer = ax__malloc(c * sizeof *to->integer)) ||
        !(to->rlo = ax__malloc(r * sizeof *to->rlo)) || !(to->rhi = ax__malloc(r * sizeof *to->rhi)) ||
        !(to->ri = ax__malloc(z * sizeof *to->ri)) || !(to->ci = ax__malloc(z * sizeof *to->ci)) ||
        !(to->v = ax__malloc(z * sizeof *to->v))) {
        model_free(to);
        return false;
    }
    memcpy(to->lo, from->lo, (size_t)from->ncol * sizeof *to->lo);
    memcpy(to->hi, from->hi, (size_t)from->ncol * sizeof *to->hi);
    memcpy(to->obj, from->obj, (size_t)from->ncol * sizeof *to->obj);
    memcpy(to->integer, from->integer, (size_t)from->ncol * sizeof *to->integer);
    memcpy(to->rlo, from->rlo, (size_t)from->nrow * sizeof *to->rlo);
    memcpy(to->rhi, from->rhi, (size_t)from->nrow * sizeof *to->rhi);
    memcpy(to->ri, from->ri, (size_t)from->nz * sizeof *to->ri);
    memcpy(to->ci, from->ci, (size_t)from->nz * sizeof *to->ci);
    memcpy(to->v, from->v, (size_t)from->nz * sizeof *to->v);
    return true;
}

/* ------------------------------------------------------------ choosing */

void plan_choice_free(PlanChoice *ch)
{
    if (!ch) return;
    clusters_free(ch->cl);
    ch->cl = NULL;
}

static int greedy(PlanChoice *ch, const char *why)
{
    clusters_free(ch->cl);
    ch->cl = NULL;
    ch->solver = PLAN_GREEDY;
    ch->objective = -1;
    snprintf(ch->why, sizeof ch->why, "%s", why);
    return 0;
}

/* The most nonzeros a model may have per millisecond of the time limit.
 * CBC checks its limit in its branch and cut, not while it loads a model
 * and solves its linear relaxation, which take time in proportion to the
 * nonzeros: a model past this many per millisecond takes CBC several
 * times the limit before it looks at its clock, so it is never made
 * (the rate is a few times CBC's on models of sibling folds, whose
 * transitivity rows are most of them). */
#define NZ_PER_MS 10000.0
/* CBC's own copies of a model (row and column copies of the matrix, its
 * presolve's, the branch and cut's), as bytes per nonzero, row and column
 * of the model it is given: charged while it solves, as an estimate (its
 * allocations are its own). */
enum { CBC_PER_NZ = 160, CBC_PER_ROW = 200, CBC_PER_COL = 200 };
/* Models the context remembers with their solutions: the small ones
 * (the memory they hold outlives the compile, so it is kept small). */
enum { MEMO_MAX_NZ = 1 << 14 };

static int64_t solve_bytes(const Model *m)
{
    return (int64_t)m->ncol * (int64_t)(3 * sizeof(int) + sizeof(double) + CBC_PER_COL) +
           (int64_t)m->nz * (int64_t)(sizeof(int) + sizeof(double) + CBC_PER_NZ) + (int64_t)m->nrow * CBC_PER_ROW;
}

int plan_choose(ax_ctx *cx, const PlanGraph *g, PlanChoice *ch, bool full)
{
    memset(ch, 0, sizeof *ch);
    ch->objective = -1;
    ch->limit_ms = cx->planner_limit_ms > 0 ? cx->planner_limit_ms : 10;
    if (cx->planner == PLANNER_GREEDY) return greedy(ch, "AXLE_PLANNER=greedy");
    if (!g) return greedy(ch, "out of memory");
    if (g->truncated) return greedy(ch, g->why[0] ? g->why : "the loop graph has too many loops for the ILP");
    double t0 = plan_now_ms(), cpu0 = plan_cpu_ms();
    Bound bd = {&cx->compile_mem, cpu0, ch->limit_ms, 0, false, "", 0};
    int nn = g->nn;
    View v;
    Model m;
    memset(&m, 0, sizeof m);
    int *par = NULL;
    double *sol = NULL;
    int64_t solving = 0;
    int rc = 0;
    if (!view_new(&v, g, &bd) || !(par = ax__calloc((size_t)nn + 1, sizeof *par))) {
        rc = greedy(ch, bd.stop ? bd.why : "out of memory");
        goto out;
    }
    prune(&v);
    if (bd.stop) {
        rc = greedy(ch, bd.why);
        goto out;
    }
    /* the model's size, counted before anything of it is made (what the
     * dump shows, whether or not a model is made) */
    m.counting = true;
    formulate(&v, &m, full);
    if (m.failed) {
        rc = greedy(ch, "out of memory");
        goto out;
    }
    ch->nx = m.nx, ch->nc = m.nc, ch->npi = m.npi;
    ch->nrows = m.rows64 > INT_MAX ? INT_MAX : (int)m.rows64;
    int64_t cols = m.ncol, rows = m.rows64, nzs = m.nz64;
    for (int i = 0; i < nn; i++) par[i] = i;
    if (m.nx == 0) {
        /* nothing to choose: every loop apart is the only clustering */
        ch->solver = PLAN_NONE;
        snprintf(ch->why, sizeof ch->why, "no two loops can share a pass");
    } else if (cx->planner != PLANNER_CBC && all_fused(&v, par)) {
        /* every pair in one pass is a legal clustering: every x is 0 and
         * every c with it, the least the objective can be; no model is
         * made */
        ch->solver = PLAN_PRESOLVE;
        snprintf(ch->why, sizeof ch->why, "every pair in one pass is legal, hence optimal");
    } else {
        /* a model to make and solve: within the limits, by its count */
        double most = NZ_PER_MS * ch->limit_ms;
        char why[160];
        if (rows > INT_MAX || nzs > INT_MAX || (double)nzs > most) {
            snprintf(why, sizeof why, "the ILP's model would have %lld rows and up to %lld nonzeros, past the "
                     "time limit of %g ms (at most %.0f nonzeros)", (long long)rows, (long long)nzs, ch->limit_ms, most);
            rc = greedy(ch, why);
            goto out;
        }
        m = (Model){.bd = &bd};
        m.ncol = (int)cols, m.nrow = (int)rows, m.nz = (int)nzs;
        int64_t need = model_bytes(cols, rows, nzs) + solve_bytes(&m) + cols * (int64_t)sizeof *sol;
        m.ncol = m.nrow = m.nz = 0;
        if (need > budget_left(bd.mem)) {
            snprintf(why, sizeof why, "the ILP's model and its solve would need about %lld bytes, past the "
                     "memory limit (%lld bytes left)", (long long)need, (long long)budget_left(bd.mem));
            rc = greedy(ch, why);
            goto out;
        }
        /* (at least one of each: the arrays are never NULL) */
        if (model_reserve(&m, cols > 1 ? (int)cols : 1, rows > 1 ? (int)rows : 1, nzs > 1 ? (int)nzs : 1))
            formulate(&v, &m, full);
        if (m.failed) {
            rc = greedy(ch, bd.stop ? bd.why : "out of memory");
            goto out;
        }
        if (m.ncol != cols || m.nrow != rows || m.nz > nzs) {
            rc = greedy(ch, "internal error: the ILP's model is not the size it was counted");
            goto out;
        }
        if (!cx->plan && !(cx->plan = ax__calloc(1, sizeof *cx->plan))) {
            rc = greedy(ch, "out of memory");
            goto out;
        }
        PlanState *st = cx->plan;
        if (!bound_mem(&bd, (int64_t)m.ncol * (int64_t)sizeof *sol, "the ILP's solution") ||
            !(sol = ax__calloc((size_t)m.ncol + 1, sizeof *sol))) {
            rc = greedy(ch, bd.stop ? bd.why : "out of memory");
            goto out;
        }
        int hit = -1;
        for (int k = 0; k < MEMO && hit < 0; k++)
            if (st->memo[k].sol && same_model(&st->memo[k].m, &m)) hit = k;
        if (hit >= 0) {
            memcpy(sol, st->memo[hit].sol, sizeof *sol * (size_t)m.ncol);
            st->memo[hit].age = ++st->clock;
            ch->cached = true;
        } else {
            double load = 0, t1 = plan_now_ms(), c1 = plan_cpu_ms();
            bool ok = cbc_ready(&st->cbc, cx->planner_cbc, &load);
            ch->load_ms = load;
            t0 += plan_now_ms() - t1;   /* loading is not solving */
            cpu0 += plan_cpu_ms() - c1;
            if (!ok) {
                rc = greedy(ch, st->cbc.why);
                goto out;
            }
            solving = solve_bytes(&m);
            if (!bound_mem(&bd, solving, "the ILP's solve")) {
                solving = 0;
                rc = greedy(ch, bd.why);
                goto out;
            }
            if (cbc_solve(&st->cbc, &m, cpu0, ch->limit_ms, sol, why, sizeof why) != 0) {
                ch->solve_cpu_ms = plan_cpu_ms() - cpu0;
                ch->solve_ms = plan_now_ms() - t0;
                rc = greedy(ch, why);
                goto out;
            }
            bound_release(&bd, solving);
            solving = 0;
            /* remember it, in the slot used least recently */
            int k = 0;
            for (int q = 1; q < MEMO; q++)
                if (st->memo[q].age < st->memo[k].age) k = q;
            if (m.nz <= MEMO_MAX_NZ) {
                model_free(&st->memo[k].m);
                free(st->memo[k].sol);
                st->memo[k].sol = ax__malloc(sizeof *sol * (size_t)(m.ncol + 1));
                if (st->memo[k].sol && model_copy(&st->memo[k].m, &m)) {
                    memcpy(st->memo[k].sol, sol, sizeof *sol * (size_t)m.ncol);
                    st->memo[k].age = ++st->clock;
                } else {
                    free(st->memo[k].sol);
                    st->memo[k].sol = NULL;
                }
            }
        }
        ch->solver = PLAN_CBC;
        for (int i = 0; i < nn; i++)
            for (int j = i + 1; j < nn; j++)
                if (X(&v, i, j) >= 0 && sol[X(&v, i, j)] < 0.5) par[uf(par, i)] = uf(par, j);
        for (int i = 0; i < nn; i++) par[i] = uf(par, i);
    }
    const char *bad = legal(&v, par);
    if (!bad && !blockers_ok(&v, par)) bad = "a fold in a pass that the rewrites cannot start early enough";
    if (bad) {
        rc = greedy(ch, bad);
        goto out;
    }
    if (full) ch->objective = value(&v, par, false);
    if (ch->solver == PLAN_CBC) {
        double o = 0;
        for (int k = 0; k < m.ncol; k++) o += m.obj[k] * (sol[k] > 0.5 ? 1 : 0) * (m.integer[k] ? 1 : 0);
        if ((int64_t)(o + 0.5) != value(&v, par, true)) {
            rc = greedy(ch, "the solver's objective disagrees with its clusters");
            goto out;
        }
    }
    if (!(ch->cl = clusters_new(g, par))) rc = greedy(ch, "out of memory");
    ch->solve_ms = plan_now_ms() - t0;
    ch->solve_cpu_ms = plan_cpu_ms() - cpu0;
out:
    free(sol), free(par);
    bound_release(&bd, solving);
    model_free(&m);
    view_free(&v);
    /* (whatever this choice charged is given back: the sum of the above) */
    bound_release(&bd, bd.charged);
    return rc;
}
