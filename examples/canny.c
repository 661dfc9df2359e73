/*
 * Canny edge detection (paper s.5.7; Table 2), written the way Accelerate's
 * canny example writes it.  Six data-parallel phases in axle:
 *
 *   grey    = map luminance image                    -- packed RGBA -> [0, 1]
 *   blurred = stencil gaussianY (stencil gaussianX grey)   -- 5-tap, separable
 *   magdir  = stencil gradientMagDir blurred         -- Sobel: (|g|, direction)
 *   nms     = stencil suppress magdir                -- non-maximum suppression
 *   edges   = map threshold nms                      -- 1 strong, 0.5 weak, 0 none
 *   strong  = filter (\i -> edges !! i == 1) (generate (size edges) id)
 *
 * and the seventh on the host, as in the paper ("this phase is performed
 * sequentially on a host CPU"): starting from the strong pixels, mark
 * every weak pixel connected to one (8-neighbourhood) as an edge.  All
 * stencils read clamped at the image's edges.  The direction is the
 * gradient's angle quantised to four sectors (Accelerate's formula:
 * alpha = (atan2 dy dx - pi/8) 4/pi, plus 8 if not positive, and the
 * sector floor alpha mod 4), and
 * "undefined" where |dx| and |dy| are both at most the low threshold.
 *
 * Result: (edges, strong) = (an f32 matrix of classes, the i32 row-major
 * indices of the strong pixels in increasing order).  The input is a
 * synthetic RGBA image (gentle background gradient, a high-contrast disc,
 * a low-contrast rectangle whose weak edges must vanish, a triangle whose
 * contrast ramps from faint to strong along its edges so that weak edges
 * join strong ones, noise on every channel).  The size is the number of
 * pixels (the Accelerate paper's 16M); the image is floor(sqrt(n)) square.
 *
 * Tolerance.  The check compares the classes with a double-precision
 * reference of the same phases.  A class is a chain of comparisons of
 * rounded values, so a pixel whose comparison is within rounding of a tie
 * may go either way, and then so may the weak pixels connected to it.
 * The reference marks a pixel uncertain when it could be an edge (|g| >=
 * low - E) and one of its decisions is within a band of a tie: |g| against
 * each threshold or against a neighbour it is compared with, |dx| or |dy|
 * against the low threshold (all within E = 1e-4; f32 errors of these
 * values are about 1e-6), or the angle within 1e-3 of a sector boundary
 * (alpha units; about 1e-5 of error where |g| > low).  Then: (1) every
 * certain pixel's class must equal the reference's exactly; (2) at most
 * 0.5% of pixels (plus 2) may be uncertain, so the band cannot hide a real
 * error; (3) the strong list must be exactly the strong pixels of the
 * class image, in order; (4) the final edge images (host phase on each
 * side) may differ only in connected groups of candidate pixels (weak or
 * strong on either side) that contain a pixel whose class differs.  The
 * baseline is compared with axle the same way (it uses squared magnitudes
 * and tangent comparisons instead of roots and atan2: rounding-level
 * differences that fall in the same band).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_canny.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define CN_LOW 0.1f     /* thresholds on the Sobel magnitude of a [0, 1] image */
#define CN_HIGH 0.3f
#define CN_E 1e-4       /* the band of uncertain decisions (magnitude units) */
#define CN_EA 1e-3      /* ... and of the angle (alpha units) */

static const float gauss[5] = {0.06136f, 0.24477f, 0.38774f, 0.24477f, 0.06136f};

/* ------------------------------------------------------------ the program */

/* A colour channel (bits shift .. shift+7) of a packed RGBA pixel in [0, 1]. */
static ax_exp channel(ax_exp rgba, int shift)
{
    return ax_div(ax_cvt(ax_band(ax_shr(rgba, ax_i32(shift)), ax_u32(0xFF)), AX_F32), ax_f32(255));
}

