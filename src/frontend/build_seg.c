/*
 * The segmented scans (Accelerate's scanlSeg, scanl1Seg, scanl'Seg and
 * their right-hand twins), built from the operations every backend
 * already has, so that each backend, each optimisation switch and the
 * distributed executor run them with no code of their own, and fusion
 * treats them as it treats any scan.
 *
 * The construction is Blelloch's (Vector Models for Data-Parallel
 * Computing, 1990, s.4.2; Sengupta et al., Scan Primitives for GPU
 * Computing, 2007): a segmented scan of x with f is an ordinary scan of
 * (flag, x) pairs, the flag marking the first element of each segment
 * (the last, for a scan from the right), with the operator
 *
 *   left:  (fa, a) . (fb, b) = (fa | fb, fb ? b : f(a, b))
 *   right: (fa, a) . (fb, b) = (fa | fb, fa ? a : f(a, b))
 *
 * which is associative when f is, and keeps f's operand order, so f need
 * not be commutative.  The flags come from the segment lengths: their
 * offsets (an exclusive scan) scattered with a permute.  The lengths are
 * first counted by a segmented fold over the segments, which checks them
 * (none negative, their sum the innermost extent) exactly as ax_fold_seg
 * does, at run time and in every mode; everything else reads the checked
 * counts, so nothing runs on lengths that do not fit.
 *
 * The forms with an initial value per segment (scanl, scanr: one element
 * more per segment) scan an expanded row of n + m elements in which each
 * segment has its z in front (behind, from the right); their elements
 * find their source by the segment number, an inclusive scan of the
 * heads.  The exclusive forms read that expanded scan: element i of
 * segment j is at i + j (i + j + 1 from the right), the total at the
 * segment's end (its start).  So f is applied in one place, the pairs'
 * operator, and the user's callback is called once, as for every other
 * operation.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "build.h"

typedef enum SegKind { SK_L, SK_L1, SK_R, SK_R1, SK_LEX, SK_REX } SegKind;

/* What the callbacks below read (the builder calls each callback while
 * the operation is built, so the state lives on the caller's stack). */
typedef struct Seg {
    ax_ctx *cx;
    const char *what;
    SegKind kind;
    bool left;         /* scanning from the left */
    bool expanded;     /* a z per segment: the row of n + m */
    ax_fn2 f;
    void *env;
    ax_exp z;
    ax_acc a;
    int rank;
    ax_exp n;          /* the innermost extent of a (i64) */
    ax_acc lens, offs; /* per segment: its length and first position (i64), checked */
    ax_acc pos;        /* per segment: where its flag goes (-1: nowhere) */
    ax_acc cnt, sidp;  /* per position: segments starting there; its segment number + 1 */
} Seg;

static ax_exp one_i64(ax_exp ix, void *env) { (void)ix, (void)env; return ax_i64(1); }
static ax_exp zero_i64(ax_exp ix, void *env) { (void)ix, (void)env; return ax_i64(0); }
static ax_exp no_flag(ax_exp ix, void *env) { (void)ix, (void)env; return ax_bool(false); }
static ax_exp flag_on(ax_exp x, void *env) { (void)x, (void)env; return ax_bool(true); }
static ax_exp second(ax_exp p, void *env) { (void)env; return ax_get(p, 1); }
static ax_exp mk_pair(ax_exp h, ax_exp x, void *env) { (void)env; return ax_tuple2(h, x); }

/* f(x, y), checked to be of the element type (named as the user's
 * operation, not as the scan it is built from). */
static ax_exp apply_f(Seg *s, ax_exp x, ax_exp y)
{
    ax_exp r = s->f(x, y, s->env);
    Type tmp;
    const Type *elts[8], *t = exp_type(r, &tmp, elts);
    if (t && !ty_eq(t, s->a->type->elt)) {
        ctx_error(s->cx, AX_ERR_BUILD, "%s: the function returns %s where %s is needed", s->what, tstr(s->cx, t),
                  tstr(s->cx, s->a->type->elt));
        return exp_invalid();
    }
    return r;
}

/* The pairs' operator: a flag on the right operand (left scans: a head)
 * or on the left one (right scans: a tail) cuts the segment there. */
static ax_exp seg_op(ax_exp p, ax_exp q, void *env)
{
    Seg *s = env;
    ax_exp fp = ax_get(p, 0), fq = ax_get(q, 0), xp = ax_get(p, 1), xq = ax_get(q, 1);
    ax_exp joined = apply_f(s, xp, xq);
    return ax_tuple2(ax_or(fp, fq), s->left ? ax_cond(fq, xq, joined) : ax_cond(fp, xp, joined));
}

