/*
 * axle bench: Table 2 of the Accelerate paper (McDonell et al., "Optimising
 * Purely Functional GPU Programs", ICFP 2013, s.5) on this machine.
 *
 *   axle bench [PROGRAM...] [--size N | --sizes N,N,...] [--runs N]
 *              [--backend interp|cpu|cuda|opencl] [--json] [--matrix FILE]
 *              [--mem-limit BYTES] [--threads N] [--max-time SECONDS]
 *              [--json-file FILE]
 *
 * For each program (default: every built-in program with a hand-written
 * baseline, except the extra ones, which are not Table 2 programs and run
 * only when named: the single-skeleton micro-benchmarks and
 * radixsort-lsd8) and size, these
 * configurations, as the columns of Table 2:
 *
 *   fused      the default pipeline
 *   noplanner  AX_DEBUG_NO_PLANNER: Accelerate's fusion only, without the
 *              planner's multi-generator loops (src/opt/plan*.c)
 *   nofusion   AX_DEBUG_NO_FUSION: every operation its own kernel
 *   nosharing  AX_DEBUG_NO_SHARING and AX_DEBUG_NO_CSE: the graph unfolded
 *              into a tree, and no common-subexpression elimination (of
 *              scalar terms or of arrays) to find its sharing again: what
 *              the seeds' "-sharing" measured.  (The C compiler's own CSE
 *              stays: it sees one kernel's code, not the arrays a tree
 *              computes twice.)
 *   fast       ax_options.fast_math (relaxed floating point), to be
 *              compared with baseline-fastmath as `fused` is with
 *              baseline-std
 *   finite     ax_options.finite_math (fast, and no NaN or infinity, as
 *              -ffast-math assumes): baseline-fastmath's like for like
 *   baseline   the hand-written C (OpenMP, SIMD, -O3 -march=native), the
 *              faster of its two builds, which are also reported apart as
 *              baseline-std (without -ffast-math) and baseline-fastmath
 *   baseline-cuda  with --backend cuda: the hand-written CUDA of
 *              bench/cuda/baselines.cu (cuBLAS, cuSPARSE, CUB, kernels),
 *              a library built where nvcc exists, loaded from beside the
 *              axle command (or AXLE_CUDA_BASELINES), run where a GPU is;
 *              the median device time of its runs; then "the" baseline
 *
 * With --suite polybench|rodinia (examples/polybench, examples/rodinia),
 * each program of that suite runs fused and fast only, against four C rows:
 * the parallel baseline (baseline-std, baseline-fastmath) and the suite's
 * own serial loop nest (serial-std, serial-fastmath); "the" baseline is the
 * fastest of the four, and a last line gives the geometric means of
 * axle's ratios to it and how many programs are within 1.2x.
 *
 * Each is timed as the median of --runs runs (default 5) after one
 * warm-up run, the configurations of a program taking turns run by run
 * (time_rounds: a drift of the machine's speed falls on all of them
 * alike, so the ratios hold still).  Compile time is measured apart, as the seeds factor it
 * out (s.5.1): compile_ms is the first ax_compile of the program in a
 * fresh context (sharing recovery, optimisation, code generation and the
 * C compiler, or a load from the disk cache if an earlier run left the
 * kernels there), compile_cached_ms a second compile of the same program
 * in that context (the memory cache).
 *
 * Every axle result is checked against the plain-C reference (check) and
 * against both baseline builds (check_baseline); a baseline row is checked
 * against the fused result.  A configuration that cannot run (the memory
 * limit refusing the O(n^2) intermediate of unfused N-body, s.5.4; an
 * unavailable backend) is reported in its row with the error, the run
 * column reading "out of memory" as Table 2 does, and the bench goes on;
 * the table's check column reads "-" for a refusal for memory (nothing ran
 * to check) and "fail" otherwise; the JSON's check is "fail" with an
 * "error" for both.
 *
 * The baselines' OpenMP runs with OMP_WAIT_POLICY=passive unless the
 * environment sets it: libgomp's default spins at barriers, and when the
 * machine has any other work a spinning thread holds its core until the
 * scheduler's next tick (measured on a loaded 2-core machine: dot product
 * of 10^7 in 20 ms spinning, 8 ms passive).  axle's own pool likewise
 * stops spinning after 100 us (src/runtime/pool.c).  libgomp reads the
 * variable when it is loaded, so the command re-executes itself with it.
 *
 * Exit status: 0 if every result that was produced is right and every
 * configuration ran or was refused for memory (a baseline that could not be
 * checked because axle was refused does not count); 1 otherwise; 2 for bad
 * arguments.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle.h"
#include "programs.h"
#include "tools.h"
#include "smvm.h"
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int axle_bench(int argc, char **argv);

enum { MAX_RES = 8, MAX_SIZES = 32, MAX_PROGS = 64 };
/* --suite's target: within 1.2x of the faster C baseline. */
#define SUITE_TARGET 1.2

