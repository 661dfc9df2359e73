/*
 * Regression tests for the defects of the reliability review:
 * one or more tests per numbered defect, each failing on the code before
 * the fix.  Fault injection, limits, maths tolerances and fuzzing have
 * their own files (test_faults.c, test_limits.c, test_mathfns.c,
 * tests/fuzz/).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include "ir.h"          /* white-box: stack_need, fault.h */
#include "fault.h"
#include "smvm.h"
#include "driver/driver.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ------------------------------------------------------------ helpers */

static ax_ctx *ctx_with(ax_backend_kind k)
{
    ax_options o = {0};
    o.backend = k;
    return ax_ctx_new(&o);
}

static const ax_backend_kind both[2] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
static const char *const both_names[2] = {"interp", "cpu"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A private directory (removed by rm_dir). */
static bool temp_dir(char *out, size_t n, const char *tag)
{
    const char *t = getenv("TMPDIR");
    snprintf(out, n, "%s/axle-rel-%s-XXXXXX", t && *t == '/' ? t : "/tmp", tag);
    return mkdtemp(out) != NULL;
}

static void rm_dir(const char *dir)
{
    if (!strstr(dir, "axle-rel-")) return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static bool write_file(const char *path, const char *text, int mode)
{
    FILE *f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok && chmod(path, (mode_t)mode) == 0;
}

/* A small program and its check: the context works. */
static ax_exp dbl(ax_exp x, void *env) { (void)env; return ax_mul(x, ax_i32(2)); }
static bool ctx_works(ax_ctx *cx)
{
    int32_t v[3] = {1, 2, 3};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){3}, v);
    ax_array *r = a ? ax_run(cx, ax_map(dbl, NULL, ax_use(cx, a))) : NULL;
    bool ok = r && ax_array_size(r) == 3 && ((int32_t *)ax_array_data(r, 0))[2] == 6;
    if (!ok) fprintf(stderr, "the context does not work: %s\n", ax_error(cx));
    ax_array_release(r);
    ax_array_release(a);
    return ok;
}

/* ===================================================== 1: programs survive a reset */

static ax_exp swap_scale(ax_exp x, void *env)
{
    (void)env;
    return ax_tuple2(ax_mul(ax_get(x, 1), ax_f32(2)), ax_add(ax_get(x, 0), ax_i32(1)));
}
static ax_exp sum3(const ax_exp *xs, void *env) { (void)env; return ax_add(ax_add(xs[0], xs[1]), xs[2]); }

TEST(d1_compiled_programs_survive_ctx_reset)
{
    for (int b = 0; b < 2; b++) {
        ax_ctx *cx = ctx_with(both[b]);
        REQUIRE(cx);
        /* tuple element types (made in the context), a stencil and a
         * slice (descriptions the builder keeps in the context's arena) */
        const ax_type *ts[2] = {ax_type_scalar(AX_I32), ax_type_scalar(AX_F32)};
        const ax_type *pair = ax_type_tuple(cx, 2, ts);
        int32_t iv[4] = {1, 2, 3, 4};
        float fv[4] = {0.5f, 1.5f, 2.5f, 3.5f};
        ax_array *in = ax_array_from_n(cx, pair, 1, (int64_t[]){4}, (const void *const[]){iv, fv});
        REQUIRE(in);
        ax_program *p1 = ax_compile(cx, ax_map(swap_scale, NULL, ax_use(cx, in)));
        int32_t m[6] = {1, 2, 3, 4, 5, 6};
        ax_array *mat = ax_array_from(cx, AX_I32, 2, (int64_t[]){2, 3}, m);
        ax_slice row1[2] = {ax_fixed(ax_i64(1)), ax_all()};
        ax_program *p2 = ax_compile(cx, ax_stencil(sum3, NULL, (int[]){3}, ax_clamp(), ax_slice_(2, row1, ax_use(cx, mat))));
        REQUIRE(p1 && p2);
        ax_ctx_reset(cx);
        /* the host array's own type survives too */
        char buf[64];
        CHECKF(!strcmp(ax_type_str(ax_array_type(in), buf, sizeof buf), "(i32, f32)"), "%s", buf);
        ax_array *r[2] = {0};
        int n = ax_program_run(p1, r, 2);
        CHECKF(n == 1, "%s: %s", both_names[b], ax_error(cx));
        if (n == 1) {
            CHECK(!strcmp(ax_type_str(ax_array_type(r[0]), buf, sizeof buf), "(f32, i32)"));
            const float *a0 = ax_array_data(r[0], 0);
            const int32_t *a1 = ax_array_data(r[0], 1);
            for (int i = 0; i < 4; i++) CHECK(a0[i] == 2 * fv[i] && a1[i] == iv[i] + 1);
            ax_array_release(r[0]);
        }
        n = ax_program_run(p2, r, 2);
        CHECKF(n == 1, "%s: %s", both_names[b], ax_error(cx));
        if (n == 1) {
            const int32_t *d = ax_array_data(r[0], 0);   /* clamp over 4 5 6 */
            CHECK(ax_array_size(r[0]) == 3 && d[0] == 13 && d[1] == 15 && d[2] == 17);
            ax_array_release(r[0]);
        }
        /* and after the program that made a result is gone, the result's type lives on */
        ax_program_free(p1);
        ax_program_free(p2);
        ax_array_release(mat);
        ax_array_release(in);
        CHECK(ctx_works(cx));
        ax_ctx_free(cx);
    }
}

