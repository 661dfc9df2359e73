/*
 * Fluid flow (paper s.5.6; Table 2): one time step of Jos Stam's "Stable
 * Fluids" (Real-Time Fluid Dynamics for Games, 2003) on a square grid, the
 * way Accelerate's fluid example writes it: a density field and a
 * velocity field of (u, v) pairs, and
 *
 *   velocity = project . advect vf . project . diffuse visc . addSources vs
 *   density  = advect vf' . diffuse diff . addSources ds
 *
 * where every linear solve is a relaxation by stencil convolution ("the
 * standard four point Laplace kernel"), advection a generate that traces
 * each cell back along the velocity and interpolates, and the sources are
 * added by a forward permutation with (+).
 *
 * Numerical method (the baseline, bench/baseline_fluid.c, is the same
 * method, and the check's double-precision reference below too):
 *  - Relaxation is Jacobi, FL_ITERS sweeps per solve (Stam's code does 20
 *    Gauss-Seidel sweeps; Gauss-Seidel is sequential, Jacobi is the
 *    data-parallel form, as in Accelerate).  One sweep:
 *        x' = (x0 + a (l + r + t + b)) / c
 *    diffusion: a = dt k N^2, c = 1 + 4a, starting from x = x0;
 *    pressure: a = 1, c = 4, starting from p = 0.
 *  - project: div = -0.5 h (u_r - u_l + v_b - v_t) with h = 1/N, the
 *    pressure p as above, then u -= 0.5 N (p_r - p_l), v -= 0.5 N (p_b - p_t).
 *  - advect: back-trace x = i - dt N u, y = j - dt N v, clamped to
 *    [0, N-1]; i0 = trunc x, i1 = min(i0 + 1, N-1) (likewise j), and
 *    bilinear interpolation.
 *  - Boundaries: every stencil reads clamped (AX_CLAMP: the nearest edge
 *    cell), i.e. zero normal derivative at the walls.  That is Stam's
 *    set_bnd for density and pressure; for velocity Stam negates the normal
 *    component at the walls, which the clamp approximates (no reflection).
 *  - One grid row is y (the outer dimension, v), one column x (u).
 * Result: (density, velocity) after one step.  The size is the number of
 * cells (the Accelerate paper's 2M); the grid is floor(sqrt(n)) square.
 *
 * Without sharing recovery this program does not run: every sweep reads
 * the one before and its right-hand side (for the pressure, the divergence
 * of the velocity), so unfolding the graph into a tree multiplies its size
 * by about FL_ITERS per projection, and the step has several; axle refuses
 * the unfolding (AX_ERR_NOMEM), the analogue of Table 2's "out of memory".
 *
 * Tolerance.  Jacobi sweeps and bilinear interpolation average their
 * inputs, so f32 rounding does not grow.  Measured against the double
 * reference, per field, the largest error relative to the field's largest
 * magnitude: about 1e-6 (at most 1.4e-6) for the interpreter, the CPU
 * backend and both baselines, at 2x2 .. 1024x1024.  The check allows 2e-5
 * of that magnitude per element (15x margin, room for other FMA and
 * reassociation choices); a wrong stencil offset or boundary rule, or a
 * pressure solve with one sweep more or less, moves the fields by far more.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_fluid.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FL_ITERS 20       /* Jacobi sweeps per linear solve */
#define FL_DT 0.1f        /* time step */
#define FL_VISC 1e-4f     /* viscosity */
#define FL_DIFF 1e-4f     /* density diffusion rate */
#define FL_TOL 2e-5       /* allowed error, relative to the field's largest magnitude */

typedef struct {
    int64_t side, nds, nvs;
    bl_fluid_params prm;
    float *dens, *u, *v;                 /* the initial fields */
    int32_t *ds_pos[2], *vs_pos[2];      /* source positions (row, col) */
    float *ds_val, *vs_val[2];           /* source values */
    ax_array *a_dens, *a_vel, *a_dspos, *a_dsval, *a_vspos, *a_vsval;
    float *work, *bl[3];                 /* baseline scratch and result (d, u, v) */
    double *ref[3];                      /* the double reference (d, u, v) */
} Fluid;

