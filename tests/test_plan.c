/*
 * The planner's rewrites (src/opt/plan*.c): sibling folds over one extent
 * become one pass, a filter read only by a fold fuses into it.  Every
 * program runs on the interpreter and the CPU backend with the planner on
 * and off, and the results must be bit for bit the unoptimised
 * interpreter's (integer data, and float data whose sums are exact, with
 * NaNs for min and max); non-commutative associative operators (affine
 * maps composed in order, "last", "first") check that the order of
 * operands survives the merge and the chunked parallel combine; sizes 0,
 * 1, odd and large (several chunks on every thread).  The kernel counts
 * say that the rewrites happened, and did not where they must not.
 * Longer than most files: every planner rewrite has its section here, so
 * the on/off comparison helpers are shared rather than copied.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "programs.h"
#include "opt/plangraph.h"
#include "randprog.h"
#ifndef RANDPROG_LINKED
#include "randprog.c"
#endif
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

/* The planner's settings for the contexts made while they are in force
 * (AXLE_PLANNER, AXLE_PLANNER_LIMIT, AXLE_CBC; NULL: unset).  A generous
 * limit by default: a loaded machine must not turn a test's ILP greedy. */
typedef struct Planner { const char *planner, *limit, *cbc; } Planner;
static const Planner ILP = {"ilp", "60000", NULL}, CBC = {"cbc", "60000", NULL}, GREEDY = {"greedy", NULL, NULL};

static ax_ctx *ctx_with(const Planner *pl, unsigned debug, ax_backend_kind backend)
{
    static const char *const vars[3] = {"AXLE_PLANNER", "AXLE_PLANNER_LIMIT", "AXLE_CBC"};
    const char *vals[3] = {pl ? pl->planner : NULL, pl ? pl->limit : NULL, pl ? pl->cbc : NULL};
    char *was[3] = {NULL, NULL, NULL};
    /* (AXLE_CBC is left as the environment has it unless pl names a
     * library: AXLE_CBC=/nonexistent runs the tests as on a machine
     * without CBC) */
    for (int i = 0; i < 3 && pl; i++) {
        if (i == 2 && !vals[i]) continue;
        const char *w = getenv(vars[i]);
        was[i] = w ? strdup(w) : NULL;
        if (vals[i]) setenv(vars[i], vals[i], 1);
        else unsetenv(vars[i]);
    }
    ax_options o = {0};
    o.debug = debug;
    o.backend = backend;
    ax_ctx *cx = ax_ctx_new(&o);
    for (int i = 0; i < 3 && pl; i++) {
        if (i == 2 && !vals[i]) continue;
        if (was[i]) setenv(vars[i], was[i], 1);
        else unsetenv(vars[i]);
        free(was[i]);
    }
    return cx;
}


typedef struct Cfg {
    const char *name;
    ax_backend_kind backend;
    unsigned debug;
    const Planner *pl;   /* NULL: the environment's (the ILP when CBC loads) */
} Cfg;

