/*
 * The GPU executor, shared by the CUDA and OpenCL backends (gpu_int.h): it
 * walks the array stratum on the host (src/runtime/host.c, as the CPU
 * executor does), and for each operation evaluates its scalar parameters
 * (with the reference scalar evaluator on the host, runtime/eval.c: they
 * are shapes and a few values), makes its result arrays on the device and launches its
 * kernels, by the method of the operation's family (HostOps.method).
 * Everything goes into one in-order queue; the host waits only where it
 * must read the device (a filter's counts, segment offsets, an awhile's
 * condition, a parameter that reads an array) and at the end of a run.
 *
 * The fault word (device.c) is read whenever the host reads the device
 * and at the end of the run; when it is set, or when the run failed while
 * it was, the run ends with AXB_RERUN_ON_HOST (gpu.c).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "gpu_int.h"
#include "runtime/eval.h"
#include "runtime/array.h"
#include "runtime/sort.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct GEx {
    ax_ctx *cx;
    GpuCtx *gc;
    GpuProg *gp;
    const GpuApi *api;
    Host h;
    InterpEval *ie;           /* the scalar parameters' evaluator */
} GEx;

/* The state of one operation while it runs. */
typedef struct GOp {
    const Node *x;
    const CgNode *cn;
    ax_array **arr;           /* per slot: the arrays it holds (outputs, operands) */
    ax_array **slot;          /* per slot: the array (held here or a free variable's) */
    int64_t *size;            /* per slot */
    int64_t (*shape)[AX_MAX_RANK];
    Scalar *par;
    uint64_t s1, s2;
    int64_t s1b, s2b;
    int64_t n, m, ch, nch, w;
} GOp;

