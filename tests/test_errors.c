/*
 * Errors and safety (docs/ARCHITECTURE.md, "Conventions", the error model in axle.h's header
 * comment).  Every builder misuse and every run-time fault is triggered on
 * purpose; each test checks that the call fails (NULL / -1), that the
 * status is the right ax_status, that the message names the operation (and
 * the types where they matter), and then that the same context still runs a
 * correct program (a small dot product checked against a C loop).  All on
 * the reference interpreter, and leak-free under ASan/LeakSanitizer.
 * Longer than most files: one section per operation's misuses, all
 * checked the same way (status, message, context still usable).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"          /* white-box: cx->mem_used, for the memory limit */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static ax_ctx *new_ctx(void)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    return ax_ctx_new(&o);
}

static const char *status_name(ax_status s)
{
    static const char *const names[] = {"AX_OK", "AX_ERR_BUILD", "AX_ERR_INDEX", "AX_ERR_DIVZERO",
                                        "AX_ERR_SHAPE", "AX_ERR_NOMEM", "AX_ERR_COMPILE",
                                        "AX_ERR_BACKEND", "AX_ERR_ARG"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

/* Case-insensitive substring search. */
static bool has_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return true;
    }
    return n == 0;
}

/* Checks the context's status and that its message contains each of the
 * NULL-terminated strings (case-sensitive: operation and type names). */
static void check_err_(ax_ctx *cx, const char *file, int line, int want, ...)
{
    ax_status st = ax_status_of(cx);
    const char *msg = ax_error(cx);
    if ((int)st != want) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: status is %s, expected %s (message: \"%s\")\n", file, line,
                status_name(st), status_name((ax_status)want), msg);
    }
    va_list ap;
    va_start(ap, want);
    for (const char *s; (s = va_arg(ap, const char *));)
        if (!strstr(msg, s)) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: message \"%s\" does not mention \"%s\"\n", file, line, msg, s);
        }
    va_end(ap);
}
#define CHECK_ERR(cx, ...) check_err_((cx), __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)

/* Runs a and expects failure with the status and message parts given. */
static void expect_fail_(ax_ctx *cx, ax_acc a, const char *file, int line, int want, ...)
{
    ax_array *r = ax_run(cx, a);
    if (r) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: ax_run succeeded, expected %s\n", file, line, status_name((ax_status)want));
        ax_array_release(r);
        return;
    }
    ax_status st = ax_status_of(cx);
    const char *msg = ax_error(cx);
    if ((int)st != want) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: status is %s, expected %s (message: \"%s\")\n", file, line,
                status_name(st), status_name((ax_status)want), msg);
    }
    if (!*msg) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: the failure has an empty message\n", file, line);
    }
    va_list ap;
    va_start(ap, want);
    for (const char *s; (s = va_arg(ap, const char *));)
        if (!strstr(msg, s)) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: message \"%s\" does not mention \"%s\"\n", file, line, msg, s);
        }
    va_end(ap);
}
#define EXPECT_FAIL(cx, a, ...) expect_fail_((cx), (a), __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)

/* The context runs a correct program: a dot product of 16 elements,
 * checked against a C loop; afterwards no error is left behind. */
static void check_usable_(ax_ctx *cx, const char *file, int line)
{
    enum { N = 16 };
    float x[N], y[N];
    double want = 0;
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i + 1);
        y[i] = (float)(2 * i - 7);
        want += (double)x[i] * y[i];
    }
    int64_t n = N;
    ax_array *xa = ax_array_from(cx, AX_F32, 1, &n, x);
    ax_array *ya = ax_array_from(cx, AX_F32, 1, &n, y);
    if (!xa || !ya) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: context not usable: ax_array_from failed: %s\n", file, line, ax_error(cx));
        ax_array_release(xa);
        ax_array_release(ya);
        return;
    }
    ax_acc dot = ax_fold(ax_fn_add, NULL, ax_f32(0),
                         ax_zip_with(ax_fn_mul, NULL, ax_use(cx, xa), ax_use(cx, ya)));
    ax_array *r = ax_run(cx, dot);
    if (!r) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: context not usable: the dot product failed: %s (%s)\n", file, line,
                ax_error(cx), status_name(ax_status_of(cx)));
    } else {
        if (ax_array_rank(r) != 0 || ax_array_size(r) != 1 || ax_array_component_type(r, 0) != AX_F32) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: the dot product has the wrong shape or type\n", file, line);
        } else {
            float got = *(const float *)ax_array_data(r, 0);
            if ((double)got != want) {
                harness_failed_checks++;
                fprintf(stderr, "%s:%d: dot product %g, expected %g\n", file, line, (double)got, want);
            }
        }
        if (ax_status_of(cx) != AX_OK || ax_error(cx)[0] != 0) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: after a successful run: status %s, message \"%s\" (expected AX_OK, \"\")\n",
                    file, line, status_name(ax_status_of(cx)), ax_error(cx));
        }
    }
    ax_array_release(r);
    ax_array_release(xa);
    ax_array_release(ya);
}
#define CHECK_USABLE(cx) check_usable_((cx), __FILE__, __LINE__)

static ax_array *vec_f32(ax_ctx *cx, int64_t n, const float *v) { return ax_array_from(cx, AX_F32, 1, &n, v); }
static ax_array *vec_i32(ax_ctx *cx, int64_t n, const int32_t *v) { return ax_array_from(cx, AX_I32, 1, &n, v); }

static ax_array *mat_f32(ax_ctx *cx, int64_t r, int64_t c)
{
    int64_t n = r * c;
    float *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (float)i;
    ax_array *a = ax_array_from(cx, AX_F32, 2, (int64_t[]){r, c}, v);
    free(v);
    return a;
}

static const float F8[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* ------------------------------------------------------------ callbacks */

typedef struct { bool seen_invalid; } Probe;

/* x (f32) + 1 (i32): a type mismatch. */
static ax_exp add_f32_i32(ax_exp x, void *env)
{
    ax_exp r = ax_add(x, ax_i32(1));
    if (env) ((Probe *)env)->seen_invalid = !ax_exp_ok(r);
    return r;
}
static ax_exp twice(ax_exp x, void *env) { return ax_add(x, x); }
static ax_exp get5(ax_exp x, void *env) { return ax_get(x, 5); }
static ax_exp add_to_f64(ax_exp x, ax_exp y, void *env) { return ax_cvt(ax_add(x, y), AX_F64); }
static ax_exp cond_mixed(ax_exp x, void *env) { return ax_cond(ax_gt(x, ax_f32(0)), x, ax_i32(1)); }
static ax_exp cond_nonbool(ax_exp x, void *env) { return ax_cond(x, x, x); }
static ax_exp pred_i32(ax_exp x, void *env) { return ax_cvt(x, AX_I32); }
static ax_exp pred_pos(ax_exp x, void *env) { return ax_gt(x, ax_f32(3)); }
static ax_exp ix_rank2(ax_exp ix, void *env) { ax_exp i = ax_index_get(ix, 0); return ax_ix2(i, i); }
static ax_exp gen_f32(ax_exp ix, void *env) { return ax_cvt(ax_index_get(ix, 0), AX_F32); }
static ax_exp gen_f32_2(ax_exp ix, void *env)
{
    return ax_cvt(ax_add(ax_index_get(ix, 0), ax_index_get(ix, 1)), AX_F32);
}
static ax_exp sten_first(const ax_exp *xs, void *env) { return xs[0]; }
static ax_exp mul_const_bad(ax_exp x, void *env) { return ax_mul(x, *(const ax_exp *)env); }
static ax_exp return_env(ax_exp x, void *env) { return *(const ax_exp *)env; }

/* ================================================================ misuse */

TEST(build_type_mismatch_in_map)
{
    ax_ctx *cx = new_ctx();
    ax_array *xa = vec_f32(cx, 8, F8);
    Probe pr = {false};
    ax_acc m = ax_map(add_f32_i32, &pr, ax_use(cx, xa));
    CHECK(m == NULL);
    CHECK(pr.seen_invalid);
    /* The error is pending (sticky) before ax_run. */
    CHECK_ERR(cx, AX_ERR_BUILD, "ax_add", "f32", "i32");
    /* Invalid terms propagate without a new message. */
    ax_acc f = ax_fold(ax_fn_add, NULL, ax_f32(0), m);
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_add", "f32", "i32");
    CHECK_USABLE(cx);
    ax_array_release(xa);
    ax_ctx_free(cx);
}

TEST(build_rank_mismatch_zip_with)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8), *m = mat_f32(cx, 2, 4);
    ax_acc z = ax_zip_with(ax_fn_add, NULL, ax_use(cx, v), ax_use(cx, m));
    CHECK(z == NULL);
    EXPECT_FAIL(cx, z, AX_ERR_BUILD, "ax_zip_with", "rank");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_array_release(m);
    ax_ctx_free(cx);
}

