/*
 * Single-skeleton micro-benchmarks: one map, one fold and one
 * scan over an f32 vector, each timed against a hand-written OpenMP
 * baseline (bench/baseline_skeletons.c).  With nothing to fuse or share,
 * they measure the CPU backend's skeletons themselves: the per-element
 * cost of a map with libm calls, the bandwidth of a reduction, and the
 * two passes of a parallel scan.  They are not among the Accelerate paper's Table 2
 * programs, so `axle bench` runs them only when named (ex_program.extra).
 *
 *   map-explog  map (\x -> exp (x * 0.001) + log x) xs
 *   fold-sum    fold (+) 0 xs                    (a rank-0 result)
 *   scanl1-sum  scanl1 (+) xs
 *   filter-exp  filter (> 1.5) (map (\x -> exp (x - 1)) xs): a filter of
 *               a computed vector, about 60% kept
 *   scanl1-seg-sum  scanl1_seg (+) xs lens: running sums within segments
 *               whose lengths are 0..126 (a fifth of them empty, mean
 *               about 50): per-group running totals, the segmented
 *               scans' everyday use
 *
 * Input: x[i] = 1 + ((i * 7919) mod 1000) / 1000, rounded to f32: in
 * [1, 2) (log is defined, and the sums have no cancellation), cycling
 * through all 1000 values (7919 is prime to 1000), the same on every
 * machine.
 *
 * Tolerances (the reference is computed in double from the same f32
 * inputs).
 *
 * map: f32 evaluation commits at most k ulp in expf and in logf (glibc's
 * libm: under 1 ulp; libmvec's vector versions, which the baseline and
 * possibly the generated code call: 4 ulp, so k = 4) and half an ulp in
 * the add.  Both terms are positive and at most the result y, so their
 * ulps are at most y's, and ulp(y) <= FLT_EPSILON * y: the error is at
 * most (2k + 1/2) FLT_EPSILON y.  The rounding of x * 0.001 moves exp's
 * argument (at most 0.002) by a relative 2^-24, i.e. exp's value by about
 * 10^-10 of it: nothing.  The check allows MAP_ULPS = 9 FLT_EPSILON |y|
 * (about 1.1e-6 relative).
 *
 * fold and scan: a sum of m terms in f32 in any association (threads,
 * vector lanes, chunks, the scan's carries) is within
 * gamma(m-1) * sum |x| of the exact sum, gamma(k) = k u / (1 - k u),
 * u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms,
 * s.4.2).  That bound is the one to use for small m, but it grows like m
 * and says nothing once m u >= 1: at the bench size of 2*10^7 it exceeds
 * the sum itself, and would accept 0.  For large m the check uses the
 * probabilistic bound of Higham and Mary (SIAM J. Sci. Comput. 41(5),
 * 2019): with rounding errors that are independent and of mean zero, the
 * error exceeds exp(lambda sqrt(m) u + m u^2 / (1 - u)) - 1, about
 * lambda sqrt(m) u, times sum |x| with probability at most
 * 2 m exp(-lambda^2 (1 - u)^2 / 2); with lambda = 10, below 10^-14 for
 * one sum of 2*10^7 terms and below 10^-7 for all 2*10^7 prefix sums of
 * the scan together.  The tolerance is the
 * smaller of the two bounds, plus the double reference's own error,
 * (m - 1) DBL_EPSILON * sum |x|.  The scan's element i is a sum of m = i+1
 * terms and is checked against its own bound, so x[0] must come back
 * exactly.
 *
 * The independence assumption fails where an f32 accumulator stagnates:
 * a running sum that adds these inputs one at a time passes 2^24 after
 * about 1.1*10^7 of them, and from there its ulp (2) exceeds the inputs'
 * fractional parts and nearly every add rounds up (measured: a
 * sequential f32 sum of 2*10^7 elements is 12% too large, against an
 * allowance of 0.27%).  Such a result fails the check, rightly: it is
 * not within the accuracy that a parallel sum attains.  Measured at
 * 2*10^7 on 1 and 2 threads, the baseline's sum is within 10^-7 relative
 * and its scan within 0.13 of the bound everywhere (its vector scan adds
 * groups of 8 elements to the running sum, whose roundings do not all go
 * the same way).  The interpreter sums sequentially: run these two
 * programs on it below 10^7 elements.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_skeletons.h"
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAP_ULPS 9.0      /* (2k + 1/2) with k = 4, rounded up; see above */
#define SUM_LAMBDA 10.0   /* the probabilistic bound's lambda; see above */

