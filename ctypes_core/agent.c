/*
 * The learning agent: a value network over binned features, epsilon-greedy
 * decisions from an inference copy of the network, and training of a second
 * copy from an experience buffer, off the decision path.  The inference copy
 * is also the target network of the updates; it receives the trained weights
 * every sync_every decisions (Sibyl's scheme).  It is quantized (int16
 * weights and activations, nn.c): a decision costs half the FP32 forward
 * pass, its greedy action is the FP32 network's on >= 99.9% of real states
 * (results/inference/inference.txt), and it takes half the memory.  Training is FP32.
 *
 * Two value heads: DQN (one Q per action, Huber loss) and categorical C51
 * (a distribution over `atoms` fixed returns per action, cross-entropy to the
 * projected Bellman target; Bellemare et al., ICML 2017).
 *
 * The decision path (act) does one forward pass with no allocation; training
 * walks a minibatch a tile of HBL_TILE samples at a time (nn.h), accumulating
 * gradients, so its working set is one tile's activations whatever the batch
 * size; it is allocated for the step only (it holds nothing between steps).
 *
 * Training runs either interleaved with the decisions (hbl_agent_tick, the
 * simulator's way: deterministic) or, in background mode (the live
 * controller), on another thread calling hbl_agent_background.  There, `lock`
 * guards what the decision path touches (inference weights, decision cache,
 * experience buffer, exploration rng, stats) and `tlock` the training state
 * (training weights, optimizer moments, scratch); tlock is taken first.  A
 * training step holds `lock` only to copy one transition at a time, and a
 * sync only to copy the weights, so a decision waits at most that long.
 */
#pragma GCC optimize("O3", "fast-math")
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include "hbl_internal.h"
#include "nn.h"
#include "demos.h"

/* floats of slack past an inference output layer: values_of reads the last,
 * partial group of atoms as a whole vector */
#define OUT_SLACK 8
#define MAX_ATOMS 201

struct hbl_agent {
    struct hbl_agent_config cfg;
    struct hbl_mlp m;
    int nout;
    float scale[16], inmax[16];
    void *q;                    /* inference (and target) network, quantized (hbl_mlp_quantize) */
    /* debugging the quantization (hbl_agent_set_shadow): the FP32 inference
     * network of the same weights, transposed, and how often both agree */
    float *ref;
    int ref_valid;
    uint64_t compared, agreed;
    float *w_train, *grad, *m1, *m2;
    float *support;
    /* experience buffer: states as bytes */
    uint8_t *bs, *bs2, *ba;
    _Float16 *br;               /* rewards at half precision: 3 digits are plenty, and it halves their memory */
    uint8_t *bl;                /* demonstrators' actions (HBL_NO_LABEL: none); only with cfg.demo > 0 (demos.h) */
    int64_t nbuf, head;
    /* training scratch: one target (z2), one sample's logits (logits, probs, proj) */
    float *z2, *logits, *proj, *probs;
    uint64_t rng, adam_t;
    /* decision cache: greedy actions of recently seen states, valid until the
     * next sync (the inference weights do not change in between) */
    uint64_t *ckey; uint8_t *cact; uint32_t cmask; uint8_t cgen;
    uint64_t bytes;
    struct hbl_agent_stats st;
    /* background mode: set only while no other thread uses the agent */
    int async;
    /* loaded from a file: its warm-up is behind it, so it explores at epsilon
     * from the first decision (a pretrained agent must not start at random) */
    int loaded;
    pthread_mutex_t lock, tlock;
    uint64_t trng, trained_at, synced_at;
};

static inline void lock(struct hbl_agent *ag) { if (ag->async) pthread_mutex_lock(&ag->lock); }
static inline void unlock(struct hbl_agent *ag) { if (ag->async) pthread_mutex_unlock(&ag->lock); }
static inline void tlock(struct hbl_agent *ag) { if (ag->async) pthread_mutex_lock(&ag->tlock); }
static inline void tunlock(struct hbl_agent *ag) { if (ag->async) pthread_mutex_unlock(&ag->tlock); }

static void *alloc(struct hbl_agent *ag, size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (p) ag->bytes += n;
    return p;
}

/* The inference weights start on a cache line: every row is a whole number of
 * AVX registers, so then no load of the decision path splits a line (with
 * malloc's 16-byte alignment, half of them did on some runs: 285 ns a
 * decision against 245). */
static void *alloc_lines(struct hbl_agent *ag, size_t n)
{
    n = (n + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, n ? n : 64);
    if (p) { memset(p, 0, n); ag->bytes += n; }
    return p;
}

