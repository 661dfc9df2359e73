/*
 * The kernel description of a fused program (cgen.h): every array
 * operation numbered in preorder (Node.num), and for each the CgNode the
 * generators and the executors share: its argument slots (outputs,
 * operands, the free arrays its scalar code reads), its thunks (the
 * scalar parameters evaluated on the host: shapes, fold's z, boundary
 * constants, slice indices, acond's condition) and their parameter
 * leaves.  The CPU's C (cpu/codegen.c) and the GPU kernel text
 * (gpu/codegen.c) are both generated from it, and the executors lay out
 * their arguments by it, so the two sides cannot drift apart.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cgen.h"
#include <stdlib.h>
#include <string.h>

const char *const cg_role_name[R_NROLE] = {
    [R_MAIN] = "main", [R_LIN] = "lin", [R_PART] = "part", [R_COMB] = "comb",
    [R_CARRY] = "carry", [R_SCAN] = "scan", [R_SEG] = "seg", [R_COUNT] = "count",
    [R_SCATTER] = "scatter", [R_DFLT] = "dflt", [R_PERM] = "perm", [R_MAT] = "mat", [R_SCAN1] = "scan1",
    [R_PPRIV] = "ppriv", [R_PMERGE] = "pmerge", [R_GEMM] = "gemm",
};

/* The describer's state. */
typedef struct Desc {
    const Program *p;
    CgProg *out;
    char *err;
    size_t errsize;
    bool failed;
} Desc;

static void cgfail(Desc *c, const char *msg)
{
    if (c->failed) return;
    c->failed = true;
    snprintf(c->err, c->errsize, "%s", msg);
}

/* Kids of an array node that are array computations evaluated as
 * operands (structural nodes evaluate theirs on the host). */
static bool structural(Op op)
{
    switch (op) {
    case OP_AVAR: case OP_ALET: case OP_USE: case OP_ACOND: case OP_AWHILE: case OP_ATUPLE: case OP_APROJ:
    case OP_UNIT: case OP_DELAYED:
        return true;
    default:
        return false;
    }
}

/* Preorder numbers for the array stratum (lambdas of awhile included);
 * an epilogue's consumer (ir_epilogue) shares its map's number. */
static int number(const Node *x, int n, int depth)
{
    while (x && depth < 2 * AX_DEPTH_LIMIT) {
        ((Node *)x)->num = n++;
        const Node *in = ir_epilogue(x);
        if (in) {
            ((Node *)in)->num = x->num;
            x = in;
        }
        if (x->op == OP_ALET && x->n == 2) {
            n = number(x->kid[0], n, depth + 1);
            x = x->kid[1];
            continue;
        }
        for (int k = 0; k < x->n; k++) {
            const Node *y = x->kid[k];
            if (!y) continue;
            if (y->op == OP_LAM) {
                if (y->n > 0 && y->kid[0] && op_is_array(y->kid[0]->op)) n = number(y->kid[0], n, depth + 1);
            } else if (op_is_array(y->op)) {
                n = number(y, n, depth + 1);
            }
        }
        break;
    }
    return n;
}

/* ------------------------------------------------------------ node info */

typedef struct List {
    CgFree *v;
    int n, cap;
} List;

static bool add_free(Desc *c, List *l, const Node *a)
{
    int id, off;
    const Node *use;
    if (!cg_free_ident(a, &id, &off, &use)) {
        cgfail(c, "cpu codegen: scalar code reads an array that is not a variable");
        return false;
    }
    for (int k = 0; k < l->n; k++)
        if (use ? l->v[k].use == use : (!l->v[k].use && l->v[k].id == id && l->v[k].off == off)) return true;
    if (a->type->kind != TY_ARRAY) {
        cgfail(c, "cpu codegen: scalar code reads a tuple of arrays");
        return false;
    }
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        CgFree *v = ax__realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return cgfail(c, "cpu codegen: out of memory"), false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].id = id;
    l->v[l->n].off = off;
    l->v[l->n].use = use;
    l->v[l->n].t = a->type;
    l->n++;
    return true;
}

/* Collects the arrays that scalar code e reads, in preorder. */
static void collect(Desc *c, List *l, const Node *e, int depth)
{
    while (e && !c->failed) {
        if (depth > 2 * AX_DEPTH_LIMIT) return cgfail(c, "cpu codegen: expression too deep");
        if (e->op == OP_INDEX || e->op == OP_LINDEX || e->op == OP_SHAPE) {
            if (!add_free(c, l, e->kid[0])) return;
            for (int k = 1; k < e->n; k++) collect(c, l, e->kid[k], depth + 1);
            return;
        }
        if (op_is_array(e->op)) return;   /* an operand: not scalar code */
        if (e->op == OP_LET && e->n == 2) {
            collect(c, l, e->kid[0], depth + 1);
            e = e->kid[1];
            continue;
        }
        for (int k = 0; k < e->n; k++) collect(c, l, e->kid[k], depth + 1);
        return;
    }
}

