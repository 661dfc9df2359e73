/*
 * The relaxed floating-point modes (ax_options.fast_math, and finite_math,
 * which also assumes no NaN or infinity) against the exact mode, on every
 * compiled backend that runs here: each bound the header states, on random
 * inputs (finite ones for finite_math), and what fast mode keeps (NaN,
 * infinities, comparisons, conversions, the maths functions' results).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include <float.h>
#include <stdlib.h>
#include <string.h>

enum { N = 100003 };   /* past several vector widths and chunks */

static const ax_backend_kind kinds[] = {AX_BACKEND_CPU, AX_BACKEND_OPENCL};

/* A context, or NULL (with a note) when the backend cannot run here.
 * fast: 0 exact, 1 fast_math, FINITE finite_math. */
enum { FINITE = 2 };
static ax_ctx *open_ctx(ax_backend_kind k, int fast)
{
    ax_options o = {0};
    o.backend = k;
    o.fast_math = fast > 0;
    o.finite_math = fast == FINITE;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) return NULL;
    ax_array *r = ax_run(cx, ax_unit(cx, ax_i32(1)));
    if (!r) {
        fprintf(stderr, "note: backend %d skipped: %s\n", (int)k, ax_error(cx));
        ax_ctx_free(cx);
        return NULL;
    }
    ax_array_release(r);
    return cx;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* Random f32 and f64 inputs of mixed magnitudes and signs. */
static void fill(float *f, double *d, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++) {
        double m = uniform(lo, hi) * (uniform(0, 1) < 0.5 ? -1 : 1);
        d[i] = m * pow(2, (int)uniform(-20, 20));
        f[i] = (float)d[i];
    }
}

typedef ax_acc (*Build)(ax_ctx *cx, ax_acc *in, void *env);

/* Runs build over the three inputs (as use'd arrays of s) and copies the
 * result's n values (of s) out; false when it did not run. */
static bool run3(ax_ctx *cx, ax_scalar s, void *const in[3], int64_t n, Build b, void *env, void *out, int64_t m)
{
    ax_acc a[3];
    for (int i = 0; i < 3; i++) a[i] = ax_use(cx, ax_array_wrap(cx, s, 1, &n, in[i]));
    ax_array *r = ax_run(cx, b(cx, a, env));
    if (!r) {
        fprintf(stderr, "run: %s\n", ax_error(cx));
        return false;
    }
    memcpy(out, ax_array_data(r, 0), (size_t)m * (s == AX_F32 ? 4 : s == AX_F64 ? 8 : 1));
    ax_array_release(r);
    return true;
}

static ax_exp e_div(ax_exp x, ax_exp y, void *env) { (void)env; return ax_div(x, y); }
static ax_exp e_fma(ax_exp a, ax_exp b, ax_exp c, void *env) { (void)env; return ax_add(ax_mul(a, b), c); }
static ax_exp e_cancel(ax_exp x, ax_exp y, void *env) { (void)env; return ax_sub(ax_add(x, y), y); }

static ax_acc b_div(ax_ctx *cx, ax_acc *a, void *env) { (void)cx; return ax_zip_with(e_div, env, a[0], a[1]); }
static ax_acc b_fma(ax_ctx *cx, ax_acc *a, void *env) { (void)cx; return ax_zip_with3(e_fma, env, a[0], a[1], a[2]); }
static ax_acc b_cancel(ax_ctx *cx, ax_acc *a, void *env) { (void)cx; return ax_zip_with(e_cancel, env, a[0], a[1]); }

/* Bound of each case: the header's, times u, for element i. */
typedef double (*Bound)(const double *x, const double *y, const double *z, double exact);
static double bd_div(const double *x, const double *y, const double *z, double e) { (void)x, (void)y, (void)z; return 2 * fabs(e); }
static double bd_fma(const double *a, const double *b, const double *c, double e) { (void)e; return 3 * (fabs(*a * *b) + fabs(*c)); }
static double bd_cancel(const double *x, const double *y, const double *z, double e) { (void)z, (void)e; return 2 * (fabs(*x) + fabs(*y)); }

