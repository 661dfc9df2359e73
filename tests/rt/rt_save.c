/* The runtime-only library's test, first half (tests/rt, CMakeLists.txt):
 * compiles with the full libaxle and saves two programs for rt_load.c:
 * saxpy with parameters and a used array, and a gather whose index may
 * fall out of bounds (safe mode's checked copies).  Given a directory too,
 * it exports both there as C (ax_program_export: saxpy.c, gather.c), for
 * rt_export_app.c.
 * SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>

static ax_exp saxpy_w(ax_exp x, ax_exp w, void *env)
{
    ax_exp a = *(ax_exp *)env;
    return ax_add(ax_mul(a, x), w);
}

static ax_exp gather_ix(ax_exp i, void *env)
{
    ax_acc idx = *(ax_acc *)env;
    return ax_ix1(ax_at(idx, i));
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: rt_save SAXPY-FILE GATHER-FILE [EXPORT-DIR]\n");
        return 2;
    }
    ax_ctx *cx = ax_ctx_new(NULL);
    const ax_type *f32 = ax_type_scalar(AX_F32), *i32 = ax_type_scalar(AX_I32);
    float w[4] = {0.5f, 1.5f, 2.5f, 3.5f};
    int64_t four = 4;
    ax_exp a = ax_param_exp(cx, 0, f32);
    ax_acc ws = ax_use(cx, ax_array_from(cx, AX_F32, 1, &four, w));
    ax_program *p = ax_compile(cx, ax_zip_with(saxpy_w, &a, ax_param(cx, 1, f32, 1), ws));
    ax_acc idx = ax_param(cx, 0, i32, 1);
    ax_program *g = ax_compile(cx, ax_backpermute(ax_shape(idx), gather_ix, &idx, ax_param(cx, 1, f32, 1)));
    if (!p || !g || ax_program_save(p, argv[1]) || ax_program_save(g, argv[2])) {
        fprintf(stderr, "rt_save: %s\n", ax_error(cx));
        return 1;
    }
    printf("saved, compiled by %s\n", ax_program_stats(p)->backend);
    if (argc == 4 && (ax_program_export(p, "saxpy", argv[3]) || ax_program_export(g, "gather", argv[3]))) {
        fprintf(stderr, "rt_save: %s\n", ax_error(cx));
        return 1;
    }
    ax_program_free(p);
    ax_program_free(g);
    ax_ctx_free(cx);
    return 0;
}
