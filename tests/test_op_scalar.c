/*
 * The scalar language, applied inside map, zip_with and generate: every
 * primitive on every scalar type (arithmetic, the division family, bits,
 * shifts and rotations by amounts of several types, comparisons, bool
 * operations, the maths functions), short-circuit and lazy conditions,
 * division by zero, NaN and infinities, rounding, the conversion matrix,
 * bit casts, conditionals, tuples (nested, projected), reads of arrays
 * (ax_at, ax_at_linear, ax_shape), index functions, the ready-made
 * functions, and the build-time folder.
 *
 * Backends (tests/ops/ops.h): the OP_TESTs on every backend, against
 * values computed in plain C here; on the interpreter also the same
 * operations on constants, folded by the front end (the same for every
 * backend), against the values computed at run time.  The DIFF_TESTs on
 * the compiling backends, against the interpreter: vector maths within a
 * tolerance, arrays read from scalar code on large shapes, and the 64-bit
 * integer <-> float conversions that the CPU backend routes through i32.
 * Longer than the other files: one case table per primitive family and
 * its plain-C model sit together, so a primitive's cases are read in one
 * place.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"
#include <limits.h>
#include <float.h>

/* =================================================== scalar operations */

enum {
    O_ADD, O_SUB, O_MUL, O_DIV, O_QUOT, O_REM, O_IDIV, O_MOD, O_MIN, O_MAX,
    O_NEG, O_ABS, O_SIGNUM,
    O_BAND, O_BOR, O_BXOR, O_BNOT, O_SHL, O_SHR, O_ROTL, O_ROTR, O_POPCOUNT, O_CLZ, O_CTZ,
    O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE,
    O_AND, O_OR, O_NOT,
    O_EXP, O_LOG, O_SQRT, O_SIN, O_COS, O_TAN, O_ASIN, O_ACOS, O_ATAN,
    O_SINH, O_COSH, O_TANH, O_ASINH, O_ACOSH, O_ATANH,
    O_POW, O_LOGBASE, O_ATAN2, O_ISNAN, O_ISINF,
    O_N
};
static const char *const op_names[O_N] = {
    "add", "sub", "mul", "div", "quot", "rem", "idiv", "mod", "min", "max",
    "neg", "abs", "signum",
    "band", "bor", "bxor", "bnot", "shl", "shr", "rotl", "rotr", "popcount", "clz", "ctz",
    "eq", "ne", "lt", "le", "gt", "ge",
    "and", "or", "not",
    "exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "pow", "logbase", "atan2", "is_nan", "is_infinite",
};

static bool op_unary(int op)
{
    switch (op) {
    case O_NEG: case O_ABS: case O_SIGNUM: case O_BNOT: case O_POPCOUNT: case O_CLZ: case O_CTZ: case O_NOT:
    case O_ISNAN: case O_ISINF:
        return true;
    default:
        return op >= O_EXP && op <= O_ATANH;
    }
}

static ax_scalar op_rtype(int op, ax_scalar s)
{
    if ((op >= O_EQ && op <= O_NOT) || op == O_ISNAN || op == O_ISINF) return AX_BOOL;
    if (op == O_POPCOUNT || op == O_CLZ || op == O_CTZ) return AX_I32;
    return s;
}

static ax_exp apply_op(int op, ax_exp a, ax_exp b)
{
    switch (op) {
    case O_ADD: return ax_add(a, b);
    case O_SUB: return ax_sub(a, b);
    case O_MUL: return ax_mul(a, b);
    case O_DIV: return ax_div(a, b);
    case O_QUOT: return ax_quot(a, b);
    case O_REM: return ax_rem(a, b);
    case O_IDIV: return ax_idiv(a, b);
    case O_MOD: return ax_mod(a, b);
    case O_MIN: return ax_min(a, b);
    case O_MAX: return ax_max(a, b);
    case O_NEG: return ax_neg(a);
    case O_ABS: return ax_abs(a);
    case O_SIGNUM: return ax_signum(a);
    case O_BAND: return ax_band(a, b);
    case O_BOR: return ax_bor(a, b);
    case O_BXOR: return ax_bxor(a, b);
    case O_BNOT: return ax_bnot(a);
    case O_SHL: return ax_shl(a, b);
    case O_SHR: return ax_shr(a, b);
    case O_ROTL: return ax_rotl(a, b);
    case O_ROTR: return ax_rotr(a, b);
    case O_POPCOUNT: return ax_popcount(a);
    case O_CLZ: return ax_clz(a);
    case O_CTZ: return ax_ctz(a);
    case O_EQ: return ax_eq(a, b);
    case O_NE: return ax_ne(a, b);
    case O_LT: return ax_lt(a, b);
    case O_LE: return ax_le(a, b);
    case O_GT: return ax_gt(a, b);
    case O_GE: return ax_ge(a, b);
    case O_AND: return ax_and(a, b);
    case O_OR: return ax_or(a, b);
    case O_NOT: return ax_not(a);
    case O_EXP: return ax_exp_(a);
    case O_LOG: return ax_log(a);
    case O_SQRT: return ax_sqrt(a);
    case O_SIN: return ax_sin(a);
    case O_COS: return ax_cos(a);
    case O_TAN: return ax_tan(a);
    case O_ASIN: return ax_asin(a);
    case O_ACOS: return ax_acos(a);
    case O_ATAN: return ax_atan(a);
    case O_SINH: return ax_sinh(a);
    case O_COSH: return ax_cosh(a);
    case O_TANH: return ax_tanh(a);
    case O_ASINH: return ax_asinh(a);
    case O_ACOSH: return ax_acosh(a);
    case O_ATANH: return ax_atanh(a);
    case O_POW: return ax_pow(a, b);
    case O_LOGBASE: return ax_logbase(a, b);
    case O_ATAN2: return ax_atan2(a, b);
    case O_ISNAN: return ax_is_nan(a);
    case O_ISINF: return ax_is_infinite(a);
    }
    return ax_bool(false);
}

/* ---- C references */

static bool amount_oor(int64_t b, ax_scalar sb, int w)
{
    if (sc_signed_(sb) && b < 0) return true;
    return (uint64_t)b >= (uint64_t)w;
}

static int64_t ref_int(int op, ax_scalar s, int64_t a, int64_t b, ax_scalar sb)
{
    int w = sc_bits_(s);
    bool sg = sc_signed_(s);
    uint64_t m = w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case O_ADD: return norm_i(s, ua + ub);
    case O_SUB: return norm_i(s, ua - ub);
    case O_MUL: return norm_i(s, ua * ub);
    case O_DIV:
    case O_QUOT:
        if (!sg) return norm_i(s, ua / ub);
        if (b == -1) return norm_i(s, 0 - ua);
        return norm_i(s, (uint64_t)(a / b));
    case O_REM:
        if (!sg) return norm_i(s, ua % ub);
        if (b == -1) return 0;
        return a % b;
    case O_IDIV: {
        if (!sg) return norm_i(s, ua / ub);
        if (b == -1) return norm_i(s, 0 - ua);
        int64_t q = a / b;
        if (a % b != 0 && ((a < 0) != (b < 0))) q--;
        return q;
    }
    case O_MOD: {
        if (!sg) return norm_i(s, ua % ub);
        if (b == -1) return 0;
        int64_t r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    case O_MIN: return (sg ? a < b : ua < ub) ? a : b;
    case O_MAX: return (sg ? a > b : ua > ub) ? a : b;
    case O_NEG: return norm_i(s, 0 - ua);
    case O_ABS: return sg && a < 0 ? norm_i(s, 0 - ua) : a;
    case O_SIGNUM: return sg ? (a > 0) - (a < 0) : ua != 0;
    case O_BAND: return norm_i(s, ua & ub);
    case O_BOR: return norm_i(s, ua | ub);
    case O_BXOR: return norm_i(s, ua ^ ub);
    case O_BNOT: return norm_i(s, ~ua);
    case O_SHL: return amount_oor(b, sb, w) ? 0 : norm_i(s, ua << ub);
    case O_SHR:
        if (amount_oor(b, sb, w)) return sg && a < 0 ? -1 : 0;
        return sg ? norm_i(s, (uint64_t)(a >> ub)) : norm_i(s, (ua & m) >> ub);
    case O_ROTL:
    case O_ROTR: {
        int r = sc_signed_(sb) ? (int)(((b % w) + w) % w) : (int)(ub % (uint64_t)w);
        if (op == O_ROTR) r = (w - r) % w;
        uint64_t x = ua & m;
        return norm_i(s, r == 0 ? x : ((x << r) | (x >> (w - r))) & m);
    }
    case O_POPCOUNT: return __builtin_popcountll(ua & m);
    case O_CLZ: return (ua & m) == 0 ? w : __builtin_clzll(ua & m) - (64 - w);
    case O_CTZ: return (ua & m) == 0 ? w : __builtin_ctzll(ua & m);
    case O_EQ: return a == b;
    case O_NE: return a != b;
    case O_LT: return sg ? a < b : ua < ub;
    case O_LE: return sg ? a <= b : ua <= ub;
    case O_GT: return sg ? a > b : ua > ub;
    case O_GE: return sg ? a >= b : ua >= ub;
    case O_AND: return a && b;
    case O_OR: return a || b;
    case O_NOT: return !a;
    }
    return 0;
}

static double ref_f64(int op, double a, double b)
{
    switch (op) {
    case O_ADD: return a + b;
    case O_SUB: return a - b;
    case O_MUL: return a * b;
    case O_DIV: return a / b;
    case O_MIN: return fmin(a, b);
    case O_MAX: return fmax(a, b);
    case O_NEG: return -a;
    case O_ABS: return fabs(a);
    case O_SIGNUM: return a > 0 ? 1.0 : a < 0 ? -1.0 : a;
    case O_EQ: return a == b;
    case O_NE: return a != b;
    case O_LT: return a < b;
    case O_LE: return a <= b;
    case O_GT: return a > b;
    case O_GE: return a >= b;
    case O_EXP: return exp(a);
    case O_LOG: return log(a);
    case O_SQRT: return sqrt(a);
    case O_SIN: return sin(a);
    case O_COS: return cos(a);
    case O_TAN: return tan(a);
    case O_ASIN: return asin(a);
    case O_ACOS: return acos(a);
    case O_ATAN: return atan(a);
    case O_SINH: return sinh(a);
    case O_COSH: return cosh(a);
    case O_TANH: return tanh(a);
    case O_ASINH: return asinh(a);
    case O_ACOSH: return acosh(a);
    case O_ATANH: return atanh(a);
    case O_POW: return pow(a, b);
    case O_LOGBASE: return log(b) / log(a);
    case O_ATAN2: return atan2(a, b);
    case O_ISNAN: return isnan(a) != 0;
    case O_ISINF: return isinf(a) != 0;
    }
    return 0;
}

