/*
 * The plan dump (`axle dump PROGRAM --stage plan [--json]`): the loop
 * graph of plangraph.c with the clustering the planner's rewrites made
 * (PlanLog) and the solver's choice (ilp.c), and seed 001's objective
 * (s."The objective function") for it and for Accelerate's fusion alone.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "plangraph.h"
#include <stdlib.h>
#include <string.h>

static int find_key(const PlanGraph *g, int64_t key)
{
    for (int i = 0; i < g->nn; i++)
        if (g->n[i].key == key) return i;
    return -1;
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

static void name(char *out, size_t size, const GNode *n)
{
    if (n->id == -1) snprintf(out, size, "result");
    else if (n->id < 0) snprintf(out, size, "r%d", n->chain);   /* a nested chain's result */
    else snprintf(out, size, "a%d", n->id);
}

/* ------------------------------------------------------------ printing */

/* Siblings: loops of one chain over one iteration space, neither reading
 * the other. */
static bool siblings(const GNode *x, const GNode *y)
{
    return x->chain == y->chain && !strcmp(x->space, y->space) && !(x->id >= 0 && plan_gnode_reads(y, x->id)) &&
           !(y->id >= 0 && plan_gnode_reads(x, y->id));
}

/* Seed 001's objective for a clustering (cluster[i]: node i's root) with
 * `made[i]` true where node i's array is still made. */
static int64_t objective(const PlanGraph *g, const int *cluster, const bool *made)
{
    int64_t N = g->nn, obj = 0;
    for (int i = 0; i < g->nn; i++) {
        if (made[i]) obj += N;
        for (int j = i + 1; j < g->nn; j++)
            if (g->n[i].chain == g->n[j].chain && cluster[i] != cluster[j]) obj += plan_graph_weight(g, i, j);
    }
    return obj;
}

/* Node i's cluster in c (by key), or -1-i when c has none for it. */
static int cluster_of(const PlanClusters *c, const GNode *n, int i)
{
    for (int k = 0; c && k < c->n; k++)
        if (c->key[k] == n->key) return c->cluster[k];
    return -1 - i;
}

static void print_clusters(FILE *f, const PlanGraph *g, const int *par, bool json)
{
    char a[32];
    int nc = 0;
    for (int i = 0; i < g->nn; i++) {
        bool first = true;
        for (int j = 0; j < i; j++)
            if (par[j] == par[i]) first = false;
        if (!first) continue;
        if (json) fprintf(f, "%s[", nc++ ? "," : "");
        else fprintf(f, "  {");
        int m = 0;
        for (int j = i; j < g->nn; j++)
            if (par[j] == par[i]) {
                name(a, sizeof a, &g->n[j]);
                if (json) fprintf(f, "%s\"%s\"", m++ ? "," : "", a);
                else fprintf(f, "%s%s", m++ ? ", " : "", a);
            }
        fputs(json ? "]" : "}\n", f);
    }
}

static int count_clusters(const PlanGraph *g, const int *par)
{
    int nc = 0;
    for (int i = 0; i < g->nn; i++) {
        bool first = true;
        for (int j = 0; j < i && first; j++) first = par[j] != par[i];
        nc += first;
    }
    return nc;
}

static const char *solver_name(const PlanChoice *ch)
{
    return !ch ? "none (--no-planner)" : ch->solver == PLAN_CBC ? "cbc" : ch->solver == PLAN_NONE ? "none"
           : ch->solver == PLAN_PRESOLVE ? "presolve" : "greedy";
}

