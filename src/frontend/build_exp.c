/*
 * The scalar half of the embedding: constants, primitive operations,
 * conditionals, tuples, indices, array reads, loops, and the lambdas that
 * carry user callbacks (higher-order abstract syntax: each callback is
 * called once with fresh variables; docs/ARCHITECTURE.md, "In one paragraph").
 *
 * Constants are context-free values (ax_exp holds up to 8 leaves inline),
 * so that `ax_add(x, ax_f32(1))` and `ax_ix1(ax_i64(n))` need no context.
 * An operation on constants alone is evaluated here with the same
 * prim_eval the interpreter uses, so it means exactly what running it would.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "build.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ plumbing */

ax_exp exp_node(Node *x)
{
    ax_exp e;
    memset(&e, 0, sizeof e);
    if (x) { e.node = x; e.tag = TAG_NODE; }
    return e;
}

ax_exp exp_invalid(void)
{
    ax_exp e;
    memset(&e, 0, sizeof e);
    return e;
}

static ax_exp cf_error(int kind, int a, int b, int c)
{
    ax_exp e = exp_invalid();
    e.tag = TAG_ERR;
    e.aux = kind;
    e.v[0].i = a;
    e.v[1].i = b;
    e.v[2].i = c;
    return e;
}

bool exp_is_const(ax_exp e) { return e.tag == TAG_SCALAR || e.tag == TAG_TUPLE || e.tag == TAG_INDEX; }
bool ax_exp_ok(ax_exp e) { return e.tag == TAG_NODE ? e.node != NULL : exp_is_const(e); }
ax_ctx *ax_exp_ctx(ax_exp e) { return e.tag == TAG_NODE && e.node ? e.node->cx : NULL; }

ax_ctx *exps_ctx(int n, const ax_exp *es)
{
    for (int i = 0; i < n; i++)
        if (es[i].tag == TAG_NODE && es[i].node) return es[i].node->cx;
    return NULL;
}

const char *tstr(ax_ctx *cx, const Type *t)
{
    enum { NBUF = 6, BUFSZ = 160 };
    if (!cx->scratch && !(cx->scratch = ax__calloc(NBUF * BUFSZ + 1, 1))) return "?";
    /* The last byte of scratch counts which buffer is next. */
    unsigned char *k = (unsigned char *)cx->scratch + NBUF * BUFSZ;
    char *buf = cx->scratch + (*k % NBUF) * BUFSZ;
    *k = (unsigned char)((*k + 1) % NBUF);
    return ty_str(t, buf, BUFSZ);
}

void exp_report(ax_ctx *cx, ax_exp e, const char *op)
{
    if (!cx || e.tag != TAG_ERR) {
        if (cx && e.tag == TAG_INVALID)
            ctx_error(cx, AX_ERR_BUILD, "%s: an operand is invalid (the result of a failed builder call)", op);
        return;
    }
    switch (e.aux) {
    case CFE_PRIM: {
        const char *w1 = ax_scalar_name((ax_scalar)e.v[1].i), *w2 = ax_scalar_name((ax_scalar)e.v[2].i);
        ctx_error(cx, AX_ERR_BUILD, "%s: operand types do not fit (constants of %s%s%s)",
                  prim_info[e.v[0].i].api, w1, e.v[2].i >= 0 ? " and " : "", e.v[2].i >= 0 ? w2 : "");
        break;
    }
    case CFE_NESTED:
        ctx_error(cx, AX_ERR_BUILD, "ax_tuple: a constant tuple inside a constant tuple needs a "
                  "context; make a component a term with ax_const");
        break;
    case CFE_RANK:
        ctx_error(cx, AX_ERR_BUILD, "ax_index: rank %lld is out of range 0..%d", (long long)e.v[0].i, AX_MAX_RANK);
        break;
    case CFE_DIVZERO:
        ctx_error(cx, AX_ERR_DIVZERO, "%s: integer division by zero in a constant expression",
                  prim_info[e.v[0].i].api);
        break;
    case CFE_TUPLE_N:
        if (e.v[0].i == 1)
            ctx_error(cx, AX_ERR_BUILD, "ax_tuple: 1 component; a tuple has 0 (unit) or at least 2");
        else
            ctx_error(cx, AX_ERR_BUILD, "ax_tuple: a constant tuple holds at most 8 scalars; make a "
                      "component a term with ax_const");
        break;
    case CFE_PROJ:
        ctx_error(cx, AX_ERR_BUILD, "ax_get: component %lld is out of range for a constant of %lld components",
                  (long long)e.v[0].i, (long long)e.v[1].i);
        break;
    default:
        ctx_error(cx, AX_ERR_BUILD, "%s: an operand is invalid", op);
    }
    /* (a context-free error that is never combined with a term is never
     * reported: there is no context to report it to; ax_run needs a term.) */
}

