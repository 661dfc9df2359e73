/*
 * Compile once, run many: parameters (ax_param, ax_param_exp,
 * ax_program_run_with), units of constants and used arrays as data, and
 * memory that stays flat in the loops a long-running user writes.  Each
 * backend that runs here is checked: the interpreter, the C backend and
 * OpenCL where a platform is installed.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif
#include <unistd.h>

/* Compiled objects in a cache directory (the disk cache's entries). */
static int cache_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > 3 && !strcmp(e->d_name + l - 3, ".so") && strncmp(e->d_name, "tmp-", 4)) n++;
    }
    closedir(d);
    return n;
}

/* A context on `backend` with a private cache directory in dir (made
 * here); NULL when the backend cannot run on this machine. */
static ax_ctx *ctx_with_cache(ax_backend_kind backend, char dir[64])
{
    strcpy(dir, "/tmp/axle-params-XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    ax_options o = {0};
    o.backend = backend;
    o.cache_dir = dir;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) return NULL;
    /* A trivial program tells whether the backend runs here. */
    ax_array *r = ax_run(cx, ax_unit(cx, ax_i32(1)));
    if (!r) {
        fprintf(stderr, "note: backend %d skipped: %s\n", (int)backend, ax_error(cx));
        ax_ctx_free(cx);
        harness_rm_tree(dir);
        return NULL;
    }
    ax_array_release(r);
    return cx;
}

static const ax_backend_kind backends[] = {AX_BACKEND_INTERP, AX_BACKEND_CPU, AX_BACKEND_OPENCL};
#define NBACKENDS (int)(sizeof backends / sizeof *backends)

static ax_exp saxpy(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = *(ax_exp *)env;
    return ax_add(ax_mul(a, x), y);
}

/* The README's saxpy with a scalar parameter: compiled once, run with ten
 * values of a and three inputs of different lengths, one cache entry. */
TEST(saxpy_compiled_once_runs_with_new_values_and_lengths)
{
    for (int b = 0; b < NBACKENDS; b++) {
        char dir[64];
        ax_ctx *cx = ctx_with_cache(backends[b], dir);
        if (!cx) continue;
        int before = cache_entries(dir);
        const ax_type *f32 = ax_type_scalar(AX_F32);
        ax_exp a = ax_param_exp(cx, 0, f32);
        ax_program *p = ax_compile(cx, ax_zip_with(saxpy, &a, ax_param(cx, 1, f32, 1), ax_param(cx, 2, f32, 1)));
        REQUIRE(p);
        CHECK_EQ_I(ax_program_params(p), 3);
        int after_compile = cache_entries(dir);
        if (backends[b] == AX_BACKEND_CPU) CHECK_EQ_I(after_compile, before + 1);
        ax_ctx_reset(cx);   /* the program survives; its parameters too */
        static const int64_t lengths[3] = {1000, 37, 100003};
        for (int k = 0; k < 10; k++) {
            int64_t n = lengths[k % 3];
            float av = 1.5f + (float)k;
            float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
            REQUIRE(x && y);
            for (int64_t i = 0; i < n; i++) {
                x[i] = (float)(i % 1000);
                y[i] = (float)(i % 7) - 3;
            }
            ax_array *args[3] = {ax_array_from(cx, AX_F32, 0, NULL, &av), ax_array_wrap(cx, AX_F32, 1, &n, x),
                                 ax_array_wrap(cx, AX_F32, 1, &n, y)};
            ax_array *r = NULL;
            int got = ax_program_run_with(p, args, 3, &r, 1);
            CHECKF(got == 1, "backend %d run %d: %s", (int)backends[b], k, ax_error(cx));
            if (got == 1) {
                CHECK_EQ_I(ax_array_size(r), n);
                const float *d = ax_array_data(r, 0);
                int bad = 0;
                for (int64_t i = 0; i < n && d; i++) {
                    float t = av * x[i];   /* exact: small integers times k + 1/2 */
                    if (d[i] != t + y[i]) bad++;
                }
                CHECKF(d && bad == 0, "backend %d run %d: %d wrong elements", (int)backends[b], k, bad);
                ax_array_release(r);
            }
            for (int i = 0; i < 3; i++) ax_array_release(args[i]);
            free(x);
            free(y);
        }
        CHECK_EQ_I(cache_entries(dir), after_compile);
        ax_program_free(p);
        ax_ctx_free(cx);
        harness_rm_tree(dir);
    }
}

