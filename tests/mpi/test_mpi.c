/*
 * libaxle_mpi, operation by operation: every computation is run by the
 * distributed executor (its inputs split across the ranks) and, on every
 * rank, by the interpreter in a plain context (the oracle); the gathered
 * results must agree (integers exactly, floats within 1e-5 relative where
 * a fold or scan of floats is reassociated across ranks).  Each runs with
 * even blocks and with skewed ones (AXLE_MPI_BLOCKS=skew: rank 0 empty,
 * the others uneven), on the interpreter and on the CPU backend, with
 * every operation distributed however small.  Also: the communication
 * counted (a dot product is one reduction and no message; a stencil
 * sends exactly its halo rows), failures on one rank failing every rank
 * alike, distributed arrays made from blocks, scattered and gathered,
 * and parameters (compile once, run on arrays of other sizes).
 *
 * Runs under mpirun with any number of ranks (make test: 1 to 4).
 * AXLE_MPI_TEST_CPU=0 leaves the CPU backend out.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle_mpi.h"
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed, me, np, compared;
static const char *config = "";

#define CHECK(c) do { if (!(c)) { failed++; fprintf(stderr, "rank %d [%s] %s:%d: CHECK failed: %s\n", me, config, \
    __FILE__, __LINE__, #c); } } while (0)
#define CHECKF(c, ...) do { if (!(c)) { failed++; fprintf(stderr, "rank %d [%s] %s:%d: CHECK failed: %s: ", me, \
    config, __FILE__, __LINE__, #c); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* ------------------------------------------------------------ building a computation twice */

/* The inputs of a test: in the distributed context each is split across
 * the ranks (or kept whole), in the plain one used as it is. */
typedef struct In {
    ax_mpi *m;                  /* NULL: the plain context */
    ax_ctx *cx;
    ax_darray *keep[16];
    int nkeep;
} In;

static ax_acc use(In *in, ax_array *a, bool whole)
{
    if (!in->m) return ax_use(in->cx, a);
    ax_darray *d = whole ? ax_mpi_replicated(in->m, a) : ax_mpi_split(in->m, a);
    if (!d) return NULL;
    in->keep[in->nkeep++] = d;
    return ax_mpi_use(in->m, d);
}

static ax_array *vec_i32(ax_ctx *cx, int64_t n, int32_t (*f)(int64_t))
{
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_I32), 1, &n);
    int32_t *p = ax_array_data(a, 0);
    for (int64_t i = 0; i < n; i++) p[i] = f(i);
    return a;
}

static ax_array *mat_f32(ax_ctx *cx, int64_t r, int64_t c, float (*f)(int64_t, int64_t))
{
    int64_t sh[2] = {r, c};
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_F32), 2, sh);
    float *p = ax_array_data(a, 0);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) p[i * c + j] = f(i, j);
    return a;
}

static ax_array *vec_f32(ax_ctx *cx, int64_t n, float (*f)(int64_t))
{
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_F32), 1, &n);
    float *p = ax_array_data(a, 0);
    for (int64_t i = 0; i < n; i++) p[i] = f(i);
    return a;
}

typedef ax_acc (*Build)(In *in, void *env);

/* Two arrays of one shape and element type agree (rel: float tolerance). */
static bool same(const ax_array *a, const ax_array *b, double rel, char *why, size_t n)
{
    if (ax_array_rank(a) != ax_array_rank(b) || ax_array_size(a) != ax_array_size(b) ||
        ax_array_components(a) != ax_array_components(b)) {
        snprintf(why, n, "shapes differ (rank %d size %lld vs rank %d size %lld)", ax_array_rank(a),
                 (long long)ax_array_size(a), ax_array_rank(b), (long long)ax_array_size(b));
        return false;
    }
    for (int d = 0; d < ax_array_rank(a); d++)
        if (ax_array_extent(a, d) != ax_array_extent(b, d)) {
            snprintf(why, n, "extent %d: %lld vs %lld", d, (long long)ax_array_extent(a, d), (long long)ax_array_extent(b, d));
            return false;
        }
    for (int c = 0; c < ax_array_components(a); c++) {
        ax_scalar s = ax_array_component_type(a, c);
        const char *x = ax_array_data(a, c), *y = ax_array_data(b, c);
        size_t sz = ax_scalar_size(s);
        for (int64_t i = 0; i < ax_array_size(a); i++) {
            if (s == AX_F32 || s == AX_F64) {
                double u = s == AX_F32 ? ((const float *)x)[i] : ((const double *)x)[i];
                double v = s == AX_F32 ? ((const float *)y)[i] : ((const double *)y)[i];
                if (isnan(u) && isnan(v)) continue;
                if (u == v || fabs(u - v) <= rel * fmax(fabs(u), fabs(v)) + 1e-30) continue;
                snprintf(why, n, "component %d element %lld: %.9g vs %.9g", c, (long long)i, u, v);
                return false;
            }
            if (memcmp(x + (size_t)i * sz, y + (size_t)i * sz, sz)) {
                snprintf(why, n, "component %d element %lld differs", c, (long long)i);
                return false;
            }
        }
    }
    return true;
}

typedef struct Ctx {
    ax_mpi *m;
    const ax_mpi_options *mo;
} Ctx;

