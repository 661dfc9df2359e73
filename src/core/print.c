/*
 * The IR printer (docs/ARCHITECTURE.md, "The pipeline").  Readable text, one
 * binding per line:
 *
 *   let a0 = use [f32]^1 <array 1000> in
 *   fold (\x1 x2 -> add x1 x2) 0.0 (zipWith (\x3 x4 -> mul x3 x4) a0 a1)
 *
 * Scalar variables print as x<id>, array variables as a<id>, constants as
 * sc_print writes them, types as ty_str does.  Operations print as their
 * op_name (primitives as prim_info's name) applied to their operands;
 * immediates (projection index, dimension) come right after the name.
 *
 * The printer also prints source graphs (before sharing recovery), which
 * are DAGs: a node reached along more than one edge prints as "#N:(...)"
 * the first time and "#N" afterwards (constants and variables are never
 * labelled, they are just repeated).
 *
 * ir_print_json writes one JSON object on one line:
 *   {"program":..., "stage":..., "nodes":N, "array_nodes":A,
 *    "scalar_nodes":S, "lets":L, "ir":"<the text above>"}
 * Counting: every distinct node reachable from the root through operands
 * and lambda parameters counts once (a DAG's shared nodes once; a lambda
 * and each of its parameters count too).  A node is an array node if its
 * op is of the array stratum (ir.h), a LAM if its body is (awhile's
 * functions); every other node is a scalar node; nodes = array_nodes +
 * scalar_nodes.  lets counts LET and ALET nodes.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "hostarray.h"
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ pointer map */

typedef struct PSlot { const void *k; int v; } PSlot;
typedef struct PMap { PSlot *s; size_t cap, len; bool oom; } PMap;

static size_t phash(const void *p) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 17); }

/* The value slot of p, added (as 0) if absent; NULL when out of memory. */
static int *pmap_at(PMap *m, const void *p, bool add)
{
    if (add && 2 * (m->len + 1) > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        PSlot *t = ax__calloc(cap, sizeof *t);
        if (!t) { m->oom = true; return NULL; }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->s[i].k) continue;
            size_t j = phash(m->s[i].k) & (cap - 1);
            while (t[j].k) j = (j + 1) & (cap - 1);
            t[j] = m->s[i];
        }
        free(m->s);
        m->s = t;
        m->cap = cap;
    }
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1, i = phash(p) & mask;
    while (m->s[i].k && m->s[i].k != p) i = (i + 1) & mask;
    if (!m->s[i].k) {
        if (!add) return NULL;
        m->s[i].k = p;
        m->s[i].v = 0;
        m->len++;
    }
    return &m->s[i].v;
}

/* A growable stack of nodes for the iterative walks. */
typedef struct NStack { const Node **a; size_t n, cap; } NStack;

static bool nstack_push(NStack *s, const Node *x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        const Node **a = ax__realloc(s->a, sizeof *a * cap);
        if (!a) return false;
        s->a = a;
        s->cap = cap;
    }
    s->a[s->n++] = x;
    return true;
}

static bool trivial(const Node *n) { return n->op == OP_CONST || n->op == OP_VAR || n->op == OP_AVAR; }

/* Counts the edges reaching each non-trivial node (to find a DAG's shared
 * nodes); each node's operands are walked once. */
static void count_refs(PMap *refs, const Node *root)
{
    NStack st = {0};
    if (!root || !nstack_push(&st, root)) { refs->oom = true; free(st.a); return; }
    while (st.n) {
        const Node *n = st.a[--st.n];
        for (int i = 0; i < n->n; i++) {
            const Node *k = n->kid ? n->kid[i] : NULL;
            if (!k || trivial(k)) continue;
            int *c = pmap_at(refs, k, true);
            if (!c) break;
            if ((*c)++ == 0 && !nstack_push(&st, k)) { refs->oom = true; break; }
        }
        if (refs->oom) break;
    }
    free(st.a);
}

/* ------------------------------------------------------------ text */

typedef struct Pr {
    FILE *f;
    int col;         /* the output column, for the layout of lets */
    PMap refs;       /* edges reaching each node */
    PMap labels;     /* #N of the shared nodes printed so far */
    int nlabel;
} Pr;

