/*
 * axle's own exp and log (src/core/vmath.h).
 *
 *  - Accuracy: over every float class (random bit patterns of every
 *    exponent, subnormals, the overflow and underflow thresholds and their
 *    neighbours, values near 1 and at powers of 2), the error against a
 *    reference with at least 11 more bits (long double for f64, double
 *    for f32) is within the bound stated here and in vmath.h; the test
 *    prints the measured maximum.
 *  - Special values: C99 Annex F's results, bit for bit.
 *  - Backends: the CPU backend (at the native width, AVX2's and SSE2's)
 *    and OpenCL where a device is found compute the interpreter's bits
 *    for every one of those inputs.  The fast modes call the C library's
 *    vector maths instead (glibc's libmvec, 4 ulp by its manual): within
 *    that bound.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "core/vmath.h"
#include <float.h>
#include <stdlib.h>
#include <string.h>

/* The stated bounds (ulp of the exact result), measured maxima plus a
 * margin for other C libraries' references. */
#define BOUND_EXP32 1.0
#define BOUND_LOG32 1.0
#define BOUND_EXP64 1.0
#define BOUND_LOG64 1.0

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * (double)(next(s) >> 11) * 0x1p-53; }

static double of_bits64(uint64_t b)
{
    double x;
    memcpy(&x, &b, 8);
    return x;
}
static uint64_t bits64(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    return b;
}
static float of_bits32(uint32_t b)
{
    float x;
    memcpy(&x, &b, 4);
    return x;
}
static uint32_t bits32(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    return b;
}

enum { NIN = 120000 };

/* f64 inputs for exp (log when lg): specials, thresholds with their
 * neighbours, random bit patterns (every exponent, both signs, NaNs),
 * the interesting range uniformly. */
static int inputs64(double *x, bool lg, uint64_t seed)
{
    static const double special[] = {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, INFINITY, -INFINITY, NAN, -NAN,
                                     DBL_MIN, -DBL_MIN, DBL_MAX, -DBL_MAX, 0x1p-1074, 0x1p-1060, 0x1.fffffffffffffp-1023,
                                     0x1.62e42fefa39efp+9, 0x1.62e42fefa39f0p+9, 710.0, 709.0, -708.3964185322641,
                                     -708.4, -745.1332191019411, -745.1332191019412, -745.2, -746.0, -1000.0,
                                     1e-300, -1e-300, 0x1p-60, -0x1p-60, 0.6931471805599453, 0x1.6a09e667f3bcdp-1,
                                     0x1.6a09e667f3bccp-1, 0x1.6a09e667f3bcep+0, 1.0000000000000002, 0.9999999999999999};
    int n = 0;
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) x[n++] = special[i];
    for (int e = -1074; e <= 1023; e += 7) x[n++] = ldexp(1.0, e);   /* powers of 2 */
    for (int k = 1; k <= 60; k++) {                                     /* near 1 */
        x[n++] = 1 + ldexp(1.0, -k);
        x[n++] = 1 - ldexp(1.0, -k);
    }
    uint64_t s = seed;
    while (n < NIN) {
        int kind = (int)(next(&s) % 4);
        if (kind == 0) x[n++] = of_bits64(next(&s));
        else if (kind == 1) x[n++] = lg ? uniform(&s, 0.5, 2.0) : uniform(&s, -746, 710);
        else if (kind == 2) x[n++] = lg ? of_bits64(next(&s) >> 12) : uniform(&s, -1, 1);   /* log: subnormals */
        else {   /* log: every binade; exp: tiny and near the thresholds */
            if (lg) x[n++] = ldexp(uniform(&s, 1, 2), (int)(next(&s) % 2098) - 1074);
            else x[n++] = uniform(&s, -1, 1) * ldexp(1.0, -(int)(next(&s) % 80)) + (double)(int)(next(&s) % 3 - 1) *
                          (next(&s) & 1 ? 709.78 : 745.13);
        }
    }
    return n;
}