static const Cfg cfgs[] = {
    {"interp/unoptimised", AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION | AX_DEBUG_NO_SIMPLIFY | AX_DEBUG_NO_CSE, NULL},
    {"interp", AX_BACKEND_INTERP, 0, &ILP},
    {"interp/no-planner", AX_BACKEND_INTERP, AX_DEBUG_NO_PLANNER, NULL},
    {"cpu", AX_BACKEND_CPU, AX_DEBUG_VERIFY, &ILP},
    {"cpu/no-planner", AX_BACKEND_CPU, AX_DEBUG_NO_PLANNER, NULL},
    {"interp/greedy-planner", AX_BACKEND_INTERP, 0, &GREEDY},
    {"cpu/greedy-planner", AX_BACKEND_CPU, AX_DEBUG_VERIFY, &GREEDY},
    {"opencl", AX_BACKEND_OPENCL, AX_DEBUG_VERIFY, &ILP},
    /* the planner's last two steps off, each alone (indices 8, 9) */
    {"cpu/no-loops", AX_BACKEND_CPU, AX_DEBUG_VERIFY | AX_DEBUG_NO_LOOPS, &ILP},
    {"cpu/no-epilogues", AX_BACKEND_CPU, AX_DEBUG_VERIFY | AX_DEBUG_NO_EPILOGUES, &ILP},
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
    ax_ctx *cx = ctx_with(c->pl, c->debug, c->backend);
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

/* A map over a filter's result that nothing else reads: applied as the
 * filter stores the elements it keeps, and only to those (1000 / x, the
 * zeros dropped: applied to every element it would fault); one kernel.
 * Over a filter of a filter too (the filters one, then the map its
 * epilogue). */
static ax_acc filter_then_map(const In *in) { return ax_map(thousand_by, NULL, ax_filter(nonzero, NULL, in->xs)); }
static ax_acc filters_then_map(const In *in)
{
    return ax_map(thousand_by, NULL, ax_filter(odd, NULL, ax_filter(nonzero, NULL, in->xs)));
}

TEST(a_map_of_a_filter_is_its_epilogue)
{
    setup_data();
    REQUIRE(xdata && ydata);
    agree("a map of a filter", filter_then_map, false);
    agree("a map of a filter of a filter", filters_then_map, false);
    Kinds on, off;
    kernel_counts(filter_then_map, &on, &off);
    CHECKF(on.epilogue == 1 && on.map == 0 && on.generate == 0 && on.filter == 1 && off.epilogue == 0 &&
           off.filter == 1,
           "a map of a filter: %d epilogues, %d maps, %d generates (planner off: %d epilogues, %d filters)",
           on.epilogue, on.map, on.generate, off.epilogue, off.filter);
    kernel_counts(filters_then_map, &on, &off);
    CHECKF(on.epilogue == 1 && on.map == 0 && on.filter == 1 && off.filter == 2,
           "a map of two filters: %d epilogues, %d maps, %d filters (planner off: %d filters)", on.epilogue, on.map,
           on.filter, off.filter);
}

/* Each of the planner's last two steps turns off alone: the loops
 * (the map and the fold apart again; the filter's folds still read its
 * input, the step before) and the epilogues (the maps passes again). */
TEST(the_loop_and_epilogue_steps_turn_off_alone)
{
    setup_data();
    REQUIRE(xdata && ydata);
    Kinds k;
    Out o = run_cfg(&cfgs[8], map_read_by_fold, 100, &k);
    CHECKF(o.ok && k.loop == 0 && k.map == 2 && k.fold == 1, "no-loops: a map read by a fold: %d loops, %d maps, "
           "%d folds", k.loop, k.map, k.fold);
    release(&o);
    o = run_cfg(&cfgs[8], epilogue_maps, 100, &k);
    CHECKF(o.ok && k.loop == 0 && k.epilogue == 2, "no-loops: %d loops, %d epilogues", k.loop, k.epilogue);
    release(&o);
    o = run_cfg(&cfgs[9], epilogue_maps, 100, &k);
    CHECKF(o.ok && k.epilogue == 0 && k.loop == 1, "no-epilogues: %d epilogues, %d loops", k.epilogue, k.loop);
    release(&o);
}

/* ------------------------------------------------------------ the plan stage */

/* The clusters of a `--stage plan --json` dump with each node named by
 * its operation: [[fold,fold],[map]]. */
static void clusters_by_op_at(const char *d, const char *from, char *out, size_t size)
{
    out[0] = 0;
    const char *c = strstr(from, "\"clusters\":[");
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

static void clusters_by_op(const char *d, char *out, size_t size) { clusters_by_op_at(d, d, out, size); }

static long long json_int(const char *d, const char *key)
{
    const char *k = strstr(d, key);
    return k ? atoll(k + strlen(key)) : -1;
}

/* The `--stage plan --json` dump of a built-in program (prog) or of b. */
static char *dump_plan(const char *prog, Build b, unsigned debug, const Planner *pl)
{
    ax_ctx *cx = ctx_with(pl, debug, AX_BACKEND_DEFAULT);
    char *d = NULL;
    if (prog) {
        const ex_program *p = ex_find(prog);
        void *st = p && cx ? p->setup(cx, 10) : NULL;
        d = st ? ax_dump(cx, p->build(cx, st), "plan", true) : NULL;
        if (st) p->teardown(st);
    } else if (cx) {
        In in;
        make_inputs(cx, 100, &in);
        d = ax_dump(cx, b(&in), "plan", true);
    }
    ax_ctx_free(cx);
    return d;
}

/* CBC can be loaded here (else the tests that need it say so and skip):
 * two folds that may share a pass, solved. */
static bool cbc_here(char *why, size_t size)
{
    ax_ctx *cx = ctx_with(&CBC, 0, AX_BACKEND_DEFAULT);
    PlanGraph *g = plan_graph_new();
    bool ok = false;
    snprintf(why, size, "out of memory");
    if (cx && g && plan_graph_add(g, 0, OP_FOLD, 0, 0, -1, false, 1) == 0 &&
        plan_graph_add(g, 1, OP_FOLD, 0, 0, -1, false, 1) == 1 && plan_graph_allow(g, 0, 1) == 0 &&
        plan_graph_finish(g) == 0) {
        PlanChoice ch;
        if (plan_choose(cx, g, &ch, true) == 0) {
            ok = ch.solver == PLAN_CBC;
            snprintf(why, size, "%s", ch.why);
            plan_choice_free(&ch);
        }
    }
    plan_graph_free(g);
    ax_ctx_free(cx);
    return ok;
}

#define SKIP_WITHOUT_CBC()                                                                      \
    do {                                                                                        \
        char why_[200];                                                                         \
        if (!cbc_here(why_, sizeof why_)) {                                                     \
            printf("skip: CBC cannot be loaded here (%s): the greedy planner runs\n", why_);    \
            return;                                                                             \
        }                                                                                       \
    } while (0)

static void plan_of(const char *prog, unsigned debug, char *clusters, size_t size, long long *obj, long long *obj0)
{
    char *d = dump_plan(prog, NULL, debug, &ILP);
    clusters[0] = 0;
    *obj = *obj0 = -1;
    if (d) {
        clusters_by_op(d, clusters, size);
        *obj = json_int(d, "\"objective\":");
        *obj0 = json_int(d, "\"objective_accelerate\":");
    }
    free(d);
}

/* The JSON string value of key in d ("" if none). */
static void json_str_of(const char *d, const char *key, char *out, size_t size)
{
    const char *k = d ? strstr(d, key) : NULL;
    out[0] = 0;
    if (!k) return;
    k += strlen(key);
    if (*k == '"') k++;
    size_t n = strcspn(k, "\"");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), k);
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

/* The same programs with the ILP (when CBC loads), with CBC asked to
 * solve even where every pair in one pass is legal (presolve: no search
 * needed), and with the greedy planner: all pick the clusters above;
 * where the rewrites offer no pair no solver runs. */
TEST(plan_stage_ilp_and_greedy_agree_on_the_golden_programs)
{
    SKIP_WITHOUT_CBC();
    static const struct { const char *prog, *solver; } golden[] = {
        {"normalise", "presolve"}, {"meanvar", "presolve"}, {"filterfold", "presolve"}, {"quickhull", "none"},
        {"dotp", "none"},
    };
    for (size_t i = 0; i < sizeof golden / sizeof *golden; i++) {
        char *a = dump_plan(golden[i].prog, NULL, 0, &ILP), *g = dump_plan(golden[i].prog, NULL, 0, &GREEDY);
        char *c = dump_plan(golden[i].prog, NULL, 0, &CBC);
        REQUIRE(a && g && c);
        char solver[32], gsolver[32], csolver[32], why[200], ca[256], cg[256], cc[256];
        json_str_of(a, "\"solver\":", solver, sizeof solver);
        json_str_of(g, "\"solver\":", gsolver, sizeof gsolver);
        json_str_of(c, "\"solver\":", csolver, sizeof csolver);
        json_str_of(g, "\"solver_why\":", why, sizeof why);
        clusters_by_op(a, ca, sizeof ca);
        clusters_by_op(g, cg, sizeof cg);
        clusters_by_op(c, cc, sizeof cc);
        CHECKF(!strcmp(solver, golden[i].solver), "%s: solver %s, expected %s", golden[i].prog, solver, golden[i].solver);
        CHECKF(!strcmp(csolver, strcmp(golden[i].solver, "none") ? "cbc" : "none") && !strcmp(cc, ca) &&
               json_int(c, "\"objective\":") == json_int(a, "\"objective\":"),
               "%s: CBC asked: solver %s, clusters %s", golden[i].prog, csolver, cc);
        CHECKF(!strcmp(gsolver, "greedy") && !strcmp(why, "AXLE_PLANNER=greedy"), "%s: forced greedy: %s (%s)",
               golden[i].prog, gsolver, why);
        /* the rewrites carried out the ILP's clusters; the greedy planner's are the same */
        CHECKF(strstr(a, "\"agrees\":true") != NULL, "%s: the rewrites did not make the ILP's clusters", golden[i].prog);
        CHECKF(!strcmp(ca, cg), "%s: ILP %s, greedy %s", golden[i].prog, ca, cg);
        /* (the loops and epilogues after the ILP's rewrites only merge
         * further: the objective made is at most the ILP's own) */
        CHECKF(json_int(a, "\"objective\":") == json_int(g, "\"objective\":") &&
               json_int(strstr(a, "\"ilp\":"), "\"objective\":") >= json_int(a, "\"objective\":"),
               "%s: objectives ILP %lld (its own %lld), greedy %lld", golden[i].prog, json_int(a, "\"objective\":"),
               json_int(strstr(a, "\"ilp\":"), "\"objective\":"), json_int(g, "\"objective\":"));
        free(a), free(g), free(c);
    }
}

/* A program where the greedy planner's first fit is not seed 001's best:
 * a = sum xs; l = a fold of ys that reads a; b = maximum xs; c and d, two
 * more folds of xs that read l.  The greedy planner merges a with b (the
 * first fold after it), then c and d, which read l, bound after a:
 * {a, b} {c, d}, four pairs of folds of xs left apart.  The ILP puts b
 * with c and d instead (l is bound before b): {a} {b, c, d}, three. */
static ax_exp min_with(ax_exp x, ax_exp y, void *env)   /* on f64, with an i32 */
{
    ax_acc s = *(ax_acc *)env;
    return ax_min(ax_min(x, y), ax_cvt(ax_at_linear(s, ax_i64(0)), AX_F64));
}
static ax_exp max_with(ax_exp x, ax_exp y, void *env)   /* on i32, with an f64 */
{
    ax_acc s = *(ax_acc *)env;
    return ax_max(ax_max(x, y), ax_cvt(ax_at_linear(s, ax_i64(0)), AX_I32));
}
static ax_exp min_with_i(ax_exp x, ax_exp y, void *env)
{
    ax_acc s = *(ax_acc *)env;
    return ax_min(ax_min(x, y), ax_cvt(ax_at_linear(s, ax_i64(0)), AX_I32));
}
static ax_acc first_fit(const In *in)
{
    ax_acc a = ax_fold(ax_fn_add, NULL, ax_i32(0), in->xs);
    ax_acc l = ax_fold(min_with, &a, ax_f64(0), in->ys);
    ax_acc r[3] = {ax_fold(ax_fn_max, NULL, ax_i32(0), in->xs), ax_fold(max_with, &l, ax_i32(0), in->xs),
                   ax_fold(min_with_i, &l, ax_i32(0), in->xs)};
    return ax_atuple(3, r);
}

TEST(ilp_beats_the_greedy_first_fit)
{
    SKIP_WITHOUT_CBC();
    setup_data();
    REQUIRE(xdata && ydata);
    agree("the greedy first fit", first_fit, false);
    char *a = dump_plan(NULL, first_fit, 0, &ILP), *g = dump_plan(NULL, first_fit, 0, &GREEDY);
    REQUIRE(a && g);
    char ca[256], cg[256], ia[256];
    clusters_by_op(a, ca, sizeof ca);
    clusters_by_op(g, cg, sizeof cg);
    const char *il = strstr(a, "\"ilp\":");
    clusters_by_op_at(a, il ? il : "", ia, sizeof ia);
    long long oa = json_int(a, "\"objective\":"), og = json_int(g, "\"objective\":");
    CHECKF(strstr(a, "\"solver\":\"cbc\"") != NULL, "not solved by CBC");
    printf("  ILP %s objective %lld; greedy %s objective %lld\n", ca, oa, cg, og);
    CHECKF(strstr(a, "\"agrees\":true") != NULL && !strcmp(ia, ca), "the rewrites made %s, the ILP chose %s", ca, ia);
    /* the loops in chain order: a, l, b, c, d */
    CHECKF(!strcmp(ca, "[[fold],[fold],[fold,fold,fold]]"), "ILP: %s", ca);
    CHECKF(!strcmp(cg, "[[fold,fold],[fold],[fold,fold]]"), "greedy: %s", cg);
    /* one pair of folds of xs fewer apart: N^2 = 25 less */
    CHECKF(oa >= 0 && oa + 25 == og, "objectives: ILP %lld, greedy %lld", oa, og);
    free(a), free(g);
}

/* ------------------------------------------------------------ the ILP (src/opt/ilp.c) */

/* Hand-made loop graphs: one chain, every loop's array read as its id;
 * deps are reads (all direct), pairs the ones the rewrites could merge. */
typedef struct Hand {
    const char *name;
    int n;
    struct { Op op; int tau, genr, made; bool whole; int input; } node[8];
    int ndep;
    int dep[12][2];
    int npair;
    int pair[24][2];
    int readers[8][8];   /* a whole node's readers, -1 ended */
} Hand;

static PlanGraph *hand_graph(const Hand *h)
{
    PlanGraph *g = plan_graph_new();
    if (!g) return NULL;
    for (int i = 0; i < h->n; i++) {
        if (plan_graph_add(g, i, h->node[i].op, 0, h->node[i].tau, h->node[i].genr, h->node[i].whole,
                           h->node[i].made) != i ||
            plan_graph_input(g, i, 100 + h->node[i].input) != 0)
            goto bad;
    }
    for (int k = 0; k < h->ndep; k++)
        if (plan_graph_read(g, h->dep[k][0], h->dep[k][1], true) != 0) goto bad;
    for (int k = 0; k < h->npair; k++)
        if (plan_graph_allow(g, h->pair[k][0], h->pair[k][1]) != 0) goto bad;
    if (plan_graph_finish(g) != 0) goto bad;
    return g;
bad:
    plan_graph_free(g);
    return NULL;
}

/* The test's own reading of the rules, independent of the ILP: may i and
 * j share a pass (one of the pairs, or a whole node's company: whatever
 * shares a pass with all its readers)? */
static bool hand_pair(const Hand *h, int i, int j)
{
    for (int k = 0; k < h->npair; k++)
        if ((h->pair[k][0] == i && h->pair[k][1] == j) || (h->pair[k][0] == j && h->pair[k][1] == i)) return true;
    for (int s = 0; s < 2; s++) {
        int w = s ? j : i, y = s ? i : j;
        if (!h->node[w].whole || h->readers[w][0] < 0) continue;
        bool all = true;
        for (int r = 0; r < 8 && h->readers[w][r] >= 0 && all; r++) all = h->readers[w][r] != y && hand_pair(h, h->readers[w][r], y);
        if (all) return true;
    }
    return false;
}

static bool hand_reads(const Hand *h, int from, int to)
{
    for (int k = 0; k < h->ndep; k++)
        if (h->dep[k][0] == from && h->dep[k][1] == to) return true;
    return false;
}

/* Seed 001's objective of a clustering, or -1 where it is not legal: pairs
 * in a cluster may share a pass, a size type differs only with the
 * generator in, a whole node is with all its readers, the clusters are
 * acyclic. */
static long long hand_value(const Hand *h, const int *cl)
{
    int n = h->n;
    long long N = n, obj = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (cl[i] != cl[j]) {
                bool heavy = hand_reads(h, i, j) || hand_reads(h, j, i) || h->node[i].input == h->node[j].input;
                obj += heavy ? N * N : 1;
                continue;
            }
            if (!hand_pair(h, i, j)) return -1;
            if (h->node[i].tau != h->node[j].tau) {
                int gi = h->node[i].genr, gj = h->node[j].genr;
                if ((gi < 0 && gj < 0) || (gi >= 0 && cl[gi] != cl[i]) || (gj >= 0 && cl[gj] != cl[j])) return -1;
            }
        }
    for (int w = 0; w < n; w++) {
        bool alone = true, readers_in = true;
        for (int j = 0; j < n; j++) alone &= j == w || cl[j] != cl[w];
        for (int r = 0; r < 8 && h->readers[w][r] >= 0; r++) readers_in &= cl[h->readers[w][r]] == cl[w];
        if (h->node[w].whole && !alone && !readers_in) return -1;
        /* made: always, never, or unless every reader shares its pass */
        bool made = h->node[w].made != 0;
        if (h->node[w].made < 0) {
            made = false;
            for (int j = 0; j < n; j++) made |= hand_reads(h, w, j) && cl[j] != cl[w];
        }
        obj += made ? N : 0;
    }
    /* acyclic: a cluster reached from itself through another one */
    bool reach[8][8];
    memset(reach, 0, sizeof reach);
    for (int k = 0; k < h->ndep; k++)
        if (cl[h->dep[k][0]] != cl[h->dep[k][1]]) reach[cl[h->dep[k][0]]][cl[h->dep[k][1]]] = true;
    for (int k = 0; k < n; k++)
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) reach[a][b] |= reach[a][k] && reach[k][b];
    for (int a = 0; a < n; a++)
        if (reach[a][a]) return -1;
    return obj;
}

