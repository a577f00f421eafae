/* SLRU as harmonia's victim order on the fastest device (victim.h; Karedla, Love & Wherry, IEEE
 * Computer 27(3), 1994).  Every page on the fastest device is on one of two lists of this module's
 * own, linked through arrays per slot as the cache policies' are (cachelist.h): probationary (it
 * arrived and has not been accessed since) and protected (accessed again while there), each most
 * recently used at the head.  The access that brings a page there (a write placed there, a read
 * promoted) is not a second access: an arrival while a request is served is stamped with it.  An
 * access of a protected page moves it to the head; the protected segment holds at most 80% of the
 * device's pages, its least recently used one going back to the probationary head when it
 * overflows (SLRU's demotion; without it, a protected set once full would never change).  A page
 * leaves its list when it leaves the fastest device; a move off it undone before it is carried out
 * (batch_moves: an eviction refused, the page asked back) puts it back where it was, at the tail,
 * as admit_list.c does.  Out of memory, a page is not listed and goes only when both lists are
 * empty (the simulator's LRU).  Order 2 (results/pretrain/victim.txt V3) protects a page only when
 * it is read: a write of a probationary page moves it to that segment's head, so write-only
 * traffic (an fsynced log, each page written twice by consecutive records) is ordered as by LRU.
 * Order 3 is 2Q's full version (Johnson & Shasha, VLDB 1994; results/pretrain/victim.txt V5), on
 * the same lists: probationary is A1in (a FIFO: an access there is correlated and moves nothing),
 * protected is Am (LRU, unbounded), and a third list, A1out, remembers the pages that left the
 * device from A1in (page numbers only, at most KOUT_SHARE of the device's pages).  A page accessed
 * while in A1out enters Am when it is on the device again (at once if that access brings it); the
 * victim is A1in's oldest while A1in holds more than KIN_SHARE of the device's pages, else Am's
 * least recently used. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "victim.h"

#define PROBE 1u    /* on the probationary list */
#define KEEP 2u     /* on the protected list */
#define LEFT_PROBE 4u   /* was probationary when it left: back there if that move is undone */
#define LEFT_KEEP 8u    /* was protected when it left */
#define GHOST 16u   /* order 3: on A1out (off the fastest device) */
#define REUSED 32u  /* order 3: accessed while on A1out; enters Am when it arrives */
#define PROTECT_SHARE 0.8   /* SLRU's usual split (as Caffeine's W-TinyLFU main region) */
#define KIN_SHARE 0.25      /* 2Q's Kin and Kout as Johnson & Shasha recommend (25% and 50% of the buffer) */
#define KOUT_SHARE 0.5

int hbl_victim_init(struct hbl_victim *o, const struct hbl_sim *s, double order, char *err, int errlen)
{
    memset(o, 0, sizeof(*o));
    hbl_list_init(&o->probe);
    hbl_list_init(&o->keep);
    hbl_list_init(&o->ghost);
    if (order != 0 && order != 1 && order != 2 && order != 3) {
        snprintf(err, errlen, "victim must be 0 (LRU), 1 (SLRU), 2 (SLRU protecting on reads) or 3 (2Q)");
        return -1;
    }
    o->order = (int)order;
    int64_t cap = s->cfg.dev[0].capacity_pages;
    if (o->order && cap < 1) {
        snprintf(err, errlen, "victim=%d needs a fastest device of at least one page", o->order);
        return -1;
    }
    o->protect_max = (int64_t)(PROTECT_SHARE * (double)cap);
    o->kin = (int64_t)(KIN_SHARE * (double)cap);
    o->kout = (int64_t)(KOUT_SHARE * (double)cap);
    return 0;
}

void hbl_victim_free(struct hbl_victim *o)
{
    hbl_links_free(&o->links);
    free(o->flag);
    free(o->arrived);
    o->flag = NULL;
    o->arrived = NULL;
    o->nflag = 0;
}

/* Flags and links for slot x; -1 when out of memory. */
static int room_for(struct hbl_victim *o, uint32_t x)
{
    if (x < o->nflag) return 0;
    if (hbl_links_reserve(&o->links, x + 1)) return -1;
    uint8_t *f = realloc(o->flag, o->links.cap);
    if (!f) return -1;
    o->flag = f;
    uint32_t *a = realloc(o->arrived, (size_t)o->links.cap * sizeof(*a));
    if (!a) return -1;
    o->arrived = a;
    memset(o->flag + o->nflag, 0, o->links.cap - o->nflag);
    memset(o->arrived + o->nflag, 0, (size_t)(o->links.cap - o->nflag) * sizeof(*a));
    o->nflag = o->links.cap;
    return 0;
}

