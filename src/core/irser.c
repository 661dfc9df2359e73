/*
 * A core program as bytes and back (the CPU backend's program entries in
 * the disk cache: backend/cpu/stored.c).  Every field of every node is
 * written, in preorder, a lambda's parameters after its operands; types
 * are written structurally; a USE node's array as its number in a list
 * the caller gives (the arrays of the program's source key, srckey.c), so
 * that the program read back reads the arrays of the graph it is read for.
 *
 * A planner's loop (OP_LOOP) carries its generators (kind, component,
 * predicate, operator and initial value); an epilogue map is told by its
 * immediate (Node.a, MAP_EPILOGUE) like every node's.
 *
 * Reading trusts nothing: every count, operation, type and number is
 * checked against its range, and the caller runs the verifier on the
 * result (types and scoping), so malformed bytes give NULL, never a
 * program that is not one.  Both walks recurse along the program's
 * nesting, on the stack the driver sizes for the program (driver/stack.c
 * run_deep), with the codegen's limit of twice AX_DEPTH_LIMIT.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "hash.h"
#include "bytes.h"
#include <stdlib.h>
#include <string.h>

#define MAGIC "axle-ir-2\n"
enum { T_NODE = 0xB1, T_NULL = 0xB2, MAX_KIDS = 1 << 20, MAX_LEVEL = 2 * AX_DEPTH_LIMIT };

typedef struct Out {
    Bytes w;
    HMap arrs;                /* array -> its number */
} Out;

static void put(Out *o, const void *p, size_t n) { bytes_put(&o->w, p, n); }
static void put8(Out *o, unsigned v) { bytes_put8(&o->w, v); }
static void putv(Out *o, int64_t v) { bytes_putv(&o->w, v); }

static void put_type(Out *o, const Type *t, int level)
{
    if (!t || level > 64) {
        o->w.bad = !t ? o->w.bad : true;
        put8(o, 0xFF);
        return;
    }
    put8(o, (unsigned)t->kind);
    switch (t->kind) {
    case TY_SCALAR: put8(o, (unsigned)t->s); break;
    case TY_INDEX: putv(o, t->n); break;
    case TY_ARRAY: put_type(o, t->elt, level + 1); putv(o, t->rank); break;
    case TY_TUPLE: case TY_ARRAYS:
        putv(o, t->n);
        for (int i = 0; i < t->n; i++) put_type(o, t->elts[i], level + 1);
        break;
    }
}

static void put_node(Out *o, const Node *x, int level)
{
    for (; !o->w.bad; level++) {
        if (!x) {
            put8(o, T_NULL);
            return;
        }
        if (level > MAX_LEVEL) {
            o->w.bad = true;
            return;
        }
        put8(o, T_NODE);
        put8(o, (unsigned)x->op);
        putv(o, x->n);
        putv(o, x->a);
        putv(o, x->id);
        putv(o, x->op == OP_LAM ? x->nparam : 0);
        put_type(o, x->type, 0);
        switch (x->op) {
        case OP_CONST: put(o, &x->c, sizeof x->c); break;
        case OP_USE: {
            int64_t *v = x->arr ? hmap_find(&o->arrs, hmap_ptr(x->arr)) : NULL;
            if (!v) o->w.bad = true;
            else putv(o, *v);
            break;
        }
        case OP_STENCIL: case OP_STENCIL2: {
            const Stencil *s = x->sten;
            if (!s) {
                o->w.bad = true;
                break;
            }
            putv(o, s->rank);
            putv(o, s->ninputs);
            for (int i = 0; i < 2; i++) {
                for (int d = 0; d < AX_MAX_RANK; d++) putv(o, s->size[i][d]);
                putv(o, (int)s->bound[i]);
                putv(o, s->constkid[i]);
            }
            putv(o, s->ix);
            break;
        }
        case OP_REPLICATE: case OP_SLICE: {
            const Slice *s = x->slice;
            if (!s) {
                o->w.bad = true;
                break;
            }
            putv(o, s->n);
            for (int d = 0; d < AX_MAX_RANK; d++) put8(o, s->fixed[d]);
            break;
        }
        case OP_LOOP: {
            const Loop *l = x->loop;
            if (!l) {
                o->w.bad = true;
                break;
            }
            putv(o, l->ngen);
            for (int g = 0; g < l->ngen; g++) {
                const LoopGen *gn = &l->gen[g];
                putv(o, (int)gn->kind);
                putv(o, gn->comp);
                putv(o, gn->pred);
                putv(o, gn->op);
                putv(o, gn->z);
            }
            break;
        }
        default: break;
        }
        if (x->op == OP_LAM)
            for (int i = 0; i < x->nparam; i++) put_node(o, x->param ? x->param[i] : NULL, level + 1);
        /* the last operand in the loop: a chain of lets (or any last
         * operand) costs no C stack */
        if (x->n == 0) return;
        for (int i = 0; i + 1 < x->n; i++) put_node(o, x->kid[i], level + 1);
        x = x->kid[x->n - 1];
    }
}

