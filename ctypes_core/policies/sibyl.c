/* Sibyl (Singh et al., ISCA 2022): one reinforcement-learning placement agent
 * deciding the device of every request (reads too: a read whose chosen device
 * differs moves the page), with Sibyl's six features, reward 1/latency minus
 * an eviction penalty, and the shared LRU fallback when a device is full. */
#include <stdlib.h>
#include "../rl.h"

static const struct hbl_param_doc params[] = {
    HBL_AGENT_PARAMS(HBL_PLACEMENT_PARAM_DOC) HBL_PLACEMENT_SETTINGS(HBL_SETTING_DOC)
    HBL_FEATURE_SETTINGS(HBL_SETTING_DOC) {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    struct hbl_placement_agent *pa = calloc(1, sizeof(*pa));
    if (!pa) return -1;
    if (hbl_placement_agent_init(pa, s, p, HBL_F_SINCE_MIG, NULL, err, errlen)) { free(pa); return -1; }
    *out = pa;
    return 0;
}

static void destroy(void *st)
{
    hbl_placement_agent_free(st);
    free(st);
}

static void place(void *st, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    hbl_placement_agent_place(st, s, r, slots, n, targets);
}

static void observe(void *st, struct hbl_sim *s, const struct hbl_request *r,
                    const uint32_t *slots, int n, double lat)
{
    hbl_placement_agent_observe(st, s, r, slots, n, lat);
}

static int agents(void *st, struct hbl_agent **out)
{
    out[0] = ((struct hbl_placement_agent *)st)->ag;
    return 1;
}

const struct hbl_policy_ops hbl_policy_sibyl = {
    .name = "sibyl",
    .doc = "Sibyl: one RL placement agent (6 features, C51), reward 1/latency with eviction penalty",
    .flags = HBL_POLICY_LEARNS | HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .observe = observe,
    .agents = agents,
};
