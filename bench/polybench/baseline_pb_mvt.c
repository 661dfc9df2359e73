/*
 * PolyBench mvt baselines: x1 := x1 + A y1 and x2 := x2 + A^T y2.  The
 * serial one is the suite's two loop nests (i outer, j inner, each
 * accumulating into x[i]); the OpenMP one runs the rows i of each in
 * parallel.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"

void BL(pb_mvt_serial)(int64_t n, const double *A, const double *x1_0, const double *x2_0, const double *y1,
                       const double *y2, double *x1, double *x2)
{
    for (int64_t i = 0; i < n; i++) {
        x1[i] = x1_0[i];
        x2[i] = x2_0[i];
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) x1[i] = x1[i] + A[i * n + j] * y1[j];
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) x2[i] = x2[i] + A[j * n + i] * y2[j];
}

void BL(pb_mvt_omp)(int64_t n, const double *A, const double *x1_0, const double *x2_0, const double *y1,
                    const double *y2, double *x1, double *x2)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++) {
        double acc = x1_0[i];
        for (int64_t j = 0; j < n; j++) acc += A[i * n + j] * y1[j];
        x1[i] = acc;
    }
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++) {
        double acc = x2_0[i];
        for (int64_t j = 0; j < n; j++) acc += A[j * n + i] * y2[j];
        x2[i] = acc;
    }
}