static ax_exp luminance(ax_exp rgba, void *env)
{
    (void)env;
    return ax_add(ax_add(ax_mul(ax_f32(0.3f), channel(rgba, 24)), ax_mul(ax_f32(0.59f), channel(rgba, 16))),
                  ax_mul(ax_f32(0.11f), channel(rgba, 8)));
}

/* The 5-tap Gaussian over a 1x5 or 5x1 neighbourhood. */
static ax_exp gaussian(const ax_exp *xs, void *env)
{
    (void)env;
    ax_exp s = ax_mul(ax_f32(gauss[0]), xs[0]);
    for (int k = 1; k < 5; k++) s = ax_add(s, ax_mul(ax_f32(gauss[k]), xs[k]));
    return s;
}

/* Sobel over the 3x3 neighbourhood
 *    v0 v1 v2
 *    v3 .  v4       dx = v2 + 2 v4 + v7 - v0 - 2 v3 - v5   (right - left)
 *    v5 v6 v7       dy = v0 + 2 v1 + v2 - v5 - 2 v6 - v7   (top - bottom)
 * giving (magnitude, direction): 0 undefined, 1 diagonal (/), 2 vertical,
 * 3 diagonal (\), 4 horizontal. */
static ax_exp gradient_magdir(const ax_exp *xs, void *env)
{
    (void)env;
    ax_exp v0 = xs[0], v1 = xs[1], v2 = xs[2], v3 = xs[3], v4 = xs[5], v5 = xs[6], v6 = xs[7], v7 = xs[8];
    ax_exp two = ax_f32(2), low = ax_f32(CN_LOW);
    ax_exp dx = ax_sub(ax_sub(ax_sub(ax_add(ax_add(v2, ax_mul(two, v4)), v7), v0), ax_mul(two, v3)), v5);
    ax_exp dy = ax_sub(ax_sub(ax_sub(ax_add(ax_add(v0, ax_mul(two, v1)), v2), v5), ax_mul(two, v6)), v7);
    ax_exp mag = ax_sqrt(ax_add(ax_mul(dx, dx), ax_mul(dy, dy)));
    ax_exp alpha = ax_mul(ax_sub(ax_atan2(dy, dx), ax_f32((float)(M_PI / 8))), ax_f32((float)(4 / M_PI)));
    ax_exp norm = ax_cond(ax_le(alpha, ax_f32(0)), ax_add(alpha, ax_f32(8)), alpha);
    ax_exp sector = ax_mod(ax_floor(norm, AX_I32), ax_i32(4));
    ax_exp undef = ax_and(ax_le(ax_abs(dx), low), ax_le(ax_abs(dy), low));
    return ax_tuple2(mag, ax_cond(undef, ax_i32(0), ax_add(ax_i32(1), sector)));
}

/* The neighbour's magnitude in direction dir: a1 .. a4 for dir 1 .. 4. */
static ax_exp pick(ax_exp dir, ax_exp a1, ax_exp a2, ax_exp a3, ax_exp a4)
{
    return ax_cond(ax_eq(dir, ax_i32(1)), a1,
                   ax_cond(ax_eq(dir, ax_i32(2)), a2, ax_cond(ax_eq(dir, ax_i32(3)), a3, a4)));
}

/* Non-maximum suppression: keep the magnitude only where it is at least
 * that of both neighbours across the edge (along the gradient). */
static ax_exp suppress(const ax_exp *m, void *env)
{
    (void)env;
    ax_exp mag = ax_get(m[4], 0), dir = ax_get(m[4], 1);
    ax_exp fwd = pick(dir, ax_get(m[2], 0), ax_get(m[1], 0), ax_get(m[0], 0), ax_get(m[3], 0));
    ax_exp rev = pick(dir, ax_get(m[6], 0), ax_get(m[7], 0), ax_get(m[8], 0), ax_get(m[5], 0));
    ax_exp none = ax_or(ax_eq(dir, ax_i32(0)), ax_or(ax_lt(mag, fwd), ax_lt(mag, rev)));
    return ax_cond(none, ax_f32(0), mag);
}

