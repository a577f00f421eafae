/*
 * The trace-driven simulator: page table + device model + one policy.  This
 * file holds its request loop and its construction; the device model and the
 * background queues are sim_device.c, moving pages sim_move.c, its results
 * sim_stats.c, its agents sim_agents.c, live mode sim_live.c (sim_internal.h).
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
#include "sim_internal.h"

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
    if (s->diag) m = hbl_diag_round(s, m);
    for (int i = 0; i < m; i++) {
        uint32_t x = s->mslots[i];
        int t = s->mtargets[i];
        if (x >= s->pt.n || t < 0 || t >= s->cfg.ndev) continue;
        int from = s->pt.dev[x];
        if (from < 0 || from == t) continue;
        if (hbl_migrate_page(s, x, t, now, 1, 0) && s->diag) hbl_diag_moved(s, x, from, t);
    }
}

/* Whether request r spans the whole of page `page` (pages of ps bytes). */
static inline int covers(const struct hbl_request *r, uint64_t page, uint32_t ps)
{
    return r->offset <= page * ps && r->offset + r->length >= (page + 1) * ps;
}

/* What serving a request found: when it completed, its pages on the fastest device, the slowest
 * device it was served from, and whether it wrote a page for the first time. */
struct served { double done; uint64_t hits; int slowest, first_write; };

/* When request r arrives (live: its own time; closed loop: once one of the queue_depth before it
 * completes; open loop: trace time / speed), the background I/O and batches due by then done. */
static double arrive(struct hbl_sim *s, const struct hbl_request *r)
{
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
        hbl_bg_advance(s, arrival);
    if (!s->live && s->cfg.bg.batch_moves)
        hbl_batch_advance(s, arrival);
    s->sync_done = arrival;
    return arrival;
}

/* The request's n pages from `first` in s->slots (targets -1); -1 when the page table is out of memory. */
static int look_up(struct hbl_sim *s, uint64_t first, uint32_t n, int write)
{
    struct hbl_pagetable *pt = &s->pt;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = s->slots[i] = hbl_pt_get(pt, first + i);
        if (x == HBL_NONE) return -1;
        s->targets[i] = -1;
        if (!write && pt->unread[x]) {   /* a promotion read: nothing moves a page before this request's own
                                          * moves (below), so a promotion it makes stays unread */
            s->st.promoted_unread -= pt->unread[x];
            pt->unread[x] = 0;
        }
    }
    return 0;
}

/* Live mode: the request was served before we saw it, where the extent was: a different choice
 * for it becomes a move, for reads and writes alike. */
static void served_live(struct hbl_sim *s, const struct hbl_request *r, uint32_t n, int write,
                        double arrival, struct served *v)
{
    struct hbl_pagetable *pt = &s->pt;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = s->slots[i];
        if (pt->dev[x] < 0) hbl_set_device(s, x, s->initial_dev);
        if (pt->dev[x] == 0) v->hits++;
        (write ? s->st.write_pages : s->st.read_pages)[pt->dev[x]]++;
    }
    v->done = arrival + (double)r->latency_ns;
}

/* Each page's device before it is served: a read's stays (a page never placed on initial_dev), a
 * write lands where placement wants it (no copy; with batch_moves, where the page is, its
 * placement a move).  Room is made after the request is served: the write may use a spare slot,
 * and whatever has to leave (possibly the page just written) is copied off the request path. */
static void land(struct hbl_sim *s, const struct hbl_request *r, uint64_t first, uint32_t n, int write,
                 struct served *v)
{
    struct hbl_pagetable *pt = &s->pt;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = s->slots[i];
        int cur = pt->dev[x], t = s->targets[i];
        if (t < 0 || t >= s->cfg.ndev || !write) t = cur >= 0 ? cur : s->initial_dev;
        /* a write over part of a page that holds data elsewhere is served where the page
         * is: the rest of the page would have to come along, so a move there is a copy */
        if (write && cur >= 0 && t != cur && !covers(r, first + i, s->cfg.page_size))
            t = cur;
        /* batch_moves: a write moves no page; it is served where the page's data is, as the
         * live device writes where the extent is mapped (a page never placed: on the slowest
         * device, as the live decider places one), and placement's target becomes a move asked
         * of the queue (below), a copy of what was written (hbl/live/observe.py decide) */
        if (write && s->cfg.bg.batch_moves) t = cur >= 0 ? cur : s->initial_dev;
        if (write) { v->first_write |= !pt->written[x]; pt->home_copy[x] = 0; pt->written[x] = 1; }
        if (write && hbl_tracks_copies(s) && !s->cfg.bg.batch_moves && covers(r, first + i, s->cfg.page_size))
            pt->copy_from[x] = HBL_UNPLACED;       /* a copy under way is overwritten */
        if (t != cur) hbl_set_device(s, x, t);
    }
}