const Type *exp_type(ax_exp e, Type *tmp, const Type **elts)
{
    switch (e.tag) {
    case TAG_NODE: return e.node ? e.node->type : NULL;
    case TAG_SCALAR: return ty_scalar((ax_scalar)e.leaf[0]);
    case TAG_INDEX: return ty_index(NULL, e.n);
    case TAG_TUPLE:
        if (e.n == 0) return ty_unit();
        memset(tmp, 0, sizeof *tmp);
        tmp->kind = TY_TUPLE;
        tmp->n = e.n;
        tmp->width = e.n;
        for (int i = 0; i < e.n; i++) elts[i] = ty_scalar((ax_scalar)e.leaf[i]);
        tmp->elts = elts;
        return tmp;
    }
    return NULL;
}

const ax_type *ax_exp_type(ax_exp e)
{
    switch (e.tag) {
    case TAG_NODE: return e.node ? e.node->type : NULL;
    case TAG_SCALAR: return ty_scalar((ax_scalar)e.leaf[0]);
    case TAG_INDEX: return ty_index(NULL, e.n);
    case TAG_TUPLE: return e.n == 0 ? ty_unit() : NULL;   /* no lasting type yet */
    }
    return NULL;
}

static Scalar leaf_get(ax_exp e, int i)
{
    Scalar s;
    memcpy(&s, &e.v[i], sizeof s);
    return s;
}

static void leaf_set(ax_exp *e, int i, Scalar s)
{
    memcpy(&e->v[i], &s, sizeof s);
}

static Node *mk_const(ax_ctx *cx, ax_scalar s, Scalar v)
{
    Node *x = node_new(&cx->arena, OP_CONST, 0, ty_scalar(s));
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "out of memory building a constant");
    x->cx = cx;
    x->c = sc_norm(v, s);
    return x;
}

Node *adopt(ax_ctx *cx, ax_exp e, const char *op)
{
    if (!cx) return NULL;
    switch (e.tag) {
    case TAG_NODE:
        if (!e.node) break;
        if (e.node->cx != cx)
            return ctx_error(cx, AX_ERR_BUILD, "%s: an operand was built in another context", op);
        return e.node;
    case TAG_SCALAR:
        return mk_const(cx, (ax_scalar)e.leaf[0], leaf_get(e, 0));
    case TAG_TUPLE:
    case TAG_INDEX: {
        Node *x = node_new(&cx->arena, e.tag == TAG_TUPLE ? OP_TUPLE : OP_IXCONS, e.n, NULL);
        if (!x) return ctx_error(cx, AX_ERR_NOMEM, "out of memory");
        x->cx = cx;
        const Type *elts[8];
        for (int i = 0; i < e.n; i++) {
            ax_scalar s = e.tag == TAG_TUPLE ? (ax_scalar)e.leaf[i] : AX_I64;
            if (!(x->kid[i] = mk_const(cx, s, leaf_get(e, i)))) return NULL;
            elts[i] = ty_scalar(s);
        }
        x->type = e.tag == TAG_TUPLE ? ty_tuple(&cx->arena, e.n, elts) : ty_index(NULL, e.n);
        if (!x->type) return ctx_error(cx, AX_ERR_NOMEM, "out of memory");
        return x;
    }
    default:
        break;
    }
    exp_report(cx, e, op);
    return NULL;
}

ax_exp ax_const(ax_ctx *cx, ax_exp c)
{
    if (!cx) return exp_invalid();
    return exp_node(adopt(cx, c, "ax_const"));
}

/* ------------------------------------------------------------ constants */

static ax_exp imm(ax_scalar s, Scalar v)
{
    ax_exp e = exp_invalid();
    e.tag = TAG_SCALAR;
    e.n = 1;
    e.leaf[0] = (uint8_t)s;
    leaf_set(&e, 0, sc_norm(v, s));
    return e;
}

ax_exp ax_bool(bool x) { Scalar v = {.u = 0}; v.b = x; return imm(AX_BOOL, v); }
ax_exp ax_i8(int8_t x) { return imm(AX_I8, (Scalar){.i = x}); }
ax_exp ax_i16(int16_t x) { return imm(AX_I16, (Scalar){.i = x}); }
ax_exp ax_i32(int32_t x) { return imm(AX_I32, (Scalar){.i = x}); }
ax_exp ax_i64(int64_t x) { return imm(AX_I64, (Scalar){.i = x}); }
ax_exp ax_u8(uint8_t x) { return imm(AX_U8, (Scalar){.u = x}); }
ax_exp ax_u16(uint16_t x) { return imm(AX_U16, (Scalar){.u = x}); }
ax_exp ax_u32(uint32_t x) { return imm(AX_U32, (Scalar){.u = x}); }
ax_exp ax_u64(uint64_t x) { return imm(AX_U64, (Scalar){.u = x}); }
ax_exp ax_f32(float x) { Scalar v = {.u = 0}; v.f32 = x; return imm(AX_F32, v); }
ax_exp ax_f64(double x) { return imm(AX_F64, (Scalar){.f64 = x}); }

