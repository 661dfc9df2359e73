/*
 * Common subexpression elimination (thesis s.3 "Common subexpression
 * elimination"; the Delite section's CSE by hash-consing), run by the
 * simplifier before shrinking (thesis "Ordering": CSE first, so that
 * shrinking does not inline two equal bindings into two equal terms).
 *
 * It works on one scalar context at a time (a function of an array
 * operation, a shape, fold's initial value, ...): code in two contexts
 * runs in different places (two kernels, two lambdas), so nothing can be
 * shared between them.  In a context:
 *
 *  NUMBER  Every node gets a value number by hash-consing: the op, the
 *          type, the immediate (component, primitive, constant bits,
 *          variable id) and the value numbers of its operands.  Two nodes
 *          with one number compute the same value.  A node that binds a
 *          variable (let, the lambdas of while) gets a number of its own,
 *          and so does everything above it: such terms are never merged
 *          (their binders would be duplicated or confused).
 *  PRUNE   A pre-order walk over the tree (paper s.3.2 on the hash-consed
 *          DAG): the first node of a number is its definition, later ones
 *          are occurrences whose inside is not walked again.  Inside the
 *          body of `let x = e`, a node numbered like e is replaced by x
 *          (the thesis' let-based CSE: x is already evaluated there, in a
 *          branch as well).
 *  FLOAT   A number with two or more occurrences is bound by a new let at
 *          the lowest node that dominates all its occurrences (their
 *          lowest common ancestor), once the definitions of the larger
 *          shared terms that contain some of them have been moved to where
 *          those are bound (so a term's dependencies are bound outside
 *          it).  Terms are placed in decreasing height for that reason,
 *          and at one node the lets are ordered by increasing height.
 *          The ancestor lies in the scope of every free variable (each
 *          occurrence does, and scopes are subtrees).
 *  BIND    The tree is rebuilt with the lets; every occurrence becomes the
 *          variable.  A definition that moves may leave the scope of a
 *          let whose variable replaced part of it (let-based CSE), so
 *          inside definitions those replacements are undone.
 *
 * No speculation (sharing.c, docs/ARCHITECTURE.md, "The pipeline").  A term that can fault or
 * loop (opt_op_fallible, transitively) is numbered together with its lazy
 * region (the innermost cond branch, second operand of and/or, or while
 * body containing it): copies in different regions are different terms,
 * so such a term is only ever bound inside its own region, on a path that
 * evaluates it anyway.  Pure terms are shared across regions (that costs
 * at most the work of one copy, never a fault), as sharing recovery does.
 *
 * What is not bound: constants and variables (equal constants need no
 * CSE), and terms whose copies cost nothing: a projection, index
 * component or shape of a variable, a tuple or index of atoms.
 *
 * Cost.  NUMBER, PRUNE and BIND are linear in the context (one hash
 * lookup per node).  FLOAT finds each common ancestor by climbing from two
 * positions at once until the climbs meet, so a query costs the distance
 * from its positions to their ancestor, not the depth of the program
 * (climbing to the root made a chain of 8000 shared terms quadratic).
 * Chains of lets are walked in loops, not by recursion.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opt.h"
#include "hash.h"
#include <stdlib.h>
#include <string.h>

/* A node of the context, by pre-order number. */
typedef struct Pos {
    const Node *node;
    int parent;          /* PRUNE: the parent position, -1 at the root */
    int kbase;           /* its operands' positions: kpos[kbase ..] */
    int vn;              /* value number */
    int height;          /* longest path to a leaf */
    int ent;             /* the shared-term entry it is an occurrence of, or -1 */
    int next;            /* the next occurrence of that entry, or -1 */
    int avail;           /* replaced by this let variable, or -1 */
    int binds;           /* the first entry bound here (a list), or -1 */
    int mark, midx;      /* FLOAT: climb marks (query, side) */
    bool fall;           /* can fault or loop (transitively) */
    bool uniq;           /* binds a variable or contains a binder */
    bool cand;           /* may be bound by CSE */
    bool visited;        /* PRUNE reached it (not inside a later occurrence) */
} Pos;

