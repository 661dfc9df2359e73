/*
 * The GPU executor, shared by the CUDA and OpenCL backends (gpu.h): it
 * walks the array stratum on the host (src/runtime/host.c, as the CPU
 * executor does), and for each operation evaluates its scalar parameters
 * (the interpreter on the host: they are shapes and a few values), makes
 * its result arrays on the device and launches its kernels.  Everything
 * goes into one in-order queue; the host waits only where it must read
 * the device (a filter's counts, segment offsets, an awhile's condition,
 * a parameter that reads an array) and at the end of a run.
 *
 * Arrays stay on the device between runs (ir.h "Device copies"): an
 * input is uploaded the first time a program reads it, a result is read
 * back only when the host asks for it.  Device buffers come from a pool
 * per context (reused by size: a program run again allocates nothing),
 * and count against the context's memory limit like host arrays.
 *
 * Faults (an index out of bounds, a division by zero, ...) are recorded by
 * the kernels as a code in one device word (the first wins).  The host
 * reads it whenever it reads the device and at the end of the run; when
 * it is set, or when the run failed while it was, the program is run
 * again on the host (the CPU backend, else the interpreter), which
 * reports the fault exactly as they do: the same message on every
 * backend, and no second checked copy of every kernel to compile.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "gpu.h"
#include "runtime/host.h"
#include "runtime/jit.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CTX_MAGIC = 0x47505543, PROG_MAGIC = 0x47505550 };

/* A device buffer kept for reuse. */
typedef struct PoolBuf {
    uint64_t h;
    int64_t bytes;
} PoolBuf;

typedef struct GpuCtx {
    int magic;
    const GpuBackendDef *def;
    const GpuApi *api;
    void *d;                  /* the device API's state */
    ax_ctx *cx;
    uint64_t errbuf;          /* the fault word (u32) */
    bool faulted;             /* a read of the device found the fault word set */
    int units;                /* the device's compute units */
    bool lookback;            /* single-pass scans (gpu_lookback_wanted) */
    PoolBuf *pool;
    int npool, cappool;
    int64_t pool_bytes;
    DevOps dops;              /* for the arrays' device copies */
    GpuCounters counters;
} GpuCtx;

typedef struct GpuProg {
    int magic;
    GpuCtx *gc;
    CgProg *cg;
    void *(*k)[R_NROLE];      /* per node number: its kernels */
    GpuArgDesc **args;        /* per node number: its kernels' arguments */
    int *nargs;
    int *live;
} GpuProg;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ device memory */

/* Pooled bytes at most: a quarter of the memory limit, and 1 GiB. */
static int64_t pool_cap(GpuCtx *gc)
{
    int64_t c = gc->cx->opt.mem_limit / 4;
    return c < (1ll << 30) ? c : (1ll << 30);
}

static void pool_trim(GpuCtx *gc, int64_t keep)
{
    while (gc->npool > 0 && gc->pool_bytes > keep) {
        gc->api->free(gc->d, gc->pool[0].h);
        gc->pool_bytes -= gc->pool[0].bytes;
        memmove(&gc->pool[0], &gc->pool[1], sizeof *gc->pool * (size_t)--gc->npool);
    }
}

/* A device buffer of `bytes` (a multiple of 64, at least 64): from the
 * pool, else new; 0 with an error on cx. */
static uint64_t dev_alloc(GpuCtx *gc, int64_t bytes)
{
    for (int i = gc->npool - 1; i >= 0; i--)
        if (gc->pool[i].bytes == bytes) {
            uint64_t h = gc->pool[i].h;
            gc->pool_bytes -= bytes;
            gc->pool[i] = gc->pool[--gc->npool];
            return h;
        }
    uint64_t h = 0;
    gc->counters.allocs++;
    if (gc->api->alloc(gc->d, bytes, &h) == 0 && h) return h;
    /* out of device memory: give the pool back and try once more */
    pool_trim(gc, 0);
    if (gc->api->alloc(gc->d, bytes, &h) == 0 && h) return h;
    ctx_error(gc->cx, AX_ERR_NOMEM, "%s: out of device memory allocating %" PRId64 " bytes (%s)", gc->api->name, bytes,
              gc->api->errmsg(gc->d));
    return 0;
}

