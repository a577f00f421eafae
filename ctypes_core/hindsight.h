/*
 * Hindsight credit: an evaluation queue of decisions on pages (after Pythia,
 * Bera et al., MICRO'21), each credited when its horizon has passed with the
 * device time every alternative would have cost, from the page's own accesses
 * in that horizon.
 *
 * In closed-loop replay the requests a page receives do not depend on where it
 * is, so once a decision's horizon is over the cost of every action is known,
 * not only the taken one's: a decision is credited with a difference reward
 * (Wolpert and Tumer) per action, against a default action (leave the page
 * where it is; for a write, put it on the slowest device).  Nothing here knows
 * what an agent is; the agents (rl.c) turn the benefits into transitions.
 */
#ifndef HBL_HINDSIGHT_H
#define HBL_HINDSIGHT_H
#include "hbl_internal.h"

#define HBL_MAX_HORIZON 32768   /* hindsight horizons (horizon, m_horizon), requests */

/* What acting on a decision costs besides the page's accesses. */
enum hbl_judged_kind {
    HBL_JUDGE_MOVE,     /* a migration: the page is read from its device and written to the new one */
    HBL_JUDGE_READ,     /* a read that may move its page: the data is at hand, only the write is paid */
    HBL_JUDGE_WRITE,    /* a write's placement: no copy; the default is the slowest device */
};

struct hbl_judged {
    uint32_t slot;
    int8_t from;              /* the page's device when decided (the default action) */
    uint8_t kind;             /* enum hbl_judged_kind */
    uint8_t full;             /* bit d: device d was full when decided (7/8 or more used) */
    uint8_t clean;            /* bit d: the page a move onto d pushes off then had a valid copy on d + 1,
                               * its eviction free (sim_move.c); recorded only by a queue with clean_credit */
    uint8_t live;
    uint8_t gone;             /* its page left the device the decision put it on: accesses no longer counted */
    uint8_t mark;             /* the queue's user's: what kind of candidate it was */
    uint8_t skip;             /* accesses not to count: the deciding read itself */
    uint8_t s[16];            /* the state the decision was taken in */
    uint64_t due;             /* request index at which the horizon ends */
    uint64_t queued_due;      /* due when the entry took its place in the FIFO */
    uint64_t last_due;        /* the latest the horizon may end */
    uint32_t horizon;
    double cost[4];           /* device time of the page's accesses in the horizon, had it been on device d */
    uint32_t accesses;
    uint8_t measured_copy;    /* its queue's measured_copy when queued */
    uint64_t born;            /* the request it was decided at (s->nreq) */
};

#define HBL_EVAL_SPAN 4

struct hbl_evalq {
    struct hbl_judged *e;
    uint32_t cap, head, n;    /* a FIFO: decisions leave in the order they were taken */
    uint8_t nstate;
    uint8_t tag64;            /* the page table field that tags a page under evaluation: aux64, or decision */
    uint8_t clean_credit;     /* 1: record hbl_judged.clean (the push-off copy charged only for a dirty page) */
    uint8_t measured_copy;    /* 1: copies charged at hbl_measured_copy_time, not hbl_copy_time (harmonia's
                               * credit_copy; results/diagnosis/write-credit.txt) */
    uint8_t end_next;         /* 1: a decision's evaluation ends at its page's next placement decision: a new
                               * decision queued on it, or a later write to it (a write places its pages again),
                               * that access not counted (it is the next decision's); harmonia's credit_next,
                               * results/diagnosis/write-credit-next.txt */
};

int hbl_evalq_init(struct hbl_evalq *q, uint32_t cap, int nstate, int tag64);
void hbl_evalq_free(struct hbl_evalq *q);
/* A decision on page `slot` taken in `state`, credited with the page's accesses for as long as
 * a page that had moved would stay: until `horizon` requests pass without an access (LRU
 * residency; the first access of an HBL_JUDGE_READ, the deciding read, not counted), at most
 * HBL_EVAL_SPAN horizons; `mark` is the caller's.  A page already under evaluation is not queued again (its first decision keeps
 * its accesses), unless its page left (hbl_evalq_left) or the queue has end_next (the first decision's evaluation
 * ends here); nor is one when the queue is full. */
void hbl_evalq_push(struct hbl_evalq *q, struct hbl_sim *s, uint32_t slot, const uint8_t *state,
                    enum hbl_judged_kind kind, int mark, uint32_t horizon);
/* A request served: credit the decisions on its pages with what it costs on each device (end_next: a
 * write ends the evaluations on its pages decided before this request instead). */
void hbl_evalq_observe(struct hbl_evalq *q, struct hbl_sim *s, const uint32_t *slots, int n, int write);
/* The page of a live decision of `kind` left the device it was put on (back 0: harmonia's
 * credit_resident): the decision's evaluation ends there, credited with the accesses it had, and it
 * leaves the queue once it is at its head; a new decision on the page may be queued meanwhile.  back
 * 1: that move was undone (the page never left): the evaluation goes on. */
void hbl_evalq_left(struct hbl_evalq *q, struct hbl_sim *s, uint32_t slot, enum hbl_judged_kind kind, int back);
/* The oldest decision whose horizon has passed or whose page left, or NULL; valid until the next call. */
const struct hbl_judged *hbl_evalq_pop_due(struct hbl_evalq *q, struct hbl_sim *s);
/* Device time taking action `to` saved over the default's, in the horizon (negative: it cost
 * more), what acting costs included: a copy's device time times `bg`, the foreground time one
 * unit of background work takes; space[d] is the value of one page of device d when it is
 * full (NULL: none), and a page pushed off a full device is also copied down, unless the
 * entry recorded it clean (hbl_judged.clean: its eviction a remap). */
double hbl_evalq_benefit(const struct hbl_sim *s, const struct hbl_judged *e, int to, const double *space,
                         double bg);
/* The foreground time one unit of background device time has cost so far: the time requests
 * waited behind background I/O or for evictions made synchronous, over the background busy time. */
double hbl_background_share(const struct hbl_sim *s);
/* Device time of one page of an n-page request on device p (reads or writes). */
double hbl_page_time(const struct hbl_device_params *p, int write, int n, uint32_t page_size);
/* Device time of a background copy of one page from device `from` to device `to` (a read there,
 * a write here), before the background share. */
double hbl_copy_time(const struct hbl_sim *s, int from, int to);
/* The device time a page of background I/O (copies, evictions; queued in idle time or drained) has
 * taken on device `from` and on device `to` so far in this run, each device's busy time on it over
 * its pages (the queues serve an HDD's in LBA order and merge runs, so a copy seldom pays a whole
 * seek and rotation); a device that served none yet: hbl_copy_time's part. */
double hbl_measured_copy_time(const struct hbl_sim *s, int from, int to);
/* Service time of one page read on the fastest device: the agents' rewards are this over a latency. */
double hbl_reference_latency(const struct hbl_sim *s);
/* Hindsight credits are in this unit: the device time saved by one page read moved from the
 * slowest device to the fastest (hbl_reference_latency when that is not positive). */
double hbl_hindsight_unit(const struct hbl_sim *s);
/* How long a page stays on the fastest device unaccessed before the LRU order pushes it off: the
 * age of its least recently used page (the characteristic time of Che's approximation), within
 * [migrate_every, HBL_MAX_HORIZON].  A move's effect lasts about that long, so it is the horizon
 * of its credit (horizon 0). */
uint32_t hbl_characteristic_time(const struct hbl_sim *s);

#endif
