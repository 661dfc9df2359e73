/*
 * backprop (Rodinia 3.1) baselines: one training step, as Rodinia's
 * bpnn_train_kernel: the forward pass through both layers (each unit's
 * weighted sum down a column of the weight matrix, then the sigmoid), the
 * output and hidden errors, and the weight changes with momentum.  The
 * OpenMP form parallelises what Rodinia's does: the loop over the units of
 * the next layer in the forward pass and in the weight adjustment (16
 * hidden units, 1 output: that is Rodinia's choice, kept).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"
#include <math.h>
#include <stdlib.h>

#define BP_ETA 0.3f
#define BP_MOMENTUM 0.3f
#define BP_MAXH 64        /* hidden and output units (Rodinia: 16 and 1) */

static float bp_squash(float x) { return 1.0f / (1.0f + expf(-x)); }

static void bp_forward(const float *l1, float *l2, const float *w, int64_t n1, int64_t n2, int par)
{
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (par)
#endif
    for (int64_t j = 1; j <= n2; j++) {
        float sum = 0;
        for (int64_t k = 0; k <= n1; k++) sum += w[k * (n2 + 1) + j] * l1[k];
        l2[j] = bp_squash(sum);
    }
    (void)par;
}

static void bp_adjust(const float *delta, int64_t nd, const float *ly, int64_t nly, float *w, float *oldw, int par)
{
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (par)
#endif
    for (int64_t j = 1; j <= nd; j++)
        for (int64_t k = 0; k <= nly; k++) {
            float dw = BP_ETA * delta[j] * ly[k] + BP_MOMENTUM * oldw[k * (nd + 1) + j];
            w[k * (nd + 1) + j] += dw;
            oldw[k * (nd + 1) + j] = dw;
        }
    (void)par;
}

static void bp_train(int64_t nin, int64_t nhid, int64_t nout, const float *in, const float *target, float *w1,
                     float *w2, float *p1, float *p2, int par)
{
    float hid[BP_MAXH + 1], out[BP_MAXH + 1], dout[BP_MAXH + 1], dhid[BP_MAXH + 1];
    if (nhid > BP_MAXH || nout > BP_MAXH) abort();
    bp_forward(in, hid, w1, nin, nhid, par);
    hid[0] = 1;
    bp_forward(hid, out, w2, nhid, nout, par);
    for (int64_t j = 1; j <= nout; j++) dout[j] = out[j] * (1 - out[j]) * (target[j] - out[j]);
    for (int64_t j = 1; j <= nhid; j++) {
        float sum = 0;
        for (int64_t k = 1; k <= nout; k++) sum += dout[k] * w2[j * (nout + 1) + k];
        dhid[j] = hid[j] * (1 - hid[j]) * sum;
    }
    bp_adjust(dout, nout, hid, nhid, w2, p2, par);
    bp_adjust(dhid, nhid, in, nin, w1, p1, par);
}

void BL(rd_backprop_serial) RD_BACKPROP_ARGS { bp_train(nin, nhid, nout, in, target, w1, w2, p1, p2, 0); }

void BL(rd_backprop_omp) RD_BACKPROP_ARGS { bp_train(nin, nhid, nout, in, target, w1, w2, p1, p2, 1); }