static int config_check(const struct hbl_agent_config *c, char *err, int errlen)
{
    const char *why = NULL;
    if (c->nfeatures < 1 || c->nfeatures > 16) why = "nfeatures must be 1..16";
    else if (c->nactions < 2 || c->nactions > 8) why = "nactions must be 2..8";
    else if (c->nhidden < 1 || c->nhidden > 4) why = "1 to 4 hidden layers";
    else if (c->head != HBL_HEAD_DQN && c->head != HBL_HEAD_C51) why = "head must be dqn or c51";
    else if (c->head == HBL_HEAD_C51 && (c->atoms < 2 || c->atoms > MAX_ATOMS || !(c->vmax > c->vmin)))
        why = "C51 needs 2..201 atoms and vmax > vmin";
    else if (c->optimizer != HBL_OPT_ADAM && c->optimizer != HBL_OPT_RMSPROP) why = "optimizer must be adam or rmsprop";
    else if (!(c->lr > 0) || c->gamma < 0 || c->gamma >= 1) why = "lr > 0 and 0 <= gamma < 1";
    else if (c->epsilon < 0 || c->epsilon > 1 || c->warmup < 0) why = "epsilon in [0, 1], warmup >= 0";
    else if (!(c->demo >= 0) || !(c->demo_margin >= 0)) why = "demo >= 0 and demo_margin >= 0";
    else if (c->cache < 0 || c->cache > (1 << 20) || (c->cache & (c->cache - 1)))
        why = "cache must be 0 or a power of two up to 2^20";
    else if (c->batch < 1 || c->buffer < c->batch || c->train_every < 1 || c->sync_every < 1)
        why = "batch >= 1, buffer >= batch, train_every >= 1, sync_every >= 1";
    for (int f = 0; !why && f < c->nfeatures; f++)
        if (c->nbins[f] < 1) why = "every feature needs at least one bin";
    for (int l = 0; !why && l < c->nhidden; l++)
        if (c->hidden[l] < 1 || c->hidden[l] > 512) why = "hidden layer sizes must be 1..512";
    if (why) { snprintf(err, errlen, "agent: %s", why); return -1; }
    return 0;
}

