/*
 * Hand-written CUDA baselines for `axle bench --backend cuda`: the Accelerate paper's
 * Table 2 compared axle's GPU code with CUBLAS, CUSP and hand-written
 * CUDA, and these are today's equivalents: cuBLAS's sdot (dot product),
 * cuSPARSE's CSR SpMV (smvm), CUB's reduction, scan and radix sort (the
 * skeleton micro-benchmarks; radix sort with CUB's own algorithm), and
 * kernels written here for Black-Scholes, Mandelbrot and N-body (one
 * body per thread, the other bodies streamed through shared memory in
 * tiles, as the classic all-pairs kernel does).
 *
 * Built by nvcc into a shared library only where nvcc exists; axle bench
 * loads it with dlopen and calls these through each program's
 * cuda_baseline hook (examples/), only where a GPU exists.  Each function
 * uploads its inputs once, runs the computation once to warm up and then
 * `runs` times, and gives the median device time per run (CUDA events:
 * the inputs resident on the device, as axle's are after its first run),
 * with the last run's results copied back for checking.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cusparse.h>
#include <cub/cub.cuh>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#define API extern "C" __attribute__((visibility("default")))

namespace {

struct Err {
    char *msg;
    size_t size;
    bool fail(const char *what, const char *why)
    {
        if (msg && size) snprintf(msg, size, "%s: %s", what, why);
        return false;
    }
};

#define CU(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return er.fail(#call, cudaGetErrorString(e_)); } while (0)
#define CB(call) do { cublasStatus_t e_ = (call); if (e_ != CUBLAS_STATUS_SUCCESS) return er.fail(#call, "cuBLAS error"); } while (0)
#define CS(call) do { cusparseStatus_t e_ = (call); if (e_ != CUSPARSE_STATUS_SUCCESS) return er.fail(#call, cusparseGetErrorString(e_)); } while (0)

/* Device memory freed on scope exit. */
struct Dev {
    void *p = nullptr;
    ~Dev() { if (p) cudaFree(p); }
    template <class T> T *as() { return static_cast<T *>(p); }
};

static bool upload(Err &er, Dev &d, const void *src, size_t bytes)
{
    CU(cudaMalloc(&d.p, bytes ? bytes : 64));
    if (bytes) CU(cudaMemcpy(d.p, src, bytes, cudaMemcpyHostToDevice));
    return true;
}

static bool alloc(Err &er, Dev &d, size_t bytes)
{
    CU(cudaMalloc(&d.p, bytes ? bytes : 64));
    return true;
}

/* One warm-up run of f, then `runs` timed ones: the median in *ms. */
template <class F> static bool timed(Err &er, int runs, double *ms, F f)
{
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    bool ok = f();
    std::vector<float> t;
    for (int r = 0; ok && r < (runs > 0 ? runs : 1); r++) {
        cudaEventRecord(a);
        ok = f();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float x = 0;
        cudaEventElapsedTime(&x, a, b);
        t.push_back(x);
    }
    cudaError_t e = cudaDeviceSynchronize();
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (!ok) return false;
    if (e != cudaSuccess) return er.fail("a baseline kernel", cudaGetErrorString(e));
    std::sort(t.begin(), t.end());
    size_t n = t.size();
    *ms = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    return true;
}

static int grid_for(int64_t n, int block) { return (int)std::min<int64_t>((n + block - 1) / block, 1 << 30); }

/* ------------------------------------------------------------ kernels */

__device__ __forceinline__ float cnd(float d)
{
    const float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    const float poly = k * (0.31938153f + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f +
                                                                                      k * 1.330274429f))));
    const float c = 0.39894228040143267793994605993438f * expf(-0.5f * d * d) * poly;
    return d > 0 ? 1.0f - c : c;
}

__global__ void blackscholes_k(const float *__restrict__ price, const float *__restrict__ strike,
                               const float *__restrict__ years, float *__restrict__ call, float *__restrict__ put,
                               int64_t n, float r, float v)
{
    const float drift = r + 0.5f * v * v;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float p = price[i], s = strike[i], t = years[i];
        const float vsqrtT = v * sqrtf(t);
        const float d1 = (logf(p / s) + drift * t) / vsqrtT, d2 = d1 - vsqrtT;
        const float c1 = cnd(d1), c2 = cnd(d2);
        const float xexp = s * expf(-r * t);
        call[i] = p * c1 - xexp * c2;
        put[i] = xexp * (1.0f - c2) - p * (1.0f - c1);
    }
}

