/*
 * The hand-written baseline of the dot product.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_DOTP_H
#define AX_BASELINE_DOTP_H
#include "baseline.h"

/* The sum of x[i] * y[i] over i < n. */
BL_DECLARE(float, bl_dotp, (const float *x, const float *y, int64_t n))
#endif