static double ref_f32(int op, float a, float b)
{
    float r = 0;
    switch (op) {
    case O_ADD: r = a + b; break;
    case O_SUB: r = a - b; break;
    case O_MUL: r = a * b; break;
    case O_DIV: r = a / b; break;
    case O_MIN: r = fminf(a, b); break;
    case O_MAX: r = fmaxf(a, b); break;
    case O_NEG: r = -a; break;
    case O_ABS: r = fabsf(a); break;
    case O_SIGNUM: r = a > 0 ? 1.0f : a < 0 ? -1.0f : a; break;
    case O_EQ: return a == b;
    case O_NE: return a != b;
    case O_LT: return a < b;
    case O_LE: return a <= b;
    case O_GT: return a > b;
    case O_GE: return a >= b;
    case O_EXP: r = expf(a); break;
    case O_LOG: r = logf(a); break;
    case O_SQRT: r = sqrtf(a); break;
    case O_SIN: r = sinf(a); break;
    case O_COS: r = cosf(a); break;
    case O_TAN: r = tanf(a); break;
    case O_ASIN: r = asinf(a); break;
    case O_ACOS: r = acosf(a); break;
    case O_ATAN: r = atanf(a); break;
    case O_SINH: r = sinhf(a); break;
    case O_COSH: r = coshf(a); break;
    case O_TANH: r = tanhf(a); break;
    case O_ASINH: r = asinhf(a); break;
    case O_ACOSH: r = acoshf(a); break;
    case O_ATANH: r = atanhf(a); break;
    case O_POW: r = powf(a, b); break;
    case O_LOGBASE: r = logf(b) / logf(a); break;
    case O_ATAN2: r = atan2f(a, b); break;
    case O_ISNAN: return isnan(a) != 0;
    case O_ISINF: return isinf(a) != 0;
    }
    return r;
}

/* ---- the driver: run-time and folded */

typedef struct OpEnv {
    int op;
    ax_scalar sa, sb;
    const void *A, *B;
    const int64_t *pick;   /* folded: which operand pairs */
    int64_t n;
} OpEnv;

static ax_exp cst(ax_scalar s, const void *buf, int64_t k)
{
    if (sc_float_(s)) return ax_constf(s, ld_f(buf, s, k));
    return ax_consti(s, ld_i(buf, s, k));
}

static ax_exp op_map(ax_exp x, void *env) { return apply_op(((const OpEnv *)env)->op, x, x); }
static ax_exp op_zip(ax_exp x, ax_exp y, void *env) { return apply_op(((const OpEnv *)env)->op, x, y); }

static ax_exp op_const_at(const OpEnv *e, int64_t j)
{
    int64_t k = e->pick[j];
    ax_exp a = cst(e->sa, e->A, k);
    return apply_op(e->op, a, op_unary(e->op) ? a : cst(e->sb, e->B, k));
}

/* element j: the op applied to constants (folded when built) */
static ax_exp op_folded(ax_exp ix, void *env)
{
    const OpEnv *e = env;
    ax_exp i = ax_index_get(ix, 0);
    ax_exp r = op_const_at(e, e->n - 1);
    for (int64_t j = e->n - 2; j >= 0; j--) r = ax_cond(ax_eq(i, ax_i64(j)), op_const_at(e, j), r);
    return r;
}

/* Applies op to the n operand pairs (A[k], B[k]) inside ax_map/ax_zip_with,
 * checks against the C reference (exactly, or within rel for floats), then
 * (on the interpreter: the folder is the front end's, the same for every
 * backend) builds the same operation from constants (folded when built)
 * for up to 64 of the pairs and checks that it gives the run-time values. */
static void check_op_(const char *file, int line, const Be *be, ax_ctx *cx, int op, ax_scalar sa, const void *A,
                      ax_scalar sb, const void *B, int64_t n, double rel)
{
    ax_scalar rt = op_rtype(op, sa);
    bool unary = op_unary(op);
    Chk c;
    chk_init(&c, file, line, "%s on %s%s%s", op_names[op], ax_scalar_name(sa), unary ? "" : ", ",
             unary ? "" : ax_scalar_name(sb));
    OpEnv env = {op, sa, sb, A, B, NULL, n};
    ax_acc a = use_data(cx, sa, 1, SH(n), A);
    ax_acc p = unary ? ax_map(op_map, &env, a) : ax_zip_with(op_zip, &env, a, use_data(cx, sb, 1, SH(n), B));
    ax_array *r = op_run(cx, p, file, line);
    if (!r) return;   /* (reported by op_run; the first pass of a batch) */
    chk_true(&c, ax_array_component_type(r, 0) == rt, "result type");
    chk_true(&c, ax_array_size(r) == n, "result size");
    if (ax_array_component_type(r, 0) != rt || ax_array_size(r) != n) {
        ax_array_release(r);
        chk_done(&c);
        return;
    }
    const void *got = ax_array_data(r, 0);
    for (int64_t k = 0; k < n; k++) {
        if (sc_float_(sa)) {
            double x = ld_f(A, sa, k), y = unary ? x : ld_f(B, sb, k);
            double w = sa == AX_F32 ? ref_f32(op, (float)x, (float)y) : ref_f64(op, x, y);
            if (c.bad < 6 && !harness_close(ld_f(got, rt, k), w, rt == AX_BOOL ? 0 : rel))
                fprintf(stderr, "%s:%d: %s(%.9g, %.9g):\n", file, line, op_names[op], x, y);
            chk_f(&c, k, ld_f(got, rt, k), w, rt == AX_BOOL ? 0 : rel);
        } else {
            int64_t x = ld_i(A, sa, k), y = unary ? x : ld_i(B, sb, k);
            int64_t w = ref_int(op, sa, x, y, sb);
            if (c.bad < 6 && ld_i(got, rt, k) != w)
                fprintf(stderr, "%s:%d: %s(%lld, %lld):\n", file, line, op_names[op], (long long)x, (long long)y);
            chk_i(&c, k, ld_i(got, rt, k), w);
        }
    }
    /* the build-time folder gives what the run time gives */
    int64_t m = n < 64 ? n : 64, pick[64];
    for (int64_t j = 0; j < m; j++) pick[j] = j * n / m;
    env.pick = pick;
    env.n = m;
    if (m > 0 && be->interp) {
        ax_array *f = ax_run(cx, ax_generate(cx, ax_ix1(ax_i64(m)), op_folded, &env));
        if (!f) {
            chk_true(&c, false, "the folded program failed");
            fprintf(stderr, "  %s\n", ax_error(cx));
        } else if (ax_array_component_type(f, 0) != rt || ax_array_size(f) != m) {
            chk_true(&c, false, "folded: type or size");
        } else {
            for (int64_t j = 0; j < m; j++) {
                bool same;
                if (sc_float_(rt)) {
                    double x = ld_f(ax_array_data(f, 0), rt, j), y = ld_f(got, rt, pick[j]);
                    same = (isnan(x) && isnan(y)) || (x == y && signbit(x) == signbit(y));
                    if (!same && c.bad < 6)
                        fprintf(stderr, "%s:%d: %s: folded [%lld] %.17g, at run time %.17g\n", file, line, c.what,
                                (long long)pick[j], x, y);
                } else {
                    same = ld_i(ax_array_data(f, 0), rt, j) == ld_i(got, rt, pick[j]);
                    if (!same && c.bad < 6)
                        fprintf(stderr, "%s:%d: %s: folded [%lld] %lld, at run time %lld\n", file, line, c.what,
                                (long long)pick[j], (long long)ld_i(ax_array_data(f, 0), rt, j),
                                (long long)ld_i(got, rt, pick[j]));
                }
                if (!same) c.bad++;
            }
        }
        ax_array_release(f);
    }
    ax_array_release(r);
    chk_done(&c);
}
#define CHECK_OP(cx, op, sa, A, sb, B, n, rel) \
    check_op_(__FILE__, __LINE__, be, (cx), (op), (sa), (A), (sb), (B), (n), (rel))

/* Interesting values of an integer type (wrapped to it, deduplicated). */
static int int_vals(ax_scalar s, int64_t *v)
{
    static const int64_t base[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 181, 46341, -46341,
                                   INT64_C(3037000500), INT64_C(-1000000000007), 0x5a5a5a5a5a5a5a5a};
    int n = 0;
    int64_t cand[NELEM(base) + 4];
    for (int i = 0; i < NELEM(base); i++) cand[i] = norm_i(s, (uint64_t)base[i]);
    cand[NELEM(base)] = type_min(s);
    cand[NELEM(base) + 1] = type_max(s);
    cand[NELEM(base) + 2] = norm_i(s, (uint64_t)type_min(s) + 1);
    cand[NELEM(base) + 3] = norm_i(s, (uint64_t)type_max(s) - 1);
    for (int i = 0; i < NELEM(cand); i++) {
        bool dup = false;
        for (int j = 0; j < n; j++) dup |= v[j] == cand[i];
        if (!dup) v[n++] = cand[i];
    }
    return n;
}

static const ax_scalar int_types[] = {AX_I8, AX_U8, AX_I16, AX_U16, AX_I32, AX_U32, AX_I64, AX_U64};

OP_TEST(int_arith_bits_compare)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const int ops[] = {O_ADD, O_SUB, O_MUL, O_DIV, O_QUOT, O_REM, O_IDIV, O_MOD, O_MIN, O_MAX,
                              O_NEG, O_ABS, O_SIGNUM, O_BAND, O_BOR, O_BXOR, O_BNOT,
                              O_POPCOUNT, O_CLZ, O_CTZ, O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE};
    for (int t = 0; t < NELEM(int_types); t++) {
        ax_scalar s = int_types[t];
        int64_t v[32];
        int nv = int_vals(s, v);
        uint64_t A[1024], B[1024];
        for (int o = 0; o < NELEM(ops); o++) {
            int op = ops[o];
            bool divides = op >= O_DIV && op <= O_MOD;
            int64_t n = 0;
            for (int i = 0; i < nv; i++)
                for (int j = 0; j < nv; j++) {
                    if (divides && v[j] == 0) continue;
                    st_i(A, s, n, v[i]);
                    st_i(B, s, n, v[j]);
                    n++;
                }
            CHECK_OP(cx, op, s, A, s, B, n, 0);
        }
    }
    op_ctx_done(cx);
}

