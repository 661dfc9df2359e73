/*
 * The planner's benchmark programs: the kind of program the
 * clustering paper (seed 001, s.1 and s.6) and Delite's loop fusion (seed
 * 003, s.3.2) are about, where Accelerate's producer/consumer fusion
 * leaves passes that a multi-generator loop removes.  Each has a
 * hand-fused C baseline (bench/baseline_planner.c: as few passes as the
 * dependences allow, OpenMP, simd).
 *
 *   normalise   s = fold (+) 0 xs; m = fold max -inf xs;
 *               map (\x -> x / (s * m)) xs
 *               (two sibling reductions, then a map that reads them)
 *   meanvar     s = fold (+) 0 xs; q = fold (+) 0 (map (^2) xs);
 *               unit (s / n, q / n - (s / n)^2)
 *               (sibling reductions over one array)
 *   filterfold  fold (+) 0 (filter (> 0) (map (\x -> 4 x^2 - 1) xs))
 *               (a filter feeding a fold, read by nothing else)
 *   mapfold     ys = map (\x -> 2 x - 1) xs; (ys, fold (+) 0 ys)
 *               (a map that is a result, and a fold of it: one loop)
 *   quickhull   one QuickHull partition step over points (x, y) and the
 *               line from (-1000, -300) to (1000, 200):
 *               above = filter (\p -> d p > 0) pts,
 *               far   = fold (\a b -> if d a >= d b then a else b) (0,0,0)
 *                            (map (\p -> (d p, x p, y p)) above),
 *               below = filter (\p -> d p < 0) pts
 *               (two filters over one input and a fold over a filter)
 *
 * Inputs: xs uniform in [0.5, 1.5) (normalise, meanvar) or [-1, 1)
 * (filterfold), f32, from a fixed seed.  The QuickHull points have integer
 * coordinates in [-1000, 1000], so d p = 2000 (y + 300) - 500 (x + 1000)
 * is exact in f32 (every product and sum below 2^24): the partition and
 * the farthest point are exact on every backend and in the baseline.
 *
 * Tolerances for the f32 sums (against a double reference): a sum of m
 * terms in any association is within about lambda sqrt(m) u sum|x| of the
 * exact sum with overwhelming probability (Higham and Mary 2019, as
 * examples/skeletons.c explains), lambda = 10, u = 2^-24; SUM_TOL below.
 * normalise's y = x / (s m) then has the relative error of s plus a few
 * roundings; meanvar's variance q/n - mean^2 loses a factor of
 * (q/n + 2 mean^2) / var, at most 40 for these inputs (var >= 1/12 - ...;
 * mean in [0.5, 1.5)), which VAR_LOSS allows for.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_planner.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relative tolerance of an f32 sum of m terms of one sign (see above). */
static double sum_rtol(int64_t m)
{
    double u = ldexp(1.0, -24);
    return 10 * sqrt((double)(m > 1 ? m : 1)) * u + 4 * FLT_EPSILON;
}
enum { VAR_LOSS = 40 };

/* ------------------------------------------------------------ vectors */

typedef struct Vec {
    int64_t n;
    float *x;
    ax_array *ax;
    /* references (double) */
    double sum, max, sumsq, possum;
    /* baseline results */
    float *bl_y;
    float bl_a, bl_b;
    bool bl_done;
} Vec;

static void *vec_setup_range(ax_ctx *cx, int64_t n, double lo, double hi)
{
    Vec *v = calloc(1, sizeof *v);
    if (!v || !(v->x = malloc(sizeof *v->x * (size_t)(n > 0 ? n : 1))) ||
        !(v->bl_y = malloc(sizeof *v->bl_y * (size_t)(n > 0 ? n : 1)))) {
        if (v) free(v->x);
        free(v);
        return NULL;
    }
    v->n = n;
    ex_rng r = {0x243f6a8885a308d3u};
    v->max = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        float x = (float)ex_uniform(&r, lo, hi);
        v->x[i] = x;
        v->sum += x;
        v->sumsq += (double)x * x;
        if (x > v->max) v->max = x;
        float y = x * x * 4.0f - 1.0f;
        if (y > 0) v->possum += y;
    }
    v->ax = ax_array_wrap(cx, AX_F32, 1, &v->n, v->x);
    if (!v->ax) {
        free(v->bl_y);
        free(v->x);
        free(v);
        return NULL;
    }
    return v;
}

