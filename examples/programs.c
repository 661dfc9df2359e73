/*
 * The built-in programs: dotp and Black-Scholes (the Accelerate paper's Figure 1) and
 * incnine (the paper's Figure 2 term).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_blackscholes.h"
#include "baseline_dotp.h"
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t ex_next(ex_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ull;
}

double ex_uniform(ex_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(ex_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------ dotp */

/* dotp xs ys = fold (+) 0 (zipWith (*) xs ys) */
ax_acc ex_dotp(ax_acc xs, ax_acc ys)
{
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_zip_with(ax_fn_mul, NULL, xs, ys));
}

typedef struct {
    int64_t n;
    float *x, *y;
    ax_array *ax, *ay;
    float bl;          /* the baseline's result */
    bool bl_done;
} Dotp;

static void *dotp_setup(ax_ctx *cx, int64_t n)
{
    Dotp *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->n = n;
    d->x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    d->y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!d->x || !d->y) { free(d->x); free(d->y); free(d); return NULL; }
    ex_rng r = {0x9E3779B97F4A7C15ull};
    for (int64_t i = 0; i < n; i++) {
        d->x[i] = (float)ex_uniform(&r, -1, 1);
        d->y[i] = (float)ex_uniform(&r, -1, 1);
    }
    d->ax = ax_array_wrap(cx, AX_F32, 1, &n, d->x);
    d->ay = ax_array_wrap(cx, AX_F32, 1, &n, d->y);
    return d;
}

static ax_acc dotp_build(ax_ctx *cx, void *st)
{
    Dotp *d = st;
    return ex_dotp(ax_use(cx, d->ax), ax_use(cx, d->ay));
}

static int dotp_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Dotp *d = st;
    if (nres != 1 || ax_array_rank(res[0]) != 0) {
        snprintf(msg, size, "expected one rank-0 result");
        return -1;
    }
    /* Reference in double; the fold may reassociate, so allow an error
     * relative to the sum of magnitudes (f32 rounding per term). */
    double s = 0, mag = 0;
    for (int64_t i = 0; i < d->n; i++) {
        s += (double)d->x[i] * d->y[i];
        mag += fabs((double)d->x[i] * d->y[i]);
    }
    float got = *(float *)ax_array_data(res[0], 0);
    double tol = 1e-5 * mag + 1e-6;
    if (!(fabs(got - s) <= tol)) {
        snprintf(msg, size, "dotp: got %.9g, expected %.9g (tolerance %.3g)", got, s, tol);
        return -1;
    }
    return 0;
}

/* The hand-written baseline (bench/baseline_dotp.c). */
static int dotp_baseline(void *st, int variant)
{
    Dotp *d = st;
    d->bl = (variant ? bl_dotp_fast : bl_dotp_std)(d->x, d->y, d->n);
    d->bl_done = true;
    return 0;
}

/* The CUDA baseline: cuBLAS's sdot (bench/cuda/baselines.cu). */
static int dotp_cuda(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Dotp *d = st;
    int (*f)(const float *, const float *, int64_t, int, float *, double *, char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_dotp"))) return snprintf(err, errsize, "no axcb_dotp"), -1;
    if (f(d->x, d->y, d->n, runs, &d->bl, ms, err, errsize)) return -1;
    d->bl_done = true;
    return 0;
}

/* axle and the baseline each sum in f32 in their own order, both within
 * dotp_check's bound of the exact sum, so within twice it of each other. */
static int dotp_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Dotp *d = st;
    if (!d->bl_done || nres != 1 || ax_array_rank(res[0]) != 0) {
        snprintf(msg, size, "dotp: %s", d->bl_done ? "expected one rank-0 result" : "the baseline has not run");
        return -1;
    }
    double mag = 0;
    for (int64_t i = 0; i < d->n; i++) mag += fabs((double)d->x[i] * d->y[i]);
    float got = *(float *)ax_array_data(res[0], 0);
    double tol = 2 * (1e-5 * mag + 1e-6);
    if (!(fabs((double)got - d->bl) <= tol)) {
        snprintf(msg, size, "dotp: axle %.9g, baseline %.9g (tolerance %.3g)", got, d->bl, tol);
        return -1;
    }
    return 0;
}

