/* Fast-Only: every page on the fastest device, whose capacity is taken as
 * unlimited.  The normalization point of every comparison (as in the papers). */
#include "../hbl_internal.h"

static int init(struct hbl_sim *s, void **st, const struct hbl_params *p, char *err, int errlen)
{
    (void)st; (void)p; (void)err; (void)errlen;
    s->cfg.dev[0].capacity_pages = -1;
    s->initial_dev = 0;
    return 0;
}

const struct hbl_policy_ops hbl_policy_fast_only = {
    .name = "fast-only",
    .doc = "everything on the fastest device, unlimited capacity (normalization point)",
    .flags = HBL_POLICY_LIVE,
    .init = init,
};
