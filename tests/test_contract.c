/*
 * Matrix products written as folds (the README's matrix product: a fold
 * with (+) of a zipWith (*) of a replicated matrix and a replicated,
 * transposed one), which the CPU backend hands to a BLAS in the fast
 * modes where one is installed (backend/cgen/contract.c, cpu/exec.c).
 * Each form (A B, A B^T, A^T B, A^T B^T, a constant factor, several
 * leading dimensions merged into the rows, f32 and f64, odd and empty
 * shapes) against the interpreter, which defines the fold: integer-valued
 * inputs small enough that every sum is exact in any order, so the BLAS's
 * result must equal the fold's bit for bit, and random ones within the
 * fast mode's bound for a sum.  And where the BLAS must not be used: the
 * exact mode, AXLE_BLAS=off, a fold with another zero, operands larger
 * than the product's space; the counter of calls says which path ran.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "backend/cpu/cg.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Is a BLAS there for the CPU backend to load (runtime/blas.c's names)? */
static bool have_blas(void)
{
    static int have = -1;
    if (have < 0) {
        void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
        if (!h) h = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
        have = h != NULL;
        if (!have)
            fprintf(stderr, "note: OpenBLAS is not installed: the BLAS path is not run, only the fallback "
                            "(scripts/install-deps.sh test installs libopenblas0-pthread)\n");
    }
    return have;
}

static ax_ctx *ctx_of(ax_backend_kind k, bool fast)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = k;
    o.fast_math = fast;
    o.threads = 2;
    return ax_ctx_new(&o);
}

static int64_t blas_calls(ax_ctx *cx)
{
    CpuCounters c;
    return cpu_counters(cx, &c) ? c.blas : 0;   /* no state yet: nothing ran */
}

/* A rank-2 (or rank-3) array of s, integer values in [-range, range]
 * (range 0: random reals of mixed signs in [-1, 1]). */
static ax_array *matrix(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, uint64_t seed, int range)
{
    ax_array *a = ax_array_new(cx, ax_type_scalar(s), rank, sh);
    if (!a) return NULL;
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sh[d];
    void *p = ax_array_data(a, 0);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v = range ? (double)((int64_t)(x % (uint64_t)(2 * range + 1)) - range)
                         : (double)(x >> 11) / 4503599627370496.0 - 1.0;
        if (s == AX_F64) ((double *)p)[i] = v;
        else ((float *)p)[i] = (float)v;
    }
    return a;
}

typedef struct Form {
    bool ta, tb;              /* A given as k x m, B as n x k */
    double alpha;             /* 0: no constant factor */
} Form;

static ax_exp scaled(ax_exp x, ax_exp y, void *env)
{
    const Form *f = env;
    ax_exp c = ax_exp_type(x) == ax_type_scalar(AX_F64) ? ax_f64(f->alpha) : ax_f32((float)f->alpha);
    return ax_mul(ax_mul(c, x), y);
}

/* Two operands' recipe: made alike in each context (an array belongs to
 * one). */
typedef struct Mats {
    ax_scalar s;
    int64_t sa[2], sb[2];
    uint64_t seed;
    int range;
} Mats;

/* C = alpha op(A) op(B) for A, B as the form gives them: op(A) m x k,
 * op(B) k x n, the fold summing along k of fn's products (env its
 * environment); z the fold's zero. */
static ax_acc product_fn(ax_ctx *cx, const Form *f, const Mats *mt, ax_exp z, ax_fn2 fn, void *env)
{
    ax_array *A = matrix(cx, mt->s, 2, mt->sa, mt->seed, mt->range);
    ax_array *B = matrix(cx, mt->s, 2, mt->sb, mt->seed + 1, mt->range);
    ax_acc a = ax_use(cx, A), b = ax_use(cx, B);
    ax_array_release(A);   /* the program holds them */
    ax_array_release(B);
    if (f->ta) a = ax_transpose(a, NULL);           /* k x m -> m x k */
    if (!f->tb) b = ax_transpose(b, NULL);          /* k x n -> n x k */
    ax_exp m = ax_index_get(ax_shape(a), 0), n = ax_index_get(ax_shape(b), 0);
    ax_acc ar = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(n), ax_all()}, a);
    ax_acc br = ax_replicate(3, (ax_slice[]){ax_fixed(m), ax_all(), ax_all()}, b);
    return ax_fold(ax_fn_add, NULL, z, ax_zip_with(fn, env, ar, br));
}

