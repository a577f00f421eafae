/*
 * Diagnostics of migration decisions (hbl_api.h: hbl_sim_diag_*): decisions of a
 * replay flipped (a move migrate() asked for dropped, or one it did not ask for made),
 * and the hindsight credit (hindsight.c) of chosen decisions computed as the
 * migration agent's m_reward=2 computes it.  scripts/credit_check.py replays a
 * non-learning policy with and without one decision: the difference is the decision's
 * true value, set beside its credit.  Nothing here changes a replay that does not ask.
 */
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"
#include "hindsight.h"

struct hbl_diag_watch { uint64_t round, page; double scale; int write; };   /* write: a write's placement */
struct hbl_diag_flip { uint64_t round, page; int32_t to; int write; };
/* A judged decision's accesses until the next decision on its page (the policy's next chance to
 * move it): for a move, the rest of the first round in which the page is accessed again; for a
 * read's promotion, the page's next access (a read counted, a write not: it lands on the fastest
 * device either way). */
struct hbl_diag_next { uint64_t until; double cost[4]; uint32_t accesses; uint8_t closed, seen;
                       double qwait[4], qwait_next[4], sync_wait_at; struct hbl_diag_waits at;
                       double own[4], rewrite[4], reread[4]; uint32_t nrewrite, nreread, npages; uint8_t owned; };

struct hbl_diag {
    struct hbl_diag_flip *flip; uint64_t nflip, fcap, fcursor;     /* sorted by round once feeding starts */
    int started;                            /* fed: watches and flips sorted, no more of them */
    struct hbl_diag_watch *watch; uint64_t nwatch, wcap, cursor;   /* sorted by round once feeding starts */
    struct hbl_evalq q; int have_q;         /* an entry's state: the round it was decided at */
    struct hbl_diag_next *next; uint64_t nnext, ncap;   /* an entry's state bytes 10-13: its index here */
    struct hbl_diag_credit *out; uint64_t nout, ocap;
    struct hbl_diag_move *moves; uint64_t nmoves, mcap;
    struct hbl_diag_waits w; int draining;   /* the device model's waits, split */
    double *rdrain; uint64_t nrdrain, rdcap;  /* pages drained synchronously, per migrate_every requests */
    uint8_t measured_copy, end_next;        /* the queue's options (hbl_sim_diag_credit_opts) */
};

static struct hbl_diag *diag_of(struct hbl_sim *s)
{
    if (s->live || !s->ops || (s->ops->flags & HBL_POLICY_LEARNS)) return NULL;
    if (!s->diag) s->diag = calloc(1, sizeof(*s->diag));
    return s->diag;
}

void hbl_diag_free(struct hbl_diag *d)
{
    if (!d) return;
    if (d->have_q) hbl_evalq_free(&d->q);
    free(d->watch); free(d->flip); free(d->next); free(d->out); free(d->moves); free(d->rdrain);
    free(d);
}

static int grow(void **p, uint64_t *cap, uint64_t n, size_t size)
{
    if (n < *cap) return 0;
    uint64_t c = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q; *cap = c;
    return 0;
}

int32_t hbl_sim_diag_start(struct hbl_sim *s)
{
    return diag_of(s) ? 0 : -1;
}

static int32_t add_flip(struct hbl_sim *s, uint64_t round, uint64_t page, int32_t to, int write)
{
    struct hbl_diag *d = diag_of(s);
    if (!d || to >= s->cfg.ndev || (write && to < 0)) return -1;
    if (d->started) return -1;
    if (grow((void **)&d->flip, &d->fcap, d->nflip, sizeof(*d->flip))) return -1;
    d->flip[d->nflip++] = (struct hbl_diag_flip){round, page, to, write};
    return 0;
}

static int32_t add_watch(struct hbl_sim *s, uint64_t round, uint64_t page, double scale, int write)
{
    struct hbl_diag *d = diag_of(s);
    if (!d || d->started || !(scale > 0)) return -1;
    if (grow((void **)&d->watch, &d->wcap, d->nwatch, sizeof(*d->watch))) return -1;
    d->watch[d->nwatch++] = (struct hbl_diag_watch){round, page, scale, write};
    return 0;
}

int32_t hbl_sim_diag_flip(struct hbl_sim *s, uint64_t round, uint64_t page, int32_t to)
{ return add_flip(s, round, page, to, 0); }

