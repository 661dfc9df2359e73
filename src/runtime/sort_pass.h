/*
 * The radix passes of sort.c for one width of key (U, the keys' bits as
 * an unsigned integer; INF the bits of +infinity for a float of that
 * width) and one index type of the permutation (I), included once for
 * each pair with U, I, INF and SFX (the functions' suffix) defined.  Not a
 * header of its own: only sort.c includes it.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)

/* The mapped key (sort.c) of a key's bits b: mode m (Mode) and the
 * descending flip.  m is a constant where BY_MODE calls it, so each
 * loop is compiled once per mode with the mapping folded in. */
static inline U FN(key)(U b, int m, U flip)
{
    const U s = (U)((U)1 << (8 * sizeof(U) - 1));
    U r;
    if (m == MODE_UNSIGNED) r = b;
    else if (m == MODE_SIGNED) r = (U)(b ^ s);
    else r = (U)(b & (U)~s) > (U)INF ? (U)~(U)0 : (b & s) ? (U)~b : (U)(b | s);
    return (U)(r ^ flip);
}

static inline unsigned FN(dig)(U b, int m, U flip, int pass)
{
    return (unsigned)(FN(key)(b, m, flip) >> (8 * pass)) & (RADIX - 1);
}

/* Values element i (of the row at `at`) from element p[i]. */
static void FN(gather)(const SortJob *j, int64_t at, const I *p, int64_t lo, int64_t hi)
{
    for (int l = 0; l < j->nvals; l++) {
#define GATHER(T)                                                          \
        {                                                                  \
            const T *s = (const T *)j->vals[l] + at;                       \
            T *d = (T *)j->vout[l] + at;                                   \
            for (int64_t i = lo; i < hi; i++) d[i] = s[p[i]];              \
        }
        switch (j->vsize[l]) {
        case 1: GATHER(uint8_t) break;
        case 2: GATHER(uint16_t) break;
        case 4: GATHER(uint32_t) break;
        default: GATHER(uint64_t) break;
        }
#undef GATHER
    }
}

/* Counts of every pass's digit over src[lo, hi): cnt[pass * RADIX + d]. */
static void FN(count_all)(const U *src, int64_t lo, int64_t hi, int m, U flip, int64_t *cnt)
{
    enum { W = (int)sizeof(U) };
    memset(cnt, 0, sizeof *cnt * W * RADIX);
    BY_MODE(m, for (int64_t i = lo; i < hi; i++) {
        U k = FN(key)(src[i], M, flip);
        for (int b = 0; b < W; b++) cnt[b * RADIX + ((unsigned)(k >> (8 * b)) & (RADIX - 1))]++;
    });
}

/* One stable counting-sort pass over src[lo, hi) by digit b into dst at
 * the offsets c (advanced); the permutation with it: from sp, or, on the
 * first pass (sp NULL), the positions themselves. */
static void FN(scatter)(const U *src, U *dst, const I *sp, I *dp, int64_t lo, int64_t hi, int m, U flip, int b,
                        int64_t *c)
{
    if (!dp) {
        BY_MODE(m, for (int64_t i = lo; i < hi; i++) dst[c[FN(dig)(src[i], M, flip, b)]++] = src[i]);
    } else if (sp) {
        BY_MODE(m, for (int64_t i = lo; i < hi; i++) {
            int64_t o = c[FN(dig)(src[i], M, flip, b)]++;
            dst[o] = src[i];
            dp[o] = sp[i];
        });
    } else {
        BY_MODE(m, for (int64_t i = lo; i < hi; i++) {
            int64_t o = c[FN(dig)(src[i], M, flip, b)]++;
            dst[o] = src[i];
            dp[o] = (I)i;
        });
    }
}

/* One row of n keys (the row at `at`) sorted into j->out, its
 * permutation (with values) gathered into j->vout; t, p1 and p2 are the
 * row's scratch, cnt sizeof(U) * RADIX counters. */
static void FN(row_serial)(const Par *q, int64_t at, int64_t *cnt)
{
    enum { W = (int)sizeof(U) };
    const SortJob *j = q->j;
    int64_t n = j->n;
    int m = q->mode;
    U flip = (U)q->flip;
    const U *keys = (const U *)j->keys + at;
    U *out = (U *)j->out + at, *t = (U *)q->tmp + at;
    I *p1 = q->p1 ? (I *)q->p1 + at : NULL, *p2 = q->p1 ? (I *)q->p2 + at : NULL;
    if (n <= SMALL) {
        /* insertion sort: stable, and the fastest for a few elements */
        memcpy(out, keys, sizeof *out * (size_t)n);
        if (p1)
            for (int64_t i = 0; i < n; i++) p1[i] = (I)i;
        for (int64_t i = 1; i < n; i++) {
            U v = out[i], kv = FN(key)(v, m, flip);
            I pv = p1 ? p1[i] : 0;
            int64_t k = i;
            for (; k > 0 && FN(key)(out[k - 1], m, flip) > kv; k--) {
                out[k] = out[k - 1];
                if (p1) p1[k] = p1[k - 1];
            }
            out[k] = v;
            if (p1) p1[k] = pv;
        }
        if (p1) FN(gather)(j, at, p1, 0, n);
        return;
    }
    FN(count_all)(keys, 0, n, m, flip, cnt);
    /* a digit every key shares orders nothing: its pass is skipped */
    int pass[W], np = 0;
    for (int b = 0; b < W; b++)
        if (cnt[b * RADIX + FN(dig)(keys[0], m, flip, b)] != n) pass[np++] = b;
    if (np == 0) {
        memcpy(out, keys, sizeof *out * (size_t)n);
        if (p1) {
            for (int64_t i = 0; i < n; i++) p1[i] = (I)i;
            FN(gather)(j, at, p1, 0, n);
        }
        return;
    }
    /* the passes alternate between out and t so that the last writes out */
    const U *src = keys;
    const I *sp = NULL;
    for (int k = 0; k < np; k++) {
        U *dst = (np - 1 - k) % 2 == 0 ? out : t;
        I *dp = p1 ? (k % 2 == 0 ? p1 : p2) : NULL;
        int64_t *c = cnt + pass[k] * RADIX, o = 0;
        for (int d = 0; d < RADIX; d++) {
            int64_t x = c[d];
            c[d] = o;
            o += x;
        }
        FN(scatter)(src, dst, sp, dp, 0, n, m, flip, pass[k], c);
        src = dst;
        sp = dp;
    }
    if (p1) FN(gather)(j, at, sp, 0, n);
}

