/*
 * The CPU backend's executor (docs/ARCHITECTURE.md, "The pipeline").  The array level
 * of a program is walked by runtime/host.c (lets, variables, tuples,
 * acond and awhile, the same for every executor); for each operation this
 * file evaluates its operands, calls its thunks for the scalar
 * parameters, allocates the results (array_alloc: the memory limit holds)
 * and runs its kernels on the context's thread pool (runtime/pool.c), by
 * the method of the operation's family (HostOps.method).
 *
 * Work splitting: a kernel is a function over an index range; run_kernel
 * cuts the range into chunks of at least GRAIN elements (about four per
 * thread, claimed dynamically so uneven work balances), and runs a range
 * that fits one chunk inline, without waking the pool.
 *
 * Faults found by generated code (an index out of bounds, division by
 * zero, ...) go to the call's error slot (AxErr; the one at the lowest
 * position wins); the host turns it into the interpreter's message.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cpu_int.h"
#include "runtime/host.h"
#include "runtime/array.h"
#include "runtime/sort.h"
#include "runtime/blas.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements per task at least: below this a split costs more than it saves. */
enum { GRAIN = 8192, STRIPES = 1024 };

typedef struct Ex {
    ax_ctx *cx;
    CpuCtx *cc;
    CpuProg *pp;
    Pool *pool;
    int nthreads;
    Host h;                   /* the array level (src/runtime/host.c) */
} Ex;

static int eval_acc(Ex *ex, const Node *x, ax_array **out) { return host_eval(&ex->h, x, out); }
static int eval1(Ex *ex, const Node *x, ax_array **a) { return host_eval1(&ex->h, x, a); }
#define release_all host_release
#define awidth host_width
#define aoffset host_offset
#define api_name host_api_name
#define fmt_ints host_fmt_ints

/* The failure paths are kept out of line (noinline, cold): their message
 * buffers would otherwise sit in the frames of the executor's recursion
 * along the program's nesting. */
