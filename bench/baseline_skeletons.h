/*
 * The hand-written baselines of the single-skeleton micro-benchmarks
 *: map, fold and scan alone, each against what a performance
 * engineer writes with OpenMP.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_SKELETONS_H
#define AX_BASELINE_SKELETONS_H
#include "baseline.h"

/* y[i] = expf(x[i] * 0.001f) + logf(x[i]) for i < n. */
BL_DECLARE(void, bl_map_explog, (const float *x, float *y, int64_t n))
/* The f32 sum of x[i] over i < n (0 for n = 0). */
BL_DECLARE(float, bl_fold_sum, (const float *x, int64_t n))
/* The inclusive prefix sums: y[i] = x[0] + ... + x[i] for i < n. */
BL_DECLARE(void, bl_scanl1_sum, (const float *x, float *y, int64_t n))
/* The running sums within segments: lens[0..m) (none negative) cut x into
 * consecutive segments; y[i] = the sum of x from its segment's start to i. */
BL_DECLARE(void, bl_scanl1_seg_sum, (const float *x, const int32_t *lens, int64_t m, float *y))
/* The values expf(x[i] - 1) greater than 1.5 into y, in order (tmp:
 * n floats of scratch); returns their number. */
BL_DECLARE(int64_t, bl_filter_exp, (const float *x, float *tmp, float *y, int64_t n))
#endif
