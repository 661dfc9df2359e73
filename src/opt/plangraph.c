/*
 * The loop graph (seed 001 s."Function -> graph"), for the
 * clustering planner (ilp.c) and `axle dump PROGRAM --stage plan
 * [--json]` (printed by planprint.c): the program after Accelerate's
 * fusion as loops over iteration spaces, each with its generator (seed
 * 003 s."Loop Fusion and Deforestation": Collect, a filter's conditional
 * Collect, Reduce, Scan, Bucket for permute), the edges between them
 * (fusible: read at the loop's own index; fusion-preventing: a
 * reduction's, scan's or permute's result, random access), the pairs of
 * siblings (one iteration space, neither reading the other), and the
 * clustering the planner chose, with the value of seed 001's objective
 * (s."The objective function": weight N^2 for each pair that shares an
 * input or an edge and is left in separate loops, 1 for any other pair
 * so left, N for each array still made) for it and for Accelerate's
 * fusion alone (every kernel its own loop).
 *
 * The model.  The ILP may only choose what the planner's rewrites
 * (plan.c) can carry out, so the graph says, per pair of loops of one
 * chain of lets, whether they can share a pass, in the rewrites' own
 * terms (their tests are theirs: plan_copies, plan_absorbs, ...), and
 * the loop graph mirrors the order in which they apply them:
 *
 *  1. a producer that only moves data, read at their own index by
 *     filters and folds alone, is copied into them: never made, in no
 *     cluster (made = 0);
 *  2. a filter all of whose readers are folds that can absorb it is
 *     fused into all of them or none: it joins the cluster of its first
 *     reader (its anchor) or none, and its array is made unless it does
 *     (made = -1); each reader runs over the filter's output, a sub-size
 *     of the filter's space, whose generator is the filter (seed 001
 *     s."Subtype optimisations": tau and genr); a reader the anchor's
 *     pass does not take in computes the predicate again in its own;
 *  3. folds over one extent, of one kind and rank, merge into one pass at
 *     the first one's place, so a later one may not read a let bound
 *     between the two; unless that let is a fold merged, earlier, into a
 *     group that starts before the pair (its reads then read the group's
 *     tuple, bound there): a "blocker" the ILP gets as a constraint;
 *  4. a producer (a map, a generate) read at their own index by merged
 *     folds alone is inlined into their pass (whole, made = -1).
 *
 * Two loops that could only share a pass in the company of a third (a
 * filter and a fold over its input, with one of the filter's readers)
 * are a pair as well: the ILP's transitivity and whole rows keep the
 * company.  Every other pair is apart.  Dependencies within a chain go
 * through lets that are no loop (an awhile, a use) as well: two loops
 * with such a let between them are apart.
 *
 * Bounds (plangraph.h): at most PLAN_MAXNODES loops (the ILP's model is
 * cubic in them), PLAN_MAXLETS lets in a chain (a chain's read tables
 * are square in its lets, and its fold pairs cost a walk of the lets
 * between), PLAN_MAXBLOCKS blockers; the tables are charged to the
 * compile's budget as they grow.  Past any, the graph is truncated, says
 * why, and the planner is greedy; a truncated graph is walked no further
 * unless it is to be shown.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "plangraph.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ building */

static const char *generator(Op op)
{
    switch (op) {
    case OP_FOLD: case OP_FOLD1: return "Reduce";
    case OP_FOLDSEG: case OP_FOLD1SEG: return "Reduce(segmented)";
    case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX: return "Scan";
    case OP_FILTER: return "Collect(conditional)";
    case OP_PERMUTE: return "Bucket";
    case OP_MAP: case OP_ZIPWITH: case OP_GENERATE: case OP_BACKPERMUTE: case OP_TRANSFORM: case OP_REPLICATE:
    case OP_SLICE: case OP_RESHAPE: case OP_STENCIL: case OP_STENCIL2: return "Collect";
    default: return NULL;
    }
}

/* The operand whose extent is the loop's iteration space. */
static const Node *space_operand(const Node *t)
{
    switch (t->op) {
    case OP_MAP: return t->kid[1];
    case OP_FOLD: case OP_FOLDSEG: case OP_SCANL: case OP_SCANR: case OP_SCANLEX: case OP_SCANREX: return t->kid[2];
    case OP_FOLD1: case OP_FOLD1SEG: case OP_SCANL1: case OP_SCANR1: case OP_FILTER: case OP_STENCIL:
    case OP_STENCIL2: return t->kid[1];
    case OP_PERMUTE: return t->kid[3];
    default: return NULL;
    }
}

static void expr_str(const Node *e, char *out, size_t size)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = ax__open_memstream(&buf, &len);
    out[0] = 0;
    if (!f) return;
    ir_print(f, e);
    fclose(f);
    if (buf) {
        for (char *c = buf; *c; c++)
            if (*c == '\n' || *c == '"' || *c == '\\') *c = ' ';
        snprintf(out, size, "%s", buf);
        if (strlen(buf) >= size && size > 4) memcpy(out + size - 4, "...", 4);
    }
    free(buf);
}

static void space_of(const Node *t, char *out, size_t size)
{
    const Node *o = space_operand(t);
    if (o && o->op == OP_AVAR) { snprintf(out, size, "a%d", o->id); return; }
    if (o && o->op == OP_DELAYED && o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR) {
        snprintf(out, size, "a%d", o->kid[0]->kid[0]->id);
        return;
    }
    if (o && o->op == OP_DELAYED) { expr_str(o->kid[0], out, size); return; }
    if (t->op == OP_GENERATE || t->op == OP_BACKPERMUTE || t->op == OP_TRANSFORM || t->op == OP_RESHAPE) {
        expr_str(t->kid[0], out, size);
        return;
    }
    snprintf(out, size, "the output of %s", op_name(t->op));
}

