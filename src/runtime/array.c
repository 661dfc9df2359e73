/*
 * Host arrays: reference-counted, one buffer per scalar component (struct
 * of arrays), owned by axle or borrowed from the caller.  Every array is on
 * its context's list so that ax_ctx_free can free what callers forgot.
 * Owned bytes count against the context's memory limit (refuse an
 * O(n^2) intermediate with an error instead of being killed).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "runtime/array.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int64_t shape_size_checked(ax_ctx *cx, const char *what, int rank, const int64_t *shape)
{
    if (rank < 0 || rank > AX_MAX_RANK) {
        ctx_error(cx, AX_ERR_SHAPE, "%s: rank %d is out of range 0..%d", what, rank, AX_MAX_RANK);
        return -1;
    }
    /* The same order as prim_eval's SHAPESIZE: a negative extent is an
     * error, then any zero extent makes the size 0 (whatever the product
     * of the others), then an overflow is an error. */
    bool zero = false;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) {
            ctx_error(cx, AX_ERR_SHAPE, "%s: extent %lld of dimension %d is negative", what,
                      (long long)shape[i], i);
            return -1;
        }
        zero |= shape[i] == 0;
    }
    if (zero) return 0;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (n > INT64_MAX / shape[i]) {
            ctx_error(cx, AX_ERR_SHAPE, "%s: the shape's element count overflows 64 bits", what);
            return -1;
        }
        n *= shape[i];
    }
    return n;
}

static ax_array *array_header(ax_ctx *cx, const char *what, const Type *elt, int rank,
                              const int64_t *shape)
{
    if (!cx) return NULL;
    if (!ty_is_elt(elt))
        return ctx_error(cx, AX_ERR_ARG, "%s: the element type is %s", what,
                         elt ? "not an element type" : "NULL");
    if (rank > 0 && !shape) return ctx_error(cx, AX_ERR_ARG, "%s: the shape is NULL", what);
    int64_t size = shape_size_checked(cx, what, rank, shape);
    if (size < 0) return NULL;
    /* The array keeps its own copy of a tuple type: it outlives
     * ax_ctx_reset and the program that made it. */
    if (!(elt = ctx_intern_type(cx, elt))) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    /* the header and its leaves' buffer pointers in one block: an awhile
     * step makes several small arrays, and malloc's time adds up */
    size_t nbuf = elt->width ? (size_t)elt->width : 1;
    ax_array *a = ax__calloc(1, sizeof *a + nbuf * sizeof(void *));
    if (!a) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    void **buf = (void **)(a + 1);
    a->cx = cx;
    a->refs = 1;
    a->elt = elt;
    a->rank = rank;
    for (int i = 0; i < rank; i++) a->shape[i] = shape[i];
    a->size = size;
    a->ncomp = elt->width;
    a->buf = buf;
    a->next = cx->arrays;
    if (cx->arrays) cx->arrays->prev = a;
    cx->arrays = a;
    return a;
}

/* ---------------------------------------------------------- spare buffers
 *
 * Buffers of at least SPARE_MIN bytes come from, and go back to, a small
 * per-context cache.  A fresh large buffer is fresh mmapped memory: every
 * page faults on first write (the kernel zeroes it), which for a 20M
 * element map costs as much as the map itself.  A program run repeatedly
 * (the common case: a compiled ax_program in a loop, awhile iterations,
 * intermediates of the same size) then reuses memory already faulted in.
 * Large buffers are 2 MiB aligned and advised for transparent huge pages,
 * which cuts the faults of the first run by 512.  Buffers from SMALL_MIN
 * to SPARE_MIN are cached too, at their own 64-byte size: an awhile loop
 * over a few thousand elements makes and drops some each step, and each
 * such malloc made glibc merge the step's small freed blocks first
 * (malloc_consolidate), a share of the step's time a profile shows.
 * Smaller ones (a step's counter and condition) go to a list of their
 * own (ax_ctx.small), reused at their exact padded size.
 * Spare bytes count against the memory limit: they are dropped before a
 * request is refused. */
