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
#include "opt/rewrite.h"
#include <stdlib.h>
#include <string.h>

typedef struct LocalCode LocalCode;

typedef struct LocaliseState {
    Rewrite rw;                 /* the program's; its rule is local_reads */
    ax_mpi_program *pr;
    Node **box;                 /* the container's members */
    int nbox, capbox;
    LocalCode *code;            /* the code being copied (lc_copy) */
} LocaliseState;

/* A fetched read: the original node and the variable of its values. */
typedef struct FRead {
    const Node *at;
    int var;
    const Node **chain;         /* the lets on the spine around it, outermost first */
    int nchain;
} FRead;

/* Code being made local (a function body or an expression): copied by
 * the rewrite kit, its reads renamed by local_reads. */
struct LocalCode {
    LocaliseState *l;
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
};

static bool failed(const LocaliseState *l) { return l->rw.failed; }

static void box(LocaliseState *l, Node *x)
{
    if (!x || failed(l)) return;
    if (l->nbox == l->capbox) {
        int cap = l->capbox ? 2 * l->capbox : 16;
        Node **b = ax__realloc(l->box, sizeof *b * (size_t)cap);
        if (!b) {
            rw_fail(&l->rw);
            return;
        }
        l->box = b;
        l->capbox = cap;
    }
    l->box[l->nbox++] = x;
}

/* ------------------------------------------------------------ operations and reads */

