/*
 * The distributed executor: the program's array level walked on every
 * rank (runtime/host.c's walk: lets, tuples, acond, awhile), each
 * operation run as its MOp says (mpi_int.h, localise.c).  Every decision
 * here (where an iteration's rows go, what moves) depends only on what
 * every rank knows alike (global shapes, distributions), so the ranks
 * make the same transfers in the same order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int nomem(MRun *r) { return mx_fail(r->m, AX_ERR_NOMEM, "axle mpi: out of memory"); }

size_t mx_leaf_size(const Type *elt, int c) { return ax_scalar_size(ty_leaf(elt, c)); }

size_t mx_elt_size(const Type *elt)
{
    size_t s = 0;
    for (int c = 0; c < elt->width; c++) s += mx_leaf_size(elt, c);
    return s;
}

ax_array *mx_array(MRun *r, const Type *elt, int rank, const int64_t *shape, bool zero)
{
    if (shape_size_checked(r->cx, "axle mpi", rank, shape) < 0) return NULL;
    return array_alloc(r->cx, elt, rank, shape, zero);
}

/* ------------------------------------------------------------ distributions of the run's arrays */

const Dist *mx_dist(MRun *r, const ax_array *a, Dist *tmp)
{
    int64_t *v = hmap_find(&r->dmap, hmap_ptr(a));
    if (v) return &r->drec[*v].d;
    dist_repl(tmp, a->rank, a->shape);
    return tmp;
}

int mx_set_dist(MRun *r, const ax_array *a, const Dist *d)
{
    bool added;
    int64_t *v = hmap_insert(&r->dmap, hmap_ptr(a), r->ndrec, &added);
    if (!v) return nomem(r);
    if (!added) {   /* a new array at a freed one's address: its record reused */
        DRec *e = &r->drec[*v];
        dist_free(&e->d);
        e->d = *d;
        e->d.off = NULL;
    } else {
        if (r->ndrec == r->capdrec) {
            int cap = r->capdrec ? 2 * r->capdrec : 32;
            DRec *n = ax__realloc(r->drec, sizeof *n * (size_t)cap);
            if (!n) return nomem(r);
            r->drec = n;
            r->capdrec = cap;
        }
        DRec *e = &r->drec[r->ndrec++];
        e->a = a;
        e->d = *d;
        e->d.off = NULL;
    }
    DRec *e = &r->drec[*v];
    if (!d->repl) {
        if (!(e->d.off = ax__malloc(sizeof *e->d.off * (size_t)(r->m->np + 1)))) {
            e->d.repl = true;
            return nomem(r);
        }
        memcpy(e->d.off, d->off, sizeof *e->d.off * (size_t)(r->m->np + 1));
    }
    return 0;
}

/* ------------------------------------------------------------ the local backend */

int mx_local(MRun *r, const Node *x, ax_array **out)
{
    ax_mpi_program *pr = r->pr;
    if (pr->be == &backend_cpu) return cpu_run_op(&r->h, pr->state, x, out);
    return interp_run_op(r->ie, &r->h, x, out);
}

void mx_bind(MRun *r, int var, ax_array *a)
{
    if (var < 0 || var >= r->h.nvars) return;
    ax_array_release(r->cells[var]);
    r->cells[var] = ax_array_retain(a);
    r->h.aenv[var] = &r->cells[var];
}

void mx_unbind(MRun *r, int var)
{
    if (var < 0 || var >= r->h.nvars) return;
    ax_array_release(r->cells[var]);
    r->cells[var] = NULL;
    r->h.aenv[var] = NULL;
}

/* A rank-0 array holding the leaves v. */
static ax_array *scalar_array(MRun *r, const Type *elt, const Scalar *v)
{
    int64_t none[1] = {0};
    ax_array *a = mx_array(r, elt, 0, none, false);
    for (int l = 0; a && l < elt->width; l++) sc_store(a->buf[l], ty_leaf(elt, l), 0, v[l]);
    return a;
}

static void leaves_of(const ax_array *a, int64_t i, Scalar *v)
{
    for (int l = 0; l < a->ncomp; l++) v[l] = sc_load(a->buf[l], ty_leaf(a->elt, l), i);
}

int mx_combine(MRun *r, MOp *o, const Type *elt, const Scalar *a, const Scalar *b, Scalar *out)
{
    ax_array *x = scalar_array(r, elt, a), *y = scalar_array(r, elt, b), *res = NULL;
    int rc = x && y ? 0 : -1;
    if (rc == 0) {
        mx_bind(r, o->ck_a, x);
        mx_bind(r, o->ck_b, y);
        rc = mx_local(r, o->ck, &res);
        mx_unbind(r, o->ck_a);
        mx_unbind(r, o->ck_b);
    }
    if (rc == 0) leaves_of(res, 0, out);
    ax_array_release(x);
    ax_array_release(y);
    ax_array_release(res);
    return rc;
}

/* A run of a rank-0 helper (a fold's z, a condition): its leaves. */
static int run0(MRun *r, const Node *g, Scalar *out)
{
    ax_array *a = NULL;
    if (mx_local(r, g, &a)) return -1;
    leaves_of(a, 0, out);
    ax_array_release(a);
    return 0;
}

/* ------------------------------------------------------------ one operation's state */

typedef struct OpRun {
    MOp *o;
    ax_array **arr;             /* per MRead: the array read (a reference) */
    Dist *dist;                 /* per MRead: its distribution */
    ax_array *meta;
    int64_t *mv;
    Dist di;                    /* the iteration's rows */
    int64_t ish[AX_MAX_RANK];   /* the iteration's global extents */
    int64_t lo, hi;             /* this rank's rows of it */
    int *bound;                 /* fresh variables bound */
    int nbound;
} OpRun;

static void bind(MRun *r, OpRun *u, int var, ax_array *a)
{
    mx_bind(r, var, a);
    u->bound[u->nbound++] = var;
}

static void op_end(MRun *r, OpRun *u)
{
    MOp *o = u->o;
    for (int i = 0; i < u->nbound; i++) mx_unbind(r, u->bound[i]);
    for (int i = 0; u->arr && i < o->nrd; i++) {
        ax_array_release(u->arr[i]);
        if (u->dist) dist_free(&u->dist[i]);
    }
    free(u->arr);
    free(u->dist);
    free(u->bound);
    ax_array_release(u->meta);
    dist_free(&u->di);
}

/* A view of n elements of a from element first, as an array of the rank
 * and shape given (it borrows a's buffers: a outlives it). */
static ax_array *view(MRun *r, ax_array *a, int64_t first, int rank, const int64_t *shape)
{
    void *bufs[256];
    if (a->ncomp > 256) return NULL;
    for (int c = 0; c < a->ncomp; c++) bufs[c] = (char *)a->buf[c] + (size_t)first * mx_leaf_size(a->elt, c);
    return ax_array_wrap_n(r->cx, a->elt, rank, shape, bufs);
}

/* ------------------------------------------------------------ binding the reads */

/* Rows [lo, hi) of the iteration (clipped to the array's rows) wanted by rank q. */
typedef struct RowWant {
    const Dist *di;             /* the iteration's rows (NULL: repl: every row) */
    int64_t n, rs;              /* the array's rows and row size */
    int lin;                    /* positions: rows of the iteration times its row size */
    int64_t irs;
    bool all;
} RowWant;

static int row_want(void *arg, int q, Ranges *out)
{
    RowWant *w = arg;
    int64_t lo = w->all ? 0 : w->di->off[q], hi = w->all ? (w->lin ? w->n : w->n) : w->di->off[q + 1];
    if (w->lin) {
        int64_t a = w->all ? 0 : lo * w->irs, b = w->all ? w->n : hi * w->irs;
        if (b > w->n) b = w->n;
        if (a > b) a = b;
        return ranges_add(out, a, b);
    }
    if (hi > w->n) hi = w->n;
    if (lo > hi) lo = hi;
    return ranges_add(out, lo * w->rs, hi * w->rs);
}

