/*
 * Distributed arrays (axle_mpi.h): made from blocks, scattered, split or
 * replicated from a whole array, gathered.  Their distributions: dist.c.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ax_darray {
    ax_mpi *m;
    ax_array *local;
    Dist d;
    int refs;
    ax_darray *prev, *next;     /* m's list (ax_mpi_free frees what is left) */
};

/* ------------------------------------------------------------ distributed arrays */

/* d takes the reference to local and a copy of dist (its offsets too). */
static ax_darray *dr_make(ax_mpi *m, ax_array *local, const Dist *dist)
{
    ax_darray *d = ax__calloc(1, sizeof *d);
    if (!d) {
        ax_array_release(local);
        return NULL;
    }
    d->m = m;
    d->local = local;
    d->d = *dist;
    d->d.off = NULL;
    if (!dist->repl) {
        d->d.off = ax__malloc(sizeof *d->d.off * (size_t)(m->np + 1));
        if (!d->d.off) {
            ax_array_release(local);
            free(d);
            return NULL;
        }
        memcpy(d->d.off, dist->off, sizeof *d->d.off * (size_t)(m->np + 1));
    }
    d->refs = 1;
    d->next = m->darrays;
    if (d->next) d->next->prev = d;
    m->darrays = d;
    return d;
}

ax_darray *mx_darray_new(ax_mpi *m, ax_array *local, const Dist *dist) { return dr_make(m, local, dist); }

const Dist *mx_darray_dist(const ax_darray *d) { return &d->d; }
ax_darray *mx_darray_next(const ax_darray *d) { return d->next; }

void mx_darray_free(ax_darray *d)
{
    ax_mpi *m = d->m;
    if (d->prev) d->prev->next = d->next;
    else if (m->darrays == d) m->darrays = d->next;
    if (d->next) d->next->prev = d->prev;
    ax_array_release(d->local);
    free(d->d.off);
    free(d);
}

ax_array *ax_darray_local(const ax_darray *d) { return d ? d->local : NULL; }
int ax_darray_rank(const ax_darray *d) { return d ? d->d.rank : -1; }
const int64_t *ax_darray_shape(const ax_darray *d) { return d ? d->d.shape : NULL; }
int64_t ax_darray_first_row(const ax_darray *d)
{
    return !d || d->d.repl ? 0 : d->d.off[d->m->me];
}
bool ax_darray_replicated(const ax_darray *d) { return d && d->d.repl; }

ax_darray *ax_darray_retain(ax_darray *d)
{
    if (d) d->refs++;
    return d;
}

void ax_darray_release(ax_darray *d)
{
    if (d && --d->refs == 0) mx_darray_free(d);
}

/* A copy of rows r0..r1 of a (an array of the context). */
static ax_array *copy_rows(ax_mpi *m, const ax_array *a, int64_t r0, int64_t r1)
{
    int64_t sh[AX_MAX_RANK], rs = 1;
    for (int i = 0; i < a->rank; i++) sh[i] = a->shape[i];
    for (int i = 1; i < a->rank; i++) rs *= a->shape[i];
    if (a->rank > 0) sh[0] = r1 - r0;
    else r0 = 0;
    ax_array *b = array_alloc(m->cx, a->elt, a->rank, sh, false);
    if (!b) return NULL;
    for (int c = 0; c < a->ncomp; c++) {
        size_t sz = mx_leaf_size(a->elt, c);
        memcpy(b->buf[c], (const char *)a->buf[c] + (size_t)(r0 * rs) * sz, (size_t)b->size * sz);
    }
    return b;
}

/* The checks of an array argument: NULL with a message. */
static const char *bad_array(ax_mpi *m, const ax_array *a, bool rows)
{
    if (!a) return "the array is NULL";
    if (a->cx != m->cx) return "the array belongs to another context than ax_mpi_ctx(m)";
    if (rows && a->rank < 1) return "the array has rank 0 (no rows to distribute)";
    if (array_host((ax_array *)a)) return "the array cannot be read";
    return NULL;
}

/* A run's state for the transfers of a call that runs no program (they
 * count no statistics). */
static void bare_run(MRun *r, ax_mpi *m)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    r->cx = m->cx;
}

/* MPI's error e of a call that did not start, on the local context. */
static int mpi_error(ax_mpi *m, int e, const char *what)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(e, s, &len);
    return mx_fail(m, AX_ERR_BACKEND, "%s failed: %s", what, s);
}

