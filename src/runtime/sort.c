/*
 * The executors' sort (sort.h): least-significant-digit radix sort of 8
 * bits a pass, each pass a counting sort, which is stable, so the passes
 * from the lowest digit leave every row sorted with equal keys in their
 * input order (Knuth, TAOCP vol. 3, s.5.2.5; Blelloch's split, which the
 * Accelerate paper's radix sort benchmark uses, is the one-bit case).
 *
 * The passes move the keys as they are (a NaN keeps its bits) and take
 * each digit from the key mapped to an unsigned integer of its width
 * whose order is the wanted one: unsigned keys as they are, signed ones
 * with the sign bit flipped, floats in totalOrder (negative ones with
 * every bit flipped, the others with the sign bit set) with every NaN
 * mapped to the largest value, so that NaNs are equal and stay in input
 * order; descending order flips every bit.  The first pass reads the
 * input and the passes alternate between two buffers so that the last
 * writes the output: no pass of its own maps or copies.  Values travel
 * as a permutation (4-byte indices while a row has fewer than 2^32
 * elements) that the passes move with the keys (the first pass writes
 * the positions themselves); each leaf of the values is gathered through
 * it once at the end.
 *
 * Two schedules: rows in parallel, each sorted by one thread (many rows,
 * or short ones), or a long row at a time with every pass parallel (each
 * thread counts the digits of its block, the offsets are laid out digit
 * first then thread, and each thread scatters its block in order).  A
 * pass whose digit every key of the row shares moves nothing and is
 * skipped, so keys of a small range take fewer passes.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "sort.h"
#include "fault.h"
#include "array.h"
#include <stdlib.h>
#include <string.h>

enum {
    RADIX = 256,
    SMALL = 48,           /* rows this short: an insertion sort */
    PAR_MIN = 1 << 16,    /* rows this long may get every thread */
    ROW_TASK = 1 << 14,   /* elements a rows task takes at least */
};

/* How a key's bits map to its order (sort_pass.h key). */
enum { MODE_UNSIGNED, MODE_SIGNED, MODE_FLOAT };

/* BODY compiled once for each mode, with M the mode as a constant. */
#define BY_MODE(m, ...)                                                    \
    do {                                                                   \
        switch (m) {                                                       \
        case MODE_UNSIGNED: { enum { M = MODE_UNSIGNED }; __VA_ARGS__; break; } \
        case MODE_SIGNED: { enum { M = MODE_SIGNED }; __VA_ARGS__; break; }     \
        default: { enum { M = MODE_FLOAT }; __VA_ARGS__; break; }               \
        }                                                                  \
    } while (0)

/* One job's state, shared by its tasks. */
typedef struct Par {
    const SortJob *j;
    int mode;
    uint64_t flip;                /* all ones when descending */
    void *tmp, *p1, *p2;          /* the job's scratch (SortJob) */
    int64_t *cnt;                 /* per task or worker: digit counters */
    int64_t rows_per_task;
    /* row_parallel: the row at element `at`, of n, in ntasks blocks */
    int64_t at, n, ntasks;
    int pass;
    void *src, *dst, *sp, *dp;
} Par;

#define U uint8_t
#define INF 0
#define I uint32_t
#define SFX 1_4
#include "sort_pass.h"
#undef I
#undef SFX
#define I uint64_t
#define SFX 1_8
#include "sort_pass.h"
#undef U
#undef INF
#undef I
#undef SFX
#define U uint16_t
#define INF 0
#define I uint32_t
#define SFX 2_4
#include "sort_pass.h"
#undef I
#undef SFX
#define I uint64_t
#define SFX 2_8
#include "sort_pass.h"
#undef U
#undef INF
#undef I
#undef SFX
#define U uint32_t
#define INF 0x7f800000u
#define I uint32_t
#define SFX 4_4
#include "sort_pass.h"
#undef I
#undef SFX
#define I uint64_t
#define SFX 4_8
#include "sort_pass.h"
#undef U
#undef INF
#undef I
#undef SFX
#define U uint64_t
#define INF 0x7ff0000000000000u
#define I uint32_t
#define SFX 8_4
#include "sort_pass.h"
#undef I
#undef SFX
#define I uint64_t
#define SFX 8_8
#include "sort_pass.h"
#undef U
#undef INF
#undef I
#undef SFX

typedef struct Impl {
    PoolTask rows_task;
    void (*row_parallel)(Pool *, Par *);
} Impl;

