/*
 * Distributions: how an array's outer dimension is spread over the ranks
 * (Dist, mpi_int.h): blocks of rows, or replicated; sizes, copies, the
 * rank that holds a row.  Calls no other file of src/mpi.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include <stdlib.h>
#include <string.h>

int64_t dist_rowsize(const Dist *d)
{
    int64_t n = 1;
    for (int i = 1; i < d->rank; i++) n *= d->shape[i];
    return n;
}

int64_t dist_size(const Dist *d)
{
    int64_t n = 1;
    for (int i = 0; i < d->rank; i++) n *= d->shape[i];
    return n;
}

int dist_repl(Dist *d, int rank, const int64_t *shape)
{
    memset(d, 0, sizeof *d);
    d->repl = true;
    d->rank = rank;
    for (int i = 0; i < rank; i++) d->shape[i] = shape[i];
    return 0;
}

/* Blocks as even as possible (the first rows % np ranks one row more); or,
 * with AXLE_MPI_BLOCKS=skew (for tests), rank q's share proportional to q
 * (rank 0 empty, the last the most): uneven blocks and empty ones on
 * every program. */
int dist_blocks(ax_mpi *m, Dist *d, int rank, const int64_t *shape)
{
    int np = m->np;
    dist_repl(d, rank, shape);
    if (rank < 1) return 0;
    d->repl = false;
    if (!(d->off = ax__malloc(sizeof *d->off * (size_t)(np + 1)))) return -1;
    int64_t n = shape[0];
    if (m->skew && np > 1) {
        int64_t tot = (int64_t)np * (np - 1) / 2;
        for (int q = 0; q <= np; q++) {
            int64_t w = (int64_t)q * (q - 1) / 2;   /* 0, 0, 1, 3, 6, ... */
            d->off[q] = (int64_t)((__int128)n * w / tot);
        }
    } else {
        int64_t b = n / np, r = n % np;
        for (int q = 0; q <= np; q++) d->off[q] = q * b + (q < r ? q : r);
    }
    d->off[np] = n;
    return 0;
}

int dist_copy(Dist *dst, const Dist *src)
{
    *dst = *src;
    dst->off = NULL;
    return 0;
}

void dist_free(Dist *d)
{
    free(d->off);
    d->off = NULL;
}

bool dist_same_rows(const Dist *a, const Dist *b, int np)
{
    if (a->repl || b->repl || a->rank < 1 || b->rank < 1 || a->shape[0] != b->shape[0]) return false;
    for (int q = 0; q <= np; q++)
        if (a->off[q] != b->off[q]) return false;
    return true;
}

int dist_owner(const Dist *d, int np, int64_t row)
{
    int lo = 0, hi = np - 1;
    while (lo < hi) {   /* the last rank whose block starts at or before row, holding rows */
        int mid = (lo + hi + 1) / 2;
        if (d->off[mid] <= row) lo = mid;
        else hi = mid - 1;
    }
    return lo;   /* off[lo] <= row < off[lo + 1]: the empty blocks before it skipped */
}
