/*
 * permute's strategies on the C backend against the interpreter: atomic
 * read-modify-writes into the result, and private copies per thread
 * merged at the end (histograms), forced in turn with AXLE_PERMUTE.
 * Every element type, every commutative primitive that has an identity,
 * operands in either order, tuples, special float values (NaN, -0, inf:
 * the copies' identity must not change any value), dropped elements,
 * defaults that are not the identity, and an index out of bounds.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

typedef struct Case {
    ax_scalar s;
    int op;        /* 0 add, 1 mul, 2 min, 3 max, 4 band, 5 bor, 6 bxor, 7 and, 8 or */
    bool swap;     /* \x y -> op y x */
} Case;

static ax_exp apply_op(int op, ax_exp a, ax_exp b)
{
    switch (op) {
    case 0: return ax_add(a, b);
    case 1: return ax_mul(a, b);
    case 2: return ax_min(a, b);
    case 3: return ax_max(a, b);
    case 4: return ax_band(a, b);
    case 5: return ax_bor(a, b);
    case 6: return ax_bxor(a, b);
    case 7: return ax_and(a, b);
    default: return ax_or(a, b);
    }
}

static ax_exp comb(ax_exp x, ax_exp y, void *env)
{
    const Case *c = env;
    return c->swap ? apply_op(c->op, y, x) : apply_op(c->op, x, y);
}

/* Pairs: component 0 adds (i32), component 1 takes the max (f32). */
static ax_exp comb_pair(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    return ax_tuple2(ax_add(ax_get(y, 0), ax_get(x, 0)), ax_max(ax_get(x, 1), ax_get(y, 1)));
}

static ax_exp target(ax_exp ix, void *env)
{
    ax_acc dst = env;
    return ax_ix1(ax_cvt(ax_at(dst, ix), AX_I64));
}

static bool valid(ax_scalar s, int op)
{
    bool fl = s == AX_F32 || s == AX_F64, b = s == AX_BOOL;
    if (op <= 3) return !b;
    if (op <= 6) return !b && !fl;
    return b;
}

/* A value of type s from a seed, with special values for floats. */
static void put(void *buf, ax_scalar s, int64_t i, uint64_t r, int op)
{
    double v = (double)((int64_t)(r % 200) - 100);
    if (op == 1) v = (double)(r % 3) - 1;   /* products stay small: -1, 0, 1 */
    switch (s) {
    case AX_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(r & 1); break;
    case AX_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case AX_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case AX_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case AX_I64: ((int64_t *)buf)[i] = (int64_t)r; break;
    case AX_U8: ((uint8_t *)buf)[i] = (uint8_t)r; break;
    case AX_U16: ((uint16_t *)buf)[i] = (uint16_t)r; break;
    case AX_U32: ((uint32_t *)buf)[i] = (uint32_t)r; break;
    case AX_U64: ((uint64_t *)buf)[i] = r; break;
    case AX_F32: case AX_F64: {
        int k = (int)(r >> 50) % 16;
        double f = k == 0 ? NAN : k == 1 ? -0.0 : k == 2 ? 0.0 : k == 3 ? INFINITY : k == 4 ? -INFINITY
                                                                                          : v / 8;
        if (op == 0 && (k == 0 || k == 3 || k == 4)) f = v / 8;   /* sums: finite (order-free check) */
        if (s == AX_F32) ((float *)buf)[i] = (float)f;
        else ((double *)buf)[i] = f;
        break;
    }
    default: break;
    }
}

static size_t width(ax_scalar s)
{
    switch (s) {
    case AX_BOOL: case AX_I8: case AX_U8: return 1;
    case AX_I16: case AX_U16: return 2;
    case AX_I32: case AX_U32: case AX_F32: return 4;
    default: return 8;
    }
}

/* Results of one backend: n values of type s. */
static bool same(const void *a, const void *b, ax_scalar s, int64_t n, int op, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double x, y;
        if (s == AX_F32) x = ((const float *)a)[i], y = ((const float *)b)[i];
        else if (s == AX_F64) x = ((const double *)a)[i], y = ((const double *)b)[i];
        else {
            if (memcmp((const char *)a + i * width(s), (const char *)b + i * width(s), width(s))) {
                fprintf(stderr, "%s: element %lld differs\n", what, (long long)i);
                return false;
            }
            continue;
        }
        bool ok = (x != x && y != y) || (x == y && signbit(x) == signbit(y)) ||
                  (op == 0 && fabs(x - y) <= 1e-9 * (1 + fabs(y)));
        if (!ok) {
            fprintf(stderr, "%s: element %lld: %.17g vs %.17g\n", what, (long long)i, x, y);
            return false;
        }
    }
    return true;
}