/* ------------------------------------------------------------ the program */

/* Component i of a field element with k components (f32, or (f32, f32)). */
static ax_exp comp(ax_exp e, int i, int k) { return k == 1 ? e : ax_get(e, i); }
static ax_exp pack(const ax_exp *c, int k) { return k == 1 ? c[0] : ax_tuple2(c[0], c[1]); }

/* A relaxation sweep: x0 (1x1) and x (3x3), per component. */
typedef struct { float a, c; int k; } Relax;

static ax_exp relax(const ax_exp *xs, void *env)
{
    const Relax *r = env;
    ax_exp x0 = xs[0], t = xs[1 + 1], l = xs[1 + 3], rt = xs[1 + 5], b = xs[1 + 7], out[2];
    for (int i = 0; i < r->k; i++) {
        ax_exp sum = ax_add(ax_add(ax_add(comp(l, i, r->k), comp(rt, i, r->k)), comp(t, i, r->k)), comp(b, i, r->k));
        out[i] = ax_div(ax_add(comp(x0, i, r->k), ax_mul(ax_f32(r->a), sum)), ax_f32(r->c));
    }
    return pack(out, r->k);
}

/* iters Jacobi sweeps of x' = (x0 + a (l + r + t + b)) / c from x. */
static ax_acc lin_solve(int iters, Relax r, ax_acc x0, ax_acc x)
{
    static const int one[2] = {1, 1}, three[2] = {3, 3};
    for (int k = 0; k < iters; k++) x = ax_stencil2(relax, &r, one, ax_clamp(), x0, three, ax_clamp(), x);
    return x;
}

/* div = hdiv (u_r - u_l + v_b - v_t), over the 3x3 of the velocity */
static ax_exp divergence(const ax_exp *xs, void *env)
{
    const Fluid *f = env;
    ax_exp d = ax_sub(ax_add(ax_sub(ax_get(xs[5], 0), ax_get(xs[3], 0)), ax_get(xs[7], 1)), ax_get(xs[1], 1));
    return ax_mul(ax_f32(f->prm.hdiv), d);
}

static ax_exp zero(ax_exp ix, void *env)
{
    (void)ix;
    (void)env;
    return ax_f32(0);
}

/* (u, v) - grad (p_r - p_l, p_b - p_t): the velocity's 1x1, the pressure's 3x3 */
static ax_exp subtract_gradient(const ax_exp *xs, void *env)
{
    const Fluid *f = env;
    ax_exp uv = xs[0], g = ax_f32(f->prm.grad);
    ax_exp pt = xs[1 + 1], pl = xs[1 + 3], pr = xs[1 + 5], pb = xs[1 + 7];
    return ax_tuple2(ax_sub(ax_get(uv, 0), ax_mul(g, ax_sub(pr, pl))),
                     ax_sub(ax_get(uv, 1), ax_mul(g, ax_sub(pb, pt))));
}

/* Makes the velocity field divergence free (mass conserving). */
static ax_acc project(ax_ctx *cx, const Fluid *f, ax_acc vel)
{
    static const int one[2] = {1, 1}, three[2] = {3, 3};
    ax_acc div = ax_stencil(divergence, (void *)f, three, ax_clamp(), vel);
    ax_acc p = lin_solve(f->prm.iters, (Relax){1.0f, 4.0f, 1}, div, ax_generate(cx, ax_shape(div), zero, NULL));
    return ax_stencil2(subtract_gradient, (void *)f, one, ax_clamp(), vel, three, ax_clamp(), p);
}

/* Semi-Lagrangian advection of a field of k components by vel. */
typedef struct { const Fluid *f; ax_acc vel, d; int k; } Advect;

