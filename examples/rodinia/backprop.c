/*
 * backprop (Rodinia 3.1): one training step of a fully connected network
 * with one hidden layer (n inputs, 16 hidden units, 1 output; unit 0 of
 * the input and hidden layers is the bias, 1): the forward pass (each
 * unit the sigmoid 1 / (1 + e^-x) of its weighted sum), the output error
 * o (1 - o) (t - o), the hidden errors h (1 - h) sum_k delta_k w_jk, and
 * the weight changes eta delta_j y_k + momentum dw_prev (eta = momentum =
 * 0.3) added to both weight matrices.  Result: the two weight matrices,
 * (n+1) x 17 and 17 x 2 (column 0, the bias unit's, is never changed).
 * In axle: each layer is an ax_zip_with of the weights with the replicated
 * units, transposed and folded; the activations and errors ax_generate
 * over the units; the updates ax_generate over the weights.
 *
 * Sizes: n is the input layer (Rodinia's benchmark: 65,536; the hidden
 * and output layers are fixed at 16 and 1 there too).  Inputs as Rodinia's:
 * inputs and weights uniform in [0, 1] (ex_rng), previous changes 0, the
 * target 0.1.  (With n that large every hidden sum saturates the sigmoid
 * to 1 in f32, so the hidden errors are 0: Rodinia's own behaviour.)
 *
 * Check: against the same step in double precision.  The weights are
 * about 1 and their changes about 1e-4; an f32 sigmoid near 1 loses most
 * of 1 - o's digits, which moves a change by about 1e-8: tolerance 2e-6 +
 * 4 FLT_EPSILON |w| (a wrong eta or error term moves the changes by 1e-5
 * or more), twice that against the baselines.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "rodinia/baselines.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const void *rd_array(const char *prog, const char *what, ax_array *a, ax_scalar s, int64_t count, char *msg,
                     size_t size);

#define BP_HID 16
#define BP_OUT 1
#define BP_ETA 0.3f
#define BP_MOMENTUM 0.3f
#define BP_TARGET 0.1f

typedef struct {
    int64_t n;
    float *in, *w1, *w2, *p1, *p2, *target;      /* inputs */
    float *b1, *b2, *bp1, *bp2;                   /* the last baseline's weights and changes */
    double *r1, *r2;                              /* the reference weights */
    ax_array *a_in, *a_w1, *a_w2, *a_p1, *a_p2, *a_target;
} Backprop;

/* ------------------------------------------------------------ the program */

static ax_exp bp_squash(ax_exp x) { return ax_div(ax_f32(1), ax_add(ax_f32(1), ax_exp_(ax_neg(x)))); }

/* The weighted sums of the next layer: sum_k w[k][j] l1[k], for every j. */
static ax_acc bp_sums(ax_acc l1, ax_acc w)
{
    ax_acc units = ax_replicate(2, (ax_slice[]){ax_all(), ax_fixed(ax_index_get(ax_shape(w), 1))}, l1);
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_transpose(ax_zip_with(ax_fn_mul, NULL, w, units), NULL));
}

/* Unit j of a layer: the bias 1 at j = 0, else the sigmoid of its sum. */
static ax_exp bp_unit(ax_exp ix, void *env)
{
    ax_acc sums = *(ax_acc *)env;
    return ax_cond(ax_eq(ax_index_get(ix, 0), ax_i64(0)), ax_f32(1), bp_squash(ax_at(sums, ix)));
}

static ax_acc bp_layer(ax_ctx *cx, ax_acc l1, ax_acc w)
{
    ax_acc sums = bp_sums(l1, w);
    return ax_generate(cx, ax_shape(sums), bp_unit, &sums);
}

/* The output errors o (1 - o) (t - o) (0 at the unused place 0). */
typedef struct { ax_acc out, target, hid, sums; } BpErr;

