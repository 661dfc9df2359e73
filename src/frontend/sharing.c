/*
 * Sharing recovery: source graph -> core IR tree with explicit lets
 * (paper s.3; docs/ARCHITECTURE.md, "The pipeline").
 *
 * The builder never copies a term, so a term the C program used twice is a
 * node reached along two paths; its address is the paper's stable name.
 * The three stages of the paper, adapted to a C graph:
 *
 *  PRUNE (s.3.2)  A depth-first walk with an occurrence map keyed by node
 *                 address counts how often each node is reached and enters
 *                 a node's operands on its first visit only.  The first
 *                 visits form the pruned tree; later visits are
 *                 placeholders.  The count, not just a "seen" bit, is what
 *                 decides where a binding goes.
 *  FLOAT (s.3.3)  Bottom-up over the pruned tree, each position collects a
 *                 pending set of shared terms with the number of their
 *                 occurrences seen below it.  A shared term whose count
 *                 reaches its total is saturated: it is let-bound at that
 *                 position, the lowest one that dominates all its uses.
 *  BIND  (s.3.4)  Rebuilds the tree: each position is wrapped with the lets
 *                 of the terms bound there, occurrences of shared terms
 *                 become variables, and every binder (let or lambda) gets a
 *                 fresh dense id (the C counterpart of the paper's typed de
 *                 Bruijn indices: unique ids plus the IR verifier).
 *
 * Adaptations to the paper (each mirrors what Accelerate's implementation
 * does for the full language):
 *
 *  - Two strata.  Array terms bind only at array positions (ALET), scalar
 *    terms only at scalar positions (LET).  A lambda is never a binding
 *    position (a LET cannot wrap a LAM); its body is.
 *  - Scalar contexts.  Every scalar operand of an array operation (a
 *    function, a shape, fold's initial value, a boundary constant, acond's
 *    condition, unit's element) is a closed scalar context.  Scalar nodes
 *    are counted per context (the occurrence map key is the pair (node,
 *    context)), so a scalar term used by two contexts gets one copy in each
 *    and is never bound at array level; within a context, sharing is
 *    recovered as usual.  Array nodes are counted over the whole program.
 *  - Scalar code reaches arrays only through array variables, so an array
 *    term read by scalar code (index, linear index, shape) is bound even if
 *    it is used once ("must bind"); an array variable (an awhile
 *    parameter) is referenced as it is.
 *  - Dependencies.  The pending set left inside a shared term's definition
 *    (shared terms it uses that are not bound inside it) stays attached to
 *    the term and joins the pending set of the position where the term
 *    itself is bound.  Floating those separately would let a dependency be
 *    bound below the term that uses it (out of scope).  At one position
 *    bindings are ordered by height (a dependency is always lower), so
 *    dependencies come outside.
 *  - Constants and variables are never let-bound (copying them is free).
 *  - No speculation.  A binding is evaluated whenever its position is, so
 *    floating a term out of a conditional branch (cond's branches, the
 *    second operand of and/or, a while loop's body) evaluates it where the
 *    source did not.  For pure terms that only costs work, and never more
 *    than once; but a term that can fault (integer division, a shape size,
 *    a bounds-checked array read) or not terminate (a while loop), or that
 *    contains one, would make sharing change a program's meaning.  Such
 *    "fallible" nodes are therefore counted per lazy region (the innermost
 *    branch or loop body they occur in) instead of per context: they are
 *    shared within one region and copied across regions.  Array reads
 *    count as fallible in unsafe mode too (a read hoisted out of its
 *    guard is not one the program promised to be in bounds).  A copy of a
 *    term that contains binders (a while loop's functions) gets its own
 *    binders with fresh variables (copy_term), so that no function or
 *    parameter-dependent term is shared between two copies.
 *
 * Cost.  PRUNE and BIND are linear in the size of the pruned tree (plus
 * hashing).  FLOAT merges pending sets smaller-into-larger (hash tables
 * kept between 1/8 and 1/2 full; a merge walks the smaller one once and
 * frees it), so each entry moves O(log n) times at worst and usually once;
 * binding sorts the terms bound at one position.  Recursion depth is the
 * graph's depth, limited to MAX_DEPTH.
 *
 * With sharing off (AXLE_DEBUG=no-sharing) the graph is first unfolded into
 * a tree, a copy per path with fresh lambda parameters per copy, and then
 * goes through the same algorithm, where only must-bind array terms get
 * lets.  An unfolding above UNFOLD_LIMIT nodes fails with AX_ERR_NOMEM.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "hash.h"
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The walks recurse along the graph's depth; beyond this the program is
 * refused instead of risking the C stack (here and in every later pass,
 * whose trees are about as deep as the graph). */
#define MAX_DEPTH AX_DEPTH_LIMIT
/* The largest unfolded tree (sharing off) that is attempted. */
#define UNFOLD_LIMIT 50000000LL

typedef struct Ent Ent;
typedef struct Pend Pend;

/* One entry of the occurrence map: a node (in one scalar context, or in the
 * array stratum) and its position in the pruned tree, which is where it was
 * first visited. */
struct Ent {
    Node *node;
    int ctx;             /* scalar context; 0 for array nodes */
    int count;           /* occurrences (edges of the pruned tree reaching it) */
    int height;          /* longest path down to a leaf; orders the bindings */
    int seq;             /* first-visit order: deterministic ties and hashing */
    int pidx;            /* kid index of the first visit in `parent` */
    int var;             /* BIND: the output id while in scope, else -1 */
    bool must_bind;      /* an array term read by scalar code */
    Ent *parent;         /* the position of the first visit (NULL: root) */
    Ent **kids;          /* per operand: its entry, NULL for a trivial operand */
    Pend *deps;          /* FLOAT: pending set left inside the definition */
    Ent *binds;          /* FLOAT: terms bound at this position */
    Ent *bind_next;
    Ent *sat_next;       /* FLOAT: link in a saturated list */
};

/* A pending set (the paper's Gamma): shared terms with the occurrences seen
 * so far, in an open-addressing table, plus the list of saturated array
 * terms that wait for the next array position above. */
