/* W-TinyLFU (Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache Admission Policy",
 * ACM TOS 2017), with the fast device as the cache: a miss admits the page into the window (a
 * read is promoted, a write is placed on the fast device), and the page TinyLFU turns away or
 * evicts goes to the slower device (cachelist.h has how the model and the devices stay one).
 *
 * A window LRU takes new pages; the main cache is a segmented LRU of two fixed-size segments, a
 * probation one for pages admitted from the window and a protected one for pages hit there (a
 * hit in probation moves the page to protected, whose least recently used page, when protected
 * is over its size, goes back to probation's head).  When the cache is full, the window's LRU page
 * is the candidate: while the main cache has room it is admitted outright (to probation, or to
 * protected while probation is full, as libCacheSim's SLRU.c inserts in the lowest segment with
 * room: on the bundled slices this warm-up rule moves the hit ratio by up to 7 points against
 * leaving protected to hits alone); otherwise it is admitted, and the main cache's victim
 * (probation's LRU, protected's when probation is empty) evicted, only if TinyLFU estimates it
 * more frequent than the victim; else the candidate leaves.  TinyLFU counts every access in a
 * count-min sketch of 4 rows of 4-bit counters (at most 15), behind a doorkeeper Bloom filter
 * that takes each page's first access of a period; the estimate is the sketch's minimum plus one
 * if the doorkeeper has the page.  Every W accesses (the sample) the counters and the access
 * count are halved and the doorkeeper cleared (the paper's reset).
 *
 * Defaults: window 1% of the cache (`window_share`, at least one page) and protected 80% of the
 * main cache (`protected_share`), the paper's W-TinyLFU(1%) with SLRU 20/80 and libCacheSim's
 * WTinyLFU.c (window-size=0.01, main SLRU seg-size=1:4); sample W = 10 x the cache
 * (`sample_factor`) and 16 counters per page of the cache (4 rows, each 4 times the cache rounded
 * up to a power of two), as in Caffeine's FrequencySketch (its authors' implementation); a
 * doorkeeper of W bits (a power of two) and 3 hash functions.  libCacheSim's TinyLFU differs: a
 * counting Bloom filter and no doorkeeper, window hits not counted, the candidate counted again
 * at each contest, a halving every 32 x the main cache's size in main-cache hits.  With the
 * sketch's own noise (its hash seed alone moves a short slice's hit ratio by up to 2 points) the
 * two agree within about a point (tests/test_baselines.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../cachelist.h"

enum { WIN = 1, PROB, PROT };  /* the list a slot is on, in pt.aux32's low bits */
#define LIST(s, x) ((s)->pt.aux32[x] & 3u)
#define ROWS 4
#define MAX_WIDTH (1u << 26)   /* counters of a row: 256 MiB in all at most, a cache of 16M pages */

struct state {
    struct hbl_links l;
    struct hbl_list q[4];      /* indexed by the enum */
    struct hbl_evictq ev;
    int64_t c, window, protect, probation;
    uint8_t *cms; uint64_t width;      /* ROWS x width counters */
    uint64_t *door; uint64_t door_bits;
    uint64_t sample, added;
};

static const struct hbl_param_doc params[] = {
    {"window_share", "share of the cache for the window LRU of new pages"},
    {"protected_share", "share of the main cache for its protected segment (the rest is probation)"},
    {"sample_factor", "accesses between two halvings of the frequency sketch, per page of the cache"},
    {NULL, NULL}};

static uint64_t pow2_at_least(uint64_t n, uint64_t most)
{
    uint64_t w = 64;
    while (w < n && w < most) w *= 2;
    return w;
}

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    double win = hbl_param(p, "window_share", 0.01), prot = hbl_param(p, "protected_share", 0.8);
    double factor = hbl_param(p, "sample_factor", 10);
    if (!(win > 0 && win < 1) || !(prot > 0 && prot < 1) || !(factor >= 1)) {
        snprintf(err, errlen, "0 < window_share < 1, 0 < protected_share < 1 and sample_factor >= 1");
        return -1;
    }
    int64_t c = hbl_cache_size(s, "wtinylfu", 3, err, errlen);
    if (c < 0) return -1;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    for (int i = 0; i < 4; i++) hbl_list_init(&st->q[i]);
    st->c = c;
    st->window = (int64_t)(win * (double)c);
    if (st->window < 1) st->window = 1;
    if (st->window > c - 2) st->window = c - 2;
    st->protect = (int64_t)(prot * (double)(c - st->window));
    if (st->protect < 1) st->protect = 1;
    if (st->protect > c - st->window - 1) st->protect = c - st->window - 1;
    st->probation = c - st->window - st->protect;
    double sized = c < (int64_t)MAX_WIDTH / 4 ? (double)c : (double)(MAX_WIDTH / 4);  /* a sketch for what fits */
    st->sample = (uint64_t)(factor * sized);
    st->width = pow2_at_least(4 * (uint64_t)sized, MAX_WIDTH);
    st->door_bits = pow2_at_least(st->sample, 4ull * MAX_WIDTH);
    st->cms = calloc(ROWS * st->width, 1);
    st->door = calloc(st->door_bits / 64, 8);
    if (!st->cms || !st->door) {
        free(st->cms); free(st->door); free(st);
        snprintf(err, errlen, "out of memory for the frequency sketch");
        return -1;
    }
    *out = st;
    return 0;
}