/* Runs build distributed and on the plain interpreter; results compared. */
static void agree(Ctx *t, const char *name, Build b, void *env, double rel)
{
    ax_mpi *m = t->m;
    In din = {m, ax_mpi_ctx(m), {NULL}, 0};
    ax_acc a = b(&din, env);
    ax_darray *d[8] = {0};
    int n = ax_mpi_run_n(m, a, d, 8);
    CHECKF(n >= 1, "%s: %s", name, ax_mpi_error(m));
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_INTERP;
    ax_ctx *rc = ax_ctx_new(&o);
    In rin = {NULL, rc, {NULL}, 0};
    ax_array *want[8] = {0};
    int k = ax_run_n(rc, b(&rin, env), want, 8);
    CHECKF(k >= 1, "%s: the oracle: %s", name, ax_error(rc));
    CHECKF(n == k || n < 0, "%s: %d results, the oracle %d", name, n, k);
    for (int i = 0; i < n && i < k; i++) {
        ax_array *got = NULL;
        CHECKF(ax_mpi_gather(m, d[i], -1, &got) == 0, "%s: gather: %s", name, ax_mpi_error(m));
        char why[256] = "";
        if (got) CHECKF(same(got, want[i], rel, why, sizeof why), "%s: result %d: %s", name, i, why);
        compared += got != NULL;
        ax_array_release(got);
    }
    for (int i = 0; i < 8; i++) {
        ax_darray_release(d[i]);
        ax_array_release(want[i]);
    }
    for (int i = 0; i < din.nkeep; i++) ax_darray_release(din.keep[i]);
    ax_ctx_free(rc);
    ax_ctx_reset(ax_mpi_ctx(m));
}

/* ------------------------------------------------------------ data */

static int32_t iota7(int64_t i) { return (int32_t)(i * 7 % 23) - 11; }
static int32_t small(int64_t i) { return (int32_t)(i % 5); }
static int32_t segl(int64_t i) { return (int32_t)(i % 4); }   /* segment lengths: 0 1 2 3 0 1 ... */
static float f1(int64_t i) { return (float)((i * 37 % 101) * 0.25 - 7.0); }
static float f2(int64_t i, int64_t j) { return (float)((i * 13 + j * 7) % 17) - 8.0f; }

/* ------------------------------------------------------------ scalar functions */

static ax_exp add(ax_exp x, ax_exp y, void *e) { return ax_add(x, y); }
static ax_exp mul3(ax_exp x, void *e) { return ax_mul(x, ax_i32(3)); }
/* affine maps (a, b): x -> a*x + b, composed: associative, not commutative */
static ax_exp affine(ax_exp x, ax_exp y, void *e)
{
    return ax_tuple2(ax_mul(ax_get(x, 0), ax_get(y, 0)), ax_add(ax_mul(ax_get(x, 0), ax_get(y, 1)), ax_get(x, 1)));
}
static ax_exp to_affine(ax_exp x, void *e) { return ax_tuple2(ax_add(ax_rem(x, ax_i32(3)), ax_i32(2)), x); }
static ax_exp fmax2(ax_exp x, ax_exp y, void *e) { return ax_max(x, y); }

static ax_acc affines(In *in, int64_t n) { return ax_map(to_affine, NULL, use(in, vec_i32(in->cx, n, iota7), false)); }

/* ------------------------------------------------------------ the operations */

static int64_t N[] = {0, 1, 2, 3, 5, 17, 64};
#define NN ((int)(sizeof N / sizeof *N))

static ax_acc b_zip(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    /* lengths n and n + 3: the intersection moves the longer one's rows */
    ax_acc a = use(in, vec_i32(in->cx, n, iota7), false), b = use(in, vec_i32(in->cx, n + 3, small), false);
    return ax_zip_with(add, NULL, ax_map(mul3, NULL, a), b);
}

static ax_exp gen_ix(ax_exp ix, void *e)
{
    return ax_add(ax_mul(ax_cvt(ax_index_get(ix, 0), AX_I32), ax_i32(100)), ax_cvt(ax_index_get(ix, 1), AX_I32));
}
static ax_acc b_generate(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_generate(in->cx, ax_ix2(ax_i64(n), ax_i64(3)), gen_ix, NULL);
}

static ax_acc b_fold_all(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_fold(add, NULL, ax_i32(5), use(in, vec_i32(in->cx, n, iota7), false));   /* z not neutral */
}
static ax_acc b_fold_f32(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_fold(fmax2, NULL, ax_f32(-1e30f), use(in, vec_f32(in->cx, n, f1), false));   /* a user MPI op */
}
static ax_acc b_fold_affine(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_fold(affine, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), affines(in, n));
}
static ax_acc b_fold1_affine(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_fold1(affine, NULL, affines(in, n + 1));
}
static ax_acc b_fold_rows(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_fold(add, NULL, ax_f32(0), use(in, mat_f32(in->cx, n, 5, f2), false));
}
static ax_acc b_dotp(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_fold(add, NULL, ax_f32(0), ax_zip_with(ax_fn_mul, NULL, use(in, vec_f32(in->cx, n, f1), false),
                                                     use(in, vec_f32(in->cx, n, f1), false)));
}

/* Unsigned min and max across ranks: the first half of the elements small,
 * the second half with the top bit set, so that ranks' partial results
 * differ in it (MPICH 4.0.2 compares unsigned types as signed under
 * MPI_MAX and MPI_MIN: 5 was its maximum of 5 and UINT64_MAX). */
