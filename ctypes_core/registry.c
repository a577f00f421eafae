/* The policy registry: adding a policy is one new file and one line here.
 * The table knows nothing of the simulator; policy_defaults.c, above both,
 * builds a simulator to read each policy's defaults. */
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

const struct hbl_policy_ops *hbl_policy_at(int32_t i) { return i >= 0 && i < NPOLICIES ? policies[i] : NULL; }

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