TEST(fast_mode_within_the_stated_bounds_of_exact_mode)
{
    static float fin[3][N];
    static double din[3][N];
    for (int i = 0; i < 3; i++) fill(fin[i], din[i], N, 1, 2);
    struct { const char *name; Build b; Bound bound; } cases[] = {
        {"x/y", b_div, bd_div}, {"a*b+c", b_fma, bd_fma}, {"(x+y)-y", b_cancel, bd_cancel},
    };
    static float fo[2][N];
    static double dout[2][N];
    for (size_t kl = 0; kl < 2 * sizeof kinds / sizeof *kinds; kl++) {
        size_t k = kl / 2;
        int level = kl % 2 ? FINITE : 1;   /* the inputs are finite: both levels' bounds hold */
        ax_ctx *ex = open_ctx(kinds[k], 0), *fa = open_ctx(kinds[k], level);
        if (!ex || !fa) {
            ax_ctx_free(ex), ax_ctx_free(fa);
            continue;
        }
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            for (int t = 0; t < 2; t++) {
                ax_scalar s = t ? AX_F64 : AX_F32;
                void *in[3] = {t ? (void *)din[0] : (void *)fin[0], t ? (void *)din[1] : (void *)fin[1],
                               t ? (void *)din[2] : (void *)fin[2]};
                void *o0 = t ? (void *)dout[0] : (void *)fo[0], *o1 = t ? (void *)dout[1] : (void *)fo[1];
                REQUIRE(run3(ex, s, in, N, cases[c].b, NULL, o0, N));
                REQUIRE(run3(fa, s, in, N, cases[c].b, NULL, o1, N));
                double u = t ? DBL_EPSILON / 2 : FLT_EPSILON / 2, worst = 0;
                int64_t bad = 0, differ = 0;
                for (int64_t i = 0; i < N; i++) {
                    double e = t ? dout[0][i] : fo[0][i], f = t ? dout[1][i] : fo[1][i];
                    double x = t ? din[0][i] : fin[0][i], y = t ? din[1][i] : fin[1][i], z = t ? din[2][i] : fin[2][i];
                    double lim = u * cases[c].bound(&x, &y, &z, e);
                    double err = fabs(f - e);
                    if (err != 0) differ++;
                    if (!(err <= lim)) bad++;
                    if (lim > 0 && err / lim > worst) worst = err / lim;
                }
                CHECKF(bad == 0, "backend %d %s, %s (%s): %lld of %d beyond the bound", (int)kinds[k],
                       level == FINITE ? "finite" : "fast", cases[c].name, t ? "f64" : "f32", (long long)bad, N);
                fprintf(stderr, "%s math, backend %d, %-8s %s: %6lld of %d differ from exact, worst %.2f of the bound\n",
                        level == FINITE ? "finite" : "fast", (int)kinds[k], cases[c].name, t ? "f64" : "f32",
                        (long long)differ, N, worst);
            }
        }
        ax_ctx_free(ex);
        ax_ctx_free(fa);
    }
}

static ax_exp e_special(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    /* NaN tests, infinities, comparisons and conversions must survive */
    ax_exp isnan = ax_ne(x, x);
    ax_exp big = ax_gt(ax_abs(x), ax_f32(1e38f));
    ax_exp lt = ax_lt(x, y);
    ax_exp cv = ax_cvt(ax_cvt(x, AX_I32), AX_F32);
    return ax_add(ax_add(ax_cond(isnan, ax_f32(1000), ax_f32(0)), ax_cond(big, ax_f32(100), ax_f32(0))),
                  ax_add(ax_cond(lt, ax_f32(10), ax_f32(0)), ax_mul(cv, ax_f32(0.5f))));
}

static ax_exp e_exp(ax_exp x, void *env) { (void)env; return ax_add(ax_exp_(x), ax_sin(x)); }

static ax_acc b_special(ax_ctx *cx, ax_acc *a, void *env) { (void)cx; return ax_zip_with(e_special, env, a[0], a[1]); }
static ax_acc b_maths(ax_ctx *cx, ax_acc *a, void *env) { (void)cx; return ax_map(e_exp, env, a[0]); }

