/*
 * PolyBench/C 4.2.1 gemver: A' := A + u1 v1^T + u2 v2^T, x := beta A'^T y
 * + z, w := alpha A' x, with A n x n, in double; the result is w (what
 * the suite prints).  The outer products are a zipWith (*) of the two
 * vectors replicated along the other's dimension, the matrix-vector
 * products fold (+) 0 of the zipWith (*) of the matrix and the replicated
 * vector:
 *
 *   a' = zipWith (+) (zipWith (+) a (outer u1 v1)) (outer u2 v2)
 *   x  = zipWith (\s z -> beta * s + z) (matvec (transpose a') y) z
 *   w  = map (alpha *) (matvec a' x)
 *
 * Sizes: n = N (LARGE: 2000).  Initialisation as the suite's (alpha 1.5,
 * beta 1.2; the suite's x and w start at 0).  Tolerance 1e-10
 * (polybench.h): the suite scales each term, axle the sums, and may add
 * in another order.
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

/* u v^T */
static ax_acc outer(ax_acc u, ax_acc v)
{
    ax_acc rows = ax_replicate(2, (ax_slice[]){ax_all(), ax_fixed(ax_size(v))}, u);
    ax_acc cols = ax_replicate(2, (ax_slice[]){ax_fixed(ax_size(u)), ax_all()}, v);
    return ax_zip_with(ax_fn_mul, NULL, rows, cols);
}

static ax_exp scale_add(ax_exp sum, ax_exp z, void *env) { return ax_add(ax_mul(ax_f64(*(double *)env), sum), z); }
static ax_exp scale(ax_exp x, void *env) { return ax_mul(ax_f64(*(double *)env), x); }

static ax_acc gemver_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), u1 = pb_use(cx, s, 1), v1 = pb_use(cx, s, 2), u2 = pb_use(cx, s, 3);
    ax_acc v2 = pb_use(cx, s, 4), y = pb_use(cx, s, 5), z = pb_use(cx, s, 6);
    ax_acc a2 = ax_zip_with(ax_fn_add, NULL, ax_zip_with(ax_fn_add, NULL, a, outer(u1, v1)), outer(u2, v2));
    ax_acc x = ax_zip_with(scale_add, &s->beta, matvec(ax_transpose(a2, NULL), y), z);
    return ax_map(scale, &s->alpha, matvec(a2, x));
}

static void gemver_reference(pb_state *s)
{
    int64_t n = s->n;
    const double *A0 = pb_in(s, 0), *u1 = pb_in(s, 1), *v1 = pb_in(s, 2), *u2 = pb_in(s, 3), *v2 = pb_in(s, 4);
    const double *y = pb_in(s, 5), *z = pb_in(s, 6);
    double *A = s->work[0], *x = s->work[1], *w = s->ref[0];
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) A[i * n + j] = A0[i * n + j] + u1[i] * v1[j] + u2[i] * v2[j];
    for (int64_t i = 0; i < n; i++) {
        double acc = 0;
        for (int64_t j = 0; j < n; j++) acc += A[j * n + i] * y[j];
        x[i] = s->beta * acc + z[i];
    }
    for (int64_t i = 0; i < n; i++) {
        double acc = 0;
        for (int64_t j = 0; j < n; j++) acc += A[i * n + j] * x[j];
        w[i] = s->alpha * acc;
    }
}

static void *gemver_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("gemver", AX_F64, n, 1e-10);
    if (!s) return NULL;
    s->alpha = 1.5;
    s->beta = 1.2;
    s->reference = gemver_reference;
    double *A = pb_input(s, cx, 2, n, n, 0), *v[6];
    bool ok = A != NULL;
    for (int k = 0; k < 6; k++) ok = (v[k] = pb_input(s, cx, 1, n, 0, 0)) && ok;
    if (!ok || !pb_scratch(s, n * n) || !pb_scratch(s, n) || pb_output(s, 1, n, 0, 0)) {
        pb_teardown(s);
        return NULL;
    }
    double fn = (double)n;
    for (int64_t i = 0; i < n; i++) {
        v[0][i] = (double)i;                /* u1 */
        v[1][i] = ((i + 1) / fn) / 4.0;     /* v1 */
        v[2][i] = ((i + 1) / fn) / 2.0;     /* u2 */
        v[3][i] = ((i + 1) / fn) / 6.0;     /* v2 */
        v[4][i] = ((i + 1) / fn) / 8.0;     /* y */
        v[5][i] = ((i + 1) / fn) / 9.0;     /* z */
        for (int64_t j = 0; j < n; j++) A[i * n + j] = (double)(i * j % n) / n;
    }
    return s;
}

static int gemver_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_GEMVER_ARGS = serial ? (variant ? pb_gemver_serial_fast : pb_gemver_serial_std)
                                      : (variant ? pb_gemver_omp_fast : pb_gemver_omp_std);
    f(s->n, s->alpha, s->beta, pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), pb_in(s, 3), pb_in(s, 4), pb_in(s, 5),
      pb_in(s, 6), s->work[0], s->work[1], s->bl[0]);
    return 0;
}
static int gemver_baseline(void *st, int variant) { return gemver_run(st, variant, false); }
static int gemver_serial(void *st, int variant) { return gemver_run(st, variant, true); }

const ex_program ex_pb_gemver = {
    .name = "gemver",
    .about = "PolyBench gemver: rank-2 update of A, then x := beta A^T y + z, w := alpha A x",
    .default_size = 40,
    .setup = gemver_setup,
    .build = gemver_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = gemver_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 2000,
    .test_size = 40,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = gemver_serial,
};
