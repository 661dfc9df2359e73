/*
 * libaxle_mpi's internals (axle_mpi.h is the interface).
 *
 * How a program runs on several ranks.  Every rank compiles the program
 * as ax_compile does (driver_optimise: sharing recovery, simplifier,
 * fusion) but without the planner (program.c says why), then
 *   - normalise.c  gives every operation operands that are variables
 *                  (let-binding nested ones) and rewrites unit, replicate
 *                  and slice into generate and backpermute;
 *   - localise.c   makes each operation's local form: the same operation
 *                  over this rank's rows (its iteration index made global
 *                  by the block's first row, the arrays it reads renamed
 *                  to fresh variables that the executor binds to what the
 *                  read needs: the rows of the iteration, the whole array,
 *                  the values fetched for reads at computed indices, a
 *                  block with its halo), and the small helper kernels the
 *                  distributed skeletons need (the inspector of fetched
 *                  indices, a combine of two partial results, a scan's
 *                  fix-up, a permute's (target, value) pairs);
 *   - every local form and helper is compiled at once by the local backend
 *     (the CPU backend, one kernel cache for all ranks and runs; or the
 *     interpreter);
 *   - exec.c walks the optimised program on every rank with the host walk
 *     every executor shares (runtime/host.c: lets, tuples, acond, awhile),
 *     and runs each operation: it decides from the operands' distributions
 *     (known alike on every rank) where the rows go, communicates what the
 *     operation needs (comm.c), binds the fresh variables and runs the
 *     local form through the local backend.
 * The files call in one direction, each only those below it:
 *   context.c     ax_mpi_new, ax_mpi_free (the context; frees what is left)
 *   program.c     ax_mpi_compile, ax_mpi_program_run (and normalise.c and
 *                 localise.c: the local forms, made with src/opt/rewrite.h)
 *   exec.c        the walk, one operation, the simple skeletons; with
 *                 exec_vec.c, exec_permute.c, exec_stencil.c (skeletons)
 *                 and exec_bind.c (an operation's reads and iteration)
 *   darray.c      distributed arrays
 *   comm_agree.c  agreements (every collective call's first and last step)
 *   comm_reduce.c reductions across ranks
 *   comm.c        every transfer, failure notices
 *   local.c       the local backend: a kernel of the container run on
 *                 this rank, fresh variables, a combine of two values
 *   dist.c        distributions
 *   fail.c        failures and notices
 * (To check it: `nm -u` on each object, the symbols another defines.)
 *
 * Every collective call begins with an agreement (comm_agree.c,
 * cm_agree_on): the ranks' arguments that must be alike are compared, so
 * that a call made differently fails at once on every rank; and ends with
 * one: a failure on one rank (signalled to the others at once, so that none
 * waits for it) fails the call on every rank.  Every wait for other ranks
 * is bounded (ax_mpi.timeout).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_MPI_INT_H
#define AX_MPI_INT_H

#include "axle_mpi.h"
#include "ir.h"
#include "hash.h"
#include "runtime/host.h"
#include "runtime/eval.h"
#include <time.h>

/* ------------------------------------------------------------ distributions (dist.c) */

/* How an array's outer dimension is spread over the ranks. */
typedef struct Dist {
    bool repl;                  /* every rank holds all of it */
    int rank;                   /* the array's rank */
    int64_t shape[AX_MAX_RANK]; /* its global extents */
    int64_t *off;               /* !repl: np + 1 row offsets: rank q holds rows
                                   off[q] .. off[q+1] (malloc'd) */
} Dist;

/* Elements per row (the inner extents' product; 1 for a vector). */
int64_t dist_rowsize(const Dist *d);
int64_t dist_size(const Dist *d);
/* d = blocks as even as possible (policy: see ax_mpi.skew) over rows. */
int dist_blocks(ax_mpi *m, Dist *d, int rank, const int64_t *shape);
int dist_repl(Dist *d, int rank, const int64_t *shape);
int dist_copy(Dist *dst, const Dist *src);
void dist_free(Dist *d);
bool dist_same_rows(const Dist *a, const Dist *b, int np);
/* The rank holding global row `row` of a block distribution. */
int dist_owner(const Dist *d, int np, int64_t row);