ax_exp ax_constf(ax_scalar s, double x)
{
    if ((unsigned)s >= AX_NSCALAR) return exp_invalid();
    return imm(s, sc_convert((Scalar){.f64 = x}, AX_F64, s));
}

ax_exp ax_consti(ax_scalar s, int64_t x)
{
    if ((unsigned)s >= AX_NSCALAR) return exp_invalid();
    return imm(s, sc_convert((Scalar){.i = x}, AX_I64, s));
}

/* ------------------------------------------------------------ primitives */

static int type_code(const Type *t) { return t && t->kind == TY_SCALAR ? (int)t->s : (int)AX_I64; }

/* Builds (or, for constants alone, evaluates) a primitive application. */
static ax_exp prim(Prim p, int n, const ax_exp *args, const Type *target)
{
    const char *op = prim_info[p].api;
    ax_ctx *cx = exps_ctx(n, args);
    for (int i = 0; i < n; i++) {
        if (!ax_exp_ok(args[i])) {
            if (cx) { exp_report(cx, args[i], op); return exp_invalid(); }
            return args[i].tag == TAG_ERR ? args[i] : exp_invalid();
        }
    }
    Type tmps[3];
    const Type *elts[3][8], *at[3];
    for (int i = 0; i < n; i++) at[i] = exp_type(args[i], &tmps[i], elts[i]);
    const char *why = "bad operands";
    const Type *rt = prim_type(cx ? &cx->arena : NULL, p, n, at, target, &why);
    if (!rt) {
        if (!cx) return cf_error(CFE_PRIM, p, type_code(at[0]), n > 1 ? type_code(at[1]) : -1);
        if (n == 1)
            return ctx_error(cx, AX_ERR_BUILD, "%s: %s (got %s)", op, why, tstr(cx, at[0])), exp_invalid();
        ctx_error(cx, AX_ERR_BUILD, "%s: %s (got %s and %s)", op, why, tstr(cx, at[0]), tstr(cx, at[1]));
        return exp_invalid();
    }
    if (!cx) {
        /* Constants alone: evaluate now. */
        Scalar in[24], out[8];
        int k = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < args[i].n; j++) in[k++] = leaf_get(args[i], j);
        int st = prim_eval(p, at, in, rt, out);
        if (st == AX_ERR_DIVZERO) return cf_error(CFE_DIVZERO, p, 0, 0);
        if (st) return cf_error(CFE_PRIM, p, type_code(at[0]), n > 1 ? type_code(at[1]) : -1);
        ax_exp r = exp_invalid();
        if (rt->kind == TY_SCALAR) return imm(rt->s, out[0]);
        if (rt->kind != TY_INDEX || rt->n > AX_MAX_RANK) return exp_invalid();
        r.tag = TAG_INDEX;          /* FROMLIN yields an index */
        r.n = (int16_t)rt->n;
        for (int i = 0; i < rt->n; i++) { r.leaf[i] = AX_I64; leaf_set(&r, i, out[i]); }
        return r;
    }
    Node *x = node_new(&cx->arena, OP_PRIM, n, rt);
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", op), exp_invalid();
    x->cx = cx;
    x->a = p;
    for (int i = 0; i < n; i++)
        if (!(x->kid[i] = adopt(cx, args[i], op))) return exp_invalid();
    return exp_node(x);
}

static ax_exp prim1(Prim p, ax_exp a) { return prim(p, 1, &a, NULL); }
static ax_exp prim2(Prim p, ax_exp a, ax_exp b) { ax_exp v[2] = {a, b}; return prim(p, 2, v, NULL); }
static ax_exp primt(Prim p, ax_exp a, ax_scalar to)
{
    if ((unsigned)to >= AX_NSCALAR) {
        ax_ctx *cx = ax_exp_ctx(a);
        if (cx) ctx_error(cx, AX_ERR_BUILD, "%s: target type %d is not a scalar type", prim_info[p].api, (int)to);
        return exp_invalid();
    }
    return prim(p, 1, &a, ty_scalar(to));
}

