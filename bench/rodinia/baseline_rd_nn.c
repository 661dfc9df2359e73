/*
 * nn (Rodinia 3.1) baselines: every record's Euclidean distance to the
 * target, then one pass over the records that keeps the k nearest: a
 * record takes the place of the farthest kept one if it is nearer (the
 * first farthest; a tie keeps the earlier record), as Rodinia's does.  The
 * OpenMP form computes the distances in parallel (Rodinia does so window
 * by window, 10 records at a time, as it reads them; we have them all in
 * memory) and keeps the selection serial, as Rodinia does.  The k kept
 * are then sorted by (distance, record).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"
#include <math.h>

static void nn_select(int64_t n, const float *z, int k, float *dist, int32_t *idx)
{
    for (int j = 0; j < k; j++) dist[j] = 10000.0f, idx[j] = -1;
    for (int64_t i = 0; i < n; i++) {
        int far = 0;
        for (int j = 1; j < k; j++)
            if (dist[j] > dist[far]) far = j;
        if (k > 0 && z[i] < dist[far]) dist[far] = z[i], idx[far] = (int32_t)i;
    }
    /* insertion sort by (distance, record); empty places (-1) last */
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0; b--) {
            int later = idx[b - 1] < 0 || (idx[b] >= 0 && (dist[b] < dist[b - 1] ||
                                                            (dist[b] == dist[b - 1] && idx[b] < idx[b - 1])));
            if (!later) break;
            float td = dist[b]; dist[b] = dist[b - 1]; dist[b - 1] = td;
            int32_t ti = idx[b]; idx[b] = idx[b - 1]; idx[b - 1] = ti;
        }
}

void BL(rd_nn_serial) RD_NN_ARGS
{
    for (int64_t i = 0; i < n; i++)
        z[i] = sqrtf((lat[i] - tlat) * (lat[i] - tlat) + (lng[i] - tlng) * (lng[i] - tlng));
    nn_select(n, z, k, dist, idx);
}

void BL(rd_nn_omp) RD_NN_ARGS
{
#ifdef _OPENMP
#pragma omp parallel for simd schedule(static)
#endif
    for (int64_t i = 0; i < n; i++)
        z[i] = sqrtf((lat[i] - tlat) * (lat[i] - tlat) + (lng[i] - tlng) * (lng[i] - tlng));
    nn_select(n, z, k, dist, idx);
}