static const ax_backend_kind kinds[2] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};

/* Runs the permute of one case on both backends; the CPU under strategy
 * `how`; n sources into m targets (every 7th source dropped: index -1). */
static void run_case(const Case *c, const char *how, int64_t n, int64_t m)
{
    void *src = malloc(width(c->s) * (size_t)n), *dfl = malloc(width(c->s) * (size_t)m);
    int32_t *dst = malloc(sizeof *dst * (size_t)n);
    if (!src || !dfl || !dst) {
        CHECK(!"out of memory");
        free(src), free(dfl), free(dst);
        return;
    }
    uint64_t r = 88172645463325252ull ^ (uint64_t)(c->s * 131 + c->op * 7 + c->swap);
    for (int64_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        put(src, c->s, i, r, c->op);
        dst[i] = i % 7 == 3 ? -1 : (int32_t)((r >> 20) % (uint64_t)m);
    }
    for (int64_t i = 0; i < m; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        put(dfl, c->s, i, r, c->op);
    }
    void *res[2] = {0};
    setenv("AXLE_PERMUTE", how, 1);
    for (int k = 0; k < 2; k++) {
        ax_options o = {0};
        o.backend = kinds[k];
        o.threads = 2;
        ax_ctx *cx = ax_ctx_new(&o);
        if (!cx) continue;
        ax_acc D = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &n, dst));
        ax_acc S = ax_use(cx, ax_array_wrap(cx, c->s, 1, &n, src));
        ax_acc F = ax_use(cx, ax_array_wrap(cx, c->s, 1, &m, dfl));
        ax_acc P = ax_permute(comb, (void *)c, F, target, D, S);
        if (kinds[k] == AX_BACKEND_CPU) {
            /* the generator offers private copies for every case here */
            char *code = ax_dump(cx, P, "c", false);
            CHECKF(code && strstr(code, "_ppriv("), "type %d op %d: no private-copy kernel", (int)c->s, c->op);
            free(code);
        }
        ax_array *out = ax_run(cx, P);
        CHECKF(out, "type %d op %d (%s): %s", (int)c->s, c->op, how, ax_error(cx));
        if (out) {
            res[k] = malloc(width(c->s) * (size_t)m);
            if (res[k]) memcpy(res[k], ax_array_data(out, 0), width(c->s) * (size_t)m);
            ax_array_release(out);
        }
        ax_ctx_free(cx);
    }
    unsetenv("AXLE_PERMUTE");
    char what[96];
    snprintf(what, sizeof what, "type %d op %d%s, %s, %lld -> %lld", (int)c->s, c->op, c->swap ? " swapped" : "",
             how, (long long)n, (long long)m);
    CHECKF(res[0] && res[1] && same(res[1], res[0], c->s, m, c->op, what), "%s", what);
    free(res[0]), free(res[1]);
    free(src), free(dfl), free(dst);
}

TEST(every_type_and_operator_under_both_strategies)
{
    static const ax_scalar types[] = {AX_BOOL, AX_I8, AX_I16, AX_I32, AX_I64, AX_U8,
                                      AX_U16, AX_U32, AX_U64, AX_F32, AX_F64};
    int ran = 0;
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (int op = 0; op < 9; op++) {
            if (!valid(types[t], op)) continue;
            for (int swap = 0; swap < 2; swap++) {
                Case c = {types[t], op, swap != 0};
                run_case(&c, "private", 20000, 37);
                run_case(&c, "atomic", 20000, 37);
                ran++;
            }
        }
    CHECK(ran >= 60);
}

TEST(histogram_sizes_and_the_default_choice)
{
    Case c = {AX_I32, 0, false};
    /* a source smaller than the copies, one element, a target of one, and
     * a large source where the default picks private copies */
    static const int64_t ns[] = {1, 5, 100, 100000, 300000}, ms[] = {1, 256, 1000, 4096, 256};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        run_case(&c, "private", ns[i], ms[i]);
        run_case(&c, "", ns[i], ms[i]);
    }
    /* few sources, many targets: most of each copy keeps the identity,
     * which must leave every default (NaN, -0, inf included) as it is */
    static const Case few[] = {{AX_F32, 2, false}, {AX_F64, 3, true}, {AX_F32, 0, false}, {AX_F64, 1, false},
                               {AX_I8, 2, false}, {AX_U16, 3, false}, {AX_U32, 4, false}, {AX_BOOL, 7, false}};
    for (size_t i = 0; i < sizeof few / sizeof *few; i++) run_case(&few[i], "private", 30, 500);
}

