/*
 * axle: an embedded data-parallel array language for C.
 *
 * A program builds an array computation by calling the functions below; axle
 * recovers the sharing the program expressed, optimises the computation, and
 * runs it on one of its backends (the reference interpreter, generated C on a
 * thread pool, CUDA and OpenCL GPUs).  This is the only public header.
 *
 * Conventions (they hold for every function unless its comment says otherwise)
 *
 *  - Every public name starts with ax_ / AX_.
 *  - A context (ax_ctx) owns everything built in it: terms (ax_acc, ax_exp),
 *    tuple types, and host arrays.  Nothing is global; two contexts may be
 *    used from two threads at once, one context from one thread at a time.
 *    A context used from a second thread while the first is inside ax_run,
 *    ax_compile, ax_program_run, ax_dump, ax_ctx_reset or an array
 *    constructor refuses the second call (ax_run and the array
 *    constructors and builders return NULL) and makes the first fail with
 *    AX_ERR_ARG saying so.
 *  - Callbacks and re-entrancy.  The callbacks of ax_options (cancel, log,
 *    progress) run in the middle of a call on their context (ax_run,
 *    ax_compile, ax_program_run_with, ...), on the thread that made it.
 *    From them, a call on that same context that would change it is
 *    refused: ax_compile, ax_run, ax_run_n, ax_program_run,
 *    ax_program_run_with, ax_program_free, ax_dump, ax_ctx_reset,
 *    ax_ctx_free, ax_clear_error, the array constructors (ax_array_new,
 *    ...) and the array builders (ax_use, ax_map, ...).  A refused call
 *    returns NULL or -1 (or does nothing) with AX_ERR_ARG and a message
 *    naming it and the callback, and the call that ran the callback then
 *    fails with that message too.  Allowed on that context: reading it
 *    (ax_error, ax_status_of, ax_ctx_options, ax_program_stats,
 *    ax_program_params, ax_program_type, the array accessors,
 *    ax_array_retain and ax_array_release of arrays the run does not read)
 *    and the scalar expression builders.  Any call on another context is
 *    allowed, a whole compile and run included.  The scalar callbacks of
 *    the builders (ax_map's function, ...) run while their builder is
 *    called, not inside a run, and may call any builder.
 *  - Terms are built by calling functions; using a C variable twice shares
 *    the term (axle recovers this sharing; see ax_run).  Terms live until
 *    ax_ctx_reset or ax_ctx_free.  They are never freed one by one.
 *  - Scalar functions are C callbacks.  axle calls each callback exactly once,
 *    while the operation that takes it is being built, with fresh variables
 *    (higher-order abstract syntax); the callback returns the body.  The
 *    `env` pointer given with a callback is passed through untouched.
 *  - Errors never abort.  A builder that is misused (NULL argument, type or
 *    rank mismatch, wrong arity, a callback returning the wrong type) records
 *    a message on the context naming the operation and the types, and
 *    returns an invalid term (NULL for ax_acc).  Invalid terms propagate:
 *    passing one to another builder yields another invalid term without a
 *    new message.  ax_run then fails with the first message.  Run-time
 *    faults (index out of bounds, integer division by zero, a shape whose
 *    size overflows, allocation failure) make ax_run fail the same way.
 *    After any failure the context is usable again: the error is reported
 *    once by ax_run and then cleared.
 *  - Which errors are sticky.  Only a builder's error is: it stays pending
 *    on the context until ax_run, ax_run_n, ax_compile or ax_dump reports
 *    it (ax_clear_error and ax_ctx_reset forget it).  Every other function
 *    reports its own failure at once (ax_error and ax_status_of give it
 *    until the next failure) and leaves nothing pending.  Running a
 *    compiled program (ax_program_run, ax_program_run_with) does not
 *    depend on terms being built: a pending builder's error neither stops
 *    the run nor is cleared by it.  If the run fails, ax_error gives the
 *    run's error, and the builder's is pending again from the next call
 *    that builds, compiles or runs.
 *
 * Shapes and indices: extents and indices are int64_t.  A shape or index of
 * rank r is written outermost dimension first: a matrix of 3 rows and 4
 * columns has shape {3, 4}; elements are stored in row-major order, so the
 * last dimension is the innermost (contiguous) one.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AXLE_H
#define AXLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every declaration of this header is part of the library's interface:
 * the library is compiled with -fvisibility=hidden, and this pragma gives
 * what is declared here default visibility, so that the shared library
 * exports these names and nothing else (tests/install checks it with nm). */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#endif

/* The version of this header.  This is the one place the version is
 * written: the build reads it from here (the shared library's file name,
 * axle.pc, axleConfigVersion.cmake).  The library follows semantic
 * versioning; the shared library's soname carries the major version. */
#define AX_VERSION_MAJOR 0
#define AX_VERSION_MINOR 1
#define AX_VERSION_PATCH 0
/* One number for #if tests: 10000 * major + 100 * minor + patch. */
#define AX_VERSION_NUMBER (AX_VERSION_MAJOR * 10000 + AX_VERSION_MINOR * 100 + AX_VERSION_PATCH)
/* "MAJOR.MINOR.PATCH" */
#define AX_VERSION_STRING \
    AX_VERSION_EXPAND_(AX_VERSION_MAJOR) "." AX_VERSION_EXPAND_(AX_VERSION_MINOR) "." \
    AX_VERSION_EXPAND_(AX_VERSION_PATCH)

/* (helpers of AX_VERSION_STRING) */
#define AX_VERSION_QUOTE_(x) #x
#define AX_VERSION_EXPAND_(x) AX_VERSION_QUOTE_(x)

/* The version of the library the program runs with ("0.1.0"), which may
 * be newer than the header it was compiled with (AX_VERSION_STRING) when
 * it is linked with the shared library.  A static string. */
const char *ax_version(void);

/* A context: see "Contexts and options" below. */
typedef struct ax_ctx ax_ctx;

/* The highest array rank axle supports. */
#define AX_MAX_RANK 8

/* ------------------------------------------------------------------------ */
/* Element types                                                            */
/* ------------------------------------------------------------------------ */

/* The scalar element types.  Integers wrap on overflow (two's complement);
 * floating point follows IEEE 754. */
typedef enum ax_scalar {
    AX_BOOL = 0,
    AX_I8, AX_I16, AX_I32, AX_I64,
    AX_U8, AX_U16, AX_U32, AX_U64,
    AX_F32, AX_F64,
    AX_NSCALAR
} ax_scalar;

/* An element type: a scalar, a tuple of element types, or an index (shape)
 * of some rank, which is stored as that many int64_t components.  Array
 * types and tuples of arrays are types too (the type of an ax_acc).
 * Type objects are immutable; scalar types are static, tuple types belong
 * to the context that made them. */
typedef struct ax_type ax_type;

/* The type of a scalar.  Never NULL for a valid `s`. */
const ax_type *ax_type_scalar(ax_scalar s);
/* A tuple type of n >= 2 element types (n == 0 gives the unit type).
 * NULL (and an error on cx) if an element is NULL or not an element type. */
const ax_type *ax_type_tuple(ax_ctx *cx, int n, const ax_type *const *elems);
/* The type of an index of the given rank (0..AX_MAX_RANK). */
const ax_type *ax_type_index(ax_ctx *cx, int rank);

/* Inspection. */
typedef enum ax_type_kind {
    AX_KIND_INVALID = -1,    /* the NULL that a failed builder returns */
    AX_KIND_SCALAR, AX_KIND_TUPLE, AX_KIND_INDEX, AX_KIND_ARRAY, AX_KIND_ARRAYS
} ax_type_kind;
/* Each accepts NULL (the type of an invalid term): AX_KIND_INVALID,
 * AX_NSCALAR, -1, NULL, 0 and false respectively. */
