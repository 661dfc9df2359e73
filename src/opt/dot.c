/*
 * A Graphviz view of an array program before and after fusion (docs/ARCHITECTURE.md, "The pipeline"), drawn the way the paper's Figure 3 is: producers as blue boxes,
 * consumers as orange ellipses, inputs as notes, the structural nodes
 * (tuples, projections, acond, awhile) grey; edges follow the data from
 * each array to the operations that read it (dashed when scalar code reads
 * it by indexing, dotted for its extent alone).
 *
 *  - before: the program fusion was given; each kernel a dashed cluster
 *    holding the operations fusion put into it (from the kernel numbers
 *    fusion leaves in the source nodes' `num`, see fusion.c), so p2..p5 of
 *    Figure 3 sit in c2's cluster and p1 in one of its own.
 *  - after: the fused program; each kernel a cluster holding its operation
 *    and, as a producer box, each delayed input embedded in it.
 *
 * Variables are resolved to the operations that compute them (lets,
 * renamings and uses of a bound array do not draw as nodes of their own).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "opt_dot.h"
#include <stdlib.h>
#include <string.h>

typedef struct DotState {
    FILE *f;
    const char *pfx;          /* node name prefix: one per graph */
    bool tags;                /* cluster by the kernel numbers in num */
    const Node **def;         /* variable id -> the node that computes it */
    int ndef;
    int seq;                  /* node numbering */
    const Node **seen;        /* nodes numbered so far, and their numbers */
    int *num;
    int nseen, capseen;
    int nkernel;
    int (*edges)[3];          /* drawn edges: from, to, kind */
    int nedges, capedges;
} DotState;

static bool is_producer(Op op)
{
    switch (op) {
    case OP_GENERATE: case OP_MAP: case OP_ZIPWITH: case OP_BACKPERMUTE: case OP_REPLICATE: case OP_SLICE:
    case OP_RESHAPE: case OP_TRANSFORM: case OP_DELAYED:
        return true;
    default:
        return false;
    }
}

static bool is_consumer(Op op)
{
    switch (op) {
    case OP_FOLD: case OP_FOLD1: case OP_FOLDSEG: case OP_FOLD1SEG: case OP_SCANL: case OP_SCANL1: case OP_SCANR:
    case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX: case OP_PERMUTE: case OP_FILTER: case OP_STENCIL:
    case OP_STENCIL2: case OP_UNIT: case OP_SORT:
        return true;
    default:
        return false;
    }
}

static int max_var(const Node *x)
{
    int m = -1;
    while (x) {
        if (x->op == OP_ALET || x->op == OP_AVAR || x->op == OP_LET || x->op == OP_VAR) m = x->id > m ? x->id : m;
        if (x->op == OP_LAM)
            for (int i = 0; i < x->nparam; i++) m = x->param[i]->id > m ? x->param[i]->id : m;
        if (x->n == 0) return m;
        for (int i = 0; i < x->n - 1; i++) {
            int k = max_var(x->kid[i]);
            m = k > m ? k : m;
        }
        x = x->kid[x->n - 1];
    }
    return m;
}

/* The node that computes array term x: through lets and variables. */
static const Node *origin(const DotState *d, const Node *x)
{
    for (int k = 0; x && k < 10000; k++) {
        if (x->op == OP_ALET && x->n == 2) x = x->kid[1];
        else if (x->op == OP_AVAR && x->id >= 0 && x->id < d->ndef && d->def[x->id]) x = d->def[x->id];
        else break;
    }
    return x;
}

/* Records what each array variable stands for. */
static void defs(DotState *d, const Node *x)
{
    while (x) {
        if (x->op == OP_ALET && x->n == 2 && x->id >= 0 && x->id < d->ndef) d->def[x->id] = x->kid[0];
        if (x->n == 0 || (!op_is_array(x->op) && x->op != OP_LAM)) return;
        for (int i = 0; i < x->n - 1; i++) defs(d, x->kid[i]);
        x = x->kid[x->n - 1];
    }
}

