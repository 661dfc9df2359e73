/*
 * The axle command: runs and inspects the built-in example programs.
 *
 *   axle list [--suite polybench|rodinia]
 *   axle run PROGRAM [--size N] [--backend interp|cpu|cuda|opencl] [--runs N]
 *                    [--no-sharing] [--no-fusion] [--no-simplify] [--no-cse] [--no-planner]
 *                    [--no-licm] [--no-loops] [--no-epilogues] [--no-cost-model] [--fast-math[=finite]] [--check] [--json]
 *                    [--mpi [--comm]]
 *   axle dump PROGRAM --stage STAGE [--size N] [--no-sharing] [--no-planner] [--json]
 *   (run and dump: --planner ilp|cbc|greedy sets AXLE_PLANNER, the planner's solver)
 *   axle bench [PROGRAM...] [--size N] [--runs N] [--backend B] [--json]   (tools/bench.c)
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle.h"
#include "programs.h"
#include "tools.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The stages ax_dump knows, and what each shows. */
static const struct { const char *name, *what; } stages[] = {
    {"source", "the program as built (before sharing recovery)"},
    {"sharing", "after sharing recovery: shared terms bound once by let"},
    {"simplify", "after the simplifier (constant folding, CSE, let shrinking)"},
    {"fusion", "after fusion and the optimiser's later passes"},
    {"kernels", "as fusion, with the kernel and intermediate-array counts (--json)"},
    {"plan", "the planner's loop graph and the loops it merged"},
    {"dot", "fusion before and after, as a Graphviz graph"},
    {"c", "the C the CPU backend generates"},
    {"cuda", "the CUDA kernel text"},
    {"opencl", "the OpenCL kernel text"},
    {"ptx", "the CUDA text compiled to PTX by NVRTC, with ptxas' register report"},
};
enum { NSTAGES = sizeof stages / sizeof *stages };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: axle list                 the built-in programs\n"
            "       axle list --suite S       a public suite's programs (polybench, rodinia)\n"
            "       axle run PROGRAM [options] run one (--check compares with plain C)\n"
            "       axle dump PROGRAM --stage STAGE [options]\n"
            "       axle save PROGRAM FILE [options]     compile it and save it (ax_program_save), inputs included\n"
            "       axle export PROGRAM [-o DIR] [options] compile it and write it as C: DIR/NAME.c, NAME.h\n"
            "       axle bench [PROGRAM...] [...] benchmark against hand-written C (see axle bench --help)\n"
            "       axle cache stats|clear    the disk cache of compiled kernels (AXLE_CACHE_SIZE bounds it)\n"
            "       axle help                 this text\n"
            "options of run and dump:\n"
            "  --size N                 problem size (1000, 1e6, 4M, 2^20); default: the program's own\n"
            "  --backend B              interp, cpu, cuda or opencl (default: cpu, or interp without a C compiler)\n"
            "  --planner P              ilp (default: an integer program, CBC where a search is needed),\n"
            "                           cbc (CBC always) or greedy; also AXLE_PLANNER\n"
            "  --no-sharing --no-fusion --no-simplify --no-cse --no-planner --no-licm --no-loops --no-epilogues\n"
            "  --no-cost-model\n"
            "                           turn one optimisation off\n"
            "  --fast-math[=finite]     relaxed floating point (see ax_options.fast_math in axle.h)\n"
            "  --json                   JSON output\n"
            "options of run only:\n"
            "  --runs N                 run N times and report each\n"
            "  --check                  compare the result with the hand-written C version\n"
            "  --mpi [--comm]           run over the processes of an MPI job (mpirun -np K axle run ...)\n"
            "stages of dump:\n");
    for (int i = 0; i < NSTAGES; i++) fprintf(f, "  %-9s %s\n", stages[i].name, stages[i].what);
}

