/*
 * The reductions: fold, fold1, fold_all, fold_seg and fold1_seg, with
 * non-commutative associative operators (affine maps, 2x2 matrix
 * products, ax_fn_fst, ax_fn_snd) so that the order of the operands is
 * checked, not just their multiset.
 *
 * Backends (tests/ops/ops.h): the OP_TESTs and BE_TESTs on every backend,
 * against values computed in plain C here (empty rows and arrays, segment
 * arrays of five integer types, fold1 of an empty row and segments that
 * do not add up: shape errors); the DIFF_TESTs on the compiling backends,
 * against the interpreter: eleven operators on the large and GPU-sized
 * shapes, segmented folds, the all-pairs folds that the CPU backend folds
 * a block of rows at a time (bit for bit), and a million elements.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"
#include <math.h>
#include <string.h>

static const Shape red_shapes[] = {
    {1, {0}}, {1, {1}}, {1, {7}}, {1, {1001}},
    {2, {3, 7}}, {2, {3, 0}}, {2, {0, 7}}, {2, {1, 1}}, {2, {4, 1}},
    {3, {2, 3, 5}}, {3, {2, 0, 5}}, {3, {2, 3, 0}}, {3, {1, 1, 1001}},
};

OP_TEST(fold)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(red_shapes); t++) {
        op_case();
        const Shape *s = &red_shapes[t];
        RedIn in;
        red_in(cx, &in, s->rank, s->sh);
        for (int affine = 0; affine < 2; affine++) {
            AffOp op = affine ? aff_compose : aff_add;
            Aff z = affine ? aff_z : sum_z;
            Aff *wz = calloc((size_t)in.rows + 1, sizeof *wz), *w1 = calloc((size_t)in.rows + 1, sizeof *w1);
            for (int64_t r = 0; r < in.rows; r++) {
                Aff acc = z;
                for (int64_t k = 0; k < in.inner; k++) acc = op(acc, in.v[r * in.inner + k]);
                wz[r] = acc;
                if (in.inner) {
                    acc = in.v[r * in.inner];
                    for (int64_t k = 1; k < in.inner; k++) acc = op(acc, in.v[r * in.inner + k]);
                    w1[r] = acc;
                }
            }
            ax_acc a = affine ? in.aff : in.sum;
            ax_acc f = affine ? ax_fold(aff_op, NULL, aff_z_exp(), a) : ax_fold(ax_fn_add, NULL, ax_i64(100), a);
            ax_array *r = RUN(cx, f);
            if (r && SHAPE_ISV(r, s->rank - 1, s->sh)) {
                Chk c;
                CHK(&c, "fold %s, shape case %d", affine ? "affine" : "add", t);
                chk_aff(&c, r, affine, wz, in.rows);
                chk_done(&c);
            }
            ax_array_release(r);
            ax_acc f1 = affine ? ax_fold1(aff_op, NULL, a) : ax_fold1(ax_fn_add, NULL, a);
            if (in.inner == 0 && in.rows > 0) {
                EXPECT_FAIL(cx, f1, AX_ERR_SHAPE);
            } else {
                r = RUN(cx, f1);
                if (r && SHAPE_ISV(r, s->rank - 1, s->sh)) {
                    Chk c;
                    CHK(&c, "fold1 %s, shape case %d", affine ? "affine" : "add", t);
                    chk_aff(&c, r, affine, w1, in.rows);
                    chk_done(&c);
                }
                ax_array_release(r);
            }
            free(wz);
            free(w1);
        }
        red_free(&in);
    }
    op_ctx_done(cx);
}

/* ax_fn_fst / ax_fn_snd: associative, not commutative. */
OP_TEST(fold_fst_snd)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t a[15];
    for (int k = 0; k < 15; k++) a[k] = (int32_t)val_of(k);
    ax_acc m = use_data(cx, AX_I32, 2, SH(3, 5), a), e = use_data(cx, AX_I32, 2, SH(3, 0), NULL);
    ax_array *r = RUN(cx, ax_fold1(ax_fn_fst, NULL, m));
    if (r && SHAPE_IS(r, 1, 3)) for (int i = 0; i < 3; i++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i], a[i * 5]);
    ax_array_release(r);
    r = RUN(cx, ax_fold1(ax_fn_snd, NULL, m));
    if (r && SHAPE_IS(r, 1, 3)) for (int i = 0; i < 3; i++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i], a[i * 5 + 4]);
    ax_array_release(r);
    r = RUN(cx, ax_fold(ax_fn_fst, NULL, ax_i32(-99), m));
    if (r && SHAPE_IS(r, 1, 3)) for (int i = 0; i < 3; i++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i], -99);
    ax_array_release(r);
    r = RUN(cx, ax_fold(ax_fn_snd, NULL, ax_i32(-99), m));
    if (r && SHAPE_IS(r, 1, 3)) for (int i = 0; i < 3; i++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i], a[i * 5 + 4]);
    ax_array_release(r);
    r = RUN(cx, ax_fold(ax_fn_snd, NULL, ax_i32(-99), e));
    if (r && SHAPE_IS(r, 1, 3)) for (int i = 0; i < 3; i++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i], -99);
    ax_array_release(r);
    op_ctx_done(cx);
}