static ax_exp backtrace(ax_exp ix, void *env)
{
    const Advect *a = env;
    ax_exp n1 = ax_sub(ax_index_get(ax_shape(a->d), 1), ax_i64(1));   /* the last column (= row) */
    ax_exp last = ax_cvt(n1, AX_F32), dt0 = ax_f32(a->f->prm.dt0);
    ax_exp uv = ax_at(a->vel, ix);
    ax_exp x = ax_max(ax_f32(0), ax_min(ax_sub(ax_cvt(ax_index_get(ix, 1), AX_F32), ax_mul(dt0, ax_get(uv, 0))), last));
    ax_exp y = ax_max(ax_f32(0), ax_min(ax_sub(ax_cvt(ax_index_get(ix, 0), AX_F32), ax_mul(dt0, ax_get(uv, 1))), last));
    ax_exp i0 = ax_truncate(x, AX_I64), j0 = ax_truncate(y, AX_I64);
    ax_exp i1 = ax_min(ax_add(i0, ax_i64(1)), n1), j1 = ax_min(ax_add(j0, ax_i64(1)), n1);
    ax_exp s1 = ax_sub(x, ax_cvt(i0, AX_F32)), s0 = ax_sub(ax_f32(1), s1);
    ax_exp t1 = ax_sub(y, ax_cvt(j0, AX_F32)), t0 = ax_sub(ax_f32(1), t1);
    ax_exp d00 = ax_at(a->d, ax_ix2(j0, i0)), d10 = ax_at(a->d, ax_ix2(j1, i0));
    ax_exp d01 = ax_at(a->d, ax_ix2(j0, i1)), d11 = ax_at(a->d, ax_ix2(j1, i1)), out[2];
    for (int i = 0; i < a->k; i++)
        out[i] = ax_add(ax_mul(s0, ax_add(ax_mul(t0, comp(d00, i, a->k)), ax_mul(t1, comp(d10, i, a->k)))),
                        ax_mul(s1, ax_add(ax_mul(t0, comp(d01, i, a->k)), ax_mul(t1, comp(d11, i, a->k)))));
    return pack(out, a->k);
}

static ax_acc advect(ax_ctx *cx, const Fluid *f, ax_acc vel, ax_acc d, int k)
{
    Advect a = {f, vel, d, k};
    return ax_generate(cx, ax_shape(d), backtrace, &a);
}

/* addSources (ix, vals) field = permute (+) field (ix !) vals */
typedef struct { ax_acc pos; } Sources;

static ax_exp source_index(ax_exp k, void *env)
{
    const Sources *s = env;
    ax_exp rc = ax_at(s->pos, k);
    return ax_ix2(ax_get(rc, 0), ax_get(rc, 1));
}

static ax_exp vadd(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_tuple2(ax_add(ax_get(a, 0), ax_get(b, 0)), ax_add(ax_get(a, 1), ax_get(b, 1)));
}

static ax_acc add_sources(ax_acc pos, ax_acc vals, ax_acc field, int k)
{
    Sources s = {pos};
    return ax_permute(k == 1 ? ax_fn_add : vadd, NULL, field, source_index, &s, vals);
}

static ax_acc fluid_build(ax_ctx *cx, void *st)
{
    Fluid *f = st;
    const bl_fluid_params *p = &f->prm;
    ax_acc vel0 = ax_use(cx, f->a_vel), dens0 = ax_use(cx, f->a_dens);

    ax_acc vel1 = add_sources(ax_use(cx, f->a_vspos), ax_use(cx, f->a_vsval), vel0, 2);
    ax_acc vel2 = project(cx, f, lin_solve(p->iters, (Relax){p->visc_a, p->visc_c, 2}, vel1, vel1));
    ax_acc vel3 = project(cx, f, advect(cx, f, vel2, vel2, 2));

    ax_acc dens1 = add_sources(ax_use(cx, f->a_dspos), ax_use(cx, f->a_dsval), dens0, 1);
    ax_acc dens2 = lin_solve(p->iters, (Relax){p->diff_a, p->diff_c, 1}, dens1, dens1);
    return ax_atuple2(advect(cx, f, vel3, dens2, 1), vel3);
}

