/*
 * Features, the placement agent and the migration agent, shared by the
 * learning policies (policies/sibyl.c, policies/harmonia.c).  Their
 * hyper-parameters, with defaults and sources, are the tables in rl.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rl.h"

/* The settings' defaults, by S_<name>. */
#define SETTING_ID(name, dflt, live, whole, src, doc) S_##name,
enum { HBL_PLACEMENT_SETTINGS(SETTING_ID) HBL_MIGRATION_SETTINGS(SETTING_ID) HBL_FEATURE_SETTINGS(SETTING_ID) };
#define SETTING_ROW(name, dflt, live, whole, src, doc) {#name, dflt, live},
static const struct setting { const char *name; double dflt, live; } settings[] = {
    HBL_PLACEMENT_SETTINGS(SETTING_ROW) HBL_MIGRATION_SETTINGS(SETTING_ROW) HBL_FEATURE_SETTINGS(SETTING_ROW)};

static double setting(const struct hbl_params *p, int id, const struct hbl_sim *s)
{
    return hbl_param(p, settings[id].name, s->live ? settings[id].live : settings[id].dflt);
}

/* A setting whose default the policy may set itself (own: NULL for the table's). */
static double own_setting(const struct hbl_params *p, int id, const struct hbl_sim *s, const double *own)
{
    return own ? hbl_param(p, settings[id].name, *own) : setting(p, id, s);
}

/* ---- features ---- */

void hbl_features_init(struct hbl_features *f, const struct hbl_sim *s, const struct hbl_params *p)
{
    memset(f, 0, sizeof(*f));
    f->nbins[HBL_F_TYPE] = 2;
    f->nbins[HBL_F_SIZE] = 8;
    f->nbins[HBL_F_INTERVAL] = 64;
    f->nbins[HBL_F_COUNT] = 64;
    f->nbins[HBL_F_FREE] = 8;
    f->nbins[HBL_F_DEVICE] = (uint8_t)s->cfg.ndev;
    f->nbins[HBL_F_SINCE_MIG] = 64;
    f->nbins[HBL_F_QUEUE] = 4;
    f->nbins[HBL_F_REUSE] = 8;
    /* 63 log bins: 3 per octave reach 2^21 requests, 4 per octave 2^15.75 accesses */
    f->per_octave[HBL_F_INTERVAL] = setting(p, S_octave_interval, s);
    f->per_octave[HBL_F_COUNT] = setting(p, S_octave_count, s);
    f->per_octave[HBL_F_SINCE_MIG] = setting(p, S_octave_migration, s);
}

static inline uint8_t log_bin(double x, double per_octave, int nbins)
{
    double b = log2(1.0 + x) * per_octave;
    return (uint8_t)(b >= nbins - 1 ? nbins - 1 : b);
}

void hbl_features_encode(const struct hbl_features *f, const struct hbl_sim *s, int write,
                         uint32_t npages, uint32_t slot, uint8_t *out)
{
    const struct hbl_pagetable *pt = &s->pt;
    uint64_t now = s->nreq;
    out[HBL_F_TYPE] = (uint8_t)(write != 0);
    uint32_t lg = 0;
    while ((npages >> (lg + 1)) && lg < 7u) lg++;
    out[HBL_F_SIZE] = (uint8_t)lg;
    uint64_t last = pt->last[slot];
    out[HBL_F_INTERVAL] = last == HBL_NEVER ? f->nbins[HBL_F_INTERVAL] - 1
                        : log_bin((double)(now - last), f->per_octave[HBL_F_INTERVAL], f->nbins[HBL_F_INTERVAL]);
    out[HBL_F_COUNT] = log_bin((double)pt->count[slot], f->per_octave[HBL_F_COUNT], f->nbins[HBL_F_COUNT]);
    int64_t cap = s->cfg.dev[0].capacity_pages;
    int64_t used = s->used[0] - f->spare;
    out[HBL_F_FREE] = cap <= 0 ? 7 : (uint8_t)(8 * (cap - (used > 0 ? used : 0)) / (cap + 1));
    int d = pt->dev[slot];
    out[HBL_F_DEVICE] = (uint8_t)(d < 0 ? hbl_slowest(s) : d);
    uint64_t lm = pt->last_mig[slot];
    out[HBL_F_SINCE_MIG] = lm == HBL_NEVER ? f->nbins[HBL_F_SINCE_MIG] - 1
                         : log_bin((double)(now - lm), f->per_octave[HBL_F_SINCE_MIG], f->nbins[HBL_F_SINCE_MIG]);
    /* quarters of the background backlog queued on the fastest device or the next (an eviction
     * reads one and writes the other); the last bin is a full queue (or none allowed) */
    uint64_t q = s->bgpages[0] > s->bgpages[1] ? s->bgpages[0] : s->bgpages[1];
    uint32_t backlog = s->cfg.bg.backlog_pages;
    uint64_t qb = backlog ? 4 * q / backlog : 3;
    out[HBL_F_QUEUE] = (uint8_t)(qb > 3 ? 3 : qb);
    int rb = (int)(8 * f->reuse);
    out[HBL_F_REUSE] = (uint8_t)(rb < 0 ? 0 : rb > 7 ? 7 : rb);
}

