/*
 * hbl agent core: the public C interface.
 *
 * This file is the single definition of the request record and of every type
 * that crosses the C/Python boundary.  ctypes_core/build_core.py feeds it to cffi
 * (preprocessor lines are stripped), and hbl/record.py derives the NumPy dtype
 * of a request from the struct below, so the layout exists exactly once.
 */
#ifndef HBL_API_H
#define HBL_API_H
#include <stdint.h>

/* One block request, as read from a trace or captured live. */
struct hbl_request {
    uint64_t time_ns;    /* issue time, ns (epoch or trace-relative) */
    uint64_t offset;     /* logical offset, bytes */
    uint64_t latency_ns; /* measured latency, 0 when unknown */
    uint32_t length;     /* bytes */
    uint32_t pid;        /* issuing process, 0 when unknown */
    uint32_t device;     /* device or volume number, 0 when unknown */
    uint8_t op;          /* enum hbl_op */
    uint8_t _pad[3];
};

enum hbl_op { HBL_OP_READ = 0, HBL_OP_WRITE = 1, HBL_OP_DISCARD = 2, HBL_OP_FLUSH = 3 };
enum { HBL_MAX_DEVICES = 4, HBL_MAX_STREAMS = 16 };

/* Service model of one device (see hbl/devices/__init__.py for the datasheets).
 * An SSD is a pipeline: an I/O completes `latency` after it starts (a 4 KiB
 * access costs exactly the datasheet's QD1 latency; larger ones add the
 * transfer of the rest) and holds the device for 1/IOPS, or its transfer time
 * if longer, so a saturated device delivers its rated IOPS and bandwidth.  An
 * HDD serves one I/O at a time: latency + positioning + transfer. */
struct hbl_device_params {
    double read_latency_ns;    /* QD1 4 KiB read, including its transfer */
    double write_latency_ns;   /* QD1 4 KiB write */
    double read_bytes_per_ns;  /* sequential transfer rate */
    double write_bytes_per_ns;
    double read_iops;          /* random 4 KiB at depth: the throughput ceiling; 0 = 1 / latency */
    double write_iops;
    /* HDD positioning for a non-sequential I/O (all 0 for SSDs): rotation_ns + a seek
     * that grows with the square root of the distance, track_seek_ns for a short hop,
     * seek_ns at a third of span_pages (the average seek of datasheets). */
    double seek_ns;
    double track_seek_ns;
    double rotation_ns;
    double span_pages;
    int64_t capacity_pages;    /* < 0: unlimited */
    int32_t streams;           /* HDD: sequential read streams its cache follows (read-ahead segments), >= 1 */
};

/* Background I/O (the copies of promotions, evictions and write-backs): a
 * queue per device, served only while the device has no foreground I/O. */
struct hbl_background_config {
    uint32_t backlog_pages;    /* queued pages per device at most; a full queue makes an eviction synchronous */
    double rate_bytes_per_ns;  /* per device; 0 = no limit beyond idle time */
    double idle_ns;            /* the device must have been idle this long before a background I/O starts */
    uint32_t copy_partial_reads; /* 1: a page promoted after a read of part of it is copied whole (the rest
                                  * read from its device); 0: only written, as if the read had covered it */
    uint32_t serve_after_copy; /* 1: a moved page is served from where it was until its copy completes
                                * (as a live device remaps after copying); 0: from its new device at once */
    uint32_t compete;          /* 1: background I/O takes its turn with foreground I/O, one at a time per device
                                * (a copier beside the application, as hbl's live device copies); 0: idle time only */
    uint32_t batch_moves;      /* > 0 (<= 64): optional moves carried as hbl's live controller carries them
                                * (hbl/live/moves.py MoveQueue.take, controller.py plan/execute): queued,
                                * taken newest first, batch_moves a batch, one batch at a time; refused and
                                * undone past the queue's capacity or stale_ns old; a batch's pages served
                                * from where they were until its last copy completes (sim_batch.c); 0: off */
    double batch_interval_ns;  /* batch_moves: a batch starts at most this often (hbl up's interval) */
    double stale_ns;           /* batch_moves: a move not taken this long after it was asked is refused */
    uint32_t spare_pages[4];   /* batch_moves: slots each device has beyond its capacity_pages (the live
                                * device's spares): a move to it waits for a free slot (a promotion) or is
                                * undone (an eviction), as the live controller's are */
    uint32_t frontier;         /* batch_moves: after a first write to a page, up to this many next pages never
                                * written are remapped where the policy put it (hbl up's --frontier) */
    double batch_prepare_ns;   /* batch_moves, a diagnosis (0: none): the controller's own time before a batch's
                                * copies start, and after they complete before its remap is in force */
    double batch_commit_ns;
};