static void dotp_teardown(void *st)
{
    Dotp *d = st;
    if (!d) return;
    ax_array_release(d->ax);
    ax_array_release(d->ay);
    free(d->x);
    free(d->y);
    free(d);
}

static const ex_program prog_dotp = {
    .name = "dotp",
    .about = "dot product: fold (+) 0 (zipWith (*) xs ys) over f32 vectors",
    .default_size = 1000000,
    .setup = dotp_setup,
    .build = dotp_build,
    .check = dotp_check,
    .teardown = dotp_teardown,
    .baseline = dotp_baseline,
    .check_baseline = dotp_check_baseline,
    .cuda_baseline = dotp_cuda,
    .bench_size = 10000000,
    .test_size = 1000,
};

/* ------------------------------------------------------------ Black-Scholes */

#define RISKFREE 0.02f
#define VOLATILITY 0.30f

/* horner coeff x = x * foldr1 madd coeff where madd a b = a + x*b */
static ax_exp horner(ax_exp x)
{
    static const float coeff[5] = {0.31938153f, -0.356563782f, 1.781477937f, -1.821255978f, 1.330274429f};
    ax_exp acc = ax_f32(coeff[4]);
    for (int i = 3; i >= 0; i--) acc = ax_add(ax_f32(coeff[i]), ax_mul(x, acc));
    return ax_mul(x, acc);
}

/* cnd' d = rsqrt2pi * exp (-0.5*d*d) * poly k, k = 1 / (1 + 0.2316419 * abs d) */
static ax_exp cnd_(ax_exp d)
{
    ax_exp k = ax_div(ax_f32(1), ax_add(ax_f32(1), ax_mul(ax_f32(0.2316419f), ax_abs(d))));
    return ax_mul(ax_mul(ax_f32(0.39894228040143267793994605993438f),
                         ax_exp_(ax_mul(ax_mul(ax_f32(-0.5f), d), d))),
                  horner(k));
}

/* cnd d = let c = cnd' d in d > 0 ? (1 - c, c) */
static ax_exp cnd(ax_exp d)
{
    ax_exp c = cnd_(d);
    return ax_cond(ax_gt(d, ax_f32(0)), ax_sub(ax_f32(1), c), c);
}

static ax_exp callput(ax_exp x, void *env)
{
    (void)env;
    ax_exp price = ax_get(x, 0), strike = ax_get(x, 1), years = ax_get(x, 2);
    ax_exp r = ax_f32(RISKFREE), v = ax_f32(VOLATILITY);
    ax_exp v_sqrtT = ax_mul(v, ax_sqrt(years));
    ax_exp d1 = ax_div(ax_add(ax_log(ax_div(price, strike)),
                              ax_mul(ax_add(r, ax_mul(ax_mul(ax_f32(0.5f), v), v)), years)),
                       v_sqrtT);
    ax_exp d2 = ax_sub(d1, v_sqrtT);
    ax_exp cndD1 = cnd(d1), cndD2 = cnd(d2);
    ax_exp x_expRT = ax_mul(strike, ax_exp_(ax_mul(ax_neg(r), years)));
    return ax_tuple2(ax_sub(ax_mul(price, cndD1), ax_mul(x_expRT, cndD2)),
                     ax_sub(ax_mul(x_expRT, ax_sub(ax_f32(1), cndD2)),
                            ax_mul(price, ax_sub(ax_f32(1), cndD1))));
}

ax_acc ex_blackscholes(ax_acc opts) { return ax_map(callput, NULL, opts); }

typedef struct {
    int64_t n;
    float *p, *s, *y;
    ax_array *a;
    float *call, *put;   /* the baseline's results */
} Bs;

