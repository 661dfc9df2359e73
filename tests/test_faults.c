/*
 * Fault injection at every point (SQLite's and Lua's habit; src/core/fault.h).
 *
 * For each representative program (a dot product, Black-Scholes, a filter,
 * a permute, an awhile, and a stencil with a scan) and each available
 * backend, the allocations that building, compiling and running it make
 * are counted; then for every N the N-th allocation is made to fail, once
 * and, in a second sweep, from then on.  Each run must either succeed with
 * the right result or fail cleanly (NULL / -1, a status, a message), and
 * afterwards the same context must run the program correctly.  Leaks: the
 * context's own accounting must show no array left over (every build),
 * and LeakSanitizer checks the rest (the ASan build).
 *
 * The other fallible events are swept the same way in a context with a
 * private, initially empty kernel cache (so that the compiler runs): the
 * C compiler's start, dlopen of the compiled module, writes to the cache
 * directory, and the creation of the pool's threads.
 *
 * A new backend joins by adding a line to `backends` below.
 *
 * Environment: AXLE_FAULT_ONLY=name runs one program (a substring);
 * AXLE_FAULT_VERBOSE=1 prints every failure message; AXLE_FAULT_EVERY=k
 * fails every k-th allocation only (the first and the last always): make
 * test's plain pass sweeps so, its sanitizer pass sweeps every point,
 * where a leak or a use after free on an error path also shows.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"          /* white-box: cx->arrays, cx->mem_used */
#include "fault.h"
#include "programs.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ backends */

typedef struct BackendRow {
    const char *name;
    ax_backend_kind kind;
} BackendRow;

static const BackendRow backends[] = {
    {"interp", AX_BACKEND_INTERP},
    {"cpu", AX_BACKEND_CPU},
    {"opencl", AX_BACKEND_OPENCL},   /* where there is OpenCL (PoCL) */
};
#define NBACKENDS ((int)(sizeof backends / sizeof *backends))

static char g_cache[256];   /* a private kernel cache for the whole run */

static ax_ctx *new_ctx(ax_backend_kind k, const char *cache_dir, bool no_cache)
{
    ax_options o = {0};
    o.backend = k;
    o.threads = 2;
    o.cache_dir = cache_dir;
    o.no_cache = no_cache;
    return ax_ctx_new(&o);
}

