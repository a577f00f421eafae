/*
 * The trace-driven simulator: page table + device model + one policy.
 *
 * Requests arrive in batches from Python; everything per request happens here.
 * Replay is closed loop (a request is issued when one of the queue_depth
 * before it completes, trace times ignored, as the papers replay) or open loop
 * at trace time / speed.  Device model (struct hbl_device_params): an SSD is a
 * pipeline with its datasheet's QD1 latency and IOPS ceiling, an HDD one I/O
 * at a time with seeks, rotation and read-ahead streams.  A request whose pages
 * live on several devices is split and completes when its last part does.
 * Migrations (promotions, evictions, write-backs) are background I/O: queued
 * per device and served in its idle time, as dm-cache and bcache do; a request
 * waits for them only when the queue is full and it needs room.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include "hbl_internal.h"

/* ---- per-device LRU lists (head = most recently used) ---- */

static void lru_unlink(struct hbl_sim *s, uint32_t x)
{
    struct hbl_pagetable *pt = &s->pt;
    int d = pt->dev[x];
    uint32_t p = pt->prev[x], n = pt->next[x];
    if (p != HBL_NONE) pt->next[p] = n; else s->lru_head[d] = n;
    if (n != HBL_NONE) pt->prev[n] = p; else s->lru_tail[d] = p;
    pt->prev[x] = pt->next[x] = HBL_NONE;
}

static void lru_push(struct hbl_sim *s, uint32_t x, int d)
{
    struct hbl_pagetable *pt = &s->pt;
    pt->prev[x] = HBL_NONE;
    pt->next[x] = s->lru_head[d];
    if (s->lru_head[d] != HBL_NONE) pt->prev[s->lru_head[d]] = x; else s->lru_tail[d] = x;
    s->lru_head[d] = x;
}

static void lru_touch(struct hbl_sim *s, uint32_t x)
{
    int d = s->pt.dev[x];
    if (s->lru_head[d] == x) return;
    lru_unlink(s, x);
    lru_push(s, x, d);
}

/* Bookkeeping of a device change; the caller charges any I/O. */
static void set_device(struct hbl_sim *s, uint32_t x, int to)
{
    int from = s->pt.dev[x];
    if (from == to) return;
    if (from >= 0) { lru_unlink(s, x); s->used[from]--; }
    s->pt.dev[x] = (int8_t)to;
    s->used[to]++;
    lru_push(s, x, to);
    if (s->ops->on_move) s->ops->on_move(s->pstate, s, x, from, to);
}

/* ---- device model ---- */

static inline int is_hdd(const struct hbl_device_params *p) { return p->rotation_ns + p->seek_ns > 0; }

/* Positioning cost of an HDD I/O at `page`: none when it continues where the
 * head is, or when a read continues a stream the drive's read-ahead follows
 * (then the data comes from its cache and the head stays where it was). */
static double positioning(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages)
{
    const struct hbl_device_params *p = &s->cfg.dev[d];
    uint64_t end = page + npages;
    int cont = page == s->head[d], followed = 0;
    if (!write) {
        uint64_t *st = s->stream[d];
        for (int k = 0; k < p->streams; k++)
            if (st[k] == page) { st[k] = end; followed = 1; break; }
        if (!followed) st[s->stream_rr[d]++ % (uint32_t)p->streams] = end;
    }
    if (cont) { s->head[d] = end; return 0; }
    if (followed) return 0;
    double dist = s->head[d] == HBL_NEVER ? p->span_pages / 3 : fabs((double)page - (double)s->head[d]);
    double seek = p->track_seek_ns + (p->seek_ns - p->track_seek_ns) * sqrt(3.0 * dist / p->span_pages);
    if (seek > 2 * p->seek_ns) seek = 2 * p->seek_ns;   /* full stroke */
    s->head[d] = end;
    return p->rotation_ns + seek;
}

/* Start an I/O on device d no earlier than `at`; returns when it completes.
 * See struct hbl_device_params for the model. */
