/* Read admission beside harmonia's agents (admit.h).
 *
 * Rule 3 after LeCaR (Vietri et al., HotStorage'18), with its defaults: two experts with weights
 * summing to 1, starting equal; each read that misses the fastest device follows "promote" with
 * probability w_promote, else "stay".  A decision is regrettable when the page it hurt is accessed
 * again (read or written: LeCaR's miss) while it is still below the fastest device: a page a read
 * left there (stay's regret) or a page a promotion evicted from the fastest device (promote's
 * regret; the victims are that device's least recently used pages, as the simulator's fallback
 * takes them).  Each history holds
 * as many entries as the fastest device has pages (LeCaR's history of the cache's size); a regret
 * found t requests after its decision multiplies the guilty expert's weight by
 * exp(-lambda d^t), lambda = 0.45, d = 0.005^(1/N) for a fastest device of N pages (LeCaR's
 * learning and discount rates), then the weights are normalised.  No constant of ours.
 *
 * Rule 4 is rule 3 with regrets in device time, in the unit and with the copy charge of the agents'
 * hindsight credit (hindsight.c): a promotion is regretted at once by its copy and the copy down of
 * the page it evicts, each a background copy's device time times the share of background time
 * that delayed requests, over the unit (a page read on the slowest device less one on the
 * fastest); a stay or an eviction is regretted by the next read of the page it left below (its
 * device's read time less the fastest's, over the unit).  Writes regret neither: the placement
 * agent places a write wherever its page was.
 *
 * Rules 5 and 6 judge in hindsight instead, with the agents' evaluation queue (hindsight.c): every
 * read miss is queued, promoted or not (in closed-loop replay a page's accesses do not depend on
 * where it is), and credited after its horizon with the device time promoting it saved against
 * leaving it, the copy and, on a full fastest device, the value of the page pushed off included
 * (learnt from that device's least recently used pages, queued at each such miss).  A read miss
 * is promoted while the mean credit of its context is above 0: log2 of the page's access count
 * (5) or of the requests since its last access (6).  Running means over at most 256 credits.
 *
 * Rules 7-9 push off only what read admission brought (admit_list.c): 7 promotes every read
 * miss there is room for; 8 is 6 with 7's room, the value of the page pushed off learnt from the
 * least recently used pages read admission brought; 9 decides as 8 (only what the agents see
 * differs: admit_list.c). */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include "admit.h"
#include "hindsight.h"
#include "nn.h"

#define TAG_HIST (1ull << 63)

int hbl_admit_init(struct hbl_admit *a, struct hbl_sim *s, int rule, char *err, int errlen)
{
    memset(a, 0, sizeof(*a));
    hbl_admit_list_init(a);
    if (rule < 0 || rule > 9) {
        snprintf(err, errlen, "read_admit must be a whole number from 0 to 9");
        return -1;
    }
    a->rule = rule;
    if (rule < 3 || rule == 7) return 0;
    /* the unit of rules 4-6's device times: a page read on the slowest device less one on the fastest */
    a->unit = hbl_hindsight_unit(s);
    if (rule >= 5) {   /* a read miss and a page it pushes off, each judged over up to HBL_EVAL_SPAN horizons */
        if (hbl_evalq_init(&a->q, 2 * HBL_MAX_HORIZON, 1, 1)) goto oom;
        return 0;
    }
    int64_t cap = s->cfg.dev[0].capacity_pages;
    uint32_t n = cap < 16 ? 16 : cap > (1 << 24) ? (1 << 24) : (uint32_t)cap;
    a->w_promote = 0.5;
    a->lambda = 0.45;
    a->discount = pow(0.005, 1.0 / n);
    a->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)s->cfg.seed;
    for (int h = 0; h < 2; h++) {
        a->hist[h].slot = malloc(n * sizeof(uint32_t));
        a->hist[h].at = malloc(n * sizeof(uint64_t));
        if (!a->hist[h].slot || !a->hist[h].at) goto oom;
        for (uint32_t i = 0; i < n; i++) a->hist[h].slot[i] = HBL_NONE;
        a->hist[h].n = n;
    }
    return 0;
oom:
    hbl_admit_free(a);
    snprintf(err, errlen, "out of memory");
    return -1;
}

void hbl_admit_free(struct hbl_admit *a)
{
    for (int h = 0; h < 2; h++) {
        free(a->hist[h].slot);
        free(a->hist[h].at);
    }
    free(a->tag);
    hbl_evalq_free(&a->q);
    hbl_admit_list_free(a);
    memset(a, 0, sizeof(*a));
}

