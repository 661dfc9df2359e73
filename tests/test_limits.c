/*
 * Limits as tests: arrays of 2^31, 2^32, 2^62 and 2^63-1
 * elements, of 1-byte and 8-byte elements (so those byte counts and eight
 * times them), through every path that allocates an array: the public
 * constructors, and on every backend the operations whose result has that
 * size (generate, map, zipWith, backpermute, replicate, permute's
 * default, scanl's extent + 1, stencil).  With a memory limit each is
 * refused with AX_ERR_NOMEM (a shape that cannot be sized at all with
 * AX_ERR_SHAPE); without one, byte counts past 2^63 are refused by the
 * overflow check, and in a child process whose address space is capped
 * (so that malloc itself fails) the others fail cleanly too.  After each
 * failure the context runs a program.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const int64_t sizes[] = {(int64_t)1 << 31, (int64_t)1 << 32, (int64_t)1 << 62, INT64_MAX};
static const char *const size_names[] = {"2^31", "2^32", "2^62", "2^63-1"};
#define NSIZES 4
static const ax_scalar elts[] = {AX_BOOL, AX_F64};

static const ax_backend_kind backends[] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
static const char *const backend_names[] = {"interp", "cpu"};

static ax_ctx *ctx(ax_backend_kind be, int64_t limit)
{
    ax_options o = {0};
    o.backend = be;
    o.mem_limit = limit;
    return ax_ctx_new(&o);
}

static ax_exp dbl(ax_exp x, void *env) { (void)env; return ax_mul(x, ax_i32(2)); }
static bool ctx_works(ax_ctx *cx)
{
    int32_t v[3] = {1, 2, 3};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){3}, v);
    ax_array *r = a ? ax_run(cx, ax_map(dbl, NULL, ax_use(cx, a))) : NULL;
    bool ok = r && ((int32_t *)ax_array_data(r, 0))[2] == 6;
    ax_array_release(r);
    ax_array_release(a);
    return ok;
}

/* ------------------------------------------------------------ the paths */

typedef struct Env { ax_scalar s; ax_acc src; } Env;

static ax_exp elem(ax_exp ix, void *env)
{
    (void)ix;
    return ((Env *)env)->s == AX_BOOL ? ax_bool(true) : ax_f64(1.5);
}
static ax_exp id1(ax_exp x, void *env) { (void)env; return x; }
static ax_exp fst2(ax_exp x, ax_exp y, void *env) { (void)env; (void)y; return x; }
static ax_exp to_zero(ax_exp ix, void *env) { (void)env; (void)ix; return ax_ix1(ax_i64(0)); }
static ax_exp first_of(const ax_exp *xs, void *env) { (void)env; return xs[0]; }
static ax_exp same_ix(ax_exp ix, void *env) { (void)env; return ax_ix1(ax_i64(0)); (void)ix; }

enum { P_NEW, P_FROM, P_FROM_N, P_GENERATE, P_MAP, P_ZIPWITH, P_BACKPERMUTE, P_REPLICATE, P_PERMUTE, P_SCANL,
       P_STENCIL, NPATHS };
static const char *const path_names[NPATHS] = {
    "ax_array_new", "ax_array_from", "ax_array_from_n", "ax_generate", "ax_map", "ax_zip_with",
    "ax_backpermute", "ax_replicate", "ax_permute", "ax_scanl", "ax_stencil"};

/* Tries path pi for an array of n elements of type s; true if it was
 * refused cleanly (NULL, the given statuses, a message), false with a
 * message to stderr otherwise. */
static bool refused(ax_ctx *cx, int pi, ax_scalar s, int64_t n, const char *what)
{
    ax_array *r = NULL;
    char small[16] = {0};
    const void *bufs[2] = {small, small};
    const ax_type *pair[2] = {ax_type_scalar(s), ax_type_scalar(AX_BOOL)};
    Env env = {s, NULL};
    ax_acc one = ax_generate(cx, ax_ix1(ax_i64(1)), elem, &env);
    ax_acc big = ax_generate(cx, ax_ix1(ax_i64(n)), elem, &env);
    switch (pi) {
    case P_NEW: r = ax_array_new(cx, ax_type_scalar(s), 1, &n); break;
    case P_FROM: r = ax_array_from(cx, s, 1, &n, small); break;
    case P_FROM_N: r = ax_array_from_n(cx, ax_type_tuple(cx, 2, pair), 1, &n, bufs); break;
    case P_GENERATE: r = ax_run(cx, big); break;
    case P_MAP: r = ax_run(cx, ax_map(id1, NULL, big)); break;
    case P_ZIPWITH: r = ax_run(cx, ax_zip_with(fst2, NULL, big, big)); break;
    case P_BACKPERMUTE: r = ax_run(cx, ax_backpermute(ax_ix1(ax_i64(n)), same_ix, NULL, one)); break;
    case P_REPLICATE: {
        ax_slice sp[2] = {ax_fixed(ax_i64(n)), ax_all()};
        r = ax_run(cx, ax_replicate(2, sp, one));
        break;
    }
    case P_PERMUTE: r = ax_run(cx, ax_permute(fst2, NULL, big, to_zero, NULL, one)); break;
    case P_SCANL:
        /* the result's extent is n + 1 */
        r = ax_run(cx, ax_scanl(fst2, NULL, s == AX_BOOL ? ax_bool(false) : ax_f64(0),
                                ax_generate(cx, ax_ix1(ax_i64(n == INT64_MAX ? n : n - 1)), elem, &env)));
        break;
    case P_STENCIL: r = ax_run(cx, ax_stencil(first_of, NULL, (int[]){1}, ax_clamp(), big)); break;
    }
    ax_status st = ax_status_of(cx);
    bool ok = r == NULL && (st == AX_ERR_NOMEM || st == AX_ERR_SHAPE) && ax_error(cx)[0];
    if (!ok)
        fprintf(stderr, "%s: %s of %lld %s: %s (status %d, \"%s\")\n", what, path_names[pi], (long long)n,
                ax_scalar_name(s), r ? "succeeded" : "failed uncleanly", (int)st, ax_error(cx));
    ax_array_release(r);
    ax_clear_error(cx);
    ax_ctx_reset(cx);
    return ok;
}

