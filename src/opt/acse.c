/*
 * Common subexpressions of whole array terms (the Delite seed's CSE by
 * hash-consing, applied to array operations; thesis s.3 does it for
 * scalar code, cse.c).  Sharing recovery merges what the program shares
 * through a C variable, but two equal terms built apart (two folds of one
 * array written out twice, the same map built by two helper functions)
 * stay two computations.
 *
 * After fusion every array operation that is computed is let-bound (or
 * the program's result), so the pass walks the chains of array lets: a
 * bound term equal to one bound by an enclosing let, up to the names of
 * the variables it binds itself (lambda parameters, inner lets), becomes
 * that let's variable, `let a2 = a1`, which the simplifier's copy
 * propagation then removes.  The earlier let encloses the later one, so
 * its term is evaluated whenever the later one would be: nothing is
 * speculated, and a term that can fault faults the same way.  A let in
 * an awhile body equal to one outside the loop is thus computed once,
 * before the loop.
 *
 * Terms are compared by a structural hash that ignores variable ids,
 * then exactly (alpha_eq), within a budget of nodes per comparison.
 * Cost: one hash per let-bound term, a comparison per equal hash.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rewrite.h"
#include "hash.h"
#include <string.h>

typedef struct Bound {
    uint64_t h;
    const Node *term;
    int id;                    /* the let's variable */
    int prev;                  /* the entry below with the same hash, or -1 */
} Bound;

typedef struct AcseState {
    ax_ctx *cx;
    Program *p;
    Bound *scope;              /* the enclosing lets' terms, innermost last */
    int nscope, capscope;
    HMap top;                  /* hash -> its innermost entry in scope (-1: none):
                                  a lookup visits only equal hashes */
    AlphaEq eq;                /* alpha_eq's binders (rewrite.h) */
    bool failed, changed;
} AcseState;

/* A hash of n's structure: the ids of the variables the term binds itself
 * left out (they differ between equal terms; `bound` collects them), the
 * free ones' kept (so that the lets of a long chain, each reading the
 * one before, hash apart: comparing each with all the earlier ones made
 * the pass quadratic); 0 when too deep or out of memory. */
static uint64_t hash_term(const Node *n, int depth, HMap *bound)
{
    if (depth > OPT_MAX_DEPTH) return 0;
    uint64_t h = hash_combine((uint64_t)n->op, (uint64_t)(uint32_t)n->n);
    h = hash_combine(h, (uint64_t)(uint32_t)n->a);
    if (n->type) h = hash_combine(h, ((uint64_t)n->type->kind << 32) | (uint32_t)n->type->width);
    switch (n->op) {
    case OP_CONST: h = hash_combine(h, (uint64_t)n->c.u); break;
    case OP_USE: h = hash_combine(h, hmap_ptr(n->arr)); break;
    case OP_LAM:
        h = hash_combine(h, (uint64_t)(uint32_t)n->nparam);
        for (int i = 0; i < n->nparam; i++)
            if (n->param[i] && !hmap_insert(bound, (uint64_t)(uint32_t)n->param[i]->id, 1, NULL)) return 0;
        break;
    case OP_LET: case OP_ALET:
        if (!hmap_insert(bound, (uint64_t)(uint32_t)n->id, 1, NULL)) return 0;
        break;
    case OP_VAR: case OP_AVAR:
        /* a binder inside the term comes before its uses in this walk
           (ids are per binder: one bound anywhere inside is never free) */
        if (!hmap_find(bound, (uint64_t)(uint32_t)n->id)) h = hash_combine(h, 0x51ed27ull + (uint32_t)n->id);
        break;
    default: break;
    }
    for (int i = 0; i < n->n; i++) {
        if (!n->kid[i]) return 0;
        uint64_t k = hash_term(n->kid[i], depth + 1, bound);
        if (!k) return 0;
        h = hash_combine(h, k);
    }
    return h ? h : 1;
}

