/*
 * The program that tests/install/check_install.sh builds against an
 * installed axle (pkg-config and find_package, shared and static): the
 * README's dot product, run on the default backend, and the version of
 * the library it runs with.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <axle.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    float x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8};
    int64_t n = 4;

    ax_ctx *cx = ax_ctx_new(NULL);
    if (!cx) return 1;
    ax_array *xa = ax_array_wrap(cx, AX_F32, 1, &n, x);
    ax_array *ya = ax_array_wrap(cx, AX_F32, 1, &n, y);
    ax_acc dotp = ax_fold(ax_fn_add, NULL, ax_f32(0),
                          ax_zip_with(ax_fn_mul, NULL, ax_use(cx, xa), ax_use(cx, ya)));
    ax_array *r = ax_run(cx, dotp);
    if (!r) {
        fprintf(stderr, "axle: %s\n", ax_error(cx));
        ax_ctx_free(cx);
        return 1;
    }
    /* the header and the library must be the same version */
    printf("axle %s (header %s): dotp = %g\n", ax_version(), AX_VERSION_STRING,
           *(float *)ax_array_data(r, 0));
    int rc = strcmp(ax_version(), AX_VERSION_STRING) != 0;
    ax_array_release(r);
    ax_ctx_free(cx);
    return rc;
}
