/*
 * The depth of a term, found without recursion: the passes recurse along a
 * program's nesting, and the driver sizes the C stack they run on from it
 * (driver/stack.c), so this walk itself must not depend on the stack.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "hash.h"

typedef struct Frame {
    const Node *x;
    int next;        /* the kid to visit next */
    int64_t deepest; /* the deepest kid so far */
} Frame;

int64_t ir_depth(const Node *root, int64_t cap)
{
    if (!root) return 0;
    HMap memo;
    hmap_init(&memo);
    Frame *st = NULL;
    int64_t n = 0, room = 0, result = -1;
    /* push root */
    room = 64;
    if (!(st = ax__malloc(sizeof *st * (size_t)room))) return -1;
    st[n++] = (Frame){root, 0, 0};
    while (n > 0) {
        Frame *f = &st[n - 1];
        if (n > cap) {
            result = cap;
            break;
        }
        if (f->next < f->x->n) {
            const Node *k = f->x->kid[f->next++];
            if (!k) continue;
            int64_t *d = hmap_find(&memo, hmap_ptr(k));
            if (d) {
                if (*d > f->deepest) f->deepest = *d;
                continue;
            }
            if (n == room) {
                Frame *g = ax__realloc(st, sizeof *st * (size_t)(2 * room));
                if (!g) break;
                st = g;
                room *= 2;
            }
            st[n++] = (Frame){k, 0, 0};
            continue;
        }
        /* all kids done */
        int64_t d = f->deepest + 1;
        const Node *x = f->x;
        n--;
        if (n == 0) {
            result = d;
            break;
        }
        int64_t *slot = hmap_insert(&memo, hmap_ptr(x), d, NULL);
        if (!slot) break;
        if (d > st[n - 1].deepest) st[n - 1].deepest = d;
    }
    free(st);
    hmap_free(&memo);
    return result;
}
