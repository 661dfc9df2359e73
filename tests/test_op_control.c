/*
 * Control flow: acond (branches of different shapes, the untaken branch
 * never run, tuples of arrays), awhile (zero and many iterations, over an
 * array tuple), array tuples and their projections, and the scalar while
 * loop (in map and generate, from a constant start, zero trips); the
 * counted loop ax_for (no, one and many steps, the step read by the body,
 * a tuple state, the count a parameter).
 *
 * Backends (tests/ops/ops.h): the OP_TESTs on every backend, against
 * values computed in plain C here; the DIFF_TESTs on the compiling
 * backends, against the interpreter: acond and awhile over scans on large
 * shapes, and while loops whose lanes leave at different trips (the CPU
 * backend's vectorised masked loops: a body that swaps its components,
 * two loops in a row, a loop in a condition's branch, f64 and u8 states).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"

static ax_exp rev_ix(ax_exp ix, void *env)
{
    ax_exp n = ax_index_get(ax_shape(acc_of(env)), 0);
    return ax_ix1(ax_sub(ax_sub(n, ax_i64(1)), ax_index_get(ix, 0)));
}

static ax_exp dbl_i64(ax_exp x, void *env) { return ax_mul(x, ax_i64(2)); }
static ax_exp inc_i32(ax_exp x, void *env) { return ax_add(x, ax_i32(1)); }
static ax_exp sum_le(ax_exp s, void *env) { return ax_le(s, ax_i64(*(const int64_t *)env)); }

static ax_exp scalar_of(ax_acc r0) { return ax_at(r0, ax_index(0, NULL)); }

OP_TEST(acond)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int64_t lo[7] = {1, 2, 3, -4, 0, 1, 2}, hi[7] = {10, 20, 30, 40, 50, 60, 70};
    ax_acc x[2] = {use_data(cx, AX_I64, 1, SH(7), lo), use_data(cx, AX_I64, 1, SH(7), hi)};
    for (int i = 0; i < 2; i++) {
        op_case();
        const int64_t *d = i ? hi : lo;
        int64_t sum = 0;
        for (int k = 0; k < 7; k++) sum += d[k];
        ax_exp c = ax_gt(scalar_of(ax_fold_all(ax_fn_add, NULL, ax_i64(0), x[i])), ax_i64(100));
        ax_array *r = RUN(cx, ax_acond(c, ax_map(dbl_i64, NULL, x[i]), ax_map(ax_fn_neg, NULL, x[i])));
        if (r && SHAPE_IS(r, 1, 7))
            for (int k = 0; k < 7; k++) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], sum > 100 ? 2 * d[k] : -d[k]);
        ax_array_release(r);
    }
    /* constant conditions, and branches of different shapes */
    ax_array *r = RUN(cx, ax_acond(ax_bool(true), x[0], ax_reshape(ax_ix1(ax_i64(3)), ax_unit(cx, ax_i64(0)))));
    if (r) SHAPE_IS(r, 1, 7);
    ax_array_release(r);
    int64_t three[3] = {9, 8, 7};
    r = RUN(cx, ax_acond(ax_bool(false), x[0], use_data(cx, AX_I64, 1, SH(3), three)));
    if (r && SHAPE_IS(r, 1, 3)) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[2], 7);
    ax_array_release(r);
    /* the untaken branch would fail: only the branch taken runs */
    ax_acc bad = ax_backpermute(ax_ix1(ax_i64(7)), rev_ix, &x[0], use_data(cx, AX_I64, 1, SH(3), three));
    r = RUN(cx, ax_acond(ax_lt(ax_size(x[0]), ax_i64(100)), x[1], bad));
    if (r && SHAPE_IS(r, 1, 7)) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[6], 70);
    ax_array_release(r);
    /* tuples of arrays */
    ax_acc t1 = ax_atuple2(x[0], ax_unit(cx, ax_f32(1.5f)));
    ax_acc t2 = ax_atuple2(use_data(cx, AX_I64, 1, SH(3), three), ax_unit(cx, ax_f32(-2)));
    for (int i = 0; i < 2; i++) {
        ax_acc t = ax_acond(ax_const(cx, ax_bool(i == 0)), t1, t2);
        ax_array *out[2] = {NULL, NULL};
        int n = RUN_N(cx, t, out, 2);
        CHECKF(n == 2, "ax_run_n: %d: %s", n, ax_error(cx));
        if (n == 2) {
            if (SHAPE_IS(out[0], 1, i == 0 ? 7 : 3))
                CHECK_EQ_I(((int64_t *)ax_array_data(out[0], 0))[0], i == 0 ? lo[0] : three[0]);
            if (SHAPE_IS(out[1], 0, 0)) CHECK(((float *)ax_array_data(out[1], 0))[0] == (i == 0 ? 1.5f : -2.0f));
            ax_array_release(out[0]);
            ax_array_release(out[1]);
        }
        /* projection of a computed tuple */
        r = RUN(cx, ax_aget(t, 1));
        if (r && SHAPE_IS(r, 0, 0)) CHECK(((float *)ax_array_data(r, 0))[0] == (i == 0 ? 1.5f : -2.0f));
        ax_array_release(r);
    }
    op_ctx_done(cx);
}