/* The constant of map-explog, as the program writes it (an f32). */
#define EXPLOG_SCALE 0.001f

typedef struct {
    int64_t n;
    float *x;
    ax_array *ax;
    int32_t *lens;   /* scanl1-seg-sum: the segment lengths (m of them) */
    int64_t m;
    ax_array *alens;
    float *bl;       /* the baseline's vector (map, scan): n elements */
    float *bl_tmp;   /* filter-exp: the baseline's scratch */
    int64_t bl_count;   /* filter-exp: the baseline's elements kept */
    float bl_sum;    /* the baseline's sum (fold) */
    bool bl_done;
} Skel;

static void *skel_setup(ax_ctx *cx, int64_t n)
{
    Skel *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    if (!(s->x = malloc(sizeof(float) * (size_t)(n ? n : 1)))) {
        free(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) s->x[i] = (float)(1.0 + (double)((i * 7919) % 1000) / 1000.0);
    s->ax = ax_array_wrap(cx, AX_F32, 1, &n, s->x);
    return s;
}

static void skel_teardown(void *st)
{
    Skel *s = st;
    if (!s) return;
    ax_array_release(s->ax);
    ax_array_release(s->alens);
    free(s->x);
    free(s->lens);
    free(s->bl);
    free(s->bl_tmp);
    free(s);
}

/* The baseline's output vector, made on its first run (the warm-up, when
 * axle bench times it) so that the timed runs do not allocate. */
static float *skel_bl_vector(Skel *s)
{
    if (!s->bl) s->bl = malloc(sizeof(float) * (size_t)(s->n ? s->n : 1));
    return s->bl;
}

/* A result that must be one f32 vector of n elements. */
static const float *skel_vector(const Skel *s, const char *prog, ax_array *const *res, int nres, char *msg,
                                size_t size)
{
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_size(res[0]) != s->n ||
        ax_array_components(res[0]) != 1 || ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "%s: expected one f32 vector of %lld", prog, (long long)s->n);
        return NULL;
    }
    return ax_array_data(res[0], 0);
}

/* The bound on the error of an f32 sum of m terms whose magnitudes add up
 * to mag, in any association, plus that of the double reference (see the
 * header comment). */
static double sum_tol(int64_t m, double mag)
{
    const double u = FLT_EPSILON / 2, k = m > 1 ? (double)(m - 1) : 0;
    const double det = k * u < 1 ? k * u / (1 - k * u) : INFINITY;
    const double prob = expm1(SUM_LAMBDA * sqrt((double)m) * u + (double)m * u * u / (1 - u));
    return (fmin(det, prob) + k * DBL_EPSILON) * mag;
}

/* ------------------------------------------------------------ map-explog */

static ax_exp explog(ax_exp x, void *env)
{
    (void)env;
    return ax_add(ax_exp_(ax_mul(x, ax_f32(EXPLOG_SCALE))), ax_log(x));
}

static ax_acc explog_build(ax_ctx *cx, void *st)
{
    Skel *s = st;
    return ax_map(explog, NULL, ax_use(cx, s->ax));
}

