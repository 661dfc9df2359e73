/*
 * The GPU backends' shared half (docs/ARCHITECTURE.md, "The pipeline"): one kernel
 * text per program in a neutral dialect, compiled by CUDA (NVRTC) or
 * OpenCL after a short prelude of its own, and one host executor that
 * both drive through a small device API (GpuApi).  Futhark's CUDA and
 * OpenCL backends share their kernels the same way.
 *
 *   codegen.c    the preludes, the kernel argument layout and the driver
 *   skel.c       the skeletons' common frame and the entry of an operation;
 *                map.c, fold.c, scan.c, permute.c, stencil.c, filter.c and
 *                loop.c one skeleton each (the CPU's files have the same
 *                names: src/backend/cpu)
 *   gpu.c        the Backend functions both device APIs share: prepare,
 *                run, release, counters (gpu_int.h: the host side's state)
 *   device.c     the context's device: buffers, transfers, the fault word
 *   exec.c       the host executor (parameters, results, launches)
 *   ../cuda/cuda.c, ../opencl/opencl.c   the two device APIs, each loaded
 *                with dlopen so that axle builds and runs without them
 *
 * The kernels are built from the same description of the fused program
 * as the CPU's C (cg_describe: slots, thunks, free arrays) and the same
 * scalar and element code (src/backend/cgen, in the GPU dialect:
 * G.dialect).  Scalar parameters (thunks: shapes, fold's z, ...) are
 * evaluated on the host by the reference scalar evaluator and passed to
 * the kernels as arguments.  A kernel records only a fault's status code;
 * a run that found one ends with AXB_RERUN_ON_HOST (runtime/host.h), and
 * the driver runs the program again on a host backend, which reports it.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_GPU_H
#define AX_GPU_H

#include "backend/cgen/cgen.h"

/* Threads per group (CUDA block, OpenCL work-group), fixed at compile
 * time: every kernel's shared arrays have one element per thread. */
#define GPU_WG 256

typedef enum GpuDialect { GPU_CUDA, GPU_OPENCL } GpuDialect;

/* ------------------------------------------------- kernel arguments
 *
 * Every kernel of one operation has the same parameter list, in this
 * order (gpu_args enumerates it; the generator declares it and the
 * executor fills it from the same list, so the two cannot drift):
 *   err_                    the fault word (u32, device)
 *   a<s>_<k>                each buffer of each slot with buffers
 *   s1_, s2_                scratch buffers (partials, offsets, locks)
 *   n<s>, s<s>_<d>          each slot's size and extents (i64)
 *   p<t>_<l>                each thunk's leaves, in its leaf type
 *   n_, m_, ch_, nch_, w_   the launch's counts (i64; see fold.c, scan.c) */
typedef enum GpuArgKind {
    GA_ERR, GA_BUF, GA_S1, GA_S2, GA_SIZE, GA_DIM, GA_PARAM, GA_N, GA_M, GA_CH, GA_NCH, GA_W
} GpuArgKind;

typedef struct GpuArgDesc {
    GpuArgKind kind;
    int slot, k;              /* GA_BUF: slot and leaf; GA_SIZE/GA_DIM: slot, dim;
                                 GA_PARAM: leaf index into the parameters */
    ax_scalar s;              /* GA_BUF and GA_PARAM: the leaf's type */
} GpuArgDesc;

/* The arguments of cn's kernels into out (at most max); their number, or
 * -1 if more than max. */
int gpu_args(const CgNode *cn, GpuArgDesc *out, int max);
/* Does slot s of cn have buffers (not a DELAYED operand)? */
bool gpu_slot_has_buffers(const CgNode *cn, int s);

/* ------------------------------------------------- the generator */

typedef struct GpuConfig {
    bool safe;                /* bounds checks on user-computed indices */
} GpuConfig;

/* The neutral kernel text of a verified program: cg_describe's nodes with
 * their kernels (CgNode.role), and the text without a prelude.  NULL with
 * a message in err on failure. */
CgProg *gpu_program(const Program *p, const GpuConfig *cfg, char *err, size_t errsize);
/* The prelude of a dialect (a static string). */
const char *gpu_prelude(GpuDialect d);
/* Items per thread of a single-pass scan's tile (GPU_WG * that many
 * elements: fewer for wider elements, to bound shared memory). */
int gpu_scan_items(const Type *elt);
/* Whether scans run in a single pass with decoupled look-back (Merrill
 * and Garland): on CUDA, whose blocks make progress independently
 * (AXLE_GPU_LOOKBACK=0 turns it off); elsewhere only when
 * AXLE_GPU_LOOKBACK=1 asks, which the tests use to run it on PoCL and
 * Oclgrind (their work-groups do progress independently).  The kernel
 * text has the kernel under AX_LOOKBACK. */
bool gpu_lookback_wanted(GpuDialect d);
/* A kernel's name: axk_<num>_<role>. */
void gpu_kernel_name(char *buf, size_t size, int num, CgRole r);