struct hbl_sim_config {
    int32_t ndev;              /* 2..4, fastest first */
    uint32_t page_size;        /* bytes per page (the unit of placement) */
    double speed;              /* open loop: arrival = trace time / speed */
    int32_t queue_depth;       /* > 0: closed loop at this depth, trace times ignored; 0: open loop */
    uint32_t migrate_every;    /* requests between two calls of the policy's migrate() */
    uint32_t migrate_max;      /* moves the policy may ask for per call */
    uint32_t timeline_every;   /* requests per timeline row, 0 = no timeline */
    uint64_t seed;
    struct hbl_device_params dev[4];
    struct hbl_background_config bg;
};

/* Named numeric parameters of a policy ("threshold" = 3, ...). */
struct hbl_params {
    int32_t n;
    char keys[32][32];
    double values[32];
};

struct hbl_sim_stats {
    uint64_t requests;         /* requests served (reads and writes) */
    uint64_t skipped;          /* flush, discard and zero-length requests: not simulated */
    uint64_t reads, writes;
    uint64_t read_bytes, write_bytes;
    uint64_t page_accesses;
    uint64_t read_page_accesses;
    uint64_t fast_read_hits;   /* page reads served by device 0 (read_pages[0], set by hbl_sim_get_stats) */
    uint64_t write_page_accesses;
    uint64_t fast_page_writes; /* page writes that landed on device 0 (write_pages[0], likewise) */
    uint64_t promotions;       /* moves to a faster device */
    uint64_t evictions;        /* moves to a slower device */
    uint64_t fallback_evictions; /* of which forced by a full device */
    uint64_t clean_evictions;  /* of which free: the slowest device still had the data (or it is dead) */
    uint64_t sync_evictions;   /* evictions a request waited for: the background queue was full */
    uint64_t moves_refused;    /* optional moves (promotions, policy migrations) not made: queue full */
    uint64_t background_ios;   /* background I/Os served */
    uint64_t migrated_bytes;
    uint64_t remaps;           /* batch_moves: of the moves, those of a page never written: no data, no copy */
    uint64_t pages;            /* distinct pages seen */
    double latency_sum_ns;
    double first_arrival_ns, last_completion_ns;
    double busy_ns[4];         /* per device, time it was busy (foreground + background) */
    double background_busy_ns[4];
    double foreground_wait_ns; /* time requests waited behind background I/O already started */
    uint64_t used_pages[4];
    uint64_t dev_io_bytes[4];  /* foreground + migration bytes per device */
    /* Where requests' latency goes: each request counted under the slowest device
     * it was served from, and the part of its latency spent waiting for the
     * evictions it made synchronous (a full background queue drained at once). */
    uint64_t served_requests[4];
    double served_latency_ns[4];
    double sync_wait_ns;
    double sync_busy_ns[4];    /* per device, time spent on queued background I/O drained synchronously */
    /* Where a gap in latency comes from (scripts/behind.py): page reads and writes served by
     * each device (device 0's also reported as fast_read_hits and fast_page_writes), the part of
     * latency_sum_ns that read requests took, and promotions whose copy was never read: a
     * promoted page moved to a slower device again before its next read (wasted), or still
     * where it was promoted to and not read since (unread, now). */
    uint64_t read_pages[4], write_pages[4];
    double read_latency_ns;
    uint64_t promotions_wasted;
    uint64_t promoted_unread;
    uint64_t batches;          /* batch_moves: batches taken (each of batch_moves moves at most) */
};

struct hbl_timeline_row {
    uint64_t requests;         /* cumulative requests at the end of the window */
    double time_ns;            /* simulated time at the end of the window */
    double avg_latency_ns;     /* average over the window */
    double read_hit_ratio;     /* over the window: page reads served by device 0 */
    uint64_t promotions, evictions; /* cumulative */
    uint64_t fast_used_pages;
};

struct hbl_sim;

/* Policy registry: names and one-line descriptions; NULL past the end. */
const char *hbl_policy_name(int32_t i);
const char *hbl_policy_doc(int32_t i);
/* What a policy can do, so callers ask the registry rather than keep lists of names. */
enum hbl_policy_flag {
    HBL_POLICY_LEARNS = 1,         /* trains as it runs: its result depends on the seed */
    HBL_POLICY_NEEDS_FUTURE = 2,   /* reads the whole trace before the first request (the oracle) */
    HBL_POLICY_LIVE = 4,           /* can drive a live device (hbl_live_new) */
};
/* Capabilities of policy i (enum hbl_policy_flag bits); -1 past the end. */
int32_t hbl_policy_flags(int32_t i);
/* Name of the j-th parameter policy i accepts (--param NAME=VALUE); NULL past the end. */
const char *hbl_policy_param(int32_t i, int32_t j);
/* Its meaning, in one line; NULL past the end. */
const char *hbl_policy_param_doc(int32_t i, int32_t j);
/* The defaults policy i uses when simulating two devices: values[j] for hbl_policy_param(i, j)
 * with known[j] = 1, known[j] = 0 for one read only in some configurations.  Returns the number
 * of parameters (at most max), -1 when the policy cannot be built without more (python). */
