/*
 * The elementwise and shape operations: use (every element type's round
 * trip), unit, generate, map, zip_with and zip_with3 (operands of
 * different shapes: their intersection), backpermute, transpose,
 * replicate, slice, reshape and flatten.
 *
 * Backends (tests/ops/ops.h): the OP_TESTs on every backend, against
 * values computed in plain C here (empty arrays, rank 0, odd sizes, ranks
 * 1 to 3, tuple elements, index and shape errors); the DIFF_TESTs on the
 * compiling backends, against the interpreter on the large and GPU-sized
 * shapes, chains of 40 zip_with steps (run as one loop by the CPU
 * backend) and a million elements.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"

static const Shape shapes_all[] = {
    {0, {0}}, {1, {0}}, {1, {1}}, {1, {7}}, {1, {1001}},
    {2, {0, 5}}, {2, {5, 0}}, {2, {1, 1}}, {2, {3, 7}}, {2, {7, 1}},
    {3, {2, 3, 4}}, {3, {0, 3, 4}}, {3, {2, 1, 5}}, {3, {3, 4, 0}}, {3, {1, 1, 1}},
};

static ax_exp shape_exp(const Shape *s)
{
    ax_exp c[3];
    for (int d = 0; d < s->rank; d++) c[d] = ax_i64(s->sh[d]);
    return ax_index(s->rank, c);
}

/* ======================================================= element types */

OP_TEST(elem_types_roundtrip)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int si = 0; si < AX_NSCALAR; si++) {
        ax_scalar s = (ax_scalar)si;
        uint64_t buf[9];
        fill_tricky(s, buf);
        size_t sz = ax_scalar_size(s);
        ax_acc a = use_data(cx, s, 1, SH(9), buf);
        ax_acc m = use_data(cx, s, 2, SH(3, 3), buf);
        ax_acc progs[5] = {
            a,
            ax_map(ax_fn_id, NULL, a),
            ax_generate(cx, ax_shape(a), read_at, &a),
            ax_flatten(ax_map(ax_fn_id, NULL, m)),
            ax_backpermute(ax_ix1(ax_i64(9)), ax_fn_id, NULL, a),
        };
        for (int p = 0; p < 5; p++) {
            ax_array *r = RUN(cx, progs[p]);
            if (r && SHAPE_IS(r, 1, 9)) {
                CHECKF(ax_array_component_type(r, 0) == s, "type %s, program %d", ax_scalar_name(s), p);
                CHECKF(memcmp(ax_array_data(r, 0), buf, 9 * sz) == 0, "round trip of %s, program %d",
                       ax_scalar_name(s), p);
            }
            ax_array_release(r);
        }
        /* rank 0 */
        ax_acc z = use_data(cx, s, 0, NULL, (const char *)buf + 5 * sz);
        ax_array *r = RUN(cx, ax_map(ax_fn_id, NULL, z));
        if (r && SHAPE_IS(r, 0, 0))
            CHECKF(memcmp(ax_array_data(r, 0), (const char *)buf + 5 * sz, sz) == 0, "rank 0 %s",
                   ax_scalar_name(s));
        ax_array_release(r);
    }
    /* a tuple element type: three buffers */
    {
        int8_t b0[6] = {-128, -1, 0, 1, 127, 5};
        double b1[6] = {-0.0, 1e300, -1e-310, 0.5, NAN, -INFINITY};
        uint16_t b2[6] = {0, 1, 65535, 32768, 7, 300};
        const void *bufs[3] = {b0, b1, b2};
        const ax_type *t = TUP(cx, AX_I8, AX_F64, AX_U16);
        ax_acc a = use_tuple(cx, t, 2, SH(2, 3), bufs);
        ax_acc progs[2] = {a, ax_map(ax_fn_id, NULL, a)};
        for (int p = 0; p < 2; p++) {
            ax_array *r = RUN(cx, progs[p]);
            if (r && SHAPE_IS(r, 2, 2, 3)) {
                CHECK_EQ_I(ax_array_components(r), 3);
                CHECK(ax_type_equal(ax_array_type(r), t));
                CHECK(memcmp(ax_array_data(r, 0), b0, sizeof b0) == 0);
                CHECK(memcmp(ax_array_data(r, 1), b1, sizeof b1) == 0);
                CHECK(memcmp(ax_array_data(r, 2), b2, sizeof b2) == 0);
            }
            ax_array_release(r);
        }
    }
    op_ctx_done(cx);
}

/* ======================================================= unit, generate */

OP_TEST(unit)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    ax_array *r = RUN(cx, ax_unit(cx, ax_f32(2.5f)));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(ax_array_size(r), 1);
        CHECK(ax_array_component_type(r, 0) == AX_F32);
        CHECK(((float *)ax_array_data(r, 0))[0] == 2.5f);
    }
    ax_array_release(r);

    r = RUN(cx, ax_unit(cx, ax_tuple2(ax_i32(-3), ax_f64(0.25))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(ax_array_components(r), 2);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[0], -3);
        CHECK(((double *)ax_array_data(r, 1))[0] == 0.25);
    }
    ax_array_release(r);

    int32_t xs[7] = {10, 11, 12, 13, 14, 15, 16};
    ax_acc a = use_data(cx, AX_I32, 1, SH(7), xs);
    r = RUN(cx, ax_unit(cx, ax_at(a, ax_ix1(ax_i64(4)))));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[0], 14);
    ax_array_release(r);

    r = RUN(cx, ax_unit(cx, ax_size(a)));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK(ax_array_component_type(r, 0) == AX_I64);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], 7);
    }
    ax_array_release(r);

    /* an index as the element */
    r = RUN(cx, ax_unit(cx, ax_ix2(ax_i64(3), ax_i64(-4))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(ax_array_components(r), 2);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], 3);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 1))[0], -4);
    }
    ax_array_release(r);

    r = RUN(cx, ax_unit(cx, ax_lt(ax_const(cx, ax_i32(1)), ax_i32(2))));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[0], 1);
    ax_array_release(r);

    /* unit of a unit's element */
    ax_acc u = ax_unit(cx, ax_f64(-1.25));
    r = RUN(cx, ax_unit(cx, ax_mul(ax_at(u, ax_index(0, NULL)), ax_f64(2))));
    if (r && SHAPE_IS(r, 0, 0)) CHECK(((double *)ax_array_data(r, 0))[0] == -2.5);
    ax_array_release(r);
    op_ctx_done(cx);
}

