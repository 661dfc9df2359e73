/*
 * The axle IR: types, nodes, arenas, contexts.  One node structure serves
 * both strata (array computations and scalar expressions) and both stages
 * (the source graph the builder makes, and the core IR with explicit lets
 * that sharing recovery produces).  See docs/ARCHITECTURE.md, "The pipeline".
 *
 * Source graph: nodes allocated in the context's arena by the builder; a C
 * variable used twice is two edges to one node (pointer identity is the
 * seeds' "stable name").  Lambdas are LAM nodes whose parameters are VAR
 * nodes made fresh for the one call of the user's callback.
 *
 * Core IR: a tree (no node reached twice) made by sharing recovery in a
 * per-compilation arena, with LET/VAR (scalar) and ALET/AVAR (array)
 * binders.  Variables have program-unique dense ids 0..nvars-1.  Scalar
 * code reaches arrays only through AVAR nodes.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_IR_H
#define AX_IR_H

#include "axle.h"
#include "fault.h"
#include <stdarg.h>
#include <stdio.h>

/* ---------------------------------------------------------------- arena */

/* A memory budget: bytes charged against a limit by whatever points at
 * it (a compile's arenas, the planner's tables), so that a compile
 * cannot take more than the context's memory limit allows.  It lives
 * where its owner puts it (the context embeds one); core code only
 * charges it.  A zeroed budget (limit 0) has no limit.  `also` (may be
 * NULL) is more memory in use, charged elsewhere (the context's arrays),
 * that counts against the same limit. */
typedef struct MemBudget {
    int64_t limit;            /* bytes; <= 0: none */
    int64_t used, peak;       /* charged now, and the most at once */
    int64_t refused;          /* the last charge refused in this compile (bytes), or 0 */
    int64_t refused_at;       /* what was in use then (also's included) */
    const int64_t *also;
} MemBudget;
/* (limit: never below least, so that a limit set for arrays alone, a
 * few KB in tests, still lets small programs compile) */
void budget_init(MemBudget *b, int64_t limit, int64_t least, const int64_t *also);
/* The least a compile's budget allows, whatever the memory limit. */
#define AX_COMPILE_MEM_LEAST ((int64_t)32 << 20)
/* What b leaves (INT64_MAX without a budget or a limit). */
int64_t budget_left(const MemBudget *b);
/* Charges n bytes; false (nothing charged, refused noted) past the
 * limit.  A NULL budget takes every charge. */
bool budget_charge(MemBudget *b, int64_t n);
void budget_release(MemBudget *b, int64_t n);
/* Appends to msg (a NUL-terminated message in a buffer of size bytes)
 * why a charge of b was refused, when one was. */
void budget_explain(const MemBudget *b, char *msg, size_t size);

typedef struct Arena Arena;
struct Arena {
    struct ArenaBlock *head;
    size_t used_total;
    MemBudget *budget;        /* charged for each block (NULL: none) */
    int64_t charged;          /* bytes charged to it */
};
void  arena_init(Arena *a);                 /* without a budget: arena_set_budget after it */
void  arena_free(Arena *a);                 /* frees every block, gives back its charge */
void *arena_alloc(Arena *a, size_t n);      /* zeroed, 16-aligned; NULL on OOM or past the budget */
char *arena_strdup(Arena *a, const char *s);
/* Charges a's blocks, and those it makes from now on, to b (NULL: none);
 * the first arena set on a budget with nothing charged starts a compile
 * (the last refusal and peak are forgotten). */
void  arena_set_budget(Arena *a, MemBudget *b);
/* Gives back the arena's charge and leaves it without a budget (its
 * blocks stay): a compiled program's IR outlives its compile. */
void  arena_detach(Arena *a);

/* ---------------------------------------------------------------- types */

typedef enum TypeKind {
    TY_SCALAR = AX_KIND_SCALAR,
    TY_TUPLE  = AX_KIND_TUPLE,   /* n >= 0 components (0 = unit) */
    TY_INDEX  = AX_KIND_INDEX,   /* rank r: r i64 components */
    TY_ARRAY  = AX_KIND_ARRAY,   /* elt, rank */
    TY_ARRAYS = AX_KIND_ARRAYS   /* tuple of array types */
} TypeKind;

