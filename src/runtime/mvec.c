/*
 * The CPU backend's maths, for the interpreter, in tests (mvec.h).
 *
 * The reference interpreter computes sin, cos, pow, ... with the C
 * library (exp, log and logbase are axle's own on every backend,
 * core/vmath.h, so they are not here); the CPU backend with one version
 * of glibc's vector library,
 * libmvec (codegen.c, prelude_mvec: the widest of AVX-512, AVX2, AVX and
 * SSE that the compiled code targets, which for -march=native is the
 * widest the host runs).  Their last bits may differ (tests/test_mathfns.c
 * states by how much), and a program can amplify a last bit without
 * bound (a while loop of x^3 / tan x; a bitcast to an integer).  So a
 * differential test compares the CPU backend, bit for bit where the
 * backend promises it, with the interpreter computing these functions as
 * the CPU backend does: the same libmvec version, called with the
 * argument in every lane.  Loaded with dlopen per context (no link
 * dependency, no global state); each call goes through a function
 * compiled for that instruction set (GCC's target attribute), since the
 * library itself is built for the generic x86-64.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mvec.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cg_math_names' order (codegen.c); pow and atan2 take two arguments. */
static const char *const names[MVEC_NFN] = {
    "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "pow", "atan2",
};

struct Mvec {
    void *lib;
    char isa;                 /* 'e' AVX-512, 'd' AVX2, 'c' AVX, 'b' SSE2 */
    void *f32[MVEC_NFN], *f64[MVEC_NFN];
};

#if defined(__x86_64__) && defined(__GNUC__)

/* Vector types of the widths of each version; calls that pass them are
 * made only inside functions compiled for the version's instruction set
 * (the ABI notes GCC would print elsewhere do not apply). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float f32x16 __attribute__((vector_size(64)));
typedef double f64x8 __attribute__((vector_size(64)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef double f64x4 __attribute__((vector_size(32)));
typedef float f32x4 __attribute__((vector_size(16)));
typedef double f64x2 __attribute__((vector_size(16)));

/* x (and y) in every lane of version ISA's vectors, f applied, lane 0. */
#define CALLS(ISA, TGT, VF, WF, VD, WD)                                                                   \
    TGT static float call1f_##ISA(void *f, float x)                                                       \
    {                                                                                                      \
        VF v;                                                                                              \
        for (int i = 0; i < WF; i++) v[i] = x;                                                             \
        return ((VF(*)(VF))f)(v)[0];                                                                       \
    }                                                                                                      \
    TGT static float call2f_##ISA(void *f, float x, float y)                                              \
    {                                                                                                      \
        VF v, u;                                                                                           \
        for (int i = 0; i < WF; i++) v[i] = x, u[i] = y;                                                   \
        return ((VF(*)(VF, VF))f)(v, u)[0];                                                                \
    }                                                                                                      \
    TGT static double call1d_##ISA(void *f, double x)                                                     \
    {                                                                                                      \
        VD v;                                                                                              \
        for (int i = 0; i < WD; i++) v[i] = x;                                                             \
        return ((VD(*)(VD))f)(v)[0];                                                                       \
    }                                                                                                      \
    TGT static double call2d_##ISA(void *f, double x, double y)                                           \
    {                                                                                                      \
        VD v, u;                                                                                           \
        for (int i = 0; i < WD; i++) v[i] = x, u[i] = y;                                                   \
        return ((VD(*)(VD, VD))f)(v, u)[0];                                                                \
    }

CALLS(e, __attribute__((target("avx512f"))), f32x16, 16, f64x8, 8)
CALLS(d, __attribute__((target("avx2"))), f32x8, 8, f64x4, 4)
CALLS(c, __attribute__((target("avx"))), f32x8, 8, f64x4, 4)
CALLS(b, , f32x4, 4, f64x2, 2)
#pragma GCC diagnostic pop

