/*
 * libaxle_mpi misused: collective calls that the ranks make differently
 * (each its own root; an argument replicated on one rank and distributed
 * on the others; other extents, other row blocks, other calls, other
 * options), a bad argument on one rank only, a rank that never makes a
 * call (ax_mpi_gather, ax_mpi_new), ranks whose replicated inputs differ
 * in value, communicators axle cannot use (MPI_COMM_NULL, an
 * inter-communicator), and MPI out of communicators under the caller's
 * MPI_ERRORS_ARE_FATAL (which aborted the job before).  Each must fail
 * on every rank concerned, with a message that names what was wrong and
 * which rank gave what, and leave the job running: no hang, no abort.
 * What the ranks' agreement can see fails at once; what it cannot, after
 * the timeout (set to a second or two here).
 *
 * Two of these hung for ever before the agreement checked the root and
 * the arguments' distributions (run under `timeout`, they were killed):
 * ax_mpi_gather with each rank its own root, and a stencil over a
 * parameter replicated on rank 0 and distributed on the others.  The
 * agreement also bounds how long it waits, so a check that regressed into
 * a hang fails here after the contexts' timeout instead.
 *
 * Runs under mpirun with any number of ranks (make test: 1 to 4); the
 * checks of disagreeing ranks need two at least.  AXLE_DEBUG is cleared:
 * its verify flag must be alike on every rank (checked below), and it
 * would catch the diverging replicated values of the timeout check before
 * the timeout does.  AXLE_MPI_TEST_VERBOSE=1: rank 0 prints each message.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle_mpi.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failed, me, np, checks;

#define CHECK(c) do { checks++; if (!(c)) { failed++; fprintf(stderr, "rank %d %s:%d: CHECK failed: %s\n", me, \
    __FILE__, __LINE__, #c); } } while (0)
#define CHECKF(c, ...) do { checks++; if (!(c)) { failed++; fprintf(stderr, "rank %d %s:%d: CHECK failed: %s: ", me, \
    __FILE__, __LINE__, #c); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* A context on the interpreter, every operation in blocks, waits limited
 * to timeout seconds (twice that at the agreements). */
static ax_mpi *make(MPI_Comm comm, double timeout)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_INTERP;
    ax_mpi_options mo = {&o, false, false, -1, timeout};
    ax_mpi *m = ax_mpi_new(comm, &mo);
    CHECK(m != NULL);
    return m;
}

static ax_array *vec(ax_ctx *cx, int64_t n, int32_t base)
{
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_I32), 1, &n);
    int32_t *p = ax_array_data(a, 0);
    for (int64_t i = 0; i < n; i++) p[i] = base + (int32_t)i;
    return a;
}

/* "rank 1", "ranks 1-3": the ranks from lo on. */
static const char *from(int lo, char *b, size_t n)
{
    if (np - 1 == lo) snprintf(b, n, "rank %d", lo);
    else snprintf(b, n, "ranks %d-%d", lo, np - 1);
    return b;
}