/* Segment j's flag: at its first element (left scans) or its last (right
 * scans), nowhere (-1) when it is empty; in the expanded row, the place of
 * its z, in front of it (only heads are scattered there). */
static ax_exp flag_pos(ax_exp ix, void *env)
{
    const Seg *s = env;
    ax_exp len = ax_at(s->lens, ix), off = ax_at(s->offs, ix);
    if (s->expanded) return ax_add(off, ax_index_get(ix, 0));
    if (s->kind == SK_L1) return ax_cond(ax_gt(len, ax_i64(0)), off, ax_i64(-1));
    if (s->kind == SK_R1) return ax_cond(ax_gt(len, ax_i64(0)), ax_sub(ax_add(off, len), ax_i64(1)), ax_i64(-1));
    /* the exclusive forms' segment numbers: each segment's first position,
     * if inside the row (empty segments at the end are not) */
    return ax_cond(ax_lt(off, s->n), off, ax_i64(-1));
}

static ax_exp flag_target(ax_exp ix, void *env)
{
    const Seg *s = env;
    ax_exp p = ax_at(s->pos, ix);
    return ax_cond(ax_ge(p, ax_i64(0)), ax_ix1(p), ax_ignore(1));
}

/* An index of a's rank: ix's outer components, then `inner`. */
static ax_exp with_inner(const Seg *s, ax_exp ix, ax_exp inner)
{
    ax_exp c[AX_MAX_RANK];
    for (int d = 0; d < s->rank - 1; d++) c[d] = ax_index_get(ix, d);
    c[s->rank - 1] = inner;
    return ax_index(s->rank, c);
}

/* The flag vector spread over a's outer dimensions. */
static ax_acc spread(const Seg *s, ax_acc v)
{
    if (s->rank == 1) return v;
    ax_slice spec[AX_MAX_RANK];
    ax_exp sh = ax_shape(s->a);
    for (int d = 0; d < s->rank - 1; d++) spec[d] = ax_fixed(ax_index_get(sh, d));
    spec[s->rank - 1] = ax_all();
    return ax_replicate(s->rank, spec, v);
}

/* The expanded row's element k: z at each segment's head (behind its last
 * element, from the right), else the element of a it stands for. */
static ax_exp expanded_pair(ax_exp ix, void *env)
{
    const Seg *s = env;
    ax_exp k = ax_index_get(ix, s->rank - 1), sidp = ax_at(s->sidp, ax_ix1(k));
    ax_exp flag, src;
    if (s->left) {
        flag = ax_ne(ax_at(s->cnt, ax_ix1(k)), ax_i64(0));
        src = ax_sub(k, sidp);
    } else {
        ax_exp last = ax_sub(ax_index_get(ax_shape(s->cnt), 0), ax_i64(1));
        flag = ax_cond(ax_eq(k, last), ax_bool(true), ax_ne(ax_at(s->cnt, ax_ix1(ax_add(k, ax_i64(1)))), ax_i64(0)));
        src = ax_add(ax_sub(k, sidp), ax_i64(1));
    }
    return ax_tuple2(flag, ax_cond(flag, s->z, ax_at(s->a, with_inner(s, ix, src))));
}

/* The exclusive forms, read from the expanded scan: element i of segment
 * j at i + j (from the right i + j + 1); the total at the end of the
 * segment's stretch (from the right its start). */
static ax_exp ex_elem(ax_exp ix, void *env)
{
    const Seg *s = env;
    ax_exp i = ax_index_get(ix, s->rank - 1), j = ax_sub(ax_at(s->sidp, ax_ix1(i)), ax_i64(1));
    ax_exp at = ax_add(i, j);
    return with_inner(s, ix, s->left ? at : ax_add(at, ax_i64(1)));
}

static ax_exp ex_total(ax_exp ix, void *env)
{
    const Seg *s = env;
    ax_exp j = ax_index_get(ix, s->rank - 1), at = ax_add(ax_at(s->offs, ax_ix1(j)), j);
    return with_inner(s, ix, s->left ? ax_add(at, ax_at(s->lens, ax_ix1(j))) : at);
}