/* ------------------------------------------------------------ inputs */

static void fluid_teardown(void *st)
{
    Fluid *f = st;
    if (!f) return;
    ax_array *arrs[6] = {f->a_dens, f->a_vel, f->a_dspos, f->a_dsval, f->a_vspos, f->a_vsval};
    for (int i = 0; i < 6; i++) ax_array_release(arrs[i]);
    void *bufs[] = {f->dens, f->u, f->v, f->ds_pos[0], f->ds_pos[1], f->vs_pos[0], f->vs_pos[1], f->ds_val,
                    f->vs_val[0], f->vs_val[1], f->work, f->bl[0], f->bl[1], f->bl[2], f->ref[0], f->ref[1],
                    f->ref[2]};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(f);
}

/* k sources on distinct rows of an s x s grid (none on an empty grid). */
static void place_sources(int64_t s, int64_t k, int32_t *row, int32_t *col, int salt)
{
    for (int64_t q = 0; q < k; q++) {
        row[q] = (int32_t)((s * (2 * q + 1)) / (2 * k));
        col[q] = (int32_t)((s * (q + 1 + salt)) / (k + 2));
    }
}

static void *fluid_setup(ax_ctx *cx, int64_t n)
{
    Fluid *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    int64_t s = (int64_t)sqrt((double)(n > 0 ? n : 0));
    while (s * s > n) s--;
    while ((s + 1) * (s + 1) <= n) s++;
    int64_t nn = s * s, k = s < 4 ? s : 4;
    f->side = s;
    f->nds = f->nvs = k;
    /* The constants, in f32 once for every implementation. */
    float N = (float)s, h = s ? 1.0f / N : 0;
    f->prm = (bl_fluid_params){
        .side = s, .iters = FL_ITERS,
        .visc_a = FL_DT * FL_VISC * N * N, .diff_a = FL_DT * FL_DIFF * N * N,
        .hdiv = -0.5f * h, .grad = 0.5f * N, .dt0 = FL_DT * N,
    };
    f->prm.visc_c = 1 + 4 * f->prm.visc_a;
    f->prm.diff_c = 1 + 4 * f->prm.diff_a;

    size_t fsz = sizeof(float) * (size_t)(nn ? nn : 1), ksz = (size_t)(k ? k : 1);
    f->dens = malloc(fsz);
    f->u = malloc(fsz);
    f->v = malloc(fsz);
    size_t nwork = BL_FLUID_WORK(s);
    f->work = malloc(sizeof(float) * (nwork > 0 ? nwork : 1));
    for (int i = 0; i < 3; i++) f->bl[i] = calloc(1, fsz);
    for (int i = 0; i < 2; i++) {
        f->ds_pos[i] = malloc(sizeof(int32_t) * ksz);
        f->vs_pos[i] = malloc(sizeof(int32_t) * ksz);
        f->vs_val[i] = malloc(sizeof(float) * ksz);
    }
    f->ds_val = malloc(sizeof(float) * ksz);
    if (!f->dens || !f->u || !f->v || !f->work || !f->bl[0] || !f->bl[1] || !f->bl[2] || !f->ds_pos[0] ||
        !f->ds_pos[1] || !f->vs_pos[0] || !f->vs_pos[1] || !f->vs_val[0] || !f->vs_val[1] || !f->ds_val)
        goto fail;

    /* Density: two smooth blobs plus a little noise, in [0, 1].  Velocity:
     * a vortex about the centre whose rim moves about 2 cells per step
     * (dt N |u| ~ 2), plus 10% noise. */
    ex_rng r = {0x8CB92BA72F3D8DD7ull};
    float speed = s ? 4.0f / (FL_DT * N) : 0;
    for (int64_t j = 0; j < s; j++)
        for (int64_t i = 0; i < s; i++) {
            double x = (i + 0.5) / (double)s, y = (j + 0.5) / (double)s;
            double b1 = exp(-((x - 0.3) * (x - 0.3) + (y - 0.4) * (y - 0.4)) / 0.01);
            double b2 = exp(-((x - 0.7) * (x - 0.7) + (y - 0.6) * (y - 0.6)) / 0.02);
            f->dens[j * s + i] = (float)(0.6 * b1 + 0.3 * b2 + ex_uniform(&r, 0, 0.1));
            f->u[j * s + i] = (float)(speed * (-(y - 0.5) + ex_uniform(&r, -0.05, 0.05)));
            f->v[j * s + i] = (float)(speed * ((x - 0.5) + ex_uniform(&r, -0.05, 0.05)));
        }
    place_sources(s, k, f->ds_pos[0], f->ds_pos[1], 0);
    place_sources(s, k, f->vs_pos[0], f->vs_pos[1], 1);
    for (int64_t q = 0; q < k; q++) {
        f->ds_val[q] = (float)ex_uniform(&r, 0.5, 1.0);
        f->vs_val[0][q] = (float)(speed * ex_uniform(&r, -0.5, 0.5));
        f->vs_val[1][q] = (float)(speed * ex_uniform(&r, -0.5, 0.5));
    }

    const ax_type *tf = ax_type_scalar(AX_F32), *ti = ax_type_scalar(AX_I32);
    const ax_type *ff[2] = {tf, tf}, *ii[2] = {ti, ti};
    int64_t shape[2] = {s, s};
    f->a_dens = ax_array_wrap(cx, AX_F32, 2, shape, f->dens);
    f->a_vel = ax_array_wrap_n(cx, ax_type_tuple(cx, 2, ff), 2, shape, (void *[]){f->u, f->v});
    f->a_dspos = ax_array_wrap_n(cx, ax_type_tuple(cx, 2, ii), 1, &k, (void *[]){f->ds_pos[0], f->ds_pos[1]});
    f->a_dsval = ax_array_wrap(cx, AX_F32, 1, &k, f->ds_val);
    f->a_vspos = ax_array_wrap_n(cx, ax_type_tuple(cx, 2, ii), 1, &k, (void *[]){f->vs_pos[0], f->vs_pos[1]});
    f->a_vsval = ax_array_wrap_n(cx, ax_type_tuple(cx, 2, ff), 1, &k, (void *[]){f->vs_val[0], f->vs_val[1]});
    if (!f->a_dens || !f->a_vel || !f->a_dspos || !f->a_dsval || !f->a_vspos || !f->a_vsval) goto fail;
    return f;
fail:
    fluid_teardown(f);
    return NULL;
}