/* v = 7; for each dimension v = v*1000 + ix[d] */
static ax_exp gen_val(ax_exp ix, void *env)
{
    int rank = *(const int *)env;
    ax_exp v = ax_i64(7);
    for (int d = 0; d < rank; d++) v = ax_add(ax_mul(v, ax_i64(1000)), ax_index_get(ix, d));
    return v;
}
static int64_t gen_ref(int rank, const int64_t *ix)
{
    int64_t v = 7;
    for (int d = 0; d < rank; d++) v = v * 1000 + ix[d];
    return v;
}

static ax_exp gen_tuple(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    return ax_tuple3(ax_cvt(i, AX_I32), ax_mul(ax_cvt(i, AX_F64), ax_f64(0.5)),
                     ax_eq(ax_rem(i, ax_i64(2)), ax_i64(0)));
}

OP_TEST(generate)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(shapes_all); t++) {
        op_case();
        const Shape *s = &shapes_all[t];
        int rank = s->rank;
        ax_array *r = RUN(cx, ax_generate(cx, shape_exp(s), gen_val, &rank));
        if (r && SHAPE_ISV(r, s->rank, s->sh)) {
            int64_t n = shape_size(s->rank, s->sh);
            int64_t *want = alloc_i64(n), ix[3];
            for (int64_t k = 0; k < n; k++) {
                unravel(k, s->rank, s->sh, ix);
                want[k] = gen_ref(s->rank, ix);
            }
            Chk c;
            CHK(&c, "generate, shape case %d", t);
            chk_arr_i(&c, r, 0, want, n);
            chk_done(&c);
            free(want);
        }
        ax_array_release(r);
    }
    /* tuples */
    ax_array *r = RUN(cx, ax_generate(cx, ax_ix1(ax_i64(7)), gen_tuple, NULL));
    if (r && SHAPE_IS(r, 1, 7)) {
        CHECK_EQ_I(ax_array_components(r), 3);
        for (int k = 0; k < 7; k++) {
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], k);
            CHECK(((double *)ax_array_data(r, 1))[k] == k * 0.5);
            CHECK_EQ_I(((uint8_t *)ax_array_data(r, 2))[k], k % 2 == 0);
        }
    }
    ax_array_release(r);
    /* a shape computed at run time (from another array) */
    int64_t dims[2] = {4, 3};
    ax_acc d = use_data(cx, AX_I64, 1, SH(2), dims);
    int rank2 = 2;
    r = RUN(cx, ax_generate(cx, ax_ix2(ax_at(d, ax_ix1(ax_i64(0))), ax_at(d, ax_ix1(ax_i64(1)))), gen_val, &rank2));
    if (r && SHAPE_IS(r, 2, 4, 3)) {
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 3; j++)
                CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[i * 3 + j], gen_ref(2, (int64_t[]){i, j}));
    }
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ================================================================== map */

static ax_exp times2_plus1(ax_exp x, void *env) { return ax_add(ax_mul(x, ax_f32(2)), ax_f32(1)); }
static ax_exp gt3(ax_exp x, void *env) { return ax_gt(x, ax_i32(3)); }
static ax_exp swap_mod(ax_exp p, void *env)
{
    return ax_tuple2(ax_mul(ax_get(p, 1), ax_f64(2)), ax_sub(ax_get(p, 0), ax_i32(1)));
}
static ax_exp scale_env(ax_exp x, void *env) { return ax_mul(x, ax_i64(*(const int64_t *)env)); }

OP_TEST(map)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(shapes_all); t++) {
        op_case();
        const Shape *s = &shapes_all[t];
        int64_t n = shape_size(s->rank, s->sh);
        float *in = calloc((size_t)n + 1, sizeof *in);
        double *want = alloc_f64(n);
        for (int64_t k = 0; k < n; k++) {
            in[k] = (float)(k % 13) - 6.0f;
            want[k] = in[k] * 2.0f + 1.0f;
        }
        ax_array *r = RUN(cx, ax_map(times2_plus1, NULL, use_data(cx, AX_F32, s->rank, s->sh, in)));
        if (r && SHAPE_ISV(r, s->rank, s->sh)) {
            Chk c;
            CHK(&c, "map, shape case %d", t);
            chk_arr_f(&c, r, 0, want, n, 0);
            chk_done(&c);
        }
        ax_array_release(r);
        free(in);
        free(want);
    }
    /* changing the element type */
    int32_t xs[7] = {1, 5, 3, 4, -9, 3, 100};
    ax_array *r = RUN(cx, ax_map(gt3, NULL, use_data(cx, AX_I32, 1, SH(7), xs)));
    if (r && SHAPE_IS(r, 1, 7)) {
        CHECK(ax_array_component_type(r, 0) == AX_BOOL);
        for (int k = 0; k < 7; k++) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[k], xs[k] > 3);
    }
    ax_array_release(r);
    /* tuples in and out */
    int32_t t0[7] = {1, 2, 3, 4, 5, 6, -7};
    double t1[7] = {0.5, 1.5, -2, 8, 1e10, -0.25, 3};
    const void *bufs[2] = {t0, t1};
    r = RUN(cx, ax_map(swap_mod, NULL, use_tuple(cx, TUP(cx, AX_I32, AX_F64), 1, SH(7), bufs)));
    if (r && SHAPE_IS(r, 1, 7)) {
        CHECK(ax_array_component_type(r, 0) == AX_F64);
        CHECK(ax_array_component_type(r, 1) == AX_I32);
        for (int k = 0; k < 7; k++) {
            CHECK(((double *)ax_array_data(r, 0))[k] == t1[k] * 2);
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 1))[k], t0[k] - 1);
        }
    }
    ax_array_release(r);
    /* env is passed through */
    int64_t factor = -3, ys[4] = {1, 2, 3, 4};
    r = RUN(cx, ax_map(scale_env, &factor, use_data(cx, AX_I64, 2, SH(2, 2), ys)));
    if (r && SHAPE_IS(r, 2, 2, 2))
        for (int k = 0; k < 4; k++) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], -3 * ys[k]);
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ============================================================ zip_with */