int32_t hbl_sim_diag_judge(struct hbl_sim *s, uint64_t round, uint64_t page, double scale)
{ return add_watch(s, round, page, scale, 0); }

int32_t hbl_sim_diag_flip_write(struct hbl_sim *s, uint64_t round, uint64_t page, int32_t to)
{ return add_flip(s, round, page, to, 1); }

int32_t hbl_sim_diag_judge_write(struct hbl_sim *s, uint64_t round, uint64_t page, double scale)
{ return add_watch(s, round, page, scale, 1); }

int32_t hbl_sim_diag_credit_opts(struct hbl_sim *s, int32_t measured_copy, int32_t end_next)
{
    struct hbl_diag *d = diag_of(s);
    if (!d || d->started) return -1;
    d->measured_copy = (uint8_t)(measured_copy != 0);
    d->end_next = (uint8_t)(end_next != 0);
    return 0;
}

static struct hbl_diag_next *next_of(struct hbl_diag *d, const struct hbl_judged *e)
{
    uint32_t k;
    memcpy(&k, e->s + sizeof(uint64_t) + 2, sizeof(k));
    return &d->next[k];
}

/* An entry's state: the request count it was decided at, its kind, whether the fastest device's
 * least recently used page was clean then (its eviction a remap, no copy). */
static void fill(struct hbl_diag_credit *c, const struct hbl_sim *s, const struct hbl_judged *e, int ended)
{
    uint64_t round;
    memcpy(&round, e->s, sizeof(round));
    double bg = hbl_background_share(s);
    *c = (struct hbl_diag_credit){round, s->pt.page[e->slot], e->from, e->kind, e->full, e->mark,
                                  e->s[sizeof(uint64_t) + 1], e->horizon, e->accesses,
                                  s->nreq, ended, {0}, bg, {0}, {0}, {0}, {0}, 0, {0}};
    const struct hbl_diag_next *x = next_of(s->diag, e);
    struct hbl_judged dirty = *e;   /* the credit without credit_clean: every page pushed off copied down */
    dirty.clean = 0;
    for (int t = 0; t < s->cfg.ndev; t++) {
        c->cost[t] = e->cost[t];
        c->benefit[t] = hbl_evalq_benefit(s, &dirty, t, NULL, bg);
        c->benefit_clean[t] = hbl_evalq_benefit(s, e, t, NULL, bg);
        if (t != e->from)
            c->copy[t] = e->kind == HBL_JUDGE_READ ? hbl_page_time(&s->cfg.dev[t], 1, 1, s->cfg.page_size)
                                                   : hbl_copy_time(s, e->from, t);
        c->chain[t] = t < hbl_slowest(s) ? hbl_copy_time(s, t, t + 1) : 0;
        c->chain_measured[t] = t < hbl_slowest(s) ? hbl_measured_copy_time(s, t, t + 1) : 0;
        c->cost_next[t] = x->cost[t];
        c->qwait[t] = x->qwait[t];
        c->qwait_next[t] = x->qwait_next[t];
        c->own[t] = x->own[t];
        c->rewrite[t] = x->rewrite[t];
        c->reread[t] = x->reread[t];
    }
    c->nrewrite = x->nrewrite; c->nreread = x->nreread; c->npages = x->npages; c->clean = e->clean;
    c->accesses_next = x->accesses;
    c->sync_wait_at = x->sync_wait_at;
    c->waits_at = x->at;
}

static int by_round(const void *a, const void *b)
{
    uint64_t x = ((const struct hbl_diag_watch *)a)->round, y = ((const struct hbl_diag_watch *)b)->round;
    return (x > y) - (x < y);
}

static int flip_by_round(const void *a, const void *b)
{
    uint64_t x = ((const struct hbl_diag_flip *)a)->round, y = ((const struct hbl_diag_flip *)b)->round;
    return (x > y) - (x < y);
}

/* Feeding starts: watches and flips in the order of their request counts, the queue made. */
static void start(struct hbl_diag *d)
{
    d->started = 1;
    qsort(d->watch, d->nwatch, sizeof(*d->watch), by_round);
    qsort(d->flip, d->nflip, sizeof(*d->flip), flip_by_round);
    if (d->nwatch && !hbl_evalq_init(&d->q, (uint32_t)d->nwatch, sizeof(uint64_t) + 2 + sizeof(uint32_t), 0))
        d->have_q = 1;
    d->q.clean_credit = 1;   /* benefit_clean; benefit is the credit as the agents' queues have it by default */
    d->q.measured_copy = d->measured_copy;
    d->q.end_next = d->end_next;
}