/* ------------------------------------------------------------ the reference */

/* The same method as the program, in double precision, as plain loops. */
static double rd(const double *x, int64_t n, int64_t j, int64_t i)
{
    j = j < 0 ? 0 : j >= n ? n - 1 : j;
    i = i < 0 ? 0 : i >= n ? n - 1 : i;
    return x[j * n + i];
}

static void ref_lin_solve(int64_t n, int iters, double a, double c, const double *x0, double *x, double *tmp)
{
    for (int it = 0; it < iters; it++) {
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++)
                tmp[j * n + i] = (x0[j * n + i] + a * (rd(x, n, j, i - 1) + rd(x, n, j, i + 1) + rd(x, n, j - 1, i) +
                                                       rd(x, n, j + 1, i))) / c;
        memcpy(x, tmp, sizeof(double) * (size_t)(n * n));
    }
}

static void ref_project(const Fluid *f, double *u, double *v, double *div, double *p, double *tmp)
{
    int64_t n = f->side;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
            div[j * n + i] =
                f->prm.hdiv * (rd(u, n, j, i + 1) - rd(u, n, j, i - 1) + rd(v, n, j + 1, i) - rd(v, n, j - 1, i));
            p[j * n + i] = 0;
        }
    ref_lin_solve(n, f->prm.iters, 1, 4, div, p, tmp);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
            tmp[j * n + i] = u[j * n + i] - f->prm.grad * (rd(p, n, j, i + 1) - rd(p, n, j, i - 1));
            div[j * n + i] = v[j * n + i] - f->prm.grad * (rd(p, n, j + 1, i) - rd(p, n, j - 1, i));
        }
    memcpy(u, tmp, sizeof(double) * (size_t)(n * n));
    memcpy(v, div, sizeof(double) * (size_t)(n * n));
}

