/*
 * Primitive operations: their names, their typing rules and their exact
 * meaning on scalar values.  This file is the semantic definition of every
 * scalar operation: the reference interpreter and the constant folder call
 * prim_eval, and the code generators are tested against it.  So it never
 * relies on undefined or implementation-defined C behaviour: integer
 * arithmetic is done on uint64_t and wrapped to the type's width, shifts
 * and divisions are range-checked first, and float <-> int conversions
 * saturate explicitly.
 *
 * Value representation (ir.h Scalar): a value is kept "normalised": an
 * integer as a full 64-bit value sign-extended (signed types) or
 * zero-extended (unsigned types) from its width; a bool as .u = 0 then
 * .b = 0/1; an f32 as .u = 0 then .f32 (so the unused bytes are zero and
 * two equal constants have equal bytes); an f64 in .f64.  Every function
 * here returns normalised values.  Arguments are normalised again on entry
 * where that costs nothing (integers are re-wrapped, bools are read as
 * "low byte nonzero"), so a caller that fills only the field it needs
 * still gets well-defined results.
 *
 * Decisions on details axle.h leaves open:
 *  - MIN/MAX on floats: if one operand is NaN the other is returned (both
 *    NaN: NaN); -0.0 counts as less than +0.0 (IEEE 754-2019
 *    minimumNumber/maximumNumber), so the result never depends on the
 *    operand order.
 *  - SIGNUM on floats: -1, +1, NaN for NaN, and a zero keeps its sign
 *    (signum -0.0 = -0.0), as in Haskell.
 *  - Float -> bool: true if the value compares unequal to zero, so NaN is
 *    true (C's conversion to _Bool).
 *  - ROUND: half to even, via rint in the default rounding mode (axle never
 *    changes the rounding mode).
 *  - SHAPESIZE: a negative extent is AX_ERR_SHAPE; otherwise if any extent
 *    is 0 the size is 0 (even if the other extents' product would
 *    overflow); otherwise an int64 overflow is AX_ERR_SHAPE.
 *  - TOLIN is not bounds checked and wraps (two's complement) on overflow.
 *  - FROMLIN follows Accelerate: the innermost components are remainders,
 *    the outermost component is the remaining quotient (so the outermost
 *    extent is never used, exactly as in TOLIN, and TOLIN(sh, FROMLIN(sh,
 *    i)) == i for every i).  If an extent used as a divisor is <= 0 the
 *    result is the all-zero index (no fault).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "vmath.h"
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <inttypes.h>

/* ------------------------------------------------------------ the table */

const PrimInfo prim_info[P_NPRIM] = {
    [P_ADD]      = {"add", "ax_add", 2},
    [P_SUB]      = {"sub", "ax_sub", 2},
    [P_MUL]      = {"mul", "ax_mul", 2},
    [P_DIV]      = {"div", "ax_div", 2},
    [P_QUOT]     = {"quot", "ax_quot", 2},
    [P_REM]      = {"rem", "ax_rem", 2},
    [P_IDIV]     = {"idiv", "ax_idiv", 2},
    [P_MOD]      = {"mod", "ax_mod", 2},
    [P_MIN]      = {"min", "ax_min", 2},
    [P_MAX]      = {"max", "ax_max", 2},
    [P_NEG]      = {"neg", "ax_neg", 1},
    [P_ABS]      = {"abs", "ax_abs", 1},
    [P_SIGNUM]   = {"signum", "ax_signum", 1},
    [P_BAND]     = {"band", "ax_band", 2},
    [P_BOR]      = {"bor", "ax_bor", 2},
    [P_BXOR]     = {"bxor", "ax_bxor", 2},
    [P_SHL]      = {"shl", "ax_shl", 2},
    [P_SHR]      = {"shr", "ax_shr", 2},
    [P_ROTL]     = {"rotl", "ax_rotl", 2},
    [P_ROTR]     = {"rotr", "ax_rotr", 2},
    [P_BNOT]     = {"bnot", "ax_bnot", 1},
    [P_POPCOUNT] = {"popcount", "ax_popcount", 1},
    [P_CLZ]      = {"clz", "ax_clz", 1},
    [P_CTZ]      = {"ctz", "ax_ctz", 1},
    [P_EQ]       = {"eq", "ax_eq", 2},
    [P_NE]       = {"ne", "ax_ne", 2},
    [P_LT]       = {"lt", "ax_lt", 2},
    [P_LE]       = {"le", "ax_le", 2},
    [P_GT]       = {"gt", "ax_gt", 2},
    [P_GE]       = {"ge", "ax_ge", 2},
    [P_AND]      = {"and", "ax_and", 2},
    [P_OR]       = {"or", "ax_or", 2},
    [P_NOT]      = {"not", "ax_not", 1},
    [P_EXP]      = {"exp", "ax_exp_", 1},
    [P_LOG]      = {"log", "ax_log", 1},
    [P_SQRT]     = {"sqrt", "ax_sqrt", 1},
    [P_SIN]      = {"sin", "ax_sin", 1},
    [P_COS]      = {"cos", "ax_cos", 1},
    [P_TAN]      = {"tan", "ax_tan", 1},
    [P_ASIN]     = {"asin", "ax_asin", 1},
    [P_ACOS]     = {"acos", "ax_acos", 1},
    [P_ATAN]     = {"atan", "ax_atan", 1},
    [P_SINH]     = {"sinh", "ax_sinh", 1},
    [P_COSH]     = {"cosh", "ax_cosh", 1},
    [P_TANH]     = {"tanh", "ax_tanh", 1},
    [P_ASINH]    = {"asinh", "ax_asinh", 1},
    [P_ACOSH]    = {"acosh", "ax_acosh", 1},
    [P_ATANH]    = {"atanh", "ax_atanh", 1},
    [P_POW]      = {"pow", "ax_pow", 2},
    [P_LOGBASE]  = {"logbase", "ax_logbase", 2},
    [P_ATAN2]    = {"atan2", "ax_atan2", 2},
    [P_ISNAN]    = {"isnan", "ax_is_nan", 1},
    [P_ISINF]    = {"isinf", "ax_is_infinite", 1},
    [P_FLOOR]    = {"floor", "ax_floor", 1},
    [P_CEIL]     = {"ceil", "ax_ceiling", 1},
    [P_ROUND]    = {"round", "ax_round", 1},
    [P_TRUNC]    = {"trunc", "ax_truncate", 1},
    [P_CVT]      = {"cvt", "ax_cvt", 1},
    [P_BITCAST]  = {"bitcast", "ax_bitcast", 1},
    [P_SHAPESIZE]= {"shapesize", "ax_shape_size", 1},
    [P_TOLIN]    = {"tolin", "ax_to_linear", 2},
    [P_FROMLIN]  = {"fromlin", "ax_from_linear", 2},
    [P_RESHAPE]  = {"reshapechk", "ax_reshape", 2},
};

