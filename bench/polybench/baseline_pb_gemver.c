/*
 * PolyBench gemver baselines: A := A + u1 v1^T + u2 v2^T, x := beta A^T y
 * + z, w := alpha A x.  The serial one is the suite's four loop nests in
 * order; the OpenMP one runs each nest's outer loop i in parallel (each
 * writes its own row of A or element of x, w).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"

void BL(pb_gemver_serial)(int64_t n, double alpha, double beta, const double *A0, const double *u1,
                          const double *v1, const double *u2, const double *v2, const double *y,
                          const double *z, double *A, double *x, double *w)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) A[i * n + j] = A0[i * n + j] + u1[i] * v1[j] + u2[i] * v2[j];
    for (int64_t i = 0; i < n; i++) {
        x[i] = 0.0;
        w[i] = 0.0;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) x[i] = x[i] + beta * A[j * n + i] * y[j];
    for (int64_t i = 0; i < n; i++) x[i] = x[i] + z[i];
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) w[i] = w[i] + alpha * A[i * n + j] * x[j];
}

void BL(pb_gemver_omp)(int64_t n, double alpha, double beta, const double *A0, const double *u1,
                       const double *v1, const double *u2, const double *v2, const double *y, const double *z,
                       double *A, double *x, double *w)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) A[i * n + j] = A0[i * n + j] + u1[i] * v1[j] + u2[i] * v2[j];
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++) {
        double acc = 0.0;
        for (int64_t j = 0; j < n; j++) acc += beta * A[j * n + i] * y[j];
        x[i] = acc + z[i];
    }
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++) {
        double acc = 0.0;
        for (int64_t j = 0; j < n; j++) acc += alpha * A[i * n + j] * x[j];
        w[i] = acc;
    }
}
