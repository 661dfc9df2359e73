/*
 * PolyBench gemm baselines: C := alpha A B + beta C.  The serial one is
 * the suite's loop nest (i, then k, then j: each row of C scaled, then
 * rows of B added into it); the OpenMP one runs the rows i in parallel,
 * which is where a user adds the pragma (each row is independent).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

void BL(pb_gemm_serial)(int64_t ni, int64_t nj, int64_t nk, double alpha, double beta, const double *C0,
                        const double *A, const double *B, double *C)
{
    if (ni > 0 && nj > 0) memcpy(C, C0, sizeof *C * (size_t)(ni * nj));
    for (int64_t i = 0; i < ni; i++) {
        for (int64_t j = 0; j < nj; j++) C[i * nj + j] *= beta;
        for (int64_t k = 0; k < nk; k++)
            for (int64_t j = 0; j < nj; j++) C[i * nj + j] += alpha * A[i * nk + k] * B[k * nj + j];
    }
}

void BL(pb_gemm_omp)(int64_t ni, int64_t nj, int64_t nk, double alpha, double beta, const double *C0,
                     const double *A, const double *B, double *C)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < ni; i++) {
        for (int64_t j = 0; j < nj; j++) C[i * nj + j] = beta * C0[i * nj + j];
        for (int64_t k = 0; k < nk; k++)
            for (int64_t j = 0; j < nj; j++) C[i * nj + j] += alpha * A[i * nk + k] * B[k * nj + j];
    }
}
