/*
 * Radix sort (paper s.5.8): the program, for the tests and tools that need
 * it apart from the program registry.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_RADIXSORT_H
#define AX_RADIXSORT_H
#include "programs.h"

/* Sorts a vector of i32 (ascending, negative numbers first): Blelloch's
 * split radix sort, one pass per bit, in an ax_awhile loop. */
ax_acc ex_radixsort(ax_ctx *cx, ax_acc v);

extern const ex_program ex_prog_radixsort;
#endif
