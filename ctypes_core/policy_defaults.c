/*
 * The defaults of every policy's parameters, as `hbl policies` shows them: each
 * policy is built once in a small simulator (or live engine), as `hbl simulate`
 * (or `hbl up`) would build it, and hbl_param() notes what its init() reads
 * (params.c).  It sits above both the policy table (registry.c) and the
 * simulator (sim.c), so that neither calls the other back.
 */
#include <stdio.h>
#include "hbl_internal.h"

static int32_t defaults(int32_t i, int live, double *values, uint8_t *known, int32_t max)
{
    const struct hbl_policy_ops *ops = hbl_policy_at(i);
    if (!ops || (live && !(ops->flags & HBL_POLICY_LIVE))) return -1;
    int32_t n = 0;
    while (n < max && hbl_policy_param(i, n)) {
        values[n] = 0;
        known[n++] = 0;
    }
    /* Build the policy once, as `hbl simulate` (or `hbl up`) would, and note what init() reads. */
    struct hbl_sim_config cfg = {.ndev = 2, .page_size = 4096, .speed = 1, .migrate_every = 1000,
                                 .migrate_max = 64, .seed = 1, .queue_depth = 1, .bg = {.backlog_pages = 256}};
    for (int d = 0; d < 2; d++)
        cfg.dev[d] = (struct hbl_device_params){.read_latency_ns = 1e4 * (d + 1), .write_latency_ns = 1e4 * (d + 1),
                                                .read_bytes_per_ns = 1, .write_bytes_per_ns = 1,
                                                .capacity_pages = d ? -1 : 1024, .streams = 1};
    char err[256];
    hbl_params_record(ops->params, values, known, n);
    struct hbl_sim *s = live ? hbl_live_new(&cfg, ops->name, NULL, err, sizeof(err))
                             : hbl_sim_new(&cfg, ops->name, NULL, NULL, err, sizeof(err));
    hbl_params_record(NULL, NULL, NULL, 0);
    if (!s) return -1;
    hbl_sim_free(s);
    return n;
}

int32_t hbl_policy_defaults(int32_t i, double *values, uint8_t *known, int32_t max)
{
    return defaults(i, 0, values, known, max);
}

int32_t hbl_policy_live_defaults(int32_t i, double *values, uint8_t *known, int32_t max)
{
    return defaults(i, 1, values, known, max);
}