static ax_exp threshold(ax_exp g, void *env)
{
    (void)env;
    return ax_cond(ax_ge(g, ax_f32(CN_HIGH)), ax_f32(1),
                   ax_cond(ax_ge(g, ax_f32(CN_LOW)), ax_f32(0.5f), ax_f32(0)));
}

static ax_exp linear_index(ax_exp ix, void *env)
{
    (void)env;
    return ax_cvt(ax_index_get(ix, 0), AX_I32);
}

typedef struct { ax_acc edges; } Strong;

static ax_exp is_strong(ax_exp i, void *env)
{
    const Strong *s = env;
    return ax_eq(ax_at_linear(s->edges, ax_cvt(i, AX_I64)), ax_f32(1));
}

static ax_acc canny(ax_ctx *cx, ax_acc image)
{
    static const int x5[2] = {1, 5}, y5[2] = {5, 1}, sq3[2] = {3, 3};
    ax_acc grey = ax_map(luminance, NULL, image);
    ax_acc blurred = ax_stencil(gaussian, NULL, y5, ax_clamp(), ax_stencil(gaussian, NULL, x5, ax_clamp(), grey));
    ax_acc magdir = ax_stencil(gradient_magdir, NULL, sq3, ax_clamp(), blurred);
    ax_acc edges = ax_map(threshold, NULL, ax_stencil(suppress, NULL, sq3, ax_clamp(), magdir));
    Strong s = {edges};
    ax_acc strong = ax_filter(is_strong, &s, ax_generate(cx, ax_ix1(ax_size(edges)), linear_index, NULL));
    return ax_atuple2(edges, strong);
}

/* ------------------------------------------------------------ inputs */

typedef struct {
    int64_t side, n;            /* the image is side x side, n pixels */
    uint32_t *rgba;
    ax_array *a_img;
    /* the reference (made on first use): classes, uncertain pixels, final edges */
    bool have_ref;
    uint8_t *ref_cls, *uncertain, *ref_edges;
    /* the baseline's last result */
    float *work;
    uint8_t *bl_cls;
    int32_t *bl_strong;
    int64_t bl_nstrong;
    /* scratch for the comparisons */
    uint8_t *cls, *edges, *edges2, *seen;
    int32_t *stack;
} Canny;

static void canny_teardown(void *st)
{
    Canny *c = st;
    if (!c) return;
    ax_array_release(c->a_img);
    void *bufs[] = {c->rgba, c->ref_cls, c->uncertain, c->ref_edges, c->work, c->bl_cls, c->bl_strong,
                    c->cls, c->edges, c->edges2, c->seen, c->stack};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(c);
}

static uint32_t pack(int r, int g, int b)
{
    r = r < 0 ? 0 : r > 255 ? 255 : r;
    g = g < 0 ? 0 : g > 255 ? 255 : g;
    b = b < 0 ? 0 : b > 255 ? 255 : b;
    return (uint32_t)r << 24 | (uint32_t)g << 16 | (uint32_t)b << 8 | 0xFFu;
}