typedef struct {
    const ex_program **progs;
    int nprogs;
    int64_t sizes[MAX_SIZES];
    int nsizes;
    int runs;
    double max_time_ms;     /* per configuration; 0: no limit */
    bool json;
    const char *suite;      /* --suite: that suite's programs, fused and fast against
                               the serial and parallel C; a summary at the end */
    int nsuite, nsuite_ok;  /* its programs with a ratio, and those within SUITE_TARGET */
    bool small;             /* --small: each program at its test size (a smoke test) */
    double suite_log[2];    /* the sum of log(ratio) of fused and fast */
    FILE *json_file;        /* --json-file: the JSON lines also go here */
    const char *matrix;
    ax_options opt;
    void *cuda_lib;         /* the CUDA baselines, when --backend cuda */
    char cuda_why[256];     /* why they cannot run */
} Bench;

/* One row of the table. */
typedef struct {
    const char *config;
    const char *backend;
    double run_ms, compile_ms, compile_cached_ms;   /* < 0: not measured */
    int runs;
    bool ok;                 /* the check passed */
    bool nomem;              /* refused for memory (an expected outcome) */
    bool unchecked;          /* a baseline with no fused result to compare with */
    char error[512];         /* why it could not run, or why the check failed */
    const char *variant;     /* baseline: which build was faster */
    bool cc_ran;             /* the C compiler ran in the first compile (else its
                                kernels were all in the disk cache) */
} Row;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double axle_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

void axle_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: axle bench [PROGRAM...] [--size N | --sizes N,N,...] [--runs N]\n"
            "                  [--backend interp|cpu|cuda|opencl] [--json] [--matrix FILE]\n"
            "                  [--mem-limit BYTES] [--threads N] [--max-time SECONDS]\n"
            "                  [--json-file FILE] [--small]\n"
            "       axle bench --suite polybench|rodinia [PROGRAM...] [options as above]\n"
            "       axle bench --compile [PROGRAM...] [--runs N] [--threads N] [--json]\n"
            "  each program (default: the Accelerate paper's Table 2 programs with a baseline; the\n"
            "  others axle list names, from map-explog on, run when named) fused, without the\n"
            "  planner, without fusion, without sharing recovery, with fast maths (fast) and\n"
            "  with fast maths assuming no NaN or infinity (finite), and its hand-written C\n"
            "  baseline (with and without -ffast-math); the median run time after a warm-up,\n"
            "  compile time apart, results checked.\n"
            "  Sizes take 1e6, 4M, 2^20 forms.  --matrix FILE: smvm multiplies this Matrix\n"
            "  Market file instead of a random matrix.  --max-time: stop timing a configuration\n"
            "  after this long (at least one timed run).  --json-file: also append the JSON\n"
            "  lines to FILE (the table still goes to the terminal).\n"
            "  --suite: a public suite's programs (axle list names them), fused and fast against the\n"
            "  suite's serial loops and their parallel version (both builds each), the ratio to the\n"
            "  fastest, and the geometric mean of the ratios.\n"
            "  --small: each program at its small test size (a quick check of the harness).\n"
            "  --compile: compile times instead (cold, from the disk cache in a new process, from\n"
            "  the memory cache), see axle bench --compile --help.\n");
}

/* 1000, 1e6, 4M, 2^20, 64k (also `axle run` / `axle dump`'s --size) */
bool axle_parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v;
    if (!strncmp(s, "2^", 2)) {
        long e = strtol(s + 2, &end, 10);
        if (end == s + 2 || e < 0 || e > 62) return false;
        v = ldexp(1, (int)e);
    } else {
        v = strtod(s, &end);
        if (end == s) return false;
    }
    if (*end == 'k' || *end == 'K') v *= 1e3, end++;
    else if (*end == 'm' || *end == 'M') v *= 1e6, end++;
    else if (*end == 'g' || *end == 'G') v *= 1e9, end++;
    if (*end || errno || !(v >= 0) || v > 9e18) return false;
    *out = (int64_t)llround(v);
    return true;
}

/* Bytes: 512M, 4G, 1000000; binary multiples as AXLE_MEM_LIMIT reads them. */
static bool parse_bytes(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0)) return false;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0, end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024, end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024, end++; break;
    case 't': case 'T': v *= 1024.0 * 1024 * 1024 * 1024, end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end || errno || v > 9e18) return false;
    *out = (int64_t)v;
    return true;
}

