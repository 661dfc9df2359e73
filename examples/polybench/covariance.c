/*
 * PolyBench/C 4.2.1 covariance: the m x m covariance matrix of n
 * observations (rows) of m variables (columns), in double:
 *
 *   mean = map (/ n) (fold (+) 0 (transpose data))          -- column sums
 *   d    = zipWith (-) data (replicate (Z:.n:.All) mean)     -- centred
 *   cov  = map (/ (n - 1)) (fold (+) 0 (zipWith (*) (replicate dt) (replicate dt)))
 *
 * with dt = transpose d: cov[i][j] sums d[k][i] d[k][j] over k.  The
 * suite computes the upper triangle and mirrors it; the fold computes
 * every element (each product is symmetric).  n is read from the data's
 * shape, so every size runs the same compiled program.
 *
 * Sizes: n = N (observations); M = n * 1200/1400 (the LARGE dataset's
 * N = 1400, M = 1200), rounded.  Initialisation as the suite's.  At n = 1
 * the suite divides 0 by 0: NaN everywhere, which the checks accept.
 * Tolerance 1e-10 (polybench.h): axle may add in another order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

/* x / d, with d read from the env (an expression of the program) */
static ax_exp divide(ax_exp x, void *env) { return ax_div(x, *(ax_exp *)env); }

static ax_acc covariance_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc data = pb_use(cx, s, 0);
    ax_exp sh = ax_shape(data), n = ax_index_get(sh, 0), m = ax_index_get(sh, 1);
    ax_exp float_n = ax_cvt(n, AX_F64), n1 = ax_sub(float_n, ax_f64(1));
    ax_acc mean = ax_map(divide, &float_n, ax_fold(ax_fn_add, NULL, ax_f64(0), ax_transpose(data, NULL)));
    ax_acc d = ax_zip_with(ax_fn_sub, NULL, data, ax_replicate(2, (ax_slice[]){ax_fixed(n), ax_all()}, mean));
    ax_acc dt = ax_transpose(d, NULL);
    ax_acc rows = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(m), ax_all()}, dt);   /* [i][j][k] = d[k][i] */
    ax_acc cols = ax_replicate(3, (ax_slice[]){ax_fixed(m), ax_all(), ax_all()}, dt);   /* [i][j][k] = d[k][j] */
    return ax_map(divide, &n1, ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL, rows, cols)));
}

static void covariance_reference(pb_state *s)
{
    int64_t n = s->n, m = s->d[0];
    const double *data = pb_in(s, 0);
    double *mean = s->work[0], *d = s->work[1], *cov = s->ref[0];
    for (int64_t j = 0; j < m; j++) {
        double acc = 0;
        for (int64_t i = 0; i < n; i++) acc += data[i * m + j];
        mean[j] = acc / (double)n;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) d[i * m + j] = data[i * m + j] - mean[j];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++) {
            double acc = 0;
            for (int64_t k = 0; k < n; k++) acc += d[k * m + i] * d[k * m + j];
            cov[i * m + j] = acc / ((double)n - 1.0);
        }
}

static void *covariance_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("covariance", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t m = pb_dim(n, 1200, 1400);
    s->d[0] = m;
    s->reference = covariance_reference;
    double *data = pb_input(s, cx, 2, n, m, 0);
    if (!data || !pb_scratch(s, m) || !pb_scratch(s, n * m) || pb_output(s, 2, m, m, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) data[i * m + j] = ((double)i * j) / m;
    return s;
}

static int covariance_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_COVARIANCE_ARGS = serial ? (variant ? pb_covariance_serial_fast : pb_covariance_serial_std)
                                          : (variant ? pb_covariance_omp_fast : pb_covariance_omp_std);
    f(s->n, s->d[0], pb_in(s, 0), s->work[1], s->work[0], s->bl[0]);
    return 0;
}
static int covariance_baseline(void *st, int variant) { return covariance_run(st, variant, false); }
static int covariance_serial(void *st, int variant) { return covariance_run(st, variant, true); }

const ex_program ex_pb_covariance = {
    .name = "covariance",
    .about = "PolyBench covariance: column means, centring, and the m x m covariance matrix",
    .default_size = 32,
    .setup = covariance_setup,
    .build = covariance_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = covariance_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1400,
    .test_size = 32,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = covariance_serial,
};
