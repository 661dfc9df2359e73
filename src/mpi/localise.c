/*
 * Local forms: each operation of the normalised program made into the
 * operation a rank runs over its own rows, with the helper kernels its
 * distributed skeleton needs (mpi_int.h, MOp).  Compile time only; the
 * executor (exec.c) decides at run time where the rows are and binds the
 * fresh variables the local forms read.
 *
 * The iteration.  An operation computes (or, a consumer, reads) the
 * elements of an iteration space, distributed by its outer dimension: a
 * rank computes rows lo..hi.  Its local form iterates over the local
 * extents (hi - lo rows) and makes the index global where the code uses
 * it: an element function \ix -> body becomes
 *     \ixl -> let ix = ix(ixl[0] + off, ixl[1], ...) in body'
 * and a linear-index form \i -> body becomes \il -> let i = il + offlin in
 * body', off and offlin read from the operation's meta array (a small
 * [i64] the executor fills per run: the block's first row and position,
 * its local extents, and the global extents of every array the code
 * reads).  Nothing rank- or size-specific is compiled in: every rank and
 * every run shares one compiled kernel.
 *
 * The reads.  Each array that the operation's code reads is renamed to a
 * fresh variable per kind of read (RdCls), which the executor binds:
 *  - a read at the iteration's own row (A[ix], A[ix(ix[0], e, ...)], or
 *    A's element at the iteration's linear position) is row-local: bound
 *    to the rows lo..hi of A (A's own block when the blocks line up, else
 *    the rows moved there), read at the local index (ixl[0] in place of
 *    ix[0]; the CPU backend still sees a read at its loop's own index, so
 *    its fused loops stay unchecked and vectorised);
 *  - ax_shape reads the meta array (the global extents);
 *  - a read at a computed index on the element code's spine (evaluated
 *    once per element, whatever the data: not under a conditional, a
 *    while loop or the right of && and ||), in an iteration of rank at
 *    most the array's, is fetched: an inspector kernel computes the
 *    indices of the rank's elements, a request/reply exchange brings the
 *    values (comm.c cm_fetch), and the read becomes a row-local read of
 *    them (the inspector/executor scheme of irregular distributed codes);
 *  - any other read is of the whole array (gathered when distributed).
 *
 * Consumers' functions (a fold's operator, a filter's predicate) take no
 * index: their reads are of whole arrays.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "backend/cpu/cg.h"
#include <stdlib.h>
#include <string.h>

typedef struct L {
    Mk k;
    ax_mpi_program *pr;
    Node **box;                 /* the container's members */
    int nbox, capbox;
    int *ren;                   /* per variable id: its new id in a copy, or -1 */
    int nren;
} L;

/* A fetched read: the original node and the variable of its values. */
typedef struct FRead {
    const Node *at;
    int var;
    const Node **chain;         /* the lets on the spine around it, outermost first */
    int nchain;
} FRead;

/* The state of one rewrite (a function body or an expression). */
typedef struct RW {
    L *l;
    MOp *o;
    bool elem;                  /* element code over the iteration (index params known) */
    int ix[2], nix;             /* the original index parameters */
    int il;                     /* the original linear parameter, or -1 */
    int ixl;                    /* the local index variable (elem, irank >= 1), or -1 */
    int ill;                    /* the local linear variable, or -1 */
    FRead *fr;                  /* reads replaced by fetched values */
    int nfr;
    int vparam;                 /* a consumer function's parameter that holds its
                                   element's own position (o->iota), or -1 */
} RW;

static bool failed(L *l) { return l->k.failed; }

static void box(L *l, Node *x)
{
    if (!x || failed(l)) return;
    if (l->nbox == l->capbox) {
        int cap = l->capbox ? 2 * l->capbox : 16;
        Node **b = ax__realloc(l->box, sizeof *b * (size_t)cap);
        if (!b) {
            l->k.failed = true;
            return;
        }
        l->box = b;
        l->capbox = cap;
    }
    l->box[l->nbox++] = x;
}

/* ------------------------------------------------------------ operations and reads */

static MOp *new_op(L *l, const Node *x, MKind kind)
{
    ax_mpi_program *pr = l->pr;
    if (pr->nops == pr->capops) {
        int cap = pr->capops ? 2 * pr->capops : 16;
        MOp *v = ax__realloc(pr->ops, sizeof *v * (size_t)cap);
        if (!v) return l->k.failed = true, NULL;
        pr->ops = v;
        pr->capops = cap;
    }
    MOp *o = &pr->ops[pr->nops];
    memset(o, 0, sizeof *o);
    o->x = x;
    o->index = pr->nops;
    o->name = host_api_name(x->op);
    o->kind = kind;
    o->main = -1;
    o->ck_a = o->ck_b = o->fix_in = o->carry = o->own_d = o->own_t = o->own_v = o->pinit = -1;
    o->meta = mk_fresh(&l->k, mk_tarray(&l->k, ty_i64(), 1));
    o->iota = AX_NSCALAR;
    o->nmeta = META_SHAPE + AX_MAX_RANK;
    bool added;
    int64_t *slot = hmap_insert(&pr->opmap, hmap_ptr(x), pr->nops, &added);
    if (!slot) return l->k.failed = true, NULL;
    pr->nops++;
    return o;
}

MOp *mx_op(const ax_mpi_program *pr, const Node *x)
{
    int64_t *v = hmap_find(&pr->opmap, hmap_ptr(x));
    return v ? &pr->ops[*v] : NULL;
}

/* The read of array reference a (an AVAR, an APROJ of one, a USE) of
 * class cls: its index in o->rd (one per array and class). */
static int add_read(L *l, MOp *o, const Node *a, RdCls cls)
{
    int id = -1, off = 0;
    const Node *use = NULL;
    if (!cg_free_ident(a, &id, &off, &use) || a->type->kind != TY_ARRAY) {
        l->k.failed = true;
        return -1;
    }
    for (int i = 0; i < o->nrd; i++) {
        MRead *r = &o->rd[i];
        if (r->cls == cls && (use ? r->use == use : (!r->use && r->id == id && r->off == off))) return i;
    }
    if (o->nrd == o->caprd) {
        int cap = o->caprd ? 2 * o->caprd : 8;
        MRead *v = ax__realloc(o->rd, sizeof *v * (size_t)cap);
        if (!v) return l->k.failed = true, -1;
        o->rd = v;
        o->caprd = cap;
    }
    MRead *r = &o->rd[o->nrd];
    memset(r, 0, sizeof *r);
    r->id = use ? -1 : id;
    r->off = off;
    r->use = use;
    r->cls = cls;
    r->type = a->type;
    r->kid = -1;
    r->meta = o->nmeta;
    o->nmeta += a->type->rank;
    r->var = cls == RD_NONE || cls == RD_SRC ? -1 : mk_fresh(&l->k, a->type);
    return o->nrd++;
}

