/*
 * PolyBench/C 4.2.1 atax: y := A^T (A x), with A m x n, in double: two
 * matrix-vector products, each a fold (+) 0 of the zipWith (*) of the
 * matrix and the vector replicated along its rows:
 *
 *   tmp = matvec a x
 *   y   = matvec (transpose a) tmp
 *
 * Sizes: n (the size parameter) = M, the rows of A; N = n * 2100/1900
 * (the LARGE dataset's M = 1900, N = 2100), rounded.  Initialisation as
 * the suite's.  Tolerance 1e-10 (polybench.h): axle may add in another
 * order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

/* a (p x q) times the vector x (q): p */
static ax_acc matvec(ax_acc a, ax_acc x)
{
    ax_exp p = ax_index_get(ax_shape(a), 0);
    ax_acc xs = ax_replicate(2, (ax_slice[]){ax_fixed(p), ax_all()}, x);
    return ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL, a, xs));
}

static ax_acc atax_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), x = pb_use(cx, s, 1);
    return matvec(ax_transpose(a, NULL), matvec(a, x));
}

static void atax_reference(pb_state *s)
{
    int64_t m = s->n, n = s->d[0];
    const double *A = pb_in(s, 0), *x = pb_in(s, 1);
    double *tmp = s->work[0], *y = s->ref[0];
    for (int64_t i = 0; i < m; i++) {
        double acc = 0;
        for (int64_t j = 0; j < n; j++) acc += A[i * n + j] * x[j];
        tmp[i] = acc;
    }
    for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t i = 0; i < m; i++) acc += A[i * n + j] * tmp[i];
        y[j] = acc;
    }
}

static void *atax_setup(ax_ctx *cx, int64_t m)
{
    pb_state *s = pb_new("atax", AX_F64, m, 1e-10);
    if (!s) return NULL;
    int64_t n = pb_dim(m, 2100, 1900);
    s->d[0] = n;
    s->reference = atax_reference;
    double *A = pb_input(s, cx, 2, m, n, 0), *x = pb_input(s, cx, 1, n, 0, 0);
    if (!A || !x || !pb_scratch(s, m) || pb_output(s, 1, n, 0, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) x[i] = 1 + i / (double)n;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) A[i * n + j] = (double)((i + j) % n) / (5 * m);
    return s;
}

static int atax_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_ATAX_ARGS = serial ? (variant ? pb_atax_serial_fast : pb_atax_serial_std)
                                    : (variant ? pb_atax_omp_fast : pb_atax_omp_std);
    f(s->n, s->d[0], pb_in(s, 0), pb_in(s, 1), s->work[0], s->bl[0]);
    return 0;
}
static int atax_baseline(void *st, int variant) { return atax_run(st, variant, false); }
static int atax_serial(void *st, int variant) { return atax_run(st, variant, true); }

const ex_program ex_pb_atax = {
    .name = "atax",
    .about = "PolyBench atax: y := A^T (A x) (two matrix-vector products)",
    .default_size = 38,
    .setup = atax_setup,
    .build = atax_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = atax_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1900,
    .test_size = 38,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = atax_serial,
};
