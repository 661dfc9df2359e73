/*
 * Loop-invariant code motion of array terms out of awhile bodies
 * (src/opt/licm.c): a body term that reads none of the loop's variables is
 * computed once, before the loop, guarded by the loop's condition; a term
 * that reads them stays; a loop that runs zero times does not compute (or
 * fault in) the moved term; nested loops; and the results are the
 * unoptimised interpreter's, on the interpreter and the CPU backend, with
 * the pass on and off.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

static const double xv[6] = {1, 2, 3, 4, 5, 6};

typedef struct Env {
    ax_ctx *cx;
    ax_acc xs;
    double limit;
    int64_t bad;    /* an index read by the invariant term (out of bounds: a fault) */
} Env;

static ax_acc below(ax_acc x, void *env)
{
    Env *e = env;
    return ax_unit(e->cx, ax_lt(ax_at_linear(x, ax_i64(0)), ax_f64(e->limit)));
}

static ax_exp add2(ax_exp x, ax_exp s, void *env) { (void)env; return ax_add(x, s); }
static ax_exp sq(ax_exp x, void *env) { (void)env; return ax_mul(x, x); }
static ax_exp read_bad(ax_exp x, void *env)
{
    Env *e = env;
    return ax_add(x, ax_at_linear(e->xs, ax_i64(e->bad)));
}

/* x + sum (map sq xs) (+ xs[bad]): the sum is loop-invariant */
static ax_acc step(ax_acc x, void *env)
{
    Env *e = env;
    ax_acc s = ax_fold(ax_fn_add, NULL, ax_f64(0), ax_map(e->bad >= 0 ? read_bad : sq, e, e->xs));
    ax_slice spec[1] = {ax_fixed(ax_size(x))};
    return ax_zip_with(add2, NULL, x, ax_replicate(1, spec, s));
}

/* x + sum x: nothing invariant */
static ax_acc step_variant(ax_acc x, void *env)
{
    (void)env;
    ax_slice spec[1] = {ax_fixed(ax_size(x))};
    return ax_zip_with(add2, NULL, x, ax_replicate(1, spec, ax_fold(ax_fn_add, NULL, ax_f64(0), x)));
}

/* x + map heavy xs (+ xs[bad]): before fusion the map is a subterm of
 * the zipWith, which fusion would inline into the body's kernel */
static ax_exp heavy(ax_exp x, void *env)
{
    Env *e = env;
    ax_exp h = ax_sqrt(ax_add(ax_mul(x, ax_f64(0.5)), ax_f64(1)));   /* exact: the same bits everywhere */
    return e->bad >= 0 ? ax_add(h, ax_at_linear(e->xs, ax_i64(e->bad))) : h;
}
static ax_acc step_fused(ax_acc x, void *env)
{
    Env *e = env;
    return ax_zip_with(add2, NULL, x, ax_map(heavy, e, e->xs));
}

/* the same with the array given to use() inside the body */
static ax_acc step_fused_use(ax_acc x, void *env)
{
    Env *e = env;
    int64_t n = 6;
    ax_acc u = ax_use(e->cx, ax_array_wrap(e->cx, AX_F64, 1, &n, (void *)xv));
    return ax_zip_with(add2, NULL, x, ax_map(heavy, e, u));
}

/* x + map heavy (replicate 6 (sum xs)): the sum moves, the map of the
 * replicate (larger than what it is made of) stays fused in the body */
static ax_acc step_replicated(ax_acc x, void *env)
{
    Env *e = env;
    ax_slice spec[1] = {ax_fixed(ax_i64(6))};
    ax_acc r = ax_replicate(1, spec, ax_fold(ax_fn_add, NULL, ax_f64(0), e->xs));
    return ax_zip_with(add2, NULL, x, ax_map(heavy, e, r));
}

/* if x[0] > 3 then x + map heavy xs else x + 1: the branch may not run */
static ax_exp inc1(ax_exp x, void *env) { (void)env; return ax_add(x, ax_f64(1)); }
static ax_acc step_branch(ax_acc x, void *env)
{
    Env *e = env;
    ax_exp c = ax_gt(ax_at_linear(x, ax_i64(0)), ax_f64(3));
    return ax_acond(c, ax_zip_with(add2, NULL, x, ax_map(heavy, e, e->xs)), ax_map(inc1, NULL, x));
}

typedef ax_acc (*Build)(Env *e);

static ax_acc prog_invariant(Env *e) { return ax_awhile(below, step, e, ax_map(ax_fn_id, NULL, e->xs)); }
static ax_acc prog_variant(Env *e) { return ax_awhile(below, step_variant, e, ax_map(ax_fn_id, NULL, e->xs)); }

