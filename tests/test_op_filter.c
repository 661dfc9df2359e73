/*
 * filter: none, some and every element kept, ranks 0 to 3 (the result a
 * vector in row-major order), tuple elements.
 *
 * Backends (tests/ops/ops.h): the OP_TEST on every backend, against values
 * computed in plain C here; the DIFF_TESTs on the compiling backends,
 * against the interpreter: the large and GPU-sized shapes, a filter over
 * the indices of an array that reads it at each index (the CPU backend's
 * unchecked path where the read is proved in bounds), and a million
 * elements.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"

static ax_exp mult3(ax_exp x, void *env) { return ax_eq(ax_rem(x, ax_i64(3)), ax_i64(0)); }
static ax_exp above(ax_exp x, void *env) { return ax_gt(x, ax_i64(*(const int64_t *)env)); }
static ax_exp pair_keep(ax_exp p, void *env) { return ax_gt(ax_get(p, 1), ax_f64(0.5)); }

OP_TEST(filter)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const Shape cases[] = {
        {1, {1001}}, {1, {0}}, {1, {1}}, {1, {7}}, {2, {4, 6}}, {2, {0, 5}}, {3, {2, 3, 4}}, {0, {0}},
    };
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const Shape *s = &cases[t];
        int64_t n = shape_size(s->rank, s->sh);
        int64_t *a = alloc_i64(n), *want = alloc_i64(n);
        for (int64_t k = 0; k < n; k++) a[k] = val_of(k);
        ax_acc x = use_data(cx, AX_I64, s->rank, s->sh, a);
        int64_t thresholds[4] = {10, 1000 /* none kept */, -1000 /* all kept */, 0};
        for (int p = 0; p < 5; p++) {
            int64_t m = 0;
            for (int64_t k = 0; k < n; k++)
                if (p == 4 ? a[k] % 3 == 0 : a[k] > thresholds[p]) want[m++] = a[k];
            ax_array *r = RUN(cx, p == 4 ? ax_filter(mult3, NULL, x) : ax_filter(above, &thresholds[p], x));
            if (r && SHAPE_IS(r, 1, m)) {
                Chk c;
                CHK(&c, "filter case %d, predicate %d", t, p);
                chk_arr_i(&c, r, 0, want, m);
                chk_done(&c);
            }
            ax_array_release(r);
        }
        free(a);
        free(want);
    }
    /* tuple elements */
    {
        int32_t a0[7] = {1, 2, 3, 4, 5, 6, 7};
        double a1[7] = {0.25, 0.75, 1.0, -2.0, 0.5, 0.5001, 9.0};
        const void *bufs[2] = {a0, a1};
        ax_array *r = RUN(cx, ax_filter(pair_keep, NULL, use_tuple(cx, TUP(cx, AX_I32, AX_F64), 1, SH(7), bufs)));
        int m = 0;
        for (int k = 0; k < 7; k++) m += a1[k] > 0.5;
        if (r && SHAPE_IS(r, 1, m)) {
            for (int k = 0, j = 0; k < 7; k++) {
                if (!(a1[k] > 0.5)) continue;
                CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[j], a0[k]);
                CHECK(((double *)ax_array_data(r, 1))[j] == a1[k]);
                j++;
            }
        }
        ax_array_release(r);
    }
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

static ax_exp k_pos(ax_exp x, void *env) { return ax_gt(ax_get(x, 0), ax_i32(0)); }

static ax_acc b_filter(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    return ax_filter(k_pos, NULL, input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_F64}, v->rank, v->sh, 110, 5));
}

DIFF_TEST(filter_all_shapes)
{
    for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        SAME("filter", b_filter, &e, 0);
    }
}

/* The filter over indices (tests/ops: ops_filter_indices), over a
 * generate of sh[0] indices of an array of sh[0] + which elements. */
static ax_acc b_filter_indices(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    return ops_filter_indices(cx, v->sh[0], v->which);
}

DIFF_TEST(filter_over_indices)
{
    const int64_t sizes[] = {0, 1, 1001, 300000};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        SAME("filter over the indices of an array", b_filter_indices, &e, 0);
        e.which = 7;
        SAME("filter over some indices of an array", b_filter_indices, &e, 0);
    }
}

DIFF_TEST(filter_large_arrays)
{
    if (ops_small()) {
        printf("skip filter_large_arrays: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    Env e = {1, &n, 4};
    SAME("filter 1e6", b_filter, &e, 0);
}

/* A filter of elements that a fused producer computes with a maths
 * function: the CPU backend's staged filter (cpu/filter.c), which
 * computes a block of elements once, then tests and compacts them.
 * which 0: filter (> 1.5) (map exp xs); 1: tuple elements (exp x, x),
 * kept by their first component; 2: a map of that filter (the filter's
 * epilogue). */
static ax_exp exp_of(ax_exp x, void *env) { (void)env; return ax_exp_(x); }
static ax_exp exp_pair(ax_exp x, void *env) { (void)env; return ax_tuple2(ax_exp_(x), ax_cvt(x, AX_I32)); }
static ax_exp big(ax_exp x, void *env) { (void)env; return ax_gt(x, ax_f64(1.5)); }
static ax_exp big_fst(ax_exp x, void *env) { (void)env; return ax_gt(ax_get(x, 0), ax_f64(1.5)); }
static ax_exp halve(ax_exp x, void *env) { (void)env; return ax_mul(x, ax_f64(0.5)); }

static ax_acc b_filter_computed(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_acc xs = input(cx, AX_F64, v->rank, v->sh, 120 + (uint64_t)v->which, 3);
    switch (v->which) {
    case 0: return ax_filter(big, NULL, ax_map(exp_of, NULL, xs));
    case 1: return ax_filter(big_fst, NULL, ax_map(exp_pair, NULL, xs));
    default: return ax_map(halve, NULL, ax_filter(big, NULL, ax_map(exp_of, NULL, xs)));
    }
}

DIFF_TEST(filter_of_computed_elements)
{
    for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
        for (int w = 0; w < 3; w++) {
            Env e = {shapes[s].rank, shapes[s].sh, w};
            /* (exp of the vector maths library: within a few ulp) */
            SAME("filter of computed elements", b_filter_computed, &e, 1e-13);
        }
    }
}

/* A fault in the computing producer (a read past the end, from half
 * way) is an index error, and the context stays usable (EXPECT_FAIL). */
static ax_exp exp_at_twice(ax_exp ix, void *env)
{
    ax_acc a = env;
    return ax_exp_(ax_at(a, ax_ix1(ax_mul(ax_index_get(ix, 0), ax_i64(2)))));
}

OP_TEST(filter_of_computed_elements_faults)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    const int64_t n[1] = {5000};
    ax_acc a = input(cx, AX_F64, 1, n, 7, 3);
    ax_acc f = ax_filter(big, NULL, ax_generate(cx, ax_ix1(ax_i64(n[0])), exp_at_twice, a));
    EXPECT_FAIL(cx, f, AX_ERR_INDEX);
    op_ctx_done(cx);
}