static int inputs32(float *x, bool lg, uint64_t seed)
{
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 0.5f, INFINITY, -INFINITY, NAN, -NAN,
                                    FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, 0x1p-149f, 0x1p-140f, 0x1.fffffcp-127f,
                                    0x1.62e42ep+6f, 0x1.62e430p+6f, 89.0f, -87.33655f, -87.4f, -103.97208f,
                                    -103.97209f, -104.0f, -200.0f, 0x1p-30f, -0x1p-30f, 0.6931472f, 0x1.6a09e6p-1f,
                                    0x1.6a09e8p-1f, 1.0000001f, 0.99999994f};
    int n = 0;
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) x[n++] = special[i];
    for (int e = -149; e <= 127; e++) x[n++] = ldexpf(1.0f, e);
    for (int k = 1; k <= 24; k++) {
        x[n++] = 1 + ldexpf(1.0f, -k);
        x[n++] = 1 - ldexpf(1.0f, -k);
    }
    uint64_t s = seed;
    while (n < NIN) {
        int kind = (int)(next(&s) % 4);
        if (kind == 0) x[n++] = of_bits32((uint32_t)next(&s));
        else if (kind == 1) x[n++] = (float)(lg ? uniform(&s, 0.5, 2.0) : uniform(&s, -104, 89));
        else if (kind == 2) x[n++] = lg ? of_bits32((uint32_t)next(&s) >> 9) : (float)uniform(&s, -1, 1);
        else x[n++] = lg ? (float)ldexp(uniform(&s, 1, 2), (int)(next(&s) % 276) - 149)
                         : (float)uniform(&s, -104, 89);
    }
    return n;
}

/* |got - want| in ulp of the exact result's binade (the subnormal
 * spacing below the normal range); 0 when both are the same special. */
static double err_ulp(long double got, long double want, int mant, int emin)
{
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isinf(want) || isinf(got)) return got == want ? 0 : INFINITY;
    int e;
    frexpl(want, &e);   /* want = m 2^e, m in [0.5, 1) */
    if (want == 0 || e - 1 < emin) e = emin + 1;
    long double ulp = ldexpl(1.0L, e - 1 - (mant - 1));
    return (double)(fabsl(got - want) / ulp);
}

/* The exact result rounded would overflow: the reference's own value is
 * then compared with +inf (the first x past the threshold overflows). */
static long double ref64(bool lg, double x) { return lg ? logl((long double)x) : expl((long double)x); }
static double ref32(bool lg, float x) { return lg ? log((double)x) : exp((double)x); }

TEST(accuracy_within_the_stated_bound)
{
    double *x = malloc(sizeof *x * NIN);
    float *xf = malloc(sizeof *xf * NIN);
    REQUIRE(x && xf);
    static const char *const names[] = {"exp", "log"};
    static const double bound32[] = {BOUND_EXP32, BOUND_LOG32}, bound64[] = {BOUND_EXP64, BOUND_LOG64};
    for (int lg = 0; lg < 2; lg++) {
        double worst = 0, at = 0;
        int n = inputs32(xf, lg, 77 + (uint64_t)lg);
        for (int i = 0; i < n; i++) {
            float y = lg ? vm_log_f32(xf[i]) : vm_exp_f32(xf[i]);
            double w = ref32(lg, xf[i]);
            /* an exact result past FLT_MAX's rounding boundary is +inf */
            if (!lg && w >= 0x1.ffffffp+127) w = INFINITY;
            double e = err_ulp(y, w, 24, -126);
            if (e > worst) worst = e, at = xf[i];
        }
        printf("%s f32: %.3f ulp at most (at %a), stated %.1f\n", names[lg], worst, at, bound32[lg]);
        CHECKF(worst <= bound32[lg], "%s f32: %.3f ulp at %a", names[lg], worst, at);
        if (LDBL_MANT_DIG < 64) {
            printf("note: long double has %d bits here; f64 accuracy not measured\n", LDBL_MANT_DIG);
            continue;
        }
        worst = 0;
        n = inputs64(x, lg, 99 + (uint64_t)lg);
        for (int i = 0; i < n; i++) {
            double y = lg ? vm_log_f64(x[i]) : vm_exp_f64(x[i]);
            long double w = ref64(lg, x[i]);
            if (!lg && w >= 0x1.fffffffffffff8p+1023L) w = INFINITY;
            double e = err_ulp(y, w, 53, -1022);
            if (e > worst) worst = e, at = x[i];
        }
        printf("%s f64: %.3f ulp at most (at %a), stated %.1f\n", names[lg], worst, at, bound64[lg]);
        CHECKF(worst <= bound64[lg], "%s f64: %.3f ulp at %a", names[lg], worst, at);
    }
    free(x);
    free(xf);
}