/* The array of read i bound to the iteration's rows (or positions). */
static int bind_rows(MRun *r, OpRun *u, int i, bool lin)
{
    MOp *o = u->o;
    MRead *rd = &o->rd[i];
    ax_array *a = u->arr[i];
    const Dist *da = &u->dist[i];
    int np = r->m->np;
    bool all = u->di.repl;
    if (da->rank == 0) {   /* (no rows: every rank holds it) */
        bind(r, u, rd->var, a);
        return 0;
    }
    int64_t rs = dist_rowsize(da), n = lin ? dist_size(da) : da->shape[0], irs = dist_rowsize(&u->di);
    int64_t lo = all ? 0 : u->lo, hi = all ? (lin ? n : n) : u->hi;
    /* the wanted positions of this rank */
    int64_t a0, a1;
    if (lin) {
        a0 = all ? 0 : lo * irs;
        a1 = all ? n : hi * irs;
    } else {
        a0 = lo;
        a1 = hi;
    }
    if (a1 > n) a1 = n;
    if (a0 > a1) a0 = a1;
    int64_t sh[AX_MAX_RANK];
    for (int d = 0; d < da->rank; d++) sh[d] = da->shape[d];
    int64_t first;   /* the wanted part's first position in a's local elements, if there */
    bool here;
    if (da->repl) {
        here = true;
        first = lin ? a0 : a0 * rs;
    } else {
        int64_t mlo = da->off[r->m->me], mhi = da->off[r->m->me + 1];
        here = lin ? (a0 >= mlo * rs && a1 <= mhi * rs) : (a0 >= mlo && a1 <= mhi);
        first = lin ? a0 - mlo * rs : (a0 - mlo) * rs;
    }
    if (lin) {
        sh[0] = a1 - a0;
        for (int d = 1; d < da->rank; d++) sh[d] = 1;
    } else {
        sh[0] = a1 - a0;
    }
    /* is every rank's wanted part where it is?  (then no rank moves any) */
    bool moves = false;
    if (!da->repl && !(all && da->repl)) {
        for (int q = 0; q < np && !moves; q++) {
            int64_t q0, q1;
            if (lin) {
                q0 = all ? 0 : u->di.off[q] * irs;
                q1 = all ? n : u->di.off[q + 1] * irs;
            } else {
                q0 = all ? 0 : u->di.off[q];
                q1 = all ? n : u->di.off[q + 1];
            }
            if (q1 > n) q1 = n;
            if (q0 > q1) q0 = q1;
            int64_t m0 = lin ? da->off[q] * rs : da->off[q], m1 = lin ? da->off[q + 1] * rs : da->off[q + 1];
            if (q1 > q0 && (q0 < m0 || q1 > m1)) moves = true;
        }
    }
    /* (the choice is the same on every rank: cm_move is entered by all
     * or none, its message tags counted alike) */
    ax_array *b;
    if (!moves) {
        b = a1 > a0 && here ? view(r, a, first, da->rank, sh) : mx_array(r, a->elt, da->rank, sh, false);
        if (!b) return -1;
    } else {
        if (!(b = mx_array(r, a->elt, da->rank, sh, false))) return -1;
        RowWant w = {all ? NULL : &u->di, n, rs, lin, irs, all};
        if (cm_move(r, da, a, row_want, &w, b, 0)) {
            ax_array_release(b);
            return -1;
        }
    }
    bind(r, u, rd->var, b);
    ax_array_release(b);
    return 0;
}

/* The whole of read i (gathered when distributed). */
static int bind_full(MRun *r, OpRun *u, int i)
{
    MRead *rd = &u->o->rd[i];
    const Dist *da = &u->dist[i];
    if (da->repl) {
        bind(r, u, rd->var, u->arr[i]);
        return 0;
    }
    ax_array *f = mx_array(r, u->arr[i]->elt, da->rank, da->shape, false);
    if (!f || cm_allgather(r, da, u->arr[i], f)) {
        ax_array_release(f);
        return -1;
    }
    bind(r, u, rd->var, f);
    ax_array_release(f);
    return 0;
}

/* ------------------------------------------------------------ the iteration */

/* Evaluates a host expression (a global shape) with the operation's
 * variables bound: leaves into out. */
static int host_exp(MRun *r, const Node *e, Scalar *out)
{
    if (!r->ie && !(r->ie = interp_eval_new(r->cx, r->h.nvars, r->h.aenv))) return -1;
    return interp_eval(r->ie, e, out);
}

static bool any_block(const OpRun *u)
{
    for (int i = 0; i < u->o->nrd; i++)
        if (u->arr[i] && !u->dist[i].repl && u->o->rd[i].cls != RD_NONE) return true;
    return false;
}

/* The iteration's rows: those of the first operand (or row-local read)
 * with its outer extent, else blocks (or every row on every rank when no
 * distributed array is read and it is small). */
static int choose_rows(MRun *r, OpRun *u, bool whole)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    int np = m->np;
    if (o->irank < 1 || whole) return dist_repl(&u->di, o->irank, u->ish);
    int pick = -1;
    if (o->main >= 0 && !u->dist[o->main].repl && u->dist[o->main].shape[0] == u->ish[0]) pick = o->main;
    for (int i = 0; i < o->nrd && pick < 0; i++) {
        const Dist *d = &u->dist[i];
        if ((o->rd[i].cls == RD_ROW || o->rd[i].cls == RD_HALO) && !d->repl && d->shape[0] == u->ish[0]) pick = i;
    }
    if (pick >= 0) {
        dist_repl(&u->di, o->irank, u->ish);
        u->di.repl = false;
        if (!(u->di.off = ax__malloc(sizeof *u->di.off * (size_t)(np + 1)))) return nomem(r);
        memcpy(u->di.off, u->dist[pick].off, sizeof *u->di.off * (size_t)(np + 1));
        return 0;
    }
    /* a vector iteration over the positions of an array read at them (a
     * flattened image): its blocks, as positions */
    for (int i = 0; i < o->nrd && o->irank == 1; i++) {
        const Dist *d = &u->dist[i];
        if (o->rd[i].cls != RD_LIN || d->repl || dist_size(d) != u->ish[0]) continue;
        int64_t rs = dist_rowsize(d);
        dist_repl(&u->di, 1, u->ish);
        u->di.repl = false;
        if (!(u->di.off = ax__malloc(sizeof *u->di.off * (size_t)(np + 1)))) return nomem(r);
        for (int q = 0; q <= np; q++) u->di.off[q] = d->off[q] * rs;
        return 0;
    }
    int64_t size = 1;
    for (int d = 0; d < o->irank; d++) size *= u->ish[d];
    if (!any_block(u) && size < m->min_split) return dist_repl(&u->di, o->irank, u->ish);
    if (dist_blocks(m, &u->di, o->irank, u->ish)) return nomem(r);
    return 0;
}

static void set_rows(MRun *r, OpRun *u)
{
    MOp *o = u->o;
    u->lo = u->di.repl ? 0 : u->di.off[r->m->me];
    u->hi = u->di.repl ? (o->irank > 0 ? u->ish[0] : 1) : u->di.off[r->m->me + 1];
    u->mv[META_OFF] = u->lo;
    u->mv[META_OFFLIN] = u->lo * dist_rowsize(&u->di);
    for (int d = 0; d < o->irank; d++) u->mv[META_SHAPE + d] = d == 0 ? u->hi - u->lo : u->ish[d];
}

/* ------------------------------------------------------------ fetches */

static int fetch_error(MRun *r, const MFetch *fe, int rank, const int64_t *ix, const Dist *d, bool lin)
{
    char a[256], b[256];
    host_fmt_ints(b, sizeof b, d->rank, d->shape);
    if (lin)
        return mx_fail(r->m, AX_ERR_INDEX, "ax_at_linear: position %" PRId64 " out of bounds for shape (%s) (%" PRId64
                       " elements)", ix[0], b, dist_size(d));
    host_fmt_ints(a, sizeof a, rank, ix);
    return mx_fail(r->m, AX_ERR_INDEX, "%s: index (%s) out of bounds for shape (%s)", fe->site, a, b);
}

/* The inspector's indices, the values fetched (one exchange per array
 * read), each bound for the local form. */
static int run_fetches(MRun *r, OpRun *u, ax_array **firstval)
{
    MOp *o = u->o;
    ax_array *ins = NULL;
    if (firstval) *firstval = NULL;
    if (o->nfe == 0) return 0;
    double T0 = now_ms();
    if (mx_local(r, o->insp, &ins)) return -1;
    if (r->m->trace) fprintf(stderr, "axle: mpi trace: rank %d fetch: inspector %.1f ms\n", r->m->me, now_ms() - T0);
    int64_t n = ins->size;
    int rc = 0;
    bool *done = ax__calloc((size_t)o->nfe, sizeof *done);
    int64_t *pos = ax__malloc(sizeof *pos * (size_t)(n * o->nfe + 1));
    if (!done || !pos) rc = nomem(r);
    for (int f = 0; f < o->nfe && rc == 0; f++) {
        if (done[f]) continue;
        int s = o->fe[f].src;
        const Dist *d = &u->dist[s];
        /* every fetch of this array, one request list */
        int64_t k = 0;
        for (int g = f; g < o->nfe && rc == 0; g++) {
            if (o->fe[g].src != s) continue;
            const MFetch *fe = &o->fe[g];
            for (int64_t i = 0; i < n; i++, k++) {
                int64_t ix[AX_MAX_RANK];
                if (fe->lin) {
                    ix[0] = ((const int64_t *)ins->buf[fe->leaf])[i];
                    if (ix[0] < 0 || ix[0] >= dist_size(d)) {
                        rc = fetch_error(r, fe, 1, ix, d, true);
                        break;
                    }
                    pos[k] = ix[0];
                    continue;
                }
                int64_t p = 0;
                for (int dd = 0; dd < d->rank; dd++) {
                    ix[dd] = ((const int64_t *)ins->buf[fe->leaf + dd])[i];
                    if (ix[dd] < 0 || ix[dd] >= d->shape[dd]) {
                        rc = fetch_error(r, fe, d->rank, ix, d, false);
                        break;
                    }
                    p = p * d->shape[dd] + ix[dd];
                }
                if (rc) break;
                pos[k] = p;
            }
        }
        if (rc) break;
        ax_array *vals = mx_array(r, u->arr[s]->elt, 1, &k, true);
        double T1 = now_ms();
        if (r->m->trace) fprintf(stderr, "axle: mpi trace: rank %d fetch: positions %.1f ms\n", r->m->me, T1 - T0);
        if (!vals || cm_fetch(r, d, u->arr[s], pos, k, vals)) {
            ax_array_release(vals);
            rc = -1;
            break;
        }
        if (r->m->trace) fprintf(stderr, "axle: mpi trace: rank %d fetch: exchange %.1f ms\n", r->m->me, now_ms() - T1);
        /* each fetch's share, as an array over the iteration */
        int64_t at = 0;
        for (int g = f; g < o->nfe && rc == 0; g++) {
            if (o->fe[g].src != s) continue;
            done[g] = true;
            int64_t sh[AX_MAX_RANK];
            for (int dd = 0; dd < o->irank; dd++) sh[dd] = u->mv[META_SHAPE + dd];
            ax_array *fv = view(r, vals, at, o->irank, sh);
            if (!fv) {
                rc = -1;
                break;
            }
            /* (a copy: the view would not keep vals alive past this op) */
            ax_array *own = mx_array(r, fv->elt, fv->rank, fv->shape, false);
            if (own)
                for (int c = 0; c < own->ncomp; c++)
                    memcpy(own->buf[c], fv->buf[c], (size_t)own->size * mx_leaf_size(own->elt, c));
            ax_array_release(fv);
            if (!own) {
                rc = -1;
                break;
            }
            bind(r, u, o->fe[g].var, own);
            if (firstval && g == 0) *firstval = ax_array_retain(own);
            ax_array_release(own);
            at += n;
        }
        ax_array_release(vals);
    }
    free(done);
    free(pos);
    ax_array_release(ins);
    return rc;
}