/* The best clustering by enumeration of every set partition (restricted
 * growth strings). */
static long long hand_best(const Hand *h, int *best)
{
    int n = h->n, cl[8] = {0}, mx[9] = {0};
    long long lo = -1;
    for (;;) {
        long long v = hand_value(h, cl);
        if (v >= 0 && (lo < 0 || v < lo)) {
            lo = v;
            memcpy(best, cl, sizeof cl);
        }
        int i = n - 1;
        while (i > 0 && cl[i] > mx[i - 1]) i--;
        if (i == 0) break;
        cl[i]++;
        for (int j = 1; j < n; j++) mx[j] = mx[j - 1] > cl[j] ? mx[j - 1] : cl[j];
        for (int j = i + 1; j < n; j++) cl[j] = 0;
        for (int j = 1; j < n; j++) mx[j] = mx[j - 1] > cl[j] ? mx[j - 1] : cl[j];
    }
    return lo;
}

/* "{0,1,2}{3,4}" */
static void partition_str(int n, const int *cl, char *out, size_t size)
{
    size_t o = 0;
    bool done[8] = {false};
    out[0] = 0;
    for (int i = 0; i < n && o + 8 < size; i++) {
        if (done[i]) continue;
        o += (size_t)snprintf(out + o, size - o, "{");
        for (int j = i; j < n; j++)
            if (!done[j] && cl[j] == cl[i]) o += (size_t)snprintf(out + o, size - o, "%s%d", j > i ? "," : "", j), done[j] = true;
        o += (size_t)snprintf(out + o, size - o, "}");
    }
}