/* A fresh variable read in the local form in place of the array. */
static Node *read_ref(L *l, MOp *o, const Node *a, RdCls cls)
{
    int i = add_read(l, o, a, cls);
    return i < 0 ? NULL : mk_avar(&l->k, o->rd[i].var, a->type);
}

/* An operand (kid i of x, a variable) read by the operation itself. */
static Node *operand(L *l, MOp *o, int kid, RdCls cls)
{
    const Node *a = o->x->kid[kid];
    int i = add_read(l, o, a, cls);
    if (i < 0) return NULL;
    if (o->nopd == MAXOPD) return l->k.failed = true, NULL;
    o->rd[i].kid = kid;
    o->opd[o->nopd] = i;
    o->opdkid[o->nopd++] = kid;
    if (o->main < 0 && (cls == RD_ROW || cls == RD_HALO)) o->main = i;
    return mk_avar(&l->k, o->rd[i].var, a->type);
}

static Node *meta_at(L *l, MOp *o, int k)
{
    return mk_lindex(&l->k, mk_avar(&l->k, o->meta, mk_tarray(&l->k, ty_i64(), 1)), mk_i64(&l->k, k));
}

/* The iteration's local extents (from the meta array). */
static Node *local_shape(L *l, MOp *o)
{
    Node *c[AX_MAX_RANK];
    for (int d = 0; d < o->irank; d++) c[d] = meta_at(l, o, META_SHAPE + d);
    return mk_ixcons(&l->k, o->irank, c);
}

/* ------------------------------------------------------------ copying with the reads renamed */

static bool is_ix(const RW *w, const Node *e)
{
    if (!w->elem || e->op != OP_VAR) return false;
    for (int i = 0; i < w->nix; i++)
        if (e->id == w->ix[i]) return true;
    return false;
}

static bool is_ixget0(const RW *w, const Node *e)
{
    return e->op == OP_IXGET && e->a == 0 && is_ix(w, e->kid[0]);
}

static bool is_il(const RW *w, const Node *e)
{
    return w->elem && w->il >= 0 && e->op == OP_VAR && e->id == w->il;
}

/* Is an index into an array of rank ra the iteration's own row?  1: the
 * iteration's whole index; 2: an index whose component 0 is the
 * iteration's component 0; 3: ix(i) with i the linear index of a rank-1
 * iteration. */
static int aligned_ix(const RW *w, const Node *e, int ra)
{
    if (!w->elem || w->o->irank < 1 || ra < 1) return 0;
    if (is_ix(w, e) && ra == w->o->irank) return 1;
    if (e->op == OP_IXCONS && e->n == ra) {
        if (is_ixget0(w, e->kid[0])) return 2;
        if (w->o->irank == 1 && is_il(w, e->kid[0])) return 3;
    }
    return 0;
}

/* Is a position (ax_at_linear) the iteration's own?  1: the linear
 * parameter; 2: component 0 of a rank-1 iteration's index. */
static int aligned_lin(const RW *w, const Node *e)
{
    if (!w->elem || w->o->irank < 1) return 0;
    if (is_il(w, e)) return 1;
    if (w->o->irank == 1 && is_ixget0(w, e)) return 2;
    return 0;
}

static Node *rw(RW *w, const Node *e);

static Node *local_ix(RW *w)
{
    L *l = w->l;
    return mk_var(&l->k, w->ixl, mk_tindex(&l->k, w->o->irank));
}

static Node *local_ixget0(RW *w) { return mk_ixget(&w->l->k, 0, local_ix(w)); }

static const FRead *fetched(const RW *w, const Node *e)
{
    for (int i = 0; i < w->nfr; i++)
        if (w->fr[i].at == e) return &w->fr[i];
    return NULL;
}

/* A read of fetched values: at the iteration's own index. */
static Node *fetched_read(RW *w, const FRead *f, const Type *elt)
{
    L *l = w->l;
    const Type *ft = mk_tarray(&l->k, elt, w->o->irank);
    Node *ix = w->o->irank > 0 ? local_ix(w) : mk_ixcons(&l->k, 0, NULL);
    return mk_index(&l->k, mk_avar(&l->k, f->var, ft), ix);
}

/* Is e the element's own position, when the element is its position (a
 * filter of the indices of an array: o->iota)?  e is the parameter, or
 * it converted to i64. */
static bool is_vpos(const RW *w, const Node *e)
{
    if (w->vparam < 0) return false;
    if (e->op == OP_PRIM && e->a == P_CVT && e->n == 1 && e->type->kind == TY_SCALAR && e->type->s == AX_I64) e = e->kid[0];
    return e->op == OP_VAR && e->id == w->vparam;
}

static Node *rw_read(RW *w, const Node *e)
{
    L *l = w->l;
    MOp *o = w->o;
    const Node *a = e->kid[0];
    const FRead *f = fetched(w, e);
    if (f) return fetched_read(w, f, e->type);
    if (e->op == OP_SHAPE) {
        int i = add_read(l, o, a, RD_NONE);
        if (i < 0) return NULL;
        Node *c[AX_MAX_RANK];
        for (int d = 0; d < a->type->rank; d++) c[d] = meta_at(l, o, o->rd[i].meta + d);
        return mk_ixcons(&l->k, a->type->rank, c);
    }
    if (w->vparam >= 0 && (e->op == OP_LINDEX || a->type->rank == 1)) {
        /* the element's position, as a position of the iteration's block:
         * position - (the block's first position) */
        const Node *ix = e->kid[1], *pos = e->op == OP_LINDEX ? ix : ix->op == OP_IXCONS && ix->n == 1 ? ix->kid[0] : NULL;
        if (pos && is_vpos(w, pos)) {
            Node *lp = mk_prim(&l->k, P_SUB, ty_i64(), rw(w, pos), meta_at(l, o, META_OFFLIN));
            if (e->op == OP_LINDEX) return mk_lindex(&l->k, read_ref(l, o, a, RD_LIN), lp);
            return mk_index(&l->k, read_ref(l, o, a, RD_LIN), mk_ixcons(&l->k, 1, &lp));
        }
    }
    if (e->op == OP_INDEX) {
        const Node *ix = e->kid[1];
        int al = aligned_ix(w, ix, a->type->rank);
        if (al == 1) return mk_index(&l->k, read_ref(l, o, a, RD_ROW), local_ix(w));
        if (al) {
            Node *c[AX_MAX_RANK];
            c[0] = al == 2 ? local_ixget0(w) : mk_var(&l->k, w->ill, ty_i64());
            for (int d = 1; d < ix->n; d++) c[d] = rw(w, ix->kid[d]);
            return mk_index(&l->k, read_ref(l, o, a, RD_ROW), mk_ixcons(&l->k, ix->n, c));
        }
        return mk_index(&l->k, read_ref(l, o, a, RD_FULL), rw(w, ix));
    }
    /* OP_LINDEX */
    int al = aligned_lin(w, e->kid[1]);
    if (al == 1) return mk_lindex(&l->k, read_ref(l, o, a, RD_LIN), mk_var(&l->k, w->ill, ty_i64()));
    if (al == 2) return mk_lindex(&l->k, read_ref(l, o, a, RD_LIN), local_ixget0(w));
    return mk_lindex(&l->k, read_ref(l, o, a, RD_FULL), rw(w, e->kid[1]));
}