static double dev_start(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double bytes,
                        double at, int background)
{
    const struct hbl_device_params *p = &s->cfg.dev[d];
    double bw = write ? p->write_bytes_per_ns : p->read_bytes_per_ns;
    double lat = (write ? p->write_latency_ns : p->read_latency_ns) + (bytes > 4096 ? (bytes - 4096) / bw : 0);
    double hold;
    if (is_hdd(p)) {
        lat += positioning(s, d, write, page, npages);
        hold = lat;
    } else {
        double iops = write ? p->write_iops : p->read_iops;
        hold = iops > 0 ? 1e9 / iops : lat;
        if (bytes / bw > hold) hold = bytes / bw;
    }
    double start = s->free_at[d] > at ? s->free_at[d] : at;
    s->free_at[d] = start + hold;
    s->st.busy_ns[d] += hold;
    if (background) s->st.background_busy_ns[d] += hold;
    s->st.dev_io_bytes[d] += (uint64_t)bytes;
    return start + lat;
}

/* A foreground I/O: it waits for whatever the device has started (background
 * I/O included: an I/O in service is not preempted). */
static double dev_io(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double bytes, double now)
{
    if (s->free_at[d] > now && s->bg_last[d]) s->st.foreground_wait_ns += s->free_at[d] - now;
    s->bg_last[d] = 0;
    double done = dev_start(s, d, write, page, npages, bytes, now, 0);
    if (done > s->fg_done[d]) s->fg_done[d] = done;
    return done;
}

/* ---- background I/O: served in the devices' idle time ---- */

static int bg_room(const struct hbl_sim *s, int d, uint32_t npages)
{
    return s->bgpages[d] + npages <= s->cfg.bg.backlog_pages;
}

/* Queue a background I/O; one that continues the last queued I/O of the same
 * kind is merged with it (runs evicted together are written back as one I/O). */
static void bg_push(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double now)
{
    s->bgpages[d] += npages;
    if (s->nbg[d]) {
        struct hbl_bgop *t = &s->bgq[d][s->nbg[d] - 1];
        if (t->write == write && t->npages + npages <= HBL_BG_MAX_RUN) {
            if (t->page + t->npages == page) { t->npages += npages; return; }
            if (page + npages == t->page) { t->page = page; t->npages += npages; return; }
        }
    }
    if (s->nbg[d] == s->bgcap[d]) {
        uint32_t cap = s->bgcap[d] ? 2 * s->bgcap[d] : 64;
        struct hbl_bgop *q = realloc(s->bgq[d], cap * sizeof(*q));
        if (!q) {               /* no memory for the queue: do it now instead */
            s->bgpages[d] -= npages;
            dev_io(s, d, write, page, npages, (double)npages * s->cfg.page_size, now);
            return;
        }
        s->bgq[d] = q; s->bgcap[d] = cap;
    }
    if (!s->nbg[d] && s->bg_next[d] < now) s->bg_next[d] = now;   /* nothing was waiting: ready from now */
    s->bgq[d][s->nbg[d]++] = (struct hbl_bgop){ page, npages, (uint8_t)write };
}

/* Take the queued I/O to serve next: on an HDD the first at or after the
 * head's position in LBA order, wrapping around (C-SCAN, as an elevator
 * does); elsewhere any (an SSD does not care). */
static struct hbl_bgop bg_take(struct hbl_sim *s, int d)
{
    struct hbl_bgop *q = s->bgq[d];
    uint32_t k = 0;
    if (is_hdd(&s->cfg.dev[d])) {
        uint64_t h = s->head[d] == HBL_NEVER ? 0 : s->head[d];
        uint32_t lo = 0, ahead = UINT32_MAX;
        for (uint32_t i = 0; i < s->nbg[d]; i++) {
            if (q[i].page < q[lo].page) lo = i;
            if (q[i].page >= h && (ahead == UINT32_MAX || q[i].page < q[ahead].page)) ahead = i;
        }
        k = ahead != UINT32_MAX ? ahead : lo;
    }
    struct hbl_bgop op = q[k];
    q[k] = q[--s->nbg[d]];
    s->bgpages[d] -= op.npages;
    return op;
}