struct hbl_agent *hbl_agent_new(const struct hbl_agent_config *cfg, char *err, int32_t errlen)
{
    if (config_check(cfg, err, errlen)) return NULL;
    struct hbl_agent *ag = calloc(1, sizeof(*ag));
    if (!ag) { snprintf(err, errlen, "out of memory"); return NULL; }
    ag->bytes = sizeof(*ag);
    ag->cfg = *cfg;
    int c51 = cfg->head == HBL_HEAD_C51;
    ag->nout = cfg->nactions * (c51 ? cfg->atoms : 1);
    int32_t sizes[HBL_MLP_MAX_LAYERS + 1];
    sizes[0] = cfg->nfeatures;
    for (int l = 0; l < cfg->nhidden; l++) sizes[l + 1] = cfg->hidden[l];
    sizes[cfg->nhidden + 1] = ag->nout;
    if (hbl_mlp_init(&ag->m, sizes, cfg->nhidden + 1)) {
        snprintf(err, errlen, "agent: network too large");
        free(ag);
        return NULL;
    }
    hbl_mlp_group_outputs(&ag->m, c51 ? cfg->atoms : 0);
    for (int f = 0; f < cfg->nfeatures; f++) {
        ag->scale[f] = cfg->nbins[f] > 1 ? 1.0f / (float)(cfg->nbins[f] - 1) : 0.0f;
        ag->inmax[f] = (float)(cfg->nbins[f] - 1);
    }
    size_t np = (size_t)ag->m.np, B = (size_t)cfg->buffer, F = (size_t)cfg->nfeatures;
    ag->q = alloc_lines(ag, (size_t)ag->m.qbytes); ag->w_train = alloc(ag, np * 4); ag->grad = alloc(ag, np * 4);
    ag->m1 = alloc(ag, np * 4); ag->m2 = alloc(ag, np * 4);
    ag->bs = alloc(ag, B * F); ag->bs2 = alloc(ag, B * F); ag->ba = alloc(ag, B); ag->br = alloc(ag, B * sizeof(_Float16));
    ag->z2 = alloc(ag, ((size_t)ag->m.qunits + OUT_SLACK) * 4);
    if (cfg->demo > 0 && (ag->bl = alloc(ag, B))) memset(ag->bl, HBL_NO_LABEL, B);
    if (cfg->cache) {
        ag->ckey = alloc(ag, (size_t)cfg->cache * 8);
        ag->cact = alloc(ag, (size_t)cfg->cache);
        ag->cmask = (uint32_t)cfg->cache - 1;
        ag->cgen = 1;
    }
    if (c51) {
        ag->support = alloc(ag, (size_t)ag->m.qgpad * 4);   /* zero past the atoms */
        ag->logits = alloc(ag, (size_t)cfg->atoms * 4);
        ag->proj = alloc(ag, (size_t)cfg->atoms * 4);
        ag->probs = alloc(ag, (size_t)cfg->atoms * 4);
    }
    if (!ag->q || !ag->w_train || !ag->grad || !ag->m1 || !ag->m2 || !ag->bs || !ag->bs2 || !ag->ba ||
        !ag->br || !ag->z2 || (cfg->demo > 0 && !ag->bl) ||
        (c51 && (!ag->support || !ag->logits || !ag->proj || !ag->probs)) || (cfg->cache && (!ag->ckey || !ag->cact))) {
        hbl_agent_free(ag);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (c51)
        for (int i = 0; i < cfg->atoms; i++)
            ag->support[i] = (float)(cfg->vmin + (cfg->vmax - cfg->vmin) * i / (cfg->atoms - 1));
    ag->rng = cfg->seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
    if (!ag->rng) ag->rng = 1;
    hbl_mlp_init_params(&ag->m, ag->w_train, &ag->rng);
    hbl_mlp_quantize(&ag->m, ag->w_train, ag->scale, ag->inmax, ag->q);
    ag->st.epsilon = 1.0;
    ag->trng = ag->rng ^ 0x5DEECE66DULL;
    pthread_mutex_init(&ag->lock, NULL);
    pthread_mutex_init(&ag->tlock, NULL);
    return ag;
}

void hbl_agent_free(struct hbl_agent *ag)
{
    if (!ag) return;
    free(ag->q); free(ag->ref); free(ag->w_train); free(ag->grad); free(ag->m1); free(ag->m2);
    free(ag->bs); free(ag->bs2); free(ag->ba); free(ag->br); free(ag->bl);
    free(ag->z2);
    free(ag->support); free(ag->logits); free(ag->proj); free(ag->probs);
    free(ag->ckey); free(ag->cact);
    pthread_mutex_destroy(&ag->lock);
    pthread_mutex_destroy(&ag->tlock);
    free(ag);
}

static inline void to_input(const struct hbl_agent *ag, const uint8_t *s, float *x)
{
    for (int f = 0; f < ag->cfg.nfeatures; f++) x[f] = (float)s[f] * ag->scale[f];
}

/* Expected value of each action from an output layer (C51: softmax over the
 * atoms, then the mean of the support; eight atoms at a time), its actions A
 * units apart: the atoms (FP32 layout), or the atoms padded to whole registers
 * with logits that vanish under the softmax (quantized layout, m.qgpad).  A
 * last, partial group of atoms is read as a whole vector (`out` has OUT_SLACK
 * floats past its end); only its own lanes are used. */
static void values_of(const struct hbl_agent *ag, const float *out, int A, const float *shift, float *v)
{
    int NA = ag->cfg.nactions;
    if (ag->cfg.head == HBL_HEAD_DQN) {
        memcpy(v, out, (size_t)NA * sizeof(float));
        return;
    }
    int A8 = A & ~7;
    for (int k = 0; k < NA; k++) {
        const float *l = out + k * A;
        if (shift && shift[NA + k] != 0) {   /* the quantized network, its outputs in units of ln 2 (A: whole registers) */
            v8f se8 = {}, sz8 = {};
            for (int i = 0; i < A; i += 8) {
                v8f e = v8_exp2_quick(v8_load(l + i));
                se8 += e;
                sz8 += e * v8_load(ag->support + i);
            }
            v[k] = v8_hsum(sz8) / v8_hsum(se8);
            continue;
        }
        float mx = l[0];
        if (A8) {
            v8f m8 = v8_load(l);
            for (int i = 8; i < A8; i += 8) m8 = v8_max(m8, v8_load(l + i));
            mx = v8_hmax(m8);
        }
        for (int i = A8; i < A; i++) mx = l[i] > mx ? l[i] : mx;
        v8f se8 = {}, sz8 = {};
        for (int i = 0; i < A8; i += 8) {
            v8f e = v8_exp(v8_load(l + i) - mx);
            se8 += e;
            sz8 += e * v8_load(ag->support + i);
        }
        float se = v8_hsum(se8), sz = v8_hsum(sz8);
        if (A8 < A) {
            v8f e = v8_exp(v8_load(l + A8) - mx);
            for (int i = A8; i < A; i++) {
                se += e[i - A8];
                sz += e[i - A8] * ag->support[i];
            }
        }
        v[k] = sz / se;
    }
}

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

/* The forward pass of the inference network on the stack: no shared scratch,
 * so a live controller may decide on one thread while another trains.  The
 * quantized network takes the bins themselves as its inputs. */
static const float *infer_q(const struct hbl_agent *ag, const uint8_t *state, float *z, int16_t *h)
{
    /* the bins read and widened in registers, then stored whole: the network's
     * first loads (two inputs at a time) are forwarded from that one store,
     * where stores of an input each would make them wait for those to retire */
    int16_t x[16];
    int F = ag->cfg.nfeatures;
    for (int k = 0; k < 2; k++) {
        int n = F - 8 * k < 0 ? 0 : F - 8 * k > 8 ? 8 : F - 8 * k;
        const uint8_t *p = state + 8 * k;
        uint64_t u = 0;
        if (n >= 4) {   /* two 4-byte loads, overlapping when n < 8 */
            uint32_t lo, hi;
            memcpy(&lo, p, 4);
            memcpy(&hi, p + n - 4, 4);
            u = lo | (uint64_t)hi << (8 * (n - 4));
        } else {
            for (int i = 0; i < n; i++) u |= (uint64_t)p[i] << (8 * i);
        }
        v8u8 bv;
        memcpy(&bv, &u, 8);
        v8s xv = __builtin_convertvector(bv, v8s);
        memcpy(x + 8 * k, &xv, sizeof(xv));
    }
    return hbl_mlp_infer_q(&ag->m, ag->q, x, z, h);
}

static int greedy(const struct hbl_agent *ag, const uint8_t *state, float *v)
{
    float z[2048];
    int16_t h[2048];
    if (ag->m.qunits + OUT_SLACK > 2048) return 0;
    values_of(ag, infer_q(ag, state, z, h), ag->m.qgpad, hbl_mlp_q_shifts(&ag->m, ag->q), v);
    return argmax(v, ag->cfg.nactions);
}

/* The FP32 network's greedy action over transposed weights wt. */
static int greedy_fp32(const struct hbl_agent *ag, const float *wt, const uint8_t *state)
{
    float x[16] = {0}, z[2048], v[8];
    if (ag->m.punits + OUT_SLACK > 2048) return 0;
    to_input(ag, state, x);
    values_of(ag, hbl_mlp_infer(&ag->m, wt, x, z), ag->cfg.atoms, NULL, v);
    return argmax(v, ag->cfg.nactions);
}

int32_t hbl_agent_greedy(const struct hbl_agent *ag, const uint8_t *state)
{
    float v[8];
    return greedy(ag, state, v);
}

static int greedy_cached(struct hbl_agent *ag, const uint8_t *state)
{
    if (!ag->ckey) return hbl_agent_greedy(ag, state);
    uint64_t key = 0;
    memcpy(&key, state, (size_t)(ag->cfg.nfeatures < 7 ? ag->cfg.nfeatures : 7));
    for (int f = 7; f < ag->cfg.nfeatures; f++) key = key * 131 + state[f];
    key = (key << 8) | ag->cgen;
    uint32_t h = (uint32_t)(hbl_hash64(key) & ag->cmask);
    if (ag->ckey[h] == key && ag->cfg.nfeatures <= 7) return ag->cact[h];
    int a = hbl_agent_greedy(ag, state);
    ag->ckey[h] = key;
    ag->cact[h] = (uint8_t)a;
    return a;
}

static void cache_invalidate(struct hbl_agent *ag)
{
    if (!ag->ckey) return;
    if (++ag->cgen == 0) {   /* generation wrapped: old entries could match again */
        memset(ag->ckey, 0, (size_t)(ag->cmask + 1) * 8);
        ag->cgen = 1;
    }
}

void hbl_agent_values(const struct hbl_agent *ag, const uint8_t *state, float *out)
{
    float v[8];
    greedy(ag, state, v);
    memcpy(out, v, (size_t)ag->cfg.nactions * sizeof(float));
}

int32_t hbl_agent_act(struct hbl_agent *ag, const uint8_t *state)
{
    const struct hbl_agent_config *c = &ag->cfg;
    lock(ag);
    double frac = c->warmup && !ag->loaded ? (double)ag->st.decisions / c->warmup : 1.0;
    double eps = frac >= 1.0 ? c->epsilon : 1.0 + (c->epsilon - 1.0) * frac;
    ag->st.epsilon = eps;
    ag->st.decisions++;
    int a;
    if (eps > 0 && hbl_uniform(&ag->rng) < eps) {
        ag->st.explorations++;
        a = (int)(hbl_xorshift(&ag->rng) % (uint64_t)c->nactions);
    } else {
        a = greedy_cached(ag, state);
        if (ag->ref_valid) {
            ag->compared++;
            ag->agreed += greedy_fp32(ag, ag->ref, state) == a;
        }
    }
    ag->st.actions[a]++;
    unlock(ag);
    return a;
}

void hbl_agent_remember(struct hbl_agent *ag, const uint8_t *s, int32_t action, float reward, const uint8_t *s2)
{
    hbl_agent_remember_demo(ag, s, action, reward, s2, HBL_NO_LABEL);
}

void hbl_agent_remember_demo(struct hbl_agent *ag, const uint8_t *s, int32_t action, float reward,
                             const uint8_t *s2, int32_t label)
{
    int F = ag->cfg.nfeatures;
    lock(ag);
    int64_t i = ag->head;
    memcpy(ag->bs + i * F, s, F);
    memcpy(ag->bs2 + i * F, s2, F);
    ag->ba[i] = (uint8_t)action;
    ag->br[i] = (_Float16)reward;
    if (ag->bl) ag->bl[i] = label >= 0 && label < ag->cfg.nactions ? (uint8_t)label : HBL_NO_LABEL;
    ag->head = (i + 1) % ag->cfg.buffer;
    if (ag->nbuf < ag->cfg.buffer) ag->nbuf++;
    ag->st.buffered++;
    ag->st.reward_sum += reward;
    ag->st.reward_ewma = ag->st.buffered == 1 ? reward : 0.999 * ag->st.reward_ewma + 0.001 * reward;
    unlock(ag);
}

/* The atoms' targets b_j (in atom units) are computed eight at a time; the
 * additions stay sequential, as neighbouring atoms can land on the same slot.
 * Each atom's mass splits between floor(b) and floor(b) + 1 (when b is whole,
 * the second share is zero), so no branch on l == u.  The two shares go to
 * two arrays, summed at the end: with one, atom j's upper share and atom
 * j + 1's lower share usually hit the same slot, and each addition waited for
 * the previous one's store.  The upper array has room past the last atom,
 * where rounding can leave a trace of mass that belongs to the last one. */
void hbl_c51_project(float r, float gamma, const float *p, int32_t A, float vmin, float vmax, float *out)
{
    float dz = (vmax - vmin) / (float)(A - 1), lower[MAX_ATOMS] = {0}, upper[MAX_ATOMS + 1] = {0};
    if (A < 2 || A > MAX_ATOMS) return;
    v8f lane = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int j0 = 0; j0 < A; j0 += 8) {
        v8f tz = r + gamma * (vmin + dz * (lane + (float)j0));
        v8f b = (v8_min(v8_max(tz, (v8f){} + vmin), (v8f){} + vmax) - vmin) / dz;
        v8f l = v8_floor(b), frac = b - l;
        for (int k = 0; k < 8 && j0 + k < A; k++) {
            int lo = (int)l[k];
            lower[lo] += p[j0 + k] * (1.0f - frac[k]);
            upper[lo + 1] += p[j0 + k] * frac[k];
        }
    }
    for (int i = 0; i < A; i++) out[i] = lower[i] + upper[i];
    out[A - 1] += upper[A];
}

