/*
 * The CPU backend's code generator and executor, shared declarations.
 *
 * A core program becomes one C translation unit (DESIGN.md s.2, "Kernels,
 * code generation, compilation"; the Delite seed: emit a target source
 * language and let its compiler do the low-level work).  For each array
 * operation of the program (named by its preorder number, Node.num) the
 * unit holds
 *   - thunks  axt_<num>_<t>(c, out): the operation's scalar parameters
 *     (shapes, fold's z, boundary constants, slice indices, acond's
 *     condition), evaluated once on the host before the kernels run;
 *   - kernels axk_<num>_<role>(c, start, end): the skeleton's phases
 *     (paper s.4.3), each a function over an index range that the runtime
 *     splits across the thread pool.
 * The host executor (cpu.c) walks the array stratum like the interpreter,
 * allocates every array, calls the thunks and runs the kernels.
 *
 * Both sides see one argument block, AxCall: an argument table (for each
 * array of the operation: component buffers, rank, shape, size), the
 * scalar parameters, scratch buffers for partial results, the problem size
 * and an error slot.  Its C declaration is written once (AXC_SHARED below),
 * compiled into the host and pasted as text into every generated unit, so
 * the two cannot drift apart.
 *
 * Argument slots of an operation, in this order: its outputs, its array
 * operands (kids that are array computations; a DELAYED operand has a slot
 * with a shape and no buffers), then the free array variables its scalar
 * code reads (ax_at, ax_shape, ...), deduplicated, in first-occurrence
 * order of a preorder walk, so the layout is deterministic.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_CPU_CG_H
#define AX_CPU_CG_H

#include "ir.h"

/* ------------------------------------------------- the shared ABI */

/* AxScalar has Scalar's layout (ir.h): integers sign- or zero-extended to
 * 64 bits, f32 in the low bytes.  The literal 8 is AX_MAX_RANK (checked
 * below).  AxErr.code/lock are updated with atomics by the kernels;
 * AxErr.redo asks the host to run a permute over, checked (cg_skel.c
 * emit_permute). */
#define AXC_SHARED                                                                              \
    typedef union AxScalar { __INT64_TYPE__ i; __UINT64_TYPE__ u; double f64; float f32;       \
                             __UINT8_TYPE__ b; } AxScalar;                                      \
    typedef struct AxArg { void *const *buf; __INT64_TYPE__ size; __INT64_TYPE__ shape[8];      \
                           __INT32_TYPE__ rank; } AxArg;                                        \
    typedef struct AxErr { __INT32_TYPE__ lock, code, site, aux, rank; __INT64_TYPE__ pos;      \
                           __INT64_TYPE__ ix[8], shape[8]; __INT32_TYPE__ redo, need; } AxErr;  \
    typedef struct AxCall { const AxArg *a; const AxScalar *p; void *s1; void *s2;              \
                            __INT64_TYPE__ n, m, chunk, nchunk; AxErr *err;                    \
                            void (*const *chk)(const struct AxCall *, __INT64_TYPE__,          \
                                               __INT64_TYPE__); } AxCall;                       \
    typedef void (*AxKernel)(const AxCall *c, __INT64_TYPE__ start, __INT64_TYPE__ end);       \
    typedef void (*AxThunk)(const AxCall *c, AxScalar *out);

AXC_SHARED

#define AXC_STR_(...) #__VA_ARGS__
#define AXC_STR(x) AXC_STR_(x)

_Static_assert(AX_MAX_RANK == 8, "AXC_SHARED spells AX_MAX_RANK as 8");
_Static_assert(sizeof(AxScalar) == sizeof(Scalar), "AxScalar mirrors Scalar");

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
    const char *text0;        /* its C code (codegen.c dedup_node), or NULL */
    int unit;                 /* the CgProg unit its functions are in (named
                                 axk_u_<role>, axt_u_<t>), or -1 */
    int cold;                 /* the unit of its checked copies
                                 (axk_u_<role>_chk), or -1 */
    bool comm;                /* the operator is recognised commutative */
    int scratch_leaves;       /* leaves per partial (fold/scan) */
} CgNode;

/* Options that change the generated text. */
typedef struct CgConfig {
    bool safe;                /* bounds checks on user-computed indices */
    unsigned simd_mask;       /* CG_SIMD_* functions that have vector versions */
    bool finite;              /* ax_options.finite_math: the unit asks for
                                 -funsafe-math-optimizations (emit_prelude) */
    bool fast;                /* fast_math or finite_math: the compiler may
                                 reassociate (cg_skel.c fold_range) */
} CgConfig;

/* The maths functions axle calls, as a bit per name (cg_math_names). */
enum { CG_NMATH = 16 };
extern const char *const cg_math_names[CG_NMATH];

/* One translation unit: the code of the operations that compute alike
 * (codegen.c dedup_node), under names without their number, after a
 * prelude of what that code uses.  A unit's text does not depend on the
 * rest of the program, so its compiled form is cached apart and shared by
 * every program (and every operation of one) that has the same kernel. */
