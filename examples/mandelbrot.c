/*
 * The Mandelbrot set (paper s.5.5; Table 2 "Mandelbrot (limit)"): for each
 * pixel of an image over the view [-2, 1] x [-1.125, 1.125] of the complex
 * plane, iterate z = z^2 + c from z = c and count the steps before
 * |z|^2 > 4, at most MB_DEPTH.  Two programs with one meaning:
 *
 *  "mandelbrot": the Accelerate paper's formulation.  Accelerate had no loops, so
 *  "we instead define each step of the iteration as a collective operation
 *  and unfold the loop a fixed number of times" (s.5.5); as in Accelerate's
 *  example,
 *     go   = zipWith iter cs                  -- one step over the image
 *     iter c (z, i) = let z' = c + z*z in dot z' > 4 ? ((z, i), (z', i+1))
 *     result = map snd (go (go (... (go zs0))))   -- MB_DEPTH times
 *  Without fusion every step writes the whole image (the paper's 1750%);
 *  with fusion the MB_DEPTH steps become one kernel.
 *
 *  "mandelbrot-while": each pixel's loop as a scalar ax_while (what
 *  Accelerate's later versions write with `while`).
 *
 * Result: the counts, an i32 matrix of h rows and w columns; the size is
 * the number of pixels (the Accelerate paper's 2M), at an aspect of about 4:3.
 *
 * Tolerance.  The iteration is chaotic near the set's boundary: one ulp of
 * difference in z (an FMA where the other side rounds twice, which GCC does
 * by default under -march=native; reassociation under -ffast-math) can
 * change a boundary pixel's count by any amount.  Measured over this view
 * at depth 255: f32 with against without FMA, 0.16% to 0.2% of pixels
 * (64x48 .. 1600x1200); the baseline against axle at 1M pixels, 0.17%
 * (without -ffast-math) and 0.30% (with).  The check therefore allows at
 * most 1% of the pixels (plus one, for tiny images) to differ, by any
 * amount, and reports the count; a real error (a wrong coordinate, an
 * off-by-one in the count, a wrong escape test) changes far more.  The
 * interpreter and the CPU backend evaluate the same f32 operations in the
 * same order as the reference and agreed with it exactly at every size
 * tried.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_mandelbrot.h"
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MB_DEPTH 255
/* The view: corner and extent. */
#define MB_X0 (-2.0f)
#define MB_Y0 (-1.125f)
#define MB_SX 3.0f
#define MB_SY 2.25f

/* ------------------------------------------------------------ the programs */

typedef struct {
    int64_t h, w;
    int32_t *ref, *bl;   /* the reference counts; the last baseline's */
} Mandel;

/* The point of the complex plane that pixel ix = (y, x) samples, (re, im). */
static ax_exp pixel(ax_exp ix, void *env)
{
    const Mandel *m = env;
    ax_exp x = ax_cvt(ax_index_get(ix, 1), AX_F32), y = ax_cvt(ax_index_get(ix, 0), AX_F32);
    return ax_tuple2(ax_add(ax_f32(MB_X0), ax_div(ax_mul(x, ax_f32(MB_SX)), ax_f32((float)m->w))),
                     ax_add(ax_f32(MB_Y0), ax_div(ax_mul(y, ax_f32(MB_SY)), ax_f32((float)m->h))));
}

/* c + z*z for complex c and z given as (re, im) parts. */
static ax_exp next(ax_exp c, ax_exp zr, ax_exp zi)
{
    return ax_tuple2(ax_add(ax_get(c, 0), ax_sub(ax_mul(zr, zr), ax_mul(zi, zi))),
                     ax_add(ax_get(c, 1), ax_add(ax_mul(zr, zi), ax_mul(zi, zr))));
}

/* |z|^2 */
static ax_exp dot(ax_exp z) { return ax_add(ax_mul(ax_get(z, 0), ax_get(z, 0)), ax_mul(ax_get(z, 1), ax_get(z, 1))); }

/* iter c (z, i): one step of a pixel that has not escaped; an escaped
 * pixel keeps its (z, i). */
