/*
 * The context record (struct ax_ctx) and its core services, which every
 * layer uses: errors, notices, thread ownership, the user callbacks'
 * re-entrancy rule, interned element types (context.c).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_CONTEXT_H
#define AX_CONTEXT_H
#include "ir.h"

#define AX_ERRMSG 1024
/* The deepest program axle compiles, in levels of its source graph's
 * nesting (ir_depth).  The passes recurse along the nesting on a stack the
 * driver sizes for the program (driver/stack.c run_deep), so this bounds that
 * stack (STACK_PER_LEVEL bytes a level, reserved, touched only as deep
 * as the program goes), not what fits in a thread's default stack. */
#define AX_DEPTH_LIMIT 1000000
/* Backend kinds index the per-context backend state (ax_backend_kind). */
#define AX_NBACKENDS 5

struct ax_ctx {
    ax_options opt;           /* after the environment was applied */
    Arena arena;              /* source terms and their types */
    int next_var;             /* source-graph variable ids */
    ax_status status;         /* pending error (sticky until ax_run reports it) */
    ax_status last_status;    /* the error ax_run last reported */
    char msg[AX_ERRMSG];
    ax_array *arrays;         /* every live host array (a list) */
    int64_t mem_used;         /* bytes of owned array buffers */
    struct Backend const *backends[AX_NBACKENDS];
    void *backend_state[AX_NBACKENDS];   /* per-backend context state (thread pool, cache) */
    char *scratch;            /* ax_type_str etc. */
    ax_array **uses;          /* arrays referenced by ax_use nodes (malloc'd) */
    int nuses, capuses;
    /* Large buffers of released arrays, kept for reuse (array.c): a
     * program run again writes into memory already mapped and faulted in
     * instead of paying the kernel's page faults on fresh pages. */
    struct { void *p; size_t cap; } spare[16];
    int nspare;
    /* Small buffers (under 4 KiB) of released arrays, reused at their
     * exact padded size: an awhile step makes and drops a few (its
     * counter, its condition), and glibc's aligned allocation takes its
     * slow path every time.  Counted in spare_bytes with the large. */
    struct { void *p; size_t cap; } small[8];
    int nsmall;
    int64_t spare_bytes;
    /* Element types of host arrays (ctx_intern_type): they outlive
     * ax_ctx_reset and the programs that made the arrays. */
    Arena types;
    const Type **interned;
    int ninterned, capinterned;
    /* Compiled programs still alive (driver/program.c): ax_ctx_free orphans them. */
    struct ax_program *programs;
    /* The program memory (driver/program.c): recent compilations by source key. */
    struct Compiled *reuse;
    int nreuse;
    size_t reuse_bytes;
    struct KeyScratch *keyscratch;   /* src_key's tables, kept (srckey.c) */
    /* One thread at a time (ctx_enter): the owning thread's token, its
     * nesting depth, and whether another thread came in meanwhile. */
    _Atomic uintptr_t owner;
    int depth;
    _Atomic int clash;
    /* A user callback (cancel, log, progress) running on the owning
     * thread, and its name: a call it makes on cx is refused (ctx_enter),
     * and the call that ran the callback fails with reentered's message
     * (axle.h, "Callbacks and re-entrancy"). */
    int in_callback;
    const char *callback;
    bool reentered;
    const char *reenter_what;   /* the refused call (a static string) */
    /* A builder's error set aside while a compiled program ran and failed
     * (ctx_hold): pending again from the next call that enters cx. */
    ax_status held_status;
    char held_msg[AX_ERRMSG];
    /* Test-only (runtime/mvec.h): the interpreter's maths as the CPU
     * backend's, or NULL (libm). */
    struct Mvec *mvec;
    unsigned noticed;         /* NOTICE_* given already (each once) */
    /* The planner (src/opt/ilp.c): AXLE_PLANNER (PLANNER_*),
     * AXLE_PLANNER_LIMIT (ms; 0: the default) and AXLE_CBC (CBC's library,
     * or NULL); CBC once loaded and the models solved (NULL until the
     * first solve). */
    int planner;
    double planner_limit_ms;
    char *planner_cbc;
    /* The fast modes' BLAS for matrix products (runtime/blas.h): AXLE_BLAS,
     * the library to load (NULL: OpenBLAS by its names), or "off" or "0"
     * (no_blas: none). */
    char *blas;
    bool no_blas;
    struct PlanState *plan;
    /* A compile's own memory (the arenas of the program being compiled,
     * the planner's tables), charged against the memory limit together
     * with the arrays in use (mem_used); arena.c, driver/context.c. */
    MemBudget compile_mem;
};
enum { PLANNER_ILP = 0, PLANNER_GREEDY = 1, PLANNER_CBC = 2 };

