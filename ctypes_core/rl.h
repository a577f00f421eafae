/*
 * What the learning policies share: the state features, the placement agent
 * (Sibyl's, and Harmonia's first agent) and the migration agent (Harmonia's
 * second).  Policies in policies/ compose these; the agent core (agent*.c)
 * knows nothing of pages or devices.
 */
#ifndef HBL_RL_H
#define HBL_RL_H
#include "hindsight.h"
#include "demos.h"
#include "teacher.h"

/* The value support of a placement agent with hindsight rewards (reward=2), in units of one
 * read moved from the slowest device to the fastest (ours: a write absorbed and 3 hits). */
#define HBL_HINDSIGHT_VMIN -2.0
#define HBL_HINDSIGHT_VMAX 4.0

/* The 7-feature state of Harmonia (arXiv:2503.20507, its state table); Sibyl used the first six.
 * HBL_F_QUEUE is ours and opt-in (harmonia's queue_feature=1, an experiment: results/diagnosis/writeonly.txt):
 * how full the background queues an eviction from the fastest device uses are, i.e. whether
 * absorbing a write there now makes its eviction synchronous.  HBL_F_REUSE is ours and opt-in too
 * (reuse_feature=1, which needs queue_feature=1: an experiment, results/pretrain/reuse.txt): the
 * workload's regime, as the share of recent requests whose page was accessed before within the
 * fastest device's characteristic time (hbl_characteristic_time), i.e. about the hit ratio an LRU
 * fast device of its size would have now; a running share with weight 1 / migrate_every (a round),
 * in eighths.  Agents see a prefix of the state. */
enum { HBL_F_TYPE, HBL_F_SIZE, HBL_F_INTERVAL, HBL_F_COUNT, HBL_F_FREE, HBL_F_DEVICE, HBL_F_SINCE_MIG,
       HBL_F_QUEUE, HBL_F_REUSE, HBL_NFEATURES };

struct hbl_features {
    uint8_t nbins[HBL_NFEATURES];
    double per_octave[HBL_NFEATURES];   /* log-scale features: bins per doubling */
    int64_t spare;   /* pages of the fastest device counted as free (HBL_F_FREE): pages the policy lets
                        go first whenever anything needs room there; 0 unless the policy sets it */
    double reuse;    /* HBL_F_REUSE's running share (hbl_features_see); 0 for an agent that sees no more */
};

void hbl_features_init(struct hbl_features *f, const struct hbl_sim *s, const struct hbl_params *p);
/* State of page `slot` for a request of `npages` pages (write or not). */
void hbl_features_encode(const struct hbl_features *f, const struct hbl_sim *s, int write,
                         uint32_t npages, uint32_t slot, uint8_t *out);
/* HBL_F_REUSE: count a request on page `slot` (its first), before its access is recorded (pt.last). */
void hbl_features_see(struct hbl_features *f, const struct hbl_sim *s, uint32_t slot);
/*
 * The hyper-parameters, one row each; adding one is one line here (and, for an
 * agent's, its field in struct hbl_agent_config).  Every value can be
 * overridden with --param NAME=VALUE; the migration agent's names carry the
 * prefix m_.  Sources: Sibyl (Singh et al., ISCA'22), Harmonia (Nadig et al.,
 * arXiv:2503.20507), "secondhand" when we know the value as reported by
 * others rather than from the paper itself, or ours.  Rows are X-macros so
 * that rl.c reads them and the policies list them (`hbl policies`) from this
 * one table.
 *
 * Live mode (hbl_live_new, the live engine) changes three defaults, ours:
 * reward=1, since a request reaches the engine after it was served, where its
 * extent was, so its own latency says nothing of the decision taken on it
 * (with reward=0 the agents' choices stay arbitrary: in the host emulation of
 * the live loop, tests/test_live_decider.py, harmonia's fast-device hit ratio ranged
 * 0.00-0.87 over six seeds, against 0.86-0.87); and train_every 25,
 * sync_every 250, since a live device makes thousands of decisions where a
 * trace has millions.
 *
 * Agents: X(name, struct hbl_agent_config field, placement default, placement
 * default in live mode, migration default, placement source, migration source,
 * meaning).  A default may use the fields set by the rows above it (vmax).
 */