static int tag_room(struct hbl_admit *a, uint32_t x)
{
    if (x < a->ntag) return 0;
    uint32_t n = a->ntag ? a->ntag : 1024;
    while (n <= x) n *= 2;
    uint64_t *t = realloc(a->tag, (size_t)n * sizeof(*t));
    if (!t) return -1;
    memset(t + a->ntag, 0, (size_t)(n - a->ntag) * sizeof(*t));
    a->tag = t;
    a->ntag = n;
    return 0;
}

/* Page x enters history h at request now (the entry it pushes out forgotten). */
static void remember(struct hbl_admit *a, int h, uint32_t x, uint64_t now)
{
    if (tag_room(a, x)) return;       /* out of memory: this decision goes unjudged */
    uint32_t i = a->hist[h].head;
    uint32_t old = a->hist[h].slot[i];
    if (old != HBL_NONE && a->tag[old] == ((a->hist[h].at[i] + 1) | (h ? TAG_HIST : 0))) a->tag[old] = 0;
    a->hist[h].slot[i] = x;
    a->hist[h].at[i] = now;
    a->hist[h].head = (i + 1) % a->hist[h].n;
    a->tag[x] = (now + 1) | (h ? TAG_HIST : 0);
}

/* Expert h (0 stay, 1 promote) regretted by r, found t requests after its decision. */
static void regret(struct hbl_admit *a, int h, double r, uint64_t t)
{
    double w[2] = {1.0 - a->w_promote, a->w_promote};
    w[h] *= exp(-a->lambda * r * pow(a->discount, (double)t));
    a->w_promote = w[1] / (w[0] + w[1]);
    a->regrets[h]++;
}

/* Rule 4: device time a read of page x saves on the fastest device, where it is now, over the unit. */
static double read_gap(const struct hbl_admit *a, const struct hbl_sim *s, uint32_t x)
{
    const struct hbl_device_params *dv = s->cfg.dev;
    return (hbl_page_time(&dv[s->pt.dev[x]], 0, 1, s->cfg.page_size) - hbl_page_time(&dv[0], 0, 1, s->cfg.page_size))
           / a->unit;
}

/* Rule 4: a background copy of one page from device `from` to `to`, over the unit. */
static double copy_cost(const struct hbl_admit *a, const struct hbl_sim *s, int from, int to)
{
    return hbl_background_share(s) * hbl_copy_time(s, from, to) / a->unit;
}

/* floor(log2 t) for t >= 1, at most 32 (0 for t 0 or 1). */
static int log2_bin(uint64_t t)
{
    int b = 0;
    while (t > 1 && b < 32) { t >>= 1; b++; }
    return b;
}

/* Rule 6's context: log2 of the requests since the page's last access; a first access bin 33. */
static int interval_bin(const struct hbl_sim *s, uint32_t x)
{
    uint64_t last = s->pt.last[x];
    if (last == HBL_NEVER || last > s->nreq) return 33;
    return log2_bin(s->nreq - last);
}

/* Rules 5, 6, 8 and 9: the decisions whose horizon has passed, credited (running means over at most 256). */
static void judge(struct hbl_admit *a, struct hbl_sim *s)
{
    const struct hbl_judged *e;
    double bg = hbl_background_share(s);
    while ((e = hbl_evalq_pop_due(&a->q, s))) {
        if (e->mark) {   /* a page of the full fastest device: what staying there saved */
            double k = ++a->space[1];
            a->space[0] += (e->cost[1] - e->cost[0] - a->space[0]) / (k < 256 ? k : 256);
            continue;
        }
        double space[4] = {a->space[0], 0, 0, 0};
        int b = e->s[0];
        double k = ++a->credited[b];
        a->credit[b] += (hbl_evalq_benefit(s, e, 0, space, bg) / a->unit - a->credit[b]) / (k < 256 ? k : 256);
    }
}

void hbl_admit_resident(struct hbl_admit *a, struct hbl_sim *s, uint32_t slot, int from, int to, int undone)
{
    if (!a->resident || !hbl_admit_judges(a)) return;
    if (from == 0 && to != 0 && !undone) hbl_evalq_left(&a->q, s, slot, HBL_JUDGE_READ, 0);
    else if (from != 0 && to == 0 && undone) hbl_evalq_left(&a->q, s, slot, HBL_JUDGE_READ, 1);
}

void hbl_admit_served(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int write)
{
    if (hbl_admit_judges(a)) hbl_evalq_observe(&a->q, s, slots, n, write);
    if (a->rule >= 7) hbl_admit_list_served(a, slots, n);
}