typedef struct Slot { Ent *e; int c; } Slot;
struct Pend {
    Slot *slot;
    int cap, len;
    Ent *sat, *sat_tail;
    Pend *next_free;
};

/* Node -> int64 (unfolded sizes). */
typedef struct NSlot { const Node *k; int64_t v; } NSlot;

/* (node, region) -> the node's copy for that region. */
typedef struct CSlot { const Node *k; int r; Node *v; } CSlot;

typedef struct St {
    ax_ctx *cx;
    Arena tmp;              /* entries, pending sets, the unfolded tree */
    bool failed;            /* an error is recorded on cx */
    /* PRUNE */
    Ent **occ;              /* the occurrence map (malloc'd) */
    size_t occ_cap, occ_len;
    int nctx, nseq;
    int max_id;             /* largest source variable id seen */
    /* FLOAT: recycled pending sets and tables, by log2 of the capacity */
    Pend *free_pend;
    void *free_slots[32];
    /* BIND */
    Program *p;
    int *pmap;              /* source variable id -> output id, or -1 */
    int npmap;
    const Type **vt;        /* output variable types (malloc'd) */
    int nv, capv;
    /* PRUNE: which scalar nodes are fallible (memo: 1 no, 2 yes) */
    NSlot *fb;
    size_t fb_cap, fb_len;
    /* UNFOLD */
    NSlot *sz;
    size_t sz_cap, sz_len;
    Node **pnew;            /* source parameter id -> its copy */
    int npnew, next_id;
    /* PRUNE: copies of fallible terms that contain binders (see copy) */
    NSlot *hb;              /* memo: 1 no binder inside, 2 one inside, 3 and pruned once */
    size_t hb_cap, hb_len;
    CSlot *cm;              /* (node, region) -> its copy */
    size_t cm_cap, cm_len;
    NSlot *cp;              /* one copy: node -> its copy (memo) */
    size_t cp_cap, cp_len;
    NSlot *rm;              /* one copy: binder id (key id + 1) -> its new variable */
    size_t rm_cap, rm_len;
    Node **fresh;           /* the copies' binder and variable nodes (temporary ids) */
    int nfresh, capfresh, nfresh_ids;
    /* BIND: source type -> its copy in the program's arena (memo) */
    HMap tcopy;
} St;

#define FAIL(st, status, ...) ((st)->failed = true, ctx_error((st)->cx, (status), __VA_ARGS__))

static void *nomem(St *st)
{
    return FAIL(st, AX_ERR_NOMEM, "sharing recovery: out of memory");
}

static void *talloc(St *st, size_t n)
{
    void *p = arena_alloc(&st->tmp, n);
    if (!p) nomem(st);
    return p;
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* A LAM belongs to the stratum of its body (awhile's functions are array
 * functions). */
static bool is_arr(const Node *n)
{
    while (n && n->op == OP_LAM) n = n->n > 0 ? n->kid[0] : NULL;
    return n && op_is_array(n->op);
}

/* Never let-bound: rebuilt at every occurrence. */
static bool trivial(const Node *n)
{
    return n->op == OP_CONST || n->op == OP_VAR || n->op == OP_AVAR;
}

static bool shared(const Ent *e) { return e->count > 1 || e->must_bind; }

/* A map from node address to int64 (memo tables), in malloc'd memory. */
static int64_t *nmap_slot(St *st, NSlot **tab, size_t *cap, size_t *len, const Node *n, bool *found)
{
    if (2 * (*len + 1) > *cap) {
        size_t ncap = *cap ? *cap * 2 : 1024;
        NSlot *t = ax__calloc(ncap, sizeof *t);
        if (!t) return nomem(st);
        for (size_t i = 0; i < *cap; i++) {
            if (!(*tab)[i].k) continue;
            size_t j = (size_t)mix((uint64_t)(uintptr_t)(*tab)[i].k) & (ncap - 1);
            while (t[j].k) j = (j + 1) & (ncap - 1);
            t[j] = (*tab)[i];
        }
        free(*tab);
        *tab = t;
        *cap = ncap;
    }
    size_t mask = *cap - 1, i = (size_t)mix((uint64_t)(uintptr_t)n) & mask;
    while ((*tab)[i].k && (*tab)[i].k != n) i = (i + 1) & mask;
    *found = (*tab)[i].k != NULL;
    if (!*found) {
        (*tab)[i].k = n;
        (*tab)[i].v = 0;
        (*len)++;
    }
    return &(*tab)[i].v;
}

/* The value for n, or NULL if it has none. */
static const int64_t *nmap_get(const NSlot *tab, size_t cap, const Node *n)
{
    if (!cap) return NULL;
    size_t mask = cap - 1, i = (size_t)mix((uint64_t)(uintptr_t)n) & mask;
    while (tab[i].k && tab[i].k != n) i = (i + 1) & mask;
    return tab[i].k ? &tab[i].v : NULL;
}

/* ================================================================ PRUNE */

static Ent **occ_slot(St *st, const Node *n, int ctx)
{
    size_t mask = st->occ_cap - 1;
    size_t i = (size_t)mix((uint64_t)(uintptr_t)n ^ ((uint64_t)(unsigned)ctx << 40)) & mask;
    while (st->occ[i] && !(st->occ[i]->node == n && st->occ[i]->ctx == ctx)) i = (i + 1) & mask;
    return &st->occ[i];
}

static bool occ_reserve(St *st)
{
    if (2 * (st->occ_len + 1) <= st->occ_cap) return true;
    size_t cap = st->occ_cap ? st->occ_cap * 2 : 1024;
    Ent **t = ax__calloc(cap, sizeof *t);
    if (!t) return nomem(st), false;
    Ent **old = st->occ;
    size_t ocap = st->occ_cap;
    st->occ = t;
    st->occ_cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i]) *occ_slot(st, old[i]->node, old[i]->ctx) = old[i];
    free(old);
    return true;
}