/* Serve device d's background queue in its idle time before `now`: an I/O
 * starts only when no foreground I/O is in service (and, with idle_ns, has
 * not been for that long), under the rate limit. */
static void bg_advance(struct hbl_sim *s, int d, double now)
{
    const struct hbl_background_config *b = &s->cfg.bg;
    while (s->nbg[d]) {
        double start = s->free_at[d];
        if (s->fg_done[d] + b->idle_ns > start) start = s->fg_done[d] + b->idle_ns;
        if (s->bg_next[d] > start) start = s->bg_next[d];
        if (start >= now) return;
        struct hbl_bgop op = bg_take(s, d);
        dev_start(s, d, op.write, op.page, op.npages, (double)op.npages * s->cfg.page_size, start, 1);
        s->bg_last[d] = 1;
        s->st.background_ios++;
        if (b->rate_bytes_per_ns > 0)
            s->bg_next[d] = start + (double)op.npages * s->cfg.page_size / b->rate_bytes_per_ns;
    }
}

/* Make room in d's full queue for npages: serve queued I/O now, in the queue's
 * order, as foreground work; returns when it completes. */
static double bg_drain(struct hbl_sim *s, int d, uint32_t npages, double now)
{
    double done = now;
    while (s->nbg[d] && !bg_room(s, d, npages)) {
        struct hbl_bgop op = bg_take(s, d);
        double busy = s->st.busy_ns[d];
        double t = dev_io(s, d, op.write, op.page, op.npages, (double)op.npages * s->cfg.page_size, now);
        s->st.sync_busy_ns[d] += s->st.busy_ns[d] - busy;
        if (t > done) done = t;
    }
    return done;
}

/* Move one stored page with a copy (read source, write destination), queued
 * as background I/O.  Data promoted from the slowest device leaves its copy
 * there (as dm-cache and bcache do); until the page is written, evicting it
 * back costs no I/O.  An optional move (a promotion, a policy's migration) is
 * refused when the queues are full; a required one (an eviction that makes
 * room) is then done at once, and the request being served waits for it.
 * Returns 1 when the page moved. */
static void make_room(struct hbl_sim *s, int d, double now, int64_t room);

static void live_queue(struct hbl_sim *s, uint32_t x);

static int migrate_page(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed, int required)
{
    int from = s->pt.dev[x];
    if (s->live) {                 /* the controller copies; nothing is kept twice */
        make_room(s, to, now, 1);
        s->pt.last_mig[x] = s->nreq;
        if (to < from) s->st.promotions++; else s->st.evictions++;
        s->st.migrated_bytes += s->cfg.page_size;
        live_queue(s, x);
        set_device(s, x, to);
        return 1;
    }
    int clean = to == hbl_slowest(s) && s->pt.home_copy[x];
    if (!required && !clean && !(bg_room(s, to, 1) && (!read_needed || bg_room(s, from, 1)))) {
        s->st.moves_refused++;
        return 0;
    }
    make_room(s, to, now, 1);
    uint64_t page = s->pt.page[x];
    s->pt.last_mig[x] = s->nreq;
    if (to < from) s->st.promotions++; else s->st.evictions++;
    if (clean) {
        s->st.clean_evictions++;
    } else {
        s->st.migrated_bytes += s->cfg.page_size;
        if (!bg_room(s, to, 1) || (read_needed && !bg_room(s, from, 1))) {
            /* the queues are full: the request waits until they have room */
            double t = bg_drain(s, to, 1, now);
            if (read_needed) { double u = bg_drain(s, from, 1, now); if (u > t) t = u; }
            if (t > s->sync_done) s->sync_done = t;
            s->st.sync_evictions++;
        }
        if (read_needed) bg_push(s, from, 0, page, 1, now);
        bg_push(s, to, 1, page, 1, now);
    }
    if (from == hbl_slowest(s)) s->pt.home_copy[x] = 1;
    set_device(s, x, to);
    return 1;
}