static void reads_of(const Node *x, int **r, int *n, int *cap, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return;
    if (x->op == OP_AVAR) {
        for (int i = 0; i < *n; i++)
            if ((*r)[i] == x->id) return;
        if (*n == *cap) {
            int c = *cap ? 2 * *cap : 8;
            int *q = ax__realloc(*r, sizeof *q * (size_t)c);
            if (!q) return;
            *r = q, *cap = c;
        }
        (*r)[(*n)++] = x->id;
    }
    for (int i = 0; i < x->n; i++) reads_of(x->kid[i], r, n, cap, depth + 1);
}

static void reduction_op(const Node *t, char *out, size_t size)
{
    out[0] = 0;
    const Node *f = t->kid[0];
    if (!f || f->op != OP_LAM || f->nparam != 2) return;
    const Node *b = f->kid[0];
    if (b->op == OP_PRIM && b->n == 2) snprintf(out, size, "%s", prim_info[b->a].name);
    else if (b->op == OP_TUPLE) snprintf(out, size, "tuple");
}


typedef struct Build {
    PlanGraph *g;
    bool shown;         /* for a dump: the spaces and operators as text */
    int *uses;          /* per variable: its occurrences in the program */
    int *posof;         /* per variable: its let's place in the chain being modelled, or -1 */
    int nvars;
    bool failed;
} Build;

/* ------------------------------------------------------------ bounds */

/* Truncates the graph (the planner is then greedy), saying why (the
 * first reason stays). */
static void give_up(PlanGraph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void give_up(PlanGraph *g, const char *fmt, ...)
{
    if (!g->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->why, sizeof g->why, fmt, ap);
        va_end(ap);
    }
    g->truncated = true;
}

/* Charges n bytes of the graph's tables to its budget; false, with the
 * graph truncated, past what it leaves.  (Checked before charging: the
 * graph's refusal is the planner's, which is greedy then; the compile
 * goes on.) */
static bool charge(PlanGraph *g, int64_t n)
{
    if (!g->mem) return true;
    if (n > budget_left(g->mem)) {
        give_up(g, "the loop graph's tables would need %lld bytes, past the memory limit (%lld bytes left)",
                (long long)n, (long long)budget_left(g->mem));
        return false;
    }
    budget_charge(g->mem, n);
    g->charged += n;
    return true;
}

static void release(PlanGraph *g, int64_t n)
{
    if (!g->mem) return;
    if (n > g->charged) n = g->charged;
    budget_release(g->mem, n);
    g->charged -= n;
}

static int add_node(Build *b, int id, const Node *t, int chain, int pos)
{
    PlanGraph *g = b->g;
    const char *gen = generator(t->op);
    if (!gen) return -1;
    if (g->nn == PLAN_MAXNODES) {
        give_up(g, "the loop graph has too many loops for the ILP (more than %d)", PLAN_MAXNODES);
        return -1;
    }
    int k = g->nn++;
    GNode *n = &g->n[k];
    memset(n, 0, sizeof *n);
    n->id = id;
    n->key = id >= 0 ? id : plan_body_key(t);
    n->op = t->op;
    n->gen = gen;
    n->chain = chain;
    n->pos = pos;
    n->term = t;
    n->tau = -1;
    n->genr = -1;
    n->anchor = -1;
    n->made = 1;
    if (b->shown && !strcmp(gen, "Reduce")) reduction_op(t, n->op2, sizeof n->op2);
    if (b->shown) space_of(t, n->space, sizeof n->space);
    int cap = 0;
    reads_of(t, &n->reads, &n->nreads, &cap, 0);
    return k;
}

/* ------------------------------------------------------------ the model */

/* An operand's extent as the rewrites compare two (planterms.c pl_same_extent):
 * the array whose shape it is, and a delayed operand's extent term,
 * compared as itself or, where the rewrites built the operand, as a
 * copy. */
typedef struct Ext {
    int var;
    const Node *term;
    int rank;
    bool copy, ok;
} Ext;

static bool ext_eq(const Ext *a, const Ext *b)
{
    if (!a->ok || !b->ok || a->rank != b->rank) return false;
    if (a->var >= 0 && b->var >= 0) return a->var == b->var;
    if (a->term && b->term) return plan_same_term(a->term, b->term, a->copy || b->copy);
    return false;
}

/* One chain of lets as the rewrites see it (t[nl]: the chain's result). */
typedef struct Chain {
    Build *b;
    int nl;
    const Node **let, **t;
    int *node;          /* graph node of each place, or -1 */
    bool *copied;       /* step 1 */
    int *flt;           /* step 2: the place of the filter a fold absorbs, or -1 */
    bool *absorbable;   /* step 2: a filter fused into its folds */
    unsigned char *rd;  /* (nl+1)^2: place j reads place q: 1 only through index, linearIndex or
                           shape (what a merge redirects), 2 otherwise */
    unsigned char *rr;  /* the same for a fold, once its filter is absorbed and the producers
                           copied into it replaced by what they read */
    Ext *ext;           /* step 3: each fold's extent, filters absorbed */
    bool *merges;       /* step 3: a fold the horizontal step sees */
} Chain;

#define RD(c, j, q) ((c)->rd[(size_t)(j) * (size_t)((c)->nl + 1) + (size_t)(q)])
#define RR(c, j, q) ((c)->rr[(size_t)(j) * (size_t)((c)->nl + 1) + (size_t)(q)])

