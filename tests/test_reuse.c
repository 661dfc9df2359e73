/* Tests of the program memory (src/driver/program.c, src/frontend/srckey.c): a
 * program compiled again in a context reuses the compilation of an equal
 * source graph, each program reading its own arrays, and any change to
 * what the graph computes misses it.
 * SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "harness.h"
#include "ir.h"
#include "backend/cpu/cg.h"
#include "runtime/mvec.h"
#include "opt/opt.h"
#include "frontend/frontend.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A context on backend k (the CPU one only where a C compiler runs). */
static ax_ctx *ctx_on(ax_backend_kind k, unsigned debug)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = k;
    o.threads = 2;
    o.debug = debug;
    return ax_ctx_new(&o);
}

static bool have_cc(void)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_CPU, 0);
    ax_array *r = cx ? ax_run(cx, ax_unit(cx, ax_i32(1))) : NULL;
    bool ok = r != NULL;
    if (!ok) printf("skip: the CPU backend does not run here (%s)\n", cx ? ax_error(cx) : "no context");
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

static ax_array *vec_f32(ax_ctx *cx, int64_t n, float scale)
{
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = scale * (float)(i % 17) - 3.0f;
    ax_array *a = ax_array_from(cx, AX_F32, 1, &n, v);
    free(v);
    return a;
}

static float at_f32(const ax_array *a, int64_t i) { return ((const float *)ax_array_data(a, 0))[i]; }

static ax_exp f_axpy(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    return ax_add(ax_mul(ax_f32(2.0f), x), y);
}

static ax_acc axpy(ax_ctx *cx, ax_array *x, ax_array *y)
{
    return ax_zip_with(f_axpy, NULL, ax_use(cx, x), ax_use(cx, y));
}

/* Runs a compiled program: its one result (NULL on failure). */
static ax_array *run1(ax_program *pr)
{
    ax_array *r = NULL;
    CHECK(ax_program_run(pr, &r, 1) == 1);
    return r;
}

/* 2x + y over the given arrays, checked element by element. */
static bool axpy_right(const ax_array *r, const ax_array *x, const ax_array *y)
{
    if (!r || ax_array_size(r) != ax_array_size(x)) return false;
    for (int64_t i = 0; i < ax_array_size(r); i++)
        if (at_f32(r, i) != 2.0f * at_f32(x, i) + at_f32(y, i)) return false;
    return true;
}

/* Two programs over different arrays (another size) share one
 * compilation; each reads its own arrays, run in any order, after the
 * other is freed, and after ax_ctx_reset. */
TEST(reuse_each_program_reads_its_own_arrays)
{
    ax_backend_kind kinds[2] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
    for (int b = 0; b < 2; b++) {
        if (kinds[b] == AX_BACKEND_CPU && !have_cc()) continue;
        ax_ctx *cx = ctx_on(kinds[b], 0);
        REQUIRE(cx);
        ax_array *x1 = vec_f32(cx, 1000, 1.0f), *y1 = vec_f32(cx, 1000, 0.5f);
        ax_array *x2 = vec_f32(cx, 77, -2.0f), *y2 = vec_f32(cx, 77, 3.0f);
        ax_program *p1 = ax_compile(cx, axpy(cx, x1, y1));
        ax_program *p2 = ax_compile(cx, axpy(cx, x2, y2));
        REQUIRE(p1 && p2);
        CHECK(!ax_program_stats(p1)->reused);
        CHECK(ax_program_stats(p2)->reused);
        CHECK_EQ_I(ax_program_stats(p2)->kernels, ax_program_stats(p1)->kernels);
        for (int round = 0; round < 2; round++) {
            ax_array *r1 = run1(p1), *r2 = run1(p2);
            CHECK(axpy_right(r1, x1, y1));
            CHECK(axpy_right(r2, x2, y2));
            ax_array_release(r1);
            ax_array_release(r2);
        }
        /* the arrays' builders' references dropped: the programs hold theirs */
        ax_ctx_reset(cx);
        ax_program_free(p1);
        ax_array *r2 = run1(p2);
        CHECK(axpy_right(r2, x2, y2));
        ax_array_release(r2);
        /* the operands swapped: the same graph up to the arrays, so reused,
         * and it computes 2 y + x */
        ax_program *p3 = ax_compile(cx, axpy(cx, y1, x1));
        REQUIRE(p3);
        CHECK(ax_program_stats(p3)->reused);
        ax_array *r3 = run1(p3);
        CHECK(axpy_right(r3, y1, x1));
        ax_array_release(r3);
        ax_program_free(p3);
        ax_array_release(x1);
        ax_array_release(y1);
        ax_array_release(x2);
        ax_array_release(y2);
        /* p2 outlives its context: orphaned, then freed */
        ax_ctx_free(cx);
        ax_program_free(p2);
    }
}

/* ------------------------------------------------ what misses */

typedef struct V {
    int which;            /* the variant */
} V;

static ax_exp f_var(ax_exp x, void *env)
{
    const V *v = env;
    switch (v->which) {
    case 1: return ax_mul(x, ax_f32(0.25f));                 /* another constant */
    case 2: return ax_add(x, ax_f32(0.5f));                  /* another primitive */
    case 3: { ax_exp s = ax_mul(x, x); return ax_add(s, s); }   /* shared */
    case 4: return ax_add(ax_mul(x, x), ax_mul(x, x));        /* not shared */
    case 5: return ax_mul(x, ax_f32(-0.0f));                 /* -0, not +0 */
    case 6: return ax_mul(x, ax_f32(0.0f));
    default: return ax_mul(x, ax_f32(0.5f));
    }
}