static int parse(int argc, char **argv, Bench *b)
{
    const ex_program *const *suite_list = NULL;   /* --suite: its programs, unless some are named */
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(s, "--size") || !strcmp(s, "--sizes")) && v) {
            /* a comma-separated list; --size is the one-element case */
            char *list = strdup(v), *save = NULL;
            if (!list) return -1;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (b->nsizes == MAX_SIZES || !axle_parse_size(t, &b->sizes[b->nsizes])) {
                    fprintf(stderr, "axle bench: bad size '%s'\n", t);
                    free(list);
                    return -1;
                }
                b->nsizes++;
            }
            free(list);
            i++;
        } else if (!strcmp(s, "--runs") && v) {
            b->runs = atoi(v);
            if (b->runs < 1) { fprintf(stderr, "axle bench: --runs needs a positive number\n"); return -1; }
            i++;
        } else if (!strcmp(s, "--max-time") && v) {
            b->max_time_ms = atof(v) * 1e3;
            i++;
        } else if (!strcmp(s, "--threads") && v) {
            b->opt.threads = atoi(v);
            i++;
        } else if (!strcmp(s, "--mem-limit") && v) {
            if (!parse_bytes(v, &b->opt.mem_limit)) {
                fprintf(stderr, "axle bench: bad byte count '%s' (e.g. 512M, 4G)\n", v);
                return -1;
            }
            i++;
        } else if (!strcmp(s, "--json-file") && v) {
            if (b->json_file) fclose(b->json_file);
            if (!(b->json_file = fopen(v, "a"))) {
                fprintf(stderr, "axle bench: %s: %s\n", v, strerror(errno));
                return -1;
            }
            i++;
        } else if (!strcmp(s, "--matrix") && v) {
            b->matrix = v;
            i++;
        } else if (!strcmp(s, "--backend") && v) {
            if (!strcmp(v, "interp")) b->opt.backend = AX_BACKEND_INTERP;
            else if (!strcmp(v, "cpu")) b->opt.backend = AX_BACKEND_CPU;
            else if (!strcmp(v, "cuda")) b->opt.backend = AX_BACKEND_CUDA;
            else if (!strcmp(v, "opencl")) b->opt.backend = AX_BACKEND_OPENCL;
            else if (!strcmp(v, "opencl")) b->opt.backend = AX_BACKEND_OPENCL;
            else if (!strcmp(v, "default")) b->opt.backend = AX_BACKEND_DEFAULT;
            else { fprintf(stderr, "axle bench: unknown backend '%s'\n", v); return -1; }
            i++;
        } else if (!strcmp(s, "--suite") && v) {
            const ex_program *const *l = ex_suite(v);
            if (!l) {
                fprintf(stderr, "axle bench: unknown suite '%s' (polybench, rodinia)\n", v);
                return -1;
            }
            b->suite = v;
            suite_list = l;
            i++;
        } else if (!strcmp(s, "--small")) {
            b->small = true;
        } else if (!strcmp(s, "--json")) {
            b->json = true;
        } else if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            exit(0);
        } else if (s[0] != '-') {
            const ex_program *p = ex_find(s);
            if (!p) {
                fprintf(stderr, "axle bench: unknown program '%s' (see axle list)\n", s);
                return -1;
            }
            if (b->nprogs == MAX_PROGS) { fprintf(stderr, "axle bench: too many programs\n"); return -1; }
            b->progs[b->nprogs++] = p;
        } else {
            fprintf(stderr, "axle bench: unknown or incomplete argument '%s'\n", s);
            return -1;
        }
    }
    /* --suite alone: all of its programs; with programs named, those */
    if (suite_list && b->nprogs == 0)
        for (const ex_program *const *l = suite_list; *l; l++) {
            if (b->nprogs == MAX_PROGS) { fprintf(stderr, "axle bench: too many programs\n"); return -1; }
            b->progs[b->nprogs++] = *l;
        }
    return 0;
}

static void release_all(ax_array **res, int *nres)
{
    for (int i = 0; i < *nres; i++) ax_array_release(res[i]);
    *nres = 0;
}

/* Records why a configuration failed; out of memory is told apart, as
 * Table 2 reports it. */
static void fail_row(Row *r, ax_ctx *cx, const char *what)
{
    ax_status s = cx ? ax_status_of(cx) : AX_ERR_NOMEM;
    r->ok = false;
    r->nomem = s == AX_ERR_NOMEM;
    if (cx && *ax_error(cx)) snprintf(r->error, sizeof r->error, "%s", ax_error(cx));
    else snprintf(r->error, sizeof r->error, "%s", what);
}

/* One configuration being timed: fn(arg) runs it once (0: ran). */
typedef int (*run_fn)(void *arg);
typedef struct {
    run_fn fn;
    void *arg;
    Row *row;
    double *t, spent;
    int n, rc;
    bool live;
} Timed;

/* Times the configurations in rounds, each round running every live one
 * once in turn, after one warm-up run of each: on a shared machine whose
 * speed drifts (other tenants, frequency), the drift then falls on every
 * configuration alike instead of on whichever ran during it, and the
 * ratios, which the table is about, hold still.  Each row gets the median
 * of its runs; a configuration that fails drops out with rc set, one over
 * --max-time stops early. */