static void mark_reads(Chain *c, int j, const Node *x, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return;
    if ((x->op == OP_INDEX || x->op == OP_LINDEX || x->op == OP_SHAPE) && x->kid[0]->op == OP_AVAR) {
        int q = x->kid[0]->id < c->b->nvars ? c->b->posof[x->kid[0]->id] : -1;
        if (q >= 0 && RD(c, j, q) == 0) RD(c, j, q) = 1;
        for (int i = 1; i < x->n; i++) mark_reads(c, j, x->kid[i], depth + 1);
        return;
    }
    if (x->op == OP_AVAR) {
        int q = x->id < c->b->nvars ? c->b->posof[x->id] : -1;
        if (q >= 0) RD(c, j, q) = 2;
    }
    for (int i = 0; i < x->n; i++) mark_reads(c, j, x->kid[i], depth + 1);
}

/* planterms.c pl_opd_extent(o): the extent of a delayed operand the rewrites
 * build from o (producers copied in step 1 replaced). */
static Ext ext_built(const Chain *c, const Node *o, int depth)
{
    Ext e = {-1, NULL, o->type->rank, true, true};
    if (depth > 8) {
        e.ok = false;
        return e;
    }
    if (o->op == OP_AVAR) {
        int q = o->id < c->b->nvars ? c->b->posof[o->id] : -1;
        if (q >= 0 && q < c->nl && c->copied[q]) return ext_built(c, c->t[q], depth + 1);
        e.var = o->id;
    } else if (o->op == OP_DELAYED || o->op == OP_GENERATE) {
        e.term = o->kid[0];
        if (e.term->op == OP_SHAPE && e.term->kid[0]->op == OP_AVAR) e.var = e.term->kid[0]->id;
    } else if (o->op == OP_MAP) {
        e = ext_built(c, o->kid[1], depth + 1);
    } else {
        e.ok = false;
    }
    return e;
}

static const Node *fold_operand(const Node *t) { return t->kid[t->op == OP_FOLD ? 2 : 1]; }

/* Operand o as the rewrites leave it after step 1 (the array variable of
 * a producer copied into its readers replaced by the delayed operand
 * they build from it, planterms.c pl_opd_extent, pl_opd_ix, pl_opd_lin): how often its
 * extent, its index form and its linear form read array a (*bare: o is
 * an array variable itself, read once), and the array whose shape its
 * extent is (-1: none). */
typedef struct Eff {
    int var, e, ix, lin;
    bool bare;
} Eff;

static Eff eff(const Chain *c, const Node *o, int a)
{
    Eff r = {-1, 0, 0, 0, false};
    if (o->op == OP_AVAR) {
        int q = o->id < c->b->nvars ? c->b->posof[o->id] : -1;
        if (q >= 0 && q < c->nl && c->copied[q]) {
            const Node *z = c->t[q];
            if (z->op == OP_MAP) {
                r.var = z->kid[1]->id;
                r.e = r.var == a;
                r.ix = r.lin = (r.var == a) + plan_occurrences(z->kid[0], a, 0);
            } else {   /* a generate: fromLinear of its shape in the linear form */
                const Node *sh = z->kid[0];
                r.var = sh->op == OP_SHAPE && sh->kid[0]->op == OP_AVAR ? sh->kid[0]->id : -1;
                r.e = plan_occurrences(sh, a, 0);
                r.ix = plan_occurrences(z->kid[1], a, 0);
                r.lin = r.ix + r.e;
            }
            return r;
        }
        r.bare = true, r.var = o->id;
        r.e = r.ix = r.lin = o->id == a;
        return r;
    }
    if (o->op == OP_DELAYED) {
        r.var = o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR ? o->kid[0]->kid[0]->id : -1;
        r.e = plan_occurrences(o->kid[0], a, 0), r.ix = plan_occurrences(o->kid[1], a, 0), r.lin = plan_occurrences(o->kid[2], a, 0);
        return r;
    }
    r.e = r.ix = r.lin = plan_occurrences(o, a, 0);
    return r;
}

/* How often an operand reads a (what planterms.c's pl_occurrences counts). */
static int eff_total(const Eff *r) { return r->bare ? r->e : r->e + r->ix + r->lin; }

/* The new operand of fold j once it absorbed its filter (planfilter.c
 * filter_into_fold: the filter's input read at i, the predicate, the
 * fold's own element, and for (kept, value) pairs the fold's z, in both
 * forms, over the input's extent), as eff gives it. */
static Eff eff_absorbed(const Chain *c, int j, int a)
{
    const Node *f = c->t[c->flt[j]], *pred = f->kid[0], *fold = c->t[j], *o = fold_operand(fold);
    Eff d = eff(c, f->kid[1], a), r = {d.var, d.e, 0, 0, false};
    int lin = d.bare ? d.e : d.lin;
    lin += plan_occurrences(pred, a, 0) + (o->op == OP_DELAYED ? plan_occurrences(o->kid[2], a, 0) : 0);
    if (!plan_absorb_keeps_fold(fold)) lin += plan_occurrences(fold->kid[1], a, 0);
    r.ix = r.lin = lin;
    return r;
}

/* The array a fold's operand reads once per element, which merge_siblings
 * may inline (its pv), given the operand's view for that array. */
static bool reads_once(const Eff *r) { return r->bare || (r->var >= 0 && r->e == 1 && r->ix == 1 && r->lin == 1); }

static bool add_pair(Build *b, int i, int j);

