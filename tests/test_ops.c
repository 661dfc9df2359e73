/*
 * Every operation of the public API on the reference interpreter, against
 * expected values computed independently here with plain C loops (never
 * values copied from a run of axle).  Each collective is tried on empty
 * arrays, rank 0 where it makes sense, odd sizes (1, 7, 1001), ranks 1 to 3
 * and tuple elements; reductions and scans also with non-commutative
 * associative operators (affine-map composition, 2x2 matrix products,
 * ax_fn_fst / ax_fn_snd), so that operand order is checked, not just the
 * multiset of operands.  Scalar operations are applied inside
 * ax_map / ax_zip_with / ax_generate so that the interpreter computes them,
 * and again from constants so that the build-time folder is checked against
 * the same expression computed at run time.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <float.h>

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

/* ================================================================ helpers */

static ax_ctx *new_cx(void)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    return ax_ctx_new(&o);
}

static bool sc_signed_(ax_scalar s) { return s == AX_I8 || s == AX_I16 || s == AX_I32 || s == AX_I64; }
static bool sc_float_(ax_scalar s) { return s == AX_F32 || s == AX_F64; }
static int sc_bits_(ax_scalar s) { return (int)ax_scalar_size(s) * 8; }

/* Wraps v to the width of integer type s (sign- or zero-extended into an
 * int64; u64 keeps its bits); bool is 0 or 1. */
static int64_t norm_i(ax_scalar s, uint64_t v)
{
    if (s == AX_BOOL) return v != 0;
    int w = sc_bits_(s);
    if (w == 64) return (int64_t)v;
    uint64_t m = (UINT64_C(1) << w) - 1;
    v &= m;
    if (sc_signed_(s) && ((v >> (w - 1)) & 1)) v |= ~m;
    return (int64_t)v;
}

static int64_t type_min(ax_scalar s)
{
    return sc_signed_(s) ? (int64_t)(~UINT64_C(0) << (sc_bits_(s) - 1)) : 0;
}
static int64_t type_max(ax_scalar s)
{
    int w = sc_bits_(s);
    if (sc_signed_(s)) return (int64_t)((UINT64_C(1) << (w - 1)) - 1);
    return w == 64 ? -1 : (int64_t)((UINT64_C(1) << w) - 1);
}

/* Typed buffer access: integers as (sign/zero-extended) int64, floats as
 * double. */
static int64_t ld_i(const void *p, ax_scalar s, int64_t k)
{
    switch (s) {
    case AX_BOOL: return ((const uint8_t *)p)[k];
    case AX_I8: return ((const int8_t *)p)[k];
    case AX_I16: return ((const int16_t *)p)[k];
    case AX_I32: return ((const int32_t *)p)[k];
    case AX_I64: return ((const int64_t *)p)[k];
    case AX_U8: return ((const uint8_t *)p)[k];
    case AX_U16: return ((const uint16_t *)p)[k];
    case AX_U32: return ((const uint32_t *)p)[k];
    case AX_U64: return (int64_t)((const uint64_t *)p)[k];
    case AX_F32: return (int64_t)((const float *)p)[k];
    case AX_F64: return (int64_t)((const double *)p)[k];
    default: return 0;
    }
}

static double ld_f(const void *p, ax_scalar s, int64_t k)
{
    switch (s) {
    case AX_F32: return ((const float *)p)[k];
    case AX_F64: return ((const double *)p)[k];
    case AX_U64: return (double)((const uint64_t *)p)[k];
    default: return (double)ld_i(p, s, k);
    }
}

static void st_i(void *p, ax_scalar s, int64_t k, int64_t v)
{
    switch (s) {
    case AX_BOOL: ((uint8_t *)p)[k] = v != 0; break;
    case AX_I8: ((int8_t *)p)[k] = (int8_t)v; break;
    case AX_I16: ((int16_t *)p)[k] = (int16_t)v; break;
    case AX_I32: ((int32_t *)p)[k] = (int32_t)v; break;
    case AX_I64: ((int64_t *)p)[k] = v; break;
    case AX_U8: ((uint8_t *)p)[k] = (uint8_t)v; break;
    case AX_U16: ((uint16_t *)p)[k] = (uint16_t)v; break;
    case AX_U32: ((uint32_t *)p)[k] = (uint32_t)v; break;
    case AX_U64: ((uint64_t *)p)[k] = (uint64_t)v; break;
    case AX_F32: ((float *)p)[k] = (float)v; break;
    case AX_F64: ((double *)p)[k] = (double)v; break;
    default: break;
    }
}

static void st_f(void *p, ax_scalar s, int64_t k, double v)
{
    if (s == AX_F32) ((float *)p)[k] = (float)v;
    else if (s == AX_F64) ((double *)p)[k] = v;
    else st_i(p, s, k, (int64_t)v);
}

/* An array holding a copy of data (which may be NULL when the shape is
 * empty), embedded with ax_use; the caller's reference is given back at
 * once (the use node holds one). */
static ax_acc use_data(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, const void *data)
{
    static const uint64_t dummy[2];
    ax_array *a = ax_array_from(cx, s, rank, sh, data ? data : (const void *)dummy);
    if (!a) {
        harness_failed_checks++;
        fprintf(stderr, "ax_array_from failed: %s\n", ax_error(cx));
        return NULL;
    }
    ax_acc r = ax_use(cx, a);
    ax_array_release(a);
    return r;
}

static ax_acc use_tuple(ax_ctx *cx, const ax_type *t, int rank, const int64_t *sh, const void *const *bufs)
{
    ax_array *a = ax_array_from_n(cx, t, rank, sh, bufs);
    if (!a) {
        harness_failed_checks++;
        fprintf(stderr, "ax_array_from_n failed: %s\n", ax_error(cx));
        return NULL;
    }
    ax_acc r = ax_use(cx, a);
    ax_array_release(a);
    return r;
}

static const ax_type *tup_t(ax_ctx *cx, int n, const ax_scalar *ss)
{
    const ax_type *ts[8];
    for (int i = 0; i < n; i++) ts[i] = ax_type_scalar(ss[i]);
    return ax_type_tuple(cx, n, ts);
}
#define TUP(cx, ...) tup_t((cx), NELEM(((const ax_scalar[]){__VA_ARGS__})), (const ax_scalar[]){__VA_ARGS__})

static int64_t shape_size(int rank, const int64_t *sh)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sh[d];
    return n;
}

static void unravel(int64_t lin, int rank, const int64_t *sh, int64_t *ix)
{
    for (int d = rank - 1; d >= 0; d--) {
        ix[d] = sh[d] ? lin % sh[d] : 0;
        lin = sh[d] ? lin / sh[d] : 0;
    }
}

static int64_t ravel(int rank, const int64_t *sh, const int64_t *ix)
{
    int64_t lin = 0;
    for (int d = 0; d < rank; d++) lin = lin * sh[d] + ix[d];
    return lin;
}

/* Checks a result's rank and extents; counts and prints a failure. */
static bool shape_is(const char *file, int line, const ax_array *r, int rank, const int64_t *sh)
{
    if (!r) return false;
    bool ok = ax_array_rank(r) == rank;
    for (int d = 0; ok && d < rank; d++) ok = ax_array_extent(r, d) == sh[d];
    if (!ok) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: shape mismatch: got rank %d {", file, line, ax_array_rank(r));
        for (int d = 0; d < ax_array_rank(r); d++)
            fprintf(stderr, "%s%lld", d ? "," : "", (long long)ax_array_extent(r, d));
        fprintf(stderr, "}, want rank %d {", rank);
        for (int d = 0; d < rank; d++) fprintf(stderr, "%s%lld", d ? "," : "", (long long)sh[d]);
        fprintf(stderr, "}\n");
    }
    return ok;
}
#define SHAPE_IS(r, rank, ...) shape_is(__FILE__, __LINE__, (r), (rank), SH(__VA_ARGS__))
#define SHAPE_ISV(r, rank, sh) shape_is(__FILE__, __LINE__, (r), (rank), (sh))

/* A checker over many elements: prints the first few mismatches and counts
 * one failed check at the end. */
typedef struct Chk {
    const char *file;
    int line;
    char what[200];
    int64_t bad;
} Chk;

static void chk_init(Chk *c, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void chk_init(Chk *c, const char *file, int line, const char *fmt, ...)
{
    c->file = file;
    c->line = line;
    c->bad = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what, sizeof c->what, fmt, ap);
    va_end(ap);
}
#define CHK(c, ...) chk_init((c), __FILE__, __LINE__, __VA_ARGS__)

static void chk_i(Chk *c, int64_t k, int64_t got, int64_t want)
{
    if (got == want) return;
    if (c->bad++ < 6)
        fprintf(stderr, "%s:%d: %s: [%lld] got %lld, want %lld\n", c->file, c->line, c->what, (long long)k,
                (long long)got, (long long)want);
}

static void chk_f(Chk *c, int64_t k, double got, double want, double rel)
{
    if (harness_close(got, want, rel)) return;
    if (c->bad++ < 6)
        fprintf(stderr, "%s:%d: %s: [%lld] got %.17g, want %.17g\n", c->file, c->line, c->what, (long long)k,
                got, want);
}

static void chk_true(Chk *c, bool ok, const char *msg)
{
    if (ok) return;
    if (c->bad++ < 6) fprintf(stderr, "%s:%d: %s: %s\n", c->file, c->line, c->what, msg);
}

static bool chk_done(Chk *c)
{
    if (!c->bad) return true;
    harness_failed_checks++;
    fprintf(stderr, "%s:%d: %s: %lld mismatches\n", c->file, c->line, c->what, (long long)c->bad);
    return false;
}

/* Compares component comp of r (n elements) with integer expectations. */
static void chk_arr_i(Chk *c, const ax_array *r, int comp, const int64_t *want, int64_t n)
{
    if (!r) { chk_true(c, false, "no result"); return; }
    if (ax_array_size(r) != n) {
        chk_i(c, -1, ax_array_size(r), n);
        return;
    }
    const void *p = ax_array_data(r, comp);
    ax_scalar s = ax_array_component_type(r, comp);
    for (int64_t k = 0; k < n; k++) chk_i(c, k, ld_i(p, s, k), want[k]);
}

static void chk_arr_f(Chk *c, const ax_array *r, int comp, const double *want, int64_t n, double rel)
{
    if (!r) { chk_true(c, false, "no result"); return; }
    if (ax_array_size(r) != n) {
        chk_i(c, -1, ax_array_size(r), n);
        return;
    }
    const void *p = ax_array_data(r, comp);
    ax_scalar s = ax_array_component_type(r, comp);
    for (int64_t k = 0; k < n; k++) chk_f(c, k, ld_f(p, s, k), want[k], rel);
}

/* Two buffers of type s equal element by element (floats: equal by ==, or
 * both NaN; `bits` additionally demands identical bit patterns for non-NaN
 * floats, so that -0.0 and 0.0 differ). */
static void chk_buf(Chk *c, ax_scalar s, const void *got, const void *want, int64_t n, bool bits)
{
    for (int64_t k = 0; k < n; k++) {
        if (sc_float_(s)) {
            double g = ld_f(got, s, k), w = ld_f(want, s, k);
            bool ok = (isnan(g) && isnan(w)) || (g == w && (!bits || signbit(g) == signbit(w)));
            if (!ok && c->bad++ < 6)
                fprintf(stderr, "%s:%d: %s: [%lld] got %.17g, want %.17g\n", c->file, c->line, c->what,
                        (long long)k, g, w);
        } else {
            chk_i(c, k, ld_i(got, s, k), ld_i(want, s, k));
        }
    }
}

/* Runs and expects a failure of the given kind; the context must work
 * again afterwards. */
static void expect_fail(const char *file, int line, ax_ctx *cx, ax_acc a, ax_status st)
{
    ax_array *r = ax_run(cx, a);
    if (r) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: ax_run succeeded where it should fail with status %d\n", file, line, (int)st);
        ax_array_release(r);
        return;
    }
    if (ax_status_of(cx) != st) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: ax_run failed with status %d (want %d): %s\n", file, line,
                (int)ax_status_of(cx), (int)st, ax_error(cx));
    }
    /* usable again */
    int64_t v = 5;
    ax_array *ok = ax_run(cx, ax_map(ax_fn_neg, NULL, use_data(cx, AX_I64, 1, SH(1), &v)));
    if (!ok || ((int64_t *)ax_array_data(ok, 0))[0] != -5) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: the context does not work after a failure: %s\n", file, line, ax_error(cx));
    }
    ax_array_release(ok);
}
#define EXPECT_FAIL(cx, a, st) expect_fail(__FILE__, __LINE__, (cx), (a), (st))

/* Shapes used by several tests (rank, extents). */
typedef struct Shape { int rank; int64_t sh[3]; } Shape;
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

/* A deterministic value for element k (of either sign, small). */
static int64_t val_of(int64_t k) { return (k * 37 + 11) % 101 - 50; }

static int64_t *alloc_i64(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(int64_t)); }
static double *alloc_f64(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(double)); }

/* env -> the ax_acc it points at */
static ax_acc acc_of(void *env) { return *(ax_acc *)env; }

/* ======================================================= element types */

static ax_exp read_at(ax_exp ix, void *env) { return ax_at(acc_of(env), ix); }

/* Nine values of type s that stress loads and stores: extremes, signs,
 * -0.0, denormals, infinities, NaN with a payload. */