/* ------------------------------------------------------- scalar kinds */

/* The scalar kinds (sc_ is this file's prefix: scalar kinds and values). */
bool sc_is_int(ax_scalar s) { return s >= AX_I8 && s <= AX_U64; }
bool sc_is_signed(ax_scalar s) { return (s >= AX_I8 && s <= AX_I64) || sc_is_float(s); }
bool sc_is_float(ax_scalar s) { return s == AX_F32 || s == AX_F64; }
int sc_bits(ax_scalar s) { return (int)ax_scalar_size(s) * 8; }

/* Local versions of the scalar-kind tests: prim_eval runs once per element
 * in the interpreter, and these are fixed by the public enum's order. */
static inline bool k_sint(ax_scalar s) { return s >= AX_I8 && s <= AX_I64; }
static inline bool k_int(ax_scalar s) { return s >= AX_I8 && s <= AX_U64; }
static inline bool k_float(ax_scalar s) { return s == AX_F32 || s == AX_F64; }

/* Width in bits (bool: 8, its storage size). */
static inline int k_bits(ax_scalar s)
{
    static const unsigned char bits[AX_NSCALAR] = {8, 8, 16, 32, 64, 8, 16, 32, 64, 32, 64};
    return (unsigned)s < AX_NSCALAR ? bits[s] : 64;
}

static inline uint64_t mask_of(int w)
{
    return w >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
}

/* ------------------------------------------------------ value helpers */

/* Reads a bool by its storage byte, never as a C bool lvalue: a Scalar
 * whose .b byte is not 0/1 (e.g. written through .i) would otherwise be
 * undefined behaviour (and a UBSan report). */
static inline bool rd_bool(Scalar v)
{
    unsigned char c;
    memcpy(&c, &v.b, 1);
    return c != 0;
}

static inline Scalar mk_bool(bool x) { Scalar r; r.u = 0; r.b = x; return r; }
static inline Scalar mk_f32(float x) { Scalar r; r.u = 0; r.f32 = x; return r; }
static inline Scalar mk_f64(double x) { Scalar r; r.f64 = x; return r; }

/* Wraps the low bits of x to integer type s (sign- or zero-extends). */
static inline Scalar mk_int(uint64_t x, ax_scalar s)
{
    int w = k_bits(s);
    uint64_t m = mask_of(w);
    x &= m;
    if (k_sint(s) && w < 64 && (x >> (w - 1)) & 1) x |= ~m;
    Scalar r;
    r.u = x;
    return r;
}

Scalar sc_norm(Scalar v, ax_scalar s)
{
    switch (s) {
    case AX_BOOL: return mk_bool(rd_bool(v));
    case AX_F32: return mk_f32(v.f32);
    case AX_F64: return v;
    default: return mk_int(v.u, s);
    }
}

/* The raw bits of a value of type s, in the low k_bits(s) bits. */
static uint64_t raw_bits(Scalar v, ax_scalar s)
{
    switch (s) {
    case AX_BOOL: return rd_bool(v);
    case AX_F32: { uint32_t b; memcpy(&b, &v.f32, 4); return b; }
    case AX_F64: { uint64_t b; memcpy(&b, &v.f64, 8); return b; }
    default: return v.u & mask_of(k_bits(s));
    }
}