/* The same fallback for every policy: until d has `room` free pages, its
 * victim (least recently used unless the policy names one) goes to the next
 * slower device. */
static void make_room(struct hbl_sim *s, int d, double now, int64_t room)
{
    while (hbl_free_pages(s, d) < room && d + 1 < s->cfg.ndev) {
        uint32_t v = s->ops->victim ? s->ops->victim(s->pstate, s, d) : s->lru_tail[d];
        if (v == HBL_NONE) return;
        migrate_page(s, v, d + 1, now, 1, 1);
        s->st.fallback_evictions++;
    }
}

/* ---- closed-loop replay: min-heap of in-flight completion times ---- */

static void heap_push(struct hbl_sim *s, double v)
{
    double *h = s->inflight;
    int i = s->ninflight++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h[p] <= v) break;
        h[i] = h[p]; i = p;
    }
    h[i] = v;
}

static double heap_pop(struct hbl_sim *s)
{
    double *h = s->inflight, top = h[0], v = h[--s->ninflight];
    int i = 0, n = s->ninflight;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c]; i = c;
    }
    if (n) h[i] = v;
    return top;
}

/* ---- the request loop ---- */

static int ensure_scratch(struct hbl_sim *s, uint32_t n)
{
    if (n <= s->scratch_cap) return 0;
    uint32_t cap = s->scratch_cap ? s->scratch_cap : 256;
    while (cap < n) cap *= 2;
    uint32_t *sl = realloc(s->slots, cap * sizeof(*sl));
    if (!sl) return -1;
    s->slots = sl;
    int8_t *tg = realloc(s->targets, cap);
    if (!tg) return -1;
    s->targets = tg;
    s->scratch_cap = cap;
    return 0;
}

static void timeline_push(struct hbl_sim *s, double now)
{
    if (s->ntl == s->tlcap) {
        uint64_t cap = s->tlcap ? s->tlcap * 2 : 256;
        struct hbl_timeline_row *t = realloc(s->tl, cap * sizeof(*t));
        if (!t) return;
        s->tl = t; s->tlcap = cap;
    }
    struct hbl_timeline_row *row = &s->tl[s->ntl++];
    row->requests = s->st.requests;
    row->time_ns = now;
    row->avg_latency_ns = s->win_req ? s->win_lat / s->win_req : 0;
    row->read_hit_ratio = s->win_rpages ? (double)s->win_rhits / s->win_rpages : 0;
    row->promotions = s->st.promotions;
    row->evictions = s->st.evictions;
    row->fast_used_pages = (uint64_t)s->used[0];
    s->win_req = s->win_rpages = s->win_rhits = 0;
    s->win_lat = 0;
}

static void run_migrations(struct hbl_sim *s, double now)
{
    int m = s->ops->migrate(s->pstate, s, s->mslots, s->mtargets, (int)s->cfg.migrate_max);
    for (int i = 0; i < m; i++) {
        uint32_t x = s->mslots[i];
        int t = s->mtargets[i];
        if (x >= s->pt.n || t < 0 || t >= s->cfg.ndev) continue;
        int from = s->pt.dev[x];
        if (from < 0 || from == t) continue;
        migrate_page(s, x, t, now, 1, 0);
    }
}

