/*
 * The key of a source graph (driver/program.c's program memory): a byte string that
 * two source graphs share exactly when they are the same graph up to the
 * identity of their nodes, their variables and their arrays, so that a
 * program compiled from one is a compilation of the other once the other's
 * arrays take the first one's places.
 *
 * The graph is written in one depth-first walk from the root, operands in
 * order (a lambda's parameters before its body).  A node reached for the
 * first time gets the next number and is written in full: its operation,
 * operand count, immediate (component, primitive, an epilogue's mark),
 * type (structurally), and what its operation carries (a constant's bits,
 * a stencil's, a slice's or a loop's description); a node reached again is written as a reference to
 * its number, so the key holds the graph's sharing exactly (sharing
 * recovery's result depends on it: paper s.3, the stable names).
 * Variables are written by their first-appearance number, not their id
 * (ids differ from one build to the next); arrays (USE) likewise, with
 * their element type, rank and parameter index: the optimiser tells
 * arrays apart only by identity (array CSE, fusion and the planner compare
 * USE nodes by their array) and never reads their shape or contents, so
 * what it made of one graph is right for every graph with the same key.
 * Everything that is read from a source node is written, or the node
 * refuses the key (a node or array of another context: the ordinary
 * compile then reports it).
 *
 * The walk keeps its own stack (no recursion); a node reached again is
 * recognised by its number (Node.num, checked against the list of nodes
 * by number, so a stale number from another pass is harmless), without a
 * hash lookup.  It also finds the graph's depth (as ir_depth, counting a
 * lambda's parameters as operands), which the driver sizes the compile's
 * stack by: a second walk with a hash table per node cost Mandelbrot's
 * compile from the disk cache a quarter of its time.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "hash.h"
#include "bytes.h"
#include "frontend/frontend.h"
#include "runtime/array.h"
#include <stdlib.h>
#include <string.h>

/* Tags of the byte string (the first byte of each item). */
typedef struct KeyScratch KeyScratch;

enum { T_NODE = 0xA1, T_REF = 0xA2, T_NULL = 0xA3, T_ARR = 0xA4, T_AREF = 0xA5 };

typedef struct W {
    SrcKey *k;
    Bytes out;                /* the key's bytes (numbers: bytes.h, a third of
                                 fixed-width for Mandelbrot) */
    /* Nodes by number: node x has number x->num when seen[x->num] == x
     * (Node.num is scratch; a stale value fails that test), so a revisit
     * costs no hash lookup. */
    const Node **seen;
    int nseen, capseen;
    HMap ids, arrs;           /* variable id -> number, array -> number */
    int nids;
    bool oom;
} W;

static void put(W *w, const void *p, size_t n) { bytes_put(&w->out, p, n); }
static void put8(W *w, unsigned v) { bytes_put8(&w->out, v); }
static void put32(W *w, int64_t v) { bytes_putv(&w->out, v); }

static void put_type_full(W *w, const Type *t);

/* Most types written are scalars: their two bytes inline, the rest out of
 * line (the call was a tenth of a key's time). */
static inline void put_type(W *w, const Type *t)
{
    if (t && t->kind == TY_SCALAR) {
        put8(w, (unsigned)TY_SCALAR);
        put8(w, (unsigned)t->s);
    } else {
        put_type_full(w, t);
    }
}

static void put_type_full(W *w, const Type *t)
{
    if (!t) {
        put8(w, 0xFF);
        return;
    }
    put8(w, (unsigned)t->kind);
    switch (t->kind) {
    case TY_SCALAR: put8(w, (unsigned)t->s); break;
    case TY_INDEX: put32(w, t->n); break;
    case TY_ARRAY: put_type(w, t->elt); put32(w, t->rank); break;
    case TY_TUPLE: case TY_ARRAYS:
        put32(w, t->n);
        for (int i = 0; i < t->n; i++) put_type(w, t->elts[i]);
        break;
    }
}

/* The number of a variable id (first appearance first). */
static void put_id(W *w, int id)
{
    bool added;
    int64_t *v = hmap_insert(&w->ids, (uint64_t)(uint32_t)id, w->nids, &added);
    if (!v) {
        w->oom = true;
        return;
    }
    if (added) w->nids++;
    put32(w, *v);
}

/* An array: its number, and the first time its type and parameter. */
static int put_array(W *w, ax_array *a)
{
    bool added;
    SrcKey *k = w->k;
    int64_t *v = hmap_insert(&w->arrs, hmap_ptr(a), k->narrays, &added);
    if (!v) return w->oom = true, -1;
    if (!added) {
        put8(w, T_AREF);
        put32(w, *v);
        return 0;
    }
    if (k->narrays == k->caparrays) {
        int cap = k->caparrays ? 2 * k->caparrays : 8;
        ax_array **b = ax__realloc(k->arrays, sizeof *b * (size_t)cap);
        if (!b) return w->oom = true, -1;
        k->arrays = b;
        k->caparrays = cap;
    }
    k->arrays[k->narrays++] = a;
    put8(w, T_ARR);
    put_type(w, a->elt);
    put32(w, a->rank);
    put32(w, a->param);
    return 0;
}