/* The number of node x in this graph (0: not drawn yet). */
static int *slot(DotState *d, const Node *x)
{
    for (int i = 0; i < d->nseen; i++)
        if (d->seen[i] == x) return &d->num[i];
    if (d->nseen == d->capseen) {
        int cap = d->capseen ? 2 * d->capseen : 64;
        const Node **s = ax__realloc(d->seen, sizeof *s * (size_t)cap);
        if (s) d->seen = s;
        int *n = s ? ax__realloc(d->num, sizeof *n * (size_t)cap) : NULL;
        if (!n) return NULL;
        d->num = n;
        d->capseen = cap;
    }
    d->seen[d->nseen] = x;
    d->num[d->nseen] = 0;
    return &d->num[d->nseen++];
}

static void label(FILE *f, const Node *x)
{
    char t[128];
    ty_str(x->type, t, sizeof t);
    if (x->op == OP_USE) fprintf(f, "use\\n%s", t);
    else fprintf(f, "%s\\n%s", op_name(x->op), t);
}

static void style(FILE *f, const Node *x)
{
    if (x->op == OP_USE || x->op == OP_AVAR)
        fputs("shape=note, style=filled, fillcolor=\"#eeeeee\"", f);
    else if (is_producer(x->op))
        fputs("shape=box, style=\"rounded,filled\", fillcolor=\"#9ecae1\"", f);
    else if (is_consumer(x->op))
        fputs("shape=ellipse, style=filled, fillcolor=\"#fdae6b\"", f);
    else
        fputs("shape=diamond, style=filled, fillcolor=\"#d9d9d9\"", f);
}

/* Draws node x once; returns its number. */
static int node(DotState *d, const Node *x)
{
    int *s = slot(d, x);
    if (!s) return 0;
    if (*s) return *s;
    *s = ++d->seq;
    fprintf(d->f, "    %s%d [label=\"", d->pfx, *s);
    label(d->f, x);
    fputs("\", ", d->f);
    style(d->f, x);
    fputs("];\n", d->f);
    return *s;
}

/* An edge, once per (from, to, kind). */
static void edge(DotState *d, int from, int to, const char *how)
{
    if (!from || !to) return;
    unsigned h = 0;
    for (const char *c = how; *c; c++) h = h * 31u + (unsigned char)*c;
    int kind = (int)(h & 0x7fffffff);
    for (int i = 0; i < d->nedges; i++)
        if (d->edges[i][0] == from && d->edges[i][1] == to && d->edges[i][2] == kind) return;
    if (d->nedges == d->capedges) {
        int cap = d->capedges ? 2 * d->capedges : 64;
        int (*e)[3] = ax__realloc(d->edges, sizeof *e * (size_t)cap);
        if (!e) return;
        d->edges = e;
        d->capedges = cap;
    }
    d->edges[d->nedges][0] = from;
    d->edges[d->nedges][1] = to;
    d->edges[d->nedges][2] = kind;
    d->nedges++;
    fprintf(d->f, "    %s%d -> %s%d%s;\n", d->pfx, from, d->pfx, to, how);
}

/* Arrays read from scalar code: a dashed edge (dotted: the extent only). */
static void scalar_edges(DotState *d, const Node *x, int to)
{
    while (x) {
        if ((x->op == OP_INDEX || x->op == OP_LINDEX || x->op == OP_SHAPE) && x->n >= 1 && x->kid[0]->op == OP_AVAR) {
            const Node *o = origin(d, x->kid[0]);
            if (o && op_is_array(o->op)) edge(d, node(d, o), to, x->op == OP_SHAPE ? " [style=dotted]" : " [style=dashed]");
        }
        if (x->n == 0) return;
        for (int i = 0; i < x->n - 1; i++) scalar_edges(d, x->kid[i], to);
        x = x->kid[x->n - 1];
    }
}

static void draw(DotState *d, const Node *x);

/* An operation: its node, and edges from what it reads. */
static void op(DotState *d, const Node *x)
{
    int me = node(d, x);
    for (int i = 0; i < x->n; i++) {
        const Node *k = x->kid[i];
        if (k->op == OP_DELAYED) {
            /* after fusion: the producer embedded in this kernel */
            int dn = node(d, k);
            edge(d, dn, me, " [penwidth=2]");
            scalar_edges(d, k, dn);
        } else if (op_is_array(k->op)) {
            draw(d, k);
            const Node *o = origin(d, k);
            if (o) edge(d, node(d, o), me, "");
        } else if (k->op == OP_LAM && k->kid[0] && op_is_array(k->kid[0]->op)) {
            draw(d, k->kid[0]);    /* awhile's functions */
            const Node *o = origin(d, k->kid[0]);
            if (o) edge(d, node(d, o), me, " [style=bold, label=\"loop\"]");
        } else {
            scalar_edges(d, k, me);
        }
    }
}

