/*
 * PolyBench bicg baselines: s := A^T r and q := A p, A n x m.  The serial
 * one is the suite's single sweep over the rows i (adding r[i] A[i][j]
 * into s[j] and A[i][j] p[j] into q[i]); the OpenMP one computes q over
 * the rows and s over the columns, each in parallel.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"

void BL(pb_bicg_serial)(int64_t n, int64_t m, const double *A, const double *r, const double *p, double *s,
                        double *q)
{
    for (int64_t j = 0; j < m; j++) s[j] = 0;
    for (int64_t i = 0; i < n; i++) {
        q[i] = 0.0;
        for (int64_t j = 0; j < m; j++) {
            s[j] = s[j] + r[i] * A[i * m + j];
            q[i] = q[i] + A[i * m + j] * p[j];
        }
    }
}

void BL(pb_bicg_omp)(int64_t n, int64_t m, const double *A, const double *r, const double *p, double *s,
                     double *q)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++) {
        double acc = 0.0;
        for (int64_t j = 0; j < m; j++) acc += A[i * m + j] * p[j];
        q[i] = acc;
    }
    PB_OMP(omp parallel for schedule(static))
    for (int64_t j = 0; j < m; j++) {
        double acc = 0.0;
        for (int64_t i = 0; i < n; i++) acc += r[i] * A[i * m + j];
        s[j] = acc;
    }
}