static int fail(Ex *ex, ax_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4), noinline, cold));
static int fail(Ex *ex, ax_status st, const char *fmt, ...)
{
    char msg[AX_ERRMSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host_fail(&ex->h, st, "%s", msg);
}

static int nomem(Ex *ex) { return host_nomem(&ex->h); }
static int malformed(Ex *ex, const Node *x, const char *what) { return host_malformed(&ex->h, x, what); }

/* The error slot -> the interpreter's message. */
__attribute__((noinline, cold)) static int report(Ex *ex, const AxErr *e)
{
    char a[256], b[256];
    int r = e->rank < 0 ? 0 : e->rank > AX_MAX_RANK ? AX_MAX_RANK : e->rank;
    fmt_ints(b, sizeof b, r, e->shape);
    switch (e->site) {
    case SITE_AT:
    case SITE_BACKPERMUTE:
        fmt_ints(a, sizeof a, r, e->ix);
        return fail(ex, AX_ERR_INDEX, "%s: index (%s) out of bounds for shape (%s)",
                    e->site == SITE_AT ? "ax_at" : "ax_backpermute", a, b);
    case SITE_PERMUTE:
        fmt_ints(a, sizeof a, r, e->ix);
        return fail(ex, AX_ERR_INDEX, "ax_permute: target index (%s) out of bounds for shape (%s)", a, b);
    case SITE_ATLIN: {
        int64_t n = 1;
        for (int d = 0; d < r; d++) n *= e->shape[d];
        return fail(ex, AX_ERR_INDEX, "ax_at_linear: position %" PRId64 " out of bounds for shape (%s) (%" PRId64
                    " elements)", e->ix[0], b, n);
    }
    case SITE_RESHAPE: {
        int r1 = e->aux < 0 ? 0 : e->aux > AX_MAX_RANK ? AX_MAX_RANK : e->aux;
        int64_t n1 = shape_size_checked(ex->cx, "ax_reshape", r1, e->ix);
        if (n1 < 0) return -1;   /* (the message is the interpreter's) */
        int64_t n0 = shape_size_checked(ex->cx, "ax_reshape", r, e->shape);
        if (n0 < 0) return -1;
        fmt_ints(a, sizeof a, r1, e->ix);
        return fail(ex, AX_ERR_SHAPE, "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%" PRId64
                    " elements)", b, n0, a, n1);
    }
    case SITE_PRIM: {
        const char *name = (unsigned)e->aux < P_NPRIM ? prim_info[e->aux].api : "a primitive";
        if (e->code == AX_ERR_DIVZERO) return fail(ex, AX_ERR_DIVZERO, "%s: integer division by zero", name);
        if (e->code == AX_ERR_SHAPE) return fail(ex, AX_ERR_SHAPE, "%s: the shape does not fit", name);
        return fail(ex, (ax_status)e->code, "%s: run-time fault", name);
    }
    default:
        return fail(ex, e->code ? (ax_status)e->code : AX_ERR_BACKEND, "cpu: run-time fault");
    }
}

static inline int check(Ex *ex, const AxErr *e) { return e->code ? report(ex, e) : 0; }

/* The state of one operation while it runs. */
typedef struct Op1 {
    const Node *x;
    const CgNode *cn;
    AxKernel *k;
    AxThunk *th;
    AxArg *args;
    ax_array **arr;           /* per slot: arrays this operation holds */
    AxScalar *par;
    AxErr err;
    AxCall call;
    void *s1, *s2;
    ax_array *scratch;        /* s2's buffer when it is an array's (ex_filter) */
} Op1;

/* Runs kernel k over [0, n): chunks of at least `grain` items, about four
 * per thread; inline when one chunk covers it. */
typedef struct Task {
    AxKernel k;
    const AxCall *c;
    int64_t n, chunk;
    bool checked;   /* start encoded as -1 - start: permute's checked redo */
} Task;

static void task_run(void *arg, int64_t t, int worker)
{
    const Task *tk = arg;
    int64_t s = t * tk->chunk, e = s + tk->chunk < tk->n ? s + tk->chunk : tk->n;
    tk->k(tk->c, tk->checked ? -1 - s : s, e);
}

static void launch(Ex *ex, AxKernel k, const AxCall *c, int64_t n, int64_t grain, bool checked)
{
    if (grain < 1) grain = 1;
    int64_t want = (int64_t)ex->nthreads * 4;
    int64_t chunk = (n + want - 1) / want;
    if (chunk < grain) chunk = grain;
    int64_t ntasks = (n + chunk - 1) / chunk;
    if (ntasks <= 1 || ex->nthreads <= 1) {
        k(c, checked ? -1 : 0, n);
    } else {
        Task tk = {k, c, n, chunk, checked};
        pool_run(ex->pool, task_run, &tk, ntasks);
    }
}

/* The checked copies of o's operation: its cold unit, compiled (or found
 * in a cache) on first need, that is when one of its kernels found a
 * check failing (skel.c cpu_kernel_end; the prelude's ax_chk).  A program
 * read from a file has its cold units' modules already. */
__attribute__((noinline, cold)) static int load_checked(Ex *ex, const Op1 *o)
{
    CpuProg *pp = ex->pp;
    const CgProg *g = pp->cg;
    const CgNode *cn = o->cn;
    if (cn->cold < 0 || cn->cold >= g->nunits) return fail(ex, AX_ERR_BACKEND, "cpu: a checked kernel is missing");
    JitModule *m = pp->mod[cn->cold];
#ifdef AX_RUNTIME_ONLY
    if (!m) return fail(ex, AX_ERR_BACKEND, "cpu: the program's checked kernels are missing");
#else
    if (!m) {
        Jit *jit = cpu_ctx_jit(ex->cx, ex->cc);
        if (!jit) return nomem(ex);
        char err[4096] = "";
        if (cpu_unit_texts(ex->cx, ex->cc, pp, err, sizeof err))
            return fail(ex, AX_ERR_BACKEND, "cpu: the checked kernels cannot be generated: %s", err);
        const CgUnit *u = &g->units[cn->cold];
        bool gcc = jit_is_gcc(jit);
        JitUnit one = {.source = u->text, .len = u->len, .cflags = gcc ? u->cflags : NULL};
        m = jit_load_many(jit, &one, 1, 1, NULL, NULL, err, sizeof err) ? NULL : one.module;
        if (!m) return fail(ex, AX_ERR_COMPILE, "ax_run: %s", err[0] ? err : "the C compiler failed");
        pp->mod[cn->cold] = m;
    }
#endif
    int bp = pp->bpos[cn->cold];   /* >= 0: in a batch (an exported program's) */
    for (int r = 0; r < R_NROLE; r++) {
        if (!cn->role[r]) continue;
        char name[64];
        if (bp >= 0) snprintf(name, sizeof name, "axk_b%d_%s_chk", bp, cg_role_name[r]);
        else snprintf(name, sizeof name, "axk_u_%s_chk", cg_role_name[r]);
        pp->chk[o->x->num][r] = (AxKernel)jit_sym(m, name);
    }
    ex->cc->counters.checked++;
    return 0;
}

/* Runs kernel k over [0, n) (launch), then reports what its error slot
 * holds.  A kernel that needed its checked copy before it was loaded left
 * its range undone (ax_chk): the copy is loaded and the launch run again,
 * which computes every range alike (kernels write their outputs, never
 * update them, but for permute's, which asks for its own redo instead). */
static int run_kernel_as(Ex *ex, AxKernel k, const AxCall *c, int64_t n, int64_t grain, bool checked)
{
    if (n <= 0) return 0;
    if (!k) return fail(ex, AX_ERR_BACKEND, "cpu: a kernel is missing");
    launch(ex, k, c, n, grain, checked);
    AxErr *e = c->err;
    if (__builtin_expect(e->need, 0)) {
        /* every call is of an operation's own call (Op1.call) */
        const Op1 *o = (const Op1 *)(const void *)((const char *)c - offsetof(Op1, call));
        if (load_checked(ex, o)) return -1;
        e->need = 0;
        if (!e->redo) {
            memset(e, 0, sizeof *e);
            launch(ex, k, c, n, grain, checked);
            if (e->need) return fail(ex, AX_ERR_BACKEND, "cpu: a checked kernel is missing");
        }
    }
    return check(ex, e);
}

static int run_kernel(Ex *ex, AxKernel k, const AxCall *c, int64_t n, int64_t grain)
{
    return run_kernel_as(ex, k, c, n, grain, false);
}

/* (arr's host buffers are current: the executor's own results are, and
 * operands from elsewhere go through array_host in op_begin) */
static void fill(AxArg *a, const ax_array *arr)
{
    a->buf = arr->buf;
    a->size = arr->size;
    a->rank = arr->rank;
    for (int d = 0; d < arr->rank; d++) a->shape[d] = arr->shape[d];
}

static ax_array *new_array(Ex *ex, const Type *elt, int rank, const int64_t *shape, const char *what)
{
    if (shape_size_checked(ex->cx, what, rank, shape) < 0) return NULL;
    return array_alloc(ex->cx, elt, rank, shape, false);
}

/* ---------------------------------------------------- one operation */


static void op_free(Op1 *o)
{
    if (o->arr) release_all(o->arr, o->cn->nout + o->cn->nopd);
    free(o->args);   /* o->arr and o->par too: one block (op_begin) */
    free(o->s1);
    if (o->scratch) ax_array_release(o->scratch);
    else free(o->s2);
}

static ax_array **free_array(Ex *ex, const CgFree *f)
{
    if (f->use) return (ax_array **)&f->use->arr;
    if ((unsigned)f->id >= (unsigned)ex->h.nvars || !ex->h.aenv[f->id]) return NULL;
    return ex->h.aenv[f->id] + f->off;
}

/* Operands, free arrays, thunks, DELAYED operands' shapes. */
static int op_begin(Ex *ex, const Node *x, Op1 *o)
{
    memset(o, 0, sizeof *o);
    if ((unsigned)x->num >= (unsigned)ex->pp->cg->nnodes) return malformed(ex, x, "not numbered");
    const CgNode *cn = o->cn = &ex->pp->cg->nodes[x->num];
    if (!cn->x || cn->top != x) return malformed(ex, x, "no generated code");
    x = cn->x;   /* an epilogue's consumer (ir_epilogue) */
    o->x = x;
    o->k = ex->pp->k[x->num];
    o->th = ex->pp->th[x->num];
    int ns = cn->nslot;
    /* the operation's argument table, arrays and scalar parameters in
     * one block (op_free): a small operation's launch is a few
     * microseconds, and each allocation a measurable share of it */
    size_t na = sizeof *o->args * ((size_t)ns + 1), nr = sizeof *o->arr * ((size_t)ns + 1);
    char *blk = ax__calloc(1, na + nr + sizeof *o->par * ((size_t)cn->nparam + 1));
    if (!blk) return nomem(ex);
    o->args = (AxArg *)blk;
    o->arr = (ax_array **)(blk + na);
    o->par = (AxScalar *)(blk + na + nr);
    o->call.a = o->args;
    o->call.p = o->par;
    o->call.err = &o->err;
    o->call.chk = (void (*const *)(const AxCall *, int64_t, int64_t))ex->pp->chk[x->num];
    for (int i = 0; i < cn->nopd; i++) {
        const Node *y = x->kid[cn->opd_kid[i]];
        if (y->op == OP_DELAYED) continue;
        if (eval1(ex, y, &o->arr[cn->nout + i]) || array_host(o->arr[cn->nout + i])) return -1;
        fill(&o->args[cn->nout + i], o->arr[cn->nout + i]);
    }
    for (int k = 0; k < cn->nfree; k++) {
        ax_array **a = free_array(ex, &cn->free[k]);
        if (!a || !*a) return malformed(ex, x, "unbound array variable");
        if (array_host(*a)) return -1;
        fill(&o->args[cn->nout + cn->nopd + k], *a);
    }
    for (int t = 0; t < cn->nthunk; t++) {
        o->th[t](&o->call, o->par + cn->poff[t]);
        if (check(ex, &o->err)) return -1;
    }
    for (int i = 0; i < cn->nopd; i++) {
        int t = cn->opd_thunk[i];
        if (t < 0) continue;
        const Node *y = x->kid[cn->opd_kid[i]];
        AxArg *a = &o->args[cn->nout + i];
        a->rank = y->type->rank;
        for (int d = 0; d < a->rank; d++) a->shape[d] = o->par[cn->poff[t] + d].i;
        /* the interpreter's wording: it allocates the delayed array */
        if ((a->size = shape_size_checked(ex->cx, "a fused producer", a->rank, a->shape)) < 0) return -1;
    }
    return 0;
}

static const AxArg *opd(Op1 *o, int i) { return &o->args[o->cn->nout + i]; }
static const AxScalar *thunk_val(Op1 *o, int kid) { return o->par + o->cn->poff[o->cn->kid_thunk[kid]]; }

/* Allocates output slot s. */
static int out_alloc(Ex *ex, Op1 *o, int s, const Type *elt, int rank, const int64_t *shape)
{
    ax_array *a = new_array(ex, elt, rank, shape, api_name(o->x->op));
    if (!a) return -1;
    o->arr[s] = a;
    fill(&o->args[s], a);
    return 0;
}

static int op_end(Ex *ex, Op1 *o, int rc, ax_array **out)
{
    if (rc == 0)
        for (int s = 0; s < o->cn->nout; s++) {
            out[s] = o->arr[s];
            o->arr[s] = NULL;
        }
    op_free(o);
    return rc;
}

/* The operation's operands and scalar arguments, for the host's
 * host_producer_shape. */
static int o_rank(void *arg, int i) { return opd(arg, i)->rank; }
static const int64_t *o_shape(void *arg, int i) { return opd(arg, i)->shape; }
static int64_t o_val(void *arg, int kid, int leaf) { return thunk_val(arg, kid)[leaf].i; }

static int ex_producer(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    const Type *elt = x->type->elt;
    int r = x->type->rank;
    int64_t sh[AX_MAX_RANK];
    bool linear;
    HostOperands hs = {o->cn->nopd, o, o_rank, o_shape, o_val};
    if (host_producer_shape(h, x, &hs, sh, &linear)) return -1;
    CgRole role = linear ? R_LIN : R_MAIN;
    if (out_alloc(ex, o, 0, elt, r, sh)) return -1;
    if (!o->k[role]) role = role == R_LIN ? R_MAIN : R_LIN;   /* rank <= 1: only lin */
    return run_kernel(ex, o->k[role], &o->call, o->args[0].size, GRAIN);
}

/* Scratch for m partial results of type elt (64-byte aligned leaves). */
static void *scratch_alloc(const Type *elt, int64_t m)
{
    int64_t b = cg_scratch_bytes(elt, m);
    return ax__aligned_alloc(64, (size_t)((b + 63) & ~(int64_t)63) + 64);
}

/* The chunks of a fold or scan over rows x n: one per row when the rows
 * keep every thread busy, else rows split into chunks of >= GRAIN. */
static void plan_rows(Ex *ex, Op1 *o, int64_t rows, int64_t n)
{
    int64_t chunk = n;
    if (ex->nthreads > 1 && rows < 2 * (int64_t)ex->nthreads && n >= 4 * (int64_t)GRAIN) {
        int64_t want = ((int64_t)ex->nthreads * 4 + rows - 1) / rows;
        chunk = (n + want - 1) / want;
        if (chunk < GRAIN) chunk = GRAIN;
    }
    o->call.n = n;
    o->call.chunk = chunk;
    o->call.nchunk = chunk > 0 ? (n + chunk - 1) / chunk : 0;
    o->call.m = rows * o->call.nchunk;
}

/* The context's BLAS, loaded on first need; NULL when there is none
 * (AXLE_BLAS off, or none installed: the generated kernel runs). */
static Blas *ctx_blas(Ex *ex)
{
    CpuCtx *cc = ex->cc;
    if (!cc->blas_tried && !ex->cx->no_blas) {
        char why[256];
        cc->blas_tried = true;
        cc->blas = blas_load(ex->cx->blas, why, sizeof why);
        /* a BLAS named by AXLE_BLAS that cannot be loaded is worth a word */
        if (!cc->blas && ex->cx->blas)
            ctx_notice(ex->cx, NOTICE_BLAS, "AXLE_BLAS: %s; matrix products use axle's own kernels", why);
    }
    return cc->blas;
}

/* The dimensions [lo, hi) of arg a against the space's ext[lo..hi): the
 * same extents, their product in *n. */
static bool same_run(const AxArg *a, int from, const int64_t *ext, int lo, int hi, int64_t *n)
{
    *n = 1;
    for (int d = lo; d < hi; d++) {
        if (a->shape[from + d - lo] != ext[d]) return false;
        *n *= ext[d];
    }
    return true;
}

/* The extents of a fold recognised as a matrix product (CgContract):
 * false unless every operand's are the product's own, A (i.., k) or
 * (k, i..), B (k, j..) or (j.., k), so that the merged dimensions are
 * the matrices' rows and every read is inside its array. */
static bool contract_dims(const Op1 *o, const AxArg *src, int64_t *rows, int64_t *cols)
{
    const CgContract *m = o->cn->con;
    int r = src->rank, k = r - 1;
    int64_t K = src->shape[k];
    for (int t = 0; t < m->nterm; t++) {
        const CgGemm *g = &m->t[t];
        const AxArg *A = &o->args[g->slot[0]], *B = &o->args[g->slot[1]];
        if (A->rank != m->rows + 1 || B->rank != r - m->rows) return false;
        if (!same_run(A, g->ta ? 1 : 0, src->shape, 0, m->rows, rows) ||
            !same_run(B, g->tb ? 0 : 1, src->shape, m->rows, k, cols) ||
            A->shape[g->ta ? 0 : A->rank - 1] != K || B->shape[g->tb ? B->rank - 1 : 0] != K)
            return false;
    }
    return true;
}

/* A fold recognised as a matrix product run by the BLAS: 1 done, 0 not
 * taken.  Only in the fast modes: the BLAS blocks and reassociates each
 * sum, within fast_math's bound for a sum of n terms (axle.h), and fuses
 * multiplies into adds; the exact modes keep the fold's own order. */
static int fold_blas(Ex *ex, Op1 *o, const AxArg *src, int64_t rows, int64_t cols)
{
    const CgContract *m = o->cn->con;
    if (!ex->cx->opt.fast_math || ex->cx->no_blas) return 0;
    int64_t K = src->shape[src->rank - 1];
    Blas *b = ctx_blas(ex);
    if (!b) return 0;
    void *C = o->args[0].buf[0];
    /* C is zeroed first: a BLAS may scale it by beta = 0 rather than
     * overwrite it, and the array may be a reused buffer holding NaN */
    memset(C, 0, (size_t)(rows * cols) * ax_scalar_size(m->s));
    /* A A^T and A B^T + B A^T (PolyBench's syrk and syr2k) are symmetric:
     * the BLAS's symmetric products do half the work */
    const CgGemm *g0 = &m->t[0];
    bool sym2 = cg_gemm_symmetric2(m);
    if ((cg_gemm_symmetric(m) || sym2) && rows == cols) {
        const AxArg *A = &o->args[g0->slot[0]], *B = &o->args[g0->slot[1]];
        if (blas_syrk(b, m->s, g0->ta, rows, K, g0->alpha, A->buf[g0->leaf[0]], g0->ta ? rows : K,
                      sym2 ? B->buf[g0->leaf[1]] : NULL, g0->ta ? rows : K, C, cols, ex->nthreads)) {
            ex->cc->counters.blas++;
            return 1;
        }
    }
    for (int t = 0; t < m->nterm; t++) {
        const CgGemm *g = &m->t[t];
        const AxArg *A = &o->args[g->slot[0]], *B = &o->args[g->slot[1]];
        if (!blas_gemm(b, m->s, g->ta, g->tb, rows, cols, K, g->alpha, A->buf[g->leaf[0]], g->ta ? rows : K,
                       B->buf[g->leaf[1]], g->tb ? K : cols, t ? 1.0 : 0.0, C, cols, ex->nthreads))
            return 0;   /* each call checks the same sizes: the first refuses, or none */
    }
    ex->cc->counters.blas++;
    return 1;
}

/* The register-tiled kernel's tasks are blocks of rows (fold.c
 * emit_gemm), a multiple of its tiles' rows (4 or 6): about two per
 * thread, since each copies B's panels once, and at least GEMM_MB. */
enum { GEMM_MB = 48, GEMM_TILES = 12 };

/* A matrix product by the BLAS, or by the register-tiled kernel (where
 * one was made: the product written (sa a) (sb b)) when the matrices are
 * big enough for tiles to pay (a long sum of few rows and columns is
 * better split along k, as the fold does); 1 done, 0 not taken, -1 on an
 * error. */
static int fold_contract(Ex *ex, Op1 *o, const AxArg *src)
{
    int64_t rows = 0, cols = 0, K = src->shape[src->rank - 1];
    if (!o->cn->con || !contract_dims(o, src, &rows, &cols) || rows == 0 || cols == 0 || K == 0) return 0;
    if (fold_blas(ex, o, src, rows, cols)) return 1;
    if (!o->k[R_GEMM] || rows < 2 * GEMM_MB || cols < 16 || K < 16) return 0;
    /* a symmetric product's row blocks grow with the row: more of them */
    bool sym = cg_gemm_symmetric(o->cn->con);
    if (sym && rows != cols) return 0;   /* (one array both ways: never) */
    int64_t per = sym ? 4 * ex->nthreads : 2 * ex->nthreads, mb = (rows + per - 1) / per;
    mb = (mb + GEMM_TILES - 1) / GEMM_TILES * GEMM_TILES;
    if (mb < GEMM_MB) mb = GEMM_MB;
    o->call.chunk = mb;
    ex->cc->counters.tiled++;
    if (run_kernel(ex, o->k[R_GEMM], &o->call, (rows + mb - 1) / mb, 1)) return -1;
    if (sym) mat_mirror_lower(ax_scalar_size(o->cn->con->s), rows, o->args[0].buf[0], cols);
    return 1;
}

static int ex_fold(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    bool z = x->op == OP_FOLD;
    const Type *elt = x->type->elt;
    const AxArg *src = opd(o, 0);
    if (src->rank < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[src->rank - 1];
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, src->rank - 1, src->shape)) return -1;
    int64_t rows = o->args[0].size;
    if (rows == 0) return 0;
    if (!z && n == 0)
        return fail(ex, AX_ERR_SHAPE, "%s: cannot reduce an empty row (the innermost extent is 0)", api_name(x->op));
    int mp = z ? fold_contract(ex, o, src) : 0;
    if (mp) return mp < 0 ? -1 : 0;
    plan_rows(ex, o, rows, n);
    o->call.s1 = &o->call;   /* never read without partials; not NULL */
    if (n == 0) return run_kernel(ex, o->k[R_COMB], &o->call, rows, GRAIN);   /* every row is z */
    if (o->call.nchunk == 1) return run_kernel(ex, o->k[R_PART], &o->call, rows, GRAIN / n + 1);
    if (!(o->s1 = scratch_alloc(elt, o->call.m))) return nomem(ex);
    o->call.s1 = o->s1;
    if (run_kernel(ex, o->k[R_PART], &o->call, o->call.m, 1)) return -1;
    return run_kernel(ex, o->k[R_COMB], &o->call, rows, 1);
}

