/*
 * A compiling backend against the reference interpreter: the CPU backend,
 * or the one AXLE_TEST_BACKEND names (opencl, cuda: CTest runs this
 * suite once per backend, as test_cpu and test_opencl).  Every operation
 * is built twice, in a context on the interpreter and in one on the
 * backend under test (4 threads, so even a 2-core machine splits work), and the
 * results must be equal; floats within a relative tolerance only where
 * the backend may reassociate (folds and scans of + and *) or uses vector
 * maths (exp, log).  Sizes 0, 1, odd (1001) and large (1e5 and 1e6: split
 * into chunks across every thread), ranks 1 to 3, tuple elements, non-commutative
 * associative operators (affine maps, 2x2 matrices, fst/snd) in folds and
 * scans, permute collisions under concurrency, stencil boundaries on
 * arrays smaller than the stencil, safe-mode faults, unsafe mode, a
 * failing compiler, determinism of the generated C, two contexts on two
 * threads, and the kernel cache.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"
#include "backend/cpu/cg.h"
#include "backend/gpu/gpu.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SH(...) ((const int64_t[]){__VA_ARGS__})

/* ================================================================ helpers */

/* The backend under test (AXLE_TEST_BACKEND: cpu, opencl or cuda). */
static ax_backend_kind tested(void)
{
    const char *e = getenv("AXLE_TEST_BACKEND");
    if (e && !strcmp(e, "opencl")) return AX_BACKEND_OPENCL;
    if (e && !strcmp(e, "cuda")) return AX_BACKEND_CUDA;
    return AX_BACKEND_CPU;
}
static const char *tested_name(void)
{
    return tested() == AX_BACKEND_OPENCL ? "opencl" : tested() == AX_BACKEND_CUDA ? "cuda" : "cpu";
}
static bool gpu_tested(void) { return tested() != AX_BACKEND_CPU; }
static const Backend *tested_backend(void)
{
    return tested() == AX_BACKEND_OPENCL ? &backend_opencl : tested() == AX_BACKEND_CUDA ? &backend_cuda : &backend_cpu;
}
/* A test of the CPU backend's own machinery (its C compiler, its cache
 * counters): says so and is skipped when another backend is tested. */
static bool cpu_only(const char *test)
{
    if (!gpu_tested()) return false;
    printf("skip %s: a test of the CPU backend (testing %s)\n", test, tested_name());
    return true;
}

static ax_ctx *ctx_on(ax_backend_kind k, bool unsafe)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = k;
    o.threads = 4;
    o.unsafe = unsafe;
    return ax_ctx_new(&o);
}

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int64_t size_of(int rank, const int64_t *sh)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sh[d];
    return n;
}

/* Deterministic data of scalar type s: integers in [-range, range], floats
 * in about [-range, range] with fractions, bools. */
static void fill(void *buf, ax_scalar s, int64_t n, uint64_t seed, int range)
{
    uint64_t st = seed * 0x2545f4914f6cdd1dull + 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next(&st);
        int64_t v = (int64_t)(r % (uint64_t)(2 * range + 1)) - range;
        double f = (double)v + (double)(r >> 40) / (double)(1ull << 24);
        switch (s) {
        case AX_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(r >> 63); break;
        case AX_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
        case AX_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
        case AX_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
        case AX_I64: ((int64_t *)buf)[i] = v; break;
        case AX_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        case AX_U16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
        case AX_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
        case AX_U64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
        case AX_F32: ((float *)buf)[i] = (float)f; break;
        case AX_F64: ((double *)buf)[i] = f; break;
        default: break;
        }
    }
}

/* An input of n scalar types (a tuple when n > 1), made in cx. */
static ax_acc input_n(ax_ctx *cx, int n, const ax_scalar *ss, int rank, const int64_t *sh, uint64_t seed, int range)
{
    int64_t size = size_of(rank, sh);
    void *bufs[8];
    const ax_type *ts[8];
    for (int k = 0; k < n; k++) {
        bufs[k] = calloc((size_t)(size > 0 ? size : 1), 8);
        fill(bufs[k], ss[k], size, seed * 31 + (uint64_t)k, range);
        ts[k] = ax_type_scalar(ss[k]);
    }
    const ax_type *t = n == 1 ? ts[0] : ax_type_tuple(cx, n, ts);
    ax_array *a = ax_array_from_n(cx, t, rank, sh, (const void *const *)bufs);
    for (int k = 0; k < n; k++) free(bufs[k]);
    ax_acc r = a ? ax_use(cx, a) : NULL;
    ax_array_release(a);
    return r;
}

static ax_acc input(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, uint64_t seed, int range)
{
    return input_n(cx, 1, &s, rank, sh, seed, range);
}

/* Are two results equal (floats: within rel)? Prints the first difference. */
static bool equal(const char *what, const ax_array *a, const ax_array *b, double rel)
{
    char t1[128], t2[128];
    if (!ax_type_equal(ax_array_type(a), ax_array_type(b)) || ax_array_rank(a) != ax_array_rank(b)) {
        fprintf(stderr, "%s: types differ: %s^%d vs %s^%d\n", what, ax_type_str(ax_array_type(a), t1, sizeof t1),
                ax_array_rank(a), ax_type_str(ax_array_type(b), t2, sizeof t2), ax_array_rank(b));
        return false;
    }
    for (int d = 0; d < ax_array_rank(a); d++)
        if (ax_array_extent(a, d) != ax_array_extent(b, d)) {
            fprintf(stderr, "%s: extent %d differs: %lld vs %lld\n", what, d, (long long)ax_array_extent(a, d),
                    (long long)ax_array_extent(b, d));
            return false;
        }
    int64_t n = ax_array_size(a);
    for (int c = 0; c < ax_array_components(a); c++) {
        ax_scalar s = ax_array_component_type(a, c);
        const char *p = ax_array_data(a, c), *q = ax_array_data(b, c);
        size_t sz = ax_scalar_size(s);
        for (int64_t i = 0; i < n; i++) {
            bool ok;
            double x = 0, y = 0;
            if (s == AX_F32) {
                x = ((const float *)p)[i];
                y = ((const float *)q)[i];
                ok = rel > 0 ? harness_close(x, y, rel) : !memcmp(p + i * 4, q + i * 4, 4) || (x == y);
            } else if (s == AX_F64) {
                x = ((const double *)p)[i];
                y = ((const double *)q)[i];
                ok = rel > 0 ? harness_close(x, y, rel) : !memcmp(p + i * 8, q + i * 8, 8) || (x == y);
            } else if (s == AX_BOOL) {
                ok = (p[i] != 0) == (q[i] != 0);
            } else {
                ok = !memcmp(p + (size_t)i * sz, q + (size_t)i * sz, sz);
            }
            if (!ok) {
                int64_t xi = 0, yi = 0;
                if (s != AX_F32 && s != AX_F64) {
                    memcpy(&xi, p + (size_t)i * sz, sz);
                    memcpy(&yi, q + (size_t)i * sz, sz);
                }
                fprintf(stderr, "%s: component %d element %lld differs: %.9g vs %.9g (bits %llx vs %llx)\n", what, c,
                        (long long)i, x, y, (unsigned long long)xi, (unsigned long long)yi);
                return false;
            }
        }
    }
    return true;
}

/* A computation, built once per context from env (usually an Env). */
typedef ax_acc (*Build)(ax_ctx *cx, const void *env);

/* The usual env: a shape and which variant of an operation. */
typedef struct Env {
    int rank;
    const int64_t *sh;
    int which;
} Env;

/* Runs b on the interpreter and on the CPU backend and compares. */
static void same_(const char *file, int line, const char *what, Build b, const void *env, double rel)
{
    ax_ctx *ci = ctx_on(AX_BACKEND_INTERP, false), *cc = ctx_on(tested(), false);
    ax_array *ri[8] = {0}, *rc[8] = {0};
    int ni = ax_run_n(ci, b(ci, env), ri, 8);
    ax_program *pr = ax_compile(cc, b(cc, env));
    int nc = pr ? ax_program_run(pr, rc, 8) : -1;
    if (gpu_tested()) harness_nvrtc_check(cc, b(cc, env), what, true);
    if (pr) {
        const ax_stats *st = ax_program_stats(pr);
        if (strcmp(st->backend, tested_name())) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: %s: ran on %s\n", file, line, what, st->backend);
        }
    }
    ax_program_free(pr);
    if (ni != nc || ni < 0) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: %s: interp %d results (%s), %s %d (%s)\n", file, line, what, ni,
                ni < 0 ? ax_error(ci) : "ok", tested_name(), nc, nc < 0 ? ax_error(cc) : "ok");
    } else {
        for (int k = 0; k < ni; k++)
            if (!equal(what, ri[k], rc[k], rel)) {
                harness_failed_checks++;
                fprintf(stderr, "%s:%d: %s: result %d differs\n", file, line, what, k);
            }
    }
    for (int k = 0; k < 8; k++) {
        if (ni > k) ax_array_release(ri[k]);
        if (nc > k) ax_array_release(rc[k]);
    }
    ax_ctx_free(ci);
    ax_ctx_free(cc);
}
#define SAME(what, b, env, rel) same_(__FILE__, __LINE__, (what), (b), (env), (rel))

/* All variants w in [0, n) of a builder as one tuple (one compile), those
 * for which skip() holds left out. */
static ax_acc all_of(ax_ctx *cx, const void *env, Build b, int n, bool (*skip)(const void *env, int w))
{
    ax_acc v[32];
    int k = 0;
    for (int w = 0; w < n && k < 32; w++) {
        if (skip && skip(env, w)) continue;
        Env e = *(const Env *)env;
        e.which = w;
        v[k++] = b(cx, &e);
    }
    return k == 1 ? v[0] : ax_atuple(k, v);
}