static bool note_id(St *st, const Node *binder, int id)
{
    if (id < 0 && id >= -st->nfresh_ids) return true;   /* a copy's binder, renumbered after PRUNE */
    if (id < 0) {
        FAIL(st, AX_ERR_BUILD, "sharing recovery: %s has a negative variable id", op_name(binder->op));
        return false;
    }
    if (id > st->max_id) st->max_id = id;
    return true;
}

/* Can evaluating scalar node n fault or fail to terminate?  (Transitive
 * over its scalar operands; memoised, so linear over the graph.)  Returns
 * 1 or 0, or -1 on error. */
static int fallible(St *st, const Node *n, int depth)
{
    if (trivial(n) || is_arr(n)) return 0;
    if (depth > MAX_DEPTH) {
        FAIL(st, AX_ERR_BUILD, "sharing recovery: the program is nested more than %d levels deep", MAX_DEPTH);
        return -1;
    }
    bool found;
    int64_t *slot = nmap_slot(st, &st->fb, &st->fb_cap, &st->fb_len, n, &found);
    if (!slot) return -1;
    if (found) return (int)*slot - 1;
    int f = 0;
    switch (n->op) {
    case OP_WHILE:
        f = 1;
        break;
    case OP_INDEX: case OP_LINDEX:
        /* Even in unsafe mode: "unsafe" promises that the reads the
         * program makes are in bounds, not the reads sharing would add by
         * hoisting one out of its guard (the interpreter still checks
         * them, and an unchecked backend would read stray memory). */
        f = 1;
        break;
    case OP_PRIM:
        if (n->a == P_SHAPESIZE || n->a == P_RESHAPE) f = 1;
        else if ((n->a == P_DIV || n->a == P_QUOT || n->a == P_REM || n->a == P_IDIV || n->a == P_MOD) &&
                 n->type && ty_is_int(n->type))
            f = 1;
        break;
    default:
        break;
    }
    for (int i = 0; !f && i < n->n; i++) {
        if (!n->kid[i]) continue;   /* (reported by prune) */
        int k = fallible(st, n->kid[i], depth + 1);
        if (k < 0) return -1;
        f = k;
    }
    /* (the table may have grown: look the slot up again) */
    if (!(slot = nmap_slot(st, &st->fb, &st->fb_cap, &st->fb_len, n, &found))) return -1;
    *slot = f + 1;
    return f;
}

/* Is operand i of scalar node n evaluated only sometimes (a lazy region)? */
static bool lazy_operand(const Node *n, int i)
{
    switch (n->op) {
    case OP_COND: return i > 0;
    case OP_PRIM: return (n->a == P_AND || n->a == P_OR) && i == 1;
    case OP_WHILE: return i == 1;   /* the body; the condition runs at least once */
    default: return false;
    }
}

/* Copies of fallible terms.  A fallible term is counted per lazy region,
 * so a term used in two regions is rebuilt once in each.  If it contains a
 * binder (a while loop's functions, a source let), the two copies would
 * share that binder and every term inside it that depends on the bound
 * variables, whose entries are counted per context: a function would be
 * reached twice, and a term depending on a parameter would be shared
 * between the copies and bound outside both, out of its binder's scope.
 * So the second and later regions get a copy of the term's subgraph in
 * which every binder is new (fresh variables, references remapped) and so
 * is every node above one or above a reference to one; the rest (terms
 * that do not depend on the copied binders) is the same nodes, and stays
 * shared with the rest of the program as before.  The copy is a DAG
 * (memoised), so it is no larger than the subgraph.  Its variables get
 * temporary negative ids, renumbered above the source ids after PRUNE. */

/* Does scalar node n contain a binder (LAM or LET)?  Memoised in hb;
 * returns the memo slot's value (1 no, 2 yes, 3 yes and already pruned
 * in some region), or -1 on error. */
static int has_binder(St *st, const Node *n, int depth)
{
    if (trivial(n) || is_arr(n)) return 1;
    if (depth > MAX_DEPTH) {
        FAIL(st, AX_ERR_BUILD, "sharing recovery: the program is nested more than %d levels deep", MAX_DEPTH);
        return -1;
    }
    bool found;
    int64_t *slot = nmap_slot(st, &st->hb, &st->hb_cap, &st->hb_len, n, &found);
    if (!slot) return -1;
    if (found) return (int)*slot;
    int b = n->op == OP_LAM || n->op == OP_LET ? 2 : 1;
    for (int i = 0; b == 1 && i < n->n; i++) {
        if (!n->kid[i]) continue;   /* (reported by prune) */
        if ((b = has_binder(st, n->kid[i], depth + 1)) < 0) return -1;
        if (b == 3) b = 2;
    }
    if (!(slot = nmap_slot(st, &st->hb, &st->hb_cap, &st->hb_len, n, &found))) return -1;
    *slot = b;
    return b;
}

static void mark_pruned(St *st, const Node *n)
{
    bool found;
    int64_t *slot = nmap_slot(st, &st->hb, &st->hb_cap, &st->hb_len, n, &found);
    if (slot) *slot = 3;
}

static CSlot *cm_slot(St *st, const Node *n, int region, bool insert)
{
    if (insert && 2 * (st->cm_len + 1) > st->cm_cap) {
        size_t ncap = st->cm_cap ? st->cm_cap * 2 : 256;
        CSlot *t = ax__calloc(ncap, sizeof *t);
        if (!t) return nomem(st);
        for (size_t i = 0; i < st->cm_cap; i++) {
            CSlot *o = &st->cm[i];
            if (!o->k) continue;
            size_t j = (size_t)mix((uint64_t)(uintptr_t)o->k ^ ((uint64_t)(unsigned)o->r << 40)) & (ncap - 1);
            while (t[j].k) j = (j + 1) & (ncap - 1);
            t[j] = *o;
        }
        free(st->cm);
        st->cm = t;
        st->cm_cap = ncap;
    }
    if (!st->cm_cap) return NULL;
    size_t mask = st->cm_cap - 1;
    size_t i = (size_t)mix((uint64_t)(uintptr_t)n ^ ((uint64_t)(unsigned)region << 40)) & mask;
    while (st->cm[i].k && !(st->cm[i].k == n && st->cm[i].r == region)) i = (i + 1) & mask;
    if (st->cm[i].k) return &st->cm[i];
    if (!insert) return NULL;
    st->cm[i].k = n;
    st->cm[i].r = region;
    st->cm[i].v = NULL;
    st->cm_len++;
    return &st->cm[i];
}

