/*
 * The planner's rewrites (src/opt/plan.c): sibling folds over one extent
 * become one pass, a filter read only by a fold fuses into it.  Every
 * program runs on the interpreter and the CPU backend with the planner on
 * and off, and the results must be bit for bit the unoptimised
 * interpreter's (integer data, and float data whose sums are exact, with
 * NaNs for min and max); non-commutative associative operators (affine
 * maps composed in order, "last", "first") check that the order of
 * operands survives the merge and the chunked parallel combine; sizes 0,
 * 1, odd and large (several chunks on every thread).  The kernel counts
 * say that the rewrites happened, and did not where they must not.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "programs.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct In {
    ax_acc xs;   /* [i32] */
    ax_acc ys;   /* [f64], the same values, a NaN every 37th */
    ax_acc ms;   /* [i32] of shape (n / 7, 7) */
    ax_ctx *cx;
} In;

typedef ax_acc (*Build)(const In *in);

/* ------------------------------------------------------------ operators */

/* affine maps x -> a x + b, composed left to right (wrapping i32):
 * associative, not commutative */
static ax_exp compose(ax_exp p, ax_exp q, void *env)
{
    (void)env;
    ax_exp a1 = ax_get(p, 0), b1 = ax_get(p, 1), a2 = ax_get(q, 0), b2 = ax_get(q, 1);
    return ax_tuple2(ax_mul(a1, a2), ax_add(ax_mul(b1, a2), b2));
}
static ax_exp to_affine(ax_exp x, void *env) { (void)env; return ax_tuple2(ax_bor(x, ax_i32(1)), ax_add(x, ax_i32(3))); }
static ax_exp last(ax_exp a, ax_exp b, void *env) { (void)env, (void)a; return b; }
static ax_exp first(ax_exp a, ax_exp b, void *env) { (void)env, (void)b; return a; }
static ax_exp even(ax_exp x, void *env) { (void)env; return ax_eq(ax_band(x, ax_i32(1)), ax_i32(0)); }
static ax_exp odd(ax_exp x, void *env) { (void)env; return ax_ne(ax_band(x, ax_i32(1)), ax_i32(0)); }
static ax_exp neg(ax_exp x, void *env) { (void)env; return ax_lt(x, ax_i32(0)); }
static ax_exp fpos(ax_exp x, void *env) { (void)env; return ax_not(ax_lt(x, ax_f64(0))); }   /* NaNs kept */


static ax_acc affine_z(ax_acc a) { return ax_fold(compose, NULL, ax_tuple2(ax_i32(1), ax_i32(0)), a); }

/* ------------------------------------------------------------ programs */

/* three siblings over xs: composition (a tuple element), last, sum */
static ax_acc sib3(const In *in)
{
    ax_acc r[3] = {affine_z(ax_map(to_affine, NULL, in->xs)), ax_fold(last, NULL, ax_i32(-7), in->xs),
                   ax_fold(ax_fn_add, NULL, ax_i32(5), in->xs)};
    return ax_atuple(3, r);
}

/* fold1 siblings: max, first, min (an empty input fails in every configuration) */
static ax_acc sib_fold1(const In *in)
{
    ax_acc r[3] = {ax_fold1(ax_fn_max, NULL, in->xs), ax_fold1(first, NULL, in->xs),
                   ax_fold1(ax_fn_min, NULL, in->ys)};
    return ax_atuple(3, r);
}

/* siblings along the rows of a matrix, results read as arrays and by scalar code */
static ax_exp plus_first(ax_exp x, void *env)
{
    ax_acc s = *(ax_acc *)env;
    return ax_add(x, ax_cond(ax_gt(ax_size(s), ax_i64(0)), ax_at_linear(s, ax_i64(0)), ax_i32(0)));
}
static ax_acc sib_rows(const In *in)
{
    ax_acc s = ax_fold(ax_fn_add, NULL, ax_i32(0), in->ms), l = ax_fold(last, NULL, ax_i32(9), in->ms);
    ax_acc r[3] = {s, ax_map(plus_first, &s, l), affine_z(ax_map(to_affine, NULL, in->ms))};
    return ax_atuple(3, r);
}

