/*
 * srad v2 (Rodinia 3.1) baselines: per step, the mean and variance of the
 * region of interest (a serial sum, as in Rodinia), then one pass that
 * stores the four differences to the neighbours (clamped at the edges) and
 * the saturated diffusion coefficient of every pixel, then one pass that
 * updates the image from its own and its south and east neighbours'
 * coefficients.  The OpenMP form shares the rows of both passes among the
 * threads, as Rodinia's does.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"

static float sr_q0sqr(int64_t cols, int64_t roi, const float *j)
{
    float sum = 0, sum2 = 0;
    for (int64_t r = 0; r < roi; r++)
        for (int64_t c = 0; c < roi; c++) {
            float t = j[r * cols + c];
            sum += t;
            sum2 += t * t;
        }
    float size = (float)(roi * roi), mean = sum / size, var = sum2 / size - mean * mean;
    return var / (mean * mean);
}

static inline void sr_coef(int64_t rows, int64_t cols, int64_t r, const float *j, float q0sqr, float *dn, float *ds,
                           float *dw, float *de, float *cf)
{
    int64_t rn = r > 0 ? r - 1 : 0, rs = r < rows - 1 ? r + 1 : rows - 1;
    for (int64_t c = 0; c < cols; c++) {
        int64_t k = r * cols + c, cw = c > 0 ? c - 1 : 0, ce = c < cols - 1 ? c + 1 : cols - 1;
        float jc = j[k];
        dn[k] = j[rn * cols + c] - jc;
        ds[k] = j[rs * cols + c] - jc;
        dw[k] = j[r * cols + cw] - jc;
        de[k] = j[r * cols + ce] - jc;
        float g2 = (dn[k] * dn[k] + ds[k] * ds[k] + dw[k] * dw[k] + de[k] * de[k]) / (jc * jc);
        float l = (dn[k] + ds[k] + dw[k] + de[k]) / jc;
        float num = 0.5f * g2 - 0.0625f * (l * l), den = 1 + 0.25f * l;
        float qsqr = num / (den * den);
        den = (qsqr - q0sqr) / (q0sqr * (1 + q0sqr));
        float v = 1.0f / (1.0f + den);
        cf[k] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
}

static inline void sr_update(int64_t rows, int64_t cols, int64_t r, float *j, float lambda, const float *dn,
                             const float *ds, const float *dw, const float *de, const float *cf)
{
    int64_t rs = r < rows - 1 ? r + 1 : rows - 1;
    for (int64_t c = 0; c < cols; c++) {
        int64_t k = r * cols + c, ce = c < cols - 1 ? c + 1 : cols - 1;
        float d = cf[k] * dn[k] + cf[rs * cols + c] * ds[k] + cf[k] * dw[k] + cf[r * cols + ce] * de[k];
        j[k] = j[k] + 0.25f * lambda * d;
    }
}

void BL(rd_srad_serial) RD_SRAD_ARGS
{
    int64_t n = rows * cols;
    float *dn = work, *ds = work + n, *dw = work + 2 * n, *de = work + 3 * n, *cf = work + 4 * n;
    for (int it = 0; it < iters; it++) {
        float q0sqr = sr_q0sqr(cols, roi, j);
        for (int64_t r = 0; r < rows; r++) sr_coef(rows, cols, r, j, q0sqr, dn, ds, dw, de, cf);
        for (int64_t r = 0; r < rows; r++) sr_update(rows, cols, r, j, lambda, dn, ds, dw, de, cf);
    }
}

void BL(rd_srad_omp) RD_SRAD_ARGS
{
    int64_t n = rows * cols;
    float *dn = work, *ds = work + n, *dw = work + 2 * n, *de = work + 3 * n, *cf = work + 4 * n;
    for (int it = 0; it < iters; it++) {
        float q0sqr = sr_q0sqr(cols, roi, j);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t r = 0; r < rows; r++) sr_coef(rows, cols, r, j, q0sqr, dn, ds, dw, de, cf);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t r = 0; r < rows; r++) sr_update(rows, cols, r, j, lambda, dn, ds, dw, de, cf);
    }
}