static void *bs_setup(ax_ctx *cx, int64_t n)
{
    Bs *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->n = n;
    size_t sz = sizeof(float) * (size_t)(n ? n : 1);
    b->p = malloc(sz);
    b->s = malloc(sz);
    b->y = malloc(sz);
    if (!b->p || !b->s || !b->y) { free(b->p); free(b->s); free(b->y); free(b); return NULL; }
    ex_rng r = {0xD1B54A32D192ED03ull};
    /* The ranges of the Accelerate benchmark. */
    for (int64_t i = 0; i < n; i++) {
        b->p[i] = (float)ex_uniform(&r, 5, 30);
        b->s[i] = (float)ex_uniform(&r, 1, 100);
        b->y[i] = (float)ex_uniform(&r, 0.25, 10);
    }
    const ax_type *f = ax_type_scalar(AX_F32);
    const ax_type *ts[3] = {f, f, f};
    const ax_type *t = ax_type_tuple(cx, 3, ts);
    void *bufs[3] = {b->p, b->s, b->y};
    b->a = ax_array_wrap_n(cx, t, 1, &n, bufs);
    return b;
}

static ax_acc bs_build(ax_ctx *cx, void *st)
{
    Bs *b = st;
    return ex_blackscholes(ax_use(cx, b->a));
}

/* The plain-C reference, in double precision. */
static double ref_cnd(double d)
{
    const double c[5] = {0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429};
    double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
    double poly = k * (c[0] + k * (c[1] + k * (c[2] + k * (c[3] + k * c[4]))));
    double cn = 0.39894228040143267793994605993438 * exp(-0.5 * d * d) * poly;
    return d > 0 ? 1.0 - cn : cn;
}

static int bs_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Bs *b = st;
    if (nres != 1 || ax_array_components(res[0]) != 2 || ax_array_size(res[0]) != b->n) {
        snprintf(msg, size, "expected one vector of %lld (f32, f32) pairs", (long long)b->n);
        return -1;
    }
    const float *call = ax_array_data(res[0], 0), *put = ax_array_data(res[0], 1);
    for (int64_t i = 0; i < b->n; i++) {
        double r = RISKFREE, v = VOLATILITY, price = b->p[i], strike = b->s[i], years = b->y[i];
        double vs = v * sqrt(years);
        double d1 = (log(price / strike) + (r + 0.5 * v * v) * years) / vs, d2 = d1 - vs;
        double c1 = ref_cnd(d1), c2 = ref_cnd(d2), xe = strike * exp(-r * years);
        double ec = price * c1 - xe * c2, ep = xe * (1 - c2) - price * (1 - c1);
        /* f32 evaluation: absolute error relative to the price scale. */
        double tol = 1e-4 * (price + strike);
        if (!(fabs(call[i] - ec) <= tol) || !(fabs(put[i] - ep) <= tol)) {
            snprintf(msg, size, "blackscholes: element %lld: got (%.7g, %.7g), expected (%.7g, %.7g)",
                     (long long)i, call[i], put[i], ec, ep);
            return -1;
        }
    }
    return 0;
}

/* The hand-written baseline (bench/baseline_blackscholes.c). */
static int bs_baseline(void *st, int variant)
{
    Bs *b = st;
    size_t sz = sizeof(float) * (size_t)(b->n ? b->n : 1);
    if (!b->call && !(b->call = malloc(sz))) return -1;
    if (!b->put && !(b->put = malloc(sz))) return -1;
    (variant ? bl_blackscholes_fast : bl_blackscholes_std)(b->p, b->s, b->y, b->call, b->put, b->n, RISKFREE,
                                                            VOLATILITY);
    return 0;
}

/* The CUDA baseline: a kernel written by hand (bench/cuda/baselines.cu). */
static int bs_cuda(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Bs *b = st;
    size_t sz = sizeof(float) * (size_t)(b->n ? b->n : 1);
    if ((!b->call && !(b->call = malloc(sz))) || (!b->put && !(b->put = malloc(sz))))
        return snprintf(err, errsize, "out of memory"), -1;
    int (*f)(const float *, const float *, const float *, int64_t, float, float, int, float *, float *, double *,
             char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_blackscholes"))) return snprintf(err, errsize, "no axcb_blackscholes"), -1;
    return f(b->p, b->s, b->y, b->n, RISKFREE, VOLATILITY, runs, b->call, b->put, ms, err, errsize);
}

/* Both evaluate the same f32 formula; they differ by the rounding of
 * exp, log and sqrt (libm, libmvec: a few ulp) and of contracted or
 * reassociated arithmetic (-ffast-math), which the cancellations in call
 * and put magnify: at most 3e-7 of price + strike over 10^6 options on
 * the interpreter and the CPU backend against both builds; 1e-5 is
 * allowed (the reference check allows 1e-4). */
static int bs_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Bs *b = st;
    if (!b->call) { snprintf(msg, size, "blackscholes: the baseline has not run"); return -1; }
    if (nres != 1 || ax_array_components(res[0]) != 2 || ax_array_size(res[0]) != b->n) {
        snprintf(msg, size, "expected one vector of %lld (f32, f32) pairs", (long long)b->n);
        return -1;
    }
    const float *call = ax_array_data(res[0], 0), *put = ax_array_data(res[0], 1);
    for (int64_t i = 0; i < b->n; i++) {
        double tol = 1e-5 * ((double)b->p[i] + b->s[i]);
        if (!(fabs((double)call[i] - b->call[i]) <= tol) || !(fabs((double)put[i] - b->put[i]) <= tol)) {
            snprintf(msg, size, "blackscholes: element %lld: axle (%.7g, %.7g), baseline (%.7g, %.7g)",
                     (long long)i, call[i], put[i], b->call[i], b->put[i]);
            return -1;
        }
    }
    return 0;
}

