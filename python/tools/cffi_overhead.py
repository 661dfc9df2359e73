"""Why the binding is a CPython extension: the cost of one call of a
compiled dot product over 100 float32 elements, through
  - axle.jit (the extension: the call path is C),
  - cffi in API mode (the same C library; the call path written in Python
    over cffi, as a binding built on cffi would be),
  - C itself (ax_program_run_with in a loop),
each the median of several rounds.  Needs cffi; builds a small module
against the PIC libaxle of `make python` (build/pylib/libaxle.a).

    PYTHONPATH=build/python python3 python/tools/cffi_overhead.py
SPDX-License-Identifier: BSD-3-Clause
"""
import importlib
import os
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_cffi(tmp):
    import cffi
    ffi = cffi.FFI()
    ffi.cdef("""
        typedef struct ax_ctx ax_ctx; typedef struct ax_array ax_array; typedef struct ax_program ax_program;
        typedef struct ax_options ax_options;
        typedef enum ax_scalar { AX_BOOL, AX_I8, AX_I16, AX_I32, AX_I64, AX_U8, AX_U16, AX_U32, AX_U64,
                                 AX_F32, AX_F64, AX_NSCALAR } ax_scalar;
        ax_ctx *ax_ctx_new(const ax_options *opt);
        ax_array *ax_array_wrap(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, void *data);
        int ax_program_run_with(ax_program *p, ax_array *const *args, int nargs, ax_array **out, int max);
        void *ax_array_data(const ax_array *a, int i);
        void ax_array_release(ax_array *a);
        int ax_array_rank(const ax_array *a);
        const int64_t *ax_array_shape(const ax_array *a);
        int64_t ax_array_size(const ax_array *a);
        const char *ax_error(const ax_ctx *cx);
        ax_program *make_dotp(ax_ctx *cx);
    """)
    ffi.set_source("_axle_cffi_overhead", """
        #include <axle.h>
        ax_program *make_dotp(ax_ctx *cx)
        {
            const ax_type *f32 = ax_type_scalar(AX_F32);
            return ax_compile(cx, ax_fold(ax_fn_add, NULL, ax_f32(0),
                                          ax_zip_with(ax_fn_mul, NULL, ax_param(cx, 0, f32, 1),
                                                      ax_param(cx, 1, f32, 1))));
        }
    """, include_dirs=[os.path.join(REPO, "include")],
        extra_objects=[os.path.join(REPO, "build", "pylib", "libaxle.a")], libraries=["m", "pthread", "dl"])
    ffi.compile(tmpdir=tmp, verbose=False)
    sys.path.insert(0, tmp)
    return importlib.import_module("_axle_cffi_overhead")


def main(n=20000, rounds=7):
    import axle
    from axle.bench import call_overhead
    with tempfile.TemporaryDirectory() as tmp:
        mod = build_cffi(tmp)
        ffi, lib = mod.ffi, mod.lib
        cx = lib.ax_ctx_new(ffi.NULL)
        prog = lib.make_dotp(cx)
        assert prog != ffi.NULL, ffi.string(lib.ax_error(cx))

        def call(x, y):
            shx = ffi.new("int64_t[1]", [x.shape[0]])
            shy = ffi.new("int64_t[1]", [y.shape[0]])
            args = ffi.new("ax_array *[2]")
            args[0] = lib.ax_array_wrap(cx, lib.AX_F32, 1, shx, ffi.from_buffer(x))
            args[1] = lib.ax_array_wrap(cx, lib.AX_F32, 1, shy, ffi.from_buffer(y))
            out = ffi.new("ax_array *[1]")
            got = lib.ax_program_run_with(prog, args, 2, out, 1)
            lib.ax_array_release(args[0])
            lib.ax_array_release(args[1])
            if got < 0:
                raise RuntimeError(ffi.string(lib.ax_error(cx)).decode())
            r = out[0]
            rank = lib.ax_array_rank(r)
            shape = tuple(lib.ax_array_shape(r)[i] for i in range(rank))
            size = lib.ax_array_size(r)
            data = ffi.gc(ffi.cast("char *", lib.ax_array_data(r, 0)), lambda _, r=r: lib.ax_array_release(r))
            return np.frombuffer(ffi.buffer(data, 4 * max(size, 1)), np.float32, count=size).reshape(shape)

        x = np.ones(100, np.float32)
        assert float(call(x, x)) == 100.0
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            for _ in range(n):
                call(x, x)
            times.append((time.perf_counter() - t) / n * 1e6)
        cffi_us = statistics.median(times)
    py_us, c_us = call_overhead(n, rounds)
    print("one call of a compiled dot product over 100 float32 (median of %d rounds of %d calls):" % (rounds, n))
    print("  C (ax_program_run_with)     %6.2f us" % c_us)
    print("  axle.jit (the extension)    %6.2f us  (+%.2f us over C)" % (py_us, py_us - c_us))
    print("  cffi, API mode, from Python %6.2f us  (+%.2f us over C)" % (cffi_us, cffi_us - c_us))


if __name__ == "__main__":
    main()