ax_darray *ax_mpi_from_block(ax_mpi *m, ax_array *block)
{
    if (!m) return NULL;
    const char *bad = bad_array(m, block, true);
    ax_array *b = NULL;
    if (bad) mx_fail(m, AX_ERR_ARG, "ax_mpi_from_block: %s", bad);
    else if (!(b = copy_rows(m, block, 0, block->shape[0]))) mx_fail(m, AX_ERR_NOMEM, "ax_mpi_from_block: out of memory");
    /* the blocks' element type, dimensions and inner extents alike (the
     * outer extent is each rank's own number of rows) */
    AgItem it[AX_MAX_RANK + 1], all[AG_PER_ARRAY];
    Dist layout;
    if (b) dist_repl(&layout, b->rank, b->shape);
    cm_items_array(m, all, b ? &layout : NULL, b, "the block", -1);
    int n = 0;
    for (int i = 0; i < AG_PER_ARRAY; i++)
        if (all[i].show == AG_TYPE || (all[i].show == AG_INT && all[i].dim != 0)) it[n++] = all[i];
    if (cm_agree_on(m, b != NULL, 0, it, n, "ax_mpi_from_block")) {
        ax_array_release(b);
        return NULL;
    }
    int64_t *rows = ax__malloc(sizeof *rows * (size_t)m->np);
    Dist d;
    dist_repl(&d, b->rank, b->shape);
    d.repl = false;
    d.off = ax__malloc(sizeof *d.off * (size_t)(m->np + 1));
    /* every rank's number of rows (a rank short of memory makes no
     * transfer, and tells the others, who stop waiting for it) */
    MRun run;
    bare_run(&run, m);
    bool ok = rows && d.off;
    if (!ok) mx_fail(m, AX_ERR_NOMEM, "ax_mpi_from_block: out of memory");
    else ok = cm_allgather_i64(&run, b->shape[0], rows) == 0;
    if (!ok) cm_notify(&run);
    ax_darray *r = NULL;
    if (ok) {
        d.off[0] = 0;
        for (int q = 0; q < m->np; q++) d.off[q + 1] = d.off[q] + rows[q];
        d.shape[0] = d.off[m->np];
        r = dr_make(m, b, &d);
        b = NULL;
    }
    ax_array_release(b);
    free(rows);
    dist_free(&d);
    if (cm_agree(m, r != NULL, 0, "ax_mpi_from_block")) {
        ax_darray_release(r);
        return NULL;
    }
    return r;
}

/* An element type as bytes: scalar s, tuple n elts..., index rank. */
static int type_put(const Type *t, unsigned char *b, int n, int max)
{
    if (n + 2 > max) return -1;
    b[n++] = (unsigned char)t->kind;
    if (t->kind == TY_SCALAR) {
        b[n++] = (unsigned char)t->s;
        return n;
    }
    b[n++] = (unsigned char)t->n;
    if (t->kind == TY_INDEX) return n;
    for (int i = 0; i < t->n && n >= 0; i++) n = type_put(t->elts[i], b, n, max);
    return n;
}

static const Type *type_get(ax_ctx *cx, const unsigned char *b, int *n, int max)
{
    if (*n + 2 > max) return NULL;
    int kind = b[(*n)++], v = b[(*n)++];
    if (kind == TY_SCALAR) return v < AX_NSCALAR ? ty_scalar((ax_scalar)v) : NULL;
    if (kind == TY_INDEX) return ax_type_index(cx, v);
    if (kind != TY_TUPLE) return NULL;
    const Type *e[256];
    for (int i = 0; i < v; i++)
        if (!(e[i] = type_get(cx, b, n, max))) return NULL;
    return ax_type_tuple(cx, v, e);
}

/* What the root of a scatter tells the others: the array's element
 * type, dimensions and extents. */
typedef struct Head {
    int32_t ok, rank;
    int64_t shape[AX_MAX_RANK];
    unsigned char type[512];
} Head;

