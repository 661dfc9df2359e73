/*
 * kmeans (Rodinia 3.1) baselines: Lloyd's algorithm as Rodinia's: the
 * first k points are the initial centres; each iteration finds every
 * point's nearest centre (squared distance, the first on ties), counts the
 * changed memberships and sums the points of each cluster, then moves each
 * non-empty cluster's centre to its mean.  The OpenMP form shares the
 * points among the threads, each summing into its own copy of the sums
 * (Rodinia's partial arrays; here OpenMP's array reduction).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"
#include <float.h>

static inline int32_t km_nearest(const float *p, int64_t nf, const float *centres, int64_t k)
{
    float best = FLT_MAX;
    int32_t idx = 0;
    for (int64_t c = 0; c < k; c++) {
        float d = 0;
        for (int64_t f = 0; f < nf; f++) d += (p[f] - centres[c * nf + f]) * (p[f] - centres[c * nf + f]);
        if (d < best) best = d, idx = (int32_t)c;
    }
    return idx;
}

static void km_init(int64_t n, int64_t nf, int64_t k, const float *pts, float *centres, int32_t *membership)
{
    for (int64_t i = 0; i < k * nf; i++) centres[i] = i < n * nf ? pts[i] : 0;
    for (int64_t i = 0; i < n; i++) membership[i] = -1;
}

static void km_move(int64_t nf, int64_t k, float *centres, float *sums, int32_t *counts)
{
    for (int64_t c = 0; c < k; c++)
        for (int64_t f = 0; f < nf; f++)
            if (counts[c] > 0) centres[c * nf + f] = sums[c * nf + f] / (float)counts[c];
}

void BL(rd_kmeans_serial) RD_KMEANS_ARGS
{
    km_init(n, nf, k, pts, centres, membership);
    if (n < k) return;
    float delta;
    int loop = 0;
    do {
        delta = 0;
        for (int64_t i = 0; i < k * nf; i++) sums[i] = 0;
        for (int64_t c = 0; c < k; c++) counts[c] = 0;
        for (int64_t i = 0; i < n; i++) {
            int32_t c = km_nearest(pts + i * nf, nf, centres, k);
            if (membership[i] != c) delta += 1;
            membership[i] = c;
            counts[c]++;
            for (int64_t f = 0; f < nf; f++) sums[c * nf + f] += pts[i * nf + f];
        }
        km_move(nf, k, centres, sums, counts);
    } while (delta > threshold && loop++ < 500);
}

void BL(rd_kmeans_omp) RD_KMEANS_ARGS
{
    km_init(n, nf, k, pts, centres, membership);
    if (n < k) return;
    float delta;
    int loop = 0;
    do {
        delta = 0;
        for (int64_t i = 0; i < k * nf; i++) sums[i] = 0;
        for (int64_t c = 0; c < k; c++) counts[c] = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : delta, sums[:k * nf], counts[:k])
#endif
        for (int64_t i = 0; i < n; i++) {
            int32_t c = km_nearest(pts + i * nf, nf, centres, k);
            if (membership[i] != c) delta += 1;
            membership[i] = c;
            counts[c]++;
            for (int64_t f = 0; f < nf; f++) sums[c * nf + f] += pts[i * nf + f];
        }
        km_move(nf, k, centres, sums, counts);
    } while (delta > threshold && loop++ < 500);
}