/* Rank 0's message, on every rank: the same on all. */
static void same_everywhere(const char *msg, const char *what)
{
    char mine[1100], zero[1100];
    snprintf(mine, sizeof mine, "%s", msg);
    memcpy(zero, mine, sizeof zero);
    MPI_Bcast(zero, (int)sizeof zero, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECKF(!strcmp(zero, mine), "%s: rank 0 says \"%s\", this rank \"%s\"", what, zero, mine);
}

/* A call that must have failed, at once: its status and message (want
 * in it), alike on every rank. */
static void failed_with(ax_mpi *m, const char *what, bool fails, ax_status st, const char *want, double t0)
{
    double t = MPI_Wtime() - t0;
    CHECKF(fails, "%s succeeded", what);
    CHECKF(ax_mpi_status(m) == st, "%s: status %d, not %d: %s", what, (int)ax_mpi_status(m), (int)st,
           ax_mpi_error(m));
    CHECKF(strstr(ax_mpi_error(m), want) != NULL, "%s: the message is \"%s\", without \"%s\"", what,
           ax_mpi_error(m), want);
    /* at once: the contexts wait 30 s at most, the agreement far less */
    CHECKF(t < 15, "%s: failed after %.1f s", what, t);
    same_everywhere(ax_mpi_error(m), what);
    if (me == 0 && getenv("AXLE_MPI_TEST_VERBOSE")) printf("%s (%.3f s): %s\n", what, t, ax_mpi_error(m));
}

/* ------------------------------------------------------------ the reproducers */

static ax_exp sum3(const ax_exp *x, void *e) { return ax_add(ax_add(x[0], x[1]), x[2]); }

static void gather_roots(ax_mpi *m)
{
    ax_ctx *cx = ax_mpi_ctx(m);
    ax_array *a = vec(cx, 10, 0);
    ax_darray *d = ax_mpi_split(m, a);
    char want[512] = "ax_mpi_gather: the ranks disagree on the root: ", r[32];
    for (int q = 0; q < np; q++) {
        size_t k = strlen(want);
        snprintf(want + k, sizeof want - k, "%s%d on rank %d", q ? "; " : "", q, q);
    }
    strcat(want, " (every rank must give the same)");
    /* each rank its own root: hung for ever (each sent its rows to
     * itself, and waited for the others') */
    ax_array *out = NULL;
    double t0 = MPI_Wtime();
    int rc = ax_mpi_gather(m, d, me, &out);
    failed_with(m, "ax_mpi_gather, each rank its own root", rc < 0, AX_ERR_ARG, want, t0);
    CHECK(out == NULL);
    /* every rank on rank 0, one rank on the others */
    snprintf(want, sizeof want, "the root: every rank (a root < 0) on rank 0; 0 on %s", from(1, r, sizeof r));
    t0 = MPI_Wtime();
    rc = ax_mpi_gather(m, d, me == 0 ? -1 : 0, &out);
    failed_with(m, "ax_mpi_gather, roots -1 and 0", rc < 0, AX_ERR_ARG, want, t0);
    /* an array replicated on rank 0, distributed on the others */
    ax_darray *e = me == 0 ? ax_mpi_replicated(m, a) : ax_mpi_split(m, a);
    snprintf(want, sizeof want, "ax_mpi_gather: the ranks disagree on the distribution of the array: replicated on "
             "rank 0; distributed on %s", from(1, r, sizeof r));
    t0 = MPI_Wtime();
    rc = ax_mpi_gather(m, e, 0, &out);
    failed_with(m, "ax_mpi_gather of an array distributed unlike", rc < 0, AX_ERR_ARG, want, t0);
    ax_darray_release(e);
    /* the context serves on: the same gather, one root */
    rc = ax_mpi_gather(m, d, np - 1, &out);
    CHECKF(rc == 0, "%s", ax_mpi_error(m));
    CHECK((out != NULL) == (me == np - 1));
    if (out) {
        const int32_t *p = ax_array_data(out, 0);
        bool ok = ax_array_size(out) == 10;
        for (int i = 0; ok && i < 10; i++) ok = p[i] == i;
        CHECK(ok);
    }
    ax_array_release(out);
    ax_darray_release(d);
    ax_array_release(a);
    ax_ctx_reset(cx);
}

/* The stencil over a parameter run with arguments unlike on some ranks:
 * fails at once, naming the difference; then runs right. */
static void params(ax_mpi *m)
{
    ax_ctx *cx = ax_mpi_ctx(m);
    ax_acc x = ax_param(cx, 0, ax_type_scalar(AX_I32), 1);
    ax_mpi_program *pr = ax_mpi_compile(m, ax_stencil(sum3, NULL, (int[]){3}, ax_clamp(), x));
    CHECKF(pr != NULL, "%s", ax_mpi_error(m));
    if (!pr) return;
    int64_t n = 3 * np + 2, tot = (int64_t)np * (np + 1) / 2;
    ax_array *a = vec(cx, n, 0), *longer = vec(cx, n + 2, 0);
    /* rank q holds q + 1 rows (from_block), where a split holds even blocks */
    ax_array *blk = vec(cx, me + 1, (int32_t)((int64_t)me * (me + 1) / 2)), *whole = vec(cx, tot, 0);
    ax_darray *rep = ax_mpi_replicated(m, a), *spl = ax_mpi_split(m, a), *spl2 = ax_mpi_split(m, longer);
    ax_darray *uneven = ax_mpi_from_block(m, blk), *even = ax_mpi_split(m, whole), *res = NULL;
    CHECKF(uneven != NULL, "%s", ax_mpi_error(m));
    char want[512], r[32];
    /* replicated on rank 0, distributed on the others: hung for ever (rank
     * 0 computed its stencil whole, the others waited for its halo rows) */
    snprintf(want, sizeof want, "ax_mpi_program_run: the ranks disagree on the distribution of parameter 0: "
             "replicated on rank 0; distributed on %s (every rank must give the same)", from(1, r, sizeof r));
    double t0 = MPI_Wtime();
    int k = ax_mpi_program_run(pr, me == 0 ? &rep : &spl, 1, &res, 1);
    failed_with(m, "a parameter replicated on rank 0 only", k < 0, AX_ERR_ARG, want, t0);
    CHECK(res == NULL);
    /* arrays of other lengths */
    snprintf(want, sizeof want, "ax_mpi_program_run: the ranks disagree on extent 0 of parameter 0: %lld on rank 0; "
             "%lld on %s", (long long)n, (long long)n + 2, from(1, r, sizeof r));
    t0 = MPI_Wtime();
    k = ax_mpi_program_run(pr, me == 0 ? &spl : &spl2, 1, &res, 1);
    failed_with(m, "parameters of other lengths", k < 0, AX_ERR_ARG, want, t0);
    /* one length, other row blocks */
    if (uneven) {
        snprintf(want, sizeof want, "ax_mpi_program_run: the ranks disagree on the row blocks (which rows each rank "
                 "holds) of parameter 0: one on rank 0; another on %s", from(1, r, sizeof r));
        t0 = MPI_Wtime();
        k = ax_mpi_program_run(pr, me == 0 ? &uneven : &even, 1, &res, 1);
        failed_with(m, "parameters in other row blocks", k < 0, AX_ERR_ARG, want, t0);
    }
    /* a bad argument on one rank: hung too (that rank went to the end of
     * the call, the others waited in the run for its halo) */
    ax_darray *none = NULL;
    t0 = MPI_Wtime();
    k = ax_mpi_program_run(pr, me == np - 1 ? &none : &spl, 1, &res, 1);
    snprintf(want, sizeof want, "ax_mpi_program_run: the argument for parameter 0 is NULL (on rank %d)", np - 1);
    failed_with(m, "a NULL argument on the last rank", k < 0, AX_ERR_ARG, want, t0);
    /* and alike on every rank, the program runs */
    k = ax_mpi_program_run(pr, &spl, 1, &res, 1);
    CHECKF(k == 1, "%s", ax_mpi_error(m));
    ax_array *got = NULL;
    if (k == 1) CHECK(ax_mpi_gather(m, res, -1, &got) == 0);
    if (got) {
        const int32_t *p = ax_array_data(got, 0);
        bool ok = ax_array_size(got) == n;
        for (int64_t i = 0; ok && i < n; i++) {
            int64_t lo = i > 0 ? i - 1 : 0, hi = i < n - 1 ? i + 1 : n - 1;
            ok = p[i] == lo + i + hi;
        }
        CHECK(ok);
    }
    ax_array_release(got);
    ax_darray_release(res);
    ax_darray *ds[] = {rep, spl, spl2, uneven, even};
    for (int i = 0; i < 5; i++) ax_darray_release(ds[i]);
    ax_array *as[] = {a, longer, blk, whole};
    for (int i = 0; i < 4; i++) ax_array_release(as[i]);
    ax_mpi_program_free(pr);
    ax_ctx_reset(cx);
}

/* Scatters from other roots, arrays embedded unlike, ranks in different
 * calls. */
static void calls(ax_mpi *m)
{
    ax_ctx *cx = ax_mpi_ctx(m);
    ax_array *a = vec(cx, 9, 5);
    char want[512], r[32];
    snprintf(want, sizeof want, "ax_mpi_scatter: the ranks disagree on the root: 0 on rank 0; 1 on rank 1");
    double t0 = MPI_Wtime();
    ax_darray *d = ax_mpi_scatter(m, me, a);
    failed_with(m, "ax_mpi_scatter, each rank its own root", d == NULL, AX_ERR_ARG, want, t0);
    /* an array embedded whole on rank 0, in blocks on the others */
    ax_darray *e = me == 0 ? ax_mpi_replicated(m, a) : ax_mpi_split(m, a);
    snprintf(want, sizeof want, "ax_mpi_compile: the ranks disagree on the distribution of embedded array 0: "
             "replicated on rank 0; distributed on %s", from(1, r, sizeof r));
    t0 = MPI_Wtime();
    ax_darray *s = ax_mpi_run(m, ax_fold(ax_fn_add, NULL, ax_i32(0), ax_mpi_use(m, e)));
    failed_with(m, "an array embedded unlike", s == NULL, AX_ERR_ARG, want, t0);
    ax_darray_release(e);
    ax_ctx_reset(cx);
    /* rank 0 gathers, the others scatter */
    d = ax_mpi_split(m, a);
    ax_array *out = NULL;
    snprintf(want, sizeof want, "axle mpi: the ranks are in different collective calls: ax_mpi_gather on rank 0; "
             "ax_mpi_scatter on %s (every rank must make the same collective calls, in the same order)",
             from(1, r, sizeof r));
    t0 = MPI_Wtime();
    if (me == 0) {
        int rc = ax_mpi_gather(m, d, 0, &out);
        failed_with(m, "ax_mpi_gather against ax_mpi_scatter", rc < 0, AX_ERR_ARG, want, t0);
    } else {
        ax_darray *x = ax_mpi_scatter(m, 0, a);
        failed_with(m, "ax_mpi_scatter against ax_mpi_gather", x == NULL, AX_ERR_ARG, want, t0);
    }
    /* the context serves on */
    s = ax_mpi_run(m, ax_fold(ax_fn_add, NULL, ax_i32(0), ax_mpi_use(m, d)));
    CHECKF(s != NULL, "%s", ax_mpi_error(m));
    CHECK(s && *(int32_t *)ax_array_data(ax_darray_local(s), 0) == 9 * 5 + 36);
    ax_darray_release(s);
    ax_darray_release(d);
    ax_array_release(a);
    ax_ctx_reset(cx);
}

/* ------------------------------------------------------------ what the agreement cannot see */

static ax_exp lt(ax_exp x, ax_exp y, void *e) { return ax_lt(x, y); }
static ax_exp inc(ax_exp x, void *e) { return ax_add(x, ax_i32(1)); }
static ax_acc below(ax_acc x, void *env) { return ax_zip_with(lt, NULL, ax_fold_all(ax_fn_add, NULL, ax_i32(0), x), *(ax_acc *)env); }
static ax_acc step(ax_acc x, void *env) { return ax_map(inc, NULL, x); }

/* Replicated inputs that differ in value (the agreement compares their
 * shapes, not their elements): rank 0 loops on where the others stop,
 * and waits in a reduction no other rank makes.  After the timeout (2 s;
 * the others wait 4 s at the agreement that ends the call) the call fails
 * on every rank, naming rank 0, and the context serves on. */
static void diverging(void)
{
    ax_mpi *m = make(MPI_COMM_WORLD, 2);
    if (!m) return;
    ax_ctx *cx = ax_mpi_ctx(m);
    ax_array *a = vec(cx, 8, 0), *lim = ax_array_new(cx, ax_type_scalar(AX_I32), 0, NULL);
    *(int32_t *)ax_array_data(lim, 0) = me == 0 ? 1000 : 0;
    ax_darray *d = ax_mpi_split(m, a);
    ax_acc l = ax_use(cx, lim);
    double t0 = MPI_Wtime();
    ax_darray *r = ax_mpi_run(m, ax_awhile(below, step, &l, ax_mpi_use(m, d)));
    double t = MPI_Wtime() - t0;
    CHECK(r == NULL);
    CHECKF(strstr(ax_mpi_error(m), "a transfer waited more than 2 s (AXLE_MPI_TIMEOUT) for another rank (on rank 0)"),
           "%s", ax_mpi_error(m));
    CHECKF(t >= 1.9 && t < 15, "failed after %.1f s", t);
    same_everywhere(ax_mpi_error(m), "diverging ranks");
    ax_darray_release(r);
    ax_ctx_reset(cx);
    /* the ranks agreed on the failure: the context serves on */
    *(int32_t *)ax_array_data(lim, 0) = 0;
    r = ax_mpi_run(m, ax_fold(ax_fn_add, NULL, ax_i32(0), ax_mpi_use(m, d)));
    CHECKF(r != NULL, "%s", ax_mpi_error(m));
    CHECK(r && *(int32_t *)ax_array_data(ax_darray_local(r), 0) == 28);
    ax_darray_release(r);
    ax_darray_release(d);
    ax_array_release(a);
    ax_array_release(lim);
    ax_mpi_free(m);
}

/* Rank 0 gathers where the others make no call: it fails after twice the
 * timeout, and its context cannot be used any more (its ranks are out of
 * step).  The others' late gather meets what rank 0 left behind and fails
 * the same way.  The job goes on, with a new context. */
static void missing(void)
{
    ax_mpi *m = make(MPI_COMM_WORLD, 1);
    if (!m) return;
    ax_ctx *cx = ax_mpi_ctx(m);
    ax_array *a = vec(cx, 6, 1), *out = NULL;
    ax_darray *d = ax_mpi_split(m, a);
    const char *want = "ax_mpi_gather: the context cannot be used any more: this rank waited more than 2 s (twice "
                       "AXLE_MPI_TIMEOUT) for the other ranks in the agreement at the start or end of a collective "
                       "call: some rank makes other collective calls than this one, or has stopped";
    if (me == 0) {
        double t0 = MPI_Wtime();
        int rc = ax_mpi_gather(m, d, 0, &out);
        double t = MPI_Wtime() - t0;
        CHECK(rc < 0 && out == NULL);
        CHECK(ax_mpi_status(m) == AX_ERR_BACKEND);
        CHECKF(!strcmp(ax_mpi_error(m), want), "%s", ax_mpi_error(m));
        CHECKF(t >= 1.9 && t < 15, "failed after %.1f s", t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc = ax_mpi_gather(m, d, 0, &out);
    double t = MPI_Wtime() - t0;
    CHECK(rc < 0 && out == NULL);
    if (me == 0) {
        /* at once */
        CHECKF(strstr(ax_mpi_error(m), "ax_mpi_gather: the context cannot be used any more: this rank waited"),
               "%s", ax_mpi_error(m));
        CHECKF(t < 1, "failed after %.1f s", t);
    } else {
        CHECKF(!strcmp(ax_mpi_error(m), want), "%s", ax_mpi_error(m));
        CHECKF(t >= 1.9 && t < 15, "failed after %.1f s", t);
    }
    ax_darray_release(d);
    ax_array_release(a);
    ax_mpi_free(m);
    /* a new context works */
    m = make(MPI_COMM_WORLD, 30);
    if (!m) return;
    cx = ax_mpi_ctx(m);
    a = vec(cx, 6, 1);
    d = ax_mpi_split(m, a);
    ax_darray *s = ax_mpi_run(m, ax_fold(ax_fn_add, NULL, ax_i32(0), ax_mpi_use(m, d)));
    CHECKF(s && *(int32_t *)ax_array_data(ax_darray_local(s), 0) == 21, "%s", ax_mpi_error(m));
    ax_darray_release(s);
    ax_darray_release(d);
    ax_array_release(a);
    ax_mpi_free(m);
}

/* ------------------------------------------------------------ ax_mpi_new */

/* stderr, into a file, while ax_mpi_new says why it failed */
static FILE *cap;
static int saved = -1;

static void capture(void)
{
    fflush(stderr);
    cap = tmpfile();
    saved = dup(2);
    if (cap && saved >= 0) dup2(fileno(cap), 2);
}

static void captured(char *b, size_t n)
{
    fflush(stderr);
    b[0] = 0;
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
        saved = -1;
    }
    if (!cap) return;
    rewind(cap);
    size_t k = fread(b, 1, n - 1, cap);
    b[k] = 0;
    fclose(cap);
    cap = NULL;
}

/* ax_mpi_new on a communicator it cannot use returns NULL, with a line on
 * stderr, and does not end the job. */
static void communicators(void)
{
    char err[2048];
    capture();
    ax_mpi *m = ax_mpi_new(MPI_COMM_NULL, NULL);
    captured(err, sizeof err);
    CHECK(m == NULL);
    CHECKF(strstr(err, "axle: ax_mpi_new: the communicator is MPI_COMM_NULL"), "stderr: %s", err);
    /* as a process outside a group has it: rank 0 out, the others in */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, me == 0 ? MPI_UNDEFINED : 1, me, &sub);
    capture();
    m = ax_mpi_new(sub, NULL);
    captured(err, sizeof err);
    if (me == 0) {
        CHECK(sub == MPI_COMM_NULL && m == NULL);
        CHECKF(strstr(err, "the communicator is MPI_COMM_NULL"), "stderr: %s", err);
    } else {
        CHECKF(m != NULL, "stderr: %s", err);
        if (m) {
            ax_ctx *cx = ax_mpi_ctx(m);
            ax_array *a = vec(cx, 5, 0);
            ax_darray *d = ax_mpi_split(m, a);
            ax_darray *s = ax_mpi_run(m, ax_fold(ax_fn_add, NULL, ax_i32(0), ax_mpi_use(m, d)));
            CHECKF(s && *(int32_t *)ax_array_data(ax_darray_local(s), 0) == 10, "%s", ax_mpi_error(m));
            CHECK(ax_mpi_size(m) == np - 1);
            ax_darray_release(s);
            ax_darray_release(d);
            ax_array_release(a);
            ax_mpi_free(m);
        }
        MPI_Comm_free(&sub);
    }
    /* an inter-communicator: the even ranks' group and the odd ranks' */
    if (np >= 2) {
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 ? 0 : 1, 77, &inter);
        capture();
        m = ax_mpi_new(inter, NULL);
        captured(err, sizeof err);
        CHECK(m == NULL);
        CHECKF(strstr(err, "axle: ax_mpi_new: the communicator is an inter-communicator"), "stderr: %s", err);
        ax_mpi_free(m);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    /* MPI out of communicators (MPICH has about 2000 per process; each
     * process uses its own up, duplicating MPI_COMM_SELF, which is quick):
     * ax_mpi_new fails with MPI's message, where it aborted the job (its
     * duplicate ran under the caller's handler, MPI_ERRORS_ARE_FATAL) */
    enum { MAXDUP = 1 << 16 };
    MPI_Comm fatal, spare, *dups = malloc(sizeof *dups * MAXDUP);
    MPI_Comm_dup(MPI_COMM_WORLD, &fatal);
    MPI_Comm_set_errhandler(fatal, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_dup(MPI_COMM_SELF, &spare);
    MPI_Comm_set_errhandler(spare, MPI_ERRORS_RETURN);
    int ndup = 0;
    while (dups && ndup < MAXDUP && MPI_Comm_dup(spare, &dups[ndup]) == MPI_SUCCESS) ndup++;
    if (ndup < MAXDUP) {
        capture();
        m = ax_mpi_new(fatal, NULL);
        captured(err, sizeof err);
        CHECK(m == NULL);
        CHECKF(strstr(err, "axle: ax_mpi_new: MPI_Comm_idup failed: "), "stderr: %s", err);
        ax_mpi_free(m);
    }
    for (int i = 0; i < ndup; i++) MPI_Comm_free(&dups[i]);
    free(dups);
    MPI_Comm_free(&spare);
    /* the caller's error handler is its own again afterwards, and was
     * never called */
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(fatal, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&fatal);
    MPI_Comm mine;
    MPI_Comm_dup(MPI_COMM_WORLD, &mine);
    MPI_Errhandler before, after;
    MPI_Comm_set_errhandler(mine, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_get_errhandler(mine, &before);
    m = make(mine, 30);
    MPI_Comm_get_errhandler(mine, &after);
    CHECK(before == after && after == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&before);
    MPI_Errhandler_free(&after);
    ax_mpi_free(m);
    MPI_Comm_free(&mine);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 0 makes a context where the others do not yet: NULL after twice
 * the timeout (0.5 s).  The others, late, complete the duplicate it left
 * pending and then wait for it in vain: NULL alike.  (On a communicator
 * of the test's own: the caller's keeps rank 0's duplicate, pending until
 * the others came.) */
static void alone(void)
{
    char err[2048];
    MPI_Comm x;
    MPI_Comm_dup(MPI_COMM_WORLD, &x);
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_INTERP;
    ax_mpi_options mo = {&o, false, false, -1, 0.5};
    if (me == 0) {
        double t0 = MPI_Wtime();
        capture();
        ax_mpi *m = ax_mpi_new(x, &mo);
        captured(err, sizeof err);
        double t = MPI_Wtime() - t0;
        CHECK(m == NULL);
        CHECKF(strstr(err, "axle: ax_mpi_new: this process waited more than 1 s (twice AXLE_MPI_TIMEOUT) for the "
                      "other processes of the communicator to call ax_mpi_new too"), "stderr: %s", err);
        CHECKF(t >= 0.9 && t < 15, "failed after %.1f s", t);
        ax_mpi_free(m);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me != 0) {
        capture();
        ax_mpi *m = ax_mpi_new(x, &mo);
        captured(err, sizeof err);
        CHECK(m == NULL);
        CHECKF(strstr(err, "axle: ax_mpi_new: this process waited more than 1 s (twice AXLE_MPI_TIMEOUT) for the "
                      "other processes in ax_mpi_new (one gave up on it before this one came, or has stopped)"),
               "stderr: %s", err);
        ax_mpi_free(m);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&x);
}

/* Options that decide how the ranks communicate, unlike on one rank: NULL
 * on every rank, saying which and where. */
static void options(void)
{
    if (np < 2) return;
    char err[2048], want[512], r[32];
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = AX_BACKEND_INTERP;
    ax_mpi_options mo = {&o, false, false, me == 0 ? -1 : 0, 30};
    capture();
    ax_mpi *m = ax_mpi_new(MPI_COMM_WORLD, &mo);
    captured(err, sizeof err);
    CHECK(m == NULL);
    snprintf(want, sizeof want, "axle: ax_mpi_new: the ranks disagree on ax_mpi_options.min_split (or "
             "AXLE_MPI_MIN_SPLIT; 0: every operation in blocks): 0 on rank 0; 65536 on %s (every rank must give the "
             "same)", from(1, r, sizeof r));
    CHECKF(strstr(err, want), "stderr: %s", err);
    ax_mpi_free(m);
    mo.min_split = -1;
    if (me == 1) o.debug = AX_DEBUG_VERIFY;
    capture();
    m = ax_mpi_new(MPI_COMM_WORLD, &mo);
    captured(err, sizeof err);
    CHECK(m == NULL);
    snprintf(want, sizeof want, "axle: ax_mpi_new: the ranks disagree on AXLE_DEBUG=verify: false on %s; true on "
             "rank 1", np == 2 ? "rank 0" : np == 3 ? "ranks 0, 2" : "ranks 0, 2-3");
    CHECKF(np > 4 || strstr(err, want), "stderr: %s", err);
    ax_mpi_free(m);
    o.debug = 0;
    /* a timeout that is not a number, on rank 1 (read when the option is
     * 0): ignored with a notice, as the local context's variables; with
     * ax_options.strict an error, on every rank */
    mo.timeout = 0;
    if (me == 1) setenv("AXLE_MPI_TIMEOUT", "soon", 1);
    capture();
    m = ax_mpi_new(MPI_COMM_WORLD, &mo);
    captured(err, sizeof err);
    CHECKF(m != NULL, "stderr: %s", err);
    CHECKF(me != 1 || strstr(err, "axle: AXLE_MPI_TIMEOUT='soon' is not valid (seconds; 0: no limit); it is ignored"),
           "stderr: %s", err);
    ax_mpi_free(m);
    o.strict = true;
    capture();
    m = ax_mpi_new(MPI_COMM_WORLD, &mo);
    captured(err, sizeof err);
    unsetenv("AXLE_MPI_TIMEOUT");
    CHECK(m == NULL);
    CHECKF(strstr(err, "axle: ax_mpi_new: AXLE_MPI_TIMEOUT='soon' is not valid (seconds; 0: no limit) (on rank 1)"),
           "stderr: %s", err);
    ax_mpi_free(m);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    unsetenv("AXLE_DEBUG");
    unsetenv("AXLE_MPI_TIMEOUT");
    communicators();
    if (np >= 2) {
        /* (30 s: a check that regressed into a hang fails, and soon) */
        ax_mpi *m = make(MPI_COMM_WORLD, 30);
        if (m) {
            gather_roots(m);
            params(m);
            calls(m);
            ax_mpi_free(m);
        }
        diverging();
        missing();
        alone();
        options();
    }
    int all = 0, nchecks = 0;
    MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &nchecks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) printf("%d ranks: %d checks, %d failed\n", np, nchecks, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
