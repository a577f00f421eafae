/* The policy registry: adding a policy is one new file and one line here. */
#include <string.h>
#include "hbl_internal.h"

extern const struct hbl_policy_ops hbl_policy_fast_only, hbl_policy_slow_only, hbl_policy_oracle,
    hbl_policy_lru, hbl_policy_cde, hbl_policy_hps, hbl_policy_smq, hbl_policy_nhit,
    hbl_policy_seqcutoff, hbl_policy_sibyl, hbl_policy_harmonia, hbl_policy_harmonia_placement_only,
    hbl_policy_harmonia_migration_only, hbl_policy_archivist, hbl_policy_rnn_hss, hbl_policy_python;

static const struct hbl_policy_ops *const policies[] = {
    &hbl_policy_fast_only, &hbl_policy_slow_only, &hbl_policy_oracle, &hbl_policy_lru,
    &hbl_policy_cde, &hbl_policy_hps, &hbl_policy_smq, &hbl_policy_nhit, &hbl_policy_seqcutoff,
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