void plan_graph_print(FILE *f, const PlanGraph *g, const PlanLog *log, bool json, const PlanChoice *ch)
{
    int nn = g->nn;
    size_t sz = (size_t)(nn ? nn : 1);
    int *par = ax__calloc(sz, sizeof *par), *one = ax__calloc(sz, sizeof *one), *ilp = ax__calloc(sz, sizeof *ilp);
    bool *made = ax__calloc(sz, sizeof *made), *made0 = ax__calloc(sz, sizeof *made0);
    int nid = 0, *up = ax__calloc(2 * PLAN_JOIN_MAX + sz, sizeof *up);
    int64_t *ids = ax__calloc(2 * PLAN_JOIN_MAX + sz, sizeof *ids);
    if (!par || !one || !ilp || !made || !made0 || !up || !ids) {
        free(par), free(one), free(ilp), free(made), free(made0), free(up), free(ids);
        return;
    }
    for (int i = 0; i < nn; i++) par[i] = one[i] = i, made[i] = made0[i] = true;
    /* the clusters the rewrites made: joins name loops by key, some of
     * them new: union-find over keys, the graph's nodes keeping theirs */
    for (int i = 0; i < nn; i++) ids[nid] = g->n[i].key, up[nid] = nid, nid++;
    for (int k = 0; log && k < log->njoin; k++)
        for (int e = 0; e < 2; e++) {
            int64_t v = log->join[k][e];
            int at = -1;
            for (int q = 0; q < nid && at < 0; q++)
                if (ids[q] == v) at = q;
            if (at < 0) ids[nid] = v, up[nid] = nid, nid++;
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
        int i = find_key(g, log->removed[k]);
        if (i >= 0) made[i] = false;
    }
    /* the ILP's clusters, where it ran */
    /* (agree: every ILP cluster is within one made; grown: the loops and
     * epilogues after its rewrites merged some of them further, planloops.c and planepilogue.c) */
    bool ran = ch && ch->cl, agree = true, grown = false;
    for (int i = 0; i < nn; i++) ilp[i] = cluster_of(ran ? ch->cl : NULL, &g->n[i], i);
    for (int i = 0; ran && i < nn; i++)
        for (int j = i + 1; j < nn; j++) {
            agree &= ilp[i] != ilp[j] || par[i] == par[j];
            grown |= ilp[i] != ilp[j] && par[i] == par[j];
        }
    int64_t obj = objective(g, par, made), obj0 = objective(g, one, made0);
    int nclusters = count_clusters(g, par);
    char a[32], b[32];
    const char *solver = solver_name(ch);
    if (json) {
        fprintf(f, "{\"stage\":\"plan\",\"solver\":\"%s\",\"solver_why\":", solver);
        json_str(f, ch ? ch->why : "");
        fprintf(f, ",\"solve_ms\":%.3f,\"solve_cpu_ms\":%.3f,\"load_ms\":%.3f,\"limit_ms\":%.3f,\"N\":%d,"
                "\"objective\":%lld,\"objective_accelerate\":%lld,\"nodes\":[", ch ? ch->solve_ms : 0.0,
                ch ? ch->solve_cpu_ms : 0.0, ch ? ch->load_ms : 0.0, ch ? ch->limit_ms : 0.0, nn, (long long)obj,
                (long long)obj0);
        for (int i = 0; i < nn; i++) {
            const GNode *n = &g->n[i];
            name(a, sizeof a, n);
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
            name(a, sizeof a, &g->n[e->from]), name(b, sizeof b, &g->n[e->to]);
            fprintf(f, "%s{\"from\":\"%s\",\"to\":\"%s\",\"kind\":\"%s\",\"why\":", k ? "," : "", a, b,
                    e->fusible ? "fusible" : "fusion-preventing");
            json_str(f, e->why);
            fprintf(f, ",\"planner\":%s}", plan_graph_pair(g, e->from, e->to) ? "true" : "false");
        }
        fprintf(f, "],\"siblings\":[");
        int ns = 0;
        for (int i = 0; i < nn; i++)
            for (int j = i + 1; j < nn; j++) {
                const GNode *x = &g->n[i], *y = &g->n[j];
                if (!siblings(x, y)) continue;
                name(a, sizeof a, x), name(b, sizeof b, y);
                fprintf(f, "%s[\"%s\",\"%s\"]", ns++ ? "," : "", a, b);
            }
        fprintf(f, "],\"pairs\":[");
        int np = 0;
        for (int i = 0; i < nn; i++)
            for (int j = i + 1; j < nn; j++)
                if (plan_graph_pair(g, i, j)) {
                    name(a, sizeof a, &g->n[i]), name(b, sizeof b, &g->n[j]);
                    fprintf(f, "%s[\"%s\",\"%s\"]", np++ ? "," : "", a, b);
                }
        fprintf(f, "],\"clusters\":[");
        print_clusters(f, g, par, true);
        fprintf(f, "]");
        if (ran) {
            fprintf(f, ",\"ilp\":{\"x\":%d,\"c\":%d,\"pi\":%d,\"rows\":%d,\"objective\":%lld,\"cached\":%s,"
                    "\"agrees\":%s,\"grown\":%s,\"clusters\":[", ch->nx, ch->nc, ch->npi, ch->nrows,
                    (long long)ch->objective, ch->cached ? "true" : "false", agree ? "true" : "false",
                    grown ? "true" : "false");
            print_clusters(f, g, ilp, true);
            fprintf(f, "]}");
        }
        fprintf(f, ",\"rewrites\":[");
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
            name(a, sizeof a, n);
            fprintf(f, "  %-8s %-10s %s%s%s%s over %s%s\n", a, op_name(n->op), n->gen, n->op2[0] ? "(" : "", n->op2,
                    n->op2[0] ? ")" : "", n->space, made[i] ? "" : "   (no longer made)");
        }
        fprintf(f, "edges:\n");
        for (int k = 0; k < g->ne; k++) {
            const GEdge *e = &g->e[k];
            name(a, sizeof a, &g->n[e->from]), name(b, sizeof b, &g->n[e->to]);
            fprintf(f, "  %s -> %s  %s: %s%s\n", a, b, e->fusible ? "fusible" : "fusion-preventing", e->why,
                    e->fusible && !plan_graph_pair(g, e->from, e->to) ? " (not the ILP's to choose)" : "");
        }
        fprintf(f, "siblings (one iteration space, neither reading the other):\n");
        for (int i = 0; i < nn; i++)
            for (int j = i + 1; j < nn; j++) {
                const GNode *x = &g->n[i], *y = &g->n[j];
                if (!siblings(x, y)) continue;
                name(a, sizeof a, x), name(b, sizeof b, y);
                fprintf(f, "  %s ~ %s  over %s\n", a, b, x->space);
            }
        fprintf(f, "pairs the planner's rewrites can put in one pass:");
        int np = 0;
        for (int i = 0; i < nn; i++)
            for (int j = i + 1; j < nn; j++)
                if (plan_graph_pair(g, i, j)) {
                    name(a, sizeof a, &g->n[i]), name(b, sizeof b, &g->n[j]);
                    fprintf(f, "%s %s ~ %s", np++ ? "," : "", a, b);
                }
        fprintf(f, "%s\n", np ? "" : " none");
        fprintf(f, "solver: %s", solver);
        if (ch && ch->why[0]) fprintf(f, " (%s)", ch->why);
        if (ch && ch->solver != PLAN_GREEDY)
            fprintf(f, ", %.3f ms (%.3f ms of CPU)%s, limit %g ms of CPU", ch->solve_ms, ch->solve_cpu_ms,
                    ch->cached ? " (solved before in this context)" : "", ch->limit_ms);
        if (ch && ch->load_ms > 0) fprintf(f, ", loading CBC %.1f ms", ch->load_ms);
        if (ran)
            fprintf(f, "; model: %d x, %d c, %d pi, %d rows; objective %lld", ch->nx, ch->nc, ch->npi, ch->nrows,
                    (long long)ch->objective);
        fprintf(f, "\nclusters: %d\n", nclusters);
        print_clusters(f, g, par, false);
        if (ran && (!agree || grown)) {
            fprintf(f, "%s, which were:\n", !agree ? "the rewrites did not carry out the ILP's clusters"
                                                  : "the loops and epilogues after the ILP's rewrites merged its "
                                                    "clusters further");
            print_clusters(f, g, ilp, false);
        }
        fprintf(f, "objective (seed 001: N^2 per pair sharing an input or an edge left apart, 1 per other pair left "
                "apart, N per array made; N = %d): %lld, Accelerate's fusion alone %lld\n", nn, (long long)obj,
                (long long)obj0);
        for (int k = 0; log && k < log->n; k++) fprintf(f, "rewrite: %s\n", log->line[k]);
    }
    free(par), free(one), free(ilp), free(made), free(made0), free(up), free(ids);
}