ax_exp ax_add(ax_exp a, ax_exp b) { return prim2(P_ADD, a, b); }
ax_exp ax_sub(ax_exp a, ax_exp b) { return prim2(P_SUB, a, b); }
ax_exp ax_mul(ax_exp a, ax_exp b) { return prim2(P_MUL, a, b); }
ax_exp ax_div(ax_exp a, ax_exp b) { return prim2(P_DIV, a, b); }
ax_exp ax_quot(ax_exp a, ax_exp b) { return prim2(P_QUOT, a, b); }
ax_exp ax_rem(ax_exp a, ax_exp b) { return prim2(P_REM, a, b); }
ax_exp ax_idiv(ax_exp a, ax_exp b) { return prim2(P_IDIV, a, b); }
ax_exp ax_mod(ax_exp a, ax_exp b) { return prim2(P_MOD, a, b); }
ax_exp ax_neg(ax_exp a) { return prim1(P_NEG, a); }
ax_exp ax_abs(ax_exp a) { return prim1(P_ABS, a); }
ax_exp ax_signum(ax_exp a) { return prim1(P_SIGNUM, a); }
ax_exp ax_min(ax_exp a, ax_exp b) { return prim2(P_MIN, a, b); }
ax_exp ax_max(ax_exp a, ax_exp b) { return prim2(P_MAX, a, b); }
ax_exp ax_band(ax_exp a, ax_exp b) { return prim2(P_BAND, a, b); }
ax_exp ax_bor(ax_exp a, ax_exp b) { return prim2(P_BOR, a, b); }
ax_exp ax_bxor(ax_exp a, ax_exp b) { return prim2(P_BXOR, a, b); }
ax_exp ax_bnot(ax_exp a) { return prim1(P_BNOT, a); }
ax_exp ax_shl(ax_exp a, ax_exp n) { return prim2(P_SHL, a, n); }
ax_exp ax_shr(ax_exp a, ax_exp n) { return prim2(P_SHR, a, n); }
ax_exp ax_rotl(ax_exp a, ax_exp n) { return prim2(P_ROTL, a, n); }
ax_exp ax_rotr(ax_exp a, ax_exp n) { return prim2(P_ROTR, a, n); }
ax_exp ax_popcount(ax_exp a) { return prim1(P_POPCOUNT, a); }
ax_exp ax_clz(ax_exp a) { return prim1(P_CLZ, a); }
ax_exp ax_ctz(ax_exp a) { return prim1(P_CTZ, a); }
ax_exp ax_eq(ax_exp a, ax_exp b) { return prim2(P_EQ, a, b); }
ax_exp ax_ne(ax_exp a, ax_exp b) { return prim2(P_NE, a, b); }
ax_exp ax_lt(ax_exp a, ax_exp b) { return prim2(P_LT, a, b); }
ax_exp ax_le(ax_exp a, ax_exp b) { return prim2(P_LE, a, b); }
ax_exp ax_gt(ax_exp a, ax_exp b) { return prim2(P_GT, a, b); }
ax_exp ax_ge(ax_exp a, ax_exp b) { return prim2(P_GE, a, b); }
ax_exp ax_and(ax_exp a, ax_exp b) { return prim2(P_AND, a, b); }
ax_exp ax_or(ax_exp a, ax_exp b) { return prim2(P_OR, a, b); }
ax_exp ax_not(ax_exp a) { return prim1(P_NOT, a); }
ax_exp ax_exp_(ax_exp a) { return prim1(P_EXP, a); }
ax_exp ax_log(ax_exp a) { return prim1(P_LOG, a); }
ax_exp ax_sqrt(ax_exp a) { return prim1(P_SQRT, a); }
ax_exp ax_pow(ax_exp a, ax_exp b) { return prim2(P_POW, a, b); }
ax_exp ax_logbase(ax_exp base, ax_exp a) { return prim2(P_LOGBASE, base, a); }
ax_exp ax_sin(ax_exp a) { return prim1(P_SIN, a); }
ax_exp ax_cos(ax_exp a) { return prim1(P_COS, a); }
ax_exp ax_tan(ax_exp a) { return prim1(P_TAN, a); }
ax_exp ax_asin(ax_exp a) { return prim1(P_ASIN, a); }
ax_exp ax_acos(ax_exp a) { return prim1(P_ACOS, a); }
ax_exp ax_atan(ax_exp a) { return prim1(P_ATAN, a); }
ax_exp ax_sinh(ax_exp a) { return prim1(P_SINH, a); }
ax_exp ax_cosh(ax_exp a) { return prim1(P_COSH, a); }
ax_exp ax_tanh(ax_exp a) { return prim1(P_TANH, a); }
ax_exp ax_asinh(ax_exp a) { return prim1(P_ASINH, a); }
ax_exp ax_acosh(ax_exp a) { return prim1(P_ACOSH, a); }
ax_exp ax_atanh(ax_exp a) { return prim1(P_ATANH, a); }
ax_exp ax_atan2(ax_exp y, ax_exp x) { return prim2(P_ATAN2, y, x); }
ax_exp ax_is_nan(ax_exp a) { return prim1(P_ISNAN, a); }
ax_exp ax_is_infinite(ax_exp a) { return prim1(P_ISINF, a); }
ax_exp ax_floor(ax_exp a, ax_scalar to) { return primt(P_FLOOR, a, to); }
ax_exp ax_ceiling(ax_exp a, ax_scalar to) { return primt(P_CEIL, a, to); }
ax_exp ax_round(ax_exp a, ax_scalar to) { return primt(P_ROUND, a, to); }
ax_exp ax_truncate(ax_exp a, ax_scalar to) { return primt(P_TRUNC, a, to); }
ax_exp ax_cvt(ax_exp a, ax_scalar to) { return primt(P_CVT, a, to); }
ax_exp ax_bitcast(ax_exp a, ax_scalar to) { return primt(P_BITCAST, a, to); }
ax_exp ax_shape_size(ax_exp sh) { return prim1(P_SHAPESIZE, sh); }
ax_exp ax_to_linear(ax_exp sh, ax_exp ix) { return prim2(P_TOLIN, sh, ix); }
ax_exp ax_from_linear(ax_exp sh, ax_exp i) { return prim2(P_FROMLIN, sh, exp_to_i64(i, "ax_from_linear")); }

