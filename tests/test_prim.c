/*
 * Tests of the primitive operations (src/core/prim.c): typing rules and
 * exact semantics, checked against values computed independently here
 * (C expressions on known inputs, brute force over small types).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"
#include "vmath.h"
#include <float.h>
#include <limits.h>
#include <string.h>
#include <stdlib.h>

/* ------------------------------------------------------------ helpers */

static Scalar I(int64_t x) { Scalar v; v.u = 0; v.i = x; return v; }
static Scalar U(uint64_t x) { Scalar v; v.u = x; return v; }
static Scalar F(float x) { Scalar v; v.u = 0; v.f32 = x; return v; }
static Scalar D(double x) { Scalar v; v.f64 = x; return v; }
static Scalar B(bool x) { Scalar v; v.u = 0; v.b = x; return v; }

static const ax_scalar sints[] = {AX_I8, AX_I16, AX_I32, AX_I64};
static const ax_scalar uints[] = {AX_U8, AX_U16, AX_U32, AX_U64};
static const ax_scalar ints[] = {AX_I8, AX_I16, AX_I32, AX_I64, AX_U8, AX_U16, AX_U32, AX_U64};
static int bits_of(ax_scalar s) { return (int)ax_scalar_size(s) * 8; }
static int64_t smax(ax_scalar s) { return (int64_t)((UINT64_C(1) << (bits_of(s) - 1)) - 1); }
static int64_t smin(ax_scalar s) { return -smax(s) - 1; }
static uint64_t umax(ax_scalar s) { return bits_of(s) == 64 ? UINT64_MAX : (UINT64_C(1) << bits_of(s)) - 1; }

/* Evaluates p on operands of types ta (and tb), typing it first; the
 * target is used for FLOOR..TRUNC, CVT and BITCAST.  Checks that the
 * result is normalised. */
static Scalar ev_t(Prim p, ax_scalar ta, Scalar a, ax_scalar tb, Scalar b, ax_scalar to, int *st)
{
    const Type *argt[2] = {ty_scalar(ta), ty_scalar(tb)};
    Scalar args[2] = {a, b};
    const char *why = NULL;
    const Type *rt = prim_type(NULL, p, prim_info[p].arity, argt,
                               to == AX_NSCALAR ? NULL : ty_scalar(to), &why);
    Scalar out;
    memset(&out, 0xA5, sizeof out);
    if (!rt) {
        fprintf(stderr, "prim_type(%s) failed: %s\n", prim_info[p].name, why);
        *st = -1;
        return out;
    }
    *st = prim_eval(p, argt, args, rt, &out);
    if (*st == 0) {
        Scalar n = sc_norm(out, rt->s);
        CHECKF(sc_eq_bits(rt->s, n, out) && (rt->s == AX_F64 || n.u == out.u),
               "%s result not normalised", prim_info[p].name);
    }
    return out;
}

/* Binary / unary on one type; requires success. */
static Scalar ev2(Prim p, ax_scalar s, Scalar a, Scalar b)
{
    int st;
    Scalar r = ev_t(p, s, a, s, b, AX_NSCALAR, &st);
    CHECKF(st == 0, "%s status %d", prim_info[p].name, st);
    return r;
}
static Scalar ev1(Prim p, ax_scalar s, Scalar a) { return ev2(p, s, a, a); }
static int st2(Prim p, ax_scalar s, Scalar a, Scalar b)
{
    int st;
    ev_t(p, s, a, s, b, AX_NSCALAR, &st);
    return st;
}
static Scalar cvt(Prim p, ax_scalar from, Scalar a, ax_scalar to)
{
    int st;
    Scalar r = ev_t(p, from, a, from, a, to, &st);
    CHECKF(st == 0, "%s status %d", prim_info[p].name, st);
    return r;
}
static Scalar shift(Prim p, ax_scalar s, Scalar a, ax_scalar ns, Scalar n)
{
    int st;
    Scalar r = ev_t(p, s, a, ns, n, AX_NSCALAR, &st);
    CHECKF(st == 0, "%s status %d", prim_info[p].name, st);
    return r;
}
static bool bl(Scalar v) { unsigned char c; memcpy(&c, &v.b, 1); return c != 0; }

/* ------------------------------------------------------------ the table */

TEST(prim_table_complete)
{
    for (int p = 0; p < P_NPRIM; p++) {
        REQUIRE(prim_info[p].name && prim_info[p].api);
        CHECK(strncmp(prim_info[p].api, "ax_", 3) == 0);
        CHECK(prim_info[p].arity == 1 || prim_info[p].arity == 2);
        for (int q = 0; q < p; q++) CHECK(strcmp(prim_info[p].name, prim_info[q].name) != 0);
    }
    CHECK(strcmp(prim_info[P_ADD].name, "add") == 0);
    CHECK(strcmp(prim_info[P_ADD].api, "ax_add") == 0);
    CHECK_EQ_I(prim_info[P_TOLIN].arity, 2);
    CHECK_EQ_I(prim_info[P_SHAPESIZE].arity, 1);
    CHECK_EQ_I(prim_info[P_CVT].arity, 1);
}

/* ------------------------------------------------------------- typing */

static const Type *ty2(Prim p, const Type *a, const Type *b, const Type *target, const char **why)
{
    const Type *args[2] = {a, b};
    *why = NULL;
    const Type *r = prim_type(NULL, p, prim_info[p].arity, args, target, why);
    if (!r) CHECK(*why && **why);
    return r;
}

