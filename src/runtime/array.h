/*
 * Host arrays (array.c): making, freeing and reading them, their device
 * copies, and the memory limit they are charged against.  The record
 * itself is core's (core/hostarray.h).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_ARRAY_H
#define AX_ARRAY_H
#include "ir.h"
#include "hostarray.h"

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
