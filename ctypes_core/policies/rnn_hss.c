/* RNN-HSS, after Kleio (Doudali et al., HPDC'19): a recurrent network
 * predicts, from a page's recent access history, whether the page will be
 * accessed in the next epoch, and data moves accordingly.
 *
 * Ours, where the paper is not available in full: one small Elman network
 * (8 tanh units) shared by all pages reads the last 8 epochs' access counts
 * of a page (log-scaled; an epoch is migrate_every requests; the counts live
 * packed in the page table) and outputs P(accessed next epoch).  At each
 * epoch end it is trained online by backpropagation through time on the
 * pages of the last two epochs (label: was the page accessed in the epoch
 * that just ended), then pages touched this epoch below the fastest device
 * are promoted when predicted hot, hottest first, and least recently used
 * pages of the fastest device are evicted when predicted cold.  Writes of
 * predicted-hot pages go to the fastest device, others to the slowest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../rl.h"
#include "../nn.h"

#define H 8          /* hidden units */
#define T 8          /* epochs of history (one byte each in pt.aux64) */
#define NP (H + H * H + H + H + 1)

struct state {
    float w[NP], g[NP], m1[NP], m2[NP];   /* Wx[H], Wh[H][H], b[H], v[H], c */
    uint64_t adam_t, rng;
    uint32_t epoch;
    uint32_t *touched[2]; uint64_t nt[2], cap[2];   /* [epoch & 1] */
    double lr, threshold;
    int batch;
};

#define WX(st) ((st)->w)
#define WH(st) ((st)->w + H)
#define BB(st) ((st)->w + H + H * H)
#define VV(st) ((st)->w + H + H * H + H)
#define CC(st) ((st)->w[NP - 1])

static const struct hbl_param_doc params[] = {
    {"lr", "learning rate (Adam)"},
    {"threshold", "predicted probability of an access next epoch above which a page is hot"},
    {"batch", "pages trained on per epoch", 1},
    {NULL, NULL}};

static void destroy(void *v)
{
    struct state *st = v;
    free(st->touched[0]); free(st->touched[1]);
    free(st);
}

static int init(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen)
{
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->lr = hbl_param(p, "lr", 1e-2);
    st->threshold = hbl_param(p, "threshold", 0.5);
    st->batch = (int)hbl_param(p, "batch", 128);
    if (st->batch < 1 || !(st->lr > 0)) {
        snprintf(err, errlen, "rnn-hss: batch >= 1, lr > 0");
        free(st);
        return -1;
    }
    st->rng = s->cfg.seed * 0x9E3779B97F4A7C15ULL + 11;
    if (!st->rng) st->rng = 1;
    for (int i = 0; i < NP - 1; i++) st->w[i] = (float)(hbl_uniform(&st->rng) - 0.5);
    st->epoch = 1;
    *out = st;
    return 0;
}

/* History of a page ending at epoch e (inclusive), oldest byte first in x. */
static void history(const struct hbl_sim *s, uint32_t slot, uint32_t e, float *x)
{
    uint64_t h = s->pt.aux64[slot];
    uint32_t last = s->pt.aux32[slot];
    uint32_t shift = e >= last ? e - last : T;
    h = shift >= T ? 0 : h << (8 * shift);
    for (int t = 0; t < T; t++) {
        uint32_t c = (uint32_t)(h >> (8 * (T - 1 - t))) & 0xff;
        x[t] = log2f(1.0f + (float)c) * 0.125f;
    }
}

static float forward(const struct state *st, const float *x, float hs[T + 1][H])
{
    memset(hs[0], 0, sizeof(hs[0]));
    for (int t = 0; t < T; t++)
        for (int j = 0; j < H; j++) {
            float a = BB(st)[j] + WX(st)[j] * x[t];
            for (int k = 0; k < H; k++) a += WH(st)[j * H + k] * hs[t][k];
            hs[t + 1][j] = tanhf(a);
        }
    float logit = CC(st);
    for (int j = 0; j < H; j++) logit += VV(st)[j] * hs[T][j];
    return logit;
}

static float predict(const struct state *st, const struct hbl_sim *s, uint32_t slot, uint32_t e)
{
    float x[T], hs[T + 1][H];
    history(s, slot, e, x);
    return 1.0f / (1.0f + hbl_expf(-forward(st, x, hs)));
}

/* Backpropagation through time of one example into st->g. */
static void bptt(struct state *st, const float *x, int label, float scale)
{
    float hs[T + 1][H], dh[H], da[H];
    float p = 1.0f / (1.0f + hbl_expf(-forward(st, x, hs)));
    float dlogit = (p - (float)label) * scale;
    float *gWx = st->g, *gWh = st->g + H, *gb = st->g + H + H * H, *gv = gb + H;
    st->g[NP - 1] += dlogit;
    for (int j = 0; j < H; j++) { gv[j] += dlogit * hs[T][j]; dh[j] = dlogit * VV(st)[j]; }
    for (int t = T - 1; t >= 0; t--) {
        for (int j = 0; j < H; j++) da[j] = dh[j] * (1.0f - hs[t + 1][j] * hs[t + 1][j]);
        for (int j = 0; j < H; j++) {
            gWx[j] += da[j] * x[t];
            gb[j] += da[j];
            for (int k = 0; k < H; k++) gWh[j * H + k] += da[j] * hs[t][k];
        }
        for (int k = 0; k < H; k++) {
            float acc = 0;
            for (int j = 0; j < H; j++) acc += WH(st)[j * H + k] * da[j];
            dh[k] = acc;
        }
    }
}