struct ax_type {
    TypeKind kind;
    ax_scalar s;                  /* TY_SCALAR */
    int n;                        /* TUPLE/ARRAYS: components; INDEX: rank */
    const struct ax_type **elts;  /* TUPLE/ARRAYS components */
    const struct ax_type *elt;    /* ARRAY: element type */
    int rank;                     /* ARRAY: rank */
    int width;                    /* scalar leaves (element types); for ARRAYS:
                                     number of arrays when flattened */
};
typedef struct ax_type Type;

const Type *ty_scalar(ax_scalar s);
const Type *ty_bool(void);
const Type *ty_i64(void);
const Type *ty_i32(void);
const Type *ty_unit(void);
const Type *ty_tuple(Arena *a, int n, const Type *const *elts);
const Type *ty_index(Arena *a, int rank);
const Type *ty_array(Arena *a, const Type *elt, int rank);
const Type *ty_arrays(Arena *a, int n, const Type *const *elts);
bool ty_eq(const Type *a, const Type *b);
bool ty_is_elt(const Type *t);              /* scalar, tuple or index */
bool ty_is_num(const Type *t);              /* numeric scalar */
bool ty_is_int(const Type *t);              /* integer scalar (not bool) */
bool ty_is_float(const Type *t);
/* The scalar type of leaf i of an element type (flattened left to right;
 * index components are i64). */
ax_scalar ty_leaf(const Type *t, int i);
/* The leaf offset of component i of a tuple / index. */
int ty_leaf_offset(const Type *t, int i);
/* Deep-copies a type into another arena (for core IR that outlives...). */
const Type *ty_copy(Arena *a, const Type *t);
char *ty_str(const Type *t, char *buf, size_t size);

/* --------------------------------------------------------------- values */

/* One scalar leaf.  Integers are stored sign- or zero-extended into i/u;
 * f32 is stored as a float in f32 (never widened) so every path computes
 * in the type's own precision. */
typedef union Scalar {
    int64_t i;
    uint64_t u;
    double f64;
    float f32;
    bool b;
} Scalar;

/* --------------------------------------------------------------- prims */

typedef enum Prim {
    /* binary numeric (same type in and out) */
    P_ADD, P_SUB, P_MUL, P_DIV, P_QUOT, P_REM, P_IDIV, P_MOD, P_MIN, P_MAX,
    /* unary numeric */
    P_NEG, P_ABS, P_SIGNUM,
    /* bits: binary integer, shifts (amount any integer type), unary */
    P_BAND, P_BOR, P_BXOR, P_SHL, P_SHR, P_ROTL, P_ROTR,
    P_BNOT, P_POPCOUNT, P_CLZ, P_CTZ,             /* the last three give i32 */
    /* comparisons (any scalar type -> bool) */
    P_EQ, P_NE, P_LT, P_LE, P_GT, P_GE,
    /* booleans (AND/OR short-circuit) */
    P_AND, P_OR, P_NOT,
    /* floating point, unary */
    P_EXP, P_LOG, P_SQRT, P_SIN, P_COS, P_TAN, P_ASIN, P_ACOS, P_ATAN,
    P_SINH, P_COSH, P_TANH, P_ASINH, P_ACOSH, P_ATANH,
    /* floating point, binary */
    P_POW, P_LOGBASE, P_ATAN2,
    /* floating point -> bool */
    P_ISNAN, P_ISINF,
    /* floating point -> any numeric (node type is the target) */
    P_FLOOR, P_CEIL, P_ROUND, P_TRUNC,
    /* conversions (node type is the target) */
    P_CVT, P_BITCAST,
    /* shapes: SIZE(sh)->i64, TOLIN(sh, ix)->i64, FROMLIN(sh, i64)->ix;
     * RESHAPE(sh', sh)->sh': sh' when its size is sh's, else a fault (a
     * fused reshape's check, src/opt/fusion.c; made by no builder) */
    P_SHAPESIZE, P_TOLIN, P_FROMLIN, P_RESHAPE,
    P_NPRIM
} Prim;