/* ax_run of programs that differ only in a unit's constant or in the used
 * arrays' lengths: the second and later runs compile nothing new. */
TEST(units_of_constants_and_used_arrays_are_data)
{
    char dir[64];
    ax_ctx *cx = ctx_with_cache(AX_BACKEND_CPU, dir);
    if (!cx) return;
    int first = -1;
    for (int k = 0; k < 6; k++) {
        int64_t n = 10 + 7 * k;
        float *x = malloc(sizeof *x * (size_t)n);
        REQUIRE(x);
        for (int64_t i = 0; i < n; i++) x[i] = (float)i;
        float av = 0.25f * (float)(k + 1);
        ax_array *X = ax_array_wrap(cx, AX_F32, 1, &n, x);
        ax_exp a = ax_at_linear(ax_unit(cx, ax_f32(av)), ax_i64(0));
        /* a pair of constants as well: a tuple unit */
        ax_acc pair = ax_unit(cx, ax_tuple2(ax_f32(av), ax_i32(k)));
        ax_exp b = ax_cvt(ax_get(ax_at_linear(pair, ax_i64(0)), 1), AX_F32);
        ax_acc prog = ax_zip_with(saxpy, &a, ax_use(cx, X), ax_map(ax_fn_id, NULL, ax_use(cx, X)));
        ax_exp bb = b;
        prog = ax_zip_with(saxpy, &bb, prog, ax_use(cx, X));
        ax_array *r = RUN(cx, prog);
        if (r) {
            const float *d = ax_array_data(r, 0);
            for (int64_t i = 0; i < n; i++) {
                float t = av * x[i] + x[i];
                CHECK(d[i] == (float)k * t + x[i]);
            }
            ax_array_release(r);
        }
        if (k == 0) first = cache_entries(dir);
        else CHECK_EQ_I(cache_entries(dir), first);
        ax_array_release(X);
        free(x);
        ax_ctx_reset(cx);
    }
    CHECK(first >= 1);
    ax_ctx_free(cx);
    harness_rm_tree(dir);
}

static ax_exp plus(ax_exp x, ax_exp y, void *env) { (void)env; return ax_add(x, y); }

static ax_exp iota_f64(ax_exp ix, void *env)
{
    (void)env;
    return ax_cvt(ax_index_get(ix, 0), AX_F64);
}

/* Shapes change from run to run: a parameter for a generate's extent, and
 * a matrix parameter folded along its rows. */
TEST(parameters_change_shapes_between_runs)
{
    for (int b = 0; b < NBACKENDS; b++) {
        char dir[64];
        ax_ctx *cx = ctx_with_cache(backends[b], dir);
        if (!cx) continue;
        ax_exp n = ax_param_exp(cx, 0, ax_type_scalar(AX_I64));
        ax_acc gen = ax_generate(cx, ax_ix1(n), iota_f64, NULL);
        ax_acc rows = ax_fold(plus, NULL, ax_f64(0), ax_param(cx, 1, ax_type_scalar(AX_F64), 2));
        ax_program *p = ax_compile(cx, ax_atuple2(gen, rows));
        REQUIRE(p);
        for (int k = 0; k < 4; k++) {
            int64_t len = 3 + 50 * k, sh[2] = {1 + k, 5 + 3 * k};
            ax_array *m = ax_array_new(cx, ax_type_scalar(AX_F64), 2, sh);
            REQUIRE(m);
            double *md = ax_array_data(m, 0);
            for (int64_t i = 0; i < sh[0] * sh[1]; i++) md[i] = (double)i;
            ax_array *args[2] = {ax_array_from(cx, AX_I64, 0, NULL, &len), m};
            ax_array *out[2] = {0};
            int got = ax_program_run_with(p, args, 2, out, 2);
            CHECKF(got == 2, "backend %d: %s", (int)backends[b], ax_error(cx));
            if (got == 2) {
                CHECK_EQ_I(ax_array_size(out[0]), len);
                const double *g = ax_array_data(out[0], 0);
                CHECK(g && g[len - 1] == (double)(len - 1));
                CHECK_EQ_I(ax_array_rank(out[1]), 1);
                CHECK_EQ_I(ax_array_extent(out[1], 0), sh[0]);
                const double *s = ax_array_data(out[1], 0);
                for (int64_t r = 0; r < sh[0] && s; r++) {
                    double want = 0;
                    for (int64_t c = 0; c < sh[1]; c++) want += (double)(r * sh[1] + c);
                    CHECK(s[r] == want);
                }
                ax_array_release(out[0]);
                ax_array_release(out[1]);
            }
            ax_array_release(args[0]);
            ax_array_release(args[1]);
        }
        ax_program_free(p);
        ax_ctx_free(cx);
        harness_rm_tree(dir);
    }
}

