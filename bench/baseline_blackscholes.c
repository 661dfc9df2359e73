/*
 * Black-Scholes option pricing (paper s.5.3, Figure 1) as a performance
 * engineer writes it for a multicore CPU: one parallel SIMD loop over
 * structure-of-arrays inputs, the cumulative normal distribution inlined,
 * its branch written as a select, the common subexpressions (d*d, the
 * discounted strike, cnd(d1), cnd(d2)) computed once.  The arithmetic is
 * the axle program's, in the same order, in f32.
 *
 * Vectorising the loop needs vector versions of expf and logf.  glibc's
 * libmvec has them, but <math.h> only declares them SIMD-callable under
 * -ffast-math (bits/math-vector.h); the variant without -ffast-math
 * declares them itself with `omp declare simd`, as a performance engineer
 * would (libmvec's f32 versions are accurate to 4 ulp).  sqrtf becomes one
 * vsqrtps when math functions need not set errno (the baselines are built
 * with -fno-math-errno, which changes no value).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_blackscholes.h"
#include <math.h>
#include <string.h>

AX_BL_SIMD_EXPLOG

static inline float cnd(float d)
{
    const float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    const float poly = k * (0.31938153f + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f +
                                                                                      k * 1.330274429f))));
    const float c = 0.39894228040143267793994605993438f * expf(-0.5f * d * d) * poly;
    /* d > 0 ? 1 - c : c, as a bitwise select of both arms: with trapping
     * math (the default without -ffast-math) GCC sinks `1 - c` into its
     * arm and then will not if-convert it, and the loop would not
     * vectorise.  A blend of the bits is what the vector code does anyway. */
    const float t = 1.0f - c;
    uint32_t bt, bc, m = -(uint32_t)(d > 0);
    memcpy(&bt, &t, 4);
    memcpy(&bc, &c, 4);
    const uint32_t b = (bt & m) | (bc & ~m);
    float r;
    memcpy(&r, &b, 4);
    return r;
}

void BL(bl_blackscholes)(const float *restrict price, const float *restrict strike,
                         const float *restrict years, float *restrict call, float *restrict put, int64_t n,
                         float riskfree, float volatility)
{
    const float r = riskfree, v = volatility, drift = r + 0.5f * v * v;
#ifdef _OPENMP
#pragma omp parallel for simd schedule(static)
#endif
    for (int64_t i = 0; i < n; i++) {
        const float p = price[i], s = strike[i], t = years[i];
        const float vsqrtT = v * sqrtf(t);
        const float d1 = (logf(p / s) + drift * t) / vsqrtT, d2 = d1 - vsqrtT;
        const float c1 = cnd(d1), c2 = cnd(d2);
        const float xexp = s * expf(-r * t);
        call[i] = p * c1 - xexp * c2;
        put[i] = xexp * (1.0f - c2) - p * (1.0f - c1);
    }
}