/* siblings reading one producer that fusion had to make manifest (two
 * readers): the producer is inlined into the one pass */
static ax_exp sq1(ax_exp x, void *env) { (void)env; return ax_mul(ax_add(x, ax_i32(1)), x); }
static ax_acc sib_shared(const In *in)
{
    ax_acc p = ax_map(sq1, NULL, in->xs);
    ax_acc r[2] = {ax_fold(ax_fn_add, NULL, ax_i32(0), p), ax_fold(compose, NULL, ax_tuple2(ax_i32(1), ax_i32(0)),
                                                                   ax_map(to_affine, NULL, p))};
    return ax_atuple(2, r);
}

/* filters into folds of known operators: z not neutral; float max/min with NaNs */
static ax_acc ff_known(const In *in)
{
    ax_acc r[4] = {ax_fold(ax_fn_add, NULL, ax_i32(3), ax_filter(even, NULL, in->xs)),
                   ax_fold(ax_fn_max, NULL, ax_f64(-1e300), ax_filter(fpos, NULL, in->ys)),
                   ax_fold(ax_fn_min, NULL, ax_f64(NAN), ax_filter(fpos, NULL, in->ys)),
                   ax_fold(ax_fn_mul, NULL, ax_i32(1), ax_filter(neg, NULL, in->xs))};
    return ax_atuple(4, r);
}

/* filters into folds of other operators: (kept, value) pairs */
static ax_acc ff_pair(const In *in)
{
    ax_acc r[2] = {affine_z(ax_map(to_affine, NULL, ax_filter(odd, NULL, in->xs))),
                   ax_fold(last, NULL, ax_i32(-1), ax_filter(neg, NULL, in->xs))};
    return ax_atuple(2, r);
}

/* the filter's output is read by more than the fold: not fused */
static ax_acc ff_shared(const In *in)
{
    ax_acc f = ax_filter(odd, NULL, in->xs);
    ax_acc r[2] = {f, ax_fold(ax_fn_add, NULL, ax_i32(0), f)};
    return ax_atuple(2, r);
}

/* the fold reads the filter's output at a position that is not its own
 * element's: not fused */
static ax_exp shifted(ax_exp ix, void *env)
{
    ax_acc f = *(ax_acc *)env;
    ax_exp i = ax_index_get(ix, 0), n = ax_size(f);
    return ax_at_linear(f, ax_sub(ax_sub(n, ax_i64(1)), i));
}
static ax_acc ff_reversed(const In *in)
{
    ax_acc f = ax_filter(odd, NULL, in->xs);
    return affine_z(ax_map(to_affine, NULL, ax_generate(in->cx, ax_shape(f), shifted, &f)));
}

/* a zip of two arrays read by two filters and a fold (QuickHull's
 * points): fusion makes it, the planner copies it into its readers */
static ax_exp pair2(ax_exp x, ax_exp y, void *env) { (void)env; return ax_tuple2(x, y); }
static ax_exp first_even(ax_exp p, void *env) { (void)env; return ax_eq(ax_band(ax_get(p, 0), ax_i32(1)), ax_i32(0)); }
static ax_exp second_neg(ax_exp p, void *env) { (void)env; return ax_lt(ax_get(p, 1), ax_f64(0)); }
static ax_exp fsum(ax_exp p, ax_exp q, void *env)
{
    (void)env;
    return ax_tuple2(ax_add(ax_get(p, 0), ax_get(q, 0)), ax_add(ax_get(p, 1), ax_get(q, 1)));
}
static ax_acc zip_readers(const In *in)
{
    ax_acc pts = ax_zip_with(pair2, NULL, in->xs, in->ys);
    ax_acc r[3] = {ax_filter(first_even, NULL, pts), ax_filter(second_neg, NULL, pts),
                   ax_fold1(fsum, NULL, pts)};
    return ax_atuple(3, r);
}

