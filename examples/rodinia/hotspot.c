/*
 * hotspot (Rodinia 3.1): the transient thermal simulation of a chip.  The
 * die is a grid of cells; each explicit time step moves every cell's
 * temperature by
 *
 *   Cap_1 (P + (T_s + T_n - 2T) Ry_1 + (T_e + T_w - 2T) Rx_1 + (amb - T) Rz_1)
 *
 * with the chip constants of Rodinia's hotspot (a 16 mm x 16 mm die 0.5 mm
 * thick, silicon's specific heat and conductivity, 80 degrees ambient; the
 * step is the one Rodinia derives from its maximum power density).  A cell
 * on the edge has no neighbour beyond it, which Rodinia writes out case by
 * case; reading the edge cell itself there (a clamped stencil) is the same
 * formula.  In axle: the steps are an ax_awhile over (step, grid), each a
 * 3x3 ax_stencil2 of the temperatures (clamped) with the 1x1 power.
 *
 * Sizes: n is the grid's side (Rodinia's benchmark input: 1024 x 1024,
 * 2 iterations; its run script's values); the iteration count stays 2 at
 * every size.  The chip constants depend on n (the cell's size), so they
 * are data (a unit), not compiled in.  Inputs: Rodinia reads temperature
 * and power files we do not have; we draw temperatures uniformly in [323,
 * 343] and powers in [0, 0.005] (the ranges of the suite's files) with
 * ex_rng.
 *
 * Check: against the same steps in double precision (plain loops here).
 * Each step rounds the temperature (about 330) once in f32 and the update is
 * an average, so errors stay within a few ulps per step: tolerance 4 (steps
 * + 1) FLT_EPSILON max|T|, twice that against the baselines.
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

#define HS_ITERS 2

typedef struct {
    int64_t n;
    float k[5];                 /* Cap_1, Rx_1, Ry_1, Rz_1, amb_temp */
    float *temp, *power, *work, *bl;
    double *ref;
    ax_array *a_temp, *a_power;
} Hotspot;

/* ------------------------------------------------------------ the program */

typedef struct { ax_acc power, k; } HsEnv;

/* The new temperature from the 3x3 of temperatures and the cell's power. */
static ax_exp hs_update(const ax_exp *xs, void *env)
{
    const HsEnv *e = env;
    ax_exp k = ax_at_linear(e->k, ax_i64(0));
    ax_exp t = xs[4], tn = xs[1], tw = xs[3], te = xs[5], ts = xs[7], p = xs[9];
    ax_exp two_t = ax_mul(ax_f32(2), t);
    ax_exp d = ax_add(ax_add(ax_add(p, ax_mul(ax_sub(ax_add(ts, tn), two_t), ax_get(k, 2))),
                             ax_mul(ax_sub(ax_add(te, tw), two_t), ax_get(k, 1))),
                      ax_mul(ax_sub(ax_get(k, 4), t), ax_get(k, 3)));
    return ax_add(t, ax_mul(ax_get(k, 0), d));
}

static ax_exp hs_more(ax_exp i, void *env) { (void)env; return ax_lt(i, ax_i32(HS_ITERS)); }
static ax_exp hs_inc(ax_exp i, void *env) { (void)env; return ax_add(i, ax_i32(1)); }

static ax_acc hs_cond(ax_acc x, void *env) { (void)env; return ax_map(hs_more, NULL, ax_aget(x, 0)); }

static ax_acc hs_body(ax_acc x, void *env)
{
    static const int three[2] = {3, 3}, one[2] = {1, 1};
    HsEnv *e = env;
    ax_acc t = ax_stencil2(hs_update, e, three, ax_clamp(), ax_aget(x, 1), one, ax_clamp(), e->power);
    return ax_atuple2(ax_map(hs_inc, NULL, ax_aget(x, 0)), t);
}

static ax_acc hotspot_build(ax_ctx *cx, void *st)
{
    Hotspot *s = st;
    const float *k = s->k;
    HsEnv e = {ax_use(cx, s->a_power),
               ax_unit(cx, ax_tuple(5, (ax_exp[]){ax_f32(k[0]), ax_f32(k[1]), ax_f32(k[2]), ax_f32(k[3]),
                                                   ax_f32(k[4])}))};
    ax_acc init = ax_atuple2(ax_unit(cx, ax_i32(0)), ax_use(cx, s->a_temp));
    return ax_aget(ax_awhile(hs_cond, hs_body, &e, init), 1);
}

/* ------------------------------------------------------------ inputs */