static void time_rounds(const Bench *b, Timed *ts, int k)
{
    for (int i = 0; i < k; i++) {
        Timed *c = &ts[i];
        if (!c->live) continue;
        if (!(c->t = calloc((size_t)b->runs, sizeof *c->t))) { c->rc = -1, c->live = false; continue; }
        double t0 = now_ms();
        c->rc = c->fn(c->arg);   /* the warm-up */
        c->spent = now_ms() - t0;
        c->live = c->rc == 0;
    }
    for (int round = 0; round < b->runs; round++)
        for (int i = 0; i < k; i++) {
            Timed *c = &ts[i];
            if (!c->live) continue;
            double t0 = now_ms();
            c->rc = c->fn(c->arg);
            double dt = now_ms() - t0;
            c->spent += dt;
            if (c->rc != 0) { c->live = false; continue; }
            c->t[c->n++] = dt;
            if (b->max_time_ms > 0 && c->spent > b->max_time_ms) c->live = false;
        }
    for (int i = 0; i < k; i++) {
        Timed *c = &ts[i];
        if (c->rc == 0 && c->n > 0) c->row->run_ms = axle_median(c->t, c->n), c->row->runs = c->n;
        free(c->t);
        c->t = NULL;
    }
}

/* One axle configuration: a fresh context with these debug flags. */
typedef struct {
    ax_program *pr;
    ax_array *res[MAX_RES];
    int nres;
} AxRun;

static int ax_once(void *arg)
{
    AxRun *a = arg;
    release_all(a->res, &a->nres);
    int n = ax_program_run(a->pr, a->res, MAX_RES);
    if (n < 0) return -1;
    a->nres = n;
    return 0;
}

typedef struct {
    int (*fn)(void *state, int variant);   /* the program's baseline or baseline_serial */
    void *st;
    int variant;
} BlRun;

static int bl_once(void *arg)
{
    BlRun *r = arg;
    return r->fn(r->st, r->variant);
}

/* Checks res against the reference and, where the program has one,
 * against both baseline builds run on the same inputs. */
static void check_all(const ex_program *p, void *st, ax_array *const *res, int nres, Row *r)
{
    char msg[384] = "";
    if (p->check(st, res, nres, msg, sizeof msg) != 0) {
        r->ok = false;
        snprintf(r->error, sizeof r->error, "wrong result: %s", msg);
        return;
    }
    for (int v = 0; p->baseline && p->check_baseline && v < 2; v++) {
        if (p->baseline(st, v) != 0) {
            r->ok = false;
            snprintf(r->error, sizeof r->error, "the baseline (%s) failed", v ? "fastmath" : "std");
            return;
        }
        if (p->check_baseline(st, res, nres, msg, sizeof msg) != 0) {
            r->ok = false;
            snprintf(r->error, sizeof r->error, "differs from the baseline (%s): %s", v ? "fastmath" : "std",
                     msg);
            return;
        }
    }
    r->ok = true;
}

/* One axle configuration: a fresh context with its debug flags, the
 * inputs and the compiled program (compile times in the row). */
typedef struct {
    ax_ctx *cx;
    void *st;
    AxRun run;
} Cfg;

static void cfg_close(const ex_program *p, Cfg *c)
{
    release_all(c->run.res, &c->run.nres);
    ax_program_free(c->run.pr);
    if (c->st) p->teardown(c->st);
    ax_ctx_free(c->cx);
    memset(c, 0, sizeof *c);
}

/* ax_options.progress is called only while the C compiler compiles a
 * program's kernels: a first compile without a call found them all in
 * the disk cache. */
static void note_cc(void *arg, int done, int total)
{
    (void)done, (void)total;
    *(bool *)arg = true;
}

/* Opens configuration c; false, with the row failed, if it cannot run. */
static bool cfg_open(const Bench *b, const ex_program *p, int64_t n, unsigned debug, int fast, Row *r, Cfg *c)
{
    ax_options o = b->opt;
    r->cc_ran = false;
    if (!o.progress) {
        o.progress = note_cc;
        o.progress_arg = &r->cc_ran;
    }
    o.debug |= debug;
    o.fast_math |= fast > 0;
    o.finite_math |= fast > 1;
    memset(c, 0, sizeof *c);
    r->run_ms = r->compile_ms = r->compile_cached_ms = -1;
    r->backend = "?";
    if (!(c->cx = ax_ctx_new(&o))) { fail_row(r, NULL, "out of memory"); return false; }
    if (!(c->st = p->setup(c->cx, n))) {
        fail_row(r, c->cx, "could not make the inputs (out of memory, or see above)");
        cfg_close(p, c);
        return false;
    }
    double t0 = now_ms();
    c->run.pr = ax_compile(c->cx, p->build(c->cx, c->st));
    r->compile_ms = now_ms() - t0;
    if (!c->run.pr) {
        fail_row(r, c->cx, "compile failed");
        r->compile_ms = -1;
        cfg_close(p, c);
        return false;
    }
    r->backend = ax_program_stats(c->run.pr)->backend;
    /* The same program again: the compile cache. */
    t0 = now_ms();
    ax_program *again = ax_compile(c->cx, p->build(c->cx, c->st));
    if (again) r->compile_cached_ms = now_ms() - t0;
    ax_program_free(again);
    return true;
}

/* The table's first column is as wide as the longest program name. */
enum { PROG_W = 16 };