/* The shapes tried for an operation of rank r: empty, one element, odd,
 * and large (split across the threads; few long rows and many short).
 * 1e6 elements only in cpu_large_arrays: the interpreter is slow under
 * the sanitizers. */
typedef struct Shp {
    int rank;
    int64_t sh[3];
} Shp;

static const Shp shapes[] = {
    {1, {0}}, {1, {1}}, {1, {1001}}, {1, {100003}},
    {2, {0, 7}}, {2, {5, 0}}, {2, {1, 1}}, {2, {3, 40001}}, {2, {1001, 37}},
    {3, {2, 2, 40001}}, {3, {7, 0, 3}}, {3, {13, 11, 9}},
    /* GPU backends also: a group's width (256) and a tile's, +-1; rows of
     * a team's width and a few tiles; many rows of a short team */
    {1, {255}}, {1, {256}}, {1, {257}}, {1, {4097}}, {2, {3, 257}}, {2, {257, 9}}, {2, {2, 2049}},
};
#define NSHAPES_CPU 12
#define NSHAPES (gpu_tested() ? (int)(sizeof shapes / sizeof *shapes) : NSHAPES_CPU)

/* AXLE_TEST_SMALL=1 (the sanitizer build's OpenCL run, where the
 * interpreter and the device are both slow): shapes of at most 5000
 * elements only, which still split rows into several chunks on a GPU. */
static bool small_run(void)
{
    const char *e = getenv("AXLE_TEST_SMALL");
    return e && !strcmp(e, "1");
}
static bool skip_shape(int s)
{
    int64_t n = 1;
    for (int d = 0; d < shapes[s].rank; d++) n *= shapes[s].sh[d];
    return small_run() && n > 5000;
}

/* ================================================================ scalar functions */

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
static ax_exp f_transc(ax_exp x, void *env)
{
    ax_exp ax = ax_abs(x);
    /* terms of one sign (no cancellation): a relative tolerance fits */
    return ax_add(ax_exp_(ax_mul(x, ax_f32(0.01f))), ax_add(ax_log(ax_add(ax, ax_f32(1))), ax_add(ax_sin(x), ax_f32(2))));
}
static ax_exp f_transc64(ax_exp x, void *env)
{
    ax_exp ax = ax_abs(x);
    return ax_add(ax_pow(ax_add(ax, ax_f64(1)), ax_f64(0.5)),
                  ax_add(ax_atan2(ax, ax_f64(2)), ax_add(ax_tanh(ax), ax_add(ax_cos(x), ax_f64(1)))));
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

/* Non-commutative associative operators. */
static ax_exp op_aff(ax_exp x, ax_exp y, void *env)
{
    /* apply x then y: v -> a v + b */
    return ax_tuple2(ax_mul(ax_get(x, 0), ax_get(y, 0)), ax_add(ax_mul(ax_get(x, 1), ax_get(y, 0)), ax_get(y, 1)));
}
static ax_exp op_mat(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = ax_get(x, 0), b = ax_get(x, 1), c = ax_get(x, 2), d = ax_get(x, 3);
    ax_exp e = ax_get(y, 0), f = ax_get(y, 1), g = ax_get(y, 2), h = ax_get(y, 3);
    return ax_tuple4(ax_add(ax_mul(a, e), ax_mul(b, g)), ax_add(ax_mul(a, f), ax_mul(b, h)),
                     ax_add(ax_mul(c, e), ax_mul(d, g)), ax_add(ax_mul(c, f), ax_mul(d, h)));
}
static ax_exp op_pairsum(ax_exp x, ax_exp y, void *env)
{
    return ax_tuple2(ax_add(ax_get(x, 0), ax_get(y, 0)), ax_max(ax_get(y, 1), ax_get(x, 1)));
}

/* ================================================================ elementwise */

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

TEST(cpu_map_zipwith_all_shapes)
{
    for (int s = 0; s < NSHAPES; s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        char what[64];
        snprintf(what, sizeof what, "map/zipWith, shape %d", s);
        SAME(what, b_map_all, &e, 0);
    }
}

/* While loops run across lanes (cg_exp.c gen_while_lanes): a body that
 * swaps its components, two loops in a row, a loop in a condition, zero
 * trips, f64 and u8 states (16 and 128 lanes), in generate and in map. */
static ax_exp ws_cond(ax_exp v, void *env) { return ax_lt(ax_get(v, 2), ax_get(v, 3)); }
static ax_exp ws_body(ax_exp v, void *env)
{
    return ax_tuple4(ax_get(v, 1), ax_add(ax_get(v, 0), ax_get(v, 1)), ax_add(ax_get(v, 2), ax_i32(1)), ax_get(v, 3));
}
static ax_exp wd_cond(ax_exp v, void *env) { return ax_gt(ax_get(v, 0), ax_f64(1)); }
static ax_exp wd_body(ax_exp v, void *env) { return ax_tuple2(ax_mul(ax_get(v, 0), ax_f64(0.75)), ax_add(ax_get(v, 1), ax_u8(1))); }
static ax_exp wb_cond(ax_exp v, void *env) { return ax_ne(ax_get(v, 0), ax_u8(0)); }
static ax_exp wb_body(ax_exp v, void *env) { return ax_tuple2(ax_shr(ax_get(v, 0), ax_u8(1)), ax_add(ax_get(v, 1), ax_u8(1))); }
static ax_exp f_lanes(ax_exp x, void *env)
{
    ax_exp k = ax_cvt(ax_abs(x), AX_I32);
    ax_exp fib = ax_while(ws_cond, ws_body, NULL, ax_tuple4(ax_f32(0), ax_f32(1), ax_i32(0), ax_sub(k, ax_i32(7))));
    ax_exp d = ax_while(wd_cond, wd_body, NULL, ax_tuple2(ax_mul(ax_cvt(x, AX_F64), ax_cvt(ax_get(fib, 1), AX_F64)), ax_u8(0)));
    ax_exp b = ax_while(wb_cond, wb_body, NULL, ax_tuple2(ax_cvt(k, AX_U8), ax_u8(0)));
    /* (a loop in a branch of a condition keeps a kernel out of lane blocks) */
    ax_exp pick = ax_mul(ax_cond(ax_gt(ax_get(b, 1), ax_u8(3)), ax_f64(1), ax_f64(-1)), ax_get(d, 0));
    return ax_tuple3(ax_get(fib, 0), pick, ax_add(ax_get(d, 1), ax_get(b, 1)));
}
static ax_exp g_lanes(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    return f_lanes(ax_cvt(ax_sub(ax_band(i, ax_i64(63)), ax_i64(30)), AX_F32), env);
}
static ax_acc b_lanes(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    if (v->which) return ax_map(f_lanes, NULL, input(cx, AX_F32, v->rank, v->sh, 13, 40));
    ax_exp sh = ax_ix1(ax_i64(v->sh[0]));
    if (v->rank == 2) sh = ax_ix2(ax_i64(v->sh[0]), ax_i64(v->sh[1]));
    if (v->rank == 3) sh = ax_ix3(ax_i64(v->sh[0]), ax_i64(v->sh[1]), ax_i64(v->sh[2]));
    return ax_generate(cx, sh, g_lanes, NULL);
}
static ax_acc b_lanes_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_lanes, 2, NULL); }