/* The form's product: a b, or alpha (a b) with the form's alpha. */
static ax_acc product(ax_ctx *cx, const Form *f, const Mats *mt, ax_exp z)
{
    return f->alpha ? product_fn(cx, f, mt, z, scaled, (void *)f) : product_fn(cx, f, mt, z, ax_fn_mul, NULL);
}

static ax_exp zero(ax_scalar s) { return s == AX_F64 ? ax_f64(0) : ax_f32(0); }

/* got against want, n values of s: bit for bit (rel 0) or within rel of
 * the magnitude scale. */
static void same(const ax_array *got, const ax_array *want, ax_scalar s, double rel, double scale, const char *what)
{
    REQUIRE(got && want);
    CHECKF(ax_array_size(got) == ax_array_size(want), "%s: %lld elements, want %lld", what,
           (long long)ax_array_size(got), (long long)ax_array_size(want));
    int64_t n = ax_array_size(got);
    const void *g = ax_array_data(got, 0), *w = ax_array_data(want, 0);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
        double x = s == AX_F64 ? ((const double *)g)[i] : ((const float *)g)[i];
        double y = s == AX_F64 ? ((const double *)w)[i] : ((const float *)w)[i];
        bool ok = rel == 0 ? x == y : fabs(x - y) <= rel * scale;
        if (!ok) {
            bad++;
            CHECKF(ok, "%s: element %lld is %.17g, the interpreter's %.17g", what, (long long)i, x, y);
        }
    }
}

static const int64_t dims[][3] = {   /* m, k, n */
    {1, 1, 1}, {7, 13, 11}, {37, 41, 53}, {64, 3, 1}, {1, 100, 9}, {66, 70, 45}, {0, 5, 4}, {5, 0, 4}, {5, 4, 0},
};

static Mats mats(ax_scalar s, const Form *f, int64_t m, int64_t k, int64_t n, uint64_t seed, int range)
{
    Mats mt = {s, {f->ta ? k : m, f->ta ? m : k}, {f->tb ? n : k, f->tb ? k : n}, seed, range};
    return mt;
}

/* Every form, type and shape: integer-valued inputs (every sum exact), so
 * the fast mode's BLAS must give the interpreter's values exactly; the
 * BLAS is called for each non-empty product. */
TEST(matrix_products_against_the_interpreter)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, true);
    REQUIRE(ref && cx);
    static const ax_scalar types[] = {AX_F64, AX_F32};
    int64_t calls = 0;
    for (int t = 0; t < 2; t++)
        for (int form = 0; form < 8; form++) {
            Form f = {form & 1, (form >> 1) & 1, form & 4 ? 1.5 : 0};
            for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
                int64_t m = dims[d][0], k = dims[d][1], n = dims[d][2];
                ax_scalar s = types[t];
                /* small values: |sum| <= 4 * 4 * 100 * 1.5, exact in f32 too */
                Mats mt = mats(s, &f, m, k, n, 3 + d, 4);
                ax_array *w = RUN(ref, product(ref, &f, &mt, zero(s)));
                int64_t c0 = blas_calls(cx);
                ax_array *g = RUN(cx, product(cx, &f, &mt, zero(s)));
                char what[96];
                snprintf(what, sizeof what, "%s ta %d tb %d alpha %g, %lldx%lldx%lld", s == AX_F64 ? "f64" : "f32",
                         f.ta, f.tb, f.alpha, (long long)m, (long long)k, (long long)n);
                same(g, w, s, 0, 1, what);
                if (g) {
                    const int64_t *gs = ax_array_shape(g);
                    CHECKF(ax_array_rank(g) == 2 && gs[0] == m && gs[1] == n, "%s: shape", what);
                }
                bool called = have_blas() && m && k && n;
                CHECKF(blas_calls(cx) == c0 + called, "%s: %lld BLAS calls, want %d", what,
                       (long long)(blas_calls(cx) - c0), (int)called);
                calls += called;
                ax_array_release(w);
                ax_array_release(g);
            }
        }
    fprintf(stderr, "%lld products by the BLAS\n", (long long)calls);
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}

/* Random reals: within the fast mode's bound for a sum of k terms,
 * (k - 1) u times the sum of the magnitudes (<= k here), u of f32 or f64. */