bool sc_eq_bits(ax_scalar s, Scalar a, Scalar b)
{
    return raw_bits(a, s) == raw_bits(b, s);
}

/* ---------------------------------------------------------- conversion */

/* Float (given exactly as a double) to integer type `to`: truncates toward
 * zero, saturates to the type's range, NaN gives 0.  The range tests are
 * exact: the bounds are powers of two, representable in double, and an
 * f32 widened to double is exact. */
static Scalar float_to_int(double x, ax_scalar to)
{
    if (isnan(x)) return mk_int(0, to);
    int w = k_bits(to);
    double t = trunc(x);
    if (k_sint(to)) {
        double lim = ldexp(1.0, w - 1);          /* 2^(w-1) */
        if (t >= lim) return mk_int((UINT64_C(1) << (w - 1)) - 1, to);
        if (t < -lim) return mk_int(UINT64_C(1) << (w - 1), to);
        Scalar r;
        r.i = (int64_t)t;                        /* in range: exact */
        return mk_int(r.u, to);
    }
    double lim = ldexp(1.0, w);                  /* 2^w */
    if (t >= lim) return mk_int(~UINT64_C(0), to);
    if (t <= 0) return mk_int(0, to);            /* also -0.0 */
    return mk_int((uint64_t)t, to);
}

Scalar sc_convert(Scalar v, ax_scalar from, ax_scalar to)
{
    if (from == AX_BOOL) {
        bool b = rd_bool(v);
        switch (to) {
        case AX_BOOL: return mk_bool(b);
        case AX_F32: return mk_f32(b ? 1.0f : 0.0f);
        case AX_F64: return mk_f64(b ? 1.0 : 0.0);
        default: return mk_int(b, to);
        }
    }
    if (k_int(from)) {
        Scalar x = mk_int(v.u, from);            /* normalise first */
        switch (to) {
        case AX_BOOL: return mk_bool(x.u != 0);
        /* One C conversion from the 64-bit integer: rounds once, to
         * nearest, so u64/i64 -> f32 is not double-rounded via double. */
        case AX_F32: return mk_f32(k_sint(from) ? (float)x.i : (float)x.u);
        case AX_F64: return mk_f64(k_sint(from) ? (double)x.i : (double)x.u);
        default: return mk_int(x.u, to);
        }
    }
    /* from a float */
    double d = from == AX_F32 ? (double)v.f32 : v.f64;
    switch (to) {
    case AX_BOOL: return mk_bool(d != 0 || isnan(d));
    case AX_F32: return mk_f32(from == AX_F32 ? v.f32 : (float)v.f64);
    case AX_F64: return mk_f64(d);
    default: return float_to_int(d, to);
    }
}

/* --------------------------------------------------------- load, store */

Scalar sc_load(const void *buf, ax_scalar s, int64_t i)
{
    Scalar r;
    r.u = 0;
    switch (s) {
    /* A bool is a byte; any nonzero byte reads as true, so a user buffer
     * holding 2 cannot produce an invalid C bool. */
    case AX_BOOL: return mk_bool(((const unsigned char *)buf)[i] != 0);
    case AX_I8:  r.i = ((const int8_t *)buf)[i]; break;
    case AX_I16: r.i = ((const int16_t *)buf)[i]; break;
    case AX_I32: r.i = ((const int32_t *)buf)[i]; break;
    case AX_I64: r.i = ((const int64_t *)buf)[i]; break;
    case AX_U8:  r.u = ((const uint8_t *)buf)[i]; break;
    case AX_U16: r.u = ((const uint16_t *)buf)[i]; break;
    case AX_U32: r.u = ((const uint32_t *)buf)[i]; break;
    case AX_U64: r.u = ((const uint64_t *)buf)[i]; break;
    case AX_F32: r.f32 = ((const float *)buf)[i]; break;
    case AX_F64: r.f64 = ((const double *)buf)[i]; break;
    default: break;
    }
    return r;
}

void sc_store(void *buf, ax_scalar s, int64_t i, Scalar v)
{
    /* Integers are stored through the unsigned type of their width: the
     * conversion is a well-defined wrap, and C lets an intN_t object be
     * written through its uintN_t counterpart. */
    switch (s) {
    case AX_BOOL: ((unsigned char *)buf)[i] = rd_bool(v); break;
    case AX_I8: case AX_U8:   ((uint8_t *)buf)[i] = (uint8_t)v.u; break;
    case AX_I16: case AX_U16: ((uint16_t *)buf)[i] = (uint16_t)v.u; break;
    case AX_I32: case AX_U32: ((uint32_t *)buf)[i] = (uint32_t)v.u; break;
    case AX_I64: case AX_U64: ((uint64_t *)buf)[i] = v.u; break;
    case AX_F32: ((float *)buf)[i] = v.f32; break;
    case AX_F64: ((double *)buf)[i] = v.f64; break;
    default: break;
    }
}