/* A value number's defining structure (for the structural comparison). */
typedef struct Vn {
    const Node *node;
    int kbase;           /* operand numbers: vkid[kbase ..] */
    int next;            /* the next number with the same hash, or -1 */
} Vn;

/* A term that may be shared: a value number in a lazy region. */
typedef struct Ent {
    int count;           /* occurrences in the pruned tree */
    int def;             /* the first occurrence (its definition) */
    int first, last;     /* the occurrence list, in pre-order */
    int height;
    int var;             /* the bound variable, -1 until bound */
    int bindpos;         /* where it is bound */
    int bind_next;       /* the next entry bound at bindpos */
} Ent;

typedef struct CseState {
    ax_ctx *cx;
    Program *p;
    bool failed;         /* stop: out of memory (an error on cx) or too deep */
    bool deep;           /* gave up on a program nested too deeply */
    Pos *pos;
    int npos, cappos;
    int *kpos;
    int nkpos, capkpos;
    Vn *vn;
    int nvn, capvn;
    int *vkid;
    int nvkid, capvkid;
    HMap vtab;           /* structural hash -> first value number */
    Ent *ent;
    int nent, capent;
    HMap keys;           /* (region, value number) -> entry */
    HMap avail;          /* value number -> let variable in scope, or -1 */
    int64_t *undo;       /* avail's undo log: value number, old value */
    int nundo, capundo;
    int stamp;
    int nbound, navail;  /* what this context gained */
} CseState;

static void *nomem(CseState *c)
{
    if (!c->failed) ctx_error(c->cx, AX_ERR_NOMEM, "simplify (CSE): out of memory");
    c->failed = true;
    return NULL;
}

/* Too deep to walk safely: CSE gives up and leaves the program as it is. */
static void *too_deep(CseState *c)
{
    c->failed = c->deep = true;
    return NULL;
}

/* Makes room for `need` elements in a growable array. */
static bool reserve(CseState *c, void **a, int *cap, int need, size_t elt)
{
    if (need <= *cap) return true;
    int ncap = *cap ? *cap : 64;
    while (ncap < need) ncap *= 2;
    void *t = ax__realloc(*a, elt * (size_t)ncap);
    if (!t) return nomem(c), false;
    *a = t;
    *cap = ncap;
    return true;
}
#define RESERVE(c, arr, cap, need) reserve((c), (void **)&(arr), &(cap), (need), sizeof *(arr))

/* --------------------------------------------------------------- helpers */

bool opt_lazy_operand(const Node *n, int i)
{
    switch (n->op) {
    case OP_COND: return i > 0;
    case OP_PRIM: return (n->a == P_AND || n->a == P_OR) && i == 1;
    case OP_WHILE: return i == 1;
    default: return false;
    }
}

static bool nonzero_const(const Node *k)
{
    if (k->op != OP_CONST || k->type->kind != TY_SCALAR) return false;
    Scalar z;
    z.u = 0;
    return !sc_eq_bits(k->type->s, k->c, z);
}

bool opt_op_fallible(const ax_ctx *cx, const Node *n)
{
    (void)cx;
    switch (n->op) {
    case OP_WHILE: return true;
    /* An array read, in unsafe mode too: there an index out of bounds
     * reads stray memory, so a guarded read must stay behind its guard
     * (sharing recovery is less strict here). */
    case OP_INDEX: case OP_LINDEX: return true;
    case OP_PRIM:
        switch (n->a) {
        case P_SHAPESIZE: case P_RESHAPE: return true;
        case P_DIV: case P_QUOT: case P_REM: case P_IDIV: case P_MOD:
            /* Integer division faults only on a zero divisor; a nonzero
             * constant divisor cannot (INT_MIN / -1 wraps). */
            return ty_is_int(n->type) && !(n->n == 2 && nonzero_const(n->kid[1]));
        default: return false;
        }
    default: return false;
    }
}