enum { SMALL_MIN = 4 << 10, SPARE_MIN = 1 << 20, HUGE_ALIGN = 2 << 20 };
#define SPARE_MAX_ENTRIES ((int)(sizeof ((ax_ctx *)0)->spare / sizeof ((ax_ctx *)0)->spare[0]))
#define SMALL_MAX_ENTRIES ((int)(sizeof ((ax_ctx *)0)->small / sizeof ((ax_ctx *)0)->small[0]))

static size_t buf_cap(size_t al)
{
    return al < SPARE_MIN ? (al + 63) & ~(size_t)63 : (al + HUGE_ALIGN - 1) & ~(size_t)(HUGE_ALIGN - 1);
}

static void *buf_alloc(ax_ctx *cx, size_t al)
{
    if (al < SMALL_MIN) {
        size_t cap = al ? buf_cap(al) : 64;
        for (int i = cx->nsmall - 1; i >= 0; i--)   /* the latest first */
            if (cx->small[i].cap == cap) {
                void *p = cx->small[i].p;
                cx->spare_bytes -= (int64_t)cap;
                cx->small[i] = cx->small[--cx->nsmall];
                return p;
            }
        return ax__aligned_alloc(64, cap);
    }
    int best = -1;
    for (int i = 0; i < cx->nspare; i++)   /* best fit, within twice the size */
        if (cx->spare[i].cap >= al && cx->spare[i].cap / 2 <= al &&
            (best < 0 || cx->spare[i].cap < cx->spare[best].cap))
            best = i;
    if (best >= 0) {
        void *p = cx->spare[best].p;
        cx->spare_bytes -= (int64_t)cx->spare[best].cap;
        cx->spare[best] = cx->spare[--cx->nspare];
        return p;
    }
    size_t cap = buf_cap(al);
    if (al < SPARE_MIN) return ax__aligned_alloc(64, cap);
    void *p = ax__aligned_alloc(HUGE_ALIGN, cap);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, cap, MADV_HUGEPAGE);   /* advice only: failure is harmless */
#endif
    return p;
}

static void buf_release(ax_ctx *cx, void *p, size_t al)
{
    if (!p) return;
    if (al < SMALL_MIN) {
        size_t cap = al ? buf_cap(al) : 64;
        if ((int64_t)cap > cx->opt.mem_limit / 4) {
            free(p);
            return;
        }
        if (cx->nsmall == SMALL_MAX_ENTRIES) {   /* the oldest goes */
            free(cx->small[0].p);
            cx->spare_bytes -= (int64_t)cx->small[0].cap;
            memmove(&cx->small[0], &cx->small[1], sizeof cx->small[0] * (size_t)--cx->nsmall);
        }
        cx->small[cx->nsmall].p = p;
        cx->small[cx->nsmall].cap = cap;
        cx->nsmall++;
        cx->spare_bytes += (int64_t)cap;
        return;
    }
    size_t cap = buf_cap(al);
    if ((int64_t)cap > cx->opt.mem_limit / 4) {
        free(p);
        return;
    }
    /* Keep it, evicting the oldest while over either bound. */
    while (cx->nspare > 0 && (cx->nspare >= SPARE_MAX_ENTRIES ||
                              cx->spare_bytes + (int64_t)cap > cx->opt.mem_limit / 4)) {
        free(cx->spare[0].p);
        cx->spare_bytes -= (int64_t)cx->spare[0].cap;
        memmove(&cx->spare[0], &cx->spare[1], sizeof cx->spare[0] * (size_t)--cx->nspare);
    }
    cx->spare[cx->nspare].p = p;
    cx->spare[cx->nspare].cap = cap;
    cx->nspare++;
    cx->spare_bytes += (int64_t)cap;
}

void array_spare_clear(ax_ctx *cx)
{
    for (int i = 0; i < cx->nspare; i++) free(cx->spare[i].p);
    for (int i = 0; i < cx->nsmall; i++) free(cx->small[i].p);
    cx->nspare = 0;
    cx->nsmall = 0;
    cx->spare_bytes = 0;
}

/* The padded size of leaf buffer i (64-byte multiple: vector loads). */
static size_t leaf_bytes(const ax_array *a, int i)
{
    size_t sz = ax_scalar_size(ty_leaf(a->elt, i)) * (size_t)a->size;
    return (sz + 63) & ~(size_t)63;
}

