/* Footprint and reuse (stack) distance of a trace in one streaming pass.
 *
 * Reuse distance = distinct pages touched between two accesses to a page.  A
 * Fenwick tree over access times holds a marker at each page's last access;
 * the distance is the number of markers after it.  When the time axis fills,
 * markers are renumbered densely, so memory stays proportional to the
 * footprint, not to the trace length. */
#include <stdlib.h>
#include <string.h>
#include "hbl_internal.h"

#define NBINS 64

struct hbl_tstats {
    uint32_t page_size;
    int reuse;                 /* 0: footprint only */
    struct hbl_pagetable pt;   /* aux64 = time index of the last access */
    int64_t *bit;              /* Fenwick tree, 1-based */
    uint32_t *owner;           /* time index -> slot */
    uint64_t cap, t;
    uint64_t bins[NBINS], cold;
};

static void bit_add(struct hbl_tstats *t, uint64_t i, int64_t v)
{
    for (i++; i <= t->cap; i += i & (~i + 1)) t->bit[i] += v;
}

static int64_t bit_prefix(const struct hbl_tstats *t, uint64_t i)   /* sum of [0, i] */
{
    int64_t r = 0;
    for (i++; i > 0; i -= i & (~i + 1)) r += t->bit[i];
    return r;
}

static int resize(struct hbl_tstats *t, uint64_t cap)
{
    /* renumber live markers in time order into a fresh tree of size cap */
    uint32_t *owner = malloc(cap * sizeof(*owner));
    int64_t *bit = calloc(cap + 1, sizeof(*bit));
    if (!owner || !bit) { free(owner); free(bit); return -1; }
    uint64_t k = 0;
    for (uint64_t i = 0; i < t->t; i++) {
        uint32_t x = t->owner[i];
        if (x != HBL_NONE && t->pt.aux64[x] == i) {
            t->pt.aux64[x] = k;
            owner[k++] = x;
        }
    }
    free(t->owner); free(t->bit);
    t->owner = owner; t->bit = bit; t->cap = cap; t->t = k;
    for (uint64_t i = 0; i < k; i++) bit_add(t, i, 1);
    return 0;
}

struct hbl_tstats *hbl_tstats_new(uint32_t page_size, int32_t reuse)
{
    struct hbl_tstats *t = calloc(1, sizeof(*t));
    if (!t || !page_size || hbl_pt_init(&t->pt, 1 << 16)) { free(t); return NULL; }
    t->page_size = page_size;
    t->reuse = reuse;
    if (resize(t, 1 << 16)) { hbl_tstats_free(t); return NULL; }
    return t;
}

void hbl_tstats_free(struct hbl_tstats *t)
{
    if (!t) return;
    hbl_pt_free(&t->pt);
    free(t->bit); free(t->owner); free(t);
}

int32_t hbl_tstats_feed(struct hbl_tstats *t, const struct hbl_request *reqs, uint64_t n)
{
    for (uint64_t r = 0; r < n; r++) {
        uint64_t first;
        uint32_t np = hbl_req_pages(&reqs[r], t->page_size, &first);
        for (uint32_t i = 0; i < np; i++) {
            if (!t->reuse) {
                if (hbl_pt_get(&t->pt, first + i) == HBL_NONE) return -1;
                continue;
            }
            if (t->t == t->cap) {
                uint64_t live = t->pt.n, cap = t->cap;
                while (cap < 2 * live + 1024) cap *= 2;
                if (resize(t, cap)) return -1;
            }
            uint32_t before = t->pt.n;
            uint32_t x = hbl_pt_get(&t->pt, first + i);
            if (x == HBL_NONE) return -1;
            if (t->pt.n != before) {
                t->cold++;
            } else {
                uint64_t prev = t->pt.aux64[x];
                uint64_t d = (uint64_t)(bit_prefix(t, t->t - 1) - bit_prefix(t, prev));
                t->bins[63 - __builtin_clzll(d + 1)]++;
                bit_add(t, prev, -1);
                t->owner[prev] = HBL_NONE;
            }
            bit_add(t, t->t, 1);
            t->owner[t->t] = x;
            t->pt.aux64[x] = t->t++;
        }
    }
    return 0;
}

uint64_t hbl_tstats_pages(const struct hbl_tstats *t) { return t->pt.n; }

void hbl_tstats_reuse(const struct hbl_tstats *t, uint64_t *counts, int32_t nbins, uint64_t *cold)
{
    for (int i = 0; i < nbins; i++) counts[i] = i < NBINS ? t->bins[i] : 0;
    *cold = t->cold;
}