static int ren(const L *l, int id) { return id >= 0 && id < l->nren && l->ren[id] >= 0 ? l->ren[id] : id; }

/* A copy of scalar code e with its reads renamed (see the header). */
static Node *rw(RW *w, const Node *e)
{
    L *l = w->l;
    if (!e || failed(l)) return l->k.failed = true, NULL;
    if (e->op == OP_INDEX || e->op == OP_LINDEX || e->op == OP_SHAPE) return rw_read(w, e);
    if (op_is_array(e->op)) return l->k.failed = true, NULL;   /* (scalar code reads arrays only by reference) */
    if (e->op == OP_IXGET && is_ix(w, e->kid[0]) && w->o->irank > 0) {
        /* a component of the iteration's index: the local one (only the
         * first differs, by the block's first row), so that the code
         * generator still sees reads at the loop's own index components */
        Node *c = mk_ixget(&l->k, e->a, local_ix(w));
        return e->a == 0 ? mk_prim(&l->k, P_ADD, ty_i64(), c, meta_at(l, w->o, META_OFF)) : c;
    }
    Node *y = node_clone(&l->k.p->arena, e);
    if (!y) return l->k.failed = true, NULL;
    if (e->op == OP_VAR || e->op == OP_LET) y->id = ren(l, e->id);
    if (e->op == OP_LAM) {
        Node **ps = arena_alloc(&l->k.p->arena, sizeof *ps * (size_t)(e->nparam + 1));
        if (!ps) return l->k.failed = true, NULL;
        for (int i = 0; i < e->nparam; i++)
            if (!(ps[i] = mk_var(&l->k, ren(l, e->param[i]->id), e->param[i]->type))) return NULL;
        y->param = ps;
    }
    for (int i = 0; i < e->n; i++)
        if (e->kid[i] && !(y->kid[i] = rw(w, e->kid[i]))) return NULL;
    return y;
}

/* A function without index (a fold's operator, a map's function, a
 * thunk's expression): every read of a whole array. */
static Node *rw_func(L *l, MOp *o, const Node *e)
{
    RW w = {l, o, false, {-1, -1}, 0, -1, -1, -1, NULL, 0, -1};
    return rw(&w, e);
}

/* ------------------------------------------------------------ fetches */

typedef struct Chain {
    const Node *v[256];
    int n;
} Chain;

static bool add_fetch(L *l, RW *w, const Node *e, const Chain *ch)
{
    FRead *fr = ax__realloc(w->fr, sizeof *fr * (size_t)(w->nfr + 1));
    if (!fr) return l->k.failed = true, false;
    w->fr = fr;
    FRead *f = &fr[w->nfr++];
    f->at = e;
    f->var = -1;
    f->nchain = ch->n;
    f->chain = arena_alloc(&l->k.p->arena, sizeof *f->chain * (size_t)(ch->n + 1));
    if (!f->chain) return l->k.failed = true, false;
    if (ch->n) memcpy(f->chain, ch->v, sizeof *f->chain * (size_t)ch->n);
    return true;
}

/* The reads at computed indices on e's spine (see the header): those of
 * arrays of rank at least the iteration's; ch: the lets around e. */
static void spine(L *l, RW *w, const Node *e, Chain *ch, int depth)
{
    if (!e || failed(l) || depth > 10000) return;
    switch (e->op) {
    case OP_LET:
        spine(l, w, e->kid[0], ch, depth + 1);
        if (ch->n == (int)(sizeof ch->v / sizeof *ch->v)) return;
        ch->v[ch->n++] = e;
        spine(l, w, e->kid[1], ch, depth + 1);
        ch->n--;
        return;
    case OP_COND:
        spine(l, w, e->kid[0], ch, depth + 1);
        return;
    case OP_WHILE:
        spine(l, w, e->kid[2], ch, depth + 1);
        return;
    case OP_LAM:
        return;
    case OP_PRIM:
        if (e->a == P_AND || e->a == P_OR) {
            spine(l, w, e->kid[0], ch, depth + 1);
            return;
        }
        break;
    case OP_INDEX:
    case OP_LINDEX: {
        spine(l, w, e->kid[1], ch, depth + 1);
        const Node *a = e->kid[0];
        bool al = e->op == OP_INDEX ? aligned_ix(w, e->kid[1], a->type->rank) != 0 : aligned_lin(w, e->kid[1]) != 0;
        if (!al && a->type->rank >= w->o->irank) add_fetch(l, w, e, ch);
        return;
    }
    case OP_SHAPE:
        return;
    default:
        break;
    }
    for (int i = 0; i < e->n; i++) spine(l, w, e->kid[i], ch, depth + 1);
}

/* The global index of the iteration from the local one (ixl). */
static Node *global_ix(RW *w)
{
    L *l = w->l;
    MOp *o = w->o;
    Node *c[AX_MAX_RANK];
    for (int d = 0; d < o->irank; d++) {
        Node *g = mk_ixget(&l->k, d, local_ix(w));
        c[d] = d == 0 ? mk_prim(&l->k, P_ADD, ty_i64(), g, meta_at(l, o, META_OFF)) : g;
    }
    return mk_ixcons(&l->k, o->irank, c);
}

/* \ix -> body  as  \ixl -> let ix = global ixl in body'  (the local index
 * variable is fresh: w->ixl). */