static Impl impl(int w, bool wide)
{
#define IMPL(S) (Impl){ rows_task_##S, row_parallel_##S }
    switch (w) {
    case 1: return wide ? IMPL(1_8) : IMPL(1_4);
    case 2: return wide ? IMPL(2_8) : IMPL(2_4);
    case 4: return wide ? IMPL(4_8) : IMPL(4_4);
    default: return wide ? IMPL(8_8) : IMPL(8_4);
    }
#undef IMPL
}

bool sort_wide(int64_t n) { return (uint64_t)n > UINT32_MAX; }

int sort_run(Pool *pool, const SortJob *j)
{
    if (j->rows <= 0 || j->n <= 0) return 0;
    int w = (int)ax_scalar_size(j->key);
    int64_t T = pool ? pool_threads(pool) : 1;
    bool par = T > 1 && j->n >= PAR_MIN && j->rows < 2 * T;
    Par q;
    memset(&q, 0, sizeof q);
    q.j = j;
    q.mode = j->key == AX_F32 || j->key == AX_F64 ? MODE_FLOAT
             : j->key == AX_I8 || j->key == AX_I16 || j->key == AX_I32 || j->key == AX_I64 ? MODE_SIGNED
                                                                                          : MODE_UNSIGNED;
    q.flip = j->descending ? ~(uint64_t)0 : 0;
    q.tmp = j->tmp;
    if (j->nvals > 0) q.p1 = j->p1, q.p2 = j->p2;
    q.cnt = ax__malloc(sizeof *q.cnt * RADIX * 8 * (size_t)T);
    int rc = -1;
    if (q.cnt) {
        Impl f = impl(w, sort_wide(j->n));
        if (par) {
            q.n = j->n;
            q.ntasks = T;
            for (int64_t r = 0; r < j->rows; r++) {
                q.at = r * j->n;
                f.row_parallel(pool, &q);
            }
        } else {
            /* about four tasks a thread, of ROW_TASK elements at least */
            int64_t per = (j->rows + 4 * T - 1) / (4 * T), min = (ROW_TASK + j->n - 1) / j->n;
            q.rows_per_task = per > min ? per : min;
            pool_run(pool, f.rows_task, &q, (j->rows + q.rows_per_task - 1) / q.rows_per_task);
        }
        rc = 0;
    }
    free(q.cnt);
    return rc;
}

bool sort_operands(const Node *x, ax_array *const *arr, int nout, ax_array **keys, ax_array **vals)
{
    *keys = arr[nout];
    *vals = x->n > 1 ? arr[nout + 1] : NULL;
    return *keys && (x->n < 2 || (*vals && (*vals)->size == (*keys)->size));
}

int sort_arrays(Pool *p, const Node *x, const ax_array *keys, const ax_array *vals, ax_array *okeys,
                ax_array *ovals)
{
    int r = keys->rank;
    int64_t n = r > 0 ? keys->shape[r - 1] : 0, total = keys->size;
    SortJob j = {
        .key = keys->elt->s, .descending = x->a != 0, .n = n, .rows = n > 0 ? total / n : 0,
        .keys = keys->buf[0], .out = okeys->buf[0],
    };
    if (total == 0) return 0;
    /* scratch as arrays: charged to the memory limit, and their buffers
     * come from (and go back to) the context's spare buffers */
    ax_array *tmp = array_alloc(keys->cx, keys->elt, 1, &total, false), *p1 = NULL, *p2 = NULL;
    int *vs = NULL, rc = -1;
    if (!tmp) goto out;
    j.tmp = tmp->buf[0];
    if (vals) {
        const Type *it = ty_scalar(sort_wide(n) ? AX_U64 : AX_U32);
        if (!(p1 = array_alloc(keys->cx, it, 1, &total, false)) || !(p2 = array_alloc(keys->cx, it, 1, &total, false)))
            goto out;
        j.p1 = p1->buf[0];
        j.p2 = p2->buf[0];
        j.nvals = vals->elt->width;
        if (!(vs = ax__malloc(sizeof *vs * (size_t)(j.nvals + 1)))) {
            ctx_error(keys->cx, AX_ERR_NOMEM, "ax_sort: out of memory");
            goto out;
        }
        for (int l = 0; l < j.nvals; l++) vs[l] = (int)ax_scalar_size(ty_leaf(vals->elt, l));
        j.vals = (const void *const *)vals->buf;
        j.vsize = vs;
        j.vout = ovals->buf;
    }
    if ((rc = sort_run(p, &j))) ctx_error(keys->cx, AX_ERR_NOMEM, "ax_sort: out of memory");
out:
    free(vs);
    ax_array_release(tmp);
    ax_array_release(p1);
    ax_array_release(p2);
    return rc;
}