typedef struct {
    const char *cmd, *program, *stage, *out;
    int64_t size;
    int runs;
    bool check, json, mpi, comm;
    ax_options opt;
} Args;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_args(int argc, char **argv, Args *a)
{
    memset(a, 0, sizeof *a);
    a->size = -1;
    a->runs = 1;
    if (argc < 2) return -1;
    a->cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--size") && v) {
            if (!axle_parse_size(v, &a->size)) {
                fprintf(stderr, "axle: bad size '%s' (1000, 1e6, 4M, 2^20)\n", v);
                return -1;
            }
            i++;
        }
        else if (!strcmp(s, "--runs") && v) { a->runs = atoi(v); i++; }
        else if (!strcmp(s, "--stage") && v) { a->stage = v; i++; }
        else if (!strcmp(s, "-o") && v) { a->out = v; i++; }
        else if (!strcmp(s, "--backend") && v) {
            if (!strcmp(v, "interp")) a->opt.backend = AX_BACKEND_INTERP;
            else if (!strcmp(v, "cpu")) a->opt.backend = AX_BACKEND_CPU;
            else if (!strcmp(v, "cuda")) a->opt.backend = AX_BACKEND_CUDA;
            else if (!strcmp(v, "opencl")) a->opt.backend = AX_BACKEND_OPENCL;
            else { fprintf(stderr, "axle: unknown backend '%s'\n", v); return -1; }
            i++;
        }
        else if (!strcmp(s, "--no-sharing")) a->opt.debug |= AX_DEBUG_NO_SHARING;
        else if (!strcmp(s, "--no-fusion")) a->opt.debug |= AX_DEBUG_NO_FUSION;
        else if (!strcmp(s, "--no-simplify")) a->opt.debug |= AX_DEBUG_NO_SIMPLIFY;
        else if (!strcmp(s, "--no-cse")) a->opt.debug |= AX_DEBUG_NO_CSE;
        else if (!strcmp(s, "--no-planner")) a->opt.debug |= AX_DEBUG_NO_PLANNER;
        else if (!strcmp(s, "--no-licm")) a->opt.debug |= AX_DEBUG_NO_LICM;
        else if (!strcmp(s, "--no-loops")) a->opt.debug |= AX_DEBUG_NO_LOOPS;
        else if (!strcmp(s, "--no-epilogues")) a->opt.debug |= AX_DEBUG_NO_EPILOGUES;
        else if (!strcmp(s, "--no-cost-model")) a->opt.debug |= AX_DEBUG_NO_COST_MODEL;
        else if (!strcmp(s, "--planner") && v) {
            /* the library reads it when a context is made (src/opt/ilp.c) */
            if (strcmp(v, "ilp") && strcmp(v, "greedy") && strcmp(v, "cbc")) {
                fprintf(stderr, "axle: unknown planner '%s' (ilp, cbc or greedy)\n", v);
                return -1;
            }
            setenv("AXLE_PLANNER", v, 1);
            i++;
        }
        else if (!strcmp(s, "--fast-math")) a->opt.fast_math = true;
        else if (!strcmp(s, "--fast-math=finite")) a->opt.fast_math = a->opt.finite_math = true;
        else if (!strcmp(s, "--check")) a->check = true;
        else if (!strcmp(s, "--json")) a->json = true;
        else if (!strcmp(s, "--mpi")) a->mpi = true;
        else if (!strcmp(s, "--comm")) a->comm = true;
        else if (s[0] != '-' && !a->program) a->program = s;
        else if (s[0] != '-' && !a->out && !strcmp(a->cmd, "save")) a->out = s;
        else { fprintf(stderr, "axle: unknown argument '%s'\n", s); return -1; }
    }
    if (a->runs < 1) a->runs = 1;
    return 0;
}

static const char *backend_name(ax_backend_kind k)
{
    switch (k) {
    case AX_BACKEND_INTERP: return "interp";
    case AX_BACKEND_CPU: return "cpu";
    case AX_BACKEND_CUDA: return "cuda";
    case AX_BACKEND_OPENCL: return "opencl";
    default: return "default";
    }
}

/* Progress of a long cold compile, on a terminal: shown once the
 * compile has taken half a second, as each kernel is done. */
typedef struct {
    double t0;
    bool shown;
} Progress;