/* An earlier let in scope binding a term equal to t: its variable, or -1. */
static int find_equal(AcseState *s, const Node *t, uint64_t h)
{
    int64_t *top = hmap_find(&s->top, h);
    for (int i = top ? (int)*top : -1; i >= 0; i = s->scope[i].prev) {
        int budget = 200000;
        s->eq.n = 0;
        bool eq = alpha_eq(&s->eq, s->scope[i].term, t, &budget);
        if (s->eq.failed) s->failed = true;
        if (eq && ty_eq(s->scope[i].term->type, t->type)) return s->scope[i].id;
    }
    return -1;
}

static void walk(AcseState *s, Node *n, int depth);

/* The kids of n that are array terms (operands; the bodies of awhile's
 * functions and of array lambdas), each walked in the current scope. */
static void walk_kids(AcseState *s, Node *n, int depth)
{
    Node **slot;
    for (int i = 0; !s->failed && (slot = opt_array_slot(n, &i));) walk(s, *slot, depth + 1);
}

/* The term at *slot, if an enclosing let binds an equal one, becomes that
 * let's variable (true); else *h is its hash (0: none). */
static bool merged(AcseState *s, Node **slot, uint64_t *h)
{
    Node *t = *slot;
    *h = 0;
    if (opt_is_atom(t) || t->op == OP_USE) return false;
    HMap bound;
    hmap_init(&bound);
    *h = hash_term(t, 0, &bound);
    hmap_free(&bound);
    int same = *h ? find_equal(s, t, *h) : -1;
    if (same < 0) return false;
    Node *v = node_new(&s->p->arena, OP_AVAR, 0, t->type);
    if (!v) {
        s->failed = true;
        return false;
    }
    v->cx = t->cx;
    v->id = same;
    *slot = v;
    s->changed = true;
    return true;
}

static void walk(AcseState *s, Node *n, int depth)
{
    if (s->failed || depth > OPT_MAX_DEPTH) return;
    if (n->op != OP_ALET) return walk_kids(s, n, depth);
    int base = s->nscope;
    /* a chain of lets, in a loop (chains are long) */
    for (; n->op == OP_ALET && n->n == 2 && !s->failed; n = n->kid[1]) {
        Node *t = n->kid[0];
        walk(s, t, depth + 1);
        uint64_t h;
        if (t->op == OP_ACOND) {
            /* a branch equal to a term made before (the guarded copy
             * licm.c moves out of a loop, of a term the program also
             * computes before the loop): that term's variable; it is
             * made whether or not the branch is taken, so nothing is
             * speculated */
            merged(s, &t->kid[1], &h);
            merged(s, &t->kid[2], &h);
        }
        if (merged(s, &n->kid[0], &h) || s->failed) continue;
        if (!h) continue;
        if (s->nscope == s->capscope) {
            int cap = s->capscope ? 2 * s->capscope : 32;
            Bound *b = ax__realloc(s->scope, sizeof *b * (size_t)cap);
            if (!b) {
                s->failed = true;
                break;
            }
            s->scope = b;
            s->capscope = cap;
        }
        int64_t *top = hmap_insert(&s->top, h, -1, NULL);
        if (!top) {
            s->failed = true;
            break;
        }
        s->scope[s->nscope] = (Bound){h, t, n->id, (int)*top};
        *top = s->nscope++;
    }
    if (!s->failed) walk(s, n, depth + 1);
    for (int i = s->nscope - 1; i >= base; i--) {
        int64_t *top = hmap_find(&s->top, s->scope[i].h);
        if (top) *top = s->scope[i].prev;
    }
    s->nscope = base;
}

int opt_array_cse(ax_ctx *cx, Program *p, bool *changed)
{
    AcseState s;
    memset(&s, 0, sizeof s);
    s.cx = cx;
    s.p = p;
    hmap_init(&s.top);
    if (p && p->root) walk(&s, p->root, 0);
    hmap_free(&s.top);
    free(s.scope);
    alpha_free(&s.eq);
    if (s.failed) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory (array CSE)");
        return -1;
    }
    if (changed) *changed = s.changed;
    return 0;
}
