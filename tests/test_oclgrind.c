/*
 * The GPU kernels under a checker: a small suite of the skeletons that
 * use shared memory, barriers and atomics (folds, scans, segmented folds,
 * permute, filter, stencils), at sizes around a group's width, run on the
 * OpenCL backend and compared with the interpreter.  CTest runs it on
 * Oclgrind's simulated device with data-race detection (test_oclgrind:
 * OCL_ICD_VENDORS names Oclgrind's ICD, OCLGRIND_DATA_RACES=1), and fails
 * when Oclgrind reports anything: it is the one check on a machine
 * without a GPU that catches a missing barrier or a plain load where an
 * atomic one is needed.  Run by hand it uses whatever OpenCL device there
 * is.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

#define SH(...) ((const int64_t[]){__VA_ARGS__})

static ax_ctx *ctx_on(ax_backend_kind k)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = k;
    o.no_cache = true;   /* every kernel built by the device under test */
    return ax_ctx_new(&o);
}

static int64_t size_of(int rank, const int64_t *sh)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sh[d];
    return n;
}

/* Small integers and floats of one sign (so that float sums compare with
 * a tolerance), from a seed. */
static ax_acc input(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, uint64_t seed)
{
    int64_t n = size_of(rank, sh);
    uint8_t *b = calloc((size_t)(n > 0 ? n : 1), 8);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 7;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int v = (int)(x % 11) - 5;
        switch (s) {
        case AX_I32: ((int32_t *)b)[i] = v; break;
        case AX_I64: ((int64_t *)b)[i] = v; break;
        case AX_U8: ((uint8_t *)b)[i] = (uint8_t)(x >> 8); break;
        case AX_F32: ((float *)b)[i] = (float)(v + 6) * 0.25f; break;
        default: break;
        }
    }
    ax_array *a = ax_array_from(cx, s, rank, sh, b);
    free(b);
    ax_acc r = a ? ax_use(cx, a) : NULL;
    ax_array_release(a);
    return r;
}

/* (a, b) . (c, d): apply v -> a v + b, then v -> c v + d (associative,
 * not commutative). */
static ax_exp op_aff(ax_exp x, ax_exp y, void *env)
{
    return ax_tuple2(ax_mul(ax_get(x, 0), ax_get(y, 0)), ax_add(ax_mul(ax_get(x, 1), ax_get(y, 0)), ax_get(y, 1)));
}
static ax_exp to_aff(ax_exp x, void *env) { return ax_tuple2(ax_add(ax_band(x, ax_i32(1)), ax_i32(1)), x); }

typedef ax_acc (*Build)(ax_ctx *cx, int rank, const int64_t *sh, int which);

/* Runs b on the interpreter and on OpenCL; the results must agree. */
static void same(const char *what, Build b, int rank, const int64_t *sh, int which, double rel)
{
    ax_ctx *ci = ctx_on(AX_BACKEND_INTERP), *cg = ctx_on(AX_BACKEND_OPENCL);
    ax_array *ri[4] = {0}, *rg[4] = {0};
    int ni = ax_run_n(ci, b(ci, rank, sh, which), ri, 4);
    int ng = ax_run_n(cg, b(cg, rank, sh, which), rg, 4);
    CHECKF(ni >= 0 && ni == ng, "%s %d (shape %lld..): interp %d (%s), opencl %d (%s)", what, which, (long long)sh[0],
           ni, ni < 0 ? ax_error(ci) : "ok", ng, ng < 0 ? ax_error(cg) : "ok");
    for (int k = 0; k < ni && k < ng; k++) {
        int64_t n = ax_array_size(ri[k]);
        CHECK(n == ax_array_size(rg[k]));
        for (int c = 0; c < ax_array_components(ri[k]) && n == ax_array_size(rg[k]); c++) {
            ax_scalar s = ax_array_component_type(ri[k], c);
            const char *p = ax_array_data(ri[k], c), *q = ax_array_data(rg[k], c);
            size_t z = ax_scalar_size(s);
            for (int64_t i = 0; i < n; i++) {
                bool ok = s == AX_F32 ? harness_close(((const float *)p)[i], ((const float *)q)[i], rel)
                                      : !memcmp(p + (size_t)i * z, q + (size_t)i * z, z);
                if (!ok) {
                    CHECKF(ok, "%s %d: result %d component %d element %lld differs", what, which, k, c, (long long)i);
                    break;
                }
            }
        }
    }
    for (int k = 0; k < 4; k++) {
        if (k < ni) ax_array_release(ri[k]);
        if (k < ng) ax_array_release(rg[k]);
    }
    ax_ctx_free(ci);
    ax_ctx_free(cg);
}

/* ------------------------------------------------------------ reductions */

static ax_acc b_fold(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    switch (which) {
    case 0: return ax_fold(ax_fn_add, NULL, ax_i32(3), input(cx, AX_I32, rank, sh, 1));
    case 1: return ax_fold1(ax_fn_max, NULL, input(cx, AX_F32, rank, sh, 2));
    default: return ax_fold(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), ax_map(to_aff, NULL, input(cx, AX_I32, rank, sh, 3)));
    }
}

