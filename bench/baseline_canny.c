/*
 * Canny edge detection (paper s.5.7; the paper's contender is OpenCV) as a
 * performance engineer writes it for a multicore CPU: four parallel passes
 * over the rows, each row's interior a branch-free SIMD loop and only the
 * edge columns clamped:
 *   1. luminance and the Gaussian along x, row by row (fused);
 *   2. the Gaussian along y;
 *   3. Sobel: the squared magnitude and the direction sector, found by
 *      comparing |dy| with tan(pi/8) |dx| and tan(3pi/8) |dx| instead of
 *      atan2 (as OpenCV does);
 *   4. non-maximum suppression and the double threshold on squared
 *      magnitudes (no square roots), counting the strong pixels per row;
 * then a prefix sum over the row counts and a parallel pass that writes the
 * strong pixels' indices (a stream compaction).  The decisions are the same
 * as examples/canny.c's up to rounding (squares instead of roots,
 * comparisons instead of atan2): that is what the check's band of
 * uncertain pixels allows.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_canny.h"

#define GAUSS0 0.06136f
#define GAUSS1 0.24477f
#define GAUSS2 0.38774f
#define TAN_PI_8 0.41421356237f
#define TAN_3PI_8 2.41421356237f

static inline int64_t clampi(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

static inline float luma(uint32_t p)
{
    float r = (float)((p >> 24) & 0xFF) / 255.0f, g = (float)((p >> 16) & 0xFF) / 255.0f,
          b = (float)((p >> 8) & 0xFF) / 255.0f;
    return 0.3f * r + 0.59f * g + 0.11f * b;
}

static inline float gauss5(float a, float b, float c, float d, float e)
{
    return GAUSS0 * a + GAUSS1 * b + GAUSS2 * c + GAUSS1 * d + GAUSS0 * e;
}

/* Direction codes as in examples/canny.c: 0 undefined, 1 diagonal (/),
 * 2 vertical, 3 diagonal (\), 4 horizontal. */
static inline uint8_t sector(float dx, float dy, float low)
{
    float ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
    uint8_t diag = (dx > 0) == (dy > 0) ? 1 : 3;
    uint8_t d = ay <= TAN_PI_8 * ax ? 4 : ay >= TAN_3PI_8 * ax ? 2 : diag;
    return ax <= low && ay <= low ? 0 : d;
}

/* Pass 3 for pixel i of a row: rows t, m, b of the blurred image, columns
 * l, i, r. */
static inline void sobel(const float *t, const float *m, const float *b, int64_t l, int64_t i, int64_t r, float low,
                         float *mag2, uint8_t *dir)
{
    float dx = t[r] + 2 * m[r] + b[r] - t[l] - 2 * m[l] - b[l];
    float dy = t[l] + 2 * t[i] + t[r] - b[l] - 2 * b[i] - b[r];
    *mag2 = dx * dx + dy * dy;
    *dir = sector(dx, dy, low);
}

/* Pass 4 for pixel i: the class after suppression and thresholding. */
static inline uint8_t classify(const float *t, const float *m, const float *b, int64_t l, int64_t i, int64_t r,
                               uint8_t d, float low2, float high2)
{
    float g = m[i];
    float fwd = d == 1 ? t[r] : d == 2 ? t[i] : d == 3 ? t[l] : m[l];
    float rev = d == 1 ? b[l] : d == 2 ? b[i] : d == 3 ? b[r] : m[r];
    uint8_t c = g >= high2 ? BL_CANNY_STRONG : g >= low2 ? BL_CANNY_WEAK : BL_CANNY_NONE;
    return d != 0 && !(g < fwd) && !(g < rev) ? c : BL_CANNY_NONE;
}

