/* Oracle: knows the future (Belady's MIN with bypass, per device tier).
 *
 * Given the whole trace in advance, it knows for every page access when the
 * page is next accessed (read or write) and whether that next access reads the
 * data or overwrites it.  Data that will never be read again (its next access
 * overwrites the whole page, or there is none) is dead: it can leave any device at no cost,
 * without a write-back (drop_dead=1, the default).  Each device keeps a
 * max-heap of its pages, dead pages first, then live ones by next access; when
 * a device is full, the top leaves: a dead page straight for the slowest device,
 * clean (even if the request being served just wrote it), a live one for the
 * next device down.  An accessed page goes to (or stays on) the
 * fastest device where there is room, or where the page on top is dead or
 * accessed later than it; a read of dead data moves nothing; a page on a
 * slower device may so rise to a middle one (3 and 4 devices).  Otherwise it
 * bypasses: a read is served where the data is, and a write goes to the
 * fastest device anyway (writes=1, the default: the write is then fast and its
 * write-back is background work) or where the page is (writes=0).
 * With promote=0 a read never moves data: only writes are placed, so a disk
 * that is the bottleneck is spared the write-backs that promotions cause; with
 * whole=1 a write goes to the fastest device only if all its pages would, and
 * otherwise to the slowest as one run.  With runs=1 a page that must be written
 * back when it leaves takes the written pages after it on its device along (up
 * to a merged background I/O's size), so the disk writes them for one
 * positioning: evicted by next access alone, the write-backs of data written as
 * one run are scattered (rocksdb, cost: rnn-hss, which lets data leave in the
 * order it was written, beat the family without it).
 * Rewrites are absorbed: a page about to be rewritten is worth keeping on a
 * device with room.  Ties (pages never accessed again) leave in page order, so
 * an HDD receives them as runs.  It is an upper bound on what a policy can do
 * within the simulator's rules: `hbl compare` flags any policy that beats it
 * (docs/simulator.md says where it was measured to hold). */
#include <stdlib.h>
#include "../hbl_internal.h"

#define DEAD (1ULL << 63)               /* next_use flag: the next access overwrites, or none */

struct state {
    uint64_t *next_use; uint64_t n, cursor;  /* per page access, in trace order: next access | DEAD */
    uint64_t req_cursor;                     /* the current request's first access */
    int writes_fast, drop_dead, promote, whole, runs;
    uint64_t run_page; int run_dev, run_left; /* the write-back run being evicted (runs=1) */
    uint32_t *heap[HBL_MAX_DEVICES];         /* slots; position kept in pt.aux32 */
    uint64_t hn[HBL_MAX_DEVICES], hcap[HBL_MAX_DEVICES];
};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    (void)s; (void)err; (void)errlen;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->writes_fast = hbl_param(p, "writes", 1) != 0;
    st->drop_dead = hbl_param(p, "drop_dead", 1) != 0;
    st->promote = hbl_param(p, "promote", 1) != 0;
    st->whole = hbl_param(p, "whole", 0) != 0;
    st->runs = hbl_param(p, "runs", 0) != 0;
    *out = st;
    return 0;
}

static void destroy(void *vst)
{
    struct state *st = vst;
    free(st->next_use);
    for (int d = 0; d < HBL_MAX_DEVICES; d++) free(st->heap[d]);
    free(st);
}

/* ---- indexed max-heap by next use (pt.aux64) ---- */

static void hswap(struct state *st, struct hbl_sim *s, int d, uint64_t i, uint64_t j)
{
    uint32_t *h = st->heap[d], a = h[i];
    h[i] = h[j]; h[j] = a;
    s->pt.aux32[h[i]] = (uint32_t)i;
    s->pt.aux32[h[j]] = (uint32_t)j;
}

/* a leaves before b: accessed farther in the future, or, on a tie (pages
 * never accessed again), the lower page number, so the pages of a run leave in order
 * and an HDD sees them as a sequential stream (the keys must not change
 * while a page is in a heap, so no recency here) */
static inline int before(const struct hbl_sim *s, uint32_t a, uint32_t b)
{
    uint64_t ka = s->pt.aux64[a], kb = s->pt.aux64[b];
    return ka != kb ? ka > kb : s->pt.page[a] < s->pt.page[b];
}

