/*
 * The code generator every backend shares (docs/ARCHITECTURE.md, "The pipeline"): what the CPU's C and the GPU kernel text
 * are both built from.  Like accelerate-llvm, whose native and PTX
 * backends share one description of each kernel and one scalar code
 * generator, the two skeleton sets (src/backend/cpu, src/backend/gpu,
 * the same file names on each side) write only the parallel structure;
 * everything below that is here, written once:
 *
 *   describe.c  the kernel description of a fused program (cg_describe:
 *               numbering, argument slots, thunks, free arrays)
 *   text.c      text buffers, emission helpers, C type names, locals
 *   exp.c       scalar expressions (prim.c's semantics as statements)
 *   elem.c      element-level pieces: reading operands (manifest, or a
 *               DELAYED operand's code), storing results, thunk
 *               parameters, the producers' element code, the operator
 *               analysis, the dispatch to a backend's skeletons
 *   stencil.c   stencil neighbourhoods and the stencil kernels' prologue
 *   contract.c  matrix products recognised in folds (for a BLAS)
 *
 * Two dialects (G.dialect): the CPU's C (GCC builtins, compound literals,
 * faults reported in full through ax_fail, deferred checks, lane blocks)
 * and the GPU kernel text, which CUDA C and OpenCL C both compile (the GPU
 * prelude's names, faults recorded as a code in err_).  Scalar code is the
 * same in both; what differs is a handful of spellings, each switched on
 * the dialect where it is written.
 *
 * Argument slots of an operation, in this order: its outputs, its array
 * operands (kids that are array computations; a DELAYED operand has a slot
 * with a shape and no buffers), then the free array variables its scalar
 * code reads (ax_at, ax_shape, ...), deduplicated, in first-occurrence
 * order of a preorder walk, so the layout is deterministic.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_CGEN_H
#define AX_CGEN_H

#include "ir.h"

/* Where a run-time fault happened (AxErr.site); the host words the
 * message as the interpreter does. */
enum {
    SITE_NONE = 0,
    SITE_AT,           /* ax_at: ix, shape */
    SITE_ATLIN,        /* ax_at_linear: ix[0] the position, shape */
    SITE_BACKPERMUTE,  /* ax_backpermute (and transform): ix, shape */
    SITE_PERMUTE,      /* ax_permute's target: ix, shape */
    SITE_PRIM,         /* a primitive (aux: Prim): division by zero, shape size */
    SITE_EMPTY,        /* fold1 of an empty row/segment (aux: segment or -1) */
    SITE_RESHAPE       /* a fused reshape's sizes (P_RESHAPE): ix the new shape
                          (aux: its rank), shape the array's */
};

/* ------------------------------------------------- program description */

/* Kernel roles: the phases a skeleton may need. */
typedef enum CgRole {
    R_MAIN,     /* producers: over output positions, general index loop */
    R_LIN,      /* producers: over output positions, all inputs linear */
    R_PART,     /* fold/scan: (row, chunk) partial reductions (fold: with
                   one chunk per row, the rows' results) */
    R_COMB,     /* fold: per row, z and the partials in chunk order */
    R_CARRY,    /* scan: per row, the carry into each chunk (sequential) */
    R_SCAN,     /* scan: (row, chunk) scans with their carry-in (one chunk
                   per row: each row's whole scan) */
    R_SEG,      /* segmented fold: over (row, segment) */
    R_COUNT,    /* filter: per chunk, the number kept */
    R_SCATTER,  /* filter: per chunk, write the kept elements */
    R_DFLT,     /* permute: copy the defaults */
    R_PERM,     /* permute: combine the source into the result */
    R_MAT,      /* materialise a DELAYED operand (segment lengths) */
    R_SCAN1,    /* scan in one pass (GPU: decoupled look-back) */
    R_PPRIV,    /* permute: combine the source into per-task private copies */
    R_PMERGE,   /* permute: combine the private copies into the result */
    R_GEMM,     /* fold that is a matrix product (CgContract): register
                   tiles over row blocks (CPU) */
    R_NROLE
} CgRole;

extern const char *const cg_role_name[R_NROLE];

/* A free array variable read by scalar code: an AVAR (id, and the array's
 * position `off` among the arrays of a tuple-typed variable) or a USE. */
typedef struct CgFree {
    int id, off;
    const Node *use;          /* USE node, or NULL */
    const Type *t;            /* the array's type (TY_ARRAY) */
} CgFree;

