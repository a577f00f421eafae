/* LIRS, low inter-reference recency set (Jiang and Zhang, SIGMETRICS'02), with the fast device as
 * the cache: a miss admits the page (a read is promoted, a write is placed on the fast device),
 * and the resident HIR page LIRS replaces is evicted to the slower device (cachelist.h has how the
 * model and the devices stay one).
 *
 * Pages of low inter-reference recency (LIR) hold c - h of the cache's c pages, resident pages of
 * high recency (HIR) the other h, in the list Q.  The stack S orders by recency the LIR pages and
 * the HIR pages, resident or not, seen since the oldest LIR page; it is pruned so that its bottom
 * is always LIR.  A hit on an HIR page that is in S makes it LIR and the bottom LIR page becomes
 * HIR (to Q's end); a miss evicts the front of Q, and the page comes in as LIR if it was in S, as
 * HIR otherwise.  The first c - h pages are LIR, the next h HIR, as in the paper.
 *
 * Defaults: h = 1% of the cache (`hir_share`, at least one page), the paper's setting and
 * libCacheSim's LIRS.c hirs_ratio.  S is bounded at 2c entries by forgetting the oldest
 * non-resident HIR pages, as libCacheSim does (the paper leaves S unbounded). */
#include <stdio.h>
#include <stdlib.h>
#include "../cachelist.h"

#define LIR 1u      /* in pt.aux32 with HBL_CACHED: the page's status and lists */
#define IN_S 2u
#define IN_Q 4u     /* resident HIR, on Q */
#define IN_NR 8u    /* non-resident HIR in S, on the list that bounds S (sharing Q's links) */

struct state {
    struct hbl_links ls, lq;
    struct hbl_list s, q, nr;
    struct hbl_evictq ev;
    int64_t c, lirs, hirs, nlir;
};

static const struct hbl_param_doc params[] = {
    {"hir_share", "share of the cache for resident HIR pages (the rest is LIR)"},
    {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    double share = hbl_param(p, "hir_share", 0.01);
    if (!(share > 0 && share < 1)) {
        snprintf(err, errlen, "0 < hir_share < 1");
        return -1;
    }
    int64_t c = hbl_cache_size(s, "lirs", 2, err, errlen);
    if (c < 0) return -1;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    hbl_list_init(&st->s); hbl_list_init(&st->q); hbl_list_init(&st->nr);
    st->c = c;
    st->hirs = (int64_t)(share * (double)c);
    if (st->hirs < 1) st->hirs = 1;
    if (st->hirs > c - 1) st->hirs = c - 1;
    st->lirs = c - st->hirs;
    *out = st;
    return 0;
}

static void destroy(void *vst)
{
    struct state *st = vst;
    hbl_links_free(&st->ls); hbl_links_free(&st->lq);
    hbl_evictq_free(&st->ev);
    free(st);
}

static inline uint32_t *tag(struct hbl_sim *s, uint32_t x) { return &s->pt.aux32[x]; }

static void s_top(struct state *st, struct hbl_sim *s, uint32_t x)
{
    if (*tag(s, x) & IN_S) hbl_list_unlink(&st->ls, &st->s, x);
    hbl_list_push(&st->ls, &st->s, x);
    *tag(s, x) |= IN_S;
}

/* Drop HIR entries from S's bottom until it is LIR; a non-resident one is forgotten. */
static void prune(struct state *st, struct hbl_sim *s)
{
    for (uint32_t x = st->s.tail; x != HBL_NONE && !(*tag(s, x) & LIR); x = st->s.tail) {
        hbl_list_unlink(&st->ls, &st->s, x);
        if (*tag(s, x) & IN_NR) {
            hbl_list_unlink(&st->lq, &st->nr, x);
            *tag(s, x) = 0;
        } else {
            *tag(s, x) &= ~IN_S;
        }
    }
}

/* The bottom LIR page of S becomes resident HIR at Q's end. */
static void demote_bottom(struct state *st, struct hbl_sim *s)
{
    uint32_t x = st->s.tail;
    hbl_list_unlink(&st->ls, &st->s, x);
    *tag(s, x) = HBL_CACHED | IN_Q;
    hbl_list_push(&st->lq, &st->q, x);
    st->nlir--;
    prune(st, s);
}

static void make_lir(struct state *st, struct hbl_sim *s, uint32_t x)
{
    *tag(s, x) = HBL_CACHED | LIR | IN_S;
    st->nlir++;
}

/* Q's front leaves the cache; in S it stays as a non-resident HIR page. */
static void evict_front(struct state *st, struct hbl_sim *s)
{
    uint32_t v = hbl_list_pop(&st->lq, &st->q);
    if (*tag(s, v) & IN_S) {
        *tag(s, v) = IN_S | IN_NR;
        hbl_list_push(&st->lq, &st->nr, v);
    } else {
        *tag(s, v) = 0;
    }
    hbl_evictq_push(&st->ev, v);
}

static void access(struct state *st, struct hbl_sim *s, uint32_t x)
{
    uint32_t t = *tag(s, x);
    if (t & LIR) {
        int bottom = st->s.tail == x;
        s_top(st, s, x);
        if (bottom) prune(st, s);
        return;
    }
    if (t & IN_Q) {                  /* resident HIR: a hit */
        hbl_list_unlink(&st->lq, &st->q, x);
        if (t & IN_S) {
            s_top(st, s, x);
            make_lir(st, s, x);
            demote_bottom(st, s);
        } else {
            s_top(st, s, x);
            hbl_list_push(&st->lq, &st->q, x);
        }
        return;
    }
    if (t & IN_NR) {                 /* the page comes back: it is no longer on the bound's list */
        hbl_list_unlink(&st->lq, &st->nr, x);
        *tag(s, x) &= ~IN_NR;
    }
    if (st->nlir < st->lirs) {       /* filling: LIR first */
        s_top(st, s, x);
        make_lir(st, s, x);
        return;
    }
    if ((int64_t)st->q.n >= st->hirs) evict_front(st, s);
    s_top(st, s, x);
    if (t & IN_S) {
        make_lir(st, s, x);
        demote_bottom(st, s);
    } else {
        *tag(s, x) = HBL_CACHED | IN_S | IN_Q;
        hbl_list_push(&st->lq, &st->q, x);
    }
    while ((int64_t)st->s.n > 2 * st->c && st->nr.n) {
        uint32_t v = hbl_list_pop(&st->lq, &st->nr);
        hbl_list_unlink(&st->ls, &st->s, v);
        *tag(s, v) = 0;
    }
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)r;
    struct state *st = vst;
    if (hbl_links_reserve(&st->ls, s->pt.n) || hbl_links_reserve(&st->lq, s->pt.n))
        return;                      /* out of memory: the pages stay where they are */
    for (int i = 0; i < n; i++) {
        access(st, s, slots[i]);
        targets[i] = 0;
    }
}

static uint32_t victim(void *vst, struct hbl_sim *s, int dev)
{
    return hbl_cache_victim(&((struct state *)vst)->ev, s, dev);
}

const struct hbl_policy_ops hbl_policy_lirs = {
    .name = "lirs",
    .doc = "LIRS (Jiang & Zhang, SIGMETRICS'02): the fast device as a cache by inter-reference recency",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .victim = victim,
};