TEST(cpu_while_loops_across_lanes)
{
    for (int s = 0; s < NSHAPES; s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        SAME("while across lanes", b_lanes_all, &e, 0);
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

TEST(cpu_unrolled_steps_as_loops)
{
    for (int s = 0; s < NSHAPES; s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        SAME("unrolled steps", b_unrolled_all, &e, 0);
    }
    /* a kernel with runs is compiled for 256-bit vectors (cg_exp.c
     * gen_run: measured faster), a kernel of while lanes is not */
    if (gpu_tested()) return;
    ax_ctx *cd = ctx_on(AX_BACKEND_CPU, false);
    REQUIRE(cd);
    Env e = {1, SH(1000), 0};
    char *c = ax_dump(cd, b_unrolled(cd, &e), "c", false);
    REQUIRE(c);
    CHECKF(strstr(c, "__attribute__((target(\"prefer-vector-width=256\")))\nvoid axk_") != NULL,
           "no 256-bit kernel in a unit with runs");
    free(c);
    c = ax_dump(cd, b_lanes(cd, &e), "c", false);
    REQUIRE(c);
    CHECK(strstr(c, "prefer-vector-width") == NULL);
    free(c);
    ax_ctx_free(cd);
}

static ax_acc b_transc(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    if (v->which) return ax_map(f_transc64, NULL, input(cx, AX_F64, v->rank, v->sh, 11, 20));
    return ax_map(f_transc, NULL, input(cx, AX_F32, v->rank, v->sh, 12, 20));
}

TEST(cpu_vector_maths_within_tolerance)
{
    for (int w = 0; w < 2; w++) {
        Env e = {1, SH(100003), w};
        SAME("exp/log/sin (vector maths)", b_transc, &e, w ? 1e-12 : 1e-5);
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

TEST(cpu_zipwith_intersection)
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

TEST(cpu_generate_and_shape_operations)
{
    for (int s = 0; s < NSHAPES; s++) {
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

/* ================================================================ reductions */

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
    return fold1 && v->sh[v->rank - 1] == 0 && size_of(v->rank - 1, v->sh) > 0;
}
static ax_acc b_fold_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_fold, 11, fold1_empty); }

TEST(cpu_folds_all_shapes_and_operators)
{
    for (int s = 0; s < NSHAPES; s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        char what[64];
        snprintf(what, sizeof what, "folds, shape %d", s);
        SAME(what, b_fold_all, &e, 1e-3);   /* only the f32 sum reassociates */
    }
}

TEST(cpu_fold1_of_empty_rows_is_a_shape_error)
{
    ax_ctx *cx = ctx_on(tested(), false);
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

TEST(cpu_segmented_folds)
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

TEST(cpu_fold1_seg)
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
    ax_acc xs, ys;
} Pairs;

static ax_exp pair_elt(ax_exp ix, void *env)
{
    const Pairs *p = env;
    ax_exp i = ax_index_get(ix, 0), j = ax_index_get(ix, 1);
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
    ax_acc g = ax_generate(cx, ax_ix2(ax_i64(p.rows), ax_i64(p.n)), pair_elt, &p);   /* called here */
    switch (p.which) {
    case 0: case 5: return ax_fold(ax_fn_add, NULL, ax_f32(0.25f), g);
    case 1: return ax_fold(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), g);
    case 2: return ax_fold(op_sum3, NULL, ax_tuple3(ax_f32(0), ax_f32(0), ax_f32(0)), g);
    case 3: return ax_map(op_twice_less1, NULL, ax_fold(ax_fn_max, NULL, ax_f64(-1e300), g));
    default: return ax_fold(ax_fn_snd, NULL, ax_i64(-1), g);
    }
}

static ax_acc b_pairs_all(ax_ctx *cx, const void *e)
{
    ax_acc v[5];
    for (int w = 0; w < 5; w++) {
        Pairs p = *(const Pairs *)e;
        p.which = w;
        v[w] = b_pairs(cx, &p);
    }
    return ax_atuple(5, v);
}

TEST(cpu_folds_across_rows)
{
    /* rows x n; exact: every range of rows (4 threads) holds a block of
       16 (the f32 sums, reassociated otherwise, then match bit for bit) */
    const struct { int64_t rows, n; bool exact; } sh[] = {
        {0, 5, true}, {5, 0, true}, {1, 1, true}, {15, 3, false}, {16, 7, true}, {17, 1, true},
        {100, 1000, false}, {1001, 37, true}, {4096, 64, true},
    };
    for (int k = 0; k < (int)(sizeof sh / sizeof *sh); k++) {
        if (small_run() && sh[k].rows * sh[k].n > 5000) continue;
        Pairs p = {sh[k].rows, sh[k].n, 0, NULL, NULL};
        char what[64];
        snprintf(what, sizeof what, "folds across rows, %lld x %lld", (long long)p.rows, (long long)p.n);
        SAME(what, b_pairs_all, &p, sh[k].exact && !gpu_tested() ? 0 : 1e-5);
    }
    /* a read out of bounds in the element (ys at j + 1): the fault at the
       lowest position, as the interpreter's */
    ax_ctx *ci = ctx_on(AX_BACKEND_INTERP, false), *cc = ctx_on(tested(), false);
    Pairs p = {1001, 37, 5, NULL, NULL};
    CHECK(ax_run(ci, b_pairs(ci, &p)) == NULL);
    CHECK(ax_run(cc, b_pairs(cc, &p)) == NULL);
    CHECKF(ax_status_of(cc) == AX_ERR_INDEX, "%d %s", ax_status_of(cc), ax_error(cc));
    CHECKF(!strcmp(ax_error(ci), ax_error(cc)), "\"%s\" vs \"%s\"", ax_error(ci), ax_error(cc));
    ax_ctx_free(ci);
    ax_ctx_free(cc);
}

static ax_acc b_scan(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int r = v->rank;
    const int64_t *sh = v->sh;
    int op = v->which % 6, kind = v->which / 6;
    ax_acc a;
    switch (kind) {
    case 0: a = input(cx, AX_I32, r, sh, 40 + op, 1000); break;            /* + on i32 */
    case 1: a = input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_I32}, r, sh, 50 + op, 3); break;  /* affine */
    case 2: a = input(cx, AX_F64, r, sh, 60 + op, 1000); break;            /* fst */
    default: a = ax_map(ax_fn_abs, NULL, input(cx, AX_F32, r, sh, 70 + op, 100)); break;  /* + on f32 */
    }
    ax_fn2 f = kind == 0 || kind == 3 ? ax_fn_add : kind == 1 ? op_aff : ax_fn_fst;
    ax_exp z = kind == 0 ? ax_i32(-3) : kind == 1 ? ax_tuple2(ax_i32(2), ax_i32(1)) : kind == 2 ? ax_f64(0.5) : ax_f32(1);
    switch (op) {
    case 0: return ax_scanl(f, NULL, z, a);
    case 1: return ax_scanl1(f, NULL, a);
    case 2: return ax_scanr(f, NULL, z, a);
    case 3: return ax_scanr1(f, NULL, a);
    case 4: return ax_scanl_ex(f, NULL, z, a);
    default: return ax_scanr_ex(f, NULL, z, a);
    }
}

/* the six scans of one operator kind (w / 6) */
static ax_acc b_scan_kind(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_acc r[6];
    for (int op = 0; op < 6; op++) {
        Env f = *v;
        f.which = v->which * 6 + op;
        r[op] = b_scan(cx, &f);
    }
    return ax_atuple(6, r);
}

TEST(cpu_scans_all_variants)
{
    for (int kind = 0; kind < 4; kind++)
        for (int s = 0; s < NSHAPES; s++) {
        if (skip_shape(s)) continue;
            Env e = {shapes[s].rank, shapes[s].sh, kind};
            char what[64];
            snprintf(what, sizeof what, "scans of kind %d, shape %d", kind, s);
            SAME(what, b_scan_kind, &e, kind == 3 ? 1e-3 : 0);
        }
}

/* Scans whose last tile leaves threads of the single-pass scan without an
 * element (gpu_skel.c emit_scan1: a tile is GPU_WG threads of K
 * elements): elements of 4, 8, 16 and 24 bytes (K = 8, 4, 2, 1), with fst
 * and snd (which reduce the threads' loops to copies) and + on i32, all
 * six scans.  PoCL's compiler once let every thread follow thread 0 into
 * its loop over its own elements there (a thread with none then wrote on
 * past the tile until it faulted). */
static const ax_scalar tail_ss[4][3] = {{AX_I32}, {AX_F64}, {AX_I64, AX_I64}, {AX_F64, AX_F64, AX_F64}};
static const int tail_n[4] = {1, 1, 2, 3};

static ax_acc b_scan_tail(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int ty = v->which / 3, o = v->which % 3;
    ax_acc r[6];
    for (int op = 0; op < 6; op++) {
        ax_acc a = input_n(cx, tail_n[ty], tail_ss[ty], v->rank, v->sh, 110 + (uint64_t)(v->which * 6 + op), 1000);
        ax_exp zc[3] = {ax_f64(0.5), ax_f64(-2), ax_f64(7)};
        ax_exp z = ty == 0 ? ax_i32(-3) : ty == 1 ? zc[0] : ty == 2 ? ax_tuple2(ax_i64(4), ax_i64(-5)) : ax_tuple(3, zc);
        ax_fn2 f = o == 0 ? ax_fn_fst : o == 1 ? ax_fn_snd : ax_fn_add;
        switch (op) {
        case 0: r[op] = ax_scanl(f, NULL, z, a); break;
        case 1: r[op] = ax_scanl1(f, NULL, a); break;
        case 2: r[op] = ax_scanr(f, NULL, z, a); break;
        case 3: r[op] = ax_scanr1(f, NULL, a); break;
        case 4: r[op] = ax_scanl_ex(f, NULL, z, a); break;
        default: r[op] = ax_scanr_ex(f, NULL, z, a); break;
        }
    }
    return ax_atuple(6, r);
}

TEST(cpu_scans_partial_tiles)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, false);
    CHECK(cx != NULL);
    for (int ty = 0; cx && ty < 4; ty++) {
        const ax_type *ts[3];
        for (int k = 0; k < tail_n[ty]; k++) ts[k] = ax_type_scalar(tail_ss[ty][k]);
        const ax_type *t = tail_n[ty] == 1 ? ts[0] : ax_type_tuple(cx, tail_n[ty], ts);
        int64_t K = gpu_scan_items(t), T = GPU_WG * K;
        /* one thread with elements, two, all but the last, a tile and one
         * more, two tiles and two threads; rows of those */
        const int64_t n[] = {1, 2, K + 1, T - 1, T + 1, 2 * T + K + 1};
        for (int s = 0; s < 8; s++) {
            int64_t sh[2] = {s < 6 ? n[s] : 3, s == 6 ? K + 1 : T + 1};
            Env e = {s < 6 ? 1 : 2, sh, 0};
            for (int o = 0; o < 3; o++) {
                if (o == 2 && ty > 0) continue;   /* + on i32 only: exact */
                e.which = ty * 3 + o;
                char what[96];
                snprintf(what, sizeof what, "scans of %d-byte elements (K = %lld), op %d, shape %d", ty == 0 ? 4 : ty * 8,
                         (long long)K, o, s);
                SAME(what, b_scan_tail, &e, 0);
            }
        }
    }
    ax_ctx_free(cx);
}

/* ================================================================ permute */

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

TEST(cpu_permute_collisions_under_concurrency)
{
    const int64_t sizes[] = {0, 1, 1001, 100003};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        char what[64];
        snprintf(what, sizeof what, "permute, size %lld", (long long)sizes[k]);
        SAME(what, b_perm_all, &e, 1e-9);   /* float sums in any order */
    }
}

/* ================================================================ stencils */