static void model_chain(Build *b, const Node *const *lets, int nl, const Node *body, const int *node)
{
    PlanGraph *g = b->g;
    if (g->truncated) return;
    Chain c;
    memset(&c, 0, sizeof c);
    c.b = b;
    c.nl = nl;
    size_t np = (size_t)nl + 1;
    /* (a chain's tables: two (nl+1)^2 matrices, and a few rows) */
    int64_t tables = (int64_t)(np * np * 2 + np * (3 * sizeof(void *) + 3 * sizeof(int) + 3 + sizeof(Ext)));
    if (nl + 1 > PLAN_MAXLETS) {
        give_up(g, "a chain of %d lets, more than the ILP's loop graph takes (%d)", nl, PLAN_MAXLETS - 1);
        return;
    }
    if (!charge(g, tables)) return;
    c.let = ax__calloc(np, sizeof *c.let);
    c.t = ax__calloc(np, sizeof *c.t);
    c.node = ax__calloc(np, sizeof *c.node);
    c.copied = ax__calloc(np, sizeof *c.copied);
    c.flt = ax__calloc(np, sizeof *c.flt);
    c.absorbable = ax__calloc(np, sizeof *c.absorbable);
    c.rd = ax__calloc(np * np, 1);
    c.rr = ax__calloc(np * np, 1);
    c.ext = ax__calloc(np, sizeof *c.ext);
    c.merges = ax__calloc(np, sizeof *c.merges);
    int *tmp = ax__calloc(np, sizeof *tmp);
    if (!c.let || !c.t || !c.node || !c.copied || !c.flt || !c.absorbable || !c.rd || !c.rr || !c.ext || !c.merges || !tmp) {
        b->failed = true;
        goto out;
    }
    for (int k = 0; k < nl; k++) {
        c.let[k] = lets[k], c.t[k] = lets[k]->kid[0];
        if (lets[k]->id < b->nvars) b->posof[lets[k]->id] = k;
    }
    c.t[nl] = body;
    for (int j = 0; j <= nl; j++) c.node[j] = node[j], c.flt[j] = -1;
    for (int j = 0; j <= nl; j++) mark_reads(&c, j, c.t[j], 0);
#define N_(j) (&g->n[c.node[j]])
#define HAS(j) (c.node[j] >= 0)

    /* 1. producers that only move data, copied into their readers */
    for (int k = 0; k < nl; k++) {
        int pid = lets[k]->id, readers = 0;
        if (!plan_copies(c.t[k]) || pid >= b->nvars || b->uses[pid] <= 1) continue;
        bool ok = true;
        for (int j = k + 1; j <= nl && ok; j++) {
            const Node *t = c.t[j];
            int o = plan_occurrences(t, pid, 0);
            if (!o) continue;
            int at = t->op == OP_FILTER || t->op == OP_FOLD1 ? 1 : t->op == OP_FOLD ? 2 : -1;
            ok = o == 1 && at > 0 && t->kid[at]->op == OP_AVAR && t->kid[at]->id == pid;
            readers += ok;
        }
        if (ok && readers == b->uses[pid]) {
            c.copied[k] = true;
            if (HAS(k)) N_(k)->made = 0;
        }
    }
    /* 2. filters whose readers are all folds that can absorb them */
    for (int k = 0; k < nl; k++) {
        if (c.t[k]->op != OP_FILTER || !HAS(k)) continue;
        int ys = lets[k]->id, seen = 0, nf = 0;
        bool ok = ys < b->nvars;
        for (int j = k + 1; j <= nl && ok; j++) {
            int occ = 0;
            if (plan_absorbs(c.t[j], lets[k], &occ) && HAS(j)) seen += occ, tmp[nf++] = j;
            else if (plan_occurrences(c.t[j], ys, 0)) ok = false;
        }
        if (!ok || nf == 0 || seen != b->uses[ys]) continue;
        c.absorbable[k] = true;
        N_(k)->whole = true;
        N_(k)->made = -1;
        N_(k)->anchor = c.node[tmp[0]];
        for (int q = 0; q < nf; q++) {
            c.flt[tmp[q]] = k;
            N_(tmp[q])->genr = c.node[k];
        }
    }
    /* 3. the folds the horizontal step sees, with their extents once the
     * filters are absorbed (a fold that absorbs one folding (kept, value)
     * pairs is let-bound even as the chain's result) */
    for (int j = 0; j <= nl; j++) {
        const Node *t = c.t[j];
        if (!HAS(j) || (t->op != OP_FOLD && t->op != OP_FOLD1)) continue;
        c.merges[j] = j < nl || (c.flt[j] >= 0 && !plan_absorb_keeps_fold(t));
        /* (a fold of a filter's output that others read too is left to
         * the filter's multi-generator loop, planloops.c: no sibling) */
        if (c.flt[j] < 0) {
            int a = plan_opd_array(fold_operand(t));
            int q = a >= 0 && a < b->nvars ? b->posof[a] : -1;
            if (q >= 0 && q < j && c.t[q]->op == OP_FILTER && !c.absorbable[q]) c.merges[j] = false;
        }
        if (c.flt[j] >= 0) {
            c.ext[j] = ext_built(&c, c.t[c.flt[j]]->kid[1], 0);
            c.ext[j].rank = 1;
        } else {
            const Node *o = fold_operand(t);
            int q = o->op == OP_AVAR && o->id < b->nvars ? b->posof[o->id] : -1;
            if (q >= 0 && q < nl && c.copied[q]) {
                c.ext[j] = ext_built(&c, c.t[q], 0);
                c.ext[j].rank = c.t[q]->type->rank;
            } else {
                Ext e = {-1, NULL, o->type->rank, false, true};
                if (o->op == OP_AVAR) e.var = o->id;
                else if (o->op == OP_DELAYED) {
                    e.term = o->kid[0];
                    if (e.term->op == OP_SHAPE && e.term->kid[0]->op == OP_AVAR) e.var = e.term->kid[0]->id;
                } else e.ok = false;
                c.ext[j] = e;
            }
        }
    }
    /* the places each fold reads once its filter is absorbed and the
     * copied producers replaced by what they read */
    memcpy(c.rr, c.rd, np * np);
    for (int j = 0; j <= nl; j++) {
        if (!c.merges[j]) continue;
        for (int round = 0; round < 4; round++) {
            bool more = false;
            for (int q = 0; q < nl; q++) {
                if (!RR(&c, j, q) || !(q == c.flt[j] || c.copied[q])) continue;
                RR(&c, j, q) = 0;
                for (int r = 0; r < nl; r++)
                    if (RD(&c, q, r) > RR(&c, j, r)) RR(&c, j, r) = RD(&c, q, r), more = true;
            }
            if (!more) break;
        }
    }
    /* fold pairs (a before b) */
    for (int a = 0; a <= nl; a++)
        for (int bb = a + 1; bb <= nl && c.merges[a]; bb++) {
            if (!c.merges[bb]) continue;
            const Node *x = c.t[a], *y = c.t[bb];
            if (x->op != y->op || x->type->rank != y->type->rank || !ext_eq(&c.ext[a], &c.ext[bb])) continue;
            /* b may read no let bound from a on, but a fold that a group
             * starting before a takes in (its reads then read the group's
             * tuple, bound at the group's place) */
            int nblock = 0;
            bool ok = true;
            for (int q = a; q < bb && ok; q++) {
                if (!RR(&c, bb, q) || c.copied[q] || (c.absorbable[q] && c.flt[bb] == q)) continue;
                bool moves = q != a && RR(&c, bb, q) == 1 && c.merges[q] && q < nl &&
                             (c.flt[q] < 0 || plan_absorb_keeps_fold(c.t[q]));
                if (moves) tmp[nblock++] = q;
                else ok = false;
            }
            if (!ok) continue;
            int ia = c.node[a], ib = c.node[bb];
            if (!add_pair(b, ia, ib)) goto out;
            for (int q = 0; q < nblock; q++) {
                /* the folds before a that could take the blocker in */
                if (g->nblock == g->capblock) {
                    int cap = g->capblock ? 2 * g->capblock : 16;
                    if (g->nblock >= PLAN_MAXBLOCKS) {
                        give_up(g, "more than %d blockers (folds that must be merged early) in the loop graph",
                                PLAN_MAXBLOCKS);
                        goto out;
                    }
                    if (!charge(g, (int64_t)sizeof *g->block * (cap - g->capblock))) goto out;
                    void *nb = ax__realloc(g->block, sizeof *g->block * (size_t)cap);
                    if (!nb) {
                        b->failed = true;
                        goto out;
                    }
                    g->block = nb, g->capblock = cap;
                }
                int l = tmp[q];
                GBlock *bk = &g->block[g->nblock];
                memset(bk, 0, sizeof *bk);
                bk->a = ia, bk->b = ib, bk->l = c.node[l];
                for (int f = 0; f < a && bk->nf < (int)(sizeof bk->f / sizeof *bk->f); f++)
                    if (c.merges[f] && c.t[f]->op == c.t[l]->op && c.t[f]->type->rank == c.t[l]->type->rank &&
                        ext_eq(&c.ext[f], &c.ext[l]))
                        bk->f[bk->nf++] = c.node[f];
                g->nblock++;
            }
        }
    /* absorbed filters with their readers */
    for (int k = 0; k < nl; k++)
        for (int j = k + 1; j <= nl && c.absorbable[k]; j++)
            if (c.flt[j] == k && !add_pair(b, c.node[k], c.node[j])) goto out;
    /* 4. producers inlined into the folds that alone read them, each at its
     * own index (plansiblings.c merge_siblings), their uses counted as the
     * rewrites count them after steps 1 and 2 */
    for (int p = 0; p < nl; p++) {
        int pid = lets[p]->id;
        if (!HAS(p) || c.copied[p] || !plan_inlinable(c.t[p]) || pid >= b->nvars) continue;
        int uses = b->uses[pid], users = 0, nr = 0;
        for (int k = 0; k < nl; k++) {
            if (!c.copied[k]) continue;
            uses -= plan_occurrences(c.t[k], pid, 0);
            for (int j = k + 1; j <= nl; j++) {
                const Node *t = c.t[j];
                int at = t->op == OP_FILTER || t->op == OP_FOLD1 ? 1 : t->op == OP_FOLD ? 2 : -1;
                if (at < 0 || t->kid[at]->op != OP_AVAR || t->kid[at]->id != lets[k]->id) continue;
                Eff r = eff(&c, t->kid[at], pid);
                uses += eff_total(&r);
            }
        }
        for (int k = 0; k < nl; k++) {
            if (!c.absorbable[k]) continue;
            Eff d = eff(&c, c.t[k]->kid[1], pid);
            uses -= plan_occurrences(c.t[k]->kid[0], pid, 0) + eff_total(&d);
            for (int j = k + 1; j <= nl; j++) {
                if (c.flt[j] != k) continue;
                Eff r = eff_absorbed(&c, j, pid);
                uses += eff_total(&r) - plan_occurrences(fold_operand(c.t[j]), pid, 0);
            }
        }
        for (int j = p + 1; j <= nl; j++) {
            if (!c.merges[j]) continue;
            Eff r = c.flt[j] >= 0 ? eff_absorbed(&c, j, pid) : eff(&c, fold_operand(c.t[j]), pid);
            if (r.var == pid && reads_once(&r)) users += eff_total(&r), tmp[nr++] = j;
        }
        if (nr < 2 || users != uses) continue;
        N_(p)->whole = true;
        N_(p)->made = -1;
        for (int q = 0; q < nr; q++)
            if (!add_pair(b, c.node[p], c.node[tmp[q]])) goto out;
    }
    /* size types: loops the rewrites would compare equal (a filter's: its
     * readers' once absorbed; a fold's over a filter: the filter's output;
     * a producer's: its output's); classes of one chain (Ext reps in tmp) */
    {
        Ext *rep = ax__calloc(np, sizeof *rep);
        int *rept = ax__calloc(np, sizeof *rept), nrep = 0;
        if (!rep || !rept) {
            free(rep), free(rept);
            b->failed = true;
            goto out;
        }
        for (int j = 0; j <= nl; j++) {
            if (!HAS(j)) continue;
            GNode *n = N_(j);
            Ext e = {-1, NULL, 0, false, false};
            if (c.merges[j] && c.flt[j] < 0) e = c.ext[j];
            else if (c.flt[j] >= 0 && (j < nl || !c.merges[j])) e = (Ext){lets[c.flt[j]]->id, NULL, 1, false, true};
            else if (j < nl && c.absorbable[j]) {
                e = ext_built(&c, c.t[j]->kid[1], 0);
                e.rank = 1;
            } else if (j < nl && n->whole) e = (Ext){lets[j]->id, NULL, c.t[j]->type->rank, false, true};
            n->tau = -1;
            for (int r = 0; r < nrep && e.ok && n->tau < 0; r++)
                if (ext_eq(&rep[r], &e)) n->tau = rept[r];
            if (n->tau < 0) {
                n->tau = g->ntau++;
                if (e.ok) rep[nrep] = e, rept[nrep++] = n->tau;
            }
        }
        free(rep), free(rept);
    }
    /* dependencies, through lets that are no loop as well */
    for (int j = 0; j <= nl; j++) {
        if (!HAS(j)) continue;
        /* places j depends on: tmp[q] = 1 directly, 2 through a let that is
         * no loop; a producer copied into its readers is read through (its
         * readers read what it read: no loop, no dependency of its own) */
        if (j < nl && c.copied[j]) continue;
        memset(tmp, 0, sizeof *tmp * np);
        for (int q = nl - 1; q >= 0; q--) {
            if (RD(&c, j, q)) tmp[q] |= 1;
            if (!tmp[q] || (HAS(q) && !c.copied[q])) continue;
            for (int r = 0; r < q; r++)
                if (RD(&c, q, r)) tmp[r] |= c.copied[q] ? tmp[q] : 2;
            if (c.copied[q]) tmp[q] = 0;
        }
        for (int q = 0; q < j; q++) {
            if (!tmp[q] || !HAS(q)) continue;
            if (g->ndep == g->capdep) {
                int cap = g->capdep ? 2 * g->capdep : 16;
                if (!charge(g, (int64_t)sizeof *g->dep * (cap - g->capdep))) goto out;
                void *nd = ax__realloc(g->dep, sizeof *g->dep * (size_t)cap);
                if (!nd) {
                    b->failed = true;
                    goto out;
                }
                g->dep = nd, g->capdep = cap;
            }
            g->dep[g->ndep].from = c.node[q], g->dep[g->ndep].to = c.node[j];
            g->dep[g->ndep++].direct = tmp[q] == 1;
        }
    }
#undef N_
#undef HAS
out:
    for (int k = 0; k < nl; k++)
        if (lets[k]->id < b->nvars) b->posof[lets[k]->id] = -1;
    free(c.let), free(c.t), free(c.node), free(c.copied), free(c.flt), free(c.absorbable), free(c.rd), free(c.rr), free(c.ext);
    free(c.merges), free(tmp);
    release(g, tables);
}