/* awhile: double a vector while its sum is at most a bound */
static ax_acc aw_cond(ax_acc x, void *env) { return ax_map(sum_le, env, ax_fold_all(ax_fn_add, NULL, ax_i64(0), x)); }
static ax_acc aw_body(ax_acc x, void *env) { return ax_map(dbl_i64, NULL, x); }
/* the same with an iteration counter: x = (vector, rank-0 i32) */
static ax_acc aw_cond2(ax_acc x, void *env) { return aw_cond(ax_aget(x, 0), env); }
static ax_acc aw_body2(ax_acc x, void *env)
{
    return ax_atuple2(ax_map(dbl_i64, NULL, ax_aget(x, 0)), ax_map(inc_i32, NULL, ax_aget(x, 1)));
}

OP_TEST(awhile)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int64_t v[5] = {1, 2, 3, 0, -1};
    static const int64_t bounds[] = {1000000, 4 /* 0 iterations: the sum is 5 */, 5, 1LL << 40};
    for (int t = 0; t < NELEM(bounds); t++) {
        int64_t bound = bounds[t], w[5], sum = 0;
        int iters = 0;
        memcpy(w, v, sizeof w);
        for (int k = 0; k < 5; k++) sum += w[k];
        while (sum <= bound) {
            sum = 0;
            for (int k = 0; k < 5; k++) { w[k] *= 2; sum += w[k]; }
            iters++;
        }
        ax_acc x = use_data(cx, AX_I64, 1, SH(5), v);
        ax_array *r = RUN(cx, ax_awhile(aw_cond, aw_body, &bound, x));
        if (r && SHAPE_IS(r, 1, 5))
            for (int k = 0; k < 5; k++) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], w[k]);
        ax_array_release(r);
        ax_array *out[2] = {NULL, NULL};
        int n = RUN_N(cx, ax_awhile(aw_cond2, aw_body2, &bound, ax_atuple2(x, ax_unit(cx, ax_i32(0)))), out, 2);
        CHECKF(n == 2, "ax_run_n: %d: %s", n, ax_error(cx));
        if (n == 2) {
            if (SHAPE_IS(out[0], 1, 5))
                for (int k = 0; k < 5; k++) CHECK_EQ_I(((int64_t *)ax_array_data(out[0], 0))[k], w[k]);
            if (SHAPE_IS(out[1], 0, 0)) CHECK_EQ_I(((int32_t *)ax_array_data(out[1], 0))[0], iters);
            ax_array_release(out[0]);
            ax_array_release(out[1]);
        }
    }
    op_ctx_done(cx);
}

/* ax_for: x[k] = x[k] * 2 + step at each step (the step read in the
 * body's function), and a counter of steps beside it in a tuple state;
 * the body finds its context from its argument (ax_acc_ctx). */
typedef struct ForEnv {
    ax_ctx *cx;
    bool ctx_ok;
} ForEnv;

static ax_exp for_dbl_plus(ax_exp x, void *env) { return ax_add(ax_mul(x, ax_i64(2)), *(const ax_exp *)env); }
static ax_exp for_inc(ax_exp x, void *env) { (void)env; return ax_add(x, ax_i32(1)); }