TEST(prim_type_rules)
{
    const char *why;
    const Type *i32 = ty_scalar(AX_I32), *i64 = ty_scalar(AX_I64), *u8 = ty_scalar(AX_U8);
    const Type *f32 = ty_scalar(AX_F32), *f64 = ty_scalar(AX_F64), *bo = ty_bool();
    const Type *ix2 = ty_index(NULL, 2), *ix3 = ty_index(NULL, 3);

    CHECK(ty2(P_ADD, i32, i32, NULL, &why) == i32);
    CHECK(ty2(P_ADD, i32, i64, NULL, &why) == NULL);
    CHECK(ty2(P_ADD, bo, bo, NULL, &why) == NULL);
    CHECK(ty2(P_MAX, f64, f64, NULL, &why) == f64);
    CHECK(ty2(P_DIV, f32, f32, NULL, &why) == f32);
    CHECK(ty2(P_DIV, u8, u8, NULL, &why) == u8);
    CHECK(ty2(P_QUOT, f32, f32, NULL, &why) == NULL);
    CHECK(ty2(P_MOD, f64, f64, NULL, &why) == NULL);
    CHECK(ty2(P_IDIV, i64, i64, NULL, &why) == i64);
    CHECK(ty2(P_NEG, bo, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_ABS, f32, NULL, NULL, &why) == f32);
    CHECK(ty2(P_BAND, f32, f32, NULL, &why) == NULL);
    CHECK(ty2(P_BXOR, u8, i32, NULL, &why) == NULL);
    CHECK(ty2(P_SHL, i32, u8, NULL, &why) == i32);
    CHECK(ty2(P_SHR, u8, i64, NULL, &why) == u8);
    CHECK(ty2(P_SHL, i32, f32, NULL, &why) == NULL);
    CHECK(ty2(P_ROTL, f32, i32, NULL, &why) == NULL);
    CHECK(ty2(P_SHL, i32, bo, NULL, &why) == NULL);
    CHECK(ty2(P_BNOT, bo, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_POPCOUNT, ty_scalar(AX_U64), NULL, NULL, &why) == i32);
    CHECK(ty2(P_CLZ, u8, NULL, NULL, &why) == i32);
    CHECK(ty2(P_CTZ, f64, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_EQ, bo, bo, NULL, &why) == bo);
    CHECK(ty2(P_LT, f32, f32, NULL, &why) == bo);
    CHECK(ty2(P_EQ, f32, f64, NULL, &why) == NULL);
    CHECK(ty2(P_EQ, ix2, ix2, NULL, &why) == NULL);
    CHECK(ty2(P_AND, bo, bo, NULL, &why) == bo);
    CHECK(ty2(P_AND, i32, bo, NULL, &why) == NULL);
    CHECK(ty2(P_NOT, i32, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_EXP, i32, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_SQRT, f32, NULL, NULL, &why) == f32);
    CHECK(ty2(P_POW, f32, f64, NULL, &why) == NULL);
    CHECK(ty2(P_ATAN2, f64, f64, NULL, &why) == f64);
    CHECK(ty2(P_LOGBASE, i32, i32, NULL, &why) == NULL);
    CHECK(ty2(P_ISNAN, f32, NULL, NULL, &why) == bo);
    CHECK(ty2(P_ISINF, i32, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_FLOOR, f32, NULL, i64, &why) == i64);
    CHECK(ty2(P_ROUND, f64, NULL, f32, &why) == f32);
    CHECK(ty2(P_FLOOR, f32, NULL, bo, &why) == NULL);
    CHECK(ty2(P_CEIL, f32, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_TRUNC, i32, NULL, i32, &why) == NULL);
    CHECK(ty2(P_CVT, i32, NULL, bo, &why) == bo);
    CHECK(ty2(P_CVT, bo, NULL, f64, &why) == f64);
    CHECK(ty2(P_CVT, ix2, NULL, i64, &why) == NULL);
    CHECK(ty2(P_CVT, i32, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_BITCAST, f32, NULL, i32, &why) == i32);
    CHECK(ty2(P_BITCAST, f64, NULL, ty_scalar(AX_U64), &why) == ty_scalar(AX_U64));
    CHECK(ty2(P_BITCAST, f32, NULL, i64, &why) == NULL);
    CHECK(ty2(P_BITCAST, bo, NULL, u8, &why) == NULL);
    CHECK(ty2(P_BITCAST, u8, NULL, bo, &why) == NULL);
    CHECK(ty2(P_SHAPESIZE, ix2, NULL, NULL, &why) == i64);
    CHECK(ty2(P_SHAPESIZE, i64, NULL, NULL, &why) == NULL);
    CHECK(ty2(P_TOLIN, ix3, ix3, NULL, &why) == i64);
    CHECK(ty2(P_TOLIN, ix2, ix3, NULL, &why) == NULL);
    CHECK(ty2(P_TOLIN, ix2, i64, NULL, &why) == NULL);
    CHECK(ty_eq(ty2(P_FROMLIN, ix3, i64, NULL, &why), ix3));
    CHECK(ty2(P_FROMLIN, ix3, i32, NULL, &why) == NULL);
    CHECK(ty2(P_FROMLIN, i64, i64, NULL, &why) == NULL);

    /* A tuple is not a scalar. */
    const Type *pair[2] = {i32, i32};
    Arena ar;
    arena_init(&ar);
    const Type *tup = ty_tuple(&ar, 2, pair);
    CHECK(ty2(P_ADD, tup, tup, NULL, &why) == NULL);
    CHECK(ty2(P_EQ, tup, tup, NULL, &why) == NULL);
    arena_free(&ar);

    /* Wrong arity, NULL operands, a NULL why. */
    const Type *args[2] = {i32, i32};
    why = NULL;
    CHECK(prim_type(NULL, P_ADD, 1, args, NULL, &why) == NULL && why);
    CHECK(prim_type(NULL, P_NEG, 2, args, NULL, &why) == NULL);
    const Type *nulls[2] = {i32, NULL};
    CHECK(prim_type(NULL, P_ADD, 2, nulls, NULL, &why) == NULL);
    CHECK(prim_type(NULL, P_ADD, 2, args, NULL, NULL) == i32);
    CHECK(prim_type(NULL, P_ADD, 2, nulls, NULL, NULL) == NULL);
}

/* --------------------------------------------------------- arithmetic */

TEST(prim_int_wrap_every_width)
{
    for (size_t k = 0; k < sizeof sints / sizeof *sints; k++) {
        ax_scalar s = sints[k];
        int64_t mx = smax(s), mn = smin(s);
        CHECK_EQ_I(ev2(P_ADD, s, I(mx), I(1)).i, mn);
        CHECK_EQ_I(ev2(P_SUB, s, I(mn), I(1)).i, mx);
        CHECK_EQ_I(ev2(P_MUL, s, I(mx), I(2)).i, -2);      /* 2*max = 2^w - 2 */
        CHECK_EQ_I(ev2(P_MUL, s, I(mn), I(-1)).i, mn);
        CHECK_EQ_I(ev1(P_NEG, s, I(mn)).i, mn);
        CHECK_EQ_I(ev1(P_ABS, s, I(mn)).i, mn);
        CHECK_EQ_I(ev1(P_ABS, s, I(-5)).i, 5);
        CHECK_EQ_I(ev1(P_NEG, s, I(5)).i, -5);
        CHECK_EQ_I(ev2(P_ADD, s, I(-3), I(5)).i, 2);
    }
    for (size_t k = 0; k < sizeof uints / sizeof *uints; k++) {
        ax_scalar s = uints[k];
        uint64_t mx = umax(s);
        CHECK(ev2(P_ADD, s, U(mx), U(1)).u == 0);
        CHECK(ev2(P_SUB, s, U(0), U(1)).u == mx);
        CHECK(ev2(P_MUL, s, U(mx), U(mx)).u == 1);          /* (-1)^2 mod 2^w */
        CHECK(ev1(P_NEG, s, U(1)).u == mx);
        CHECK(ev1(P_ABS, s, U(mx)).u == mx);
    }
    /* Specific values against C's own (GCC: modular) conversions. */
    CHECK_EQ_I(ev2(P_MUL, AX_I8, I(100), I(3)).i, (int8_t)(uint8_t)300);
    CHECK_EQ_I(ev2(P_ADD, AX_I16, I(30000), I(30000)).i, (int16_t)(uint16_t)60000);
    CHECK_EQ_I(ev2(P_MUL, AX_I32, I(65536), I(65537)).i, (int32_t)(65536u * 65537u));
    CHECK(ev2(P_MUL, AX_U32, U(4000000000u), U(3)).u == (uint32_t)(4000000000u * 3u));
    CHECK_EQ_I(ev2(P_MUL, AX_I64, I(INT64_MAX), I(INT64_MAX)).i, 1);
    CHECK(ev2(P_ADD, AX_U8, U(200), U(100)).u == 44);
    /* Non-normalised inputs are wrapped first: 0x1FF as u8 is 255. */
    CHECK(ev2(P_ADD, AX_U8, U(0x1FF), U(1)).u == 0);
    CHECK_EQ_I(ev2(P_ADD, AX_I8, U(0xFF), I(0)).i, -1);
}