/* Segment lengths (interp.c seg_lengths: the same checks and messages). */
static int seg_offsets(Ex *ex, Op1 *o, const char *what, int64_t n, int64_t *off)
{
    const Node *segn = o->x->kid[o->cn->opd_kid[1]];
    const AxArg *sa = opd(o, 1);
    ax_scalar s = segn->type->elt->kind == TY_SCALAR ? segn->type->elt->s : AX_F64;
    int64_t nseg = sa->size;
    int64_t *mat = NULL;
    if (segn->op == OP_DELAYED) {
        if (!(mat = ax__malloc(sizeof *mat * (size_t)(nseg > 0 ? nseg : 1)))) return nomem(ex);
        o->call.s2 = mat;
        int rc = run_kernel(ex, o->k[R_MAT], &o->call, nseg, GRAIN);
        o->call.s2 = NULL;
        if (rc) {
            free(mat);
            return -1;
        }
        s = AX_I64;
    } else if (sa->rank != 1 || !sc_is_int(s)) {
        return fail(ex, AX_ERR_SHAPE, "%s: the segments are not a vector of integers", what);
    }
    int64_t sum = 0, k = 0;
    int rc = 0;
    off[0] = 0;
    /* The common case first, in a tight loop (no call per segment: a CSR
     * matrix has a segment per row): i32 or i64 lengths, each in range.
     * At the first length that is not, the general loop starts over and
     * reports it. */
    if (s == AX_I32 || s == AX_I64) {
        const int32_t *l32 = s == AX_I32 ? sa->buf[0] : NULL;
        const int64_t *l64 = mat ? mat : s == AX_I64 ? sa->buf[0] : NULL;
        for (; k < nseg; k++) {
            int64_t l = l32 ? l32[k] : l64[k];
            if (l < 0 || l > n - sum) break;
            sum += l;
            off[k + 1] = sum;
        }
        if (k == nseg && sum == n) {
            free(mat);
            return 0;
        }
        sum = 0;
    }
    for (k = 0; k < nseg; k++) {
        Scalar v;
        if (mat) v.i = mat[k];
        else v = sc_load(sa->buf[0], s, k);
        if (!sc_is_signed(s) && v.u > (uint64_t)INT64_MAX) {
            rc = fail(ex, AX_ERR_SHAPE, "%s: segment %" PRId64 " has length %" PRIu64 ", more than the %" PRId64
                      " elements of a row", what, k, v.u, n);
            break;
        }
        int64_t l = sc_is_signed(s) ? v.i : (int64_t)v.u;
        if (l < 0) {
            rc = fail(ex, AX_ERR_SHAPE, "%s: segment %" PRId64 " has negative length %" PRId64, what, k, l);
            break;
        }
        if (l > n - sum) {
            rc = fail(ex, AX_ERR_SHAPE, "%s: the segment lengths add up to more than the innermost extent %" PRId64,
                      what, n);
            break;
        }
        sum += l;
        off[k + 1] = sum;
    }
    free(mat);
    if (rc == 0 && sum != n)
        rc = fail(ex, AX_ERR_SHAPE, "%s: the segment lengths add up to %" PRId64 ", not the innermost extent %" PRId64,
                  what, sum, n);
    return rc;
}