static void print_header(const Bench *b)
{
    if (b->json) return;
    printf("run ms: the median of %d runs after a warm-up, the configurations taking turns.\n"
           "ratio: run ms / the faster of the two hand-written C builds (marked *).\n"
           "compile ms: the first compile in a fresh context, the C compiler's time included; 'cached': the\n"
           "  C compiler did not run, every kernel was in the disk cache (an earlier run compiled it; axle\n"
           "  bench --compile measures cold compiles).\n",
           b->runs);
    printf("%-*s %10s  %-18s %12s %14s %8s  %s\n", PROG_W, "program", "size", "config", "run ms", "compile ms",
           "ratio", "check");
}

static void print_json(FILE *f, const Bench *b, const ex_program *p, int64_t n, const Row *r, double ratio)
{
    fprintf(f, "{\"program\":\"%s\",\"size\":%lld,\"backend\":", p->name, (long long)n);
    axle_json_str(f, r->backend);
    fprintf(f, ",\"config\":\"%s\"", r->config);
    if (r->run_ms >= 0) fprintf(f, ",\"run_ms\":%.4f", r->run_ms);
    else fprintf(f, ",\"run_ms\":null");
    if (r->compile_ms >= 0) fprintf(f, ",\"compile_ms\":%.3f", r->compile_ms);
    else fprintf(f, ",\"compile_ms\":null");
    if (r->compile_cached_ms >= 0) fprintf(f, ",\"compile_cached_ms\":%.3f", r->compile_cached_ms);
    if (r->run_ms >= 0) fprintf(f, ",\"runs\":%d", r->runs);
    if (ratio >= 0) fprintf(f, ",\"ratio\":%.4f", ratio);
    if (r->variant) fprintf(f, ",\"variant\":\"%s\"", r->variant);
    if (b->matrix && !strcmp(p->name, "smvm")) { fprintf(f, ",\"matrix\":"); axle_json_str(f, b->matrix); }
    fprintf(f, ",\"check\":\"%s\"", r->ok ? "ok" : "fail");
    if (!r->ok) {
        fprintf(f, ",\"error\":");
        axle_json_str(f, r->nomem ? "out of memory" : r->error);
        if (r->nomem) { fprintf(f, ",\"message\":"); axle_json_str(f, r->error); }
    }
    fprintf(f, "}\n");
    fflush(f);
}

static void print_row(const Bench *b, const ex_program *p, int64_t n, const Row *r, double best)
{
    double ratio = r->run_ms >= 0 && best > 0 ? r->run_ms / best : -1;
    if (b->json_file) print_json(b->json_file, b, p, n, r, ratio);
    if (b->json) {
        print_json(stdout, b, p, n, r, ratio);
        return;
    }
    /* The JSON's "baseline" row repeats the faster build's (its variant
     * says which): the table marks that build's ratio with * instead. */
    if (r->variant) return;
    char run[32], comp[40], rat[32], conf[40];
    if (r->run_ms >= 0) snprintf(run, sizeof run, "%.3f", r->run_ms);
    else snprintf(run, sizeof run, "%s", r->nomem ? "out of memory" : "-");
    if (r->compile_ms > 0)
        snprintf(comp, sizeof comp, "%.1f%s", r->compile_ms, r->cc_ran || strcmp(r->backend, "cpu") ? "" : " cached");
    else snprintf(comp, sizeof comp, "-");
    if (ratio >= 0) snprintf(rat, sizeof rat, "%.2fx%s", ratio, r->run_ms == best ? "*" : "");
    else snprintf(rat, sizeof rat, "-");
    if (r->variant) snprintf(conf, sizeof conf, "%s (%s)", r->config, r->variant);
    else snprintf(conf, sizeof conf, "%s", r->config);
    /* With --matrix, smvm's size is the file's. */
    char size[32];
    if (b->matrix && !strcmp(p->name, "smvm")) {
        const char *base = strrchr(b->matrix, '/');
        snprintf(size, sizeof size, "%.10s", base ? base + 1 : b->matrix);
    } else {
        snprintf(size, sizeof size, "%lld", (long long)n);
    }
    /* A configuration refused for memory (Table 2's "out of memory") ran
     * nothing to check: "-" and the reason, not a failed check. */
    const char *chk = r->ok ? "ok" : r->nomem ? "-" : "fail";
    printf("%-*s %10s  %-18s %12s %14s %8s  %s%s%s%s\n", PROG_W, p->name, size, conf, run, comp, rat, chk,
           r->ok ? "" : r->nomem ? " (refused: " : ": ", r->ok ? "" : r->error, !r->ok && r->nomem ? ")" : "");
    fflush(stdout);
}

/* One program at one size: all configurations, timed in rounds
 * (time_rounds), then checked; returns the number of failures that count
 * against the exit status.  With --suite, axle runs fused and fast only,
 * against four C rows: the parallel baseline and the suite's serial loop,
 * each in both builds; "the" baseline is the fastest of them. */