TEST(fast_mode_keeps_nan_infinities_comparisons_and_maths)
{
    static float x[N], y[N], z[N], r0[N], r1[N];
    static double d[3][N];
    fill(x, d[0], N, 0, 100);
    fill(y, d[1], N, 0, 100);
    for (int64_t i = 0; i < N; i += 17) x[i] = NAN;
    for (int64_t i = 5; i < N; i += 23) x[i] = (i & 1) ? INFINITY : -INFINITY;
    for (int64_t i = 0; i < N; i++) z[i] = fabsf(y[i]) < 80 ? y[i] / 16 : 1;   /* exp's range */
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        ax_ctx *ex = open_ctx(kinds[k], 0), *fa = open_ctx(kinds[k], 1);
        if (!ex || !fa) {
            ax_ctx_free(ex), ax_ctx_free(fa);
            continue;
        }
        void *in[3] = {x, y, y};
        REQUIRE(run3(ex, AX_F32, in, N, b_special, NULL, r0, N));
        REQUIRE(run3(fa, AX_F32, in, N, b_special, NULL, r1, N));
        CHECKF(!memcmp(r0, r1, sizeof r0), "backend %d: NaN, infinity, comparison or conversion changed", (int)kinds[k]);
        void *zin[3] = {z, z, z};
        REQUIRE(run3(ex, AX_F32, zin, N, b_maths, NULL, r0, N));
        REQUIRE(run3(fa, AX_F32, zin, N, b_maths, NULL, r1, N));
        int64_t bad = 0;
        for (int64_t i = 0; i < N; i++)
            if (!(fabsf(r0[i] - r1[i]) <= 2 * FLT_EPSILON * (fabsf(r0[i]) + 1))) bad++;
        CHECKF(bad == 0, "backend %d: exp + sin moved by more than the add's rounding in %lld places", (int)kinds[k],
               (long long)bad);
        ax_ctx_free(ex);
        ax_ctx_free(fa);
    }
}

/* Each maths function alone, and 1/sqrt(x), in fast mode against the
 * exact mode, on f32 and f64, special values included: the header's claims
 * that sin, cos, pow and sqrt are unchanged (bit for bit: both modes call
 * the same vector library), that exp and log (the C library's on the CPU
 * in fast mode, axle's own in the exact mode) are within 5 ulp, and on
 * OpenCL (axle's own in both) unchanged, and that 1/sqrt(x) stays a square
 * root and a division (within x/y's bound; no approximate reciprocal
 * square root).  NaN where exact mode has NaN, the same infinities. */
enum { MF_EXP, MF_LOG, MF_SIN, MF_COS, MF_POW, MF_SQRT, MF_RSQRT, MF_N };
static const char *const mf_name[MF_N] = {"exp", "log", "sin", "cos", "pow", "sqrt", "1/sqrt"};

static ax_exp e_mf(ax_exp x, ax_exp y, void *env)
{
    const int *k = env;   /* {function, f64} */
    switch (k[0]) {
    case MF_EXP: return ax_exp_(x);
    case MF_LOG: return ax_log(x);
    case MF_SIN: return ax_sin(x);
    case MF_COS: return ax_cos(x);
    case MF_POW: return ax_pow(ax_abs(x), y);
    case MF_SQRT: return ax_sqrt(x);
    default: return ax_div(k[1] ? ax_f64(1) : ax_f32(1), ax_sqrt(x));
    }
}
static ax_acc b_mf(ax_ctx *cx, ax_acc *a, void *env) { (void)cx; return ax_zip_with(e_mf, env, a[0], a[1]); }