/* ------------------------------------------------------------ printing */

/* The shortest decimal form that reads back to the same value (so the
 * printer shows 0.1, not 0.100000001), with ".0" added when it would
 * otherwise read as an integer. */
static void print_float(FILE *f, double x, bool single)
{
    if (isnan(x)) { fputs("NaN", f); return; }
    if (isinf(x)) { fputs(x < 0 ? "-Infinity" : "Infinity", f); return; }
    char buf[64];
    int maxp = single ? 9 : 17;     /* enough digits to round-trip */
    for (int p = 1; p <= maxp; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, x);
        bool same = single ? strtof(buf, NULL) == (float)x : strtod(buf, NULL) == x;
        if (same) break;
    }
    /* %g switches to an exponent as soon as the digits run out (100 is
     * "1e+02" at precision 1); below 1e17 print such integral values in
     * full instead, which is exact and so still round-trips. */
    char *e = strchr(buf, 'e');
    if (e && atoi(e + 1) >= 0 && atoi(e + 1) < 17) snprintf(buf, sizeof buf, "%.0f", x);
    /* A locale with a decimal comma: print the C form anyway. */
    bool frac = false;
    for (char *c = buf; *c; c++) {
        if (*c == ',') *c = '.';
        if (*c == '.' || *c == 'e') frac = true;
    }
    fputs(buf, f);
    if (!frac) fputs(".0", f);
}

void sc_print(FILE *f, ax_scalar s, Scalar v)
{
    switch (s) {
    case AX_BOOL: fputs(rd_bool(v) ? "true" : "false", f); break;
    case AX_F32: print_float(f, v.f32, true); break;
    case AX_F64: print_float(f, v.f64, false); break;
    default: {
        Scalar x = mk_int(v.u, s);
        if (k_sint(s)) fprintf(f, "%" PRId64, x.i);
        else fprintf(f, "%" PRIu64, x.u);
        break;
    }
    }
}

/* -------------------------------------------------------------- typing */

static const Type *fail(const char **why, const char *msg)
{
    *why = msg;
    return NULL;
}

static bool is_scalar(const Type *t) { return t && t->kind == TY_SCALAR; }
static bool is_num(const Type *t) { return is_scalar(t) && t->s != AX_BOOL; }
static bool is_intt(const Type *t) { return is_scalar(t) && k_int(t->s); }
static bool is_flt(const Type *t) { return is_scalar(t) && k_float(t->s); }
static bool is_bool(const Type *t) { return is_scalar(t) && t->s == AX_BOOL; }
static bool is_index(const Type *t) { return t && t->kind == TY_INDEX; }
static bool same(const Type *x, const Type *y) { return is_scalar(x) && is_scalar(y) && x->s == y->s; }

