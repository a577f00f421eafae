/*
 * Internals of the agent core shared by the simulator and the policies.
 * Nothing here crosses into Python; see hbl_api.h for that.
 *
 * The C files in layers, lowest first; a file calls only into its own layer
 * (in the order given) or lower ones, so no two files call each other:
 *   1. pagetable.c, hist.c, params.c, nn.c, hindsight.c, cachelist.c: no other file
 *   2. tracestats.c: trace footprint and reuse distances (pagetable)
 *   3. the learning agent (agent_internal.h): agent.c, agent_decide.c,
 *      agent_train.c, agent_bench.c, agent_file.c (nn)
 *   4. teacher.c: a teacher's labels (pagetable); rl.c: state features, placement agent, migration
 *      agent (agent, hindsight, params, teacher)
 *   5. policies/: one file per policy (rl, nn, cachelist, pagetable, params)
 *   6. registry.c: the policy table, by name (the policies' ops tables)
 *   7. the simulator (sim_internal.h): sim_device.c, sim_move.c, sim_stats.c,
 *      sim_agents.c, sim_diag.c, sim.c, sim_live.c (registry, agent, hist, pagetable,
 *      params, hindsight)
 *   8. policy_defaults.c: each policy's parameter defaults (simulator, registry, params)
 * A policy sees the simulator only as struct hbl_sim and the helpers below;
 * the simulator calls a policy only through its struct hbl_policy_ops.
 */
#ifndef HBL_INTERNAL_H
#define HBL_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "hbl_api.h"

#define HBL_NONE UINT32_MAX   /* no slot */
#define HBL_UNPLACED (-1)     /* page seen but holding no data yet */
#define HBL_NEVER UINT64_MAX  /* "no such time" for last migration, next use */

/* Page table: page number -> dense slot, and per-slot state (structure of arrays). */
struct hbl_pagetable {
    uint64_t *keys;      /* open addressing, page number + 1, 0 = empty */
    uint32_t *vals;
    uint64_t mask;       /* hash capacity - 1 */
    uint32_t n, cap;     /* slots used / allocated */
    uint64_t *page;      /* slot -> page number */
    int8_t *dev;         /* current device or HBL_UNPLACED */
    uint32_t *count;     /* accesses */
    uint64_t *last;      /* request index of the last access */
    uint64_t *last_mig;  /* request index of the last migration, HBL_NEVER if none */
    uint32_t *prev, *next; /* per-device LRU list links */
    uint8_t *home_copy;  /* 1: the slowest device still holds a valid copy (promoted, not rewritten) */
    uint8_t *written;    /* 1: written at least once (batch_moves moves a page never written with no copy) */
    uint64_t *aux64;     /* scratch owned by the active policy */
    uint32_t *aux32;
    uint32_t *decision;  /* the placement agent's decision awaiting this page's next access (index + 1), 0 = none */
    uint8_t *unread;     /* promotions of this page since its last read (<= devices - 1: a move down clears it) */
    /* the copy arrays, kept only after hbl_pt_track_copies (the simulator's serve_after_copy, batch_moves;
     * live mode) */
    int copies;
    int8_t *copy_from;   /* serve_after_copy: the device a moved page's data is still read from, -1 = none;
                          * live: where the controller has a page whose move it has not started yet
                          * (not taken yet, or waiting in its queue: hbl_live_waiting) */
    uint16_t *copy_ios;  /* ... its copy's background I/Os not yet started */
    double *copy_done;   /* ... when the started ones complete (ns) */
    uint32_t *queued;    /* batch_moves: the page's place in the move queue + 1, 0 = not queued;
                          * live: 1 while the page is in the queue hbl_live_take_moves takes from */
};

int hbl_pt_init(struct hbl_pagetable *pt, uint32_t cap);
/* Keep the copy arrays (copy_from and its kin) from now on; -1 when out of memory. */
int hbl_pt_track_copies(struct hbl_pagetable *pt);
void hbl_pt_free(struct hbl_pagetable *pt);
/* Slot of a page, creating it (device HBL_UNPLACED) when new; HBL_NONE on allocation failure. */
uint32_t hbl_pt_get(struct hbl_pagetable *pt, uint64_t page);
/* Slot of a page or HBL_NONE, never creating. */
uint32_t hbl_pt_find(const struct hbl_pagetable *pt, uint64_t page);