typedef struct UEnv {
    int64_t n;
    ax_scalar s;
    bool scans;
} UEnv;
static ax_array *vec_top(ax_ctx *cx, int64_t n, ax_scalar s)
{
    ax_array *a = ax_array_new(cx, ax_type_scalar(s), 1, &n);
    void *p = ax_array_data(a, 0);
    size_t sz = ax_scalar_size(s);
    uint64_t top = UINT64_MAX >> (64 - 8 * sz);
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = i < n / 2 ? (uint64_t)i : top - (uint64_t)i % 7;
        switch (sz) {
        case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
        case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
        case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
        default: ((uint64_t *)p)[i] = v; break;
        }
    }
    return a;
}
static ax_acc b_unsigned(In *in, void *env)
{
    UEnv *e = env;
    ax_acc a = use(in, vec_top(in->cx, e->n, e->s), false);
    ax_exp lo = ax_cvt(ax_u64(0), e->s), hi = ax_cvt(ax_u64(UINT64_MAX), e->s);
    if (e->scans) return ax_atuple2(ax_scanl1(ax_fn_max, NULL, a), ax_scanr(ax_fn_min, NULL, hi, a));
    return ax_atuple2(ax_fold(ax_fn_max, NULL, lo, a), ax_fold(ax_fn_min, NULL, hi, a));
}

/* What the planner of a single-process run makes one loop (a map kept, a
 * fold of it and one of its input), an epilogue (a map of a fold's rows'
 * result) and a loop of a filter and a fold of it: the distributed run,
 * compiled without the planner, must agree. */
static ax_exp positive(ax_exp x, void *e) { return ax_gt(x, ax_i32(0)); }
static ax_acc b_planned(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc a = use(in, vec_i32(in->cx, n, iota7), false);
    ax_acc m = ax_map(mul3, NULL, a), f = ax_filter(positive, NULL, a);
    ax_acc rows = ax_fold(add, NULL, ax_f32(0), use(in, mat_f32(in->cx, n, 3, f2), false));
    ax_acc r[5] = {m, ax_zip_with(add, NULL, ax_fold(add, NULL, ax_i32(1), m), ax_fold(ax_fn_max, NULL, ax_i32(-99), a)),
                   ax_map(ax_fn_neg, NULL, rows), f, ax_fold(add, NULL, ax_i32(0), f)};
    return ax_atuple(5, r);
}

static const char *scan_names[] = {"scanl", "scanl1", "scanr", "scanr1", "scanl'", "scanr'"};
typedef struct ScanEnv {
    int64_t n;
    int kind;
} ScanEnv;
static ax_acc b_scan(In *in, void *env)
{
    ScanEnv *e = env;
    ax_acc a = affines(in, e->n);
    ax_exp z = ax_tuple2(ax_i32(2), ax_i32(1));
    switch (e->kind) {
    case 0: return ax_scanl(affine, NULL, z, a);
    case 1: return ax_scanl1(affine, NULL, a);
    case 2: return ax_scanr(affine, NULL, z, a);
    case 3: return ax_scanr1(affine, NULL, a);
    case 4: return ax_scanl_ex(affine, NULL, z, a);
    default: return ax_scanr_ex(affine, NULL, z, a);
    }
}
static ax_acc b_scan_f32(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_atuple2(ax_scanl1(add, NULL, use(in, vec_f32(in->cx, n, f1), false)),
                      ax_scanr(add, NULL, ax_f32(1), use(in, mat_f32(in->cx, n, 4, f2), false)));
}

/* segment lengths 0 1 2 3 0 1 ..., the source as long as they add up */
static int64_t seg_total(int64_t ns)
{
    int64_t t = 0;
    for (int64_t i = 0; i < ns; i++) t += segl(i);
    return t;
}
static ax_acc b_foldseg(In *in, void *env)
{
    int64_t ns = *(int64_t *)env;
    ax_acc segs = use(in, vec_i32(in->cx, ns, segl), false);
    ax_acc src = ax_map(to_affine, NULL, use(in, vec_i32(in->cx, seg_total(ns), iota7), false));
    return ax_fold_seg(affine, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), src, segs);
}
static int32_t segl1(int64_t i) { return (int32_t)(i % 3) + 1; }
static ax_acc b_fold1seg_rows(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc segs = use(in, vec_i32(in->cx, 3, segl1), true);   /* 1 2 3: rows of 6 */
    return ax_fold1_seg(fmax2, NULL, use(in, mat_f32(in->cx, n, 6, f2), false), segs);
}

static ax_exp rev(ax_exp ix, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_ix1(ax_sub(ax_i64(n - 1), ax_index_get(ix, 0)));
}
static ax_acc b_reverse(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_backpermute(ax_ix1(ax_i64(n)), rev, env, use(in, vec_i32(in->cx, n, iota7), false));
}
static ax_exp transpose(ax_exp ix, void *env) { return ax_ix2(ax_index_get(ix, 1), ax_index_get(ix, 0)); }
static ax_acc b_transpose(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_backpermute(ax_ix2(ax_i64(7), ax_i64(n)), transpose, NULL, use(in, mat_f32(in->cx, n, 7, f2), false));
}
static ax_acc b_slice(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc a = use(in, mat_f32(in->cx, n + 2, 6, f2), false);
    ax_slice row[2] = {ax_fixed(ax_i64(n / 2 + 1)), ax_all()}, col[2] = {ax_all(), ax_fixed(ax_i64(4))};
    ax_slice rep[3] = {ax_all(), ax_fixed(ax_i64(2)), ax_all()};
    return ax_atuple(3, (ax_acc[]){ax_slice_(2, row, a), ax_slice_(2, col, a), ax_replicate(3, rep, a)});
}
/* a generate reading at computed indices: fetched (rank 1 into rank 1)
 * and gathered (rank 2 iteration reading a vector) */
