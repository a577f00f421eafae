/*
 * What the simulator reports and lets one look at: its counters, latency
 * percentiles and timeline, the per-page view policies' tests use, and the
 * check of the page table's invariants.  Reads the simulator, changes nothing.
 */
#include <stdio.h>
#include <string.h>
#include "sim_internal.h"

void hbl_sim_get_stats(const struct hbl_sim *s, struct hbl_sim_stats *out)
{
    *out = s->st;
    out->pages = s->pt.n;
    out->fast_read_hits = s->st.read_pages[0];
    out->fast_page_writes = s->st.write_pages[0];
    for (int d = 0; d < HBL_MAX_DEVICES; d++) out->used_pages[d] = d < s->cfg.ndev ? (uint64_t)s->used[d] : 0;
}

double hbl_sim_latency_percentile(const struct hbl_sim *s, double q)
{
    return hbl_hist_percentile(&s->hist, q);
}

int32_t hbl_sim_latency_hist(const struct hbl_sim *s, uint64_t *out, int32_t max)
{
    int32_t n = 3 + HBL_HIST_BUCKETS;
    if (out && max >= n) {
        out[0] = s->hist.n;
        out[1] = s->hist.min;
        out[2] = s->hist.max;
        memcpy(out + 3, s->hist.b, sizeof(s->hist.b));
    }
    return n;
}

uint64_t hbl_sim_timeline(const struct hbl_sim *s, struct hbl_timeline_row *out, uint64_t max)
{
    uint64_t n = s->ntl < max ? s->ntl : max;
    if (out) memcpy(out, s->tl, n * sizeof(*out));
    return s->ntl;
}

int32_t hbl_sim_check(const struct hbl_sim *s, char *err, int32_t errlen)
{
    const struct hbl_pagetable *pt = &s->pt;
    int64_t count[HBL_MAX_DEVICES] = {0};
    /* live_batches: first the queue's index, and each device's pages' data within its slots
     * (capacity and spares; sim_batch.c) */
    if (s->cfg.bg.batch_moves && (hbl_batch_check(s, err, errlen) || hbl_batch_check_slots(s, err, errlen)))
        return -1;
    for (uint32_t x = 0; x < pt->n; x++) {
        int d = pt->dev[x];
        if (d < HBL_UNPLACED || d >= s->cfg.ndev) {
            snprintf(err, errlen, "page %llu has device %d", (unsigned long long)pt->page[x], d);
            return -1;
        }
        if (d >= 0) count[d]++;
        if (hbl_pt_find(pt, pt->page[x]) != x) {
            snprintf(err, errlen, "page %llu: hash and slot disagree", (unsigned long long)pt->page[x]);
            return -1;
        }
    }
    for (int d = 0; d < s->cfg.ndev; d++) {
        if (count[d] != s->used[d]) {
            snprintf(err, errlen, "device %d: %lld pages there but %lld counted", d,
                     (long long)count[d], (long long)s->used[d]);
            return -1;
        }
        /* the policy's view; live_batches: the spare slots take moves' data, never a page of this view */
        int64_t cap = s->cfg.dev[d].capacity_pages;
        if (cap >= 0 && s->used[d] > cap) {
            snprintf(err, errlen, "device %d over capacity: %lld > %lld", d,
                     (long long)s->used[d], (long long)cap);
            return -1;
        }
        int64_t walked = 0;
        uint32_t prev = HBL_NONE;
        for (uint32_t x = s->lru_head[d]; x != HBL_NONE; x = pt->next[x]) {
            if (pt->dev[x] != d || pt->prev[x] != prev || ++walked > count[d]) {
                snprintf(err, errlen, "device %d: LRU list broken at page %llu", d,
                         (unsigned long long)pt->page[x]);
                return -1;
            }
            prev = x;
        }
        if (walked != count[d] || s->lru_tail[d] != prev) {
            snprintf(err, errlen, "device %d: LRU list holds %lld of %lld pages", d,
                     (long long)walked, (long long)count[d]);
            return -1;
        }
    }
    uint64_t unread = 0;
    for (uint32_t x = 0; x < pt->n; x++) unread += pt->unread[x];
    if (unread != s->st.promoted_unread) {
        snprintf(err, errlen, "promoted pages not read since: %llu in the page table, %llu counted",
                 (unsigned long long)unread, (unsigned long long)s->st.promoted_unread);
        return -1;
    }
    /* a move copies its page but for a clean eviction and (live_batches) a remap of a page never written */
    if (s->st.migrated_bytes != (s->st.promotions + s->st.evictions - s->st.clean_evictions - s->st.remaps) *
                                (uint64_t)s->cfg.page_size) {
        snprintf(err, errlen, "migrated bytes %llu != (promotions + evictions - clean evictions - remaps)"
                 " x page size", (unsigned long long)s->st.migrated_bytes);
        return -1;
    }
    return 0;
}

int32_t hbl_sim_page_device(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.dev[x] : -2; }
uint64_t hbl_sim_page_number(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.page[x] : 0; }
uint32_t hbl_sim_page_count(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.count[x] : 0; }
uint64_t hbl_sim_page_last_access(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.last[x] : HBL_NEVER; }
uint64_t hbl_sim_layout(const struct hbl_sim *s, uint64_t *pages, int8_t *devs, uint64_t max)
{
    uint64_t n = s->pt.n < max ? s->pt.n : max;
    if (n) {
        memcpy(pages, s->pt.page, n * sizeof(*pages));
        memcpy(devs, s->pt.dev, n * sizeof(*devs));
    }
    return s->pt.n;
}
int64_t hbl_sim_free_pages(const struct hbl_sim *s, int32_t d)
{
    return d >= 0 && d < s->cfg.ndev ? hbl_free_pages(s, d) : 0;
}
int64_t hbl_sim_capacity(const struct hbl_sim *s, int32_t d)
{
    return d >= 0 && d < s->cfg.ndev ? s->cfg.dev[d].capacity_pages : 0;
}
uint64_t hbl_sim_now_request(const struct hbl_sim *s) { return s->nreq; }

uint64_t hbl_sim_lru_pages(const struct hbl_sim *s, int32_t d, uint32_t *out, uint64_t max)
{
    if (d < 0 || d >= s->cfg.ndev) return 0;
    uint64_t k = 0;
    for (uint32_t x = s->lru_tail[d]; x != HBL_NONE && k < max; x = s->pt.prev[x]) out[k++] = x;
    return k;
}
