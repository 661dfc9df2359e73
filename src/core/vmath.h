/*
 * axle's own exp and log, for f32 and f64: one text, compiled into the
 * interpreter (vmath.c), written into the CPU backend's generated C
 * (cpu/codegen.c) and into the GPU kernels' prelude (gpu/codegen.c, CUDA
 * and OpenCL), so that exp x and log x are the same bits on every backend
 * and at every element position (a vector loop's body and its tail,
 * scalar code), which the C library, libmvec and the devices' own
 * functions do not promise one another.
 *
 * Why not the C library's: GCC vectorises a loop of exp only by calling
 * libmvec, whose results differ from libm's in the last bits (so the
 * interpreter and the CPU backend disagree); a GPU's exp is its vendor's.
 * libmvec is faster (tables, AVX-512's own instructions:
 * bench/fastmath/vmath.c), so the CPU's fast modes, which promise no
 * bits, call it instead (cgen/exp.c math_fn).  Written as branch-free C (selects,
 * integer operations on the bits, fused multiply-adds), the functions
 * inline into the kernels' loops, and GCC vectorises them at the target's
 * width like any other arithmetic.
 *
 * The algorithms are the textbook ones (Cody and Waite's reduction; Tang;
 * Muller, "Elementary Functions", ch. 11):
 *   exp x = 2^k e^r, k = round(x / ln 2), r = x - k ln 2 with ln 2 split
 *     in two (k ln2_hi exact), |r| <= ln 2 / 2; e^r by its Taylor series
 *     to r^13 (f64) or r^7 (f32), in Horner's form; times 2^k as
 *     2^floor(k/2) added to the exponent field (exact) and a multiply by
 *     2^(k - floor(k/2)), so that overflow and gradual underflow round
 *     once.
 *   log x = e ln 2 + log m, x = 2^e m, m in [sqrt(2)/2, sqrt(2)); with
 *     f = m - 1 and s = f / (2 + f), log m = 2 atanh s = f - f^2/2 +
 *     s (f^2/2 + R), R = sum over n >= 1 of 2 s^2n / (2n + 1) to n = 10
 *     (f64) or 5 (f32), |s| <= 0.1716; subnormal x scaled up first.
 * Every multiply-add is an explicit fma (correctly rounded on every
 * target, so no compiler's contraction changes the bits), and there is no
 * other a * b + c for a compiler to contract.
 *
 * Accuracy, measured against a 64-bit-mantissa reference over every float
 * class (tests/test_vmath.c): within 1 ulp of the exact value for exp and
 * log in f32 and f64 (the test states each bound).  Special values as C99
 * Annex F: exp(NaN) = NaN, exp(+inf) = +inf, exp(-inf) = +0, overflow to
 * +inf, gradual underflow; log(NaN) = NaN, log(x < 0) = NaN, log(+-0) =
 * -inf, log(+inf) = +inf.
 *
 * CUDA's fast mode compiles the text with contraction (--fmad=true, which
 * finds no a * b + c here) and approximate division (--prec-div=false,
 * log's one division): the same algorithm, the bits promised only within
 * the bound.
 *
 * The text (AXM_TEXT_F32, AXM_TEXT_F64: the f64 half apart, for devices
 * without doubles) names what its includer defines: the type names f32,
 * f64, i32, i64, u32, u64; AXI, the functions' qualifier; ax_bits_f32,
 * ax_f32_of, ax_bits_f64, ax_f64_of (a float's bits and back); AXM_FMA and
 * AXM_FMAF (fma of f64 and of f32).  It defines ax_exp_f32, ax_log_f32,
 * ax_exp_f64 and ax_log_f64.  AXM_STR makes it a string (a line).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_VMATH_H
#define AX_VMATH_H

#define AXM_STR_(...) #__VA_ARGS__
#define AXM_STR(x) AXM_STR_(x)

/* f32: ln 2 = 0x1.62e4p-1 + 0x1.7f7d1cp-20 (the first part's 16 bits
 * times |k| <= 150 exact); Taylor coefficients 1/7! .. 1/2! and 2/11 ..
 * 2/3; 0x1.62e42ep+6 is the largest x whose exp is finite. */
