/*
 * A histogram as a performance engineer writes it for a multicore CPU:
 * each thread counts its static block of the input into bins of its own
 * (no sharing, no atomics: the bins stay in its L1 cache), and the
 * threads' bins are added up at the end.  Returns 0, or -1 when memory
 * for the bins is lacking.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_histogram.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int BL(bl_histogram)(const int32_t *x, int64_t n, int32_t *counts, int32_t nbins)
{
#ifdef _OPENMP
    int nt = omp_get_max_threads();
#else
    int nt = 1;
#endif
    int32_t *bins = calloc((size_t)nt * (size_t)nbins, sizeof *bins);
    if (!bins) return -1;
#pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num();
#else
        int t = 0;
#endif
        int32_t *b = bins + (size_t)t * (size_t)nbins;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            uint32_t v = (uint32_t)x[i];
            if (v < (uint32_t)nbins) b[v]++;
        }
    }
    memset(counts, 0, sizeof *counts * (size_t)nbins);
    for (int t = 0; t < nt; t++)
        for (int32_t k = 0; k < nbins; k++) counts[k] += bins[(size_t)t * (size_t)nbins + k];
    free(bins);
    return 0;
}
