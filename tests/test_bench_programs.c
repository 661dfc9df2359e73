/*
 * The benchmark programs of the paper's Table 2: N-body,
 * Mandelbrot (unrolled and while), fluid flow and Canny, at their test
 * sizes, on the interpreter, the CPU backend and OpenCL, each with the optimiser's
 * switches default / no fusion / no sharing / no simplify; every result is
 * checked against the program's plain-C reference and against both
 * variants of its hand-written baseline (without and with -ffast-math),
 * with the tolerances each program states in its header comment.
 *
 * A compiling backend is skipped, with a note, where ax_compile reports
 * AX_ERR_BACKEND (not built, or not available on this machine).
 *
 * One configuration is expected to fail: fluid without sharing recovery.
 * Each Jacobi sweep reads the previous sweep and the sweep's right-hand
 * side (the divergence, itself a stencil over the velocity), so the
 * unfolded tree grows by a factor of about the sweep count per projection
 * and multiplies across the step's phases: sharing recovery refuses it
 * (AX_ERR_NOMEM, "unfolds to more than ... nodes"), the counterpart of the
 * paper's "out of memory" entries in Table 2.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "programs.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const ex_program ex_prog_nbody, ex_prog_mandelbrot, ex_prog_mandelbrot_while, ex_prog_fluid,
    ex_prog_canny;

static const ex_program *const progs[] = {
    &ex_prog_nbody, &ex_prog_mandelbrot, &ex_prog_mandelbrot_while, &ex_prog_fluid, &ex_prog_canny,
};
#define NPROGS ((int)(sizeof progs / sizeof *progs))

static const struct { unsigned flags; const char *name; } switches[] = {
    {0, "default"},
    {AX_DEBUG_NO_FUSION, "no-fusion"},
    {AX_DEBUG_NO_SHARING, "no-sharing"},
    {AX_DEBUG_NO_SIMPLIFY, "no-simplify"},
};
#define NSWITCHES ((int)(sizeof switches / sizeof *switches))

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int64_t test_size(const ex_program *p) { return p->test_size ? p->test_size : p->default_size; }

/* A configuration that must fail to compile, and how. */
static const struct { const char *program; unsigned flags; ax_status status; } expected_failures[] = {
    {"fluid", AX_DEBUG_NO_SHARING, AX_ERR_NOMEM},
};

static int expected_failure(const ex_program *p, unsigned flags, ax_status *st)
{
    for (size_t i = 0; i < sizeof expected_failures / sizeof *expected_failures; i++)
        if (!strcmp(expected_failures[i].program, p->name) && expected_failures[i].flags == flags) {
            *st = expected_failures[i].status;
            return 1;
        }
    return 0;
}

/* Runs p at size n with the given backend and switches; checks the result
 * against the reference and (if `baselines`) both baseline variants.
 * Returns 0 if all agree (or the configuration failed as expected), 1 if
 * the backend is unavailable, -1 on failure. */