/* ===================================================== 2: free order */

TEST(d2_program_free_after_ctx_free)
{
    for (int b = 0; b < 2; b++) {
        ax_ctx *cx = ctx_with(both[b]);
        int32_t v[2] = {5, 6};
        ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){2}, v);
        ax_program *p = ax_compile(cx, ax_map(dbl, NULL, ax_use(cx, a)));
        REQUIRE(p);
        ax_array *r = NULL;
        CHECK(ax_program_run(p, &r, 1) == 1);
        ax_array_release(r);
        ax_ctx_free(cx);   /* frees the arrays; the program keeps only its handle */
        const ax_stats *st = ax_program_stats(p);
        CHECK(st && st->backend && !strcmp(st->backend, both_names[b]));
        r = NULL;
        CHECK(ax_program_run(p, &r, 1) == -1 && r == NULL);   /* nothing to run with */
        ax_program_free(p);   /* after its context: fine (ASan checks it) */
    }
}

/* ===================================================== 3: byte counts */

static ax_exp zero_f64(ax_exp ix, void *env) { (void)ix; (void)env; return ax_f64(0); }

TEST(d3_byte_count_overflow_without_a_limit)
{
    for (int env = 0; env < 2; env++) {
        ax_options o = {0};
        if (env) setenv("AXLE_MEM_LIMIT", "9223372036854775807", 1);
        else o.mem_limit = -1;
        for (int b = 0; b < 2; b++) {
            o.backend = both[b];
            ax_ctx *cx = ax_ctx_new(&o);
            REQUIRE(cx);
            CHECK_EQ_I(ax_ctx_options(cx)->mem_limit, INT64_MAX);
            int64_t n = (int64_t)1 << 61;
            ax_array *a = ax_array_new(cx, ax_type_scalar(AX_F64), 1, &n);
            CHECK(a == NULL);
            CHECK(ax_status_of(cx) == AX_ERR_NOMEM);
            CHECKF(strstr(ax_error(cx), "2^63"), "%s", ax_error(cx));
            ax_array *r = ax_run(cx, ax_generate(cx, ax_ix1(ax_i64(n)), zero_f64, NULL));
            CHECK(r == NULL);
            CHECKF(ax_status_of(cx) == AX_ERR_NOMEM, "%s: %s", both_names[b], ax_error(cx));
            ax_array_release(a);
            ax_array_release(r);
            CHECK(ctx_works(cx));
            ax_ctx_free(cx);
        }
        unsetenv("AXLE_MEM_LIMIT");
    }
}

/* ===================================================== 4: failures are not cached */

TEST(d4_a_compiler_that_appears_later_is_used)
{
    char dir[256], cc[300], cache[300];
    REQUIRE(temp_dir(dir, sizeof dir, "cc"));
    snprintf(cc, sizeof cc, "%s/mycc", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    for (int dflt = 0; dflt < 2; dflt++) {
        unlink(cc);
        ax_options o = {0};
        o.backend = dflt ? AX_BACKEND_DEFAULT : AX_BACKEND_CPU;
        o.cc = cc;
        o.cache_dir = cache;
        ax_ctx *cx = ax_ctx_new(&o);
        int32_t v[2] = {1, 2};
        ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){2}, v);
        ax_program *p = ax_compile(cx, ax_map(dbl, NULL, ax_use(cx, a)));
        if (dflt) {
            /* the default falls back to the interpreter meanwhile */
            CHECKF(p && !strcmp(ax_program_stats(p)->backend, "interp"), "%s", ax_error(cx));
        } else {
            CHECK(!p && ax_status_of(cx) == AX_ERR_COMPILE);
            CHECKF(strstr(ax_error(cx), "not found"), "%s", ax_error(cx));
        }
        ax_program_free(p);
        /* there, but not executable: said so (defect 12) */
        REQUIRE(write_file(cc, "#!/bin/sh\nexec cc \"$@\"\n", 0644));
        if (!dflt) {
            p = ax_compile(cx, ax_map(dbl, NULL, ax_use(cx, a)));
            CHECK(!p && ax_status_of(cx) == AX_ERR_COMPILE);
            CHECKF(strstr(ax_error(cx), "not executable"), "%s", ax_error(cx));
            ax_program_free(p);
        }
        /* now it is: the same context compiles with it */
        REQUIRE(chmod(cc, 0755) == 0);
        p = ax_compile(cx, ax_map(dbl, NULL, ax_use(cx, a)));
        CHECKF(p && !strcmp(ax_program_stats(p)->backend, "cpu"), "%s", ax_error(cx));
        ax_array *r = NULL;
        CHECK(p && ax_program_run(p, &r, 1) == 1 && ((int32_t *)ax_array_data(r, 0))[1] == 4);
        ax_array_release(r);
        ax_program_free(p);
        ax_array_release(a);
        ax_ctx_free(cx);
    }
    rm_dir(dir);
}

/* ===================================================== 5: exact simplification */

static ax_exp scale_f64(ax_exp x, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
    return ax_mul(ax_const(cx, ax_f64(0x1p-10)), ax_mul(ax_const(cx, ax_f64(3072)), x));
}
static ax_exp scale_f32(ax_exp x, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
    return ax_mul(ax_const(cx, ax_f32(0x1p4f)), ax_mul(ax_const(cx, ax_f32(3.0f)), x));
}

