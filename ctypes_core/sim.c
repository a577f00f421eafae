/*
 * The trace-driven simulator: page table + device model + one policy.
 *
 * Requests arrive in batches from Python; everything per request happens here.
 * Device model: each device has `channels` FCFS servers; an I/O costs a fixed
 * latency plus size / bandwidth, plus a seek on an HDD when it does not continue
 * the previous I/O.  A request whose pages live on several devices is split and
 * completes when its last part does.  Migration I/O (read the source, write the
 * destination) is queued on the same servers, so it competes with foreground I/O.
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

static double dev_io(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double now)
{
    const struct hbl_device_params *p = &s->cfg.dev[d];
    double bytes = (double)npages * s->cfg.page_size;
    double svc = write ? p->write_latency_ns + bytes / p->write_bytes_per_ns
                       : p->read_latency_ns + bytes / p->read_bytes_per_ns;
    if (p->rotation_ns + p->seek_ns > 0 && page != s->seq_next[d]) {
        double dist = s->seq_next[d] == HBL_NEVER ? p->span_pages / 3
                    : fabs((double)page - (double)s->seq_next[d]);
        double seek = p->track_seek_ns + (p->seek_ns - p->track_seek_ns) * sqrt(3.0 * dist / p->span_pages);
        if (seek > 2 * p->seek_ns) seek = 2 * p->seek_ns;   /* full stroke */
        svc += p->rotation_ns + seek;
    }
    s->seq_next[d] = page + npages;
    double *fa = s->free_at[d];
    int k = 0;
    for (int c = 1; c < p->channels; c++)
        if (fa[c] < fa[k]) k = c;
    double start = fa[k] > now ? fa[k] : now;
    fa[k] = start + svc;
    s->st.busy_ns[d] += svc / p->channels;
    s->st.dev_io_bytes[d] += (uint64_t)bytes;
    return fa[k];
}

/* Move one stored page with a copy (read source, write destination).  Data
 * promoted from the slowest device leaves its copy there (as dm-cache and
 * bcache do); until the page is written, evicting it back costs no I/O. */
static void make_room(struct hbl_sim *s, int d, double now, int64_t room);

static void live_queue(struct hbl_sim *s, uint32_t x);

static void migrate_page(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed)
{
    int from = s->pt.dev[x];
    make_room(s, to, now, 1);
    if (s->live) {                 /* the controller copies; nothing is kept twice */
        s->pt.last_mig[x] = s->nreq;
        if (to < from) s->st.promotions++; else s->st.evictions++;
        s->st.migrated_bytes += s->cfg.page_size;
        live_queue(s, x);
        set_device(s, x, to);
        return;
    }
    uint64_t page = s->pt.page[x];
    s->pt.last_mig[x] = s->nreq;
    if (to < from) s->st.promotions++; else s->st.evictions++;
    if (to == hbl_slowest(s) && s->pt.home_copy[x]) {
        s->st.clean_evictions++;
    } else {
        if (read_needed) dev_io(s, from, 0, page, 1, now);
        dev_io(s, to, 1, page, 1, now);
        s->st.migrated_bytes += s->cfg.page_size;
    }
    if (from == hbl_slowest(s)) s->pt.home_copy[x] = 1;
    set_device(s, x, to);
}

/* The same fallback for every policy: until d has `room` free pages, its
 * victim (least recently used unless the policy names one) goes to the next
 * slower device. */
static void make_room(struct hbl_sim *s, int d, double now, int64_t room)
{
    while (hbl_free_pages(s, d) < room && d + 1 < s->cfg.ndev) {
        uint32_t v = s->ops->victim ? s->ops->victim(s->pstate, s, d) : s->lru_tail[d];
        if (v == HBL_NONE) return;
        migrate_page(s, v, d + 1, now, 1);
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
    row->fast_hit_ratio = s->win_pages ? (double)s->win_hits / s->win_pages : 0;
    row->promotions = s->st.promotions;
    row->evictions = s->st.evictions;
    row->fast_used_pages = (uint64_t)s->used[0];
    s->win_req = s->win_pages = s->win_hits = 0;
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
        migrate_page(s, x, t, now, 1);
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
            if (write) pt->home_copy[x] = 0;
            if (t != cur) set_device(s, x, t);
        }
        for (uint32_t i = 0; i < n;) {
            int d = pt->dev[slots[i]];
            uint32_t j = i + 1;
            while (j < n && pt->dev[slots[j]] == d) j++;
            double end = dev_io(s, d, write, first + i, j - i, arrival);
            if (end > done) done = end;
            if (d == 0) hits += j - i;
            i = j;
        }
    }

    if (!write || s->live) {    /* a read may promote or evict what it just read (live: any request) */
        for (uint32_t i = 0; i < n; i++) {
            int t = targets[i];
            if (t >= 0 && t < s->cfg.ndev && t != pt->dev[slots[i]])
                migrate_page(s, slots[i], t, arrival, 0);
        }
    }
    for (int d = 0; d < s->cfg.ndev - 1; d++) make_room(s, d, arrival, 0);

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
    s->st.fast_page_hits += hits;
    if (!write) { s->st.read_page_accesses += n; s->st.fast_read_hits += hits; }
    s->st.latency_sum_ns += lat;
    if (done > s->st.last_completion_ns) s->st.last_completion_ns = done;
    hbl_hist_add(&s->hist, (uint64_t)llround(lat));
    s->win_req++; s->win_pages += n; s->win_hits += hits; s->win_lat += lat;
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
        if (p->channels < 1 || p->channels > HBL_MAX_CHANNELS || p->read_bytes_per_ns <= 0 ||
            p->write_bytes_per_ns <= 0 || p->read_latency_ns < 0 || p->write_latency_ns < 0 ||
            p->seek_ns < 0 || p->rotation_ns < 0 || p->track_seek_ns < 0 || p->track_seek_ns > p->seek_ns ||
            (p->seek_ns > 0 && p->span_pages < 1)) {
            snprintf(err, errlen, "device %d: channels must be 1..%d, bandwidths > 0, latencies >= 0, track seek <= seek, span >= 1 page",
                     d, HBL_MAX_CHANNELS);
            return NULL;
        }
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
        s->seq_next[d] = HBL_NEVER;
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

int32_t hbl_live_migrate(struct hbl_sim *s)
{
    if (!s->ops->migrate) return 0;
    uint64_t before = s->nmq;
    run_migrations(s, s->last_arrival);
    return (int32_t)(s->nmq - before);
}