static void make_image(Canny *c)
{
    int64_t s = c->side;
    ex_rng r = {0x6A09E667F3BCC909ull};
    /* background: at most 30 grey levels across, and at most half a level
     * per pixel, well below the low threshold */
    double ramp = s < 60 ? 0.5 * (double)s : 30;
    for (int64_t y = 0; y < s; y++)
        for (int64_t x = 0; x < s; x++) {
            double u = (x + 0.5) / (double)s, v = (y + 0.5) / (double)s;
            int base = 90 + (int)(ramp * v);
            int cr = base, cg = base, cb = base;
            double dd = (u - 0.35) * (u - 0.35) + (v - 0.4) * (v - 0.4);
            if (dd < 0.2 * 0.2) { cr = 255; cg = 230; cb = 120; }                   /* the disc */
            else if (u > 0.55 && u < 0.85 && v > 0.12 && v < 0.42) { cr += 15; cg += 15; cb += 15; }
            /* the triangle right of u = 0.5, between v = 0.6 + 0.3 (u - 0.5)
             * and v = 0.95: its contrast ramps from faint (12 levels: weak
             * edges) to strong (72 levels) along its edges, so that weak
             * edges join strong ones */
            if (u > 0.5 && v > 0.6 + 0.3 * (u - 0.5) && v < 0.95) {
                int k = 12 + (int)(60 * (u - 0.5) / 0.5);
                cr = base + k; cg = base + k; cb = base + k / 2;
            }
            int noise = 8;
            cr += (int)(ex_next(&r) % (2 * noise + 1)) - noise;
            cg += (int)(ex_next(&r) % (2 * noise + 1)) - noise;
            cb += (int)(ex_next(&r) % (2 * noise + 1)) - noise;
            c->rgba[y * s + x] = pack(cr, cg, cb);
        }
}

/* ------------------------------------------------------------ the reference */

static double ref_at(const double *a, int64_t s, int64_t y, int64_t x)
{
    y = y < 0 ? 0 : y >= s ? s - 1 : y;
    x = x < 0 ? 0 : x >= s ? s - 1 : x;
    return a[y * s + x];
}

/* The host phase: breadth-first from the strong pixels through weak ones. */
static void connect(int64_t s, const uint8_t *cls, uint8_t *edges, int32_t *queue)
{
    int64_t head = 0, tail = 0;
    for (int64_t k = 0; k < s * s; k++) {
        edges[k] = cls[k] == BL_CANNY_STRONG;
        if (edges[k]) queue[tail++] = (int32_t)k;
    }
    while (head < tail) {
        int64_t p = queue[head++];
        for (int64_t dy = -1; dy <= 1; dy++)
            for (int64_t dx = -1; dx <= 1; dx++) {
                int64_t y = p / s + dy, x = p % s + dx, q = y * s + x;
                if (y < 0 || y >= s || x < 0 || x >= s || edges[q] || cls[q] != BL_CANNY_WEAK) continue;
                edges[q] = 1;
                queue[tail++] = (int32_t)q;
            }
    }
}

/* The six phases in double precision, with the uncertain pixels marked;
 * then the host phase. */
