/*
 * `axle bench --compile`: what compiling costs a user, per program.
 *
 *   cold    ax_compile with no kernel of the program in any cache (a new,
 *           empty cache directory; the compiler's identity, which a cache
 *           keeps across programs, found beforehand), split into the front
 *           end (sharing recovery and the optimiser), code generation, and
 *           the C compiler (with loading);
 *   disk    `axle run` in a new process whose kernels are all in the disk
 *           cache: the whole ax_compile, front end included;
 *   memory  a second ax_compile of the same program in the same context
 *           (the program memory: an equal program compiled before), the
 *           graph built first and timed apart (build: the user's calls of
 *           the builder, which every compile needs; Mandelbrot's 13,000
 *           nodes take half a millisecond);
 *   floor   the C compiler's time on the program's hand-written baseline
 *           (bench/baseline_NAME.c, from the source tree this axle was
 *           built from), with the flags axle compiles its kernels with
 *           (ax_cc_command), linked as a shared object as its kernels are:
 *           what a hand-written program of the same computation pays; and
 *           the ratio of the cold compile's C compiler time to it;
 *   load    ax_program_load of the program saved by ax_program_save, into
 *           a new context that has no C compiler and no disk cache (what
 *           a machine the program is shipped to pays), and the file's size;
 *   export  NAME_load of the program exported as C (ax_program_export),
 *           compiled with the kernels' flags into a shared object and
 *           loaded into this process beforehand (the dynamic loader's
 *           work is an application's start-up, not counted), into the
 *           same bare context.
 *
 * Each figure is the median of --runs repetitions (a fresh directory each
 * cold one).  The CPU backend only: the GPU backends' compile is NVRTC's.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include "axle.h"
#include "programs.h"
#include "tools.h"
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <sys/wait.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* x * x + 0.375: a kernel none of the benchmarks has */
static ax_exp warm_fn(ax_exp x, void *env)
{
    (void)env;
    return ax_add(ax_mul(x, x), ax_f32(0.375f));
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_tree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

typedef struct {
    double total, front, codegen, cc;   /* cold, ms */
    double disk, memory, build;         /* ms */
    double load, file_kb;               /* ms, KiB */
    double export_load;                 /* ms; -1: not measured (no source tree) */
    double floor;                       /* ms; -1: no baseline source */
    int kernels;
    const char *error;
} Figures;

#ifdef AXLE_SOURCE_DIR
extern char **environ;

/* argv[0..] run to its end: true when it exited with 0. */
static bool run_argv(char **argv)
{
    pid_t pid;
    int st = -1;
    return posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) == 0 && waitpid(pid, &st, 0) == pid &&
           WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The C compiler as axle calls it, with extra arguments (NULL-ended),
 * run: its wall time in ms, or -1 when it failed. */
static double cc_with(const ax_options *base, char *const *extra)
{
    ax_ctx *cx = ax_ctx_new(base);
    char *cmd = cx ? ax_cc_command(cx) : NULL;
    ax_ctx_free(cx);
    if (!cmd) return -1;
    char *argv[160];
    int n = 0;
    for (char *save = NULL, *w = strtok_r(cmd, " \t", &save); w && n < 118; w = strtok_r(NULL, " \t", &save))
        argv[n++] = w;
    for (int i = 0; extra[i] && n < 158; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    double t0 = now_ms();
    bool ok = run_argv(argv);
    double t = now_ms() - t0;
    free(cmd);
    return ok ? t : -1;
}
#endif

/* pr exported into dir, compiled and loaded; the time of its NAME_load
 * into bare in ms, -1 where this axle has no source tree (for axle.h),
 * or -2 with err on failure. */
static double export_once(const ax_options *base, ax_program *pr, ax_ctx *bare, const char *dir, char *err,
                          size_t errsize)
{
#ifdef AXLE_SOURCE_DIR
    char src[4400], so[4400], inc1[4400], inc2[4200];
    snprintf(src, sizeof src, "%s/bench_export.c", dir);
    snprintf(so, sizeof so, "%s/bench_export.so", dir);
    snprintf(inc1, sizeof inc1, "-I%s", dir);
    snprintf(inc2, sizeof inc2, "-I%s/include", AXLE_SOURCE_DIR);
    if (ax_program_export(pr, "bench_export", dir)) {
        snprintf(err, errsize, "export failed");
        return -2;
    }
    char *extra[] = {inc1, inc2, "-o", so, src, NULL};
    if (cc_with(base, extra) < 0) {
        snprintf(err, errsize, "the C compiler failed on the exported program");
        return -2;
    }
    /* (the exported code calls ax_program_load_linked: this command's own,
     * which it exports for that) */
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    ax_program *(*load)(ax_ctx *) = NULL;
    if (h) *(void **)&load = dlsym(h, "bench_export_load");
    if (!load) {
        snprintf(err, errsize, "loading the exported program: %s", dlerror());
        if (h) dlclose(h);
        return -2;
    }
    double t0 = now_ms();
    ax_program *q = load(bare);
    double t = now_ms() - t0;
    if (!q) snprintf(err, errsize, "bench_export_load: %s", ax_error(bare));
    ax_program_free(q);
    dlclose(h);
    return q ? t : -2;
#else
    (void)base, (void)pr, (void)bare, (void)dir, (void)err, (void)errsize;
    return -1;
#endif
}

/* One cold compile into the empty cache directory dir, then one from the
 * memory cache; false (with f->error) on failure. */
static bool cold_once(const ax_options *base, const ex_program *p, int64_t n, const char *dir, Figures *f, char *err,
                      size_t errsize)
{
    ax_options o = *base;
    o.cache_dir = dir;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) {
        snprintf(err, errsize, "out of memory");
        return false;
    }
    bool ok = false;
    void *st = p->setup(cx, n);
    if (!st) {
        snprintf(err, errsize, "setup: %s", ax_error(cx));
        ax_ctx_free(cx);
        return false;
    }
    double t0 = now_ms();
    ax_program *pr = ax_compile(cx, p->build(cx, st));
    double t = now_ms() - t0;
    if (!pr) {
        snprintf(err, errsize, "%s", ax_error(cx));
    } else {
        const ax_stats *s = ax_program_stats(pr);
        f->total = t;
        f->front = s->sharing_ms + s->optimise_ms;
        f->codegen = s->codegen_ms;
        f->cc = s->compile_ms - s->codegen_ms;
        f->kernels = (int)s->kernels;
        t0 = now_ms();
        ax_acc a2 = p->build(cx, st);
        double t1 = now_ms();
        ax_program *again = ax_compile(cx, a2);
        f->memory = now_ms() - t1;
        f->build = t1 - t0;
        ok = again != NULL;
        if (!again) snprintf(err, errsize, "%s", ax_error(cx));
        ax_program_free(again);
        /* saved, and loaded where there is no compiler */
        char file[4400];
        snprintf(file, sizeof file, "%s/program.axle", dir);
        ax_options b = *base;
        b.cc = "/nonexistent/axle-bench-no-cc";
        b.no_cache = true;
        ax_ctx *bare = ok ? ax_ctx_new(&b) : NULL;
        struct stat sb;
        if (ok && (!bare || ax_program_save(pr, file) != 0 || stat(file, &sb) != 0)) {
            snprintf(err, errsize, "save: %s", ax_error(cx));
            ok = false;
        }
        if (ok) {
            f->file_kb = (double)sb.st_size / 1024;
            t0 = now_ms();
            ax_program *l = ax_program_load(bare, file);
            f->load = now_ms() - t0;
            if (!l) {
                snprintf(err, errsize, "load: %s", ax_error(bare));
                ok = false;
            }
            ax_program_free(l);
        }
        if (ok && (f->export_load = export_once(base, pr, bare, dir, err, errsize)) == -2) ok = false;
        ax_ctx_free(bare);
        ax_program_free(pr);
    }
    p->teardown(st);
    ax_ctx_free(cx);
    return ok;
}

/* The C compiler on the program's hand-written baseline, with the flags
 * of axle's kernels, into dir: its wall time in ms; -1 when there is no
 * baseline source here, -2 when the compiler failed. */
static double floor_once(const ax_options *base, const ex_program *p, const char *dir)
{
#ifdef AXLE_SOURCE_DIR
    char src[4096];
    snprintf(src, sizeof src, "%s/bench/baseline_%s.c", AXLE_SOURCE_DIR, p->name);
    char *dash = strchr(src + strlen(AXLE_SOURCE_DIR), '-');
    if (access(src, R_OK) && dash) strcpy(dash, ".c");   /* mandelbrot-while: mandelbrot's */
    if (access(src, R_OK)) return -1;
    char out[4400], inc1[4200], inc2[4200];
    snprintf(out, sizeof out, "%s/floor.so", dir);
    snprintf(inc1, sizeof inc1, "-I%s/bench", AXLE_SOURCE_DIR);
    snprintf(inc2, sizeof inc2, "-I%s/include", AXLE_SOURCE_DIR);
    char *extra[] = {"-DAX_BL_SUFFIX=_std", inc1, inc2, "-o", out, src, "-lm", NULL};
    double t = cc_with(base, extra);
    bool ok = t >= 0;
    remove(out);
    return ok ? t : -2;
#else
    (void)base, (void)p, (void)dir;
    return -1;
#endif
}

/* `axle run` in a new process, its kernels in the cache under xdg: the
 * compile_ms it reports, or -1. */
static double disk_once(const char *self, const ex_program *p, int64_t n, const char *xdg, int threads)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s' AXLE_CACHE=on '%s' run %s --size %lld --json%s%d", xdg, self,
             p->name, (long long)n, threads > 0 ? " --threads " : "", threads > 0 ? threads : 0);
    if (threads <= 0) {
        char *z = strrchr(cmd, '0');
        if (z) *z = 0;   /* drop the placeholder count */
    }
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    char line[4096] = "";
    double ms = -1;
    while (fgets(line, sizeof line, f)) {
        const char *k = strstr(line, "\"compile_ms\":");
        if (k) ms = atof(k + 13);
    }
    if (pclose(f) != 0) return -1;
    return ms;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: axle bench --compile [PROGRAM...] [--runs N] [--threads N] [--size N] [--json]\n"
               "  per program: a cold compile (no kernel cached; front end, code generation and the\n"
               "  C compiler apart), a compile from the disk cache in a new process (the graph's\n"
               "  build included), one from the memory cache (the build apart), and the load of the\n"
               "  program saved to a file where there is no compiler (and the file's size), and of the\n"
               "  program exported as C (its NAME_load, once compiled and linked); the floor:\n"
               "  the C compiler on the program's hand-written baseline with the kernels' flags, and\n"
               "  the ratio of the cold compile's C compiler time to it; medians of --runs (default\n"
               "  3), in ms.  --size: the inputs' size (default: each program's bench size); the\n"
               "  kernels do not depend on it, the saved and exported programs (which hold the\n"
               "  inputs) do.\n");
}