TEST(fast_mode_keeps_the_maths_functions_and_sqrt)
{
    static float fx[N], fy[N], fo[2][N];
    static double dx[N], dy[N], dout[2][N];
    fill(fx, dx, N, 0, 4);
    fill(fy, dy, N, 0, 2);
    /* special values: zeros, infinities, NaN, denormals, huge */
    static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 0x1p-140, -0x1p-140, 0x1p-1070, 1e30, -1e30};
    for (int64_t i = 0; i < N; i += 97) {
        double v = sp[(i / 97) % (sizeof sp / sizeof *sp)];
        dx[i] = v;
        fx[i] = (float)v;
    }
    for (size_t b = 0; b < sizeof kinds / sizeof *kinds; b++) {
        ax_ctx *ex = open_ctx(kinds[b], 0), *fa = open_ctx(kinds[b], 1);
        if (!ex || !fa) {
            ax_ctx_free(ex), ax_ctx_free(fa);
            continue;
        }
        for (int f = 0; f < MF_N; f++)
            for (int t = 0; t < 2; t++) {
                int env[2] = {f, t};
                ax_scalar s = t ? AX_F64 : AX_F32;
                void *in[3] = {t ? (void *)dx : (void *)fx, t ? (void *)dy : (void *)fy, t ? (void *)dy : (void *)fy};
                void *o0 = t ? (void *)dout[0] : (void *)fo[0], *o1 = t ? (void *)dout[1] : (void *)fo[1];
                REQUIRE(run3(ex, s, in, N, b_mf, env, o0, N));
                REQUIRE(run3(fa, s, in, N, b_mf, env, o1, N));
                double u = t ? DBL_EPSILON / 2 : FLT_EPSILON / 2;
                int64_t bad = 0, first = -1;
                for (int64_t i = 0; i < N; i++) {
                    double e = t ? dout[0][i] : fo[0][i], g = t ? dout[1][i] : fo[1][i];
                    bool ok;
                    if (isnan(e) || isnan(g)) ok = isnan(e) && isnan(g);
                    else if (f == MF_RSQRT) ok = isinf(e) ? g == e : fabs(g - e) <= 2 * u * fabs(e);
                    /* the CPU's exp and log: the C library's in the fast
                       modes, axle's own in the exact mode (header: 5 ulp,
                       at most 10u|exact|) */
                    else if ((f == MF_EXP || f == MF_LOG) && kinds[b] == AX_BACKEND_CPU)
                        ok = isinf(e) || e == 0 ? g == e
                                                : fabs(g - e) <= fmax(10 * u * fabs(e), 5 * (t ? 0x1p-1074 : 0x1p-149));
                    else ok = memcmp(&e, &g, sizeof e) == 0 || (e == 0 && g == 0);   /* the sign of a zero may go */
                    if (!ok && bad++ == 0) first = i;
                }
                CHECKF(bad == 0, "backend %d, %s (%s): %lld of %d differ from exact mode, first at %lld (x = %.9g: "
                       "%.9g against %.9g)", (int)kinds[b], mf_name[f], t ? "f64" : "f32", (long long)bad, N,
                       (long long)first, first < 0 ? 0.0 : t ? dx[first] : fx[first],
                       first < 0 ? 0.0 : t ? dout[1][first] : fo[1][first],
                       first < 0 ? 0.0 : t ? dout[0][first] : fo[0][first]);
            }
        ax_ctx_free(ex);
        ax_ctx_free(fa);
    }
}

/* finite_math: each maths function, sqrt and 1/sqrt on finite inputs
 * whose results are finite (positive normals; exp's argument within
 * [-80, 80]; pow of a positive base to a power within [-2, 2]) against
 * the exact mode: the header's 6.2u|exact| for f32 sqrt and 1/sqrt (an
 * approximate reciprocal square root and a Newton step), x/y's 2u for f64
 * 1/sqrt, and the others bit for bit. */
