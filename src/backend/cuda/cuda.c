/*
 * The CUDA backend: the GPU executor (src/backend/gpu) on an NVIDIA GPU,
 * through NVRTC (the run-time compiler) and the driver API.
 *
 * Both libraries are loaded with dlopen at first use and called through
 * the declarations below (values from NVIDIA's documented API), so axle
 * needs neither CUDA's headers nor its libraries to build, and runs
 * without them.  The driver is libcuda.so.1, never the toolkit's
 * stubs/libcuda.so (a link-time stub whose every call fails with
 * CUDA_ERROR_STUB_LIBRARY); without a driver or a device, asking for this
 * backend fails with "no CUDA device" and the reason.  NVRTC is
 * libnvrtc.so.13 or .12 (or libnvrtc.so), from the library path or
 * /usr/local/cuda; it also works alone, without a device, which is how
 * `axle dump --stage ptx` and the tests compile every kernel on machines
 * without a GPU (cuda_compile_check).
 *
 * Every kernel of a program is one NVRTC program, compiled to a CUBIN for
 * the device's sm_XY; if the driver refuses that binary (a driver older
 * than NVRTC), to PTX for compute_XY, which the driver compiles.  Options
 * keep the interpreter's arithmetic: --fmad=false (no contraction), and
 * NVRTC's defaults of exact division and square root and no flushing of
 * subnormals.  The CUBIN is cached by content (source, NVRTC version,
 * options, architecture) in memory and in the kernel cache directory.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "backend/gpu/gpu.h"
#include "runtime/jit.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ NVRTC */

typedef int nvrtcResult;
typedef struct nvrtc_opaque *nvrtcProgram;

typedef struct Nvrtc {
    void *lib;
    int major, minor;
    nvrtcResult (*Version)(int *, int *);
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
} Nvrtc;

static void *open_lib(const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
    }
    return NULL;
}