static void destroy(void *vst)
{
    struct state *st = vst;
    hbl_links_free(&st->l);
    hbl_evictq_free(&st->ev);
    free(st->cms); free(st->door);
    free(st);
}

/* ---- TinyLFU: doorkeeper + count-min sketch, by double hashing of the page number ---- */

static int door_has(const struct state *st, uint64_t h, uint64_t g, int set)
{
    int all = 1;
    for (int i = 0; i < 3; i++) {
        uint64_t b = (h + (uint64_t)i * g) & (st->door_bits - 1);
        all &= (int)(st->door[b / 64] >> (b % 64)) & 1;
        if (set) st->door[b / 64] |= 1ull << (b % 64);
    }
    return all;
}

static unsigned estimate(const struct state *st, uint64_t page)
{
    uint64_t h = hbl_hash64(page + 1), g = hbl_hash64(h) | 1;
    unsigned m = 15;
    for (int i = 0; i < ROWS; i++) {
        unsigned v = st->cms[(uint64_t)i * st->width + ((h + (uint64_t)i * g) & (st->width - 1))];
        if (v < m) m = v;
    }
    return m + (unsigned)door_has(st, h >> 7, g, 0);
}

static void record(struct state *st, uint64_t page)
{
    uint64_t h = hbl_hash64(page + 1), g = hbl_hash64(h) | 1;
    if (door_has(st, h >> 7, g, 1)) {
        for (int i = 0; i < ROWS; i++) {
            uint8_t *v = &st->cms[(uint64_t)i * st->width + ((h + (uint64_t)i * g) & (st->width - 1))];
            if (*v < 15) (*v)++;
        }
    }
    if (++st->added >= st->sample) {
        for (uint64_t i = 0; i < ROWS * st->width; i++) st->cms[i] >>= 1;
        memset(st->door, 0, st->door_bits / 8);
        st->added /= 2;
    }
}

/* ---- the window and the segmented LRU ---- */

static void enqueue(struct state *st, struct hbl_sim *s, uint32_t x, uint32_t to)
{
    uint32_t from = LIST(s, x);
    if (from) hbl_list_unlink(&st->l, &st->q[from], x);
    s->pt.aux32[x] = to ? (to | HBL_CACHED) : 0;
    if (to) hbl_list_push(&st->l, &st->q[to], x);
}

static void leave(struct state *st, struct hbl_sim *s, uint32_t x)
{
    enqueue(st, s, x, 0);
    hbl_evictq_push(&st->ev, x);
}

/* One page leaves the cache: the window's candidate, or the main cache's victim for it. */
static void evict(struct state *st, struct hbl_sim *s)
{
    for (;;) {
        uint32_t cand = st->q[WIN].tail;
        if (cand == HBL_NONE) {
            leave(st, s, st->q[PROB].n ? st->q[PROB].tail : st->q[PROT].tail);
            return;
        }
        if ((int64_t)(st->q[PROB].n + st->q[PROT].n) < st->c - st->window) {
            enqueue(st, s, cand, (int64_t)st->q[PROB].n < st->probation ? PROB : PROT);
            continue;
        }
        uint32_t v = st->q[PROB].n ? st->q[PROB].tail : st->q[PROT].tail;
        if (estimate(st, s->pt.page[cand]) > estimate(st, s->pt.page[v])) {
            leave(st, s, v);
            enqueue(st, s, cand, PROB);
        } else {
            leave(st, s, cand);
        }
        return;
    }
}

static void access(struct state *st, struct hbl_sim *s, uint32_t x)
{
    record(st, s->pt.page[x]);
    switch (LIST(s, x)) {
    case WIN:
        enqueue(st, s, x, WIN);
        return;
    case PROT:
        enqueue(st, s, x, PROT);
        return;
    case PROB:
        enqueue(st, s, x, PROT);
        if ((int64_t)st->q[PROT].n > st->protect) enqueue(st, s, st->q[PROT].tail, PROB);
        return;
    }
    if ((int64_t)(st->q[WIN].n + st->q[PROB].n + st->q[PROT].n) >= st->c) evict(st, s);
    enqueue(st, s, x, WIN);
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)r;
    struct state *st = vst;
    if (hbl_links_reserve(&st->l, s->pt.n)) return;   /* out of memory: the pages stay where they are */
    for (int i = 0; i < n; i++) {
        access(st, s, slots[i]);
        targets[i] = 0;
    }
}

static uint32_t victim(void *vst, struct hbl_sim *s, int dev)
{
    return hbl_cache_victim(&((struct state *)vst)->ev, s, dev);
}

const struct hbl_policy_ops hbl_policy_wtinylfu = {
    .name = "wtinylfu",
    .doc = "W-TinyLFU (Einziger et al., TOS'17): the fast device as a window LRU + SLRU with frequency admission",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .victim = victim,
};
