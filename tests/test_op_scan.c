/*
 * The scans: scanl, scanl1, scanr, scanr1, scanl_ex and scanr_ex (the
 * last two with their totals, together and one at a time), with
 * non-commutative associative operators (affine maps, ax_fn_fst,
 * ax_fn_snd) so that the order of the operands is checked.
 *
 * Backends (tests/ops/ops.h): the OP_TESTs on every backend, against
 * values computed in plain C here (empty rows and arrays); the DIFF_TESTs
 * on the compiling backends, against the interpreter: every scan on the
 * large and GPU-sized shapes, the last tiles of the GPU's single-pass scan
 * (a regression test), and a million elements.  CTest runs the first two
 * DIFF_TESTs again on OpenCL with the single-pass scans
 * (test_op_scan_opencl_lookback: AXLE_GPU_LOOKBACK=1).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"
#include "ir.h"
#include "backend/gpu/gpu.h"

/* =============================================================== scans */

enum { SC_L, SC_L1, SC_R, SC_R1, SC_LEX, SC_REX, SC_N };
static const char *const scan_names[SC_N] = {"scanl", "scanl1", "scanr", "scanr1", "scanl_ex", "scanr_ex"};

/* One row: writes the expected scan (and for the _ex kinds the total). */
static int64_t ref_scan(int kind, AffOp op, Aff z, const Aff *a, int64_t n, Aff *out, Aff *total)
{
    switch (kind) {
    case SC_L:
        out[0] = z;
        for (int64_t k = 0; k < n; k++) out[k + 1] = op(out[k], a[k]);
        return n + 1;
    case SC_L1:
        for (int64_t k = 0; k < n; k++) out[k] = k ? op(out[k - 1], a[k]) : a[k];
        return n;
    case SC_R:
        out[n] = z;
        for (int64_t k = n - 1; k >= 0; k--) out[k] = op(a[k], out[k + 1]);
        return n + 1;
    case SC_R1:
        for (int64_t k = n - 1; k >= 0; k--) out[k] = k == n - 1 ? a[k] : op(a[k], out[k + 1]);
        return n;
    case SC_LEX: {
        Aff acc = z;
        for (int64_t k = 0; k < n; k++) { out[k] = acc; acc = op(acc, a[k]); }
        *total = acc;
        return n;
    }
    case SC_REX: {
        Aff acc = z;
        for (int64_t k = n - 1; k >= 0; k--) { out[k] = acc; acc = op(a[k], acc); }
        *total = acc;
        return n;
    }
    }
    return 0;
}

static ax_acc build_scan(int kind, bool affine, ax_acc a)
{
    ax_fn2 f = affine ? aff_op : ax_fn_add;
    ax_exp z = affine ? aff_z_exp() : ax_i64(100);
    switch (kind) {
    case SC_L: return ax_scanl(f, NULL, z, a);
    case SC_L1: return ax_scanl1(f, NULL, a);
    case SC_R: return ax_scanr(f, NULL, z, a);
    case SC_R1: return ax_scanr1(f, NULL, a);
    case SC_LEX: return ax_scanl_ex(f, NULL, z, a);
    default: return ax_scanr_ex(f, NULL, z, a);
    }
}

