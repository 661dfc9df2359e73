/*
 * The GPU backends' own behaviour, on OpenCL (PoCL where there is no GPU):
 * arrays stay on the device between runs and move only when needed, the
 * device's buffers are reused, the memory limit holds for device memory,
 * compiled programs come from the cache.  (What the kernels compute is
 * the per-operation tests', tests/test_op_*.c, run on OpenCL too.)
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"
#include "backend/gpu/gpu.h"
#include <stdlib.h>
#include <string.h>

/* The GPU backend under test: OpenCL, or CUDA with AXLE_TEST_BACKEND=cuda
 * (scripts/gpu-check.sh, on a machine with an NVIDIA GPU). */
static ax_backend_kind gpu_backend(void)
{
    const char *e = getenv("AXLE_TEST_BACKEND");
    return e && !strcmp(e, "cuda") ? AX_BACKEND_CUDA : AX_BACKEND_OPENCL;
}

static ax_ctx *ctx_gpu_dbg(int64_t mem_limit, unsigned debug)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = gpu_backend();
    o.mem_limit = mem_limit;
    o.debug = debug;
    return ax_ctx_new(&o);
}

static ax_ctx *ctx_gpu(int64_t mem_limit) { return ctx_gpu_dbg(mem_limit, 0); }

/* Whether OpenCL runs here (else each test says so and returns). */
static bool have_gpu(ax_ctx *cx)
{
    ax_array *r = ax_run(cx, ax_unit(cx, ax_i32(1)));
    if (r) {
        ax_array_release(r);
        return true;
    }
    printf("skip: no %s here (%s)\n", gpu_backend() == AX_BACKEND_CUDA ? "CUDA device" : "OpenCL", ax_error(cx));
    return false;
}

static GpuCounters counters(ax_ctx *cx)
{
    GpuCounters c;
    memset(&c, 0, sizeof c);
    CHECK(gpu_counters(cx, gpu_backend(), &c));
    return c;
}

static ax_acc dotp(ax_ctx *cx, ax_array *x, ax_array *y)
{
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_zip_with(ax_fn_mul, NULL, ax_use(cx, x), ax_use(cx, y)));
}

