/*
 * The device model of the simulator: when an I/O on a device starts and how
 * long it takes (an SSD a pipeline with its QD1 latency and IOPS ceiling, an
 * HDD one I/O at a time with seeks, rotation and read-ahead streams), and the
 * per-device queues of background I/O (promotions, evictions, write-backs)
 * served in the devices' idle time.  Knows nothing of pages or policies (it
 * tells sim_move.c when a queued copy I/O starts: hbl_copy_started).
 */
#include <math.h>
#include <stdlib.h>
#include "sim_internal.h"

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
    if (s->diag) hbl_diag_io(s, d, write, s->bg_last[d], s->free_at[d] > now ? s->free_at[d] - now : 0);
    s->bg_last[d] = 0;
    double done = dev_start(s, d, write, page, npages, bytes, now, 0);
    if (done > s->fg_done[d]) s->fg_done[d] = done;
    return done;
}

double hbl_dev_io(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double bytes, double now)
{
    return dev_io(s, d, write, page, npages, bytes, now);
}

/* ---- background I/O: served in the devices' idle time ---- */

/* Queue a background I/O; one that continues the last queued I/O of the same
 * kind is merged with it (runs evicted together are written back as one I/O). */
int hbl_bg_push(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double now)
{
    s->bgpages[d] += npages;
    if (s->nbg[d]) {
        struct hbl_bgop *t = &s->bgq[d][s->nbg[d] - 1];
        if (t->write == write && t->npages + npages <= HBL_BG_MAX_RUN) {
            if (t->page + t->npages == page) { t->npages += npages; return 1; }
            if (page + npages == t->page) { t->page = page; t->npages += npages; return 1; }
        }
    }
    if (s->nbg[d] == s->bgcap[d]) {
        uint32_t cap = s->bgcap[d] ? 2 * s->bgcap[d] : 64;
        struct hbl_bgop *q = realloc(s->bgq[d], cap * sizeof(*q));
        if (!q) {               /* no memory for the queue: do it now instead */
            s->bgpages[d] -= npages;
            dev_io(s, d, write, page, npages, (double)npages * s->cfg.page_size, now);
            return 0;
        }
        s->bgq[d] = q; s->bgcap[d] = cap;
    }
    if (!s->nbg[d] && s->bg_next[d] < now) s->bg_next[d] = now;   /* nothing was waiting: ready from now */
    s->bgq[d][s->nbg[d]++] = (struct hbl_bgop){ page, npages, (uint8_t)write };
    return 1;
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
 * not been for that long), under the rate limit.  With compete, it takes its
 * turn among the foreground I/O instead: one background I/O at a time, each
 * issued when the one before it completed, queued behind the foreground I/O
 * the device has already started (first come, first served). */
static void bg_advance(struct hbl_sim *s, int d, double now)
{
    const struct hbl_background_config *b = &s->cfg.bg;
    while (s->nbg[d]) {
        double start = s->free_at[d] > s->bg_next[d] ? s->free_at[d] : s->bg_next[d];
        if (b->compete) {
            if (s->bg_next[d] > now) return;
        } else {
            if (s->fg_done[d] + b->idle_ns > start) start = s->fg_done[d] + b->idle_ns;
            if (start >= now) return;
        }
        struct hbl_bgop op = bg_take(s, d);
        double bytes = (double)op.npages * s->cfg.page_size;
        double t = dev_start(s, d, op.write, op.page, op.npages, bytes, start, 1);
        hbl_copy_started(s, &op, t);
        s->bg_last[d] = (uint8_t)(1 + op.write);   /* 1: a background read, 2: a write (sim_diag.c tells them apart) */
        s->bg_done_pages[d] += op.npages;
        if (s->diag) hbl_diag_bg(s, d, op.write, op.npages);
        s->st.background_ios++;
        if (b->compete) s->bg_next[d] = t;
        if (b->rate_bytes_per_ns > 0 && (!b->compete || start + bytes / b->rate_bytes_per_ns > t))
            s->bg_next[d] = start + bytes / b->rate_bytes_per_ns;
    }
}

void hbl_bg_advance(struct hbl_sim *s, double now)
{
    for (int d = 0; d < s->cfg.ndev; d++) bg_advance(s, d, now);
}

/* Make room in d's full queue for npages: serve queued I/O now, in the queue's
 * order, as foreground work; returns when it completes. */
double hbl_bg_drain(struct hbl_sim *s, int d, uint32_t npages, double now)
{
    double done = now;
    while (s->nbg[d] && !hbl_bg_room(s, d, npages)) {
        struct hbl_bgop op = bg_take(s, d);
        double busy = s->st.busy_ns[d];
        s->bg_done_pages[d] += op.npages;
        if (s->diag) hbl_diag_drain(s, d, op.write, op.npages);
        double t = dev_io(s, d, op.write, op.page, op.npages, (double)op.npages * s->cfg.page_size, now);
        hbl_copy_started(s, &op, t);
        s->st.sync_busy_ns[d] += s->st.busy_ns[d] - busy;
        if (t > done) done = t;
    }
    return done;
}