OP_TEST(scans)
{
    static const Shape cases[] = {
        {1, {0}}, {1, {1}}, {1, {7}}, {1, {1001}},
        {2, {3, 7}}, {2, {3, 0}}, {2, {0, 4}}, {2, {2, 1}}, {2, {2, 1001}},
        {3, {2, 3, 4}},
    };
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const Shape *s = &cases[t];
        RedIn in;
        red_in(cx, &in, s->rank, s->sh);
        for (int affine = 0; affine < 2; affine++) {
            AffOp op = affine ? aff_compose : aff_add;
            Aff z = affine ? aff_z : sum_z;
            for (int kind = 0; kind < SC_N; kind++) {
                bool plus1 = kind == SC_L || kind == SC_R, ex = kind == SC_LEX || kind == SC_REX;
                int64_t rlen = in.inner + plus1;
                Aff *want = calloc((size_t)(in.rows * rlen) + 1, sizeof *want);
                Aff *tot = calloc((size_t)in.rows + 1, sizeof *tot);
                for (int64_t r = 0; r < in.rows; r++)
                    ref_scan(kind, op, z, in.v + r * in.inner, in.inner, want + r * rlen, tot + r);
                int64_t rsh[3];
                for (int d = 0; d < s->rank; d++) rsh[d] = s->sh[d];
                rsh[s->rank - 1] = rlen;
                ax_acc p = build_scan(kind, affine, affine ? in.aff : in.sum);
                Chk c;
                CHK(&c, "%s %s, shape case %d", scan_names[kind], affine ? "affine" : "add", t);
                if (!ex) {
                    ax_array *r = RUN(cx, p);
                    if (r && SHAPE_ISV(r, s->rank, rsh)) chk_aff(&c, r, affine, want, in.rows * rlen);
                    ax_array_release(r);
                } else {
                    ax_array *out[2] = {NULL, NULL};
                    int nout = RUN_N(cx, p, out, 2);
                    CHECKF(nout == 2, "ax_run_n gave %d: %s", nout, ax_error(cx));
                    if (nout == 2) {
                        if (SHAPE_ISV(out[0], s->rank, rsh)) chk_aff(&c, out[0], affine, want, in.rows * rlen);
                        if (SHAPE_ISV(out[1], s->rank - 1, s->sh)) chk_aff(&c, out[1], affine, tot, in.rows);
                        ax_array_release(out[0]);
                        ax_array_release(out[1]);
                    }
                    /* the components one at a time */
                    ax_array *r0 = RUN(cx, ax_aget(p, 0)), *r1 = RUN(cx, ax_aget(p, 1));
                    if (r0 && SHAPE_ISV(r0, s->rank, rsh)) chk_aff(&c, r0, affine, want, in.rows * rlen);
                    if (r1 && SHAPE_ISV(r1, s->rank - 1, s->sh)) chk_aff(&c, r1, affine, tot, in.rows);
                    ax_array_release(r0);
                    ax_array_release(r1);
                }
                chk_done(&c);
                free(want);
                free(tot);
            }
        }
        red_free(&in);
    }
    op_ctx_done(cx);
}

OP_TEST(scans_fst_snd)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t a[15];
    for (int k = 0; k < 15; k++) a[k] = (int32_t)val_of(k);
    ax_acc m = use_data(cx, AX_I32, 2, SH(3, 5), a);
    const int32_t z = -99;
    ax_acc progs[8] = {
        ax_scanl1(ax_fn_fst, NULL, m), ax_scanl1(ax_fn_snd, NULL, m),
        ax_scanr1(ax_fn_fst, NULL, m), ax_scanr1(ax_fn_snd, NULL, m),
        ax_scanl(ax_fn_fst, NULL, ax_i32(z), m), ax_scanl(ax_fn_snd, NULL, ax_i32(z), m),
        ax_scanr(ax_fn_fst, NULL, ax_i32(z), m), ax_scanr(ax_fn_snd, NULL, ax_i32(z), m),
    };
    for (int p = 0; p < 8; p++) {
        int64_t len = p < 4 ? 5 : 6;
        ax_array *r = RUN(cx, progs[p]);
        if (r && SHAPE_IS(r, 2, 3, len)) {
            Chk c;
            CHK(&c, "scan with fst/snd, program %d", p);
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < len; k++) {
                    const int32_t *row = a + i * 5;
                    int32_t w = 0;
                    switch (p) {
                    case 0: w = row[0]; break;                     /* a0.a1...ak = a0 */
                    case 1: w = row[k]; break;                     /* = ak */
                    case 2: w = row[k]; break;                     /* ak...a4 = ak */
                    case 3: w = row[4]; break;                     /* = a4 */
                    case 4: w = z; break;                          /* z.a0... = z */
                    case 5: w = k ? row[k - 1] : z; break;
                    case 6: w = k < 5 ? row[k] : z; break;
                    case 7: w = z; break;                          /* ...ak.z = z */
                    }
                    chk_i(&c, i * len + k, ((int32_t *)ax_array_data(r, 0))[i * len + k], w);
                }
            chk_done(&c);
        }
        ax_array_release(r);
    }
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