int32_t hbl_policy_defaults(int32_t i, double *values, uint8_t *known, int32_t max);
/* The same on a live device (hbl_live_new), where some defaults differ; -1 for a policy that
 * cannot run live. */
int32_t hbl_policy_live_defaults(int32_t i, double *values, uint8_t *known, int32_t max);

struct hbl_sim *hbl_sim_new(const struct hbl_sim_config *cfg, const char *policy,
                            const struct hbl_params *params, void *plugin,
                            char *err, int32_t errlen);
void hbl_sim_free(struct hbl_sim *s);
/* Oracle only: hand it the whole trace before feeding it (future knowledge). */
int32_t hbl_sim_set_future(struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n);
int32_t hbl_sim_feed(struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n);
void hbl_sim_get_stats(const struct hbl_sim *s, struct hbl_sim_stats *out);
double hbl_sim_latency_percentile(const struct hbl_sim *s, double q);
/* The latency histogram (hbl/sim/guard.py merges segments' differences): n, min, max, then the buckets,
 * written to out when max is at least the length returned (3 + the buckets). */
int32_t hbl_sim_latency_hist(const struct hbl_sim *s, uint64_t *out, int32_t max);
/* Nearest-rank percentile q of buckets b[0..nb) as hbl_sim_latency_hist gives them, clamped to [min, max]. */
double hbl_hist_buckets_percentile(const uint64_t *b, int32_t nb, uint64_t min, uint64_t max, double q);
uint64_t hbl_sim_timeline(const struct hbl_sim *s, struct hbl_timeline_row *out, uint64_t max);
/* Invariants: every page has one home, no device over capacity, counters agree. 0 = ok. */
int32_t hbl_sim_check(const struct hbl_sim *s, char *err, int32_t errlen);

/* Page state, for Python plugin policies and tests (slot = dense page index). */
int32_t hbl_sim_page_device(const struct hbl_sim *s, uint32_t slot);
uint64_t hbl_sim_page_number(const struct hbl_sim *s, uint32_t slot);
uint32_t hbl_sim_page_count(const struct hbl_sim *s, uint32_t slot);
uint64_t hbl_sim_page_last_access(const struct hbl_sim *s, uint32_t slot);
/* Every page's number and device at once (slot order): pages[i], devs[i] for i < min(n, max);
 * returns n, the simulator's page count (call with max 0 for the count). */
uint64_t hbl_sim_layout(const struct hbl_sim *s, uint64_t *pages, int8_t *devs, uint64_t max);
int64_t hbl_sim_free_pages(const struct hbl_sim *s, int32_t dev);
/* Capacity in force (a policy may lift it: fast-only), < 0 = unlimited. */
int64_t hbl_sim_capacity(const struct hbl_sim *s, int32_t dev);
uint64_t hbl_sim_now_request(const struct hbl_sim *s);
/* Up to max slots of device dev, least recently used first. */
uint64_t hbl_sim_lru_pages(const struct hbl_sim *s, int32_t dev, uint32_t *out, uint64_t max);

/* Trace statistics in one streaming pass: footprint and, if reuse, reuse distance (in distinct pages). */
struct hbl_tstats;
struct hbl_tstats *hbl_tstats_new(uint32_t page_size, int32_t reuse);
void hbl_tstats_free(struct hbl_tstats *t);
int32_t hbl_tstats_feed(struct hbl_tstats *t, const struct hbl_request *reqs, uint64_t n);
uint64_t hbl_tstats_pages(const struct hbl_tstats *t);
/* counts[i] = reuses with distance in [2^i - 1, 2^(i+1) - 1); cold (first) accesses in *cold. */
void hbl_tstats_reuse(const struct hbl_tstats *t, uint64_t *counts, int32_t nbins, uint64_t *cold);

/* Multiset matching (ctypes_core/match.c): each row of b (nb rows of w int64) ends one equal
 * row of a (na rows), the earliest by rank_a (NULL: index order), then by index, not ended
 * yet; b's rows take theirs in index order.  a_left[i] = 0 for a's rows ended (1 for the
 * others); b_hit[j] = 1 for b's rows that ended one (b_hit may be NULL).  The number matched,
 * -1 if memory ran out. */
