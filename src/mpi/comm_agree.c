/*
 * Agreements: the collective calls' first and last step (mpi_int.h,
 * cm_agree_on), on ctl, with the graveyard for the buffers of a
 * collective that may never finish, bounded waits on ctl, the renewal of
 * the exchange communicator after a failure, and the messages that say
 * which rank gave what.  Failures and transfers: comm.c.
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
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "mpi_int.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