static void *vec_setup_pos(ax_ctx *cx, int64_t n) { return vec_setup_range(cx, n, 0.5, 1.5); }
static void *vec_setup_sym(ax_ctx *cx, int64_t n) { return vec_setup_range(cx, n, -1.0, 1.0); }

static void vec_teardown(void *st)
{
    Vec *v = st;
    if (!v) return;
    ax_array_release(v->ax);
    free(v->bl_y);
    free(v->x);
    free(v);
}

static bool close_rel(double got, double want, double rtol) { return fabs(got - want) <= rtol * fabs(want); }

/* ------------------------------------------------------------ normalise */

static ax_exp div_by(ax_exp x, void *env)
{
    ax_acc *sm = env;
    ax_exp s = ax_at_linear(sm[0], ax_i64(0)), m = ax_at_linear(sm[1], ax_i64(0));
    return ax_div(x, ax_mul(s, m));
}

static ax_acc norm_build(ax_ctx *cx, void *st)
{
    Vec *v = st;
    ax_acc xs = ax_use(cx, v->ax);
    ax_acc sm[2];   /* read during ax_map's one call of div_by */
    sm[0] = ax_fold(ax_fn_add, NULL, ax_f32(0), xs);
    sm[1] = ax_fold(ax_fn_max, NULL, ax_f32(-INFINITY), xs);
    return ax_map(div_by, sm, xs);
}

static int norm_compare(const Vec *v, const float *y, const char *who, char *msg, size_t size)
{
    double scale = v->sum * v->max, rtol = sum_rtol(v->n) + 4 * FLT_EPSILON;
    for (int64_t i = 0; i < v->n; i++)
        if (!close_rel(y[i], v->x[i] / scale, rtol)) {
            snprintf(msg, size, "normalise: %s element %lld is %.9g, expected %.9g", who, (long long)i, y[i],
                     v->x[i] / scale);
            return -1;
        }
    return 0;
}

static int norm_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (nres != 1 || ax_array_size(res[0]) != v->n || ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "normalise: expected one [f32] of %lld elements", (long long)v->n);
        return -1;
    }
    return norm_compare(v, ax_array_data(res[0], 0), "axle's", msg, size);
}

static int norm_baseline(void *st, int variant)
{
    Vec *v = st;
    (variant ? bl_normalise_fast : bl_normalise_std)(v->x, v->bl_y, v->n);
    v->bl_done = true;
    return 0;
}

static int norm_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (!v->bl_done) return snprintf(msg, size, "normalise: the baseline has not run"), -1;
    if (norm_check(st, res, nres, msg, size)) return -1;
    return norm_compare(v, v->bl_y, "the baseline's", msg, size);
}

const ex_program ex_prog_normalise = {
    .name = "normalise",
    .about = "planner: sum and maximum of one f32 vector (siblings), then a map dividing by them",
    .default_size = 1000000,
    .setup = vec_setup_pos,
    .build = norm_build,
    .check = norm_check,
    .teardown = vec_teardown,
    .baseline = norm_baseline,
    .check_baseline = norm_check_baseline,
    .bench_size = 20000000,
    .test_size = 1001,
    .extra = true,
};

/* ------------------------------------------------------------ meanvar */

static ax_exp square(ax_exp x, void *env) { (void)env; return ax_mul(x, x); }