static int fail(GEx *ex, ax_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(GEx *ex, ax_status st, const char *fmt, ...)
{
    char msg[AX_ERRMSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host_fail(&ex->h, st, "%s", msg);
}

static int api_fail(GEx *ex, const char *what)
{
    return fail(ex, AX_ERR_BACKEND, "%s: %s: %s", ex->api->name, what, ex->api->errmsg(ex->gc->d));
}

static void op_free(GEx *ex, GOp *o)
{
    if (o->arr) host_release(o->arr, o->cn->nout + o->cn->nopd);
    free(o->arr);
    free(o->slot);
    free(o->size);
    free(o->shape);
    free(o->par);
    gpu_dev_free(ex->gc, o->s1, o->s1b);
    gpu_dev_free(ex->gc, o->s2, o->s2b);
}

static ax_array **free_array(GEx *ex, const CgFree *f)
{
    if (f->use) return (ax_array **)&f->use->arr;
    if ((unsigned)f->id >= (unsigned)ex->h.nvars || !ex->h.aenv[f->id]) return NULL;
    return ex->h.aenv[f->id] + f->off;
}

static void set_slot(GOp *o, int s, ax_array *a)
{
    o->slot[s] = a;
    o->size[s] = a->size;
    for (int d = 0; d < a->rank; d++) o->shape[s][d] = a->shape[d];
}

/* Operands (on the device), free arrays, parameters, delayed shapes. */
static int op_begin(GEx *ex, const Node *x, GOp *o)
{
    memset(o, 0, sizeof *o);
    if ((unsigned)x->num >= (unsigned)ex->gp->cg->nnodes) return host_malformed(&ex->h, x, "not numbered");
    const CgNode *cn = o->cn = &ex->gp->cg->nodes[x->num];
    if (!cn->x || cn->top != x) return host_malformed(&ex->h, x, "no generated code");
    o->x = x = cn->x;   /* an epilogue's consumer (ir_epilogue) */
    int ns = cn->nslot;
    o->arr = ax__calloc((size_t)ns + 1, sizeof *o->arr);
    o->slot = ax__calloc((size_t)ns + 1, sizeof *o->slot);
    o->size = ax__calloc((size_t)ns + 1, sizeof *o->size);
    o->shape = ax__calloc((size_t)ns + 1, sizeof *o->shape);
    o->par = ax__calloc((size_t)cn->nparam + 1, sizeof *o->par);
    if (!o->arr || !o->slot || !o->size || !o->shape || !o->par) return host_nomem(&ex->h);
    for (int i = 0; i < cn->nopd; i++) {
        const Node *y = x->kid[cn->opd_kid[i]];
        if (y->op == OP_DELAYED) continue;
        int s = cn->nout + i;
        if (host_eval1(&ex->h, y, &o->arr[s]) || gpu_to_device(ex->gc, o->arr[s])) return -1;
        set_slot(o, s, o->arr[s]);
    }
    for (int k = 0; k < cn->nfree; k++) {
        ax_array **a = free_array(ex, &cn->free[k]);
        if (!a || !*a) return host_malformed(&ex->h, x, "unbound array variable");
        if (gpu_to_device(ex->gc, *a)) return -1;
        set_slot(o, cn->nout + cn->nopd + k, *a);
    }
    for (int t = 0; t < cn->nthunk; t++)
        if (interp_eval(ex->ie, cn->thunk[t], o->par + cn->poff[t])) return -1;
    for (int i = 0; i < cn->nopd; i++) {
        int t = cn->opd_thunk[i];
        if (t < 0) continue;
        const Node *y = x->kid[cn->opd_kid[i]];
        int s = cn->nout + i, r = y->type->rank;
        for (int d = 0; d < r; d++) o->shape[s][d] = o->par[cn->poff[t] + d].i;
        if ((o->size[s] = shape_size_checked(ex->cx, "a fused producer", r, o->shape[s])) < 0) return -1;
    }
    return 0;
}

static const Scalar *thunk_val(GOp *o, int kid) { return o->par + o->cn->poff[o->cn->kid_thunk[kid]]; }

static int out_alloc(GEx *ex, GOp *o, int s, const Type *elt, int rank, const int64_t *shape)
{
    ax_array *a = gpu_dev_array(ex->gc, elt, rank, shape, host_api_name(o->x->op));
    if (!a) return -1;
    o->arr[s] = a;
    set_slot(o, s, a);
    return 0;
}

/* A scratch buffer of at least `bytes`, zeroed if asked. */
static int scratch(GEx *ex, uint64_t *h, int64_t *hb, int64_t bytes, bool zero)
{
    *hb = gpu_round64(bytes);
    if (!(*h = gpu_dev_alloc(ex->gc, *hb))) return -1;
    if (zero && ex->api->zero(ex->gc->d, *h, *hb)) return api_fail(ex, "clearing memory");
    return 0;
}

/* Groups for `items` work items of AX_WG threads (grid-stride kernels
 * take any number). */
static int64_t groups_for(GEx *ex, int64_t items, int64_t per_group)
{
    int64_t g = (items + per_group - 1) / per_group;
    int64_t cap = (int64_t)ex->gc->units * 16;
    if (cap > ex->api->max_groups) cap = ex->api->max_groups;
    if (g > cap) g = cap;
    return g < 1 ? 1 : g;
}

static int launch(GEx *ex, GOp *o, CgRole r, int64_t groups)
{
    const CgNode *cn = o->cn;
    int num = cn->x->num;
    void *k = ex->gp->k[num][r];
    if (!k) return host_malformed(&ex->h, o->x, "a kernel is missing");
    int na = ex->gp->nargs[num];
    const GpuArgDesc *ad = ex->gp->args[num];
    GpuArg *args = ax__malloc(sizeof *args * (size_t)(na > 0 ? na : 1));
    static const uint64_t none = 0;
    if (!args) return host_nomem(&ex->h);
    for (int i = 0; i < na; i++) {
        const GpuArgDesc *d = &ad[i];
        switch (d->kind) {
        case GA_ERR: args[i] = (GpuArg){&ex->gc->errbuf, 8}; break;
        case GA_BUF: {
            ax_array *a = o->slot[d->slot];
            args[i] = (GpuArg){a && a->dbuf ? &a->dbuf[d->k] : &none, 8};
            break;
        }
        case GA_S1: args[i] = (GpuArg){&o->s1, 8}; break;
        case GA_S2: args[i] = (GpuArg){&o->s2, 8}; break;
        case GA_SIZE: args[i] = (GpuArg){&o->size[d->slot], 8}; break;
        case GA_DIM: args[i] = (GpuArg){&o->shape[d->slot][d->k], 8}; break;
        case GA_PARAM: args[i] = (GpuArg){&o->par[d->k], ax_scalar_size(d->s)}; break;
        case GA_N: args[i] = (GpuArg){&o->n, 8}; break;
        case GA_M: args[i] = (GpuArg){&o->m, 8}; break;
        case GA_CH: args[i] = (GpuArg){&o->ch, 8}; break;
        case GA_NCH: args[i] = (GpuArg){&o->nch, 8}; break;
        case GA_W: args[i] = (GpuArg){&o->w, 8}; break;
        }
    }
    int rc = ex->api->launch(ex->gc->d, k, groups, na, args);
    ex->gc->counters.launches++;
    free(args);
    if (rc) return api_fail(ex, "launching a kernel");
    return 0;
}

/* A grid-stride kernel over n items. */
static int launch_n(GEx *ex, GOp *o, CgRole r, int64_t n)
{
    if (n <= 0) return 0;
    return launch(ex, o, r, groups_for(ex, n, GPU_WG));
}

/* ---------------------------------------------------- one operation */

/* The operation's operands and scalar arguments, for the host's
 * host_producer_shape. */
static int o_rank(void *arg, int i)
{
    const GOp *o = arg;
    return cg_opd_node(o->cn, i)->type->rank;
}
static const int64_t *o_shape(void *arg, int i)
{
    const GOp *o = arg;
    return o->shape[o->cn->nout + i];
}
static int64_t o_val(void *arg, int kid, int leaf) { return thunk_val(arg, kid)[leaf].i; }

static int ex_producer(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    const Type *elt = x->type->elt;
    int r = x->type->rank;
    int64_t sh[AX_MAX_RANK];
    bool linear;
    HostOperands hs = {o->cn->nopd, o, o_rank, o_shape, o_val};
    if (host_producer_shape(h, x, &hs, sh, &linear)) return -1;
    CgRole role = linear ? R_LIN : R_MAIN;
    if (out_alloc(ex, o, 0, elt, r, sh)) return -1;
    if (!ex->gp->k[x->num][role]) role = role == R_LIN ? R_MAIN : R_LIN;
    return launch_n(ex, o, role, o->size[0]);
}

/* Threads per team for rows of n elements: a power of two, each thread
 * with a few elements, a whole group for long rows. */
static int64_t team_width(int64_t n)
{
    int64_t w = 1;
    while (w < GPU_WG && w * 8 <= n) w *= 2;
    return w;
}

/* The tasks of a fold or scan of `rows` rows of n: one per row when the
 * rows fill the device, else rows split into chunks. */
static void plan_rows(GEx *ex, GOp *o, int64_t rows, int64_t n)
{
    int64_t want = (int64_t)ex->gc->units * 8;   /* groups */
    o->w = team_width(n);
    int64_t tpg = GPU_WG / o->w;
    int64_t nch = 1;
    if (rows * 1 < want * tpg && n >= 4 * GPU_WG) {
        o->w = GPU_WG;
        nch = (want + rows - 1) / rows;
        int64_t maxch = n / (4 * GPU_WG);
        if (nch > maxch) nch = maxch;
        if (nch < 1) nch = 1;
    }
    o->n = n;
    o->ch = nch > 1 ? (n + nch - 1) / nch : n;
    o->nch = o->ch > 0 ? (n + o->ch - 1) / o->ch : 1;
    if (o->nch < 1) o->nch = 1;
    o->m = rows * o->nch;
}

static int64_t scratch_bytes(const Type *elt, int64_t m) { return cg_scratch_bytes(elt, m > 0 ? m : 1); }

static int ex_fold(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    bool z = x->op == OP_FOLD;
    const Type *elt = x->type->elt;
    int src = o->cn->nout, r = x->kid[o->cn->opd_kid[0]]->type->rank;
    if (r < 1) return host_malformed(&ex->h, x, "rank 0");
    int64_t n = o->shape[src][r - 1];
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, r - 1, o->shape[src])) return -1;
    int64_t rows = o->size[0];
    if (rows == 0) return 0;
    if (!z && n == 0)
        return fail(ex, AX_ERR_SHAPE, "%s: cannot reduce an empty row (the innermost extent is 0)", host_api_name(x->op));
    if (n == 0) {
        o->nch = 0;
        o->m = 0;
        return launch_n(ex, o, R_COMB, rows);   /* every row is z */
    }
    plan_rows(ex, o, rows, n);
    if (o->nch > 1 && scratch(ex, &o->s1, &o->s1b, scratch_bytes(elt, o->m), false)) return -1;
    if (launch(ex, o, R_PART, groups_for(ex, o->m, GPU_WG / o->w))) return -1;
    if (o->nch > 1) return launch_n(ex, o, R_COMB, rows);
    return 0;
}

