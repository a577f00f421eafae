/*
 * The agent's decision path: one forward pass of the quantized inference
 * network on the stack (no allocation, no shared scratch), the actions'
 * values from its output (DQN, or C51's expected value of each action's
 * distribution), the decision cache, and epsilon-greedy action choice.
 */
#pragma GCC optimize("O3", "fast-math")
#include <math.h>
#include <string.h>
#include "agent_internal.h"

/* Expected value of each action from an output layer (C51: softmax over the
 * atoms, then the mean of the support; eight atoms at a time), its actions A
 * units apart: the atoms (FP32 layout), or the atoms padded to whole registers
 * with logits that vanish under the softmax (quantized layout, m.qgpad).  A
 * last, partial group of atoms is read as a whole vector (`out` has OUT_SLACK
 * floats past its end); only its own lanes are used. */
void hbl_ag_values_of(const struct hbl_agent *ag, const float *out, int A, const float *shift, float *v)
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

/* The forward pass of the inference network on the stack: no shared scratch,
 * so a live controller may decide on one thread while another trains.  The
 * quantized network takes the bins themselves as its inputs. */
const float *hbl_ag_infer_q(const struct hbl_agent *ag, const uint8_t *state, float *z, int16_t *h)
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
    hbl_ag_values_of(ag, hbl_ag_infer_q(ag, state, z, h), ag->m.qgpad, hbl_mlp_q_shifts(&ag->m, ag->q), v);
    return hbl_ag_argmax(v, ag->cfg.nactions);
}

/* The FP32 network's greedy action over transposed weights wt. */
int hbl_ag_greedy_fp32(const struct hbl_agent *ag, const float *wt, const uint8_t *state)
{
    float x[16] = {0}, z[2048], v[8];
    if (ag->m.punits + OUT_SLACK > 2048) return 0;
    hbl_ag_to_input(ag, state, x);
    hbl_ag_values_of(ag, hbl_mlp_infer(&ag->m, wt, x, z), ag->cfg.atoms, NULL, v);
    return hbl_ag_argmax(v, ag->cfg.nactions);
}

int32_t hbl_agent_greedy(const struct hbl_agent *ag, const uint8_t *state)
{
    float v[8];
    return greedy(ag, state, v);
}

int hbl_ag_greedy_cached(struct hbl_agent *ag, const uint8_t *state)
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

void hbl_ag_cache_invalidate(struct hbl_agent *ag)
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
        a = hbl_ag_greedy_cached(ag, state);
        if (ag->ref_valid) {
            ag->compared++;
            ag->agreed += hbl_ag_greedy_fp32(ag, ag->ref, state) == a;
        }
    }
    ag->st.actions[a]++;
    unlock(ag);
    return a;
}
