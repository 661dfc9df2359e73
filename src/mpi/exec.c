/*
 * The distributed executor: the program's array level walked on every
 * rank (runtime/host.c's walk: lets, tuples, acond, awhile), each
 * operation run as its MOp says (mpi_int.h, localise.c).  Every decision
 * here (where an iteration's rows go, what moves) depends only on what
 * every rank knows alike (global shapes, distributions), so the ranks
 * make the same transfers in the same order.
 *
 * This file: the run (mx_run), the walk's operations (mpi_op, mpi_cond),
 * one operation (its reads, iteration and skeleton, in run_op), and the
 * skeletons that run locally or only move rows (elementwise, rows, whole,
 * reshape).  The rest: exec_bind.c (an operation's reads and iteration,
 * the run's distributions), exec_vec.c (fold, scan, segmented fold and
 * filter of a vector), exec_permute.c, exec_stencil.c.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "backend/interp/interp.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nomem(MRun *r) { return mx_fail(r->m, AX_ERR_NOMEM, "axle mpi: out of memory"); }

/* ------------------------------------------------------------ the skeletons that run locally or move rows */

static int run_elem(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    ax_array *first = NULL;
    if (exec_fetches(r, u, o->kind == MK_FETCHBP && !o->lx ? &first : NULL)) return -1;
    if (o->kind == MK_FETCHBP && !o->lx) {
        out[0] = first;
    } else if (mx_local(r, o->lx, out)) {
        ax_array_release(first);
        return -1;
    }
    return exec_result_rows(r, u, out[0], o->irank > 0 ? u->ish[0] : 0);
}

static int run_rows(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    if (exec_fetches(r, u, NULL) || mx_local(r, o->lx, out)) return -1;
    int w = host_width(o->x->type);
    for (int k = 0; k < w; k++)
        if (exec_result_rows(r, u, out[k], u->ish[0])) return -1;
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
    if (exec_host_exp(r, o->gshape, sv)) return -1;
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
    exec_bind(r, u, o->meta, u->meta);
    int rc = 0;
    for (int i = 0; i < o->nrd && rc == 0; i++)
        if (o->rd[i].cls == RD_FULL) rc = exec_bind_full(r, u, i);
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
        exec_op_end(r, &u);
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
            if ((rc = exec_host_exp(r, o->gshape, sv))) break;
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
    if (rc == 0 && o->kind != MK_RESHAPE && o->kind != MK_COND) rc = exec_choose_rows(r, &u, o->kind == MK_WHOLE);
    if (rc == 0 && o->kind != MK_RESHAPE && o->kind != MK_COND) exec_set_rows(r, &u);
    if (rc == 0) snprintf(r->cur->plan, sizeof r->cur->plan, "%s", plan_of(&u));
    if (rc == 0 && r->m->trace) trace(r, &u);
    /* the row-local reads (a segmented fold of a vector binds its own) */
    for (int i = 0; i < o->nrd && rc == 0 && o->kind != MK_SEGVEC; i++) {
        if (o->rd[i].cls == RD_ROW) rc = exec_bind_rows(r, &u, i, false);
        else if (o->rd[i].cls == RD_LIN) rc = exec_bind_rows(r, &u, i, true);
        else if (o->rd[i].cls == RD_ASIS && o->kind != MK_PERMUTE) exec_bind(r, &u, o->rd[i].var, u.arr[i]);
    }
    if (rc == 0) {
        switch (o->kind) {
        case MK_ELEM: case MK_FETCHBP: rc = run_elem(r, &u, out); break;
        case MK_ROWS: rc = run_rows(r, &u, out); break;
        case MK_FOLDVEC: rc = exec_foldvec(r, &u, out); break;
        case MK_SEGVEC: rc = exec_segvec(r, &u, out); break;
        case MK_SCANVEC: rc = exec_scanvec(r, &u, out); break;
        case MK_FILTER: rc = exec_filter(r, &u, out); break;
        case MK_PERMUTE: rc = exec_permute(r, &u, out); break;
        case MK_STENCIL: rc = exec_stencil(r, &u, out); break;
        case MK_RESHAPE: rc = run_reshape(r, &u, out); break;
        case MK_WHOLE: rc = run_whole(r, &u, out); break;
        default: rc = host_malformed(&r->h, x, "not an operation"); break;
        }
    }
    exec_op_end(r, &u);
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
    double t0 = mx_now_ms();
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
    st->ms += mx_now_ms() - t0;
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
    if (rc == 0 && (rc = mx_run0(r, o->lx, &v)) == 0) *c = (v.u & 0xff) != 0;
    exec_op_end(r, &u);
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
    /* a swap for each parameter's placeholder and each USE node of a
     * split input (two USE nodes may hold one array: more than nheld) */
    Swap *sw = ax__calloc((size_t)(pr->nuse + pr->npuse + 1), sizeof *sw);
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
            views[i] = exec_view(&r, a, d.off[m->me] * rs, a->rank, sh);
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