static int ex_foldseg(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    bool z = x->op == OP_FOLDSEG;
    const char *what = host_api_name(x->op);
    const CgNode *cn = o->cn;
    int src = cn->nout, ss = cn->nout + 1;
    const Node *segn = x->kid[cn->opd_kid[1]];
    int r = x->kid[cn->opd_kid[0]]->type->rank;
    if (r < 1) return host_malformed(&ex->h, x, "rank 0");
    int64_t n = o->shape[src][r - 1], nseg = o->size[ss];
    /* the lengths on the host */
    void *lens = NULL;
    ax_scalar ls = AX_I64;
    int64_t *mat = NULL;
    if (segn->op == OP_DELAYED) {
        if (scratch(ex, &o->s2, &o->s2b, nseg * 8, false) || launch_n(ex, o, R_MAT, nseg)) return -1;
        if (!(mat = ax__malloc(sizeof *mat * (size_t)(nseg > 0 ? nseg : 1)))) return host_nomem(&ex->h);
        if (nseg > 0 && gpu_download(ex->gc, ex->cx, mat, o->s2, nseg * 8)) {
            free(mat);
            return -1;
        }
        lens = mat;
    } else {
        ax_array *sa = o->slot[ss];
        ls = sa->elt->kind == TY_SCALAR ? sa->elt->s : AX_F64;
        if (sa->rank != 1 || !sc_is_int(ls))
            return fail(ex, AX_ERR_SHAPE, "%s: the segments are not a vector of integers", what);
        if (array_host(sa)) return -1;
        lens = sa->buf[0];
    }
    int64_t *off = ax__malloc(sizeof *off * (size_t)(nseg + 1));
    if (!off) {
        free(mat);
        return host_nomem(&ex->h);
    }
    int rc = host_seg_offsets(&ex->h, what, lens, ls, nseg, n, off);
    free(mat);
    int64_t sh[AX_MAX_RANK];
    memcpy(sh, o->shape[src], sizeof *sh * (size_t)r);
    sh[r - 1] = nseg;
    if (rc == 0 && out_alloc(ex, o, 0, x->type->elt, r, sh)) rc = -1;
    int64_t total = rc == 0 ? o->size[0] : 0, rows = nseg > 0 ? total / nseg : 0;
    for (int64_t k = 0; rc == 0 && !z && rows > 0 && k < nseg; k++)
        if (off[k + 1] == off[k]) rc = fail(ex, AX_ERR_SHAPE, "%s: cannot reduce segment %" PRId64 ", which is empty", what, k);
    if (rc == 0 && total > 0) {
        if (scratch(ex, &o->s1, &o->s1b, (nseg + 1) * 8, false)) rc = -1;
        else if (ex->api->upload(ex->gc->d, o->s1, off, (nseg + 1) * 8)) rc = api_fail(ex, "uploading offsets");
    }
    free(off);
    if (rc || total == 0) return rc;
    o->n = n;
    o->nch = nseg;
    o->m = total;
    o->w = team_width(nseg > 0 ? n / nseg : n);
    return launch(ex, o, R_SEG, groups_for(ex, o->m, GPU_WG / o->w));
}

