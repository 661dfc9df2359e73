/*
 * hotspot3D (Rodinia 3.1): the thermal simulation of hotspot on a 3D chip
 * of stacked layers.  Each explicit step sets every cell to
 *
 *   cc T + cn (T_n + T_s) + ce (T_e + T_w) + ct (T_t + T_b) + (dt/Cap) P + ct amb
 *
 * (each neighbour weighted apart, in the order of Rodinia's CPU version),
 * where a neighbour beyond a face is the cell itself: a clamped 3x3x3
 * stencil, of which the 7 points are read.  The constants are Rodinia's
 * (hotspot's chip, cut into `layers` layers; cc = 1 - (2ce + 2cn + 3ct)).
 * In axle: an ax_awhile over (step, grid), each step a 3x3x3 ax_stencil2
 * of the temperatures with the 1x1x1 power.
 *
 * Sizes: n is the side of a layer (Rodinia's benchmark input: 512 x 512
 * x 8 layers, 100 iterations); the layers stay 8 and the iterations 100 at
 * every size.  The constants depend on n, so they are data (a unit).
 * Inputs: Rodinia reads power and temperature files we do not have; we
 * draw temperatures uniformly in [323, 343] and powers in [0, 0.005] with
 * ex_rng.
 *
 * Check: against the same steps in double precision.  Every step is a
 * weighted average plus a small source, rounded once per term in f32, so
 * the error grows at most linearly with the steps: tolerance 4 (steps + 1)
 * FLT_EPSILON max|T|, twice that against the baselines.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "rodinia/baselines.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const void *rd_array(const char *prog, const char *what, ax_array *a, ax_scalar s, int64_t count, char *msg,
                     size_t size);
double rd_maxabs(const double *x, int64_t n);
int rd_close(const char *prog, const char *what, const float *got, const float *wf, const double *wd, int64_t n,
             double tol, char *msg, size_t size);

#define H3_ITERS 100
#define H3_LAYERS 8

typedef struct {
    int64_t n, cells;
    float k[6];                 /* cc, cn, ce, ct, dt/Cap, amb_temp */
    float *temp, *power, *work, *bl;
    double *ref;
    ax_array *a_temp, *a_power;
} Hotspot3D;

/* ------------------------------------------------------------ the program */

typedef struct { ax_acc power, k; } H3Env;

/* The 3x3x3 neighbourhood (z, y, x) of the temperature, then the power. */
static ax_exp h3_update(const ax_exp *xs, void *env)
{
    const H3Env *e = env;
    ax_exp k = ax_at_linear(e->k, ax_i64(0));
    ax_exp cc = ax_get(k, 0), cn = ax_get(k, 1), ce = ax_get(k, 2), ct = ax_get(k, 3);
    ax_exp c = xs[13], w = xs[12], ea = xs[14], n = xs[10], s = xs[16], b = xs[4], t = xs[22], p = xs[27];
    ax_exp sum = ax_add(ax_add(ax_mul(c, cc), ax_mul(n, cn)), ax_mul(s, cn));
    sum = ax_add(ax_add(sum, ax_mul(ea, ce)), ax_mul(w, ce));
    sum = ax_add(ax_add(sum, ax_mul(t, ct)), ax_mul(b, ct));
    return ax_add(ax_add(sum, ax_mul(ax_get(k, 4), p)), ax_mul(ct, ax_get(k, 5)));
}

static ax_exp h3_more(ax_exp i, void *env) { (void)env; return ax_lt(i, ax_i32(H3_ITERS)); }
static ax_exp h3_inc(ax_exp i, void *env) { (void)env; return ax_add(i, ax_i32(1)); }

static ax_acc h3_cond(ax_acc x, void *env) { (void)env; return ax_map(h3_more, NULL, ax_aget(x, 0)); }

static ax_acc h3_body(ax_acc x, void *env)
{
    static const int three[3] = {3, 3, 3}, one[3] = {1, 1, 1};
    H3Env *e = env;
    ax_acc t = ax_stencil2(h3_update, e, three, ax_clamp(), ax_aget(x, 1), one, ax_clamp(), e->power);
    return ax_atuple2(ax_map(h3_inc, NULL, ax_aget(x, 0)), t);
}

static ax_acc hotspot3D_build(ax_ctx *cx, void *st)
{
    Hotspot3D *s = st;
    ax_exp k[6];
    for (int i = 0; i < 6; i++) k[i] = ax_f32(s->k[i]);
    H3Env e = {ax_use(cx, s->a_power), ax_unit(cx, ax_tuple(6, k))};
    ax_acc init = ax_atuple2(ax_unit(cx, ax_i32(0)), ax_use(cx, s->a_temp));
    return ax_aget(ax_awhile(h3_cond, h3_body, &e, init), 1);
}

/* ------------------------------------------------------------ inputs */

static void hotspot3D_teardown(void *st)
{
    Hotspot3D *s = st;
    if (!s) return;
    ax_array_release(s->a_temp);
    ax_array_release(s->a_power);
    free(s->temp);
    free(s->power);
    free(s->work);
    free(s->bl);
    free(s->ref);
    free(s);
}

