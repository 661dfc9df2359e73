/*
 * PolyBench/C 4.2.1 fdtd-2d: tmax steps of the 2D finite-difference
 * time-domain method on the fields ex, ey and hz (nx x ny), in double.
 * Each step of the suite, in order:
 *   ey[0][j]  = fict[t]                                     (the source)
 *   ey[i][j] -= 0.5 (hz[i][j] - hz[i-1][j])                  for i >= 1
 *   ex[i][j] -= 0.5 (hz[i][j] - hz[i][j-1])                  for j >= 1
 *   hz[i][j] -= 0.7 (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j])
 *                                            for i < nx-1, j < ny-1
 * (hz from the new ex and ey).  Each update reads only the previous
 * array, so the in-place loops are a functional update, written here as
 * a user writes it: each update an ax_stencil2_ix of the field and hz
 * (or of ex and ey) whose function applies the suite's row and column
 * rules at its element's index, and ax_awhile over (ex, ey, hz, t) for the steps, the step
 * count a unit array (data).  The result is (ex, ey, hz).
 *
 * Sizes: n = NX; NY = n * 1200/1000 and TMAX = n * 500/1000 (the LARGE
 * dataset's NX = 1000, NY = 1200, TMAX = 500), rounded.  Initialisation
 * as the suite's (fict[t] = t).  Tolerance 1e-10 (polybench.h): the same
 * operations in the same order, so equal bits in the exact mode; the
 * bound covers the -ffast-math baseline.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

typedef struct {
    ax_ctx *cx;
    ax_acc fict, steps;
    ax_acc t, old;          /* for the stencils' functions: the step, the old hz */
} Fdtd;

/* f - 0.5 (h - h_prev): x[0] the field, x[1], x[2] hz at the previous and
 * this index (the stencil's 3-point neighbourhood along i or j; x[3]
 * unused) */
static ax_exp minus_half_diff(const ax_exp *x, void *env)
{
    (void)env;
    return ax_sub(x[0], ax_mul(ax_f64(0.5), ax_sub(x[2], x[1])));
}

/* ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]: x[0..2] ex at j-1, j,
 * j+1; x[3..5] ey at i-1, i, i+1 */
static ax_exp curl(const ax_exp *x, void *env)
{
    (void)env;
    return ax_sub(ax_add(ax_sub(x[2], x[1]), x[5]), x[4]);
}

/* The suite's row and column rules, each in its stencil's function
 * (ax_stencil2_ix: the element's index after the neighbourhoods). */
static ax_exp ey_rule(ax_exp ix, const ax_exp *x, void *env)
{
    const Fdtd *f = env;
    ax_exp source = ax_at(f->fict, ax_ix1(ax_at(f->t, ax_index(0, NULL))));
    return ax_cond(ax_eq(ax_index_get(ix, 0), ax_i64(0)), source, minus_half_diff(x, NULL));
}

static ax_exp ex_rule(ax_exp ix, const ax_exp *x, void *env)
{
    (void)env;
    return ax_cond(ax_eq(ax_index_get(ix, 1), ax_i64(0)), x[0], minus_half_diff(x, NULL));
}

static ax_exp hz_rule(ax_exp ix, const ax_exp *x, void *env)
{
    const Fdtd *f = env;
    ax_exp sh = ax_shape(f->old), h = ax_at(f->old, ix);
    ax_exp inside = ax_and(ax_lt(ax_index_get(ix, 0), ax_sub(ax_index_get(sh, 0), ax_i64(1))),
                           ax_lt(ax_index_get(ix, 1), ax_sub(ax_index_get(sh, 1), ax_i64(1))));
    return ax_cond(inside, ax_sub(h, ax_mul(ax_f64(0.7), curl(x, NULL))), h);
}

static ax_acc more(ax_acc st, void *env) { return pb_count_below(ax_aget(st, 3), ((Fdtd *)env)->steps); }

static ax_acc step(ax_acc st, void *env)
{
    const Fdtd *f0 = env;
    static const int one[2] = {1, 1}, down[2] = {3, 1}, across[2] = {1, 3};
    ax_acc ex = ax_aget(st, 0), ey = ax_aget(st, 1), hz = ax_aget(st, 2), t = ax_aget(st, 3);
    Fdtd f = *f0;
    f.t = t;
    f.old = hz;
    ax_acc ey2 = ax_stencil2_ix(ey_rule, &f, one, ax_clamp(), ey, down, ax_clamp(), hz);
    ax_acc ex2 = ax_stencil2_ix(ex_rule, &f, one, ax_clamp(), ex, across, ax_clamp(), hz);
    ax_acc hz2 = ax_stencil2_ix(hz_rule, &f, across, ax_clamp(), ex2, down, ax_clamp(), ey2);
    return ax_atuple(4, (ax_acc[]){ex2, ey2, hz2, pb_succ(t)});
}

