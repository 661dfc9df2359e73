/*
 * Radix sort of signed 32-bit integers by hand, two ways.
 *
 * bl_radixsplit (at the end of this file): the axle program's algorithm,
 * the baseline of its Table 2 row.
 *
 * bl_radixsort: the sort a performance engineer would choose for a
 * multicore CPU: least-significant-digit first, 8-bit digits (four
 * passes instead of the 32 one-bit splits of the Accelerate program, paper
 * s.5.8), each pass a parallel counting sort:
 *
 *   1. each thread counts the digits of its contiguous block (a private
 *      256-entry histogram: no atomics, no false sharing);
 *   2. one thread turns the nthreads x 256 counts into starting offsets,
 *      digit-major then thread-major, so that the scatter is stable;
 *   3. each thread scatters its block in order to its offsets.
 *
 * Signed order: the digits are taken from the key with its sign bit
 * flipped (x ^ 0x80000000 as unsigned), which orders negative numbers
 * before positive ones; the values themselves are moved unchanged.
 * Four passes (an even number) go in -> tmp -> out -> tmp -> out.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_radixsort.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Inside the parallel region: this thread's number, the team's size and
 * the thread's contiguous block [lo, hi) of n items. */
static void my_block(int64_t n, int *t, int *nt, int64_t *lo, int64_t *hi)
{
#ifdef _OPENMP
    *t = omp_get_thread_num(), *nt = omp_get_num_threads();
#else
    *t = 0, *nt = 1;
#endif
    *lo = n * *t / *nt, *hi = n * (*t + 1) / *nt;
}

enum { DIGIT_BITS = 8, RADIX = 1 << DIGIT_BITS, PASSES = 32 / DIGIT_BITS };

static inline unsigned digit(int32_t x, int shift)
{
    return (((uint32_t)x ^ 0x80000000u) >> shift) & (RADIX - 1);
}

int BL(bl_radixsort)(const int32_t *in, int32_t *out, int32_t *tmp, int64_t n)
{
    if (n <= 0) return 0;
    int maxt = max_threads();
    /* Each thread's row of counters padded to whole cache lines. */
    int64_t *count = aligned_alloc(64, sizeof(int64_t) * RADIX * (size_t)maxt);
    if (!count) return -1;
    const int32_t *src[PASSES] = {in, tmp, out, tmp};
    int32_t *dst[PASSES] = {tmp, out, tmp, out};
#ifdef _OPENMP
#pragma omp parallel num_threads(maxt)
#endif
    {
        int t, nt;
        int64_t lo, hi;
        my_block(n, &t, &nt, &lo, &hi);
        int64_t *mine = count + (size_t)t * RADIX;
        for (int pass = 0; pass < PASSES; pass++) {
            const int32_t *s = src[pass];
            int32_t *d = dst[pass];
            int shift = pass * DIGIT_BITS;
            memset(mine, 0, sizeof(int64_t) * RADIX);
            for (int64_t i = lo; i < hi; i++) mine[digit(s[i], shift)]++;
#ifdef _OPENMP
#pragma omp barrier
#pragma omp single
#endif
            {
                int64_t sum = 0;
                for (int dg = 0; dg < RADIX; dg++)
                    for (int u = 0; u < nt; u++) {
                        int64_t c = count[(size_t)u * RADIX + dg];
                        count[(size_t)u * RADIX + dg] = sum;
                        sum += c;
                    }
            }   /* the implicit barrier of `single` publishes the offsets */
            for (int64_t i = lo; i < hi; i++) {
                int32_t x = s[i];
                d[mine[digit(x, shift)]++] = x;
            }
#ifdef _OPENMP
#pragma omp barrier
#endif
        }
    }
    free(count);
    return 0;
}

/*
 * The same algorithm as the axle program: Blelloch's split sort, one bit
 * per pass, 32 passes (the seeds compare their radix sort with Nikola's
 * version of the same algorithm, s.5.8).  Written for a multicore CPU:
 * each thread counts the 0s of its contiguous block (a vectorised
 * reduction), the 0s and 1s before each block follow from the counts, and
 * each thread then splits its block in order, branch-free (a select of
 * the destination: a branch on a random bit mispredicts half the time).
 * Passes alternate in -> tmp -> out -> tmp ... -> out (32 is even).
 */
static inline uint32_t split_bit(int32_t x, int k)
{
    /* the sign bit inverted, so that negative numbers come first */
    return ((((uint32_t)x) >> k) & 1u) ^ (k == 31);
}

int BL(bl_radixsplit)(const int32_t *in, int32_t *out, int32_t *tmp, int64_t n)
{
    if (n <= 0) return 0;
    int maxt = max_threads();
    /* the 0s in each thread's block, one cache line per thread */
    int64_t *zeros = aligned_alloc(64, sizeof(int64_t) * 8 * (size_t)maxt);
    if (!zeros) return -1;
#ifdef _OPENMP
#pragma omp parallel num_threads(maxt)
#endif
    {
        int t, nt;
        int64_t lo, hi;
        my_block(n, &t, &nt, &lo, &hi);
        for (int k = 0; k < 32; k++) {
            const int32_t *s = k == 0 ? in : (k & 1) ? tmp : out;
            int32_t *d = (k & 1) ? out : tmp;
            int64_t z = 0;
#ifdef _OPENMP
#pragma omp simd reduction(+ : z)
#endif
            for (int64_t i = lo; i < hi; i++) z += split_bit(s[i], k) == 0;
            zeros[8 * t] = z;
#ifdef _OPENMP
#pragma omp barrier
#endif
            int64_t all0 = 0, z_before = 0;
            for (int u = 0; u < nt; u++) {
                if (u < t) z_before += zeros[8 * u];
                all0 += zeros[8 * u];
            }
            /* where this block's next 0 and next 1 go */
            int64_t p0 = z_before, p1 = all0 + (lo - z_before);
            for (int64_t i = lo; i < hi; i++) {
                int32_t x = s[i];
                int64_t b = split_bit(x, k), m = -b;
                d[(p1 & m) | (p0 & ~m)] = x;
                p1 += b;
                p0 += 1 - b;
            }
#ifdef _OPENMP
#pragma omp barrier
#endif
        }
    }
    free(zeros);
    return 0;
}
