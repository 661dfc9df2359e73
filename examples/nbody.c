/*
 * N-body (paper s.5.4; Table 2): one step of a Newtonian gravitational
 * simulation of n bodies in 3D, with the naive O(n^2) all-pairs algorithm
 * written the way Accelerate's nbody example writes it:
 *
 *   calcAccels eps bodies = fold (.+.) 0 (zipWith (accel eps) rows cols)
 *     where n    = size bodies
 *           cols = replicate (Z :. n :. All) bodies     -- [i][j] = body j
 *           rows = replicate (Z :. All :. n) bodies     -- [i][j] = body i
 *   advance dt b a = (p + dt v', v')  where v' = v + dt a
 *
 * Without fusion the zipWith makes an n x n array of accelerations (O(n^2)
 * memory: the paper's "out of memory" beyond about 5k bodies); with fusion
 * the fold consumes each pairwise term as it is made, O(n) memory.
 *
 * Inputs: point masses (x, y, z, m) and velocities (vx, vy, vz) as tuple
 * arrays (struct of arrays in memory).  Result: (positions (x, y, z),
 * velocities (vx, vy, vz)) after one step.  The size is the number of
 * bodies (the Accelerate paper's 32k).
 *
 * Check: against a double-precision O(n^2) reference computed here, with an
 * error bound per component derived from f32 rounding: the acceleration is
 * a sum of n terms, each with a relative error of a few ulps, summed in any
 * order (the fold may reassociate), so its error is at most about
 * (n + 16) * FLT_EPSILON * sum_j |term_j|; the integration adds an ulp or two
 * of |v| + dt |a| and |p| + dt |v'|.  The bound is taken four times.  The
 * baseline is compared the same way with twice the bound (both sides err).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_nbody.h"
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NB_EPS2 0.01f   /* softening: epsilon^2, keeps close pairs finite */
#define NB_DT 0.01f     /* time step */

/* ------------------------------------------------------------ the program */

/* accel eps bi bj: the acceleration of body i by body j,
 *   r = p_j - p_i,  s = m_j / (|r|^2 + eps^2)^(3/2),  a = s r
 * (a body's pull on itself is 0: r = 0). */
static ax_exp accel(ax_exp bi, ax_exp bj, void *env)
{
    (void)env;
    ax_exp rx = ax_sub(ax_get(bj, 0), ax_get(bi, 0));
    ax_exp ry = ax_sub(ax_get(bj, 1), ax_get(bi, 1));
    ax_exp rz = ax_sub(ax_get(bj, 2), ax_get(bi, 2));
    ax_exp rsqr = ax_add(ax_add(ax_add(ax_mul(rx, rx), ax_mul(ry, ry)), ax_mul(rz, rz)), ax_f32(NB_EPS2));
    ax_exp invr = ax_div(ax_f32(1), ax_sqrt(rsqr));
    ax_exp s = ax_mul(ax_get(bj, 3), ax_mul(ax_mul(invr, invr), invr));
    return ax_tuple3(ax_mul(s, rx), ax_mul(s, ry), ax_mul(s, rz));
}

/* (.+.): vector addition of two 3-tuples. */
static ax_exp vadd(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_tuple3(ax_add(ax_get(a, 0), ax_get(b, 0)), ax_add(ax_get(a, 1), ax_get(b, 1)),
                     ax_add(ax_get(a, 2), ax_get(b, 2)));
}

/* The acceleration of every body: the n x n matrix of pairwise terms,
 * reduced along j (the innermost dimension). */
static ax_acc calc_accels(ax_acc bodies)
{
    ax_exp n = ax_size(bodies);
    ax_acc cols = ax_replicate(2, (ax_slice[]){ax_fixed(n), ax_all()}, bodies);
    ax_acc rows = ax_replicate(2, (ax_slice[]){ax_all(), ax_fixed(n)}, bodies);
    ax_exp zero = ax_tuple3(ax_f32(0), ax_f32(0), ax_f32(0));
    return ax_fold(vadd, NULL, zero, ax_zip_with(accel, NULL, rows, cols));
}

/* v' = v + dt a */
static ax_exp advance_vel(ax_exp v, ax_exp a, void *env)
{
    (void)env;
    ax_exp dt = ax_f32(NB_DT);
    return ax_tuple3(ax_add(ax_get(v, 0), ax_mul(dt, ax_get(a, 0))),
                     ax_add(ax_get(v, 1), ax_mul(dt, ax_get(a, 1))),
                     ax_add(ax_get(v, 2), ax_mul(dt, ax_get(a, 2))));
}

