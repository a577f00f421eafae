#define _GNU_SOURCE
/* HPS, history-based page selection (Meswani et al., HPCA'15), as a tiering
 * policy: writes go to the fast device when the page's access history says it
 * is hot (at least `hot` accesses so far), otherwise to the slow device.  At
 * the end of every epoch (each migrate() call), pages that were hot in the
 * epoch are promoted, hottest first, and pages of the fast device that were
 * not touched in the epoch are evicted to make room. */
#include <stdlib.h>
#include "../hbl_internal.h"

struct state {
    double hot;
    uint64_t epoch;
    uint32_t *touched; uint64_t ntouched, cap;
};

static const struct hbl_param_doc params[] = {
    {"hot", "accesses after which a page is hot: written to, or promoted at epoch end to, the fast device"},
    {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    (void)s; (void)err; (void)errlen;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->hot = hbl_param(p, "hot", 2);
    st->epoch = 1;
    *out = st;
    return 0;
}

static void destroy(void *vst)
{
    struct state *st = vst;
    free(st->touched);
    free(st);
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    struct state *st = vst;
    if (r->op != HBL_OP_WRITE) return;
    for (int i = 0; i < n; i++)
        targets[i] = s->pt.count[slots[i]] + 1 >= st->hot ? 0 : (int8_t)hbl_slowest(s);
}

static void observe(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                    const uint32_t *slots, int n, double lat)
{
    (void)r; (void)lat;
    struct state *st = vst;
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (s->pt.aux64[x] != st->epoch) {
            s->pt.aux64[x] = st->epoch;
            s->pt.aux32[x] = 0;
            if (st->ntouched == st->cap) {
                uint64_t cap = st->cap ? st->cap * 2 : 4096;
                uint32_t *t = realloc(st->touched, cap * sizeof(*t));
                if (!t) continue;
                st->touched = t; st->cap = cap;
            }
            st->touched[st->ntouched++] = x;
        }
        s->pt.aux32[x]++;
    }
}

static int cmp_count_desc(const void *a, const void *b, void *ctx)
{
    const uint32_t *c = ctx;
    uint32_t ca = c[*(const uint32_t *)a], cb = c[*(const uint32_t *)b];
    return (ca < cb) - (ca > cb);
}

static int migrate(void *vst, struct hbl_sim *s, uint32_t *slots, int8_t *targets, int max)
{
    struct state *st = vst;
    uint64_t hot = 0;
    for (uint64_t i = 0; i < st->ntouched; i++) {
        uint32_t x = st->touched[i];
        if (s->pt.dev[x] > 0 && s->pt.aux32[x] >= st->hot) st->touched[hot++] = x;
    }
    qsort_r(st->touched, hot, sizeof(uint32_t), cmp_count_desc, s->pt.aux32);
    int m = 0, half = max / 2;
    /* evict fast pages idle for the whole epoch (least recently used first) */
    uint32_t x = s->lru_tail[0];
    while (x != HBL_NONE && m < half && s->pt.aux64[x] != st->epoch) {
        slots[m] = x; targets[m] = 1; m++;
        x = s->pt.prev[x];
    }
    for (uint64_t i = 0; i < hot && m < max; i++) {
        slots[m] = st->touched[i]; targets[m] = 0; m++;
    }
    st->epoch++;
    st->ntouched = 0;
    return m;
}

const struct hbl_policy_ops hbl_policy_hps = {
    .name = "hps",
    .doc = "HPS: place by access-count history; each epoch promote hot pages, evict idle ones",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .observe = observe,
    .migrate = migrate,
};
