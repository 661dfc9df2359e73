/*
 * Communication: every transfer between ranks that a distributed
 * operation makes, counted per operation (MRun.cur: the statistics of
 * axle_mpi.h, ax_mpi_stats).
 *
 * Failures.  A rank that fails (a fault in its rows, out of memory) must
 * not leave the others waiting for it in a transfer it will never join.
 * So every wait here is non-blocking (MPI_Test on point-to-point and
 * MPI-3 non-blocking collectives) and watches for a failure notice: a
 * failing rank sends one to every other rank (cm_notify) and goes to the
 * end of the call, where every rank meets in an agreement on a
 * communicator used for nothing else (cm_agree); the others see the
 * notice at their next wait, or the agreement's result at the end.  After
 * a failure the exchange communicator, which may hold unfinished
 * transfers, is replaced by a fresh duplicate.  Notices still in flight
 * then are not lost to MPI: once their communicator is freed, MPI may give
 * its context id to a later duplicate, where they would match the posted
 * receive of a later call's notice; so each notice carries the number of
 * the communicator it was sent on (ax_mpi.epoch), and a stale one is
 * dropped.
 *
 * Agreements.  Each collective call begins with one (cm_agree_on): one
 * small MPI_Iallreduce on ctl of this rank's success, the call it is in,
 * the program's hash and a hash of the values every rank must give alike
 * (a root, the distributions of the arrays given, options), so that ranks
 * that made the call differently fail it at once, before any transfer,
 * with a message naming what differs and which rank gave what (then a few
 * more collectives on ctl find and show it: only on that failure).  A wait
 * for a transfer lasts at most m->timeout, and any wait on ctl twice that:
 * a rank that never makes the call, or takes another branch than the
 * others (what no agreement sees), must not hold the others for ever.
 * A transfer that timed out fails the call like any failure, and the
 * ranks meet at the agreement that ends it; a wait on ctl that timed out
 * leaves the ranks out of step (the collective stays pending in MPI, to
 * be matched by a later call of a late rank), so the context is broken:
 * every later collective call fails at once on that rank.
 *
 * Order.  Every rank makes the same transfers in the same order (the
 * decisions behind them depend only on what every rank knows alike:
 * shapes and distributions), so message tags come from a counter that
 * runs alike on every rank.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "mpi_int.h"
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_ERR = 7, TAG_BASE = 64, TAG_SPAN = 30000 };

int cm_next_tag(ax_mpi *m)
{
    int t = TAG_BASE + m->tag;
    m->tag = (m->tag + 1) % TAG_SPAN;
    return t;
}

int ranges_add(Ranges *r, int64_t lo, int64_t hi)
{
    if (hi <= lo) return 0;
    if (r->n > 0 && r->v[r->n - 1].hi == lo) {   /* adjacent: one range */
        r->v[r->n - 1].hi = hi;
        return 0;
    }
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        Range *v = ax__realloc(r->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = (Range){lo, hi};
    return 0;
}

static int nomem(MRun *r) { return mx_fail(r->m, AX_ERR_NOMEM, "axle mpi: out of memory"); }

void cm_keep(ax_mpi *m, void *p)
{
    if (!p) return;
    void **z = ax__realloc(m->zomb, sizeof *z * (size_t)(m->nzomb + 1));
    if (!z) return;   /* (then it leaks, rather than be freed under MPI) */
    m->zomb = z;
    m->zomb[m->nzomb++] = p;
}

void cm_keep_array(ax_mpi *m, ax_array *a)
{
    if (!a) return;
    ax_array **z = ax__realloc(m->zarr, sizeof *z * (size_t)(m->nzarr + 1));
    if (!z) {
        ax_array_retain(a);   /* (leaks rather than be freed under MPI) */
        return;
    }
    m->zarr = z;
    m->zarr[m->nzarr++] = ax_array_retain(a);
}

/* free(p), or kept when a transfer may still use it. */
static void drop(ax_mpi *m, void *p, bool pending)
{
    if (pending) cm_keep(m, p);
    else free(p);
}

static int mpi_failed(MRun *r, int code, const char *what)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    MPI_Error_string(code, s, &n);
    return mx_fail(r->m, AX_ERR_BACKEND, "axle mpi: %s failed: %s", what, s);
}

/* ------------------------------------------------------------ failures */

/* A failure notice: its status in byte 0, the epoch of the exchange
 * communicator it was sent on (mod 2^24) in bytes 1-3, then the text. */
static uint32_t notice_epoch(const char *b)
{
    const unsigned char *u = (const unsigned char *)b;
    return (uint32_t)u[1] | (uint32_t)u[2] << 8 | (uint32_t)u[3] << 16;
}

int cm_wait(MRun *r, MPI_Request *req, int n)
{
    ax_mpi *m = r->m;
    double t0 = MPI_Wtime(), waited = 0;
    for (int spin = 0;; spin++) {
        /* AXLE_MPI_TIMEOUT: a wait longer than that is a failure (ranks
         * that no longer make the same transfers would wait forever).
         * The clock is read often: with more ranks than cores each yield
         * below may give the core away for a whole time slice, and the
         * others wait at the agreement only twice this long. */
        if ((spin & 15) == 0) {
            waited = MPI_Wtime() - t0;
            if (m->timeout > 0 && waited > m->timeout)
                return mx_fail(m, AX_ERR_BACKEND, "axle mpi: a transfer waited more than %g s (AXLE_MPI_TIMEOUT) for "
                               "another rank", m->timeout);
        }
        /* (request by request: a finished one becomes MPI_REQUEST_NULL) */
        bool done = true;
        for (int i = 0; i < n; i++) {
            if (req[i] == MPI_REQUEST_NULL) continue;
            int f = 0;
            MPI_Status st;
            int rc = MPI_Test(&req[i], &f, &st);
            if (rc != MPI_SUCCESS) return mpi_failed(r, rc, "a transfer");

            if (!f) done = false;
        }
        if (done) return 0;
        /* a failure notice: the receive posted for it has matched */
        int flag = 0;
        MPI_Status st;
        if (m->errreq != MPI_REQUEST_NULL) MPI_Test(&m->errreq, &flag, &st);
        if (flag && notice_epoch(m->errbuf) != (m->epoch & 0xFFFFFF)) {
            /* a notice of an earlier failure, sent on a communicator
             * freed since, whose context id MPI has given to this one
             * (MPICH reuses them): the ranks agreed on that failure
             * long ago.  Ignored; the receive is posted again. */
            cm_listen(m);
            flag = 0;
        }
        if (flag) {
            /* another rank failed: it told every rank; this one stops
             * waiting and goes to the agreement with its message */
            m->errbuf[sizeof m->errbuf - 1] = 0;
            int code = (unsigned char)m->errbuf[0];
            r->failed = true;   /* (no notice of its own: the failing rank sent them all) */
            mx_fail(m, (ax_status)(code ? code : AX_ERR_BACKEND), "%s", m->errbuf + 4);
            return -1;
        }
        if (m->trace && spin == 2000000) {
            int f2 = 0;
            MPI_Status s2;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, m->work, &f2, &s2);
            int cnt = 0;
            if (f2) MPI_Get_count(&s2, MPI_BYTE, &cnt);
            fprintf(stderr, "axle: mpi trace: rank %d waits; pending message: %s from %d tag %d, %d B\n", m->me,
                    f2 ? "yes" : "none", f2 ? s2.MPI_SOURCE : -1, f2 ? s2.MPI_TAG : -1, cnt);
        }
        /* ranks may outnumber cores (tests): let the one computing run;
         * after a second, sleep a millisecond between tests (another rank
         * computing that long may want this core) */
        if (waited > 1.0) nanosleep(&(struct timespec){0, 1000000}, NULL);
        else if (spin > 32) sched_yield();
    }
}