static ax_exp f_sub(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    return ax_sub(x, y);
}

static ax_exp sten_sum(const ax_exp *xs, void *env)
{
    (void)env;
    return ax_add(ax_add(xs[0], xs[1]), xs[2]);
}

static ax_exp f_sq(ax_exp x, void *env)
{
    (void)env;
    return ax_mul(x, x);
}

/* The programs a test compares, over a and b (f32 vectors), m (an f32
 * matrix) and d (an f64 vector). */
static ax_acc variant(ax_ctx *cx, int k, ax_array *a, ax_array *b, ax_array *m, ax_array *d)
{
    static V vs[7] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}};
    const ax_type *f32 = ax_type_scalar(AX_F32);
    switch (k) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6:
        return ax_map(f_var, &vs[k], ax_use(cx, a));
    case 7:   /* the same array twice, against two arrays */
        return ax_zip_with(f_sub, NULL, ax_use(cx, a), ax_use(cx, a));
    case 8:
        return ax_zip_with(f_sub, NULL, ax_use(cx, a), ax_use(cx, b));
    case 9: {   /* an array term shared, against two equal ones */
        ax_acc t = ax_map(f_var, &vs[0], ax_use(cx, a));
        return ax_zip_with(f_sub, NULL, t, t);
    }
    case 10:
        return ax_zip_with(f_sub, NULL, ax_map(f_var, &vs[0], ax_use(cx, a)), ax_map(f_var, &vs[0], ax_use(cx, a)));
    case 11:   /* f64 elements, against f32 (20) */
        return ax_map(f_sq, NULL, ax_use(cx, d));
    case 12:   /* stencil boundaries and sizes */
    case 13:
    case 14: {
        int size = k == 14 ? 5 : 3;
        return ax_stencil(sten_sum, NULL, &size, k == 13 ? ax_wrap() : ax_clamp(), ax_use(cx, a));
    }
    case 15:   /* a parameter (index 0, then 1) in place of the array */
        return ax_map(f_var, &vs[0], ax_param(cx, 0, f32, 1));
    case 16:
        return ax_map(f_var, &vs[0], ax_param(cx, 1, f32, 1));
    case 17:   /* a fold's initial value */
        return ax_fold(ax_fn_add, NULL, ax_f32(0.0f), ax_use(cx, a));
    case 18:
        return ax_fold(ax_fn_add, NULL, ax_f32(1.0f), ax_use(cx, a));
    case 19:   /* a matrix, against a vector (0) */
        return ax_map(f_var, &vs[0], ax_use(cx, m));
    case 20:
        return ax_map(f_sq, NULL, ax_use(cx, a));
    case 21:   /* parameters of other types: [f32]^2, [f32]^1, [f64]^1 */
        return ax_map(f_sq, NULL, ax_param(cx, 0, f32, 2));
    case 22:
        return ax_map(f_sq, NULL, ax_param(cx, 0, f32, 1));
    case 23:
        return ax_map(f_sq, NULL, ax_param(cx, 1, ax_type_scalar(AX_F64), 1));
    }
    return NULL;
}

enum { NVARIANTS = 24 };

/* Each variant compiled after every other one in one context: reused
 * exactly when it is the same variant, and its results always equal
 * those of a context that compiles it alone. */