const Type *prim_type(Arena *a, Prim p, int n, const Type *const *args, const Type *target,
                      const char **why)
{
    const char *ignored;
    if (!why) why = &ignored;
    if ((unsigned)p >= P_NPRIM) return fail(why, "unknown primitive");
    if (n != prim_info[p].arity) return fail(why, "wrong number of operands");
    for (int i = 0; i < n; i++)
        if (!args || !args[i]) return fail(why, "missing operand");
    const Type *x = args[0], *y = n > 1 ? args[1] : NULL;

    switch (p) {
    case P_ADD: case P_SUB: case P_MUL: case P_DIV: case P_MIN: case P_MAX:
        if (!is_num(x) || !same(x, y)) return fail(why, "operands must have the same numeric type");
        return ty_scalar(x->s);
    case P_QUOT: case P_REM: case P_IDIV: case P_MOD:
    case P_BAND: case P_BOR: case P_BXOR:
        if (!is_intt(x) || !same(x, y)) return fail(why, "operands must have the same integer type");
        return ty_scalar(x->s);
    case P_NEG: case P_ABS: case P_SIGNUM:
        if (!is_num(x)) return fail(why, "operand must be numeric");
        return ty_scalar(x->s);
    case P_SHL: case P_SHR: case P_ROTL: case P_ROTR:
        if (!is_intt(x)) return fail(why, "operand must be an integer");
        if (!is_intt(y)) return fail(why, "shift amount must be an integer");
        return ty_scalar(x->s);
    case P_BNOT:
        if (!is_intt(x)) return fail(why, "operand must be an integer");
        return ty_scalar(x->s);
    case P_POPCOUNT: case P_CLZ: case P_CTZ:
        if (!is_intt(x)) return fail(why, "operand must be an integer");
        return ty_i32();
    case P_EQ: case P_NE: case P_LT: case P_LE: case P_GT: case P_GE:
        if (!same(x, y)) return fail(why, "operands must have the same scalar type");
        return ty_bool();
    case P_AND: case P_OR:
        if (!is_bool(x) || !is_bool(y)) return fail(why, "operands must be bool");
        return ty_bool();
    case P_NOT:
        if (!is_bool(x)) return fail(why, "operand must be bool");
        return ty_bool();
    case P_EXP: case P_LOG: case P_SQRT: case P_SIN: case P_COS: case P_TAN:
    case P_ASIN: case P_ACOS: case P_ATAN: case P_SINH: case P_COSH: case P_TANH:
    case P_ASINH: case P_ACOSH: case P_ATANH:
        if (!is_flt(x)) return fail(why, "operand must be floating point (f32 or f64)");
        return ty_scalar(x->s);
    case P_POW: case P_LOGBASE: case P_ATAN2:
        if (!is_flt(x) || !same(x, y))
            return fail(why, "operands must have the same floating-point type (f32 or f64)");
        return ty_scalar(x->s);
    case P_ISNAN: case P_ISINF:
        if (!is_flt(x)) return fail(why, "operand must be floating point (f32 or f64)");
        return ty_bool();
    case P_FLOOR: case P_CEIL: case P_ROUND: case P_TRUNC:
        if (!is_flt(x)) return fail(why, "operand must be floating point (f32 or f64)");
        if (!is_num(target)) return fail(why, "target must be a numeric type");
        return ty_scalar(target->s);
    case P_CVT:
        if (!is_scalar(x)) return fail(why, "operand must be a scalar");
        if (!is_scalar(target)) return fail(why, "target must be a scalar type");
        return ty_scalar(target->s);
    case P_BITCAST:
        if (!is_num(x) || !is_num(target) || k_bits(x->s) != k_bits(target->s))
            return fail(why, "bitcast needs numeric types of the same size");
        return ty_scalar(target->s);
    case P_SHAPESIZE:
        if (!is_index(x)) return fail(why, "operand must be an index (shape)");
        return ty_i64();
    case P_TOLIN:
        if (!is_index(x) || !is_index(y)) return fail(why, "operands must be indices (shape, index)");
        if (x->n != y->n) return fail(why, "shape and index must have the same rank");
        return ty_i64();
    case P_RESHAPE:
        if (!is_index(x) || !is_index(y)) return fail(why, "operands must be indices (shapes)");
        return x;
    case P_FROMLIN: {
        if (!is_index(x)) return fail(why, "first operand must be an index (shape)");
        if (!is_scalar(y) || y->s != AX_I64) return fail(why, "linear index must be i64");
        const Type *r = ty_index(a, x->n);
        return r ? r : fail(why, "index rank out of range");
    }
    case P_NPRIM: break;
    }
    return fail(why, "unknown primitive");
}

/* ---------------------------------------------------------- evaluation */

static int eval_int2(Prim p, ax_scalar s, Scalar a, Scalar b, Scalar *out)
{
    a = mk_int(a.u, s);
    b = mk_int(b.u, s);
    bool sg = k_sint(s);
    uint64_t q, r;
    switch (p) {
    case P_ADD: *out = mk_int(a.u + b.u, s); return 0;
    case P_SUB: *out = mk_int(a.u - b.u, s); return 0;
    case P_MUL: *out = mk_int(a.u * b.u, s); return 0;
    case P_MIN: *out = (sg ? a.i <= b.i : a.u <= b.u) ? a : b; return 0;
    case P_MAX: *out = (sg ? a.i >= b.i : a.u >= b.u) ? a : b; return 0;
    case P_BAND: *out = mk_int(a.u & b.u, s); return 0;
    case P_BOR: *out = mk_int(a.u | b.u, s); return 0;
    case P_BXOR: *out = mk_int(a.u ^ b.u, s); return 0;
    case P_DIV: case P_QUOT: case P_REM: case P_IDIV: case P_MOD:
        break;
    default: return AX_ERR_BUILD;
    }
    if (b.u == 0) return AX_ERR_DIVZERO;
    if (!sg) {
        q = a.u / b.u;
        r = a.u % b.u;
    } else if (b.i == -1) {
        /* x / -1 = -x, wrapping INT_MIN to itself (only i64 could
         * overflow int64 arithmetic; narrower types wrap in mk_int). */
        q = 0 - a.u;
        r = 0;
    } else {
        int64_t qi = a.i / b.i, ri = a.i % b.i;
        /* Floor division (Haskell div/mod): when the remainder's sign
         * differs from the divisor's, step the quotient down.  Neither
         * step can overflow: |ri| < |b.i| and qi > INT64_MIN here. */
        if ((p == P_IDIV || p == P_MOD) && ri != 0 && ((ri < 0) != (b.i < 0))) {
            qi -= 1;
            ri += b.i;
        }
        Scalar t;
        t.i = qi; q = t.u;
        t.i = ri; r = t.u;
    }
    *out = mk_int((p == P_REM || p == P_MOD) ? r : q, s);
    return 0;
}

/* The shift or rotate amount as a signed count, clamped into [-1, 65]
 * (every out-of-range amount behaves like -1 or 65 for shifts).  For
 * rotations the exact amount modulo the width is computed separately. */
