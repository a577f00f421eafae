/* Open-CAS nhit promotion: a page is inserted into the fast device after N
 * accesses (default 3); the filter is only active once the fast device is
 * fuller than a threshold (default 80%), below it every access inserts. */
#include <stdlib.h>
#include <stdio.h>
#include "../hbl_internal.h"

struct state { double hits, occupancy; };

static const struct hbl_param_doc params[] = {
    {"hits", "accesses after which a page is inserted into the fast device"},
    {"occupancy", "fraction of the fast device in use below which every access inserts"},
    {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    (void)s;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->hits = hbl_param(p, "hits", 3);
    st->occupancy = hbl_param(p, "occupancy", 0.8);
    if (st->hits < 1 || !(st->occupancy > 0 && st->occupancy <= 1)) {
        snprintf(err, errlen, "hits >= 1 and 0 < occupancy <= 1");
        free(st);
        return -1;
    }
    *out = st;
    return 0;
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)r;
    struct state *st = vst;
    int64_t cap = s->cfg.dev[0].capacity_pages;
    int filter = cap >= 0 && (double)s->used[0] >= st->occupancy * (double)cap;
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (s->pt.dev[x] == 0 || !filter || s->pt.count[x] + 1 >= st->hits) targets[i] = 0;
    }
}

const struct hbl_policy_ops hbl_policy_nhit = {
    .name = "nhit",
    .doc = "Open-CAS nhit: insert into fast after `hits` (3) accesses once fast is `occupancy` (80%) full",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = free,
    .place = place,
};