TEST(reuse_misses_on_every_change)
{
    ax_backend_kind kind = AX_BACKEND_INTERP;
    ax_ctx *cx, *alone = ctx_on(kind, AX_DEBUG_NO_REUSE);
    REQUIRE(alone);
    int64_t n = 40, sh2[2] = {5, 8};
    double dv[40];
    float mv[40];
    for (int i = 0; i < 40; i++) dv[i] = 0.25 * i - 2, mv[i] = (float)i - 7.5f;
    for (int first = 0; first < NVARIANTS; first++)
        for (int second = 0; second < NVARIANTS; second++) {
            /* a, b, m, d, and a2 in place of a for the second */
            ax_array *x[2][5];
            cx = ctx_on(kind, 0);   /* a memory of nothing but the first */
            REQUIRE(cx);
            ax_ctx *cs[2] = {cx, alone};
            for (int c = 0; c < 2; c++) {
                x[c][0] = vec_f32(cs[c], n, 1.5f);
                x[c][1] = vec_f32(cs[c], n, -0.5f);
                x[c][2] = ax_array_from(cs[c], AX_F32, 2, sh2, mv);
                x[c][3] = ax_array_from(cs[c], AX_F64, 1, &n, dv);
                x[c][4] = vec_f32(cs[c], n, 2.5f);
            }
            ax_program *p1 = ax_compile(cx, variant(cx, first, x[0][0], x[0][1], x[0][2], x[0][3]));
            ax_program *p2 = ax_compile(cx, variant(cx, second, x[0][4], x[0][1], x[0][2], x[0][3]));
            REQUIRE(p1 && p2);
            CHECKF(ax_program_stats(p2)->reused == (first == second), "variant %d after %d: reused %d", second,
                   first, ax_program_stats(p2)->reused);
            /* the second's results against the same program compiled alone */
            ax_program *q = ax_compile(alone, variant(alone, second, x[1][4], x[1][1], x[1][2], x[1][3]));
            REQUIRE(q);
            CHECK(!ax_program_stats(q)->reused);
            ax_array *r = NULL, *s = NULL;
            /* the arguments for the parameters: [f32]^1 or (21) [f32]^2,
               and [f32]^1 or (23) [f64]^1 */
            int a0 = second == 21 ? 2 : 4, a1 = second == 23 ? 3 : 1;
            ax_array *args[2][2] = {{x[0][a0], x[0][a1]}, {x[1][a0], x[1][a1]}};
            int nr = ax_program_run_with(p2, args[0], 2, &r, 1), ns = ax_program_run_with(q, args[1], 2, &s, 1);
            CHECKF(nr == 1 && ns == 1, "variant %d: %s / %s", second, ax_error(cx), ax_error(alone));
            if (r && s) {
                CHECK_EQ_I(ax_array_size(r), ax_array_size(s));
                size_t w = ax_type_equal(ax_array_type(r), ax_type_scalar(AX_F64)) ? 8 : 4;
                CHECKF(ax_array_size(r) == ax_array_size(s) &&
                           !memcmp(ax_array_data(r, 0), ax_array_data(s, 0), (size_t)ax_array_size(r) * w),
                       "variant %d after %d: results differ", second, first);
            }
            ax_array_release(r);
            ax_array_release(s);
            ax_program_free(p1);
            ax_program_free(p2);
            ax_program_free(q);
            for (int c = 0; c < 2; c++)
                for (int i = 0; i < 5; i++) ax_array_release(x[c][i]);
            ax_ctx_free(cx);
            ax_ctx_reset(alone);
        }
    ax_ctx_free(alone);
}

/* Memory is per context: another context compiles for itself (its
 * options may differ: unsafe, fast-math, another backend). */
TEST(reuse_is_per_context)
{
    ax_ctx *c1 = ctx_on(AX_BACKEND_INTERP, 0), *c2 = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(c1 && c2);
    ax_array *x1 = vec_f32(c1, 10, 1), *y1 = vec_f32(c1, 10, 2), *x2 = vec_f32(c2, 10, 1), *y2 = vec_f32(c2, 10, 2);
    ax_program *p1 = ax_compile(c1, axpy(c1, x1, y1)), *p2 = ax_compile(c2, axpy(c2, x2, y2));
    REQUIRE(p1 && p2);
    CHECK(!ax_program_stats(p1)->reused && !ax_program_stats(p2)->reused);
    /* and a graph over an array of another context is refused as before */
    ax_program *bad = ax_compile(c1, axpy(c1, x1, y2));
    CHECK(bad == NULL);
    CHECKF(strstr(ax_error(c1), "another context"), "%s", ax_error(c1));
    ax_program_free(p1);
    ax_program_free(p2);
    ax_array_release(x1);
    ax_array_release(y1);
    ax_array_release(x2);
    ax_array_release(y2);
    ax_ctx_free(c1);
    ax_ctx_free(c2);
}

static ax_exp f_scale(ax_exp x, void *env) { return ax_mul(x, ax_f32(*(const float *)env)); }

/* The memory holds the most recent compilations only: the oldest of
 * more than it holds is compiled again, the newest reused. */
TEST(reuse_memory_is_bounded)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    ax_array *x = vec_f32(cx, 8, 1);
    enum { N = 40 };
    float k[N];
    for (int i = 0; i < N; i++) {
        k[i] = (float)i + 0.5f;
        ax_program *p = ax_compile(cx, ax_map(f_scale, &k[i], ax_use(cx, x)));
        REQUIRE(p);
        CHECK(!ax_program_stats(p)->reused);
        ax_program_free(p);
    }
    ax_program *old = ax_compile(cx, ax_map(f_scale, &k[0], ax_use(cx, x)));
    ax_program *recent = ax_compile(cx, ax_map(f_scale, &k[N - 1], ax_use(cx, x)));
    REQUIRE(old && recent);
    CHECK(!ax_program_stats(old)->reused);
    CHECK(ax_program_stats(recent)->reused);
    ax_array *r = run1(recent);
    CHECK(r && at_f32(r, 3) == at_f32(x, 3) * k[N - 1]);
    ax_array_release(r);
    ax_program_free(old);
    ax_program_free(recent);
    ax_array_release(x);
    ax_ctx_free(cx);
}

static ax_exp f_inc(ax_exp x, void *env)
{
    (void)env;
    return ax_add(x, ax_f32(1));
}

/* A chain of n maps adding 1 over x. */
static ax_acc inc_chain(ax_ctx *cx, ax_array *x, int n)
{
    ax_acc a = ax_use(cx, x);
    for (int i = 0; i < n; i++) a = ax_map(f_inc, NULL, a);
    return a;
}

/* The key's tables are kept in the context between keys (srckey.c
 * KeyScratch), and those a graph of more than 65,536 nodes grew are let
 * go: small and big graphs taking turns in one context are each keyed
 * right, reused, and read their own arrays. */