#define AXM_TEXT_F32                                                                                    \
    AXI f32 ax_exp_f32(f32 x)                                                                           \
    {                                                                                                   \
        f32 xc = x < 89.0f ? x : 89.0f;                                                                 \
        xc = xc > -104.0f ? xc : -104.0f;                                                               \
        f32 t = AXM_FMAF(xc, 0x1.715476p+0f, 0x1.8p23f);                                                \
        f32 kd = t - 0x1.8p23f;                                                                         \
        i32 k = (i32)(ax_bits_f32(t) - 0x4b400000u);                                                    \
        f32 r = AXM_FMAF(kd, -0x1.62e4p-1f, xc);                                                        \
        r = AXM_FMAF(kd, -0x1.7f7d1cp-20f, r);                                                          \
        f32 p = AXM_FMAF(0x1.a01a02p-13f, r, 0x1.6c16c2p-10f);                                          \
        p = AXM_FMAF(p, r, 0x1.111112p-7f);                                                             \
        p = AXM_FMAF(p, r, 0x1.555556p-5f);                                                             \
        p = AXM_FMAF(p, r, 0x1.555556p-3f);                                                             \
        p = AXM_FMAF(p, r, 0.5f);                                                                       \
        p = AXM_FMAF(p, r, 1.0f);                                                                       \
        p = AXM_FMAF(p, r, 1.0f);                                                                       \
        i32 k1 = k >> 1;                                                                                \
        f32 y = ax_f32_of(ax_bits_f32(p) + ((u32)k1 << 23)) * ax_f32_of((u32)(k - k1 + 127) << 23);      \
        return x != x ? x + x : y;                                                                      \
    }                                                                                                   \
    AXI f32 ax_log_f32(f32 x)                                                                           \
    {                                                                                                   \
        int sub = x < 0x1p-126f;                                                                        \
        f32 xs = sub ? x * 0x1p25f : x;                                                                 \
        u32 ix = ax_bits_f32(xs) + (0x3f800000u - 0x3f3504f3u);                                         \
        i32 e = (i32)(ix >> 23) - (sub ? 0x7f + 25 : 0x7f);                                              \
        f32 f = ax_f32_of((ix & 0x7fffffu) + 0x3f3504f3u) - 1.0f;                                       \
        f32 s = f / (2.0f + f);                                                                         \
        f32 z = s * s;                                                                                  \
        f32 R = AXM_FMAF(0x1.745d18p-3f, z, 0x1.c71c72p-3f);                                            \
        R = AXM_FMAF(R, z, 0x1.24924ap-2f);                                                             \
        R = AXM_FMAF(R, z, 0x1.99999ap-2f);                                                             \
        R = AXM_FMAF(R, z, 0x1.555556p-1f);                                                             \
        R = R * z;                                                                                      \
        f32 hfsq = 0.5f * f * f;                                                                        \
        f32 ed = ax_f32_of(0x4b400000u + (u32)e) - 0x1.8p23f;                                           \
        f32 a = AXM_FMAF(ed, 0x1.7f7d1cp-20f, s * (hfsq + R));                                          \
        f32 y = AXM_FMAF(ed, 0x1.62e4p-1f, (a - hfsq) + f);                                             \
        f32 sv = x == 0.0f ? ax_f32_of(0xff800000u) : x > 0.0f ? x : ax_f32_of(0x7fc00000u);            \
        return ((x > 0.0f) & (x < ax_f32_of(0x7f800000u))) ? y : sv;                                    \
    }

/* f64: ln 2 = 0x1.62e42feep-1 + 0x1.a39ef35793c76p-33 (32 bits times
 * |k| <= 1076 exact); Taylor coefficients 1/13! .. 1/2! and 2/21 .. 2/3;
 * 0x1.62e42fefa39efp+9 is the largest x whose exp is finite. */
