/*
 * Common subexpressions of whole array terms (src/opt/acse.c): equal array
 * operations built apart are computed once; operations that differ in an
 * operator, a constant, an operand or a free variable are not merged; a
 * term in a loop body equal to one before the loop is not recomputed;
 * and the results are the interpreter's, with and without the pass.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

/* The "kernels" count of a's kernel dump. */
static int kernels(ax_ctx *cx, ax_acc a)
{
    char *d = ax_dump(cx, a, "kernels", true);
    const char *k = d ? strstr(d, "\"kernels\":") : NULL;
    int n = k ? atoi(k + 10) : -1;
    free(d);
    return n;
}

static ax_exp sq_plus(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    ax_exp t = ax_mul(x, x);   /* an inner let after sharing recovery */
    return ax_add(ax_add(t, t), y);
}

static ax_exp scaled(ax_exp x, void *env) { return ax_mul(x, ax_f64(*(double *)env)); }

typedef struct Env {
    ax_ctx *cx;
    ax_acc xs;
} Env;

static const double xv[6] = {1, 2, 3, 4, 5, 6};

static ax_acc two_sums(ax_ctx *cx, ax_acc xs, ax_fn2 f2)
{
    ax_acc a = ax_fold(f2, NULL, ax_f64(0), xs), b = ax_fold(f2, NULL, ax_f64(0), xs);
    return ax_zip_with(ax_fn_add, NULL, a, b);
}

TEST(equal_folds_built_apart_are_one)
{
    /* folds of one array that differ stay apart here; the planner would
     * merge them into one pass (tests/test_plan.c) */
    ax_options po = {0};
    po.debug = AX_DEBUG_NO_PLANNER;
    ax_ctx *cx = ax_ctx_new(&po);
    REQUIRE(cx);
    int64_t n = 6;
    ax_acc xs = ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, (void *)xv));
    ax_acc r = two_sums(cx, xs, ax_fn_add);
    CHECK_EQ_I(kernels(cx, r), 2);   /* one fold, and the zip */
    ax_array *out = RUN(cx, r);
    CHECK(out && *(double *)ax_array_data(out, 0) == 42);
    ax_array_release(out);
    /* with lambdas that bind inner variables */
    r = two_sums(cx, xs, sq_plus);
    CHECK_EQ_I(kernels(cx, r), 2);
    /* different operators, constants or inputs: not merged */
    ax_acc mixed = ax_zip_with(ax_fn_add, NULL, ax_fold(ax_fn_add, NULL, ax_f64(0), xs),
                               ax_fold(ax_fn_mul, NULL, ax_f64(0), xs));
    CHECK_EQ_I(kernels(cx, mixed), 3);
    ax_acc consts = ax_zip_with(ax_fn_add, NULL, ax_fold(ax_fn_add, NULL, ax_f64(0), xs),
                                ax_fold(ax_fn_add, NULL, ax_f64(1), xs));
    CHECK_EQ_I(kernels(cx, consts), 3);
    ax_acc ys = ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, (void *)xv));   /* the same buffer, another array */
    ax_array *h = ax_array_from(cx, AX_F64, 1, &n, xv);
    ax_acc zs = ax_use(cx, h);
    ax_array_release(h);
    ax_acc other = ax_zip_with(ax_fn_add, NULL, ax_fold(ax_fn_add, NULL, ax_f64(0), xs),
                               ax_fold(ax_fn_add, NULL, ax_f64(0), zs));
    CHECK_EQ_I(kernels(cx, other), 3);
    (void)ys;
    double k1 = 2, k2 = 3;
    ax_acc envs = ax_zip_with(ax_fn_add, NULL, ax_fold(ax_fn_add, NULL, ax_f64(0), ax_map(scaled, &k1, xs)),
                              ax_fold(ax_fn_add, NULL, ax_f64(0), ax_map(scaled, &k2, xs)));
    CHECK_EQ_I(kernels(cx, envs), 3);
    out = RUN(cx, envs);
    CHECK(out && *(double *)ax_array_data(out, 0) == 2 * 21 + 3 * 21);
    ax_array_release(out);
    ax_ctx_free(cx);
    /* and without CSE, two folds again */
    ax_options o = {0};
    o.debug = AX_DEBUG_NO_CSE | AX_DEBUG_NO_PLANNER;
    cx = ax_ctx_new(&o);
    REQUIRE(cx);
    xs = ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, (void *)xv));
    CHECK_EQ_I(kernels(cx, two_sums(cx, xs, ax_fn_add)), 3);
    ax_ctx_free(cx);
}

static ax_acc below(ax_acc x, void *env)
{
    Env *e = env;
    return ax_unit(e->cx, ax_lt(ax_at_linear(x, ax_i64(0)), ax_f64(1000)));
}

/* The body adds the sum of xs (the same term as outside the loop) to
 * every element. */
static ax_exp add_s(ax_exp x, ax_exp s, void *env) { (void)env; return ax_add(x, s); }

static ax_acc step(ax_acc x, void *env)
{
    Env *e = env;
    ax_acc s = ax_fold(ax_fn_add, NULL, ax_f64(0), e->xs);   /* loop-invariant */
    ax_slice spec[1] = {ax_fixed(ax_size(x))};
    ax_acc rep = ax_replicate(1, spec, s);
    return ax_zip_with(add_s, NULL, x, rep);
}

TEST(a_loop_term_equal_to_one_before_the_loop_is_not_recomputed)
{
    for (int cse = 0; cse < 2; cse++) {
        ax_options o = {0};
        o.debug = cse ? 0 : AX_DEBUG_NO_CSE;
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        int64_t n = 6;
        Env e = {cx, ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, (void *)xv))};
        ax_acc before = ax_fold(ax_fn_add, NULL, ax_f64(0), e.xs);
        ax_acc loop = ax_awhile(below, step, &e, ax_map(ax_fn_id, NULL, e.xs));
        ax_acc r = ax_atuple2(before, loop);
        char *d = ax_dump(cx, r, "fusion", false);
        REQUIRE(d);
        /* folds in the program: one with the pass, two without */
        int folds = 0;
        for (const char *p = d; (p = strstr(p, "fold ")); p++) folds++;
        CHECKF(folds == (cse ? 1 : 2), "%d folds:\n%s", folds, d);
        free(d);
        ax_array *out[2] = {0};
        CHECK(ax_run_n(cx, r, out, 2) == 2);
        if (out[1]) {
            const double *v = ax_array_data(out[1], 0);
            double want = 1;   /* element 0: 1 + 21 k until it passes 1000 */
            while (want < 1000) want += 21;
            CHECK(v && v[0] == want);
        }
        ax_array_release(out[0]);
        ax_array_release(out[1]);
        ax_ctx_free(cx);
    }
}