TEST(prim_int_division)
{
    for (size_t k = 0; k < sizeof sints / sizeof *sints; k++) {
        ax_scalar s = sints[k];
        CHECK_EQ_I(ev2(P_IDIV, s, I(-7), I(2)).i, -4);
        CHECK_EQ_I(ev2(P_MOD, s, I(-7), I(2)).i, 1);
        CHECK_EQ_I(ev2(P_QUOT, s, I(-7), I(2)).i, -3);
        CHECK_EQ_I(ev2(P_REM, s, I(-7), I(2)).i, -1);
        CHECK_EQ_I(ev2(P_DIV, s, I(-7), I(2)).i, -3);
        CHECK_EQ_I(ev2(P_MOD, s, I(7), I(-2)).i, -1);
        CHECK_EQ_I(ev2(P_IDIV, s, I(7), I(-2)).i, -4);
        CHECK_EQ_I(ev2(P_QUOT, s, I(7), I(-2)).i, -3);
        CHECK_EQ_I(ev2(P_REM, s, I(7), I(-2)).i, 1);
        CHECK_EQ_I(ev2(P_IDIV, s, I(-7), I(-2)).i, 3);
        CHECK_EQ_I(ev2(P_MOD, s, I(-7), I(-2)).i, -1);
        CHECK_EQ_I(ev2(P_IDIV, s, I(6), I(-3)).i, -2);
        CHECK_EQ_I(ev2(P_MOD, s, I(6), I(-3)).i, 0);
        /* INT_MIN / -1 wraps to INT_MIN, remainder 0. */
        int64_t mn = smin(s);
        CHECK_EQ_I(ev2(P_DIV, s, I(mn), I(-1)).i, mn);
        CHECK_EQ_I(ev2(P_QUOT, s, I(mn), I(-1)).i, mn);
        CHECK_EQ_I(ev2(P_IDIV, s, I(mn), I(-1)).i, mn);
        CHECK_EQ_I(ev2(P_REM, s, I(mn), I(-1)).i, 0);
        CHECK_EQ_I(ev2(P_MOD, s, I(mn), I(-1)).i, 0);
        CHECK_EQ_I(ev2(P_IDIV, s, I(mn), I(2)).i, mn / 2);
        CHECK_EQ_I(ev2(P_MOD, s, I(mn), I(3)).i, 1);        /* -2^(w-1) = 3q + 1 */
        CHECK_EQ_I(ev2(P_MOD, s, I(mn + 1), I(mn)).i, mn + 1);
        CHECK_EQ_I(ev2(P_IDIV, s, I(smax(s)), I(mn)).i, -1);
        CHECK_EQ_I(ev2(P_MOD, s, I(smax(s)), I(mn)).i, -1);
    }
    for (size_t k = 0; k < sizeof uints / sizeof *uints; k++) {
        ax_scalar s = uints[k];
        uint64_t mx = umax(s);
        CHECK(ev2(P_DIV, s, U(mx), U(2)).u == mx / 2);
        CHECK(ev2(P_IDIV, s, U(mx), U(2)).u == mx / 2);
        CHECK(ev2(P_MOD, s, U(mx), U(2)).u == 1);
        CHECK(ev2(P_REM, s, U(mx), U(mx)).u == 0);
        CHECK(ev2(P_QUOT, s, U(7), U(mx)).u == 0);
    }
    /* Division by zero, every op, every integer type. */
    const Prim divs[] = {P_DIV, P_QUOT, P_REM, P_IDIV, P_MOD};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++)
        for (size_t d = 0; d < sizeof divs / sizeof *divs; d++) {
            CHECK_EQ_I(st2(divs[d], ints[k], I(5), I(0)), AX_ERR_DIVZERO);
            CHECK_EQ_I(st2(divs[d], ints[k], I(0), I(0)), AX_ERR_DIVZERO);
        }
    /* A zero that is zero only after wrapping to the width. */
    CHECK_EQ_I(st2(P_QUOT, AX_U8, U(5), U(0x100)), AX_ERR_DIVZERO);
    /* Floats divide by zero as IEEE says. */
    CHECK(isinf(ev2(P_DIV, AX_F32, F(1), F(0)).f32));
    CHECK(isnan(ev2(P_DIV, AX_F64, D(0), D(0)).f64));
}

/* Every pair of i8 / u8 values against an independent formula. */
TEST(prim_int_division_bruteforce_8bit)
{
    for (int a = -128; a <= 127; a++)
        for (int b = -128; b <= 127; b++) {
            if (b == 0) continue;
            int q = (int8_t)(uint8_t)(a / b), r = a % b;
            int fq = (int)floor((double)a / b);
            int fr = a - b * fq;
            fq = (int8_t)(uint8_t)fq;
            if (ev2(P_QUOT, AX_I8, I(a), I(b)).i != q || ev2(P_REM, AX_I8, I(a), I(b)).i != r ||
                ev2(P_IDIV, AX_I8, I(a), I(b)).i != fq || ev2(P_MOD, AX_I8, I(a), I(b)).i != fr) {
                CHECKF(false, "i8 %d, %d", a, b);
                return;
            }
        }
    for (int a = 0; a < 256; a++)
        for (int b = 1; b < 256; b++)
            if (ev2(P_IDIV, AX_U8, U(a), U(b)).u != (uint64_t)(a / b) ||
                ev2(P_MOD, AX_U8, U(a), U(b)).u != (uint64_t)(a % b)) {
                CHECKF(false, "u8 %d, %d", a, b);
                return;
            }
}

TEST(prim_min_max_signum)
{
    CHECK_EQ_I(ev2(P_MIN, AX_I32, I(-5), I(3)).i, -5);
    CHECK_EQ_I(ev2(P_MAX, AX_I32, I(-5), I(3)).i, 3);
    CHECK(ev2(P_MAX, AX_U64, U(UINT64_MAX), U(1)).u == UINT64_MAX);
    CHECK(ev2(P_MIN, AX_U8, U(200), U(100)).u == 100);
    CHECK_EQ_I(ev2(P_MIN, AX_I64, I(INT64_MIN), I(INT64_MAX)).i, INT64_MIN);

    float nf = NAN;
    CHECK(ev2(P_MIN, AX_F32, F(nf), F(1)).f32 == 1);
    CHECK(ev2(P_MIN, AX_F32, F(1), F(nf)).f32 == 1);
    CHECK(ev2(P_MAX, AX_F32, F(nf), F(-1)).f32 == -1);
    CHECK(ev2(P_MAX, AX_F64, D(2), D(NAN)).f64 == 2);
    CHECK(ev2(P_MIN, AX_F64, D(NAN), D(-2)).f64 == -2);
    CHECK(isnan(ev2(P_MIN, AX_F64, D(NAN), D(NAN)).f64));
    CHECK(ev2(P_MIN, AX_F32, F(-INFINITY), F(3)).f32 == -INFINITY);
    CHECK(ev2(P_MAX, AX_F64, D(1.5), D(2.5)).f64 == 2.5);
    /* Zeros: -0 < +0, whatever the order. */
    CHECK(signbit(ev2(P_MIN, AX_F32, F(0.0f), F(-0.0f)).f32));
    CHECK(signbit(ev2(P_MIN, AX_F32, F(-0.0f), F(0.0f)).f32));
    CHECK(!signbit(ev2(P_MAX, AX_F64, D(0.0), D(-0.0)).f64));
    CHECK(!signbit(ev2(P_MAX, AX_F64, D(-0.0), D(0.0)).f64));

    CHECK_EQ_I(ev1(P_SIGNUM, AX_I8, I(-100)).i, -1);
    CHECK_EQ_I(ev1(P_SIGNUM, AX_I64, I(0)).i, 0);
    CHECK_EQ_I(ev1(P_SIGNUM, AX_I16, I(7)).i, 1);
    CHECK(ev1(P_SIGNUM, AX_U8, U(200)).u == 1);
    CHECK(ev1(P_SIGNUM, AX_U32, U(0)).u == 0);
    CHECK(ev1(P_SIGNUM, AX_F32, F(-3.5f)).f32 == -1.0f);
    CHECK(ev1(P_SIGNUM, AX_F64, D(1e-300)).f64 == 1.0);
    CHECK(ev1(P_SIGNUM, AX_F64, D(-INFINITY)).f64 == -1.0);
    Scalar z = ev1(P_SIGNUM, AX_F32, F(-0.0f));
    CHECK(z.f32 == 0 && signbit(z.f32));
    CHECK(isnan(ev1(P_SIGNUM, AX_F64, D(NAN)).f64));

    CHECK(ev1(P_ABS, AX_F32, F(-0.0f)).f32 == 0 && !signbit(ev1(P_ABS, AX_F32, F(-0.0f)).f32));
    CHECK(ev1(P_NEG, AX_F64, D(2.0)).f64 == -2.0);
}

/* ---------------------------------------------------------------- bits */