typedef struct PrimInfo {
    const char *name;     /* as printed and as in error messages */
    const char *api;      /* the builder function's name */
    int arity;
} PrimInfo;
extern const PrimInfo prim_info[P_NPRIM];

/* Result type of a primitive applied to these argument types, or NULL with
 * a reason in why (for error messages).  `target` is the node type for
 * FLOOR..TRUNC, CVT and BITCAST (ignored otherwise). */
const Type *prim_type(Arena *a, Prim p, int n, const Type *const *args, const Type *target,
                      const char **why);

/* Evaluates a primitive on scalar leaves.  Shapes (P_SHAPESIZE etc.) take
 * and give several leaves: args are laid out leaf after leaf as the
 * argument types say.  Returns 0, or an ax_status (AX_ERR_DIVZERO,
 * AX_ERR_SHAPE) on a run-time fault.  AND/OR here are strict (callers
 * short-circuit). */
int prim_eval(Prim p, const Type *const *argt, const Scalar *args, const Type *rt, Scalar *out);
/* The scalar kinds and values (sc_, prim.c). */
bool sc_is_int(ax_scalar s);
bool sc_is_signed(ax_scalar s);
bool sc_is_float(ax_scalar s);
int  sc_bits(ax_scalar s);                  /* bool: 8 */
/* Converts a scalar between types with ax_cvt's rules. */
Scalar sc_convert(Scalar v, ax_scalar from, ax_scalar to);
/* Normalises a value to its type (wraps integers to width, bool to 0/1). */
Scalar sc_norm(Scalar v, ax_scalar s);
/* Reads / writes a scalar from / to a typed buffer element. */
Scalar sc_load(const void *buf, ax_scalar s, int64_t i);
void   sc_store(void *buf, ax_scalar s, int64_t i, Scalar v);
/* Prints a scalar constant the way the printer and C code generator do. */
void   sc_print(FILE *f, ax_scalar s, Scalar v);
bool   sc_eq_bits(ax_scalar s, Scalar a, Scalar b);   /* identical bit patterns */

/* ---------------------------------------------------------------- nodes */