/* p' = p + dt v' (the point mass keeps its mass; only (x, y, z) are returned) */
static ax_exp advance_pos(ax_exp pm, ax_exp v, void *env)
{
    (void)env;
    ax_exp dt = ax_f32(NB_DT);
    return ax_tuple3(ax_add(ax_get(pm, 0), ax_mul(dt, ax_get(v, 0))),
                     ax_add(ax_get(pm, 1), ax_mul(dt, ax_get(v, 1))),
                     ax_add(ax_get(pm, 2), ax_mul(dt, ax_get(v, 2))));
}

/* One step: (positions', velocities'). */
static ax_acc nbody_step(ax_acc bodies, ax_acc vels)
{
    ax_acc vels2 = ax_zip_with(advance_vel, NULL, vels, calc_accels(bodies));
    return ax_atuple2(ax_zip_with(advance_pos, NULL, bodies, vels2), vels2);
}

/* ------------------------------------------------------------ inputs, checks */

typedef struct {
    int64_t n;
    float *in[7];            /* x, y, z, m, vx, vy, vz */
    ax_array *bodies, *vels;
    float *bl[6];            /* the last baseline result: x, y, z, vx, vy, vz */
    double *ref, *tol;       /* the double reference and its bound, 6 per body */
} Nbody;

static void nbody_teardown(void *st)
{
    Nbody *s = st;
    if (!s) return;
    ax_array_release(s->bodies);
    ax_array_release(s->vels);
    for (int c = 0; c < 7; c++) free(s->in[c]);
    for (int c = 0; c < 6; c++) free(s->bl[c]);
    free(s->ref);
    free(s->tol);
    free(s);
}

static void *nbody_setup(ax_ctx *cx, int64_t n)
{
    Nbody *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    size_t sz = sizeof(float) * (size_t)(n ? n : 1);
    for (int c = 0; c < 7; c++)
        if (!(s->in[c] = malloc(sz))) goto fail;
    for (int c = 0; c < 6; c++)
        if (!(s->bl[c] = calloc(1, sz))) goto fail;
    /* Bodies in the cube [-1, 1]^3 with masses in [0.5, 1.5] / n (total
     * mass about 1) and small random velocities. */
    ex_rng r = {0x2545F4914F6CDD1Dull};
    for (int64_t i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) s->in[c][i] = (float)ex_uniform(&r, -1, 1);
        s->in[3][i] = (float)(ex_uniform(&r, 0.5, 1.5) / (double)n);
        for (int c = 4; c < 7; c++) s->in[c][i] = (float)ex_uniform(&r, -0.1, 0.1);
    }
    const ax_type *f = ax_type_scalar(AX_F32);
    const ax_type *f4[4] = {f, f, f, f};
    s->bodies = ax_array_wrap_n(cx, ax_type_tuple(cx, 4, f4), 1, &n, (void *const *)s->in);
    s->vels = ax_array_wrap_n(cx, ax_type_tuple(cx, 3, f4), 1, &n, (void *const *)(s->in + 4));
    if (!s->bodies || !s->vels) goto fail;
    return s;
fail:
    nbody_teardown(s);
    return NULL;
}

static ax_acc nbody_build(ax_ctx *cx, void *st)
{
    Nbody *s = st;
    return nbody_step(ax_use(cx, s->bodies), ax_use(cx, s->vels));
}

/* The double-precision reference and the error bound of an f32 result
 * (see the header comment), computed once. */
static int nbody_reference(Nbody *s)
{
    if (s->ref) return 0;
    int64_t n = s->n;
    s->ref = malloc(sizeof(double) * 6 * (size_t)(n ? n : 1));
    s->tol = malloc(sizeof(double) * 6 * (size_t)(n ? n : 1));
    if (!s->ref || !s->tol) { free(s->ref); free(s->tol); s->ref = s->tol = NULL; return -1; }
    float *const *in = s->in;
    const double u = FLT_EPSILON, dt = NB_DT;
    for (int64_t i = 0; i < n; i++) {
        double a[3] = {0, 0, 0}, mag[3] = {0, 0, 0};
        for (int64_t j = 0; j < n; j++) {
            double rv[3];
            for (int c = 0; c < 3; c++) rv[c] = (double)in[c][j] - in[c][i];
            double rsqr = rv[0] * rv[0] + rv[1] * rv[1] + rv[2] * rv[2] + (double)NB_EPS2;
            double sc = in[3][j] / (rsqr * sqrt(rsqr));
            for (int c = 0; c < 3; c++) {
                a[c] += sc * rv[c];
                mag[c] += fabs(sc * rv[c]);
            }
        }
        for (int c = 0; c < 3; c++) {
            double v = in[4 + c][i] + dt * a[c];
            double p = in[c][i] + dt * v;
            double ea = (double)(n + 16) * u * mag[c];
            double ev = 2 * u * (fabs(in[4 + c][i]) + dt * mag[c]) + dt * ea;
            double ep = 2 * u * (fabs(in[c][i]) + dt * fabs(v)) + dt * ev;
            s->ref[6 * i + c] = p;
            s->ref[6 * i + 3 + c] = v;
            s->tol[6 * i + c] = 4 * ep + 1e-30;
            s->tol[6 * i + 3 + c] = 4 * ev + 1e-30;
        }
    }
    return 0;
}