TEST(special_values)
{
    const double inf = INFINITY;
    CHECK(isnan(vm_exp_f64(NAN)) && isnan(vm_log_f64(NAN)) && isnan(vm_exp_f32(NAN)) && isnan(vm_log_f32(NAN)));
    CHECK(vm_exp_f64(inf) == inf && bits64(vm_exp_f64(-inf)) == 0 && vm_exp_f64(0.0) == 1 && vm_exp_f64(-0.0) == 1);
    CHECK(vm_exp_f32(INFINITY) == INFINITY && bits32(vm_exp_f32(-INFINITY)) == 0 && vm_exp_f32(0.0f) == 1);
    CHECK(vm_exp_f64(0x1.62e42fefa39efp+9) < inf && vm_exp_f64(0x1.62e42fefa39f0p+9) == inf);
    CHECK(vm_exp_f32(0x1.62e42ep+6f) < INFINITY && vm_exp_f32(0x1.62e430p+6f) == INFINITY);
    CHECK(vm_exp_f64(-745.1332191019411) == 0x1p-1074 && bits64(vm_exp_f64(-745.1332191019412)) == 0);
    CHECK(vm_exp_f32(-103.97207f) == 0x1p-149f && bits32(vm_exp_f32(-104.0f)) == 0);
    CHECK(vm_exp_f64(1e-300) == 1 && vm_exp_f64(-1e-300) == 1);
    CHECK(vm_log_f64(0.0) == -inf && vm_log_f64(-0.0) == -inf && vm_log_f32(0.0f) == -INFINITY);
    CHECK(isnan(vm_log_f64(-1.0)) && isnan(vm_log_f64(-inf)) && isnan(vm_log_f64(-0x1p-1074)));
    CHECK(isnan(vm_log_f32(-1.0f)) && isnan(vm_log_f32(-INFINITY)));
    CHECK(vm_log_f64(inf) == inf && vm_log_f32(INFINITY) == INFINITY);
    CHECK(bits64(vm_log_f64(1.0)) == 0 && bits32(vm_log_f32(1.0f)) == 0);
    /* the smallest subnormal and DBL_MAX */
    CHECK(vm_log_f64(0x1p-1074) == -0x1.74385446d71c3p+9 && vm_log_f64(DBL_MAX) == 0x1.62e42fefa39efp+9);
    CHECK(fabsf(vm_log_f32(0x1p-149f) - -103.27893f) <= 0x1p-17f);
}

/* ------------------------------------------------------------ backends */

static ax_exp f_exp(ax_exp x, void *env) { return *(bool *)env ? ax_log(x) : ax_exp_(x); }

/* exp or log of xs (n of type s) on the backend of o; NULL if none. */
static void *run_on(const ax_options *o, ax_scalar s, const void *xs, int n, bool lg)
{
    ax_ctx *cx = ax_ctx_new(o);
    if (!cx) return NULL;
    int64_t sh = n;
    ax_array *a = ax_array_from(cx, s, 1, &sh, xs);
    ax_array *r = a ? ax_run(cx, ax_map(f_exp, &lg, ax_use(cx, a))) : NULL;
    void *out = NULL;
    size_t w = s == AX_F64 ? 8 : 4;
    if (r && (out = malloc(w * (size_t)n))) memcpy(out, ax_array_data(r, 0), w * (size_t)n);
    if (!r) fprintf(stderr, "note: %s\n", ax_error(cx));
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
    return out;
}

/* Elements of got that are not want's bits (both NaN counts as equal:
 * a device may quieten NaNs its own way). */
static int differ(const void *got, const void *want, ax_scalar s, int n, int *first)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        bool same;
        if (s == AX_F64) {
            double a = ((const double *)got)[i], b = ((const double *)want)[i];
            same = bits64(a) == bits64(b) || (isnan(a) && isnan(b));
        } else {
            float a = ((const float *)got)[i], b = ((const float *)want)[i];
            same = bits32(a) == bits32(b) || (isnan(a) && isnan(b));
        }
        if (!same && !bad++) *first = i;
    }
    return bad;
}