int64_t hbl_match_rows(const int64_t *a, const int64_t *rank_a, uint64_t na, const int64_t *b, uint64_t nb,
                       uint32_t w, uint8_t *a_left, uint8_t *b_hit);


/* ---- The learning agent core (ctypes_core/agent.c, nn.c) ----
 * A small feed-forward network (swish hidden layers) with a DQN or categorical
 * (C51) value head, trained off the decision path from an experience buffer.
 * States are small integers (feature bins); the agent scales each by its bin
 * count, so buffers hold one byte per feature. */
enum hbl_head { HBL_HEAD_DQN = 0, HBL_HEAD_C51 = 1 };
enum hbl_optimizer { HBL_OPT_ADAM = 0, HBL_OPT_RMSPROP = 1 };

struct hbl_agent_config {
    int32_t nfeatures;         /* <= 16 */
    uint8_t nbins[16];         /* bins of each feature (state values are 0..nbins-1) */
    int32_t nactions;          /* <= 8 */
    int32_t nhidden;           /* hidden layers, <= 4 */
    int32_t hidden[4];
    int32_t head;              /* enum hbl_head */
    int32_t atoms;             /* C51 support size */
    int32_t init_out;          /* 1: an untrained network's output layer starts at zero (every action alike);
                                  here, in the padding before vmin, so the struct keeps its size */
    double vmin, vmax;         /* C51 support range */
    int32_t optimizer;         /* enum hbl_optimizer */
    int32_t init_seed;         /* nonzero: the untrained weights drawn as this seed draws them (0: from seed);
                                  here, in the padding before lr, so the struct keeps its size */
    double lr, gamma;
    double epsilon;            /* exploration after warm-up */
    int32_t warmup;            /* decisions over which epsilon falls from 1 to `epsilon` */
    int32_t batch;             /* minibatch size */
    int32_t buffer;            /* experience buffer capacity */
    int32_t train_every;       /* decisions between two minibatch steps */
    int32_t sync_every;        /* decisions between copies of the trained weights to the inference net */
    int32_t cache;             /* decision cache entries (power of two, 0 = none) */
    uint64_t seed;
    double demo;               /* weight of the large-margin demonstration loss (DQfD); 0 = none */
    double demo_margin;        /* its margin: the label's Q must lead every other action's by this */
};

struct hbl_agent_stats {
    uint64_t decisions, explorations, train_steps, syncs, buffered;
    uint64_t background_steps;  /* train steps taken by a background thread */
    uint64_t actions[8];       /* decisions per action (device) */
    double epsilon, last_loss, reward_sum, reward_ewma;
};

struct hbl_agent;
struct hbl_agent *hbl_agent_new(const struct hbl_agent_config *cfg, char *err, int32_t errlen);
void hbl_agent_free(struct hbl_agent *a);
/* Epsilon-greedy action from the inference network (counts as a decision). */
int32_t hbl_agent_act(struct hbl_agent *a, const uint8_t *state);
/* Greedy action, no exploration, not counted. */
int32_t hbl_agent_greedy(const struct hbl_agent *a, const uint8_t *state);
/* Expected value of each action under the inference network. */
void hbl_agent_values(const struct hbl_agent *a, const uint8_t *state, float *out);
void hbl_agent_remember(struct hbl_agent *a, const uint8_t *state, int32_t action, float reward,
                        const uint8_t *next_state);
/* The same with a demonstrator's action for the state (label 0..nactions-1; anything else: none),
 * taught by the large-margin loss when the agent's demo weight is > 0 (ignored otherwise). */
void hbl_agent_remember_demo(struct hbl_agent *a, const uint8_t *state, int32_t action, float reward,
                             const uint8_t *next_state, int32_t label);
/* The large-margin loss of one sample's outputs (ctypes_core/demos.h), its gradient added to dout. */
float hbl_demo_margin(const float *out, int32_t stride, int32_t nactions, int32_t atoms, const float *support,
                      int32_t label, float margin, float weight, float *dout);
/* One minibatch step on the training network; returns the loss (0 when the buffer is too small). */
double hbl_agent_train(struct hbl_agent *a);
void hbl_agent_sync(struct hbl_agent *a);
/* Bookkeeping after a decision: trains and syncs on schedule (the simulator's interleaving). */
void hbl_agent_tick(struct hbl_agent *a);
/* Background training (the live controller): with it on, tick() no longer
 * trains or syncs, and another thread calls hbl_agent_background(), which
 * trains and syncs on the same schedule (train_every, sync_every decisions)
 * while act() and remember() go on; returns 1 if it did either.  Switch it on
 * and off only while no other thread uses the agent. */