static int nkids(const Node *n) { return n->op == OP_LAM ? 1 : n->n; }

/* Copies that cost nothing: never worth a let. */
static bool cheap(const Node *n)
{
    switch (n->op) {
    case OP_PROJ: case OP_IXGET: case OP_SHAPE:
        return opt_is_atom(n->kid[0]);
    case OP_TUPLE: case OP_IXCONS:
        for (int i = 0; i < n->n; i++)
            if (!opt_is_atom(n->kid[i])) return false;
        return true;
    default:
        return false;
    }
}

static uint64_t const_bits(const Node *n)
{
    ax_scalar s = n->type->s;
    Scalar v = sc_norm(n->c, s);
    if (s == AX_F32) {
        uint32_t b;
        memcpy(&b, &v.f32, 4);
        return b;
    }
    if (s == AX_BOOL) return sc_eq_bits(AX_BOOL, v, (Scalar){.u = 0}) ? 0 : 1;
    return v.u;
}

static uint64_t type_hash(const Type *t)
{
    uint64_t h = hash_combine((uint64_t)t->kind, (uint64_t)t->n);
    if (t->kind == TY_SCALAR) h = hash_combine(h, (uint64_t)t->s);
    return h;
}

/* ---------------------------------------------------------------- NUMBER */

static int new_pos(CseState *c, const Node *n)
{
    int k = nkids(n);
    if (!RESERVE(c, c->pos, c->cappos, c->npos + 1) || !RESERVE(c, c->kpos, c->capkpos, c->nkpos + k))
        return -1;
    int me = c->npos++;
    Pos *P = &c->pos[me];
    memset(P, 0, sizeof *P);
    P->node = n;
    P->parent = P->ent = P->next = P->avail = P->binds = -1;
    P->kbase = c->nkpos;
    c->nkpos += k;
    return me;
}

static int kid(const CseState *c, int me, int i) { return c->kpos[c->pos[me].kbase + i]; }

/* A value number for a node of no other (a binder, or above one). */
static int fresh_vn(CseState *c, const Node *n)
{
    if (!RESERVE(c, c->vn, c->capvn, c->nvn + 1)) return -1;
    c->vn[c->nvn] = (Vn){n, 0, -1};
    return c->nvn++;
}

static bool same_vn(const CseState *c, const Vn *v, const Node *n, const int *kv)
{
    const Node *m = v->node;
    if (m->op != n->op || m->n != n->n || m->a != n->a || !ty_eq(m->type, n->type)) return false;
    if ((n->op == OP_VAR || n->op == OP_AVAR) && m->id != n->id) return false;
    if (n->op == OP_CONST && !sc_eq_bits(n->type->s, m->c, n->c)) return false;
    for (int i = 0; i < n->n; i++)
        if (c->vkid[v->kbase + i] != kv[i]) return false;
    return true;
}

/* Hash-consing: the number of the node with this structure. */
static int intern(CseState *c, int me)
{
    const Node *n = c->pos[me].node;
    /* (a leaf has no operands, and the arrays may still be NULL: no
     * pointer arithmetic on them then) */
    const int *kp = n->n ? &c->kpos[c->pos[me].kbase] : NULL;
    if (!RESERVE(c, c->vkid, c->capvkid, c->nvkid + n->n)) return -1;
    int *kv = n->n ? &c->vkid[c->nvkid] : NULL;    /* tentatively, the new number's operands */
    uint64_t h = hash_combine((uint64_t)n->op, (uint64_t)(unsigned)n->a);
    h = hash_combine(h, type_hash(n->type));
    if (n->op == OP_VAR || n->op == OP_AVAR) h = hash_combine(h, (uint64_t)(unsigned)n->id);
    if (n->op == OP_CONST) h = hash_combine(h, const_bits(n));
    for (int i = 0; i < n->n; i++) {
        kv[i] = c->pos[kp[i]].vn;
        h = hash_combine(h, (uint64_t)(unsigned)kv[i]);
    }
    h &= ~(uint64_t)0 >> 1;          /* never HMAP_EMPTY */
    bool added;
    int64_t *head = hmap_insert(&c->vtab, h, -1, &added);
    if (!head) return nomem(c), -1;
    for (int v = (int)*head; v >= 0; v = c->vn[v].next)
        if (same_vn(c, &c->vn[v], n, kv)) return v;
    int64_t old = *head;
    int v = fresh_vn(c, n);
    if (v < 0) return -1;
    c->vn[v].kbase = c->nvkid;
    c->vn[v].next = (int)old;
    c->nvkid += n->n;
    /* (the table has not grown since the insertion above) */
    *hmap_find(&c->vtab, h) = v;
    return v;
}

