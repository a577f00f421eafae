/* The policy registry: adding a policy is one new file and one line here. */
#include <stdio.h>
#include <string.h>
#include "hbl_internal.h"

extern const struct hbl_policy_ops hbl_policy_fast_only, hbl_policy_slow_only, hbl_policy_oracle,
    hbl_policy_lru, hbl_policy_cde, hbl_policy_hps, hbl_policy_smq, hbl_policy_nhit,
    hbl_policy_seqcutoff, hbl_policy_sibyl, hbl_policy_harmonia, hbl_policy_harmonia_placement_only,
    hbl_policy_harmonia_migration_only, hbl_policy_archivist, hbl_policy_rnn_hss, hbl_policy_python,
    hbl_policy_arc, hbl_policy_lirs, hbl_policy_s3fifo, hbl_policy_wtinylfu;

static const struct hbl_policy_ops *const policies[] = {
    &hbl_policy_fast_only, &hbl_policy_slow_only, &hbl_policy_oracle, &hbl_policy_lru,
    &hbl_policy_cde, &hbl_policy_hps, &hbl_policy_smq, &hbl_policy_nhit, &hbl_policy_seqcutoff,
    &hbl_policy_arc, &hbl_policy_lirs, &hbl_policy_s3fifo, &hbl_policy_wtinylfu,
    &hbl_policy_sibyl, &hbl_policy_harmonia, &hbl_policy_harmonia_placement_only,
    &hbl_policy_archivist, &hbl_policy_rnn_hss, &hbl_policy_harmonia_migration_only, &hbl_policy_python,
};

#define NPOLICIES ((int)(sizeof(policies) / sizeof(policies[0])))

const struct hbl_policy_ops *hbl_policy_find(const char *name)
{
    for (int i = 0; i < NPOLICIES; i++)
        if (!strcmp(policies[i]->name, name)) return policies[i];
    return NULL;
}

const char *hbl_policy_name(int32_t i) { return i >= 0 && i < NPOLICIES ? policies[i]->name : NULL; }
const char *hbl_policy_doc(int32_t i) { return i >= 0 && i < NPOLICIES ? policies[i]->doc : NULL; }

int32_t hbl_policy_flags(int32_t i) { return i >= 0 && i < NPOLICIES ? (int32_t)policies[i]->flags : -1; }

static const struct hbl_param_doc *param_entry(int32_t i, int32_t j)
{
    if (i < 0 || i >= NPOLICIES || j < 0 || !policies[i]->params) return NULL;
    for (int32_t k = 0; k < j; k++)
        if (!policies[i]->params[k].name) return NULL;
    return policies[i]->params[j].name ? &policies[i]->params[j] : NULL;
}

const char *hbl_policy_param(int32_t i, int32_t j)
{
    const struct hbl_param_doc *e = param_entry(i, j);
    return e ? e->name : NULL;
}

const char *hbl_policy_param_doc(int32_t i, int32_t j)
{
    const struct hbl_param_doc *e = param_entry(i, j);
    return e ? e->doc : NULL;
}

static int32_t defaults(int32_t i, int live, double *values, uint8_t *known, int32_t max)
{
    if (i < 0 || i >= NPOLICIES || (live && !(policies[i]->flags & HBL_POLICY_LIVE))) return -1;
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
    hbl_params_record(policies[i]->params, values, known, n);
    struct hbl_sim *s = live ? hbl_live_new(&cfg, policies[i]->name, NULL, err, sizeof(err))
                             : hbl_sim_new(&cfg, policies[i]->name, NULL, NULL, err, sizeof(err));
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