static bool add_pair(Build *b, int i, int j)
{
    PlanGraph *g = b->g;
    if (i < 0 || j < 0 || i == j) return true;
    if (g->npl == g->cappl) {
        int cap = g->cappl ? 2 * g->cappl : 16;
        if (!charge(g, (int64_t)sizeof *g->pl * (cap - g->cappl))) return false;
        void *np = ax__realloc(g->pl, sizeof *g->pl * (size_t)cap);
        if (!np) return b->failed = true, false;
        g->pl = np, g->cappl = cap;
    }
    g->pl[g->npl][0] = i, g->pl[g->npl++][1] = j;
    return true;
}

/* ------------------------------------------------------------ walking */

static void walk(Build *b, const Node *x, bool top, int depth);

static void walk_kids(Build *b, const Node *x, int depth)
{
    for (int i = 0; i < x->n; i++) {
        const Node *k = x->kid[i];
        if (!k) continue;
        if (k->op == OP_LAM && k->n > 0 && k->kid[0] && op_is_array(k->kid[0]->op)) walk(b, k->kid[0], false, depth + 1);
        else if (op_is_array(k->op) && k->op != OP_DELAYED) walk(b, k, false, depth + 1);
    }
}

/* One chain of lets: its loops (the lets', and the chain's result: the
 * program's, or in a nested chain the loop its lets lead to), the chains
 * nested in them, then its model. */
