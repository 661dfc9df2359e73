/*
 * The CPU backend's maths (libmvec, one version), for the interpreter in
 * differential tests (mvec.c explains why); not exp, log and logbase,
 * which are axle's own everywhere (vmath.h).  Test-only: a context computes
 * with it after ax__ctx_vecmath; by default the interpreter uses libm.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_MVEC_H
#define AX_MVEC_H
#include "ir.h"

enum { MVEC_NFN = 16 };
typedef struct Mvec Mvec;

/* NULL where there is no libmvec (or not an x86-64 with GCC). */
Mvec *mvec_open(void);
void mvec_close(Mvec *m);
/* p (a maths primitive: exp .. atan2, logbase) on x (and y) of type s, as
 * the CPU backend's code computes it; false if m cannot. */
bool mvec_eval(const Mvec *m, Prim p, ax_scalar s, Scalar x, Scalar y, Scalar *out);

/* Test-only: the interpreter of cx computes maths functions as the CPU
 * backend does from now on.  False (nothing changed) where it cannot. */
bool ax__ctx_vecmath(ax_ctx *cx);

#endif