ax_exp exp_to_i64(ax_exp e, const char *op)
{
    Type tmp;
    const Type *elts[8];
    const Type *t = exp_type(e, &tmp, elts);
    if (t && t->kind == TY_SCALAR && sc_is_int(t->s) && t->s != AX_I64) return ax_cvt(e, AX_I64);
    return e;
}

/* ------------------------------------------------------------ structure */

ax_exp ax_cond(ax_exp c, ax_exp t, ax_exp e)
{
    ax_exp v[3] = {c, t, e};
    ax_ctx *cx = exps_ctx(3, v);
    for (int i = 0; i < 3; i++)
        if (!ax_exp_ok(v[i])) {
            if (cx) { exp_report(cx, v[i], "ax_cond"); return exp_invalid(); }
            return v[i].tag == TAG_ERR ? v[i] : exp_invalid();
        }
    Type tmp[3];
    const Type *elts[3][8];
    const Type *ct = exp_type(c, &tmp[0], elts[0]), *tt = exp_type(t, &tmp[1], elts[1]),
               *et = exp_type(e, &tmp[2], elts[2]);
    if (!ty_eq(ct, ty_bool()) || !ty_eq(tt, et)) {
        if (!cx) return cf_error(CFE_PRIM, P_EQ, type_code(tt), type_code(et));
        if (!ty_eq(ct, ty_bool()))
            ctx_error(cx, AX_ERR_BUILD, "ax_cond: the condition is %s, not bool", tstr(cx, ct));
        else
            ctx_error(cx, AX_ERR_BUILD, "ax_cond: the branches differ in type (%s and %s)",
                      tstr(cx, tt), tstr(cx, et));
        return exp_invalid();
    }
    if (c.tag == TAG_SCALAR) return leaf_get(c, 0).b ? t : e;
    Node *x = node_new(&cx->arena, OP_COND, 3, NULL);
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "ax_cond: out of memory"), exp_invalid();
    x->cx = cx;
    for (int i = 0; i < 3; i++)
        if (!(x->kid[i] = adopt(cx, v[i], "ax_cond"))) return exp_invalid();
    x->type = x->kid[1]->type;
    return exp_node(x);
}

ax_exp ax_tuple(int n, const ax_exp *comps)
{
    if (n < 0 || (n > 0 && !comps)) return exp_invalid();
    ax_ctx *cx = exps_ctx(n, comps);
    for (int i = 0; i < n; i++)
        if (!ax_exp_ok(comps[i])) {
            if (cx) { exp_report(cx, comps[i], "ax_tuple"); return exp_invalid(); }
            return comps[i].tag == TAG_ERR ? comps[i] : exp_invalid();
        }
    /* The header's promise: 0 (unit) or at least 2 components. */
    if (n == 1) {
        if (cx) return ctx_error(cx, AX_ERR_BUILD, "ax_tuple: 1 component; a tuple has 0 (unit) or at least 2"),
                       exp_invalid();
        return cf_error(CFE_TUPLE_N, 1, 0, 0);
    }
    if (!cx) {
        /* Constants alone: a constant tuple of scalars. */
        if (n > 8) return cf_error(CFE_TUPLE_N, n, 0, 0);
        ax_exp r = exp_invalid();
        r.tag = TAG_TUPLE;
        r.n = (int16_t)n;
        for (int i = 0; i < n; i++) {
            if (comps[i].tag != TAG_SCALAR) return cf_error(CFE_NESTED, 0, 0, 0);
            r.leaf[i] = comps[i].leaf[0];
            leaf_set(&r, i, leaf_get(comps[i], 0));
        }
        return r;
    }
    Node *x = node_new(&cx->arena, OP_TUPLE, n, NULL);
    const Type **elts = arena_alloc(&cx->arena, sizeof *elts * (size_t)(n ? n : 1));
    if (!x || !elts) return ctx_error(cx, AX_ERR_NOMEM, "ax_tuple: out of memory"), exp_invalid();
    x->cx = cx;
    for (int i = 0; i < n; i++) {
        if (!(x->kid[i] = adopt(cx, comps[i], "ax_tuple"))) return exp_invalid();
        elts[i] = x->kid[i]->type;
    }
    if (!(x->type = ty_tuple(&cx->arena, n, elts)))
        return ctx_error(cx, AX_ERR_NOMEM, "ax_tuple: out of memory"), exp_invalid();
    return exp_node(x);
}