/* Every path, size and element type on backend be with memory limit
 * `limit` (-1: none), sizes from first on; the number that were not
 * refused cleanly. */
static int sweep(ax_backend_kind be, int64_t limit, int first, const char *what)
{
    ax_ctx *cx = ctx(be, limit);
    int bad = 0;
    for (int si = first; si < NSIZES; si++)
        for (int e = 0; e < 2; e++)
            for (int pi = 0; pi < NPATHS; pi++) {
                /* without a limit, a size that fits 2^63 bytes only fails
                 * where malloc fails (the capped child below) */
                if (limit < 0 && elts[e] == AX_BOOL && si < 3) continue;
                if (limit < 0 && elts[e] == AX_F64 && si < 2) continue;
                if (!refused(cx, pi, elts[e], sizes[si], what)) bad++;
            }
    if (!ctx_works(cx)) {
        fprintf(stderr, "%s: the context does not work: %s\n", what, ax_error(cx));
        bad++;
    }
    ax_ctx_free(cx);
    return bad;
}

static bool available(ax_backend_kind be)
{
    ax_ctx *cx = ctx(be, 0);
    bool ok = ctx_works(cx);
    ax_ctx_free(cx);
    return ok;
}

TEST(huge_arrays_refused_with_a_memory_limit)
{
    for (int b = 0; b < 2; b++) {
        if (!available(backends[b])) continue;
        char what[64];
        snprintf(what, sizeof what, "%s, 1 GiB limit", backend_names[b]);
        CHECK_EQ_I(sweep(backends[b], (int64_t)1 << 30, 0, what), 0);
    }
}

TEST(byte_counts_past_2_63_refused_without_a_limit)
{
    for (int b = 0; b < 2; b++) {
        if (!available(backends[b])) continue;
        char what[64];
        snprintf(what, sizeof what, "%s, no limit", backend_names[b]);
        CHECK_EQ_I(sweep(backends[b], -1, 0, what), 0);
    }
}

/* No axle limit, and malloc itself fails: the process's address space is
 * capped in a child (not under a sanitizer or valgrind, which reserve
 * address space of their own). */
static bool under_a_checker(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return true;
#else
    const char *p = getenv("LD_PRELOAD");
    return (p && strstr(p, "vgpreload")) || getenv("AXLE_UNDER_VALGRIND");
#endif
}

TEST(malloc_failure_at_2_31_and_2_32_without_a_limit)
{
    if (under_a_checker()) {
        printf("note: skipped under a sanitizer or valgrind (the address space cannot be capped)\n");
        return;
    }
    for (int b = 0; b < 2; b++) {
        if (!available(backends[b])) continue;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            /* room for the library and a compile's output, not for 2 GB */
            struct rlimit rl = {(rlim_t)1 << 30, (rlim_t)1 << 30};
            setrlimit(RLIMIT_AS, &rl);
            ax_ctx *cx = ctx(backends[b], -1);
            int bad = 0;
            for (int si = 0; si < 2; si++)
                for (int e = 0; e < 2; e++)
                    for (int pi = 0; pi < NPATHS; pi++)
                        if (!refused(cx, pi, elts[e], sizes[si], "capped child")) bad++;
            if (!ctx_works(cx)) bad++;
            ax_ctx_free(cx);
            _exit(bad ? 1 : 0);
        }
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the capped child failed (status %d)", backend_names[b],
               st);
    }
}

/* Huge extents with a zero among them: nothing to allocate, and every
 * path handles the extents (no 32-bit truncation, no overflow). */
TEST(huge_extents_of_empty_arrays)
{
    for (int b = 0; b < 2; b++) {
        if (!available(backends[b])) continue;
        ax_ctx *cx = ctx(backends[b], (int64_t)1 << 30);
        for (int si = 0; si < NSIZES; si++) {
            int64_t n = sizes[si];
            Env env = {AX_F64, NULL};
            ax_acc g = ax_generate(cx, ax_ix2(ax_i64(n), ax_i64(0)), elem, &env);
            ax_array *r = ax_run(cx, ax_map(id1, NULL, g));
            CHECKF(r && ax_array_size(r) == 0 && ax_array_extent(r, 0) == n, "%s %s: %s", backend_names[b],
                   size_names[si], ax_error(cx));
            ax_array_release(r);
            /* a fold of (0 x n) rows: an empty result */
            r = ax_run(cx, ax_fold(fst2, NULL, ax_f64(0), ax_generate(cx, ax_ix2(ax_i64(0), ax_i64(n)), elem, &env)));
            CHECKF(r && ax_array_size(r) == 0, "%s %s: %s", backend_names[b], size_names[si], ax_error(cx));
            ax_array_release(r);
            int64_t sh[2] = {n, 0};
            ax_array *a = ax_array_new(cx, ax_type_scalar(AX_F64), 2, sh);
            CHECKF(a && ax_array_size(a) == 0, "%s", ax_error(cx));
            ax_array_release(a);
            ax_ctx_reset(cx);
        }
        /* shapes whose element count overflows: a shape error */
        int64_t sh[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
        CHECK(ax_array_new(cx, ax_type_scalar(AX_BOOL), 2, sh) == NULL && ax_status_of(cx) == AX_ERR_SHAPE);
        CHECK(ctx_works(cx));
        ax_ctx_free(cx);
    }
}
