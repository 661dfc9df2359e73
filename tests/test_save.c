/*
 * Compiled programs in files (ax_program_save, ax_program_load): a program
 * saved and loaded into a fresh context, one with no C compiler and no
 * disk cache, runs with new arguments and gives what the compiled program
 * gives, safe mode's checks included; a save without a disk cache, and
 * the save of a loaded program; and every file that is not a good one
 * refused with an error naming what is wrong: truncated at every length
 * tried, bytes changed anywhere, bytes appended, another version, another
 * mode, a CPU without the instructions, not a file of ours at all; the
 * context usable after each.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include "programs.h"
#include "runtime/jit.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A context on backend with cache directory dir (NULL: none, no disk
 * cache) and C compiler cc (NULL: the default); NULL when the backend
 * cannot run here. */
static ax_ctx *ctx_on(ax_backend_kind backend, const char *dir, const char *cc, bool fast)
{
    ax_options o = {0};
    o.backend = backend;
    o.cache_dir = dir;
    o.no_cache = dir == NULL;
    o.cc = cc;
    o.fast_math = fast;
    o.threads = 2;
    return ax_ctx_new(&o);
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    if (b) b[len] = 0;   /* (texts are compared as strings) */
    fclose(f);
    *n = (size_t)len;
    return b;
}

