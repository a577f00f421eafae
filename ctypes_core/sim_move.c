/*
 * Where pages are, and moving them: the bookkeeping of a page changing device
 * (its per-device LRU lists are inline in sim_internal.h), and migrations with their copy accounting
 * (promotions, evictions, clean evictions, moves refused, synchronous
 * evictions), charged as background I/O of the device model (sim_device.c);
 * in live mode the move is queued for the controller instead.
 */
#include <stdlib.h>
#include "sim_internal.h"

/* A promotion's copy not read yet (scripts/behind.py's wasted promotions): counted
 * here when made, cleared by the page's next read (sim.c), wasted when the page
 * moves down first (hbl_set_device: an eviction, or a write placed lower). */
static void promoted(struct hbl_sim *s, uint32_t x)
{
    s->pt.unread[x]++;
    s->st.promoted_unread++;
}

void hbl_count_move(struct hbl_sim *s, uint32_t x, int from, int to)
{
    if (to < from) { s->st.promotions++; promoted(s, x); } else s->st.evictions++;
}

/* Bookkeeping of a device change; the caller charges any I/O. */
static void set_device(struct hbl_sim *s, uint32_t x, int to, int undone)
{
    int from = s->pt.dev[x];
    if (from == to) return;
    if (from >= 0 && to > from && s->pt.unread[x]) {
        s->st.promotions_wasted += s->pt.unread[x];
        s->st.promoted_unread -= s->pt.unread[x];
        s->pt.unread[x] = 0;
    }
    if (from >= 0) { hbl_lru_unlink(s, x); s->used[from]--; }
    s->pt.dev[x] = (int8_t)to;
    s->used[to]++;
    hbl_lru_push(s, x, to);
    if (s->ops->on_move) s->ops->on_move(s->pstate, s, x, from, to, undone);
}

void hbl_set_device(struct hbl_sim *s, uint32_t x, int to)
{
    set_device(s, x, to, 0);
}

void hbl_put_back(struct hbl_sim *s, uint32_t x, int to)
{
    set_device(s, x, to, 1);
}

/* Live mode: page x's move is queued for the controller to carry out; 0 when it could not be (no
 * memory: the move stays in the table, hbl_live_device tells). */
static int live_queue(struct hbl_sim *s, uint32_t x)
{
    if (s->pt.queued[x]) return 1;
    if (s->nmq == s->mqcap) {
        uint64_t cap = s->mqcap ? s->mqcap * 2 : 1024;
        uint64_t *q = realloc(s->mq, cap * sizeof(*q));
        if (!q) return 0;
        s->mq = q; s->mqcap = cap;
    }
    s->mq[s->nmq++] = s->pt.page[x];
    s->pt.queued[x] = 1;
    return 1;
}

/* Live mode: the controller copies; nothing is kept twice.  Every move the policy asks is counted
 * (the decider's figures are of moves asked; the controller counts those it carries).  Until the
 * controller starts the page's move, pt.copy_from holds where the controller has the page: until it
 * takes the move (hbl_live_take_moves), and after that while the move waits in the controller's
 * queue, as far as the controller says so (hbl_live_waiting).  Moved back there meanwhile, the move
 * is undone (hbl_put_back: the policy is told), as in the simulator's batch path (sim_batch.c
 * hbl_batch_ask), and the page is queued (if it is not yet) so that the controller sees it wanted
 * where it is and drops its move (MoveQueue.ask).  A page queued already is not queued again: its
 * move is read from the table when taken. */
static void live_move(struct hbl_sim *s, uint32_t x, int to, double now)
{
    struct hbl_pagetable *pt = &s->pt;
    int from = pt->dev[x];
    hbl_make_room(s, to, now, 1);
    pt->last_mig[x] = s->nreq;
    hbl_count_move(s, x, from, to);
    s->st.migrated_bytes += s->cfg.page_size;
    if (pt->copy_from[x] == to) {
        pt->copy_from[x] = HBL_UNPLACED;
        hbl_put_back(s, x, to);
        live_queue(s, x);
        return;
    }
    if (live_queue(s, x) && pt->copy_from[x] == HBL_UNPLACED) pt->copy_from[x] = (int8_t)from;
    hbl_set_device(s, x, to);
}

/* serve_after_copy: page x's copy from `from` to `to` is queued (`ios` background I/Os); until
 * they complete the page is served from where its data is.  Moved back there before that,
 * it is in force there at once. */