void hbl_agent_set_background(struct hbl_agent *a, int32_t on);
int32_t hbl_agent_background(struct hbl_agent *a);
void hbl_agent_get_stats(const struct hbl_agent *a, struct hbl_agent_stats *out);
void hbl_agent_get_config(const struct hbl_agent *a, struct hbl_agent_config *out);
/* The training network's parameters (layer by layer: weights row-major [out][in],
 * then biases); returns their count, copying them when max allows. */
int32_t hbl_agent_params(const struct hbl_agent *a, float *out, int32_t max);
/* The optimizer's moments (Adam's first and second, RMSprop's mean square in m2), laid out as the
 * parameters; returns their count, copying them when max allows. */
int32_t hbl_agent_moments(const struct hbl_agent *a, float *m1, float *m2, int32_t max);
/* Replace the training network's parameters (n of them, hbl_agent_params' layout) and, when not
 * NULL, the optimizer's moments; the deciding network is synced to them.  -1 if n is not its count. */
int32_t hbl_agent_set_params(struct hbl_agent *a, const float *w, const float *m1, const float *m2, int32_t n);
/* Bytes allocated for the agent: networks, optimizer state, buffer, scratch. */
uint64_t hbl_agent_memory_bytes(const struct hbl_agent *a);
/* Mean ns per greedy decision over n calls on the given states (measured in C):
 * a full forward pass of the (quantized) inference network each time, */
double hbl_agent_bench_inference(const struct hbl_agent *a, const uint8_t *states, int32_t nstates, int64_t n);
/* or of the FP32 network of the training weights (linear: its multiply-adds
 * alone, without activations or the C51 expectation), */
double hbl_agent_bench_fp32(const struct hbl_agent *a, const uint8_t *states, int32_t nstates, int64_t n,
                            int32_t linear);
/* or as decisions are made: through the decision cache, emptied every sync_every decisions. */
double hbl_agent_bench_decisions(struct hbl_agent *a, const uint8_t *states, int32_t nstates,
                                 int32_t sync_every, int64_t n);
/* The states in the experience buffer, oldest first (a sample of real decisions). */
int32_t hbl_agent_buffer_states(const struct hbl_agent *a, uint8_t *out, int32_t max);
/* Their actions and rewards, in the same order (a diagnostic: scripts/untrained_diag.py). */
int32_t hbl_agent_buffer_rewards(const struct hbl_agent *a, uint8_t *actions, float *rewards, int32_t max);

/* Saved agents: a versioned, checksummed file holding a policy's agents. */
int32_t hbl_agents_save(const char *path, const char *policy, struct hbl_agent *const *agents,
                        int32_t n, char *err, int32_t errlen);
/* Loads into existing agents whose configuration must match the file's. */
int32_t hbl_agents_load(const char *path, const char *policy, struct hbl_agent *const *agents,
                        int32_t n, char *err, int32_t errlen);
/* The number of state features of a file's first agent (a policy's placement agent where it has one),
 * read from its header before any agent is built, so a run can be configured for the file; -1 on error. */
int32_t hbl_agents_file_features(const char *path, char *err, int32_t errlen);
/* Debugging the quantized inference: with on, every greedy decision is also
 * taken by the FP32 network of the same weights (from the next sync on, or at
 * once for a fresh agent or a version 1 file) and counted. */
void hbl_agent_set_shadow(struct hbl_agent *a, int32_t on);
void hbl_agent_agreement(const struct hbl_agent *a, uint64_t *compared, uint64_t *agreed);

/* Network internals exposed for tests against a NumPy reference. */
int32_t hbl_mlp_nparams(const int32_t *sizes, int32_t nlayers);
/* n samples, one a row: x is n x sizes[0], out n x sizes[nlayers]. */
void hbl_mlp_forward_ref(const int32_t *sizes, int32_t nlayers, const float *params, const float *x,
                         int32_t n, float *out);
/* Gradient of the sum over the n samples of sum(dout * out) with respect to the parameters. */
void hbl_mlp_grad_ref(const int32_t *sizes, int32_t nlayers, const float *params, const float *x,
                      const float *dout, int32_t n, float *grad);
/* C51: project r + gamma * z (distribution p over atoms) back onto the support. */
void hbl_c51_project(float reward, float gamma, const float *p, int32_t atoms, float vmin, float vmax, float *out);