TEST(reuse_keys_of_small_and_big_graphs_in_turn)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    ax_array *x = vec_f32(cx, 8, 1), *y = vec_f32(cx, 8, 3);
    const int len[4] = {3, 20000, 3, 20000};
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 4; k++) {
            ax_array *in = round ? y : x;
            ax_program *p = ax_compile(cx, inc_chain(cx, in, len[k]));
            REQUIRE(p);
            /* the first small and big ones are compiled, every later one reused */
            CHECKF(ax_program_stats(p)->reused == (round > 0 || k >= 2), "round %d, graph %d", round, k);
            ax_array *r = run1(p);
            CHECK(r && at_f32(r, 5) == at_f32(in, 5) + (float)len[k]);
            ax_array_release(r);
            ax_program_free(p);
        }
        ax_ctx_reset(cx);
    }
    ax_array_release(x);
    ax_array_release(y);
    ax_ctx_free(cx);
}

/* Parameters: a program of placeholders reused takes its own arguments,
 * and a parameter used with two types is still refused. */
TEST(reuse_with_parameters)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    const ax_type *f32 = ax_type_scalar(AX_F32), *i32 = ax_type_scalar(AX_I32);
    ax_program *p[2];
    for (int k = 0; k < 2; k++) {
        p[k] = ax_compile(cx, ax_zip_with(f_axpy, NULL, ax_param(cx, 0, f32, 1), ax_param(cx, 1, f32, 1)));
        REQUIRE(p[k]);
        CHECK(ax_program_stats(p[k])->reused == (k == 1));
        CHECK_EQ_I(ax_program_params(p[k]), 2);
    }
    ax_array *x = vec_f32(cx, 30, 1), *y = vec_f32(cx, 30, 7);
    ax_array *args[2][2] = {{x, y}, {y, x}};
    for (int k = 0; k < 2; k++) {
        ax_array *r = NULL;
        CHECK(ax_program_run_with(p[k], args[k], 2, &r, 1) == 1);
        CHECK(axpy_right(r, args[k][0], args[k][1]));
        ax_array_release(r);
    }
    /* one index as [f32]^1 and [i32]^1: an error, compiled or reused */
    for (int k = 0; k < 2; k++) {
        ax_program *bad = ax_compile(cx, ax_zip_with(f_sub, NULL, ax_param(cx, 0, f32, 1),
                                                     ax_map(ax_fn_id, NULL, ax_param(cx, 0, i32, 1))));
        CHECK(bad == NULL);
        CHECKF(strstr(ax_error(cx), "parameter 0") || strstr(ax_error(cx), "type"), "%s", ax_error(cx));
    }
    ax_program_free(p[0]);
    ax_program_free(p[1]);
    ax_array_release(x);
    ax_array_release(y);
    ax_ctx_free(cx);
}

/* ------------------------------------------------ program entries (disk) */

/* A CPU context on cache dir with these options (threads 2 unless set). */
static ax_ctx *ctx_disk(const char *dir, const ax_options *base)
{
    ax_options o = base ? *base : (ax_options){0};
    o.backend = AX_BACKEND_CPU;
    o.cache_dir = dir;
    if (!o.threads) o.threads = 2;
    return ax_ctx_new(&o);
}

static ax_exp f_half(ax_exp x, void *env)
{
    (void)env;
    return ax_mul(x, ax_f32(0.5f));
}

/* Three kernels (a map, a fold, a scan) over x: with two compiler
 * processes, two batches. */
static ax_acc three(ax_ctx *cx, ax_array *x)
{
    ax_acc xs = ax_use(cx, x);
    return ax_atuple(3, (ax_acc[]){ax_map(f_half, NULL, xs), ax_fold(ax_fn_add, NULL, ax_f32(0), xs),
                                   ax_scanl1(ax_fn_max, NULL, xs)});
}

/* Compiles `three` over a vector of n in cx, runs it and compares every
 * result with the interpreter's, bit for bit; whether the program came
 * from the disk (-1: it failed). */
static int three_from_disk(ax_ctx *cx, int64_t n)
{
    ax_ctx *ci = ctx_on(AX_BACKEND_INTERP, 0);
    ax_array *x = vec_f32(cx, n, 0.75f), *xi = vec_f32(ci, n, 0.75f);
    ax_program *p = ax_compile(cx, three(cx, x)), *q = ax_compile(ci, three(ci, xi));
    int rc = -1;
    ax_array *r[3] = {0}, *s[3] = {0};
    if (p && q && ax_program_run(p, r, 3) == 3 && ax_program_run(q, s, 3) == 3) {
        rc = ax_program_stats(p)->from_disk;
        for (int k = 0; k < 3; k++)
            if (ax_array_size(r[k]) != ax_array_size(s[k]) ||
                memcmp(ax_array_data(r[k], 0), ax_array_data(s[k], 0), 4 * (size_t)ax_array_size(r[k]))) {
                fprintf(stderr, "result %d differs from the interpreter's\n", k);
                rc = -1;
            }
    } else {
        fprintf(stderr, "three: %s / %s\n", ax_error(cx), ax_error(ci));
    }
    for (int k = 0; k < 3; k++) {
        ax_array_release(r[k]);
        ax_array_release(s[k]);
    }
    ax_program_free(p);
    ax_program_free(q);
    ax_array_release(x);
    ax_array_release(xi);
    ax_ctx_free(ci);
    return rc;
}