static int explog_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    const float *got = skel_vector(s, "map-explog", res, nres, msg, size);
    if (!got) return -1;
    for (int64_t i = 0; i < s->n; i++) {
        /* x * 0.001f is exact in double (24 + 24 significant bits) */
        const double x = s->x[i], want = exp(x * (double)EXPLOG_SCALE) + log(x);
        const double tol = MAP_ULPS * FLT_EPSILON * fabs(want);
        if (!(fabs(got[i] - want) <= tol)) {
            snprintf(msg, size, "map-explog: element %lld (x = %.9g): got %.9g, expected %.9g (tolerance %.3g)",
                     (long long)i, x, got[i], want, tol);
            return -1;
        }
    }
    return 0;
}

static int explog_baseline(void *st, int variant)
{
    Skel *s = st;
    float *y = skel_bl_vector(s);
    if (!y) return -1;
    (variant ? bl_map_explog_fast : bl_map_explog_std)(s->x, y, s->n);
    s->bl_done = true;
    return 0;
}

/* Both within MAP_ULPS FLT_EPSILON |y| of the exact y, so within twice
 * that of each other; the larger of the two magnitudes stands for |y|
 * (they differ from it by a relative 10^-6, which moves the tolerance by
 * as little). */
static int explog_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    if (!s->bl_done || !s->bl) {
        snprintf(msg, size, "map-explog: the baseline has not run");
        return -1;
    }
    const float *got = skel_vector(s, "map-explog", res, nres, msg, size);
    if (!got) return -1;
    for (int64_t i = 0; i < s->n; i++) {
        const double a = got[i], b = s->bl[i], tol = 2 * MAP_ULPS * FLT_EPSILON * fmax(fabs(a), fabs(b));
        if (!(fabs(a - b) <= tol)) {
            snprintf(msg, size, "map-explog: element %lld: axle %.9g, baseline %.9g (tolerance %.3g)", (long long)i,
                     a, b, tol);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ filter-exp */

static ax_exp exp_less_one(ax_exp x, void *env)
{
    (void)env;
    return ax_exp_(ax_sub(x, ax_f32(1)));
}

static ax_exp above(ax_exp y, void *env)
{
    (void)env;
    return ax_gt(y, ax_f32(1.5f));
}

static ax_acc fexp_build(ax_ctx *cx, void *st)
{
    Skel *s = st;
    return ax_filter(above, NULL, ax_map(exp_less_one, NULL, ax_use(cx, s->ax)));
}

/* The values kept, in order, each within MAP_ULPS of exp(x - 1) in
 * double (x - 1 is exact in f32; no input is within 4 ulp of the
 * threshold: the nearest, x = 1.405, gives 1.49935). */
static int fexp_same(const Skel *s, const char *what, const float *got, int64_t count, char *msg, size_t size)
{
    int64_t k = 0;
    for (int64_t i = 0; i < s->n; i++) {
        double want = exp((double)s->x[i] - 1);
        if (!(want > 1.5)) continue;
        if (k >= count) break;
        if (fabs(got[k] - want) > MAP_ULPS * FLT_EPSILON * want) {
            snprintf(msg, size, "filter-exp: %s element %lld (x = %.9g): %.9g, expected %.9g", what, (long long)k,
                     s->x[i], got[k], want);
            return -1;
        }
        k++;
    }
    int64_t want_n = 0;
    for (int64_t i = 0; i < s->n; i++) want_n += exp((double)s->x[i] - 1) > 1.5;
    if (count != want_n) {
        snprintf(msg, size, "filter-exp: %s kept %lld elements, expected %lld", what, (long long)count,
                 (long long)want_n);
        return -1;
    }
    return 0;
}

static int fexp_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_components(res[0]) != 1 ||
        ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "filter-exp: expected one f32 vector");
        return -1;
    }
    return fexp_same(s, "axle's", ax_array_data(res[0], 0), ax_array_size(res[0]), msg, size);
}

static int fexp_baseline(void *st, int variant)
{
    Skel *s = st;
    float *y = skel_bl_vector(s);
    if (!s->bl_tmp) s->bl_tmp = malloc(sizeof(float) * (size_t)(s->n ? s->n : 1));
    if (!y || !s->bl_tmp) return -1;
    s->bl_count = (variant ? bl_filter_exp_fast : bl_filter_exp_std)(s->x, s->bl_tmp, y, s->n);
    s->bl_done = true;
    return 0;
}

