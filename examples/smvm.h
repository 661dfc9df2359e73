/*
 * Sparse-matrix vector multiplication (paper s.5.9): the program, the
 * random matrix generator and the Matrix Market reader, for the tests and
 * tools that need them apart from the program registry.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_SMVM_H
#define AX_SMVM_H
#include "programs.h"

/* A sparse matrix in compressed row form, as the Accelerate program holds
 * it: the length of each row (its segment descriptor) and, row after row,
 * the column index and value of each stored entry, columns ascending within
 * a row.  rowptr (rows + 1 offsets) is the same information as C code
 * uses it. */
typedef struct ex_csr {
    int64_t rows, cols, nnz;
    int32_t *segd;     /* rows lengths */
    int64_t *rowptr;   /* rows + 1 offsets */
    int32_t *col;      /* nnz column indices, 0-based */
    float *val;        /* nnz values */
} ex_csr;

/* smvm (segd, svec) vec = foldSeg (+) 0 (zipWith (*) (gather inds vec) vals) segd
 *   where (inds, vals) = unzip svec
 * segd: i32 row lengths; svec: a vector of (i32 column, f32 value) pairs;
 * vec: f32.  The result has one element per row. */
ax_acc ex_smvm(ax_acc segd, ax_acc svec, ax_acc vec);

/* A random rows x rows matrix, the same for a given (rows, seed): each row
 * holds a random number of entries, uniform in 0 .. 2 * avg_per_row, at
 * random columns (ascending; a column may repeat, which adds), values
 * uniform in [-1, 1).  Returns 0, or -1 if memory runs out. */
int ex_csr_random(ex_csr *m, int64_t rows, int avg_per_row, uint64_t seed);

/* Reads a Matrix Market file ("%%MatrixMarket matrix coordinate F S" with
 * F real, integer or pattern (every entry 1), S general, symmetric or
 * skew-symmetric; a symmetric file's off-diagonal entries are stored both
 * ways).  Entries may come in any order; duplicates add.  Returns 0, or -1
 * with the reason (file, line) in msg. */
int ex_mm_read(const char *path, ex_csr *m, char *msg, size_t size);
/* The same within a memory budget: the sizes of the header are checked
 * against the file's length (each entry takes a few bytes) and the bytes
 * the reader would allocate against max_bytes before anything is
 * allocated; entries that are NaN, infinite or beyond f32's range are
 * refused with a message.  ex_mm_read's budget is half of physical
 * memory, axle's default memory limit. */
int ex_mm_read_limit(const char *path, ex_csr *m, int64_t max_bytes, char *msg, size_t size);

void ex_csr_free(ex_csr *m);

/* The environment variable naming a Matrix Market file for the smvm
 * program to multiply instead of a random matrix (`axle bench --matrix`
 * sets it). */
#define EX_SMVM_MATRIX_ENV "AXLE_SMVM_MATRIX"

extern const ex_program ex_prog_smvm;
#endif