static void *alloc(Desc *c, size_t n)
{
    void *p = arena_alloc(&c->out->arena, n ? n : 1);
    if (!p) cgfail(c, "cpu codegen: out of memory");
    return p;
}

/* Fills cn for the array operation x: slots, thunks, free variables (of
 * the epilogue epi's too, when x is one's consumer). */
static void describe(Desc *c, const Node *x, CgNode *cn, const Node *top, const Node *epi)
{
    cn->x = x;
    cn->top = top;
    cn->epi = epi;
    bool has_kernels = !(x->op == OP_AVAR || x->op == OP_ALET || x->op == OP_USE || x->op == OP_AWHILE ||
                         x->op == OP_ATUPLE || x->op == OP_APROJ || x->op == OP_DELAYED || x->op == OP_ACOND);
    cn->nout = x->op == OP_ACOND ? 0 : x->type->kind == TY_ARRAYS ? x->type->n : 1;
    cn->opd_kid = alloc(c, sizeof(int) * (size_t)(x->n + 1));
    cn->kid_thunk = alloc(c, sizeof(int) * (size_t)(x->n + 1));
    cn->opd_thunk = alloc(c, sizeof(int) * (size_t)(x->n + 1));
    cn->thunk = alloc(c, sizeof(Node *) * (size_t)(2 * x->n + 1));
    cn->poff = alloc(c, sizeof(int) * (size_t)(2 * x->n + 1));
    if (c->failed) return;
    List l = {0};
    for (int k = 0; k < x->n; k++) {
        const Node *y = x->kid[k];
        cn->kid_thunk[k] = -1;
        if (!y) continue;
        if (y->op == OP_LAM) {
            if (y->n > 0 && y->kid[0] && !op_is_array(y->kid[0]->op)) collect(c, &l, y->kid[0], 0);
        } else if (op_is_array(y->op)) {
            if (!has_kernels || structural(x->op)) continue;
            int i = cn->nopd++;
            cn->opd_kid[i] = k;
            cn->opd_thunk[i] = -1;
            if (y->op == OP_DELAYED) {
                if (y->n < 3 || !y->kid[0] || y->kid[0]->type->kind != TY_INDEX) {
                    cgfail(c, "cpu codegen: malformed delayed operand");
                    break;
                }
                cn->opd_thunk[i] = cn->nthunk;
                cn->thunk[cn->nthunk++] = y->kid[0];
                for (int j = 0; j < 3; j++)
                    collect(c, &l, y->kid[j]->op == OP_LAM ? y->kid[j]->kid[0] : y->kid[j], 0);
            }
        } else {
            cn->kid_thunk[k] = cn->nthunk;
            cn->thunk[cn->nthunk++] = y;
            collect(c, &l, y, 0);
        }
    }
    if (!has_kernels && x->op != OP_ACOND) cn->nout = 0;
    if (epi) collect(c, &l, epi->kid[0], 0);
    int off = 0;
    for (int t = 0; t < cn->nthunk; t++) {
        cn->poff[t] = off;
        off += cn->thunk[t]->type->width;
    }
    cn->nparam = off;
    cn->nfree = l.n;
    cn->free = alloc(c, sizeof *cn->free * (size_t)(l.n + 1));
    if (cn->free && l.n) memcpy(cn->free, l.v, sizeof *l.v * (size_t)l.n);
    free(l.v);
    cn->nslot = cn->nout + cn->nopd + cn->nfree;
    CgContract con;
    if (x->op == OP_FOLD && !c->failed && cg_contraction(cn, &con)) {
        CgContract *m = alloc(c, sizeof *m);
        if (m) *m = con;
        cn->con = m;
    }
}

/* Does x have code of its own (kernels or thunks)? */
static bool has_code(const Node *x)
{
    return !(x->op == OP_AVAR || x->op == OP_ALET || x->op == OP_USE || x->op == OP_AWHILE ||
             x->op == OP_ATUPLE || x->op == OP_APROJ || x->op == OP_DELAYED);
}