static int ex_foldseg(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    bool z = x->op == OP_FOLDSEG;
    const char *what = api_name(x->op);
    const AxArg *src = opd(o, 0);
    int r = src->rank;
    if (r < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[r - 1], nseg = opd(o, 1)->size;
    int64_t *off = ax__malloc(sizeof *off * (size_t)(nseg + 1));
    if (!off) return nomem(ex);
    o->s1 = off;
    o->call.s1 = off;
    if (seg_offsets(ex, o, what, n, off)) return -1;
    int64_t sh[AX_MAX_RANK];
    memcpy(sh, src->shape, sizeof *sh * (size_t)r);
    sh[r - 1] = nseg;
    if (out_alloc(ex, o, 0, x->type->elt, r, sh)) return -1;
    int64_t total = o->args[0].size, rows = nseg > 0 ? total / nseg : 0;
    for (int64_t k = 0; !z && rows > 0 && k < nseg; k++)
        if (off[k + 1] == off[k]) return fail(ex, AX_ERR_SHAPE, "%s: cannot reduce segment %" PRId64 ", which is empty", what, k);
    o->call.n = n;
    o->call.m = nseg;
    int64_t avg = nseg > 0 ? n / nseg : 1;
    return run_kernel(ex, o->k[R_SEG], &o->call, total, avg > 0 ? GRAIN / avg + 1 : GRAIN);
}

static int ex_scan(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    Op op = x->op;
    bool z = !(op == OP_SCANL1 || op == OP_SCANR1), exl = op == OP_SCANLEX || op == OP_SCANREX;
    const Type *rt = exl ? x->type->elts[0] : x->type;
    const Type *elt = rt->elt;
    const AxArg *src = opd(o, 0);
    int r = src->rank;
    if (r < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[r - 1];
    if (z && !exl && n == INT64_MAX) return fail(ex, AX_ERR_SHAPE, "%s: the result's extent overflows 64 bits", api_name(op));
    int64_t ext = n + (z && !exl), sh[AX_MAX_RANK];
    memcpy(sh, src->shape, sizeof *sh * (size_t)r);
    sh[r - 1] = ext;
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, r, sh)) return -1;
    if (exl && out_alloc(ex, o, 1, elt, r - 1, src->shape)) return -1;
    int64_t rows = exl ? o->args[1].size : ext > 0 ? o->args[0].size / ext : 0;
    if (rows == 0 || (!z && n == 0)) return 0;
    plan_rows(ex, o, rows, n);
    o->call.s1 = o->call.s2 = &o->call;   /* never read with one chunk; not NULL */
    if (o->call.nchunk <= 1) {
        /* one sequential scan per row (an empty row: just z) */
        o->call.nchunk = 1;
        o->call.chunk = n;
        o->call.m = rows;
        return run_kernel(ex, o->k[R_SCAN], &o->call, rows, n > 0 ? GRAIN / n + 1 : GRAIN);
    }
    /* Three phases (the thesis' and Accelerate's multicore scan): chunk
     * totals in parallel; per row, the carries in chunk order; the chunks
     * scanned in parallel from their carries. */
    if (!(o->s1 = scratch_alloc(elt, o->call.m)) || !(o->s2 = scratch_alloc(elt, o->call.m))) return nomem(ex);
    o->call.s1 = o->s1;
    o->call.s2 = o->s2;
    if (run_kernel(ex, o->k[R_PART], &o->call, o->call.m, 1)) return -1;
    if (run_kernel(ex, o->k[R_CARRY], &o->call, rows, 1)) return -1;
    return run_kernel(ex, o->k[R_SCAN], &o->call, o->call.m, 1);
}