/* an outer loop whose body is an inner loop with the invariant sum */
/* an inner loop of `inner` steps over x, its limit twice the outer's */
static ax_acc inner_loop(ax_acc x, Env *e, ax_afn inner)
{
    Env *in = malloc(sizeof *in);   /* freed once ax_awhile has called both functions */
    *in = *e;
    in->limit = e->limit * 2;
    ax_acc r = ax_awhile(below, inner, in, x);
    free(in);
    return r;
}
static ax_acc outer_step(ax_acc x, void *env) { return inner_loop(x, env, step); }
static ax_acc prog_nested(Env *e) { return ax_awhile(below, outer_step, e, ax_map(ax_fn_id, NULL, e->xs)); }
static ax_acc prog_fused(Env *e) { return ax_awhile(below, step_fused, e, ax_map(ax_fn_id, NULL, e->xs)); }
static ax_acc prog_fused_use(Env *e) { return ax_awhile(below, step_fused_use, e, ax_map(ax_fn_id, NULL, e->xs)); }
static ax_acc prog_replicated(Env *e) { return ax_awhile(below, step_replicated, e, ax_map(ax_fn_id, NULL, e->xs)); }
static ax_acc prog_branch(Env *e) { return ax_awhile(below, step_branch, e, ax_map(ax_fn_id, NULL, e->xs)); }
static ax_acc outer_fused(ax_acc x, void *env) { return inner_loop(x, env, step_fused); }
static ax_acc prog_nested_fused(Env *e) { return ax_awhile(below, outer_fused, e, ax_map(ax_fn_id, NULL, e->xs)); }

/* counted loops, the inner one's count fixed: its condition reads only
 * its counter, which starts at 0 in every outer step, so the term moves
 * out of both loops */
static ax_acc for_inner(ax_exp step, ax_acc x, void *env)
{
    (void)step;
    return step_fused(x, env);
}
static ax_acc for_outer(ax_exp step, ax_acc x, void *env)
{
    (void)step;
    return ax_for(ax_i64(3), for_inner, env, x);
}
static ax_acc prog_nested_for(Env *e)
{
    return ax_for(ax_i64((int64_t)e->limit), for_outer, e, ax_map(ax_fn_id, NULL, e->xs));   /* limit: the count */
}

static const struct { const char *name; ax_backend_kind be; unsigned debug; } cfgs[] = {
    {"interp/unoptimised", AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION | AX_DEBUG_NO_SIMPLIFY | AX_DEBUG_NO_CSE},
    {"interp", AX_BACKEND_INTERP, 0},
    {"interp/no-licm", AX_BACKEND_INTERP, AX_DEBUG_NO_LICM},
    {"interp/no-cse", AX_BACKEND_INTERP, AX_DEBUG_NO_CSE},
    {"cpu", AX_BACKEND_CPU, 0},
    {"cpu/no-licm", AX_BACKEND_CPU, AX_DEBUG_NO_LICM},
};
#define NCFG ((int)(sizeof cfgs / sizeof *cfgs))

/* Runs b in every configuration: the same values, or a failure everywhere. */
static void agree(const char *what, Build b, double limit, int64_t bad, bool want_fail)
{
    double ref[6];
    for (int c = 0; c < NCFG; c++) {
        ax_options o = {0};
        o.backend = cfgs[c].be;
        o.debug = cfgs[c].debug;
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        int64_t n = 6;
        Env e = {cx, ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, (void *)xv)), limit, bad};
        ax_array *out = ax_run(cx, b(&e));
        CHECKF(!out == want_fail, "%s: %s: %s", what, cfgs[c].name, out ? "ran" : ax_error(cx));
        if (out && ax_array_size(out) == 6) {
            const double *v = ax_array_data(out, 0);
            if (c == 0) memcpy(ref, v, sizeof ref);
            else CHECKF(!memcmp(ref, v, sizeof ref), "%s: %s differs from the unoptimised interpreter", what,
                        cfgs[c].name);
        }
        ax_array_release(out);
        ax_ctx_free(cx);
    }
}

/* The program after optimisation, as text. */
static char *optimised(Build b, double limit, unsigned debug)
{
    ax_options o = {0};
    o.debug = debug;
    ax_ctx *cx = ax_ctx_new(&o);
    int64_t n = 6;
    Env e = {cx, ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, (void *)xv)), limit, -1};
    char *d = ax_dump(cx, b(&e), "fusion", false);
    ax_ctx_free(cx);
    return d;
}

static int count_of(const char *d, const char *what)
{
    int n = 0;
    for (const char *q = d; (q = strstr(q, what)); q += strlen(what)) n++;
    return n;
}

TEST(an_invariant_term_moves_before_the_loop)
{
    agree("invariant sum", prog_invariant, 1000, -1, false);
    char *d = optimised(prog_invariant, 1000, 0), *off = optimised(prog_invariant, 1000, AX_DEBUG_NO_LICM);
    REQUIRE(d && off);
    const char *loop = strstr(d, "awhile"), *loop_off = strstr(off, "awhile");
    REQUIRE(loop && loop_off);
    /* with the pass: the fold before the loop, under the guard; without: in the body */
    CHECKF(strstr(d, "fold") && strstr(d, "fold") < loop && !strstr(loop, "fold") && strstr(d, "acond"),
           "with the pass:\n%s", d);
    CHECKF(strstr(loop_off, "fold"), "without the pass:\n%s", off);
    free(d), free(off);
}

