/*
 * N-body's inner loop with 1/sqrt computed five ways, timed against each
 * other in one process (not part of the build or of `make test`): the
 * measurement behind the README's "Against the peers" note on N-body.
 *
 *   div          1/sqrt as a square root and a division (axle's fast mode)
 *   vec-nofix    vrsqrtps and one Newton step, GCC vector extensions, no
 *                special values (wrong for 0, +inf, denormals)
 *   vec-branch   the same, one branch per vector to the exact path when a
 *                lane is 0, +inf, denormal, negative or NaN
 *   blk-max      the argument in a lane array, vrsqrtps and a Newton step
 *                per 8 lanes, one unsigned maximum of the results' bits per
 *                vector and one check per block of 32 (exact path then)
 *   gcc-ffast    the div loop compiled with -ffast-math (GCC's own vrsqrtps
 *                and Newton step; assumes no NaN or infinity)
 *
 * Build and run (x86-64 with AVX; the first object with axle's fast-mode
 * flags, src/backend/cpu/cpu.c CPU_FAST_CFLAGS):
 *   F="-O3 -march=native -fno-math-errno -fno-signed-zeros -fno-trapping-math \
 *      -fassociative-math -freciprocal-math -fno-finite-math-only -ffp-contract=fast"
 *   cc $F -c nbody_rsqrt.c -o k.o
 *   cc -O3 -march=native -ffast-math -DGCC_FFAST -c nbody_rsqrt.c -o f.o
 *   cc -O2 -DMAIN nbody_rsqrt.c k.o f.o -o nbody_rsqrt -lm
 *   ./nbody_rsqrt 4096 41
 * Each variant's thread CPU time per call, medians of the rounds, every
 * round calling the variants in a rotating order.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef float f32;
typedef long i64;
#define L 32
typedef void K(const f32 *restrict, const f32 *restrict, const f32 *restrict, const f32 *restrict, i64, f32 *,
               f32 *, f32 *);

/* Rows i, lanes of L consecutive j (as axle's fold), accumulators per lane. */
#define HEAD(name)                                                                                                \
    void name(const f32 *restrict px, const f32 *restrict py, const f32 *restrict pz, const f32 *restrict pm,     \
              i64 n, f32 *ax, f32 *ay, f32 *az)                                                                   \
    {                                                                                                             \
        for (i64 row = 0; row < n; row++) {                                                                       \
            f32 xi = px[row], yi = py[row], zi = pz[row], l0[L], l1[L], l2[L];                                    \
            for (int l = 0; l < L; l++) l0[l] = l1[l] = l2[l] = 0;                                                \
            for (i64 j = 0; j + L <= n; j += L) {
#define TAIL                                                                                                      \
            }                                                                                                     \
            f32 a = 0, b = 0, c = 0;                                                                              \
            for (int l = 0; l < L; l++) a += l0[l], b += l1[l], c += l2[l];                                       \
            ax[row] = a, ay[row] = b, az[row] = c;                                                                \
        }                                                                                                         \
    }
#define DIV_BODY                                                                                                  \
    for (int l = 0; l < L; l++) {                                                                                 \
        f32 dx = px[j + l] - xi, dy = py[j + l] - yi, dz = pz[j + l] - zi;                                        \
        f32 r = 1.0f / __builtin_sqrtf(0.01f + dx * dx + dy * dy + dz * dz);                                      \
        f32 s = pm[j + l] * (r * r * r);                                                                          \
        l0[l] += s * dx, l1[l] += s * dy, l2[l] += s * dz;                                                        \
    }

#if defined(GCC_FFAST)
HEAD(k_ffast) DIV_BODY TAIL
#elif !defined(MAIN)
typedef float v8 __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
typedef long long v4q __attribute__((vector_size(32)));
#define AXI static inline __attribute__((always_inline))

/* y0 = vrsqrtps(x) (|rel. error| <= 1.5 * 2^-12), then y0 (3 - x y0^2) / 2 */
AXI v8 rs_nofix(v8 x)
{
    v8 y = __builtin_ia32_rsqrtps256(x);
    v8 t = x * y;
    return (-0.5f * y) * (t * y - 3.0f);
}
AXI v8 rs_branch(v8 x)
{
    v8i ok = (x >= 0x1p-126f) & (x < __builtin_inff());
    if (__builtin_expect(__builtin_ia32_movmskps256((v8)ok) == 0xff, 1)) return rs_nofix(x);
    return 1.0f / __builtin_ia32_sqrtps256(x);
}
/* 32 lanes; a result outside the positive normal floats (NaN, an
   infinity, a sign bit) marks the block, which is then done exactly */