/* Writes node x (first visit); false when x refuses the key. */
static bool put_node(W *w, ax_ctx *cx, const Node *x)
{
    if (x->cx != cx) return false;
    put8(w, T_NODE);
    put8(w, (unsigned)x->op);
    put32(w, x->n);
    put32(w, x->a);
    put32(w, x->op == OP_LAM ? x->nparam : 0);
    put_type(w, x->type);
    switch (x->op) {
    case OP_VAR: case OP_AVAR: case OP_LET: case OP_ALET: put_id(w, x->id); break;
    case OP_CONST: {
        /* the constant as it computes: normalised to its type, its bits */
        if (!x->type || x->type->kind != TY_SCALAR) return false;
        ax_scalar sc = x->type->s;
        Scalar v = sc_norm(x->c, sc);
        uint64_t b = 0;
        if (sc == AX_F32) memcpy(&b, &v.f32, 4);
        else if (sc == AX_BOOL) b = !sc_eq_bits(AX_BOOL, v, (Scalar){.u = 0});
        else b = v.u;
        put(w, &b, 8);
        break;
    }
    case OP_USE:
        if (!x->arr || x->arr->cx != cx) return false;
        if (put_array(w, x->arr)) return false;
        break;
    case OP_STENCIL: case OP_STENCIL2: {
        const Stencil *s = x->sten;
        if (!s) return false;
        put32(w, s->rank);
        put32(w, s->ninputs);
        for (int i = 0; i < 2; i++) {
            for (int d = 0; d < AX_MAX_RANK; d++) put32(w, s->size[i][d]);
            put32(w, (int)s->bound[i]);
            put32(w, s->constkid[i]);
        }
        put32(w, s->ix);
        break;
    }
    case OP_REPLICATE: case OP_SLICE: {
        const Slice *s = x->slice;
        if (!s) return false;
        put32(w, s->n);
        for (int d = 0; d < AX_MAX_RANK; d++) put8(w, s->fixed[d]);
        break;
    }
    case OP_LOOP: {
        /* made by the planner, not by a builder; written in full all the
         * same, so that no graph holding one is keyed short */
        const Loop *l = x->loop;
        if (!l) return false;
        put32(w, l->ngen);
        for (int g = 0; g < l->ngen; g++) {
            const LoopGen *gn = &l->gen[g];
            put32(w, (int)gn->kind);
            put32(w, gn->comp);
            put32(w, gn->pred);
            put32(w, gn->op);
            put32(w, gn->z);
        }
        break;
    }
    default: break;
    }
    return true;
}

/* The walk's frames: a node and the operand to visit next (a lambda's
 * parameters first), and the deepest operand so far. */
typedef struct Frame {
    const Node *x;
    int next;
    int64_t deepest;
} Frame;

/* Visits x below frame *f: writes it (in full the first time, pushing a
 * frame for its operands) or its reference; false when it refuses. */
static bool visit(W *w, ax_ctx *cx, const Node *x, Frame **st, size_t *sp, size_t *cap, int64_t **depth)
{
    Frame *f = *sp ? &(*st)[*sp - 1] : NULL;
    if (!x) {
        put8(w, T_NULL);
        return true;
    }
    if (x->num >= 0 && x->num < w->nseen && w->seen[x->num] == x) {
        put8(w, T_REF);
        put32(w, x->num);
        if (f && (*depth)[x->num] > f->deepest) f->deepest = (*depth)[x->num];
        return true;
    }
    if (w->nseen == w->capseen) {
        int c2 = w->capseen ? 2 * w->capseen : 256;
        const Node **s2 = ax__realloc(w->seen, sizeof *s2 * (size_t)c2);
        int64_t *d2 = s2 ? ax__realloc(*depth, sizeof *d2 * (size_t)c2) : NULL;
        if (s2) w->seen = s2;
        if (!d2) return w->oom = true, true;
        *depth = d2;
        w->capseen = c2;
    }
    (*depth)[w->nseen] = 0;
    w->seen[w->nseen] = x;
    ((Node *)x)->num = w->nseen++;
    if (!put_node(w, cx, x)) return false;
    if (*sp == *cap) {
        size_t c2 = *cap ? 2 * *cap : 256;
        Frame *s2 = ax__realloc(*st, sizeof *s2 * c2);
        if (!s2) return w->oom = true, true;
        *st = s2;
        *cap = c2;
    }
    (*st)[(*sp)++] = (Frame){x, 0, 0};
    return true;
}