int64_t array_leaf_bytes(const ax_array *a, int i)
{
    size_t b = leaf_bytes(a, i);
    return b ? (int64_t)b : 64;
}

void array_drop_device(ax_array *a)
{
    if (!a->dops) return;
    for (int i = 0; i < a->ncomp; i++)
        if (a->dbuf && a->dbuf[i]) a->dops->free(a->dev, a->dbuf[i], (int64_t)leaf_bytes(a, i));
    mem_uncharge(a->cx, a->dbytes);
    free(a->dbuf);
    a->dbuf = NULL;
    a->dbytes = 0;
    a->dops = NULL;
    a->dev = NULL;
    a->dev_valid = false;
}

static void array_unlink_free(ax_array *a)
{
    ax_ctx *cx = a->cx;
    if (a->prev) a->prev->next = a->next; else cx->arrays = a->next;
    if (a->next) a->next->prev = a->prev;
    array_drop_device(a);
    if (a->owned) {
        for (int i = 0; i < a->ncomp; i++) buf_release(cx, a->buf[i], leaf_bytes(a, i));
        cx->mem_used -= a->bytes;
    }
    free(a);   /* and a->buf, in the same block (array_header) */
}

/* The bytes of a's elements (unpadded), or -1 with an error when the
 * count (each buffer's padding to 64 bytes, leaf_bytes, must fit too)
 * passes 2^63.  Checked on its own, whatever the limit: a count that
 * saturated would equal "no limit" (INT64_MAX) and then wrap in size_t
 * (2^61 f64 elements once became a 64-byte buffer). */
int64_t array_bytes(ax_array *a)
{
    int64_t bytes = 0;
    for (int i = 0; i < a->ncomp; i++) {
        int64_t sz = (int64_t)ax_scalar_size(ty_leaf(a->elt, i)), b;
        if (__builtin_mul_overflow(a->size, sz, &b) || b > INT64_MAX - 63 || __builtin_add_overflow(bytes, b, &bytes)) {
            char ts[128];
            ctx_error(a->cx, AX_ERR_NOMEM,
                      "out of memory: an array of %lld elements of type %s needs more than 2^63 bytes",
                      (long long)a->size, ty_str(a->elt, ts, sizeof ts));
            return -1;
        }
    }
    return bytes;
}

bool mem_charge(ax_ctx *cx, int64_t bytes, int64_t elems, const Type *elt)
{
    if (bytes > cx->opt.mem_limit - cx->mem_used - cx->spare_bytes) array_spare_clear(cx);
    if (bytes > cx->opt.mem_limit - cx->mem_used) {
        char ts[128];
        ctx_error(cx, AX_ERR_NOMEM,
                  "out of memory: an array of %lld elements of type %s needs %lld bytes, "
                  "over the memory limit (%lld bytes, %lld in use; set AXLE_MEM_LIMIT)",
                  (long long)elems, elt ? ty_str(elt, ts, sizeof ts) : "?", (long long)bytes,
                  (long long)cx->opt.mem_limit, (long long)cx->mem_used);
        return false;
    }
    cx->mem_used += bytes;
    return true;
}

void mem_uncharge(ax_ctx *cx, int64_t bytes) { cx->mem_used -= bytes; }

ax_array *array_alloc_device(ax_ctx *cx, const Type *elt, int rank, const int64_t *shape)
{
    ax_array *a = array_header(cx, "array allocation", elt, rank, shape);
    if (!a) return NULL;
    a->owned = true;
    a->host_stale = true;
    return a;
}

/* Allocates a's host buffers (owned, charged). */
static int host_buffers(ax_array *a, bool zero)
{
    ax_ctx *cx = a->cx;
    int64_t bytes = array_bytes(a);
    if (bytes < 0 || !mem_charge(cx, bytes, a->size, a->elt)) return -1;
    a->bytes = bytes;
    for (int i = 0; i < a->ncomp; i++) {
        size_t sz = ax_scalar_size(ty_leaf(a->elt, i)) * (size_t)a->size;
        /* 64-byte alignment: vector loads in generated kernels. */
        size_t al = leaf_bytes(a, i);
        a->buf[i] = buf_alloc(cx, al);
        if (!a->buf[i]) {
            ctx_error(cx, AX_ERR_NOMEM, "out of memory allocating %zu bytes", sz);
            return -1;
        }
        if (zero) memset(a->buf[i], 0, al ? al : 64);
    }
    return 0;
}