static void dev_free(GpuCtx *gc, uint64_t h, int64_t bytes)
{
    if (!h) return;
    if (bytes > pool_cap(gc)) {
        gc->api->free(gc->d, h);
        return;
    }
    if (gc->npool == gc->cappool) {
        int cap = gc->cappool ? 2 * gc->cappool : 16;
        PoolBuf *p = ax__realloc(gc->pool, sizeof *p * (size_t)cap);
        if (!p) {
            gc->api->free(gc->d, h);
            return;
        }
        gc->pool = p;
        gc->cappool = cap;
    }
    gc->pool[gc->npool].h = h;
    gc->pool[gc->npool].bytes = bytes;
    gc->npool++;
    gc->pool_bytes += bytes;
    pool_trim(gc, pool_cap(gc));
}

static int64_t round64(int64_t b) { return b <= 0 ? 64 : (b + 63) & ~(int64_t)63; }

/* The fault word: 0 when clear, else the first fault's status (and
 * gc->faulted set).  -1 if it cannot be read. */
static int read_fault(GpuCtx *gc)
{
    uint32_t w = 0;
    if (gc->api->download(gc->d, &w, gc->errbuf, sizeof w)) {
        ctx_error(gc->cx, AX_ERR_BACKEND, "%s: %s", gc->api->name, gc->api->errmsg(gc->d));
        return -1;
    }
    if (w) gc->faulted = true;
    return (int)w;
}

/* DevOps for the arrays: buffers go back to the pool; a read also looks
 * at the fault word, so that nothing computed after a fault is used. */
static void dops_free(void *dev, uint64_t h, int64_t bytes) { dev_free(dev, h, bytes); }

static int dops_download(void *dev, ax_ctx *cx, void *dst, uint64_t h, int64_t bytes)
{
    GpuCtx *gc = dev;
    gc->counters.downloads++;
    gc->counters.download_bytes += bytes;
    if (gc->api->download(gc->d, dst, h, bytes)) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: reading an array back: %s", gc->api->name, gc->api->errmsg(gc->d));
        return -1;
    }
    int f = read_fault(gc);
    if (f > 0) ctx_error(cx, (ax_status)f, "%s: a kernel reported a run-time fault", gc->api->name);
    return f ? -1 : 0;
}

/* Gives a a device copy (uploading its host contents) unless it has a
 * current one here. */
static int to_device(GpuCtx *gc, ax_array *a)
{
    if (a->dops == &gc->dops && a->dev == gc && a->dev_valid) return 0;
    if (a->dops && (a->dops != &gc->dops || a->dev != gc)) {
        /* on another device: through the host */
        if (array_host(a)) return -1;
        array_drop_device(a);
    }
    if (array_host(a)) return -1;
    if (!a->dbuf) {
        int64_t bytes = array_bytes(a);
        if (bytes < 0 || !mem_charge(gc->cx, bytes, a->size, a->elt)) return -1;
        a->dbuf = ax__calloc((size_t)(a->ncomp ? a->ncomp : 1), sizeof *a->dbuf);
        if (!a->dbuf) {
            mem_uncharge(gc->cx, bytes);
            ctx_error(gc->cx, AX_ERR_NOMEM, "%s: out of memory", gc->api->name);
            return -1;
        }
        a->dops = &gc->dops;
        a->dev = gc;
        a->dbytes = bytes;
        for (int i = 0; i < a->ncomp; i++)
            if (!(a->dbuf[i] = dev_alloc(gc, array_leaf_bytes(a, i)))) {
                array_drop_device(a);
                return -1;
            }
    }
    for (int i = 0; i < a->ncomp; i++) {
        int64_t n = (int64_t)ax_scalar_size(ty_leaf(a->elt, i)) * a->size;
        if (n > 0 && gc->api->upload(gc->d, a->dbuf[i], a->buf[i], n)) {
            ctx_error(gc->cx, AX_ERR_BACKEND, "%s: uploading an array: %s", gc->api->name, gc->api->errmsg(gc->d));
            return -1;
        }
        gc->counters.upload_bytes += n;
    }
    gc->counters.uploads++;
    a->dev_valid = true;
    return 0;
}