/* Emits the kernels of one operation (skel.c). */
void gpu_emit_node(G *g, CgNode *cn);
/* The parameter list of cn's kernels, as C text (codegen.c). */
const char *gpu_param_list(G *g, const CgNode *cn);

/* ------------------------------------------------- the device API */

/* One kernel argument: its bytes. */
typedef struct GpuArg {
    const void *p;
    size_t size;
} GpuArg;

/* What a device API (CUDA, OpenCL) provides to the executor.  Device
 * buffers are 64-bit handles (a CUdeviceptr, a cl_mem); 0 is none.
 * Every operation is ordered after the ones before it (one queue);
 * download waits for the queue.  Failures return -1 (NULL) with a
 * message that errmsg gives. */
typedef struct GpuApi {
    const char *name;                     /* "cuda", "opencl" */
    ax_backend_kind kind;
    GpuDialect dialect;
    int (*alloc)(void *d, int64_t bytes, uint64_t *h);
    void (*free)(void *d, uint64_t h);
    int (*upload)(void *d, uint64_t dst, const void *src, int64_t bytes);
    int (*download)(void *d, void *dst, uint64_t src, int64_t bytes);
    int (*zero)(void *d, uint64_t h, int64_t bytes);
    /* Builds the program text (prelude included); the module, or NULL.
     * *cached: found in a cache (memory or disk). */
    void *(*build)(void *d, const char *src, size_t len, bool *cached);
    void *(*kernel)(void *d, void *module, const char *name);
    /* Runs kernel k on `groups` groups of GPU_WG threads. */
    int (*launch)(void *d, void *k, int64_t groups, int nargs, const GpuArg *args);
    int (*finish)(void *d);               /* waits for everything queued */
    const char *(*errmsg)(void *d);
    int (*units)(void *d);                /* compute units (for sizing grids) */
    int64_t max_groups;                   /* groups one launch may have */
} GpuApi;

/* The backend of a device API: available, prepare, run and release, with
 * the device state made by open(cx) on first use (NULL with an error on
 * cx when there is no usable device) and closed by close(d). */
typedef struct GpuBackendDef {
    const GpuApi *api;
    const Backend *backend;   /* the Backend these make (its release frees the state) */
    void *(*open)(ax_ctx *cx);
    void (*close)(void *d);
} GpuBackendDef;

int gpu_prepare(const GpuBackendDef *def, ax_ctx *cx, Program *p, void **state);
/* Backend.save, .load and .exportc for both device APIs (gpu.c): the
 * kernel text in the file, generated again and compared at load. */
struct Bytes;
int gpu_save(ax_ctx *cx, const Program *p, void *state, struct Bytes *w);
int gpu_load(const GpuBackendDef *def, ax_ctx *cx, Program *p, struct Bytes *in, void **state);
int gpu_export(ax_ctx *cx, const Program *p, void *state, const char *name, struct Bytes *w, struct Bytes *k,
               struct Bytes *t);
/* The disk cache for a device API's binaries (a Jit used only for its
 * directory and verified entries: jit_blob_load/store), or NULL when the
 * context has it off. */
struct Jit *gpu_disk_cache(ax_ctx *cx);
int gpu_run(const GpuBackendDef *def, ax_ctx *cx, Program *p, void *state, ax_array **out, int max);
void gpu_release(void *state);
/* The program's kernel text in a dialect, prelude included (ax_dump's
 * "cuda" and "opencl" stages): malloc'd, or NULL with an error on cx. */
char *gpu_text(ax_ctx *cx, Program *p, GpuDialect d);

/* What a context's GPU backend did (for tests and traces): programs
 * prepared and found built in a cache, arrays and bytes moved each way,
 * kernels launched. */
typedef struct GpuCounters {
    int64_t prepared, cached, uploads, upload_bytes, downloads, download_bytes, launches;
    int64_t allocs;           /* device buffers allocated (not from the pool) */
} GpuCounters;
bool gpu_counters(ax_ctx *cx, ax_backend_kind kind, GpuCounters *out);

extern const Backend backend_cuda;
extern const Backend backend_opencl;

/* ------------------------------------------------- CUDA extras */

/* Compiles a program's CUDA text with NVRTC for sm_<arch> (80, 90, ...)
 * without a device: the PTX into *ptx (malloc'd; ptx may be NULL: not
 * wanted) and, from a compile to CUBIN with ptxas' verbose output, its
 * report (registers and spills per kernel) into *info (malloc'd).  define
 * (may be NULL) is one more option, e.g. "-DAX_NO_FAST=1": the portable
 * paths instead of the CUDA-only ones.  0, or -1 with a message in err
 * (NVRTC missing: "... not installed", or the compile failed). */
int cuda_compile_check(const char *src, size_t len, int arch, const char *define, char **ptx, char **info, char *err,
                       size_t errsize);
/* Whether NVRTC can be loaded here. */
bool cuda_nvrtc_available(void);

#endif