TEST(d5_no_inexact_float_reassociation)
{
    /* overflow of the inner product, and a subnormal inner product */
    double xd[4] = {1e306, -1e306, 0x1p-1070, 3.0};
    float xf[4] = {3e38f, 0x1p-140f, 0x1.8p-130f, 7.0f};
    for (int b = 0; b < 2; b++) {
        for (int simp = 0; simp < 2; simp++) {
            ax_options o = {0};
            o.backend = both[b];
            o.debug = simp ? 0 : AX_DEBUG_NO_SIMPLIFY;
            ax_ctx *cx = ax_ctx_new(&o);
            ax_array *ad = ax_array_from(cx, AX_F64, 1, (int64_t[]){4}, xd);
            ax_array *af = ax_array_from(cx, AX_F32, 1, (int64_t[]){4}, xf);
            ax_array *rd = ax_run(cx, ax_map(scale_f64, NULL, ax_use(cx, ad)));
            ax_array *rf = ax_run(cx, ax_map(scale_f32, NULL, ax_use(cx, af)));
            REQUIRE(rd && rf);
            for (int i = 0; i < 4; i++) {
                volatile double wd = 3072.0 * xd[i];
                volatile float wf = 3.0f * xf[i];
                double ed = 0x1p-10 * wd;
                float ef = 0x1p4f * wf;
                double gd = ((double *)ax_array_data(rd, 0))[i];
                float gf = ((float *)ax_array_data(rf, 0))[i];
                CHECKF(!memcmp(&gd, &ed, 8), "%s%s f64 [%d]: %a, C says %a", both_names[b], simp ? "" : "/no-simplify",
                       i, gd, ed);
                CHECKF(!memcmp(&gf, &ef, 4), "%s%s f32 [%d]: %a, C says %a", both_names[b], simp ? "" : "/no-simplify",
                       i, (double)gf, (double)ef);
            }
            ax_array_release(rd);
            ax_array_release(rf);
            ax_array_release(ad);
            ax_array_release(af);
            ax_ctx_free(cx);
        }
    }
}

/* ===================================================== 7: semantic flags */

static ax_exp madd(ax_exp a, ax_exp b, ax_exp c, void *env) { (void)env; return ax_add(ax_mul(a, b), c); }
static ax_exp nan_or_inf(ax_exp x, void *env)
{
    (void)env;
    return ax_tuple2(ax_is_nan(x), ax_lt(ax_add(x, ax_f64(0)), ax_f64(1)));
}

TEST(d7_user_cflags_keep_the_semantic_flags)
{
    /* a*b + c where a fused multiply-add rounds once, not twice */
    double a[4] = {1 + 0x1p-30, 3.1, 1e10 + 1, 0.1};
    double bb[4] = {1 - 0x1p-30, 7.3, 1e10 - 1, 0.3};
    double c[4] = {-1, -22.63, -1e20, -0.03};
    double x[4] = {NAN, 1.0, -0.0, INFINITY};
    const char *flags[] = {"-ffp-contract=fast", "-ffast-math", "-O1 -ffast-math -ffp-contract=fast"};
    ax_ctx *ref = ctx_with(AX_BACKEND_INTERP);
    for (int fi = 0; fi < 3; fi++) {
        ax_options o = {0};
        o.backend = AX_BACKEND_CPU;
        o.cflags = flags[fi];
        ax_ctx *cx = ax_ctx_new(&o);
        ax_ctx *cs[2] = {ref, cx};
        ax_array *res[2][3] = {{0}};
        for (int k = 0; k < 2; k++) {
            ax_array *aa = ax_array_from(cs[k], AX_F64, 1, (int64_t[]){4}, a);
            ax_array *ab = ax_array_from(cs[k], AX_F64, 1, (int64_t[]){4}, bb);
            ax_array *ac = ax_array_from(cs[k], AX_F64, 1, (int64_t[]){4}, c);
            ax_array *ax = ax_array_from(cs[k], AX_F64, 1, (int64_t[]){4}, x);
            res[k][0] = ax_run(cs[k], ax_zip_with3(madd, NULL, ax_use(cs[k], aa), ax_use(cs[k], ab), ax_use(cs[k], ac)));
            /* an array of pairs: two buffers */
            res[k][1] = ax_run(cs[k], ax_map(nan_or_inf, NULL, ax_use(cs[k], ax)));
            res[k][2] = ax_array_retain(res[k][1]);
            ax_array_release(aa);
            ax_array_release(ab);
            ax_array_release(ac);
            ax_array_release(ax);
        }
        for (int j = 0; j < 3; j++) {
            REQUIRE(res[0][j] && res[1][j]);
            size_t bytes = j == 0 ? 32 : 4;
            int comp = j == 2 ? 1 : 0;
            CHECKF(!memcmp(ax_array_data(res[0][j], comp), ax_array_data(res[1][j], comp), bytes),
                   "AXLE_CFLAGS \"%s\" changed result %d", flags[fi], j);
            ax_array_release(res[0][j]);
            ax_array_release(res[1][j]);
        }
        ax_ctx_free(cx);
    }
    ax_ctx_free(ref);
}

/* ===================================================== 8: the compiler as a process */

/* Whether pid is a live process (not gone, not a zombie), within 2 s. */
static bool alive(pid_t pid)
{
    for (int i = 0; i < 200; i++) {
        char path[64], st[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f) return kill(pid, 0) == 0;
        size_t n = fread(st, 1, sizeof st - 1, f);
        fclose(f);
        st[n] = 0;
        const char *p = strrchr(st, ')');
        if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X') return false;
        usleep(10000);
    }
    return true;
}

