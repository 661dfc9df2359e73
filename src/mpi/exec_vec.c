/*
 * The distributed executor's skeletons for operations over a vector that
 * combine across its blocks: a fold (local fold1, one reduction, z), a
 * scan (local scan, an exclusive scan of the blocks' totals, a fix-up), a
 * segmented fold (each rank's segments whole) and a filter (local, then
 * the counts; rebalanced when asked).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int nomem(MRun *r) { return mx_fail(r->m, AX_ERR_NOMEM, "axle mpi: out of memory"); }

/* fold of a vector: local fold1, one reduction, then z */
int exec_foldvec(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    const Type *elt = o->x->type->elt;
    int w = elt->width;
    Scalar *v = ax__calloc((size_t)(3 * w + 1), sizeof *v), *red = v + w, *z = v + 2 * w;
    if (!v) return nomem(r);
    int rc = 0;
    bool has = u->hi > u->lo, anyhas = u->ish[0] > 0, rh = false;
    /* (the fetch is collective: every rank takes part, rows or none) */
    if ((rc = exec_fetches(r, u, NULL))) goto out;
    if (has) {
        ax_array *p = NULL;
        if ((rc = mx_local(r, o->lx, &p))) goto out;
        mx_leaves_of(p, 0, v);
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
        if ((rc = mx_run0(r, o->zk, z))) goto out;
        if (rh && (rc = mx_combine(r, o, elt, z, red, red))) goto out;
        if (!rh) memcpy(red, z, sizeof *v * (size_t)w);
    } else if (!rh) {
        rc = mx_fail(r->m, AX_ERR_SHAPE, "%s: cannot reduce an empty row (the innermost extent is 0)", o->name);
        goto out;
    }
    if (!(out[0] = mx_scalar_array(r, elt, red))) rc = -1;
    else rc = exec_set_repl(r, out[0]);
out:
    free(v);
    return rc;
}

int exec_filter(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    if (o->iota != AX_NSCALAR && sc_bits(o->iota) < 64 &&
        u->ish[0] > (int64_t)((sc_is_signed(o->iota) ? UINT64_MAX >> 1 : UINT64_MAX) >> (64 - sc_bits(o->iota))))
        return mx_fail(m, AX_ERR_BACKEND, "axle mpi: %s of positions converted to %s over %" PRId64 " elements (more than "
                       "the type holds) is not distributed yet", o->name, ax_scalar_name(o->iota), u->ish[0]);
    if (exec_fetches(r, u, NULL) || mx_local(r, o->lx, out)) return -1;
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
                if (!b || cm_move(r, &d, out[0], exec_row_want, &w, b, 0)) {
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
int exec_scanvec(MRun *r, OpRun *u, ax_array **out)
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
    if ((rc = exec_fetches(r, u, NULL))) goto out;   /* (collective) */
    if (n > 0) {
        if ((rc = mx_local(r, o->lx, &y))) goto out;
        mx_leaves_of(y, o->right ? 0 : n - 1, v);
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
        if ((rc = mx_run0(r, o->zk, z))) goto out;
        if (eh) rc = o->right ? mx_combine(r, o, elt, ex, z, c) : mx_combine(r, o, elt, z, ex, c);
        else memcpy(c, z, sizeof *v * (size_t)w);
        ch = true;
        if (rc) goto out;
    }
    /* the fixed-up local scan */
    ax_array *fx = y;
    if (ch && (n > 0 || o->excl)) {
        ax_array *ca = mx_scalar_array(r, elt, c);
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
        if (rc || !(tot = mx_scalar_array(r, elt, c)) || (rc = exec_set_repl(r, tot))) {
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
int exec_segvec(MRun *r, OpRun *u, ax_array **out)
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
        mysegs = exec_view(r, segs, ds.off[m->me], 1, &k);
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
    exec_set_rows(r, u);
    /* the source's reads bound to these rows */
    for (int i = 0; i < o->nrd && rc == 0; i++) {
        if (i == si) continue;
        if (o->rd[i].cls == RD_ROW) rc = exec_bind_rows(r, u, i, false);
        else if (o->rd[i].cls == RD_LIN) rc = exec_bind_rows(r, u, i, true);
    }
    if (rc) goto out;
    exec_bind(r, u, srd->var, mysegs);
    if ((rc = exec_fetches(r, u, NULL)) || (rc = mx_local(r, o->lx, out))) goto out;
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
