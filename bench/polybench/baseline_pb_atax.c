/*
 * PolyBench atax baselines: y := A^T (A x), A m x n.  The serial one is
 * the suite's loop (for each row i: tmp[i] := row . x, then y += tmp[i]
 * row); the OpenMP one splits it into the two products a user makes
 * parallel: tmp over the rows i, then y over the columns j (y[j] sums
 * A[i][j] tmp[i] over i, the serial loop's order for each j).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"

void BL(pb_atax_serial)(int64_t m, int64_t n, const double *A, const double *x, double *tmp, double *y)
{
    for (int64_t j = 0; j < n; j++) y[j] = 0;
    for (int64_t i = 0; i < m; i++) {
        tmp[i] = 0.0;
        for (int64_t j = 0; j < n; j++) tmp[i] = tmp[i] + A[i * n + j] * x[j];
        for (int64_t j = 0; j < n; j++) y[j] = y[j] + A[i * n + j] * tmp[i];
    }
}

void BL(pb_atax_omp)(int64_t m, int64_t n, const double *A, const double *x, double *tmp, double *y)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < m; i++) {
        double acc = 0.0;
        for (int64_t j = 0; j < n; j++) acc += A[i * n + j] * x[j];
        tmp[i] = acc;
    }
    PB_OMP(omp parallel for schedule(static))
    for (int64_t j = 0; j < n; j++) {
        double acc = 0.0;
        for (int64_t i = 0; i < m; i++) acc += A[i * n + j] * tmp[i];
        y[j] = acc;
    }
}
