/*
 * The learning agent's parts, shared among its files (agent*.c) and nothing
 * else: its state, the locks of background mode, and the decision path's
 * pieces that training and the benchmarks reuse.  hbl_api.h is its interface.
 * From the bottom up: construction (agent.c), the decision path
 * (agent_decide.c), experience and training (agent_train.c); beside them,
 * benchmarks and the FP32 shadow (agent_bench.c) and saved agents
 * (agent_file.c).
 */
#ifndef HBL_AGENT_INTERNAL_H
#define HBL_AGENT_INTERNAL_H
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

static inline void hbl_ag_to_input(const struct hbl_agent *ag, const uint8_t *s, float *x)
{
    for (int f = 0; f < ag->cfg.nfeatures; f++) x[f] = (float)s[f] * ag->scale[f];
}

static inline int hbl_ag_argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

/* ---- the decision path (agent_decide.c) ---- */

/* Expected value of each action from an output layer whose actions are A units apart;
 * shift: the quantized network's output shifts, or NULL for an FP32 output layer. */
void hbl_ag_values_of(const struct hbl_agent *ag, const float *out, int A, const float *shift, float *v);
/* The inference network's forward pass on the caller's scratch (z, h); returns its output layer. */
const float *hbl_ag_infer_q(const struct hbl_agent *ag, const uint8_t *state, float *z, int16_t *h);
/* The FP32 network's greedy action over transposed weights wt. */
int hbl_ag_greedy_fp32(const struct hbl_agent *ag, const float *wt, const uint8_t *state);
/* The greedy action through the decision cache. */
int hbl_ag_greedy_cached(struct hbl_agent *ag, const uint8_t *state);
/* The cached decisions are of old weights: forget them. */
void hbl_ag_cache_invalidate(struct hbl_agent *ag);

#endif
