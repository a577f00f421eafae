/* bcache-like sequential cutoff: LRU promote-on-access, except requests of a
 * sequential stream longer than the cutoff (bcache's default: 4 MiB) bypass
 * the fast device.  Streams are tracked in a small table by their next offset. */
#include <stdlib.h>
#include "../hbl_internal.h"

#define NSTREAMS 16

struct state {
    double cutoff;
    uint64_t next[NSTREAMS], bytes[NSTREAMS], used[NSTREAMS], tick;
};

static const struct hbl_param_doc params[] = {
    {"cutoff_bytes", "a sequential stream longer than this bypasses the fast device"},
    {NULL, NULL}};

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    (void)s; (void)err; (void)errlen;
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->cutoff = hbl_param(p, "cutoff_bytes", 4 << 20);
    *out = st;
    return 0;
}

static void place(void *vst, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)s; (void)slots;
    struct state *st = vst;
    int k = -1, lru = 0;
    for (int i = 0; i < NSTREAMS; i++) {
        if (st->next[i] == r->offset && st->used[i]) { k = i; break; }
        if (st->used[i] < st->used[lru]) lru = i;
    }
    if (k < 0) { k = lru; st->bytes[k] = 0; }
    st->bytes[k] += r->length;
    st->next[k] = r->offset + r->length;
    st->used[k] = ++st->tick;
    if (st->bytes[k] > st->cutoff) return;
    for (int i = 0; i < n; i++) targets[i] = 0;
}

const struct hbl_policy_ops hbl_policy_seqcutoff = {
    .name = "seqcutoff",
    .doc = "LRU, but sequential streams longer than cutoff_bytes (4 MiB) bypass the fast device (bcache-like)",
    .flags = HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = free,
    .place = place,
};
