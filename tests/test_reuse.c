/* Tests of the program memory (src/driver/run.c, src/frontend/srckey.c): a
 * program compiled again in a context reuses the compilation of an equal
 * source graph, each program reading its own arrays, and any change to
 * what the graph computes misses it.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

/* A context on backend k (the CPU one only where a C compiler runs). */
static ax_ctx *ctx_on(ax_backend_kind k, unsigned debug)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = k;
    o.threads = 2;
    o.debug = debug;
    return ax_ctx_new(&o);
}

static bool have_cc(void)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_CPU, 0);
    ax_array *r = cx ? ax_run(cx, ax_unit(cx, ax_i32(1))) : NULL;
    bool ok = r != NULL;
    if (!ok) printf("skip: the CPU backend does not run here (%s)\n", cx ? ax_error(cx) : "no context");
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

static ax_array *vec_f32(ax_ctx *cx, int64_t n, float scale)
{
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = scale * (float)(i % 17) - 3.0f;
    ax_array *a = ax_array_from(cx, AX_F32, 1, &n, v);
    free(v);
    return a;
}

static float at_f32(const ax_array *a, int64_t i) { return ((const float *)ax_array_data(a, 0))[i]; }

static ax_exp f_axpy(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    return ax_add(ax_mul(ax_f32(2.0f), x), y);
}

static ax_acc axpy(ax_ctx *cx, ax_array *x, ax_array *y)
{
    return ax_zip_with(f_axpy, NULL, ax_use(cx, x), ax_use(cx, y));
}

/* Runs a compiled program: its one result (NULL on failure). */
static ax_array *run1(ax_program *pr)
{
    ax_array *r = NULL;
    CHECK(ax_program_run(pr, &r, 1) == 1);
    return r;
}

/* 2x + y over the given arrays, checked element by element. */
static bool axpy_right(const ax_array *r, const ax_array *x, const ax_array *y)
{
    if (!r || ax_array_size(r) != ax_array_size(x)) return false;
    for (int64_t i = 0; i < ax_array_size(r); i++)
        if (at_f32(r, i) != 2.0f * at_f32(x, i) + at_f32(y, i)) return false;
    return true;
}

/* Two programs over different arrays (another size) share one
 * compilation; each reads its own arrays, run in any order, after the
 * other is freed, and after ax_ctx_reset. */
TEST(reuse_each_program_reads_its_own_arrays)
{
    ax_backend_kind kinds[2] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
    for (int b = 0; b < 2; b++) {
        if (kinds[b] == AX_BACKEND_CPU && !have_cc()) continue;
        ax_ctx *cx = ctx_on(kinds[b], 0);
        REQUIRE(cx);
        ax_array *x1 = vec_f32(cx, 1000, 1.0f), *y1 = vec_f32(cx, 1000, 0.5f);
        ax_array *x2 = vec_f32(cx, 77, -2.0f), *y2 = vec_f32(cx, 77, 3.0f);
        ax_program *p1 = ax_compile(cx, axpy(cx, x1, y1));
        ax_program *p2 = ax_compile(cx, axpy(cx, x2, y2));
        REQUIRE(p1 && p2);
        CHECK(!ax_program_stats(p1)->reused);
        CHECK(ax_program_stats(p2)->reused);
        CHECK_EQ_I(ax_program_stats(p2)->kernels, ax_program_stats(p1)->kernels);
        for (int round = 0; round < 2; round++) {
            ax_array *r1 = run1(p1), *r2 = run1(p2);
            CHECK(axpy_right(r1, x1, y1));
            CHECK(axpy_right(r2, x2, y2));
            ax_array_release(r1);
            ax_array_release(r2);
        }
        /* the arrays' builders' references dropped: the programs hold theirs */
        ax_ctx_reset(cx);
        ax_program_free(p1);
        ax_array *r2 = run1(p2);
        CHECK(axpy_right(r2, x2, y2));
        ax_array_release(r2);
        /* the operands swapped: the same graph up to the arrays, so reused,
         * and it computes 2 y + x */
        ax_program *p3 = ax_compile(cx, axpy(cx, y1, x1));
        REQUIRE(p3);
        CHECK(ax_program_stats(p3)->reused);
        ax_array *r3 = run1(p3);
        CHECK(axpy_right(r3, y1, x1));
        ax_array_release(r3);
        ax_program_free(p3);
        ax_array_release(x1);
        ax_array_release(y1);
        ax_array_release(x2);
        ax_array_release(y2);
        /* p2 outlives its context: orphaned, then freed */
        ax_ctx_free(cx);
        ax_program_free(p2);
    }
}