/* Value number, fallibility, height and status of position me, whose
 * operands are numbered. */
static bool value(CseState *c, int me)
{
    Pos *P = &c->pos[me];
    const Node *n = P->node;
    bool uniq = n->op == OP_LET || n->op == OP_LAM || n->op == OP_WHILE;
    bool fall = opt_op_fallible(c->cx, n);
    int h = 0;
    for (int i = 0; i < nkids(n); i++) {
        const Pos *K = &c->pos[kid(c, me, i)];
        uniq |= K->uniq;
        fall |= K->fall;
        if (K->height > h) h = K->height;
    }
    int v = uniq ? fresh_vn(c, n) : intern(c, me);
    if (v < 0) return false;
    P = &c->pos[me];
    P->vn = v;
    P->uniq = uniq;
    P->fall = fall;
    P->height = h + 1;
    P->cand = !uniq && !opt_is_atom(n) && !cheap(n);
    return true;
}

/* Numbers the tree below n (pre-order positions, numbers bottom-up);
 * returns n's position or -1. */
static int number(CseState *c, const Node *n, int depth)
{
    if (depth > OPT_MAX_DEPTH) return too_deep(c), -1;
    int me = new_pos(c, n);
    if (me < 0) return -1;
    if (n->op == OP_LET) {
        /* A chain of lets, in a loop.  A let is a binder: its number is
         * its own, so it needs nothing from its body. */
        int cur = me;
        for (;;) {
            int b = number(c, n->kid[0], depth + 1);
            if (b < 0) return -1;
            c->kpos[c->pos[cur].kbase] = b;
            Pos *P = &c->pos[cur];
            P->uniq = P->fall = true;
            P->height = c->pos[b].height + 1;
            if ((P->vn = fresh_vn(c, n)) < 0) return -1;
            const Node *body = n->kid[1];
            int nb = body->op == OP_LET ? new_pos(c, body) : number(c, body, depth + 1);
            if (nb < 0) return -1;
            c->kpos[c->pos[cur].kbase + 1] = nb;
            if (body->op != OP_LET) break;
            cur = nb;
            n = body;
        }
        return me;
    }
    for (int i = 0; i < nkids(n); i++) {
        int k = number(c, n->kid[i], depth + 1);
        if (k < 0) return -1;
        c->kpos[c->pos[me].kbase + i] = k;
    }
    return value(c, me) ? me : -1;
}

/* ----------------------------------------------------------------- PRUNE */

static bool avail_push(CseState *c, int vn, int var)
{
    bool added;
    int64_t *v = hmap_insert(&c->avail, (uint64_t)(unsigned)vn, -1, &added);
    if (!v) return nomem(c), false;
    if (*v >= 0) return true;        /* an outer let holds it already */
    if (!RESERVE(c, c->undo, c->capundo, c->nundo + 2)) return false;
    c->undo[c->nundo++] = vn;
    c->undo[c->nundo++] = *v;
    *v = var;
    return true;
}

