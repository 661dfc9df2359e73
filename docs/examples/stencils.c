/* Stencils (docs/stencils.md): a 3-point average along a vector and a
 * 3x3 Laplacian over a matrix, with different boundaries.
 * SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>

/* f receives the neighbourhood in row-major order, the centre in the
 * middle: n[0] n[1] n[2] for a 3-point stencil. */
static ax_exp average3(const ax_exp *n, void *env)
{
    (void)env;
    return ax_div(ax_add(ax_add(n[0], n[1]), n[2]), ax_f32(3));
}

/* 3x3: n[0..2] the row above, n[3..5] the centre row, n[6..8] below.
 * The 5-point Laplacian reads the four neighbours and the centre n[4]. */
static ax_exp laplace(const ax_exp *n, void *env)
{
    (void)env;
    ax_exp around = ax_add(ax_add(n[1], n[7]), ax_add(n[3], n[5]));
    return ax_sub(around, ax_mul(ax_f32(4), n[4]));
}

static void print(const char *what, ax_array *r)
{
    const float *v = ax_array_data(r, 0);
    int64_t cols = ax_array_extent(r, ax_array_rank(r) - 1);
    printf("%s:", what);
    for (int64_t i = 0; i < ax_array_size(r); i++)
        printf("%s%g", i % cols == 0 ? "\n " : " ", v[i]);
    printf("\n");
    ax_array_release(r);
}

int main(void)
{
    float line[6] = {3, 6, 9, 3, 0, 6};
    float img[3 * 4] = {0, 0, 0, 0,
                        0, 1, 1, 0,
                        0, 0, 0, 0};
    int64_t n = 6, shape[2] = {3, 4};
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc xs = ax_use(cx, ax_array_wrap(cx, AX_F32, 1, &n, line));
    ax_acc im = ax_use(cx, ax_array_wrap(cx, AX_F32, 2, shape, img));

    int size1[1] = {3}, size2[2] = {3, 3};
    /* outside the vector: the nearest edge element (clamp) or its mirror */
    print("average, clamp", ax_run(cx, ax_stencil(average3, NULL, size1, ax_clamp(), xs)));
    print("average, mirror", ax_run(cx, ax_stencil(average3, NULL, size1, ax_mirror(), xs)));
    /* outside the matrix: zeros (a constant of the element type) */
    print("laplace, zero outside",
          ax_run(cx, ax_stencil(laplace, NULL, size2, ax_constant(ax_f32(0)), im)));

    ax_ctx_free(cx);
    return 0;
}
