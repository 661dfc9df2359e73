/*
 * The public suites' programs (PolyBench/C, Rodinia; examples/polybench,
 * examples/rodinia) at their small test sizes, on the interpreter, the CPU
 * backend and OpenCL (skipped, with a note, where there is none), with the
 * default pipeline and without fusion: each result is checked against the
 * program's plain-C reference, and against both of its hand-written
 * baselines (the suite's serial loop and the parallel one), each in both
 * builds (without and with -ffast-math).  Sizes 0 and 1 run on the
 * interpreter and the CPU backend.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "programs.h"
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; unsigned flags; } switches[] = {
    {"default", 0},
    {"no-fusion", AX_DEBUG_NO_FUSION},
};

/* Runs p at size n on one backend with one switch setting; checks the
 * result against the reference and every baseline.  Returns 1 if the
 * backend is not available (a skip), else 0. */
static int run_checked(const ex_program *p, int64_t n, ax_backend_kind backend, const char *bname,
                       unsigned flags, const char *sname, bool baselines)
{
    ax_options o = {0};
    o.backend = backend;
    o.debug = flags | AX_DEBUG_VERIFY;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) { CHECK(cx); return 0; }
    void *st = p->setup(cx, n);
    int skipped = 0;
    if (!st) {
        CHECKF(st, "%s: setup failed: %s", p->name, ax_error(cx));
        ax_ctx_free(cx);
        return 0;
    }
    ax_program *pr = ax_compile(cx, p->build(cx, st));
    if (!pr && ax_status_of(cx) == AX_ERR_BACKEND) {
        fprintf(stderr, "note: %s on %s (%s) skipped: %s\n", p->name, bname, sname, ax_error(cx));
        skipped = 1;
    } else {
        CHECKF(pr, "%s n=%lld on %s (%s): %s", p->name, (long long)n, bname, sname, ax_error(cx));
    }
    if (pr) {
        ax_array *res[8];
        int nres = ax_program_run(pr, res, 8);
        CHECKF(nres >= 1, "%s n=%lld on %s (%s): %s", p->name, (long long)n, bname, sname, ax_error(cx));
        if (nres >= 1) {
            char msg[512] = "";
            CHECKF(p->check(st, res, nres, msg, sizeof msg) == 0, "%s n=%lld on %s (%s): %s", p->name,
                   (long long)n, bname, sname, msg);
            for (int k = 0; baselines && k < 4; k++) {
                int v = k & 1;
                int (*fn)(void *, int) = k < 2 ? p->baseline : p->baseline_serial;
                const char *which = k < 2 ? "parallel" : "serial";
                CHECKF(fn(st, v) == 0, "%s: the %s baseline (%s) failed", p->name, which,
                       v ? "fastmath" : "std");
                msg[0] = 0;
                CHECKF(p->check_baseline(st, res, nres, msg, sizeof msg) == 0,
                       "%s n=%lld on %s (%s) against the %s baseline (%s): %s", p->name, (long long)n, bname,
                       sname, which, v ? "fastmath" : "std", msg);
            }
            for (int i = 0; i < nres; i++) ax_array_release(res[i]);
        }
        ax_program_free(pr);
    }
    p->teardown(st);
    ax_ctx_free(cx);
    return skipped;
}

static void suite_on(const char *suite, ax_backend_kind backend, const char *bname, bool edges)
{
    const ex_program *const *list = ex_suite(suite);
    REQUIRE(list);
    int skipped = 0, count = 0;
    for (const ex_program *const *pp = list; *pp; pp++, count++) {
        const ex_program *p = *pp;
        CHECKF(!strcmp(p->suite ? p->suite : "", suite), "%s is listed in %s but says suite %s", p->name,
               suite, p->suite ? p->suite : "(none)");
        CHECKF(ex_suite_find(p->name) == p, "%s: another program has its name", p->name);
        CHECKF(p->baseline && p->baseline_serial && p->check_baseline && p->test_size > 0 &&
                   p->bench_size > 0,
               "%s lacks its baselines or sizes", p->name);
        if (!p->baseline || !p->baseline_serial || !p->check_baseline) continue;
        for (size_t s = 0; s < sizeof switches / sizeof *switches; s++)
            skipped += run_checked(p, p->test_size, backend, bname, switches[s].flags, switches[s].name, true);
        for (int64_t n = 0; edges && n < 2; n++) run_checked(p, n, backend, bname, 0, "edge size", true);
    }
    if (skipped) fprintf(stderr, "note: %d runs on %s skipped (backend unavailable)\n", skipped, bname);
    fprintf(stderr, "%s: %d programs on %s\n", suite, count, bname);
}

TEST(polybench_interp) { suite_on("polybench", AX_BACKEND_INTERP, "interp", true); }
TEST(polybench_cpu) { suite_on("polybench", AX_BACKEND_CPU, "cpu", true); }
TEST(polybench_opencl) { suite_on("polybench", AX_BACKEND_OPENCL, "opencl", false); }
TEST(rodinia_interp) { suite_on("rodinia", AX_BACKEND_INTERP, "interp", true); }
TEST(rodinia_cpu) { suite_on("rodinia", AX_BACKEND_CPU, "cpu", true); }
TEST(rodinia_opencl) { suite_on("rodinia", AX_BACKEND_OPENCL, "opencl", false); }

TEST(suites_are_known)
{
    CHECK(ex_suite("polybench") && ex_suite("rodinia"));
    CHECK(ex_suite("spec") == NULL && ex_suite(NULL) == NULL);
    CHECK(ex_suite_find("no-such-program") == NULL);
}
