/*
 * What the per-operation tests (tests/test_op_*.c) and the backends'
 * common tests (tests/test_backend_common.c) share: the loop over the
 * backends, the comparison of a backend's results with the interpreter's,
 * deterministic input data, and the plain-C checking helpers.
 *
 * The backends.  A test written with OP_TEST or BE_TEST runs its body on
 * each backend under test in turn, with `be` naming it; one written with
 * DIFF_TEST (or COMPILED_TEST) runs on the compiling backends only: its
 * body compares each result with the interpreter's, which defines what a
 * program means, so the interpreter runs in every comparison.
 *
 * The backends under test: those AXLE_TEST_BACKEND names (a
 * comma-separated list of interp, cpu, opencl and cuda: "opencl",
 * "interp,cpu"), else every backend this machine has: the interpreter,
 * the CPU backend, OpenCL where a platform is installed and CUDA where
 * there is a device (each missing one is left out with one line saying
 * why).  A backend named in AXLE_TEST_BACKEND that cannot run fails every
 * test.  AXLE_TEST_SMALL=1 leaves out inputs
 * of more than 5,000 elements (the sanitizer build's OpenCL runs);
 * AXLE_TEST_TIMES=1 prints each test's time on each backend.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_TEST_OPS_H
#define AX_TEST_OPS_H
#include "harness.h"
#include <stdlib.h>
#include <string.h>

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

/* ================================================================ backends */

typedef struct Be {
    ax_backend_kind kind;
    const char *name;   /* interp, cpu, opencl, cuda */
    bool interp;        /* the reference interpreter */
    bool gpu;           /* OpenCL or CUDA */
} Be;

/* Runs body once per backend under test (OPS_COMPILED: the compiling
 * ones only; OPS_BATCHED: twice on those, batched as below); a backend
 * whose run failed checks is named on stderr. */
enum { OPS_BATCHED, OPS_ONCE, OPS_COMPILED };
void ops_each_backend(const char *test, void (*body)(const Be *be), int how);

