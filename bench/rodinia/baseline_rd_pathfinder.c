/*
 * pathfinder (Rodinia 3.1) baselines: dynamic programming down the rows of
 * the wall; each row's cost is the wall's value plus the smallest of the
 * three costs above it (two at an edge).  The OpenMP form shares each row's
 * columns among the threads, as Rodinia's does; the serial form is the same
 * loop without it.  Two row buffers swap.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"
#include <string.h>

static inline int32_t pf_min(int32_t a, int32_t b) { return a <= b ? a : b; }

void BL(rd_pathfinder_serial) RD_PATHFINDER_ARGS
{
    /* The last step writes out: start in out when the steps are even. */
    int32_t *src = (rows - 1) % 2 ? work : out, *dst = src == out ? work : out;
    if (rows <= 0) return;
    memcpy(src, wall, sizeof(int32_t) * (size_t)cols);
    for (int64_t t = 0; t < rows - 1; t++) {
        for (int64_t c = 0; c < cols; c++) {
            int32_t m = src[c];
            if (c > 0) m = pf_min(m, src[c - 1]);
            if (c < cols - 1) m = pf_min(m, src[c + 1]);
            dst[c] = wall[(t + 1) * cols + c] + m;
        }
        int32_t *x = src; src = dst; dst = x;
    }
}

void BL(rd_pathfinder_omp) RD_PATHFINDER_ARGS
{
    int32_t *src = (rows - 1) % 2 ? work : out, *dst = src == out ? work : out;
    if (rows <= 0) return;
    memcpy(src, wall, sizeof(int32_t) * (size_t)cols);
    for (int64_t t = 0; t < rows - 1; t++) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t c = 0; c < cols; c++) {
            int32_t m = src[c];
            if (c > 0) m = pf_min(m, src[c - 1]);
            if (c < cols - 1) m = pf_min(m, src[c + 1]);
            dst[c] = wall[(t + 1) * cols + c] + m;
        }
        int32_t *x = src; src = dst; dst = x;
    }
}