static bool backend_available(ax_backend_kind k)
{
    ax_ctx *cx = new_ctx(k, g_cache, false);
    if (!cx) return false;
    ax_array *r = ax_run(cx, ax_unit(cx, ax_i32(1)));
    bool ok = r != NULL;
    if (!ok) printf("note: backend %d not available: %s\n", (int)k, ax_error(cx));
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

/* ------------------------------------------------------------ programs */

enum { N = 1000 };

/* Inputs live in C buffers owned by the test; each run wraps them. */
static float g_x[N], g_y[N];
static int32_t g_i[N];

static ax_acc dotp_build(ax_ctx *cx)
{
    int64_t n = N;
    ax_array *x = ax_array_wrap(cx, AX_F32, 1, &n, g_x), *y = ax_array_wrap(cx, AX_F32, 1, &n, g_y);
    ax_acc a = ax_fold(ax_fn_add, NULL, ax_f32(0), ax_zip_with(ax_fn_mul, NULL, ax_use(cx, x), ax_use(cx, y)));
    ax_array_release(x);
    ax_array_release(y);
    return a;
}

static bool dotp_check(ax_array *const *r, int n)
{
    /* small integers: every order of summation is exact */
    double s = 0;
    for (int i = 0; i < N; i++) s += (double)g_x[i] * g_y[i];
    return n == 1 && ax_array_size(r[0]) == 1 && *(const float *)ax_array_data(r[0], 0) == (float)s;
}

static ax_exp positive(ax_exp x, void *env) { (void)env; return ax_gt(x, ax_i32(0)); }

static ax_acc filter_build(ax_ctx *cx)
{
    int64_t n = N;
    ax_array *a = ax_array_wrap(cx, AX_I32, 1, &n, g_i);
    ax_acc r = ax_filter(positive, NULL, ax_use(cx, a));
    ax_array_release(a);
    return r;
}

static bool filter_check(ax_array *const *r, int n)
{
    if (n != 1) return false;
    const int32_t *d = ax_array_data(r[0], 0);
    int64_t k = 0;
    for (int i = 0; i < N; i++)
        if (g_i[i] > 0) {
            if (k >= ax_array_size(r[0]) || d[k] != g_i[i]) return false;
            k++;
        }
    return k == ax_array_size(r[0]);
}

/* A histogram of x mod 16: permute (+) zeros (\i -> x[i] mod 16) ones. */
static ax_exp bucket(ax_exp ix, void *env)
{
    ax_acc a = *(ax_acc *)env;
    return ax_ix1(ax_cvt(ax_mod(ax_at(a, ix), ax_i32(16)), AX_I64));
}
static ax_exp zero_i32(ax_exp ix, void *env) { (void)ix; (void)env; return ax_i32(0); }
static ax_exp one_i32(ax_exp x, void *env) { (void)x; (void)env; return ax_i32(1); }

static ax_acc permute_build(ax_ctx *cx)
{
    int64_t n = N;
    ax_array *a = ax_array_wrap(cx, AX_I32, 1, &n, g_i);
    ax_acc src = ax_use(cx, a);
    ax_array_release(a);
    ax_acc zeros = ax_generate(cx, ax_ix1(ax_i64(16)), zero_i32, NULL);
    return ax_permute(ax_fn_add, NULL, zeros, bucket, &src, ax_map(one_i32, NULL, src));
}

static bool permute_check(ax_array *const *r, int n)
{
    if (n != 1 || ax_array_size(r[0]) != 16) return false;
    int32_t h[16] = {0};
    for (int i = 0; i < N; i++) h[((g_i[i] % 16) + 16) % 16]++;
    return !memcmp(h, ax_array_data(r[0], 0), sizeof h);
}

/* awhile: doubles a vector until its first element reaches 1000. */
static ax_acc more(ax_acc a, void *env)
{
    (void)env;
    return ax_unit(ax_exp_ctx(ax_at(a, ax_ix1(ax_i64(0)))), ax_lt(ax_at(a, ax_ix1(ax_i64(0))), ax_i32(1000)));
}
static ax_exp twice(ax_exp x, void *env) { (void)env; return ax_mul(x, ax_i32(2)); }
static ax_acc double_all(ax_acc a, void *env) { (void)env; return ax_map(twice, NULL, a); }

static ax_acc awhile_build(ax_ctx *cx)
{
    int32_t v[8] = {3, 1, 4, 1, 5, 9, 2, 6};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){8}, v);
    ax_acc r = ax_awhile(more, double_all, NULL, ax_use(cx, a));
    ax_array_release(a);
    return r;
}

static bool awhile_check(ax_array *const *r, int n)
{
    /* 3 doubles 9 times to 1536 */
    static const int32_t want[8] = {1536, 512, 2048, 512, 2560, 4608, 1024, 3072};
    return n == 1 && ax_array_size(r[0]) == 8 && !memcmp(ax_array_data(r[0], 0), want, sizeof want);
}

/* A 3x3 box stencil (clamp) over a 20x50 matrix, then scanl1 (+) per row. */
static ax_exp box(const ax_exp *xs, void *env)
{
    (void)env;
    ax_exp s = xs[0];
    for (int i = 1; i < 9; i++) s = ax_add(s, xs[i]);
    return s;
}

static ax_acc stencil_build(ax_ctx *cx)
{
    int64_t sh[2] = {20, 50};
    ax_array *a = ax_array_wrap(cx, AX_I32, 2, sh, g_i);
    ax_acc r = ax_scanl1(ax_fn_add, NULL, ax_stencil(box, NULL, (int[]){3, 3}, ax_clamp(), ax_use(cx, a)));
    ax_array_release(a);
    return r;
}

