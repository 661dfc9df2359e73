/*
 * Sorting: ax_sort and ax_sort_by, ascending and descending, for every
 * scalar key type, against a stable sort in plain C here: duplicate keys
 * (stability seen through the values carried), the extremes of each
 * type, -0.0, infinities and NaNs (with their payloads), empty rows and
 * arrays, one element, rows of a matrix, tuple-valued payloads, the keys'
 * producer computed; build errors and a values array of another size;
 * grouping by integer keys (ax_group_by, ax_reduce_by_key).
 *
 * Backends (tests/ops/ops.h): the OP_TESTs on every backend against
 * plain C; the DIFF_TEST on the compiling backends against the
 * interpreter, at 10^5 keys.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"
#include <math.h>

static const ax_scalar key_types[] = {AX_BOOL, AX_I8, AX_I16, AX_I32, AX_I64, AX_U8,
                                      AX_U16, AX_U32, AX_U64, AX_F32, AX_F64};

/* The order of two keys of type s at positions i and j of buf (-1, 0, 1):
 * integers by value, floats in totalOrder with every NaN last and NaNs
 * equal among themselves. */
static int key_cmp(const void *buf, ax_scalar s, int64_t i, int64_t j)
{
    if (s == AX_F32 || s == AX_F64) {
        double a = ld_f(buf, s, i), b = ld_f(buf, s, j);
        bool na = isnan(a), nb = isnan(b);
        if (na || nb) return na && nb ? 0 : na ? 1 : -1;
        if (a == b) return signbit(a) == signbit(b) ? 0 : signbit(a) ? -1 : 1;
        return a < b ? -1 : 1;
    }
    if (s == AX_U64) {
        uint64_t a = ((const uint64_t *)buf)[i], b = ((const uint64_t *)buf)[j];
        return a < b ? -1 : a > b;
    }
    int64_t a = ld_i(buf, s, i), b = ld_i(buf, s, j);
    return a < b ? -1 : a > b;
}

/* A stable sort of the positions [lo, lo + n) of buf by key (insertion:
 * the test sizes are small). */
static void ref_sort(const void *buf, ax_scalar s, int64_t lo, int64_t n, bool desc, int64_t *perm)
{
    for (int64_t k = 0; k < n; k++) perm[k] = lo + k;
    for (int64_t k = 1; k < n; k++) {
        int64_t v = perm[k], m = k;
        while (m > 0) {
            int c = key_cmp(buf, s, perm[m - 1], v);
            if (desc ? c >= 0 : c <= 0) break;
            perm[m] = perm[m - 1];
            m--;
        }
        perm[m] = v;
    }
}

/* Keys of type s: small values with many duplicates, the type's extremes,
 * and for floats -0.0, +0.0, infinities and NaNs of both signs. */
static void make_keys(ax_scalar s, void *buf, int64_t n, uint64_t seed)
{
    fill(buf, s, n, seed, 3);
    if (n < 8) return;
    if (s == AX_F32 || s == AX_F64) {
        const double sp[6] = {-0.0, 0.0, INFINITY, -INFINITY, NAN, -NAN};
        for (int k = 0; k < 6; k++) st_f(buf, s, (int64_t)(k * 7 + seed) % n, sp[k]);
    } else if (s != AX_BOOL) {
        st_i(buf, s, (int64_t)(seed % n), type_min(s));
        st_i(buf, s, (int64_t)((seed + 3) % n), type_max(s));
    }
}

static bool same_bits(const void *a, const void *b, ax_scalar s, int64_t i, int64_t j)
{
    size_t w = ax_scalar_size(s);
    return !memcmp((const char *)a + (size_t)i * w, (const char *)b + (size_t)j * w, w);
}