/* Graphs whose best clustering is known by hand (and found again here by
 * enumeration): seed 001's examples and the rules one at a time.  The
 * ILP's clusters and objective must be the enumeration's. */
TEST(ilp_finds_the_best_clustering_of_small_graphs)
{
    SKIP_WITHOUT_CBC();
    static const Hand hands[] = {
        /* the seed authors' normalize2: sum1 = fold xs; gts = filter xs;
         * sum2 = fold gts; ys1 = map (/ sum1) xs; ys2 = map (/ sum2) xs.
         * Best: {sum1, gts, sum2} {ys1, ys2}; gts not made */
        {"normalize2", 5,
         {{OP_FOLD, 0, -1, 1, false, 0}, {OP_FILTER, 0, -1, -1, false, 0}, {OP_FOLD, 1, 1, 1, false, 1},
          {OP_MAP, 0, -1, 1, false, 0}, {OP_MAP, 0, -1, 1, false, 0}},
         3, {{1, 2}, {0, 3}, {2, 4}},
         8, {{0, 1}, {0, 2}, {0, 4}, {1, 2}, {1, 3}, {1, 4}, {2, 3}, {3, 4}},
         {{-1}, {-1}, {-1}, {-1}, {-1}}},
        /* a map reading a fold's result (fusion-preventing): apart */
        {"map after fold", 2, {{OP_FOLD, 0, -1, 1, false, 0}, {OP_MAP, 0, -1, 1, false, 0}}, 1, {{0, 1}}, 0, {{0}},
         {{-1}, {-1}}},
        /* a and c could share a pass, but b, between them, can join
         * neither: together they would be a cycle (the path a -> b -> c
         * prevents fusion: the pair has no variable) */
        {"no cycle", 3, {{OP_MAP, 0, -1, 1, false, 0}, {OP_MAP, 0, -1, 1, false, 1}, {OP_MAP, 0, -1, 1, false, 2}},
         2, {{0, 1}, {1, 2}}, 1, {{0, 2}}, {{-1}, {-1}, {-1}}},
        /* four folds of one array: (0,1) and (1,2), (1,3), (2,3) may share
         * a pass, 0 with nothing else: {0} {1,2,3} leaves three pairs apart,
         * a first fit {0,1} {2,3} four */
        {"first fit loses", 4,
         {{OP_FOLD, 0, -1, 1, false, 0}, {OP_FOLD, 0, -1, 1, false, 0}, {OP_FOLD, 0, -1, 1, false, 0},
          {OP_FOLD, 0, -1, 1, false, 0}},
         0, {{0}}, 4, {{0, 1}, {1, 2}, {1, 3}, {2, 3}}, {{-1}, {-1}, {-1}, {-1}}},
        /* a fold over a filter's output and one over its input: together
         * only with the filter (its size's generator) */
        {"size generator", 3,
         {{OP_FILTER, 0, -1, -1, false, 0}, {OP_FOLD, 1, 0, 1, false, 1}, {OP_FOLD, 0, -1, 1, false, 0}},
         1, {{0, 1}}, 3, {{0, 1}, {1, 2}, {0, 2}}, {{-1}, {-1}, {-1}}},
        /* a producer inlined into two folds or into none; a third fold of
         * another array may join them */
        {"whole producer", 4,
         {{OP_MAP, 0, -1, -1, true, 0}, {OP_FOLD, 0, -1, 1, false, 1}, {OP_FOLD, 0, -1, 1, false, 1},
          {OP_FOLD, 0, -1, 1, false, 2}},
         2, {{0, 1}, {0, 2}}, 5, {{0, 1}, {0, 2}, {1, 2}, {1, 3}, {2, 3}}, {{1, 2, -1}, {-1}, {-1}, {-1}}},
    };
    for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < sizeof hands / sizeof *hands; k++) {
        /* the ILP (a presolve, then CBC), then CBC asked for every one */
        ax_ctx *cx = ctx_with(pass ? &CBC : &ILP, 0, AX_BACKEND_DEFAULT);
        REQUIRE(cx);
        const Hand *h = &hands[k];
        int best[8], got[8];
        long long lo = hand_best(h, best);
        PlanGraph *g = hand_graph(h);
        REQUIRE(g && lo >= 0);
        PlanChoice ch;
        REQUIRE(plan_choose(cx, g, &ch, true) == 0);
        /* (a pair with a fusion-preventing path between has no variable:
         * where none is left no solver runs) */
        CHECKF(ch.solver == (!ch.nx ? PLAN_NONE : pass ? PLAN_CBC : ch.solver == PLAN_PRESOLVE ? PLAN_PRESOLVE : PLAN_CBC),
               "%s: solver %d (%s)", h->name, (int)ch.solver, ch.why);
        for (int i = 0; i < h->n; i++) {
            got[i] = i;
            for (int j = 0; j < i; j++)
                if (plan_together(ch.cl, i, j)) {
                    got[i] = got[j];
                    break;
                }
        }
        char a[96], b[96];
        partition_str(h->n, got, a, sizeof a);
        partition_str(h->n, best, b, sizeof b);
        CHECKF(ch.cl && ch.objective == lo && hand_value(h, got) == lo, "%s: the ILP chose %s (objective %lld, by "
               "the test's rules %lld), the best is %s (%lld)", h->name, a, (long long)ch.objective,
               hand_value(h, got), b, lo);
        printf("  %-16s %s  objective %lld  (%s: %d x, %d c, %d pi, %d rows, %.2f ms)\n", h->name, a,
               (long long)ch.objective, ch.solver == PLAN_CBC ? "cbc" : ch.solver == PLAN_PRESOLVE ? "presolve" : "none",
               ch.nx, ch.nc, ch.npi, ch.nrows, ch.solve_ms);
        plan_choice_free(&ch);
        plan_graph_free(g);
        ax_ctx_free(cx);
    }
    /* the seed's answers, as the hand says */
    char s[96];
    int cl[8];
    hand_best(&hands[0], cl);
    partition_str(5, cl, s, sizeof s);
    CHECKF(!strcmp(s, "{0,1,2}{3,4}"), "normalize2: %s", s);
    hand_best(&hands[3], cl);
    partition_str(4, cl, s, sizeof s);
    CHECKF(!strcmp(s, "{0}{1,2,3}"), "first fit: %s", s);
    hand_best(&hands[2], cl);
    partition_str(3, cl, s, sizeof s);
    CHECKF(!strcmp(s, "{0}{1}{2}"), "no cycle: %s", s);
}

