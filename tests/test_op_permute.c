/*
 * permute: combining into default values, targets dropped with ax_ignore,
 * targets outside the defaults (an index error; dropped in unsafe mode:
 * tests/test_op_faults.c), and the combination's operand order (new, old).
 *
 * Backends (tests/ops/ops.h): the OP_TEST on every backend, against
 * histograms, sums and maxima computed in plain C here (ranks 1 and 2,
 * tuple elements); the DIFF_TESTs on the compiling backends, against the
 * interpreter: collisions under concurrency through every combining path
 * (atomic fetch-add, compare-and-swap on the bits, per-leaf atomics,
 * striped locks) and a million elements.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"

static ax_exp bin_of(ax_exp v) { return ax_ix1(ax_quot(ax_add(v, ax_i32(50)), ax_i32(11))); }
static ax_exp hist_ix(ax_exp ix, void *env) { return bin_of(ax_at(acc_of(env), ix)); }
static ax_exp hist_ix_nonneg(ax_exp ix, void *env)
{
    ax_exp v = ax_at(acc_of(env), ix);
    return ax_cond(ax_lt(v, ax_i32(0)), ax_ignore(1), bin_of(v));
}
static ax_exp one_i32(ax_exp x, void *env) { return ax_i32(1); }
static ax_exp row_ix(ax_exp ix, void *env) { return ax_ix1(ax_index_get(ix, 0)); }
static ax_exp grid_ix(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_lt(i, ax_i64(12)), ax_ix2(ax_quot(i, ax_i64(4)), ax_rem(i, ax_i64(4))), ax_ignore(2));
}
static ax_exp new10_old(ax_exp n, ax_exp o, void *env) { return ax_add(ax_mul(n, ax_i32(10)), o); }
static ax_exp add_pair(ax_exp x, ax_exp y, void *env)
{
    return ax_tuple2(ax_add(ax_get(x, 0), ax_get(y, 0)), ax_add(ax_get(x, 1), ax_get(y, 1)));
}
static ax_exp mod3_ix(ax_exp ix, void *env) { return ax_ix1(ax_rem(ax_index_get(ix, 0), ax_i64(3))); }
static ax_exp plus5_ix(ax_exp ix, void *env) { return ax_ix1(ax_add(ax_index_get(ix, 0), ax_i64(5))); }

OP_TEST(permute)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t dfl[10], dneg[10];
    for (int k = 0; k < 10; k++) { dfl[k] = 1000 * k; dneg[k] = -1000; }
    static const int64_t ns[] = {0, 1, 7, 1001};
    for (int t = 0; t < NELEM(ns); t++) {
        op_case();
        int64_t n = ns[t];
        int32_t *xs = calloc((size_t)n + 1, sizeof *xs);
        for (int64_t k = 0; k < n; k++) xs[k] = (int32_t)val_of(k);
        int64_t cnt[10], cnt_nonneg[10], sum[10], mx[10];
        for (int b = 0; b < 10; b++) { cnt[b] = cnt_nonneg[b] = sum[b] = dfl[b]; mx[b] = -1000; }
        for (int64_t k = 0; k < n; k++) {
            int b = (xs[k] + 50) / 11;
            cnt[b]++;
            if (xs[k] >= 0) cnt_nonneg[b]++;
            sum[b] += xs[k];
            if (xs[k] > mx[b]) mx[b] = xs[k];
        }
        ax_acc x = use_data(cx, AX_I32, 1, SH(n), xs);
        ax_acc d = use_data(cx, AX_I32, 1, SH(10), dfl);
        ax_acc dn = use_data(cx, AX_I32, 1, SH(10), dneg);
        ax_acc progs[4] = {
            ax_permute(ax_fn_add, NULL, d, hist_ix, &x, ax_map(one_i32, NULL, x)),
            ax_permute(ax_fn_add, NULL, d, hist_ix_nonneg, &x, ax_map(one_i32, NULL, x)),
            ax_permute(ax_fn_add, NULL, d, hist_ix, &x, x),
            ax_permute(ax_fn_max, NULL, dn, hist_ix, &x, x),
        };
        const int64_t *wants[4] = {cnt, cnt_nonneg, sum, mx};
        static const char *const names[4] = {"histogram", "histogram dropping negatives", "sums", "max"};
        for (int p = 0; p < 4; p++) {
            ax_array *r = RUN(cx, progs[p]);
            if (r && SHAPE_IS(r, 1, 10)) {
                Chk c;
                CHK(&c, "permute %s, n=%lld", names[p], (long long)n);
                chk_arr_i(&c, r, 0, wants[p], 10);
                chk_done(&c);
            }
            ax_array_release(r);
        }
        free(xs);
    }
    /* rank 2 source into a vector: row sums */
    {
        int64_t a[24], z[4] = {0, 0, 0, 0}, want[4] = {0, 0, 0, 0};
        for (int k = 0; k < 24; k++) { a[k] = val_of(k); want[k / 6] += a[k]; }
        ax_array *r = RUN(cx, ax_permute(ax_fn_add, NULL, use_data(cx, AX_I64, 1, SH(4), z), row_ix, NULL,
                                         use_data(cx, AX_I64, 2, SH(4, 6), a)));
        if (r && SHAPE_IS(r, 1, 4)) {
            Chk c;
            CHK(&c, "permute row sums");
            chk_arr_i(&c, r, 0, want, 4);
            chk_done(&c);
        }
        ax_array_release(r);
    }
    /* a vector scattered into a 3x4 grid, no collisions: the combination
     * gets (new, old) */
    {
        int32_t a[15], g[12];
        for (int k = 0; k < 15; k++) a[k] = k + 1;
        for (int k = 0; k < 12; k++) g[k] = -k;
        ax_acc src = use_data(cx, AX_I32, 1, SH(15), a), dg = use_data(cx, AX_I32, 2, SH(3, 4), g);
        ax_array *r = RUN(cx, ax_permute(ax_fn_fst, NULL, dg, grid_ix, NULL, src));
        if (r && SHAPE_IS(r, 2, 3, 4))
            for (int k = 0; k < 12; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], a[k]);
        ax_array_release(r);
        r = RUN(cx, ax_permute(ax_fn_snd, NULL, dg, grid_ix, NULL, src));
        if (r && SHAPE_IS(r, 2, 3, 4))
            for (int k = 0; k < 12; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], g[k]);
        ax_array_release(r);
        r = RUN(cx, ax_permute(new10_old, NULL, dg, grid_ix, NULL, src));
        if (r && SHAPE_IS(r, 2, 3, 4))
            for (int k = 0; k < 12; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], a[k] * 10 + g[k]);
        ax_array_release(r);
    }
    /* tuple elements, several per target */
    {
        int32_t a0[10], d0[3] = {100, 200, 300};
        float a1[10], d1[3] = {0.5f, 0.25f, 0.125f};
        int64_t w0[3] = {100, 200, 300};
        double w1[3] = {0.5, 0.25, 0.125};
        for (int k = 0; k < 10; k++) {
            a0[k] = k * k;
            a1[k] = (float)k;
            w0[k % 3] += a0[k];
            w1[k % 3] += a1[k];
        }
        const void *ab[2] = {a0, a1}, *db[2] = {d0, d1};
        const ax_type *t = TUP(cx, AX_I32, AX_F32);
        ax_array *r = RUN(cx, ax_permute(add_pair, NULL, use_tuple(cx, t, 1, SH(3), db), mod3_ix, NULL,
                                         use_tuple(cx, t, 1, SH(10), ab)));
        if (r && SHAPE_IS(r, 1, 3)) {
            Chk c;
            CHK(&c, "permute of pairs");
            chk_arr_i(&c, r, 0, w0, 3);
            chk_arr_f(&c, r, 1, w1, 3, 0);
            chk_done(&c);
        }
        ax_array_release(r);
    }
    /* a target outside the defaults is a run-time index error */
    {
        int32_t a[6] = {1, 2, 3, 4, 5, 6};
        EXPECT_FAIL(cx, ax_permute(ax_fn_add, NULL, use_data(cx, AX_I32, 1, SH(6), a), plus5_ix, NULL,
                                   use_data(cx, AX_I32, 1, SH(6), a)), AX_ERR_INDEX);
    }
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

