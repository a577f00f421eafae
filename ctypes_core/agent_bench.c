/*
 * Measuring the agent: benchmarks of its decision path (quantized, FP32,
 * through the cache) and the FP32 shadow network that counts how often the
 * quantized network's greedy action is the FP32 one's (hbl_agent_set_shadow).
 */
#pragma GCC optimize("O3", "fast-math")
#include <stdlib.h>
#include <time.h>
#include "agent_internal.h"

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
            hbl_ag_to_input(ag, s, x);
            sink += hbl_mlp_infer_linear(&ag->m, wt, x, z)[i % ag->nout];
        } else {
            sink += hbl_ag_greedy_fp32(ag, wt, s);
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
    hbl_ag_cache_invalidate(ag);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < n; i++) {
        if (i && i % sync_every == 0) hbl_ag_cache_invalidate(ag);
        sink += hbl_ag_greedy_cached(ag, states + (i % nstates) * F);
    }
    (void)sink;
    return ns_since(&t0, n);
}