static double ref_interp(const Fluid *f, const double *u, const double *v, const double *d, int64_t j, int64_t i)
{
    int64_t n = f->side;
    double last = (double)(n - 1), dt0 = f->prm.dt0;
    double x = fmax(0, fmin(i - dt0 * u[j * n + i], last)), y = fmax(0, fmin(j - dt0 * v[j * n + i], last));
    int64_t i0 = (int64_t)x, j0 = (int64_t)y, i1 = i0 + 1 < n ? i0 + 1 : n - 1, j1 = j0 + 1 < n ? j0 + 1 : n - 1;
    double s1 = x - i0, s0 = 1 - s1, t1 = y - j0, t0 = 1 - t1;
    return s0 * (t0 * d[j0 * n + i0] + t1 * d[j1 * n + i0]) + s1 * (t0 * d[j0 * n + i1] + t1 * d[j1 * n + i1]);
}

static int fluid_reference(Fluid *f)
{
    if (f->ref[0]) return 0;
    int64_t n = f->side, nn = n * n;
    size_t sz = sizeof(double) * (size_t)(nn ? nn : 1);
    double *b[8];
    int ok = 1;
    for (int i = 0; i < 8; i++) ok &= (b[i] = malloc(sz)) != NULL;
    if (!ok) {
        for (int i = 0; i < 8; i++) free(b[i]);
        return -1;
    }
    double *u = b[0], *v = b[1], *u0 = b[2], *v0 = b[3], *d = b[4], *d0 = b[5], *t1 = b[6], *t2 = b[7];
    for (int64_t c = 0; c < nn; c++) {
        u0[c] = f->u[c];
        v0[c] = f->v[c];
        d0[c] = f->dens[c];
    }
    for (int64_t q = 0; q < f->nvs; q++) {
        int64_t c = (int64_t)f->vs_pos[0][q] * n + f->vs_pos[1][q];
        u0[c] += f->vs_val[0][q];
        v0[c] += f->vs_val[1][q];
    }
    for (int64_t q = 0; q < f->nds; q++) d0[(int64_t)f->ds_pos[0][q] * n + f->ds_pos[1][q]] += f->ds_val[q];
    /* velocity */
    memcpy(u, u0, sz);
    memcpy(v, v0, sz);
    ref_lin_solve(n, f->prm.iters, f->prm.visc_a, f->prm.visc_c, u0, u, t1);
    ref_lin_solve(n, f->prm.iters, f->prm.visc_a, f->prm.visc_c, v0, v, t1);
    ref_project(f, u, v, t1, t2, u0);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
            u0[j * n + i] = ref_interp(f, u, v, u, j, i);
            v0[j * n + i] = ref_interp(f, u, v, v, j, i);
        }
    ref_project(f, u0, v0, t1, t2, u);
    /* density, carried by the new velocity (u0, v0) */
    memcpy(d, d0, sz);
    ref_lin_solve(n, f->prm.iters, f->prm.diff_a, f->prm.diff_c, d0, d, t1);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) t2[j * n + i] = ref_interp(f, u0, v0, d, j, i);
    f->ref[0] = t2;
    f->ref[1] = u0;
    f->ref[2] = v0;
    free(u);
    free(v);
    free(d);
    free(d0);
    free(t1);
    return 0;
}