ax_type_kind ax_type_kind_of(const ax_type *t);
ax_scalar    ax_type_scalar_of(const ax_type *t);   /* for AX_KIND_SCALAR */
int          ax_type_arity(const ax_type *t);       /* tuple components, or index rank */
const ax_type *ax_type_elem(const ax_type *t, int i); /* tuple component i */
int          ax_type_components(const ax_type *t);  /* scalar leaves: buffers per array */
bool         ax_type_equal(const ax_type *a, const ax_type *b);   /* false if either is NULL */
/* Writes a readable form ("(f32, (i32, bool))", "[f32]^2") into buf; returns buf. */
char        *ax_type_str(const ax_type *t, char *buf, size_t size);
/* The name of a scalar type ("f32"), and its size in bytes (bool: 1). */
const char  *ax_scalar_name(ax_scalar s);
size_t       ax_scalar_size(ax_scalar s);

/* ------------------------------------------------------------------------ */
/* Contexts and options                                                     */
/* ------------------------------------------------------------------------ */

/* The backends.  The GPU backends are used only when asked for (here, or
 * with AXLE_BACKEND=cuda|opencl); they load their libraries at run time
 * (CUDA: the NVIDIA driver libcuda.so.1 and NVRTC; OpenCL: the ICD loader
 * libOpenCL.so.1 and a platform), so a program built with axle runs where
 * they are missing, and asking for one that cannot run fails with
 * AX_ERR_BACKEND and a message saying why ("no CUDA device: ...").
 * AXLE_OPENCL_DEVICE=<text> picks the first OpenCL device whose name
 * contains the text (default: the first GPU, else the first device). */
typedef enum ax_backend_kind {
    AX_BACKEND_DEFAULT = 0,  /* the best available: cpu, else interp */
    AX_BACKEND_INTERP,       /* the reference interpreter */
    AX_BACKEND_CPU,          /* generated C on a thread pool */
    AX_BACKEND_CUDA,         /* NVIDIA GPUs (NVRTC and the CUDA driver API) */
    AX_BACKEND_OPENCL        /* any OpenCL 1.2+ device */
} ax_backend_kind;

/* Debug flags (ax_options.debug), also set by the environment variable
 * AXLE_DEBUG, a comma-separated list of the names in brackets. */
enum {
    AX_DEBUG_NO_SHARING  = 1u << 0,  /* [no-sharing]  unfold the graph into a tree   */
    AX_DEBUG_NO_FUSION   = 1u << 1,  /* [no-fusion]   every operation its own kernel */
    AX_DEBUG_NO_SIMPLIFY = 1u << 2,  /* [no-simplify] no simplifier                  */
    AX_DEBUG_NO_CSE      = 1u << 3,  /* [no-cse]      no common subexpressions       */
    AX_DEBUG_DUMP        = 1u << 4,  /* [dump]        print the IR after each stage  */
    AX_DEBUG_TIMING      = 1u << 5,  /* [timing]      print each phase's time        */
    AX_DEBUG_VERIFY      = 1u << 6,  /* [verify]      run the IR verifier after each pass */
    AX_DEBUG_CACHE       = 1u << 7,  /* [cache]       trace the kernel cache         */
    AX_DEBUG_CODE        = 1u << 8,  /* [code]        print generated code           */
    AX_DEBUG_PROFILE     = 1u << 9,  /* [profile]     each array operation's run time */
    AX_DEBUG_NO_PLANNER  = 1u << 10, /* [no-planner]  Accelerate's fusion only: no
                                        multi-generator loops (siblings, filter into fold) */
    AX_DEBUG_NO_LICM     = 1u << 11, /* [no-licm]     array terms that do not change in an
                                        awhile body are recomputed every iteration */
    AX_DEBUG_NO_REUSE    = 1u << 12, /* [no-reuse]    compile every program in full: no reuse
                                        of an equal program compiled before, in the context
                                        or (its entry in the disk cache) in another process */
    AX_DEBUG_COMM        = 1u << 13, /* [comm]        (libaxle_mpi, axle_mpi.h) each distributed
                                        operation's messages and bytes, per rank and run */
    AX_DEBUG_NO_LOOPS    = 1u << 14, /* [no-loops]    the planner makes no multi-generator
                                        loops (its sibling and filter rewrites stay) */
    AX_DEBUG_NO_EPILOGUES = 1u << 15,/* [no-epilogues] a map over a fold's, a scan's or a
                                        stencil's result stays a pass of its own */
    AX_DEBUG_NO_COST_MODEL = 1u << 16 /* [no-cost-model] fusion inlines every producer its
                                        rules allow, even a transpose that a fold would then
                                        read with a stride, again and again (a matrix
                                        product's); `axle dump P --stage plan` shows the
                                        model's decisions and costs */
};

/* Options for a context.  Zero-initialise and set what you need; a zero
 * field means "the default".  Environment variables (AXLE_DEBUG,
 * AXLE_THREADS, AXLE_MEM_LIMIT, AXLE_CC, AXLE_CFLAGS, AXLE_CC_TIMEOUT,
 * AXLE_CACHE) add to or override the defaults, not fields set explicitly
 * here.  AXLE_MEM_LIMIT and AXLE_CACHE_SIZE take a number of bytes with
 * an optional K, M, G or T and an optional B ("512M", "1GB", "100b");
 * AXLE_THREADS and threads are capped at 4,096 (what ax_ctx_options
 * reports is used).  The planner's solver has no field: AXLE_PLANNER
 * (ilp, the default: an integer linear program, solved by CBC where a
 * search is needed and CBC can be loaded; cbc: by CBC always; greedy),
 * AXLE_PLANNER_LIMIT (the solve's limit, milliseconds of CPU time;
 * default 10; past it the planner is greedy) and AXLE_CBC (the CBC
 * library to load) choose it.  Nor has the fast modes' BLAS (see "Matrix
 * products" at ax_fold): AXLE_BLAS names the library to load, or is off
 * (or 0) for none.  A malformed value is ignored with a
 * notice naming the variable and the accepted values (see log and
 * strict). */
