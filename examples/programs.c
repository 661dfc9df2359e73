/*
 * The built-in programs: dotp and Black-Scholes (the seeds' Figure 1) and
 * incnine (the paper's Figure 2 term).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
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
    "dotp", "dot product: fold (+) 0 (zipWith (*) xs ys) over f32 vectors", 1000000,
    dotp_setup, dotp_build, dotp_check, dotp_teardown,
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

static void bs_teardown(void *st)
{
    Bs *b = st;
    if (!b) return;
    ax_array_release(b->a);
    free(b->p);
    free(b->s);
    free(b->y);
    free(b);
}

static const ex_program prog_blackscholes = {
    "blackscholes", "Black-Scholes option pricing over (price, strike, years) tuples (seeds' Figure 1)",
    1000000, bs_setup, bs_build, bs_check, bs_teardown,
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
    "incnine", "the paper's Figure 2 term (inc nine - nine) as scalar code, for sharing recovery", 1,
    nine_setup, nine_build, nine_check, free,
};

/* ------------------------------------------------------------ registry */

const ex_program *const ex_programs[] = { &prog_dotp, &prog_blackscholes, &prog_incnine };
const int ex_nprograms = sizeof ex_programs / sizeof *ex_programs;

const ex_program *ex_find(const char *name)
{
    for (int i = 0; i < ex_nprograms; i++)
        if (!strcmp(ex_programs[i]->name, name)) return ex_programs[i];
    return NULL;
}
