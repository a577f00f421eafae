/*
 * The simulator's parts, shared among its files (sim*.c) and nothing else:
 * policies see struct hbl_sim and its helpers in hbl_internal.h, never these.
 * From the bottom up: the device model (sim_device.c), moves (sim_move.c),
 * the request loop and construction (sim.c), live mode (sim_live.c); beside
 * them, what reads the simulator (sim_stats.c), its agents (sim_agents.c) and its
 * diagnostics (sim_diag.c: one decision flipped, decisions judged in hindsight).
 */
#ifndef HBL_SIM_INTERNAL_H
#define HBL_SIM_INTERNAL_H
#include "hbl_internal.h"

/* ---- device model and background I/O (sim_device.c) ---- */

/* A foreground I/O on device d at `now`; returns when it completes. */
double hbl_dev_io(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double bytes, double now);
/* Whether d's background queue has room for npages more. */
static inline int hbl_bg_room(const struct hbl_sim *s, int d, uint32_t npages)
{
    return s->bgpages[d] + npages <= s->cfg.bg.backlog_pages;
}
/* Queue a background I/O on d (merged with the last one it continues); 0 when it had to be
 * done at once instead (no memory for the queue). */
int hbl_bg_push(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double now);
/* Serve every device's background queue in its idle time before `now`. */
void hbl_bg_advance(struct hbl_sim *s, double now);
/* Make room in d's full queue for npages by serving it now; returns when that completes. */
double hbl_bg_drain(struct hbl_sim *s, int d, uint32_t npages, double now);

/* ---- per-device LRU lists, head = most recently used (inline: on the request path) ---- */

static inline void hbl_lru_unlink(struct hbl_sim *s, uint32_t x)
{
    struct hbl_pagetable *pt = &s->pt;
    int d = pt->dev[x];
    uint32_t p = pt->prev[x], n = pt->next[x];
    if (p != HBL_NONE) pt->next[p] = n; else s->lru_head[d] = n;
    if (n != HBL_NONE) pt->prev[n] = p; else s->lru_tail[d] = p;
    pt->prev[x] = pt->next[x] = HBL_NONE;
}

static inline void hbl_lru_push(struct hbl_sim *s, uint32_t x, int d)
{
    struct hbl_pagetable *pt = &s->pt;
    pt->prev[x] = HBL_NONE;
    pt->next[x] = s->lru_head[d];
    if (s->lru_head[d] != HBL_NONE) pt->prev[s->lru_head[d]] = x; else s->lru_tail[d] = x;
    s->lru_head[d] = x;
}

static inline void hbl_lru_touch(struct hbl_sim *s, uint32_t x)
{
    int d = s->pt.dev[x];
    if (s->lru_head[d] == x) return;
    hbl_lru_unlink(s, x);
    hbl_lru_push(s, x, d);
}

/* ---- moves (sim_move.c) ---- */

/* Bookkeeping of page x changing to device `to`; the caller charges any I/O. */
void hbl_set_device(struct hbl_sim *s, uint32_t x, int to);
/* The same for a queued move not carried out: page x back on `to`, where its data is (the policy told it is undone). */
void hbl_put_back(struct hbl_sim *s, uint32_t x, int to);
/* Move page x to device `to` with a copy, as background I/O; 1 when it moved. */
int hbl_migrate_page(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed, int required);
/* Until d has `room` free pages, its victim goes to the next slower device (or where evict_to says). */
void hbl_make_room(struct hbl_sim *s, int d, double now, int64_t room);
/* A queued background I/O (a copy's read or write) started; it completes at `done`. */
void hbl_copy_started(struct hbl_sim *s, const struct hbl_bgop *op, double done);

/* The same counts for a move carried out now (promotions, evictions). */
void hbl_count_move(struct hbl_sim *s, uint32_t x, int from, int to);

/* ---- batch_moves: the live controller's migration queue and batches (sim_batch.c) ---- */