/* A matrix product recognised in a fold (contract.c): the fold's result
 * C, of the space's first r-1 dimensions (the last is the sum's, k),
 * laid out as a rows x cols matrix, is the sum over its terms of
 * alpha op(A) op(B), where A's read covers the result's first `rows`
 * dimensions and k, B's the rest and k.  ta: A is read (k, i..) (laid
 * out k x m), else (i.., k); tb: B is read (j.., k) (n x k), else
 * (k, j..).  A and B are free arrays (argument slots), or a component
 * (leaf) of a tuple array's elements.  exact: the term is written
 * (sa a) (sb b), each scale a constant or absent (0), so that a kernel
 * computing it so gets the element function's value bit for bit. */
enum { CG_GEMM_TERMS = 4 };
typedef struct CgGemm {
    int slot[2], leaf[2];
    bool ta, tb;
    double alpha;
    bool exact;
    double sa, sb;
} CgGemm;
typedef struct CgContract {
    ax_scalar s;              /* AX_F32 or AX_F64 */
    int rows;                 /* the result's dimensions that A's rows merge */
    int nterm;
    CgGemm t[CG_GEMM_TERMS];
} CgContract;

/* What the executor needs to know about one array operation. */
typedef struct CgNode {
    const Node *x;            /* NULL: the number is not an operation with code */
    const Node *top;          /* the node the host walk runs (x, or a map whose
                                 function is x's epilogue: ir_epilogue) */
    const Node *epi;          /* NULL, or the map's function: applied to each of
                                 x's results as it is stored (output slot 0) */
    int nout, nopd, nfree, nslot;
    int *opd_kid;             /* operand i is x->kid[opd_kid[i]] */
    CgFree *free;
    int nthunk;               /* thunks axt_<num>_<t> */
    const Node **thunk;       /* their expressions */
    int *poff;                /* leaf offset of thunk t in the parameters */
    int nparam;               /* parameter leaves in all */
    int *kid_thunk;           /* per kid: its thunk, or -1 */
    int *opd_thunk;           /* per operand: thunk of a DELAYED one's shape, or -1 */
    bool role[R_NROLE];       /* which kernels exist */
    const char *text0;        /* its C code (cpu/codegen.c dedup_node), or NULL */
    int unit;                 /* the CgProg unit its functions are in (named
                                 axk_u_<role>, axt_u_<t>), or -1 */
    int cold;                 /* the unit of its checked copies
                                 (axk_u_<role>_chk), or -1 */
    bool comm;                /* the operator is recognised commutative */
    int scratch_leaves;       /* leaves per partial (fold/scan) */
    const CgContract *con;    /* a fold that is a matrix product, or NULL */
} CgNode;

/* Is m A A^T or A^T A, one array read both ways (symmetric)? */
static inline bool cg_gemm_symmetric(const CgContract *m)
{
    const CgGemm *g = &m->t[0];
    return m->nterm == 1 && g->ta != g->tb && g->slot[0] == g->slot[1] && g->leaf[0] == g->leaf[1] && g->sa == g->sb;
}

/* Is m A B^T + B A^T or A^T B + B^T A, the same constant on both terms
 * (mathematically symmetric, though not bit for bit as each term is
 * written: a BLAS's syr2k)? */
static inline bool cg_gemm_symmetric2(const CgContract *m)
{
    const CgGemm *g0 = &m->t[0], *g1 = &m->t[1];
    return m->nterm == 2 && g0->ta != g0->tb && g0->ta == g1->ta && g0->tb == g1->tb && g0->alpha == g1->alpha &&
           g0->slot[0] == g1->slot[1] && g0->slot[1] == g1->slot[0] && g0->leaf[0] == g1->leaf[1] &&
           g0->leaf[1] == g1->leaf[0];
}

/* Does m's every term compute as written (CgGemm.exact), one or two of
 * them (cpu/fold.c's register-tiled kernel)? */
static inline bool cg_gemm_tiled(const CgContract *m)
{
    return (m->nterm == 1 && m->t[0].exact) || (m->nterm == 2 && m->t[0].exact && m->t[1].exact);
}

/* Is cn's operation (described: its slots known) a matrix product?  Its
 * description in *out (contract.c). */
bool cg_contraction(const CgNode *cn, CgContract *out);