int array_host(ax_array *a)
{
    if (!a || !a->host_stale) return 0;
    ax_ctx *cx = a->cx;
    if (!a->dops || !a->dev_valid) {
        ctx_error(cx, AX_ERR_BACKEND, "an array's contents were lost with its device");
        return -1;
    }
    if (!a->buf[0] && a->ncomp > 0 && host_buffers(a, false)) return -1;
    for (int i = 0; i < a->ncomp; i++) {
        int64_t n = (int64_t)ax_scalar_size(ty_leaf(a->elt, i)) * a->size;
        if (n > 0 && a->dops->download(a->dev, cx, a->buf[i], a->dbuf[i], n)) return -1;
    }
    a->host_stale = false;
    return 0;
}

ax_array *array_alloc(ax_ctx *cx, const Type *elt, int rank, const int64_t *shape, bool zero)
{
    ax_array *a = array_header(cx, "array allocation", elt, rank, shape);
    if (!a) return NULL;
    a->owned = true;
    if (host_buffers(a, zero)) {
        array_unlink_free(a);
        return NULL;
    }
    return a;
}

/* The public constructors are not builders: their errors are reported at
 * once (ctx_settle) rather than left pending for ax_run, unless an earlier
 * builder error is pending (first error wins). */
static ax_array *reported(ax_ctx *cx, bool was_pending, ax_array *r)
{
    if (!r && !was_pending) ctx_settle(cx);
    return r;
}

static ax_array *array_new(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape)
{
    if (!ty_is_elt(elem))
        return ctx_error(cx, AX_ERR_ARG, "ax_array_new: the element type is %s",
                         elem ? "not an element type" : "NULL");
    return array_alloc(cx, elem, rank, shape, true);
}

static ax_array *array_wrap_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                              void *const *buffers)
{
    if (!buffers) return ctx_error(cx, AX_ERR_ARG, "ax_array_wrap: the buffer list is NULL");
    ax_array *a = array_header(cx, "ax_array_wrap", elem, rank, shape);
    if (!a) return NULL;
    for (int i = 0; i < a->ncomp; i++) {
        if (!buffers[i] && a->size > 0) {
            ctx_error(cx, AX_ERR_ARG, "ax_array_wrap: buffer %d is NULL", i);
            array_unlink_free(a);
            return NULL;
        }
        a->buf[i] = buffers[i];
    }
    return a;
}

static ax_array *array_wrap(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, void *data)
{
    if ((unsigned)s >= AX_NSCALAR) return ctx_error(cx, AX_ERR_ARG, "ax_array_wrap: bad scalar type %d", (int)s);
    void *bufs[1] = {data};
    return array_wrap_n(cx, ty_scalar(s), rank, shape, bufs);
}

static ax_array *array_from_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                              const void *const *buffers)
{
    if (!buffers) return ctx_error(cx, AX_ERR_ARG, "ax_array_from: the buffer list is NULL");
    if (!ty_is_elt(elem))
        return ctx_error(cx, AX_ERR_ARG, "ax_array_from: the element type is %s",
                         elem ? "not an element type" : "NULL");
    ax_array *a = array_alloc(cx, elem, rank, shape, false);
    if (!a) return NULL;
    for (int i = 0; i < a->ncomp; i++) {
        if (!buffers[i] && a->size > 0) {
            ctx_error(cx, AX_ERR_ARG, "ax_array_from: buffer %d is NULL", i);
            ax_array_release(a);
            return NULL;
        }
        if (a->size) memcpy(a->buf[i], buffers[i], ax_scalar_size(ty_leaf(elem, i)) * (size_t)a->size);
    }
    return a;
}