static void walk(Build *b, const Node *x, bool top, int depth)
{
    PlanGraph *g = b->g;
    /* (a truncated graph is greedy's: the rest is walked only to be shown) */
    if (depth > OPT_MAX_DEPTH || b->failed || (g->truncated && !b->shown)) return;
    int chain = g->nchains++, nl = 0, cap = 0;
    const Node **lets = NULL;
    for (const Node *y = x; y->op == OP_ALET && y->n == 2; y = y->kid[1]) {
        if (nl == cap) {
            cap = cap ? 2 * cap : 16;
            const Node **l2 = ax__realloc(lets, sizeof *l2 * (size_t)cap);
            if (!l2) {
                free(lets);
                b->failed = true;
                return;
            }
            lets = l2;
        }
        lets[nl++] = y;
    }
    int *node = ax__malloc(sizeof *node * (size_t)(nl + 1));
    if (!node) {
        free(lets);
        b->failed = true;
        return;
    }
    for (int k = 0; k < nl && !(g->truncated && !b->shown); k++) {
        node[k] = add_node(b, lets[k]->id, lets[k]->kid[0], chain, k);
        walk_kids(b, lets[k]->kid[0], depth + 1);
    }
    const Node *body = nl ? lets[nl - 1]->kid[1] : x;
    node[nl] = top || nl ? add_node(b, top ? -1 : -2, body, chain, nl) : -1;
    walk_kids(b, body, depth + 1);
    if (nl) model_chain(b, lets, nl, body, node);
    free(lets);
    free(node);
}