static int fexp_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    (void)res, (void)nres;
    Skel *s = st;
    if (!s->bl_done || !s->bl) {
        snprintf(msg, size, "filter-exp: the baseline has not run");
        return -1;
    }
    return fexp_same(s, "the baseline's", s->bl, s->bl_count, msg, size);
}

const ex_program ex_prog_filter_exp = {
    .name = "filter-exp",
    .about = "skeleton micro-benchmark: filter (> 1.5) (map (\\x -> exp (x - 1)) xs) over an f32 vector",
    .default_size = 1000000,
    .setup = skel_setup,
    .build = fexp_build,
    .check = fexp_check,
    .teardown = skel_teardown,
    .baseline = fexp_baseline,
    .check_baseline = fexp_check_baseline,
    .bench_size = 20000000,
    .test_size = 1000,
    .extra = true,
};

const ex_program ex_prog_map_explog = {
    .name = "map-explog",
    .about = "skeleton micro-benchmark: map (\\x -> exp (x * 0.001) + log x) over an f32 vector",
    .default_size = 1000000,
    .setup = skel_setup,
    .build = explog_build,
    .check = explog_check,
    .teardown = skel_teardown,
    .baseline = explog_baseline,
    .check_baseline = explog_check_baseline,
    .bench_size = 20000000,
    .test_size = 1000,
    .extra = true,
};

/* ------------------------------------------------------------ fold-sum */

static ax_acc fsum_build(ax_ctx *cx, void *st)
{
    Skel *s = st;
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_use(cx, s->ax));
}

/* A result that must be one f32 scalar (a rank-0 array). */
static int fsum_result(const Skel *s, ax_array *const *res, int nres, float *out, char *msg, size_t size)
{
    (void)s;
    if (nres != 1 || ax_array_rank(res[0]) != 0 || ax_array_components(res[0]) != 1 ||
        ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "fold-sum: expected one rank-0 f32 result");
        return -1;
    }
    *out = *(const float *)ax_array_data(res[0], 0);
    return 0;
}

static int fsum_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    float got;
    if (fsum_result(s, res, nres, &got, msg, size) != 0) return -1;
    double want = 0, mag = 0;
    for (int64_t i = 0; i < s->n; i++) {
        want += s->x[i];
        mag += fabs((double)s->x[i]);
    }
    const double tol = sum_tol(s->n, mag);
    if (!(fabs(got - want) <= tol)) {
        snprintf(msg, size, "fold-sum: got %.9g, expected %.9g (tolerance %.3g)", got, want, tol);
        return -1;
    }
    return 0;
}

static int fsum_baseline(void *st, int variant)
{
    Skel *s = st;
    s->bl_sum = (variant ? bl_fold_sum_fast : bl_fold_sum_std)(s->x, s->n);
    s->bl_done = true;
    return 0;
}