/* The rows task: Par.rows_per_task rows, each sorted by this thread. */
static void FN(rows_task)(void *arg, int64_t task, int worker)
{
    Par *q = arg;
    const SortJob *j = q->j;
    int64_t lo = task * q->rows_per_task, hi = lo + q->rows_per_task;
    if (hi > j->rows) hi = j->rows;
    int64_t *cnt = q->cnt + (size_t)worker * sizeof(U) * RADIX;
    for (int64_t r = lo; r < hi; r++) FN(row_serial)(q, r * j->n, cnt);
}

/* One long row, every pass parallel: per pass, each task counts the
 * digits of its block, the offsets are laid out digit-major then
 * task-major (so the scatter is stable), and each task scatters its block
 * in order.  A pass is known to be trivial only once counted, so the
 * buffers alternate as if every pass ran, and a copy ends the sort when a
 * skipped pass left the keys in the scratch buffer. */
static void FN(count_task)(void *arg, int64_t task, int worker)
{
    (void)worker;
    Par *q = arg;
    int64_t lo = q->n * task / q->ntasks, hi = q->n * (task + 1) / q->ntasks;
    const U *src = q->src;
    int64_t *c = q->cnt + (size_t)task * RADIX;
    U flip = (U)q->flip;
    int b = q->pass;
    memset(c, 0, sizeof *c * RADIX);
    BY_MODE(q->mode, for (int64_t i = lo; i < hi; i++) c[FN(dig)(src[i], M, flip, b)]++);
}

static void FN(scatter_task)(void *arg, int64_t task, int worker)
{
    (void)worker;
    Par *q = arg;
    int64_t lo = q->n * task / q->ntasks, hi = q->n * (task + 1) / q->ntasks;
    FN(scatter)(q->src, q->dst, q->sp, q->dp, lo, hi, q->mode, (U)q->flip, q->pass, q->cnt + (size_t)task * RADIX);
}

static void FN(gather_task)(void *arg, int64_t task, int worker)
{
    (void)worker;
    Par *q = arg;
    int64_t lo = q->n * task / q->ntasks, hi = q->n * (task + 1) / q->ntasks;
    FN(gather)(q->j, q->at, q->sp, lo, hi);
}

/* The keys from q->src to the output; the identity permutation into
 * q->dp when no pass ran (q->sp NULL). */
static void FN(copy_task)(void *arg, int64_t task, int worker)
{
    (void)worker;
    Par *q = arg;
    int64_t lo = q->n * task / q->ntasks, hi = q->n * (task + 1) / q->ntasks;
    memcpy((U *)q->j->out + q->at + lo, (const U *)q->src + lo, sizeof(U) * (size_t)(hi - lo));
    if (q->dp && !q->sp) {
        I *p = q->dp;
        for (int64_t i = lo; i < hi; i++) p[i] = (I)i;
    }
}

static void FN(row_parallel)(Pool *pool, Par *q)
{
    enum { W = (int)sizeof(U) };
    int64_t T = q->ntasks, n = q->n;
    const SortJob *j = q->j;
    U *out = (U *)j->out + q->at, *tmp = (U *)q->tmp + q->at;
    I *p1 = q->p1 ? (I *)q->p1 + q->at : NULL, *p2 = q->p1 ? (I *)q->p2 + q->at : NULL;
    const U *src = (const U *)j->keys + q->at;
    const I *sp = NULL;
    int k = 0;   /* passes run */
    for (int b = 0; b < W; b++) {
        q->src = (void *)src, q->pass = b;
        pool_run(pool, FN(count_task), q, T);
        bool trivial = false;
        for (int d = 0; d < RADIX && !trivial; d++) {
            int64_t s = 0;
            for (int64_t t = 0; t < T; t++) s += q->cnt[(size_t)t * RADIX + d];
            trivial = s == n;
        }
        if (trivial) continue;
        int64_t o = 0;
        for (int d = 0; d < RADIX; d++)
            for (int64_t t = 0; t < T; t++) {
                int64_t x = q->cnt[(size_t)t * RADIX + d];
                q->cnt[(size_t)t * RADIX + d] = o;
                o += x;
            }
        U *dst = (W - 1 - k) % 2 == 0 ? out : tmp;
        I *dp = p1 ? (k % 2 == 0 ? p1 : p2) : NULL;
        q->dst = dst, q->sp = (void *)sp, q->dp = dp;
        pool_run(pool, FN(scatter_task), q, T);
        src = dst;
        sp = dp;
        k++;
    }
    if (src != out) {
        q->src = (void *)src, q->sp = (void *)sp, q->dp = p1;
        pool_run(pool, FN(copy_task), q, T);
        if (!sp) sp = p1;
    }
    q->sp = (void *)sp;
    if (p1) pool_run(pool, FN(gather_task), q, T);
}

#undef FN
#undef CAT
#undef CAT_
