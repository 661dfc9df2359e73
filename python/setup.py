# Builds axle's Python extension (axle._axle) and the C library under it.
#
# Where the library comes from (AXLE_PYTHON_LIB, default "auto"):
#   cmake       the repository's own CMake build of libaxle, position-
#               independent, in a build folder of this package (reused by
#               later builds; AXLE_CMAKE_BUILD_DIR names another), linked in
#               statically: the extension depends on nothing but libc, libm,
#               libpthread and libdl
#   sources     the library's sources compiled into the extension (no CMake)
#   pkg-config  an installed axle found by pkg-config (`pkg-config axle`)
#   auto        cmake inside a checkout of the repository when cmake is on
#               PATH, else sources; outside a checkout, pkg-config
#
# Extra flags, for special builds (python/tools/test-san.sh builds everything
# with AddressSanitizer and UndefinedBehaviorSanitizer through them):
#   AXLE_CMAKE_ARGS   arguments added to the CMake configure after this
#                     file's own, so that they win ("-DAX_SANITIZE=ON")
#   AXLE_EXT_CFLAGS   flags added to the compile of the extension (and of
#                     the library's sources with AXLE_PYTHON_LIB=sources)
#   AXLE_EXT_LDFLAGS  flags added to the link of the extension
#
# SPDX-License-Identifier: BSD-3-Clause
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
IN_REPO = all(os.path.exists(os.path.join(REPO, p)) for p in ("include/axle.h", "CMakeLists.txt", "src"))
LIB_DIRS = ["src/core", "src/frontend", "src/driver", "src/opt", "src/runtime", "src/backend",
            "src/backend/interp", "src/backend/cpu", "src/backend/gpu", "src/backend/cuda",
            "src/backend/opencl"]


# The extension's files (axle/_axle.c lists what each holds; axle/_axle.h
# is what they share).
EXT_SOURCES = ["axle/_axle.c", "axle/_axle_ctx.c", "axle/_axle_array.c", "axle/_axle_exp.c", "axle/_axle_acc.c",
               "axle/_axle_program.c"]


def mode():
    m = os.environ.get("AXLE_PYTHON_LIB", "auto")
    if m not in ("auto", "cmake", "sources", "pkg-config"):
        sys.exit("AXLE_PYTHON_LIB=%s: expected auto, cmake, sources or pkg-config" % m)
    if m != "auto":
        return m
    if IN_REPO:
        return "cmake" if shutil.which("cmake") else "sources"
    return "pkg-config"


def numpy_include():
    import numpy
    return numpy.get_include()


def env_flags(name):
    return shlex.split(os.environ.get(name, ""))


class BuildExt(build_ext):
    def build_extensions(self):
        ext = self.extensions[0]
        ext.include_dirs.append(numpy_include())
        ext.extra_compile_args += env_flags("AXLE_EXT_CFLAGS")
        ext.extra_link_args += env_flags("AXLE_EXT_LDFLAGS")
        m = mode()
        if m in ("cmake", "sources") and not IN_REPO:
            sys.exit("axle: AXLE_PYTHON_LIB=%s needs the repository around python/ (include/, src/)" % m)
        if m == "cmake":
            self.cmake_library(ext)
        elif m == "sources":
            ext.include_dirs += [os.path.join(REPO, "include"), os.path.join(REPO, "src"),
                                 os.path.join(REPO, "src/core")]
            for d in LIB_DIRS:
                ext.sources += sorted(glob.glob(os.path.join(REPO, d, "*.c")))
            ext.libraries += ["m", "pthread", "dl"]
        else:
            self.pkg_config(ext)
        super().build_extensions()

    def cmake_library(self, ext):
        build = os.environ.get("AXLE_CMAKE_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "libaxle")
        jobs = os.environ.get("AXLE_BUILD_JOBS") or str(min(os.cpu_count() or 2, 8))
        cfg = ["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
               "-DCMAKE_POSITION_INDEPENDENT_CODE=ON", "-DAX_CUDA_BASELINES=OFF", "-DAX_WERROR=OFF",
               "-DAX_SANITIZE=OFF", "-DAX_FUZZ=OFF"] + env_flags("AXLE_CMAKE_ARGS")
        print("axle: building libaxle with CMake in", build, flush=True)
        subprocess.check_call(cfg, stdout=subprocess.DEVNULL)
        subprocess.check_call(["cmake", "--build", build, "--target", "axle_static", "-j", jobs])
        lib = os.path.join(build, "libaxle.a")
        if not os.path.exists(lib):
            sys.exit("axle: the CMake build made no %s" % lib)
        ext.include_dirs.append(os.path.join(REPO, "include"))
        ext.extra_objects.append(lib)
        ext.libraries += ["m", "pthread", "dl"]
        ext.depends.append(lib)

    def pkg_config(self, ext):
        try:
            flags = subprocess.check_output(["pkg-config", "--cflags", "--libs", "axle"], text=True)
        except (OSError, subprocess.CalledProcessError):
            sys.exit("axle: no installed axle was found by pkg-config (and this is not a checkout of the "
                     "repository): install axle, or build from the repository")
        for f in shlex.split(flags):
            if f.startswith("-I"):
                ext.include_dirs.append(f[2:])
            elif f.startswith("-L"):
                ext.library_dirs.append(f[2:])
                ext.runtime_library_dirs.append(f[2:])
            elif f.startswith("-l"):
                ext.libraries.append(f[2:])
            else:
                ext.extra_link_args.append(f)


setup(
    packages=["axle"],
    ext_modules=[Extension("axle._axle", sources=list(EXT_SOURCES), extra_compile_args=["-std=gnu11", "-O2"],
                           depends=EXT_SOURCES + ["axle/_axle.h"])],
    cmdclass={"build_ext": BuildExt},
)