static void put(Pr *pr, const char *s)
{
    fputs(s, pr->f);
    for (; *s; s++) pr->col = *s == '\n' ? 0 : pr->col + 1;
}

static void putf(Pr *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(Pr *pr, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put(pr, buf);
}

/* A new line starting at column c. */
static void newline(Pr *pr, int c)
{
    fputc('\n', pr->f);
    for (int i = 0; i < c; i++) fputc(' ', pr->f);
    pr->col = c;
}

static bool is_shared(Pr *pr, const Node *n)
{
    if (trivial(n)) return false;
    int *c = pmap_at(&pr->refs, n, false);
    return c && *c > 1;
}

static bool negative_const(const Node *n)
{
    if (n->op != OP_CONST || !n->type || n->type->kind != TY_SCALAR) return false;
    switch (n->type->s) {
    case AX_F32: return signbit(n->c.f32) != 0;
    case AX_F64: return signbit(n->c.f64) != 0;
    case AX_I8: case AX_I16: case AX_I32: case AX_I64: return n->c.i < 0;
    default: return false;
    }
}

/* Forms that need no parentheses as an operand. */
static bool self_delimiting(Pr *pr, const Node *n)
{
    switch (n->op) {
    case OP_VAR: case OP_AVAR: case OP_TUPLE: case OP_ATUPLE: case OP_IXCONS: case OP_LAM:
        return true;
    case OP_CONST:
        return !negative_const(n);
    default:
        return is_shared(pr, n);
    }
}

static void pr_node(Pr *pr, const Node *n);

static void pr_arg(Pr *pr, const Node *n)
{
    if (!n) { put(pr, "<null>"); return; }
    if (self_delimiting(pr, n)) { pr_node(pr, n); return; }
    put(pr, "(");
    pr_node(pr, n);
    put(pr, ")");
}

static void pr_var(Pr *pr, const Node *v)
{
    if (!v) put(pr, "<null>");
    else putf(pr, "%s%d", v->op == OP_AVAR || v->op == OP_ALET ? "a" : "x", v->id);
}

static void pr_type(Pr *pr, const Type *t)
{
    char buf[256];
    put(pr, ty_str(t, buf, sizeof buf));
}

static void pr_const(Pr *pr, const Node *n)
{
    if (!n->type || n->type->kind != TY_SCALAR) { put(pr, "<const>"); return; }
    char buf[64] = {0};
    FILE *m = fmemopen(buf, sizeof buf - 1, "w");
    if (!m) { put(pr, "<const>"); return; }
    sc_print(m, n->type->s, n->c);
    fclose(m);
    put(pr, buf);
}

static void pr_list(Pr *pr, const Node *n)
{
    for (int i = 0; i < n->n; i++) {
        if (i) put(pr, ", ");
        pr_node(pr, n->kid ? n->kid[i] : NULL);
    }
}

static const char *const bound_names[] = {"clamp", "mirror", "wrap", "constant"};

static void pr_body(Pr *pr, const Node *n)
{
    switch (n->op) {
    case OP_CONST:
        pr_const(pr, n);
        return;
    case OP_VAR: case OP_AVAR:
        pr_var(pr, n);
        return;
    case OP_LET: case OP_ALET: {
        /* One binding per line, the body under the first `let`; a chain
         * of lets is printed iteratively. */
        int base = pr->col;
        for (;;) {
            put(pr, "let ");
            pr_var(pr, n);
            put(pr, " = ");
            pr_node(pr, n->n > 0 ? n->kid[0] : NULL);
            put(pr, " in");
            newline(pr, base);
            const Node *b = n->n > 1 ? n->kid[1] : NULL;
            if (b && (b->op == OP_LET || b->op == OP_ALET) && !is_shared(pr, b)) { n = b; continue; }
            pr_node(pr, b);
            return;
        }
    }
    case OP_TUPLE:
        put(pr, "(");
        pr_list(pr, n);
        put(pr, ")");
        return;
    case OP_ATUPLE: {
        /* A program's several results: one per line unless all are
         * variables. */
        bool vars = true;
        for (int i = 0; i < n->n; i++) vars = vars && n->kid && n->kid[i] && n->kid[i]->op == OP_AVAR;
        int base = pr->col;
        put(pr, "(");
        for (int i = 0; i < n->n; i++) {
            if (i) {
                put(pr, ",");
                if (vars) put(pr, " ");
                else newline(pr, base + 1);
            }
            pr_node(pr, n->kid ? n->kid[i] : NULL);
        }
        put(pr, ")");
        return;
    }
    case OP_IXCONS:
        put(pr, "ix(");
        pr_list(pr, n);
        put(pr, ")");
        return;
    case OP_LAM:
        put(pr, "(\\");
        for (int i = 0; i < n->nparam; i++) {
            if (i) put(pr, " ");
            pr_var(pr, n->param ? n->param[i] : NULL);
        }
        put(pr, " -> ");
        pr_node(pr, n->n > 0 ? n->kid[0] : NULL);
        put(pr, ")");
        return;
    case OP_COND:
        if (n->n != 3) break;
        put(pr, "if ");
        pr_node(pr, n->kid[0]);
        put(pr, " then ");
        pr_node(pr, n->kid[1]);
        put(pr, " else ");
        pr_node(pr, n->kid[2]);
        return;
    case OP_PRIM:
        put(pr, (unsigned)n->a < P_NPRIM ? prim_info[n->a].name : "?prim");
        switch (n->a) {
        case P_FLOOR: case P_CEIL: case P_ROUND: case P_TRUNC: case P_CVT: case P_BITCAST:
            put(pr, "<");
            pr_type(pr, n->type);
            put(pr, ">");
            break;
        default: break;
        }
        break;
    case OP_USE:
        put(pr, "use ");
        pr_type(pr, n->type);
        if (!n->arr) { put(pr, " <array ?>"); return; }
        if (n->arr->param) { putf(pr, " <param %d>", n->arr->param - 1); return; }
        put(pr, " <array");
        for (int d = 0; d < n->arr->rank && d < AX_MAX_RANK; d++)
            putf(pr, "%s%lld", d ? "x" : " ", (long long)n->arr->shape[d]);
        put(pr, ">");
        return;
    case OP_STENCIL: case OP_STENCIL2:
        put(pr, op_name(n->op));
        if (n->sten) {
            for (int i = 0; i < n->sten->ninputs && i < 2; i++) {
                put(pr, " ");
                for (int d = 0; d < n->sten->rank && d < AX_MAX_RANK; d++)
                    putf(pr, "%s%d", d ? "x" : "", n->sten->size[i][d]);
                putf(pr, " %s", (unsigned)n->sten->bound[i] <= AX_CONSTANT ? bound_names[n->sten->bound[i]] : "?");
            }
            if (n->sten->ix) put(pr, " ix");
        }
        break;
    case OP_REPLICATE: case OP_SLICE:
        put(pr, op_name(n->op));
        if (n->slice) {
            put(pr, " [");
            for (int i = 0; i < n->slice->n && i < AX_MAX_RANK; i++)
                putf(pr, "%s%s", i ? ", " : "", n->slice->fixed[i] ? "fixed" : "all");
            put(pr, "]");
        }
        break;
    case OP_PROJ: case OP_APROJ: case OP_IXGET:
        putf(pr, "%s %d", op_name(n->op), n->a);
        break;
    case OP_SORT:
        put(pr, n->a ? "sort<descending>" : "sort");
        break;
    case OP_MAP:
        /* an epilogue (ir.h ir_epilogue): the map as its consumer stores */
        put(pr, n->a == MAP_EPILOGUE ? "map<epilogue>" : "map");
        break;
    case OP_LOOP:
        /* the generators: what each makes of which component (.k; .*:
         * the whole element), a reduction's operator and initial value
         * by operand number */
        put(pr, "loop[");
        for (int g = 0; n->loop && g < n->loop->ngen; g++) {
            const LoopGen *q = &n->loop->gen[g];
            static const char *const kinds[] = {"collect", "filter", "fold"};
            putf(pr, "%s%s ", g ? ", " : "", (unsigned)q->kind <= LOOP_REDUCE ? kinds[q->kind] : "?");
            if (q->comp < 0) put(pr, ".*");
            else putf(pr, ".%d", q->comp);
            if (q->kind != LOOP_COLLECT && q->pred >= 0) putf(pr, " if .%d", q->pred);
            if (q->kind == LOOP_REDUCE) {
                putf(pr, " by @%d", q->op);
                if (q->z >= 0) putf(pr, " from @%d", q->z);
            }
        }
        put(pr, "]");
        break;
    default:
        put(pr, op_name(n->op));
        break;
    }
    /* The generic form: the name (and immediates, above) applied to the
     * operands. */
    for (int i = 0; i < n->n; i++) {
        put(pr, " ");
        pr_arg(pr, n->kid ? n->kid[i] : NULL);
    }
}

static void pr_node(Pr *pr, const Node *n)
{
    if (!n) { put(pr, "<null>"); return; }
    if (is_shared(pr, n)) {
        int *lab = pmap_at(&pr->labels, n, true);
        if (lab && *lab) { putf(pr, "#%d", *lab); return; }
        int k = ++pr->nlabel;
        if (lab) *lab = k;
        putf(pr, "#%d:(", k);
        pr_body(pr, n);
        put(pr, ")");
        return;
    }
    pr_body(pr, n);
}

void ir_print(FILE *f, const Node *root)
{
    if (!f) return;
    Pr pr;
    memset(&pr, 0, sizeof pr);
    pr.f = f;
    count_refs(&pr.refs, root);
    pr_node(&pr, root);
    free(pr.refs.s);
    free(pr.labels.s);
}

/* ------------------------------------------------------------ JSON */

static void json_str(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        default:
            if (c < 0x20) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
    fputc('"', f);
}

typedef struct Counts { int64_t nodes, array_nodes, scalar_nodes, lets; } Counts;

static bool lam_is_array(const Node *n)
{
    while (n && n->op == OP_LAM) n = n->n > 0 && n->kid ? n->kid[0] : NULL;
    return n && op_is_array(n->op);
}

static void count_nodes(const Node *root, Counts *c)
{
    PMap seen = {0};
    NStack st = {0};
    if (root && pmap_at(&seen, root, true)) nstack_push(&st, root);
    while (st.n) {
        const Node *n = st.a[--st.n];
        c->nodes++;
        bool arr = n->op == OP_LAM ? lam_is_array(n) : op_is_array(n->op);
        if (arr) c->array_nodes++;
        else c->scalar_nodes++;
        if (n->op == OP_LET || n->op == OP_ALET) c->lets++;
        int np = n->op == OP_LAM && n->param ? n->nparam : 0;
        for (int i = 0; i < n->n + np; i++) {
            const Node *k = i < n->n ? (n->kid ? n->kid[i] : NULL) : n->param[i - n->n];
            if (!k || pmap_at(&seen, k, false)) continue;
            if (!pmap_at(&seen, k, true) || !nstack_push(&st, k)) goto out;
        }
    }
out:
    free(seen.s);
    free(st.a);
}

void ir_print_json(FILE *f, const char *program, const char *stage, const Node *root)
{
    if (!f) return;
    Counts c = {0};
    count_nodes(root, &c);
    char *text = NULL;
    size_t len = 0;
    FILE *m = ax__open_memstream(&text, &len);
    if (m) {
        ir_print(m, root);
        fclose(m);
    }
    fputs("{\"program\":", f);
    json_str(f, program ? program : "", program ? strlen(program) : 0);
    fputs(",\"stage\":", f);
    json_str(f, stage ? stage : "", stage ? strlen(stage) : 0);
    fprintf(f, ",\"nodes\":%lld,\"array_nodes\":%lld,\"scalar_nodes\":%lld,\"lets\":%lld,\"ir\":",
            (long long)c.nodes, (long long)c.array_nodes, (long long)c.scalar_nodes, (long long)c.lets);
    json_str(f, text ? text : "", text ? len : 0);
    fputs("}\n", f);
    free(text);
}