static Node *fresh_var(St *st, Node *v)
{
    if (st->nfresh == st->capfresh) {
        int cap = st->capfresh ? st->capfresh * 2 : 64;
        Node **t = ax__realloc(st->fresh, sizeof *t * (size_t)cap);
        if (!t) return nomem(st);
        st->fresh = t;
        st->capfresh = cap;
    }
    st->fresh[st->nfresh++] = v;
    return v;
}

static bool remap(St *st, int id, Node *v)
{
    bool found;
    int64_t *slot = nmap_slot(st, &st->rm, &st->rm_cap, &st->rm_len, (const Node *)(uintptr_t)((int64_t)id + 1),
                              &found);
    if (!slot) return false;
    *slot = (int64_t)(intptr_t)v;
    return true;
}

static Node *copy_rec(St *st, Node *n, int depth)
{
    if (n->op == OP_CONST || is_arr(n)) return n;   /* array terms are counted over the program */
    if (n->op == OP_VAR || n->op == OP_AVAR) {
        const int64_t *v = nmap_get(st->rm, st->rm_cap, (const Node *)(uintptr_t)((int64_t)n->id + 1));
        return v ? (Node *)(intptr_t)*v : n;
    }
    if (depth > MAX_DEPTH) {
        FAIL(st, AX_ERR_BUILD, "sharing recovery: the program is nested more than %d levels deep", MAX_DEPTH);
        return NULL;
    }
    bool found;
    int64_t *slot = nmap_slot(st, &st->cp, &st->cp_cap, &st->cp_len, n, &found);
    if (!slot) return NULL;
    if (found) return (Node *)(intptr_t)*slot;
    Node *c = NULL;
    if (n->op == OP_LAM) {
        if (!(c = node_clone(&st->tmp, n))) return nomem(st);
        if (n->nparam > 0) {
            if (!(c->param = talloc(st, sizeof *c->param * (size_t)n->nparam))) return NULL;
            for (int i = 0; i < n->nparam; i++) {
                Node *q = n->param[i], *nq;
                if (!q || (q->op != OP_VAR && q->op != OP_AVAR))
                    return FAIL(st, AX_ERR_BUILD, "sharing recovery: parameter %d of a function is not a variable", i);
                if (!(nq = node_clone(&st->tmp, q))) return nomem(st);
                nq->id = -++st->nfresh_ids;
                if (!fresh_var(st, nq) || !remap(st, q->id, nq)) return NULL;
                c->param[i] = nq;
            }
        }
    } else if (n->op == OP_LET && n->n == 2) {
        Node *v = node_new(&st->tmp, OP_VAR, 0, n->kid[0]->type);
        if (!v || !(c = node_clone(&st->tmp, n))) return nomem(st);
        v->cx = n->cx;
        v->id = c->id = -++st->nfresh_ids;
        if (!fresh_var(st, v) || !fresh_var(st, c) || !remap(st, n->id, v)) return NULL;
    }
    for (int i = 0; i < n->n; i++) {
        Node *k = n->kid[i];
        if (!k) return FAIL(st, AX_ERR_BUILD, "sharing recovery: %s has no operand %d", op_name(n->op), i);
        Node *kc = copy_rec(st, k, depth + 1);
        if (!kc) return NULL;
        if (kc != k && !c && !(c = node_clone(&st->tmp, n))) return nomem(st);
        if (c) c->kid[i] = kc;
    }
    if (!c) c = n;
    /* (the table may have grown: look the slot up again) */
    if (!(slot = nmap_slot(st, &st->cp, &st->cp_cap, &st->cp_len, n, &found))) return NULL;
    *slot = (int64_t)(intptr_t)c;
    return c;
}

/* The copy of fallible term n (which contains a binder) for one more
 * region. */
static Node *copy_term(St *st, Node *n)
{
    Node *c = copy_rec(st, n, 0);
    free(st->cp);
    free(st->rm);
    st->cp = st->rm = NULL;
    st->cp_cap = st->cp_len = st->rm_cap = st->rm_len = 0;
    return c;
}

/* Counts occurrences and builds the pruned tree (paper s.3.2).  `ctx` is
 * the scalar context a scalar node belongs to, `region` the innermost lazy
 * region within it. */