TEST(d8_a_hanging_compiler_is_killed_and_reported)
{
    char dir[256], cc[300], marker[300], pidf[300], cache[300], script[1400];
    REQUIRE(temp_dir(dir, sizeof dir, "hang"));
    snprintf(cc, sizeof cc, "%s/hangcc", dir);
    snprintf(marker, sizeof marker, "%s/hang", dir);
    snprintf(pidf, sizeof pidf, "%s/pids", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    /* hangs while the marker exists; records its pid and its sleep's */
    snprintf(script, sizeof script,
             "#!/bin/sh\nif [ -e '%s' ]; then sleep 60 & echo $$ $! > '%s'; wait; fi\nexec cc \"$@\"\n", marker, pidf);
    REQUIRE(write_file(cc, script, 0755));
    REQUIRE(write_file(marker, "", 0644));
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.cc = cc;
    o.cache_dir = cache;
    o.cc_timeout = 1;
    ax_ctx *cx = ax_ctx_new(&o);
    int32_t v[2] = {1, 2};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){2}, v);
    double t0 = now_s();
    ax_array *r = ax_run(cx, ax_map(dbl, NULL, ax_use(cx, a)));
    double dt = now_s() - t0;
    CHECK(r == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_COMPILE);
    CHECKF(strstr(ax_error(cx), "did not finish within 1 s"), "%s", ax_error(cx));
    CHECKF(dt < 30, "ax_run took %.1f s with a 1 s limit", dt);
    /* the wrapper and its child were killed, and reaped */
    FILE *f = fopen(pidf, "r");
    long p1 = 0, p2 = 0;
    if (f) {
        CHECK(fscanf(f, "%ld %ld", &p1, &p2) == 2);
        fclose(f);
    }
    CHECK(p1 > 0 && p2 > 0);
    if (p1 > 0 && p2 > 0) {
        /* gone, or a zombie waiting for init (the kill went to the group) */
        CHECKF(!alive((pid_t)p1), "the compiler process %ld is still there", p1);
        CHECKF(!alive((pid_t)p2), "its child %ld is still there", p2);
    }
    /* the context is fine: the compiler no longer hangs, and it compiles */
    unlink(marker);
    r = ax_run(cx, ax_map(dbl, NULL, ax_use(cx, a)));
    CHECKF(r && ((int32_t *)ax_array_data(r, 0))[1] == 4, "%s", ax_error(cx));
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
    rm_dir(dir);
}

TEST(d8_a_child_left_holding_the_pipe_does_not_delay_the_compile)
{
    char dir[256], cc[300], pidf[300], cache[300], script[1400];
    REQUIRE(temp_dir(dir, sizeof dir, "linger"));
    snprintf(cc, sizeof cc, "%s/lingercc", dir);
    snprintf(pidf, sizeof pidf, "%s/pid", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    /* compiles, then leaves a process behind with the output pipe */
    snprintf(script, sizeof script, "#!/bin/sh\ncc \"$@\"\nrc=$?\nsleep 60 &\necho $! >> '%s'\nexit $rc\n", pidf);
    REQUIRE(write_file(cc, script, 0755));
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.cc = cc;
    o.cache_dir = cache;
    ax_ctx *cx = ax_ctx_new(&o);
    int32_t v[2] = {1, 2};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){2}, v);
    double t0 = now_s();
    ax_array *r = ax_run(cx, ax_map(dbl, NULL, ax_use(cx, a)));
    double dt = now_s() - t0;
    CHECKF(r && ((int32_t *)ax_array_data(r, 0))[1] == 4, "%s", ax_error(cx));
    CHECKF(dt < 30, "the compile waited %.1f s for the leftover process", dt);
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
    FILE *f = fopen(pidf, "r");
    for (long p; f && fscanf(f, "%ld", &p) == 1;)
        if (p > 0) kill((pid_t)p, SIGKILL);
    if (f) fclose(f);
    rm_dir(dir);
}

/* ===================================================== 9: large stencils */

static ax_exp sum_all(const ax_exp *xs, void *env)
{
    int n = *(int *)env;
    ax_exp s = xs[0];
    for (int i = 1; i < n; i++) s = ax_add(s, ax_mul(xs[i], ax_f32((float)(i % 7) - 3)));
    return s;
}
static ax_exp plus_half(ax_exp x, void *env) { (void)env; return ax_add(x, ax_f32(0.5f)); }

/* A stencil of w x w on both backends (a use, or a fused map of it), every
 * boundary; the results must be equal. */
