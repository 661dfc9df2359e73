/*
 * PolyBench/C 4.2.1 bicg (the BiCG sub-kernel): s := A^T r and q := A p,
 * with A n x m, in double: two matrix-vector products, each a fold (+) 0
 * of the zipWith (*) of the matrix and the vector replicated along its
 * rows; the result is the pair (s, q).
 *
 * Sizes: n (the size parameter) = N, the rows of A; M = n * 1900/2100
 * (the LARGE dataset's N = 2100, M = 1900), rounded.  Initialisation as
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

static ax_acc bicg_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), r = pb_use(cx, s, 1), p = pb_use(cx, s, 2);
    return ax_atuple2(matvec(ax_transpose(a, NULL), r), matvec(a, p));
}

static void bicg_reference(pb_state *s)
{
    int64_t n = s->n, m = s->d[0];
    const double *A = pb_in(s, 0), *r = pb_in(s, 1), *p = pb_in(s, 2);
    double *sv = s->ref[0], *q = s->ref[1];
    for (int64_t j = 0; j < m; j++) {
        double acc = 0;
        for (int64_t i = 0; i < n; i++) acc += r[i] * A[i * m + j];
        sv[j] = acc;
    }
    for (int64_t i = 0; i < n; i++) {
        double acc = 0;
        for (int64_t j = 0; j < m; j++) acc += A[i * m + j] * p[j];
        q[i] = acc;
    }
}

static void *bicg_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("bicg", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t m = pb_dim(n, 1900, 2100);
    s->d[0] = m;
    s->reference = bicg_reference;
    double *A = pb_input(s, cx, 2, n, m, 0), *r = pb_input(s, cx, 1, n, 0, 0), *p = pb_input(s, cx, 1, m, 0, 0);
    if (!A || !r || !p || pb_output(s, 1, m, 0, 0) || pb_output(s, 1, n, 0, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < m; i++) p[i] = (double)(i % m) / m;
    for (int64_t i = 0; i < n; i++) {
        r[i] = (double)(i % n) / n;
        for (int64_t j = 0; j < m; j++) A[i * m + j] = (double)(i * (j + 1) % n) / n;
    }
    return s;
}

static int bicg_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_BICG_ARGS = serial ? (variant ? pb_bicg_serial_fast : pb_bicg_serial_std)
                                    : (variant ? pb_bicg_omp_fast : pb_bicg_omp_std);
    f(s->n, s->d[0], pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), s->bl[0], s->bl[1]);
    return 0;
}
static int bicg_baseline(void *st, int variant) { return bicg_run(st, variant, false); }
static int bicg_serial(void *st, int variant) { return bicg_run(st, variant, true); }

const ex_program ex_pb_bicg = {
    .name = "bicg",
    .about = "PolyBench bicg: s := A^T r, q := A p (two matrix-vector products)",
    .default_size = 42,
    .setup = bicg_setup,
    .build = bicg_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = bicg_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 2100,
    .test_size = 42,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = bicg_serial,
};
