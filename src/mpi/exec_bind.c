/*
 * One operation of the distributed executor, before its skeleton runs
 * (exec.c runs it): what it reads bound to its fresh variables (the rows
 * of its iteration, moved where they are not here; whole arrays,
 * gathered; the values fetched for reads at computed indices), its
 * iteration's rows chosen, and the distributions of its results.  Every
 * choice here depends only on what every rank knows alike, so the ranks
 * make the same transfers in the same order.  Also the distributions of
 * the run's arrays (mx_dist, mx_set_dist).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nomem(MRun *r) { return mx_fail(r->m, AX_ERR_NOMEM, "axle mpi: out of memory"); }

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

/* ------------------------------------------------------------ one operation's state (OpRun: mpi_int.h) */

void exec_bind(MRun *r, OpRun *u, int var, ax_array *a)
{
    mx_bind(r, var, a);
    u->bound[u->nbound++] = var;
}

void exec_op_end(MRun *r, OpRun *u)
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
ax_array *exec_view(MRun *r, ax_array *a, int64_t first, int rank, const int64_t *shape)
{
    void *bufs[256];
    if (a->ncomp > 256) return NULL;
    for (int c = 0; c < a->ncomp; c++) bufs[c] = (char *)a->buf[c] + (size_t)first * mx_leaf_size(a->elt, c);
    return ax_array_wrap_n(r->cx, a->elt, rank, shape, bufs);
}

/* ------------------------------------------------------------ binding the reads */

int exec_row_want(void *arg, int q, Ranges *out)
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
int exec_bind_rows(MRun *r, OpRun *u, int i, bool lin)
{
    MOp *o = u->o;
    MRead *rd = &o->rd[i];
    ax_array *a = u->arr[i];
    const Dist *da = &u->dist[i];
    int np = r->m->np;
    bool all = u->di.repl;
    if (da->rank == 0) {   /* (no rows: every rank holds it) */
        exec_bind(r, u, rd->var, a);
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
        b = a1 > a0 && here ? exec_view(r, a, first, da->rank, sh) : mx_array(r, a->elt, da->rank, sh, false);
        if (!b) return -1;
    } else {
        if (!(b = mx_array(r, a->elt, da->rank, sh, false))) return -1;
        RowWant w = {all ? NULL : &u->di, n, rs, lin, irs, all};
        if (cm_move(r, da, a, exec_row_want, &w, b, 0)) {
            ax_array_release(b);
            return -1;
        }
    }
    exec_bind(r, u, rd->var, b);
    ax_array_release(b);
    return 0;
}

/* The whole of read i (gathered when distributed). */
int exec_bind_full(MRun *r, OpRun *u, int i)
{
    MRead *rd = &u->o->rd[i];
    const Dist *da = &u->dist[i];
    if (da->repl) {
        exec_bind(r, u, rd->var, u->arr[i]);
        return 0;
    }
    ax_array *f = mx_array(r, u->arr[i]->elt, da->rank, da->shape, false);
    if (!f || cm_allgather(r, da, u->arr[i], f)) {
        ax_array_release(f);
        return -1;
    }
    exec_bind(r, u, rd->var, f);
    ax_array_release(f);
    return 0;
}

/* ------------------------------------------------------------ the iteration */

/* Evaluates a host expression (a global shape) with the operation's
 * variables bound: leaves into out. */
int exec_host_exp(MRun *r, const Node *e, Scalar *out)
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
int exec_choose_rows(MRun *r, OpRun *u, bool whole)
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

void exec_set_rows(MRun *r, OpRun *u)
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
int exec_fetches(MRun *r, OpRun *u, ax_array **firstval)
{
    MOp *o = u->o;
    ax_array *ins = NULL;
    if (firstval) *firstval = NULL;
    if (o->nfe == 0) return 0;
    double T0 = mx_now_ms();
    if (mx_local(r, o->insp, &ins)) return -1;
    if (r->m->trace) fprintf(stderr, "axle: mpi trace: rank %d fetch: inspector %.1f ms\n", r->m->me, mx_now_ms() - T0);
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
        double T1 = mx_now_ms();
        if (r->m->trace) fprintf(stderr, "axle: mpi trace: rank %d fetch: positions %.1f ms\n", r->m->me, T1 - T0);
        if (!vals || cm_fetch(r, d, u->arr[s], pos, k, vals)) {
            ax_array_release(vals);
            rc = -1;
            break;
        }
        if (r->m->trace) fprintf(stderr, "axle: mpi trace: rank %d fetch: exchange %.1f ms\n", r->m->me, mx_now_ms() - T1);
        /* each fetch's share, as an array over the iteration */
        int64_t at = 0;
        for (int g = f; g < o->nfe && rc == 0; g++) {
            if (o->fe[g].src != s) continue;
            done[g] = true;
            int64_t sh[AX_MAX_RANK];
            for (int dd = 0; dd < o->irank; dd++) sh[dd] = u->mv[META_SHAPE + dd];
            ax_array *fv = exec_view(r, vals, at, o->irank, sh);
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
            exec_bind(r, u, o->fe[g].var, own);
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

/* ------------------------------------------------------------ the results' distributions */

/* The distribution of a result of the iteration's rows (its own extents
 * inside; rows as the iteration's). */
int exec_result_rows(MRun *r, OpRun *u, ax_array *res, int64_t rows)
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

int exec_set_repl(MRun *r, ax_array *a)
{
    Dist d;
    dist_repl(&d, a->rank, a->shape);
    return mx_set_dist(r, a, &d);
}