static void fill_tricky(ax_scalar s, void *buf)
{
    if (s == AX_BOOL) {
        static const uint8_t b[9] = {0, 1, 1, 0, 1, 0, 0, 1, 1};
        memcpy(buf, b, 9);
    } else if (s == AX_F32) {
        uint32_t nanbits = 0x7fc12345u;
        float nan_payload;
        memcpy(&nan_payload, &nanbits, 4);
        const float f[9] = {0.0f, -0.0f, 1.5f, -INFINITY, INFINITY, nan_payload, FLT_MIN / 4, FLT_MAX,
                            -FLT_TRUE_MIN};
        memcpy(buf, f, sizeof f);
    } else if (s == AX_F64) {
        uint64_t nanbits = UINT64_C(0xfff8000000abcdef);
        double nan_payload;
        memcpy(&nan_payload, &nanbits, 8);
        const double d[9] = {0.0, -0.0, -2.75, INFINITY, -INFINITY, nan_payload, DBL_MIN / 8, -DBL_MAX,
                             DBL_TRUE_MIN};
        memcpy(buf, d, sizeof d);
    } else {
        const int64_t v[9] = {0, 1, -1, type_min(s), type_max(s), 42, -42, type_min(s) + 1, type_max(s) - 1};
        for (int k = 0; k < 9; k++) st_i(buf, s, k, norm_i(s, (uint64_t)v[k]));
    }
}

TEST(ops_elem_types_roundtrip)
{
    ax_ctx *cx = new_cx();
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
    ax_ctx_free(cx);
}

/* ======================================================= unit, generate */

TEST(ops_unit)
{
    ax_ctx *cx = new_cx();
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
    ax_ctx_free(cx);
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

TEST(ops_generate)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(shapes_all); t++) {
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
    ax_ctx_free(cx);
}

/* ================================================================== map */

static ax_exp times2_plus1(ax_exp x, void *env) { return ax_add(ax_mul(x, ax_f32(2)), ax_f32(1)); }
static ax_exp gt3(ax_exp x, void *env) { return ax_gt(x, ax_i32(3)); }
static ax_exp swap_mod(ax_exp p, void *env)
{
    return ax_tuple2(ax_mul(ax_get(p, 1), ax_f64(2)), ax_sub(ax_get(p, 0), ax_i32(1)));
}
static ax_exp scale_env(ax_exp x, void *env) { return ax_mul(x, ax_i64(*(const int64_t *)env)); }

TEST(ops_map)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(shapes_all); t++) {
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
    ax_ctx_free(cx);
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

TEST(ops_zip_with)
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
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
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
    ax_ctx_free(cx);
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

TEST(ops_backpermute)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const int64_t ns[] = {0, 1, 7, 1001};
    for (int t = 0; t < NELEM(ns); t++) {
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
    ax_ctx_free(cx);
}

/* ============================================================= permute */

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

TEST(ops_permute)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int32_t dfl[10], dneg[10];
    for (int k = 0; k < 10; k++) { dfl[k] = 1000 * k; dneg[k] = -1000; }
    static const int64_t ns[] = {0, 1, 7, 1001};
    for (int t = 0; t < NELEM(ns); t++) {
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
    ax_ctx_free(cx);
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

TEST(ops_replicate)
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
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    run_slice_cases(cx, true, cases, (int)NELEM(cases));
    ax_ctx_free(cx);
}

TEST(ops_slice)
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
    ax_ctx *cx = new_cx();
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
    ax_ctx_free(cx);
}

/* ==================================================== reshape, flatten */

TEST(ops_reshape_flatten)
{
    ax_ctx *cx = new_cx();
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
    ax_ctx_free(cx);
}

/* ======================================================== reductions */

/* Affine maps x -> a*x + b over u64 (wrapping: arithmetic mod 2^64 keeps
 * composition exactly associative); (a,b).(c,d) = (a*c, a*d + b) is
 * associative and not commutative. */
typedef struct Aff { uint64_t a, b; } Aff;
typedef Aff (*AffOp)(Aff, Aff);
static Aff aff_compose(Aff x, Aff y) { Aff r = {x.a * y.a, x.a * y.b + x.b}; return r; }
static Aff aff_add(Aff x, Aff y) { Aff r = {x.a + y.a, 0}; return r; }   /* plain sums in .a */
static Aff aff_val(int64_t k) { Aff r = {2 * (uint64_t)k + 1 + (uint64_t)(k % 5) * 1000003u, (uint64_t)val_of(k)}; return r; }

static ax_exp aff_op(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = ax_get(x, 0), b = ax_get(x, 1), c = ax_get(y, 0), d = ax_get(y, 1);
    return ax_tuple2(ax_mul(a, c), ax_add(ax_mul(a, d), b));
}

/* The operands of a reduction test: an array of affine maps (a u64 pair)
 * and an array of i64 (the .a of the same values, for ax_fn_add). */
typedef struct RedIn {
    int rank;
    const int64_t *sh;
    int64_t n, inner, rows;
    Aff *v;
    uint64_t *va, *vb;
    ax_acc aff, sum;
} RedIn;

static void red_in(ax_ctx *cx, RedIn *in, int rank, const int64_t *sh)
{
    in->rank = rank;
    in->sh = sh;
    in->n = shape_size(rank, sh);
    in->inner = rank ? sh[rank - 1] : 1;
    in->rows = rank ? shape_size(rank - 1, sh) : 1;
    in->v = calloc((size_t)in->n + 1, sizeof *in->v);
    in->va = calloc((size_t)in->n + 1, sizeof *in->va);
    in->vb = calloc((size_t)in->n + 1, sizeof *in->vb);
    for (int64_t k = 0; k < in->n; k++) {
        in->v[k] = aff_val(k);
        in->va[k] = in->v[k].a;
        in->vb[k] = in->v[k].b;
    }
    const void *bufs[2] = {in->va, in->vb};
    in->aff = use_tuple(cx, TUP(cx, AX_U64, AX_U64), rank, sh, bufs);
    in->sum = use_data(cx, AX_I64, rank, sh, in->va);
}

static void red_free(RedIn *in)
{
    free(in->v);
    free(in->va);
    free(in->vb);
}

static const Aff aff_z = {3, 5};
static ax_exp aff_z_exp(void) { return ax_tuple2(ax_u64(aff_z.a), ax_u64(aff_z.b)); }
static const Aff sum_z = {100, 0};

/* Checks a result against Aff expectations: for the affine operator both
 * components, for sums the i64 component. */
static void chk_aff(Chk *c, const ax_array *r, bool affine, const Aff *want, int64_t n)
{
    if (!r) { chk_true(c, false, "no result"); return; }
    if (ax_array_size(r) != n) { chk_i(c, -1, ax_array_size(r), n); return; }
    for (int64_t k = 0; k < n; k++) {
        chk_i(c, k, ld_i(ax_array_data(r, 0), ax_array_component_type(r, 0), k), (int64_t)want[k].a);
        if (affine) chk_i(c, k, ld_i(ax_array_data(r, 1), ax_array_component_type(r, 1), k), (int64_t)want[k].b);
    }
}

static const Shape red_shapes[] = {
    {1, {0}}, {1, {1}}, {1, {7}}, {1, {1001}},
    {2, {3, 7}}, {2, {3, 0}}, {2, {0, 7}}, {2, {1, 1}}, {2, {4, 1}},
    {3, {2, 3, 5}}, {3, {2, 0, 5}}, {3, {2, 3, 0}}, {3, {1, 1, 1001}},
};

TEST(ops_fold)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(red_shapes); t++) {
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
    ax_ctx_free(cx);
}

/* ax_fn_fst / ax_fn_snd: associative, not commutative. */
TEST(ops_fold_fst_snd)
{
    ax_ctx *cx = new_cx();
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
    ax_ctx_free(cx);
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

TEST(ops_fold_matrix_product)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const Shape cases[] = {{1, {1001}}, {2, {4, 9}}, {1, {1}}, {2, {2, 0}}};
    for (int t = 0; t < NELEM(cases); t++) {
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
    ax_ctx_free(cx);
}

TEST(ops_fold_all)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const Shape cases[] = {{3, {2, 3, 4}}, {0, {0}}, {2, {0, 3}}, {1, {1001}}, {2, {3, 4}}, {3, {1, 1, 1}}};
    for (int t = 0; t < NELEM(cases); t++) {
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
    ax_ctx_free(cx);
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

TEST(ops_fold_seg)
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
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
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
    ax_ctx_free(cx);
}

/* =============================================================== scans */

enum { SC_L, SC_L1, SC_R, SC_R1, SC_LEX, SC_REX, SC_N };
static const char *const scan_names[SC_N] = {"scanl", "scanl1", "scanr", "scanr1", "scanl_ex", "scanr_ex"};

/* One row: writes the expected scan (and for the _ex kinds the total). */
static int64_t ref_scan(int kind, AffOp op, Aff z, const Aff *a, int64_t n, Aff *out, Aff *total)
{
    switch (kind) {
    case SC_L:
        out[0] = z;
        for (int64_t k = 0; k < n; k++) out[k + 1] = op(out[k], a[k]);
        return n + 1;
    case SC_L1:
        for (int64_t k = 0; k < n; k++) out[k] = k ? op(out[k - 1], a[k]) : a[k];
        return n;
    case SC_R:
        out[n] = z;
        for (int64_t k = n - 1; k >= 0; k--) out[k] = op(a[k], out[k + 1]);
        return n + 1;
    case SC_R1:
        for (int64_t k = n - 1; k >= 0; k--) out[k] = k == n - 1 ? a[k] : op(a[k], out[k + 1]);
        return n;
    case SC_LEX: {
        Aff acc = z;
        for (int64_t k = 0; k < n; k++) { out[k] = acc; acc = op(acc, a[k]); }
        *total = acc;
        return n;
    }
    case SC_REX: {
        Aff acc = z;
        for (int64_t k = n - 1; k >= 0; k--) { out[k] = acc; acc = op(a[k], acc); }
        *total = acc;
        return n;
    }
    }
    return 0;
}

static ax_acc build_scan(int kind, bool affine, ax_acc a)
{
    ax_fn2 f = affine ? aff_op : ax_fn_add;
    ax_exp z = affine ? aff_z_exp() : ax_i64(100);
    switch (kind) {
    case SC_L: return ax_scanl(f, NULL, z, a);
    case SC_L1: return ax_scanl1(f, NULL, a);
    case SC_R: return ax_scanr(f, NULL, z, a);
    case SC_R1: return ax_scanr1(f, NULL, a);
    case SC_LEX: return ax_scanl_ex(f, NULL, z, a);
    default: return ax_scanr_ex(f, NULL, z, a);
    }
}

TEST(ops_scans)
{
    static const Shape cases[] = {
        {1, {0}}, {1, {1}}, {1, {7}}, {1, {1001}},
        {2, {3, 7}}, {2, {3, 0}}, {2, {0, 4}}, {2, {2, 1}}, {2, {2, 1001}},
        {3, {2, 3, 4}},
    };
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        const Shape *s = &cases[t];
        RedIn in;
        red_in(cx, &in, s->rank, s->sh);
        for (int affine = 0; affine < 2; affine++) {
            AffOp op = affine ? aff_compose : aff_add;
            Aff z = affine ? aff_z : sum_z;
            for (int kind = 0; kind < SC_N; kind++) {
                bool plus1 = kind == SC_L || kind == SC_R, ex = kind == SC_LEX || kind == SC_REX;
                int64_t rlen = in.inner + plus1;
                Aff *want = calloc((size_t)(in.rows * rlen) + 1, sizeof *want);
                Aff *tot = calloc((size_t)in.rows + 1, sizeof *tot);
                for (int64_t r = 0; r < in.rows; r++)
                    ref_scan(kind, op, z, in.v + r * in.inner, in.inner, want + r * rlen, tot + r);
                int64_t rsh[3];
                for (int d = 0; d < s->rank; d++) rsh[d] = s->sh[d];
                rsh[s->rank - 1] = rlen;
                ax_acc p = build_scan(kind, affine, affine ? in.aff : in.sum);
                Chk c;
                CHK(&c, "%s %s, shape case %d", scan_names[kind], affine ? "affine" : "add", t);
                if (!ex) {
                    ax_array *r = RUN(cx, p);
                    if (r && SHAPE_ISV(r, s->rank, rsh)) chk_aff(&c, r, affine, want, in.rows * rlen);
                    ax_array_release(r);
                } else {
                    ax_array *out[2] = {NULL, NULL};
                    int nout = ax_run_n(cx, p, out, 2);
                    CHECKF(nout == 2, "ax_run_n gave %d: %s", nout, ax_error(cx));
                    if (nout == 2) {
                        if (SHAPE_ISV(out[0], s->rank, rsh)) chk_aff(&c, out[0], affine, want, in.rows * rlen);
                        if (SHAPE_ISV(out[1], s->rank - 1, s->sh)) chk_aff(&c, out[1], affine, tot, in.rows);
                        ax_array_release(out[0]);
                        ax_array_release(out[1]);
                    }
                    /* the components one at a time */
                    ax_array *r0 = RUN(cx, ax_aget(p, 0)), *r1 = RUN(cx, ax_aget(p, 1));
                    if (r0 && SHAPE_ISV(r0, s->rank, rsh)) chk_aff(&c, r0, affine, want, in.rows * rlen);
                    if (r1 && SHAPE_ISV(r1, s->rank - 1, s->sh)) chk_aff(&c, r1, affine, tot, in.rows);
                    ax_array_release(r0);
                    ax_array_release(r1);
                }
                chk_done(&c);
                free(want);
                free(tot);
            }
        }
        red_free(&in);
    }
    ax_ctx_free(cx);
}

