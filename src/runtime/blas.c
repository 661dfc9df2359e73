/*
 * A BLAS loaded at run time (blas.h).  CBLAS's interface is declared
 * here, as its standard fixes it (the enum values of CBLAS_ORDER and
 * CBLAS_TRANSPOSE, int dimensions in the LP64 builds Debian ships), so
 * that axle needs no BLAS header to build.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "blas.h"
#include "core/fault.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112, CBLAS_LOWER = 122 };

struct Blas {
    void *lib;
    void (*dgemm)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *,
                  int);
    void (*sgemm)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
    /* the symmetric products, or NULL */
    void (*dsyrk)(int, int, int, int, int, double, const double *, int, double, double *, int);
    void (*ssyrk)(int, int, int, int, int, float, const float *, int, float, float *, int);
    void (*dsyr2k)(int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);
    void (*ssyr2k)(int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
    void (*set_threads)(int);   /* openblas_set_num_threads, or NULL */
};

Blas *blas_load(const char *path, char *why, size_t size)
{
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", NULL};
    void *lib = NULL;
    const char *err = NULL;
    dlerror();
    if (path) {
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib) err = dlerror();
    } else {
        for (int i = 0; names[i] && !lib; i++) {
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            if (!lib && !err) err = dlerror();
        }
    }
    if (!lib) {
        snprintf(why, size, "no BLAS: %.160s", err ? err : path ? path : names[0]);
        return NULL;
    }
    Blas *b = ax__calloc(1, sizeof *b);
    if (!b) {
        snprintf(why, size, "out of memory (loading a BLAS)");
        return NULL;   /* the library stays loaded (blas.h) */
    }
    b->lib = lib;
    *(void **)&b->dgemm = dlsym(lib, "cblas_dgemm");
    *(void **)&b->sgemm = dlsym(lib, "cblas_sgemm");
    *(void **)&b->dsyrk = dlsym(lib, "cblas_dsyrk");
    *(void **)&b->ssyrk = dlsym(lib, "cblas_ssyrk");
    *(void **)&b->dsyr2k = dlsym(lib, "cblas_dsyr2k");
    *(void **)&b->ssyr2k = dlsym(lib, "cblas_ssyr2k");
    *(void **)&b->set_threads = dlsym(lib, "openblas_set_num_threads");
    if (!b->dgemm || !b->sgemm) {
        snprintf(why, size, "the BLAS %s has no cblas_dgemm and cblas_sgemm", path ? path : "found");
        free(b);
        return NULL;
    }
    return b;
}

void blas_free(Blas *b)
{
    free(b);
}

static bool fits(int64_t v)
{
    return v >= 0 && v <= INT_MAX;
}

bool blas_gemm(Blas *b, ax_scalar s, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc,
               int threads)
{
    if (!b || !fits(m) || !fits(n) || !fits(k) || !fits(lda) || !fits(ldb) || !fits(ldc)) return false;
    /* the BLAS's leading dimensions are at least 1, even of an empty matrix */
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    if (ldc < 1) ldc = 1;
    if (b->set_threads) b->set_threads(threads > 0 ? threads : 1);
    int TA = ta ? CBLAS_TRANS : CBLAS_NO_TRANS, TB = tb ? CBLAS_TRANS : CBLAS_NO_TRANS;
    if (s == AX_F64)
        b->dgemm(CBLAS_ROW_MAJOR, TA, TB, (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
    else if (s == AX_F32)
        b->sgemm(CBLAS_ROW_MAJOR, TA, TB, (int)m, (int)n, (int)k, (float)alpha, A, (int)lda, B, (int)ldb, (float)beta, C,
                 (int)ldc);
    else
        return false;
    return true;
}

/* The upper triangle of the n x n matrix C (leading dimension ldc) from
 * its lower, in tiles so that both sides stay in the cache. */
void mat_mirror_lower(size_t z, int64_t n, void *C, int64_t ldc)
{
    enum { T = 64 };
    char *c = C;
    for (int64_t i0 = 0; i0 < n; i0 += T)
        for (int64_t j0 = i0; j0 < n; j0 += T)
            for (int64_t i = i0; i < i0 + T && i < n; i++)
                for (int64_t j = j0 > i + 1 ? j0 : i + 1; j < j0 + T && j < n; j++)
                    memcpy(c + ((size_t)i * (size_t)ldc + (size_t)j) * z, c + ((size_t)j * (size_t)ldc + (size_t)i) * z, z);
}

bool blas_syrk(Blas *b, ax_scalar s, bool trans, int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
               const void *B, int64_t ldb, void *C, int64_t ldc, int threads)
{
    if (!b || !fits(n) || !fits(k) || !fits(lda) || !fits(ldb) || !fits(ldc)) return false;
    bool f64 = s == AX_F64;
    bool have = B ? (f64 ? b->dsyr2k != NULL : b->ssyr2k != NULL) : (f64 ? b->dsyrk != NULL : b->ssyrk != NULL);
    if (!(f64 || s == AX_F32) || !have) return false;
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    if (ldc < 1) ldc = 1;
    if (b->set_threads) b->set_threads(threads > 0 ? threads : 1);
    int TR = trans ? CBLAS_TRANS : CBLAS_NO_TRANS;
    if (B && f64)
        b->dsyr2k(CBLAS_ROW_MAJOR, CBLAS_LOWER, TR, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, 0.0, C, (int)ldc);
    else if (B)
        b->ssyr2k(CBLAS_ROW_MAJOR, CBLAS_LOWER, TR, (int)n, (int)k, (float)alpha, A, (int)lda, B, (int)ldb, 0.0f, C,
                  (int)ldc);
    else if (f64)
        b->dsyrk(CBLAS_ROW_MAJOR, CBLAS_LOWER, TR, (int)n, (int)k, alpha, A, (int)lda, 0.0, C, (int)ldc);
    else
        b->ssyrk(CBLAS_ROW_MAJOR, CBLAS_LOWER, TR, (int)n, (int)k, (float)alpha, A, (int)lda, 0.0f, C, (int)ldc);
    mat_mirror_lower(ax_scalar_size(s), n, C, ldc);
    return true;
}