static ax_exp bp_out_error(ax_exp ix, void *env)
{
    const BpErr *e = env;
    ax_exp o = ax_at(e->out, ix), t = ax_at(e->target, ix);
    ax_exp d = ax_mul(ax_mul(o, ax_sub(ax_f32(1), o)), ax_sub(t, o));
    return ax_cond(ax_eq(ax_index_get(ix, 0), ax_i64(0)), ax_f32(0), d);
}

/* The hidden errors h (1 - h) sum_k delta_k w[j][k] (0 at the bias). */
static ax_exp bp_hid_error(ax_exp ix, void *env)
{
    const BpErr *e = env;
    ax_exp h = ax_at(e->hid, ix);
    ax_exp d = ax_mul(ax_mul(h, ax_sub(ax_f32(1), h)), ax_at(e->sums, ix));
    return ax_cond(ax_eq(ax_index_get(ix, 0), ax_i64(0)), ax_f32(0), d);
}

/* The new weights and changes: w[k][j] + (eta delta[j] y[k] + momentum
 * prev[k][j]) for j > 0. */
typedef struct { ax_acc delta, y, w, prev; } BpAdj;

static ax_exp bp_change(ax_exp ix, void *env)
{
    const BpAdj *a = env;
    ax_exp k = ax_index_get(ix, 0), j = ax_index_get(ix, 1);
    ax_exp dw = ax_add(ax_mul(ax_mul(ax_f32(BP_ETA), ax_at(a->delta, ax_ix1(j))), ax_at(a->y, ax_ix1(k))),
                       ax_mul(ax_f32(BP_MOMENTUM), ax_at(a->prev, ix)));
    return ax_cond(ax_eq(j, ax_i64(0)), ax_f32(0), dw);
}

static ax_acc bp_adjust(ax_ctx *cx, ax_acc delta, ax_acc y, ax_acc w, ax_acc prev)
{
    BpAdj a = {delta, y, w, prev};
    return ax_zip_with(ax_fn_add, NULL, w, ax_generate(cx, ax_shape(w), bp_change, &a));
}

static ax_acc backprop_build(ax_ctx *cx, void *st)
{
    Backprop *s = st;
    ax_acc in = ax_use(cx, s->a_in), w1 = ax_use(cx, s->a_w1), w2 = ax_use(cx, s->a_w2);
    ax_acc hid = bp_layer(cx, in, w1);
    ax_acc out = bp_layer(cx, hid, w2);
    BpErr e = {out, ax_use(cx, s->a_target), hid, NULL};
    ax_acc dout = ax_generate(cx, ax_shape(out), bp_out_error, &e);
    /* sum_k delta_k w[j][k], along the rows of w2 */
    ax_acc drep = ax_replicate(2, (ax_slice[]){ax_fixed(ax_index_get(ax_shape(w2), 0)), ax_all()}, dout);
    e.sums = ax_fold(ax_fn_add, NULL, ax_f32(0), ax_zip_with(ax_fn_mul, NULL, drep, w2));
    ax_acc dhid = ax_generate(cx, ax_shape(hid), bp_hid_error, &e);
    return ax_atuple2(bp_adjust(cx, dhid, in, w1, ax_use(cx, s->a_p1)), bp_adjust(cx, dout, hid, w2, ax_use(cx, s->a_p2)));
}

/* ------------------------------------------------------------ inputs */

static void backprop_teardown(void *st)
{
    Backprop *s = st;
    if (!s) return;
    ax_array *arrs[] = {s->a_in, s->a_w1, s->a_w2, s->a_p1, s->a_p2, s->a_target};
    for (size_t i = 0; i < sizeof arrs / sizeof *arrs; i++) ax_array_release(arrs[i]);
    void *bufs[] = {s->in, s->w1, s->w2, s->p1, s->p2, s->target, s->b1, s->b2, s->bp1, s->bp2, s->r1, s->r2};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(s);
}