typedef struct CgUnit {
    char *text;               /* malloc'd */
    size_t len;
    int node;                 /* the first operation whose code it is */
    bool cold;                /* checked copies, compiled on first need */
    const char *cflags;       /* flags added for this unit (static), or NULL */
    size_t code_off;          /* where its code starts in text, after the prelude */
    uint64_t math;            /* the maths functions it calls (G.math_used) */
} CgUnit;

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

/* The flags a unit with guarded gathers is compiled with (CgUnit.cflags). */
extern const char cg_gather_cflags[];

/* Generates the unit for a verified core program; numbers its array nodes
 * (Node.num).  NULL with a message in err on failure (out of memory, or a
 * program the generator does not understand). */
CgProg *cg_program(const Program *p, const CgConfig *cfg, char *err, size_t errsize);
/* The kernel description alone (no text): numbers the array nodes and
 * fills nodes[] (slots, thunks, free arrays), as every backend that
 * generates code for the fused kernels consumes it (the CPU's C, the GPU
 * kernel text).  NULL with a message in err on failure. */
CgProg *cg_describe(const Program *p, char *err, size_t errsize);
void cg_free(CgProg *g);
/* Every unit of g, each under a heading naming the operations that run
 * its code (for dumps): malloc'd, NULL when memory is lacking. */
char *cg_join(const CgProg *g);
/* Units idx[0..n) of g as one translation unit (a batch, for fewer
 * compiler processes than units): one prelude of what they use, then
 * each unit's code with its names axk_u_/axt_u_ made axk_b<i>_/axt_b<i>_
 * (i its place in idx).  malloc'd, its length in *len; NULL when memory
 * is lacking. */
char *cg_batch(const CgProg *g, const CgConfig *cfg, const int *idx, int n, size_t *len);

/* Partial-result layout shared by host and kernels: leaf l of slot k of a
 * scratch area of m slots starts at byte cg_scratch_off(...). */
int64_t cg_scratch_bytes(const Type *elt, int64_t m);

/* ------------------------------------------------- backend extras */

/* Counters of the context's CPU backend (for tests and traces): programs
 * prepared, compiled by the C compiler, found in a cache. */
typedef struct CpuCounters {
    int64_t prepared, compiled, cached;
    int64_t checked;          /* cold units loaded (checked copies, on first need) */
    double last_compile_ms;
} CpuCounters;
bool cpu_counters(ax_ctx *cx, CpuCounters *out);

/* The generated C of a program (for ax_dump's "c" stage): a malloc'd
 * string, or NULL with an error on cx. */
char *cpu_c_text(ax_ctx *cx, Program *p);

/* ------------------------------------------------- codegen internals */

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
    /* Range facts (cg_skel.c read_lin/read_ix): parameter `id` of a
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
    Buf *cold;                /* where the checked copies go */
    int ndefer;
    bool need_chk[R_NROLE];   /* per role: the deferred kernel calls its checked copy */
    CgRole role;              /* the kernel being emitted */
    unsigned long long unit_ld; /* slots (< 64) of rank-0 arrays whose elements the
                                 kernel's head loaded into u<slot>_<leaf>:
                                 loop invariant, while GCC would reload them
                                 in the loop (it drops restrict on locals) */
    /* The dialect: false for the CPU's C, true for the GPU kernel text
     * (src/backend/gpu), which CUDA C and OpenCL C both compile.  Scalar
     * code is the same; what differs is spelled through the GPU prelude's
     * names (no GCC builtins, no compound literals, faults recorded as a
     * code in err_ rather than through ax_fail), and nothing is deferred
     * (G.defer stays false) or run in lane blocks. */
    bool gpu;
    bool own_out;             /* the loop's iterations write only their own
                                 elements of fresh results (GCC ivdep) */
    /* Lane blocks (cg_exp.c, "While loops across lanes"): a producer loop
     * emitted in blocks of nlane elements runs its element code in lane
     * loops over `lane` (the index's name) below lane_n (the lanes in
     * use).  While lane_arr is set, locals are arrays of one element per
     * lane, declared at the kernel's head, so their values survive from
     * one lane loop of the block to the next (a while loop splits the
     * element code into such loops). */
    const char *lane, *lane_n;
    int nlane;
    bool lane_arr;
    /* The maths functions the unit calls, bit 2k (f32) or 2k+1 (f64) for
     * cg_math_names[k]: the prelude declares and defines only those (each
     * costs compile time, codegen.c prelude_mvec). */
    uint64_t *math_used;
    bool *gather;             /* set when a read is a guarded gather (codegen.c GATHER_CFLAGS) */
    /* The kernel being emitted prefers 256-bit vectors (cg_skel.c
     * kernel_end writes the attribute): set by gen_run, cg_exp.c. */
    bool narrow;
} G;