/* The seeds' ablations (seed 004, the ICFP 2013 talk's slides: Accelerate
 * on a GPU, each with and without one optimisation), shown beside axle's
 * same ratio on this machine. */
typedef struct SeedAblation {
    const char *program;
    bool nofusion;          /* the nofusion row; else nosharing */
    double seed;            /* the seeds' "without / with" */
    const char *where;
} SeedAblation;

static const SeedAblation seed_ablations[] = {
    {"dotp", true, 2.0, "seed 004, slide 69: Accelerate without/with fusion, GPU"},
    {"blackscholes", false, 17.0, "seed 004, slide 72: Accelerate without/with sharing recovery, GPU"},
};

static void print_ablation(const Bench *b, const ex_program *p, int64_t n, const SeedAblation *s, double axle)
{
    const char *what = s->nofusion ? "fusion" : "sharing";
    FILE *outs[2] = {b->json ? stdout : NULL, b->json_file};
    for (int k = 0; k < 2; k++)
        if (outs[k])
            fprintf(outs[k], "{\"ablation\":\"%s\",\"program\":\"%s\",\"size\":%lld,\"axle\":%.4f,\"seeds\":%.4f}\n",
                    what, p->name, (long long)n, axle, s->seed);
    if (!b->json)
        printf("%-18s %8lld  ablation: without %s %.2fx slower (the seeds: %.0fx; %s)\n", p->name, (long long)n, what,
               axle, s->seed, s->where);
}