static void bs_teardown(void *st)
{
    Bs *b = st;
    if (!b) return;
    ax_array_release(b->a);
    free(b->p);
    free(b->s);
    free(b->y);
    free(b->call);
    free(b->put);
    free(b);
}

static const ex_program prog_blackscholes = {
    .name = "blackscholes",
    .about = "Black-Scholes option pricing over (price, strike, years) tuples (Accelerate paper, Figure 1)",
    .default_size = 1000000,
    .setup = bs_setup,
    .build = bs_build,
    .check = bs_check,
    .teardown = bs_teardown,
    .baseline = bs_baseline,
    .check_baseline = bs_check_baseline,
    .cuda_baseline = bs_cuda,
    .bench_size = 4000000,
    .test_size = 1000,
};

/* ------------------------------------------------------------ incnine */

static ax_exp inc(ax_exp x) { return ax_add(ax_i32(1), x); }

/* let inc = (+) 1
 * in let nine = let three = inc 2 in (*) three three
 * in (-) (inc nine) nine
 * `inc` is a C function, so its two applications are two terms; 2 is made
 * a term so that the arithmetic is not done at build time. */
ax_exp ex_incnine(ax_ctx *cx)
{
    ax_exp three = inc(ax_const(cx, ax_i32(2)));
    ax_exp nine = ax_mul(three, three);
    return ax_sub(inc(nine), nine);
}

typedef struct { int unused; } Nine;

static void *nine_setup(ax_ctx *cx, int64_t n)
{
    (void)cx;
    (void)n;
    return calloc(1, sizeof(Nine));
}

static ax_acc nine_build(ax_ctx *cx, void *st)
{
    (void)st;
    return ax_unit(cx, ex_incnine(cx));
}

static int nine_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    (void)st;
    int three = 1 + 2, nine = three * three, want = (1 + nine) - nine;
    if (nres != 1 || ax_array_rank(res[0]) != 0 || *(int32_t *)ax_array_data(res[0], 0) != want) {
        snprintf(msg, size, "incnine: expected %d", want);
        return -1;
    }
    return 0;
}

static const ex_program prog_incnine = {
    .name = "incnine",
    .about = "the Accelerate paper's Figure 2 term (inc nine - nine) as scalar code, for sharing recovery",
    .default_size = 1,
    .setup = nine_setup, .build = nine_build, .check = nine_check, .teardown = free,
};

/* ------------------------------------------------------------ reversemap */

/* The thesis' let-elimination example (s.4.5; paper s.4.4):
 *   reverseMap f xs = map f $ backpermute (shape xs) (\i -> length xs - i - 1) xs
 * xs is used three times (its extent twice, its data once), so sharing
 * recovery binds it between the map and the backpermute; fusion must still
 * make one kernel. */
static ax_exp rm_f(ax_exp x, void *env)
{
    (void)env;
    return ax_add(ax_mul(x, ax_f32(2.0f)), ax_f32(1.0f));
}

static ax_exp rm_rev(ax_exp i, void *env)
{
    ax_acc xs = env;
    return ax_ix1(ax_sub(ax_sub(ax_size(xs), ax_index_get(i, 0)), ax_i64(1)));
}

