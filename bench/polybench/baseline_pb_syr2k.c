/*
 * PolyBench syr2k baselines: C := alpha (A B^T + B A^T) + beta C on the
 * lower triangle.  The serial one is the suite's loop nest (i, then k,
 * then j <= i); the OpenMP one runs the rows i in parallel, dynamically
 * scheduled because row i has i + 1 elements.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

void BL(pb_syr2k_serial)(int64_t n, int64_t m, double alpha, double beta, const double *C0, const double *A,
                         const double *B, double *C)
{
    if (n > 0) memcpy(C, C0, sizeof *C * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j <= i; j++) C[i * n + j] *= beta;
        for (int64_t k = 0; k < m; k++)
            for (int64_t j = 0; j <= i; j++)
                C[i * n + j] += A[j * m + k] * alpha * B[i * m + k] + B[j * m + k] * alpha * A[i * m + k];
    }
}

void BL(pb_syr2k_omp)(int64_t n, int64_t m, double alpha, double beta, const double *C0, const double *A,
                      const double *B, double *C)
{
    PB_OMP(omp parallel for schedule(dynamic, 8))
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++) C[i * n + j] = j <= i ? beta * C0[i * n + j] : C0[i * n + j];
        for (int64_t k = 0; k < m; k++)
            for (int64_t j = 0; j <= i; j++)
                C[i * n + j] += A[j * m + k] * alpha * B[i * m + k] + B[j * m + k] * alpha * A[i * m + k];
    }
}