static bool write_all(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(b, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static ax_exp affine(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = *(ax_exp *)env;
    return ax_add(ax_mul(a, x), ax_sqrt(ax_abs(y)));
}

static ax_exp plus(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_add(a, b);
}

/* The program of these tests: a scalar parameter a, a vector parameter x,
 * and a used array w of 1000 elements (data saved with the program):
 * (zipWith (\x w -> a*x + sqrt |w|) x w, fold (+) 0 of it). */
static ax_program *compile_it(ax_ctx *cx)
{
    const ax_type *f64 = ax_type_scalar(AX_F64);
    double w[1000];
    for (int i = 0; i < 1000; i++) w[i] = (double)((i * 37) % 101) - 50.0;
    int64_t n = 1000;
    ax_array *wa = ax_array_from(cx, AX_F64, 1, &n, w);
    if (!wa) return NULL;
    ax_exp a = ax_param_exp(cx, 0, f64);
    ax_acc z = ax_zip_with(affine, &a, ax_param(cx, 1, f64, 1), ax_use(cx, wa));
    ax_array_release(wa);
    return ax_compile(cx, ax_atuple2(z, ax_fold(plus, NULL, ax_f64(0), z)));
}

/* Runs p with a = av and x = 0, 1, ..., n-1 in cx; the two results into
 * out (released by the caller); the count or -1. */
static int run_it(ax_ctx *cx, ax_program *p, double av, int64_t n, ax_array **out)
{
    double *x = malloc(sizeof *x * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) x[i] = (double)i;
    ax_array *args[2] = {ax_array_from(cx, AX_F64, 0, NULL, &av), ax_array_from(cx, AX_F64, 1, &n, x)};
    free(x);
    int r = args[0] && args[1] ? ax_program_run_with(p, args, 2, out, 2) : -1;
    ax_array_release(args[0]);
    ax_array_release(args[1]);
    return r;
}

/* Whether p run in cx gives what the formula does, for a few a and n. */
static bool runs_right(ax_ctx *cx, ax_program *p)
{
    static const double as[] = {2.0, -0.5};
    static const int64_t ns[] = {1000, 17, 0};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            ax_array *out[2] = {0};
            if (run_it(cx, p, as[i], ns[k], out) != 2) {
                fprintf(stderr, "run failed: %s\n", ax_error(cx));
                return false;
            }
            const double *z = ax_array_data(out[0], 0), *s = ax_array_data(out[1], 0);
            bool ok = ax_array_size(out[0]) == ns[k];
            double sum = 0;
            for (int64_t j = 0; ok && j < ns[k]; j++) {
                double w = (double)((j * 37) % 101) - 50.0, want = as[i] * (double)j + sqrt(fabs(w));
                ok = fabs(z[j] - want) <= 1e-12 * fabs(want) + 1e-12;
                sum += want;
            }
            ok = ok && fabs(s[0] - sum) <= 1e-9 * fabs(sum) + 1e-9;
            ax_array_release(out[0]);
            ax_array_release(out[1]);
            if (!ok) return false;
        }
    return true;
}

static void tmp_path(char path[64], const char *name)
{
    snprintf(path, 64, "/tmp/axle-save-%d-%s", (int)getpid(), name);
}

/* Saved from a context with a compiler, loaded into one with none (and
 * no disk cache): the same results, the parameters and type kept, no
 * compile, on the interpreter and the CPU backend. */
TEST(saved_program_runs_where_there_is_no_compiler)
{
    static const ax_backend_kind bs[] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
    for (int b = 0; b < 2; b++) {
        char dir[64] = "/tmp/axle-save-XXXXXX", path[64];
        REQUIRE(mkdtemp(dir));
        tmp_path(path, "prog");
        ax_ctx *cx = ctx_on(bs[b], dir, NULL, false);
        REQUIRE(cx);
        ax_program *p = compile_it(cx);
        REQUIRE(p);
        CHECK(runs_right(cx, p));
        CHECK_EQ_I(ax_program_save(p, path), 0);
        char want_type[128], got_type[128];
        ax_type_str(ax_type_elem(ax_program_type(p), 0), want_type, sizeof want_type);
        const char *backend = ax_program_stats(p)->backend;
        CHECK(!strcmp(backend, b ? "cpu" : "interp"));

        ax_ctx *bare = ctx_on(bs[b], NULL, "/nonexistent/axle-no-cc", false);
        REQUIRE(bare);
        ax_program *q = ax_program_load(bare, path);
        CHECKF(q, "load: %s", ax_error(bare));
        if (q) {
            CHECK(runs_right(bare, q));
            CHECK_EQ_I(ax_program_params(q), 2);
            ax_type_str(ax_type_elem(ax_program_type(q), 0), got_type, sizeof got_type);
            CHECK(!strcmp(want_type, got_type));
            CHECK(ax_program_stats(q)->from_disk);
            CHECK(!strcmp(ax_program_stats(q)->backend, backend));
            CHECK_EQ_I(ax_program_stats(q)->kernels, ax_program_stats(p)->kernels);
            /* saved again from the loaded program, and loaded again */
            char again[64];
            tmp_path(again, "again");
            CHECKF(ax_program_save(q, again) == 0, "%s", ax_error(bare));
            ax_program *r = ax_program_load(bare, again);
            CHECKF(r && runs_right(bare, r), "%s", ax_error(bare));
            ax_program_free(r);
            unlink(again);
            /* from memory, as a program carrying it inside would */
            size_t n = 0;
            char *bytes = read_all(path, &n);
            REQUIRE(bytes);
            r = ax_program_load_mem(bare, bytes, n);
            memset(bytes, 0, n);   /* not kept */
            free(bytes);
            CHECKF(r && runs_right(bare, r), "%s", ax_error(bare));
            ax_program_free(r);
            CHECK(!ax_program_load_mem(bare, "axle", 4));
            CHECKF(strstr(ax_error(bare), "(memory): not an axle program file"), "%s", ax_error(bare));
            CHECK(!ax_program_load_mem(bare, NULL, 10));
            CHECKF(strstr(ax_error(bare), "ax_program_load_mem: no data"), "%s", ax_error(bare));
        }
        /* the program outlives its context's reset, as a compiled one */
        ax_ctx_reset(bare);
        if (q) CHECK(runs_right(bare, q));
        ax_program_free(q);
        ax_ctx_free(bare);
        ax_program_free(p);
        ax_ctx_free(cx);
        harness_rm_tree(dir);
        unlink(path);
    }
}

/* Every built-in program (the benchmarks, each with its used arrays as
 * data and several kernels, some batched into one module), saved and
 * loaded where there is no compiler, passes its own check. */
TEST(every_builtin_program_round_trips)
{
    char path[64];
    tmp_path(path, "builtin");
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.threads = 2;
    ax_ctx *cx = ax_ctx_new(&o);
    ax_ctx *bare = ctx_on(AX_BACKEND_CPU, NULL, "/nonexistent/axle-no-cc", false);
    REQUIRE(cx && bare);
    for (int i = 0; i < ex_nprograms; i++) {
        const ex_program *e = ex_programs[i];
        if (e->suite) continue;
        int64_t n = e->test_size ? e->test_size : e->default_size;
        void *st = e->setup(cx, n);
        REQUIRE(st);
        ax_program *p = ax_compile(cx, e->build(cx, st));
        CHECKF(p, "%s: %s", e->name, ax_error(cx));
        CHECKF(p && ax_program_save(p, path) == 0, "%s: %s", e->name, ax_error(cx));
        ax_program *q = ax_program_load(bare, path);
        CHECKF(q, "%s: %s", e->name, ax_error(bare));
        ax_array *res[8] = {0};
        int nr = q ? ax_program_run(q, res, 8) : -1;
        CHECKF(nr > 0, "%s: %s", e->name, ax_error(bare));
        char msg[512] = "";
        CHECKF(nr <= 0 || e->check(st, res, nr, msg, sizeof msg) == 0, "%s: %s", e->name, msg);
        for (int k = 0; k < nr; k++) ax_array_release(res[k]);
        ax_program_free(q);
        ax_program_free(p);
        e->teardown(st);
        ax_ctx_reset(cx);
    }
    ax_ctx_free(bare);
    ax_ctx_free(cx);
    unlink(path);
}

static ax_exp keep(ax_exp x, void *env)
{
    (void)env;
    return x;
}

/* Arrays of index elements, and an empty array whose other extent is not
 * 0, save and load (the first once crashed the save, the second was
 * refused as malformed), on both backends, with the compiled program's
 * results. */
TEST(index_elements_and_empty_arrays_round_trip)
{
    static const ax_backend_kind bs[] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
    for (int b = 0; b < 2; b++) {
        char path[64];
        tmp_path(path, "index");
        ax_ctx *cx = ctx_on(bs[b], NULL, NULL, false);
        REQUIRE(cx);
        int64_t three = 3, empty[2] = {0, 5};
        ax_array *ix = ax_array_new(cx, ax_type_index(cx, 2), 1, &three);
        ax_array *none = ax_array_new(cx, ax_type_scalar(AX_F32), 2, empty);
        REQUIRE(ix && none);
        int64_t *c1 = ax_array_data(ix, 1);
        for (int k = 0; k < 3; k++) c1[k] = 7 * k + 1;
        ax_program *p = ax_compile(cx, ax_atuple2(ax_map(keep, NULL, ax_use(cx, ix)), ax_map(keep, NULL, ax_use(cx, none))));
        REQUIRE(p);
        CHECKF(ax_program_save(p, path) == 0, "%s", ax_error(cx));
        ax_program *q = ax_program_load(cx, path);
        CHECKF(q, "%s", ax_error(cx));
        ax_array *r[2] = {0};
        CHECK_EQ_I(q ? ax_program_run(q, r, 2) : -1, 2);
        if (r[0] && r[1]) {
            CHECK_EQ_I(ax_array_components(r[0]), 2);
            const int64_t *got = ax_array_data(r[0], 1);
            CHECK(got[0] == 1 && got[1] == 8 && got[2] == 15);
            CHECK(ax_array_rank(r[1]) == 2 && ax_array_extent(r[1], 0) == 0 && ax_array_extent(r[1], 1) == 5);
        }
        ax_array_release(r[0]);
        ax_array_release(r[1]);
        ax_array_release(ix);
        ax_array_release(none);
        ax_program_free(q);
        ax_program_free(p);
        ax_ctx_free(cx);
        unlink(path);
    }
}

/* Saved where there is no disk cache (its objects compiled again for the
 * file), loaded where there is no compiler. */
TEST(saved_without_a_disk_cache)
{
    char path[64];
    tmp_path(path, "nocache");
    ax_ctx *cx = ctx_on(AX_BACKEND_CPU, NULL, NULL, false);
    REQUIRE(cx);
    ax_program *p = compile_it(cx);
    REQUIRE(p);
    CHECKF(ax_program_save(p, path) == 0, "%s", ax_error(cx));
    ax_ctx *bare = ctx_on(AX_BACKEND_CPU, NULL, "/nonexistent/axle-no-cc", false);
    ax_program *q = ax_program_load(bare, path);
    CHECKF(q && runs_right(bare, q), "%s", ax_error(bare));
    ax_program_free(q);
    ax_ctx_free(bare);
    ax_program_free(p);
    ax_ctx_free(cx);
    unlink(path);
}

static ax_exp index_of(ax_exp i, void *env)
{
    ax_acc idx = *(ax_acc *)env;
    return ax_ix1(ax_at(idx, i));
}

/* Safe mode's checks in a loaded program: a gather out of bounds is the
 * same error as in the compiled program (its checked copies were saved
 * with it: no compiler needed), and in bounds gives the data. */
TEST(loaded_program_keeps_the_bounds_checks)
{
    char dir[64] = "/tmp/axle-save-XXXXXX", path[64];
    REQUIRE(mkdtemp(dir));
    tmp_path(path, "bounds");
    ax_ctx *cx = ctx_on(AX_BACKEND_CPU, dir, NULL, false);
    REQUIRE(cx);
    const ax_type *i32 = ax_type_scalar(AX_I32), *f32 = ax_type_scalar(AX_F32);
    ax_acc idx = ax_param(cx, 0, i32, 1), src = ax_param(cx, 1, f32, 1);
    ax_program *p = ax_compile(cx, ax_backpermute(ax_shape(idx), index_of, &idx, src));
    REQUIRE(p);
    CHECK_EQ_I(ax_program_save(p, path), 0);
    ax_ctx *bare = ctx_on(AX_BACKEND_CPU, NULL, "/nonexistent/axle-no-cc", false);
    ax_program *q = ax_program_load(bare, path);
    REQUIRE(q);
    ax_ctx *cs[2] = {cx, bare};
    ax_program *ps[2] = {p, q};
    char msg[2][512];
    for (int k = 0; k < 2; k++) {
        int64_t n = 4, m = 3;
        int32_t good[4] = {2, 0, 1, 2}, bad[4] = {0, 1, 3, 2};
        float data[3] = {1.5f, 2.5f, 3.5f};
        ax_array *d = ax_array_from(cs[k], AX_F32, 1, &m, data);
        ax_array *g = ax_array_from(cs[k], AX_I32, 1, &n, good), *bd = ax_array_from(cs[k], AX_I32, 1, &n, bad);
        ax_array *out = NULL;
        ax_array *args[2] = {g, d};
        CHECKF(ax_program_run_with(ps[k], args, 2, &out, 1) == 1, "%s", ax_error(cs[k]));
        if (out) {
            const float *o = ax_array_data(out, 0);
            CHECK(o[0] == 3.5f && o[1] == 1.5f && o[2] == 2.5f && o[3] == 3.5f);
            ax_array_release(out);
            out = NULL;
        }
        args[0] = bd;
        CHECK_EQ_I(ax_program_run_with(ps[k], args, 2, &out, 1), -1);
        snprintf(msg[k], sizeof msg[k], "%s", ax_error(cs[k]));
        CHECKF(strstr(msg[k], "bounds") != NULL, "%s", msg[k]);
        ax_array_release(d);
        ax_array_release(g);
        ax_array_release(bd);
    }
    CHECKF(!strcmp(msg[0], msg[1]), "compiled: %s; loaded: %s", msg[0], msg[1]);
    ax_program_free(q);
    ax_ctx_free(bare);
    ax_program_free(p);
    ax_ctx_free(cx);
    harness_rm_tree(dir);
    unlink(path);
}

/* The load of path into cx fails with an error containing want (and the
 * context runs a program afterwards). */
static void refused(ax_ctx *cx, const char *path, const char *want, const char *what)
{
    ax_program *q = ax_program_load(cx, path);
    CHECKF(!q, "%s: loaded", what);
    ax_program_free(q);
    CHECKF(strstr(ax_error(cx), want) != NULL, "%s: the error is '%s', not '%s'", what, ax_error(cx), want);
    CHECKF(strstr(ax_error(cx), "ax_program_load") != NULL, "%s: %s", what, ax_error(cx));
    ax_array *r = ax_run(cx, ax_unit(cx, ax_i32(7)));
    CHECKF(r && *(const int32_t *)ax_array_data(r, 0) == 7, "%s: the context does not run after it", what);
    ax_array_release(r);
}

/* Every damaged file refused, never loaded, never a crash: cut at many
 * lengths, each byte of a sample changed, bytes appended, another
 * version, a file of something else, no file. */
TEST(damaged_files_are_refused)
{
    char dir[64] = "/tmp/axle-save-XXXXXX", path[64], bad[64];
    REQUIRE(mkdtemp(dir));
    tmp_path(path, "good");
    tmp_path(bad, "bad");
    ax_ctx *cx = ctx_on(AX_BACKEND_CPU, dir, NULL, false);
    REQUIRE(cx);
    ax_program *p = compile_it(cx);
    REQUIRE(p);
    REQUIRE(ax_program_save(p, path) == 0);
    size_t n = 0;
    char *b = read_all(path, &n);
    REQUIRE(b && n > 100);
    ax_ctx *bare = ctx_on(AX_BACKEND_CPU, NULL, "/nonexistent/axle-no-cc", false);
    /* truncated: every length up to 64, then a spread */
    for (size_t len = 0; len < n; len += len < 64 ? 1 : n / 97 + 1) {
        REQUIRE(write_all(bad, b, len));
        char what[64];
        snprintf(what, sizeof what, "cut at %zu of %zu", len, n);
        ax_program *q = ax_program_load(bare, bad);
        CHECKF(!q, "%s: loaded", what);
        ax_program_free(q);
        CHECKF(strstr(ax_error(bare), "ax_program_load"), "%s: %s", what, ax_error(bare));
    }
    /* a byte changed: the first 64 one by one, then a spread, the hash last */
    for (size_t at = 0; at < n; at += at < 64 ? 1 : n / 211 + 1) {
        b[at] ^= 0x5a;
        REQUIRE(write_all(bad, b, n));
        b[at] ^= 0x5a;
        ax_program *q = ax_program_load(bare, bad);
        CHECKF(!q, "byte %zu changed: loaded", at);
        ax_program_free(q);
    }
    b[n - 1] ^= 1;
    REQUIRE(write_all(bad, b, n));
    b[n - 1] ^= 1;
    refused(bare, bad, "content hash", "the hash's last byte");
    b[n / 2] ^= 1;
    REQUIRE(write_all(bad, b, n));
    b[n / 2] ^= 1;
    refused(bare, bad, "content hash", "a middle byte");
    /* appended */
    char *more = malloc(n + 3);
    memcpy(more, b, n);
    memcpy(more + n, "xyz", 3);
    REQUIRE(write_all(bad, more, n + 3));
    free(more);
    refused(bare, bad, "bytes after its end", "bytes appended");
    refused(bare, bad, bad, "the message names the file");
    /* another version (the version follows the magic line) */
    char *v = memchr(b, '\n', n);
    REQUIRE(v);
    v[1] = v[1] == '9' ? '8' : '9';
    REQUIRE(write_all(bad, b, n));
    v[1] = b[0] ? ax_version()[0] : 0;
    refused(bare, bad, "saved by axle", "another version");
    /* not ours */
    REQUIRE(write_all(bad, "#!/bin/sh\necho hello\n", 21));
    refused(bare, bad, "not an axle program file", "a script");
    REQUIRE(write_all(bad, "", 0));
    refused(bare, bad, "not an axle program file", "an empty file");
    refused(bare, "/nonexistent/axle.prog", "No such file", "no file");
    refused(bare, "/tmp", "not a regular file", "a directory");
    refused(bare, "", "no file name", "an empty name");
    refused(bare, NULL, "no file name", "NULL");
    /* the good file still loads after all that */
    ax_program *q = ax_program_load(bare, path);
    CHECKF(q && runs_right(bare, q), "%s", ax_error(bare));
    ax_program_free(q);
    free(b);
    ax_ctx_free(bare);
    ax_program_free(p);
    ax_ctx_free(cx);
    harness_rm_tree(dir);
    unlink(path);
    unlink(bad);
}

static ax_exp scale(ax_exp x, void *env)
{
    ax_acc w = *(ax_acc *)env;
    return ax_mul(x, ax_at_linear(w, ax_i64(2)));
}

/* Files whose content hash matches but whose contents were changed
 * (a byte at every place of the program and its arrays, three ways, the
 * hash made again): each is refused with an error or loads (a changed
 * number may still make a program), never a crash or a read out of
 * bounds (the sanitizers' runs check that).  The compiled objects are
 * left alone: a file's code is trusted once its hash matches. */
TEST(changed_contents_with_a_good_hash)
{
    static const ax_backend_kind bs[] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
    char *isa = jit_host_isa();
    REQUIRE(isa);
    for (int b = 0; b < 2; b++) {
        char path[64], bad[64];
        tmp_path(path, "rehash");
        tmp_path(bad, "rehash-bad");
        ax_ctx *cx = ctx_on(bs[b], NULL, NULL, false);
        REQUIRE(cx);
        float w[4] = {1, 2, 3, 4};
        int64_t four = 4;
        ax_array *wa = ax_array_from(cx, AX_F32, 1, &four, w);
        ax_acc wu = ax_use(cx, wa);
        ax_array_release(wa);
        ax_acc m = ax_map(scale, &wu, ax_param(cx, 0, ax_type_scalar(AX_F32), 1));
        ax_program *p = ax_compile(cx, ax_atuple2(m, ax_fold(plus, NULL, ax_f32(0), m)));
        REQUIRE(p && ax_program_save(p, path) == 0);
        size_t n = 0;
        unsigned char *f = (unsigned char *)read_all(path, &n);
        REQUIRE(f && n > 64);
        unsigned char *nl = memchr(f, '\n', n);
        REQUIRE(nl);
        size_t body = (size_t)(nl + 1 - f) + strlen((char *)nl + 1) + 1 + 8, end = n - 32;
        if (bs[b] == AX_BACKEND_CPU && isa[0]) {
            /* up to the end of the CPU's instruction sets, before its objects */
            unsigned char *at = memmem(f + body, end - body, isa, strlen(isa));
            REQUIRE(at);
            end = (size_t)(at - f) + strlen(isa) + 1;
        }
        ax_ctx *bare = ctx_on(bs[b], NULL, "/nonexistent/axle-no-cc", false);
        int loaded = 0, tried = 0;
        static const unsigned char flips[] = {0x01, 0x80, 0xff};
        for (size_t at = body; at < end; at++)
            for (int k = 0; k < 3; k++) {
                f[at] ^= flips[k];
                jit_sha256(f, n - 32, f + n - 32);
                REQUIRE(write_all(bad, f, n));
                f[at] ^= flips[k];
                ax_program *q = ax_program_load(bare, bad);
                tried++;
                if (q) loaded++;
                else CHECKF(strstr(ax_error(bare), "ax_program_load"), "byte %zu: %s", at, ax_error(bare));
                ax_program_free(q);
            }
        fprintf(stderr, "%s: %d changed files, %d loaded, %d refused\n", b ? "cpu" : "interp", tried, loaded,
                tried - loaded);
        CHECK(tried > 100 && loaded < tried);
        jit_sha256(f, n - 32, f + n - 32);
        REQUIRE(write_all(bad, f, n));
        ax_program *q = ax_program_load(bare, bad);
        CHECKF(q, "the file made again: %s", ax_error(bare));
        ax_program_free(q);
        free(f);
        ax_ctx_free(bare);
        ax_program_free(p);
        ax_ctx_free(cx);
        unlink(path);
        unlink(bad);
    }
    free(isa);
}

/* A file compiled in one mode is refused by a context in another, and
 * by a CPU that lacks an instruction the code may use. */
TEST(another_mode_or_cpu_is_refused)
{
    char dir[64] = "/tmp/axle-save-XXXXXX", path[64];
    REQUIRE(mkdtemp(dir));
    tmp_path(path, "mode");
    ax_ctx *cx = ctx_on(AX_BACKEND_CPU, dir, NULL, false);
    REQUIRE(cx);
    ax_program *p = compile_it(cx);
    REQUIRE(p && ax_program_save(p, path) == 0);
    ax_ctx *fast = ctx_on(AX_BACKEND_CPU, NULL, "/nonexistent/axle-no-cc", true);
    refused(fast, path, "compiled in safe, exact maths mode", "fast maths");
    ax_ctx_free(fast);
    ax_ctx *bare = ctx_on(AX_BACKEND_CPU, NULL, "/nonexistent/axle-no-cc", false);
    /* a CPU with nothing but SSE2, as the test hook has it */
    setenv("AXLE_TEST_HOST_ISA", "sse sse2", 1);
    bool needs_more = false;
    {
        ax_program *q = ax_program_load(bare, path);
        needs_more = q == NULL;
        ax_program_free(q);
    }
    unsetenv("AXLE_TEST_HOST_ISA");
#if defined(__x86_64__)
    /* every x86-64 CPU of this decade has more than SSE2 (this machine's
     * code uses what it has) */
    CHECK(needs_more);
    CHECKF(strstr(ax_error(bare), "lacks"), "%s", ax_error(bare));
#else
    (void)needs_more;
#endif
    ax_program *q = ax_program_load(bare, path);
    CHECKF(q && runs_right(bare, q), "%s", ax_error(bare));
    ax_program_free(q);
    ax_ctx_free(bare);
    ax_program_free(p);
    ax_ctx_free(cx);
    harness_rm_tree(dir);
    unlink(path);
}

/* ax_program_export: both backends write NAME.c and NAME.h that a C
 * compiler accepts (the CTest exported_program builds and runs one);
 * a name that is not a C identifier, a directory that is not there and
 * a GPU backend's program are errors naming what is wrong. */
TEST(export_writes_c_that_compiles)
{
    static const ax_backend_kind bs[] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
    for (int b = 0; b < 2; b++) {
        char dir[64] = "/tmp/axle-export-XXXXXX";
        REQUIRE(mkdtemp(dir));
        ax_ctx *cx = ctx_on(bs[b], NULL, NULL, false);
        REQUIRE(cx);
        ax_program *p = compile_it(cx);
        REQUIRE(p);
        CHECKF(ax_program_export(p, "weighted", dir) == 0, "%s", ax_error(cx));
        char cmd[512];
        snprintf(cmd, sizeof cmd, "cc -fsyntax-only -Wall -Wextra -Werror -I '%s' -I '%s/../include' '%s/weighted.c'", dir,
                 AXLE_TEST_SOURCE_DIR, dir);
        CHECKF(system(cmd) == 0, "%s", cmd);
        size_t n = 0;
        char *h = NULL, *c = NULL;
        char path[128];
        snprintf(path, sizeof path, "%s/weighted.h", dir);
        h = read_all(path, &n);
        CHECKF(h && strstr(h, "ax_program *weighted_load(ax_ctx *cx);") &&
                   strstr(h, "int weighted_run(ax_program *p, ax_array *arg0, ax_array *arg1, ax_array **out, int max);") &&
                   strstr(h, "arg1: [f64]^1"), "%s", h ? h : "no header");
        snprintf(path, sizeof path, "%s/weighted.c", dir);
        c = read_all(path, &n);
        CHECK(c && strstr(c, "static const ax_linked_fn weighted_fns[]") && strstr(c, "weighted_isa"));
        if (bs[b] == AX_BACKEND_CPU) CHECK(c && strstr(c, "axk_weighted_b0_"));
        free(h);
        free(c);
        /* a parameter whose elements have no components (the unit): the
         * plain-buffer entry point is still ISO C */
        const ax_type *unit = ax_type_tuple(cx, 0, NULL);
        ax_acc ua = ax_param(cx, 0, unit, 1);
        ax_program *up = ax_compile(cx, ax_atuple2(ax_map(keep, NULL, ua), ua));
        CHECKF(up && ax_program_export(up, "unitp", dir) == 0, "%s", ax_error(cx));
        snprintf(cmd, sizeof cmd, "cc -fsyntax-only -std=c11 -pedantic -Wall -Wextra -Werror -I '%s' -I '%s/../include' "
                 "'%s/unitp.c'", dir, AXLE_TEST_SOURCE_DIR, dir);
        CHECKF(system(cmd) == 0, "%s", cmd);
        ax_program_free(up);
        CHECK_EQ_I(ax_program_export(p, "9lives", dir), -1);
        CHECKF(strstr(ax_error(cx), "not a C identifier"), "%s", ax_error(cx));
        CHECK_EQ_I(ax_program_export(p, "ok", "/nonexistent/dir"), -1);
        CHECKF(strstr(ax_error(cx), "/nonexistent/dir is not a directory"), "%s", ax_error(cx));
        CHECK(runs_right(cx, p));
        ax_program_free(p);
        ax_ctx_free(cx);
        harness_rm_tree(dir);
    }
}

/* An OpenCL context where the machine has a platform (PoCL here), else
 * NULL with a note. */
static ax_ctx *opencl_ctx(const char *what)
{
    ax_ctx *gpu = ctx_on(AX_BACKEND_OPENCL, NULL, "/nonexistent/axle-no-cc", false);
    ax_array *probe = gpu ? ax_run(gpu, ax_unit(gpu, ax_i32(1))) : NULL;
    if (!probe) {
        fprintf(stderr, "note: no OpenCL here: %s is not tried\n", what);
        ax_ctx_free(gpu);
        return NULL;
    }
    ax_array_release(probe);
    return gpu;
}

/* An OpenCL program exported as C, built into an application against
 * libaxle (the runtime-only library has no GPU backend) and run with
 * AXLE_CC naming no compiler, through its plain-buffer entry point: the
 * kernels are built by the device's compiler at NAME_load, and the
 * results are the compiled program's, bit for bit.  (PATH stays: PoCL,
 * the OpenCL of these machines, links its kernels with the system's ld.) */
TEST(exported_gpu_program_runs)
{
    ax_ctx *gpu = opencl_ctx("the GPU programs' export");
    if (!gpu) return;
    char lib[512];
    snprintf(lib, sizeof lib, "%s/libaxle.so", AXLE_TEST_BUILD_DIR);
    if (access(lib, R_OK)) {
        fprintf(stderr, "note: no libaxle.so in the build: the exported GPU program is not run\n");
        ax_ctx_free(gpu);
        return;
    }
    char dir[64] = "/tmp/axle-export-gpu-XXXXXX";
    REQUIRE(mkdtemp(dir));
    ax_program *g = compile_it(gpu);
    REQUIRE(g);
    CHECKF(ax_program_export(g, "gw", dir) == 0, "%s", ax_error(gpu));
    char path[256];
    snprintf(path, sizeof path, "%s/main.c", dir);
    static const char app[] =
        "#include \"gw.h\"\n#include <stdio.h>\n#include <stdlib.h>\n"
        "int main(void)\n{\n"
        "    ax_options o = {0};\n    o.backend = AX_BACKEND_OPENCL;\n    o.cc = \"/nonexistent/axle-no-cc\";\n"
        "    o.no_cache = 1;\n    ax_ctx *cx = ax_ctx_new(&o);\n    ax_program *p = cx ? gw_load(cx) : NULL;\n"
        "    if (!p) { fprintf(stderr, \"%s\\n\", cx ? ax_error(cx) : \"no context\"); return 1; }\n"
        "    double a = 2.0, x[5] = {0, 1, 2, 3, 4}, *z = NULL, *s = NULL;\n    int64_t n = 5, zn = -1;\n"
        "    if (gw_run_buffers(cx, p, &a, x, &n, &z, &zn, &s)) { fprintf(stderr, \"%s\\n\", ax_error(cx)); return 1; }\n"
        "    for (int i = 0; i < 5; i++) printf(\"%.17g\\n\", z[i]);\n"
        "    printf(\"%.17g %lld %s\\n\", *s, (long long)zn, ax_program_stats(p)->backend);\n"
        "    free(z);\n    free(s);\n    ax_program_free(p);\n    ax_ctx_free(cx);\n    return 0;\n}\n";
    REQUIRE(write_all(path, app, sizeof app - 1));
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cc -O2 -Wall -Wextra -Werror %s -I '%s/../include' -I '%s' -o '%s/app' '%s/main.c' '%s/gw.c' -L '%s' -laxle "
             "-Wl,-rpath,'%s' -lm && AXLE_CC=/nonexistent/cc %s '%s/app' > '%s/out'",
#ifdef __SANITIZE_ADDRESS__
             "-fsanitize=address,undefined",
#else
             "",
#endif
             AXLE_TEST_SOURCE_DIR, dir, dir, dir, dir, AXLE_TEST_BUILD_DIR, AXLE_TEST_BUILD_DIR,
#ifdef __SANITIZE_ADDRESS__
             /* PoCL's LLVM gives its threads a larger alternate signal
              * stack of its own (malloc'd) where AddressSanitizer's is
              * smaller than LLVM wants (machines whose signal frames are
              * large), and AddressSanitizer then unmaps that one at the
              * thread's exit and aborts: no alternate stack from it */
             "ASAN_OPTIONS=\"$ASAN_OPTIONS:use_sigaltstack=0\"",
#else
             "",
#endif
             dir, dir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    /* what the compiled program gives, printed the same way */
    ax_array *out[2] = {0};
    CHECK_EQ_I(run_it(gpu, g, 2.0, 5, out), 2);
    char want[1024] = "";
    size_t at = 0;
    const double *z = out[0] ? ax_array_data(out[0], 0) : NULL, *sum = out[1] ? ax_array_data(out[1], 0) : NULL;
    for (int i = 0; z && i < 5; i++) at += (size_t)snprintf(want + at, sizeof want - at, "%.17g\n", z[i]);
    if (sum) snprintf(want + at, sizeof want - at, "%.17g 5 opencl\n", *sum);
    ax_array_release(out[0]);
    ax_array_release(out[1]);
    snprintf(path, sizeof path, "%s/out", dir);
    size_t n = 0;
    char *got = read_all(path, &n);
    CHECKF(got && !strcmp(got, want), "the exported program printed\n%s\nthe compiled one\n%s", got ? got : "(nothing)",
           want);
    free(got);
    ax_program_free(g);
    ax_ctx_free(gpu);
    harness_rm_tree(dir);
}

/* Errors of the save: no program, no name, a directory that is not
 * there; the context usable after. */
TEST(save_errors)
{
    CHECK_EQ_I(ax_program_save(NULL, "/tmp/x"), -1);
    ax_ctx *cx = ctx_on(AX_BACKEND_INTERP, NULL, NULL, false);
    REQUIRE(cx);
    ax_program *p = compile_it(cx);
    REQUIRE(p);
    CHECK_EQ_I(ax_program_save(p, NULL), -1);
    CHECK(strstr(ax_error(cx), "no file name"));
    CHECK_EQ_I(ax_program_save(p, "/nonexistent/dir/prog"), -1);
    CHECKF(strstr(ax_error(cx), "/nonexistent/dir/prog"), "%s", ax_error(cx));
    CHECK(runs_right(cx, p));
    ax_program_free(p);
    ax_ctx_free(cx);
}

/* A GPU program saves with its kernel text and loads, where there is no
 * C compiler, into a new context, which builds the kernels with the
 * device's compiler: the same results; every built-in program too; a
 * file whose kernel text was changed (its hash made again) is refused
 * by name, as is a GPU program's file in a context of another mode.  The
 * device API shared by CUDA and OpenCL (gpu.c) is what is tried, on
 * OpenCL. */
TEST(gpu_program_round_trips)
{
    ax_ctx *gpu = opencl_ctx("the GPU programs' save");
    if (!gpu) return;
    char path[64], bad[64];
    tmp_path(path, "gpu");
    tmp_path(bad, "gpu-bad");
    ax_program *g = compile_it(gpu);
    REQUIRE(g);
    CHECKF(ax_program_save(g, path) == 0, "%s", ax_error(gpu));
    ax_ctx *other = ctx_on(AX_BACKEND_OPENCL, NULL, "/nonexistent/axle-no-cc", false);
    REQUIRE(other);
    ax_program *q = ax_program_load(other, path);
    CHECKF(q, "%s", ax_error(other));
    CHECK(q && !strcmp(ax_program_stats(q)->backend, "opencl"));
    CHECK(q && runs_right(other, q));
    ax_program_free(q);
    /* a byte of the kernel text changed: refused, naming why */
    size_t n = 0;
    unsigned char *f = (unsigned char *)read_all(path, &n);
    REQUIRE(f && n > 100);
    unsigned char *k = memmem(f, n, "AX_KERNEL", 9);
    REQUIRE(k);
    k[3] ^= 0x20;   /* AX_kERNEL */
    jit_sha256(f, n - 32, f + n - 32);
    REQUIRE(write_all(bad, f, n));
    q = ax_program_load(other, bad);
    CHECK(!q);
    CHECKF(strstr(ax_error(other), "kernels are not those this axle makes"), "%s", ax_error(other));
    ax_program_free(q);
    free(f);
    /* another mode */
    ax_ctx *fast = ctx_on(AX_BACKEND_OPENCL, NULL, "/nonexistent/axle-no-cc", true);
    q = fast ? ax_program_load(fast, path) : NULL;
    CHECK(!q && fast && strstr(ax_error(fast), "mode"));
    ax_program_free(q);
    ax_ctx_free(fast);
    /* the built-in programs, at their test sizes, against their checks */
    for (int i = 0; i < ex_nprograms; i++) {
        const ex_program *e = ex_programs[i];
        void *st = e->setup(gpu, e->test_size ? e->test_size : e->default_size);
        REQUIRE(st);
        ax_program *p = ax_compile(gpu, e->build(gpu, st));
        CHECKF(p && ax_program_save(p, path) == 0, "%s: %s", e->name, ax_error(gpu));
        ax_program *l = p ? ax_program_load(other, path) : NULL;
        CHECKF(l, "%s: %s", e->name, ax_error(other));
        ax_array *res[8] = {0};
        int nr = l ? ax_program_run(l, res, 8) : -1;
        char msg[512] = "";
        CHECKF(nr > 0 && e->check(st, res, nr, msg, sizeof msg) == 0, "%s: %s%s", e->name, msg, ax_error(other));
        for (int r = 0; r < nr; r++) ax_array_release(res[r]);
        ax_program_free(l);
        ax_program_free(p);
        e->teardown(st);
        ax_ctx_reset(gpu);
    }
    ax_ctx_free(other);
    ax_program_free(g);
    ax_ctx_free(gpu);
    unlink(path);
    unlink(bad);
}