/* p = softmax(scale * l); returns the log of the normaliser, so log p_i = scale * l_i - lse */
static float softmax(const float *l, int n, float scale, float *p)
{
    float mx = l[0], s = 0;
    for (int i = 1; i < n; i++) mx = l[i] > mx ? l[i] : mx;
    for (int i = 0; i < n; i++) { p[i] = hbl_expf(scale * (l[i] - mx)); s += p[i]; }
    for (int i = 0; i < n; i++) p[i] /= s;
    return scale * mx + logf(s);
}

static void optimizer_step(struct hbl_agent *ag)
{
    const struct hbl_agent_config *c = &ag->cfg;
    float lr = (float)c->lr, *w = ag->w_train, *g = ag->grad, *m1 = ag->m1, *m2 = ag->m2;
    int n = ag->m.np;
    ag->adam_t++;
    if (c->optimizer == HBL_OPT_ADAM) {
        hbl_adam(w, g, m1, m2, n, lr, ag->adam_t);
    } else {
        const float rho = 0.99f, eps = 1e-6f;
        for (int i = 0; i < n; i++) {
            m2[i] = rho * m2[i] + (1 - rho) * g[i] * g[i];
            w[i] -= lr * g[i] / (sqrtf(m2[i]) + eps);
        }
    }
}