TEST(tuples_combine_by_private_copies)
{
    int64_t n = 50000, m = 64;
    int32_t *dst = malloc(sizeof *dst * (size_t)n), *a = malloc(sizeof *a * (size_t)n), da[64];
    float *b = malloc(sizeof *b * (size_t)n), db[64];
    REQUIRE(dst && a && b);
    for (int64_t i = 0; i < n; i++) {
        dst[i] = (int32_t)((i * 2654435761u) % (uint64_t)m);
        a[i] = (int32_t)(i % 13);
        b[i] = i % 101 == 0 ? NAN : (float)((i * 7) % 1000) - 500;
    }
    for (int k = 0; k < 64; k++) da[k] = k, db[k] = k % 2 ? NAN : -1000;
    int32_t ra[2][64];
    float rb[2][64];
    for (int k = 0; k < 2; k++) {
        setenv("AXLE_PERMUTE", "private", 1);
        ax_options o = {0};
        o.backend = kinds[k];
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        const ax_type *pt = ax_type_tuple(cx, 2, (const ax_type *[]){ax_type_scalar(AX_I32), ax_type_scalar(AX_F32)});
        ax_acc D = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &n, dst));
        ax_acc S = ax_use(cx, ax_array_wrap_n(cx, pt, 1, &n, (void *[]){a, b}));
        ax_acc F = ax_use(cx, ax_array_wrap_n(cx, pt, 1, &m, (void *[]){da, db}));
        ax_array *out = ax_run(cx, ax_permute(comb_pair, NULL, F, target, D, S));
        CHECKF(out, "%s", ax_error(cx));
        if (out) {
            memcpy(ra[k], ax_array_data(out, 0), sizeof ra[k]);
            memcpy(rb[k], ax_array_data(out, 1), sizeof rb[k]);
            ax_array_release(out);
        }
        ax_ctx_free(cx);
        unsetenv("AXLE_PERMUTE");
    }
    CHECK(!memcmp(ra[0], ra[1], sizeof ra[0]));
    CHECK(same(rb[1], rb[0], AX_F32, m, 3, "pair component 1"));
    free(dst), free(a), free(b);
}

TEST(an_index_out_of_bounds_is_reported_by_both_strategies)
{
    int64_t n = 40000, m = 100;
    int32_t *dst = malloc(sizeof *dst * (size_t)n), *src = malloc(sizeof *src * (size_t)n);
    REQUIRE(dst && src);
    for (int64_t i = 0; i < n; i++) dst[i] = (int32_t)(i % m), src[i] = 1;
    dst[31234] = 100;   /* one past the end */
    static const char *const hows[] = {"private", "atomic", ""};
    char first[256] = "";
    for (int h = 0; h < 3; h++)
        for (int k = 0; k < 2; k++) {
            setenv("AXLE_PERMUTE", hows[h], 1);
            ax_options o = {0};
            o.backend = kinds[k];
            ax_ctx *cx = ax_ctx_new(&o);
            REQUIRE(cx);
            ax_acc D = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &n, dst));
            ax_acc S = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &n, src));
            int64_t mm = m;
            ax_array *z = ax_array_new(cx, ax_type_scalar(AX_I32), 1, &mm);
            ax_array *out = ax_run(cx, ax_permute(ax_fn_add, NULL, ax_use(cx, z), target, D, S));
            CHECK(!out && ax_status_of(cx) == AX_ERR_INDEX);
            if (!first[0]) snprintf(first, sizeof first, "%s", ax_error(cx));
            else CHECKF(!strcmp(first, ax_error(cx)), "'%s' vs '%s'", first, ax_error(cx));
            ax_array_release(out);
            ax_array_release(z);
            ax_clear_error(cx);
            ax_ctx_free(cx);
            unsetenv("AXLE_PERMUTE");
        }
    free(dst), free(src);
}

/* Row i of a matrix into row member[i] of the result (k-means' cluster
 * sums): the generator tests each row segment's targets once (a member
 * inside the result's rows, the segment inside its last extent) and then
 * combines the segment without a test per element.  Against the
 * interpreter under both strategies: rows split between the threads'
 * ranges, a result wider than the rows, rows wider than the result (every
 * segment fails the row test: an index error, or in unsafe mode the
 * elements past the result's end dropped), and one member out of range. */