static bool stencil_check(ax_array *const *r, int n)
{
    if (n != 1 || ax_array_size(r[0]) != 1000) return false;
    const int32_t *d = ax_array_data(r[0], 0);
    for (int y = 0; y < 20; y++) {
        int32_t acc = 0;
        for (int x = 0; x < 50; x++) {
            int32_t s = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy < 0 ? 0 : y + dy > 19 ? 19 : y + dy;
                    int xx = x + dx < 0 ? 0 : x + dx > 49 ? 49 : x + dx;
                    s += g_i[yy * 50 + xx];
                }
            acc += s;
            if (d[y * 50 + x] != acc) return false;
        }
    }
    return true;
}

/* Black-Scholes through the example registry (its own check). */
typedef struct Prog {
    const char *name;
    ax_acc (*build)(ax_ctx *cx);
    bool (*check)(ax_array *const *r, int n);
    const char *example;      /* or a built-in program, run through its registry entry */
} Prog;

static const Prog progs[] = {
    {"dotp", dotp_build, dotp_check, NULL},
    {"blackscholes", NULL, NULL, "blackscholes"},
    {"filter", filter_build, filter_check, NULL},
    {"permute", permute_build, permute_check, NULL},
    {"awhile", awhile_build, awhile_check, NULL},
    {"stencil-scan", stencil_build, stencil_check, NULL},
};
#define NPROGS ((int)(sizeof progs / sizeof *progs))

/* ------------------------------------------------------------ one run */

typedef struct Outcome {
    int n;                    /* results, or -1 */
    bool correct;
    ax_status st;
    char msg[AX_ERRMSG];
} Outcome;

/* Builds and runs prog in cx with f installed (NULL: none) around the
 * library's calls only. */
static Outcome run_once(ax_ctx *cx, const Prog *pg, AxFaults *f)
{
    Outcome o;
    memset(&o, 0, sizeof o);
    ax_array *out[4] = {0};
    if (pg->example) {
        const ex_program *ex = ex_find(pg->example);
        void *st = ex ? ex->setup(cx, 1000) : NULL;   /* outside the faults: the test's own inputs */
        if (!st) {
            o.n = -1;
            snprintf(o.msg, sizeof o.msg, "setup of %s failed: %s", pg->example, ax_error(cx));
            return o;
        }
        ax__faults_install(f);
        ax_acc a = ex->build(cx, st);
        o.n = ax_run_n(cx, a, out, 4);
        ax__faults_install(NULL);
        char msg[256];
        o.correct = o.n >= 0 && ex->check(st, out, o.n, msg, sizeof msg) == 0;
        ex->teardown(st);
    } else {
        ax__faults_install(f);
        ax_acc a = pg->build(cx);
        o.n = ax_run_n(cx, a, out, 4);
        ax__faults_install(NULL);
        o.correct = o.n >= 0 && pg->check(out, o.n);
    }
    o.st = ax_status_of(cx);
    snprintf(o.msg, sizeof o.msg, "%s", ax_error(cx));
    for (int i = 0; i < o.n; i++) ax_array_release(out[i]);
    return o;
}

static bool verbose(void)
{
    const char *v = getenv("AXLE_FAULT_VERBOSE");
    return v && *v && *v != '0';
}

/* Totals for the closing figures. */
static int64_t g_points, g_failed_cleanly, g_succeeded;

/* Fails event n of kind k (and every later one with persist) in a fresh
 * context; checks the outcome, then that the context runs the program. */