static ax_exp s_sum(const ax_exp *xs, void *env)
{
    intptr_t n = (intptr_t)env;
    ax_exp s = xs[0];
    for (intptr_t k = 1; k < n; k++) s = ax_add(ax_mul(s, ax_i32(3)), xs[k]);
    return s;
}
static ax_exp s_tup(const ax_exp *xs, void *env)
{
    /* 3x3 of (f32, i16) */
    ax_exp a = ax_get(xs[0], 0), b = ax_cvt(ax_get(xs[4], 1), AX_F32);
    for (int k = 1; k < 9; k++) a = ax_add(a, ax_mul(ax_get(xs[k], 0), ax_f32((float)k)));
    return ax_tuple2(ax_add(a, b), ax_max(ax_get(xs[8], 1), ax_get(xs[2], 1)));
}
static ax_exp s_two(const ax_exp *xs, void *env)
{
    /* stencil2: 3 of a (i32), then 3x... of b: env = count of a's */
    intptr_t na = (intptr_t)env;
    ax_exp s = ax_i32(0);
    for (intptr_t k = 0; k < na; k++) s = ax_add(ax_mul(s, ax_i32(5)), xs[k]);
    return ax_sub(s, ax_cvt(xs[na], AX_I32));
}

static ax_boundary bnd(ax_ctx *cx, int k, ax_exp c)
{
    switch (k) {
    case 0: return ax_clamp();
    case 1: return ax_mirror();
    case 2: return ax_wrap();
    default: return ax_constant(c);
    }
}

static ax_acc b_sten(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int b = v->which % 4, kind = v->which / 4;
    int r = v->rank;
    if (kind == 0) {
        int size[3] = {3, 5, 3};
        int sz[3], n = 1;
        for (int d = 0; d < r; d++) n *= (sz[d] = size[3 - r + d]);
        return ax_stencil(s_sum, (void *)(intptr_t)n, sz, bnd(cx, b, ax_i32(-7)), input(cx, AX_I32, r, v->sh, 100, 50));
    }
    if (kind == 1 && r == 2) {
        return ax_stencil(s_tup, NULL, (const int[]){3, 3}, bnd(cx, b, ax_tuple2(ax_f32(0.5f), ax_i16(9))),
                          input_n(cx, 2, (const ax_scalar[]){AX_F32, AX_I16}, 2, v->sh, 101, 50));
    }
    /* stencil2 over inputs of different shapes */
    int64_t sh2[3];
    for (int d = 0; d < r; d++) sh2[d] = v->sh[d] + (d == 0 ? 2 : 0);
    int za[3] = {1, 1, 3}, zb[3] = {1, 3, 1};
    int na = 1;
    for (int d = 0; d < r; d++) na *= za[3 - r + d];
    return ax_stencil2(s_two, (void *)(intptr_t)na, za + 3 - r, bnd(cx, b, ax_i32(4)), input(cx, AX_I32, r, v->sh, 102, 9),
                       zb + 3 - r, bnd(cx, 3 - b, ax_u8(200)), input(cx, AX_U8, r, sh2, 103, 100));
}

static bool sten_skip(const void *env, int w) { return w / 4 == 1 && ((const Env *)env)->rank != 2; }
static ax_acc b_sten_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_sten, 12, sten_skip); }

TEST(cpu_stencils_every_boundary)
{
    static const Shp sten_shapes[] = {
        {1, {1}}, {1, {2}}, {1, {5}}, {1, {100003}}, {2, {1, 1}}, {2, {2, 3}}, {2, {17, 9}},
        {2, {300, 200}}, {3, {1, 2, 1}}, {3, {6, 7, 8}}, {1, {0}}, {2, {0, 4}},
    };
    for (int s = 0; s < (int)(sizeof sten_shapes / sizeof *sten_shapes); s++) {
        Env e = {sten_shapes[s].rank, sten_shapes[s].sh, 0};
        char what[64];
        snprintf(what, sizeof what, "stencils, shape %d", s);
        SAME(what, b_sten_all, &e, 0);
    }
}

/* ================================================================ filter, control */

static ax_exp k_pos(ax_exp x, void *env) { return ax_gt(ax_get(x, 0), ax_i32(0)); }

static ax_acc b_filter(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    return ax_filter(k_pos, NULL, input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_F64}, v->rank, v->sh, 110, 5));
}

TEST(cpu_filter)
{
    for (int s = 0; s < NSHAPES; s++) {
        if (skip_shape(s)) continue;
        Env e = {shapes[s].rank, shapes[s].sh, 0};
        SAME("filter", b_filter, &e, 0);
    }
}

/* The indices (i32) of the elements of a that pass, as Canny selects its
 * strong edges: a filter over a generate of the indices, whose predicate
 * reads a at the index.  The CPU backend proves the read in bounds when
 * the indices' extent fits a and i32 (an unchecked, vectorised loop) and
 * otherwise runs the checked copy; Env.which is a's size minus the
 * number of indices (negative: a fault at the first index past a). */
static ax_exp ix_i32(ax_exp ix, void *env) { (void)env; return ax_cvt(ax_index_get(ix, 0), AX_I32); }
static ax_exp passes_at(ax_exp i, void *env) { return ax_gt(ax_at_linear((ax_acc)env, ax_cvt(i, AX_I64)), ax_i32(1)); }

static ax_acc b_filter_indices(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int64_t m = v->sh[0] + v->which;
    ax_acc a = input(cx, AX_I32, 1, &m, 150, 4);
    return ax_filter(passes_at, a, ax_generate(cx, ax_ix1(ax_i64(v->sh[0])), ix_i32, NULL));
}

TEST(cpu_filter_over_indices)
{
    const int64_t sizes[] = {0, 1, 1001, 300000};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        SAME("filter over the indices of an array", b_filter_indices, &e, 0);
        e.which = 7;
        SAME("filter over some indices of an array", b_filter_indices, &e, 0);
    }
}

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

TEST(cpu_acond_awhile)
{
    const int64_t sizes[] = {0, 1, 1001, 100000};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        SAME("acond/awhile", b_control, &e, 0);
    }
}

/* Scalar code reading arrays (ax_at, ax_at_linear, ax_shape): free array
 * variables in the kernels' argument tables. */
static ax_exp g_at(ax_exp ix, void *env)
{
    ax_acc a = env;
    ax_exp n = ax_size(a), i = ax_index_get(ix, 0);
    ax_exp j = ax_sub(ax_sub(n, ax_i64(1)), i);
    ax_exp s = ax_shape(a);
    return ax_add(ax_at_linear(a, j), ax_cvt(ax_index_get(s, 0), AX_F32));
}

static ax_acc b_free(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_acc a = ax_map(f_poly, NULL, input(cx, AX_F32, 1, v->sh, 130, 9));
    return ax_generate(cx, ax_shape(a), g_at, a);
}

TEST(cpu_scalar_code_reads_arrays)
{
    const int64_t sizes[] = {0, 1, 1001, 300000};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        SAME("ax_at_linear in generate", b_free, &e, 0);
    }
}

/* ================================================================ faults */

static ax_exp p_off(ax_exp ix, void *env) { return ax_ix1(ax_add(ax_index_get(ix, 0), ax_i64((intptr_t)env))); }
static ax_exp g_at_bad(ax_exp ix, void *env)
{
    return ax_at((ax_acc)env, ax_ix1(ax_mul(ax_index_get(ix, 0), ax_i64(2))));
}
static ax_exp f_div0(ax_exp x, void *env) { return ax_quot(ax_i32(100), x); }

typedef struct Fault {
    int which;
    ax_status want;
} Fault;

static ax_acc b_fault(ax_ctx *cx, const void *e)
{
    const Fault *f = e;
    ax_acc a = input(cx, AX_I32, 1, SH(100000), 140, 5);
    switch (f->which) {
    case 0: return ax_backpermute(ax_ix1(ax_i64(100000)), p_off, (void *)(intptr_t)1, a);
    case 1: return ax_generate(cx, ax_ix1(ax_i64(60000)), g_at_bad, a);
    case 2: return ax_permute(ax_fn_add, NULL, input(cx, AX_I32, 1, SH(50000), 141, 0), p_off, (void *)(intptr_t)3, a);
    case 3: return ax_map(f_div0, NULL, ax_map(ax_fn_abs, NULL, a));
    case 4: {
        /* the filter above, over more indices than a has elements */
        Env v = {1, SH(100000), -40000};
        return b_filter_indices(cx, &v);
    }
    default: return NULL;
    }
}

TEST(cpu_safe_mode_faults_match_the_interpreter)
{
    const Fault fs[] = {{0, AX_ERR_INDEX}, {1, AX_ERR_INDEX}, {2, AX_ERR_INDEX}, {3, AX_ERR_DIVZERO}, {4, AX_ERR_INDEX}};
    for (int k = 0; k < 5; k++) {
        ax_ctx *ci = ctx_on(AX_BACKEND_INTERP, false), *cc = ctx_on(tested(), false);
        CHECK(ax_run(ci, b_fault(ci, &fs[k])) == NULL);
        CHECK(ax_run(cc, b_fault(cc, &fs[k])) == NULL);
        CHECKF(ax_status_of(cc) == fs[k].want, "fault %d: %d %s", k, ax_status_of(cc), ax_error(cc));
        CHECK(ax_status_of(ci) == ax_status_of(cc));
        /* the lowest faulting position is reported, as the interpreter's
         * first one */
        CHECKF(!strcmp(ax_error(ci), ax_error(cc)), "fault %d: \"%s\" vs \"%s\"", k, ax_error(ci), ax_error(cc));
        /* the context is usable afterwards */
        ax_array *r = RUN(cc, ax_fold_all(ax_fn_add, NULL, ax_i32(0), input(cc, AX_I32, 1, SH(10), 1, 0)));
        ax_array_release(r);
        ax_ctx_free(ci);
        ax_ctx_free(cc);
    }
}

