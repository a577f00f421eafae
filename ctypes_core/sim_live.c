/*
 * Live mode: the same policies deciding for a real device (hbl/live).  No
 * device model: the controller reports measured latencies with each request,
 * tells where extents are, and takes the moves the policy asked for
 * (queued by sim_move.c) to carry them out.
 */
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"

struct hbl_sim *hbl_live_new(const struct hbl_sim_config *cfg, const char *policy,
                             const struct hbl_params *params, char *err, int32_t errlen)
{
    return hbl_sim_create(cfg, policy, params, NULL, 1, err, errlen);
}

static int32_t live_place(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n, int undone)
{
    for (uint64_t i = 0; i < n; i++) {
        if (devs[i] < 0 || devs[i] >= s->cfg.ndev) return -1;
        uint32_t x = hbl_pt_get(&s->pt, extents[i]);
        if (x == HBL_NONE) return -1;
        /* where the controller has it: no move of it waits (a simulator that does not track copies,
         * told a layout (scripts/guard_study.py's handover), has no copy_from) */
        if (s->pt.copies) s->pt.copy_from[x] = HBL_UNPLACED;
        if (undone)
            hbl_put_back(s, x, devs[i]);
        else
            hbl_set_device(s, x, devs[i]);
    }
    return 0;
}

int32_t hbl_live_set_devices(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n)
{
    return live_place(s, extents, devs, n, 0);
}

int32_t hbl_live_put_back(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n)
{
    return live_place(s, extents, devs, n, 1);
}

int32_t hbl_live_device(const struct hbl_sim *s, uint64_t extent)
{
    uint32_t x = hbl_pt_find(&s->pt, extent);
    return x == HBL_NONE ? HBL_UNPLACED : s->pt.dev[x];
}

/* The moves the controller said were waiting (hbl_live_waiting) count as started from its next take
 * on: it says again which still wait once it has chosen its next batch. */
static void forget_waiting(struct hbl_sim *s)
{
    for (uint64_t i = 0; i < s->nwq; i++) {
        uint32_t x = hbl_pt_find(&s->pt, s->wq[i]);
        if (x != HBL_NONE) s->pt.copy_from[x] = HBL_UNPLACED;
    }
    s->nwq = 0;
}

uint64_t hbl_live_take_moves(struct hbl_sim *s, uint64_t *extents, uint64_t max)
{
    uint64_t n = s->nmq < max ? s->nmq : max;
    forget_waiting(s);
    memcpy(extents, s->mq, n * sizeof(*extents));
    for (uint64_t i = 0; i < n; i++) {       /* the controller has them now: a move back is a move */
        uint32_t x = hbl_pt_find(&s->pt, extents[i]);
        if (x != HBL_NONE) { s->pt.copy_from[x] = HBL_UNPLACED; s->pt.queued[x] = 0; }
    }
    memmove(s->mq, s->mq + n, (s->nmq - n) * sizeof(*s->mq));
    s->nmq -= n;
    return n;
}

int32_t hbl_live_waiting(struct hbl_sim *s, const uint64_t *extents, const int8_t *devs, uint64_t n)
{
    forget_waiting(s);
    if (n > s->wqcap) {
        uint64_t *q = realloc(s->wq, n * sizeof(*q));     /* (the controller's queue: a few hundred) */
        if (!q) return -1;
        s->wq = q; s->wqcap = n;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t x = hbl_pt_find(&s->pt, extents[i]);
        if (x == HBL_NONE || devs[i] < 0 || devs[i] >= s->cfg.ndev) { forget_waiting(s); return -1; }
        s->pt.copy_from[x] = devs[i];
        s->wq[s->nwq++] = extents[i];
    }
    return 0;
}