static void stencil_agrees(int w, int bnd, bool fused, int64_t *c_bytes)
{
    int n = w * w;
    int64_t sh[2] = {37, 45};
    float *d = malloc(sizeof *d * 37 * 45);
    for (int i = 0; i < 37 * 45; i++) d[i] = (float)((i * 7) % 13) - 6;
    ax_array *res[2] = {0};
    ax_ctx *cs[2];
    for (int b = 0; b < 2; b++) {
        ax_ctx *cx = cs[b] = ctx_with(both[b]);
        ax_array *a = ax_array_from(cx, AX_F32, 2, sh, d);
        ax_acc in = ax_use(cx, a);
        if (fused) in = ax_map(plus_half, NULL, in);
        ax_boundary bd = bnd == 0 ? ax_clamp() : bnd == 1 ? ax_mirror() : bnd == 2 ? ax_wrap() : ax_constant(ax_f32(2.5f));
        ax_acc s = ax_stencil(sum_all, &n, (int[]){w, w}, bd, in);
        if (b == 1 && c_bytes) {
            char *c = ax_dump(cx, s, "c", false);
            *c_bytes = c ? (int64_t)strlen(c) : -1;
            free(c);
        }
        res[b] = ax_run(cx, s);
        CHECKF(res[b], "%dx%d %s: %s", w, w, both_names[b], ax_error(cx));
        ax_array_release(a);
    }
    if (res[0] && res[1])
        CHECKF(!memcmp(ax_array_data(res[0], 0), ax_array_data(res[1], 0), sizeof(float) * 37 * 45),
               "%dx%d boundary %d fused %d: the backends differ", w, w, bnd, fused);
    for (int b = 0; b < 2; b++) {
        ax_array_release(res[b]);
        ax_ctx_free(cs[b]);
    }
    free(d);
}

TEST(d9_a_51x51_stencil_is_compact_code)
{
    int64_t bytes = 0;
    stencil_agrees(51, 0, false, &bytes);
    fprintf(stderr, "51x51 stencil: %lld bytes of C\n", (long long)bytes);
    /* 1,076 KB unrolled (848 KB for a plain sum, which GCC did not
     * compile in ten minutes); the neighbourhood is read in loops now, and
     * what remains is the function's own 2,601 terms, twice (interior and
     * border): 478 KB.  (The run above compiled it.) */
    CHECKF(bytes > 0 && bytes < 600000, "%lld bytes", (long long)bytes);
    /* the loop form, every boundary, a use and a fused producer */
    for (int bnd = 0; bnd < 4; bnd++)
        for (int fused = 0; fused < 2; fused++) stencil_agrees(11, bnd, fused, NULL);
}

/* ===================================================== 10: small stacks */

typedef struct Deep {
    int shape, depth;
    ax_backend_kind be;
    bool ok;
    char msg[AX_ERRMSG];
    AxFaults *faults;
} Deep;

static ax_exp inc1(ax_exp x, void *env) { (void)env; return ax_add(x, ax_i32(1)); }
static ax_exp chain(ax_exp x, void *env)
{
    int d = *(int *)env;
    for (int i = 0; i < d; i++) x = ax_add(x, ax_i32(1));
    return x;
}
static ax_exp conds(ax_exp x, void *env)
{
    int d = *(int *)env;
    ax_exp r = x;
    for (int i = 0; i < d; i++) r = ax_cond(ax_gt(x, ax_i32(-1)), ax_add(r, ax_i32(1)), ax_sub(r, ax_i32(1)));
    return r;
}

static ax_acc deep_build(ax_ctx *cx, int shape, int depth, ax_array *a, int *dp)
{
    ax_acc x = ax_use(cx, a);
    *dp = depth;
    switch (shape) {
    case 0:
        for (int i = 0; i < depth; i++) x = ax_map(inc1, NULL, x);
        return x;
    case 1: return ax_map(chain, dp, x);
    default: *dp = depth / 2; return ax_map(conds, dp, x);
    }
}

static void *deep_thread(void *p)
{
    Deep *d = p;
    ax__faults_install(d->faults);
    ax_ctx *cx = ctx_with(d->be);
    int32_t v[3] = {1, 2, 3};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){3}, v);
    int dp;
    ax_acc x = deep_build(cx, d->shape, d->depth, a, &dp);
    ax_array *r = ax_run(cx, x);
    char *text = ax_dump(cx, x, "fusion", false);
    d->ok = r && ((int32_t *)ax_array_data(r, 0))[2] == 3 + dp && text;
    snprintf(d->msg, sizeof d->msg, "%s", ax_error(cx));
    free(text);
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
    ax__faults_install(NULL);
    return NULL;
}

static void run_in_small_thread(Deep *d, size_t stack)
{
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, stack);
    pthread_t t;
    int e = pthread_create(&t, &at, deep_thread, d);
    pthread_attr_destroy(&at);
    if (e) {
        snprintf(d->msg, sizeof d->msg, "pthread_create: %s", strerror(e));
        return;
    }
    pthread_join(t, NULL);
}

TEST(d10_deep_programs_on_a_1mib_thread_stack)
{
    /* 9,000 levels: far past what a 1 MiB stack holds */
    for (int b = 0; b < 2; b++)
        for (int shape = 0; shape < 3; shape++) {
            Deep d = {shape, 9000, both[b], false, "", NULL};
            run_in_small_thread(&d, 1 << 20);
            CHECKF(d.ok, "%s shape %d: %s", both_names[b], shape, d.msg);
        }
    /* when the helper thread cannot be had, a clean error */
    AxFaults f;
    memset(&f, 0, sizeof f);
    f.fail_at[AX_FAULT_THREAD] = 1;
    f.persist[AX_FAULT_THREAD] = true;
    Deep d = {0, 9000, AX_BACKEND_INTERP, false, "", &f};
    run_in_small_thread(&d, 1 << 20);
    CHECK(!d.ok);
    CHECKF(strstr(d.msg, "cannot start a thread"), "%s", d.msg);
}

/* The driver keeps each thread's stack bounds after asking once
 * (driver/stack.c stack_room: asking reads /proc/self/maps on the main thread).
 * A caller that then runs on another stack in the same thread, a
 * coroutine's, must not be taken to have the thread's room: the deep
 * program below overflows a 256 KiB coroutine stack unless the driver
 * sees the stack pointer outside the bounds it kept and moves the work to
 * a helper thread. */