static MOp *new_op(LocaliseState *l, const Node *x, MKind kind)
{
    ax_mpi_program *pr = l->pr;
    if (pr->nops == pr->capops) {
        int cap = pr->capops ? 2 * pr->capops : 16;
        MOp *v = ax__realloc(pr->ops, sizeof *v * (size_t)cap);
        if (!v) return rw_fail(&l->rw);
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
    o->meta = rw_fresh(&l->rw, rw_tarray(&l->rw, ty_i64(), 1));
    o->iota = AX_NSCALAR;
    o->nmeta = META_SHAPE + AX_MAX_RANK;
    bool added;
    int64_t *slot = hmap_insert(&pr->opmap, hmap_ptr(x), pr->nops, &added);
    if (!slot) return rw_fail(&l->rw);
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
static int add_read(LocaliseState *l, MOp *o, const Node *a, RdCls cls)
{
    int id = -1, off = 0;
    const Node *use = NULL;
    if (!cg_free_ident(a, &id, &off, &use) || a->type->kind != TY_ARRAY) {
        rw_fail(&l->rw);
        return -1;
    }
    for (int i = 0; i < o->nrd; i++) {
        MRead *r = &o->rd[i];
        if (r->cls == cls && (use ? r->use == use : (!r->use && r->id == id && r->off == off))) return i;
    }
    if (o->nrd == o->caprd) {
        int cap = o->caprd ? 2 * o->caprd : 8;
        MRead *v = ax__realloc(o->rd, sizeof *v * (size_t)cap);
        if (!v) return rw_fail(&l->rw), -1;
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
    r->var = cls == RD_NONE || cls == RD_SRC ? -1 : rw_fresh(&l->rw, a->type);
    return o->nrd++;
}

/* A fresh variable read in the local form in place of the array. */
static Node *read_ref(LocaliseState *l, MOp *o, const Node *a, RdCls cls)
{
    int i = add_read(l, o, a, cls);
    return i < 0 ? NULL : rw_var(&l->rw, o->rd[i].var);
}

/* An operand (kid i of x, a variable) read by the operation itself. */
static Node *operand(LocaliseState *l, MOp *o, int kid, RdCls cls)
{
    const Node *a = o->x->kid[kid];
    int i = add_read(l, o, a, cls);
    if (i < 0) return NULL;
    if (o->nopd == MAXOPD) return rw_fail(&l->rw);
    o->rd[i].kid = kid;
    o->opd[o->nopd] = i;
    o->opdkid[o->nopd++] = kid;
    if (o->main < 0 && (cls == RD_ROW || cls == RD_HALO)) o->main = i;
    return rw_var(&l->rw, o->rd[i].var);
}

static Node *meta_at(LocaliseState *l, MOp *o, int k)
{
    return rw_lindex(&l->rw, rw_var(&l->rw, o->meta), rw_i64(&l->rw, k));
}

/* The iteration's local extents (from the meta array). */
static Node *local_shape(LocaliseState *l, MOp *o)
{
    Node *c[AX_MAX_RANK];
    for (int d = 0; d < o->irank; d++) c[d] = meta_at(l, o, META_SHAPE + d);
    return rw_ixcons(&l->rw, o->irank, c);
}

/* ------------------------------------------------------------ copying with the reads renamed */

static bool is_ix(const LocalCode *w, const Node *e)
{
    if (!w->elem || e->op != OP_VAR) return false;
    for (int i = 0; i < w->nix; i++)
        if (e->id == w->ix[i]) return true;
    return false;
}

static bool is_ixget0(const LocalCode *w, const Node *e)
{
    return e->op == OP_IXGET && e->a == 0 && is_ix(w, e->kid[0]);
}

static bool is_il(const LocalCode *w, const Node *e)
{
    return w->elem && w->il >= 0 && e->op == OP_VAR && e->id == w->il;
}

/* Is an index into an array of rank ra the iteration's own row?  1: the
 * iteration's whole index; 2: an index whose component 0 is the
 * iteration's component 0; 3: ix(i) with i the linear index of a rank-1
 * iteration. */
static int aligned_ix(const LocalCode *w, const Node *e, int ra)
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
static int aligned_lin(const LocalCode *w, const Node *e)
{
    if (!w->elem || w->o->irank < 1) return 0;
    if (is_il(w, e)) return 1;
    if (w->o->irank == 1 && is_ixget0(w, e)) return 2;
    return 0;
}

static Node *lc_copy(LocalCode *w, const Node *e);

static Node *local_ix(LocalCode *w)
{
    LocaliseState *l = w->l;
    return rw_var(&l->rw, w->ixl);
}

static Node *local_ixget0(LocalCode *w) { return rw_ixget(&w->l->rw, 0, local_ix(w)); }

static const FRead *fetched(const LocalCode *w, const Node *e)
{
    for (int i = 0; i < w->nfr; i++)
        if (w->fr[i].at == e) return &w->fr[i];
    return NULL;
}

/* A read of fetched values: at the iteration's own index. */
static Node *fetched_read(LocalCode *w, const FRead *f, const Type *elt)
{
    LocaliseState *l = w->l;
    Node *ix = w->o->irank > 0 ? local_ix(w) : rw_ixcons(&l->rw, 0, NULL);
    return rw_index(&l->rw, rw_var(&l->rw, f->var), ix);
}

/* Is e the element's own position, when the element is its position (a
 * filter of the indices of an array: o->iota)?  e is the parameter, or
 * it converted to i64. */
static bool is_vpos(const LocalCode *w, const Node *e)
{
    if (w->vparam < 0) return false;
    if (e->op == OP_PRIM && e->a == P_CVT && e->n == 1 && e->type->kind == TY_SCALAR && e->type->s == AX_I64) e = e->kid[0];
    return e->op == OP_VAR && e->id == w->vparam;
}

static Node *lc_read(LocalCode *w, const Node *e)
{
    LocaliseState *l = w->l;
    MOp *o = w->o;
    const Node *a = e->kid[0];
    const FRead *f = fetched(w, e);
    if (f) return fetched_read(w, f, e->type);
    if (e->op == OP_SHAPE) {
        int i = add_read(l, o, a, RD_NONE);
        if (i < 0) return NULL;
        Node *c[AX_MAX_RANK];
        for (int d = 0; d < a->type->rank; d++) c[d] = meta_at(l, o, o->rd[i].meta + d);
        return rw_ixcons(&l->rw, a->type->rank, c);
    }
    if (w->vparam >= 0 && (e->op == OP_LINDEX || a->type->rank == 1)) {
        /* the element's position, as a position of the iteration's block:
         * position - (the block's first position) */
        const Node *ix = e->kid[1], *pos = e->op == OP_LINDEX ? ix : ix->op == OP_IXCONS && ix->n == 1 ? ix->kid[0] : NULL;
        if (pos && is_vpos(w, pos)) {
            Node *lp = rw_prim(&l->rw, P_SUB, ty_i64(), lc_copy(w, pos), meta_at(l, o, META_OFFLIN));
            if (e->op == OP_LINDEX) return rw_lindex(&l->rw, read_ref(l, o, a, RD_LIN), lp);
            return rw_index(&l->rw, read_ref(l, o, a, RD_LIN), rw_ixcons(&l->rw, 1, &lp));
        }
    }
    if (e->op == OP_INDEX) {
        const Node *ix = e->kid[1];
        int al = aligned_ix(w, ix, a->type->rank);
        if (al == 1) return rw_index(&l->rw, read_ref(l, o, a, RD_ROW), local_ix(w));
        if (al) {
            Node *c[AX_MAX_RANK];
            c[0] = al == 2 ? local_ixget0(w) : rw_var(&l->rw, w->ill);
            for (int d = 1; d < ix->n; d++) c[d] = lc_copy(w, ix->kid[d]);
            return rw_index(&l->rw, read_ref(l, o, a, RD_ROW), rw_ixcons(&l->rw, ix->n, c));
        }
        return rw_index(&l->rw, read_ref(l, o, a, RD_FULL), lc_copy(w, ix));
    }
    /* OP_LINDEX */
    int al = aligned_lin(w, e->kid[1]);
    if (al == 1) return rw_lindex(&l->rw, read_ref(l, o, a, RD_LIN), rw_var(&l->rw, w->ill));
    if (al == 2) return rw_lindex(&l->rw, read_ref(l, o, a, RD_LIN), local_ixget0(w));
    return rw_lindex(&l->rw, read_ref(l, o, a, RD_FULL), lc_copy(w, e->kid[1]));
}

/* A copy of scalar code e with its reads renamed (see the header); its
 * binders get fresh names (the rewrite kit's copy). */
static Node *lc_copy(LocalCode *w, const Node *e)
{
    LocaliseState *l = w->l;
    LocalCode *was = l->code;
    l->code = w;
    Node *y = rw_copy(&l->rw, e);
    l->code = was;
    return y;
}

/* (rw.rule) The reads of the code being copied (l->code). */
static bool local_reads(Rewrite *rw, const Node *e, Node **out)
{
    LocaliseState *l = rw->pass;
    LocalCode *w = l->code;
    if (e->op == OP_INDEX || e->op == OP_LINDEX || e->op == OP_SHAPE) return *out = lc_read(w, e), true;
    if (op_is_array(e->op)) return *out = rw_fail(rw), true;   /* (scalar code reads arrays only by reference) */
    if (e->op == OP_IXGET && is_ix(w, e->kid[0]) && w->o->irank > 0) {
        /* a component of the iteration's index: the local one (only the
         * first differs, by the block's first row), so that the code
         * generator still sees reads at the loop's own index components */
        Node *c = rw_ixget(rw, e->a, local_ix(w));
        *out = e->a == 0 ? rw_prim(rw, P_ADD, ty_i64(), c, meta_at(l, w->o, META_OFF)) : c;
        return true;
    }
    return false;
}

/* A function without index (a fold's operator, a map's function, a
 * thunk's expression): every read of a whole array. */
static LocalCode func_code(LocaliseState *l, MOp *o)
{
    return (LocalCode){l, o, false, {-1, -1}, 0, -1, -1, -1, NULL, 0, -1};
}

static Node *lc_func(LocaliseState *l, MOp *o, const Node *e)
{
    LocalCode w = func_code(l, o);
    return lc_copy(&w, e);
}

/* ------------------------------------------------------------ fetches */

typedef struct Chain {
    const Node *v[256];
    int n;
} Chain;

static bool add_fetch(LocaliseState *l, LocalCode *w, const Node *e, const Chain *ch)
{
    FRead *fr = ax__realloc(w->fr, sizeof *fr * (size_t)(w->nfr + 1));
    if (!fr) return rw_fail(&l->rw), false;
    w->fr = fr;
    FRead *f = &fr[w->nfr++];
    f->at = e;
    f->var = -1;
    f->nchain = ch->n;
    f->chain = arena_alloc(&l->rw.p->arena, sizeof *f->chain * (size_t)(ch->n + 1));
    if (!f->chain) return rw_fail(&l->rw), false;
    if (ch->n) memcpy(f->chain, ch->v, sizeof *f->chain * (size_t)ch->n);
    return true;
}

/* The reads at computed indices on e's spine (see the header): those of
 * arrays of rank at least the iteration's; ch: the lets around e. */
static void spine(LocaliseState *l, LocalCode *w, const Node *e, Chain *ch, int depth)
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
static Node *global_ix(LocalCode *w)
{
    LocaliseState *l = w->l;
    MOp *o = w->o;
    Node *c[AX_MAX_RANK];
    for (int d = 0; d < o->irank; d++) {
        Node *g = rw_ixget(&l->rw, d, local_ix(w));
        c[d] = d == 0 ? rw_prim(&l->rw, P_ADD, ty_i64(), g, meta_at(l, o, META_OFF)) : g;
    }
    return rw_ixcons(&l->rw, o->irank, c);
}

/* \ix -> body  as  \ixl -> let ix = global ixl in body'  (the local index
 * variable is fresh: w->ixl). */
static Node *lc_ixlam(LocalCode *w, const Node *f)
{
    LocaliseState *l = w->l;
    MOp *o = w->o;
    if (!f || f->op != OP_LAM || f->nparam != 1) return rw_fail(&l->rw);
    if (o->irank == 0) {
        int id = f->param[0]->id;
        return rw_lam(&l->rw, 1, &id, lc_copy(w, f->kid[0]));
    }
    Node *body = rw_let(&l->rw, f->param[0]->id, global_ix(w), lc_copy(w, f->kid[0]));
    return rw_lam(&l->rw, 1, &w->ixl, body);
}

/* \i -> body  as  \il -> let i = il + offlin in body' */
static Node *lc_linlam(LocalCode *w, const Node *f)
{
    LocaliseState *l = w->l;
    const Type *t64 = ty_i64();
    if (!f || f->op != OP_LAM || f->nparam != 1) return rw_fail(&l->rw);
    Node *g = rw_prim(&l->rw, P_ADD, t64, rw_var(&l->rw, w->ill), meta_at(l, w->o, META_OFFLIN));
    Node *body = rw_let(&l->rw, f->param[0]->id, g, lc_copy(w, f->kid[0]));
    return rw_lam(&l->rw, 1, &w->ill, body);
}

/* An element-code rewrite over o's iteration, params: the index
 * parameters (and linear one) of the functions it will copy. */
static void lc_init(LocalCode *w, LocaliseState *l, MOp *o, int ix0, int ix1, int il)
{
    memset(w, 0, sizeof *w);
    w->l = l;
    w->o = o;
    w->elem = true;
    w->ix[0] = ix0;
    w->ix[1] = ix1;
    w->nix = ix1 >= 0 ? 2 : ix0 >= 0 ? 1 : 0;
    w->il = il;
    w->ixl = o->irank > 0 ? rw_fresh(&l->rw, rw_tindex(&l->rw, o->irank)) : -1;
    w->ill = rw_fresh(&l->rw, ty_i64());
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
static void make_fetches(LocalCode *w, const Node *body)
{
    LocaliseState *l = w->l;
    MOp *o = w->o;
    Chain ch;
    ch.n = 0;
    spine(l, w, body, &ch, 0);
    if (failed(l) || w->nfr == 0) return;
    Node **comp = arena_alloc(&l->rw.p->arena, sizeof *comp * (size_t)w->nfr);
    o->fe = ax__calloc((size_t)w->nfr, sizeof *o->fe);
    if (!comp || !o->fe) {
        rw_fail(&l->rw);
        return;
    }
    /* the inspector copies the lets around each read with fresh names
     * (several chains in one function); its reads are row-local or whole */
    LocalCode wi = *w;
    wi.fr = NULL;
    wi.nfr = 0;
    int leaf = 0;
    for (int i = 0; i < w->nfr && !failed(l); i++) {
        FRead *f = &w->fr[i];
        const Node *at = f->at;
        Node **bound = arena_alloc(&l->rw.p->arena, sizeof *bound * (size_t)(f->nchain + 1));
        if (!bound) {
            rw_fail(&l->rw);
            break;
        }
        int *ids = arena_alloc(&l->rw.p->arena, sizeof *ids * (size_t)(f->nchain + 1));
        if (!ids) {
            rw_fail(&l->rw);
            break;
        }
        int mark = rw_mark(&l->rw);
        for (int c = 0; c < f->nchain; c++) {
            const Node *let = f->chain[c];
            ids[c] = rw_fresh(&l->rw, let->kid[0]->type);
            rw_sub(&l->rw, let->id, rw_var(&l->rw, ids[c]));
        }
        for (int c = 0; c < f->nchain; c++) bound[c] = lc_copy(&wi, f->chain[c]->kid[0]);
        Node *e = lc_copy(&wi, at->kid[1]);
        for (int c = f->nchain - 1; c >= 0; c--) e = rw_let(&l->rw, ids[c], bound[c], e);
        rw_restore(&l->rw, mark);
        comp[i] = e;
        MFetch *fe = &o->fe[o->nfe++];
        fe->src = add_read(l, o, at->kid[0], RD_SRC);
        fe->lin = at->op == OP_LINDEX;
        fe->leaf = leaf;
        fe->site = at->op == OP_LINDEX ? "ax_at_linear" : "ax_at";
        leaf += e ? e->type->width : 0;
        f->var = fe->var = rw_fresh(&l->rw, rw_tarray(&l->rw, at->type, o->irank));
    }
    free(wi.fr);
    if (failed(l)) return;
    Node *tup = rw_tuple(&l->rw, w->nfr, comp);
    if (!tup) return;
    Node *gen = rw_node(&l->rw, OP_GENERATE, 2, rw_tarray(&l->rw, tup->type, o->irank));
    if (!gen) return;
    gen->kid[0] = local_shape(l, o);
    Node *gb = o->irank > 0 ? rw_let(&l->rw, w->ix[0], global_ix(w), tup) : tup;
    int id = o->irank > 0 ? w->ixl : w->ix[0];
    gen->kid[1] = rw_lam(&l->rw, 1, &id, gb);
    o->insp = gen;
    box(l, gen);
}

/* ------------------------------------------------------------ consumers' inputs */

/* A consumer's main input (kid): a variable read at the iteration's rows,
 * or a DELAYED made local (its extent from the meta array, its forms over
 * the local block, its fetched reads).  Sets o's iteration. */
static Node *main_input(LocaliseState *l, MOp *o, int kid)
{
    const Node *d = o->x->kid[kid];
    o->irank = d->type->rank;
    if (d->op != OP_DELAYED) {
        o->ishape = IS_OPD0;
        return operand(l, o, kid, RD_ROW);
    }
    o->ishape = IS_EXP;
    o->gshape = lc_func(l, o, d->kid[0]);
    const Node *fi = d->kid[1], *fl = d->kid[2];
    LocalCode w;
    lc_init(&w, l, o, fi->param[0]->id, -1, fl->param[0]->id);
    make_fetches(&w, fi->kid[0]);
    Node *y = rw_node(&l->rw, OP_DELAYED, 3, d->type);
    if (!y) return NULL;
    y->kid[0] = local_shape(l, o);
    y->kid[1] = lc_ixlam(&w, fi);
    if (w.nfr == 0) {
        y->kid[2] = lc_linlam(&w, fl);
    } else {
        /* fetched values are read by index: the linear form goes through
         * the index form (\il -> let ixl = fromLinear sh il in ...) */
        const Type *ti = rw_tindex(&l->rw, o->irank);
        Node *fl2 = rw_prim(&l->rw, P_FROMLIN, ti, local_shape(l, o), rw_var(&l->rw, w.ill));
        if (!fl2) return NULL;
        int ixl2 = rw_fresh(&l->rw, ti), keep = w.ixl;
        w.ixl = ixl2;
        Node *inner = lc_ixlam(&w, fi);   /* \ixl2 -> let ix = .. in body */
        w.ixl = keep;
        if (!inner) return NULL;
        y->kid[2] = rw_lam(&l->rw, 1, &w.ill, rw_let(&l->rw, ixl2, fl2, inner->kid[0]));
    }
    free(w.fr);
    return failed(l) ? NULL : y;
}

/* ------------------------------------------------------------ operations */

static Node *clone_op(LocaliseState *l, const Node *x, Op op, int n)
{
    Node *y = rw_node(&l->rw, op, n, x->type);
    if (y) {
        y->sten = x->sten;
        y->slice = x->slice;
        /* the immediate (a sort's order) means what it meant only in the
         * same operation */
        if (op == x->op) y->a = x->a;
    }
    return y;
}

/* generate, backpermute, transform, map, zipWith */
static void elem_op(LocaliseState *l, MOp *o)
{
    const Node *x = o->x;
    o->irank = x->type->rank;
    if (x->op == OP_MAP || x->op == OP_ZIPWITH) {
        o->ishape = IS_OPDS;
        Node *y = clone_op(l, x, x->op, x->n);
        if (!y) return;
        y->kid[0] = lc_func(l, o, x->kid[0]);
        for (int i = 1; i < x->n; i++) y->kid[i] = operand(l, o, i, RD_ROW);
        o->lx = y;
        box(l, y);
        return;
    }
    o->ishape = IS_EXP;
    o->gshape = lc_func(l, o, x->kid[0]);
    const Node *f = x->kid[1];
    LocalCode w;
    lc_init(&w, l, o, f->param[0]->id, -1, -1);
    if (x->op == OP_GENERATE) {
        make_fetches(&w, f->kid[0]);
        Node *y = clone_op(l, x, OP_GENERATE, 2);
        if (y) {
            y->kid[0] = local_shape(l, o);
            y->kid[1] = lc_ixlam(&w, f);
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
            rw_fail(&l->rw);
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
        fe->var = rw_fresh(&l->rw, rw_tarray(&l->rw, a->type->elt, o->irank));
        Node *gen = rw_node(&l->rw, OP_GENERATE, 2, rw_tarray(&l->rw, pb->type, o->irank));
        if (!gen) return;
        gen->kid[0] = local_shape(l, o);
        gen->kid[1] = lc_ixlam(&w, f);
        o->insp = gen;
        box(l, gen);
        if (tr) {
            Node *y = rw_node(&l->rw, OP_MAP, 2, x->type);
            if (!y) return;
            y->kid[0] = lc_func(l, o, x->kid[2]);
            y->kid[1] = rw_var(&l->rw, fe->var);
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
        if (al == 1) {
            pl = local_ix(&w);
        } else {
            Node *c[AX_MAX_RANK];
            c[0] = local_ixget0(&w);
            for (int d = 1; d < pb->n; d++) c[d] = lc_copy(&w, pb->kid[d]);
            pl = rw_ixcons(&l->rw, pb->n, c);
        }
        Node *body = rw_let(&l->rw, f->param[0]->id, global_ix(&w), pl);
        y->kid[1] = rw_lam(&l->rw, 1, &w.ixl, body);
        y->kid[src] = operand(l, o, src, RD_ROW);
    } else {
        y->kid[1] = lc_ixlam(&w, f);
        y->kid[src] = operand(l, o, src, RD_FULL);
    }
    if (tr) y->kid[2] = lc_func(l, o, x->kid[2]);
    o->lx = y;
    box(l, y);
    free(w.fr);
}

/* A zipWith of f over two rank-0 arrays (variables ck_a, ck_b): the
 * combine of two partial results. */
static void make_combine(LocaliseState *l, MOp *o, const Node *f, const Type *elt)
{
    const Type *t0 = rw_tarray(&l->rw, elt, 0);
    o->ck_a = rw_fresh(&l->rw, t0);
    o->ck_b = rw_fresh(&l->rw, t0);
    Node *y = rw_node(&l->rw, OP_ZIPWITH, 3, t0);
    if (!y) return;
    y->kid[0] = lc_func(l, o, f);
    y->kid[1] = rw_var(&l->rw, o->ck_a);
    y->kid[2] = rw_var(&l->rw, o->ck_b);
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
static Node *gen0(LocaliseState *l, MOp *o, const Node *e)
{
    const Type *ti = rw_tindex(&l->rw, 0);
    int v = rw_fresh(&l->rw, ti);
    Node *y = rw_node(&l->rw, OP_GENERATE, 2, rw_tarray(&l->rw, e->type, 0));
    if (!y) return NULL;
    y->kid[0] = rw_ixcons(&l->rw, 0, NULL);
    y->kid[1] = rw_lam(&l->rw, 1, &v, lc_func(l, o, e));
    box(l, y);
    return y;
}

/* f applied to a and b (the kit's application), its reads of whole
 * arrays. */
static Node *apply2(LocaliseState *l, MOp *o, const Node *f, Node *a, Node *b)
{
    LocalCode w = func_code(l, o), *was = l->code;
    Node *args[2] = {a, b};
    l->code = &w;
    Node *r = rw_apply(&l->rw, f, 2, args);
    l->code = was;
    return r;
}

/* fold, fold1, foldSeg, fold1Seg */
static void fold_op(LocaliseState *l, MOp *o)
{
    const Node *x = o->x;
    bool z = x->op == OP_FOLD || x->op == OP_FOLDSEG;
    bool seg = x->op == OP_FOLDSEG || x->op == OP_FOLD1SEG;
    int srck = z ? 2 : 1;
    Node *src = main_input(l, o, srck);
    if (!seg && o->irank == 1) {
        o->kind = MK_FOLDVEC;
        o->has_z = z;
        Node *y = rw_node(&l->rw, OP_FOLD1, 2, x->type);
        if (!y) return;
        y->kid[0] = lc_func(l, o, x->kid[0]);
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
    y->kid[0] = lc_func(l, o, x->kid[0]);
    if (z) y->kid[1] = lc_func(l, o, x->kid[1]);
    y->kid[srck] = src;
    if (seg) y->kid[srck + 1] = operand(l, o, srck + 1, o->kind == MK_SEGVEC ? RD_ASIS : RD_FULL);
    o->lx = y;
    box(l, y);
}

static void scan_op(LocaliseState *l, MOp *o)
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
        y->kid[0] = lc_func(l, o, x->kid[0]);
        if (z) y->kid[1] = lc_func(l, o, x->kid[1]);
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
    const Type *t1 = rw_tarray(&l->rw, elt, 1), *t0 = rw_tarray(&l->rw, elt, 0);
    Node *y = rw_node(&l->rw, o->right ? OP_SCANR1 : OP_SCANL1, 2, t1);
    if (!y) return;
    y->kid[0] = lc_func(l, o, f);
    y->kid[1] = src;
    o->lx = y;
    box(l, y);
    if (z) o->zk = gen0(l, o, x->kid[1]);
    make_combine(l, o, f, elt);
    /* the fix-up: each element combined with the carry from the ranks before */
    o->fix_in = rw_fresh(&l->rw, t1);
    o->carry = rw_fresh(&l->rw, t0);
    Node *carry = rw_index(&l->rw, rw_var(&l->rw, o->carry), rw_ixcons(&l->rw, 0, NULL));
    if (!o->excl) {
        int yv = rw_fresh(&l->rw, elt);
        Node *ye = rw_var(&l->rw, yv);
        Node *body = o->right ? apply2(l, o, f, ye, carry) : apply2(l, o, f, carry, ye);
        Node *m = rw_node(&l->rw, OP_MAP, 2, t1);
        if (!m) return;
        m->kid[0] = rw_lam(&l->rw, 1, &yv, body);
        m->kid[1] = rw_var(&l->rw, o->fix_in);
        o->fix = m;
        box(l, m);
        return;
    }
    /* scanl': element j is carry . y[j-1] (j > 0), carry at 0; scanr':
     * y[j+1] . carry (j < n-1), carry at n-1 */
    const Type *ti = rw_tindex(&l->rw, 1), *t64 = ty_i64();
    int jv = rw_fresh(&l->rw, ti);
    Node *j = rw_ixget(&l->rw, 0, rw_var(&l->rw, jv));
    Node *n = rw_ixget(&l->rw, 0, rw_shape(&l->rw, rw_var(&l->rw, o->fix_in)));
    Node *edge = o->right ? rw_prim(&l->rw, P_SUB, t64, n, rw_i64(&l->rw, 1)) : rw_i64(&l->rw, 0);
    Node *at = rw_prim(&l->rw, o->right ? P_ADD : P_SUB, t64, rw_ixget(&l->rw, 0, rw_var(&l->rw, jv)), rw_i64(&l->rw, 1));
    Node *yj = rw_index(&l->rw, rw_var(&l->rw, o->fix_in), rw_ixcons(&l->rw, 1, &at));
    Node *carry2 = rw_index(&l->rw, rw_var(&l->rw, o->carry), rw_ixcons(&l->rw, 0, NULL));
    Node *comb = o->right ? apply2(l, o, f, yj, carry2) : apply2(l, o, f, carry2, yj);
    Node *body = rw_cond(&l->rw, rw_prim(&l->rw, P_EQ, ty_bool(), j, edge), carry, comb);
    Node *g = rw_node(&l->rw, OP_GENERATE, 2, t1);
    if (!g) return;
    g->kid[0] = rw_shape(&l->rw, rw_var(&l->rw, o->fix_in));
    g->kid[1] = rw_lam(&l->rw, 1, &jv, body);
    o->fix = g;
    box(l, g);
}

static void filter_op(LocaliseState *l, MOp *o)
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
        LocalCode w = func_code(l, o);
        w.vparam = p->param[0]->id;
        y->kid[0] = lc_copy(&w, p);
    } else {
        o->iota = AX_NSCALAR;
        y->kid[0] = lc_func(l, o, p);
    }
    y->kid[1] = src;
    o->lx = y;
    box(l, y);
}

/* permute comb dflt p src: the iteration is the source's */
static void permute_op(LocaliseState *l, MOp *o)
{
    const Node *x = o->x, *comb = x->kid[0], *p = x->kid[2], *sd = x->kid[3];
    const Type *elt = x->type->elt;
    int rt = x->type->rank;
    Node *dflt = operand(l, o, 1, RD_ASIS);
    (void)dflt;
    Node *src = main_input(l, o, 3);
    if (failed(l)) return;
    o->pinit = rw_fresh(&l->rw, x->type);
    /* (reduce mode) the whole target combined locally from the defaults given */
    LocalCode w;
    lc_init(&w, l, o, p->param[0]->id, -1, -1);
    Node *y = clone_op(l, x, OP_PERMUTE, 4);
    if (!y) return;
    y->kid[0] = lc_func(l, o, comb);
    y->kid[1] = rw_var(&l->rw, o->pinit);
    y->kid[2] = lc_ixlam(&w, p);
    y->kid[3] = src;
    o->lx = y;
    box(l, y);
    /* (owner mode) each source element's target and value */
    LocalCode w2;
    int dix = sd->op == OP_DELAYED ? sd->kid[1]->param[0]->id : -1;
    lc_init(&w2, l, o, p->param[0]->id, dix, -1);
    Node *val;
    if (sd->op == OP_DELAYED) {
        val = rw_let(&l->rw, dix, rw_var(&l->rw, p->param[0]->id), lc_copy(&w2, sd->kid[1]->kid[0]));
    } else {
        Node *ix = o->irank > 0 ? local_ix(&w2) : rw_ixcons(&l->rw, 0, NULL);
        val = rw_index(&l->rw, read_ref(l, o, sd, RD_ROW), ix);
    }
    Node *pair[2] = {lc_copy(&w2, p->kid[0]), val};
    Node *tup = rw_tuple(&l->rw, 2, pair);
    Node *tv = tup ? rw_node(&l->rw, OP_GENERATE, 2, rw_tarray(&l->rw, tup->type, o->irank)) : NULL;
    if (!tv) return;
    tv->kid[0] = local_shape(l, o);
    if (o->irank > 0) {
        tv->kid[1] = rw_lam(&l->rw, 1, &w2.ixl, rw_let(&l->rw, p->param[0]->id, global_ix(&w2), tup));
    } else {
        int id = p->param[0]->id;
        tv->kid[1] = rw_lam(&l->rw, 1, &id, tup);
    }
    o->tv = tv;
    box(l, tv);
    /* (owner mode) the owner combines what it received into its block */
    const Type *t1 = rw_tarray(&l->rw, elt, 1), *tl = rw_tarray(&l->rw, ty_i64(), 1);
    o->own_d = rw_fresh(&l->rw, x->type);
    o->own_t = rw_fresh(&l->rw, tl);
    o->own_v = rw_fresh(&l->rw, t1);
    int iv = rw_fresh(&l->rw, rw_tindex(&l->rw, 1));
    Node *pos = rw_lindex(&l->rw, rw_var(&l->rw, o->own_t), rw_ixget(&l->rw, 0, rw_var(&l->rw, iv)));
    Node *fl = rw_prim(&l->rw, P_FROMLIN, rw_tindex(&l->rw, rt), rw_shape(&l->rw, rw_var(&l->rw, o->own_d)), pos);
    if (!fl) return;
    Node *own = clone_op(l, x, OP_PERMUTE, 4);
    if (!own) return;
    own->kid[0] = lc_func(l, o, comb);
    own->kid[1] = rw_var(&l->rw, o->own_d);
    own->kid[2] = rw_lam(&l->rw, 1, &iv, fl);
    own->kid[3] = rw_var(&l->rw, o->own_v);
    o->own = own;
    box(l, own);
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

static void stencil_op(LocaliseState *l, MOp *o)
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
    if (st->ix) {
        /* a rank's block would see its own row numbers, not the array's */
        o->kind = MK_WHOLE;
        o->why = "a stencil that sees its element's index (ax_stencil_ix)";
        return;
    }
    Node *y = clone_op(l, x, x->op, x->n);
    if (!y) return;
    y->kid[0] = lc_func(l, o, x->kid[0]);
    for (int q = 0; q < nin; q++) y->kid[1 + q] = operand(l, o, 1 + q, RD_HALO);
    for (int i = 1 + nin; i < x->n; i++) y->kid[i] = lc_func(l, o, x->kid[i]);
    o->lx = y;
    box(l, y);
}

static void reshape_op(LocaliseState *l, MOp *o)
{
    const Node *x = o->x;
    o->irank = x->type->rank;
    o->ishape = IS_NONE;
    o->gshape = lc_func(l, o, x->kid[0]);
    operand(l, o, 1, RD_ASIS);
}

/* Anything else: the operation as it is, every array it reads whole. */
static void whole_op(LocaliseState *l, MOp *o)
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
            for (int j = 0; j < k->n; j++) d->kid[j] = lc_func(l, o, k->kid[j]);
            y->kid[i] = d;
        } else if (op_is_array(k->op)) {
            rw_fail(&l->rw);
            return;
        } else {
            y->kid[i] = lc_func(l, o, k);
        }
    }
    o->lx = y;
    box(l, y);
}

static void cond_op(LocaliseState *l, MOp *o)
{
    o->kind = MK_COND;
    o->ishape = IS_NONE;
    o->lx = gen0(l, o, o->x->kid[0]);
}

/* The reads found, the operation made whole when its local form cannot be. */
static void localise(LocaliseState *l, const Node *x)
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
    case OP_SORT:
        /* (every key may move to any rank: a distributed sort is a
         * sample sort's exchange, not a local form) */
        o->why = "a sort";
        o->kind = MK_WHOLE;
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
static void walk(LocaliseState *l, const Node *x, int depth)
{
    while (x && !failed(l)) {
        if (depth > 2 * AX_DEPTH_LIMIT) {
            rw_fail(&l->rw);
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
    LocaliseState l;
    memset(&l, 0, sizeof l);
    l.pr = pr;
    hmap_init(&pr->opmap);
    if (rw_open(&l.rw, cx, pr->p)) {
        l.rw.pass = &l;
        l.rw.rule = local_reads;
        walk(&l, pr->p->root, 0);
    }
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
    rw_close(&l.rw);
    free(l.box);
    return rc;
}