static void touch(struct state *st, struct hbl_sim *s, uint32_t x)
{
    uint32_t e = st->epoch, last = s->pt.aux32[x];
    uint64_t h = s->pt.aux64[x];
    if (last != e) {
        uint32_t shift = e - last;
        h = shift >= T ? 0 : h << (8 * shift);
        s->pt.aux32[x] = e;
        int b = e & 1;
        if (st->nt[b] == st->cap[b]) {
            uint64_t cap = st->cap[b] ? st->cap[b] * 2 : 4096;
            uint32_t *t = realloc(st->touched[b], cap * sizeof(*t));
            if (!t) { s->pt.aux64[x] = h; return; }
            st->touched[b] = t; st->cap[b] = cap;
        }
        st->touched[b][st->nt[b]++] = x;
    }
    if ((h & 0xff) != 0xff) h++;
    s->pt.aux64[x] = h;
}

static void place(void *v, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    struct state *st = v;
    if (r->op != HBL_OP_WRITE) return;
    int hot = predict(st, s, slots[0], st->epoch) >= st->threshold;
    for (int i = 0; i < n; i++) targets[i] = hot ? 0 : (int8_t)hbl_slowest(s);
}

static void observe(void *v, struct hbl_sim *s, const struct hbl_request *r,
                    const uint32_t *slots, int n, double lat)
{
    for (int i = 0; i < n; i++) touch(v, s, slots[i]);
}

static int migrate(void *v, struct hbl_sim *s, uint32_t *slots, int8_t *targets, int max)
{
    struct state *st = v;
    uint32_t e = st->epoch;
    int cur = e & 1, prev = cur ^ 1;
    /* learn: pages of the last two epochs, labeled by whether this epoch touched them */
    uint64_t pool = st->nt[0] + st->nt[1];
    if (pool) {
        memset(st->g, 0, sizeof(st->g));
        int nb = (uint64_t)st->batch < pool ? st->batch : (int)pool;
        for (int k = 0; k < nb; k++) {
            uint64_t i = hbl_xorshift(&st->rng) % pool;
            uint32_t x = i < st->nt[cur] ? st->touched[cur][i] : st->touched[prev][i - st->nt[cur]];
            float hx[T];
            int label = s->pt.aux32[x] == e;
            history(s, x, e - 1, hx);
            if (label) {   /* history() up to e-1 must not see this epoch's byte */
                uint64_t h = s->pt.aux64[x] >> 8;
                for (int t = 0; t < T; t++)
                    hx[t] = log2f(1.0f + (float)((h >> (8 * (T - 1 - t))) & 0xff)) * 0.125f;
            }
            bptt(st, hx, label, 1.0f / (float)nb);
        }
        hbl_adam(st->w, st->g, st->m1, st->m2, NP, (float)st->lr, ++st->adam_t);
    }
    /* act: promote predicted-hot pages touched this epoch, evict predicted-cold fast pages */
    int m = 0, half = max / 2 > 0 ? max / 2 : 1;
    uint64_t *keyed = malloc((st->nt[cur] + 1) * sizeof(uint64_t));
    uint64_t nk = 0;
    for (uint64_t i = 0; keyed && i < st->nt[cur]; i++) {
        uint32_t x = st->touched[cur][i];
        if (s->pt.dev[x] <= 0) continue;
        float p = predict(st, s, x, e);
        if (p >= st->threshold) keyed[nk++] = ((uint64_t)(p * 1e6f) << 32) | x;
    }
    if (keyed) {
        qsort(keyed, nk, sizeof(uint64_t), hbl_cmp_u64_desc);
        for (uint64_t i = 0; i < nk && m < half; i++) { slots[m] = (uint32_t)keyed[i]; targets[m] = 0; m++; }
        free(keyed);
    }
    int evicted = 0, scanned = 0;
    for (uint32_t x = s->lru_tail[0]; x != HBL_NONE && evicted < half && scanned < 4 * half && m < max;
         x = s->pt.prev[x], scanned++) {
        if (predict(st, s, x, e) < st->threshold) { slots[m] = x; targets[m] = 1; m++; evicted++; }
    }
    /* next epoch: its touched list starts empty */
    st->epoch = e + 1;
    st->nt[(e + 1) & 1] = 0;
    return m;
}

const struct hbl_policy_ops hbl_policy_rnn_hss = {
    .name = "rnn-hss",
    .doc = "RNN-HSS (Kleio-like): a recurrent net predicts next-epoch hot pages from their access history",
    .flags = HBL_POLICY_LEARNS | HBL_POLICY_LIVE,
    .params = params,
    .init = init,
    .free = destroy,
    .place = place,
    .observe = observe,
    .migrate = migrate,
};