static ax_acc mv_build(ax_ctx *cx, void *st)
{
    Vec *v = st;
    ax_acc xs = ax_use(cx, v->ax);
    ax_exp n = ax_cvt(ax_size(xs), AX_F32);
    ax_exp s = ax_at_linear(ax_fold(ax_fn_add, NULL, ax_f32(0), xs), ax_i64(0));
    ax_exp q = ax_at_linear(ax_fold(ax_fn_add, NULL, ax_f32(0), ax_map(square, NULL, xs)), ax_i64(0));
    ax_exp mean = ax_div(s, n);
    return ax_unit(cx, ax_tuple2(mean, ax_sub(ax_div(q, n), ax_mul(mean, mean))));
}

static int mv_compare(const Vec *v, double mean, double var, const char *who, char *msg, size_t size)
{
    double n = (double)(v->n > 0 ? v->n : 1), wm = v->sum / n, wv = v->sumsq / n - wm * wm;
    double rtol = sum_rtol(v->n);
    if (v->n == 0) return 0;
    if (!close_rel(mean, wm, rtol) || !(fabs(var - wv) <= VAR_LOSS * rtol * (v->sumsq / n))) {
        snprintf(msg, size, "meanvar: %s (mean, var) = (%.9g, %.9g), expected (%.9g, %.9g)", who, mean, var, wm, wv);
        return -1;
    }
    return 0;
}

static int mv_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (nres != 1 || ax_array_size(res[0]) != 1 || ax_array_components(res[0]) != 2 ||
        ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "meanvar: expected one unit of (f32, f32)");
        return -1;
    }
    return mv_compare(v, *(float *)ax_array_data(res[0], 0), *(float *)ax_array_data(res[0], 1), "axle's", msg,
                      size);
}

static int mv_baseline(void *st, int variant)
{
    Vec *v = st;
    (variant ? bl_meanvar_fast : bl_meanvar_std)(v->x, v->n, &v->bl_a, &v->bl_b);
    v->bl_done = true;
    return 0;
}

static int mv_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (!v->bl_done) return snprintf(msg, size, "meanvar: the baseline has not run"), -1;
    if (mv_check(st, res, nres, msg, size)) return -1;
    return mv_compare(v, v->bl_a, v->bl_b, "the baseline's", msg, size);
}

const ex_program ex_prog_meanvar = {
    .name = "meanvar",
    .about = "planner: mean and variance of an f32 vector (sum and sum of squares: sibling reductions)",
    .default_size = 1000000,
    .setup = vec_setup_pos,
    .build = mv_build,
    .check = mv_check,
    .teardown = vec_teardown,
    .baseline = mv_baseline,
    .check_baseline = mv_check_baseline,
    .bench_size = 20000000,
    .test_size = 1001,
    .extra = true,
};

/* ------------------------------------------------------------ filterfold */

static ax_exp ff_f(ax_exp x, void *env) { (void)env; return ax_sub(ax_mul(ax_mul(x, x), ax_f32(4)), ax_f32(1)); }
static ax_exp ff_p(ax_exp y, void *env) { (void)env; return ax_gt(y, ax_f32(0)); }

static ax_acc ff_build(ax_ctx *cx, void *st)
{
    Vec *v = st;
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_filter(ff_p, NULL, ax_map(ff_f, NULL, ax_use(cx, v->ax))));
}

/* The terms are positive, each within an ulp or two of the reference's
 * (x^2 * 4 - 1 with or without a fused multiply-add), and a term near 0
 * may fall on either side of the predicate: each such term is under 2^-22
 * and there are at most m of them, which the relative tolerance covers. */
static int ff_compare(const Vec *v, double got, const char *who, char *msg, size_t size)
{
    double rtol = sum_rtol(v->n) + 4 * FLT_EPSILON;
    if (!(fabs(got - v->possum) <= rtol * v->possum + 1e-6)) {
        snprintf(msg, size, "filterfold: %s sum %.9g, expected %.9g", who, got, v->possum);
        return -1;
    }
    return 0;
}

static int ff_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (nres != 1 || ax_array_size(res[0]) != 1 || ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "filterfold: expected one f32 unit");
        return -1;
    }
    return ff_compare(v, *(float *)ax_array_data(res[0], 0), "axle's", msg, size);
}

