/*
 * The loop graph (issue 11; seed 001 s."Function -> graph"), for
 * `axle dump PROGRAM --stage plan [--json]`: the program after
 * Accelerate's fusion as loops over iteration spaces, each with its
 * generator (seed 003 s."Loop Fusion and Deforestation": Collect, a
 * filter's conditional Collect, Reduce, Scan, Bucket for permute), the
 * edges between them (fusible: read at the loop's own index; fusion-
 * preventing: a reduction's, scan's or permute's result, random access),
 * the pairs of siblings (one iteration space, neither reading the other),
 * and the clustering the planner chose (src/opt/plan.c: its PlanLog says
 * which lets now share a pass), with the value of seed 001's objective
 * (s."The objective function": weight N^2 for each pair that shares an
 * input or an edge and is left in separate loops, 1 for any other pair so
 * left, N for each array still made) for it and for Accelerate's fusion
 * alone (every kernel its own loop).
 *
 * The planner is greedy (the rewrites of plan.c); no ILP solver is used.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "opt.h"
#include <stdlib.h>
#include <string.h>

enum { MAXNODES = 512 };

typedef struct GNode {
    int id;             /* the let's variable; -1: the program's result */
    Op op;
    const char *gen;    /* generator */
    char op2[24];       /* a reduction's operator, when a primitive */
    char space[72];
    int chain;          /* which chain of lets (siblings only within one) */
    int *reads;         /* array variables read (unique) */
    int nreads;
    const Node *term;
} GNode;

typedef struct GEdge {
    int from, to;       /* node indices */
    bool fusible;
    const char *why;
} GEdge;

typedef struct PlanGraph {
    GNode n[MAXNODES];
    int nn;
    GEdge *e;           /* found when the graph is made: the planner then rewrites the terms */
    int ne;
    int nchains;
    bool truncated;
} PlanGraph;

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
            int *q = realloc(*r, sizeof *q * (size_t)c);
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

static void add_node(PlanGraph *g, int id, const Node *t, int chain)
{
    const char *gen = generator(t->op);
    if (!gen) return;
    if (g->nn == MAXNODES) { g->truncated = true; return; }
    GNode *n = &g->n[g->nn++];
    memset(n, 0, sizeof *n);
    n->id = id;
    n->op = t->op;
    n->gen = gen;
    n->chain = chain;
    n->term = t;
    if (!strcmp(gen, "Reduce")) reduction_op(t, n->op2, sizeof n->op2);
    space_of(t, n->space, sizeof n->space);
    int cap = 0;
    reads_of(t, &n->reads, &n->nreads, &cap, 0);
}

static void walk(PlanGraph *g, const Node *x, bool top, int depth);
void plan_graph_free(PlanGraph *g);
static bool reads(const GNode *n, int id);
static bool edge_kind(const GNode *i, const GNode *j, const char **why);

static void walk_kids(PlanGraph *g, const Node *x, int depth)
{
    for (int i = 0; i < x->n; i++) {
        const Node *k = x->kid[i];
        if (!k) continue;
        if (k->op == OP_LAM && k->n > 0 && k->kid[0] && op_is_array(k->kid[0]->op)) walk(g, k->kid[0], false, depth + 1);
        else if (op_is_array(k->op) && k->op != OP_DELAYED) walk(g, k, false, depth + 1);
    }
}

static void walk(PlanGraph *g, const Node *x, bool top, int depth)
{
    if (depth > OPT_MAX_DEPTH) return;
    int chain = g->nchains++;
    for (; x->op == OP_ALET && x->n == 2; x = x->kid[1]) {
        add_node(g, x->kid[0]->op == OP_AVAR ? -2 : x->id, x->kid[0], chain);
        walk_kids(g, x->kid[0], depth + 1);
    }
    if (top) add_node(g, -1, x, chain);
    walk_kids(g, x, depth + 1);
}

/* ------------------------------------------------------------ analysis */

static int find(const PlanGraph *g, int id)
{
    for (int i = 0; i < g->nn; i++)
        if (g->n[i].id == id) return i;
    return -1;
}

static bool reads(const GNode *n, int id)
{
    for (int i = 0; i < n->nreads; i++)
        if (n->reads[i] == id) return true;
    return false;
}

static int occ(const Node *x, int id, int depth)
{
    if (!x || depth > OPT_MAX_DEPTH) return 1000;
    int c = x->op == OP_AVAR && x->id == id;
    for (int i = 0; i < x->n; i++) c += occ(x->kid[i], id, depth + 1);
    return c;
}

/* Is every read of `id` in j at j's own index (its operand is id, or a
 * delayed operand over id's extent reading id once per element)? */
static bool own_index(const GNode *j, int id)
{
    const Node *o = space_operand(j->term);
    if (!o) return false;
    int all = occ(j->term, id, 0);
    if (o->op == OP_AVAR) return o->id == id && all == 1;
    if (o->op == OP_DELAYED && o->kid[0]->op == OP_SHAPE && o->kid[0]->kid[0]->op == OP_AVAR &&
        o->kid[0]->kid[0]->id == id)
        return occ(o->kid[1], id, 0) == 1 && occ(o->kid[2], id, 0) == 1 && all == 3;
    return false;
}

