/*
 * The Rodinia 3.1 programs in axle (one file each in this folder),
 * NULL-terminated.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"

const ex_program *const ex_rodinia[] = {
    NULL,
};