#define HBL_AGENT_PARAMS(X) \
    X(hidden1, hidden[0], 20, 20, 20, "Sibyl", "ours (Sibyl's network)", "units of the first hidden layer (swish)") \
    X(hidden2, hidden[1], 30, 30, 30, "Sibyl", "ours (Sibyl's network)", "units of the second hidden layer (swish)") \
    X(head, head, HBL_HEAD_C51, HBL_HEAD_C51, HBL_HEAD_C51, "Sibyl", "ours (Sibyl's network)", \
      "value head: 0 DQN, 1 C51 (a distribution over atoms)") \
    X(atoms, atoms, 51, 51, 51, "Sibyl", "ours (Sibyl's network)", "atoms of the C51 value distribution") \
    X(optimizer, optimizer, HBL_OPT_ADAM, HBL_OPT_ADAM, HBL_OPT_ADAM, "ours", "ours", "0 Adam, 1 RMSprop") \
    X(gamma, gamma, 0.9, 0.9, 0.1, "Sibyl / Harmonia (secondhand)", "Harmonia (secondhand)", \
      "discount of future rewards") \
    X(lr, lr, 1e-3, 1e-3, 1e-2, "Sibyl / Harmonia (secondhand)", "Harmonia (secondhand)", "learning rate") \
    X(epsilon, epsilon, 0.001, 0.001, 0.001, "Sibyl", "Harmonia (secondhand)", "exploration rate after warm-up") \
    X(init_out, init_out, 1, 0, live ? 0 : 1, "ours", "ours", \
      "1: an untrained network's output layer starts at zero, so every action has the same value (C51: the " \
      "same uniform distribution) in every state until training separates them, ties going to the first " \
      "action (the fastest device); 2: as 1, each action's distribution starting with 0.99 of its mass on " \
      "the lowest atom (a pessimistic start: an action not yet tried looks no better than one tried); 0: " \
      "Glorot like the hidden layers, each action's value a random function of the state, which decided " \
      "where an untrained agent writes (results/learning/scratch.txt; hbl pretrain starts from 0, as the " \
      "shipped agents did; live mode keeps 0 for both agents, not measured there); with it, no warm-up by " \
      "default (warmup, results/learning/short.txt)") \
    X(warmup, warmup, c->init_out ? 0 : 1000, 1000, c->init_out ? 0 : 500, "ours", "ours (about 8 rounds)", \
      "decisions over which exploration falls from 1 to epsilon; none from a zero start (init_out >= 1): its " \
      "random placements were most of an untrained agent's loss over its first 20,000 requests, and 20,000 " \
      "requests teach it nothing (results/learning/short.txt)") \
    X(batch, batch, 128, 128, 256, "Sibyl / Harmonia (secondhand)", "Harmonia (secondhand)", "minibatch size") \
    X(buffer, buffer, 1000, 1000, 1000, "Sibyl / Harmonia (secondhand)", "Harmonia (secondhand)", \
      "experience buffer capacity") \
    X(train_every, train_every, 1000, 25, 64, "Sibyl / Harmonia (secondhand); live: ours", "ours (once a round)", \
      "decisions between two training steps") \
    X(sync_every, sync_every, 1000, 250, 64, "Sibyl / Harmonia (secondhand); live: ours", "ours (once a round)", \
      "decisions between copies of the trained weights to the deciding network") \
    X(cache, cache, 512, 512, 0, "ours", "ours", "decision cache entries, exact: cleared at every sync (0 = none)") \
    X(vmin, vmin, 0.0, 0.0, -1.0, "ours", "ours", "lowest value of the C51 support") \
    X(vmax, vmax, 1.0 / (1.0 - c->gamma), 1.0 / (1.0 - c->gamma), 2.0, "ours", "ours", \
      "highest value of the C51 support (placement: 1 / (1 - gamma))") \
    X(demo, demo, 0.0, 0.0, 0.0, "ours, after DQfD (Hester et al., AAAI'18)", "ours, after DQfD", \
      "weight of the large-margin loss towards the oracle's action where the trace's future labels it " \
      "(closed-loop replay only, demos.h); 0: none") \
    X(demo_margin, demo_margin, 0.8, 0.8, 0.8, "DQfD", "DQfD", \
      "demo: the margin by which the oracle's action's value must lead the others'") \
    X(init_seed, init_seed, 0, 0, 0, "ours", "ours", \
      "nonzero: an untrained network's weights are drawn as the run's seed init_seed would draw them, " \
      "exploration and replay still from the run's seed, so pretraining seeds can start from one common " \
      "network (the migration agent's own seed is the run's + 1; results/pretrain/soup.txt); 0: the run's seed")