/* The division family on negative operands, by hand. */
OP_TEST(int_division_signs)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    /*                    a   b  quot rem idiv mod */
    static const int32_t t[][6] = {
        { 7,  2,  3,  1,  3,  1},
        {-7,  2, -3, -1, -4,  1},
        { 7, -2, -3,  1, -4, -1},
        {-7, -2,  3, -1,  3, -1},
        {-6,  3, -2,  0, -2,  0},
        { 0, -5,  0,  0,  0,  0},
        {-1,  5,  0, -1, -1,  4},
        {INT32_MIN, -1, INT32_MIN, 0, INT32_MIN, 0},
    };
    int32_t a[NELEM(t)], b[NELEM(t)];
    for (int i = 0; i < NELEM(t); i++) { a[i] = t[i][0]; b[i] = t[i][1]; }
    ax_acc A = use_data(cx, AX_I32, 1, SH(NELEM(t)), a), B = use_data(cx, AX_I32, 1, SH(NELEM(t)), b);
    static const int ops[5] = {O_QUOT, O_REM, O_IDIV, O_MOD, O_DIV};
    static const int col[5] = {2, 3, 4, 5, 2};
    for (int o = 0; o < 5; o++) {
        OpEnv env = {ops[o], AX_I32, AX_I32, NULL, NULL, NULL, 0};
        ax_array *r = RUN(cx, ax_zip_with(op_zip, &env, A, B));
        if (r && SHAPE_IS(r, 1, NELEM(t)))
            for (int i = 0; i < NELEM(t); i++)
                CHECKF(((int32_t *)ax_array_data(r, 0))[i] == t[i][col[o]], "%s(%d, %d) = %d, want %d", op_names[ops[o]],
                       t[i][0], t[i][1], ((int32_t *)ax_array_data(r, 0))[i], t[i][col[o]]);
        ax_array_release(r);
    }
    op_ctx_done(cx);
}

/* Shifts and rotations with amounts of several integer types. */
OP_TEST(int_shifts_rotates)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const int64_t amounts_base[] = {-1, 0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127,
                                           128, 255, 256, -8, -65, INT64_C(1) << 40, INT64_MIN, INT64_MAX};
    static const ax_scalar amount_types[] = {AX_I32, AX_U8, AX_I64, AX_U64, AX_I8, AX_U16};
    for (int t = 0; t < NELEM(int_types); t++) {
        ax_scalar s = int_types[t];
        int64_t v[32];
        int nv = int_vals(s, v);
        for (int at = 0; at < NELEM(amount_types); at++) {
            ax_scalar sb = amount_types[at];
            int64_t am[NELEM(amounts_base)];
            int na = 0;
            for (int i = 0; i < NELEM(amounts_base); i++) {
                int64_t x = norm_i(sb, (uint64_t)amounts_base[i]);
                bool dup = false;
                for (int j = 0; j < na; j++) dup |= am[j] == x;
                if (!dup) am[na++] = x;
            }
            uint64_t A[1024], B[1024];
            int64_t n = 0;
            for (int i = 0; i < nv; i++)
                for (int j = 0; j < na; j++) {
                    st_i(A, s, n, v[i]);
                    st_i(B, sb, n, am[j]);
                    n++;
                }
            for (int op = O_SHL; op <= O_ROTR; op++) CHECK_OP(cx, op, s, A, sb, B, n, 0);
        }
    }
    op_ctx_done(cx);
}

OP_TEST(bool_ops)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    uint8_t A[4] = {0, 0, 1, 1}, B[4] = {0, 1, 0, 1};
    static const int ops[] = {O_AND, O_OR, O_NOT, O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE};
    for (int o = 0; o < NELEM(ops); o++) CHECK_OP(cx, ops[o], AX_BOOL, A, AX_BOOL, B, 4, 0);
    op_ctx_done(cx);
}

/* ax_and / ax_or evaluate b only when needed; ax_cond only the branch
 * taken: the operations guarded here would fail if evaluated. */
static ax_exp guarded_and(ax_exp x, ax_exp y, void *env)
{
    return ax_and(ax_ne(y, ax_i32(0)), ax_eq(ax_rem(x, y), ax_i32(0)));
}
static ax_exp guarded_or(ax_exp x, ax_exp y, void *env)
{
    return ax_or(ax_eq(y, ax_i32(0)), ax_gt(ax_quot(x, y), ax_i32(2)));
}
static ax_exp guarded_cond(ax_exp x, ax_exp y, void *env)
{
    return ax_cond(ax_eq(y, ax_i32(0)), ax_i32(-1), ax_quot(x, y));
}
static ax_exp guarded_read(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_lt(i, ax_size(a)), ax_at(a, ix), ax_i32(-1));
}

OP_TEST(short_circuit_and_lazy_cond)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t x[6] = {6, 7, 9, 10, 0, -12}, y[6] = {3, 0, 2, 0, 5, 4};
    ax_acc X = use_data(cx, AX_I32, 1, SH(6), x), Y = use_data(cx, AX_I32, 1, SH(6), y);
    ax_array *r = RUN(cx, ax_zip_with(guarded_and, NULL, X, Y));
    if (r && SHAPE_IS(r, 1, 6))
        for (int k = 0; k < 6; k++) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[k], y[k] != 0 && x[k] % y[k] == 0);
    ax_array_release(r);
    r = RUN(cx, ax_zip_with(guarded_or, NULL, X, Y));
    if (r && SHAPE_IS(r, 1, 6))
        for (int k = 0; k < 6; k++) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[k], y[k] == 0 || x[k] / y[k] > 2);
    ax_array_release(r);
    r = RUN(cx, ax_zip_with(guarded_cond, NULL, X, Y));
    if (r && SHAPE_IS(r, 1, 6))
        for (int k = 0; k < 6; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], y[k] == 0 ? -1 : x[k] / y[k]);
    ax_array_release(r);
    r = RUN(cx, ax_generate(cx, ax_ix1(ax_i64(9)), guarded_read, &X));
    if (r && SHAPE_IS(r, 1, 9))
        for (int k = 0; k < 9; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], k < 6 ? x[k] : -1);
    ax_array_release(r);
    op_ctx_done(cx);
}

OP_TEST(int_division_by_zero)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const ax_scalar types[] = {AX_I32, AX_U8, AX_I64, AX_U64};
    for (int t = 0; t < NELEM(types); t++) {
        uint64_t a[3], b[3];
        st_i(a, types[t], 0, 5); st_i(a, types[t], 1, 6); st_i(a, types[t], 2, 7);
        st_i(b, types[t], 0, 1); st_i(b, types[t], 1, 0); st_i(b, types[t], 2, 2);
        for (int op = O_DIV; op <= O_MOD; op++) {
            OpEnv env = {op, types[t], types[t], NULL, NULL, NULL, 0};
            EXPECT_FAIL(cx, ax_zip_with(op_zip, &env, use_data(cx, types[t], 1, SH(3), a),
                                        use_data(cx, types[t], 1, SH(3), b)), AX_ERR_DIVZERO);
            /* among constants: reported when the result is used */
            EXPECT_FAIL(cx, ax_unit(cx, apply_op(op, ax_consti(types[t], 9), ax_consti(types[t], 0))), AX_ERR_DIVZERO);
        }
    }
    /* floating-point division by zero is IEEE, not an error */
    double a[3] = {1, -1, 0}, b[3] = {0, 0, 0};
    ax_array *r = RUN(cx, ax_zip_with(ax_fn_div, NULL, use_data(cx, AX_F64, 1, SH(3), a), use_data(cx, AX_F64, 1, SH(3), b)));
    if (r && SHAPE_IS(r, 1, 3)) {
        double *d = ax_array_data(r, 0);
        CHECK(isinf(d[0]) && d[0] > 0);
        CHECK(isinf(d[1]) && d[1] < 0);
        CHECK(isnan(d[2]));
    }
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ---- floating point */

static int flt_vals(ax_scalar s, double *v)
{
    int n = 0;
    v[n++] = NAN; v[n++] = -INFINITY; v[n++] = -1e30; v[n++] = -2.25; v[n++] = -1; v[n++] = -0.0; v[n++] = 0;
    v[n++] = s == AX_F32 ? 1e-40 : 1e-310; v[n++] = 0.1; v[n++] = 1; v[n++] = 1.5; v[n++] = 3; v[n++] = 1e30;
    v[n++] = INFINITY; v[n++] = s == AX_F32 ? FLT_MAX : DBL_MAX; v[n++] = s == AX_F32 ? 3e38 : 1e308;
    return n;
}

OP_TEST(float_arith_compare)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const int ops[] = {O_ADD, O_SUB, O_MUL, O_DIV, O_MIN, O_MAX, O_NEG, O_ABS, O_SIGNUM, O_SQRT,
                              O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE, O_ISNAN, O_ISINF};
    static const ax_scalar ft[] = {AX_F32, AX_F64};
    for (int t = 0; t < 2; t++) {
        double v[32];
        int nv = flt_vals(ft[t], v);
        double A[1024], B[1024];
        int64_t n = 0;
        for (int i = 0; i < nv; i++)
            for (int j = 0; j < nv; j++) { st_f(A, ft[t], n, v[i]); st_f(B, ft[t], n, v[j]); n++; }
        for (int o = 0; o < NELEM(ops); o++) CHECK_OP(cx, ops[o], ft[t], A, ft[t], B, n, 0);
    }
    op_ctx_done(cx);
}