static float host_dotp(const float *x, const float *y, int64_t n)
{
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

TEST(gpu_inputs_are_uploaded_once_and_results_read_back_on_demand)
{
    ax_ctx *cx = ctx_gpu(0);
    if (!have_gpu(cx)) return ax_ctx_free(cx);
    enum { N = 10000 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 7), y[i] = (float)(i % 5) - 2;
    int64_t n = N;
    ax_array *xa = ax_array_wrap(cx, AX_F32, 1, &n, x), *ya = ax_array_wrap(cx, AX_F32, 1, &n, y);
    ax_program *pr = ax_compile(cx, dotp(cx, xa, ya));
    REQUIRE(pr);
    GpuCounters c0 = counters(cx);
    ax_array *r = NULL;
    for (int run = 0; run < 3; run++) {
        ax_array_release(r);
        r = NULL;
        REQUIRE(ax_program_run(pr, &r, 1) == 1);
        GpuCounters c = counters(cx);
        /* the two inputs went up on the first run, never again; nothing came back */
        CHECK_EQ_I(c.uploads - c0.uploads, 2);
        CHECK_EQ_I(c.upload_bytes - c0.upload_bytes, 2 * N * 4);
        CHECK_EQ_I(c.downloads - c0.downloads, 0);
    }
    /* reading the result brings it back, once */
    const float *v = ax_array_data(r, 0);
    REQUIRE(v);
    CHECK_CLOSE(v[0], host_dotp(x, y, N), 1e-5);
    CHECK(ax_array_data(r, 0) == v);
    CHECK_EQ_I(counters(cx).downloads - c0.downloads, 1);
    /* a change to a wrapped input, announced by ax_array_data, is
     * uploaded by the next run */
    float *xd = ax_array_data(xa, 0);
    REQUIRE(xd == x);
    x[3] += 100;
    ax_array_release(r);
    r = NULL;
    REQUIRE(ax_program_run(pr, &r, 1) == 1);
    CHECK_EQ_I(counters(cx).uploads - c0.uploads, 3);
    CHECK_CLOSE(((const float *)ax_array_data(r, 0))[0], host_dotp(x, y, N), 1e-5);
    ax_array_release(r);
    ax_program_free(pr);
    ax_array_release(xa);
    ax_array_release(ya);
    ax_ctx_free(cx);
}

static ax_exp twice(ax_exp x, void *env) { return ax_mul(x, ax_f32(2)); }

TEST(gpu_results_feed_the_next_program_on_the_device)
{
    ax_ctx *cx = ctx_gpu(0);
    if (!have_gpu(cx)) return ax_ctx_free(cx);
    int64_t n = 5000;
    float *x = malloc(sizeof *x * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)i;
    ax_array *xa = ax_array_from(cx, AX_F32, 1, &n, x);
    ax_array *m = RUN(cx, ax_map(twice, NULL, ax_use(cx, xa)));
    REQUIRE(m);
    GpuCounters c0 = counters(cx);
    ax_array *s = RUN(cx, ax_fold(ax_fn_add, NULL, ax_f32(0), ax_use(cx, m)));
    REQUIRE(s);
    GpuCounters c1 = counters(cx);
    CHECK_EQ_I(c1.uploads - c0.uploads, 0);     /* m never left the device */
    CHECK_EQ_I(c1.downloads - c0.downloads, 0);
    CHECK_CLOSE(((const float *)ax_array_data(s, 0))[0], (double)n * (n - 1), 1e-6);
    /* and the host can still read m itself */
    CHECK(((const float *)ax_array_data(m, 0))[n - 1] == 2.0f * (float)(n - 1));
    ax_array_release(s);
    ax_array_release(m);
    ax_array_release(xa);
    free(x);
    ax_ctx_free(cx);
}

TEST(gpu_device_buffers_are_reused_and_programs_cached)
{
    for (int reuse = 1; reuse >= 0; reuse--) {
        ax_ctx *cx = ctx_gpu_dbg(0, reuse ? 0 : AX_DEBUG_NO_REUSE);
        if (!have_gpu(cx)) return ax_ctx_free(cx);
        int64_t n = 100000;
        ax_array *xa = ax_array_new(cx, ax_type_scalar(AX_F32), 1, &n);
        ax_array *r = RUN(cx, ax_map(twice, NULL, ax_use(cx, xa)));
        ax_array_release(r);
        GpuCounters c0 = counters(cx);
        /* the same program built again: the compilation the program
         * memory kept (nothing prepared), or without it (no-reuse) the
         * kernels from the memory cache; its result buffer: the one the
         * last result gave back */
        r = RUN(cx, ax_map(twice, NULL, ax_use(cx, xa)));
        ax_array_release(r);
        GpuCounters c1 = counters(cx);
        CHECK_EQ_I(c1.prepared - c0.prepared, reuse ? 0 : 1);
        CHECK_EQ_I(c1.cached - c0.cached, reuse ? 0 : 1);
        CHECK_EQ_I(c1.allocs - c0.allocs, 0);
        ax_array_release(xa);
        ax_ctx_free(cx);
    }
}

static ax_exp ramp(ax_exp ix, void *env) { return ax_cvt(ax_index_get(ix, 0), AX_F32); }

TEST(gpu_memory_limit_holds_on_the_device)
{
    ax_ctx *cx = ctx_gpu(1 << 20);   /* 1 MiB */
    if (!have_gpu(cx)) return ax_ctx_free(cx);
    /* 4 MB of f32 made on the device */
    CHECK(ax_run(cx, ax_generate(cx, ax_ix1(ax_i64(1000000)), ramp, NULL)) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_NOMEM);
    CHECKF(strstr(ax_error(cx), "memory limit") != NULL, "%s", ax_error(cx));
    /* and the context goes on */
    ax_array *r = RUN(cx, ax_generate(cx, ax_ix1(ax_i64(1000)), ramp, NULL));
    CHECK(r && ((const float *)ax_array_data(r, 0))[999] == 999.0f);
    ax_array_release(r);
    ax_ctx_free(cx);
}
