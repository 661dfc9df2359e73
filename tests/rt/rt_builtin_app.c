/* An application made of one built-in program exported as C (by
 * rt_builtins.c), compiled with -DPROG=NAME -include NAME.h and linked
 * against libaxle_rt alone, run where no C compiler can be found
 * (tests/rt/exported_builtins.sh).  Usage: app NAME.ref NAME.axle [close]
 * The exported program (NAME_load, NAME_run) and the saved one
 * (ax_program_load) must both give the JIT's results, NAME.ref, bit for
 * bit; with "close" (an application built by another C compiler than the
 * JIT's) the exported program's floats need only be close: a fold or
 * scan of floats may be reassociated, and each compiler vectorises it
 * its own way (the saved program's objects are the JIT's: bit for bit). 
 * SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(a) #a
#define STR(a) STR_(a)

enum { MAX_RES = 16 };

typedef struct {
    unsigned char *b;
    size_t n, at;
} Ref;

static bool get(Ref *r, void *dst, size_t n)
{
    if (r->n - r->at < n) return false;
    memcpy(dst, r->b + r->at, n);
    r->at += n;
    return true;
}

/* n values of scalar type s at a and b: the same bits, or (close)
 * floats within a relative 1e-3 of each other. */
static bool equal(ax_scalar s, const void *a, const void *b, size_t n, bool close)
{
    size_t es = ax_scalar_size(s);
    if (!memcmp(a, b, es * n)) return true;
    if (!close || (s != AX_F32 && s != AX_F64)) return false;
    for (size_t i = 0; i < n; i++) {
        double x = s == AX_F32 ? ((const float *)a)[i] : ((const double *)a)[i];
        double y = s == AX_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
        if (!(x == y || (isnan(x) && isnan(y)) || fabs(x - y) <= 1e-3 * (fabs(x) + fabs(y)) + 1e-6)) return false;
    }
    return true;
}

/* 0 when res[0..nres) are the reference's; else a message. */
static int same(Ref ref, ax_array **res, int nres, const char *what, bool close)
{
    int32_t n = 0;
    if (!get(&ref, &n, 4) || n != nres) {
        fprintf(stderr, "%s: %s: %d results, the JIT had %d\n", STR(PROG), what, nres, n);
        return 1;
    }
    for (int r = 0; r < nres; r++) {
        int32_t rank = 0, nc = 0;
        if (!get(&ref, &rank, 4) || rank != ax_array_rank(res[r])) goto differ;
        for (int d = 0; d < rank; d++) {
            int64_t e = 0;
            if (!get(&ref, &e, 8) || e != ax_array_extent(res[r], d)) goto differ;
        }
        if (!get(&ref, &nc, 4) || nc != ax_array_components(res[r])) goto differ;
        for (int c = 0; c < nc; c++) {
            int32_t s = 0;
            if (!get(&ref, &s, 4) || s != (int32_t)ax_array_component_type(res[r], c)) goto differ;
            size_t bytes = ax_scalar_size((ax_scalar)s) * (size_t)ax_array_size(res[r]);
            if (ref.n - ref.at < bytes ||
                !equal((ax_scalar)s, ref.b + ref.at, ax_array_data(res[r], c), (size_t)ax_array_size(res[r]), close))
                goto differ;
            ref.at += bytes;
        }
        continue;
    differ:
        fprintf(stderr, "%s: %s: result %d differs from the JIT's\n", STR(PROG), what, r);
        return 1;
    }
    return 0;
}

static int run_and_compare(ax_ctx *cx, ax_program *p, Ref ref, const char *what, bool exported, bool close)
{
    if (!p) {
        fprintf(stderr, "%s: %s: %s\n", STR(PROG), what, ax_error(cx));
        return 1;
    }
    ax_array *res[MAX_RES] = {0};
    int n = exported ? CAT(PROG, _run)(p, res, MAX_RES) : ax_program_run(p, res, MAX_RES);
    int bad = n < 0 ? (fprintf(stderr, "%s: %s: %s\n", STR(PROG), what, ax_error(cx)), 1) : same(ref, res, n, what, close);
    for (int r = 0; r < n; r++) ax_array_release(res[r]);
    ax_program_free(p);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 3 && (argc != 4 || strcmp(argv[3], "close"))) {
        fprintf(stderr, "usage: app NAME.ref NAME.axle [close]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    Ref ref = {0};
    if (f) {
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        ref.b = len > 0 ? malloc((size_t)len) : NULL;
        ref.n = ref.b && fread(ref.b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
        fclose(f);
    }
    if (!ref.n) {
        fprintf(stderr, "%s: cannot read %s\n", STR(PROG), argv[1]);
        return 1;
    }
    ax_ctx *cx = ax_ctx_new(NULL);
    int bad = run_and_compare(cx, CAT(PROG, _load)(cx), ref, "exported", true, argc == 4);
    bad |= run_and_compare(cx, ax_program_load(cx, argv[2]), ref, "saved", false, false);
    ax_ctx_free(cx);
    free(ref.b);
    if (!bad) printf("%s: exported and saved: the JIT's results%s\n", STR(PROG), argc == 4 ? " (close)" : "");
    return bad;
}
