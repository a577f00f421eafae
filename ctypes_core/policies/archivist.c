/* Archivist (Ren et al., ICCD'19): a small supervised neural network
 * classifies incoming data as hot or cold, and placement follows the class.
 *
 * Ours, where the paper is not available in full: the classifier is an MLP
 * (hidden 16, swish, sigmoid output) over four of the shared features
 * (request type, size, access interval, access count), trained online with
 * Adam on labels the trace itself provides: an access is hot when its page
 * is accessed again within `window` requests.  Pending accesses wait in a
 * ring; a re-access labels its page's pending example 1, an example that
 * leaves the ring unlabeled is labeled 0.  Writes of predicted-hot data go to
 * the fastest device, the rest to the slowest; a read of predicted-hot data
 * below the fastest device promotes it.  The shared LRU fallback evicts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../rl.h"
#include "../nn.h"

#define NF 4          /* features used */
#define RING 16384    /* pending examples: longer than the default window */
#define LABELED 1024  /* training set (ring) */

struct example { uint64_t id, t; uint32_t slot; uint8_t s[NF]; uint8_t done; };

struct state {
    struct hbl_features feat;
    struct hbl_mlp m;
    float *w, *g, *m1, *m2;
    float *wt, zi[72];             /* a copy in the inference layout, for one prediction at a time */
    float *x, *z, *a, *d, *scratch; /* a training tile (nn.h): HBL_TILE samples a row */
    uint64_t adam_t, next_id, rng;
    struct example *ring;
    uint8_t cur[NF];               /* features of the request being served, before its access */
    uint8_t ls[LABELED][NF], ly[LABELED];
    int nl, lh;
    double window, threshold, lr;
    int batch, train_every, since_train;
    float scale[NF];
};

static const struct hbl_param_doc params[] = {
    {"window", "an access is hot when its page is accessed again within this many requests"},
    {"threshold", "predicted probability of hot above which data goes to the fastest device"},
    {"lr", "learning rate (Adam)"},
    {"batch", "minibatch size", 1},
    {"train_every", "requests between two training steps", 1},
    {"hidden", "units of the hidden layer (swish)", 1},
    HBL_FEATURE_SETTINGS(HBL_SETTING_DOC) {NULL, NULL}};
static const int FEATS[NF] = {HBL_F_TYPE, HBL_F_SIZE, HBL_F_INTERVAL, HBL_F_COUNT};

static void destroy(void *v)
{
    struct state *st = v;
    if (!st) return;
    free(st->w); free(st->g); free(st->m1); free(st->m2); free(st->ring);
    free(st->wt); free(st->x); free(st->z); free(st->a); free(st->d); free(st->scratch);
    free(st);
}

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    hbl_features_init(&st->feat, s, p);
    int32_t sizes[3] = {NF, (int32_t)hbl_param(p, "hidden", 16), 1};
    st->window = hbl_param(p, "window", 10000);
    st->threshold = hbl_param(p, "threshold", 0.5);
    st->lr = hbl_param(p, "lr", 1e-3);
    st->batch = (int)hbl_param(p, "batch", 64);
    st->train_every = (int)hbl_param(p, "train_every", 256);
    if (sizes[1] < 1 || sizes[1] > 60 || st->batch < 1 || st->train_every < 1 || st->window < 1 ||
        st->window > RING ||
        hbl_mlp_init(&st->m, sizes, 2)) {
        snprintf(err, errlen, "archivist: hidden 1..60, batch >= 1, train_every >= 1, window 1..%d", RING);
        free(st);
        return -1;
    }
    size_t np = (size_t)st->m.np;
    st->w = calloc(np, 4); st->g = calloc(np, 4); st->m1 = calloc(np, 4); st->m2 = calloc(np, 4);
    st->ring = calloc(RING, sizeof(struct example));
    const size_t T = HBL_TILE, units = (size_t)st->m.units;
    st->wt = calloc((size_t)st->m.pnp, 4);
    st->x = calloc(NF * T, 4); st->z = calloc(units * T, 4); st->a = calloc(units * T, 4);
    st->d = calloc(T, 4); st->scratch = calloc(2 * (size_t)st->m.widest * T, 4);
    if (!st->w || !st->g || !st->m1 || !st->m2 || !st->ring || !st->wt || !st->x || !st->z || !st->a ||
        !st->d || !st->scratch) { destroy(st); return -1; }
    st->rng = s->cfg.seed * 0x9E3779B97F4A7C15ULL + 7;
    if (!st->rng) st->rng = 1;
    hbl_mlp_init_params(&st->m, st->w, &st->rng);
    hbl_mlp_transpose(&st->m, st->w, st->wt);
    for (int f = 0; f < NF; f++) {
        int nb = st->feat.nbins[FEATS[f]];
        st->scale[f] = nb > 1 ? 1.0f / (float)(nb - 1) : 0;
    }
    *out = st;
    return 0;
}

