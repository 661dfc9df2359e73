/*
 * The planner's programs (examples/planner.c) fused by hand, as a
 * performance engineer writes them for a multicore CPU: every reduction
 * over an array shares one parallel simd loop (OpenMP's reduction clauses
 * license the reassociation axle's folds have too), a filter that only
 * feeds a sum is a conditional add, and QuickHull's partition is the
 * classic two-pass parallel compaction: each thread counts its static
 * block's points above and below the line and finds its farthest point in
 * one pass, the counts become offsets, and each thread writes its block's
 * points in a second pass (an ordered parallel filter cannot do with one).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_planner.h"
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void BL(bl_normalise)(const float *restrict x, float *restrict y, int64_t n)
{
    float s = 0, m = -INFINITY;
#pragma omp parallel for simd reduction(+ : s) reduction(max : m) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        m = x[i] > m ? x[i] : m;
    }
    const float k = s * m;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / k;
}

void BL(bl_meanvar)(const float *restrict x, int64_t n, float *mean, float *var)
{
    float s = 0, q = 0;
#pragma omp parallel for simd reduction(+ : s, q) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        q += x[i] * x[i];
    }
    const float fn = (float)n, mu = s / fn;
    *mean = mu;
    *var = q / fn - mu * mu;
}

float BL(bl_filterfold)(const float *restrict x, int64_t n)
{
    float s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float y = x[i] * x[i] * 4.0f - 1.0f;
        s += y > 0 ? y : 0.0f;
    }
    return s;
}

float BL(bl_mapfold)(const float *restrict x, float *restrict y, int64_t n)
{
    float s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] * 2.0f - 1.0f;
        y[i] = v;
        s += v;
    }
    return s;
}

static inline float dist(float x, float y) { return 2000.0f * (y + 300.0f) - 500.0f * (x + 1000.0f); }

int BL(bl_quickhull)(const float *restrict px, const float *restrict py, int64_t n, float *restrict ax,
                     float *restrict ay, int64_t *na, float *restrict bx, float *restrict by, int64_t *nb,
                     float far[3])
{
#ifdef _OPENMP
    int nt = omp_get_max_threads();
#else
    int nt = 1;
#endif
    /* per thread: above, below, then the exclusive offsets; its farthest */
    int64_t *cnt = calloc((size_t)nt * 2, sizeof *cnt);
    float *fr = calloc((size_t)nt * 3, sizeof *fr);
    if (!cnt || !fr) {
        free(cnt), free(fr);
        return -1;
    }
#pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
        int t = omp_get_thread_num(), tn = omp_get_num_threads();
#else
        int t = 0, tn = 1;
#endif
        int64_t lo = n * t / tn, hi = n * (t + 1) / tn, a = 0, b = 0;
        float fd = 0, fx = 0, fy = 0;
        for (int64_t i = lo; i < hi; i++) {
            float d = dist(px[i], py[i]);
            a += d > 0;
            b += d < 0;
            if (d > fd) fd = d, fx = px[i], fy = py[i];
        }
        cnt[2 * t] = a, cnt[2 * t + 1] = b;
        fr[3 * t] = fd, fr[3 * t + 1] = fx, fr[3 * t + 2] = fy;
#pragma omp barrier
        int64_t oa = 0, ob = 0;
        for (int k = 0; k < t; k++) oa += cnt[2 * k], ob += cnt[2 * k + 1];
        for (int64_t i = lo; i < hi; i++) {
            float x = px[i], y = py[i], d = dist(x, y);
            /* branch-free (the side of a random point is unpredictable:
             * 5-7 times faster than branching, measured): a point not
             * kept is stored too, in the slot after the last one kept,
             * which the next point kept overwrites */
            ax[oa] = x, ay[oa] = y, oa += d > 0;
            bx[ob] = x, by[ob] = y, ob += d < 0;
        }
        /* The slot after a block's last point kept is the next block's
         * first (or, after the last block, one past the end: i < n there,
         * so in the buffer): its owner writes it again once every block
         * is done. */
#pragma omp barrier
        int64_t sa = 0, sb = 0;
        for (int k = 0; k < t; k++) sa += cnt[2 * k], sb += cnt[2 * k + 1];
        bool fa = cnt[2 * t] == 0, fb = cnt[2 * t + 1] == 0;
        for (int64_t i = lo; i < hi && !(fa && fb); i++) {
            float d = dist(px[i], py[i]);
            if (!fa && d > 0) ax[sa] = px[i], ay[sa] = py[i], fa = true;
            if (!fb && d < 0) bx[sb] = px[i], by[sb] = py[i], fb = true;
        }
#pragma omp barrier
#pragma omp single
        {
            int64_t ta = 0, tb = 0;
            for (int k = 0; k < tn; k++) ta += cnt[2 * k], tb += cnt[2 * k + 1];
            *na = ta, *nb = tb;
            far[0] = far[1] = far[2] = 0;
            for (int k = 0; k < tn; k++)
                if (fr[3 * k] > far[0]) far[0] = fr[3 * k], far[1] = fr[3 * k + 1], far[2] = fr[3 * k + 2];
        }
    }
    free(cnt), free(fr);
    return 0;
}