TEST(matrix_products_of_reals_within_the_bound)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, true);
    REQUIRE(ref && cx);
    for (int t = 0; t < 2; t++) {
        ax_scalar s = t ? AX_F32 : AX_F64;
        double u = t ? 0x1p-24 : 0x1p-53;
        int64_t m = 47, k = 301, n = 31;
        for (int form = 0; form < 4; form++) {
            Form f = {form & 1, (form >> 1) & 1, 0};
            Mats mt = mats(s, &f, m, k, n, 11, 0);
            ax_array *w = RUN(ref, product(ref, &f, &mt, zero(s)));
            ax_array *g = RUN(cx, product(cx, &f, &mt, zero(s)));
            same(g, w, s, (double)(k + 1) * u, (double)k, s == AX_F64 ? "f64 reals" : "f32 reals");
            ax_array_release(w);
            ax_array_release(g);
        }
    }
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}

/* PolyBench's doitgen: A (r x q x s) times C4 (s x p), the result's two
 * leading dimensions merged into the rows of one product. */
static ax_acc doitgen(ax_ctx *cx)
{
    ax_array *A = matrix(cx, AX_F64, 3, (int64_t[]){5, 6, 7}, 1, 5), *C4 = matrix(cx, AX_F64, 2, (int64_t[]){7, 9}, 2, 5);
    ax_acc a = ax_use(cx, A), c = ax_transpose(ax_use(cx, C4), NULL);   /* p x s */
    ax_array_release(A);
    ax_array_release(C4);
    ax_exp p = ax_index_get(ax_shape(c), 0), r = ax_index_get(ax_shape(a), 0), q = ax_index_get(ax_shape(a), 1);
    ax_acc ar = ax_replicate(4, (ax_slice[]){ax_all(), ax_all(), ax_fixed(p), ax_all()}, a);
    ax_acc cr = ax_replicate(4, (ax_slice[]){ax_fixed(r), ax_fixed(q), ax_all(), ax_all()}, c);
    return ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL, ar, cr));
}

TEST(leading_dimensions_merge_into_rows)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, true);
    REQUIRE(ref && cx);
    ax_array *w = RUN(ref, doitgen(ref));
    int64_t c0 = blas_calls(cx);
    ax_array *g = RUN(cx, doitgen(cx));
    same(g, w, AX_F64, 0, 1, "doitgen");
    if (g) CHECK(ax_array_rank(g) == 3 && ax_array_shape(g)[2] == 9);
    CHECK(blas_calls(cx) == c0 + have_blas());
    ax_array_release(w);
    ax_array_release(g);
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}

/* Where the BLAS must not run: the exact mode (the fold's own order),
 * AXLE_BLAS=off, a fold whose zero is not 0, and operands larger than the
 * product's space (the zipWith's intersection: their rows would not be
 * the product's); each result still the interpreter's. */
TEST(blas_only_where_it_computes_the_fold)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false);
    REQUIRE(ref);
    Form f = {false, false, 0};
    Mats mt = {AX_F64, {20, 30}, {30, 25}, 1, 4}, big = {AX_F64, {20, 30}, {31, 25}, 1, 4};
    for (int c = 0; c < 4; c++) {
        if (c == 1) setenv("AXLE_BLAS", "off", 1);
        ax_ctx *cx = ctx_of(AX_BACKEND_CPU, c != 0);
        if (c == 1) unsetenv("AXLE_BLAS");
        REQUIRE(cx);
        const Mats *m = c == 3 ? &big : &mt;
        ax_array *w = RUN(ref, product(ref, &f, m, ax_f64(c == 2 ? 1 : 0)));
        int64_t c0 = blas_calls(cx);
        ax_array *g = RUN(cx, product(cx, &f, m, ax_f64(c == 2 ? 1 : 0)));
        static const char *const what[] = {"exact mode", "AXLE_BLAS=off", "zero 1", "operands larger"};
        same(g, w, AX_F64, 0, 1, what[c]);
        CHECKF(blas_calls(cx) == c0, "%s: the BLAS ran", what[c]);
        ax_array_release(w);
        ax_array_release(g);
        ax_ctx_free(cx);
    }
    /* and the fast mode does call it, so that the cases above mean something */
    ax_ctx *cx = ctx_of(AX_BACKEND_CPU, true);
    REQUIRE(cx);
    ax_array *g = RUN(cx, product(cx, &f, &mt, ax_f64(0)));
    CHECK(blas_calls(cx) == have_blas());
    ax_array_release(g);
    ax_ctx_free(cx);
    ax_ctx_free(ref);
}