static ax_acc ex_reversemap(ax_acc xs)
{
    return ax_map(rm_f, NULL, ax_backpermute(ax_shape(xs), rm_rev, xs, xs));
}

typedef struct {
    int64_t n;
    float *x;
    ax_array *a;
} FVec;

static void *fvec_setup(ax_ctx *cx, int64_t n)
{
    FVec *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->n = n;
    if (!(v->x = malloc(sizeof(float) * (size_t)(n ? n : 1)))) {
        free(v);
        return NULL;
    }
    ex_rng r = {0x2545F4914F6CDD1Dull};
    for (int64_t i = 0; i < n; i++) v->x[i] = (float)ex_uniform(&r, -100, 100);
    v->a = ax_array_wrap(cx, AX_F32, 1, &n, v->x);
    return v;
}

static void fvec_teardown(void *st)
{
    FVec *v = st;
    if (!v) return;
    ax_array_release(v->a);
    free(v->x);
    free(v);
}

static ax_acc rm_build(ax_ctx *cx, void *st)
{
    FVec *v = st;
    return ex_reversemap(ax_use(cx, v->a));
}

static int rm_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    FVec *v = st;
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_size(res[0]) != v->n) {
        snprintf(msg, size, "reversemap: expected one vector of %lld", (long long)v->n);
        return -1;
    }
    const float *got = ax_array_data(res[0], 0);
    for (int64_t i = 0; i < v->n; i++) {
        double want = (double)v->x[v->n - 1 - i] * 2.0 + 1.0;
        if (!(fabs(got[i] - want) <= 1e-6 * (fabs(want) + 1))) {
            snprintf(msg, size, "reversemap: element %lld: got %.9g, expected %.9g", (long long)i, got[i], want);
            return -1;
        }
    }
    return 0;
}

static const ex_program prog_reversemap = {
    .name = "reversemap",
    .about = "reverseMap from McDonell's thesis: map f over a backpermute that reverses (let elimination, 1 kernel)",
    .default_size = 1000000,
    .setup = fvec_setup,
    .build = rm_build,
    .check = rm_check,
    .teardown = fvec_teardown,
    .test_size = 1000,
};

/* ------------------------------------------------------------ zipmap */

/* The thesis' let-floating example (s.4.5; paper s.4.4):
 *   zipMap = map g $ let xs = use (Array ...) in zipWith f xs xs
 * with f x y = x * y + x and g z = let t = 2 z - 3 in t * t + t on i32
 * (wrapping).  The binding of manifest data floats out of the producer
 * chain: one kernel, reading xs once per element. */
static ax_exp zm_f(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    return ax_add(ax_mul(x, y), x);
}

static ax_exp zm_g(ax_exp z, void *env)
{
    (void)env;
    ax_exp t = ax_sub(ax_mul(ax_i32(2), z), ax_i32(3));
    return ax_add(ax_mul(t, t), t);
}

static ax_acc ex_zipmap(ax_acc xs) { return ax_map(zm_g, NULL, ax_zip_with(zm_f, NULL, xs, xs)); }

typedef struct {
    int64_t n;
    int32_t *x;
    ax_array *a;
} IVec;

static void *ivec_setup(ax_ctx *cx, int64_t n)
{
    IVec *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->n = n;
    if (!(v->x = malloc(sizeof(int32_t) * (size_t)(n ? n : 1)))) {
        free(v);
        return NULL;
    }
    ex_rng r = {0x7FB5D329728EA185ull};
    for (int64_t i = 0; i < n; i++) v->x[i] = (int32_t)(ex_next(&r) % 201) - 100;
    v->a = ax_array_wrap(cx, AX_I32, 1, &n, v->x);
    return v;
}

static void ivec_teardown(void *st)
{
    IVec *v = st;
    if (!v) return;
    ax_array_release(v->a);
    free(v->x);
    free(v);
}

static ax_acc zm_build(ax_ctx *cx, void *st)
{
    IVec *v = st;
    return ex_zipmap(ax_use(cx, v->a));
}

