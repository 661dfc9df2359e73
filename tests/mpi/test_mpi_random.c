/*
 * Random differential programs (tests/randprog.c) over MPI: each seed's
 * program is built on every rank (SPMD: the generator is deterministic),
 * its inputs split across the ranks (ax_mpi_options.split_inputs), run by
 * the distributed executor, and its results gathered on rank 0, which
 * runs the same seed in a plain single-process context with the same
 * backend: they must agree (integers and bools exactly, floats within the
 * tolerance the CPU backend's reassociated folds already have, as in
 * test_random: rtol 1e-4, atol 1e-5).  The single-process run has the
 * planner's multi-generator loops and epilogues, the executor does not
 * (src/mpi/program.c): the sweep counts the programs that had them and
 * fails when they are too few to have tested the difference.
 *
 * Configurations (each a distributed context): the interpreter on every
 * seed with even blocks, with every operation distributed however small
 * (min_split < 0), and with skewed blocks (rank 0's empty, the others
 * uneven: AXLE_MPI_BLOCKS=skew); the CPU backend on every k-th seed.
 *
 * Environment: AXLE_MPI_RANDOM_SEEDS (default 40), AXLE_MPI_RANDOM_SEED0
 * (default 1), AXLE_MPI_RANDOM_CPU_EVERY (default 8; 0: never).
 * Reproduce: mpirun -np 3 build/test_mpi_random with
 * AXLE_MPI_RANDOM_SEED0=<seed> AXLE_MPI_RANDOM_SEEDS=1.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle_mpi.h"
#include "randprog.h"
#include "randprog.c"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXOUT = 16 };

typedef struct Config {
    const char *name;
    ax_backend_kind backend;
    int64_t min_split;
    bool skew;
    int every;
} Config;

static const Config configs[] = {
    {"interp",            AX_BACKEND_INTERP, 0,  false, 1},
    {"interp/split-all",  AX_BACKEND_INTERP, -1, false, 1},
    {"interp/skew",       AX_BACKEND_INTERP, -1, true,  1},
    {"cpu/skew",          AX_BACKEND_CPU,    -1, true,  0},   /* every: AXLE_MPI_RANDOM_CPU_EVERY */
};
#define NCONFIGS ((int)(sizeof configs / sizeof *configs))

/* The single-process run on rank 0: its results, or -1; *planned: whether
 * its optimised program has a planner's multi-generator loop or epilogue
 * (which the distributed executor compiles without: the planner's output
 * is the meaning it must agree with). */
static int reference(ax_backend_kind be, uint64_t seed, ax_array **out, ax_ctx **cxo, RandProg **rpo, char *err, size_t n,
                     bool *planned)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = be;
    ax_ctx *cx = ax_ctx_new(&o);
    *cxo = cx;
    *rpo = NULL;
    if (!cx) return -1;
    ax_acc a = randprog_build(cx, seed, NULL, rpo);
    char *d = a ? ax_dump(cx, a, "fusion", false) : NULL;
    *planned = d && (strstr(d, "loop[") || strstr(d, "map<epilogue>"));
    free(d);
    int k = a ? ax_run_n(cx, a, out, MAXOUT) : -1;
    if (k < 0) snprintf(err, n, "%s", ax_error(cx));
    return k;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    int me = 0, np = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    long nseeds = randprog_env_long("AXLE_MPI_RANDOM_SEEDS", 40), seed0 = randprog_env_long("AXLE_MPI_RANDOM_SEED0", 1);
    long cpu_every = randprog_env_long("AXLE_MPI_RANDOM_CPU_EVERY", 8);
    int bad = 0, runs = 0, reported = 0, planned = 0;
    for (int c = 0; c < NCONFIGS; c++) {
        const Config *cf = &configs[c];
        long every = cf->every ? cf->every : cpu_every;
        if (every <= 0) continue;
        if (cf->skew) setenv("AXLE_MPI_BLOCKS", "skew", 1);
        else unsetenv("AXLE_MPI_BLOCKS");
        ax_options o;
        memset(&o, 0, sizeof o);
        o.backend = cf->backend;
        o.quiet = true;
        ax_mpi_options mo = {&o, false, true, cf->min_split, 0};
        ax_mpi *m = ax_mpi_new(MPI_COMM_WORLD, &mo);
        if (!m) {
            bad++;
            break;
        }
        ax_ctx *cx = ax_mpi_ctx(m);
        for (long s = 0; s < nseeds; s++) {
            if (s % every) continue;
            uint64_t seed = (uint64_t)(seed0 + s);
            RandProg *rp = NULL;
            ax_acc a = randprog_build(cx, seed, NULL, &rp);
            ax_darray *dres[MAXOUT] = {0};
            ax_array *got[MAXOUT] = {0};
            int n = -1;
            char err[1024] = "";
            ax_mpi_program *pr = ax_mpi_compile(m, a);
            if (pr) n = ax_mpi_program_run(pr, NULL, 0, dres, MAXOUT);
            if (n < 0) snprintf(err, sizeof err, "%s", ax_mpi_error(m));
            for (int i = 0; i < n; i++)
                if (ax_mpi_gather(m, dres[i], 0, &got[i])) {
                    snprintf(err, sizeof err, "ax_mpi_gather: %s", ax_mpi_error(m));
                    n = -1;
                }
            int fail = 0;
            if (me == 0) {
                ax_array *want[MAXOUT] = {0};
                ax_ctx *rcx = NULL;
                RandProg *rrp = NULL;
                char rerr[1024] = "", msg[2200] = "";
                bool pl = false;
                int k = reference(cf->backend, seed, want, &rcx, &rrp, rerr, sizeof rerr, &pl);
                planned += pl;
                if (k < 0) {
                    fail = 1;
                    snprintf(msg, sizeof msg, "the single-process run failed: %s", rerr);
                } else if (n < 0) {
                    fail = 1;
                    snprintf(msg, sizeof msg, "the %d-rank run failed: %s", np, err);
                } else if (!randprog_compare(got, n, want, k, 1e-4, 1e-5, msg, sizeof msg)) {
                    fail = 1;
                }
                if (fail) {
                    fprintf(stderr, "%s, %d ranks: seed %llu: %s\n", cf->name, np, (unsigned long long)seed, msg);
                    if (reported++ < 3) fputs(randprog_describe(rp), stderr);
                }
                for (int i = 0; i < k; i++) ax_array_release(want[i]);
                randprog_free(rrp);
                ax_ctx_free(rcx);
            }
            MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
            bad += fail;
            runs++;
            for (int i = 0; i < MAXOUT; i++) {
                ax_darray_release(dres[i]);
                ax_array_release(got[i]);
            }
            ax_mpi_program_free(pr);
            randprog_free(rp);
            ax_ctx_reset(cx);
        }
        ax_mpi_free(m);
    }
    /* the sweep must reach what the planner makes (at least one program
     * in ten of the default 40 seeds' runs has a loop or an epilogue) */
    int few = me == 0 && nseeds >= 40 && planned * 10 < runs;
    MPI_Bcast(&few, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (me == 0) {
        printf("%d ranks: %d programs (%d with planner loops or epilogues in the single-process run), %d disagreed\n",
               np, runs, planned, bad);
        if (few) fprintf(stderr, "too few programs with planner loops or epilogues: %d of %d\n", planned, runs);
    }
    MPI_Finalize();
    return bad || few ? 1 : 0;
}
