/* CDE (Matsui et al., Proc. IEEE 2017): hot or random writes go to the fast
 * device, cold or sequential data to the slow one; when fast fills, the
 * shared fallback evicts cold (least recently used) data.  Reads move nothing.
 * A write is sequential when it continues the previous request or is at least
 * `seq_bytes` long; a page is hot after `hot_count` accesses. */
#include <stdlib.h>
#include "../hbl_internal.h"

struct state { double seq_bytes, hot_count; uint64_t next_offset; };

static const struct hbl_param_doc params[] = {
    {"seq_bytes", "a write at least this long is sequential (goes to the slow device)"},
    {"hot_count", "accesses after which a page is hot (its writes go to the fast device)"},
    {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    (void)s; (void)err; (void)errlen;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->seq_bytes = hbl_param(p, "seq_bytes", 128 << 10);
    st->hot_count = hbl_param(p, "hot_count", 2);
    st->next_offset = HBL_NEVER;
    *out = st;
    return 0;
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    struct state *st = vst;
    int sequential = r->offset == st->next_offset || r->length >= st->seq_bytes;
    st->next_offset = r->offset + r->length;
    if (r->op != HBL_OP_WRITE) return;
    for (int i = 0; i < n; i++) {
        int hot = s->pt.count[slots[i]] + 1 >= st->hot_count;
        targets[i] = (hot || !sequential) ? 0 : (int8_t)hbl_slowest(s);
    }
}

const struct hbl_policy_ops hbl_policy_cde = {
    .name = "cde",
    .doc = "CDE: hot or random writes to fast, cold or sequential data to slow",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = free,
    .place = place,
};
