/*
 * What the learning policies share: the state features, the placement agent
 * (Sibyl's, and Harmonia's first agent) and the migration agent (Harmonia's
 * second).  Policies in policies/ compose these; the agent core (agent.c)
 * knows nothing of pages or devices.
 */
#ifndef HBL_RL_H
#define HBL_RL_H
#include "hbl_internal.h"

/* The 7-feature state of Harmonia (arXiv:2503.20507, its state table); Sibyl used the first six. */
enum { HBL_F_TYPE, HBL_F_SIZE, HBL_F_INTERVAL, HBL_F_COUNT, HBL_F_FREE, HBL_F_DEVICE, HBL_F_SINCE_MIG,
       HBL_NFEATURES };

struct hbl_features {
    uint8_t nbins[HBL_NFEATURES];
    double per_octave[HBL_NFEATURES];   /* log-scale features: bins per doubling */
};

void hbl_features_init(struct hbl_features *f, const struct hbl_sim *s, const struct hbl_params *p);
/* State of page `slot` for a request of `npages` pages (write or not). */
void hbl_features_encode(const struct hbl_features *f, const struct hbl_sim *s, int write,
                         uint32_t npages, uint32_t slot, uint8_t *out);
/* Agent hyper-parameters: defaults (the migration agent's, or the placement
 * agent's in the simulator or in live mode), overridden by params named prefix + key. */
void hbl_agent_config_init(struct hbl_agent_config *c, const struct hbl_features *f, int nfeatures,
                           int nactions, const struct hbl_params *p, const char *prefix, int migration,
                           int live, uint64_t seed);
/* Service time of one page read on the fastest device: rewards are this over a latency. */
double hbl_reference_latency(const struct hbl_sim *s);

struct hbl_placement_agent {
    struct hbl_agent *ag;
    struct hbl_features feat;
    int nfeatures;          /* 6 (Sibyl) or 7 (Harmonia) */
    int act_on_reads;
    double penalty, lref, evict_ns;
    uint8_t state[16];
    int action, pending;
    float reward;
    uint64_t evictions_before;
    /* reward=1: a decision is rewarded at its page's next access, with that
     * access's latency (the live engine's default: there a request was served
     * before its decision, so its own latency says nothing of the action).
     * Pending decisions wait in a ring of `window`; one pushed out unanswered
     * (its page was not accessed again) earns 0. */
    int page_reward;
    uint32_t window, rhead;
    struct hbl_pdecision { uint32_t slot; uint8_t s[HBL_NFEATURES]; uint8_t a, live; float pen; } *ring;
    int64_t resolve;        /* ring entry answered by the current request, -1 if none */
    uint32_t decided;       /* ring entry of the current request's decision */
    uint8_t next[HBL_NFEATURES];
};

int hbl_placement_agent_init(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_params *p,
                             int nfeatures, char *err, int errlen);
void hbl_placement_agent_free(struct hbl_placement_agent *pa);
void hbl_placement_agent_place(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_request *r,
                               const uint32_t *slots, int n, int8_t *targets);
void hbl_placement_agent_observe(struct hbl_placement_agent *pa, struct hbl_sim *s, double latency_ns);

#define HBL_MIG_MAX_CAND 256
struct hbl_migration_agent {
    struct hbl_agent *ag;
    struct hbl_features feat;
    int candidates, max_moves, reward_n;
    double pingpong, lref;
    uint32_t recent[1024]; int nrecent, rhead;   /* recently read pages on slower devices */
    struct { uint8_t s[HBL_NFEATURES]; uint8_t a; uint32_t slot; float penalty;
             uint32_t hits; double lat; } pend[HBL_MIG_MAX_CAND];
    int npend, collecting, lat_n;
    double lat_sum;
    int page_reward;        /* 0: the round's n / sum of the next n latencies (the paper's);
                             * 1: each page's own accesses until the next round (ours) */
    double move_cost;       /* page reward: subtracted for a move */
    uint64_t round;         /* tags pages of the current round in pt.aux64 */
};

int hbl_migration_agent_init(struct hbl_migration_agent *ma, struct hbl_sim *s, const struct hbl_params *p,
                             char *err, int errlen);
void hbl_migration_agent_free(struct hbl_migration_agent *ma);
void hbl_migration_agent_observe(struct hbl_migration_agent *ma, struct hbl_sim *s,
                                 const uint32_t *slots, int n, double latency_ns);
int hbl_migration_agent_migrate(struct hbl_migration_agent *ma, struct hbl_sim *s, uint32_t *slots,
                                int8_t *targets, int max);

#endif
