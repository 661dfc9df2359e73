/*
 * Host arrays (array.c): the record behind ax_array, its device copies,
 * and the memory limit they are charged against.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_ARRAY_H
#define AX_ARRAY_H
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

/* The host buffers of a, brought up to date (allocated and downloaded
 * from the device if needed).  0, or -1 with an error on a's context. */
int array_host(ax_array *a);
/* An owned array whose contents will be on a device: no host buffers yet
 * (host_stale), nothing charged; the backend attaches its device copies. */
ax_array *array_alloc_device(ax_ctx *cx, const Type *elt, int rank, const int64_t *shape);
/* Charges / returns bytes of array memory against the memory limit (the
 * device's buffers count as the host's do).  mem_charge: false, with
 * AX_ERR_NOMEM naming what for, when over the limit. */
bool mem_charge(ax_ctx *cx, int64_t bytes, int64_t elems, const Type *elt);
void mem_uncharge(ax_ctx *cx, int64_t bytes);
/* The bytes of a's elements, or -1 with an error when they pass 2^63. */
int64_t array_bytes(ax_array *a);
/* Drops a's device copies (their memory goes back to their owner). */
void array_drop_device(ax_array *a);
/* The padded bytes of a's component buffer i (host and device alike: a
 * multiple of 64, at least 64). */
int64_t array_leaf_bytes(const ax_array *a, int i);

/* Frees the context's spare buffers (array.c). */
void array_spare_clear(ax_ctx *cx);
/* Allocates an owned array (uninitialised buffers unless zero is set);
 * records an error and returns NULL on failure. */
ax_array *array_alloc(ax_ctx *cx, const Type *elt, int rank, const int64_t *shape, bool zero);
/* Checks a shape (extents >= 0, size fits int64) and returns its size, or
 * -1 with an AX_ERR_SHAPE error on cx. */
int64_t shape_size_checked(ax_ctx *cx, const char *what, int rank, const int64_t *shape);

#endif
