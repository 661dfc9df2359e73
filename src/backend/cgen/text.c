/*
 * Text: growing buffers, the emission helpers every generator writes
 * through (lines, formatted names in the arena, fresh names, values), C
 * type names and locals (cgen.h).  Every generated name and line goes
 * through here, in the order the generators ask, which is what makes a
 * program's text deterministic (the same program gives the same bytes:
 * no pointers, no hash-order iteration, no time stamps), so its content
 * hash can be the compiled module's cache key.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cgen.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ buffers */

static void buf_grow(Buf *b, size_t need)
{
    if (b->oom || b->len + need + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + need + 1) cap *= 2;
    char *s = ax__realloc(b->s, cap);
    if (!s) {
        b->oom = true;
        return;
    }
    b->s = s;
    b->cap = cap;
}

void buf_put(Buf *b, const char *s) { buf_putn(b, s, strlen(s)); }

void buf_putn(Buf *b, const char *s, size_t n)
{
    buf_grow(b, n);
    if (b->oom) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

/* Formats into the room left when it fits (nearly always: one pass of
 * vsnprintf, not one to measure and one to write), else grows and formats
 * again. */
static void buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    size_t room = b->oom || !b->s ? 0 : b->cap - b->len;
    int n = vsnprintf(room ? b->s + b->len : NULL, room, fmt, aq);
    va_end(aq);
    if (n < 0) return;
    if ((size_t)n < room) {
        b->len += (size_t)n;
        return;
    }
    buf_grow(b, (size_t)n);
    if (b->oom) return;
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------ emission */

const char *cg_buf_text(G *g, const Buf *b, const char *empty)
{
    if (b->oom) {
        cg_fail(g, "cpu codegen: out of memory");
        return "0";
    }
    return b->s ? b->s : empty;
}

void cg_fail(G *g, const char *fmt, ...)
{
    if (g->failed) return;
    g->failed = true;
    if (g->err && g->errsize) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->err, g->errsize, fmt, ap);
        va_end(ap);
    }
}