/* Emission helpers. */
void cg_line(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cg_fmt(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cg_fresh(G *g, const char *prefix);
void cg_fail(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
Val cg_val(G *g, int n);
Val cg_slice(Val v, int off, int n);

/* C names of types. */
const char *cg_ctype(ax_scalar s);
const char *cg_utype(ax_scalar s);          /* unsigned of the same width */
/* A constant as a C expression of its type. */
const char *cg_const(G *g, ax_scalar s, Scalar v);

/* Scalar code (cg_exp.c). */
Val cg_exp(G *g, const Node *e);
Val cg_apply(G *g, const Node *lam, const Val *args, int nargs);
/* Binds fresh locals to the leaves of v (types from t). */
Val cg_bind(G *g, const Type *t, Val v, const char *prefix);
/* Declares uninitialised locals for a value of type t. */
Val cg_decl(G *g, const Type *t, const char *prefix);
/* Assigns v to the locals of dst. */
void cg_assign(G *g, Val dst, Val v);
/* The lanes of a block (G.lane) for element function lam, or 0 where it
 * is not worth it or not allowed: lam must have a while loop, none nested
 * in a branch or another loop, and nothing that can fault (any lane may
 * run a loop's body once more than it needs). */
int cg_lane_count(const Node *lam);
/* Bytes of the smallest leaf's lanes in a block: four AVX2 registers, so
 * that independent chains hide the latency of a loop body's dependencies
 * (mandelbrot-while, f32: 32 lanes measured 1.2-1.5x faster than 16; 8
 * lanes do not vectorise at all, the u8 conditions needing 16). */
#define CG_LANE_BYTES 128
/* At most this many lanes (u8 states: one register; more lanes idle
 * longer when their trip counts differ). */
#define CG_LANE_MAX 32
/* The argument slot of the array that scalar code reaches through a (an
 * AVAR, APROJ of one, or USE), or -1. */
int cg_free_slot(const CgNode *cn, const Node *a);
/* The array type of slot s. */
const Type *cg_slot_type(const CgNode *cn, int s);
/* The identity of a free array reference (see CgFree). */
bool cg_free_ident(const Node *a, int *id, int *off, const Node **use);
/* A fresh local of scalar type s holding expr. */
const char *cg_local(G *g, ax_scalar s, const char *expr);
/* Leaf k of slot's element at linear position lin, as an expression. */
const char *cg_load(G *g, ax_scalar s, int slot, int k, const char *lin);
/* The call reporting a fault: ix (its leaves) against slot's shape. */
const char *cg_fail_ix(G *g, int code, int site, int slot, Val ix, int rank);
/* Emits the check "bad is false", else `report` (see G.defer). */
void cg_guard(G *g, const char *bad, const char *report);
/* The statement reporting a fault of a primitive (aux: the Prim) with
 * status code: ax_fail on the CPU, the fault code in err_ on a GPU. */
const char *cg_fail_prim(G *g, int code, int aux);

/* ------------------------------------------------- element-level pieces
 *
 * The parts of the skeletons (cg_skel.c) that do not depend on how the
 * loops are run: reading operands (manifest, or a DELAYED operand's code),
 * storing results, the producers' element code, stencil neighbourhoods and
 * the operator analysis.  The GPU generator builds its kernels from the
 * same pieces. */
static inline const Node *cg_opd_node(const CgNode *cn, int i) { return cn->x->kid[cn->opd_kid[i]]; }
static inline int cg_opd_slot(const CgNode *cn, int i) { return cn->nout + i; }
/* The element of operand i at linear position pos / at index ix (in
 * bounds: callers check). */
Val cg_read_lin(G *g, int i, const char *pos);
Val cg_read_ix(G *g, int i, Val ix);
/* Row-major position of ix within slot's shape (an atom). */
const char *cg_linear(G *g, int slot, Val ix);
/* Stores v as element pos of output slot. */
void cg_store(G *g, int slot, const Type *elt, const char *pos, Val v);
/* dst = v (through temporaries when v reads leaves of dst). */
void cg_update(G *g, const Type *t, Val dst, Val v);
/* The value of thunk t: its parameter leaves p<t>_<l>. */
Val cg_param(G *g, int t, const Type *type);
/* f applied to two values. */
Val cg_apply2(G *g, const Node *f, Val a, Val b);
/* A producer's element at index ix / position pos, stored into output 0
 * (lin: every operand read at pos). */
void cg_producer_elem(G *g, bool lin, Val ix, const char *pos);
/* Is f componentwise one of the commutative and associative primitives
 * (ops[k]: leaf k's, may be NULL)?  And is e leaf k's such combination of
 * x and y (*op: which)? */
bool cg_lam_comm(const Node *f, Prim *ops);
bool cg_comm_leaf(const Node *e, const Node *x, const Node *y, int k, int w, Prim *op);
/* Does the reduction or scan take an initial value z (kid[1])? */
bool cg_has_z(Op op);
/* A stencil's neighbourhoods as function arguments (interior: no bounds
 * tests, through rb<q> + j + o<q>_<k>; else the boundary rule per
 * coordinate), and their number in *nargs. */
Val *cg_sten_args(G *g, bool interior, Val ix, const char *j, int *nargs);
/* The leaves of component comp (-1: all) of a loop's space element x
 * (ir.h Loop). */
Val cg_loop_comp(G *g, Val x, int comp);
/* A fresh i64 local for e unless e is an atom. */
const char *cg_atom(G *g, const char *e);

#endif /* AX_CPU_CG_H */
