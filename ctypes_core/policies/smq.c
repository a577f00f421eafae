/* dm-cache's smq (stochastic multiqueue) policy, modelled as tiering.
 *
 * Accesses are counted per hotspot (a run of `hotspot_pages` pages, 16 as in
 * dm-cache) in a fixed-size hash table, halved every `decay` requests.  A page
 * is promoted to the fast device only when its hotspot has been hit at least
 * `promote` times (promotion gated by hotspot confidence), so one-off and
 * streaming accesses do not pollute the cache.  In the background, when the
 * fast device is fuller than `high_watermark`, the least recently used pages
 * are demoted until it is below `low_watermark`.  Approximation: the real smq
 * adapts its promotion threshold and drops clean blocks for free; here every
 * demotion is a copy, as in a tiered (exclusive) system. */
#include <stdio.h>
#include <stdlib.h>
#include "../hbl_internal.h"

#define HS_BITS 16

struct state {
    double hotspot_pages, promote, decay, high_wm, low_wm;
    uint64_t tag[1 << HS_BITS];
    uint32_t cnt[1 << HS_BITS];
    uint64_t since_decay;
};

static const struct hbl_param_doc params[] = {
    {"hotspot_pages", "pages of a hotspot, the unit accesses are counted in"},
    {"promote", "hits of its hotspot after which a page is promoted"},
    {"decay", "requests between two halvings of the hotspot counts"},
    {"high_watermark", "fraction of the fast device in use above which background demotion starts"},
    {"low_watermark", "fraction of the fast device in use at which background demotion stops"},
    {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    (void)s;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->hotspot_pages = hbl_param(p, "hotspot_pages", 16);
    st->promote = hbl_param(p, "promote", 4);
    st->decay = hbl_param(p, "decay", 100000);
    st->high_wm = hbl_param(p, "high_watermark", 0.95);
    st->low_wm = hbl_param(p, "low_watermark", 0.90);
    if (st->hotspot_pages < 1 || st->promote < 0 || st->decay < 1 || st->low_wm < 0 || st->low_wm > st->high_wm ||
        st->high_wm > 1) {
        snprintf(err, errlen, "hotspot_pages >= 1, promote >= 0, decay >= 1 and "
                 "0 <= low_watermark <= high_watermark <= 1");
        free(st);
        return -1;
    }
    *out = st;
    return 0;
}

static uint32_t *hotspot(struct state *st, uint64_t hs)
{
    uint64_t h = hbl_hash64(hs + 1) & ((1 << HS_BITS) - 1);
    if (st->tag[h] != hs + 1) { st->tag[h] = hs + 1; st->cnt[h] = 0; }
    return &st->cnt[h];
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)r;
    struct state *st = vst;
    uint64_t hsp = (uint64_t)st->hotspot_pages, last_hs = HBL_NEVER;
    uint32_t *c = NULL;
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        uint64_t hs = s->pt.page[x] / hsp;
        if (hs != last_hs) { c = hotspot(st, hs); (*c)++; last_hs = hs; }
        if (s->pt.dev[x] == 0 || *c >= st->promote) targets[i] = 0;
    }
    if (++st->since_decay >= st->decay) {
        st->since_decay = 0;
        for (int i = 0; i < (1 << HS_BITS); i++) st->cnt[i] >>= 1;
    }
}

static int migrate(void *vst, struct hbl_sim *s, uint32_t *slots, int8_t *targets, int max)
{
    struct state *st = vst;
    int64_t cap = s->cfg.dev[0].capacity_pages;
    if (cap < 0 || (double)s->used[0] <= st->high_wm * (double)cap) return 0;
    int64_t excess = s->used[0] - (int64_t)(st->low_wm * (double)cap);
    int m = 0;
    for (uint32_t x = s->lru_tail[0]; x != HBL_NONE && m < max && m < excess; x = s->pt.prev[x]) {
        slots[m] = x; targets[m] = 1; m++;
    }
    return m;
}

const struct hbl_policy_ops hbl_policy_smq = {
    .name = "smq",
    .doc = "dm-cache smq: promote when the hotspot is hit `promote` (4) times; background demotion",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = free,
    .place = place,
    .migrate = migrate,
};
