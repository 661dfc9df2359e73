/*
 * IR node helpers shared by every pass.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <string.h>

static const char *const op_names[OP_NOPS] = {
    [OP_CONST] = "const", [OP_VAR] = "var", [OP_LET] = "let", [OP_TUPLE] = "tuple",
    [OP_PROJ] = "proj", [OP_PRIM] = "prim", [OP_COND] = "cond", [OP_WHILE] = "while",
    [OP_INDEX] = "index", [OP_LINDEX] = "linearIndex", [OP_SHAPE] = "shape",
    [OP_IXCONS] = "ix", [OP_IXGET] = "ixget", [OP_LAM] = "lam",
    [OP_AVAR] = "avar", [OP_ALET] = "alet", [OP_USE] = "use", [OP_UNIT] = "unit",
    [OP_GENERATE] = "generate", [OP_MAP] = "map", [OP_ZIPWITH] = "zipWith",
    [OP_BACKPERMUTE] = "backpermute", [OP_PERMUTE] = "permute",
    [OP_REPLICATE] = "replicate", [OP_SLICE] = "slice", [OP_RESHAPE] = "reshape",
    [OP_FOLD] = "fold", [OP_FOLD1] = "fold1", [OP_FOLDSEG] = "foldSeg",
    [OP_FOLD1SEG] = "fold1Seg", [OP_SCANL] = "scanl", [OP_SCANL1] = "scanl1",
    [OP_SCANR] = "scanr", [OP_SCANR1] = "scanr1", [OP_SCANLEX] = "scanl'",
    [OP_SCANREX] = "scanr'", [OP_FILTER] = "filter", [OP_STENCIL] = "stencil",
    [OP_STENCIL2] = "stencil2", [OP_ACOND] = "acond", [OP_AWHILE] = "awhile",
    [OP_ATUPLE] = "atuple", [OP_APROJ] = "aproj", [OP_TRANSFORM] = "transform",
    [OP_DELAYED] = "delayed", [OP_LOOP] = "loop", [OP_COMPUTE] = "compute",
    [OP_SORT] = "sort",
};

const char *op_name(Op op) { return op < OP_NOPS && op_names[op] ? op_names[op] : "?"; }

bool op_is_array(Op op) { return op >= OP_AVAR && op < OP_NOPS; }

Node *node_new(Arena *a, Op op, int n, const Type *type)
{
    Node *x = arena_alloc(a, sizeof *x);
    if (!x) return NULL;
    if (n > 0 && !(x->kid = arena_alloc(a, sizeof(Node *) * (size_t)n))) return NULL;
    x->op = op;
    x->n = n;
    x->type = type;
    return x;
}

Node *node_clone(Arena *a, const Node *x)
{
    Node *y = arena_alloc(a, sizeof *y);
    if (!y) return NULL;
    *y = *x;
    if (x->n > 0) {
        if (!(y->kid = arena_alloc(a, sizeof(Node *) * (size_t)x->n))) return NULL;
        memcpy(y->kid, x->kid, sizeof(Node *) * (size_t)x->n);
    }
    return y;
}

/* Tree counts (core IR is a tree; on a DAG these count paths).  A let's
 * body is walked in a loop, not by recursion: programs with a long row of
 * bindings at one place would otherwise exhaust the stack. */
int64_t ir_count_nodes(const Node *x)
{
    int64_t c = 0;
    while (x) {
        c += 1;
        if (x->op == OP_LAM) c += x->nparam;
        bool let = (x->op == OP_LET || x->op == OP_ALET) && x->n == 2;
        for (int i = 0; i < x->n - (let ? 1 : 0); i++) c += ir_count_nodes(x->kid[i]);
        x = let ? x->kid[1] : NULL;
    }
    return c;
}

int64_t ir_count_lets(const Node *x)
{
    int64_t c = 0;
    while (x) {
        bool let = (x->op == OP_LET || x->op == OP_ALET) && x->n == 2;
        c += let;
        for (int i = 0; i < x->n - (let ? 1 : 0); i++) c += ir_count_lets(x->kid[i]);
        x = let ? x->kid[1] : NULL;
    }
    return c;
}

/* A program's nodes and tables live in its arena: freeing it frees them
 * all at once (every layer that makes or loads a program frees it so). */
void program_free(Program *p)
{
    if (!p) return;
    arena_free(&p->arena);
    free(p);
}

int program_fresh_var(Program *p, const Type *t)
{
    int cap = p->capvars > p->nvars ? p->capvars : p->nvars;
    if (p->nvars == cap) {
        int ncap = cap * 2 + 16;
        const Type **vt = arena_alloc(&p->arena, sizeof *vt * (size_t)ncap);
        if (!vt) return -1;
        for (int i = 0; i < p->nvars; i++) vt[i] = p->vartype[i];
        p->vartype = vt;
        p->capvars = ncap;
    }
    p->vartype[p->nvars] = t;
    return p->nvars++;
}

const Type *loop_comp_type(const Node *x, int comp)
{
    const Type *e = x->kid[0]->type->elt;
    if (comp < 0) return e;
    return e->kind == TY_TUPLE && comp < e->n ? e->elts[comp] : NULL;
}

const Node *ir_epilogue(const Node *x)
{
    if (!x || x->op != OP_MAP || x->n != 2 || x->a != MAP_EPILOGUE) return NULL;
    const Node *c = x->kid[1];
    switch (c->op) {
    case OP_FOLD: case OP_FOLD1: case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_FILTER:
        return c;
    default:
        return NULL;
    }
}

const Node *ir_selection(const Node *f, bool *keep_then)
{
    if (!f || f->op != OP_LAM || f->nparam != 2 || f->n < 1 || f->kid[0]->op != OP_COND) return NULL;
    const Node *c = f->kid[0], *t = c->kid[1], *e = c->kid[2];
    int a = f->param[0]->id, b = f->param[1]->id;
    if (t->op != OP_VAR || e->op != OP_VAR) return NULL;
    bool keep = t->id == a && e->id == b;
    if (!keep && !(t->id == b && e->id == a)) return NULL;
    if (keep_then) *keep_then = keep;
    return c->kid[0];
}

/* The boundary rules of stencils (ax_boundary_kind): their meaning, which
 * every executor follows (the interpreter, and libaxle_mpi's halos). */
int64_t ir_boundary(ax_boundary_kind b, int64_t c, int64_t n)
{
    if (c >= 0 && c < n) return c;
    switch (b) {
    case AX_CLAMP:
        return c < 0 ? 0 : n - 1;
    case AX_MIRROR: {
        /* Reflection about the edge elements without repeating them has
         * period 2(n-1): 0 1 .. n-1 n-2 .. 1 | 0 1 ...  Any distance works,
         * however far beyond the edge a wide stencil reaches. */
        if (n == 1) return 0;
        int64_t per = 2 * (n - 1), k = c % per;
        if (k < 0) k += per;
        return k < n ? k : per - k;
    }
    case AX_WRAP: {
        int64_t k = c % n;
        return k < 0 ? k + n : k;
    }
    default:
        return -1;
    }
}
