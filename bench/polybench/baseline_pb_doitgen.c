/*
 * PolyBench doitgen baselines: each row A[r][q][.] multiplied by C4.  The
 * serial one is the suite's loop nest (r, q; the row's products into
 * sum, then copied back over the row, in place); the OpenMP one runs the
 * r in parallel and writes each product straight into the result, which
 * is apart from the input, so no scratch row is needed.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

void BL(pb_doitgen_serial)(int64_t nr, int64_t nq, int64_t np, const double *A0, const double *C4, double *sum,
                           double *A)
{
    if (nr > 0 && nq > 0 && np > 0) memcpy(A, A0, sizeof *A * (size_t)(nr * nq * np));
    for (int64_t r = 0; r < nr; r++)
        for (int64_t q = 0; q < nq; q++) {
            double *row = A + (r * nq + q) * np;
            for (int64_t p = 0; p < np; p++) {
                sum[p] = 0.0;
                for (int64_t s = 0; s < np; s++) sum[p] += row[s] * C4[s * np + p];
            }
            for (int64_t p = 0; p < np; p++) row[p] = sum[p];
        }
}

void BL(pb_doitgen_omp)(int64_t nr, int64_t nq, int64_t np, const double *A0, const double *C4, double *sum,
                        double *A)
{
    (void)sum;
    PB_OMP(omp parallel for schedule(static))
    for (int64_t r = 0; r < nr; r++)
        for (int64_t q = 0; q < nq; q++) {
            const double *in = A0 + (r * nq + q) * np;
            double *out = A + (r * nq + q) * np;
            for (int64_t p = 0; p < np; p++) {
                double acc = 0.0;
                for (int64_t s = 0; s < np; s++) acc += in[s] * C4[s * np + p];
                out[p] = acc;
            }
        }
}