double hbl_agent_train(struct hbl_agent *ag)
{
    const struct hbl_agent_config *c = &ag->cfg;
    tlock(ag);
    lock(ag);
    int64_t nbuf = ag->nbuf;
    unlock(ag);
    if (nbuf < c->batch) { tunlock(ag); return 0.0; }
    uint64_t *rng = ag->async ? &ag->trng : &ag->rng;   /* act() draws from ag->rng */
    const struct hbl_mlp *m = &ag->m;
    const int T = HBL_TILE;
    int F = c->nfeatures, NA = c->nactions, A = c->atoms, out_row = m->uoff[m->nl - 1];
    int c51 = c->head == HBL_HEAD_C51;
    float inv_b = 1.0f / (float)c->batch, v[8], x1[16];
    double loss = 0;
    /* one tile: inputs, pre-activations, activations, the backward pass's deltas, output gradients */
    size_t units = (size_t)m->units * T, deltas = 2 * (size_t)m->widest * T;
    float *x = malloc(((size_t)F * T + 2 * units + deltas + (size_t)ag->nout * T) * sizeof(float));
    if (!x) { tunlock(ag); return 0.0; }
    float *z = x + (size_t)F * T, *a = z + units, *scratch = a + units, *douts = scratch + deltas;
    memset(ag->grad, 0, (size_t)m->np * sizeof(float));
    for (int k0 = 0; k0 < c->batch; k0 += T) {
        int n = c->batch - k0 < T ? c->batch - k0 : T;
        uint8_t s2[HBL_TILE][16];
        int act[HBL_TILE], label[HBL_TILE];
        float r[HBL_TILE];
        /* a short last tile: its padding samples are zero and get no gradient */
        memset(x, 0, (size_t)F * T * sizeof(float));
        memset(douts, 0, (size_t)ag->nout * T * sizeof(float));
        for (int k = 0; k < n; k++) {
            uint8_t s1[16];
            lock(ag);
            int64_t i = (int64_t)(hbl_xorshift(rng) % (uint64_t)nbuf);
            act[k] = ag->ba[i];
            label[k] = ag->bl ? ag->bl[i] : HBL_NO_LABEL;
            r[k] = (float)ag->br[i];
            memcpy(s1, ag->bs + i * F, (size_t)F);
            memcpy(s2[k], ag->bs2 + i * F, (size_t)F);
            unlock(ag);
            to_input(ag, s1, x1);
            for (int f = 0; f < F; f++) x[f * T + k] = x1[f];   /* into the tile's column k */
        }
        hbl_mlp_forward(m, ag->w_train, x, z, a);
        for (int k = 0; k < n; k++) {
            /* target from the inference (target) network */
            int16_t h2[2048];
            const float *o2 = infer_q(ag, s2[k], ag->z2, h2);
            values_of(ag, o2, ag->m.qgpad, hbl_mlp_q_shifts(m, ag->q), v);
            int best = argmax(v, NA);
            /* sample k's outputs are column k of the output rows */
            const float *o = z + (size_t)out_row * T + k;
            float *dout = douts + k;
            if (!c51) {
                float y = r[k] + (float)c->gamma * v[best], d = o[act[k] * T] - y;
                float ad = fabsf(d);
                loss += ad <= 1 ? 0.5 * d * d : ad - 0.5;
                dout[act[k] * T] = (d > 1 ? 1 : d < -1 ? -1 : d) * inv_b;
            } else {
                const float *shift = hbl_mlp_q_shifts(m, ag->q);   /* outputs of a safe group: in units of ln 2 */
                softmax(o2 + best * ag->m.qgpad, A, shift[NA + best] != 0 ? 0.693147181f : 1.0f, ag->probs);
                hbl_c51_project(r[k], (float)c->gamma, ag->probs, A, (float)c->vmin, (float)c->vmax, ag->proj);
                for (int j = 0; j < A; j++) ag->logits[j] = o[(act[k] * A + j) * T];
                float lse = softmax(ag->logits, A, 1.0f, ag->probs);
                for (int j = 0; j < A; j++) {
                    loss -= ag->proj[j] * (ag->logits[j] - lse);   /* cross-entropy, log-softmax */
                    dout[(act[k] * A + j) * T] = (ag->probs[j] - ag->proj[j]) * inv_b;
                }
            }
            if (label[k] != HBL_NO_LABEL)   /* a demonstration: the large-margin loss too (demos.h) */
                loss += hbl_demo_margin(o, T, NA, c51 ? A : 1, c51 ? ag->support : NULL, label[k],
                                        (float)c->demo_margin, (float)c->demo * inv_b, dout) / inv_b;
        }
        hbl_mlp_backward(m, ag->w_train, x, z, a, douts, ag->grad, scratch);
    }
    free(x);
    optimizer_step(ag);
    lock(ag);
    ag->st.train_steps++;
    if (ag->async) ag->st.background_steps++;
    double mean = ag->st.last_loss = loss / c->batch;
    unlock(ag);
    tunlock(ag);
    return mean;
}