/* ---------------------------------------------- multi-generator loops */

/* a map of xs (a result) and a fold of xs: one loop, collect and reduce */
static ax_acc map_and_fold(const In *in)
{
    ax_acc r[2] = {ax_map(sq1, NULL, in->xs), ax_fold(ax_fn_add, NULL, ax_i32(5), in->xs)};
    return ax_atuple(2, r);
}

/* a map (a result) folded in order: the fold reads the map's elements
 * in the loop; and a second map of xs beside it */
static ax_acc map_read_by_fold(const In *in)
{
    ax_acc ys = ax_map(sq1, NULL, in->xs);
    ax_acc r[3] = {ys, affine_z(ax_map(to_affine, NULL, ys)), ax_map(to_affine, NULL, in->xs)};
    return ax_atuple(3, r);
}

/* the same along the rows of a matrix: a map and row folds (one of them
 * non-commutative) in one loop of rank 2 */
static ax_acc map_fold_rows(const In *in)
{
    ax_acc r[3] = {ax_map(sq1, NULL, in->ms), ax_fold(ax_fn_max, NULL, ax_i32(-1000), in->ms),
                   affine_z(ax_map(to_affine, NULL, in->ms))};
    return ax_atuple(3, r);
}

/* QuickHull's shape in integers: two filters of xs (results) and folds of
 * the first: a sum (its neutral element for the dropped ones), a
 * selection operator from z (counting only the kept), and "last", which
 * is neither (not in the loop) */
static ax_exp keep_larger(ax_exp a, ax_exp b, void *env) { (void)env; return ax_cond(ax_ge(a, b), a, b); }
static ax_acc filters_and_folds(const In *in)
{
    ax_acc f1 = ax_filter(even, NULL, in->xs), f2 = ax_filter(neg, NULL, in->xs);
    ax_acc r[5] = {f1, f2, ax_fold(ax_fn_add, NULL, ax_i32(3), f1), ax_fold(keep_larger, NULL, ax_i32(-7), f1),
                   ax_fold(last, NULL, ax_i32(-1), f1)};
    return ax_atuple(5, r);
}

/* the fold's element divides by what the filter keeps (never 0): the
 * dropped elements must not be divided in the loop either */
static ax_exp nonzero(ax_exp x, void *env) { (void)env; return ax_ne(x, ax_i32(0)); }
static ax_exp thousand_by(ax_exp x, void *env) { (void)env; return ax_quot(ax_i32(1000), x); }
static ax_acc filter_then_divide(const In *in)
{
    ax_acc f = ax_filter(nonzero, NULL, in->xs);
    ax_acc r[2] = {f, ax_fold(ax_fn_add, NULL, ax_i32(0), ax_map(thousand_by, NULL, f))};
    return ax_atuple(2, r);
}

/* ------------------------------------------------------------ epilogues */

/* maps over the results of a row fold (non-commutative), a scan from the
 * right with z, an inclusive scan, and a stencil, each read by nothing
 * else: applied as those store; a map over a fold read twice stays */
static ax_exp s3(const ax_exp *nb, void *env) { (void)env; return ax_sub(ax_add(nb[0], nb[2]), nb[1]); }
static ax_exp first_of(ax_exp p, void *env) { (void)env; return ax_get(p, 1); }
static ax_acc epilogue_maps(const In *in)
{
    int sz = 3;
    ax_acc twice = ax_fold(ax_fn_max, NULL, ax_i32(-5), in->ms);
    ax_acc r[6] = {ax_map(first_of, NULL, affine_z(ax_map(to_affine, NULL, in->ms))),
                   ax_map(sq1, NULL, ax_scanr(ax_fn_add, NULL, ax_i32(2), in->ms)),
                   ax_map(sq1, NULL, ax_scanl1(ax_fn_add, NULL, in->xs)),
                   ax_map(sq1, NULL, ax_stencil(s3, NULL, &sz, ax_mirror(), in->xs)),
                   ax_map(sq1, NULL, twice), twice};
    return ax_atuple(6, r);
}