static Node *rw_ixlam(RW *w, const Node *f)
{
    L *l = w->l;
    MOp *o = w->o;
    const Type *ti = mk_tindex(&l->k, o->irank);
    if (!f || f->op != OP_LAM || f->nparam != 1) return l->k.failed = true, NULL;
    if (o->irank == 0) {
        int id = f->param[0]->id;
        return mk_lam(&l->k, 1, &id, &ti, rw(w, f->kid[0]));
    }
    Node *body = mk_let(&l->k, f->param[0]->id, global_ix(w), rw(w, f->kid[0]));
    return mk_lam(&l->k, 1, &w->ixl, &ti, body);
}

/* \i -> body  as  \il -> let i = il + offlin in body' */
static Node *rw_linlam(RW *w, const Node *f)
{
    L *l = w->l;
    const Type *t64 = ty_i64();
    if (!f || f->op != OP_LAM || f->nparam != 1) return l->k.failed = true, NULL;
    Node *g = mk_prim(&l->k, P_ADD, t64, mk_var(&l->k, w->ill, t64), meta_at(l, w->o, META_OFFLIN));
    Node *body = mk_let(&l->k, f->param[0]->id, g, rw(w, f->kid[0]));
    return mk_lam(&l->k, 1, &w->ill, &t64, body);
}

/* An element-code rewrite over o's iteration, params: the index
 * parameters (and linear one) of the functions it will copy. */
static void rw_init(RW *w, L *l, MOp *o, int ix0, int ix1, int il)
{
    memset(w, 0, sizeof *w);
    w->l = l;
    w->o = o;
    w->elem = true;
    w->ix[0] = ix0;
    w->ix[1] = ix1;
    w->nix = ix1 >= 0 ? 2 : ix0 >= 0 ? 1 : 0;
    w->il = il;
    w->ixl = o->irank > 0 ? mk_fresh(&l->k, mk_tindex(&l->k, o->irank)) : -1;
    w->ill = mk_fresh(&l->k, ty_i64());
    w->vparam = -1;
}

/* Is d (a DELAYED of rank 1) the positions themselves, converted to an
 * integer type (canny's filter of the pixels by index): its scalar type,
 * else AX_NSCALAR. */
static ax_scalar iota_type(const Node *d)
{
    if (d->op != OP_DELAYED || d->type->rank != 1) return AX_NSCALAR;
    const Node *fl = d->kid[2], *b = fl->kid[0];
    if (b->op == OP_PRIM && b->a == P_CVT && b->n == 1) b = b->kid[0];
    if (b->op != OP_VAR || b->id != fl->param[0]->id || d->type->elt->kind != TY_SCALAR) return AX_NSCALAR;
    ax_scalar t = d->type->elt->s;
    return sc_is_int(t) ? t : AX_NSCALAR;
}

/* Finds the fetched reads of body (an element function's, index param
 * known to w) and makes o's inspector: a generate over the iteration of
 * their indices (a tuple when several). */
static void make_fetches(RW *w, const Node *body)
{
    L *l = w->l;
    MOp *o = w->o;
    Chain ch;
    ch.n = 0;
    spine(l, w, body, &ch, 0);
    if (failed(l) || w->nfr == 0) return;
    Node **comp = arena_alloc(&l->k.p->arena, sizeof *comp * (size_t)w->nfr);
    o->fe = ax__calloc((size_t)w->nfr, sizeof *o->fe);
    if (!comp || !o->fe) {
        l->k.failed = true;
        return;
    }
    /* the inspector copies the lets around each read with fresh names
     * (several chains in one function); its reads are row-local or whole */
    RW wi = *w;
    wi.fr = NULL;
    wi.nfr = 0;
    int leaf = 0;
    for (int i = 0; i < w->nfr && !failed(l); i++) {
        FRead *f = &w->fr[i];
        const Node *at = f->at;
        Node **bound = arena_alloc(&l->k.p->arena, sizeof *bound * (size_t)(f->nchain + 1));
        if (!bound) {
            l->k.failed = true;
            break;
        }
        for (int c = 0; c < f->nchain; c++) {
            const Node *let = f->chain[c];
            if (let->id >= 0 && let->id < l->nren) l->ren[let->id] = mk_fresh(&l->k, let->kid[0]->type);
        }
        for (int c = 0; c < f->nchain; c++) bound[c] = rw(&wi, f->chain[c]->kid[0]);
        Node *e = rw(&wi, at->kid[1]);
        for (int c = f->nchain - 1; c >= 0; c--) e = mk_let(&l->k, ren(l, f->chain[c]->id), bound[c], e);
        for (int c = 0; c < f->nchain; c++)
            if (f->chain[c]->id >= 0 && f->chain[c]->id < l->nren) l->ren[f->chain[c]->id] = -1;
        comp[i] = e;
        MFetch *fe = &o->fe[o->nfe++];
        fe->src = add_read(l, o, at->kid[0], RD_SRC);
        fe->lin = at->op == OP_LINDEX;
        fe->leaf = leaf;
        fe->site = at->op == OP_LINDEX ? "ax_at_linear" : "ax_at";
        leaf += e ? e->type->width : 0;
        f->var = fe->var = mk_fresh(&l->k, mk_tarray(&l->k, at->type, o->irank));
    }
    free(wi.fr);
    if (failed(l)) return;
    const Type *ti = mk_tindex(&l->k, o->irank);
    Node *tup = mk_tuple(&l->k, w->nfr, comp);
    if (!tup) return;
    Node *gen = mk_node(&l->k, OP_GENERATE, 2, mk_tarray(&l->k, tup->type, o->irank));
    if (!gen) return;
    gen->kid[0] = local_shape(l, o);
    Node *gb = o->irank > 0 ? mk_let(&l->k, w->ix[0], global_ix(w), tup) : tup;
    int id = o->irank > 0 ? w->ixl : w->ix[0];
    gen->kid[1] = mk_lam(&l->k, 1, &id, &ti, gb);
    o->insp = gen;
    box(l, gen);
}

/* ------------------------------------------------------------ consumers' inputs */

/* A consumer's main input (kid): a variable read at the iteration's rows,
 * or a DELAYED made local (its extent from the meta array, its forms over
 * the local block, its fetched reads).  Sets o's iteration. */