void hbl_agent_sync(struct hbl_agent *ag)
{
    tlock(ag);
    lock(ag);
    hbl_mlp_quantize(&ag->m, ag->w_train, ag->scale, ag->inmax, ag->q);
    if (ag->ref) {
        hbl_mlp_transpose(&ag->m, ag->w_train, ag->ref);
        ag->ref_valid = 1;
    }
    cache_invalidate(ag);
    ag->st.syncs++;
    unlock(ag);
    tunlock(ag);
}

void hbl_agent_tick(struct hbl_agent *ag)
{
    if (ag->async) return;   /* the background thread trains and syncs */
    uint64_t d = ag->st.decisions;
    if (d % (uint64_t)ag->cfg.train_every == 0) hbl_agent_train(ag);
    if (d % (uint64_t)ag->cfg.sync_every == 0) hbl_agent_sync(ag);
}

void hbl_agent_set_background(struct hbl_agent *ag, int32_t on)
{
    ag->trained_at = ag->synced_at = ag->st.decisions;
    ag->async = on != 0;
}

int32_t hbl_agent_background(struct hbl_agent *ag)
{
    lock(ag);
    uint64_t d = ag->st.decisions;
    unlock(ag);
    int did = 0;
    if (d >= ag->trained_at + (uint64_t)ag->cfg.train_every) { ag->trained_at = d; hbl_agent_train(ag); did = 1; }
    if (d >= ag->synced_at + (uint64_t)ag->cfg.sync_every) { ag->synced_at = d; hbl_agent_sync(ag); did = 1; }
    return did;
}

void hbl_agent_get_stats(const struct hbl_agent *ag, struct hbl_agent_stats *out)
{
    struct hbl_agent *w = (struct hbl_agent *)ag;   /* the lock, not the agent, changes */
    lock(w);
    *out = ag->st;
    unlock(w);
}
void hbl_agent_get_config(const struct hbl_agent *ag, struct hbl_agent_config *out) { *out = ag->cfg; }
uint64_t hbl_agent_memory_bytes(const struct hbl_agent *ag) { return ag->bytes; }

int32_t hbl_agent_params(const struct hbl_agent *ag, float *out, int32_t max)
{
    struct hbl_agent *w = (struct hbl_agent *)ag;
    tlock(w);
    if (max >= ag->m.np) memcpy(out, ag->w_train, (size_t)ag->m.np * sizeof(float));
    tunlock(w);
    return ag->m.np;
}

/* Mean ns per call of n calls started at t0 (the agent benchmarks). */
static double ns_since(const struct timespec *t0, int64_t n)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((t1.tv_sec - t0->tv_sec) * 1e9 + (t1.tv_nsec - t0->tv_nsec)) / (double)n;
}

double hbl_agent_bench_inference(const struct hbl_agent *ag, const uint8_t *states, int32_t nstates, int64_t n)
{
    struct timespec t0;
    volatile int sink = 0;
    int F = ag->cfg.nfeatures;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < n; i++) sink += hbl_agent_greedy(ag, states + (i % nstates) * F);
    (void)sink;
    return ns_since(&t0, n);
}

/* The FP32 inference network of the training weights, transposed, on lines. */
static float *fp32_copy(const struct hbl_agent *ag)
{
    float *wt = aligned_alloc(64, ((size_t)ag->m.pnp * 4 + 63) & ~(size_t)63);
    if (wt) hbl_mlp_transpose(&ag->m, ag->w_train, wt);
    return wt;
}