void cm_notify(MRun *r)
{
    ax_mpi *m = r->m;
    if (r->failed || m->np == 1) return;
    r->failed = true;
    ax_ctx *cx = m->cx;
    char **ns = ax__realloc(m->sent, sizeof *ns * (size_t)(m->nsent + 1));
    if (!ns) return;   /* the others learn of it at the agreement */
    m->sent = ns;
    size_t len = strlen(cx->msg) + 64;
    if (len > sizeof m->errbuf - 8) len = sizeof m->errbuf - 8;
    char *b = ax__malloc(len + 4);
    if (!b) return;
    memset(b, 0, 4);
    b[0] = (char)(cx->status ? cx->status : AX_ERR_BACKEND);
    for (int i = 0; i < 3; i++) b[1 + i] = (char)(m->epoch >> (8 * i) & 0xFF);
    int k = snprintf(b + 4, len, "%s (on rank %d)", cx->msg[0] ? cx->msg : "failed", m->me);
    m->sent[m->nsent++] = b;   /* kept until ax_mpi_free: the sends may be pending */
    for (int q = 0; q < m->np; q++) {
        if (q == m->me) continue;
        MPI_Request rq;
        if (MPI_Isend(b, k + 4, MPI_CHAR, q, TAG_ERR, m->work, &rq) == MPI_SUCCESS) MPI_Request_free(&rq);
    }
}

/* A fresh exchange communicator after a failure (collective on every
 * rank: all have agreed that the call failed).  It is made from ctl, not
 * from the caller's communicator, so that no call of the library runs
 * under the caller's error handler (which may abort the job); and without
 * blocking, as every wait on ctl (a rank that gave up on the agreement
 * never comes). */
static void renew(ax_mpi *m)
{
    if (m->errreq != MPI_REQUEST_NULL) {
        MPI_Cancel(&m->errreq);
        MPI_Wait(&m->errreq, MPI_STATUS_IGNORE);
    }
    Pending *a = m->agree;
    MPI_Request rq;
    a->dup = MPI_COMM_NULL;
    if (cm_wait_ctl(m, MPI_Comm_idup(m->ctl, &a->dup, &rq), &rq, "the renewal of the exchange communicator")) {
        cm_listen(m);   /* (the old one then serves on, for nothing: the context is broken) */
        return;
    }
    MPI_Comm w = a->dup;
    MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
    /* the old one may hold transfers that never finish: let it go */
    MPI_Comm_free(&m->work);
    if (m->rev != MPI_COMM_NULL) MPI_Comm_free(&m->rev);
    m->work = w;
    m->rev = MPI_COMM_NULL;
    m->tag = 0;
    m->epoch++;
    cm_listen(m);
}

void cm_listen(ax_mpi *m)
{
    /* (a posted receive rather than MPI_Iprobe(MPI_ANY_SOURCE) in the
     * waits: MPICH 4.0 over UCX was seen to leave a posted receive
     * unmatched after such probes) */
    m->errreq = MPI_REQUEST_NULL;
    memset(m->errbuf, 0, sizeof m->errbuf);
    if (m->np > 1) MPI_Irecv(m->errbuf, (int)sizeof m->errbuf - 1, MPI_CHAR, MPI_ANY_SOURCE, TAG_ERR, m->work, &m->errreq);
}

/* ------------------------------------------------------------ agreements */

/* Memory that a collective which never finished may still write into:
 * one on ctl that timed out because some rank never joined it (an
 * agreement, what follows it, ax_mpi_new's duplicate).  MPI keeps the
 * request, and completes it if the missing ranks join it after all, even
 * after the context is freed, so the memory must live as long as the
 * process.  It stays reachable from here (a leak checker does not count
 * it): a few KiB per context whose ranks fell out of step, an error that
 * its call reported. */
typedef struct Grave {
    struct Grave *next;
    void *p;
} Grave;
static Grave *graveyard;