static Node *main_input(L *l, MOp *o, int kid)
{
    const Node *d = o->x->kid[kid];
    o->irank = d->type->rank;
    if (d->op != OP_DELAYED) {
        o->ishape = IS_OPD0;
        return operand(l, o, kid, RD_ROW);
    }
    o->ishape = IS_EXP;
    o->gshape = rw_func(l, o, d->kid[0]);
    const Node *fi = d->kid[1], *fl = d->kid[2];
    RW w;
    rw_init(&w, l, o, fi->param[0]->id, -1, fl->param[0]->id);
    make_fetches(&w, fi->kid[0]);
    Node *y = mk_node(&l->k, OP_DELAYED, 3, d->type);
    if (!y) return NULL;
    y->kid[0] = local_shape(l, o);
    y->kid[1] = rw_ixlam(&w, fi);
    if (w.nfr == 0) {
        y->kid[2] = rw_linlam(&w, fl);
    } else {
        /* fetched values are read by index: the linear form goes through
         * the index form (\il -> let ixl = fromLinear sh il in ...) */
        const Type *ti = mk_tindex(&l->k, o->irank), *t64 = ty_i64();
        Node *sh = local_shape(l, o), *args[2];
        args[0] = sh;
        args[1] = mk_var(&l->k, w.ill, t64);
        Node *fl2 = mk_node(&l->k, OP_PRIM, 2, ti);
        if (!fl2) return NULL;
        fl2->a = P_FROMLIN;
        fl2->kid[0] = args[0];
        fl2->kid[1] = args[1];
        int ixl2 = mk_fresh(&l->k, ti), keep = w.ixl;
        w.ixl = ixl2;
        Node *inner = rw_ixlam(&w, fi);   /* \ixl2 -> let ix = .. in body */
        w.ixl = keep;
        if (!inner) return NULL;
        y->kid[2] = mk_lam(&l->k, 1, &w.ill, &t64, mk_let(&l->k, ixl2, fl2, inner->kid[0]));
    }
    free(w.fr);
    return failed(l) ? NULL : y;
}

/* ------------------------------------------------------------ operations */

static Node *clone_op(L *l, const Node *x, Op op, int n)
{
    Node *y = mk_node(&l->k, op, n, x->type);
    if (y) {
        y->sten = x->sten;
        y->slice = x->slice;
    }
    return y;
}

/* generate, backpermute, transform, map, zipWith */
static void elem_op(L *l, MOp *o)
{
    const Node *x = o->x;
    o->irank = x->type->rank;
    if (x->op == OP_MAP || x->op == OP_ZIPWITH) {
        o->ishape = IS_OPDS;
        Node *y = clone_op(l, x, x->op, x->n);
        if (!y) return;
        y->kid[0] = rw_func(l, o, x->kid[0]);
        for (int i = 1; i < x->n; i++) y->kid[i] = operand(l, o, i, RD_ROW);
        o->lx = y;
        box(l, y);
        return;
    }
    o->ishape = IS_EXP;
    o->gshape = rw_func(l, o, x->kid[0]);
    const Node *f = x->kid[1];
    RW w;
    rw_init(&w, l, o, f->param[0]->id, -1, -1);
    if (x->op == OP_GENERATE) {
        make_fetches(&w, f->kid[0]);
        Node *y = clone_op(l, x, OP_GENERATE, 2);
        if (y) {
            y->kid[0] = local_shape(l, o);
            y->kid[1] = rw_ixlam(&w, f);
        }
        o->lx = y;
        box(l, y);
        free(w.fr);
        return;
    }
    /* backpermute / transform: the source read at p(ix) */
    bool tr = x->op == OP_TRANSFORM;
    int src = tr ? 3 : 2;
    const Node *a = x->kid[src], *pb = f->kid[0];
    int ra = a->type->rank;
    int al = aligned_ix(&w, pb, ra);
    if (!al && o->irank <= ra) {
        /* fetched: the inspector computes p(ix); the result is the values */
        o->kind = MK_FETCHBP;
        o->fe = ax__calloc(1, sizeof *o->fe);
        if (!o->fe) {
            l->k.failed = true;
            return;
        }
        MFetch *fe = &o->fe[o->nfe++];
        int ri = add_read(l, o, a, RD_SRC);
        if (ri < 0) return;
        o->rd[ri].kid = src;
        o->opd[o->nopd] = ri;
        o->opdkid[o->nopd++] = src;
        fe->src = ri;
        fe->leaf = 0;
        fe->site = "ax_backpermute";
        fe->var = mk_fresh(&l->k, mk_tarray(&l->k, a->type->elt, o->irank));
        Node *gen = mk_node(&l->k, OP_GENERATE, 2, mk_tarray(&l->k, pb->type, o->irank));
        if (!gen) return;
        gen->kid[0] = local_shape(l, o);
        gen->kid[1] = rw_ixlam(&w, f);
        o->insp = gen;
        box(l, gen);
        if (tr) {
            Node *y = mk_node(&l->k, OP_MAP, 2, x->type);
            if (!y) return;
            y->kid[0] = rw_func(l, o, x->kid[2]);
            y->kid[1] = mk_avar(&l->k, fe->var, mk_tarray(&l->k, a->type->elt, o->irank));
            o->lx = y;
            box(l, y);
        }
        return;
    }
    Node *y = clone_op(l, x, x->op, x->n);
    if (!y) return;
    y->kid[0] = local_shape(l, o);
    if (al) {
        /* a row-local source: p(ix) with its component 0 the local row */
        Node *pl;
        const Type *ti = mk_tindex(&l->k, o->irank);
        if (al == 1) {
            pl = local_ix(&w);
        } else {
            Node *c[AX_MAX_RANK];
            c[0] = local_ixget0(&w);
            for (int d = 1; d < pb->n; d++) c[d] = rw(&w, pb->kid[d]);
            pl = mk_ixcons(&l->k, pb->n, c);
        }
        Node *body = mk_let(&l->k, f->param[0]->id, global_ix(&w), pl);
        y->kid[1] = mk_lam(&l->k, 1, &w.ixl, &ti, body);
        y->kid[src] = operand(l, o, src, RD_ROW);
    } else {
        y->kid[1] = rw_ixlam(&w, f);
        y->kid[src] = operand(l, o, src, RD_FULL);
    }
    if (tr) y->kid[2] = rw_func(l, o, x->kid[2]);
    o->lx = y;
    box(l, y);
    free(w.fr);
}

/* A zipWith of f over two rank-0 arrays (variables ck_a, ck_b): the
 * combine of two partial results. */