ax_darray *ax_mpi_scatter(ax_mpi *m, int root, ax_array *a)
{
    if (!m) return NULL;
    bool okroot = root >= 0 && root < m->np;
    /* (the header is the buffer of a transfer, which a failing rank may
     * leave pending: on the heap) */
    Head *h = ax__calloc(1, sizeof *h);
    if (!h) {
        mx_fail(m, AX_ERR_NOMEM, "ax_mpi_scatter: out of memory");
    } else if (!okroot) {
        mx_fail(m, AX_ERR_ARG, "ax_mpi_scatter: root %d is not a rank (0..%d)", root, m->np - 1);
    } else if (m->me == root) {
        const char *bad = bad_array(m, a, true);
        if (bad) mx_fail(m, AX_ERR_ARG, "ax_mpi_scatter: %s", bad);
        else if (type_put(a->elt, h->type, 0, (int)sizeof h->type) < 0)
            mx_fail(m, AX_ERR_ARG, "ax_mpi_scatter: the element type is too large");
        else {
            h->ok = 1;
            h->rank = a->rank;
            memcpy(h->shape, a->shape, sizeof h->shape);
        }
    }
    /* the root alike on every rank (the broadcast below comes from it) */
    AgItem it = {(uint64_t)(int64_t)root, AG_ROOT, "the root", -1, NULL, -1, NULL};
    if (cm_agree_on(m, h && okroot && (m->me != root || h->ok), 0, &it, 1, "ax_mpi_scatter")) {
        free(h);
        return NULL;
    }
    MRun run;
    bare_run(&run, m);
    MPI_Request rq;
    int e = MPI_Ibcast(h, (int)sizeof *h, MPI_BYTE, root, m->work, &rq), n = 0, rc = 0;
    if (e != MPI_SUCCESS) rc = mpi_error(m, e, "ax_mpi_scatter: MPI_Ibcast");
    else if ((rc = cm_wait(&run, &rq, 1))) cm_keep(m, h), h = NULL;   /* (still MPI's) */
    const Type *elt = rc == 0 ? type_get(m->cx, h->type, &n, (int)sizeof h->type) : NULL;
    Dist d = {0};
    ax_array *b = NULL;
    int *cnt = ax__malloc(sizeof *cnt * (size_t)m->np), *dsp = ax__malloc(sizeof *dsp * (size_t)m->np);
    if (rc) {
        cm_notify(&run);
    } else if (!elt || !cnt || !dsp || dist_blocks(m, &d, h->rank, h->shape)) {
        mx_fail(m, AX_ERR_NOMEM, "ax_mpi_scatter: out of memory");
    } else {
        int64_t sh[AX_MAX_RANK];
        memcpy(sh, h->shape, sizeof sh);
        sh[0] = d.off[m->me + 1] - d.off[m->me];
        b = array_alloc(m->cx, elt, h->rank, sh, false);
    }
    free(h);
    if (cm_agree(m, b != NULL, 0, "ax_mpi_scatter")) {
        ax_array_release(b);
        dist_free(&d);
        free(cnt);
        free(dsp);
        return NULL;
    }
    int64_t rs = dist_rowsize(&d);
    bool ok = true;
    for (int q = 0; ok && q < m->np; q++) {
        int64_t c = (d.off[q + 1] - d.off[q]) * rs, s = d.off[q] * rs;
        ok = c <= INT32_MAX && s <= INT32_MAX;
        if (ok) {
            cnt[q] = (int)c;
            dsp[q] = (int)s;
        }
    }
    /* (the same on every rank: the extents are the root's) */
    if (!ok) mx_fail(m, AX_ERR_NOMEM, "ax_mpi_scatter: an array of more than 2^31 elements per rank");
    for (int c = 0; ok && rc == 0 && c < b->ncomp; c++) {
        MPI_Datatype t;
        MPI_Type_contiguous((int)mx_leaf_size(elt, c), MPI_BYTE, &t);
        MPI_Type_commit(&t);
        e = MPI_Iscatterv(m->me == root ? a->buf[c] : NULL, cnt, dsp, t, b->buf[c], cnt[m->me], t, root, m->work, &rq);
        if (e != MPI_SUCCESS) {
            rc = mpi_error(m, e, "ax_mpi_scatter: MPI_Iscatterv");
        } else if ((rc = cm_wait(&run, &rq, 1))) {
            /* (a transfer left pending reads and writes these still) */
            cm_keep(m, cnt);
            cm_keep(m, dsp);
            cm_keep_array(m, b);
            if (m->me == root) cm_keep_array(m, a);
            cnt = dsp = NULL;
        }
        MPI_Type_free(&t);
    }
    if (rc) cm_notify(&run);
    free(cnt);
    free(dsp);
    ax_darray *r = NULL;
    if (ok && rc == 0) r = dr_make(m, b, &d), b = NULL;
    ax_array_release(b);
    dist_free(&d);
    if (cm_agree(m, r != NULL, 0, "ax_mpi_scatter")) {
        ax_darray_release(r);
        return NULL;
    }
    return r;
}