static Ent *prune(St *st, Node *n, int ctx, int region, Ent *parent, int pidx, int depth)
{
    if (trivial(n)) {
        if (n->op != OP_CONST) note_id(st, n, n->id);
        return NULL;
    }
    if (depth > MAX_DEPTH) {
        FAIL(st, AX_ERR_BUILD, "sharing recovery: the program is nested more than %d levels deep", MAX_DEPTH);
        return NULL;
    }
    bool arr = is_arr(n);
    int key = 0, f = 0;
    if (!arr) {
        if ((f = fallible(st, n, depth)) < 0) return NULL;
        key = f ? region : ctx;
    }
    if (!occ_reserve(st)) return NULL;
    Ent **slot = occ_slot(st, n, key);
    if (!*slot && f) {
        /* A fallible term new to this region: if it contains a binder and
         * another region has it already, this region gets its own copy
         * (see copy_term). */
        int b = has_binder(st, n, depth);
        if (b < 0) return NULL;
        if (b > 1) {
            CSlot *cs = cm_slot(st, n, region, false);
            if (cs) {
                n = cs->v;
            } else if (b == 3) {
                Node *c = copy_term(st, n);
                if (!c || !(cs = cm_slot(st, n, region, true))) return NULL;
                cs->v = c;
                n = c;
            }
            mark_pruned(st, n);
            slot = occ_slot(st, n, key);
        }
    }
    if (*slot) {
        Ent *e = *slot;
        if (n->op == OP_LAM) {
            /* A function is not a value: it cannot be let-bound, and its
             * parameters would be bound twice. */
            FAIL(st, AX_ERR_BUILD, "sharing recovery: one function is used by two operations");
            return NULL;
        }
        if (e->count == INT_MAX) {
            FAIL(st, AX_ERR_NOMEM, "sharing recovery: a term is used too often");
            return NULL;
        }
        e->count++;
        return e;
    }
    Ent *e = talloc(st, sizeof *e);
    if (!e || (n->n > 0 && !(e->kids = talloc(st, sizeof *e->kids * (size_t)n->n)))) return NULL;
    e->node = n;
    e->ctx = key;
    e->count = 1;
    e->seq = st->nseq++;
    e->parent = parent;
    e->pidx = pidx;
    e->var = -1;
    *slot = e;
    st->occ_len++;
    if (n->op == OP_LAM) {
        for (int i = 0; i < n->nparam; i++) {
            Node *q = n->param ? n->param[i] : NULL;
            if (!q || (q->op != OP_VAR && q->op != OP_AVAR)) {
                FAIL(st, AX_ERR_BUILD, "sharing recovery: parameter %d of a function is not a variable", i);
                return NULL;
            }
            if (!note_id(st, q, q->id)) return NULL;
        }
    } else if ((n->op == OP_LET || n->op == OP_ALET) && !note_id(st, n, n->id)) {
        return NULL;
    }
    int h = 0;
    for (int i = 0; i < n->n; i++) {
        Node *k = n->kid[i];
        if (!k) {
            FAIL(st, AX_ERR_BUILD, "sharing recovery: %s has no operand %d", op_name(n->op), i);
            return NULL;
        }
        bool karr = is_arr(k);
        int kctx = ctx, kregion = region;
        if (arr && !karr) kctx = kregion = ++st->nctx;   /* a scalar operand opens a new context */
        else if (!arr && lazy_operand(n, i)) kregion = ++st->nctx;
        Ent *ke = prune(st, k, kctx, kregion, e, i, depth + 1);
        if (st->failed) return NULL;
        if (ke && !arr && karr) ke->must_bind = true;
        e->kids[i] = ke;
        if (ke && ke->height > h) h = ke->height;
    }
    e->height = h + 1;
    return e;
}

/* ================================================================ FLOAT */

static unsigned slot_hash(const Ent *e) { return (unsigned)e->seq * 2654435761u; }

static Slot *slots_new(St *st, int cap)
{
    int cls = __builtin_ctz((unsigned)cap);
    void *m = st->free_slots[cls];
    if (m) {
        st->free_slots[cls] = *(void **)m;
        memset(m, 0, sizeof(Slot) * (size_t)cap);
        return m;
    }
    return talloc(st, sizeof(Slot) * (size_t)cap);
}

static void slots_free(St *st, Slot *s, int cap)
{
    int cls = __builtin_ctz((unsigned)cap);
    *(void **)s = st->free_slots[cls];
    st->free_slots[cls] = s;
}

static Pend *pend_new(St *st)
{
    Pend *p = st->free_pend;
    if (p) st->free_pend = p->next_free;
    else if (!(p = talloc(st, sizeof *p))) return NULL;
    memset(p, 0, sizeof *p);
    p->cap = 4;
    if (!(p->slot = slots_new(st, p->cap))) return NULL;
    return p;
}

static void pend_free(St *st, Pend *p)
{
    slots_free(st, p->slot, p->cap);
    p->next_free = st->free_pend;
    st->free_pend = p;
}

static int pend_find(const Pend *p, const Ent *e)
{
    int mask = p->cap - 1, i = (int)(slot_hash(e) & (unsigned)mask);
    while (p->slot[i].e && p->slot[i].e != e) i = (i + 1) & mask;
    return i;
}

/* Deletion with backward shift keeps probe chains intact. */
static void pend_del(Pend *p, int i)
{
    int mask = p->cap - 1, j = i;
    p->slot[i].e = NULL;
    for (;;) {
        j = (j + 1) & mask;
        if (!p->slot[j].e) break;
        int k = (int)(slot_hash(p->slot[j].e) & (unsigned)mask);
        /* Move j back to i unless its home k lies cyclically in (i, j]. */
        bool stay = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stay) {
            p->slot[i] = p->slot[j];
            p->slot[j].e = NULL;
            i = j;
        }
    }
    p->len--;
}

static bool pend_resize(St *st, Pend *p, int cap)
{
    Slot *old = p->slot;
    int ocap = p->cap;
    if (!(p->slot = slots_new(st, cap))) {
        p->slot = old;
        return false;
    }
    p->cap = cap;
    for (int i = 0; i < ocap; i++)
        if (old[i].e) p->slot[pend_find(p, old[i].e)] = old[i];
    slots_free(st, old, ocap);
    return true;
}

static void push_sat(Pend *p, Ent *e)
{
    e->sat_next = NULL;
    if (p->sat_tail) p->sat_tail->sat_next = e;
    else p->sat = e;
    p->sat_tail = e;
}

/* Adds c occurrences of e; a term that reaches its total is saturated. */
static bool pend_count(St *st, Pend *p, Ent *e, int c)
{
    int i = pend_find(p, e);
    if (p->slot[i].e) {
        int t = p->slot[i].c + c;
        if (t == e->count) {
            pend_del(p, i);
            push_sat(p, e);
            /* Shrink a mostly empty table, so that its memory (and the
             * walk over its slots when it is merged) follows its entries. */
            if (p->cap > 16 && 8 * p->len < p->cap && !pend_resize(st, p, p->cap / 2)) return false;
        } else {
            p->slot[i].c = t;
        }
        return true;
    }
    if (c == e->count) {
        push_sat(p, e);
        return true;
    }
    if (2 * (p->len + 1) > p->cap) {
        if (!pend_resize(st, p, p->cap * 2)) return false;
        i = pend_find(p, e);
    }
    p->slot[i].e = e;
    p->slot[i].c = c;
    p->len++;
    return true;
}

/* One more occurrence of the shared term e. */
static Pend *pend_add(St *st, Pend *acc, Ent *e)
{
    if (!acc && !(acc = pend_new(st))) return NULL;
    return pend_count(st, acc, e, 1) ? acc : NULL;
}