/* The request's I/O: one per run of its pages served from the same device, completing with the last. */
static void do_io(struct hbl_sim *s, const struct hbl_request *r, uint64_t first, uint32_t n, int write,
                  double arrival, struct served *v)
{
    for (uint32_t i = 0; i < n;) {
        int d = hbl_serve_dev(s, s->slots[i], arrival);
        uint32_t j = i + 1;
        while (j < n && hbl_serve_dev(s, s->slots[j], arrival) == d) j++;
        /* the bytes of the request that fall in these pages: a small request to a large
         * page (a 1 MiB extent) transfers only its own bytes */
        uint64_t lo = (first + i) * s->cfg.page_size, hi = (first + j) * s->cfg.page_size;
        if (lo < r->offset) lo = r->offset;
        if (hi > r->offset + r->length) hi = r->offset + r->length;
        double end = hbl_dev_io(s, d, write, first + i, j - i, (double)(hi - lo), arrival);
        if (end > v->done) v->done = end;
        if (d == 0) v->hits += j - i;
        if (d > v->slowest) v->slowest = d;
        (write ? s->st.write_pages : s->st.read_pages)[d] += j - i;
        i = j;
    }
}

/* What placement wanted elsewhere is now a move: a read's page (just read, so only the
 * write is left; with copy_partial_reads only if the read covered it whole, else the
 * rest of it is read from where it is), a partly written page (copied), any written page
 * with batch_moves, any request's page in live mode. */
static void ask_moves(struct hbl_sim *s, const struct hbl_request *r, uint64_t first, uint32_t n, int write,
                      double arrival)
{
    for (uint32_t i = 0; i < n; i++) {
        int t = s->targets[i], from = s->pt.dev[s->slots[i]];
        if (t >= 0 && t < s->cfg.ndev && t != from &&
            hbl_migrate_page(s, s->slots[i], t, arrival,
                             !s->live && (write || (s->cfg.bg.copy_partial_reads &&
                                                          !covers(r, first + i, s->cfg.page_size))), 0) &&
            s->diag)
            hbl_diag_moved(s, s->slots[i], from, t);
    }
}

/* The request's figures, once served (its latency lat). */
static void account(struct hbl_sim *s, const struct hbl_request *r, uint32_t n, int write, double arrival,
                    const struct served *v)
{
    double lat = v->done - arrival;
    s->st.requests++;
    if (write) { s->st.writes++; s->st.write_bytes += r->length; }
    else { s->st.reads++; s->st.read_bytes += r->length; s->st.read_latency_ns += lat; }
    s->st.page_accesses += n;
    if (write) s->st.write_page_accesses += n; else s->st.read_page_accesses += n;
    s->st.latency_sum_ns += lat;
    if (!s->live) { s->st.served_requests[v->slowest]++; s->st.served_latency_ns[v->slowest] += lat; }
    if (v->done > s->st.last_completion_ns) s->st.last_completion_ns = v->done;
    hbl_hist_add(&s->hist, (uint64_t)llround(lat));
    s->win_req++; s->win_lat += lat;
    if (!write) { s->win_rpages += n; s->win_rhits += v->hits; }
    if (s->cfg.queue_depth > 0 && !s->live) heap_push(s, v->done);   /* live: nothing replayed, no queue */
    s->last_arrival = arrival;
}

static int serve(struct hbl_sim *s, const struct hbl_request *r)
{
    if (s->teacher && hbl_sim_feed(s->teacher, r, 1)) return -1;   /* the teacher serves it first (teacher.h) */
    uint64_t first;
    uint32_t n = hbl_req_pages(r, s->cfg.page_size, &first);
    if (!n) { s->st.skipped++; s->nreq++; return 0; }
    if (ensure_scratch(s, n)) return -1;
    double arrival = arrive(s, r);
    int write = r->op == HBL_OP_WRITE;
    if (look_up(s, first, n, write)) return -1;
    if (s->ops->place) s->ops->place(s->pstate, s, r, s->slots, (int)n, s->targets);
    if (s->diag) hbl_diag_place(s, (int)n, write);

    struct served v = { arrival, 0, 0, 0 };
    if (s->live) {
        served_live(s, r, n, write, arrival, &v);
    } else {
        land(s, r, first, n, write, &v);
        do_io(s, r, first, n, write, arrival, &v);
    }
    if (s->diag) hbl_diag_ask(s, (int)n, write);
    ask_moves(s, r, first, n, write, arrival);
    if (v.first_write && s->cfg.bg.frontier)
        hbl_batch_frontier(s, first + n - 1, arrival);
    for (int d = 0; d < s->cfg.ndev - 1; d++) hbl_make_room(s, d, arrival, 0);
    if (s->sync_done > v.done) {   /* evictions the queues could not take */
        s->st.sync_wait_ns += s->sync_done - v.done;
        v.done = s->sync_done;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = s->slots[i];
        s->pt.count[x]++;
        s->pt.last[x] = s->nreq;
        hbl_lru_touch(s, x);
    }
    account(s, r, n, write, arrival, &v);

    if (s->ops->observe) s->ops->observe(s->pstate, s, r, s->slots, (int)n, v.done - arrival);
    if (s->diag) hbl_diag_served(s, s->slots, (int)n, write);
    s->nreq++;
    if (s->ops->migrate && s->cfg.migrate_every && s->st.requests % s->cfg.migrate_every == 0)
        run_migrations(s, arrival);
    if (s->cfg.timeline_every && s->st.requests % s->cfg.timeline_every == 0)
        timeline_push(s, arrival);
    return 0;
}