static ax_exp sub2(ax_exp x, ax_exp y, void *env) { return ax_sub(x, ax_mul(ax_i64(2), y)); }
static ax_exp zip3_f(ax_exp x, ax_exp y, ax_exp z, void *env)
{
    ax_exp xf = ax_cvt(x, AX_F64);
    return ax_cond(z, ax_add(xf, y), ax_sub(y, xf));
}
static ax_exp zip_tup(ax_exp p, ax_exp y, void *env)
{
    return ax_tuple2(ax_add(ax_get(p, 0), ax_get(p, 1)), ax_mul(y, ax_cvt(ax_get(p, 1), AX_F32)));
}

typedef struct ZipCase { int rank; int64_t a[3], b[3], r[3]; } ZipCase;

OP_TEST(zip_with)
{
    static const ZipCase cases[] = {
        {0, {0}, {0}, {0}},
        {1, {7}, {5}, {5}},
        {1, {5}, {7}, {5}},
        {1, {7}, {0}, {0}},
        {1, {1001}, {1001}, {1001}},
        {1, {1}, {1001}, {1}},
        {2, {3, 5}, {4, 2}, {3, 2}},
        {2, {0, 5}, {3, 5}, {0, 5}},
        {2, {3, 5}, {3, 0}, {3, 0}},
        {3, {2, 3, 4}, {3, 2, 5}, {2, 2, 4}},
        {3, {1, 7, 7}, {7, 1, 7}, {1, 1, 7}},
    };
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const ZipCase *z = &cases[t];
        int64_t na = shape_size(z->rank, z->a), nb = shape_size(z->rank, z->b), nr = shape_size(z->rank, z->r);
        int64_t *a = alloc_i64(na), *b = alloc_i64(nb), *want = alloc_i64(nr), ix[3];
        for (int64_t k = 0; k < na; k++) a[k] = k * 3 + 1;
        for (int64_t k = 0; k < nb; k++) b[k] = k * 5 - 2;
        for (int64_t k = 0; k < nr; k++) {
            unravel(k, z->rank, z->r, ix);
            want[k] = a[ravel(z->rank, z->a, ix)] - 2 * b[ravel(z->rank, z->b, ix)];
        }
        ax_array *r = RUN(cx, ax_zip_with(sub2, NULL, use_data(cx, AX_I64, z->rank, z->a, a),
                                          use_data(cx, AX_I64, z->rank, z->b, b)));
        if (r && SHAPE_ISV(r, z->rank, z->r)) {
            Chk c;
            CHK(&c, "zip_with case %d", t);
            chk_arr_i(&c, r, 0, want, nr);
            chk_done(&c);
        }
        ax_array_release(r);
        free(a);
        free(b);
        free(want);
    }
    /* zip_with3 of three shapes and three element types */
    {
        int32_t x[24];
        double y[15];
        uint8_t zb[14];
        for (int k = 0; k < 24; k++) x[k] = k * 7 - 50;
        for (int k = 0; k < 15; k++) y[k] = k * 0.25 - 1;
        for (int k = 0; k < 14; k++) zb[k] = (k % 3) == 0;
        ax_array *r = RUN(cx, ax_zip_with3(zip3_f, NULL, use_data(cx, AX_I32, 2, SH(4, 6), x),
                                           use_data(cx, AX_F64, 2, SH(5, 3), y),
                                           use_data(cx, AX_BOOL, 2, SH(2, 7), zb)));
        if (r && SHAPE_IS(r, 2, 2, 3)) {
            Chk c;
            CHK(&c, "zip_with3");
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++) {
                    double xv = x[i * 6 + j], yv = y[i * 3 + j];
                    double w = zb[i * 7 + j] ? xv + yv : yv - xv;
                    chk_f(&c, i * 3 + j, ((double *)ax_array_data(r, 0))[i * 3 + j], w, 0);
                }
            chk_done(&c);
        }
        ax_array_release(r);
        /* empty third operand */
        r = RUN(cx, ax_zip_with3(zip3_f, NULL, use_data(cx, AX_I32, 2, SH(4, 6), x),
                                 use_data(cx, AX_F64, 2, SH(5, 3), y), use_data(cx, AX_BOOL, 2, SH(2, 0), zb)));
        if (r) SHAPE_IS(r, 2, 2, 0);
        ax_array_release(r);
    }
    /* tuple elements */
    {
        int16_t p0[5] = {1, -2, 300, 4, 5};
        int16_t p1[5] = {10, 20, 30, 40, -32768};
        float y[3] = {0.5f, 2.0f, -1.0f};
        const void *bufs[2] = {p0, p1};
        ax_array *r = RUN(cx, ax_zip_with(zip_tup, NULL, use_tuple(cx, TUP(cx, AX_I16, AX_I16), 1, SH(5), bufs),
                                          use_data(cx, AX_F32, 1, SH(3), y)));
        if (r && SHAPE_IS(r, 1, 3)) {
            for (int k = 0; k < 3; k++) {
                CHECK_EQ_I(((int16_t *)ax_array_data(r, 0))[k], (int16_t)(p0[k] + p1[k]));
                CHECK(((float *)ax_array_data(r, 1))[k] == y[k] * (float)p1[k]);
            }
        }
        ax_array_release(r);
    }
    op_ctx_done(cx);
}

/* ========================================================= backpermute */

static ax_exp rev_ix(ax_exp ix, void *env)
{
    ax_exp n = ax_index_get(ax_shape(acc_of(env)), 0);
    return ax_ix1(ax_sub(ax_sub(n, ax_i64(1)), ax_index_get(ix, 0)));
}
static ax_exp transpose_ix(ax_exp ix, void *env) { return ax_ix2(ax_index_get(ix, 1), ax_index_get(ix, 0)); }
/* result[k][i][j] = a[i][j][k] */
static ax_exp rot3_ix(ax_exp ix, void *env)
{
    return ax_ix3(ax_index_get(ix, 1), ax_index_get(ix, 2), ax_index_get(ix, 0));
}
static ax_exp diag_ix(ax_exp ix, void *env) { return ax_ix2(ax_index_get(ix, 0), ax_index_get(ix, 0)); }
static ax_exp const3_ix(ax_exp ix, void *env) { return ax_ix1(ax_i64(3)); }