TEST(ops_scans_fst_snd)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int32_t a[15];
    for (int k = 0; k < 15; k++) a[k] = (int32_t)val_of(k);
    ax_acc m = use_data(cx, AX_I32, 2, SH(3, 5), a);
    const int32_t z = -99;
    ax_acc progs[8] = {
        ax_scanl1(ax_fn_fst, NULL, m), ax_scanl1(ax_fn_snd, NULL, m),
        ax_scanr1(ax_fn_fst, NULL, m), ax_scanr1(ax_fn_snd, NULL, m),
        ax_scanl(ax_fn_fst, NULL, ax_i32(z), m), ax_scanl(ax_fn_snd, NULL, ax_i32(z), m),
        ax_scanr(ax_fn_fst, NULL, ax_i32(z), m), ax_scanr(ax_fn_snd, NULL, ax_i32(z), m),
    };
    for (int p = 0; p < 8; p++) {
        int64_t len = p < 4 ? 5 : 6;
        ax_array *r = RUN(cx, progs[p]);
        if (r && SHAPE_IS(r, 2, 3, len)) {
            Chk c;
            CHK(&c, "scan with fst/snd, program %d", p);
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < len; k++) {
                    const int32_t *row = a + i * 5;
                    int32_t w = 0;
                    switch (p) {
                    case 0: w = row[0]; break;                     /* a0.a1...ak = a0 */
                    case 1: w = row[k]; break;                     /* = ak */
                    case 2: w = row[k]; break;                     /* ak...a4 = ak */
                    case 3: w = row[4]; break;                     /* = a4 */
                    case 4: w = z; break;                          /* z.a0... = z */
                    case 5: w = k ? row[k - 1] : z; break;
                    case 6: w = k < 5 ? row[k] : z; break;
                    case 7: w = z; break;                          /* ...ak.z = z */
                    }
                    chk_i(&c, i * len + k, ((int32_t *)ax_array_data(r, 0))[i * len + k], w);
                }
            chk_done(&c);
        }
        ax_array_release(r);
    }
    ax_ctx_free(cx);
}

/* ============================================================== filter */

static ax_exp mult3(ax_exp x, void *env) { return ax_eq(ax_rem(x, ax_i64(3)), ax_i64(0)); }
static ax_exp above(ax_exp x, void *env) { return ax_gt(x, ax_i64(*(const int64_t *)env)); }
static ax_exp pair_keep(ax_exp p, void *env) { return ax_gt(ax_get(p, 1), ax_f64(0.5)); }

TEST(ops_filter)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const Shape cases[] = {
        {1, {1001}}, {1, {0}}, {1, {1}}, {1, {7}}, {2, {4, 6}}, {2, {0, 5}}, {3, {2, 3, 4}}, {0, {0}},
    };
    for (int t = 0; t < NELEM(cases); t++) {
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
    ax_ctx_free(cx);
}

/* ============================================================ stencils */

/* Where boundary `kind` reads index i of an extent n: -1 for "outside"
 * (the constant).  Mirror reflects about the edge element without
 * repeating it (-1 -> 1, n -> n-2), repeatedly if the stencil reaches
 * further than the array (period 2(n-1); an extent of 1 always reads 0). */
static int64_t bnd_index(int64_t i, int64_t n, ax_boundary_kind kind)
{
    if (i >= 0 && i < n) return i;
    switch (kind) {
    case AX_CLAMP: return i < 0 ? 0 : n - 1;
    case AX_MIRROR: {
        if (n == 1) return 0;
        int64_t p = 2 * (n - 1);
        i = ((i % p) + p) % p;
        return i < n ? i : p - i;
    }
    case AX_WRAP: return ((i % n) + n) % n;
    default: return -1;
    }
}

static int64_t sten_w(int k) { return (int64_t)k * k + 1; }

typedef struct StenEnv { int n; } StenEnv;
static ax_exp sten_sum(const ax_exp *xs, void *env)
{
    int n = ((const StenEnv *)env)->n;
    ax_exp s = ax_mul(ax_i64(sten_w(0)), xs[0]);
    for (int k = 1; k < n; k++) s = ax_add(s, ax_mul(ax_i64(sten_w(k)), xs[k]));
    return s;
}

/* Expected weighted sum of the neighbourhood of ix (weights from w0 on). */
static int64_t ref_sten_at(int rank, const int64_t *sh, const int *size, ax_boundary_kind kind, int64_t cval,
                           const int64_t *a, const int64_t *ix, int w0)
{
    int64_t cnt = 1;
    for (int d = 0; d < rank; d++) cnt *= size[d];
    int64_t acc = 0;
    for (int64_t k = 0; k < cnt; k++) {
        int64_t off[3], j[3];
        unravel(k, rank, (const int64_t[]){size[0], rank > 1 ? size[1] : 1, rank > 2 ? size[2] : 1}, off);
        bool outside = false;
        for (int d = 0; d < rank; d++) {
            j[d] = bnd_index(ix[d] + off[d] - size[d] / 2, sh[d], kind);
            if (j[d] < 0) outside = true;
        }
        int64_t v = outside ? cval : a[ravel(rank, sh, j)];
        acc += sten_w(w0 + (int)k) * v;
    }
    return acc;
}

static ax_boundary mk_bnd(ax_boundary_kind k, int64_t cval)
{
    switch (k) {
    case AX_CLAMP: return ax_clamp();
    case AX_MIRROR: return ax_mirror();
    case AX_WRAP: return ax_wrap();
    default: return ax_constant(ax_i64(cval));
    }
}
static const char *const bnd_names[4] = {"clamp", "mirror", "wrap", "constant"};

typedef struct StenCase { int rank; int size[3]; int64_t sh[3]; } StenCase;

TEST(ops_stencil)
{
    static const StenCase cases[] = {
        {1, {3}, {0}}, {1, {3}, {1}}, {1, {3}, {2}}, {1, {3}, {7}}, {1, {3}, {1001}},
        {1, {5}, {2}}, {1, {7}, {3}}, {1, {1}, {4}},
        {2, {3, 3}, {5, 6}}, {2, {3, 3}, {1, 1}}, {2, {3, 3}, {2, 2}}, {2, {3, 3}, {1, 7}}, {2, {3, 3}, {2, 9}},
        {2, {3, 3}, {0, 4}},
        {3, {3, 3, 3}, {3, 4, 5}}, {3, {3, 3, 3}, {1, 2, 3}}, {3, {3, 3, 3}, {2, 2, 2}},
        {2, {5, 3}, {7, 6}}, {2, {5, 3}, {2, 4}}, {2, {5, 3}, {1, 3}}, {2, {5, 3}, {4, 1}},
    };
    const int64_t cval = -7;
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        const StenCase *c = &cases[t];
        int64_t n = shape_size(c->rank, c->sh);
        int64_t *a = alloc_i64(n), *want = alloc_i64(n), ix[3];
        for (int64_t k = 0; k < n; k++) a[k] = val_of(k);
        ax_acc x = use_data(cx, AX_I64, c->rank, c->sh, a);
        StenEnv env = {1};
        for (int d = 0; d < c->rank; d++) env.n *= c->size[d];
        for (int b = 0; b < 4; b++) {
            ax_boundary_kind kind = (ax_boundary_kind)b;
            for (int64_t k = 0; k < n; k++) {
                unravel(k, c->rank, c->sh, ix);
                want[k] = ref_sten_at(c->rank, c->sh, c->size, kind, cval, a, ix, 0);
            }
            ax_array *r = RUN(cx, ax_stencil(sten_sum, &env, c->size, mk_bnd(kind, cval), x));
            if (r && SHAPE_ISV(r, c->rank, c->sh)) {
                Chk ch;
                CHK(&ch, "stencil case %d (rank %d, %d-wide), %s", t, c->rank, c->size[0], bnd_names[b]);
                chk_arr_i(&ch, r, 0, want, n);
                chk_done(&ch);
            }
            ax_array_release(r);
        }
        free(a);
        free(want);
    }
    ax_ctx_free(cx);
}

/* A 3x3 average in f32, and a stencil over pairs with a constant pair
 * outside. */
static ax_exp avg9(const ax_exp *xs, void *env)
{
    ax_exp s = xs[0];
    for (int k = 1; k < 9; k++) s = ax_add(s, xs[k]);
    return ax_div(s, ax_f32(9));
}
static ax_exp pair_sten(const ax_exp *xs, void *env)
{
    ax_exp l = ax_cvt(ax_get(xs[0], 0), AX_F64), r = ax_cvt(ax_get(xs[2], 0), AX_F64);
    return ax_add(ax_add(l, ax_mul(ax_f64(10), r)), ax_get(xs[1], 1));
}

TEST(ops_stencil_float_and_tuples)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    float img[20];
    for (int k = 0; k < 20; k++) img[k] = (float)val_of(k) * 0.5f;
    ax_array *r = RUN(cx, ax_stencil(avg9, NULL, (const int[]){3, 3}, ax_clamp(), use_data(cx, AX_F32, 2, SH(4, 5), img)));
    if (r && SHAPE_IS(r, 2, 4, 5)) {
        Chk c;
        CHK(&c, "3x3 average");
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 5; j++) {
                double s = 0;
                for (int di = -1; di <= 1; di++)
                    for (int dj = -1; dj <= 1; dj++)
                        s += img[bnd_index(i + di, 4, AX_CLAMP) * 5 + bnd_index(j + dj, 5, AX_CLAMP)];
                chk_f(&c, i * 5 + j, ((float *)ax_array_data(r, 0))[i * 5 + j], s / 9, 1e-6);
            }
        chk_done(&c);
    }
    ax_array_release(r);
    int32_t p0[6] = {1, 2, 3, 4, 5, 6};
    double p1[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
    const void *bufs[2] = {p0, p1};
    ax_acc pa = use_tuple(cx, TUP(cx, AX_I32, AX_F64), 1, SH(6), bufs);
    r = RUN(cx, ax_stencil(pair_sten, NULL, (const int[]){3}, ax_constant(ax_tuple2(ax_i32(-100), ax_f64(0))), pa));
    if (r && SHAPE_IS(r, 1, 6)) {
        for (int k = 0; k < 6; k++) {
            double l = k > 0 ? p0[k - 1] : -100, rr = k < 5 ? p0[k + 1] : -100;
            CHECK_CLOSE(((double *)ax_array_data(r, 0))[k], l + 10 * rr + p1[k], 0);
        }
    }
    ax_array_release(r);
    ax_ctx_free(cx);
}

typedef struct Sten2Case {
    int rank;
    int sa[2], sb[2];
    int64_t sha[2], shb[2], shr[2];
    ax_boundary_kind ba, bb;
} Sten2Case;

TEST(ops_stencil2)
{
    static const Sten2Case cases[] = {
        {1, {3}, {5}, {5}, {7}, {5}, AX_CLAMP, AX_WRAP},
        {1, {3}, {3}, {7}, {4}, {4}, AX_MIRROR, AX_CONSTANT},
        {1, {5}, {1}, {1001}, {1001}, {1001}, AX_WRAP, AX_CLAMP},
        {1, {3}, {3}, {0}, {3}, {0}, AX_CLAMP, AX_CLAMP},
        {2, {3, 3}, {3, 1}, {4, 6}, {5, 3}, {4, 3}, AX_MIRROR, AX_CONSTANT},
        {2, {1, 3}, {3, 3}, {2, 2}, {6, 1}, {2, 1}, AX_CONSTANT, AX_MIRROR},
        {2, {3, 5}, {5, 3}, {3, 8}, {9, 4}, {3, 4}, AX_WRAP, AX_CLAMP},
    };
    const int64_t ca = 11, cb = -3;
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        const Sten2Case *c = &cases[t];
        int64_t na = shape_size(c->rank, c->sha), nb = shape_size(c->rank, c->shb), nr = shape_size(c->rank, c->shr);
        int64_t *a = alloc_i64(na), *b = alloc_i64(nb), *want = alloc_i64(nr), ix[3];
        for (int64_t k = 0; k < na; k++) a[k] = val_of(k);
        for (int64_t k = 0; k < nb; k++) b[k] = val_of(k + 1000) * 3;
        int cnta = c->sa[0] * (c->rank > 1 ? c->sa[1] : 1);
        for (int64_t k = 0; k < nr; k++) {
            unravel(k, c->rank, c->shr, ix);
            want[k] = ref_sten_at(c->rank, c->sha, c->sa, c->ba, ca, a, ix, 0) +
                      ref_sten_at(c->rank, c->shb, c->sb, c->bb, cb, b, ix, cnta);
        }
        StenEnv env = {cnta + c->sb[0] * (c->rank > 1 ? c->sb[1] : 1)};
        ax_array *r = RUN(cx, ax_stencil2(sten_sum, &env, c->sa, mk_bnd(c->ba, ca), use_data(cx, AX_I64, c->rank, c->sha, a),
                                          c->sb, mk_bnd(c->bb, cb), use_data(cx, AX_I64, c->rank, c->shb, b)));
        if (r && SHAPE_ISV(r, c->rank, c->shr)) {
            Chk ch;
            CHK(&ch, "stencil2 case %d (%s, %s)", t, bnd_names[c->ba], bnd_names[c->bb]);
            chk_arr_i(&ch, r, 0, want, nr);
            chk_done(&ch);
        }
        ax_array_release(r);
        free(a);
        free(b);
        free(want);
    }
    ax_ctx_free(cx);
}

/* ======================================================== control flow */

static ax_exp dbl_i64(ax_exp x, void *env) { return ax_mul(x, ax_i64(2)); }
static ax_exp inc_i32(ax_exp x, void *env) { return ax_add(x, ax_i32(1)); }
static ax_exp sum_le(ax_exp s, void *env) { return ax_le(s, ax_i64(*(const int64_t *)env)); }

static ax_exp scalar_of(ax_acc r0) { return ax_at(r0, ax_index(0, NULL)); }