static void *hotspot3D_setup(ax_ctx *cx, int64_t n)
{
    Hotspot3D *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    s->cells = n * n * H3_LAYERS;
    size_t sz = sizeof(float) * (size_t)(s->cells ? s->cells : 1);
    s->temp = malloc(sz);
    s->power = malloc(sz);
    s->work = malloc(sz);
    s->bl = calloc(1, sz);
    if (!s->temp || !s->power || !s->work || !s->bl) goto fail;
    ex_rng r = {0xD1B54A32D192ED03ull};
    for (int64_t i = 0; i < s->cells; i++) {
        s->temp[i] = (float)ex_uniform(&r, 323, 343);
        s->power[i] = (float)ex_uniform(&r, 0, 0.005);
    }
    /* Rodinia's constants (f32 variables, double literals). */
    const double t_chip = 0.0005, chip = 0.016, spec_heat = 1.75e6, k_si = 100, factor = 0.5;
    float dx = (float)(chip / (double)n), dy = dx, dz = (float)(t_chip / H3_LAYERS);
    float cap = (float)(factor * spec_heat * t_chip * dx * dy);
    float rx = (float)(dy / (2.0 * k_si * t_chip * dx)), ry = (float)(dx / (2.0 * k_si * t_chip * dy));
    float rz = (float)(dz / (k_si * dx * dy));
    float max_slope = (float)(3.0e6 / (factor * t_chip * spec_heat));
    float dt = (float)(0.001 / max_slope);
    float sdc = dt / cap, ce = sdc / rx, cn = sdc / ry, ct = sdc / rz;
    s->k[0] = (float)(1.0 - (2.0 * ce + 2.0 * cn + 3.0 * ct));
    s->k[1] = cn;
    s->k[2] = ce;
    s->k[3] = ct;
    s->k[4] = dt / cap;
    s->k[5] = 80.0f;
    int64_t shape[3] = {H3_LAYERS, n, n};
    s->a_temp = ax_array_wrap(cx, AX_F32, 3, shape, s->temp);
    s->a_power = ax_array_wrap(cx, AX_F32, 3, shape, s->power);
    if (!s->a_temp || !s->a_power) goto fail;
    return s;
fail:
    hotspot3D_teardown(s);
    return NULL;
}

/* ------------------------------------------------------------ checks */

static int hotspot3D_reference(Hotspot3D *s)
{
    if (s->ref) return 0;
    int64_t nx = s->n, ny = s->n, nz = H3_LAYERS, cells = s->cells;
    double *a = malloc(sizeof(double) * (size_t)(cells ? cells : 1));
    double *o = malloc(sizeof(double) * (size_t)(cells ? cells : 1));
    if (!a || !o) { free(a); free(o); return -1; }
    for (int64_t i = 0; i < cells; i++) a[i] = s->temp[i];
    const float *k = s->k;
    for (int it = 0; it < H3_ITERS; it++) {
        for (int64_t z = 0; z < nz; z++)
            for (int64_t y = 0; y < ny; y++)
                for (int64_t x = 0; x < nx; x++) {
                    int64_t c = x + y * nx + z * nx * ny;
                    int64_t w = x == 0 ? c : c - 1, e = x == nx - 1 ? c : c + 1;
                    int64_t n = y == 0 ? c : c - nx, so = y == ny - 1 ? c : c + nx;
                    int64_t b = z == 0 ? c : c - nx * ny, t = z == nz - 1 ? c : c + nx * ny;
                    o[c] = a[c] * k[0] + (a[n] + a[so]) * k[1] + (a[e] + a[w]) * k[2] + (a[t] + a[b]) * k[3] +
                           (double)k[4] * s->power[c] + (double)k[3] * k[5];
                }
        double *x = a; a = o; o = x;
    }
    free(o);
    s->ref = a;
    return 0;
}

static int hotspot3D_compare(Hotspot3D *s, ax_array *const *res, int nres, const float *wf, double scale, char *msg,
                             size_t size)
{
    if (nres != 1) { snprintf(msg, size, "hotspot3D: expected one result"); return -1; }
    const float *got = rd_array("hotspot3D", "temperature", res[0], AX_F32, s->cells, msg, size);
    if (!got) return -1;
    if (hotspot3D_reference(s)) { snprintf(msg, size, "hotspot3D: out of memory"); return -1; }
    double tol = scale * 4 * (H3_ITERS + 1) * FLT_EPSILON * rd_maxabs(s->ref, s->cells);
    return rd_close("hotspot3D", "temperature", got, wf, s->ref, s->cells, tol, msg, size);
}

static int hotspot3D_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return hotspot3D_compare(st, res, nres, NULL, 1, msg, size);
}

static int hotspot3D_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Hotspot3D *s = st;
    return hotspot3D_compare(s, res, nres, s->bl, 2, msg, size);
}

static int hotspot3D_baseline(void *st, int variant)
{
    Hotspot3D *s = st;
    (variant ? rd_hotspot3D_omp_fast : rd_hotspot3D_omp_std)(H3_LAYERS, s->n, s->n, H3_ITERS, s->temp, s->power, s->k,
                                                             s->work, s->bl);
    return 0;
}

static int hotspot3D_baseline_serial(void *st, int variant)
{
    Hotspot3D *s = st;
    (variant ? rd_hotspot3D_serial_fast : rd_hotspot3D_serial_std)(H3_LAYERS, s->n, s->n, H3_ITERS, s->temp, s->power,
                                                                   s->k, s->work, s->bl);
    return 0;
}

const ex_program ex_rd_hotspot3D = {
    .name = "hotspot3D",
    .about = "Rodinia hotspot3D: transient 3D chip temperature, 100 steps (awhile of a clamped 3x3x3 stencil2)",
    .default_size = 512,
    .setup = hotspot3D_setup,
    .build = hotspot3D_build,
    .check = hotspot3D_check,
    .teardown = hotspot3D_teardown,
    .baseline = hotspot3D_baseline,
    .check_baseline = hotspot3D_check_baseline,
    .bench_size = 512,
    .test_size = 16,
    .extra = true,
    .suite = "rodinia",
    .baseline_serial = hotspot3D_baseline_serial,
};
