/*
 * axle over MPI (libaxle_mpi): one axle program run by every process of an
 * MPI communicator, its arrays distributed over the processes.
 *
 * A program built with axle.h runs unchanged: every process (rank) builds
 * the same computation in its distributed context's ax_ctx (SPMD: the
 * same program text started by `mpirun -np N ./program`), embeds its
 * distributed arrays with ax_mpi_use, and calls ax_mpi_run, which runs the
 * program on every rank together.  libaxle_mpi contains libaxle: link it
 * instead of libaxle (mpicc prog.c -laxle_mpi).  It is built only where
 * MPI is found; libaxle itself never depends on MPI.
 *
 * Distribution.  An array of rank >= 1 is distributed by its outer
 * dimension: each rank holds a block of consecutive rows (any number,
 * none included), rank 0 the first rows; every rank knows every rank's
 * block.  An array may also be replicated: every rank holds all of it
 * (rank-0 arrays always are).  Each operation of the optimised program
 * runs on every rank over its own rows, through the local backend (the
 * CPU backend's fused kernels, or the interpreter), and communicates only
 * where its meaning needs data of another rank:
 *   - element-wise operations (map, zipWith, generate, and every producer
 *     fused into a consumer) read their operands at their own rows: no
 *     communication, once the operands' blocks line up (rows that do not,
 *     as when two arrays of different lengths meet, move to the rank that
 *     needs them, and only those rows);
 *   - folds along the inner dimension of an array of rank >= 2 and
 *     segmented folds along it are local; a fold of a vector (ax_fold_all)
 *     is a local fold and one MPI_Allreduce (an order-preserving one,
 *     MPI_Op_create with commute = 0, when the operator is not one of
 *     add, mul, min, max, and, or, band, bor on integers or add, mul on
 *     floats);
 *   - scans of vectors are a local scan, an MPI_Exscan of the blocks'
 *     totals and a local fix-up; a segmented fold of a vector moves the
 *     source so that each rank holds its segments whole;
 *   - stencils exchange their halo: the neighbouring rows the stencil's
 *     size reaches, with the boundary rule applied at the array's edges;
 *   - a read at a computed index (ax_backpermute, ax_at in fused code) is
 *     a request/reply exchange (MPI_Alltoallv) of the elements a rank
 *     needs from other ranks, when the index does not depend on data read
 *     the same way and the operation's result is not of higher rank than
 *     the array read; otherwise the array is gathered whole on every rank;
 *   - ax_permute sends (target, value) pairs to the ranks that own the
 *     targets and combines them there; when the operator is one of the
 *     reductions above and the target is small against the source (a
 *     histogram), each rank combines into a private copy and one
 *     MPI_Allreduce adds them up;
 *   - ax_filter is local (its result's blocks are each rank's survivors;
 *     rebalanced to even blocks only with ax_mpi_options.rebalance);
 *   - ax_acond and ax_awhile conditions are computed from replicated
 *     values (results of reductions), so every rank takes the same branch.
 * An operation that cannot be distributed yet runs whole on every rank, on
 * gathered copies of its inputs, and says so once (a notice, see
 * ax_options.log): never a wrong result.
 *
 * Collective calls: every function below marked "collective" must be
 * called by every rank of the communicator, in the same order, with the
 * same program and the same arguments where they are global: the root of
 * ax_mpi_scatter and ax_mpi_gather, and the distribution of every
 * distributed array given (replicated or in blocks, its global extents,
 * its row blocks).  Each call begins with the ranks' agreement on these
 * (one small MPI_Allreduce), so that a difference fails the call at once
 * on every rank, AX_ERR_ARG, with a message naming what differs and which
 * rank gave what ("ax_mpi_gather: the ranks disagree on the root: 0 on
 * ranks 0, 2; 1 on rank 1 ..."; ranks in different calls are told which:
 * "the ranks are in different collective calls: ax_mpi_gather on rank 0;
 * ax_mpi_scatter on rank 1 ...").  The options that decide how the ranks
 * communicate are agreed on by ax_mpi_new alike.  What no agreement can
 * see (a rank that never makes the call, ranks whose replicated inputs
 * differ in value and so take different branches) ends with a timeout: a
 * transfer of a run waits at most ax_mpi_options.timeout seconds for
 * another rank (15 minutes by default), and the agreement at the start
 * and end of every call twice that (30 minutes: time for one rank to read
 * its input, or to compute much longer than the others, while they wait;
 * twice, so that a rank whose transfer timed out still finds the others
 * there).  AXLE_MPI_TIMEOUT=S sets it, AXLE_MPI_TIMEOUT=0 turns it off.
 * A transfer that timed out fails the call on every rank, naming the rank
 * that waited, and the context stays usable; an agreement that timed out
 * fails the call on the ranks that waited, and their context then fails
 * every later collective call at once (its ranks are out of step: free
 * it, and end the job or make a new context).
 * Errors.  A failure on any rank (an index out of bounds on one rank's
 * rows, a compiler error, out of memory) makes the collective call fail on
 * every rank with the same message (naming the rank it happened on), and
 * the context stays usable; nothing aborts the processes.
 *
 * Floating point: a fold or scan of floats combines the ranks' partial
 * results in rank order, so its result differs from one process's by the
 * reassociation the CPU backend already allows (axle.h, ax_fold); every
 * rank gets the same bits.
 *
 * Threads: each rank's CPU backend uses AXLE_THREADS or ax_options.threads
 * threads; by default the node's cores divided by the ranks on the node.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AXLE_MPI_H
#define AXLE_MPI_H

#include <mpi.h>
#include "axle.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#endif

/* A distributed context: a local axle context (ax_mpi_ctx) on each rank
 * and the communicator the ranks share. */