/* The policy wants page x on `to` (any move, an eviction that makes room too): queued for a batch. */
void hbl_batch_ask(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed);
/* After a first write to page e: the write frontier's remaps of the next pages never written. */
void hbl_batch_frontier(struct hbl_sim *s, uint64_t e, double now);
/* Before a request at `now`: take the batches due by then. */
void hbl_batch_advance(struct hbl_sim *s, double now);
/* A copy I/O of page x started, completing at `done`: 1 when x is in the batch in flight. */
int hbl_batch_copy_started(struct hbl_sim *s, uint32_t x, double done);
/* hbl_sim_check's part: -1 (and err) when a queued move's page does not know its place in the queue. */
int hbl_batch_check(const struct hbl_sim *s, char *err, int32_t errlen);
/* hbl_sim_check's part: -1 (and err) when a device holds more pages' data than its slots (capacity and spares). */
int hbl_batch_check_slots(const struct hbl_sim *s, char *err, int32_t errlen);

/* Whether a page's data can be elsewhere than its device while a copy is under way
 * (serve_after_copy, batch_moves): without either, the page table has no copy arrays
 * (pt.copy_from and its kin, hbl_pt_track_copies) and nothing may read or write them; live
 * mode keeps them too, for pt.copy_from alone (sim_move.c live_move, sim_live.c). */
static inline int hbl_tracks_copies(const struct hbl_sim *s)
{
    return s->cfg.bg.serve_after_copy || s->cfg.bg.batch_moves;
}

/* The device page x is served from at `now`: with serve_after_copy, the one its data is
 * copied from until the copy completes; otherwise (and after) its own. */
static inline int hbl_serve_dev(struct hbl_sim *s, uint32_t x, double now)
{
    struct hbl_pagetable *pt = &s->pt;
    if (!hbl_tracks_copies(s)) return pt->dev[x];
    int f = pt->copy_from[x];
    if (f == HBL_UNPLACED) return pt->dev[x];
    if (pt->copy_ios[x] || pt->copy_done[x] > now) return f;
    pt->copy_from[x] = HBL_UNPLACED;
    return pt->dev[x];
}

/* ---- construction (sim.c) ---- */

/* hbl_sim_new (live = 0) and hbl_live_new (live = 1). */
struct hbl_sim *hbl_sim_create(const struct hbl_sim_config *cfg, const char *policy,
                               const struct hbl_params *params, void *plugin, int live,
                               char *err, int32_t errlen);

/* ---- diagnostics (sim_diag.c) ---- */

/* When s->diag is set: this round's judged decisions queued and its flip
 * applied to migrate()'s m moves in s->mslots (room for one more); returns how many are left. */
int hbl_diag_round(struct hbl_sim *s, int m);
/* A request's pages and targets in s->slots, s->targets, before its moves are asked: a read's
 * promotions judged, the flip applied. */
void hbl_diag_ask(struct hbl_sim *s, int n, int write);
/* A request's targets as placement set them, before its pages land: a write's placement judged,
 * a write's flip applied. */
void hbl_diag_place(struct hbl_sim *s, int n, int write);
/* Page x moved from `from` to `to` (a move migrate() or a request asked for, made): logged. */
void hbl_diag_moved(struct hbl_sim *s, uint32_t x, int from, int to);
/* A request served: the judged decisions credited. */
void hbl_diag_served(struct hbl_sim *s, const uint32_t *slots, int n, int write);
void hbl_diag_free(struct hbl_diag *d);
/* The device model's waits, split (hbl_sim_diag_waits): a foreground I/O on d (write), started
 * `wait` ns after it was issued behind what the device had started (bg: 0 a foreground I/O, 1 a
 * background read, 2 a background write); a background I/O started; one drained synchronously. */
void hbl_diag_io(struct hbl_sim *s, int d, int write, int bg, double wait);
void hbl_diag_bg(struct hbl_sim *s, int d, int write, uint32_t npages);
void hbl_diag_drain(struct hbl_sim *s, int d, int write, uint32_t npages);

#endif