/* ------------------------------------------------ what misses */

typedef struct V {
    int which;            /* the variant */
} V;

static ax_exp f_var(ax_exp x, void *env)
{
    const V *v = env;
    switch (v->which) {
    case 1: return ax_mul(x, ax_f32(0.25f));                 /* another constant */
    case 2: return ax_add(x, ax_f32(0.5f));                  /* another primitive */
    case 3: { ax_exp s = ax_mul(x, x); return ax_add(s, s); }   /* shared */
    case 4: return ax_add(ax_mul(x, x), ax_mul(x, x));        /* not shared */
    case 5: return ax_mul(x, ax_f32(-0.0f));                 /* -0, not +0 */
    case 6: return ax_mul(x, ax_f32(0.0f));
    default: return ax_mul(x, ax_f32(0.5f));
    }
}

static ax_exp f_sub(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    return ax_sub(x, y);
}

static ax_exp sten_sum(const ax_exp *xs, void *env)
{
    (void)env;
    return ax_add(ax_add(xs[0], xs[1]), xs[2]);
}

static ax_exp f_sq(ax_exp x, void *env)
{
    (void)env;
    return ax_mul(x, x);
}

/* The programs a test compares, over a and b (f32 vectors), m (an f32
 * matrix) and d (an f64 vector). */
static ax_acc variant(ax_ctx *cx, int k, ax_array *a, ax_array *b, ax_array *m, ax_array *d)
{
    static V vs[7] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}};
    const ax_type *f32 = ax_type_scalar(AX_F32);
    switch (k) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6:
        return ax_map(f_var, &vs[k], ax_use(cx, a));
    case 7:   /* the same array twice, against two arrays */
        return ax_zip_with(f_sub, NULL, ax_use(cx, a), ax_use(cx, a));
    case 8:
        return ax_zip_with(f_sub, NULL, ax_use(cx, a), ax_use(cx, b));
    case 9: {   /* an array term shared, against two equal ones */
        ax_acc t = ax_map(f_var, &vs[0], ax_use(cx, a));
        return ax_zip_with(f_sub, NULL, t, t);
    }
    case 10:
        return ax_zip_with(f_sub, NULL, ax_map(f_var, &vs[0], ax_use(cx, a)), ax_map(f_var, &vs[0], ax_use(cx, a)));
    case 11:   /* f64 elements, against f32 (20) */
        return ax_map(f_sq, NULL, ax_use(cx, d));
    case 12:   /* stencil boundaries and sizes */
    case 13:
    case 14: {
        int size = k == 14 ? 5 : 3;
        return ax_stencil(sten_sum, NULL, &size, k == 13 ? ax_wrap() : ax_clamp(), ax_use(cx, a));
    }
    case 15:   /* a parameter (index 0, then 1) in place of the array */
        return ax_map(f_var, &vs[0], ax_param(cx, 0, f32, 1));
    case 16:
        return ax_map(f_var, &vs[0], ax_param(cx, 1, f32, 1));
    case 17:   /* a fold's initial value */
        return ax_fold(ax_fn_add, NULL, ax_f32(0.0f), ax_use(cx, a));
    case 18:
        return ax_fold(ax_fn_add, NULL, ax_f32(1.0f), ax_use(cx, a));
    case 19:   /* a matrix, against a vector (0) */
        return ax_map(f_var, &vs[0], ax_use(cx, m));
    case 20:
        return ax_map(f_sq, NULL, ax_use(cx, a));
    }
    return NULL;
}