/* Removes every file of dir whose name ends with suffix; how many. */
static int remove_kind(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name), k = strlen(suffix);
        if (l > k && !strcmp(e->d_name + l - k, suffix) && strncmp(e->d_name, "tmp-", 4)) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            n += unlink(path) == 0;
        }
    }
    if (d) closedir(d);
    return n;
}

/* Flips a byte in the middle of every program entry (.prog); how many. */
static int corrupt_programs(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l <= 5 || strcmp(e->d_name + l - 5, ".prog")) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDWR);
        off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
        unsigned char c;
        if (fd >= 0 && pread(fd, &c, 1, size / 2) == 1) {
            c ^= 0x10;
            n += pwrite(fd, &c, 1, size / 2) == 1;
        }
        if (fd >= 0) close(fd);
    }
    if (d) closedir(d);
    return n;
}

/* A program compiled in one context is found, compiled, in a new one
 * (another process would find it alike): at another size, with fewer
 * compiler processes; nothing compiled, results the interpreter's. */
TEST(program_entry_found_by_a_new_context)
{
    if (!have_cc()) return;
    char dir[] = "/tmp/axle-test-progent-XXXXXX";
    REQUIRE(mkdtemp(dir));
    ax_ctx *a = ctx_disk(dir, NULL);
    REQUIRE(a);
    CHECK_EQ_I(three_from_disk(a, 5000), 0);
    ax_ctx_free(a);
    int64_t sizes[3] = {5000, 123, 70000};
    for (int k = 0; k < 3; k++) {
        ax_options o = {0};
        o.threads = k == 2 ? 1 : 2;
        ax_ctx *b = ctx_disk(dir, &o);
        REQUIRE(b);
        CHECKF(three_from_disk(b, sizes[k]) == 1, "size %lld, %d threads", (long long)sizes[k], o.threads);
        CpuCounters c;
        REQUIRE(cpu_counters(b, &c));
        CHECK_EQ_I(c.compiled, 0);
        CHECK_EQ_I(c.cached, 1);
        ax_ctx_free(b);
    }
    /* no-reuse: compiled in full, from the kernels' entries */
    ax_options o = {0};
    o.debug = AX_DEBUG_NO_REUSE;
    ax_ctx *c = ctx_disk(dir, &o);
    REQUIRE(c);
    CHECK_EQ_I(three_from_disk(c, 5000), 0);
    ax_ctx_free(c);
    harness_rm_tree(dir);
}

/* A damaged entry, or one whose kernels were evicted, is a miss: the
 * program is compiled (results right) and its entry stored again. */
TEST(program_entry_damaged_or_incomplete_falls_back)
{
    if (!have_cc()) return;
    char dir[] = "/tmp/axle-test-progbad-XXXXXX";
    REQUIRE(mkdtemp(dir));
    for (int round = 0; round < 3; round++) {
        ax_ctx *a = ctx_disk(dir, NULL);
        REQUIRE(a);
        CHECK(three_from_disk(a, 3000) >= 0);   /* compiled, or found */
        ax_ctx_free(a);
        if (round == 0) CHECK(corrupt_programs(dir) >= 1);
        else if (round == 1) CHECK(remove_kind(dir, ".so") >= 1);   /* its kernels evicted */
        else CHECK(remove_kind(dir, ".prog") >= 1);
        ax_ctx *b = ctx_disk(dir, NULL);
        REQUIRE(b);
        CHECKF(three_from_disk(b, 3000) == 0, "round %d: damaged, yet found", round);
        ax_ctx_free(b);
        ax_ctx *c = ctx_disk(dir, NULL);
        REQUIRE(c);
        CHECKF(three_from_disk(c, 3000) == 1, "round %d: not stored again", round);
        ax_ctx_free(c);
    }
    harness_rm_tree(dir);
}

/* The entry's key covers what decides the compiled program beyond its
 * source: each option changed misses it (and gives the interpreter's
 * results), and the same options find it. */
TEST(program_entry_key_covers_the_options)
{
    if (!have_cc()) return;
    char dir[] = "/tmp/axle-test-progkey-XXXXXX";
    REQUIRE(mkdtemp(dir));
    ax_ctx *a = ctx_disk(dir, NULL);
    REQUIRE(a);
    CHECK_EQ_I(three_from_disk(a, 2000), 0);
    ax_ctx_free(a);
    enum { N = 10 };
    static const char *const what[N] = {"unsafe", "fast-math", "cflags", "no-fusion", "no-simplify",
                                        "no-planner", "compiler command", "maths hook", "no-loops",
                                        "AXLE_PLANNER=greedy"};
    for (int k = 0; k < N; k++) {
        ax_options o = {0};
        if (k == 0) o.unsafe = true;
        if (k == 1) o.fast_math = true;
        if (k == 2) o.cflags = "-O2";
        if (k == 3) o.debug = AX_DEBUG_NO_FUSION;
        if (k == 4) o.debug = AX_DEBUG_NO_SIMPLIFY;
        if (k == 5) o.debug = AX_DEBUG_NO_PLANNER;
        if (k == 6) o.cc = "cc -DAXLE_TEST_OTHER_COMMAND";
        if (k == 8) o.debug = AX_DEBUG_NO_LOOPS;
        if (k == 9) setenv("AXLE_PLANNER", "greedy", 1);   /* read when the context is made */
        ax_ctx *b = ctx_disk(dir, &o);
        if (k == 9) unsetenv("AXLE_PLANNER");
        REQUIRE(b);
        if (k == 7) CHECK(ax__ctx_vecmath(b));
        /* fast-math results may differ from the interpreter's: only
         * whether the entry was found is asked there */
        int f = three_from_disk(b, 2000);
        CHECKF(f == 0 || (k == 1 && f == -1), "%s: found the entry of other options (%d)", what[k], f);
        ax_ctx_free(b);
    }
    ax_ctx *c = ctx_disk(dir, NULL);
    REQUIRE(c);
    CHECK_EQ_I(three_from_disk(c, 2000), 1);
    ax_ctx_free(c);
    harness_rm_tree(dir);
}