int axle_bench_compile(int argc, char **argv)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_CPU;
    int runs = 3;
    int64_t size = -1;   /* -1: each program's own */
    bool json = false;
    const ex_program *progs[64];
    int np = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--compile")) continue;
        if (!strcmp(s, "--runs") && v) {
            runs = atoi(v);
            i++;
        } else if (!strcmp(s, "--size") && v) {
            if (!axle_parse_size(v, &size) || size < 0) {
                fprintf(stderr, "axle bench: --size needs a size such as 1000, 1e6 or 2^20, not '%s'\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(s, "--threads") && v) {
            o.threads = atoi(v);
            i++;
        } else if (!strcmp(s, "--json")) {
            json = true;
        } else if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return 0;
        } else if (s[0] != '-' && np < 64) {
            if (!(progs[np++] = ex_find(s))) {
                fprintf(stderr, "axle bench: unknown program '%s' (see axle list)\n", s);
                return 2;
            }
        } else {
            fprintf(stderr, "axle bench: unknown or incomplete argument '%s'\n", s);
            usage(stderr);
            return 2;
        }
    }
    if (runs < 1 || runs > 1000) {
        fprintf(stderr, "axle bench: --runs needs a number from 1 to 1000\n");
        return 2;
    }
    if (np == 0)
        for (int i = 0; i < ex_nprograms && np < 64; i++)
            if (ex_programs[i]->baseline && !ex_programs[i]->extra) progs[np++] = ex_programs[i];
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "axle bench: cannot find the axle command itself\n");
        return 2;
    }
    self[sl] = 0;
    const char *t = getenv("TMPDIR");
    if (!t || t[0] != '/') t = "/tmp";
    if (!json)
        printf("%-13s %7s %9s %9s %9s %9s %7s %6s %9s %9s %9s %9s %8s %9s\n", "program", "kernels", "cold ms", "front",
               "codegen", "cc", "floor", "ratio", "disk ms", "memory ms", "build ms", "load ms", "file KiB", "export ms");
    int bad = 0;
    double *v[11];
    for (int k = 0; k < 11; k++) v[k] = calloc((size_t)runs, sizeof(double));
    for (int i = 0; i < np; i++) {
        const ex_program *p = progs[i];
        Figures f = {0};
        char err[1024] = "";
        bool ok = true;
        int kernels = 0;
        for (int r = 0; r < runs && ok; r++) {
            char xdg[4096], dir[4200];
            snprintf(xdg, sizeof xdg, "%s/axle-bench-XXXXXX", t);
            if (!mkdtemp(xdg)) {
                snprintf(err, sizeof err, "mkdtemp: %s", strerror(errno));
                ok = false;
                break;
            }
            snprintf(dir, sizeof dir, "%s/axle", xdg);
            /* the compiler's identity first (a cache keeps it across
               programs): a program of none of the benchmarks' kernels */
            {
                ax_options w = o;
                w.cache_dir = dir;
                ax_ctx *cx = ax_ctx_new(&w);
                int64_t one = 1;
                float x = 0.25f;
                ax_array *a = cx ? ax_array_from(cx, AX_F32, 1, &one, &x) : NULL;
                ax_array *r0 = a ? ax_run(cx, ax_map(warm_fn, NULL, ax_use(cx, a))) : NULL;
                ax_array_release(r0);
                ax_array_release(a);
                ax_ctx_free(cx);
            }
            int64_t n = size >= 0 ? size : p->default_size;
            ok = cold_once(&o, p, n, dir, &f, err, sizeof err);
            if (ok) {
                f.floor = floor_once(&o, p, xdg);
                if (f.floor == -2) {
                    snprintf(err, sizeof err, "the C compiler failed on the baseline");
                    ok = false;
                }
            }
            if (ok) {
                double d = disk_once(self, p, n, xdg, o.threads);
                if (d < 0) {
                    snprintf(err, sizeof err, "the run from the disk cache failed");
                    ok = false;
                }
                f.disk = d;
            }
            rm_tree(xdg);
            if (!ok) break;
            v[0][r] = f.total, v[1][r] = f.front, v[2][r] = f.codegen, v[3][r] = f.cc, v[4][r] = f.disk,
            v[5][r] = f.memory, v[6][r] = f.build, v[7][r] = f.load, v[8][r] = f.file_kb, v[9][r] = f.floor;
            v[10][r] = f.export_load;
            kernels = f.kernels;
        }
        if (!ok) {
            bad++;
            if (json) {
                printf("{\"program\":\"%s\",\"error\":", p->name);
                axle_json_str(stdout, err);
                printf("}\n");
            } else {
                printf("%-13s failed: %s\n", p->name, err);
            }
            continue;
        }
        double m[11];
        for (int k = 0; k < 11; k++) m[k] = axle_median(v[k], runs);
        char ex[32] = "-";
        if (m[10] >= 0) snprintf(ex, sizeof ex, "%.3f", m[10]);
        char fl[32] = "-", ra[32] = "-";
        if (m[9] > 0) {
            snprintf(fl, sizeof fl, "%.1f", m[9]);
            snprintf(ra, sizeof ra, "%.2f", m[3] / m[9]);
        }
        if (json)
            printf("{\"program\":\"%s\",\"kernels\":%d,\"cold_ms\":%.3f,\"front_ms\":%.3f,\"codegen_ms\":%.3f,"
                   "\"cc_ms\":%.3f,\"disk_ms\":%.3f,\"memory_ms\":%.4f,\"build_ms\":%.4f,\"load_ms\":%.3f,"
                   "\"file_kib\":%.1f,\"export_load_ms\":%s,\"floor_ms\":%s,\"cc_over_floor\":%s,\"runs\":%d}\n",
                   p->name, kernels, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[10] >= 0 ? ex : "null",
                   m[9] > 0 ? fl : "null", m[9] > 0 ? ra : "null", runs);
        else
            printf("%-13s %7d %9.1f %9.2f %9.2f %9.1f %7s %6s %9.3f %9.4f %9.4f %9.3f %8.1f %9s\n", p->name, kernels,
                   m[0], m[1], m[2], m[3], fl, ra, m[4], m[5], m[6], m[7], m[8], ex);
        fflush(stdout);
    }
    for (int k = 0; k < 11; k++) free(v[k]);
    return bad ? 1 : 0;
}
