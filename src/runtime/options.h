/*
 * A context's options (options.c): the environment applied to the
 * caller's ax_options, the defaults, the copied strings.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_OPTIONS_H
#define AX_OPTIONS_H
#include "ir.h"

/* Applies the AXLE_* variables and the defaults to cx->opt (which holds
 * the caller's options), and copies its strings; 0, or -1 when memory
 * for a copy runs out (cx is then freed by the caller). */
int options_apply(ax_ctx *cx);
#endif
