/*
 * The floating-point maths functions across backends.
 *
 * The interpreter computes sin, cos, pow, ... with the C library (libm);
 * the CPU backend with glibc's vector library (libmvec), whose results may
 * differ in the last bits.  exp, log and logbase are axle's own on both
 * (src/core/vmath.h; tests/test_vmath.c): their bound is 0.  Two promises
 * are tested here:
 *
 *  - Position: a result does not depend on where its element sits.  The
 *    same input gives the same bits in a vector loop's body and its tail,
 *    in scalar code (a scan's loop, a thunk) and across chunk boundaries.
 *
 *  - Tolerance: per function and type, the largest difference from the
 *    interpreter, in units in the last place, over inputs across each
 *    function's domain and the special values, is at most the stated
 *    bound below (measured, with margin, on AVX-512, AVX2 and SSE code:
 *    the test prints the measured table).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "programs.h"
#include <stdlib.h>
#include <string.h>

typedef struct Fn {
    const char *name;
    ax_exp (*f1)(ax_exp);
    ax_exp (*f2)(ax_exp, ax_exp);
    double lo, hi;            /* the interesting part of the domain (first operand) */
    int ulp32, ulp64;         /* the stated tolerances, f32 and f64 */
} Fn;

static ax_exp logbase_(ax_exp b, ax_exp x) { return ax_logbase(b, x); }

/* The stated tolerances (ulp): the largest differences measured (below;
 * `test_mathfns` prints them) on the generated code for AVX-512, AVX2 and
 * SSE2, plus one for other CPUs and glibc versions.  logbase is
 * log x / log b in both backends: the errors of two logs and a division
 * (the review saw 7 ulp in f32), so its bound is two logs' plus one.
 *                         measured max      stated
 *             f32  f64       f32 f64       f32 f64 */
static const Fn fns[] = {
    {"exp", ax_exp_, NULL, -80, 80, /* 0 0 */ 0, 0},
    {"log", ax_log, NULL, 1e-30, 1e30, /* 0 0 */ 0, 0},
    {"sin", ax_sin, NULL, -100, 100, /* 2 3 */ 3, 4},
    {"cos", ax_cos, NULL, -100, 100, /* 2 3 */ 3, 4},
    {"tan", ax_tan, NULL, -100, 100, /* 3 3 */ 4, 4},
    {"asin", ax_asin, NULL, -1, 1, /* 3 2 */ 4, 3},
    {"acos", ax_acos, NULL, -1, 1, /* 2 2 */ 3, 3},
    {"atan", ax_atan, NULL, -1e4, 1e4, /* 1 1 */ 2, 2},
    {"sinh", ax_sinh, NULL, -80, 80, /* 2 2 */ 3, 3},
    {"cosh", ax_cosh, NULL, -80, 80, /* 2 2 */ 3, 3},
    {"tanh", ax_tanh, NULL, -20, 20, /* 2 2 */ 3, 3},
    {"asinh", ax_asinh, NULL, -1e4, 1e4, /* 1 1 */ 2, 2},
    {"acosh", ax_acosh, NULL, 1, 1e4, /* 1 2 */ 2, 3},
    {"atanh", ax_atanh, NULL, -1, 1, /* 2 2 */ 3, 3},
    {"pow", NULL, ax_pow, 0, 50, /* 1 1 */ 2, 2},
    {"atan2", NULL, ax_atan2, -1e3, 1e3, /* 2 2 */ 3, 3},
    {"logbase", NULL, logbase_, 0, 1e6, /* 0 0 */ 0, 0},
};
#define NFNS ((int)(sizeof fns / sizeof *fns))

/* ------------------------------------------------------------ ulps */

static int64_t ord32(float x)
{
    int32_t i;
    memcpy(&i, &x, 4);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
}
static int64_t ord64(double x)
{
    int64_t i;
    memcpy(&i, &x, 8);
    return i < 0 ? INT64_MIN - i : i;
}
static int64_t ulps32(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT64_MAX;
    int64_t d = ord32(a) - ord32(b);
    return d < 0 ? -d : d;
}
static int64_t ulps64(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT64_MAX;
    if ((a < 0) != (b < 0) && a != b) return INT64_MAX;   /* opposite signs: no overflow of the difference */
    int64_t d = ord64(a) - ord64(b);
    return d < 0 ? -d : d;
}

/* ------------------------------------------------------------ inputs */

enum { NIN = 6000 };

/* Inputs for fn: uniform over its domain, log-spread magnitudes over the
 * whole range, and the special values; the second operand of binary
 * functions likewise. */