static ax_exp p_bin(ax_exp ix, void *env)
{
    return ax_ix1(ax_mod(ax_index_get(ix, 0), ax_i64(10)));
}
static ax_exp p_bin_ignore(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_eq(ax_rem(i, ax_i64(3)), ax_i64(0)), ax_ignore(1), ax_ix1(ax_rem(i, ax_i64(10))));
}
static ax_exp p_grid(ax_exp ix, void *env)
{
    return ax_ix2(ax_rem(ax_index_get(ix, 0), ax_i64(7)), ax_rem(ax_index_get(ix, 0), ax_i64(5)));
}
/* Commutative and associative, but not recognised by the generator:
 * combined with a compare-and-swap loop (one leaf) or a lock (several). */
static ax_exp c_addx(ax_exp n, ax_exp o, void *env) { return ax_sub(n, ax_neg(o)); }
static ax_exp c_pairx(ax_exp n, ax_exp o, void *env)
{
    return ax_tuple2(ax_sub(ax_get(n, 0), ax_neg(ax_get(o, 0))), ax_max(ax_get(o, 1), ax_get(n, 1)));
}
static ax_exp c_pairadd(ax_exp n, ax_exp o, void *env)
{
    return ax_tuple2(ax_add(ax_get(n, 0), ax_get(o, 0)), ax_min(ax_get(n, 1), ax_get(o, 1)));
}