OP_TEST(float_math)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const double X[] = {-3, -1, -0.9, -0.5, -0.25, -0.0, 0, 0.25, 0.5, 0.9, 1, 1.5, 2, 3, 10, 100, 1000,
                               NAN, INFINITY, -INFINITY};
    static const double P[] = {-2, -1, -0.5, -0.0, 0, 0.5, 1, 2, 3, 10, NAN, INFINITY, -INFINITY};
    static const ax_scalar ft[] = {AX_F32, AX_F64};
    for (int t = 0; t < 2; t++) {
        double rel = ft[t] == AX_F32 ? 1e-5 : 1e-12;
        double A[256], B[256];
        for (int i = 0; i < NELEM(X); i++) { st_f(A, ft[t], i, X[i]); st_f(B, ft[t], i, X[i]); }
        for (int op = O_EXP; op <= O_ATANH; op++) CHECK_OP(cx, op, ft[t], A, ft[t], B, NELEM(X), op == O_SQRT ? 0 : rel);
        CHECK_OP(cx, O_ISNAN, ft[t], A, ft[t], B, NELEM(X), 0);
        CHECK_OP(cx, O_ISINF, ft[t], A, ft[t], B, NELEM(X), 0);
        int64_t n = 0;
        for (int i = 0; i < NELEM(P); i++)
            for (int j = 0; j < NELEM(P); j++) { st_f(A, ft[t], n, P[i]); st_f(B, ft[t], n, P[j]); n++; }
        for (int op = O_POW; op <= O_ATAN2; op++) CHECK_OP(cx, op, ft[t], A, ft[t], B, n, rel);
    }
    op_ctx_done(cx);
}

/* NaN and infinities arising in programs, checked with isnan/isinf. */
static ax_exp nan_maker(ax_exp x, void *env)
{
    return ax_tuple4(ax_log(ax_neg(x)), ax_div(ax_f32(1), ax_sub(x, x)), ax_sqrt(ax_neg(x)),
                     ax_is_nan(ax_log(ax_neg(x))));
}

OP_TEST(nan_inf)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    float x[3] = {1.0f, 2.0f, 0.0f};
    ax_array *r = RUN(cx, ax_map(nan_maker, NULL, use_data(cx, AX_F32, 1, SH(3), x)));
    if (r && SHAPE_IS(r, 1, 3)) {
        float *l = ax_array_data(r, 0), *d = ax_array_data(r, 1), *s = ax_array_data(r, 2);
        uint8_t *b = ax_array_data(r, 3);
        CHECK(isnan(l[0]) && isnan(l[1]));
        CHECK(isinf(l[2]) && l[2] < 0);     /* log(-0) = -inf */
        CHECK(isinf(d[0]) && d[0] > 0);     /* 1/0 */
        CHECK(isnan(s[0]));
        CHECK(s[2] == 0);
        CHECK(b[0] == 1 && b[1] == 1 && b[2] == 0);
    }
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ---- rounding and conversions */

enum { R_FLOOR, R_CEIL, R_ROUND, R_TRUNC, R_CVT, R_BITCAST };
typedef struct CvtEnv { int kind; ax_scalar to; } CvtEnv;
static ax_exp cvt_fn(ax_exp x, void *env)
{
    const CvtEnv *e = env;
    switch (e->kind) {
    case R_FLOOR: return ax_floor(x, e->to);
    case R_CEIL: return ax_ceiling(x, e->to);
    case R_ROUND: return ax_round(x, e->to);
    case R_TRUNC: return ax_truncate(x, e->to);
    case R_BITCAST: return ax_bitcast(x, e->to);
    default: return ax_cvt(x, e->to);
    }
}

/* An integral double into integer type `to`, saturating; NaN gives 0. */
static int64_t sat_int(ax_scalar to, double r)
{
    if (isnan(r)) return 0;
    int w = sc_bits_(to);
    if (sc_signed_(to)) {
        double lim = ldexp(1.0, w - 1);
        if (r >= lim) return type_max(to);
        if (r < -lim) return type_min(to);
        return (int64_t)r;
    }
    if (r >= ldexp(1.0, w)) return type_max(to);
    if (r <= 0) return 0;
    return (int64_t)(uint64_t)r;
}

static double rnd_d(int kind, double x)
{
    switch (kind) {
    case R_FLOOR: return floor(x);
    case R_CEIL: return ceil(x);
    case R_ROUND: return nearbyint(x);   /* default mode: halves to even */
    default: return trunc(x);
    }
}
static float rnd_f(int kind, float x)
{
    switch (kind) {
    case R_FLOOR: return floorf(x);
    case R_CEIL: return ceilf(x);
    case R_ROUND: return nearbyintf(x);
    default: return truncf(x);
    }
}

/* The expected ax_cvt of element k of src (type from) into dst (type to). */
static void ref_cvt(ax_scalar from, ax_scalar to, const void *src, int64_t k, void *dst)
{
    if (sc_float_(from)) {
        double x = ld_f(src, from, k);
        if (to == AX_BOOL) st_i(dst, to, k, x != 0);   /* NaN is nonzero */
        else if (sc_float_(to)) st_f(dst, to, k, x);  /* st_f rounds to f32 as C does */
        else st_i(dst, to, k, sat_int(to, trunc(x)));
    } else {
        int64_t v = ld_i(src, from, k);
        bool uns = !sc_signed_(from);
        if (to == AX_BOOL) st_i(dst, to, k, v != 0);
        else if (to == AX_F32) ((float *)dst)[k] = uns ? (float)(uint64_t)v : (float)v;
        else if (to == AX_F64) ((double *)dst)[k] = uns ? (double)(uint64_t)v : (double)v;
        else st_i(dst, to, k, norm_i(to, (uint64_t)v));
    }
}

static const double round_inputs[] = {
    0, -0.0, 0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49999997, -1.7, 1.7, 254.5, 255.5, 256.5, 300.7, -300.7,
    -128.5, 127.5, -129.5, 32767.5, 65535.5, 2147483647.5, -2147483648.7, 2147483648.0, 4294967295.5, 1e10, -1e10,
    9.3e18, -9.3e18, 1.9e19, 1e20, -1e20, 1e300, NAN, INFINITY, -INFINITY, 1e-300, -1e-300,
};

OP_TEST(rounding)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const ax_scalar targets[] = {AX_I32, AX_F32, AX_I64, AX_U8, AX_I8, AX_I16, AX_U16, AX_U32, AX_U64, AX_F64};
    static const char *const kind_names[4] = {"floor", "ceiling", "round", "truncate"};
    for (int from = AX_F32; from <= AX_F64; from++) {
        int64_t n = NELEM(round_inputs);
        double in[64];
        for (int64_t k = 0; k < n; k++) st_f(in, (ax_scalar)from, k, round_inputs[k]);
        ax_acc a = use_data(cx, (ax_scalar)from, 1, SH(n), in);
        for (int kind = R_FLOOR; kind <= R_TRUNC; kind++)
            for (int t = 0; t < NELEM(targets); t++) {
                ax_scalar to = targets[t];
                uint64_t want[64];
                for (int64_t k = 0; k < n; k++) {
                    double r = from == AX_F32 ? (double)rnd_f(kind, ((float *)in)[k]) : rnd_d(kind, in[k]);
                    if (sc_float_(to)) st_f(want, to, k, r);
                    else st_i(want, to, k, sat_int(to, r));
                }
                CvtEnv env = {kind, to};
                ax_array *r = RUN(cx, ax_map(cvt_fn, &env, a));
                if (r && SHAPE_IS(r, 1, n)) {
                    Chk c;
                    CHK(&c, "%s %s -> %s", kind_names[kind], ax_scalar_name((ax_scalar)from), ax_scalar_name(to));
                    chk_true(&c, ax_array_component_type(r, 0) == to, "result type");
                    if (ax_array_component_type(r, 0) == to) chk_buf(&c, to, ax_array_data(r, 0), want, n, false);
                    /* from constants (folded by the front end: on the interpreter) */
                    for (int64_t k = 0; be->interp && k < n; k++) {
                        ax_array *f = RUN(cx, ax_unit(cx, cvt_fn(cst((ax_scalar)from, in, k), &env)));
                        if (f && ax_array_component_type(f, 0) == to) {
                            Chk c2;
                            CHK(&c2, "folded %s %s -> %s of %.17g", kind_names[kind], ax_scalar_name((ax_scalar)from),
                                ax_scalar_name(to), ld_f(in, (ax_scalar)from, k));
                            chk_buf(&c2, to, ax_array_data(f, 0), (const char *)want + k * ax_scalar_size(to), 1, false);
                            chk_done(&c2);
                        }
                        ax_array_release(f);
                    }
                    chk_done(&c);
                }
                ax_array_release(r);
            }
    }
    op_ctx_done(cx);
}

/* Rounding NaN / x: NaN to the device's compiler, which folds the
 * division (the front end keeps it), and the NaN it gives.  PoCL's
 * rounding functions convert their operand to int before they test for
 * NaN; LLVM folded that conversion of a known NaN to poison, and the
 * kernel stored nothing (random seed 1000024 with faults, via a sort:
 * a different wrong value on each run). */
typedef struct NanRndEnv { ax_ctx *cx; ax_scalar from; CvtEnv cvt; } NanRndEnv;
static ax_exp nan_rnd_fn(ax_exp x, void *env)
{
    NanRndEnv *e = env;
    return cvt_fn(ax_div(ax_const(e->cx, ax_constf(e->from, NAN)), x), &e->cvt);
}

OP_TEST(rounding_a_known_nan)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const double xs[] = {1, -2.5, 0, 3, 1e300};
    static const char *const kind_names[4] = {"floor", "ceiling", "round", "truncate"};
    for (int from = AX_F32; from <= AX_F64; from++) {
        int64_t n = NELEM(xs);
        double in[NELEM(xs)];
        for (int64_t k = 0; k < n; k++) st_f(in, (ax_scalar)from, k, xs[k]);
        ax_acc a = use_data(cx, (ax_scalar)from, 1, SH(n), in);
        for (int kind = R_FLOOR; kind <= R_TRUNC; kind++)
            for (int to = AX_F32; to <= AX_F64; to++) {
                double want[NELEM(xs)];
                for (int64_t k = 0; k < n; k++) st_f(want, (ax_scalar)to, k, NAN);
                NanRndEnv env = {cx, (ax_scalar)from, {kind, (ax_scalar)to}};
                ax_array *r = RUN(cx, ax_map(nan_rnd_fn, &env, a));
                if (r && SHAPE_IS(r, 1, n)) {
                    Chk c;
                    CHK(&c, "%s of NaN / x, %s -> %s", kind_names[kind], ax_scalar_name((ax_scalar)from),
                        ax_scalar_name((ax_scalar)to));
                    chk_buf(&c, (ax_scalar)to, ax_array_data(r, 0), want, n, false);
                    chk_done(&c);
                }
                ax_array_release(r);
            }
    }
    op_ctx_done(cx);
}