static ax_acc for_step(ax_exp step, ax_acc st, void *env)
{
    ForEnv *e = env;
    e->ctx_ok &= ax_acc_ctx(st) == e->cx;
    ax_acc v = ax_map(for_dbl_plus, &step, ax_aget(st, 0));
    return ax_atuple2(v, ax_map(for_inc, NULL, ax_aget(st, 1)));
}

static ax_acc for_step1(ax_exp step, ax_acc x, void *env)
{
    (void)env;
    return ax_map(for_dbl_plus, &step, x);
}

OP_TEST(for_loop)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    const int64_t v[4] = {1, -2, 3, 0};
    static const int64_t steps[] = {0, 1, 7, -3};
    for (int t = 0; t < NELEM(steps); t++) {
        int64_t w[4];
        memcpy(w, v, sizeof w);
        for (int64_t s = 0; s < steps[t]; s++)
            for (int k = 0; k < 4; k++) w[k] = w[k] * 2 + s;
        int32_t count = steps[t] > 0 ? (int32_t)steps[t] : 0;
        ax_acc x = use_data(cx, AX_I64, 1, SH(4), v);
        ForEnv fe = {cx, true};
        ax_array *out[2] = {NULL, NULL};
        int n = RUN_N(cx, ax_for(ax_i64(steps[t]), for_step, &fe, ax_atuple2(x, ax_unit(cx, ax_i32(0)))), out, 2);
        CHECK(fe.ctx_ok);
        CHECKF(n == 2, "ax_run_n: %d: %s", n, ax_error(cx));
        if (n == 2) {
            if (SHAPE_IS(out[0], 1, 4))
                for (int k = 0; k < 4; k++) CHECK_EQ_I(((int64_t *)ax_array_data(out[0], 0))[k], w[k]);
            if (SHAPE_IS(out[1], 0, 0)) CHECK_EQ_I(((int32_t *)ax_array_data(out[1], 0))[0], count);
            ax_array_release(out[0]);
            ax_array_release(out[1]);
        }
        /* the count as an i32 expression, a single array as the state */
        ax_array *r = RUN(cx, ax_for(ax_i32((int32_t)steps[t]), for_step1, NULL, x));
        if (r && SHAPE_IS(r, 1, 4))
            for (int k = 0; k < 4; k++) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], w[k]);
        ax_array_release(r);
    }
    op_ctx_done(cx);
}

/* ax_for's count is data when it is a parameter: one compile for every n;
 * a count that is not an integer is a build error naming ax_for. */
BE_TEST(for_loop_count_is_a_parameter)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int64_t v[3] = {1, 2, 3};
    ax_acc x = use_data(cx, AX_I64, 1, SH(3), v);
    ax_program *p = ax_compile(cx, ax_for(ax_param_exp(cx, 0, ax_type_scalar(AX_I64)), for_step1, NULL, x));
    CHECKF(p != NULL, "%s", ax_error(cx));
    for (int64_t n = 0; p && n < 4; n++) {
        ax_array *arg = ax_array_wrap(cx, AX_I64, 0, NULL, &n), *r = NULL;
        int got = ax_program_run_with(p, &arg, 1, &r, 1);
        CHECKF(got == 1, "%s", ax_error(cx));
        int64_t w[3] = {1, 2, 3};
        for (int64_t s = 0; s < n; s++)
            for (int k = 0; k < 3; k++) w[k] = w[k] * 2 + s;
        if (got == 1 && SHAPE_IS(r, 1, 3))
            for (int k = 0; k < 3; k++) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], w[k]);
        ax_array_release(r);
        ax_array_release(arg);
    }
    ax_program_free(p);
    CHECK(ax_for(ax_f32(2), for_step1, NULL, x) == NULL);
    CHECKF(strstr(ax_error(cx), "ax_for") != NULL, "%s", ax_error(cx));
    ax_clear_error(cx);
    CHECK(ax_acc_ctx(NULL) == NULL);
    op_ctx_done(cx);
}