static void copy_begin(struct hbl_sim *s, uint32_t x, int from, int to, int ios)
{
    struct hbl_pagetable *pt = &s->pt;
    if (!s->cfg.bg.serve_after_copy) return;
    if (pt->copy_from[x] == HBL_UNPLACED) { pt->copy_from[x] = (int8_t)from; pt->copy_done[x] = 0; }
    if (pt->copy_from[x] == to) pt->copy_from[x] = HBL_UNPLACED;
    pt->copy_ios[x] += (uint16_t)ios;
}

void hbl_copy_started(struct hbl_sim *s, const struct hbl_bgop *op, double done)
{
    struct hbl_pagetable *pt = &s->pt;
    if (!hbl_tracks_copies(s)) return;
    for (uint32_t i = 0; i < op->npages; i++) {
        uint32_t x = hbl_pt_find(pt, op->page + i);
        if (x == HBL_NONE || !pt->copy_ios[x]) continue;
        pt->copy_ios[x]--;
        if (s->cfg.bg.batch_moves && hbl_batch_copy_started(s, x, done)) continue;
        if (done > pt->copy_done[x]) pt->copy_done[x] = done;
    }
}

/* Move one stored page with a copy (read source, write destination), queued
 * as background I/O.  Data promoted from the slowest device leaves its copy
 * there (as dm-cache and bcache do); until the page is written, evicting it
 * back costs no I/O.  An optional move (a promotion, a policy's migration) is
 * refused when the queues are full; a required one (an eviction that makes
 * room) is then done at once, and the request being served waits for it.
 * Returns 1 when the page moved. */
int hbl_migrate_page(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed, int required)
{
    int from = s->pt.dev[x];
    if (s->live) {
        live_move(s, x, to, now);
        return 1;
    }
    if (s->cfg.bg.batch_moves) {
        /* queued for a batch (sim_batch.c), an eviction that makes room like any other move (the
         * live controller carries both alike); a queued page evicted back to where its data is, undone */
        hbl_batch_ask(s, x, to, now, read_needed);
        return 1;
    }
    int clean = to == hbl_slowest(s) && s->pt.home_copy[x];
    if (!required && !clean && !(hbl_bg_room(s, to, 1) && (!read_needed || hbl_bg_room(s, from, 1)))) {
        s->st.moves_refused++;
        return 0;
    }
    hbl_make_room(s, to, now, 1);
    uint64_t page = s->pt.page[x];
    s->pt.last_mig[x] = s->nreq;
    hbl_count_move(s, x, from, to);
    if (clean) {
        s->st.clean_evictions++;
        if (hbl_tracks_copies(s)) s->pt.copy_from[x] = HBL_UNPLACED;   /* the slowest device holds its data */
    } else {
        s->st.migrated_bytes += s->cfg.page_size;
        if (!hbl_bg_room(s, to, 1) || (read_needed && !hbl_bg_room(s, from, 1))) {
            /* the queues are full: the request waits until they have room */
            double t = hbl_bg_drain(s, to, 1, now);
            if (read_needed) { double u = hbl_bg_drain(s, from, 1, now); if (u > t) t = u; }
            if (t > s->sync_done) s->sync_done = t;
            s->st.sync_evictions++;
        }
        int ios = 0;
        if (read_needed) ios += hbl_bg_push(s, from, 0, page, 1, now);
        ios += hbl_bg_push(s, to, 1, page, 1, now);
        copy_begin(s, x, from, to, ios);
    }
    if (from == hbl_slowest(s)) s->pt.home_copy[x] = 1;
    hbl_set_device(s, x, to);
    return 1;
}

/* The same fallback for every policy: until d has `room` free pages, its
 * victim (least recently used unless the policy names one) goes to the next
 * slower device (or to a slower one the policy names). */
void hbl_make_room(struct hbl_sim *s, int d, double now, int64_t room)
{
    while (hbl_free_pages(s, d) < room && d + 1 < s->cfg.ndev) {
        uint32_t v = s->ops->victim ? s->ops->victim(s->pstate, s, d) : s->lru_tail[d];
        if (v == HBL_NONE) return;
        int to = s->ops->evict_to ? s->ops->evict_to(s->pstate, s, v, d) : d + 1;
        if (to <= d || to >= s->cfg.ndev) to = d + 1;
        hbl_migrate_page(s, v, to, now, 1, 1);
        s->st.fallback_evictions++;
    }
}