TEST(cpu_unsafe_mode)
{
    ax_ctx *cx = ctx_on(tested(), true);
    ax_ctx *ci = ctx_on(AX_BACKEND_INTERP, true);
    /* out-of-bounds permute targets are dropped in unsafe mode */
    ax_array *r = RUN(cx, b_fault(cx, &(Fault){2, AX_OK}));
    ax_array *q = RUN(ci, b_fault(ci, &(Fault){2, AX_OK}));
    if (r && q) CHECK(equal("unsafe permute", r, q, 0));
    ax_array_release(r);
    ax_array_release(q);
    /* in-bounds indexing works without checks */
    r = RUN(cx, ax_backpermute(ax_ix1(ax_i64(99990)), p_off, (void *)(intptr_t)10, input(cx, AX_I32, 1, SH(100000), 5, 9)));
    q = RUN(ci, ax_backpermute(ax_ix1(ax_i64(99990)), p_off, (void *)(intptr_t)10, input(ci, AX_I32, 1, SH(100000), 5, 9)));
    if (r && q) CHECK(equal("unsafe backpermute", r, q, 0));
    ax_array_release(r);
    ax_array_release(q);
    /* division by zero is still an error */
    CHECK(ax_run(cx, b_fault(cx, &(Fault){3, AX_OK})) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_DIVZERO);
    /* and the unsafe text has no bounds checks (the safe one has) */
    for (int safe = 0; safe < 2; safe++) {
        ax_ctx *cd = ctx_on(tested(), !safe);
        char *c = ax_dump(cd, b_fault(cd, &(Fault){0, AX_OK}), gpu_tested() ? "opencl" : "c", false);
        REQUIRE(c);
        /* AX_ERR_INDEX (at SITE_BACKPERMUTE on the CPU) */
        CHECK(!strstr(c, gpu_tested() ? "ax_fault(err_, 2)" : "ax_fail(c, 2, 3") == !safe);
        free(c);
        ax_ctx_free(cd);
    }
    ax_ctx_free(cx);
    ax_ctx_free(ci);
}