OP_TEST(backpermute)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const int64_t ns[] = {0, 1, 7, 1001};
    for (int t = 0; t < NELEM(ns); t++) {
        op_case();
        int64_t n = ns[t];
        int64_t *a = alloc_i64(n), *want = alloc_i64(n);
        for (int64_t k = 0; k < n; k++) a[k] = val_of(k);
        for (int64_t k = 0; k < n; k++) want[k] = a[n - 1 - k];
        ax_acc xs = use_data(cx, AX_I64, 1, SH(n), a);
        ax_array *r = RUN(cx, ax_backpermute(ax_shape(xs), rev_ix, &xs, xs));
        if (r && SHAPE_IS(r, 1, n)) {
            Chk c;
            CHK(&c, "reverse %lld", (long long)n);
            chk_arr_i(&c, r, 0, want, n);
            chk_done(&c);
        }
        ax_array_release(r);
        free(a);
        free(want);
    }
    /* transpose, including an empty matrix */
    static const int64_t mats[][2] = {{3, 5}, {0, 4}, {1, 7}, {4, 0}};
    for (int t = 0; t < NELEM(mats); t++) {
        op_case();
        int64_t m = mats[t][0], n = mats[t][1];
        int64_t *a = alloc_i64(m * n), *want = alloc_i64(m * n);
        for (int64_t k = 0; k < m * n; k++) a[k] = val_of(k);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) want[i * m + j] = a[j * n + i];
        ax_acc xs = use_data(cx, AX_I64, 2, SH(m, n), a);
        ax_exp sh = ax_shape(xs);
        ax_array *r = RUN(cx, ax_backpermute(ax_ix2(ax_index_get(sh, 1), ax_index_get(sh, 0)), transpose_ix,
                                             NULL, xs));
        if (r && SHAPE_IS(r, 2, n, m)) {
            Chk c;
            CHK(&c, "transpose %lldx%lld", (long long)m, (long long)n);
            chk_arr_i(&c, r, 0, want, m * n);
            chk_done(&c);
        }
        ax_array_release(r);
        free(a);
        free(want);
    }
    /* rank 3 axis rotation: {2,3,4} -> {4,2,3} */
    {
        double a[24], want[24];
        for (int k = 0; k < 24; k++) a[k] = k * 1.5;
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++) want[(k * 2 + i) * 3 + j] = a[(i * 3 + j) * 4 + k];
        ax_array *r = RUN(cx, ax_backpermute(ax_ix3(ax_i64(4), ax_i64(2), ax_i64(3)), rot3_ix, NULL,
                                             use_data(cx, AX_F64, 3, SH(2, 3, 4), a)));
        if (r && SHAPE_IS(r, 3, 4, 2, 3)) {
            Chk c;
            CHK(&c, "rank 3 rotation");
            chk_arr_f(&c, r, 0, want, 24, 0);
            chk_done(&c);
        }
        ax_array_release(r);
    }
    /* rank changes: a diagonal (2 -> 1) and one element (1 -> 0) */
    {
        int32_t a[20];
        for (int k = 0; k < 20; k++) a[k] = k * k;
        ax_array *r = RUN(cx, ax_backpermute(ax_ix1(ax_i64(4)), diag_ix, NULL, use_data(cx, AX_I32, 2, SH(4, 5), a)));
        if (r && SHAPE_IS(r, 1, 4))
            for (int i = 0; i < 4; i++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i], a[i * 5 + i]);
        ax_array_release(r);
        r = RUN(cx, ax_backpermute(ax_index(0, NULL), const3_ix, NULL, use_data(cx, AX_I32, 1, SH(20), a)));
        if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[0], 9);
        ax_array_release(r);
    }
    /* tuple elements, reversed */
    {
        int64_t p0[7];
        uint8_t p1[7];
        for (int k = 0; k < 7; k++) { p0[k] = k * 11; p1[k] = (uint8_t)(k * 40); }
        const void *bufs[2] = {p0, p1};
        ax_acc xs = use_tuple(cx, TUP(cx, AX_I64, AX_U8), 1, SH(7), bufs);
        ax_array *r = RUN(cx, ax_backpermute(ax_shape(xs), rev_ix, &xs, xs));
        if (r && SHAPE_IS(r, 1, 7))
            for (int k = 0; k < 7; k++) {
                CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], p0[6 - k]);
                CHECK_EQ_I(((uint8_t *)ax_array_data(r, 1))[k], p1[6 - k]);
            }
        ax_array_release(r);
    }
    /* reading outside the source is a run-time index error */
    {
        int64_t a[3] = {1, 2, 3};
        EXPECT_FAIL(cx, ax_backpermute(ax_ix1(ax_i64(4)), ax_fn_id, NULL, use_data(cx, AX_I64, 1, SH(3), a)),
                    AX_ERR_INDEX);
    }
    op_ctx_done(cx);
}

/* ==================================================== replicate, slice */

typedef struct SliceCase {
    int arank;
    int64_t ash[3];
    int nspec;
    int fixed[4];
    int64_t at[4];
} SliceCase;

/* The expected replicate / slice results of a (row-major, values a[k]). */
static int64_t ref_slice_op(bool replicate, const SliceCase *c, const int64_t *a, int64_t *rsh, int *rrank,
                            int64_t **out)
{
    int j = 0;
    if (replicate) {
        for (int d = 0; d < c->nspec; d++) rsh[d] = c->fixed[d] ? c->at[d] : c->ash[j++];
        *rrank = c->nspec;
    } else {
        for (int d = 0; d < c->nspec; d++)
            if (!c->fixed[d]) rsh[j++] = c->ash[d];
        *rrank = j;
    }
    int64_t n = shape_size(*rrank, rsh);
    int64_t *o = alloc_i64(n);
    for (int64_t k = 0; k < n; k++) {
        int64_t rix[4], aix[4];
        unravel(k, *rrank, rsh, rix);
        j = 0;
        if (replicate) {
            for (int d = 0; d < c->nspec; d++)
                if (!c->fixed[d]) aix[j++] = rix[d];
        } else {
            for (int d = 0; d < c->nspec; d++) aix[d] = c->fixed[d] ? c->at[d] : rix[j++];
        }
        o[k] = a[ravel(c->arank, c->ash, aix)];
    }
    *out = o;
    return n;
}

