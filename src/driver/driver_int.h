/*
 * What the driver's files share (private to src/driver): the stages of
 * the pipeline, the front end, the clock, the depth a program is sized
 * for.  stack.c: the stack; pipeline.c: the passes and the backend's
 * choice; program.c: compiled programs and the program memory; dump.c:
 * ax_dump; context.c: a context's life.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_DRIVER_INT_H
#define AX_DRIVER_INT_H
#include "ir.h"
#include "opt/opt.h"
#include <stdio.h>
#include <time.h>

/* The depth a program is sized for: sharing recovery refuses programs
 * nested deeper than AX_DEPTH_LIMIT levels, after walking that far. */
#define DEPTH_CAP (AX_DEPTH_LIMIT + 10)

static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Reports a failure once: the message stays readable through ax_error, and
 * the context is ready for the next program. */
static inline void settle_error(ax_ctx *cx) { ctx_settle(cx); }

/* How far front_end goes: the stages a dump can show. */
typedef enum { UPTO_SHARING, UPTO_SIMPLIFY, UPTO_FUSION } Upto;

/* Sharing recovery, then the passes up to stage upto, under cx's switches
 * and `off` (pipeline.c).  NULL with an error on cx. */
Program *front_end(ax_ctx *cx, ax_acc a, ax_stats *st, Upto upto, unsigned off);
/* An error on cx when p does not verify, naming the pass it follows. */
void verify_or_fail(ax_ctx *cx, Program *p, const char *after);
/* After a pass: the verifier and the dump AXLE_DEBUG asks for; the pass's
 * time since t0. */
double pass_done(ax_ctx *cx, Program *p, const char *name, double t0);
/* The planner (the loop graph, the clustering and the rewrites); the
 * rewrites' count or -1; the choice in *ch when asked for. */
int plan(ax_ctx *cx, Program *p, PlanLog *log, PlanChoice *ch);
/* A compiled program's parts, for its file (bundle.c; program.c): the
 * optimised program, whose USE nodes read arrays[0..narrays) (pointed at
 * this program's own arrays by the call), its backend and the backend's
 * state, its statistics and its depth. */
struct Backend;
typedef struct ProgramParts {
    Program *prog;
    const struct Backend *be;
    void *state;
    ax_array *const *arrays;
    int narrays;
    const ax_stats *stats;
    int64_t depth;
} ProgramParts;
/* pr's context (NULL for NULL or an orphan), and pr's parts (prog NULL
 * when it has none). */
ax_ctx *program_parts(ax_program *pr, ProgramParts *pp);
/* A program of cx made of parts read from a file (all taken, released on
 * failure): NULL with an error on cx. */
ax_program *program_of_parts(ax_ctx *cx, Program *prog, const struct Backend *be, void *state, int64_t depth,
                             const ax_stats *st);
/* The source graph's depth, or -1 with an error on cx (program.c). */
int64_t source_depth(ax_ctx *cx, ax_acc a, const char *what);
#endif