/* A library named by AXLE_BLAS that does not load: the generated kernel
 * runs (the same values) and the context goes on. */
TEST(a_missing_blas_falls_back)
{
    setenv("AXLE_BLAS", "/nonexistent/libblas.so", 1);
    ax_ctx *cx = ctx_of(AX_BACKEND_CPU, true), *ref = ctx_of(AX_BACKEND_INTERP, false);
    unsetenv("AXLE_BLAS");
    REQUIRE(cx && ref);
    Form f = {false, false, 0};
    Mats mt = {AX_F64, {9, 8}, {8, 7}, 1, 4};
    ax_array *w = RUN(ref, product(ref, &f, &mt, ax_f64(0)));
    for (int i = 0; i < 2; i++) {
        ax_array *g = RUN(cx, product(cx, &f, &mt, ax_f64(0)));
        same(g, w, AX_F64, 0, 1, "no BLAS");
        ax_array_release(g);
    }
    CHECK(blas_calls(cx) == 0);
    ax_array_release(w);
    ax_ctx_free(cx);
    ax_ctx_free(ref);
}

/* Sums of products and the symmetric ones: A A^T and A^T A (one array
 * read twice: the BLAS's syrk, the upper triangle copied from the lower),
 * A B^T + B A^T over a zipped pair of matrices (syr2k, PolyBench's form),
 * and A B^T + C D^T over four (two gemm calls, the second adding). */
typedef struct Sym {
    int kind;                 /* 0 A A^T, 1 A^T A, 2 syr2k, 3 two products */
} Sym;

static ax_exp pair(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_tuple2(a, b);
}

static ax_exp cross(ax_exp ri, ax_exp rj, void *env)
{
    (void)env;   /* ri = (a[i][k], b[i][k]), rj = (a[j][k], b[j][k]) */
    return ax_add(ax_mul(ax_mul(ax_get(rj, 0), ax_f64(1.5)), ax_get(ri, 1)),
                  ax_mul(ax_mul(ax_get(rj, 1), ax_f64(1.5)), ax_get(ri, 0)));
}

static ax_exp two(ax_exp ri, ax_exp rj, void *env)
{
    (void)env;   /* ri = (a[i][k], c[i][k]), rj = (b[j][k], d[j][k]) */
    return ax_add(ax_mul(ax_get(ri, 0), ax_get(rj, 0)), ax_mul(ax_mul(ax_f64(-2), ax_get(ri, 1)), ax_get(rj, 1)));
}

static ax_acc sym_program(ax_ctx *cx, int kind, int64_t n, int64_t k, int range)
{
    int64_t sh[2] = {kind == 1 ? k : n, kind == 1 ? n : k};
    ax_array *A = matrix(cx, AX_F64, 2, sh, 21, range), *B = matrix(cx, AX_F64, 2, sh, 22, range);
    ax_array *C = matrix(cx, AX_F64, 2, sh, 23, range), *D = matrix(cx, AX_F64, 2, sh, 24, range);
    ax_acc a = ax_use(cx, A), b = ax_use(cx, B), c = ax_use(cx, C), d = ax_use(cx, D);
    ax_array_release(A);
    ax_array_release(B);
    ax_array_release(C);
    ax_array_release(D);
    if (kind == 1) a = ax_transpose(a, NULL);
    ax_acc l = a, r = a;
    ax_fn2 f = ax_fn_mul;
    if (kind == 2) l = r = ax_zip_with(pair, NULL, a, b), f = cross;
    if (kind == 3) l = ax_zip_with(pair, NULL, a, c), r = ax_zip_with(pair, NULL, b, d), f = two;
    ax_exp m = ax_index_get(ax_shape(l), 0), nn = ax_index_get(ax_shape(r), 0);
    ax_acc rows = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(nn), ax_all()}, l);
    ax_acc cols = ax_replicate(3, (ax_slice[]){ax_fixed(m), ax_all(), ax_all()}, r);
    return ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(f, NULL, rows, cols));
}