static int ex_scan(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    Op op = x->op;
    bool z = !(op == OP_SCANL1 || op == OP_SCANR1), exl = op == OP_SCANLEX || op == OP_SCANREX;
    const Type *rt = exl ? x->type->elts[0] : x->type;
    const Type *elt = rt->elt;
    int src = o->cn->nout;
    int r = x->kid[o->cn->opd_kid[0]]->type->rank;
    if (r < 1) return host_malformed(&ex->h, x, "rank 0");
    int64_t n = o->shape[src][r - 1];
    if (z && !exl && n == INT64_MAX) return fail(ex, AX_ERR_SHAPE, "%s: the result's extent overflows 64 bits", host_api_name(op));
    int64_t ext = n + (z && !exl), sh[AX_MAX_RANK];
    memcpy(sh, o->shape[src], sizeof *sh * (size_t)r);
    sh[r - 1] = ext;
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, r, sh)) return -1;
    if (exl && out_alloc(ex, o, 1, elt, r - 1, o->shape[src])) return -1;
    int64_t rows = exl ? o->size[1] : ext > 0 ? o->size[0] / ext : 0;
    if (rows == 0 || (!z && n == 0)) return 0;
    if (ex->gc->lookback && n > 0) {
        /* one pass: tiles in a counter's order (scan.c emit_scan1) */
        int64_t tile = (int64_t)GPU_WG * gpu_scan_items(elt), ntr = (n + tile - 1) / tile;
        o->n = n;
        o->ch = ntr;
        o->m = rows * ntr;
        if (scratch(ex, &o->s1, &o->s1b, (1 + o->m) * 4, true) ||
            scratch(ex, &o->s2, &o->s2b, 2 * (int64_t)elt->width * o->m * 8, false))
            return -1;
        return launch(ex, o, R_SCAN1, groups_for(ex, o->m, 1));
    }
    plan_rows(ex, o, rows, n);
    if (o->nch > 1) {
        if (scratch(ex, &o->s1, &o->s1b, scratch_bytes(elt, o->m), false) ||
            scratch(ex, &o->s2, &o->s2b, scratch_bytes(elt, o->m), false))
            return -1;
        if (launch(ex, o, R_PART, groups_for(ex, o->m, GPU_WG / o->w)) || launch_n(ex, o, R_CARRY, rows)) return -1;
    }
    return launch(ex, o, R_SCAN, groups_for(ex, o->m, GPU_WG / o->w));
}