TEST(prim_shifts)
{
    CHECK_EQ_I(shift(P_SHL, AX_I32, I(1), AX_I32, I(31)).i, INT32_MIN);
    CHECK_EQ_I(shift(P_SHL, AX_I32, I(1), AX_I32, I(32)).i, 0);
    CHECK_EQ_I(shift(P_SHL, AX_I32, I(1), AX_I32, I(33)).i, 0);
    CHECK_EQ_I(shift(P_SHL, AX_I32, I(1), AX_I32, I(-1)).i, 0);
    CHECK_EQ_I(shift(P_SHL, AX_I32, I(3), AX_U8, U(4)).i, 48);
    CHECK_EQ_I(shift(P_SHL, AX_I8, I(1), AX_I32, I(7)).i, -128);
    CHECK_EQ_I(shift(P_SHL, AX_I8, I(3), AX_I32, I(7)).i, -128);   /* high bit lost */
    CHECK_EQ_I(shift(P_SHL, AX_I64, I(1), AX_I64, I(63)).i, INT64_MIN);
    CHECK_EQ_I(shift(P_SHL, AX_I64, I(1), AX_I64, I(64)).i, 0);
    CHECK_EQ_I(shift(P_SHL, AX_I64, I(1), AX_I64, I(INT64_MAX)).i, 0);
    CHECK_EQ_I(shift(P_SHL, AX_I64, I(1), AX_I64, I(INT64_MIN)).i, 0);
    CHECK(shift(P_SHL, AX_U16, U(0xFFFF), AX_U8, U(8)).u == 0xFF00);
    /* A huge unsigned amount must not wrap to a small one. */
    CHECK(shift(P_SHL, AX_U64, U(1), AX_U64, U((UINT64_C(1) << 63) + 1)).u == 0);
    CHECK(shift(P_SHL, AX_U8, U(1), AX_U32, U(0xFFFFFFFFu)).u == 0);
    CHECK(shift(P_SHL, AX_U8, U(1), AX_I8, I(-128)).u == 0);
    /* The amount is first wrapped to its own type: 2^32 + 1 as u32 is 1. */
    CHECK(shift(P_SHL, AX_U8, U(1), AX_U32, U(UINT64_C(0x100000001))).u == 2);

    CHECK(shift(P_SHR, AX_U8, U(0x80), AX_I32, I(7)).u == 1);
    CHECK(shift(P_SHR, AX_U8, U(0x80), AX_I32, I(8)).u == 0);
    CHECK(shift(P_SHR, AX_U8, U(0x80), AX_I32, I(-1)).u == 0);
    CHECK(shift(P_SHR, AX_U64, U(UINT64_MAX), AX_I32, I(63)).u == 1);
    CHECK(shift(P_SHR, AX_U64, U(UINT64_MAX), AX_I32, I(64)).u == 0);
    CHECK_EQ_I(shift(P_SHR, AX_I8, I(-128), AX_I32, I(7)).i, -1);
    CHECK_EQ_I(shift(P_SHR, AX_I8, I(-128), AX_I32, I(8)).i, -1);
    CHECK_EQ_I(shift(P_SHR, AX_I8, I(-128), AX_I32, I(-1)).i, -1);
    CHECK_EQ_I(shift(P_SHR, AX_I8, I(-128), AX_I32, I(1)).i, -64);
    CHECK_EQ_I(shift(P_SHR, AX_I8, I(64), AX_I32, I(100)).i, 0);
    CHECK_EQ_I(shift(P_SHR, AX_I8, I(64), AX_I32, I(6)).i, 1);
    CHECK_EQ_I(shift(P_SHR, AX_I32, I(-7), AX_U8, U(1)).i, -4);    /* floor(-7/2) */
    CHECK_EQ_I(shift(P_SHR, AX_I64, I(INT64_MIN), AX_I64, I(63)).i, -1);
    CHECK_EQ_I(shift(P_SHR, AX_I64, I(INT64_MAX), AX_I64, I(64)).i, 0);
    CHECK_EQ_I(shift(P_SHR, AX_I64, I(-1), AX_U64, U(UINT64_MAX)).i, -1);
}

TEST(prim_rotates)
{
    CHECK(shift(P_ROTL, AX_U8, U(0x81), AX_I32, I(1)).u == 0x03);
    CHECK(shift(P_ROTR, AX_U8, U(0x81), AX_I32, I(1)).u == 0xC0);
    CHECK(shift(P_ROTL, AX_U8, U(0x81), AX_I32, I(8)).u == 0x81);
    CHECK(shift(P_ROTL, AX_U8, U(0x81), AX_I32, I(0)).u == 0x81);
    CHECK(shift(P_ROTL, AX_U8, U(0x81), AX_I32, I(9)).u == 0x03);
    CHECK(shift(P_ROTL, AX_U8, U(0x81), AX_I32, I(-1)).u == 0xC0);
    CHECK(shift(P_ROTR, AX_U8, U(0x81), AX_I32, I(-1)).u == 0x03);
    CHECK(shift(P_ROTL, AX_U8, U(0x81), AX_I32, I(-9)).u == 0xC0);
    CHECK(shift(P_ROTL, AX_U8, U(0x01), AX_U64, U(UINT64_MAX)).u == 0x80);  /* 2^64-1 mod 8 = 7 */
    CHECK(shift(P_ROTL, AX_U8, U(0x01), AX_I64, I(INT64_MIN)).u == 0x01);   /* -2^63 mod 8 = 0 */
    CHECK_EQ_I(shift(P_ROTL, AX_I8, I(-128), AX_I32, I(1)).i, 1);
    CHECK_EQ_I(shift(P_ROTR, AX_I8, I(1), AX_I32, I(1)).i, -128);
    CHECK(shift(P_ROTR, AX_U64, U(1), AX_I32, I(1)).u == UINT64_C(1) << 63);
    CHECK(shift(P_ROTL, AX_U64, U(0x8000000000000001), AX_I32, I(64)).u == 0x8000000000000001);
    CHECK(shift(P_ROTL, AX_U64, U(0x8000000000000001), AX_I32, I(4)).u == 0x18);
    CHECK(shift(P_ROTL, AX_U32, U(0x12345678), AX_I32, I(8)).u == 0x34567812);
    CHECK(shift(P_ROTR, AX_U16, U(0x1234), AX_I8, I(4)).u == 0x4123);
    CHECK_EQ_I(shift(P_ROTL, AX_I32, I(-1), AX_I32, I(13)).i, -1);
    /* rotl by k then rotr by k is the identity, every amount. */
    for (int k = -70; k <= 70; k++) {
        Scalar x = shift(P_ROTL, AX_U32, U(0xDEADBEEF), AX_I32, I(k));
        CHECK(shift(P_ROTR, AX_U32, x, AX_I32, I(k)).u == 0xDEADBEEF);
    }
}