/* 2x2 integer matrices as i64 4-tuples (a b; c d), products wrapping. */
static ax_exp mat_mul(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = ax_get(x, 0), b = ax_get(x, 1), c = ax_get(x, 2), d = ax_get(x, 3);
    ax_exp e = ax_get(y, 0), f = ax_get(y, 1), g = ax_get(y, 2), h = ax_get(y, 3);
    return ax_tuple4(ax_add(ax_mul(a, e), ax_mul(b, g)), ax_add(ax_mul(a, f), ax_mul(b, h)),
                     ax_add(ax_mul(c, e), ax_mul(d, g)), ax_add(ax_mul(c, f), ax_mul(d, h)));
}
typedef struct Mat { uint64_t m[4]; } Mat;
static Mat mat_c(Mat x, Mat y)
{
    Mat r = {{x.m[0] * y.m[0] + x.m[1] * y.m[2], x.m[0] * y.m[1] + x.m[1] * y.m[3],
              x.m[2] * y.m[0] + x.m[3] * y.m[2], x.m[2] * y.m[1] + x.m[3] * y.m[3]}};
    return r;
}

OP_TEST(fold_matrix_product)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    /* rows of 1001, 1024 and 263 elements: on the CPU, eight chains of
     * blocks (cpu/fold.c fold_chains) with a remainder of 1, none and 7 */
    static const Shape cases[] = {{1, {1001}}, {2, {4, 9}}, {1, {1}}, {2, {2, 0}}, {1, {1024}}, {2, {3, 263}}};
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const Shape *s = &cases[t];
        int64_t n = shape_size(s->rank, s->sh), inner = s->sh[s->rank - 1], rows = n ? n / inner : shape_size(s->rank - 1, s->sh);
        int64_t *buf[4];
        Mat *v = calloc((size_t)n + 1, sizeof *v);
        for (int i = 0; i < 4; i++) buf[i] = alloc_i64(n);
        for (int64_t k = 0; k < n; k++)
            for (int i = 0; i < 4; i++) {
                buf[i][k] = val_of(k * 4 + i) % 4;
                v[k].m[i] = (uint64_t)buf[i][k];
            }
        const void *bufs[4] = {buf[0], buf[1], buf[2], buf[3]};
        ax_acc a = use_tuple(cx, TUP(cx, AX_I64, AX_I64, AX_I64, AX_I64), s->rank, s->sh, bufs);
        Mat z = {{2, (uint64_t)-1, 1, 3}};
        ax_exp ze = ax_tuple4(ax_i64(2), ax_i64(-1), ax_i64(1), ax_i64(3));
        for (int with_z = 0; with_z < 2; with_z++) {
            if (!with_z && inner == 0) continue;
            ax_array *r = RUN(cx, with_z ? ax_fold(mat_mul, NULL, ze, a) : ax_fold1(mat_mul, NULL, a));
            if (r && SHAPE_ISV(r, s->rank - 1, s->sh)) {
                Chk c;
                CHK(&c, "matrix product %s, case %d", with_z ? "fold" : "fold1", t);
                for (int64_t row = 0; row < rows; row++) {
                    Mat acc = with_z ? z : v[row * inner];
                    for (int64_t k = with_z ? 0 : 1; k < inner; k++) acc = mat_c(acc, v[row * inner + k]);
                    for (int i = 0; i < 4; i++) chk_i(&c, row * 4 + i, ((int64_t *)ax_array_data(r, i))[row], (int64_t)acc.m[i]);
                }
                chk_done(&c);
            }
            ax_array_release(r);
        }
        for (int i = 0; i < 4; i++) free(buf[i]);
        free(v);
    }
    op_ctx_done(cx);
}