OP_TEST(atuple)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t a[7] = {1, 2, 3, 4, 5, 6, 7};
    double m[6] = {0.5, 1, 1.5, 2, 2.5, 3};
    ax_acc A = use_data(cx, AX_I32, 1, SH(7), a), M = use_data(cx, AX_F64, 2, SH(2, 3), m);
    ax_acc B = ax_unit(cx, ax_bool(true));
    ax_acc t = ax_atuple(3, (ax_acc[]){A, M, B});
    ax_array *out[4] = {NULL, NULL, NULL, NULL};
    int n = RUN_N(cx, t, out, 4);
    CHECKF(n == 3, "ax_run_n: %d: %s", n, ax_error(cx));
    if (n == 3) {
        if (SHAPE_IS(out[0], 1, 7)) CHECK(memcmp(ax_array_data(out[0], 0), a, sizeof a) == 0);
        if (SHAPE_IS(out[1], 2, 2, 3)) CHECK(memcmp(ax_array_data(out[1], 0), m, sizeof m) == 0);
        if (SHAPE_IS(out[2], 0, 0)) CHECK_EQ_I(((uint8_t *)ax_array_data(out[2], 0))[0], 1);
    }
    for (int i = 0; i < 4; i++) ax_array_release(out[i]);
    ax_array *r = RUN(cx, ax_aget(t, 1));
    if (r && SHAPE_IS(r, 2, 2, 3)) CHECK(memcmp(ax_array_data(r, 0), m, sizeof m) == 0);
    ax_array_release(r);
    /* nested tuples come out flattened, in order */
    ax_acc nest = ax_atuple2(ax_atuple2(M, A), ax_map(ax_fn_neg, NULL, A));
    ax_array *o3[3] = {NULL, NULL, NULL};
    n = RUN_N(cx, nest, o3, 3);
    CHECKF(n == 3, "ax_run_n (nested): %d: %s", n, ax_error(cx));
    if (n == 3) {
        SHAPE_IS(o3[0], 2, 2, 3);
        SHAPE_IS(o3[1], 1, 7);
        if (SHAPE_IS(o3[2], 1, 7))
            for (int k = 0; k < 7; k++) CHECK_EQ_I(((int32_t *)ax_array_data(o3[2], 0))[k], -a[k]);
    }
    for (int i = 0; i < 3; i++) ax_array_release(o3[i]);
    r = RUN(cx, ax_aget(ax_aget(nest, 0), 1));
    if (r && SHAPE_IS(r, 1, 7)) CHECK(memcmp(ax_array_data(r, 0), a, sizeof a) == 0);
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ================================================================ the scalar while loop */

/* Collatz: (n, steps) while n != 1 */
static ax_exp collatz_cond(ax_exp s, void *env) { return ax_ne(ax_get(s, 0), ax_i64(1)); }
static ax_exp collatz_body(ax_exp s, void *env)
{
    ax_exp n = ax_get(s, 0);
    ax_exp next = ax_cond(ax_eq(ax_rem(n, ax_i64(2)), ax_i64(0)), ax_quot(n, ax_i64(2)),
                          ax_add(ax_mul(n, ax_i64(3)), ax_i64(1)));
    return ax_tuple2(next, ax_add(ax_get(s, 1), ax_i32(1)));
}
static ax_exp collatz(ax_exp n, void *env)
{
    return ax_get(ax_while(collatz_cond, collatz_body, NULL, ax_tuple2(n, ax_i32(0))), 1);
}
/* the smallest multiple of 3 that is >= i, from a constant start */
static ax_exp lt_env(ax_exp x, void *env) { return ax_lt(x, ax_i64(*(const int64_t *)env)); }
static ax_exp plus3(ax_exp x, void *env) { return ax_add(x, ax_i64(3)); }
typedef struct WEnv { ax_ctx *cx; } WEnv;
static ax_exp up3_cond(ax_exp x, void *env) { return ax_lt(ax_get(x, 0), ax_get(x, 1)); }
static ax_exp up3_body(ax_exp x, void *env) { return ax_tuple2(ax_add(ax_get(x, 0), ax_i64(3)), ax_get(x, 1)); }
static ax_exp up3(ax_exp ix, void *env)
{
    ax_ctx *cx = ((const WEnv *)env)->cx;
    ax_exp init = ax_tuple2(ax_const(cx, ax_i64(0)), ax_index_get(ix, 0));
    return ax_get(ax_while(up3_cond, up3_body, NULL, init), 0);
}