TEST(cpu_large_arrays)
{
    if (small_run()) {
        printf("skip cpu_large_arrays: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    Env e = {1, &n, 0};
    SAME("map 1e6", b_map, &e, 0);
    e.which = 2;
    SAME("fold (+) f32 1e6", b_fold, &e, 1e-3);
    e.which = 3;
    SAME("fold affine 1e6", b_fold, &e, 0);
    e.which = 1;
    SAME("scanl1 (+) i32 1e6", b_scan, &e, 0);
    e.which = 6 + 5;
    SAME("scanr' affine 1e6", b_scan, &e, 0);
    e.which = 0;
    SAME("permute histogram i32 1e6", b_perm, &e, 0);
    e.which = 1;
    SAME("permute histogram f64 1e6", b_perm, &e, 1e-9);
    e.which = 4;
    SAME("permute locks 1e6", b_perm, &e, 0);
    SAME("filter 1e6", b_filter, &e, 0);
    const int64_t sq[2] = {1000, 1000};
    Env s2 = {2, sq, 1};
    SAME("stencil 1000x1000 mirror", b_sten, &s2, 0);
}

/* ================================================================ fused operands */

/* Core IR built by hand (independent of the fusion pass): consumers whose
 * operand is DELAYED, with index and linear-index forms reading a let-bound
 * array through ax_at / ax_at_linear, and a TRANSFORM.  Run on both
 * backends' entry points directly (the verifier is not involved). */
typedef struct Hand {
    Program *p;
    ax_ctx *cx;
    const Type *f32, *arr1, *ix1;
    int a0;                   /* the array variable */
} Hand;

static Node *hn(Hand *h, Op op, int n, const Type *t)
{
    Node *x = node_new(&h->p->arena, op, n, t);
    if (x) x->cx = h->cx;
    return x;
}

static Node *hvar(Hand *h, const Type *t, int *id)
{
    Node *v = hn(h, OP_VAR, 0, t);
    *id = program_fresh_var(h->p, t);
    v->id = *id;
    return v;
}

static Node *havar(Hand *h)
{
    Node *v = hn(h, OP_AVAR, 0, h->arr1);
    v->id = h->a0;
    return v;
}

static Node *hconst(Hand *h, float c)
{
    Node *k = hn(h, OP_CONST, 0, h->f32);
    k->c.u = 0;
    k->c.f32 = c;
    return k;
}

static Node *hprim(Hand *h, Prim p, const Type *t, Node *a, Node *b)
{
    Node *x = hn(h, OP_PRIM, b ? 2 : 1, t);
    x->a = p;
    x->kid[0] = a;
    if (b) x->kid[1] = b;
    return x;
}

/* \v -> body, one parameter */
static Node *hlam(Hand *h, Node *param, Node *body)
{
    Node *l = hn(h, OP_LAM, 1, body->type);
    l->nparam = 1;
    l->param = arena_alloc(&h->p->arena, sizeof(Node *));
    l->param[0] = param;
    l->kid[0] = body;
    return l;
}

static Node *hlam2(Hand *h, Prim p)
{
    int i, j;
    Node *x = hvar(h, h->f32, &i), *y = hvar(h, h->f32, &j);
    Node *l = hn(h, OP_LAM, 1, h->f32);
    l->nparam = 2;
    l->param = arena_alloc(&h->p->arena, 2 * sizeof(Node *));
    l->param[0] = x;
    l->param[1] = y;
    l->kid[0] = hprim(h, p, h->f32, x, y);
    return l;
}

/* delayed (map (\x -> x * 2 + 1) a0): index form through ax_at, linear
 * form through ax_at_linear */
static Node *hdelayed(Hand *h)
{
    int i, j;
    Node *d = hn(h, OP_DELAYED, 3, h->arr1);
    Node *sh = hn(h, OP_SHAPE, 1, h->ix1);
    sh->kid[0] = havar(h);
    Node *ix = hvar(h, h->ix1, &i), *li = hvar(h, ty_i64(), &j);
    Node *at = hn(h, OP_INDEX, 2, h->f32), *al = hn(h, OP_LINDEX, 2, h->f32);
    at->kid[0] = havar(h);
    at->kid[1] = ix;
    al->kid[0] = havar(h);
    al->kid[1] = li;
    d->kid[0] = sh;
    d->kid[1] = hlam(h, ix, hprim(h, P_ADD, h->f32, hprim(h, P_MUL, h->f32, at, hconst(h, 2)), hconst(h, 1)));
    d->kid[2] = hlam(h, li, hprim(h, P_ADD, h->f32, hprim(h, P_MUL, h->f32, al, hconst(h, 2)), hconst(h, 1)));
    return d;
}

/* The consumer `which` of a delayed operand. */
static Node *hconsumer(Hand *h, int which, int64_t n)
{
    Node *x = NULL;
    const Type *arr0 = ty_array(&h->p->arena, h->f32, 0);
    switch (which) {
    case 0:   /* fold (+) 0 */
        x = hn(h, OP_FOLD, 3, arr0);
        x->kid[0] = hlam2(h, P_ADD);
        x->kid[1] = hconst(h, 0.5f);
        x->kid[2] = hdelayed(h);
        break;
    case 1:   /* scanl1 max */
        x = hn(h, OP_SCANL1, 2, h->arr1);
        x->kid[0] = hlam2(h, P_MAX);
        x->kid[1] = hdelayed(h);
        break;
    case 2: { /* map negate: a linear producer */
        int i;
        Node *v = hvar(h, h->f32, &i);
        x = hn(h, OP_MAP, 2, h->arr1);
        x->kid[0] = hlam(h, v, hprim(h, P_NEG, h->f32, v, NULL));
        x->kid[1] = hdelayed(h);
        break;
    }
    case 3: { /* backpermute reverse: the index form, checked */
        int i;
        Node *ix = hvar(h, h->ix1, &i);
        Node *g = hn(h, OP_IXGET, 1, ty_i64());
        g->kid[0] = ix;
        Node *k = hn(h, OP_CONST, 0, ty_i64());
        k->c.i = n - 1;
        Node *sub = hprim(h, P_SUB, ty_i64(), k, g);
        Node *cons = hn(h, OP_IXCONS, 1, h->ix1);
        cons->kid[0] = sub;
        Node *sh = hn(h, OP_SHAPE, 1, h->ix1);
        sh->kid[0] = havar(h);
        x = hn(h, OP_BACKPERMUTE, 3, h->arr1);
        x->kid[0] = sh;
        x->kid[1] = hlam(h, ix, cons);
        x->kid[2] = hdelayed(h);
        break;
    }
    case 4: { /* stencil 3, clamp: the index form at mapped coordinates */
        Stencil *st = arena_alloc(&h->p->arena, sizeof *st);
        st->rank = 1;
        st->ninputs = 1;
        st->size[0][0] = 3;
        st->bound[0] = AX_MIRROR;
        st->constkid[0] = st->constkid[1] = -1;
        int i[3];
        Node *ps[3];
        for (int k = 0; k < 3; k++) ps[k] = hvar(h, h->f32, &i[k]);
        Node *l = hn(h, OP_LAM, 1, h->f32);
        l->nparam = 3;
        l->param = arena_alloc(&h->p->arena, 3 * sizeof(Node *));
        for (int k = 0; k < 3; k++) l->param[k] = ps[k];
        l->kid[0] = hprim(h, P_SUB, h->f32, hprim(h, P_ADD, h->f32, ps[0], ps[2]), ps[1]);
        x = hn(h, OP_STENCIL, 2, h->arr1);
        x->sten = st;
        x->kid[0] = l;
        x->kid[1] = hdelayed(h);
        break;
    }
    case 5: { /* transform: reverse, then * 3 */
        int i, j;
        Node *ix = hvar(h, h->ix1, &i), *v = hvar(h, h->f32, &j);
        Node *g = hn(h, OP_IXGET, 1, ty_i64());
        g->kid[0] = ix;
        Node *k = hn(h, OP_CONST, 0, ty_i64());
        k->c.i = n - 1;
        Node *cons = hn(h, OP_IXCONS, 1, h->ix1);
        cons->kid[0] = hprim(h, P_SUB, ty_i64(), k, g);
        Node *sh = hn(h, OP_SHAPE, 1, h->ix1);
        sh->kid[0] = havar(h);
        x = hn(h, OP_TRANSFORM, 4, h->arr1);
        x->kid[0] = sh;
        x->kid[1] = hlam(h, ix, cons);
        x->kid[2] = hlam(h, v, hprim(h, P_MUL, h->f32, v, hconst(h, 3)));
        x->kid[3] = havar(h);
        break;
    }
    default:
        break;
    }
    return x;
}

/* let a0 = use data in consumer */
static Program *hprogram(ax_ctx *cx, int which, int64_t n, ax_array *data)
{
    Program *p = calloc(1, sizeof *p);
    arena_init(&p->arena);
    Hand h = {p, cx, ty_scalar(AX_F32), NULL, NULL, 0};
    h.arr1 = ty_array(&p->arena, h.f32, 1);
    h.ix1 = ty_index(&p->arena, 1);
    h.a0 = program_fresh_var(p, h.arr1);
    Node *use = hn(&h, OP_USE, 0, h.arr1);
    use->arr = data;
    Node *body = hconsumer(&h, which, n);
    Node *let = hn(&h, OP_ALET, 2, body->type);
    let->id = h.a0;
    let->kid[0] = use;
    let->kid[1] = body;
    p->root = let;
    return p;
}

/* Whether a unit of the CPU backend's C (its headings: "unit 1 of 2,
 * map: operations 2, 5") runs operation k's code. */
static bool unit_runs(const char *c, int k)
{
    for (const char *h = c; (h = strstr(h, "---- unit ")); h++) {
        const char *ops = strstr(h, ": operations"), *end = strstr(h, "*/");
        if (!ops || !end || ops > end) continue;
        for (const char *p = ops + 12; p < end;) {
            char *q;
            long v = strtol(p, &q, 10);
            if (q == p) break;
            if (v == k) return true;
            p = q + (*q == ',');
        }
    }
    return false;
}

TEST(cpu_delayed_operands_built_by_hand)
{
    const int64_t sizes[] = {1, 5, 1001, 100003};
    for (int k = 0; k < 4; k++)
        for (int which = 0; which < 6; which++) {
            int64_t n = sizes[k];
            ax_ctx *cx = ctx_on(tested(), false);
            float *v = malloc(sizeof *v * (size_t)n);
            fill(v, AX_F32, n, 500 + (uint64_t)which, 50);
            ax_array *data = ax_array_from(cx, AX_F32, 1, &n, v);
            free(v);
            Program *p = hprogram(cx, which, n, data);
            ax_array *ri = NULL, *rc = NULL;
            int ni = interp_run(cx, p, &ri, 1);
            void *st = NULL;
            const Backend *be = tested_backend();
            int rcp = be->prepare(cx, p, &st);
            int nc = rcp == 0 ? be->run(cx, p, st, &rc, 1) : -1;
            CHECKF(ni == 1 && nc == 1, "consumer %d size %lld: %d %d: %s", which, (long long)n, ni, nc, ax_error(cx));
            if (ni == 1 && nc == 1) {
                char what[64];
                snprintf(what, sizeof what, "delayed consumer %d, size %lld", which, (long long)n);
                CHECK(equal(what, ri, rc, which == 0 ? 1e-4 : 0));
            }
            if (rcp == 0) {
                char *c = gpu_tested() ? gpu_text(cx, p, GPU_OPENCL) : cpu_c_text(cx, p);
                /* the delayed operand is read inline, not materialised */
                CHECK(c && (gpu_tested() ? strstr(c, "axk_2_") && !strstr(c, "axk_3_")
                                         : unit_runs(c, 2) && !unit_runs(c, 3)));
                free(c);
            }
            if (st) be->release(st);
            ax_array_release(ri);
            ax_array_release(rc);
            ax_array_release(data);
            program_free(p);
            ax_ctx_free(cx);
        }
}

/* ================================================================ the compiler */

TEST(cpu_failing_compiler_is_a_compile_error)
{
    if (cpu_only("cpu_failing_compiler_is_a_compile_error")) return;
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_CPU;
    o.cc = "/nonexistent/cc";
    ax_ctx *cx = ax_ctx_new(&o);
    ax_acc a = ax_map(f_poly, NULL, input(cx, AX_F32, 1, SH(10), 1, 9));
    CHECK(ax_run(cx, a) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_COMPILE);
    CHECKF(strstr(ax_error(cx), "/nonexistent/cc") != NULL, "%s", ax_error(cx));
    /* the interpreter stays selectable in the same context */
    cx->opt.backend = AX_BACKEND_INTERP;
    ax_array *r = RUN(cx, a);
    CHECK(r && ax_array_size(r) == 10);
    ax_array_release(r);
    ax_ctx_free(cx);

    /* a compiler that runs and fails: its message is shown */
    o.cc = "false";
    cx = ax_ctx_new(&o);
    CHECK(ax_run(cx, ax_map(f_poly, NULL, input(cx, AX_F32, 1, SH(10), 1, 9))) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_COMPILE);
    CHECK(strstr(ax_error(cx), "'false'") != NULL);
    ax_ctx_free(cx);

    /* the default backend falls back to the interpreter without a compiler */
    o.backend = AX_BACKEND_DEFAULT;
    o.cc = "/nonexistent/cc";
    cx = ax_ctx_new(&o);
    ax_program *pr = ax_compile(cx, ax_map(f_poly, NULL, input(cx, AX_F32, 1, SH(10), 1, 9)));
    REQUIRE(pr);
    CHECK(!strcmp(ax_program_stats(pr)->backend, "interp"));
    ax_program_free(pr);
    ax_ctx_free(cx);
}

static ax_acc b_dotp(ax_ctx *cx, int64_t n)
{
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_zip_with(ax_fn_mul, NULL, input(cx, AX_F32, 1, &n, 1, 9),
                                                            input(cx, AX_F32, 1, &n, 2, 9)));
}

TEST(cpu_generated_c_is_deterministic)
{
    ax_ctx *c1 = ctx_on(tested(), false), *c2 = ctx_on(tested(), false);
    Env e = {2, SH(3, 5), 2};
    const char *stage = gpu_tested() ? "opencl" : "c";
    char *a = ax_dump(c1, b_scan(c1, &e), stage, false);
    char *b = ax_dump(c1, b_scan(c1, &e), stage, false);
    char *c = ax_dump(c2, b_scan(c2, &e), stage, false);
    REQUIRE(a && b && c);
    CHECK(!strcmp(a, b));
    CHECK(!strcmp(a, c));
    CHECK(strstr(a, "axk_"));
    free(a);
    free(b);
    free(c);
    ax_ctx_free(c1);
    ax_ctx_free(c2);
}

/* A program built again over other data: the context's program memory
 * hands back the compilation it made (nothing prepared); with that off
 * (no-reuse), the kernel comes from the memory cache (prepared, not
 * compiled). */
TEST(cpu_second_compile_hits_the_cache)
{
    if (cpu_only("cpu_second_compile_hits_the_cache")) return;
    for (int reuse = 1; reuse >= 0; reuse--) {
        ax_options o;
        memset(&o, 0, sizeof o);
        o.backend = AX_BACKEND_CPU;
        o.threads = 4;
        o.debug = reuse ? 0 : AX_DEBUG_NO_REUSE;
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        ax_array *r = RUN(cx, b_dotp(cx, 1000));
        ax_array_release(r);
        CpuCounters c0, c1;
        REQUIRE(cpu_counters(cx, &c0));
        ax_program *pr = ax_compile(cx, b_dotp(cx, 2000));   /* other data, same code */
        REQUIRE(pr);
        const ax_stats *st = ax_program_stats(pr);
        CHECK(st->reused == (reuse != 0));
        CHECK_EQ_I(st->kernels, 1);
        ax_array *out = NULL;
        CHECK(ax_program_run(pr, &out, 1) == 1);
        CHECK(out && ax_array_size(out) == 1);
        ax_array_release(out);
        fprintf(stderr, "dotp again (%s): %.4f ms\n", reuse ? "program memory" : "kernel memory cache",
                st->compile_ms);
        ax_program_free(pr);
        REQUIRE(cpu_counters(cx, &c1));
        CHECK_EQ_I(c1.compiled, c0.compiled);
        CHECK_EQ_I(c1.prepared, c0.prepared + (reuse ? 0 : 1));
        CHECK_EQ_I(c1.cached, c0.cached + (reuse ? 0 : 1));
        ax_ctx_free(cx);
    }
}

/* A context on the CPU backend with its own cache directory. */
static ax_ctx *ctx_cache_dbg(const char *dir, int threads, void (*progress)(void *, int, int), void *arg,
                             unsigned debug)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_CPU;
    o.threads = threads;
    o.cache_dir = dir;
    o.progress = progress;
    o.progress_arg = arg;
    /* kernels apart (the planner would make the tests' maps of one array
     * one loop) */
    o.debug = debug | AX_DEBUG_NO_PLANNER;
    return ax_ctx_new(&o);
}

static ax_ctx *ctx_cache(const char *dir, int threads, void (*progress)(void *, int, int), void *arg)
{
    return ctx_cache_dbg(dir, threads, progress, arg, 0);
}

