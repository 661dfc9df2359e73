/*
 * The sort the executors run (sort.c): each row of a buffer of scalar
 * keys sorted stably, values of any element type carried along, on the
 * thread pool.  The order is the interpreter's (backend/interp, which
 * defines ax_sort): integers by value, floats in IEEE totalOrder with
 * every NaN last (first when descending), keeping its bits.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_SORT_H
#define AX_SORT_H
#include "pool.h"
#include "ir.h"
#include "hostarray.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct SortJob {
    ax_scalar key;            /* the keys' scalar type */
    bool descending;
    int64_t rows, n;          /* rows of n elements each */
    const void *keys;         /* rows * n keys */
    void *out;                /* the sorted keys (not keys) */
    int nvals;                /* the values' leaves (0: no values) */
    const void *const *vals;  /* each leaf's buffer, rows * n elements */
    const int *vsize;         /* each leaf's element size: 1, 2, 4 or 8 */
    void *const *vout;        /* each leaf's sorted buffer */
    /* scratch: rows * n keys; with values two permutations of rows * n
     * indices, uint64_t where sort_wide(n), else uint32_t */
    void *tmp, *p1, *p2;
} SortJob;

/* Whether rows of n elements take 8-byte permutation indices. */
bool sort_wide(int64_t n);

/* Runs j on pool p (NULL: in the caller).  0, or -1 when its counters
 * cannot be allocated. */
int sort_run(Pool *p, const SortJob *j);

/* The keys and values (or NULL) of OP_SORT x among an operation's arrays
 * (operands from arr[nout] on, as the executors hold them); false when
 * they do not fit (a malformed program: values not of the keys' size). */
bool sort_operands(const Node *x, ax_array *const *arr, int nout, ax_array **keys, ax_array **vals);

/* The executors' OP_SORT x (ir.h) over host arrays: keys (and vals, of
 * the keys' shape, or NULL) sorted into okeys (and ovals), allocated by
 * the caller with the operands' types and shape.  0, or -1 when out of
 * memory. */
int sort_arrays(Pool *p, const Node *x, const ax_array *keys, const ax_array *vals, ax_array *okeys,
                ax_array *ovals);

#endif