static ax_acc b_scan(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int r = v->rank;
    const int64_t *sh = v->sh;
    int op = v->which % 6, kind = v->which / 6;
    ax_acc a;
    switch (kind) {
    case 0: a = input(cx, AX_I32, r, sh, 40 + op, 1000); break;            /* + on i32 */
    case 1: a = input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_I32}, r, sh, 50 + op, 3); break;  /* affine */
    case 2: a = input(cx, AX_F64, r, sh, 60 + op, 1000); break;            /* fst */
    default: a = ax_map(ax_fn_abs, NULL, input(cx, AX_F32, r, sh, 70 + op, 100)); break;  /* + on f32 */
    }
    ax_fn2 f = kind == 0 || kind == 3 ? ax_fn_add : kind == 1 ? op_aff : ax_fn_fst;
    ax_exp z = kind == 0 ? ax_i32(-3) : kind == 1 ? ax_tuple2(ax_i32(2), ax_i32(1)) : kind == 2 ? ax_f64(0.5) : ax_f32(1);
    switch (op) {
    case 0: return ax_scanl(f, NULL, z, a);
    case 1: return ax_scanl1(f, NULL, a);
    case 2: return ax_scanr(f, NULL, z, a);
    case 3: return ax_scanr1(f, NULL, a);
    case 4: return ax_scanl_ex(f, NULL, z, a);
    default: return ax_scanr_ex(f, NULL, z, a);
    }
}

/* the six scans of one operator kind (w / 6) */
static ax_acc b_scan_kind(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    ax_acc r[6];
    for (int op = 0; op < 6; op++) {
        Env f = *v;
        f.which = v->which * 6 + op;
        r[op] = b_scan(cx, &f);
    }
    return ax_atuple(6, r);
}

DIFF_TEST(scans_all_variants)
{
    for (int kind = 0; kind < 4; kind++)
        for (int s = 0; s < nshapes(be); s++) {
        if (skip_shape(s)) continue;
            Env e = {shapes[s].rank, shapes[s].sh, kind};
            char what[64];
            snprintf(what, sizeof what, "scans of kind %d, shape %d", kind, s);
            SAME(what, b_scan_kind, &e, kind == 3 ? 1e-3 : 0);
        }
}

/* Scans whose last tile leaves threads of the single-pass scan without an
 * element (gpu_skel.c emit_scan1: a tile is GPU_WG threads of K
 * elements): elements of 4, 8, 16 and 24 bytes (K = 8, 4, 2, 1), with fst
 * and snd (which reduce the threads' loops to copies) and + on i32, all
 * six scans.  A regression test: PoCL's compiler once let every thread
 * follow thread 0 into its loop over its own elements there (a thread
 * with none then wrote on past the tile until it faulted: SIGSEGV at the
 * first case with AXLE_GPU_LOOKBACK=1). */
static const ax_scalar tail_ss[4][3] = {{AX_I32}, {AX_F64}, {AX_I64, AX_I64}, {AX_F64, AX_F64, AX_F64}};
static const int tail_n[4] = {1, 1, 2, 3};

static ax_acc b_scan_tail(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int ty = v->which / 3, o = v->which % 3;
    ax_acc r[6];
    for (int op = 0; op < 6; op++) {
        ax_acc a = input_n(cx, tail_n[ty], tail_ss[ty], v->rank, v->sh, 110 + (uint64_t)(v->which * 6 + op), 1000);
        ax_exp zc[3] = {ax_f64(0.5), ax_f64(-2), ax_f64(7)};
        ax_exp z = ty == 0 ? ax_i32(-3) : ty == 1 ? zc[0] : ty == 2 ? ax_tuple2(ax_i64(4), ax_i64(-5)) : ax_tuple(3, zc);
        ax_fn2 f = o == 0 ? ax_fn_fst : o == 1 ? ax_fn_snd : ax_fn_add;
        switch (op) {
        case 0: r[op] = ax_scanl(f, NULL, z, a); break;
        case 1: r[op] = ax_scanl1(f, NULL, a); break;
        case 2: r[op] = ax_scanr(f, NULL, z, a); break;
        case 3: r[op] = ax_scanr1(f, NULL, a); break;
        case 4: r[op] = ax_scanl_ex(f, NULL, z, a); break;
        default: r[op] = ax_scanr_ex(f, NULL, z, a); break;
        }
    }
    return ax_atuple(6, r);
}