static ax_acc fdtd2d_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    Fdtd f = {cx, pb_use(cx, s, 0), ax_unit(cx, ax_i32((int32_t)s->d[1])), NULL, NULL};
    ax_acc init = ax_atuple(4, (ax_acc[]){pb_use(cx, s, 1), pb_use(cx, s, 2), pb_use(cx, s, 3), ax_unit(cx, ax_i32(0))});
    ax_acc r = ax_awhile(more, step, &f, init);
    return ax_atuple(3, (ax_acc[]){ax_aget(r, 0), ax_aget(r, 1), ax_aget(r, 2)});
}

static void fdtd2d_reference(pb_state *s)
{
    int64_t nx = s->n, ny = s->d[0], tmax = s->d[1];
    const double *fict = pb_in(s, 0);
    double *ex = s->ref[0], *ey = s->ref[1], *hz = s->ref[2];
    for (int k = 0; k < 3; k++) {
        const double *src = pb_in(s, 1 + k);
        double *dst = s->ref[k];
        for (int64_t i = 0; i < nx * ny; i++) dst[i] = src[i];
    }
    for (int64_t t = 0; t < tmax; t++) {
        for (int64_t j = 0; j < ny; j++) ey[j] = fict[t];
        for (int64_t i = 1; i < nx; i++)
            for (int64_t j = 0; j < ny; j++) ey[i * ny + j] -= 0.5 * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
        for (int64_t i = 0; i < nx; i++)
            for (int64_t j = 1; j < ny; j++) ex[i * ny + j] -= 0.5 * (hz[i * ny + j] - hz[i * ny + j - 1]);
        for (int64_t i = 0; i < nx - 1; i++)
            for (int64_t j = 0; j < ny - 1; j++)
                hz[i * ny + j] -= 0.7 * (ex[i * ny + j + 1] - ex[i * ny + j] + ey[(i + 1) * ny + j] - ey[i * ny + j]);
    }
}

static void *fdtd2d_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("fdtd-2d", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t nx = n, ny = pb_dim(n, 1200, 1000), tmax = pb_dim(n, 500, 1000);
    s->d[0] = ny;
    s->d[1] = tmax;
    s->reference = fdtd2d_reference;
    double *fict = pb_input(s, cx, 1, tmax, 0, 0);
    double *ex = pb_input(s, cx, 2, nx, ny, 0), *ey = pb_input(s, cx, 2, nx, ny, 0), *hz = pb_input(s, cx, 2, nx, ny, 0);
    if (!fict || !ex || !ey || !hz)
        goto fail;
    for (int k = 0; k < 3; k++)
        if (pb_output(s, 2, nx, ny, 0)) goto fail;
    for (int64_t t = 0; t < tmax; t++) fict[t] = (double)t;
    for (int64_t i = 0; i < nx; i++)
        for (int64_t j = 0; j < ny; j++) {
            ex[i * ny + j] = ((double)i * (j + 1)) / nx;
            ey[i * ny + j] = ((double)i * (j + 2)) / ny;
            hz[i * ny + j] = ((double)i * (j + 3)) / nx;
        }
    return s;
fail:
    pb_teardown(s);
    return NULL;
}

static int fdtd2d_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_FDTD2D_ARGS = serial ? (variant ? pb_fdtd2d_serial_fast : pb_fdtd2d_serial_std)
                                      : (variant ? pb_fdtd2d_omp_fast : pb_fdtd2d_omp_std);
    f(s->d[1], s->n, s->d[0], pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), pb_in(s, 3), s->bl[0], s->bl[1], s->bl[2]);
    return 0;
}
static int fdtd2d_baseline(void *st, int variant) { return fdtd2d_run(st, variant, false); }
static int fdtd2d_serial(void *st, int variant) { return fdtd2d_run(st, variant, true); }

const ex_program ex_pb_fdtd2d = {
    .name = "fdtd-2d",
    .about = "PolyBench fdtd-2d: 2D FDTD electromagnetic steps (stencil2 and generate in awhile)",
    .default_size = 20,
    .setup = fdtd2d_setup,
    .build = fdtd2d_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = fdtd2d_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1000,
    .test_size = 20,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = fdtd2d_serial,
};