/*
 * The settings of the learning policies around their agents: X(name, default,
 * default in live mode, whole (1: kept in an integer; struct hbl_param_doc), source,
 * meaning).  t_ref is one page read on the fastest device (hbl_reference_latency).
 * Policies may change a default where they say why (policies/harmonia.c); `hbl
 * policies` shows each policy's own.
 */
#define HBL_PLACEMENT_SETTINGS(X) \
    X(penalty, 0.1, 0.1, 0, "ours (Sibyl's form)", \
      "placement reward t_ref / latency (floored at 0) less this per eviction the placement forced") \
    X(device_time, 0, 0, 0, "ours, after Baleen (FAST'24)", \
      "1: a placement is also charged the next device's write time for each eviction it forced") \
    X(place_reads, 1, 1, 1, "Sibyl", "1: the placement agent decides reads too (moving the page); 0: writes only") \
    /* reward=1 did worse in the simulator (perf, 4 long workloads: 1.97-2.23 x Fast-Only against 1.88) */ \
    X(reward, 0, 1, 1, "ours", "0: a placement is rewarded with its own request's latency; " \
      "1: with its page's next access's, 0 if none within window; 2: hindsight, every action credited " \
      "with the device time it saved over horizon against the slowest device (writes) or staying (hindsight.h)") \
    X(window, 4096, 4096, 1, "ours", "reward=1: decisions waiting for their page's next access") \
    X(horizon, 0, 0, 1, "ours", "reward=2: requests after a decision over which it is credited; 0: the fastest " \
      "device's characteristic time (the age of its least recently used page), at most 32768") \
    X(demo_follow, 0, 0, 0, "ours, after DQfD's pretraining on demonstrations", "1: place as the oracle's " \
      "label says where the trace's future gives one (a warm start: the agent learns from the oracle's " \
      "decisions; reward=0 only)")

/* Both m_reward forms taught the agent to move very little on our workloads (README). */
#define HBL_MIGRATION_SETTINGS(X) \
    X(m_candidates, 64, 64, 1, "Harmonia / ours", \
      "pages scored per round: hot ones below the fastest device, cold ones above (a round every migrate_every)") \
    X(m_moves, 10, 10, 1, "Harmonia / ours", "moves at most per round") \
    X(m_reward_n, 50, 50, 1, "Harmonia", "m_reward=0: a round's reward is n t_ref / the sum of its next n latencies") \
    X(m_pingpong, 100, 100, 0, "ours", \
      "a move is charged this / (1 + requests since the page's last move): no ping-pong") \
    X(m_reward, 0, 0, 1, "ours", "0: the round's reward (the paper's); 1: each page's own accesses until the " \
      "next round, t_ref / their mean latency (an experiment); 2: hindsight, each candidate credited per " \
      "action with the device time its accesses over m_horizon saved against staying (hindsight.h)") \
    X(m_move_cost, 0.05, 0.05, 0, "ours", "m_reward=1: charged per move") \
    X(m_horizon, 0, 0, 1, "ours", "m_reward=2: requests after a decision over which it is credited; 0: the " \
      "fastest device's characteristic time (the age of its least recently used page), at most 32768") \
    X(m_demo_follow, 0, 0, 0, "ours, after DQfD's pretraining on demonstrations", "1: move as the oracle's " \
      "label says (m_reward=0 only)") \
    X(m_fill, 0, 0, 0, "ours", "1: free space is free: while the fastest device has free pages, a hot candidate " \
      "below it is promoted into them and a cold one is not demoted from a device with free pages, " \
      "whatever the agent's values (learned from as its own moves)")

#define HBL_FEATURE_SETTINGS(X) \
    X(octave_interval, 3, 3, 0, "ours", "bins per doubling of the access interval (63 bins reach 2^21 requests)") \
    X(octave_count, 4, 4, 0, "ours", "bins per doubling of the access count (63 bins reach 2^15.75 accesses)") \
    X(octave_migration, 3, 3, 0, "ours", "bins per doubling of the requests since the page's last migration")

/* Rows as entries of a policy's accepted parameters (struct hbl_policy_ops.params); an agent parameter
 * is whole when its field of struct hbl_agent_config is an integer (a type that makes 0.5 zero). */