/* The maths functions a unit calls (G.math_used): bits 2k (f32) and
 * 2k + 1 (f64) for the C library's cg_math_names[k] (on the CPU through
 * libmvec where it has them); bits CG_OWN_BIT + 2j (+ 1) for axle's own
 * exp (j = 0) and log (j = 1), core/vmath.h, which exp.c math_fn picks in
 * the exact modes. */
enum { CG_NMATH = 16, CG_OWN_BIT = 2 * CG_NMATH };
extern const char *const cg_math_names[CG_NMATH];

/* One translation unit of the CPU's C (cpu/codegen.c): the code of the
 * operations that compute alike (dedup_node), under names without their
 * number, after a prelude of what that code uses.  A unit's text does not
 * depend on the rest of the program, so its compiled form is cached apart
 * and shared by every program (and every operation of one) that has the
 * same kernel. */
typedef struct CgUnit {
    char *text;               /* malloc'd */
    size_t len;
    int node;                 /* the first operation whose code it is */
    bool cold;                /* checked copies, compiled on first need */
    const char *cflags;       /* flags added for this unit (static), or NULL */
    size_t code_off;          /* where its code starts in text, after the prelude */
    uint64_t math;            /* the maths functions it calls (G.math_used) */
} CgUnit;

/* A described program, and the code a backend generated for it. */
typedef struct CgProg {
    Arena arena;
    char *text;               /* the GPU generators' kernel text (malloc'd);
                                 the CPU's is in units (cg_join) */
    size_t len;               /* bytes of text, or of C in all the units */
    int nunits;
    CgUnit *units;            /* malloc'd */
    int nnodes;               /* numbers 0..nnodes-1 */
    CgNode *nodes;            /* by Node.num */
    int nvars;
} CgProg;

/* The kernel description alone (no text): numbers the array nodes and
 * fills nodes[] (slots, thunks, free arrays), as every backend that
 * generates code for the fused kernels consumes it (the CPU's C, the GPU
 * kernel text).  NULL with a message in err on failure. */
CgProg *cg_describe(const Program *p, char *err, size_t errsize);
void cg_free(CgProg *g);

/* Partial-result layout shared by host and kernels: leaf l of a scratch
 * area of m partials starts 64-byte aligned after the leaves before it;
 * the area's bytes in all. */
int64_t cg_scratch_bytes(const Type *elt, int64_t m);

/* The argument slot of the array that scalar code reaches through a (an
 * AVAR, APROJ of one, or USE), or -1. */
int cg_free_slot(const CgNode *cn, const Node *a);
/* The array type of slot s. */
const Type *cg_slot_type(const CgNode *cn, int s);
/* The identity of a free array reference (see CgFree). */
bool cg_free_ident(const Node *a, int *id, int *off, const Node **use);

static inline const Node *cg_opd_node(const CgNode *cn, int i) { return cn->x->kid[cn->opd_kid[i]]; }
static inline int cg_opd_slot(const CgNode *cn, int i) { return cn->nout + i; }
static inline const Type *cg_opd_elt(const CgNode *cn, int i) { return cg_opd_node(cn, i)->type->elt; }

/* ------------------------------------------------- text */

/* A growing text buffer. */
typedef struct Buf {
    char *s;
    size_t len, cap;
    bool oom;
} Buf;
void buf_put(Buf *b, const char *s);
void buf_putn(Buf *b, const char *s, size_t n);   /* n bytes of s */
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct G;
/* The text of a scratch buffer (`empty` if nothing was written), or a
 * placeholder with generation failed when it ran out of memory: a unit
 * with a piece silently missing would compute something else. */
const char *cg_buf_text(struct G *g, const Buf *b, const char *empty);

/* A scalar value in generated code: one C expression per leaf (tuples
 * flattened, an index of rank r as r i64 leaves).  Every leaf is an atom:
 * a local's name or a literal, so it may be used any number of times. */
typedef struct Val {
    int n;
    const char **v;
} Val;

/* The dialect of the generated text: the CPU's C, or the GPU kernel text
 * (src/backend/gpu), which CUDA C and OpenCL C both compile.  Scalar code
 * is the same; what differs is spelled through the GPU prelude's names
 * (no GCC builtins, no compound literals, faults recorded as a code in
 * err_ rather than through ax_fail), and nothing is deferred (G.defer
 * stays false) or run in lane blocks. */
typedef enum CgDialect { CG_C, CG_GPU } CgDialect;

enum { CG_HOIST_MAX = 64 };

