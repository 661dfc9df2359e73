/*
 * The OpenCL backend: the GPU executor (src/backend/gpu) over any OpenCL
 * 1.2+ device (AMD, Intel and NVIDIA GPUs; PoCL on CPUs, which is how the
 * tests run it on machines without a GPU).
 *
 * The ICD loader (libOpenCL.so.1) is loaded with dlopen at first use and
 * called through the few declarations below (the values are those of the
 * Khronos headers), so axle needs no OpenCL headers or library to build,
 * and runs without them: asking for this backend then fails with a clear
 * message.  The device is the first GPU of the first platform that has
 * one, else the first device; AXLE_OPENCL_DEVICE=<text> picks the first
 * device whose name contains the text.
 *
 * Programs are built from the kernel text with OpenCL C 1.2 and cached by
 * content (SHA-256 of the source, the build options, the platform, device
 * and driver): in memory per context, and on disk as the device's binary
 * (clGetProgramInfo), in the kernel cache directory, with the CPU
 * backend's safety rules (runtime/jit.c).  Not on PoCL: it compiles each
 * kernel when first launched and caches that itself, and asking it for
 * the binary makes it compile every kernel of the program at once, which
 * took a random test program about three times as long (test_random's
 * OpenCL rows show it).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "backend/gpu/gpu.h"
#include "runtime/jit.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the API */

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef struct cl_opaque *cl_platform_id, *cl_device_id, *cl_context, *cl_command_queue, *cl_mem, *cl_program,
    *cl_kernel, *cl_event;

enum {
    CL_SUCCESS = 0,
    CL_PLATFORM_NAME = 0x0902,
    CL_PLATFORM_VERSION = 0x0901,
    CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002,
    CL_DEVICE_SINGLE_FP_CONFIG = 0x101B,
    CL_DEVICE_NAME = 0x102B,
    CL_DRIVER_VERSION = 0x102D,
    CL_DEVICE_VERSION = 0x102F,
    CL_DEVICE_EXTENSIONS = 0x1030,
    CL_PROGRAM_BINARY_SIZES = 0x1165,
    CL_PROGRAM_BINARIES = 0x1166,
    CL_PROGRAM_BUILD_LOG = 0x1183,
};
#define CL_DEVICE_TYPE_GPU ((cl_bitfield)1 << 2)
#define CL_DEVICE_TYPE_ALL ((cl_bitfield)0xFFFFFFFF)
#define CL_MEM_READ_WRITE ((cl_bitfield)1 << 0)
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ((cl_bitfield)1 << 7)

typedef struct ClFns {
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void *, size_t *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *, size_t *);
    cl_context (*CreateContext)(const intptr_t *, cl_uint, const cl_device_id *, void *, void *, cl_int *);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_bitfield, cl_int *);
    cl_mem (*CreateBuffer)(cl_context, cl_bitfield, size_t, void *, cl_int *);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void *, cl_uint,
                                 const cl_event *, cl_event *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void *, cl_uint, const cl_event *,
                                cl_event *);
    cl_int (*EnqueueFillBuffer)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint,
                                const cl_event *, cl_event *);
    cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
    cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id *, const size_t *,
                                          const unsigned char **, cl_int *, cl_int *);
    cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *, void *, void *);
    cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void *, size_t *);
    cl_int (*GetProgramInfo)(cl_program, cl_uint, size_t, void *, size_t *);
    cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                                   const size_t *, cl_uint, const cl_event *, cl_event *);
    cl_int (*Finish)(cl_command_queue);
    cl_int (*ReleaseKernel)(cl_kernel);
    cl_int (*ReleaseProgram)(cl_program);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_int (*ReleaseContext)(cl_context);
} ClFns;

/* A built program and the kernels made from it so far. */
typedef struct ClKernel {
    char *name;
    cl_kernel k;
} ClKernel;

typedef struct ClModule {
    uint8_t key[32];
    cl_program prog;
    ClKernel *ks;
    int nk, capk;
} ClModule;

typedef struct Cl {
    void *lib;
    ClFns f;
    cl_platform_id plat;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    char ident[1536];         /* platform, device, driver: part of the cache key */
    char options[256];
    ClModule **mods;          /* the memory cache */
    int nmods, capmods;
    Jit *cache;               /* the disk cache (its directory handling) */
    bool trace;
    int units;
    char msg[2048];
} Cl;