TEST(ops_acond)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int64_t lo[7] = {1, 2, 3, -4, 0, 1, 2}, hi[7] = {10, 20, 30, 40, 50, 60, 70};
    ax_acc x[2] = {use_data(cx, AX_I64, 1, SH(7), lo), use_data(cx, AX_I64, 1, SH(7), hi)};
    for (int i = 0; i < 2; i++) {
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
        int n = ax_run_n(cx, t, out, 2);
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
    ax_ctx_free(cx);
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

TEST(ops_awhile)
{
    ax_ctx *cx = new_cx();
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
        int n = ax_run_n(cx, ax_awhile(aw_cond2, aw_body2, &bound, ax_atuple2(x, ax_unit(cx, ax_i32(0)))), out, 2);
        CHECKF(n == 2, "ax_run_n: %d: %s", n, ax_error(cx));
        if (n == 2) {
            if (SHAPE_IS(out[0], 1, 5))
                for (int k = 0; k < 5; k++) CHECK_EQ_I(((int64_t *)ax_array_data(out[0], 0))[k], w[k]);
            if (SHAPE_IS(out[1], 0, 0)) CHECK_EQ_I(((int32_t *)ax_array_data(out[1], 0))[0], iters);
            ax_array_release(out[0]);
            ax_array_release(out[1]);
        }
    }
    ax_ctx_free(cx);
}

TEST(ops_atuple)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int32_t a[7] = {1, 2, 3, 4, 5, 6, 7};
    double m[6] = {0.5, 1, 1.5, 2, 2.5, 3};
    ax_acc A = use_data(cx, AX_I32, 1, SH(7), a), M = use_data(cx, AX_F64, 2, SH(2, 3), m);
    ax_acc B = ax_unit(cx, ax_bool(true));
    ax_acc t = ax_atuple(3, (ax_acc[]){A, M, B});
    ax_array *out[4] = {NULL, NULL, NULL, NULL};
    int n = ax_run_n(cx, t, out, 4);
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
    n = ax_run_n(cx, nest, o3, 3);
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
    ax_ctx_free(cx);
}

/* =================================================== scalar operations */

enum {
    O_ADD, O_SUB, O_MUL, O_DIV, O_QUOT, O_REM, O_IDIV, O_MOD, O_MIN, O_MAX,
    O_NEG, O_ABS, O_SIGNUM,
    O_BAND, O_BOR, O_BXOR, O_BNOT, O_SHL, O_SHR, O_ROTL, O_ROTR, O_POPCOUNT, O_CLZ, O_CTZ,
    O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE,
    O_AND, O_OR, O_NOT,
    O_EXP, O_LOG, O_SQRT, O_SIN, O_COS, O_TAN, O_ASIN, O_ACOS, O_ATAN,
    O_SINH, O_COSH, O_TANH, O_ASINH, O_ACOSH, O_ATANH,
    O_POW, O_LOGBASE, O_ATAN2, O_ISNAN, O_ISINF,
    O_N
};
static const char *const op_names[O_N] = {
    "add", "sub", "mul", "div", "quot", "rem", "idiv", "mod", "min", "max",
    "neg", "abs", "signum",
    "band", "bor", "bxor", "bnot", "shl", "shr", "rotl", "rotr", "popcount", "clz", "ctz",
    "eq", "ne", "lt", "le", "gt", "ge",
    "and", "or", "not",
    "exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "pow", "logbase", "atan2", "is_nan", "is_infinite",
};

static bool op_unary(int op)
{
    switch (op) {
    case O_NEG: case O_ABS: case O_SIGNUM: case O_BNOT: case O_POPCOUNT: case O_CLZ: case O_CTZ: case O_NOT:
    case O_ISNAN: case O_ISINF:
        return true;
    default:
        return op >= O_EXP && op <= O_ATANH;
    }
}

static ax_scalar op_rtype(int op, ax_scalar s)
{
    if ((op >= O_EQ && op <= O_NOT) || op == O_ISNAN || op == O_ISINF) return AX_BOOL;
    if (op == O_POPCOUNT || op == O_CLZ || op == O_CTZ) return AX_I32;
    return s;
}

static ax_exp apply_op(int op, ax_exp a, ax_exp b)
{
    switch (op) {
    case O_ADD: return ax_add(a, b);
    case O_SUB: return ax_sub(a, b);
    case O_MUL: return ax_mul(a, b);
    case O_DIV: return ax_div(a, b);
    case O_QUOT: return ax_quot(a, b);
    case O_REM: return ax_rem(a, b);
    case O_IDIV: return ax_idiv(a, b);
    case O_MOD: return ax_mod(a, b);
    case O_MIN: return ax_min(a, b);
    case O_MAX: return ax_max(a, b);
    case O_NEG: return ax_neg(a);
    case O_ABS: return ax_abs(a);
    case O_SIGNUM: return ax_signum(a);
    case O_BAND: return ax_band(a, b);
    case O_BOR: return ax_bor(a, b);
    case O_BXOR: return ax_bxor(a, b);
    case O_BNOT: return ax_bnot(a);
    case O_SHL: return ax_shl(a, b);
    case O_SHR: return ax_shr(a, b);
    case O_ROTL: return ax_rotl(a, b);
    case O_ROTR: return ax_rotr(a, b);
    case O_POPCOUNT: return ax_popcount(a);
    case O_CLZ: return ax_clz(a);
    case O_CTZ: return ax_ctz(a);
    case O_EQ: return ax_eq(a, b);
    case O_NE: return ax_ne(a, b);
    case O_LT: return ax_lt(a, b);
    case O_LE: return ax_le(a, b);
    case O_GT: return ax_gt(a, b);
    case O_GE: return ax_ge(a, b);
    case O_AND: return ax_and(a, b);
    case O_OR: return ax_or(a, b);
    case O_NOT: return ax_not(a);
    case O_EXP: return ax_exp_(a);
    case O_LOG: return ax_log(a);
    case O_SQRT: return ax_sqrt(a);
    case O_SIN: return ax_sin(a);
    case O_COS: return ax_cos(a);
    case O_TAN: return ax_tan(a);
    case O_ASIN: return ax_asin(a);
    case O_ACOS: return ax_acos(a);
    case O_ATAN: return ax_atan(a);
    case O_SINH: return ax_sinh(a);
    case O_COSH: return ax_cosh(a);
    case O_TANH: return ax_tanh(a);
    case O_ASINH: return ax_asinh(a);
    case O_ACOSH: return ax_acosh(a);
    case O_ATANH: return ax_atanh(a);
    case O_POW: return ax_pow(a, b);
    case O_LOGBASE: return ax_logbase(a, b);
    case O_ATAN2: return ax_atan2(a, b);
    case O_ISNAN: return ax_is_nan(a);
    case O_ISINF: return ax_is_infinite(a);
    }
    return ax_bool(false);
}

/* ---- C references */

static bool amount_oor(int64_t b, ax_scalar sb, int w)
{
    if (sc_signed_(sb) && b < 0) return true;
    return (uint64_t)b >= (uint64_t)w;
}

static int64_t ref_int(int op, ax_scalar s, int64_t a, int64_t b, ax_scalar sb)
{
    int w = sc_bits_(s);
    bool sg = sc_signed_(s);
    uint64_t m = w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case O_ADD: return norm_i(s, ua + ub);
    case O_SUB: return norm_i(s, ua - ub);
    case O_MUL: return norm_i(s, ua * ub);
    case O_DIV:
    case O_QUOT:
        if (!sg) return norm_i(s, ua / ub);
        if (b == -1) return norm_i(s, 0 - ua);
        return norm_i(s, (uint64_t)(a / b));
    case O_REM:
        if (!sg) return norm_i(s, ua % ub);
        if (b == -1) return 0;
        return a % b;
    case O_IDIV: {
        if (!sg) return norm_i(s, ua / ub);
        if (b == -1) return norm_i(s, 0 - ua);
        int64_t q = a / b;
        if (a % b != 0 && ((a < 0) != (b < 0))) q--;
        return q;
    }
    case O_MOD: {
        if (!sg) return norm_i(s, ua % ub);
        if (b == -1) return 0;
        int64_t r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    case O_MIN: return (sg ? a < b : ua < ub) ? a : b;
    case O_MAX: return (sg ? a > b : ua > ub) ? a : b;
    case O_NEG: return norm_i(s, 0 - ua);
    case O_ABS: return sg && a < 0 ? norm_i(s, 0 - ua) : a;
    case O_SIGNUM: return sg ? (a > 0) - (a < 0) : ua != 0;
    case O_BAND: return norm_i(s, ua & ub);
    case O_BOR: return norm_i(s, ua | ub);
    case O_BXOR: return norm_i(s, ua ^ ub);
    case O_BNOT: return norm_i(s, ~ua);
    case O_SHL: return amount_oor(b, sb, w) ? 0 : norm_i(s, ua << ub);
    case O_SHR:
        if (amount_oor(b, sb, w)) return sg && a < 0 ? -1 : 0;
        return sg ? norm_i(s, (uint64_t)(a >> ub)) : norm_i(s, (ua & m) >> ub);
    case O_ROTL:
    case O_ROTR: {
        int r = sc_signed_(sb) ? (int)(((b % w) + w) % w) : (int)(ub % (uint64_t)w);
        if (op == O_ROTR) r = (w - r) % w;
        uint64_t x = ua & m;
        return norm_i(s, r == 0 ? x : ((x << r) | (x >> (w - r))) & m);
    }
    case O_POPCOUNT: return __builtin_popcountll(ua & m);
    case O_CLZ: return (ua & m) == 0 ? w : __builtin_clzll(ua & m) - (64 - w);
    case O_CTZ: return (ua & m) == 0 ? w : __builtin_ctzll(ua & m);
    case O_EQ: return a == b;
    case O_NE: return a != b;
    case O_LT: return sg ? a < b : ua < ub;
    case O_LE: return sg ? a <= b : ua <= ub;
    case O_GT: return sg ? a > b : ua > ub;
    case O_GE: return sg ? a >= b : ua >= ub;
    case O_AND: return a && b;
    case O_OR: return a || b;
    case O_NOT: return !a;
    }
    return 0;
}

static double ref_f64(int op, double a, double b)
{
    switch (op) {
    case O_ADD: return a + b;
    case O_SUB: return a - b;
    case O_MUL: return a * b;
    case O_DIV: return a / b;
    case O_MIN: return fmin(a, b);
    case O_MAX: return fmax(a, b);
    case O_NEG: return -a;
    case O_ABS: return fabs(a);
    case O_SIGNUM: return a > 0 ? 1.0 : a < 0 ? -1.0 : a;
    case O_EQ: return a == b;
    case O_NE: return a != b;
    case O_LT: return a < b;
    case O_LE: return a <= b;
    case O_GT: return a > b;
    case O_GE: return a >= b;
    case O_EXP: return exp(a);
    case O_LOG: return log(a);
    case O_SQRT: return sqrt(a);
    case O_SIN: return sin(a);
    case O_COS: return cos(a);
    case O_TAN: return tan(a);
    case O_ASIN: return asin(a);
    case O_ACOS: return acos(a);
    case O_ATAN: return atan(a);
    case O_SINH: return sinh(a);
    case O_COSH: return cosh(a);
    case O_TANH: return tanh(a);
    case O_ASINH: return asinh(a);
    case O_ACOSH: return acosh(a);
    case O_ATANH: return atanh(a);
    case O_POW: return pow(a, b);
    case O_LOGBASE: return log(b) / log(a);
    case O_ATAN2: return atan2(a, b);
    case O_ISNAN: return isnan(a) != 0;
    case O_ISINF: return isinf(a) != 0;
    }
    return 0;
}

static double ref_f32(int op, float a, float b)
{
    float r = 0;
    switch (op) {
    case O_ADD: r = a + b; break;
    case O_SUB: r = a - b; break;
    case O_MUL: r = a * b; break;
    case O_DIV: r = a / b; break;
    case O_MIN: r = fminf(a, b); break;
    case O_MAX: r = fmaxf(a, b); break;
    case O_NEG: r = -a; break;
    case O_ABS: r = fabsf(a); break;
    case O_SIGNUM: r = a > 0 ? 1.0f : a < 0 ? -1.0f : a; break;
    case O_EQ: return a == b;
    case O_NE: return a != b;
    case O_LT: return a < b;
    case O_LE: return a <= b;
    case O_GT: return a > b;
    case O_GE: return a >= b;
    case O_EXP: r = expf(a); break;
    case O_LOG: r = logf(a); break;
    case O_SQRT: r = sqrtf(a); break;
    case O_SIN: r = sinf(a); break;
    case O_COS: r = cosf(a); break;
    case O_TAN: r = tanf(a); break;
    case O_ASIN: r = asinf(a); break;
    case O_ACOS: r = acosf(a); break;
    case O_ATAN: r = atanf(a); break;
    case O_SINH: r = sinhf(a); break;
    case O_COSH: r = coshf(a); break;
    case O_TANH: r = tanhf(a); break;
    case O_ASINH: r = asinhf(a); break;
    case O_ACOSH: r = acoshf(a); break;
    case O_ATANH: r = atanhf(a); break;
    case O_POW: r = powf(a, b); break;
    case O_LOGBASE: r = logf(b) / logf(a); break;
    case O_ATAN2: r = atan2f(a, b); break;
    case O_ISNAN: return isnan(a) != 0;
    case O_ISINF: return isinf(a) != 0;
    }
    return r;
}

/* ---- the driver: run-time and folded */

typedef struct OpEnv {
    int op;
    ax_scalar sa, sb;
    const void *A, *B;
    const int64_t *pick;   /* folded: which operand pairs */
    int64_t n;
} OpEnv;

static ax_exp cst(ax_scalar s, const void *buf, int64_t k)
{
    if (sc_float_(s)) return ax_constf(s, ld_f(buf, s, k));
    return ax_consti(s, ld_i(buf, s, k));
}

static ax_exp op_map(ax_exp x, void *env) { return apply_op(((const OpEnv *)env)->op, x, x); }
static ax_exp op_zip(ax_exp x, ax_exp y, void *env) { return apply_op(((const OpEnv *)env)->op, x, y); }

static ax_exp op_const_at(const OpEnv *e, int64_t j)
{
    int64_t k = e->pick[j];
    ax_exp a = cst(e->sa, e->A, k);
    return apply_op(e->op, a, op_unary(e->op) ? a : cst(e->sb, e->B, k));
}

