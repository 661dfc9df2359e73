/*
 * The passes' hash map (hash.h): open addressing, linear probing, at most
 * half full, capacities powers of two.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "hash.h"
#include "fault.h"
#include <stdlib.h>
#include <string.h>

void hmap_init(HMap *m)
{
    m->slot = NULL;
    m->cap = m->len = 0;
}

void hmap_free(HMap *m)
{
    free(m->slot);
    hmap_init(m);
}

void hmap_clear(HMap *m)
{
    for (size_t i = 0; i < m->cap; i++) m->slot[i].key = HMAP_EMPTY;
    m->len = 0;
}

static size_t probe(const HMap *m, uint64_t key)
{
    size_t mask = m->cap - 1, i = (size_t)hash_mix(key) & mask;
    while (m->slot[i].key != HMAP_EMPTY && m->slot[i].key != key) i = (i + 1) & mask;
    return i;
}

int64_t *hmap_find(const HMap *m, uint64_t key)
{
    if (!m->cap) return NULL;
    size_t i = probe(m, key);
    return m->slot[i].key == key ? &m->slot[i].val : NULL;
}

static bool grow(HMap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    HMapSlot *s = ax__malloc(sizeof *s * cap);
    if (!s) return false;
    for (size_t i = 0; i < cap; i++) s[i].key = HMAP_EMPTY;
    HMap n = {s, cap, 0};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i].key != HMAP_EMPTY) {
            size_t j = probe(&n, m->slot[i].key);
            n.slot[j] = m->slot[i];
        }
    n.len = m->len;
    free(m->slot);
    *m = n;
    return true;
}

int64_t *hmap_insert(HMap *m, uint64_t key, int64_t init, bool *added)
{
    if (2 * (m->len + 1) > m->cap && !grow(m)) return NULL;
    size_t i = probe(m, key);
    bool add = m->slot[i].key != key;
    if (add) {
        m->slot[i].key = key;
        m->slot[i].val = init;
        m->len++;
    }
    if (added) *added = add;
    return &m->slot[i].val;
}