static int64_t shift_amount(Scalar n, ax_scalar ns)
{
    Scalar v = mk_int(n.u, ns);
    if (k_sint(ns)) return v.i < 0 ? -1 : v.i > 65 ? 65 : v.i;
    return v.u > 65 ? 65 : (int64_t)v.u;
}

/* ((n mod w) + w) mod w for the amount n of type ns. */
static int rot_amount(Scalar n, ax_scalar ns, int w)
{
    Scalar v = mk_int(n.u, ns);
    if (k_sint(ns)) {
        int64_t m = v.i % w;
        return (int)(m < 0 ? m + w : m);
    }
    return (int)(v.u % (uint64_t)w);
}

static uint64_t rotl_bits(uint64_t x, int r, int w)
{
    uint64_t m = mask_of(w);
    x &= m;
    if (r == 0) return x;   /* x >> w would be undefined for w == 64 */
    return ((x << r) | (x >> (w - r))) & m;
}

static int eval_shift(Prim p, ax_scalar s, Scalar a, Scalar n, ax_scalar ns, Scalar *out)
{
    a = mk_int(a.u, s);
    int w = k_bits(s);
    if (p == P_ROTL || p == P_ROTR) {
        int r = rot_amount(n, ns, w);
        if (p == P_ROTR) r = (w - r) % w;
        *out = mk_int(rotl_bits(a.u, r, w), s);
        return 0;
    }
    int64_t k = shift_amount(n, ns);
    bool in = k >= 0 && k < w;
    if (p == P_SHL) {
        *out = mk_int(in ? a.u << k : 0, s);
    } else if (!k_sint(s)) {
        *out = mk_int(in ? a.u >> k : 0, s);
    } else {
        /* Arithmetic shift without relying on >> of a negative value
         * (implementation-defined in C): complement, shift, complement. */
        bool neg = a.i < 0;
        if (!in) *out = mk_int(neg ? ~UINT64_C(0) : 0, s);
        else *out = mk_int(neg ? ~(~a.u >> k) : a.u >> k, s);
    }
    return 0;
}

static int eval_int1(Prim p, ax_scalar s, Scalar a, Scalar *out)
{
    a = mk_int(a.u, s);
    int w = k_bits(s);
    uint64_t bits = a.u & mask_of(w);
    switch (p) {
    case P_NEG: *out = mk_int(0 - a.u, s); return 0;
    case P_ABS: *out = mk_int(k_sint(s) && a.i < 0 ? 0 - a.u : a.u, s); return 0;
    case P_SIGNUM:
        if (k_sint(s)) *out = mk_int(a.i > 0 ? 1 : a.i < 0 ? ~UINT64_C(0) : 0, s);
        else *out = mk_int(a.u != 0, s);
        return 0;
    case P_BNOT: *out = mk_int(~a.u, s); return 0;
    case P_POPCOUNT: *out = mk_int((uint64_t)__builtin_popcountll(bits), AX_I32); return 0;
    case P_CLZ:
        *out = mk_int(bits ? (uint64_t)(__builtin_clzll(bits) - (64 - w)) : (uint64_t)w, AX_I32);
        return 0;
    case P_CTZ:
        *out = mk_int(bits ? (uint64_t)__builtin_ctzll(bits) : (uint64_t)w, AX_I32);
        return 0;
    default: return AX_ERR_BUILD;
    }
}

/* Float MIN/MAX: NaN loses; -0.0 < +0.0.  Written once as a macro so the
 * f32 and f64 versions cannot drift apart. */
#define FMINMAX(T, name)                                                      \
    static T name(T x, T y, bool max)                                          \
    {                                                                          \
        if (isnan(x)) return y;                                                \
        if (isnan(y)) return x;                                                \
        if (x == y) { /* equal: maybe zeros of different sign */              \
            bool xneg = signbit(x) != 0;                                       \
            return (max ? !xneg : xneg) ? x : y;                               \
        }                                                                      \
        return (max ? x > y : x < y) ? x : y;                                  \
    }
FMINMAX(float, minmax_f32)
FMINMAX(double, minmax_f64)
#undef FMINMAX

static int eval_f32(Prim p, float x, float y, Scalar *out)
{
    float r;
    switch (p) {
    case P_ADD: r = x + y; break;
    case P_SUB: r = x - y; break;
    case P_MUL: r = x * y; break;
    case P_DIV: r = x / y; break;
    case P_MIN: r = minmax_f32(x, y, false); break;
    case P_MAX: r = minmax_f32(x, y, true); break;
    case P_NEG: r = -x; break;
    case P_ABS: r = fabsf(x); break;
    case P_SIGNUM: r = isnan(x) || x == 0 ? x : copysignf(1.0f, x); break;
    case P_EXP: r = vm_exp_f32(x); break;   /* axle's own (vmath.h) */
    case P_LOG: r = vm_log_f32(x); break;
    case P_SQRT: r = sqrtf(x); break;
    case P_SIN: r = sinf(x); break;
    case P_COS: r = cosf(x); break;
    case P_TAN: r = tanf(x); break;
    case P_ASIN: r = asinf(x); break;
    case P_ACOS: r = acosf(x); break;
    case P_ATAN: r = atanf(x); break;
    case P_SINH: r = sinhf(x); break;
    case P_COSH: r = coshf(x); break;
    case P_TANH: r = tanhf(x); break;
    case P_ASINH: r = asinhf(x); break;
    case P_ACOSH: r = acoshf(x); break;
    case P_ATANH: r = atanhf(x); break;
    case P_POW: r = powf(x, y); break;
    case P_LOGBASE: r = vm_log_f32(y) / vm_log_f32(x); break;   /* logbase b x = log x / log b */
    case P_ATAN2: r = atan2f(x, y); break;
    default: return AX_ERR_BUILD;
    }
    *out = mk_f32(r);
    return 0;
}

