/*
 * Matrix products recognised in folds (cgen.h, CgContract): a fold with
 * (+) and zero of a fused producer whose element is a constant times the
 * product of two array reads, each indexed by the reduced dimension and
 * a run of the result's dimensions,
 *
 *   C[i.., j..] = fold (+) 0 (\(i.., j.., k) -> c * A[i.., k] * B[k, j..])
 *
 * which is what ax_fold of ax_zip_with(ax_fn_mul) over a replicated matrix
 * and a replicated (transposed) one fuses into (Accelerate's matrix
 * product; PolyBench's gemm, 2mm, 3mm, syrk, doitgen).  Either read may
 * put the reduced dimension first or last (a transposed operand), and the
 * result's leading dimensions may be several (doitgen's r, q), merged
 * into the rows of one matrix when the array is laid out so.  The CPU
 * executor hands what is recognised to a BLAS in the fast modes, whose
 * licence to reassociate a sum the BLAS's blocking needs (cpu/exec.c);
 * the fold's generated kernel stays, for the exact modes, for shapes the
 * BLAS cannot take, and where no BLAS is installed.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cgen.h"
#include <math.h>
#include <string.h>

enum { MAX_LETS = 32 };

/* The walk's state: the element function's parameter and the lets seen
 * on the way down (ids are unique in a program, so a flat list serves). */
typedef struct Walk {
    int param;
    int nlet;
    int let_id[MAX_LETS];
    const Node *let_val[MAX_LETS];
    ax_scalar s;
    /* the product being read: its constant factor and its two reads
     * (array, tuple component, the parameter's dimension per index
     * component) */
    double alpha;
    int nread;
    const Node *arr[2];
    int leaf[2];
    int ndim[2];
    int dim[2][AX_MAX_RANK];
} Walk;

static const Node *resolve(const Walk *w, const Node *e)
{
    for (int guard = 0; e && e->op == OP_VAR && e->id != w->param && guard < MAX_LETS; guard++) {
        const Node *v = NULL;
        for (int i = 0; i < w->nlet; i++)
            if (w->let_id[i] == e->id) v = w->let_val[i];
        if (!v) return NULL;
        e = v;
    }
    return e;
}

/* Pushes the lets at the top of e; what they bind; NULL past the limit. */
static const Node *lets(Walk *w, const Node *e)
{
    while (e && e->op == OP_LET && e->n == 2) {
        if (w->nlet == MAX_LETS) return NULL;
        w->let_id[w->nlet] = e->id;
        w->let_val[w->nlet++] = e->kid[0];
        e = e->kid[1];
    }
    return resolve(w, e);
}

/* The dimension of the parameter that index component e is, seen through
 * lets and through components of index tuples (a fused transpose reads
 * ix(ixget 1 t, ixget 0 t) of t = ix(ixget 1 p, ixget 2 p)); -1 if none. */
static int param_dim(Walk *w, const Node *e, int depth)
{
    e = lets(w, e);
    if (!e || depth > 16 || e->op != OP_IXGET || e->n != 1) return -1;
    const Node *t = lets(w, e->kid[0]);
    if (!t) return -1;
    if (t->op == OP_VAR && t->id == w->param) return e->a;
    if (t->op == OP_IXCONS && e->a >= 0 && e->a < t->n) return param_dim(w, t->kid[e->a], depth + 1);
    return -1;
}

/* Records a read `index a ix(ixget d0 p, ixget d1 p, ...)`, or of
 * component c of a tuple array's element (`proj c (index a ...)`). */
static bool read(Walk *w, const Node *e, int leaf)
{
    if (w->nread == 2 || e->n != 2) return false;
    const Node *a = e->kid[0], *ix = lets(w, e->kid[1]);
    if (!a || a->type->kind != TY_ARRAY) return false;
    const Type *elt = a->type->elt;
    if (leaf >= 0) {   /* a tuple of scalars: component c is leaf c */
        if (elt->kind != TY_TUPLE || leaf >= elt->n) return false;
        for (int c = 0; c < elt->n; c++)
            if (elt->elts[c]->kind != TY_SCALAR) return false;
        elt = elt->elts[leaf];
    }
    if (elt->kind != TY_SCALAR || elt->s != w->s) return false;
    if (!ix || ix->op != OP_IXCONS || ix->n != a->type->rank || ix->n < 2) return false;
    int r = w->nread;
    for (int c = 0; c < ix->n; c++)
        if ((w->dim[r][c] = param_dim(w, ix->kid[c], 0)) < 0) return false;
    w->arr[r] = a;
    w->leaf[r] = leaf < 0 ? 0 : leaf;
    w->ndim[r] = ix->n;
    w->nread++;
    return true;
}