OP_TEST(scalar_while)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int64_t n = 1001, *in = alloc_i64(n), *want = alloc_i64(n);
    for (int64_t k = 0; k < n; k++) {
        in[k] = k + 1;
        int64_t v = k + 1, steps = 0;
        while (v != 1) { v = v % 2 == 0 ? v / 2 : 3 * v + 1; steps++; }
        want[k] = steps;
    }
    ax_array *r = RUN(cx, ax_map(collatz, NULL, use_data(cx, AX_I64, 1, SH(n), in)));
    if (r && SHAPE_IS(r, 1, n)) {
        Chk c;
        CHK(&c, "Collatz steps");
        CHECK(ax_array_component_type(r, 0) == AX_I32);
        chk_arr_i(&c, r, 0, want, n);
        chk_done(&c);
    }
    ax_array_release(r);
    WEnv we = {cx};
    r = RUN(cx, ax_generate(cx, ax_ix1(ax_i64(10)), up3, &we));
    if (r && SHAPE_IS(r, 1, 10))
        for (int k = 0; k < 10; k++) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[k], (k + 2) / 3 * 3);
    ax_array_release(r);
    /* a loop that never runs, and one over a constant made a term */
    int64_t bound = 0;
    r = RUN(cx, ax_unit(cx, ax_while(lt_env, plus3, &bound, ax_const(cx, ax_i64(5)))));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], 5);
    ax_array_release(r);
    bound = 100;
    r = RUN(cx, ax_unit(cx, ax_while(lt_env, plus3, &bound, ax_const(cx, ax_i64(5)))));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], 101);
    ax_array_release(r);
    free(in);
    free(want);
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

/* while x[0] < 100000 (and x is not empty), x = x + scanl1 (+) x: x[0]
 * doubles, so about 17 iterations (the other elements wrap around). */
static ax_acc wc(ax_acc x, void *env)
{
    ax_ctx *cx = env;
    return ax_unit(cx, ax_and(ax_gt(ax_size(x), ax_i64(0)), ax_lt(ax_at_linear(x, ax_i64(0)), ax_i64(100000))));
}
static ax_exp plus1(ax_exp x, void *env) { return ax_add(ax_abs(x), ax_i64(1)); }
static ax_acc wb(ax_acc x, void *env) { return ax_zip_with(ax_fn_add, NULL, x, ax_scanl1(ax_fn_add, NULL, x)); }

static ax_acc b_control(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_acc a = input(cx, AX_I64, 1, v->sh, 120, 3);
    a = ax_map(plus1, NULL, a);
    ax_acc loop = ax_awhile(wc, wb, cx, ax_map(ax_fn_id, NULL, a));
    ax_exp c = ax_gt(ax_size(a), ax_i64(500));
    return ax_acond(c, ax_atuple2(loop, a), ax_atuple2(a, loop));
}

DIFF_TEST(acond_awhile_over_scans)
{
    const int64_t sizes[] = {0, 1, 1001, 100000};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        SAME("acond/awhile", b_control, &e, 0);
    }
}

/* While loops run across lanes (tests/ops: ops_lanes; 16 and 128 lanes),
 * in generate and in map. */
static ax_acc b_lanes(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    if (v->which) return ax_map(ops_lanes, NULL, input(cx, AX_F32, v->rank, v->sh, 13, 40));
    ax_exp sh = ax_ix1(ax_i64(v->sh[0]));
    if (v->rank == 2) sh = ax_ix2(ax_i64(v->sh[0]), ax_i64(v->sh[1]));
    if (v->rank == 3) sh = ax_ix3(ax_i64(v->sh[0]), ax_i64(v->sh[1]), ax_i64(v->sh[2]));
    return ax_generate(cx, sh, ops_lanes_at, NULL);
}
static ax_acc b_lanes_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_lanes, 2, NULL); }

DIFF_TEST(scalar_while_loops_across_lanes)
{
    for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        SAME("while across lanes", b_lanes_all, &e, 0);
    }
}

