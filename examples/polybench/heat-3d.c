/*
 * PolyBench/C 4.2.1 heat-3d: tsteps steps of the heat equation on an
 * n x n x n grid (the 7-point stencil), in double.  The suite keeps two
 * arrays, A and B, both starting from the same values, and each step
 * updates B's interior from A, then A's from B; the edges never change.
 * That is a functional update, written here as a user writes it: an
 * ax_stencil_ix (3 x 3 x 3, only the 7 points used) whose element is the
 * initial array's on the edges (B's equal A's) and the update inside, and ax_awhile over (A, t) for the
 * steps, the step count a unit array (data).  The result is A.
 *
 * Sizes: n = N; TSTEPS = n * 500/120 (the LARGE dataset's N = 120,
 * TSTEPS = 500), rounded.  Initialisation as the suite's.  Tolerance
 * 1e-10 (polybench.h): the same operations in the same order, so equal
 * bits in the exact mode; the bound covers the -ffast-math baseline.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

typedef struct {
    ax_ctx *cx;
    ax_acc a0, steps;
} Heat;

/* 0.125 (next - 2 centre + prev) */
static ax_exp second(ax_exp next, ax_exp c, ax_exp prev)
{
    return ax_mul(ax_f64(0.125), ax_add(ax_sub(next, ax_mul(ax_f64(2.0), c)), prev));
}

/* x: the 3 x 3 x 3 neighbourhood, row-major: x[13] the centre, x[13 +-
 * 9] the neighbours along i, x[13 +- 3] along j, x[13 +- 1] along k */
static ax_exp heat(const ax_exp *x, void *env)
{
    (void)env;
    ax_exp c = x[13];
    return ax_add(ax_add(ax_add(second(x[22], c, x[4]), second(x[16], c, x[10])), second(x[14], c, x[12])), c);
}

static ax_acc sweep(const Heat *h, ax_acc from)
{
    static const int three[3] = {3, 3, 3};
    return pb_interior_stencil(heat, three, h->a0, from);
}

static ax_acc more(ax_acc st, void *env) { return pb_count_below(ax_aget(st, 1), ((Heat *)env)->steps); }

static ax_acc step(ax_acc st, void *env)
{
    const Heat *h = env;
    return ax_atuple2(sweep(h, sweep(h, ax_aget(st, 0))), pb_succ(ax_aget(st, 1)));
}

static ax_acc heat3d_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    Heat h = {cx, pb_use(cx, s, 0), ax_unit(cx, ax_i32((int32_t)s->d[0]))};
    ax_acc init = ax_atuple2(h.a0, ax_unit(cx, ax_i32(0)));
    return ax_aget(ax_awhile(more, step, &h, init), 0);
}

static void heat_sweep(int64_t n, const double *in, double *out)
{
    int64_t n2 = n * n;
    for (int64_t i = 1; i < n - 1; i++)
        for (int64_t j = 1; j < n - 1; j++)
            for (int64_t k = 1; k < n - 1; k++) {
                int64_t c = i * n2 + j * n + k;
                out[c] = 0.125 * (in[c + n2] - 2.0 * in[c] + in[c - n2]) + 0.125 * (in[c + n] - 2.0 * in[c] + in[c - n]) +
                         0.125 * (in[c + 1] - 2.0 * in[c] + in[c - 1]) + in[c];
            }
}

static void heat3d_reference(pb_state *s)
{
    int64_t n = s->n, tsteps = s->d[0];
    const double *A0 = pb_in(s, 0);
    double *A = s->ref[0], *B = s->work[0];
    for (int64_t i = 0; i < n * n * n; i++) A[i] = B[i] = A0[i];
    for (int64_t t = 0; t < tsteps; t++) {
        heat_sweep(n, A, B);
        heat_sweep(n, B, A);
    }
}

static void *heat3d_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("heat-3d", AX_F64, n, 1e-10);
    if (!s) return NULL;
    s->d[0] = pb_dim(n, 500, 120);
    s->reference = heat3d_reference;
    double *A = pb_input(s, cx, 3, n, n, n);
    if (!A || !pb_scratch(s, n * n * n) || pb_output(s, 3, n, n, n)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t k = 0; k < n; k++) A[(i * n + j) * n + k] = (double)(i + j + (n - k)) * 10 / n;
    return s;
}

static int heat3d_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_HEAT3D_ARGS = serial ? (variant ? pb_heat3d_serial_fast : pb_heat3d_serial_std)
                                      : (variant ? pb_heat3d_omp_fast : pb_heat3d_omp_std);
    f(s->d[0], s->n, pb_in(s, 0), s->bl[0], s->work[0]);
    return 0;
}
static int heat3d_baseline(void *st, int variant) { return heat3d_run(st, variant, false); }
static int heat3d_serial(void *st, int variant) { return heat3d_run(st, variant, true); }

const ex_program ex_pb_heat3d = {
    .name = "heat-3d",
    .about = "PolyBench heat-3d: 7-point heat equation steps in 3D (stencil in awhile)",
    .default_size = 10,
    .setup = heat3d_setup,
    .build = heat3d_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = heat3d_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 120,
    .test_size = 10,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = heat3d_serial,
};