OP_TEST(sort_every_key_type)
{
    static const Shape shapes[] = {{1, {0}}, {1, {1}}, {1, {37}}, {2, {3, 25}}, {2, {2, 0}}, {2, {0, 5}}};
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(key_types); t++)
        for (int sh = 0; sh < NELEM(shapes); sh++) {
            ax_scalar s = key_types[t];
            /* the GPUs: five key types (each type's passes are programs of
             * their own, and PoCL takes seconds for each) */
            if (be->gpu && s != AX_BOOL && s != AX_I32 && s != AX_U64 && s != AX_F32 && s != AX_F64) continue;
            op_case();
            const Shape *shp = &shapes[sh];
            int64_t n = shape_size(shp->rank, shp->sh), inner = shp->sh[shp->rank - 1];
            int64_t rows = inner ? n / inner : 0;
            size_t w = ax_scalar_size(s);
            char *keys = calloc((size_t)n + 1, w);
            int32_t *vals = calloc((size_t)n + 1, sizeof *vals);
            int64_t *perm = calloc((size_t)inner + 1, sizeof *perm);
            make_keys(s, keys, n, (uint64_t)(t * 10 + sh));
            for (int64_t k = 0; k < n; k++) vals[k] = (int32_t)k;
            ax_acc ka = use_data(cx, s, shp->rank, shp->sh, keys), va = use_data(cx, AX_I32, shp->rank, shp->sh, vals);
            for (int desc = 0; desc < 2; desc++) {
                ax_array *out[2] = {NULL, NULL};
                int got = RUN_N(cx, ax_sort_by(ka, va, desc), out, 2);
                ax_array *only = RUN(cx, ax_sort(ka, desc));
                if (got == 2 && only && SHAPE_ISV(out[0], shp->rank, shp->sh) &&
                    SHAPE_ISV(out[1], shp->rank, shp->sh) && SHAPE_ISV(only, shp->rank, shp->sh)) {
                    Chk c;
                    CHK(&c, "sort %s, shape %d, %s", ax_scalar_name(s), sh, desc ? "descending" : "ascending");
                    const void *gk = ax_array_data(out[0], 0), *go = ax_array_data(only, 0);
                    const int32_t *gv = ax_array_data(out[1], 0);
                    for (int64_t r = 0; r < rows; r++) {
                        ref_sort(keys, s, r * inner, inner, desc, perm);
                        for (int64_t k = 0; k < inner; k++) {
                            int64_t at = r * inner + k;
                            chk_i(&c, at, gv[at], perm[k]);   /* stable: the same order of equal keys */
                            chk_true(&c, same_bits(gk, keys, s, at, perm[k]), "a key's bits changed");
                            chk_true(&c, same_bits(go, keys, s, at, perm[k]), "ax_sort's key differs");
                        }
                    }
                    chk_done(&c);
                } else if (!op_collecting()) {
                    CHECKF(false, "sort %s, shape %d: %s", ax_scalar_name(s), sh, ax_error(cx));
                }
                for (int i = 0; i < got; i++) ax_array_release(out[i]);
                ax_array_release(only);
            }
            free(keys);
            free(vals);
            free(perm);
        }
    op_ctx_done(cx);
}

/* The keys computed (their producer made first, then sorted),
 * and a payload of tuples. */
static ax_exp neg_mod(ax_exp x, void *env) { (void)env; return ax_rem(ax_neg(x), ax_i32(5)); }

OP_TEST(sort_computed_keys_tuple_payload)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    enum { N = 40 };
    int32_t k[N];
    int64_t pa[N];
    double pb[N];
    for (int i = 0; i < N; i++) k[i] = (int32_t)val_of(i), pa[i] = i, pb[i] = 0.5 * i;
    ax_acc keys = ax_map(neg_mod, NULL, use_data(cx, AX_I32, 1, SH(N), k));
    const void *bufs[2] = {pa, pb};
    ax_acc vals = use_tuple(cx, TUP(cx, AX_I64, AX_F64), 1, SH(N), bufs);
    ax_array *out[3] = {NULL, NULL, NULL};
    int got = RUN_N(cx, ax_sort_by(keys, vals, false), out, 3);
    CHECKF(got == 2, "ax_run_n: %d: %s", got, ax_error(cx));
    if (got == 2 && SHAPE_IS(out[0], 1, N) && SHAPE_IS(out[1], 1, N)) {
        int32_t km[N];
        for (int i = 0; i < N; i++) km[i] = -k[i] % 5;
        int64_t perm[N];
        ref_sort(km, AX_I32, 0, N, false, perm);
        const int32_t *gk = ax_array_data(out[0], 0);
        const int64_t *ga = ax_array_data(out[1], 0);
        const double *gb = ax_array_data(out[1], 1);
        for (int i = 0; i < N; i++) {
            CHECK_EQ_I(gk[i], km[perm[i]]);
            CHECK_EQ_I(ga[i], perm[i]);
            CHECK(gb[i] == 0.5 * (double)perm[i]);
        }
    }
    for (int i = 0; i < got; i++) ax_array_release(out[i]);
    op_ctx_done(cx);
}