TEST(oclgrind_folds)
{
    static const struct { int r; int64_t sh[3]; } shapes[] = {
        {1, {0}}, {1, {1}}, {1, {255}}, {1, {257}}, {1, {2500}}, {2, {3, 600}}, {2, {33, 40}}, {3, {2, 3, 50}},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int w = 0; w < 3; w++) {
            if (w == 1 && shapes[s].sh[shapes[s].r - 1] == 0) continue;   /* fold1 of empty rows: an error */
            same("fold", b_fold, shapes[s].r, shapes[s].sh, w, 1e-5);
        }
}

static ax_acc b_scan(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    ax_acc a = input(cx, AX_I64, rank, sh, 10 + (uint64_t)which);
    ax_acc f = ax_map(to_aff, NULL, input(cx, AX_I32, rank, sh, 20 + (uint64_t)which));
    ax_exp z = ax_tuple2(ax_i32(1), ax_i32(0));
    switch (which) {
    case 0: return ax_scanl(ax_fn_add, NULL, ax_i64(5), a);
    case 1: return ax_scanl1(ax_fn_add, NULL, a);
    case 2: return ax_scanr(op_aff, NULL, z, f);
    case 3: return ax_scanr1(op_aff, NULL, f);
    case 4: return ax_scanl_ex(op_aff, NULL, z, f);
    case 5: return ax_scanr_ex(ax_fn_add, NULL, ax_i64(-2), a);
    default: return ax_scanl1(op_aff, NULL, f);
    }
}

TEST(oclgrind_scans)
{
    static const struct { int r; int64_t sh[2]; } shapes[] = {
        {1, {0}}, {1, {300}}, {1, {2500}}, {2, {3, 300}}, {2, {40, 9}},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int w = 0; w < 7; w++) {
            if ((w == 1 || w == 3 || w == 6) && shapes[s].sh[shapes[s].r - 1] == 0) continue;
            same("scan", b_scan, shapes[s].r, shapes[s].sh, w, 0);
        }
}

static ax_acc b_seg(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    /* lengths 0, 1, ..., 9 cycling, filling the row */
    int64_t n = sh[1], len[512], k = 0, sum = 0;
    while (sum < n && k < 511) {
        int64_t l = k % 10 < n - sum ? k % 10 : n - sum;
        len[k++] = l;
        sum += l;
    }
    int32_t l32[512];
    for (int64_t i = 0; i < k; i++) l32[i] = (int32_t)len[i];
    ax_array *sa = ax_array_from(cx, AX_I32, 1, &k, l32);
    ax_acc segs = ax_use(cx, sa);
    ax_array_release(sa);
    if (which) return ax_fold_seg(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), ax_map(to_aff, NULL, input(cx, AX_I32, 2, sh, 30)), segs);
    return ax_fold_seg(ax_fn_add, NULL, ax_i32(1), input(cx, AX_I32, 2, sh, 31), segs);
}

TEST(oclgrind_segmented_folds)
{
    for (int w = 0; w < 2; w++) same("fold_seg", b_seg, 2, SH(2, 300), w, 0);
}

/* ------------------------------------------------------------ permute, filter */

static ax_exp p_mod(ax_exp ix, void *env)
{
    return ax_ix1(ax_rem(ax_index_get(ix, 0), ax_i64((intptr_t)env)));
}
static ax_exp to_pair(ax_exp x, void *env) { return ax_tuple2(x, ax_cvt(x, AX_F32)); }
static ax_exp comb_pair(ax_exp a, ax_exp b, void *env)
{
    /* not componentwise: a lock per element */
    return ax_tuple2(ax_add(ax_get(a, 0), ax_get(b, 0)), ax_add(ax_get(a, 1), ax_cvt(ax_get(b, 0), AX_F32)));
}

static ax_acc b_permute(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    int64_t bins = 7;
    switch (which) {
    case 0: return ax_permute(ax_fn_add, NULL, input(cx, AX_I32, 1, &bins, 40), p_mod, (void *)7, input(cx, AX_I32, 1, sh, 41));
    case 1: return ax_permute(ax_fn_add, NULL, input(cx, AX_F32, 1, &bins, 42), p_mod, (void *)7, input(cx, AX_F32, 1, sh, 43));
    case 2: return ax_permute(ax_fn_add, NULL, input(cx, AX_U8, 1, &bins, 44), p_mod, (void *)7, input(cx, AX_U8, 1, sh, 45));
    case 3: return ax_permute(ax_fn_max, NULL, input(cx, AX_I64, 1, &bins, 46), p_mod, (void *)7, input(cx, AX_I64, 1, sh, 47));
    default:
        return ax_permute(comb_pair, NULL, ax_map(to_pair, NULL, input(cx, AX_I32, 1, &bins, 48)), p_mod, (void *)7,
                          ax_map(to_pair, NULL, input(cx, AX_I32, 1, sh, 49)));
    }
}

