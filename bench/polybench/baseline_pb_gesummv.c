/*
 * PolyBench gesummv baselines: y := alpha A x + beta B x.  The serial one
 * is the suite's loop (both dot products of row i in one sweep over j);
 * the OpenMP one runs the rows i in parallel.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"

void BL(pb_gesummv_serial)(int64_t n, double alpha, double beta, const double *A, const double *B,
                           const double *x, double *tmp, double *y)
{
    for (int64_t i = 0; i < n; i++) {
        tmp[i] = 0.0;
        y[i] = 0.0;
        for (int64_t j = 0; j < n; j++) {
            tmp[i] = A[i * n + j] * x[j] + tmp[i];
            y[i] = B[i * n + j] * x[j] + y[i];
        }
        y[i] = alpha * tmp[i] + beta * y[i];
    }
}

void BL(pb_gesummv_omp)(int64_t n, double alpha, double beta, const double *A, const double *B,
                        const double *x, double *tmp, double *y)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++) {
        double t = 0.0, u = 0.0;
        for (int64_t j = 0; j < n; j++) {
            t = A[i * n + j] * x[j] + t;
            u = B[i * n + j] * x[j] + u;
        }
        tmp[i] = t;
        y[i] = alpha * t + beta * u;
    }
}