/* Misuse: build errors naming the operation; values of another size are
 * a run-time shape error, and the context stays usable. */
BE_TEST(sort_errors)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t k[4] = {3, 1, 2, 0};
    ax_acc keys = use_data(cx, AX_I32, 1, SH(4), k);
    CHECK(ax_sort(ax_unit(cx, ax_i32(1)), false) == NULL);
    CHECKF(strstr(ax_error(cx), "ax_sort") != NULL, "%s", ax_error(cx));
    ax_clear_error(cx);
    const void *bufs[2] = {k, k};
    CHECK(ax_sort(use_tuple(cx, TUP(cx, AX_I32, AX_I32), 1, SH(4), bufs), false) == NULL);
    CHECKF(strstr(ax_error(cx), "scalar") != NULL, "%s", ax_error(cx));
    ax_clear_error(cx);
    CHECK(ax_sort_by(keys, NULL, false) == NULL);
    CHECKF(strstr(ax_error(cx), "ax_sort_by") != NULL, "%s", ax_error(cx));
    ax_clear_error(cx);
    EXPECT_FAIL(cx, ax_aget(ax_sort_by(keys, use_data(cx, AX_I32, 1, SH(3), k), false), 1), AX_ERR_SHAPE);
    op_ctx_done(cx);
}

/* Against the interpreter: 10^5 keys of three types (rows of a matrix
 * for one), ascending and descending, with payloads. */
static ax_acc b_sort(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    static const ax_scalar ts[3] = {AX_U32, AX_F64, AX_I16};
    ax_scalar s = ts[v->which % 3];
    ax_acc keys = input(cx, s, v->rank, v->sh, 200 + (uint64_t)v->which, 1000);
    ax_acc vals = input(cx, AX_I64, v->rank, v->sh, 300 + (uint64_t)v->which, 1000000);
    return ax_sort_by(keys, vals, v->which >= 3);
}

DIFF_TEST(sort_large_against_the_interpreter)
{
    const int64_t big = ops_small() ? 4000 : 100000, mat[2] = {7, ops_small() ? 500 : 3001};
    for (int w = 0; w < 6; w++) {
        if (be->gpu && w != 1 && w != 5) continue;   /* (PoCL: two programs of the six) */
        Env e = {w == 2 ? 2 : 1, w == 2 ? mat : &big, w};
        char what[64];
        snprintf(what, sizeof what, "sort_by, case %d", w);
        SAME(what, b_sort, &e, 0);
    }
}

/* The sort's schedules (runtime/sort.c) against the interpreter: a long
 * row of keys alone (floats with NaNs and -0.0, whose bits come back from
 * the input; 8-byte keys descending), a few long rows sorted one at a
 * time with every pass parallel (8-bit keys: passes skipped), many rows
 * longer and shorter than an insertion sort's; passes skipped so that
 * the keys end in the scratch buffer, and every pass skipped. */
/* Integer x (i64) to a key of float type *env: NaNs of both signs with
 * payloads from x (a 7th of them), -0.0 (an 11th), else x / 4. */