/* an epilogue that divides by zero where the fold's result is 0: the
 * same fault as the map after the fold */
static ax_acc epilogue_faults(const In *in)
{
    return ax_map(thousand_by, NULL, ax_fold(ax_fn_add, NULL, ax_i32(0), in->ms));
}

/* ------------------------------------------------------------ running */

typedef struct Cfg {
    const char *name;
    ax_backend_kind backend;
    unsigned debug;
} Cfg;

static const Cfg cfgs[] = {
    {"interp/unoptimised", AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION | AX_DEBUG_NO_SIMPLIFY | AX_DEBUG_NO_CSE},
    {"interp", AX_BACKEND_INTERP, 0},
    {"interp/no-planner", AX_BACKEND_INTERP, AX_DEBUG_NO_PLANNER},
    {"cpu", AX_BACKEND_CPU, AX_DEBUG_VERIFY},
    {"cpu/no-planner", AX_BACKEND_CPU, AX_DEBUG_NO_PLANNER},
    {"opencl", AX_BACKEND_OPENCL, AX_DEBUG_VERIFY},
};
#define NCFG ((int)(sizeof cfgs / sizeof *cfgs))

typedef struct Out {
    ax_ctx *cx;   /* the results' context, freed with them */
    bool ok;
    int n;
    ax_array *a[8];
} Out;

static int32_t *xdata;
static double *ydata;

static void make_inputs(ax_ctx *cx, int64_t n, In *in)
{
    int64_t rows = n / 7, ms[2] = {rows, 7};
    in->cx = cx;
    in->xs = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &n, xdata));
    in->ys = ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, ydata));
    in->ms = ax_use(cx, ax_array_wrap(cx, AX_I32, 2, ms, xdata));
}

/* Operations of a kind in the kernels dump: folds, fold1s, filters. */
typedef struct Kinds { int fold, fold1, filter, map, generate, loop, epilogue; } Kinds;

static int count_of(const char *d, const char *what)
{
    int n = 0;
    for (const char *q = d; (q = strstr(q, what)); q += strlen(what)) n++;
    return n;
}

static Out run_cfg(const Cfg *c, Build b, int64_t n, Kinds *kern)
{
    Out o;
    memset(&o, 0, sizeof o);
    ax_options opt = {0};
    opt.backend = c->backend;
    opt.debug = c->debug;
    ax_ctx *cx = ax_ctx_new(&opt);
    if (!cx) return o;
    In in;
    make_inputs(cx, n, &in);
    ax_acc a = b(&in);
    if (kern) {
        char *d = ax_dump(cx, a, "kernels", false);
        kern->fold = d ? count_of(d, "fold (\\") : -1;
        kern->fold1 = d ? count_of(d, "fold1 (\\") : -1;
        kern->filter = d ? count_of(d, "filter (\\") : -1;
        kern->map = d ? count_of(d, "= map (\\") : -1;
        kern->generate = d ? count_of(d, "= generate ") : -1;
        kern->loop = d ? count_of(d, "= loop[") : -1;
        kern->epilogue = d ? count_of(d, "= map<epilogue>") : -1;
        free(d);
    }
    ax_program *p = ax_compile(cx, a);
    if (p) {
        int r = ax_program_run(p, o.a, 8);
        o.ok = r >= 0;
        o.n = r > 0 ? r : 0;
        ax_program_free(p);
    }
    o.cx = cx;
    return o;
}