static int ff_baseline(void *st, int variant)
{
    Vec *v = st;
    v->bl_a = (variant ? bl_filterfold_fast : bl_filterfold_std)(v->x, v->n);
    v->bl_done = true;
    return 0;
}

static int ff_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (!v->bl_done) return snprintf(msg, size, "filterfold: the baseline has not run"), -1;
    if (ff_check(st, res, nres, msg, size)) return -1;
    return ff_compare(v, v->bl_a, "the baseline's", msg, size);
}

const ex_program ex_prog_filterfold = {
    .name = "filterfold",
    .about = "planner: fold (+) 0 (filter (> 0) (map (\\x -> 4 x^2 - 1) xs)), a filter feeding a fold",
    .default_size = 1000000,
    .setup = vec_setup_sym,
    .build = ff_build,
    .check = ff_check,
    .teardown = vec_teardown,
    .baseline = ff_baseline,
    .check_baseline = ff_check_baseline,
    .bench_size = 20000000,
    .test_size = 1001,
    .extra = true,
};

/* ------------------------------------------------------------ mapfold */

static ax_exp mf_f(ax_exp x, void *env) { (void)env; return ax_sub(ax_mul(x, ax_f32(2)), ax_f32(1)); }

static ax_acc mf_build(ax_ctx *cx, void *st)
{
    Vec *v = st;
    ax_acc ys = ax_map(mf_f, NULL, ax_use(cx, v->ax));
    ax_acc r[2] = {ys, ax_fold(ax_fn_add, NULL, ax_f32(0), ys)};
    return ax_atuple(2, r);
}

/* y = 2 x - 1 is exact in f32 for these x (in [0.5, 1.5)); the sum of
 * the y (in [0, 2)) has an f32 sum's tolerance. */
static int mf_compare(const Vec *v, const float *y, double s, const char *who, char *msg, size_t size)
{
    for (int64_t i = 0; i < v->n; i++)
        if (y[i] != v->x[i] * 2.0f - 1.0f) {
            snprintf(msg, size, "mapfold: %s element %lld is %.9g, expected %.9g", who, (long long)i, y[i],
                     v->x[i] * 2.0f - 1.0f);
            return -1;
        }
    double want = 2 * v->sum - (double)v->n;
    if (!(fabs(s - want) <= sum_rtol(v->n) * (2 * v->sum) + 1e-6)) {
        snprintf(msg, size, "mapfold: %s sum %.9g, expected %.9g", who, s, want);
        return -1;
    }
    return 0;
}

static int mf_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (nres != 2 || ax_array_size(res[0]) != v->n || ax_array_component_type(res[0], 0) != AX_F32 ||
        ax_array_size(res[1]) != 1 || ax_array_component_type(res[1], 0) != AX_F32) {
        snprintf(msg, size, "mapfold: expected a [f32] of %lld elements and an f32 unit", (long long)v->n);
        return -1;
    }
    return mf_compare(v, ax_array_data(res[0], 0), *(float *)ax_array_data(res[1], 0), "axle's", msg, size);
}

static int mf_baseline(void *st, int variant)
{
    Vec *v = st;
    v->bl_a = (variant ? bl_mapfold_fast : bl_mapfold_std)(v->x, v->bl_y, v->n);
    v->bl_done = true;
    return 0;
}

static int mf_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Vec *v = st;
    if (!v->bl_done) return snprintf(msg, size, "mapfold: the baseline has not run"), -1;
    if (mf_check(st, res, nres, msg, size)) return -1;
    return mf_compare(v, v->bl_y, v->bl_a, "the baseline's", msg, size);
}

const ex_program ex_prog_mapfold = {
    .name = "mapfold",
    .about = "planner: ys = map (\\x -> 2 x - 1) xs and fold (+) 0 ys, both results (a collect and a reduce in one loop)",
    .default_size = 1000000,
    .setup = vec_setup_pos,
    .build = mf_build,
    .check = mf_check,
    .teardown = vec_teardown,
    .baseline = mf_baseline,
    .check_baseline = mf_check_baseline,
    .bench_size = 20000000,
    .test_size = 1001,
    .extra = true,
};