static void inject_one(const BackendRow *b, const Prog *pg, AxFaultKind k, int64_t n, bool persist,
                       const char *cache, bool no_cache)
{
    ax_ctx *cx = new_ctx(b->kind, cache, no_cache);
    if (!cx) {
        CHECK(!"ax_ctx_new");
        return;
    }
    AxFaults f;
    memset(&f, 0, sizeof f);
    f.fail_at[k] = n;
    f.persist[k] = persist;
    Outcome o = run_once(cx, pg, &f);
    g_points++;
    const char *how = persist ? "from then on" : "once";
    if (o.n >= 0) {
        g_succeeded++;
        CHECKF(o.correct, "%s/%s: %s %lld failing %s: a wrong result", b->name, pg->name, ax__fault_name(k),
               (long long)n, how);
    } else {
        g_failed_cleanly++;
        CHECKF(o.st != AX_OK && o.msg[0], "%s/%s: %s %lld failing %s: failed without a status or message "
               "(status %d, \"%s\")", b->name, pg->name, ax__fault_name(k), (long long)n, how, (int)o.st, o.msg);
        if (verbose())
            printf("  %s/%s %s %lld %s: %s\n", b->name, pg->name, ax__fault_name(k), (long long)n, how, o.msg);
    }
    /* No injected failure went unnoticed: the run failed, or it survived
     * an allocation that was allowed to fail (a cache, an optional probe). */
    CHECKF(f.failed[k] > 0, "%s/%s: event %lld of %s was never reached", b->name, pg->name, (long long)n,
           ax__fault_name(k));
    /* The same context now runs the program correctly. */
    Outcome again = run_once(cx, pg, NULL);
    CHECKF(again.n >= 0 && again.correct, "%s/%s: after %s %lld failing %s, the context does not run the "
           "program: %s", b->name, pg->name, ax__fault_name(k), (long long)n, how, again.msg);
    /* Every array was released: once the terms are gone (their uses hold
     * the inputs), none is left on the context's list and its byte count
     * is back to zero. */
    ax_ctx_reset(cx);
    CHECKF(cx->arrays == NULL && cx->mem_used == 0, "%s/%s: after %s %lld failing %s: arrays left over "
           "(%lld bytes)", b->name, pg->name, ax__fault_name(k), (long long)n, how, (long long)cx->mem_used);
    ax_ctx_free(cx);
}

/* The number of events of kind k that building, compiling and running pg
 * makes in a fresh context. */
static int64_t count_events(const BackendRow *b, const Prog *pg, AxFaultKind k, const char *cache, bool no_cache,
                            bool warm)
{
    if (warm) {
        /* a first run fills the kernel cache: the counted run is then a
         * cache hit, as every injected run will be */
        ax_ctx *cx = new_ctx(b->kind, cache, no_cache);
        Outcome o = run_once(cx, pg, NULL);
        CHECKF(o.n >= 0 && o.correct, "%s/%s: the program fails without faults: %s", b->name, pg->name, o.msg);
        ax_ctx_free(cx);
    }
    ax_ctx *cx = new_ctx(b->kind, cache, no_cache);
    AxFaults f;
    memset(&f, 0, sizeof f);
    Outcome o = run_once(cx, pg, &f);
    CHECKF(o.n >= 0 && o.correct, "%s/%s: the program fails without faults: %s", b->name, pg->name, o.msg);
    ax_ctx_free(cx);
    return f.seen[k];
}

/* The allocation points swept: 1, 1 + k, 1 + 2k, ... and the last
 * (k = AXLE_FAULT_EVERY, default 1). */
static int64_t sweep_every(void)
{
    const char *e = getenv("AXLE_FAULT_EVERY");
    long k = e && *e ? strtol(e, NULL, 10) : 1;
    return k >= 1 ? k : 1;
}
static int64_t next_point(int64_t n, int64_t k, int64_t total) { return n < total && n + k > total ? total : n + k; }

static bool selected(const Prog *pg)
{
    const char *only = getenv("AXLE_FAULT_ONLY");
    return !only || !*only || strstr(pg->name, only);
}

static void init_inputs(void)
{
    ex_rng r = {0x9E3779B97F4A7C15ull};
    for (int i = 0; i < N; i++) {
        g_x[i] = (float)(int)(ex_next(&r) % 17) - 8;
        g_y[i] = (float)(int)(ex_next(&r) % 13) - 6;
        g_i[i] = (int32_t)(ex_next(&r) % 2001) - 1000;
    }
}