TEST(prim_bitwise_and_counts)
{
    CHECK(ev2(P_BAND, AX_U8, U(0xF0), U(0x3C)).u == 0x30);
    CHECK(ev2(P_BOR, AX_U8, U(0xF0), U(0x0F)).u == 0xFF);
    CHECK(ev2(P_BXOR, AX_U8, U(0xFF), U(0x0F)).u == 0xF0);
    CHECK_EQ_I(ev2(P_BXOR, AX_I8, I(-1), I(0x0F)).i, (int8_t)(uint8_t)0xF0);
    CHECK_EQ_I(ev1(P_BNOT, AX_I32, I(0)).i, -1);
    CHECK(ev1(P_BNOT, AX_U16, U(0)).u == 0xFFFF);
    CHECK(ev1(P_BNOT, AX_U64, U(0)).u == UINT64_MAX);

    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        ax_scalar s = ints[k];
        int w = bits_of(s);
        Scalar ones = U(UINT64_MAX);    /* -1 / the maximum, after wrapping */
        CHECK_EQ_I(ev1(P_POPCOUNT, s, U(0)).i, 0);
        CHECK_EQ_I(ev1(P_CLZ, s, U(0)).i, w);
        CHECK_EQ_I(ev1(P_CTZ, s, U(0)).i, w);
        CHECK_EQ_I(ev1(P_POPCOUNT, s, ones).i, w);
        CHECK_EQ_I(ev1(P_CLZ, s, ones).i, 0);
        CHECK_EQ_I(ev1(P_CTZ, s, ones).i, 0);
        CHECK_EQ_I(ev1(P_CLZ, s, U(1)).i, w - 1);
        CHECK_EQ_I(ev1(P_CTZ, s, U(1)).i, 0);
        Scalar top = U(UINT64_C(1) << (w - 1));
        CHECK_EQ_I(ev1(P_CLZ, s, top).i, 0);
        CHECK_EQ_I(ev1(P_CTZ, s, top).i, w - 1);
        CHECK_EQ_I(ev1(P_POPCOUNT, s, top).i, 1);
        if (s >= AX_I8 && s <= AX_I64) {
            CHECK_EQ_I(ev1(P_POPCOUNT, s, I(smax(s))).i, w - 1);
            CHECK_EQ_I(ev1(P_CLZ, s, I(smax(s))).i, 1);
            CHECK_EQ_I(ev1(P_POPCOUNT, s, I(smin(s))).i, 1);
        }
    }
    CHECK_EQ_I(ev1(P_POPCOUNT, AX_U32, U(0xF0F0F0F0)).i, 16);
    CHECK_EQ_I(ev1(P_CLZ, AX_U16, U(0x00F0)).i, 8);
    CHECK_EQ_I(ev1(P_CTZ, AX_I64, I(INT64_C(1) << 40)).i, 40);
}

/* -------------------------------------------------------- comparisons */

TEST(prim_comparisons)
{
    const Prim cmp[] = {P_EQ, P_NE, P_LT, P_LE, P_GT, P_GE};
    /* NaN is unordered: everything false except ne. */
    for (int c = 0; c < 6; c++) {
        bool want = cmp[c] == P_NE;
        CHECK(bl(ev2(cmp[c], AX_F32, F(NAN), F(1))) == want);
        CHECK(bl(ev2(cmp[c], AX_F64, D(1), D(NAN))) == want);
        CHECK(bl(ev2(cmp[c], AX_F64, D(NAN), D(NAN))) == want);
    }
    CHECK(bl(ev2(P_EQ, AX_F32, F(-0.0f), F(0.0f))));
    CHECK(bl(ev2(P_GT, AX_F64, D(INFINITY), D(DBL_MAX))));
    CHECK(bl(ev2(P_LT, AX_F64, D(-INFINITY), D(-DBL_MAX))));
    CHECK(bl(ev2(P_LE, AX_F32, F(INFINITY), F(INFINITY))));
    CHECK(bl(ev2(P_LT, AX_I8, I(-1), I(1))));
    CHECK(bl(ev2(P_GT, AX_U8, U(255), U(1))));
    CHECK(bl(ev2(P_GT, AX_U64, U(UINT64_MAX), U(0))));
    CHECK(bl(ev2(P_LT, AX_I64, I(INT64_MIN), I(INT64_MAX))));
    CHECK(!bl(ev2(P_GE, AX_I32, I(-2), I(-1))));
    CHECK(bl(ev2(P_LT, AX_BOOL, B(false), B(true))));
    CHECK(bl(ev2(P_EQ, AX_BOOL, B(true), B(true))));
    CHECK(bl(ev2(P_NE, AX_BOOL, B(true), B(false))));
    CHECK(!bl(ev2(P_GT, AX_BOOL, B(false), B(true))));
    /* Results are well-formed bools: .u is 0 or 1. */
    CHECK(ev2(P_LT, AX_I8, I(-1), I(1)).u == 1);
    CHECK(ev2(P_GT, AX_I8, I(-1), I(1)).u == 0);

    CHECK(bl(ev2(P_AND, AX_BOOL, B(true), B(true))));
    CHECK(!bl(ev2(P_AND, AX_BOOL, B(true), B(false))));
    CHECK(bl(ev2(P_OR, AX_BOOL, B(false), B(true))));
    CHECK(!bl(ev2(P_OR, AX_BOOL, B(false), B(false))));
    CHECK(bl(ev1(P_NOT, AX_BOOL, B(false))));
    /* A bool whose byte is 2 (e.g. from a user buffer) counts as true. */
    Scalar two;
    two.u = 2;
    CHECK(!bl(ev1(P_NOT, AX_BOOL, two)));
    CHECK(ev1(P_NOT, AX_BOOL, two).u == 0);
}

/* ----------------------------------------------------- floating point */

TEST(prim_float_precision)
{
    /* f32 is computed in float: 2^24 + 1 is not representable. */
    CHECK(ev2(P_ADD, AX_F32, F(16777216.0f), F(1.0f)).f32 == 16777216.0f);
    CHECK(ev2(P_ADD, AX_F64, D(16777216.0), D(1.0)).f64 == 16777217.0);
    volatile float a = 0.1f, b = 0.2f, c = 1.5f, d = 7.0f;
    CHECK(ev2(P_ADD, AX_F32, F(a), F(b)).f32 == a + b);
    CHECK(ev2(P_MUL, AX_F32, F(a), F(b)).f32 == a * b);
    CHECK(ev2(P_DIV, AX_F32, F(a), F(b)).f32 == a / b);
    /* exp and log: axle's own (core/vmath.h), in float too */
    CHECK(ev1(P_EXP, AX_F32, F(c)).f32 == vm_exp_f32(c));
    CHECK(ev1(P_LOG, AX_F32, F(d)).f32 == vm_log_f32(d));
    CHECK(ev1(P_SQRT, AX_F32, F(d)).f32 == sqrtf(d));
    CHECK(ev1(P_SIN, AX_F32, F(c)).f32 == sinf(c));
    CHECK(ev1(P_TANH, AX_F32, F(c)).f32 == tanhf(c));
    CHECK(ev1(P_ACOSH, AX_F32, F(d)).f32 == acoshf(d));
    CHECK(ev2(P_POW, AX_F32, F(c), F(d)).f32 == powf(c, d));
    CHECK(ev2(P_ATAN2, AX_F32, F(c), F(d)).f32 == atan2f(c, d));
    CHECK(ev2(P_LOGBASE, AX_F32, F(c), F(d)).f32 == vm_log_f32(d) / vm_log_f32(c));
    volatile double x = 0.7, y = 3.0;
    CHECK(ev1(P_EXP, AX_F64, D(x)).f64 == vm_exp_f64(x));
    CHECK(ev1(P_ATANH, AX_F64, D(x)).f64 == atanh(x));
    CHECK(ev1(P_ASIN, AX_F64, D(x)).f64 == asin(x));
    CHECK(ev2(P_POW, AX_F64, D(x), D(y)).f64 == pow(x, y));
    CHECK(ev2(P_LOGBASE, AX_F64, D(2), D(1024)).f64 == 10.0);
    CHECK_CLOSE(ev2(P_LOGBASE, AX_F64, D(10), D(1000)).f64, 3.0, 1e-15);
    CHECK_CLOSE(ev2(P_LOGBASE, AX_F32, F(10), F(1000)).f32, 3.0, 1e-6);
    CHECK(isnan(ev1(P_SQRT, AX_F64, D(-1)).f64));
    CHECK(isnan(ev1(P_LOG, AX_F32, F(-1)).f32));
    CHECK(ev1(P_LOG, AX_F32, F(0)).f32 == -INFINITY);
    /* The unused bytes of an f32 result are zero (normalised). */
    CHECK((ev2(P_ADD, AX_F32, F(1), F(2)).u >> 32) == 0 || sizeof(float) != 4);

    CHECK(bl(ev1(P_ISNAN, AX_F32, F(NAN))));
    CHECK(!bl(ev1(P_ISNAN, AX_F64, D(INFINITY))));
    CHECK(bl(ev1(P_ISINF, AX_F64, D(-INFINITY))));
    CHECK(!bl(ev1(P_ISINF, AX_F32, F(NAN))));
    CHECK(!bl(ev1(P_ISINF, AX_F32, F(FLT_MAX))));
}

