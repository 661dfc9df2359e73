/*
 * The reference interpreter (interp.c), which defines what every
 * operation means: its Backend, and its array operations for an executor
 * that walks a program itself (libaxle_mpi).  Its scalar evaluator is the
 * runtime's (runtime/eval.h).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_INTERP_H
#define AX_INTERP_H
#include "ir.h"

extern const Backend backend_interp;

/* Evaluates a closed core program. */
int interp_run(ax_ctx *cx, Program *p, ax_array **out, int max);

/* One array operation x run for a walk that is not the interpreter's own
 * (src/mpi walks the array level itself, binding h's environment, and
 * runs each operation on a backend): h's environment and liveness
 * counters are used as they are, scalars evaluated with ie
 * (interp_eval_new over h->aenv).  0 with host_width(x->type) new
 * references in out, or -1 with an error. */
struct InterpEval;
struct Host;
int interp_run_op(struct InterpEval *ie, struct Host *h, const Node *x, ax_array **out);
#endif
