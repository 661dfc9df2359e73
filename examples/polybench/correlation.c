/*
 * PolyBench/C 4.2.1 correlation: the m x m correlation matrix of n
 * observations (rows) of m variables (columns), in double:
 *
 *   mean   = map (/ n) (fold (+) 0 (transpose data))
 *   d      = zipWith (-) data (replicate (Z:.n:.All) mean)
 *   stddev = map (\v -> let s = sqrt (v / n) in s <= 0.1 ? 1 : s)
 *                (fold (+) 0 (map (^2) (transpose d)))
 *   x      = zipWith (\c s -> c / (sqrt n * s)) d (replicate (Z:.n:.All) stddev)
 *   corr   = generate (\(i, j) -> i == j ? 1 : p!(i,j))
 *            where p = fold (+) 0 (zipWith (*) (replicate xt) (replicate xt)), xt = transpose x
 *
 * (the suite's rule: a deviation of at most 0.1 counts as 1, to avoid
 * dividing by nearly 0).  The suite computes the upper triangle and
 * mirrors it; the fold computes every element (each product is
 * symmetric).  n is read from the data's shape.
 *
 * Sizes: n = N (observations); M = n * 1200/1400 (the LARGE dataset's
 * N = 1400, M = 1200), rounded.  Initialisation as the suite's.
 * Tolerance 1e-10 (polybench.h): axle may add in another order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"
#include <math.h>

static ax_exp divide(ax_exp x, void *env) { return ax_div(x, *(ax_exp *)env); }
static ax_exp square(ax_exp x, void *env)
{
    (void)env;
    return ax_mul(x, x);
}

static ax_exp deviation(ax_exp ssq, void *env)
{
    ax_exp sd = ax_sqrt(ax_div(ssq, *(ax_exp *)env));
    return ax_cond(ax_le(sd, ax_f64(0.1)), ax_f64(1), sd);
}

static ax_exp scale(ax_exp c, ax_exp sd, void *env) { return ax_div(c, ax_mul(ax_sqrt(*(ax_exp *)env), sd)); }

static ax_exp unit_diagonal(ax_exp ix, void *env)
{
    ax_acc p = *(ax_acc *)env;
    return ax_cond(ax_eq(ax_index_get(ix, 0), ax_index_get(ix, 1)), ax_f64(1), ax_at(p, ix));
}

static ax_acc correlation_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc data = pb_use(cx, s, 0);
    ax_exp sh = ax_shape(data), n = ax_index_get(sh, 0), m = ax_index_get(sh, 1);
    ax_exp float_n = ax_cvt(n, AX_F64);
    ax_slice down[2] = {ax_fixed(n), ax_all()};   /* a row vector repeated n times */
    ax_acc mean = ax_map(divide, &float_n, ax_fold(ax_fn_add, NULL, ax_f64(0), ax_transpose(data, NULL)));
    ax_acc d = ax_zip_with(ax_fn_sub, NULL, data, ax_replicate(2, down, mean));
    ax_acc ssq = ax_fold(ax_fn_add, NULL, ax_f64(0), ax_map(square, NULL, ax_transpose(d, NULL)));
    ax_acc stddev = ax_map(deviation, &float_n, ssq);
    ax_acc x = ax_zip_with(scale, &float_n, d, ax_replicate(2, down, stddev));
    ax_acc xt = ax_transpose(x, NULL);
    ax_acc rows = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(m), ax_all()}, xt);   /* [i][j][k] = x[k][i] */
    ax_acc cols = ax_replicate(3, (ax_slice[]){ax_fixed(m), ax_all(), ax_all()}, xt);   /* [i][j][k] = x[k][j] */
    ax_acc p = ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL, rows, cols));
    return ax_generate(cx, ax_shape(p), unit_diagonal, &p);
}

static void correlation_reference(pb_state *s)
{
    int64_t n = s->n, m = s->d[0];
    const double *data = pb_in(s, 0);
    double *mean = s->work[0], *sd = s->work[1], *x = s->work[2], *corr = s->ref[0], fn = (double)n;
    for (int64_t j = 0; j < m; j++) {
        double acc = 0, ssq = 0;
        for (int64_t i = 0; i < n; i++) acc += data[i * m + j];
        mean[j] = acc / fn;
        for (int64_t i = 0; i < n; i++) ssq += (data[i * m + j] - mean[j]) * (data[i * m + j] - mean[j]);
        sd[j] = sqrt(ssq / fn);
        if (sd[j] <= 0.1) sd[j] = 1.0;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) x[i * m + j] = (data[i * m + j] - mean[j]) / (sqrt(fn) * sd[j]);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++) {
            double acc = 0;
            for (int64_t k = 0; k < n; k++) acc += x[k * m + i] * x[k * m + j];
            corr[i * m + j] = i == j ? 1.0 : acc;
        }
}

static void *correlation_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("correlation", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t m = pb_dim(n, 1200, 1400);
    s->d[0] = m;
    s->reference = correlation_reference;
    double *data = pb_input(s, cx, 2, n, m, 0);
    if (!data || !pb_scratch(s, m) || !pb_scratch(s, m) || !pb_scratch(s, n * m) || pb_output(s, 2, m, m, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) data[i * m + j] = (double)(i * j) / m + i;
    return s;
}

static int correlation_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_CORRELATION_ARGS = serial ? (variant ? pb_correlation_serial_fast : pb_correlation_serial_std)
                                           : (variant ? pb_correlation_omp_fast : pb_correlation_omp_std);
    f(s->n, s->d[0], pb_in(s, 0), s->work[2], s->work[0], s->work[1], s->bl[0]);
    return 0;
}
static int correlation_baseline(void *st, int variant) { return correlation_run(st, variant, false); }
static int correlation_serial(void *st, int variant) { return correlation_run(st, variant, true); }

const ex_program ex_pb_correlation = {
    .name = "correlation",
    .about = "PolyBench correlation: column means and deviations, scaling, and the m x m correlation matrix",
    .default_size = 32,
    .setup = correlation_setup,
    .build = correlation_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = correlation_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1400,
    .test_size = 32,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = correlation_serial,
};