double hbl_agent_bench_fp32(const struct hbl_agent *ag, const uint8_t *states, int32_t nstates, int64_t n,
                            int32_t linear)
{
    struct timespec t0;
    volatile float sink = 0;
    int F = ag->cfg.nfeatures;
    float x[16] = {0}, z[2048];
    float *wt = fp32_copy(ag);
    if (ag->m.punits + OUT_SLACK > 2048 || !wt) { free(wt); return 0; }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *s = states + (i % nstates) * F;
        if (linear) {
            to_input(ag, s, x);
            sink += hbl_mlp_infer_linear(&ag->m, wt, x, z)[i % ag->nout];
        } else {
            sink += greedy_fp32(ag, wt, s);
        }
    }
    (void)sink;
    double ns = ns_since(&t0, n);
    free(wt);
    return ns;
}

void hbl_agent_set_shadow(struct hbl_agent *ag, int32_t on)
{
    lock(ag);
    free(ag->ref);
    ag->ref = NULL;
    ag->ref_valid = 0;
    ag->compared = ag->agreed = 0;
    if (on) {
        ag->ref = fp32_copy(ag);
        /* the training weights are the inference ones until the first training
         * step; after it, the reference waits for the next sync */
        ag->ref_valid = ag->ref && !ag->loaded && !ag->st.train_steps;
    }
    unlock(ag);
}

void hbl_agent_agreement(const struct hbl_agent *ag, uint64_t *compared, uint64_t *agreed)
{
    struct hbl_agent *w = (struct hbl_agent *)ag;
    lock(w);
    *compared = ag->compared;
    *agreed = ag->agreed;
    unlock(w);
}

double hbl_agent_bench_decisions(struct hbl_agent *ag, const uint8_t *states, int32_t nstates,
                                 int32_t sync_every, int64_t n)
{
    struct timespec t0;
    volatile int sink = 0;
    int F = ag->cfg.nfeatures;
    cache_invalidate(ag);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < n; i++) {
        if (i && i % sync_every == 0) cache_invalidate(ag);
        sink += greedy_cached(ag, states + (i % nstates) * F);
    }
    (void)sink;
    return ns_since(&t0, n);
}

int32_t hbl_agent_buffer_states(const struct hbl_agent *ag, uint8_t *out, int32_t max)
{
    int F = ag->cfg.nfeatures;
    int64_t n = ag->nbuf < max ? ag->nbuf : max;
    int64_t start = ag->nbuf < ag->cfg.buffer ? 0 : ag->head;   /* oldest first */
    for (int64_t k = 0; k < n; k++)
        memcpy(out + k * F, ag->bs + ((start + k) % ag->cfg.buffer) * F, (size_t)F);
    return (int32_t)n;
}

/* ---- saved agents ----
 * "HBLAGENT", u32 version, char policy[32], u32 count, then per agent: the
 * shape (nfeatures, nbins[16], nactions, nhidden, hidden[4], head, atoms,
 * vmin, vmax), u32 nparams, the inference network (version 2: quantized,
 * m.qbytes; version 1: FP32, transposed layout, quantized at load) and the
 * training weights, optimizer moments and step; finally an FNV-1a 64
 * checksum of everything before it.  Little-endian hosts. */

#define AGENT_MAGIC "HBLAGENT"
#define AGENT_VERSION 2u

struct shape {
    int32_t nfeatures; uint8_t nbins[16]; int32_t nactions, nhidden, hidden[4], head, atoms;
    double vmin, vmax;
};

static void shape_of(const struct hbl_agent_config *c, struct shape *s)
{
    memset(s, 0, sizeof(*s));
    s->nfeatures = c->nfeatures;
    memcpy(s->nbins, c->nbins, 16);
    s->nactions = c->nactions; s->nhidden = c->nhidden;
    memcpy(s->hidden, c->hidden, sizeof(s->hidden));
    s->head = c->head;
    s->atoms = c->head == HBL_HEAD_C51 ? c->atoms : 0;
    s->vmin = c->head == HBL_HEAD_C51 ? c->vmin : 0;
    s->vmax = c->head == HBL_HEAD_C51 ? c->vmax : 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ULL; }
    return h;
}

struct wbuf { FILE *f; uint64_t h; int bad; };
static void put(struct wbuf *w, const void *p, size_t n)
{
    if (fwrite(p, 1, n, w->f) != n) w->bad = 1;
    w->h = fnv(w->h, p, n);
}

int32_t hbl_agents_save(const char *path, const char *policy, struct hbl_agent *const *agents,
                        int32_t n, char *err, int32_t errlen)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    struct wbuf w = { fopen(tmp, "wb"), 0xcbf29ce484222325ULL, 0 };
    if (!w.f) { snprintf(err, errlen, "%s: cannot write", tmp); return -1; }
    char name[32] = {0};
    strncpy(name, policy, sizeof(name) - 1);
    uint32_t version = AGENT_VERSION, count = (uint32_t)n;
    put(&w, AGENT_MAGIC, 8); put(&w, &version, 4); put(&w, name, 32); put(&w, &count, 4);
    for (int k = 0; k < n; k++) { tlock(agents[k]); lock(agents[k]); }   /* a consistent snapshot */
    for (int k = 0; k < n; k++) {
        const struct hbl_agent *ag = agents[k];
        struct shape s;
        shape_of(&ag->cfg, &s);
        uint32_t np = (uint32_t)ag->m.np;
        put(&w, &s, sizeof(s)); put(&w, &np, 4);
        put(&w, ag->q, (size_t)ag->m.qbytes); put(&w, ag->w_train, np * 4u);
        put(&w, ag->m1, np * 4u); put(&w, ag->m2, np * 4u); put(&w, &ag->adam_t, 8);
    }
    for (int k = n - 1; k >= 0; k--) { unlock(agents[k]); tunlock(agents[k]); }
    uint64_t h = w.h;
    if (fwrite(&h, 1, 8, w.f) != 8) w.bad = 1;
    if (fflush(w.f) || w.bad) { fclose(w.f); remove(tmp); snprintf(err, errlen, "%s: write failed", tmp); return -1; }
    fclose(w.f);
    if (rename(tmp, path)) { remove(tmp); snprintf(err, errlen, "%s: cannot rename into place", path); return -1; }
    return 0;
}