DIFF_TEST(scan_last_tile_threads_without_elements_stay_in_bounds)
{
    ax_ctx *cx = kind_ctx(AX_BACKEND_INTERP, false);
    CHECK(cx != NULL);
    for (int ty = 0; cx && ty < 4; ty++) {
        const ax_type *ts[3];
        for (int k = 0; k < tail_n[ty]; k++) ts[k] = ax_type_scalar(tail_ss[ty][k]);
        const ax_type *t = tail_n[ty] == 1 ? ts[0] : ax_type_tuple(cx, tail_n[ty], ts);
        int64_t K = gpu_scan_items(t), T = GPU_WG * K;
        /* one thread with elements, two, all but the last, a tile and one
         * more, two tiles and two threads; rows of those */
        const int64_t n[] = {1, 2, K + 1, T - 1, T + 1, 2 * T + K + 1};
        for (int s = 0; s < 8; s++) {
            int64_t sh[2] = {s < 6 ? n[s] : 3, s == 6 ? K + 1 : T + 1};
            Env e = {s < 6 ? 1 : 2, sh, 0};
            for (int o = 0; o < 3; o++) {
                if (o == 2 && ty > 0) continue;   /* + on i32 only: exact */
                e.which = ty * 3 + o;
                char what[96];
                snprintf(what, sizeof what, "scans of %d-byte elements (K = %lld), op %d, shape %d", ty == 0 ? 4 : ty * 8,
                         (long long)K, o, s);
                SAME(what, b_scan_tail, &e, 0);
            }
        }
    }
    ax_ctx_free(cx);
}

