#include <stdlib.h>
#include <string.h>
#include "hindsight.h"

int hbl_evalq_init(struct hbl_evalq *q, uint32_t cap, int nstate, int tag64)
{
    memset(q, 0, sizeof(*q));
    q->e = calloc(cap, sizeof(*q->e));
    if (!q->e) return -1;
    q->cap = cap;
    q->nstate = (uint8_t)nstate;
    q->tag64 = (uint8_t)(tag64 != 0);
    return 0;
}

void hbl_evalq_free(struct hbl_evalq *q)
{
    free(q->e);
    q->e = NULL;
}

/* A page under evaluation is tagged with its entry (index + 1) in a page table field
 * its agent owns. */
static uint64_t tag(const struct hbl_evalq *q, const struct hbl_sim *s, uint32_t slot)
{
    return q->tag64 ? s->pt.aux64[slot] : s->pt.decision[slot];
}

static void set_tag(const struct hbl_evalq *q, struct hbl_sim *s, uint32_t slot, uint64_t v)
{
    if (q->tag64) s->pt.aux64[slot] = v;
    else s->pt.decision[slot] = (uint32_t)v;
}

static struct hbl_judged *entry_of(struct hbl_evalq *q, const struct hbl_sim *s, uint32_t slot)
{
    uint64_t t = tag(q, s, slot);
    if (!t || t > q->cap) return NULL;
    struct hbl_judged *e = &q->e[t - 1];
    return e->live && e->slot == slot ? e : NULL;
}

/* Bit d: device d's next victim (as hbl_make_room takes it) would go to d + 1, the slowest device,
 * which still holds its data: its eviction is free (sim_move.c's clean eviction). */
static uint8_t clean_victims(struct hbl_sim *s)
{
    int d = hbl_slowest(s) - 1;
    if (d < 0) return 0;
    uint32_t v = s->ops->victim ? s->ops->victim(s->pstate, s, d) : s->lru_tail[d];
    return v != HBL_NONE && s->pt.home_copy[v] ? (uint8_t)(1u << d) : 0;
}

void hbl_evalq_push(struct hbl_evalq *q, struct hbl_sim *s, uint32_t slot, const uint8_t *state,
                    enum hbl_judged_kind kind, int mark, uint32_t horizon)
{
    if (q->n == q->cap) return;
    struct hbl_judged *old = entry_of(q, s, slot);
    if (old && !old->gone) {
        if (!q->end_next) return;
        old->gone = 1;   /* this decision places the page again: the old one's evaluation ends here */
    }
    uint32_t i = (q->head + q->n) % q->cap;
    struct hbl_judged *e = &q->e[i];
    memset(e, 0, sizeof(*e));
    e->slot = slot;
    e->from = kind == HBL_JUDGE_WRITE || s->pt.dev[slot] < 0 ? (int8_t)hbl_slowest(s) : s->pt.dev[slot];
    e->kind = (uint8_t)kind;
    /* "full" as the agents see it (the free-capacity feature's lowest bin): a page or two free
     * for a moment does not spare a move onto the device the eviction it will make soon */
    for (int d = 0; d < s->cfg.ndev; d++) {
        int64_t cap = s->cfg.dev[d].capacity_pages;
        if (cap >= 0 && hbl_free_pages(s, d) * 8 <= cap) e->full |= (uint8_t)(1u << d);
    }
    if (q->clean_credit) e->clean = clean_victims(s);
    e->measured_copy = q->measured_copy;
    e->born = s->nreq;
    e->live = 1;
    e->mark = (uint8_t)mark;
    e->skip = kind == HBL_JUDGE_READ;
    memcpy(e->s, state, q->nstate);
    e->horizon = horizon;
    e->due = e->queued_due = s->nreq + horizon;
    e->last_due = s->nreq + (uint64_t)HBL_EVAL_SPAN * horizon;
    set_tag(q, s, slot, (uint64_t)i + 1);
    q->n++;
}

/* Device time of one page of an n-page request on device d: the request's latency and
 * positioning shared over its pages, the transfer of the rest (as the device model charges). */
double hbl_page_time(const struct hbl_device_params *p, int write, int n, uint32_t page_size)
{
    double lat = write ? p->write_latency_ns : p->read_latency_ns;
    double bw = write ? p->write_bytes_per_ns : p->read_bytes_per_ns;
    return (lat + p->rotation_ns + p->seek_ns) / n + (double)(n - 1) / n * page_size / bw;
}

double hbl_copy_time(const struct hbl_sim *s, int from, int to)
{
    const struct hbl_device_params *dv = s->cfg.dev;
    uint32_t ps = s->cfg.page_size;
    return hbl_page_time(&dv[from], 0, 1, ps) + hbl_page_time(&dv[to], 1, 1, ps);
}

static double bg_page_time(const struct hbl_sim *s, int d, int write)
{
    double n = s->bg_done_pages[d];
    return n > 0 ? (s->st.background_busy_ns[d] + s->st.sync_busy_ns[d]) / n
                 : hbl_page_time(&s->cfg.dev[d], write, 1, s->cfg.page_size);
}

double hbl_measured_copy_time(const struct hbl_sim *s, int from, int to)
{
    return bg_page_time(s, from, 0) + bg_page_time(s, to, 1);
}

