/*
 * The hand-written baseline of the sparse-matrix vector product.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_SMVM_H
#define AX_BASELINE_SMVM_H
#include "baseline.h"

/* y = A x for A in compressed sparse row form: row r holds the entries
 * rowptr[r] .. rowptr[r+1]-1 of col (column indices) and val. */
BL_DECLARE(void, bl_smvm, (int64_t rows, const int64_t *rowptr, const int32_t *col, const float *val,
                           const float *x, float *y))
#endif