static int serve(struct hbl_sim *s, const struct hbl_request *r)
{
    uint64_t first;
    uint32_t n = hbl_req_pages(r, s->cfg.page_size, &first);
    if (!n) { s->st.skipped++; s->nreq++; return 0; }
    if (ensure_scratch(s, n)) return -1;

    double arrival;
    if (s->live) {
        arrival = (double)r->time_ns;
    } else if (s->cfg.queue_depth > 0) {
        arrival = s->last_arrival;
        if (s->ninflight >= s->cfg.queue_depth) {
            double t = heap_pop(s);
            if (t > arrival) arrival = t;
        }
    } else {
        if (!s->have_t0) { s->t0_ns = r->time_ns; s->have_t0 = 1; }
        arrival = r->time_ns > s->t0_ns ? (double)(r->time_ns - s->t0_ns) / s->cfg.speed : 0.0;
    }
    if (s->st.requests == 0) s->st.first_arrival_ns = arrival;
    if (!s->live)
        for (int d = 0; d < s->cfg.ndev; d++) bg_advance(s, d, arrival);
    s->sync_done = arrival;

    struct hbl_pagetable *pt = &s->pt;
    uint32_t *slots = s->slots;
    int8_t *targets = s->targets;
    for (uint32_t i = 0; i < n; i++) {
        slots[i] = hbl_pt_get(pt, first + i);
        if (slots[i] == HBL_NONE) return -1;
        targets[i] = -1;
    }
    if (s->ops->place) s->ops->place(s->pstate, s, r, slots, (int)n, targets);

    /* A write lands where placement wants it (no copy).  Room is made after the
     * request is served: the write may use a spare slot, and whatever has to
     * leave (possibly the page just written) is copied off the request path. */
    int write = r->op == HBL_OP_WRITE;
    double done = arrival;
    uint64_t hits = 0;
    int slowest = 0;   /* the slowest device the request was served from */
    if (s->live) {
        /* The request was served before we saw it, where the extent was: a
         * different choice for it becomes a move, for reads and writes alike. */
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x = slots[i];
            if (pt->dev[x] < 0) set_device(s, x, s->initial_dev);
            if (pt->dev[x] == 0) hits++;
        }
        done = arrival + (double)r->latency_ns;
    } else {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x = slots[i];
            int cur = pt->dev[x], t = targets[i];
            if (t < 0 || t >= s->cfg.ndev || !write) t = cur >= 0 ? cur : s->initial_dev;
            /* a write over part of a page that holds data elsewhere is served where the page
             * is: the rest of the page would have to come along, so a move there is a copy */
            if (write && cur >= 0 && t != cur &&
                (r->offset > (first + i) * s->cfg.page_size ||
                 r->offset + r->length < (first + i + 1) * s->cfg.page_size))
                t = cur;
            if (write) pt->home_copy[x] = 0;
            if (t != cur) set_device(s, x, t);
        }
        for (uint32_t i = 0; i < n;) {
            int d = pt->dev[slots[i]];
            uint32_t j = i + 1;
            while (j < n && pt->dev[slots[j]] == d) j++;
            /* the bytes of the request that fall in these pages: a small request to a large
             * page (a 1 MiB extent) transfers only its own bytes */
            uint64_t lo = (first + i) * s->cfg.page_size, hi = (first + j) * s->cfg.page_size;
            if (lo < r->offset) lo = r->offset;
            if (hi > r->offset + r->length) hi = r->offset + r->length;
            double end = dev_io(s, d, write, first + i, j - i, (double)(hi - lo), arrival);
            if (end > done) done = end;
            if (d == 0) hits += j - i;
            if (d > slowest) slowest = d;
            i = j;
        }
    }

    /* what placement wanted elsewhere is now a move: a read's page (just read, so only the
     * write is left), a partly written page (copied), any request's page in live mode */
    for (uint32_t i = 0; i < n; i++) {
        int t = targets[i];
        if (t >= 0 && t < s->cfg.ndev && t != pt->dev[slots[i]])
            migrate_page(s, slots[i], t, arrival, write && !s->live, 0);
    }
    for (int d = 0; d < s->cfg.ndev - 1; d++) make_room(s, d, arrival, 0);
    if (s->sync_done > done) {   /* evictions the queues could not take */
        s->st.sync_wait_ns += s->sync_done - done;
        done = s->sync_done;
    }

    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = slots[i];
        pt->count[x]++;
        pt->last[x] = s->nreq;
        lru_touch(s, x);
    }

    double lat = done - arrival;
    s->st.requests++;
    if (write) { s->st.writes++; s->st.write_bytes += r->length; }
    else { s->st.reads++; s->st.read_bytes += r->length; }
    s->st.page_accesses += n;
    if (write) { s->st.write_page_accesses += n; s->st.fast_page_writes += hits; }
    else { s->st.read_page_accesses += n; s->st.fast_read_hits += hits; }
    s->st.latency_sum_ns += lat;
    if (!s->live) { s->st.served_requests[slowest]++; s->st.served_latency_ns[slowest] += lat; }
    if (done > s->st.last_completion_ns) s->st.last_completion_ns = done;
    hbl_hist_add(&s->hist, (uint64_t)llround(lat));
    s->win_req++; s->win_lat += lat;
    if (!write) { s->win_rpages += n; s->win_rhits += hits; }
    if (s->cfg.queue_depth > 0) heap_push(s, done);
    s->last_arrival = arrival;

    if (s->ops->observe) s->ops->observe(s->pstate, s, r, slots, (int)n, lat);
    s->nreq++;
    if (s->ops->migrate && s->cfg.migrate_every && s->st.requests % s->cfg.migrate_every == 0)
        run_migrations(s, arrival);
    if (s->cfg.timeline_every && s->st.requests % s->cfg.timeline_every == 0)
        timeline_push(s, arrival);
    return 0;
}

