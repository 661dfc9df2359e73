/* Compile once, run many (docs/parameters.md): saxpy with its factor and
 * both vectors as parameters, compiled once and run on new values and
 * new lengths without compiling again.  SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>

/* env: the factor, an expression (here a scalar parameter) */
static ax_exp saxpy(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = *(ax_exp *)env;
    return ax_add(ax_mul(a, x), y);
}

int main(void)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    const ax_type *f32 = ax_type_scalar(AX_F32);

    /* parameter 0: a scalar; parameters 1 and 2: vectors of f32 */
    ax_exp a = ax_param_exp(cx, 0, f32);
    ax_acc xs = ax_param(cx, 1, f32, 1), ys = ax_param(cx, 2, f32, 1);
    ax_program *p = ax_compile(cx, ax_zip_with(saxpy, &a, xs, ys));
    if (!p) { fprintf(stderr, "axle: %s\n", ax_error(cx)); return 1; }
    printf("compiled: %d parameters, %lld kernel\n", ax_program_params(p),
           (long long)ax_program_stats(p)->kernels);
    ax_ctx_reset(cx);   /* the terms can go: the program keeps what it needs */

    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
    float factors[3] = {2, -1, 0.5f};
    int64_t lengths[3] = {4, 2, 3};
    for (int k = 0; k < 3; k++) {
        /* the arguments: a rank-0 array for the scalar, the vectors */
        ax_array *args[3] = {
            ax_array_from(cx, AX_F32, 0, NULL, &factors[k]),
            ax_array_wrap(cx, AX_F32, 1, &lengths[k], x),
            ax_array_wrap(cx, AX_F32, 1, &lengths[k], y),
        };
        ax_array *r;
        if (ax_program_run_with(p, args, 3, &r, 1) != 1) {
            fprintf(stderr, "axle: %s\n", ax_error(cx));
            return 1;
        }
        const float *v = ax_array_data(r, 0);
        printf("a = %4g:", factors[k]);
        for (int64_t i = 0; i < ax_array_size(r); i++) printf(" %g", v[i]);
        printf("\n");
        ax_array_release(r);
        for (int i = 0; i < 3; i++) ax_array_release(args[i]);   /* read during the call only */
    }

    ax_program_free(p);
    ax_ctx_free(cx);
    return 0;
}