ax_exp ax_tuple2(ax_exp a, ax_exp b) { ax_exp v[2] = {a, b}; return ax_tuple(2, v); }
ax_exp ax_tuple3(ax_exp a, ax_exp b, ax_exp c) { ax_exp v[3] = {a, b, c}; return ax_tuple(3, v); }
ax_exp ax_tuple4(ax_exp a, ax_exp b, ax_exp c, ax_exp d) { ax_exp v[4] = {a, b, c, d}; return ax_tuple(4, v); }

ax_exp ax_get(ax_exp t, int i)
{
    if (!ax_exp_ok(t)) return t.tag == TAG_ERR ? t : exp_invalid();
    if (t.tag == TAG_TUPLE || t.tag == TAG_INDEX) {
        if (i < 0 || i >= t.n) return cf_error(CFE_PROJ, i, t.n, 0);
        return imm(t.tag == TAG_TUPLE ? (ax_scalar)t.leaf[i] : AX_I64, leaf_get(t, i));
    }
    ax_ctx *cx = t.node ? t.node->cx : NULL;
    if (!cx) return cf_error(CFE_PROJ, i, 1, 0);
    const Type *tt = t.node->type;
    if (tt->kind == TY_INDEX) return ax_index_get(t, i);
    if (tt->kind != TY_TUPLE)
        return ctx_error(cx, AX_ERR_BUILD, "ax_get: the operand is %s, not a tuple", tstr(cx, tt)), exp_invalid();
    if (i < 0 || i >= tt->n)
        return ctx_error(cx, AX_ERR_BUILD, "ax_get: component %d is out of range for %s", i, tstr(cx, tt)),
               exp_invalid();
    /* Projecting a tuple built right here needs no node. */
    if (t.node->op == OP_TUPLE) return exp_node(t.node->kid[i]);
    Node *x = node_new(&cx->arena, OP_PROJ, 1, tt->elts[i]);
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "ax_get: out of memory"), exp_invalid();
    x->cx = cx;
    x->a = i;
    x->kid[0] = t.node;
    return exp_node(x);
}

ax_exp ax_index(int n, const ax_exp *comps)
{
    if (n < 0 || n > AX_MAX_RANK) return cf_error(CFE_RANK, n, 0, 0);
    if (n > 0 && !comps) return exp_invalid();
    ax_exp c[AX_MAX_RANK];
    for (int i = 0; i < n; i++) c[i] = exp_to_i64(comps[i], "ax_index");
    ax_ctx *cx = exps_ctx(n, c);
    for (int i = 0; i < n; i++)
        if (!ax_exp_ok(c[i])) {
            if (cx) { exp_report(cx, c[i], "ax_index"); return exp_invalid(); }
            return c[i].tag == TAG_ERR ? c[i] : exp_invalid();
        }
    for (int i = 0; i < n; i++) {
        Type tmp;
        const Type *elts[8];
        const Type *t = exp_type(c[i], &tmp, elts);
        if (!ty_eq(t, ty_i64())) {
            if (!cx) return cf_error(CFE_PRIM, P_CVT, type_code(t), -1);
            ctx_error(cx, AX_ERR_BUILD, "ax_index: component %d is %s, not an integer", i, tstr(cx, t));
            return exp_invalid();
        }
    }
    if (!cx) {
        ax_exp r = exp_invalid();
        r.tag = TAG_INDEX;
        r.n = (int16_t)n;
        for (int i = 0; i < n; i++) { r.leaf[i] = AX_I64; leaf_set(&r, i, leaf_get(c[i], 0)); }
        return r;
    }
    Node *x = node_new(&cx->arena, OP_IXCONS, n, ty_index(NULL, n));
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "ax_index: out of memory"), exp_invalid();
    x->cx = cx;
    for (int i = 0; i < n; i++)
        if (!(x->kid[i] = adopt(cx, c[i], "ax_index"))) return exp_invalid();
    return exp_node(x);
}

ax_exp ax_ix1(ax_exp i) { return ax_index(1, &i); }
ax_exp ax_ix2(ax_exp i, ax_exp j) { ax_exp v[2] = {i, j}; return ax_index(2, v); }
ax_exp ax_ix3(ax_exp i, ax_exp j, ax_exp k) { ax_exp v[3] = {i, j, k}; return ax_index(3, v); }

