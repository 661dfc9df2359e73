/*
 * loop-steps: what one step of an ax_awhile costs beyond its kernels'
 * own work.  n steps of `x = map (+1) x` over 16 f32 elements, the step
 * counter a rank-0 i64 carried in the loop's state (the way the header
 * teaches a counted loop); the kernels do almost nothing, so run ms / n
 * is the host's cost per step: the condition's read, the host walk of the
 * body, the arrays it makes and frees, the pool's wake-ups.  The baseline
 * is the same loop in plain C (which the C compiler may collapse: the
 * ratio is not the point, the time per step is).
 *
 * Input: x[i] = i.  Result: x[i] = i + n, exact in f32 for n < 2^24.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STEPS_LANES = 16 };

typedef struct Steps {
    int64_t n;
    float x[STEPS_LANES], bl[STEPS_LANES];
    ax_array *ax, *ac;
    int64_t zero;
    bool bl_done;
} Steps;

static void *steps_setup(ax_ctx *cx, int64_t n)
{
    Steps *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    for (int i = 0; i < STEPS_LANES; i++) s->x[i] = (float)i;
    int64_t len = STEPS_LANES;
    s->ax = ax_array_wrap(cx, AX_F32, 1, &len, s->x);
    s->ac = ax_array_wrap(cx, AX_I64, 0, NULL, &s->zero);
    if (!s->ax || !s->ac) {
        ax_array_release(s->ax);
        ax_array_release(s->ac);
        free(s);
        return NULL;
    }
    return s;
}

static ax_exp below(ax_exp k, void *env) { return ax_lt(k, ax_i64(*(const int64_t *)env)); }
static ax_exp plus1_i(ax_exp k, void *env) { (void)env; return ax_add(k, ax_i64(1)); }
static ax_exp plus1_f(ax_exp v, void *env) { (void)env; return ax_add(v, ax_f32(1)); }
static ax_acc steps_cond(ax_acc st, void *env) { return ax_map(below, env, ax_aget(st, 0)); }
static ax_acc steps_body(ax_acc st, void *env)
{
    (void)env;
    return ax_atuple2(ax_map(plus1_i, NULL, ax_aget(st, 0)), ax_map(plus1_f, NULL, ax_aget(st, 1)));
}

static ax_acc steps_build(ax_ctx *cx, void *st)
{
    Steps *s = st;
    ax_acc init = ax_atuple2(ax_use(cx, s->ac), ax_use(cx, s->ax));
    return ax_aget(ax_awhile(steps_cond, steps_body, &s->n, init), 1);
}

static int steps_compare(const Steps *s, const float *got, const char *who, char *msg, size_t size)
{
    for (int i = 0; i < STEPS_LANES; i++)
        if (got[i] != (float)i + (float)s->n) {
            snprintf(msg, size, "loop-steps: %s element %d is %.9g, expected %.9g", who, i, got[i],
                     (double)i + (double)s->n);
            return -1;
        }
    return 0;
}

static int steps_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_shape(res[0])[0] != STEPS_LANES) {
        snprintf(msg, size, "loop-steps: expected one vector of %d elements", STEPS_LANES);
        return -1;
    }
    return steps_compare(st, ax_array_data(res[0], 0), "axle's", msg, size);
}

/* The plain loop (both builds compute the same: additions of 1 to small
 * integers are exact). */
static int steps_baseline(void *st, int variant)
{
    (void)variant;
    Steps *s = st;
    memcpy(s->bl, s->x, sizeof s->bl);
    for (int64_t k = 0; k < s->n; k++)
        for (int i = 0; i < STEPS_LANES; i++) s->bl[i] += 1;
    s->bl_done = true;
    return 0;
}

static int steps_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Steps *s = st;
    (void)res, (void)nres;
    if (!s->bl_done) {
        snprintf(msg, size, "loop-steps: the baseline has not run");
        return -1;
    }
    return steps_compare(s, s->bl, "the baseline's", msg, size);
}

static void steps_teardown(void *st)
{
    Steps *s = st;
    ax_array_release(s->ax);
    ax_array_release(s->ac);
    free(s);
}

const ex_program ex_prog_loop_steps = {
    .name = "loop-steps",
    .about = "awhile step cost: n steps of map (+1) over 16 elements, a counter in the state (run ms / n per step)",
    .default_size = 10000,
    .setup = steps_setup,
    .build = steps_build,
    .check = steps_check,
    .teardown = steps_teardown,
    .baseline = steps_baseline,
    .check_baseline = steps_check_baseline,
    .bench_size = 10000,
    .test_size = 100,
    .extra = true,
};