TEST(prim_rounding)
{
    /* Half to even. */
    CHECK_EQ_I(cvt(P_ROUND, AX_F64, D(2.5), AX_I32).i, 2);
    CHECK_EQ_I(cvt(P_ROUND, AX_F64, D(3.5), AX_I32).i, 4);
    CHECK_EQ_I(cvt(P_ROUND, AX_F64, D(-2.5), AX_I32).i, -2);
    CHECK_EQ_I(cvt(P_ROUND, AX_F32, F(0.5f), AX_I64).i, 0);
    CHECK_EQ_I(cvt(P_ROUND, AX_F32, F(1.5f), AX_I8).i, 2);
    CHECK_EQ_I(cvt(P_ROUND, AX_F32, F(2.5000002f), AX_I16).i, 3);
    CHECK_EQ_I(cvt(P_ROUND, AX_F64, D(-3.5), AX_I64).i, -4);
    CHECK(cvt(P_ROUND, AX_F64, D(2.5), AX_F64).f64 == 2.0);
    Scalar nz = cvt(P_ROUND, AX_F32, F(-0.5f), AX_F32);
    CHECK(nz.f32 == 0 && signbit(nz.f32));
    /* floor / ceil / trunc. */
    CHECK_EQ_I(cvt(P_FLOOR, AX_F64, D(-1.5), AX_I32).i, -2);
    CHECK_EQ_I(cvt(P_CEIL, AX_F64, D(-1.5), AX_I32).i, -1);
    CHECK_EQ_I(cvt(P_TRUNC, AX_F64, D(-1.5), AX_I32).i, -1);
    CHECK_EQ_I(cvt(P_FLOOR, AX_F32, F(1.5f), AX_I32).i, 1);
    CHECK_EQ_I(cvt(P_CEIL, AX_F32, F(1.000001f), AX_I32).i, 2);
    CHECK(cvt(P_FLOOR, AX_F32, F(-0.25f), AX_F64).f64 == -1.0);
    CHECK(cvt(P_CEIL, AX_F64, D(0.25), AX_F32).f32 == 1.0f);
    /* Into integers: saturate, NaN gives 0. */
    CHECK_EQ_I(cvt(P_FLOOR, AX_F64, D(1e20), AX_I32).i, INT32_MAX);
    CHECK_EQ_I(cvt(P_CEIL, AX_F64, D(-1e20), AX_I64).i, INT64_MIN);
    CHECK_EQ_I(cvt(P_ROUND, AX_F32, F(NAN), AX_I32).i, 0);
    CHECK(cvt(P_ROUND, AX_F32, F(-3.7f), AX_U8).u == 0);
    CHECK(cvt(P_ROUND, AX_F32, F(254.5f), AX_U8).u == 254);
    CHECK(cvt(P_ROUND, AX_F32, F(255.5f), AX_U8).u == 255);   /* 256 saturates */
    CHECK(cvt(P_CEIL, AX_F64, D(INFINITY), AX_U64).u == UINT64_MAX);
    /* Into floats: the value stays infinite / NaN. */
    CHECK(isinf(cvt(P_FLOOR, AX_F64, D(INFINITY), AX_F32).f32));
    CHECK(isnan(cvt(P_TRUNC, AX_F32, F(NAN), AX_F64).f64));
}

/* --------------------------------------------------------- conversions */

TEST(prim_convert)
{
    /* float -> int: truncate, saturate, NaN -> 0. */
    CHECK_EQ_I(cvt(P_CVT, AX_F32, F(1e10f), AX_I32).i, INT32_MAX);
    CHECK_EQ_I(cvt(P_CVT, AX_F32, F(-1e10f), AX_I32).i, INT32_MIN);
    CHECK_EQ_I(cvt(P_CVT, AX_F32, F(NAN), AX_I32).i, 0);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(NAN), AX_I64).i, 0);
    CHECK(cvt(P_CVT, AX_F64, D(-NAN), AX_U32).u == 0);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(INFINITY), AX_I16).i, INT16_MAX);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(-INFINITY), AX_I8).i, INT8_MIN);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(3.9), AX_I32).i, 3);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(-3.9), AX_I32).i, -3);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(127.9), AX_I8).i, 127);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(128.0), AX_I8).i, 127);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(-128.9), AX_I8).i, -128);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(-129.0), AX_I8).i, -128);
    CHECK(cvt(P_CVT, AX_F64, D(-5.0), AX_U8).u == 0);
    CHECK(cvt(P_CVT, AX_F64, D(-0.9), AX_U8).u == 0);
    CHECK(cvt(P_CVT, AX_F64, D(300.0), AX_U8).u == 255);
    CHECK(cvt(P_CVT, AX_F64, D(255.9), AX_U8).u == 255);
    CHECK(cvt(P_CVT, AX_F32, F(65535.5f), AX_U16).u == 65535);
    CHECK_EQ_I(cvt(P_CVT, AX_F32, F(2147483520.0f), AX_I32).i, 2147483520);
    CHECK_EQ_I(cvt(P_CVT, AX_F32, F(2147483648.0f), AX_I32).i, INT32_MAX);
    CHECK_EQ_I(cvt(P_CVT, AX_F32, F(-2147483648.0f), AX_I32).i, INT32_MIN);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(9.3e18), AX_I64).i, INT64_MAX);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(-9.3e18), AX_I64).i, INT64_MIN);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(0x1p63), AX_I64).i, INT64_MAX);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(-0x1p63), AX_I64).i, INT64_MIN);
    CHECK_EQ_I(cvt(P_CVT, AX_F64, D(0x1p62 + 0x1p10), AX_I64).i, INT64_C(0x4000000000000400));
    CHECK(cvt(P_CVT, AX_F64, D(1.8e19), AX_U64).u == UINT64_C(18000000000000000000));
    CHECK(cvt(P_CVT, AX_F64, D(0x1p64), AX_U64).u == UINT64_MAX);
    CHECK(cvt(P_CVT, AX_F32, F(4294967040.0f), AX_U32).u == 4294967040u);
    CHECK(cvt(P_CVT, AX_F32, F(4294967296.0f), AX_U32).u == UINT32_MAX);

    /* int -> int wraps. */
    CHECK(cvt(P_CVT, AX_I32, I(300), AX_U8).u == 44);
    CHECK(cvt(P_CVT, AX_I32, I(-1), AX_U32).u == 4294967295u);
    CHECK_EQ_I(cvt(P_CVT, AX_U8, U(255), AX_I8).i, -1);
    CHECK_EQ_I(cvt(P_CVT, AX_U16, U(40000), AX_I16).i, (int16_t)(uint16_t)40000);
    CHECK(cvt(P_CVT, AX_I64, I(-1), AX_U64).u == UINT64_MAX);
    CHECK_EQ_I(cvt(P_CVT, AX_U64, U(UINT64_MAX), AX_I64).i, -1);
    CHECK_EQ_I(cvt(P_CVT, AX_I8, I(-1), AX_I64).i, -1);
    CHECK_EQ_I(cvt(P_CVT, AX_U32, U(0xFFFFFFFF), AX_I64).i, INT64_C(4294967295));
    CHECK_EQ_I(cvt(P_CVT, AX_I64, I(INT64_C(0x123456789)), AX_I32).i, 0x23456789);

    /* bool. */
    CHECK(bl(cvt(P_CVT, AX_F32, F(NAN), AX_BOOL)));
    CHECK(!bl(cvt(P_CVT, AX_F32, F(0.0f), AX_BOOL)));
    CHECK(!bl(cvt(P_CVT, AX_F64, D(-0.0), AX_BOOL)));
    CHECK(bl(cvt(P_CVT, AX_F64, D(1e-300), AX_BOOL)));
    CHECK(bl(cvt(P_CVT, AX_I32, I(2), AX_BOOL)));
    CHECK(bl(cvt(P_CVT, AX_I64, I(INT64_C(1) << 40), AX_BOOL)));
    CHECK(!bl(cvt(P_CVT, AX_U8, U(0), AX_BOOL)));
    CHECK(cvt(P_CVT, AX_I32, I(2), AX_BOOL).u == 1);
    CHECK(cvt(P_CVT, AX_BOOL, B(true), AX_F32).f32 == 1.0f);
    CHECK(cvt(P_CVT, AX_BOOL, B(false), AX_F64).f64 == 0.0);
    CHECK_EQ_I(cvt(P_CVT, AX_BOOL, B(true), AX_I32).i, 1);
    CHECK(cvt(P_CVT, AX_BOOL, B(true), AX_U64).u == 1);
    CHECK(bl(cvt(P_CVT, AX_BOOL, B(true), AX_BOOL)));

    /* int -> float: C's conversion (round to nearest even). */
    CHECK(cvt(P_CVT, AX_I64, I((INT64_C(1) << 53) + 1), AX_F64).f64 == 0x1p53);
    CHECK(cvt(P_CVT, AX_I32, I(16777217), AX_F32).f32 == 16777216.0f);
    CHECK(cvt(P_CVT, AX_U64, U(UINT64_MAX), AX_F32).f32 == 0x1p64f);
    CHECK(cvt(P_CVT, AX_U64, U(UINT64_MAX), AX_F64).f64 == 0x1p64);
    CHECK(cvt(P_CVT, AX_I8, I(-128), AX_F32).f32 == -128.0f);
    /* Not double-rounded through double: 2^60 + 2^36 + 1 lies just above
     * the midpoint between two floats, so it rounds up; via double it
     * would first round to the midpoint and then to even (down). */
    int64_t big = (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1;
    volatile int64_t vbig = big;
    CHECK(cvt(P_CVT, AX_I64, I(big), AX_F32).f32 == (float)vbig);
    CHECK(cvt(P_CVT, AX_I64, I(big), AX_F32).f32 == 0x1p60f + 0x1p37f);

    /* float -> float. */
    volatile double tenth = 0.1;
    CHECK(cvt(P_CVT, AX_F64, D(tenth), AX_F32).f32 == 0.1f);
    CHECK(isinf(cvt(P_CVT, AX_F64, D(1e300), AX_F32).f32));
    CHECK(cvt(P_CVT, AX_F32, F(0.1f), AX_F64).f64 == (double)0.1f);
    CHECK(isnan(cvt(P_CVT, AX_F32, F(NAN), AX_F64).f64));
}

