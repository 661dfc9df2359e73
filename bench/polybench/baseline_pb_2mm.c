/*
 * PolyBench 2mm baselines: D := alpha A B C + beta D, as two products
 * (tmp := alpha A B, then D := beta D + tmp C).  The serial one is the
 * suite's loop nest (i, j, then the dot product over k); the OpenMP one
 * runs the rows i of each product in parallel.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"

void BL(pb_2mm_serial)(int64_t ni, int64_t nj, int64_t nk, int64_t nl, double alpha, double beta,
                       const double *A, const double *B, const double *C, const double *D0, double *tmp,
                       double *D)
{
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) {
            tmp[i * nj + j] = 0.0;
            for (int64_t k = 0; k < nk; k++) tmp[i * nj + j] += alpha * A[i * nk + k] * B[k * nj + j];
        }
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nl; j++) {
            D[i * nl + j] = D0[i * nl + j] * beta;
            for (int64_t k = 0; k < nj; k++) D[i * nl + j] += tmp[i * nj + k] * C[k * nl + j];
        }
}

void BL(pb_2mm_omp)(int64_t ni, int64_t nj, int64_t nk, int64_t nl, double alpha, double beta,
                    const double *A, const double *B, const double *C, const double *D0, double *tmp,
                    double *D)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < nk; k++) acc += alpha * A[i * nk + k] * B[k * nj + j];
            tmp[i * nj + j] = acc;
        }
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nl; j++) {
            double acc = D0[i * nl + j] * beta;
            for (int64_t k = 0; k < nj; k++) acc += tmp[i * nj + k] * C[k * nl + j];
            D[i * nl + j] = acc;
        }
}