typedef struct ax_mpi ax_mpi;
/* A distributed array: this rank's block of rows of a global array, or a
 * replicated array. */
typedef struct ax_darray ax_darray;

typedef struct ax_mpi_options {
    /* The local context's options (NULL: defaults and environment).  The
     * backend must be cpu (the default) or interp. */
    const ax_options *axle;
    /* true: after ax_filter, move elements so that the ranks hold blocks
     * of equal size (default: each rank keeps what survived of its rows). */
    bool rebalance;
    /* true: an array embedded with plain ax_use (the same on every rank)
     * of rank >= 1 is treated as distributed: each rank computes on its
     * own block of it, taken without communication (AXLE_MPI_SPLIT=1). */
    bool split_inputs;
    /* An operation that reads no distributed array (a generate of
     * constants) computes its result whole on every rank when it has
     * fewer elements than this, and in blocks otherwise.  0: the default,
     * 65536 (AXLE_MPI_MIN_SPLIT); a negative value: always in blocks. */
    int64_t min_split;
    /* Seconds a transfer of a run waits for another rank before the call
     * fails; the agreement at the start and end of each collective call
     * waits twice that (see "Collective calls" above).  0: the default,
     * AXLE_MPI_TIMEOUT when set (AXLE_MPI_TIMEOUT=0: no limit), else 900
     * (15 minutes, 30 at the agreements); a negative value: no limit.  A
     * malformed AXLE_MPI_TIMEOUT is ignored with a notice, as the local
     * context's variables (an error on every rank with ax_options.strict). */
    double timeout;
} ax_mpi_options;

/* Collective.  A distributed context over comm (which the caller keeps:
 * axle communicates on its own duplicates of it, under MPI_ERRORS_RETURN,
 * so that no error of MPI in axle ends the job through comm's error
 * handler; comm's own handler is set to MPI_ERRORS_RETURN while it is
 * duplicated, then put back).  comm must be an intra-communicator, not
 * MPI_COMM_NULL (a process outside a group calls nothing).  MPI must be initialised,
 * MPI_THREAD_FUNNELED at least when the CPU backend runs several threads,
 * and MPI_THREAD_SERIALIZED for programs nested deeper than the calling
 * thread's stack holds, which run on a helper thread with a bigger stack
 * that calls MPI while the caller waits; below that level such a run
 * fails with AX_ERR_ARG saying so).
 * opt may be NULL.  NULL, with a line on stderr saying why ("axle:
 * ax_mpi_new: ..."; there is no context to hold the message), when MPI is
 * not initialised, comm is MPI_COMM_NULL or an inter-communicator, MPI
 * cannot duplicate it, memory runs out, a rank waited longer than the
 * timeout for the others, or the ranks' options differ (then on every
 * rank). */
ax_mpi *ax_mpi_new(MPI_Comm comm, const ax_mpi_options *opt);
/* Collective.  Frees the context, its local ax_ctx, and every distributed
 * array and program made in it. */
void ax_mpi_free(ax_mpi *m);
/* The local context: build terms in it (ax_use, ax_map, ...), read its
 * arrays.  Owned by m. */
ax_ctx *ax_mpi_ctx(ax_mpi *m);
int ax_mpi_rank(const ax_mpi *m);
int ax_mpi_size(const ax_mpi *m);
/* The last failure of a collective call (the same text on every rank),
 * or "" after a success. */
const char *ax_mpi_error(const ax_mpi *m);
ax_status ax_mpi_status(const ax_mpi *m);