/* Describes every operation, in preorder. */
static void walk(Desc *c, const Node *x, int depth)
{
    while (x && !c->failed) {
        if (depth > 2 * AX_DEPTH_LIMIT) return cgfail(c, "cpu codegen: program too deep");
        if (x->num < 0 || x->num >= c->out->nnodes) return cgfail(c, "cpu codegen: numbering");
        const Node *in = ir_epilogue(x);
        if (in) {
            describe(c, in, &c->out->nodes[x->num], x, x->kid[0]);
            x = in;
        } else if (has_code(x)) {
            describe(c, x, &c->out->nodes[x->num], x, NULL);
        }
        if (x->op == OP_ALET && x->n == 2) {
            walk(c, x->kid[0], depth + 1);
            x = x->kid[1];
            continue;
        }
        for (int k = 0; k < x->n; k++) {
            const Node *y = x->kid[k];
            if (!y) continue;
            if (y->op == OP_LAM) {
                if (y->n > 0 && y->kid[0] && op_is_array(y->kid[0]->op)) walk(c, y->kid[0], depth + 1);
            } else if (op_is_array(y->op) && y->op != OP_DELAYED) {
                walk(c, y, depth + 1);
            }
        }
        break;
    }
}

CgProg *cg_describe(const Program *p, char *err, size_t errsize)
{
    char dummy[8];
    if (!err || !errsize) {
        err = dummy;
        errsize = sizeof dummy;
    }
    err[0] = 0;
    if (!p || !p->root) {
        snprintf(err, errsize, "codegen: no program");
        return NULL;
    }
    CgProg *out = ax__calloc(1, sizeof *out);
    if (!out) {
        snprintf(err, errsize, "codegen: out of memory");
        return NULL;
    }
    arena_init(&out->arena);
    Desc c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.out = out;
    c.err = err;
    c.errsize = errsize;
    out->nvars = p->nvars;
    out->nnodes = number(p->root, 0, 0);
    out->nodes = alloc(&c, sizeof *out->nodes * (size_t)(out->nnodes + 1));
    if (!c.failed) walk(&c, p->root, 0);
    if (c.failed) {
        cg_free(out);
        return NULL;
    }
    return out;
}

void cg_free(CgProg *g)
{
    if (!g) return;
    free(g->text);
    for (int u = 0; u < g->nunits; u++) free(g->units[u].text);
    free(g->units);
    arena_free(&g->arena);
    free(g);
}

int64_t cg_scratch_bytes(const Type *elt, int64_t m)
{
    int64_t b = 0;
    for (int l = 0; l < elt->width; l++) b += ((int64_t)ax_scalar_size(ty_leaf(elt, l)) * m + 63) & ~(int64_t)63;
    return b;
}

/* ------------------------------------------------------------ slots */

/* The free-array identity of a (see CgFree): AVAR id and array offset, or
 * the USE node. */
static int aoff(const Type *t, int i)
{
    int off = 0;
    for (int k = 0; k < i && k < t->n; k++) off += t->elts[k]->kind == TY_ARRAYS ? t->elts[k]->width : 1;
    return off;
}

static bool free_ident(const Node *a, int *id, int *off, const Node **use)
{
    *id = -1;
    *off = 0;
    *use = NULL;
    int o = 0;
    while (a && a->op == OP_APROJ) {
        o += aoff(a->kid[0]->type, a->a);
        a = a->kid[0];
    }
    if (!a) return false;
    if (a->op == OP_USE) {
        *use = a;
        return true;
    }
    if (a->op != OP_AVAR) return false;
    *id = a->id;
    *off = o;
    return true;
}

int cg_free_slot(const CgNode *cn, const Node *a)
{
    int id, off;
    const Node *use;
    if (!cn || !free_ident(a, &id, &off, &use)) return -1;
    for (int k = 0; k < cn->nfree; k++) {
        const CgFree *f = &cn->free[k];
        if (use ? f->use == use : (!f->use && f->id == id && f->off == off)) return cn->nout + cn->nopd + k;
    }
    return -1;
}

bool cg_free_ident(const Node *a, int *id, int *off, const Node **use) { return free_ident(a, id, off, use); }

const Type *cg_slot_type(const CgNode *cn, int s)
{
    const Node *x = cn->x, *t = cn->top ? cn->top : x;
    if (s < cn->nout) {
        if (t->type->kind == TY_ARRAYS) return t->type->elts[s];
        return t->type;
    }
    s -= cn->nout;
    if (s < cn->nopd) return x->kid[cn->opd_kid[s]]->type;
    s -= cn->nopd;
    return cn->free[s].t;
}