TEST(build_null_array_operand)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    /* No context can be known from NULL alone: the builders return NULL,
     * and ax_run reports a NULL computation. */
    ax_acc m = ax_map(twice, NULL, NULL);
    CHECK(m == NULL);
    ax_acc f = ax_fold(ax_fn_add, NULL, ax_f32(0), m);
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "NULL");
    CHECK_USABLE(cx);

    /* With the context known from another operand the message names the
     * operation. */
    ax_acc z = ax_zip_with(ax_fn_add, NULL, NULL, ax_use(cx, v));
    CHECK(z == NULL);
    EXPECT_FAIL(cx, z, AX_ERR_BUILD, "ax_zip_with", "NULL");
    CHECK_USABLE(cx);

    ax_acc u = ax_use(cx, NULL);
    CHECK(u == NULL);
    CHECK_ERR(cx, AX_ERR_BUILD, "ax_use");
    EXPECT_FAIL(cx, ax_map(twice, NULL, u), AX_ERR_BUILD, "ax_use", "NULL");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_null_callback)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc m = ax_map(NULL, NULL, ax_use(cx, v));
    CHECK(m == NULL);
    EXPECT_FAIL(cx, m, AX_ERR_BUILD, "ax_map", "NULL");
    CHECK_USABLE(cx);

    ax_acc f = ax_fold(NULL, NULL, ax_f32(0), ax_use(cx, v));
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_fold", "NULL");
    CHECK_USABLE(cx);

    ax_acc g = ax_generate(cx, ax_ix1(ax_i64(4)), NULL, NULL);
    CHECK(g == NULL);
    EXPECT_FAIL(cx, g, AX_ERR_BUILD, "ax_generate", "NULL");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_get_out_of_range_on_pair)
{
    ax_ctx *cx = new_ctx();
    const ax_type *pt[2] = {ax_type_scalar(AX_F32), ax_type_scalar(AX_I32)};
    const ax_type *pair = ax_type_tuple(cx, 2, pt);
    REQUIRE(pair);
    float a[3] = {1, 2, 3};
    int32_t b[3] = {4, 5, 6};
    const void *bufs[2] = {a, b};
    int64_t n = 3;
    ax_array *pa = ax_array_from_n(cx, pair, 1, &n, bufs);
    REQUIRE(pa);
    ax_acc m = ax_map(get5, NULL, ax_use(cx, pa));
    CHECK(m == NULL);
    EXPECT_FAIL(cx, m, AX_ERR_BUILD, "ax_get", "5", "(f32, i32)");
    CHECK_USABLE(cx);
    ax_array_release(pa);
    ax_ctx_free(cx);
}

TEST(build_aget_out_of_range)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc t = ax_atuple2(ax_use(cx, v), ax_map(twice, NULL, ax_use(cx, v)));
    REQUIRE(t);
    ax_acc g = ax_aget(t, 2);
    CHECK(g == NULL);
    EXPECT_FAIL(cx, g, AX_ERR_BUILD, "ax_aget", "2");
    CHECK_USABLE(cx);
    /* Negative too. */
    t = ax_atuple2(ax_use(cx, v), ax_use(cx, v));
    CHECK(ax_aget(t, -1) == NULL);
    EXPECT_FAIL(cx, ax_aget(t, -1), AX_ERR_BUILD, "ax_aget");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_fold_function_type)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc f = ax_fold(add_to_f64, NULL, ax_f32(0), ax_use(cx, v));
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_fold", "f64", "f32");
    CHECK_USABLE(cx);
    /* The initial value of another type than the elements. */
    f = ax_fold(ax_fn_add, NULL, ax_i32(0), ax_use(cx, v));
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_fold", "i32", "f32");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_cond_branch_types)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc m = ax_map(cond_mixed, NULL, ax_use(cx, v));
    CHECK(m == NULL);
    EXPECT_FAIL(cx, m, AX_ERR_BUILD, "ax_cond", "f32", "i32");
    CHECK_USABLE(cx);
    m = ax_map(cond_nonbool, NULL, ax_use(cx, v));
    CHECK(m == NULL);
    EXPECT_FAIL(cx, m, AX_ERR_BUILD, "ax_cond", "f32", "bool");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_callback_wrong_type)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc f = ax_filter(pred_i32, NULL, ax_use(cx, v));
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_filter", "i32", "bool");
    CHECK_USABLE(cx);
    ax_array *fr = RUN(cx, ax_filter(pred_pos, NULL, ax_use(cx, v)));
    if (fr) {
        CHECK_EQ_I(ax_array_size(fr), 5);
        CHECK(((const float *)ax_array_data(fr, 0))[0] == 4);
    }
    ax_array_release(fr);

    ax_acc b = ax_backpermute(ax_ix1(ax_i64(4)), ix_rank2, NULL, ax_use(cx, v));
    CHECK(b == NULL);
    EXPECT_FAIL(cx, b, AX_ERR_BUILD, "ax_backpermute", "ix2", "ix1");
    CHECK_USABLE(cx);

    /* ax_permute's index function: ix2 into a vector of defaults. */
    ax_acc p = ax_permute(ax_fn_add, NULL, ax_use(cx, v), ix_rank2, NULL, ax_use(cx, v));
    CHECK(p == NULL);
    EXPECT_FAIL(cx, p, AX_ERR_BUILD, "ax_permute", "ix2", "ix1");
    CHECK_USABLE(cx);

    ax_acc g = ax_generate(cx, ax_i64(10), gen_f32, NULL);
    CHECK(g == NULL);
    EXPECT_FAIL(cx, g, AX_ERR_BUILD, "ax_generate", "i64");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_slice_spec_rank)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8), *m = mat_f32(cx, 3, 4);
    /* Two ax_all for a vector. */
    ax_slice rs[2] = {ax_all(), ax_all()};
    ax_acc r = ax_replicate(2, rs, ax_use(cx, v));
    CHECK(r == NULL);
    EXPECT_FAIL(cx, r, AX_ERR_BUILD, "ax_replicate", "rank");
    CHECK_USABLE(cx);
    /* One specifier for a matrix. */
    ax_slice ss[1] = {ax_fixed(ax_i64(0))};
    ax_acc s = ax_slice_(1, ss, ax_use(cx, m));
    CHECK(s == NULL);
    EXPECT_FAIL(cx, s, AX_ERR_BUILD, "ax_slice_", "rank");
    CHECK_USABLE(cx);
    /* Three for a matrix. */
    ax_slice s3[3] = {ax_all(), ax_all(), ax_fixed(ax_i64(0))};
    s = ax_slice_(3, s3, ax_use(cx, m));
    CHECK(s == NULL);
    EXPECT_FAIL(cx, s, AX_ERR_BUILD, "ax_slice_");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_array_release(m);
    ax_ctx_free(cx);
}