/* ---- Diagnostics: one migration decision flipped, and the hindsight credit of chosen ones ----
 * (scripts/credit_check.py; results/diagnosis/credit.txt).  A replay of a non-learning policy is
 * deterministic, so two replays that differ in one decision measure that decision's true value.
 * A decision is named by the request count when it is taken (hbl_sim_now_request then) and its
 * page number: for a move migrate() asks, the count when migrate() is called (a multiple of
 * migrate_every); for a read's promotion (a placement target of a read), the read's index.  Both
 * are refused for a learning policy (its agents own the page table field the credit tags pages
 * in) and in live mode; set them before feeding. */
int32_t hbl_sim_diag_start(struct hbl_sim *s);
/* At decision `round`, page `page`: to < 0, drop the move migrate() or the read asks for it;
 * to >= 0, at a migrate() call, move it there (a background copy, as migrate()'s moves) if
 * migrate() does not (one such a round: the first).  Each call adds a flip. */
int32_t hbl_sim_diag_flip(struct hbl_sim *s, uint64_t round, uint64_t page, int32_t to);
/* At decision `round`, before its moves, queue page `page` for hindsight credit
 * (ctypes_core/hindsight.c): at a migrate() call as the migration agent's m_reward=2 queues its
 * candidates (HBL_JUDGE_MOVE), at a read that promotes it as the read admission's rules 5-9 queue
 * theirs (HBL_JUDGE_READ, the deciding read not counted); with
 * horizon scale x hbl_characteristic_time (the agent's m_horizon 0).  A page not seen by then
 * is not queued.  page HBL_DIAG_COLD - k: the fastest device's k-th least recently used page then
 * (k < 64; as the agent's cold candidates, whose credit is its `space` term).  0, or -1 (a learning policy, live mode, out of memory). */
#define HBL_DIAG_COLD 0xffffffffffffffffULL
int32_t hbl_sim_diag_judge(struct hbl_sim *s, uint64_t round, uint64_t page, double scale);
/* Writes' placements (scripts/write_credit.py; results/diagnosis/write-credit.txt), named by the
 * write's request index and its first page: flip_write puts every page of that write on device
 * `to` whatever the policy's targets were; judge_write queues its first page for hindsight credit
 * as the placement agent's reward=2 queues a write (HBL_JUDGE_WRITE, the write itself counted,
 * queued before it lands), horizon scale x hbl_characteristic_time (the agent's horizon 0).  A
 * write's flips and judges are apart from the moves' and reads' above.  0, or -1. */
int32_t hbl_sim_diag_flip_write(struct hbl_sim *s, uint64_t round, uint64_t page, int32_t to);
int32_t hbl_sim_diag_judge_write(struct hbl_sim *s, uint64_t round, uint64_t page, double scale);
/* The judged decisions' queue as harmonia's options set the placement agent's: measured_copy
 * (credit_copy=1), end_next (credit_next=1: an evaluation ends at its page's next write, that write not
 * counted).  Before the replay starts; 0, or -1. */
int32_t hbl_sim_diag_credit_opts(struct hbl_sim *s, int32_t measured_copy, int32_t end_next);
/* A judged decision once its horizon has passed. */
/* The device model's waits of a replay with diagnostics on, split (results/diagnosis/waits.txt): per
 * device d and direction w (0 read, 1 write): foreground I/Os (those that drained a full background
 * queue included), their waits behind the device's last I/O when that was foreground (wait_fg), a
 * background read (wait_bg[d][0]) or write (wait_bg[d][1]); background I/Os started in idle time and
 * their pages; I/Os drained synchronously and their pages, and the drains' own background waits. */
