/*
 * The hand-written baselines of the PolyBench/C 4.2.1 kernels
 * (bench/polybench/baseline_pb_*.c; the programs are in
 * examples/polybench).  Each kernel has two: _serial, the suite's loop
 * nest as published (same loop order, same arithmetic), and _omp, the
 * same computation with OpenMP where a user would add it.  Both take the
 * kernel's sizes and its inputs (never written) and write its results
 * (the arrays the suite prints); a kernel that updates an array in place
 * starts by copying the input into the result and then updates that.
 * Matrices are row-major.  BL_DECLARE gives the _std and _fast builds.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_PB_BASELINES_H
#define AX_PB_BASELINES_H
#include "baseline.h"

/* An OpenMP pragma, written PB_OMP(omp parallel for ...): nothing where
 * the compiler has no OpenMP (the loop then runs serially). */
#ifdef _OPENMP
#define PB_OMP(x) _Pragma(#x)
#else
#define PB_OMP(x)
#endif

/* C := alpha A B + beta C0; A ni x nk, B nk x nj, C ni x nj. */
#define PB_GEMM_ARGS (int64_t ni, int64_t nj, int64_t nk, double alpha, double beta, const double *C0, \
                      const double *A, const double *B, double *C)
BL_DECLARE(void, pb_gemm_serial, PB_GEMM_ARGS)
BL_DECLARE(void, pb_gemm_omp, PB_GEMM_ARGS)
/* 2mm: D := alpha A B C + beta D0; A ni x nk, B nk x nj, C nj x nl, D ni x
 * nl; tmp (ni x nj) is scratch. */
#define PB_2MM_ARGS (int64_t ni, int64_t nj, int64_t nk, int64_t nl, double alpha, double beta, \
                     const double *A, const double *B, const double *C, const double *D0, double *tmp, double *D)
BL_DECLARE(void, pb_2mm_serial, PB_2MM_ARGS)
BL_DECLARE(void, pb_2mm_omp, PB_2MM_ARGS)

/* 3mm: G := (A B)(C D); A ni x nk, B nk x nj, C nj x nm, D nm x nl; E (ni
 * x nj) and F (nj x nl) are scratch, G ni x nl. */
#define PB_3MM_ARGS (int64_t ni, int64_t nj, int64_t nk, int64_t nl, int64_t nm, const double *A, \
                     const double *B, const double *C, const double *D, double *E, double *F, double *G)
BL_DECLARE(void, pb_3mm_serial, PB_3MM_ARGS)
BL_DECLARE(void, pb_3mm_omp, PB_3MM_ARGS)

/* atax: y := A^T (A x); A m x n; tmp (m) is scratch. */
#define PB_ATAX_ARGS (int64_t m, int64_t n, const double *A, const double *x, double *tmp, double *y)
BL_DECLARE(void, pb_atax_serial, PB_ATAX_ARGS)
BL_DECLARE(void, pb_atax_omp, PB_ATAX_ARGS)

/* bicg: s := A^T r, q := A p; A n x m. */
#define PB_BICG_ARGS (int64_t n, int64_t m, const double *A, const double *r, const double *p, double *s, \
                      double *q)
BL_DECLARE(void, pb_bicg_serial, PB_BICG_ARGS)
BL_DECLARE(void, pb_bicg_omp, PB_BICG_ARGS)

/* mvt: x1 := x1_0 + A y1, x2 := x2_0 + A^T y2; A n x n. */
#define PB_MVT_ARGS (int64_t n, const double *A, const double *x1_0, const double *x2_0, const double *y1, \
                     const double *y2, double *x1, double *x2)
BL_DECLARE(void, pb_mvt_serial, PB_MVT_ARGS)
BL_DECLARE(void, pb_mvt_omp, PB_MVT_ARGS)

/* gemver: A' := A0 + u1 v1^T + u2 v2^T, x := beta A'^T y + z, w := alpha
 * A' x; A0 n x n; A (n x n) and x (n) are written (the suite updates them
 * in place), w is the result. */
#define PB_GEMVER_ARGS (int64_t n, double alpha, double beta, const double *A0, const double *u1, \
                        const double *v1, const double *u2, const double *v2, const double *y, \
                        const double *z, double *A, double *x, double *w)
BL_DECLARE(void, pb_gemver_serial, PB_GEMVER_ARGS)
BL_DECLARE(void, pb_gemver_omp, PB_GEMVER_ARGS)

/* gesummv: y := alpha A x + beta B x; A, B n x n; tmp (n) is scratch. */
#define PB_GESUMMV_ARGS (int64_t n, double alpha, double beta, const double *A, const double *B, \
                         const double *x, double *tmp, double *y)
BL_DECLARE(void, pb_gesummv_serial, PB_GESUMMV_ARGS)
BL_DECLARE(void, pb_gesummv_omp, PB_GESUMMV_ARGS)
/* syrk: C := alpha A A^T + beta C0 on the lower triangle (j <= i), the
 * upper triangle kept; A n x m, C n x n. */
