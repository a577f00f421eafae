/* Rules 7-9 of read admission (admit.h): a read admission pushes off only what read admission
 * brought.  The pages it promoted that are still on the fastest device are kept on a list of the
 * admit module's own, in access order (the least recently used at the tail), linked through
 * arrays as the cache policies' lists are (cachelist.h).  A read miss is promoted only into free
 * space or in place of the list's least recently used page; while the fastest device is full and
 * the list is empty it stays where it is, so a page the placement agent placed by a write is never
 * pushed off by a read admission.  Whatever else needs room on the fastest device (a write placed
 * there, the migration agent's promotions) takes the list's pages first (harmonia's victim()).
 * A page leaves the list when it leaves the fastest device, and when it is written: its placement
 * is then the placement agent's.  A move off the fastest device may be undone before it is carried
 * out (batch_moves: an eviction refused, or the page asked back before it was taken): the page, its
 * data never gone, is back on the list at the tail, unless written meanwhile; back by a move not
 * undone (its eviction was carried out), it is not.  Rule 9 (rule 8 otherwise) has the agents count
 * the list's pages as free space on the fastest device (hbl_admit_spare), as they would see it
 * without them. */
#include <stdlib.h>
#include <string.h>
#include "admit.h"

#define PENDING 1u   /* promoted by this request's read admission, not moved yet */
#define LISTED 2u    /* on the read list */
#define LEFT 4u      /* listed when it left the fastest device: listed again if that move is undone */

/* Flags and links for slot x; -1 when out of memory. */
static int room_for(struct hbl_admit *a, uint32_t x)
{
    if (x < a->nflag) return 0;
    if (hbl_links_reserve(&a->links, x + 1)) return -1;
    uint8_t *f = realloc(a->flag, a->links.cap);
    if (!f) return -1;
    memset(f + a->nflag, 0, a->links.cap - a->nflag);
    a->flag = f;
    a->nflag = a->links.cap;
    return 0;
}

static int listed(const struct hbl_admit *a, uint32_t x)
{
    return x < a->nflag && (a->flag[x] & LISTED);
}

static void unlist(struct hbl_admit *a, uint32_t x)
{
    hbl_list_unlink(&a->links, &a->reads, x);
    a->links.prev[x] = a->links.next[x] = HBL_NONE;
    a->flag[x] &= (uint8_t)~LISTED;
}

void hbl_admit_list_init(struct hbl_admit *a)
{
    hbl_list_init(&a->reads);
}

void hbl_admit_list_free(struct hbl_admit *a)
{
    hbl_links_free(&a->links);
    free(a->flag);
    a->flag = NULL;
    a->nflag = 0;
}

void hbl_admit_list_touch(struct hbl_admit *a, const uint32_t *slots, int n, int write)
{
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (write && x < a->nflag) a->flag[x] &= (uint8_t)~LEFT;
        if (!listed(a, x)) continue;
        unlist(a, x);
        if (!write) {
            hbl_list_push(&a->links, &a->reads, x);
            a->flag[x] |= LISTED;
        }
    }
}

int64_t hbl_admit_list_room(const struct hbl_admit *a, const struct hbl_sim *s, const uint32_t *slots, int n)
{
    int64_t free = hbl_free_pages(s, 0);
    if (free < 0) free = 0;
    int64_t spare = a->reads.n;
    for (int i = 0; i < n; i++) spare -= listed(a, slots[i]);
    return free > INT64_MAX - spare ? INT64_MAX : free + spare;
}

int hbl_admit_list_promote(struct hbl_admit *a, uint32_t x)
{
    if (room_for(a, x)) return 0;   /* out of memory: the read stays where it is */
    a->flag[x] |= PENDING;
    return 1;
}

void hbl_admit_list_served(struct hbl_admit *a, const uint32_t *slots, int n)
{
    for (int i = 0; i < n; i++)
        if (slots[i] < a->nflag) a->flag[slots[i]] &= (uint8_t)~PENDING;
}

void hbl_admit_moved(struct hbl_admit *a, uint32_t x, int from, int to, int undone)
{
    if (x >= a->nflag) return;
    if (to != 0 && listed(a, x)) {
        unlist(a, x);
        a->flag[x] |= LEFT;
    }
    if (to == 0 && from != 0) {
        if (a->flag[x] & PENDING) {
            hbl_list_push(&a->links, &a->reads, x);
            a->flag[x] |= LISTED;
        } else if (undone && (a->flag[x] & LEFT)) {    /* as if it never left: the least recently used */
            hbl_list_push_tail(&a->links, &a->reads, x);
            a->flag[x] |= LISTED;
        }
        a->flag[x] &= (uint8_t)~LEFT;
    }
    a->flag[x] &= (uint8_t)~PENDING;
}

uint32_t hbl_admit_victim(struct hbl_admit *a, const struct hbl_sim *s, int dev)
{
    while (dev == 0 && a->reads.tail != HBL_NONE) {
        uint32_t x = a->reads.tail;
        if (s->pt.dev[x] == 0) return x;
        unlist(a, x);   /* not on it any more (every move is told, so never): forgotten */
    }
    return HBL_NONE;
}