static void hfix(struct state *st, struct hbl_sim *s, int d, uint64_t i)
{
    uint32_t *h = st->heap[d];
    while (i > 0 && before(s, h[i], h[(i - 1) / 2])) { hswap(st, s, d, i, (i - 1) / 2); i = (i - 1) / 2; }
    for (;;) {
        uint64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < st->hn[d] && before(s, h[l], h[m])) m = l;
        if (r < st->hn[d] && before(s, h[r], h[m])) m = r;
        if (m == i) break;
        hswap(st, s, d, i, m);
        i = m;
    }
}

static void hinsert(struct state *st, struct hbl_sim *s, int d, uint32_t x)
{
    if (st->hn[d] == st->hcap[d]) {
        uint64_t cap = st->hcap[d] ? st->hcap[d] * 2 : 4096;
        uint32_t *h = realloc(st->heap[d], cap * sizeof(*h));
        if (!h) abort();   /* the oracle cannot continue without its heap */
        st->heap[d] = h; st->hcap[d] = cap;
    }
    uint64_t i = st->hn[d]++;
    st->heap[d][i] = x;
    s->pt.aux32[x] = (uint32_t)i;
    hfix(st, s, d, i);
}

static void hremove(struct state *st, struct hbl_sim *s, int d, uint32_t x)
{
    uint64_t i = s->pt.aux32[x], last = --st->hn[d];
    if (i != last) {
        hswap(st, s, d, i, last);
        hfix(st, s, d, i);
    }
}

/* ---- future knowledge ---- */

static int set_future(void *vst, struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n)
{
    struct state *st = vst;
    uint32_t ps = s->cfg.page_size;
    uint64_t total = 0, first;
    for (uint64_t i = 0; i < n; i++) total += hbl_req_pages(&reqs[i], ps, &first);
    free(st->next_use);
    st->next_use = malloc((total ? total : 1) * sizeof(uint64_t));
    if (!st->next_use) return -1;
    st->n = total; st->cursor = 0;
    /* walk backwards; a scratch page table remembers each page's next access
     * (aux64) and whether it is a read (aux32) */
    struct hbl_pagetable pt;
    if (hbl_pt_init(&pt, 1 << 16)) return -1;
    uint64_t k = total;
    for (uint64_t i = n; i-- > 0;) {
        uint32_t np = hbl_req_pages(&reqs[i], ps, &first);
        for (uint32_t j = np; j-- > 0;) {
            uint32_t before = pt.n, x = hbl_pt_get(&pt, first + j);
            if (x == HBL_NONE) { hbl_pt_free(&pt); return -1; }
            k--;
            st->next_use[k] = pt.n != before ? (HBL_NEVER | DEAD)
                            : (pt.aux64[x] | (pt.aux32[x] ? 0 : DEAD));
            pt.aux64[x] = k;
            /* the data is needed by a read, and by a write over part of the page (the rest stays) */
            uint64_t lo = (first + j) * ps, hi = lo + ps;
            pt.aux32[x] = reqs[i].op == HBL_OP_READ || reqs[i].offset > lo ||
                          reqs[i].offset + reqs[i].length < hi;
        }
    }
    hbl_pt_free(&pt);
    return 0;
}

/* Whether a page of key `key` earns a place on device t, which is full: its
 * farthest page is accessed later, or is dead (dropping it costs nothing). */