static ax_array *array_from(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, const void *data)
{
    if ((unsigned)s >= AX_NSCALAR) return ctx_error(cx, AX_ERR_ARG, "ax_array_from: bad scalar type %d", (int)s);
    const void *bufs[1] = {data};
    return array_from_n(cx, ty_scalar(s), rank, shape, bufs);
}


/* The constructors claim the context for their thread (ctx_enter). */
static ax_array *guard_end(ax_ctx *cx, const char *what, bool was_pending, ax_array *r)
{
    r = reported(cx, was_pending, r);
    if (ctx_leave_report(cx, what)) {
        ax_array_release(r);
        return NULL;
    }
    return r;
}

#define CONSTRUCT(what, call)                          \
    do {                                               \
        if (!cx || !ctx_enter_as(cx, what)) return NULL; \
        bool pending = cx->status != AX_OK;            \
        return guard_end(cx, what, pending, call);     \
    } while (0)

ax_array *ax_array_new(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape)
{
    CONSTRUCT("ax_array_new", array_new(cx, elem, rank, shape));
}
ax_array *ax_array_wrap_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                          void *const *buffers)
{
    CONSTRUCT("ax_array_wrap", array_wrap_n(cx, elem, rank, shape, buffers));
}
ax_array *ax_array_wrap(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, void *data)
{
    CONSTRUCT("ax_array_wrap", array_wrap(cx, s, rank, shape, data));
}
ax_array *ax_array_from_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                          const void *const *buffers)
{
    CONSTRUCT("ax_array_from", array_from_n(cx, elem, rank, shape, buffers));
}
ax_array *ax_array_from(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, const void *data)
{
    CONSTRUCT("ax_array_from", array_from(cx, s, rank, shape, data));
}

ax_array *ax_array_retain(ax_array *a)
{
    if (a) a->refs++;
    return a;
}

void ax_array_release(ax_array *a)
{
    if (!a) return;
    if (--a->refs > 0) return;
    array_unlink_free(a);
}

const ax_type *ax_array_type(const ax_array *a) { return a ? a->elt : NULL; }
int ax_array_rank(const ax_array *a) { return a ? a->rank : -1; }
int64_t ax_array_extent(const ax_array *a, int dim)
{
    return a && dim >= 0 && dim < a->rank ? a->shape[dim] : -1;
}
const int64_t *ax_array_shape(const ax_array *a) { return a ? a->shape : NULL; }
int64_t ax_array_size(const ax_array *a) { return a ? a->size : -1; }
int ax_array_components(const ax_array *a) { return a ? a->ncomp : 0; }
void *ax_array_data(const ax_array *a, int i)
{
    if (!a || i < 0 || i >= a->ncomp) return NULL;
    ax_array *m = (ax_array *)a;   /* the array's state, not its contents */
    if (m->host_stale) {
        bool pending = m->cx->status != AX_OK;
        if (array_host(m)) {
            reported(m->cx, pending, NULL);
            return NULL;
        }
    }
    /* The caller may write through the pointer: a device copy is then
     * out of date, and the next GPU run uploads the array again. */
    m->dev_valid = false;
    return a->buf[i];
}
ax_scalar ax_array_component_type(const ax_array *a, int i)
{
    return a && i >= 0 && i < a->ncomp ? ty_leaf(a->elt, i) : AX_NSCALAR;
}
int ax_array_copy_out(const ax_array *a, int i, void *dst)
{
    if (!a) return -1;
    ax_ctx *cx = a->cx;
    bool pending = cx->status != AX_OK;
    if (i < 0 || i >= a->ncomp) {
        ctx_error(cx, AX_ERR_ARG, "ax_array_copy_out: component %d out of range 0..%d", i, a->ncomp - 1);
        reported(cx, pending, NULL);
        return -1;
    }
    if (!dst) {
        ctx_error(cx, AX_ERR_ARG, "ax_array_copy_out: destination is NULL");
        reported(cx, pending, NULL);
        return -1;
    }
    if (array_host((ax_array *)a)) {
        reported(cx, pending, NULL);
        return -1;
    }
    if (a->size) memcpy(dst, a->buf[i], ax_scalar_size(ty_leaf(a->elt, i)) * (size_t)a->size);
    return 0;
}
