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
#endif
