/*
 * batch_moves: optional moves carried as hbl's live controller carries them, in place of
 * background queues that take every move at once (sim_move.c).  From the live code:
 * - a move asked is queued (a second ask for a queued page replaces the first) and the page
 *   is served from where its data is meanwhile (hbl/live/moves.py MoveQueue.ask);
 * - a batch is taken at most every batch_interval_ns and never while the one before it is
 *   copying (controller.py run -> tick -> plan, execute: one thread);
 * - it takes the newest decisions first, up to batch_moves; moves older than stale_ns, and
 *   the oldest past the queue's capacity (what the recent full batches carried in stale_ns,
 *   batch_moves every interval before one was measured), are refused and undone: the page
 *   goes back where its data is and the policy is told (MoveQueue.take, capacity, rate);
 * - a batch's copies run as background I/O and its pages are served from their new device
 *   only when its last copy completes (batch.py: the remap is one table reload at commit).
 * The controller's own CPU time (prepare, settle, reload) is not modelled.
 * Evictions that make room (required moves) bypass the queue, as before.
 */
#include <stdio.h>
#include <stdlib.h>
#include "sim_internal.h"

#define NOT_YET 1e300   /* copy_done of a page whose batch has not completed (no INFINITY: -ffast-math) */

static int in_batch(const struct hbl_sim *s, uint64_t page)
{
    for (uint32_t i = 0; i < s->nbatch; i++)
        if (s->batch[i] == page) return (int)i;
    return -1;
}

/* Remove queue entry k (the last one takes its place). */
static void unqueue(struct hbl_sim *s, uint32_t k)
{
    struct hbl_pagetable *pt = &s->pt;
    uint32_t x = hbl_pt_find(pt, s->bq[k].page);
    if (x != HBL_NONE) pt->queued[x] = 0;
    s->bq[k] = s->bq[--s->nbq];
    if (k == s->nbq) return;
    x = hbl_pt_find(pt, s->bq[k].page);
    if (x != HBL_NONE) pt->queued[x] = k + 1;
}

/* The policy wants page x on `to`: queued; the page keeps being served from where its data is. */
void hbl_batch_ask(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed)
{
    struct hbl_pagetable *pt = &s->pt;
    int phys = hbl_serve_dev(s, x, now);    /* where its data is */
    uint64_t page = pt->page[x];
    if (to == phys) {                       /* undone by the policy before it was carried out */
        if (pt->queued[x]) unqueue(s, pt->queued[x] - 1);
        pt->copy_from[x] = HBL_UNPLACED;
        hbl_set_device(s, x, to);
        return;
    }
    hbl_make_room(s, to, now, 1);           /* may undo other queued moves: x's place is read after */
    uint32_t k = pt->queued[x] ? pt->queued[x] - 1 : s->nbq;
    pt->last_mig[x] = s->nreq;
    pt->copy_from[x] = (int8_t)phys;
    pt->copy_done[x] = NOT_YET;
    hbl_set_device(s, x, to);
    if (k == s->nbq) {
        if (s->nbq == s->bqcap) {
            uint32_t cap = s->bqcap ? 2 * s->bqcap : 256;
            struct hbl_qmove *q = realloc(s->bq, cap * sizeof(*q));
            if (!q) { hbl_set_device(s, x, phys); pt->copy_from[x] = HBL_UNPLACED; s->st.moves_refused++; return; }
            s->bq = q; s->bqcap = cap;
        }
        s->nbq++;
        pt->queued[x] = k + 1;
    }
    s->bq[k] = (struct hbl_qmove){ page, now, (int8_t)phys, (uint8_t)(read_needed != 0) };
}

/* A queued move not carried out: the page back where its data is, the policy told (on_move). */
static void refuse(struct hbl_sim *s, uint32_t x, int from)
{
    s->pt.copy_from[x] = HBL_UNPLACED;
    hbl_set_device(s, x, from);
    s->st.moves_refused++;
}

static int newest_first(const void *a, const void *b)
{
    double u = ((const struct hbl_qmove *)a)->seen, v = ((const struct hbl_qmove *)b)->seen;
    return u < v ? 1 : u > v ? -1 : 0;
}

/* Moves the queue holds at most (MoveQueue.capacity): the recent full batches' rate times stale_ns. */
static double capacity(const struct hbl_sim *s)
{
    const struct hbl_background_config *b = &s->cfg.bg;
    double n = 0, t = 0;
    uint32_t m = s->ncarried < HBL_CARRIED_KEPT ? s->ncarried : HBL_CARRIED_KEPT;
    for (uint32_t i = 0; i < m; i++) { n += s->carried_moves[i]; t += s->carried_ns[i]; }
    double rate = t > 0 ? n / t : b->batch_moves / b->batch_interval_ns;
    double c = (double)(int64_t)(rate * b->stale_ns);
    return c > b->batch_moves ? c : b->batch_moves;
}

