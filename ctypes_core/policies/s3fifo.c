/* S3-FIFO (Yang et al., SOSP'23), with the fast device as the cache: a miss admits the page (a
 * read is promoted, a write is placed on the fast device), and the page S3-FIFO evicts goes to
 * the slower device (cachelist.h has how the model and the devices stay one).
 *
 * Three FIFO queues: a small one S for new pages, a main one M, and a ghost G of the identities
 * of pages evicted from S.  A hit only counts (a frequency of 2 bits, at most 3).  A page in G
 * comes back into M, any other new page into S.  When the cache is full and S holds at least its
 * share, S's oldest page moves to M if it was hit at least `move_to_main` times (starting at 0
 * there), else it leaves for G; S is dequeued until one page leaves.  Otherwise M's oldest page
 * goes back to M's head with its frequency less one if it has been hit (a 2-bit CLOCK), else it
 * leaves.
 *
 * Defaults: S 10% of the cache (`small_share`) and G as many entries as M (90%, `ghost_share`),
 * the paper's and libCacheSim's S3FIFO.c (DEFAULT_CACHE_PARAMS); `move_to_main` 2, libCacheSim's
 * move-to-main-threshold.  Before the first eviction, a new page goes to M once S is full, as in
 * libCacheSim's S3FIFO.c (its S3FIFOv0.c, like the paper, fills S first); M and the pages moved
 * from S start at frequency 0, as there. */
#include <stdio.h>
#include <stdlib.h>
#include "../cachelist.h"

enum { S = 1, M, G };          /* pt.aux32: the queue in bits 0-1, the frequency in bits 2-3 */
#define QUEUE(s, x) ((s)->pt.aux32[x] & 3u)
#define FREQ(s, x) (((s)->pt.aux32[x] >> 2) & 3u)

struct state {
    struct hbl_links l;
    struct hbl_list q[4];      /* indexed by the enum */
    struct hbl_evictq ev;
    int64_t small, ghost, c;
    double move_to_main;
    int evicted;               /* the cache has been full once */
};

static const struct hbl_param_doc params[] = {
    {"small_share", "share of the cache for the small FIFO of new pages"},
    {"ghost_share", "entries of the ghost FIFO, as a share of the cache"},
    {"move_to_main", "hits in the small FIFO after which a page moves to the main FIFO"},
    {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    double small = hbl_param(p, "small_share", 0.1), ghost = hbl_param(p, "ghost_share", 0.9);
    double mtm = hbl_param(p, "move_to_main", 2);
    if (!(small > 0 && small < 1) || !(ghost >= 0) || mtm < 1 || mtm > 3) {
        snprintf(err, errlen, "0 < small_share < 1, ghost_share >= 0 and 1 <= move_to_main <= 3");
        return -1;
    }
    int64_t c = hbl_cache_size(s, "s3fifo", 2, err, errlen);
    if (c < 0) return -1;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    for (int i = 0; i < 4; i++) hbl_list_init(&st->q[i]);
    st->c = c;
    st->small = (int64_t)(small * (double)c);
    if (st->small < 1) st->small = 1;
    if (st->small > c - 1) st->small = c - 1;
    st->ghost = (int64_t)(ghost * (double)c);
    st->move_to_main = mtm;
    *out = st;
    return 0;
}

static void destroy(void *vst)
{
    struct state *st = vst;
    hbl_links_free(&st->l);
    hbl_evictq_free(&st->ev);
    free(st);
}

/* To the head of queue `to` (0: forgotten) with frequency f. */
static void enqueue(struct state *st, struct hbl_sim *s, uint32_t x, uint32_t to, uint32_t f)
{
    uint32_t from = QUEUE(s, x);
    if (from) hbl_list_unlink(&st->l, &st->q[from], x);
    s->pt.aux32[x] = to ? (to | f << 2 | (to != G ? HBL_CACHED : 0)) : 0;
    if (to) hbl_list_push(&st->l, &st->q[to], x);
}

static void to_ghost(struct state *st, struct hbl_sim *s, uint32_t x)
{
    hbl_evictq_push(&st->ev, x);
    if (!st->ghost) { enqueue(st, s, x, 0, 0); return; }
    if ((int64_t)st->q[G].n >= st->ghost) enqueue(st, s, st->q[G].tail, 0, 0);
    enqueue(st, s, x, G, 0);
}

/* One page leaves the cache. */
static void evict(struct state *st, struct hbl_sim *s)
{
    st->evicted = 1;
    if ((int64_t)st->q[M].n > st->c - st->small || !st->q[S].n) {
        for (;;) {
            uint32_t x = st->q[M].tail, f = FREQ(s, x);
            if (!f) { enqueue(st, s, x, 0, 0); hbl_evictq_push(&st->ev, x); return; }
            enqueue(st, s, x, M, f - 1);
        }
    }
    while (st->q[S].n) {
        uint32_t x = st->q[S].tail;
        if (FREQ(s, x) >= st->move_to_main) {
            enqueue(st, s, x, M, 0);
        } else {
            to_ghost(st, s, x);
            return;
        }
    }
    /* S emptied into M without a page leaving: M gives one up */
    evict(st, s);
}

static void access(struct state *st, struct hbl_sim *s, uint32_t x)
{
    uint32_t q = QUEUE(s, x);
    if (q == S || q == M) {            /* a hit only counts */
        uint32_t f = FREQ(s, x);
        if (f < 3) s->pt.aux32[x] += 1u << 2;
        return;
    }
    if ((int64_t)(st->q[S].n + st->q[M].n) >= st->c) evict(st, s);
    if (q == G) enqueue(st, s, x, M, 0);
    else if (!st->evicted && (int64_t)st->q[S].n >= st->small) enqueue(st, s, x, M, 0);
    else enqueue(st, s, x, S, 0);
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

const struct hbl_policy_ops hbl_policy_s3fifo = {
    .name = "s3fifo",
    .doc = "S3-FIFO (Yang et al., SOSP'23): the fast device as a cache of small, main and ghost FIFOs",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .victim = victim,
};