TEST(finite_mode_within_its_bounds_on_finite_values)
{
    static float fx[N], fy[N], fe[N], fo[2][N];
    static double dx[N], dy[N], de[N], dout[2][N];
    for (int64_t i = 0; i < N; i++) {
        dx[i] = uniform(0.001, 4) * pow(2, (int)uniform(-20, 20));
        dy[i] = uniform(-2, 2);
        de[i] = uniform(-80, 80);
        fx[i] = (float)dx[i], fy[i] = (float)dy[i], fe[i] = (float)de[i];
    }
    for (size_t b = 0; b < sizeof kinds / sizeof *kinds; b++) {
        ax_ctx *ex = open_ctx(kinds[b], 0), *fi = open_ctx(kinds[b], FINITE);
        if (!ex || !fi) {
            ax_ctx_free(ex), ax_ctx_free(fi);
            continue;
        }
        for (int f = 0; f < MF_N; f++)
            for (int t = 0; t < 2; t++) {
                int env[2] = {f, t};
                ax_scalar s = t ? AX_F64 : AX_F32;
                void *x = f == MF_EXP ? (t ? (void *)de : (void *)fe) : t ? (void *)dx : (void *)fx;
                void *in[3] = {x, t ? (void *)dy : (void *)fy, t ? (void *)dy : (void *)fy};
                void *o0 = t ? (void *)dout[0] : (void *)fo[0], *o1 = t ? (void *)dout[1] : (void *)fo[1];
                REQUIRE(run3(ex, s, in, N, b_mf, env, o0, N));
                REQUIRE(run3(fi, s, in, N, b_mf, env, o1, N));
                double u = t ? DBL_EPSILON / 2 : FLT_EPSILON / 2, worst = 0;
                bool lib = (f == MF_EXP || f == MF_LOG) && kinds[b] == AX_BACKEND_CPU;   /* as in fast mode */
                bool approx = f == MF_SQRT || f == MF_RSQRT || lib;
                double lim = lib ? 10 : !approx ? 0 : t ? (f == MF_RSQRT ? 2 : 0) : 6.2;   /* in u|exact| */
                int64_t bad = 0, differ = 0, first = -1;
                for (int64_t i = 0; i < N; i++) {
                    double e = t ? dout[0][i] : fo[0][i], g = t ? dout[1][i] : fo[1][i];
                    double err = fabs(g - e) / (u * fabs(e));
                    if (g != e) differ++;
                    if (err > worst) worst = err;
                    bool ok = isfinite(e) && (lim > 0 ? err <= lim : memcmp(&e, &g, sizeof e) == 0);
                    if (!ok && bad++ == 0) first = i;
                }
                CHECKF(bad == 0, "backend %d finite, %s (%s): %lld of %d beyond the bound, first at %lld (%.9g: "
                       "%.9g against %.9g)", (int)kinds[b], mf_name[f], t ? "f64" : "f32", (long long)bad, N,
                       (long long)first, first < 0 ? 0.0 : t ? ((double *)x)[first] : ((float *)x)[first],
                       first < 0 ? 0.0 : t ? dout[1][first] : fo[1][first],
                       first < 0 ? 0.0 : t ? dout[0][first] : fo[0][first]);
                if (approx)
                    fprintf(stderr, "finite math, backend %d, %-6s %s: %6lld of %d differ from exact, worst %.2fu\n",
                            (int)kinds[b], mf_name[f], t ? "f64" : "f32", (long long)differ, N, worst);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
                /* the level reaches GCC (the default cc here): f32 1/sqrt is
                   vrsqrtps and a Newton step, which differs from the
                   correctly rounded quotient somewhere */
                if (kinds[b] == AX_BACKEND_CPU && f == MF_RSQRT && !t && !getenv("AXLE_CC"))
                    CHECKF(differ > 0, "finite math: f32 1/sqrt is exact mode's in all %d places", N);
#endif
            }
        ax_ctx_free(ex);
        ax_ctx_free(fi);
    }
}

static ax_acc b_sum(ax_ctx *cx, ax_acc *a, void *env)
{
    (void)cx, (void)env;
    return ax_fold(ax_fn_add, NULL, ax_f32(0), a[0]);
}

/* A sum of n terms: within (n-1)u times the sum of magnitudes of the
 * exact sum, in both modes. */
TEST(fast_mode_sums_within_the_reassociation_bound)
{
    static float x[N];
    static double d[N];
    fill(x, d, N, 0, 1);
    double want = 0, mag = 0;
    for (int64_t i = 0; i < N; i++) want += x[i], mag += fabs((double)x[i]);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int f = 0; f <= FINITE; f++) {
            ax_ctx *cx = open_ctx(kinds[k], f);
            if (!cx) continue;
            void *in[3] = {x, x, x};
            float got = 0;
            REQUIRE(run3(cx, AX_F32, in, N, b_sum, NULL, &got, 1));
            double lim = (N - 1) * (FLT_EPSILON / 2) * mag;
            CHECKF(fabs(got - want) <= lim, "backend %d %s: %.9g vs %.9g", (int)kinds[k],
                   f == FINITE ? "finite" : f ? "fast" : "exact", got, want);
            ax_ctx_free(cx);
        }
}

