/*
 * The agent's experience and learning: the experience buffer, a training step
 * over a minibatch a tile at a time (DQN's Huber loss or C51's cross-entropy to
 * the projected Bellman target, against the inference network as the target),
 * the optimizer (Adam or RMSprop), syncing the trained weights into the
 * inference copy, and when to do each (inline, or on a background thread).
 */
#pragma GCC optimize("O3", "fast-math")
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "agent_internal.h"

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

int32_t hbl_agent_buffer_states(const struct hbl_agent *ag, uint8_t *out, int32_t max)
{
    int F = ag->cfg.nfeatures;
    int64_t n = ag->nbuf < max ? ag->nbuf : max;
    int64_t start = ag->nbuf < ag->cfg.buffer ? 0 : ag->head;   /* oldest first */
    for (int64_t k = 0; k < n; k++)
        memcpy(out + k * F, ag->bs + ((start + k) % ag->cfg.buffer) * F, (size_t)F);
    return (int32_t)n;
}

int32_t hbl_agent_buffer_rewards(const struct hbl_agent *ag, uint8_t *actions, float *rewards, int32_t max)
{
    int64_t n = ag->nbuf < max ? ag->nbuf : max;
    int64_t start = ag->nbuf < ag->cfg.buffer ? 0 : ag->head;   /* oldest first, as hbl_agent_buffer_states */
    for (int64_t k = 0; k < n; k++) {
        int64_t i = (start + k) % ag->cfg.buffer;
        actions[k] = ag->ba[i];
        rewards[k] = (float)ag->br[i];
    }
    return (int32_t)n;
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
            hbl_ag_to_input(ag, s1, x1);
            for (int f = 0; f < F; f++) x[f * T + k] = x1[f];   /* into the tile's column k */
        }
        hbl_mlp_forward(m, ag->w_train, x, z, a);
        for (int k = 0; k < n; k++) {
            /* target from the inference (target) network */
            int16_t h2[2048];
            const float *o2 = hbl_ag_infer_q(ag, s2[k], ag->z2, h2);
            hbl_ag_values_of(ag, o2, ag->m.qgpad, hbl_mlp_q_shifts(m, ag->q), v);
            int best = hbl_ag_argmax(v, NA);
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
    hbl_ag_cache_invalidate(ag);
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