typedef enum Op {
    /* ---- scalar expressions ---- */
    OP_CONST,      /* c: scalar constant (type scalar) */
    OP_VAR,        /* id */
    OP_LET,        /* id; kid[0] bound, kid[1] body */
    OP_TUPLE,      /* kid[0..n) components */
    OP_PROJ,       /* a: component; kid[0] tuple */
    OP_PRIM,       /* a: Prim; kid[0..n) operands */
    OP_COND,       /* kid[0] bool, kid[1] then, kid[2] else */
    OP_WHILE,      /* kid[0] LAM cond, kid[1] LAM body, kid[2] init */
    OP_INDEX,      /* kid[0] array, kid[1] index */
    OP_LINDEX,     /* kid[0] array, kid[1] i64 */
    OP_SHAPE,      /* kid[0] array: its extent (index type) */
    OP_IXCONS,     /* kid[0..n) i64 components: an index of rank n */
    OP_IXGET,      /* a: dim; kid[0] index */
    OP_LAM,        /* scalar or array function: param[0..nparam), kid[0] body */

    /* ---- array computations ---- */
    OP_AVAR,       /* id */
    OP_ALET,       /* id; kid[0] bound, kid[1] body */
    OP_USE,        /* arr */
    OP_UNIT,       /* kid[0] exp */
    OP_GENERATE,   /* kid[0] shape exp, kid[1] LAM(ix) */
    OP_MAP,        /* kid[0] LAM(x), kid[1] array */
    OP_ZIPWITH,    /* kid[0] LAM(x1..xk), kid[1..k] arrays (k >= 2) */
    OP_BACKPERMUTE,/* kid[0] shape exp, kid[1] LAM(ix)->ix, kid[2] array */
    OP_PERMUTE,    /* kid[0] LAM(new,old) combine, kid[1] default array,
                      kid[2] LAM(ix)->ix, kid[3] source array */
    OP_REPLICATE,  /* slice spec (see Slice); kid[0] array, kid[1..] fixed exps */
    OP_SLICE,      /* slice spec; kid[0] array, kid[1..] fixed exps */
    OP_RESHAPE,    /* kid[0] shape exp, kid[1] array */
    OP_FOLD,       /* kid[0] LAM2, kid[1] z, kid[2] array */
    OP_FOLD1,      /* kid[0] LAM2, kid[1] array */
    OP_FOLDSEG,    /* kid[0] LAM2, kid[1] z, kid[2] array, kid[3] segments */
    OP_FOLD1SEG,   /* kid[0] LAM2, kid[1] array, kid[2] segments */
    OP_SCANL,      /* kid[0] LAM2, kid[1] z, kid[2] array */
    OP_SCANL1,     /* kid[0] LAM2, kid[1] array */
    OP_SCANR,      /* kid[0] LAM2, kid[1] z, kid[2] array */
    OP_SCANR1,     /* kid[0] LAM2, kid[1] array */
    OP_SCANLEX,    /* scanl': kid[0] LAM2, kid[1] z, kid[2] array; a pair */
    OP_SCANREX,    /* scanr': likewise */
    OP_FILTER,     /* kid[0] LAM(x)->bool, kid[1] array */
    OP_STENCIL,    /* sten; kid[0] LAM(n params), kid[1] array, [kid[2] const] */
    OP_STENCIL2,   /* sten; kid[0] LAM(n1+n2), kid[1] a, kid[2] b, [consts] */
    OP_ACOND,      /* kid[0] bool exp, kid[1] then, kid[2] else */
    OP_AWHILE,     /* kid[0] LAM(arrays)->unit bool, kid[1] LAM(arrays)->arrays,
                      kid[2] init */
    OP_ATUPLE,     /* kid[0..n) arrays */
    OP_APROJ,      /* a: component; kid[0] array tuple */
    /* ---- made by fusion (thesis 4.2-4.4), never by the builder ---- */
    OP_TRANSFORM,  /* kid[0] shape exp, kid[1] LAM(ix)->ix of the source,
                      kid[2] LAM(x)->y, kid[3] array: backpermute then map */
    OP_DELAYED,    /* a consumer's fused input: kid[0] shape exp, kid[1]
                      LAM(ix)->elt (index form), kid[2] LAM(i64)->elt
                      (linear-index form); only as an operand of a consumer */
    /* ---- made by the planner (src/opt/plan*.c), never by the builder ---- */
    OP_LOOP,       /* a multi-generator loop (Loop below): kid[0] the space
                      (an array of rank >= 1, usually DELAYED), then the
                      reductions' operators and initial values */
    /* ---- made by the builder, gone after fusion ---- */
    OP_COMPUTE,    /* ax_compute: kid[0], made as an array of its own: fusion
                      stores it (fusion.c), and when fusion is off the pass
                      after it drops the mark (opt/compute.c); no backend
                      sees it.  (Last, so that the numbers of the other
                      operations, in the disk cache's programs, stay.) */
    /* ---- made by the builder, run by every backend ---- */
    OP_SORT,       /* ax_sort, ax_sort_by: a: 1 descending, 0 ascending;
                      kid[0] the keys (scalar elements, rank >= 1), [kid[1]
                      the values, the keys' shape]: the keys sorted stably
                      along the innermost dimension (floats in totalOrder,
                      every NaN last), or the pair (sorted keys, the values
                      in that order) */
    OP_NOPS
} Op;

/* Stencil description (OP_STENCIL: one input; OP_STENCIL2: two). */
typedef struct Stencil {
    int rank;
    int ninputs;
    int size[2][AX_MAX_RANK];
    ax_boundary_kind bound[2];
    int constkid[2];       /* kid index of the AX_CONSTANT value, or -1 */
    bool ix;               /* the function's last parameter is the element's index
                              (ax_stencil_ix): an index of `rank` components */
} Stencil;

