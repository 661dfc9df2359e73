/*
 * The GPU's sort: a least-significant-digit radix sort of 8 bits a pass,
 * every pass three kernels, portable to CUDA and OpenCL (no forward
 * progress between groups is assumed; Satish, Harris and Garland,
 * "Designing efficient sorting algorithms for manycore GPUs", 2009, is
 * the scheme):
 *
 *   count    each group counts the digits of its chunk of a row (shared
 *            counters), into cnt[(row * 256 + digit) * chunks + chunk];
 *   scan     one group turns those counts into exclusive offsets, in
 *            that order (row, then digit, then chunk), which is each
 *            chunk's first place for each digit: earlier rows' counts add
 *            up to whole rows, so one scan serves every row;
 *   scatter  each group walks its chunk a tile (a group's width) at a
 *            time: the tile is sorted by the digit in shared memory with
 *            eight one-bit splits (stable), and each element goes to its
 *            digit's next place, after the tile's elements of that digit
 *            before it; the places then advance by the tile's counts.
 *
 * The keys move as they are (a NaN keeps its bits); the digit is taken
 * from the key mapped to an unsigned integer in the wanted order, as the
 * CPU's sort does (runtime/sort.c).  Every pass runs (the host does not
 * read the counts back), the passes alternating between the output and a
 * scratch buffer so that the last writes the output.  With values, a
 * permutation of 32-bit positions travels with the keys (the first pass
 * writes the positions) and a last kernel gathers the values through it.
 * Arrays of 2^32 elements or more, which the permutation cannot index,
 * and many short rows, whose counters would outweigh their keys, sort on
 * the host (exec.c).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

/* The unsigned type of the keys' width. */
static const char *utype(int w) { return w == 1 ? "u8" : w == 2 ? "u16" : w == 4 ? "u32" : "u64"; }

/* The digit function axs_<num>_dig(key bits, pass): the key mapped to its
 * order (runtime/sort.c's mapping), flipped when descending. */
static void emit_digit(G *g, const Node *x)
{
    ax_scalar s = x->kid[0]->type->elt->s;
    int w = (int)ax_scalar_size(s);
    const char *U = utype(w);
    cg_line(g, "AX_DEV u32 axs_%d_dig(%s x, i64 b)", x->num, U);
    cg_line(g, "{");
    cg_open(g);
    cg_line(g, "const %s S = (%s)((%s)1 << %d);", U, U, U, 8 * w - 1);
    const char *m;
    switch (s) {
    case AX_I8: case AX_I16: case AX_I32: case AX_I64: m = "(x ^ S)"; break;
    case AX_F32: m = "((x & ~S) > (u32)0x7f800000 ? ~(u32)0 : (x & S) ? ~x : (x | S))"; break;
    case AX_F64: m = "((x & ~S) > (u64)0x7ff0000000000000 ? ~(u64)0 : (x & S) ? ~x : (x | S))"; break;
    default: m = "x"; break;
    }
    cg_line(g, "const %s k = (%s)%s(%s)%s;", U, U, x->a ? "~" : "", U, m);
    cg_line(g, "return (u32)(k >> (8 * b)) & 255u;");
    cg_close(g);
}

/* The buffers the count and scatter kernels name: the keys' input,
 * output and scratch, the counts, this pass's source (and, for the
 * scatter, its destination and the permutations). */