/* ------------------------------------------------------------ quickhull */

typedef struct Hull {
    int64_t n;
    float *px, *py;
    ax_array *ax, *ay;
    /* reference */
    int64_t na, nb;
    float far[3];
    /* baseline */
    float *bax, *bay, *bbx, *bby, bfar[3];
    int64_t bna, bnb;
    bool bl_done;
} Hull;

/* d p for the line (-1000, -300) -> (1000, 200), exact for these inputs. */
static float hull_d(float x, float y) { return 2000.0f * (y + 300.0f) - 500.0f * (x + 1000.0f); }

static void hull_teardown(void *st)
{
    Hull *h = st;
    if (!h) return;
    ax_array_release(h->ax);
    ax_array_release(h->ay);
    free(h->px), free(h->py), free(h->bax), free(h->bay), free(h->bbx), free(h->bby);
    free(h);
}

static void *hull_setup(ax_ctx *cx, int64_t n)
{
    Hull *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    size_t m = sizeof(float) * (size_t)(n > 0 ? n : 1);
    h->n = n;
    if (!(h->px = malloc(m)) || !(h->py = malloc(m)) || !(h->bax = malloc(m)) || !(h->bay = malloc(m)) ||
        !(h->bbx = malloc(m)) || !(h->bby = malloc(m))) {
        hull_teardown(h);
        return NULL;
    }
    ex_rng r = {0x13198a2e03707344u};
    h->far[0] = h->far[1] = h->far[2] = 0;
    for (int64_t i = 0; i < n; i++) {
        h->px[i] = (float)((int64_t)(ex_next(&r) % 2001) - 1000);
        h->py[i] = (float)((int64_t)(ex_next(&r) % 2001) - 1000);
        float d = hull_d(h->px[i], h->py[i]);
        if (d > 0) {
            h->na++;
            if (!(h->far[0] >= d)) h->far[0] = d, h->far[1] = h->px[i], h->far[2] = h->py[i];
        }
        if (d < 0) h->nb++;
    }
    h->ax = ax_array_wrap(cx, AX_F32, 1, &h->n, h->px);
    h->ay = ax_array_wrap(cx, AX_F32, 1, &h->n, h->py);
    if (!h->ax || !h->ay) {
        hull_teardown(h);
        return NULL;
    }
    return h;
}

static ax_exp pt_d(ax_exp p)
{
    ax_exp x = ax_get(p, 0), y = ax_get(p, 1);
    return ax_sub(ax_mul(ax_f32(2000), ax_add(y, ax_f32(300))), ax_mul(ax_f32(500), ax_add(x, ax_f32(1000))));
}
static ax_exp above_p(ax_exp p, void *env) { (void)env; return ax_gt(pt_d(p), ax_f32(0)); }
static ax_exp below_p(ax_exp p, void *env) { (void)env; return ax_lt(pt_d(p), ax_f32(0)); }
static ax_exp pair(ax_exp x, ax_exp y, void *env) { (void)env; return ax_tuple2(x, y); }
static ax_exp with_d(ax_exp p, void *env)
{
    (void)env;
    ax_exp c[3] = {pt_d(p), ax_get(p, 0), ax_get(p, 1)};
    return ax_tuple(3, c);
}
/* The farther of two (d, x, y), the left one on a tie: associative, not
 * commutative. */
static ax_exp farther(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_cond(ax_ge(ax_get(a, 0), ax_get(b, 0)), a, b);
}

static ax_acc hull_build(ax_ctx *cx, void *st)
{
    Hull *h = st;
    ax_acc pts = ax_zip_with(pair, NULL, ax_use(cx, h->ax), ax_use(cx, h->ay));
    ax_acc above = ax_filter(above_p, NULL, pts);
    ax_exp z[3] = {ax_f32(0), ax_f32(0), ax_f32(0)};
    ax_acc far = ax_fold(farther, NULL, ax_tuple(3, z), ax_map(with_d, NULL, above));
    ax_acc below = ax_filter(below_p, NULL, pts);
    ax_acc out[3] = {above, far, below};
    return ax_atuple(3, out);
}

