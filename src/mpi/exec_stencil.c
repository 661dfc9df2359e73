/*
 * The distributed executor's stencils: each rank's block of rows with the
 * halo its neighbourhood reads, the rows past the array's edges as the
 * boundary rule says (the interpreter's rule, interp_boundary).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        int64_t s = w->virt ? ir_boundary(w->b, g, w->n) : g;
        if (ranges_add(out, s * w->rs, (s + 1) * w->rs)) return -1;
    }
    return 0;
}

int exec_stencil(MRun *r, OpRun *u, ax_array **out)
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
            rc = exec_bind_full(r, u, i);   /* (every row here: no halo) */
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
            ax_array *v = a1 > a0 ? exec_view(r, a, first, da->rank, sh) : mx_array(r, a->elt, da->rank, sh, true);
            if (!v) {
                rc = -1;
                break;
            }
            exec_bind(r, u, o->rd[i].var, v);
            ax_array_release(v);
            continue;
        }
        ax_array *b = mx_array(r, a->elt, da->rank, sh, wq.h < w.h);
        if (!b || cm_move(r, da, a, halo_want, &wq, b, (f0 - a0) * w.rs)) {
            ax_array_release(b);
            rc = -1;
            break;
        }
        exec_bind(r, u, o->rd[i].var, b);
        ax_array_release(b);
    }
    if (rc) return -1;
    if (u->di.repl) {
        if (mx_local(r, o->lx, out)) return -1;
        return exec_set_repl(r, out[0]);
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