/* ------------------------------------------------------------ checks */

static const char *const fl_field[3] = {"density", "u", "v"};

/* The result's three f32 fields (density, u, v), or -1. */
static int fluid_result(const Fluid *f, ax_array *const *res, int nres, const float *out[3], char *msg, size_t size)
{
    if (nres != 2 || ax_array_rank(res[0]) != 2 || ax_array_rank(res[1]) != 2 || ax_array_components(res[0]) != 1 ||
        ax_array_components(res[1]) != 2 || ax_array_size(res[0]) != f->side * f->side ||
        ax_array_size(res[1]) != f->side * f->side) {
        snprintf(msg, size, "fluid: expected a %lld x %lld density and velocity", (long long)f->side,
                 (long long)f->side);
        return -1;
    }
    out[0] = ax_array_data(res[0], 0);
    out[1] = ax_array_data(res[1], 0);
    out[2] = ax_array_data(res[1], 1);
    return 0;
}

/* Compares got with want (n*n values each) field by field: |got - want| <=
 * FL_TOL * scale * max |ref| (see the top). */
static int fluid_compare(const Fluid *f, const float *const got[3], const float *const wantf[3],
                         const double *const wantd[3], double scale, const char *what, char *msg, size_t size)
{
    int64_t nn = f->side * f->side;
    for (int c = 0; c < 3; c++) {
        double mag = 0;
        for (int64_t i = 0; i < nn; i++) mag = fmax(mag, fabs(f->ref[c][i]));
        double tol = FL_TOL * scale * mag + 1e-30;
        for (int64_t i = 0; i < nn; i++) {
            double want = wantf ? wantf[c][i] : wantd[c][i];
            if (!(fabs(got[c][i] - want) <= tol)) {
                snprintf(msg, size, "fluid: %s at (%lld, %lld): got %.9g, %s %.9g (tolerance %.3g)", fl_field[c],
                         (long long)(i / f->side), (long long)(i % f->side), got[c][i], what, want, tol);
                return -1;
            }
        }
    }
    return 0;
}

static int fluid_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Fluid *f = st;
    const float *got[3];
    if (fluid_result(f, res, nres, got, msg, size)) return -1;
    if (fluid_reference(f)) { snprintf(msg, size, "fluid: out of memory"); return -1; }
    return fluid_compare(f, got, NULL, (const double *const *)f->ref, 1, "expected", msg, size);
}

static int fluid_baseline(void *st, int variant)
{
    Fluid *f = st;
    bl_fluid_sources ds = {f->nds, f->ds_pos[0], f->ds_pos[1], f->ds_val, NULL};
    bl_fluid_sources vs = {f->nvs, f->vs_pos[0], f->vs_pos[1], f->vs_val[0], f->vs_val[1]};
    (variant ? bl_fluid_fast : bl_fluid_std)(&f->prm, f->dens, f->u, f->v, ds, vs, f->work, f->bl[0], f->bl[1],
                                             f->bl[2]);
    return 0;
}

static int fluid_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Fluid *f = st;
    const float *got[3];
    if (fluid_result(f, res, nres, got, msg, size)) return -1;
    if (fluid_reference(f)) { snprintf(msg, size, "fluid: out of memory"); return -1; }
    return fluid_compare(f, got, (const float *const *)f->bl, NULL, 2, "baseline", msg, size);
}

const ex_program ex_prog_fluid = {
    .name = "fluid",
    .about = "fluid flow: one step of Stam's stable fluids (Jacobi stencils, advection by generate) (Accelerate paper, s.5.6)",
    .default_size = 1 << 20,
    .setup = fluid_setup,
    .build = fluid_build,
    .check = fluid_check,
    .teardown = fluid_teardown,
    .baseline = fluid_baseline,
    .check_baseline = fluid_check_baseline,
    .bench_size = 1 << 20,
    .test_size = 1024,
};