static int earns(const struct state *st, const struct hbl_sim *s, int t, uint64_t key)
{
    if (!st->hn[t]) return 0;
    uint64_t worst = s->pt.aux64[st->heap[t][0]];
    return (st->drop_dead && (worst & DEAD)) || key < worst;
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    struct state *st = vst;
    int write = r->op == HBL_OP_WRITE, last = hbl_slowest(s);
    int64_t room[HBL_MAX_DEVICES];      /* free pages left once this request's pages are in */
    for (int d = 0; d < last; d++) room[d] = hbl_free_pages(s, d);
    st->req_cursor = st->cursor;
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        uint64_t key = st->cursor < st->n ? st->next_use[st->cursor] : (HBL_NEVER | DEAD);
        if (!st->drop_dead) key &= ~DEAD;
        st->cursor++;
        int d = s->pt.dev[x];
        s->pt.aux64[x] = key;
        if (d >= 0) hfix(st, s, d, s->pt.aux32[x]);
        if (d == 0) { targets[i] = 0; continue; }
        if (write && st->writes_fast) { targets[i] = 0; room[0]--; continue; }
        if (!write && (!st->promote || (key & DEAD))) continue;   /* a dead page read is not worth a copy */
        /* the fastest device above the page's own where it earns a place */
        for (int t = 0; t < (d >= 0 ? d : last); t++)
            if (room[t] > 0 || earns(st, s, t, key)) { targets[i] = (int8_t)t; room[t]--; break; }
    }
    if (write && st->whole) {     /* a write the fast device cannot take whole goes to the disk as one run */
        int all = 1;
        for (int i = 0; i < n; i++) all &= targets[i] == 0;
        if (!all)
            for (int i = 0; i < n; i++) targets[i] = (int8_t)hbl_slowest(s);
    }
}

/* Dead data needs no write-back: mark it as if the slowest device held it. */
static void observe(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                    const uint32_t *slots, int n, double latency_ns)
{
    struct state *st = vst;
    (void)r; (void)latency_ns;
    if (!st->drop_dead) return;
    for (int i = 0; i < n; i++) {
        uint64_t k = st->req_cursor + (uint64_t)i;
        if (k < st->n && (st->next_use[k] & DEAD)) s->pt.home_copy[slots[i]] = 1;
    }
}

static void on_move(void *vst, struct hbl_sim *s, uint32_t x, int from, int to, int undone)
{
    struct state *st = vst;
    (void)undone;
    if (from >= 0) hremove(st, s, from, x);
    hinsert(st, s, to, x);
}

/* The page accessed farthest in the future leaves, dead pages first.  A dead
 * page needs no write-back even when it was written by the request being served
 * (observe has not marked it yet). */
static uint32_t victim(void *vst, struct hbl_sim *s, int d)
{
    struct state *st = vst;
    if (!st->hn[d]) return HBL_NONE;
    if (st->run_left > 0 && st->run_dev == d) {   /* runs=1: the next page of the run, if it must be written back */
        uint32_t x = hbl_pt_find(&s->pt, st->run_page);
        if (x != HBL_NONE && s->pt.dev[x] == d && !s->pt.home_copy[x] && !(s->pt.aux64[x] & DEAD)) {
            st->run_page++; st->run_left--;
            return x;
        }
        st->run_left = 0;
    }
    uint32_t v = st->heap[d][0];
    if (st->drop_dead && (s->pt.aux64[v] & DEAD)) s->pt.home_copy[v] = 1;
    else if (st->runs && !s->pt.home_copy[v]) {   /* a write-back: the pages after it follow as one I/O */
        st->run_dev = d; st->run_page = s->pt.page[v] + 1; st->run_left = HBL_BG_MAX_RUN - 1;
    }
    return v;
}

/* A dead victim leaves for the slowest device, which costs nothing (it is
 * marked clean); a live one goes one device down, where it is next in line. */
static int evict_to(void *vst, struct hbl_sim *s, uint32_t x, int d)
{
    struct state *st = vst;
    return st->drop_dead && (s->pt.aux64[x] & DEAD) ? hbl_slowest(s) : d + 1;
}

static const struct hbl_param_doc params[] = {
    {"writes", "1: a write that bypasses still goes to the fastest device; 0: where its page is"},
    {"drop_dead", "1: evicting data never read again needs no write-back"},
    {"promote", "1: a read may move its data up; 0: only writes are placed"},
    {"whole", "1: a write goes to the fastest device only if all its pages would, else to the slowest"},
    {"runs", "1: a page written back takes the written pages after it on its device along, as one I/O"},
    {NULL, NULL}};

const struct hbl_policy_ops hbl_policy_oracle = {
    .name = "oracle",
    .doc = "Belady-style oracle: knows each page's next access, keeps the soonest-accessed pages fast",
    .flags = HBL_POLICY_NEEDS_FUTURE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .observe = observe,
    .on_move = on_move,
    .victim = victim,
    .evict_to = evict_to,
    .set_future = set_future,
};