static ucontext_t co_main, co_ctx;
static Deep co_deep;
static void co_body(void) { deep_thread(&co_deep); }

static void *co_thread(void *p)
{
    Deep *first = p;
    deep_thread(first);   /* on the thread's own stack: the bounds are kept */
    size_t size = 256 << 10;
    char *stk = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stk == MAP_FAILED || getcontext(&co_ctx)) {
        snprintf(co_deep.msg, sizeof co_deep.msg, "no coroutine stack");
        return NULL;
    }
    co_ctx.uc_stack.ss_sp = stk;
    co_ctx.uc_stack.ss_size = size;
    co_ctx.uc_link = &co_main;
    makecontext(&co_ctx, co_body, 0);
    if (swapcontext(&co_main, &co_ctx)) snprintf(co_deep.msg, sizeof co_deep.msg, "swapcontext failed");
    munmap(stk, size);
    return NULL;
}

TEST(d10_a_coroutine_stack_is_not_the_threads)
{
    for (int b = 0; b < 2; b++) {
        Deep first = {0, 3000, both[b], false, "", NULL};
        co_deep = (Deep){0, 9000, both[b], false, "", NULL};
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, (size_t)64 << 20);
        pthread_t t;
        REQUIRE(pthread_create(&t, &at, co_thread, &first) == 0);
        pthread_join(t, NULL);
        pthread_attr_destroy(&at);
        CHECKF(first.ok, "%s, on the thread's stack: %s", both_names[b], first.msg);
        CHECKF(co_deep.ok, "%s, on a coroutine's stack: %s", both_names[b], co_deep.msg);
    }
}

/* The stack the passes use per level stays within half of what the
 * driver sizes for (driver/stack.c STACK_PER_LEVEL: stack_need): measured as the
 * pages touched on a large stack of our own. */
typedef struct Measure {
    Deep d;
    char *stack;
    size_t size;
} Measure;

TEST(d10_stack_per_level_within_the_driver_budget)
{
    const size_t size = (size_t)1 << 30;
    long pg = sysconf(_SC_PAGESIZE);
    for (int b = 0; b < 2; b++)
        for (int shape = 0; shape < 3; shape++) {
            char *stk = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            REQUIRE(stk != MAP_FAILED);
            Deep d = {shape, 2000, both[b], false, "", NULL};
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setstack(&at, stk, size);
            pthread_t t;
            REQUIRE(pthread_create(&t, &at, deep_thread, &d) == 0);
            pthread_join(t, NULL);
            pthread_attr_destroy(&at);
            CHECKF(d.ok, "%s", d.msg);
            size_t np = size / (size_t)pg, lo = 0;
            unsigned char *vec = malloc(np);
            REQUIRE(vec && mincore(stk, size, vec) == 0);
            while (lo < np && !(vec[lo] & 1)) lo++;
            int64_t used = (int64_t)(size - lo * (size_t)pg);
            free(vec);
            munmap(stk, size);
            /* the source depth is about the shape's depth (see deep_build) */
            int64_t budget = (stack_need(2000) - stack_need(0)) / 2 + stack_need(0);
            fprintf(stderr, "%s shape %d: %lld KiB of stack for 2,000 levels (budget %lld KiB)\n", both_names[b],
                    shape, (long long)(used >> 10), (long long)(budget >> 10));
            CHECK(used <= budget);
        }
}

/* ===================================================== 11: Matrix Market */

static const char *mm_file(const char *dir, const char *name, const char *text)
{
    static char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return write_file(path, text, 0644) ? path : NULL;
}

TEST(d11_matrix_market_sizes_are_checked_before_allocating)
{
    char dir[256];
    REQUIRE(temp_dir(dir, sizeof dir, "mm"));
    ex_csr m;
    char msg[512];
    /* 68 bytes that asked for ~2 GB, 89 that asked for 171 GB */
    const char *p = mm_file(dir, "a.mtx", "%%MatrixMarket matrix coordinate real general\n5 5 100000000\n1 1 1\n");
    REQUIRE(p);
    CHECK(ex_mm_read(p, &m, msg, sizeof msg) != 0);
    CHECKF(strstr(msg, "announces 100000000 entries"), "%s", msg);
    p = mm_file(dir, "b.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2147483647 2147483647 3\n1 1 1\n2 1 2\n3 3 3\n");
    REQUIRE(p);
    CHECK(ex_mm_read_limit(p, &m, (int64_t)1 << 30, msg, sizeof msg) != 0);
    CHECKF(strstr(msg, "over the memory limit"), "%s", msg);
    /* NaN and infinite entries are refused with a message */
    p = mm_file(dir, "c.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 nan\n2 2 1\n");
    CHECK(ex_mm_read(p, &m, msg, sizeof msg) != 0);
    CHECKF(strstr(msg, "NaN"), "%s", msg);
    p = mm_file(dir, "d.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1e300\n2 2 1\n");
    CHECK(ex_mm_read(p, &m, msg, sizeof msg) != 0);
    CHECKF(strstr(msg, "not a finite f32"), "%s", msg);
    p = mm_file(dir, "e.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 -inf\n2 2 1\n");
    CHECK(ex_mm_read(p, &m, msg, sizeof msg) != 0);
    /* a good one still reads */
    p = mm_file(dir, "f.mtx", "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 3 2.5\n2 1 -1\n");
    CHECKF(ex_mm_read(p, &m, msg, sizeof msg) == 0, "%s", msg);
    CHECK(m.rows == 2 && m.cols == 3 && m.nnz == 2 && m.col[0] == 2 && m.val[1] == -1);
    ex_csr_free(&m);
    rm_dir(dir);
}

