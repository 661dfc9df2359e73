/*
 * PolyBench covariance baselines: the column means, the centred data, and
 * the upper triangle of its m x m covariance matrix, mirrored.  The
 * serial one is the suite's loops; the OpenMP one runs the columns j of
 * the means, the rows i of the centring and the rows i of the covariance
 * (dynamically scheduled: row i has m - i elements) in parallel.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

void BL(pb_covariance_serial)(int64_t n, int64_t m, const double *data0, double *data, double *mean, double *cov)
{
    double float_n = (double)n;
    if (n > 0 && m > 0) memcpy(data, data0, sizeof *data * (size_t)(n * m));
    for (int64_t j = 0; j < m; j++) {
        mean[j] = 0.0;
        for (int64_t i = 0; i < n; i++) mean[j] += data[i * m + j];
        mean[j] /= float_n;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) data[i * m + j] -= mean[j];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i; j < m; j++) {
            cov[i * m + j] = 0.0;
            for (int64_t k = 0; k < n; k++) cov[i * m + j] += data[k * m + i] * data[k * m + j];
            cov[i * m + j] /= (float_n - 1.0);
            cov[j * m + i] = cov[i * m + j];
        }
}

void BL(pb_covariance_omp)(int64_t n, int64_t m, const double *data0, double *data, double *mean, double *cov)
{
    double float_n = (double)n;
    PB_OMP(omp parallel for schedule(static))
    for (int64_t j = 0; j < m; j++) {
        double acc = 0.0;
        for (int64_t i = 0; i < n; i++) acc += data0[i * m + j];
        mean[j] = acc / float_n;
    }
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) data[i * m + j] = data0[i * m + j] - mean[j];
    PB_OMP(omp parallel for schedule(dynamic, 8))
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i; j < m; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < n; k++) acc += data[k * m + i] * data[k * m + j];
            acc /= (float_n - 1.0);
            cov[i * m + j] = acc;
            cov[j * m + i] = acc;
        }
}
