/*
 * The driver: the stack a program's passes and run need (stack.c), the
 * programs compiled in a context, and the optimised program for the
 * executors that walk a program themselves (src/mpi).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_DRIVER_H
#define AX_DRIVER_H
#include "ir.h"

/* Runs fn(arg) with a C stack that has room for a program nested depth
 * levels (stack_need bytes): on the calling thread if it has room, else
 * on a helper thread with a stack of that size (the caller waits).  -1
 * with an error on cx (naming what) when no such thread can be had. */
int run_deep(ax_ctx *cx, int64_t depth, const char *what, void (*fn)(void *), void *arg);
int64_t stack_need(int64_t depth);
/* Whether the calling thread's stack has room for depth (run_deep then
 * runs fn on it). */
bool stack_fits(int64_t depth);

/* ax_ctx_free's first step (program.c): every program still compiled in cx
 * gives up its backend state, its IR and its arrays, keeping only the
 * handle, which ax_program_free then frees (order does not matter); the
 * program memory is emptied. */
void programs_orphan(ax_ctx *cx);


/* The optimised core program of a (sharing recovery, simplifier, fusion,
 * planner: what ax_compile gives its backend), for an executor that walks
 * a program itself (src/mpi), without the passes whose AX_DEBUG_NO_*
 * switches are in off (as if cx's options had them too).  NULL with an
 * error on cx.  pipeline.c. */
Program *driver_optimise(ax_ctx *cx, ax_acc a, ax_stats *st, unsigned off);

/* The backend for `want` (AX_BACKEND_DEFAULT: the CPU's, else the
 * interpreter, with a notice once a context, or an error under strict,
 * when there is no C compiler: *fallback is then set); NULL with
 * AX_ERR_BACKEND on cx when the one asked for is not available
 * (pipeline.c).  Every caller that runs a program chooses through it. */
const Backend *backend_pick(ax_ctx *cx, ax_backend_kind want, bool *fallback);
/* The backend a program runs on to report a fault a device recorded:
 * the CPU's where it is available, else the interpreter. */
const Backend *backend_host(ax_ctx *cx);

#endif