#define OP_TEST_(name, how) \
    static void name##_on(const Be *be); \
    TEST(name) { ops_each_backend(#name, name##_on, how); } \
    static void name##_on(const Be *be)
/* A test on every backend, its results checked against plain C. */
#define OP_TEST(name) OP_TEST_(name, OPS_BATCHED)
/* A test on every compiling backend, its results checked against the
 * interpreter's (SAME). */
#define DIFF_TEST(name) OP_TEST_(name, OPS_COMPILED)
/* A test on every compiling backend, its results checked otherwise. */
#define COMPILED_TEST(name) OP_TEST_(name, OPS_COMPILED)
/* A test on every backend whose body runs once (no batching: it runs
 * programs with ax_run, ax_compile, and checks their failures). */
#define BE_TEST(name) OP_TEST_(name, OPS_ONCE)

/* Batched runs.  On a compiling backend every program costs a compile
 * (a C compiler's process, PoCL's LLVM), so an OP_TEST body runs twice
 * there: the first time it only collects the programs it runs through RUN
 * and RUN_N (which give NULL and no results; EXPECT_FAIL does nothing),
 * and op_ctx_done runs them all together in a few tuples (ax_atuple: one
 * compile each); the second time RUN and RUN_N hand back those
 * results, each found by the line of its call and how many calls that
 * line made before, and its checks are made.  A run the first pass did
 * not see (made only when an earlier result was there), or whose tuple
 * failed, is run on its own.  Checks that fail in the first pass are not
 * counted (the second repeats them); so a body must build the same
 * programs both times, and its checks on results must be guarded by the
 * result (`if (r && ...)`).  On the interpreter, and in the other kinds
 * of test, RUN is a plain run.  op_ctx(be) is the body's context (the
 * same in both passes), freed by op_ctx_done. */
ax_ctx *op_ctx(const Be *be);
void op_ctx_done(ax_ctx *cx);
/* Starts a new case: a body that runs the same code on several shapes
 * (a loop over cases) calls it at the start of each, so that each case's
 * programs make tuples of their own; a tuple equal to an earlier one but
 * for its arrays is not compiled again (the context's program memory). */
void op_case(void);
ax_array *op_run(ax_ctx *cx, ax_acc a, const char *file, int line);
int op_run_n(ax_ctx *cx, ax_acc a, ax_array **out, int max, const char *file, int line);
/* Whether this pass only collects programs (its results are not there). */
bool op_collecting(void);
#undef RUN
#define RUN(cx, a) op_run((cx), (a), __FILE__, __LINE__)
#define RUN_N(cx, a, out, max) op_run_n((cx), (a), (out), (max), __FILE__, __LINE__)

/* A context on backend be (4 threads, so that even a 2-core machine
 * splits work); unsafe: no bounds checks. */
ax_ctx *be_ctx(const Be *be);
ax_ctx *be_ctx_unsafe(const Be *be, bool unsafe);
ax_ctx *kind_ctx(ax_backend_kind k, bool unsafe);
/* The dump stage of be's generated code: "c", "opencl", "cuda" ("" on
 * the interpreter). */
const char *be_code_stage(const Be *be);

/* AXLE_TEST_SMALL=1: inputs of at most 5,000 elements. */
bool ops_small(void);

/* ================================================================ data */

int64_t shape_size(int rank, const int64_t *sh);
void unravel(int64_t lin, int rank, const int64_t *sh, int64_t *ix);
int64_t ravel(int rank, const int64_t *sh, const int64_t *ix);

/* Deterministic data of scalar type s: integers in [-range, range], floats
 * in about [-range, range] with fractions, bools. */
void fill(void *buf, ax_scalar s, int64_t n, uint64_t seed, int range);
/* An input of n scalar types (a tuple when n > 1), made in cx. */
ax_acc input_n(ax_ctx *cx, int n, const ax_scalar *ss, int rank, const int64_t *sh, uint64_t seed, int range);
ax_acc input(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, uint64_t seed, int range);

/* An array holding a copy of data (which may be NULL when the shape is
 * empty), embedded with ax_use; the caller's reference is given back at
 * once (the use node holds one). */
ax_acc use_data(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, const void *data);
ax_acc use_tuple(ax_ctx *cx, const ax_type *t, int rank, const int64_t *sh, const void *const *bufs);
const ax_type *tup_t(ax_ctx *cx, int n, const ax_scalar *ss);
#define TUP(cx, ...) tup_t((cx), NELEM(((const ax_scalar[]){__VA_ARGS__})), (const ax_scalar[]){__VA_ARGS__})

/* A shape (rank, extents). */
typedef struct Shape { int rank; int64_t sh[3]; } Shape;

/* Nine values of type s that stress loads and stores: extremes, signs,
 * -0.0, denormals, infinities, NaN with a payload. */
void fill_tricky(ax_scalar s, void *buf);
/* ax_at(*(ax_acc *)env, ix) */
ax_exp read_at(ax_exp ix, void *env);

/* A deterministic value for element k (of either sign, small). */
static inline int64_t val_of(int64_t k) { return (k * 37 + 11) % 101 - 50; }
int64_t *alloc_i64(int64_t n);
double *alloc_f64(int64_t n);
/* env -> the ax_acc it points at */
static inline ax_acc acc_of(void *env) { return *(ax_acc *)env; }

/* ================================================================ scalar types */

static inline bool sc_signed_(ax_scalar s) { return s == AX_I8 || s == AX_I16 || s == AX_I32 || s == AX_I64; }
static inline bool sc_float_(ax_scalar s) { return s == AX_F32 || s == AX_F64; }
static inline int sc_bits_(ax_scalar s) { return (int)ax_scalar_size(s) * 8; }
/* Wraps v to the width of integer type s (sign- or zero-extended into an
 * int64; u64 keeps its bits); bool is 0 or 1. */
int64_t norm_i(ax_scalar s, uint64_t v);
int64_t type_min(ax_scalar s);
int64_t type_max(ax_scalar s);
/* Typed buffer access: integers as (sign/zero-extended) int64, floats as
 * double. */
int64_t ld_i(const void *p, ax_scalar s, int64_t k);
double ld_f(const void *p, ax_scalar s, int64_t k);
void st_i(void *p, ax_scalar s, int64_t k, int64_t v);
void st_f(void *p, ax_scalar s, int64_t k, double v);

/* ================================================================ checks */

/* Checks a result's rank and extents; counts and prints a failure. */
bool shape_is(const char *file, int line, const ax_array *r, int rank, const int64_t *sh);
#define SHAPE_IS(r, rank, ...) shape_is(__FILE__, __LINE__, (r), (rank), SH(__VA_ARGS__))
#define SHAPE_ISV(r, rank, sh) shape_is(__FILE__, __LINE__, (r), (rank), (sh))

/* A checker over many elements: prints the first few mismatches and counts
 * one failed check at the end. */
typedef struct Chk {
    const char *file;
    int line;
    char what[200];
    int64_t bad;
} Chk;
void chk_init(Chk *c, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define CHK(c, ...) chk_init((c), __FILE__, __LINE__, __VA_ARGS__)
void chk_i(Chk *c, int64_t k, int64_t got, int64_t want);
void chk_f(Chk *c, int64_t k, double got, double want, double rel);
void chk_true(Chk *c, bool ok, const char *msg);
bool chk_done(Chk *c);
/* Compares component comp of r (n elements) with expectations. */
void chk_arr_i(Chk *c, const ax_array *r, int comp, const int64_t *want, int64_t n);
void chk_arr_f(Chk *c, const ax_array *r, int comp, const double *want, int64_t n, double rel);
/* Two buffers of type s equal element by element (floats: equal by ==, or
 * both NaN; `bits` additionally demands identical bit patterns for non-NaN
 * floats, so that -0.0 and 0.0 differ). */
void chk_buf(Chk *c, ax_scalar s, const void *got, const void *want, int64_t n, bool bits);

/* Runs and expects a failure of the given kind; the context must work
 * again afterwards. */
void expect_fail(const char *file, int line, ax_ctx *cx, ax_acc a, ax_status st);
#define EXPECT_FAIL(cx, a, st) expect_fail(__FILE__, __LINE__, (cx), (a), (st))

/* Are two results equal (floats: within rel; 0: equal bits or ==)?
 * Prints the first difference. */
bool equal(const char *what, const ax_array *a, const ax_array *b, double rel);

/* ================================================================ against the interpreter */

/* A computation, built once per context from env (usually an Env). */
typedef ax_acc (*Build)(ax_ctx *cx, const void *env);

/* The usual env: a shape and which variant of an operation. */
typedef struct Env {
    int rank;
    const int64_t *sh;
    int which;
} Env;

/* Builds b in a context on the interpreter and in one on be, runs both
 * and requires equal results (floats within rel where the backend may
 * reassociate); on a GPU backend also compiles the CUDA text with NVRTC
 * where AXLE_TEST_NVRTC=1 (tests/harness.c).  The two contexts last for
 * the test's run on be (reset after each SAME): a program built again on
 * other shapes reuses its compilation, as an application's would. */
void same_(const char *file, int line, const Be *be, const char *what, Build b, const void *env, double rel);
#define SAME(what, b, env, rel) same_(__FILE__, __LINE__, be, (what), (b), (env), (rel))

/* All variants w in [0, n) of a builder as one tuple (one compile), those
 * for which skip() holds left out. */
ax_acc all_of(ax_ctx *cx, const void *env, Build b, int n, bool (*skip)(const void *env, int w));

/* The shapes tried for an operation of rank r: empty, one element, odd,
 * and large (split across the threads; few long rows and many short); on
 * the GPU backends also a group's width (256) and a tile's, +-1, rows of
 * a team's width and a few tiles, many rows of a short team. */
typedef struct Shp {
    int rank;
    int64_t sh[3];
} Shp;
extern const Shp shapes[];
int nshapes(const Be *be);
/* Shape s is left out of this run (AXLE_TEST_SMALL). */
bool skip_shape(int s);

/* ================================================================ reductions' operands */

/* Affine maps x -> a*x + b over u64 (wrapping: arithmetic mod 2^64 keeps
 * composition exactly associative); (a,b).(c,d) = (a*c, a*d + b) is
 * associative and not commutative. */
typedef struct Aff { uint64_t a, b; } Aff;
typedef Aff (*AffOp)(Aff, Aff);
Aff aff_compose(Aff x, Aff y);
Aff aff_add(Aff x, Aff y);   /* plain sums in .a */
Aff aff_val(int64_t k);
/* The affine composition on (u64, u64) elements. */
ax_exp aff_op(ax_exp x, ax_exp y, void *env);
extern const Aff aff_z, sum_z;   /* the z of the affine folds, of the sums */
ax_exp aff_z_exp(void);

/* The operands of a reduction test: an array of affine maps (a u64 pair)
 * and an array of i64 (the .a of the same values, for ax_fn_add). */
typedef struct RedIn {
    int rank;
    const int64_t *sh;
    int64_t n, inner, rows;
    Aff *v;
    uint64_t *va, *vb;
    ax_acc aff, sum;
} RedIn;
void red_in(ax_ctx *cx, RedIn *in, int rank, const int64_t *sh);
void red_free(RedIn *in);
/* Checks a result against Aff expectations: for the affine operator both
 * components, for sums the i64 component. */
void chk_aff(Chk *c, const ax_array *r, bool affine, const Aff *want, int64_t n);

/* Non-commutative associative operators on i32 tuples: affine maps
 * (apply x then y: v -> a v + b) and 2x2 matrix products. */
ax_exp op_aff(ax_exp x, ax_exp y, void *env);
ax_exp op_mat(ax_exp x, ax_exp y, void *env);

/* ================================================================ shared programs */

/* The indices (i32) of the elements of an array of n + extra elements that
 * pass a predicate reading the array at the index, as Canny selects its
 * strong edges: a filter over a generate of n indices.  The CPU backend
 * proves the read in bounds when the indices' extent fits the array and
 * i32 (an unchecked, vectorised loop) and otherwise runs the checked copy;
 * a negative extra faults at the first index past the array. */
ax_acc ops_filter_indices(ax_ctx *cx, int64_t n, int64_t extra);

/* A rank-1 index function: ix + (intptr_t)env (backpermute's and
 * permute's offsets). */
ax_exp ops_shift(ax_exp ix, void *env);

/* The programs that fault in safe mode, by number: 0 a backpermute and 1
 * an ax_at reading past their array (checks the fast kernels defer), 2 a
 * permute's targets past its defaults, 3 a division by zero, 4 the filter
 * above over more indices than its array has. */
enum { OPS_NFAULTS = 5 };
ax_acc ops_fault(ax_ctx *cx, int which);

/* An element function with three while loops run across lanes (cgen's
 * exp.c, gen_while_lanes): a body that swaps its components, two loops in
 * a row, a loop in a condition, zero trips, f64 and u8 states; of an f32
 * (ops_lanes) or of an index (ops_lanes_at, for generate). */
ax_exp ops_lanes(ax_exp x, void *env);
ax_exp ops_lanes_at(ax_exp ix, void *env);

#endif