static ax_exp p_shift(ax_exp ix, void *env)
{
    (void)env;
    return ax_ix1(ax_add(ax_index_get(ix, 0), ax_i64(5)));
}

/* A program from its entry has no kernel text: a fault's checked copies
 * are generated and compiled when first needed, with the interpreter's
 * message. */
TEST(program_entry_checked_copies_on_need)
{
    if (!have_cc()) return;
    char dir[] = "/tmp/axle-test-progchk-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char msg[3][512];
    for (int k = 0; k < 3; k++) {
        ax_ctx *cx = k == 2 ? ctx_on(AX_BACKEND_INTERP, 0) : ctx_disk(dir, NULL);
        REQUIRE(cx);
        ax_array *x = vec_f32(cx, 1000, 1);
        ax_program *p = ax_compile(cx, ax_backpermute(ax_ix1(ax_i64(1000)), p_shift, NULL, ax_use(cx, x)));
        REQUIRE(p);
        if (k < 2) CHECK(ax_program_stats(p)->from_disk == (k == 1));
        ax_array *r = NULL;
        CHECK(ax_program_run(p, &r, 1) == -1);
        snprintf(msg[k], sizeof msg[k], "%s", ax_error(cx));
        ax_program_free(p);
        ax_array_release(x);
        ax_ctx_free(cx);
    }
    CHECKF(!strcmp(msg[0], msg[2]) && !strcmp(msg[1], msg[2]), "\"%s\" / \"%s\" / \"%s\"", msg[0], msg[1], msg[2]);
    harness_rm_tree(dir);
}

/* ------------------------------------------------ the program's bytes */

static ax_exp f_poly(ax_exp x, void *env)
{
    (void)env;
    return ax_add(ax_mul(x, x), ax_cond(ax_gt(x, ax_f32(1)), ax_f32(2), x));
}

/* ir_save and ir_load: a program read back prints as it was written; and
 * any byte of it changed or cut off gives NULL or a program (never a
 * crash), which the verifier then judges. */
TEST(program_bytes_round_trip_and_damage)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    ax_array *x = vec_f32(cx, 10, 1), *y = vec_f32(cx, 10, 2);
    int sz = 3;
    ax_acc xs = ax_use(cx, x), ys = ax_use(cx, y);
    ax_acc src = ax_zip_with(f_sub, NULL, ax_map(f_poly, NULL, xs),
                             ax_stencil(sten_sum, NULL, &sz, ax_mirror(), ax_map(f_poly, NULL, ys)));
    Program *p = sharing_recover(cx, src, true);
    REQUIRE(p);
    ax_array *arrays[2] = {x, y};
    size_t n = 0;
    unsigned char *b = ir_save(p, arrays, 2, &n);
    REQUIRE(b && n > 20);
    /* an array not in the list: no bytes */
    size_t n1;
    CHECK(ir_save(p, arrays, 1, &n1) == NULL);
    int64_t dq = 0;
    Program *q = ir_load(cx, b, n, arrays, 2, &dq);
    REQUIRE(q);
    char *t1 = NULL, *t2 = NULL;
    size_t l1, l2;
    FILE *f1 = open_memstream(&t1, &l1), *f2 = open_memstream(&t2, &l2);
    ir_print(f1, p->root);
    ir_print(f2, q->root);
    fclose(f1);
    fclose(f2);
    CHECKF(!strcmp(t1, t2), "read back:\n%s\nwritten:\n%s", t2, t1);
    char m[256];
    CHECK(ir_verify(q, m, sizeof m) == 0);
    int64_t dp = ir_depth(p->root, 1000);
    CHECKF(dq >= dp && dq <= dp + 1, "depth %lld read, %lld written", (long long)dq, (long long)dp);
    free(t1);
    free(t2);
    program_free(q);
    int loaded = 0;
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            b[i] ^= (unsigned char)(1 << bit);
            Program *d = ir_load(cx, b, n, arrays, 2, NULL);
            if (d) {
                loaded++;
                (void)ir_verify(d, m, sizeof m);
                program_free(d);
            }
            b[i] ^= (unsigned char)(1 << bit);
        }
    for (size_t cut = 0; cut < n; cut++) CHECK(ir_load(cx, b, cut, arrays, 2, NULL) == NULL);
    fprintf(stderr, "  %zu bytes; %d of %zu damaged copies still read as programs\n", n, loaded, 3 * n);
    free(b);
    program_free(p);
    ax_array_release(x);
    ax_array_release(y);
    ax_ctx_free(cx);
}