/* element j: the op applied to constants (folded when built) */
static ax_exp op_folded(ax_exp ix, void *env)
{
    const OpEnv *e = env;
    ax_exp i = ax_index_get(ix, 0);
    ax_exp r = op_const_at(e, e->n - 1);
    for (int64_t j = e->n - 2; j >= 0; j--) r = ax_cond(ax_eq(i, ax_i64(j)), op_const_at(e, j), r);
    return r;
}

/* Applies op to the n operand pairs (A[k], B[k]) inside ax_map/ax_zip_with,
 * checks against the C reference (exactly, or within rel for floats), then
 * builds the same operation from constants (folded when built) for up to 64
 * of the pairs and checks that it gives the run-time values. */
static void check_op_(const char *file, int line, ax_ctx *cx, int op, ax_scalar sa, const void *A, ax_scalar sb,
                      const void *B, int64_t n, double rel)
{
    ax_scalar rt = op_rtype(op, sa);
    bool unary = op_unary(op);
    Chk c;
    chk_init(&c, file, line, "%s on %s%s%s", op_names[op], ax_scalar_name(sa), unary ? "" : ", ",
             unary ? "" : ax_scalar_name(sb));
    OpEnv env = {op, sa, sb, A, B, NULL, n};
    ax_acc a = use_data(cx, sa, 1, SH(n), A);
    ax_acc p = unary ? ax_map(op_map, &env, a) : ax_zip_with(op_zip, &env, a, use_data(cx, sb, 1, SH(n), B));
    ax_array *r = ax_run(cx, p);
    if (!r) {
        chk_true(&c, false, ax_error(cx));
        chk_done(&c);
        return;
    }
    chk_true(&c, ax_array_component_type(r, 0) == rt, "result type");
    chk_true(&c, ax_array_size(r) == n, "result size");
    if (ax_array_component_type(r, 0) != rt || ax_array_size(r) != n) {
        ax_array_release(r);
        chk_done(&c);
        return;
    }
    const void *got = ax_array_data(r, 0);
    for (int64_t k = 0; k < n; k++) {
        if (sc_float_(sa)) {
            double x = ld_f(A, sa, k), y = unary ? x : ld_f(B, sb, k);
            double w = sa == AX_F32 ? ref_f32(op, (float)x, (float)y) : ref_f64(op, x, y);
            if (c.bad < 6 && !harness_close(ld_f(got, rt, k), w, rt == AX_BOOL ? 0 : rel))
                fprintf(stderr, "%s:%d: %s(%.9g, %.9g):\n", file, line, op_names[op], x, y);
            chk_f(&c, k, ld_f(got, rt, k), w, rt == AX_BOOL ? 0 : rel);
        } else {
            int64_t x = ld_i(A, sa, k), y = unary ? x : ld_i(B, sb, k);
            int64_t w = ref_int(op, sa, x, y, sb);
            if (c.bad < 6 && ld_i(got, rt, k) != w)
                fprintf(stderr, "%s:%d: %s(%lld, %lld):\n", file, line, op_names[op], (long long)x, (long long)y);
            chk_i(&c, k, ld_i(got, rt, k), w);
        }
    }
    /* the build-time folder gives what the run time gives */
    int64_t m = n < 64 ? n : 64, pick[64];
    for (int64_t j = 0; j < m; j++) pick[j] = j * n / m;
    env.pick = pick;
    env.n = m;
    if (m > 0) {
        ax_array *f = ax_run(cx, ax_generate(cx, ax_ix1(ax_i64(m)), op_folded, &env));
        if (!f) {
            chk_true(&c, false, "the folded program failed");
            fprintf(stderr, "  %s\n", ax_error(cx));
        } else if (ax_array_component_type(f, 0) != rt || ax_array_size(f) != m) {
            chk_true(&c, false, "folded: type or size");
        } else {
            for (int64_t j = 0; j < m; j++) {
                bool same;
                if (sc_float_(rt)) {
                    double x = ld_f(ax_array_data(f, 0), rt, j), y = ld_f(got, rt, pick[j]);
                    same = (isnan(x) && isnan(y)) || (x == y && signbit(x) == signbit(y));
                    if (!same && c.bad < 6)
                        fprintf(stderr, "%s:%d: %s: folded [%lld] %.17g, at run time %.17g\n", file, line, c.what,
                                (long long)pick[j], x, y);
                } else {
                    same = ld_i(ax_array_data(f, 0), rt, j) == ld_i(got, rt, pick[j]);
                    if (!same && c.bad < 6)
                        fprintf(stderr, "%s:%d: %s: folded [%lld] %lld, at run time %lld\n", file, line, c.what,
                                (long long)pick[j], (long long)ld_i(ax_array_data(f, 0), rt, j),
                                (long long)ld_i(got, rt, pick[j]));
                }
                if (!same) c.bad++;
            }
        }
        ax_array_release(f);
    }
    ax_array_release(r);
    chk_done(&c);
}
#define CHECK_OP(cx, op, sa, A, sb, B, n, rel) check_op_(__FILE__, __LINE__, (cx), (op), (sa), (A), (sb), (B), (n), (rel))

/* Interesting values of an integer type (wrapped to it, deduplicated). */
static int int_vals(ax_scalar s, int64_t *v)
{
    static const int64_t base[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 181, 46341, -46341,
                                   INT64_C(3037000500), INT64_C(-1000000000007), 0x5a5a5a5a5a5a5a5a};
    int n = 0;
    int64_t cand[NELEM(base) + 4];
    for (int i = 0; i < NELEM(base); i++) cand[i] = norm_i(s, (uint64_t)base[i]);
    cand[NELEM(base)] = type_min(s);
    cand[NELEM(base) + 1] = type_max(s);
    cand[NELEM(base) + 2] = norm_i(s, (uint64_t)type_min(s) + 1);
    cand[NELEM(base) + 3] = norm_i(s, (uint64_t)type_max(s) - 1);
    for (int i = 0; i < NELEM(cand); i++) {
        bool dup = false;
        for (int j = 0; j < n; j++) dup |= v[j] == cand[i];
        if (!dup) v[n++] = cand[i];
    }
    return n;
}

static const ax_scalar int_types[] = {AX_I8, AX_U8, AX_I16, AX_U16, AX_I32, AX_U32, AX_I64, AX_U64};

TEST(ops_int_arith_bits_compare)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const int ops[] = {O_ADD, O_SUB, O_MUL, O_DIV, O_QUOT, O_REM, O_IDIV, O_MOD, O_MIN, O_MAX,
                              O_NEG, O_ABS, O_SIGNUM, O_BAND, O_BOR, O_BXOR, O_BNOT,
                              O_POPCOUNT, O_CLZ, O_CTZ, O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE};
    for (int t = 0; t < NELEM(int_types); t++) {
        ax_scalar s = int_types[t];
        int64_t v[32];
        int nv = int_vals(s, v);
        uint64_t A[1024], B[1024];
        for (int o = 0; o < NELEM(ops); o++) {
            int op = ops[o];
            bool divides = op >= O_DIV && op <= O_MOD;
            int64_t n = 0;
            for (int i = 0; i < nv; i++)
                for (int j = 0; j < nv; j++) {
                    if (divides && v[j] == 0) continue;
                    st_i(A, s, n, v[i]);
                    st_i(B, s, n, v[j]);
                    n++;
                }
            CHECK_OP(cx, op, s, A, s, B, n, 0);
        }
    }
    ax_ctx_free(cx);
}

/* The division family on negative operands, by hand. */
TEST(ops_int_division_signs)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    /*                    a   b  quot rem idiv mod */
    static const int32_t t[][6] = {
        { 7,  2,  3,  1,  3,  1},
        {-7,  2, -3, -1, -4,  1},
        { 7, -2, -3,  1, -4, -1},
        {-7, -2,  3, -1,  3, -1},
        {-6,  3, -2,  0, -2,  0},
        { 0, -5,  0,  0,  0,  0},
        {-1,  5,  0, -1, -1,  4},
        {INT32_MIN, -1, INT32_MIN, 0, INT32_MIN, 0},
    };
    int32_t a[NELEM(t)], b[NELEM(t)];
    for (int i = 0; i < NELEM(t); i++) { a[i] = t[i][0]; b[i] = t[i][1]; }
    ax_acc A = use_data(cx, AX_I32, 1, SH(NELEM(t)), a), B = use_data(cx, AX_I32, 1, SH(NELEM(t)), b);
    static const int ops[5] = {O_QUOT, O_REM, O_IDIV, O_MOD, O_DIV};
    static const int col[5] = {2, 3, 4, 5, 2};
    for (int o = 0; o < 5; o++) {
        OpEnv env = {ops[o], AX_I32, AX_I32, NULL, NULL, NULL, 0};
        ax_array *r = RUN(cx, ax_zip_with(op_zip, &env, A, B));
        if (r && SHAPE_IS(r, 1, NELEM(t)))
            for (int i = 0; i < NELEM(t); i++)
                CHECKF(((int32_t *)ax_array_data(r, 0))[i] == t[i][col[o]], "%s(%d, %d) = %d, want %d", op_names[ops[o]],
                       t[i][0], t[i][1], ((int32_t *)ax_array_data(r, 0))[i], t[i][col[o]]);
        ax_array_release(r);
    }
    ax_ctx_free(cx);
}

/* Shifts and rotations with amounts of several integer types. */
TEST(ops_int_shifts_rotates)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const int64_t amounts_base[] = {-1, 0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127,
                                           128, 255, 256, -8, -65, INT64_C(1) << 40, INT64_MIN, INT64_MAX};
    static const ax_scalar amount_types[] = {AX_I32, AX_U8, AX_I64, AX_U64, AX_I8, AX_U16};
    for (int t = 0; t < NELEM(int_types); t++) {
        ax_scalar s = int_types[t];
        int64_t v[32];
        int nv = int_vals(s, v);
        for (int at = 0; at < NELEM(amount_types); at++) {
            ax_scalar sb = amount_types[at];
            int64_t am[NELEM(amounts_base)];
            int na = 0;
            for (int i = 0; i < NELEM(amounts_base); i++) {
                int64_t x = norm_i(sb, (uint64_t)amounts_base[i]);
                bool dup = false;
                for (int j = 0; j < na; j++) dup |= am[j] == x;
                if (!dup) am[na++] = x;
            }
            uint64_t A[1024], B[1024];
            int64_t n = 0;
            for (int i = 0; i < nv; i++)
                for (int j = 0; j < na; j++) {
                    st_i(A, s, n, v[i]);
                    st_i(B, sb, n, am[j]);
                    n++;
                }
            for (int op = O_SHL; op <= O_ROTR; op++) CHECK_OP(cx, op, s, A, sb, B, n, 0);
        }
    }
    ax_ctx_free(cx);
}

TEST(ops_bool_ops)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    uint8_t A[4] = {0, 0, 1, 1}, B[4] = {0, 1, 0, 1};
    static const int ops[] = {O_AND, O_OR, O_NOT, O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE};
    for (int o = 0; o < NELEM(ops); o++) CHECK_OP(cx, ops[o], AX_BOOL, A, AX_BOOL, B, 4, 0);
    ax_ctx_free(cx);
}

/* ax_and / ax_or evaluate b only when needed; ax_cond only the branch
 * taken: the operations guarded here would fail if evaluated. */
static ax_exp guarded_and(ax_exp x, ax_exp y, void *env)
{
    return ax_and(ax_ne(y, ax_i32(0)), ax_eq(ax_rem(x, y), ax_i32(0)));
}
static ax_exp guarded_or(ax_exp x, ax_exp y, void *env)
{
    return ax_or(ax_eq(y, ax_i32(0)), ax_gt(ax_quot(x, y), ax_i32(2)));
}
static ax_exp guarded_cond(ax_exp x, ax_exp y, void *env)
{
    return ax_cond(ax_eq(y, ax_i32(0)), ax_i32(-1), ax_quot(x, y));
}
static ax_exp guarded_read(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_lt(i, ax_size(a)), ax_at(a, ix), ax_i32(-1));
}

TEST(ops_short_circuit_and_lazy_cond)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int32_t x[6] = {6, 7, 9, 10, 0, -12}, y[6] = {3, 0, 2, 0, 5, 4};
    ax_acc X = use_data(cx, AX_I32, 1, SH(6), x), Y = use_data(cx, AX_I32, 1, SH(6), y);
    ax_array *r = RUN(cx, ax_zip_with(guarded_and, NULL, X, Y));
    if (r && SHAPE_IS(r, 1, 6))
        for (int k = 0; k < 6; k++) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[k], y[k] != 0 && x[k] % y[k] == 0);
    ax_array_release(r);
    r = RUN(cx, ax_zip_with(guarded_or, NULL, X, Y));
    if (r && SHAPE_IS(r, 1, 6))
        for (int k = 0; k < 6; k++) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[k], y[k] == 0 || x[k] / y[k] > 2);
    ax_array_release(r);
    r = RUN(cx, ax_zip_with(guarded_cond, NULL, X, Y));
    if (r && SHAPE_IS(r, 1, 6))
        for (int k = 0; k < 6; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], y[k] == 0 ? -1 : x[k] / y[k]);
    ax_array_release(r);
    r = RUN(cx, ax_generate(cx, ax_ix1(ax_i64(9)), guarded_read, &X));
    if (r && SHAPE_IS(r, 1, 9))
        for (int k = 0; k < 9; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], k < 6 ? x[k] : -1);
    ax_array_release(r);
    ax_ctx_free(cx);
}

