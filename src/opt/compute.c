/*
 * ax_compute's marks, after fusion.  Fusion consumes each mark (it makes
 * the marked array a manifest one, fusion.c); when fusion is off every
 * array is made anyway, so the mark only has to go: each OP_COMPUTE is
 * replaced by its operand, and no backend ever sees one.
 *
 * The walk recurses along the program's nesting (on the stack the driver
 * sizes for it) and iterates along the last operand, where let chains
 * and long pipelines grow.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "opt.h"

static Node *unmark(Node *x)
{
    while (x && x->op == OP_COMPUTE) x = x->kid[0];
    return x;
}

static void drop(Node *x, int depth)
{
    while (x && depth < OPT_MAX_DEPTH) {
        for (int i = 0; i < x->n; i++) x->kid[i] = unmark(x->kid[i]);
        if (x->n == 0) return;
        for (int i = 0; i < x->n - 1; i++) drop(x->kid[i], depth + 1);
        x = x->kid[x->n - 1];
    }
}

int opt_drop_compute(ax_ctx *cx, Program *p)
{
    (void)cx;
    if (!p || !p->root) return 0;
    p->root = unmark(p->root);
    drop(p->root, 0);
    return 0;
}