/* Slice specifier (OP_REPLICATE, OP_SLICE): one entry per dimension of the
 * larger array, outermost first; fixed entries take kid[1 + k] for the
 * k-th fixed entry. */
typedef struct Slice {
    int n;
    unsigned char fixed[AX_MAX_RANK];
} Slice;

/* A multi-generator loop (OP_LOOP; seed 003 s."Loop Fusion and
 * Deforestation": one loop over an iteration space computing several
 * generators, horizontally and vertically fused).  The space is kid[0],
 * an array of rank r >= 1 whose element x is computed once per position
 * (its code holds every member's element work); each generator takes a
 * component of x (comp; -1: all of x) and makes one result, in order,
 * the node's type being the tuple of those arrays:
 *   LOOP_COLLECT  [t]^r: the component at every position (a map's result);
 *   LOOP_FILTER   [t]^1 (r = 1): the component where component `pred`
 *                 (bool) holds, in order (a filter: seed 001's
 *                 conditional Collect, its size a sub-size of the space's);
 *   LOOP_REDUCE   [t]^(r-1): per row of the innermost dimension, fold
 *                 kid[op] (a LAM (t, t) -> t) from kid[z] (-1: fold1, a
 *                 non-empty row) over the components, in order; with pred
 *                 >= 0, over those where component pred (bool) holds
 *                 only (a fold of a filter's output, in the filter's loop:
 *                 seed 001's size types).
 * t is the component's type.  Faults are those of the space's elements
 * and of the operators, as the separate operations would make them. */
typedef enum LoopKind { LOOP_COLLECT, LOOP_FILTER, LOOP_REDUCE } LoopKind;
typedef struct LoopGen {
    LoopKind kind;
    int comp;                 /* component of the element, -1: the whole */
    int pred;                 /* FILTER, and REDUCE (or -1): the bool component
                                 deciding which elements count */
    int op, z;                /* REDUCE: kid indices (z: -1 for fold1) */
} LoopGen;
typedef struct Loop {
    int ngen;
    LoopGen gen[];
} Loop;

typedef struct ax_node Node;
struct ax_node {
    Op op;
    int n;                    /* number of kids */
    const Type *type;         /* scalar: element type; array: TY_ARRAY/ARRAYS;
                                 LAM: the body's type */
    Node **kid;
    ax_ctx *cx;               /* the context the node was built in */
    int id;                   /* VAR/AVAR/LET/ALET: variable id */
    int a;                    /* PROJ/APROJ/IXGET index, PRIM op */
    int nparam;               /* LAM */
    Node **param;             /* LAM: VAR or AVAR nodes */
    Scalar c;                 /* CONST */
    ax_array *arr;            /* USE */
    const Stencil *sten;      /* STENCIL/STENCIL2 */
    const Slice *slice;       /* REPLICATE/SLICE */
    const Loop *loop;         /* LOOP */
    int num;                  /* scratch numbering for the pass at hand */
};

bool op_is_array(Op op);      /* array stratum */
const char *op_name(Op op);
/* An epilogue (the planner's, src/opt/planepilogue.c): x is `map f c` marked so
 * (Node.a = MAP_EPILOGUE) with c a fold, a scan or a filter of one result written
 * right there, not let-bound; the backends run c's kernels applying f as
 * they store (no pass over c's result), and c counts as x's kernel.  c,
 * or NULL. */
#define MAP_EPILOGUE 1
const Node *ir_epilogue(const Node *x);
/* A selection operator, \a b -> if c then a else b (*keep_then: the
 * first operand is kept when c holds; may be NULL) or then b else a: its
 * result is always one of its operands (max, min, argmax by a key), so a
 * reduction replaces its accumulator, or does not, as c says (a branch,
 * rarely taken by a running maximum, rather than a chain of selects).
 * Its condition c, else NULL. */