OP_TEST(fold_all)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const Shape cases[] = {{3, {2, 3, 4}}, {0, {0}}, {2, {0, 3}}, {1, {1001}}, {2, {3, 4}}, {3, {1, 1, 1}}};
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const Shape *s = &cases[t];
        RedIn in;
        red_in(cx, &in, s->rank, s->sh);
        Aff ws = sum_z, wa = aff_z;
        for (int64_t k = 0; k < in.n; k++) {
            ws = aff_add(ws, in.v[k]);
            wa = aff_compose(wa, in.v[k]);
        }
        ax_array *r = RUN(cx, ax_fold_all(ax_fn_add, NULL, ax_i64(100), in.sum));
        if (r && SHAPE_IS(r, 0, 0)) {
            Chk c;
            CHK(&c, "fold_all add, case %d", t);
            chk_aff(&c, r, false, &ws, 1);
            chk_done(&c);
        }
        ax_array_release(r);
        r = RUN(cx, ax_fold_all(aff_op, NULL, aff_z_exp(), in.aff));
        if (r && SHAPE_IS(r, 0, 0)) {
            Chk c;
            CHK(&c, "fold_all affine (row-major order), case %d", t);
            chk_aff(&c, r, true, &wa, 1);
            chk_done(&c);
        }
        ax_array_release(r);
        red_free(&in);
    }
    /* f32: a sum of small integers is exact in any order */
    float f[1001];
    double want = 0.5;
    for (int k = 0; k < 1001; k++) { f[k] = (float)(k % 17); want += f[k]; }
    ax_array *r = RUN(cx, ax_fold_all(ax_fn_add, NULL, ax_f32(0.5f), use_data(cx, AX_F32, 2, SH(7, 143), f)));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_CLOSE(((float *)ax_array_data(r, 0))[0], want, 0);
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ===================================================== segmented folds */

typedef struct SegCase {
    int rank;
    int64_t sh[2];
    int nseg;
    int64_t segs[5];
} SegCase;

static ax_acc seg_array(ax_ctx *cx, ax_scalar s, const SegCase *c)
{
    uint64_t buf[5];
    for (int i = 0; i < c->nseg; i++) st_i(buf, s, i, c->segs[i]);
    return use_data(cx, s, 1, SH(c->nseg), buf);
}

