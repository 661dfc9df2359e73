/*
 * The Graphviz view of an array program (src/opt/dot.c).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_OPT_DOT_H
#define AX_OPT_DOT_H
#include "ir.h"

/* Writes one Graphviz digraph: the program `before` fusion, with a cluster
 * per kernel that fusion made (read from the kernel numbers fuse_program
 * leaves in the source nodes), and the fused program `after`, each kernel
 * a cluster with its embedded (delayed) producers.  Producers and
 * consumers are drawn apart, as in the paper's Figure 3.  With after NULL
 * or equal to before (fusion off), one graph, each operation a kernel. */
void ir_print_dot(FILE *f, const Node *before, const Node *after);

#endif
