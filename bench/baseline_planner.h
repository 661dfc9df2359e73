/*
 * The hand-fused baselines of the planner's programs (examples/planner.c):
 * as few passes as the dependences allow, OpenMP, simd.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_PLANNER_H
#define AX_BASELINE_PLANNER_H
#include "baseline.h"

/* y[i] = x[i] / (sum x * max x): one pass for both reductions, one for the map. */
BL_DECLARE(void, bl_normalise, (const float *x, float *y, int64_t n))
/* The mean and variance of x in one pass (sum and sum of squares). */
BL_DECLARE(void, bl_meanvar, (const float *x, int64_t n, float *mean, float *var))
/* The sum of the positive 4 x^2 - 1, in one pass. */
BL_DECLARE(float, bl_filterfold, (const float *x, int64_t n))
/* y[i] = 2 x[i] - 1, and the sum of the y, in one pass. */
BL_DECLARE(float, bl_mapfold, (const float *x, float *y, int64_t n))
/* The points with d > 0 (ax, ay; *na of them) and d < 0 (bx, by; *nb), in
 * order, and the farthest with d > 0 as (d, x, y) (the first on a tie;
 * (0, 0, 0) when none), for d p = 2000 (y + 300) - 500 (x + 1000).  0, or
 * -1 when memory for the per-thread counts is lacking. */
BL_DECLARE(int, bl_quickhull, (const float *px, const float *py, int64_t n, float *ax, float *ay, int64_t *na,
                               float *bx, float *by, int64_t *nb, float far[3]))
#endif
