/*
 * Types of the IR and of the public API.  Scalar and index types are
 * static constants (immutable, so sharing them between contexts and threads
 * is safe); tuple and array types live in an arena.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <string.h>

#define SC(k) { .kind = TY_SCALAR, .s = (k), .width = 1 }
static const Type scalar_types[AX_NSCALAR] = {
    SC(AX_BOOL), SC(AX_I8), SC(AX_I16), SC(AX_I32), SC(AX_I64),
    SC(AX_U8), SC(AX_U16), SC(AX_U32), SC(AX_U64), SC(AX_F32), SC(AX_F64)
};
#define IX(r) { .kind = TY_INDEX, .n = (r), .width = (r) }
static const Type index_types[AX_MAX_RANK + 1] = {
    IX(0), IX(1), IX(2), IX(3), IX(4), IX(5), IX(6), IX(7), IX(8)
};
static const Type unit_type = { .kind = TY_TUPLE, .n = 0, .width = 0 };

static const char *const scalar_names[AX_NSCALAR] = {
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"
};
static const size_t scalar_sizes[AX_NSCALAR] = { 1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8 };

const Type *ty_scalar(ax_scalar s)
{
    return (unsigned)s < AX_NSCALAR ? &scalar_types[s] : NULL;
}
const Type *ty_bool(void) { return &scalar_types[AX_BOOL]; }
const Type *ty_i64(void) { return &scalar_types[AX_I64]; }
const Type *ty_i32(void) { return &scalar_types[AX_I32]; }
const Type *ty_unit(void) { return &unit_type; }

const Type *ty_index(Arena *a, int rank)
{
    (void)a;
    return rank >= 0 && rank <= AX_MAX_RANK ? &index_types[rank] : NULL;
}

const Type *ty_tuple(Arena *a, int n, const Type *const *elts)
{
    if (n == 0) return &unit_type;
    Type *t = arena_alloc(a, sizeof *t);
    const Type **e = arena_alloc(a, sizeof *e * (size_t)n);
    if (!t || !e) return NULL;
    t->kind = TY_TUPLE;
    t->n = n;
    t->elts = e;
    for (int i = 0; i < n; i++) { e[i] = elts[i]; t->width += elts[i]->width; }
    return t;
}

const Type *ty_array(Arena *a, const Type *elt, int rank)
{
    Type *t = arena_alloc(a, sizeof *t);
    if (!t) return NULL;
    t->kind = TY_ARRAY;
    t->elt = elt;
    t->rank = rank;
    t->width = 1;
    return t;
}

const Type *ty_arrays(Arena *a, int n, const Type *const *elts)
{
    Type *t = arena_alloc(a, sizeof *t);
    const Type **e = n ? arena_alloc(a, sizeof *e * (size_t)n) : NULL;
    if (!t || (n && !e)) return NULL;
    t->kind = TY_ARRAYS;
    t->n = n;
    t->elts = e;
    for (int i = 0; i < n; i++) { e[i] = elts[i]; t->width += elts[i]->width; }
    return t;
}

bool ty_eq(const Type *a, const Type *b)
{
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind) return false;
    switch (a->kind) {
    case TY_SCALAR: return a->s == b->s;
    case TY_INDEX: return a->n == b->n;
    case TY_ARRAY: return a->rank == b->rank && ty_eq(a->elt, b->elt);
    case TY_TUPLE:
    case TY_ARRAYS:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (!ty_eq(a->elts[i], b->elts[i])) return false;
        return true;
    }
    return false;
}

bool ty_is_elt(const Type *t)
{
    return t && (t->kind == TY_SCALAR || t->kind == TY_TUPLE || t->kind == TY_INDEX);
}
bool ty_is_num(const Type *t) { return t && t->kind == TY_SCALAR && t->s != AX_BOOL; }
bool ty_is_int(const Type *t) { return t && t->kind == TY_SCALAR && sc_is_int(t->s); }
bool ty_is_float(const Type *t) { return t && t->kind == TY_SCALAR && sc_is_float(t->s); }

ax_scalar ty_leaf(const Type *t, int i)
{
    switch (t->kind) {
    case TY_SCALAR: return t->s;
    case TY_INDEX: return AX_I64;
    case TY_TUPLE:
        for (int k = 0; k < t->n; k++) {
            if (i < t->elts[k]->width) return ty_leaf(t->elts[k], i);
            i -= t->elts[k]->width;
        }
        break;
    default: break;
    }
    return AX_I64;
}

int ty_leaf_offset(const Type *t, int i)
{
    if (t->kind == TY_INDEX) return i;
    int off = 0;
    for (int k = 0; k < i && k < t->n; k++) off += t->elts[k]->width;
    return off;
}

const Type *ty_copy(Arena *a, const Type *t)
{
    switch (t->kind) {
    case TY_SCALAR: return ty_scalar(t->s);
    case TY_INDEX: return ty_index(a, t->n);
    case TY_ARRAY: {
        const Type *e = ty_copy(a, t->elt);
        return e ? ty_array(a, e, t->rank) : NULL;
    }
    case TY_TUPLE:
    case TY_ARRAYS: {
        if (t->n == 0 && t->kind == TY_TUPLE) return &unit_type;
        const Type **e = arena_alloc(a, sizeof *e * (size_t)t->n);
        if (!e) return NULL;
        for (int i = 0; i < t->n; i++)
            if (!(e[i] = ty_copy(a, t->elts[i]))) return NULL;
        return t->kind == TY_TUPLE ? ty_tuple(a, t->n, e) : ty_arrays(a, t->n, e);
    }
    }
    return NULL;
}

/* Appends to buf without overflowing; returns the new length. */
static size_t put(char *buf, size_t size, size_t len, const char *s)
{
    size_t n = strlen(s);
    if (len < size) {
        size_t room = size - len - 1;
        memcpy(buf + len, s, n < room ? n : room);
        buf[len + (n < room ? n : room)] = 0;
    }
    return len + n;
}

