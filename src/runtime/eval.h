/*
 * The scalar evaluator of the reference interpreter: a scalar expression
 * (an element of the scalar stratum: constants, variables, lets, tuples,
 * primitives, conditionals, while loops, reads of arrays at an index)
 * evaluated on the host, exactly as the interpreter defines it
 * (eval.c).  Every executor that must compute a scalar on the host uses
 * it: the host walk's and the GPU executor's scalar parameters (shapes,
 * fold's z, an acond's condition), the MPI executor's; the interpreter's
 * array operations (src/backend/interp) apply their functions with it.
 *
 * Two faces: InterpEval (the first section) for an executor with its own
 * array environment; the interpreter's state and the evaluator's entry
 * points (the second) for the interpreter's array operations, which share
 * that state.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_EVAL_H
#define AX_EVAL_H

#include "ir.h"
#include "runtime/host.h"
#include <string.h>

/* ------------------------------------------------------------ for an executor */

/* The interpreter on one scalar expression with no free scalar
 * variables, its array variables looked up in aenv (nvars of them;
 * borrowed: the caller's executor keeps it current): the GPU backends'
 * host-side scalar parameters, the MPI executor's host expressions.  (The
 * names are the interpreter's still, as before the evaluator had a file
 * of its own; src/core/ir.h declared them.) */
typedef struct InterpEval InterpEval;
/* NULL with AX_ERR_NOMEM on cx when memory is lacking. */
InterpEval *interp_eval_new(ax_ctx *cx, int nvars, ax_array ***aenv);
/* e (an element-typed expression) into out (e->type->width leaves): 0,
 * or -1 with an error on the context. */
int interp_eval(InterpEval *ie, const Node *e, Scalar *out);
void interp_eval_free(InterpEval *ie);

/* ------------------------------------------------------------ the interpreter's state */

/* (Its name is the interpreter's: it is the state of src/backend/interp's
 * array operations too, which use the Host inside it.) */

/* A chunk of the scratch stack.  Chunks are never moved, so pointers into
 * them stay valid while they are in use (a variable bound to a let value
 * points into the stack). */
typedef struct Chunk {
    struct Chunk *next;
    size_t cap, top;
    Scalar data[];
} Chunk;

typedef struct Mark {
    Chunk *c;
    size_t top;
} Mark;

/* The scalar type of each leaf of an element type, computed once per type
 * (ty_leaf walks the type; loads and stores need it per element). */
typedef struct LeafTypes {
    const Type *t;
    ax_scalar *lt;
} LeafTypes;

typedef struct Interp {
    ax_ctx *cx;
    bool safe;                /* !cx->opt.unsafe */
    int nvars;
    const Scalar **senv;      /* scalar variables: their leaves */
    Host h;                   /* the array level (src/runtime/host.c): h.aenv
                                 holds the array variables' arrays */
    Chunk *first, *cur;       /* the scratch stack */
    LeafTypes *leaf;
    int nleaf, capleaf;
    uint32_t ticks;           /* the interpreter's loop steps, for its polls
                                 of the cancel hook */
} Interp;

enum { CHUNK_MIN = 4096 };

/* An InterpEval is the interpreter's state (interp_run_op, in interp.c,
 * runs array operations on it). */
struct InterpEval {
    Interp in;
};

/* The scratch stack (eval.c, "Scratch memory"): a chunk of cap leaves;
 * all of in's chunks and leaf types freed. */
Chunk *eval_chunk_new(size_t cap);
void eval_scratch_free(Interp *in);
Scalar *eval_salloc_slow(Interp *in, size_t n);

/* n leaves of scratch, valid until the enclosing mark is released; NULL
 * (with an error) only when memory runs out. */
static inline Scalar *eval_salloc(Interp *in, size_t n)
{
    Chunk *c = in->cur;
    if (n <= c->cap - c->top) {
        Scalar *p = c->data + c->top;
        c->top += n;
        return p;
    }
    return eval_salloc_slow(in, n);
}

static inline Mark eval_mark(Interp *in)
{
    Mark m = {in->cur, in->cur->top};
    return m;
}

static inline void eval_release(Interp *in, Mark m)
{
    in->cur = m.c;
    m.c->top = m.top;
}

/* The scalar type of each leaf of t (kept in in->leaf); NULL (with an
 * error) when memory runs out. */
const ax_scalar *eval_leaf_types(Interp *in, const Type *t);

/* ------------------------------------------------------------ errors (on the context; all return -1) */

int eval_fail(Interp *in, ax_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A program the verifier should have refused: never a user error. */
int eval_malformed(Interp *in, const Node *x, const char *what);
int eval_nomem(Interp *in);
/* Checks ix against shape and computes its row-major position. */
int eval_linear_checked(Interp *in, const char *what, int rank, const int64_t *shape, const int64_t *ix,
                        int64_t *lin);

/* ------------------------------------------------------------ evaluation */

/* Evaluates scalar expression e into out (e->type->width leaves). */
int eval_exp(Interp *in, const Node *e, Scalar *out);
/* An element-typed expression of the array stratum (an extent, an
 * initial value) into out. */
int eval_top(Interp *in, const Node *e, Scalar *out);
/* A shape expression: an index of rank <= AX_MAX_RANK. */
int eval_shape(Interp *in, const Node *e, int64_t *sh, int *rank);
int eval_i64(Interp *in, const Node *e, int64_t *out);

/* Bools are read by their low byte (prim.c's representation: .u = 0 then
 * .b), never as a C bool lvalue that might hold another value. */
static inline bool eval_truth(Scalar v)
{
    unsigned char c;
    memcpy(&c, &v.b, 1);
    return c != 0;
}

/* Checks that f is a scalar LAM with nparam parameters (-1: any) whose
 * leaves add up to width (-1: any), with variable ids in range. */
int eval_check_lam(Interp *in, const Node *f, int nparam, int width);


/* Applies a scalar function to arguments laid out leaf after leaf. */
static inline int eval_call(Interp *in, const Node *f, const Scalar *args, Scalar *out)
{
    int off = 0;
    for (int k = 0; k < f->nparam; k++) {
        in->senv[f->param[k]->id] = args + off;
        off += f->param[k]->type->width;
    }
    return eval_exp(in, f->kid[0], out);
}

/* Applies a two-parameter function (eval_check_lam'ed with 2). */
static inline int eval_call2(Interp *in, const Node *f, const Scalar *x, const Scalar *y, Scalar *out)
{
    in->senv[f->param[0]->id] = x;
    in->senv[f->param[1]->id] = y;
    return eval_exp(in, f->kid[0], out);
}

#endif
