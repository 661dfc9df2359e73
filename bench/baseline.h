/*
 * The hand-written baselines of the benchmark programs (issue 5).  Each
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
#endif

/* Declares both variants of a baseline function. */
#define BL_DECLARE(ret, f, args) ret f##_std args; ret f##_fast args;

#endif