static bool same(const ax_array *a, const ax_array *b)
{
    if (ax_array_rank(a) != ax_array_rank(b) || ax_array_size(a) != ax_array_size(b) ||
        ax_array_components(a) != ax_array_components(b))
        return false;
    for (int r = 0; r < ax_array_rank(a); r++)
        if (ax_array_shape(a)[r] != ax_array_shape(b)[r]) return false;
    for (int c = 0; c < ax_array_components(a); c++) {
        ax_scalar s = ax_array_component_type(a, c);
        if (s != ax_array_component_type(b, c)) return false;
        size_t bytes = ax_scalar_size(s) * (size_t)ax_array_size(a);
        if (bytes && memcmp(ax_array_data(a, c), ax_array_data(b, c), bytes)) return false;
    }
    return true;
}

static void release(Out *o)
{
    for (int i = 0; i < o->n; i++) ax_array_release(o->a[i]);
    ax_ctx_free(o->cx);
}

/* Whether configuration c's backend runs here (OpenCL may be missing). */
static bool cfg_available(int c)
{
    static int known[NCFG];
    if (!known[c]) {
        ax_options opt = {0};
        opt.backend = cfgs[c].backend;
        ax_ctx *cx = ax_ctx_new(&opt);
        ax_program *p = cx ? ax_compile(cx, ax_unit(cx, ax_i32(1))) : NULL;
        known[c] = p || (cx && ax_status_of(cx) != AX_ERR_BACKEND) ? 1 : 2;
        if (known[c] == 2) printf("note: configuration %s skipped (%s)\n", cfgs[c].name, cx ? ax_error(cx) : "no context");
        ax_program_free(p);
        ax_ctx_free(cx);
    }
    return known[c] == 1;
}

/* Runs b at every size in every configuration against the first (and, with
 * AXLE_TEST_NVRTC=1, compiles its CUDA kernels). */
static void agree(const char *what, Build b, bool may_fail_empty)
{
    {
        ax_ctx *cx = ax_ctx_new(NULL);
        In in;
        make_inputs(cx, 1000, &in);
        harness_nvrtc_check(cx, b(&in), what, false);
        ax_ctx_free(cx);
    }
    static const int64_t sizes[] = {0, 1, 2, 7, 15, 1001, 300007};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        int64_t n = sizes[si];
        Out ref = run_cfg(&cfgs[0], b, n, NULL);
        if (!ref.ok) {
            CHECKF(may_fail_empty && n == 0, "%s: size %lld: the reference failed", what, (long long)n);
        }
        for (int c = 1; c < NCFG; c++) {
            if (!cfg_available(c)) continue;
            Out o = run_cfg(&cfgs[c], b, n, NULL);
            CHECKF(o.ok == ref.ok, "%s: size %lld: %s %s", what, (long long)n, cfgs[c].name,
                   o.ok ? "ran where the reference failed" : "failed");
            if (o.ok && ref.ok) {
                CHECKF(o.n == ref.n, "%s: %s: %d results", what, cfgs[c].name, o.n);
                for (int i = 0; i < o.n && i < ref.n; i++)
                    CHECKF(same(o.a[i], ref.a[i]), "%s: size %lld: %s: result %d differs from the unoptimised "
                           "interpreter's", what, (long long)n, cfgs[c].name, i);
            }
            release(&o);
        }
        release(&ref);
    }
}

/* A program that faults at the larger sizes: every configuration fails
 * alike there (the same status), and agrees where none does. */
static void fail_alike(const char *what, Build b)
{
    static const int64_t sizes[] = {0, 1, 7, 1001, 300007};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        int64_t n = sizes[si];
        Out ref = run_cfg(&cfgs[0], b, n, NULL);
        ax_status st = ref.ok ? AX_OK : ax_status_of(ref.cx);
        for (int c = 1; c < NCFG; c++) {
            if (!cfg_available(c)) continue;
            Out o = run_cfg(&cfgs[c], b, n, NULL);
            ax_status so = o.ok ? AX_OK : ax_status_of(o.cx);
            CHECKF(so == st, "%s: size %lld: %s: status %d, the reference's %d", what, (long long)n, cfgs[c].name,
                   (int)so, (int)st);
            for (int i = 0; o.ok && ref.ok && i < o.n && i < ref.n; i++)
                CHECKF(same(o.a[i], ref.a[i]), "%s: size %lld: %s: result %d differs", what, (long long)n,
                       cfgs[c].name, i);
            release(&o);
        }
        if (n == 300007) CHECKF(!ref.ok, "%s: the reference did not fault at size %lld", what, (long long)n);
        release(&ref);
    }
}