/* Permute by private copies (permute.c cpu_emit_permute), when the generator
 * offered them and they pay: a target small against the source (a
 * histogram), so that filling and merging a copy per thread costs little
 * next to the atomic read-modify-write per source element they replace
 * (which contend for the same few cache lines across threads).
 * AXLE_PERMUTE=atomic or =private forces a strategy (the tests run both).
 * 1: done (or redo asked); 0: not taken; -1: error. */
static int permute_private(Ex *ex, const Node *x, Op1 *o, int64_t tsize, int64_t ssize)
{
    if (!o->k[R_PPRIV] || !o->k[R_PMERGE] || tsize <= 0) return 0;
    const char *force = getenv("AXLE_PERMUTE");
    bool want_private = force && !strcmp(force, "private"), want_atomic = force && !strcmp(force, "atomic");
    if (want_atomic) return 0;
    const Type *elt = x->type->elt;
    int64_t stride = 0;
    for (int k = 0; k < elt->width; k++) stride += (tsize * (sc_bits(ty_leaf(elt, k)) / 8) + 63) & ~(int64_t)63;
    int64_t ntasks = ex->nthreads > 0 ? ex->nthreads : 1;
    if (ntasks > (ssize + GRAIN - 1) / GRAIN) ntasks = (ssize + GRAIN - 1) / GRAIN;
    if (ntasks < 1) ntasks = 1;
    /* what the copies cost (fill and merge: 2 * tsize per task) against
     * the source's elements; and at most 64 MiB of copies */
    bool pays = tsize * ntasks * 8 <= ssize && stride <= ((int64_t)64 << 20) / ntasks;
    if (!want_private && !pays) return 0;
    if (stride > INT64_MAX / ntasks) return 0;
    int64_t chunk = (ssize + ntasks - 1) / ntasks;
    ntasks = (ssize + chunk - 1) / chunk;
    free(o->s2);
    if (!(o->s2 = ax__malloc((size_t)(stride * ntasks)))) return nomem(ex);
    o->call.s2 = o->s2;
    o->call.m = stride;
    o->call.chunk = chunk;
    o->call.nchunk = ntasks;
    if (run_kernel(ex, o->k[R_PPRIV], &o->call, ssize, chunk)) return -1;
    if (o->err.redo) return 1;   /* the caller redoes it checked, atomically */
    if (run_kernel(ex, o->k[R_PMERGE], &o->call, tsize, GRAIN)) return -1;
    return 1;
}

