/*
 * Fluid flow (paper s.5.6): one step of Stam's stable fluids as a
 * performance engineer writes it for a multicore CPU, with exactly the
 * numerical method of examples/fluid.c (Jacobi sweeps with the same
 * iteration counts, clamped reads at the edges, the same order of
 * operations), so that the results agree to rounding.  Each sweep is one
 * parallel pass over the rows; within a row the interior columns are a
 * branch-free SIMD loop and only the two edge columns clamp.  The velocity
 * components are separate arrays (struct of arrays) and are swept together.
 * Buffers come from a small pool of `work` arrays, so a step allocates
 * nothing.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_fluid.h"
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define NWORK 7

typedef struct {
    float *free[NWORK];
    int nfree;
} Pool;

static float *take(Pool *p) { return p->free[--p->nfree]; }
static void give(Pool *p, float *b) { p->free[p->nfree++] = b; }

static inline int64_t clampi(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

/* The rows above and below row j (clamped). */
#define ROW_ABOVE(x, j, n) ((x) + clampi((j) - 1, (n)) * (n))
#define ROW_BELOW(x, j, n) ((x) + clampi((j) + 1, (n)) * (n))

/* One row of a Jacobi sweep of one field: y = (x0 + a (l + r + t + b)) / c,
 * where m is the row of x, t and b the rows above and below. */
static void sweep_row(int64_t n, float a, float c, const float *restrict x0, const float *restrict t,
                      const float *restrict m, const float *restrict b, float *restrict y)
{
    for (int64_t e = 0; e < n; e += (n > 1 ? n - 1 : 1))   /* the edge columns 0 and n-1 */
        y[e] = (x0[e] + a * (m[clampi(e - 1, n)] + m[clampi(e + 1, n)] + t[e] + b[e])) / c;
#ifdef _OPENMP
#pragma omp simd
#endif
    for (int64_t i = 1; i < n - 1; i++) y[i] = (x0[i] + a * (m[i - 1] + m[i + 1] + t[i] + b[i])) / c;
}

/* One sweep of k fields (1 or 2) from x to y. */
static void sweep(int64_t n, int k, float a, float c, float *const *x0, float *const *x, float *const *y)
{
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t j = 0; j < n; j++)
        for (int f = 0; f < k; f++)
            sweep_row(n, a, c, x0[f] + j * n, ROW_ABOVE(x[f], j, n), x[f] + j * n, ROW_BELOW(x[f], j, n),
                      y[f] + j * n);
}

/* `iters` Jacobi sweeps of k fields from init, reading x0 in each sweep.
 * The result is left in res[] (pool buffers, the caller's to give back).
 * If own_init, the init buffers belong to the caller's pool share and are
 * used as scratch (consumed); otherwise they are not written. */
static void lin_solve(Pool *pool, int64_t n, int k, int iters, float a, float c, float *const *x0,
                      float *const *init, bool own_init, float **res)
{
    float *bufa[2] = {0, 0}, *bufb[2] = {0, 0};
    for (int f = 0; f < k; f++) {
        bufa[f] = take(pool);
        bufb[f] = own_init ? init[f] : take(pool);
    }
    if (iters == 0) {
        for (int f = 0; f < k; f++) {
            if (!own_init) memcpy(bufb[f], init[f], sizeof(float) * (size_t)(n * n));
            res[f] = bufb[f];
            give(pool, bufa[f]);
        }
        return;
    }
    float *const *cur = init, **dst = bufa;
    for (int it = 0; it < iters; it++) {
        sweep(n, k, a, c, x0, cur, dst);
        cur = dst;
        dst = dst == bufa ? bufb : bufa;
    }
    for (int f = 0; f < k; f++) {
        res[f] = cur[f];
        give(pool, dst[f]);
    }
}

/* project: the divergence of (u, v), the pressure by Jacobi sweeps from
 * p = 0 (the first sweep from zero gives div / 4, written directly), and
 * (u, v) minus the pressure gradient into (ou, ov). */
static void project(Pool *pool, const bl_fluid_params *p, const float *restrict u, const float *restrict v,
                    float *restrict ou, float *restrict ov)
{
    const int64_t n = p->side;
    const float hdiv = p->hdiv, grad = p->grad;
    float *div = take(pool), *p1 = take(pool);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t j = 0; j < n; j++) {
        const float *um = u + j * n, *vt = ROW_ABOVE(v, j, n), *vb = ROW_BELOW(v, j, n);
        float *dr = div + j * n, *pr = p1 + j * n;
        for (int64_t e = 0; e < n; e += (n > 1 ? n - 1 : 1)) {
            dr[e] = hdiv * (um[clampi(e + 1, n)] - um[clampi(e - 1, n)] + vb[e] - vt[e]);
            pr[e] = dr[e] / 4;
        }
#ifdef _OPENMP
#pragma omp simd
#endif
        for (int64_t i = 1; i < n - 1; i++) {
            dr[i] = hdiv * (um[i + 1] - um[i - 1] + vb[i] - vt[i]);
            pr[i] = dr[i] / 4;
        }
    }
    float *x0[2] = {div, 0}, *init[2] = {p1, 0}, *pres[2];
    lin_solve(pool, n, 1, p->iters - 1, 1.0f, 4.0f, x0, init, true, pres);
    give(pool, div);
    const float *pp = pres[0];
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t j = 0; j < n; j++) {
        const float *pt = ROW_ABOVE(pp, j, n), *pm = pp + j * n, *pb = ROW_BELOW(pp, j, n);
        const float *ur = u + j * n, *vr = v + j * n;
        float *our = ou + j * n, *ovr = ov + j * n;
        for (int64_t e = 0; e < n; e += (n > 1 ? n - 1 : 1)) {
            our[e] = ur[e] - grad * (pm[clampi(e + 1, n)] - pm[clampi(e - 1, n)]);
            ovr[e] = vr[e] - grad * (pb[e] - pt[e]);
        }
#ifdef _OPENMP
#pragma omp simd
#endif
        for (int64_t i = 1; i < n - 1; i++) {
            our[i] = ur[i] - grad * (pm[i + 1] - pm[i - 1]);
            ovr[i] = vr[i] - grad * (pb[i] - pt[i]);
        }
    }
    give(pool, pres[0]);
}