/* Take the next batch at `at` from the queue and queue its copies. */
static void take(struct hbl_sim *s, double at)
{
    struct hbl_pagetable *pt = &s->pt;
    double cap = capacity(s);
    uint32_t held = 0, kept = 0;
    qsort(s->bq, s->nbq, sizeof(*s->bq), newest_first);
    s->nbatch = s->batch_ios = 0;
    s->batch_start = s->batch_end = at;
    for (uint32_t i = 0; i < s->nbq; i++) {
        struct hbl_qmove m = s->bq[i];
        uint32_t x = hbl_pt_find(pt, m.page);
        if (x == HBL_NONE) continue;
        pt->queued[x] = 0;
        if (pt->copy_from[x] != m.from || pt->dev[x] == m.from) continue;  /* done or undone */
        if (at - m.seen > s->cfg.bg.stale_ns || ++held > cap) { refuse(s, x, m.from); continue; }
        if (s->nbatch >= s->cfg.bg.batch_moves) { s->bq[kept++] = m; pt->queued[x] = kept; continue; }
        int to = pt->dev[x], ios = 0;
        if (m.read) ios += hbl_bg_push(s, m.from, 0, m.page, 1, at);
        ios += hbl_bg_push(s, to, 1, m.page, 1, at);
        pt->copy_ios[x] = (uint16_t)ios;
        hbl_count_move(s, x, m.from, to);
        if (m.from == hbl_slowest(s)) pt->home_copy[x] = 1;
        s->st.migrated_bytes += s->cfg.page_size;
        s->batch_left[s->nbatch] = (uint8_t)ios;
        s->batch[s->nbatch++] = m.page;
        s->batch_ios += (uint32_t)ios;
    }
    s->nbq = kept;
}

/* The batch's copy I/O for page x started, completing at `done`; its pages are served from their
 * new device once the batch's last copy completes.  0 when x is not in the batch. */
int hbl_batch_copy_started(struct hbl_sim *s, uint32_t x, double done)
{
    int i = in_batch(s, s->pt.page[x]);
    if (i < 0 || !s->batch_left[i]) return 0;
    s->batch_left[i]--;
    if (done > s->batch_end) s->batch_end = done;
    if (--s->batch_ios) return 1;
    for (uint32_t k = 0; k < s->nbatch; k++) {
        uint32_t y = hbl_pt_find(&s->pt, s->batch[k]);
        if (y != HBL_NONE && s->pt.copy_done[y] == NOT_YET) s->pt.copy_done[y] = s->batch_end;
    }
    return 1;
}

/* Before a request at `now` (after the background I/O due by then): the batches due by then, each
 * when the controller would take it, their copies started as the device model allows. */
void hbl_batch_advance(struct hbl_sim *s, double now)
{
    const struct hbl_background_config *b = &s->cfg.bg;
    for (;;) {
        if (s->batch_ios) return;                       /* the batch in flight is still copying */
        double at = now;
        if (s->batch_start >= 0) {
            at = s->batch_start + b->batch_interval_ns;
            if (s->batch_end > at) at = s->batch_end;
            if (at > now) return;
            if (s->nbatch == b->batch_moves) {          /* a full batch: from its start to the next tick */
                uint32_t k = s->ncarried++ % HBL_CARRIED_KEPT;
                s->carried_moves[k] = s->nbatch;
                s->carried_ns[k] = at - s->batch_start;
            }
        }
        if (!s->nbq) {                                  /* nothing asked: the ticks go on */
            if (s->batch_start >= 0) {
                s->batch_start = at + b->batch_interval_ns * (double)(int64_t)((now - at) / b->batch_interval_ns);
                s->batch_end = s->batch_start;
                s->nbatch = 0;
            }
            return;
        }
        take(s, at);
        hbl_bg_advance(s, now);                         /* its copies, as far as they start by now */
    }
}

/* hbl_sim_check's part: every page waiting for its batch is queued or in the batch in flight
 * (a page moved but never queued would be served from where its data was for ever). */
int hbl_batch_check(const struct hbl_sim *s, char *err, int32_t errlen)
{
    const struct hbl_pagetable *pt = &s->pt;
    uint8_t *seen = calloc(pt->n ? pt->n : 1, 1);
    if (!seen) return 0;
    for (uint32_t i = 0; i < s->nbq; i++) {
        uint32_t x = hbl_pt_find(pt, s->bq[i].page);
        if (x == HBL_NONE) continue;
        seen[x] = 1;
        if (pt->queued[x] != i + 1) {
            snprintf(err, errlen, "page %llu: queued %u but at %u", (unsigned long long)pt->page[x],
                     pt->queued[x], i + 1);
            free(seen);
            return -1;
        }
    }
    for (uint32_t i = 0; i < s->nbatch; i++) {
        uint32_t x = hbl_pt_find(pt, s->batch[i]);
        if (x != HBL_NONE) seen[x] = 1;
    }
    uint32_t lost = HBL_NONE;
    for (uint32_t x = 0; x < pt->n && lost == HBL_NONE; x++)
        if (pt->copy_from[x] != HBL_UNPLACED && pt->copy_done[x] == NOT_YET && !seen[x]) lost = x;
    free(seen);
    if (lost == HBL_NONE) return 0;
    snprintf(err, errlen, "page %llu waits for a batch but is not queued", (unsigned long long)pt->page[lost]);
    return -1;
}
