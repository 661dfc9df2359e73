/*
 * The context record's core services: errors (the sticky builder error,
 * the reported one, the one set aside while a compiled program runs),
 * notices, thread ownership (one thread at a time), the user callbacks'
 * re-entrancy rule, and element types that live as long as the context.
 * Every layer reports through these; the context's making and freeing
 * are the driver's (src/driver/context.c), its options the runtime's
 * (src/runtime/options.c).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctx_notice(ax_ctx *cx, unsigned kind, const char *fmt, ...)
{
    if (cx->noticed & kind) return;
    cx->noticed |= kind;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (cx->opt.log) {
        ctx_callback_begin(cx, "log");
        cx->opt.log(cx->opt.log_arg, msg);
        ctx_callback_end(cx);
    } else if (!cx->opt.quiet) fprintf(stderr, "axle: %s\n", msg);
}

/* ------------------------------------------------------------ element types */

const Type *ctx_intern_type(ax_ctx *cx, const Type *t)
{
    /* Scalar, index and unit types are static. */
    if (!t || t->kind == TY_SCALAR || t->kind == TY_INDEX || (t->kind == TY_TUPLE && t->n == 0)) return t;
    for (int i = 0; i < cx->ninterned; i++)
        if (cx->interned[i] == t || ty_eq(cx->interned[i], t)) return cx->interned[i];
    if (cx->ninterned == cx->capinterned) {
        int cap = cx->capinterned ? 2 * cx->capinterned : 8;
        const Type **v = ax__realloc(cx->interned, sizeof *v * (size_t)cap);
        if (!v) return NULL;
        cx->interned = v;
        cx->capinterned = cap;
    }
    const Type *c = ty_copy(&cx->types, t);
    if (c) cx->interned[cx->ninterned++] = c;
    return c;
}

/* ------------------------------------------------------------ threads */

/* The calling thread's identity: the address of a thread-local object
 * (never written; it only has to be distinct per live thread). */
static _Thread_local char thread_token;

/* A call made on cx by a user callback (cancel, log, progress) that is
 * running on the owning thread: refused.  The run that called the
 * callback is in the middle of its work on cx (its program's nodes point
 * at this run's arrays, its kernels and buffers are in use), so a nested
 * run, compile, reset or free would compute on the wrong arrays or free
 * what the outer run uses.  The refusal is the inner call's error, at
 * once, and the outer call's when it leaves (ctx_leave). */
static void refuse(ax_ctx *cx, const char *what)
{
    if (!cx->reentered) {
        cx->reentered = true;
        cx->reenter_what = what ? what : "an axle function";
    }
    ctx_error_force(cx, AX_ERR_ARG, "%s: called from the %s callback on the context whose call ran the callback; "
                    "a callback may only read that context (ax_error, ax_status_of, ax_ctx_options, "
                    "ax_program_stats, ax_program_params, ax_program_type, the array accessors) and may use "
                    "other contexts freely", cx->reenter_what, cx->callback ? cx->callback : "user");
}

/* The outermost call entering cx: a builder's error set aside by a failed
 * run (ctx_hold) is pending again. */
static void unhold_on_entry(ax_ctx *cx)
{
    if (cx->held_status != AX_OK && cx->status == AX_OK) ctx_unhold(cx);
    cx->held_status = AX_OK;
}

bool ctx_enter_as(ax_ctx *cx, const char *what)
{
    uintptr_t me = (uintptr_t)&thread_token, cur = atomic_load(&cx->owner);
    if (cur == me) {
        if (cx->in_callback) {
            refuse(cx, what);
            return false;
        }
        if (cx->depth++ == 0) unhold_on_entry(cx);
        return true;
    }
    if (cur == 0 && atomic_compare_exchange_strong(&cx->owner, &cur, me)) {
        cx->depth = 1;
        unhold_on_entry(cx);
        return true;
    }
    /* Another thread is inside: touch nothing else, and let it know. */
    atomic_store(&cx->clash, 1);
    return false;
}

bool ctx_enter(ax_ctx *cx) { return ctx_enter_as(cx, NULL); }

bool ctx_leave(ax_ctx *cx)
{
    if (--cx->depth > 0) return false;
    bool clash = atomic_exchange(&cx->clash, 0) != 0;
    bool re = cx->reentered;
    cx->reentered = false;
    atomic_store(&cx->owner, 0);
    return clash || re;
}