/* Without an ILP solve, the greedy planner, and the dump says why: past
 * the time limit (one far shorter than any solve), without CBC (a library
 * that is not there), and asked for.  The clusters are the greedy
 * planner's, and the program's results the same. */
TEST(greedy_when_the_ilp_cannot_run)
{
    char why_cbc[200];
    bool cbc = cbc_here(why_cbc, sizeof why_cbc);
    if (!cbc) printf("skip: the time limit (CBC cannot be loaded here: %s)\n", why_cbc);
    setup_data();
    REQUIRE(xdata && ydata);
    static const Planner late = {"cbc", "0.000001", NULL}, missing = {"cbc", "60000", "/nonexistent/libCbcSolver.so.3"};
    static const struct { const Planner *pl; const char *why; } cases[] = {
        {&late, "past the time limit"}, {&missing, "CBC is not installed"}, {&GREEDY, "AXLE_PLANNER=greedy"},
    };
    for (size_t k = cbc ? 0 : 1; k < sizeof cases / sizeof *cases; k++) {
        for (int prog = 0; prog < 2; prog++) {
            char *d = prog ? dump_plan(NULL, first_fit, 0, cases[k].pl) : dump_plan("normalise", NULL, 0, cases[k].pl);
            char *g = prog ? dump_plan(NULL, first_fit, 0, &GREEDY) : dump_plan("normalise", NULL, 0, &GREEDY);
            REQUIRE(d && g);
            char solver[32], why[200], cd[256], cg[256];
            json_str_of(d, "\"solver\":", solver, sizeof solver);
            json_str_of(d, "\"solver_why\":", why, sizeof why);
            clusters_by_op(d, cd, sizeof cd);
            clusters_by_op(g, cg, sizeof cg);
            CHECKF(!strcmp(solver, "greedy") && strstr(why, cases[k].why), "case %zu: solver %s (%s), expected greedy "
                   "(%s)", k, solver, why, cases[k].why);
            CHECKF(!strcmp(cd, cg) && !strstr(d, "\"ilp\":"), "case %zu: clusters %s, greedy's %s", k, cd, cg);
            free(d), free(g);
        }
        /* and the program runs as the greedy planner's */
        Out ref = run_cfg(&cfgs[0], first_fit, 1001, NULL);
        Cfg c = {"fallback", AX_BACKEND_INTERP, 0, cases[k].pl};
        Out o = run_cfg(&c, first_fit, 1001, NULL);
        CHECKF(ref.ok && o.ok && o.n == ref.n, "case %zu: ran %d / %d", k, o.ok, ref.ok);
        for (int i = 0; i < o.n && i < ref.n; i++) CHECKF(same(o.a[i], ref.a[i]), "case %zu: result %d differs", k, i);
        release(&o);
        release(&ref);
    }
}