__global__ void mandelbrot_k(int64_t h, int64_t w, float x0, float y0, float sx, float sy, int32_t depth,
                             int32_t *__restrict__ count)
{
    const float fw = (float)w, fh = (float)h;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < h * w; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = i / w, x = i % w;
        const float ci = y0 + ((float)y * sy) / fh, cr = x0 + ((float)x * sx) / fw;
        float zr = cr, zi = ci;
        int32_t k = 0;
        while (k < depth) {
            const float nr = zr * zr - zi * zi + cr, ni = 2.0f * zr * zi + ci;
            if (!(nr * nr + ni * ni <= 4.0f)) break;
            zr = nr;
            zi = ni;
            k++;
        }
        count[i] = k;
    }
}

enum { NB_TILE = 256 };

/* One body per thread; the bodies j pass through shared memory a tile at
 * a time (x, y, z, m), each thread accumulating its acceleration. */
__global__ void __launch_bounds__(NB_TILE) nbody_k(int64_t n, const float *__restrict__ x, const float *__restrict__ y,
                                                   const float *__restrict__ z, const float *__restrict__ m,
                                                   const float *__restrict__ vx, const float *__restrict__ vy,
                                                   const float *__restrict__ vz, float dt, float eps2, float *ox,
                                                   float *oy, float *oz, float *ovx, float *ovy, float *ovz)
{
    __shared__ float4 tile[NB_TILE];
    const int64_t i = blockIdx.x * (int64_t)NB_TILE + threadIdx.x;
    const float xi = i < n ? x[i] : 0, yi = i < n ? y[i] : 0, zi = i < n ? z[i] : 0;
    float ax = 0, ay = 0, az = 0;
    for (int64_t t = 0; t < n; t += NB_TILE) {
        const int64_t j = t + threadIdx.x;
        tile[threadIdx.x] = j < n ? make_float4(x[j], y[j], z[j], m[j]) : make_float4(0, 0, 0, 0);
        __syncthreads();
        const int cnt = (int)(n - t < NB_TILE ? n - t : NB_TILE);
#pragma unroll 8
        for (int k = 0; k < cnt; k++) {
            const float4 b = tile[k];
            const float rx = b.x - xi, ry = b.y - yi, rz = b.z - zi;
            const float rsqr = rx * rx + ry * ry + rz * rz + eps2;
            const float invr = rsqrtf(rsqr);
            const float s = b.w * (invr * invr * invr);
            ax += s * rx;
            ay += s * ry;
            az += s * rz;
        }
        __syncthreads();
    }
    if (i < n) {
        const float nvx = vx[i] + dt * ax, nvy = vy[i] + dt * ay, nvz = vz[i] + dt * az;
        ovx[i] = nvx;
        ovy[i] = nvy;
        ovz[i] = nvz;
        ox[i] = xi + dt * nvx;
        oy[i] = yi + dt * nvy;
        oz[i] = zi + dt * nvz;
    }
}

} /* namespace */

/* ------------------------------------------------------------ the entry points */

API int axcb_dotp(const float *x, const float *y, int64_t n, int runs, float *out, double *ms, char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        Dev dx, dy, dr;
        if (!upload(er, dx, x, sizeof(float) * n) || !upload(er, dy, y, sizeof(float) * n) || !alloc(er, dr, 4))
            return false;
        cublasHandle_t h;
        CB(cublasCreate(&h));
        cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE);
        bool ok = timed(er, runs, ms, [&]() -> bool {
            CB(cublasSdot_64(h, n, dx.as<float>(), 1, dy.as<float>(), 1, dr.as<float>()));
            return true;
        });
        cublasDestroy(h);
        if (ok) CU(cudaMemcpy(out, dr.p, 4, cudaMemcpyDeviceToHost));
        return ok;
    };
    return go() ? 0 : -1;
}