void hbl_features_see(struct hbl_features *f, const struct hbl_sim *s, uint32_t slot)
{
    uint64_t last = s->pt.last[slot];
    int hit = last != HBL_NEVER && s->nreq - last <= hbl_characteristic_time(s);
    double every = s->cfg.migrate_every ? (double)s->cfg.migrate_every : 1.0;
    f->reuse += ((double)hit - f->reuse) / every;
}

static double prm(const struct hbl_params *p, const char *prefix, const char *key, double dflt)
{
    char name[64];
    snprintf(name, sizeof(name), "%s%s", prefix, key);
    return hbl_param(p, name, dflt);
}

void hbl_agent_config_init(struct hbl_agent_config *c, const struct hbl_features *f, int nfeatures,
                           int nactions, const struct hbl_params *p, const char *pre, int migration,
                           int live, uint64_t seed)
{
    memset(c, 0, sizeof(*c));
    c->nfeatures = nfeatures;
    memcpy(c->nbins, f->nbins, (size_t)nfeatures);
    c->nactions = nactions;
    c->nhidden = 2;
#define AGENT_PARAM(name, field, place, live_, mig, psrc, msrc, doc) \
    c->field = (__typeof__(c->field))prm(p, pre, #name, migration ? (mig) : live ? (live_) : (place));
    HBL_AGENT_PARAMS(AGENT_PARAM)
#undef AGENT_PARAM
    double is = prm(p, pre, "init_seed", 0);   /* a whole seed, or -1 for config_check to refuse */
    c->init_seed = is >= 0 && is < 2147483648.0 && is == (double)(int64_t)is ? (int32_t)is : -1;
    c->seed = seed;
}

/* ---- placement agent ---- */

int hbl_placement_agent_init(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_params *p,
                             int nfeatures, const struct hbl_placement_defaults *own, char *err, int errlen)
{
    memset(pa, 0, sizeof(*pa));
    hbl_features_init(&pa->feat, s, p);
    struct hbl_agent_config c;
    hbl_agent_config_init(&c, &pa->feat, nfeatures, s->cfg.ndev, p, "", 0, s->live, s->cfg.seed);
    if (own) {   /* read again with this policy's defaults (the last read is the one `hbl policies` lists) */
        c.hidden[0] = (int32_t)hbl_param(p, "hidden1", own->hidden1);
        c.hidden[1] = (int32_t)hbl_param(p, "hidden2", own->hidden2);
        c.atoms = (int32_t)hbl_param(p, "atoms", own->atoms);
    }
    pa->page_reward = (int)setting(p, S_reward, s);
    if (pa->page_reward < 0 || pa->page_reward > 2) {
        snprintf(err, errlen, "reward must be 0, 1 or 2 (`hbl policies` says what each rewards)");
        return -1;
    }
    if (pa->page_reward == 2) {
        /* hindsight rewards are each action's own, over a horizon: a contextual bandit, nothing
         * to bootstrap; they are differences, so they can be negative */
        c.gamma = (float)hbl_param(p, "gamma", 0.0);
        c.vmin = (float)hbl_param(p, "vmin", HBL_HINDSIGHT_VMIN);
        c.vmax = (float)hbl_param(p, "vmax", HBL_HINDSIGHT_VMAX);
    }
    pa->follow = setting(p, S_demo_follow, s) != 0;
    pa->demo = c.demo > 0 || pa->follow;
    if (pa->demo && pa->page_reward) {
        snprintf(err, errlen, "demo and demo_follow need reward=0 (the decision's own latency)");
        return -1;
    }
    pa->ag = hbl_agent_new(&c, err, errlen);
    if (!pa->ag) return -1;
    pa->nfeatures = nfeatures;
    pa->act_on_reads = (int)own_setting(p, S_place_reads, s, own ? &own->place_reads : NULL);
    pa->penalty = own_setting(p, S_penalty, s, own ? &own->penalty : NULL);
    pa->lref = hbl_reference_latency(s);
    pa->evict_ns = own_setting(p, S_device_time, s, own ? &own->device_time : NULL) && s->cfg.ndev > 1
                 ? s->cfg.dev[1].write_latency_ns : 0;
    pa->resolve = -1;
    if (pa->page_reward == 2) {
        double h = setting(p, S_horizon, s);
        if (h < 0 || h > HBL_MAX_HORIZON) { snprintf(err, errlen, "horizon must be 0..%d", HBL_MAX_HORIZON); return -1; }
        pa->horizon = (uint32_t)h;
        /* one decision a request at most; those beyond the queue's room are not credited */
        if (hbl_evalq_init(&pa->evalq, 2 * HBL_MAX_HORIZON, nfeatures, 0)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        pa->unit = hbl_hindsight_unit(s);
        return 0;
    }
    double w = setting(p, S_window, s);
    if (pa->page_reward) {
        if (w < 1 || w > (1 << 24)) { snprintf(err, errlen, "window must be 1..%d", 1 << 24); return -1; }
        pa->window = (uint32_t)w;
        pa->ring = calloc(pa->window, sizeof(*pa->ring));
        if (!pa->ring) { snprintf(err, errlen, "out of memory"); return -1; }
    }
    return 0;
}

void hbl_placement_agent_free(struct hbl_placement_agent *pa)
{
    hbl_agent_free(pa->ag);
    pa->ag = NULL;
    free(pa->ring);
    pa->ring = NULL;
    hbl_evalq_free(&pa->evalq);
}

/* Hindsight: every action of a decision whose horizon has passed, rewarded with the device
 * time it saved against the default, in units of one read moved from the slowest device to
 * the fastest, within the value head's support. */
static void credit(struct hbl_agent *ag, struct hbl_features *feat, struct hbl_evalq *q, struct hbl_sim *s,
                   double unit, const double *space, double *space_out)
{
    struct hbl_agent_config c;
    hbl_agent_get_config(ag, &c);
    const struct hbl_judged *e;
    double bg = hbl_background_share(s);
    while ((e = hbl_evalq_pop_due(q, s))) {
        int d = e->from;
        if (space_out && e->mark && d >= 0 && d < hbl_slowest(s)) {   /* a cold page of d: what staying saved */
            uint64_t k = (uint64_t)++space_out[4 + d];
            space_out[d] += (e->cost[d + 1] - e->cost[d] - space_out[d]) / (double)(k < 256 ? k : 256);
        }
        uint8_t next[HBL_NFEATURES];
        hbl_features_encode(feat, s, 0, 1, e->slot, next);
        for (int a = 0; a < s->cfg.ndev; a++) {
            double r = hbl_evalq_benefit(s, e, a, space, bg) / unit;
            r = r < c.vmin ? c.vmin : r > c.vmax ? c.vmax : r;
            hbl_agent_remember(ag, e->s, a, (float)r, next);
        }
    }
}

/* reward=1: a new decision takes the oldest ring entry; if that one is still
 * waiting, its page was not accessed within `window` decisions: reward 0
 * (rewards are floored at 0, so its eviction penalty cannot lower it) */
static uint32_t ring_push(struct hbl_placement_agent *pa, struct hbl_sim *s, uint32_t slot,
                          const uint8_t *state, int a)
{
    uint32_t i = pa->rhead;
    struct hbl_pdecision *e = &pa->ring[i];
    if (e->live) {
        uint8_t next[HBL_NFEATURES];
        hbl_features_encode(&pa->feat, s, 0, 1, e->slot, next);
        hbl_agent_remember(pa->ag, e->s, e->a, 0.0f, next);
        if (s->pt.decision[e->slot] == i + 1) s->pt.decision[e->slot] = 0;
    }
    e->slot = slot; memcpy(e->s, state, HBL_NFEATURES); e->a = (uint8_t)a; e->live = 1; e->pen = 0;
    s->pt.decision[slot] = i + 1;
    pa->rhead = (i + 1) % pa->window;
    return i;
}

void hbl_placement_agent_place(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_request *r,
                               const uint32_t *slots, int n, int8_t *targets)
{
    int write = r->op == HBL_OP_WRITE;
    uint8_t state[HBL_NFEATURES];
    if (pa->nfeatures > HBL_F_REUSE) hbl_features_see(&pa->feat, s, slots[0]);
    hbl_features_encode(&pa->feat, s, write, (uint32_t)n, slots[0], state);
    if (pa->page_reward == 2) {
        credit(pa->ag, &pa->feat, &pa->evalq, s, pa->unit, pa->space, NULL);
        if (!write && !pa->act_on_reads) return;
        int a = hbl_agent_act(pa->ag, state);
        hbl_agent_tick(pa->ag);
        hbl_evalq_push(&pa->evalq, s, slots[0], state, write ? HBL_JUDGE_WRITE : HBL_JUDGE_READ, 0,
                       pa->horizon ? pa->horizon : hbl_characteristic_time(s));
        for (int i = 0; i < n; i++) targets[i] = (int8_t)a;
        return;
    }
    if (pa->page_reward) {   /* this access answers the page's previous decision */
        uint32_t d = s->pt.decision[slots[0]];
        pa->resolve = d && pa->ring[d - 1].live && pa->ring[d - 1].slot == slots[0] ? (int64_t)d - 1 : -1;
        if (pa->resolve >= 0) memcpy(pa->next, state, sizeof(state));
    } else if (pa->pending) {   /* the previous decision's transition ends in this state */
        hbl_agent_remember_demo(pa->ag, pa->state, pa->action, pa->reward, state, pa->label);
        pa->pending = 0;
    }
    if (!write && !pa->act_on_reads) return;
    int a = hbl_agent_act(pa->ag, state);
    hbl_agent_tick(pa->ag);
    pa->label = !pa->demo ? HBL_NO_LABEL   /* a teacher's labels where the policy runs one, else the oracle's */
              : (uint8_t)(s->teacher ? hbl_teacher_place_label(s, slots, n) : hbl_demos_place_label(pa->demos, s, n));
    if (pa->follow && pa->label != HBL_NO_LABEL) a = pa->label;
    memcpy(pa->state, state, sizeof(state));
    pa->action = a;
    pa->pending = -1;   /* waiting for the latency */
    if (pa->page_reward) pa->decided = ring_push(pa, s, slots[0], state, a);
    pa->evictions_before = s->st.fallback_evictions;
    for (int i = 0; i < n; i++) targets[i] = (int8_t)a;
}

void hbl_placement_agent_observe(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_request *r,
                                 const uint32_t *slots, int n, double latency_ns)
{
    if (pa->page_reward == 2) { hbl_evalq_observe(&pa->evalq, s, slots, n, r->op == HBL_OP_WRITE); return; }
    /* the evictions this request's decision forced */
    double forced = (double)(s->st.fallback_evictions - pa->evictions_before);
    double pen = pa->penalty * forced;
    /* device time: the write-back of each forced eviction takes the next device's
     * time from other requests, so the decision is charged for it too */
    double cost = latency_ns + pa->evict_ns * forced;
    double speed = pa->lref / (cost > 1 ? cost : 1);
    if (pa->page_reward) {
        if (pa->resolve >= 0 && pa->ring[pa->resolve].live) {
            struct hbl_pdecision *e = &pa->ring[pa->resolve];
            double v = speed - e->pen;
            hbl_agent_remember(pa->ag, e->s, e->a, (float)(v > 0 ? v : 0), pa->next);
            e->live = 0;
        }
        pa->resolve = -1;
        if (pa->pending == -1) pa->ring[pa->decided].pen = (float)pen;
        pa->pending = 0;
        return;
    }
    if (pa->pending != -1) return;
    double v = speed - pen;
    pa->reward = (float)(v > 0 ? v : 0);
    pa->pending = 1;
}

/* ---- migration agent ---- */

int hbl_migration_agent_init(struct hbl_migration_agent *ma, struct hbl_sim *s, const struct hbl_params *p,
                             char *err, int errlen)
{
    memset(ma, 0, sizeof(*ma));
    hbl_features_init(&ma->feat, s, p);
    ma->candidates = (int)setting(p, S_m_candidates, s);
    ma->max_moves = (int)setting(p, S_m_moves, s);
    ma->reward_n = (int)setting(p, S_m_reward_n, s);
    ma->pingpong = setting(p, S_m_pingpong, s);
    ma->page_reward = (int)setting(p, S_m_reward, s);
    if (ma->page_reward < 0 || ma->page_reward > 2) {
        snprintf(err, errlen, "m_reward must be 0, 1 or 2 (`hbl policies` says what each rewards)");
        return -1;
    }
    ma->move_cost = setting(p, S_m_move_cost, s);
    if (ma->candidates < 2 || ma->candidates > HBL_MIG_MAX_CAND || ma->max_moves < 1 || ma->reward_n < 1) {
        snprintf(err, errlen, "m_candidates must be 2..%d, m_moves >= 1, m_reward_n >= 1", HBL_MIG_MAX_CAND);
        return -1;
    }
    struct hbl_agent_config c;
    hbl_agent_config_init(&c, &ma->feat, HBL_F_QUEUE, s->cfg.ndev, p, "m_", 1, s->live, s->cfg.seed + 1);
    ma->follow = setting(p, S_m_demo_follow, s) != 0;
    ma->fill = setting(p, S_m_fill, s) != 0;
    ma->demo = c.demo > 0 || ma->follow;
    if (ma->demo && ma->page_reward == 2) {
        snprintf(err, errlen, "m_demo and m_demo_follow need m_reward=0 or 1");
        return -1;
    }
    ma->ag = hbl_agent_new(&c, err, errlen);
    if (!ma->ag) return -1;
    ma->lref = hbl_reference_latency(s);
    if (ma->page_reward == 2) {
        double h = setting(p, S_m_horizon, s);
        if (h < 0 || h > HBL_MAX_HORIZON) {
            snprintf(err, errlen, "m_horizon must be 0..%d", HBL_MAX_HORIZON);
            return -1;
        }
        ma->horizon = (uint32_t)h;
        /* every round's candidates stay queued for the horizon and one round more */
        uint32_t rounds = HBL_EVAL_SPAN * (h ? (uint32_t)h : HBL_MAX_HORIZON) / (s->cfg.migrate_every ? s->cfg.migrate_every : 1) + 2;
        if (hbl_evalq_init(&ma->evalq, (uint32_t)ma->candidates * rounds, HBL_F_QUEUE, 1)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        ma->unit = hbl_hindsight_unit(s);
    }
    return 0;
}

void hbl_migration_agent_free(struct hbl_migration_agent *ma)
{
    hbl_agent_free(ma->ag);
    ma->ag = NULL;
    hbl_evalq_free(&ma->evalq);
}

static void migration_reward(struct hbl_migration_agent *ma, struct hbl_sim *s)
{
    if (ma->page_reward == 2) { credit(ma->ag, &ma->feat, &ma->evalq, s, ma->unit, ma->space, ma->space); return; }
    if (!ma->collecting || (!ma->page_reward && !ma->lat_n)) return;
    double round_r = ma->lat_n ? ma->lat_n * ma->lref / (ma->lat_sum > 1 ? ma->lat_sum : 1) : 0;
    for (int i = 0; i < ma->npend; i++) {
        uint8_t next[HBL_NFEATURES];
        double r = round_r;
        if (ma->page_reward) {
            r = ma->pend[i].hits ? ma->lref / (ma->pend[i].lat / ma->pend[i].hits) : 0.0;
            if (ma->pend[i].a != ma->pend[i].s[HBL_F_DEVICE]) r -= ma->move_cost;
        }
        hbl_features_encode(&ma->feat, s, 0, 1, ma->pend[i].slot, next);
        hbl_agent_remember_demo(ma->ag, ma->pend[i].s, ma->pend[i].a, (float)(r - ma->pend[i].penalty), next,
                                ma->pend[i].label);
    }
    ma->npend = 0;
    ma->collecting = 0;
}

void hbl_migration_agent_observe(struct hbl_migration_agent *ma, struct hbl_sim *s,
                                 const uint32_t *slots, int n, int write, double latency_ns)
{
    /* promotion candidates: pages just accessed that live below the fastest device */
    if (s->pt.dev[slots[0]] > 0) {
        ma->recent[ma->rhead] = slots[0];
        ma->rhead = (ma->rhead + 1) % 1024;
        if (ma->nrecent < 1024) ma->nrecent++;
    }
    if (ma->page_reward == 2) { hbl_evalq_observe(&ma->evalq, s, slots, n, write); return; }
    if (!ma->collecting) return;
    if (ma->page_reward) {   /* credit each decided page with its own accesses */
        for (int i = 0; i < n; i++) {
            uint64_t tag = s->pt.aux64[slots[i]];
            if (tag >> 16 != ma->round) continue;
            int k = (int)(tag & 0xffff);
            ma->pend[k].hits++;
            ma->pend[k].lat += latency_ns;
        }
        return;
    }
    ma->lat_sum += latency_ns;
    if (++ma->lat_n >= ma->reward_n) migration_reward(ma, s);
}

int hbl_migration_agent_migrate(struct hbl_migration_agent *ma, struct hbl_sim *s, uint32_t *slots,
                                 int8_t *targets, int max)
{
    migration_reward(ma, s);   /* a round that ended early still teaches */
    const struct hbl_pagetable *pt = &s->pt;
    uint32_t cand[HBL_MIG_MAX_CAND];
    int nc = 0, half = ma->candidates / 2;
    /* the hottest recently read pages below the fastest device: (count << 32 | slot), sorted */
    uint64_t keyed[1024];
    int nk = 0;
    for (int i = 0; i < ma->nrecent; i++) {
        uint32_t x = ma->recent[i];
        if (pt->dev[x] <= 0 || pt->aux32[x] == (uint32_t)(s->nreq & 0xffffffffu)) continue;
        ((struct hbl_pagetable *)pt)->aux32[x] = (uint32_t)(s->nreq & 0xffffffffu); /* dedupe this round */
        keyed[nk++] = ((uint64_t)(pt->count[x] > 0xffffffffu ? 0xffffffffu : pt->count[x]) << 32) | x;
    }
    qsort(keyed, (size_t)nk, sizeof(uint64_t), hbl_cmp_u64_desc);
    for (int i = 0; i < nk && nc < half; i++) cand[nc++] = (uint32_t)keyed[i];
    int nhot = nc;
    ma->nrecent = ma->rhead = 0;
    /* the coldest pages of the faster devices (least recently used first) */
    for (int d = 0; d < s->cfg.ndev - 1 && nc < ma->candidates; d++) {
        int share = (ma->candidates - nc) / (s->cfg.ndev - 1 - d);
        int taken = 0;
        for (uint32_t x = s->lru_tail[d]; x != HBL_NONE && taken < share && nc < ma->candidates; x = pt->prev[x]) {
            cand[nc++] = x;
            taken++;
        }
    }
    int m = 0, limit = max < ma->max_moves ? max : ma->max_moves;
    int64_t filled = 0;     /* m_fill: free pages of the fastest device promised this round */
    uint32_t horizon = ma->horizon ? ma->horizon : hbl_characteristic_time(s);
    ma->npend = 0;
    ma->round++;
    for (int i = 0; i < nc; i++) {
        uint32_t x = cand[i];
        uint8_t st[HBL_NFEATURES];
        hbl_features_encode(&ma->feat, s, 0, 1, x, st);
        int a = hbl_agent_act(ma->ag, st);
        hbl_agent_tick(ma->ag);
        int label = !ma->demo ? HBL_NO_LABEL
                  : s->teacher ? hbl_teacher_move_label(s, x) : hbl_demos_move_label(ma->demos, s, x);
        if (ma->follow && label != HBL_NO_LABEL) a = label;
        if (ma->fill) {   /* free space is free: fill it, do not empty it */
            if (i < nhot && hbl_free_pages(s, 0) > filled) { a = 0; filled++; }
            else if (i >= nhot && hbl_free_pages(s, pt->dev[x]) > 0) a = pt->dev[x];
        }
        if (ma->page_reward == 2) {   /* every candidate is judged, moved or not */
            hbl_evalq_push(&ma->evalq, s, x, st, HBL_JUDGE_MOVE, i >= nhot, horizon);
            if (a != pt->dev[x] && m < limit) { slots[m] = x; targets[m] = (int8_t)a; m++; }
            continue;
        }
        float pen = 0;
        if (a != pt->dev[x] && m < limit) {
            slots[m] = x; targets[m] = (int8_t)a; m++;
            uint64_t lm = pt->last_mig[x];
            if (lm != HBL_NEVER) pen = (float)(ma->pingpong / (1.0 + (double)(s->nreq - lm)));
        } else if (a != pt->dev[x]) {
            continue;   /* over the move budget: not carried out, not learned from */
        }
        memcpy(ma->pend[ma->npend].s, st, sizeof(st));
        ma->pend[ma->npend].a = (uint8_t)a;
        ma->pend[ma->npend].label = (uint8_t)label;
        ma->pend[ma->npend].slot = x;
        ma->pend[ma->npend].penalty = pen;
        ma->pend[ma->npend].hits = 0;
        ma->pend[ma->npend].lat = 0;
        ((struct hbl_pagetable *)pt)->aux64[x] = (ma->round << 16) | (uint64_t)ma->npend;
        ma->npend++;
    }
    ma->collecting = 1;
    ma->lat_sum = 0;
    ma->lat_n = 0;
    return m;
}