TEST(build_stencil_even_size)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    int size[1] = {2};
    ax_acc s = ax_stencil(sten_first, NULL, size, ax_clamp(), ax_use(cx, v));
    CHECK(s == NULL);
    EXPECT_FAIL(cx, s, AX_ERR_BUILD, "ax_stencil", "odd");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_fold_rank0)
{
    ax_ctx *cx = new_ctx();
    ax_acc f = ax_fold(ax_fn_add, NULL, ax_f32(0), ax_unit(cx, ax_f32(1)));
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_fold", "rank");
    CHECK_USABLE(cx);
    f = ax_fold1(ax_fn_add, NULL, ax_unit(cx, ax_f32(1)));
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_fold1", "rank");
    CHECK_USABLE(cx);
    ax_ctx_free(cx);
}

TEST(build_constant_mismatch_used_later)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_exp bad = ax_add(ax_f32(1), ax_i32(2));
    CHECK(!ax_exp_ok(bad));
    CHECK(ax_exp_ctx(bad) == NULL);
    /* No context yet: nothing recorded anywhere. */
    CHECK(ax_status_of(cx) == AX_OK);
    /* Used in an operation inside a map: the message names ax_add. */
    ax_acc m = ax_map(mul_const_bad, &bad, ax_use(cx, v));
    CHECK(m == NULL);
    EXPECT_FAIL(cx, m, AX_ERR_BUILD, "ax_add", "f32", "i32");
    CHECK_USABLE(cx);
    /* Returned directly by the callback. */
    m = ax_map(return_env, &bad, ax_use(cx, v));
    CHECK(m == NULL);
    EXPECT_FAIL(cx, m, AX_ERR_BUILD, "ax_add", "f32", "i32");
    CHECK_USABLE(cx);
    /* As a fold's initial value. */
    ax_acc f = ax_fold(ax_fn_add, NULL, bad, ax_use(cx, v));
    CHECK(f == NULL);
    EXPECT_FAIL(cx, f, AX_ERR_BUILD, "ax_add", "f32", "i32");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(build_mixing_contexts)
{
    ax_ctx *c1 = new_ctx(), *c2 = new_ctx();
    ax_array *a1 = vec_f32(c1, 8, F8), *a2 = vec_f32(c2, 8, F8);
    ax_acc u = ax_use(c1, a2);
    CHECK(u == NULL);
    EXPECT_FAIL(c1, u, AX_ERR_BUILD, "ax_use", "another context");
    CHECK_USABLE(c1);

    ax_acc z = ax_zip_with(ax_fn_add, NULL, ax_use(c1, a1), ax_use(c2, a2));
    CHECK(z == NULL);
    EXPECT_FAIL(c1, z, AX_ERR_BUILD, "ax_zip_with", "another context");
    CHECK_USABLE(c1);

    /* Running a computation of c2 on c1. */
    ax_acc m2 = ax_map(twice, NULL, ax_use(c2, a2));
    REQUIRE(m2);
    EXPECT_FAIL(c1, m2, AX_ERR_BUILD, "another context");
    CHECK_USABLE(c1);
    /* c2 is unaffected. */
    CHECK(ax_status_of(c2) == AX_OK);
    ax_array *r = RUN(c2, m2);
    if (r) {
        const float *d = ax_array_data(r, 0);
        for (int i = 0; i < 8; i++) CHECK(d[i] == 2 * F8[i]);
    }
    ax_array_release(r);
    CHECK_USABLE(c2);
    ax_array_release(a1);
    ax_array_release(a2);
    ax_ctx_free(c1);
    ax_ctx_free(c2);
}

TEST(arg_run_of_tuple)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc t = ax_atuple2(ax_use(cx, v), ax_map(twice, NULL, ax_use(cx, v)));
    REQUIRE(t);
    EXPECT_FAIL(cx, t, AX_ERR_ARG, "ax_run", "ax_run_n");
    CHECK_USABLE(cx);
    /* The same tuple runs with ax_run_n. */
    ax_array *out[2] = {NULL, NULL};
    int n = ax_run_n(cx, t, out, 2);
    CHECK_EQ_I(n, 2);
    if (n == 2) {
        const float *d0 = ax_array_data(out[0], 0), *d1 = ax_array_data(out[1], 0);
        for (int i = 0; i < 8; i++) CHECK(d0[i] == F8[i] && d1[i] == 2 * F8[i]);
    }
    for (int i = 0; i < 2; i++) ax_array_release(out[i]);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(arg_array_wrap_negative_extent)
{
    ax_ctx *cx = new_ctx();
    float buf[4] = {0};
    ax_array *a = ax_array_wrap(cx, AX_F32, 2, (int64_t[]){2, -3}, buf);
    CHECK(a == NULL);
    CHECK_ERR(cx, AX_ERR_SHAPE, "ax_array_wrap", "-3");
    ax_array_release(a);
    /* The failure was reported by the NULL result; the context runs the
     * next program. */
    CHECK_USABLE(cx);
    ax_ctx_free(cx);
}

/* ============================================================ run-time */

/* Index at -> bad, every other index -> itself; reads from src. */
typedef struct { int64_t at, bad; ax_acc src; } Bad;

/* ix -> the index itself, except ix == at which becomes bad. */
static ax_exp pick(ax_exp i, const Bad *b) { return ax_cond(ax_eq(i, ax_i64(b->at)), ax_i64(b->bad), i); }
static ax_exp gen_at(ax_exp ix, void *env)
{
    const Bad *b = env;
    return ax_at(b->src, ax_ix1(pick(ax_index_get(ix, 0), b)));
}
static ax_exp gen_at_linear(ax_exp ix, void *env)
{
    const Bad *b = env;
    return ax_at_linear(b->src, pick(ax_index_get(ix, 0), b));
}
static ax_exp perm_ix(ax_exp ix, void *env) { return ax_ix1(pick(ax_index_get(ix, 0), env)); }
static ax_exp rev_ix(ax_exp ix, void *env)
{
    return ax_ix1(ax_sub(ax_i64(*(const int64_t *)env - 1), ax_index_get(ix, 0)));
}
static ax_exp drop_odd(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_eq(ax_rem(i, ax_i64(2)), ax_i64(1)), ax_ignore(1), ax_ix1(ax_quot(i, ax_i64(2))));
}

/* A vector of n elements read from src by f (gen_at, gen_at_linear). */
static ax_acc bad_read(ax_ctx *cx, ax_array *src, int64_t n, Bad b, ax_fn1 f, Bad *env)
{
    *env = b;
    env->src = ax_use(cx, src);
    return ax_generate(cx, ax_ix1(ax_i64(n)), f, env);
}

