/* Read admission beside harmonia's agents (its read_admit setting): what happens to the pages of
 * a read that the placement agent does not place.  Rules 1 and 2 always promote (2 only pages at
 * least as frequent as the eviction victim while the fastest device is full); rule 3 learns, per
 * run, whether to promote at all, by regret minimisation between two experts after LeCaR
 * (Vietri et al., HotStorage'18): "stay" (leave the pages where they are) and "promote"; rule 4
 * is rule 3 with its regrets in device time (admit.c). */
#ifndef HBL_ADMIT_H
#define HBL_ADMIT_H
#include "hbl_internal.h"

struct hbl_admit {
    int rule;                   /* 0 off, 1, 2, 3 (admit.c) */
    double w_promote;           /* rule 3: the promote expert's weight (stay's is 1 - it) */
    double lambda, discount;    /* LeCaR's learning rate and per-request discount */
    double unit;                /* rule 4's regrets: a page read on the slowest device less one on the fastest (ns) */
    uint64_t rng;
    /* rule 3's two histories of regrettable decisions, FIFO rings of (slot, request index) of the
     * fastest device's capacity: pages a read left below it, and pages a promotion evicted */
    struct { uint32_t *slot; uint64_t *at; uint32_t n, head; } hist[2];
    uint64_t *tag;              /* per slot: 0 none, else request index + 1 and the history in bit 63 */
    uint32_t ntag;
    uint64_t promoted, stayed, regrets[2];
};

/* 0 or -1 with err filled (an unknown rule, out of memory). */
int hbl_admit_init(struct hbl_admit *a, struct hbl_sim *s, int rule, char *err, int errlen);
void hbl_admit_free(struct hbl_admit *a);
/* A read's pages not placed (targets[i] < 0) below the fastest device: targets set to 0 where admitted. */
void hbl_admit_read(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int8_t *targets);
/* Every request, before its placement: rules 3 and 4's regrets (an access to a page in a history;
 * rule 4: a read only). */
void hbl_admit_observe(struct hbl_admit *a, struct hbl_sim *s, const uint32_t *slots, int n, int write);

#endif