/* ------------------------------------------------------------ the context */

typedef struct MStat {
    const char *name;           /* the operation's API name (static) */
    int64_t runs, bytes_sent, bytes_recv, msgs_sent, msgs_recv, coll;
    double ms;
    char plan[96];
} MStat;

/* The buffers of an agreement (cm_agree) and of what follows it when it
 * fails, allocated apart from the context: a collective on ctl that timed
 * out stays pending in MPI, which may still write into them when the
 * missing ranks join it late, so they must outlive the context (cm_bury). */
enum { AGREE_WORDS = 9, AGREE_CHUNK = 64 };
typedef struct Pending {
    uint64_t v[AGREE_WORDS], w[AGREE_WORDS];        /* the agreement */
    uint64_t cv[2 * AGREE_CHUNK], cw[2 * AGREE_CHUNK]; /* which item differs */
    int have, every;                                /* every rank has the memory for the details */
    MPI_Comm dup;                                   /* a renewal's new exchange communicator */
    struct {
        int32_t st;
        char msg[AX_ERRMSG + 64];
    } fail;                                         /* the first failing rank's message */
} Pending;

struct ax_mpi {
    ax_ctx *cx;                 /* the local context (owned) */
    MPI_Comm work;              /* a duplicate of the caller's communicator: every exchange of a run */
    MPI_Comm ctl;               /* a duplicate: agreements only (and the source of work's renewals) */
    MPI_Comm rev;               /* work with the ranks reversed (right scans), or MPI_COMM_NULL */
    MPI_Comm node;              /* the ranks of this node (compile first on its rank 0) */
    int np, me;
    int tag;                    /* the next message tag (the same sequence on every rank) */
    bool rebalance, split_inputs;
    int64_t min_split;
    bool trace;                 /* AXLE_MPI_TRACE=1: each operation's decisions on stderr */
    double timeout;             /* seconds a transfer may wait for other ranks, twice that a wait
                                   on ctl (0: no limit; ax_mpi_options.timeout, AXLE_MPI_TIMEOUT,
                                   AX_MPI_TIMEOUT_DEFAULT) */
    Pending *agree;             /* the agreements' buffers (reused; NULL once broken) */
    bool broken;                /* a wait on ctl timed out or failed: the ranks are out of step,
                                   every later collective call fails at once (why says why) */
    char why[AX_ERRMSG];
    int skew;                   /* AXLE_MPI_BLOCKS=skew (tests): uneven blocks, rank 0's empty */
    bool serialized;            /* MPI_THREAD_SERIALIZED or more: a run may call MPI from a
                                   helper thread with a bigger stack (run_deep) */
    char err[AX_ERRMSG + 64];   /* the last failure, as every rank reports it */
    ax_status status;
    MPI_Request errreq;         /* the posted receive of a failure notice (cm_listen) */
    uint32_t epoch;             /* exchange communicators renewed so far (the same on
                                   every rank): a notice carries it (cm_notify) */
    char errbuf[AX_ERRMSG + 128];
    char **sent;                /* failure notices sent (buffers kept until freed) */
    int nsent;
    /* Memory that a transfer of a failed call may still write into (it
     * never finishes, but MPI may progress its parts): kept until
     * ax_mpi_free, never reused. */
    void **zomb;
    int nzomb;
    ax_array **zarr;
    int nzarr;
    /* the last run's statistics */
    MStat *stat;
    const struct MOp *statop;
    int nstat;
    ax_darray *darrays;         /* every distributed array alive */
    ax_mpi_program *programs;   /* every program alive */
};

/* Distributed arrays (darray.c): a new one over local (its reference
 * taken) with a copy of dist; its distribution; the list's next; free. */