static int ex_permute(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    int d = o->cn->nout, s = o->cn->nout + 1;
    int rank = x->kid[o->cn->opd_kid[0]]->type->rank;
    if (out_alloc(ex, o, 0, x->type->elt, rank, o->shape[d])) return -1;
    if (launch_n(ex, o, R_DFLT, o->size[0])) return -1;
    if (o->size[s] == 0) return 0;
    if (scratch(ex, &o->s1, &o->s1b, 1024 * 4, true)) return -1;   /* striped locks */
    return launch_n(ex, o, R_PERM, o->size[s]);
}

static int ex_stencil(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    int r = x->type->rank;
    int64_t sh[AX_MAX_RANK];
    for (int d = 0; d < r; d++) {
        sh[d] = o->shape[o->cn->nout][d];
        for (int i = 1; i < o->cn->nopd; i++)
            if (o->shape[o->cn->nout + i][d] < sh[d]) sh[d] = o->shape[o->cn->nout + i][d];
    }
    if (out_alloc(ex, o, 0, x->type->elt, r, sh)) return -1;
    return launch_n(ex, o, R_MAIN, o->size[0]);
}

static int ex_filter(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    int64_t n = o->size[o->cn->nout];
    int64_t nch = groups_for(ex, n, 4 * GPU_WG);
    int64_t ch = (n + nch - 1) / nch;
    if (ch < 1) ch = 1;
    nch = n > 0 ? (n + ch - 1) / ch : 0;
    o->n = n;
    o->ch = ch;
    o->m = nch;
    int64_t total = 0;
    if (nch > 0) {
        int64_t *cnt = ax__malloc(sizeof *cnt * (size_t)(nch + 1));
        if (!cnt) return host_nomem(&ex->h);
        int rc = scratch(ex, &o->s1, &o->s1b, nch * 8, false) || scratch(ex, &o->s2, &o->s2b, nch * 8, false) ||
                 launch(ex, o, R_COUNT, nch) || gpu_download(ex->gc, ex->cx, cnt, o->s1, nch * 8);
        if (rc == 0) {
            for (int64_t t = 0; t < nch; t++) {
                int64_t c = cnt[t];
                cnt[t] = total;
                total += c;
            }
            if (ex->api->upload(ex->gc->d, o->s2, cnt, nch * 8)) rc = api_fail(ex, "uploading offsets");
        }
        free(cnt);
        if (rc) return -1;
    }
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, 1, &total)) return -1;   /* (an epilogue's type) */
    if (nch == 0 || total == 0) return 0;
    return launch(ex, o, R_SCATTER, nch);
}

/* A multi-generator loop (loop.c gpu_emit_loop): the fold's tasks (a
 * chunk of a row each; with filters, a rank-1 space's chunks as filter's,
 * a group each), part, comb per row, then each filter's offsets and the
 * scatter.  s2 holds, per generator and task, the filters' counts, their
 * offsets, and the reductions' "has an element" flags. */