struct hbl_diag_waits {
    double fg_ios[4][2], wait_fg[4], wait_bg[4][2];
    double bg_ios[4][2], bg_pages[4][2];
    double drain_ios[4][2], drain_pages[4][2], drain_wait_bg[4];
};
struct hbl_diag_credit {
    uint64_t round, page;
    int32_t from;              /* the page's device at the decision */
    int32_t kind;              /* 0: a move (migrate()'s), 1: a read's promotion, 2: a write's placement
                                * (hindsight.h enum hbl_judged_kind) */
    uint32_t full;             /* bit d: device d was full then (hbl_judged.full) */
    uint32_t cold;             /* 1: judged as HBL_DIAG_COLD - k, a page of the fastest device */
    uint32_t victim_clean;     /* two devices: the fastest device's least recently used page then had a
                                * valid copy on the slow one (its eviction is free, no copy) */
    uint32_t horizon, accesses;
    uint64_t credited_at;      /* request count when the horizon ended (or the trace did: ended = 1) */
    int32_t ended;
    double cost[4];            /* device time of its accesses in the horizon, had it been on device d */
    double bg;                 /* hbl_background_share when credited */
    double benefit[4];         /* hbl_evalq_benefit(to = d, space NULL, bg) */
    double copy[4];            /* the copy to d before bg: hbl_copy_time(from, d), a read's only the write on d */
    double chain[4];           /* hbl_copy_time(d, d + 1): the copy down of the page a move onto a full d pushes off */
    double cost_next[4];       /* cost[] over the accesses until the next decision on the page: for a move the
                                * rest of the first round in which it is accessed again, for a read's promotion
                                * its next access (a read; a write counts nothing) */
    uint32_t accesses_next;
    double benefit_clean[4];   /* hbl_evalq_benefit as with harmonia's credit_clean=1: the page pushed off
                                * copied down only when it was dirty (results/diagnosis/credit.txt F2) */
    /* results/diagnosis/waits.txt: Σ over the accesses in the horizon (qwait) and until the next decision
     * (qwait_next) of device d's mean background wait per foreground I/O so far, at that access; the
     * replay's waits (struct hbl_diag_waits, below) and its synchronous waits at the decision */
    double qwait[4], qwait_next[4];
    double sync_wait_at;
    struct hbl_diag_waits waits_at;
    /* a write's placement (kind 2): cost[] split into the write itself (own), the later writes of
     * its page in the horizon (rewrite, counted in nrewrite) and its later reads (reread, nreread);
     * the write's pages; `clean` as hbl_judged.clean (bit d: the page a write onto a full d pushes
     * off had a valid copy below then) */
    double own[4], rewrite[4], reread[4];
    uint32_t nrewrite, nreread, npages, clean;
    double chain_measured[4];  /* chain[] as harmonia's credit_copy=1 charges it: hbl_measured_copy_time(d, d + 1) */
};
/* The judged decisions credited so far, and with ended = 1 those whose horizon had not passed when
 * the trace ended (credited with what they had): at most max into out; returns how many there are. */
uint64_t hbl_sim_diag_credits(const struct hbl_sim *s, struct hbl_diag_credit *out, uint64_t max);
/* The moves migrate() and reads asked for and made (after the flip), as (round, page, from, to), at
 * most max. */
struct hbl_diag_move { uint64_t round, page; int32_t from, to; };
uint64_t hbl_sim_diag_moves(const struct hbl_sim *s, struct hbl_diag_move *out, uint64_t max);
int32_t hbl_sim_diag_waits(const struct hbl_sim *s, struct hbl_diag_waits *out);
/* Pages drained synchronously in each span of migrate_every requests (index: request count /
 * migrate_every), at most max; returns how many spans there are. */
uint64_t hbl_sim_diag_drains(const struct hbl_sim *s, double *out, uint64_t max);

/* Policies with agents: save or load them (after hbl_sim_new, before feeding). */
int32_t hbl_sim_save_agents(const struct hbl_sim *s, const char *path, char *err, int32_t errlen);
int32_t hbl_sim_load_agents(struct hbl_sim *s, const char *path, char *err, int32_t errlen);
/* The n-th agent of the policy (0 = placement, 1 = migration), NULL if none. */
struct hbl_agent *hbl_sim_agent(const struct hbl_sim *s, int32_t i);
/* Train the policy's agents on a thread of their own (on = 1) or inline again
 * (on = 0, waits for the thread); for the live engine, where decisions must not
 * wait for training.  Runs with it on are not reproducible.  budget: the most of
 * one CPU the thread trains with (0 < budget < 1: it sleeps after each step in
 * proportion; otherwise no limit).  0 or -1 (err). */
int32_t hbl_sim_background_training(struct hbl_sim *s, int32_t on, double budget, char *err, int32_t errlen);

/* ---- Live mode: the simulator's policies deciding for a real device ----
 * Pages are extents.  The controller feeds requests it observed (latency_ns
 * measured), and the policy's choices come back as moves to carry out: the
 * table believes a move at once; a move that could not be done is put back
 * with hbl_live_put_back, and one the policy reverses before the controller
 * started it (before it took it, or while it waits in the controller's queue:
 * hbl_live_waiting) is undone as a put-back is.  No device model, no time of its own. */
struct hbl_sim *hbl_live_new(const struct hbl_sim_config *cfg, const char *policy,
                             const struct hbl_params *params, char *err, int32_t errlen);
/* Where extents are now (at start-up: every extent). -1 on a bad device. */
int32_t hbl_live_set_devices(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n);
/* Moves not done: the extents are still on devs (the policy is told the move was undone, as the
 * simulator's refused moves are: a read-admitted page keeps its place on the read list). */
int32_t hbl_live_put_back(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n);
/* Device the policy wants an extent on, -1 if never seen. */
int32_t hbl_live_device(const struct hbl_sim *s, uint64_t extent);
/* Extents whose device changed since the last call, oldest first (may repeat; a move undone before it
 * was started is there too, the extent's device where the controller has it).  The moves taken count
 * as started, and those hbl_live_waiting said were waiting are forgotten. */