OP_TEST(fold_seg)
{
    static const SegCase cases[] = {
        {1, {10}, 4, {3, 0, 5, 2}},
        {1, {10}, 4, {1, 4, 0, 5}},
        {1, {10}, 3, {3, 1, 6}},
        {1, {10}, 1, {10}},
        {1, {7}, 5, {0, 7, 0, 0, 0}},
        {2, {3, 10}, 3, {4, 0, 6}},
        {2, {3, 10}, 2, {2, 8}},
        {1, {0}, 0, {0}},
        {1, {0}, 2, {0, 0}},
        {2, {0, 10}, 2, {4, 6}},
        {2, {2, 1001}, 3, {500, 1, 500}},
    };
    static const ax_scalar seg_types[] = {AX_I32, AX_I64, AX_I16, AX_U8, AX_U32};
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const SegCase *c = &cases[t];
        RedIn in;
        red_in(cx, &in, c->rank, c->sh);
        bool has_empty = false;
        for (int i = 0; i < c->nseg; i++) has_empty |= c->segs[i] == 0;
        int64_t rsh[2] = {c->sh[0], c->nseg};
        if (c->rank == 1) rsh[0] = c->nseg;
        int64_t nres = in.rows * c->nseg;
        for (int affine = 0; affine < 2; affine++) {
            AffOp op = affine ? aff_compose : aff_add;
            Aff z = affine ? aff_z : sum_z;
            Aff *wz = calloc((size_t)nres + 1, sizeof *wz), *w1 = calloc((size_t)nres + 1, sizeof *w1);
            for (int64_t r = 0; r < in.rows; r++) {
                int64_t off = r * in.inner;
                for (int i = 0; i < c->nseg; i++) {
                    Aff acc = z;
                    for (int64_t k = 0; k < c->segs[i]; k++) acc = op(acc, in.v[off + k]);
                    wz[r * c->nseg + i] = acc;
                    if (c->segs[i]) {
                        acc = in.v[off];
                        for (int64_t k = 1; k < c->segs[i]; k++) acc = op(acc, in.v[off + k]);
                        w1[r * c->nseg + i] = acc;
                    }
                    off += c->segs[i];
                }
            }
            for (int st = 0; st < NELEM(seg_types); st++) {
                bool fits = true;
                for (int i = 0; i < c->nseg; i++) fits &= c->segs[i] <= type_max(seg_types[st]);
                if (!fits) continue;
                ax_acc segs = seg_array(cx, seg_types[st], c);
                ax_acc a = affine ? in.aff : in.sum;
                ax_acc f = affine ? ax_fold_seg(aff_op, NULL, aff_z_exp(), a, segs)
                                  : ax_fold_seg(ax_fn_add, NULL, ax_i64(100), a, segs);
                ax_array *r = RUN(cx, f);
                if (r && SHAPE_ISV(r, c->rank, rsh)) {
                    Chk ch;
                    CHK(&ch, "fold_seg %s, case %d, segments %s", affine ? "affine" : "add", t,
                        ax_scalar_name(seg_types[st]));
                    chk_aff(&ch, r, affine, wz, nres);
                    chk_done(&ch);
                }
                ax_array_release(r);
                ax_acc f1 = affine ? ax_fold1_seg(aff_op, NULL, a, segs) : ax_fold1_seg(ax_fn_add, NULL, a, segs);
                if (has_empty && in.rows > 0) {
                    if (st == 0) EXPECT_FAIL(cx, f1, AX_ERR_SHAPE);
                    continue;
                }
                r = RUN(cx, f1);
                if (r && SHAPE_ISV(r, c->rank, rsh)) {
                    Chk ch;
                    CHK(&ch, "fold1_seg %s, case %d, segments %s", affine ? "affine" : "add", t,
                        ax_scalar_name(seg_types[st]));
                    chk_aff(&ch, r, affine, w1, nres);
                    chk_done(&ch);
                }
                ax_array_release(r);
            }
            free(wz);
            free(w1);
        }
        red_free(&in);
    }
    /* segments that do not add up to the extent */
    {
        int64_t a[10] = {0}, s1[3] = {3, 3, 3}, s2[2] = {8, 8};
        ax_acc x = use_data(cx, AX_I64, 1, SH(10), a);
        EXPECT_FAIL(cx, ax_fold_seg(ax_fn_add, NULL, ax_i64(0), x, use_data(cx, AX_I64, 1, SH(3), s1)), AX_ERR_SHAPE);
        EXPECT_FAIL(cx, ax_fold_seg(ax_fn_add, NULL, ax_i64(0), x, use_data(cx, AX_I64, 1, SH(2), s2)), AX_ERR_SHAPE);
    }
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

static ax_exp op_pairsum(ax_exp x, ax_exp y, void *env)
{
    return ax_tuple2(ax_add(ax_get(x, 0), ax_get(y, 0)), ax_max(ax_get(y, 1), ax_get(x, 1)));
}

