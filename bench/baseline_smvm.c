/*
 * Sparse-matrix vector multiplication in CSR form (paper s.5.9) as a
 * performance engineer writes it for a multicore CPU: one dot product per
 * row, rows shared out dynamically in chunks (row lengths vary, in real
 * matrices by orders of magnitude), each row's dot product a SIMD
 * reduction (a gather of x by column index; AVX2 has vgatherdps).  The row
 * pointers are the usual CSR offsets, computed once with the matrix, where
 * the Accelerate program uses the segment lengths.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_smvm.h"

void BL(bl_smvm)(int64_t rows, const int64_t *restrict rowptr, const int32_t *restrict col,
                 const float *restrict val, const float *restrict x, float *restrict y)
{
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 512)
#endif
    for (int64_t r = 0; r < rows; r++) {
        float s = 0;
#ifdef _OPENMP
#pragma omp simd reduction(+ : s)
#endif
        for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++) s += val[k] * x[col[k]];
        y[r] = s;
    }
}
