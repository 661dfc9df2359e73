/*
 * Inline polynomial expf and logf of the kind Halide inlines, written as
 * scalar code that GCC vectorises, and an exhaustive check of their error
 * (not part of the build or of `make test`): the measurement behind the
 * README's "Against the peers" note on Black-Scholes.  Measured worst
 * errors against exp and log in double: exp 1.08 ulp (every f32 of
 * magnitude below 128, both signs), log 1.39 ulp (every f32).  In axle's
 * generated Black-Scholes unit (`axle dump blackscholes --stage c` in fast
 * mode, with expf and logf defined as these), 4M options on 1 thread ran
 * 1.16-1.20x slower than with glibc's vector library, so axle does not use
 * them.
 *
 * exp: x clamped to [-104, 89], k = rint(x / ln 2), r = x - k ln 2 in two
 * parts (Cody and Waite), e^r = 1 + r + r^2 Q(r) with Q of degree 4 fitted
 * near-minimax on [-ln 2 / 2, ln 2 / 2], scaled by 2^k as two powers of two
 * (so that denormal results round once and overflow gives +inf).
 * log: denormals scaled by 2^23, x = 2^e m with m in [sqrt(1/2), sqrt(2)),
 * log(1 + f) = f - f^2/2 + f^3 P(f) with P of degree 7, plus e ln 2 in
 * two parts; NaN for x < 0, -inf for 0, +inf for +inf, NaN kept.
 *
 *   cc -O3 -march=native -ffp-contract=fast explog.c -o explog -lm && ./explog
 * (minutes: 2^32 logs in double; exits 1 if either worst error passes 1.5 ulp)
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef float f32;
typedef int32_t i32;
typedef uint32_t u32;
#define AXI static inline __attribute__((always_inline, unused))
AXI u32 fm_bits(f32 x) { u32 r; memcpy(&r, &x, 4); return r; }
AXI f32 fm_of(u32 b) { f32 r; memcpy(&r, &b, 4); return r; }
AXI f32 ax_fexpf(f32 x)
{
    f32 xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    f32 kf = __builtin_rintf(xc * 0x1.715476p+0f);
    f32 r = __builtin_fmaf(kf, -0x1.62e4p-1f, xc);
    r = __builtin_fmaf(kf, -0x1.7f7d1cp-20f, r);
    f32 q = 0.0013901280472055078f;
    q = __builtin_fmaf(q, r, 0.008363140746951103f);
    q = __builtin_fmaf(q, r, 0.04166685417294502f);
    q = __builtin_fmaf(q, r, 0.16666577756404877f);
    q = __builtin_fmaf(q, r, 0.5f);
    f32 p = 1.0f + __builtin_fmaf(r * r, q, r);
    i32 k = (i32)kf, k1 = k >> 1, k2 = k - k1;
    f32 s1 = fm_of((u32)(k1 + 127) << 23), s2 = fm_of((u32)(k2 + 127) << 23);
    return p * s1 * s2;
}
AXI f32 ax_flogf(f32 x)
{
    i32 tiny = x < 0x1p-126f;
    f32 xs = tiny ? x * 0x1p23f : x;
    u32 b = fm_bits(xs);
    /* m in [sqrt(1/2), sqrt(2)): subtract 0x3f3504f3 (sqrt(1/2)'s bits) */
    u32 t = b - 0x3f3504f3u;
    i32 e = (i32)t >> 23;
    f32 m = fm_of((t & 0x007fffffu) + 0x3f3504f3u);
    f32 f = m - 1.0f;
    f32 ef = (f32)(e - (tiny ? 23 : 0));
    f32 p = -0.07974095642566681f;
    p = __builtin_fmaf(p, f, 0.1265564262866974f);
    p = __builtin_fmaf(p, f, -0.12989293038845062f);
    p = __builtin_fmaf(p, f, 0.142099529504776f);
    p = __builtin_fmaf(p, f, -0.16641581058502197f);
    p = __builtin_fmaf(p, f, 0.20001201331615448f);
    p = __builtin_fmaf(p, f, -0.25000303983688354f);
    p = __builtin_fmaf(p, f, 0.3333333134651184f);
    f32 f2 = f * f;
    f32 lg = __builtin_fmaf(f2 * f, p, __builtin_fmaf(-0.5f, f2, f));
    f32 r = __builtin_fmaf(ef, 0x1.62e43p-1f, __builtin_fmaf(ef, -0x1.05c61p-29f, lg));
    r = x < 0.0f ? __builtin_nanf("") : r;
    r = x == 0.0f ? -__builtin_inff() : r;
    r = x == __builtin_inff() ? x : r;
    return x != x ? x : r;
}

/* |got - want| in units of the last place of want rounded to f32 (an
   infinity or NaN must match) */
static double ulp_error(f32 got, double want)
{
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isinf((f32)want) || isinf(got)) return got == (f32)want ? 0 : INFINITY;
    int e;
    frexp(fabs(want), &e);
    double ulp = ldexp(1, e - 24);
    if (ulp < 0x1p-149) ulp = 0x1p-149;
    return fabs(got - want) / ulp;
}

int main(void)
{
    double we = 0, wl = 0;
    f32 ae = 0, al = 0;
    for (uint64_t b = 0; b < (1ull << 32); b++) {
        f32 x = fm_of((u32)b);
        double e = ulp_error(ax_flogf(x), log((double)x));
        if (e > wl) wl = e, al = x;
        if ((b & 0x7fffffffu) < 0x43000000u) {   /* |x| < 128 */
            e = ulp_error(ax_fexpf(x), exp((double)x));
            if (e > we) we = e, ae = x;
        }
    }
    printf("exp: worst %.3f ulp at %a\nlog: worst %.3f ulp at %a\n", we, ae, wl, al);
    return we <= 1.5 && wl <= 1.5 ? 0 : 1;
}