void hbl_admit_observe(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int write)
{
    if (a->rule >= 7) hbl_admit_list_touch(a, slots, n, write);
    if (hbl_admit_judges(a)) { judge(a, s); return; }
    if (a->rule < 3) return;
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (x >= a->ntag || !a->tag[x]) continue;
        uint64_t t = a->tag[x];
        a->tag[x] = 0;
        if (s->pt.dev[x] <= 0) continue;   /* on the fastest device (or never placed) by now: no regret */
        if (a->rule == 4 && write) continue;
        int h = (t & TAG_HIST) ? 1 : 0;
        uint64_t at = (t & ~TAG_HIST) - 1;
        regret(a, h, a->rule == 4 ? read_gap(a, s, x) : 1.0, s->nreq - at);
    }
}

/* Rules 5-9: each page below promoted while promoting pages of its access count (5) or access
 * interval (6, 8, 9) has paid (7: always) and, under rules 7-9, while there is room for it without
 * pushing off a page read admission did not bring.  Rules 5, 6, 8 and 9 queue every one to be
 * judged, and while the fastest device is full the page a promotion pushes off too: that device's
 * least recently used page (5, 6), the read list's (8, 9). */
static void admit_each(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int8_t *targets)
{
    const struct hbl_pagetable *pt = &s->pt;
    int judges = hbl_admit_judges(a), listed = a->rule >= 7;
    uint32_t horizon = judges ? hbl_characteristic_time(s) : 0;
    const uint32_t *up = listed ? a->links.prev : pt->prev;   /* toward the most recently used */
    uint32_t victim = listed ? a->reads.tail : s->lru_tail[0];
    int64_t room = listed ? hbl_admit_list_room(a, s, slots, n) : INT64_MAX;
    int full = judges && hbl_free_pages(s, 0) * 8 <= s->cfg.dev[0].capacity_pages;
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (targets[i] >= 0 || pt->dev[x] <= 0) continue;
        int pays = 1;
        if (judges) {
            uint8_t b = (uint8_t)(a->rule == 5 ? log2_bin(pt->count[x]) : interval_bin(s, x));
            hbl_evalq_push(&a->q, s, x, &b, HBL_JUDGE_READ, 0, horizon);
            if (full && victim != HBL_NONE) {
                uint8_t none = 0;
                hbl_evalq_push(&a->q, s, victim, &none, HBL_JUDGE_MOVE, 1, horizon);
                victim = up[victim];
            }
            pays = a->credit[b] > 0;
        }
        if (pays && room > 0 && (!listed || hbl_admit_list_promote(a, x))) {
            room--;
            targets[i] = 0;
            a->promoted++;
        } else a->stayed++;
    }
}

void hbl_admit_read(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int8_t *targets)
{
    const struct hbl_pagetable *pt = &s->pt;
    uint32_t victim = s->lru_tail[0];
    if (a->rule < 3) {   /* 1: every page; 2: while the device is full, none less accessed than its victim */
        int full = hbl_free_pages(s, 0) < n && victim != HBL_NONE;
        for (int i = 0; i < n; i++) {
            uint32_t x = slots[i];
            if (targets[i] >= 0 || pt->dev[x] <= 0) continue;
            if (a->rule == 2 && full && pt->count[x] < pt->count[victim]) continue;
            targets[i] = 0;
        }
        return;
    }
    int below = 0;
    for (int i = 0; i < n; i++) below += targets[i] < 0 && pt->dev[slots[i]] > 0;
    if (!below) return;
    if (a->rule >= 5) { admit_each(a, s, slots, n, targets); return; }
    int promote = hbl_uniform(&a->rng) < a->w_promote;
    int64_t room = hbl_free_pages(s, 0);
    double cost = 0;     /* rule 4: the copies this promotion makes */
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (targets[i] >= 0 || pt->dev[x] <= 0) continue;
        if (!promote) { remember(a, 0, x, s->nreq); continue; }
        if (a->rule == 4) cost += copy_cost(a, s, pt->dev[x], 0);
        if (room-- <= 0 && victim != HBL_NONE) {      /* the page this promotion evicts */
            remember(a, 1, victim, s->nreq);
            if (a->rule == 4 && s->cfg.ndev > 1) cost += copy_cost(a, s, 0, 1);
            victim = pt->prev[victim];
        }
        targets[i] = 0;
    }
    if (cost > 0) regret(a, 1, cost, 0);
    if (promote) a->promoted++; else a->stayed++;
}
