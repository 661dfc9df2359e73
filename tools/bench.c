/*
 * axle bench: the seeds' Table 2 (paper s.5) on this machine.
 *
 *   axle bench [PROGRAM...] [--size N | --sizes N,N,...] [--runs N]
 *              [--backend interp|cpu|cuda] [--json] [--matrix FILE]
 *              [--mem-limit BYTES] [--threads N] [--max-time SECONDS]
 *              [--json-file FILE]
 *
 * For each program (default: every built-in program with a hand-written
 * baseline, except the single-skeleton micro-benchmarks of issue 3, which
 * are not Table 2 programs and run only when named) and size, four
 * configurations, as the columns of Table 2:
 *
 *   fused      the default pipeline
 *   nofusion   AX_DEBUG_NO_FUSION: every operation its own kernel
 *   nosharing  AX_DEBUG_NO_SHARING: the graph unfolded into a tree
 *   baseline   the hand-written C (OpenMP, SIMD, -O3 -march=native), the
 *              faster of its two builds, which are also reported apart as
 *              baseline-std (without -ffast-math) and baseline-fastmath
 *
 * Each is timed as the median of --runs runs (default 5) after one
 * warm-up run.  Compile time is measured apart, as the seeds factor it
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

enum { MAX_RES = 8, MAX_SIZES = 32 };

typedef struct {
    const ex_program **progs;
    int nprogs;
    int64_t sizes[MAX_SIZES];
    int nsizes;
    int runs;
    double max_time_ms;     /* per configuration; 0: no limit */
    bool json;
    FILE *json_file;        /* --json-file: the JSON lines also go here */
    const char *matrix;
    ax_options opt;
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
            "                  [--backend interp|cpu|cuda] [--json] [--matrix FILE]\n"
            "                  [--mem-limit BYTES] [--threads N] [--max-time SECONDS]\n"
            "                  [--json-file FILE]\n"
            "  each program (default: those with a baseline, less the skeleton micro-benchmarks\n"
            "  map-explog, fold-sum and scanl1-sum, which run only when named) fused, without\n"
            "  fusion, without sharing recovery, and its hand-written C baseline (with and\n"
            "  without -ffast-math); the median run time after a warm-up, compile time apart,\n"
            "  results checked.\n"
            "  Sizes take 1e6, 4M, 2^20 forms.  --matrix FILE: smvm multiplies this Matrix\n"
            "  Market file instead of a random matrix.  --max-time: stop timing a configuration\n"
            "  after this long (at least one timed run).  --json-file: also append the JSON\n"
            "  lines to FILE (the table still goes to the terminal).\n");
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
            else if (!strcmp(v, "default")) b->opt.backend = AX_BACKEND_DEFAULT;
            else { fprintf(stderr, "axle bench: unknown backend '%s'\n", v); return -1; }
            i++;
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
            b->progs[b->nprogs++] = p;
        } else {
            fprintf(stderr, "axle bench: unknown or incomplete argument '%s'\n", s);
            return -1;
        }
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

/* Times fn over b->runs runs after one warm-up; returns the median. */
typedef int (*run_fn)(void *arg);

static int time_runs(const Bench *b, run_fn fn, void *arg, double *median_ms, int *runs)
{
    double *t = calloc((size_t)b->runs, sizeof *t);
    if (!t) return -1;
    double start = now_ms();
    int n = 0, rc = fn(arg);   /* the warm-up */
    while (rc == 0 && n < b->runs) {
        double t0 = now_ms();
        rc = fn(arg);
        t[n++] = now_ms() - t0;
        if (b->max_time_ms > 0 && now_ms() - start > b->max_time_ms) break;
    }
    if (rc == 0) *median_ms = axle_median(t, n), *runs = n;
    free(t);
    return rc;
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
    const ex_program *p;
    void *st;
    int variant;
} BlRun;