/* The CUDA baselines: CUB's reduction and scan (bench/cuda/baselines.cu). */
static int fsum_cuda(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Skel *s = st;
    int (*f)(const float *, int64_t, int, float *, double *, char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_fold_sum"))) return snprintf(err, errsize, "no axcb_fold_sum"), -1;
    if (f(s->x, s->n, runs, &s->bl_sum, ms, err, errsize)) return -1;
    s->bl_done = true;
    return 0;
}

static int scan_cuda(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Skel *s = st;
    float *y = skel_bl_vector(s);
    if (!y) return snprintf(err, errsize, "out of memory"), -1;
    int (*f)(const float *, int64_t, int, float *, double *, char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_scanl1_sum"))) return snprintf(err, errsize, "no axcb_scanl1_sum"), -1;
    if (f(s->x, s->n, runs, y, ms, err, errsize)) return -1;
    s->bl_done = true;
    return 0;
}

/* Both within fsum_check's bound of the exact sum, so within twice it of
 * each other. */
static int fsum_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    float got;
    if (!s->bl_done) {
        snprintf(msg, size, "fold-sum: the baseline has not run");
        return -1;
    }
    if (fsum_result(s, res, nres, &got, msg, size) != 0) return -1;
    double mag = 0;
    for (int64_t i = 0; i < s->n; i++) mag += fabs((double)s->x[i]);
    const double tol = 2 * sum_tol(s->n, mag);
    if (!(fabs((double)got - s->bl_sum) <= tol)) {
        snprintf(msg, size, "fold-sum: axle %.9g, baseline %.9g (tolerance %.3g)", got, s->bl_sum, tol);
        return -1;
    }
    return 0;
}

const ex_program ex_prog_fold_sum = {
    .name = "fold-sum",
    .about = "skeleton micro-benchmark: fold (+) 0 over an f32 vector (a rank-0 sum)",
    .default_size = 1000000,
    .setup = skel_setup,
    .build = fsum_build,
    .check = fsum_check,
    .teardown = skel_teardown,
    .baseline = fsum_baseline,
    .check_baseline = fsum_check_baseline,
    .cuda_baseline = fsum_cuda,
    .bench_size = 20000000,
    .test_size = 1000,
    .extra = true,
};

/* ------------------------------------------------------------ scanl1-sum */

static ax_acc scan_build(ax_ctx *cx, void *st)
{
    Skel *s = st;
    return ax_scanl1(ax_fn_add, NULL, ax_use(cx, s->ax));
}

/* Element i against the exact prefix sum of x[0..i] (in double), within
 * the bound for a sum of i + 1 terms. */
static int scan_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    const float *got = skel_vector(s, "scanl1-sum", res, nres, msg, size);
    if (!got) return -1;
    double want = 0, mag = 0;
    for (int64_t i = 0; i < s->n; i++) {
        want += s->x[i];
        mag += fabs((double)s->x[i]);
        const double tol = sum_tol(i + 1, mag);
        if (!(fabs(got[i] - want) <= tol)) {
            snprintf(msg, size, "scanl1-sum: element %lld: got %.9g, expected %.9g (tolerance %.3g)", (long long)i,
                     got[i], want, tol);
            return -1;
        }
    }
    return 0;
}

static int scan_baseline(void *st, int variant)
{
    Skel *s = st;
    float *y = skel_bl_vector(s);
    if (!y) return -1;
    (variant ? bl_scanl1_sum_fast : bl_scanl1_sum_std)(s->x, y, s->n);
    s->bl_done = true;
    return 0;
}

/* Element by element, within twice scan_check's bound of each other. */
static int scan_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    if (!s->bl_done || !s->bl) {
        snprintf(msg, size, "scanl1-sum: the baseline has not run");
        return -1;
    }
    const float *got = skel_vector(s, "scanl1-sum", res, nres, msg, size);
    if (!got) return -1;
    double mag = 0;
    for (int64_t i = 0; i < s->n; i++) {
        mag += fabs((double)s->x[i]);
        const double tol = 2 * sum_tol(i + 1, mag);
        if (!(fabs((double)got[i] - s->bl[i]) <= tol)) {
            snprintf(msg, size, "scanl1-sum: element %lld: axle %.9g, baseline %.9g (tolerance %.3g)",
                     (long long)i, got[i], s->bl[i], tol);
            return -1;
        }
    }
    return 0;
}

const ex_program ex_prog_scanl1_sum = {
    .name = "scanl1-sum",
    .about = "skeleton micro-benchmark: scanl1 (+) over an f32 vector (inclusive prefix sums)",
    .default_size = 1000000,
    .setup = skel_setup,
    .build = scan_build,
    .check = scan_check,
    .teardown = skel_teardown,
    .baseline = scan_baseline,
    .check_baseline = scan_check_baseline,
    .cuda_baseline = scan_cuda,
    .bench_size = 20000000,
    .test_size = 1000,
    .extra = true,
};