enum { NVARIANTS = 21 };

/* Each variant compiled after every other one in one context: reused
 * exactly when it is the same variant, and its results always equal
 * those of a context that compiles it alone. */
TEST(reuse_misses_on_every_change)
{
    ax_backend_kind kind = AX_BACKEND_INTERP;
    ax_ctx *cx, *alone = ctx_on(kind, AX_DEBUG_NO_REUSE);
    REQUIRE(alone);
    int64_t n = 40, sh2[2] = {5, 8};
    double dv[40];
    float mv[40];
    for (int i = 0; i < 40; i++) dv[i] = 0.25 * i - 2, mv[i] = (float)i - 7.5f;
    for (int first = 0; first < NVARIANTS; first++)
        for (int second = 0; second < NVARIANTS; second++) {
            /* a, b, m, d, and a2 in place of a for the second */
            ax_array *x[2][5];
            cx = ctx_on(kind, 0);   /* a memory of nothing but the first */
            REQUIRE(cx);
            ax_ctx *cs[2] = {cx, alone};
            for (int c = 0; c < 2; c++) {
                x[c][0] = vec_f32(cs[c], n, 1.5f);
                x[c][1] = vec_f32(cs[c], n, -0.5f);
                x[c][2] = ax_array_from(cs[c], AX_F32, 2, sh2, mv);
                x[c][3] = ax_array_from(cs[c], AX_F64, 1, &n, dv);
                x[c][4] = vec_f32(cs[c], n, 2.5f);
            }
            ax_program *p1 = ax_compile(cx, variant(cx, first, x[0][0], x[0][1], x[0][2], x[0][3]));
            ax_program *p2 = ax_compile(cx, variant(cx, second, x[0][4], x[0][1], x[0][2], x[0][3]));
            REQUIRE(p1 && p2);
            CHECKF(ax_program_stats(p2)->reused == (first == second), "variant %d after %d: reused %d", second,
                   first, ax_program_stats(p2)->reused);
            /* the second's results against the same program compiled alone */
            ax_program *q = ax_compile(alone, variant(alone, second, x[1][4], x[1][1], x[1][2], x[1][3]));
            REQUIRE(q);
            CHECK(!ax_program_stats(q)->reused);
            ax_array *r = NULL, *s = NULL;
            ax_array *args[2][2] = {{x[0][4], x[0][1]}, {x[1][4], x[1][1]}};
            int nr = ax_program_run_with(p2, args[0], 2, &r, 1), ns = ax_program_run_with(q, args[1], 2, &s, 1);
            CHECKF(nr == 1 && ns == 1, "variant %d: %s / %s", second, ax_error(cx), ax_error(alone));
            if (r && s) {
                CHECK_EQ_I(ax_array_size(r), ax_array_size(s));
                size_t w = ax_type_equal(ax_array_type(r), ax_type_scalar(AX_F64)) ? 8 : 4;
                CHECKF(ax_array_size(r) == ax_array_size(s) &&
                           !memcmp(ax_array_data(r, 0), ax_array_data(s, 0), (size_t)ax_array_size(r) * w),
                       "variant %d after %d: results differ", second, first);
            }
            ax_array_release(r);
            ax_array_release(s);
            ax_program_free(p1);
            ax_program_free(p2);
            ax_program_free(q);
            for (int c = 0; c < 2; c++)
                for (int i = 0; i < 5; i++) ax_array_release(x[c][i]);
            ax_ctx_free(cx);
            ax_ctx_reset(alone);
        }
    ax_ctx_free(alone);
}

/* Memory is per context: another context compiles for itself (its
 * options may differ: unsafe, fast-math, another backend). */