DIFF_TEST(scan_large_arrays)
{
    if (ops_small()) {
        printf("skip scan_large_arrays: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    Env e = {1, &n, 1};
    SAME("scanl1 (+) i32 1e6", b_scan, &e, 0);
    e.which = 6 + 5;
    SAME("scanr' affine 1e6", b_scan, &e, 0);
}

/* ======================================================== segmented scans */

enum { SEG_MAXN = 5 };
typedef struct SegScanCase {
    int rank;
    int64_t sh[2];
    int nseg;
    int64_t segs[SEG_MAXN];
} SegScanCase;

static ax_acc seg_scan_build(int kind, bool affine, ax_acc a, ax_acc segs)
{
    ax_fn2 f = affine ? aff_op : ax_fn_add;
    ax_exp z = affine ? aff_z_exp() : ax_i64(100);
    switch (kind) {
    case SC_L: return ax_scanl_seg(f, NULL, z, a, segs);
    case SC_L1: return ax_scanl1_seg(f, NULL, a, segs);
    case SC_R: return ax_scanr_seg(f, NULL, z, a, segs);
    case SC_R1: return ax_scanr1_seg(f, NULL, a, segs);
    case SC_LEX: return ax_scanl_ex_seg(f, NULL, z, a, segs);
    default: return ax_scanr_ex_seg(f, NULL, z, a, segs);
    }
}

/* Every segmented scan against each segment scanned on its own in plain C
 * (ref_scan), with the non-commutative affine operator and with sums;
 * empty segments (first, last, several in a row, all), one segment, no
 * segment of an empty row, rows of a matrix, and segments given in five
 * integer types. */
OP_TEST(segmented_scans)
{
    static const SegScanCase cases[] = {
        {1, {10}, 4, {3, 0, 5, 2}},
        {1, {10}, 4, {0, 4, 1, 5}},
        {1, {10}, 5, {2, 8, 0, 0, 0}},
        {1, {10}, 1, {10}},
        {1, {1}, 1, {1}},
        {1, {7}, 5, {0, 7, 0, 0, 0}},
        {2, {3, 10}, 3, {4, 0, 6}},
        {2, {2, 1001}, 3, {500, 1, 500}},
        {1, {0}, 0, {0}},
        {1, {0}, 2, {0, 0}},
        {2, {0, 10}, 2, {4, 6}},
        {2, {3, 0}, 3, {0, 0, 0}},
    };
    static const ax_scalar seg_types[] = {AX_I32, AX_I64, AX_I16, AX_U8, AX_U32};
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const SegScanCase *c = &cases[t];
        RedIn in;
        red_in(cx, &in, c->rank, c->sh);
        /* (the GPUs: the non-commutative operator alone, PoCL's compiles
         * being seconds each) */
        for (int affine = be->gpu ? 1 : 0; affine < 2; affine++) {
            AffOp op = affine ? aff_compose : aff_add;
            Aff z = affine ? aff_z : sum_z;
            for (int kind = 0; kind < SC_N; kind++) {
                bool plus1 = kind == SC_L || kind == SC_R, ex = kind == SC_LEX || kind == SC_REX;
                int64_t rlen = in.inner + (plus1 ? c->nseg : 0);
                Aff *want = calloc((size_t)(in.rows * rlen) + 1, sizeof *want);
                Aff *tot = calloc((size_t)(in.rows * c->nseg) + 1, sizeof *tot);
                for (int64_t r = 0; r < in.rows; r++) {
                    int64_t at = 0, out = r * rlen;
                    for (int i = 0; i < c->nseg; i++) {
                        out += ref_scan(kind, op, z, in.v + r * in.inner + at, c->segs[i], want + out,
                                        tot + r * c->nseg + i);
                        if (ex && c->segs[i] == 0) tot[r * c->nseg + i] = z;
                        at += c->segs[i];
                    }
                }
                int64_t rsh[2] = {c->sh[0], rlen}, tsh[2] = {c->sh[0], c->nseg};
                if (c->rank == 1) rsh[0] = rlen, tsh[0] = c->nseg;
                /* one segment type per case and kind, all five over the cases */
                /* (the GPUs: i32 only, so that the cases share their
                 * kernels; each OpenCL program costs PoCL seconds) */
                ax_scalar st = AX_I32;
                for (int k = 0; !be->gpu && k < NELEM(seg_types); k++) {
                    ax_scalar try = seg_types[(t + kind + k) % NELEM(seg_types)];
                    bool fits = true;
                    for (int i = 0; i < c->nseg; i++) fits &= c->segs[i] <= type_max(try);
                    if (fits) {
                        st = try;
                        break;
                    }
                }
                uint64_t buf[SEG_MAXN];
                for (int i = 0; i < c->nseg; i++) st_i(buf, st, i, c->segs[i]);
                ax_acc p = seg_scan_build(kind, affine, affine ? in.aff : in.sum,
                                          use_data(cx, st, 1, SH(c->nseg), buf));
                Chk ch;
                CHK(&ch, "%s_seg %s, case %d, segments %s", scan_names[kind], affine ? "affine" : "add", t,
                    ax_scalar_name(st));
                if (!ex) {
                    ax_array *r = RUN(cx, p);
                    if (r && SHAPE_ISV(r, c->rank, rsh)) chk_aff(&ch, r, affine, want, in.rows * rlen);
                    ax_array_release(r);
                } else {
                    ax_array *o[2] = {NULL, NULL};
                    int nout = RUN_N(cx, p, o, 2);
                    CHECKF(nout == 2, "ax_run_n gave %d: %s", nout, ax_error(cx));
                    if (nout == 2) {
                        if (SHAPE_ISV(o[0], c->rank, rsh)) chk_aff(&ch, o[0], affine, want, in.rows * rlen);
                        if (SHAPE_ISV(o[1], c->rank, tsh)) chk_aff(&ch, o[1], affine, tot, in.rows * c->nseg);
                        ax_array_release(o[0]);
                        ax_array_release(o[1]);
                    }
                }
                chk_done(&ch);
                free(want);
                free(tot);
            }
        }
        red_free(&in);
    }
    op_ctx_done(cx);
}

/* Segments that do not fit are a run-time shape error on every backend
 * (negative, adding up to more or less than the extent), and the context
 * stays usable; operands of the wrong kind are build errors naming the
 * operation. */
BE_TEST(segmented_scan_errors)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int32_t a[6] = {1, 2, 3, 4, 5, 6};
    static const int32_t bad[3][3] = {{2, -1, 5}, {2, 2, 1}, {2, 2, 3}};
    ax_acc v = use_data(cx, AX_I32, 1, SH(6), a);
    for (int b = 0; b < 3; b++) {
        ax_acc segs = use_data(cx, AX_I32, 1, SH(3), bad[b]);
        EXPECT_FAIL(cx, ax_scanl1_seg(ax_fn_add, NULL, v, segs), AX_ERR_SHAPE);
        EXPECT_FAIL(cx, ax_scanr_seg(ax_fn_add, NULL, ax_i32(0), v, segs), AX_ERR_SHAPE);
        ax_array *r = ax_run(cx, ax_aget(ax_scanr_ex_seg(ax_fn_add, NULL, ax_i32(0), v, segs), 1));
        CHECK(r == NULL);
        CHECKF(strstr(ax_error(cx), "segment") != NULL, "%s", ax_error(cx));
        ax_array_release(r);
        ax_clear_error(cx);
    }
    ax_acc good = use_data(cx, AX_I32, 1, SH(3), (const int32_t[]){2, 0, 4});
    ax_array *r = ax_run(cx, ax_scanl1_seg(ax_fn_add, NULL, v, good));
    CHECKF(r && ax_array_size(r) == 6, "after the errors: %s", r ? "wrong size" : ax_error(cx));
    if (r && ax_array_size(r) == 6) {
        const int32_t want[6] = {1, 3, 3, 7, 12, 18};
        for (int k = 0; k < 6; k++) CHECK(((int32_t *)ax_array_data(r, 0))[k] == want[k]);
    }
    ax_array_release(r);
    CHECK(ax_scanl_seg(ax_fn_add, NULL, ax_i32(0), v, NULL) == NULL);
    CHECK(strstr(ax_error(cx), "ax_scanl_seg") != NULL);
    ax_clear_error(cx);
    CHECK(ax_scanr1_seg(ax_fn_add, NULL, v, ax_map(ax_fn_id, NULL, v)) != NULL);
    CHECK(ax_scanr1_seg(ax_fn_add, NULL, v, use_data(cx, AX_F32, 1, SH(1), (const float[]){6})) == NULL);
    CHECKF(strstr(ax_error(cx), "ax_scanr1_seg") != NULL, "%s", ax_error(cx));
    ax_clear_error(cx);
    CHECK(ax_scanl_ex_seg(ax_fn_add, NULL, ax_f64(0), v, good) == NULL);
    CHECKF(strstr(ax_error(cx), "ax_scanl_ex_seg") != NULL, "%s", ax_error(cx));
    ax_clear_error(cx);
    op_ctx_done(cx);
}