ax_exp ax_index_get(ax_exp ix, int dim)
{
    if (!ax_exp_ok(ix)) return ix.tag == TAG_ERR ? ix : exp_invalid();
    if (ix.tag == TAG_INDEX) {
        if (dim < 0 || dim >= ix.n) return cf_error(CFE_PROJ, dim, ix.n, 0);
        return imm(AX_I64, leaf_get(ix, dim));
    }
    if (ix.tag != TAG_NODE) return cf_error(CFE_PROJ, dim, 0, 0);
    ax_ctx *cx = ix.node->cx;
    const Type *t = ix.node->type;
    if (t->kind != TY_INDEX)
        return ctx_error(cx, AX_ERR_BUILD, "ax_index_get: the operand is %s, not an index", tstr(cx, t)),
               exp_invalid();
    if (dim < 0 || dim >= t->n)
        return ctx_error(cx, AX_ERR_BUILD, "ax_index_get: dimension %d is out of range for an index of rank %d",
                         dim, t->n), exp_invalid();
    if (ix.node->op == OP_IXCONS) return exp_node(ix.node->kid[dim]);
    Node *x = node_new(&cx->arena, OP_IXGET, 1, ty_i64());
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "ax_index_get: out of memory"), exp_invalid();
    x->cx = cx;
    x->a = dim;
    x->kid[0] = ix.node;
    return exp_node(x);
}

ax_exp ax_ignore(int rank)
{
    ax_exp c[AX_MAX_RANK];
    if (rank < 0 || rank > AX_MAX_RANK) return cf_error(CFE_RANK, rank, 0, 0);
    for (int i = 0; i < rank; i++) c[i] = ax_i64(-1);
    return ax_index(rank, c);
}

/* ------------------------------------------------------------ arrays */

static ax_exp array_read(Op op, const char *what, ax_acc a, ax_exp ix)
{
    if (!a) return exp_invalid();
    ax_ctx *cx = a->cx;
    const Type *at = a->type;
    if (at->kind != TY_ARRAY)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the operand is %s, not an array", what, tstr(cx, at)),
               exp_invalid();
    Node *ixn = NULL;
    if (op == OP_INDEX || op == OP_LINDEX) {
        if (op == OP_LINDEX) ix = exp_to_i64(ix, what);
        if (!(ixn = adopt(cx, ix, what))) return exp_invalid();
        const Type *want = op == OP_INDEX ? ty_index(NULL, at->rank) : ty_i64();
        if (!ty_eq(ixn->type, want))
            return ctx_error(cx, AX_ERR_BUILD, "%s: the index is %s but the array %s needs %s", what,
                             tstr(cx, ixn->type), tstr(cx, at), tstr(cx, want)), exp_invalid();
    }
    const Type *rt = op == OP_SHAPE ? ty_index(NULL, at->rank) : at->elt;
    Node *x = node_new(&cx->arena, op, ixn ? 2 : 1, rt);
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what), exp_invalid();
    x->cx = cx;
    x->kid[0] = a;
    if (ixn) x->kid[1] = ixn;
    return exp_node(x);
}

ax_exp ax_at(ax_acc a, ax_exp ix) { return array_read(OP_INDEX, "ax_at", a, ix); }
ax_exp ax_at_linear(ax_acc a, ax_exp i) { return array_read(OP_LINDEX, "ax_at_linear", a, i); }
ax_exp ax_shape(ax_acc a) { return array_read(OP_SHAPE, "ax_shape", a, exp_invalid()); }
ax_exp ax_size(ax_acc a) { return ax_shape_size(ax_shape(a)); }

/* ------------------------------------------------------------ lambdas */

ax_exp invoke1(void *fn, const ax_exp *a, void *env) { return ((ax_fn1)fn)(a[0], env); }
ax_exp invoke2(void *fn, const ax_exp *a, void *env) { return ((ax_fn2)fn)(a[0], a[1], env); }
ax_exp invoke3(void *fn, const ax_exp *a, void *env) { return ((ax_fn3)fn)(a[0], a[1], a[2], env); }
ax_exp invokev(void *fn, const ax_exp *a, void *env) { return ((ax_fnv)fn)(a, env); }