TEST(prim_bitcast)
{
    CHECK(cvt(P_BITCAST, AX_F32, F(1.0f), AX_I32).i == 0x3f800000);
    CHECK(cvt(P_BITCAST, AX_F32, F(1.0f), AX_U32).u == 0x3f800000);
    CHECK(cvt(P_BITCAST, AX_F32, F(-0.0f), AX_U32).u == 0x80000000u);
    CHECK_EQ_I(cvt(P_BITCAST, AX_F32, F(-0.0f), AX_I32).i, INT32_MIN);
    CHECK(cvt(P_BITCAST, AX_I32, I(0x3f800000), AX_F32).f32 == 1.0f);
    CHECK(cvt(P_BITCAST, AX_F64, D(1.0), AX_U64).u == UINT64_C(0x3ff0000000000000));
    CHECK(cvt(P_BITCAST, AX_U64, U(UINT64_C(0x4000000000000000)), AX_F64).f64 == 2.0);
    CHECK(cvt(P_BITCAST, AX_I8, I(-1), AX_U8).u == 255);
    CHECK_EQ_I(cvt(P_BITCAST, AX_U16, U(0xFFFF), AX_I16).i, -1);
    Scalar n = cvt(P_BITCAST, AX_I64, I(-1), AX_F64);
    CHECK(isnan(n.f64));
    CHECK_EQ_I(cvt(P_BITCAST, AX_F64, n, AX_I64).i, -1);   /* payload kept */
    CHECK(isnan(cvt(P_BITCAST, AX_U32, U(0x7fc00001), AX_F32).f32));
    CHECK(cvt(P_BITCAST, AX_F32, cvt(P_BITCAST, AX_U32, U(0x7fc00001), AX_F32), AX_U32).u == 0x7fc00001);
}

/* --------------------------------------------------------------- shapes */

static int shape_eval(Prim p, int r, const int64_t *sh, const int64_t *extra, int nextra,
                      Scalar *out)
{
    Scalar args[2 * AX_MAX_RANK + 1];
    for (int d = 0; d < r; d++) args[d] = I(sh[d]);
    for (int k = 0; k < nextra; k++) args[r + k] = I(extra[k]);
    const Type *argt[2] = {ty_index(NULL, r), p == P_TOLIN ? ty_index(NULL, r) : ty_i64()};
    const char *why;
    const Type *rt = prim_type(NULL, p, prim_info[p].arity, argt, NULL, &why);
    if (!rt) return -1;
    return prim_eval(p, argt, args, rt, out);
}

TEST(prim_shape_size)
{
    Scalar o;
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 2, (int64_t[]){3, 4}, NULL, 0, &o), 0);
    CHECK_EQ_I(o.i, 12);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 0, NULL, NULL, 0, &o), 0);
    CHECK_EQ_I(o.i, 1);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 3, (int64_t[]){5, 0, 7}, NULL, 0, &o), 0);
    CHECK_EQ_I(o.i, 0);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 2, (int64_t[]){INT64_MAX, 1}, NULL, 0, &o), 0);
    CHECK_EQ_I(o.i, INT64_MAX);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 2, (int64_t[]){INT64_C(1) << 62, 2}, NULL, 0, &o),
               AX_ERR_SHAPE);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 3, (int64_t[]){1 << 30, 1 << 30, 1 << 30}, NULL, 0, &o),
               AX_ERR_SHAPE);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 2, (int64_t[]){INT64_C(1) << 31, INT64_C(1) << 31}, NULL, 0, &o), 0);
    CHECK_EQ_I(o.i, INT64_C(1) << 62);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 2, (int64_t[]){3, -1}, NULL, 0, &o), AX_ERR_SHAPE);
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 2, (int64_t[]){0, -1}, NULL, 0, &o), AX_ERR_SHAPE);
    /* An empty shape has size 0 even when the other extents overflow. */
    CHECK_EQ_I(shape_eval(P_SHAPESIZE, 3, (int64_t[]){INT64_C(1) << 62, 4, 0}, NULL, 0, &o), 0);
    CHECK_EQ_I(o.i, 0);
}