/* Distributed arrays.  Each constructor returns a new reference (release
 * it with ax_darray_release) or NULL with ax_mpi_error set (every rank
 * fails alike).  Arrays given are read, not kept. */

/* Collective: block holds this rank's rows (its first extent is the
 * number of rows, any number, 0 included); every rank's block has the same
 * element type, rank and inner extents.  The global array is the blocks
 * in rank order.  block is copied. */
ax_darray *ax_mpi_from_block(ax_mpi *m, ax_array *block);
/* Collective: a (significant on rank root only) is sent out in blocks of
 * rows as even as possible. */
ax_darray *ax_mpi_scatter(ax_mpi *m, int root, ax_array *a);
/* No communication: every rank holds the same array a; each keeps its
 * block of it (as ax_mpi_scatter would give). */
ax_darray *ax_mpi_split(ax_mpi *m, ax_array *a);
/* No communication: every rank holds the same array a, which stays whole
 * (a replicated array; a is referenced, not copied). */
ax_darray *ax_mpi_replicated(ax_mpi *m, ax_array *a);
/* Collective: the whole array on rank root (root < 0: on every rank) as a
 * new array of the local context in *out; other ranks get NULL.  0, or -1
 * with ax_mpi_error set. */
int ax_mpi_gather(ax_mpi *m, ax_darray *d, int root, ax_array **out);

/* This rank's block (borrowed: valid while d is): its first extent is the
 * number of rows held, the others the global array's.  A replicated
 * array's is all of it. */
ax_array *ax_darray_local(const ax_darray *d);
/* The global array's rank and extents (rank entries, outermost first). */
int ax_darray_rank(const ax_darray *d);
const int64_t *ax_darray_shape(const ax_darray *d);
/* The global row index of this rank's first row (0 when replicated), and
 * whether the array is replicated. */
int64_t ax_darray_first_row(const ax_darray *d);
bool ax_darray_replicated(const ax_darray *d);
ax_darray *ax_darray_retain(ax_darray *d);
void ax_darray_release(ax_darray *d);

/* Embeds a distributed array in a computation built in ax_mpi_ctx(m) (the
 * distributed counterpart of ax_use: it reads the array when the program
 * runs).  d must still be alive when the computation is compiled
 * (ax_mpi_run, ax_mpi_compile), which then keeps it as long as the
 * program.  A computation may mix it with plain ax_use arrays, which
 * every rank must hold alike (replicated; with split_inputs, split). */
ax_acc ax_mpi_use(ax_mpi *m, ax_darray *d);

/* Running.  Collective: every rank compiles and runs the same
 * computation; the results are distributed arrays (each rank's blocks).
 * ax_mpi_run returns a new reference or NULL; ax_mpi_run_n as ax_run_n. */
ax_darray *ax_mpi_run(ax_mpi *m, ax_acc a);
int ax_mpi_run_n(ax_mpi *m, ax_acc a, ax_darray **out, int max);

/* Compile once, run many (as ax_compile).  Collective. */
typedef struct ax_mpi_program ax_mpi_program;
ax_mpi_program *ax_mpi_compile(ax_mpi *m, ax_acc a);
/* Runs it with its parameters (ax_param) given as distributed arrays
 * (ax_mpi_replicated for an array every rank holds whole); as
 * ax_program_run_with.  Collective. */
int ax_mpi_program_run(ax_mpi_program *p, ax_darray *const *args, int nargs, ax_darray **out, int max);
void ax_mpi_program_free(ax_mpi_program *p);

/* Communication of the last run on this rank, per operation of the
 * program (in the order of the program), with AXLE_DEBUG=comm also
 * printed by each rank on stderr after each run.  Bytes count element
 * data and indices, this rank's share: what it sent to and received from
 * other ranks.  Messages count point-to-point transfers with another rank
 * (a halo row block, a reply), collectives the collective calls
 * (MPI_Allreduce, MPI_Exscan, MPI_Allgatherv, MPI_Alltoallv, ...), each
 * once per call; both count only transfers with other ranks. */
typedef struct ax_mpi_opstat {
    int index;                 /* the operation's place in the program */
    const char *name;          /* its API name ("ax_fold") */
    const char *plan;          /* how it ran ("local", "local + allreduce", "halo 1 row", ...) */
    int64_t runs;              /* times it ran (an awhile body runs many times) */
    int64_t bytes_sent, bytes_recv;
    int64_t msgs_sent, msgs_recv;
    int64_t collectives;
    double ms;                 /* wall time, communication included */
} ax_mpi_opstat;
/* Writes up to max entries; returns the number of operations. */
int ax_mpi_stats(const ax_mpi *m, ax_mpi_opstat *out, int max);

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* AXLE_MPI_H */