/* ------------------------------------------------------------ the operations */

/* The distribution of a result of the iteration's rows (its own extents
 * inside; rows as the iteration's). */
static int result_rows(MRun *r, OpRun *u, ax_array *res, int64_t rows)
{
    Dist d;
    dist_repl(&d, res->rank, res->shape);
    if (!u->di.repl && res->rank >= 1) {
        d.repl = false;
        d.shape[0] = rows;
        d.off = u->di.off;
    }
    return mx_set_dist(r, res, &d);
}

static int run_elem(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    ax_array *first = NULL;
    if (run_fetches(r, u, o->kind == MK_FETCHBP && !o->lx ? &first : NULL)) return -1;
    if (o->kind == MK_FETCHBP && !o->lx) {
        out[0] = first;
    } else if (mx_local(r, o->lx, out)) {
        ax_array_release(first);
        return -1;
    }
    return result_rows(r, u, out[0], o->irank > 0 ? u->ish[0] : 0);
}

static int run_rows(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    if (run_fetches(r, u, NULL) || mx_local(r, o->lx, out)) return -1;
    int w = host_width(o->x->type);
    for (int k = 0; k < w; k++)
        if (result_rows(r, u, out[k], u->ish[0])) return -1;
    return 0;
}

static int run_whole(MRun *r, OpRun *u, ax_array **out)
{
    int w = host_width(u->o->x->type);
    if (mx_local(r, u->o->lx, out)) return -1;
    for (int k = 0; k < w; k++) {
        Dist d;
        dist_repl(&d, out[k]->rank, out[k]->shape);
        if (mx_set_dist(r, out[k], &d)) return -1;
    }
    return 0;
}

static int set_repl(MRun *r, ax_array *a)
{
    Dist d;
    dist_repl(&d, a->rank, a->shape);
    return mx_set_dist(r, a, &d);
}

/* fold of a vector: local fold1, one reduction, then z */
static int run_foldvec(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    const Type *elt = o->x->type->elt;
    int w = elt->width;
    Scalar *v = ax__calloc((size_t)(3 * w + 1), sizeof *v), *red = v + w, *z = v + 2 * w;
    if (!v) return nomem(r);
    int rc = 0;
    bool has = u->hi > u->lo, anyhas = u->ish[0] > 0, rh = false;
    /* (the fetch is collective: every rank takes part, rows or none) */
    if ((rc = run_fetches(r, u, NULL))) goto out;
    if (has) {
        ax_array *p = NULL;
        if ((rc = mx_local(r, o->lx, &p))) goto out;
        leaves_of(p, 0, v);
        ax_array_release(p);
    }
    if (u->di.repl) {
        memcpy(red, v, sizeof *v * (size_t)w);
        rh = has;
    } else if ((rc = cm_reduce(r, o, elt, v, has, false, false, red, &rh))) {
        goto out;
    }
    rh = anyhas;
    if (o->has_z) {
        if ((rc = run0(r, o->zk, z))) goto out;
        if (rh && (rc = mx_combine(r, o, elt, z, red, red))) goto out;
        if (!rh) memcpy(red, z, sizeof *v * (size_t)w);
    } else if (!rh) {
        rc = mx_fail(r->m, AX_ERR_SHAPE, "%s: cannot reduce an empty row (the innermost extent is 0)", o->name);
        goto out;
    }
    if (!(out[0] = scalar_array(r, elt, red))) rc = -1;
    else rc = set_repl(r, out[0]);
out:
    free(v);
    return rc;
}

static int run_filter(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    if (o->iota != AX_NSCALAR && sc_bits(o->iota) < 64 &&
        u->ish[0] > (int64_t)((sc_is_signed(o->iota) ? UINT64_MAX >> 1 : UINT64_MAX) >> (64 - sc_bits(o->iota))))
        return mx_fail(m, AX_ERR_BACKEND, "axle mpi: %s of positions converted to %s over %" PRId64 " elements (more than "
                       "the type holds) is not distributed yet", o->name, ax_scalar_name(o->iota), u->ish[0]);
    if (run_fetches(r, u, NULL) || mx_local(r, o->lx, out)) return -1;
    Dist d;
    dist_repl(&d, 1, &out[0]->size);
    if (u->di.repl) return mx_set_dist(r, out[0], &d);
    int64_t *cnt = ax__malloc(sizeof *cnt * (size_t)m->np);
    if (!cnt) return nomem(r);
    int rc = cm_allgather_i64(r, out[0]->size, cnt);
    if (rc == 0) {
        d.repl = false;
        if (!(d.off = ax__malloc(sizeof *d.off * (size_t)(m->np + 1)))) rc = nomem(r);
    }
    if (rc == 0) {
        d.off[0] = 0;
        for (int q = 0; q < m->np; q++) d.off[q + 1] = d.off[q] + cnt[q];
        d.shape[0] = d.off[m->np];
        if (m->rebalance) {
            /* even blocks: each rank's share of the survivors moved to it */
            Dist e;
            if (dist_blocks(m, &e, 1, d.shape)) {
                rc = nomem(r);
            } else {
                int64_t n = e.off[m->me + 1] - e.off[m->me];
                ax_array *b = mx_array(r, out[0]->elt, 1, &n, false);
                RowWant w = {&e, d.shape[0], 1, 0, 1, false};
                if (!b || cm_move(r, &d, out[0], row_want, &w, b, 0)) {
                    ax_array_release(b);
                    rc = -1;
                } else {
                    ax_array_release(out[0]);
                    out[0] = b;
                    dist_free(&d);
                    d = e;
                }
            }
        }
    }
    if (rc == 0) rc = mx_set_dist(r, out[0], &d);
    dist_free(&d);
    free(cnt);
    if (rc) {
        ax_array_release(out[0]);
        out[0] = NULL;
    }
    return rc;
}

