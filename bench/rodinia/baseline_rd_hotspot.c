/*
 * hotspot (Rodinia 3.1) baselines: explicit time steps of the chip's heat
 * equation on a 2D grid, each cell updated from its four neighbours, its
 * power and the ambient temperature; an edge cell reads itself for the
 * missing neighbour (Rodinia writes the edge and corner cases out; reading
 * the clamped index is the same formula).  The serial form walks the grid
 * row by row; the OpenMP form shares the rows among threads, as Rodinia's
 * parallel loop over blocks of the grid does, with the inner loop a SIMD
 * loop.  Two buffers swap between steps.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"

static inline float hs_cell(const float *t, const float *p, int64_t rows, int64_t cols, int64_t r, int64_t c,
                            const float *k)
{
    int64_t rn = r > 0 ? r - 1 : r, rs = r < rows - 1 ? r + 1 : r;
    int64_t cw = c > 0 ? c - 1 : c, ce = c < cols - 1 ? c + 1 : c;
    float tc = t[r * cols + c];
    float d = k[0] * (p[r * cols + c] + (t[rs * cols + c] + t[rn * cols + c] - 2.0f * tc) * k[2] +
                      (t[r * cols + ce] + t[r * cols + cw] - 2.0f * tc) * k[1] + (k[4] - tc) * k[3]);
    return tc + d;
}

/* The buffer the first step writes, so that the last step writes out. */
static float *hs_first(int iters, float *work, float *out) { return iters % 2 ? out : work; }

void BL(rd_hotspot_serial) RD_HOTSPOT_ARGS
{
    const float *src = temp;
    float *dst = hs_first(iters, work, out);
    if (iters == 0) {
        for (int64_t i = 0; i < rows * cols; i++) out[i] = temp[i];
        return;
    }
    for (int it = 0; it < iters; it++) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = hs_cell(src, power, rows, cols, r, c, k);
        src = dst;
        dst = dst == out ? work : out;
    }
}

void BL(rd_hotspot_omp) RD_HOTSPOT_ARGS
{
    const float *src = temp;
    float *dst = hs_first(iters, work, out);
    if (iters == 0) {
        for (int64_t i = 0; i < rows * cols; i++) out[i] = temp[i];
        return;
    }
    for (int it = 0; it < iters; it++) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t r = 0; r < rows; r++) {
#ifdef _OPENMP
#pragma omp simd
#endif
            for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = hs_cell(src, power, rows, cols, r, c, k);
        }
        src = dst;
        dst = dst == out ? work : out;
    }
}
