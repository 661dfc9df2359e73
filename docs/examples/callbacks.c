/* Scalar functions are C callbacks (docs/callbacks.md): axle calls each one
 * once, while the operation is built, with fresh variables, and keeps the
 * expression it returns.  SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>

/* A plain function of one element: clamps x into [0, 1]. */
static ax_exp clamp01(ax_exp x, void *env)
{
    (void)env;
    return ax_max(ax_f32(0), ax_min(x, ax_f32(1)));
}

/* env carries whatever the function needs, here the factor of a*x + y. */
static ax_exp saxpy(ax_exp x, ax_exp y, void *env)
{
    float a = *(const float *)env;
    return ax_add(ax_mul(ax_f32(a), x), y);
}

/* A function of the index: element i of generate is i * i.  Using the
 * C variable i twice uses one term twice (axle computes it once). */
static ax_exp square_of_index(ax_exp ix, void *env)
{
    (void)env;
    ax_exp i = ax_cvt(ax_index_get(ix, 0), AX_F32);
    return ax_mul(i, i);
}

/* A callback can build anything, even read another array: env carries
 * the array computation. */
static ax_exp plus_first(ax_exp x, void *env)
{
    ax_acc xs = *(ax_acc *)env;
    return ax_add(x, ax_at(xs, ax_ix1(ax_i64(0))));
}

static void print(const char *what, ax_array *r)
{
    const float *v = ax_array_data(r, 0);
    printf("%-9s", what);
    for (int64_t i = 0; i < ax_array_size(r); i++) printf(" %g", v[i]);
    printf("\n");
    ax_array_release(r);
}

int main(void)
{
    float x[5] = {-1, 0.25f, 0.5f, 2, 3}, y[5] = {1, 1, 1, 1, 1};
    int64_t n = 5;
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc xs = ax_use(cx, ax_array_wrap(cx, AX_F32, 1, &n, x));
    ax_acc ys = ax_use(cx, ax_array_wrap(cx, AX_F32, 1, &n, y));

    float a = 2;
    print("clamp01", ax_run(cx, ax_map(clamp01, NULL, xs)));
    print("saxpy", ax_run(cx, ax_zip_with(saxpy, &a, xs, ys)));
    print("squares", ax_run(cx, ax_generate(cx, ax_ix1(ax_i64(5)), square_of_index, NULL)));
    print("plus x0", ax_run(cx, ax_map(plus_first, &xs, xs)));
    /* the ready-made functions: the largest element */
    print("max", ax_run(cx, ax_fold(ax_fn_max, NULL, ax_f32(-1e30f), xs)));

    ax_ctx_free(cx);   /* also frees the two wrapped arrays' handles */
    return 0;
}
