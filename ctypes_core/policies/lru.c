/* LRU promote-on-miss: a plain cache.  Every access brings its pages to the
 * fastest device; the shared fallback evicts the least recently used. */
#include "../hbl_internal.h"

static void place(void *st, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)st; (void)s; (void)r; (void)slots;
    for (int i = 0; i < n; i++) targets[i] = 0;
}

const struct hbl_policy_ops hbl_policy_lru = {
    .name = "lru",
    .doc = "promote on every access, evict least recently used (a plain cache)",
    .flags = HBL_POLICY_LIVE,
    .place = place,
};