/* scan of a vector: local scan, exscan of the blocks' totals, fix-up */
static int run_scanvec(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    const Type *elt = o->excl ? o->x->type->elts[0]->elt : o->x->type->elt;
    int w = elt->width, np = m->np;
    int64_t n = u->hi - u->lo, N = u->ish[0];
    Scalar *v = ax__calloc((size_t)(4 * w + 1), sizeof *v), *ex = v + w, *z = v + 2 * w, *c = v + 3 * w;
    ax_array *y = NULL, *res = NULL, *tot = NULL;
    int rc = 0;
    if (!v) return nomem(r);
    if ((rc = run_fetches(r, u, NULL))) goto out;   /* (collective) */
    if (n > 0) {
        if ((rc = mx_local(r, o->lx, &y))) goto out;
        leaves_of(y, o->right ? 0 : n - 1, v);
    } else if (!(y = mx_array(r, elt, 1, &n, false))) {
        rc = -1;
        goto out;
    }
    /* the carry: the blocks before (after, from the right) and z */
    bool eh = false;
    if (!u->di.repl) {
        if ((rc = cm_reduce(r, o, elt, v, n > 0, true, o->right, ex, &eh))) goto out;
        eh = o->right ? u->hi < N : u->lo > 0;   /* (some block on that side holds elements) */
    }
    bool ch = eh;
    if (eh) memcpy(c, ex, sizeof *v * (size_t)w);
    if (o->has_z) {
        if ((rc = run0(r, o->zk, z))) goto out;
        if (eh) rc = o->right ? mx_combine(r, o, elt, ex, z, c) : mx_combine(r, o, elt, z, ex, c);
        else memcpy(c, z, sizeof *v * (size_t)w);
        ch = true;
        if (rc) goto out;
    }
    /* the fixed-up local scan */
    ax_array *fx = y;
    if (ch && (n > 0 || o->excl)) {
        ax_array *ca = scalar_array(r, elt, c);
        if (!ca) {
            rc = -1;
            goto out;
        }
        mx_bind(r, o->carry, ca);
        mx_bind(r, o->fix_in, y);
        rc = mx_local(r, o->fix, &fx);
        mx_unbind(r, o->carry);
        mx_unbind(r, o->fix_in);
        ax_array_release(ca);
        if (rc) goto out;
        ax_array_release(y);
        y = fx;
    }
    Dist d;
    dist_repl(&d, 1, &N);
    bool ext = o->has_z && !o->excl;   /* scanl / scanr: one element more, z */
    bool edge = ext && (u->di.repl || (o->right ? m->me == np - 1 : m->me == 0));
    if (edge) {
        int64_t n1 = n + 1;
        if (!(res = mx_array(r, elt, 1, &n1, false))) {
            rc = -1;
            goto out;
        }
        int64_t at = o->right ? n : 0;
        for (int l = 0; l < w; l++) sc_store(res->buf[l], ty_leaf(elt, l), at, z[l]);
        for (int l = 0; l < w; l++)
            memcpy((char *)res->buf[l] + (size_t)(o->right ? 0 : 1) * mx_leaf_size(elt, l), y->buf[l],
                   (size_t)n * mx_leaf_size(elt, l));
    } else {
        res = ax_array_retain(y);
    }
    int64_t rows = N + (ext ? 1 : 0);
    d.shape[0] = rows;
    if (!u->di.repl) {
        d.repl = false;
        if (!(d.off = ax__malloc(sizeof *d.off * (size_t)(np + 1)))) {
            rc = nomem(r);
            goto out;
        }
        for (int q = 0; q <= np; q++) {
            d.off[q] = u->di.off[q];
            if (ext && !o->right && q > 0) d.off[q]++;
            if (ext && o->right && q == np) d.off[q]++;
        }
    }
    rc = mx_set_dist(r, res, &d);
    dist_free(&d);
    if (rc) goto out;
    if (o->excl) {
        /* the total: every block and z */
        Scalar *t = v;
        bool th = n > 0;
        if (!u->di.repl) {
            if ((rc = cm_reduce(r, o, elt, v, n > 0, false, false, ex, &th))) goto out;
            th = N > 0;
            t = ex;
        }
        if (th) rc = o->right ? mx_combine(r, o, elt, t, z, c) : mx_combine(r, o, elt, z, t, c);
        else memcpy(c, z, sizeof *v * (size_t)w);
        if (rc || !(tot = scalar_array(r, elt, c)) || (rc = set_repl(r, tot))) {
            rc = -1;
            goto out;
        }
        out[1] = tot;
        tot = NULL;
    }
    out[0] = res;
    res = NULL;
out:
    ax_array_release(y);
    ax_array_release(res);
    ax_array_release(tot);
    free(v);
    return rc;
}

/* segmented fold of a vector: each rank's segments whole */
static int run_segvec(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    int np = m->np, si = o->opd[o->nopd - 1];   /* the segments: the last operand */
    const MRead *srd = &o->rd[si];
    ax_array *segs = u->arr[si];
    const Dist *sd = &u->dist[si];
    const char *what = o->name;
    bool z = o->x->op == OP_FOLDSEG;
    int rc = 0;
    if (segs->rank != 1 || segs->ncomp != 1 || segs->elt->kind != TY_SCALAR || !sc_is_int(segs->elt->s))
        return mx_fail(m, AX_ERR_SHAPE, "%s: the segments are not a vector of integers", what);
    /* the segments split when replicated (each rank its block of them) */
    Dist ds;
    ax_array *mysegs = NULL;
    if (sd->repl) {
        if (dist_blocks(m, &ds, 1, sd->shape)) return nomem(r);
        int64_t k = ds.off[m->me + 1] - ds.off[m->me];
        mysegs = view(r, segs, ds.off[m->me], 1, &k);
    } else {
        dist_copy(&ds, sd);
        ds.off = ax__malloc(sizeof *ds.off * (size_t)(np + 1));
        if (ds.off) memcpy(ds.off, sd->off, sizeof *ds.off * (size_t)(np + 1));
        mysegs = ds.off ? ax_array_retain(segs) : NULL;
    }
    if (!mysegs) {
        dist_free(&ds);
        return nomem(r);
    }
    /* this rank's total, checked as the interpreter checks it */
    ax_scalar s = segs->elt->s;
    int64_t base = ds.off[m->me], tot = 0, N = u->ish[0];
    int64_t *all = ax__malloc(sizeof *all * (size_t)np);
    if (!all) rc = nomem(r);
    for (int64_t k = 0; rc == 0 && k < mysegs->size; k++) {
        Scalar v = sc_load(mysegs->buf[0], s, k);
        if (!sc_is_signed(s) && v.u > (uint64_t)INT64_MAX)
            rc = mx_fail(m, AX_ERR_SHAPE, "%s: segment %" PRId64 " has length %" PRIu64 ", more than the %" PRId64
                         " elements of a row", what, base + k, v.u, N);
        else if ((sc_is_signed(s) ? v.i : (int64_t)v.u) < 0)
            rc = mx_fail(m, AX_ERR_SHAPE, "%s: segment %" PRId64 " has negative length %" PRId64, what, base + k, v.i);
        else tot += sc_is_signed(s) ? v.i : (int64_t)v.u;
        if (rc == 0 && tot > N) rc = 1;   /* (judged against the ranks before, below) */
    }
    if (rc < 0) goto out;
    rc = 0;
    if ((rc = cm_allgather_i64(r, tot, all))) goto out;
    /* the iteration (the source's elements): each rank's segments' elements */
    dist_free(&u->di);
    dist_repl(&u->di, 1, u->ish);
    u->di.repl = false;
    if (!(u->di.off = ax__malloc(sizeof *u->di.off * (size_t)(np + 1)))) {
        rc = nomem(r);
        goto out;
    }
    u->di.off[0] = 0;
    for (int q = 0; q < np; q++) {
        u->di.off[q + 1] = u->di.off[q] + all[q];
        if (u->di.off[q + 1] > N) {
            rc = mx_fail(m, AX_ERR_SHAPE, "%s: the segment lengths add up to more than the innermost extent %" PRId64,
                         what, N);
            goto out;
        }
    }
    if (u->di.off[np] != N) {
        rc = mx_fail(m, AX_ERR_SHAPE, "%s: the segment lengths add up to %" PRId64 ", not the innermost extent %" PRId64,
                     what, u->di.off[np], N);
        goto out;
    }
    if (!z)
        for (int64_t k = 0; k < mysegs->size; k++)
            if (sc_load(mysegs->buf[0], s, k).i == 0) {
                rc = mx_fail(m, AX_ERR_SHAPE, "%s: cannot reduce segment %" PRId64 ", which is empty", what, base + k);
                goto out;
            }
    set_rows(r, u);
    /* the source's reads bound to these rows */
    for (int i = 0; i < o->nrd && rc == 0; i++) {
        if (i == si) continue;
        if (o->rd[i].cls == RD_ROW) rc = bind_rows(r, u, i, false);
        else if (o->rd[i].cls == RD_LIN) rc = bind_rows(r, u, i, true);
    }
    if (rc) goto out;
    bind(r, u, srd->var, mysegs);
    if ((rc = run_fetches(r, u, NULL)) || (rc = mx_local(r, o->lx, out))) goto out;
    Dist d;
    dist_repl(&d, 1, sd->shape);
    d.repl = false;
    d.off = ds.off;
    rc = mx_set_dist(r, out[0], &d);
out:
    ax_array_release(mysegs);
    dist_free(&ds);
    free(all);
    return rc;
}

/* ------------------------------------------------------------ permute */

static int permute_reduce(MRun *r, OpRun *u, ax_array *dflt, const Dist *dd, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    ax_array *init = mx_array(r, dflt->elt, dd->rank, dd->shape, false);
    if (!init) return -1;
    /* rank 0 starts from the defaults (gathered, by every rank, when
     * distributed) */
    if (cm_allgather(r, dd, dflt, init)) {
        ax_array_release(init);
        return -1;
    }
    if (m->me != 0 && !u->di.repl) {
        /* the other ranks start from the operator's identity */
        for (int c = 0; c < init->ncomp; c++) {
            ax_scalar s = ty_leaf(init->elt, c);
            Scalar id;
            id.u = 0;
            switch (o->redprim) {
            case P_MUL: id = s == AX_F32 ? (Scalar){.f32 = 1.0f} : s == AX_F64 ? (Scalar){.f64 = 1.0} : (Scalar){.u = 1}; break;
            case P_ADD: if (s == AX_F32) id.f32 = -0.0f; else if (s == AX_F64) id.f64 = -0.0; break;
            case P_MIN: id = sc_norm((Scalar){.u = sc_is_signed(s) ? (UINT64_MAX >> 1) >> (64 - sc_bits(s)) : UINT64_MAX}, s); break;
            case P_MAX: if (sc_is_signed(s)) id.i = -((int64_t)1 << (sc_bits(s) - 1)); break;
            case P_BAND: id = sc_norm((Scalar){.u = UINT64_MAX}, s); break;
            case P_AND: id.b = true; break;
            default: break;
            }
            for (int64_t i = 0; i < init->size; i++) sc_store(init->buf[c], s, i, id);
        }
    }
    bind(r, u, o->pinit, init);
    ax_array_release(init);
    if (run_fetches(r, u, NULL) || mx_local(r, o->lx, out)) return -1;
    if (!u->di.repl && cm_allreduce_array(r, o, out[0])) return -1;
    return set_repl(r, out[0]);
}