/* ---- public API ---- */

/* live is set before the policy's init: policies may choose other defaults in live mode */
static struct hbl_sim *sim_new(const struct hbl_sim_config *cfg, const char *policy,
                               const struct hbl_params *params, void *plugin, int live,
                               char *err, int32_t errlen)
{
    if (cfg->ndev < 2 || cfg->ndev > HBL_MAX_DEVICES) {
        snprintf(err, errlen, "a hybrid system has 2 to 4 devices, not %d", cfg->ndev);
        return NULL;
    }
    if (cfg->page_size == 0 || cfg->speed <= 0 || cfg->migrate_max > 65536) {
        snprintf(err, errlen, "page size must be > 0, speed > 0, migrate_max <= 65536");
        return NULL;
    }
    for (int d = 0; d < cfg->ndev; d++) {
        const struct hbl_device_params *p = &cfg->dev[d];
        if (!(p->read_bytes_per_ns > 0 && p->write_bytes_per_ns > 0 && p->read_latency_ns >= 0 &&
              p->write_latency_ns >= 0 && p->read_iops >= 0 && p->write_iops >= 0 && p->seek_ns >= 0 &&
              p->rotation_ns >= 0 && p->track_seek_ns >= 0 && p->track_seek_ns <= p->seek_ns &&
              (p->seek_ns == 0 || p->span_pages >= 1) && p->streams >= 1 && p->streams <= HBL_MAX_STREAMS)) {
            snprintf(err, errlen, "device %d: bandwidths must be > 0, latencies and IOPS >= 0, track seek <= seek, "
                     "span >= 1 page, streams 1..%d", d, HBL_MAX_STREAMS);
            return NULL;
        }
    }
    if (!(cfg->bg.rate_bytes_per_ns >= 0 && cfg->bg.idle_ns >= 0)) {
        snprintf(err, errlen, "background rate and idle time must be >= 0");
        return NULL;
    }
    if (cfg->dev[cfg->ndev - 1].capacity_pages >= 0) {
        snprintf(err, errlen, "the slowest device must have unlimited capacity (it holds what fits nowhere else)");
        return NULL;
    }
    const struct hbl_policy_ops *ops = hbl_policy_find(policy);
    if (!ops) {
        snprintf(err, errlen, "unknown policy '%s'", policy);
        return NULL;
    }
    if (hbl_params_check(params, ops->params, err, errlen)) return NULL;

    struct hbl_sim *s = calloc(1, sizeof(*s));
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->cfg = *cfg;
    s->ops = ops;
    s->plugin = plugin;
    s->live = live;
    s->initial_dev = cfg->ndev - 1;
    for (int d = 0; d < HBL_MAX_DEVICES; d++) {
        s->lru_head[d] = s->lru_tail[d] = HBL_NONE;
        s->head[d] = HBL_NEVER;
        for (int k = 0; k < HBL_MAX_STREAMS; k++) s->stream[d][k] = HBL_NEVER;
    }
    uint32_t mm = cfg->migrate_max ? cfg->migrate_max : 1;
    s->mslots = malloc(mm * sizeof(*s->mslots));
    s->mtargets = malloc(mm);
    s->inflight = malloc(((size_t)(cfg->queue_depth > 0 ? cfg->queue_depth : 1) + 1) * sizeof(double));
    if (!s->mslots || !s->mtargets || !s->inflight || hbl_pt_init(&s->pt, 1 << 16) ||
        ensure_scratch(s, 256)) {
        snprintf(err, errlen, "out of memory");
        hbl_sim_free(s);
        return NULL;
    }
    if (ops->init && ops->init(s, &s->pstate, params, err, errlen)) {
        s->ops = NULL;
        hbl_sim_free(s);
        return NULL;
    }
    return s;
}