static ax_acc b_fold(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int r = v->rank;
    const int64_t *sh = v->sh;
    switch (v->which) {
    case 0: return ax_fold(ax_fn_add, NULL, ax_i32(5), input(cx, AX_I32, r, sh, 20, 1000));
    case 1: return ax_fold1(ax_fn_max, NULL, input(cx, AX_F32, r, sh, 21, 1000));
    /* floats of one sign: reassociation changes the last bits only */
    case 2: return ax_fold(ax_fn_add, NULL, ax_f32(0.25f), ax_map(ax_fn_abs, NULL, input(cx, AX_F32, r, sh, 22, 100)));
    case 3: return ax_fold(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)),
                           input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_I32}, r, sh, 23, 3));
    case 4: return ax_fold1(op_mat, NULL, input_n(cx, 4, (const ax_scalar[]){AX_I32, AX_I32, AX_I32, AX_I32}, r, sh, 24, 2));
    case 5: return ax_fold1(ax_fn_fst, NULL, input(cx, AX_I64, r, sh, 25, 1000));
    case 6: return ax_fold(ax_fn_snd, NULL, ax_i16(-3), input(cx, AX_I16, r, sh, 26, 1000));
    case 7: return ax_fold(op_pairsum, NULL, ax_tuple2(ax_i64(0), ax_f64(-1e300)),
                           input_n(cx, 2, (const ax_scalar[]){AX_I64, AX_F64}, r, sh, 27, 50));
    case 8: return ax_fold(ax_fn_mul, NULL, ax_u32(1), input(cx, AX_U32, r, sh, 28, 3));
    case 9: return ax_fold1(ax_fn_and, NULL, ax_map(ax_fn_not, NULL, input(cx, AX_BOOL, r, sh, 29, 1)));
    case 10: return ax_fold_all(ax_fn_min, NULL, ax_f64(1e300), input(cx, AX_F64, r, sh, 30, 1000));
    default: return NULL;
    }
}

/* fold1 of an empty row is an error (checked below): left out */
static bool fold1_empty(const void *env, int w)
{
    const Env *v = env;
    bool fold1 = w == 1 || w == 4 || w == 5 || w == 9;
    return fold1 && v->sh[v->rank - 1] == 0 && shape_size(v->rank - 1, v->sh) > 0;
}
static ax_acc b_fold_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_fold, 11, fold1_empty); }

DIFF_TEST(folds_all_shapes_and_operators)
{
    for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        char what[64];
        snprintf(what, sizeof what, "folds, shape %d", s);
        SAME(what, b_fold_all, &e, 1e-3);   /* only the f32 sum reassociates */
    }
}

/* fold1 of a row without elements has no value: a shape error naming
 * ax_fold1, on every backend. */
BE_TEST(fold1_of_empty_rows_reports_a_shape_error)
{
    ax_ctx *cx = be_ctx(be);
    CHECK(ax_run(cx, ax_fold1(ax_fn_add, NULL, input(cx, AX_I32, 2, SH(3, 0), 1, 1))) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_SHAPE);
    CHECK(strstr(ax_error(cx), "ax_fold1"));
    ax_ctx_free(cx);
}

static ax_acc b_seg(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int64_t n = v->sh[1];
    /* segments: lengths 0..7 cycling, the last one filling up to n */
    int64_t len[4096], nseg = 0, sum = 0;
    for (int64_t k = 0; sum < n && nseg < 4095; k++) {
        int64_t l = v->which >= 3 ? (k % 3 == 1 ? 0 : n / 3 + 1) : k % 8;
        if (sum + l > n) l = n - sum;
        len[nseg++] = l;
        sum += l;
    }
    if (sum < n) len[nseg - 1] += n - sum;
    if (v->which % 3 == 2) len[nseg++] = 0;
    ax_array *sa = ax_array_from(cx, AX_I32, 1, &nseg, (const int32_t[4096]){0});
    for (int64_t k = 0; sa && k < nseg; k++) ((int32_t *)ax_array_data(sa, 0))[k] = (int32_t)len[k];
    ax_acc segs = sa ? ax_use(cx, sa) : NULL;
    ax_array_release(sa);
    ax_acc a = input(cx, AX_I64, 2, v->sh, 31, 1000);
    switch (v->which % 3) {
    case 0: return ax_fold_seg(ax_fn_add, NULL, ax_i64(7), a, segs);
    case 1: return ax_fold_seg(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)),
                               input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_I32}, 2, v->sh, 32, 3), segs);
    default: return ax_fold_seg(ax_fn_max, NULL, ax_i64(-5000), a, segs);
    }
}

static ax_acc b_seg_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_seg, 6, NULL); }