static void run_slice_cases(ax_ctx *cx, bool replicate, const SliceCase *cases, int ncases)
{
    for (int t = 0; t < ncases; t++) {
        op_case();
        const SliceCase *c = &cases[t];
        int64_t na = shape_size(c->arank, c->ash);
        int64_t *a = alloc_i64(na);
        for (int64_t k = 0; k < na; k++) a[k] = k * 10 + 3;
        int64_t rsh[4], *want;
        int rrank;
        int64_t n = ref_slice_op(replicate, c, a, rsh, &rrank, &want);
        int32_t at32[4];
        for (int d = 0; d < c->nspec; d++) at32[d] = (int32_t)c->at[d];
        ax_acc arr = use_data(cx, AX_I64, c->arank, c->ash, a);
        ax_acc ats = use_data(cx, AX_I32, 1, SH(c->nspec), at32);
        /* variant 0: i64 constants; 1: i32 constants; 2: i32 values read at
         * run time */
        for (int v = 0; v < 3; v++) {
            ax_slice spec[4];
            for (int d = 0; d < c->nspec; d++) {
                if (!c->fixed[d]) { spec[d] = ax_all(); continue; }
                ax_exp e = v == 0 ? ax_i64(c->at[d]) : v == 1 ? ax_i32(at32[d]) : ax_at(ats, ax_ix1(ax_i64(d)));
                spec[d] = ax_fixed(e);
            }
            ax_acc p = replicate ? ax_replicate(c->nspec, spec, arr) : ax_slice_(c->nspec, spec, arr);
            ax_array *r = RUN(cx, p);
            if (r && SHAPE_ISV(r, rrank, rsh)) {
                Chk ch;
                CHK(&ch, "%s case %d variant %d", replicate ? "replicate" : "slice", t, v);
                chk_arr_i(&ch, r, 0, want, n);
                chk_done(&ch);
            }
            ax_array_release(r);
        }
        free(a);
        free(want);
    }
}

/* ax_transpose against plain C: every shape of shapes_all, every order of
 * its dimensions (and NULL, which reverses them), alone and under a map
 * that consumes it; then the orders it must refuse. */
static ax_exp plus1(ax_exp x, void *env) { (void)env; return ax_add(x, ax_i64(1)); }

OP_TEST(transpose)
{
    static const int perms[][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(shapes_all); t++) {
        const Shape *sa = &shapes_all[t];
        int r = sa->rank;
        int64_t n = shape_size(r, sa->sh);
        int64_t *a = alloc_i64(n), *want = alloc_i64(n);
        for (int64_t k = 0; k < n; k++) a[k] = val_of(k);
        for (int q = -1; q < NELEM(perms); q++) {
            /* the orders of rank r: the entries whose first r are < r */
            int src[3];
            bool ok = true;
            for (int d = 0; d < r; d++) {
                src[d] = q < 0 ? r - 1 - d : perms[q][d];
                ok = ok && src[d] < r;
            }
            if (!ok) continue;
            op_case();
            int64_t rs[3], ix[3], aix[3];
            for (int d = 0; d < r; d++) rs[d] = sa->sh[src[d]];
            for (int64_t k = 0; k < n; k++) {
                unravel(k, r, rs, ix);
                for (int d = 0; d < r; d++) aix[src[d]] = ix[d];
                want[k] = a[ravel(r, sa->sh, aix)];
            }
            for (int m = 0; m < 2; m++) {
                ax_acc xs = ax_transpose(use_data(cx, AX_I64, r, sa->sh, a), q < 0 ? NULL : src);
                ax_array *res = RUN(cx, m ? ax_map(plus1, NULL, xs) : xs);
                if (res && SHAPE_ISV(res, r, rs)) {
                    Chk c;
                    CHK(&c, "transpose rank %d shape %d, order %d%s", r, t, q, m ? ", mapped" : "");
                    if (m) for (int64_t k = 0; k < n; k++) chk_i(&c, k, ((int64_t *)ax_array_data(res, 0))[k], want[k] + 1);
                    else chk_arr_i(&c, res, 0, want, n);
                    chk_done(&c);
                }
                ax_array_release(res);
            }
        }
        free(a);
        free(want);
    }
    op_ctx_done(cx);
}

/* The orders ax_transpose refuses, each named (a build error: the same on
 * every backend). */
TEST(transpose_refuses_orders_that_are_not_permutations)
{
    ax_ctx *cx = kind_ctx(AX_BACKEND_INTERP, false);
    REQUIRE(cx);
    int64_t v[6] = {1, 2, 3, 4, 5, 6};
    static const int bad[][2] = {{0, 0}, {1, 2}, {-1, 0}};
    static const char *says[] = {"names dimension 0 twice", "perm[1] is 2", "perm[0] is -1"};
    for (int k = 0; k < 3; k++) {
        ax_acc m = use_data(cx, AX_I64, 2, SH(2, 3), v);
        CHECK(ax_transpose(m, bad[k]) == NULL);
        CHECK(ax_status_of(cx) == AX_ERR_BUILD);
        CHECKF(strstr(ax_error(cx), "ax_transpose") && strstr(ax_error(cx), says[k]), "%s", ax_error(cx));
        ax_ctx_reset(cx);
    }
    ax_ctx_free(cx);
}