/* The factors of a product: constants (into alpha) and two reads. */
static bool factors(Walk *w, const Node *e, int depth)
{
    if (depth > 64) return false;
    e = lets(w, e);
    if (!e || e->type->kind != TY_SCALAR || e->type->s != w->s) return false;
    switch (e->op) {
    case OP_CONST:
        w->alpha *= w->s == AX_F64 ? e->c.f64 : (double)e->c.f32;
        return true;
    case OP_INDEX:
        return read(w, e, -1);
    case OP_PROJ: {
        const Node *i = e->n == 1 ? lets(w, e->kid[0]) : NULL;
        if (i && i->op == OP_TUPLE) return e->a < i->n && factors(w, i->kid[e->a], depth + 1);
        return i && i->op == OP_INDEX && read(w, i, e->a);
    }
    case OP_PRIM:
        return e->a == P_MUL && e->n == 2 && factors(w, e->kid[0], depth + 1) && factors(w, e->kid[1], depth + 1);
    default:
        return false;
    }
}

/* The output dimensions of read r (all but the reduced dimension k,
 * which must stand first or last): consecutive and ascending from *lo,
 * their count in *cnt; *kfirst says where k stands. */
static bool run_of(const Walk *w, int r, int k, int *lo, int *cnt, bool *kfirst)
{
    int n = w->ndim[r];
    const int *d = w->dim[r];
    *kfirst = d[0] == k;
    if (!*kfirst && d[n - 1] != k) return false;
    const int *o = *kfirst ? d + 1 : d;
    for (int c = 0; c < n - 1; c++)
        if (o[c] == k || o[c] != o[0] + c) return false;
    *lo = o[0];
    *cnt = n - 1;
    return true;
}

/* A read, or a constant times a read (either way round), as written:
 * the constant in *scale (0: none). */
static bool scaled_read(Walk *w, const Node *e, double *scale)
{
    *scale = 0;
    e = lets(w, e);
    if (e && e->op == OP_PRIM && e->a == P_MUL && e->n == 2) {
        const Node *x = lets(w, e->kid[0]), *y = lets(w, e->kid[1]);
        const Node *c = x && x->op == OP_CONST ? x : y && y->op == OP_CONST ? y : NULL;
        if (!c || c->type->kind != TY_SCALAR || c->type->s != w->s) return false;
        *scale = w->s == AX_F64 ? c->c.f64 : (double)c->c.f32;
        if (*scale == 0) return false;
        e = c == x ? y : x;
    }
    int n = w->nread;
    w->alpha = 1;
    return factors(w, e, 0) && w->nread == n + 1 && w->alpha == 1;
}

/* Is product e, whose reads factors found, X * Y with X and Y each a read
 * or a constant times one (gemm's A B, 2mm's (alpha A) B)?  Then a kernel
 * that computes each term as (sa a) (sb b) computes it as written, bit
 * for bit; the scales of reads 0 and 1 in scale[]. */
static bool as_written(Walk *w, const Node *e, double scale[2])
{
    Walk v = *w;
    v.nread = 0;
    e = lets(&v, e);
    return e && e->op == OP_PRIM && e->a == P_MUL && e->n == 2 && scaled_read(&v, e->kid[0], &scale[0]) &&
           scaled_read(&v, e->kid[1], &scale[1]) && v.nread == 2 && v.arr[0] == w->arr[0] &&
           v.arr[1] == w->arr[1] && v.leaf[0] == w->leaf[0] && v.leaf[1] == w->leaf[1];
}

/* One product of a sum (the element function's e): its factors, and
 * its reads as A and B of a CgGemm; every product of a sum must split
 * the result's dimensions alike. */