/* Every floating primitive of a NaN or an infinity that the device's
 * compiler knows: NaN / x (the front end keeps the division, the
 * device's compiler folds it to NaN), a NaN constant and 1/0, -1/0
 * (folded to infinities by the front end; the maths functions of
 * constants are not folded, so the device sees exp(inf), pow(NaN, x),
 * ...).  Binary ones with the known value as either operand or both, the
 * other from data (zeros, ones, infinities, NaN), so the cases where
 * C99's Annex F gives a number (pow(NaN, 0) = 1, pow(1, NaN) = 1,
 * atan2(inf, x), min(NaN, x) = x) are checked too.  Against the plain-C
 * reference (prim.c's meaning).  PoCL's exp (f32, f64), sinh, tanh and
 * pow of two NaNs (f32), like its rounding (rounding_a_known_nan), branch
 * on or convert their operand in ways LLVM folds to poison for a known
 * NaN: the kernel dropped its stores, its other programs' too (each
 * primitive is a case of its own: one kernel). */
enum { KN_NANDIV, KN_NAN, KN_INF, KN_NINF, KN_X, KN_N };
static const char *const kn_names[KN_N] = {"NaN / x", "NaN", "1/0", "-1/0", "x"};
typedef struct KnownEnv { ax_ctx *cx; ax_scalar s; int op, ka, kb; } KnownEnv;

static ax_exp known_val(const KnownEnv *e, int kind, ax_exp x)
{
    ax_exp nan = ax_const(e->cx, ax_constf(e->s, NAN));
    switch (kind) {
    case KN_NANDIV: return ax_div(nan, x);
    case KN_NAN: return nan;
    case KN_INF: case KN_NINF:
        return ax_div(ax_const(e->cx, ax_constf(e->s, kind == KN_INF ? 1 : -1)), ax_const(e->cx, ax_constf(e->s, 0)));
    default: return x;
    }
}

static double known_ref(int kind, double x)
{
    return kind == KN_INF ? INFINITY : kind == KN_NINF ? -INFINITY : kind == KN_X ? x : NAN;
}

static ax_exp known_fn(ax_exp x, void *env)
{
    const KnownEnv *e = env;
    return apply_op(e->op, known_val(e, e->ka, x), known_val(e, e->kb, x));
}

OP_TEST(float_ops_of_a_known_nan_or_inf)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const double xs[] = {1, -1, -2.5, 0, -0.0, 0.5, 3, 1e300, -INFINITY, NAN};
    static const int ops[] = {O_NEG, O_ABS, O_SIGNUM, O_SQRT, O_EXP, O_LOG, O_SIN, O_COS, O_TAN, O_ASIN, O_ACOS,
                              O_ATAN, O_SINH, O_COSH, O_TANH, O_ASINH, O_ACOSH, O_ATANH, O_ISNAN, O_ISINF,
                              O_ADD, O_SUB, O_MUL, O_DIV, O_MIN, O_MAX, O_EQ, O_NE, O_LT, O_LE, O_GT, O_GE,
                              O_POW, O_LOGBASE, O_ATAN2};
    for (int s = AX_F32; s <= AX_F64; s++) {
        ax_scalar sc = (ax_scalar)s;
        int64_t n = NELEM(xs);
        double in[NELEM(xs)];
        for (int64_t k = 0; k < n; k++) st_f(in, sc, k, xs[k]);
        ax_acc a = use_data(cx, sc, 1, SH(n), in);
        for (int o = 0; o < NELEM(ops); o++) {
            int op = ops[o];
            bool unary = op_unary(op);
            ax_scalar rt = op_rtype(op, sc);
            double rel = rt == AX_BOOL ? 0 : sc == AX_F32 ? 1e-5 : 1e-12;
            /* the known value first, second or both (unary: first) */
            for (int ka = 0; ka < KN_N; ka++)
                for (int kb = 0; kb < KN_N; kb++) {
                    if (unary ? kb != KN_X || ka == KN_X : ka == KN_X && kb == KN_X) continue;
                    KnownEnv env = {cx, sc, op, ka, kb};
                    ax_array *r = RUN(cx, ax_map(known_fn, &env, a));
                    if (!r || !SHAPE_IS(r, 1, n)) {
                        ax_array_release(r);
                        continue;
                    }
                    Chk c;
                    if (unary) CHK(&c, "%s(%s) on %s", op_names[op], kn_names[ka], ax_scalar_name(sc));
                    else CHK(&c, "%s(%s, %s) on %s", op_names[op], kn_names[ka], kn_names[kb], ax_scalar_name(sc));
                    chk_true(&c, ax_array_component_type(r, 0) == rt, "result type");
                    if (ax_array_component_type(r, 0) == rt)
                        for (int64_t k = 0; k < n; k++) {
                            double x = ld_f(in, sc, k), u = known_ref(ka, x), v = known_ref(kb, x);
                            double w = sc == AX_F32 ? ref_f32(op, (float)u, (float)v) : ref_f64(op, u, v);
                            chk_f(&c, k, ld_f(ax_array_data(r, 0), rt, k), w, rel);
                        }
                    chk_done(&c);
                    ax_array_release(r);
                }
        }
    }
    op_ctx_done(cx);
}

/* Values of each type for the conversion matrix. */
static int cvt_vals(ax_scalar s, void *buf)
{
    if (s == AX_F32 || s == AX_F64) {
        static const double f[] = {0, -0.0, 1.5, -1.5, -0.5, 0.99, 127.9, 128.5, 255.9, 256.5, -128.9, -129.5,
                                   32767.9, 65535.9, 65536.5, 1e10, -1e10, 3e38, -3e38, 16777216, 16777217,
                                   2147483520.0, 4294967040.0, 9.2e18, -9.2e18, 1.8e19, 2.5e19, 1e300, 1e-300,
                                   NAN, INFINITY, -INFINITY};
        for (int i = 0; i < NELEM(f); i++) st_f(buf, s, i, f[i]);
        return (int)NELEM(f);
    }
    if (s == AX_BOOL) {
        st_i(buf, s, 0, 0);
        st_i(buf, s, 1, 1);
        return 2;
    }
    static const int64_t b[] = {0, 1, -1, 127, -128, 128, 255, 256, 300, -300, 32767, -32768, 65535, 65536,
                                70000, -70000, 16777217, INT32_MAX, INT32_MIN, INT64_C(4294967295),
                                INT64_C(1) << 40, -(INT64_C(1) << 40) - 5, INT64_C(9007199254740993),
                                INT64_MAX, INT64_MIN};
    int64_t v[NELEM(b)];
    int n = 0;
    for (int i = 0; i < NELEM(b); i++) {
        int64_t x = norm_i(s, (uint64_t)b[i]);
        bool dup = false;
        for (int j = 0; j < n; j++) dup |= v[j] == x;
        if (!dup) { v[n] = x; st_i(buf, s, n, x); n++; }
    }
    return n;
}

OP_TEST(cvt_matrix)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int from = 0; from < AX_NSCALAR; from++) {
        uint64_t in[64];
        int64_t n = cvt_vals((ax_scalar)from, in);
        ax_acc a = use_data(cx, (ax_scalar)from, 1, SH(n), in);
        for (int to = 0; to < AX_NSCALAR; to++) {
            uint64_t want[64];
            for (int64_t k = 0; k < n; k++) ref_cvt((ax_scalar)from, (ax_scalar)to, in, k, want);
            CvtEnv env = {R_CVT, (ax_scalar)to};
            ax_array *r = RUN(cx, ax_map(cvt_fn, &env, a));
            Chk c;
            CHK(&c, "cvt %s -> %s", ax_scalar_name((ax_scalar)from), ax_scalar_name((ax_scalar)to));
            if (r && SHAPE_IS(r, 1, n)) {
                chk_true(&c, ax_array_component_type(r, 0) == (ax_scalar)to, "result type");
                if (ax_array_component_type(r, 0) == (ax_scalar)to)
                    chk_buf(&c, (ax_scalar)to, ax_array_data(r, 0), want, n, false);
            }
            ax_array_release(r);
            /* folded: ax_cvt of constants, and ax_consti / ax_constf (the
             * front end's folder: on the interpreter) */
            for (int64_t k = 0; be->interp && k < n; k++) {
                ax_exp e = cvt_fn(cst((ax_scalar)from, in, k), &env);
                ax_exp e2 = sc_float_((ax_scalar)from) ? ax_constf((ax_scalar)to, ld_f(in, (ax_scalar)from, k))
                                                       : from != AX_U64
                                                             ? ax_consti((ax_scalar)to, ld_i(in, (ax_scalar)from, k))
                                                             : e;
                ax_array *f = RUN(cx, ax_unit(cx, ax_tuple2(e, e2)));
                if (f && ax_array_component_type(f, 0) == (ax_scalar)to) {
                    const void *w = (const char *)want + k * ax_scalar_size((ax_scalar)to);
                    chk_buf(&c, (ax_scalar)to, ax_array_data(f, 0), w, 1, false);
                    chk_buf(&c, (ax_scalar)to, ax_array_data(f, 1), w, 1, false);
                } else {
                    chk_true(&c, false, "folded conversion");
                }
                ax_array_release(f);
            }
            chk_done(&c);
        }
    }
    op_ctx_done(cx);
}

