/*
 * What the axle command's two files share (tools/axle.c, tools/bench.c).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_TOOLS_H
#define AX_TOOLS_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* 1000, 1e6, 4M, 2^20, 64k: false if s is none of these. */
bool axle_parse_size(const char *s, int64_t *out);
/* The median of t[0..n) (n > 0; sorts t). */
double axle_median(double *t, int n);
/* Prints s as a JSON string (error messages may hold quotes). */
void axle_json_str(FILE *f, const char *s);
/* `axle bench ...` (argv[0] is "bench"). */
int axle_bench(int argc, char **argv);
/* `axle bench --compile ...` (tools/bench_compile.c). */
int axle_bench_compile(int argc, char **argv);
/* `axle run PROGRAM --mpi ...` (tools/mpi_run.c, where MPI is found): the
 * program on every rank of MPI_COMM_WORLD, its inputs split across the
 * ranks, checked on rank 0.  opt: the local contexts' options. */
struct ex_program;
struct ax_options;
int axle_run_mpi(const struct ex_program *p, int64_t size, int runs, bool check, bool json, bool comm,
                 const struct ax_options *opt);
#endif