/* The flips of this request count: [*first, return value). */
static uint64_t flips_now(struct hbl_diag *d, const struct hbl_sim *s, uint64_t *first)
{
    if (!d->started) start(d);
    while (d->fcursor < d->nflip && d->flip[d->fcursor].round < s->nreq) d->fcursor++;
    uint64_t end = *first = d->fcursor;
    while (end < d->nflip && d->flip[end].round == s->nreq) end++;
    return end;
}

/* The watches of this request count: [*first, return value). */
static uint64_t watched(struct hbl_diag *d, const struct hbl_sim *s, uint64_t *first)
{
    if (!d->started) start(d);
    if (!d->have_q) return *first = 0;
    while (d->cursor < d->nwatch && d->watch[d->cursor].round < s->nreq) d->cursor++;
    uint64_t end = *first = d->cursor;
    while (end < d->nwatch && d->watch[end].round == s->nreq) end++;
    return end;
}

static void judge(struct hbl_diag *d, struct hbl_sim *s, uint32_t x, double scale, enum hbl_judged_kind kind,
                  int cold)
{
    uint8_t st[sizeof(uint64_t) + 2 + sizeof(uint32_t)];
    uint32_t k = (uint32_t)d->nnext;
    if (grow((void **)&d->next, &d->ncap, d->nnext, sizeof(*d->next))) return;
    memset(&d->next[k], 0, sizeof(d->next[k]));
    d->next[k].at = d->w;
    d->next[k].sync_wait_at = s->st.sync_wait_ns;
    memcpy(st + sizeof(uint64_t) + 2, &k, sizeof(k));
    memcpy(st, &s->nreq, sizeof(uint64_t));
    st[sizeof(uint64_t)] = (uint8_t)kind;
    uint32_t v = s->lru_tail[0];   /* the page a move onto the full fastest device pushes off */
    st[sizeof(uint64_t) + 1] = v != HBL_NONE && hbl_slowest(s) == 1 && s->pt.home_copy[v];
    uint32_t h = (uint32_t)(scale * hbl_characteristic_time(s) + 0.5);
    uint32_t before = d->q.n;
    hbl_evalq_push(&d->q, s, x, st, kind, cold, h ? h : 1);
    if (d->q.n > before) d->nnext++;
}

void hbl_diag_moved(struct hbl_sim *s, uint32_t x, int from, int to)
{
    struct hbl_diag *d = s->diag;
    if (grow((void **)&d->moves, &d->mcap, d->nmoves, sizeof(*d->moves))) return;
    d->moves[d->nmoves++] = (struct hbl_diag_move){s->nreq, s->pt.page[x], from, to};
}

/* A watch of the fastest device's k-th least recently used page: its slot, or HBL_NONE. */
static uint32_t cold(const struct hbl_sim *s, uint64_t page)
{
    uint64_t k = HBL_DIAG_COLD - page;
    if (k >= 64) return HBL_NONE;
    uint32_t x = s->lru_tail[0];
    while (k-- && x != HBL_NONE) x = s->pt.prev[x];
    return x == HBL_NONE ? s->pt.n : x;   /* past the list's end: no page, but a cold watch */
}

int hbl_diag_round(struct hbl_sim *s, int m)
{
    struct hbl_diag *d = s->diag;
    uint64_t i, end = watched(d, s, &i);
    for (; i < end; i++) {   /* queued as the migration agent queues its candidates: before the moves */
        if (d->watch[i].write) continue;
        uint32_t x = cold(s, d->watch[i].page);
        int c = x != HBL_NONE;
        if (!c) x = hbl_pt_find(&s->pt, d->watch[i].page);
        if (x < s->pt.n && s->pt.dev[x] >= 0) judge(d, s, x, d->watch[i].scale, HBL_JUDGE_MOVE, c);
    }
    uint64_t f, fend = flips_now(d, s, &f);
    for (int forced = 0; f < fend; f++) {
        if (d->flip[f].write) continue;
        uint32_t x = hbl_pt_find(&s->pt, d->flip[f].page);
        int k = 0, asked = 0, to = d->flip[f].to;
        for (int j = 0; j < m; j++) {
            if (s->mslots[j] == x) { asked = 1; if (to < 0) continue; }
            s->mslots[k] = s->mslots[j]; s->mtargets[k] = s->mtargets[j]; k++;
        }
        m = k;
        if (x != HBL_NONE && to >= 0 && !asked && !forced) {   /* mslots holds migrate_max + 1: one a round */
            s->mslots[m] = x; s->mtargets[m] = (int8_t)to; m++;
            forced = 1;
        }
    }
    return m;
}

