/* The dot product, dotp xs ys = fold (+) 0 (zipWith (*) xs ys): the
 * README's first program.  SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>

int main(void)
{
    float x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8};
    int64_t n = 4;

    ax_ctx *cx = ax_ctx_new(NULL);                       /* options: NULL = defaults */
    ax_array *xa = ax_array_wrap(cx, AX_F32, 1, &n, x);  /* borrows x, no copy */
    ax_array *ya = ax_array_wrap(cx, AX_F32, 1, &n, y);

    ax_acc xs = ax_use(cx, xa), ys = ax_use(cx, ya);
    ax_acc dotp = ax_fold(ax_fn_add, NULL, ax_f32(0),
                          ax_zip_with(ax_fn_mul, NULL, xs, ys));

    ax_array *r = ax_run(cx, dotp);                      /* NULL on error */
    if (!r) { fprintf(stderr, "axle: %s\n", ax_error(cx)); return 1; }
    printf("%g\n", *(float *)ax_array_data(r, 0));       /* 70 */

    ax_array_release(r);
    ax_ctx_free(cx);                                     /* frees everything left */
    return 0;
}