static int zm_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    IVec *v = st;
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_size(res[0]) != v->n) {
        snprintf(msg, size, "zipmap: expected one vector of %lld", (long long)v->n);
        return -1;
    }
    const int32_t *got = ax_array_data(res[0], 0);
    for (int64_t i = 0; i < v->n; i++) {
        uint32_t x = (uint32_t)v->x[i], z = x * x + x, t = 2u * z - 3u;
        int32_t want = (int32_t)(t * t + t);
        if (got[i] != want) {
            snprintf(msg, size, "zipmap: element %lld: got %d, expected %d", (long long)i, got[i], want);
            return -1;
        }
    }
    return 0;
}

static const ex_program prog_zipmap = {
    .name = "zipmap",
    .about = "zipMap from McDonell's thesis: map g (let xs = use .. in zipWith f xs xs) (let floating, 1 kernel)",
    .default_size = 1000000,
    .setup = ivec_setup,
    .build = zm_build,
    .check = zm_check,
    .teardown = ivec_teardown,
    .test_size = 1000,
};

/* ------------------------------------------------------------ figure3 */

/* The producer/consumer network of the Accelerate paper's Figure 3 (s.4.1; thesis
 * s.4.1), over an i32 vector xs (arithmetic wraps):
 *
 *   p1 = map (\x -> 3x + 1) xs              used by c1 and p2: stays manifest
 *   c1 = scanl1 (+) p1                      a consumer: its own kernel
 *   p2 = map (\x -> x*x + 5) p1
 *   p3 = backpermute (shape p2) reverse p2  (reads p2's extent twice, its data once)
 *   p4 = map (\x -> x - 7) c1
 *   p5 = zipWith (-) p3 p4                  two inputs, like zipWith
 *   c2 = scanl (+) 0 p5                     p2..p5 fuse into c2
 *   p6 = map (\x -> 13x) c2                 c2 does not fuse into p6, p7
 *   p7 = map (\x -> x + 17) c2
 *   result (p6, p7)
 *
 * Fused: 5 kernels (p1, c1, c2 with p2..p5 embedded, p6, p7) and 3
 * intermediate arrays (p1, c1, c2).  The constants 3, 5, 7, 13 and 17 make
 * the nodes easy to find in tests. */
static ax_exp f3_p1(ax_exp x, void *env)
{
    (void)env;
    return ax_add(ax_mul(x, ax_i32(3)), ax_i32(1));
}

static ax_exp f3_p2(ax_exp x, void *env)
{
    (void)env;
    return ax_add(ax_mul(x, x), ax_i32(5));
}

static ax_exp f3_rev(ax_exp i, void *env)
{
    ax_acc a = env;
    return ax_ix1(ax_sub(ax_sub(ax_size(a), ax_index_get(i, 0)), ax_i64(1)));
}

static ax_exp f3_p4(ax_exp x, void *env)
{
    (void)env;
    return ax_sub(x, ax_i32(7));
}

static ax_exp f3_p6(ax_exp x, void *env)
{
    (void)env;
    return ax_mul(x, ax_i32(13));
}

static ax_exp f3_p7(ax_exp x, void *env)
{
    (void)env;
    return ax_add(x, ax_i32(17));
}

static ax_acc ex_figure3(ax_acc xs)
{
    ax_acc p1 = ax_map(f3_p1, NULL, xs);
    ax_acc c1 = ax_scanl1(ax_fn_add, NULL, p1);
    ax_acc p2 = ax_map(f3_p2, NULL, p1);
    ax_acc p3 = ax_backpermute(ax_shape(p2), f3_rev, p2, p2);
    ax_acc p4 = ax_map(f3_p4, NULL, c1);
    ax_acc p5 = ax_zip_with(ax_fn_sub, NULL, p3, p4);
    ax_acc c2 = ax_scanl(ax_fn_add, NULL, ax_i32(0), p5);
    return ax_atuple2(ax_map(f3_p6, NULL, c2), ax_map(f3_p7, NULL, c2));
}

static ax_acc f3_build(ax_ctx *cx, void *st)
{
    IVec *v = st;
    return ex_figure3(ax_use(cx, v->a));
}