static void *backprop_setup(ax_ctx *cx, int64_t n)
{
    Backprop *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    size_t n1 = (size_t)(n + 1) * (BP_HID + 1), n2 = (BP_HID + 1) * (BP_OUT + 1);
    s->in = malloc(sizeof(float) * (size_t)(n + 1));
    s->w1 = malloc(sizeof(float) * n1);
    s->p1 = calloc(n1, sizeof(float));
    s->b1 = malloc(sizeof(float) * n1);
    s->bp1 = malloc(sizeof(float) * n1);
    s->w2 = malloc(sizeof(float) * n2);
    s->p2 = calloc(n2, sizeof(float));
    s->b2 = malloc(sizeof(float) * n2);
    s->bp2 = malloc(sizeof(float) * n2);
    s->target = malloc(sizeof(float) * (BP_OUT + 1));
    if (!s->in || !s->w1 || !s->p1 || !s->b1 || !s->bp1 || !s->w2 || !s->p2 || !s->b2 || !s->bp2 || !s->target)
        goto fail;
    ex_rng r = {0x2127599BF4325C37ull};
    for (size_t i = 0; i < n1; i++) s->w1[i] = (float)ex_uniform(&r, 0, 1);
    for (size_t i = 0; i < n2; i++) s->w2[i] = (float)ex_uniform(&r, 0, 1);
    s->in[0] = 1;
    for (int64_t i = 1; i <= n; i++) s->in[i] = (float)ex_uniform(&r, 0, 1);
    for (int j = 0; j <= BP_OUT; j++) s->target[j] = BP_TARGET;
    int64_t sin = n + 1, sh1[2] = {n + 1, BP_HID + 1}, sh2[2] = {BP_HID + 1, BP_OUT + 1}, st = BP_OUT + 1;
    s->a_in = ax_array_wrap(cx, AX_F32, 1, &sin, s->in);
    s->a_w1 = ax_array_wrap(cx, AX_F32, 2, sh1, s->w1);
    s->a_p1 = ax_array_wrap(cx, AX_F32, 2, sh1, s->p1);
    s->a_w2 = ax_array_wrap(cx, AX_F32, 2, sh2, s->w2);
    s->a_p2 = ax_array_wrap(cx, AX_F32, 2, sh2, s->p2);
    s->a_target = ax_array_wrap(cx, AX_F32, 1, &st, s->target);
    if (!s->a_in || !s->a_w1 || !s->a_p1 || !s->a_w2 || !s->a_p2 || !s->a_target) goto fail;
    return s;
fail:
    backprop_teardown(s);
    return NULL;
}

/* ------------------------------------------------------------ checks */

static int backprop_reference(Backprop *s)
{
    if (s->r1) return 0;
    int64_t n = s->n, H = BP_HID, O = BP_OUT;
    s->r1 = malloc(sizeof(double) * (size_t)(n + 1) * (BP_HID + 1));
    s->r2 = malloc(sizeof(double) * (BP_HID + 1) * (BP_OUT + 1));
    if (!s->r1 || !s->r2) return -1;
    double hid[BP_HID + 1], out[BP_OUT + 1], dout[BP_OUT + 1], dhid[BP_HID + 1];
    hid[0] = 1;
    for (int64_t j = 1; j <= H; j++) {
        double sum = 0;
        for (int64_t k = 0; k <= n; k++) sum += (double)s->w1[k * (H + 1) + j] * s->in[k];
        hid[j] = 1 / (1 + exp(-sum));
    }
    for (int64_t j = 1; j <= O; j++) {
        double sum = 0;
        for (int64_t k = 0; k <= H; k++) sum += (double)s->w2[k * (O + 1) + j] * hid[k];
        out[j] = 1 / (1 + exp(-sum));
        dout[j] = out[j] * (1 - out[j]) * (BP_TARGET - out[j]);
    }
    for (int64_t j = 1; j <= H; j++) {
        double sum = 0;
        for (int64_t k = 1; k <= O; k++) sum += dout[k] * s->w2[j * (O + 1) + k];
        dhid[j] = hid[j] * (1 - hid[j]) * sum;
    }
    for (int64_t k = 0; k <= H; k++)
        for (int64_t j = 0; j <= O; j++)
            s->r2[k * (O + 1) + j] = s->w2[k * (O + 1) + j] + (j ? (double)BP_ETA * dout[j] * hid[k] : 0);
    for (int64_t k = 0; k <= n; k++)
        for (int64_t j = 0; j <= H; j++)
            s->r1[k * (H + 1) + j] = s->w1[k * (H + 1) + j] + (j ? (double)BP_ETA * dhid[j] * s->in[k] : 0);
    return 0;
}

