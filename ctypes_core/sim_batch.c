/*
 * batch_moves: optional moves carried as hbl's live controller carries them, in place of
 * background queues that take every move at once (sim_move.c).  From the live code:
 * - a move asked is queued (a second ask for a queued page replaces the first) and the page
 *   is served from where its data is meanwhile (hbl/live/moves.py MoveQueue.ask);
 * - a batch is taken at most every batch_interval_ns and never while the one before it is
 *   copying (controller.py run -> tick -> plan, execute: one thread);
 * - it takes the newest decisions first, up to batch_moves, those asked since the last batch as new
 *   as each other (plan stamps them with the newest request read) and the first asked of them first
 *   (take sorts stably); moves older than stale_ns, and the oldest past the queue's capacity
 *   (what the recent full batches carried in stale_ns, batch_moves every interval before one was
 *   measured), are refused and undone: the page goes back where its data is and the policy is
 *   told (MoveQueue.take, capacity, rate);
 * - a move the policy undoes before it is carried out (the page wanted back where its data is)
 *   leaves the queue, its room made as for any move it asks (MoveQueue.ask; the decider, sim_move.c);
 * - a batch's copies run as background I/O and its pages are served from their new device
 *   only when its last copy completes (batch.py: the remap is one table reload at commit);
 * - an eviction that makes room is a move like any other: queued, taken, refused and counted
 *   in the batch as the promotion it makes room for (the decider's make_room asks for both;
 *   controller.py plan gives the queue every move it asked for);
 * - a move needs a free slot on its device: a device holds its capacity and its spare slots
 *   (hbl/live/layout.py), and the slots of a batch's moves out of it are free only once the batch
 *   is done (batch.py finish); a promotion with no free slot waits, an eviction is undone;
 * - a write is served where its page's data is: the live device writes where the extent is mapped,
 *   and the decider's placement of it elsewhere is a move for a later batch (observe.py decide,
 *   controller.py plan; sim.c serve asks it like a promotion, a page never placed on the slowest
 *   device, as the live decider places one), a copy of what was written;
 * - a page never written holds no data: its move is a remap with no copy (controller.py plan:
 *   copy is meta.written; batch.py counts migrated_bytes for the copies alone);
 * - after a first write, the next pages never written are remapped where the policy put the
 *   written one, first in a batch (the write frontier: observe.py decide, hbl up --frontier).
 * The controller's own CPU time (prepare, settle, reload) is not modelled.
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

/* The queue's entry for page x, nbq if none (pt.queued: its place + 1, kept by every change). */
static uint32_t find(const struct hbl_sim *s, uint32_t x)
{
    return s->pt.queued[x] ? s->pt.queued[x] - 1 : s->nbq;
}