/* Kernels with the planner on and off (CPU, at a small size). */
static void kernel_counts(Build b, Kinds *on, Kinds *off)
{
    Out o = run_cfg(&cfgs[3], b, 100, on);
    release(&o);
    o = run_cfg(&cfgs[4], b, 100, off);
    release(&o);
}

static void setup_data(void)
{
    const int64_t max = 300007;
    if (xdata) return;
    xdata = malloc(sizeof *xdata * (size_t)max);
    ydata = malloc(sizeof *ydata * (size_t)max);
    for (int64_t i = 0; i < max; i++) {
        xdata[i] = (int32_t)((i * 7919) % 201) - 100;
        ydata[i] = i % 37 == 5 ? NAN : (double)xdata[i];
    }
}

TEST(sibling_folds_agree_and_share_one_pass)
{
    setup_data();
    REQUIRE(xdata && ydata);
    agree("three siblings", sib3, false);
    agree("fold1 siblings", sib_fold1, true);
    agree("siblings along rows", sib_rows, false);
    agree("siblings of a shared producer", sib_shared, false);
    Kinds on, off;
    kernel_counts(sib3, &on, &off);
    CHECKF(on.fold == 1 && off.fold == 3, "three siblings: %d folds with the planner, %d without", on.fold, off.fold);
    kernel_counts(sib_fold1, &on, &off);
    /* max and first of xs merged; min of ys, an extent not known to be equal, apart */
    CHECKF(on.fold1 == 2 && off.fold1 == 3, "fold1 siblings: %d with the planner, %d without", on.fold1, off.fold1);
    kernel_counts(sib_rows, &on, &off);
    CHECKF(on.fold == 1 && off.fold == 3, "rows: %d folds with the planner, %d without", on.fold, off.fold);
    kernel_counts(sib_shared, &on, &off);
    CHECKF(on.fold == 1 && off.fold == 2 && on.map == 2 && off.map == 1,
           "a shared producer: %d folds and %d maps with the planner (two projections), %d and %d without",
           on.fold, on.map, off.fold, off.map);
}

TEST(filters_fuse_into_folds_that_alone_read_them)
{
    setup_data();
    REQUIRE(xdata && ydata);
    agree("filters into known folds", ff_known, false);
    agree("filters into other folds", ff_pair, false);
    agree("a filter read twice", ff_shared, false);
    agree("a filter read out of order", ff_reversed, false);
    Kinds on, off;
    kernel_counts(ff_known, &on, &off);
    /* four filters (the two equal ones of ys are one after array CSE)
     * and four folds; then no filter, one pass over xs for its two folds
     * and one over ys for its two */
    CHECKF(on.filter == 0 && off.filter == 3 && on.fold == 2 && off.fold == 4,
           "filters into known folds: %d filters and %d folds with the planner, %d and %d without", on.filter,
           on.fold, off.filter, off.fold);
    kernel_counts(ff_pair, &on, &off);
    CHECKF(on.filter == 0 && off.filter == 2 && on.fold == 1 && off.fold == 2,
           "filters into other folds: %d filters and %d folds with the planner, %d and %d without", on.filter,
           on.fold, off.filter, off.fold);
    /* the filter read by the result and a fold: one loop makes both */
    kernel_counts(ff_shared, &on, &off);
    CHECKF(on.filter == 0 && on.fold == 0 && on.loop == 1 && off.filter == 1 && off.fold == 1,
           "a filter read twice: %d filters, %d folds and %d loops with the planner", on.filter, on.fold, on.loop);
    kernel_counts(ff_reversed, &on, &off);
    CHECKF(on.filter == 1 && off.filter == 1, "a filter read out of order: %d filters with the planner", on.filter);
}