/* The generator's state while emitting one function. */
typedef struct G {
    Arena *ar;
    Buf *b;                   /* the function body */
    int ind;                  /* indentation level */
    int *tmp;                 /* fresh-name counter, shared by the unit */
    Val *env;                 /* scalar variables by id */
    int nvars;
    const CgNode *cn;         /* the operation whose code this is */
    const char *pos;          /* the position reported with a fault */
    bool safe;
    bool fast;                /* CgConfig.fast */
    char *err;                /* first generator error (malformed IR, OOM) */
    size_t errsize;
    bool failed;
    const char *sink[8];      /* where leaves go once out of memory */
    /* Range facts (elem.c cg_read_lin/cg_read_ix): parameter `id` of a
     * DELAYED operand's element function only ever holds a position (lin)
     * or an index (!lin) inside the extent of operand slot `slot`.  A read
     * of another array at exactly that position/index (or at components of
     * that index) is then in bounds whenever that extent fits the array:
     * the kernel computes all such conditions once into `pre_`, and in a
     * kernel with deferred checks (below) such reads are unchecked; when
     * pre_ fails the kernel hands its range to its checked copy.  Fused
     * code reads through ax_at-like nodes, so this is what lets the loops
     * of fused consumers vectorise in safe mode.  A value fact (pos set)
     * is about a function applied to such an operand's elements where the
     * element is the position itself, converted to integer type conv (a
     * filter over the indices of an array, as Canny's strong-edge
     * selection): the variable holds the position while the extent's size
     * fits that type (pos: the position's C expression, which such reads
     * then index by: GCC cannot see through the conversions). */
    int nfact;
    struct { int id, slot; bool lin; ax_scalar conv; const char *pos; } fact[64];
    int npre;
    const char *pre[64];      /* the conditions, each an expression of hoisted locals */
    Buf *kmain;               /* the unit, while a kernel body goes to b */
    Buf *khead;               /* the kernel's header and argument locals */
    /* Deferred checks (cg_guard): a kernel of a node is emitted first with
     * defer set, its checks only setting a flag bad_ (no call, no branch:
     * loops vectorise); when any check was deferred (ndefer), the kernel
     * is emitted again without (chk set: axk_<n>_<role>_chk, written to
     * `cold`, a unit of its own compiled only when a kernel first needs
     * it), and the first reruns its range in the second when bad_ is set
     * (through ax_chk: see the prelude). */
    bool defer, chk;
    /* In a kernel with deferred checks: the condition (a C expression of
     * u8 locals) under which the code being emitted is the taken arm of
     * a speculated conditional or and/or (exp.c gen_cond), NULL outside
     * any.  A deferred check sets bad_ only under it: a read the program
     * would not make (a neighbour outside the grid, lavaMD's boxes past
     * the edge) then sends no range to the checked copy. */
    const char *spec;
    /* Row-invariant terms emitted before a row's loops (hoist.c): cg_exp
     * gives term e the value v, emitted with checks under condition spec
     * (NULL: none), while the code is in the row's block (indentation
     * at least hoist_ind). */
    int nhoist, hoist_ind;
    struct { const Node *e; Val v; const char *spec; bool read; } hoist[CG_HOIST_MAX];
    Buf *cold;                /* where the checked copies go */
    int ndefer;
    bool need_chk[R_NROLE];   /* per role: the deferred kernel calls its checked copy */
    CgRole role;              /* the kernel being emitted */
    unsigned long long unit_ld; /* slots (< 64) of rank-0 arrays whose elements the
                                 kernel's head loaded into u<slot>_<leaf>:
                                 loop invariant, while GCC would reload them
                                 in the loop (it drops restrict on locals) */
    CgDialect dialect;        /* the text's dialect (above) */
    bool own_out;             /* the loop's iterations write only their own
                                 elements of fresh results (GCC ivdep) */
    bool row_ok;              /* cpu_loop_ix is emitting a row segment's loop
                                 for when its row test (CpuRowFn) passed */
    /* Lane blocks (exp.c, "While loops across lanes"): a producer loop
     * emitted in blocks of nlane elements runs its element code in lane
     * loops over `lane` (the index's name) below lane_n (the lanes in
     * use).  While lane_arr is set, locals are arrays of one element per
     * lane, declared at the kernel's head, so their values survive from
     * one lane loop of the block to the next (a while loop splits the
     * element code into such loops). */
    const char *lane, *lane_n;
    int nlane;
    bool lane_arr;
    /* The maths functions the unit calls (bits as CG_OWN_BIT says): the
     * prelude declares and defines only those (each costs compile time,
     * cpu/codegen.c prelude_mvec). */
    uint64_t *math_used;
    bool *gather;             /* set when a read is a guarded gather (cpu/codegen.c UNIT_CFLAGS) */
    bool *lanes;              /* set when elements loop across a block's lanes
                                 (gen_while_lanes, gen_run): the unit keeps its
                                 vectorised epilogues (cpu/codegen.c UNIT_CFLAGS) */
    /* The kernel being emitted prefers 256-bit vectors (cpu/skel.c
     * cpu_kernel_end writes the attribute): set by gen_run, exp.c. */
    bool narrow;
    /* The kernel calls a libmvec function (math_fn, exp.c): where the
     * target has AVX-512 it prefers 512-bit vectors (cpu/skel.c
     * cpu_kernel_end; cpu/cpu.c says why). */
    bool wide;
} G;