/* The paper's merge of floated terms (counts add up), smaller into larger. */
static Pend *pend_merge(St *st, Pend *a, Pend *b)
{
    if (!a) return b;
    if (!b) return a;
    if (a->len < b->len) {
        Pend *t = a;
        a = b;
        b = t;
    }
    for (int i = 0; i < b->cap; i++)
        if (b->slot[i].e && !pend_count(st, a, b->slot[i].e, b->slot[i].c)) return NULL;
    if (b->sat) {
        if (a->sat_tail) a->sat_tail->sat_next = b->sat;
        else a->sat = b->sat;
        a->sat_tail = b->sat_tail;
    }
    pend_free(st, b);
    return a;
}

/* Binds at position e the saturated terms of its stratum (paper s.3.3,
 * `bind`); a bound term's dependencies join the pending set here, which
 * may saturate more terms, so this repeats until nothing changes. */
static Pend *settle(St *st, Ent *e, Pend *acc)
{
    if (!acc || e->node->op == OP_LAM) return acc;
    bool arrpos = is_arr(e->node);
    Ent *keep = NULL, *keep_tail = NULL;
    while (acc->sat) {
        Ent *s = acc->sat;
        acc->sat = s->sat_next;
        if (!acc->sat) acc->sat_tail = NULL;
        bool sarr = is_arr(s->node);
        if (sarr == arrpos) {
            s->bind_next = e->binds;
            e->binds = s;
            Pend *d = s->deps;
            s->deps = NULL;
            if (!(acc = pend_merge(st, acc, d))) return NULL;
        } else if (arrpos) {
            FAIL(st, AX_ERR_BUILD, "sharing recovery: internal error: a scalar term (%s) escaped its context",
                 op_name(s->node->op));
            return NULL;
        } else {
            /* An array term saturated in scalar code waits for the next
             * array position above. */
            s->sat_next = NULL;
            if (keep_tail) keep_tail->sat_next = s;
            else keep = s;
            keep_tail = s;
        }
    }
    acc->sat = keep;
    acc->sat_tail = keep_tail;
    if (!acc->len && !acc->sat) {
        pend_free(st, acc);
        return NULL;
    }
    return acc;
}

/* The pending set of position e (its own occurrence excluded). */
static Pend *float_pos(St *st, Ent *e)
{
    Pend *acc = NULL;
    for (int i = 0; i < e->node->n; i++) {
        Ent *k = e->kids[i];
        if (!k) continue;
        if (k->parent == e && k->pidx == i) {
            /* The first occurrence: the definition is here. */
            Pend *kp = float_pos(st, k);
            if (st->failed) return NULL;
            if (shared(k)) {
                k->deps = kp;
                acc = pend_add(st, acc, k);
            } else {
                acc = pend_merge(st, acc, kp);
            }
        } else {
            acc = pend_add(st, acc, k);
        }
        if (st->failed) return NULL;
    }
    return settle(st, e, acc);
}

/* ================================================================ BIND */

/* The program owns its types: the source graph's live in the context's
 * arena, which ax_ctx_reset frees while a compiled program must go on
 * running (the same for stencil and slice descriptions).  Each distinct
 * source type is copied once. */
static const Type *own_type(St *st, const Type *t)
{
    if (!t || t->kind == TY_SCALAR || t->kind == TY_INDEX || (t->kind == TY_TUPLE && t->n == 0)) return t;
    bool added;
    int64_t *slot = hmap_insert(&st->tcopy, hmap_ptr(t), 0, &added);
    if (!slot) return nomem(st);
    if (!added) return (const Type *)(uintptr_t)*slot;
    const Type *c = ty_copy(&st->p->arena, t);
    if (!c) return nomem(st);
    /* the slot may have moved: look it up again */
    *hmap_find(&st->tcopy, hmap_ptr(t)) = (int64_t)(uintptr_t)c;
    return c;
}

static void *own_copy(St *st, const void *x, size_t n)
{
    if (!x) return NULL;
    void *c = arena_alloc(&st->p->arena, n);
    if (!c) return nomem(st);
    memcpy(c, x, n);
    return c;
}

static int new_var(St *st, const Type *t)
{
    if (!(t = own_type(st, t))) return -1;
    if (st->nv == st->capv) {
        int cap = st->capv ? st->capv * 2 : 64;
        const Type **v = ax__realloc(st->vt, sizeof *v * (size_t)cap);
        if (!v) return nomem(st), -1;
        st->vt = v;
        st->capv = cap;
    }
    st->vt[st->nv] = t;
    return st->nv++;
}

static Node *mk_var(St *st, bool arr, int id, const Type *t)
{
    if (!(t = own_type(st, t))) return NULL;
    Node *v = node_new(&st->p->arena, arr ? OP_AVAR : OP_VAR, 0, t);
    if (!v) return nomem(st);
    v->cx = st->cx;
    v->id = id;
    return v;
}