static int bench_one(Bench *b, const ex_program *p, int64_t n)
{
    enum { FUSED, NOPLANNER, NOFUSION, NOSHARING, FAST, FINITE, BL_STD, BL_FAST, SER_STD, SER_FAST, BL_BEST,
           BL_CUDA, NROWS };
    enum { NAX = FINITE + 1, NBL = SER_FAST - BL_STD + 1 };   /* axle's configurations; the C ones */
    Row rows[NROWS];
    memset(rows, 0, sizeof rows);
    static const char *const names[NROWS] = {"fused", "noplanner", "nofusion", "nosharing", "fast", "finite",
                                             "baseline-std", "baseline-fastmath", "serial-std",
                                             "serial-fastmath", "baseline", "baseline-cuda"};
    static const unsigned debug[NAX] = {0, AX_DEBUG_NO_PLANNER, AX_DEBUG_NO_FUSION,
                                        AX_DEBUG_NO_SHARING | AX_DEBUG_NO_CSE, 0, 0};
    for (int i = 0; i < NROWS; i++) rows[i].config = names[i];
    bool have_bl = p->baseline && p->check_baseline;
    bool suite = b->suite != NULL;
    bool on[NROWS];
    for (int i = 0; i < NROWS; i++)
        on[i] = i < NAX ? !suite || i == FUSED || i == FAST
                        : i < SER_STD ? have_bl : i <= SER_FAST ? have_bl && p->baseline_serial : false;

    Cfg cfg[NAX];
    memset(cfg, 0, sizeof cfg);
    Timed ts[NAX + NBL];
    memset(ts, 0, sizeof ts);
    for (int i = 0; i < NAX; i++) {
        if (!on[i]) continue;
        /* a configuration that cannot run keeps cfg_open's reason */
        ts[i] = (Timed){ax_once, &cfg[i].run, &rows[i], NULL, 0, 0, 0,
                        cfg_open(b, p, n, debug[i], i == FAST ? 1 : i == FINITE ? 2 : 0, &rows[i], &cfg[i])};
    }
    /* The baselines run on the fused configuration's inputs, or, when it
     * could not run, on inputs of their own (then unchecked). */
    ax_ctx *c2 = NULL;
    void *bst = ts[FUSED].live ? cfg[FUSED].st : NULL;
    if (have_bl && !bst && (c2 = ax_ctx_new(&b->opt))) bst = p->setup(c2, n);
    BlRun br[NBL];
    for (int v = 0; v < NBL; v++) {
        Row *r = &rows[BL_STD + v];
        if (!on[BL_STD + v]) continue;
        br[v] = (BlRun){v < 2 ? p->baseline : p->baseline_serial, bst, v & 1};
        r->backend = rows[FUSED].backend;
        r->run_ms = -1;
        r->compile_ms = r->compile_cached_ms = 0;   /* compiled ahead of time */
        ts[BL_STD + v] = (Timed){bl_once, &br[v], r, NULL, 0, 0, 0, bst != NULL};
        if (!bst) snprintf(r->error, sizeof r->error, "could not make the inputs");
    }
    time_rounds(b, ts, NAX + NBL);

    for (int i = 0; i < NAX; i++) {
        if (!on[i]) continue;
        if (ts[i].rc != 0) {
            rows[i].run_ms = -1;
            fail_row(&rows[i], cfg[i].cx, "run failed");
        } else if (rows[i].run_ms >= 0) {
            check_all(p, cfg[i].st, cfg[i].run.res, cfg[i].run.nres, &rows[i]);
        }
    }
    for (int v = 0; v < NBL; v++) {
        Row *r = &rows[BL_STD + v];
        if (!on[BL_STD + v] || !bst) continue;
        if (ts[BL_STD + v].rc != 0 || bl_once(&br[v]) != 0) {
            r->run_ms = -1;
            r->ok = false;
            r->nomem = true;
            snprintf(r->error, sizeof r->error, "the baseline failed (out of memory)");
        } else if (c2 || !rows[FUSED].ok) {
            r->ok = false;
            r->unchecked = true;
            snprintf(r->error, sizeof r->error, "not checked: no right fused result to compare with");
        } else {
            char msg[384] = "";
            r->ok = p->check_baseline(bst, cfg[FUSED].run.res, cfg[FUSED].run.nres, msg, sizeof msg) == 0;
            if (!r->ok) snprintf(r->error, sizeof r->error, "differs from axle: %s", msg);
        }
    }
    /* The CUDA baseline, on the same inputs, after the CPU ones (it keeps
     * its result where they keep theirs). */
    bool have_cuda = b->opt.backend == AX_BACKEND_CUDA && p->cuda_baseline && have_bl;
    on[BL_CUDA] = have_cuda;
    if (have_cuda) {
        Row *r = &rows[BL_CUDA];
        r->backend = "cuda";
        r->run_ms = -1;
        r->compile_ms = r->compile_cached_ms = 0;
        char err[384] = "";
        double ms = -1;
        if (!b->cuda_lib) {
            snprintf(r->error, sizeof r->error, "%s", b->cuda_why);
        } else if (!bst || p->cuda_baseline(bst, b->cuda_lib, b->runs, &ms, err, sizeof err) != 0) {
            snprintf(r->error, sizeof r->error, "the CUDA baseline failed: %s", bst ? err : "no inputs");
        } else if (!rows[FUSED].ok) {
            r->run_ms = ms;
            r->runs = b->runs;
            r->unchecked = true;
            snprintf(r->error, sizeof r->error, "not checked: no right fused result to compare with");
        } else {
            char msg[384] = "";
            r->run_ms = ms;
            r->runs = b->runs;
            r->ok = p->check_baseline(bst, cfg[FUSED].run.res, cfg[FUSED].run.nres, msg, sizeof msg) == 0;
            if (!r->ok) snprintf(r->error, sizeof r->error, "differs from axle: %s", msg);
        }
    }
    for (int i = 0; i < NAX; i++)
        if (cfg[i].cx) cfg_close(p, &cfg[i]);
    if (c2) {
        if (bst) p->teardown(bst);
        ax_ctx_free(c2);
    }

    /* The fastest C build is "the" baseline. */
    double best = -1;
    Row *w = NULL;
    for (int v = BL_STD; v <= SER_FAST; v++)
        if (on[v] && rows[v].run_ms >= 0 && (!w || rows[v].run_ms < w->run_ms)) w = &rows[v];
    if (w) {
        rows[BL_BEST] = *w;
        rows[BL_BEST].config = "baseline";
        static const char *const variants[NBL] = {"std", "fastmath", "serial-std", "serial-fastmath"};
        rows[BL_BEST].variant = variants[w - &rows[BL_STD]];
        on[BL_BEST] = true;
        best = w->run_ms;
    }
    /* On a GPU, axle is compared with the GPU's baseline */
    if (have_cuda && rows[BL_CUDA].run_ms >= 0) best = rows[BL_CUDA].run_ms;
    int bad = 0;
    for (int i = 0; i < NROWS; i++) {
        if (!on[i]) continue;
        print_row(b, p, n, &rows[i], best);
        if (!rows[i].ok && !rows[i].nomem && !rows[i].unchecked) bad++;
    }
    for (int k = 0; !suite && k < (int)(sizeof seed_ablations / sizeof *seed_ablations); k++) {
        const SeedAblation *s = &seed_ablations[k];
        int row = s->nofusion ? NOFUSION : NOSHARING;
        if (strcmp(p->name, s->program) || rows[FUSED].run_ms <= 0 || rows[row].run_ms <= 0) continue;
        print_ablation(b, p, n, s, rows[row].run_ms / rows[FUSED].run_ms);
    }
    if (suite && best > 0 && rows[FUSED].run_ms > 0 && rows[FAST].run_ms > 0) {
        b->nsuite++;
        b->suite_log[0] += log(rows[FUSED].run_ms / best);
        b->suite_log[1] += log(rows[FAST].run_ms / best);
        if (fmin(rows[FUSED].run_ms, rows[FAST].run_ms) <= SUITE_TARGET * best) b->nsuite_ok++;
    }
    return bad;
}

/* --suite's last lines: the geometric means of axle's ratios to the
 * fastest C baseline, and how many programs are within the target. */