/* advect: k fields d[] carried by (u, v), semi-Lagrangian: each cell
 * traces back by dt0 (u, v), clamped to the grid, and interpolates
 * bilinearly between the four cells around that point. */
static void advect(const bl_fluid_params *p, const float *restrict u, const float *restrict v, int k,
                   float *const *d, float *const *out)
{
    const int64_t n = p->side;
    const float dt0 = p->dt0, last = (float)(n - 1);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t j = 0; j < n; j++) {
#ifdef _OPENMP
#pragma omp simd
#endif
        for (int64_t i = 0; i < n; i++) {
            int64_t c = j * n + i;
            float x = fmaxf(0.0f, fminf((float)i - dt0 * u[c], last));
            float y = fmaxf(0.0f, fminf((float)j - dt0 * v[c], last));
            int64_t i0 = (int64_t)x, j0 = (int64_t)y;
            int64_t i1 = i0 + 1 < n ? i0 + 1 : n - 1, j1 = j0 + 1 < n ? j0 + 1 : n - 1;
            float s1 = x - (float)i0, s0 = 1 - s1, t1 = y - (float)j0, t0 = 1 - t1;
            for (int f = 0; f < k; f++) {
                const float *df = d[f];
                out[f][c] = s0 * (t0 * df[j0 * n + i0] + t1 * df[j1 * n + i0]) +
                            s1 * (t0 * df[j0 * n + i1] + t1 * df[j1 * n + i1]);
            }
        }
    }
}

/* A copy of the k fields with the point sources added (value + old, the
 * order of axle's permute with (+)). */
static void add_sources(int64_t n, int k, const float *const *src, bl_fluid_sources s, float *const *dst)
{
    for (int f = 0; f < k; f++) memcpy(dst[f], src[f], sizeof(float) * (size_t)(n * n));
    for (int64_t q = 0; q < s.n; q++) {
        int64_t c = (int64_t)s.row[q] * n + s.col[q];
        dst[0][c] = s.val0[q] + dst[0][c];
        if (k == 2) dst[1][c] = s.val1[q] + dst[1][c];
    }
}

void BL(bl_fluid)(const bl_fluid_params *p, const float *d, const float *u, const float *v, bl_fluid_sources ds,
                  bl_fluid_sources vs, float *work, float *d_out, float *u_out, float *v_out)
{
    const int64_t n = p->side;
    if (n <= 0) return;
    Pool pool = {.nfree = 0};
    for (int b = 0; b < NWORK; b++) give(&pool, work + (size_t)b * (size_t)(n * n));

    /* velocity: sources, diffusion, projection, self-advection, projection */
    float *v0[2] = {take(&pool), take(&pool)}, *v1[2], *v2[2], *v3[2];
    add_sources(n, 2, (const float *const[2]){u, v}, vs, v0);
    lin_solve(&pool, n, 2, p->iters, p->visc_a, p->visc_c, v0, v0, false, v1);
    give(&pool, v0[0]);
    give(&pool, v0[1]);
    v2[0] = take(&pool);
    v2[1] = take(&pool);
    project(&pool, p, v1[0], v1[1], v2[0], v2[1]);
    give(&pool, v1[0]);
    give(&pool, v1[1]);
    v3[0] = take(&pool);
    v3[1] = take(&pool);
    advect(p, v2[0], v2[1], 2, v2, v3);
    give(&pool, v2[0]);
    give(&pool, v2[1]);
    project(&pool, p, v3[0], v3[1], u_out, v_out);
    give(&pool, v3[0]);
    give(&pool, v3[1]);

    /* density: sources, diffusion, advection by the new velocity */
    float *d0[2] = {take(&pool), 0}, *d1[2] = {0, 0};
    add_sources(n, 1, (const float *const[2]){d, 0}, ds, d0);
    lin_solve(&pool, n, 1, p->iters, p->diff_a, p->diff_c, d0, d0, false, d1);
    advect(p, u_out, v_out, 1, d1, (float *const[2]){d_out, 0});
}
