/* Read admission beside harmonia's agents (its read_admit setting): what happens to the pages of
 * a read that the placement agent does not place.  Rules 1 and 2 always promote (2 only pages at
 * least as frequent as the eviction victim while the fastest device is full); rule 3 learns, per
 * run, whether to promote at all, by regret minimisation between two experts after LeCaR
 * (Vietri et al., HotStorage'18): "stay" (leave the pages where they are) and "promote"; rule 4
 * is rule 3 with its regrets in device time; rules 5 and 6 promote where promoting read misses of
 * as many accesses (5) or as long since the last (6) has paid, judged in hindsight (admit.c).
 * Rule 7 promotes every read miss, but only into free space or in place of a page read admission
 * promoted, and those pages leave the fastest device first (admit_list.c); rule 8 is rule 7 with
 * rule 6's judgment deciding each promotion; rule 9 is rule 8 with those pages shown to the agents
 * as free space (hbl_admit_spare). */
#ifndef HBL_ADMIT_H
#define HBL_ADMIT_H
#include "hbl_internal.h"
#include "hindsight.h"
#include "cachelist.h"

struct hbl_admit {
    int rule;                   /* 0 off, 1-9 (admit.c, admit_list.c) */
    double w_promote;           /* rule 3: the promote expert's weight (stay's is 1 - it) */
    double lambda, discount;    /* LeCaR's learning rate and per-request discount */
    double unit;                /* rules 4-6: a page read on the slowest device less one on the fastest (ns) */
    uint64_t rng;
    /* rule 3's two histories of regrettable decisions, FIFO rings of (slot, request index) of the
     * fastest device's capacity: pages a read left below it, and pages a promotion evicted */
    struct { uint32_t *slot; uint64_t *at; uint32_t n, head; } hist[2];
    uint64_t *tag;              /* per slot: 0 none, else request index + 1 and the history in bit 63 */
    uint32_t ntag;
    uint64_t promoted, stayed, regrets[2];
    /* rules 5 and 6: read misses judged in hindsight (the queue tags pages in pt.aux64) */
    struct hbl_evalq q;
    double credit[34], credited[34];   /* mean credit of promoting a read miss, by log2 of its access count
                                          (rule 5) or of its access interval (6, 33: a first access) */
    double space[2];                   /* what a full fastest device's page saves by staying; how many judged */
    int resident;                      /* harmonia's credit_resident: a promotion credited while its page stays */
    /* rules 7-9: the pages read admission promoted on the fastest device, least recently used
     * at the tail (admit_list.c), and per slot its flags there */
    struct hbl_links links;
    struct hbl_list reads;
    uint8_t *flag;
    uint32_t nflag;
};

/* 0 or -1 with err filled (an unknown rule, out of memory). */
int hbl_admit_init(struct hbl_admit *a, struct hbl_sim *s, int rule, char *err, int errlen);
void hbl_admit_free(struct hbl_admit *a);
/* A read's pages not placed (targets[i] < 0) below the fastest device: targets set to 0 where admitted. */
void hbl_admit_read(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int8_t *targets);
/* Every request, before its placement: rules 3 and 4's regrets (an access to a page in a history;
 * rule 4: a read only); rules 5, 6, 8 and 9's credits whose horizon has passed; rules 7-9's list. */
void hbl_admit_observe(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int write);
/* Every request, once served: rule 5's queued decisions charged with its cost on each device. */
void hbl_admit_served(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int write);
/* Rules 5, 6, 8 and 9 judge in hindsight: their queue tags pages in pt.aux64. */
static inline int hbl_admit_judges(const struct hbl_admit *a) { return a->q.e != NULL; }

/* A page changed device (the policy's on_move), under credit_resident=1: a read miss under judgment
 * whose page leaves the fastest device (a move not undone) is credited with the accesses it had there,
 * its evaluation over (hbl_evalq_left); that move undone, it goes on. */
void hbl_admit_resident(struct hbl_admit *a, struct hbl_sim *s, uint32_t slot, int from, int to, int undone);

/* ---- rules 7-9 (admit_list.c) ---- */
/* A page changed device (the policy's on_move): the read list follows the fastest device (a listed
 * page's move off it undone: listed again). */
void hbl_admit_moved(struct hbl_admit *a, uint32_t slot, int from, int to, int undone);
/* Which page leaves device dev for room (the policy's victim()): on the fastest device, the read
 * list's least recently used page while there is one; else HBL_NONE (the policy's own order). */
uint32_t hbl_admit_victim(struct hbl_admit *a, const struct hbl_sim *s, int dev);
/* Pages of the fastest device the agents are to count as free: rule 9's read list (those pages
 * leave first whenever anything needs room); 0 under every other rule. */
static inline int64_t hbl_admit_spare(const struct hbl_admit *a)
{
    return a->rule == 9 ? (int64_t)a->reads.n : 0;
}
/* Used by admit.c: */
void hbl_admit_list_init(struct hbl_admit *a);
void hbl_admit_list_free(struct hbl_admit *a);
/* Before placement: a read moves its listed pages to the head, a write takes them off. */
void hbl_admit_list_touch(struct hbl_admit *a, const uint32_t *slots, int n, int write);
/* Pages a read may promote: the fastest device's free pages and the listed pages not in the read. */
int64_t hbl_admit_list_room(const struct hbl_admit *a, const struct hbl_sim *s, const uint32_t *slots, int n);
/* Page x is promoted by read admission (listed once it has moved); 0 when out of memory. */
int hbl_admit_list_promote(struct hbl_admit *a, uint32_t x);
/* Once served: a promotion not carried out (refused) is forgotten. */
void hbl_admit_list_served(struct hbl_admit *a, const uint32_t *slots, int n);

#endif