/* The result's six f32 components (x, y, z, vx, vy, vz), or -1. */
static int nbody_result(const Nbody *s, ax_array *const *res, int nres, const float *out[6], char *msg,
                        size_t size)
{
    if (nres != 2 || ax_array_components(res[0]) != 3 || ax_array_components(res[1]) != 3 ||
        ax_array_size(res[0]) != s->n || ax_array_size(res[1]) != s->n) {
        snprintf(msg, size, "nbody: expected two vectors of %lld (f32, f32, f32)", (long long)s->n);
        return -1;
    }
    for (int c = 0; c < 6; c++) {
        if (ax_array_component_type(res[c / 3], c % 3) != AX_F32) {
            snprintf(msg, size, "nbody: result component %d is not f32", c);
            return -1;
        }
        out[c] = ax_array_data(res[c / 3], c % 3);
    }
    return 0;
}

static const char *const nb_comp[6] = {"x", "y", "z", "vx", "vy", "vz"};

static int nbody_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Nbody *s = st;
    const float *got[6];
    if (nbody_result(s, res, nres, got, msg, size)) return -1;
    if (nbody_reference(s)) { snprintf(msg, size, "nbody: out of memory"); return -1; }
    for (int64_t i = 0; i < s->n; i++)
        for (int c = 0; c < 6; c++) {
            double want = s->ref[6 * i + c], tol = s->tol[6 * i + c];
            if (!(fabs(got[c][i] - want) <= tol)) {
                snprintf(msg, size, "nbody: body %lld %s: got %.9g, expected %.9g (tolerance %.3g)",
                         (long long)i, nb_comp[c], got[c][i], want, tol);
                return -1;
            }
        }
    return 0;
}

static int nbody_baseline(void *st, int variant)
{
    Nbody *s = st;
    float *const *in = s->in, *const *o = s->bl;
    (variant ? bl_nbody_fast : bl_nbody_std)(s->n, in[0], in[1], in[2], in[3], in[4], in[5], in[6], NB_DT,
                                              NB_EPS2, o[0], o[1], o[2], o[3], o[4], o[5]);
    return 0;
}

/* The CUDA baseline: the tiled all-pairs kernel (bench/cuda/baselines.cu). */
static int nbody_cuda(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Nbody *s = st;
    int (*f)(int64_t, const float *const *, float, float, int, float *const *, double *, char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_nbody"))) return snprintf(err, errsize, "no axcb_nbody"), -1;
    return f(s->n, (const float *const *)s->in, NB_DT, NB_EPS2, runs, s->bl, ms, err, errsize);
}

static int nbody_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Nbody *s = st;
    const float *got[6];
    if (nbody_result(s, res, nres, got, msg, size)) return -1;
    if (nbody_reference(s)) { snprintf(msg, size, "nbody: out of memory"); return -1; }
    for (int64_t i = 0; i < s->n; i++)
        for (int c = 0; c < 6; c++) {
            double tol = 2 * s->tol[6 * i + c];
            if (!(fabs((double)got[c][i] - s->bl[c][i]) <= tol)) {
                snprintf(msg, size, "nbody: body %lld %s: axle %.9g, baseline %.9g (tolerance %.3g)",
                         (long long)i, nb_comp[c], got[c][i], s->bl[c][i], tol);
                return -1;
            }
        }
    return 0;
}

const ex_program ex_prog_nbody = {
    .name = "nbody",
    .about = "N-body: all-pairs accelerations (replicate, zipWith, fold) and one integration step (Accelerate paper, s.5.4)",
    .default_size = 4096,
    .setup = nbody_setup,
    .build = nbody_build,
    .check = nbody_check,
    .teardown = nbody_teardown,
    .baseline = nbody_baseline,
    .check_baseline = nbody_check_baseline,
    .cuda_baseline = nbody_cuda,
    .bench_size = 4096,
    .test_size = 64,
};
