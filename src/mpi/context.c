/*
 * The distributed context (axle_mpi.h): the local axle context, the
 * communicators, options; made and freed (ax_mpi_free frees what is
 * left of its arrays and programs).  Its failures and notices: fail.c.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The seconds a wait for other ranks may last: ax_mpi_options.timeout
 * (negative: no limit), else AXLE_MPI_TIMEOUT (0 or less: no limit), else
 * the default.  *bad: the variable's text when it is not a number (the
 * default is used). */
static double timeout_of(const ax_mpi_options *opt, const char **bad)
{
    *bad = NULL;
    if (opt && opt->timeout != 0) return opt->timeout < 0 ? 0 : opt->timeout;
    const char *s = getenv("AXLE_MPI_TIMEOUT");
    if (!s || !*s) return AX_MPI_TIMEOUT_DEFAULT;
    char *end;
    double v = strtod(s, &end);
    if (*end || v != v) {
        *bad = s;
        return AX_MPI_TIMEOUT_DEFAULT;
    }
    return v > 0 ? v : 0;
}

/* A duplicate of comm (collective; callers: comm is the caller's): 0, or
 * MPI's error or -1 (the wait timed out) with why.  Non-blocking, waited for at most twice timeout
 * (as every wait at the start of a call, see cm_wait_ctl): a process of
 * comm that never calls ax_mpi_new, or gave up on it, would hold the
 * others for ever. */