TEST(a_zip_read_by_several_consumers_is_not_made)
{
    setup_data();
    REQUIRE(xdata && ydata);
    agree("a zip read by two filters and a fold1", zip_readers, true);
    Kinds on, off;
    kernel_counts(zip_readers, &on, &off);
    CHECKF(on.generate == 0 && off.generate == 1 && on.filter == 0 && on.fold1 == 0 && on.loop == 1,
           "a zip read three times: %d generates, %d filters, %d loops with the planner, %d generates without",
           on.generate, on.filter, on.loop, off.generate);
}

TEST(loops_of_several_generators_agree)
{
    setup_data();
    REQUIRE(xdata && ydata);
    agree("a map and a fold", map_and_fold, false);
    agree("a map read by a fold", map_read_by_fold, false);
    agree("a map and folds along rows", map_fold_rows, false);
    agree("filters and folds of a filter", filters_and_folds, false);
    agree("a filter then a division", filter_then_divide, false);
    Kinds on, off;
    kernel_counts(map_and_fold, &on, &off);
    CHECKF(on.loop == 1 && on.map == 0 && on.fold == 0 && off.fold == 1,
           "a map and a fold: %d loops, %d maps, %d folds with the planner", on.loop, on.map, on.fold);
    kernel_counts(map_read_by_fold, &on, &off);
    CHECKF(on.loop == 1 && on.map == 0 && on.fold == 0 && off.map == 1 && off.fold == 1,
           "a map read by a fold: %d loops, %d maps, %d folds with the planner; %d maps without", on.loop, on.map,
           on.fold, off.map);
    /* the row folds are siblings (one fold of a pair), in a loop with the
     * map; the pair's two projections share a second, small one */
    kernel_counts(map_fold_rows, &on, &off);
    CHECKF(on.loop == 2 && on.fold == 0 && on.map == 0, "rows: %d loops, %d folds, %d maps with the planner",
           on.loop, on.fold, on.map);
    /* "last" of the filter stays a fold of its own (not a selection) */
    kernel_counts(filters_and_folds, &on, &off);
    CHECKF(on.loop == 1 && on.filter == 0 && on.fold == 1 && off.filter == 2 && off.fold == 3,
           "filters and folds: %d loops, %d filters, %d folds with the planner", on.loop, on.filter, on.fold);
    kernel_counts(filter_then_divide, &on, &off);
    CHECKF(on.loop == 1 && on.filter == 0 && on.fold == 0, "a filter then a division: %d loops, %d folds",
           on.loop, on.fold);
}

TEST(epilogues_apply_maps_as_results_are_stored)
{
    setup_data();
    REQUIRE(xdata && ydata);
    agree("maps over folds, scans and a stencil", epilogue_maps, false);
    fail_alike("an epilogue that faults", epilogue_faults);
    Kinds on, off;
    kernel_counts(epilogue_maps, &on, &off);
    /* the scans' maps as they store, the stencil's composed; the row folds
     * are siblings (one pass over the matrix) and the maps of their
     * results, one of them read twice, share a loop */
    CHECKF(on.epilogue == 2 && on.map == 0 && on.loop == 1 && off.epilogue == 0,
           "epilogues: %d with the planner (%d maps, %d loops left)", on.epilogue, on.map, on.loop);
}

/* ------------------------------------------------------------ the plan stage */

/* The clusters of a `--stage plan --json` dump with each node named by
 * its operation: [[fold,fold],[map]]. */