OP_TEST(bitcast)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const ax_scalar pairs[][2] = {
        {AX_F32, AX_I32}, {AX_F32, AX_U32}, {AX_I32, AX_F32}, {AX_U32, AX_F32}, {AX_F64, AX_I64}, {AX_F64, AX_U64},
        {AX_I64, AX_F64}, {AX_U64, AX_F64}, {AX_I8, AX_U8}, {AX_U8, AX_I8}, {AX_I16, AX_U16}, {AX_U16, AX_I16},
        {AX_I32, AX_U32}, {AX_U32, AX_I32}, {AX_I64, AX_U64}, {AX_U64, AX_I64}, {AX_F32, AX_F32},
    };
    for (int p = 0; p < NELEM(pairs); p++) {
        ax_scalar from = pairs[p][0], to = pairs[p][1];
        size_t sz = ax_scalar_size(from);
        uint64_t in[9];
        if (sc_float_(from)) {
            fill_tricky(from, in);
        } else {
            /* bit patterns of 1.0f, a quiet NaN with payload, -inf, -0.0f, 1.0, ... */
            static const uint64_t bits[9] = {0, 1, 0x3f800000u, 0x7fc12345u, 0xff800000u, 0x80000000u,
                                             UINT64_C(0x3ff0000000000000), UINT64_C(0xfff8000000000001),
                                             UINT64_C(0x8000000000000000)};
            for (int k = 0; k < 9; k++) st_i(in, from, k, (int64_t)bits[k]);
        }
        CvtEnv env = {R_BITCAST, to};
        ax_array *r = RUN(cx, ax_map(cvt_fn, &env, use_data(cx, from, 1, SH(9), in)));
        if (r && SHAPE_IS(r, 1, 9)) {
            CHECKF(ax_array_component_type(r, 0) == to, "bitcast %s -> %s: type", ax_scalar_name(from), ax_scalar_name(to));
            CHECKF(memcmp(ax_array_data(r, 0), in, 9 * sz) == 0, "bitcast %s -> %s keeps the bits", ax_scalar_name(from),
                   ax_scalar_name(to));
        }
        ax_array_release(r);
        /* there and back again, and from constants (folded by the front
         * end: on the interpreter) */
        CvtEnv back = {R_BITCAST, from};
        for (int k = 0; be->interp && k < 9; k++) {
            ax_exp c = cst(from, in, k);
            ax_array *f = RUN(cx, ax_unit(cx, cvt_fn(c, &env)));
            if (f && ax_array_component_type(f, 0) == to && !(sc_float_(from) && isnan(ld_f(in, from, k))))
                CHECKF(memcmp(ax_array_data(f, 0), (const char *)in + k * sz, sz) == 0, "folded bitcast %s -> %s [%d]",
                       ax_scalar_name(from), ax_scalar_name(to), k);
            ax_array_release(f);
        }
        r = RUN(cx, ax_map(cvt_fn, &back, ax_map(cvt_fn, &env, use_data(cx, from, 1, SH(9), in))));
        if (r && SHAPE_IS(r, 1, 9)) CHECK(memcmp(ax_array_data(r, 0), in, 9 * sz) == 0);
        ax_array_release(r);
    }
    op_ctx_done(cx);
}

/* ---- conditionals, tuples, loops */

static ax_exp cond_fn(ax_exp x, void *env)
{
    ax_exp a = ax_cond(ax_gt(x, ax_i32(0)), ax_mul(x, ax_i32(2)), ax_neg(x));
    ax_exp b = ax_cond(ax_gt(x, ax_i32(10)), ax_i8(1), ax_cond(ax_lt(x, ax_i32(-10)), ax_i8(-1), ax_i8(0)));
    ax_exp t = ax_cond(ax_ge(x, ax_i32(0)), ax_tuple2(x, ax_f64(1)), ax_tuple2(ax_neg(x), ax_f64(-1)));
    return ax_tuple4(a, b, ax_get(t, 0), ax_get(t, 1));
}

static ax_exp nest_gen(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    ax_exp inner = ax_tuple2(ax_cvt(i, AX_I32), ax_div(ax_cvt(i, AX_F64), ax_f64(2)));
    return ax_tuple2(inner, ax_eq(ax_rem(i, ax_i64(2)), ax_i64(1)));
}
static ax_exp nest_proj(ax_exp p, void *env)
{
    ax_exp inner = ax_get(p, 0);
    return ax_tuple3(ax_get(inner, 1), ax_not(ax_get(p, 1)), ax_mul(ax_get(inner, 0), ax_i32(3)));
}
static ax_exp five_tuple(ax_exp x, void *env)
{
    ax_exp c[5] = {x, ax_add(x, ax_i16(1)), ax_cvt(x, AX_F32), ax_gt(x, ax_i16(0)), ax_cvt(x, AX_U64)};
    return ax_get(ax_tuple(5, c), *(const int *)env);
}

OP_TEST(cond_and_tuples)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t x[9] = {-20, -10, -1, 0, 1, 5, 10, 11, INT32_MIN};
    ax_array *r = RUN(cx, ax_map(cond_fn, NULL, use_data(cx, AX_I32, 1, SH(9), x)));
    if (r && SHAPE_IS(r, 1, 9)) {
        CHECK_EQ_I(ax_array_components(r), 4);
        for (int k = 0; k < 9; k++) {
            int64_t v = x[k];
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], v > 0 ? (int32_t)(2 * v) : norm_i(AX_I32, (uint64_t)-v));
            CHECK_EQ_I(((int8_t *)ax_array_data(r, 1))[k], v > 10 ? 1 : v < -10 ? -1 : 0);
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 2))[k], v >= 0 ? v : norm_i(AX_I32, (uint64_t)-v));
            CHECK(((double *)ax_array_data(r, 3))[k] == (v >= 0 ? 1.0 : -1.0));
        }
    }
    ax_array_release(r);
    /* nested tuple elements: three buffers */
    ax_acc g = ax_generate(cx, ax_ix1(ax_i64(7)), nest_gen, NULL);
    const ax_type *inner = TUP(cx, AX_I32, AX_F64);
    const ax_type *outer = ax_type_tuple(cx, 2, (const ax_type *[]){inner, ax_type_scalar(AX_BOOL)});
    CHECK(ax_type_equal(ax_acc_elem(g), outer));
    r = RUN(cx, g);
    if (r && SHAPE_IS(r, 1, 7)) {
        CHECK_EQ_I(ax_array_components(r), 3);
        for (int k = 0; k < 7; k++) {
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], k);
            CHECK(((double *)ax_array_data(r, 1))[k] == k / 2.0);
            CHECK_EQ_I(((uint8_t *)ax_array_data(r, 2))[k], k % 2);
        }
    }
    ax_array_release(r);
    r = RUN(cx, ax_map(nest_proj, NULL, g));
    if (r && SHAPE_IS(r, 1, 7)) {
        for (int k = 0; k < 7; k++) {
            CHECK(((double *)ax_array_data(r, 0))[k] == k / 2.0);
            CHECK_EQ_I(((uint8_t *)ax_array_data(r, 1))[k], k % 2 == 0);
            CHECK_EQ_I(((int32_t *)ax_array_data(r, 2))[k], 3 * k);
        }
    }
    ax_array_release(r);
    /* a five-tuple projected in every position */
    int16_t y[4] = {-2, 0, 3, 32767};
    ax_acc Y = use_data(cx, AX_I16, 1, SH(4), y);
    for (int i = 0; i < 5; i++) {
        r = RUN(cx, ax_map(five_tuple, &i, Y));
        if (r && SHAPE_IS(r, 1, 4))
            for (int k = 0; k < 4; k++) {
                const void *d = ax_array_data(r, 0);
                switch (i) {
                case 0: CHECK_EQ_I(((int16_t *)d)[k], y[k]); break;
                case 1: CHECK_EQ_I(((int16_t *)d)[k], (int16_t)(y[k] + 1)); break;
                case 2: CHECK(((float *)d)[k] == (float)y[k]); break;
                case 3: CHECK_EQ_I(((uint8_t *)d)[k], y[k] > 0); break;
                case 4: CHECK(((uint64_t *)d)[k] == (uint64_t)(int64_t)y[k]); break;
                }
            }
        ax_array_release(r);
    }
    /* constant tuples: projection folds; a nested one needs ax_const */
    ax_exp ct = ax_tuple3(ax_i8(1), ax_f32(2.5f), ax_u64(UINT64_MAX));
    r = RUN(cx, ax_unit(cx, ax_tuple2(ax_get(ct, 2), ax_get(ct, 1))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK(((uint64_t *)ax_array_data(r, 0))[0] == UINT64_MAX);
        CHECK(((float *)ax_array_data(r, 1))[0] == 2.5f);
    }
    ax_array_release(r);
    r = RUN(cx, ax_unit(cx, ax_tuple2(ax_const(cx, ax_tuple2(ax_i32(1), ax_i32(2))), ax_i32(3))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(ax_array_components(r), 3);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[0], 1);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 1))[0], 2);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 2))[0], 3);
    }
    ax_array_release(r);
    /* constant conditions fold to the branch */
    r = RUN(cx, ax_unit(cx, ax_cond(ax_lt(ax_i32(1), ax_i32(2)), ax_f64(10), ax_f64(20))));
    if (r && SHAPE_IS(r, 0, 0)) CHECK(((double *)ax_array_data(r, 0))[0] == 10);
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ---- reading arrays from scalar code */

static ax_exp rev_read(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    return ax_at(a, ax_ix1(ax_sub(ax_sub(ax_size(a), ax_i64(1)), ax_index_get(ix, 0))));
}
/* result[i][j] = a[j][i] through the linear position */
static ax_exp transpose_lin(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp cols = ax_index_get(ax_shape(a), 1);
    return ax_at_linear(a, ax_add(ax_mul(ax_index_get(ix, 1), cols), ax_index_get(ix, 0)));
}
static ax_exp shape_info(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp sh = ax_shape(a);
    return ax_tuple4(ax_index_get(sh, 0), ax_get(sh, 1), ax_index_get(sh, 2), ax_size(a));
}
static ax_exp read_ix_env(ax_exp ix, void *env) { return ax_at(acc_of(env), ax_ix1(ax_i64(7))); }
static ax_exp read_lin_env(ax_exp ix, void *env) { return ax_at_linear(acc_of(env), ax_i32(-1)); }

