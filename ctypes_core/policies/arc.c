/* ARC, the adaptive replacement cache (Megiddo and Modha, FAST'03), with the fast device as the
 * cache: a miss admits the page (a read is promoted, a write is placed on the fast device), and
 * the page ARC replaces is evicted to the slower device (cachelist.h has how the model and the
 * devices stay one).
 *
 * Of the cache's c pages (the fast device's capacity), T1 holds pages seen once recently and T2
 * pages seen at least twice; the ghost lists B1 and B2 remember the pages evicted from each
 * (identities only, at most c in all with T1, and 2c with everything).  The target size p of T1
 * adapts, as in the paper's Fig. 4: a hit in B1 raises p by max(|B2|/|B1|, 1), one in B2 lowers it
 * by max(|B1|/|B2|, 1), within [0, c]; p starts at 0.  There is nothing to tune.  The ratio is taken
 * in whole pages (integer division) as libCacheSim's ARC.c does; in the paper it is real, which
 * changes only REPLACE's tie |T1| = p. */
#include <stdlib.h>
#include "../cachelist.h"

enum { T1 = 1, T2, B1, B2 };   /* the list a slot is on, in pt.aux32's low bits */
#define LIST(s, x) ((s)->pt.aux32[x] & 7u)

struct state {
    struct hbl_links l;
    struct hbl_list t[5];      /* indexed by the enum */
    struct hbl_evictq ev;
    int64_t c, p;
};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    (void)p;
    int64_t c = hbl_cache_size(s, "arc", 1, err, errlen);
    if (c < 0) return -1;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    for (int i = 0; i < 5; i++) hbl_list_init(&st->t[i]);
    st->c = c;
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

static void move(struct state *st, struct hbl_sim *s, uint32_t x, uint32_t to)
{
    uint32_t from = LIST(s, x);
    if (from) hbl_list_unlink(&st->l, &st->t[from], x);
    s->pt.aux32[x] = to ? (to | (to <= T2 ? HBL_CACHED : 0)) : 0;
    if (to) hbl_list_push(&st->l, &st->t[to], x);
}

/* The paper's REPLACE: the LRU page of T1 (to B1) when T1 is over its target, else of T2 (to B2). */
static void replace(struct state *st, struct hbl_sim *s, int in_b2)
{
    int64_t n1 = st->t[T1].n;
    int from = n1 > 0 && (n1 > st->p || (in_b2 && n1 == st->p)) ? T1 : T2;
    if (!st->t[from].n) from = from == T1 ? T2 : T1;
    uint32_t v = st->t[from].tail;
    move(st, s, v, from == T1 ? B1 : B2);
    hbl_evictq_push(&st->ev, v);
}

static void miss(struct state *st, struct hbl_sim *s, uint32_t x)
{
    uint32_t where = LIST(s, x);
    int64_t n1 = st->t[B1].n, n2 = st->t[B2].n;
    if (where == B1) {
        int64_t d = n2 / n1 > 1 ? n2 / n1 : 1;
        st->p = st->p + d < st->c ? st->p + d : st->c;
        replace(st, s, 0);
        move(st, s, x, T2);
        return;
    }
    if (where == B2) {
        int64_t d = n1 / n2 > 1 ? n1 / n2 : 1;
        st->p = st->p > d ? st->p - d : 0;
        replace(st, s, 1);
        move(st, s, x, T2);
        return;
    }
    int64_t l1 = st->t[T1].n + n1, all = l1 + st->t[T2].n + n2;
    if (l1 >= st->c) {
        if (st->t[T1].n < st->c) {
            move(st, s, st->t[B1].tail, 0);
            replace(st, s, 0);
        } else {                       /* B1 is empty: T1's LRU page leaves unremembered */
            uint32_t v = st->t[T1].tail;
            move(st, s, v, 0);
            hbl_evictq_push(&st->ev, v);
        }
    } else if (all >= st->c) {
        if (all >= 2 * st->c) move(st, s, st->t[B2].tail, 0);
        replace(st, s, 0);
    }
    move(st, s, x, T1);
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)r;
    struct state *st = vst;
    if (hbl_links_reserve(&st->l, s->pt.n)) return;   /* out of memory: the pages stay where they are */
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (s->pt.aux32[x] & HBL_CACHED) move(st, s, x, T2);
        else miss(st, s, x);
        targets[i] = 0;
    }
}

static uint32_t victim(void *vst, struct hbl_sim *s, int dev)
{
    return hbl_cache_victim(&((struct state *)vst)->ev, s, dev);
}

const struct hbl_policy_ops hbl_policy_arc = {
    .name = "arc",
    .doc = "ARC (Megiddo & Modha, FAST'03): the fast device as an adaptive recency/frequency cache",
    .flags = HBL_POLICY_LIVE,
    .init = init,
    .free = destroy,
    .place = place,
    .victim = victim,
};