static ax_acc b_perm(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int64_t n = v->sh[0];
    ax_acc src;
    switch (v->which) {
    case 0:   /* histogram, i32 add: an atomic fetch-add */
        src = ax_map(ax_fn_abs, NULL, input(cx, AX_I32, 1, SH(n), 80, 3));
        return ax_permute(ax_fn_add, NULL, input(cx, AX_I32, 1, SH(10), 81, 0), p_bin, NULL, src);
    case 1:   /* f64 add: compare-and-swap on the bits */
        return ax_permute(ax_fn_add, NULL, input(cx, AX_F64, 1, SH(10), 82, 0), p_bin, NULL,
                          input(cx, AX_F64, 1, SH(n), 83, 100));
    case 2:   /* a tuple element, componentwise: per-leaf atomics */
        return ax_permute(c_pairadd, NULL, input_n(cx, 2, (const ax_scalar[]){AX_I64, AX_F32}, 1, SH(10), 84, 5),
                          p_bin, NULL, input_n(cx, 2, (const ax_scalar[]){AX_I64, AX_F32}, 1, SH(n), 85, 1000));
    case 3:   /* an unrecognised commutative combiner on i16: CAS */
        return ax_permute(c_addx, NULL, input(cx, AX_I16, 1, SH(10), 86, 0), p_bin_ignore, NULL,
                          input(cx, AX_I16, 1, SH(n), 87, 100));
    case 4:   /* several leaves combined together: striped locks */
        return ax_permute(c_pairx, NULL, input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_U8}, 2, SH(7, 5), 88, 5),
                          p_grid, NULL, input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_U8}, 1, SH(n), 89, 100));
    case 5:   /* max on u64 (CAS), min on f32 (CAS) */
        return ax_atuple2(ax_permute(ax_fn_max, NULL, input(cx, AX_U64, 1, SH(10), 90, 0), p_bin, NULL,
                                     input(cx, AX_U64, 1, SH(n), 91, 1000000)),
                          ax_permute(ax_fn_min, NULL, input(cx, AX_F32, 1, SH(10), 92, 0), p_bin_ignore, NULL,
                                     input(cx, AX_F32, 1, SH(n), 93, 1000)));
    case 6:   /* bool or: fetch-or; i8 xor */
        return ax_atuple2(ax_permute(ax_fn_or, NULL, input(cx, AX_BOOL, 1, SH(10), 94, 0), p_bin, NULL,
                                     input(cx, AX_BOOL, 1, SH(n), 95, 1)),
                          ax_permute(ax_fn_bxor, NULL, input(cx, AX_I8, 1, SH(10), 96, 9), p_bin, NULL,
                                     input(cx, AX_I8, 1, SH(n), 97, 100)));
    default:  /* snd: the defaults stay */
        return ax_permute(ax_fn_snd, NULL, input(cx, AX_I32, 1, SH(10), 98, 9), p_bin, NULL,
                          input(cx, AX_I32, 1, SH(n), 99, 100));
    }
}

static ax_acc b_perm_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_perm, 8, NULL); }

DIFF_TEST(permute_collisions_under_concurrency)
{
    const int64_t sizes[] = {0, 1, 1001, 100003};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        char what[64];
        snprintf(what, sizeof what, "permute, size %lld", (long long)sizes[k]);
        SAME(what, b_perm_all, &e, 1e-9);   /* float sums in any order */
    }
}

DIFF_TEST(permute_large_arrays)
{
    if (ops_small()) {
        printf("skip permute_large_arrays: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    Env e = {1, &n, 0};
    SAME("permute histogram i32 1e6", b_perm, &e, 0);
    e.which = 1;
    SAME("permute histogram f64 1e6", b_perm, &e, 1e-9);
    e.which = 4;
    SAME("permute locks 1e6", b_perm, &e, 0);
}
