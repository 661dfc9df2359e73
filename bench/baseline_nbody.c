/*
 * N-body (paper s.5.4) as a performance engineer writes it for a multicore
 * CPU: the bodies in struct-of-arrays form, threads over blocks of bodies
 * i, and the inner loop over all bodies j a SIMD reduction of the three
 * acceleration components.  No n x n intermediate: each pairwise term is
 * consumed as it is made (what fusion gives axle).  f32 like the axle
 * program, and the arithmetic in the same order.
 *
 * Why AVX intrinsics for the inner loop: C's sqrtf may set errno, so
 * without -fno-math-errno (not among the flags of the _std variant) GCC
 * keeps a scalar call in the loop and does not vectorise it, even under
 * `omp simd`, and GCC's optimize pragma does not switch errno off per
 * function.  vsqrtps and vdivps are IEEE operations, so the _std variant is
 * still exact IEEE arithmetic; the portable loop below serves other
 * targets and the remainder.  Under -ffast-math GCC may turn 1/sqrt into
 * vrsqrtps and a Newton step (a few ulps), the usual trade.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_nbody.h"
#include <math.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

/* The acceleration of the body at (xi, yi, zi) by bodies j0 .. n-1, added
 * to a. */
static void accel_scalar(int64_t j0, int64_t n, const float *restrict x, const float *restrict y,
                         const float *restrict z, const float *restrict m, float xi, float yi, float zi,
                         float eps2, float a[3])
{
    float ax = 0, ay = 0, az = 0;
    for (int64_t j = j0; j < n; j++) {
        float rx = x[j] - xi, ry = y[j] - yi, rz = z[j] - zi;
        float rsqr = rx * rx + ry * ry + rz * rz + eps2;
        float invr = 1.0f / sqrtf(rsqr);
        float s = m[j] * (invr * invr * invr);
        ax += s * rx;
        ay += s * ry;
        az += s * rz;
    }
    a[0] += ax;
    a[1] += ay;
    a[2] += az;
}

static void accel(int64_t n, const float *restrict x, const float *restrict y, const float *restrict z,
                  const float *restrict m, float xi, float yi, float zi, float eps2, float a[3])
{
    int64_t j = 0;
    a[0] = a[1] = a[2] = 0;
#if defined(__AVX__)
    /* Eight bodies j at a time; GCC's vector extensions give the
     * arithmetic operators on __m256. */
    const __m256 vxi = _mm256_set1_ps(xi), vyi = _mm256_set1_ps(yi), vzi = _mm256_set1_ps(zi);
    const __m256 veps2 = _mm256_set1_ps(eps2), one = _mm256_set1_ps(1.0f);
    __m256 ax = _mm256_setzero_ps(), ay = ax, az = ax;
    for (; j + 8 <= n; j += 8) {
        __m256 rx = _mm256_loadu_ps(x + j) - vxi;
        __m256 ry = _mm256_loadu_ps(y + j) - vyi;
        __m256 rz = _mm256_loadu_ps(z + j) - vzi;
        __m256 rsqr = rx * rx + ry * ry + rz * rz + veps2;
        __m256 invr = one / _mm256_sqrt_ps(rsqr);
        __m256 s = _mm256_loadu_ps(m + j) * (invr * invr * invr);
        ax += s * rx;
        ay += s * ry;
        az += s * rz;
    }
    float lane[3][8];
    _mm256_storeu_ps(lane[0], ax);
    _mm256_storeu_ps(lane[1], ay);
    _mm256_storeu_ps(lane[2], az);
    for (int c = 0; c < 3; c++)
        for (int l = 0; l < 8; l++) a[c] += lane[c][l];
#endif
    accel_scalar(j, n, x, y, z, m, xi, yi, zi, eps2, a);
}

void BL(bl_nbody)(int64_t n, const float *restrict x, const float *restrict y, const float *restrict z,
                  const float *restrict m, const float *restrict vx, const float *restrict vy,
                  const float *restrict vz, float dt, float eps2, float *restrict ox, float *restrict oy,
                  float *restrict oz, float *restrict ovx, float *restrict ovy, float *restrict ovz)
{
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t i = 0; i < n; i++) {
        float a[3];
        accel(n, x, y, z, m, x[i], y[i], z[i], eps2, a);
        float nvx = vx[i] + dt * a[0], nvy = vy[i] + dt * a[1], nvz = vz[i] + dt * a[2];
        ovx[i] = nvx;
        ovy[i] = nvy;
        ovz[i] = nvz;
        ox[i] = x[i] + dt * nvx;
        oy[i] = y[i] + dt * nvy;
        oz[i] = z[i] + dt * nvz;
    }
}