static int eval_f64(Prim p, double x, double y, Scalar *out)
{
    double r;
    switch (p) {
    case P_ADD: r = x + y; break;
    case P_SUB: r = x - y; break;
    case P_MUL: r = x * y; break;
    case P_DIV: r = x / y; break;
    case P_MIN: r = minmax_f64(x, y, false); break;
    case P_MAX: r = minmax_f64(x, y, true); break;
    case P_NEG: r = -x; break;
    case P_ABS: r = fabs(x); break;
    case P_SIGNUM: r = isnan(x) || x == 0 ? x : copysign(1.0, x); break;
    case P_EXP: r = vm_exp_f64(x); break;
    case P_LOG: r = vm_log_f64(x); break;
    case P_SQRT: r = sqrt(x); break;
    case P_SIN: r = sin(x); break;
    case P_COS: r = cos(x); break;
    case P_TAN: r = tan(x); break;
    case P_ASIN: r = asin(x); break;
    case P_ACOS: r = acos(x); break;
    case P_ATAN: r = atan(x); break;
    case P_SINH: r = sinh(x); break;
    case P_COSH: r = cosh(x); break;
    case P_TANH: r = tanh(x); break;
    case P_ASINH: r = asinh(x); break;
    case P_ACOSH: r = acosh(x); break;
    case P_ATANH: r = atanh(x); break;
    case P_POW: r = pow(x, y); break;
    case P_LOGBASE: r = vm_log_f64(y) / vm_log_f64(x); break;
    case P_ATAN2: r = atan2(x, y); break;
    default: return AX_ERR_BUILD;
    }
    *out = mk_f64(r);
    return 0;
}

/* FLOOR/CEIL/ROUND/TRUNC: the rounding in the operand's own precision,
 * then sc_convert to the target (integers saturate, NaN gives 0). */
static Scalar eval_round(Prim p, ax_scalar s, Scalar a, ax_scalar to)
{
    Scalar r;
    if (s == AX_F32) {
        float x = a.f32;
        r = mk_f32(p == P_FLOOR ? floorf(x) : p == P_CEIL ? ceilf(x)
                   : p == P_ROUND ? rintf(x) : truncf(x));
    } else {
        double x = a.f64;
        r = mk_f64(p == P_FLOOR ? floor(x) : p == P_CEIL ? ceil(x)
                   : p == P_ROUND ? rint(x) : trunc(x));
    }
    return sc_convert(r, s, to);
}

static Scalar eval_bitcast(Scalar a, ax_scalar from, ax_scalar to)
{
    uint64_t bits = raw_bits(a, from);
    if (to == AX_F32) {
        uint32_t b = (uint32_t)bits;
        float f;
        memcpy(&f, &b, 4);
        return mk_f32(f);
    }
    if (to == AX_F64) {
        double d;
        memcpy(&d, &bits, 8);
        return mk_f64(d);
    }
    return mk_int(bits, to);
}

static bool compare(Prim p, ax_scalar s, Scalar a, Scalar b)
{
    /* lt/eq as a pair of booleans would get NaN wrong, so each comparison
     * is done directly in the operands' type. */
#define CMP(x, y) \
    switch (p) { \
    case P_EQ: return (x) == (y); case P_NE: return (x) != (y); \
    case P_LT: return (x) < (y);  case P_LE: return (x) <= (y); \
    case P_GT: return (x) > (y);  case P_GE: return (x) >= (y); \
    default: return false; }
    if (s == AX_BOOL) {
        int x = rd_bool(a), y = rd_bool(b);
        CMP(x, y)
    }
    if (s == AX_F32) { CMP(a.f32, b.f32) }
    if (s == AX_F64) { CMP(a.f64, b.f64) }
    a = mk_int(a.u, s);
    b = mk_int(b.u, s);
    if (k_sint(s)) { CMP(a.i, b.i) }
    CMP(a.u, b.u)
#undef CMP
}

static int shape_size(int r, const Scalar *sh, Scalar *out)
{
    bool zero = false;
    for (int d = 0; d < r; d++) {
        if (sh[d].i < 0) return AX_ERR_SHAPE;
        if (sh[d].i == 0) zero = true;
    }
    int64_t n = 1;
    if (zero) n = 0;
    else
        for (int d = 0; d < r; d++)
            if (__builtin_mul_overflow(n, sh[d].i, &n)) return AX_ERR_SHAPE;
    out->i = n;
    return 0;
}