/* A private cache directory under TMPDIR, removed at exit. */
static void make_cache_dir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(g_cache, sizeof g_cache, "%s/axle-faults-XXXXXX", t && *t == '/' ? t : "/tmp");
    if (!mkdtemp(g_cache)) snprintf(g_cache, sizeof g_cache, "/tmp");
}

static void remove_dir(const char *dir)
{
    char cmd[600];
    if (!strncmp(dir, "/tmp", 4) && strlen(dir) > 5 && strstr(dir, "axle-faults-")) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
}

/* ------------------------------------------------------------ the sweeps */

TEST(every_allocation_fails_cleanly_on_every_backend)
{
    init_inputs();
    make_cache_dir();
    int64_t every = sweep_every();
    for (int bi = 0; bi < NBACKENDS; bi++) {
        const BackendRow *b = &backends[bi];
        if (!backend_available(b->kind)) continue;
        for (int pi = 0; pi < NPROGS; pi++) {
            const Prog *pg = &progs[pi];
            if (!selected(pg)) continue;
            int64_t total = count_events(b, pg, AX_FAULT_ALLOC, g_cache, false, true);
            int64_t before = harness_failed_checks;
            int64_t tried = 0;
            for (int persist = 0; persist < 2; persist++)
                for (int64_t n = 1; n <= total; n = next_point(n, every, total)) {
                    inject_one(b, pg, AX_FAULT_ALLOC, n, persist, g_cache, false);
                    tried += persist == 0;
                }
            printf("%s/%s: %lld allocations, %lld of them failed once and from then on%s\n", b->name, pg->name,
                   (long long)total, (long long)tried, harness_failed_checks > before ? " (FAILURES)" : "");
        }
    }
}

/* The compiler, dlopen, cache writes and threads: in a context whose cache
 * is empty (so the compiler runs and the module is stored), and without a
 * disk cache (a private temporary directory). */
TEST(every_process_load_write_and_thread_fails_cleanly)
{
    if (!g_cache[0]) make_cache_dir();
    init_inputs();
    static const AxFaultKind kinds[] = {AX_FAULT_SPAWN, AX_FAULT_DLOPEN, AX_FAULT_WRITE, AX_FAULT_THREAD};
    for (int bi = 0; bi < NBACKENDS; bi++) {
        const BackendRow *b = &backends[bi];
        if (!backend_available(b->kind)) continue;
        for (int pi = 0; pi < NPROGS; pi += 2) {   /* dotp, filter, awhile: three different kernels */
            const Prog *pg = &progs[pi];
            if (!selected(pg)) continue;
            for (int ki = 0; ki < (int)(sizeof kinds / sizeof *kinds); ki++) {
                AxFaultKind k = kinds[ki];
                for (int nc = 0; nc < 2; nc++) {
                    /* a fresh empty cache each time: every event of a cold compile */
                    char dir[300];
                    snprintf(dir, sizeof dir, "%s/c%d", g_cache, nc);
                    int64_t total = 0;
                    {
                        char cmd[400];
                        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                        if (system(cmd) != 0) {}
                        total = count_events(b, pg, k, dir, nc == 1, false);
                    }
                    for (int persist = 0; persist < 2; persist++)
                        for (int64_t n = 1; n <= total; n++) {
                            char cmd[400];
                            snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                            if (system(cmd) != 0) {}
                            inject_one(b, pg, k, n, persist, dir, nc == 1);
                        }
                    if (total)
                        printf("%s/%s: %lld %s events (%s), each failed once and from then on\n", b->name,
                               pg->name, (long long)total, ax__fault_name(k), nc ? "no disk cache" : "cold cache");
                }
            }
        }
    }
}

TEST(zz_figures)
{
    printf("fault injection: %lld points tried, %lld runs failed cleanly, %lld succeeded\n", (long long)g_points,
           (long long)g_failed_cleanly, (long long)g_succeeded);
    CHECK(g_points > 0);
    remove_dir(g_cache);
}