static ax_exp gather_at(ax_exp ix, void *env)
{
    ax_acc a = *(ax_acc *)env;
    ax_exp i = ax_index_get(ix, 0);
    ax_exp j = ax_rem(ax_mul(i, ax_i64(5)), ax_size(a));
    return ax_add(ax_at(a, ax_ix1(j)), ax_at_linear(a, ax_sub(ax_sub(ax_size(a), ax_i64(1)), i)));
}
static ax_exp outer(ax_exp ix, void *env)
{
    ax_acc a = *(ax_acc *)env;
    return ax_mul(ax_at(a, ax_ix1(ax_index_get(ix, 0))), ax_at(a, ax_ix1(ax_index_get(ix, 1))));
}
static ax_acc b_at(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc a = use(in, vec_i32(in->cx, n + 1, iota7), false);
    return ax_atuple2(ax_generate(in->cx, ax_ix1(ax_size(a)), gather_at, &a),
                      ax_generate(in->cx, ax_ix2(ax_size(a), ax_size(a)), outer, &a));
}

static ax_exp to_bin(ax_exp ix, void *env)
{
    ax_acc a = *(ax_acc *)env;
    return ax_ix1(ax_cvt(ax_rem(ax_abs(ax_at(a, ix)), ax_i32(8)), AX_I64));
}
static ax_exp zero_i32(ax_exp ix, void *e) { return ax_i32(0); }
static ax_exp one_i32(ax_exp x, void *e) { return ax_i32(1); }
static ax_acc b_histogram(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc a = use(in, vec_i32(in->cx, n * 8, iota7), false);
    return ax_permute(add, NULL, ax_generate(in->cx, ax_ix1(ax_i64(8)), zero_i32, NULL), to_bin, &a,
                      ax_map(one_i32, NULL, a));
}
/* a permutation into a large target (pairs sent to owners), odd sources dropped */
static ax_exp scatter_ix(ax_exp ix, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_eq(ax_rem(i, ax_i64(3)), ax_i64(1)), ax_ignore(1), ax_ix1(ax_sub(ax_i64(n - 1), i)));
}
static ax_acc b_scatter(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc d = use(in, vec_i32(in->cx, n, small), false), s = use(in, vec_i32(in->cx, n, iota7), false);
    return ax_permute(ax_fn_fst, NULL, d, scatter_ix, env, s);
}

static ax_exp pos(ax_exp x, void *e) { return ax_gt(x, ax_i32(0)); }
static ax_acc b_filter(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    return ax_filter(pos, NULL, ax_map(mul3, NULL, use(in, vec_i32(in->cx, n, iota7), false)));
}

typedef struct StEnv {
    int64_t n;
    int w;
    ax_boundary_kind b;
} StEnv;
static ax_boundary bnd(ax_boundary_kind b)
{
    return b == AX_CLAMP ? ax_clamp() : b == AX_MIRROR ? ax_mirror() : ax_wrap();
}
static ax_exp sten5(const ax_exp *x, void *env)
{
    StEnv *e = env;
    ax_exp s = ax_f32(0);
    for (int k = 0; k < e->w; k++) s = ax_add(s, ax_mul(x[k], ax_f32((float)(k + 1))));
    return s;
}
static ax_acc b_stencil1(In *in, void *env)
{
    StEnv *e = env;
    ax_boundary b = e->b == AX_CONSTANT ? ax_constant(ax_f32(2.5f)) : bnd(e->b);
    return ax_stencil(sten5, env, (int[]){e->w}, b, use(in, vec_f32(in->cx, e->n, f1), false));
}
static ax_exp sten9(const ax_exp *x, void *env)
{
    ax_exp s = ax_f32(0);
    for (int k = 0; k < 9; k++) s = ax_add(s, ax_mul(x[k], ax_f32((float)(k % 4 + 1))));
    return s;
}
static ax_acc b_stencil2d(In *in, void *env)
{
    StEnv *e = env;
    ax_boundary b = e->b == AX_CONSTANT ? ax_constant(ax_f32(-1)) : bnd(e->b);
    return ax_stencil(sten9, NULL, (int[]){3, 3}, b, use(in, mat_f32(in->cx, e->n, 5, f2), false));
}
static ax_exp sten2(const ax_exp *x, void *env)
{
    /* a 1x1 of a and a 5x3 of b */
    ax_exp s = x[0];
    for (int k = 1; k < 16; k++) s = ax_add(s, ax_mul(x[k], ax_f32(0.5f)));
    return s;
}
static ax_acc b_stencil2(In *in, void *env)
{
    StEnv *e = env;
    ax_acc a = use(in, mat_f32(in->cx, e->n, 4, f2), false), b = use(in, mat_f32(in->cx, e->n + 2, 4, f2), false);
    return ax_stencil2(sten2, NULL, (int[]){1, 1}, ax_clamp(), a, (int[]){5, 3}, bnd(e->b), b);
}

static ax_acc b_reshape(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc a = use(in, mat_f32(in->cx, n, 6, f2), false);
    return ax_reshape(ax_ix2(ax_i64(n * 2), ax_i64(3)), a);
}