OP_TEST(replicate)
{
    static const SliceCase cases[] = {
        {1, {4}, 2, {1, 0}, {3, 0}},             /* rows repeated: {3,4} */
        {1, {4}, 2, {0, 1}, {0, 2}},             /* columns: {4,2} */
        {1, {4}, 3, {1, 0, 1}, {2, 0, 3}},       /* {2,4,3} */
        {2, {2, 3}, 3, {0, 1, 0}, {0, 4, 0}},    /* {2,4,3} */
        {2, {2, 3}, 3, {1, 0, 0}, {2, 0, 0}},    /* {2,2,3} */
        {2, {2, 3}, 3, {0, 0, 1}, {0, 0, 5}},    /* {2,3,5} */
        {2, {2, 3}, 2, {0, 0}, {0, 0}},          /* identity */
        {0, {0}, 1, {1}, {5}},                   /* scalar to vector */
        {0, {0}, 2, {1, 1}, {2, 3}},             /* scalar to matrix */
        {1, {4}, 2, {1, 0}, {0, 0}},             /* zero copies: {0,4} */
        {1, {0}, 2, {0, 1}, {0, 3}},             /* empty source: {0,3} */
        {1, {7}, 3, {1, 1, 0}, {1, 1, 0}},       /* {1,1,7} */
    };
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    run_slice_cases(cx, true, cases, (int)NELEM(cases));
    op_ctx_done(cx);
}

OP_TEST(slice)
{
    static const SliceCase cases[] = {
        {3, {2, 3, 4}, 3, {1, 0, 0}, {1, 0, 0}},   /* {3,4} */
        {3, {2, 3, 4}, 3, {0, 1, 0}, {0, 2, 0}},   /* {2,4} */
        {3, {2, 3, 4}, 3, {0, 0, 1}, {0, 0, 3}},   /* {2,3} */
        {3, {2, 3, 4}, 3, {1, 0, 1}, {1, 0, 0}},   /* {3} */
        {3, {2, 3, 4}, 3, {1, 1, 1}, {0, 2, 1}},   /* rank 0 */
        {3, {2, 3, 4}, 3, {0, 0, 0}, {0, 0, 0}},   /* identity */
        {2, {3, 5}, 2, {0, 1}, {0, 2}},            /* a column */
        {2, {3, 5}, 2, {1, 0}, {1, 0}},            /* a row */
        {2, {3, 0}, 2, {1, 0}, {2, 0}},            /* an empty row */
        {2, {0, 5}, 2, {0, 1}, {0, 4}},            /* an empty column */
        {1, {7}, 1, {1}, {6}},                     /* vector to scalar */
        {3, {1, 1, 1}, 3, {0, 1, 0}, {0, 0, 0}},   /* {1,1} */
    };
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    run_slice_cases(cx, false, cases, (int)NELEM(cases));
    /* tuple elements */
    {
        int32_t a0[6] = {1, 2, 3, 4, 5, 6};
        double a1[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
        const void *bufs[2] = {a0, a1};
        ax_acc a = use_tuple(cx, TUP(cx, AX_I32, AX_F64), 2, SH(2, 3), bufs);
        ax_array *r = RUN(cx, ax_slice_(2, (ax_slice[]){ax_all(), ax_fixed(ax_i64(1))}, a));
        if (r && SHAPE_IS(r, 1, 2)) {
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[0], 2);
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[1], 5);
            CHECK(((double *)ax_array_data(r, 1))[0] == 1.5);
            CHECK(((double *)ax_array_data(r, 1))[1] == 4.5);
        }
        ax_array_release(r);
        r = RUN(cx, ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(ax_i64(2)), ax_all()}, a));
        if (r && SHAPE_IS(r, 3, 2, 2, 3))
            for (int i = 0; i < 2; i++)
                for (int k = 0; k < 2; k++)
                    for (int j = 0; j < 3; j++) {
                        CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[(i * 2 + k) * 3 + j], a0[i * 3 + j]);
                        CHECK(((double *)ax_array_data(r, 1))[(i * 2 + k) * 3 + j] == a1[i * 3 + j]);
                    }
        ax_array_release(r);
    }
    /* an index outside the array is a run-time index error */
    {
        int64_t a[6] = {1, 2, 3, 4, 5, 6};
        EXPECT_FAIL(cx, ax_slice_(2, (ax_slice[]){ax_fixed(ax_i64(2)), ax_all()}, use_data(cx, AX_I64, 2, SH(2, 3), a)),
                    AX_ERR_INDEX);
        EXPECT_FAIL(cx, ax_slice_(2, (ax_slice[]){ax_all(), ax_fixed(ax_i64(-1))}, use_data(cx, AX_I64, 2, SH(2, 3), a)),
                    AX_ERR_INDEX);
    }
    op_ctx_done(cx);
}

/* ==================================================== reshape, flatten */

