/*
 * The PolyBench/C 4.2.1 kernels in axle (one file each in this folder),
 * NULL-terminated.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"

const ex_program *const ex_polybench[] = {
    NULL,
};