/* Append m, the move of page x, to the queue (room made by grow). */
static void enqueue(struct hbl_sim *s, uint32_t x, struct hbl_qmove m)
{
    s->bq[s->nbq++] = m;
    s->pt.queued[x] = s->nbq;
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

/* Room for one more move in a queue of n (*q, *cap grown); 0 when there is no memory. */
static int grow(struct hbl_qmove **q, uint32_t n, uint32_t *cap)
{
    if (n < *cap) return 1;
    uint32_t c = *cap ? 2 * *cap : 256;
    struct hbl_qmove *p = realloc(*q, c * sizeof(*p));
    if (!p) return 0;
    *q = p; *cap = c;
    return 1;
}

/* Where page x is in the batch under way (its copies not all done by `now`), -1 if it is not. */
static int in_flight(const struct hbl_sim *s, uint32_t x, double now)
{
    return s->batch_ios || s->batch_end > now ? in_batch(s, s->pt.page[x]) : -1;
}

/* The policy wants page x on `to`: queued; the page keeps being served from where its data is.
 * A page of the batch under way is asked for once the batch is done, from where the batch put it
 * (the controller plans the next batch after this one, from the mapping it committed). */
void hbl_batch_ask(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed)
{
    struct hbl_pagetable *pt = &s->pt;
    uint64_t page = pt->page[x];
    int i = in_flight(s, x, now);
    if (i >= 0) {
        hbl_make_room(s, to, now, 1);
        if (!grow(&s->later, s->nlater, &s->latercap)) { s->st.moves_refused++; return; }
        s->later[s->nlater++] = (struct hbl_qmove){ page, now, 0, s->batch_to[i], (uint8_t)(read_needed != 0), 1, 0 };
        hbl_set_device(s, x, to);
        return;
    }
    int phys = hbl_serve_dev(s, x, now);    /* where its data is */
    if (to == phys) {                       /* undone by the policy before it was carried out */
        /* the room first, as the live decider makes it for every move it asks (sim_move.c, live:
         * the controller's queue then drops the move, MoveQueue.ask): the page is back in the
         * policy's view of `to`, which never holds more than its capacity (its data never left) */
        hbl_make_room(s, to, now, 1);
        uint32_t k = find(s, x);
        if (k < s->nbq) unqueue(s, k);
        pt->copy_from[x] = HBL_UNPLACED;
        hbl_put_back(s, x, to);
        return;
    }
    /* the room first: it may undo a queued move (the queue changes), so the page's entry after */
    hbl_make_room(s, to, now, 1);
    uint32_t k = find(s, x);
    pt->last_mig[x] = s->nreq;
    pt->copy_from[x] = (int8_t)phys;
    pt->copy_done[x] = NOT_YET;
    hbl_set_device(s, x, to);
    uint64_t seq = s->asks;
    if (k == s->nbq) {
        if (!grow(&s->bq, s->nbq, &s->bqcap)) {
            hbl_put_back(s, x, phys); pt->copy_from[x] = HBL_UNPLACED; s->st.moves_refused++; return;
        }
        s->nbq++;
        s->asks++;
        pt->queued[x] = s->nbq;
    } else {
        seq = s->bq[k].seq;
    }
    s->bq[k] = (struct hbl_qmove){ page, now, seq, (int8_t)phys, (uint8_t)(read_needed != 0), 1, 0 };
}

/* The write frontier (hbl up --frontier; observe.py decide): after a first write to page e, the
 * next pages never written go where the policy put e, with no room made (the decider is only told),
 * as remaps the controller asks itself, first in a batch and never stale; up to a written one. */
void hbl_batch_frontier(struct hbl_sim *s, uint64_t e, double now)
{
    struct hbl_pagetable *pt = &s->pt;
    uint32_t xe = hbl_pt_find(pt, e);
    if (xe == HBL_NONE) return;
    int want = pt->dev[xe];
    for (uint64_t p = e + 1; p <= e + s->cfg.bg.frontier; p++) {
        uint32_t x = hbl_pt_find(pt, p);
        if (x == HBL_NONE || pt->written[x]) return;
        if (in_flight(s, x, now) >= 0 || find(s, x) < s->nbq) continue;
        int phys = hbl_serve_dev(s, x, now);
        if (phys == want || !grow(&s->bq, s->nbq, &s->bqcap)) continue;
        pt->copy_from[x] = (int8_t)phys;
        pt->copy_done[x] = NOT_YET;
        hbl_set_device(s, x, want);
        enqueue(s, x, (struct hbl_qmove){ p, now, s->asks++, (int8_t)phys, 0, 0, 1 });
    }
}

/* The batch is done: the moves asked for its pages while it ran are queued, from where it put them
 * (none for a page the policy wants there again). */
static void ask_later(struct hbl_sim *s)
{
    struct hbl_pagetable *pt = &s->pt;
    for (uint32_t i = 0; i < s->nlater; i++) {
        struct hbl_qmove m = s->later[i];
        uint32_t x = hbl_pt_find(pt, m.page);
        if (x == HBL_NONE || pt->dev[x] == m.from || find(s, x) < s->nbq) continue;
        if (!grow(&s->bq, s->nbq, &s->bqcap)) { hbl_put_back(s, x, m.from); s->st.moves_refused++; continue; }
        pt->copy_from[x] = m.from;
        pt->copy_done[x] = NOT_YET;
        m.seq = s->asks++;
        enqueue(s, x, m);
    }
    s->nlater = 0;
}

/* A queued move not carried out: the page back where its data is, the policy told it is undone (on_move);
 * `counted` as refused (past the queue's capacity or stale), not an eviction with no slot. */
static void refuse(struct hbl_sim *s, uint32_t x, int from, int counted)
{
    s->pt.copy_from[x] = HBL_UNPLACED;
    hbl_put_back(s, x, from);
    s->st.moves_refused += (uint64_t)counted;
}

/* Whether queued move m of page x (its slot) still stands: not done or undone since. */
static int stands(const struct hbl_sim *s, uint32_t x, const struct hbl_qmove *m)
{
    return s->pt.copy_from[x] == m->from && s->pt.dev[x] != m->from;
}

/* The page a queued move is of, HBL_NONE once it was done or undone. */
static uint32_t queued(const struct hbl_sim *s, const struct hbl_qmove *m)
{
    uint32_t x = hbl_pt_find(&s->pt, m->page);
    return x != HBL_NONE && stands(s, x, m) ? x : HBL_NONE;
}

/* Free slots of each device before a batch (layout.free_slots): its capacity and spares less the
 * pages whose data is there; a queued page's is still where it is moved from. */
static void free_slots(const struct hbl_sim *s, int64_t *free)
{
    for (int d = 0; d < s->cfg.ndev; d++) {
        int64_t c = s->cfg.dev[d].capacity_pages;
        free[d] = c < 0 ? INT64_MAX / 2 : c + (int64_t)s->cfg.bg.spare_pages[d] - s->used[d];
    }
    for (uint32_t i = 0; i < s->nbq; i++) {
        uint32_t x = queued(s, &s->bq[i]);
        if (x == HBL_NONE) continue;
        free[s->pt.dev[x]]++;
        free[s->bq[i].from]--;
    }
}

/* The newest decisions first, and of those seen at the same time the first asked (MoveQueue.take
 * sorts by the time alone, stably: in the order the moves were asked). */
static int newest_first(const void *a, const void *b)
{
    const struct hbl_qmove *p = a, *q = b;
    if (p->own != q->own) return p->own ? -1 : 1;
    if (p->seen != q->seen) return p->seen < q->seen ? 1 : -1;
    return p->seq > q->seq ? 1 : p->seq < q->seq ? -1 : 0;
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

/* The batch's copies have all started: its pages are served from their new devices from batch_end. */
static void batch_done(struct hbl_sim *s)
{
    for (uint32_t k = 0; k < s->nbatch; k++) {
        uint32_t y = hbl_pt_find(&s->pt, s->batch[k]);
        if (y != HBL_NONE && s->pt.copy_done[y] == NOT_YET) s->pt.copy_done[y] = s->batch_end;
    }
}

/* Take the next batch at `at` from the queue and queue its copies. */
static void take(struct hbl_sim *s, double at)
{
    struct hbl_pagetable *pt = &s->pt;
    double cap = capacity(s);
    uint32_t held = 0, kept = 0;
    int64_t free[4];
    free_slots(s, free);
    /* the controller gives the moves asked since its last batch the time of the newest request it
     * has read (controller.py plan: seen_ns is newest_ts, one for all): as new as each other */
    for (uint32_t i = 0; i < s->nbq; i++)
        if (s->bq[i].fresh) { s->bq[i].seen = at; s->bq[i].fresh = 0; }
    qsort(s->bq, s->nbq, sizeof(*s->bq), newest_first);
    double copy_at = at + s->cfg.bg.batch_prepare_ns;    /* the controller's own time before the copies */
    s->nbatch = s->batch_ios = 0;
    s->batch_start = at;
    s->batch_end = copy_at;
    for (uint32_t i = 0; i < s->nbq; i++) {
        struct hbl_qmove m = s->bq[i];
        uint32_t x = hbl_pt_find(pt, m.page);
        if (x == HBL_NONE) continue;
        pt->queued[x] = 0;                                                                /* out, unless kept */
        if (!stands(s, x, &m)) continue;                                                  /* done or undone */
        if ((!m.own && at - m.seen > s->cfg.bg.stale_ns) || ++held > cap) { refuse(s, x, m.from, 1); continue; }
        if (s->nbatch >= s->cfg.bg.batch_moves) { s->bq[kept++] = m; pt->queued[x] = kept; continue; }
        int to = pt->dev[x], ios = 0;
        if (free[to] <= 0) {                /* no free slot: an eviction undone, a promotion waits */
            if (to > m.from) refuse(s, x, m.from, 0); else { s->bq[kept++] = m; pt->queued[x] = kept; }
            continue;
        }
        free[to]--;
        if (pt->written[x]) {
            if (m.read) ios += hbl_bg_push(s, m.from, 0, m.page, 1, copy_at);
            ios += hbl_bg_push(s, to, 1, m.page, 1, copy_at);
            s->st.migrated_bytes += s->cfg.page_size;
        } else {
            s->st.remaps++;                 /* never written, no data: a remap with no copy (controller.py plan) */
        }
        pt->copy_ios[x] = (uint16_t)ios;
        hbl_count_move(s, x, m.from, to);
        if (m.from == hbl_slowest(s)) pt->home_copy[x] = 1;
        s->batch_left[s->nbatch] = (uint8_t)ios;
        s->batch_to[s->nbatch] = (int8_t)to;
        s->batch[s->nbatch++] = m.page;
        s->batch_ios += (uint32_t)ios;
    }
    s->nbq = kept;
    s->st.batches += s->nbatch > 0;
    if (s->nbatch && !s->batch_ios) {                 /* remaps alone */
        s->batch_end += s->cfg.bg.batch_commit_ns;
        batch_done(s);
    }
}

/* The batch's copy I/O for page x started, completing at `done`; its pages are served from their
 * new device once the batch's last copy completes.  0 when x is not in the batch. */
int hbl_batch_copy_started(struct hbl_sim *s, uint32_t x, double done)
{
    int i = in_batch(s, s->pt.page[x]);
    if (i < 0 || !s->batch_left[i]) return 0;
    s->batch_left[i]--;
    done += s->cfg.bg.batch_commit_ns;              /* and after them, before the remap is in force */
    if (done > s->batch_end) s->batch_end = done;
    if (!--s->batch_ios) batch_done(s);
    return 1;
}

/* Before a request at `now` (after the background I/O due by then): the batches due by then, each
 * when the controller would take it, their copies started as the device model allows. */
void hbl_batch_advance(struct hbl_sim *s, double now)
{
    const struct hbl_background_config *b = &s->cfg.bg;
    for (;;) {
        if (s->batch_ios) return;                       /* the batch in flight is still copying */
        if (s->nlater && s->batch_end <= now) ask_later(s);
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

/* hbl_sim_check's part: every queued move's page knows its place in the queue (pt.queued). */
int hbl_batch_check(const struct hbl_sim *s, char *err, int32_t errlen)
{
    const struct hbl_pagetable *pt = &s->pt;
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nbq; i++) {
        uint32_t x = hbl_pt_find(pt, s->bq[i].page);
        if (x == HBL_NONE) continue;
        if (pt->queued[x] != i + 1) {
            snprintf(err, errlen, "page %llu: queued %u but at %u", (unsigned long long)pt->page[x],
                     pt->queued[x], i + 1);
            return -1;
        }
    }
    for (uint32_t x = 0; x < pt->n; x++) n += pt->queued[x] != 0;
    if (n == s->nbq) return 0;
    snprintf(err, errlen, "%u pages queued but %u moves in the queue", n, s->nbq);
    return -1;
}

/* hbl_sim_check's part: each device's pages fit its slots (its capacity and spares, as
 * layout.free_slots counts them), each page on the device its data is on (a queued move's on the
 * one it is moved from, serve_dev) and a page of the batch under way on both (the new slot is
 * taken when the batch begins, the old one freed when it is done: MoveQueue.take, batch.py finish). */
int hbl_batch_check_slots(const struct hbl_sim *s, char *err, int32_t errlen)
{
    const struct hbl_pagetable *pt = &s->pt;
    double now = s->last_arrival;
    int running = s->batch_ios || s->batch_end > now;
    int64_t held[HBL_MAX_DEVICES] = {0};
    for (uint32_t x = 0; x < pt->n; x++) {
        if (pt->dev[x] < 0) continue;
        int i = in_batch(s, pt->page[x]), f = pt->copy_from[x];
        if (i >= 0) {                       /* (a page asked again meanwhile: its data is still there) */
            held[s->batch_to[i]]++;
            if (running && f != HBL_UNPLACED && f != s->batch_to[i]) held[f]++;
            continue;
        }
        held[f != HBL_UNPLACED && (pt->copy_ios[x] || pt->copy_done[x] > now) ? f : pt->dev[x]]++;
    }
    for (int d = 0; d < s->cfg.ndev; d++) {
        int64_t cap = s->cfg.dev[d].capacity_pages;
        if (cap >= 0 && held[d] > cap + (int64_t)s->cfg.bg.spare_pages[d]) {
            snprintf(err, errlen, "device %d: %lld pages' data in its %lld slots (capacity and spares)", d,
                     (long long)held[d], (long long)(cap + (int64_t)s->cfg.bg.spare_pages[d]));
            return -1;
        }
    }
    return 0;
}