static int cmp_bind(const void *a, const void *b)
{
    const Ent *x = *(const Ent *const *)a, *y = *(const Ent *const *)b;
    if (x->height != y->height) return x->height < y->height ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static Node *build_def(St *st, Ent *e, int depth);

/* A constant (copied) or a variable (renamed). */
static Node *build_trivial(St *st, const Node *n)
{
    if (n->op == OP_CONST) {
        Node *o = node_new(&st->p->arena, OP_CONST, 0, n->type);
        if (!o) return nomem(st);
        o->cx = n->cx;
        o->c = n->c;
        return o;
    }
    int id = n->id;
    if (id < 0 || id >= st->npmap || st->pmap[id] < 0)
        return FAIL(st, AX_ERR_BUILD,
                    "sharing recovery: variable %s%d is used outside the function that binds it (a "
                    "callback's parameter must not escape it, and an array computation read by a scalar "
                    "function must not depend on that function's parameters)",
                    n->op == OP_AVAR ? "a" : "x", id);
    return mk_var(st, n->op == OP_AVAR, st->pmap[id], n->type);
}

static Node *build_kid(St *st, Ent *e, int i, int depth)
{
    Ent *k = e->kids[i];
    if (!k) return build_trivial(st, e->node->kid[i]);
    if (shared(k)) {
        if (k->var < 0)
            return FAIL(st, AX_ERR_BUILD, "sharing recovery: internal error: a shared %s is used out of scope",
                        op_name(k->node->op));
        return mk_var(st, is_arr(k->node), k->var, k->node->type);
    }
    return build_def(st, k, depth + 1);
}

/* The node at position e itself, with its operands rebuilt. */
static Node *build_node(St *st, Ent *e, int depth)
{
    const Node *n = e->node;
    Arena *ar = &st->p->arena;
    const Type *t = own_type(st, n->type);
    if (n->type && !t) return NULL;
    Node *o = node_new(ar, n->op, n->n, t);
    if (!o) return nomem(st);
    o->cx = n->cx;
    o->a = n->a;
    o->c = n->c;
    o->arr = n->arr;
    if ((n->sten && !(o->sten = own_copy(st, n->sten, sizeof *n->sten))) ||
        (n->slice && !(o->slice = own_copy(st, n->slice, sizeof *n->slice))))
        return NULL;
    int *saved = NULL;
    if (n->op == OP_LAM && n->nparam > 0) {
        /* Fresh ids for the parameters of this copy of the function. */
        o->nparam = n->nparam;
        if (!(o->param = arena_alloc(ar, sizeof *o->param * (size_t)n->nparam))) return nomem(st);
        if (!(saved = talloc(st, sizeof *saved * (size_t)n->nparam))) return NULL;
        for (int i = 0; i < n->nparam; i++) {
            const Node *q = n->param[i];
            int id = new_var(st, q->type);
            if (id < 0 || !(o->param[i] = mk_var(st, q->op == OP_AVAR, id, q->type))) return NULL;
            saved[i] = st->pmap[q->id];
            st->pmap[q->id] = id;
        }
    }
    int let_saved = -1;
    bool src_let = (n->op == OP_LET || n->op == OP_ALET) && n->n == 2;
    for (int i = 0; i < n->n; i++) {
        if (src_let && i == 1) {
            /* A let in the source graph binds its id over the body. */
            if ((o->id = new_var(st, n->kid[0]->type)) < 0) return NULL;
            let_saved = st->pmap[n->id];
            st->pmap[n->id] = o->id;
        }
        if (!(o->kid[i] = build_kid(st, e, i, depth))) return NULL;
    }
    if (src_let) st->pmap[n->id] = let_saved;
    for (int i = n->op == OP_LAM ? n->nparam - 1 : -1; i >= 0; i--) st->pmap[n->param[i]->id] = saved[i];
    return o;
}

/* The definition at position e: the lets of the terms bound here (paper
 * s.3.4, `binders`), outermost first, around the node itself. */
static Node *build_def(St *st, Ent *e, int depth)
{
    if (depth > 2 * MAX_DEPTH + 8) {
        FAIL(st, AX_ERR_BUILD, "sharing recovery: the program is nested too deeply");
        return NULL;
    }
    int nb = 0;
    for (Ent *s = e->binds; s; s = s->bind_next) nb++;
    if (nb == 0) return build_node(st, e, depth);
    Ent **bs = talloc(st, sizeof *bs * (size_t)nb);
    Node **defs = talloc(st, sizeof *defs * (size_t)nb);
    if (!bs || !defs) return NULL;
    nb = 0;
    for (Ent *s = e->binds; s; s = s->bind_next) bs[nb++] = s;
    /* A term's dependencies are lower than it: binding by height puts
     * them outside (the paper puts the deeper origin on top). */
    qsort(bs, (size_t)nb, sizeof *bs, cmp_bind);
    for (int j = 0; j < nb; j++) {
        if (!(defs[j] = build_def(st, bs[j], depth + 1))) return NULL;
        if ((bs[j]->var = new_var(st, bs[j]->node->type)) < 0) return NULL;
    }
    Node *body = build_node(st, e, depth);
    if (!body) return NULL;
    for (int j = nb - 1; j >= 0; j--) {
        Node *l = node_new(&st->p->arena, is_arr(bs[j]->node) ? OP_ALET : OP_LET, 2, body->type);
        if (!l) return nomem(st);
        l->cx = st->cx;
        l->id = bs[j]->var;
        l->kid[0] = defs[j];
        l->kid[1] = body;
        body = l;
    }
    for (int j = 0; j < nb; j++) bs[j]->var = -1;
    return body;
}

/* ================================================================ UNFOLD */

static int64_t *sz_slot(St *st, const Node *n, bool *found)
{
    return nmap_slot(st, &st->sz, &st->sz_cap, &st->sz_len, n, found);
}

/* The size of the tree unfolded from n, saturating above UNFOLD_LIMIT
 * (memoised, so it is linear in the graph however large the tree). */
static int64_t unfolded_size(St *st, const Node *n, int depth)
{
    if (trivial(n)) {
        if (n->op != OP_CONST) note_id(st, n, n->id);
        return 1;
    }
    if (depth > MAX_DEPTH) {
        FAIL(st, AX_ERR_BUILD, "sharing recovery: the program is nested more than %d levels deep", MAX_DEPTH);
        return -1;
    }
    bool found;
    int64_t *slot = sz_slot(st, n, &found);
    if (!slot) return -1;
    if (found) return *slot;
    int64_t s = 1;
    if (n->op == OP_LAM) {
        s += n->nparam;
        for (int i = 0; i < n->nparam; i++)
            if (!n->param || !n->param[i] || !note_id(st, n->param[i], n->param[i]->id)) {
                if (!st->failed) FAIL(st, AX_ERR_BUILD, "sharing recovery: a function has a missing parameter");
                return -1;
            }
    }
    if ((n->op == OP_LET || n->op == OP_ALET) && !note_id(st, n, n->id)) return -1;
    for (int i = 0; i < n->n; i++) {
        if (!n->kid[i]) {
            FAIL(st, AX_ERR_BUILD, "sharing recovery: %s has no operand %d", op_name(n->op), i);
            return -1;
        }
        int64_t k = unfolded_size(st, n->kid[i], depth + 1);
        if (k < 0) return -1;
        s += k;
        if (s > UNFOLD_LIMIT) s = UNFOLD_LIMIT + 1;
    }
    /* (the table may have grown: look the slot up again) */
    slot = sz_slot(st, n, &found);
    if (!slot) return -1;
    *slot = s;
    return s;
}

/* A copy of n per path; each copied function gets fresh parameters, so
 * binders stay unique in the tree. */
static Node *unfold(St *st, Node *n)
{
    if (n->op == OP_VAR || n->op == OP_AVAR)
        return n->id >= 0 && n->id < st->npnew && st->pnew[n->id] ? st->pnew[n->id] : n;
    if (n->op == OP_CONST) return n;
    Node *c = node_clone(&st->tmp, n);
    if (!c) return nomem(st);
    Node **saved = NULL;
    if (n->op == OP_LAM && n->nparam > 0) {
        c->param = talloc(st, sizeof *c->param * (size_t)n->nparam);
        saved = talloc(st, sizeof *saved * (size_t)n->nparam);
        if (!c->param || !saved) return NULL;
        for (int i = 0; i < n->nparam; i++) {
            Node *q = n->param[i], *nq = node_clone(&st->tmp, q);
            if (!nq) return nomem(st);
            nq->id = st->next_id++;
            c->param[i] = nq;
            saved[i] = st->pnew[q->id];
            st->pnew[q->id] = nq;
        }
    }
    bool src_let = (n->op == OP_LET || n->op == OP_ALET) && n->n == 2;
    Node *let_saved = NULL;
    for (int i = 0; i < n->n; i++) {
        if (src_let && i == 1) {
            Node *v = node_new(&st->tmp, n->op == OP_LET ? OP_VAR : OP_AVAR, 0, n->kid[0]->type);
            if (!v) return nomem(st);
            v->cx = n->cx;
            v->id = c->id = st->next_id++;
            let_saved = st->pnew[n->id];
            st->pnew[n->id] = v;
        }
        if (!(c->kid[i] = unfold(st, n->kid[i]))) return NULL;
    }
    if (src_let) st->pnew[n->id] = let_saved;
    for (int i = n->op == OP_LAM ? n->nparam - 1 : -1; i >= 0; i--) st->pnew[n->param[i]->id] = saved[i];
    return c;
}

static Node *unfold_graph(St *st, Node *root)
{
    int64_t size = unfolded_size(st, root, 0);
    if (size < 0) return NULL;
    if (size > UNFOLD_LIMIT)
        return FAIL(st, AX_ERR_NOMEM,
                    "sharing recovery: without sharing the program unfolds to more than %lld nodes",
                    (long long)UNFOLD_LIMIT);
    st->npnew = st->max_id + 1;
    st->next_id = st->npnew;
    if (!(st->pnew = ax__calloc((size_t)st->npnew + 1, sizeof *st->pnew))) return nomem(st);
    return unfold(st, root);
}

/* ================================================================ driver */

static void st_free(St *st)
{
    free(st->occ);
    free(st->pmap);
    free(st->vt);
    free(st->sz);
    free(st->fb);
    free(st->pnew);
    free(st->hb);
    free(st->cm);
    free(st->cp);
    free(st->rm);
    free(st->fresh);
    hmap_free(&st->tcopy);
    arena_free(&st->tmp);
}

Program *sharing_recover(ax_ctx *cx, Node *root, bool sharing)
{
    if (!cx) return NULL;
    if (!root) return ctx_error(cx, AX_ERR_ARG, "sharing recovery: the computation is NULL");
    if (!is_arr(root)) return ctx_error(cx, AX_ERR_ARG, "sharing recovery: the root is not an array computation");
    St st;
    memset(&st, 0, sizeof st);
    st.cx = cx;
    st.max_id = -1;
    arena_init(&st.tmp);
    Program *p = ax__calloc(1, sizeof *p);
    if (!p) return ctx_error(cx, AX_ERR_NOMEM, "sharing recovery: out of memory");
    arena_init(&p->arena);
    arena_set_budget(&p->arena, &cx->compile_mem), arena_set_budget(&st.tmp, &cx->compile_mem);
    st.p = p;

    Node *src = sharing ? root : unfold_graph(&st, root);
    Ent *re = NULL;
    Node *out = NULL;
    if (!st.failed) re = prune(&st, src, 0, 0, NULL, -1, 0);
    if (!st.failed && st.nfresh_ids > 0) {
        /* The copies' variables, numbered above the source's. */
        if (st.max_id > INT_MAX - 1 - st.nfresh_ids) {
            FAIL(&st, AX_ERR_NOMEM, "sharing recovery: too many variables");
        } else {
            int base = st.max_id + 1;
            for (int i = 0; i < st.nfresh; i++) st.fresh[i]->id = base - 1 - st.fresh[i]->id;
            st.max_id = base + st.nfresh_ids - 1;
        }
    }
    if (!st.failed && re) {
        Pend *rest = float_pos(&st, re);
        if (!st.failed && rest)
            FAIL(&st, AX_ERR_BUILD, "sharing recovery: internal error: %d shared terms were never bound",
                 rest->len + (rest->sat != NULL));
    }
    if (!st.failed) {
        st.npmap = st.max_id + 1;
        if (!(st.pmap = ax__malloc(sizeof *st.pmap * (size_t)(st.npmap + 1)))) nomem(&st);
        else for (int i = 0; i < st.npmap; i++) st.pmap[i] = -1;
    }
    if (!st.failed) out = re ? build_def(&st, re, 0) : build_trivial(&st, src);
    if (!st.failed && out) {
        p->root = out;
        p->nvars = st.nv;
        p->vartype = arena_alloc(&p->arena, sizeof *p->vartype * (size_t)(st.nv + 1));
        if (!p->vartype) nomem(&st);
        else if (st.nv) memcpy(p->vartype, st.vt, sizeof *p->vartype * (size_t)st.nv);
    }
    st_free(&st);
    if (st.failed || !out) {
        program_free(p);
        return NULL;
    }
    return p;
}