/* The edge from i to j (j reads i): fusible, and why / why not. */
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

static int uf_find(int *p, int i)
{
    while (p[i] != i) i = p[i] = p[p[i]];
    return i;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void name(char *out, size_t size, int id)
{
    if (id == -1) snprintf(out, size, "result");
    else snprintf(out, size, "a%d", id);
}

PlanGraph *plan_graph(const Program *p)
{
    PlanGraph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    if (p && p->root) walk(g, p->root, true, 0);
    int cap = 0;
    for (int j = 0; j < g->nn; j++)
        for (int i = 0; i < g->nn; i++) {
            if (i == j || !reads(&g->n[j], g->n[i].id)) continue;
            if (g->ne == cap) {
                cap = cap ? 2 * cap : 16;
                GEdge *e = realloc(g->e, sizeof *e * (size_t)cap);
                if (!e) {
                    plan_graph_free(g);
                    return NULL;
                }
                g->e = e;
            }
            GEdge *e = &g->e[g->ne++];
            e->from = i, e->to = j;
            e->fusible = edge_kind(&g->n[i], &g->n[j], &e->why);
        }
    for (int i = 0; i < g->nn; i++) g->n[i].term = NULL;   /* the planner may rewrite them */
    return g;
}

void plan_graph_free(PlanGraph *g)
{
    if (!g) return;
    for (int i = 0; i < g->nn; i++) free(g->n[i].reads);
    free(g->e);
    free(g);
}

/* Seed 001's objective for a clustering (cluster[i]: node i's root) with
 * `made[i]` true where node i's array is still made. */
static int64_t objective(const PlanGraph *g, const int *cluster, const bool *made)
{
    int64_t N = g->nn, obj = 0;
    for (int i = 0; i < g->nn; i++) {
        if (made[i]) obj += N;
        for (int j = i + 1; j < g->nn; j++) {
            if (g->n[i].chain != g->n[j].chain || cluster[i] == cluster[j]) continue;
            bool heavy = reads(&g->n[j], g->n[i].id) || reads(&g->n[i], g->n[j].id);
            for (int k = 0; !heavy && k < g->n[i].nreads; k++) heavy = reads(&g->n[j], g->n[i].reads[k]);
            obj += heavy ? N * N : 1;
        }
    }
    return obj;
}

void plan_graph_print(FILE *f, const PlanGraph *g, const PlanLog *log, bool json, const char *solver,
                      double solve_ms)
{
    int nn = g->nn;
    int *par = calloc((size_t)(nn ? nn : 1), sizeof *par), *one = calloc((size_t)(nn ? nn : 1), sizeof *one);
    bool *made = calloc((size_t)(nn ? nn : 1), sizeof *made), *made0 = calloc((size_t)(nn ? nn : 1), sizeof *made0);
    if (!par || !one || !made || !made0) {
        free(par), free(one), free(made), free(made0);
        return;
    }
    for (int i = 0; i < nn; i++) par[i] = one[i] = i, made[i] = made0[i] = true;
    /* joins name let variables, some of them new: union-find over ids,
     * the graph's nodes keeping theirs */
    int ids[2 * PLAN_JOIN_MAX + MAXNODES], nid = 0, up[2 * PLAN_JOIN_MAX + MAXNODES];
    for (int i = 0; i < nn; i++) ids[nid] = g->n[i].id, up[nid] = nid, nid++;
    for (int k = 0; log && k < log->njoin; k++)
        for (int e = 0; e < 2; e++) {
            int v = log->join[k][e], at = -1;
            for (int q = 0; q < nid; q++)
                if (ids[q] == v) at = q;
            if (at < 0 && nid < (int)(sizeof ids / sizeof *ids)) ids[nid] = v, up[nid] = nid, nid++;
        }
    for (int k = 0; log && k < log->njoin; k++) {
        int a = -1, b = -1;
        for (int q = 0; q < nid; q++) {
            if (ids[q] == log->join[k][0]) a = q;
            if (ids[q] == log->join[k][1]) b = q;
        }
        if (a >= 0 && b >= 0) up[uf_find(up, a)] = uf_find(up, b);
    }
    for (int i = 0; i < nn; i++) par[i] = uf_find(up, i);
    for (int k = 0; log && k < log->nremoved; k++) {
        int i = find(g, log->removed[k]);
        if (i >= 0) made[i] = false;
    }
    int64_t obj = objective(g, par, made), obj0 = objective(g, one, made0);
    int nclusters = 0;   /* distinct roots */
    for (int i = 0; i < nn; i++) {
        bool first = true;
        for (int j = 0; j < i; j++)
            if (par[j] == par[i]) first = false;
        nclusters += first;
    }
    char a[32], b[32];
    if (json) {
        fprintf(f, "{\"stage\":\"plan\",\"solver\":\"%s\",\"solve_ms\":%.3f,\"N\":%d,\"objective\":%lld,"
                "\"objective_accelerate\":%lld,\"nodes\":[", solver, solve_ms, nn, (long long)obj, (long long)obj0);
        for (int i = 0; i < nn; i++) {
            const GNode *n = &g->n[i];
            name(a, sizeof a, n->id);
            fprintf(f, "%s{\"id\":\"%s\",\"op\":\"%s\",\"generator\":", i ? "," : "", a, op_name(n->op));
            json_str(f, n->gen);
            fprintf(f, ",\"operator\":");
            json_str(f, n->op2);
            fprintf(f, ",\"space\":");
            json_str(f, n->space);
            fprintf(f, ",\"made\":%s}", made[i] ? "true" : "false");
        }
        fprintf(f, "],\"edges\":[");
        for (int k = 0; k < g->ne; k++) {
            const GEdge *e = &g->e[k];
            name(a, sizeof a, g->n[e->from].id), name(b, sizeof b, g->n[e->to].id);
            fprintf(f, "%s{\"from\":\"%s\",\"to\":\"%s\",\"kind\":\"%s\",\"why\":", k ? "," : "", a, b,
                    e->fusible ? "fusible" : "fusion-preventing");
            json_str(f, e->why);
            fputc('}', f);
        }
        fprintf(f, "],\"siblings\":[");
        int ns = 0;
        for (int i = 0; i < nn; i++)
            for (int j = i + 1; j < nn; j++) {
                const GNode *x = &g->n[i], *y = &g->n[j];
                if (x->chain != y->chain || strcmp(x->space, y->space) || reads(y, x->id) || reads(x, y->id)) continue;
                name(a, sizeof a, x->id), name(b, sizeof b, y->id);
                fprintf(f, "%s[\"%s\",\"%s\"]", ns++ ? "," : "", a, b);
            }
        fprintf(f, "],\"clusters\":[");
        int nc = 0;
        for (int i = 0; i < nn; i++) {
            bool first = true;
            for (int j = 0; j < i; j++)
                if (par[j] == par[i]) first = false;
            if (!first) continue;
            fprintf(f, "%s[", nc++ ? "," : "");
            int m = 0;
            for (int j = i; j < nn; j++)
                if (par[j] == par[i]) name(a, sizeof a, g->n[j].id), fprintf(f, "%s\"%s\"", m++ ? "," : "", a);
            fputc(']', f);
        }
        fprintf(f, "],\"rewrites\":[");
        for (int k = 0; log && k < log->n; k++) {
            if (k) fputc(',', f);
            json_str(f, log->line[k]);
        }
        fprintf(f, "]%s}\n", g->truncated ? ",\"truncated\":true" : "");
    } else {
        fprintf(f, "loop graph after Accelerate's fusion: %d loop%s%s\n", nn, nn == 1 ? "" : "s",
                g->truncated ? " (truncated)" : "");
        for (int i = 0; i < nn; i++) {
            const GNode *n = &g->n[i];
            name(a, sizeof a, n->id);
            fprintf(f, "  %-8s %-10s %s%s%s%s over %s%s\n", a, op_name(n->op), n->gen, n->op2[0] ? "(" : "", n->op2,
                    n->op2[0] ? ")" : "", n->space, made[i] ? "" : "   (no longer made)");
        }
        fprintf(f, "edges:\n");
        for (int k = 0; k < g->ne; k++) {
            const GEdge *e = &g->e[k];
            name(a, sizeof a, g->n[e->from].id), name(b, sizeof b, g->n[e->to].id);
            fprintf(f, "  %s -> %s  %s: %s\n", a, b, e->fusible ? "fusible" : "fusion-preventing", e->why);
        }
        fprintf(f, "siblings (one iteration space, neither reading the other):\n");
        for (int i = 0; i < nn; i++)
            for (int j = i + 1; j < nn; j++) {
                const GNode *x = &g->n[i], *y = &g->n[j];
                if (x->chain != y->chain || strcmp(x->space, y->space) || reads(y, x->id) || reads(x, y->id)) continue;
                name(a, sizeof a, x->id), name(b, sizeof b, y->id);
                fprintf(f, "  %s ~ %s  over %s\n", a, b, x->space);
            }
        fprintf(f, "clusters (solver: %s, %.3f ms): %d\n", solver, solve_ms, nclusters);
        for (int i = 0; i < nn; i++) {
            bool first = true;
            for (int j = 0; j < i; j++)
                if (par[j] == par[i]) first = false;
            if (!first) continue;
            fprintf(f, "  {");
            int m = 0;
            for (int j = i; j < nn; j++)
                if (par[j] == par[i]) name(a, sizeof a, g->n[j].id), fprintf(f, "%s%s", m++ ? ", " : "", a);
            fprintf(f, "}\n");
        }
        fprintf(f, "objective (seed 001: N^2 per pair sharing an input or an edge left apart, 1 per other pair left "
                "apart, N per array made; N = %d): %lld, Accelerate's fusion alone %lld\n", nn, (long long)obj,
                (long long)obj0);
        for (int k = 0; log && k < log->n; k++) fprintf(f, "rewrite: %s\n", log->line[k]);
    }
    free(par), free(one), free(made), free(made0);
}