static size_t ty_str_at(const Type *t, char *buf, size_t size, size_t len)
{
    char tmp[32];
    if (!t) return put(buf, size, len, "?");
    switch (t->kind) {
    case TY_SCALAR: return put(buf, size, len, scalar_names[t->s]);
    case TY_INDEX:
        snprintf(tmp, sizeof tmp, "ix%d", t->n);
        return put(buf, size, len, tmp);
    case TY_ARRAY:
        len = put(buf, size, len, "[");
        len = ty_str_at(t->elt, buf, size, len);
        snprintf(tmp, sizeof tmp, "]^%d", t->rank);
        return put(buf, size, len, tmp);
    case TY_TUPLE:
    case TY_ARRAYS:
        len = put(buf, size, len, "(");
        for (int i = 0; i < t->n; i++) {
            if (i) len = put(buf, size, len, ", ");
            len = ty_str_at(t->elts[i], buf, size, len);
        }
        return put(buf, size, len, ")");
    }
    return len;
}

char *ty_str(const Type *t, char *buf, size_t size)
{
    if (size) buf[0] = 0;
    ty_str_at(t, buf, size, 0);
    return buf;
}

/* ---- public type API ---- */

const ax_type *ax_type_scalar(ax_scalar s) { return ty_scalar(s); }
const ax_type *ax_type_index(ax_ctx *cx, int rank)
{
    const Type *t = ty_index(NULL, rank);
    if (!t && cx) ctx_error(cx, AX_ERR_BUILD, "ax_type_index: rank %d is out of range 0..%d", rank, AX_MAX_RANK);
    return t;
}
const ax_type *ax_type_tuple(ax_ctx *cx, int n, const ax_type *const *elems)
{
    if (!cx) return NULL;
    if (n < 0 || n == 1 || (n > 0 && !elems))
        return ctx_error(cx, AX_ERR_BUILD, "ax_type_tuple: %s", n > 0 && !elems ? "the component list is NULL" :
                         "a tuple type has 0 (unit) or at least 2 components");
    for (int i = 0; i < n; i++)
        if (!ty_is_elt(elems[i]))
            return ctx_error(cx, AX_ERR_BUILD, "ax_type_tuple: component %d is %s, not an element type",
                             i, elems[i] ? "an array type" : "NULL");
    const Type *t = ty_tuple(&cx->arena, n, elems);
    if (!t) return ctx_error(cx, AX_ERR_NOMEM, "ax_type_tuple: out of memory");
    return t;
}
/* The inspection functions accept the NULL a failed builder returns (an
 * invalid term's type), answering "nothing" rather than crashing. */
ax_type_kind ax_type_kind_of(const ax_type *t) { return t ? (ax_type_kind)t->kind : AX_KIND_INVALID; }
ax_scalar ax_type_scalar_of(const ax_type *t) { return t && t->kind == TY_SCALAR ? t->s : AX_NSCALAR; }
int ax_type_arity(const ax_type *t) { return !t ? -1 : t->kind == TY_ARRAY ? 1 : t->n; }
const ax_type *ax_type_elem(const ax_type *t, int i)
{
    if (!t) return NULL;
    if ((t->kind == TY_TUPLE || t->kind == TY_ARRAYS) && i >= 0 && i < t->n) return t->elts[i];
    if (t->kind == TY_INDEX && i >= 0 && i < t->n) return ty_i64();
    if (t->kind == TY_ARRAY && i == 0) return t->elt;
    return NULL;
}
int ax_type_components(const ax_type *t) { return !t ? 0 : t->kind == TY_ARRAY ? t->elt->width : t->width; }
bool ax_type_equal(const ax_type *a, const ax_type *b) { return a && b && ty_eq(a, b); }
char *ax_type_str(const ax_type *t, char *buf, size_t size) { return ty_str(t, buf, size); }
const char *ax_scalar_name(ax_scalar s) { return (unsigned)s < AX_NSCALAR ? scalar_names[s] : "?"; }
size_t ax_scalar_size(ax_scalar s) { return (unsigned)s < AX_NSCALAR ? scalar_sizes[s] : 0; }