struct hbl_sim *hbl_sim_new(const struct hbl_sim_config *cfg, const char *policy,
                            const struct hbl_params *params, void *plugin,
                            char *err, int32_t errlen)
{
    return sim_new(cfg, policy, params, plugin, 0, err, errlen);
}

void hbl_sim_free(struct hbl_sim *s)
{
    if (!s) return;
    hbl_sim_background_training(s, 0, NULL, 0);
    if (s->ops && s->ops->free) s->ops->free(s->pstate);
    hbl_pt_free(&s->pt);
    free(s->slots); free(s->targets); free(s->mslots); free(s->mtargets);
    free(s->inflight); free(s->tl); free(s->mq);
    for (int d = 0; d < HBL_MAX_DEVICES; d++) free(s->bgq[d]);
    free(s);
}

int32_t hbl_sim_set_future(struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n)
{
    if (!s->ops->set_future) return -1;
    return s->ops->set_future(s->pstate, s, reqs, n);
}

int32_t hbl_sim_feed(struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (serve(s, &reqs[i])) return -1;
    return 0;
}

void hbl_sim_get_stats(const struct hbl_sim *s, struct hbl_sim_stats *out)
{
    *out = s->st;
    out->pages = s->pt.n;
    for (int d = 0; d < HBL_MAX_DEVICES; d++) out->used_pages[d] = d < s->cfg.ndev ? (uint64_t)s->used[d] : 0;
}

double hbl_sim_latency_percentile(const struct hbl_sim *s, double q)
{
    return hbl_hist_percentile(&s->hist, q);
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
    if (s->st.migrated_bytes !=
        (s->st.promotions + s->st.evictions - s->st.clean_evictions) * (uint64_t)s->cfg.page_size) {
        snprintf(err, errlen, "migrated bytes %llu != (promotions + evictions - clean evictions) x page size",
                 (unsigned long long)s->st.migrated_bytes);
        return -1;
    }
    return 0;
}

int32_t hbl_sim_page_device(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.dev[x] : -2; }
uint64_t hbl_sim_page_number(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.page[x] : 0; }
uint32_t hbl_sim_page_count(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.count[x] : 0; }
uint64_t hbl_sim_page_last_access(const struct hbl_sim *s, uint32_t x) { return x < s->pt.n ? s->pt.last[x] : HBL_NEVER; }
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

/* ---- agents of learning policies ---- */

static int sim_agents(const struct hbl_sim *s, struct hbl_agent **ag)
{
    return s->ops->agents ? s->ops->agents(s->pstate, ag) : 0;
}

/* The background trainer: one thread for the policy's agents, which trains and
 * syncs each when due and otherwise sleeps 5 ms. */
struct hbl_trainer {
    pthread_t th;
    int stop, n;
    struct hbl_agent *ag[4];
};

static void *trainer_main(void *arg)
{
    struct hbl_trainer *t = arg;
    const struct timespec idle = { 0, 5000000 };
    while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
        int did = 0;
        for (int i = 0; i < t->n; i++) did |= hbl_agent_background(t->ag[i]);
        if (!did) nanosleep(&idle, NULL);
    }
    return NULL;
}