#define PB_SYRK_ARGS (int64_t n, int64_t m, double alpha, double beta, const double *C0, const double *A, \
                      double *C)
BL_DECLARE(void, pb_syrk_serial, PB_SYRK_ARGS)
BL_DECLARE(void, pb_syrk_omp, PB_SYRK_ARGS)

/* syr2k: C := alpha (A B^T + B A^T) + beta C0 on the lower triangle, the
 * upper triangle kept; A, B n x m, C n x n. */
#define PB_SYR2K_ARGS (int64_t n, int64_t m, double alpha, double beta, const double *C0, const double *A, \
                       const double *B, double *C)
BL_DECLARE(void, pb_syr2k_serial, PB_SYR2K_ARGS)
BL_DECLARE(void, pb_syr2k_omp, PB_SYR2K_ARGS)

/* doitgen: A[r][q][p] := sum_s A0[r][q][s] C4[s][p]; A nr x nq x np, C4
 * np x np; sum (np) is the serial loop's scratch. */
#define PB_DOITGEN_ARGS (int64_t nr, int64_t nq, int64_t np, const double *A0, const double *C4, double *sum, \
                         double *A)
BL_DECLARE(void, pb_doitgen_serial, PB_DOITGEN_ARGS)
BL_DECLARE(void, pb_doitgen_omp, PB_DOITGEN_ARGS)

/* covariance: cov (m x m) of the n x m data0 (rows are observations);
 * data (n x m) and mean (m) are scratch. */
#define PB_COVARIANCE_ARGS (int64_t n, int64_t m, const double *data0, double *data, double *mean, double *cov)
BL_DECLARE(void, pb_covariance_serial, PB_COVARIANCE_ARGS)
BL_DECLARE(void, pb_covariance_omp, PB_COVARIANCE_ARGS)

/* correlation: corr (m x m) of the n x m data0; data (n x m), mean and
 * stddev (m) are scratch. */
#define PB_CORRELATION_ARGS (int64_t n, int64_t m, const double *data0, double *data, double *mean, \
                             double *stddev, double *corr)
BL_DECLARE(void, pb_correlation_serial, PB_CORRELATION_ARGS)
BL_DECLARE(void, pb_correlation_omp, PB_CORRELATION_ARGS)
/* jacobi-1d: tsteps steps of the 3-point average over the interior of A
 * into B, then of B into A (edges kept); A0, B0 n.  A is the result, B
 * scratch. */
#define PB_JACOBI1D_ARGS (int64_t tsteps, int64_t n, const double *A0, const double *B0, double *A, double *B)
BL_DECLARE(void, pb_jacobi1d_serial, PB_JACOBI1D_ARGS)
BL_DECLARE(void, pb_jacobi1d_omp, PB_JACOBI1D_ARGS)

/* jacobi-2d: as jacobi-1d with the 5-point average on n x n arrays. */
#define PB_JACOBI2D_ARGS (int64_t tsteps, int64_t n, const double *A0, const double *B0, double *A, double *B)
BL_DECLARE(void, pb_jacobi2d_serial, PB_JACOBI2D_ARGS)
BL_DECLARE(void, pb_jacobi2d_omp, PB_JACOBI2D_ARGS)

/* heat-3d: tsteps steps of the 7-point heat equation on n x n x n
 * arrays, A into B then B into A (edges kept); A and B both start as A0.
 * A is the result, B scratch. */
#define PB_HEAT3D_ARGS (int64_t tsteps, int64_t n, const double *A0, double *A, double *B)
BL_DECLARE(void, pb_heat3d_serial, PB_HEAT3D_ARGS)
BL_DECLARE(void, pb_heat3d_omp, PB_HEAT3D_ARGS)

/* fdtd-2d: tmax steps of the 2D finite-difference time-domain update of
 * the fields ex, ey, hz (nx x ny, starting from ex0, ey0, hz0), with
 * fict[t] driving the row ey[0][.]. */
#define PB_FDTD2D_ARGS (int64_t tmax, int64_t nx, int64_t ny, const double *fict, const double *ex0, \
                        const double *ey0, const double *hz0, double *ex, double *ey, double *hz)
BL_DECLARE(void, pb_fdtd2d_serial, PB_FDTD2D_ARGS)
BL_DECLARE(void, pb_fdtd2d_omp, PB_FDTD2D_ARGS)

/* floyd-warshall: all-pairs shortest paths of the n x n int32 distances
 * path0 into path. */
#define PB_FLOYD_ARGS (int64_t n, const int32_t *path0, int32_t *path)
BL_DECLARE(void, pb_floyd_serial, PB_FLOYD_ARGS)
BL_DECLARE(void, pb_floyd_omp, PB_FLOYD_ARGS)
#endif