/* The generator's name in its messages: "cpu codegen" or "gpu codegen". */
static inline const char *cg_who(const G *g) { return g->dialect == CG_GPU ? "gpu codegen" : "cpu codegen"; }

/* Emission helpers. */
void cg_line(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cg_fmt(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cg_fresh(G *g, const char *prefix);
void cg_fail(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
Val cg_val(G *g, int n);
Val cg_slice(Val v, int off, int n);
/* A block: opened after its opening line, closed with its brace. */
static inline void cg_open(G *g) { g->ind++; }
void cg_close(G *g);

/* C names of types. */
const char *cg_ctype(ax_scalar s);
const char *cg_utype(ax_scalar s);          /* unsigned of the same width */

/* Locals. */
/* A fresh local of scalar type s holding expr. */
const char *cg_local(G *g, ax_scalar s, const char *expr);
/* A fresh i64 local for e unless e is an atom. */
const char *cg_atom(G *g, const char *e);
/* Binds fresh locals to the leaves of v (types from t). */
Val cg_bind(G *g, const Type *t, Val v, const char *prefix);
/* Declares uninitialised locals for a value of type t. */
Val cg_decl(G *g, const Type *t, const char *prefix);
/* Assigns v to the locals of dst. */
void cg_assign(G *g, Val dst, Val v);
/* dst = v (through temporaries when v reads leaves of dst). */
void cg_update(G *g, const Type *t, Val dst, Val v);
/* A lane array of scalar type s (G.lane_arr) declared at the kernel's
 * head; its element of the current lane. */
const char *cg_lane_array(G *g, ax_scalar s, const char *prefix);
/* Local arrays of n elements, one per leaf of type t, named prefix<k>_
 * (lanes, accumulators, a stencil's neighbourhood). */
Val cg_leaf_arrays(G *g, const Type *t, const char *prefix, int n);
/* Element i of the arrays ptrs (one per leaf), and a store into it. */
Val cg_at(G *g, Val ptrs, const char *i);
void cg_put(G *g, Val ptrs, const char *i, Val v);

/* ------------------------------------------------- scalar code (exp.c) */

/* A constant as a C expression of its type. */
const char *cg_const(G *g, ax_scalar s, Scalar v);
Val cg_exp(G *g, const Node *e);
/* Can e be evaluated whether or not its branch is taken (exp.c)? */
bool cg_speculable(G *g, const Node *e);
/* G.spec and-ed with `when`: the condition of code speculated under it
 * (exp.c and hoist.c build it alike, so a hoisted value is found again). */
const char *cg_spec_under(G *g, const char *when);
Val cg_apply(G *g, const Node *lam, const Val *args, int nargs);
/* f applied to two values. */
Val cg_apply2(G *g, const Node *f, Val a, Val b);
/* The lanes of a block (G.lane) for element function lam, or 0 where it
 * is not worth it or not allowed: lam must have a while loop, none nested
 * in a branch or another loop, and nothing that can fault (any lane may
 * run a loop's body once more than it needs). */
int cg_lane_count(const Node *lam);
/* Bytes of the smallest leaf's lanes in a block: four AVX2 registers, so
 * that independent chains hide the latency of a loop body's dependencies
 * (more lanes than one register's, which is what the u8 conditions need
 * to vectorise at all). */
#define CG_LANE_BYTES 128
/* At most this many lanes (u8 states: one register; more lanes idle
 * longer when their trip counts differ). */
#define CG_LANE_MAX 32

/* ------------------------------------------------- element-level pieces (elem.c)
 *
 * The parts of the skeletons that do not depend on how the loops are run:
 * reading operands (manifest, or a DELAYED operand's code), storing
 * results, the producers' element code, the operator analysis.  Both
 * backends' skeletons are built from them. */

/* Leaf k of slot's element at linear position lin, as an expression. */
const char *cg_load(G *g, ax_scalar s, int slot, int k, const char *lin);
/* The call reporting a fault: ix (its leaves) against slot's shape. */
const char *cg_fail_ix(G *g, int code, int site, int slot, Val ix, int rank);
/* Emits the check "bad is false", else `report` (see G.defer). */
void cg_guard(G *g, const char *bad, const char *report);
/* In a kernel with deferred checks: sets bad_ when `bad` holds and the
 * code is evaluated (G.spec). */
void cg_defer_bad(G *g, const char *bad);
/* The statement reporting a fault of a primitive (aux: the Prim) with
 * status code: ax_fail on the CPU, the fault code in err_ on a GPU. */
const char *cg_fail_prim(G *g, int code, int aux);
/* A value fact (G.fact) about the parameter of f, applied to the elements
 * of operand i at position pos (a filter over the indices of an array). */
void cg_value_fact(G *g, const Node *f, int i, const char *pos);
/* A range fact (G.fact): lam's parameter only holds positions (lin) or
 * indices inside the extent of slot. */
void cg_range_fact(G *g, const Node *lam, int slot, bool lin);
/* The same for the index an ax_stencil_ix's function receives (its last
 * parameter: inside the result's extent, slot 0). */
void cg_stencil_index_fact(G *g, const Node *lam);

/* The extents of slot's array, rank r: "s<slot>_0", ... */
Val cg_extents(G *g, int slot, int r);
/* Emits the row-major index of linear position lin in a shape of extents
 * ext (C expressions; the outermost is not read) into out (ext.n names):
 * declared as i64 locals where decl, else assigned.  One remainder and
 * one division per dimension but the outermost, through a fresh
 * temporary; every skeleton that turns a position into an index once
 * per range or row does it here. */
void cg_coords(G *g, const char *lin, Val ext, Val out, bool decl);
/* The element of operand i at linear position pos / at index ix (in
 * bounds: callers check). */
Val cg_read_lin(G *g, int i, const char *pos);
Val cg_read_ix(G *g, int i, Val ix);
/* How a row skeleton (fold, scan) reads operand 0 at position pos of its
 * row: linearly, or, for a delayed operand of rank >= 2, through its index
 * form at (the row's outer index, pos - base), which the skeleton knows
 * without a division and a remainder per dimension and element (fusion.c
 * phase 2).  The CPU takes the index form only when the linear one goes
 * through fromLinear (fromlin_only); the GPU always. */
typedef struct CgRowRead {
    bool ix;
    Val outer;          /* the row's index, rank - 1 components */
    const char *base;   /* the row's first position */
} CgRowRead;
CgRowRead cg_row_read(G *g, const char *row, const char *base, bool fromlin_only);
Val cg_read_row(G *g, const CgRowRead *rr, const char *pos);
/* Emits the terms of operand 0's element function (read by rr, slot its
 * operand slot) that do not depend on the position along the row, for
 * the row's loops to use (G.hoist; hoist.c); at the row's head, where the
 * row has at least one element. */
void cg_row_hoist(G *g, const CgRowRead *rr);
/* The same for the row of a generate's result (slot 0) whose outer index
 * is outer and whose first position is pos: the terms of the generate's
 * function that do not depend on the last component of its index. */
void cg_row_hoist_gen(G *g, Val outer, const char *pos);
/* A permute's row segment, positions j0 + [0, m) of the row whose outer
 * index is outer (the source, slot ext; the result, slot tslot): hoists
 * the index function lam's terms of the row alone, as cg_row_hoist does,
 * and when lam sends (outer..., j) to ix(c..., j) with the c fixed for
 * the row, returns a local that is true when every target of the
 * segment is inside the result; NULL otherwise (hoist.c). */
const char *cg_row_target(G *g, const Node *lam, int ext, int tslot, Val outer, const char *pos, const char *j0,
                          const char *m);
/* A read whose bounds cg_row_hoist checked for the whole row: the
 * position of its row (at which the row's position along the last
 * dimension is added), or NULL. */
const char *cg_row_base(G *g, const Node *read);
/* Adds condition c to the kernel's pre_ (once); false when full. */
bool cg_pre_add(G *g, const char *c);
/* Row-major position of ix within slot's shape (an atom). */
const char *cg_linear(G *g, int slot, Val ix);
/* Stores v as element pos of output slot (through the epilogue: slot 0). */
void cg_store(G *g, int slot, const Type *elt, const char *pos, Val v);
/* The value of thunk t: its parameter leaves p<t>_<l>. */
Val cg_param(G *g, int t, const Type *type);
/* A producer's element at index ix / position pos, stored into output 0
 * (lin: every operand read at pos). */
void cg_producer_elem(G *g, bool lin, Val ix, const char *pos);
/* Is p commutative and associative on type s (one of add, mul, min, max,
 * the bit and boolean and/or/xor)?  Is f componentwise one of them (ops[k]:
 * leaf k's, may be NULL)?  And is e leaf k's such combination of x and y
 * (*op: which)? */
bool cg_comm_op(Prim p, ax_scalar s);
bool cg_lam_comm(const Node *f, Prim *ops);
bool cg_comm_leaf(const Node *e, const Node *x, const Node *y, int k, int w, Prim *op);
/* Does the reduction or scan take an initial value z (kid[1])? */
bool cg_has_z(Op op);
/* The leaves of component comp (-1: all) of a loop's space element x
 * (ir.h Loop). */
Val cg_loop_comp(G *g, Val x, int comp);

/* A backend's skeletons: the emitters of each operation family's kernels
 * (producers in the roles the operation needs, R_LIN and/or R_MAIN). */
typedef struct CgSkeletons {
    void (*producer)(G *g, CgRole role);
    void (*fold)(G *g);
    void (*foldseg)(G *g);
    void (*scan)(G *g);
    void (*permute)(G *g);
    void (*stencil)(G *g);
    void (*filter)(G *g);
    void (*loop)(G *g);
    void (*sort)(G *g);       /* NULL: the executor sorts (runtime/sort.c) */
} CgSkeletons;
/* The kernels of G.cn's operation, by its family (runtime/host.h
 * host_family): the one dispatch over the operations for both backends'
 * generators. */
void cg_emit_skeleton(G *g, const CgSkeletons *sk);

/* ------------------------------------------------- stencils (stencil.c) */

/* Checks the stencil's form (rank, inputs, widths); false with the
 * generator failed. */
bool cg_sten_check(G *g);
/* The prologue of a stencil kernel: the interior's bounds lo<d>, hi<d>
 * (every neighbour of every input inside) and, when `offsets`, the
 * neighbours' linear offsets o<q>_<k> in each input (interior reads). */
void cg_sten_prologue(G *g, bool offsets);
/* The first position rb<q> of index ix's row in each input. */
void cg_sten_row_bases(G *g, Val ix);
/* Whether a stencil reads its neighbourhoods in loops (too many
 * neighbours to unroll). */
bool cg_sten_looped(const Stencil *st);
/* Which part of the output a stencil's neighbourhoods are read for:
 * the border (every coordinate through the boundary rule), the interior
 * (no bounds tests, through rb<q> + j + o<q>_<k>), or a row on the
 * border whose innermost coordinate j has its neighbours inside (the
 * outer coordinates through the boundary rule, j's not: reads at a
 * fixed row of each neighbour plus j, which vectorise where the
 * border's clamped j gathers: the top and bottom planes of a thin 3D
 * grid, a quarter of Rodinia hotspot3D's). */
typedef enum { STEN_BORDER, STEN_INTERIOR, STEN_ROW_EDGE } CgStenPart;
/* A stencil's neighbourhoods for `part` as function arguments, and their
 * number in *nargs; cg_sten_args_loop reads them in loops into local
 * arrays instead (cg_sten_looped). */
Val *cg_sten_args(G *g, CgStenPart part, Val ix, const char *j, int *nargs);
/* The row's outer coordinates that cg_sten_args' STEN_ROW_EDGE reads
 * name, emitted before the row's loop. */
void cg_sten_row_edge_coords(G *g, Val ix);
Val *cg_sten_args_loop(G *g, CgStenPart part, Val ix, const char *j, int *nargs);

#endif /* AX_CGEN_H */