static void count_uses(Build *b, const Node *x, int depth)
{
    while (x && depth <= OPT_MAX_DEPTH) {
        if (x->op == OP_AVAR && x->id >= 0 && x->id < b->nvars) b->uses[x->id]++;
        bool chain = (x->op == OP_ALET || x->op == OP_LET) && x->n == 2;
        for (int i = 0; i < x->n - (chain ? 1 : 0); i++) count_uses(b, x->kid[i], depth + 1);
        x = chain ? x->kid[1] : NULL;
    }
}

/* ------------------------------------------------------------ analysis */

bool plan_gnode_reads(const GNode *n, int id)
{
    for (int i = 0; i < n->nreads; i++)
        if (n->reads[i] == id) return true;
    return false;
}

/* Is every read of `id` in j at j's own index (its operand is id, or a
 * delayed operand over id's extent reading id once per element)? */
static bool own_index(const GNode *j, int id)
{
    const Node *o = space_operand(j->term);
    if (!o) return false;
    int all = plan_occurrences(j->term, id, 0);
    if (o->op == OP_AVAR) return o->id == id && all == 1;
    if (o->op == OP_DELAYED && o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR &&
        o->kid[0]->kid[0]->id == id)
        return plan_occurrences(o->kid[1], id, 0) == 1 && plan_occurrences(o->kid[2], id, 0) == 1 && all == 3;
    return false;
}

/* The edge from i to j (j reads i), as seed 001 classifies it: fusible,
 * and why / why not. */
static bool edge_kind(const GNode *i, const GNode *j, const char **why)
{
    bool own = own_index(j, i->id);
    if (!strcmp(i->gen, "Collect")) {
        *why = own ? "read at the same index" : "random access";
        return own;
    }
    if (i->op == OP_FILTER) {
        bool ok = own && j->op == OP_FOLD;
        *why = ok ? "a fold of the filter's output (a sub-size of the filter's space)" : "the filter's output, "
               "not folded at its own index";
        return ok;
    }
    *why = !strcmp(i->gen, "Reduce") ? "reads a reduction's result" : !strcmp(i->gen, "Scan") ? "reads a scan's result"
           : "reads a permute's result";
    return false;
}

int64_t plan_graph_weight(const PlanGraph *g, int i, int j)
{
    int64_t N = g->nn;
    const GNode *a = &g->n[i], *b = &g->n[j];
    bool heavy = (a->id >= 0 && plan_gnode_reads(b, a->id)) || (b->id >= 0 && plan_gnode_reads(a, b->id));
    for (int k = 0; !heavy && k < a->nreads; k++) heavy = plan_gnode_reads(b, a->reads[k]);
    return heavy ? N * N : 1;
}

/* ------------------------------------------------------------ the graph */

/* (a graph truncated before its matrix was made has none: no pairs) */
#define PAIR(g, i, j) plan_graph_pair(g, i, j)
#define PW(g, i, j) ((g)->pair[(size_t)(i) * (size_t)(g)->nn + (size_t)(j)])   /* (to write) */

int plan_graph_finish(PlanGraph *g)
{
    int nn = g->nn;
    int64_t n2 = (int64_t)(nn ? nn : 1) * (nn ? nn : 1);
    free(g->pair);
    g->pair = NULL;
    /* (the matrix, kept; its copy, for the closure below) */
    if (!charge(g, 2 * n2)) return 0;
    g->pair = ax__calloc((size_t)(nn ? nn : 1) * (size_t)(nn ? nn : 1), 1);
    bool *rd = ax__calloc((size_t)(nn ? nn : 1), sizeof *rd);
    if (!g->pair || !rd) {
        free(rd);
        return -1;
    }
    for (int k = 0; k < g->npl; k++) {
        int i = g->pl[k][0], j = g->pl[k][1];
        if (g->n[i].chain == g->n[j].chain) PW(g, i, j) = PW(g, j, i) = 1;
    }
    for (int k = 0; k < g->ndep; k++)
        if (!g->dep[k].direct) PW(g, g->dep[k].from, g->dep[k].to) = PW(g, g->dep[k].to, g->dep[k].from) = 0;
    /* a whole node's readers: the pairs it has now; with a company (every
     * one of them) it may meet what meets them all */
    unsigned char *base = ax__malloc((size_t)(nn ? nn : 1) * (size_t)(nn ? nn : 1));
    if (!base) {
        free(rd);
        return -1;
    }
    memcpy(base, g->pair, (size_t)nn * (size_t)nn);
    for (int w = 0; w < nn; w++)
        for (int r = 0; r < nn && g->n[w].whole; r++)
            if (base[(size_t)w * (size_t)nn + (size_t)r] && (g->n[w].anchor < 0 || g->n[w].anchor == r))
                PW(g, w, r) = PW(g, r, w) = 2;
    for (bool more = true; more;) {
        more = false;
        for (int w = 0; w < nn; w++) {
            if (!g->n[w].whole) continue;
            for (int y = 0; y < nn; y++) {
                if (y == w || PAIR(g, w, y) || g->n[y].chain != g->n[w].chain) continue;
                bool all = true, any = false;
                for (int r = 0; r < nn && all; r++)
                    if (base[(size_t)w * (size_t)nn + (size_t)r] && (g->n[w].anchor < 0 || g->n[w].anchor == r))
                        any = true, all = PAIR(g, r, y) != 0;
                if (any && all) PW(g, w, y) = PW(g, y, w) = 1, more = true;
            }
        }
    }
    /* a dependency through a let that is no loop keeps its pair apart,
     * whatever company */
    for (int k = 0; k < g->ndep; k++)
        if (!g->dep[k].direct) PW(g, g->dep[k].from, g->dep[k].to) = PW(g, g->dep[k].to, g->dep[k].from) = 0;
    free(base);
    free(rd);
    release(g, n2);
    return 0;
}