static ax_exp lt1000(ax_exp x, void *e) { return ax_lt(x, ax_i32(1000)); }
static ax_acc w_cond2(ax_acc x, void *env) { return ax_map(lt1000, NULL, ax_fold_all(add, NULL, ax_i32(0), x)); }
static ax_exp dbl1(ax_exp x, void *e) { return ax_add(ax_mul(x, ax_i32(2)), ax_i32(1)); }
static ax_acc w_body(ax_acc x, void *env) { return ax_map(dbl1, NULL, x); }
static ax_acc b_control(In *in, void *env)
{
    int64_t n = *(int64_t *)env;
    ax_acc a = use(in, vec_i32(in->cx, n + 1, small), false);
    ax_acc loop = ax_awhile(w_cond2, w_body, NULL, a);
    ax_exp big = ax_gt(ax_at(ax_fold_all(add, NULL, ax_i32(0), a), ax_index(0, NULL)), ax_i32(20));
    return ax_atuple2(loop, ax_acond(big, ax_map(mul3, NULL, a), a));
}

/* ------------------------------------------------------------ counted communication */

static void comm_counts(Ctx *t)
{
    ax_mpi *m = t->m;
    int64_t n = 4000;
    In in = {m, ax_mpi_ctx(m), {NULL}, 0};
    ax_darray *r = ax_mpi_run(m, b_dotp(&in, &n));
    CHECKF(r != NULL, "dotp: %s", ax_mpi_error(m));
    ax_mpi_opstat s[8];
    int k = ax_mpi_stats(m, s, 8);
    /* one operation, one reduction, no message, 4 bytes each way */
    CHECK(k == 1);
    if (k == 1) {
        CHECK(!strcmp(s[0].name, "ax_fold"));
        CHECK(s[0].msgs_sent == 0 && s[0].msgs_recv == 0);
        CHECK(s[0].collectives == (np > 1 ? 1 : 0));
        CHECK(s[0].bytes_sent == (np > 1 ? 4 : 0));
    }
    ax_darray_release(r);
    for (int i = 0; i < in.nkeep; i++) ax_darray_release(in.keep[i]);
    in.nkeep = 0;
    ax_ctx_reset(ax_mpi_ctx(m));
    /* a 3x3 stencil (1 halo row) over rows of 9 f32: exactly the
     * neighbours' 2 rows each way, one message per neighbour with rows */
    int64_t rows = 40;
    StEnv e = {rows, 0, AX_CLAMP};
    ax_acc a = use(&in, mat_f32(in.cx, rows, 9, f2), false);
    r = ax_mpi_run(m, ax_stencil(sten9, &e, (int[]){3, 3}, ax_clamp(), a));
    CHECKF(r != NULL, "stencil: %s", ax_mpi_error(m));
    k = ax_mpi_stats(m, s, 8);
    CHECK(k == 1);
    const char *skew = getenv("AXLE_MPI_BLOCKS");
    if (k == 1 && !(skew && !strcmp(skew, "skew"))) {
        /* even blocks of 40 rows: every rank has rows; its neighbours are
         * the ranks before and after it */
        int nb = (me > 0) + (me < np - 1);
        CHECK(s[0].msgs_sent == nb && s[0].msgs_recv == nb);
        CHECKF(s[0].bytes_sent == (int64_t)nb * 1 * 9 * 4, "sent %" PRId64, s[0].bytes_sent);
        CHECK(s[0].bytes_recv == (int64_t)nb * 1 * 9 * 4);
        CHECK(s[0].collectives == 0);
    }
    ax_darray_release(r);
    for (int i = 0; i < in.nkeep; i++) ax_darray_release(in.keep[i]);
    ax_ctx_reset(ax_mpi_ctx(m));
}

/* ------------------------------------------------------------ failures */