TEST(run_index_at_in_generate)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    Bad env;
    /* Reads 0,1,2,1234,4: only 1234 is out of bounds. */
    ax_acc g = bad_read(cx, v, 5, (Bad){3, 1234, NULL}, gen_at, &env);
    REQUIRE(g);
    EXPECT_FAIL(cx, g, AX_ERR_INDEX, "ax_at", "1234");
    CHECK_USABLE(cx);
    /* Negative indices too. */
    g = bad_read(cx, v, 5, (Bad){2, -5, NULL}, gen_at, &env);
    EXPECT_FAIL(cx, g, AX_ERR_INDEX, "ax_at", "-5");
    CHECK_USABLE(cx);
    /* Inside a fold, through ax_run_n. */
    g = ax_fold(ax_fn_add, NULL, ax_f32(0), bad_read(cx, v, 5, (Bad){4, 99, NULL}, gen_at, &env));
    ax_array *out[1] = {NULL};
    CHECK_EQ_I(ax_run_n(cx, g, out, 1), -1);
    CHECK(out[0] == NULL);
    CHECK_ERR(cx, AX_ERR_INDEX, "ax_at", "99");
    CHECK_USABLE(cx);
    /* The in-bounds version works. */
    g = bad_read(cx, v, 5, (Bad){3, 7, NULL}, gen_at, &env);
    ax_array *r = RUN(cx, g);
    if (r) {
        const float *d = ax_array_data(r, 0);
        CHECK(d[0] == 1 && d[2] == 3 && d[3] == 8 && d[4] == 5);
    }
    ax_array_release(r);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(run_index_at_linear)
{
    ax_ctx *cx = new_ctx();
    ax_array *m = mat_f32(cx, 2, 4);   /* 8 elements */
    Bad env;
    ax_acc g = bad_read(cx, m, 6, (Bad){2, 4321, NULL}, gen_at_linear, &env);
    REQUIRE(g);
    EXPECT_FAIL(cx, g, AX_ERR_INDEX, "ax_at_linear", "4321");
    CHECK_USABLE(cx);
    /* Linear position 8 is one past the end. */
    g = bad_read(cx, m, 6, (Bad){5, 8, NULL}, gen_at_linear, &env);
    EXPECT_FAIL(cx, g, AX_ERR_INDEX, "ax_at_linear", "8");
    CHECK_USABLE(cx);
    ax_array_release(m);
    ax_ctx_free(cx);
}

TEST(run_index_backpermute)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    Bad b = {2, 777, NULL};
    ax_acc p = ax_backpermute(ax_ix1(ax_i64(4)), perm_ix, &b, ax_use(cx, v));
    REQUIRE(p);
    EXPECT_FAIL(cx, p, AX_ERR_INDEX, "ax_backpermute", "777");
    CHECK_USABLE(cx);
    /* Index == extent: one past the end. */
    b = (Bad){0, 8, NULL};
    p = ax_backpermute(ax_ix1(ax_i64(4)), perm_ix, &b, ax_use(cx, v));
    EXPECT_FAIL(cx, p, AX_ERR_INDEX, "ax_backpermute", "8");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(run_index_permute)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    float z[4] = {0};
    ax_array *d = vec_f32(cx, 4, z);
    /* Sources 0..3 land on 0..3 except source 1, which goes to 555. */
    Bad b = {1, 555, NULL};
    ax_acc src = ax_backpermute(ax_ix1(ax_i64(4)), ax_fn_id, NULL, ax_use(cx, v));
    ax_acc p = ax_permute(ax_fn_add, NULL, ax_use(cx, d), perm_ix, &b, src);
    REQUIRE(p);
    EXPECT_FAIL(cx, p, AX_ERR_INDEX, "ax_permute", "555");
    CHECK_USABLE(cx);
    /* ax_ignore is not an error: odd sources are dropped, even ones go to i/2. */
    p = ax_permute(ax_fn_add, NULL, ax_use(cx, d), drop_odd, NULL, ax_use(cx, v));
    ax_array *r = RUN(cx, p);
    if (r) {
        const float *o = ax_array_data(r, 0);
        CHECK(o[0] == 1 && o[1] == 3 && o[2] == 5 && o[3] == 7);
    }
    ax_array_release(r);
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_array_release(d);
    ax_ctx_free(cx);
}

TEST(run_index_slice_fixed)
{
    ax_ctx *cx = new_ctx();
    ax_array *m = mat_f32(cx, 3, 4);
    ax_slice s[2] = {ax_fixed(ax_i64(70)), ax_all()};
    ax_acc a = ax_slice_(2, s, ax_use(cx, m));
    REQUIRE(a);
    EXPECT_FAIL(cx, a, AX_ERR_INDEX, "ax_slice_", "70");
    CHECK_USABLE(cx);
    /* Exactly the extent, and negative. */
    s[0] = ax_fixed(ax_i64(3));
    EXPECT_FAIL(cx, ax_slice_(2, s, ax_use(cx, m)), AX_ERR_INDEX, "ax_slice_", "3");
    CHECK_USABLE(cx);
    ax_slice t[2] = {ax_all(), ax_fixed(ax_i64(-1))};
    EXPECT_FAIL(cx, ax_slice_(2, t, ax_use(cx, m)), AX_ERR_INDEX, "ax_slice_", "-1");
    CHECK_USABLE(cx);
    /* In range: row 2. */
    s[0] = ax_fixed(ax_i64(2));
    ax_array *r = RUN(cx, ax_slice_(2, s, ax_use(cx, m)));
    if (r) {
        CHECK_EQ_I(ax_array_rank(r), 1);
        CHECK_EQ_I(ax_array_size(r), 4);
        const float *o = ax_array_data(r, 0);
        for (int j = 0; j < 4; j++) CHECK(o[j] == (float)(8 + j));
    }
    ax_array_release(r);
    ax_array_release(m);
    ax_ctx_free(cx);
}