static int f3_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    IVec *v = st;
    int64_t n = v->n;
    if (nres != 2 || ax_array_rank(res[0]) != 1 || ax_array_rank(res[1]) != 1 || ax_array_size(res[0]) != n + 1 ||
        ax_array_size(res[1]) != n + 1) {
        snprintf(msg, size, "figure3: expected two vectors of %lld", (long long)(n + 1));
        return -1;
    }
    uint32_t *p1 = malloc(sizeof *p1 * (size_t)(n ? n : 1)), *c1 = malloc(sizeof *c1 * (size_t)(n ? n : 1));
    if (!p1 || !c1) {
        free(p1);
        free(c1);
        snprintf(msg, size, "figure3: out of memory");
        return -1;
    }
    uint32_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
        p1[i] = (uint32_t)v->x[i] * 3u + 1u;
        acc = i ? acc + p1[i] : p1[i];
        c1[i] = acc;
    }
    const int32_t *p6 = ax_array_data(res[0], 0), *p7 = ax_array_data(res[1], 0);
    uint32_t c2 = 0;
    int rc = 0;
    for (int64_t i = 0; i <= n && rc == 0; i++) {
        if (p6[i] != (int32_t)(13u * c2) || p7[i] != (int32_t)(c2 + 17u)) {
            snprintf(msg, size, "figure3: element %lld: got (%d, %d), expected (%d, %d)", (long long)i, p6[i], p7[i],
                     (int32_t)(13u * c2), (int32_t)(c2 + 17u));
            rc = -1;
        }
        if (i < n) {
            uint32_t p2 = p1[n - 1 - i] * p1[n - 1 - i] + 5u, p4 = c1[i] - 7u;
            c2 += p2 - p4;
        }
    }
    free(p1);
    free(c1);
    return rc;
}

static const ex_program prog_figure3 = {
    .name = "figure3",
    .about = "the producer/consumer network of the Accelerate paper's Figure 3 (p1..p7, c1, c2): 5 kernels",
    .default_size = 1000000,
    .setup = ivec_setup,
    .build = f3_build,
    .check = f3_check,
    .teardown = ivec_teardown,
    .test_size = 1000,
};

/* ------------------------------------------------------------ constfold */

/* The thesis' constant-folding example (Simplification, "Example of
 * constant expression evaluation"), mapped over a vector:
 *   f x = let a = (30, x)
 *             b = 9 - fst a / 5
 *             c = b * b * 4
 *             d = c > pi + 10 ? c - 15 : x
 *         in x * d * (60 / fst a)
 * The simplifier reduces the body to 2.0 * (21.0 * x) (constant
 * propagation through the tuple, folding, the cond on a constant); the
 * thesis goes on to 42.0 * x, which is not exact in IEEE arithmetic for
 * every x (21x may overflow or be subnormal), so axle stops there.  30
 * is made a term with ax_const so that the builder, which computes
 * operations on constants alone at once, leaves the work to the
 * simplifier. */
#define CF_PI 3.14159265358979323846

static ax_exp constfold_f(ax_exp x, void *env)
{
    (void)env;
    ax_exp a = ax_tuple2(ax_const(ax_exp_ctx(x), ax_f32(30)), x);
    ax_exp b = ax_sub(ax_f32(9), ax_div(ax_get(a, 0), ax_f32(5)));
    ax_exp c = ax_mul(ax_mul(b, b), ax_f32(4));
    ax_exp d = ax_cond(ax_gt(c, ax_add(ax_f32((float)CF_PI), ax_f32(10))), ax_sub(c, ax_f32(15)), x);
    return ax_mul(ax_mul(x, d), ax_div(ax_f32(60), ax_get(a, 0)));
}

typedef struct {
    int64_t n;
    float *x;
    ax_array *ax;
} ConstFold;

static void *constfold_setup(ax_ctx *cx, int64_t n)
{
    ConstFold *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n = n;
    if (!(c->x = malloc(sizeof(float) * (size_t)(n ? n : 1)))) { free(c); return NULL; }
    ex_rng r = {0x2545F4914F6CDD1Dull};
    for (int64_t i = 0; i < n; i++) c->x[i] = (float)ex_uniform(&r, -100, 100);
    c->ax = ax_array_wrap(cx, AX_F32, 1, &n, c->x);
    return c;
}

static ax_acc constfold_build(ax_ctx *cx, void *st)
{
    ConstFold *c = st;
    return ax_map(constfold_f, NULL, ax_use(cx, c->ax));
}