static int ex_permute(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    const AxArg *d = opd(o, 0), *s = opd(o, 1);
    if (out_alloc(ex, o, 0, x->type->elt, d->rank, d->shape)) return -1;
    if (run_kernel(ex, o->k[R_DFLT], &o->call, o->args[0].size, GRAIN)) return -1;
    if (s->size == 0) return 0;
    if (!(o->s1 = ax__calloc(STRIPES, sizeof(int32_t)))) return nomem(ex);
    o->call.s1 = o->s1;
    int rc = permute_private(ex, x, o, d->size, s->size);
    if (rc < 0) return -1;
    if (rc == 0 && run_kernel(ex, o->k[R_PERM], &o->call, s->size, GRAIN)) return -1;
    if (!o->err.redo) return 0;
    /* A deferred check fired (permute.c cpu_emit_permute): from the defaults
     * again, combining with the checked kernel, which reports the first
     * fault if there is one. */
    o->err.redo = 0;
    if (run_kernel(ex, o->k[R_DFLT], &o->call, o->args[0].size, GRAIN)) return -1;
    return run_kernel_as(ex, o->k[R_PERM], &o->call, s->size, GRAIN, true);
}

static int ex_stencil(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    int r = x->type->rank;
    int64_t sh[AX_MAX_RANK];
    for (int d = 0; d < r; d++) {
        sh[d] = opd(o, 0)->shape[d];
        for (int i = 1; i < o->cn->nopd; i++)
            if (opd(o, i)->shape[d] < sh[d]) sh[d] = opd(o, i)->shape[d];
    }
    if (out_alloc(ex, o, 0, x->type->elt, r, sh)) return -1;
    return run_kernel(ex, o->k[R_MAIN], &o->call, o->args[0].size, GRAIN);
}