static int dup_bounded(MPI_Comm comm, bool callers, double timeout, MPI_Comm *out, char *why, size_t n)
{
    *out = MPI_COMM_NULL;
    /* (the request writes the new handle when it completes: into memory
     * that outlives a request that never does) */
    MPI_Comm *slot = ax__malloc(sizeof *slot);
    if (!slot) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    *slot = MPI_COMM_NULL;
    MPI_Request rq;
    int e = MPI_Comm_idup(comm, slot, &rq);
    bool started = e == MPI_SUCCESS;
    if (started) e = cm_wait_limit(2 * timeout, &rq);
    if (e == 0) {
        *out = *slot;
        free(slot);
        return 0;
    }
    if (e == -1 && callers) {
        snprintf(why, n, "this process waited more than %g s (twice AXLE_MPI_TIMEOUT) for the other processes of "
                 "the communicator to call ax_mpi_new too (the duplicate stays pending on the communicator: make no "
                 "other collective call on it)", 2 * timeout);
    } else if (e == -1) {
        snprintf(why, n, "this process waited more than %g s (twice AXLE_MPI_TIMEOUT) for the other processes in "
                 "ax_mpi_new (one gave up on it before this one came, or has stopped)", 2 * timeout);
    } else {
        char s[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(e, s, &len);
        snprintf(why, n, "MPI_Comm_idup failed: %s", s);
    }
    /* (a request that started may still complete) */
    if (started) cm_bury(slot);
    else free(slot);
    return e;
}

/* The first duplicate of comm (collective): 0, or -1 with why.  Every call
 * on comm runs under MPI_ERRORS_RETURN, the caller's error handler put
 * back after: the caller's (MPI_ERRORS_ARE_FATAL unless it chose
 * another) would end the whole job on an error here, such as MPI running
 * out of communicators. */
static int first_dup(MPI_Comm comm, double timeout, MPI_Comm *out, char *why, size_t n)
{
    *out = MPI_COMM_NULL;
    MPI_Errhandler old = MPI_ERRHANDLER_NULL;
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0, e = MPI_Comm_get_errhandler(comm, &old);
    if (e != MPI_SUCCESS) {
        MPI_Error_string(e, s, &len);
        snprintf(why, n, "the communicator's error handler could not be read (MPI_Comm_get_errhandler: %s)", s);
        return -1;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int inter = 0;
    e = MPI_Comm_test_inter(comm, &inter);
    if (e != MPI_SUCCESS) {
        MPI_Error_string(e, s, &len);
        snprintf(why, n, "MPI_Comm_test_inter failed: %s", s);
    } else if (inter) {
        snprintf(why, n, "the communicator is an inter-communicator; axle runs over an intra-communicator (one group "
                 "of processes: MPI_Intercomm_merge makes one)");
    } else {
        dup_bounded(comm, true, timeout, out, why, n);
    }
    MPI_Comm_set_errhandler(comm, old);
    MPI_Errhandler_free(&old);
    return *out == MPI_COMM_NULL ? -1 : 0;
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
    /* (MPI_COMM_NULL is what a process outside a group gets from
     * MPI_Comm_split or MPI_Comm_create: no call of MPI may take it) */
    if (comm == MPI_COMM_NULL) {
        fprintf(stderr, "axle: ax_mpi_new: the communicator is MPI_COMM_NULL (call ax_mpi_new only on the "
                "processes of a communicator)\n");
        return NULL;
    }
    const char *badenv = NULL;
    double timeout = timeout_of(opt, &badenv);
    ax_mpi *m = ax__calloc(1, sizeof *m);
    Pending *agree = ax__calloc(1, sizeof *agree);
    if (!m || !agree) {
        fprintf(stderr, "axle: ax_mpi_new: out of memory\n");
        free(m);
        free(agree);
        return NULL;   /* (the other ranks then wait for this one, until their timeout) */
    }
    char why[AX_ERRMSG] = "";
    MPI_Comm work = MPI_COMM_NULL, ctl = MPI_COMM_NULL, node = MPI_COMM_NULL;
    if (first_dup(comm, timeout, &work, why, sizeof why)) {
        fprintf(stderr, "axle: ax_mpi_new: %s\n", why);
        free(m);
        free(agree);
        return NULL;
    }
    /* The others from the first, so that they run under
     * MPI_ERRORS_RETURN from the start.  ctl bounded as the first: a
     * process whose first duplicate timed out left it pending, and one
     * that calls ax_mpi_new late completes it alone, then waits here for
     * the one that gave up.  Once ctl is made every process is here: the
     * node's communicator (no non-blocking form) is made by all. */
    MPI_Comm_set_errhandler(work, MPI_ERRORS_RETURN);
    if (dup_bounded(work, false, timeout, &ctl, why, sizeof why)) {
        fprintf(stderr, "axle: ax_mpi_new: %s\n", why);
        MPI_Comm_free(&work);
        free(m);
        free(agree);
        return NULL;
    }
    MPI_Comm_set_errhandler(ctl, MPI_ERRORS_RETURN);
    if (MPI_Comm_split_type(work, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) node = MPI_COMM_NULL;
    if (node != MPI_COMM_NULL) MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    m->agree = agree;
    m->work = work;
    m->ctl = ctl;
    m->node = node;
    m->rev = MPI_COMM_NULL;
    m->errreq = MPI_REQUEST_NULL;
    m->timeout = timeout;
    MPI_Comm_size(work, &m->np);
    MPI_Comm_rank(work, &m->me);
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
    m->cx = ax_ctx_new(&o);
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
    const char *b = getenv("AXLE_MPI_BLOCKS");
    m->skew = b && !strcmp(b, "skew");
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    m->serialized = level >= MPI_THREAD_SERIALIZED;
    /* (as the local context treats its malformed variables: a notice,
     * the value ignored; an error with ax_options.strict, which then
     * fails ax_mpi_new on every rank.  The notice's kind: a bit the
     * context's own variables do not use.) */
    if (m->cx && badenv) {
        ctx_notice(m->cx, NOTICE_ENV << 24, "AXLE_MPI_TIMEOUT='%.64s' is not valid (seconds; 0: no limit); it is "
                   "ignored", badenv);
        if (m->cx->opt.strict)
            ctx_error(m->cx, AX_ERR_ARG, "ax_mpi_new: AXLE_MPI_TIMEOUT='%.64s' is not valid (seconds; 0: no limit)",
                      badenv);
    }
    /* What decides how the ranks communicate must be alike on every rank:
     * a rank that split an operation's rows where another computed it
     * whole would wait for a transfer never made. */
    bool verify = m->cx && (m->cx->opt.debug & AX_DEBUG_VERIFY);
    AgItem it[] = {
        {m->rebalance, AG_BOOL, "ax_mpi_options.rebalance", -1, NULL, -1, NULL},
        {m->split_inputs, AG_BOOL, "ax_mpi_options.split_inputs (or AXLE_MPI_SPLIT)", -1, NULL, -1, NULL},
        {(uint64_t)m->min_split, AG_INT, "ax_mpi_options.min_split (or AXLE_MPI_MIN_SPLIT; 0: every operation in "
         "blocks)", -1, NULL, -1, NULL},
        {m->skew, AG_BOOL, "AXLE_MPI_BLOCKS=skew", -1, NULL, -1, NULL},
        {verify, AG_BOOL, "AXLE_DEBUG=verify", -1, NULL, -1, NULL},
    };
    if (cm_agree_on(m, m->cx && m->cx->status == AX_OK, 0, it, (int)(sizeof it / sizeof *it), "ax_mpi_new")) {
        fprintf(stderr, "axle: %s\n", m->err);
        ax_mpi_free(m);
        return NULL;
    }
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
    free(m->agree);   /* (NULL when a wait timed out: buried then, see cm_wait_ctl) */
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