TEST(ops_int_division_by_zero)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const ax_scalar types[] = {AX_I32, AX_U8, AX_I64, AX_U64};
    for (int t = 0; t < NELEM(types); t++) {
        uint64_t a[3], b[3];
        st_i(a, types[t], 0, 5); st_i(a, types[t], 1, 6); st_i(a, types[t], 2, 7);
        st_i(b, types[t], 0, 1); st_i(b, types[t], 1, 0); st_i(b, types[t], 2, 2);
        for (int op = O_DIV; op <= O_MOD; op++) {
            OpEnv env = {op, types[t], types[t], NULL, NULL, NULL, 0};
            EXPECT_FAIL(cx, ax_zip_with(op_zip, &env, use_data(cx, types[t], 1, SH(3), a),
                                        use_data(cx, types[t], 1, SH(3), b)), AX_ERR_DIVZERO);
            /* among constants: reported when the result is used */
            EXPECT_FAIL(cx, ax_unit(cx, apply_op(op, ax_consti(types[t], 9), ax_consti(types[t], 0))), AX_ERR_DIVZERO);
        }
    }
    /* floating-point division by zero is IEEE, not an error */
    double a[3] = {1, -1, 0}, b[3] = {0, 0, 0};
    ax_array *r = RUN(cx, ax_zip_with(ax_fn_div, NULL, use_data(cx, AX_F64, 1, SH(3), a), use_data(cx, AX_F64, 1, SH(3), b)));
    if (r && SHAPE_IS(r, 1, 3)) {
        double *d = ax_array_data(r, 0);
        CHECK(isinf(d[0]) && d[0] > 0);
        CHECK(isinf(d[1]) && d[1] < 0);
        CHECK(isnan(d[2]));
    }
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* ---- floating point */

static int flt_vals(ax_scalar s, double *v)
{
    int n = 0;
    v[n++] = NAN; v[n++] = -INFINITY; v[n++] = -1e30; v[n++] = -2.25; v[n++] = -1; v[n++] = -0.0; v[n++] = 0;
    v[n++] = s == AX_F32 ? 1e-40 : 1e-310; v[n++] = 0.1; v[n++] = 1; v[n++] = 1.5; v[n++] = 3; v[n++] = 1e30;
    v[n++] = INFINITY; v[n++] = s == AX_F32 ? FLT_MAX : DBL_MAX; v[n++] = s == AX_F32 ? 3e38 : 1e308;
    return n;
}

TEST(ops_float_arith_compare)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const int ops[] = {O_ADD, O_SUB, O_MUL, O_DIV, O_MIN, O_MAX, O_NEG, O_ABS, O_SIGNUM, O_SQRT,
                              O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE, O_ISNAN, O_ISINF};
    static const ax_scalar ft[] = {AX_F32, AX_F64};
    for (int t = 0; t < 2; t++) {
        double v[32];
        int nv = flt_vals(ft[t], v);
        double A[1024], B[1024];
        int64_t n = 0;
        for (int i = 0; i < nv; i++)
            for (int j = 0; j < nv; j++) { st_f(A, ft[t], n, v[i]); st_f(B, ft[t], n, v[j]); n++; }
        for (int o = 0; o < NELEM(ops); o++) CHECK_OP(cx, ops[o], ft[t], A, ft[t], B, n, 0);
    }
    ax_ctx_free(cx);
}

TEST(ops_float_math)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const double X[] = {-3, -1, -0.9, -0.5, -0.25, -0.0, 0, 0.25, 0.5, 0.9, 1, 1.5, 2, 3, 10, 100, 1000,
                               NAN, INFINITY, -INFINITY};
    static const double P[] = {-2, -1, -0.5, -0.0, 0, 0.5, 1, 2, 3, 10, NAN, INFINITY, -INFINITY};
    static const ax_scalar ft[] = {AX_F32, AX_F64};
    for (int t = 0; t < 2; t++) {
        double rel = ft[t] == AX_F32 ? 1e-5 : 1e-12;
        double A[256], B[256];
        for (int i = 0; i < NELEM(X); i++) { st_f(A, ft[t], i, X[i]); st_f(B, ft[t], i, X[i]); }
        for (int op = O_EXP; op <= O_ATANH; op++) CHECK_OP(cx, op, ft[t], A, ft[t], B, NELEM(X), op == O_SQRT ? 0 : rel);
        CHECK_OP(cx, O_ISNAN, ft[t], A, ft[t], B, NELEM(X), 0);
        CHECK_OP(cx, O_ISINF, ft[t], A, ft[t], B, NELEM(X), 0);
        int64_t n = 0;
        for (int i = 0; i < NELEM(P); i++)
            for (int j = 0; j < NELEM(P); j++) { st_f(A, ft[t], n, P[i]); st_f(B, ft[t], n, P[j]); n++; }
        for (int op = O_POW; op <= O_ATAN2; op++) CHECK_OP(cx, op, ft[t], A, ft[t], B, n, rel);
    }
    ax_ctx_free(cx);
}

/* NaN and infinities arising in programs, checked with isnan/isinf. */
static ax_exp nan_maker(ax_exp x, void *env)
{
    return ax_tuple4(ax_log(ax_neg(x)), ax_div(ax_f32(1), ax_sub(x, x)), ax_sqrt(ax_neg(x)),
                     ax_is_nan(ax_log(ax_neg(x))));
}

TEST(ops_nan_inf)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    float x[3] = {1.0f, 2.0f, 0.0f};
    ax_array *r = RUN(cx, ax_map(nan_maker, NULL, use_data(cx, AX_F32, 1, SH(3), x)));
    if (r && SHAPE_IS(r, 1, 3)) {
        float *l = ax_array_data(r, 0), *d = ax_array_data(r, 1), *s = ax_array_data(r, 2);
        uint8_t *b = ax_array_data(r, 3);
        CHECK(isnan(l[0]) && isnan(l[1]));
        CHECK(isinf(l[2]) && l[2] < 0);     /* log(-0) = -inf */
        CHECK(isinf(d[0]) && d[0] > 0);     /* 1/0 */
        CHECK(isnan(s[0]));
        CHECK(s[2] == 0);
        CHECK(b[0] == 1 && b[1] == 1 && b[2] == 0);
    }
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* ---- rounding and conversions */

enum { R_FLOOR, R_CEIL, R_ROUND, R_TRUNC, R_CVT, R_BITCAST };
typedef struct CvtEnv { int kind; ax_scalar to; } CvtEnv;
static ax_exp cvt_fn(ax_exp x, void *env)
{
    const CvtEnv *e = env;
    switch (e->kind) {
    case R_FLOOR: return ax_floor(x, e->to);
    case R_CEIL: return ax_ceiling(x, e->to);
    case R_ROUND: return ax_round(x, e->to);
    case R_TRUNC: return ax_truncate(x, e->to);
    case R_BITCAST: return ax_bitcast(x, e->to);
    default: return ax_cvt(x, e->to);
    }
}

/* An integral double into integer type `to`, saturating; NaN gives 0. */
static int64_t sat_int(ax_scalar to, double r)
{
    if (isnan(r)) return 0;
    int w = sc_bits_(to);
    if (sc_signed_(to)) {
        double lim = ldexp(1.0, w - 1);
        if (r >= lim) return type_max(to);
        if (r < -lim) return type_min(to);
        return (int64_t)r;
    }
    if (r >= ldexp(1.0, w)) return type_max(to);
    if (r <= 0) return 0;
    return (int64_t)(uint64_t)r;
}

static double rnd_d(int kind, double x)
{
    switch (kind) {
    case R_FLOOR: return floor(x);
    case R_CEIL: return ceil(x);
    case R_ROUND: return nearbyint(x);   /* default mode: halves to even */
    default: return trunc(x);
    }
}
static float rnd_f(int kind, float x)
{
    switch (kind) {
    case R_FLOOR: return floorf(x);
    case R_CEIL: return ceilf(x);
    case R_ROUND: return nearbyintf(x);
    default: return truncf(x);
    }
}

/* The expected ax_cvt of element k of src (type from) into dst (type to). */
static void ref_cvt(ax_scalar from, ax_scalar to, const void *src, int64_t k, void *dst)
{
    if (sc_float_(from)) {
        double x = ld_f(src, from, k);
        if (to == AX_BOOL) st_i(dst, to, k, x != 0);   /* NaN is nonzero */
        else if (sc_float_(to)) st_f(dst, to, k, x);  /* st_f rounds to f32 as C does */
        else st_i(dst, to, k, sat_int(to, trunc(x)));
    } else {
        int64_t v = ld_i(src, from, k);
        bool uns = !sc_signed_(from);
        if (to == AX_BOOL) st_i(dst, to, k, v != 0);
        else if (to == AX_F32) ((float *)dst)[k] = uns ? (float)(uint64_t)v : (float)v;
        else if (to == AX_F64) ((double *)dst)[k] = uns ? (double)(uint64_t)v : (double)v;
        else st_i(dst, to, k, norm_i(to, (uint64_t)v));
    }
}

static const double round_inputs[] = {
    0, -0.0, 0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49999997, -1.7, 1.7, 254.5, 255.5, 256.5, 300.7, -300.7,
    -128.5, 127.5, -129.5, 32767.5, 65535.5, 2147483647.5, -2147483648.7, 2147483648.0, 4294967295.5, 1e10, -1e10,
    9.3e18, -9.3e18, 1.9e19, 1e20, -1e20, 1e300, NAN, INFINITY, -INFINITY, 1e-300, -1e-300,
};

TEST(ops_rounding)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const ax_scalar targets[] = {AX_I32, AX_F32, AX_I64, AX_U8, AX_I8, AX_I16, AX_U16, AX_U32, AX_U64, AX_F64};
    static const char *const kind_names[4] = {"floor", "ceiling", "round", "truncate"};
    for (int from = AX_F32; from <= AX_F64; from++) {
        int64_t n = NELEM(round_inputs);
        double in[64];
        for (int64_t k = 0; k < n; k++) st_f(in, (ax_scalar)from, k, round_inputs[k]);
        ax_acc a = use_data(cx, (ax_scalar)from, 1, SH(n), in);
        for (int kind = R_FLOOR; kind <= R_TRUNC; kind++)
            for (int t = 0; t < NELEM(targets); t++) {
                ax_scalar to = targets[t];
                uint64_t want[64];
                for (int64_t k = 0; k < n; k++) {
                    double r = from == AX_F32 ? (double)rnd_f(kind, ((float *)in)[k]) : rnd_d(kind, in[k]);
                    if (sc_float_(to)) st_f(want, to, k, r);
                    else st_i(want, to, k, sat_int(to, r));
                }
                CvtEnv env = {kind, to};
                ax_array *r = RUN(cx, ax_map(cvt_fn, &env, a));
                if (r && SHAPE_IS(r, 1, n)) {
                    Chk c;
                    CHK(&c, "%s %s -> %s", kind_names[kind], ax_scalar_name((ax_scalar)from), ax_scalar_name(to));
                    chk_true(&c, ax_array_component_type(r, 0) == to, "result type");
                    if (ax_array_component_type(r, 0) == to) chk_buf(&c, to, ax_array_data(r, 0), want, n, false);
                    /* from constants */
                    for (int64_t k = 0; k < n; k++) {
                        ax_array *f = RUN(cx, ax_unit(cx, cvt_fn(cst((ax_scalar)from, in, k), &env)));
                        if (f && ax_array_component_type(f, 0) == to) {
                            Chk c2;
                            CHK(&c2, "folded %s %s -> %s of %.17g", kind_names[kind], ax_scalar_name((ax_scalar)from),
                                ax_scalar_name(to), ld_f(in, (ax_scalar)from, k));
                            chk_buf(&c2, to, ax_array_data(f, 0), (const char *)want + k * ax_scalar_size(to), 1, false);
                            chk_done(&c2);
                        }
                        ax_array_release(f);
                    }
                    chk_done(&c);
                }
                ax_array_release(r);
            }
    }
    ax_ctx_free(cx);
}

/* Values of each type for the conversion matrix. */
static int cvt_vals(ax_scalar s, void *buf)
{
    if (s == AX_F32 || s == AX_F64) {
        static const double f[] = {0, -0.0, 1.5, -1.5, -0.5, 0.99, 127.9, 128.5, 255.9, 256.5, -128.9, -129.5,
                                   32767.9, 65535.9, 65536.5, 1e10, -1e10, 3e38, -3e38, 16777216, 16777217,
                                   2147483520.0, 4294967040.0, 9.2e18, -9.2e18, 1.8e19, 2.5e19, 1e300, 1e-300,
                                   NAN, INFINITY, -INFINITY};
        for (int i = 0; i < NELEM(f); i++) st_f(buf, s, i, f[i]);
        return (int)NELEM(f);
    }
    if (s == AX_BOOL) {
        st_i(buf, s, 0, 0);
        st_i(buf, s, 1, 1);
        return 2;
    }
    static const int64_t b[] = {0, 1, -1, 127, -128, 128, 255, 256, 300, -300, 32767, -32768, 65535, 65536,
                                70000, -70000, 16777217, INT32_MAX, INT32_MIN, INT64_C(4294967295),
                                INT64_C(1) << 40, -(INT64_C(1) << 40) - 5, INT64_C(9007199254740993),
                                INT64_MAX, INT64_MIN};
    int64_t v[NELEM(b)];
    int n = 0;
    for (int i = 0; i < NELEM(b); i++) {
        int64_t x = norm_i(s, (uint64_t)b[i]);
        bool dup = false;
        for (int j = 0; j < n; j++) dup |= v[j] == x;
        if (!dup) { v[n] = x; st_i(buf, s, n, x); n++; }
    }
    return n;
}