/* ... whose programs are compiled in full (no-reuse: no program entries in
 * the disk cache), for the tests that count the kernels' entries */
static ax_ctx *ctx_units(const char *dir, int threads, void (*progress)(void *, int, int), void *arg)
{
    return ctx_cache_dbg(dir, threads, progress, arg, AX_DEBUG_NO_REUSE);
}

static int64_t cache_entries(const char *dir)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    ax_cache_info ci;
    return ax_cache_stats(&o, &ci) == 0 ? ci.entries : -1;
}

/* Empties and removes a test's cache directory. */
static void remove_cache_dir(const char *dir)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    CHECK(ax_cache_clear(&o, NULL) == 0);
    CHECK(rmdir(dir) == 0);
}

static ax_exp f_half(ax_exp x, void *env) { return ax_mul(x, ax_f32(0.5f)); }

/* Runs a, releases its results: how many there were (-1: failed). */
static int run_all(ax_ctx *cx, ax_acc a)
{
    ax_array *res[8] = {0};
    int n = ax_run_n(cx, a, res, 8);
    CHECKF(n > 0, "ax_run_n: %s", ax_error(cx));
    for (int i = 0; i < n; i++) ax_array_release(res[i]);
    return n;
}

/* Each kernel is a unit of its own, cached apart: a kernel that two
 * programs share (or one program twice) is compiled once. */
TEST(cpu_kernels_cached_apart)
{
    if (cpu_only("cpu_kernels_cached_apart")) return;
    char dir[] = "/tmp/axle-test-units-XXXXXX";
    REQUIRE(mkdtemp(dir));
    ax_ctx *cx = ctx_units(dir, 2, NULL, NULL);
    REQUIRE(cx);
    ax_array *r = RUN(cx, ax_map(f_poly, NULL, input(cx, AX_F32, 1, SH(1000), 7, 0)));
    ax_array_release(r);
    CHECK_EQ_I(cache_entries(dir), 1);
    /* the same map beside another: one more unit */
    ax_acc xs = input(cx, AX_F32, 1, SH(500), 8, 0);
    CHECK_EQ_I(run_all(cx, ax_atuple2(ax_map(f_poly, NULL, xs), ax_map(f_half, NULL, xs))), 2);
    CHECK_EQ_I(cache_entries(dir), 2);
    /* in a new context (its memory cache empty), at another size: none */
    ax_ctx_free(cx);
    cx = ctx_units(dir, 2, NULL, NULL);
    REQUIRE(cx);
    CpuCounters c1;
    xs = input(cx, AX_F32, 1, SH(77), 9, 0);
    CHECK_EQ_I(run_all(cx, ax_atuple2(ax_map(f_half, NULL, xs), ax_map(f_poly, NULL, xs))), 2);
    REQUIRE(cpu_counters(cx, &c1));
    CHECK_EQ_I(c1.compiled, 0);
    CHECK_EQ_I(c1.cached, 1);
    CHECK_EQ_I(cache_entries(dir), 2);
    ax_ctx_free(cx);
    remove_cache_dir(dir);
}

typedef struct Progress {
    int calls, last_done, total, bad;
} Progress;

static void on_progress(void *arg, int done, int total)
{
    Progress *p = arg;
    /* 0 of total first, then one more each call, up to total */
    if (p->calls == 0 ? done != 0 : done != p->last_done + 1 || total != p->total) p->bad++;
    if (done > total || total < 1) p->bad++;
    p->calls++;
    p->last_done = done;
    p->total = total;
}

/* ax_options.progress: 0 of n, then each kernel compiled; nothing from a
 * cache hit. */
TEST(cpu_progress_callback)
{
    if (cpu_only("cpu_progress_callback")) return;
    char dir[] = "/tmp/axle-test-progress-XXXXXX";
    REQUIRE(mkdtemp(dir));
    Progress pg = {0};
    ax_ctx *cx = ctx_cache(dir, 4, on_progress, &pg);   /* a process per kernel */
    REQUIRE(cx);
    ax_acc xs = input(cx, AX_F32, 1, SH(300), 3, 0);
    ax_acc three = ax_atuple(3, (ax_acc[]){ax_map(f_poly, NULL, xs), ax_map(f_half, NULL, xs),
                                           ax_scanl1(ax_fn_add, NULL, xs)});
    CHECK_EQ_I(run_all(cx, three), 3);
    CHECK_EQ_I(pg.bad, 0);
    CHECK_EQ_I(pg.total, 3);
    CHECK_EQ_I(pg.last_done, 3);
    CHECK_EQ_I(pg.calls, 4);
    pg = (Progress){0};
    CHECK_EQ_I(run_all(cx, three), 3);   /* the memory cache: no compile, no call */
    CHECK_EQ_I(pg.calls, 0);
    ax_ctx_free(cx);
    remove_cache_dir(dir);
}

/* With fewer compiler processes (threads) than kernels to compile, the
 * kernels are compiled in that many batches, each a translation unit of
 * several kernels; the results are the same, and a batch is cached. */
TEST(cpu_kernels_batched_when_fewer_processes)
{
    if (cpu_only("cpu_kernels_batched_when_fewer_processes")) return;
    char dir[] = "/tmp/axle-test-batch-XXXXXX";
    REQUIRE(mkdtemp(dir));
    for (int round = 0; round < 2; round++) {
        Progress pg = {0};
        ax_ctx *cx = ctx_units(dir, 1, on_progress, &pg), *ci = ctx_on(AX_BACKEND_INTERP, false);
        REQUIRE(cx && ci);
        ax_array *res[2][3] = {{0}};
        for (int b = 0; b < 2; b++) {
            ax_ctx *c = b ? ci : cx;
            ax_acc xs = input(c, AX_F32, 1, SH(1000), 11, 0);
            ax_acc three = ax_atuple(3, (ax_acc[]){ax_map(f_poly, NULL, xs), ax_map(f_half, NULL, xs),
                                                   ax_scanl1(ax_fn_add, NULL, xs)});
            CHECKF(ax_run_n(c, three, res[b], 3) == 3, "%s", ax_error(c));
        }
        for (int k = 0; k < 3; k++) {
            char what[32];
            snprintf(what, sizeof what, "result %d", k);
            /* the maps exact; the scan's sums in the blocked order the
               backend's scan adds them in, within 1e-5 */
            CHECK(res[0][k] && res[1][k] && equal(what, res[1][k], res[0][k], k == 2 ? 1e-5 : 0));
        }
        /* the first round compiles one batch of the three kernels; the
           second finds it in the disk cache */
        CHECK_EQ_I(pg.total, round == 0 ? 1 : 0);
        CHECK_EQ_I(pg.calls, round == 0 ? 2 : 0);
        CHECK_EQ_I(cache_entries(dir), 1);
        for (int b = 0; b < 2; b++)
            for (int k = 0; k < 3; k++) ax_array_release(res[b][k]);
        ax_ctx_free(cx);
        ax_ctx_free(ci);
    }
    remove_cache_dir(dir);
}

/* The checked copies of a kernel are compiled only when a check first
 * fails: a program without faults never compiles them; one with a fault
 * compiles them then, and reports the fault as the interpreter does. */
TEST(cpu_checked_copies_on_first_need)
{
    if (cpu_only("cpu_checked_copies_on_first_need")) return;
    char dir[] = "/tmp/axle-test-checked-XXXXXX";
    REQUIRE(mkdtemp(dir));
    for (int k = 0; k < 2; k++) {
        /* index faults, whose checks the fast kernels defer: a
           backpermute's and an ax_at's */
        ax_ctx *cx = ctx_cache(dir, 2, NULL, NULL), *ci = ctx_on(AX_BACKEND_INTERP, false);
        REQUIRE(cx && ci);
        CpuCounters c0 = {0}, c1;
        CHECK(ax_run(cx, b_fault(cx, &(Fault){k, AX_OK})) == NULL);
        CHECK(ax_run(ci, b_fault(ci, &(Fault){k, AX_OK})) == NULL);
        CHECKF(!strcmp(ax_error(ci), ax_error(cx)), "fault %d: \"%s\" vs \"%s\"", k, ax_error(ci), ax_error(cx));
        REQUIRE(cpu_counters(cx, &c1));
        CHECKF(c1.checked == c0.checked + 1, "fault %d: %lld checked units loaded", k,
               (long long)(c1.checked - c0.checked));
        /* the context is usable afterwards, and the copies stay loaded */
        ax_array *ok = RUN(cx, ax_map(f_poly, NULL, input(cx, AX_F32, 1, SH(999), 5, 0)));
        CHECK(ok != NULL);
        ax_array_release(ok);
        CHECK(ax_run(cx, b_fault(cx, &(Fault){k, AX_OK})) == NULL);
        CHECKF(!strcmp(ax_error(ci), ax_error(cx)), "fault %d again: \"%s\" vs \"%s\"", k, ax_error(ci),
               ax_error(cx));
        ax_ctx_free(cx);
        ax_ctx_free(ci);
    }
    /* a program that runs without a fault loads none */
    ax_ctx *cx = ctx_cache(dir, 2, NULL, NULL);
    REQUIRE(cx);
    ax_array *r = RUN(cx, ax_backpermute(ax_ix1(ax_i64(500)), p_off, (void *)(intptr_t)0,
                                         input(cx, AX_I32, 1, SH(1000), 6, 5)));
    CHECK(r != NULL);
    ax_array_release(r);
    CpuCounters c;
    REQUIRE(cpu_counters(cx, &c));
    CHECK_EQ_I(c.checked, 0);
    ax_ctx_free(cx);
    remove_cache_dir(dir);
}

/* ================================================================ threads */

typedef struct ThreadArg {
    int seed;
    bool ok;
} ThreadArg;

