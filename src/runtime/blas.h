/*
 * A BLAS loaded at run time (blas.c) for the matrix products the CPU
 * backend recognises in the fast modes (backend/cgen/contract.c): OpenBLAS
 * (BSD-3-Clause), found with dlopen as libopenblas.so.0 or libopenblas.so,
 * or the file AXLE_BLAS names ("off" or "0": none), so that axle neither
 * links nor needs it.  Only its row-major CBLAS gemm is called.  A BLAS
 * stays loaded once loaded, as CBC does (src/opt/cbc.c): its worker
 * threads live as long as the process.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BLAS_H
#define AX_BLAS_H
#include "ir.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct Blas Blas;

/* The BLAS at path (NULL: OpenBLAS by its names), loaded; NULL with the
 * reason in why.  Released by blas_free (the library stays loaded). */
Blas *blas_load(const char *path, char *why, size_t size);
void blas_free(Blas *b);

/* C = alpha op(A) op(B) + beta C, row-major, C m x n with leading dimension ldc;
 * op(A) m x k (A itself k x m when ta), op(B) k x n (n x k when tb);
 * s is AX_F32 or AX_F64.  threads: the BLAS's threads for the call
 * (where it lets them be set).  false, leaving C alone, when a size does
 * not fit the BLAS's 32-bit integers. */
bool blas_gemm(Blas *b, ax_scalar s, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc,
               int threads);

/* The symmetric products, n x n: C = alpha op(A) op(A)^T (syrk) or
 * alpha (op(A) op(B)^T + op(B) op(A)^T) (syr2k, B non-NULL), op(A) n x k
 * (A itself k x n when trans).  The BLAS computes the lower triangle, in
 * half the work of a gemm, and the upper is copied from it.  false,
 * leaving C alone, when the BLAS lacks them or a size does not fit. */
bool blas_syrk(Blas *b, ax_scalar s, bool trans, int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
               const void *B, int64_t ldb, void *C, int64_t ldc, int threads);

/* Copies the lower triangle of the n x n matrix C (leading dimension ldc,
 * elements of z bytes) onto its upper, in tiles. */
void mat_mirror_lower(size_t z, int64_t n, void *C, int64_t ldc);

#endif /* AX_BLAS_H */
