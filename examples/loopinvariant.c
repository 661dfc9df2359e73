/*
 * Loop-invariant terms: an awhile body that reads an array computed from
 * the loop's inputs alone, written where a user writes it (in the body),
 * against the same loop with that array computed before the loop by hand.
 *
 *   licm-body     for 20 steps: x = 0.5 x + g xs     (g xs in the body)
 *   licm-use      the same, xs given to ax_use inside the body
 *   licm-nested   4 outer steps of 5 inner steps of the same, g xs in the
 *                 inner body
 *   licm-hoisted  let h = g xs in for 20 steps: x = 0.5 x + h
 *
 * g v = exp (sin v) * sqrt (1 + v * v) + log (2 + cos v): costly per
 * element, so a loop that computes it every step is several times slower
 * than one that computes it once.  All four compute the same 20 updates;
 * the C baseline computes g once and runs the loop.
 *
 * Input: xs[i] = (i mod 1000) / 250 - 2, x = 0.  Result after k steps:
 * x = (2 - 2^(1-k)) g xs, computed by the loop's own additions.
 *
 * Tolerance: exp, sin, cos and log come from glibc's libm in the
 * interpreter and the baseline and from libmvec in the CPU backend (at
 * most 4 ulp); g's value then differs by at most about 20 ulp of its
 * magnitude, and the loop's steps (x halved, g added) do not amplify it:
 * a relative 1e-13 of max(|x|, 1).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LI_STEPS = 20, LI_OUTER = 4, LI_INNER = 5 };

typedef struct Li {
    int64_t n;
    double *xs, *bl;
    ax_array *axs;
    ax_acc xs_acc;     /* licm-body, licm-nested: ax_use of axs */
    ax_ctx *cx;        /* licm-use's body makes its use */
    bool bl_done;
} Li;

static void *li_setup(ax_ctx *cx, int64_t n)
{
    Li *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    s->cx = cx;
    s->xs = malloc(sizeof(double) * (size_t)(n ? n : 1));
    s->bl = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!s->xs || !s->bl) {
        free(s->xs), free(s->bl), free(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) s->xs[i] = (double)(i % 1000) / 250.0 - 2.0;
    if (!(s->axs = ax_array_wrap(cx, AX_F64, 1, &n, s->xs))) {
        free(s->xs), free(s->bl), free(s);
        return NULL;
    }
    return s;
}

static ax_exp g_elem(ax_exp v, void *env)
{
    (void)env;
    ax_exp a = ax_mul(ax_exp_(ax_sin(v)), ax_sqrt(ax_add(ax_f64(1), ax_mul(v, v))));
    return ax_add(a, ax_log(ax_add(ax_f64(2), ax_cos(v))));
}
static ax_exp half_plus(ax_exp x, ax_exp h, void *env)
{
    (void)env;
    return ax_add(ax_mul(ax_f64(0.5), x), h);
}
static ax_exp zero(ax_exp ix, void *env)
{
    (void)ix, (void)env;
    return ax_f64(0);
}

static ax_acc zeros(ax_ctx *cx, ax_acc xs) { return ax_generate(cx, ax_shape(xs), zero, NULL); }

/* the natural form: g xs written in the body */
static ax_acc body_step(ax_exp step, ax_acc x, void *env)
{
    (void)step;
    Li *s = env;
    return ax_zip_with(half_plus, NULL, x, ax_map(g_elem, NULL, s->xs_acc));
}
static ax_acc body_build(ax_ctx *cx, void *st)
{
    Li *s = st;
    s->xs_acc = ax_use(cx, s->axs);
    return ax_for(ax_i64(LI_STEPS), body_step, s, zeros(cx, s->xs_acc));
}

/* the input given to ax_use inside the body */
static ax_acc use_step(ax_exp step, ax_acc x, void *env)
{
    (void)step;
    Li *s = env;
    return ax_zip_with(half_plus, NULL, x, ax_map(g_elem, NULL, ax_use(s->cx, s->axs)));
}
static ax_acc use_build(ax_ctx *cx, void *st)
{
    Li *s = st;
    return ax_for(ax_i64(LI_STEPS), use_step, s, zeros(cx, ax_use(cx, s->axs)));
}