static void show_progress(void *arg, int done, int total)
{
    Progress *p = arg;
    if (done == 0) {
        p->t0 = now_ms();
        p->shown = false;
        return;
    }
    if (!p->shown && now_ms() - p->t0 < 500) return;
    p->shown = true;
    fprintf(stderr, "\raxle: compiling: %d of %d kernels done", done, total);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

static int cmd_run(const ex_program *p, Args *a)
{
    Progress pg = {0, false};
    if (isatty(STDERR_FILENO) && !a->opt.progress) {
        a->opt.progress = show_progress;
        a->opt.progress_arg = &pg;
    }
    ax_ctx *cx = ax_ctx_new(&a->opt);
    if (!cx) { fprintf(stderr, "axle: out of memory\n"); return 1; }
    int64_t n = a->size >= 0 ? a->size : p->default_size;
    int rc = 1;
    void *st = p->setup(cx, n);
    ax_program *pr = NULL;
    ax_array *res[8] = {0};
    int nres = 0;
    double *times = calloc((size_t)a->runs, sizeof *times);
    const char *err = NULL, *check = "skipped", *bname = backend_name(a->opt.backend);
    char msg[512] = "";
    double compile_ms = 0, run_ms = 0;
    if (!st || !times) { err = "out of memory making the inputs"; goto out; }
    double t0 = now_ms();
    pr = ax_compile(cx, p->build(cx, st));
    compile_ms = now_ms() - t0;
    if (!pr) { err = ax_error(cx); goto out; }
    bname = ax_program_stats(pr)->backend;
    /* A warm-up run when several are asked for, then the median. */
    for (int r = (a->runs > 1 ? -1 : 0); r < a->runs; r++) {
        for (int i = 0; i < nres; i++) ax_array_release(res[i]);
        nres = 0;
        t0 = now_ms();
        nres = ax_program_run(pr, res, 8);
        double t = now_ms() - t0;
        if (nres < 0) { nres = 0; err = ax_error(cx); goto out; }
        if (r >= 0) times[r] = t;
    }
    run_ms = axle_median(times, a->runs);
    if (a->check) check = p->check(st, res, nres, msg, sizeof msg) == 0 ? "ok" : "fail";
    rc = strcmp(check, "fail") ? 0 : 1;
out:
    if (a->json) {
        printf("{\"program\":\"%s\",\"size\":%lld,\"backend\":\"%s\",\"compile_ms\":%.3f,\"run_ms\":%.3f,"
               "\"runs\":%d,\"check\":\"%s\"",
               p->name, (long long)n, bname, compile_ms, run_ms, a->runs, err ? "fail" : check);
        if (err) { printf(",\"error\":"); axle_json_str(stdout, err); }
        if (*msg) { printf(",\"message\":"); axle_json_str(stdout, msg); }
        printf("}\n");
    } else if (err) {
        fprintf(stderr, "axle: %s: %s\n", p->name, err);
    } else {
        printf("%s: size %lld, backend %s, compile %.3f ms, run %.3f ms (median of %d)", p->name, (long long)n,
               bname, compile_ms, run_ms, a->runs);
        if (a->check) printf(", check %s%s%s", check, *msg ? ": " : "", msg);
        printf("\n");
    }
    for (int i = 0; i < nres; i++) ax_array_release(res[i]);
    ax_program_free(pr);
    if (st) p->teardown(st);
    free(times);
    ax_ctx_free(cx);
    return err ? 1 : rc;
}

static int cmd_dump(const ex_program *p, Args *a)
{
    if (!a->stage) { fprintf(stderr, "axle: dump needs --stage STAGE (see axle help)\n"); return 2; }
    int k = 0;
    while (k < NSTAGES && strcmp(stages[k].name, a->stage)) k++;
    if (k == NSTAGES) {
        fprintf(stderr, "axle: unknown stage '%s'; the stages are:", a->stage);
        for (int i = 0; i < NSTAGES; i++) fprintf(stderr, "%s %s", i ? "," : "", stages[i].name);
        fputc('\n', stderr);
        return 2;
    }
    ax_ctx *cx = ax_ctx_new(&a->opt);
    if (!cx) return 1;
    int64_t n = a->size >= 0 ? a->size : (p->default_size < 1000 ? p->default_size : 1000);
    void *st = p->setup(cx, n);
    int rc = 1;
    char *s = st ? ax_dump(cx, p->build(cx, st), a->stage, a->json) : NULL;
    if (!s) {
        fprintf(stderr, "axle: %s: %s\n", p->name, st ? ax_error(cx) : "out of memory");
    } else {
        /* The library does not know the program's name: put it in. */
        const char *key = "\"program\":\"\"";
        char *at = a->json ? strstr(s, key) : NULL;
        if (at) {
            fwrite(s, 1, (size_t)(at - s), stdout);
            printf("\"program\":\"%s\"", p->name);
            fputs(at + strlen(key), stdout);
        } else {
            fputs(s, stdout);
        }
        if (!*s || s[strlen(s) - 1] != '\n') putchar('\n');
        rc = 0;
    }
    free(s);
    if (st) p->teardown(st);
    ax_ctx_free(cx);
    return rc;
}


/* axle save PROGRAM FILE, axle export PROGRAM [-o DIR]: the program at
 * its size (its inputs are data of it), compiled, then saved to a file or
 * written as C under the program's name ('-' made '_'). */
static int cmd_ship(const ex_program *p, Args *a)
{
    bool save = !strcmp(a->cmd, "save");
    if (save && !a->out) {
        fprintf(stderr, "axle: save needs a file name: axle save PROGRAM FILE\n");
        return 2;
    }
    ax_ctx *cx = ax_ctx_new(&a->opt);
    if (!cx) return 1;
    int64_t n = a->size > 0 ? a->size : p->default_size;
    void *st = p->setup(cx, n);
    ax_program *pr = st ? ax_compile(cx, p->build(cx, st)) : NULL;
    char name[128];
    snprintf(name, sizeof name, "%s%s", p->name[0] >= '0' && p->name[0] <= '9' ? "p" : "", p->name);
    for (char *c = name; *c; c++)
        if (*c == '-') *c = '_';
    int rc = !pr ? -1 : save ? ax_program_save(pr, a->out) : ax_program_export(pr, name, a->out ? a->out : ".");
    if (rc) fprintf(stderr, "axle: %s: %s\n", p->name, ax_error(cx));
    else if (save) printf("%s: saved to %s (load it with ax_program_load)\n", p->name, a->out);
    else printf("%s: wrote %s/%s.c and %s/%s.h\n", p->name, a->out ? a->out : ".", name, a->out ? a->out : ".", name);
    ax_program_free(pr);
    if (st) p->teardown(st);
    ax_ctx_free(cx);
    return rc ? 1 : 0;
}

static void print_bytes(int64_t b)
{
    if (b < 0) printf("no limit");
    else if (b >= (1ll << 20)) printf("%.1f MiB", (double)b / (1 << 20));
    else printf("%.1f KiB", (double)b / 1024);
}

/* axle cache stats|clear: the cache a default context uses (AXLE_CACHE_SIZE
 * and XDG_CACHE_HOME apply). */
static int cmd_cache(int argc, char **argv)
{
    ax_cache_info ci;
    if (argc != 3 || (strcmp(argv[2], "stats") && strcmp(argv[2], "clear"))) {
        usage(stderr);
        return 2;
    }
    bool clear = !strcmp(argv[2], "clear");
    int rc = clear ? ax_cache_clear(NULL, &ci) : ax_cache_stats(NULL, &ci);
    if (rc) {
        fprintf(stderr, "axle: cache %s: %s: %s\n", argv[2], ci.dir[0] ? ci.dir : "no cache directory ($HOME unset)",
                strerror(errno));
        return 1;
    }
    if (clear) {
        printf("%s: removed %lld entries, ", ci.dir, (long long)ci.entries);
        print_bytes(ci.bytes);
        printf("\n");
        return 0;
    }
    printf("directory %s\nentries   %lld\nsize      ", ci.dir, (long long)ci.entries);
    print_bytes(ci.bytes);
    printf("\nlimit     ");
    print_bytes(ci.limit);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "bench")) return axle_bench(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "cache")) return cmd_cache(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) { usage(stdout); return 0; }
    if (strcmp(cmd, "list") && strcmp(cmd, "run") && strcmp(cmd, "dump") && strcmp(cmd, "save") && strcmp(cmd, "export")) {
        fprintf(stderr, "axle: unknown command '%s' (the commands: list, run, dump, save, export, bench, cache, "
                "help)\n", cmd);
        return 2;
    }
    if (!strcmp(cmd, "list")) {
        /* one program a line, name first (scripts read the names): the
         * built-in programs, or with --suite NAME a public suite's */
        const ex_program *const *l = NULL;
        if (argc == 4 && !strcmp(argv[2], "--suite") && !(l = ex_suite(argv[3]))) {
            fprintf(stderr, "axle: unknown suite '%s' (polybench, rodinia)\n", argv[3]);
            return 2;
        }
        if (argc != 2 && !l) {
            fprintf(stderr, "axle: usage: axle list [--suite polybench|rodinia]\n");
            return 2;
        }
        if (l)
            for (; *l; l++) printf("%-14s %s\n", (*l)->name, (*l)->about);
        else
            for (int i = 0; i < ex_nprograms; i++) printf("%-14s %s\n", ex_programs[i]->name, ex_programs[i]->about);
        return 0;
    }
    Args a;
    if (parse_args(argc, argv, &a) != 0) {
        fprintf(stderr, "axle: see axle help\n");
        return 2;
    }
    if (!a.program) {
        fprintf(stderr, "axle: %s needs a PROGRAM (see axle list)\n", a.cmd);
        return 2;
    }
    const ex_program *p = ex_find(a.program);
    if (!p) { fprintf(stderr, "axle: unknown program '%s' (see axle list)\n", a.program); return 2; }
    if (a.mpi && !strcmp(a.cmd, "run")) {
#ifdef AX_HAVE_MPI
        return axle_run_mpi(p, a.size, a.runs, a.check, a.json, a.comm, &a.opt);
#else
        fprintf(stderr, "axle: --mpi: this axle was built without MPI (install mpich and libmpich-dev, then rebuild)\n");
        return 2;
#endif
    }
    if (!strcmp(a.cmd, "save") || !strcmp(a.cmd, "export")) return cmd_ship(p, &a);
    return !strcmp(a.cmd, "run") ? cmd_run(p, &a) : cmd_dump(p, &a);
}