static float call1f(char isa, void *f, float x)
{
    return isa == 'e' ? call1f_e(f, x) : isa == 'd' ? call1f_d(f, x) : isa == 'c' ? call1f_c(f, x) : call1f_b(f, x);
}
static float call2f(char isa, void *f, float x, float y)
{
    return isa == 'e' ? call2f_e(f, x, y) : isa == 'd' ? call2f_d(f, x, y) : isa == 'c' ? call2f_c(f, x, y)
                                                                            : call2f_b(f, x, y);
}
static double call1d(char isa, void *f, double x)
{
    return isa == 'e' ? call1d_e(f, x) : isa == 'd' ? call1d_d(f, x) : isa == 'c' ? call1d_c(f, x) : call1d_b(f, x);
}
static double call2d(char isa, void *f, double x, double y)
{
    return isa == 'e' ? call2d_e(f, x, y) : isa == 'd' ? call2d_d(f, x, y) : isa == 'c' ? call2d_c(f, x, y)
                                                                            : call2d_b(f, x, y);
}

Mvec *mvec_open(void)
{
    __builtin_cpu_init();
    /* The version -march=native code calls (codegen.c prelude_mvec). */
    char isa = __builtin_cpu_supports("avx512f") ? 'e' : __builtin_cpu_supports("avx2") ? 'd'
               : __builtin_cpu_supports("avx") ? 'c' : 'b';
    int wf = isa == 'e' ? 16 : isa == 'b' ? 4 : 8, wd = wf / 2;
    Mvec *m = ax__calloc(1, sizeof *m);
    if (!m) return NULL;
    m->isa = isa;
    m->lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!m->lib) {
        free(m);
        return NULL;
    }
    for (int k = 0; k < MVEC_NFN; k++) {
        const char *v = k >= 14 ? "vv" : "v";
        char f[64], d[64];
        snprintf(f, sizeof f, "_ZGV%cN%d%s_%sf", isa, wf, v, names[k]);
        snprintf(d, sizeof d, "_ZGV%cN%d%s_%s", isa, wd, v, names[k]);
        m->f32[k] = dlsym(m->lib, f);
        m->f64[k] = dlsym(m->lib, d);
    }
    return m;
}

void mvec_close(Mvec *m)
{
    if (!m) return;
    dlclose(m->lib);
    free(m);
}

bool mvec_eval(const Mvec *m, Prim p, ax_scalar s, Scalar x, Scalar y, Scalar *out)
{
    static const Prim prims[MVEC_NFN] = {P_EXP, P_LOG, P_SIN, P_COS, P_TAN, P_ASIN, P_ACOS, P_ATAN,
                                         P_SINH, P_COSH, P_TANH, P_ASINH, P_ACOSH, P_ATANH, P_POW, P_ATAN2};
    if (!m || (s != AX_F32 && s != AX_F64)) return false;
    bool f32 = s == AX_F32;
    /* exp, log and logbase are axle's own on every backend (vmath.h):
       the interpreter's already */
    if (p == P_EXP || p == P_LOG || p == P_LOGBASE) return false;
    for (int k = 0; k < MVEC_NFN; k++) {
        if (prims[k] != p) continue;
        void *f = f32 ? m->f32[k] : m->f64[k];
        if (!f) return false;
        bool two = k >= 14;
        if (f32) {
            Scalar r = {0};
            r.f32 = two ? call2f(m->isa, f, x.f32, y.f32) : call1f(m->isa, f, x.f32);
            *out = r;
        } else {
            out->f64 = two ? call2d(m->isa, f, x.f64, y.f64) : call1d(m->isa, f, x.f64);
        }
        return true;
    }
    return false;
}

#else

Mvec *mvec_open(void) { return NULL; }
void mvec_close(Mvec *m) { (void)m; }
bool mvec_eval(const Mvec *m, Prim p, ax_scalar s, Scalar x, Scalar y, Scalar *out)
{
    (void)m; (void)p; (void)s; (void)x; (void)y; (void)out;
    return false;
}

#endif

bool ax__ctx_vecmath(ax_ctx *cx)
{
    if (!cx) return false;
    if (!cx->mvec) cx->mvec = mvec_open();
    return cx->mvec != NULL;
}
