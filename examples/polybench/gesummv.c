/*
 * PolyBench/C 4.2.1 gesummv: y := alpha A x + beta B x, with A and B
 * n x n, in double: two matrix-vector products (fold (+) 0 of the
 * zipWith (*) of the matrix and the replicated vector), combined by a
 * zipWith.  Fusion and the planner let one loop read A, B and x.
 *
 * Sizes: n = N (LARGE: 1300).  Initialisation as the suite's (alpha 1.5,
 * beta 1.2).  Tolerance 1e-10 (polybench.h): axle may add in another
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

static ax_exp combine(ax_exp ax, ax_exp bx, void *env)
{
    const pb_state *s = env;
    return ax_add(ax_mul(ax_f64(s->alpha), ax), ax_mul(ax_f64(s->beta), bx));
}

static ax_acc gesummv_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), b = pb_use(cx, s, 1), x = pb_use(cx, s, 2);
    return ax_zip_with(combine, s, matvec(a, x), matvec(b, x));
}

static void gesummv_reference(pb_state *s)
{
    int64_t n = s->n;
    const double *A = pb_in(s, 0), *B = pb_in(s, 1), *x = pb_in(s, 2);
    double *y = s->ref[0];
    for (int64_t i = 0; i < n; i++) {
        double t = 0, u = 0;
        for (int64_t j = 0; j < n; j++) {
            t += A[i * n + j] * x[j];
            u += B[i * n + j] * x[j];
        }
        y[i] = s->alpha * t + s->beta * u;
    }
}

static void *gesummv_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("gesummv", AX_F64, n, 1e-10);
    if (!s) return NULL;
    s->alpha = 1.5;
    s->beta = 1.2;
    s->reference = gesummv_reference;
    double *A = pb_input(s, cx, 2, n, n, 0), *B = pb_input(s, cx, 2, n, n, 0), *x = pb_input(s, cx, 1, n, 0, 0);
    if (!A || !B || !x || !pb_scratch(s, n) || pb_output(s, 1, n, 0, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)(i % n) / n;
        for (int64_t j = 0; j < n; j++) {
            A[i * n + j] = (double)((i * j + 1) % n) / n;
            B[i * n + j] = (double)((i * j + 2) % n) / n;
        }
    }
    return s;
}

static int gesummv_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_GESUMMV_ARGS = serial ? (variant ? pb_gesummv_serial_fast : pb_gesummv_serial_std)
                                       : (variant ? pb_gesummv_omp_fast : pb_gesummv_omp_std);
    f(s->n, s->alpha, s->beta, pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), s->work[0], s->bl[0]);
    return 0;
}
static int gesummv_baseline(void *st, int variant) { return gesummv_run(st, variant, false); }
static int gesummv_serial(void *st, int variant) { return gesummv_run(st, variant, true); }

const ex_program ex_pb_gesummv = {
    .name = "gesummv",
    .about = "PolyBench gesummv: y := alpha A x + beta B x (two matrix-vector products)",
    .default_size = 30,
    .setup = gesummv_setup,
    .build = gesummv_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = gesummv_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1300,
    .test_size = 30,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = gesummv_serial,
};