static int ex_loop(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    const Loop *lp = x->loop;
    int src = o->cn->nout, r = x->kid[o->cn->opd_kid[0]]->type->rank, ng = lp->ngen, nflt = 0, nred = 0;
    if (r < 1) return host_malformed(&ex->h, x, "rank 0");
    int64_t n = o->shape[src][r - 1];
    int64_t rows = shape_size_checked(ex->cx, "a loop", r - 1, o->shape[src]);
    if (rows < 0) return -1;
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        const Type *rt = x->type->elts[q];
        if (gn->kind == LOOP_COLLECT && out_alloc(ex, o, q, rt->elt, r, o->shape[src])) return -1;
        if (gn->kind == LOOP_FILTER) nflt++;
        if (gn->kind != LOOP_REDUCE) continue;
        nred++;
        if (out_alloc(ex, o, q, rt->elt, r - 1, o->shape[src])) return -1;
        if (gn->z < 0 && n == 0 && rows > 0)
            return fail(ex, AX_ERR_SHAPE, "ax_fold1: cannot reduce an empty row (the innermost extent is 0)");
    }
    if (nflt && r != 1) return host_malformed(&ex->h, x, "a filter over rank > 1");
    if (rows > 0 && n > 0) {
        if (nflt) {
            int64_t nch = groups_for(ex, n, 4 * GPU_WG), ch = (n + nch - 1) / nch;
            o->w = GPU_WG;
            o->n = n;
            o->ch = ch;
            o->nch = o->m = (n + ch - 1) / ch;
        } else {
            plan_rows(ex, o, rows, n);
        }
    } else {
        o->n = n;
        o->ch = o->nch = 0;
        o->m = rows;   /* comb's rows: every one z */
        o->w = 1;
    }
    int64_t m = o->m, sb = 0;
    for (int q = 0; q < ng; q++)
        if (lp->gen[q].kind == LOOP_REDUCE) sb += scratch_bytes(loop_comp_type(x, lp->gen[q].comp), m);
    if (scratch(ex, &o->s2, &o->s2b, 3 * (int64_t)ng * (m > 0 ? m : 1) * 8, true)) return -1;
    if (rows > 0 && n > 0) {
        if (nred && o->nch > 1 && scratch(ex, &o->s1, &o->s1b, sb, false)) return -1;
        if (launch(ex, o, R_PART, groups_for(ex, m, GPU_WG / o->w))) return -1;
        if (nred && o->nch > 1 && launch_n(ex, o, R_COMB, rows)) return -1;
    } else if (nred && rows > 0 && launch_n(ex, o, R_COMB, rows)) {
        return -1;
    }
    if (!nflt) return 0;
    int64_t nch = rows > 0 && n > 0 ? o->nch : 0, *cnt = NULL, *tot = NULL;
    if (nch > 0) {
        size_t half = (size_t)ng * (size_t)nch;
        cnt = ax__malloc(sizeof *cnt * 2 * half);
        tot = ax__calloc((size_t)ng, sizeof *tot);
        if (!cnt || !tot) {
            free(cnt), free(tot);
            return host_nomem(&ex->h);
        }
        int rc = gpu_download(ex->gc, ex->cx, cnt, o->s2, (int64_t)half * 8);
        for (int q = 0; rc == 0 && q < ng; q++)
            for (int64_t t = 0; t < nch; t++) {
                cnt[half + (size_t)q * (size_t)nch + (size_t)t] = tot[q];
                tot[q] += cnt[(size_t)q * (size_t)nch + (size_t)t];
            }
        if (rc == 0 && ex->api->upload(ex->gc->d, o->s2, cnt, (int64_t)(2 * half * 8))) rc = api_fail(ex, "uploading offsets");
        free(cnt);
        if (rc) {
            free(tot);
            return -1;
        }
    }
    for (int q = 0; q < ng; q++) {
        if (lp->gen[q].kind != LOOP_FILTER) continue;
        int64_t total = tot ? tot[q] : 0;
        if (out_alloc(ex, o, q, x->type->elts[q]->elt, 1, &total)) {
            free(tot);
            return -1;
        }
    }
    free(tot);
    if (nch == 0) return 0;
    return launch(ex, o, R_SCATTER, nch);
}

/* Sort (sort.c gpu_emit_sort): per pass of 8 bits, count, scan and
 * scatter, the chunks of each row a virtual group each (m of them, nch
 * a row, ch elements a chunk, the pass in w); the values gathered at the
 * end.  Arrays of 2^32 elements or more, whose positions the
 * permutation's 32 bits cannot hold, and many short rows, whose counters
 * would outweigh their keys, sort on the host: the operands come
 * back, the runtime's radix sort (runtime/sort.c) sorts them on the
 * host's threads, and the results are host arrays, uploaded when a
 * kernel reads them. */
