/*
 * Long rows of let bindings: sharing recovery binds every array a scalar
 * function reads (and every scalar term shared across a function's body)
 * at one place, so a program can have tens of thousands of lets in a row
 * while its nesting stays shallow.  The interpreter walks such a row in a
 * loop, so it runs them; an absurdly long row either runs or fails with an
 * error, never crashes.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"   /* AX_DEPTH_LIMIT */
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ ALET rows */

/* One function reading k different arrays: each read array is let-bound,
 * so k ALETs in a row; the reads are summed by a balanced tree (shallow). */
static ax_acc *g_arrs;
static ax_exp sum_reads(int lo, int hi)
{
    if (hi - lo == 1) return ax_at(g_arrs[lo], ax_ix1(ax_i64(0)));
    int mid = (lo + hi) / 2;
    return ax_add(sum_reads(lo, mid), sum_reads(mid, hi));
}
static ax_exp add_reads(ax_exp x, void *env) { return ax_add(x, sum_reads(0, *(int *)env)); }

/* Runs the k-array program; returns 1 if it ran (checking the value), 0 if
 * it failed cleanly with an error. */
static int alet_row(int k, bool sharing, bool maps, bool must_run)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.debug = sharing ? 0 : AX_DEBUG_NO_SHARING;
    ax_ctx *cx = ax_ctx_new(&o);
    int32_t v[1] = {1};
    ax_array *h = ax_array_from(cx, AX_I32, 1, (int64_t[]){1}, v);
    g_arrs = malloc(sizeof *g_arrs * (size_t)k);
    if (!cx || !h || !g_arrs) {
        CHECK(!"setup");
        return 0;
    }
    /* each read array is a map of its own, or (cheaper) a use of its own */
    for (int i = 0; i < k; i++) g_arrs[i] = maps ? ax_map(ax_fn_neg, NULL, ax_use(cx, h)) : ax_use(cx, h);
    int ran = 0;
    ax_program *p = ax_compile(cx, ax_map(add_reads, &k, ax_use(cx, h)));
    ax_array *r = NULL;
    if (p) {
        CHECKF(ax_program_stats(p)->lets >= k, "%lld lets", (long long)ax_program_stats(p)->lets);
        int n = ax_program_run(p, &r, 1);
        if (n == 1) {
            ran = 1;
            CHECK_EQ_I(*(const int32_t *)ax_array_data(r, 0), maps ? 1 - k : 1 + k);
        }
    }
    if (!ran) {
        /* a clean error: recorded on the context, with a message */
        CHECK(ax_status_of(cx) != AX_OK);
        CHECK(ax_error(cx) && *ax_error(cx));
        if (must_run) CHECKF(false, "k = %d, sharing %d: %s", k, sharing, ax_error(cx));
    }
    ax_array_release(r);
    ax_program_free(p);
    ax_array_release(h);
    free(g_arrs);
    g_arrs = NULL;
    ax_ctx_free(cx);
    return ran;
}

TEST(twenty_thousand_alets_in_a_row_run)
{
    alet_row(20000, true, true, true);
    alet_row(20000, false, true, true);
}

TEST(very_long_alet_rows_run_or_fail_cleanly)
{
    /* without sharing (the graph is unfolded first; with sharing the
     * same row is made, only faster) */
    int b = alet_row(100000, false, false, false);
    fprintf(stderr, "100000 ALETs (no sharing): %s\n", b ? "ran" : "failed cleanly");
}

/* ------------------------------------------------------------ LET rows */

/* k scalar terms t_i = x + i, each used by two separate sums: all are
 * let-bound at the function's root, k LETs in a row. */
static ax_exp *g_terms;
static ax_exp sum_terms(int lo, int hi)
{
    if (hi - lo == 1) return g_terms[lo];
    int mid = (lo + hi) / 2;
    return ax_add(sum_terms(lo, mid), sum_terms(mid, hi));
}
static ax_exp twice_sum(ax_exp x, void *env)
{
    int k = *(int *)env;
    ax_exp y = ax_cvt(x, AX_I64);
    for (int i = 0; i < k; i++) g_terms[i] = ax_add(y, ax_i64(i));
    return ax_add(sum_terms(0, k), sum_terms(0, k));
}

static int let_row(int k, bool must_run)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    ax_ctx *cx = ax_ctx_new(&o);
    int32_t v[2] = {1, 5};
    ax_array *h = ax_array_from(cx, AX_I32, 1, (int64_t[]){2}, v);
    g_terms = malloc(sizeof *g_terms * (size_t)k);
    if (!cx || !h || !g_terms) {
        CHECK(!"setup");
        return 0;
    }
    int ran = 0;
    ax_program *p = ax_compile(cx, ax_map(twice_sum, &k, ax_use(cx, h)));
    ax_array *r = NULL;
    if (p) {
        CHECKF(ax_program_stats(p)->lets >= k, "%lld lets", (long long)ax_program_stats(p)->lets);
        int n = ax_program_run(p, &r, 1);
        if (n == 1) {
            ran = 1;
            const int64_t *d = ax_array_data(r, 0);
            for (int j = 0; j < 2; j++) {
                int64_t x = v[j], e = 2 * ((int64_t)k * x + (int64_t)k * (k - 1) / 2);
                CHECK_EQ_I(d[j], e);
            }
        }
    }
    if (!ran) {
        CHECK(ax_status_of(cx) != AX_OK);
        CHECK(ax_error(cx) && *ax_error(cx));
        if (must_run) CHECKF(false, "k = %d: %s", k, ax_error(cx));
    }
    ax_array_release(r);
    ax_program_free(p);
    ax_array_release(h);
    free(g_terms);
    g_terms = NULL;
    ax_ctx_free(cx);
    return ran;
}