/* ===================================================== 12: the smaller ones */

TEST(d12_type_inspection_accepts_null)
{
    CHECK(ax_type_kind_of(NULL) == AX_KIND_INVALID);
    CHECK(ax_type_scalar_of(NULL) == AX_NSCALAR);
    CHECK(ax_type_arity(NULL) == -1);
    CHECK(ax_type_elem(NULL, 0) == NULL);
    CHECK(ax_type_components(NULL) == 0);
    CHECK(!ax_type_equal(NULL, NULL));
    char buf[16];
    CHECK(ax_type_str(NULL, buf, sizeof buf) == buf);
    /* what a failing builder returns */
    ax_ctx *cx = ctx_with(AX_BACKEND_INTERP);
    const ax_type *t = ax_acc_type(ax_map(dbl, NULL, NULL));
    CHECK(t == NULL && ax_type_kind_of(t) == AX_KIND_INVALID);
    ax_ctx_free(cx);
}

TEST(d12_one_component_tuples_are_refused)
{
    ax_ctx *cx = ctx_with(AX_BACKEND_INTERP);
    ax_exp one = ax_const(cx, ax_i32(1));
    CHECK(!ax_exp_ok(ax_tuple(1, &one)));
    CHECK(ax_status_of(cx) == AX_ERR_BUILD);
    CHECKF(strstr(ax_error(cx), "1 component"), "%s", ax_error(cx));
    ax_clear_error(cx);
    ax_exp c = ax_i32(2);
    ax_exp t = ax_tuple(1, &c);   /* constants alone: reported when used */
    CHECK(!ax_exp_ok(t));
    ax_acc u = ax_unit(cx, t);
    CHECK(u == NULL);
    CHECKF(strstr(ax_error(cx), "1 component"), "%s", ax_error(cx));
    ax_clear_error(cx);
    const ax_type *s = ax_type_scalar(AX_I32);
    CHECK(ax_type_tuple(cx, 1, &s) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_BUILD);
    ax_clear_error(cx);
    CHECK(ctx_works(cx));
    ax_ctx_free(cx);
}

TEST(d12_slice_with_a_null_list_names_it)
{
    ax_ctx *cx = ctx_with(AX_BACKEND_INTERP);
    int32_t v[4] = {1, 2, 3, 4};
    ax_array *a = ax_array_from(cx, AX_I32, 2, (int64_t[]){2, 2}, v);
    CHECK(ax_slice_(2, NULL, ax_use(cx, a)) == NULL);
    CHECKF(strstr(ax_error(cx), "specifier list is NULL"), "%s", ax_error(cx));
    ax_clear_error(cx);
    ax_array_release(a);
    ax_ctx_free(cx);
}

TEST(d12_environment_values)
{
    static const struct { const char *v; int64_t want; } mem[] = {
        {"1b", 1}, {"1B", 1}, {"1KB", 1024}, {"2k", 2048}, {"3M", 3 << 20}, {"1G", 1 << 30},
        {"1T", (int64_t)1 << 40}, {"99999999999T", INT64_MAX},
    };
    for (size_t i = 0; i < sizeof mem / sizeof *mem; i++) {
        setenv("AXLE_MEM_LIMIT", mem[i].v, 1);
        ax_ctx *cx = ax_ctx_new(NULL);
        CHECKF(ax_ctx_options(cx)->mem_limit == mem[i].want, "AXLE_MEM_LIMIT=%s: %lld", mem[i].v,
               (long long)ax_ctx_options(cx)->mem_limit);
        ax_ctx_free(cx);
    }
    unsetenv("AXLE_MEM_LIMIT");
    setenv("AXLE_THREADS", "99999", 1);
    ax_ctx *cx = ax_ctx_new(NULL);
    CHECK_EQ_I(ax_ctx_options(cx)->threads, 4096);   /* what the pool uses */
    ax_ctx_free(cx);
    unsetenv("AXLE_THREADS");
    setenv("AXLE_CC_TIMEOUT", "2.5", 1);
    cx = ax_ctx_new(NULL);
    CHECK(ax_ctx_options(cx)->cc_timeout == 2.5);
    ax_ctx_free(cx);
    unsetenv("AXLE_CC_TIMEOUT");
    cx = ax_ctx_new(NULL);
    CHECK(ax_ctx_options(cx)->cc_timeout == 300);
    ax_ctx_free(cx);
}

TEST(d12_stale_temporary_files_are_swept)
{
    char dir[256], old[320], young[320], other[320];
    REQUIRE(temp_dir(dir, sizeof dir, "sweep"));
    REQUIRE(chmod(dir, 0700) == 0);
    snprintf(old, sizeof old, "%s/tmp-00000000deadbeef.c", dir);
    snprintf(young, sizeof young, "%s/tmp-00000000feedface.c", dir);
    snprintf(other, sizeof other, "%s/keepme.txt", dir);
    REQUIRE(write_file(old, "int x;\n", 0600) && write_file(young, "int y;\n", 0600) &&
            write_file(other, "", 0600));
    /* left by a process killed two days ago */
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= 2 * 24 * 3600;
    ts[1] = ts[0];
    REQUIRE(utimensat(AT_FDCWD, old, ts, 0) == 0);
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.cache_dir = dir;
    ax_ctx *cx = ax_ctx_new(&o);
    CHECK(ctx_works(cx));
    ax_ctx_free(cx);
    CHECK(access(old, F_OK) != 0);
    CHECK(access(young, F_OK) == 0);   /* may belong to a compile running now */
    CHECK(access(other, F_OK) == 0);
    rm_dir(dir);
}