/* A new array whose contents will be made on the device. */
static ax_array *dev_array(GpuCtx *gc, const Type *elt, int rank, const int64_t *shape, const char *what)
{
    ax_ctx *cx = gc->cx;
    if (shape_size_checked(cx, what, rank, shape) < 0) return NULL;
    ax_array *a = array_alloc_device(cx, elt, rank, shape);
    if (!a) return NULL;
    int64_t bytes = array_bytes(a);
    if (bytes < 0 || !mem_charge(cx, bytes, a->size, elt)) {
        ax_array_release(a);
        return NULL;
    }
    a->dbuf = ax__calloc((size_t)(a->ncomp ? a->ncomp : 1), sizeof *a->dbuf);
    a->dops = &gc->dops;
    a->dev = gc;
    a->dbytes = bytes;
    if (!a->dbuf) {
        ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", gc->api->name);
        ax_array_release(a);
        return NULL;
    }
    for (int i = 0; i < a->ncomp; i++)
        if (!(a->dbuf[i] = dev_alloc(gc, array_leaf_bytes(a, i)))) {
            ax_array_release(a);
            return NULL;
        }
    a->dev_valid = true;
    return a;
}

/* ------------------------------------------------------------ context */

bool gpu_counters(ax_ctx *cx, ax_backend_kind kind, GpuCounters *out)
{
    GpuCtx *gc = cx && (unsigned)kind < AX_NBACKENDS ? cx->backend_state[kind] : NULL;
    if (!gc || gc->magic != CTX_MAGIC || !out) return false;
    *out = gc->counters;
    return true;
}

Jit *gpu_disk_cache(ax_ctx *cx)
{
    if (cx->opt.no_cache) return NULL;
    JitOptions o;
    memset(&o, 0, sizeof o);
    o.cache_dir = cx->opt.cache_dir;
    o.trace = (cx->opt.debug & AX_DEBUG_CACHE) != 0;
    o.version = AX_VERSION_STRING;
    o.size_limit = cx->opt.cache_limit;
    return jit_new(&o);
}

static void ctx_release(GpuCtx *gc)
{
    if (gc->d) {
        if (gc->errbuf) gc->api->free(gc->d, gc->errbuf);
        pool_trim(gc, 0);
        gc->def->close(gc->d);
    }
    free(gc->pool);
    free(gc);
}

static void prog_release(GpuProg *gp)
{
    free(gp->k);
    if (gp->args && gp->cg)
        for (int i = 0; i < gp->cg->nnodes; i++) free(gp->args[i]);
    free(gp->args);
    free(gp->nargs);
    free(gp->live);
    cg_free(gp->cg);
    free(gp);
}

void gpu_release(void *state)
{
    if (!state) return;
    if (*(int *)state == CTX_MAGIC) ctx_release(state);
    else if (*(int *)state == PROG_MAGIC) prog_release(state);
}

