/* An application with two exported axle programs compiled into it
 * (rt_save.c wrote saxpy.c and gather.c with ax_program_export), linked
 * against libaxle_rt alone: nothing is compiled or loaded from a file at
 * run time.  It checks the values (through the entry points taking
 * axle's arrays and those taking plain buffers), a gather out of bounds as the same
 * error a compiled program gives, and a context in another mode and a CPU
 * without the instructions the file was compiled for refused.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "gather.h"
#include "saxpy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_program *p = saxpy_load(cx), *g = gather_load(cx);
    if (!p || !g) {
        fprintf(stderr, "rt_export_app: %s\n", ax_error(cx));
        return 1;
    }
    float two = 2, x[3] = {1, 2, 3};
    int64_t three = 3, two_n = 2;
    ax_array *a = ax_array_from(cx, AX_F32, 0, NULL, &two), *xs = ax_array_from(cx, AX_F32, 1, &three, x);
    ax_array *r = NULL;
    if (saxpy_run(p, a, xs, &r, 1) != 1) {
        fprintf(stderr, "rt_export_app: %s\n", ax_error(cx));
        return 1;
    }
    const float *v = ax_array_data(r, 0);
    int bad = ax_array_size(r) != 3 || v[0] != 2.5f || v[1] != 5.5f || v[2] != 8.5f;
    printf("saxpy: %g %g %g\n", v[0], v[1], v[2]);
    ax_array_release(r);
    /* the same through the plain-buffer variant: a scalar, a vector and a
     * result in a new buffer with its extent */
    float *buf = NULL;
    int64_t ext = -1;
    int rc = saxpy_run_buffers(cx, p, &two, x, &three, &buf, &ext);
    bad |= rc != 0 || ext != 3 || !buf || buf[0] != 2.5f || buf[1] != 5.5f || buf[2] != 8.5f;
    printf("saxpy_run_buffers: %d, %lld: %g %g %g\n", rc, (long long)ext, buf ? buf[0] : 0, buf ? buf[1] : 0,
           buf ? buf[2] : 0);
    free(buf);
    int32_t good[2] = {2, 0}, out_of_bounds[2] = {1, 3};
    ax_array *gi = ax_array_from(cx, AX_I32, 1, &two_n, good), *gb = ax_array_from(cx, AX_I32, 1, &two_n, out_of_bounds);
    if (gather_run(g, gi, xs, &r, 1) != 1) {
        fprintf(stderr, "rt_export_app: %s\n", ax_error(cx));
        return 1;
    }
    v = ax_array_data(r, 0);
    bad |= v[0] != 3 || v[1] != 1;
    printf("gather: %g %g\n", v[0], v[1]);
    ax_array_release(r);
    bad |= gather_run(g, gb, xs, &r, 1) != -1 || !strstr(ax_error(cx), "bounds");
    printf("out of bounds: %s\n", ax_error(cx));
    /* an error through the plain-buffer variant: -1, the same error, and
     * no buffer */
    ax_clear_error(cx);
    buf = NULL;
    rc = gather_run_buffers(cx, g, out_of_bounds, &two_n, x, &three, &buf, &ext);
    bad |= rc != -1 || buf != NULL || !strstr(ax_error(cx), "bounds");
    printf("gather_run_buffers out of bounds: %d: %s\n", rc, ax_error(cx));
    ax_clear_error(cx);
    ax_options o = {0};
    o.unsafe = true;
    ax_ctx *other = ax_ctx_new(&o);
    ax_program *q = saxpy_load(other);
    bad |= q != NULL || !strstr(ax_error(other), "mode");
    printf("another mode: %s\n", ax_error(other));
    ax_program_free(q);
    ax_ctx_free(other);
#ifdef __AVX__
    /* compiled for AVX (-march=native here): a CPU with SSE2 alone, as the
     * test hook has it, refuses the code instead of running into SIGILL */
    setenv("AXLE_TEST_HOST_ISA", "sse sse2", 1);
    q = saxpy_load(cx);
    bad |= q != NULL || !strstr(ax_error(cx), "lacks");
    printf("an older CPU: %s\n", ax_error(cx));
    ax_program_free(q);
    unsetenv("AXLE_TEST_HOST_ISA");
#endif
    ax_array_release(a);
    ax_array_release(xs);
    ax_array_release(gi);
    ax_array_release(gb);
    ax_program_free(p);
    ax_program_free(g);
    ax_ctx_free(cx);
    if (bad) fprintf(stderr, "rt_export_app: wrong results\n");
    return bad;
}
