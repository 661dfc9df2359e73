/*
 * The distributed executor's permute: when the combination is a built-in
 * reduction and the target is small against the source (a histogram),
 * each rank permutes into a whole private copy (rank 0's from the
 * defaults, the others' from the operator's identity) and the copies are
 * reduced across ranks (permute_reduce); else each (target, value) pair
 * goes to the rank that owns its target, to be combined there in order
 * (permute_owner).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nomem(MRun *r) { return mx_fail(r->m, AX_ERR_NOMEM, "axle mpi: out of memory"); }

static int permute_reduce(MRun *r, OpRun *u, ax_array *dflt, const Dist *dd, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    ax_array *init = mx_array(r, dflt->elt, dd->rank, dd->shape, false);
    if (!init) return -1;
    /* rank 0 starts from the defaults (gathered, by every rank, when
     * distributed) */
    if (cm_allgather(r, dd, dflt, init)) {
        ax_array_release(init);
        return -1;
    }
    if (m->me != 0 && !u->di.repl) {
        /* the other ranks start from the operator's identity */
        for (int c = 0; c < init->ncomp; c++) {
            ax_scalar s = ty_leaf(init->elt, c);
            Scalar id;
            id.u = 0;
            switch (o->redprim) {
            case P_MUL: id = s == AX_F32 ? (Scalar){.f32 = 1.0f} : s == AX_F64 ? (Scalar){.f64 = 1.0} : (Scalar){.u = 1}; break;
            case P_ADD: if (s == AX_F32) id.f32 = -0.0f; else if (s == AX_F64) id.f64 = -0.0; break;
            case P_MIN: id = sc_norm((Scalar){.u = sc_is_signed(s) ? (UINT64_MAX >> 1) >> (64 - sc_bits(s)) : UINT64_MAX}, s); break;
            case P_MAX: if (sc_is_signed(s)) id.i = -((int64_t)1 << (sc_bits(s) - 1)); break;
            case P_BAND: id = sc_norm((Scalar){.u = UINT64_MAX}, s); break;
            case P_AND: id.b = true; break;
            default: break;
            }
            for (int64_t i = 0; i < init->size; i++) sc_store(init->buf[c], s, i, id);
        }
    }
    exec_bind(r, u, o->pinit, init);
    ax_array_release(init);
    if (exec_fetches(r, u, NULL) || mx_local(r, o->lx, out)) return -1;
    if (!u->di.repl && cm_allreduce_array(r, o, out[0])) return -1;
    return exec_set_repl(r, out[0]);
}