static ax_exp odd_floats(ax_exp x, void *env)
{
    ax_scalar f = *(const ax_scalar *)env;
    bool wide = f == AX_F64;
    ax_exp pos = wide ? ax_i64(0x7ff8000000000000) : ax_i64(0x7fc00000), neg = wide ? ax_i64((int64_t)0xfff8000000000000u) : ax_i64(0xffc00000);
    ax_exp pay = ax_band(x, ax_i64(0xfff));
    ax_exp bits = ax_cond(ax_eq(ax_rem(x, ax_i64(2)), ax_i64(0)), ax_bor(pos, pay), ax_bor(neg, pay));
    ax_exp nan = wide ? ax_bitcast(bits, AX_F64) : ax_bitcast(ax_cvt(bits, AX_U32), AX_F32);
    ax_exp num = ax_div(ax_cvt(x, f), ax_cvt(ax_i64(4), f));
    return ax_cond(ax_eq(ax_rem(x, ax_i64(7)), ax_i64(0)), nan,
                   ax_cond(ax_eq(ax_rem(x, ax_i64(11)), ax_i64(0)), ax_neg(ax_cvt(ax_i64(0), f)), num));
}

static ax_exp abs_of(ax_exp x, void *env) { (void)env; return ax_abs(x); }
static ax_exp seven(ax_exp x, void *env) { (void)env; (void)x; return ax_i32(7); }

static ax_acc b_sort_paths(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    static const ax_scalar f32 = AX_F32, f64 = AX_F64;
    switch (v->which) {
    case 0: return ax_sort(ax_map(odd_floats, (void *)&f32, input(cx, AX_I64, v->rank, v->sh, 11, 1000)), false);
    case 1: return ax_sort(input(cx, AX_U64, v->rank, v->sh, 12, 1 << 29), true);
    case 2: return ax_sort_by(input(cx, AX_I8, v->rank, v->sh, 13, 100), input(cx, AX_F64, v->rank, v->sh, 14, 1000), false);
    case 3:
        return ax_sort_by(ax_map(odd_floats, (void *)&f64, input(cx, AX_I64, v->rank, v->sh, 15, 30)),
                          input(cx, AX_I32, v->rank, v->sh, 16, 1000), true);
    case 4: return ax_sort(input(cx, AX_I16, v->rank, v->sh, 17, 1000), true);
    case 5:   /* one pass of four runs: the keys end in the scratch buffer */
        return ax_sort_by(ax_map(abs_of, NULL, input(cx, AX_I32, v->rank, v->sh, 18, 100)),
                          input(cx, AX_I64, v->rank, v->sh, 19, 1000), false);
    default:  /* no pass runs: every key equal */
        return ax_sort_by(ax_map(seven, NULL, input(cx, AX_I32, v->rank, v->sh, 20, 100)),
                          input(cx, AX_I64, v->rank, v->sh, 21, 1000), true);
    }
}

DIFF_TEST(sort_every_schedule_against_the_interpreter)
{
    bool small = ops_small();
    const int64_t row[1] = {small ? 5000 : 100000}, few[2] = {3, small ? 3000 : 70000}, many[2] = {small ? 100 : 1000, 60},
                  shorts[2] = {small ? 300 : 5000, 20};
    const int64_t *sh[7] = {row, row, few, many, shorts, row, row};
    for (int w = 0; w < 7; w++) {
        /* (PoCL: three programs of the seven; case 4's many short rows sort
         * on the host, gpu/exec.c) */
        if (be->gpu && w != 0 && w != 2 && w != 4) continue;
        Env e = {w < 2 || w > 4 ? 1 : 2, sh[w], w};
        char what[64];
        snprintf(what, sizeof what, "sort schedule, case %d", w);
        SAME(what, b_sort_paths, &e, 0);
    }
}

/* Grouping: ax_group_by and ax_reduce_by_key against plain C, keys with
 * duplicates and buckets no key has, every length from empty; misuse. */
