/*
 * The host array record behind ax_array.  It is core's because the IR
 * holds arrays (a USE node points at one; the verifier and the printer
 * read its type and shape); the runtime makes, frees and charges them
 * (runtime/array.h).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_HOSTARRAY_H
#define AX_HOSTARRAY_H
#include "ir.h"

/* Device copies (the GPU backends, src/backend/gpu).  An array that a GPU
 * backend reads or makes keeps one device buffer per component between
 * runs: a host array is uploaded once, and a result stays on the device,
 * its host buffers allocated and filled only when the host reads it
 * (array_host).  The device's owner frees and downloads through DevOps. */
typedef struct DevOps {
    const char *name;                                   /* "cuda", "opencl" */
    void (*free)(void *dev, uint64_t h, int64_t bytes);   /* bytes: array_leaf_bytes */
    /* Copies bytes of device buffer h into dst; 0, or -1 with an error on cx. */
    int (*download)(void *dev, ax_ctx *cx, void *dst, uint64_t h, int64_t bytes);
} DevOps;

struct ax_array {
    ax_ctx *cx;
    int refs;
    const Type *elt;          /* element type (ctx_intern_type: cx->types, or static) */
    int rank;
    int64_t shape[AX_MAX_RANK];
    int64_t size;
    int ncomp;
    void **buf;               /* ncomp buffers */
    bool owned;               /* buffers malloc'd by axle */
    int64_t bytes;            /* owned bytes (for the memory limit) */
    ax_array *prev, *next;    /* cx->arrays list */
    /* Device copies (DevOps above): */
    const DevOps *dops;       /* their owner's operations, or NULL: none */
    void *dev;                /* the owner (a GPU backend's context state) */
    uint64_t *dbuf;           /* per component: a device buffer, 0 if none */
    int64_t dbytes;           /* device bytes held (counted in cx->mem_used) */
    bool dev_valid;           /* the device copies hold the contents */
    bool host_stale;          /* the host buffers do not (a result of a GPU run,
                                 not yet read on the host; buf[i] may be NULL) */
    int param;                /* k+1: the placeholder of parameter k (ax_param) */
};

#endif