static int canny_reference(Canny *c)
{
    if (c->have_ref) return 0;
    int64_t s = c->side, n = c->n;
    size_t sz = sizeof(double) * (size_t)(n ? n : 1);
    double *grey = malloc(sz), *bx = malloc(sz), *bl = malloc(sz), *mag = malloc(sz);
    uint8_t *dir = malloc((size_t)(n ? n : 1));
    int rc = -1;
    if (!grey || !bx || !bl || !mag || !dir) goto done;
    for (int64_t k = 0; k < n; k++) {
        uint32_t p = c->rgba[k];
        grey[k] = 0.3 * ((p >> 24) & 0xFF) / 255.0 + 0.59 * ((p >> 16) & 0xFF) / 255.0 +
                  0.11 * ((p >> 8) & 0xFF) / 255.0;
    }
    for (int64_t y = 0; y < s; y++)
        for (int64_t x = 0; x < s; x++) {
            double a = 0;
            for (int k = 0; k < 5; k++) a += gauss[k] * ref_at(grey, s, y, x + k - 2);
            bx[y * s + x] = a;
        }
    for (int64_t y = 0; y < s; y++)
        for (int64_t x = 0; x < s; x++) {
            double a = 0;
            for (int k = 0; k < 5; k++) a += gauss[k] * ref_at(bx, s, y + k - 2, x);
            bl[y * s + x] = a;
        }
    for (int64_t y = 0; y < s; y++)
        for (int64_t x = 0; x < s; x++) {
#define B(dy, dx) ref_at(bl, s, y + (dy), x + (dx))
            double dx = B(-1, 1) + 2 * B(0, 1) + B(1, 1) - B(-1, -1) - 2 * B(0, -1) - B(1, -1);
            double dy = B(-1, -1) + 2 * B(-1, 0) + B(-1, 1) - B(1, -1) - 2 * B(1, 0) - B(1, 1);
#undef B
            int64_t k = y * s + x;
            double al = (atan2(dy, dx) - M_PI / 8) * (4 / M_PI), norm = al <= 0 ? al + 8 : al;
            bool undef = fabs(dx) <= CN_LOW && fabs(dy) <= CN_LOW;
            mag[k] = sqrt(dx * dx + dy * dy);
            dir[k] = undef ? 0 : (uint8_t)(1 + (int)floor(norm) % 4);
            /* near a tie of the undefined test, or of the angle */
            c->uncertain[k] = fabs(fabs(dx) - CN_LOW) < CN_E || fabs(fabs(dy) - CN_LOW) < CN_E ||
                              (!undef && fabs(al - nearbyint(al)) < CN_EA);
        }
    /* offsets (dy, dx) of the neighbours compared, per direction 1..4 */
    static const int off[5][2] = {{0, 0}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}};
    for (int64_t y = 0; y < s; y++)
        for (int64_t x = 0; x < s; x++) {
            int64_t k = y * s + x;
            double g = mag[k];
            int d = dir[k];
            uint8_t cls = BL_CANNY_NONE;
            bool near = false;
            if (d) {
                double fwd = ref_at(mag, s, y + off[d][0], x + off[d][1]);
                double rev = ref_at(mag, s, y - off[d][0], x - off[d][1]);
                /* (at the image's edge a clamped neighbour may be the pixel
                 * itself: every implementation compares a value with itself) */
                near = (fwd != g && fabs(g - fwd) < CN_E) || (rev != g && fabs(g - rev) < CN_E);
                if (!(g < fwd) && !(g < rev)) cls = g >= CN_HIGH ? BL_CANNY_STRONG : g >= CN_LOW ? BL_CANNY_WEAK : 0;
            }
            near = near || fabs(g - CN_LOW) < CN_E || fabs(g - CN_HIGH) < CN_E;
            /* only a pixel that could be an edge can change class */
            c->uncertain[k] = (c->uncertain[k] || near) && g >= CN_LOW - CN_E;
            c->ref_cls[k] = cls;
        }
    connect(s, c->ref_cls, c->ref_edges, c->stack);
    c->have_ref = true;
    rc = 0;
done:
    free(grey);
    free(bx);
    free(bl);
    free(mag);
    free(dir);
    return rc;
}

static void *canny_setup(ax_ctx *cx, int64_t n)
{
    Canny *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    int64_t s = (int64_t)sqrt((double)(n > 0 ? n : 0));
    while (s * s > n) s--;
    while ((s + 1) * (s + 1) <= n) s++;
    c->side = s;
    c->n = s * s;
    size_t np = (size_t)(c->n ? c->n : 1);
    c->rgba = malloc(sizeof(uint32_t) * np);
    c->ref_cls = malloc(np);
    c->uncertain = malloc(np);
    c->ref_edges = malloc(np);
    c->work = malloc(sizeof(float) * BL_CANNY_WORK(s, s));
    c->bl_cls = calloc(1, np);
    c->bl_strong = malloc(sizeof(int32_t) * np);
    c->cls = malloc(np);
    c->edges = malloc(np);
    c->edges2 = malloc(np);
    c->seen = malloc(np);
    c->stack = malloc(sizeof(int32_t) * np);
    if (!c->rgba || !c->ref_cls || !c->uncertain || !c->ref_edges || !c->work || !c->bl_cls || !c->bl_strong ||
        !c->cls || !c->edges || !c->edges2 || !c->seen || !c->stack)
        goto fail;
    make_image(c);
    int64_t shape[2] = {s, s};
    c->a_img = ax_array_wrap(cx, AX_U32, 2, shape, c->rgba);
    if (!c->a_img) goto fail;
    return c;
fail:
    canny_teardown(c);
    return NULL;
}