typedef struct ax_options {
    ax_backend_kind backend;  /* default: AX_BACKEND_DEFAULT */
    unsigned debug;           /* AX_DEBUG_* flags, or-ed with AXLE_DEBUG */
    int threads;              /* CPU threads; 0: AXLE_THREADS or all cores */
    bool unsafe;              /* true: no bounds checks on user-computed indices */
    /* true (also AXLE_FAST_MATH=1 or on): relaxed floating point in the compiled
     * backends (C, OpenCL, CUDA), as -ffast-math without its licence to
     * ignore NaN and infinities: a*b+c may be fused, sums and products
     * reassociated, x/y computed as x*(1/y), and the sign of a zero result
     * lost.  Measured bounds against the exact mode (tests/test_fastmath.c),
     * u = 2^-24 (f32) or 2^-53 (f64): x/y within 2u|x/y|; a*b+c within
     * 3u(|a*b| + |c|) (one rounding fewer when fused); a sum or product of
     * n terms within the usual
     * reassociation bound, (n-1)u times the sum of magnitudes; the maths
     * functions (sin, cos, pow, ...) and sqrt unchanged, bit for bit (the
     * exact mode's vector library, vectorised in both modes), except exp
     * and log on the CPU, which are the C library's vector versions
     * (faster than axle's own) where the exact mode's are axle's own:
     * within 5 ulp of the exact mode's (glibc's 4 and axle's 1);
     * 1/sqrt(x) stays a square root and a division, within x/y's bound (no
     * approximate reciprocal or reciprocal square root: with NaN and
     * infinities kept they measured slower than the divider).  On OpenCL
     * fast mode contracts and drops the sign of zeros only (its
     * -cl-unsafe-math-optimizations gave 1/sqrt(0) = NaN).  On CUDA it
     * also takes NVRTC's approximate division and square root
     * (--prec-div=false, --prec-sqrt=false), whose errors (CUDA's
     * programming guide lists them in ulp) these bounds do not cover: not
     * measured (the tests run on the CPU and OpenCL).  NaN
     * and infinities are kept; comparisons and conversions are exact;
     * denormals are kept (no flush-to-zero: loading a fast-mode kernel
     * leaves the caller's floating-point environment alone).  The
     * interpreter stays exact.  Default: false, exact IEEE arithmetic
     * everywhere. */
    bool fast_math;
    /* true (also AXLE_FAST_MATH=finite; implies fast_math): fast_math's
     * licences and also -ffinite-math-only's, as -ffast-math C, Numba's
     * fastmath=True and Halide (LLVM's nnan and ninf) assume: no input,
     * intermediate or result is NaN or infinite, and no argument of sqrt
     * or 1/sqrt is denormal.  Where that does not hold the results are
     * unspecified (not an error; e.g. sqrt of a denormal f32 gave -inf,
     * 1/sqrt(0) and x/0 may give anything).  Where it holds, in the C
     * backend with GCC on x86, against the exact mode: f32 1/sqrt(x), and
     * f32 sqrt(x) in vectorised loops, are an approximate reciprocal
     * square root and one Newton step (GCC's -mrecip=vec-sqrt), within 3
     * ulp of the exact mode's value (every positive normal f32 checked on
     * AVX2's vrsqrtps; AVX-512's vrsqrt14ps is more precise), that is
     * within 6.2u|exact|; f64 sqrt and 1/sqrt, and f32 sqrt in scalar
     * code, keep the correctly rounded square root; x/y, a*b+c,
     * sums and products within fast_math's bounds (division stays a
     * divide: no approximate reciprocal); sin, cos, pow unchanged bit for
     * bit, exp and log as in fast_math; comparisons and conversions exact.  The C
     * unit asks for GCC's -funsafe-math-optimizations with a pragma of its
     * own, not on the command line, so no crtfastmath.o is linked in:
     * loading a kernel leaves the caller's denormals on.  On OpenCL it adds
     * -cl-finite-math-only to fast_math's options; on CUDA it is fast_math.
     * Measured (tests/test_fastmath.c) on finite inputs only.  What it
     * buys: N-body's 1/sqrt no longer waits on the divider. */
    bool finite_math;
    int64_t mem_limit;        /* bytes of array memory, and of a compile's own IR
                                 and planner tables (with the arrays in use; a
                                 compile gets at least 32 MiB); 0: AXLE_MEM_LIMIT
                                 or a safe fraction of physical memory; <0: none */
    const char *cc;           /* C compiler for the CPU backend; NULL: AXLE_CC or "cc" */
    const char *cflags;       /* flags added after the optimisation flags (so they may
                                 override -O3 or -march=native); NULL: AXLE_CFLAGS.
                                 The flags that fix results (-fno-fast-math,
                                 -ffp-contract=off) always come last */
    const char *cache_dir;    /* kernel cache; NULL: $XDG_CACHE_HOME/axle */
    bool no_cache;            /* true: no disk cache (also AXLE_CACHE=off) */
    int64_t cache_limit;      /* bytes the disk cache may hold before the least
                                 recently used entries are removed; 0:
                                 AXLE_CACHE_SIZE or 512 MiB; <0: no limit */
    double cc_timeout;        /* seconds the C compiler may run before its process
                                 group is killed and ax_run fails (AX_ERR_COMPILE);
                                 the group is also killed when the calling process
                                 dies, however it dies;
                                 0: AXLE_CC_TIMEOUT or 300; <0: no limit */
    /* Cancellation: when set, axle calls cancel(cancel_arg) between array
     * operations and before every iteration of an ax_awhile loop (the
     * interpreter also every 65,536 steps inside an operation); a true
     * result stops the run, which fails with AX_ERR_CANCELLED (an endless
     * awhile can be stopped this way, by a deadline or a user's request).
     * It is called on the thread that runs the program: the caller's, or
     * for a program nested thousands of levels deep a helper thread with
     * a larger stack while the caller waits. */
    bool (*cancel)(void *cancel_arg);
    void *cancel_arg;
    /* Notices: what a user should know that is not an error, each given
     * once per context: the default backend running programs on the
     * interpreter (tens to hundreds of times slower) because no C compiler
     * was found, a malformed AXLE_* variable that is ignored.  log(log_arg,
     * text) receives them; without it each is one line on stderr
     * ("axle: ..."), unless quiet. */
    void (*log)(void *log_arg, const char *message);
    void *log_arg;
    bool quiet;
    /* true: what would be a notice is an error: with no C compiler the
     * default backend fails (AX_ERR_COMPILE) instead of falling back, and
     * a malformed AXLE_* variable makes the context's first run fail
     * (AX_ERR_ARG). */
    bool strict;
    /* Progress of long work: while the C compiler compiles the kernels of
     * a program that are in no cache, progress(progress_arg, done, total)
     * is called with 0 first, then as each of the total kernels is done,
     * on the thread that runs ax_run or ax_compile.  NULL: not called. */
    void (*progress)(void *progress_arg, int done, int total);
    void *progress_arg;
} ax_options;

/* Makes a context.  opt may be NULL (all defaults).  Returns NULL only if
 * memory for the context itself cannot be had. */
ax_ctx *ax_ctx_new(const ax_options *opt);
/* Frees the context, every term built in it, and every host array of it
 * (including arrays the caller has not released).  Programs compiled in it
 * (ax_compile) give up their memory and arrays too; their handles stay
 * valid for ax_program_free (and ax_program_stats) in either order, and
 * ax_program_run on them fails.  NULL is ignored. */
void ax_ctx_free(ax_ctx *cx);
/* Frees every term built in the context so far (the memory they used is
 * reused).  Host arrays and compiled programs survive (a program keeps
 * what it needs).  Terms built before the reset must not be used after it. */
void ax_ctx_reset(ax_ctx *cx);
/* The options in force (after the environment has been applied). */
const ax_options *ax_ctx_options(const ax_ctx *cx);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* The message of the pending or most recent error, or "" if none.  The
 * string belongs to the context and is valid until the next call on it. */
const char *ax_error(const ax_ctx *cx);
/* The kind of that error. */
typedef enum ax_status {
    AX_OK = 0,
    AX_ERR_BUILD,      /* misuse of the builder API: type, rank, arity, NULL   */
    AX_ERR_INDEX,      /* index out of bounds                                 */
    AX_ERR_DIVZERO,    /* integer division by zero                            */
    AX_ERR_SHAPE,      /* a negative extent, a shape whose size overflows, a
                          reshape or reduction that does not fit              */
    AX_ERR_NOMEM,      /* allocation failure or the memory limit              */
    AX_ERR_COMPILE,    /* the run-time compiler is missing or failed          */
    AX_ERR_BACKEND,    /* a backend is unavailable                             */
    AX_ERR_ARG,        /* a bad argument to a non-builder function, or a
                          context used from two threads at once               */
    AX_ERR_CANCELLED   /* ax_options.cancel asked the run to stop              */
} ax_status;
ax_status ax_status_of(const ax_ctx *cx);
/* Forgets a pending error (the terms that failed stay invalid). */
void ax_clear_error(ax_ctx *cx);

/* ------------------------------------------------------------------------ */
/* Host arrays                                                              */
/* ------------------------------------------------------------------------ */

/* A host array: an element type, a shape, and one buffer per scalar
 * component of the element type (struct of arrays: an array of (f32, i32)
 * pairs has one f32 buffer and one i32 buffer).  Arrays are reference
 * counted: each function that returns an ax_array* gives the caller one
 * reference, which ax_array_release gives back.  Buffers of wrapped arrays
 * are borrowed: the caller keeps them alive (and unchanged while a program
 * reads them) until the array's last reference is gone.  Booleans are
 * stored one byte each (0 or 1).
 *
 * On a GPU backend an array also has a copy in device memory: an input is
 * uploaded the first time a program reads it and stays there for later
 * runs; a result stays on the device until the host reads it
 * (ax_array_data, ax_array_copy_out), which copies it back.  Device memory
 * counts against the memory limit like host memory.  ax_array_data hands
 * out a writable pointer, so it marks the device copy out of date (the
 * next run uploads the array again); after changing the memory of a
 * wrapped array directly, call ax_array_data on it once so that the next
 * GPU run sees the change. */
typedef struct ax_array ax_array;

