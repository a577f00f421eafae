/* Read admission beside harmonia's agents (its read_admit setting): what happens to the pages of
 * a read that the placement agent does not place.  Rules 1 and 2 always promote (2 only pages at
 * least as frequent as the eviction victim while the fastest device is full); rule 3 learns, per
 * run, whether to promote at all, by regret minimisation between two experts after LeCaR
 * (Vietri et al., HotStorage'18): "stay" (leave the pages where they are) and "promote"; rule 4
 * is rule 3 with its regrets in device time; rules 5 and 6 promote where promoting read misses of
 * as many accesses (5) or as long since the last (6) has paid, judged in hindsight (admit.c). */
#ifndef HBL_ADMIT_H
#define HBL_ADMIT_H
#include "hbl_internal.h"
#include "hindsight.h"

struct hbl_admit {
    int rule;                   /* 0 off, 1, 2, 3 (admit.c) */
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
};

/* 0 or -1 with err filled (an unknown rule, out of memory).  Rule 5 uses pt.aux64. */
int hbl_admit_init(struct hbl_admit *a, struct hbl_sim *s, int rule, char *err, int errlen);
void hbl_admit_free(struct hbl_admit *a);
/* A read's pages not placed (targets[i] < 0) below the fastest device: targets set to 0 where admitted. */
void hbl_admit_read(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int8_t *targets);
/* Every request, before its placement: rules 3 and 4's regrets (an access to a page in a history;
 * rule 4: a read only); rule 5's credits whose horizon has passed. */
void hbl_admit_observe(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int write);
/* Every request, once served: rule 5's queued decisions charged with its cost on each device. */
void hbl_admit_served(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int write);

#endif