static void set_msg(Cl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(Cl *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
}

static const char *cl_err(cl_int e)
{
    switch (e) {
    case -1: return "device not found";
    case -4: return "memory object allocation failure";
    case -5: return "out of resources";
    case -6: return "out of host memory";
    case -11: return "build program failure";
    case -30: return "invalid value";
    case -36: return "invalid command queue";
    case -38: return "invalid memory object";
    case -42: return "invalid binary";
    case -43: return "invalid build options";
    case -46: return "invalid kernel name";
    case -48: return "invalid kernel";
    case -49: return "invalid argument index";
    case -50: return "invalid argument value";
    case -51: return "invalid argument size";
    case -52: return "invalid kernel arguments";
    case -54: return "invalid work-group size";
    case -61: return "invalid buffer size";
    case -63: return "invalid global work size";
    default: return "error";
    }
}

/* ------------------------------------------------------------ device memory */

static int cl_alloc(void *d, int64_t bytes, uint64_t *h)
{
    Cl *c = d;
    cl_int e = 0;
    cl_mem m = c->f.CreateBuffer(c->ctx, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &e);
    if (!m || e != CL_SUCCESS) {
        set_msg(c, "clCreateBuffer of %lld bytes: %s (%d)", (long long)bytes, cl_err(e), e);
        return -1;
    }
    *h = (uint64_t)(uintptr_t)m;
    return 0;
}

static void cl_free(void *d, uint64_t h)
{
    Cl *c = d;
    if (h) c->f.ReleaseMemObject((cl_mem)(uintptr_t)h);
}

static int cl_upload(void *d, uint64_t dst, const void *src, int64_t bytes)
{
    Cl *c = d;
    cl_int e = c->f.EnqueueWriteBuffer(c->q, (cl_mem)(uintptr_t)dst, 1, 0, (size_t)bytes, src, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        set_msg(c, "clEnqueueWriteBuffer: %s (%d)", cl_err(e), e);
        return -1;
    }
    return 0;
}

static int cl_download(void *d, void *dst, uint64_t src, int64_t bytes)
{
    Cl *c = d;
    cl_int e = c->f.EnqueueReadBuffer(c->q, (cl_mem)(uintptr_t)src, 1, 0, (size_t)bytes, dst, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        set_msg(c, "clEnqueueReadBuffer: %s (%d)", cl_err(e), e);
        return -1;
    }
    return 0;
}

static int cl_zero(void *d, uint64_t h, int64_t bytes)
{
    Cl *c = d;
    const uint32_t z = 0;
    cl_int e = c->f.EnqueueFillBuffer(c->q, (cl_mem)(uintptr_t)h, &z, sizeof z, 0, (size_t)bytes & ~(size_t)3, 0,
                                      NULL, NULL);
    if (e != CL_SUCCESS) {
        set_msg(c, "clEnqueueFillBuffer: %s (%d)", cl_err(e), e);
        return -1;
    }
    return 0;
}

static int cl_finish(void *d)
{
    Cl *c = d;
    cl_int e = c->f.Finish(c->q);
    if (e != CL_SUCCESS) {
        set_msg(c, "clFinish: %s (%d)", cl_err(e), e);
        return -1;
    }
    return 0;
}

static const char *cl_errmsg(void *d) { return ((Cl *)d)->msg; }

/* ------------------------------------------------------------ programs */

static void module_free(Cl *c, ClModule *m)
{
    for (int i = 0; i < m->nk; i++) {
        c->f.ReleaseKernel(m->ks[i].k);
        free(m->ks[i].name);
    }
    free(m->ks);
    if (m->prog) c->f.ReleaseProgram(m->prog);
    free(m);
}

static void trace(Cl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(Cl *c, const char *fmt, ...)
{
    if (!c->trace) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("axle: opencl cache: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Builds prog for the device; false with the build log in c->msg. */
static bool build_prog(Cl *c, cl_program prog)
{
    cl_int e = c->f.BuildProgram(prog, 1, &c->dev, c->options, NULL, NULL);
    if (e == CL_SUCCESS) return true;
    size_t n = 0;
    char *log = NULL;
    if (c->f.GetProgramBuildInfo(prog, c->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n > 0 &&
        (log = ax__malloc(n + 1)) &&
        c->f.GetProgramBuildInfo(prog, c->dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = 0;
        set_msg(c, "the OpenCL compiler failed (%s): %.1800s", cl_err(e), log);
    } else {
        set_msg(c, "the OpenCL compiler failed: %s (%d)", cl_err(e), e);
    }
    free(log);
    return false;
}

/* The device binary of a built program (malloc'd), or NULL. */
static unsigned char *prog_binary(Cl *c, cl_program prog, size_t *n)
{
    size_t sz = 0;
    if (c->f.GetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL) != CL_SUCCESS || sz == 0) return NULL;
    unsigned char *b = ax__malloc(sz);
    if (!b) return NULL;
    unsigned char *ptrs[1] = {b};
    if (c->f.GetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, NULL) != CL_SUCCESS) {
        free(b);
        return NULL;
    }
    *n = sz;
    return b;
}

static void *cl_build(void *d, const char *src, size_t len, bool *cached)
{
    Cl *c = d;
    *cached = false;
    uint8_t key[32];
    JitSha256 h;
    jit_sha256_init(&h);
    jit_sha256_update(&h, "axle-opencl-1", 13);
    jit_sha256_update(&h, c->ident, strlen(c->ident) + 1);
    jit_sha256_update(&h, c->options, strlen(c->options) + 1);
    jit_sha256_update(&h, src, len);
    jit_sha256_final(&h, key);
    for (int i = 0; i < c->nmods; i++)
        if (!memcmp(c->mods[i]->key, key, 32)) {
            *cached = true;
            return c->mods[i];
        }
    if (c->nmods == c->capmods) {
        int cap = c->capmods ? 2 * c->capmods : 8;
        ClModule **m = ax__realloc(c->mods, sizeof *m * (size_t)cap);
        if (!m) {
            set_msg(c, "out of memory");
            return NULL;
        }
        c->mods = m;
        c->capmods = cap;
    }
    ClModule *m = ax__calloc(1, sizeof *m);
    if (!m) {
        set_msg(c, "out of memory");
        return NULL;
    }
    memcpy(m->key, key, 32);
    cl_int e = 0;
    /* the disk cache: the device's binary of this source */
    size_t bn = 0;
    unsigned char *bin = c->cache ? jit_blob_load(c->cache, "clbin", key, &bn) : NULL;
    if (bin) {
        const unsigned char *bp = bin;
        cl_int st = 0;
        m->prog = c->f.CreateProgramWithBinary(c->ctx, 1, &c->dev, &bn, &bp, &st, &e);
        if (m->prog && e == CL_SUCCESS && st == CL_SUCCESS && build_prog(c, m->prog)) {
            *cached = true;
            trace(c, "disk hit");
        } else {
            trace(c, "the cached binary was refused; building from source");
            if (m->prog) c->f.ReleaseProgram(m->prog);
            m->prog = NULL;
        }
        free(bin);
    }
    if (!m->prog) {
        m->prog = c->f.CreateProgramWithSource(c->ctx, 1, &src, &len, &e);
        if (!m->prog || e != CL_SUCCESS) {
            set_msg(c, "clCreateProgramWithSource: %s (%d)", cl_err(e), e);
            module_free(c, m);
            return NULL;
        }
        if (!build_prog(c, m->prog)) {
            module_free(c, m);
            return NULL;
        }
        if (c->cache && (bin = prog_binary(c, m->prog, &bn))) {
            jit_blob_store(c->cache, "clbin", key, bin, bn);
            free(bin);
        }
    }
    c->mods[c->nmods++] = m;
    return m;
}

static void *cl_kernel_of(void *d, void *module, const char *name)
{
    Cl *c = d;
    ClModule *m = module;
    for (int i = 0; i < m->nk; i++)
        if (!strcmp(m->ks[i].name, name)) return m->ks[i].k;
    if (m->nk == m->capk) {
        int cap = m->capk ? 2 * m->capk : 8;
        ClKernel *k = ax__realloc(m->ks, sizeof *k * (size_t)cap);
        if (!k) {
            set_msg(c, "out of memory");
            return NULL;
        }
        m->ks = k;
        m->capk = cap;
    }
    cl_int e = 0;
    cl_kernel k = c->f.CreateKernel(m->prog, name, &e);
    char *nm = ax__strdup(name);
    if (!k || e != CL_SUCCESS || !nm) {
        if (k) c->f.ReleaseKernel(k);
        free(nm);
        set_msg(c, "clCreateKernel %s: %s (%d)", name, cl_err(e), e);
        return NULL;
    }
    m->ks[m->nk].name = nm;
    m->ks[m->nk].k = k;
    m->nk++;
    return k;
}

static int cl_launch(void *d, void *kp, int64_t groups, int nargs, const GpuArg *args)
{
    Cl *c = d;
    cl_kernel k = kp;
    for (int i = 0; i < nargs; i++) {
        cl_int e = c->f.SetKernelArg(k, (cl_uint)i, args[i].size, args[i].p);
        if (e != CL_SUCCESS) {
            set_msg(c, "clSetKernelArg %d: %s (%d)", i, cl_err(e), e);
            return -1;
        }
    }
    size_t global = (size_t)groups * GPU_WG, local = GPU_WG;
    cl_int e = c->f.EnqueueNDRangeKernel(c->q, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        set_msg(c, "clEnqueueNDRangeKernel: %s (%d)", cl_err(e), e);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ open */

static int cl_units(void *d) { return ((Cl *)d)->units; }

static const GpuApi opencl_api = {
    .name = "opencl",
    .kind = AX_BACKEND_OPENCL,
    .dialect = GPU_OPENCL,
    .alloc = cl_alloc,
    .free = cl_free,
    .upload = cl_upload,
    .download = cl_download,
    .zero = cl_zero,
    .build = cl_build,
    .kernel = cl_kernel_of,
    .launch = cl_launch,
    .finish = cl_finish,
    .errmsg = cl_errmsg,
    .units = cl_units,
    .max_groups = 1 << 20,
};

static void cl_close(void *d)
{
    Cl *c = d;
    if (!c) return;
    for (int i = 0; i < c->nmods; i++) module_free(c, c->mods[i]);
    free(c->mods);
    if (c->q) c->f.ReleaseCommandQueue(c->q);
    if (c->ctx) c->f.ReleaseContext(c->ctx);
    jit_free(c->cache);
    /* The loader stays loaded (dlopen counts references, so the next
     * context finds it at once): OpenCL platforms keep state for the life
     * of the process, and some do not survive being unloaded. */
    free(c);
}

static bool load_fns(Cl *c)
{
#define F(name)                                                  \
    do {                                                         \
        *(void **)&c->f.name = dlsym(c->lib, "cl" #name);        \
        if (!c->f.name) return false;                            \
    } while (0)
    F(GetPlatformIDs); F(GetPlatformInfo); F(GetDeviceIDs); F(GetDeviceInfo); F(CreateContext);
    F(CreateCommandQueue); F(CreateBuffer); F(ReleaseMemObject); F(EnqueueWriteBuffer); F(EnqueueReadBuffer);
    F(EnqueueFillBuffer); F(CreateProgramWithSource); F(CreateProgramWithBinary); F(BuildProgram);
    F(GetProgramBuildInfo); F(GetProgramInfo); F(CreateKernel); F(SetKernelArg); F(EnqueueNDRangeKernel);
    F(Finish); F(ReleaseKernel); F(ReleaseProgram); F(ReleaseCommandQueue); F(ReleaseContext);
#undef F
    return true;
}

static void *cl_open(ax_ctx *cx)
{
    Cl *c = ax__calloc(1, sizeof *c);
    if (!c) return ctx_error(cx, AX_ERR_NOMEM, "opencl: out of memory");
    c->lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) c->lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) {
        free(c);
        return ctx_error(cx, AX_ERR_BACKEND,
                         "opencl: no OpenCL: the ICD loader libOpenCL.so.1 is not installed (Debian: ocl-icd-libopencl1 "
                         "and a driver, e.g. pocl-opencl-icd)");
    }
    if (!load_fns(c)) {
        cl_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "opencl: libOpenCL.so.1 lacks OpenCL 1.2 functions");
    }
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (c->f.GetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) {
        cl_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "opencl: no OpenCL platform is installed (no device)");
    }
    if (np > 16) np = 16;
    const char *want = getenv("AXLE_OPENCL_DEVICE");
    cl_device_id dev = NULL;
    cl_platform_id plat = NULL;
    /* a GPU first (unless a name is asked for), then any device */
    for (int pass = 0; pass < 2 && !dev; pass++)
        for (cl_uint p = 0; p < np && !dev; p++) {
            cl_device_id ds[16];
            cl_uint nd = 0;
            if (c->f.GetDeviceIDs(plats[p], pass == 0 && !want ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL, 16, ds, &nd) !=
                    CL_SUCCESS)
                continue;
            for (cl_uint i = 0; i < nd && i < 16 && !dev; i++) {
                char name[256] = "";
                c->f.GetDeviceInfo(ds[i], CL_DEVICE_NAME, sizeof name - 1, name, NULL);
                if (!want || strstr(name, want)) {
                    dev = ds[i];
                    plat = plats[p];
                }
            }
        }
    if (!dev) {
        cl_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, want ? "opencl: no OpenCL device's name contains \"%s\" (AXLE_OPENCL_DEVICE)"
                                                  : "opencl: no OpenCL device%s", want ? want : "");
    }
    c->plat = plat;
    c->dev = dev;
    cl_int e = 0;
    c->ctx = c->f.CreateContext(NULL, 1, &dev, NULL, NULL, &e);
    if (c->ctx && e == CL_SUCCESS) c->q = c->f.CreateCommandQueue(c->ctx, dev, 0, &e);
    if (!c->ctx || !c->q || e != CL_SUCCESS) {
        cl_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "opencl: cannot open the device: %s (%d)", cl_err(e), e);
    }
    char pn[256] = "", pv[256] = "", dn[256] = "", dv[256] = "", drv[256] = "";
    c->f.GetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pn - 1, pn, NULL);
    c->f.GetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof pv - 1, pv, NULL);
    c->f.GetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
    c->f.GetDeviceInfo(dev, CL_DEVICE_VERSION, sizeof dv - 1, dv, NULL);
    c->f.GetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof drv - 1, drv, NULL);
    snprintf(c->ident, sizeof c->ident, "%s|%s|%s|%s|%s|%s", pn, pv, dn, dv, drv, AX_VERSION_STRING);
    cl_uint cu = 1;
    c->f.GetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    c->units = cu > 0 ? (int)cu : 1;
    /* Correctly rounded float division and square root where the device
     * has them (the interpreter's); OpenCL's default allows 2.5 ulp. */
    cl_bitfield fp = 0;
    c->f.GetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    /* fast_math: contraction and the sign of zeros; no licence to drop NaN
     * and infinities (not -cl-finite-math-only), and not
     * -cl-unsafe-math-optimizations: with it PoCL computed 1/sqrt(x) as an
     * approximate reciprocal square root and a Newton step, NaN for 0
     * (not +inf), -inf for denormals, and up to 4u off elsewhere
     * (tests/test_fastmath.c, fast_mode_keeps_the_maths_functions_and_sqrt) */
    bool fast = cx->opt.fast_math;
    /* finite_math: also -cl-finite-math-only (no NaN or infinity), which
     * changes no function's accuracy */
    snprintf(c->options, sizeof c->options, "-cl-std=CL1.2 -w%s%s%s%s",
             !fast && fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
             fast ? " -cl-mad-enable -cl-no-signed-zeros" : "", cx->opt.finite_math ? " -cl-finite-math-only" : "",
             gpu_lookback_wanted(GPU_OPENCL) ? " -DAX_LOOKBACK=1" : "");
    c->trace = (cx->opt.debug & AX_DEBUG_CACHE) != 0;
    if (!strstr(pn, "Portable Computing Language")) c->cache = gpu_disk_cache(cx);
    return c;
}

static const GpuBackendDef opencl_def = {.api = &opencl_api, .backend = &backend_opencl, .open = cl_open, .close = cl_close};

static bool opencl_available(ax_ctx *cx) { return cx->opt.backend == AX_BACKEND_OPENCL; }
static int opencl_prepare(ax_ctx *cx, Program *p, void **state) { return gpu_prepare(&opencl_def, cx, p, state); }
static int opencl_run(ax_ctx *cx, Program *p, void *state, ax_array **out, int max)
{
    return gpu_run(&opencl_def, cx, p, state, out, max);
}
static int opencl_load(ax_ctx *cx, Program *p, struct Bytes *in, const BundleLink *link, void **state)
{
    (void)link;
    return gpu_load(&opencl_def, cx, p, in, state);
}

const Backend backend_opencl = {
    .name = "opencl",
    .kind = AX_BACKEND_OPENCL,
    .available = opencl_available,
    .prepare = opencl_prepare,
    .run = opencl_run,
    .release = gpu_release,
    .save = gpu_save,
    .load = opencl_load,
    .exportc = gpu_export,
};