typedef struct Lim {
    ax_ctx *cx;
    ax_exp lim;
} Lim;

static ax_acc below_limit(ax_acc x, void *env)
{
    Lim *l = env;
    return ax_unit(l->cx, ax_lt(ax_at_linear(x, ax_i64(0)), l->lim));
}

static ax_exp twice_plus1(ax_exp x, void *env) { (void)env; return ax_add(ax_mul(x, ax_i32(2)), ax_i32(1)); }

static ax_acc step(ax_acc x, void *env)
{
    (void)env;
    return ax_map(twice_plus1, NULL, x);
}

/* A parameter in a loop's condition and in a conditional's test. */
TEST(parameters_in_awhile_and_acond)
{
    for (int b = 0; b < NBACKENDS; b++) {
        char dir[64];
        ax_ctx *cx = ctx_with_cache(backends[b], dir);
        if (!cx) continue;
        Lim lim = {cx, ax_param_exp(cx, 0, ax_type_scalar(AX_I32))};
        ax_acc start = ax_param(cx, 1, ax_type_scalar(AX_I32), 1);
        ax_acc loop = ax_awhile(below_limit, step, &lim, start);
        ax_acc pick = ax_acond(ax_gt(lim.lim, ax_i32(100)), loop, start);
        ax_program *p = ax_compile(cx, pick);
        REQUIRE(p);
        static const int32_t limits[3] = {1000, 50, 70000};
        for (int k = 0; k < 3; k++) {
            int32_t l = limits[k], s0[2] = {k, k + 1};
            int64_t two = 2;
            ax_array *args[2] = {ax_array_from(cx, AX_I32, 0, NULL, &l), ax_array_from(cx, AX_I32, 1, &two, s0)};
            ax_array *r = NULL;
            CHECKF(ax_program_run_with(p, args, 2, &r, 1) == 1, "%s", ax_error(cx));
            int32_t want0 = s0[0], want1 = s0[1];
            if (l > 100)
                while (want0 < l) {
                    want0 = 2 * want0 + 1;
                    want1 = 2 * want1 + 1;
                }
            const int32_t *d = r ? ax_array_data(r, 0) : NULL;
            CHECK(d && d[0] == want0 && d[1] == want1);
            ax_array_release(r);
            ax_array_release(args[0]);
            ax_array_release(args[1]);
        }
        ax_program_free(p);
        ax_ctx_free(cx);
        harness_rm_tree(dir);
    }
}