#define HBL_AGENT_WHOLE(field) ((__typeof__(((struct hbl_agent_config *)0)->field))0.5 == 0)
#define HBL_PLACEMENT_PARAM_DOC(name, field, place, live, mig, psrc, msrc, doc) \
    {#name, doc " [" psrc "]", HBL_AGENT_WHOLE(field)},
#define HBL_MIGRATION_PARAM_DOC(name, field, place, live, mig, psrc, msrc, doc) \
    {"m_" #name, "migration agent: " doc " [" msrc "]", HBL_AGENT_WHOLE(field)},
#define HBL_SETTING_DOC(name, dflt, live, whole, src, doc) {#name, doc " [" src "]", whole},

/* Agent hyper-parameters from HBL_AGENT_PARAMS: the migration agent's, or the placement
 * agent's in the simulator or in live mode, overridden by params named prefix + name. */
void hbl_agent_config_init(struct hbl_agent_config *c, const struct hbl_features *f, int nfeatures,
                           int nactions, const struct hbl_params *p, const char *prefix, int migration,
                           int live, uint64_t seed);

struct hbl_placement_agent {
    struct hbl_agent *ag;
    struct hbl_features feat;
    int nfeatures;          /* 6 (Sibyl) or 7 (Harmonia; 8 with queue_feature=1, 9 with reuse_feature=1 too) */
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
    /* reward=2: decisions under evaluation; space: the value of a page of each device when full
     * (the migration agent's estimate where there is one, else NULL) */
    struct hbl_evalq evalq;
    uint32_t horizon;
    double unit;
    const double *space;
    /* demonstrations (demos.h): the labels of the policy's future, if any; follow: act on them */
    const struct hbl_demos *demos;
    int follow, demo;
    uint8_t label;          /* the pending decision's */
};

/* A policy's own defaults for its placement agent, where they differ from the tables'
 * (Sibyl's): its network, and the settings that shape its reward and what it decides.
 * Parameters still override them; NULL takes the tables' defaults. */
struct hbl_placement_defaults {
    int32_t hidden1, hidden2, atoms;
    double penalty, device_time, place_reads;
};
int hbl_placement_agent_init(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_params *p,
                             int nfeatures, const struct hbl_placement_defaults *own, char *err, int errlen);
void hbl_placement_agent_free(struct hbl_placement_agent *pa);
void hbl_placement_agent_place(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_request *r,
                               const uint32_t *slots, int n, int8_t *targets);
void hbl_placement_agent_observe(struct hbl_placement_agent *pa, struct hbl_sim *s, const struct hbl_request *r,
                                 const uint32_t *slots, int n, double latency_ns);

#define HBL_MIG_MAX_CAND 256
struct hbl_migration_agent {
    struct hbl_agent *ag;
    struct hbl_features feat;
    int candidates, max_moves, reward_n;
    double pingpong, lref;
    uint32_t recent[1024]; int nrecent, rhead;   /* recently read pages on slower devices */
    struct { uint8_t s[HBL_NFEATURES]; uint8_t a, label; uint32_t slot; float penalty;
             uint32_t hits; double lat; } pend[HBL_MIG_MAX_CAND];
    int npend, collecting, lat_n;
    double lat_sum;
    int page_reward;        /* 0: the round's n / sum of the next n latencies (the paper's);
                             * 1: each page's own accesses until the next round (ours) */
    double move_cost;       /* page reward: subtracted for a move */
    uint64_t round;         /* tags pages of the current round in pt.aux64 */
    /* m_reward=2: the candidates under evaluation, the device time of one page read
     * moved from the slowest device to the fastest (a reward of 1), and the value of a
     * page of each faster device when it is full: what its coldest pages, the ones a
     * move onto it pushes off, saved by staying there (a running mean) */
    struct hbl_evalq evalq;
    uint32_t horizon;       /* 0: adaptive */
    double unit, space[8];   /* [4 + d]: how many cold pages of d the mean of space[d] is over */
    const struct hbl_demos *demos;   /* as the placement agent's */
    int follow, demo;
    int fill;               /* m_fill */
};

int hbl_migration_agent_init(struct hbl_migration_agent *ma, struct hbl_sim *s, const struct hbl_params *p,
                             char *err, int errlen);
void hbl_migration_agent_free(struct hbl_migration_agent *ma);
void hbl_migration_agent_observe(struct hbl_migration_agent *ma, struct hbl_sim *s,
                                 const uint32_t *slots, int n, int write, double latency_ns);
int hbl_migration_agent_migrate(struct hbl_migration_agent *ma, struct hbl_sim *s, uint32_t *slots,
                                int8_t *targets, int max);

#endif