/* The context's device, opened on first use. */
static GpuCtx *ctx_state(const GpuBackendDef *def, ax_ctx *cx)
{
    const GpuApi *api = def->api;
    GpuCtx *gc = cx->backend_state[api->kind];
    if (gc) return gc;
    void *d = def->open(cx);
    if (!d) return NULL;
    gc = ax__calloc(1, sizeof *gc);
    if (!gc) {
        def->close(d);
        return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", api->name);
    }
    gc->magic = CTX_MAGIC;
    gc->def = def;
    gc->api = api;
    gc->d = d;
    gc->cx = cx;
    gc->units = api->units(d) > 0 ? api->units(d) : 1;
    gc->lookback = gpu_lookback_wanted(api->dialect);
    gc->dops.name = api->name;
    gc->dops.free = dops_free;
    gc->dops.download = dops_download;
    if (api->alloc(d, 64, &gc->errbuf) || !gc->errbuf || api->zero(d, gc->errbuf, 64)) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: cannot allocate on the device: %s", api->name, api->errmsg(d));
        ctx_release(gc);
        return NULL;
    }
    cx->backend_state[api->kind] = gc;
    cx->backends[api->kind] = def->backend;
    return gc;
}

/* ------------------------------------------------------------ prepare */

char *gpu_text(ax_ctx *cx, Program *p, GpuDialect d)
{
    GpuConfig cfg = {.safe = !cx->opt.unsafe};
    char err[1024];
    CgProg *g = gpu_program(p, &cfg, err, sizeof err);
    if (!g) return ctx_error(cx, AX_ERR_BACKEND, "%s", err);
    const char *pre = gpu_prelude(d);
    size_t n = strlen(pre);
    char *s = ax__malloc(n + g->len + 1);
    if (s) {
        memcpy(s, pre, n);
        memcpy(s + n, g->text, g->len + 1);
    } else {
        ctx_error(cx, AX_ERR_NOMEM, "ax_dump: out of memory");
    }
    cg_free(g);
    return s;
}

int gpu_prepare(const GpuBackendDef *def, ax_ctx *cx, Program *p, void **state)
{
    *state = NULL;
    const GpuApi *api = def->api;
    GpuCtx *gc = ctx_state(def, cx);
    if (!gc) return cx->status != AX_OK ? (int)cx->status : AX_ERR_BACKEND;
    double t0 = now_ms();
    GpuConfig cfg = {.safe = !cx->opt.unsafe};
    char err[4096];
    CgProg *g = gpu_program(p, &cfg, err, sizeof err);
    if (!g) {
        ctx_error(cx, AX_ERR_BACKEND, "%s", err);
        return AX_ERR_BACKEND;
    }
    /* the prelude, then the kernels */
    const char *pre = gpu_prelude(api->dialect);
    size_t np = strlen(pre);
    char *src = ax__malloc(np + g->len + 1);
    GpuProg *gp = ax__calloc(1, sizeof *gp);
    if (gp) {
        gp->magic = PROG_MAGIC;
        gp->gc = gc;
        gp->cg = g;
        gp->k = ax__calloc((size_t)g->nnodes + 1, sizeof *gp->k);
        gp->args = ax__calloc((size_t)g->nnodes + 1, sizeof *gp->args);
        gp->nargs = ax__calloc((size_t)g->nnodes + 1, sizeof *gp->nargs);
    } else {
        cg_free(g);
    }
    if (!src || !gp || !gp->k || !gp->args || !gp->nargs) {
        free(src);
        if (gp) prog_release(gp);
        ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", api->name);
        return AX_ERR_NOMEM;
    }
    memcpy(src, pre, np);
    memcpy(src + np, g->text, g->len + 1);
    p->codegen_ms = now_ms() - t0;
    if (cx->opt.debug & AX_DEBUG_CODE) fprintf(stderr, "axle: generated %s:\n%s\n", api->name, src);
    bool cached = false;
    double t1 = now_ms();
    void *mod = api->build(gc->d, src, np + g->len, &cached);
    free(src);
    if (!mod) {
        ctx_error(cx, AX_ERR_COMPILE, "%s: %s", api->name, api->errmsg(gc->d));
        prog_release(gp);
        return AX_ERR_COMPILE;
    }
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: %s codegen %.3f ms (%zu bytes), %s %.3f ms\n", api->name, p->codegen_ms,
                g->len, cached ? "cache hit" : "compile", now_ms() - t1);
    gc->counters.prepared++;
    gc->counters.cached += cached;
    for (int i = 0; i < g->nnodes; i++) {
        const CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        int max = 64 + cn->nslot * (AX_MAX_RANK + 1) + cn->nparam;
        for (int s = 0; s < cn->nslot; s++) max += cg_slot_type(cn, s)->elt->width;
        gp->args[i] = ax__malloc(sizeof **gp->args * (size_t)max);
        if (!gp->args[i]) {
            prog_release(gp);
            ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", api->name);
            return AX_ERR_NOMEM;
        }
        gp->nargs[i] = gpu_args(cn, gp->args[i], max);
        for (int r = 0; r < R_NROLE; r++) {
            if (!cn->role[r] || (r == R_SCAN1 && !gc->lookback)) continue;
            char name[64];
            gpu_kernel_name(name, sizeof name, i, (CgRole)r);
            if (!(gp->k[i][r] = api->kernel(gc->d, mod, name))) {
                ctx_error(cx, AX_ERR_BACKEND, "%s: the compiled program lacks %s: %s", api->name, name,
                          api->errmsg(gc->d));
                prog_release(gp);
                return AX_ERR_BACKEND;
            }
        }
    }
    *state = gp;
    return 0;
}