OP_TEST(reshape_flatten)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int64_t a[24];
    for (int k = 0; k < 24; k++) a[k] = val_of(k);
    ax_acc a3 = use_data(cx, AX_I64, 3, SH(2, 3, 4), a);
    ax_array *r = RUN(cx, ax_reshape(ax_ix2(ax_i64(4), ax_i64(6)), a3));
    if (r && SHAPE_IS(r, 2, 4, 6)) CHECK(memcmp(ax_array_data(r, 0), a, sizeof a) == 0);
    ax_array_release(r);
    r = RUN(cx, ax_flatten(a3));
    if (r && SHAPE_IS(r, 1, 24)) CHECK(memcmp(ax_array_data(r, 0), a, sizeof a) == 0);
    ax_array_release(r);
    /* reshape of a computed array, then read it back transposed */
    r = RUN(cx, ax_reshape(ax_ix3(ax_i64(4), ax_i64(3), ax_i64(2)), ax_map(ax_fn_neg, NULL, a3)));
    if (r && SHAPE_IS(r, 3, 4, 3, 2))
        for (int k = 0; k < 24; k++) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], -a[k]);
    ax_array_release(r);
    ax_acc v6 = use_data(cx, AX_I64, 1, SH(6), a);
    r = RUN(cx, ax_reshape(ax_ix2(ax_i64(2), ax_i64(3)), v6));
    if (r && SHAPE_IS(r, 2, 2, 3)) CHECK(memcmp(ax_array_data(r, 0), a, 6 * sizeof *a) == 0);
    ax_array_release(r);
    /* rank 0 <-> {1} */
    ax_acc s0 = use_data(cx, AX_I64, 0, NULL, a + 5);
    r = RUN(cx, ax_reshape(ax_ix1(ax_i64(1)), s0));
    if (r && SHAPE_IS(r, 1, 1)) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], a[5]);
    ax_array_release(r);
    r = RUN(cx, ax_flatten(s0));
    if (r && SHAPE_IS(r, 1, 1)) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], a[5]);
    ax_array_release(r);
    r = RUN(cx, ax_reshape(ax_index(0, NULL), use_data(cx, AX_I64, 1, SH(1), a + 7)));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], a[7]);
    ax_array_release(r);
    /* empty */
    r = RUN(cx, ax_reshape(ax_ix2(ax_i64(0), ax_i64(3)), use_data(cx, AX_I64, 1, SH(0), NULL)));
    if (r) SHAPE_IS(r, 2, 0, 3);
    ax_array_release(r);
    r = RUN(cx, ax_flatten(use_data(cx, AX_I64, 2, SH(3, 0), NULL)));
    if (r) SHAPE_IS(r, 1, 0);
    ax_array_release(r);
    /* the shape read at run time */
    r = RUN(cx, ax_reshape(ax_ix2(ax_size(v6), ax_i64(1)), v6));
    if (r && SHAPE_IS(r, 2, 6, 1)) CHECK(memcmp(ax_array_data(r, 0), a, 6 * sizeof *a) == 0);
    ax_array_release(r);
    /* tuple elements */
    {
        uint8_t b0[6] = {1, 2, 3, 4, 5, 6};
        float b1[6] = {1, 2, 3, 4, 5, 6};
        const void *bufs[2] = {b0, b1};
        r = RUN(cx, ax_reshape(ax_ix2(ax_i64(3), ax_i64(2)), use_tuple(cx, TUP(cx, AX_U8, AX_F32), 1, SH(6), bufs)));
        if (r && SHAPE_IS(r, 2, 3, 2)) {
            CHECK(memcmp(ax_array_data(r, 0), b0, sizeof b0) == 0);
            CHECK(memcmp(ax_array_data(r, 1), b1, sizeof b1) == 0);
        }
        ax_array_release(r);
    }
    /* a size mismatch is a run-time shape error */
    EXPECT_FAIL(cx, ax_reshape(ax_ix2(ax_i64(5), ax_i64(5)), a3), AX_ERR_SHAPE);
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

static ax_exp f_poly(ax_exp x, void *env) { return ax_add(ax_mul(x, x), ax_mul(ax_f32(3), x)); }
static ax_exp f_idiv(ax_exp x, ax_exp y, void *env)
{
    /* integer division family with a guarded divisor, plus bits */
    ax_exp d = ax_cond(ax_eq(y, ax_i32(0)), ax_i32(7), y);
    return ax_bxor(ax_add(ax_idiv(x, d), ax_mod(x, d)), ax_shl(ax_rem(x, d), ax_i32(3)));
}
static ax_exp f_mix3(ax_exp a, ax_exp b, ax_exp c, void *env)
{
    return ax_cond(ax_lt(a, ax_cvt(b, AX_F32)), ax_add(a, ax_cvt(c, AX_F32)), ax_min(a, ax_f32(0.5f)));
}
static ax_exp f_cvt(ax_exp x, void *env)
{
    ax_exp big = ax_mul(x, ax_f32(1e8f));
    return ax_tuple4(ax_cvt(big, AX_I32), ax_floor(x, AX_I16), ax_round(ax_mul(x, ax_f32(0.5f)), AX_U8),
                     ax_truncate(big, AX_U64));
}
static ax_exp f_bits(ax_exp x, void *env)
{
    return ax_tuple4(ax_popcount(x), ax_clz(x), ax_rotl(x, ax_i8(-3)), ax_shr(x, ax_u16(40)));
}
static ax_exp f_tup(ax_exp p, void *env)
{
    /* (i32, f64) -> (f64, i32, bool) */
    return ax_tuple3(ax_mul(ax_get(p, 1), ax_f64(2)), ax_neg(ax_get(p, 0)), ax_gt(ax_get(p, 0), ax_i32(0)));
}
static ax_exp f_while(ax_exp x, void *env);
static ax_exp w_cond(ax_exp v, void *env) { return ax_lt(ax_get(v, 0), ax_get(v, 1)); }
static ax_exp w_body(ax_exp v, void *env) { return ax_tuple2(ax_add(ax_get(v, 0), ax_i32(3)), ax_get(v, 1)); }
static ax_exp f_while(ax_exp x, void *env)
{
    ax_exp lim = ax_cvt(ax_abs(x), AX_I32);
    return ax_get(ax_while(w_cond, w_body, NULL, ax_tuple2(ax_i32(0), lim)), 0);
}

static ax_acc b_map(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    switch (v->which) {
    case 0: return ax_map(f_poly, NULL, input(cx, AX_F32, v->rank, v->sh, 1, 50));
    case 1: return ax_zip_with(f_idiv, NULL, input(cx, AX_I32, v->rank, v->sh, 2, 1000),
                               input(cx, AX_I32, v->rank, v->sh, 3, 5));
    case 2: return ax_zip_with3(f_mix3, NULL, input(cx, AX_F32, v->rank, v->sh, 4, 9),
                                input(cx, AX_I16, v->rank, v->sh, 5, 9), input(cx, AX_U8, v->rank, v->sh, 6, 9));
    case 3: return ax_map(f_cvt, NULL, input(cx, AX_F32, v->rank, v->sh, 7, 300));
    case 4: return ax_map(f_bits, NULL, input(cx, AX_U16, v->rank, v->sh, 8, 30000));
    case 5: return ax_map(f_tup, NULL, input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_F64}, v->rank, v->sh, 9, 99));
    case 6: return ax_map(f_while, NULL, input(cx, AX_F32, v->rank, v->sh, 10, 40));
    default: return NULL;
    }
}

static ax_acc b_map_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_map, 7, NULL); }

