/* Slow-Only: every page stays on the slowest device. */
#include "../hbl_internal.h"

const struct hbl_policy_ops hbl_policy_slow_only = {
    .name = "slow-only",
    .doc = "everything on the slowest device",
    .flags = HBL_POLICY_LIVE,
};