/* ------------------------------------------------------------ executor */

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
    dev_free(ex->gc, o->s1, o->s1b);
    dev_free(ex->gc, o->s2, o->s2b);
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
        if (host_eval1(&ex->h, y, &o->arr[s]) || to_device(ex->gc, o->arr[s])) return -1;
        set_slot(o, s, o->arr[s]);
    }
    for (int k = 0; k < cn->nfree; k++) {
        ax_array **a = free_array(ex, &cn->free[k]);
        if (!a || !*a) return host_malformed(&ex->h, x, "unbound array variable");
        if (to_device(ex->gc, *a)) return -1;
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
    ax_array *a = dev_array(ex->gc, elt, rank, shape, host_api_name(o->x->op));
    if (!a) return -1;
    o->arr[s] = a;
    set_slot(o, s, a);
    return 0;
}

/* A scratch buffer of at least `bytes`, zeroed if asked. */
static int scratch(GEx *ex, uint64_t *h, int64_t *hb, int64_t bytes, bool zero)
{
    *hb = round64(bytes);
    if (!(*h = dev_alloc(ex->gc, *hb))) return -1;
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

static int ex_producer(GEx *ex, const Node *x, GOp *o)
{
    const Type *elt = x->type->elt;
    int r = x->type->rank;
    int64_t sh[AX_MAX_RANK];
    CgRole role = R_MAIN;
    const CgNode *cn = o->cn;
    switch (x->op) {
    case OP_GENERATE: case OP_BACKPERMUTE: case OP_TRANSFORM: {
        const Scalar *v = thunk_val(o, 0);
        for (int d = 0; d < r; d++) sh[d] = v[d].i;
        break;
    }
    case OP_MAP:
    case OP_ZIPWITH: {
        bool same = true;
        for (int d = 0; d < r; d++) {
            sh[d] = o->shape[cn->nout][d];
            for (int i = 1; i < cn->nopd; i++)
                if (o->shape[cn->nout + i][d] < sh[d]) sh[d] = o->shape[cn->nout + i][d];
        }
        for (int i = 0; i < cn->nopd; i++)
            for (int d = 0; d < r; d++)
                if (o->shape[cn->nout + i][d] != sh[d]) same = false;
        role = same ? R_LIN : R_MAIN;
        break;
    }
    case OP_RESHAPE: {
        const Scalar *v = thunk_val(o, 0);
        for (int d = 0; d < r; d++) sh[d] = v[d].i;
        int64_t n = shape_size_checked(ex->cx, "ax_reshape", r, sh);
        if (n < 0) return -1;
        int s = cn->nout;
        if (n != o->size[s]) {
            const Node *y = x->kid[cn->opd_kid[0]];
            char a[256], b[256];
            host_fmt_ints(a, sizeof a, y->type->rank, o->shape[s]);
            host_fmt_ints(b, sizeof b, r, sh);
            return fail(ex, AX_ERR_SHAPE,
                        "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%" PRId64
                        " elements)", a, o->size[s], b, n);
        }
        role = R_LIN;
        break;
    }
    case OP_REPLICATE:
    case OP_SLICE: {
        bool rep = x->op == OP_REPLICATE;
        const Slice *sp = x->slice;
        int src = cn->nout, srank = x->kid[cn->opd_kid[0]]->type->rank;
        int rr = 0;
        for (int d = 0, k = 0, s = 0; d < sp->n; d++) {
            if (!sp->fixed[d]) {
                sh[rr++] = o->shape[src][s++];
                continue;
            }
            int64_t v = thunk_val(o, 1 + k++)->i;
            if (rep) {
                sh[rr++] = v;
            } else {
                if (v < 0 || v >= o->shape[src][s]) {
                    char b[256];
                    host_fmt_ints(b, sizeof b, srank, o->shape[src]);
                    return fail(ex, AX_ERR_INDEX, "ax_slice_: index %" PRId64 " of dimension %d out of bounds for shape (%s)",
                                v, s, b);
                }
                s++;
            }
        }
        break;
    }
    default:
        return host_malformed(&ex->h, x, "not a producer");
    }
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

static int ex_fold(GEx *ex, const Node *x, GOp *o)
{
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

static int ex_foldseg(GEx *ex, const Node *x, GOp *o)
{
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
        if (nseg > 0 && dops_download(ex->gc, ex->cx, mat, o->s2, nseg * 8)) {
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

static int ex_scan(GEx *ex, const Node *x, GOp *o)
{
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
        /* one pass: tiles in a counter's order (gpu_skel.c emit_scan1) */
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

static int ex_permute(GEx *ex, const Node *x, GOp *o)
{
    int d = o->cn->nout, s = o->cn->nout + 1;
    int rank = x->kid[o->cn->opd_kid[0]]->type->rank;
    if (out_alloc(ex, o, 0, x->type->elt, rank, o->shape[d])) return -1;
    if (launch_n(ex, o, R_DFLT, o->size[0])) return -1;
    if (o->size[s] == 0) return 0;
    if (scratch(ex, &o->s1, &o->s1b, 1024 * 4, true)) return -1;   /* striped locks */
    return launch_n(ex, o, R_PERM, o->size[s]);
}

static int ex_stencil(GEx *ex, const Node *x, GOp *o)
{
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

static int ex_filter(GEx *ex, const Node *x, GOp *o)
{
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
                 launch(ex, o, R_COUNT, nch) || dops_download(ex->gc, ex->cx, cnt, o->s1, nch * 8);
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
    if (out_alloc(ex, o, 0, x->type->elt, 1, &total)) return -1;
    if (nch == 0 || total == 0) return 0;
    return launch(ex, o, R_SCATTER, nch);
}

/* A multi-generator loop (gpu_skel.c emit_loop): the fold's tasks (a
 * chunk of a row each; with filters, a rank-1 space's chunks as filter's,
 * a group each), part, comb per row, then each filter's offsets and the
 * scatter.  s2 holds, per generator and task, the filters' counts, their
 * offsets, and the reductions' "has an element" flags. */
static int ex_loop(GEx *ex, const Node *x, GOp *o)
{
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
        int rc = dops_download(ex->gc, ex->cx, cnt, o->s2, (int64_t)half * 8);
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

static int ex_unit(GEx *ex, const Node *x, GOp *o)
{
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
    double t0 = prof ? now_ms() : 0;
    if (rc == 0) {
        switch (x->op) {
        case OP_UNIT: rc = ex_unit(ex, x, &o); break;
        case OP_GENERATE: case OP_MAP: case OP_ZIPWITH: case OP_BACKPERMUTE: case OP_TRANSFORM:
        case OP_REPLICATE: case OP_SLICE: case OP_RESHAPE:
            rc = ex_producer(ex, x, &o);
            break;
        case OP_FOLD: case OP_FOLD1: rc = ex_fold(ex, x, &o); break;
        case OP_FOLDSEG: case OP_FOLD1SEG: rc = ex_foldseg(ex, x, &o); break;
        case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX:
            rc = ex_scan(ex, x, &o);
            break;
        case OP_PERMUTE: rc = ex_permute(ex, x, &o); break;
        case OP_STENCIL: case OP_STENCIL2: rc = ex_stencil(ex, x, &o); break;
        case OP_FILTER: rc = ex_filter(ex, x, &o); break;
        case OP_LOOP: rc = ex_loop(ex, x, &o); break;
        default: rc = host_malformed(&ex->h, x, "not an array operation"); break;
        }
    }
    if (rc == 0)
        for (int s = 0; s < o.cn->nout; s++) {
            out[s] = o.arr[s];
            o.arr[s] = NULL;
        }
    if (prof && rc == 0) {
        /* each operation's own time: wait for its kernels */
        ex->api->finish(ex->gc->d);
        fprintf(stderr, "axle: profile: %4d %-11s %10lld elements %9.3f ms\n", x->num, op_name(x->op),
                (long long)(out[0] ? out[0]->size : 0), now_ms() - t0);
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

/* The program run again on the host, for the message of a fault that the
 * device recorded (see the top). */
static int rerun_for_fault(ax_ctx *cx, Program *p, int code, const char *name)
{
    cx->status = AX_OK;
    cx->msg[0] = 0;
    const Backend *hb = backend_cpu.available(cx) ? &backend_cpu : &backend_interp;
    void *st = NULL;
    int n = -1;
    if (hb->prepare(cx, p, &st) == 0) {
        ax_array *tmp[64];
        n = hb->run(cx, p, st, tmp, 64);
        for (int i = 0; i < n; i++) ax_array_release(tmp[i]);
    }
    if (st) hb->release(st);
    if (n >= 0 && cx->status == AX_OK)
        ctx_error(cx, code > 0 && code < 16 ? (ax_status)code : AX_ERR_BACKEND,
                  "%s: a kernel reported a run-time fault (status %d) that the %s backend does not reproduce", name, code,
                  hb->name);
    return -1;
}

int gpu_run(const GpuBackendDef *def, ax_ctx *cx, Program *p, void *state, ax_array **out, int max)
{
    GpuProg *gp = state;
    if (!gp || gp->magic != PROG_MAGIC || !p || !p->root) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: no program to run", def->api->name);
        return -1;
    }
    GpuCtx *gc = gp->gc;
    const GpuApi *api = gc->api;
    gc->faulted = false;
    if (api->zero(gc->d, gc->errbuf, 64)) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: %s", api->name, api->errmsg(gc->d));
        return -1;
    }
    GEx ex;
    memset(&ex, 0, sizeof ex);
    ex.cx = cx;
    ex.gc = gc;
    ex.gp = gp;
    ex.api = api;
    static const HostOps ops_cuda = {.name = "cuda", .op = host_op, .cond = host_cond, .embeds_delayed = true};
    static const HostOps ops_opencl = {.name = "opencl", .op = host_op, .cond = host_cond, .embeds_delayed = true};
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
        int f = gc->faulted ? 1 : read_fault(gc);
        if (f != 0 && rc == 0) host_release(res, w);
        if (f > 0) {
            uint32_t code = 0;
            api->download(gc->d, &code, gc->errbuf, sizeof code);
            interp_eval_free(ex.ie);
            ex.ie = NULL;
            host_free(&ex.h);
            free(res);
            return rerun_for_fault(cx, p, (int)code, api->name);
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