TEST(ops_cvt_matrix)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    for (int from = 0; from < AX_NSCALAR; from++) {
        uint64_t in[64];
        int64_t n = cvt_vals((ax_scalar)from, in);
        ax_acc a = use_data(cx, (ax_scalar)from, 1, SH(n), in);
        for (int to = 0; to < AX_NSCALAR; to++) {
            uint64_t want[64];
            for (int64_t k = 0; k < n; k++) ref_cvt((ax_scalar)from, (ax_scalar)to, in, k, want);
            CvtEnv env = {R_CVT, (ax_scalar)to};
            ax_array *r = RUN(cx, ax_map(cvt_fn, &env, a));
            Chk c;
            CHK(&c, "cvt %s -> %s", ax_scalar_name((ax_scalar)from), ax_scalar_name((ax_scalar)to));
            if (r && SHAPE_IS(r, 1, n)) {
                chk_true(&c, ax_array_component_type(r, 0) == (ax_scalar)to, "result type");
                if (ax_array_component_type(r, 0) == (ax_scalar)to)
                    chk_buf(&c, (ax_scalar)to, ax_array_data(r, 0), want, n, false);
            }
            ax_array_release(r);
            /* folded: ax_cvt of constants, and ax_consti / ax_constf */
            for (int64_t k = 0; k < n; k++) {
                ax_exp e = cvt_fn(cst((ax_scalar)from, in, k), &env);
                ax_exp e2 = sc_float_((ax_scalar)from) ? ax_constf((ax_scalar)to, ld_f(in, (ax_scalar)from, k))
                                                       : from != AX_U64
                                                             ? ax_consti((ax_scalar)to, ld_i(in, (ax_scalar)from, k))
                                                             : e;
                ax_array *f = RUN(cx, ax_unit(cx, ax_tuple2(e, e2)));
                if (f && ax_array_component_type(f, 0) == (ax_scalar)to) {
                    const void *w = (const char *)want + k * ax_scalar_size((ax_scalar)to);
                    chk_buf(&c, (ax_scalar)to, ax_array_data(f, 0), w, 1, false);
                    chk_buf(&c, (ax_scalar)to, ax_array_data(f, 1), w, 1, false);
                } else {
                    chk_true(&c, false, "folded conversion");
                }
                ax_array_release(f);
            }
            chk_done(&c);
        }
    }
    ax_ctx_free(cx);
}

TEST(ops_bitcast)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const ax_scalar pairs[][2] = {
        {AX_F32, AX_I32}, {AX_F32, AX_U32}, {AX_I32, AX_F32}, {AX_U32, AX_F32}, {AX_F64, AX_I64}, {AX_F64, AX_U64},
        {AX_I64, AX_F64}, {AX_U64, AX_F64}, {AX_I8, AX_U8}, {AX_U8, AX_I8}, {AX_I16, AX_U16}, {AX_U16, AX_I16},
        {AX_I32, AX_U32}, {AX_U32, AX_I32}, {AX_I64, AX_U64}, {AX_U64, AX_I64}, {AX_F32, AX_F32},
    };
    for (int p = 0; p < NELEM(pairs); p++) {
        ax_scalar from = pairs[p][0], to = pairs[p][1];
        size_t sz = ax_scalar_size(from);
        uint64_t in[9];
        if (sc_float_(from)) {
            fill_tricky(from, in);
        } else {
            /* bit patterns of 1.0f, a quiet NaN with payload, -inf, -0.0f, 1.0, ... */
            static const uint64_t bits[9] = {0, 1, 0x3f800000u, 0x7fc12345u, 0xff800000u, 0x80000000u,
                                             UINT64_C(0x3ff0000000000000), UINT64_C(0xfff8000000000001),
                                             UINT64_C(0x8000000000000000)};
            for (int k = 0; k < 9; k++) st_i(in, from, k, (int64_t)bits[k]);
        }
        CvtEnv env = {R_BITCAST, to};
        ax_array *r = RUN(cx, ax_map(cvt_fn, &env, use_data(cx, from, 1, SH(9), in)));
        if (r && SHAPE_IS(r, 1, 9)) {
            CHECKF(ax_array_component_type(r, 0) == to, "bitcast %s -> %s: type", ax_scalar_name(from), ax_scalar_name(to));
            CHECKF(memcmp(ax_array_data(r, 0), in, 9 * sz) == 0, "bitcast %s -> %s keeps the bits", ax_scalar_name(from),
                   ax_scalar_name(to));
        }
        ax_array_release(r);
        /* there and back again, and from constants */
        CvtEnv back = {R_BITCAST, from};
        for (int k = 0; k < 9; k++) {
            ax_exp c = cst(from, in, k);
            ax_array *f = RUN(cx, ax_unit(cx, cvt_fn(c, &env)));
            if (f && ax_array_component_type(f, 0) == to && !(sc_float_(from) && isnan(ld_f(in, from, k))))
                CHECKF(memcmp(ax_array_data(f, 0), (const char *)in + k * sz, sz) == 0, "folded bitcast %s -> %s [%d]",
                       ax_scalar_name(from), ax_scalar_name(to), k);
            ax_array_release(f);
        }
        r = RUN(cx, ax_map(cvt_fn, &back, ax_map(cvt_fn, &env, use_data(cx, from, 1, SH(9), in))));
        if (r && SHAPE_IS(r, 1, 9)) CHECK(memcmp(ax_array_data(r, 0), in, 9 * sz) == 0);
        ax_array_release(r);
    }
    ax_ctx_free(cx);
}

/* ---- conditionals, tuples, loops */

static ax_exp cond_fn(ax_exp x, void *env)
{
    ax_exp a = ax_cond(ax_gt(x, ax_i32(0)), ax_mul(x, ax_i32(2)), ax_neg(x));
    ax_exp b = ax_cond(ax_gt(x, ax_i32(10)), ax_i8(1), ax_cond(ax_lt(x, ax_i32(-10)), ax_i8(-1), ax_i8(0)));
    ax_exp t = ax_cond(ax_ge(x, ax_i32(0)), ax_tuple2(x, ax_f64(1)), ax_tuple2(ax_neg(x), ax_f64(-1)));
    return ax_tuple4(a, b, ax_get(t, 0), ax_get(t, 1));
}

static ax_exp nest_gen(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    ax_exp inner = ax_tuple2(ax_cvt(i, AX_I32), ax_div(ax_cvt(i, AX_F64), ax_f64(2)));
    return ax_tuple2(inner, ax_eq(ax_rem(i, ax_i64(2)), ax_i64(1)));
}
static ax_exp nest_proj(ax_exp p, void *env)
{
    ax_exp inner = ax_get(p, 0);
    return ax_tuple3(ax_get(inner, 1), ax_not(ax_get(p, 1)), ax_mul(ax_get(inner, 0), ax_i32(3)));
}
static ax_exp five_tuple(ax_exp x, void *env)
{
    ax_exp c[5] = {x, ax_add(x, ax_i16(1)), ax_cvt(x, AX_F32), ax_gt(x, ax_i16(0)), ax_cvt(x, AX_U64)};
    return ax_get(ax_tuple(5, c), *(const int *)env);
}

TEST(ops_cond_and_tuples)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int32_t x[9] = {-20, -10, -1, 0, 1, 5, 10, 11, INT32_MIN};
    ax_array *r = RUN(cx, ax_map(cond_fn, NULL, use_data(cx, AX_I32, 1, SH(9), x)));
    if (r && SHAPE_IS(r, 1, 9)) {
        CHECK_EQ_I(ax_array_components(r), 4);
        for (int k = 0; k < 9; k++) {
            int64_t v = x[k];
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], v > 0 ? (int32_t)(2 * v) : norm_i(AX_I32, (uint64_t)-v));
            CHECK_EQ_I(((int8_t *)ax_array_data(r, 1))[k], v > 10 ? 1 : v < -10 ? -1 : 0);
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 2))[k], v >= 0 ? v : norm_i(AX_I32, (uint64_t)-v));
            CHECK(((double *)ax_array_data(r, 3))[k] == (v >= 0 ? 1.0 : -1.0));
        }
    }
    ax_array_release(r);
    /* nested tuple elements: three buffers */
    ax_acc g = ax_generate(cx, ax_ix1(ax_i64(7)), nest_gen, NULL);
    const ax_type *inner = TUP(cx, AX_I32, AX_F64);
    const ax_type *outer = ax_type_tuple(cx, 2, (const ax_type *[]){inner, ax_type_scalar(AX_BOOL)});
    CHECK(ax_type_equal(ax_acc_elem(g), outer));
    r = RUN(cx, g);
    if (r && SHAPE_IS(r, 1, 7)) {
        CHECK_EQ_I(ax_array_components(r), 3);
        for (int k = 0; k < 7; k++) {
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], k);
            CHECK(((double *)ax_array_data(r, 1))[k] == k / 2.0);
            CHECK_EQ_I(((uint8_t *)ax_array_data(r, 2))[k], k % 2);
        }
    }
    ax_array_release(r);
    r = RUN(cx, ax_map(nest_proj, NULL, g));
    if (r && SHAPE_IS(r, 1, 7)) {
        for (int k = 0; k < 7; k++) {
            CHECK(((double *)ax_array_data(r, 0))[k] == k / 2.0);
            CHECK_EQ_I(((uint8_t *)ax_array_data(r, 1))[k], k % 2 == 0);
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 2))[k], 3 * k);
        }
    }
    ax_array_release(r);
    /* a five-tuple projected in every position */
    int16_t y[4] = {-2, 0, 3, 32767};
    ax_acc Y = use_data(cx, AX_I16, 1, SH(4), y);
    for (int i = 0; i < 5; i++) {
        r = RUN(cx, ax_map(five_tuple, &i, Y));
        if (r && SHAPE_IS(r, 1, 4))
            for (int k = 0; k < 4; k++) {
                const void *d = ax_array_data(r, 0);
                switch (i) {
                case 0: CHECK_EQ_I(((int16_t *)d)[k], y[k]); break;
                case 1: CHECK_EQ_I(((int16_t *)d)[k], (int16_t)(y[k] + 1)); break;
                case 2: CHECK(((float *)d)[k] == (float)y[k]); break;
                case 3: CHECK_EQ_I(((uint8_t *)d)[k], y[k] > 0); break;
                case 4: CHECK(((uint64_t *)d)[k] == (uint64_t)(int64_t)y[k]); break;
                }
            }
        ax_array_release(r);
    }
    /* constant tuples: projection folds; a nested one needs ax_const */
    ax_exp ct = ax_tuple3(ax_i8(1), ax_f32(2.5f), ax_u64(UINT64_MAX));
    r = RUN(cx, ax_unit(cx, ax_tuple2(ax_get(ct, 2), ax_get(ct, 1))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK(((uint64_t *)ax_array_data(r, 0))[0] == UINT64_MAX);
        CHECK(((float *)ax_array_data(r, 1))[0] == 2.5f);
    }
    ax_array_release(r);
    r = RUN(cx, ax_unit(cx, ax_tuple2(ax_const(cx, ax_tuple2(ax_i32(1), ax_i32(2))), ax_i32(3))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(ax_array_components(r), 3);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[0], 1);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 1))[0], 2);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 2))[0], 3);
    }
    ax_array_release(r);
    /* constant conditions fold to the branch */
    r = RUN(cx, ax_unit(cx, ax_cond(ax_lt(ax_i32(1), ax_i32(2)), ax_f64(10), ax_f64(20))));
    if (r && SHAPE_IS(r, 0, 0)) CHECK(((double *)ax_array_data(r, 0))[0] == 10);
    ax_array_release(r);
    ax_ctx_free(cx);
}

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

TEST(ops_while)
{
    ax_ctx *cx = new_cx();
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
    ax_ctx_free(cx);
}

/* ---- reading arrays from scalar code */

static ax_exp rev_read(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    return ax_at(a, ax_ix1(ax_sub(ax_sub(ax_size(a), ax_i64(1)), ax_index_get(ix, 0))));
}
/* result[i][j] = a[j][i] through the linear position */
static ax_exp transpose_lin(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp cols = ax_index_get(ax_shape(a), 1);
    return ax_at_linear(a, ax_add(ax_mul(ax_index_get(ix, 1), cols), ax_index_get(ix, 0)));
}
static ax_exp shape_info(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp sh = ax_shape(a);
    return ax_tuple4(ax_index_get(sh, 0), ax_get(sh, 1), ax_index_get(sh, 2), ax_size(a));
}
static ax_exp read_ix_env(ax_exp ix, void *env) { return ax_at(acc_of(env), ax_ix1(ax_i64(7))); }
static ax_exp read_lin_env(ax_exp ix, void *env) { return ax_at_linear(acc_of(env), ax_i32(-1)); }

TEST(ops_array_reads)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    static const int64_t ns[] = {0, 1, 7, 1001};
    for (int t = 0; t < NELEM(ns); t++) {
        int64_t n = ns[t];
        double *a = alloc_f64(n), *want = alloc_f64(n);
        for (int64_t k = 0; k < n; k++) a[k] = (double)val_of(k) / 4;
        for (int64_t k = 0; k < n; k++) want[k] = a[n - 1 - k];
        ax_acc x = use_data(cx, AX_F64, 1, SH(n), a);
        /* also through a computed (not host) array */
        ax_acc y = ax_map(ax_fn_neg, NULL, x);
        ax_acc srcs[2] = {x, y};
        for (int s = 0; s < 2; s++) {
            ax_array *r = RUN(cx, ax_generate(cx, ax_shape(x), rev_read, &srcs[s]));
            if (r && SHAPE_IS(r, 1, n)) {
                Chk c;
                CHK(&c, "reversed read, n=%lld, source %d", (long long)n, s);
                for (int64_t k = 0; k < n; k++) chk_f(&c, k, ((double *)ax_array_data(r, 0))[k], s ? -want[k] : want[k], 0);
                chk_done(&c);
            }
            ax_array_release(r);
        }
        free(a);
        free(want);
    }
    int32_t m[15];
    for (int k = 0; k < 15; k++) m[k] = k * k - 7;
    ax_acc M = use_data(cx, AX_I32, 2, SH(3, 5), m);
    ax_array *r = RUN(cx, ax_generate(cx, ax_ix2(ax_i64(5), ax_i64(3)), transpose_lin, &M));
    if (r && SHAPE_IS(r, 2, 5, 3))
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 3; j++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i * 3 + j], m[j * 5 + i]);
    ax_array_release(r);
    uint8_t z[24] = {0};
    ax_acc T = use_data(cx, AX_U8, 3, SH(2, 3, 4), z);
    r = RUN(cx, ax_unit(cx, shape_info(ax_index(0, NULL), &T)));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], 2);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 1))[0], 3);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 2))[0], 4);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 3))[0], 24);
    }
    ax_array_release(r);
    /* out of bounds: run-time index errors */
    int64_t v[7] = {1, 2, 3, 4, 5, 6, 7};
    ax_acc V = use_data(cx, AX_I64, 1, SH(7), v);
    EXPECT_FAIL(cx, ax_generate(cx, ax_ix1(ax_i64(3)), read_ix_env, &V), AX_ERR_INDEX);
    EXPECT_FAIL(cx, ax_generate(cx, ax_ix1(ax_i64(3)), read_lin_env, &V), AX_ERR_INDEX);
    EXPECT_FAIL(cx, ax_unit(cx, ax_at(M, ax_ix2(ax_i64(1), ax_i64(5)))), AX_ERR_INDEX);
    ax_ctx_free(cx);
}