static void avail_pop(CseState *c, int mark)
{
    while (c->nundo > mark) {
        int64_t old = c->undo[--c->nundo];
        int vn = (int)c->undo[--c->nundo];
        *hmap_find(&c->avail, (uint64_t)(unsigned)vn) = old;
    }
}

/* Counts occurrences per (number, region) entry and marks the pruned tree.
 * `region` is the position that opens the innermost lazy region. */
static void prune(CseState *c, int me, int parent, int region, int depth)
{
    int mark = c->nundo;
    for (;;) {
        if (depth > OPT_MAX_DEPTH) { too_deep(c); break; }
        Pos *P = &c->pos[me];
        P->parent = parent;
        P->visited = true;
        const Node *n = P->node;
        if (n->op == OP_LET) {
            int b = kid(c, me, 0);
            prune(c, b, me, region, depth + 1);
            if (c->failed) break;
            const Pos *B = &c->pos[b];
            /* let x = e: in the body, e is x (thesis: let x = e1 in [x/e1]e2) */
            if (!B->uniq && !opt_is_atom(B->node) && !avail_push(c, B->vn, n->id)) break;
            parent = me;
            me = kid(c, me, 1);
            continue;
        }
        if (!P->uniq && !opt_is_atom(n)) {
            int64_t *v = hmap_find(&c->avail, (uint64_t)(unsigned)P->vn);
            if (v && *v >= 0) {
                P->avail = (int)*v;
                c->navail++;
                break;
            }
        }
        if (P->cand) {
            uint64_t key = (uint64_t)(unsigned)(P->fall ? region + 1 : 0) << 32 | (uint32_t)P->vn;
            bool added;
            int64_t *slot = hmap_insert(&c->keys, key, -1, &added);
            if (!slot) { nomem(c); break; }
            if (!added) {
                /* a later occurrence: its inside is the definition's */
                Ent *e = &c->ent[*slot];
                e->count++;
                c->pos[e->last].next = me;
                e->last = me;
                P->ent = (int)*slot;
                break;
            }
            if (!RESERVE(c, c->ent, c->capent, c->nent + 1)) break;
            *hmap_find(&c->keys, key) = c->nent;
            c->ent[c->nent] = (Ent){1, me, me, me, P->height, -1, -1, -1};
            P->ent = c->nent++;
        }
        for (int i = 0; i < nkids(n); i++) {
            int k = kid(c, me, i);
            prune(c, k, me, n->op != OP_LAM && opt_lazy_operand(n, i) ? k : region, depth + 1);
            if (c->failed) break;
        }
        break;
    }
    avail_pop(c, mark);
}

/* ----------------------------------------------------------------- FLOAT */

/* The parent of x once the definitions already bound have moved to
 * their binding positions. */
static int moved_parent(const CseState *c, int x)
{
    const Pos *X = &c->pos[x];
    if (X->ent >= 0) {
        const Ent *u = &c->ent[X->ent];
        if (u->def == x && u->var >= 0) return u->bindpos;
    }
    return X->parent;
}

/* The lowest common ancestor of positions a and b (after the moves), or
 * -1.  The two climbs alternate, each marking its side, until one reaches
 * a node the other has marked: the cost is proportional to the distance
 * from a and b to their ancestor, not to the root (the depth of a program
 * does not make CSE quadratic). */
static int lca2(CseState *c, int a, int b)
{
    if (a == b) return a;
    int stamp = ++c->stamp, steps = 0;
    c->pos[a].mark = c->pos[b].mark = stamp;
    c->pos[a].midx = 0;
    c->pos[b].midx = 1;
    while (a >= 0 || b >= 0) {
        if (++steps > 2 * c->npos + 2) return -1;   /* a cycle: cannot happen */
        if (a >= 0 && (a = moved_parent(c, a)) >= 0) {
            if (c->pos[a].mark == stamp && c->pos[a].midx == 1) return a;
            c->pos[a].mark = stamp;
            c->pos[a].midx = 0;
        }
        if (b >= 0 && (b = moved_parent(c, b)) >= 0) {
            if (c->pos[b].mark == stamp && c->pos[b].midx == 0) return b;
            c->pos[b].mark = stamp;
            c->pos[b].midx = 1;
        }
    }
    return -1;
}

