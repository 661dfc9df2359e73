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
 * Agreements (comm_agree.c) and reductions across ranks (comm_reduce.c)
 * have files of their own; this one: failure notices, the statistics,
 * elements moved point to point, gathered, fetched by request and reply,
 * records exchanged.
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
#include "runtime/array.h"
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
void cm_drop(ax_mpi *m, void *p, bool pending)
{
    if (pending) cm_keep(m, p);
    else free(p);
}

int cm_mpi_failed(MRun *r, int code, const char *what)
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
            if (rc != MPI_SUCCESS) return cm_mpi_failed(r, rc, "a transfer");

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

void cm_listen(ax_mpi *m)
{
    /* (a posted receive rather than MPI_Iprobe(MPI_ANY_SOURCE) in the
     * waits: MPICH 4.0 over UCX was seen to leave a posted receive
     * unmatched after such probes) */
    m->errreq = MPI_REQUEST_NULL;
    memset(m->errbuf, 0, sizeof m->errbuf);
    if (m->np > 1) MPI_Irecv(m->errbuf, (int)sizeof m->errbuf - 1, MPI_CHAR, MPI_ANY_SOURCE, TAG_ERR, m->work, &m->errreq);
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

void cm_count_coll(MRun *r, int64_t sent, int64_t recv)
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
            rc = cm_mpi_failed(r, e, "MPI_Irecv");
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
            rc = cm_mpi_failed(r, e, "MPI_Isend");
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
            cm_drop(m, sbuf[q], nrq > 0);
            cm_drop(m, rbuf[q], nrq > 0);
        }
    if (nrq > 0) cm_keep_array(m, dst);
    free(sbuf);
    free(rbuf);
    free(sn);
    free(rn);
    cm_drop(m, rq, nrq > 0);
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
        if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, "MPI_Iallgatherv");
        else if ((rc = cm_wait(r, &rq, 1))) pending = true;
        MPI_Type_free(&t);
        cm_count_coll(r, mine / (local->ncomp ? local->ncomp : 1) * (np - 1),
                   ((int64_t)full->size - cnt[m->me]) * (int64_t)mx_leaf_size(local->elt, c));
    }
    if (pending) {
        cm_keep_array(m, full);
        cm_keep_array(m, local);
    }
    cm_drop(m, cnt, pending);
    cm_drop(m, dsp, pending);
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
        return cm_mpi_failed(r, e, "MPI_Iallgather");
    }
    cm_count_coll(r, 8 * (int64_t)(m->np - 1), 8 * (int64_t)(m->np - 1));
    int rc = cm_wait(r, &rq, 1);
    if (rc == 0) memcpy(all, res, sizeof *res * (size_t)m->np);
    cm_drop(m, in, rc != 0);
    cm_drop(m, res, rc != 0);
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
        if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, "MPI_Ialltoall");
        else pending = true;
        goto out;
    }
    cm_count_coll(r, 8 * (int64_t)(np - 1), 8 * (int64_t)(np - 1));
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
        if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, "MPI_Ialltoallv");
        else pending = true;
        goto out;
    }
    cm_count_coll(r, 8 * nu, 8 * nask);
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
        if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, "MPI_Ialltoallv");
        else pending = true;
        goto out;
    }
    cm_count_coll(r, (int64_t)es * nask, (int64_t)es * nu);
    for (int64_t k = 0; k < nr; k++) unpack_elems(dst, rq[k].i, got + (size_t)slot[k] * es, 1);
out:
    free(rq);
    free(slot);
    free(here);
    cm_drop(m, uniq, pending);
    cm_drop(m, cnt, pending);
    cm_drop(m, rcnt, pending);
    cm_drop(m, sc, pending);
    cm_drop(m, sd, pending);
    cm_drop(m, rc_, pending);
    cm_drop(m, rd, pending);
    cm_drop(m, asked, pending);
    cm_drop(m, reply, pending);
    cm_drop(m, got, pending);
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
        if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, "MPI_Ialltoall");
        else pending = true;
        goto out;
    }
    cm_count_coll(r, 8 * (int64_t)(np - 1), 8 * (int64_t)(np - 1));
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
        if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, "MPI_Ialltoallv");
        else pending = true;
        goto out;
    }
    cm_count_coll(r, sent * (int64_t)rec, recv * (int64_t)rec);
    *nout = tot;
    if (rcount) memcpy(rcount, rcnt, sizeof *rcnt * (size_t)np);
out:
    if (rc) {
        cm_drop(m, *out, pending);
        *out = NULL;
    }
    cm_drop(m, buf, pending);
    cm_drop(m, rcnt, pending);
    cm_drop(m, scnt, pending);
    cm_drop(m, sc, pending);
    cm_drop(m, sd, pending);
    cm_drop(m, rc_, pending);
    cm_drop(m, rd, pending);
    return rc;
}

