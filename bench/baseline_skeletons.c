/*
 * The single-skeleton micro-benchmarks as a performance engineer
 * writes them for a multicore CPU: one parallel SIMD loop for map and fold,
 * and the classic two-pass blocked scan.  Each measures one of axle's
 * skeletons against the best plain OpenMP, with nothing to fuse.
 *
 * map: vectorising expf and logf needs libmvec's vector versions, which
 * <math.h> declares SIMD-callable only under -ffast-math
 * (bits/math-vector.h); the variant without it declares them itself, as
 * baseline_blackscholes.c does (libmvec's f32 versions are accurate to 4
 * ulp, the bound examples/skeletons.c allows for).
 *
 * fold: OpenMP's reduction clause licenses reassociation without
 * -ffast-math (a partial sum per thread and per vector lane), the licence
 * axle's fold has too; the sum is kept in f32 like axle's.
 *
 * scan: OpenMP 5's reduction(inscan, +) on a `parallel for simd` is the
 * short way to write it, but with GCC 12 it took 4.5 times as long as
 * this (2*10^7 elements, 2 threads).  The blocked scan reads x twice and
 * writes y once:
 *   1. each thread sums its static block of x (a SIMD reduction);
 *   2. one thread turns the per-thread totals into each block's offset
 *      (an exclusive scan over nthreads values);
 *   3. each thread scans its block, adding its offset.
 * Step 3 scans from 0 and adds the offset to each element rather than
 * starting the running sum at the offset: the running sum then stays a
 * block's total, not the whole prefix, so its rounding error does not grow
 * with the offset (an f32 accumulator above 2^24 has an ulp of 2 or more,
 * larger than these inputs' fractional parts), and the add is free in a
 * loop that is bound by memory.
 *
 * segmented scan: segments are independent, so each thread takes a
 * static block of them; it needs each block's first element, the sum of
 * the lengths before it, which a first pass over the lengths (4 bytes a
 * segment against ~200 of data) gives per thread.  Within a segment the
 * running sum is sequential, as a user writes it.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_skeletons.h"
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

AX_BL_SIMD_EXPLOG

void BL(bl_map_explog)(const float *restrict x, float *restrict y, int64_t n)
{
#ifdef _OPENMP
#pragma omp parallel for simd schedule(static)
#endif
    for (int64_t i = 0; i < n; i++) y[i] = expf(x[i] * 0.001f) + logf(x[i]);
}

float BL(bl_fold_sum)(const float *restrict x, int64_t n)
{
    float s = 0;
#ifdef _OPENMP
#pragma omp parallel for simd reduction(+ : s) schedule(static)
#endif
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s;
}

/* Per-thread totals live on the stack (no allocation inside the timed
 * call); beyond this many threads the scan uses only this many. */
enum { SCAN_MAX_THREADS = 1024 };

void BL(bl_scanl1_sum)(const float *restrict x, float *restrict y, int64_t n)
{
    /* part[t + 1]: the total of thread t's block; then part[t]: the sum of
     * the blocks before t's. */
    float part[SCAN_MAX_THREADS + 1];
    part[0] = 0;
#ifdef _OPENMP
    int want = omp_get_max_threads();
    if (want > SCAN_MAX_THREADS) want = SCAN_MAX_THREADS;
#pragma omp parallel num_threads(want)
#endif
    {
#ifdef _OPENMP
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const int t = 0, nt = 1;
#endif
        /* The same static blocks in both passes, so each thread's offset
         * is the total of exactly the elements before its block. */
        const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
        float s = 0;
#ifdef _OPENMP
#pragma omp simd reduction(+ : s)
#endif
        for (int64_t i = lo; i < hi; i++) s += x[i];
        part[t + 1] = s;
#ifdef _OPENMP
#pragma omp barrier
#pragma omp single
#endif
        for (int k = 1; k <= nt; k++) part[k] += part[k - 1];
        /* (the single's implicit barrier publishes the offsets) */
        const float off = part[t];
        float run = 0;
#ifdef _OPENMP
#pragma omp simd reduction(inscan, + : run)
#endif
        for (int64_t i = lo; i < hi; i++) {
            run += x[i];
#ifdef _OPENMP
#pragma omp scan inclusive(run)
#endif
            y[i] = off + run;
        }
    }
}

void BL(bl_scanl1_seg_sum)(const float *restrict x, const int32_t *restrict lens, int64_t m, float *restrict y)
{
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
#ifdef _OPENMP
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const int t = 0, nt = 1;
#endif
        const int64_t lo = m * t / nt, hi = m * (t + 1) / nt;
        int64_t i = 0;
        for (int64_t j = 0; j < lo; j++) i += lens[j];
        for (int64_t j = lo; j < hi; j++) {
            float acc = 0;
            for (int32_t k = 0; k < lens[j]; k++, i++) y[i] = acc += x[i];
        }
    }
}

/* filter-exp: y = the elements expf(x[i] - 1) greater than 1.5, in
 * order; returns their number.  tmp holds n values.  Each thread
 * computes its static block's values once (a SIMD loop) and counts those
 * kept; the offsets are the counts' exclusive scan; each thread then
 * copies its kept values to its offset. */
int64_t BL(bl_filter_exp)(const float *restrict x, float *restrict tmp, float *restrict y, int64_t n)
{
    int64_t cnt[SCAN_MAX_THREADS + 1], total = 0;
#ifdef _OPENMP
    int want = omp_get_max_threads();
    if (want > SCAN_MAX_THREADS) want = SCAN_MAX_THREADS;
#pragma omp parallel num_threads(want)
#endif
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        int t = 0, nt = 1;
#endif
        int64_t lo = n * t / nt, hi = n * (t + 1) / nt, c = 0;
#ifdef _OPENMP
#pragma omp simd reduction(+ : c)
#endif
        for (int64_t i = lo; i < hi; i++) {
            tmp[i] = expf(x[i] - 1.0f);
            c += tmp[i] > 1.5f;
        }
        cnt[t + 1] = c;
#ifdef _OPENMP
#pragma omp barrier
#pragma omp single
#endif
        {
            cnt[0] = 0;
            for (int k = 1; k <= nt; k++) cnt[k] += cnt[k - 1];
            total = cnt[nt];
        }
        int64_t o = cnt[t];
        for (int64_t i = lo; i < hi; i++)
            if (tmp[i] > 1.5f) y[o++] = tmp[i];
    }
    return total;
}
