/*
 * Sorting (ax_sort, ax_sort_by): a stable sort of each row (the innermost
 * dimension) by scalar keys, built from the operations every backend
 * already has, so that it runs on every backend, under every switch and
 * in the distributed executor, and the producer of its keys fuses into
 * its first pass.
 *
 * The algorithm is the least-significant-digit radix sort of one bit a
 * pass, Blelloch's split (Vector Models for Data-Parallel Computing,
 * 1990, s.3.4.1; the Accelerate paper's radix sort benchmark is the
 * same): for bit b, each element's place is the number of elements
 * before it whose bit is 0 if its own is 0, else the row's count of
 * zeros plus the number of ones before it (an exclusive scan), and every
 * carried array is permuted there.  A split is stable, so after the
 * passes over every bit, from the lowest, the rows are sorted and equal
 * keys keep their order.  The passes are an ax_for over the bit number
 * (data in the loop's state): one compile for any key width.
 *
 * Keys are first mapped to unsigned integers whose order is the wanted
 * one: unsigned keys as they are, signed ones with the sign bit flipped,
 * floats in IEEE totalOrder (negative ones with every bit flipped,
 * others with the sign bit set: -inf < ... < -0.0 < +0.0 < ... < +inf)
 * with every NaN mapped to the largest value (last, in its input order);
 * descending order flips every bit of that.  Integer keys are mapped
 * back at the end; float keys travel as they are beside the mapped ones
 * and come out unchanged (a NaN's payload included).
 *
 * The cost is a scan and a permute per bit of the key (32 passes for an
 * i32): a native radix sort of 8 bits a pass is several times faster
 * (docs/guide/language.md).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "build.h"

typedef struct Sort {
    ax_scalar key;     /* the keys' scalar type */
    ax_scalar bits;    /* the unsigned type of the mapped keys */
    int width;         /* their bits: the number of passes */
    bool descending;
    int rank;
    int ncarry;        /* arrays permuted along: the mapped keys first */
    bool originals;    /* the original keys travel too (floats: a NaN's bits);
                          integer keys are mapped back at the end instead */
    const struct Place *place;   /* per pass: what the places are read from */
    ax_exp step;       /* per pass: the bit */
} Sort;

static ax_scalar unsigned_of(int bytes)
{
    return bytes == 1 ? AX_U8 : bytes == 2 ? AX_U16 : bytes == 4 ? AX_U32 : AX_U64;
}

/* All ones of type s, and the sign bit of type s. */
static ax_exp ones(ax_scalar s) { return ax_bnot(ax_cvt(ax_u8(0), s)); }
static ax_exp sign_bit(ax_scalar s, int width) { return ax_shl(ax_cvt(ax_u8(1), s), ax_i32(width - 1)); }

/* A key as an unsigned integer in the order wanted. */
static ax_exp order_key(ax_exp k, void *env)
{
    const Sort *s = env;
    ax_scalar u = s->bits;
    ax_exp r;
    switch (s->key) {
    case AX_BOOL: case AX_U8: case AX_U16: case AX_U32: case AX_U64:
        r = ax_cvt(k, u);
        break;
    case AX_I8: case AX_I16: case AX_I32: case AX_I64:
        r = ax_bxor(ax_bitcast(k, u), sign_bit(u, s->width));
        break;
    default: {   /* f32, f64: totalOrder, every NaN last */
        ax_exp b = ax_bitcast(k, u), sb = sign_bit(u, s->width);
        ax_exp neg = ax_ne(ax_band(b, sb), ax_cvt(ax_u8(0), u));
        r = ax_cond(ax_is_nan(k), ones(u), ax_cond(neg, ax_bnot(b), ax_bor(b, sb)));
        break;
    }
    }
    return s->descending ? ax_bnot(r) : r;
}

/* 1 where the pass's bit of the mapped key is 0 (i64, for the scan). */
static ax_exp is_zero(ax_exp k, void *env)
{
    const Sort *s = env;
    ax_exp bit = ax_band(ax_shr(k, s->step), ax_cvt(ax_u8(1), s->bits));
    return ax_cond(ax_eq(bit, ax_cvt(ax_u8(0), s->bits)), ax_i64(1), ax_i64(0));
}

/* The place of the element at ix: zeros before it, or all the row's
 * zeros and the ones before it. */
typedef struct Place {
    const Sort *s;
    ax_acc zeros, before, total;
} Place;

/* A mapped integer key back to the key (order_key's inverse). */
static ax_exp key_of(ax_exp r, void *env)
{
    const Sort *s = env;
    if (s->descending) r = ax_bnot(r);
    switch (s->key) {
    case AX_I8: case AX_I16: case AX_I32: case AX_I64:
        return ax_bitcast(ax_bxor(r, sign_bit(s->bits, s->width)), s->key);
    default:
        return ax_cvt(r, s->key);
    }
}