/* ------------------------------------------------------------ random programs */

/* For random programs (tests/randprog.c, which makes sibling folds and
 * folds of filters): the ILP's clusters are legal (no fusion-preventing
 * edge inside one, no cycle between them), the rewrites carry them out,
 * and seed 001's objective of them is no worse than the greedy planner's,
 * which is no worse than Accelerate's fusion alone. */
static int node_index(char names[][16], int n, const char *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], s, len)) return i;
    return -1;
}

/* Node names ("id") in order, and each one's cluster in the array of
 * arrays of names that follows key. */
static int parse_nodes(const char *d, char names[][16], int max)
{
    int n = 0;
    for (const char *p = d; (p = strstr(p, "{\"id\":\"")) && n < max; n++) {
        p += 7;
        size_t len = strcspn(p, "\"");
        snprintf(names[n], 16, "%.*s", (int)(len < 15 ? len : 15), p);
    }
    return n;
}

static bool parse_clusters(const char *from, char names[][16], int n, int *cl)
{
    const char *p = strstr(from, "\"clusters\":[");
    if (!p) return false;
    p += strlen("\"clusters\":[");
    int c = 0, depth = 1;
    for (int i = 0; i < n; i++) cl[i] = -1;
    for (; *p && depth > 0; p++) {
        if (*p == '[') depth++;
        else if (*p == ']') {
            if (--depth == 1) c++;
        } else if (*p == '"') {
            size_t len = strcspn(p + 1, "\"");
            int i = node_index(names, n, p + 1, len);
            if (i < 0) return false;
            cl[i] = c;
            p += len + 1;
        }
    }
    for (int i = 0; i < n; i++)
        if (cl[i] < 0) return false;
    return true;
}