static void make_combine(L *l, MOp *o, const Node *f, const Type *elt)
{
    const Type *t0 = mk_tarray(&l->k, elt, 0);
    o->ck_a = mk_fresh(&l->k, t0);
    o->ck_b = mk_fresh(&l->k, t0);
    Node *y = mk_node(&l->k, OP_ZIPWITH, 3, t0);
    if (!y) return;
    y->kid[0] = rw_func(l, o, f);
    y->kid[1] = mk_avar(&l->k, o->ck_a, t0);
    y->kid[2] = mk_avar(&l->k, o->ck_b, t0);
    o->ck = y;
    box(l, y);
    /* a built-in MPI operator: every leaf combined by one commutative
     * primitive, all of one scalar type (float min and max excepted:
     * their NaN rules are axle's, not MPI's) */
    Prim ops[64];
    int w = elt->width;
    if (w < 1 || w > 64 || !cg_lam_comm(f, ops)) return;
    ax_scalar s = ty_leaf(elt, 0);
    for (int i = 0; i < w; i++)
        if (ops[i] != ops[0] || ty_leaf(elt, i) != s) return;
    if (sc_is_float(s) && ops[0] != P_ADD && ops[0] != P_MUL) return;
    o->builtin = true;
    o->redprim = ops[0];
}

/* A rank-0 generate of expression e (a fold's z). */
static Node *gen0(L *l, MOp *o, const Node *e)
{
    const Type *ti = mk_tindex(&l->k, 0);
    int v = mk_fresh(&l->k, ti);
    Node *y = mk_node(&l->k, OP_GENERATE, 2, mk_tarray(&l->k, e->type, 0));
    if (!y) return NULL;
    y->kid[0] = mk_ixcons(&l->k, 0, NULL);
    y->kid[1] = mk_lam(&l->k, 1, &v, &ti, rw_func(l, o, e));
    box(l, y);
    return y;
}

/* f applied to a and b: let p0 = a in let p1 = b in body */
static Node *apply2(L *l, MOp *o, const Node *f, Node *a, Node *b)
{
    return mk_let(&l->k, f->param[0]->id, a, mk_let(&l->k, f->param[1]->id, b, rw_func(l, o, f->kid[0])));
}

/* fold, fold1, foldSeg, fold1Seg */
static void fold_op(L *l, MOp *o)
{
    const Node *x = o->x;
    bool z = x->op == OP_FOLD || x->op == OP_FOLDSEG;
    bool seg = x->op == OP_FOLDSEG || x->op == OP_FOLD1SEG;
    int srck = z ? 2 : 1;
    Node *src = main_input(l, o, srck);
    if (!seg && o->irank == 1) {
        o->kind = MK_FOLDVEC;
        o->has_z = z;
        Node *y = mk_node(&l->k, OP_FOLD1, 2, x->type);
        if (!y) return;
        y->kid[0] = rw_func(l, o, x->kid[0]);
        y->kid[1] = src;
        o->lx = y;
        box(l, y);
        if (z) o->zk = gen0(l, o, x->kid[1]);
        make_combine(l, o, x->kid[0], x->type->elt);
        return;
    }
    o->kind = seg && o->irank == 1 ? MK_SEGVEC : MK_ROWS;
    Node *y = clone_op(l, x, x->op, x->n);
    if (!y) return;
    y->kid[0] = rw_func(l, o, x->kid[0]);
    if (z) y->kid[1] = rw_func(l, o, x->kid[1]);
    y->kid[srck] = src;
    if (seg) y->kid[srck + 1] = operand(l, o, srck + 1, o->kind == MK_SEGVEC ? RD_ASIS : RD_FULL);
    o->lx = y;
    box(l, y);
}

static void scan_op(L *l, MOp *o)
{
    const Node *x = o->x;
    Op op = x->op;
    bool z = !(op == OP_SCANL1 || op == OP_SCANR1);
    int srck = z ? 2 : 1;
    Node *src = main_input(l, o, srck);
    if (o->irank != 1) {
        o->kind = MK_ROWS;
        Node *y = clone_op(l, x, op, x->n);
        if (!y) return;
        y->kid[0] = rw_func(l, o, x->kid[0]);
        if (z) y->kid[1] = rw_func(l, o, x->kid[1]);
        y->kid[srck] = src;
        o->lx = y;
        box(l, y);
        return;
    }
    o->kind = MK_SCANVEC;
    o->right = op == OP_SCANR || op == OP_SCANR1 || op == OP_SCANREX;
    o->excl = op == OP_SCANLEX || op == OP_SCANREX;
    o->has_z = z;
    const Node *f = x->kid[0];
    const Type *elt = o->excl ? x->type->elts[0]->elt : x->type->elt;
    const Type *t1 = mk_tarray(&l->k, elt, 1), *t0 = mk_tarray(&l->k, elt, 0);
    Node *y = mk_node(&l->k, o->right ? OP_SCANR1 : OP_SCANL1, 2, t1);
    if (!y) return;
    y->kid[0] = rw_func(l, o, f);
    y->kid[1] = src;
    o->lx = y;
    box(l, y);
    if (z) o->zk = gen0(l, o, x->kid[1]);
    make_combine(l, o, f, elt);
    /* the fix-up: each element combined with the carry from the ranks before */
    o->fix_in = mk_fresh(&l->k, t1);
    o->carry = mk_fresh(&l->k, t0);
    Node *carry = mk_index(&l->k, mk_avar(&l->k, o->carry, t0), mk_ixcons(&l->k, 0, NULL));
    if (!o->excl) {
        int yv = mk_fresh(&l->k, elt);
        Node *ye = mk_var(&l->k, yv, elt);
        Node *body = o->right ? apply2(l, o, f, ye, carry) : apply2(l, o, f, carry, ye);
        Node *m = mk_node(&l->k, OP_MAP, 2, t1);
        if (!m) return;
        m->kid[0] = mk_lam(&l->k, 1, &yv, &elt, body);
        m->kid[1] = mk_avar(&l->k, o->fix_in, t1);
        o->fix = m;
        box(l, m);
        return;
    }
    /* scanl': element j is carry . y[j-1] (j > 0), carry at 0; scanr':
     * y[j+1] . carry (j < n-1), carry at n-1 */
    const Type *ti = mk_tindex(&l->k, 1), *t64 = ty_i64();
    int jv = mk_fresh(&l->k, ti);
    Node *j = mk_ixget(&l->k, 0, mk_var(&l->k, jv, ti));
    Node *n = mk_ixget(&l->k, 0, mk_shape(&l->k, mk_avar(&l->k, o->fix_in, t1)));
    Node *edge = o->right ? mk_prim(&l->k, P_SUB, t64, n, mk_i64(&l->k, 1)) : mk_i64(&l->k, 0);
    Node *at = mk_prim(&l->k, o->right ? P_ADD : P_SUB, t64, mk_ixget(&l->k, 0, mk_var(&l->k, jv, ti)), mk_i64(&l->k, 1));
    Node *yj = mk_index(&l->k, mk_avar(&l->k, o->fix_in, t1), mk_ixcons(&l->k, 1, &at));
    Node *carry2 = mk_index(&l->k, mk_avar(&l->k, o->carry, t0), mk_ixcons(&l->k, 0, NULL));
    Node *comb = o->right ? apply2(l, o, f, yj, carry2) : apply2(l, o, f, carry2, yj);
    Node *body = mk_cond(&l->k, mk_prim(&l->k, P_EQ, ty_bool(), j, edge), carry, comb);
    Node *g = mk_node(&l->k, OP_GENERATE, 2, t1);
    if (!g) return;
    g->kid[0] = mk_shape(&l->k, mk_avar(&l->k, o->fix_in, t1));
    g->kid[1] = mk_lam(&l->k, 1, &jv, &ti, body);
    o->fix = g;
    box(l, g);
}

