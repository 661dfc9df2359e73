/*
 * PolyBench heat-3d baselines: each step applies the 7-point heat
 * equation to A's interior into B, then to B's into A.  The serial one
 * is the suite's loops; the OpenMP one runs each sweep's planes i in
 * parallel inside one parallel region (the sweeps stay in order: the
 * loop's implicit barrier).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

/* one sweep: the interior of out from in */
static inline void sweep(int64_t n, int64_t i, const double *in, double *out)
{
    int64_t n2 = n * n;
    for (int64_t j = 1; j < n - 1; j++)
        for (int64_t k = 1; k < n - 1; k++) {
            int64_t c = i * n2 + j * n + k;
            out[c] = 0.125 * (in[c + n2] - 2.0 * in[c] + in[c - n2]) + 0.125 * (in[c + n] - 2.0 * in[c] + in[c - n]) +
                     0.125 * (in[c + 1] - 2.0 * in[c] + in[c - 1]) + in[c];
        }
}

void BL(pb_heat3d_serial)(int64_t tsteps, int64_t n, const double *A0, double *A, double *B)
{
    if (n > 0) {
        memcpy(A, A0, sizeof *A * (size_t)(n * n * n));
        memcpy(B, A0, sizeof *B * (size_t)(n * n * n));
    }
    for (int64_t t = 1; t <= tsteps; t++) {
        for (int64_t i = 1; i < n - 1; i++) sweep(n, i, A, B);
        for (int64_t i = 1; i < n - 1; i++) sweep(n, i, B, A);
    }
}

void BL(pb_heat3d_omp)(int64_t tsteps, int64_t n, const double *A0, double *A, double *B)
{
    if (n > 0) {
        memcpy(A, A0, sizeof *A * (size_t)(n * n * n));
        memcpy(B, A0, sizeof *B * (size_t)(n * n * n));
    }
    PB_OMP(omp parallel)
    for (int64_t t = 1; t <= tsteps; t++) {
        PB_OMP(omp for schedule(static))
        for (int64_t i = 1; i < n - 1; i++) sweep(n, i, A, B);
        PB_OMP(omp for schedule(static))
        for (int64_t i = 1; i < n - 1; i++) sweep(n, i, B, A);
    }
}
