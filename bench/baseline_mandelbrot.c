/*
 * The Mandelbrot set (paper s.5.5) as a performance engineer writes it for
 * a multicore CPU: rows shared out dynamically (the work per pixel varies
 * from 1 to `depth` iterations, the imbalance the paper's CUDA version
 * schedules around), and within a row eight pixels at a time in SIMD lanes
 * with a mask of the lanes still iterating; a block stops as soon as all
 * its lanes have escaped.  A lane that has escaped keeps its z and count,
 * which is exactly the semantics of the axle programs (the count is the
 * number of steps before |z|^2 > 4, at most depth).  f32 like axle, and the
 * step in the same order: z' = (zr^2 - zi^2 + cr, 2 zr zi + ci).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_mandelbrot.h"

#define LANES 8

void BL(bl_mandelbrot)(int64_t h, int64_t w, float x0, float y0, float sx, float sy, int32_t depth,
                       int32_t *restrict count)
{
    const float fw = (float)w, fh = (float)h;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1)
#endif
    for (int64_t y = 0; y < h; y++) {
        const float ci = y0 + ((float)y * sy) / fh;
        for (int64_t xb = 0; xb < w; xb += LANES) {
            float cr[LANES], zr[LANES], zi[LANES];
            int32_t n[LANES], live[LANES];
            for (int l = 0; l < LANES; l++) {
                cr[l] = zr[l] = x0 + ((float)(xb + l) * sx) / fw;
                zi[l] = ci;
                n[l] = 0;
                live[l] = xb + l < w;   /* lanes past the row's end start dead */
            }
            for (int32_t k = 0; k < depth; k++) {
                int32_t any = 0;
#ifdef _OPENMP
#pragma omp simd reduction(| : any)
#endif
                for (int l = 0; l < LANES; l++) {
                    float nr = zr[l] * zr[l] - zi[l] * zi[l] + cr[l];
                    float ni = 2.0f * zr[l] * zi[l] + ci;
                    int32_t ok = live[l] & (nr * nr + ni * ni <= 4.0f);
                    zr[l] = ok ? nr : zr[l];
                    zi[l] = ok ? ni : zi[l];
                    n[l] += ok;
                    live[l] = ok;
                    any |= ok;
                }
                if (!any) break;
            }
            for (int l = 0; l < LANES && xb + l < w; l++) count[y * w + xb + l] = n[l];
        }
    }
}
