/*
 * The hand-written baseline of the histogram program: per-thread bins
 * (OpenMP), merged at the end.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_HISTOGRAM_H
#define AX_BASELINE_HISTOGRAM_H
#include "baseline.h"

/* counts[b] = the number of i < n with x[i] == b, for b < nbins; values
 * outside [0, nbins) are not counted. */
BL_DECLARE(int, bl_histogram, (const int32_t *x, int64_t n, int32_t *counts, int32_t nbins))
#endif