/* ------------------------------------ the planner's loops and epilogues */

static ax_exp lp_sq1(ax_exp x, void *env)
{
    (void)env;
    return ax_add(ax_mul(x, x), ax_i32(1));
}
static ax_exp lp_even(ax_exp x, void *env)
{
    (void)env;
    return ax_eq(ax_band(x, ax_i32(1)), ax_i32(0));
}
/* a selection operator (ir_selection): the larger, the first of equals */
static ax_exp lp_pick(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_cond(ax_ge(a, b), a, b);
}
static ax_exp lp_affine(ax_exp x, void *env)
{
    (void)env;
    return ax_sub(ax_mul(x, ax_i32(3)), ax_i32(7));
}

/* Over xs ([i32]) and ms ([i32] of two dimensions): a map that is a result
 * and its sum, a filter that is a result, its sum and its largest element
 * by a selection operator (a loop of collect, filter and folds, the last
 * one conditional), and maps over a fold's and a scan's results that
 * nothing else reads (epilogues). */
enum { NLOOPRES = 7 };
static ax_acc loops_and_epilogues(ax_ctx *cx, ax_array *x, ax_array *m)
{
    ax_acc xs = ax_use(cx, x), ms = ax_use(cx, m);
    ax_acc sq = ax_map(lp_sq1, NULL, xs), ev = ax_filter(lp_even, NULL, xs);
    ax_acc r[NLOOPRES] = {sq,
                          ax_fold(ax_fn_add, NULL, ax_i32(0), sq),
                          ev,
                          ax_fold(ax_fn_add, NULL, ax_i32(3), ev),
                          ax_fold(lp_pick, NULL, ax_i32(-1000), ev),
                          ax_map(lp_affine, NULL, ax_fold(ax_fn_max, NULL, ax_i32(-1000000), ms)),
                          ax_map(lp_affine, NULL, ax_scanl1(ax_fn_add, NULL, xs))};
    return ax_atuple(NLOOPRES, r);
}

static ax_array *vec_i32(ax_ctx *cx, int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    int32_t *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)((i * 7919) % 201) - 100;
    ax_array *a = ax_array_from(cx, AX_I32, rank, shape, v);
    free(v);
    return a;
}

/* The program as the driver optimises it (driver/pipeline.c front_end's passes, in its
 * order), or NULL. */
static Program *optimised(ax_ctx *cx, ax_acc a)
{
    Program *p = sharing_recover(cx, a, true);
    if (!p) return NULL;
    bool ch = false;
    simplify_program(cx, p, true);
    opt_licm(cx, p, true);
    fuse_program(cx, p, 0);
    opt_array_cse(cx, p, &ch);
    simplify_program(cx, p, true);
    opt_licm(cx, p, false);
    opt_plan(cx, p, NULL, NULL);   /* the greedy planner's choice (no clusters) */
    simplify_program(cx, p, true);
    char m[256];
    if (ax_status_of(cx) != AX_OK || ir_verify(p, m, sizeof m)) {
        fprintf(stderr, "optimised: %s / %s\n", ax_error(cx), m);
        program_free(p);
        return NULL;
    }
    return p;
}

static char *printed(const Node *x)
{
    char *t = NULL;
    size_t l;
    FILE *f = open_memstream(&t, &l);
    if (!f) return NULL;
    ir_print(f, x);
    fclose(f);
    return t;
}

/* A program with the planner's loops (collect, filter, folds, a
 * conditional one) and epilogues (over a fold and a scan) reads back from
 * its bytes as it was written (the loops' generators, the epilogues'
 * marks), and any byte of it damaged gives NULL or a program the verifier
 * judges. */
TEST(program_bytes_round_trip_loops_and_epilogues)
{
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    int64_t nx = 100, sm[2] = {10, 8};
    ax_array *x = vec_i32(cx, 1, &nx), *m = vec_i32(cx, 2, sm);
    Program *p = optimised(cx, loops_and_epilogues(cx, x, m));
    REQUIRE(p);
    char *t1 = printed(p->root);
    REQUIRE(t1);
    /* what the test is about: the planner made them */
    const char *lp = strstr(t1, "loop[");
    CHECKF(lp && strstr(lp, "filter .") && strstr(lp, "fold .") && strstr(t1, "map<epilogue>"),
           "no loop with a filter and folds, or no epilogue:\n%s", t1);
    bool cond_fold = false;   /* a fold with its predicate (" if .k by") */
    for (const char *f = lp; f && (f = strstr(f, "fold .")); f++) {
        const char *e = strstr(f, " by @"), *i = strstr(f, " if .");
        if (e && i && i < e) cond_fold = true;
    }
    CHECKF(cond_fold, "no conditional fold in the loop:\n%s", t1);
    ax_array *arrays[2] = {x, m};
    size_t n = 0;
    unsigned char *b = ir_save(p, arrays, 2, &n);
    REQUIRE(b);
    Program *q = ir_load(cx, b, n, arrays, 2, NULL);
    REQUIRE(q);
    char *t2 = printed(q->root);
    CHECKF(t2 && !strcmp(t1, t2), "read back:\n%s\nwritten:\n%s", t2, t1);
    char msg[256];
    CHECKF(ir_verify(q, msg, sizeof msg) == 0, "%s", msg);
    /* the loops' generators and the epilogues' marks are in the bytes:
     * the program written again is the same bytes */
    size_t n2 = 0;
    unsigned char *b2 = ir_save(q, arrays, 2, &n2);
    CHECK(b2 && n2 == n && !memcmp(b, b2, n));
    free(b2);
    free(t2);
    program_free(q);
    int loaded = 0;
    for (size_t i = 0; i < n; i++) {
        b[i] ^= 0x04;
        Program *d = ir_load(cx, b, n, arrays, 2, NULL);
        if (d) {
            loaded++;
            (void)ir_verify(d, msg, sizeof msg);
            program_free(d);
        }
        b[i] ^= 0x04;
    }
    for (size_t cut = 0; cut < n; cut += 7) CHECK(ir_load(cx, b, cut, arrays, 2, NULL) == NULL);
    fprintf(stderr, "  %zu bytes; %d of %zu damaged copies still read as programs\n", n, loaded, n);
    free(b);
    free(t1);
    program_free(p);
    ax_array_release(x);
    ax_array_release(m);
    ax_ctx_free(cx);
}

