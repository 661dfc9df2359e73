/*
 * axle's own exp and log (vmath.h) compiled for the interpreter and the
 * constant folder (prim.c): the same text the backends' code contains.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "vmath.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float f32;
typedef double f64;
typedef int32_t i32;
typedef int64_t i64;
typedef uint32_t u32;
typedef uint64_t u64;

#define AXI static inline
/* fma and fmaf are exact (one rounding) wherever they run, in hardware or
 * in the C library, so the interpreter computes the backends' bits. */
#define AXM_FMA fma
#define AXM_FMAF fmaf

static inline u32 ax_bits_f32(f32 x)
{
    u32 r;
    memcpy(&r, &x, sizeof r);
    return r;
}

static inline f32 ax_f32_of(u32 b)
{
    f32 r;
    memcpy(&r, &b, sizeof r);
    return r;
}

static inline u64 ax_bits_f64(f64 x)
{
    u64 r;
    memcpy(&r, &x, sizeof r);
    return r;
}

static inline f64 ax_f64_of(u64 b)
{
    f64 r;
    memcpy(&r, &b, sizeof r);
    return r;
}

AXM_TEXT_F32
AXM_TEXT_F64

float vm_exp_f32(float x) { return ax_exp_f32(x); }
float vm_log_f32(float x) { return ax_log_f32(x); }
double vm_exp_f64(double x) { return ax_exp_f64(x); }
double vm_log_f64(double x) { return ax_log_f64(x); }