PlanGraph *plan_graph(const Program *p, bool shown)
{
    /* (its budget is the compile's: the one the program's arena is
     * charged to while it is compiled) */
    MemBudget *mem = p ? p->arena.budget : NULL;
    int64_t self = (int64_t)sizeof(PlanGraph), vars = (int64_t)((p ? p->nvars : 0) + 1) * 2 * (int64_t)sizeof(int);
    if (self + vars > budget_left(mem)) return NULL;
    PlanGraph *g = ax__calloc(1, sizeof *g);
    if (!g) return NULL;
    g->mem = mem;
    charge(g, self + vars);
    Build b = {g, shown, NULL, NULL, p ? p->nvars : 0, false};
    if (p && p->root) {
        b.uses = ax__calloc((size_t)b.nvars + 1, sizeof *b.uses);
        b.posof = ax__malloc(sizeof *b.posof * ((size_t)b.nvars + 1));
        if (!b.uses || !b.posof) b.failed = true;
        else {
            for (int i = 0; i <= b.nvars; i++) b.posof[i] = -1;
            count_uses(&b, p->root, 0);
            walk(&b, p->root, true, 0);
        }
    }
    free(b.uses);
    free(b.posof);
    release(g, vars);
    /* the edges as seed 001 classifies them: for a dump (the model has its
     * own) */
    int cap = 0;
    for (int j = 0; j < g->nn && !b.failed && shown; j++)
        for (int i = 0; i < g->nn; i++) {
            if (i == j || g->n[i].id < 0 || !plan_gnode_reads(&g->n[j], g->n[i].id)) continue;
            if (g->ne == cap) {
                cap = cap ? 2 * cap : 16;
                GEdge *e = ax__realloc(g->e, sizeof *e * (size_t)cap);
                if (!e) {
                    b.failed = true;
                    break;
                }
                g->e = e;
            }
            GEdge *e = &g->e[g->ne++];
            e->from = i, e->to = j;
            e->fusible = edge_kind(&g->n[i], &g->n[j], &e->why);
        }
    if (b.failed || plan_graph_finish(g) != 0) {
        plan_graph_free(g);
        return NULL;
    }
    for (int i = 0; i < g->nn; i++) g->n[i].term = NULL;   /* the planner may rewrite them */
    return g;
}

void plan_graph_free(PlanGraph *g)
{
    if (!g) return;
    release(g, g->charged);
    for (int i = 0; i < g->nn; i++) free(g->n[i].reads);
    free(g->e);
    free(g->dep);
    free(g->pair);
    free(g->pl);
    free(g->block);
    free(g);
}

/* ------------------------------------------------------------ hand-made graphs */

PlanGraph *plan_graph_new(void) { return ax__calloc(1, sizeof(PlanGraph)); }

int plan_graph_add(PlanGraph *g, int id, Op op, int chain, int tau, int genr, bool whole, int made)
{
    if (g->nn == PLAN_MAXNODES) return -1;
    int k = g->nn++;
    GNode *n = &g->n[k];
    memset(n, 0, sizeof *n);
    n->id = id;
    n->key = id;
    n->op = op;
    n->gen = generator(op) ? generator(op) : "Collect";
    n->chain = chain;
    n->pos = k;
    n->tau = tau;
    n->genr = genr;
    n->anchor = -1;
    n->whole = whole;
    n->made = (signed char)made;
    snprintf(n->space, sizeof n->space, "tau%d", tau);
    if (chain >= g->nchains) g->nchains = chain + 1;
    if (tau >= g->ntau) g->ntau = tau + 1;
    return k;
}

int plan_graph_input(PlanGraph *g, int node, int array)
{
    GNode *n = &g->n[node];
    if (plan_gnode_reads(n, array)) return 0;
    int *r = ax__realloc(n->reads, sizeof *r * (size_t)(n->nreads + 1));
    if (!r) return -1;
    n->reads = r;
    n->reads[n->nreads++] = array;
    return 0;
}

int plan_graph_read(PlanGraph *g, int from, int to, bool direct)
{
    if (g->ndep == g->capdep) {
        int cap = g->capdep ? 2 * g->capdep : 16;
        void *nd = ax__realloc(g->dep, sizeof *g->dep * (size_t)cap);
        if (!nd) return -1;
        g->dep = nd, g->capdep = cap;
    }
    g->dep[g->ndep].from = from, g->dep[g->ndep].to = to, g->dep[g->ndep++].direct = direct;
    if (direct) {
        GEdge *e = ax__realloc(g->e, sizeof *e * (size_t)(g->ne + 1));
        if (!e) return -1;
        g->e = e;
        e[g->ne].from = from, e[g->ne].to = to, e[g->ne].fusible = true, e[g->ne++].why = "by hand";
        if (plan_graph_input(g, to, g->n[from].id) != 0) return -1;
    }
    return 0;
}

void plan_graph_anchor(PlanGraph *g, int w, int anchor) { g->n[w].anchor = anchor; }

int plan_graph_allow(PlanGraph *g, int i, int j)
{
    Build b = {g, false, NULL, NULL, 0, false};
    return add_pair(&b, i, j) ? 0 : -1;
}