/* Compiles loops_and_epilogues in cx over xs of nx and a matrix of
 * (nx / 8, 8), runs it and compares each result with the interpreter's
 * with the passes off, exactly; whether it came from the disk (-1: it
 * failed, or a result differs). */
static int loops_from_disk(ax_ctx *cx, int64_t nx)
{
    ax_ctx *ci = ctx_on(AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION | AX_DEBUG_NO_SIMPLIFY | AX_DEBUG_NO_CSE |
                                               AX_DEBUG_NO_PLANNER);
    int64_t sm[2] = {nx / 8, 8};
    ax_array *x = vec_i32(cx, 1, &nx), *m = vec_i32(cx, 2, sm), *xi = vec_i32(ci, 1, &nx), *mi = vec_i32(ci, 2, sm);
    ax_program *p = ax_compile(cx, loops_and_epilogues(cx, x, m)), *q = ax_compile(ci, loops_and_epilogues(ci, xi, mi));
    int rc = -1;
    ax_array *r[NLOOPRES] = {0}, *s[NLOOPRES] = {0};
    if (p && q && ax_program_run(p, r, NLOOPRES) == NLOOPRES && ax_program_run(q, s, NLOOPRES) == NLOOPRES) {
        rc = ax_program_stats(p)->from_disk;
        for (int k = 0; k < NLOOPRES; k++)
            if (ax_array_size(r[k]) != ax_array_size(s[k]) || ax_array_rank(r[k]) != ax_array_rank(s[k]) ||
                memcmp(ax_array_data(r[k], 0), ax_array_data(s[k], 0), 4 * (size_t)ax_array_size(r[k]))) {
                fprintf(stderr, "result %d differs from the interpreter's\n", k);
                rc = -1;
            }
    } else {
        fprintf(stderr, "loops: %s / %s\n", ax_error(cx), ax_error(ci));
    }
    for (int k = 0; k < NLOOPRES; k++) {
        ax_array_release(r[k]);
        ax_array_release(s[k]);
    }
    ax_program_free(p);
    ax_program_free(q);
    ax_array_release(x);
    ax_array_release(m);
    ax_array_release(xi);
    ax_array_release(mi);
    ax_ctx_free(ci);
    return rc;
}

/* ... is reused from its program entry by a new context (at other sizes,
 * nothing compiled) and from the program memory, with the interpreter's
 * results; without the planner it is another program (a miss). */
TEST(program_entry_loops_and_epilogues)
{
    if (!have_cc()) return;
    char dir[] = "/tmp/axle-test-progloop-XXXXXX";
    REQUIRE(mkdtemp(dir));
    ax_ctx *a = ctx_disk(dir, NULL);
    REQUIRE(a);
    CHECK_EQ_I(loops_from_disk(a, 4096), 0);
    ax_ctx_free(a);
    int64_t sizes[3] = {4096, 800, 33333 / 8 * 8};
    for (int k = 0; k < 3; k++) {
        ax_ctx *b = ctx_disk(dir, NULL);
        REQUIRE(b);
        CHECKF(loops_from_disk(b, sizes[k]) == 1, "size %lld", (long long)sizes[k]);
        CpuCounters c;
        REQUIRE(cpu_counters(b, &c));
        CHECK_EQ_I(c.compiled, 0);
        /* again in this context: the program memory */
        int64_t nx = sizes[k], sm[2] = {nx / 8, 8};
        ax_array *x = vec_i32(b, 1, &nx), *m = vec_i32(b, 2, sm);
        ax_program *pr = ax_compile(b, loops_and_epilogues(b, x, m));
        CHECK(pr && ax_program_stats(pr)->reused);
        ax_program_free(pr);
        ax_array_release(x);
        ax_array_release(m);
        CHECK_EQ_I(loops_from_disk(b, sizes[k]), 0);   /* reused: not from the disk, results right */
        ax_ctx_free(b);
    }
    ax_options o = {0};
    o.debug = AX_DEBUG_NO_PLANNER;
    ax_ctx *c = ctx_disk(dir, &o);
    REQUIRE(c);
    CHECK_EQ_I(loops_from_disk(c, 4096), 0);
    ax_ctx_free(c);
    harness_rm_tree(dir);
}
