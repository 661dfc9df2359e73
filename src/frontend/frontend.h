/*
 * The front end: sharing recovery (sharing.c), which turns the source
 * graph the builders made into a core program, and the source key
 * (srckey.c) by which equal graphs find an earlier compile.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_FRONTEND_H
#define AX_FRONTEND_H
#include "ir.h"

/* Sharing recovery (paper s.3): source graph -> core program.  With
 * `sharing` false, unfolds the graph into a tree first (the paper's "no
 * sharing" column).  Returns NULL with an error on cx. */
Program *sharing_recover(ax_ctx *cx, Node *root, bool sharing);

/* The key of a source graph (srckey.c): equal keys, equal graphs up to the
 * identity of nodes, variables and arrays.  arrays: the graph's distinct
 * arrays (USE), in the order the key numbers them. */
typedef struct SrcKey {
    unsigned char *bytes;
    size_t len, cap;
    uint64_t hash;            /* hash_bytes of bytes */
    int64_t depth;            /* the graph's depth (a leaf is 1) */
    ax_array **arrays;
    int narrays, caparrays;
} SrcKey;
/* 0; 1 when the graph refuses a key (a node or array of another
 * context); -1 when memory runs out.  k is empty unless 0. */
int src_key(ax_ctx *cx, const Node *root, SrcKey *k);
/* Frees k; with cx (else NULL), its byte buffer goes back to cx's
 * scratch for the next key (src_key, where that is measured). */
void src_key_free(ax_ctx *cx, SrcKey *k);
void src_key_scratch_free(ax_ctx *cx);   /* ax_ctx_free */

#endif
