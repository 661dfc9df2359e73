/*
 * The array level of a program, walked on the host: lets, array tuples and
 * projections, acond, awhile and array variables are the same for every
 * executor, so they are walked here once; each executor (the reference
 * interpreter, the CPU backend) supplies how to run one array operation and
 * how to evaluate an acond's condition.
 *
 * The walk also releases the arrays of lets and of an awhile's state (the
 * body's parameter) after their last read, each array of a tuple on its
 * own (liveness.c): a read through an AVAR (or an APROJ of one) the walk
 * evaluates counts when it is evaluated, reads from an operation's scalar
 * code, shapes and embedded (delayed) operands when the operation is
 * done.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_HOST_H
#define AX_HOST_H
#include "hash.h"
#include "ir.h"

typedef struct Host Host;

/* The families of array operations: an executor of generated kernels
 * has one method per family (HostOps.method), and a code generator one
 * skeleton (backend/cgen/cgen.h cg_emit_skeleton).  host_family is the
 * one table from Op to family. */
typedef enum HostFamily {
    HOST_NONE,        /* not an operation an executor runs: the walk's own
                         forms (above, and acond), scalar code, DELAYED */
    HOST_UNIT,        /* unit: its value */
    HOST_PRODUCER,    /* generate, map, zipWith, backpermute, transform,
                         replicate, slice, reshape */
    HOST_FOLD,        /* fold, fold1 */
    HOST_FOLDSEG,     /* the segmented folds */
    HOST_SCAN,        /* the six scans */
    HOST_PERMUTE,
    HOST_STENCIL,     /* stencil, stencil2 */
    HOST_FILTER,
    HOST_LOOP,        /* the planner's multi-generator loops */
    HOST_SORT,        /* sort: the CPU's executor runs runtime/sort.c over
                         its operands' buffers; the GPU's has kernels */
    HOST_NFAMILY
} HostFamily;
HostFamily host_family(Op op);

typedef struct HostOps {
    const char *name;   /* the executor, in messages ("interp", "cpu") */
    /* Runs array operation x (anything but the forms above) into out. */
    int (*op)(Host *h, const Node *x, ax_array **out);
    /* An acond's condition (x->kid[0]) into *c. */
    int (*cond)(Host *h, const Node *x, bool *c);
    /* Whether a DELAYED operand is code inside its consumer (CPU) rather
     * than an array the walk evaluates (interpreter). */
    bool embeds_delayed;
    /* Executors of generated kernels (CPU, GPU): the method of each family,
     * which runs operation x whose operands and parameters the executor's
     * op prepared into its own per-operation state `o` (host_run_method
     * calls it).  Zero where op runs every operation itself (the
     * interpreter, the MPI executor). */
    int (*method[HOST_NFAMILY])(Host *h, const Node *x, void *o);
} HostOps;

/* The array variables each operation's scalar code reads (drop_reads in
 * host.c), found once per run rather than once per loop step: node ->
 * start << 32 | end, the reads being ids[start, end) in threes (variable,
 * first leaf, leaves). */
typedef struct HostMemo {
    HMap reads;
    int *ids;
    int nids, ids_cap;
} HostMemo;

struct Host {
    const HostOps *ops;
    void *self;           /* the executor's state */
    ax_ctx *cx;
    int nvars;
    ax_array ***aenv;     /* per array variable: its arrays (the executor reads it too) */
    const Liveness *live; /* liveness_counts, or NULL: release at scope end */
    int *left;            /* per leaf of a binder (live->first): reads left */
    /* drop_reads' table, made by host_init and shared by the copies of
     * h that run one operation with another executor (interp_run_op);
     * NULL: walk the code each time */
    HostMemo *memo;
};

/* Sets h up for program p (aenv and the counters allocated here); false
 * (with AX_ERR_NOMEM on cx) when out of memory. */
bool host_init(Host *h, const HostOps *ops, void *self, ax_ctx *cx, const Program *p, const Liveness *live);
void host_free(Host *h);

/* Runs array operation x with the method of its family (HostOps.method)
 * on the executor's per-operation state o; a malformed program when it
 * has none. */
int host_run_method(Host *h, const Node *x, void *o);

/* Evaluates an array term into out (host_width(x->type) new references). */
int host_eval(Host *h, const Node *x, ax_array **out);
/* One array (x of array type) into *a. */
int host_eval1(Host *h, const Node *x, ax_array **a);

/* Runs p on host backend hb (the CPU's, else the interpreter) after a run
 * returned AXB_RERUN_ON_HOST: its results are dropped and its error
 * stands; when it runs without one, the device's message stands with
 * "that the <hb> backend does not reproduce" added.  Always -1. */
int host_rerun(ax_ctx *cx, Program *p, const Backend *hb);

/* Failures, recorded on the context; all return -1. */
int host_fail(Host *h, ax_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A program the verifier should have refused: never a user error. */
int host_malformed(Host *h, const Node *x, const char *what);
int host_nomem(Host *h);
/* 0, or -1 with AX_ERR_CANCELLED when ax_options.cancel says stop: asked
 * before each array operation and each awhile iteration. */
int host_cancelled(Host *h);

/* Segment offsets from nseg lengths of scalar type s (off: nseg + 1
 * entries), checked as the interpreter checks them, with its messages:
 * 0, or -1 with an error. */
int host_seg_offsets(Host *h, const char *what, const void *lens, ax_scalar s, int64_t nseg, int64_t n, int64_t *off);
/* What an executor holds of one operation's operands and scalar
 * arguments, read through its own functions: operand i's rank and shape,
 * and leaf `leaf` of the value of the operation's kid `kid`. */
typedef struct HostOperands {
    int n;
    void *arg;
    int (*rank)(void *arg, int i);
    const int64_t *(*shape)(void *arg, int i);
    int64_t (*val)(void *arg, int kid, int leaf);
} HostOperands;
/* The shape of a producer's result (generate, backpermute, transform,
 * map, zip_with, reshape, replicate, slice) into sh, with the
 * interpreter's faults.  *linear: the kernel may index the operands
 * linearly (each has the result's shape; a reshape always).  The CPU and
 * GPU executors share it.  0, or -1 with the fault on h. */
int host_producer_shape(Host *h, const Node *x, const HostOperands *o, int64_t *sh, bool *linear);
/* The public name of an operation ("ax_fold"), for run-time messages. */
const char *host_api_name(Op op);
/* Writes "i,j,k" into buf. */
void host_fmt_ints(char *buf, size_t size, int n, const int64_t *v);
/* Arrays in an array (tuple) type; the first of component i; releases n. */
int host_width(const Type *t);
int host_offset(const Type *t, int i);
void host_release(ax_array **v, int n);
#endif