const char *cg_fmt(G *g, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *s = n >= 0 ? arena_alloc(g->ar, (size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    if (!s) {
        cg_fail(g, "cpu codegen: out of memory");
        return "0";
    }
    return s;
}

void cg_line(G *g, const char *fmt, ...)
{
    for (int i = 0; i < g->ind; i++) buf_put(g->b, "    ");
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(g->b, fmt, ap);
    va_end(ap);
    buf_put(g->b, "\n");
}

/* Fresh names end in '_': fixed names (a0_1, s0_2, p1_0, x0, ...) and
 * type names (i64) never do, so they cannot clash. */
const char *cg_fresh(G *g, const char *prefix) { return cg_fmt(g, "%s%d_", prefix, (*g->tmp)++); }

Val cg_val(G *g, int n)
{
    Val v;
    v.n = n;
    v.v = arena_alloc(g->ar, sizeof *v.v * (size_t)(n > 0 ? n : 1));
    if (!v.v) {
        /* Out of memory: code generation has failed; hand out the sink so
         * callers' fixed writes (leaf 0) land somewhere harmless. */
        cg_fail(g, "cpu codegen: out of memory");
        v.v = g->sink;
        v.n = 0;
        return v;
    }
    /* Every leaf is an atom from the start: a caller that stops filling
     * leaves when generation fails (out of memory) must not leave NULLs
     * for the code that still reads them (cg_assign compares leaves). */
    for (int k = 0; k < n; k++) v.v[k] = "0";
    return v;
}

Val cg_slice(Val v, int off, int n)
{
    Val r;
    r.n = n;
    r.v = v.v + off;
    return r;
}

void cg_close(G *g)
{
    g->ind--;
    if (g->nhoist && g->ind < g->hoist_ind) g->nhoist = 0;   /* out of the row's block */
    cg_line(g, "}");
}

/* ------------------------------------------------------------ types */

static const char *const ctypes[AX_NSCALAR] = {"u8", "i8", "i16", "i32", "i64", "u8",
                                               "u16", "u32", "u64", "f32", "f64"};
static const char *const utypes[AX_NSCALAR] = {"u8", "u8", "u16", "u32", "u64", "u8",
                                               "u16", "u32", "u64", "u32", "u64"};

const char *cg_ctype(ax_scalar s) { return (unsigned)s < AX_NSCALAR ? ctypes[s] : "i64"; }
const char *cg_utype(ax_scalar s) { return (unsigned)s < AX_NSCALAR ? utypes[s] : "u64"; }

/* ------------------------------------------------------------ locals */

/* A lane array of scalar type s declared (zeroed: lanes past lane_n are
 * read, never used) at the kernel's head; its element of the current
 * lane, an atom for the code that uses it. */
const char *cg_lane_array(G *g, ax_scalar s, const char *prefix)
{
    const char *n = cg_fresh(g, prefix);
    Buf *b = g->b;
    int ind = g->ind;
    g->b = g->khead;
    g->ind = 1;
    cg_line(g, "%s %s[%d] = {0};", ctypes[s], n, g->nlane);
    g->b = b;
    g->ind = ind;
    return cg_fmt(g, "%s[%s]", n, g->lane);
}

/* A fresh local (G.lane_arr: lane array) named from prefix holding expr. */
static const char *new_local(G *g, ax_scalar s, const char *prefix, const char *expr)
{
    if (g->lane_arr) {
        const char *n = cg_lane_array(g, s, prefix);
        cg_line(g, "%s = %s;", n, expr);
        return n;
    }
    const char *n = cg_fresh(g, prefix);
    cg_line(g, "%s %s = %s;", ctypes[s], n, expr);
    return n;
}

/* A fresh local of scalar type s holding expr. */
const char *cg_local(G *g, ax_scalar s, const char *expr) { return new_local(g, s, "t", expr); }

Val cg_bind(G *g, const Type *t, Val v, const char *prefix)
{
    Val r = cg_val(g, v.n);
    for (int k = 0; k < v.n && !g->failed; k++) r.v[k] = new_local(g, ty_leaf(t, k), prefix, v.v[k]);
    return r;
}

Val cg_decl(G *g, const Type *t, const char *prefix)
{
    Val r = cg_val(g, t->width);
    for (int k = 0; k < r.n && !g->failed; k++) r.v[k] = new_local(g, ty_leaf(t, k), prefix, "0");
    return r;
}

void cg_assign(G *g, Val dst, Val v)
{
    if (g->failed) return;   /* the unit is discarded; leaves may be placeholders */
    for (int k = 0; k < dst.n && k < v.n; k++)
        if (strcmp(dst.v[k], v.v[k])) cg_line(g, "%s = %s;", dst.v[k], v.v[k]);
}

/* Is s a name or a literal (usable any number of times)? */
static bool is_atom(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

const char *cg_atom(G *g, const char *e) { return is_atom(e) ? e : cg_local(g, AX_I64, e); }

/* dst = v, through temporaries when v reads a leaf of dst that an earlier
 * assignment would overwrite (an operator that swaps components). */
void cg_update(G *g, const Type *t, Val dst, Val v)
{
    bool clash = false;
    for (int k = 0; k < v.n && !clash; k++)
        for (int m = 0; m < dst.n; m++)
            if (m != k && !strcmp(v.v[k], dst.v[m])) clash = true;
    if (clash) v = cg_bind(g, t, v, "u");
    cg_assign(g, dst, v);
}

/* Local arrays of n elements, one per leaf of type t, named prefix<k>_
 * (lanes, accumulators, a stencil's neighbourhood). */
Val cg_leaf_arrays(G *g, const Type *t, const char *prefix, int n)
{
    Val v = cg_val(g, t->width);
    for (int k = 0; k < v.n; k++) {
        v.v[k] = cg_fresh(g, prefix);
        cg_line(g, "%s %s[%d];", cg_ctype(ty_leaf(t, k)), v.v[k], n);
    }
    return v;
}

/* Element i of each leaf's array. */
Val cg_at(G *g, Val ptrs, const char *i)
{
    Val v = cg_val(g, ptrs.n);
    for (int l = 0; l < v.n; l++) v.v[l] = cg_fmt(g, "%s[%s]", ptrs.v[l], i);
    return v;
}

void cg_put(G *g, Val ptrs, const char *i, Val v)
{
    for (int l = 0; l < ptrs.n && l < v.n; l++) cg_line(g, "%s[%s] = %s;", ptrs.v[l], i, v.v[l]);
}