static ax_acc seg_scan(SegKind kind, const char *what, ax_fn2 f, void *env, const ax_exp *z, ax_acc a, ax_acc segs)
{
    if (!segs && a) return ctx_error(a->cx, AX_ERR_BUILD, "%s: the segments are NULL", what);
    if (!f && a) return ctx_error(a->cx, AX_ERR_BUILD, "%s: the function is NULL", what);
    /* Every operand checked, and named, as a segmented fold's (with a
     * function of axle's own: the user's is called once, below). */
    if (!build_reduce(z ? OP_FOLDSEG : OP_FOLD1SEG, what, ax_fn_fst, NULL, z, a, segs)) return NULL;
    Seg s = {.cx = a->cx, .what = what, .kind = kind, .f = f, .env = env, .z = z ? *z : ax_i64(0), .a = a,
             .rank = a->type->rank};
    s.left = kind == SK_L || kind == SK_L1 || kind == SK_LEX;
    s.expanded = kind != SK_L1 && kind != SK_R1;
    s.n = ax_index_get(ax_shape(a), s.rank - 1);
    ax_exp m = ax_index_get(ax_shape(segs), 0);
    s.lens = ax_fold_seg(ax_fn_add, NULL, ax_i64(0), ax_generate(s.cx, ax_ix1(s.n), one_i64, NULL), segs);
    s.offs = ax_aget(ax_scanl_ex(ax_fn_add, NULL, ax_i64(0), s.lens), 0);
    s.pos = ax_generate(s.cx, ax_ix1(m), flag_pos, &s);
    ax_acc r;
    if (!s.expanded) {
        ax_acc flags = spread(&s, ax_permute(ax_fn_or, NULL, ax_generate(s.cx, ax_ix1(s.n), no_flag, NULL),
                                             flag_target, &s, ax_map(flag_on, NULL, s.pos)));
        ax_acc pairs = ax_zip_with(mk_pair, NULL, flags, a);
        r = ax_map(second, NULL, s.left ? ax_scanl1(seg_op, &s, pairs) : ax_scanr1(seg_op, &s, pairs));
        return r;
    }
    ax_exp len = ax_add(s.n, m);
    /* the expanded row gathers a's elements at computed places: a is made
     * once (ax_compute) rather than its producer fused into the gather,
     * where its code would be copied into every read */
    s.a = ax_compute(a);
    s.cnt = ax_permute(ax_fn_add, NULL, ax_generate(s.cx, ax_ix1(len), zero_i64, NULL), flag_target, &s,
                       ax_generate(s.cx, ax_ix1(m), one_i64, NULL));
    s.sidp = ax_scanl1(ax_fn_add, NULL, s.cnt);
    ax_acc pairs = ax_generate(s.cx, with_inner(&s, ax_shape(a), len), expanded_pair, &s);
    r = ax_map(second, NULL, s.left ? ax_scanl1(seg_op, &s, pairs) : ax_scanr1(seg_op, &s, pairs));
    if (!r) return NULL;
    if (kind == SK_L || kind == SK_R) return r;
    /* each element's segment number (+ 1) in the unexpanded row */
    s.expanded = false;
    s.pos = ax_generate(s.cx, ax_ix1(m), flag_pos, &s);
    s.cnt = ax_permute(ax_fn_add, NULL, ax_generate(s.cx, ax_ix1(s.n), zero_i64, NULL), flag_target, &s,
                       ax_generate(s.cx, ax_ix1(m), one_i64, NULL));
    s.sidp = ax_scanl1(ax_fn_add, NULL, s.cnt);
    ax_acc ex = ax_backpermute(ax_shape(a), ex_elem, &s, r);
    ax_acc tot = ax_backpermute(with_inner(&s, ax_shape(a), m), ex_total, &s, r);
    return ax_atuple2(ex, tot);
}
ax_acc ax_scanl_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs)
{
    return seg_scan(SK_L, "ax_scanl_seg", f, env, &z, a, segs);
}
ax_acc ax_scanl1_seg(ax_fn2 f, void *env, ax_acc a, ax_acc segs)
{
    return seg_scan(SK_L1, "ax_scanl1_seg", f, env, NULL, a, segs);
}
ax_acc ax_scanr_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs)
{
    return seg_scan(SK_R, "ax_scanr_seg", f, env, &z, a, segs);
}
ax_acc ax_scanr1_seg(ax_fn2 f, void *env, ax_acc a, ax_acc segs)
{
    return seg_scan(SK_R1, "ax_scanr1_seg", f, env, NULL, a, segs);
}
ax_acc ax_scanl_ex_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs)
{
    return seg_scan(SK_LEX, "ax_scanl_ex_seg", f, env, &z, a, segs);
}
ax_acc ax_scanr_ex_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs)
{
    return seg_scan(SK_REX, "ax_scanr_ex_seg", f, env, &z, a, segs);
}