bool ctx_leave_report(ax_ctx *cx, const char *what)
{
    const char *inner = cx->reentered && cx->depth == 1 ? cx->reenter_what : NULL;
    const char *cb = cx->callback ? cx->callback : "user";
    bool clash = atomic_load(&cx->clash) != 0;
    if (!ctx_leave(cx)) return false;
    if (clash)
        ctx_error_force(cx, AX_ERR_ARG, "%s: the context was used from another thread at the same time (a "
                        "context is for one thread at a time: use one context per thread)", what);
    else
        ctx_error_force(cx, AX_ERR_ARG, "%s: its %s callback called %s on the same context, which a callback "
                        "may not do (it may only read that context: ax_error, ax_status_of, ax_ctx_options, "
                        "ax_program_stats, ax_program_params, ax_program_type, the array accessors; other "
                        "contexts may be used freely)", what, cb, inner ? inner : "an axle function");
    ctx_settle(cx);
    return true;
}

bool ctx_refuse_in_callback(ax_ctx *cx, const char *what)
{
    if (!cx->in_callback || atomic_load(&cx->owner) != (uintptr_t)&thread_token) return false;
    refuse(cx, what);
    return true;
}

void ctx_callback_begin(ax_ctx *cx, const char *name)
{
    cx->in_callback++;
    cx->callback = name;
}

void ctx_callback_end(ax_ctx *cx) { cx->in_callback--; }

bool ctx_cancel_asked(ax_ctx *cx)
{
    if (!cx->opt.cancel) return false;
    ctx_callback_begin(cx, "cancel");
    bool stop = cx->opt.cancel(cx->opt.cancel_arg);
    ctx_callback_end(cx);
    return stop;
}

void ctx_hold(ax_ctx *cx)
{
    if (cx->status == AX_OK) return;
    cx->held_status = cx->status;
    memcpy(cx->held_msg, cx->msg, sizeof cx->held_msg);
    cx->status = AX_OK;
    cx->msg[0] = 0;
}

void ctx_unhold(ax_ctx *cx)
{
    if (cx->held_status == AX_OK) return;
    cx->status = cx->held_status;
    memcpy(cx->msg, cx->held_msg, sizeof cx->msg);
    cx->held_status = AX_OK;
}

/* run_deep's helper thread works for the thread that owns cx, which waits
 * for it: the ownership passes to the helper while it runs, so the public
 * calls it makes (array constructors in the MPI executor, callbacks) are
 * not taken for another thread's, and passes back when it is done. */
uintptr_t ctx_lend(ax_ctx *cx)
{
    return atomic_exchange(&cx->owner, (uintptr_t)&thread_token);
}

void ctx_unlend(ax_ctx *cx, uintptr_t owner) { atomic_store(&cx->owner, owner); }

bool ctx_touch_as(ax_ctx *cx, const char *what)
{
    uintptr_t cur = atomic_load(&cx->owner);
    if (cur == (uintptr_t)&thread_token && cx->in_callback) {
        refuse(cx, what);
        return false;
    }
    if (cur == 0 || cur == (uintptr_t)&thread_token) {
        if (cur == 0) unhold_on_entry(cx);
        return true;
    }
    atomic_store(&cx->clash, 1);
    return false;
}

bool ctx_touch(ax_ctx *cx) { return ctx_touch_as(cx, NULL); }

const ax_options *ax_ctx_options(const ax_ctx *cx) { return &cx->opt; }

const char *ax_error(const ax_ctx *cx) { return cx ? cx->msg : "no context"; }
ax_status ax_status_of(const ax_ctx *cx)
{
    if (!cx) return AX_ERR_ARG;
    return cx->status != AX_OK ? cx->status : cx->last_status;
}

void ax_clear_error(ax_ctx *cx)
{
    if (!cx || ctx_refuse_in_callback(cx, "ax_clear_error")) return;
    cx->status = AX_OK;
    cx->last_status = AX_OK;
    cx->held_status = AX_OK;
    cx->msg[0] = 0;
}

void *ctx_error(ax_ctx *cx, ax_status st, const char *fmt, ...)
{
    /* a builder's error, outside any call that entered cx: one set aside
     * by a failed run is pending again first (first error wins) */
    if (cx && cx->held_status != AX_OK && cx->depth == 0) unhold_on_entry(cx);
    if (!cx || cx->status != AX_OK) return NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cx->msg, sizeof cx->msg, fmt, ap);
    va_end(ap);
    cx->status = st;
    return NULL;
}

void ctx_settle(ax_ctx *cx)
{
    if (cx && cx->status != AX_OK) {
        cx->last_status = cx->status;
        cx->status = AX_OK;
    }
}

void ctx_error_force(ax_ctx *cx, ax_status st, const char *fmt, ...)
{
    if (!cx) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cx->msg, sizeof cx->msg, fmt, ap);
    va_end(ap);
    cx->status = st;
}

