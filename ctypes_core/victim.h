/* The order in which harmonia pushes pages off its full fastest device (its victim setting):
 * 0 the simulator's least recently used page (every policy's fallback); 1 SLRU (Karedla, Love &
 * Wherry, "Caching strategies to improve disk system performance", IEEE Computer 27(3), 1994):
 * a page arriving on the fastest device is probationary; accessed again while there, it is
 * protected (at most 80% of the device's pages); the probationary segment's least recently used
 * page goes first, the protected segment's only when none is left (victim.c); 2 as 1, but only
 * a read protects a page (a write moves a probationary page to its segment's head); 3 2Q's full
 * version (Johnson & Shasha, VLDB 1994: A1in a FIFO, A1out its ghosts, Am LRU).  Slower devices
 * keep LRU.  Told of every move (hbl_victim_moved) and access (hbl_victim_touch), as read
 * admission's list is (admit_list.c). */
#ifndef HBL_VICTIM_H
#define HBL_VICTIM_H
#include "hbl_internal.h"
#include "cachelist.h"

struct hbl_victim {
    int order;                  /* 0 LRU (nothing kept), 1 SLRU, 2 SLRU protecting on reads, 3 2Q */
    int serving;                /* between place() and observe(): an arrival now is the request's own */
    int64_t protect_max;        /* the protected segment's size bound, in pages */
    int64_t kin, kout;          /* order 3: A1in's share before Am gives victims, A1out's bound */
    struct hbl_links links;     /* both segments, linked through arrays per slot (cachelist.h) */
    struct hbl_list probe, keep; /* probationary and protected (2Q: A1in, Am), most recent at the head */
    struct hbl_list ghost;      /* order 3: A1out, pages that left from A1in (off the device) */
    uint8_t *flag;              /* per slot: its segment, and where it was when it left */
    uint32_t *arrived;          /* per slot: the request index + 1 it arrived in while serving, else 0 */
    uint32_t nflag;
};

/* 0 or -1 with err filled (order not 0-3, a fastest device of no pages). */
int hbl_victim_init(struct hbl_victim *o, const struct hbl_sim *s, double order, char *err, int errlen);
void hbl_victim_free(struct hbl_victim *o);
/* A request's start (place) and end (observe, after it is served): its pages accessed (write: by a write). */
static inline void hbl_victim_begin(struct hbl_victim *o) { o->serving = 1; }
void hbl_victim_touch(struct hbl_victim *o, const struct hbl_sim *s, const uint32_t *slots, int n, int write);
/* Page slot moved from `from` to `to` (-1: never placed); undone: a move off it not carried out. */
void hbl_victim_moved(struct hbl_victim *o, const struct hbl_sim *s, uint32_t slot, int from, int to, int undone);
/* The page to push off dev when it is full. */
uint32_t hbl_victim_pick(struct hbl_victim *o, const struct hbl_sim *s, int dev);

#endif