DIFF_TEST(segmented_folds)
{
    const int64_t dims[][2] = {{1, 0}, {1, 1}, {3, 1001}, {2, 100000}, {500, 40}};
    for (int k = 0; k < 5; k++) {
        Env e = {2, dims[k], 0};
        SAME("fold_seg", b_seg_all, &e, 0);
    }
}

static ax_acc b_fold1seg(ax_ctx *cx, const void *e)
{
    (void)e;
    ax_array *sa = ax_array_from(cx, AX_U16, 1, SH(4), (const uint16_t[]){3, 1, 5, 2});
    ax_acc segs = ax_use(cx, sa);
    ax_array_release(sa);
    return ax_fold1_seg(op_mat, NULL, input_n(cx, 4, (const ax_scalar[]){AX_I64, AX_I64, AX_I64, AX_I64}, 2, SH(5, 11), 33, 3),
                        segs);
}

DIFF_TEST(fold1_seg_of_matrix_products)
{
    SAME("fold1_seg", b_fold1seg, NULL, 0);
}

/* Folds of all pairs of two vectors, the element at (i, j) reading xs at
 * i and ys at j (N-body's shape): the CPU backend folds blocks of rows
 * together, each row strictly left to right from z (cg_skel.c, "folds
 * across rows"), so where every thread's range holds a block of rows the
 * results equal the interpreter's bit for bit, f32 sums included. */
typedef struct Pairs {
    int64_t rows, n;
    int which;
    ax_acc xs, ys, m;   /* m: n x rows, read transposed (cases 6, 7) */
} Pairs;

static ax_exp pair_elt(ax_exp ix, void *env)
{
    const Pairs *p = env;
    ax_exp i = ax_index_get(ix, 0), j = ax_index_get(ix, 1);
    /* m's column i at j, times ys at j (gemver's A^T y): across rows, a
       read of consecutive elements of m's row j; case 7 past m's end */
    if (p->which >= 6)
        return ax_abs(ax_mul(ax_at(p->m, ax_ix2(p->which == 7 ? ax_add(j, ax_i64(1)) : j, i)), ax_at(p->ys, ax_ix1(j))));
    ax_exp x = ax_at(p->xs, ax_ix1(i)), y = ax_at(p->ys, ax_ix1(p->which == 5 ? ax_add(j, ax_i64(1)) : j));
    switch (p->which) {
    case 0: case 5: {
        ax_exp r2 = ax_add(ax_add(ax_mul(x, x), ax_mul(y, y)), ax_f32(0.5f));
        return ax_add(ax_abs(ax_mul(x, y)), ax_div(ax_f32(1), ax_sqrt(r2)));   /* terms of one sign */
    }
    case 1: return ax_tuple2(ax_add(ax_cvt(x, AX_I32), ax_cvt(j, AX_I32)), ax_sub(ax_cvt(y, AX_I32), ax_cvt(i, AX_I32)));
    case 2: {
        ax_exp d = ax_sub(y, x), s = ax_div(ax_f32(1), ax_sqrt(ax_add(ax_mul(d, d), ax_f32(0.01f))));
        return ax_tuple3(ax_mul(s, ax_abs(d)), ax_mul(s, ax_abs(x)), ax_mul(s, ax_abs(y)));
    }
    case 3: return ax_cvt(ax_sub(x, ax_mul(y, ax_f32(0.5f))), AX_F64);
    default: return ax_add(ax_cvt(ax_mul(x, ax_f32(7)), AX_I64), ax_mul(j, ax_i64(3)));
    }
}

static ax_exp op_twice_less1(ax_exp x, void *env) { return ax_sub(ax_mul(x, ax_f64(2)), ax_f64(1)); }
static ax_exp op_sum3(ax_exp x, ax_exp y, void *env)
{
    return ax_tuple3(ax_add(ax_get(x, 0), ax_get(y, 0)), ax_add(ax_get(x, 1), ax_get(y, 1)), ax_add(ax_get(x, 2), ax_get(y, 2)));
}

