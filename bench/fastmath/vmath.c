/*
 * axle's own exp and log (src/core/vmath.h, the text the exact modes'
 * kernels inline) against glibc's vector library (libmvec, which the fast
 * modes call), in a vectorised loop over 4,096 elements in cache, one
 * thread: nanoseconds per element, medians of 15 rounds, the two
 * interleaved.  Not part of the build or of `make test`; the measurement
 * behind the fast modes' choice of libmvec (src/backend/cgen/exp.c,
 * math_fn).  The library's loops are compiled apart with -ffast-math
 * (glibc's <math.h> declares the vector versions only then):
 *
 *   cc -O3 -march=native -ffast-math -fopenmp-simd -c -DLIB vmath.c -o lib.o
 *   cc -O3 -march=native -fno-math-errno -fno-trapping-math -ffp-contract=off \
 *      -I../../src vmath.c lib.o -o vmath -lmvec -lm && ./vmath
 *
 * (-march=x86-64-v3 for AVX2's code; both object files alike.)
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <math.h>
#include <stdint.h>

enum { N = 4096 };

#ifdef LIB
void lib_expf(const float *x, float *y)
{
#pragma omp simd
    for (int i = 0; i < N; i++) y[i] = expf(x[i]);
}
void lib_logf(const float *x, float *y)
{
#pragma omp simd
    for (int i = 0; i < N; i++) y[i] = logf(x[i]);
}
void lib_exp(const double *x, double *y)
{
#pragma omp simd
    for (int i = 0; i < N; i++) y[i] = exp(x[i]);
}
void lib_log(const double *x, double *y)
{
#pragma omp simd
    for (int i = 0; i < N; i++) y[i] = log(x[i]);
}
#else
#include "core/vmath.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef float f32;
typedef double f64;
typedef int32_t i32;
typedef int64_t i64;
typedef uint32_t u32;
typedef uint64_t u64;
/* as the CPU backend's prelude defines them (cpu/codegen.c) */
#define AXI static inline __attribute__((always_inline, unused))
#define AXM_FMA __builtin_fma
#define AXM_FMAF __builtin_fmaf
AXI u32 ax_bits_f32(f32 x) { u32 r; __builtin_memcpy(&r, &x, 4); return r; }
AXI f32 ax_f32_of(u32 b) { f32 r; __builtin_memcpy(&r, &b, 4); return r; }
AXI u64 ax_bits_f64(f64 x) { u64 r; __builtin_memcpy(&r, &x, 8); return r; }
AXI f64 ax_f64_of(u64 b) { f64 r; __builtin_memcpy(&r, &b, 8); return r; }
AXM_TEXT_F32
AXM_TEXT_F64

void lib_expf(const float *x, float *y);
void lib_logf(const float *x, float *y);
void lib_exp(const double *x, double *y);
void lib_log(const double *x, double *y);

__attribute__((noinline)) static void own_expf(const float *x, float *y) { for (int i = 0; i < N; i++) y[i] = ax_exp_f32(x[i]); }
__attribute__((noinline)) static void own_logf(const float *x, float *y) { for (int i = 0; i < N; i++) y[i] = ax_log_f32(x[i]); }
__attribute__((noinline)) static void own_exp(const double *x, double *y) { for (int i = 0; i < N; i++) y[i] = ax_exp_f64(x[i]); }
__attribute__((noinline)) static void own_log(const double *x, double *y) { for (int i = 0; i < N; i++) y[i] = ax_log_f64(x[i]); }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { ROUNDS = 15, REPS = 2000 };

int main(void)
{
    static float xf[N], yf[N];
    static double xd[N], yd[N];
    for (int i = 0; i < N; i++) {
        xd[i] = 0.25 + 40.0 * i / N;   /* exp and log of the same positive values */
        xf[i] = (float)xd[i];
    }
    typedef void (*ff)(const float *, float *);
    typedef void (*fd)(const double *, double *);
    struct { const char *name; ff own_f, lib_f; fd own_d, lib_d; } fns[] = {
        {"expf", own_expf, lib_expf, NULL, NULL}, {"logf", own_logf, lib_logf, NULL, NULL},
        {"exp", NULL, NULL, own_exp, lib_exp}, {"log", NULL, NULL, own_log, lib_log}};
    printf("%-5s %10s %10s %7s   (ns per element, medians of %d)\n", "fn", "axle", "libmvec", "ratio", ROUNDS);
    for (int k = 0; k < 4; k++) {
        double t[2][ROUNDS];
        for (int r = 0; r < ROUNDS; r++)
            for (int w = 0; w < 2; w++) {
                double t0 = now();
                for (int q = 0; q < REPS; q++) {
                    if (fns[k].own_f) (w ? fns[k].lib_f : fns[k].own_f)(xf, yf);
                    else (w ? fns[k].lib_d : fns[k].own_d)(xd, yd);
                    __asm__ volatile("" ::"r"(yf), "r"(yd) : "memory");
                }
                t[w][r] = (now() - t0) * 1e9 / ((double)REPS * N);
            }
        qsort(t[0], ROUNDS, sizeof(double), cmp);
        qsort(t[1], ROUNDS, sizeof(double), cmp);
        printf("%-5s %10.3f %10.3f %6.2fx\n", fns[k].name, t[0][ROUNDS / 2], t[1][ROUNDS / 2],
               t[0][ROUNDS / 2] / t[1][ROUNDS / 2]);
    }
    return 0;
}
#endif
