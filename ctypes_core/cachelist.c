/* Lists and the eviction queue of the cache policies; see cachelist.h. */
#include <stdio.h>
#include <stdlib.h>
#include "cachelist.h"

int hbl_links_reserve(struct hbl_links *l, uint32_t n)
{
    if (n <= l->cap) return 0;
    uint32_t cap = l->cap ? l->cap : 1024;
    while (cap < n) cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    uint32_t *p = realloc(l->prev, (size_t)cap * sizeof(*p));
    if (!p) return -1;
    l->prev = p;
    uint32_t *q = realloc(l->next, (size_t)cap * sizeof(*q));
    if (!q) return -1;
    l->next = q;
    for (uint32_t i = l->cap; i < cap; i++) l->prev[i] = l->next[i] = HBL_NONE;
    l->cap = cap;
    return 0;
}

void hbl_links_free(struct hbl_links *l)
{
    free(l->prev);
    free(l->next);
    l->prev = l->next = NULL;
    l->cap = 0;
}

void hbl_evictq_push(struct hbl_evictq *e, uint32_t x)
{
    if (e->n == e->cap) {
        uint32_t cap = e->cap ? 2 * e->cap : 256;
        uint32_t *q = malloc((size_t)cap * sizeof(*q));
        if (!q) return;
        for (uint32_t i = 0; i < e->n; i++) q[i] = e->q[(e->head + i) % e->cap];
        free(e->q);
        e->q = q; e->cap = cap; e->head = 0;
    }
    e->q[(e->head + e->n++) % e->cap] = x;
}

void hbl_evictq_free(struct hbl_evictq *e)
{
    free(e->q);
    e->q = NULL;
    e->head = e->n = e->cap = 0;
}

uint32_t hbl_cache_victim(struct hbl_evictq *e, const struct hbl_sim *s, int dev)
{
    while (dev == 0 && e->n) {
        uint32_t x = e->q[e->head];
        e->head = (e->head + 1) % e->cap;
        e->n--;
        if (s->pt.dev[x] == 0 && !(s->pt.aux32[x] & HBL_CACHED)) return x;
    }
    return s->lru_tail[dev];
}

int64_t hbl_cache_size(const struct hbl_sim *s, const char *policy, int64_t least, char *err, int errlen)
{
    int64_t c = s->cfg.dev[0].capacity_pages;
    if (c < 0) return UINT32_MAX;   /* nothing ever leaves an unlimited device */
    if (c < least) {
        snprintf(err, errlen, "%s needs a fast device of at least %lld pages (it has %lld)", policy,
                 (long long)least, (long long)c);
        return -1;
    }
    return c;
}