static ax_acc b_pairs(ax_ctx *cx, const void *e)
{
    Pairs p = *(const Pairs *)e;
    p.xs = input(cx, AX_F32, 1, SH(p.rows), 40, 50);
    p.ys = input(cx, AX_F32, 1, SH(p.n), 41, 50);
    p.m = input(cx, AX_F32, 2, SH(p.n, p.rows), 42, 50);
    ax_acc g = ax_generate(cx, ax_ix2(ax_i64(p.rows), ax_i64(p.n)), pair_elt, &p);   /* called here */
    switch (p.which) {
    case 0: case 5: case 6: case 7: return ax_fold(ax_fn_add, NULL, ax_f32(0.25f), g);
    case 1: return ax_fold(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), g);
    case 2: return ax_fold(op_sum3, NULL, ax_tuple3(ax_f32(0), ax_f32(0), ax_f32(0)), g);
    case 3: return ax_map(op_twice_less1, NULL, ax_fold(ax_fn_max, NULL, ax_f64(-1e300), g));
    default: return ax_fold(ax_fn_snd, NULL, ax_i64(-1), g);
    }
}

static ax_acc b_pairs_all(ax_ctx *cx, const void *e)
{
    ax_acc v[6];
    for (int w = 0; w < 6; w++) {
        Pairs p = *(const Pairs *)e;
        p.which = w == 5 ? 6 : w;
        v[w] = b_pairs(cx, &p);
    }
    return ax_atuple(6, v);
}

DIFF_TEST(folds_across_rows)
{
    /* rows x n; exact: every range of rows (4 threads) holds a block of
       16 (the f32 sums, reassociated otherwise, then match bit for bit) */
    const struct { int64_t rows, n; bool exact; } sh[] = {
        {0, 5, true}, {5, 0, true}, {1, 1, true}, {15, 3, false}, {16, 7, true}, {17, 1, true},
        {100, 1000, false}, {1001, 37, true}, {4096, 64, true},
    };
    for (int k = 0; k < (int)(sizeof sh / sizeof *sh); k++) {
        if (ops_small() && sh[k].rows * sh[k].n > 5000) continue;
        Pairs p = {sh[k].rows, sh[k].n, 0, NULL, NULL, NULL};
        char what[64];
        snprintf(what, sizeof what, "folds across rows, %lld x %lld", (long long)p.rows, (long long)p.n);
        SAME(what, b_pairs_all, &p, sh[k].exact && !be->gpu ? 0 : 1e-5);
    }
    /* a read out of bounds in the element (ys at j + 1; m at row j + 1):
       the fault at the lowest position, as the interpreter's */
    for (int w = 5; w <= 7; w += 2) {
        ax_ctx *ci = kind_ctx(AX_BACKEND_INTERP, false), *cc = be_ctx_unsafe(be, false);
        Pairs p = {1001, 37, w, NULL, NULL, NULL};
        CHECK(ax_run(ci, b_pairs(ci, &p)) == NULL);
        CHECK(ax_run(cc, b_pairs(cc, &p)) == NULL);
        CHECKF(ax_status_of(cc) == AX_ERR_INDEX, "case %d: %d %s", w, ax_status_of(cc), ax_error(cc));
        CHECKF(!strcmp(ax_error(ci), ax_error(cc)), "case %d: \"%s\" vs \"%s\"", w, ax_error(ci), ax_error(cc));
        ax_ctx_free(ci);
        ax_ctx_free(cc);
    }
}

/* Rows shorter than the along-row chains' minimum (256), folded by an
 * operator that is not commutative, whose element reads a matrix at both
 * of its indices: the CPU backend folds blocks of such rows across rows
 * (the lanes independent rows; k-means' nearest of 5 clusters).  Each
 * operator exact (integer affine maps, a (distance, number) minimum, the
 * last element), so every grouping gives the interpreter's bits; ranks 2
 * and 3 (each lane's outer coordinates worked out per block); rows
 * 1..255 long and 256 (along the rows again), ranges of fewer rows than
 * a block, empty rows, and a read past the matrix's end reported at the
 * lowest position. */
typedef struct Short {
    int64_t rows, n;
    int which;
    ax_acc m;
} Short;