void cm_bury(void *p)
{
    if (!p) return;
    Grave *g = ax__malloc(sizeof *g);
    if (!g) return;   /* (then p leaks, rather than be freed under MPI) */
    g->p = p;
    Grave *h = __atomic_load_n(&graveyard, __ATOMIC_RELAXED);
    do g->next = h;
    while (!__atomic_compare_exchange_n(&graveyard, &h, g, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

int cm_wait_limit(double limit, MPI_Request *rq)
{
    double t0 = MPI_Wtime(), waited = 0;
    for (int spin = 0;; spin++) {
        int f = 0, e = MPI_Test(rq, &f, MPI_STATUS_IGNORE);
        if (e != MPI_SUCCESS) return e;
        if (f) return 0;
        if ((spin & 15) == 0) {   /* (often: see cm_wait) */
            waited = MPI_Wtime() - t0;
            if (limit > 0 && waited > limit) return -1;
        }
        /* A rank may wait here a long time: a call's agreement waits for
         * every rank to reach the call, and another may still be reading
         * its input or computing.  After a second it sleeps a millisecond
         * between tests (a millisecond late at most, against a core spun
         * for minutes); before, it yields to whatever shares the core
         * (tests run more ranks than cores). */
        if (waited > 1.0) nanosleep(&(struct timespec){0, 1000000}, NULL);
        else if (spin > 32) sched_yield();
    }
}

int cm_wait_ctl(ax_mpi *m, int e, MPI_Request *rq, const char *step)
{
    /* (twice a transfer's limit: a rank whose transfer timed out comes to
     * the agreement then, and finds the others still there) */
    if (e == MPI_SUCCESS) e = cm_wait_limit(2 * m->timeout, rq);
    if (e == 0) return 0;
    if (e == -1) {
        snprintf(m->why, sizeof m->why, "this rank waited more than %g s (twice AXLE_MPI_TIMEOUT) for the other ranks "
                 "in %s: some rank makes other collective calls than this one, or has stopped", 2 * m->timeout, step);
    } else {
        char s[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(e, s, &len);
        snprintf(m->why, sizeof m->why, "%s failed in MPI: %s", step, s);
    }
    /* The ranks are out of step now: the collective may still be joined
     * later, by a call it was not meant for.  None of this context's
     * collective calls can be trusted any more; its buffers go to the
     * graveyard, where MPI may still write into them. */
    m->broken = true;
    cm_bury(m->agree);
    m->agree = NULL;
    return -1;
}

/* The collective calls, numbered for the agreement (ranks in different
 * calls are told which). */
static const char *const calls[] = {"ax_mpi_new", "ax_mpi_from_block", "ax_mpi_scatter", "ax_mpi_gather",
                                    "ax_mpi_compile", "ax_mpi_program_run"};
enum { NCALLS = (int)(sizeof calls / sizeof *calls) };

static uint64_t call_id(const char *what)
{
    for (int i = 0; i < NCALLS; i++)
        if (!strcmp(calls[i], what)) return (uint64_t)i + 1;
    return (uint64_t)NCALLS + 1;
}

/* A message being built: appends, truncated at the buffer's end. */
typedef struct Sb {
    char *b;
    size_t cap, n;
} Sb;

static void sb_put(Sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_put(Sb *s, const char *fmt, ...)
{
    if (s->n + 1 >= s->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s->b + s->n, s->cap - s->n, fmt, ap);
    va_end(ap);
    if (k > 0) s->n = s->n + (size_t)k < s->cap - 1 ? s->n + (size_t)k : s->cap - 1;
}

/* "rank 3" or "ranks 0, 2-4": the ranks q whose val[q] is v. */
static void put_ranks(Sb *s, const uint64_t *val, int np, uint64_t v)
{
    int count = 0;
    for (int q = 0; q < np; q++) count += val[q] == v;
    sb_put(s, count == 1 ? "rank" : "ranks");
    const char *sep = " ";
    for (int q = 0; q < np; q++) {
        if (val[q] != v) continue;
        int r = q;
        while (r + 1 < np && val[r + 1] == v) r++;
        if (r > q) sb_put(s, "%s%d-%d", sep, q, r);
        else sb_put(s, "%s%d", sep, q);
        sep = ", ";
        q = r;
    }
}

/* Which rank gave what (every rank's v, and the text that shows it; txt
 * NULL: a hash, shown as "one", "another"), appended to s on every rank
 * alike: "i32 on ranks 0, 2; f32 on rank 1".  Collective on ctl (every
 * rank knows already that the values differ): 0, or -1 when the context
 * broke. */
enum { TXT = 56 };
typedef struct Rec {
    uint64_t v;
    char txt[TXT];
} Rec;

static int who_gave_what(ax_mpi *m, uint64_t v, const char *txt, Sb *s)
{
    int np = m->np;
    Pending *a = m->agree;
    /* every rank's record, and this rank's own after them (the buffers
     * of a collective that may be left pending: on the heap) */
    Rec *all = ax__calloc((size_t)np + 1, sizeof *all);
    uint64_t *val = ax__malloc(sizeof *val * (size_t)np);
    MPI_Request rq;
    /* (every rank learns first whether every rank has the memory: the
     * gather is made by all or by none) */
    a->have = all && val;
    if (cm_wait_ctl(m, MPI_Iallreduce(&a->have, &a->every, 1, MPI_INT, MPI_MIN, m->ctl, &rq), &rq,
                    "an agreement's details")) {
        free(all);
        free(val);
        return -1;
    }
    if (!a->every) {
        sb_put(s, "they differ (out of memory for the details)");
        free(all);
        free(val);
        return 0;
    }
    Rec *mine = &all[np];
    mine->v = v;
    if (txt) snprintf(mine->txt, sizeof mine->txt, "%s", txt);
    if (cm_wait_ctl(m, MPI_Iallgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, m->ctl, &rq),
                    &rq, "an agreement's details")) {
        cm_bury(all);
        free(val);
        return -1;
    }
    for (int q = 0; q < np; q++) val[q] = all[q].v;
    int groups = 0;
    for (int q = 0; q < np; q++) {
        bool first = true;
        for (int p = 0; p < q && first; p++) first = val[p] != val[q];
        if (!first) continue;
        if (groups == 8) {
            sb_put(s, "; other values on other ranks");
            break;
        }
        all[q].txt[TXT - 1] = 0;
        if (txt) sb_put(s, "%s%s on ", groups ? "; " : "", all[q].txt);
        else sb_put(s, "%s%s on ", groups ? "; " : "", groups ? "another" : "one");
        put_ranks(s, val, np, val[q]);
        groups++;
    }
    free(all);
    free(val);
    return 0;
}

/* An item's name: "extent 1 of parameter 0". */
static void put_name(Sb *s, const AgItem *it)
{
    sb_put(s, "%s", it->name);
    if (it->dim >= 0) sb_put(s, " %d", it->dim);
    if (it->of) sb_put(s, " of %s", it->of);
    if (it->of && it->k >= 0) sb_put(s, " %d", it->k);
}

/* An item's value as text (NULL: a hash, no text). */
static const char *item_text(const AgItem *it, char *b, size_t n)
{
    switch (it->show) {
    case AG_INT: snprintf(b, n, "%lld", (long long)(int64_t)it->v); return b;
    case AG_ROOT:
        if ((int64_t)it->v < 0) snprintf(b, n, "every rank (a root < 0)");
        else snprintf(b, n, "%lld", (long long)(int64_t)it->v);
        return b;
    case AG_BOOL: return it->v ? "true" : "false";
    case AG_DIST: return it->v ? "replicated" : "distributed";
    case AG_TYPE:
        if (!it->type) return "unknown";
        ty_str(it->type, b, n);
        return b;
    default: return NULL;
    }
}

/* The first item whose value differs between ranks (some does; the
 * ranks have as many): the values' maxima and (complemented) minima
 * reduced over the ranks, a chunk of items at a time.  Its index, n when
 * none differs after all, or -1 when the context broke. */
static int first_differing(ax_mpi *m, const AgItem *it, int n)
{
    Pending *a = m->agree;
    for (int lo = 0; lo < n; lo += AGREE_CHUNK) {
        int k = n - lo < AGREE_CHUNK ? n - lo : AGREE_CHUNK;
        for (int i = 0; i < k; i++) {
            a->cv[i] = it[lo + i].v;
            a->cv[k + i] = ~it[lo + i].v;
        }
        MPI_Request rq;
        if (cm_wait_ctl(m, MPI_Iallreduce(a->cv, a->cw, 2 * k, MPI_UINT64_T, MPI_MAX, m->ctl, &rq), &rq,
                        "an agreement's details"))
            return -1;
        for (int i = 0; i < k; i++)
            if (a->cw[i] != ~a->cw[k + i]) return lo + i;
    }
    return n;
}

int cm_agree_on(ax_mpi *m, bool ok, uint64_t hash, const AgItem *it, int n, const char *what)
{
    Sb s = {m->err, sizeof m->err, 0};
    m->err[0] = 0;
    uint64_t call = call_id(what), ih = 1;
    for (int i = 0; i < n; i++) ih = hash_combine(ih, it[i].v);
    Pending *a = m->agree;
    if (!m->broken) {
        uint64_t v[AGREE_WORDS] = {ok ? 0 : (uint64_t)(m->np - m->me), call, ~call, hash, ~hash,
                                   (uint64_t)n, ~(uint64_t)n, ih, ~ih};
        memcpy(a->v, v, sizeof v);
        /* A non-blocking reduction, waited for at most twice m->timeout: a
         * rank that never makes this call (it makes other calls, or has
         * stopped) would hold the others here for ever. */
        MPI_Request rq;
        cm_wait_ctl(m, MPI_Iallreduce(a->v, a->w, AGREE_WORDS, MPI_UINT64_T, MPI_MAX, m->ctl, &rq), &rq,
                    "the agreement at the start or end of a collective call");
    }
    int bad = 0;
    if (m->broken) {
        bad = -1;
    } else if (a->w[1] != call || ~a->w[2] != call) {
        /* (no prefix: the ranks are in different calls, the message is
         * the same on every rank) */
        sb_put(&s, "axle mpi: the ranks are in different collective calls: ");
        bad = who_gave_what(m, call, call <= NCALLS ? calls[call - 1] : "another call", &s);
        sb_put(&s, " (every rank must make the same collective calls, in the same order)");
        m->status = AX_ERR_ARG;
    } else if (a->w[0] != 0) {
        int first = m->np - (int)a->w[0];
        memset(&a->fail, 0, sizeof a->fail);
        if (m->me == first) {
            ax_ctx *cx = m->cx;
            /* (no local context: ax_mpi_new could not make it) */
            a->fail.st = !cx ? AX_ERR_NOMEM
                       : cx->status ? (int32_t)cx->status : cx->last_status ? (int32_t)cx->last_status : AX_ERR_BACKEND;
            const char *text = !cx ? "ax_mpi_new: out of memory" : cx->msg[0] ? cx->msg : "failed";
            /* a message that came from another rank names it already */
            if (strstr(text, "(on rank ")) snprintf(a->fail.msg, sizeof a->fail.msg, "%s", text);
            else snprintf(a->fail.msg, sizeof a->fail.msg, "%s (on rank %d)", text, m->me);
        }
        MPI_Request rq;
        if (cm_wait_ctl(m, MPI_Ibcast(&a->fail, (int)sizeof a->fail, MPI_BYTE, first, m->ctl, &rq), &rq,
                        "an agreement's details")) {
            bad = -1;
        } else {
            memcpy(m->err, a->fail.msg, sizeof m->err);
            m->err[sizeof m->err - 1] = 0;
            m->status = (ax_status)a->fail.st;
        }
    } else if (a->w[3] != hash || ~a->w[4] != hash) {
        sb_put(&s, "%s: the ranks %s different programs (every rank must build the same computation, with inputs "
               "of the same types and ranks)", what, !strcmp(what, "ax_mpi_program_run") ? "run" : "built");
        m->status = AX_ERR_ARG;
    } else if (a->w[5] != (uint64_t)n || ~a->w[6] != (uint64_t)n) {
        sb_put(&s, "%s: the ranks' calls differ in their number of arguments (every rank must make the same call)",
               what);
        m->status = AX_ERR_ARG;
    } else if (a->w[7] != ih || ~a->w[8] != ih) {
        int i = first_differing(m, it, n);
        sb_put(&s, "%s: the ranks disagree on ", what);
        if (i < 0) {
            bad = -1;
        } else if (i == n) {
            sb_put(&s, "their arguments");
        } else {
            char t[TXT];
            put_name(&s, &it[i]);
            sb_put(&s, ": ");
            bad = who_gave_what(m, it[i].v, item_text(&it[i], t, sizeof t), &s);
        }
        sb_put(&s, " (every rank must give the same)");
        m->status = AX_ERR_ARG;
    } else {
        m->status = AX_OK;
        return 0;
    }
    /* (every rank took the same branch: the exchange communicator, which
     * may hold transfers that never finish, is renewed by all) */
    if (!bad) renew(m);
    if (m->broken) {
        s.n = 0;
        m->err[0] = 0;
        sb_put(&s, "%s: the context cannot be used any more: %s", what, m->why);
        m->status = AX_ERR_BACKEND;
    }
    /* the local context reports the agreed failure, and is ready again */
    if (m->cx) {
        ctx_error_force(m->cx, m->status, "%s", m->err);
        ctx_settle(m->cx);
    }
    return -1;
}

int cm_agree(ax_mpi *m, bool ok, uint64_t hash, const char *what) { return cm_agree_on(m, ok, hash, NULL, 0, what); }

AgItem *cm_items_array(ax_mpi *m, AgItem *it, const Dist *d, const ax_array *local, const char *of, int k)
{
    uint64_t th = 0, bh = 0;
    if (local) {
        char t[256];
        ty_str(local->elt, t, sizeof t);
        th = hash_bytes(t, strlen(t));
    }
    if (d && !d->repl && d->off) bh = hash_bytes(d->off, sizeof *d->off * (size_t)(m->np + 1));
    *it++ = (AgItem){th, AG_TYPE, "the element type", -1, of, k, local ? local->elt : NULL};
    *it++ = (AgItem){d ? (uint64_t)d->rank : 0, AG_INT, "the number of dimensions", -1, of, k, NULL};
    *it++ = (AgItem){d ? d->repl : 0, AG_DIST, "the distribution", -1, of, k, NULL};
    for (int i = 0; i < AX_MAX_RANK; i++)
        *it++ = (AgItem){d && i < d->rank ? (uint64_t)d->shape[i] : 0, AG_INT, "extent", i, of, k, NULL};
    *it++ = (AgItem){bh, AG_HASH, "the row blocks (which rows each rank holds)", -1, of, k, NULL};
    return it;
}

/* ------------------------------------------------------------ statistics */

static void count_p2p(MRun *r, int64_t sent, int64_t recv, int msent, int mrecv)
{
    if (!r->cur || r->m->np == 1) return;
    r->cur->bytes_sent += sent;
    r->cur->bytes_recv += recv;
    r->cur->msgs_sent += msent;
    r->cur->msgs_recv += mrecv;
}

static void count_coll(MRun *r, int64_t sent, int64_t recv)
{
    if (!r->cur || r->m->np == 1) return;
    r->cur->bytes_sent += sent;
    r->cur->bytes_recv += recv;
    r->cur->coll++;
}

/* ------------------------------------------------------------ moving elements */

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

static void copy_elems(ax_array *dst, int64_t dpos, const ax_array *src, int64_t spos, int64_t n)
{
    for (int c = 0; c < dst->ncomp; c++) {
        size_t sz = mx_leaf_size(dst->elt, c);
        memcpy((char *)dst->buf[c] + (size_t)dpos * sz, (const char *)src->buf[c] + (size_t)spos * sz, (size_t)n * sz);
    }
}

/* dst[i] = src[pos[i] - base] for the i with pos[i] >= 0 and local[i]
 * (local NULL: every i), component by component, typed (an element at a
 * time would cost a call per element and component). */
static void gather_elems(ax_array *dst, const ax_array *src, const int64_t *pos, int64_t base, int64_t n,
                         const unsigned char *local)
{
    for (int c = 0; c < dst->ncomp; c++) {
        size_t sz = mx_leaf_size(dst->elt, c);
        const char *s = src->buf[c];
        char *d = dst->buf[c];
#define GATHER(T)                                                                                       \
    for (int64_t i = 0; i < n; i++)                                                                     \
        if (pos[i] >= 0 && (!local || local[i])) ((T *)(void *)d)[i] = ((const T *)(const void *)s)[pos[i] - base];
        switch (sz) {
        case 1: GATHER(uint8_t) break;
        case 2: GATHER(uint16_t) break;
        case 4: GATHER(uint32_t) break;
        case 8: GATHER(uint64_t) break;
        default:
            for (int64_t i = 0; i < n; i++)
                if (pos[i] >= 0 && (!local || local[i])) memcpy(d + (size_t)i * sz, s + (size_t)(pos[i] - base) * sz, sz);
        }
#undef GATHER
    }
}

static size_t pack_elems(char *b, const ax_array *src, int64_t spos, int64_t n)
{
    size_t k = 0;
    for (int c = 0; c < src->ncomp; c++) {
        size_t sz = mx_leaf_size(src->elt, c) * (size_t)n;
        memcpy(b + k, (const char *)src->buf[c] + (size_t)spos * mx_leaf_size(src->elt, c), sz);
        k += sz;
    }
    return k;
}

static size_t unpack_elems(ax_array *dst, int64_t dpos, const char *b, int64_t n)
{
    size_t k = 0;
    for (int c = 0; c < dst->ncomp; c++) {
        size_t sz = mx_leaf_size(dst->elt, c);
        memcpy((char *)dst->buf[c] + (size_t)dpos * sz, b + k, sz * (size_t)n);
        k += sz * (size_t)n;
    }
    return k;
}

/* The part of [lo, hi) held by some rank, piece by piece: calls f for
 * each maximal piece held by one rank. */
typedef struct Piece {
    int owner;
    int64_t lo, hi;
} Piece;

static int next_piece(const Dist *d, int np, int64_t rs, int64_t lo, int64_t hi, Piece *p)
{
    if (lo >= hi) return 0;
    int64_t row = rs > 0 ? lo / rs : 0;
    int o = dist_owner(d, np, row);
    int64_t end = d->off[o + 1] * rs;
    p->owner = o;
    p->lo = lo;
    p->hi = end < hi ? end : hi;
    return 1;
}

int cm_move(MRun *r, const Dist *src, ax_array *local, WantFn want, void *arg, ax_array *dst, int64_t dstoff)
{
    ax_mpi *m = r->m;
    int np = m->np, me = m->me, tag = cm_next_tag(m);
    int64_t rs = dist_rowsize(src), size = dist_size(src);
    size_t es = mx_elt_size(local->elt);
    int64_t mylo = src->repl ? 0 : src->off[me] * rs, myhi = src->repl ? size : src->off[me + 1] * rs;
    Ranges w = {0};
    char **sbuf = ax__calloc((size_t)np, sizeof *sbuf), **rbuf = ax__calloc((size_t)np, sizeof *rbuf);
    int64_t *sn = ax__calloc((size_t)np, sizeof *sn), *rn = ax__calloc((size_t)np, sizeof *rn);
    MPI_Request *rq = ax__malloc(sizeof *rq * (size_t)(2 * np + 1));
    int nrq = 0, rc = 0;
    if (!sbuf || !rbuf || !sn || !rn || !rq) {
        rc = nomem(r);
        goto out;
    }
    /* what this rank sends: the parts of every other rank's wants it holds */
    for (int q = 0; q < np && !src->repl; q++) {
        if (q == me) continue;
        w.n = 0;
        if (want(arg, q, &w) < 0) {
            rc = nomem(r);
            goto out;
        }
        int64_t n = 0;
        for (int k = 0; k < w.n; k++) {
            int64_t lo = w.v[k].lo > mylo ? w.v[k].lo : mylo, hi = w.v[k].hi < myhi ? w.v[k].hi : myhi;
            if (hi > lo) n += hi - lo;
        }
        if (n == 0) continue;
        if (!fits_int(n * (int64_t)es)) {
            rc = mx_fail(m, AX_ERR_NOMEM, "axle mpi: a transfer of %" PRId64 " bytes between two ranks (at most 2 GiB)",
                         n * (int64_t)es);
            goto out;
        }
        if (!(sbuf[q] = ax__malloc((size_t)n * es + 1))) {
            rc = nomem(r);
            goto out;
        }
        size_t k0 = 0;
        for (int k = 0; k < w.n; k++) {
            int64_t lo = w.v[k].lo > mylo ? w.v[k].lo : mylo, hi = w.v[k].hi < myhi ? w.v[k].hi : myhi;
            if (hi > lo) k0 += pack_elems(sbuf[q] + k0, local, lo - mylo, hi - lo);
        }
        sn[q] = (int64_t)k0;
    }
    /* what this rank receives: its wants, piece by owner; its own copied */
    w.n = 0;
    if (want(arg, me, &w) < 0) {
        rc = nomem(r);
        goto out;
    }
    int64_t pos = dstoff;
    for (int k = 0; k < w.n; k++) {
        if (w.v[k].lo < 0 || w.v[k].hi > size) {
            rc = mx_fail(m, AX_ERR_BACKEND, "axle mpi: a transfer asks for elements %" PRId64 "..%" PRId64
                         " of %" PRId64, w.v[k].lo, w.v[k].hi, size);
            goto out;
        }
        if (src->repl) {
            copy_elems(dst, pos, local, w.v[k].lo, w.v[k].hi - w.v[k].lo);
            pos += w.v[k].hi - w.v[k].lo;
            continue;
        }
        Piece p;
        for (int64_t lo = w.v[k].lo; next_piece(src, np, rs, lo, w.v[k].hi, &p); lo = p.hi) {
            if (p.owner == me) copy_elems(dst, pos, local, p.lo - mylo, p.hi - p.lo);
            else rn[p.owner] += (p.hi - p.lo) * (int64_t)es;
            pos += p.hi - p.lo;
        }
    }
    int msent = 0, mrecv = 0;
    int64_t bsent = 0, brecv = 0;
    for (int q = 0; q < np; q++) {
        if (rn[q] == 0) continue;
        if (!fits_int(rn[q]) || !(rbuf[q] = ax__malloc((size_t)rn[q]))) {
            rc = fits_int(rn[q]) ? nomem(r) : mx_fail(m, AX_ERR_NOMEM, "axle mpi: a transfer of more than 2 GiB");
            goto out;
        }
        int e = MPI_Irecv(rbuf[q], (int)rn[q], MPI_BYTE, q, tag, m->work, &rq[nrq]);
        if (e != MPI_SUCCESS) {
            rc = mpi_failed(r, e, "MPI_Irecv");
            goto out;
        }
        nrq++;
        mrecv++;
        brecv += rn[q];
    }
    for (int q = 0; q < np; q++) {
        if (sn[q] == 0) continue;
        int e = MPI_Isend(sbuf[q], (int)sn[q], MPI_BYTE, q, tag, m->work, &rq[nrq]);
        if (e != MPI_SUCCESS) {
            rc = mpi_failed(r, e, "MPI_Isend");
            goto out;
        }
        nrq++;
        msent++;
        bsent += sn[q];
    }
    count_p2p(r, bsent, brecv, msent, mrecv);
    if (m->trace)
        for (int q = 0; q < np; q++)
            if (sn[q] || rn[q])
                fprintf(stderr, "axle: mpi trace: rank %d tag %d: to %d %" PRId64 " B, from %d %" PRId64 " B\n", me, tag, q,
                        sn[q], q, rn[q]);
    if (nrq && (rc = cm_wait(r, rq, nrq))) goto out;
    nrq = 0;
    /* the pieces from other ranks, in the order of the wants */
    pos = dstoff;
    size_t *cur = (size_t *)sn;   /* reused: read cursor per owner */
    memset(cur, 0, sizeof *cur * (size_t)np);
    for (int k = 0; k < w.n && !src->repl; k++) {
        Piece p;
        for (int64_t lo = w.v[k].lo; next_piece(src, np, rs, lo, w.v[k].hi, &p); lo = p.hi) {
            if (p.owner != me) cur[p.owner] += unpack_elems(dst, pos, rbuf[p.owner] + cur[p.owner], p.hi - p.lo);
            pos += p.hi - p.lo;
        }
    }
out:
    /* requests still pending belong to a failed call: their buffers stay
     * (its communicator is renewed at the agreement) */
    if (sbuf && rbuf)
        for (int q = 0; q < np; q++) {
            drop(m, sbuf[q], nrq > 0);
            drop(m, rbuf[q], nrq > 0);
        }
    if (nrq > 0) cm_keep_array(m, dst);
    free(sbuf);
    free(rbuf);
    free(sn);
    free(rn);
    drop(m, rq, nrq > 0);
    free(w.v);
    return rc;
}

int cm_allgather(MRun *r, const Dist *src, ax_array *local, ax_array *full)
{
    ax_mpi *m = r->m;
    int np = m->np;
    if (src->repl) {
        copy_elems(full, 0, local, 0, local->size);
        return 0;
    }
    int64_t rs = dist_rowsize(src);
    int *cnt = ax__malloc(sizeof *cnt * (size_t)np), *dsp = ax__malloc(sizeof *dsp * (size_t)np);
    if (!cnt || !dsp) {
        free(cnt);
        free(dsp);
        return nomem(r);
    }
    int rc = 0;
    bool pending = false;
    for (int q = 0; q < np && rc == 0; q++) {
        int64_t c = (src->off[q + 1] - src->off[q]) * rs, d = src->off[q] * rs;
        if (!fits_int(c) || !fits_int(d))
            rc = mx_fail(m, AX_ERR_NOMEM, "axle mpi: gathering an array of %" PRId64 " elements (at most 2^31 per rank)",
                         dist_size(src));
        cnt[q] = (int)c;
        dsp[q] = (int)d;
    }
    int64_t mine = (int64_t)cnt[m->me] * (int64_t)mx_elt_size(local->elt);
    for (int c = 0; c < local->ncomp && rc == 0; c++) {
        MPI_Datatype t;
        MPI_Type_contiguous((int)mx_leaf_size(local->elt, c), MPI_BYTE, &t);
        MPI_Type_commit(&t);
        MPI_Request rq;
        int e = MPI_Iallgatherv(local->buf[c], cnt[m->me], t, full->buf[c], cnt, dsp, t, m->work, &rq);
        if (e != MPI_SUCCESS) rc = mpi_failed(r, e, "MPI_Iallgatherv");
        else if ((rc = cm_wait(r, &rq, 1))) pending = true;
        MPI_Type_free(&t);
        count_coll(r, mine / (local->ncomp ? local->ncomp : 1) * (np - 1),
                   ((int64_t)full->size - cnt[m->me]) * (int64_t)mx_leaf_size(local->elt, c));
    }
    if (pending) {
        cm_keep_array(m, full);
        cm_keep_array(m, local);
    }
    drop(m, cnt, pending);
    drop(m, dsp, pending);
    return rc;
}

int cm_allgather_i64(MRun *r, int64_t mine, int64_t *all)
{
    ax_mpi *m = r->m;
    MPI_Request rq;
    int64_t *in = ax__malloc(sizeof *in), *res = ax__malloc(sizeof *res * (size_t)m->np);
    if (!in || !res) {
        free(in);
        free(res);
        return nomem(r);
    }
    *in = mine;
    int e = MPI_Iallgather(in, 1, MPI_INT64_T, res, 1, MPI_INT64_T, m->work, &rq);
    if (e != MPI_SUCCESS) {
        free(in);
        free(res);
        return mpi_failed(r, e, "MPI_Iallgather");
    }
    count_coll(r, 8 * (int64_t)(m->np - 1), 8 * (int64_t)(m->np - 1));
    int rc = cm_wait(r, &rq, 1);
    if (rc == 0) memcpy(all, res, sizeof *res * (size_t)m->np);
    drop(m, in, rc != 0);
    drop(m, res, rc != 0);
    return rc;
}

/* ------------------------------------------------------------ request / reply */

typedef struct Req {
    int64_t pos, i;
} Req;

static int req_cmp(const void *a, const void *b)
{
    const Req *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* int counts and displacements of an all-to-all from int64 counts; false
 * when one passes INT_MAX. */
static bool int_counts(const int64_t *c, int np, int64_t scale, int *ci, int *di)
{
    int64_t d = 0;
    for (int q = 0; q < np; q++) {
        if (!fits_int(c[q] * scale) || !fits_int(d)) return false;
        ci[q] = (int)(c[q] * scale);
        di[q] = (int)d;
        d += c[q] * scale;
    }
    return fits_int(d);
}

int cm_fetch(MRun *r, const Dist *src, ax_array *local, const int64_t *pos, int64_t n, ax_array *dst)
{
    ax_mpi *m = r->m;
    int np = m->np, me = m->me;
    int64_t rs = dist_rowsize(src);
    size_t es = mx_elt_size(local->elt);
    if (src->repl || np == 1) {
        gather_elems(dst, local, pos, 0, n, NULL);
        return 0;
    }
    int64_t mylo = src->off[me] * rs;
    Req *rq = ax__malloc(sizeof *rq * (size_t)(n + 1));
    int64_t *uniq = ax__malloc(sizeof *uniq * (size_t)(n + 1)), *slot = ax__malloc(sizeof *slot * (size_t)(n + 1));
    int64_t *cnt = ax__calloc((size_t)np, sizeof *cnt), *rcnt = ax__calloc((size_t)np, sizeof *rcnt);
    int *sc = ax__malloc(sizeof(int) * (size_t)np), *sd = ax__malloc(sizeof(int) * (size_t)np);
    int *rc_ = ax__malloc(sizeof(int) * (size_t)np), *rd = ax__malloc(sizeof(int) * (size_t)np);
    int64_t *asked = NULL;
    char *reply = NULL, *got = NULL;
    unsigned char *here = ax__malloc((size_t)n + 1);
    int rc = 0;
    bool pending = false;
    if (!rq || !uniq || !slot || !cnt || !rcnt || !sc || !sd || !rc_ || !rd || !here) {
        rc = nomem(r);
        goto out;
    }
    /* the local ones at once; the others sorted by position, which sorts
     * them by owner too (blocks are in rank order), each asked once */
    int64_t nr = 0, nu = 0, myhi = src->off[me + 1] * rs;
    for (int64_t i = 0; i < n; i++) {
        here[i] = pos[i] >= mylo && pos[i] < myhi;
        if (pos[i] >= 0 && !here[i]) rq[nr++] = (Req){pos[i], i};
    }
    gather_elems(dst, local, pos, mylo, n, here);
    qsort(rq, (size_t)nr, sizeof *rq, req_cmp);
    for (int64_t k = 0; k < nr; k++) {
        if (nu == 0 || uniq[nu - 1] != rq[k].pos) {
            uniq[nu++] = rq[k].pos;
            cnt[dist_owner(src, np, rs > 0 ? rq[k].pos / rs : 0)]++;
        }
        slot[k] = nu - 1;
    }
    /* how many each rank asks of each */
    MPI_Request q1;
    int e = MPI_Ialltoall(cnt, 1, MPI_INT64_T, rcnt, 1, MPI_INT64_T, m->work, &q1);
    if (e != MPI_SUCCESS || (rc = cm_wait(r, &q1, 1))) {
        if (e != MPI_SUCCESS) rc = mpi_failed(r, e, "MPI_Ialltoall");
        else pending = true;
        goto out;
    }
    count_coll(r, 8 * (int64_t)(np - 1), 8 * (int64_t)(np - 1));
    int64_t nask = 0;
    for (int q = 0; q < np; q++) nask += rcnt[q];
    if (!int_counts(cnt, np, 1, sc, sd) || !int_counts(rcnt, np, 1, rc_, rd)) {
        rc = mx_fail(m, AX_ERR_NOMEM, "axle mpi: a request of more than 2^31 elements");
        goto out;
    }
    if (!(asked = ax__malloc(sizeof *asked * (size_t)(nask + 1)))) {
        rc = nomem(r);
        goto out;
    }
    e = MPI_Ialltoallv(uniq, sc, sd, MPI_INT64_T, asked, rc_, rd, MPI_INT64_T, m->work, &q1);
    if (e != MPI_SUCCESS || (rc = cm_wait(r, &q1, 1))) {
        if (e != MPI_SUCCESS) rc = mpi_failed(r, e, "MPI_Ialltoallv");
        else pending = true;
        goto out;
    }
    count_coll(r, 8 * nu, 8 * nask);
    /* the replies: each element packed whole (every component) */
    if (!(reply = ax__malloc(es * (size_t)nask + 1)) || !(got = ax__malloc(es * (size_t)nu + 1))) {
        rc = nomem(r);
        goto out;
    }
    for (int64_t k = 0; k < nask; k++) {
        if (asked[k] < mylo || asked[k] >= src->off[me + 1] * rs) {
            rc = mx_fail(m, AX_ERR_BACKEND, "axle mpi: asked for element %" PRId64 ", which this rank does not hold",
                         asked[k]);
            goto out;
        }
        pack_elems(reply + (size_t)k * es, local, asked[k] - mylo, 1);
    }
    if (!int_counts(rcnt, np, (int64_t)es, rc_, rd) || !int_counts(cnt, np, (int64_t)es, sc, sd)) {
        rc = mx_fail(m, AX_ERR_NOMEM, "axle mpi: a reply of more than 2 GiB");
        goto out;
    }
    e = MPI_Ialltoallv(reply, rc_, rd, MPI_BYTE, got, sc, sd, MPI_BYTE, m->work, &q1);
    if (e != MPI_SUCCESS || (rc = cm_wait(r, &q1, 1))) {
        if (e != MPI_SUCCESS) rc = mpi_failed(r, e, "MPI_Ialltoallv");
        else pending = true;
        goto out;
    }
    count_coll(r, (int64_t)es * nask, (int64_t)es * nu);
    for (int64_t k = 0; k < nr; k++) unpack_elems(dst, rq[k].i, got + (size_t)slot[k] * es, 1);
out:
    free(rq);
    free(slot);
    free(here);
    drop(m, uniq, pending);
    drop(m, cnt, pending);
    drop(m, rcnt, pending);
    drop(m, sc, pending);
    drop(m, sd, pending);
    drop(m, rc_, pending);
    drop(m, rd, pending);
    drop(m, asked, pending);
    drop(m, reply, pending);
    drop(m, got, pending);
    return rc;
}

int cm_exchange(MRun *r, char *buf, const int64_t *cnt, size_t rec, char **out, int64_t *nout, int64_t *rcount)
{
    ax_mpi *m = r->m;
    int np = m->np;
    *out = NULL;
    *nout = 0;
    int64_t *rcnt = ax__calloc((size_t)np, sizeof *rcnt);
    int *sc = ax__malloc(sizeof(int) * (size_t)np), *sd = ax__malloc(sizeof(int) * (size_t)np);
    int *rc_ = ax__malloc(sizeof(int) * (size_t)np), *rd = ax__malloc(sizeof(int) * (size_t)np);
    int64_t *scnt = ax__malloc(sizeof *scnt * (size_t)np);
    int rc = 0;
    bool pending = false;
    if (!rcnt || !sc || !sd || !rc_ || !rd || !scnt) {
        rc = nomem(r);
        goto out;
    }
    memcpy(scnt, cnt, sizeof *scnt * (size_t)np);
    MPI_Request q1;
    int e = MPI_Ialltoall(scnt, 1, MPI_INT64_T, rcnt, 1, MPI_INT64_T, m->work, &q1);
    if (e != MPI_SUCCESS || (rc = cm_wait(r, &q1, 1))) {
        if (e != MPI_SUCCESS) rc = mpi_failed(r, e, "MPI_Ialltoall");
        else pending = true;
        goto out;
    }
    count_coll(r, 8 * (int64_t)(np - 1), 8 * (int64_t)(np - 1));
    int64_t tot = 0, sent = 0, recv = 0;
    for (int q = 0; q < np; q++) {
        tot += rcnt[q];
        if (q != m->me) {
            sent += cnt[q];
            recv += rcnt[q];
        }
    }
    if (!int_counts(cnt, np, (int64_t)rec, sc, sd) || !int_counts(rcnt, np, (int64_t)rec, rc_, rd)) {
        rc = mx_fail(m, AX_ERR_NOMEM, "axle mpi: an exchange of more than 2 GiB");
        goto out;
    }
    if (!(*out = ax__malloc(rec * (size_t)tot + 1))) {
        rc = nomem(r);
        goto out;
    }
    e = MPI_Ialltoallv(buf, sc, sd, MPI_BYTE, *out, rc_, rd, MPI_BYTE, m->work, &q1);
    if (e != MPI_SUCCESS || (rc = cm_wait(r, &q1, 1))) {
        if (e != MPI_SUCCESS) rc = mpi_failed(r, e, "MPI_Ialltoallv");
        else pending = true;
        goto out;
    }
    count_coll(r, sent * (int64_t)rec, recv * (int64_t)rec);
    *nout = tot;
    if (rcount) memcpy(rcount, rcnt, sizeof *rcnt * (size_t)np);
out:
    if (rc) {
        drop(m, *out, pending);
        *out = NULL;
    }
    drop(m, buf, pending);
    drop(m, rcnt, pending);
    drop(m, scnt, pending);
    drop(m, sc, pending);
    drop(m, sd, pending);
    drop(m, rc_, pending);
    drop(m, rd, pending);
    return rc;
}

/* ------------------------------------------------------------ reductions */

/* Unsigned integers combined by min or max go to MPI as the signed type
 * of their width with the top bit flipped (x ^ 2^(b-1) orders as signed
 * exactly as x does as unsigned): MPICH 4.0.2 (Debian 12's) compares
 * MPI_UINT8_T .. MPI_UINT64_T and MPI_UNSIGNED_LONG as signed under
 * MPI_MAX and MPI_MIN (the maximum of 5 and UINT64_MAX is 5 there). */
static bool flipped(ax_scalar s, Prim p)
{
    return (p == P_MIN || p == P_MAX) && s != AX_BOOL && s != AX_F32 && s != AX_F64 && !sc_is_signed(s);
}

static uint64_t top_bit(ax_scalar s)
{
    return (uint64_t)1 << (ax_scalar_size(s) * 8 - 1);
}

/* The MPI type of leaves of s combined by p (integers as unsigned where
 * only the bits matter: wrapping add and multiply; as signed under min and
 * max, unsigned ones flipped). */
static MPI_Datatype mpi_type(ax_scalar s, Prim p)
{
    bool sign = (p == P_MIN || p == P_MAX) && (sc_is_signed(s) || flipped(s, p));
    switch (s) {
    case AX_BOOL: case AX_I8: case AX_U8: return sign ? MPI_INT8_T : MPI_UINT8_T;
    case AX_I16: case AX_U16: return sign ? MPI_INT16_T : MPI_UINT16_T;
    case AX_I32: case AX_U32: return sign ? MPI_INT32_T : MPI_UINT32_T;
    case AX_I64: case AX_U64: return sign ? MPI_INT64_T : MPI_UINT64_T;
    case AX_F32: return MPI_FLOAT;
    case AX_F64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(Prim p)
{
    switch (p) {
    case P_ADD: return MPI_SUM;
    case P_MUL: return MPI_PROD;
    case P_MIN: return MPI_MIN;
    case P_MAX: return MPI_MAX;
    case P_BAND: return MPI_BAND;
    case P_BOR: return MPI_BOR;
    case P_BXOR: return MPI_BXOR;
    case P_AND: return MPI_LAND;
    case P_OR: return MPI_LOR;
    default: return MPI_OP_NULL;
    }
}

/* p's identity on s (what an empty block contributes): exact for every
 * operand (x + -0.0 is x, -0.0 included). */
static Scalar identity(Prim p, ax_scalar s)
{
    Scalar v;
    v.u = 0;
    bool f = s == AX_F32 || s == AX_F64;
    switch (p) {
    case P_ADD:
        if (s == AX_F32) v.f32 = -0.0f;
        else if (s == AX_F64) v.f64 = -0.0;
        break;
    case P_MUL:
        if (s == AX_F32) v.f32 = 1.0f;
        else if (s == AX_F64) v.f64 = 1.0;
        else v.u = 1;
        break;
    case P_MIN:
        v = sc_norm((Scalar){.u = sc_is_signed(s) ? (UINT64_MAX >> 1) >> (64 - sc_bits(s)) : UINT64_MAX}, s);
        break;
    case P_MAX:
        if (sc_is_signed(s)) v.i = -((int64_t)1 << (sc_bits(s) - 1));
        break;
    case P_BAND:
        v = sc_norm((Scalar){.u = UINT64_MAX}, s);
        break;
    case P_AND:
        v.b = true;
        break;
    default:
        break;
    }
    (void)f;
    return v;
}

/* The user operator's state reaches it through the datatype's name: MPI
 * hands a user function no argument of its own, and axle keeps no
 * global state.  r is cleared when the call fails (a pending reduction
 * may still run the function later: it then does nothing). */
typedef struct RedCtx {
    MRun *r;
    MOp *o;
    const Type *elt;
    int w;
    Scalar *tmp;                /* w leaves */
    bool swap;                  /* right to left (a scan from the right, over the
                                   reversed communicator): a . b is f(b, a) */
} RedCtx;

static void red_user(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int n = 0;
    void *p = NULL;
    MPI_Type_get_name(*dt, name, &n);
    if (sscanf(name, "axle-reduce:%p", &p) != 1 || !p) return;
    RedCtx *c = p;
    size_t rec = sizeof(Scalar) * (size_t)(c->w + 1);
    for (int i = 0; i < *len; i++) {
        Scalar *a = (Scalar *)((char *)in + rec * (size_t)i), *b = (Scalar *)((char *)inout + rec * (size_t)i);
        if (!a[0].u) continue;
        if (!b[0].u) {
            memcpy(b, a, rec);
            continue;
        }
        /* in o inout: the lower ranks' value on the left */
        const Scalar *x = c->swap ? b + 1 : a + 1, *y = c->swap ? a + 1 : b + 1;
        if (c->r && c->r->cx->status == AX_OK && mx_combine(c->r, c->o, c->elt, x, y, c->tmp) == 0)
            memcpy(b + 1, c->tmp, sizeof(Scalar) * (size_t)c->w);
    }
}

int cm_reduce(MRun *r, MOp *o, const Type *elt, const Scalar *mine, bool has, bool exscan, bool reverse,
              Scalar *out, bool *outhas)
{
    ax_mpi *m = r->m;
    int w = elt->width, rc = 0;
    MPI_Comm comm = m->work;
    if (reverse) {
        if (m->rev == MPI_COMM_NULL) {
            if (MPI_Comm_split(m->work, 0, m->np - 1 - m->me, &m->rev) != MPI_SUCCESS)
                return mx_fail(m, AX_ERR_BACKEND, "axle mpi: MPI_Comm_split failed");
            MPI_Comm_set_errhandler(m->rev, MPI_ERRORS_RETURN);
        }
        comm = m->rev;
    }
    int myr = reverse ? m->np - 1 - m->me : m->me;
    MPI_Request rq;
    int e;
    if (o->builtin) {
        ax_scalar s = ty_leaf(elt, 0);
        size_t sz = ax_scalar_size(s);
        char *ib = ax__malloc(sz * (size_t)w + 1), *ob = ax__calloc(1, sz * (size_t)w + 1);
        if (!ib || !ob) {
            free(ib);
            free(ob);
            return nomem(r);
        }
        uint64_t flip = flipped(s, o->redprim) ? top_bit(s) : 0;
        for (int l = 0; l < w; l++) {
            Scalar v = has ? mine[l] : identity(o->redprim, s);
            v.u ^= flip;
            sc_store(ib, s, l, v);
        }
        e = exscan ? MPI_Iexscan(ib, ob, w, mpi_type(s, o->redprim), mpi_op(o->redprim), comm, &rq)
                   : MPI_Iallreduce(ib, ob, w, mpi_type(s, o->redprim), mpi_op(o->redprim), comm, &rq);
        bool pending = false;
        if (e != MPI_SUCCESS) rc = mpi_failed(r, e, exscan ? "MPI_Iexscan" : "MPI_Iallreduce");
        else pending = (rc = cm_wait(r, &rq, 1)) != 0;
        count_coll(r, (int64_t)(sz * (size_t)w), (int64_t)(sz * (size_t)w));
        for (int l = 0; l < w && rc == 0; l++) {
            if (exscan && myr == 0) {
                out[l] = identity(o->redprim, s);
            } else {
                Scalar v = sc_load(ob, s, l);
                v.u ^= flip;
                out[l] = sc_norm(v, s);
            }
        }
        *outhas = !(exscan && myr == 0);
        drop(m, ib, pending);
        drop(m, ob, pending);
        return rc;
    }
    /* an operator of the program's own: MPI_Op_create with commute = 0,
     * so that MPI combines the ranks' values in rank order */
    size_t rec = sizeof(Scalar) * (size_t)(w + 1);
    Scalar *ib = ax__calloc(1, rec), *ob = ax__calloc(1, rec);
    RedCtx *c = ax__calloc(1, sizeof *c);
    Scalar *tmp = ax__calloc((size_t)w + 1, sizeof *tmp);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    if (!ib || !ob || !c || !tmp) {
        free(ib);
        free(ob);
        free(c);
        free(tmp);
        return nomem(r);
    }
    *c = (RedCtx){r, o, elt, w, tmp, reverse};
    ib[0].u = has;
    if (has && w > 0) memcpy(ib + 1, mine, sizeof(Scalar) * (size_t)w);
    char name[64];
    snprintf(name, sizeof name, "axle-reduce:%p", (void *)c);
    MPI_Type_contiguous((int)rec, MPI_BYTE, &t);
    MPI_Type_set_name(t, name);
    MPI_Type_commit(&t);
    MPI_Op_create(red_user, 0, &op);
    e = exscan ? MPI_Iexscan(ib, ob, 1, t, op, comm, &rq) : MPI_Iallreduce(ib, ob, 1, t, op, comm, &rq);
    bool pending = false;
    if (e != MPI_SUCCESS) rc = mpi_failed(r, e, exscan ? "MPI_Iexscan" : "MPI_Iallreduce");
    else pending = (rc = cm_wait(r, &rq, 1)) != 0;
    count_coll(r, (int64_t)rec, (int64_t)rec);
    if (rc == 0 && r->cx->status != AX_OK) rc = -1;   /* the combine failed inside MPI */
    if (rc == 0) {
        bool h = !(exscan && myr == 0) && ob[0].u != 0;
        *outhas = h;
        if (h && w > 0) memcpy(out, ob + 1, sizeof(Scalar) * (size_t)w);
    }
    if (!pending) {
        MPI_Op_free(&op);
        MPI_Type_free(&t);
    }
    c->r = NULL;   /* a pending reduction's later combines do nothing */
    drop(m, ib, pending);
    drop(m, ob, pending);
    drop(m, c, pending);
    drop(m, tmp, pending);
    return rc;
}

/* Flips the top bit of n unsigned integers of type s in place (flipped). */
static void flip_all(void *buf, ax_scalar s, int64_t n)
{
    uint64_t t = top_bit(s);
    for (int64_t i = 0; i < n; i++) {
        Scalar v = sc_load(buf, s, i);
        v.u ^= t;
        sc_store(buf, s, i, v);
    }
}

int cm_allreduce_array(MRun *r, MOp *o, ax_array *a)
{
    ax_mpi *m = r->m;
    for (int c = 0; c < a->ncomp; c++) {
        ax_scalar s = ty_leaf(a->elt, c);
        size_t sz = ax_scalar_size(s);
        bool flip = flipped(s, o->redprim);
        if (flip) flip_all(a->buf[c], s, a->size);
        for (int64_t lo = 0; lo < a->size;) {
            int64_t n = a->size - lo < (1 << 28) ? a->size - lo : (1 << 28);
            MPI_Request rq;
            int e = MPI_Iallreduce(MPI_IN_PLACE, (char *)a->buf[c] + (size_t)lo * sz, (int)n, mpi_type(s, o->redprim),
                                   mpi_op(o->redprim), m->work, &rq);
            if (e != MPI_SUCCESS) return mpi_failed(r, e, "MPI_Iallreduce");
            if (cm_wait(r, &rq, 1)) {
                cm_keep_array(m, a);
                return -1;
            }
            count_coll(r, n * (int64_t)sz, n * (int64_t)sz);
            lo += n;
        }
        if (flip) flip_all(a->buf[c], s, a->size);
    }
    return 0;
}
