/*
 * The hand-written baselines of the radix sort program.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_RADIXSORT_H
#define AX_BASELINE_RADIXSORT_H
#include "baseline.h"

/* Sorts in[0..n) (signed 32-bit integers, ascending) into out, using tmp
 * (n elements) as scratch.  in is not changed.  Returns 0, or -1 if the
 * per-thread counters cannot be allocated. */
BL_DECLARE(int, bl_radixsort, (const int32_t *in, int32_t *out, int32_t *tmp, int64_t n))

/* The same, by the axle program's algorithm: Blelloch's split sort, 32
 * one-bit passes. */
BL_DECLARE(int, bl_radixsplit, (const int32_t *in, int32_t *out, int32_t *tmp, int64_t n))
#endif