static void unlist(struct hbl_victim *o, uint32_t x)
{
    if (o->flag[x] & PROBE) hbl_list_unlink(&o->links, &o->probe, x);
    if (o->flag[x] & KEEP) hbl_list_unlink(&o->links, &o->keep, x);
    if (o->flag[x] & GHOST) hbl_list_unlink(&o->links, &o->ghost, x);
    o->flag[x] &= (uint8_t)~(PROBE | KEEP | GHOST | REUSED);
}

/* Order 3: x left the device from A1in; A1out remembers it, its oldest forgotten past Kout. */
static void remember(struct hbl_victim *o, uint32_t x)
{
    hbl_list_push(&o->links, &o->ghost, x);
    o->flag[x] |= (uint8_t)GHOST;
    while ((int64_t)o->ghost.n > o->kout) unlist(o, o->ghost.tail);
}

/* Order 3's access of x: in A1in, correlated (nothing moves); in Am, to its head; on A1out, marked. */
static void touch_2q(struct hbl_victim *o, uint32_t x)
{
    if (o->flag[x] & KEEP) {
        hbl_list_unlink(&o->links, &o->keep, x);
        hbl_list_push(&o->links, &o->keep, x);
    } else if (o->flag[x] & GHOST) {
        o->flag[x] |= (uint8_t)REUSED;
    }
}

static void put(struct hbl_victim *o, uint32_t x, unsigned seg, int at_tail)
{
    struct hbl_list *q = seg == KEEP ? &o->keep : &o->probe;
    if (at_tail) hbl_list_push_tail(&o->links, q, x); else hbl_list_push(&o->links, q, x);
    o->flag[x] |= (uint8_t)seg;
}

/* The protected segment within its bound: its least recently used pages back to probation. */
static void bound(struct hbl_victim *o)
{
    while ((int64_t)o->keep.n > o->protect_max) {
        uint32_t y = o->keep.tail;
        unlist(o, y);
        put(o, y, PROBE, 0);
    }
}

void hbl_victim_touch(struct hbl_victim *o, const struct hbl_sim *s, const uint32_t *slots, int n, int write)
{
    o->serving = 0;
    if (!o->order) return;
    uint32_t now = (uint32_t)(s->nreq + 1);
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (x >= o->nflag || !(o->flag[x] & (PROBE | KEEP | GHOST))) continue;
        if (o->arrived[x] == now && !(o->flag[x] & GHOST)) continue;   /* the access that brought it */
        if (o->order == 3) {
            touch_2q(o, x);
            continue;
        }
        unsigned seg = write && o->order == 2 && (o->flag[x] & PROBE) ? PROBE : KEEP;
        unlist(o, x);
        put(o, x, seg, 0);
        bound(o);
    }
}

void hbl_victim_moved(struct hbl_victim *o, const struct hbl_sim *s, uint32_t x, int from, int to, int undone)
{
    if (!o->order) return;
    if (from == 0 && to != 0) {
        if (x >= o->nflag) return;
        unsigned was = o->flag[x] & KEEP ? LEFT_KEEP : o->flag[x] & PROBE ? LEFT_PROBE : 0;
        unlist(o, x);
        o->flag[x] = (uint8_t)((o->flag[x] & ~(LEFT_PROBE | LEFT_KEEP)) | was);
        if (o->order == 3 && was == LEFT_PROBE) remember(o, x);
        return;
    }
    if (to != 0 || from == 0) return;
    if (room_for(o, x)) return;   /* out of memory: not listed */
    unsigned left = o->flag[x] & (LEFT_PROBE | LEFT_KEEP);
    int reused = (o->flag[x] & GHOST) && (o->serving || (o->flag[x] & REUSED));
    o->flag[x] &= (uint8_t)~(LEFT_PROBE | LEFT_KEEP);
    unlist(o, x);
    if (undone && left) {         /* as if it never left: where it was, the next to go */
        put(o, x, left == LEFT_KEEP ? KEEP : PROBE, 1);
        return;
    }
    o->arrived[x] = o->serving ? (uint32_t)(s->nreq + 1) : 0;
    put(o, x, o->order == 3 && reused ? KEEP : PROBE, 0);
}

uint32_t hbl_victim_pick(struct hbl_victim *o, const struct hbl_sim *s, int dev)
{
    while (o->order && dev == 0) {
        struct hbl_list *q = o->probe.tail != HBL_NONE ? &o->probe : &o->keep;
        if (o->order == 3 && (int64_t)o->probe.n <= o->kin && o->keep.tail != HBL_NONE) q = &o->keep;
        uint32_t x = q->tail;
        if (x == HBL_NONE) break;
        if (s->pt.dev[x] == 0) return x;
        unlist(o, x);   /* not on it any more (every move is told, so never): forgotten */
    }
    return s->lru_tail[dev];
}