TEST(reuse_is_per_context)
{
    ax_ctx *c1 = ctx_on(AX_BACKEND_INTERP, 0), *c2 = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(c1 && c2);
    ax_array *x1 = vec_f32(c1, 10, 1), *y1 = vec_f32(c1, 10, 2), *x2 = vec_f32(c2, 10, 1), *y2 = vec_f32(c2, 10, 2);
    ax_program *p1 = ax_compile(c1, axpy(c1, x1, y1)), *p2 = ax_compile(c2, axpy(c2, x2, y2));
    REQUIRE(p1 && p2);
    CHECK(!ax_program_stats(p1)->reused && !ax_program_stats(p2)->reused);
    /* and a graph over an array of another context is refused as before */
    ax_program *bad = ax_compile(c1, axpy(c1, x1, y2));
    CHECK(bad == NULL);
    CHECKF(strstr(ax_error(c1), "another context"), "%s", ax_error(c1));
    ax_program_free(p1);
    ax_program_free(p2);
    ax_array_release(x1);
    ax_array_release(y1);
    ax_array_release(x2);
    ax_array_release(y2);
    ax_ctx_free(c1);
    ax_ctx_free(c2);
}

static ax_exp f_scale(ax_exp x, void *env) { return ax_mul(x, ax_f32(*(const float *)env)); }

/* The memory holds the most recent compilations only: the oldest of
 * more than it holds is compiled again, the newest reused. */
TEST(reuse_memory_is_bounded)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    ax_array *x = vec_f32(cx, 8, 1);
    enum { N = 40 };
    float k[N];
    for (int i = 0; i < N; i++) {
        k[i] = (float)i + 0.5f;
        ax_program *p = ax_compile(cx, ax_map(f_scale, &k[i], ax_use(cx, x)));
        REQUIRE(p);
        CHECK(!ax_program_stats(p)->reused);
        ax_program_free(p);
    }
    ax_program *old = ax_compile(cx, ax_map(f_scale, &k[0], ax_use(cx, x)));
    ax_program *recent = ax_compile(cx, ax_map(f_scale, &k[N - 1], ax_use(cx, x)));
    REQUIRE(old && recent);
    CHECK(!ax_program_stats(old)->reused);
    CHECK(ax_program_stats(recent)->reused);
    ax_array *r = run1(recent);
    CHECK(r && at_f32(r, 3) == at_f32(x, 3) * k[N - 1]);
    ax_array_release(r);
    ax_program_free(old);
    ax_program_free(recent);
    ax_array_release(x);
    ax_ctx_free(cx);
}

/* Parameters: a program of placeholders reused takes its own arguments,
 * and a parameter used with two types is still refused. */
TEST(reuse_with_parameters)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    const ax_type *f32 = ax_type_scalar(AX_F32), *i32 = ax_type_scalar(AX_I32);
    ax_program *p[2];
    for (int k = 0; k < 2; k++) {
        p[k] = ax_compile(cx, ax_zip_with(f_axpy, NULL, ax_param(cx, 0, f32, 1), ax_param(cx, 1, f32, 1)));
        REQUIRE(p[k]);
        CHECK(ax_program_stats(p[k])->reused == (k == 1));
        CHECK_EQ_I(ax_program_params(p[k]), 2);
    }
    ax_array *x = vec_f32(cx, 30, 1), *y = vec_f32(cx, 30, 7);
    ax_array *args[2][2] = {{x, y}, {y, x}};
    for (int k = 0; k < 2; k++) {
        ax_array *r = NULL;
        CHECK(ax_program_run_with(p[k], args[k], 2, &r, 1) == 1);
        CHECK(axpy_right(r, args[k][0], args[k][1]));
        ax_array_release(r);
    }
    /* one index as [f32]^1 and [i32]^1: an error, compiled or reused */
    for (int k = 0; k < 2; k++) {
        ax_program *bad = ax_compile(cx, ax_zip_with(f_sub, NULL, ax_param(cx, 0, f32, 1),
                                                     ax_map(ax_fn_id, NULL, ax_param(cx, 0, i32, 1))));
        CHECK(bad == NULL);
        CHECKF(strstr(ax_error(cx), "parameter 0") || strstr(ax_error(cx), "type"), "%s", ax_error(cx));
    }
    ax_program_free(p[0]);
    ax_program_free(p[1]);
    ax_array_release(x);
    ax_array_release(y);
    ax_ctx_free(cx);
}