ax_darray *mx_darray_new(ax_mpi *m, ax_array *local, const Dist *dist);
const Dist *mx_darray_dist(const ax_darray *d);
ax_darray *mx_darray_next(const ax_darray *d);
void mx_darray_free(ax_darray *d);

/* ------------------------------------------------------------ failures (fail.c) */

/* A failure of a call that does not communicate: m's error from the
 * local context's, which is then ready again. */
void mx_settle(ax_mpi *m);

/* Records a failure of this rank's part on the local context (first one
 * wins); returns -1. */
int mx_fail(ax_mpi *m, ax_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A notice (not an error): on rank 0 only, through ax_options.log. */
void mx_notice(ax_mpi *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ operations */

/* How an array an operation reads is bound for its local form. */
typedef enum RdCls {
    RD_ROW,     /* the rows of the iteration's block (operands; reads at the iteration's row) */
    RD_LIN,     /* the elements at the iteration block's linear positions */
    RD_FULL,    /* the whole array (gathered if distributed) */
    RD_SRC,     /* a fetch's source: not bound */
    RD_HALO,    /* a stencil's input: the block's rows with its halo */
    RD_ASIS,    /* the array as this rank holds it */
    RD_NONE     /* only its shape is read (through the meta array) */
} RdCls;

typedef struct MRead {
    int id, off;                /* the array read: variable id (and array of a tuple variable) */
    const Node *use;            /* or an embedded array (USE) */
    RdCls cls;
    int var;                    /* the fresh variable bound to it (-1: none) */
    int meta;                   /* meta entry of its global shape */
    const Type *type;           /* its array type */
    int kid;                    /* >= 0: the operation's operand kid (evaluated by the walk) */
} MRead;

/* A read at a computed index, served by a request/reply exchange. */
typedef struct MFetch {
    int src;                    /* the MRead of the array read */
    int var;                    /* fresh variable: the values, one per element of the iteration */
    int leaf;                   /* its index's first leaf in the inspector's result */
    bool lin;                   /* a position (ax_at_linear), not an index */
    const char *site;           /* "ax_at", "ax_at_linear", "ax_backpermute" */
} MFetch;

typedef enum MKind {
    MK_ELEM,      /* generate, map, zipWith, backpermute, transform: the iteration is the result */
    MK_FETCHBP,   /* backpermute/transform whose source is fetched: the result is the fetched values */
    MK_ROWS,      /* fold, fold1, segmented folds, scans of rank >= 2: each row local */
    MK_FOLDVEC,   /* fold of a vector: local fold1, a reduction, z */
    MK_SEGVEC,    /* segmented fold of a vector: segments moved whole */
    MK_SCANVEC,   /* scan of a vector: local scan, exscan, fix-up */
    MK_FILTER,
    MK_PERMUTE,
    MK_STENCIL,
    MK_RESHAPE,
    MK_COND,      /* an acond's condition */
    MK_WHOLE      /* run whole on every rank on gathered copies */
} MKind;

/* How the iteration space's global shape is found at run time. */
typedef enum IShape {
    IS_EXP,       /* gshape, evaluated on the host */
    IS_OPDS,      /* the intersection of the operands' shapes (map, zipWith, stencils) */
    IS_OPD0,      /* operand 0's shape (a manifest consumer input) */
    IS_NONE       /* rank 0, or no iteration (reshape) */
} IShape;

enum { MAXOPD = 4, MAXHELP = 8 };

typedef struct MOp {
    const Node *x;              /* the operation, in the program the walk runs */
    int index;                  /* its place in the program (statistics) */
    const char *name;           /* its API name */
    MKind kind;
    Node *lx;                   /* the local form (in the container), or NULL */
    int irank;                  /* the iteration's rank */
    IShape ishape;
    Node *gshape;               /* IS_EXP: the global shape, as a host expression */
    int opd[MAXOPD], nopd;      /* MReads of the manifest operands (in kid order) */
    int opdkid[MAXOPD];         /* their kids (the walk evaluates each once) */
    int main;                   /* MRead whose distribution the iteration prefers, or -1 */
    int meta, nmeta;            /* the meta variable ([i64]^1) and its entries */
    MRead *rd;
    int nrd, caprd;
    MFetch *fe;
    int nfe, capfe;
    Node *insp;                 /* the fetch indices (a generate over the iteration) */
    /* helpers (fresh variables they read) */
    Node *zk;                   /* rank-0 generate of z */
    Node *ck;                   /* zipWith f over two rank-0 arrays: ck_a, ck_b */
    int ck_a, ck_b;
    Node *fix;                  /* scans: the fix-up of the local scan (reads fix_in, carry) */
    int fix_in, carry;
    Node *tv;                   /* permute: (target, value) of each source element */
    Node *own;                  /* permute: the owner's combine (own_d, own_t, own_v) */
    int own_d, own_t, own_v;
    int pinit;                  /* permute: the defaults bound for the local combine (reduce mode) */
    /* reductions by a built-in MPI operator: per leaf the primitive (all alike) */
    bool builtin;
    Prim redprim;
    bool has_z;
    int halo;                   /* stencils: rows of halo */
    bool right, excl;           /* scans: from the right; scanl'/scanr' */
    const char *why;            /* MK_WHOLE: the reason */
    ax_scalar iota;             /* a filter of positions converted to this type (its
                                   predicate reads at them), or AX_NSCALAR */
} MOp;

/* The meta array's fixed entries: the iteration block's first row and
 * first linear position, then its local extents. */
enum { META_OFF = 0, META_OFFLIN = 1, META_SHAPE = 2 };

struct ax_mpi_program {
    ax_mpi *m;
    ax_mpi_program *prev, *next; /* m's list */
    uint64_t hash;              /* the program's structure (agreed at compile, checked at each run) */
    Program *p;                 /* the optimised, normalised program the walk runs */
    Program box;                /* the container: every local form and helper, for the backend */
    const Backend *be;          /* the local backend: backend_cpu or backend_interp */
    void *state;                /* its prepare's */
    MOp *ops;
    int nops, capops;
    HMap opmap;                 /* node -> index in ops */
    Liveness *live;             /* liveness_counts(p) */
    int64_t depth;
    ax_array **held;            /* arrays the program embeds (a reference each) */
    ax_darray **dheld;          /* distributed arrays it embeds, by held index (or NULL) */
    int nheld;
    Node **uses;                /* every USE node */
    int nuse;
    struct { Node *x; ax_array *place; } *puse;   /* parameter placeholders (USE nodes) */
    int npuse;
    int nparams;
    const ax_array **pdecl;
    ax_stats stats;
};

/* normalise.c, localise.c: the program's local forms (on pr->p); 0, or -1
 * with an error on the context. */
int mx_normalise(ax_mpi_program *pr);
int mx_localise(ax_mpi_program *pr);
MOp *mx_op(const ax_mpi_program *pr, const Node *x);

/* ------------------------------------------------------------ a run */

typedef struct MBind {          /* per fresh variable: what it is bound to */
    ax_array *cell;             /* the array (aenv points here) */
} MBind;

typedef struct DRec {
    const ax_array *a;
    Dist d;
} DRec;

typedef struct MRun {
    ax_mpi *m;
    ax_mpi_program *pr;
    ax_ctx *cx;
    Host h;
    InterpEval *ie;             /* host expressions, and the interp's local runs */
    ax_array **cells;           /* per variable id: the fresh variables' arrays */
    HMap dmap;                  /* array -> DRec index */
    DRec *drec;
    int ndrec, capdrec;
    MStat *cur;                 /* the statistics of the operation running */
    MStat *stat;                /* per MOp */
    bool failed;                /* this rank failed (notified the others) */
    char cberr[AX_ERRMSG];      /* an error inside an MPI callback */
    ax_status cbst;
} MRun;

/* Milliseconds of the monotonic clock (the statistics, the traces). */
static inline double mx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ the local backend (local.c) */

/* Runs a node of the container with the local backend. */
int mx_local(MRun *r, const Node *x, ax_array **out);
/* Binds / unbinds a fresh variable (a reference is taken / dropped). */
void mx_bind(MRun *r, int var, ax_array *a);
void mx_unbind(MRun *r, int var);
/* An owned array of the local context. */
ax_array *mx_array(MRun *r, const Type *elt, int rank, const int64_t *shape, bool zero);
/* Bytes of one element of component c; element bytes in all. */
size_t mx_leaf_size(const Type *elt, int c);
size_t mx_elt_size(const Type *elt);
/* A rank-0 array holding the leaves v. */
ax_array *mx_scalar_array(MRun *r, const Type *elt, const Scalar *v);
/* The leaves of element i of a. */
void mx_leaves_of(const ax_array *a, int64_t i, Scalar *v);
/* The combine kernel o->ck applied to a and b (leaves of elt) into out. */
int mx_combine(MRun *r, MOp *o, const Type *elt, const Scalar *a, const Scalar *b, Scalar *out);
/* A run of a rank-0 helper (a fold's z, a condition): its leaves. */
int mx_run0(MRun *r, const Node *g, Scalar *out);

/* ------------------------------------------------------------ the executor (exec.c) */

/* The walk (ax_mpi_program_run's body); the result count or -1. */
int mx_run(ax_mpi_program *pr, ax_darray *const *args, int nargs, ax_darray **out, int max);

/* ------------------------------------------------------------ communication (comm.c, comm_agree.c, comm_reduce.c) */

typedef struct Range {
    int64_t lo, hi;             /* global linear positions [lo, hi) */
} Range;

typedef struct Ranges {
    Range *v;
    int n, cap;
} Ranges;
int ranges_add(Ranges *r, int64_t lo, int64_t hi);

/* The positions rank q wants (appended to out, in the order its
 * destination holds them); -1 when memory runs out. */
typedef int (*WantFn)(void *arg, int q, Ranges *out);

/* Moves elements: every rank q receives, in order, the elements at the
 * positions want(q) gives, from whichever ranks hold them in src's
 * distribution (local ones copied), into dst (allocated by the caller,
 * elements enough).  Point-to-point, only the bytes that must move. */
int cm_move(MRun *r, const Dist *src, ax_array *local, WantFn want, void *arg, ax_array *dst, int64_t dstoff);
/* The whole array on every rank (MPI_Allgatherv per component). */
int cm_allgather(MRun *r, const Dist *src, ax_array *local, ax_array *full);
/* Each rank's value, every rank's in all[np]. */
int cm_allgather_i64(MRun *r, int64_t mine, int64_t *all);
/* Request/reply (MPI_Alltoallv): dst[i] = the element at global linear
 * position pos[i] of the array (src, local); pos[i] < 0 leaves dst[i]
 * zero.  Each position is requested once. */
int cm_fetch(MRun *r, const Dist *src, ax_array *local, const int64_t *pos, int64_t n, ax_array *dst);
/* Packed records to other ranks: cnt[q] records of rec bytes for rank q
 * (in q order, in buf, which the call takes over); the received ones
 * (from every rank in rank order, this rank's own included) in *out
 * (malloc'd), their number in *nout, how many from each rank in rcount
 * (np entries; may be NULL). */
int cm_exchange(MRun *r, char *buf, const int64_t *cnt, size_t rec, char **out, int64_t *nout, int64_t *rcount);

/* A reduction of one element per rank (leaves w, values as Scalar): into
 * out on every rank (has: some rank had one).  exscan: rank q gets the
 * combination of ranks before it (after it, with reverse).  o's ck
 * combines (unless o->builtin). */
int cm_reduce(MRun *r, MOp *o, const Type *elt, const Scalar *mine, bool has, bool exscan, bool reverse,
              Scalar *out, bool *outhas);
/* Every element of a whole array combined across ranks (a private
 * permute's copies: o->builtin). */
int cm_allreduce_array(MRun *r, MOp *o, ax_array *a);

/* After a failed wait: p (malloc'd) or a (a reference is taken) stays
 * allocated until ax_mpi_free (see ax_mpi.zomb). */
void cm_keep(ax_mpi *m, void *p);
void cm_keep_array(ax_mpi *m, ax_array *a);

/* What an agreement checks besides success: values every rank must give
 * alike (a root, an argument's distribution and extents, an option), and
 * how to name them when they differ: "<name>[ <dim>][ of <of>[ <k>]]: <value
 * on some ranks>; <another value on others>". */
typedef enum AgShow {
    AG_INT,                     /* a number */
    AG_ROOT,                    /* a root: a rank, or every rank (-1) */
    AG_BOOL,
    AG_DIST,                    /* 1: replicated, 0: distributed in blocks of rows */
    AG_TYPE,                    /* a hash of the element type .type (shown as the type) */
    AG_HASH                     /* a hash: the ranks are grouped, no value shown */
} AgShow;
typedef struct AgItem {
    uint64_t v;
    AgShow show;
    const char *name;           /* "the root", "the distribution", "extent" (static) */
    int dim;                    /* a dimension after the name, or -1 */
    const char *of;             /* whose it is: "parameter", "the array" (static), or NULL */
    int k;                      /* a number after of, or -1 */
    const Type *type;           /* AG_TYPE */
} AgItem;
/* Items of an array with distribution d and this rank's block local (NULL:
 * unknown, when the argument was bad; the ranks fail then anyway): element
 * type, dimensions, replicated or not, global extents and row blocks.
 * Appends AG_PER_ARRAY items at it; returns it + AG_PER_ARRAY. */
enum { AG_PER_ARRAY = 4 + AX_MAX_RANK };
AgItem *cm_items_array(ax_mpi *m, AgItem *it, const Dist *d, const ax_array *local, const char *of, int k);

/* Waits for n requests, watching for another rank's failure notice. */
int cm_wait(MRun *r, MPI_Request *req, int n);
/* This rank failed: tell every other rank (once). */
void cm_notify(MRun *r);
/* The end of a collective call: 0 when every rank succeeded, else -1 with
 * the first failing rank's message on every rank (m->err).  ok: this
 * rank's outcome; hash: must be equal on every rank (0: not checked). */
int cm_agree(ax_mpi *m, bool ok, uint64_t hash, const char *what);
/* As cm_agree, and the n items must be equal on every rank too (AX_ERR_ARG
 * naming the first that differs, and which ranks gave what).  Also fails
 * when the ranks are in different calls (what differs; this first, as
 * what explains the rest) or, after twice m->timeout seconds, when some
 * rank never joins (m->broken).  A failure of some rank wins over a
 * difference in the arguments. */
int cm_agree_on(ax_mpi *m, bool ok, uint64_t hash, const AgItem *it, int n, const char *what);
/* Waits for a collective request at most limit seconds (0: no limit),
 * watching nothing else: 0, -1 once the time is out, or MPI's error. */
int cm_wait_limit(double limit, MPI_Request *rq);
/* A collective on ctl or node begun with result e, waited for at most
 * twice m->timeout (every rank has agreed to make it, or is about to):
 * 0, or -1 with the context broken (m->why names step). */
int cm_wait_ctl(ax_mpi *m, int e, MPI_Request *rq, const char *step);
/* Keeps p (malloc'd memory that a request which may never finish can
 * still write into) allocated for the life of the process, reachable. */
void cm_bury(void *p);
/* The seconds a transfer may wait by default (axle_mpi.h): a call's
 * agreement waits twice that. */
#define AX_MPI_TIMEOUT_DEFAULT 900.0
int cm_next_tag(ax_mpi *m);
/* free(p), or kept (cm_keep) when a transfer may still use it. */
void cm_drop(ax_mpi *m, void *p, bool pending);
/* MPI's error code as this rank's failure: -1. */
int cm_mpi_failed(MRun *r, int code, const char *what);
/* Counts a collective's bytes in the operation's statistics. */
void cm_count_coll(MRun *r, int64_t sent, int64_t recv);
/* Posts the receive of another rank's failure notice on the exchange
 * communicator (ax_mpi_new, and after each renewal). */
void cm_listen(ax_mpi *m);

/* ------------------------------------------------------------ one operation (exec_bind.c; the skeletons) */

/* The distribution of an array of the run (replicated when unknown). */
const Dist *mx_dist(MRun *r, const ax_array *a, Dist *tmp);
int mx_set_dist(MRun *r, const ax_array *a, const Dist *d);

typedef struct OpRun {
    MOp *o;
    ax_array **arr;             /* per MRead: the array read (a reference) */
    Dist *dist;                 /* per MRead: its distribution */
    ax_array *meta;
    int64_t *mv;
    Dist di;                    /* the iteration's rows */
    int64_t ish[AX_MAX_RANK];   /* the iteration's global extents */
    int64_t lo, hi;             /* this rank's rows of it */
    int *bound;                 /* fresh variables bound */
    int nbound;
} OpRun;

/* Binds a fresh variable for the operation (unbound by exec_op_end). */
void exec_bind(MRun *r, OpRun *u, int var, ax_array *a);
/* The operation's end: its variables unbound, what it held released. */
void exec_op_end(MRun *r, OpRun *u);
/* A view of n elements of a from element first, as an array of the rank
 * and shape given (it borrows a's buffers: a outlives it). */
ax_array *exec_view(MRun *r, ax_array *a, int64_t first, int rank, const int64_t *shape);
/* Rows [lo, hi) of the iteration (clipped to the array's rows) wanted by rank q. */
typedef struct RowWant {
    const Dist *di;             /* the iteration's rows (NULL: repl: every row) */
    int64_t n, rs;              /* the array's rows and row size */
    int lin;                    /* positions: rows of the iteration times its row size */
    int64_t irs;
    bool all;
} RowWant;
int exec_row_want(void *arg, int q, Ranges *out);
/* The array of read i bound to the iteration's rows (or positions). */
int exec_bind_rows(MRun *r, OpRun *u, int i, bool lin);
/* The whole of read i (gathered when distributed). */
int exec_bind_full(MRun *r, OpRun *u, int i);
/* Evaluates a host expression (a global shape) with the operation's
 * variables bound: leaves into out. */
int exec_host_exp(MRun *r, const Node *e, Scalar *out);
/* The iteration's rows (u->di), and this rank's of them (u->lo, u->hi,
 * the meta array's entries). */
int exec_choose_rows(MRun *r, OpRun *u, bool whole);
void exec_set_rows(MRun *r, OpRun *u);
/* The inspector's indices, the values fetched, each bound for the local
 * form (the first one's values in *firstval, when not NULL). */
int exec_fetches(MRun *r, OpRun *u, ax_array **firstval);
/* The distribution of a result of the iteration's rows; of a replicated
 * one. */
int exec_result_rows(MRun *r, OpRun *u, ax_array *res, int64_t rows);
int exec_set_repl(MRun *r, ax_array *a);

/* The skeletons (exec_vec.c, exec_permute.c, exec_stencil.c): 0 with the
 * operation's results in out, or -1. */
int exec_foldvec(MRun *r, OpRun *u, ax_array **out);
int exec_scanvec(MRun *r, OpRun *u, ax_array **out);
int exec_segvec(MRun *r, OpRun *u, ax_array **out);
int exec_filter(MRun *r, OpRun *u, ax_array **out);
int exec_permute(MRun *r, OpRun *u, ax_array **out);
int exec_stencil(MRun *r, OpRun *u, ax_array **out);

#endif