static void filter_op(L *l, MOp *o)
{
    const Node *x = o->x;
    Node *src = main_input(l, o, 1);
    Node *y = clone_op(l, x, OP_FILTER, 2);
    if (!y) return;
    const Node *p = x->kid[0];
    o->iota = iota_type(x->kid[1]);
    if (o->iota != AX_NSCALAR && p->nparam == 1) {
        /* the predicate's reads at its element's value are at the
         * element's own position */
        RW w = {l, o, false, {-1, -1}, 0, -1, -1, -1, NULL, 0, p->param[0]->id};
        y->kid[0] = rw(&w, p);
    } else {
        o->iota = AX_NSCALAR;
        y->kid[0] = rw_func(l, o, p);
    }
    y->kid[1] = src;
    o->lx = y;
    box(l, y);
}

/* permute comb dflt p src: the iteration is the source's */
static void permute_op(L *l, MOp *o)
{
    const Node *x = o->x, *comb = x->kid[0], *p = x->kid[2], *sd = x->kid[3];
    const Type *elt = x->type->elt;
    int rt = x->type->rank;
    Node *dflt = operand(l, o, 1, RD_ASIS);
    (void)dflt;
    Node *src = main_input(l, o, 3);
    if (failed(l)) return;
    o->pinit = mk_fresh(&l->k, x->type);
    /* (reduce mode) the whole target combined locally from the defaults given */
    RW w;
    rw_init(&w, l, o, p->param[0]->id, -1, -1);
    Node *y = clone_op(l, x, OP_PERMUTE, 4);
    if (!y) return;
    y->kid[0] = rw_func(l, o, comb);
    y->kid[1] = mk_avar(&l->k, o->pinit, x->type);
    y->kid[2] = rw_ixlam(&w, p);
    y->kid[3] = src;
    o->lx = y;
    box(l, y);
    /* (owner mode) each source element's target and value */
    RW w2;
    int dix = sd->op == OP_DELAYED ? sd->kid[1]->param[0]->id : -1;
    rw_init(&w2, l, o, p->param[0]->id, dix, -1);
    Node *val;
    if (sd->op == OP_DELAYED) {
        val = mk_let(&l->k, dix, mk_var(&l->k, p->param[0]->id, mk_tindex(&l->k, o->irank)), rw(&w2, sd->kid[1]->kid[0]));
    } else {
        Node *ix = o->irank > 0 ? local_ix(&w2) : mk_ixcons(&l->k, 0, NULL);
        val = mk_index(&l->k, read_ref(l, o, sd, RD_ROW), ix);
    }
    Node *pair[2] = {rw(&w2, p->kid[0]), val};
    Node *tup = mk_tuple(&l->k, 2, pair);
    const Type *ti = mk_tindex(&l->k, o->irank);
    Node *tv = tup ? mk_node(&l->k, OP_GENERATE, 2, mk_tarray(&l->k, tup->type, o->irank)) : NULL;
    if (!tv) return;
    tv->kid[0] = local_shape(l, o);
    if (o->irank > 0) {
        tv->kid[1] = mk_lam(&l->k, 1, &w2.ixl, &ti, mk_let(&l->k, p->param[0]->id, global_ix(&w2), tup));
    } else {
        int id = p->param[0]->id;
        tv->kid[1] = mk_lam(&l->k, 1, &id, &ti, tup);
    }
    o->tv = tv;
    box(l, tv);
    /* (owner mode) the owner combines what it received into its block */
    const Type *t1 = mk_tarray(&l->k, elt, 1), *tl = mk_tarray(&l->k, ty_i64(), 1), *t64 = ty_i64();
    o->own_d = mk_fresh(&l->k, x->type);
    o->own_t = mk_fresh(&l->k, tl);
    o->own_v = mk_fresh(&l->k, t1);
    int iv = mk_fresh(&l->k, mk_tindex(&l->k, 1));
    const Type *ti1 = mk_tindex(&l->k, 1);
    Node *pos = mk_lindex(&l->k, mk_avar(&l->k, o->own_t, tl), mk_ixget(&l->k, 0, mk_var(&l->k, iv, ti1)));
    Node *fl = mk_node(&l->k, OP_PRIM, 2, mk_tindex(&l->k, rt));
    if (!fl) return;
    fl->a = P_FROMLIN;
    fl->kid[0] = mk_shape(&l->k, mk_avar(&l->k, o->own_d, x->type));
    fl->kid[1] = pos;
    Node *own = clone_op(l, x, OP_PERMUTE, 4);
    if (!own) return;
    own->kid[0] = rw_func(l, o, comb);
    own->kid[1] = mk_avar(&l->k, o->own_d, x->type);
    own->kid[2] = mk_lam(&l->k, 1, &iv, &ti1, fl);
    own->kid[3] = mk_avar(&l->k, o->own_v, t1);
    o->own = own;
    box(l, own);
    (void)t64;
    free(w.fr);
    free(w2.fr);
    /* reduce mode needs a built-in operator, leaf by leaf */
    Prim ops[64];
    int wd = elt->width;
    if (wd >= 1 && wd <= 64 && cg_lam_comm(comb, ops)) {
        bool same = true;
        for (int i = 0; i < wd; i++) {
            if (ops[i] != ops[0]) same = false;
            if (sc_is_float(ty_leaf(elt, i)) && ops[i] != P_ADD && ops[i] != P_MUL) same = false;
        }
        if (same) {
            o->builtin = true;
            o->redprim = ops[0];
        }
    }
}