static int sort_on_host(GEx *ex, GOp *o, const Node *x, ax_array *keys, ax_array *vals)
{
    if (array_host(keys) || (vals && array_host(vals))) return -1;
    for (int s = 0; s < x->n; s++) {
        ax_array *a = array_alloc(ex->cx, x->kid[s]->type->elt, keys->rank, keys->shape, false);
        if (!a) return -1;
        ax_array_release(o->arr[s]);
        o->arr[s] = a;
        set_slot(o, s, a);
    }
    int nt = ex->cx->opt.threads > 0 ? ex->cx->opt.threads : 1;
    if (!ex->gc->host && nt > 1 && !(ex->gc->host = pool_new(nt)))
        return host_fail(&ex->h, AX_ERR_NOMEM, "ax_sort: cannot start %d threads", nt);
    return sort_arrays(ex->gc->host, x, keys, vals, o->arr[0], vals ? o->arr[1] : NULL);
}

static int ex_sort(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    ax_array *keys, *vals;
    if (!sort_operands(x, o->arr, o->cn->nout, &keys, &vals))
        return host_malformed(&ex->h, x, "values not of the keys' shape");
    int64_t total = keys->size, n = keys->rank > 0 ? keys->shape[keys->rank - 1] : 0;
    int64_t rows = n > 0 ? total / n : 0, w = (int64_t)ax_scalar_size(keys->elt->s);
    /* chunks of at least four tiles; about eight groups a compute unit */
    int64_t want = rows > 0 ? ((int64_t)ex->gc->units * 8 + rows - 1) / rows : 1, most = (n + 4 * GPU_WG - 1) / (4 * GPU_WG);
    int64_t per = want < most ? want : most;
    if (per < 1) per = 1;
    int64_t ch = n > 0 ? (n + per - 1) / per : 1;
    per = n > 0 ? (n + ch - 1) / ch : 1;
    /* 256 counters a chunk: many short rows would need far more of them
     * than they have keys (and 2^32 elements more than the permutation's
     * 32 bits index) */
    if (total >= ((int64_t)1 << 32) || (double)rows * (double)per * 2048 > 4.0 * (double)(total * w) + (1 << 20))
        return sort_on_host(ex, o, x, keys, vals);
    for (int s = 0; s < x->n; s++)
        if (out_alloc(ex, o, s, x->kid[s]->type->elt, keys->rank, keys->shape)) return -1;
    if (total == 0) return 0;
    o->n = n;
    o->ch = ch;
    o->nch = per;
    o->m = rows * per;
    int64_t keys_b = (total * w + 63) / 64 * 64, perm_b = vals ? 2 * ((total + 15) / 16 * 16) * 4 : 0;
    if (scratch(ex, &o->s1, &o->s1b, o->m * 256 * 8, false) || scratch(ex, &o->s2, &o->s2b, keys_b + perm_b, false))
        return -1;
    int64_t groups = groups_for(ex, o->m * GPU_WG, GPU_WG);
    for (int64_t b = 0; b < w; b++) {
        o->w = b;
        if (launch(ex, o, R_COUNT, groups) || launch(ex, o, R_SCAN, 1) || launch(ex, o, R_SCATTER, groups)) return -1;
    }
    return vals ? launch_n(ex, o, R_PERM, total) : 0;
}

static int ex_unit(Host *h, const Node *x, void *ov)
{
    GEx *ex = h->self;
    GOp *o = ov;
    int64_t none[1] = {0};
    const Type *elt = x->type->elt;
    if (out_alloc(ex, o, 0, elt, 0, none)) return -1;
    const Scalar *v = thunk_val(o, 0);
    ax_array *a = o->arr[0];
    for (int l = 0; l < elt->width; l++) {
        uint8_t b[8];
        sc_store(b, ty_leaf(elt, l), 0, v[l]);
        if (ex->api->upload(ex->gc->d, a->dbuf[l], b, (int64_t)ax_scalar_size(ty_leaf(elt, l))))
            return api_fail(ex, "uploading a value");
    }
    return 0;
}

