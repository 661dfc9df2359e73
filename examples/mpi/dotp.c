/*
 * The dot product over MPI (README, "Several processes: MPI"):
 *   mpicc dotp.c -laxle_mpi && mpirun -np 4 ./a.out
 * Each rank makes its own block of the vectors (global element i is i
 * and 2), the program is the one-process program with ax_mpi_use in
 * place of ax_use, and every rank gets the result (a rank-0 array, which
 * every rank holds).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <axle_mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    /* SERIALIZED: a program nested deeper than this thread's stack holds
     * runs on a helper thread with a bigger stack, which calls MPI while
     * this one waits */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    ax_mpi *m = ax_mpi_new(MPI_COMM_WORLD, NULL);
    if (!m) return 1;
    ax_ctx *cx = ax_mpi_ctx(m);
    int rank = ax_mpi_rank(m), size = ax_mpi_size(m);

    /* this rank's rows of two vectors of 1000 elements */
    int64_t n = 1000, first = n * rank / size, rows = n * (rank + 1) / size - first;
    float *x = malloc(sizeof *x * (size_t)(rows + 1)), *y = malloc(sizeof *y * (size_t)(rows + 1));
    for (int64_t i = 0; i < rows; i++) {
        x[i] = (float)(first + i);
        y[i] = 2;
    }
    ax_array *xb = ax_array_wrap(cx, AX_F32, 1, &rows, x), *yb = ax_array_wrap(cx, AX_F32, 1, &rows, y);
    ax_darray *xs = ax_mpi_from_block(m, xb), *ys = ax_mpi_from_block(m, yb);   /* (copied) */

    ax_acc dotp = ax_fold(ax_fn_add, NULL, ax_f32(0),
                          ax_zip_with(ax_fn_mul, NULL, ax_mpi_use(m, xs), ax_mpi_use(m, ys)));
    ax_darray *r = ax_mpi_run(m, dotp);                /* every rank, together */
    if (!r) {
        fprintf(stderr, "rank %d: %s\n", rank, ax_mpi_error(m));
        return 1;
    }
    if (rank == 0) printf("%g\n", *(float *)ax_array_data(ax_darray_local(r), 0));   /* 999000 */

    ax_darray_release(r);
    ax_darray_release(xs);
    ax_darray_release(ys);
    ax_array_release(xb);
    ax_array_release(yb);
    free(x);
    free(y);
    ax_mpi_free(m);
    MPI_Finalize();
    return 0;
}
