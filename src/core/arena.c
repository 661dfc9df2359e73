/*
 * Arenas: IR nodes, types and strings are allocated from arenas and freed
 * all at once (DESIGN.md section 6), so passes never free node by node.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <stdlib.h>
#include <string.h>

typedef struct ArenaBlock {
    struct ArenaBlock *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} ArenaBlock;

enum { ARENA_MIN_BLOCK = 64 * 1024 };

void arena_init(Arena *a) { a->head = NULL; a->used_total = 0; }

void arena_free(Arena *a)
{
    ArenaBlock *b = a->head;
    while (b) {
        ArenaBlock *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
    a->used_total = 0;
}

void *arena_alloc(Arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    ArenaBlock *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t size = n > ARENA_MIN_BLOCK ? n : ARENA_MIN_BLOCK;
        /* Grow blocks with the arena so that big programs need few mallocs. */
        if (b && b->size * 2 > size && b->size < (64u << 20)) size = b->size * 2;
        b = ax__malloc(sizeof(ArenaBlock) + size);
        if (!b) return NULL;
        b->size = size;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->used_total += n;
    memset(p, 0, n);
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}