static ax_acc canny_build(ax_ctx *cx, void *st)
{
    Canny *c = st;
    return canny(cx, ax_use(cx, c->a_img));
}

/* ------------------------------------------------------------ checks */

/* Reads axle's result: classes into c->cls; the strong list. */
static int canny_result(Canny *c, ax_array *const *res, int nres, const int32_t **strong, int64_t *nstrong,
                        char *msg, size_t size)
{
    if (nres != 2 || ax_array_rank(res[0]) != 2 || ax_array_extent(res[0], 0) != c->side ||
        ax_array_extent(res[0], 1) != c->side || ax_array_component_type(res[0], 0) != AX_F32 ||
        ax_array_rank(res[1]) != 1 || ax_array_component_type(res[1], 0) != AX_I32) {
        snprintf(msg, size, "canny: expected a %lld x %lld f32 matrix and an i32 vector", (long long)c->side,
                 (long long)c->side);
        return -1;
    }
    const float *e = ax_array_data(res[0], 0);
    for (int64_t k = 0; k < c->n; k++) {
        if (e[k] != 0 && e[k] != 0.5f && e[k] != 1) {
            snprintf(msg, size, "canny: pixel %lld has class %g (not 0, 0.5 or 1)", (long long)k, e[k]);
            return -1;
        }
        c->cls[k] = e[k] == 1 ? BL_CANNY_STRONG : e[k] == 0.5f ? BL_CANNY_WEAK : BL_CANNY_NONE;
    }
    *strong = ax_array_data(res[1], 0);
    *nstrong = ax_array_size(res[1]);
    return 0;
}

/* The strong list must be exactly the strong pixels of cls, in order. */
static int strong_consistent(const Canny *c, const uint8_t *cls, const int32_t *strong, int64_t nstrong,
                             const char *who, char *msg, size_t size)
{
    int64_t m = 0;
    for (int64_t k = 0; k < c->n; k++) {
        if (cls[k] != BL_CANNY_STRONG) continue;
        if (m >= nstrong || strong[m] != k) {
            snprintf(msg, size, "canny: %s strong list: entry %lld is %lld, expected pixel %lld", who, (long long)m,
                     (long long)(m < nstrong ? strong[m] : -1), (long long)k);
            return -1;
        }
        m++;
    }
    if (m != nstrong) {
        snprintf(msg, size, "canny: %s strong list has %lld entries for %lld strong pixels", who,
                 (long long)nstrong, (long long)m);
        return -1;
    }
    return 0;
}

/* Compares classes a (e.g. axle's) with b, and the final edges ea with
 * eb, under the rules at the top of the file. */