int32_t hbl_agents_load(const char *path, const char *policy, struct hbl_agent *const *agents,
                        int32_t n, char *err, int32_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open", path); return -1; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 56 || size > (1L << 30)) {
        fclose(f);
        snprintf(err, errlen, "%s: not an hbl agent file (size %ld)", path, size);
        return -1;
    }
    uint8_t *buf = malloc((size_t)size);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f); free(buf);
        snprintf(err, errlen, "%s: read failed", path);
        return -1;
    }
    fclose(f);
    int rc = -1;
    uint64_t h, want;
    uint32_t version, count;
    memcpy(&want, buf + size - 8, 8);
    h = fnv(0xcbf29ce484222325ULL, buf, (size_t)size - 8);
    memcpy(&version, buf + 8, 4);
    memcpy(&count, buf + 44, 4);
    char name[33] = {0};
    memcpy(name, buf + 12, 32);
    if (memcmp(buf, AGENT_MAGIC, 8)) { snprintf(err, errlen, "%s: not an hbl agent file", path); goto out; }
    if (version != AGENT_VERSION && version != 1) {
        snprintf(err, errlen, "%s: agent file version %u, this hbl reads versions 1 and %u", path, version,
                 AGENT_VERSION);
        goto out;
    }
    if (h != want) { snprintf(err, errlen, "%s: checksum mismatch: the file is corrupt", path); goto out; }
    if (strcmp(name, policy)) {
        snprintf(err, errlen, "%s: holds agents of policy '%s', not '%s'", path, name, policy);
        goto out;
    }
    if ((int32_t)count != n) { snprintf(err, errlen, "%s: holds %u agents, policy needs %d", path, count, n); goto out; }
    /* validate every agent before touching any: a refused file changes nothing */
    for (int pass = 0; pass < 2; pass++) {
        size_t off = 48;
        for (int k = 0; k < n; k++) {
            struct hbl_agent *ag = agents[k];
            struct shape s, mine;
            uint32_t np;
            if (off + sizeof(s) + 4 > (size_t)size - 8) { snprintf(err, errlen, "%s: truncated", path); goto out; }
            memcpy(&s, buf + off, sizeof(s)); off += sizeof(s);
            memcpy(&np, buf + off, 4); off += 4;
            shape_of(&ag->cfg, &mine);
            if (memcmp(&s, &mine, sizeof(s)) || np != (uint32_t)ag->m.np) {
                snprintf(err, errlen, "%s: agent %d has another shape (features, bins, devices, layers or head) "
                         "than this configuration: %d features x %d actions in the file, %d x %d here",
                         path, k, s.nfeatures, s.nactions, mine.nfeatures, mine.nactions);
                goto out;
            }
            size_t pn = version == 1 ? (size_t)ag->m.pnp * 4u : (size_t)ag->m.qbytes;
            size_t need = pn + (size_t)np * 12u + 8;
            if (off + need > (size_t)size - 8) { snprintf(err, errlen, "%s: truncated", path); goto out; }
            if (pass == 1) {
                float *w1 = NULL;
                if (version == 1 && !(w1 = malloc((size_t)np * 4u))) {
                    snprintf(err, errlen, "out of memory");
                    goto out;
                }
                tlock(ag);
                lock(ag);
                if (version == 1) {
                    float *wt = (float *)(buf + off);   /* malloc'd: aligned for floats; off is a multiple of 4 */
                    hbl_mlp_untranspose(&ag->m, wt, w1);
                    hbl_mlp_quantize(&ag->m, w1, ag->scale, ag->inmax, ag->q);
                    if (ag->ref) memcpy(ag->ref, wt, pn);
                    free(w1);
                } else {
                    memcpy(ag->q, buf + off, pn);
                }
                ag->ref_valid = ag->ref && version == 1;   /* a version 2 file holds no FP32 inference copy */
                memcpy(ag->w_train, buf + off + pn, np * 4u);
                memcpy(ag->m1, buf + off + pn + np * 4u, np * 4u);
                memcpy(ag->m2, buf + off + pn + np * 8u, np * 4u);
                memcpy(&ag->adam_t, buf + off + pn + np * 12u, 8);
                cache_invalidate(ag);   /* its decisions were of the old weights */
                ag->loaded = 1;
                unlock(ag);
                tunlock(ag);
            }
            off += need;
        }
        if (off != (size_t)size - 8) { snprintf(err, errlen, "%s: trailing data", path); goto out; }
    }
    rc = 0;
out:
    free(buf);
    return rc;
}