int32_t hbl_sim_background_training(struct hbl_sim *s, int32_t on, char *err, int32_t errlen)
{
    if (!on) {
        struct hbl_trainer *t = s->trainer;
        if (!t) return 0;
        __atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
        pthread_join(t->th, NULL);
        for (int i = 0; i < t->n; i++) hbl_agent_set_background(t->ag[i], 0);
        free(t);
        s->trainer = NULL;
        return 0;
    }
    if (s->trainer) return 0;
    struct hbl_trainer *t = calloc(1, sizeof(*t));
    if (!t) { snprintf(err, errlen, "out of memory"); return -1; }
    t->n = sim_agents(s, t->ag);
    if (!t->n) { free(t); return 0; }   /* nothing learns */
    for (int i = 0; i < t->n; i++) hbl_agent_set_background(t->ag[i], 1);
    int rc = pthread_create(&t->th, NULL, trainer_main, t);
    if (rc) {
        for (int i = 0; i < t->n; i++) hbl_agent_set_background(t->ag[i], 0);
        free(t);
        snprintf(err, errlen, "cannot start the training thread: %s", strerror(rc));
        return -1;
    }
    s->trainer = t;
    return 0;
}

struct hbl_agent *hbl_sim_agent(const struct hbl_sim *s, int32_t i)
{
    struct hbl_agent *ag[4];
    int n = sim_agents(s, ag);
    return i >= 0 && i < n ? ag[i] : NULL;
}

int32_t hbl_sim_save_agents(const struct hbl_sim *s, const char *path, char *err, int32_t errlen)
{
    struct hbl_agent *ag[4];
    int n = sim_agents(s, ag);
    if (!n) { snprintf(err, errlen, "policy %s has no agents to save", s->ops->name); return -1; }
    return hbl_agents_save(path, s->ops->name, ag, n, err, errlen);
}

int32_t hbl_sim_load_agents(struct hbl_sim *s, const char *path, char *err, int32_t errlen)
{
    struct hbl_agent *ag[4];
    int n = sim_agents(s, ag);
    if (!n) { snprintf(err, errlen, "policy %s has no agents to load", s->ops->name); return -1; }
    return hbl_agents_load(path, s->ops->name, ag, n, err, errlen);
}

/* ---- live mode: the same policies deciding for a real device ---- */

static void live_queue(struct hbl_sim *s, uint32_t x)
{
    if (s->nmq == s->mqcap) {
        uint64_t cap = s->mqcap ? s->mqcap * 2 : 1024;
        uint64_t *q = realloc(s->mq, cap * sizeof(*q));
        if (!q) return;           /* the move stays in the table; hbl_live_device tells */
        s->mq = q; s->mqcap = cap;
    }
    s->mq[s->nmq++] = s->pt.page[x];
}

struct hbl_sim *hbl_live_new(const struct hbl_sim_config *cfg, const char *policy,
                             const struct hbl_params *params, char *err, int32_t errlen)
{
    return sim_new(cfg, policy, params, NULL, 1, err, errlen);
}

int32_t hbl_live_set_devices(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (devs[i] < 0 || devs[i] >= s->cfg.ndev) return -1;
        uint32_t x = hbl_pt_get(&s->pt, extents[i]);
        if (x == HBL_NONE) return -1;
        set_device(s, x, devs[i]);
    }
    return 0;
}

int32_t hbl_live_device(const struct hbl_sim *s, uint64_t extent)
{
    uint32_t x = hbl_pt_find(&s->pt, extent);
    return x == HBL_NONE ? HBL_UNPLACED : s->pt.dev[x];
}

uint64_t hbl_live_take_moves(struct hbl_sim *s, uint64_t *extents, uint64_t max)
{
    uint64_t n = s->nmq < max ? s->nmq : max;
    memcpy(extents, s->mq, n * sizeof(*extents));
    memmove(s->mq, s->mq + n, (s->nmq - n) * sizeof(*s->mq));
    s->nmq -= n;
    return n;
}