static void suite_summary(const Bench *b)
{
    if (!b->nsuite) return;
    double g0 = exp(b->suite_log[0] / b->nsuite), g1 = exp(b->suite_log[1] / b->nsuite);
    FILE *outs[2] = {b->json ? stdout : NULL, b->json_file};
    for (int k = 0; k < 2; k++)
        if (outs[k])
            fprintf(outs[k],
                    "{\"suite\":\"%s\",\"programs\":%d,\"geomean_fused\":%.4f,\"geomean_fast\":%.4f,"
                    "\"within_%.1fx\":%d}\n",
                    b->suite, b->nsuite, g0, g1, SUITE_TARGET, b->nsuite_ok);
    if (!b->json)
        printf("%s: %d programs; geometric mean of run ms / the fastest C baseline: fused %.2fx, fast %.2fx;"
               " %d of %d within %.1fx (fused or fast)\n",
               b->suite, b->nsuite, g0, g1, b->nsuite_ok, b->nsuite, SUITE_TARGET);
}

/* The CUDA baselines' library: AXLE_CUDA_BASELINES, else beside this
 * command; usable only where a GPU is. */
static void load_cuda_baselines(Bench *b)
{
    char path[4096];
    const char *e = getenv("AXLE_CUDA_BASELINES");
    if (e && *e) {
        snprintf(path, sizeof path, "%s", e);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
        if (n <= 0) n = 0;
        path[n] = 0;
        char *slash = strrchr(path, '/');
        snprintf(slash ? slash + 1 : path, 64, "libaxle_cuda_baselines.so");
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(b->cuda_why, sizeof b->cuda_why, "no CUDA baselines (%.180s: built only where nvcc is)", path);
        return;
    }
    int (*devices)(void);
    *(void **)&devices = dlsym(lib, "axcb_devices");
    if (!devices || devices() < 1) {
        snprintf(b->cuda_why, sizeof b->cuda_why, "no GPU to run the CUDA baselines");
        dlclose(lib);
        return;
    }
    b->cuda_lib = lib;
}

/* See the header comment; returns only if it did not re-execute. */
static void passive_openmp(int argc, char **argv)
{
#if defined(_OPENMP) && defined(__linux__)
    if (getenv("OMP_WAIT_POLICY") || setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) return;
    args[0] = "axle";
    for (int i = 0; i < argc; i++) args[i + 1] = argv[i];
    fflush(NULL);
    execv("/proc/self/exe", args);
    free(args);   /* could not: go on with the default policy */
#else
    (void)argc, (void)argv;
#endif
}

int axle_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--compile")) return axle_bench_compile(argc, argv);
    passive_openmp(argc, argv);
    Bench b;
    memset(&b, 0, sizeof b);
    b.runs = 5;
    const ex_program *progs[MAX_PROGS];
    b.progs = progs;
    if (parse(argc, argv, &b) != 0) {
        usage(stderr);
        if (b.json_file) fclose(b.json_file);
        return 2;
    }
    /* Default: the Table 2 programs, those with a baseline.  The extra
     * programs (ex_program.extra) have baselines too, but they are not
     * Table 2 rows: the skeleton micro-benchmarks, and radix sort
     * against an 8-bit counting sort (a different algorithm). */
    if (b.nprogs == 0 && b.suite) {
        fprintf(stderr, "axle bench: the suite %s has no programs in this build\n", b.suite);
        if (b.json_file) fclose(b.json_file);
        return 2;
    }
    if (b.nprogs == 0)
        for (int i = 0; i < ex_nprograms && b.nprogs < MAX_PROGS; i++)
            if (ex_programs[i]->baseline && !ex_programs[i]->extra) b.progs[b.nprogs++] = ex_programs[i];
    FILE *mf = b.matrix ? fopen(b.matrix, "r") : NULL;
    if (b.matrix && !mf) {
        fprintf(stderr, "axle bench: %s: %s\n", b.matrix, strerror(errno));
        if (b.json_file) fclose(b.json_file);
        return 2;
    }
    if (mf) fclose(mf);
    if (b.matrix && setenv(EX_SMVM_MATRIX_ENV, b.matrix, 1) != 0) {
        fprintf(stderr, "axle bench: %s\n", strerror(errno));
        if (b.json_file) fclose(b.json_file);
        return 2;
    }
#ifdef _OPENMP
    if (b.opt.threads > 0) omp_set_num_threads(b.opt.threads);
#endif
    if (b.opt.backend == AX_BACKEND_CUDA) load_cuda_baselines(&b);
    print_header(&b);
    int bad = 0;
    for (int i = 0; i < b.nprogs; i++) {
        const ex_program *p = b.progs[i];
        int64_t dflt = b.small && p->test_size > 0 ? p->test_size : p->bench_size > 0 ? p->bench_size : p->default_size;
        if (b.nsizes == 0) bad += bench_one(&b, p, dflt);
        for (int s = 0; s < b.nsizes; s++) bad += bench_one(&b, p, b.sizes[s]);
    }
    suite_summary(&b);
    if (b.json_file) fclose(b.json_file);
    if (b.cuda_lib) dlclose(b.cuda_lib);
    return bad ? 1 : 0;
}