static void make_inputs(const Fn *fn, double *x, double *y, uint64_t seed)
{
    ex_rng r = {seed | 1};
    static const double special[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, INFINITY, -INFINITY, NAN, 1e-40, -1e-40,
                                     4.9e-324, 1e-310, 3.4e38, -3.4e38, 1e300, 1e-300, 0.1, 3.14159265358979,
                                     1.5707963267948966, 700, -700, 88.7, -103.9};
    int ns = (int)(sizeof special / sizeof *special);
    for (int i = 0; i < NIN; i++) {
        double a, b;
        if (i < ns) {
            a = special[i];
            b = special[(i * 7 + 3) % ns];
        } else if (i % 3) {
            a = ex_uniform(&r, fn->lo, fn->hi);
            b = fn->f2 == ax_pow ? ex_uniform(&r, -20, 20) : ex_uniform(&r, fn->lo, fn->hi);
        } else {
            a = pow(10, ex_uniform(&r, -38, 38)) * (ex_next(&r) & 1 ? -1 : 1);
            b = pow(10, ex_uniform(&r, -38, 38)) * (ex_next(&r) & 1 ? -1 : 1);
        }
        if (fn->f2 == logbase_) {   /* logbase b x: a base near 1 is ill-conditioned; spread bases instead */
            b = a;
            a = i < ns ? special[(i * 5 + 1) % ns] : ex_uniform(&r, 1.5, 100);
        }
        x[i] = a;
        y[i] = b;
    }
}

/* ------------------------------------------------------------ running */

typedef struct Env { const Fn *fn; } Env;

static ax_exp apply1(ax_exp x, void *env) { return ((Env *)env)->fn->f1(x); }
static ax_exp apply2(ax_exp x, ax_exp y, void *env) { return ((Env *)env)->fn->f2(x, y); }

/* fn over the inputs (f32 or f64) on a backend; results into out. */
static bool run_fn(ax_backend_kind be, const char *cflags, const Fn *fn, bool f64, const double *x, const double *y,
                   void *out)
{
    ax_options o = {0};
    o.backend = be;
    o.cflags = cflags;
    ax_ctx *cx = ax_ctx_new(&o);
    int64_t n = NIN;
    ax_array *ax, *ay;
    if (f64) {
        ax = ax_array_from(cx, AX_F64, 1, &n, x);
        ay = ax_array_from(cx, AX_F64, 1, &n, y);
    } else {
        float *fx = malloc(sizeof *fx * NIN), *fy = malloc(sizeof *fy * NIN);
        for (int i = 0; i < NIN; i++) {
            fx[i] = (float)x[i];
            fy[i] = (float)y[i];
        }
        ax = ax_array_from(cx, AX_F32, 1, &n, fx);
        ay = ax_array_from(cx, AX_F32, 1, &n, fy);
        free(fx);
        free(fy);
    }
    Env env = {fn};
    ax_acc a = fn->f1 ? ax_map(apply1, &env, ax_use(cx, ax)) : ax_zip_with(apply2, &env, ax_use(cx, ax), ax_use(cx, ay));
    ax_array *r = ax_run(cx, a);
    bool ok = r != NULL;
    if (ok) memcpy(out, ax_array_data(r, 0), (f64 ? 8 : 4) * (size_t)NIN);
    else fprintf(stderr, "%s: %s\n", fn->name, ax_error(cx));
    ax_array_release(r);
    ax_array_release(ax);
    ax_array_release(ay);
    ax_ctx_free(cx);
    return ok;
}

/* The largest difference between the backends for fn, or -1. */
static int64_t max_ulps(const Fn *fn, bool f64, const char *cflags, double *worst_x)
{
    double *x = malloc(sizeof *x * NIN), *y = malloc(sizeof *y * NIN);
    double *ri = malloc(8 * NIN), *rc = malloc(8 * NIN);
    make_inputs(fn, x, y, 0x5DEECE66Dull + (uint64_t)(fn - fns));
    int64_t worst = -1;
    if (run_fn(AX_BACKEND_INTERP, NULL, fn, f64, x, y, ri) && run_fn(AX_BACKEND_CPU, cflags, fn, f64, x, y, rc)) {
        worst = 0;
        for (int i = 0; i < NIN; i++) {
            int64_t d = f64 ? ulps64(ri[i], rc[i]) : ulps32(((float *)ri)[i], ((float *)rc)[i]);
            if (d > worst) {
                worst = d;
                *worst_x = x[i];
            }
        }
    }
    free(x);
    free(y);
    free(ri);
    free(rc);
    return worst;
}

static bool cpu_available(void)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    ax_ctx *cx = ax_ctx_new(&o);
    ax_array *r = ax_run(cx, ax_unit(cx, ax_i32(1)));
    bool ok = r != NULL;
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

/* Each vector instruction set the generated code may target (the CPU
 * backend compiles for the host; these flags pick a narrower one). */