static int canny_compare(Canny *c, const uint8_t *a, const uint8_t *b, const uint8_t *ea, const uint8_t *eb,
                         const char *what, char *msg, size_t size)
{
    int64_t s = c->side, nunc = 0, ndiff = 0;
    for (int64_t k = 0; k < c->n; k++) {
        nunc += c->uncertain[k];
        if (a[k] == b[k]) continue;
        ndiff++;
        if (!c->uncertain[k]) {
            snprintf(msg, size, "canny: pixel (%lld, %lld): class %d, %s %d", (long long)(k / s), (long long)(k % s),
                     a[k], what, b[k]);
            return -1;
        }
    }
    if (nunc > c->n / 200 + 2) {
        snprintf(msg, size, "canny: %lld of %lld pixels are within rounding of a decision (too many to test)",
                 (long long)nunc, (long long)c->n);
        return -1;
    }
    if (!ndiff) {
        if (memcmp(ea, eb, (size_t)c->n)) {
            snprintf(msg, size, "canny: equal classes but different final edges (%s)", what);
            return -1;
        }
        return 0;
    }
    /* Groups of candidates (non-none on either side, 8-connected) that hold a
     * pixel whose class differs may differ in their final edges. */
    memset(c->seen, 0, (size_t)c->n);
    for (int64_t k0 = 0; k0 < c->n; k0++) {
        if (c->seen[k0] || (!a[k0] && !b[k0])) continue;
        int64_t head = 0, tail = 0;
        bool differs = false;
        c->stack[tail++] = (int32_t)k0;
        c->seen[k0] = 1;
        while (head < tail) {
            int64_t p = c->stack[head++];
            differs |= a[p] != b[p];
            for (int64_t dy = -1; dy <= 1; dy++)
                for (int64_t dx = -1; dx <= 1; dx++) {
                    int64_t y = p / s + dy, x = p % s + dx, q = y * s + x;
                    if (y < 0 || y >= s || x < 0 || x >= s || c->seen[q] || (!a[q] && !b[q])) continue;
                    c->seen[q] = 1;
                    c->stack[tail++] = (int32_t)q;
                }
        }
        if (differs) continue;
        for (int64_t h = 0; h < tail; h++) {
            int64_t p = c->stack[h];
            if (ea[p] != eb[p]) {
                snprintf(msg, size, "canny: final edge at (%lld, %lld) differs from the %s", (long long)(p / s),
                         (long long)(p % s), what);
                return -1;
            }
        }
    }
    return 0;
}

static int canny_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Canny *c = st;
    const int32_t *strong;
    int64_t nstrong;
    if (canny_result(c, res, nres, &strong, &nstrong, msg, size)) return -1;
    if (strong_consistent(c, c->cls, strong, nstrong, "axle", msg, size)) return -1;
    if (canny_reference(c)) {
        snprintf(msg, size, "canny: out of memory");
        return -1;
    }
    connect(c->side, c->cls, c->edges, c->stack);
    return canny_compare(c, c->cls, c->ref_cls, c->edges, c->ref_edges, "reference", msg, size);
}

static int canny_baseline(void *st, int variant)
{
    Canny *c = st;
    c->bl_nstrong = (variant ? bl_canny_fast : bl_canny_std)(c->side, c->side, c->rgba, CN_LOW, CN_HIGH, c->work,
                                                              c->bl_cls, c->bl_strong);
    return 0;
}

static int canny_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Canny *c = st;
    const int32_t *strong;
    int64_t nstrong;
    if (canny_result(c, res, nres, &strong, &nstrong, msg, size)) return -1;
    if (strong_consistent(c, c->cls, strong, nstrong, "axle", msg, size)) return -1;
    if (strong_consistent(c, c->bl_cls, c->bl_strong, c->bl_nstrong, "baseline", msg, size)) return -1;
    if (canny_reference(c)) {   /* for the band of uncertain pixels */
        snprintf(msg, size, "canny: out of memory");
        return -1;
    }
    /* the host phase on each side with the baseline's own connect */
    bl_canny_connect_std(c->side, c->side, c->cls, strong, nstrong, c->edges, c->stack);
    bl_canny_connect_std(c->side, c->side, c->bl_cls, c->bl_strong, c->bl_nstrong, c->edges2, c->stack);
    return canny_compare(c, c->cls, c->bl_cls, c->edges, c->edges2, "baseline", msg, size);
}

const ex_program ex_prog_canny = {
    .name = "canny",
    .about = "Canny edge detection: grey, blur, Sobel, suppression, thresholds, strong edges (Accelerate paper, s.5.7)",
    .default_size = 1 << 22,
    .setup = canny_setup,
    .build = canny_build,
    .check = canny_check,
    .teardown = canny_teardown,
    .baseline = canny_baseline,
    .check_baseline = canny_check_baseline,
    .bench_size = 1 << 22,
    .test_size = 4096,
};