/* ------------------------------------------------------------ scanl1-seg-sum */

/* skel_setup's vector, cut into segments of 0..126 elements from a fixed
 * generator (a fifth of them empty). */
static void *sseg_setup(ax_ctx *cx, int64_t n)
{
    Skel *s = skel_setup(cx, n);
    if (!s) return NULL;
    if (!(s->lens = malloc(sizeof(int32_t) * (size_t)(n + 1)))) {
        skel_teardown(s);
        return NULL;
    }
    ex_rng r = {0x5e95ca9u};
    for (int64_t left = n; left > 0;) {
        uint64_t v = ex_next(&r) % 160;
        int64_t l = v < 33 ? 0 : (int64_t)(v - 33);
        if (l > left) l = left;
        s->lens[s->m++] = (int32_t)l;
        left -= l;
    }
    s->alens = ax_array_wrap(cx, AX_I32, 1, &s->m, s->lens);
    if (!s->ax || !s->alens) {
        skel_teardown(s);
        return NULL;
    }
    return s;
}

static ax_acc sseg_build(ax_ctx *cx, void *st)
{
    Skel *s = st;
    return ax_scanl1_seg(ax_fn_add, NULL, ax_use(cx, s->ax), ax_use(cx, s->alens));
}

/* Element by element against the exact running sum of its segment (in
 * double; with `other`, against that f32 result), within k times the
 * bound for its number of terms (the header's; k = 2 between two f32
 * results). */
static int sseg_compare(const Skel *s, const float *got, const float *other, double k, const char *what, char *msg,
                        size_t size)
{
    int64_t i = 0;
    for (int64_t j = 0; j < s->m; j++) {
        double want = 0, mag = 0;
        for (int64_t t = 0; t < s->lens[j]; t++, i++) {
            want += s->x[i];
            mag += fabs((double)s->x[i]);
            const double ref = other ? (double)other[i] : want, tol = k * sum_tol(t + 1, mag);
            if (!(fabs((double)got[i] - ref) <= tol)) {
                snprintf(msg, size, "scanl1-seg-sum: %s element %lld (segment %lld): %.9g, expected %.9g (tolerance %.3g)",
                         what, (long long)i, (long long)j, got[i], ref, tol);
                return -1;
            }
        }
    }
    return 0;
}

static int sseg_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    const float *got = skel_vector(s, "scanl1-seg-sum", res, nres, msg, size);
    return got ? sseg_compare(s, got, NULL, 1, "axle's", msg, size) : -1;
}

static int sseg_baseline(void *st, int variant)
{
    Skel *s = st;
    float *y = skel_bl_vector(s);
    if (!y) return -1;
    (variant ? bl_scanl1_seg_sum_fast : bl_scanl1_seg_sum_std)(s->x, s->lens, s->m, y);
    s->bl_done = true;
    return 0;
}

static int sseg_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Skel *s = st;
    if (!s->bl_done || !s->bl) {
        snprintf(msg, size, "scanl1-seg-sum: the baseline has not run");
        return -1;
    }
    const float *got = skel_vector(s, "scanl1-seg-sum", res, nres, msg, size);
    return got ? sseg_compare(s, got, s->bl, 2, "axle's against the baseline's", msg, size) : -1;
}

const ex_program ex_prog_scanl1_seg_sum = {
    .name = "scanl1-seg-sum",
    .about = "skeleton micro-benchmark: scanl1_seg (+) over an f32 vector in segments of 0..126 (running sums per group)",
    .default_size = 1000000,
    .setup = sseg_setup,
    .build = sseg_build,
    .check = sseg_check,
    .teardown = skel_teardown,
    .baseline = sseg_baseline,
    .check_baseline = sseg_check_baseline,
    .bench_size = 20000000,
    .test_size = 1000,
    .extra = true,
};