static int run_one(const ex_program *p, int64_t n, ax_backend_kind be, unsigned flags, bool baselines,
                   double *run_ms)
{
    ax_options o = {0};
    o.backend = be;
    o.debug = flags;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) return -1;
    void *st = p->setup(cx, n);
    if (!st) {
        fprintf(stderr, "%s: setup failed: %s\n", p->name, ax_error(cx));
        ax_ctx_free(cx);
        return -1;
    }
    int rc = -1;
    ax_status want;
    bool must_fail = expected_failure(p, flags, &want);
    ax_program *pr = ax_compile(cx, p->build(cx, st));
    if (!pr) {
        if (ax_status_of(cx) == AX_ERR_BACKEND) rc = 1;
        else if (must_fail && ax_status_of(cx) == want) {
            fprintf(stderr, "  %s: fails as expected: %s\n", p->name, ax_error(cx));
            rc = 0;
        } else fprintf(stderr, "%s: compile: %s\n", p->name, ax_error(cx));
        goto done;
    }
    if (must_fail) {
        fprintf(stderr, "%s: compiled, but was expected to fail (status %d)\n", p->name, (int)want);
        ax_program_free(pr);
        goto done;
    }
    const char *ran = ax_program_stats(pr)->backend;
    if (be == AX_BACKEND_CPU && (!ran || strcmp(ran, "cpu"))) {
        fprintf(stderr, "%s: asked for the CPU backend, got %s\n", p->name, ran ? ran : "(none)");
        ax_program_free(pr);
        goto done;
    }
    ax_array *res[8];
    double t0 = now_ms();
    int nres = ax_program_run(pr, res, 8);
    if (run_ms) *run_ms = now_ms() - t0;
    if (nres < 0) {
        fprintf(stderr, "%s: run: %s\n", p->name, ax_error(cx));
        ax_program_free(pr);
        goto done;
    }
    char msg[512];
    rc = 0;
    if (p->check(st, res, nres, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s (size %lld): reference: %s\n", p->name, (long long)n, msg);
        rc = -1;
    }
    for (int v = 0; baselines && v < 2; v++) {
        if (p->baseline(st, v) != 0) {
            fprintf(stderr, "%s: baseline %d failed\n", p->name, v);
            rc = -1;
        } else if (p->check_baseline(st, res, nres, msg, sizeof msg) != 0) {
            fprintf(stderr, "%s (size %lld): baseline %s: %s\n", p->name, (long long)n, v ? "fast" : "std", msg);
            rc = -1;
        }
    }
    for (int i = 0; i < nres; i++) ax_array_release(res[i]);
    ax_program_free(pr);
done:
    p->teardown(st);
    ax_ctx_free(cx);
    return rc;
}

TEST(bench_programs_registered)
{
    for (int i = 0; i < NPROGS; i++) {
        CHECKF(ex_find(progs[i]->name) == progs[i], "%s is not in ex_programs[]", progs[i]->name);
        CHECK(progs[i]->baseline && progs[i]->check_baseline);
        CHECK(progs[i]->bench_size > 0 && progs[i]->test_size > 0);
    }
}

/* Every program and switch on the interpreter, against the reference and
 * both baselines. */
TEST(bench_programs_interp)
{
    for (int i = 0; i < NPROGS; i++) {
        const ex_program *p = progs[i];
        for (int s = 0; s < NSWITCHES; s++) {
            double ms = 0;
            int rc = run_one(p, test_size(p), AX_BACKEND_INTERP, switches[s].flags, true, &ms);
            CHECKF(rc == 0, "%s, interp, %s", p->name, switches[s].name);
            fprintf(stderr, "  %-17s interp %-12s size %-6lld %8.1f ms\n", p->name, switches[s].name,
                    (long long)test_size(p), ms);
        }
    }
}

/* The same on a compiling backend, when there is one. */
static void programs_on(ax_backend_kind b, const char *bname)
{
    for (int i = 0; i < NPROGS; i++) {
        const ex_program *p = progs[i];
        for (int s = 0; s < NSWITCHES; s++) {
            double ms = 0;
            int rc = run_one(p, test_size(p), b, switches[s].flags, true, &ms);
            if (rc == 1) {
                fprintf(stderr, "  note: the %s backend is not available (AX_ERR_BACKEND): skipped\n", bname);
                return;
            }
            CHECKF(rc == 0, "%s, %s, %s", p->name, bname, switches[s].name);
            fprintf(stderr, "  %-17s %-6s %-12s size %-6lld %8.1f ms\n", p->name, bname, switches[s].name,
                    (long long)test_size(p), ms);
        }
    }
}

TEST(bench_programs_cpu) { programs_on(AX_BACKEND_CPU, "cpu"); }
TEST(bench_programs_opencl) { programs_on(AX_BACKEND_OPENCL, "opencl"); }
/* (skipped with a note where no CUDA device is: scripts/gpu-check.sh runs it on one) */
TEST(bench_programs_cuda) { programs_on(AX_BACKEND_CUDA, "cuda"); }

/* Edge sizes (empty, one element, small odd sizes) on the interpreter. */
TEST(bench_programs_edge_sizes)
{
    static const int64_t sizes[] = {0, 1, 2, 7, 30};
    for (int i = 0; i < NPROGS; i++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            CHECKF(run_one(progs[i], sizes[k], AX_BACKEND_INTERP, 0, true, NULL) == 0, "%s size %lld",
                   progs[i]->name, (long long)sizes[k]);
}