OP_TEST(array_reads)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    static const int64_t ns[] = {0, 1, 7, 1001};
    for (int t = 0; t < NELEM(ns); t++) {
        op_case();
        int64_t n = ns[t];
        double *a = alloc_f64(n), *want = alloc_f64(n);
        for (int64_t k = 0; k < n; k++) a[k] = (double)val_of(k) / 4;
        for (int64_t k = 0; k < n; k++) want[k] = a[n - 1 - k];
        ax_acc x = use_data(cx, AX_F64, 1, SH(n), a);
        /* also through a computed (not host) array */
        ax_acc y = ax_map(ax_fn_neg, NULL, x);
        ax_acc srcs[2] = {x, y};
        for (int s = 0; s < 2; s++) {
            ax_array *r = RUN(cx, ax_generate(cx, ax_shape(x), rev_read, &srcs[s]));
            if (r && SHAPE_IS(r, 1, n)) {
                Chk c;
                CHK(&c, "reversed read, n=%lld, source %d", (long long)n, s);
                for (int64_t k = 0; k < n; k++) chk_f(&c, k, ((double *)ax_array_data(r, 0))[k], s ? -want[k] : want[k], 0);
                chk_done(&c);
            }
            ax_array_release(r);
        }
        free(a);
        free(want);
    }
    int32_t m[15];
    for (int k = 0; k < 15; k++) m[k] = k * k - 7;
    ax_acc M = use_data(cx, AX_I32, 2, SH(3, 5), m);
    ax_array *r = RUN(cx, ax_generate(cx, ax_ix2(ax_i64(5), ax_i64(3)), transpose_lin, &M));
    if (r && SHAPE_IS(r, 2, 5, 3))
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 3; j++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[i * 3 + j], m[j * 5 + i]);
    ax_array_release(r);
    uint8_t z[24] = {0};
    ax_acc T = use_data(cx, AX_U8, 3, SH(2, 3, 4), z);
    r = RUN(cx, ax_unit(cx, shape_info(ax_index(0, NULL), &T)));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 0))[0], 2);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 1))[0], 3);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 2))[0], 4);
        CHECK_EQ_I(((int64_t *)ax_array_data(r, 3))[0], 24);
    }
    ax_array_release(r);
    /* out of bounds: run-time index errors */
    int64_t v[7] = {1, 2, 3, 4, 5, 6, 7};
    ax_acc V = use_data(cx, AX_I64, 1, SH(7), v);
    EXPECT_FAIL(cx, ax_generate(cx, ax_ix1(ax_i64(3)), read_ix_env, &V), AX_ERR_INDEX);
    EXPECT_FAIL(cx, ax_generate(cx, ax_ix1(ax_i64(3)), read_lin_env, &V), AX_ERR_INDEX);
    EXPECT_FAIL(cx, ax_unit(cx, ax_at(M, ax_ix2(ax_i64(1), ax_i64(5)))), AX_ERR_INDEX);
    op_ctx_done(cx);
}

/* ---- index and shape arithmetic */

static ax_exp index_fns(ax_exp ix, void *env)
{
    ax_acc a = acc_of(env);
    ax_exp sh = ax_shape(a), csh = ax_ix3(ax_i64(2), ax_i64(3), ax_i64(4));
    ax_exp lin = ax_to_linear(sh, ix), lin2 = ax_to_linear(csh, ix);
    ax_exp back = ax_from_linear(csh, ax_cvt(lin, AX_I32));   /* any integer type */
    ax_exp c[8] = {lin, lin2, ax_get(back, 0), ax_index_get(back, 1), ax_get(back, 2), ax_shape_size(sh),
                   ax_shape_size(csh), ax_index_get(ax_index(2, (ax_exp[]){ax_i32(9), ax_cvt(ax_get(ix, 2), AX_U8)}), 1)};
    return ax_tuple(8, c);
}

OP_TEST(index_functions)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    uint8_t z[24] = {0};
    ax_acc T = use_data(cx, AX_U8, 3, SH(2, 3, 4), z);
    ax_array *r = RUN(cx, ax_generate(cx, ax_shape(T), index_fns, &T));
    if (r && SHAPE_IS(r, 3, 2, 3, 4)) {
        CHECK_EQ_I(ax_array_components(r), 8);
        Chk c;
        CHK(&c, "index functions");
        for (int64_t k = 0; k < 24; k++) {
            int64_t ix[3];
            unravel(k, 3, SH(2, 3, 4), ix);
            int64_t want[8] = {k, k, ix[0], ix[1], ix[2], 24, 24, ix[2]};
            for (int i = 0; i < 8; i++) chk_i(&c, k * 8 + i, ld_i(ax_array_data(r, i), ax_array_component_type(r, i), k), want[i]);
        }
        chk_done(&c);
    }
    ax_array_release(r);
    /* the same from constants */
    ax_exp sh = ax_ix3(ax_i64(2), ax_i64(3), ax_i64(4));
    ax_exp back = ax_from_linear(sh, ax_i64(17));
    ax_exp c[7] = {ax_to_linear(sh, ax_ix3(ax_i64(1), ax_i64(1), ax_i64(1))), ax_shape_size(sh),
                   ax_get(back, 0), ax_get(back, 1), ax_get(back, 2), ax_shape_size(ax_index(0, NULL)),
                   ax_to_linear(ax_index(0, NULL), ax_index(0, NULL))};
    r = RUN(cx, ax_unit(cx, ax_tuple(7, c)));
    if (r && SHAPE_IS(r, 0, 0)) {
        int64_t want[7] = {1 * 12 + 1 * 4 + 1, 24, 17 / 12, (17 % 12) / 4, 17 % 4, 1, 0};
        for (int i = 0; i < 7; i++) CHECK_EQ_I(((int64_t *)ax_array_data(r, i))[0], want[i]);
    }
    ax_array_release(r);
    /* rank 0 index as a generate shape: a single element */
    ax_acc u = ax_unit(cx, ax_i16(-3));
    r = RUN(cx, ax_generate(cx, ax_index(0, NULL), read_at, &u));
    if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((int16_t *)ax_array_data(r, 0))[0], -3);
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ---- the build-time folder against the same expression at run time */

static ax_exp compound_i(ax_exp x, ax_exp y)
{
    return ax_bxor(ax_shr(ax_add(ax_mul(x, ax_i32(3)), y), ax_i32(1)),
                   ax_sub(ax_mod(x, ax_i32(7)), ax_idiv(y, ax_i32(-3))));
}
static ax_exp compound_f(ax_exp x, ax_exp y)
{
    return ax_div(ax_sqrt(ax_add(ax_mul(x, x), ax_mul(y, y))), ax_add(ax_f64(1), ax_exp_(ax_neg(x))));
}
static ax_exp compound_zip(ax_exp x, ax_exp y, void *env)
{
    return *(const int *)env ? compound_f(x, y) : compound_i(x, y);
}
static int32_t compound_i_ref(int32_t x, int32_t y)
{
    int32_t m = x % 7;
    if (m < 0) m += 7;
    int32_t q = y / -3;
    if (y % -3 != 0 && ((y < 0) != (-3 < 0))) q--;
    int64_t s = (int64_t)norm_i(AX_I32, (uint64_t)((int64_t)x * 3 + y));
    return (int32_t)((s >> 1) ^ (m - q));
}

OP_TEST(constant_folding)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t xi[6] = {5, -5, 100, -1000, 0, 2000000000};
    int32_t yi[6] = {7, 7, -9, 13, -1, 2000000000};
    double xf[6] = {0, 1, -2, 3.5, 700, -1e-3};
    double yf[6] = {1, -1, 2, 0, 1e10, 0.25};
    for (int f = 0; f < 2; f++) {
        ax_scalar s = f ? AX_F64 : AX_I32;
        const void *X = f ? (const void *)xf : (const void *)xi, *Y = f ? (const void *)yf : (const void *)yi;
        ax_array *rt = RUN(cx, ax_zip_with(compound_zip, &f, use_data(cx, s, 1, SH(6), X), use_data(cx, s, 1, SH(6), Y)));
        for (int k = 0; k < 6; k++) {
            ax_exp e = f ? compound_f(ax_f64(xf[k]), ax_f64(yf[k])) : compound_i(ax_i32(xi[k]), ax_i32(yi[k]));
            CHECK(ax_exp_ok(e) && ax_exp_ctx(e) == NULL);   /* a constant: folded when built */
            ax_array *c = RUN(cx, ax_unit(cx, e));
            if (c && rt) {
                if (f) {
                    double want = sqrt(xf[k] * xf[k] + yf[k] * yf[k]) / (1 + exp(-xf[k]));
                    CHECK_CLOSE(((double *)ax_array_data(rt, 0))[k], want, 1e-14);
                    /* bit for bit where the run time's exp is the folder's
                     * (the compiling backends' vector maths are within
                     * tolerances of their own, tests/test_mathfns.c) */
                    if (be->interp) CHECK(memcmp(ax_array_data(c, 0), (double *)ax_array_data(rt, 0) + k, 8) == 0);
                } else {
                    CHECK_EQ_I(((int32_t *)ax_array_data(rt, 0))[k], compound_i_ref(xi[k], yi[k]));
                    CHECK_EQ_I(((int32_t *)ax_array_data(c, 0))[0], ((int32_t *)ax_array_data(rt, 0))[k]);
                }
            }
            ax_array_release(c);
        }
        ax_array_release(rt);
    }
    /* constants made with ax_consti / ax_constf convert as ax_cvt does */
    ax_exp cs[6] = {ax_consti(AX_U8, 300), ax_constf(AX_I32, 1e10), ax_constf(AX_I8, NAN), ax_consti(AX_F32, 16777217),
                    ax_constf(AX_U16, -5.5), ax_consti(AX_I16, 70000)};
    ax_array *r = RUN(cx, ax_unit(cx, ax_tuple(6, cs)));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[0], 44);
        CHECK_EQ_I(((int32_t *)ax_array_data(r, 1))[0], INT32_MAX);
        CHECK_EQ_I(((int8_t *)ax_array_data(r, 2))[0], 0);
        CHECK(((float *)ax_array_data(r, 3))[0] == 16777216.0f);
        CHECK_EQ_I(((uint16_t *)ax_array_data(r, 4))[0], 0);
        CHECK_EQ_I(((int16_t *)ax_array_data(r, 5))[0], (int16_t)(70000 - 65536));
    }
    ax_array_release(r);
    /* a constant kept as a term with ax_const computes the same */
    r = RUN(cx, ax_unit(cx, ax_tuple2(ax_add(ax_const(cx, ax_i8(100)), ax_i8(100)), ax_add(ax_i8(100), ax_i8(100)))));
    if (r && SHAPE_IS(r, 0, 0)) {
        CHECK_EQ_I(((int8_t *)ax_array_data(r, 0))[0], -56);
        CHECK_EQ_I(((int8_t *)ax_array_data(r, 1))[0], -56);
    }
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ---- the ready-made functions, each where a function is expected */