const Node *ir_selection(const Node *f, bool *keep_then);
/* The type of component comp (-1: the whole) of a LOOP's space element,
 * or NULL when there is no such component. */
const Type *loop_comp_type(const Node *x, int comp);

/* Allocates a node with n kids (zeroed) in the arena. */
Node *node_new(Arena *a, Op op, int n, const Type *type);
/* A shallow copy (kids array copied, kids shared). */
Node *node_clone(Arena *a, const Node *x);

/* The depth of the term below root (a leaf is 1; shared nodes are walked
 * once), found without recursion; cap if it is deeper than cap, -1 when
 * memory runs out (depth.c). */
int64_t ir_depth(const Node *root, int64_t cap);

/* Counts the nodes of a tree (a DAG counts each path).  */
int64_t ir_count_nodes(const Node *x);
int64_t ir_count_lets(const Node *x);

/* --------------------------------------------------------------- program */

/* A core program: the result of sharing recovery (and later passes). */
typedef struct Program {
    Arena arena;
    Node *root;               /* array stratum */
    int nvars;                /* ids are 0..nvars-1 */
    const Type **vartype;     /* nvars entries */
    int capvars;              /* room in vartype (0: exactly nvars) */
    double codegen_ms;        /* set by a backend's prepare: generating its code */
    char *notes;              /* the passes' decisions worth showing, a line each, in
                                 the arena (fusion's cost model); `--stage plan` prints them */
} Program;

/* Per leaf (each array) of each array binder (lets, awhile bodies'
 * parameters), the number of reads of it in the binder's scope, -1 for
 * one never to be released early (liveness.c). */
typedef struct Liveness {
    int nvars;
    int *first;    /* per variable id: the index in count of its first leaf, -1 none */
    int *width;    /* per variable id: its arrays (leaves) */
    int *count;    /* per leaf */
    int nleaves;
} Liveness;
/* One block (free() frees it), or NULL when out of memory. */
Liveness *liveness_counts(const Program *p);
/* Whether x is a read liveness_counts counts (an AVAR: all its leaves; an
 * APROJ straight over one: that component's), and which: leaves [*off,
 * *off + *n) of variable *id.  The executors decrement by the same rule. */
bool liveness_read(const Node *x, int *id, int *off, int *n);

/* The coordinate a stencil reads for position c of a dimension of extent
 * n >= 1 under boundary rule b, or -1 for "the constant" (node.c): what
 * the rules mean, which every executor follows. */
int64_t ir_boundary(ax_boundary_kind b, int64_t c, int64_t n);

/* Frees p and everything in its arena (node.c). */
void program_free(Program *p);

/* A new variable id of type t for a pass that introduces bindings; -1 when
 * memory runs out. */
int program_fresh_var(Program *p, const Type *t);

/* ---------------------------------------------------------------- passes */

/* A core program as bytes (irser.c): its USE nodes' arrays written as
 * their index in arrays[0..narrays); NULL when one is not there or memory
 * is lacking.  ir_load reads them back in a new program of cx whose USE
 * nodes read arrays[index], and its depth (as ir_depth, or one more) into
 * *depth (may be NULL); NULL when the bytes are malformed (callers verify
 * the result with ir_verify). */
unsigned char *ir_save(const Program *p, ax_array *const *arrays, int narrays, size_t *n);
Program *ir_load(ax_ctx *cx, const unsigned char *b, size_t n, ax_array *const *arrays, int narrays,
                 int64_t *depth);

/* The verifier: types and scoping of a core program.  Returns 0, or -1 and
 * a message in msg (naming the node and what is wrong). */
int ir_verify(const Program *p, char *msg, size_t size);

/* The printer: readable text, or JSON with node/let counts. */
void ir_print(FILE *f, const Node *root);
void ir_print_json(FILE *f, const char *program, const char *stage, const Node *root);

/* The rest of the core layer: the context record and the backends'
 * contract. */
#include "context.h"
#include "backend.h"

#endif /* AX_IR_H */