/* A new array with zeroed, owned buffers.  shape has `rank` extents (may be
 * NULL if rank is 0).  NULL and an error if the type is not an element type,
 * the rank is out of range, an extent is negative, the size overflows, or
 * memory (or the memory limit) runs out. */
ax_array *ax_array_new(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape);
/* Wraps the caller's buffer of scalars without copying (borrow). */
ax_array *ax_array_wrap(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, void *data);
/* Wraps one caller buffer per component of `elem` (borrow). */
ax_array *ax_array_wrap_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                          void *const *buffers);
/* A new array holding a copy of `data` (scalars). */
ax_array *ax_array_from(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, const void *data);
/* A new array holding copies of one buffer per component. */
ax_array *ax_array_from_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                          const void *const *buffers);

ax_array *ax_array_retain(ax_array *a);   /* adds a reference; returns a */
void      ax_array_release(ax_array *a);  /* drops one; NULL is ignored */

const ax_type *ax_array_type(const ax_array *a);   /* the element type */
int            ax_array_rank(const ax_array *a);
int64_t        ax_array_extent(const ax_array *a, int dim);  /* 0 <= dim < rank */
const int64_t *ax_array_shape(const ax_array *a);  /* rank extents */
int64_t        ax_array_size(const ax_array *a);   /* number of elements */
int            ax_array_components(const ax_array *a);
/* The buffer of scalar component i (0 for a scalar element type), holding
 * ax_array_size(a) values of ax_array_component_type(a, i).  Writable only
 * if the array is owned by axle or wrapped from writable memory.  A GPU
 * result is copied back first (NULL, with an error on the array's
 * context, if that fails). */
void          *ax_array_data(const ax_array *a, int i);
ax_scalar      ax_array_component_type(const ax_array *a, int i);
/* Copies component i into dst (ax_array_size(a) values).  Returns 0, or -1
 * and an error on the array's context if i is out of range. */
int            ax_array_copy_out(const ax_array *a, int i, void *dst);

/* ------------------------------------------------------------------------ */
/* Scalar expressions                                                       */
/* ------------------------------------------------------------------------ */

struct ax_node;

/* A scalar expression, a small value: pass it and return it by value.
 * Constants made by ax_i32(), ax_f32(), ax_ix1(...), ax_tuple2(...) of
 * constants, ... carry no context; an operation on constants alone is
 * computed when it is built (like a C constant expression, with axle's
 * semantics).  To keep a constant as a term of the program (for instance
 * to see it shared), make it with ax_const.  The fields are internal. */
typedef struct ax_exp {
    struct ax_node *node;   /* the term, or NULL for a constant or an error */
    int16_t tag;            /* what this is (0: invalid)                   */
    int16_t n;              /* constant leaves                             */
    int32_t aux;            /* error payload                               */
    uint8_t leaf[8];        /* constant leaf types                         */
    union { int64_t i; uint64_t u; double f; float f32; } v[8]; /* constant leaves */
} ax_exp;

/* An array computation.  NULL is the invalid computation. */
typedef struct ax_node *ax_acc;

/* True if e is a valid expression (not the result of a failed builder). */
bool ax_exp_ok(ax_exp e);
/* The type of e, or NULL if invalid (or a tuple of constants, whose type
 * exists only once the tuple is used in a context). */
const ax_type *ax_exp_type(ax_exp e);
/* The context of e, or NULL for a context-free constant. */
ax_ctx *ax_exp_ctx(ax_exp e);

/* Constants. */
ax_exp ax_bool(bool x);
ax_exp ax_i8(int8_t x);
ax_exp ax_i16(int16_t x);
ax_exp ax_i32(int32_t x);
ax_exp ax_i64(int64_t x);
ax_exp ax_u8(uint8_t x);
ax_exp ax_u16(uint16_t x);
ax_exp ax_u32(uint32_t x);
ax_exp ax_u64(uint64_t x);
ax_exp ax_f32(float x);
ax_exp ax_f64(double x);
/* A constant of scalar type s from a double / an int64 (converted as by ax_cvt). */
ax_exp ax_constf(ax_scalar s, double x);
ax_exp ax_consti(ax_scalar s, int64_t x);
/* Turns a constant (or any expression) into a term of context cx. */
ax_exp ax_const(ax_ctx *cx, ax_exp c);

/* Arithmetic (both operands of one numeric type; the result has it too).
 * ax_div is division: IEEE for floating point, truncating for integers
 * (like C).  ax_quot/ax_rem truncate towards zero; ax_idiv/ax_mod round
 * towards negative infinity (Haskell's div and mod).  Integer division by
 * zero is a run-time error; INT_MIN / -1 wraps (remainder 0). */
ax_exp ax_add(ax_exp a, ax_exp b);
ax_exp ax_sub(ax_exp a, ax_exp b);
ax_exp ax_mul(ax_exp a, ax_exp b);
ax_exp ax_div(ax_exp a, ax_exp b);
ax_exp ax_quot(ax_exp a, ax_exp b);
ax_exp ax_rem(ax_exp a, ax_exp b);
ax_exp ax_idiv(ax_exp a, ax_exp b);
ax_exp ax_mod(ax_exp a, ax_exp b);
ax_exp ax_neg(ax_exp a);
ax_exp ax_abs(ax_exp a);
ax_exp ax_signum(ax_exp a);
ax_exp ax_min(ax_exp a, ax_exp b);   /* floating point: if either is NaN, the other */
ax_exp ax_max(ax_exp a, ax_exp b);

/* Bits (integer types).  Shifts take an amount of any integer type;
 * shifting by a negative amount or by the width or more gives 0 (ax_shl,
 * unsigned ax_shr) or the sign fill (signed ax_shr, arithmetic).
 * Rotations take the amount modulo the width.  popcount/clz/ctz give i32
 * (clz and ctz of 0 give the width). */
ax_exp ax_band(ax_exp a, ax_exp b);
ax_exp ax_bor(ax_exp a, ax_exp b);
ax_exp ax_bxor(ax_exp a, ax_exp b);
ax_exp ax_bnot(ax_exp a);
ax_exp ax_shl(ax_exp a, ax_exp n);
ax_exp ax_shr(ax_exp a, ax_exp n);
ax_exp ax_rotl(ax_exp a, ax_exp n);
ax_exp ax_rotr(ax_exp a, ax_exp n);
ax_exp ax_popcount(ax_exp a);
ax_exp ax_clz(ax_exp a);
ax_exp ax_ctz(ax_exp a);

/* Comparisons (operands of one scalar type; result bool).  IEEE for NaN. */
ax_exp ax_eq(ax_exp a, ax_exp b);
ax_exp ax_ne(ax_exp a, ax_exp b);
ax_exp ax_lt(ax_exp a, ax_exp b);
ax_exp ax_le(ax_exp a, ax_exp b);
ax_exp ax_gt(ax_exp a, ax_exp b);
ax_exp ax_ge(ax_exp a, ax_exp b);

/* Booleans.  ax_and/ax_or evaluate b only when a does not decide. */
ax_exp ax_and(ax_exp a, ax_exp b);
ax_exp ax_or(ax_exp a, ax_exp b);
ax_exp ax_not(ax_exp a);

/* Floating point (f32 or f64; the result has the operand's type).
 *
 * exp, log and logbase (log x / log b) are axle's own implementation, the
 * same on every backend: in the exact mode the interpreter, the CPU
 * backend (at any vector width, in a loop's body or its tail, in scalar
 * code) and the GPU backends compute the same bits, within 1 ulp of the
 * exact value for f32 and f64 (measured over every float class,
 * tests/test_vmath.c), with C99's special values (exp: overflow to +inf,
 * gradual underflow, exp(-inf) = +0; log: log(+-0) = -inf, log of a
 * negative number NaN).  The fast modes (ax_options.fast_math) call the C
 * library's instead on the CPU (glibc's vector versions, within 4 ulp).
 * The other functions are the C library's on the CPU (its vector
 * versions, libmvec, where glibc has them) and the device's on a GPU:
 * within a few ulp of the interpreter's (tests/test_mathfns.c states each
 * bound). */
