/*
 * PolyBench 3mm baselines: G := (A B)(C D) as three products E := A B,
 * F := C D, G := E F.  The serial one is the suite's loop nest (i, j, then
 * the dot product over k, for each product in turn); the OpenMP one runs
 * the rows i of each product in parallel.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"

/* X := P Q with P r x q, Q q x c (the suite's i, j, k order). */
static void product(int64_t r, int64_t c, int64_t q, const double *P, const double *Q, double *X)
{
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            X[i * c + j] = 0.0;
            for (int64_t k = 0; k < q; k++) X[i * c + j] += P[i * q + k] * Q[k * c + j];
        }
}

static void product_omp(int64_t r, int64_t c, int64_t q, const double *P, const double *Q, double *X)
{
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < q; k++) acc += P[i * q + k] * Q[k * c + j];
            X[i * c + j] = acc;
        }
}

void BL(pb_3mm_serial)(int64_t ni, int64_t nj, int64_t nk, int64_t nl, int64_t nm, const double *A,
                       const double *B, const double *C, const double *D, double *E, double *F, double *G)
{
    product(ni, nj, nk, A, B, E);
    product(nj, nl, nm, C, D, F);
    product(ni, nl, nj, E, F, G);
}

void BL(pb_3mm_omp)(int64_t ni, int64_t nj, int64_t nk, int64_t nl, int64_t nm, const double *A,
                    const double *B, const double *C, const double *D, double *E, double *F, double *G)
{
    product_omp(ni, nj, nk, A, B, E);
    product_omp(nj, nl, nm, C, D, F);
    product_omp(ni, nl, nj, E, F, G);
}