/* The points of (x, y) in order with d of one sign, against what came
 * back. */
static int hull_side(const Hull *h, int sign, const float *gx, const float *gy, int64_t ng, const char *who,
                     char *msg, size_t size)
{
    int64_t k = 0;
    for (int64_t i = 0; i < h->n; i++) {
        float d = hull_d(h->px[i], h->py[i]);
        if (!(sign > 0 ? d > 0 : d < 0)) continue;
        if (k >= ng || gx[k] != h->px[i] || gy[k] != h->py[i]) {
            snprintf(msg, size, "quickhull: %s %s point %lld is wrong or missing", who, sign > 0 ? "above" : "below",
                     (long long)k);
            return -1;
        }
        k++;
    }
    if (k != ng) {
        snprintf(msg, size, "quickhull: %s %lld points %s, expected %lld", who, (long long)ng,
                 sign > 0 ? "above" : "below", (long long)k);
        return -1;
    }
    return 0;
}

static int hull_far(const Hull *h, const float *f, const char *who, char *msg, size_t size)
{
    if (f[0] != h->far[0] || f[1] != h->far[1] || f[2] != h->far[2]) {
        snprintf(msg, size, "quickhull: %s farthest (%g, %g, %g), expected (%g, %g, %g)", who, f[0], f[1], f[2],
                 h->far[0], h->far[1], h->far[2]);
        return -1;
    }
    return 0;
}

static int hull_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Hull *h = st;
    if (nres != 3 || ax_array_components(res[0]) != 2 || ax_array_components(res[1]) != 3 ||
        ax_array_components(res[2]) != 2 || ax_array_size(res[1]) != 1) {
        snprintf(msg, size, "quickhull: expected [(f32, f32)], (f32, f32, f32), [(f32, f32)]");
        return -1;
    }
    float f[3];
    for (int k = 0; k < 3; k++) f[k] = *(float *)ax_array_data(res[1], k);
    if (hull_side(h, 1, ax_array_data(res[0], 0), ax_array_data(res[0], 1), ax_array_size(res[0]), "axle's", msg,
                  size) ||
        hull_side(h, -1, ax_array_data(res[2], 0), ax_array_data(res[2], 1), ax_array_size(res[2]), "axle's", msg,
                  size))
        return -1;
    return hull_far(h, f, "axle's", msg, size);
}

static int hull_baseline(void *st, int variant)
{
    Hull *h = st;
    h->bl_done = false;
    if ((variant ? bl_quickhull_fast : bl_quickhull_std)(h->px, h->py, h->n, h->bax, h->bay, &h->bna, h->bbx,
                                                         h->bby, &h->bnb, h->bfar))
        return -1;
    h->bl_done = true;
    return 0;
}

static int hull_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Hull *h = st;
    if (!h->bl_done) return snprintf(msg, size, "quickhull: the baseline has not run"), -1;
    if (hull_check(st, res, nres, msg, size)) return -1;
    if (hull_side(h, 1, h->bax, h->bay, h->bna, "the baseline's", msg, size) ||
        hull_side(h, -1, h->bbx, h->bby, h->bnb, "the baseline's", msg, size))
        return -1;
    return hull_far(h, h->bfar, "the baseline's", msg, size);
}

const ex_program ex_prog_quickhull = {
    .name = "quickhull",
    .about = "planner: a QuickHull partition step: points above and below a line (two filters) and the "
             "farthest above (a fold over a filter)",
    .default_size = 1000000,
    .setup = hull_setup,
    .build = hull_build,
    .check = hull_check,
    .teardown = hull_teardown,
    .baseline = hull_baseline,
    .check_baseline = hull_check_baseline,
    .bench_size = 10000000,
    .test_size = 1001,
    .extra = true,
};