static int permute_owner(MRun *r, OpRun *u, ax_array *dflt, const Dist *dd0, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    int np = m->np, rt = dd0->rank;
    const Type *elt = dflt->elt;
    size_t es = mx_elt_size(elt), rec = 8 + es;
    /* the target's blocks: the defaults' own, or blocks of a replicated one */
    Dist dd;
    ax_array *mine = NULL, *tv = NULL;
    int rc = 0;
    if (rt == 0) {
        /* a rank-0 target: every rank combines every pair into its copy */
        dist_repl(&dd, 0, dd0->shape);
        int64_t none[1] = {0};
        if ((mine = mx_array(r, elt, 0, none, false)))
            for (int c = 0; c < mine->ncomp; c++) memcpy(mine->buf[c], dflt->buf[c], mx_leaf_size(elt, c));
    } else if (dd0->repl) {
        if (dist_blocks(m, &dd, rt, dd0->shape)) return nomem(r);
        int64_t sh[AX_MAX_RANK], rs = dist_rowsize(&dd);
        memcpy(sh, dd.shape, sizeof sh);
        sh[0] = dd.off[m->me + 1] - dd.off[m->me];
        ax_array *v = view(r, dflt, dd.off[m->me] * rs, rt, sh);
        mine = v ? mx_array(r, elt, rt, sh, false) : NULL;
        if (mine)
            for (int c = 0; c < mine->ncomp; c++)
                memcpy(mine->buf[c], v->buf[c], (size_t)mine->size * mx_leaf_size(elt, c));
        ax_array_release(v);
    } else {
        dist_copy(&dd, dd0);
        if ((dd.off = ax__malloc(sizeof *dd.off * (size_t)(np + 1))))
            memcpy(dd.off, dd0->off, sizeof *dd.off * (size_t)(np + 1));
        mine = dd.off ? ax_array_retain(dflt) : NULL;
    }
    if (!mine) {
        dist_free(&dd);
        return nomem(r);
    }
    int64_t rs = dist_rowsize(&dd);
    int64_t *cnt = ax__calloc((size_t)np, sizeof *cnt), *fill = ax__calloc((size_t)np, sizeof *fill);
    char *buf = NULL, *got = NULL;
    int64_t n = 0, ngot = 0;
    if (!cnt || !fill) {
        rc = nomem(r);
        goto out;
    }
    double T0 = now_ms();
    if (u->hi > u->lo || u->di.repl) {
        if ((rc = mx_local(r, o->tv, &tv))) goto out;
        n = tv->size;
    }
    double T1 = now_ms();
    /* each element's target: dropped (ax_ignore), checked, its owner and
     * its position in the owner's block */
    int64_t *tl = ax__malloc(sizeof *tl * (size_t)(n + 1));
    int *own = ax__malloc(sizeof *own * (size_t)(n + 1));
    if (!tl || !own) {
        free(tl);
        free(own);
        rc = nomem(r);
        goto out;
    }
    const int64_t *tix[AX_MAX_RANK];
    for (int d = 0; d < rt; d++) tix[d] = tv ? tv->buf[d] : NULL;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        int64_t ix[AX_MAX_RANK], lin = 0;
        bool ignore = rt >= 1, inside = true;
        for (int d = 0; d < rt; d++) {
            ix[d] = tix[d][i];
            if (ix[d] != -1) ignore = false;
            if (ix[d] < 0 || ix[d] >= dd.shape[d]) inside = false;
            lin = lin * dd.shape[d] + ix[d];
        }
        own[i] = -1;
        if (ignore) continue;
        if (!inside) {
            if (r->cx->opt.unsafe) continue;
            char a[256], b[256];
            host_fmt_ints(a, sizeof a, rt, ix);
            host_fmt_ints(b, sizeof b, rt, dd.shape);
            rc = mx_fail(m, AX_ERR_INDEX, "ax_permute: target index (%s) out of bounds for shape (%s)", a, b);
            break;
        }
        if (rt == 0) {   /* (every rank combines every pair: below) */
            own[i] = m->me;
            tl[i] = 0;
            continue;
        }
        int q = np == 1 ? 0 : dist_owner(&dd, np, rs > 1 ? lin / rs : lin);
        /* every rank ran every element (the iteration whole): each keeps its own */
        if (u->di.repl && q != m->me) continue;
        own[i] = q;
        tl[i] = lin - dd.off[q] * rs;
        cnt[q]++;
    }
    if (rc == 0 && rt == 0) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) k += own[i] >= 0;
        for (int q = 0; q < np; q++) cnt[q] = u->di.repl && q != m->me ? 0 : k;
    }
    /* the records for rank q: its positions, then each component's values
     * (a block of cnt[q] each), in the order of the source */
    size_t lsz[256];
    for (int c = 0; c < elt->width && c < 256; c++) lsz[c] = mx_leaf_size(elt, c);
    int64_t tot = 0;
    for (int q = 0; q < np; q++) {
        fill[q] = tot;
        tot += cnt[q];
    }
    if (rc == 0 && elt->width > 256) rc = mx_fail(m, AX_ERR_BACKEND, "axle mpi: ax_permute: an element of more than 256 leaves");
    if (rc == 0 && !(buf = ax__malloc(rec * (size_t)tot + 1))) rc = nomem(r);
    if (rc == 0) {
        int64_t *at = ax__malloc(sizeof *at * (size_t)np);
        if (!at) {
            rc = nomem(r);
        } else {
            for (int q = 0; q < np; q++) at[q] = 0;
            for (int64_t i = 0; i < n; i++) {
                if (own[i] < 0) continue;
                for (int q = rt == 0 ? 0 : own[i]; q < (rt == 0 ? np : own[i] + 1); q++) {
                    if (!cnt[q]) continue;
                    char *seg = buf + rec * (size_t)fill[q];
                    int64_t k = at[q]++;
                    memcpy(seg + 8 * (size_t)k, &tl[i], 8);
                    size_t base = 8 * (size_t)cnt[q];
                    for (int c = 0; c < elt->width; c++) {
                        const char *src = (const char *)tv->buf[rt + c] + (size_t)i * lsz[c];
                        char *dst = seg + base + (size_t)k * lsz[c];
                        switch (lsz[c]) {
                        case 1: *(uint8_t *)(void *)dst = *(const uint8_t *)(const void *)src; break;
                        case 2: memcpy(dst, src, 2); break;
                        case 4: memcpy(dst, src, 4); break;
                        default: memcpy(dst, src, lsz[c]); break;
                        }
                        base += lsz[c] * (size_t)cnt[q];
                    }
                }
            }
            free(at);
        }
    }
    free(tl);
    free(own);
    if (rc) goto out;
    /* the exchange (nothing to send when every rank kept its own) */
    int64_t *rcnt = ax__calloc((size_t)np, sizeof *rcnt);
    if (!rcnt) {
        rc = nomem(r);
        goto out;
    }
    if (u->di.repl || np == 1) {
        got = buf;
        buf = NULL;
        ngot = rcnt[m->me] = cnt[m->me];
    } else {
        char *b = buf;
        buf = NULL;
        rc = cm_exchange(r, b, cnt, rec, &got, &ngot, rcnt);
    }
    if (rc) {
        free(rcnt);
        goto out;
    }
    /* what arrived, in rank order, combined into this rank's block */
    ax_array *tg = mx_array(r, ty_i64(), 1, &ngot, false), *vs = mx_array(r, elt, 1, &ngot, false);
    if (!tg || !vs) {
        ax_array_release(tg);
        ax_array_release(vs);
        free(rcnt);
        rc = -1;
        goto out;
    }
    const char *seg = got;
    int64_t k0 = 0;
    for (int q = 0; q < np; q++) {
        int64_t c_q = rcnt[q];
        if (!c_q) continue;
        memcpy((int64_t *)tg->buf[0] + k0, seg, 8 * (size_t)c_q);
        size_t base = 8 * (size_t)c_q;
        for (int c = 0; c < elt->width; c++) {
            memcpy((char *)vs->buf[c] + (size_t)k0 * lsz[c], seg + base, lsz[c] * (size_t)c_q);
            base += lsz[c] * (size_t)c_q;
        }
        seg += base;
        k0 += c_q;
    }
    free(rcnt);
    bind(r, u, o->own_d, mine);
    bind(r, u, o->own_t, tg);
    bind(r, u, o->own_v, vs);
    ax_array_release(tg);
    ax_array_release(vs);
    double T2 = now_ms();
    if ((rc = mx_local(r, o->own, out))) goto out;
    if (m->trace) fprintf(stderr, "axle: mpi trace: rank %d permute: pairs %.1f ms, sorted %.1f ms, combined %.1f ms\n", m->me, T1 - T0, T2 - T1, now_ms() - T2);
    {
        Dist d = dd;
        rc = mx_set_dist(r, out[0], &d);
    }
out:
    ax_array_release(mine);
    ax_array_release(tv);
    free(cnt);
    free(fill);
    free(buf);
    free(got);
    dist_free(&dd);
    return rc;
}