/* The lowest common ancestor of e's occurrences (after the moves), or -1. */
static int lca(CseState *c, const Ent *e)
{
    int l = e->first;
    for (int o = c->pos[e->first].next; o >= 0 && l >= 0; o = c->pos[o].next) l = lca2(c, l, o);
    return l;
}

static int by_height_desc(const void *a, const void *b, void *ctx)
{
    const Ent *ent = ctx;
    const Ent *x = &ent[*(const int *)a], *y = &ent[*(const int *)b];
    if (x->height != y->height) return x->height > y->height ? -1 : 1;
    return (x->def > y->def) - (x->def < y->def);
}

/* qsort with a context, written out (qsort_r differs between C libraries):
 * an insertion sort for short runs inside a merge sort. */
static void sort_ents(int *a, int *tmp, int n, const Ent *ent)
{
    if (n < 16) {
        for (int i = 1; i < n; i++) {
            int v = a[i], j = i;
            while (j > 0 && by_height_desc(&a[j - 1], &v, (void *)ent) > 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = v;
        }
        return;
    }
    int h = n / 2;
    sort_ents(a, tmp, h, ent);
    sort_ents(a + h, tmp, n - h, ent);
    int i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = by_height_desc(&a[j], &a[i], (void *)ent) < 0 ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, sizeof *a * (size_t)n);
}

/* Binds every term with two or more occurrences at their lowest common
 * ancestor, larger terms first. */
static bool float_all(CseState *c)
{
    int nshared = 0;
    for (int i = 0; i < c->nent; i++) nshared += c->ent[i].count > 1;
    if (!nshared) return true;
    int *order = ax__malloc(sizeof *order * (size_t)nshared * 2);
    if (!order) return nomem(c), false;
    nshared = 0;
    for (int i = 0; i < c->nent; i++)
        if (c->ent[i].count > 1) order[nshared++] = i;
    sort_ents(order, order + nshared, nshared, c->ent);
    bool ok = true;
    for (int j = 0; ok && j < nshared; j++) {
        Ent *e = &c->ent[order[j]];
        int l = lca(c, e);
        /* A function is not a binding position (it has one operand, so the
         * ancestor of two occurrences is never one). */
        if (l < 0 || c->pos[l].node->op == OP_LAM) continue;
        int var = program_fresh_var(c->p, c->pos[e->def].node->type);
        if (var < 0) { nomem(c); ok = false; break; }
        e = &c->ent[order[j]];
        e->var = var;
        e->bindpos = l;
        /* pushed in decreasing height: the list is in increasing height,
         * the order of the lets from the outside in */
        e->bind_next = c->pos[l].binds;
        c->pos[l].binds = order[j];
        c->nbound++;
    }
    free(order);
    return ok;
}

/* ------------------------------------------------------------------ BIND */

static Node *rebuild(CseState *c, int me, int depth, bool moved);

static Node *mk_var(CseState *c, const Node *like, int id, const Type *t)
{
    Node *v = node_new(&c->p->arena, OP_VAR, 0, t);
    if (!v) return nomem(c);
    v->cx = like->cx;
    v->id = id;
    return v;
}

/* A copy of n's node with no operands filled in. */
static Node *copy_node(CseState *c, const Node *n)
{
    Node *x = node_new(&c->p->arena, n->op, n->n, n->type);
    if (!x) return nomem(c);
    x->cx = n->cx;
    x->id = n->id;
    x->a = n->a;
    x->c = n->c;
    x->arr = n->arr;
    x->sten = n->sten;
    x->slice = n->slice;
    x->loop = n->loop;
    if (n->op == OP_LAM) {
        x->nparam = n->nparam;
        if (n->nparam > 0) {
            if (!(x->param = arena_alloc(&c->p->arena, sizeof *x->param * (size_t)n->nparam))) return nomem(c);
            for (int i = 0; i < n->nparam; i++) {
                const Node *q = n->param[i];
                Node *v = node_new(&c->p->arena, q->op, 0, q->type);
                if (!v) return nomem(c);
                v->cx = q->cx;
                v->id = q->id;
                x->param[i] = v;
            }
        }
    }
    return x;
}

