/*
 * The distributed context (axle_mpi.h): the local axle context, the
 * communicators, options, failures and notices.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static long env_long(const char *name, long dflt, bool *set)
{
    const char *s = getenv(name);
    if (set) *set = false;
    if (!s || !*s) return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end) return dflt;
    if (set) *set = true;
    return v;
}

ax_mpi *ax_mpi_new(MPI_Comm comm, const ax_mpi_options *opt)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin) {
        fprintf(stderr, "axle: ax_mpi_new: MPI is %s (call MPI_Init first)\n", fin ? "finalised" : "not initialised");
        return NULL;
    }
    /* the communicators first: collective, made whatever happens below */
    MPI_Comm work = MPI_COMM_NULL, ctl = MPI_COMM_NULL, node = MPI_COMM_NULL;
    MPI_Comm_dup(comm, &work);
    MPI_Comm_dup(comm, &ctl);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_set_errhandler(work, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ctl, MPI_ERRORS_RETURN);
    ax_mpi *m = ax__calloc(1, sizeof *m);
    if (!m) {
        fprintf(stderr, "axle: ax_mpi_new: out of memory\n");
        return NULL;   /* (the other ranks' first collective call then fails or waits) */
    }
    m->user = comm;
    m->work = work;
    m->ctl = ctl;
    m->node = node;
    m->rev = MPI_COMM_NULL;
    MPI_Comm_size(comm, &m->np);
    MPI_Comm_rank(comm, &m->me);
    ax_options o;
    memset(&o, 0, sizeof o);
    if (opt && opt->axle) o = *opt->axle;
    /* threads: the node's cores shared by its ranks, unless asked */
    bool tset = false;
    env_long("AXLE_THREADS", 0, &tset);
    if (o.threads <= 0 && !tset) {
        int nnode = 1;
        if (node != MPI_COMM_NULL) MPI_Comm_size(node, &nnode);
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        long t = cores > 0 ? cores / (nnode > 0 ? nnode : 1) : 1;
        o.threads = t > 0 ? (int)t : 1;
    }
    if (!(m->cx = ax_ctx_new(&o))) {
        fprintf(stderr, "axle: ax_mpi_new: out of memory\n");
        free(m);
        return NULL;
    }
    m->rebalance = opt && opt->rebalance;
    bool set;
    long v = env_long("AXLE_MPI_SPLIT", 0, &set);
    m->split_inputs = (opt && opt->split_inputs) || (set && v != 0);
    int64_t ms = opt ? opt->min_split : 0;
    v = env_long("AXLE_MPI_MIN_SPLIT", 0, &set);
    if (ms == 0 && set) ms = v;
    m->min_split = ms == 0 ? 65536 : ms < 0 ? 0 : ms;
    cm_listen(m);
    const char *tr = getenv("AXLE_MPI_TRACE");
    m->trace = tr && *tr && strcmp(tr, "0");
    const char *tm = getenv("AXLE_MPI_TIMEOUT");
    m->timeout = tm && *tm ? atof(tm) : 0;
    const char *b = getenv("AXLE_MPI_BLOCKS");
    m->skew = b && !strcmp(b, "skew");
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    m->serialized = level >= MPI_THREAD_SERIALIZED;
    return m;
}

void ax_mpi_free(ax_mpi *m)
{
    if (!m) return;
    while (m->programs) ax_mpi_program_free(m->programs);
    while (m->darrays) mx_darray_free(m->darrays);
    if (m->errreq != MPI_REQUEST_NULL) {
        MPI_Cancel(&m->errreq);
        MPI_Wait(&m->errreq, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < m->nzarr; i++) ax_array_release(m->zarr[i]);
    free(m->zarr);
    ax_ctx_free(m->cx);
    if (m->rev != MPI_COMM_NULL) MPI_Comm_free(&m->rev);
    if (m->node != MPI_COMM_NULL) MPI_Comm_free(&m->node);
    MPI_Comm_free(&m->work);
    MPI_Comm_free(&m->ctl);
    for (int i = 0; i < m->nzomb; i++) free(m->zomb[i]);
    free(m->zomb);
    for (int i = 0; i < m->nsent; i++) free(m->sent[i]);
    free(m->sent);
    free(m->stat);
    free(m);
}

ax_ctx *ax_mpi_ctx(ax_mpi *m) { return m ? m->cx : NULL; }
int ax_mpi_rank(const ax_mpi *m) { return m ? m->me : -1; }
int ax_mpi_size(const ax_mpi *m) { return m ? m->np : 0; }
const char *ax_mpi_error(const ax_mpi *m) { return m ? m->err : "ax_mpi_error: the context is NULL"; }
ax_status ax_mpi_status(const ax_mpi *m) { return m ? m->status : AX_ERR_ARG; }

ax_acc ax_mpi_use(ax_mpi *m, ax_darray *d)
{
    if (!m) return NULL;
    if (!d) {
        ctx_error(m->cx, AX_ERR_BUILD, "ax_mpi_use: the distributed array is NULL");
        return NULL;
    }
    return ax_use(m->cx, ax_darray_local(d));
}