static void pointers(G *g, const Node *x, bool scatter)
{
    const CgNode *cn = g->cn;
    int w = (int)ax_scalar_size(x->kid[0]->type->elt->s), in = cn->nout;
    const char *U = utype(w);
    cg_line(g, "const i64 W_ = %d, b_ = w_;", w);
    cg_line(g, "AX_G %s *ko_ = (AX_G %s *)a0_0;", U, U);
    cg_line(g, "AX_G %s *kt_ = (AX_G %s *)s2_;", U, U);
    cg_line(g, "AX_G i64 *cnt_ = (AX_G i64 *)s1_;");
    /* pass b reads what pass b - 1 wrote; the last writes the output */
    cg_line(g, "const AX_G %s *src_ = b_ == 0 ? (const AX_G %s *)a%d_0 : (W_ - b_) %% 2 == 0 ? "
               "(const AX_G %s *)ko_ : (const AX_G %s *)kt_;", U, U, in, U, U);
    if (!scatter) return;
    cg_line(g, "AX_G %s *dst_ = (W_ - 1 - b_) %% 2 == 0 ? ko_ : kt_;", U);
    if (x->n > 1) {
        cg_line(g, "const i64 tot_ = n%d;", in);
        cg_line(g, "AX_G u32 *p1_ = (AX_G u32 *)(s2_ + ((tot_ * W_ + 63) & ~(i64)63));");
        cg_line(g, "AX_G u32 *p2_ = p1_ + ((tot_ + 15) & ~(i64)15);");
        cg_line(g, "AX_G u32 *dp_ = b_ %% 2 == 0 ? p1_ : p2_;");
        cg_line(g, "const AX_G u32 *sp_ = (b_ - 1) %% 2 == 0 ? (const AX_G u32 *)p1_ : (const AX_G u32 *)p2_;");
    }
}

/* for each (row, chunk) of the group: row_, g_, [lo_, hi_) */
static void chunk_loop(G *g)
{
    cg_line(g, "for (i64 vg = ax_grp; vg < m_; vg += ax_ngrp) {");
    cg_open(g);
    cg_line(g, "const i64 row_ = vg / nch_, g_ = vg %% nch_;");
    cg_line(g, "const i64 lo_ = row_ * n_ + g_ * ch_, hi_ = row_ * n_ + ax_min64((g_ + 1) * ch_, n_);");
}