ax_darray *ax_mpi_split(ax_mpi *m, ax_array *a)
{
    if (!m) return NULL;
    const char *bad = bad_array(m, a, true);
    if (bad) {
        mx_fail(m, AX_ERR_ARG, "ax_mpi_split: %s", bad);
        mx_settle(m);
        return NULL;
    }
    Dist d;
    ax_array *b = NULL;
    ax_darray *r = NULL;
    if (dist_blocks(m, &d, a->rank, a->shape) == 0 && (b = copy_rows(m, a, d.off[m->me], d.off[m->me + 1])))
        r = dr_make(m, b, &d);
    dist_free(&d);
    if (!r) {
        mx_fail(m, AX_ERR_NOMEM, "ax_mpi_split: out of memory");
        mx_settle(m);
    }
    return r;
}

ax_darray *ax_mpi_replicated(ax_mpi *m, ax_array *a)
{
    if (!m) return NULL;
    const char *bad = bad_array(m, a, false);
    if (bad) {
        mx_fail(m, AX_ERR_ARG, "ax_mpi_replicated: %s", bad);
        mx_settle(m);
        return NULL;
    }
    Dist d;
    dist_repl(&d, a->rank, a->shape);
    ax_darray *r = dr_make(m, ax_array_retain(a), &d);
    if (!r) {
        mx_fail(m, AX_ERR_NOMEM, "ax_mpi_replicated: out of memory");
        mx_settle(m);
    }
    return r;
}

/* gather: rank root wants every element; the others none */
typedef struct GatherWant {
    int root;
    int64_t size;
} GatherWant;

static int gather_want(void *arg, int q, Ranges *out)
{
    GatherWant *g = arg;
    return q == g->root || g->root < 0 ? ranges_add(out, 0, g->size) : 0;
}

int ax_mpi_gather(ax_mpi *m, ax_darray *d, int root, ax_array **out)
{
    if (!m) return -1;
    if (out) *out = NULL;
    ax_array *full = NULL;
    bool ok = true;
    if (!d || !out || d->m != m || root >= m->np) {
        if (root >= m->np) mx_fail(m, AX_ERR_ARG, "ax_mpi_gather: root %d is not a rank (0..%d, or < 0 for every rank)",
                                   root, m->np - 1);
        else mx_fail(m, AX_ERR_ARG, "ax_mpi_gather: %s", !d ? "the array is NULL" : !out ? "out is NULL" :
                     "the array belongs to another context");
        ok = false;
    }
    /* the root and the array's distribution alike on every rank: a rank
     * that sends its rows to another root, or holds the array otherwise,
     * would wait for transfers no other rank makes */
    AgItem it[1 + AG_PER_ARRAY];
    it[0] = (AgItem){(uint64_t)(int64_t)(root < 0 ? -1 : root), AG_ROOT, "the root", -1, NULL, -1, NULL};
    cm_items_array(m, it + 1, ok ? &d->d : NULL, ok ? d->local : NULL, "the array", -1);
    if (cm_agree_on(m, ok, 0, it, 1 + AG_PER_ARRAY, "ax_mpi_gather")) return -1;
    bool want = root < 0 || root == m->me;
    if (want && !(full = array_alloc(m->cx, d->local->elt, d->d.rank, d->d.shape, false)))
        mx_fail(m, AX_ERR_NOMEM, "ax_mpi_gather: out of memory");
    if (cm_agree(m, !want || full, 0, "ax_mpi_gather")) return -1;
    MRun r;
    bare_run(&r, m);
    int rc = 0;
    if (d->d.repl) {
        for (int c = 0; full && c < full->ncomp; c++)
            memcpy(full->buf[c], d->local->buf[c], (size_t)full->size * mx_leaf_size(full->elt, c));
    } else if (root < 0) {
        rc = cm_allgather(&r, &d->d, d->local, full);
    } else {
        GatherWant g = {root, dist_size(&d->d)};
        rc = cm_move(&r, &d->d, d->local, gather_want, &g, full, 0);
    }
    if (rc) cm_notify(&r);
    if (cm_agree(m, rc == 0, 0, "ax_mpi_gather")) {
        ax_array_release(full);
        return -1;
    }
    *out = full;
    return 0;
}