static float predict(struct state *st, const uint8_t *s)
{
    float x[8] = {0};   /* psizes[0]: NF rounded up to 8, padding zero */
    for (int f = 0; f < NF; f++) x[f] = s[f] * st->scale[f];
    return 1.0f / (1.0f + hbl_expf(-hbl_mlp_infer(&st->m, st->wt, x, st->zi)[0]));
}

static void add_labeled(struct state *st, const uint8_t *s, int y)
{
    memcpy(st->ls[st->lh], s, NF);
    st->ly[st->lh] = (uint8_t)y;
    st->lh = (st->lh + 1) % LABELED;
    if (st->nl < LABELED) st->nl++;
}

static void train(struct state *st)
{
    if (st->nl < st->batch) return;
    memset(st->g, 0, (size_t)st->m.np * 4);
    const int T = HBL_TILE;
    const float *logit = st->z + (size_t)st->m.uoff[1] * T;
    for (int k0 = 0; k0 < st->batch; k0 += T) {   /* the minibatch a tile at a time */
        int nk = st->batch - k0 < T ? st->batch - k0 : T, y[HBL_TILE];
        memset(st->x, 0, NF * (size_t)T * 4);
        for (int k = 0; k < nk; k++) {
            int i = (int)(hbl_xorshift(&st->rng) % (uint64_t)st->nl);
            for (int f = 0; f < NF; f++) st->x[f * T + k] = st->ls[i][f] * st->scale[f];
            y[k] = st->ly[i];
        }
        hbl_mlp_forward(&st->m, st->w, st->x, st->z, st->a);
        memset(st->d, 0, (size_t)T * 4);   /* padding samples add nothing */
        for (int k = 0; k < nk; k++)        /* d(BCE)/d(logit) */
            st->d[k] = (1.0f / (1.0f + hbl_expf(-logit[k])) - (float)y[k]) / (float)st->batch;
        hbl_mlp_backward(&st->m, st->w, st->x, st->z, st->a, st->d, st->g, st->scratch);
    }
    hbl_adam(st->w, st->g, st->m1, st->m2, st->m.np, (float)st->lr, ++st->adam_t);
    hbl_mlp_transpose(&st->m, st->w, st->wt);
}

static void encode(struct state *st, struct hbl_sim *s, const struct hbl_request *r, int n,
                   uint32_t slot, uint8_t *out)
{
    uint8_t full[HBL_NFEATURES];
    hbl_features_encode(&st->feat, s, r->op == HBL_OP_WRITE, (uint32_t)n, slot, full);
    for (int f = 0; f < NF; f++) out[f] = full[FEATS[f]];
}

static void place(void *v, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    struct state *st = v;
    encode(st, s, r, n, slots[0], st->cur);
    int hot = predict(st, st->cur) >= st->threshold;
    int write = r->op == HBL_OP_WRITE;
    for (int i = 0; i < n; i++) {
        if (write) targets[i] = hot ? 0 : (int8_t)hbl_slowest(s);
        else if (hot && s->pt.dev[slots[i]] > 0) targets[i] = 0;
    }
}

static void observe(void *v, struct hbl_sim *s, const struct hbl_request *r,
                    const uint32_t *slots, int n, double lat)
{
    struct state *st = v;
    uint64_t now = s->nreq;
    uint32_t x = slots[0];
    /* a re-access within the window labels the page's pending example hot */
    uint64_t id = s->pt.aux64[x];
    if (id) {
        struct example *e = &st->ring[id % RING];
        if (e->id == id && !e->done && now - e->t <= (uint64_t)st->window) {
            add_labeled(st, e->s, 1);
            e->done = 1;
        }
    }
    /* the slot this access takes: an example leaving unlabeled was cold */
    uint64_t nid = ++st->next_id;
    struct example *e = &st->ring[nid % RING];
    if (e->id && !e->done) add_labeled(st, e->s, 0);
    e->id = nid;
    e->t = now;
    e->slot = x;
    e->done = 0;
    memcpy(e->s, st->cur, NF);
    s->pt.aux64[x] = nid;
    if (++st->since_train >= st->train_every) { st->since_train = 0; train(st); }
}

const struct hbl_policy_ops hbl_policy_archivist = {
    .name = "archivist",
    .doc = "Archivist: an online supervised hot/cold classifier (small NN) decides placement",
    .flags = HBL_POLICY_LEARNS | HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .observe = observe,
};