static ax_exp to_row(ax_exp ix, void *env)
{
    ax_acc member = env;
    return ax_ix2(ax_cvt(ax_at(member, ax_ix1(ax_index_get(ix, 0))), AX_I64), ax_index_get(ix, 1));
}

/* The result of the row permute (f32 sums) on backend k; NULL and the
 * status in *st on failure. */
static float *rows_run(int k, const char *how, bool unsafe, int64_t n, int64_t w, int64_t rows, int64_t wt,
                       const int32_t *member, const float *src, ax_status *st, bool *tested)
{
    setenv("AXLE_PERMUTE", how, 1);
    ax_options o = {0};
    o.backend = kinds[k];
    o.threads = 2;
    o.unsafe = unsafe;
    ax_ctx *cx = ax_ctx_new(&o);
    float *res = NULL;
    *st = AX_OK;
    if (cx) {
        int64_t sm[2] = {n, w}, sr[2] = {rows, wt};
        ax_acc M = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &n, (void *)member));
        ax_acc S = ax_use(cx, ax_array_wrap(cx, AX_F32, 2, sm, (void *)src));
        ax_array *z = ax_array_new(cx, ax_type_scalar(AX_F32), 2, sr);
        if (z) memset(ax_array_data(z, 0), 0, sizeof(float) * (size_t)(rows * wt));
        ax_acc P = ax_permute(ax_fn_add, NULL, ax_use(cx, z), to_row, M, S);
        if (kinds[k] == AX_BACKEND_CPU && tested) {
            char *code = ax_dump(cx, P, "c", false);
            *tested = code && strstr(code, " <= s0_1);");
            free(code);
        }
        ax_array *out = ax_run(cx, P);
        *st = ax_status_of(cx);
        if (out && (res = malloc(sizeof *res * (size_t)(rows * wt))))
            memcpy(res, ax_array_data(out, 0), sizeof *res * (size_t)(rows * wt));
        ax_array_release(out);
        ax_array_release(z);
        ax_ctx_free(cx);
    }
    unsetenv("AXLE_PERMUTE");
    return res;
}

TEST(rows_into_rows_tested_once_per_row)
{
    static const struct { int64_t n, w, rows, wt; int bad; } cs[] = {
        {1, 1, 1, 1, 0},      {7, 34, 5, 34, 0},   {30011, 34, 5, 34, 0}, {20000, 17, 3, 20, 0},
        {5000, 33, 4, 32, 0}, {20000, 8, 6, 8, 1}, {1, 3, 2, 2, 0},
    };
    static const char *const hows[] = {"private", "atomic"};
    for (size_t c = 0; c < sizeof cs / sizeof *cs; c++) {
        int64_t n = cs[c].n, w = cs[c].w, rows = cs[c].rows, wt = cs[c].wt;
        int32_t *member = malloc(sizeof *member * (size_t)n);
        float *src = malloc(sizeof *src * (size_t)(n * w));
        REQUIRE(member && src);
        for (int64_t i = 0; i < n; i++) member[i] = (int32_t)((i * 7 + i / 3) % rows);
        if (cs[c].bad) member[n / 2 + 3] = (int32_t)rows;   /* one row past the result's */
        /* small integers: every order of the sums gives the same bits */
        for (int64_t i = 0; i < n * w; i++) src[i] = (float)((i * 13) % 17) - 8;
        bool fits = w <= wt && !cs[c].bad;
        for (int u = 0; u < 2; u++)
            for (int h = 0; h < 2; h++) {
                ax_status si, sc;
                bool tested = false;
                float *ri = rows_run(0, hows[h], u, n, w, rows, wt, member, src, &si, NULL);
                float *rc = rows_run(1, hows[h], u, n, w, rows, wt, member, src, &sc, &tested);
                CHECKF(tested, "case %zu: no row test in the generated code", c);
                if (!u && !fits) {
                    CHECKF(!ri && si == AX_ERR_INDEX, "case %zu: interpreter %d", c, (int)si);
                    CHECKF(!rc && sc == AX_ERR_INDEX, "case %zu %s: status %d", c, hows[h], (int)sc);
                } else {
                    CHECKF(ri && rc, "case %zu %s unsafe %d: %d %d", c, hows[h], u, (int)si, (int)sc);
                    if (ri && rc) CHECKF(!memcmp(ri, rc, sizeof *ri * (size_t)(rows * wt)), "case %zu %s unsafe %d", c,
                                         hows[h], u);
                }
                free(ri), free(rc);
            }
        free(member), free(src);
    }
}