/* Wraps x (built at position me) in the lets of the terms bound there.
 * A definition moves to where it is bound, maybe out of the scope of a let
 * whose variable replaced part of it (let-based CSE, which the value
 * number does not see): inside definitions those replacements are undone
 * (`moved`), the copy is the term itself. */
static Node *wrap(CseState *c, int me, Node *x, int depth)
{
    if (!x || c->pos[me].binds < 0) return x;
    int nb = 0;
    for (int e = c->pos[me].binds; e >= 0; e = c->ent[e].bind_next) nb++;
    int *bs = ax__malloc(sizeof *bs * (size_t)nb);
    if (!bs) return nomem(c);
    nb = 0;
    for (int e = c->pos[me].binds; e >= 0; e = c->ent[e].bind_next) bs[nb++] = e;
    for (int j = nb - 1; j >= 0 && x; j--) {
        const Ent *e = &c->ent[bs[j]];
        int def = e->def, var = e->var;
        Node *l = node_new(&c->p->arena, OP_LET, 2, x->type);
        if (!l) { x = nomem(c); break; }
        l->cx = x->cx;
        l->id = var;
        /* the definition itself (not the variable it now is), with the
         * lets bound at its own position */
        Node *d = copy_node(c, c->pos[def].node);
        if (d) {
            for (int i = 0; d && i < nkids(c->pos[def].node); i++)
                if (!(d->kid[i] = rebuild(c, kid(c, def, i), depth + 1, true))) d = NULL;
        }
        if (!(l->kid[0] = wrap(c, def, d, depth + 1))) { x = NULL; break; }
        l->kid[1] = x;
        x = l;
    }
    free(bs);
    return x;
}

/* The rebuilt node at position me, not wrapped in its own lets. */
static Node *build(CseState *c, int me, int depth, bool moved)
{
    if (depth > OPT_MAX_DEPTH) return too_deep(c);
    const Node *n = c->pos[me].node;
    if (n->op != OP_LET) {
        Node *x = copy_node(c, n);
        for (int i = 0; x && i < nkids(n); i++)
            if (!(x->kid[i] = rebuild(c, kid(c, me, i), depth + 1, moved))) return NULL;
        return x;
    }
    /* a chain of lets, in a loop; `hole` is where the next one goes */
    Node *first = NULL, **hole = &first;
    for (int q = me;;) {
        const Node *m = c->pos[q].node;
        Node *l = copy_node(c, m);
        if (!l || !(l->kid[0] = rebuild(c, kid(c, q, 0), depth + 1, moved))) return NULL;
        Node *w = q == me ? l : wrap(c, q, l, depth + 1);
        if (!w) return NULL;
        *hole = w;
        hole = &l->kid[1];
        int b = kid(c, q, 1);
        if (m->kid[1]->op != OP_LET) {
            if (!(*hole = rebuild(c, b, depth + 1, moved))) return NULL;
            return first;
        }
        q = b;
    }
}

static Node *rebuild(CseState *c, int me, int depth, bool moved)
{
    const Pos *P = &c->pos[me];
    if (P->avail >= 0 && !moved) return mk_var(c, P->node, P->avail, P->node->type);
    if (P->ent >= 0 && c->ent[P->ent].var >= 0) return mk_var(c, P->node, c->ent[P->ent].var, P->node->type);
    return wrap(c, me, build(c, me, depth, moved), depth);
}

/* -------------------------------------------------------------- contexts */