API int axcb_blackscholes(const float *price, const float *strike, const float *years, int64_t n, float r, float v,
                          int runs, float *call, float *put, double *ms, char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        Dev dp, ds, dt, dc, dq;
        size_t b = sizeof(float) * n;
        if (!upload(er, dp, price, b) || !upload(er, ds, strike, b) || !upload(er, dt, years, b) || !alloc(er, dc, b) ||
            !alloc(er, dq, b))
            return false;
        bool ok = timed(er, runs, ms, [&]() -> bool {
            blackscholes_k<<<grid_for(n, 256), 256>>>(dp.as<float>(), ds.as<float>(), dt.as<float>(), dc.as<float>(),
                                                      dq.as<float>(), n, r, v);
            CU(cudaGetLastError());
            return true;
        });
        if (ok && n) {
            CU(cudaMemcpy(call, dc.p, b, cudaMemcpyDeviceToHost));
            CU(cudaMemcpy(put, dq.p, b, cudaMemcpyDeviceToHost));
        }
        return ok;
    };
    return go() ? 0 : -1;
}

API int axcb_mandelbrot(int64_t h, int64_t w, float x0, float y0, float sx, float sy, int32_t depth, int runs,
                        int32_t *count, double *ms, char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        Dev dc;
        size_t b = sizeof(int32_t) * h * w;
        if (!alloc(er, dc, b)) return false;
        bool ok = timed(er, runs, ms, [&]() -> bool {
            mandelbrot_k<<<grid_for(h * w, 256), 256>>>(h, w, x0, y0, sx, sy, depth, dc.as<int32_t>());
            CU(cudaGetLastError());
            return true;
        });
        if (ok && b) CU(cudaMemcpy(count, dc.p, b, cudaMemcpyDeviceToHost));
        return ok;
    };
    return go() ? 0 : -1;
}

API int axcb_nbody(int64_t n, const float *const *in, float dt, float eps2, int runs, float *const *out, double *ms,
                   char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        Dev di[7], dout[6];
        size_t b = sizeof(float) * n;
        for (int c = 0; c < 7; c++)
            if (!upload(er, di[c], in[c], b)) return false;
        for (int c = 0; c < 6; c++)
            if (!alloc(er, dout[c], b)) return false;
        bool ok = timed(er, runs, ms, [&]() -> bool {
            if (n == 0) return true;
            nbody_k<<<(int)((n + NB_TILE - 1) / NB_TILE), NB_TILE>>>(
                n, di[0].as<float>(), di[1].as<float>(), di[2].as<float>(), di[3].as<float>(), di[4].as<float>(),
                di[5].as<float>(), di[6].as<float>(), dt, eps2, dout[0].as<float>(), dout[1].as<float>(),
                dout[2].as<float>(), dout[3].as<float>(), dout[4].as<float>(), dout[5].as<float>());
            CU(cudaGetLastError());
            return true;
        });
        for (int c = 0; ok && n && c < 6; c++) CU(cudaMemcpy(out[c], dout[c].p, b, cudaMemcpyDeviceToHost));
        return ok;
    };
    return go() ? 0 : -1;
}

