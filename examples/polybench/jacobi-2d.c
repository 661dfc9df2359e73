/*
 * PolyBench/C 4.2.1 jacobi-2d: tsteps steps of the 5-point Jacobi
 * average on an n x n grid, in double.  The suite keeps two arrays, A
 * and B, and each step averages A's interior into B, then B's into A;
 * the edges (first and last rows and columns) never change.  That is a
 * functional update, written here as a user writes it: an ax_stencil_ix
 * (3 x 3, the corners unused) that keeps each array's edges and averages
 * the interior, in one pass,
 * and ax_awhile over (A, t) for the steps, the step count a unit array
 * (data).  The result is A.
 *
 * Sizes: n = N; TSTEPS = n * 500/1300 (the LARGE dataset's N = 1300,
 * TSTEPS = 500), rounded.  Initialisation as the suite's.  Tolerance
 * 1e-10 (polybench.h): the same operations in the same order, so equal
 * bits in the exact mode; the bound covers the -ffast-math baseline.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

typedef struct {
    ax_ctx *cx;
    ax_acc a0, b0, steps;
} Jacobi;

/* x: the 3 x 3 neighbourhood, row-major (x[4] the centre); the suite's
 * order of the sum: centre, west, east, south, north */
static ax_exp avg5(const ax_exp *x, void *env)
{
    (void)env;
    return ax_mul(ax_f64(0.2), ax_add(ax_add(ax_add(ax_add(x[4], x[3]), x[5]), x[7]), x[1]));
}

static ax_acc sweep(const Jacobi *jc, ax_acc edge, ax_acc from)
{
    static const int three[2] = {3, 3};
    return pb_interior_stencil(avg5, three, edge, from);
}

static ax_acc more(ax_acc st, void *env) { return pb_count_below(ax_aget(st, 1), ((Jacobi *)env)->steps); }

static ax_acc step(ax_acc st, void *env)
{
    const Jacobi *jc = env;
    ax_acc b = sweep(jc, jc->b0, ax_aget(st, 0));
    return ax_atuple2(sweep(jc, jc->a0, b), pb_succ(ax_aget(st, 1)));
}

static ax_acc jacobi2d_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    Jacobi jc = {cx, pb_use(cx, s, 0), pb_use(cx, s, 1), ax_unit(cx, ax_i32((int32_t)s->d[0]))};
    ax_acc init = ax_atuple2(jc.a0, ax_unit(cx, ax_i32(0)));
    return ax_aget(ax_awhile(more, step, &jc, init), 0);
}

static void jacobi2d_reference(pb_state *s)
{
    int64_t n = s->n, tsteps = s->d[0];
    const double *A0 = pb_in(s, 0), *B0 = pb_in(s, 1);
    double *A = s->ref[0], *B = s->work[0];
    for (int64_t i = 0; i < n * n; i++) {
        A[i] = A0[i];
        B[i] = B0[i];
    }
    for (int64_t t = 0; t < tsteps; t++) {
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                B[i * n + j] = 0.2 * (A[i * n + j] + A[i * n + j - 1] + A[i * n + j + 1] + A[(i + 1) * n + j] +
                                      A[(i - 1) * n + j]);
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                A[i * n + j] = 0.2 * (B[i * n + j] + B[i * n + j - 1] + B[i * n + j + 1] + B[(i + 1) * n + j] +
                                      B[(i - 1) * n + j]);
    }
}

static void *jacobi2d_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("jacobi-2d", AX_F64, n, 1e-10);
    if (!s) return NULL;
    s->d[0] = pb_dim(n, 500, 1300);
    s->reference = jacobi2d_reference;
    double *A = pb_input(s, cx, 2, n, n, 0), *B = pb_input(s, cx, 2, n, n, 0);
    if (!A || !B || !pb_scratch(s, n * n) || pb_output(s, 2, n, n, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            A[i * n + j] = ((double)i * (j + 2) + 2) / n;
            B[i * n + j] = ((double)i * (j + 3) + 3) / n;
        }
    return s;
}

static int jacobi2d_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_JACOBI2D_ARGS = serial ? (variant ? pb_jacobi2d_serial_fast : pb_jacobi2d_serial_std)
                                        : (variant ? pb_jacobi2d_omp_fast : pb_jacobi2d_omp_std);
    f(s->d[0], s->n, pb_in(s, 0), pb_in(s, 1), s->bl[0], s->work[0]);
    return 0;
}
static int jacobi2d_baseline(void *st, int variant) { return jacobi2d_run(st, variant, false); }
static int jacobi2d_serial(void *st, int variant) { return jacobi2d_run(st, variant, true); }

const ex_program ex_pb_jacobi2d = {
    .name = "jacobi-2d",
    .about = "PolyBench jacobi-2d: 5-point Jacobi steps (stencil in awhile)",
    .default_size = 30,
    .setup = jacobi2d_setup,
    .build = jacobi2d_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = jacobi2d_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1300,
    .test_size = 30,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = jacobi2d_serial,
};