int prim_eval(Prim p, const Type *const *argt, const Scalar *args, const Type *rt, Scalar *out)
{
    const Type *t0 = argt[0];
    ax_scalar s = t0->kind == TY_SCALAR ? t0->s : AX_I64;

    switch (p) {
    case P_ADD: case P_SUB: case P_MUL: case P_DIV: case P_MIN: case P_MAX:
    case P_QUOT: case P_REM: case P_IDIV: case P_MOD:
    case P_BAND: case P_BOR: case P_BXOR:
        if (s == AX_F32) return eval_f32(p, args[0].f32, args[1].f32, out);
        if (s == AX_F64) return eval_f64(p, args[0].f64, args[1].f64, out);
        return eval_int2(p, s, args[0], args[1], out);

    case P_NEG: case P_ABS: case P_SIGNUM:
    case P_BNOT: case P_POPCOUNT: case P_CLZ: case P_CTZ:
        if (s == AX_F32) return eval_f32(p, args[0].f32, 0, out);
        if (s == AX_F64) return eval_f64(p, args[0].f64, 0, out);
        return eval_int1(p, s, args[0], out);

    case P_SHL: case P_SHR: case P_ROTL: case P_ROTR:
        return eval_shift(p, s, args[0], args[1], argt[1]->s, out);

    case P_EQ: case P_NE: case P_LT: case P_LE: case P_GT: case P_GE:
        *out = mk_bool(compare(p, s, args[0], args[1]));
        return 0;

    case P_AND: *out = mk_bool(rd_bool(args[0]) && rd_bool(args[1])); return 0;
    case P_OR:  *out = mk_bool(rd_bool(args[0]) || rd_bool(args[1])); return 0;
    case P_NOT: *out = mk_bool(!rd_bool(args[0])); return 0;

    case P_EXP: case P_LOG: case P_SQRT: case P_SIN: case P_COS: case P_TAN:
    case P_ASIN: case P_ACOS: case P_ATAN: case P_SINH: case P_COSH: case P_TANH:
    case P_ASINH: case P_ACOSH: case P_ATANH:
        if (s == AX_F32) return eval_f32(p, args[0].f32, 0, out);
        return eval_f64(p, args[0].f64, 0, out);

    case P_POW: case P_LOGBASE: case P_ATAN2:
        if (s == AX_F32) return eval_f32(p, args[0].f32, args[1].f32, out);
        return eval_f64(p, args[0].f64, args[1].f64, out);

    case P_ISNAN:
        *out = mk_bool(s == AX_F32 ? isnan(args[0].f32) : isnan(args[0].f64));
        return 0;
    case P_ISINF:
        *out = mk_bool(s == AX_F32 ? isinf(args[0].f32) : isinf(args[0].f64));
        return 0;

    case P_FLOOR: case P_CEIL: case P_ROUND: case P_TRUNC:
        *out = eval_round(p, s, args[0], rt->s);
        return 0;
    case P_CVT:
        *out = sc_convert(args[0], s, rt->s);
        return 0;
    case P_BITCAST:
        *out = eval_bitcast(args[0], s, rt->s);
        return 0;

    case P_SHAPESIZE:
        return shape_size(t0->n, args, out);

    case P_RESHAPE: {
        /* sh' (the first operand) if its size is sh's: ax_reshape's check */
        Scalar n1, n0;
        int st = shape_size(t0->n, args, &n1);
        if (!st) st = shape_size(argt[1]->n, args + t0->n, &n0);
        if (!st && n1.i != n0.i) st = AX_ERR_SHAPE;
        if (st) return st;
        for (int d = 0; d < t0->n; d++) out[d] = args[d];
        return 0;
    }

    case P_TOLIN: {
        /* Row-major: ((ix0 * sh1 + ix1) * sh2 + ix2) ...; the outermost
         * extent is never needed.  Wrapping arithmetic: no UB on garbage. */
        int r = t0->n;
        const Scalar *sh = args, *ix = args + r;
        uint64_t lin = 0;
        for (int d = 0; d < r; d++) lin = lin * sh[d].u + ix[d].u;
        out->u = lin;
        return 0;
    }
    case P_FROMLIN: {
        int r = t0->n;
        const Scalar *sh = args;
        int64_t i = args[r].i;
        for (int d = 1; d < r; d++)
            if (sh[d].i <= 0) {
                for (int k = 0; k < r; k++) out[k].i = 0;
                return 0;
            }
        /* Extents here are >= 1, so neither / nor % can fault. */
        for (int d = r - 1; d >= 1; d--) {
            out[d].i = i % sh[d].i;
            i /= sh[d].i;
        }
        if (r > 0) out[0].i = i;
        return 0;
    }
    case P_NPRIM: break;
    }
    return AX_ERR_BUILD;
}