unsigned char *ir_save(const Program *p, ax_array *const *arrays, int narrays, size_t *n)
{
    Out o = {0};
    hmap_init(&o.arrs);
    for (int i = 0; i < narrays && !o.w.bad; i++)
        if (!hmap_insert(&o.arrs, hmap_ptr(arrays[i]), i, NULL)) o.w.bad = true;
    put(&o, MAGIC, sizeof MAGIC - 1);
    putv(&o, p->nvars);
    for (int v = 0; v < p->nvars; v++) put_type(&o, p->vartype ? p->vartype[v] : NULL, 0);
    put_node(&o, p->root, 0);
    hmap_free(&o.arrs);
    if (o.w.bad) {
        free(o.w.b);
        return NULL;
    }
    *n = o.w.len;
    return o.w.b;
}

/* ------------------------------------------------------------ reading */

typedef struct In {
    Bytes r;
    Program *p;
    ax_ctx *cx;
    ax_array *const *arrays;
    int narrays;
    int64_t deepest;          /* the deepest level read + 1: the depth */
} In;

static unsigned get8(In *in) { return bytes_get8(&in->r); }
/* A number in [lo, hi]; else the input is bad. */
static int64_t getv(In *in, int64_t lo, int64_t hi) { return bytes_getv(&in->r, lo, hi); }

static const Type *get_type(In *in, int level)
{
    unsigned k = get8(in);
    if (in->r.bad || level > 64) return in->r.bad = true, NULL;
    Arena *a = &in->p->arena;
    switch (k) {
    case TY_SCALAR: {
        unsigned s = get8(in);
        return s < AX_NSCALAR ? ty_scalar((ax_scalar)s) : (in->r.bad = true, NULL);
    }
    case TY_INDEX: return ty_index(a, (int)getv(in, 0, AX_MAX_RANK));
    case TY_ARRAY: {
        const Type *e = get_type(in, level + 1);
        int r = (int)getv(in, 0, AX_MAX_RANK);
        return in->r.bad ? NULL : ty_array(a, e, r);
    }
    case TY_TUPLE: case TY_ARRAYS: {
        int n = (int)getv(in, 0, 4096);
        if (in->r.bad) return NULL;
        const Type *e[64];
        const Type **el = n <= 64 ? e : ax__malloc(sizeof *el * (size_t)n);
        if (!el) return in->r.bad = true, NULL;
        for (int i = 0; i < n && !in->r.bad; i++) el[i] = get_type(in, level + 1);
        const Type *t = in->r.bad ? NULL : k == TY_TUPLE ? ty_tuple(a, n, el) : ty_arrays(a, n, el);
        if (el != e) free(el);
        return t;
    }
    default: return in->r.bad = true, NULL;
    }
}

static Node *get_node(In *in, int level);