/* CSE of one scalar context: its root, or a new tree. */
static Node *cse_context(CseState *c, Node *root, bool *changed)
{
    c->npos = c->nkpos = c->nvn = c->nvkid = c->nent = c->nundo = 0;
    c->nbound = c->navail = 0;
    hmap_free(&c->vtab);
    hmap_free(&c->keys);
    hmap_free(&c->avail);
    int r = number(c, root, 0);
    if (r < 0) return NULL;
    prune(c, r, -1, r, 0);
    if (c->failed || !float_all(c)) return NULL;
    if (!c->nbound && !c->navail) return root;
    *changed = true;
    return rebuild(c, r, 0, false);
}

static Node *clone_with(CseState *c, const Node *n, int i, Node *k)
{
    Node *x = node_clone(&c->p->arena, n);
    if (!x) return nomem(c);
    x->kid[i] = k;
    return x;
}

/* The array level: finds the scalar contexts.  Returns n itself when
 * nothing below changed, else a copy (nodes of the input are never
 * modified). */
static Node *cse_acc(CseState *c, Node *n, bool *changed, int depth)
{
    if (depth > OPT_MAX_DEPTH) return too_deep(c);
    if (n->op == OP_ALET) {
        /* a chain of array lets, in a loop: bound terms first, then the
         * body, then copies of the links that changed, inside out */
        int len = 0;
        for (const Node *x = n; x->op == OP_ALET; x = x->kid[1]) len++;
        Node **bnd = ax__malloc(sizeof *bnd * (size_t)len * 2);
        if (!bnd) return nomem(c);
        Node **links = bnd + len;
        Node *x = n;
        for (int i = 0; i < len; i++, x = x->kid[1]) {
            links[i] = x;
            if (!(bnd[i] = cse_acc(c, x->kid[0], changed, depth + 1))) { free(bnd); return NULL; }
        }
        Node *body = cse_acc(c, x, changed, depth + 1);
        for (int i = len - 1; body && i >= 0; i--) {
            if (bnd[i] == links[i]->kid[0] && body == links[i]->kid[1]) body = links[i];
            else if ((body = clone_with(c, links[i], 1, body))) body->kid[0] = bnd[i];
        }
        free(bnd);
        return body;
    }
    Node *out = n;
    for (int i = 0; i < n->n; i++) {
        Node *k = n->kid[i], *k2;
        if (k->op == OP_LAM) {
            Node *b = k->kid[0];
            Node *b2 = op_is_array(b->op) ? cse_acc(c, b, changed, depth + 1) : cse_context(c, b, changed);
            if (!b2) return NULL;
            k2 = b2 == b ? k : clone_with(c, k, 0, b2);
        } else if (op_is_array(k->op)) {
            k2 = cse_acc(c, k, changed, depth + 1);
        } else {
            k2 = cse_context(c, k, changed);
        }
        if (!k2) return NULL;
        if (k2 != k) {
            if (out == n && !(out = node_clone(&c->p->arena, n))) return nomem(c);
            out->kid[i] = k2;
        }
    }
    return out;
}

int opt_cse(ax_ctx *cx, Program *p, bool *changed)
{
    CseState c;
    memset(&c, 0, sizeof c);
    c.cx = cx;
    c.p = p;
    hmap_init(&c.vtab);
    hmap_init(&c.keys);
    hmap_init(&c.avail);
    bool ch = false;
    Node *root = cse_acc(&c, p->root, &ch, 0);
    if (root && !c.failed) {
        p->root = root;
        if (ch) *changed = true;
    }
    free(c.pos);
    free(c.kpos);
    free(c.vn);
    free(c.vkid);
    free(c.ent);
    free(c.undo);
    hmap_free(&c.vtab);
    hmap_free(&c.keys);
    hmap_free(&c.avail);
    if (c.failed && c.deep && cx->status == AX_OK) return 0;   /* unchanged */
    return c.failed || !root ? -1 : 0;
}