int64_t BL(bl_canny)(int64_t h, int64_t w, const uint32_t *restrict rgba, float low, float high, float *work,
                     uint8_t *restrict cls, int32_t *restrict strong)
{
    if (h <= 0 || w <= 0) return 0;
    const int64_t hw = h * w;
    int64_t *rowcount = (int64_t *)(void *)work;
    float *bx = work + 2 * h + 8, *by = bx + hw, *mag2 = by + hw;
    uint8_t *dir = (uint8_t *)(mag2 + hw);
    const float low2 = low * low, high2 = high * high;

#ifdef _OPENMP
#pragma omp parallel
#endif
    {
        /* 1. luminance and the Gaussian along x.  Row j of `by` (not yet
         * in use) holds the grey row. */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t j = 0; j < h; j++) {
            const uint32_t *src = rgba + j * w;
            float *grey = by + j * w, *dst = bx + j * w;
#ifdef _OPENMP
#pragma omp simd
#endif
            for (int64_t i = 0; i < w; i++) grey[i] = luma(src[i]);
            /* the columns within two of an edge (0, 1, w-2, w-1) read clamped */
            for (int64_t i = 0; i < w; i = (i == 1 && w > 4) ? w - 2 : i + 1)
                dst[i] = gauss5(grey[clampi(i - 2, w)], grey[clampi(i - 1, w)], grey[i], grey[clampi(i + 1, w)],
                                grey[clampi(i + 2, w)]);
#ifdef _OPENMP
#pragma omp simd
#endif
            for (int64_t i = 2; i < w - 2; i++)
                dst[i] = gauss5(grey[i - 2], grey[i - 1], grey[i], grey[i + 1], grey[i + 2]);
        }

        /* 2. the Gaussian along y */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t j = 0; j < h; j++) {
            const float *r0 = bx + clampi(j - 2, h) * w, *r1 = bx + clampi(j - 1, h) * w, *r2 = bx + j * w,
                        *r3 = bx + clampi(j + 1, h) * w, *r4 = bx + clampi(j + 2, h) * w;
            float *dst = by + j * w;
#ifdef _OPENMP
#pragma omp simd
#endif
            for (int64_t i = 0; i < w; i++) dst[i] = gauss5(r0[i], r1[i], r2[i], r3[i], r4[i]);
        }

        /* 3. Sobel */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t j = 0; j < h; j++) {
            const float *t = by + clampi(j - 1, h) * w, *m = by + j * w, *b = by + clampi(j + 1, h) * w;
            float *mo = mag2 + j * w;
            uint8_t *dout = dir + j * w;
            for (int64_t e = 0; e < w; e += (w > 1 ? w - 1 : 1))
                sobel(t, m, b, clampi(e - 1, w), e, clampi(e + 1, w), low, mo + e, dout + e);
#ifdef _OPENMP
#pragma omp simd
#endif
            for (int64_t i = 1; i < w - 1; i++) sobel(t, m, b, i - 1, i, i + 1, low, mo + i, dout + i);
        }

        /* 4. suppression and thresholds, counting strong pixels per row */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t j = 0; j < h; j++) {
            const float *t = mag2 + clampi(j - 1, h) * w, *m = mag2 + j * w, *b = mag2 + clampi(j + 1, h) * w;
            const uint8_t *d = dir + j * w;
            uint8_t *c = cls + j * w;
            int64_t count = 0;
            for (int64_t e = 0; e < w; e += (w > 1 ? w - 1 : 1))
                c[e] = classify(t, m, b, clampi(e - 1, w), e, clampi(e + 1, w), d[e], low2, high2);
#ifdef _OPENMP
#pragma omp simd
#endif
            for (int64_t i = 1; i < w - 1; i++) c[i] = classify(t, m, b, i - 1, i, i + 1, d[i], low2, high2);
            for (int64_t i = 0; i < w; i++) count += c[i] == BL_CANNY_STRONG;
            rowcount[j] = count;
        }

        /* 5. the strong pixels' indices: an exclusive scan of the row
         * counts (h values, one thread), then a parallel scatter */
#ifdef _OPENMP
#pragma omp single
#endif
        {
            int64_t s = 0;
            for (int64_t j = 0; j < h; j++) {
                int64_t c = rowcount[j];
                rowcount[j] = s;
                s += c;
            }
        }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t j = 0; j < h; j++) {
            int64_t o = rowcount[j];
            const uint8_t *c = cls + j * w;
            for (int64_t i = 0; i < w; i++)
                if (c[i] == BL_CANNY_STRONG) strong[o++] = (int32_t)(j * w + i);
        }
    }
    /* the total: the last row's offset plus its count */
    int64_t n = rowcount[h - 1];
    for (int64_t i = 0; i < w; i++) n += cls[(h - 1) * w + i] == BL_CANNY_STRONG;
    return n;
}

void BL(bl_canny_connect)(int64_t h, int64_t w, const uint8_t *restrict cls, const int32_t *restrict strong,
                          int64_t nstrong, uint8_t *restrict edges, int32_t *restrict stack)
{
    int64_t top = 0;
    for (int64_t k = 0; k < h * w; k++) edges[k] = 0;
    for (int64_t s = 0; s < nstrong; s++) {
        edges[strong[s]] = 1;
        stack[top++] = strong[s];
    }
    while (top > 0) {
        int64_t p = stack[--top], y = p / w, x = p % w;
        for (int64_t dy = -1; dy <= 1; dy++)
            for (int64_t dx = -1; dx <= 1; dx++) {
                int64_t yy = y + dy, xx = x + dx, q = yy * w + xx;
                if (yy < 0 || yy >= h || xx < 0 || xx >= w || edges[q] || cls[q] != BL_CANNY_WEAK) continue;
                edges[q] = 1;
                stack[top++] = (int32_t)q;
            }
    }
}