OP_TEST(group_by_and_reduce_by_key)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const int64_t lens[] = {0, 1, 37, 2000};
    enum { NB = 9 };
    for (int li = 0; li < 4; li++) {
        int64_t n = lens[li];
        int32_t *k = calloc((size_t)(n + 1), sizeof *k);
        int64_t *v = calloc((size_t)(n + 1), sizeof *v);
        double *d = calloc((size_t)(n + 1), sizeof *d);
        REQUIRE(k && v && d);
        for (int64_t i = 0; i < n; i++) k[i] = (int32_t)((i * 7 + i / 3) % 7), v[i] = 1000 + i, d[i] = (double)(i % 13);
        ax_acc keys = use_data(cx, AX_I32, 1, SH(n), k);
        ax_array *out[2] = {NULL, NULL};
        int got = RUN_N(cx, ax_group_by(keys, use_data(cx, AX_I64, 1, SH(n), v), ax_i64(NB)), out, 2);
        CHECKF(got == 2 || op_collecting(), "ax_group_by: %d: %s", got, ax_error(cx));
        if (got == 2 && SHAPE_IS(out[0], 1, NB) && SHAPE_IS(out[1], 1, n)) {
            const int64_t *cnt = ax_array_data(out[0], 0), *grp = ax_array_data(out[1], 0);
            int64_t at = 0;
            for (int b = 0; b < NB; b++) {
                int64_t c = 0;
                for (int64_t i = 0; i < n; i++)
                    if (k[i] == b) {
                        CHECK_EQ_I(grp[at + c], v[i]);   /* in key order, each group in input order */
                        c++;
                    }
                CHECK_EQ_I(cnt[b], c);
                at += c;
            }
        }
        for (int i = 0; i < got; i++) ax_array_release(out[i]);
        ax_array *r = RUN(cx, ax_reduce_by_key(ax_fn_add, NULL, ax_f64(0.5), keys, use_data(cx, AX_F64, 1, SH(n), d),
                                               ax_i64(NB)));
        if (r && SHAPE_IS(r, 1, NB)) {
            const double *s = ax_array_data(r, 0);
            for (int b = 0; b < NB; b++) {
                double want = 0.5;
                for (int64_t i = 0; i < n; i++)
                    if (k[i] == b) want += d[i];
                CHECKF(s[b] == want, "bucket %d: %g, expected %g", b, s[b], want);
            }
        }
        ax_array_release(r);
        free(k), free(v), free(d);
    }
    /* a key outside [0, nbuckets): an index error */
    int32_t bad[3] = {0, 9, 1};
    int64_t vv[3] = {1, 2, 3};
    EXPECT_FAIL(cx, ax_aget(ax_group_by(use_data(cx, AX_I32, 1, SH(3), bad), use_data(cx, AX_I64, 1, SH(3), vv),
                                        ax_i64(NB)), 0), AX_ERR_INDEX);
    EXPECT_FAIL(cx, ax_reduce_by_key(ax_fn_add, NULL, ax_i64(0), use_data(cx, AX_I32, 1, SH(3), bad),
                                     use_data(cx, AX_I64, 1, SH(3), vv), ax_i64(NB)), AX_ERR_INDEX);
    /* values of another length: a shape error */
    EXPECT_FAIL(cx, ax_aget(ax_group_by(use_data(cx, AX_I32, 1, SH(3), bad), use_data(cx, AX_I64, 1, SH(2), vv),
                                        ax_i64(NB)), 1), AX_ERR_SHAPE);
    op_ctx_done(cx);
}

BE_TEST(group_errors)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    float f[2] = {1, 2};
    int64_t v[2] = {1, 2};
    ax_acc fk = use_data(cx, AX_F32, 1, SH(2), f), vals = use_data(cx, AX_I64, 1, SH(2), v);
    CHECK(ax_group_by(fk, vals, ax_i64(3)) == NULL);
    CHECKF(strstr(ax_error(cx), "ax_group_by") && strstr(ax_error(cx), "integers"), "%s", ax_error(cx));
    ax_clear_error(cx);
    ax_acc ik = use_data(cx, AX_I64, 1, SH(2), v);
    CHECK(ax_reduce_by_key(ax_fn_add, NULL, ax_f32(0), ik, vals, ax_i64(3)) == NULL);
    CHECKF(strstr(ax_error(cx), "ax_reduce_by_key") && strstr(ax_error(cx), "initial value"), "%s", ax_error(cx));
    ax_clear_error(cx);
    CHECK(ax_group_by(ik, NULL, ax_i64(3)) == NULL);
    CHECKF(strstr(ax_error(cx), "NULL"), "%s", ax_error(cx));
    ax_clear_error(cx);
    op_ctx_done(cx);
}