static int bl_once(void *arg)
{
    BlRun *r = arg;
    return r->p->baseline(r->st, r->variant);
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

/* Runs one axle configuration.  With keep (the fused configuration), the
 * context, state and results are handed back for the baselines. */
static void run_config(const Bench *b, const ex_program *p, int64_t n, unsigned debug, Row *r, ax_ctx **keep_cx,
                       void **keep_st, AxRun *keep)
{
    ax_options o = b->opt;
    o.debug |= debug;
    r->run_ms = r->compile_ms = r->compile_cached_ms = -1;
    r->backend = "?";
    AxRun a = {0};
    ax_ctx *cx = ax_ctx_new(&o);
    void *st = NULL;
    if (!cx) { fail_row(r, NULL, "out of memory"); return; }
    if (!(st = p->setup(cx, n))) {
        fail_row(r, cx, "could not make the inputs (out of memory, or see above)");
        goto out;
    }
    double t0 = now_ms();
    a.pr = ax_compile(cx, p->build(cx, st));
    r->compile_ms = now_ms() - t0;
    if (!a.pr) { fail_row(r, cx, "compile failed"); r->compile_ms = -1; goto out; }
    r->backend = ax_program_stats(a.pr)->backend;
    /* The same program again: the compile cache. */
    t0 = now_ms();
    ax_program *again = ax_compile(cx, p->build(cx, st));
    if (again) r->compile_cached_ms = now_ms() - t0;
    ax_program_free(again);
    if (time_runs(b, ax_once, &a, &r->run_ms, &r->runs) != 0) {
        r->run_ms = -1;
        fail_row(r, cx, "run failed");
        goto out;
    }
    check_all(p, st, a.res, a.nres, r);
    if (keep && r->ok) {
        *keep_cx = cx, *keep_st = st, *keep = a;
        return;
    }
out:
    release_all(a.res, &a.nres);
    ax_program_free(a.pr);
    if (st) p->teardown(st);
    ax_ctx_free(cx);
}

/* The two baseline builds on the fused configuration's inputs, each checked
 * against the fused result. */
static void run_baseline(const Bench *b, const ex_program *p, void *st, AxRun *fused, int variant, Row *r)
{
    r->run_ms = -1;
    r->compile_ms = r->compile_cached_ms = 0;   /* compiled ahead of time */
    BlRun br = {p, st, variant};
    if (time_runs(b, bl_once, &br, &r->run_ms, &r->runs) != 0) {
        r->run_ms = -1;
        r->ok = false;
        snprintf(r->error, sizeof r->error, "the baseline failed (out of memory)");
        r->nomem = true;
        return;
    }
    char msg[384] = "";
    r->ok = p->check_baseline(st, fused->res, fused->nres, msg, sizeof msg) == 0;
    if (!r->ok) snprintf(r->error, sizeof r->error, "differs from axle: %s", msg);
}

static void print_header(const Bench *b)
{
    if (b->json) return;
    printf("%-13s %10s  %-18s %12s %12s %8s  %s\n", "program", "size", "config", "run ms", "compile ms", "ratio",
           "check");
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
    char run[32], comp[32], rat[32], conf[40];
    if (r->run_ms >= 0) snprintf(run, sizeof run, "%.3f", r->run_ms);
    else snprintf(run, sizeof run, "%s", r->nomem ? "out of memory" : "-");
    if (r->compile_ms >= 0) snprintf(comp, sizeof comp, "%.1f", r->compile_ms);
    else snprintf(comp, sizeof comp, "-");
    if (ratio >= 0) snprintf(rat, sizeof rat, "%.2fx", ratio);
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
    printf("%-13s %10s  %-18s %12s %12s %8s  %s%s%s%s\n", p->name, size, conf, run, comp, rat, chk,
           r->ok ? "" : r->nomem ? " (refused: " : ": ", r->ok ? "" : r->error, !r->ok && r->nomem ? ")" : "");
    fflush(stdout);
}

/* One program at one size: all configurations; returns the number of
 * failures that count against the exit status. */
static int bench_one(const Bench *b, const ex_program *p, int64_t n)
{
    enum { FUSED, NOFUSION, NOSHARING, BL_STD, BL_FAST, BL_BEST, NROWS };
    Row rows[NROWS];
    memset(rows, 0, sizeof rows);
    static const char *const names[NROWS] = {"fused", "nofusion", "nosharing", "baseline-std",
                                             "baseline-fastmath", "baseline"};
    for (int i = 0; i < NROWS; i++) rows[i].config = names[i];
    bool have_bl = p->baseline && p->check_baseline;

    ax_ctx *cx = NULL;
    void *st = NULL;
    AxRun fused = {0};
    run_config(b, p, n, 0, &rows[FUSED], &cx, &st, &fused);
    for (int v = 0; have_bl && v < 2; v++) {
        Row *r = &rows[BL_STD + v];
        r->backend = rows[FUSED].backend;
        if (!cx) {
            /* No right fused result to check against: time the baseline
             * on fresh inputs all the same. */
            ax_ctx *c2 = ax_ctx_new(&b->opt);
            void *s2 = c2 ? p->setup(c2, n) : NULL;
            AxRun none = {0};
            if (s2) {
                run_baseline(b, p, s2, &none, v, r);
                r->ok = false;
                r->unchecked = true;
                snprintf(r->error, sizeof r->error, "not checked: no right fused result to compare with");
                p->teardown(s2);
            } else {
                r->run_ms = -1;
                snprintf(r->error, sizeof r->error, "could not make the inputs");
            }
            ax_ctx_free(c2);
        } else {
            run_baseline(b, p, st, &fused, v, r);
        }
    }
    if (cx) {
        release_all(fused.res, &fused.nres);
        ax_program_free(fused.pr);
        p->teardown(st);
        ax_ctx_free(cx);
    }
    run_config(b, p, n, AX_DEBUG_NO_FUSION, &rows[NOFUSION], NULL, NULL, NULL);
    run_config(b, p, n, AX_DEBUG_NO_SHARING, &rows[NOSHARING], NULL, NULL, NULL);

    /* The better build is "the" baseline. */
    double best = -1;
    if (have_bl) {
        Row *s = &rows[BL_STD], *f = &rows[BL_FAST];
        Row *w = s->run_ms >= 0 && (f->run_ms < 0 || s->run_ms <= f->run_ms) ? s : f;
        rows[BL_BEST] = *w;
        rows[BL_BEST].config = "baseline";
        rows[BL_BEST].variant = w == s ? "std" : "fastmath";
        best = w->run_ms;
    }
    int bad = 0;
    for (int i = 0; i < NROWS; i++) {
        if (!have_bl && i >= BL_STD) break;
        print_row(b, p, n, &rows[i], best);
        if (!rows[i].ok && !rows[i].nomem && !rows[i].unchecked) bad++;
    }
    return bad;
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
    passive_openmp(argc, argv);
    Bench b;
    memset(&b, 0, sizeof b);
    b.runs = 5;
    const ex_program *progs[64];
    b.progs = progs;
    if (argc - 1 > 64 || parse(argc, argv, &b) != 0) {
        usage(stderr);
        if (b.json_file) fclose(b.json_file);
        return 2;
    }
    /* Default: the Table 2 programs, those with a baseline.  The extra
     * programs (ex_program.extra) have baselines too, but they are not
     * Table 2 rows: the skeleton micro-benchmarks of issue 3, and radix sort
     * against an 8-bit counting sort (a different algorithm). */
    if (b.nprogs == 0)
        for (int i = 0; i < ex_nprograms && b.nprogs < 64; i++)
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
    print_header(&b);
    int bad = 0;
    for (int i = 0; i < b.nprogs; i++) {
        const ex_program *p = b.progs[i];
        int64_t dflt = p->bench_size > 0 ? p->bench_size : p->default_size;
        if (b.nsizes == 0) bad += bench_one(&b, p, dflt);
        for (int s = 0; s < b.nsizes; s++) bad += bench_one(&b, p, b.sizes[s]);
    }
    if (b.json_file) fclose(b.json_file);
    return bad ? 1 : 0;
}