API int axcb_smvm(int64_t rows, int64_t cols, int64_t nnz, const int64_t *rowptr, const int32_t *col, const float *val,
                  const float *x, int runs, float *y, double *ms, char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        if (nnz > INT32_MAX) return er.fail("smvm", "more than 2^31 entries");
        std::vector<int32_t> rp32(rows + 1);
        for (int64_t r = 0; r <= rows; r++) rp32[r] = (int32_t)rowptr[r];
        Dev drp, dcol, dval, dx, dy, dbuf;
        if (!upload(er, drp, rp32.data(), sizeof(int32_t) * (rows + 1)) || !upload(er, dcol, col, sizeof(int32_t) * nnz) ||
            !upload(er, dval, val, sizeof(float) * nnz) || !upload(er, dx, x, sizeof(float) * cols) ||
            !alloc(er, dy, sizeof(float) * rows))
            return false;
        cusparseHandle_t h;
        CS(cusparseCreate(&h));
        cusparseSpMatDescr_t A;
        cusparseDnVecDescr_t vx, vy;
        float one = 1, zero = 0;
        size_t bs = 0;
        bool ok = true;
        if (cusparseCreateCsr(&A, rows, cols, nnz, drp.p, dcol.p, dval.p, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F) != CUSPARSE_STATUS_SUCCESS ||
            cusparseCreateDnVec(&vx, cols, dx.p, CUDA_R_32F) != CUSPARSE_STATUS_SUCCESS ||
            cusparseCreateDnVec(&vy, rows, dy.p, CUDA_R_32F) != CUSPARSE_STATUS_SUCCESS ||
            cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy, CUDA_R_32F,
                                    CUSPARSE_SPMV_ALG_DEFAULT, &bs) != CUSPARSE_STATUS_SUCCESS ||
            !alloc(er, dbuf, bs)) {
            ok = er.fail("cusparse", "setting up the SpMV");
        }
        if (ok)
            ok = timed(er, runs, ms, [&]() -> bool {
                CS(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy, CUDA_R_32F,
                                CUSPARSE_SPMV_ALG_DEFAULT, dbuf.p));
                return true;
            });
        cusparseDestroy(h);
        if (ok && rows) CU(cudaMemcpy(y, dy.p, sizeof(float) * rows, cudaMemcpyDeviceToHost));
        return ok;
    };
    return go() ? 0 : -1;
}

API int axcb_fold_sum(const float *x, int64_t n, int runs, float *out, double *ms, char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        Dev dx, dr, tmp;
        size_t tb = 0;
        if (!upload(er, dx, x, sizeof(float) * n) || !alloc(er, dr, 4)) return false;
        CU(cub::DeviceReduce::Sum(nullptr, tb, dx.as<float>(), dr.as<float>(), n));
        if (!alloc(er, tmp, tb)) return false;
        bool ok = timed(er, runs, ms, [&]() -> bool {
            CU(cub::DeviceReduce::Sum(tmp.p, tb, dx.as<float>(), dr.as<float>(), n));
            return true;
        });
        if (ok) CU(cudaMemcpy(out, dr.p, 4, cudaMemcpyDeviceToHost));
        return ok;
    };
    return go() ? 0 : -1;
}

API int axcb_scanl1_sum(const float *x, int64_t n, int runs, float *y, double *ms, char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        Dev dx, dy, tmp;
        size_t tb = 0;
        if (!upload(er, dx, x, sizeof(float) * n) || !alloc(er, dy, sizeof(float) * n)) return false;
        CU(cub::DeviceScan::InclusiveSum(nullptr, tb, dx.as<float>(), dy.as<float>(), n));
        if (!alloc(er, tmp, tb)) return false;
        bool ok = timed(er, runs, ms, [&]() -> bool {
            CU(cub::DeviceScan::InclusiveSum(tmp.p, tb, dx.as<float>(), dy.as<float>(), n));
            return true;
        });
        if (ok && n) CU(cudaMemcpy(y, dy.p, sizeof(float) * n, cudaMemcpyDeviceToHost));
        return ok;
    };
    return go() ? 0 : -1;
}

API int axcb_radixsort(const int32_t *x, int64_t n, int runs, int32_t *y, double *ms, char *err, size_t errsize)
{
    Err er{err, errsize};
    auto go = [&]() -> bool {
        Dev dx, dy, tmp;
        size_t tb = 0;
        if (!upload(er, dx, x, sizeof(int32_t) * n) || !alloc(er, dy, sizeof(int32_t) * n)) return false;
        CU(cub::DeviceRadixSort::SortKeys(nullptr, tb, dx.as<int32_t>(), dy.as<int32_t>(), n));
        if (!alloc(er, tmp, tb)) return false;
        bool ok = timed(er, runs, ms, [&]() -> bool {
            CU(cub::DeviceRadixSort::SortKeys(tmp.p, tb, dx.as<int32_t>(), dy.as<int32_t>(), n));
            return true;
        });
        if (ok && n) CU(cudaMemcpy(y, dy.p, sizeof(int32_t) * n, cudaMemcpyDeviceToHost));
        return ok;
    };
    return go() ? 0 : -1;
}

/* Whether a GPU is there to run these (bench asks before timing). */
API int axcb_devices(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