static inline uint64_t hbl_hash64(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* qsort order for (score << 32 | slot) keys: highest score first. */
static inline int hbl_cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* Log-linear latency histogram: about 1.5% resolution from 1 ns to hours. */
#define HBL_HIST_SUB 64
#define HBL_HIST_BUCKETS (58 * HBL_HIST_SUB + 2 * HBL_HIST_SUB)
struct hbl_hist { uint64_t n, min, max; uint64_t b[HBL_HIST_BUCKETS]; };
void hbl_hist_add(struct hbl_hist *h, uint64_t v);
double hbl_hist_percentile(const struct hbl_hist *h, double q);

/* Named parameter lookup with a default. */
double hbl_param(const struct hbl_params *p, const char *key, double dflt);
/* One parameter a policy accepts (--param NAME=VALUE) and what it means, in one line. */
/* whole: 1 when the policy keeps the parameter in an integer, so that a fraction would be cut without a
 * word: hbl_params_check refuses one.  A row without it (0) takes any finite number. */
struct hbl_param_doc { const char *name, *doc; int whole; };
/* 0 when every key of p is named in `known` (ended by a NULL name), else -1 and a message. */
int hbl_params_check(const struct hbl_params *p, const struct hbl_param_doc *known, char *err, int errlen);
/* While names is not NULL, hbl_param() stores the default of names[j].name in values[j], known[j] = 1. */
void hbl_params_record(const struct hbl_param_doc *names, double *values, uint8_t *known, int max);

struct hbl_sim;

/*
 * One interface for every policy.  A policy is one file that fills this table;
 * registry.c maps its name to it.  Callbacks left NULL fall back to defaults.
 */
struct hbl_policy_ops {
    const char *name;
    const char *doc;
    uint32_t flags;              /* capabilities: enum hbl_policy_flag */
    const struct hbl_param_doc *params;   /* accepted parameters, ended by a NULL name */
    int (*init)(struct hbl_sim *s, void **state, const struct hbl_params *p, char *err, int errlen);
    void (*free)(void *state);
    /* Before a request is served: fill targets[i] with the device wanted for page
     * slots[i], or leave -1 for "where it is" (for unplaced pages: the default). */
    void (*place)(void *st, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets);
    /* After a request is served, with its latency. */
    void (*observe)(void *st, struct hbl_sim *s, const struct hbl_request *r,
                    const uint32_t *slots, int n, double latency_ns);
    /* Every migrate_every requests: up to max moves (slot, target device). */
    int (*migrate)(void *st, struct hbl_sim *s, uint32_t *slots, int8_t *targets, int max);
    /* A page changed device (placement, migration or eviction); from may be HBL_UNPLACED.  undone:
     * the page is back where its data is, a move asked before not carried out (batch_moves: refused,
     * or asked back before it was taken). */
    void (*on_move)(void *st, struct hbl_sim *s, uint32_t slot, int from, int to, int undone);
    /* Device dev is full: which page leaves it.  NULL = least recently used. */
    uint32_t (*victim)(void *st, struct hbl_sim *s, int dev);
    /* Where that victim goes: a device slower than dev.  NULL = the next one (dev + 1). */
    int (*evict_to)(void *st, struct hbl_sim *s, uint32_t slot, int dev);
    /* Learning policies: their agents (up to 4), for saving and loading. */
    int (*agents)(void *st, struct hbl_agent **out);
    /* Future knowledge (Oracle). */
    int (*set_future)(void *st, struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n);
    /* Demonstrations from a teacher (teacher.h): the name of a non-learning policy the simulator
     * runs beside this one, fed the same requests (hbl_sim.teacher), or NULL for none.  Asked once,
     * after init. */
    const char *(*teacher)(void *st);
};

const struct hbl_policy_ops *hbl_policy_find(const char *name);
/* The i-th policy of the table (the order of hbl_policy_name), or NULL. */
const struct hbl_policy_ops *hbl_policy_at(int32_t i);


struct hbl_bgop { uint64_t page; uint32_t npages; uint8_t write; };
#define HBL_BG_MAX_RUN 256   /* pages one merged background I/O may cover */

/* batch_moves (sim_batch.c): a move the policy asked for, waiting for a batch */
struct hbl_qmove {
    uint64_t page; double seen;
    uint64_t seq;         /* the order asked, kept while queued (a second ask keeps its place) */
    int8_t from; uint8_t read;
    uint8_t fresh;        /* asked since the last batch was taken: seen is that batch's time */
    uint8_t own;          /* a remap the controller asks itself (the write frontier): first, never stale */
};
#define HBL_BATCH_MAX 64      /* batch_moves at most */
#define HBL_CARRIED_KEPT 16   /* full batches the rate is measured over (hbl/live/moves.py CARRIED_KEPT) */

struct hbl_sim {
    struct hbl_sim_config cfg;
    struct hbl_pagetable pt;
    const struct hbl_policy_ops *ops;
    void *pstate;
    void *plugin;
    int initial_dev;            /* where pre-existing (first read) data lives */
    /* device model */
    double free_at[4];          /* when the device can start its next I/O */
    double fg_done[4];          /* latest completion of a foreground I/O: idle since then */
    uint64_t head[4];           /* HDD: page after the last I/O (the head's position) */
    uint64_t stream[4][HBL_MAX_STREAMS]; /* HDD: page after the end of each followed read stream */
    uint32_t stream_rr[4];
    /* background I/O: a bounded queue per device */
    struct hbl_bgop *bgq[4];
    uint32_t nbg[4], bgcap[4];
    uint8_t bg_last[4];         /* the device's latest I/O was background (1 + its write flag) */
    uint64_t bgpages[4];
    double bg_done_pages[4];   /* pages of background I/O served per device (started or drained): hindsight.c */
    double bg_next[4];          /* rate limit: earliest start of the next background I/O */
    double sync_done;           /* synchronous evictions of the current request complete here */
    uint32_t lru_head[4], lru_tail[4]; /* head = most recent */
    int64_t used[4];
    /* replay */
    uint64_t nreq;              /* requests processed (served + skipped) */
    uint64_t t0_ns; int have_t0;
    double last_arrival;
    double *inflight; int ninflight; /* closed loop: min-heap of completion times */
    /* scratch for one request */
    uint32_t *slots; int8_t *targets; uint32_t scratch_cap;
    uint32_t *mslots; int8_t *mtargets;
    /* metrics */
    struct hbl_sim_stats st;
    struct hbl_hist hist;
    uint64_t win_req, win_rpages, win_rhits; double win_lat;
    struct hbl_timeline_row *tl; uint64_t ntl, tlcap;
    /* live mode (hbl_live_*): no device model; latencies are measured, and moves
     * are queued for the controller to carry out instead of being charged here */
    int live;
    uint64_t *mq; uint64_t nmq, mqcap;   /* queued moves: page numbers */
    uint64_t *wq; uint64_t nwq, wqcap;   /* taken moves the controller has not started (hbl_live_waiting) */
    /* batch_moves: the live controller's migration queue and its batch in flight (sim_batch.c) */
    struct hbl_qmove *bq; uint32_t nbq, bqcap; uint64_t asks;
    uint64_t batch[HBL_BATCH_MAX]; uint8_t batch_left[HBL_BATCH_MAX]; int8_t batch_to[HBL_BATCH_MAX];
    struct hbl_qmove *later; uint32_t nlater, latercap;   /* moves asked for the batch's pages while it runs */
    uint32_t nbatch, batch_ios;          /* the batch's pages; its copy I/Os not yet started */
    double batch_start, batch_end;       /* batch_start < 0: no batch yet */
    double carried_moves[HBL_CARRIED_KEPT], carried_ns[HBL_CARRIED_KEPT]; uint32_t ncarried;
    struct hbl_trainer *trainer;         /* background training thread, or NULL */
    struct hbl_diag *diag;               /* diagnostics (sim_diag.c), or NULL */
    struct hbl_sim *teacher;             /* the policy's teacher (ops->teacher), fed each request before this
                                          * simulation serves it; NULL: none.  Policies only read its state */
};

/* Helpers policies may use. */
static inline int64_t hbl_free_pages(const struct hbl_sim *s, int d)
{
    int64_t cap = s->cfg.dev[d].capacity_pages;
    return cap < 0 ? INT64_MAX : cap - s->used[d];
}
static inline int hbl_slowest(const struct hbl_sim *s) { return s->cfg.ndev - 1; }
/* Pages of a request: 0 when the request is not simulated (flush, discard, empty). */
static inline uint32_t hbl_req_pages(const struct hbl_request *r, uint32_t ps, uint64_t *first)
{
    if ((r->op != HBL_OP_READ && r->op != HBL_OP_WRITE) || r->length == 0)
        return 0;
    *first = r->offset / ps;
    return (uint32_t)((r->offset + r->length - 1) / ps - *first + 1);
}

#endif