static void stencil_op(L *l, MOp *o)
{
    const Node *x = o->x;
    const Stencil *st = x->sten;
    int nin = x->op == OP_STENCIL2 ? 2 : 1;
    o->irank = x->type->rank;
    o->ishape = IS_OPDS;
    bool wrap = false, cnst = false;
    for (int q = 0; q < nin; q++) {
        int h = st->size[q][0] / 2;
        if (h > o->halo) o->halo = h;
        if (st->bound[q] == AX_WRAP) wrap = true;
        if (st->bound[q] == AX_CONSTANT) cnst = true;
    }
    if (wrap && cnst) {
        o->kind = MK_WHOLE;
        o->why = "a stencil mixing the wrap and constant boundaries";
        return;
    }
    Node *y = clone_op(l, x, x->op, x->n);
    if (!y) return;
    y->kid[0] = rw_func(l, o, x->kid[0]);
    for (int q = 0; q < nin; q++) y->kid[1 + q] = operand(l, o, 1 + q, RD_HALO);
    for (int i = 1 + nin; i < x->n; i++) y->kid[i] = rw_func(l, o, x->kid[i]);
    o->lx = y;
    box(l, y);
}

static void reshape_op(L *l, MOp *o)
{
    const Node *x = o->x;
    o->irank = x->type->rank;
    o->ishape = IS_NONE;
    o->gshape = rw_func(l, o, x->kid[0]);
    operand(l, o, 1, RD_ASIS);
}

/* Anything else: the operation as it is, every array it reads whole. */
static void whole_op(L *l, MOp *o)
{
    const Node *x = o->x;
    o->kind = MK_WHOLE;
    o->ishape = IS_NONE;
    o->nfe = 0;
    o->insp = NULL;
    o->lx = NULL;
    Node *y = clone_op(l, x, x->op, x->n);
    if (!y) return;
    for (int i = 0; i < x->n; i++) {
        const Node *k = x->kid[i];
        if (!k) continue;
        if (k->op == OP_AVAR) {
            y->kid[i] = operand(l, o, i, RD_FULL);
        } else if (k->op == OP_DELAYED) {
            Node *d = clone_op(l, k, OP_DELAYED, k->n);
            if (!d) return;
            for (int j = 0; j < k->n; j++) d->kid[j] = rw_func(l, o, k->kid[j]);
            y->kid[i] = d;
        } else if (op_is_array(k->op)) {
            l->k.failed = true;
            return;
        } else {
            y->kid[i] = rw_func(l, o, k);
        }
    }
    o->lx = y;
    box(l, y);
}

static void cond_op(L *l, MOp *o)
{
    o->kind = MK_COND;
    o->ishape = IS_NONE;
    o->lx = gen0(l, o, o->x->kid[0]);
}

/* The reads found, the operation made whole when its local form cannot be. */
static void localise(L *l, const Node *x)
{
    MKind k = MK_ELEM;
    MOp *o = new_op(l, x, k);
    if (!o) return;
    switch (x->op) {
    case OP_GENERATE: case OP_MAP: case OP_ZIPWITH: case OP_BACKPERMUTE: case OP_TRANSFORM:
        elem_op(l, o);
        break;
    case OP_FOLD: case OP_FOLD1: case OP_FOLDSEG: case OP_FOLD1SEG:
        fold_op(l, o);
        break;
    case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX:
        scan_op(l, o);
        break;
    case OP_FILTER:
        o->kind = MK_FILTER;
        filter_op(l, o);
        break;
    case OP_PERMUTE:
        o->kind = MK_PERMUTE;
        permute_op(l, o);
        break;
    case OP_STENCIL: case OP_STENCIL2:
        o->kind = MK_STENCIL;
        stencil_op(l, o);
        break;
    case OP_RESHAPE:
        o->kind = MK_RESHAPE;
        reshape_op(l, o);
        break;
    case OP_ACOND:
        cond_op(l, o);
        break;
    default:
        o->why = "an operation the distributed executor does not know";
        o->kind = MK_WHOLE;
        break;
    }
    if (o->kind == MK_WHOLE && !failed(l)) {
        /* (what a partial local form added is dropped: the container's
         * members made for it stay, unused) */
        o->nrd = o->nopd = 0;
        o->main = -1;
        o->nmeta = META_SHAPE + AX_MAX_RANK;
        whole_op(l, o);
    }
}

/* Every operation of the array level, in program order. */
static void walk(L *l, const Node *x, int depth)
{
    while (x && !failed(l)) {
        if (depth > 2 * AX_DEPTH_LIMIT) {
            l->k.failed = true;
            return;
        }
        switch (x->op) {
        case OP_AVAR: case OP_USE:
            return;
        case OP_ALET:
            walk(l, x->kid[0], depth + 1);
            x = x->kid[1];
            continue;
        case OP_ACOND:
            localise(l, x);
            walk(l, x->kid[1], depth + 1);
            x = x->kid[2];
            continue;
        case OP_AWHILE:
            walk(l, x->kid[0]->kid[0], depth + 1);
            walk(l, x->kid[1]->kid[0], depth + 1);
            x = x->kid[2];
            continue;
        case OP_ATUPLE:
            for (int i = 0; i < x->n; i++) walk(l, x->kid[i], depth + 1);
            return;
        case OP_APROJ:
            x = x->kid[0];
            continue;
        default:
            localise(l, x);
            return;
        }
    }
}

int mx_localise(ax_mpi_program *pr)
{
    ax_ctx *cx = pr->m->cx;
    L l;
    memset(&l, 0, sizeof l);
    l.k = (Mk){pr->p, cx, false};
    l.pr = pr;
    hmap_init(&pr->opmap);
    /* renames: of the program's own let binders (copied into inspectors) */
    l.nren = pr->p->nvars;
    l.ren = ax__malloc(sizeof *l.ren * (size_t)(l.nren + 1));
    if (l.ren) memset(l.ren, 0xff, sizeof *l.ren * (size_t)(l.nren + 1));
    else l.k.failed = true;
    walk(&l, pr->p->root, 0);
    int rc = 0;
    if (failed(&l)) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
        rc = -1;
    }
    if (rc == 0 && l.nbox > 0) {
        /* the container: every local form and helper, as one program for
         * the backend (never walked: the executor runs its members one by
         * one) */
        const Type **ts = arena_alloc(&pr->p->arena, sizeof *ts * (size_t)l.nbox);
        Node *root = ts ? node_new(&pr->p->arena, OP_ATUPLE, l.nbox, NULL) : NULL;
        if (root) {
            for (int i = 0; i < l.nbox; i++) {
                ts[i] = l.box[i]->type;
                root->kid[i] = l.box[i];
            }
            root->type = ty_arrays(&pr->p->arena, l.nbox, ts);
            root->cx = cx;
        }
        if (!root || !root->type) {
            ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
            rc = -1;
        } else {
            pr->box = *pr->p;
            pr->box.root = root;
        }
    }
    free(l.box);
    free(l.ren);
    return rc;
}