static ax_exp short_elt(ax_exp ix, void *env)
{
    const Short *s = env;
    ax_exp i = ax_index_get(ix, 0), j = ax_index_get(ix, 1);
    ax_exp v = ax_at(s->m, ax_ix2(i, s->which == 3 ? ax_add(j, ax_i64(1)) : j));
    if (s->which == 4) {   /* rank 3: (i, k, j) reads m at (i, j) and (k, j) */
        ax_exp k = ax_index_get(ix, 1);
        j = ax_index_get(ix, 2);
        v = ax_sub(ax_at(s->m, ax_ix2(i, j)), ax_at(s->m, ax_ix2(ax_rem(k, ax_i64(s->rows)), j)));
        return ax_tuple2(ax_cvt(ax_mul(v, v), AX_F32), ax_cvt(ax_add(k, j), AX_I32));
    }
    switch (s->which) {
    case 0: return ax_tuple2(ax_add(v, ax_cvt(i, AX_I32)), ax_sub(v, ax_cvt(j, AX_I32)));
    case 1: return ax_tuple2(ax_cvt(ax_abs(ax_sub(v, ax_i32(20))), AX_F32), ax_cvt(j, AX_I32));
    default: return v;
    }
}

static ax_exp op_nearer(ax_exp a, ax_exp b, void *env)
{
    ax_exp first = ax_or(ax_lt(ax_get(a, 0), ax_get(b, 0)),
                         ax_and(ax_eq(ax_get(a, 0), ax_get(b, 0)), ax_lt(ax_get(a, 1), ax_get(b, 1))));
    return ax_cond(first, a, b);
}

static ax_acc b_short(ax_ctx *cx, const void *e)
{
    Short s = *(const Short *)e;
    s.m = input(cx, AX_I32, 2, SH(s.rows, s.n), 43, 40);
    ax_exp sh = s.which == 4 ? ax_ix3(ax_i64(s.rows), ax_i64(3), ax_i64(s.n)) : ax_ix2(ax_i64(s.rows), ax_i64(s.n));
    ax_acc g = ax_generate(cx, sh, short_elt, &s);   /* called here */
    switch (s.which) {
    case 0: return ax_fold(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), g);
    case 1: case 4: return ax_fold(op_nearer, NULL, ax_tuple2(ax_f32(INFINITY), ax_i32(-1)), g);
    default: return ax_fold(ax_fn_snd, NULL, ax_i32(-7), g);
    }
}

static ax_acc b_short_all(ax_ctx *cx, const void *e)
{
    ax_acc v[4];
    for (int w = 0; w < 4; w++) {
        Short s = *(const Short *)e;
        s.which = w == 3 ? 4 : w;
        v[w] = b_short(cx, &s);
    }
    return ax_atuple(4, v);
}

DIFF_TEST(short_rows_across_rows)
{
    const int64_t sh[][2] = {{1000, 5}, {1001, 34}, {300, 255}, {200, 256}, {33, 1}, {31, 5}, {0, 5}, {40, 0}};
    for (int k = 0; k < (int)(sizeof sh / sizeof *sh); k++) {
        Short s = {sh[k][0], sh[k][1], 0, NULL};
        char what[64];
        snprintf(what, sizeof what, "short rows across rows, %lld x %lld", (long long)s.rows, (long long)s.n);
        SAME(what, b_short_all, &s, 0);
    }
    ax_ctx *ci = kind_ctx(AX_BACKEND_INTERP, false), *cc = be_ctx_unsafe(be, false);
    Short s = {1000, 5, 3, NULL};
    CHECK(ax_run(ci, b_short(ci, &s)) == NULL);
    CHECK(ax_run(cc, b_short(cc, &s)) == NULL);
    CHECKF(ax_status_of(cc) == AX_ERR_INDEX, "%d %s", ax_status_of(cc), ax_error(cc));
    CHECKF(!strcmp(ax_error(ci), ax_error(cc)), "\"%s\" vs \"%s\"", ax_error(ci), ax_error(cc));
    ax_ctx_free(ci);
    ax_ctx_free(cc);
}

DIFF_TEST(fold_large_arrays)
{
    if (ops_small()) {
        printf("skip fold_large_arrays: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    Env e = {1, &n, 2};
    SAME("fold (+) f32 1e6", b_fold, &e, 1e-3);
    e.which = 3;
    SAME("fold affine 1e6", b_fold, &e, 0);
}