static const char *const isas[] = {NULL, "-march=x86-64-v3", "-march=x86-64"};
static const char *const isa_names[] = {"native", "avx2", "sse2"};

TEST(maths_within_the_stated_tolerance_of_the_interpreter)
{
    if (!cpu_available()) {
        printf("note: no CPU backend here; skipped\n");
        return;
    }
#if !defined(__x86_64__)
    int nisa = 1;
#else
    int nisa = 3;
#endif
    printf("%-8s %-6s", "function", "type");
    for (int k = 0; k < nisa; k++) printf(" %8s", isa_names[k]);
    printf("  stated\n");
    for (int i = 0; i < NFNS; i++)
        for (int f64 = 0; f64 < 2; f64++) {
            int stated = f64 ? fns[i].ulp64 : fns[i].ulp32;
            printf("%-8s %-6s", fns[i].name, f64 ? "f64" : "f32");
            for (int k = 0; k < nisa; k++) {
                double wx = 0;
                int64_t u = max_ulps(&fns[i], f64, isas[k], &wx);
                printf(" %8lld", (long long)u);
                CHECKF(u >= 0 && u <= stated, "%s %s (%s): %lld ulp at x = %a, stated %d", fns[i].name,
                       f64 ? "f64" : "f32", isa_names[k], (long long)u, wx, stated);
            }
            printf("  %6d\n", stated);
        }
}

/* ------------------------------------------------------------ position */

static ax_exp ignore_acc(ax_exp acc, ax_exp x, void *env)
{
    (void)acc;
    return ((Env *)env)->fn->f1(x);
}

TEST(maths_results_do_not_depend_on_position)
{
    if (!cpu_available()) {
        printf("note: no CPU backend here; skipped\n");
        return;
    }
    static const double vals[] = {0.5, 1e-3, 3.0, 7.25, -2.75, 100.5};
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.threads = 3;   /* chunks of odd sizes: several bodies and tails */
    ax_ctx *cx = ax_ctx_new(&o);
    int n = 100007;   /* 1031 rows of 97 */
    float *xf = malloc(sizeof *xf * (size_t)n);
    double *xd = malloc(sizeof *xd * (size_t)n);
    int checked = 0;
    for (int i = 0; i < NFNS; i++) {
        if (!fns[i].f1) continue;
        Env env = {&fns[i]};
        for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
            double x0 = vals[v];
            if (x0 < fns[i].lo || x0 > fns[i].hi) x0 = (fns[i].lo + fns[i].hi) / 2 + 0.125;
            for (int f64 = 0; f64 < 2; f64++) {
                for (int k = 0; k < n; k++) {
                    xf[k] = (float)x0;
                    xd[k] = x0;
                }
                int64_t sh = n;
                ax_array *a = ax_array_from(cx, f64 ? AX_F64 : AX_F32, 1, &sh, f64 ? (void *)xd : (void *)xf);
                ax_acc xs = ax_use(cx, a);
                ax_exp c = ax_const(cx, f64 ? ax_f64(x0) : ax_f32((float)x0));
                ax_array *m = ax_run(cx, ax_map(apply1, &env, xs));               /* vector loop and tails */
                /* a scalar loop: scanl over rows of 97 (one chunk each, so
                 * the operator, which ignores the carry, needs no
                 * associativity): [r][k+1] is f of element k */
                ax_acc rows = ax_reshape(ax_ix2(ax_i64(n / 97), ax_i64(97)), xs);
                ax_array *s = ax_run(cx, ax_scanl(ignore_acc, &env, f64 ? ax_f64(0) : ax_f32(0), rows));
                ax_array *u = ax_run(cx, ax_unit(cx, fns[i].f1(c)));              /* a thunk */
                REQUIRE(m && s && u);
                size_t w = f64 ? 8 : 4;
                const char *pm = ax_array_data(m, 0), *ps = ax_array_data(s, 0), *pu = ax_array_data(u, 0);
                int bad = 0;
                for (int k = 0; k < n; k++) bad += memcmp(pm + (size_t)k * w, pu, w) != 0;
                for (int k = 0; k < (n / 97) * 98; k++) bad += k % 98 && memcmp(ps + (size_t)k * w, pu, w) != 0;
                CHECKF(bad == 0, "%s %s (%g): %d of %d elements differ from the scalar result", fns[i].name,
                       f64 ? "f64" : "f32", x0, bad, n);
                checked++;
                ax_array_release(m);
                ax_array_release(s);
                ax_array_release(u);
                ax_array_release(a);
                ax_ctx_reset(cx);
            }
        }
    }
    printf("position: %d function/type/value cases, %d elements each, in a map, a scan and a thunk\n", checked, n);
    free(xf);
    free(xd);
    ax_ctx_free(cx);
}