TEST(symmetric_products_and_sums_of_products)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, true);
    REQUIRE(ref && cx);
    static const int64_t nk[][2] = {{1, 1}, {5, 3}, {67, 29}, {130, 65}, {200, 7}};
    static const char *const what[] = {"A A^T", "A^T A", "A B^T + B A^T", "A B^T - 2 C D^T"};
    for (int kind = 0; kind < 4; kind++)
        for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++) {
            ax_array *w = RUN(ref, sym_program(ref, kind, nk[i][0], nk[i][1], 4));
            int64_t c0 = blas_calls(cx);
            ax_array *g = RUN(cx, sym_program(cx, kind, nk[i][0], nk[i][1], 4));
            char msg[64];
            snprintf(msg, sizeof msg, "%s, n %lld k %lld", what[kind], (long long)nk[i][0], (long long)nk[i][1]);
            same(g, w, AX_F64, 0, 1, msg);
            CHECKF(blas_calls(cx) == c0 + have_blas(), "%s: the BLAS did not run", msg);
            ax_array_release(w);
            ax_array_release(g);
        }
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}

static int64_t tiled_calls(ax_ctx *cx)
{
    CpuCounters c;
    return cpu_counters(cx, &c) ? c.tiled : 0;
}

/* Scales written on the reads: (1.5 a) b, a (-3 b), as 2mm writes its
 * alpha; each term then computed as written. */
static ax_exp scaled_a(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    ax_exp c = ax_exp_type(x) == ax_type_scalar(AX_F64) ? ax_f64(1.5) : ax_f32(1.5f);
    return ax_mul(ax_mul(c, x), y);
}

static ax_exp scaled_b(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    ax_exp c = ax_exp_type(x) == ax_type_scalar(AX_F64) ? ax_f64(-3) : ax_f32(-3);
    return ax_mul(x, ax_mul(y, c));
}

/* The exact mode's register-tiled kernel sums each element strictly in
 * order from the fold's zero, each term as written: the interpreter's
 * value bit for bit, on random reals, for every layout, scale, type,
 * partial tile (rows, columns and sums not multiples of the tile or the
 * block of 256) and a zero of -0; the kernel's counter says it ran. */
TEST(tiled_products_are_the_interpreters_bits)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, false);
    REQUIRE(ref && cx);
    static const int64_t mkn[][3] = {{96, 16, 16}, {97, 290, 37}, {99, 20, 250}};
    static const ax_fn2 fns[] = {ax_fn_mul, scaled_a, scaled_b};
    int runs = 0;
    for (int t = 0; t < 2; t++)
        for (int form = 0; form < 4; form++)
            for (size_t d = 0; d < sizeof mkn / sizeof mkn[0]; d++) {
                    /* each form meets each of the three scalings once */
                    int fi = (int)((form + d) % 3);
                    ax_scalar s = t ? AX_F32 : AX_F64;
                    Form f = {form & 1, (form >> 1) & 1, 0};
                    Mats mt = mats(s, &f, mkn[d][0], mkn[d][1], mkn[d][2], 31 + d, 0);
                    ax_exp z = (d & 1) ? (s == AX_F64 ? ax_f64(-0.0) : ax_f32(-0.0f)) : zero(s);
                    ax_exp zr = (d & 1) ? (s == AX_F64 ? ax_f64(-0.0) : ax_f32(-0.0f)) : zero(s);
                    ax_array *w = RUN(ref, product_fn(ref, &f, &mt, zr, fns[fi], NULL));
                    int64_t c0 = tiled_calls(cx);
                    ax_array *g = RUN(cx, product_fn(cx, &f, &mt, z, fns[fi], NULL));
                    char what[96];
                    snprintf(what, sizeof what, "tiled %s ta %d tb %d form %d, %lldx%lldx%lld", t ? "f32" : "f64", f.ta,
                             f.tb, fi, (long long)mkn[d][0], (long long)mkn[d][1], (long long)mkn[d][2]);
                    same(g, w, s, 0, 1, what);
                    CHECKF(tiled_calls(cx) == c0 + 1, "%s: the tiled kernel did not run", what);
                    runs++;
                    ax_array_release(w);
                    ax_array_release(g);
                }
    fprintf(stderr, "%d tiled products\n", runs);
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}

/* The fast mode without a BLAS runs the tiled kernel too (its sums may
 * contract): within the bound for a sum. */
