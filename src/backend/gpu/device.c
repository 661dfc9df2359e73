/*
 * The GPU backends' device (gpu_int.h): the context's device, opened on
 * first use through the device API (GpuBackendDef.open), its buffers,
 * transfers and fault word.
 *
 * Arrays stay on the device between runs (ir.h "Device copies"): an
 * input is uploaded the first time a program reads it, a result is read
 * back only when the host asks for it.  Device buffers come from a pool
 * per context (reused by size: a program run again allocates nothing),
 * and count against the context's memory limit like host arrays.
 *
 * Faults (an index out of bounds, a division by zero, ...) are recorded by
 * the kernels as a code in one device word (the first wins); every read
 * of the device reads it too, so that nothing computed after a fault is
 * used.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "gpu_int.h"
#include "runtime/array.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
uint64_t gpu_dev_alloc(GpuCtx *gc, int64_t bytes)
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

void gpu_dev_free(GpuCtx *gc, uint64_t h, int64_t bytes)
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


/* The fault word: 0 when clear, else the first fault's status (and
 * gc->faulted set).  -1 if it cannot be read. */
int gpu_read_fault(GpuCtx *gc)
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
static void dops_free(void *dev, uint64_t h, int64_t bytes) { gpu_dev_free(dev, h, bytes); }

int gpu_download(GpuCtx *gc, ax_ctx *cx, void *dst, uint64_t h, int64_t bytes)
{
    gc->counters.downloads++;
    gc->counters.download_bytes += bytes;
    if (gc->api->download(gc->d, dst, h, bytes)) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: reading an array back: %s", gc->api->name, gc->api->errmsg(gc->d));
        return -1;
    }
    int f = gpu_read_fault(gc);
    if (f > 0) ctx_error(cx, (ax_status)f, "%s: a kernel reported a run-time fault", gc->api->name);
    return f ? -1 : 0;
}

static int dops_download(void *dev, ax_ctx *cx, void *dst, uint64_t h, int64_t bytes)
{
    return gpu_download(dev, cx, dst, h, bytes);
}

/* Gives a a device copy (uploading its host contents) unless it has a
 * current one here. */
int gpu_to_device(GpuCtx *gc, ax_array *a)
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
            if (!(a->dbuf[i] = gpu_dev_alloc(gc, array_leaf_bytes(a, i)))) {
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
ax_array *gpu_dev_array(GpuCtx *gc, const Type *elt, int rank, const int64_t *shape, const char *what)
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
        if (!(a->dbuf[i] = gpu_dev_alloc(gc, array_leaf_bytes(a, i)))) {
            ax_array_release(a);
            return NULL;
        }
    a->dev_valid = true;
    return a;
}

/* ------------------------------------------------------------ context */

void gpu_ctx_release(GpuCtx *gc)
{
    if (gc->d) {
        if (gc->errbuf) gc->api->free(gc->d, gc->errbuf);
        pool_trim(gc, 0);
        gc->def->close(gc->d);
    }
    pool_free(gc->host);
    free(gc->pool);
    free(gc);
}

/* The context's device, opened on first use. */
GpuCtx *gpu_ctx_state(const GpuBackendDef *def, ax_ctx *cx)
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
    gc->magic = GPU_CTX_MAGIC;
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
        gpu_ctx_release(gc);
        return NULL;
    }
    cx->backend_state[api->kind] = gc;
    cx->backends[api->kind] = def->backend;
    return gc;
}