static void clusters_by_op(const char *d, char *out, size_t size)
{
    out[0] = 0;
    const char *c = strstr(d, "\"clusters\":[");
    if (!c) return;
    c += strlen("\"clusters\":");
    size_t o = 0;
    int depth = 0;
    while (*c && o + 24 < size) {
        if (*c == '"') {
            const char *e = strchr(c + 1, '"');
            if (!e) break;
            char key[64];
            snprintf(key, sizeof key, "{\"id\":\"%.*s\",\"op\":\"", (int)(e - c - 1), c + 1);
            const char *k = strstr(d, key);
            const char *op = k ? k + strlen(key) : "?";
            size_t n = k ? strcspn(op, "\"") : 1;
            o += (size_t)snprintf(out + o, size - o, "%.*s", (int)n, op);
            c = e + 1;
            continue;
        }
        if (*c == '[') depth++;
        if (*c == ']' && --depth == 0) {
            out[o++] = ']';
            break;
        }
        out[o++] = *c++;
    }
    out[o] = 0;
}

static long long json_int(const char *d, const char *key)
{
    const char *k = strstr(d, key);
    return k ? atoll(k + strlen(key)) : -1;
}

static void plan_of(const char *prog, unsigned debug, char *clusters, size_t size, long long *obj, long long *obj0)
{
    ax_options o = {0};
    o.debug = debug;
    ax_ctx *cx = ax_ctx_new(&o);
    const ex_program *p = ex_find(prog);
    void *st = p && cx ? p->setup(cx, 10) : NULL;
    char *d = st ? ax_dump(cx, p->build(cx, st), "plan", true) : NULL;
    clusters[0] = 0;
    *obj = *obj0 = -1;
    if (d) {
        clusters_by_op(d, clusters, size);
        *obj = json_int(d, "\"objective\":");
        *obj0 = json_int(d, "\"objective_accelerate\":");
    }
    free(d);
    if (st) p->teardown(st);
    ax_ctx_free(cx);
}

/* Small graphs whose best clustering is known by hand: one cluster per
 * loop of the hand-fused C (bench/baseline_planner.c), and seed 001's
 * example of a map that reads a fold's result (fusion-preventing: two
 * clusters).  QuickHull's two filters and the fold of one of them are
 * one loop, as in the hand-fused C (its two passes: counting and folding,
 * then placing; the zip of the points is copied into it, not made). */
TEST(plan_stage_shows_the_clusters)
{
    static const struct { const char *prog, *want; } golden[] = {
        {"normalise", "[[fold,fold],[map]]"},
        {"meanvar", "[[fold,fold]]"},
        {"filterfold", "[[filter,fold]]"},
        {"mapfold", "[[map,fold]]"},
        {"quickhull", "[[generate],[filter,fold,filter]]"},
        {"dotp", "[[fold]]"},
    };
    for (size_t i = 0; i < sizeof golden / sizeof *golden; i++) {
        char got[256], off[256];
        long long obj, obj0, offobj, offobj0;
        plan_of(golden[i].prog, 0, got, sizeof got, &obj, &obj0);
        CHECKF(!strcmp(got, golden[i].want), "%s: clusters %s, expected %s", golden[i].prog, got, golden[i].want);
        CHECKF(obj >= 0 && obj <= obj0, "%s: objective %lld, Accelerate's %lld", golden[i].prog, obj, obj0);
        /* with the planner off: every loop its own cluster, the objective Accelerate's */
        plan_of(golden[i].prog, AX_DEBUG_NO_PLANNER, off, sizeof off, &offobj, &offobj0);
        CHECKF(offobj == offobj0 && offobj0 == obj0, "%s: planner off: objective %lld / %lld", golden[i].prog,
               offobj, offobj0);
        CHECKF(strstr(off, "],[") || !strchr(off + 1, ','), "%s: planner off: clusters %s", golden[i].prog, off);
    }
    long long obj, obj0;
    char got[256];
    plan_of("normalise", 0, got, sizeof got, &obj, &obj0);
    /* N = 3: the two folds' pair (sharing a0) no longer left apart: 36 - 9 */
    CHECK(obj == 27 && obj0 == 36);
}