static ax_exp iter(ax_exp c, ax_exp zi, void *env)
{
    (void)env;
    ax_exp z = next(c, ax_get(zi, 0), ax_get(zi, 1));
    return ax_cond(ax_gt(dot(z), ax_f32(4)), zi,
                   ax_tuple3(ax_get(z, 0), ax_get(z, 1), ax_add(ax_get(zi, 2), ax_i32(1))));
}

static ax_exp start(ax_exp c, void *env)
{
    (void)env;
    return ax_tuple3(ax_get(c, 0), ax_get(c, 1), ax_i32(0));
}

static ax_exp count_of(ax_exp zi, void *env)
{
    (void)env;
    return ax_get(zi, 2);
}

static ax_acc mandel_build(ax_ctx *cx, void *st)
{
    Mandel *m = st;
    ax_acc cs = ax_generate(cx, ax_ix2(ax_i64(m->h), ax_i64(m->w)), pixel, m);
    ax_acc zs = ax_map(start, NULL, cs);
    for (int k = 0; k < MB_DEPTH; k++) zs = ax_zip_with(iter, NULL, cs, zs);
    return ax_map(count_of, NULL, zs);
}

/* The while form.  The state is (z, i) where z is the next point to test:
 * it starts at z1 = c + c*c and the loop runs while i < depth and
 * |z|^2 <= 4, so i ends as the number of steps before escape, the same
 * count as the unrolled form. */
typedef struct { ax_exp c; } Pixel;

static ax_exp while_cond(ax_exp s, void *env)
{
    (void)env;
    return ax_and(ax_lt(ax_get(s, 2), ax_i32(MB_DEPTH)), ax_le(dot(s), ax_f32(4)));
}

static ax_exp while_body(ax_exp s, void *env)
{
    const Pixel *p = env;
    ax_exp z = next(p->c, ax_get(s, 0), ax_get(s, 1));
    return ax_tuple3(ax_get(z, 0), ax_get(z, 1), ax_add(ax_get(s, 2), ax_i32(1)));
}

static ax_exp mandel_pixel(ax_exp ix, void *env)
{
    Pixel p = {pixel(ix, env)};
    ax_exp z1 = next(p.c, ax_get(p.c, 0), ax_get(p.c, 1));
    ax_exp s = ax_while(while_cond, while_body, &p, ax_tuple3(ax_get(z1, 0), ax_get(z1, 1), ax_i32(0)));
    return ax_get(s, 2);
}

static ax_acc mandel_while_build(ax_ctx *cx, void *st)
{
    Mandel *m = st;
    return ax_generate(cx, ax_ix2(ax_i64(m->h), ax_i64(m->w)), mandel_pixel, m);
}

/* ------------------------------------------------------------ inputs, checks */

static void mandel_teardown(void *st)
{
    Mandel *m = st;
    if (!m) return;
    free(m->ref);
    free(m->bl);
    free(m);
}

static void *mandel_setup(ax_ctx *cx, int64_t n)
{
    (void)cx;
    Mandel *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    /* About n pixels at 4:3: h = sqrt(3n/4), w = n / h. */
    m->h = n > 0 ? (int64_t)sqrt(0.75 * (double)n) : 0;
    if (n > 0 && m->h < 1) m->h = 1;
    m->w = m->h ? n / m->h : 0;
    int64_t npix = m->h * m->w;
    size_t sz = sizeof(int32_t) * (size_t)(npix > 0 ? npix : 1);
    m->bl = calloc(1, sz);
    if (!m->bl) { mandel_teardown(m); return NULL; }
    return m;
}

/* The reference, computed on first use: one plain scalar loop per pixel,
 * f32 in the order of the programs (z' = c + z*z with
 * z*z = (zr zr - zi zi, zr zi + zi zr)). */
static int mandel_reference(Mandel *m)
{
    if (m->ref) return 0;
    int64_t npix = m->h * m->w;
    if (!(m->ref = malloc(sizeof(int32_t) * (size_t)(npix > 0 ? npix : 1)))) return -1;
    for (int64_t y = 0; y < m->h; y++)
        for (int64_t x = 0; x < m->w; x++) {
            float cr = MB_X0 + ((float)x * MB_SX) / (float)m->w;
            float ci = MB_Y0 + ((float)y * MB_SY) / (float)m->h;
            float zr = cr, zi = ci;
            int32_t i = 0;
            while (i < MB_DEPTH) {
                float nr = cr + (zr * zr - zi * zi), ni = ci + (zr * zi + zi * zr);
                if (nr * nr + ni * ni > 4.0f) break;
                zr = nr;
                zi = ni;
                i++;
            }
            m->ref[y * m->w + x] = i;
        }
    return 0;
}