void hbl_diag_ask(struct hbl_sim *s, int n, int write)
{
    struct hbl_diag *d = s->diag;
    uint64_t first, end = watched(d, s, &first), f, fend = flips_now(d, s, &f);
    for (uint64_t w = first; w < end && !s->ops->migrate; w++) {   /* cold pages, as admit.c judges victims */
        if (d->watch[w].write) continue;
        uint32_t x = cold(s, d->watch[w].page);
        if (x < s->pt.n) judge(d, s, x, d->watch[w].scale, HBL_JUDGE_MOVE, 1);
    }
    for (int i = 0; i < n; i++) {
        uint32_t x = s->slots[i];
        int t = s->targets[i];
        if (t < 0 || t >= s->cfg.ndev || t == s->pt.dev[x]) continue;
        uint64_t page = s->pt.page[x];
        if (!write)   /* a read's promotion, judged as the read admission judges it (admit.c) */
            for (uint64_t w = first; w < end; w++)
                if (d->watch[w].page == page && !d->watch[w].write) judge(d, s, x, d->watch[w].scale, HBL_JUDGE_READ, 0);
        for (uint64_t g = f; g < fend; g++)
            if (d->flip[g].page == page && d->flip[g].to < 0 && !d->flip[g].write) s->targets[i] = -1;
    }
}

void hbl_diag_place(struct hbl_sim *s, int n, int write)
{
    if (!write || n < 1) return;   /* (hbl_diag_ask moves the cursors on every request) */
    struct hbl_diag *d = s->diag;
    uint64_t first, end = watched(d, s, &first), f, fend = flips_now(d, s, &f);
    uint64_t page = s->pt.page[s->slots[0]];
    for (uint64_t w = first; w < end; w++)   /* as rl.c queues a write: its first page, before it lands */
        if (d->watch[w].write && d->watch[w].page == page) {
            uint64_t before = d->nnext;
            judge(d, s, s->slots[0], d->watch[w].scale, HBL_JUDGE_WRITE, 0);
            if (d->nnext > before) d->next[before].npages = (uint32_t)n;
        }
    for (uint64_t g = f; g < fend; g++)
        if (d->flip[g].write && d->flip[g].page == page)
            for (int i = 0; i < n; i++) s->targets[i] = (int8_t)d->flip[g].to;
}

/* A judged write's access: the write itself, a later write or a later read of its page. */
static void split_write(struct hbl_diag_next *x, const struct hbl_sim *s, int n, int write)
{
    double *into = !x->owned ? x->own : write ? x->rewrite : x->reread;
    if (x->owned) { if (write) x->nrewrite++; else x->nreread++; }
    x->owned = 1;
    for (int dv = 0; dv < s->cfg.ndev; dv++) into[dv] += hbl_page_time(&s->cfg.dev[dv], write, n, s->cfg.page_size);
}

/* Device d's mean background wait per foreground I/O so far (results/diagnosis/waits.txt). */
static double qwait(const struct hbl_diag *d, int dv)
{
    double n = d->w.fg_ios[dv][0] + d->w.fg_ios[dv][1];
    return n > 0 ? (d->w.wait_bg[dv][0] + d->w.wait_bg[dv][1]) / n : 0;
}