void gpu_emit_sort(G *g)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    int num = x->num, w = (int)ax_scalar_size(x->kid[0]->type->elt->s);
    const char *U = utype(w);
    emit_digit(g, x);

    /* count */
    gpu_kernel_begin(g, R_COUNT);
    cg_line(g, "AX_SHARED u32 h_[256];");
    pointers(g, x, false);
    chunk_loop(g);
    cg_line(g, "for (i64 d = ax_lid; d < 256; d += AX_WG) h_[d] = 0;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 i = lo_ + ax_lid; i < hi_; i += AX_WG) ax_ladd32(&h_[axs_%d_dig(src_[i], b_)], 1u);", num);
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 d = ax_lid; d < 256; d += AX_WG) cnt_[(row_ * 256 + d) * nch_ + g_] = (i64)h_[d];");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_close(g);

    /* scan: one group, a contiguous stretch of the counts a thread */
    gpu_kernel_begin(g, R_SCAN);
    cg_line(g, "AX_SHARED i64 sh_[AX_WG];");
    cg_line(g, "AX_G i64 *cnt_ = (AX_G i64 *)s1_;");
    cg_line(g, "const i64 T = m_ * 256, per = (T + AX_WG - 1) / AX_WG;");
    cg_line(g, "const i64 lo = ax_lid * per, hi = ax_min64(lo + per, T);");
    cg_line(g, "i64 s = 0;");
    cg_line(g, "for (i64 i = lo; i < hi; i++) s += cnt_[i];");
    cg_line(g, "sh_[ax_lid] = s;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "if (ax_lid == 0) {");
    cg_open(g);
    cg_line(g, "i64 run = 0;");
    cg_line(g, "for (i64 t = 0; t < AX_WG; t++) {");
    cg_open(g);
    cg_line(g, "const i64 v = sh_[t];");
    cg_line(g, "sh_[t] = run;");
    cg_line(g, "run += v;");
    cg_close(g);
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_line(g, "i64 run = sh_[ax_lid];");
    cg_line(g, "for (i64 i = lo; i < hi; i++) {");
    cg_open(g);
    cg_line(g, "const i64 v = cnt_[i];");
    cg_line(g, "cnt_[i] = run;");
    cg_line(g, "run += v;");
    cg_close(g);
    cg_close(g);

    /* scatter */
    gpu_kernel_begin(g, R_SCATTER);
    cg_line(g, "AX_SHARED %s k_[AX_WG];", U);
    if (x->n > 1) cg_line(g, "AX_SHARED u32 q_[AX_WG];");
    cg_line(g, "AX_SHARED u32 f_[AX_WG];");
    cg_line(g, "AX_SHARED u32 dd_[AX_WG];");
    cg_line(g, "AX_SHARED i64 base_[256];");
    cg_line(g, "AX_SHARED u32 st_[256];");
    pointers(g, x, true);
    chunk_loop(g);
    cg_line(g, "for (i64 d = ax_lid; d < 256; d += AX_WG) base_[d] = cnt_[(row_ * 256 + d) * nch_ + g_];");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 tb = lo_; tb < hi_; tb += AX_WG) {");
    cg_open(g);
    cg_line(g, "const i64 i = tb + ax_lid, nv = ax_min64(AX_WG, hi_ - tb);");
    /* a place past the chunk sorts last (digit 255, after the chunk's
     * own 255s: the splits are stable) and is written nowhere */
    cg_line(g, "%s key = i < hi_ ? src_[i] : (%s)0;", U, U);
    cg_line(g, "u32 d = i < hi_ ? axs_%d_dig(key, b_) : 255u;", num);
    if (x->n > 1) cg_line(g, "u32 pv = i < hi_ ? (b_ == 0 ? (u32)i : sp_[i]) : 0u;");
    cg_line(g, "for (i64 bit = 0; bit < 8; bit++) {");
    cg_open(g);
    cg_line(g, "const u32 z = ((d >> bit) & 1u) == 0u;");
    cg_line(g, "f_[ax_lid] = z;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "for (i64 s = 1; s < AX_WG; s <<= 1) {");
    cg_open(g);
    cg_line(g, "const u32 y = ax_lid >= s ? f_[ax_lid - s] : 0u;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "f_[ax_lid] += y;");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    /* zeros up to and including this one; all the tile's zeros */
    cg_line(g, "const i64 zin = (i64)f_[ax_lid], Z = (i64)f_[AX_WG - 1];");
    cg_line(g, "const i64 np = z ? zin - 1 : Z + (ax_lid - zin);");
    cg_line(g, "ax_barrier();");
    cg_line(g, "k_[np] = key;");
    cg_line(g, "dd_[np] = d;");
    if (x->n > 1) cg_line(g, "q_[np] = pv;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "key = k_[ax_lid];");
    cg_line(g, "d = dd_[ax_lid];");
    if (x->n > 1) cg_line(g, "pv = q_[ax_lid];");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    /* the tile sorted by digit: each digit's run starts at st_[d] */
    cg_line(g, "if (ax_lid < nv && (ax_lid == 0 || dd_[ax_lid - 1] != d)) st_[d] = (u32)ax_lid;");
    cg_line(g, "ax_barrier();");
    cg_line(g, "if (ax_lid < nv) {");
    cg_open(g);
    cg_line(g, "const i64 pos = base_[d] + (ax_lid - (i64)st_[d]);");
    cg_line(g, "dst_[pos] = key;");
    if (x->n > 1) cg_line(g, "dp_[pos] = pv;");
    cg_close(g);
    cg_line(g, "ax_barrier();");
    cg_line(g, "if (ax_lid < nv && (ax_lid == nv - 1 || dd_[ax_lid + 1] != d)) base_[d] += ax_lid - (i64)st_[d] + 1;");
    cg_line(g, "ax_barrier();");
    cg_close(g);
    cg_close(g);
    cg_close(g);

    if (x->n < 2) return;
    /* the values gathered through the last pass's permutation */
    gpu_kernel_begin(g, R_PERM);
    cg_line(g, "const i64 tot_ = n%d;", cn->nout);
    cg_line(g, "const AX_G u32 *p1_ = (const AX_G u32 *)(s2_ + ((tot_ * %d + 63) & ~(i64)63));", w);
    /* (the last pass, W - 1, wrote p1 when W - 1 is even) */
    cg_line(g, "const AX_G u32 *pf_ = p1_%s;", (w - 1) % 2 == 0 ? "" : " + ((tot_ + 15) & ~(i64)15)");
    gpu_grid_loop(g, "i", "tot_");
    const Type *vt = x->kid[1]->type->elt;
    g->pos = "i";
    Val v = cg_read_lin(g, 1, "(i64)pf_[i]");
    cg_store(g, 1, vt, "i", v);
    cg_close(g);
    cg_close(g);
}