static int run_permute(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    int di = o->opd[0];   /* the defaults: the first operand */
    ax_array *dflt = u->arr[di];
    const Dist *dd = &u->dist[di];
    int64_t tsize = dist_size(dd), ssize = 1;
    for (int d = 0; d < o->irank; d++) ssize *= u->ish[d];
    /* a private copy per rank and one reduction when the operator is a
     * built-in one and the target is small against the source (a
     * histogram); else (target, value) pairs sent to the owners */
    if (o->builtin && (u->di.repl || tsize * r->m->np <= ssize)) {
        snprintf(r->cur->plan, sizeof r->cur->plan, "local copies + allreduce");
        return permute_reduce(r, u, dflt, dd, out);
    }
    snprintf(r->cur->plan, sizeof r->cur->plan, "(target, value) to owners");
    return permute_owner(r, u, dflt, dd, out);
}

/* ------------------------------------------------------------ stencils */

typedef struct HaloWant {
    const Dist *di;
    int64_t n, rs, h;
    ax_boundary_kind b;
    bool virt;                  /* rows beyond the edges given by the boundary rule */
} HaloWant;

static void halo_rows(const HaloWant *w, int64_t lo, int64_t hi, int64_t *a, int64_t *b)
{
    if (lo >= hi) {
        *a = *b = 0;
        return;
    }
    if (w->virt) {
        *a = lo - w->h;
        *b = hi + w->h;
    } else {
        *a = lo - w->h < 0 ? 0 : lo - w->h;
        *b = hi + w->h > w->n ? w->n : hi + w->h;
    }
}

static int halo_want(void *arg, int q, Ranges *out)
{
    HaloWant *w = arg;
    int64_t a, b;
    halo_rows(w, w->di->off[q], w->di->off[q + 1], &a, &b);
    for (int64_t g = a; g < b; g++) {
        int64_t s = w->virt ? interp_boundary(w->b, g, w->n) : g;
        if (ranges_add(out, s * w->rs, (s + 1) * w->rs)) return -1;
    }
    return 0;
}

static int run_stencil(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    const Stencil *st = o->x->sten;
    int nin = o->x->op == OP_STENCIL2 ? 2 : 1;
    bool virt = false;
    for (int q = 0; q < nin; q++)
        if (st->bound[q] == AX_WRAP) virt = true;
    int64_t rows = u->hi - u->lo;
    int rc = 0;
    int64_t start = 0;
    snprintf(r->cur->plan, sizeof r->cur->plan, u->di.repl ? "whole on every rank" : "halo %d row%s", o->halo,
             o->halo == 1 ? "" : "s");
    for (int q = 0; q < nin && rc == 0; q++) {
        int i = o->opd[q];
        ax_array *a = u->arr[i];
        const Dist *da = &u->dist[i];
        int64_t n = da->shape[0];
        /* the rows with the stencil's widest halo (every input's local rows
         * start at one global row); filled only as far as this input's own
         * halo reaches (the rows beyond it are never read) */
        HaloWant w = {&u->di, n, dist_rowsize(da), o->halo, st->bound[q], virt};
        HaloWant wq = w;
        wq.h = st->size[q][0] / 2;
        if (u->di.repl) {
            rc = bind_full(r, u, i);   /* (every row here: no halo) */
            continue;
        }
        int64_t a0, a1;
        halo_rows(&w, u->lo, u->hi, &a0, &a1);
        if (q == 0) start = a0;
        int64_t sh[AX_MAX_RANK];
        for (int d = 0; d < da->rank; d++) sh[d] = da->shape[d];
        sh[0] = a1 - a0;
        int64_t f0, f1;
        halo_rows(&wq, u->lo, u->hi, &f0, &f1);
        /* every rank's rows (with the widest halo) already its own: read in
         * place (the same answer on every rank: a move is all or none) */
        bool inplace = !virt;
        for (int p = 0; p < r->m->np && inplace; p++) {
            int64_t p0, p1;
            halo_rows(&w, u->di.off[p], u->di.off[p + 1], &p0, &p1);
            if (p1 > p0 && !da->repl && (p0 < da->off[p] || p1 > da->off[p + 1])) inplace = false;
        }
        if (inplace) {
            int64_t first = da->repl ? a0 * w.rs : (a0 - da->off[r->m->me]) * w.rs;
            ax_array *v = a1 > a0 ? view(r, a, first, da->rank, sh) : mx_array(r, a->elt, da->rank, sh, true);
            if (!v) {
                rc = -1;
                break;
            }
            bind(r, u, o->rd[i].var, v);
            ax_array_release(v);
            continue;
        }
        ax_array *b = mx_array(r, a->elt, da->rank, sh, wq.h < w.h);
        if (!b || cm_move(r, da, a, halo_want, &wq, b, (f0 - a0) * w.rs)) {
            ax_array_release(b);
            rc = -1;
            break;
        }
        bind(r, u, o->rd[i].var, b);
        ax_array_release(b);
    }
    if (rc) return -1;
    if (u->di.repl) {
        if (mx_local(r, o->lx, out)) return -1;
        return set_repl(r, out[0]);
    }
    ax_array *ext = NULL;
    if (rows > 0 && mx_local(r, o->lx, &ext)) return -1;
    if (ext && start == u->lo && ext->shape[0] == rows) {
        /* no halo rows were computed: the result as it is */
        out[0] = ext;
        Dist d;
        dist_repl(&d, o->irank, u->ish);
        for (int dd = 1; dd < o->irank; dd++) d.shape[dd] = ext->shape[dd];
        d.repl = false;
        d.off = u->di.off;
        return mx_set_dist(r, ext, &d);
    }
    /* this rank's rows of what was computed over the rows with their halo */
    int64_t sh[AX_MAX_RANK];
    for (int d = 0; d < o->irank; d++) sh[d] = d == 0 ? rows : (ext ? ext->shape[d] : u->ish[d]);
    ax_array *res = mx_array(r, o->x->type->elt, o->irank, sh, false);
    if (!res) {
        ax_array_release(ext);
        return -1;
    }
    if (ext && rows > 0) {
        int64_t rs = 1;
        for (int d = 1; d < o->irank; d++) rs *= ext->shape[d];
        for (int c = 0; c < res->ncomp; c++) {
            size_t sz = mx_leaf_size(res->elt, c);
            memcpy(res->buf[c], (char *)ext->buf[c] + (size_t)((u->lo - start) * rs) * sz, (size_t)res->size * sz);
        }
    }
    ax_array_release(ext);
    out[0] = res;
    Dist d;
    dist_repl(&d, o->irank, u->ish);
    for (int dd = 1; dd < o->irank; dd++) d.shape[dd] = sh[dd];
    d.repl = false;
    d.off = u->di.off;
    return mx_set_dist(r, res, &d);
}

/* ------------------------------------------------------------ reshape */

typedef struct LinWant {
    const Dist *d;
    int64_t rs;
} LinWant;

static int lin_want(void *arg, int q, Ranges *out)
{
    LinWant *w = arg;
    return ranges_add(out, w->d->off[q] * w->rs, w->d->off[q + 1] * w->rs);
}

static int run_reshape(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    int si = o->opd[0];
    ax_array *a = u->arr[si];
    const Dist *da = &u->dist[si];
    Scalar sv[AX_MAX_RANK + 1];
    if (host_exp(r, o->gshape, sv)) return -1;
    int rk = o->irank;
    int64_t sh[AX_MAX_RANK];
    for (int d = 0; d < rk; d++) sh[d] = sv[d].i;
    int64_t n = shape_size_checked(r->cx, "ax_reshape", rk, sh);
    if (n < 0) return -1;
    if (n != dist_size(da)) {
        char x[256], y[256];
        host_fmt_ints(x, sizeof x, da->rank, da->shape);
        host_fmt_ints(y, sizeof y, rk, sh);
        return mx_fail(m, AX_ERR_SHAPE, "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%"
                       PRId64 " elements)", x, dist_size(da), y, n);
    }
    Dist d;
    if (da->repl || rk == 0) {
        /* whole on every rank (gathered when the source is distributed) */
        dist_repl(&d, rk, sh);
        ax_array *b = mx_array(r, a->elt, rk, sh, false);
        if (!b) return -1;
        if (da->repl) {
            for (int c = 0; c < b->ncomp; c++) memcpy(b->buf[c], a->buf[c], (size_t)b->size * mx_leaf_size(b->elt, c));
        } else if (cm_allgather(r, da, a, b)) {
            ax_array_release(b);
            return -1;
        }
        out[0] = b;
        return mx_set_dist(r, b, &d);
    }
    if (dist_blocks(m, &d, rk, sh)) return nomem(r);
    int64_t lsh[AX_MAX_RANK];
    memcpy(lsh, sh, sizeof lsh);
    lsh[0] = d.off[m->me + 1] - d.off[m->me];
    ax_array *b = mx_array(r, a->elt, rk, lsh, false);
    LinWant w = {&d, dist_rowsize(&d)};
    int rc = b && cm_move(r, da, a, lin_want, &w, b, 0) == 0 ? 0 : -1;
    if (rc == 0) {
        out[0] = b;
        rc = mx_set_dist(r, b, &d);
    } else {
        ax_array_release(b);
    }
    dist_free(&d);
    return rc;
}

/* ------------------------------------------------------------ one operation */