/* Bad uses say what is wrong, and the context and program stay usable. */
TEST(parameter_errors_are_clear)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    REQUIRE(cx);
    const ax_type *f32 = ax_type_scalar(AX_F32), *i32 = ax_type_scalar(AX_I32);
    /* ax_run cannot give parameters */
    CHECK(!ax_run(cx, ax_map(ax_fn_id, NULL, ax_param(cx, 0, f32, 1))));
    CHECK(ax_status_of(cx) == AX_ERR_ARG && strstr(ax_error(cx), "ax_program_run_with"));
    /* builder misuse */
    CHECK(!ax_param(cx, -1, f32, 1));
    CHECK(ax_status_of(cx) == AX_ERR_BUILD && strstr(ax_error(cx), "index -1"));
    ax_clear_error(cx);
    CHECK(!ax_param(cx, AX_MAX_PARAMS, f32, 1));
    ax_clear_error(cx);
    CHECK(!ax_param(cx, 0, NULL, 1));
    CHECK(strstr(ax_error(cx), "element type"));
    ax_clear_error(cx);
    CHECK(!ax_param(cx, 0, f32, AX_MAX_RANK + 1));
    CHECK(strstr(ax_error(cx), "rank"));
    ax_clear_error(cx);
    /* one index, two types */
    CHECK(!ax_compile(cx, ax_atuple2(ax_param(cx, 0, f32, 1), ax_map(ax_fn_id, NULL, ax_param(cx, 0, f32, 2)))));
    CHECKF(ax_status_of(cx) == AX_ERR_BUILD && strstr(ax_error(cx), "parameter 0 is used as [f32]^1 and as [f32]^2"),
           "%s", ax_error(cx));
    /* parameter 1 unused: its argument may be NULL */
    ax_program *p = ax_compile(cx, ax_zip_with(plus, NULL, ax_param(cx, 0, i32, 1), ax_param(cx, 2, i32, 1)));
    REQUIRE(p);
    CHECK_EQ_I(ax_program_params(p), 3);
    int32_t v[3] = {1, 2, 3};
    int64_t n3 = 3;
    ax_array *good = ax_array_from(cx, AX_I32, 1, &n3, v);
    ax_array *wrong_t = ax_array_from(cx, AX_F32, 1, &n3, (float[3]){1, 2, 3});
    ax_array *wrong_r = ax_array_from(cx, AX_I32, 0, NULL, v);
    ax_ctx *other = ax_ctx_new(NULL);
    ax_array *foreign = other ? ax_array_from(other, AX_I32, 1, &n3, v) : NULL;
    ax_array *r = NULL;
    CHECK(ax_program_run(p, &r, 1) == -1 && strstr(ax_error(cx), "3 parameters"));
    CHECK(ax_program_run_with(p, (ax_array *[]){good, NULL, good}, 2, &r, 1) == -1);
    CHECK(ax_program_run_with(p, (ax_array *[]){good, NULL, NULL}, 3, &r, 1) == -1);
    CHECK(strstr(ax_error(cx), "parameter 2 is NULL"));
    CHECK(ax_program_run_with(p, (ax_array *[]){wrong_t, NULL, good}, 3, &r, 1) == -1);
    CHECK(ax_status_of(cx) == AX_ERR_ARG && strstr(ax_error(cx), "[f32]^1 where [i32]^1"));
    CHECK(ax_program_run_with(p, (ax_array *[]){good, NULL, wrong_r}, 3, &r, 1) == -1);
    CHECK(strstr(ax_error(cx), "[i32]^0 where [i32]^1"));
    if (foreign) {
        CHECK(ax_program_run_with(p, (ax_array *[]){foreign, NULL, good}, 3, &r, 1) == -1);
        CHECK(strstr(ax_error(cx), "another context"));
    }
    /* a builder's error pending on the context belongs to the terms being
     * built, not to the compiled program: the run succeeds, and the
     * builder's error stays pending with its message (it was once wiped,
     * leaving a later failure without a message: fuzzing) */
    CHECK(!ax_param(cx, -5, i32, 1));
    CHECK(ax_program_run_with(p, (ax_array *[]){good, NULL, good}, 3, &r, 1) == 1);
    ax_array_release(r);
    CHECKF(ax_status_of(cx) == AX_ERR_BUILD && strstr(ax_error(cx), "index -5"), "'%s'", ax_error(cx));
    ax_clear_error(cx);
    /* and then a good run */
    CHECK(ax_program_run_with(p, (ax_array *[]){good, NULL, good}, 3, &r, 1) == 1);
    const int32_t *d = r ? ax_array_data(r, 0) : NULL;
    CHECK(d && d[0] == 2 && d[1] == 4 && d[2] == 6);
    ax_array_release(r);
    ax_array_release(good);
    ax_array_release(wrong_t);
    ax_array_release(wrong_r);
    ax_array_release(foreign);
    ax_ctx_free(other);
    /* the program outlives its context, and then cannot run */
    ax_ctx_free(cx);
    CHECK(ax_program_run_with(p, NULL, 0, &r, 1) == -1);
    ax_program_free(p);
}

/* The resident set size in KiB (Linux). */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

