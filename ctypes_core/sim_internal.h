/*
 * The simulator's parts, shared among its files (sim*.c) and nothing else:
 * policies see struct hbl_sim and its helpers in hbl_internal.h, never these.
 * From the bottom up: the device model (sim_device.c), moves (sim_move.c),
 * the request loop and construction (sim.c), live mode (sim_live.c); beside
 * them, what reads the simulator (sim_stats.c) and its agents (sim_agents.c).
 */
#ifndef HBL_SIM_INTERNAL_H
#define HBL_SIM_INTERNAL_H
#include "hbl_internal.h"

/* ---- device model and background I/O (sim_device.c) ---- */

/* A foreground I/O on device d at `now`; returns when it completes. */
double hbl_dev_io(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double bytes, double now);
/* Whether d's background queue has room for npages more. */
int hbl_bg_room(const struct hbl_sim *s, int d, uint32_t npages);
/* Queue a background I/O on d (merged with the last one it continues). */
void hbl_bg_push(struct hbl_sim *s, int d, int write, uint64_t page, uint32_t npages, double now);
/* Serve d's background queue in its idle time before `now`. */
void hbl_bg_advance(struct hbl_sim *s, int d, double now);
/* Make room in d's full queue for npages by serving it now; returns when that completes. */
double hbl_bg_drain(struct hbl_sim *s, int d, uint32_t npages, double now);

/* ---- where pages are, and moves (sim_move.c) ---- */

/* Page x becomes the most recently used of its device. */
void hbl_lru_touch(struct hbl_sim *s, uint32_t x);
/* Bookkeeping of page x changing to device `to`; the caller charges any I/O. */
void hbl_set_device(struct hbl_sim *s, uint32_t x, int to);
/* Move page x to device `to` with a copy, as background I/O; 1 when it moved. */
int hbl_migrate_page(struct hbl_sim *s, uint32_t x, int to, double now, int read_needed, int required);
/* Until d has `room` free pages, its victim goes to the next slower device. */
void hbl_make_room(struct hbl_sim *s, int d, double now, int64_t room);

/* ---- construction (sim.c) ---- */

/* hbl_sim_new (live = 0) and hbl_live_new (live = 1). */
struct hbl_sim *hbl_sim_create(const struct hbl_sim_config *cfg, const char *policy,
                               const struct hbl_params *params, void *plugin, int live,
                               char *err, int32_t errlen);

#endif