/* Compares counts: at most 1% of pixels + 1 may differ (see the top). */
static int mandel_compare(const Mandel *m, ax_array *const *res, int nres, const int32_t *want,
                          const char *what, char *msg, size_t size)
{
    if (nres != 1 || ax_array_rank(res[0]) != 2 || ax_array_extent(res[0], 0) != m->h ||
        ax_array_extent(res[0], 1) != m->w || ax_array_component_type(res[0], 0) != AX_I32) {
        snprintf(msg, size, "mandelbrot: expected an i32 matrix of %lld x %lld", (long long)m->h,
                 (long long)m->w);
        return -1;
    }
    const int32_t *got = ax_array_data(res[0], 0);
    int64_t npix = m->h * m->w, diff = 0, first = -1, allowed = npix / 100 + 1;
    for (int64_t i = 0; i < npix; i++)
        if (got[i] != want[i]) {
            if (first < 0) first = i;
            diff++;
        }
    if (diff > allowed) {
        snprintf(msg, size,
                 "mandelbrot: %lld of %lld pixels differ from the %s (at most %lld may); first (%lld, %lld): "
                 "got %d, expected %d",
                 (long long)diff, (long long)npix, what, (long long)allowed, (long long)(first / m->w),
                 (long long)(first % m->w), got[first], want[first]);
        return -1;
    }
    return 0;
}

static int mandel_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Mandel *m = st;
    if (mandel_reference(m)) {
        snprintf(msg, size, "mandelbrot: out of memory");
        return -1;
    }
    return mandel_compare(m, res, nres, m->ref, "reference", msg, size);
}

static int mandel_baseline(void *st, int variant)
{
    Mandel *m = st;
    (variant ? bl_mandelbrot_fast : bl_mandelbrot_std)(m->h, m->w, MB_X0, MB_Y0, MB_SX, MB_SY, MB_DEPTH, m->bl);
    return 0;
}

/* The CUDA baseline: a kernel written by hand (bench/cuda/baselines.cu). */
static int mandel_cuda(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Mandel *m = st;
    int (*f)(int64_t, int64_t, float, float, float, float, int32_t, int, int32_t *, double *, char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_mandelbrot"))) return snprintf(err, errsize, "no axcb_mandelbrot"), -1;
    return f(m->h, m->w, MB_X0, MB_Y0, MB_SX, MB_SY, MB_DEPTH, runs, m->bl, ms, err, errsize);
}

static int mandel_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Mandel *m = st;
    return mandel_compare(m, res, nres, m->bl, "baseline", msg, size);
}

const ex_program ex_prog_mandelbrot = {
    .name = "mandelbrot",
    .about = "Mandelbrot set as the Accelerate paper writes it (s.5.5): 255 steps unrolled as zipWith over the image",
    .default_size = 1 << 20,
    .setup = mandel_setup,
    .build = mandel_build,
    .check = mandel_check,
    .teardown = mandel_teardown,
    .baseline = mandel_baseline,
    .check_baseline = mandel_check_baseline,
    .cuda_baseline = mandel_cuda,
    .bench_size = 1 << 20,
    .test_size = 768,
};

const ex_program ex_prog_mandelbrot_while = {
    .name = "mandelbrot-while",
    .about = "Mandelbrot set with a scalar while loop per pixel (ax_while), up to 255 steps",
    .default_size = 1 << 20,
    .setup = mandel_setup,
    .build = mandel_while_build,
    .check = mandel_check,
    .teardown = mandel_teardown,
    .baseline = mandel_baseline,
    .check_baseline = mandel_check_baseline,
    .cuda_baseline = mandel_cuda,
    .bench_size = 1 << 20,
    .test_size = 768,
};