DIFF_TEST(map_zip_with_all_shapes)
{
    for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        char what[64];
        snprintf(what, sizeof what, "map/zipWith, shape %d", s);
        SAME(what, b_map_all, &e, 0);
    }
}

/* Unrolled steps (cg_exp.c "unrolled steps"): 40 zipWith steps fused
 * into one element function run as a loop: f32 and i32 states that
 * escape and stay (a fixed point: the loop may stop early) in a step
 * that swaps components; u8 and f64 states that mostly never settle. */
static ax_exp u_start(ax_exp c, void *env) { return ax_tuple3(c, ax_neg(c), ax_i32(0)); }
static ax_exp u_step(ax_exp c, ax_exp s, void *env)
{
    ax_exp a = ax_get(s, 0), b = ax_get(s, 1);
    ax_exp nx = ax_tuple3(ax_add(b, c), ax_sub(ax_mul(a, ax_f32(1.5f)), c), ax_add(ax_get(s, 2), ax_i32(1)));
    return ax_cond(ax_gt(ax_mul(a, a), ax_f32(1000)), s, nx);
}
static ax_exp u_start2(ax_exp c, void *env) { return ax_tuple2(ax_cvt(c, AX_U8), ax_cvt(c, AX_F64)); }
static ax_exp u_step2(ax_exp c, ax_exp s, void *env)
{
    ax_exp x = ax_get(s, 0);
    return ax_cond(ax_eq(x, ax_u8(7)), s,
                   ax_tuple2(ax_bxor(ax_shr(x, ax_u8(1)), ax_shl(x, ax_u8(3))),
                             ax_add(ax_mul(ax_get(s, 1), ax_f64(0.5)), ax_cvt(c, AX_F64))));
}
static ax_exp u_end(ax_exp s, void *env) { return ax_tuple2(ax_get(s, 1), ax_get(s, 2)); }
static ax_acc b_unrolled(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_acc cs = input(cx, AX_F32, v->rank, v->sh, 14, 20);
    if (v->which) {
        ax_acc zs = ax_map(u_start2, NULL, cs);
        for (int k = 0; k < 40; k++) zs = ax_zip_with(u_step2, NULL, cs, zs);
        return zs;
    }
    ax_acc zs = ax_map(u_start, NULL, cs);
    for (int k = 0; k < 40; k++) zs = ax_zip_with(u_step, NULL, cs, zs);
    return ax_map(u_end, NULL, zs);
}
static ax_acc b_unrolled_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_unrolled, 2, NULL); }

DIFF_TEST(zip_with_unrolled_steps_as_loops)
{
    for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        SAME("unrolled steps", b_unrolled_all, &e, 0);
    }
}

/* zipWith of different shapes: the intersection, through the index loop. */
static ax_acc b_zip_inter(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    static const int64_t a[3][3] = {{5, 1007, 3}, {4, 1003, 5}, {7, 1000, 4}};
    return ax_zip_with(ax_fn_sub, NULL, input(cx, AX_I64, v->rank, a[0], 13, 99),
                       input(cx, AX_I64, v->rank, a[1 + (v->which & 1)], 14, 99));
}

DIFF_TEST(zip_with_intersection)
{
    for (int r = 1; r <= 3; r++)
        for (int w = 0; w < 2; w++) {
            Env e = {r, NULL, w};
            SAME("zipWith intersection", b_zip_inter, &e, 0);
        }
}

static ax_exp g_gen(ax_exp ix, void *env)
{
    intptr_t r = (intptr_t)env;
    ax_exp s = ax_index_get(ix, 0);
    for (int d = 1; d < r; d++) s = ax_add(ax_mul(s, ax_i64(31)), ax_index_get(ix, d));
    return ax_tuple2(ax_cvt(s, AX_F64), ax_cvt(ax_rem(s, ax_i64(7)), AX_I8));
}
static ax_exp g_rev(ax_exp ix, void *env)
{
    const int64_t *sh = env;
    return ax_ix2(ax_sub(ax_i64(sh[0] - 1), ax_index_get(ix, 1)), ax_index_get(ix, 0));
}

static ax_acc b_gen(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_exp sh[3];
    for (int d = 0; d < v->rank; d++) sh[d] = ax_i64(v->sh[d]);
    return ax_generate(cx, ax_index(v->rank, sh), g_gen, (void *)(intptr_t)v->rank);
}

static ax_acc b_shape_ops(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int64_t n = v->sh[0], m = v->sh[1];
    ax_acc a = input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_BOOL}, 2, SH(n, m), 15, 9);
    switch (v->which) {
    case 0: return ax_backpermute(ax_ix2(ax_i64(m), ax_i64(n)), g_rev, (void *)v->sh, a);
    case 1: {
        ax_slice sp[3] = {ax_all(), ax_fixed(ax_i64(3)), ax_all()};
        return ax_replicate(3, sp, a);
    }
    case 2: {
        ax_slice sp[2] = {ax_fixed(ax_i64(n / 2)), ax_all()};
        return ax_slice_(2, sp, a);
    }
    case 3: {
        ax_slice sp[2] = {ax_all(), ax_fixed(ax_i64(m - 1))};
        return ax_slice_(2, sp, a);
    }
    case 4: return ax_reshape(ax_ix3(ax_i64(m), ax_i64(1), ax_i64(n)), a);
    case 5: return ax_flatten(a);
    case 6: return ax_unit(cx, ax_tuple2(ax_i32(-4), ax_bool(true)));
    default: return NULL;
    }
}

static ax_acc b_shape_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_shape_ops, 7, NULL); }

DIFF_TEST(generate_and_shape_operations)
{
    for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        SAME("generate", b_gen, &e, 0);
    }
    const int64_t dims[][2] = {{1, 1}, {3, 5}, {1001, 3}, {1000, 1000}};
    for (int k = 0; k < 4; k++) {
        Env e = {2, dims[k], 0};
        SAME("shape operations", b_shape_all, &e, 0);
    }
}

DIFF_TEST(map_large_arrays)
{
    if (ops_small()) {
        printf("skip map_large_arrays: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    Env e = {1, &n, 0};
    SAME("map 1e6", b_map, &e, 0);
}