/* g xs in the body of an inner loop */
static ax_acc outer_step(ax_exp step, ax_acc x, void *env)
{
    (void)step;
    return ax_for(ax_i64(LI_INNER), body_step, env, x);
}
static ax_acc nested_build(ax_ctx *cx, void *st)
{
    Li *s = st;
    s->xs_acc = ax_use(cx, s->axs);
    return ax_for(ax_i64(LI_OUTER), outer_step, s, zeros(cx, s->xs_acc));
}

/* by hand: h = g xs made once, before the loop */
static ax_acc hoisted_step(ax_exp step, ax_acc x, void *env)
{
    (void)step;
    return ax_zip_with(half_plus, NULL, x, *(ax_acc *)env);
}
static ax_acc hoisted_build(ax_ctx *cx, void *st)
{
    Li *s = st;
    s->xs_acc = ax_compute(ax_map(g_elem, NULL, ax_use(cx, s->axs)));
    return ax_for(ax_i64(LI_STEPS), hoisted_step, &s->xs_acc, zeros(cx, s->xs_acc));
}

static int li_compare(const Li *s, const double *got, const double *want, const char *who, char *msg, size_t size)
{
    for (int64_t i = 0; i < s->n; i++) {
        double tol = 1e-13 * fmax(fabs(want[i]), 1.0);
        if (!(fabs(got[i] - want[i]) <= tol)) {
            snprintf(msg, size, "licm: %s element %lld is %.17g, expected %.17g", who, (long long)i, got[i], want[i]);
            return -1;
        }
    }
    return 0;
}

/* The plain loop: g once, then the steps. */
static void li_reference(const Li *s, double *x)
{
    for (int64_t i = 0; i < s->n; i++) {
        double v = s->xs[i], g = exp(sin(v)) * sqrt(1 + v * v) + log(2 + cos(v)), a = 0;
        for (int k = 0; k < LI_STEPS; k++) a = 0.5 * a + g;
        x[i] = a;
    }
}

static int li_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Li *s = st;
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_shape(res[0])[0] != s->n) {
        snprintf(msg, size, "licm: expected one vector of %lld elements", (long long)s->n);
        return -1;
    }
    double *want = malloc(sizeof(double) * (size_t)(s->n ? s->n : 1));
    if (!want) {
        snprintf(msg, size, "licm: out of memory");
        return -1;
    }
    li_reference(s, want);
    int r = li_compare(s, ax_array_data(res[0], 0), want, "axle's", msg, size);
    free(want);
    return r;
}

static int li_baseline(void *st, int variant)
{
    (void)variant;
    Li *s = st;
    li_reference(s, s->bl);
    s->bl_done = true;
    return 0;
}

static int li_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Li *s = st;
    if (!s->bl_done || nres != 1) {
        snprintf(msg, size, "licm: the baseline has not run");
        return -1;
    }
    return li_compare(s, ax_array_data(res[0], 0), s->bl, "axle's", msg, size);
}

static void li_teardown(void *st)
{
    Li *s = st;
    if (!s) return;
    ax_array_release(s->axs);
    free(s->xs), free(s->bl), free(s);
}

#define LI_PROGRAM(id, nm, ab, bld)                                                             \
    const ex_program id = {.name = nm, .about = ab, .default_size = 1000000, .setup = li_setup, \
                           .build = bld, .check = li_check, .teardown = li_teardown,            \
                           .baseline = li_baseline, .check_baseline = li_check_baseline,        \
                           .bench_size = 1000000, .test_size = 1000, .extra = true}

LI_PROGRAM(ex_prog_licm_body, "licm-body", "20 steps of x = 0.5 x + g xs, g xs written in the loop body (moved out)",
           body_build);
LI_PROGRAM(ex_prog_licm_use, "licm-use", "licm-body with xs given to ax_use inside the body", use_build);
LI_PROGRAM(ex_prog_licm_nested, "licm-nested", "licm-body as 4 outer steps of 5 inner ones, g xs in the inner body",
           nested_build);
LI_PROGRAM(ex_prog_licm_hoisted, "licm-hoisted", "licm-body with g xs made before the loop by hand (ax_compute)",
           hoisted_build);