/* Notices (ax_options.log): what a user should know that is not an error.
 * Each kind is given once per context. */
enum {
    NOTICE_NO_CC = 1u << 0,   /* no C compiler: the interpreter runs programs */
    NOTICE_ENV = 1u << 1,     /* first bit of the malformed AXLE_* variables */
    NOTICE_BLAS = 1u << 16,   /* AXLE_BLAS names a library that does not load */
};
void ctx_notice(ax_ctx *cx, unsigned kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records an error on cx unless one is pending (first error wins).
 * Returns NULL for convenient `return ctx_error(...)`. */
void *ctx_error(ax_ctx *cx, ax_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reports a pending error at once (it stays readable through ax_error and
 * ax_status_of) so that it does not block the next ax_run: for failures of
 * the functions that are not builders (ax_run, ax_array_new, ...). */
void ctx_settle(ax_ctx *cx);
/* Overwrites whatever is pending. */
void ctx_error_force(ax_ctx *cx, ax_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A copy of element type t that lives as long as cx (equal types share
 * one copy; static types are returned as they are), or NULL when memory
 * runs out.  Host arrays hold these: they survive ax_ctx_reset and the
 * program that made them. */
const Type *ctx_intern_type(ax_ctx *cx, const Type *t);

/* One context, one thread at a time (axle.h).  ctx_enter claims cx for
 * the calling thread (nested calls on that thread are fine) and is false,
 * touching nothing else, when another thread holds it; that thread then
 * learns of it from ctx_leave (true: another thread came in meanwhile).
 * ctx_leave_report also records that as the error, settled, naming what.
 * ctx_touch (builders) only checks: false while another thread holds cx. */
bool ctx_enter(ax_ctx *cx);
bool ctx_leave(ax_ctx *cx);
bool ctx_leave_report(ax_ctx *cx, const char *what);
bool ctx_touch(ax_ctx *cx);
/* As ctx_enter and ctx_touch, naming the public call: while a user
 * callback runs (ctx_callback_begin), a call on cx from it is refused
 * with an error naming `what` and the callback, which the call that ran
 * the callback reports when it leaves.  (ctx_enter and ctx_touch: the
 * same, for callers that name themselves elsewhere.) */
bool ctx_enter_as(ax_ctx *cx, const char *what);
bool ctx_touch_as(ax_ctx *cx, const char *what);
/* True, with the refusal recorded, when a user callback of cx is running
 * on this thread: for the calls that do not enter cx (ax_ctx_free,
 * ax_program_free, ax_clear_error). */
bool ctx_refuse_in_callback(ax_ctx *cx, const char *what);
/* Around every call of a user callback (name: "cancel", "log",
 * "progress") on the thread that owns cx. */
void ctx_callback_begin(ax_ctx *cx, const char *name);
void ctx_callback_end(ax_ctx *cx);
/* ax_options.cancel, asked (false when there is none). */
bool ctx_cancel_asked(ax_ctx *cx);
/* A compiled program's run does not depend on a builder's error pending
 * on cx (a term being built elsewhere): ctx_hold sets it aside before
 * the run; ctx_unhold puts it back after a run that succeeded.  After a
 * failed run the run's error is the one reported, and the builder's is
 * pending again from the next call that enters cx. */
void ctx_hold(ax_ctx *cx);
void ctx_unhold(ax_ctx *cx);
uintptr_t ctx_lend(ax_ctx *cx);
void ctx_unlend(ax_ctx *cx, uintptr_t owner);

#endif