/* The kernel number of node x in the graph being drawn (0: none). */
static int kernel_of(const DotState *d, const Node *x)
{
    if (d->tags) return x->num;
    return is_producer(x->op) || is_consumer(x->op) ? -1 : 0;
}

/* Every operation of the array term x, in a cluster per kernel. */
static void draw(DotState *d, const Node *x)
{
    while (x) {
        if (x->op == OP_ALET && x->n == 2) {
            draw(d, x->kid[0]);
            x = x->kid[1];
            continue;
        }
        if (x->op == OP_AVAR) return;
        if (!op_is_array(x->op)) return;
        int *s = slot(d, x);
        if (s && *s) return;
        int k = kernel_of(d, x);
        if (k && !d->tags) {
            /* after fusion: one cluster per kernel */
            d->nkernel++;
            fprintf(d->f, "  subgraph cluster_%s_k%d {\n    label=\"kernel %d\"; style=rounded; color=\"#636363\";\n",
                    d->pfx, d->nkernel, d->nkernel);
            node(d, x);
            for (int i = 0; i < x->n; i++)
                if (x->kid[i]->op == OP_DELAYED) node(d, x->kid[i]);
            fputs("  }\n", d->f);
        }
        op(d, x);
        return;
    }
}

/* Before fusion: clusters from the kernel numbers fusion left. */
static void clusters(DotState *d)
{
    int maxk = 0;
    for (int i = 0; i < d->nseen; i++)
        if (op_is_array(d->seen[i]->op) && d->seen[i]->num > maxk) maxk = d->seen[i]->num;
    for (int k = 1; k <= maxk; k++) {
        bool any = false;
        for (int i = 0; i < d->nseen; i++) {
            const Node *x = d->seen[i];
            if (!op_is_array(x->op) || x->num != k || x->op == OP_ALET || x->op == OP_AVAR) continue;
            if (!any) fprintf(d->f, "  subgraph cluster_%s_k%d {\n    label=\"kernel %d\"; style=\"rounded,dashed\"; color=\"#636363\";\n",
                              d->pfx, k, ++d->nkernel);
            any = true;
            fprintf(d->f, "    %s%d;\n", d->pfx, d->num[i]);
        }
        if (any) fputs("  }\n", d->f);
    }
}

static void graph(FILE *f, const char *pfx, const char *title, const Node *root, bool tags)
{
    DotState d;
    memset(&d, 0, sizeof d);
    d.f = f;
    d.pfx = pfx;
    d.tags = tags;
    d.ndef = max_var(root) + 1;
    d.def = ax__calloc((size_t)d.ndef + 1, sizeof *d.def);
    if (!d.def) return;
    defs(&d, root);
    fprintf(f, " subgraph cluster_%s {\n  label=\"%s\"; fontsize=16; style=solid; color=black;\n", pfx, title);
    draw(&d, root);
    const Node *res = origin(&d, root);
    if (res) {
        fprintf(f, "    %sresult [label=\"result\", shape=plaintext];\n", pfx);
        fprintf(f, "    %s%d -> %sresult;\n", pfx, node(&d, res), pfx);
    }
    if (tags) clusters(&d);
    fputs(" }\n", f);
    free(d.def);
    free(d.seen);
    free(d.num);
    free(d.edges);
}

void ir_print_dot(FILE *f, const Node *before, const Node *after)
{
    fputs("digraph axle {\n rankdir=TB; compound=true; node [fontname=\"Helvetica\", fontsize=10];\n", f);
    if (before) graph(f, "b", after && after != before ? "before fusion (clusters: the kernels fusion made)" : "the program",
                      before, after && after != before);
    if (after && after != before) graph(f, "a", "after fusion (each cluster one kernel)", after, false);
    fputs("}\n", f);
}