TEST(prim_linear_index)
{
    const int64_t sh[3] = {3, 4, 5};
    Scalar o[AX_MAX_RANK];
    int64_t n = 0;
    for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 4; j++)
            for (int64_t k = 0; k < 5; k++, n++) {
                /* Row-major: the last dimension is contiguous. */
                CHECK_EQ_I(shape_eval(P_TOLIN, 3, sh, (int64_t[]){i, j, k}, 3, o), 0);
                CHECK_EQ_I(o[0].i, n);
                CHECK_EQ_I(shape_eval(P_FROMLIN, 3, sh, &n, 1, o), 0);
                CHECK(o[0].i == i && o[1].i == j && o[2].i == k);
            }
    /* Round trip over a larger range, including past the end. */
    const int64_t sh4[4] = {2, 7, 1, 9};
    for (int64_t i = -200; i < 300; i++) {
        CHECK_EQ_I(shape_eval(P_FROMLIN, 4, sh4, &i, 1, o), 0);
        int64_t ix[4] = {o[0].i, o[1].i, o[2].i, o[3].i};
        CHECK_EQ_I(shape_eval(P_TOLIN, 4, sh4, ix, 4, o), 0);
        CHECK_EQ_I(o[0].i, i);
    }
    /* Rank 1 and 0. */
    int64_t five = 5;
    CHECK_EQ_I(shape_eval(P_FROMLIN, 1, (int64_t[]){7}, &five, 1, o), 0);
    CHECK_EQ_I(o[0].i, 5);
    CHECK_EQ_I(shape_eval(P_TOLIN, 1, (int64_t[]){7}, (int64_t[]){6}, 1, o), 0);
    CHECK_EQ_I(o[0].i, 6);
    CHECK_EQ_I(shape_eval(P_TOLIN, 0, NULL, NULL, 0, o), 0);
    CHECK_EQ_I(o[0].i, 0);
    int64_t zero = 0;
    CHECK_EQ_I(shape_eval(P_FROMLIN, 0, NULL, &zero, 1, o), 0);
    /* An empty inner extent: no fault, the all-zero index. */
    int64_t nine = 9;
    o[0] = o[1] = o[2] = I(77);
    CHECK_EQ_I(shape_eval(P_FROMLIN, 3, (int64_t[]){3, 0, 5}, &nine, 1, o), 0);
    CHECK(o[0].i == 0 && o[1].i == 0 && o[2].i == 0);
    CHECK_EQ_I(shape_eval(P_FROMLIN, 2, (int64_t[]){3, -4}, &nine, 1, o), 0);
    CHECK(o[0].i == 0 && o[1].i == 0);
    /* Extreme values: wrapping, not undefined. */
    CHECK_EQ_I(shape_eval(P_TOLIN, 2, (int64_t[]){2, INT64_MAX}, (int64_t[]){INT64_MAX, INT64_MAX}, 2, o), 0);
    int64_t mn = INT64_MIN;
    CHECK_EQ_I(shape_eval(P_FROMLIN, 2, (int64_t[]){1, 3}, &mn, 1, o), 0);
    CHECK_EQ_I(o[1].i, INT64_MIN % 3);
    CHECK_EQ_I(o[0].i, INT64_MIN / 3);
}

/* --------------------------------------------- representation helpers */

TEST(prim_scalar_helpers)
{
    /* sc_norm wraps and extends. */
    CHECK_EQ_I(sc_norm(U(0x180), AX_I8).i, -128);
    CHECK(sc_norm(U(0x180), AX_U8).u == 0x80);
    CHECK_EQ_I(sc_norm(U(0xFFFFFFFF), AX_I32).i, -1);
    CHECK(sc_norm(I(-1), AX_U32).u == 0xFFFFFFFFu);
    CHECK(sc_norm(U(2), AX_BOOL).u == 1);
    Scalar f;
    f.u = UINT64_MAX;
    f.f32 = 2.0f;
    CHECK(sc_norm(f, AX_F32).f32 == 2.0f);
    CHECK((sc_norm(f, AX_F32).u >> 32) == 0);

    /* load / store every type. */
    unsigned char buf[64];
    const ax_scalar all[] = {AX_BOOL, AX_I8, AX_I16, AX_I32, AX_I64, AX_U8, AX_U16,
                             AX_U32, AX_U64, AX_F32, AX_F64};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) {
        ax_scalar s = all[k];
        Scalar v = s == AX_BOOL ? B(true) : s == AX_F32 ? F(-1.25f) : s == AX_F64 ? D(-2.5)
                 : sc_norm(I(-3), s);
        memset(buf, 0x5A, sizeof buf);
        sc_store(buf, s, 3, v);
        size_t sz = ax_scalar_size(s);
        CHECK(buf[3 * sz - 1] == 0x5A && buf[4 * sz] == 0x5A);   /* neighbours untouched */
        Scalar w = sc_load(buf, s, 3);
        CHECKF(sc_eq_bits(s, v, w), "load/store %s", ax_scalar_name(s));
        if (s != AX_F64) CHECK(w.u == v.u);
    }
    int16_t i16[2] = {0, -2};
    CHECK_EQ_I(sc_load(i16, AX_I16, 1).i, -2);
    uint32_t u32[1] = {0xFFFFFFFFu};
    CHECK(sc_load(u32, AX_U32, 0).u == 0xFFFFFFFFu);
    unsigned char b2[1] = {2};
    CHECK(sc_load(b2, AX_BOOL, 0).u == 1);
    sc_store(b2, AX_BOOL, 0, U(2));
    CHECK(b2[0] == 1);
    int8_t i8[1];
    sc_store(i8, AX_I8, 0, I(-7));
    CHECK_EQ_I(i8[0], -7);

    /* sc_eq_bits: bit patterns, not values. */
    CHECK(!sc_eq_bits(AX_F64, D(0.0), D(-0.0)));
    CHECK(sc_eq_bits(AX_F64, D(NAN), D(NAN)));
    CHECK(!sc_eq_bits(AX_F32, F(0.0f), F(-0.0f)));
    CHECK(sc_eq_bits(AX_F32, F(NAN), F(NAN)));
    CHECK(sc_eq_bits(AX_I8, I(-1), U(0xFF)));
    CHECK(!sc_eq_bits(AX_I32, I(1), I(2)));
    CHECK(sc_eq_bits(AX_BOOL, B(true), U(1)));
}

static const char *printed(ax_scalar s, Scalar v)
{
    static char buf[128];
    FILE *f = tmpfile();
    if (!f) return "";
    sc_print(f, s, v);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

#define CHECK_PRINT(s, v, want) do { const char *_got = printed((s), (v)); \
    CHECKF(strcmp(_got, (want)) == 0, "printed %s, want %s", _got, (want)); } while (0)

TEST(prim_print)
{
    CHECK_PRINT(AX_F64, D(1.5), "1.5");
    CHECK_PRINT(AX_F64, D(1.0), "1.0");
    CHECK_PRINT(AX_F64, D(100.0), "100.0");
    CHECK_PRINT(AX_F64, D(-0.0), "-0.0");
    CHECK_PRINT(AX_F64, D(0.1), "0.1");
    CHECK_PRINT(AX_F64, D(1e20), "1e+20");
    CHECK_PRINT(AX_F64, D(1e-7), "1e-07");
    CHECK_PRINT(AX_F64, D(NAN), "NaN");
    CHECK_PRINT(AX_F64, D(INFINITY), "Infinity");
    CHECK_PRINT(AX_F32, F(-INFINITY), "-Infinity");
    CHECK_PRINT(AX_F32, F(0.1f), "0.1");
    CHECK_PRINT(AX_F32, F(16777216.0f), "16777216.0");
    CHECK_PRINT(AX_F32, F(42.0f), "42.0");
    CHECK_PRINT(AX_I8, I(-128), "-128");
    CHECK_PRINT(AX_I64, I(INT64_MIN), "-9223372036854775808");
    CHECK_PRINT(AX_U64, U(UINT64_MAX), "18446744073709551615");
    CHECK_PRINT(AX_U8, U(200), "200");
    CHECK_PRINT(AX_BOOL, B(true), "true");
    CHECK_PRINT(AX_BOOL, B(false), "false");
    /* Round trip on awkward values. */
    srand(12345);
    for (int k = 0; k < 2000; k++) {
        uint64_t r = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
        double d;
        memcpy(&d, &r, 8);
        if (!isfinite(d)) continue;
        double back = strtod(printed(AX_F64, D(d)), NULL);
        CHECKF(memcmp(&back, &d, 8) == 0, "%.17g printed %s", d, printed(AX_F64, D(d)));
        uint32_t r32 = (uint32_t)r;
        float x;
        memcpy(&x, &r32, 4);
        if (!isfinite(x)) continue;
        float xb = strtof(printed(AX_F32, F(x)), NULL);
        CHECKF(memcmp(&xb, &x, 4) == 0, "%.9g printed %s", x, printed(AX_F32, F(x)));
    }
}