/* What the process holds, in KiB, for the flat-memory test.  axle takes
 * all its memory from malloc, so with glibc this is the bytes malloc has
 * handed out and not had back (every arena, and its mmapped blocks): live
 * data, whatever the pages.  The resident size is not that: a CI run once
 * saw the heap's resident size grow by 8.5 MiB with not a byte more in
 * use, free pages of the heap touched again.  Elsewhere (and under
 * AddressSanitizer, whose allocator malloc's statistics do not see), the
 * resident size. */
static long held_kib(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33) && !defined(__SANITIZE_ADDRESS__)
    struct mallinfo2 mi = mallinfo2();
    return (long)((mi.uordblks + mi.hblkhd) >> 10);
#else
    return rss_kib();
#endif
}

/* The number of mappings of the process: a library loaded or a thread
 * started on each run would add to it. */
static int maps_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    int n = 0;
    for (int c; (c = fgetc(f)) != EOF;) n += c == '\n';
    fclose(f);
    return n;
}

/* The resident KiB of each mapping (/proc/self/smaps), to name the ones
 * that grew when the total did. */
typedef struct Maps { int n; struct { unsigned long lo; long kib; char name[80]; } m[1024]; } Maps;

static void maps_read(Maps *s)
{
    s->n = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) == 2 && at > 0 && s->n < 1024) {
            s->m[s->n].lo = lo;
            s->m[s->n].kib = 0;
            snprintf(s->m[s->n].name, sizeof s->m[0].name, "%.*s", (int)strcspn(line + at, "\n"), line + at);
            s->n++;
        } else if (!strncmp(line, "Rss:", 4) && s->n > 0)
            s->m[s->n - 1].kib = strtol(line + 4, NULL, 10);
    }
    fclose(f);
}

static void maps_report(const Maps *before, const char *what)
{
    Maps *now = malloc(sizeof *now);
    if (!now) return;
    maps_read(now);
    for (int i = 0; i < now->n; i++) {
        long was = 0;
        for (int j = 0; j < before->n; j++)
            if (before->m[j].lo == now->m[i].lo) was = before->m[j].kib;
        if (now->m[i].kib - was >= 256)
            fprintf(stderr, "memory: %s: mapping %lx %s grew by %ld KiB\n", what, now->m[i].lo,
                    now->m[i].name[0] ? now->m[i].name : "(anonymous)", now->m[i].kib - was);
    }
    free(now);
}

static ax_exp scale_plus(ax_exp x, void *env)
{
    ax_exp a = *(ax_exp *)env;
    return ax_add(ax_mul(a, x), ax_f32(1));
}

/* The two loops of the memory test, run in a child process (below):
 * out[0] and out[1] are the KiB each loop's later iterations added to
 * what the process holds (held_kib), out[2] the wrong results, out[3] 1
 * once done, out[4] and out[5] the mappings each loop added. */