static const char *plan_of(const OpRun *u)
{
    const MOp *o = u->o;
    switch (o->kind) {
    case MK_ELEM: return u->di.repl ? "whole on every rank" : o->nfe ? "local + fetch" : "local";
    case MK_FETCHBP: return "fetch (request/reply)";
    case MK_ROWS: return u->di.repl ? "whole on every rank" : "local rows";
    case MK_FOLDVEC: return u->di.repl ? "whole on every rank" : o->builtin ? "local + allreduce" :
                            "local + allreduce (ordered)";
    case MK_SEGVEC: return "segments whole + local";
    case MK_SCANVEC: return u->di.repl ? "whole on every rank" : "local + exscan + fix-up";
    case MK_FILTER: return u->di.repl ? "whole on every rank" : "local + counts";
    case MK_RESHAPE: return "moved by positions";
    case MK_COND: return "condition";
    case MK_WHOLE: return "gathered, whole on every rank";
    default: return "";
    }
}

/* AXLE_MPI_TRACE=1: each operation's iteration and reads, per rank (for
 * finding where ranks part ways). */
static void trace(MRun *r, const OpRun *u)
{
    const MOp *o = u->o;
    char b[2048];
    int k = snprintf(b, sizeof b, "axle: mpi trace: rank %d tag %d op %d %s kind %d: iteration (", r->m->me, r->m->tag,
                     o->index, o->name, (int)o->kind);
    for (int d = 0; d < o->irank && k < 1900; d++) k += snprintf(b + k, sizeof b - (size_t)k, "%s%lld", d ? "," : "",
                                                               (long long)u->ish[d]);
    k += snprintf(b + k, sizeof b - (size_t)k, ") rows %lld..%lld%s;", (long long)u->lo, (long long)u->hi,
                  u->di.repl ? " (whole)" : "");
    for (int i = 0; i < o->nrd && k < 1900; i++) {
        const Dist *d = &u->dist[i];
        k += snprintf(b + k, sizeof b - (size_t)k, " read %d cls %d (%lld rows%s)", i, (int)o->rd[i].cls,
                      (long long)(d->rank ? d->shape[0] : 0), d->repl ? " whole" : "");
        for (int q = 0; !d->repl && q <= r->m->np && k < 1900; q++)
            k += snprintf(b + k, sizeof b - (size_t)k, "%s%lld", q ? "," : " off ", (long long)d->off[q]);
    }
    fprintf(stderr, "%s\n", b);
}

/* Binds what op o's code reads besides its blocks: the meta array (the
 * global extents of its reads) and the arrays read whole.  0, or -1. */
static int bind_meta_and_full(MRun *r, OpRun *u, const MOp *o)
{
    int64_t nm = o->nmeta;
    if (!(u->meta = mx_array(r, ty_i64(), 1, &nm, true))) return -1;
    u->mv = u->meta->buf[0];
    for (int i = 0; i < o->nrd; i++)
        for (int d = 0; d < u->dist[i].rank; d++) u->mv[o->rd[i].meta + d] = u->dist[i].shape[d];
    bind(r, u, o->meta, u->meta);
    int rc = 0;
    for (int i = 0; i < o->nrd && rc == 0; i++)
        if (o->rd[i].cls == RD_FULL) rc = bind_full(r, u, i);
    return rc;
}

static int run_op(MRun *r, MOp *o, ax_array **out)
{
    const Node *x = o->x;
    OpRun u;
    memset(&u, 0, sizeof u);
    u.o = o;
    int rc = 0, nb = o->nrd + o->nfe + 8;
    u.arr = ax__calloc((size_t)o->nrd + 1, sizeof *u.arr);
    u.dist = ax__calloc((size_t)o->nrd + 1, sizeof *u.dist);
    u.bound = ax__calloc((size_t)nb, sizeof *u.bound);
    if (!u.arr || !u.dist || !u.bound) {
        op_end(r, &u);
        return nomem(r);
    }
    /* the operands, through the walk (their reads counted), then the
     * arrays the code reads, with their distributions */
    for (int k = 0; k < o->nopd && rc == 0; k++) {
        ax_array *a = NULL;
        if ((rc = host_eval1(&r->h, x->kid[o->opdkid[k]], &a))) break;
        int i = o->opd[k];
        if (!u.arr[i]) u.arr[i] = a;
        else ax_array_release(a);
    }
    for (int i = 0; i < o->nrd && rc == 0; i++) {
        const MRead *rd = &o->rd[i];
        if (!u.arr[i]) {
            ax_array **v = rd->use ? (ax_array **)&rd->use->arr : rd->id >= 0 && rd->id < r->h.nvars ? r->h.aenv[rd->id] : NULL;
            if (!v || !v[rd->off]) {
                rc = host_malformed(&r->h, x, "unbound array variable");
                break;
            }
            u.arr[i] = ax_array_retain(v[rd->off]);
        }
        if (array_host(u.arr[i])) {
            rc = -1;
            break;
        }
        Dist tmp;
        const Dist *d = mx_dist(r, u.arr[i], &tmp);
        u.dist[i] = *d;
        u.dist[i].off = NULL;
        if (!d->repl) {
            if (!(u.dist[i].off = ax__malloc(sizeof *u.dist[i].off * (size_t)(r->m->np + 1)))) rc = nomem(r);
            else memcpy(u.dist[i].off, d->off, sizeof *d->off * (size_t)(r->m->np + 1));
        }
    }
    if (rc == 0) rc = bind_meta_and_full(r, &u, o);
    /* the iteration's extents */
    if (rc == 0) {
        Scalar sv[AX_MAX_RANK + 1];
        switch (o->ishape) {
        case IS_EXP:
            if ((rc = host_exp(r, o->gshape, sv))) break;
            for (int d = 0; d < o->irank; d++) u.ish[d] = sv[d].i;
            if (shape_size_checked(r->cx, o->name, o->irank, u.ish) < 0) rc = -1;
            break;
        case IS_OPD0:
            for (int d = 0; d < o->irank; d++) u.ish[d] = u.dist[o->main].shape[d];
            break;
        case IS_OPDS:
            for (int d = 0; d < o->irank; d++) {
                u.ish[d] = INT64_MAX;
                for (int k = 0; k < o->nopd; k++)
                    if (u.dist[o->opd[k]].shape[d] < u.ish[d]) u.ish[d] = u.dist[o->opd[k]].shape[d];
            }
            break;
        default:
            break;
        }
    }
    if (rc == 0 && o->kind != MK_RESHAPE && o->kind != MK_COND) rc = choose_rows(r, &u, o->kind == MK_WHOLE);
    if (rc == 0 && o->kind != MK_RESHAPE && o->kind != MK_COND) set_rows(r, &u);
    if (rc == 0) snprintf(r->cur->plan, sizeof r->cur->plan, "%s", plan_of(&u));
    if (rc == 0 && r->m->trace) trace(r, &u);
    /* the row-local reads (a segmented fold of a vector binds its own) */
    for (int i = 0; i < o->nrd && rc == 0 && o->kind != MK_SEGVEC; i++) {
        if (o->rd[i].cls == RD_ROW) rc = bind_rows(r, &u, i, false);
        else if (o->rd[i].cls == RD_LIN) rc = bind_rows(r, &u, i, true);
        else if (o->rd[i].cls == RD_ASIS && o->kind != MK_PERMUTE) bind(r, &u, o->rd[i].var, u.arr[i]);
    }
    if (rc == 0) {
        switch (o->kind) {
        case MK_ELEM: case MK_FETCHBP: rc = run_elem(r, &u, out); break;
        case MK_ROWS: rc = run_rows(r, &u, out); break;
        case MK_FOLDVEC: rc = run_foldvec(r, &u, out); break;
        case MK_SEGVEC: rc = run_segvec(r, &u, out); break;
        case MK_SCANVEC: rc = run_scanvec(r, &u, out); break;
        case MK_FILTER: rc = run_filter(r, &u, out); break;
        case MK_PERMUTE: rc = run_permute(r, &u, out); break;
        case MK_STENCIL: rc = run_stencil(r, &u, out); break;
        case MK_RESHAPE: rc = run_reshape(r, &u, out); break;
        case MK_WHOLE: rc = run_whole(r, &u, out); break;
        default: rc = host_malformed(&r->h, x, "not an operation"); break;
        }
    }
    op_end(r, &u);
    return rc;
}

/* ------------------------------------------------------------ the walk */

/* AXLE_DEBUG=verify: a replicated result must have the same bits on every
 * rank (its value steers acond and awhile: ranks that disagree would part
 * ways and wait for each other forever).  One small allreduce. */
static int verify_repl(MRun *r, const MOp *o, ax_array **out, int w)
{
    uint64_t h = 1;
    bool any = false;
    for (int k = 0; k < w; k++) {
        Dist tmp;
        const Dist *d = mx_dist(r, out[k], &tmp);
        if (!d->repl || out[k]->size > 4096) continue;
        any = true;
        for (int c = 0; c < out[k]->ncomp; c++)
            h = hash_combine(h, hash_bytes(out[k]->buf[c], (size_t)out[k]->size * mx_leaf_size(out[k]->elt, c)));
    }
    if (!any || r->m->np == 1) return 0;
    /* (non-blocking, as every transfer: a rank that never joins it must
     * not hold this one for ever; the buffers on the heap, kept if the
     * reduction is left pending) */
    uint64_t *v = ax__malloc(4 * sizeof *v), *g = v + 2;
    if (!v) return nomem(r);
    v[0] = h;
    v[1] = ~h;
    MPI_Request rq;
    int e = MPI_Iallreduce(v, g, 2, MPI_UINT64_T, MPI_MAX, r->m->work, &rq);
    if (e != MPI_SUCCESS) {
        free(v);
        return mx_fail(r->m, AX_ERR_BACKEND, "axle mpi: MPI_Iallreduce failed");
    }
    if (cm_wait(r, &rq, 1)) {
        cm_keep(r->m, v);
        return -1;
    }
    bool same = g[0] == h && ~g[1] == h;
    free(v);
    if (same) return 0;
    return mx_fail(r->m, AX_ERR_BACKEND, "axle mpi: %s (operation %d): the ranks' replicated results differ (a bug "
                   "of the distributed executor)", o->name, o->index);
}