OP_TEST(ready_made_functions)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    uint32_t u[7] = {0xf0f0f0f0u, 0x0ff00ff0u, 0xffffffffu, 0x12345678u, 0x80000001u, 3u, 0xfffffff7u};
    int32_t x[7] = {5, -3, 0, 7, -100, 2, 9}, y[7] = {2, 4, -1, 7, 3, -5, 1};
    uint8_t b[7] = {1, 1, 0, 1, 1, 1, 1}, ones[3] = {1, 1, 1};
    ax_acc U = use_data(cx, AX_U32, 1, SH(7), u), X = use_data(cx, AX_I32, 1, SH(7), x),
           Y = use_data(cx, AX_I32, 1, SH(7), y), B = use_data(cx, AX_BOOL, 1, SH(7), b),
           O = use_data(cx, AX_BOOL, 1, SH(3), ones);
    uint32_t band = 0xffffffffu, bor = 0, bxor = 0, prod = 1;
    for (int k = 0; k < 7; k++) { band &= u[k]; bor |= u[k]; bxor ^= u[k]; prod *= u[k]; }
    struct { ax_fn2 f; ax_exp z; uint32_t want; } folds[4] = {
        {ax_fn_band, ax_u32(0xffffffffu), band}, {ax_fn_bor, ax_u32(0), bor},
        {ax_fn_bxor, ax_u32(0), bxor}, {ax_fn_mul, ax_u32(1), prod},
    };
    for (int i = 0; i < 4; i++) {
        ax_array *r = RUN(cx, ax_fold(folds[i].f, NULL, folds[i].z, U));
        if (r && SHAPE_IS(r, 0, 0)) CHECKF(((uint32_t *)ax_array_data(r, 0))[0] == folds[i].want, "fold %d", i);
        ax_array_release(r);
    }
    /* all / any */
    ax_acc bools[2] = {B, O};
    for (int i = 0; i < 2; i++) {
        ax_array *r = RUN(cx, ax_fold(ax_fn_and, NULL, ax_bool(true), bools[i]));
        if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[0], i == 1);
        ax_array_release(r);
        r = RUN(cx, ax_fold(ax_fn_or, NULL, ax_bool(false), ax_map(ax_fn_not, NULL, bools[i])));
        if (r && SHAPE_IS(r, 0, 0)) CHECK_EQ_I(((uint8_t *)ax_array_data(r, 0))[0], i == 0);
        ax_array_release(r);
    }
    ax_fn2 zips[5] = {ax_fn_sub, ax_fn_min, ax_fn_max, ax_fn_fst, ax_fn_snd};
    for (int i = 0; i < 5; i++) {
        ax_array *r = RUN(cx, ax_zip_with(zips[i], NULL, X, Y));
        if (r && SHAPE_IS(r, 1, 7))
            for (int k = 0; k < 7; k++) {
                int32_t w = i == 0 ? x[k] - y[k] : i == 1 ? (x[k] < y[k] ? x[k] : y[k])
                          : i == 2 ? (x[k] > y[k] ? x[k] : y[k]) : i == 3 ? x[k] : y[k];
                CHECKF(((int32_t *)ax_array_data(r, 0))[k] == w, "zip %d [%d]", i, k);
            }
        ax_array_release(r);
    }
    ax_fn2 cmps[6] = {ax_fn_lt, ax_fn_le, ax_fn_gt, ax_fn_ge, ax_fn_eq, ax_fn_ne};
    for (int i = 0; i < 6; i++) {
        ax_array *r = RUN(cx, ax_zip_with(cmps[i], NULL, X, Y));
        if (r && SHAPE_IS(r, 1, 7))
            for (int k = 0; k < 7; k++) {
                bool w = i == 0 ? x[k] < y[k] : i == 1 ? x[k] <= y[k] : i == 2 ? x[k] > y[k]
                       : i == 3 ? x[k] >= y[k] : i == 4 ? x[k] == y[k] : x[k] != y[k];
                CHECKF(((uint8_t *)ax_array_data(r, 0))[k] == w, "comparison %d [%d]", i, k);
            }
        ax_array_release(r);
    }
    double p[3] = {1, -3, 0.5}, q[3] = {4, 2, -0.25};
    ax_array *r = RUN(cx, ax_zip_with(ax_fn_div, NULL, use_data(cx, AX_F64, 1, SH(3), p), use_data(cx, AX_F64, 1, SH(3), q)));
    if (r && SHAPE_IS(r, 1, 3)) for (int k = 0; k < 3; k++) CHECK(((double *)ax_array_data(r, 0))[k] == p[k] / q[k]);
    ax_array_release(r);
    r = RUN(cx, ax_map(ax_fn_abs, NULL, X));
    if (r && SHAPE_IS(r, 1, 7)) for (int k = 0; k < 7; k++) CHECK_EQ_I(((int32_t *)ax_array_data(r, 0))[k], abs(x[k]));
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

static ax_exp f_poly(ax_exp x, void *env) { return ax_add(ax_mul(x, x), ax_mul(ax_f32(3), x)); }
static ax_exp f_transc(ax_exp x, void *env)
{
    ax_exp ax = ax_abs(x);
    /* terms of one sign (no cancellation): a relative tolerance fits */
    return ax_add(ax_exp_(ax_mul(x, ax_f32(0.01f))), ax_add(ax_log(ax_add(ax, ax_f32(1))), ax_add(ax_sin(x), ax_f32(2))));
}
static ax_exp f_transc64(ax_exp x, void *env)
{
    ax_exp ax = ax_abs(x);
    return ax_add(ax_pow(ax_add(ax, ax_f64(1)), ax_f64(0.5)),
                  ax_add(ax_atan2(ax, ax_f64(2)), ax_add(ax_tanh(ax), ax_add(ax_cos(x), ax_f64(1)))));
}

static ax_acc b_transc(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    if (v->which) return ax_map(f_transc64, NULL, input(cx, AX_F64, v->rank, v->sh, 11, 20));
    return ax_map(f_transc, NULL, input(cx, AX_F32, v->rank, v->sh, 12, 20));
}

DIFF_TEST(vector_maths_within_tolerance)
{
    for (int w = 0; w < 2; w++) {
        Env e = {1, SH(100003), w};
        SAME("exp/log/sin (vector maths)", b_transc, &e, w ? 1e-12 : 1e-5);
    }
}

/* Scalar code reading arrays (ax_at, ax_at_linear, ax_shape): free array
 * variables in the kernels' argument tables. */
static ax_exp g_at(ax_exp ix, void *env)
{
    ax_acc a = env;
    ax_exp n = ax_size(a), i = ax_index_get(ix, 0);
    ax_exp j = ax_sub(ax_sub(n, ax_i64(1)), i);
    ax_exp s = ax_shape(a);
    return ax_add(ax_at_linear(a, j), ax_cvt(ax_index_get(s, 0), AX_F32));
}

static ax_acc b_free(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_acc a = ax_map(f_poly, NULL, input(cx, AX_F32, 1, v->sh, 130, 9));
    return ax_generate(cx, ax_shape(a), g_at, a);
}

DIFF_TEST(scalar_code_reads_arrays)
{
    const int64_t sizes[] = {0, 1, 1001, 300000};
    for (int k = 0; k < 4; k++) {
        Env e = {1, &sizes[k], 0};
        SAME("ax_at_linear in generate", b_free, &e, 0);
    }
}

typedef struct { ax_scalar to; } WideEnv;
static ax_exp wide_cvt_fn(ax_exp x, void *env) { return ax_cvt(x, ((WideEnv *)env)->to); }

/* Runs map (cvt to) over a on one backend; the result's bytes in out. */
static bool run_wide_cvt(ax_backend_kind b, ax_scalar from, const void *data, int64_t n, ax_scalar to, void *out)
{
    ax_options o = {0};
    o.backend = b;
    ax_ctx *cx = ax_ctx_new(&o);
    WideEnv e = {to};
    ax_array *r = ax_run(cx, ax_map(wide_cvt_fn, &e, ax_use(cx, ax_array_from(cx, from, 1, &n, data))));
    bool ok = r != NULL;
    if (r) ax_array_copy_out(r, 0, out);
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

/* 64-bit integer <-> float conversions go through i32 in kernels with
 * deferred checks (cg_exp.c cvt_via_i32) and hand values outside its
 * range to the checked copy: every result must still be the exact one,
 * NaN, infinities, saturation and the i32 boundaries included, in lengths
 * that fill vector loops. */
DIFF_TEST(wide_conversions_through_i32_are_exact)
{
    const int64_t ints[] = {0, 1, -1, 2147483647LL, 2147483648LL, -2147483648LL, -2147483649LL,
                            9007199254740993LL, INT64_MIN, INT64_MAX, 123456789, -987654321};
    const double flts[] = {0.0, -0.0, -0.5, 0.999, 3.7, -3.7, 2147483520.0, 2147483647.0, 2147483648.0,
                           -2147483648.0, -2147483649.0, -2147484160.0, 4294967295.0, 1e19, -1e19,
                           NAN, INFINITY, -INFINITY};
    enum { N = 1000 };
    int64_t iv[N];
    double dv[N];
    float fv[N];
    for (int i = 0; i < N; i++) {
        iv[i] = ints[i % (int)(sizeof ints / sizeof *ints)];
        dv[i] = flts[i % (int)(sizeof flts / sizeof *flts)];
        fv[i] = (float)dv[i];
    }
    static const ax_scalar ftypes[] = {AX_F32, AX_F64}, itypes[] = {AX_I64, AX_U64};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            uint64_t r0[N], r1[N];
            /* integer -> float */
            memset(r0, 0, sizeof r0);
            memset(r1, 0, sizeof r1);
            CHECK(run_wide_cvt(AX_BACKEND_INTERP, itypes[a], iv, N, ftypes[b], r0));
            CHECK(run_wide_cvt(be->kind, itypes[a], iv, N, ftypes[b], r1));
            CHECKF(!memcmp(r0, r1, sizeof r0), "%s -> %s differs", itypes[a] == AX_I64 ? "i64" : "u64",
                   ftypes[b] == AX_F32 ? "f32" : "f64");
            /* float -> integer */
            memset(r0, 0, sizeof r0);
            memset(r1, 0, sizeof r1);
            const void *src = ftypes[b] == AX_F32 ? (const void *)fv : (const void *)dv;
            CHECK(run_wide_cvt(AX_BACKEND_INTERP, ftypes[b], src, N, itypes[a], r0));
            CHECK(run_wide_cvt(be->kind, ftypes[b], src, N, itypes[a], r1));
            CHECKF(!memcmp(r0, r1, sizeof r0), "%s -> %s differs", ftypes[b] == AX_F32 ? "f32" : "f64",
                   itypes[a] == AX_I64 ? "i64" : "u64");
        }
}