static bool product(const CgNode *cn, Walk *w, const Node *e, int r, CgContract *out)
{
    int k = r - 1;
    w->alpha = 1;
    w->nread = 0;
    if (out->nterm == CG_GEMM_TERMS || !factors(w, e, 0) || w->nread != 2 || !(isfinite(w->alpha) && w->alpha != 0))
        return false;
    int lo[2], cnt[2];
    bool kf[2];
    for (int i = 0; i < 2; i++)
        if (!run_of(w, i, k, &lo[i], &cnt[i], &kf[i])) return false;
    int a = lo[0] == 0 ? 0 : 1, b = 1 - a;   /* A holds the result's first dimension */
    if (lo[a] != 0 || lo[b] != cnt[a] || cnt[a] + cnt[b] != r - 1) return false;
    if (out->rows >= 0 && out->rows != cnt[a]) return false;
    CgGemm *m = &out->t[out->nterm];
    if ((m->slot[0] = cg_free_slot(cn, w->arr[a])) < 0 || (m->slot[1] = cg_free_slot(cn, w->arr[b])) < 0) return false;
    m->leaf[0] = w->leaf[a];
    m->leaf[1] = w->leaf[b];
    m->ta = kf[a];
    m->tb = !kf[b];
    m->alpha = w->alpha;
    double sc[2];
    m->exact = as_written(w, e, sc);
    m->sa = m->exact ? sc[a] : 0;
    m->sb = m->exact ? sc[b] : 0;
    out->rows = cnt[a];
    out->nterm++;
    return true;
}

/* A sum of products (syr2k's A B^T + B A^T). */
static bool terms(const CgNode *cn, Walk *w, const Node *e, int r, CgContract *out, int depth)
{
    if (depth > 8) return false;
    e = lets(w, e);
    if (!e) return false;
    if (e->op == OP_PRIM && e->a == P_ADD && e->n == 2)
        return terms(cn, w, e->kid[0], r, out, depth + 1) && terms(cn, w, e->kid[1], r, out, depth + 1);
    return product(cn, w, e, r, out);
}

bool cg_contraction(const CgNode *cn, CgContract *out)
{
    const Node *x = cn->x;
    if (!x || x->op != OP_FOLD || cn->epi || cn->top != x || cn->nout != 1 || x->n != 3) return false;
    const Type *t = x->type;
    if (t->kind != TY_ARRAY || t->elt->kind != TY_SCALAR || (t->elt->s != AX_F64 && t->elt->s != AX_F32)) return false;
    int r = t->rank + 1;   /* the space: the result's dimensions and the sum's, last */
    if (r < 3 || r > AX_MAX_RANK) return false;
    /* (+), both ways round */
    const Node *f = x->kid[0], *z = x->kid[1], *d = x->kid[2];
    if (!f || f->op != OP_LAM || f->nparam != 2 || !f->kid[0]) return false;
    const Node *b = f->kid[0];
    if (b->op != OP_PRIM || b->a != P_ADD || b->n != 2 || b->kid[0]->op != OP_VAR || b->kid[1]->op != OP_VAR) return false;
    int p0 = f->param[0]->id, p1 = f->param[1]->id;
    if (!((b->kid[0]->id == p0 && b->kid[1]->id == p1) || (b->kid[0]->id == p1 && b->kid[1]->id == p0))) return false;
    /* zero, of either sign: the BLAS's empty sum */
    if (!z || z->op != OP_CONST || (t->elt->s == AX_F64 ? z->c.f64 != 0 : z->c.f32 != 0)) return false;
    if (!d || d->op != OP_DELAYED || d->n < 2 || !d->kid[1] || d->kid[1]->op != OP_LAM || d->kid[1]->nparam != 1)
        return false;
    const Node *g = d->kid[1];
    Walk w;
    memset(&w, 0, sizeof w);
    w.param = g->param[0]->id;
    w.s = t->elt->s;
    memset(out, 0, sizeof *out);
    out->s = w.s;
    out->rows = -1;
    return terms(cn, &w, g->kid[0], r, out, 0) && out->nterm > 0;
}