TEST(twenty_thousand_lets_in_a_row_run)
{
    let_row(20000, true);
}

TEST(very_long_let_rows_run_or_fail_cleanly)
{
    int a = let_row(100000, false);
    fprintf(stderr, "100000 LETs: %s\n", a ? "ran" : "failed cleanly");
}

/* ------------------------------------------------------------ deep nesting */

/* Nesting, not rows: every pass recurses along a program's nesting, on a
 * stack the driver sizes for the program, and the optimiser is linear in
 * it (a chain of n maps composes in one copy; the lets of a chain of
 * zipWiths each reading the one before hash apart in the array CSE). */

static ax_exp inc_i32(ax_exp x, void *env)
{
    (void)env;
    return ax_add(x, ax_i32(1));
}

/* (a + b) - 1 of an array with itself: a diamond, shared */
static ax_exp avg_i32(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_sub(ax_add(a, b), ax_i32(1));
}

enum { DEEP = 100000 };

static void deep_chain(ax_backend_kind k, bool diamond)
{
    ax_options o = {0};
    o.backend = k;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    int32_t v[5] = {0, 1, 2, 3, 40};
    ax_acc a = ax_use(cx, ax_array_from(cx, AX_I32, 1, (int64_t[]){5}, v));
    for (int i = 0; i < DEEP; i++) a = diamond ? ax_zip_with(avg_i32, NULL, a, a) : ax_map(inc_i32, NULL, a);
    ax_array *r = ax_run(cx, a);
    CHECKF(r, "%s %s: %s", k == AX_BACKEND_INTERP ? "interp" : "default", diamond ? "diamond" : "maps",
           ax_error(cx));
    if (r) {
        const int32_t *d = ax_array_data(r, 0);
        /* maps: v + DEEP; diamond: x + x - 1 = 2x - 1 keeps 1 at 1 and
           sends 0 to -1 (wrapping past the int range does not arise: the
           others double until they wrap, checked against 64-bit maths) */
        for (int i = 0; i < 5; i++) {
            int64_t want = v[i];
            if (diamond)
                for (int s = 0; s < DEEP; s++) want = (int32_t)(uint32_t)(2 * (uint64_t)want - 1);
            else
                want += DEEP;
            CHECKF(d[i] == want, "element %d: %d, want %lld", i, d[i], (long long)want);
        }
    }
    ax_array_release(r);
    ax_ctx_free(cx);
}

TEST(a_hundred_thousand_chained_maps_run)
{
    deep_chain(AX_BACKEND_INTERP, false);
    deep_chain(AX_BACKEND_DEFAULT, false);
}

TEST(a_hundred_thousand_shared_diamonds_run)
{
    deep_chain(AX_BACKEND_INTERP, true);
    deep_chain(AX_BACKEND_DEFAULT, true);
}

/* One scalar function nested DEEP levels: x -> (x + x) * 0.5 shares x, so
 * sharing recovery binds it, DEEP lets nested in each other's bodies. */
static ax_exp nested_lets(ax_exp x, void *env)
{
    (void)env;
    for (int i = 0; i < DEEP; i++) x = ax_mul(ax_add(x, x), ax_f32(0.5f));
    return x;
}

TEST(a_hundred_thousand_nested_scalar_lets_run)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    float v[3] = {1.5f, -2.0f, 0.0f};
    ax_array *r = ax_run(cx, ax_map(nested_lets, NULL, ax_use(cx, ax_array_from(cx, AX_F32, 1, (int64_t[]){3}, v))));
    CHECKF(r, "%s", ax_error(cx));
    if (r) {
        const float *d = ax_array_data(r, 0);
        for (int i = 0; i < 3; i++) CHECKF(d[i] == v[i], "element %d: %g, want %g", i, d[i], v[i]);
    }
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* Past AX_DEPTH_LIMIT levels: a clear error, not a crash, and the context
 * stays usable. */
static ax_exp past_the_limit(ax_exp x, void *env)
{
    (void)env;
    for (int i = 0; i < AX_DEPTH_LIMIT + 20; i++) x = ax_add(x, ax_i32(1));
    return x;
}

TEST(a_program_past_the_depth_limit_fails_cleanly)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    int32_t v[2] = {1, 2};
    ax_acc xs = ax_use(cx, ax_array_from(cx, AX_I32, 1, (int64_t[]){2}, v));
    CHECK(ax_run(cx, ax_map(past_the_limit, NULL, xs)) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_BUILD);
    CHECKF(strstr(ax_error(cx), "levels deep"), "%s", ax_error(cx));
    ax_clear_error(cx);
    ax_ctx_reset(cx);
    ax_array *r = ax_run(cx, ax_unit(cx, ax_i32(7)));
    CHECK(r && *(const int32_t *)ax_array_data(r, 0) == 7);
    ax_array_release(r);
    ax_ctx_free(cx);
}
