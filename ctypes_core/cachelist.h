/*
 * What the cache policies (arc, lirs, s3fifo, wtinylfu) share.  Each runs its algorithm on a
 * model of the fast device as a cache over the slower ones: place() feeds the model the pages
 * of a request one by one, in order, as a cache simulator would (a hit updates the model, a
 * miss admits the page and the algorithm picks what leaves for it), and asks for every page on
 * the fast device.  The pages the algorithm evicted wait in an eviction queue until the
 * simulator makes room (victim()), so the fast device holds what the model holds.  A queued page
 * the model holds again (evicted and re-admitted within one request) or that has left the fast
 * device already is skipped; when none is left, the simulator's least recently used page goes,
 * the fallback every policy has.  Lists are linked through arrays of the policy's own (a slot can
 * be on two lists in LIRS), grown with the page table.
 */
#ifndef HBL_CACHELIST_H
#define HBL_CACHELIST_H
#include "hbl_internal.h"

/* In pt.aux32: the model holds the page (the rest of aux32 is the policy's). */
#define HBL_CACHED (1u << 31)

struct hbl_links { uint32_t *prev, *next; uint32_t cap; };
struct hbl_list { uint32_t head, tail, n; };   /* head = most recently pushed */

/* Links for every slot below n; -1 when out of memory. */
int hbl_links_reserve(struct hbl_links *l, uint32_t n);
void hbl_links_free(struct hbl_links *l);

static inline void hbl_list_init(struct hbl_list *q) { q->head = q->tail = HBL_NONE; q->n = 0; }

static inline void hbl_list_push(struct hbl_links *l, struct hbl_list *q, uint32_t x)
{
    l->prev[x] = HBL_NONE;
    l->next[x] = q->head;
    if (q->head != HBL_NONE) l->prev[q->head] = x; else q->tail = x;
    q->head = x;
    q->n++;
}

/* At the tail: x as the oldest entry. */
static inline void hbl_list_push_tail(struct hbl_links *l, struct hbl_list *q, uint32_t x)
{
    l->next[x] = HBL_NONE;
    l->prev[x] = q->tail;
    if (q->tail != HBL_NONE) l->next[q->tail] = x; else q->head = x;
    q->tail = x;
    q->n++;
}

static inline void hbl_list_unlink(struct hbl_links *l, struct hbl_list *q, uint32_t x)
{
    uint32_t p = l->prev[x], n = l->next[x];
    if (p != HBL_NONE) l->next[p] = n; else q->head = n;
    if (n != HBL_NONE) l->prev[n] = p; else q->tail = p;
    q->n--;
}

/* The oldest entry, unlinked; HBL_NONE when empty. */
static inline uint32_t hbl_list_pop(struct hbl_links *l, struct hbl_list *q)
{
    uint32_t x = q->tail;
    if (x != HBL_NONE) hbl_list_unlink(l, q, x);
    return x;
}

/* Pages the model evicted, oldest first (a ring). */
struct hbl_evictq { uint32_t *q; uint32_t head, n, cap; };

/* Out of memory, the page is not queued and the fallback evicts another. */
void hbl_evictq_push(struct hbl_evictq *e, uint32_t x);
void hbl_evictq_free(struct hbl_evictq *e);
/* The victim() of a cache policy: the next queued page still on the fast device and out of the
 * model; else the least recently used page of dev (slower devices always). */
uint32_t hbl_cache_victim(struct hbl_evictq *e, const struct hbl_sim *s, int dev);

/* The fast device's capacity in pages as the model's size; -1 with a message when it is below
 * `least` (the algorithm's parts each need a page). */
int64_t hbl_cache_size(const struct hbl_sim *s, const char *policy, int64_t least, char *err, int errlen);

#endif