/* Filter: a parallel count per chunk, an exclusive scan of the counts,
 * a parallel scatter. */
static int ex_filter(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    int64_t n = opd(o, 0)->size;
    int64_t want = (int64_t)ex->nthreads * 4, chunk = (n + want - 1) / want;
    if (chunk < GRAIN) chunk = GRAIN;
    int64_t nch = n > 0 ? (n + chunk - 1) / chunk : 0;
    o->call.n = n;
    o->call.chunk = chunk;
    o->call.m = nch;
    int64_t *cnt = o->s1 = ax__malloc(sizeof *cnt * (size_t)(nch + 1));
    /* the offsets, then (a staged filter, cpu/filter.c) the scratch
     * buffer's leaves, each on 64 bytes */
    size_t bytes = ((size_t)(nch + 1) * 8 + 63) / 64 * 64;
    const Type *elt = x->type->elt;
    for (int l = 0; o->cn->scratch_leaves > 0 && l < elt->width; l++)
        bytes += ((size_t)n * ax_scalar_size(ty_leaf(elt, l)) + 63) / 64 * 64;
    int64_t *offs;
    if (o->cn->scratch_leaves > 0) {
        /* an array's buffer: from the context's spare buffers, charged to
         * the memory limit (a fresh 10^8-byte block faults in its pages
         * on every run) */
        int64_t nb = (int64_t)bytes;
        if (!(o->scratch = array_alloc(ex->cx, ty_scalar(AX_U8), 1, &nb, false))) return -1;
        offs = o->s2 = o->scratch->buf[0];
    } else {
        offs = o->s2 = ax__malloc(bytes);
    }
    if (!cnt || !offs) return nomem(ex);
    o->call.s1 = cnt;
    o->call.s2 = offs;
    if (run_kernel(ex, o->k[R_COUNT], &o->call, nch, 1)) return -1;
    int64_t total = 0;
    for (int64_t t = 0; t < nch; t++) {
        offs[t] = total;
        total += cnt[t];
    }
    /* (the type of an epilogue's map, when the filter has one: ir_epilogue) */
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, 1, &total)) return -1;
    return run_kernel(ex, o->k[R_SCATTER], &o->call, nch, 1);
}

/* Sort: the runtime's radix sort (runtime/sort.c) over the operands'
 * buffers on the pool; no kernel of its own (cgen/elem.c). */
static int ex_sort(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    ax_array *keys, *vals;
    if (!sort_operands(x, o->arr, o->cn->nout, &keys, &vals)) return malformed(ex, x, "values not of the keys' shape");
    for (int s = 0; s < x->n; s++)
        if (out_alloc(ex, o, s, x->kid[s]->type->elt, keys->rank, keys->shape)) return -1;
    return sort_arrays(ex->pool, x, keys, vals, o->arr[0], vals ? o->arr[1] : NULL);
}

/* A multi-generator loop (loop.c cpu_emit_loop): the fold's chunks of rows
 * (or, with filters, a vector's chunks as filter's), part over every
 * chunk (collects written, reductions' partials and filters' counts),
 * comb per row, then each filter's offsets per chunk and the scatter. */
static int ex_loop(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    const Loop *lp = x->loop;
    const AxArg *src = opd(o, 0);
    int r = src->rank, ng = lp->ngen, nflt = 0, nred = 0;
    if (r < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[r - 1], sbytes = 0;
    int64_t rows = shape_size_checked(ex->cx, "a loop", r - 1, src->shape);
    if (rows < 0) return -1;
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        const Type *rt = x->type->elts[q];
        if (gn->kind == LOOP_COLLECT && out_alloc(ex, o, q, rt->elt, r, src->shape)) return -1;
        if (gn->kind == LOOP_FILTER) nflt++;
        if (gn->kind != LOOP_REDUCE) continue;
        nred++;
        if (out_alloc(ex, o, q, rt->elt, r - 1, src->shape)) return -1;
        if (gn->z < 0 && n == 0 && rows > 0)
            return fail(ex, AX_ERR_SHAPE, "ax_fold1: cannot reduce an empty row (the innermost extent is 0)");
    }
    if (nflt && r != 1) return malformed(ex, x, "a filter over rank > 1");
    if (nflt) {
        /* the filter's chunks: about four a thread */
        int64_t want = (int64_t)ex->nthreads * 4, chunk = (n + want - 1) / want;
        if (chunk < GRAIN) chunk = GRAIN;
        o->call.n = n;
        o->call.chunk = chunk;
        o->call.nchunk = n > 0 ? (n + chunk - 1) / chunk : 0;
        o->call.m = o->call.nchunk;
    } else {
        plan_rows(ex, o, rows, n);
    }
    int64_t m = o->call.m, nch = o->call.nchunk;
    o->call.s1 = o->call.s2 = &o->call;   /* never read when empty; not NULL */
    /* s2: per generator and chunk, filters' counts, then their offsets,
     * then conditional reductions' "has an element" flags */
    bool cond = false;
    for (int q = 0; q < ng; q++) {
        if (lp->gen[q].kind != LOOP_REDUCE) continue;
        sbytes += cg_scratch_bytes(loop_comp_type(x, lp->gen[q].comp), m);
        cond = cond || lp->gen[q].pred >= 0;
    }
    if ((nflt || cond) && !(o->s2 = o->call.s2 = ax__calloc((size_t)(3 * ng * m + 1), sizeof(int64_t)))) return nomem(ex);
    if (rows > 0 && n > 0) {
        if (nred && nch > 1) {
            if (!(o->s1 = ax__aligned_alloc(64, (size_t)((sbytes + 63) & ~(int64_t)63) + 64))) return nomem(ex);
            o->call.s1 = o->s1;
        }
        if (run_kernel(ex, o->k[R_PART], &o->call, m, nch == 1 ? GRAIN / n + 1 : 1)) return -1;
        if (nred && nch > 1 && run_kernel(ex, o->k[R_COMB], &o->call, rows, 1)) return -1;
    } else if (nred && rows > 0) {
        o->call.nchunk = 0;   /* every row is z */
        if (run_kernel(ex, o->k[R_COMB], &o->call, rows, GRAIN)) return -1;
    }
    if (!nflt) return 0;
    int64_t *cnt = o->s2, *offs = cnt + (int64_t)ng * m;
    for (int q = 0; q < ng; q++) {
        if (lp->gen[q].kind != LOOP_FILTER) continue;
        int64_t total = 0;
        for (int64_t t = 0; t < m; t++) {
            offs[q * m + t] = total;
            total += cnt[q * m + t];
        }
        if (out_alloc(ex, o, q, x->type->elts[q]->elt, 1, &total)) return -1;
    }
    return m > 0 ? run_kernel(ex, o->k[R_SCATTER], &o->call, m, 1) : 0;
}