TEST(run_unsafe_in_bounds)
{
    /* Unsafe mode drops bounds checks on user-computed indices; an
     * in-bounds program must still run and give the right answer (out of
     * bounds reads in unsafe mode are undefined and not tested). */
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.unsafe = true;
    ax_ctx *cx = ax_ctx_new(&o);
    CHECK(ax_ctx_options(cx)->unsafe);
    ax_array *v = vec_f32(cx, 8, F8);
    int64_t n = 8;
    ax_acc p = ax_backpermute(ax_ix1(ax_i64(8)), rev_ix, &n, ax_use(cx, v));
    ax_array *r = RUN(cx, p);
    if (r) {
        const float *o2 = ax_array_data(r, 0);
        for (int i = 0; i < 8; i++) CHECK(o2[i] == F8[7 - i]);
    }
    ax_array_release(r);
    Bad env;
    r = RUN(cx, bad_read(cx, v, 5, (Bad){3, 7, NULL}, gen_at, &env));
    if (r) CHECK(((const float *)ax_array_data(r, 0))[3] == 8);
    ax_array_release(r);
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

typedef ax_exp (*binop)(ax_exp, ax_exp);
static ax_exp apply_binop(ax_exp x, ax_exp y, void *env) { return (*(binop *)env)(x, y); }

TEST(run_integer_division_by_zero)
{
    ax_ctx *cx = new_ctx();
    int32_t num[4] = {7, -7, 8, 9}, den[4] = {2, 3, 0, 1};
    ax_array *a = vec_i32(cx, 4, num), *b = vec_i32(cx, 4, den);
    static const struct { binop f; const char *name; } ops[] = {
        {ax_quot, "ax_quot"}, {ax_rem, "ax_rem"}, {ax_idiv, "ax_idiv"}, {ax_mod, "ax_mod"}, {ax_div, "ax_div"},
    };
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        binop f = ops[k].f;
        ax_acc z = ax_zip_with(apply_binop, &f, ax_use(cx, a), ax_use(cx, b));
        REQUIRE(z);
        ax_array *r = ax_run(cx, z);
        CHECKF(r == NULL, "%s by zero succeeded", ops[k].name);
        ax_array_release(r);
        CHECKF(ax_status_of(cx) == AX_ERR_DIVZERO, "%s: status %s (%s)", ops[k].name,
               status_name(ax_status_of(cx)), ax_error(cx));
        CHECKF(has_ci(ax_error(cx), "zero"), "%s: message \"%s\"", ops[k].name, ax_error(cx));
        CHECKF(strstr(ax_error(cx), ops[k].name) != NULL, "%s: message \"%s\" does not name it",
               ops[k].name, ax_error(cx));
        CHECK_USABLE(cx);
    }
    /* Other integer types: u8 and i64. */
    uint8_t un[3] = {5, 6, 7}, ud[3] = {1, 0, 2};
    int64_t n3 = 3;
    ax_array *ua = ax_array_from(cx, AX_U8, 1, &n3, un), *ub = ax_array_from(cx, AX_U8, 1, &n3, ud);
    binop q = ax_quot;
    EXPECT_FAIL(cx, ax_zip_with(apply_binop, &q, ax_use(cx, ua), ax_use(cx, ub)), AX_ERR_DIVZERO, "ax_quot");
    CHECK_USABLE(cx);
    int64_t ln[3] = {5, 6, 7}, ld[3] = {1, 2, 0};
    ax_array *la = ax_array_from(cx, AX_I64, 1, &n3, ln), *lb = ax_array_from(cx, AX_I64, 1, &n3, ld);
    binop md = ax_mod;
    EXPECT_FAIL(cx, ax_zip_with(apply_binop, &md, ax_use(cx, la), ax_use(cx, lb)), AX_ERR_DIVZERO, "ax_mod");
    CHECK_USABLE(cx);
    /* No zero divisor: fine, and INT_MIN / -1 wraps. */
    int32_t n2[2] = {INT32_MIN, 9}, d2[2] = {-1, -2};
    ax_array *a2 = vec_i32(cx, 2, n2), *b2 = vec_i32(cx, 2, d2);
    ax_array *r = RUN(cx, ax_zip_with(apply_binop, &q, ax_use(cx, a2), ax_use(cx, b2)));
    if (r) {
        const int32_t *o = ax_array_data(r, 0);
        CHECK_EQ_I(o[0], INT32_MIN);
        CHECK_EQ_I(o[1], -4);
    }
    ax_array_release(r);
    ax_array *arrs[] = {a, b, ua, ub, la, lb, a2, b2};
    for (size_t i = 0; i < sizeof arrs / sizeof *arrs; i++) ax_array_release(arrs[i]);
    ax_ctx_free(cx);
}

TEST(run_float_division_by_zero_is_inf)
{
    ax_ctx *cx = new_ctx();
    float num[4] = {1, -1, 0, 6}, den[4] = {0, 0, 0, 3};
    ax_array *a = vec_f32(cx, 4, num), *b = vec_f32(cx, 4, den);
    ax_array *r = RUN(cx, ax_zip_with(ax_fn_div, NULL, ax_use(cx, a), ax_use(cx, b)));
    if (r) {
        const float *o = ax_array_data(r, 0);
        CHECK(isinf(o[0]) && o[0] > 0);
        CHECK(isinf(o[1]) && o[1] < 0);
        CHECK(isnan(o[2]));
        CHECK(o[3] == 2);
    }
    CHECK(ax_status_of(cx) == AX_OK);
    CHECK(ax_error(cx)[0] == 0);
    ax_array_release(r);
    ax_array_release(a);
    ax_array_release(b);
    ax_ctx_free(cx);
}

TEST(run_shape_overflow_and_negative_extent)
{
    ax_ctx *cx = new_ctx();
    ax_acc g = ax_generate(cx, ax_ix2(ax_i64(1LL << 40), ax_i64(1LL << 40)), gen_f32_2, NULL);
    REQUIRE(g);
    EXPECT_FAIL(cx, g, AX_ERR_SHAPE, "ax_generate", "overflow");
    CHECK_USABLE(cx);
    g = ax_generate(cx, ax_ix1(ax_i64(-1)), gen_f32, NULL);
    REQUIRE(g);
    EXPECT_FAIL(cx, g, AX_ERR_SHAPE, "ax_generate", "-1");
    CHECK_USABLE(cx);
    /* A negative extent computed at run time (from an array's size). */
    ax_array *v = vec_f32(cx, 8, F8);
    g = ax_generate(cx, ax_ix1(ax_sub(ax_i64(3), ax_size(ax_use(cx, v)))), gen_f32, NULL);
    REQUIRE(g);
    EXPECT_FAIL(cx, g, AX_ERR_SHAPE, "ax_generate", "-5");
    CHECK_USABLE(cx);
    /* Replicate with a negative new extent. */
    ax_slice rs[2] = {ax_fixed(ax_i64(-2)), ax_all()};
    EXPECT_FAIL(cx, ax_replicate(2, rs, ax_use(cx, v)), AX_ERR_SHAPE, "ax_replicate", "-2");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(run_reshape_size)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc r = ax_reshape(ax_ix2(ax_i64(3), ax_i64(3)), ax_use(cx, v));
    REQUIRE(r);
    EXPECT_FAIL(cx, r, AX_ERR_SHAPE, "ax_reshape");
    CHECK_USABLE(cx);
    ax_array *ok = RUN(cx, ax_reshape(ax_ix2(ax_i64(2), ax_i64(4)), ax_use(cx, v)));
    if (ok) CHECK(ax_array_rank(ok) == 2 && ax_array_extent(ok, 0) == 2 && ax_array_extent(ok, 1) == 4);
    ax_array_release(ok);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(run_fold1_empty_row)
{
    ax_ctx *cx = new_ctx();
    ax_acc g = ax_generate(cx, ax_ix2(ax_i64(3), ax_i64(0)), gen_f32_2, NULL);
    ax_acc f = ax_fold1(ax_fn_add, NULL, g);
    REQUIRE(f);
    EXPECT_FAIL(cx, f, AX_ERR_SHAPE, "ax_fold1");
    CHECK_USABLE(cx);
    /* A rank-1 empty array. */
    ax_array *e = ax_array_new(cx, ax_type_scalar(AX_F32), 1, (int64_t[]){0});
    REQUIRE(e);
    EXPECT_FAIL(cx, ax_fold1(ax_fn_max, NULL, ax_use(cx, e)), AX_ERR_SHAPE, "ax_fold1");
    CHECK_USABLE(cx);
    /* fold (with a start value) of the same is fine. */
    ax_array *r = RUN(cx, ax_fold(ax_fn_add, NULL, ax_f32(5), ax_use(cx, e)));
    if (r) CHECK(*(const float *)ax_array_data(r, 0) == 5);
    ax_array_release(r);
    ax_array_release(e);
    ax_ctx_free(cx);
}

TEST(run_fold_seg_sum)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    int32_t short_segs[2] = {3, 3}, long_segs[2] = {5, 5}, good[3] = {3, 0, 5};
    ax_array *s1 = vec_i32(cx, 2, short_segs), *s2 = vec_i32(cx, 2, long_segs), *s3 = vec_i32(cx, 3, good);
    EXPECT_FAIL(cx, ax_fold_seg(ax_fn_add, NULL, ax_f32(0), ax_use(cx, v), ax_use(cx, s1)), AX_ERR_SHAPE, "ax_fold_seg", "8");
    CHECK_USABLE(cx);
    EXPECT_FAIL(cx, ax_fold_seg(ax_fn_add, NULL, ax_f32(0), ax_use(cx, v), ax_use(cx, s2)), AX_ERR_SHAPE, "ax_fold_seg", "8");
    CHECK_USABLE(cx);
    EXPECT_FAIL(cx, ax_fold1_seg(ax_fn_add, NULL, ax_use(cx, v), ax_use(cx, s2)), AX_ERR_SHAPE, "ax_fold1_seg");
    CHECK_USABLE(cx);
    ax_array *r = RUN(cx, ax_fold_seg(ax_fn_add, NULL, ax_f32(0), ax_use(cx, v), ax_use(cx, s3)));
    if (r) {
        const float *o = ax_array_data(r, 0);
        CHECK_EQ_I(ax_array_size(r), 3);
        CHECK(o[0] == 6 && o[1] == 0 && o[2] == 30);
    }
    ax_array_release(r);
    ax_array_release(v);
    ax_array_release(s1);
    ax_array_release(s2);
    ax_array_release(s3);
    ax_ctx_free(cx);
}

