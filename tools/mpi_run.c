/*
 * `axle run PROGRAM --mpi`: a built-in program run by every rank of
 * MPI_COMM_WORLD (mpirun -np 3 build/axle run dotp --mpi --check).  Every
 * rank makes the program's inputs (they are made from a fixed seed: the
 * same on every rank) and keeps its block of rows of each
 * (ax_mpi_options.split_inputs); the results are gathered on rank 0 and
 * checked there against the plain-C reference.  Rank 0 prints the line
 * `axle run` prints, and the communication of the last run (--comm: per
 * operation; always: each rank's totals).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle_mpi.h"
#include "programs.h"
#include "tools.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

enum { MAXRES = 8, NTOT = 4 };

int axle_run_mpi(const ex_program *p, int64_t size, int runs, bool check, bool json, bool comm,
                 const ax_options *opt)
{
    int init = 0, provided = 0;
    MPI_Initialized(&init);
    if (!init) MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    int me = 0, np = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    ax_mpi_options mo;
    memset(&mo, 0, sizeof mo);
    mo.axle = opt;
    mo.split_inputs = true;
    ax_mpi *m = ax_mpi_new(MPI_COMM_WORLD, &mo);
    if (!m) {
        MPI_Finalize();
        return 1;
    }
    ax_ctx *cx = ax_mpi_ctx(m);
    int64_t n = size >= 0 ? size : p->default_size;
    void *st = p->setup(cx, n);
    ax_mpi_program *pr = ax_mpi_compile(m, st ? p->build(cx, st) : NULL);
    const char *err = NULL, *chk = "skipped";
    char msg[512] = "";
    double *times = calloc((size_t)runs + 1, sizeof *times), run_ms = 0;
    ax_darray *res[MAXRES] = {0};
    ax_array *full[MAXRES] = {0};
    int nres = 0, rc = 1;
    if (!pr) {
        err = ax_mpi_error(m);
        goto out;
    }
    for (int r = runs > 1 ? -1 : 0; r < runs; r++) {
        for (int i = 0; i < nres; i++) ax_darray_release(res[i]);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_ms();
        nres = ax_mpi_program_run(pr, NULL, 0, res, MAXRES);
        double t = now_ms() - t0;
        if (nres < 0) {
            nres = 0;
            err = ax_mpi_error(m);
            goto out;
        }
        if (r >= 0 && times) times[r] = t;
    }
    run_ms = times ? axle_median(times, runs) : 0;
    /* the results on rank 0, checked there */
    for (int i = 0; i < nres; i++)
        if (ax_mpi_gather(m, res[i], 0, &full[i])) {
            err = ax_mpi_error(m);
            goto out;
        }
    int ok = 1;
    if (check && me == 0) {
        ok = p->check(st, full, nres, msg, sizeof msg) == 0;
        chk = ok ? "ok" : "fail";
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    rc = ok ? 0 : 1;
out:;
    /* each rank's communication in the last run (totals over its operations) */
    ax_mpi_opstat s[256];
    int ns = ax_mpi_stats(m, s, 256);
    int64_t tot[NTOT] = {0}, *all = calloc((size_t)np * NTOT, sizeof *all);
    for (int i = 0; i < ns && i < 256; i++) {
        tot[0] += s[i].bytes_sent;
        tot[1] += s[i].bytes_recv;
        tot[2] += s[i].msgs_sent;
        tot[3] += s[i].collectives;
    }
    MPI_Gather(tot, NTOT, MPI_INT64_T, all, NTOT, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (comm) {
        /* per operation, rank by rank (in rank order) */
        for (int q = 0; q < np; q++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (q != me) continue;
            for (int i = 0; i < ns && i < 256; i++)
                if (s[i].runs)
                    fprintf(stderr,
                            "comm: rank %d op %d %s (%s): sent %" PRId64 " B in %" PRId64 " msgs, received %" PRId64
                            " B in %" PRId64 " msgs, %" PRId64 " collectives\n",
                            me, i, s[i].name, s[i].plan, s[i].bytes_sent, s[i].msgs_sent, s[i].bytes_recv,
                            s[i].msgs_recv, s[i].collectives);
            fflush(stderr);
        }
    }
    if (me == 0) {
        const char *bname = opt && opt->backend == AX_BACKEND_INTERP ? "interp" : "cpu";
        if (json) {
            printf("{\"program\":\"%s\",\"size\":%lld,\"backend\":\"%s\",\"ranks\":%d,\"run_ms\":%.3f,\"runs\":%d,"
                   "\"check\":\"%s\"",
                   p->name, (long long)n, bname, np, run_ms, runs, err ? "fail" : chk);
            const char *key[NTOT] = {"bytes_sent", "bytes_recv", "msgs_sent", "collectives"};
            for (int k = 0; k < NTOT && all; k++) {
                printf(",\"%s\":[", key[k]);
                for (int q = 0; q < np; q++) printf("%s%" PRId64, q ? "," : "", all[q * NTOT + k]);
                printf("]");
            }
            if (err) {
                printf(",\"error\":");
                axle_json_str(stdout, err);
            }
            if (*msg) {
                printf(",\"message\":");
                axle_json_str(stdout, msg);
            }
            printf("}\n");
        } else if (err) {
            fprintf(stderr, "axle: %s: %s\n", p->name, err);
        } else {
            int64_t mx = 0;
            for (int q = 0; q < np && all; q++)
                if (all[q * NTOT] > mx) mx = all[q * NTOT];
            printf("%s: size %lld, %d ranks (mpi), backend %s, run %.3f ms (median of %d), at most %" PRId64
                   " B sent by a rank", p->name, (long long)n, np, bname, run_ms, runs, mx);
            if (check) printf(", check %s%s%s", chk, *msg ? ": " : "", msg);
            printf("\n");
        }
        fflush(stdout);
    }
    free(all);
    for (int i = 0; i < MAXRES; i++) {
        ax_darray_release(res[i]);
        ax_array_release(full[i]);
    }
    ax_mpi_program_free(pr);
    if (st) p->teardown(st);
    free(times);
    ax_mpi_free(m);
    MPI_Finalize();
    return err ? 1 : rc;
}