uint64_t hbl_live_take_moves(struct hbl_sim *s, uint64_t *extents, uint64_t max);
/* Moves taken that wait in the controller's queue, not started, each extent on devs[i] there (the
 * whole queue, after each take): until the next hbl_live_take_moves, the policy moving one of them
 * back to devs[i] undoes its move (the policy told, as by hbl_live_put_back), and the extent is
 * taken again, so the controller drops the move.  -1 on a bad device, an extent never seen, or
 * out of memory (then none waits). */
int32_t hbl_live_waiting(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n);

/* ---- Live records: a poll's records sorted out in one pass (the live controller's reading) ----
 * Records on log_device are requests (logical offsets, queued); on member_device[i], member i's I/O
 * (completed, latency_ns > 0 when known); on any other device, nothing of either.  Every array is the
 * caller's, sized for what it holds plus every record of the call; the counts say how much is used. */
struct hbl_rec_notes {
    uint32_t log_device;
    int32_t nmembers;
    uint32_t member_device[HBL_MAX_DEVICES];
    uint64_t extent_bytes;
    uint64_t nextents;
    uint8_t *written;          /* per extent: 1 once written (a first write is one to an extent at 0) */
    /* HBL_REC_WRITES: the member writes of the call: member, offset, length, completed ns, pid */
    int64_t *w_dev, *w_off, *w_len, *w_done, *w_pid;
    uint64_t w_n;
    /* HBL_REC_HELD: the extents of the call's logical writes (length > 0): first, last */
    int64_t *h_first, *h_last;
    uint64_t h_n;
    /* HBL_REC_NOTE, kept for hbl_rec_observe: the requests (read or write, length > 0, within the
     * extents), their first and last extent, whether a write, whether a first write */
    struct hbl_request *p_req;
    int64_t *p_first, *p_last;
    uint8_t *p_write, *p_first_write;
    uint64_t p_n;
    uint64_t records;          /* records noted since the counts were cleared, all of them */
    uint64_t members;          /* of which not on log_device */
    int64_t *lat_n, *lat_sum;  /* [member * 2 + op]: the members' completions with a latency, and its sum */
};
enum { HBL_REC_NOTE = 1, HBL_REC_WRITES = 2, HBL_REC_HELD = 4 };
/* One call a poll: what `what` asks of the records r[0..n), appended (NOTE) or in place of the
 * last call's (WRITES, HELD).  NOTE sets the written flags, first writes as before the call. */
void hbl_rec_note(struct hbl_rec_notes *s, const struct hbl_request *r, uint64_t n, int32_t what);
/* What the requests noted come to (NOTE), the counts cleared by the caller. */
struct hbl_rec_counts {
    int64_t reads, writes, fast_hits, read_pages, fast_read_pages, write_pages, fast_write_pages;
    uint64_t newest_ns;
};
/* The requests noted observed: each one's latency_ns set to lat[dev[first] * 2 + op] (its member's
 * now), heat[first] += 1, rw[first * 2 + write] += 1, the counts added to *out (a page read or
 * written is fast on device 0, dev per extent). */
void hbl_rec_observe(struct hbl_rec_notes *s, const int8_t *dev, const double *lat, float *heat, uint32_t *rw,
                     struct hbl_rec_counts *out);
/* The records' parts that requests in flight are tracked by: requests on log_device (read or
 * write, length > 0): time, offset, first extent, appended at q[*qn]; member completions (latency
 * > 0): member, offset, length, at c[*cn].  Returns how many records are not on log_device. */
uint64_t hbl_rec_track(const struct hbl_rec_notes *s, const struct hbl_request *r, uint64_t n,
                       int64_t *q_t, int64_t *q_off, int64_t *q_first, uint64_t *qn,
                       int64_t *c_dev, int64_t *c_off, int64_t *c_len, uint64_t *cn);

/* Python plugin policies (policy "python"): implemented in hbl/sim/plugin.py. */
#if HBL_CDEF
extern "Python+C" void hbl_py_place(void *plugin, const struct hbl_request *req,
                                    const uint32_t *slots, int32_t n, int8_t *targets);
extern "Python+C" int32_t hbl_py_migrate(void *plugin, uint32_t *slots, int8_t *targets, int32_t max);
#else
void hbl_py_place(void *plugin, const struct hbl_request *req,
                  const uint32_t *slots, int32_t n, int8_t *targets);
int32_t hbl_py_migrate(void *plugin, uint32_t *slots, int8_t *targets, int32_t max);
#endif

#endif
