/*
 * The hand-written baseline of the Mandelbrot set (paper s.5.5).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_MANDELBROT_H
#define AX_BASELINE_MANDELBROT_H
#include "baseline.h"

/* The escape counts of the h x w pixels (row-major) of the view whose
 * corner is (x0, y0) and whose extent is (sx, sy): pixel (y, x) samples
 * c = (x0 + (x sx) / w, y0 + (y sy) / h); from z = c it iterates
 * z = z^2 + c up to depth times and counts the steps before |z|^2 > 4. */
BL_DECLARE(void, bl_mandelbrot, (int64_t h, int64_t w, float x0, float y0, float sx, float sy, int32_t depth,
                                 int32_t *count))
#endif