/* The two modes' kernels are distinct cache entries. */
TEST(fast_mode_is_part_of_the_cache_key)
{
    static float x[N], r0[N], r1[N];
    static double d[N];
    fill(x, d, N, 1, 2);
    ax_ctx *ex = open_ctx(AX_BACKEND_CPU, 0), *fa = open_ctx(AX_BACKEND_CPU, 1);
    REQUIRE(ex && fa);
    void *in[3] = {x, x, x};
    REQUIRE(run3(fa, AX_F32, in, N, b_cancel, NULL, r1, N));   /* fast first: would poison an exact lookup */
    REQUIRE(run3(ex, AX_F32, in, N, b_cancel, NULL, r0, N));
    /* exact mode: (x+x)-x is 2x rounded, minus x: exactly x here */
    CHECK(!memcmp(r0, x, sizeof x));
    /* finite_math's kernels too: f32 1/sqrt compiled finite first, then in
       fast mode, must keep fast mode's 2u (finite's goes to 6.2u) */
    ax_ctx *fi = open_ctx(AX_BACKEND_CPU, FINITE);
    REQUIRE(fi);
    static float r2[N], ax[N];
    for (int64_t i = 0; i < N; i++) ax[i] = fabsf(x[i]);
    void *ain[3] = {ax, ax, ax};
    int env[2] = {MF_RSQRT, 0};
    REQUIRE(run3(fi, AX_F32, ain, N, b_mf, env, r2, N));
    REQUIRE(run3(fa, AX_F32, ain, N, b_mf, env, r1, N));
    REQUIRE(run3(ex, AX_F32, ain, N, b_mf, env, r0, N));
    int64_t bad = 0, fbad = 0;
    for (int64_t i = 0; i < N; i++) {
        if (!(fabsf(r1[i] - r0[i]) <= FLT_EPSILON * fabsf(r0[i]))) bad++;
        if (!(fabsf(r2[i] - r0[i]) <= FLT_EPSILON * fabsf(r0[i]))) fbad++;
    }
    CHECKF(bad == 0, "fast mode's 1/sqrt after finite mode's: %lld of %d beyond 2u", (long long)bad, N);
    fprintf(stderr, "finite mode's f32 1/sqrt: %lld of %d beyond fast mode's 2u\n", (long long)fbad, N);
    ax_ctx_free(fi);
    ax_ctx_free(ex);
    ax_ctx_free(fa);
    CHECK(getenv("AXLE_FAST_MATH") == NULL || !strcmp(getenv("AXLE_FAST_MATH"), "0"));
}

/* Loading a fast-mode kernel leaves the caller's floating-point
 * environment alone: GCC links crtfastmath.o (flush-to-zero,
 * denormals-are-zero, set by a constructor when the kernel is loaded)
 * into objects built with -funsafe-math-optimizations, which cpu.c
 * therefore spells as its component flags.  A program of its own (a
 * constant no other test uses), so that its kernel is loaded here, and
 * without the disk cache, so that it is compiled now. */
static ax_exp e_unique(ax_exp x, void *env) { return ax_mul(x, ax_f32(*(const float *)env)); }
static ax_acc b_unique(ax_ctx *cx, ax_acc *a, void *env) { (void)cx; return ax_map(e_unique, env, a[0]); }

TEST(fast_mode_keeps_the_callers_denormals)
{
    static float x[N], r[N];
    static double d[N];
    fill(x, d, N, 1, 2);
    /* compared by bits: under denormals-are-zero a comparison with a
       denormal constant sees 0 too */
    volatile float tiny = 0x1p-130f, half = 0.5f;
    float before = tiny * half;
    uint32_t bits;
    memcpy(&bits, &before, 4);
    CHECKF(bits == 0x40000u, "0x1p-130f * 0.5f has the bits %#x before any kernel ran", (unsigned)bits);
    for (int level = 1; level <= FINITE; level++) {
        ax_options o = {0};
        o.backend = AX_BACKEND_CPU;
        o.fast_math = true;
        o.finite_math = level == FINITE;   /* its unit's pragma asks for -funsafe-math-optimizations */
        o.no_cache = true;
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        void *in[3] = {x, x, x};
        float k = level == FINITE ? 1.2345673f : 1.2345671f;   /* a kernel of each level's own */
        REQUIRE(run3(cx, AX_F32, in, N, b_unique, &k, r, N));
        float after = tiny * half;   /* 0 under flush-to-zero or denormals-are-zero */
        memcpy(&bits, &after, 4);
        CHECKF(bits == 0x40000u, "0x1p-130f * 0.5f has the bits %#x after a %s-mode kernel was loaded",
               (unsigned)bits, level == FINITE ? "finite" : "fast");
        ax_ctx_free(cx);
    }
}