static int ex_unit(Host *h, const Node *x, void *ov)
{
    Ex *ex = h->self;
    Op1 *o = ov;
    int64_t none[1] = {0};
    const Type *elt = x->type->elt;
    if (out_alloc(ex, o, 0, elt, 0, none)) return -1;
    const AxScalar *v = thunk_val(o, 0);
    for (int l = 0; l < elt->width; l++) {
        Scalar s;
        memcpy(&s, &v[l], sizeof s);
        sc_store(o->arr[0]->buf[l], ty_leaf(elt, l), 0, s);
    }
    return 0;
}

/* ex_op is on the recursion along the program's nesting (op_begin
 * evaluates the operands), so its frame stays small: the operations'
 * bodies, with their shape arrays and message buffers, are the family
 * methods (HostOps.method, reached through host_run_method), never
 * inlined into it (run_deep sizes stacks by the frames of this
 * recursion). */
static int ex_op(Ex *ex, const Node *x, ax_array **out)
{
    Op1 o;
    int rc = op_begin(ex, x, &o);   /* evaluates the operands */
    if (rc == 0) x = o.x;           /* (an epilogue's consumer: ir_epilogue) */
    /* AXLE_DEBUG=profile: each operation's own time (its allocations
     * included), with the number `axle dump --stage c` shows. */
    bool prof = (ex->cx->opt.debug & AX_DEBUG_PROFILE) != 0;
    double t0 = prof ? cpu_now_ms() : 0;
    if (rc == 0) rc = host_run_method(&ex->h, x, &o);
    rc = op_end(ex, &o, rc ? -1 : 0, out);
    if (prof && rc == 0 && out && out[0])
        fprintf(stderr, "axle: profile: %4d %-11s %10lld elements %9.3f ms\n", x->num, op_name(x->op),
                (long long)out[0]->size, cpu_now_ms() - t0);
    return rc;
}

/* ---------------------------------------------------- structure */

/* The host walk's callbacks (src/runtime/host.c). */
static int host_op(Host *h, const Node *x, ax_array **out) { return ex_op(h->self, x, out); }

static int host_cond(Host *h, const Node *x, bool *c)
{
    Ex *ex = h->self;
    Op1 o;
    int rc = op_begin(ex, x, &o);
    *c = rc == 0 && thunk_val(&o, 0)->b != 0;
    op_free(&o);
    return rc ? -1 : 0;
}

static const HostOps cpu_host = {
    .name = "cpu",
    .op = host_op,
    .cond = host_cond,
    .embeds_delayed = true,
    .method = {
        [HOST_UNIT] = ex_unit,
        [HOST_PRODUCER] = ex_producer,
        [HOST_FOLD] = ex_fold,
        [HOST_FOLDSEG] = ex_foldseg,
        [HOST_SCAN] = ex_scan,
        [HOST_PERMUTE] = ex_permute,
        [HOST_STENCIL] = ex_stencil,
        [HOST_FILTER] = ex_filter,
        [HOST_LOOP] = ex_loop,
        [HOST_SORT] = ex_sort,
    },
};

/* host.h: x run with another executor's walk (its environment and
 * liveness counters, shared through the copy of h). */
int cpu_run_op(Host *h, void *state, const Node *x, ax_array **out)
{
    CpuProg *pp = state;
    CpuCtx *cc = cpu_ctx_state(h->cx);
    if (!cc) return -1;
    if (!pp || pp->magic != CPU_PROG_MAGIC) return host_fail(h, AX_ERR_BACKEND, "cpu: no program to run");
    Ex ex;
    memset(&ex, 0, sizeof ex);
    ex.cx = h->cx;
    ex.cc = cc;
    ex.pp = pp;
    if (!(ex.pool = cpu_ctx_pool(h->cx, cc))) return -1;
    ex.nthreads = pool_threads(ex.pool);
    ex.h = *h;
    ex.h.ops = &cpu_host;
    ex.h.self = &ex;
    return ex_op(&ex, x, out);
}


int cpu_exec(ax_ctx *cx, CpuCtx *cc, CpuProg *pp, Program *p, ax_array **out, int max)
{
    Ex ex;
    memset(&ex, 0, sizeof ex);
    ex.cx = cx;
    ex.cc = cc;
    ex.pp = pp;
    if (!(ex.pool = cpu_ctx_pool(cx, cc))) return -1;
    ex.nthreads = pool_threads(ex.pool);
    int w = awidth(p->root->type);
    if (!pp->live) pp->live = liveness_counts(p);   /* NULL: no early release */
    if (!host_init(&ex.h, &cpu_host, &ex, cx, p, pp->live)) return -1;
    ax_array **res = ax__calloc((size_t)(w > 0 ? w : 1), sizeof *res);
    int n = -1;
    if (!res) {
        nomem(&ex);
    } else if (eval_acc(&ex, p->root, res) == 0) {
        n = max < 0 ? 0 : w < max ? w : max;
        for (int k = 0; k < w; k++) {
            if (k < n) out[k] = res[k];
            else ax_array_release(res[k]);
        }
    }
    free(res);
    host_free(&ex.h);
    return n;
}