/* ---- index and shape arithmetic */

static ax_exp index_fns(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp sh = ax_shape(a), csh = ax_ix3(ax_i64(2), ax_i64(3), ax_i64(4));
    ax_exp lin = ax_to_linear(sh, ix), lin2 = ax_to_linear(csh, ix);
    ax_exp back = ax_from_linear(csh, ax_cvt(lin, AX_I32));   /* any integer type */
    ax_exp c[8] = {lin, lin2, ax_get(back, 0), ax_index_get(back, 1), ax_get(back, 2), ax_shape_size(sh),
                   ax_shape_size(csh), ax_index_get(ax_index(2, (ax_exp[]){ax_i32(9), ax_cvt(ax_get(ix, 2), AX_U8)}), 1)};
    return ax_tuple(8, c);
}

TEST(ops_index_functions)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    uint8_t z[24] = {0};
    ax_acc T = use_data(cx, AX_U8, 3, SH(2, 3, 4), z);
    ax_array *r = RUN(cx, ax_generate(cx, ax_shape(T), index_fns, &T));
    if (r && SHAPE_IS(r, 3, 2, 3, 4)) {
        CHECK_EQ_I(ax_array_components(r), 8);
        Chk c;
        CHK(&c, "index functions");
        for (int64_t k = 0; k < 24; k++) {
            int64_t ix[3];
            unravel(k, 3, SH(2, 3, 4), ix);
            int64_t want[8] = {k, k, ix[0], ix[1], ix[2], 24, 24, ix[2]};
            for (int i = 0; i < 8; i++) chk_i(&c, k * 8 + i, ld_i(ax_array_data(r, i), ax_array_component_type(r, i), k), want[i]);
        }
        chk_done(&c);
    }
    ax_array_release(r);
    /* the same from constants */
    ax_exp sh = ax_ix3(ax_i64(2), ax_i64(3), ax_i64(4));
    ax_exp back = ax_from_linear(sh, ax_i64(17));
    ax_exp c[7] = {ax_to_linear(sh, ax_ix3(ax_i64(1), ax_i64(1), ax_i64(1))), ax_shape_size(sh),
                   ax_get(back, 0), ax_get(back, 1), ax_get(back, 2), ax_shape_size(ax_index(0, NULL)),
                   ax_to_linear(ax_index(0, NULL), ax_index(0, NULL))};
    r = RUN(cx, ax_unit(cx, ax_tuple(7, c)));
    if (r && SHAPE_IS(r, 0, 0)) {
        int64_t want[7] = {1 * 12 + 1 * 4 + 1, 24, 17 / 12, (17 % 12) / 4, 17 % 4, 1, 0};
        for (int i = 0; i < 7; i++) CHECK_EQ_I(((int64_t *)ax_array_data(r, i))[0], want[i]);
    }
    ax_array_release(r);
    /* rank 0 index as a generate shape: a single element */
    ax_acc u = ax_unit(cx, ax_i16(-3));
    r = RUN(cx, ax_generate(cx, ax_index(0, NULL), read_at, &u));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((int16_t *)ax_array_data(r, 0))[0], -3);
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* ---- the build-time folder against the same expression at run time */

static ax_exp compound_i(ax_exp x, ax_exp y)
{
    return ax_bxor(ax_shr(ax_add(ax_mul(x, ax_i32(3)), y), ax_i32(1)),
                   ax_sub(ax_mod(x, ax_i32(7)), ax_idiv(y, ax_i32(-3))));
}
static ax_exp compound_f(ax_exp x, ax_exp y)
{
    return ax_div(ax_sqrt(ax_add(ax_mul(x, x), ax_mul(y, y))), ax_add(ax_f64(1), ax_exp_(ax_neg(x))));
}
static ax_exp compound_zip(ax_exp x, ax_exp y, void *env)
{
    return *(const int *)env ? compound_f(x, y) : compound_i(x, y);
}
static int32_t compound_i_ref(int32_t x, int32_t y)
{
    int32_t m = x % 7;
    if (m < 0) m += 7;
    int32_t q = y / -3;
    if (y % -3 != 0 && ((y < 0) != (-3 < 0))) q--;
    int64_t s = (int64_t)norm_i(AX_I32, (uint64_t)((int64_t)x * 3 + y));
    return (int32_t)((s >> 1) ^ (m - q));
}

TEST(ops_constant_folding)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int32_t xi[6] = {5, -5, 100, -1000, 0, 2000000000};
    int32_t yi[6] = {7, 7, -9, 13, -1, 2000000000};
    double xf[6] = {0, 1, -2, 3.5, 700, -1e-3};
    double yf[6] = {1, -1, 2, 0, 1e10, 0.25};
    for (int f = 0; f < 2; f++) {
        ax_scalar s = f ? AX_F64 : AX_I32;
        const void *X = f ? (const void *)xf : (const void *)xi, *Y = f ? (const void *)yf : (const void *)yi;
        ax_array *rt = RUN(cx, ax_zip_with(compound_zip, &f, use_data(cx, s, 1, SH(6), X), use_data(cx, s, 1, SH(6), Y)));
        for (int k = 0; k < 6 && rt; k++) {
            ax_exp e = f ? compound_f(ax_f64(xf[k]), ax_f64(yf[k])) : compound_i(ax_i32(xi[k]), ax_i32(yi[k]));
            CHECK(ax_exp_ok(e) && ax_exp_ctx(e) == NULL);   /* a constant: folded when built */
            ax_array *c = RUN(cx, ax_unit(cx, e));
            if (c) {
                if (f) {
                    double want = sqrt(xf[k] * xf[k] + yf[k] * yf[k]) / (1 + exp(-xf[k]));
                    CHECK_CLOSE(((double *)ax_array_data(rt, 0))[k], want, 1e-14);
                    CHECK(memcmp(ax_array_data(c, 0), (double *)ax_array_data(rt, 0) + k, 8) == 0);
                } else {
                    CHECK_EQ_I(((int32_t *)ax_array_data(rt, 0))[k], compound_i_ref(xi[k], yi[k]));
                    CHECK_EQ_I(((int32_t *)ax_array_data(c, 0))[0], ((int32_t *)ax_array_data(rt, 0))[k]);
                }
            }
            ax_array_release(c);
        }
        ax_array_release(rt);
    }
    /* constants made with ax_consti / ax_constf convert as ax_cvt does */
    ax_exp cs[6] = {ax_consti(AX_U8, 300), ax_constf(AX_I32, 1e10), ax_constf(AX_I8, NAN), ax_consti(AX_F32, 16777217),
                    ax_constf(AX_U16, -5.5), ax_consti(AX_I16, 70000)};
    ax_array *r = RUN(cx, ax_unit(cx, ax_tuple(6, cs)));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[0], 44);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 1))[0], INT32_MAX);
        CHECK_EQ_I(((int8_t *)ax_array_data(r, 2))[0], 0);
        CHECK(((float *)ax_array_data(r, 3))[0] == 16777216.0f);
        CHECK_EQ_I(((uint16_t *)ax_array_data(r, 4))[0], 0);
        CHECK_EQ_I(((int16_t *)ax_array_data(r, 5))[0], (int16_t)(70000 - 65536));
    }
    ax_array_release(r);
    /* a constant kept as a term with ax_const computes the same */
    r = RUN(cx, ax_unit(cx, ax_tuple2(ax_add(ax_const(cx, ax_i8(100)), ax_i8(100)), ax_add(ax_i8(100), ax_i8(100)))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(((int8_t *)ax_array_data(r, 0))[0], -56);
        CHECK_EQ_I(((int8_t *)ax_array_data(r, 1))[0], -56);
    }
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* ---- the ready-made functions, each where a function is expected */

TEST(ops_ready_made_functions)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    uint32_t u[7] = {0xf0f0f0f0u, 0x0ff00ff0u, 0xffffffffu, 0x12345678u, 0x80000001u, 3u, 0xfffffff7u};
    int32_t x[7] = {5, -3, 0, 7, -100, 2, 9}, y[7] = {2, 4, -1, 7, 3, -5, 1};
    uint8_t b[7] = {1, 1, 0, 1, 1, 1, 1}, ones[3] = {1, 1, 1};
    ax_acc U = use_data(cx, AX_U32, 1, SH(7), u), X = use_data(cx, AX_I32, 1, SH(7), x),
           Y = use_data(cx, AX_I32, 1, SH(7), y), B = use_data(cx, AX_BOOL, 1, SH(7), b),
           O = use_data(cx, AX_BOOL, 1, SH(3), ones);
    uint32_t band = 0xffffffffu, bor = 0, bxor = 0, prod = 1;
    for (int k = 0; k < 7; k++) { band &= u[k]; bor |= u[k]; bxor ^= u[k]; prod *= u[k]; }
    struct { ax_fn2 f; ax_exp z; uint32_t want; } folds[4] = {
        {ax_fn_band, ax_u32(0xffffffffu), band}, {ax_fn_bor, ax_u32(0), bor},
        {ax_fn_bxor, ax_u32(0), bxor}, {ax_fn_mul, ax_u32(1), prod},
    };
    for (int i = 0; i < 4; i++) {
        ax_array *r = RUN(cx, ax_fold(folds[i].f, NULL, folds[i].z, U));
        if (r && SHAPE_IS(r, 0, 0)) CHECKF(((uint32_t *)ax_array_data(r, 0))[0] == folds[i].want, "fold %d", i);
        ax_array_release(r);
    }
    /* all / any */
    ax_acc bools[2] = {B, O};
    for (int i = 0; i < 2; i++) {
        ax_array *r = RUN(cx, ax_fold(ax_fn_and, NULL, ax_bool(true), bools[i]));
        if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[0], i == 1);
        ax_array_release(r);
        r = RUN(cx, ax_fold(ax_fn_or, NULL, ax_bool(false), ax_map(ax_fn_not, NULL, bools[i])));
        if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[0], i == 0);
        ax_array_release(r);
    }
    ax_fn2 zips[5] = {ax_fn_sub, ax_fn_min, ax_fn_max, ax_fn_fst, ax_fn_snd};
    for (int i = 0; i < 5; i++) {
        ax_array *r = RUN(cx, ax_zip_with(zips[i], NULL, X, Y));
        if (r && SHAPE_IS(r, 1, 7))
            for (int k = 0; k < 7; k++) {
                int32_t w = i == 0 ? x[k] - y[k] : i == 1 ? (x[k] < y[k] ? x[k] : y[k])
                          : i == 2 ? (x[k] > y[k] ? x[k] : y[k]) : i == 3 ? x[k] : y[k];
                CHECKF(((int32_t *)ax_array_data(r, 0))[k] == w, "zip %d [%d]", i, k);
            }
        ax_array_release(r);
    }
    double p[3] = {1, -3, 0.5}, q[3] = {4, 2, -0.25};
    ax_array *r = RUN(cx, ax_zip_with(ax_fn_div, NULL, use_data(cx, AX_F64, 1, SH(3), p), use_data(cx, AX_F64, 1, SH(3), q)));
    if (r && SHAPE_IS(r, 1, 3)) for (int k = 0; k < 3; k++) CHECK(((double *)ax_array_data(r, 0))[k] == p[k] / q[k]);
    ax_array_release(r);
    r = RUN(cx, ax_map(ax_fn_abs, NULL, X));
    if (r && SHAPE_IS(r, 1, 7)) for (int k = 0; k < 7; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], abs(x[k]));
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* ---- compile once, run several times */

TEST(ops_program_reuse)
{
    ax_ctx *cx = new_cx();
    REQUIRE(cx);
    int64_t v[5] = {1, 2, 3, 4, 5};
    ax_array *a = ax_array_wrap(cx, AX_I64, 1, SH(5), v);
    REQUIRE(a);
    ax_program *p = ax_compile(cx, ax_fold_all(ax_fn_add, NULL, ax_i64(0), ax_use(cx, a)));
    CHECKF(p != NULL, "%s", ax_error(cx));
    if (p) {
        for (int run = 0; run < 3; run++) {
            /* a wrapped (borrowed) buffer is read when the program runs */
            v[0] = 10 * run;
            ax_array *out = NULL;
            int n = ax_program_run(p, &out, 1);
            CHECK_EQ_I(n, 1);
            if (n == 1 && SHAPE_IS(out, 0, 0)) CHECK_EQ_I(((int64_t *)ax_array_data(out, 0))[0], 10 * run + 14);
            ax_array_release(out);
        }
        CHECK(ax_program_stats(p) != NULL);
        ax_program_free(p);
    }
    ax_array_release(a);
    ax_ctx_free(cx);
}