/* The judged pages of a request, before hbl_evalq_observe: their accesses until the next decision. */
static void until_next(struct hbl_diag *d, const struct hbl_sim *s, const uint32_t *slots, int n, int write)
{
    uint32_t every = s->cfg.migrate_every ? s->cfg.migrate_every : 1;
    for (int i = 0; i < n; i++) {
        uint32_t t = s->pt.decision[slots[i]];
        if (!t || t > d->q.cap) continue;
        const struct hbl_judged *e = &d->q.e[t - 1];
        if (!e->live || e->slot != slots[i] || e->skip) continue;
        struct hbl_diag_next *x = next_of(d, e);
        if (!e->gone && e->kind == HBL_JUDGE_WRITE) split_write(x, s, n, write);
        if (!e->gone)   /* as hbl_evalq_observe counts the access in cost[] */
            for (int dv = 0; dv < s->cfg.ndev; dv++) x->qwait[dv] += qwait(d, dv) / n;   /* an I/O's wait shared over its pages */
        if (x->closed) continue;
        if (e->kind == HBL_JUDGE_READ) x->closed = 1;
        else if (!x->seen) x->until = (s->nreq / every + 1) * every;   /* the round it is a candidate again */
        else if (s->nreq >= x->until) { x->closed = 1; continue; }
        x->seen = 1;
        if (e->kind == HBL_JUDGE_READ && write) continue;
        for (int dv = 0; dv < s->cfg.ndev; dv++) {
            x->cost[dv] += hbl_page_time(&s->cfg.dev[dv], write, n, s->cfg.page_size);
            x->qwait_next[dv] += qwait(d, dv) / n;
        }
        x->accesses++;
    }
}

void hbl_diag_served(struct hbl_sim *s, const uint32_t *slots, int n, int write)
{
    struct hbl_diag *d = s->diag;
    if (!d->have_q) return;
    const struct hbl_judged *e;
    while ((e = hbl_evalq_pop_due(&d->q, s)))
        if (!grow((void **)&d->out, &d->ocap, d->nout, sizeof(*d->out))) fill(&d->out[d->nout++], s, e, 0);
    until_next(d, s, slots, n, write);
    hbl_evalq_observe(&d->q, s, slots, n, write);
}

uint64_t hbl_sim_diag_credits(const struct hbl_sim *s, struct hbl_diag_credit *out, uint64_t max)
{
    struct hbl_diag *d = s->diag;
    if (!d) return 0;
    uint64_t n = d->nout, k = 0;
    for (uint64_t i = 0; i < n && i < max; i++) out[k++] = d->out[i];
    if (!d->have_q) return n;
    for (uint32_t i = 0; i < d->q.n; i++) {   /* still in their horizon: credited with what they had */
        uint32_t j = (d->q.head + i) % d->q.cap;
        const struct hbl_judged *e = &d->q.e[j];
        if (!e->live) continue;
        if (k < max) fill(&out[k++], s, e, 1);
        n++;
    }
    return n;
}

uint64_t hbl_sim_diag_moves(const struct hbl_sim *s, struct hbl_diag_move *out, uint64_t max)
{
    struct hbl_diag *d = s->diag;
    if (!d) return 0;
    for (uint64_t i = 0; i < d->nmoves && i < max; i++) out[i] = d->moves[i];
    return d->nmoves;
}

void hbl_diag_io(struct hbl_sim *s, int d, int write, int bg, double wait)
{
    struct hbl_diag *g = s->diag;
    g->w.fg_ios[d][write != 0]++;
    if (bg) g->w.wait_bg[d][bg - 1] += wait; else g->w.wait_fg[d] += wait;
    if (bg && g->draining) g->w.drain_wait_bg[d] += wait;
    g->draining = 0;
}

void hbl_diag_bg(struct hbl_sim *s, int d, int write, uint32_t npages)
{
    s->diag->w.bg_ios[d][write != 0]++;
    s->diag->w.bg_pages[d][write != 0] += npages;
}

void hbl_diag_drain(struct hbl_sim *s, int d, int write, uint32_t npages)
{
    struct hbl_diag *g = s->diag;
    g->w.drain_ios[d][write != 0]++;
    g->w.drain_pages[d][write != 0] += npages;
    g->draining = 1;
    uint64_t r = s->nreq / (s->cfg.migrate_every ? s->cfg.migrate_every : 1000);
    while (g->nrdrain <= r) {
        if (grow((void **)&g->rdrain, &g->rdcap, g->nrdrain, sizeof(*g->rdrain))) return;
        g->rdrain[g->nrdrain++] = 0;
    }
    g->rdrain[r] += npages;
}

uint64_t hbl_sim_diag_drains(const struct hbl_sim *s, double *out, uint64_t max)
{
    if (!s->diag) return 0;
    for (uint64_t i = 0; i < s->diag->nrdrain && i < max; i++) out[i] = s->diag->rdrain[i];
    return s->diag->nrdrain;
}

int32_t hbl_sim_diag_waits(const struct hbl_sim *s, struct hbl_diag_waits *out)
{
    if (!s->diag) return -1;
    *out = s->diag->w;
    return 0;
}
