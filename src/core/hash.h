/*
 * A small hash map for the passes: 64-bit integer keys (or pointers, cast
 * with hmap_ptr) to 64-bit integer values, open addressing with linear
 * probing, kept at most half full.  Memory is malloc'd (a map is scratch
 * for one pass, not part of a program) and freed with hmap_free.
 *
 * One key value is reserved: HMAP_EMPTY (all ones) marks a free slot and
 * must never be used as a key.  Pointers and the small non-negative
 * integers the passes use never are.
 *
 * There is no deletion: passes that need scoped entries keep an undo list
 * and write the old value back (see the CSE pass).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_HASH_H
#define AX_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HMAP_EMPTY UINT64_MAX

typedef struct HMapSlot {
    uint64_t key;
    int64_t val;
} HMapSlot;

typedef struct HMap {
    HMapSlot *slot;
    size_t cap;      /* a power of two, or 0 before the first insertion */
    size_t len;
} HMap;

/* A well-mixing 64-bit hash (the finaliser of MurmurHash3). */
static inline uint64_t hash_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* Combines a running hash with one more word. */
static inline uint64_t hash_combine(uint64_t h, uint64_t x)
{
    return hash_mix(h ^ (x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

/* A hash of n bytes, a word at a time (not cryptographic: tables that
 * compare the bytes on a hit).  Four words at a time go to four running
 * hashes, which do not wait on each other: one chain of hash_combine's
 * multiplies was a tenth of a source key's time (srckey.c). */
static inline uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = hash_mix(n + 1), g[4] = {h, h ^ 1, h ^ 2, h ^ 3};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            __builtin_memcpy(&w, s + i + 8 * (size_t)k, 8);
            g[k] = hash_combine(g[k], w);
        }
    if (i > 0)
        for (int k = 0; k < 4; k++) h = hash_combine(h, g[k]);
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        __builtin_memcpy(&w, s + i, 8);
        h = hash_combine(h, w);
    }
    uint64_t w = 0;
    if (n > i) __builtin_memcpy(&w, s + i, n - i);
    return hash_combine(h, w);
}

static inline uint64_t hmap_ptr(const void *p) { return (uint64_t)(uintptr_t)p; }

void hmap_init(HMap *m);
void hmap_free(HMap *m);
/* Forgets every entry, keeping the memory. */
void hmap_clear(HMap *m);
/* The value slot of key, or NULL if absent. */
int64_t *hmap_find(const HMap *m, uint64_t key);
/* The value slot of key, inserted with value `init` if absent (*added says
 * which, if added is not NULL); NULL when memory runs out.  The pointer is
 * valid until the next insertion. */
int64_t *hmap_insert(HMap *m, uint64_t key, int64_t init, bool *added);

#endif /* AX_HASH_H */