/* What a walk needs, kept in the context from one key to the next: a
 * program rebuilt in a loop is keyed each time, and growing these tables
 * afresh (realloc, and the kernel's page faults on the new memory) was a
 * third of Mandelbrot's memory hit.  The byte buffer goes to the key and
 * comes back when the key is freed (src_key_free); a key that is kept
 * (driver/program.c's program memory) takes it for good. */
enum { KEEP_MAX = 1 << 16 };   /* nodes (and key bytes / 16) kept, at most */
struct KeyScratch {
    const Node **seen;
    int64_t *depth;
    int capseen;
    Frame *st;
    size_t capst;
    HMap ids, arrs;
    unsigned char *out;
    size_t outcap;
    size_t hint;              /* the last key's length (0: too long to
                                 allocate ahead) */
};

/* Empties a kept map for the next key: emptying costs its capacity, so
 * one that a big graph grew and this key hardly used is freed instead. */
static void map_empty(HMap *m)
{
    if (m->cap > 1024 && m->len * 8 < m->cap) {
        hmap_free(m);
        hmap_init(m);
    } else {
        hmap_clear(m);
    }
}

int src_key(ax_ctx *cx, const Node *root, SrcKey *k)
{
    memset(k, 0, sizeof *k);
    KeyScratch *ks = cx->keyscratch;
    if (!ks) {
        if (!(ks = ax__calloc(1, sizeof *ks))) return -1;
        hmap_init(&ks->ids);
        hmap_init(&ks->arrs);
        cx->keyscratch = ks;
    }
    W w = {.k = k, .seen = ks->seen, .capseen = ks->capseen, .ids = ks->ids, .arrs = ks->arrs};
    if (ks->out) {
        w.out.b = ks->out;
        w.out.cap = ks->outcap;
        ks->out = NULL;
    } else if (ks->hint && (w.out.b = ax__malloc(ks->hint + 64))) {
        w.out.cap = ks->hint + 64;   /* the same graph again fits without a realloc */
    }
    Frame *st = ks->st;
    int64_t *depth = ks->depth;   /* per node number: its depth (a leaf is 1) */
    size_t sp = 0, cap = ks->capst;
    int rc = 0;
    if (!visit(&w, cx, root, &st, &sp, &cap, &depth)) rc = 1;
    while (!rc && sp > 0 && !w.oom) {
        Frame *f = &st[sp - 1];
        const Node *x = f->x;
        int np = x->op == OP_LAM ? x->nparam : 0;
        if (f->next < np + x->n) {
            int j = f->next++;
            const Node *y = j < np ? (x->param ? x->param[j] : NULL) : (x->kid ? x->kid[j - np] : NULL);
            if (!visit(&w, cx, y, &st, &sp, &cap, &depth)) rc = 1;
            continue;
        }
        int64_t d = f->deepest + 1;
        depth[x->num] = d;
        if (--sp > 0 && d > st[sp - 1].deepest) st[sp - 1].deepest = d;
        if (sp == 0) k->depth = d;
    }
    /* the tables stay for the next key (visit's reallocs keep them valid) */
    ks->st = st;
    ks->capst = cap;
    ks->depth = depth;
    ks->seen = w.seen;
    ks->capseen = w.capseen;
    ks->ids = w.ids;
    ks->arrs = w.arrs;
    map_empty(&ks->ids);
    map_empty(&ks->arrs);
    if (ks->capseen > KEEP_MAX) {
        free(ks->seen);
        free(ks->depth);
        ks->seen = NULL, ks->depth = NULL, ks->capseen = 0;
    }
    if (ks->capst > KEEP_MAX) {
        free(ks->st);
        ks->st = NULL, ks->capst = 0;
    }
    if (w.oom || w.out.bad) rc = -1;
    k->bytes = w.out.b;
    k->len = w.out.len;
    k->cap = w.out.cap;
    if (rc) {
        src_key_free(cx, k);
        return rc;
    }
    ks->hint = k->len <= 16 * (size_t)KEEP_MAX ? k->len : 0;
    k->hash = hash_bytes(k->bytes, k->len);
    return 0;
}

void src_key_free(ax_ctx *cx, SrcKey *k)
{
    KeyScratch *ks = cx ? cx->keyscratch : NULL;
    if (ks && !ks->out && k->bytes && k->cap <= 16 * (size_t)KEEP_MAX) {
        ks->out = k->bytes;
        ks->outcap = k->cap;
        k->bytes = NULL;
    }
    free(k->bytes);
    free(k->arrays);
    memset(k, 0, sizeof *k);
}

void src_key_scratch_free(ax_ctx *cx)
{
    KeyScratch *ks = cx->keyscratch;
    if (!ks) return;
    free(ks->seen);
    free(ks->depth);
    free(ks->st);
    hmap_free(&ks->ids);
    hmap_free(&ks->arrs);
    free(ks->out);
    free(ks);
    cx->keyscratch = NULL;
}
