/*
 * PolyBench floyd-warshall baselines: for each k in order, every path
 * i -> j is shortened through k where that is shorter.  The serial one is
 * the suite's loops (in place); the OpenMP one runs the rows i of each k
 * in parallel inside one parallel region (row k and column k do not
 * change during step k, since path[k][k] >= 0, so the rows are
 * independent; the k stay in order: the loop's implicit barrier).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

void BL(pb_floyd_serial)(int64_t n, const int32_t *path0, int32_t *path)
{
    if (n > 0) memcpy(path, path0, sizeof *path * (size_t)(n * n));
    for (int64_t k = 0; k < n; k++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                path[i * n + j] = path[i * n + j] < path[i * n + k] + path[k * n + j] ? path[i * n + j]
                                                                                     : path[i * n + k] + path[k * n + j];
}

void BL(pb_floyd_omp)(int64_t n, const int32_t *path0, int32_t *path)
{
    if (n > 0) memcpy(path, path0, sizeof *path * (size_t)(n * n));
    PB_OMP(omp parallel)
    for (int64_t k = 0; k < n; k++) {
        PB_OMP(omp for schedule(static))
        for (int64_t i = 0; i < n; i++) {
            int32_t ik = path[i * n + k];
            for (int64_t j = 0; j < n; j++) {
                int32_t through = ik + path[k * n + j];
                path[i * n + j] = path[i * n + j] < through ? path[i * n + j] : through;
            }
        }
    }
}