static int permute_owner(MRun *r, OpRun *u, ax_array *dflt, const Dist *dd0, ax_array **out)
{
    MOp *o = u->o;
    ax_mpi *m = r->m;
    int np = m->np, rt = dd0->rank;
    const Type *elt = dflt->elt;
    size_t es = mx_elt_size(elt), rec = 8 + es;
    /* the target's blocks: the defaults' own, or blocks of a replicated one */
    Dist dd;
    ax_array *mine = NULL, *tv = NULL;
    int rc = 0;
    if (rt == 0) {
        /* a rank-0 target: every rank combines every pair into its copy */
        dist_repl(&dd, 0, dd0->shape);
        int64_t none[1] = {0};
        if ((mine = mx_array(r, elt, 0, none, false)))
            for (int c = 0; c < mine->ncomp; c++) memcpy(mine->buf[c], dflt->buf[c], mx_leaf_size(elt, c));
    } else if (dd0->repl) {
        if (dist_blocks(m, &dd, rt, dd0->shape)) return nomem(r);
        int64_t sh[AX_MAX_RANK], rs = dist_rowsize(&dd);
        memcpy(sh, dd.shape, sizeof sh);
        sh[0] = dd.off[m->me + 1] - dd.off[m->me];
        ax_array *v = exec_view(r, dflt, dd.off[m->me] * rs, rt, sh);
        mine = v ? mx_array(r, elt, rt, sh, false) : NULL;
        if (mine)
            for (int c = 0; c < mine->ncomp; c++)
                memcpy(mine->buf[c], v->buf[c], (size_t)mine->size * mx_leaf_size(elt, c));
        ax_array_release(v);
    } else {
        dist_copy(&dd, dd0);
        if ((dd.off = ax__malloc(sizeof *dd.off * (size_t)(np + 1))))
            memcpy(dd.off, dd0->off, sizeof *dd.off * (size_t)(np + 1));
        mine = dd.off ? ax_array_retain(dflt) : NULL;
    }
    if (!mine) {
        dist_free(&dd);
        return nomem(r);
    }
    int64_t rs = dist_rowsize(&dd);
    int64_t *cnt = ax__calloc((size_t)np, sizeof *cnt), *fill = ax__calloc((size_t)np, sizeof *fill);
    char *buf = NULL, *got = NULL;
    int64_t n = 0, ngot = 0;
    if (!cnt || !fill) {
        rc = nomem(r);
        goto out;
    }
    double T0 = mx_now_ms();
    if (u->hi > u->lo || u->di.repl) {
        if ((rc = mx_local(r, o->tv, &tv))) goto out;
        n = tv->size;
    }
    double T1 = mx_now_ms();
    /* each element's target: dropped (ax_ignore), checked, its owner and
     * its position in the owner's block */
    int64_t *tl = ax__malloc(sizeof *tl * (size_t)(n + 1));
    int *own = ax__malloc(sizeof *own * (size_t)(n + 1));
    if (!tl || !own) {
        free(tl);
        free(own);
        rc = nomem(r);
        goto out;
    }
    const int64_t *tix[AX_MAX_RANK];
    for (int d = 0; d < rt; d++) tix[d] = tv ? tv->buf[d] : NULL;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        int64_t ix[AX_MAX_RANK], lin = 0;
        bool ignore = rt >= 1, inside = true;
        for (int d = 0; d < rt; d++) {
            ix[d] = tix[d][i];
            if (ix[d] != -1) ignore = false;
            if (ix[d] < 0 || ix[d] >= dd.shape[d]) inside = false;
            lin = lin * dd.shape[d] + ix[d];
        }
        own[i] = -1;
        if (ignore) continue;
        if (!inside) {
            if (r->cx->opt.unsafe) continue;
            char a[256], b[256];
            host_fmt_ints(a, sizeof a, rt, ix);
            host_fmt_ints(b, sizeof b, rt, dd.shape);
            rc = mx_fail(m, AX_ERR_INDEX, "ax_permute: target index (%s) out of bounds for shape (%s)", a, b);
            break;
        }
        if (rt == 0) {   /* (every rank combines every pair: below) */
            own[i] = m->me;
            tl[i] = 0;
            continue;
        }
        int q = np == 1 ? 0 : dist_owner(&dd, np, rs > 1 ? lin / rs : lin);
        /* every rank ran every element (the iteration whole): each keeps its own */
        if (u->di.repl && q != m->me) continue;
        own[i] = q;
        tl[i] = lin - dd.off[q] * rs;
        cnt[q]++;
    }
    if (rc == 0 && rt == 0) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) k += own[i] >= 0;
        for (int q = 0; q < np; q++) cnt[q] = u->di.repl && q != m->me ? 0 : k;
    }
    /* the records for rank q: its positions, then each component's values
     * (a block of cnt[q] each), in the order of the source */
    size_t lsz[256];
    for (int c = 0; c < elt->width && c < 256; c++) lsz[c] = mx_leaf_size(elt, c);
    int64_t tot = 0;
    for (int q = 0; q < np; q++) {
        fill[q] = tot;
        tot += cnt[q];
    }
    if (rc == 0 && elt->width > 256) rc = mx_fail(m, AX_ERR_BACKEND, "axle mpi: ax_permute: an element of more than 256 leaves");
    if (rc == 0 && !(buf = ax__malloc(rec * (size_t)tot + 1))) rc = nomem(r);
    if (rc == 0) {
        int64_t *at = ax__malloc(sizeof *at * (size_t)np);
        if (!at) {
            rc = nomem(r);
        } else {
            for (int q = 0; q < np; q++) at[q] = 0;
            for (int64_t i = 0; i < n; i++) {
                if (own[i] < 0) continue;
                for (int q = rt == 0 ? 0 : own[i]; q < (rt == 0 ? np : own[i] + 1); q++) {
                    if (!cnt[q]) continue;
                    char *seg = buf + rec * (size_t)fill[q];
                    int64_t k = at[q]++;
                    memcpy(seg + 8 * (size_t)k, &tl[i], 8);
                    size_t base = 8 * (size_t)cnt[q];
                    for (int c = 0; c < elt->width; c++) {
                        const char *src = (const char *)tv->buf[rt + c] + (size_t)i * lsz[c];
                        char *dst = seg + base + (size_t)k * lsz[c];
                        switch (lsz[c]) {
                        case 1: *(uint8_t *)(void *)dst = *(const uint8_t *)(const void *)src; break;
                        case 2: memcpy(dst, src, 2); break;
                        case 4: memcpy(dst, src, 4); break;
                        default: memcpy(dst, src, lsz[c]); break;
                        }
                        base += lsz[c] * (size_t)cnt[q];
                    }
                }
            }
            free(at);
        }
    }
    free(tl);
    free(own);
    if (rc) goto out;
    /* the exchange (nothing to send when every rank kept its own) */
    int64_t *rcnt = ax__calloc((size_t)np, sizeof *rcnt);
    if (!rcnt) {
        rc = nomem(r);
        goto out;
    }
    if (u->di.repl || np == 1) {
        got = buf;
        buf = NULL;
        ngot = rcnt[m->me] = cnt[m->me];
    } else {
        char *b = buf;
        buf = NULL;
        rc = cm_exchange(r, b, cnt, rec, &got, &ngot, rcnt);
    }
    if (rc) {
        free(rcnt);
        goto out;
    }
    /* what arrived, in rank order, combined into this rank's block */
    ax_array *tg = mx_array(r, ty_i64(), 1, &ngot, false), *vs = mx_array(r, elt, 1, &ngot, false);
    if (!tg || !vs) {
        ax_array_release(tg);
        ax_array_release(vs);
        free(rcnt);
        rc = -1;
        goto out;
    }
    const char *seg = got;
    int64_t k0 = 0;
    for (int q = 0; q < np; q++) {
        int64_t c_q = rcnt[q];
        if (!c_q) continue;
        memcpy((int64_t *)tg->buf[0] + k0, seg, 8 * (size_t)c_q);
        size_t base = 8 * (size_t)c_q;
        for (int c = 0; c < elt->width; c++) {
            memcpy((char *)vs->buf[c] + (size_t)k0 * lsz[c], seg + base, lsz[c] * (size_t)c_q);
            base += lsz[c] * (size_t)c_q;
        }
        seg += base;
        k0 += c_q;
    }
    free(rcnt);
    exec_bind(r, u, o->own_d, mine);
    exec_bind(r, u, o->own_t, tg);
    exec_bind(r, u, o->own_v, vs);
    ax_array_release(tg);
    ax_array_release(vs);
    double T2 = mx_now_ms();
    if ((rc = mx_local(r, o->own, out))) goto out;
    if (m->trace) fprintf(stderr, "axle: mpi trace: rank %d permute: pairs %.1f ms, sorted %.1f ms, combined %.1f ms\n", m->me, T1 - T0, T2 - T1, mx_now_ms() - T2);
    {
        Dist d = dd;
        rc = mx_set_dist(r, out[0], &d);
    }
out:
    ax_array_release(mine);
    ax_array_release(tv);
    free(cnt);
    free(fill);
    free(buf);
    free(got);
    dist_free(&dd);
    return rc;
}

int exec_permute(MRun *r, OpRun *u, ax_array **out)
{
    MOp *o = u->o;
    int di = o->opd[0];   /* the defaults: the first operand */
    ax_array *dflt = u->arr[di];
    const Dist *dd = &u->dist[di];
    int64_t tsize = dist_size(dd), ssize = 1;
    for (int d = 0; d < o->irank; d++) ssize *= u->ish[d];
    /* a private copy per rank and one reduction when the operator is a
     * built-in one and the target is small against the source (a
     * histogram); else (target, value) pairs sent to the owners */
    if (o->builtin && (u->di.repl || tsize * r->m->np <= ssize)) {
        snprintf(r->cur->plan, sizeof r->cur->plan, "local copies + allreduce");
        return permute_reduce(r, u, dflt, dd, out);
    }
    snprintf(r->cur->plan, sizeof r->cur->plan, "(target, value) to owners");
    return permute_owner(r, u, dflt, dd, out);
}