static int ex_op(GEx *ex, const Node *x, ax_array **out)
{
    GOp o;
    int rc = op_begin(ex, x, &o);
    if (rc == 0) x = o.x;   /* (an epilogue's consumer: ir_epilogue) */
    bool prof = (ex->cx->opt.debug & AX_DEBUG_PROFILE) != 0;
    double t0 = prof ? gpu_now_ms() : 0;
    if (rc == 0) rc = host_run_method(&ex->h, x, &o);
    if (rc == 0)
        for (int s = 0; s < o.cn->nout; s++) {
            out[s] = o.arr[s];
            o.arr[s] = NULL;
        }
    if (prof && rc == 0) {
        /* each operation's own time: wait for its kernels */
        ex->api->finish(ex->gc->d);
        fprintf(stderr, "axle: profile: %4d %-11s %10lld elements %9.3f ms\n", x->num, op_name(x->op),
                (long long)(out[0] ? out[0]->size : 0), gpu_now_ms() - t0);
    }
    op_free(ex, &o);
    return rc ? -1 : 0;
}

static int host_op(Host *h, const Node *x, ax_array **out) { return ex_op(h->self, x, out); }

static int host_cond(Host *h, const Node *x, bool *c)
{
    GEx *ex = h->self;
    Scalar v;
    if (interp_eval(ex->ie, x->kid[0], &v)) return -1;
    *c = v.b != 0;
    return 0;
}

/* ------------------------------------------------------------ run */

#define GPU_HOST_OPS(nm)                                                                        \
    {                                                                                           \
        .name = nm, .op = host_op, .cond = host_cond, .embeds_delayed = true,                   \
        .method = {                                                                             \
            [HOST_UNIT] = ex_unit, [HOST_PRODUCER] = ex_producer, [HOST_FOLD] = ex_fold,        \
            [HOST_FOLDSEG] = ex_foldseg, [HOST_SCAN] = ex_scan, [HOST_PERMUTE] = ex_permute,    \
            [HOST_STENCIL] = ex_stencil, [HOST_FILTER] = ex_filter, [HOST_LOOP] = ex_loop,      \
            [HOST_SORT] = ex_sort,                                                              \
        },                                                                                      \
    }
static const HostOps ops_cuda = GPU_HOST_OPS("cuda");
static const HostOps ops_opencl = GPU_HOST_OPS("opencl");

int gpu_exec(GpuCtx *gc, GpuProg *gp, ax_ctx *cx, Program *p, ax_array **out, int max)
{
    const GpuApi *api = gc->api;
    GEx ex;
    memset(&ex, 0, sizeof ex);
    ex.cx = cx;
    ex.gc = gc;
    ex.gp = gp;
    ex.api = api;
    if (!gp->live) gp->live = liveness_counts(p);
    if (!host_init(&ex.h, api->kind == AX_BACKEND_CUDA ? &ops_cuda : &ops_opencl, &ex, cx, p, gp->live)) return -1;
    int w = host_width(p->root->type), n = -1;
    ax_array **res = ax__calloc((size_t)(w > 0 ? w : 1), sizeof *res);
    ex.ie = res ? interp_eval_new(cx, p->nvars, ex.h.aenv) : NULL;
    if (!res || !ex.ie) {
        if (!res) host_nomem(&ex.h);
    } else {
        int rc = host_eval(&ex.h, p->root, res);
        /* the end of the run: everything done, and no fault recorded */
        if (api->finish(gc->d)) {
            if (rc == 0) host_release(res, w);
            if (cx->status == AX_OK) ctx_error(cx, AX_ERR_BACKEND, "%s: %s", api->name, api->errmsg(gc->d));
            rc = -1;
        }
        int f = gc->faulted ? 1 : gpu_read_fault(gc);
        if (f != 0 && rc == 0) host_release(res, w);
        if (f > 0) {
            /* a fault recorded: its message comes from a run on the host
             * (host.h AXB_RERUN_ON_HOST), whatever this run said */
            uint32_t code = 0;
            api->download(gc->d, &code, gc->errbuf, sizeof code);
            ctx_error_force(cx, code > 0 && code < 16 ? (ax_status)code : AX_ERR_BACKEND,
                            "%s: a kernel reported a run-time fault (status %d)", api->name, (int)code);
            n = AXB_RERUN_ON_HOST;
        }
        if (rc == 0 && f == 0) {
            n = max < 0 ? 0 : w < max ? w : max;
            for (int k = 0; k < w; k++) {
                if (k < n) out[k] = res[k];
                else ax_array_release(res[k]);
            }
        }
    }
    interp_eval_free(ex.ie);
    free(res);
    host_free(&ex.h);
    return n;
}
