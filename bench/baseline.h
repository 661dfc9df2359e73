/*
 * The hand-written baselines of the benchmark programs.  Each
 * bench/baseline_*.c is compiled twice (CMakeLists.txt): BL(f) names f_std
 * in the build without -ffast-math and f_fast in the one with it, so one
 * source gives both variants.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_H
#define AX_BASELINE_H
#include <stdint.h>

#define AX_BL_CAT2(a, b) a##b
#define AX_BL_CAT(a, b) AX_BL_CAT2(a, b)
#ifdef AX_BL_SUFFIX
#define BL(f) AX_BL_CAT(f, AX_BL_SUFFIX)

/* glibc's math.h declares its vector maths (libmvec) only under
 * -ffast-math; a performance engineer declares expf and logf `omp declare
 * simd` by hand so that the std build's loops vectorise too (the same
 * libmvec axle's generated code calls).  Use at file scope, after
 * <math.h>. */
#if defined(_OPENMP) && !defined(__FAST_MATH__) && defined(__x86_64__) && defined(__GLIBC__)
#define AX_BL_SIMD_EXPLOG \
    _Pragma("omp declare simd notinbranch") extern float expf(float); \
    _Pragma("omp declare simd notinbranch") extern float logf(float);
#else
#define AX_BL_SIMD_EXPLOG
#endif

#endif

/* Declares both variants of a baseline function. */
#define BL_DECLARE(ret, f, args) ret f##_std args; ret f##_fast args;

#endif
