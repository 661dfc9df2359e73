/*
 * Arenas: IR nodes, types and strings are allocated from arenas and freed
 * all at once (docs/ARCHITECTURE.md, "Conventions"), so passes never free node by node.
 *
 * An arena may charge its blocks to a memory budget (MemBudget, ir.h):
 * the context points the arenas of a program being compiled at its
 * compile budget, so that a compile which would take more memory than
 * the context's limit allows fails as out of memory instead of taking
 * it.  Blocks are charged as they are made, not per allocation, so a
 * budget costs a comparison per block.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- budgets */

void budget_init(MemBudget *b, int64_t limit, int64_t least, const int64_t *also)
{
    memset(b, 0, sizeof *b);
    b->limit = limit > least ? limit : least;
    b->also = also;
}

int64_t budget_left(const MemBudget *b)
{
    if (!b || b->limit <= 0) return INT64_MAX;
    int64_t in_use = b->used + (b->also && *b->also > 0 ? *b->also : 0);
    return in_use >= b->limit ? 0 : b->limit - in_use;
}

bool budget_charge(MemBudget *b, int64_t n)
{
    if (!b) return true;
    if (n < 0 || n > budget_left(b)) {
        b->refused = n < 0 ? INT64_MAX : n;
        b->refused_at = b->used + (b->also && *b->also > 0 ? *b->also : 0);
        return false;
    }
    b->used += n;
    if (b->used > b->peak) b->peak = b->used;
    return true;
}

void budget_release(MemBudget *b, int64_t n)
{
    if (!b) return;
    b->used -= n;
    if (b->used < 0) b->used = 0;
}

void budget_explain(const MemBudget *b, char *msg, size_t size)
{
    if (!b || !b->refused || !msg || !size) return;
    size_t len = strnlen(msg, size);
    if (len + 1 >= size) return;
    snprintf(msg + len, size - len,
             " (the compile needed %lld bytes more, past the memory limit of %lld bytes with %lld in use, "
             "arrays included; set AXLE_MEM_LIMIT or ax_options.mem_limit)",
             (long long)b->refused, (long long)b->limit, (long long)b->refused_at);
}

/* ---------------------------------------------------------------- arenas */

typedef struct ArenaBlock {
    struct ArenaBlock *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} ArenaBlock;

enum { ARENA_MIN_BLOCK = 64 * 1024 };

void arena_init(Arena *a)
{
    a->head = NULL;
    a->used_total = 0;
    a->budget = NULL;
    a->charged = 0;
}

void arena_set_budget(Arena *a, MemBudget *b)
{
    arena_detach(a);
    /* (the first arena of an idle budget starts a compile: the last one's
     * refusal and peak are no news for it) */
    if (b && b->used == 0) b->refused = b->refused_at = 0, b->peak = 0;
    a->budget = b;
    for (ArenaBlock *k = a->head; k && b; k = k->next) {
        int64_t charge = (int64_t)(sizeof(ArenaBlock) + k->size);
        b->used += charge;   /* (blocks made already: counted, not refused) */
        a->charged += charge;
    }
    if (b && b->used > b->peak) b->peak = b->used;
}

void arena_detach(Arena *a)
{
    budget_release(a->budget, a->charged);
    a->budget = NULL;
    a->charged = 0;
}

void arena_free(Arena *a)
{
    ArenaBlock *b = a->head;
    while (b) {
        ArenaBlock *n = b->next;
        free(b);
        b = n;
    }
    arena_detach(a);
    a->head = NULL;
    a->used_total = 0;
}

/* A new block of at least n bytes at the head of a, charged to its
 * budget; NULL when memory or the budget runs out. */
static ArenaBlock *arena_grow(Arena *a, size_t n)
{
    ArenaBlock *b = a->head;
    size_t least = n > ARENA_MIN_BLOCK ? n : ARENA_MIN_BLOCK, size = least;
    /* Grow blocks with the arena so that big programs need few mallocs. */
    if (b && b->size * 2 > size && b->size < (64u << 20)) size = b->size * 2;
    /* (a budget too tight for the doubled block may still take the
     * smallest that serves) */
    if (size > least && (int64_t)(sizeof(ArenaBlock) + size) > budget_left(a->budget)) size = least;
    if (size > (size_t)INT64_MAX - sizeof(ArenaBlock)) return NULL;
    int64_t charge = (int64_t)(sizeof(ArenaBlock) + size);
    if (!budget_charge(a->budget, charge)) return NULL;
    b = ax__malloc(sizeof(ArenaBlock) + size);
    if (!b) {
        budget_release(a->budget, charge);
        return NULL;
    }
    if (a->budget) a->charged += charge;
    b->size = size;
    b->used = 0;
    b->next = a->head;
    a->head = b;
    return b;
}

void *arena_alloc(Arena *a, size_t n)
{
    if (n > SIZE_MAX - 15) return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    ArenaBlock *b = a->head;
    if (!b || b->size - b->used < n) {
        if (!(b = arena_grow(a, n))) return NULL;
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
