/*
 * PolyBench correlation baselines: the column means and standard
 * deviations (a deviation of at most 0.1 taken as 1), the centred and
 * scaled data, and the upper triangle of its m x m product, mirrored,
 * with 1 on the diagonal.  The serial one is the suite's loops; the
 * OpenMP one runs the columns j of the statistics, the rows i of the
 * scaling and the rows i of the product (dynamically scheduled: row i has
 * m - i - 1 elements) in parallel.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <math.h>
#include <string.h>

void BL(pb_correlation_serial)(int64_t n, int64_t m, const double *data0, double *data, double *mean,
                               double *stddev, double *corr)
{
    const double eps = 0.1, float_n = (double)n;
    if (n > 0 && m > 0) memcpy(data, data0, sizeof *data * (size_t)(n * m));
    for (int64_t j = 0; j < m; j++) {
        mean[j] = 0.0;
        for (int64_t i = 0; i < n; i++) mean[j] += data[i * m + j];
        mean[j] /= float_n;
    }
    for (int64_t j = 0; j < m; j++) {
        stddev[j] = 0.0;
        for (int64_t i = 0; i < n; i++) stddev[j] += (data[i * m + j] - mean[j]) * (data[i * m + j] - mean[j]);
        stddev[j] /= float_n;
        stddev[j] = sqrt(stddev[j]);
        stddev[j] = stddev[j] <= eps ? 1.0 : stddev[j];
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            data[i * m + j] -= mean[j];
            data[i * m + j] /= sqrt(float_n) * stddev[j];
        }
    for (int64_t i = 0; i < m - 1; i++) {
        corr[i * m + i] = 1.0;
        for (int64_t j = i + 1; j < m; j++) {
            corr[i * m + j] = 0.0;
            for (int64_t k = 0; k < n; k++) corr[i * m + j] += data[k * m + i] * data[k * m + j];
            corr[j * m + i] = corr[i * m + j];
        }
    }
    if (m > 0) corr[(m - 1) * m + m - 1] = 1.0;
}

void BL(pb_correlation_omp)(int64_t n, int64_t m, const double *data0, double *data, double *mean,
                            double *stddev, double *corr)
{
    const double eps = 0.1, float_n = (double)n;
    PB_OMP(omp parallel for schedule(static))
    for (int64_t j = 0; j < m; j++) {
        double acc = 0.0;
        for (int64_t i = 0; i < n; i++) acc += data0[i * m + j];
        double mu = acc / float_n, var = 0.0;
        for (int64_t i = 0; i < n; i++) var += (data0[i * m + j] - mu) * (data0[i * m + j] - mu);
        double sd = sqrt(var / float_n);
        mean[j] = mu;
        stddev[j] = sd <= eps ? 1.0 : sd;
    }
    PB_OMP(omp parallel for schedule(static))
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) data[i * m + j] = (data0[i * m + j] - mean[j]) / (sqrt(float_n) * stddev[j]);
    PB_OMP(omp parallel for schedule(dynamic, 8))
    for (int64_t i = 0; i < m; i++) {
        corr[i * m + i] = 1.0;
        for (int64_t j = i + 1; j < m; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < n; k++) acc += data[k * m + i] * data[k * m + j];
            corr[i * m + j] = acc;
            corr[j * m + i] = acc;
        }
    }
}