static void *thread_main(void *p)
{
    ThreadArg *t = p;
    ax_ctx *cx = ctx_on(tested(), false);
    t->ok = true;
    for (int k = 0; k < 3 && t->ok; k++) {
        int64_t n = 200000 + t->seed * 1000 + k;
        ax_array *r = ax_run(cx, ax_fold(ax_fn_add, NULL, ax_i64(0), ax_map(ax_fn_abs, NULL, input(cx, AX_I64, 1, &n, 7, 3))));
        /* |v| for v uniform in [-3, 3]: compare with a plain loop */
        int64_t want = 0;
        int64_t *buf = malloc(sizeof *buf * (size_t)n);
        fill(buf, AX_I64, n, 7 * 31, 3);
        for (int64_t i = 0; i < n; i++) want += buf[i] < 0 ? -buf[i] : buf[i];
        free(buf);
        t->ok = r && ((const int64_t *)ax_array_data(r, 0))[0] == want;
        ax_array_release(r);
    }
    ax_ctx_free(cx);
    return NULL;
}

TEST(cpu_two_contexts_on_two_threads)
{
    pthread_t th[2];
    ThreadArg a[2] = {{1, false}, {2, false}};
    for (int k = 0; k < 2; k++) REQUIRE(pthread_create(&th[k], NULL, thread_main, &a[k]) == 0);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    CHECK(a[0].ok);
    CHECK(a[1].ok);
}

TEST(cpu_is_the_default_backend)
{
    if (cpu_only("cpu_is_the_default_backend")) return;
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_program *pr = ax_compile(cx, b_dotp(cx, 10));
    REQUIRE(pr);
    CHECK(!strcmp(ax_program_stats(pr)->backend, "cpu"));
    ax_program_free(pr);
    ax_ctx_free(cx);
}

/* ================================================================ memory */

/* x[i-1] + x[i+1] with zero outside: one 1-d stencil step. */
static ax_exp blur3(const ax_exp *nb, void *env)
{
    (void)env;
    return ax_add(nb[0], nb[2]);
}

/* Early release (liveness.c): fusion floats the lets of a chain of
 * stencils (which never fuse) into one let chain whose scopes all end at
 * the end; each intermediate must still go right after its last read.
 * 40 steps over 1M f32 (4 MB each, 160 MB if all were kept) run under a
 * 24 MB memory limit, and give the interpreter's result. */
TEST(cpu_let_chains_release_arrays_after_their_last_read)
{
    if (small_run()) {
        printf("skip cpu_let_chains_release_arrays_after_their_last_read: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    float *x = malloc(sizeof *x * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 7) - 3.0f;
    ax_array *out[2] = {0, 0};
    for (int b = 0; b < 2; b++) {
        ax_options o = {0};
        o.backend = b ? tested() : AX_BACKEND_INTERP;
        o.mem_limit = b ? 24 << 20 : 0;
        ax_ctx *cx = ax_ctx_new(&o);
        ax_acc a = ax_use(cx, ax_array_from(cx, AX_F32, 1, &n, x));
        const int size = 3;
        for (int k = 0; k < 40; k++) a = ax_stencil(blur3, NULL, &size, ax_constant(ax_f32(0)), a);
        ax_array *r = NULL;
        int got = ax_run_n(cx, a, &r, 1);
        CHECKF(got == 1, "%s: %s", b ? "cpu" : "interp", ax_error(cx));
        if (got == 1) {
            out[b] = malloc(sizeof(float) * (size_t)n);
            ax_array_copy_out(r, 0, out[b]);
            ax_array_release(r);
        }
        ax_ctx_free(cx);
    }
    if (out[0] && out[1]) CHECK(!memcmp(out[0], out[1], sizeof(float) * (size_t)n));
    free(out[0]);
    free(out[1]);
    free(x);
}

/* ================================================================ speculation */

/* i > 0 ? a[i - 1] : k  (k = -1: every branch in bounds; the read at
 * i = 0 is out of bounds only in the branch not taken) */
typedef struct { ax_acc a; int64_t shift; } Spec;

static ax_exp spec_fn(ax_exp ix, void *env)
{
    Spec *s = env;
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_gt(i, ax_i64(0)), ax_at_linear(s->a, ax_sub(i, ax_i64(s->shift))), ax_i32(-1));
}

/* Reads in both branches of a cond are evaluated speculatively in kernels
 * with deferred checks (cg_exp.c `speculable`): a bad index in the branch
 * not taken must not be reported, one in the branch taken must, exactly as
 * the interpreter reports it. */
TEST(cpu_speculated_reads_report_only_real_faults)
{
    const int64_t n = 100000;
    int32_t *x = malloc(sizeof *x * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(i * 7 % 1000);
    for (int shift = 1; shift <= 2; shift++) {   /* 2: i = 1 reads a[-1], taken */
        int32_t *r[2] = {0, 0};
        ax_status st[2];
        char msg[2][512];
        for (int b = 0; b < 2; b++) {
            ax_options o = {0};
            o.backend = b ? tested() : AX_BACKEND_INTERP;
            ax_ctx *cx = ax_ctx_new(&o);
            Spec s = {ax_use(cx, ax_array_from(cx, AX_I32, 1, &n, x)), shift};
            ax_array *a = ax_run(cx, ax_generate(cx, ax_ix1(ax_i64(n)), spec_fn, &s));
            st[b] = ax_status_of(cx);
            snprintf(msg[b], sizeof msg[b], "%s", a ? "" : ax_error(cx));
            if (a) {
                r[b] = malloc(sizeof *r[b] * (size_t)n);
                ax_array_copy_out(a, 0, r[b]);
                ax_array_release(a);
            }
            ax_ctx_free(cx);
        }
        if (shift == 1) {
            CHECKF(r[0] && r[1], "shift 1: interp %s, cpu %s", msg[0], msg[1]);
            if (r[0] && r[1]) CHECK(!memcmp(r[0], r[1], sizeof(int32_t) * (size_t)n));
        } else {
            CHECK(!r[0] && !r[1] && st[0] == AX_ERR_INDEX && st[1] == AX_ERR_INDEX);
            CHECKF(!strcmp(msg[0], msg[1]), "interp: %s | cpu: %s", msg[0], msg[1]);
        }
        free(r[0]);
        free(r[1]);
    }
    free(x);
}

/* ================================================================ conversions */

typedef struct { ax_scalar to; } CvtEnv;
static ax_exp cvt_fn(ax_exp x, void *env) { return ax_cvt(x, ((CvtEnv *)env)->to); }

/* Runs map (cvt to) over a on one backend; the result's bytes in out. */
static bool run_cvt(ax_backend_kind b, ax_scalar from, const void *data, int64_t n, ax_scalar to, void *out)
{
    ax_options o = {0};
    o.backend = b;
    ax_ctx *cx = ax_ctx_new(&o);
    CvtEnv e = {to};
    ax_array *r = ax_run(cx, ax_map(cvt_fn, &e, ax_use(cx, ax_array_from(cx, from, 1, &n, data))));
    bool ok = r != NULL;
    if (r) ax_array_copy_out(r, 0, out);
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

/* 64-bit integer <-> float conversions go through i32 in kernels with
 * deferred checks (cg_exp.c cvt_via_i32) and hand values outside its
 * range to the checked copy: every result must still be the exact one,
 * NaN, infinities, saturation and the i32 boundaries included, in lengths
 * that fill vector loops. */
TEST(cpu_wide_conversions_are_exact)
{
    const int64_t ints[] = {0, 1, -1, 2147483647LL, 2147483648LL, -2147483648LL, -2147483649LL,
                            9007199254740993LL, INT64_MIN, INT64_MAX, 123456789, -987654321};
    const double flts[] = {0.0, -0.0, -0.5, 0.999, 3.7, -3.7, 2147483520.0, 2147483647.0, 2147483648.0,
                           -2147483648.0, -2147483649.0, -2147484160.0, 4294967295.0, 1e19, -1e19,
                           NAN, INFINITY, -INFINITY};
    enum { N = 1000 };
    int64_t iv[N];
    double dv[N];
    float fv[N];
    for (int i = 0; i < N; i++) {
        iv[i] = ints[i % (int)(sizeof ints / sizeof *ints)];
        dv[i] = flts[i % (int)(sizeof flts / sizeof *flts)];
        fv[i] = (float)dv[i];
    }
    static const ax_scalar ftypes[] = {AX_F32, AX_F64}, itypes[] = {AX_I64, AX_U64};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            uint64_t r0[N], r1[N];
            /* integer -> float */
            memset(r0, 0, sizeof r0);
            memset(r1, 0, sizeof r1);
            CHECK(run_cvt(AX_BACKEND_INTERP, itypes[a], iv, N, ftypes[b], r0));
            CHECK(run_cvt(tested(), itypes[a], iv, N, ftypes[b], r1));
            CHECKF(!memcmp(r0, r1, sizeof r0), "%s -> %s differs", itypes[a] == AX_I64 ? "i64" : "u64",
                   ftypes[b] == AX_F32 ? "f32" : "f64");
            /* float -> integer */
            memset(r0, 0, sizeof r0);
            memset(r1, 0, sizeof r1);
            const void *src = ftypes[b] == AX_F32 ? (const void *)fv : (const void *)dv;
            CHECK(run_cvt(AX_BACKEND_INTERP, ftypes[b], src, N, itypes[a], r0));
            CHECK(run_cvt(tested(), ftypes[b], src, N, itypes[a], r1));
            CHECKF(!memcmp(r0, r1, sizeof r0), "%s -> %s differs", ftypes[b] == AX_F32 ? "f32" : "f64",
                   itypes[a] == AX_I64 ? "i64" : "u64");
        }
}
