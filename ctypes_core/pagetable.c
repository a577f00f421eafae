/* Page table: an open-addressing hash from page number to a dense slot, and
 * per-slot state kept as parallel arrays so the hot loop touches little memory. */
#include <stdlib.h>
#include <string.h>
#include "hbl_internal.h"

static int grow_slots(struct hbl_pagetable *pt, uint32_t cap)
{
#define GROW(field) do { \
        void *p = realloc(pt->field, (size_t)cap * sizeof(*pt->field)); \
        if (!p) \
            return -1; \
        pt->field = p; \
    } while (0)
    GROW(page); GROW(dev); GROW(count); GROW(last); GROW(last_mig);
    GROW(prev); GROW(next); GROW(aux64); GROW(aux32); GROW(home_copy); GROW(written); GROW(decision); GROW(unread);
    if (pt->copies) { GROW(copy_from); GROW(copy_ios); GROW(copy_done); GROW(queued); }
#undef GROW
    pt->cap = cap;
    return 0;
}

static void copies_none(struct hbl_pagetable *pt, uint32_t s)
{
    pt->copy_from[s] = HBL_UNPLACED; pt->copy_ios[s] = 0; pt->copy_done[s] = 0; pt->queued[s] = 0;
}

static int rehash(struct hbl_pagetable *pt, uint64_t hcap)
{
    uint64_t *keys = calloc(hcap, sizeof(*keys));
    uint32_t *vals = malloc(hcap * sizeof(*vals));
    if (!keys || !vals) { free(keys); free(vals); return -1; }
    uint64_t mask = hcap - 1;
    for (uint32_t s = 0; s < pt->n; s++) {
        uint64_t k = pt->page[s] + 1, h = hbl_hash64(k) & mask;
        while (keys[h]) h = (h + 1) & mask;
        keys[h] = k; vals[h] = s;
    }
    free(pt->keys); free(pt->vals);
    pt->keys = keys; pt->vals = vals; pt->mask = mask;
    return 0;
}

int hbl_pt_init(struct hbl_pagetable *pt, uint32_t cap)
{
    memset(pt, 0, sizeof(*pt));
    if (cap < 1024) cap = 1024;
    if (grow_slots(pt, cap)) return -1;
    uint64_t hcap = 1;
    while (hcap < 2ULL * cap) hcap <<= 1;
    return rehash(pt, hcap);
}

/* The copy arrays of the slots there are and of those to come, none under way. */
int hbl_pt_track_copies(struct hbl_pagetable *pt)
{
    pt->copies = 1;
    if (grow_slots(pt, pt->cap)) return -1;
    for (uint32_t s = 0; s < pt->n; s++) copies_none(pt, s);
    return 0;
}

void hbl_pt_free(struct hbl_pagetable *pt)
{
    free(pt->keys); free(pt->vals); free(pt->page); free(pt->dev); free(pt->count);
    free(pt->last); free(pt->last_mig); free(pt->prev); free(pt->next);
    free(pt->aux64); free(pt->aux32); free(pt->home_copy); free(pt->written); free(pt->decision); free(pt->unread);
    free(pt->copy_from); free(pt->copy_ios); free(pt->copy_done); free(pt->queued);
    memset(pt, 0, sizeof(*pt));
}

uint32_t hbl_pt_find(const struct hbl_pagetable *pt, uint64_t page)
{
    uint64_t k = page + 1, h = hbl_hash64(k) & pt->mask;
    while (pt->keys[h]) {
        if (pt->keys[h] == k) return pt->vals[h];
        h = (h + 1) & pt->mask;
    }
    return HBL_NONE;
}

uint32_t hbl_pt_get(struct hbl_pagetable *pt, uint64_t page)
{
    uint64_t k = page + 1, h = hbl_hash64(k) & pt->mask;
    while (pt->keys[h]) {
        if (pt->keys[h] == k) return pt->vals[h];
        h = (h + 1) & pt->mask;
    }
    if (pt->n == HBL_NONE - 1) return HBL_NONE;
    if (pt->n == pt->cap) {
        uint64_t ncap = (uint64_t)pt->cap * 2;
        if (ncap >= HBL_NONE) ncap = HBL_NONE - 1;
        if (grow_slots(pt, (uint32_t)ncap)) return HBL_NONE;
    }
    if ((uint64_t)(pt->n + 1) * 2 > pt->mask + 1) {   /* keep the load factor under 1/2 */
        if (rehash(pt, (pt->mask + 1) * 2)) return HBL_NONE;
        h = hbl_hash64(k) & pt->mask;
        while (pt->keys[h]) h = (h + 1) & pt->mask;
    }
    uint32_t s = pt->n++;
    pt->keys[h] = k; pt->vals[h] = s;
    pt->page[s] = page; pt->dev[s] = HBL_UNPLACED; pt->count[s] = 0;
    pt->last[s] = HBL_NEVER; pt->last_mig[s] = HBL_NEVER;
    pt->prev[s] = pt->next[s] = HBL_NONE; pt->aux64[s] = 0; pt->aux32[s] = 0; pt->home_copy[s] = 0; pt->written[s] = 0; pt->decision[s] = 0;
    pt->unread[s] = 0;
    if (pt->copies) copies_none(pt, s);
    return s;
}