Node *build_lam(ax_ctx *cx, const char *what, int nparam, const Type *const *ptypes,
                Invoke call, void *fn, void *env, const Type *want)
{
    if (!fn) return ctx_error(cx, AX_ERR_BUILD, "%s: the function is NULL", what);
    Node *lam = node_new(&cx->arena, OP_LAM, 1, NULL);
    Node **params = arena_alloc(&cx->arena, sizeof *params * (size_t)(nparam ? nparam : 1));
    ax_exp *args = ax__malloc(sizeof *args * (size_t)(nparam ? nparam : 1));
    if (!lam || !params || !args) {
        free(args);
        return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    }
    lam->cx = cx;
    lam->nparam = nparam;
    lam->param = params;
    for (int i = 0; i < nparam; i++) {
        Node *v = node_new(&cx->arena, OP_VAR, 0, ptypes[i]);
        if (!v) { free(args); return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what); }
        v->cx = cx;
        v->id = cx->next_var++;
        params[i] = v;
        args[i] = exp_node(v);
    }
    ax_exp body = call(fn, args, env);
    free(args);
    if (!ax_exp_ok(body)) {
        if (body.tag == TAG_ERR) exp_report(cx, body, what);
        else ctx_error(cx, AX_ERR_BUILD, "%s: the function returned an invalid expression", what);
        return NULL;
    }
    Node *b = adopt(cx, body, what);
    if (!b) return NULL;
    if (want && !ty_eq(b->type, want))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the function returns %s where %s is needed", what,
                         tstr(cx, b->type), tstr(cx, want));
    lam->kid[0] = b;
    lam->type = b->type;
    return lam;
}

ax_exp ax_while(ax_fn1 cond, ax_fn1 body, void *env, ax_exp init)
{
    ax_ctx *cx = exps_ctx(1, &init);
    if (!cx) {
        /* The loop's variable needs a context; a constant start value
         * gives none, so the caller must make it a term. */
        return init.tag == TAG_ERR ? init : cf_error(CFE_NESTED, 0, 0, 0);
    }
    Node *in = adopt(cx, init, "ax_while");
    if (!in) return exp_invalid();
    const Type *t = in->type;
    Node *c = build_lam(cx, "ax_while (condition)", 1, &t, invoke1, (void *)cond, env, ty_bool());
    if (!c) return exp_invalid();
    Node *b = build_lam(cx, "ax_while (body)", 1, &t, invoke1, (void *)body, env, t);
    if (!b) return exp_invalid();
    Node *x = node_new(&cx->arena, OP_WHILE, 3, t);
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "ax_while: out of memory"), exp_invalid();
    x->cx = cx;
    x->kid[0] = c;
    x->kid[1] = b;
    x->kid[2] = in;
    return exp_node(x);
}

/* ------------------------------------------------------------ ready-made */

ax_exp ax_fn_add(ax_exp x, ax_exp y, void *env) { (void)env; return ax_add(x, y); }
ax_exp ax_fn_sub(ax_exp x, ax_exp y, void *env) { (void)env; return ax_sub(x, y); }
ax_exp ax_fn_mul(ax_exp x, ax_exp y, void *env) { (void)env; return ax_mul(x, y); }
ax_exp ax_fn_div(ax_exp x, ax_exp y, void *env) { (void)env; return ax_div(x, y); }
ax_exp ax_fn_min(ax_exp x, ax_exp y, void *env) { (void)env; return ax_min(x, y); }
ax_exp ax_fn_max(ax_exp x, ax_exp y, void *env) { (void)env; return ax_max(x, y); }
ax_exp ax_fn_band(ax_exp x, ax_exp y, void *env) { (void)env; return ax_band(x, y); }
ax_exp ax_fn_bor(ax_exp x, ax_exp y, void *env) { (void)env; return ax_bor(x, y); }
ax_exp ax_fn_bxor(ax_exp x, ax_exp y, void *env) { (void)env; return ax_bxor(x, y); }
ax_exp ax_fn_and(ax_exp x, ax_exp y, void *env) { (void)env; return ax_and(x, y); }
ax_exp ax_fn_or(ax_exp x, ax_exp y, void *env) { (void)env; return ax_or(x, y); }
ax_exp ax_fn_neg(ax_exp x, void *env) { (void)env; return ax_neg(x); }
ax_exp ax_fn_abs(ax_exp x, void *env) { (void)env; return ax_abs(x); }
ax_exp ax_fn_not(ax_exp x, void *env) { (void)env; return ax_not(x); }
ax_exp ax_fn_id(ax_exp x, void *env) { (void)env; return x; }
ax_exp ax_fn_lt(ax_exp x, ax_exp y, void *env) { (void)env; return ax_lt(x, y); }
ax_exp ax_fn_le(ax_exp x, ax_exp y, void *env) { (void)env; return ax_le(x, y); }
ax_exp ax_fn_gt(ax_exp x, ax_exp y, void *env) { (void)env; return ax_gt(x, y); }
ax_exp ax_fn_ge(ax_exp x, ax_exp y, void *env) { (void)env; return ax_ge(x, y); }
ax_exp ax_fn_eq(ax_exp x, ax_exp y, void *env) { (void)env; return ax_eq(x, y); }
ax_exp ax_fn_ne(ax_exp x, ax_exp y, void *env) { (void)env; return ax_ne(x, y); }
ax_exp ax_fn_fst(ax_exp x, ax_exp y, void *env) { (void)env; (void)y; return x; }
ax_exp ax_fn_snd(ax_exp x, ax_exp y, void *env) { (void)env; (void)x; return y; }