static bool available(ax_backend_kind k)
{
    ax_options o = {0};
    o.backend = k;
    ax_ctx *cx = ax_ctx_new(&o);
    ax_array *r = cx ? ax_run(cx, ax_unit(cx, ax_f32(1))) : NULL;
    bool ok = r != NULL;
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

TEST(every_backend_computes_the_interpreters_bits)
{
    enum { N = 20011 };   /* a prime: vector bodies and tails */
    double *x = malloc(sizeof *x * NIN);
    float *xf = malloc(sizeof *xf * NIN);
    REQUIRE(x && xf);
    struct { ax_backend_kind k; const char *cflags, *name; } be[] = {
        {AX_BACKEND_CPU, NULL, "cpu"},
#if defined(__x86_64__)
        {AX_BACKEND_CPU, "-march=x86-64-v3", "cpu (avx2)"},
        {AX_BACKEND_CPU, "-march=x86-64", "cpu (sse2)"},
#endif
        {AX_BACKEND_OPENCL, NULL, "opencl"},
    };
    int ran = 0;
    for (size_t b = 0; b < sizeof be / sizeof *be; b++) {
        if (!available(be[b].k)) {
            printf("note: no %s backend here; skipped\n", be[b].name);
            continue;
        }
        for (int lg = 0; lg < 2; lg++)
            for (int t = 0; t < 2; t++) {
                ax_scalar s = t ? AX_F64 : AX_F32;
                if (t) inputs64(x, lg, 5 + (uint64_t)lg);
                else inputs32(xf, lg, 7 + (uint64_t)lg);
                const void *in = t ? (const void *)x : (const void *)xf;
                ax_options oi = {0}, ob = {0};
                oi.backend = AX_BACKEND_INTERP;
                ob.backend = be[b].k;
                ob.cflags = be[b].cflags;
                void *want = run_on(&oi, s, in, N, lg), *got = run_on(&ob, s, in, N, lg);
                if (be[b].k == AX_BACKEND_OPENCL && t && !got) {
                    printf("note: %s: no doubles on this device; skipped\n", be[b].name);
                    free(want);
                    continue;
                }
                REQUIRE(want && got);
                int first = 0, bad = differ(got, want, s, N, &first);
                CHECKF(bad == 0, "%s %s %s: %d of %d elements differ from the interpreter, first at x = %a",
                       be[b].name, lg ? "log" : "exp", t ? "f64" : "f32", bad, N,
                       t ? x[first] : (double)xf[first]);
                ran++;
                free(want);
                free(got);
            }
    }
    printf("%d backend/function/type runs, %d elements each, the interpreter's bits\n", ran, (int)N);
    free(x);
    free(xf);
}

/* The fast mode calls the C library's exp and log (through libmvec where
 * there is one), which promise no bits: within glibc's stated 4 ulp. */
#define BOUND_LIBMVEC 4.0
TEST(fast_mode_within_the_c_librarys_bound)
{
    if (!available(AX_BACKEND_CPU)) {
        printf("note: no CPU backend here; skipped\n");
        return;
    }
    enum { N = 20011 };
    double *x = malloc(sizeof *x * NIN);
    REQUIRE(x);
    for (int lg = 0; lg < 2; lg++) {
        inputs64(x, lg, 11 + (uint64_t)lg);
        ax_options o = {0};
        o.backend = AX_BACKEND_CPU;
        o.fast_math = true;
        double *got = run_on(&o, AX_F64, x, N, lg);
        REQUIRE(got);
        double worst = 0;
        for (int i = 0; i < N; i++) {
            long double w = ref64(lg, x[i]);
            if (!lg && w >= 0x1.fffffffffffff8p+1023L) w = INFINITY;
            double e = err_ulp(got[i], w, 53, -1022);
            if (e > worst) worst = e;
        }
        printf("fast %s f64: %.3f ulp at most\n", lg ? "log" : "exp", worst);
        CHECKF(worst <= BOUND_LIBMVEC, "fast %s: %.3f ulp", lg ? "log" : "exp", worst);
        free(got);
    }
    free(x);
}
