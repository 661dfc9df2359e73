/*
 * Failures and notices of libaxle_mpi's calls: a failure of this rank's
 * part recorded on the local context (mx_fail), m's error taken from it
 * when a call does not communicate (mx_settle), a notice on rank 0
 * (mx_notice).  The files above report through these; this one calls
 * none of them.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include <stdarg.h>
#include <stdio.h>

int mx_fail(ax_mpi *m, ax_status st, const char *fmt, ...)
{
    char msg[AX_ERRMSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx_error(m->cx, st, "%s", msg);
    return -1;
}

void mx_settle(ax_mpi *m)
{
    ax_ctx *cx = m->cx;
    snprintf(m->err, sizeof m->err, "%s", cx->msg[0] ? cx->msg : "failed");
    m->status = cx->status ? cx->status : AX_ERR_BACKEND;
    ctx_settle(cx);
}

void mx_notice(ax_mpi *m, const char *fmt, ...)
{
    if (m->me != 0) return;
    ax_ctx *cx = m->cx;
    char msg[AX_ERRMSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (cx->opt.log) cx->opt.log(cx->opt.log_arg, msg);
    else if (!cx->opt.quiet) fprintf(stderr, "axle: %s\n", msg);
}