static void flat_loops(long out[6], long limit)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    ax_ctx *cx = ax_ctx_new(&o);
    Maps *maps = malloc(sizeof *maps);
    ax_program *p = NULL;
    ax_array *X = NULL;
    int64_t n = 64;
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i;
    if (!cx || !maps || !(X = ax_array_wrap(cx, AX_F32, 1, &n, x))) goto done;
    /* (smaller in the sanitizer build, where LeakSanitizer checks leaks
     * and the quarantine of freed memory makes the resident size grow) */
    bool small = getenv("AXLE_TEST_SMALL") != NULL;
    const int iters = small ? 10000 : 100000, warm = iters / 20;
    /* pattern 1: compile once, run with a new scalar each step */
    ax_exp a = ax_param_exp(cx, 0, ax_type_scalar(AX_F32));
    p = ax_compile(cx, ax_map(scale_plus, &a, ax_param(cx, 1, ax_type_scalar(AX_F32), 1)));
    if (!p) goto done;
    ax_ctx_reset(cx);
    long base = 0, rss = 0, nmaps = 0;
    for (int k = 0; k < iters; k++) {
        float av = (float)(k % 100);
        ax_array *A = ax_array_from(cx, AX_F32, 0, NULL, &av);
        ax_array *r = NULL;
        if (ax_program_run_with(p, (ax_array *[]){A, X}, 2, &r, 1) != 1) out[2]++;
        else if (((const float *)ax_array_data(r, 0))[3] != av * 3 + 1) out[2]++;
        ax_array_release(r);
        ax_array_release(A);
        if (k == warm) maps_read(maps), base = held_kib(), rss = rss_kib(), nmaps = maps_count();
    }
    out[0] = held_kib() - base;
    out[4] = maps_count() - nmaps;
    fprintf(stderr, "memory: compiled program, %d runs: %+ld KiB held (%+ld KiB resident), %+ld mappings\n", iters - warm,
            out[0], rss_kib() - rss, out[4]);
    if (out[0] >= limit) maps_report(maps, "compiled program");
    ax_program_free(p);
    p = NULL;
    /* pattern 2: build, run, reset (a unit of the constant, so no compile) */
    for (int k = 0; k < iters; k++) {
        float av = (float)(k % 100);
        ax_exp ae = ax_at_linear(ax_unit(cx, ax_f32(av)), ax_i64(0));
        ax_array *r = ax_run(cx, ax_map(scale_plus, &ae, ax_use(cx, X)));
        if (!r || ((const float *)ax_array_data(r, 0))[3] != av * 3 + 1) out[2]++;
        ax_array_release(r);
        ax_ctx_reset(cx);
        if (k == warm) maps_read(maps), base = held_kib(), rss = rss_kib(), nmaps = maps_count();
    }
    out[1] = held_kib() - base;
    out[5] = maps_count() - nmaps;
    fprintf(stderr, "memory: build, run, reset, %d steps: %+ld KiB held (%+ld KiB resident), %+ld mappings\n", iters - warm,
            out[1], rss_kib() - rss, out[5]);
    if (out[1] >= limit) maps_report(maps, "build, run, reset");
    out[3] = 1;
done:
    ax_program_free(p);
    ax_array_release(X);
    ax_ctx_free(cx);
    free(maps);
}

/* The two patterns for a program run in a loop (README): a compiled
 * program with parameters, and building, running and resetting each step.
 * 100,000 iterations of each keep memory flat: what the later iterations
 * add is a small fraction of what 100,000 steps' terms would take.
 *
 * They run in a child process of their own, where only the forking thread
 * lives on and memory is axle's; what is measured is the memory malloc has
 * handed out (held_kib), not the resident size, whose free heap pages come
 * and go with the load of the machine.  The mappings are counted too. */
TEST(memory_stays_flat_over_100000_iterations)
{
#if defined(__SANITIZE_ADDRESS__)
    const long limit = 1L << 40;
#else
    const long limit = 8192;   /* KiB; without the reset, 95,000 steps grow by ~150 MiB */
#endif
    int fd[2];
    REQUIRE(pipe(fd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        long out[6] = {0};
        flat_loops(out, limit);
        ssize_t w = write(fd[1], out, sizeof out);
        int leaked = 0;
#if defined(__SANITIZE_ADDRESS__)
        leaked = __lsan_do_recoverable_leak_check();   /* _exit skips the check at exit */
#endif
        _exit(w == (ssize_t)sizeof out && !leaked ? 0 : 1);   /* not exit: the parent's atexit handlers are its own */
    }
    close(fd[1]);
    long out[6] = {0};
    ssize_t got = 0;
    for (ssize_t r; got < (ssize_t)sizeof out && (r = read(fd[0], (char *)out + got, sizeof out - (size_t)got)) != 0;)
        if (r > 0) got += r;
        else if (errno != EINTR) break;
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child process failed (status %d; under the sanitizers, a leak)", status);
    REQUIRE(got == (ssize_t)sizeof out);
    CHECKF(out[3] == 1, "the child could not make its context or compile the program");
    CHECK_EQ_I(out[2], 0);
    CHECKF(out[0] < limit, "compiled program: memory held grew by %ld KiB", out[0]);
    CHECKF(out[1] < limit, "build, run, reset: memory held grew by %ld KiB", out[1]);
#if !defined(__SANITIZE_ADDRESS__)   /* (its allocator maps memory of its own, its quarantine included) */
    CHECKF(out[4] < 16 && out[5] < 16, "the loops added %ld and %ld mappings", out[4], out[5]);
#endif
}