static bool nvrtc_load(Nvrtc *n)
{
    static const char *const names[] = {
        "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
        "/usr/local/cuda/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so", NULL,
    };
    memset(n, 0, sizeof *n);
    if (!(n->lib = open_lib(names))) return false;
#define F(name)                                                   \
    do {                                                          \
        *(void **)&n->name = dlsym(n->lib, "nvrtc" #name);        \
        if (!n->name) goto bad;                                   \
    } while (0)
    F(Version); F(GetErrorString); F(CreateProgram); F(CompileProgram); F(GetProgramLogSize); F(GetProgramLog);
    F(GetPTXSize); F(GetPTX); F(GetCUBINSize); F(GetCUBIN); F(DestroyProgram);
#undef F
    if (n->Version(&n->major, &n->minor) != 0) goto bad;
    return true;
bad:
    n->lib = NULL;
    return false;
}

/* NVRTC and the driver stay loaded once loaded (dlopen counts references:
 * the next load finds them at once): both keep state for the life of the
 * process, which unloading would only leak. */
static void nvrtc_unload(Nvrtc *n) { n->lib = NULL; }

bool cuda_nvrtc_available(void)
{
    Nvrtc n;
    if (!nvrtc_load(&n)) return false;
    nvrtc_unload(&n);
    return true;
}

/* Compiles src for arch (cubin: sm_<arch>, else compute_<arch> PTX) with
 * extra options (a NULL-terminated list, or NULL); the output (malloc'd) in *out, its size in *outn, the
 * log (malloc'd, may be empty) in *log.  0, or -1 with a message in err. */
static int nvrtc_compile(Nvrtc *n, const char *src, int arch, bool cubin, const char *const *extra, char **out,
                         size_t *outn, char **log, char *err, size_t errsize)
{
    *out = NULL;
    *log = NULL;
    nvrtcProgram p = NULL;
    nvrtcResult r = n->CreateProgram(&p, src, "axle.cu", 0, NULL, NULL);
    if (r != 0) {
        snprintf(err, errsize, "nvrtcCreateProgram: %s", n->GetErrorString(r));
        return -1;
    }
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s_%d", cubin ? "sm" : "compute", arch);
    const char *opts[8];
    int no = 0;
    opts[no++] = archopt;
    opts[no++] = "--std=c++17";
    bool fast = false;   /* the fast-math options replace --fmad=false */
    for (int i = 0; extra && extra[i]; i++) fast |= !strcmp(extra[i], "--fmad=true");
    if (!fast) opts[no++] = "--fmad=false";
    opts[no++] = "-w";
    for (int i = 0; extra && extra[i] && no < 8; i++) opts[no++] = extra[i];
    r = n->CompileProgram(p, no, opts);
    size_t ls = 0;
    if (n->GetProgramLogSize(p, &ls) == 0 && ls > 0 && (*log = ax__malloc(ls + 1))) {
        if (n->GetProgramLog(p, *log) != 0) (*log)[0] = 0;
        (*log)[ls] = 0;
    }
    if (r != 0) {
        snprintf(err, errsize, "NVRTC failed (%s): %.1800s", n->GetErrorString(r), *log ? *log : "");
        n->DestroyProgram(&p);
        return -1;
    }
    size_t sz = 0;
    r = cubin ? n->GetCUBINSize(p, &sz) : n->GetPTXSize(p, &sz);
    if (r == 0 && sz > 0 && (*out = ax__malloc(sz + 1))) {
        r = cubin ? n->GetCUBIN(p, *out) : n->GetPTX(p, *out);
        (*out)[sz] = 0;
    }
    n->DestroyProgram(&p);
    if (r != 0 || !*out) {
        snprintf(err, errsize, "NVRTC gave no %s", cubin ? "CUBIN" : "PTX");
        free(*out);
        *out = NULL;
        return -1;
    }
    *outn = sz;
    return 0;
}

int cuda_compile_check(const char *src, size_t len, int arch, const char *define, char **ptx, char **info, char *err,
                       size_t errsize)
{
    if (ptx) *ptx = NULL;
    *info = NULL;
    Nvrtc n;
    if (!nvrtc_load(&n)) {
        snprintf(err, errsize, "cuda: NVRTC (libnvrtc.so.13 or .12) is not installed");
        return -1;
    }
    /* the text need not end with a NUL at len */
    char *s = ax__malloc(len + 1);
    if (!s) {
        nvrtc_unload(&n);
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    memcpy(s, src, len);
    s[len] = 0;
    size_t sz = 0;
    char *log = NULL, *bin = NULL;
    const char *ex1[2] = {define, NULL}, *ex2[3] = {"--ptxas-options=-v", define, NULL};
    int rc = ptx ? nvrtc_compile(&n, s, arch, false, ex1, ptx, &sz, &log, err, errsize) : 0;
    free(log);
    if (rc == 0) rc = nvrtc_compile(&n, s, arch, true, ex2, &bin, &sz, info, err, errsize);
    free(bin);
    free(s);
    nvrtc_unload(&n);
    if (rc) {
        if (ptx) free(*ptx);
        free(*info);
        if (ptx) *ptx = NULL;
        *info = NULL;
    }
    return rc;
}

/* ------------------------------------------------------------ the driver API */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct cu_opaque *CUcontext, *CUmodule, *CUfunction, *CUstream;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

typedef struct CuFns {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
    CUresult (*GetErrorString)(CUresult, const char **);
} CuFns;

typedef struct CuModule {
    uint8_t key[32];
    CUmodule m;
} CuModule;

typedef struct Cu {
    void *lib;
    CuFns f;
    Nvrtc nv;
    CUdevice dev;
    CUcontext ctx;
    int arch;                 /* 10 * major + minor */
    bool fast;                /* ax_options.fast_math */
    int units;
    char name[256];
    CuModule *mods;
    int nmods, capmods;
    Jit *cache;
    bool trace;
    char msg[2048];
} Cu;

static void set_msg(Cu *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msg(Cu *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
}

static const char *cu_err(Cu *c, CUresult r)
{
    const char *s = NULL;
    if (c->f.GetErrorString && c->f.GetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
    return "error";
}

/* Makes the context current on the calling thread (contexts are per
 * thread; an ax_ctx may move between threads, one at a time). */
static bool cu_enter(Cu *c)
{
    CUresult r = c->f.CtxSetCurrent(c->ctx);
    if (r != CUDA_SUCCESS) set_msg(c, "cuCtxSetCurrent: %s (%d)", cu_err(c, r), r);
    return r == CUDA_SUCCESS;
}

#define CHECK(call, what)                                                  \
    do {                                                                   \
        CUresult r_ = (call);                                              \
        if (r_ != CUDA_SUCCESS) {                                          \
            set_msg(c, "%s: %s (%d)", what, cu_err(c, r_), r_);            \
            return -1;                                                     \
        }                                                                  \
    } while (0)

static int cu_alloc(void *d, int64_t bytes, uint64_t *h)
{
    Cu *c = d;
    if (!cu_enter(c)) return -1;
    CUdeviceptr p = 0;
    CHECK(c->f.MemAlloc(&p, (size_t)bytes), "cuMemAlloc");
    *h = p;
    return 0;
}

static void cu_free(void *d, uint64_t h)
{
    Cu *c = d;
    if (h && cu_enter(c)) c->f.MemFree((CUdeviceptr)h);
}

static int cu_upload(void *d, uint64_t dst, const void *src, int64_t bytes)
{
    Cu *c = d;
    if (!cu_enter(c)) return -1;
    CHECK(c->f.MemcpyHtoD((CUdeviceptr)dst, src, (size_t)bytes), "cuMemcpyHtoD");
    return 0;
}

static int cu_download(void *d, void *dst, uint64_t src, int64_t bytes)
{
    Cu *c = d;
    if (!cu_enter(c)) return -1;
    CHECK(c->f.MemcpyDtoH(dst, (CUdeviceptr)src, (size_t)bytes), "cuMemcpyDtoH");
    return 0;
}

static int cu_zero(void *d, uint64_t h, int64_t bytes)
{
    Cu *c = d;
    if (!cu_enter(c)) return -1;
    CHECK(c->f.MemsetD8((CUdeviceptr)h, 0, (size_t)bytes), "cuMemsetD8");
    return 0;
}

static int cu_finish(void *d)
{
    Cu *c = d;
    if (!cu_enter(c)) return -1;
    CHECK(c->f.CtxSynchronize(), "cuCtxSynchronize");
    return 0;
}

static const char *cu_errmsg(void *d) { return ((Cu *)d)->msg; }
static int cu_units(void *d) { return ((Cu *)d)->units; }

/* ax_options.fast_math: contraction, approximate division and square
 * root (no flush of subnormals to zero: --ftz stays false). */
static const char *const cu_fast_opts[] = {"--fmad=true", "--prec-div=false", "--prec-sqrt=false", NULL};

static void *cu_build(void *d, const char *src, size_t len, bool *cached)
{
    Cu *c = d;
    *cached = false;
    if (!cu_enter(c)) return NULL;
    uint8_t key[32];
    char ver[64];
    snprintf(ver, sizeof ver, "nvrtc %d.%d sm_%d%s", c->nv.major, c->nv.minor, c->arch, c->fast ? " fast" : "");
    JitSha256 h;
    jit_sha256_init(&h);
    jit_sha256_update(&h, "axle-cuda-1", 11);
    jit_sha256_update(&h, ver, strlen(ver) + 1);
    jit_sha256_update(&h, AX_VERSION_STRING, sizeof AX_VERSION_STRING);
    jit_sha256_update(&h, src, len);
    jit_sha256_final(&h, key);
    for (int i = 0; i < c->nmods; i++)
        if (!memcmp(c->mods[i].key, key, 32)) {
            *cached = true;
            return c->mods[i].m;
        }
    if (c->nmods == c->capmods) {
        int cap = c->capmods ? 2 * c->capmods : 8;
        CuModule *m = ax__realloc(c->mods, sizeof *m * (size_t)cap);
        if (!m) {
            set_msg(c, "out of memory");
            return NULL;
        }
        c->mods = m;
        c->capmods = cap;
    }
    CUmodule mod = NULL;
    size_t bn = 0;
    char *bin = c->cache ? jit_blob_load(c->cache, "cubin", key, &bn) : NULL;
    if (bin && c->f.ModuleLoadData(&mod, bin) == CUDA_SUCCESS) *cached = true;
    free(bin);
    if (!mod) {
        char *s = ax__malloc(len + 1), *log = NULL, err[2048];
        if (!s) {
            set_msg(c, "out of memory");
            return NULL;
        }
        memcpy(s, src, len);
        s[len] = 0;
        int rc = nvrtc_compile(&c->nv, s, c->arch, true, c->fast ? cu_fast_opts : NULL, &bin, &bn, &log, err, sizeof err);
        free(log);
        CUresult r = rc == 0 ? c->f.ModuleLoadData(&mod, bin) : CUDA_SUCCESS;
        if (rc == 0 && r == CUDA_SUCCESS) {
            if (c->cache) jit_blob_store(c->cache, "cubin", key, bin, bn);
        } else if (rc == 0) {
            /* a driver older than NVRTC: PTX, which it compiles itself */
            free(bin);
            bin = NULL;
            rc = nvrtc_compile(&c->nv, s, c->arch, false, c->fast ? cu_fast_opts : NULL, &bin, &bn, &log, err, sizeof err);
            free(log);
            if (rc == 0 && (r = c->f.ModuleLoadData(&mod, bin)) != CUDA_SUCCESS) {
                snprintf(err, sizeof err, "cuModuleLoadData: %s (%d)", cu_err(c, r), r);
                rc = -1;
            }
        }
        free(bin);
        free(s);
        if (rc) {
            set_msg(c, "%s", err);
            return NULL;
        }
    }
    memcpy(c->mods[c->nmods].key, key, 32);
    c->mods[c->nmods].m = mod;
    c->nmods++;
    return mod;
}

static void *cu_kernel_of(void *d, void *module, const char *name)
{
    Cu *c = d;
    CUfunction f = NULL;
    CUresult r = c->f.ModuleGetFunction(&f, (CUmodule)module, name);
    if (r != CUDA_SUCCESS) {
        set_msg(c, "cuModuleGetFunction %s: %s (%d)", name, cu_err(c, r), r);
        return NULL;
    }
    return f;
}

static int cu_launch(void *d, void *k, int64_t groups, int nargs, const GpuArg *args)
{
    Cu *c = d;
    if (!cu_enter(c)) return -1;
    void *ps[512];
    if (nargs > 512) {
        set_msg(c, "a kernel with %d arguments", nargs);
        return -1;
    }
    for (int i = 0; i < nargs; i++) ps[i] = (void *)args[i].p;
    CHECK(c->f.LaunchKernel((CUfunction)k, (unsigned)groups, 1, 1, GPU_WG, 1, 1, 0, NULL, ps, NULL), "cuLaunchKernel");
    return 0;
}

static const GpuApi cuda_api = {
    .name = "cuda",
    .kind = AX_BACKEND_CUDA,
    .dialect = GPU_CUDA,
    .alloc = cu_alloc,
    .free = cu_free,
    .upload = cu_upload,
    .download = cu_download,
    .zero = cu_zero,
    .build = cu_build,
    .kernel = cu_kernel_of,
    .launch = cu_launch,
    .finish = cu_finish,
    .errmsg = cu_errmsg,
    .units = cu_units,
    .max_groups = 0x7fffffff,
};

static void cu_close(void *d)
{
    Cu *c = d;
    if (!c) return;
    if (c->ctx && cu_enter(c)) {
        for (int i = 0; i < c->nmods; i++) c->f.ModuleUnload(c->mods[i].m);
        c->f.DevicePrimaryCtxRelease(c->dev);
    }
    free(c->mods);
    nvrtc_unload(&c->nv);
    jit_free(c->cache);
    free(c);
}

static bool load_driver(Cu *c)
{
#define F(field, sym)                                             \
    do {                                                          \
        *(void **)&c->f.field = dlsym(c->lib, sym);               \
        if (!c->f.field) return false;                            \
    } while (0)
    F(Init, "cuInit"); F(DeviceGetCount, "cuDeviceGetCount"); F(DeviceGet, "cuDeviceGet");
    F(DeviceGetAttribute, "cuDeviceGetAttribute"); F(DeviceGetName, "cuDeviceGetName");
    F(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"); F(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    F(CtxSetCurrent, "cuCtxSetCurrent"); F(CtxSynchronize, "cuCtxSynchronize"); F(MemAlloc, "cuMemAlloc_v2");
    F(MemFree, "cuMemFree_v2"); F(MemcpyHtoD, "cuMemcpyHtoD_v2"); F(MemcpyDtoH, "cuMemcpyDtoH_v2");
    F(MemsetD8, "cuMemsetD8_v2"); F(ModuleLoadData, "cuModuleLoadData"); F(ModuleUnload, "cuModuleUnload");
    F(ModuleGetFunction, "cuModuleGetFunction"); F(LaunchKernel, "cuLaunchKernel"); F(GetErrorString, "cuGetErrorString");
#undef F
    return true;
}

static void *cu_open(ax_ctx *cx)
{
    Cu *c = ax__calloc(1, sizeof *c);
    if (!c) return ctx_error(cx, AX_ERR_NOMEM, "cuda: out of memory");
    static const char *const drv[] = {"libcuda.so.1", NULL};
    if (!(c->lib = open_lib(drv))) {
        free(c);
        return ctx_error(cx, AX_ERR_BACKEND, "cuda: no CUDA device: the NVIDIA driver (libcuda.so.1) is not installed");
    }
    if (!load_driver(c)) {
        cu_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "cuda: no CUDA device: libcuda.so.1 lacks the driver API's functions");
    }
    CUresult r = c->f.Init(0);
    int n = 0;
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        cu_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "cuda: no CUDA device: libcuda.so.1 is the toolkit's stub, not a driver");
    }
    if (r != CUDA_SUCCESS || c->f.DeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
        const char *why = r != CUDA_SUCCESS ? cu_err(c, r) : "the driver sees none";
        cu_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "cuda: no CUDA device (%s)", why);
    }
    int major = 0, minor = 0, sm = 0;
    if (c->f.DeviceGet(&c->dev, 0) != CUDA_SUCCESS ||
        c->f.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev) != CUDA_SUCCESS ||
        c->f.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev) != CUDA_SUCCESS ||
        c->f.DeviceGetAttribute(&sm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev) != CUDA_SUCCESS ||
        (r = c->f.DevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS) {
        cu_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "cuda: cannot open device 0");
    }
    c->f.DeviceGetName(c->name, sizeof c->name - 1, c->dev);
    c->arch = 10 * major + minor;
    c->fast = cx->opt.fast_math;
    c->units = sm > 0 ? sm : 1;
    if (!nvrtc_load(&c->nv)) {
        cu_close(c);
        return ctx_error(cx, AX_ERR_BACKEND, "cuda: NVRTC (libnvrtc.so.13 or .12) is not installed");
    }
    c->trace = (cx->opt.debug & AX_DEBUG_CACHE) != 0;
    c->cache = gpu_disk_cache(cx);
    return c;
}

static const GpuBackendDef cuda_def = {.api = &cuda_api, .backend = &backend_cuda, .open = cu_open, .close = cu_close};

static bool cuda_available(ax_ctx *cx) { return cx->opt.backend == AX_BACKEND_CUDA; }
static int cuda_prepare(ax_ctx *cx, Program *p, void **state) { return gpu_prepare(&cuda_def, cx, p, state); }
static int cuda_run(ax_ctx *cx, Program *p, void *state, ax_array **out, int max)
{
    return gpu_run(&cuda_def, cx, p, state, out, max);
}
static int cuda_load(ax_ctx *cx, Program *p, struct Bytes *in, const BundleLink *link, void **state)
{
    (void)link;
    return gpu_load(&cuda_def, cx, p, in, state);
}

const Backend backend_cuda = {
    .name = "cuda",
    .kind = AX_BACKEND_CUDA,
    .available = cuda_available,
    .prepare = cuda_prepare,
    .run = cuda_run,
    .release = gpu_release,
    .save = gpu_save,
    .load = cuda_load,
    .exportc = gpu_export,
};