TEST(run_fold_seg_negative_length)
{
    /* Lengths that add up to the extent but include a negative one. */
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    int32_t segs[3] = {10, -4, 2};
    ax_array *s = vec_i32(cx, 3, segs);
    EXPECT_FAIL(cx, ax_fold_seg(ax_fn_add, NULL, ax_f32(0), ax_use(cx, v), ax_use(cx, s)), AX_ERR_SHAPE, "ax_fold_seg");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_array_release(s);
    ax_ctx_free(cx);
}

static ax_acc big_program(ax_ctx *cx)
{
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_generate(cx, ax_ix1(ax_i64(10000000)), gen_f32, NULL));
}

/* A small intermediate that fits (600 KB), then a big one that does not. */
static ax_exp read_small(ax_exp ix, void *env)
{
    ax_acc small = env;
    return ax_at_linear(small, ax_rem(ax_index_get(ix, 0), ax_size(small)));
}
static ax_acc two_stage_program(ax_ctx *cx)
{
    ax_acc small = ax_generate(cx, ax_ix1(ax_i64(150000)), gen_f32, NULL);
    ax_acc big = ax_generate(cx, ax_ix1(ax_i64(10000000)), read_small, small);
    return ax_atuple2(small, ax_fold(ax_fn_add, NULL, ax_f32(0), big));
}

TEST(run_memory_limit)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.mem_limit = 1 << 20;
    ax_ctx *cx = ax_ctx_new(&o);
    CHECK_EQ_I(ax_ctx_options(cx)->mem_limit, 1 << 20);
    int64_t used0 = cx->mem_used;
    char first[AX_ERRMSG];
    EXPECT_FAIL(cx, big_program(cx), AX_ERR_NOMEM);
    CHECKF(has_ci(ax_error(cx), "memory limit"), "message \"%s\"", ax_error(cx));
    snprintf(first, sizeof first, "%s", ax_error(cx));
    CHECK_EQ_I(cx->mem_used, used0);
    /* Again: the same failure (the message says how much is in use, so an
     * accounting leak would show here too). */
    EXPECT_FAIL(cx, big_program(cx), AX_ERR_NOMEM);
    CHECKF(!strcmp(first, ax_error(cx)), "first \"%s\", second \"%s\"", first, ax_error(cx));
    CHECK_EQ_I(cx->mem_used, used0);
    CHECK_USABLE(cx);
    used0 = cx->mem_used;   /* (the dot product's inputs stay referenced by its ax_use nodes) */

    /* A failure after an intermediate was allocated gives it back. */
    ax_array *out[2] = {NULL, NULL};
    CHECK_EQ_I(ax_run_n(cx, two_stage_program(cx), out, 2), -1);
    CHECK(out[0] == NULL && out[1] == NULL);
    CHECK_ERR(cx, AX_ERR_NOMEM, "memory limit");
    CHECK_EQ_I(cx->mem_used, used0);
    CHECK_EQ_I(ax_run_n(cx, two_stage_program(cx), out, 2), -1);
    CHECK_ERR(cx, AX_ERR_NOMEM, "memory limit");
    CHECK_EQ_I(cx->mem_used, used0);
    /* 900 KB still fits after the failures. */
    ax_array *r = RUN(cx, ax_generate(cx, ax_ix1(ax_i64(225000)), gen_f32, NULL));
    if (r) CHECK(((const float *)ax_array_data(r, 0))[224999] == 224999.0f);
    ax_array_release(r);
    CHECK_EQ_I(cx->mem_used, used0);
    CHECK_USABLE(cx);
    ax_ctx_reset(cx);   /* drops the ax_use references: nothing is left in use */
    CHECK_EQ_I(cx->mem_used, 0);

    /* ax_array_new over the limit: NULL and AX_ERR_NOMEM. */
    ax_array *big = ax_array_new(cx, ax_type_scalar(AX_F64), 1, (int64_t[]){1 << 20});
    CHECK(big == NULL);
    CHECK_ERR(cx, AX_ERR_NOMEM, "memory limit");
    ax_array_release(big);
    CHECK_USABLE(cx);
    ax_ctx_free(cx);
}

/* Arrays of 16 KB made and dropped each step of a loop come back from
 * the context's spare buffers (at most a quarter of the memory limit,
 * here one buffer, so that keeping one evicts another): under a limit
 * with room for little more than a step's live arrays, 25 steps give
 * the right result and leave nothing in use (and under the sanitizers
 * and valgrind, a spare buffer smaller than asked for would show).  On
 * the interpreter, whose arrays come from the same place as every
 * backend's (array.c): valgrind, which runs this file, does not know
 * every instruction a kernel compiled for this machine may use. */
static ax_acc add_one_step(ax_exp step, ax_acc x, void *env)
{
    (void)step;
    (void)env;
    return ax_map(twice, NULL, ax_map(twice, NULL, x));
}

TEST(loop_of_small_arrays_within_the_memory_limit)
{
    const int64_t n = 4096;
    {
        ax_options o = {0};
        o.backend = AX_BACKEND_INTERP;
        o.mem_limit = 5 * n * (int64_t)sizeof(float);   /* input, two steps' arrays and a bit */
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        ax_array *v = ax_array_new(cx, ax_type_scalar(AX_F32), 1, &n);
        REQUIRE(v);
        float *d = ax_array_data(v, 0);
        for (int64_t i = 0; i < n; i++) d[i] = (float)(i % 7) * 0x1p-100f;
        ax_array *r = RUN(cx, ax_for(ax_i64(25), add_one_step, NULL, ax_use(cx, v)));
        if (r) {
            const float *e = ax_array_data(r, 0);
            int bad = 0;
            for (int64_t i = 0; i < n; i++) bad += e[i] != (float)(i % 7) * 0x1p-50f;
            CHECKF(bad == 0, "%d wrong", bad);
        }
        ax_array_release(r);
        ax_array_release(v);
        ax_ctx_reset(cx);
        CHECK_EQ_I(cx->mem_used, 0);
        CHECK_USABLE(cx);
        ax_ctx_free(cx);
    }
}