/* The thesis' function evaluated literally in f32 (no simplification):
 * (x * 21) * 2 equals 42 * x exactly for these inputs (doubling is exact
 * away from overflow), so the results must be equal, not just close. */
static int constfold_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    ConstFold *c = st;
    if (nres != 1 || ax_array_size(res[0]) != c->n || ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "constfold: expected one f32 vector of %lld", (long long)c->n);
        return -1;
    }
    const float *got = ax_array_data(res[0], 0);
    for (int64_t i = 0; i < c->n; i++) {
        float x = c->x[i], a0 = 30.0f;
        float b = 9.0f - a0 / 5.0f, cc = b * b * 4.0f;
        float d = cc > (float)CF_PI + 10.0f ? cc - 15.0f : x;
        float want = x * d * (60.0f / a0);
        if (got[i] != want || want != 42.0f * x) {
            snprintf(msg, size, "constfold: element %lld: got %.9g, expected %.9g", (long long)i, got[i], want);
            return -1;
        }
    }
    return 0;
}

static void constfold_teardown(void *st)
{
    ConstFold *c = st;
    if (!c) return;
    ax_array_release(c->ax);
    free(c->x);
    free(c);
}

static const ex_program prog_constfold = {
    .name = "constfold",
    .about = "the constant-folding example of McDonell's thesis: map (\\x -> ... x * d * (60 / fst a)) xs, which simplifies "
             "to 2.0 * (21.0 * x)",
    .default_size = 1000000,
    .setup = constfold_setup,
    .build = constfold_build,
    .check = constfold_check,
    .teardown = constfold_teardown,
    .test_size = 1000,
};

/* ------------------------------------------------------------ registry */

/* Programs defined in their own files (examples/<name>.c). */
extern const ex_program ex_prog_radixsort, ex_prog_radixsort_lsd8, ex_prog_radixsort_sort, ex_prog_smvm;
extern const ex_program ex_prog_nbody, ex_prog_mandelbrot, ex_prog_mandelbrot_while, ex_prog_fluid, ex_prog_canny;
extern const ex_program ex_prog_map_explog, ex_prog_filter_exp, ex_prog_fold_sum, ex_prog_scanl1_sum,
    ex_prog_scanl1_seg_sum;                  /* examples/skeletons.c */
extern const ex_program ex_prog_histogram;   /* examples/histogram.c */
extern const ex_program ex_prog_normalise, ex_prog_meanvar, ex_prog_filterfold, ex_prog_mapfold,
    ex_prog_quickhull,                       /* examples/planner.c */
    ex_prog_loop_steps;                      /* examples/loopsteps.c */
extern const ex_program ex_prog_licm_body, ex_prog_licm_use, ex_prog_licm_nested,
    ex_prog_licm_hoisted;                    /* examples/loopinvariant.c */

const ex_program *const ex_programs[] = { &prog_dotp, &prog_blackscholes, &prog_incnine,
                                          &ex_prog_radixsort, &ex_prog_smvm,
                                          &prog_reversemap, &prog_zipmap, &prog_figure3,
                                          &prog_constfold,
                                          &ex_prog_nbody, &ex_prog_mandelbrot, &ex_prog_mandelbrot_while,
                                          &ex_prog_fluid, &ex_prog_canny,
                                          &ex_prog_map_explog, &ex_prog_filter_exp, &ex_prog_fold_sum, &ex_prog_scanl1_sum,
                                          &ex_prog_radixsort_lsd8, &ex_prog_radixsort_sort, &ex_prog_histogram,
                                          &ex_prog_normalise, &ex_prog_meanvar, &ex_prog_filterfold, &ex_prog_mapfold,
                                          &ex_prog_quickhull, &ex_prog_loop_steps, &ex_prog_scanl1_seg_sum,
                                          &ex_prog_licm_body, &ex_prog_licm_use, &ex_prog_licm_nested,
                                          &ex_prog_licm_hoisted };
const int ex_nprograms = sizeof ex_programs / sizeof *ex_programs;

const ex_program *ex_find(const char *name)
{
    for (int i = 0; i < ex_nprograms; i++)
        if (!strcmp(ex_programs[i]->name, name)) return ex_programs[i];
    return ex_suite_find(name);
}
