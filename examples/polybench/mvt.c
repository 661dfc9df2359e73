/*
 * PolyBench/C 4.2.1 mvt: x1 := x1 + A y1 and x2 := x2 + A^T y2, with A
 * n x n, in double: two matrix-vector products (fold (+) 0 of the
 * zipWith (*) of the matrix and the replicated vector) added to the
 * vectors; the result is the pair (x1, x2).
 *
 * Sizes: n = N (LARGE: 2000).  Initialisation as the suite's.  Tolerance
 * 1e-10 (polybench.h): the suite adds each term into x[i], axle adds the
 * sum once and may sum in another order.
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

static ax_acc mvt_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), x1 = pb_use(cx, s, 1), x2 = pb_use(cx, s, 2);
    ax_acc y1 = pb_use(cx, s, 3), y2 = pb_use(cx, s, 4);
    return ax_atuple2(ax_zip_with(ax_fn_add, NULL, x1, matvec(a, y1)),
                      ax_zip_with(ax_fn_add, NULL, x2, matvec(ax_transpose(a, NULL), y2)));
}

static void mvt_reference(pb_state *s)
{
    int64_t n = s->n;
    const double *A = pb_in(s, 0), *x1 = pb_in(s, 1), *x2 = pb_in(s, 2), *y1 = pb_in(s, 3), *y2 = pb_in(s, 4);
    double *o1 = s->ref[0], *o2 = s->ref[1];
    for (int64_t i = 0; i < n; i++) {
        double a1 = 0, a2 = 0;
        for (int64_t j = 0; j < n; j++) {
            a1 += A[i * n + j] * y1[j];
            a2 += A[j * n + i] * y2[j];
        }
        o1[i] = x1[i] + a1;
        o2[i] = x2[i] + a2;
    }
}

static void *mvt_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("mvt", AX_F64, n, 1e-10);
    if (!s) return NULL;
    s->reference = mvt_reference;
    double *A = pb_input(s, cx, 2, n, n, 0), *x1 = pb_input(s, cx, 1, n, 0, 0), *x2 = pb_input(s, cx, 1, n, 0, 0);
    double *y1 = pb_input(s, cx, 1, n, 0, 0), *y2 = pb_input(s, cx, 1, n, 0, 0);
    if (!A || !x1 || !x2 || !y1 || !y2 || pb_output(s, 1, n, 0, 0) || pb_output(s, 1, n, 0, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        x1[i] = (double)(i % n) / n;
        x2[i] = (double)((i + 1) % n) / n;
        y1[i] = (double)((i + 3) % n) / n;
        y2[i] = (double)((i + 4) % n) / n;
        for (int64_t j = 0; j < n; j++) A[i * n + j] = (double)(i * j % n) / n;
    }
    return s;
}

static int mvt_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_MVT_ARGS = serial ? (variant ? pb_mvt_serial_fast : pb_mvt_serial_std)
                                   : (variant ? pb_mvt_omp_fast : pb_mvt_omp_std);
    f(s->n, pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), pb_in(s, 3), pb_in(s, 4), s->bl[0], s->bl[1]);
    return 0;
}
static int mvt_baseline(void *st, int variant) { return mvt_run(st, variant, false); }
static int mvt_serial(void *st, int variant) { return mvt_run(st, variant, true); }

const ex_program ex_pb_mvt = {
    .name = "mvt",
    .about = "PolyBench mvt: x1 += A y1, x2 += A^T y2 (two matrix-vector products)",
    .default_size = 40,
    .setup = mvt_setup,
    .build = mvt_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = mvt_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 2000,
    .test_size = 40,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = mvt_serial,
};