static ax_exp oob(ax_exp ix, void *env)
{
    ax_acc a = *(ax_acc *)env;
    /* element 5 of the iteration reads out of bounds: one rank's rows */
    ax_exp i = ax_index_get(ix, 0);
    return ax_at(a, ax_ix1(ax_cond(ax_eq(i, ax_i64(5)), ax_i64(1000), i)));
}
static void failures(Ctx *t)
{
    ax_mpi *m = t->m;
    In in = {m, ax_mpi_ctx(m), {NULL}, 0};
    ax_acc a = use(&in, vec_i32(in.cx, 20, iota7), false);
    ax_darray *r = ax_mpi_run(m, ax_generate(in.cx, ax_ix1(ax_i64(20)), oob, &a));
    CHECK(r == NULL);
    CHECK(ax_mpi_status(m) == AX_ERR_INDEX);
    CHECKF(strstr(ax_mpi_error(m), "ax_at: index (1000) out of bounds for shape (20)") != NULL, "%s", ax_mpi_error(m));
    /* every rank says the same */
    char msg[1024], zero[1024];
    snprintf(msg, sizeof msg, "%s", ax_mpi_error(m));
    memcpy(zero, msg, sizeof zero);
    MPI_Bcast(zero, sizeof zero, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECK(!strcmp(zero, msg));
    for (int i = 0; i < in.nkeep; i++) ax_darray_release(in.keep[i]);
    ax_ctx_reset(ax_mpi_ctx(m));
    /* and the context runs the next program */
    int64_t n = 50;
    agree(t, "after a failure", b_fold_all, &n, 0);
    /* fold1 of an empty vector: the interpreter's error on every rank */
    In in2 = {m, ax_mpi_ctx(m), {NULL}, 0};
    r = ax_mpi_run(m, ax_fold1(add, NULL, use(&in2, vec_i32(in2.cx, 0, iota7), false)));
    CHECK(r == NULL);
    CHECKF(strstr(ax_mpi_error(m), "cannot reduce an empty row") != NULL, "%s", ax_mpi_error(m));
    for (int i = 0; i < in2.nkeep; i++) ax_darray_release(in2.keep[i]);
    ax_ctx_reset(ax_mpi_ctx(m));
}

/* ------------------------------------------------------------ deep programs */

/* A program nested deeper than the calling thread's stack holds runs on a
 * helper thread with a bigger stack, which calls MPI and the public array
 * constructors for the caller (once it failed there without a message:
 * the context was taken for another thread's).  MPI allows that from
 * MPI_THREAD_SERIALIZED up; below, the run fails saying so, and the
 * context runs the next program. */
#define DEEP 4000
static ax_exp churn(ax_exp x, void *e) { return ax_rem(ax_add(ax_mul(x, ax_i32(3)), ax_i32(1)), ax_i32(1000003)); }
static ax_acc b_deep(In *in, void *env)
{
    ax_acc a = use(in, vec_i32(in->cx, *(int64_t *)env, iota7), false);
    for (int i = 0; i < DEEP; i++) a = ax_map(churn, NULL, a);
    return a;
}

static void deep(Ctx *t, bool serialized)
{
    int64_t n = 64;
    if (serialized) {
        agree(t, "a map chain deeper than the stack", b_deep, &n, 0);
        return;
    }
    ax_mpi *m = t->m;
    In in = {m, ax_mpi_ctx(m), {NULL}, 0};
    ax_darray *r = ax_mpi_run(m, b_deep(&in, &n));
    CHECK(r == NULL);
    CHECK(ax_mpi_status(m) == AX_ERR_ARG);
    CHECKF(strstr(ax_mpi_error(m), "initialise MPI with MPI_THREAD_SERIALIZED") != NULL, "%s", ax_mpi_error(m));
    ax_darray_release(r);
    for (int i = 0; i < in.nkeep; i++) ax_darray_release(in.keep[i]);
    ax_ctx_reset(ax_mpi_ctx(m));
    agree(t, "after a deep program was refused", b_fold_all, &n, 0);
}

/* ------------------------------------------------------------ arrays and parameters */

static void arrays(Ctx *t)
{
    ax_mpi *m = t->m;
    ax_ctx *cx = ax_mpi_ctx(m);
    /* blocks of rank + 1 rows each (uneven), 3 columns: row g holds g */
    int64_t sh[2] = {me + 1, 3}, first = (int64_t)me * (me + 1) / 2;
    ax_array *blk = ax_array_new(cx, ax_type_scalar(AX_I64), 2, sh);
    int64_t *p = ax_array_data(blk, 0);
    for (int64_t i = 0; i < sh[0] * 3; i++) p[i] = first + i / 3;
    ax_darray *d = ax_mpi_from_block(m, blk);
    CHECKF(d != NULL, "%s", ax_mpi_error(m));
    if (d) {
        int64_t rows = (int64_t)np * (np + 1) / 2;
        CHECK(ax_darray_rank(d) == 2 && ax_darray_shape(d)[0] == rows && ax_darray_shape(d)[1] == 3);
        CHECK(ax_darray_first_row(d) == first);
        ax_array *all = NULL;
        CHECK(ax_mpi_gather(m, d, np - 1, &all) == 0);
        CHECK((me == np - 1) == (all != NULL));
        if (all) {
            const int64_t *q = ax_array_data(all, 0);
            bool ok = true;
            for (int64_t i = 0; i < rows * 3; i++) ok = ok && q[i] == i / 3;
            CHECK(ok);
        }
        ax_array_release(all);
        /* a fold of rows over them */
        ax_darray *s = ax_mpi_run(m, ax_fold(add, NULL, ax_i64(0), ax_mpi_use(m, d)));
        CHECKF(s != NULL, "%s", ax_mpi_error(m));
        CHECK(s && ax_darray_first_row(s) == first && ax_array_size(ax_darray_local(s)) == me + 1);
        if (s) {
            const int64_t *q = ax_array_data(ax_darray_local(s), 0);
            bool ok = true;
            for (int64_t i = 0; i <= me; i++) ok = ok && q[i] == 3 * (first + i);
            CHECK(ok);
        }
        ax_darray_release(s);
    }
    ax_darray_release(d);
    ax_array_release(blk);
    /* a block of another element type on one rank: every rank fails */
    if (np > 1) {
        ax_array *odd = me == 1 ? ax_array_new(cx, ax_type_scalar(AX_F32), 1, (int64_t[]){2})
                                : ax_array_new(cx, ax_type_scalar(AX_I32), 1, (int64_t[]){2});
        d = ax_mpi_from_block(m, odd);
        CHECK(d == NULL);
        /* naming what differs and which rank gave what */
        char want[160];
        snprintf(want, sizeof want, "ax_mpi_from_block: the ranks disagree on the element type of the block: i32 on %s; "
                 "f32 on rank 1", np == 2 ? "rank 0" : np == 3 ? "ranks 0, 2" : "ranks 0, 2-3");
        CHECKF(np > 4 || strstr(ax_mpi_error(m), want) != NULL, "%s", ax_mpi_error(m));
        CHECK(ax_mpi_status(m) == AX_ERR_ARG);
        ax_array_release(odd);
    }
    /* scatter from the last rank, gather on every rank */
    ax_array *src = me == np - 1 ? vec_i32(cx, 11, iota7) : NULL;
    d = ax_mpi_scatter(m, np - 1, src);
    CHECKF(d != NULL, "%s", ax_mpi_error(m));
    ax_array *back = NULL;
    CHECK(d && ax_mpi_gather(m, d, -1, &back) == 0);
    if (back) {
        const int32_t *q = ax_array_data(back, 0);
        bool ok = ax_array_size(back) == 11;
        for (int64_t i = 0; ok && i < 11; i++) ok = q[i] == iota7(i);
        CHECK(ok);
    }
    ax_array_release(back);
    ax_array_release(src);
    ax_darray_release(d);
    /* parameters: compile once, run on distributed arrays of two sizes and
     * on a replicated one */
    ax_acc x = ax_param(cx, 0, ax_type_scalar(AX_I32), 1);
    ax_mpi_program *pr = ax_mpi_compile(m, ax_fold(add, NULL, ax_i32(0), ax_map(mul3, NULL, x)));
    CHECKF(pr != NULL, "%s", ax_mpi_error(m));
    for (int k = 0; pr && k < 3; k++) {
        int64_t n = k == 0 ? 10 : k == 1 ? 1000 : 7;
        ax_array *a = vec_i32(cx, n, iota7);
        ax_darray *arg = k == 2 ? ax_mpi_replicated(m, a) : ax_mpi_split(m, a), *res = NULL;
        CHECK(ax_mpi_program_run(pr, &arg, 1, &res, 1) == 1);
        int32_t want = 0;
        for (int64_t i = 0; i < n; i++) want += 3 * iota7(i);
        CHECK(res && *(int32_t *)ax_array_data(ax_darray_local(res), 0) == want);
        ax_darray_release(res);
        ax_darray_release(arg);
        ax_array_release(a);
    }
    /* a wrong argument: a clear error, on every rank */
    if (pr) {
        ax_darray *res = NULL;
        CHECK(ax_mpi_program_run(pr, NULL, 0, &res, 1) < 0);
        CHECKF(strstr(ax_mpi_error(m), "parameter") != NULL, "%s", ax_mpi_error(m));
    }
    ax_mpi_program_free(pr);
    ax_ctx_reset(cx);
}

/* ------------------------------------------------------------ what is not distributed */

/* a stencil2 mixing the wrap and constant boundaries runs whole on every
 * rank, gathered, with a notice (rank 0 gives it): the result is right */
static ax_acc b_mixed(In *in, void *env)
{
    StEnv *e = env;
    ax_acc a = use(in, mat_f32(in->cx, e->n, 4, f2), false), b = use(in, mat_f32(in->cx, e->n, 4, f2), false);
    return ax_stencil2(sten2, NULL, (int[]){1, 1}, ax_wrap(), a, (int[]){5, 3}, ax_constant(ax_f32(1)), b);
}

static void note(void *arg, const char *msg)
{
    if (strstr(msg, "runs whole on every rank")) (*(int *)arg)++;
}

static void fallback(void)
{
    int notes = 0;
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_INTERP;
    o.log = note;
    o.log_arg = &notes;
    ax_mpi_options mo = {&o, false, false, -1, 0};
    ax_mpi *m = ax_mpi_new(MPI_COMM_WORLD, &mo);
    if (!m) {
        failed++;
        return;
    }
    Ctx t = {m, &mo};
    StEnv e = {13, 3, AX_WRAP};
    agree(&t, "a stencil2 of wrap and constant (gathered)", b_mixed, &e, 1e-5);
    CHECKF(notes == (me == 0 ? 1 : 0), "%d notices", notes);
    ax_mpi_free(m);
    /* rebalanced filters: the survivors in even blocks, the values alike */
    mo.rebalance = true;
    m = ax_mpi_new(MPI_COMM_WORLD, &mo);
    if (!m) {
        failed++;
        return;
    }
    t.m = m;
    int64_t n = 40;
    agree(&t, "filter, rebalanced", b_filter, &n, 0);
    In in = {m, ax_mpi_ctx(m), {NULL}, 0};
    ax_darray *r = ax_mpi_run(m, b_filter(&in, &n));
    CHECK(r != NULL);
    if (r) {
        int64_t tot = ax_darray_shape(r)[0], mine = ax_array_size(ax_darray_local(r));
        CHECKF(mine == tot / np + (me < tot % np), "%" PRId64 " of %" PRId64, mine, tot);
    }
    ax_darray_release(r);
    for (int i = 0; i < in.nkeep; i++) ax_darray_release(in.keep[i]);
    ax_mpi_free(m);
}

/* ------------------------------------------------------------ all of it */

static void suite(Ctx *t)
{
    char name[96];
    for (int i = 0; i < NN; i++) {
        int64_t n = N[i];
        agree(t, "map/zipWith of two lengths", b_zip, &n, 0);
        agree(t, "generate (global indices)", b_generate, &n, 0);
        agree(t, "fold of a vector, z not neutral", b_fold_all, &n, 0);
        agree(t, "fold of f32 by max (an MPI user op)", b_fold_f32, &n, 0);
        agree(t, "fold by a non-commutative operator", b_fold_affine, &n, 0);
        agree(t, "fold1 by a non-commutative operator", b_fold1_affine, &n, 0);
        agree(t, "fold of rows", b_fold_rows, &n, 1e-5);
        agree(t, "dot product", b_dotp, &n, 1e-5);
        for (int k = 0; k < 6; k++) {
            ScanEnv e = {n, k};
            snprintf(name, sizeof name, "%s by a non-commutative operator", scan_names[k]);
            agree(t, name, b_scan, &e, 0);
        }
        agree(t, "scans of f32 (vector, rows)", b_scan_f32, &n, 1e-5);
        ax_scalar us[4] = {AX_U8, AX_U16, AX_U32, AX_U64};
        for (int u = 0; u < 8; u++) {
            UEnv e = {n, us[u % 4], u >= 4};
            snprintf(name, sizeof name, "%s of u%d by min and max (top bits)", e.scans ? "scans" : "folds",
                     (int)ax_scalar_size(e.s) * 8);
            agree(t, name, b_unsigned, &e, 0);
        }
        agree(t, "foldSeg of a vector (segments across blocks, empty ones)", b_foldseg, &n, 0);
        agree(t, "fold1Seg of rows", b_fold1seg_rows, &n, 0);
        agree(t, "backpermute: reverse (fetched)", b_reverse, &n, 0);
        agree(t, "backpermute: transpose", b_transpose, &n, 0);
        agree(t, "slice and replicate", b_slice, &n, 0);
        agree(t, "ax_at at computed indices", b_at, &n, 0);
        agree(t, "permute: a histogram", b_histogram, &n, 0);
        agree(t, "permute: pairs to the owners, ax_ignore", b_scatter, &n, 0);
        agree(t, "filter", b_filter, &n, 0);
        agree(t, "reshape", b_reshape, &n, 0);
        agree(t, "acond and awhile", b_control, &n, 0);
        agree(t, "what the planner makes loops and epilogues of", b_planned, &n, 1e-5);
        ax_boundary_kind bs[4] = {AX_CLAMP, AX_MIRROR, AX_WRAP, AX_CONSTANT};
        for (int b = 0; b < 4; b++) {
            StEnv e3 = {n, 3, bs[b]}, e7 = {n, 7, bs[b]};
            snprintf(name, sizeof name, "stencil 3, boundary %d", b);
            agree(t, name, b_stencil1, &e3, 1e-5);
            snprintf(name, sizeof name, "stencil 7, boundary %d", b);
            agree(t, name, b_stencil1, &e7, 1e-5);
            snprintf(name, sizeof name, "stencil 3x3, boundary %d", b);
            agree(t, name, b_stencil2d, &e3, 1e-5);
            if (bs[b] != AX_CONSTANT) {
                snprintf(name, sizeof name, "stencil2, boundary %d", b);
                agree(t, name, b_stencil2, &e3, 1e-5);
            }
        }
    }
    comm_counts(t);
    failures(t);
    arrays(t);
    if (ax_mpi_ctx(t->m) && ax_ctx_options(ax_mpi_ctx(t->m))->backend == AX_BACKEND_INTERP) deep(t, true);
}

int main(int argc, char **argv)
{
    /* (AXLE_MPI_TEST_FUNNELED=1: MPI_THREAD_FUNNELED, and only the check
     * that a deep program is refused under it) */
    const char *fun = getenv("AXLE_MPI_TEST_FUNNELED");
    bool funneled = fun && !strcmp(fun, "1");
    int provided = 0;
    MPI_Init_thread(&argc, &argv, funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (funneled) {
        ax_options o;
        memset(&o, 0, sizeof o);
        o.backend = AX_BACKEND_INTERP;
        ax_mpi_options mo = {&o, false, false, -1, 0};
        ax_mpi *m = ax_mpi_new(MPI_COMM_WORLD, &mo);
        config = "funneled";
        if (m) {
            Ctx t = {m, &mo};
            deep(&t, provided >= MPI_THREAD_SERIALIZED);
            ax_mpi_free(m);
        } else {
            failed++;
        }
        int all = 0;
        MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (me == 0) printf("%d ranks, MPI_THREAD_FUNNELED: %d checks failed\n", np, all);
        MPI_Finalize();
        return all ? 1 : 0;
    }
    const char *c = getenv("AXLE_MPI_TEST_CPU");
    bool cpu = !c || strcmp(c, "0");
    static const struct {
        const char *name;
        ax_backend_kind be;
        bool skew;
    } runs[] = {{"interp", AX_BACKEND_INTERP, false}, {"interp/skew", AX_BACKEND_INTERP, true},
                {"cpu/skew", AX_BACKEND_CPU, true}};
    for (int k = 0; k < 3; k++) {
        if (runs[k].be == AX_BACKEND_CPU && !cpu) continue;
        config = runs[k].name;
        if (runs[k].skew) setenv("AXLE_MPI_BLOCKS", "skew", 1);
        else unsetenv("AXLE_MPI_BLOCKS");
        ax_options o;
        memset(&o, 0, sizeof o);
        o.backend = runs[k].be;
        ax_mpi_options mo = {&o, false, false, -1, 0};
        ax_mpi *m = ax_mpi_new(MPI_COMM_WORLD, &mo);
        if (!m) {
            failed++;
            break;
        }
        Ctx t = {m, &mo};
        suite(&t);
        ax_mpi_free(m);
    }
    unsetenv("AXLE_MPI_BLOCKS");
    config = "fallback";
    fallback();
    int all = 0;
    MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) printf("%d ranks: %d results compared with the oracle, %d checks failed\n", np, compared, all);
    if (compared == 0) all++;
    MPI_Finalize();
    return all ? 1 : 0;
}