/* Large inputs against the interpreter: a million elements in segments of
 * random lengths (many of them empty), every segmented scan, + on f32 and
 * the affine operator on i32 pairs; rows of a matrix. */
static ax_acc b_seg_scan(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int64_t n = v->sh[v->rank - 1];
    int32_t *len = calloc((size_t)n + 1, sizeof *len);
    int64_t m = 0, left = n;
    uint64_t x = 0x9e3779b97f4a7c15u ^ (uint64_t)n;
    while (left > 0) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        int64_t l = (int64_t)(x >> 33) % 9 - 2;   /* a third empty */
        if (l < 0) l = 0;
        if (l > left) l = left;
        len[m++] = (int32_t)l;
        left -= l;
    }
    ax_acc segs = use_data(cx, AX_I32, 1, SH(m), len);
    free(len);
    bool affine = v->which == 1;
    ax_acc a = affine ? input_n(cx, 2, (const ax_scalar[]){AX_I32, AX_I32}, v->rank, v->sh, 130, 3)
                      : ax_map(ax_fn_abs, NULL, input(cx, AX_F32, v->rank, v->sh, 131, 100));
    ax_fn2 f = affine ? op_aff : ax_fn_add;
    ax_exp z = affine ? ax_tuple2(ax_i32(2), ax_i32(1)) : ax_f32(0.5f);
    ax_acc r[6] = {
        ax_scanl_seg(f, NULL, z, a, segs), ax_scanl1_seg(f, NULL, a, segs),
        ax_scanr_seg(f, NULL, z, a, segs), ax_scanr1_seg(f, NULL, a, segs),
        ax_scanl_ex_seg(f, NULL, z, a, segs), ax_scanr_ex_seg(f, NULL, z, a, segs),
    };
    return ax_atuple(6, r);
}

DIFF_TEST(segmented_scans_large)
{
    const int64_t big = ops_small() ? 4000 : 1000000, mat[2] = {3, ops_small() ? 1001 : 5001};
    /* (the GPUs: the affine long vector alone, PoCL's compiles being slow) */
    for (int w = 0; w < 2; w++) {
        Env e = {1, &big, w};
        if (!be->gpu || w == 1)
            SAME(w ? "segmented scans, affine, long vector" : "segmented scans, f32 +, long vector", b_seg_scan, &e,
                 w ? 0 : 1e-3);
        Env m = {2, mat, w};
        if (!be->gpu)
            SAME(w ? "segmented scans, affine, rows" : "segmented scans, f32 +, rows", b_seg_scan, &m, w ? 0 : 1e-3);
    }
}