/* The node whose T_NODE tag was just read. */
static Node *get_body(In *in, int level)
{
    Op op = (Op)get8(in);
    int n = (int)getv(in, 0, MAX_KIDS);
    if (in->r.bad || (unsigned)op >= OP_NOPS || level > MAX_LEVEL) return in->r.bad = true, NULL;
    if (level + 1 > in->deepest) in->deepest = level + 1;
    int a = (int)getv(in, INT32_MIN, INT32_MAX), id = (int)getv(in, -1, INT32_MAX);
    int nparam = (int)getv(in, 0, op == OP_LAM ? MAX_KIDS : 0);
    const Type *t = get_type(in, 0);
    if (in->r.bad) return NULL;
    Node *x = node_new(&in->p->arena, op, n, t);
    if (!x) return in->r.bad = true, NULL;
    x->cx = in->cx;
    x->a = a;
    x->id = id;
    switch (op) {
    case OP_CONST: {
        const unsigned char *c = bytes_get(&in->r, sizeof x->c);
        if (!c) return NULL;
        memcpy(&x->c, c, sizeof x->c);
        break;
    }
    case OP_USE: {
        int64_t k = getv(in, 0, (int64_t)in->narrays - 1);
        if (in->r.bad) return NULL;
        x->arr = in->arrays[k];
        break;
    }
    case OP_STENCIL: case OP_STENCIL2: {
        Stencil *s = arena_alloc(&in->p->arena, sizeof *s);
        if (!s) return in->r.bad = true, NULL;
        s->rank = (int)getv(in, 0, AX_MAX_RANK);
        s->ninputs = (int)getv(in, 1, 2);
        for (int i = 0; i < 2; i++) {
            for (int d = 0; d < AX_MAX_RANK; d++) s->size[i][d] = (int)getv(in, 0, INT32_MAX);
            s->bound[i] = (ax_boundary_kind)getv(in, 0, 16);
            s->constkid[i] = (int)getv(in, -1, MAX_KIDS);
        }
        s->ix = getv(in, 0, 1) != 0;
        x->sten = s;
        break;
    }
    case OP_REPLICATE: case OP_SLICE: {
        Slice *s = arena_alloc(&in->p->arena, sizeof *s);
        if (!s) return in->r.bad = true, NULL;
        s->n = (int)getv(in, 0, AX_MAX_RANK);
        for (int d = 0; d < AX_MAX_RANK; d++) s->fixed[d] = (unsigned char)get8(in);
        x->slice = s;
        break;
    }
    case OP_LOOP: {
        /* the generators' numbers in range here; what they name (their
         * components' types, the operands) is the verifier's */
        int ng = (int)getv(in, 1, MAX_KIDS);
        if (in->r.bad) return NULL;
        if ((size_t)ng > in->r.len - in->r.at) return in->r.bad = true, NULL;   /* a byte each at least */
        Loop *l = arena_alloc(&in->p->arena, sizeof *l + sizeof *l->gen * (size_t)ng);
        if (!l) return in->r.bad = true, NULL;
        l->ngen = ng;
        for (int g = 0; g < ng && !in->r.bad; g++) {
            LoopGen *gn = &l->gen[g];
            gn->kind = (LoopKind)getv(in, LOOP_COLLECT, LOOP_REDUCE);
            gn->comp = (int)getv(in, -1, MAX_KIDS);
            gn->pred = (int)getv(in, -1, MAX_KIDS);
            gn->op = (int)getv(in, -1, n - 1);
            gn->z = (int)getv(in, -1, n - 1);
        }
        x->loop = l;
        break;
    }
    default: break;
    }
    if (op == OP_LAM) {
        x->nparam = nparam;
        if (nparam && !(x->param = arena_alloc(&in->p->arena, sizeof *x->param * (size_t)nparam)))
            return in->r.bad = true, NULL;
        for (int i = 0; i < nparam && !in->r.bad; i++) x->param[i] = get_node(in, level + 1);
    }
    return x;
}

static Node *get_node(In *in, int level)
{
    unsigned tag = get8(in);
    if (tag == T_NULL || in->r.bad) return NULL;
    if (tag != T_NODE) return in->r.bad = true, NULL;
    Node *root = get_body(in, level);
    /* operands; the last one in the loop (as put_node wrote them) */
    for (Node *x = root; x && !in->r.bad && x->n > 0; level++) {
        for (int i = 0; i + 1 < x->n && !in->r.bad; i++) x->kid[i] = get_node(in, level + 1);
        tag = get8(in);
        if (in->r.bad || tag == T_NULL) break;
        if (tag != T_NODE) return in->r.bad = true, NULL;
        Node *last = get_body(in, level + 1);
        x->kid[x->n - 1] = last;
        x = last;
    }
    return root;
}

Program *ir_load(ax_ctx *cx, const unsigned char *b, size_t n, ax_array *const *arrays, int narrays, int64_t *depth)
{
    if (n < sizeof MAGIC - 1 || memcmp(b, MAGIC, sizeof MAGIC - 1)) return NULL;
    Program *p = ax__calloc(1, sizeof *p);
    if (!p) return NULL;
    arena_init(&p->arena);
    In in = {.r = bytes_reader(b, n), .p = p, .cx = cx, .arrays = arrays, .narrays = narrays};
    in.r.at = sizeof MAGIC - 1;
    p->nvars = (int)getv(&in, 0, INT32_MAX / 2);
    if (!in.r.bad && p->nvars > 0) {
        if ((size_t)p->nvars > n) in.r.bad = true;   /* a type takes a byte at least */
        else if (!(p->vartype = arena_alloc(&p->arena, sizeof *p->vartype * (size_t)p->nvars))) in.r.bad = true;
        for (int v = 0; v < p->nvars && !in.r.bad; v++) p->vartype[v] = get_type(&in, 0);
    }
    if (!in.r.bad) p->root = get_node(&in, 0);
    if (in.r.bad || !p->root || in.r.at != n) {
        program_free(p);
        return NULL;
    }
    if (depth) *depth = in.deepest;
    return p;
}
