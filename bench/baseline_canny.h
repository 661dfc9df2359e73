/*
 * The hand-written baseline of Canny edge detection (paper s.5.7).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_CANNY_H
#define AX_BASELINE_CANNY_H
#include "baseline.h"

/* Pixel classes after thresholding. */
enum { BL_CANNY_NONE = 0, BL_CANNY_WEAK = 1, BL_CANNY_STRONG = 2 };

/* Floats of scratch memory bl_canny needs for an h x w image. */
#define BL_CANNY_WORK(h, w) ((size_t)(h) * (size_t)(w) * 4 + (size_t)(h) * 2 + 16)

/* The six data-parallel phases of Canny on an h x w image of packed RGBA
 * pixels (0xRRGGBBAA): luminance, 5-tap Gaussian blur along x then y,
 * Sobel gradient and its direction, non-maximum suppression, and the
 * double threshold (examples/canny.c says exactly how; every read outside
 * the image is clamped to the edge).  Writes each pixel's class to cls and
 * the row-major indices of the strong pixels, in increasing order, to
 * strong (room for h*w); returns their number.  work holds
 * BL_CANNY_WORK(h, w) floats. */
BL_DECLARE(int64_t, bl_canny, (int64_t h, int64_t w, const uint32_t *rgba, float low, float high, float *work,
                               uint8_t *cls, int32_t *strong))

/* The last phase, sequential on the host: marks as edges (1) the strong
 * pixels and every weak pixel connected to one through weak pixels
 * (8-neighbourhood); the rest 0.  stack has room for h*w entries. */
BL_DECLARE(void, bl_canny_connect, (int64_t h, int64_t w, const uint8_t *cls, const int32_t *strong,
                                    int64_t nstrong, uint8_t *edges, int32_t *stack))
#endif
