/*
 * PolyBench jacobi-2d baselines: each step averages A's five-point
 * neighbourhood into B's interior, then B's into A's.  The serial one is
 * the suite's loops; the OpenMP one runs each sweep's rows i in parallel
 * inside one parallel region (the sweeps stay in order: the loop's
 * implicit barrier).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

void BL(pb_jacobi2d_serial)(int64_t tsteps, int64_t n, const double *A0, const double *B0, double *A, double *B)
{
    if (n > 0) {
        memcpy(A, A0, sizeof *A * (size_t)(n * n));
        memcpy(B, B0, sizeof *B * (size_t)(n * n));
    }
    for (int64_t t = 0; t < tsteps; t++) {
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                B[i * n + j] = 0.2 * (A[i * n + j] + A[i * n + j - 1] + A[i * n + 1 + j] + A[(1 + i) * n + j] +
                                      A[(i - 1) * n + j]);
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                A[i * n + j] = 0.2 * (B[i * n + j] + B[i * n + j - 1] + B[i * n + 1 + j] + B[(1 + i) * n + j] +
                                      B[(i - 1) * n + j]);
    }
}

void BL(pb_jacobi2d_omp)(int64_t tsteps, int64_t n, const double *A0, const double *B0, double *A, double *B)
{
    if (n > 0) {
        memcpy(A, A0, sizeof *A * (size_t)(n * n));
        memcpy(B, B0, sizeof *B * (size_t)(n * n));
    }
    PB_OMP(omp parallel)
    for (int64_t t = 0; t < tsteps; t++) {
        PB_OMP(omp for schedule(static))
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                B[i * n + j] = 0.2 * (A[i * n + j] + A[i * n + j - 1] + A[i * n + 1 + j] + A[(1 + i) * n + j] +
                                      A[(i - 1) * n + j]);
        PB_OMP(omp for schedule(static))
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                A[i * n + j] = 0.2 * (B[i * n + j] + B[i * n + j - 1] + B[i * n + 1 + j] + B[(1 + i) * n + j] +
                                      B[(i - 1) * n + j]);
    }
}