static int mpi_op(Host *h, const Node *x, ax_array **out)
{
    MRun *r = h->self;
    MOp *o = mx_op(r->pr, x);
    if (!o) return host_malformed(h, x, "no distributed form");
    MStat *st = &r->stat[o->index], *was = r->cur;
    r->cur = st;
    st->name = o->name;
    double t0 = now_ms();
    int rc = run_op(r, o, out);
    if (rc == 0 && (r->cx->opt.debug & AX_DEBUG_VERIFY)) rc = verify_repl(r, o, out, host_width(x->type));
    if (rc)   /* (the walk takes nothing from a failed operation) */
        for (int k = 0; k < host_width(x->type); k++) {
            ax_array_release(out[k]);
            out[k] = NULL;
        }
    if (r->m->trace && rc == 0 && out[0] && out[0]->rank == 0 && out[0]->ncomp >= 1) {
        Scalar v = sc_load(out[0]->buf[0], ty_leaf(out[0]->elt, 0), 0);
        fprintf(stderr, "axle: mpi trace: rank %d op %d result %llx\n", r->m->me, o->index, (unsigned long long)v.u);
    }
    st->ms += now_ms() - t0;
    st->runs++;
    r->cur = was;
    return rc;
}

static int mpi_cond(Host *h, const Node *x, bool *c)
{
    MRun *r = h->self;
    MOp *o = mx_op(r->pr, x);
    if (!o) return host_malformed(h, x, "no distributed form");
    MStat *st = &r->stat[o->index], *was = r->cur;
    r->cur = st;
    st->name = o->name;
    snprintf(st->plan, sizeof st->plan, "condition");
    OpRun u;
    memset(&u, 0, sizeof u);
    u.o = o;
    int rc = 0;
    u.arr = ax__calloc((size_t)o->nrd + 1, sizeof *u.arr);
    u.dist = ax__calloc((size_t)o->nrd + 1, sizeof *u.dist);
    u.bound = ax__calloc((size_t)o->nrd + 8, sizeof *u.bound);
    if (!u.arr || !u.dist || !u.bound) rc = nomem(r);
    for (int i = 0; i < o->nrd && rc == 0; i++) {
        const MRead *rd = &o->rd[i];
        ax_array **v = rd->use ? (ax_array **)&rd->use->arr : rd->id >= 0 && rd->id < r->h.nvars ? r->h.aenv[rd->id] : NULL;
        if (!v || !v[rd->off]) {
            rc = host_malformed(h, x, "unbound array variable");
            break;
        }
        u.arr[i] = ax_array_retain(v[rd->off]);
        Dist tmp;
        const Dist *d = mx_dist(r, u.arr[i], &tmp);
        u.dist[i] = *d;
        u.dist[i].off = NULL;
        if (!d->repl && (u.dist[i].off = ax__malloc(sizeof *d->off * (size_t)(r->m->np + 1))))
            memcpy(u.dist[i].off, d->off, sizeof *d->off * (size_t)(r->m->np + 1));
        else if (!d->repl) rc = nomem(r);
    }
    if (rc == 0) rc = bind_meta_and_full(r, &u, o);
    Scalar v;
    if (rc == 0 && (rc = run0(r, o->lx, &v)) == 0) *c = (v.u & 0xff) != 0;
    op_end(r, &u);
    st->runs++;
    r->cur = was;
    return rc;
}

static const HostOps mpi_host = {.name = "mpi", .op = mpi_op, .cond = mpi_cond, .embeds_delayed = true};

/* ------------------------------------------------------------ a run */

/* The embedded arrays' distributions (and, for inputs split across the
 * ranks, the views of this rank's rows the program reads instead). */
typedef struct Swap {
    Node *x;
    ax_array *was;
} Swap;

int mx_run(ax_mpi_program *pr, ax_darray *const *args, int nargs, ax_darray **out, int max)
{
    ax_mpi *m = pr->m;
    MRun r;
    memset(&r, 0, sizeof r);
    r.m = m;
    r.pr = pr;
    r.cx = m->cx;
    hmap_init(&r.dmap);
    int w = host_width(pr->p->root->type), n = -1, rc = 0;
    Swap *sw = ax__calloc((size_t)(pr->nheld + pr->npuse + 1), sizeof *sw);
    int nsw = 0;
    ax_array **res = ax__calloc((size_t)(w + 1), sizeof *res), **views = ax__calloc((size_t)(pr->nheld + 1), sizeof *views);
    r.stat = ax__calloc((size_t)pr->nops + 1, sizeof *r.stat);
    r.cells = ax__calloc((size_t)pr->p->nvars + 1, sizeof *r.cells);
    if (!sw || !res || !views || !r.stat || !r.cells) {
        rc = nomem(&r);
        goto out;
    }
    /* parameters: the placeholders' nodes read the arguments' blocks */
    for (int i = 0; i < pr->npuse && rc == 0; i++) {
        int k = pr->puse[i].place->param - 1;
        ax_darray *a = args[k];
        sw[nsw++] = (Swap){pr->puse[i].x, pr->puse[i].x->arr};
        pr->puse[i].x->arr = ax_darray_local(a);
        rc = mx_set_dist(&r, ax_darray_local(a), mx_darray_dist(a));
    }
    /* embedded arrays: distributed ones have their distribution; plain
     * ones are replicated, or split into blocks when asked */
    for (int i = 0; i < pr->nheld && rc == 0; i++) {
        ax_array *a = pr->held[i];
        if (a->param) continue;
        if (pr->dheld[i]) {
            rc = mx_set_dist(&r, a, mx_darray_dist(pr->dheld[i]));
            continue;
        }
        Dist d;
        if (m->split_inputs && a->rank >= 1) {
            if (array_host(a) || dist_blocks(m, &d, a->rank, a->shape)) {
                rc = -1;
                break;
            }
            int64_t sh[AX_MAX_RANK], rs = dist_rowsize(&d);
            memcpy(sh, a->shape, sizeof sh);
            sh[0] = d.off[m->me + 1] - d.off[m->me];
            views[i] = view(&r, a, d.off[m->me] * rs, a->rank, sh);
            if (!views[i] || mx_set_dist(&r, views[i], &d)) rc = -1;
            dist_free(&d);
        } else {
            dist_repl(&d, a->rank, a->shape);
            rc = mx_set_dist(&r, a, &d);
        }
    }
    /* (the USE nodes of split inputs read their views for this run) */
    if (rc == 0) {
        for (int i = 0; i < pr->nuse; i++) {
            Node *x = pr->uses[i];
            for (int j = 0; j < pr->nheld; j++)
                if (views[j] && pr->held[j] == x->arr) {
                    sw[nsw++] = (Swap){x, x->arr};
                    x->arr = views[j];
                    break;
                }
        }
    }
    if (rc == 0 && !host_init(&r.h, &mpi_host, &r, m->cx, pr->p, pr->live)) rc = -1;
    if (rc == 0 && pr->be == &backend_interp && !(r.ie = interp_eval_new(m->cx, pr->p->nvars, r.h.aenv))) rc = -1;
    if (rc == 0 && host_eval(&r.h, pr->p->root, res) == 0) {
        n = max < 0 ? 0 : w < max ? w : max;
        for (int k = 0; k < w && n >= 0; k++) {
            if (k >= n) {
                ax_array_release(res[k]);
                res[k] = NULL;
                continue;
            }
            Dist tmp;
            const Dist *d = mx_dist(&r, res[k], &tmp);
            if (!(out[k] = mx_darray_new(m, res[k], d))) {
                for (int j = 0; j < k; j++) ax_darray_release(out[j]);
                for (int j = k + 1; j < w; j++) ax_array_release(res[j]);
                nomem(&r);
                n = -1;
            }
            res[k] = NULL;
        }
    }
    if (r.h.aenv) host_free(&r.h);
out:
    for (int i = nsw - 1; i >= 0; i--) sw[i].x->arr = sw[i].was;
    for (int i = 0; views && i < pr->nheld; i++) ax_array_release(views[i]);
    if (n < 0) cm_notify(&r);
    /* the statistics of this run */
    free(m->stat);
    m->stat = r.stat;
    m->nstat = r.stat ? pr->nops : 0;
    m->statop = pr->ops;
    for (int i = 0; i < m->nstat && pr->ops; i++)
        if (!m->stat[i].plan[0]) snprintf(m->stat[i].plan, sizeof m->stat[i].plan, "%s", "not run");
    if (r.cells)
        for (int v = 0; v < pr->p->nvars; v++) ax_array_release(r.cells[v]);
    free(r.cells);
    if (r.ie) interp_eval_free(r.ie);
    for (int i = 0; i < r.ndrec; i++) dist_free(&r.drec[i].d);
    free(r.drec);
    hmap_free(&r.dmap);
    free(sw);
    free(res);
    free(views);
    (void)rc;
    return n;
}