static void hotspot_teardown(void *st)
{
    Hotspot *s = st;
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

static void *hotspot_setup(ax_ctx *cx, int64_t n)
{
    Hotspot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    size_t sz = sizeof(float) * (size_t)(n * n > 0 ? n * n : 1);
    s->temp = malloc(sz);
    s->power = malloc(sz);
    s->work = malloc(sz);
    s->bl = calloc(1, sz);
    if (!s->temp || !s->power || !s->work || !s->bl) goto fail;
    ex_rng r = {0x9E3779B97F4A7C15ull};
    for (int64_t i = 0; i < n * n; i++) {
        s->temp[i] = (float)ex_uniform(&r, 323, 343);
        s->power[i] = (float)ex_uniform(&r, 0, 0.005);
    }
    /* Rodinia's chip constants for an n x n grid (f32, as Rodinia keeps
     * them; the products are formed in double as its constants are). */
    const double t_chip = 0.0005, chip = 0.016, spec_heat = 1.75e6, k_si = 100, factor = 0.5;
    const double max_pd = 3.0e6, precision = 0.001;
    float gh = (float)(chip / (double)n), gw = gh;
    float cap = (float)(factor * spec_heat * t_chip * gw * gh);
    float rx = (float)(gw / (2.0 * k_si * t_chip * gh)), ry = (float)(gh / (2.0 * k_si * t_chip * gw));
    float rz = (float)(t_chip / (k_si * gh * gw));
    float max_slope = (float)(max_pd / (factor * t_chip * spec_heat));
    float step = (float)(precision / max_slope / 1000.0);
    s->k[0] = step / cap;
    s->k[1] = 1.0f / rx;
    s->k[2] = 1.0f / ry;
    s->k[3] = 1.0f / rz;
    s->k[4] = 80.0f;
    int64_t shape[2] = {n, n};
    s->a_temp = ax_array_wrap(cx, AX_F32, 2, shape, s->temp);
    s->a_power = ax_array_wrap(cx, AX_F32, 2, shape, s->power);
    if (!s->a_temp || !s->a_power) goto fail;
    return s;
fail:
    hotspot_teardown(s);
    return NULL;
}

/* ------------------------------------------------------------ checks */

static int hotspot_reference(Hotspot *s)
{
    if (s->ref) return 0;
    int64_t n = s->n, nn = n * n;
    double *a = malloc(sizeof(double) * (size_t)(nn ? nn : 1)), *b = malloc(sizeof(double) * (size_t)(nn ? nn : 1));
    if (!a || !b) { free(a); free(b); return -1; }
    for (int64_t i = 0; i < nn; i++) a[i] = s->temp[i];
    const float *k = s->k;
    for (int it = 0; it < HS_ITERS; it++) {
        for (int64_t r = 0; r < n; r++)
            for (int64_t c = 0; c < n; c++) {
                int64_t rn = r > 0 ? r - 1 : r, rs = r < n - 1 ? r + 1 : r;
                int64_t cw = c > 0 ? c - 1 : c, ce = c < n - 1 ? c + 1 : c;
                double t = a[r * n + c];
                b[r * n + c] = t + (double)k[0] * (s->power[r * n + c] + (a[rs * n + c] + a[rn * n + c] - 2 * t) * k[2] +
                                                   (a[r * n + ce] + a[r * n + cw] - 2 * t) * k[1] + (k[4] - t) * k[3]);
            }
        double *x = a; a = b; b = x;
    }
    free(b);
    s->ref = a;
    return 0;
}

static int hotspot_compare(Hotspot *s, ax_array *const *res, int nres, const float *wf, double scale, char *msg,
                           size_t size)
{
    const float *got = nres == 1 ? rd_array("hotspot", "temperature", res[0], AX_F32, s->n * s->n, msg, size) : NULL;
    if (!got) { if (nres != 1) snprintf(msg, size, "hotspot: expected one result"); return -1; }
    if (hotspot_reference(s)) { snprintf(msg, size, "hotspot: out of memory"); return -1; }
    double tol = scale * 4 * (HS_ITERS + 1) * FLT_EPSILON * rd_maxabs(s->ref, s->n * s->n);
    return rd_close("hotspot", "temperature", got, wf, s->ref, s->n * s->n, tol, msg, size);
}

static int hotspot_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return hotspot_compare(st, res, nres, NULL, 1, msg, size);
}

static int hotspot_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Hotspot *s = st;
    return hotspot_compare(s, res, nres, s->bl, 2, msg, size);
}

static int hotspot_baseline(void *st, int variant)
{
    Hotspot *s = st;
    (variant ? rd_hotspot_omp_fast : rd_hotspot_omp_std)(s->n, s->n, HS_ITERS, s->temp, s->power, s->k, s->work, s->bl);
    return 0;
}

static int hotspot_baseline_serial(void *st, int variant)
{
    Hotspot *s = st;
    (variant ? rd_hotspot_serial_fast : rd_hotspot_serial_std)(s->n, s->n, HS_ITERS, s->temp, s->power, s->k, s->work,
                                                               s->bl);
    return 0;
}

const ex_program ex_rd_hotspot = {
    .name = "hotspot",
    .about = "Rodinia hotspot: transient 2D chip temperature, explicit steps (awhile of a clamped 3x3 stencil2)",
    .default_size = 1024,
    .setup = hotspot_setup,
    .build = hotspot_build,
    .check = hotspot_check,
    .teardown = hotspot_teardown,
    .baseline = hotspot_baseline,
    .check_baseline = hotspot_check_baseline,
    .bench_size = 1024,
    .test_size = 64,
    .extra = true,
    .suite = "rodinia",
    .baseline_serial = hotspot_baseline_serial,
};