TEST(ilp_clusters_of_random_programs_are_legal_and_no_worse)
{
    SKIP_WITHOUT_CBC();
    RandProgConfig pc;
    randprog_default_config(&pc);
    int nseeds = (int)(getenv("AXLE_TEST_PLAN_SEEDS") ? atoi(getenv("AXLE_TEST_PLAN_SEEDS")) : 400), solved = 0;
    for (int seed = 0; seed < nseeds; seed++) {
        char *d[3] = {NULL, NULL, NULL}, why[256] = "";
        for (int k = 0; k < (seed % 4 ? 2 : 3); k++) {
            ax_ctx *cx = ctx_with(k == 2 ? &CBC : k ? &GREEDY : &ILP, 0, AX_BACKEND_DEFAULT);
            RandProg *rp = NULL;
            ax_acc p = cx ? randprog_build(cx, (uint64_t)seed, &pc, &rp) : NULL;
            d[k] = p ? ax_dump(cx, p, "plan", true) : NULL;
            if (!d[k] && cx && !why[0]) {
                const char *desc = rp ? randprog_describe(rp) : NULL, *gf = desc ? strstr(desc, "# GENERATION FAILED: ") : NULL;
                snprintf(why, sizeof why, "%s", p ? ax_error(cx) : gf ? gf + 2 : "the generator failed");
            }
            randprog_free(rp);
            ax_ctx_free(cx);
        }
        if (!d[0] || !d[1] || (seed % 4 == 0 && !d[2])) {
            CHECKF(false, "seed %d: no dump: %s", seed, why);
            free(d[0]), free(d[1]), free(d[2]);
            continue;
        }
        char solver[32];
        json_str_of(d[0], "\"solver\":", solver, sizeof solver);
        solved += strcmp(solver, "none") != 0;
        /* a presolve's answer is CBC's */
        if (d[2]) CHECKF(json_int(d[2], "\"objective\":") == json_int(d[0], "\"objective\":"), "seed %d: CBC's "
                         "objective %lld, the ILP's %lld (%s)", seed, json_int(d[2], "\"objective\":"),
                         json_int(d[0], "\"objective\":"), solver);
        static char names[PLAN_MAXNODES][16];
        static int cl[PLAN_MAXNODES];
        int n = parse_nodes(d[0], names, PLAN_MAXNODES);
        const char *il = strstr(d[0], "\"ilp\":");
        CHECKF(il && parse_clusters(il, names, n, cl), "seed %d: no ILP clusters (solver %s)", seed, solver);
        if (il && parse_clusters(il, names, n, cl)) {
            /* no fusion-preventing edge inside a cluster; the edges between
             * clusters acyclic (a cluster reaching itself) */
            static bool reach[PLAN_MAXNODES][PLAN_MAXNODES];
            int nc = 0;
            for (int i = 0; i < n; i++) nc = cl[i] + 1 > nc ? cl[i] + 1 : nc;
            for (int a = 0; a < nc; a++) memset(reach[a], 0, (size_t)nc);
            for (const char *e = d[0]; (e = strstr(e, "{\"from\":\"")); e++) {
                const char *f = e + 9, *t = strstr(f, "\"to\":\"");
                if (!t) break;
                t += 6;
                int i = node_index(names, n, f, strcspn(f, "\"")), j = node_index(names, n, t, strcspn(t, "\""));
                bool prevents = !strncmp(strstr(t, "\"kind\":\"") + 8, "fusion-preventing", 17);
                REQUIRE(i >= 0 && j >= 0);
                CHECKF(!(prevents && cl[i] == cl[j]), "seed %d: a fusion-preventing edge %s -> %s in one cluster", seed,
                       names[i], names[j]);
                if (cl[i] != cl[j]) reach[cl[i]][cl[j]] = true;
            }
            for (int k = 0; k < nc; k++)
                for (int a = 0; a < nc; a++)
                    if (reach[a][k])
                        for (int b = 0; b < nc; b++) reach[a][b] |= reach[k][b];
            for (int a = 0; a < nc; a++) CHECKF(!reach[a][a], "seed %d: the clusters are cyclic", seed);
        }
        CHECKF(strstr(d[0], "\"agrees\":true") != NULL, "seed %d: the rewrites did not make the ILP's clusters", seed);
        long long oi = json_int(d[0], "\"objective\":"), og = json_int(d[1], "\"objective\":"),
                  oa = json_int(d[1], "\"objective_accelerate\":");
        CHECKF(oi >= 0 && oi <= og && og <= oa, "seed %d: objectives ILP %lld, greedy %lld, Accelerate %lld", seed, oi,
               og, oa);
        free(d[0]), free(d[1]), free(d[2]);
    }
    printf("  %d seeds, the ILP solved %d (by presolve or CBC)\n", nseeds, solved);
    CHECK(solved > nseeds / 20);
}