TEST(run_backend_unavailable)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_CUDA;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    ax_array *v = vec_f32(cx, 8, F8);
    REQUIRE(v);
    ax_acc m = ax_map(twice, NULL, ax_use(cx, v));
    ax_array *r = ax_run(cx, m);
    if (r) {
        /* CUDA exists here: then it must compute the right thing. */
        const float *d = ax_array_data(r, 0);
        for (int i = 0; i < 8; i++) CHECK(d[i] == 2 * F8[i]);
        ax_array_release(r);
    } else {
        CHECK_ERR(cx, AX_ERR_BACKEND);
        CHECKF(has_ci(ax_error(cx), "cuda"), "message \"%s\"", ax_error(cx));
        /* The failure is reported each time, not just once. */
        EXPECT_FAIL(cx, ax_map(twice, NULL, ax_use(cx, v)), AX_ERR_BACKEND);
    }
    ax_array_release(v);
    ax_ctx_free(cx);
}

/* ============================================================ the model */

TEST(model_first_error_wins)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8), *m = mat_f32(cx, 2, 4);
    ax_acc a = ax_map(NULL, NULL, ax_use(cx, v));                                    /* first */
    ax_acc b = ax_zip_with(ax_fn_add, NULL, ax_use(cx, v), ax_use(cx, m));           /* second */
    CHECK(a == NULL && b == NULL);
    CHECK_ERR(cx, AX_ERR_BUILD, "ax_map");
    /* Even a correct computation fails while an error is pending, with the
     * first message. */
    ax_acc good = ax_map(twice, NULL, ax_use(cx, v));
    CHECK(good != NULL);
    EXPECT_FAIL(cx, good, AX_ERR_BUILD, "ax_map");
    CHECKF(!strstr(ax_error(cx), "ax_zip_with"), "message \"%s\"", ax_error(cx));
    /* Reported once: the same computation now runs. */
    ax_array *r = RUN(cx, good);
    if (r) CHECK(((const float *)ax_array_data(r, 0))[7] == 16);
    ax_array_release(r);
    CHECK_USABLE(cx);
    /* A build error (pending) beats a run-time fault in the computation run. */
    ax_acc bad_rt = ax_reshape(ax_ix1(ax_i64(3)), ax_use(cx, v));
    CHECK(ax_map(add_f32_i32, NULL, ax_use(cx, v)) == NULL);
    EXPECT_FAIL(cx, bad_rt, AX_ERR_BUILD, "ax_add");
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_array_release(m);
    ax_ctx_free(cx);
}

TEST(model_clear_error)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    CHECK(ax_map(NULL, NULL, ax_use(cx, v)) == NULL);
    CHECK_ERR(cx, AX_ERR_BUILD, "ax_map");
    ax_clear_error(cx);
    CHECK(ax_status_of(cx) == AX_OK);
    CHECK(ax_error(cx)[0] == 0);
    /* A later misuse is recorded afresh (not masked). */
    CHECK(ax_use(cx, NULL) == NULL);
    CHECK_ERR(cx, AX_ERR_BUILD, "ax_use");
    ax_clear_error(cx);
    CHECK_USABLE(cx);
    /* Clearing after a failed run forgets the reported error too. */
    EXPECT_FAIL(cx, ax_reshape(ax_ix1(ax_i64(3)), ax_use(cx, v)), AX_ERR_SHAPE);
    ax_clear_error(cx);
    CHECK(ax_status_of(cx) == AX_OK);
    CHECK(ax_error(cx)[0] == 0);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(model_error_empty_after_success)
{
    ax_ctx *cx = new_ctx();
    CHECK(ax_status_of(cx) == AX_OK);
    CHECK(ax_error(cx)[0] == 0);
    CHECK_USABLE(cx);
    ax_array *v = vec_f32(cx, 8, F8);
    EXPECT_FAIL(cx, ax_reshape(ax_ix1(ax_i64(3)), ax_use(cx, v)), AX_ERR_SHAPE);
    /* The reported error stays readable until the next run... */
    CHECK(ax_status_of(cx) == AX_ERR_SHAPE);
    CHECK(ax_error(cx)[0] != 0);
    /* ... which, when it succeeds, leaves "" and AX_OK. */
    ax_array *r = RUN(cx, ax_map(twice, NULL, ax_use(cx, v)));
    CHECK(ax_status_of(cx) == AX_OK);
    CHECKF(ax_error(cx)[0] == 0, "message \"%s\"", ax_error(cx));
    ax_array_release(r);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(model_reset_after_error)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    /* A pending build error, then reset. */
    CHECK(ax_map(add_f32_i32, NULL, ax_use(cx, v)) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_BUILD);
    ax_ctx_reset(cx);
    CHECK(ax_status_of(cx) == AX_OK);
    CHECK(ax_error(cx)[0] == 0);
    CHECK_USABLE(cx);
    /* Host arrays survive the reset. */
    ax_array *r = RUN(cx, ax_map(twice, NULL, ax_use(cx, v)));
    if (r) CHECK(((const float *)ax_array_data(r, 0))[0] == 2);
    ax_array_release(r);
    /* A run-time fault, then reset. */
    EXPECT_FAIL(cx, ax_reshape(ax_ix1(ax_i64(3)), ax_use(cx, v)), AX_ERR_SHAPE);
    ax_ctx_reset(cx);
    CHECK(ax_status_of(cx) == AX_OK);
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

TEST(model_free_with_pending_error)
{
    /* Pending build errors, unreleased arrays and terms: ax_ctx_free frees
     * it all (LeakSanitizer checks). */
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    CHECK(ax_map(add_f32_i32, NULL, ax_use(cx, v)) == NULL);
    CHECK(ax_zip_with(ax_fn_add, NULL, ax_use(cx, v), NULL) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_BUILD);
    ax_ctx_free(cx);

    /* After a run-time fault, with the result of an earlier run unreleased. */
    cx = new_ctx();
    v = vec_f32(cx, 8, F8);
    ax_array *r = RUN(cx, ax_map(twice, NULL, ax_use(cx, v)));
    CHECK(r != NULL);
    EXPECT_FAIL(cx, ax_reshape(ax_ix1(ax_i64(3)), ax_use(cx, v)), AX_ERR_SHAPE);
    CHECK(ax_map(NULL, NULL, ax_use(cx, v)) == NULL);
    ax_ctx_free(cx);

    /* With a pending context-free error that never met the context. */
    cx = new_ctx();
    ax_exp bad = ax_add(ax_f32(1), ax_i32(2));
    CHECK(!ax_exp_ok(bad));
    ax_ctx_free(cx);
}

TEST(arg_copy_out_bad_component)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    float out[8];
    CHECK_EQ_I(ax_array_copy_out(v, 1, out), -1);
    CHECK_ERR(cx, AX_ERR_ARG, "ax_array_copy_out");
    CHECK_EQ_I(ax_array_copy_out(v, -1, out), -1);
    CHECK_ERR(cx, AX_ERR_ARG, "ax_array_copy_out");
    CHECK_EQ_I(ax_array_copy_out(NULL, 0, out), -1);
    CHECK_USABLE(cx);
    CHECK_EQ_I(ax_array_copy_out(v, 0, out), 0);
    for (int i = 0; i < 8; i++) CHECK(out[i] == F8[i]);
    ax_array_release(v);
    ax_ctx_free(cx);
}