static ax_exp place(ax_exp ix, void *env)
{
    const Place *p = env;
    int r = p->s->rank;
    ax_exp i = ax_index_get(ix, r - 1), zb = ax_at(p->before, ix);
    ax_exp row[AX_MAX_RANK];
    for (int d = 0; d < r - 1; d++) row[d] = ax_index_get(ix, d);
    ax_exp tz = ax_at(p->total, ax_index(r - 1, row));
    return ax_cond(ax_eq(ax_at(p->zeros, ix), ax_i64(1)), zb, ax_add(tz, ax_sub(i, zb)));
}

/* The permutes' target: the place computed where it is used (no array
 * of places is made). */
static ax_exp to_place(ax_exp ix, void *env)
{
    const Sort *s = env;
    ax_exp c[AX_MAX_RANK];
    for (int d = 0; d < s->rank - 1; d++) c[d] = ax_index_get(ix, d);
    c[s->rank - 1] = place(ix, (void *)s->place);
    return ax_index(s->rank, c);
}

static ax_acc split(ax_exp step, ax_acc st, void *env)
{
    Sort *s = env;
    s->step = step;
    ax_acc bits = ax_aget(st, 0);
    ax_acc zeros = ax_map(is_zero, s, bits);
    ax_acc ex = ax_scanl_ex(ax_fn_add, NULL, ax_i64(0), zeros);
    Place p = {s, zeros, ax_aget(ex, 0), ax_aget(ex, 1)};
    s->place = &p;
    ax_acc out[3];
    for (int k = 0; k < s->ncarry; k++) {
        ax_acc a = ax_aget(st, k);
        out[k] = ax_permute(ax_fn_fst, NULL, a, to_place, s, a);
    }
    return ax_atuple(s->ncarry, out);
}

/* keys sorted (and vals with them): the pair (sorted keys, sorted vals;
 * without vals, the keys twice). */
static ax_acc sort_rows(const char *what, ax_acc keys, ax_acc vals, bool descending)
{
    if (!keys) return NULL;
    ax_ctx *cx = ax_acc_ctx(keys);
    const ax_type *kt = ax_acc_elem(keys);
    int rank = ax_acc_rank(keys);
    if (!kt || rank < 1)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the keys are %s; they must be an array of rank 1 or more", what,
                         tstr(cx, keys->type));
    if (ax_type_kind_of(kt) != AX_KIND_SCALAR)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the keys are of type %s; they must be of a scalar type", what,
                         tstr(cx, kt));
    if (vals) {
        if (vals->cx != cx) return ctx_error(cx, AX_ERR_BUILD, "%s: the values were built in another context", what);
        if (ax_acc_rank(vals) != rank)
            return ctx_error(cx, AX_ERR_BUILD, "%s: the values %s do not have the keys' rank %d", what,
                             tstr(cx, vals->type), rank);
    }
    Sort s = {.key = ax_type_scalar_of(kt), .descending = descending, .rank = rank};
    int bytes = (int)ax_scalar_size(s.key);
    s.bits = unsigned_of(bytes);
    s.width = s.key == AX_BOOL ? 1 : 8 * bytes;
    /* the values take the keys' shape (a reshape: another size is a
     * run-time shape error) */
    if (vals) vals = ax_reshape(ax_shape(keys), vals);
    s.originals = s.key == AX_F32 || s.key == AX_F64;
    ax_acc init[3] = {ax_map(order_key, &s, keys)};
    s.ncarry = 1;
    if (s.originals) init[s.ncarry++] = keys;
    if (vals) init[s.ncarry++] = vals;
    ax_acc r = ax_for(ax_i64(s.width), split, &s, ax_atuple(s.ncarry, init));
    if (!r) return NULL;
    /* (sorted keys, sorted vals or NULL) */
    ax_acc sorted = s.originals ? ax_aget(r, 1) : ax_map(key_of, &s, ax_aget(r, 0));
    return ax_atuple2(sorted, vals ? ax_aget(r, s.ncarry - 1) : sorted);
}

ax_acc ax_sort(ax_acc keys, bool descending)
{
    ax_acc r = sort_rows("ax_sort", keys, NULL, descending);
    return r ? ax_aget(r, 0) : NULL;
}

ax_acc ax_sort_by(ax_acc keys, ax_acc vals, bool descending)
{
    if (keys && !vals) return ctx_error(keys->cx, AX_ERR_BUILD, "ax_sort_by: the values are NULL");
    return sort_rows("ax_sort_by", keys, vals, descending);
}