/* ---- construction and feeding (public API) ---- */

/* The teacher the policy asks for (ops->teacher, teacher.h): a second simulation of the same HSS
 * running that non-learning policy with its defaults, no timeline; simulation only. */
static int start_teacher(struct hbl_sim *s, char *err, int32_t errlen)
{
    const char *name = s->ops->teacher ? s->ops->teacher(s->pstate) : NULL;
    if (!name) return 0;
    const struct hbl_policy_ops *ops = hbl_policy_find(name);
    if (s->live || !ops || (ops->flags & (HBL_POLICY_LEARNS | HBL_POLICY_NEEDS_FUTURE)) || ops->teacher) {
        snprintf(err, errlen, "teacher %s: a non-learning policy without a teacher, in a simulation only", name);
        return -1;
    }
    struct hbl_sim_config cfg = s->cfg;
    struct hbl_params none = {0};
    cfg.timeline_every = 0;
    s->teacher = hbl_sim_create(&cfg, name, &none, NULL, 0, err, errlen);
    return s->teacher ? 0 : -1;
}

/* live is set before the policy's init: policies may choose other defaults in live mode */
struct hbl_sim *hbl_sim_create(const struct hbl_sim_config *cfg, const char *policy,
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
    if (cfg->bg.batch_moves > HBL_BATCH_MAX ||
        (cfg->bg.batch_moves && !(cfg->bg.batch_interval_ns > 0 && cfg->bg.stale_ns > 0))) {
        snprintf(err, errlen, "batch moves must be <= %d, with a batch interval and stale time > 0", HBL_BATCH_MAX);
        return NULL;
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
    s->batch_start = -1;
    for (int d = 0; d < HBL_MAX_DEVICES; d++) {
        s->lru_head[d] = s->lru_tail[d] = HBL_NONE;
        s->head[d] = HBL_NEVER;
        for (int k = 0; k < HBL_MAX_STREAMS; k++) s->stream[d][k] = HBL_NEVER;
    }
    uint32_t mm = (cfg->migrate_max ? cfg->migrate_max : 1) + 1;   /* + 1: a diagnostic flip (sim_diag.c) */
    s->mslots = malloc(mm * sizeof(*s->mslots));
    s->mtargets = malloc(mm);
    s->inflight = malloc(((size_t)(cfg->queue_depth > 0 ? cfg->queue_depth : 1) + 1) * sizeof(double));
    if (!s->mslots || !s->mtargets || !s->inflight || hbl_pt_init(&s->pt, 1 << 16) ||
        ((hbl_tracks_copies(s) || live) && hbl_pt_track_copies(&s->pt)) || ensure_scratch(s, 256)) {
        snprintf(err, errlen, "out of memory");
        hbl_sim_free(s);
        return NULL;
    }
    if (ops->init && ops->init(s, &s->pstate, params, err, errlen)) {
        s->ops = NULL;
        hbl_sim_free(s);
        return NULL;
    }
    if (start_teacher(s, err, errlen)) {
        hbl_sim_free(s);
        return NULL;
    }
    return s;
}

struct hbl_sim *hbl_sim_new(const struct hbl_sim_config *cfg, const char *policy,
                            const struct hbl_params *params, void *plugin,
                            char *err, int32_t errlen)
{
    return hbl_sim_create(cfg, policy, params, plugin, 0, err, errlen);
}

void hbl_sim_free(struct hbl_sim *s)
{
    if (!s) return;
    hbl_sim_background_training(s, 0, 0, NULL, 0);
    if (s->ops && s->ops->free) s->ops->free(s->pstate);
    hbl_diag_free(s->diag);
    hbl_sim_free(s->teacher);
    hbl_pt_free(&s->pt);
    free(s->slots); free(s->targets); free(s->mslots); free(s->mtargets);
    free(s->inflight); free(s->tl); free(s->mq); free(s->wq); free(s->bq); free(s->later);
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