TEST(oclgrind_permute)
{
    for (int w = 0; w < 5; w++) same("permute", b_permute, 1, SH(700), w, 1e-5);
}

static ax_exp positive(ax_exp x, void *env) { return ax_gt(x, ax_i32(0)); }

static ax_acc b_filter(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    return ax_filter(positive, NULL, input(cx, AX_I32, rank, sh, 50 + (uint64_t)which));
}

TEST(oclgrind_filter)
{
    same("filter", b_filter, 1, SH(2500), 0, 0);
    same("filter", b_filter, 2, SH(3, 257), 1, 0);
}

/* ------------------------------------------------------------ multi-generator loops */

/* The planner's loops (src/opt/plan*.c): a map and folds of one input
 * (a commutative and a non-commutative reduction, rows of a matrix too),
 * two filters and a fold of one of them (a conditional reduction). */
static ax_exp negative(ax_exp x, void *env) { return ax_lt(x, ax_i32(0)); }
static ax_exp keep_larger(ax_exp a, ax_exp b, void *env) { return ax_cond(ax_ge(a, b), a, b); }
static ax_exp sq(ax_exp x, void *env) { return ax_mul(x, x); }
static ax_acc b_loop(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    ax_acc xs = input(cx, AX_I32, rank, sh, 80 + (uint64_t)which);
    if (which == 0) {
        ax_acc r[3] = {ax_map(sq, NULL, xs), ax_fold(ax_fn_add, NULL, ax_i32(1), xs),
                       ax_fold(op_aff, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), ax_map(to_aff, NULL, xs))};
        return ax_atuple(3, r);
    }
    ax_acc f1 = ax_filter(positive, NULL, xs), f2 = ax_filter(negative, NULL, xs);
    ax_acc r[4] = {f1, f2, ax_fold(ax_fn_add, NULL, ax_i32(2), f1), ax_fold(keep_larger, NULL, ax_i32(-9), f1)};
    return ax_atuple(4, r);
}

TEST(oclgrind_loops)
{
    same("loop", b_loop, 1, SH(2500), 0, 0);
    same("loop", b_loop, 2, SH(3, 1100), 0, 0);
    same("loop", b_loop, 1, SH(2500), 1, 0);
    same("loop", b_loop, 1, SH(9000), 1, 0);
}

/* ------------------------------------------------------------ stencils, producers */

static ax_exp sum9(const ax_exp *nb, void *env)
{
    ax_exp s = nb[0];
    for (int k = 1; k < 9; k++) s = ax_add(s, nb[k]);
    return s;
}
static ax_exp mid5(const ax_exp *nb, void *env) { return ax_sub(ax_add(nb[0], nb[4]), nb[2]); }

static ax_acc b_stencil(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    if (which) {
        const int size = 5;
        return ax_stencil(mid5, NULL, &size, ax_mirror(), input(cx, AX_I32, 1, sh, 60));
    }
    const int size[2] = {3, 3};
    return ax_stencil(sum9, NULL, size, ax_clamp(), input(cx, AX_I32, 2, SH(20, 30), 61));
}

static ax_exp rev(ax_exp ix, void *env)
{
    return ax_ix2(ax_index_get(ix, 1), ax_index_get(ix, 0));
}

static ax_acc b_prod(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    ax_acc a = input(cx, AX_I32, 2, SH(17, 300), 70), b = input(cx, AX_I32, 2, SH(20, 290), 71);
    if (which) return ax_backpermute(ax_ix2(ax_i64(300), ax_i64(17)), rev, NULL, a);
    return ax_zip_with(ax_fn_sub, NULL, a, b);
}

TEST(oclgrind_stencils_and_producers)
{
    same("stencil", b_stencil, 2, SH(20, 30), 0, 0);
    same("stencil", b_stencil, 1, SH(400), 1, 0);
    same("producer", b_prod, 2, SH(1, 1), 0, 0);
    same("producer", b_prod, 2, SH(1, 1), 1, 0);
}

/* The sort's count, scan, scatter and gather (gpu/sort.c): one long row
 * in several chunks with a partial last tile; a few rows; keys alone. */
static ax_acc b_sort(ax_ctx *cx, int rank, const int64_t *sh, int which)
{
    ax_acc k = input(cx, which == 1 ? AX_F32 : AX_I16, rank, sh, 80 + (uint64_t)which);
    if (which == 2) return ax_sort(k, true);
    return ax_sort_by(k, input(cx, AX_I32, rank, sh, 90), which == 1);
}

TEST(oclgrind_sort)
{
    same("sort", b_sort, 1, SH(1500), 0, 0);
    same("sort", b_sort, 2, SH(3, 700), 1, 0);
    same("sort", b_sort, 1, SH(300), 2, 0);
}