double hbl_reference_latency(const struct hbl_sim *s)
{
    const struct hbl_device_params *d = &s->cfg.dev[0];
    return d->read_latency_ns + s->cfg.page_size / d->read_bytes_per_ns;
}

double hbl_hindsight_unit(const struct hbl_sim *s)
{
    double u = hbl_page_time(&s->cfg.dev[hbl_slowest(s)], 0, 1, s->cfg.page_size)
             - hbl_page_time(&s->cfg.dev[0], 0, 1, s->cfg.page_size);
    return u > 0 ? u : hbl_reference_latency(s);
}

void hbl_evalq_observe(struct hbl_evalq *q, struct hbl_sim *s, const uint32_t *slots, int n, int write)
{
    if (!q->n) return;
    double t[4];
    for (int d = 0; d < s->cfg.ndev; d++) t[d] = hbl_page_time(&s->cfg.dev[d], write, n, s->cfg.page_size);
    for (int i = 0; i < n; i++) {
        struct hbl_judged *e = entry_of(q, s, slots[i]);
        if (!e || e->gone) continue;
        if (write && q->end_next && e->born != s->nreq) { e->gone = 1; continue; }   /* placed again */
        if (e->skip) { e->skip = 0; continue; }
        for (int d = 0; d < s->cfg.ndev; d++) e->cost[d] += t[d];
        e->accesses++;
        uint64_t due = s->nreq + e->horizon;   /* an access keeps a page on an LRU device longer */
        e->due = due < e->last_due ? due : e->last_due;
    }
}

const struct hbl_judged *hbl_evalq_pop_due(struct hbl_evalq *q, struct hbl_sim *s)
{
    struct hbl_judged *e;
    /* an entry whose horizon grew since it was queued goes to the back, at most a queue's worth a call */
    for (uint32_t turns = q->n; ; turns--) {
        if (!q->n) return NULL;
        e = &q->e[q->head];
        if (e->due <= s->nreq || e->gone) break;
        if (e->due == e->queued_due || !turns) return NULL;
        uint32_t tail = (q->head + q->n) % q->cap;
        if (tail == q->head) {   /* a full ring: the head is the tail once it moves past */
            e->queued_due = e->due;
            q->head = (q->head + 1) % q->cap;
            continue;
        }
        q->e[tail] = *e;
        q->e[tail].queued_due = e->due;
        if (tag(q, s, e->slot) == (uint64_t)q->head + 1) set_tag(q, s, e->slot, (uint64_t)tail + 1);
        e->live = 0;
        q->head = (q->head + 1) % q->cap;
    }
    e->live = 0;
    if (tag(q, s, e->slot) == (uint64_t)q->head + 1) set_tag(q, s, e->slot, 0);
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return e;
}

void hbl_evalq_left(struct hbl_evalq *q, struct hbl_sim *s, uint32_t slot, enum hbl_judged_kind kind, int back)
{
    struct hbl_judged *e = entry_of(q, s, slot);
    if (e && e->kind == kind) e->gone = (uint8_t)!back;
}

double hbl_background_share(const struct hbl_sim *s)
{
    double bg = 0;
    for (int d = 0; d < s->cfg.ndev; d++) bg += s->st.background_busy_ns[d];
    double r = bg > 0 ? (s->st.foreground_wait_ns + s->st.sync_wait_ns) / bg : 0;
    return r < 1 ? r : 1;
}

double hbl_evalq_benefit(const struct hbl_sim *s, const struct hbl_judged *e, int to, const double *space,
                         double bg)
{
    int from = e->from;
    if (to == from) return 0;
    const struct hbl_device_params *dv = s->cfg.dev;
    double b = e->cost[from] - e->cost[to];
    /* copies are background I/O of single pages at scattered addresses, charged for the
     * foreground time they take */
    uint32_t ps = s->cfg.page_size;
    double (*copy)(const struct hbl_sim *, int, int) = e->measured_copy ? hbl_measured_copy_time : hbl_copy_time;
    if (e->kind == HBL_JUDGE_MOVE) b -= bg * copy(s, from, to);
    else if (e->kind == HBL_JUDGE_READ)
        b -= bg * (e->measured_copy ? bg_page_time(s, to, 1) : hbl_page_time(&dv[to], 1, 1, ps));
    if (e->full & (1u << to) && to < hbl_slowest(s)) {   /* a page pushed off `to`, copied one device down */
        if (!(e->clean & (1u << to))) b -= bg * copy(s, to, to + 1);
        if (space) b -= space[to];
    }
    if (e->full & (1u << from) && e->kind != HBL_JUDGE_WRITE && space) b += space[from];
    return b;
}

uint32_t hbl_characteristic_time(const struct hbl_sim *s)
{
    uint32_t tail = s->lru_tail[0];
    uint64_t age = tail == HBL_NONE || s->pt.last[tail] == HBL_NEVER ? HBL_MAX_HORIZON : s->nreq - s->pt.last[tail];
    uint32_t lo = s->cfg.migrate_every ? s->cfg.migrate_every : 1;
    return age < lo ? lo : age > HBL_MAX_HORIZON ? HBL_MAX_HORIZON : (uint32_t)age;
}
