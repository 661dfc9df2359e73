/*
 * The CPU backend's own machinery: its C compiler (one that is missing or
 * fails is a compile error; without one the default backend falls back to
 * the interpreter), its caches (program memory, the memory cache, each
 * kernel a unit of its own in the disk cache, shared across programs;
 * fewer compiler processes than kernels: batches), the progress callback,
 * the checked copies of kernels compiled only when a deferred check first
 * fails, the target attribute of kernels with unrolled-step runs, and that
 * it is the default backend.  On the CPU backend only (what it computes
 * is checked in tests/test_op_*.c).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"
#include "ir.h"
#include "backend/cpu/cg.h"
#include <unistd.h>

static ax_exp f_poly(ax_exp x, void *env) { return ax_add(ax_mul(x, x), ax_mul(ax_f32(3), x)); }

/* ================================================================ the compiler */

TEST(failing_compiler_is_a_compile_error)
{
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

/* A program built again over other data: the context's program memory
 * hands back the compilation it made (nothing prepared); with that off
 * (no-reuse), the kernel comes from the memory cache (prepared, not
 * compiled). */
TEST(second_compile_hits_the_cache)
{
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
TEST(kernels_cached_apart)
{
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
TEST(progress_callback)
{
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
TEST(kernels_batched_when_fewer_processes)
{
    char dir[] = "/tmp/axle-test-batch-XXXXXX";
    REQUIRE(mkdtemp(dir));
    for (int round = 0; round < 2; round++) {
        Progress pg = {0};
        ax_ctx *cx = ctx_units(dir, 1, on_progress, &pg), *ci = kind_ctx(AX_BACKEND_INTERP, false);
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
TEST(checked_copies_on_first_need)
{
    char dir[] = "/tmp/axle-test-checked-XXXXXX";
    REQUIRE(mkdtemp(dir));
    for (int kk = 0; kk < 4; kk++) {
        /* index faults, whose checks the fast kernels defer: a
           backpermute's, an ax_at's, and reads at a constant position
           and index */
        int k = (const int[]){0, 1, 5, 6}[kk];
        ax_ctx *cx = ctx_cache(dir, 2, NULL, NULL), *ci = kind_ctx(AX_BACKEND_INTERP, false);
        REQUIRE(cx && ci);
        CpuCounters c0 = {0}, c1;
        CHECK(ax_run(cx, ops_fault(cx, k)) == NULL);
        CHECK(ax_run(ci, ops_fault(ci, k)) == NULL);
        CHECKF(!strcmp(ax_error(ci), ax_error(cx)), "fault %d: \"%s\" vs \"%s\"", k, ax_error(ci), ax_error(cx));
        REQUIRE(cpu_counters(cx, &c1));
        CHECKF(c1.checked == c0.checked + 1, "fault %d: %lld checked units loaded", k,
               (long long)(c1.checked - c0.checked));
        /* the context is usable afterwards, and the copies stay loaded */
        ax_array *ok = RUN(cx, ax_map(f_poly, NULL, input(cx, AX_F32, 1, SH(999), 5, 0)));
        CHECK(ok != NULL);
        ax_array_release(ok);
        CHECK(ax_run(cx, ops_fault(cx, k)) == NULL);
        CHECKF(!strcmp(ax_error(ci), ax_error(cx)), "fault %d again: \"%s\" vs \"%s\"", k, ax_error(ci),
               ax_error(cx));
        ax_ctx_free(cx);
        ax_ctx_free(ci);
    }
    /* a program that runs without a fault loads none */
    ax_ctx *cx = ctx_cache(dir, 2, NULL, NULL);
    REQUIRE(cx);
    ax_array *r = RUN(cx, ax_backpermute(ax_ix1(ax_i64(500)), ops_shift, (void *)(intptr_t)0,
                                         input(cx, AX_I32, 1, SH(1000), 6, 5)));
    CHECK(r != NULL);
    ax_array_release(r);
    CpuCounters c;
    REQUIRE(cpu_counters(cx, &c));
    CHECK_EQ_I(c.checked, 0);
    ax_ctx_free(cx);
    remove_cache_dir(dir);
}

TEST(cpu_is_the_default_backend)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_program *pr = ax_compile(cx, b_dotp(cx, 10));
    REQUIRE(pr);
    CHECK(!strcmp(ax_program_stats(pr)->backend, "cpu"));
    ax_program_free(pr);
    ax_ctx_free(cx);
}

/* ================================================================ vector widths */

/* Chains of zip_with steps (tests/test_op_map.c) and while loops across
 * lanes (tests/test_op_control.c). */

static ax_exp u_start(ax_exp c, void *env) { return ax_tuple3(c, ax_neg(c), ax_i32(0)); }
static ax_exp u_step(ax_exp c, ax_exp s, void *env)
{
    ax_exp a = ax_get(s, 0), b = ax_get(s, 1);
    ax_exp nx = ax_tuple3(ax_add(b, c), ax_sub(ax_mul(a, ax_f32(1.5f)), c), ax_add(ax_get(s, 2), ax_i32(1)));
    return ax_cond(ax_gt(ax_mul(a, a), ax_f32(1000)), s, nx);
}
static ax_exp u_end(ax_exp s, void *env) { return ax_tuple2(ax_get(s, 1), ax_get(s, 2)); }

static ax_acc b_unrolled(ax_ctx *cx, int64_t n)
{
    ax_acc cs = input(cx, AX_F32, 1, &n, 14, 20);
    ax_acc zs = ax_map(u_start, NULL, cs);
    for (int k = 0; k < 40; k++) zs = ax_zip_with(u_step, NULL, cs, zs);
    return ax_map(u_end, NULL, zs);
}

/* A kernel with unrolled-step runs is compiled for 256-bit vectors
 * (cg_exp.c gen_run: measured faster; GCC's attribute, left out for
 * Clang), a kernel of while lanes is not. */
TEST(kernels_with_unrolled_steps_prefer_256_bit_vectors)
{
    ax_ctx *cd = kind_ctx(AX_BACKEND_CPU, false);
    REQUIRE(cd);
    char *c = ax_dump(cd, b_unrolled(cd, 1000), "c", false);
    REQUIRE(c);
    CHECKF(strstr(c, "__attribute__((target(\"prefer-vector-width=256\")))\n#endif\nvoid axk_") != NULL,
           "no 256-bit kernel in a unit with runs");
    free(c);
    c = ax_dump(cd, ax_generate(cd, ax_ix1(ax_i64(1000)), ops_lanes_at, NULL), "c", false);
    REQUIRE(c);
    CHECK(strstr(c, "prefer-vector-width") == NULL);
    free(c);
    ax_ctx_free(cd);
}