ax_exp ax_exp_(ax_exp a);            /* e^a (ax_exp is the type's name) */
ax_exp ax_log(ax_exp a);
ax_exp ax_sqrt(ax_exp a);
ax_exp ax_pow(ax_exp a, ax_exp b);
ax_exp ax_logbase(ax_exp base, ax_exp a);
ax_exp ax_sin(ax_exp a);
ax_exp ax_cos(ax_exp a);
ax_exp ax_tan(ax_exp a);
ax_exp ax_asin(ax_exp a);
ax_exp ax_acos(ax_exp a);
ax_exp ax_atan(ax_exp a);
ax_exp ax_sinh(ax_exp a);
ax_exp ax_cosh(ax_exp a);
ax_exp ax_tanh(ax_exp a);
ax_exp ax_asinh(ax_exp a);
ax_exp ax_acosh(ax_exp a);
ax_exp ax_atanh(ax_exp a);
ax_exp ax_atan2(ax_exp y, ax_exp x);
ax_exp ax_is_nan(ax_exp a);          /* bool */
ax_exp ax_is_infinite(ax_exp a);     /* bool */
/* Rounding to an integer value, delivered in type `to` (any numeric type).
 * ax_round rounds halves to even.  A float that does not fit an integer
 * type saturates to its range; NaN gives 0. */
ax_exp ax_floor(ax_exp a, ax_scalar to);
ax_exp ax_ceiling(ax_exp a, ax_scalar to);
ax_exp ax_round(ax_exp a, ax_scalar to);
ax_exp ax_truncate(ax_exp a, ax_scalar to);

/* Conversions.  ax_cvt converts between any two scalar types: integers
 * wrap to the target width, floats to integers truncate and saturate (NaN
 * gives 0), bool is 0 or 1 (and nonzero is true).  ax_bitcast reinterprets
 * the bits of a value as another type of the same size. */
ax_exp ax_cvt(ax_exp a, ax_scalar to);
ax_exp ax_bitcast(ax_exp a, ax_scalar to);

/* Conditional: c is bool, t and e of one type; evaluates only the branch
 * taken. */
ax_exp ax_cond(ax_exp c, ax_exp t, ax_exp e);

/* Tuples.  ax_tuple of n >= 2 components (0 gives unit); ax_get projects
 * component i (0-based; on an index it reads that component).  A tuple of
 * up to 8 scalar constants is itself a constant; a constant tuple nested in
 * a constant tuple needs a context: wrap a component with ax_const. */
ax_exp ax_tuple(int n, const ax_exp *comps);
ax_exp ax_tuple2(ax_exp a, ax_exp b);
ax_exp ax_tuple3(ax_exp a, ax_exp b, ax_exp c);
ax_exp ax_tuple4(ax_exp a, ax_exp b, ax_exp c, ax_exp d);
ax_exp ax_get(ax_exp t, int i);

/* Indices (shapes).  ax_index builds an index of rank n from n i64
 * expressions, outermost first (other integer types are converted);
 * ax_index_get reads component `dim`.  ax_ignore(rank) is the index that
 * ax_permute's index function returns to drop an element. */
ax_exp ax_index(int n, const ax_exp *comps);
ax_exp ax_ix1(ax_exp i);
ax_exp ax_ix2(ax_exp i, ax_exp j);
ax_exp ax_ix3(ax_exp i, ax_exp j, ax_exp k);
ax_exp ax_index_get(ax_exp ix, int dim);
ax_exp ax_ignore(int rank);
/* Shape arithmetic: number of elements of a shape (i64); the linear
 * (row-major) position of an index within a shape; its inverse. */
ax_exp ax_shape_size(ax_exp sh);
ax_exp ax_to_linear(ax_exp sh, ax_exp ix);
ax_exp ax_from_linear(ax_exp sh, ax_exp i);

/* Reading arrays from scalar code.  In safe mode (the default) an index
 * out of bounds is a run-time error. */
ax_exp ax_at(ax_acc a, ax_exp ix);          /* element at an index of a's rank */
ax_exp ax_at_linear(ax_acc a, ax_exp i);    /* element at a row-major position */
ax_exp ax_shape(ax_acc a);                  /* a's extent, an index */
ax_exp ax_size(ax_acc a);                   /* a's element count, i64 */

/* Scalar functions.  axle calls the callback once with fresh variables. */
typedef ax_exp (*ax_fn1)(ax_exp x, void *env);
typedef ax_exp (*ax_fn2)(ax_exp x, ax_exp y, void *env);
typedef ax_exp (*ax_fn3)(ax_exp x, ax_exp y, ax_exp z, void *env);
/* n-ary: the stencil functions receive the neighbourhood this way. */
typedef ax_exp (*ax_fnv)(const ax_exp *xs, void *env);

/* A scalar loop: starting from init, while cond(x) holds, x = body(x).
 * cond returns bool; body returns a value of init's type. */
ax_exp ax_while(ax_fn1 cond, ax_fn1 body, void *env, ax_exp init);

/* Ready-made functions for the primitive operators, to pass where a
 * function is expected: ax_fold(ax_fn_add, ax_f32(0), xs). */
