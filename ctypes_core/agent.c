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
 *
 * This file builds and frees an agent and answers what it is; the decision
 * path is agent_decide.c, experience and training agent_train.c, benchmarks
 * and the FP32 shadow agent_bench.c, saved agents agent_file.c
 * (agent_internal.h).
 */
#pragma GCC optimize("O3", "fast-math")
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent_internal.h"

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
    else if (c->init_out < 0 || c->init_out > 2) why = "init_out must be 0, 1 or 2";
    else if (c->init_seed < 0) why = "init_seed must be a whole number from 0 to 2^31 - 1";
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
    if (cfg->init_seed) {   /* the weights another seed draws; ag->rng stays where this seed's draw left it */
        uint64_t r = (uint64_t)cfg->init_seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
        if (!r) r = 1;
        hbl_mlp_init_params(&ag->m, ag->w_train, &r);
    }
    if (cfg->init_out) {   /* the output layer at zero: no action preferred anywhere before training */
        int l = ag->m.nl - 1;
        memset(ag->w_train + ag->m.woff[l], 0, (size_t)ag->m.sizes[l] * (size_t)ag->m.sizes[l + 1] * sizeof(float));
        if (cfg->init_out == 2 && c51)   /* pessimistic: each action's mass 0.99 on the lowest atom */
            for (int a = 0; a < cfg->nactions; a++)
                ag->w_train[ag->m.boff[l] + a * cfg->atoms] = logf(99.0f * (float)(cfg->atoms - 1));
    }
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

int32_t hbl_agent_moments(const struct hbl_agent *ag, float *m1, float *m2, int32_t max)
{
    struct hbl_agent *w = (struct hbl_agent *)ag;
    tlock(w);
    if (max >= ag->m.np) {
        memcpy(m1, ag->m1, (size_t)ag->m.np * sizeof(float));
        memcpy(m2, ag->m2, (size_t)ag->m.np * sizeof(float));
    }
    tunlock(w);
    return ag->m.np;
}

/* Weights from elsewhere (an average of trained copies, results/pretrain/soup.txt): the training
 * network's, the optimizer's moments when given, then the deciding network synced to them (the locks
 * are not re-entrant and sync takes both, so with background training on, a training step may land
 * between the two: set weights on an agent that is not training, as scripts/soup.py does). */
int32_t hbl_agent_set_params(struct hbl_agent *ag, const float *w, const float *m1, const float *m2, int32_t n)
{
    if (n != ag->m.np) return -1;
    tlock(ag);
    memcpy(ag->w_train, w, (size_t)n * sizeof(float));
    if (m1) memcpy(ag->m1, m1, (size_t)n * sizeof(float));
    if (m2) memcpy(ag->m2, m2, (size_t)n * sizeof(float));
    tunlock(ag);
    hbl_agent_sync(ag);
    return 0;
}