TEST(a_term_reading_the_loop_stays)
{
    agree("variant sum", prog_variant, 1000, -1, false);
    char *d = optimised(prog_variant, 1000, 0);
    REQUIRE(d);
    const char *loop = strstr(d, "awhile");
    CHECKF(loop && strstr(loop, "fold") && !strstr(d, "acond"), "%s", d);
    free(d);
}

/* b's invariant term reads xs[bad]: out of bounds (1000) a fault, but
 * only if the loop runs (limit 0: xs[0] = 1 is not below it, so it does
 * not); when it runs, every configuration faults; an in-bounds read
 * through the same path runs. */
static void guarded(const char *what, Build b)
{
    char m[3][160];
    snprintf(m[0], sizeof m[0], "%s: zero iterations, a faulting invariant", what);
    snprintf(m[1], sizeof m[1], "%s: iterations, a faulting invariant", what);
    snprintf(m[2], sizeof m[2], "%s: iterations, an in-bounds invariant", what);
    agree(m[0], b, 0, 1000, false);
    agree(m[1], b, 1000, 1000, true);
    agree(m[2], b, 1000, 5, false);
}

TEST(a_loop_that_does_not_run_computes_nothing_it_would_not)
{
    guarded("a sum", prog_invariant);
}

/* Is `what` in the first loop (the outer) but before the second (the
 * inner), once? */
static bool between_loops(const char *d, const char *what)
{
    const char *outer = strstr(d, "awhile"), *inner = outer ? strstr(outer + 1, "awhile") : NULL;
    const char *w = strstr(d, what);
    return outer && inner && w && outer < w && w < inner && count_of(d, what) == 1;
}

TEST(nested_loops)
{
    agree("nested", prog_nested, 100, -1, false);
    char *d = optimised(prog_nested, 100, 0);
    REQUIRE(d);
    /* the inner loop's sum moves out of the inner loop, not out of the
     * outer one: its guard reads the inner loop's initial value, which is
     * the outer loop's variable */
    CHECKF(between_loops(d, "fold"), "%s", d);
    free(d);
}

/* The text of the loop (from its awhile on) and of what comes before it. */
static bool before_loop(const char *d, const char *what)
{
    const char *loop = strstr(d, "awhile"), *w = strstr(d, what);
    return loop && w && w < loop && !strstr(loop, what);
}
static bool in_loop(const char *d, const char *what)
{
    const char *loop = strstr(d, "awhile");
    return loop && strstr(loop, what) && !(strstr(d, what) < loop);
}

TEST(a_producer_fusion_would_put_in_the_body_moves)
{
    agree("fused invariant", prog_fused, 1000, -1, false);
    agree("fused invariant, use in the body", prog_fused_use, 1000, -1, false);
    char *d = optimised(prog_fused, 1000, 0), *off = optimised(prog_fused, 1000, AX_DEBUG_NO_LICM);
    char *u = optimised(prog_fused_use, 1000, 0);
    REQUIRE(d && off && u);
    /* with the pass: sqrt once, before the loop (guarded); without: in the body's kernel */
    CHECKF(before_loop(d, "sqrt") && strstr(d, "acond"), "with the pass:\n%s", d);
    CHECKF(in_loop(off, "sqrt"), "without the pass:\n%s", off);
    CHECKF(before_loop(u, "sqrt") && before_loop(u, "use"), "a use in the body:\n%s", u);
    free(d), free(off), free(u);
}

TEST(a_moved_producer_is_guarded)
{
    guarded("a map fused into the body", prog_fused);
}

TEST(what_does_not_move)
{
    /* a map of a replicate stays (storing it would take more than its
     * sources); the sum under it moves */
    agree("replicated", prog_replicated, 1000, -1, false);
    char *d = optimised(prog_replicated, 1000, 0);
    REQUIRE(d);
    CHECKF(before_loop(d, "fold") && in_loop(d, "sqrt"), "%s", d);
    free(d);
    /* under an acond's branch: it may not run, so it stays */
    agree("branch", prog_branch, 1000, -1, false);
    agree("branch, a faulting term that never runs", prog_branch, 2, 1000, false);
    d = optimised(prog_branch, 1000, 0);
    REQUIRE(d);
    CHECKF(in_loop(d, "sqrt"), "%s", d);
    free(d);
}

TEST(nested_loops_fused)
{
    agree("nested, fused", prog_nested_fused, 100, -1, false);
    char *d = optimised(prog_nested_fused, 100, 0);
    REQUIRE(d);
    /* out of the inner loop (its guard reads the outer loop's variable) */
    CHECKF(between_loops(d, "sqrt"), "%s", d);
    free(d);
    agree("nested counted loops, fused", prog_nested_for, 4, -1, false);
    agree("nested counted loops, a faulting fused invariant", prog_nested_for, 4, 1000, true);
    agree("nested counted loops run zero times, a faulting fused invariant", prog_nested_for, 0, 1000, false);
    d = optimised(prog_nested_for, 4, 0);
    REQUIRE(d);
    CHECKF(before_loop(d, "sqrt") && count_of(d, "sqrt") == 1, "%s", d);
    free(d);
}