ax_exp ax_fn_add(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_sub(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_mul(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_div(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_min(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_max(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_band(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_bor(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_bxor(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_and(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_or(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_neg(ax_exp x, void *env);
ax_exp ax_fn_abs(ax_exp x, void *env);
ax_exp ax_fn_not(ax_exp x, void *env);
ax_exp ax_fn_id(ax_exp x, void *env);
/* Comparisons (bool): x < y, x <= y, x > y, x >= y, x == y, x != y. */
ax_exp ax_fn_lt(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_le(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_gt(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_ge(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_eq(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_ne(ax_exp x, ax_exp y, void *env);
ax_exp ax_fn_fst(ax_exp x, ax_exp y, void *env);   /* x (in ax_permute: the new value wins) */
ax_exp ax_fn_snd(ax_exp x, ax_exp y, void *env);   /* y (in ax_permute: the old value stays) */

/* ------------------------------------------------------------------------ */
/* Array computations                                                       */
/* ------------------------------------------------------------------------ */

/* Embeds a host array (takes a reference; the array is read when the
 * program runs, not copied when built).  Arrays are data, never compiled
 * into kernels: the same computation over another array of the same
 * element type and rank, of any shape, finds its kernels in the cache. */
ax_acc ax_use(ax_ctx *cx, ax_array *a);
/* A rank-0 array holding e.  When e is made of constants (ax_f32(a),
 * ax_tuple2 of constants, ...) the unit is data, as ax_use is: a new value
 * does not recompile. */
ax_acc ax_unit(ax_ctx *cx, ax_exp e);

/* Parameters: compile once, run many.
 *
 * What is compiled in: constants in scalar functions (an ax_f32(a) built
 * inside a callback, a fold's initial value, a stencil's boundary value)
 * are part of the generated code, so each new value means a new compile
 * (about 0.1 s with the C backend) and a new cache entry.  What is data:
 * arrays (ax_use), units of constants (ax_unit) and parameters.  To vary a
 * scalar cheaply, read it from a rank-0 array: ax_param_exp below (or
 * ax_at_linear(ax_unit(ax_f32(a)), ax_i64(0))) can be used in any scalar
 * function, captured through the callback's env.
 *
 * ax_param makes a placeholder for an array of the given element type and
 * rank that is given anew at each ax_program_run_with: args[index] is the
 * array the program reads in its place.  Its shape may change from run to
 * run.  Several ax_param calls with one index are the same parameter.
 * ax_param_exp is a scalar parameter of type t (a scalar or tuple type):
 * the element of a rank-0 array parameter.  A computation with parameters
 * runs only through ax_compile and ax_program_run_with (ax_run reports
 * AX_ERR_ARG).  Indices are 0 .. AX_MAX_PARAMS-1. */
#define AX_MAX_PARAMS 256
ax_acc ax_param(ax_ctx *cx, int index, const ax_type *elem, int rank);
ax_exp ax_param_exp(ax_ctx *cx, int index, const ax_type *t);
/* An array of shape sh (an index) whose element at ix is f(ix). */
ax_acc ax_generate(ax_ctx *cx, ax_exp sh, ax_fn1 f, void *env);
/* Elementwise. zip_with's result has the intersection of the shapes. */
ax_acc ax_map(ax_fn1 f, void *env, ax_acc a);
ax_acc ax_zip_with(ax_fn2 f, void *env, ax_acc a, ax_acc b);
ax_acc ax_zip_with3(ax_fn3 f, void *env, ax_acc a, ax_acc b, ax_acc c);
/* result[ix] = a[p(ix)] for ix in shape sh. */
ax_acc ax_backpermute(ax_exp sh, ax_fn1 p, void *env, ax_acc a);
/* Forward permutation: starts from a copy of dflt; each element a[ix] is
 * combined into result[p(ix)] with comb(new, old), unless p(ix) is
 * ax_ignore.  comb must be associative and commutative when several
 * elements meet in one place (the order of combination is unspecified). */
ax_acc ax_permute(ax_fn2 comb, void *cenv, ax_acc dflt, ax_fn1 p, void *penv, ax_acc a);

/* Slice specifiers, one per dimension, outermost first. */
typedef struct ax_slice {
    int fixed;        /* 0: all of this dimension; 1: a fixed index / extent */
    ax_exp at;        /* the index (slice) or the new extent (replicate), i64 */
} ax_slice;
ax_slice ax_all(void);
ax_slice ax_fixed(ax_exp at);
/* Replicate: spec has one entry per result dimension; the ax_all entries,
 * in order, are a's dimensions, and each ax_fixed(n) inserts a new
 * dimension of extent n along which a is repeated. */
ax_acc ax_replicate(int nspec, const ax_slice *spec, ax_acc a);
/* Slice: spec has one entry per dimension of a; ax_fixed(i) takes index i
 * of that dimension (dropping it), ax_all keeps it. */
ax_acc ax_slice_(int nspec, const ax_slice *spec, ax_acc a);
/* Same elements in row-major order, new shape of equal size. */
ax_acc ax_reshape(ax_exp sh, ax_acc a);
/* Convenience: a rank-1 view of a (reshape to its size). */
ax_acc ax_flatten(ax_acc a);
/* Transpose: the dimensions of a in a new order.  Dimension d of the
 * result is dimension perm[d] of a (perm lists each of 0 .. rank-1 once,
 * as NumPy's axes); perm NULL reverses the dimensions (a matrix's
 * transpose).  A backpermute: it fuses with what produces and consumes
 * it, and moves no data of its own. */
ax_acc ax_transpose(ax_acc a, const int *perm);

/* Makes a as an array of its own: fusion stops here, so what reads a
 * reads it from memory instead of computing it again where it is read
 * (Accelerate's `compute`).  For an intermediate that several consumers,
 * or a consumer with a strided or repeated access, would otherwise
 * recompute:
 *   ax_acc t = ax_compute(ax_transpose(b, NULL));   (b's transpose, made once)
 * a itself is computed as usual (its producers fused into it). */
ax_acc ax_compute(ax_acc a);

/* Reductions along the innermost dimension: rank r becomes rank r-1 (a
 * vector becomes a rank-0 array).  f must be associative; z is combined
 * in once per row (it need not be a neutral element).  fold1 needs
 * non-empty rows (an empty row is a run-time shape error).  The order of
 * operands is preserved, so f need not be commutative.
 *
 * Matrix products.  A fold with ax_fn_add and a zero of 0 over a product
 * of two replicated matrices is a matrix product (the README's form):
 *   ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL,
 *       ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(n), ax_all()}, a),
 *       ax_replicate(3, (ax_slice[]){ax_fixed(m), ax_all(), ax_all()}, ax_transpose(b, NULL))))
 * is a (m x k) times b (k x n), either operand possibly transposed, times
 * constants, or a sum of such products (a b^T + b a^T), in f32 or f64,
 * with several leading dimensions of a merged into its rows (a batch of
 * rows, as PolyBench's doitgen).  Where each product sums:
 * - the exact modes, CPU backend, a single product written a b, (c a) b
 *   or a (c b) (c a constant) of at least 96 rows, 16 columns and 16
 *   terms, whose operands' extents are the product's own (not cut shorter
 *   by the zipWith): a register-tiled loop that sums each element's k terms strictly
 *   in order from z, each computed as written, no multiply fused into an
 *   add: the interpreter's value, bit for bit;
 * - the exact modes otherwise (and every GPU backend): the fold's
 *   generated loop, which sums each element's k terms in a fixed grouping
 *   of its own (f is associative, so any fold may group its terms; the
 *   same grouping on every run), each term as written, no multiply fused
 *   into an add;
 * - the fast modes, CPU backend, where a BLAS is installed (OpenBLAS, BSD,
 *   loaded at run time: libopenblas.so.0; AXLE_BLAS names another library
 *   or, off, none): the BLAS's gemm (syrk and syr2k for a a^T and a b^T +
 *   b a^T, the upper triangle copied from the lower), on the context's
 *   threads.  The BLAS blocks each sum and fuses multiplies into adds,
 *   so a sum of k terms is reassociated, within the fast mode's bound
 *   (ax_options.fast_math); a constant factor scales the sum rather than
 *   each term.  Integer products and the exact modes never take this
 *   path; nor do operands whose extents are not the product's own;
 * - the fast modes without a BLAS: the loops above, with the fast
 *   mode's licence to reassociate and contract. */
ax_acc ax_fold(ax_fn2 f, void *env, ax_exp z, ax_acc a);
ax_acc ax_fold1(ax_fn2 f, void *env, ax_acc a);
/* Convenience: fold all elements into a rank-0 array. */
ax_acc ax_fold_all(ax_fn2 f, void *env, ax_exp z, ax_acc a);
/* Segmented reductions along the innermost dimension: segs is a vector of
 * segment lengths (any integer type) that must add up to the innermost
 * extent; the innermost dimension of the result has one element per
 * segment. */
ax_acc ax_fold_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs);
ax_acc ax_fold1_seg(ax_fn2 f, void *env, ax_acc a, ax_acc segs);

/* Scans along the innermost dimension (f associative, order preserved).
 * scanl: inclusive of z, innermost extent n+1 (z, z.a0, z.a0.a1, ...).
 * scanl1: extent n (a0, a0.a1, ...).  scanr/scanr1: from the right.
 * scanl'/scanr' (ax_scanl_ex/ax_scanr_ex): exclusive scan of extent n plus
 * the totals (rank r-1), as an array pair: ax_aget(s, 0), ax_aget(s, 1). */
ax_acc ax_scanl(ax_fn2 f, void *env, ax_exp z, ax_acc a);
ax_acc ax_scanl1(ax_fn2 f, void *env, ax_acc a);
ax_acc ax_scanr(ax_fn2 f, void *env, ax_exp z, ax_acc a);
ax_acc ax_scanr1(ax_fn2 f, void *env, ax_acc a);
ax_acc ax_scanl_ex(ax_fn2 f, void *env, ax_exp z, ax_acc a);
ax_acc ax_scanr_ex(ax_fn2 f, void *env, ax_exp z, ax_acc a);

/* Segmented scans: the scans above, each segment of the innermost
 * dimension scanned on its own.  segs gives the segment lengths as
 * ax_fold_seg takes them (a vector of any integer type, none negative,
 * adding up to the innermost extent: a run-time shape error otherwise,
 * worded as ax_fold_seg's); a segment of length 0 is allowed.  f must be
 * associative; its operand order is kept.  With m segments and innermost
 * extent n:
 *   scanl_seg     each segment gets z in front: extent n + m
 *                 ([1,2 | | 3] with (+), 0: [0,1,3 | 0 | 0,3])
 *   scanl1_seg    extent n ([1,2 | | 3]: [1,3 | | 3])
 *   scanl_ex_seg  exclusive, extent n, and each segment's total (extent m;
 *                 z for an empty one), as an array pair
 *   scanr_seg, scanr1_seg, scanr_ex_seg: from the right (z behind each
 *                 segment; the total is f(a0, f(a1, ... f(a_last, z))))
 * They are built from ordinary scans of (flag, element) pairs, so they
 * run on every backend and fuse like any scan (docs/guide/language.md). */
ax_acc ax_scanl_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs);
ax_acc ax_scanl1_seg(ax_fn2 f, void *env, ax_acc a, ax_acc segs);
ax_acc ax_scanr_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs);
ax_acc ax_scanr1_seg(ax_fn2 f, void *env, ax_acc a, ax_acc segs);
ax_acc ax_scanl_ex_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs);
ax_acc ax_scanr_ex_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs);

/* Sorting: each row (the innermost dimension) of keys in ascending order
 * (descending: true, the reverse), stably (equal keys keep their order),
 * for keys of any scalar type: integers by value, floats in IEEE
 * totalOrder (-inf < ... < -0.0 < +0.0 < ... < +inf) with every NaN last
 * (first when descending), as they are (a NaN keeps its bits).
 * ax_sort_by sorts vals (any element type, the keys' shape: another size
 * is a run-time shape error) by keys and gives the pair (sorted keys,
 * vals in that order), as ax_aget(r, 0), ax_aget(r, 1):
 *   ax_acc r = ax_sort_by(ages, ids, false);     ids by age, ties in input order
 * On the CPU a parallel radix sort of 8 bits a pass (about two passes
 * over the keys per byte of the key; fewer for keys of a small range),
 * and a gather of the values at the end; the keys' producer is made as an
 * array first.  The GPU backends: a radix sort of 8 bits a pass in
 * kernels of their own. */
ax_acc ax_sort(ax_acc keys, bool descending);
ax_acc ax_sort_by(ax_acc keys, ax_acc vals, bool descending);

/* Grouping by integer keys: keys is a vector of any integer type whose
 * elements lie in [0, nbuckets) (one outside is a run-time index error,
 * as ax_permute's); vals a vector of the keys' length (another length is
 * a run-time shape error) of any element type.
 *   ax_group_by gives the pair (counts, grouped): counts an i64 vector of
 *     nbuckets, the number of each key, and grouped the values in key
 *     order, each group in input order (stable): group k is the counts[k]
 *     values after the first counts[0] + ... + counts[k-1], the layout
 *     ax_fold_seg and the segmented scans take as segments:
 *       ax_acc g = ax_group_by(ages, names, ax_i64(120));
 *       ax_acc oldest = ax_fold_seg(ax_fn_max, NULL, z, ax_aget(g, 1), ax_aget(g, 0));
 *   ax_reduce_by_key gives a vector of nbuckets: at k, f folded over the
 *     values whose key is k, from z (z where no value has the key); f must
 *     be associative and commutative (the order of combination is
 *     unspecified, as ax_permute's):
 *       ax_acc total = ax_reduce_by_key(ax_fn_add, NULL, ax_f64(0), shop, sales, ax_i64(nshops));
 * They are made of a forward permutation and the sort (a count of each
 * key by its key, and the values sorted by key), so they run on every
 * backend and fuse as those do. */
ax_acc ax_group_by(ax_acc keys, ax_acc vals, ax_exp nbuckets);
ax_acc ax_reduce_by_key(ax_fn2 f, void *env, ax_exp z, ax_acc keys, ax_acc vals, ax_exp nbuckets);

/* The elements of a (any rank, row-major order) that satisfy p, as a
 * vector. */
ax_acc ax_filter(ax_fn1 p, void *env, ax_acc a);

/* Stencils.  size has rank(a) odd extents (the neighbourhood); f receives
 * the neighbourhood's elements in row-major order (centre at the middle)
 * and returns the new element.  The boundary rule says what is read
 * outside a:
 *   clamp:    the nearest edge element,
 *   mirror:   reflected about the edge element (-1 reads 1, n reads n-2),
 *   wrap:     modulo the extent,
 *   constant: the given value. */
typedef enum ax_boundary_kind {
    AX_CLAMP, AX_MIRROR, AX_WRAP, AX_CONSTANT
} ax_boundary_kind;
typedef struct ax_boundary {
    ax_boundary_kind kind;
    ax_exp value;            /* AX_CONSTANT only: of the element type */
} ax_boundary;
ax_boundary ax_clamp(void);
ax_boundary ax_mirror(void);
ax_boundary ax_wrap(void);
ax_boundary ax_constant(ax_exp value);
ax_acc ax_stencil(ax_fnv f, void *env, const int *size, ax_boundary b, ax_acc a);
/* Two arrays of one rank: f receives a's neighbourhood then b's; the result
 * has the intersection of the shapes. */
ax_acc ax_stencil2(ax_fnv f, void *env, const int *size_a, ax_boundary ba, ax_acc a,
                   const int *size_b, ax_boundary bb, ax_acc b);
/* The same, with f also receiving the element's index ix (an index of
 * rank(a) components: ax_index_get(ix, d)), so that one pass can treat
 * the border apart from the interior.  Jacobi's sweep, updating the
 * interior and keeping the border:
 *
 *   static ax_exp sweep(ax_exp ix, const ax_exp *v, void *env) {
 *       ax_exp n = *(ax_exp *)env, i = ax_index_get(ix, 0), j = ax_index_get(ix, 1);
 *       ax_exp border = ax_or(ax_or(ax_eq(i, ax_i64(0)), ax_eq(j, ax_i64(0))),
 *                             ax_or(ax_eq(i, ax_sub(n, ax_i64(1))), ax_eq(j, ax_sub(n, ax_i64(1)))));
 *       ax_exp mean = ax_mul(ax_f64(0.2), ax_add(ax_add(ax_add(v[1], v[3]), ax_add(v[4], v[5])), v[7]));
 *       return ax_cond(border, v[4], mean);
 *   }
 *   ... ax_stencil_ix(sweep, &n, (int[]){3, 3}, ax_clamp(), a) ...
 *
 * (n the side, e.g. ax_index_get(ax_shape(a), 0) captured by the caller). */
typedef ax_exp (*ax_fnvi)(ax_exp ix, const ax_exp *xs, void *env);
ax_acc ax_stencil_ix(ax_fnvi f, void *env, const int *size, ax_boundary b, ax_acc a);
ax_acc ax_stencil2_ix(ax_fnvi f, void *env, const int *size_a, ax_boundary ba, ax_acc a,
                      const int *size_b, ax_boundary bb, ax_acc b);

/* Control flow.  ax_acond: c is a bool expression; evaluates one branch
 * (both of one type).  ax_awhile: starting from init, while cond(x) (a
 * rank-0 bool array) holds, x = body(x); x may be an array tuple. */
typedef ax_acc (*ax_afn)(ax_acc x, void *env);
ax_acc ax_acond(ax_exp c, ax_acc t, ax_acc e);
ax_acc ax_awhile(ax_afn cond, ax_afn body, void *env, ax_acc init);
/* A counted loop: starting from init, n times x = body(step, x), step
 * being 0, 1, ..., n-1 (an i64 expression the body's scalar functions may
 * read; it is data, read from the loop's state, not compiled in); n <= 0
 * gives init.  n is an integer expression: a constant is compiled in, an
 * ax_param_exp (or a read of an array) varies without recompiling.  It is
 * an ax_awhile whose state carries the step:
 *
 *   static ax_acc relax(ax_exp step, ax_acc x, void *env) {
 *       return ax_map(halve, NULL, x);         (step unused here)
 *   }
 *   ... ax_for(ax_i64(100), relax, NULL, ax_use(cx, a)) ... */
typedef ax_acc (*ax_afni)(ax_exp step, ax_acc x, void *env);
ax_acc ax_for(ax_exp n, ax_afni body, void *env, ax_acc init);

/* Several results: a tuple of array computations, and its projection. */
ax_acc ax_atuple(int n, const ax_acc *as);
ax_acc ax_atuple2(ax_acc a, ax_acc b);
ax_acc ax_aget(ax_acc t, int i);

/* The type of a computation ([elem]^rank or a tuple of those), or NULL. */
const ax_type *ax_acc_type(ax_acc a);
/* The context a computation was built in (NULL for NULL): an ax_awhile
 * or ax_for body reaches it from its argument, with no global. */
ax_ctx *ax_acc_ctx(ax_acc a);
/* For a single array: its element type and rank (-1 if not an array). */
const ax_type *ax_acc_elem(ax_acc a);
int ax_acc_rank(ax_acc a);

/* ------------------------------------------------------------------------ */
/* Running                                                                  */
/* ------------------------------------------------------------------------ */

/* Compiles (or finds in the cache) and runs the computation on the
 * context's backend; returns the result array, a new reference, or NULL
 * with ax_error(cx) set.  For a tuple of arrays use ax_run_n. */
ax_array *ax_run(ax_ctx *cx, ax_acc a);
/* Runs a computation with any number of results: writes up to `max` new
 * references to out[] (a tuple's components in order, flattened) and
 * returns their number, or -1 on error (then out[] holds nothing to
 * release). */
int ax_run_n(ax_ctx *cx, ax_acc a, ax_array **out, int max);

/* A compiled program, for running the same computation many times and for
 * measuring compile and run time apart.  It survives ax_ctx_reset; see
 * ax_ctx_free for its end. */
typedef struct ax_program ax_program;
ax_program *ax_compile(ax_ctx *cx, ax_acc a);
/* Runs it; as ax_run_n. */
int ax_program_run(ax_program *p, ax_array **out, int max);
/* Runs it with its parameters (ax_param) given by args[0..nargs): each
 * must be an array of the parameter's element type and rank, of this
 * program's context; the program reads them during the call only (it
 * takes no reference).  nargs must be at least ax_program_params(p); an
 * argument for a parameter the program does not read (the optimiser may
 * find one unused) is not looked at and may be NULL.  Nothing is
 * recompiled.  Returns as ax_run_n; AX_ERR_ARG names a missing or
 * ill-typed argument. */
int ax_program_run_with(ax_program *p, ax_array *const *args, int nargs, ax_array **out, int max);
/* 1 + the highest parameter index the program reads (0: none). */
int ax_program_params(const ax_program *p);
/* The type of the program's result ([elem]^rank or a tuple of those), as
 * ax_acc_type gave it for the computation compiled.  It belongs to the
 * program, not to the terms it was compiled from: it stays valid after
 * ax_ctx_reset, until ax_program_free or ax_ctx_free.  NULL for NULL or
 * for a program whose context was freed. */
const ax_type *ax_program_type(const ax_program *p);
void ax_program_free(ax_program *p);
/* Compiled programs in files, to run where no C compiler is installed
 * and without compiling again.  ax_program_save writes p to path
 * (replacing it whole: a reader never sees half a file): the optimised
 * program, the contents of the arrays it reads (ax_use, as they are now;
 * its parameters stay parameters), and for the CPU backend the compiled
 * code of every kernel, the checked copies of safe mode included.
 * Programs of the CPU backend and of the interpreter can be saved; a GPU
 * backend's cannot (yet).  0, or -1 with an error on p's context.
 *
 * ax_program_load reads one into cx; it runs on the backend it was saved
 * for, whatever cx's backend option, and ax_program_stats says from_disk.
 * NULL, with an AX_ERR_ARG error naming the file and what is wrong, when
 * it is not an axle program file, is truncated or corrupt (its content
 * hash is checked before anything in it is used), was saved by another
 * version of axle, was compiled in another mode than cx's (safe or
 * unsafe; exact, fast or finite maths), or holds code for instructions
 * this CPU lacks (the CPU backend compiles for the machine it runs on,
 * -march=native, unless AXLE_CFLAGS says otherwise).  Loading a file runs
 * the code in it: load only files you would trust as shared libraries. */
int ax_program_save(ax_program *p, const char *path);
ax_program *ax_program_load(ax_ctx *cx, const char *path);
/* ax_program_load of a file's bytes, data[0..size), as a program that
 * carries its programs inside it (an array written by `xxd -i`, a
 * resource) has them; not kept after the call.  Errors name the file
 * "(memory)". */
ax_program *ax_program_load_mem(ax_ctx *cx, const void *data, size_t size);
/* Exported programs: a compiled program as C source, compiled into the
 * application with its own build, so that nothing is compiled at run
 * time and no kernel is loaded from a file.  ax_program_export writes
 * DIR/NAME.c and DIR/NAME.h (NAME a C identifier): the kernels' C, the
 * program (as ax_program_save writes it, without the compiled objects),
 * and NAME_load(cx), which gives the ax_program, with NAME_run(p, args...,
 * out, max), its typed entry.  NAME.h says which flags the kernels were
 * generated for and which parameters the program takes.  The code is
 * checked when NAME_load runs: a CPU without an instruction set the
 * file was compiled for (its -march) and a context in another mode are
 * errors, never a crash.  Programs of the CPU backend and of the
 * interpreter can be exported.  0, or -1 with an error on p's context.
 *
 * ax_program_load_linked is what NAME_load calls: data and fns are the
 * exported file's, isa the instruction sets its compiler was told to use
 * (from its predefined macros). */
typedef struct ax_linked_fn {
    const char *name;
    void (*fn)(void);
} ax_linked_fn;
int ax_program_export(ax_program *p, const char *name, const char *dir);
ax_program *ax_program_load_linked(ax_ctx *cx, const void *data, size_t size, const ax_linked_fn *fns, int nfns,
                                   const char *isa);
/* Statistics of the last compile: IR nodes after sharing recovery, let
 * bindings, kernels, intermediate arrays, and phase times in ms
 * (codegen_ms, the backend generating its code, is part of compile_ms,
 * which also counts the C compiler or the kernel cache). */
typedef struct ax_stats {
    const char *backend;      /* the backend that runs it: "interp", "cpu", ... */
    bool fallback;            /* the default backend fell back to the interpreter:
                                 no C compiler was found (see ax_options.log) */
    int64_t nodes, lets, kernels, intermediates;
    double sharing_ms, optimise_ms, codegen_ms, compile_ms, run_ms;
    /* The compilation of an equal program made earlier in the context was
     * reused (the same operations, functions, constants and types, its
     * arrays in the same places): nothing was optimised, generated or
     * compiled, and compile_ms is the time it took to find it. */
    bool reused;
    /* The program was found compiled in the disk cache (a program entry an
     * earlier compile of an equal program stored, in this process or
     * another): no front end, code generation or C compiler ran. */
    bool from_disk;
} ax_stats;
const ax_stats *ax_program_stats(const ax_program *p);

/* The C compiler command the CPU backend compiles generated code with in
 * cx: the compiler and its flags (the optimiser's, `-march=native`, the
 * mode's, AXLE_CFLAGS), as one line to which a source file, `-o` and
 * `-lm` are added; for compiling code of your own as axle compiles its
 * kernels (`axle bench --compile` times the hand-written baselines so).
 * malloc'd (free it); NULL for NULL or when memory is lacking. */
char *ax_cc_command(const ax_ctx *cx);

/* The disk cache of compiled kernels (shared by every context and process
 * that uses the directory; bounded by ax_options.cache_limit, least
 * recently used entries first).  The directory and limit are those a
 * context made with opt (NULL: defaults and environment) would use.
 * ax_cache_stats counts its entries and bytes; ax_cache_clear removes
 * every entry (and reports what it removed), safely while other processes
 * use the cache: they compile again what they miss.  Both return 0, or -1
 * with errno set (info->dir names the directory when known). */
typedef struct ax_cache_info {
    char dir[4096];
    int64_t entries, bytes;
    int64_t limit;            /* bytes; -1: no limit */
} ax_cache_info;
int ax_cache_stats(const ax_options *opt, ax_cache_info *info);
int ax_cache_clear(const ax_options *opt, ax_cache_info *removed);

/* Dumps the program at a stage ("source", "sharing", ...) to a malloc'd
 * string (the caller frees it), readable or as JSON.  NULL on error. */
char *ax_dump(ax_ctx *cx, ax_acc a, const char *stage, bool json);

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif
#endif /* AXLE_H */