/* Two threads on one context: the second is refused, and the first is
 * told.  The first thread is held inside its run (through the cancel
 * hook) while the second calls. */
typedef struct Two {
    ax_ctx *cx;
    ax_array *a;
    _Atomic int phase;     /* 1: the first is inside; 2: the second has called */
    bool second_refused;
} Two;

static bool hold_first(void *arg)
{
    Two *t = arg;
    if (atomic_load(&t->phase) == 0) {
        atomic_store(&t->phase, 1);
        while (atomic_load(&t->phase) != 2) usleep(1000);
    }
    return false;
}

static void *second(void *arg)
{
    Two *t = arg;
    while (atomic_load(&t->phase) != 1) usleep(1000);
    ax_array *b = ax_array_new(t->cx, ax_type_scalar(AX_I32), 1, (int64_t[]){4});
    ax_program *p = ax_compile(t->cx, NULL);
    ax_acc g = ax_unit(t->cx, ax_i32(1));   /* a builder */
    t->second_refused = b == NULL && p == NULL && g == NULL;
    atomic_store(&t->phase, 2);
    return NULL;
}

TEST(d12_one_context_from_two_threads_is_detected)
{
    Two t = {0};
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.cancel = hold_first;
    o.cancel_arg = &t;
    t.cx = ax_ctx_new(&o);
    int32_t v[3] = {1, 2, 3};
    t.a = ax_array_from(t.cx, AX_I32, 1, (int64_t[]){3}, v);
    ax_acc prog = ax_map(dbl, NULL, ax_use(t.cx, t.a));
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, second, &t) == 0);
    ax_array *r = ax_run(t.cx, prog);
    pthread_join(th, NULL);
    CHECK(t.second_refused);
    CHECK(r == NULL);
    CHECK(ax_status_of(t.cx) == AX_ERR_ARG);
    CHECKF(strstr(ax_error(t.cx), "another thread"), "%s", ax_error(t.cx));
    ax_array_release(r);
    /* one thread at a time again: fine */
    atomic_store(&t.phase, 3);
    CHECK(ctx_works(t.cx));
    ax_array_release(t.a);
    ax_ctx_free(t.cx);
}

/* An endless awhile, stopped by the cancellation hook. */
static ax_acc forever(ax_acc x, void *env) { (void)env; return ax_unit(ax_exp_ctx(ax_size(x)), ax_bool(true)); }
static ax_acc inc_all(ax_acc x, void *env) { (void)env; return ax_map(inc1, NULL, x); }
static bool after_1000(void *arg) { return ++*(int *)arg > 1000; }

TEST(d12_an_endless_awhile_can_be_cancelled)
{
    for (int b = 0; b < 2; b++) {
        int calls = 0;
        ax_options o = {0};
        o.backend = both[b];
        o.cancel = after_1000;
        o.cancel_arg = &calls;
        ax_ctx *cx = ax_ctx_new(&o);
        int32_t v[3] = {1, 2, 3};
        ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){3}, v);
        ax_array *r = ax_run(cx, ax_awhile(forever, inc_all, NULL, ax_use(cx, a)));
        CHECK(r == NULL);
        CHECKF(ax_status_of(cx) == AX_ERR_CANCELLED, "%s: %s", both_names[b], ax_error(cx));
        CHECKF(strstr(ax_error(cx), "cancelled"), "%s", ax_error(cx));
        CHECK(calls == 1001);
        calls = -1000000;   /* no more cancelling */
        CHECK(ctx_works(cx));
        ax_array_release(a);
        ax_ctx_free(cx);
    }
}

/* A long operation on the interpreter is cancelled inside it, not only
 * between operations: elements of the empty tuple take no memory, so the
 * memory limit lets 2^40 of them through (the fuzzer's input was a fold
 * over 2^31 empty rows). */
static ax_exp g_nothing(ax_exp ix, void *env) { (void)ix; (void)env; return ax_tuple(0, NULL); }
static bool after_3(void *arg) { return ++*(int *)arg > 3; }

TEST(a_long_operation_on_the_interpreter_can_be_cancelled)
{
    int calls = 0;
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.mem_limit = (int64_t)256 << 10;
    o.cancel = after_3;
    o.cancel_arg = &calls;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    ax_acc g = ax_generate(cx, ax_ix1(ax_i64((int64_t)1 << 40)), g_nothing, NULL);
    ax_array *r = ax_run(cx, ax_fold(ax_fn_fst, NULL, ax_tuple(0, NULL), ax_reshape(ax_ix2(ax_i64((int64_t)1 << 39), ax_i64(2)), g)));
    CHECK(r == NULL);
    CHECKF(ax_status_of(cx) == AX_ERR_CANCELLED, "%s", ax_error(cx));
    CHECK(calls == 4);
    calls = -1000000;   /* no more cancelling */
    CHECK(ctx_works(cx));
    ax_ctx_free(cx);
}