TEST(tiled_products_in_the_fast_mode)
{
    setenv("AXLE_BLAS", "off", 1);
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, true);
    unsetenv("AXLE_BLAS");
    REQUIRE(ref && cx);
    Form f = {false, false, 0};
    Mats mt = mats(AX_F64, &f, 100, 300, 40, 5, 0);
    ax_array *w = RUN(ref, product(ref, &f, &mt, ax_f64(0)));
    ax_array *g = RUN(cx, product(cx, &f, &mt, ax_f64(0)));
    same(g, w, AX_F64, 301 * 0x1p-53, 300, "fast, tiled");
    CHECK(tiled_calls(cx) == 1 && blas_calls(cx) == 0);
    ax_array_release(w);
    ax_array_release(g);
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}

/* A A^T and A^T A in the exact mode: the tiled kernel computes the lower
 * triangle's tiles and the host copies it up; every element the
 * interpreter's bits (random reals), the upper triangle included. */
static ax_acc gram(ax_ctx *cx, bool at, int64_t n, int64_t k, ax_scalar s)
{
    int64_t sh[2] = {at ? k : n, at ? n : k};
    ax_array *A = matrix(cx, s, 2, sh, 41, 0);
    ax_acc a = ax_use(cx, A);
    ax_array_release(A);
    if (at) a = ax_transpose(a, NULL);
    ax_exp m = ax_index_get(ax_shape(a), 0);
    ax_acc rows = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(m), ax_all()}, a);
    ax_acc cols = ax_replicate(3, (ax_slice[]){ax_fixed(m), ax_all(), ax_all()}, a);
    return ax_fold(ax_fn_add, NULL, zero(s), ax_zip_with(ax_fn_mul, NULL, rows, cols));
}

TEST(tiled_symmetric_products)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, false);
    REQUIRE(ref && cx);
    /* a sum over two blocks of 256 in f64 only (the blocks are the
     * unsymmetric kernel's, tested on both types above) */
    static const int64_t nk[][2] = {{96, 16}, {130, 40}, {97, 257}};
    for (int t = 0; t < 2; t++)
        for (int at = 0; at < 2; at++)
            for (size_t i = 0; i < sizeof nk / sizeof nk[0] - t; i++) {
                ax_scalar s = t ? AX_F32 : AX_F64;
                ax_array *w = RUN(ref, gram(ref, at, nk[i][0], nk[i][1], s));
                int64_t c0 = tiled_calls(cx);
                ax_array *g = RUN(cx, gram(cx, at, nk[i][0], nk[i][1], s));
                char what[64];
                snprintf(what, sizeof what, "%s %s, n %lld k %lld", t ? "f32" : "f64", at ? "A^T A" : "A A^T",
                         (long long)nk[i][0], (long long)nk[i][1]);
                same(g, w, s, 0, 1, what);
                CHECKF(tiled_calls(cx) == c0 + 1, "%s: the tiled kernel did not run", what);
                ax_array_release(w);
                ax_array_release(g);
            }
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}

/* Two products summed (syr2k's A B^T + B A^T with the constant on each
 * term's first read, and A B^T - 2 C D^T) in the exact mode: the tiled
 * kernel adds the element's two terms, then the element to the sum; the
 * interpreter's bits on random reals. */
TEST(tiled_sums_of_two_products)
{
    ax_ctx *ref = ctx_of(AX_BACKEND_INTERP, false), *cx = ctx_of(AX_BACKEND_CPU, false);
    REQUIRE(ref && cx);
    /* the sum over two blocks of 256 for syr2k's form only */
    static const int64_t nk[][2] = {{96, 16}, {101, 40}, {97, 270}};
    for (int kind = 2; kind < 4; kind++)
        for (size_t i = 0; i < sizeof nk / sizeof nk[0] - (kind == 3); i++) {
            ax_array *w = RUN(ref, sym_program(ref, kind, nk[i][0], nk[i][1], 0));
            int64_t c0 = tiled_calls(cx);
            ax_array *g = RUN(cx, sym_program(cx, kind, nk[i][0], nk[i][1], 0));
            char msg[64];
            snprintf(msg, sizeof msg, "tiled %s, n %lld k %lld", kind == 2 ? "syr2k" : "A B^T - 2 C D^T",
                     (long long)nk[i][0], (long long)nk[i][1]);
            same(g, w, AX_F64, 0, 1, msg);
            CHECKF(tiled_calls(cx) == c0 + 1, "%s: the tiled kernel did not run", msg);
            ax_array_release(w);
            ax_array_release(g);
        }
    ax_ctx_free(ref);
    ax_ctx_free(cx);
}