#define AXM_TEXT_F64                                                                                    \
    AXI f64 ax_exp_f64(f64 x)                                                                           \
    {                                                                                                   \
        f64 xc = x < 710.0 ? x : 710.0;                                                                 \
        xc = xc > -746.0 ? xc : -746.0;                                                                 \
        f64 t = AXM_FMA(xc, 0x1.71547652b82fep+0, 0x1.8p52);                                            \
        f64 kd = t - 0x1.8p52;                                                                          \
        i64 k = (i64)(ax_bits_f64(t) - (u64)0x4338000000000000);                                        \
        f64 r = AXM_FMA(kd, -0x1.62e42feep-1, xc);                                                      \
        r = AXM_FMA(kd, -0x1.a39ef35793c76p-33, r);                                                     \
        f64 p = AXM_FMA(0x1.6124613a86d09p-33, r, 0x1.1eed8eff8d898p-29);                               \
        p = AXM_FMA(p, r, 0x1.ae64567f544e4p-26);                                                       \
        p = AXM_FMA(p, r, 0x1.27e4fb7789f5cp-22);                                                       \
        p = AXM_FMA(p, r, 0x1.71de3a556c734p-19);                                                       \
        p = AXM_FMA(p, r, 0x1.a01a01a01a01ap-16);                                                       \
        p = AXM_FMA(p, r, 0x1.a01a01a01a01ap-13);                                                       \
        p = AXM_FMA(p, r, 0x1.6c16c16c16c17p-10);                                                       \
        p = AXM_FMA(p, r, 0x1.1111111111111p-7);                                                        \
        p = AXM_FMA(p, r, 0x1.5555555555555p-5);                                                        \
        p = AXM_FMA(p, r, 0x1.5555555555555p-3);                                                        \
        p = AXM_FMA(p, r, 0.5);                                                                         \
        p = AXM_FMA(p, r, 1.0);                                                                         \
        p = AXM_FMA(p, r, 1.0);                                                                         \
        i64 k1 = (i64)((u64)(k + 2048) >> 1) - 1024;   /* k >> 1, no 64-bit arithmetic shift in AVX2 */ \
        f64 y = ax_f64_of(ax_bits_f64(p) + ((u64)k1 << 52)) * ax_f64_of((u64)(k - k1 + 1023) << 52);    \
        return x != x ? x + x : y;                                                                      \
    }                                                                                                   \
    AXI f64 ax_log_f64(f64 x)                                                                           \
    {                                                                                                   \
        int sub = x < 0x1p-1022;                                                                        \
        f64 xs = sub ? x * 0x1p54 : x;                                                                  \
        u64 ix = ax_bits_f64(xs) + ((u64)0x3ff0000000000000 - (u64)0x3fe6a09e667f3bcd);                 \
        i64 e = (i64)(ix >> 52) - (sub ? 0x3ff + 54 : 0x3ff);                                           \
        f64 f = ax_f64_of((ix & (u64)0x000fffffffffffff) + (u64)0x3fe6a09e667f3bcd) - 1.0;              \
        f64 s = f / (2.0 + f);                                                                          \
        f64 z = s * s;                                                                                  \
        f64 R = AXM_FMA(0x1.8618618618618p-4, z, 0x1.af286bca1af28p-4);                                \
        R = AXM_FMA(R, z, 0x1.e1e1e1e1e1e1ep-4);                                                        \
        R = AXM_FMA(R, z, 0x1.1111111111111p-3);                                                        \
        R = AXM_FMA(R, z, 0x1.3b13b13b13b14p-3);                                                        \
        R = AXM_FMA(R, z, 0x1.745d1745d1746p-3);                                                        \
        R = AXM_FMA(R, z, 0x1.c71c71c71c71cp-3);                                                        \
        R = AXM_FMA(R, z, 0x1.2492492492492p-2);                                                        \
        R = AXM_FMA(R, z, 0x1.999999999999ap-2);                                                        \
        R = AXM_FMA(R, z, 0x1.5555555555555p-1);                                                        \
        R = R * z;                                                                                      \
        f64 hfsq = 0.5 * f * f;                                                                         \
        f64 ed = ax_f64_of((u64)0x4338000000000000 + (u64)e) - 0x1.8p52;                                \
        f64 a = AXM_FMA(ed, 0x1.a39ef35793c76p-33, s * (hfsq + R));                                     \
        f64 y = AXM_FMA(ed, 0x1.62e42feep-1, (a - hfsq) + f);                                           \
        f64 sv = x == 0.0 ? ax_f64_of((u64)0xfff0000000000000) : x > 0.0 ? x : ax_f64_of((u64)0x7ff8000000000000); \
        return ((x > 0.0) & (x < ax_f64_of((u64)0x7ff0000000000000))) ? y : sv;                         \
    }

/* The interpreter's (and the constant folder's) calls: vmath.c. */
float vm_exp_f32(float x);
float vm_log_f32(float x);
double vm_exp_f64(double x);
double vm_log_f64(double x);

#endif