/* ============================================================ more misuse */

static ax_exp smuggled;
static ax_exp smuggle(ax_exp x, void *env) { smuggled = x; return ax_add(x, x); }
static ax_exp use_smuggled(ax_exp x, void *env) { return ax_add(x, smuggled); }

TEST(build_variable_smuggled_out_of_callback)
{
    /* A callback's variable kept in a global and used in another
     * callback: the program is ill-formed; ax_run refuses it. */
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    ax_acc a = ax_map(smuggle, NULL, ax_use(cx, v));
    REQUIRE(a);
    ax_acc b = ax_map(use_smuggled, NULL, ax_use(cx, v));
    REQUIRE(b);
    EXPECT_FAIL(cx, b, AX_ERR_BUILD);
    CHECK_USABLE(cx);
    ax_array_release(v);
    ax_ctx_free(cx);
}

static ax_acc acc_twice(ax_acc x, void *env) { return ax_map(twice, NULL, x); }
static ax_acc acc_to_i32(ax_acc x, void *env) { return ax_map(pred_i32, NULL, x); }
static ax_acc acc_cond_small(ax_acc x, void *env)
{
    return ax_unit((ax_ctx *)env, ax_lt(ax_at_linear(x, ax_i64(0)), ax_f32(100)));
}

TEST(build_array_control_types)
{
    ax_ctx *cx = new_ctx();
    ax_array *v = vec_f32(cx, 8, F8);
    int32_t iv[8] = {0};
    ax_array *w = vec_i32(cx, 8, iv);
    /* ax_acond: branches of different types; a non-bool condition. */
    ax_acc c = ax_acond(ax_bool(true), ax_use(cx, v), ax_use(cx, w));
    CHECK(c == NULL);
    EXPECT_FAIL(cx, c, AX_ERR_BUILD, "ax_acond", "[f32]^1", "[i32]^1");
    CHECK_USABLE(cx);
    c = ax_acond(ax_i32(1), ax_use(cx, v), ax_use(cx, v));
    CHECK(c == NULL);
    EXPECT_FAIL(cx, c, AX_ERR_BUILD, "ax_acond", "i32", "bool");
    CHECK_USABLE(cx);
    /* ax_awhile: a body that changes the type. */
    ax_acc l = ax_awhile(acc_cond_small, acc_to_i32, cx, ax_use(cx, v));
    CHECK(l == NULL);
    EXPECT_FAIL(cx, l, AX_ERR_BUILD, "ax_awhile", "[i32]^1", "[f32]^1");
    CHECK_USABLE(cx);
    /* ... a condition that is not a rank-0 bool array. */
    l = ax_awhile(acc_twice, acc_twice, cx, ax_use(cx, v));
    CHECK(l == NULL);
    EXPECT_FAIL(cx, l, AX_ERR_BUILD, "ax_awhile", "bool");
    CHECK_USABLE(cx);
    /* The correct loop runs: doubles until the first element is >= 100. */
    ax_array *r = RUN(cx, ax_awhile(acc_cond_small, acc_twice, cx, ax_use(cx, v)));
    if (r) CHECK(((const float *)ax_array_data(r, 0))[0] == 128);
    ax_array_release(r);
    ax_array_release(v);
    ax_array_release(w);
    ax_ctx_free(cx);
}

static ax_exp quot_by_const_zero(ax_exp x, void *env) { return ax_add(x, ax_quot(ax_i32(1), ax_i32(0))); }
static ax_exp gen_rank9(ax_exp ix, void *env)
{
    ax_exp c[9];
    for (int i = 0; i < 9; i++) c[i] = ax_i64(1);
    return ax_shape_size(ax_index(9, c));
}

TEST(build_constant_faults)
{
    ax_ctx *cx = new_ctx();
    int32_t iv[4] = {1, 2, 3, 4};
    ax_array *w = vec_i32(cx, 4, iv);
    /* Integer division by zero among constants: found when built,
     * reported when the constant meets the context. */
    ax_acc m = ax_map(quot_by_const_zero, NULL, ax_use(cx, w));
    CHECK(m == NULL);
    EXPECT_FAIL(cx, m, AX_ERR_DIVZERO, "ax_quot");
    CHECK_USABLE(cx);
    /* An index of rank 9 (AX_MAX_RANK is 8). */
    ax_acc g = ax_generate(cx, ax_ix1(ax_i64(2)), gen_rank9, NULL);
    CHECK(g == NULL);
    EXPECT_FAIL(cx, g, AX_ERR_BUILD, "ax_index", "9");
    CHECK_USABLE(cx);
    /* A tuple type with a NULL component. */
    const ax_type *ts[2] = {ax_type_scalar(AX_F32), NULL};
    CHECK(ax_type_tuple(cx, 2, ts) == NULL);
    CHECK_ERR(cx, AX_ERR_BUILD, "ax_type_tuple");
    EXPECT_FAIL(cx, ax_use(cx, w), AX_ERR_BUILD, "ax_type_tuple");
    CHECK_USABLE(cx);
    ax_array_release(w);
    ax_ctx_free(cx);
}

TEST(program_fault_repeatable)
{
    /* A compiled program that faults at run time fails each time it runs,
     * and the context stays usable in between. */
    ax_ctx *cx = new_ctx();
    int32_t num[3] = {1, 2, 3}, den[3] = {1, 0, 1};
    ax_array *a = vec_i32(cx, 3, num), *b = vec_i32(cx, 3, den);
    binop q = ax_quot;
    ax_program *p = ax_compile(cx, ax_zip_with(apply_binop, &q, ax_use(cx, a), ax_use(cx, b)));
    REQUIRE(p);
    for (int k = 0; k < 2; k++) {
        ax_array *out[1] = {NULL};
        CHECK_EQ_I(ax_program_run(p, out, 1), -1);
        CHECK(out[0] == NULL);
        CHECK_ERR(cx, AX_ERR_DIVZERO, "ax_quot");
        CHECK_USABLE(cx);
    }
    /* No room for results. */
    CHECK_EQ_I(ax_program_run(p, NULL, 1), -1);
    CHECK_ERR(cx, AX_ERR_ARG, "ax_run");
    CHECK_USABLE(cx);
    ax_program_free(p);
    /* ax_compile of a misuse gives NULL; ax_run_n with max 0 fails. */
    CHECK(ax_compile(cx, ax_map(NULL, NULL, ax_use(cx, a))) == NULL);
    CHECK_ERR(cx, AX_ERR_BUILD, "ax_map");
    ax_array *out[1] = {NULL};
    CHECK_EQ_I(ax_run_n(cx, ax_use(cx, a), out, 0), -1);
    CHECK(ax_status_of(cx) == AX_ERR_ARG);
    CHECK_USABLE(cx);
    ax_array_release(a);
    ax_array_release(b);
    ax_ctx_free(cx);
}
