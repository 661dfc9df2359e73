/*
 * PolyBench jacobi-1d baselines: each step averages A's three
 * neighbours into B's interior, then B's into A's.  The serial one is the
 * suite's loops; the OpenMP one runs each sweep's i in parallel inside
 * one parallel region (the sweeps stay in order: the loop's implicit
 * barrier).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

void BL(pb_jacobi1d_serial)(int64_t tsteps, int64_t n, const double *A0, const double *B0, double *A, double *B)
{
    if (n > 0) {
        memcpy(A, A0, sizeof *A * (size_t)n);
        memcpy(B, B0, sizeof *B * (size_t)n);
    }
    for (int64_t t = 0; t < tsteps; t++) {
        for (int64_t i = 1; i < n - 1; i++) B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
        for (int64_t i = 1; i < n - 1; i++) A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
    }
}

void BL(pb_jacobi1d_omp)(int64_t tsteps, int64_t n, const double *A0, const double *B0, double *A, double *B)
{
    if (n > 0) {
        memcpy(A, A0, sizeof *A * (size_t)n);
        memcpy(B, B0, sizeof *B * (size_t)n);
    }
    PB_OMP(omp parallel)
    for (int64_t t = 0; t < tsteps; t++) {
        PB_OMP(omp for schedule(static))
        for (int64_t i = 1; i < n - 1; i++) B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
        PB_OMP(omp for schedule(static))
        for (int64_t i = 1; i < n - 1; i++) A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
    }
}