static int bp_close(const char *what, const float *got, const float *wf, const double *wd, int64_t count,
                    double scale, char *msg, size_t size)
{
    for (int64_t i = 0; i < count; i++) {
        double want = wf ? wf[i] : wd[i], tol = scale * (2e-6 + 4 * FLT_EPSILON * fabs(want));
        if (!(fabs(got[i] - want) <= tol)) {
            snprintf(msg, size, "backprop: %s[%lld]: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)i,
                     got[i], want, tol);
            return -1;
        }
    }
    return 0;
}

static int backprop_compare(Backprop *s, ax_array *const *res, int nres, int baseline, char *msg, size_t size)
{
    if (nres != 2) { snprintf(msg, size, "backprop: expected two results"); return -1; }
    int64_t n1 = (s->n + 1) * (BP_HID + 1), n2 = (BP_HID + 1) * (BP_OUT + 1);
    const float *g1 = rd_array("backprop", "input weights", res[0], AX_F32, n1, msg, size);
    const float *g2 = g1 ? rd_array("backprop", "hidden weights", res[1], AX_F32, n2, msg, size) : NULL;
    if (!g2) return -1;
    if (backprop_reference(s)) { snprintf(msg, size, "backprop: out of memory"); return -1; }
    double scale = baseline ? 2 : 1;
    if (bp_close("input weights", g1, baseline ? s->b1 : NULL, s->r1, n1, scale, msg, size)) return -1;
    return bp_close("hidden weights", g2, baseline ? s->b2 : NULL, s->r2, n2, scale, msg, size);
}

static int backprop_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return backprop_compare(st, res, nres, 0, msg, size);
}

static int backprop_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return backprop_compare(st, res, nres, 1, msg, size);
}

static int backprop_run_baseline(Backprop *s, void (*f)RD_BACKPROP_ARGS)
{
    size_t n1 = sizeof(float) * (size_t)(s->n + 1) * (BP_HID + 1), n2 = sizeof(float) * (BP_HID + 1) * (BP_OUT + 1);
    memcpy(s->b1, s->w1, n1);
    memcpy(s->bp1, s->p1, n1);
    memcpy(s->b2, s->w2, n2);
    memcpy(s->bp2, s->p2, n2);
    f(s->n, BP_HID, BP_OUT, s->in, s->target, s->b1, s->b2, s->bp1, s->bp2);
    return 0;
}

static int backprop_baseline(void *st, int variant)
{
    return backprop_run_baseline(st, variant ? rd_backprop_omp_fast : rd_backprop_omp_std);
}

static int backprop_baseline_serial(void *st, int variant)
{
    return backprop_run_baseline(st, variant ? rd_backprop_serial_fast : rd_backprop_serial_std);
}

const ex_program ex_rd_backprop = {
    .name = "backprop",
    .about = "Rodinia backprop: one training step of an n-16-1 network (replicate/zipWith/fold layers, generate updates)",
    .default_size = 65536,
    .setup = backprop_setup,
    .build = backprop_build,
    .check = backprop_check,
    .teardown = backprop_teardown,
    .baseline = backprop_baseline,
    .check_baseline = backprop_check_baseline,
    .bench_size = 65536,
    .test_size = 4096,
    .extra = true,
    .suite = "rodinia",
    .baseline_serial = backprop_baseline_serial,
};