AXI void rs32(const f32 *in, f32 *out)
{
    v8i acc = {0};
    for (int k = 0; k < 32; k += 8) {
        v8 x, r;
        memcpy(&x, in + k, 32);
        r = rs_nofix(x);
        acc = __builtin_ia32_pmaxud256(acc, (v8i)r);
        memcpy(out + k, &r, 32);
    }
    v8i bad = (v8i)((__attribute__((vector_size(32))) unsigned)acc >= 0x7f800000u);
    if (__builtin_expect(!__builtin_ia32_ptestz256((v4q)bad, (v4q)bad), 0))
        for (int l = 0; l < 32; l++) out[l] = 1.0f / __builtin_sqrtf(in[l]);
}
#define VEC(name, RS)                                                                                             \
    HEAD(name)                                                                                                    \
    for (int k = 0; k < L; k += 8) {                                                                              \
        v8 x, y, z, m, a0, a1, a2;                                                                                \
        memcpy(&x, px + j + k, 32), memcpy(&y, py + j + k, 32), memcpy(&z, pz + j + k, 32);                        \
        memcpy(&m, pm + j + k, 32);                                                                               \
        v8 dx = x - xi, dy = y - yi, dz = z - zi;                                                                 \
        v8 r = RS(0.01f + dx * dx + dy * dy + dz * dz);                                                           \
        v8 s = m * (r * r * r);                                                                                   \
        memcpy(&a0, l0 + k, 32), memcpy(&a1, l1 + k, 32), memcpy(&a2, l2 + k, 32);                                \
        a0 += s * dx, a1 += s * dy, a2 += s * dz;                                                                 \
        memcpy(l0 + k, &a0, 32), memcpy(l1 + k, &a1, 32), memcpy(l2 + k, &a2, 32);                                \
    }                                                                                                             \
    TAIL
HEAD(k_div) DIV_BODY TAIL
VEC(k_vec_nofix, rs_nofix)
VEC(k_vec_branch, rs_branch)
HEAD(k_blk_max)
    f32 tin[L], tout[L];
    for (int l = 0; l < L; l++) {
        f32 dx = px[j + l] - xi, dy = py[j + l] - yi, dz = pz[j + l] - zi;
        tin[l] = 0.01f + dx * dx + dy * dy + dz * dz;
    }
    rs32(tin, tout);
    for (int l = 0; l < L; l++) {
        f32 dx = px[j + l] - xi, dy = py[j + l] - yi, dz = pz[j + l] - zi, r = tout[l];
        f32 s = pm[j + l] * (r * r * r);
        l0[l] += s * dx, l1[l] += s * dy, l2[l] += s * dz;
    }
TAIL
#else
K k_div, k_vec_nofix, k_vec_branch, k_blk_max, k_ffast;
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
int main(int argc, char **argv)
{
    i64 n = argc > 1 ? atol(argv[1]) : 4096;
    int rounds = argc > 2 ? atoi(argv[2]) : 21;
    if (n < L || rounds < 1 || rounds > 1000) return fprintf(stderr, "usage: nbody_rsqrt N ROUNDS\n"), 2;
    enum { NK = 5 };
    K *ks[NK] = {k_div, k_vec_nofix, k_vec_branch, k_blk_max, k_ffast};
    const char *name[NK] = {"div", "vec-nofix", "vec-branch", "blk-max", "gcc-ffast"};
    f32 *p[4], *a[NK][3];
    double *t[NK];
    srand(1);
    for (int k = 0; k < 4; k++) {
        p[k] = malloc((size_t)n * 4);
        for (i64 i = 0; i < n; i++) p[k][i] = (f32)rand() / (f32)RAND_MAX;
    }
    for (int k = 0; k < NK; k++) {
        t[k] = malloc(sizeof(double) * (size_t)rounds);
        for (int c = 0; c < 3; c++) a[k][c] = malloc((size_t)n * 4);
    }
    for (int r = 0; r < rounds; r++)
        for (int q = 0; q < NK; q++) {
            int k = (q + r) % NK;
            double t0 = now();
            ks[k](p[0], p[1], p[2], p[3], n, a[k][0], a[k][1], a[k][2]);
            t[k][r] = now() - t0;
        }
    for (int k = 0; k < NK; k++) {
        qsort(t[k], (size_t)rounds, sizeof(double), cmp);
        printf("%-11s %8.3f ms  %.3f of div   (a_x[3] = %.7g)\n", name[k], t[k][rounds / 2] * 1e3,
               t[k][rounds / 2] / t[0][rounds / 2], a[k][0][3]);
    }
    return 0;
}
#endif
