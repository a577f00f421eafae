/* Feed-forward networks: forward and backward passes for the agents.
 * Compiled with fast-math so the compiler vectorizes the dot products and the
 * exponentials of swish; inference is on the request path and must be tiny. */
#pragma GCC optimize("O3", "fast-math")
#include <math.h>
#include <string.h>
#include "nn.h"
#include "hbl_api.h"

int hbl_mlp_init(struct hbl_mlp *m, const int32_t *sizes, int nl)
{
    if (nl < 1 || nl > HBL_MLP_MAX_LAYERS) return -1;
    memset(m, 0, sizeof(*m));
    m->nl = nl;
    int np = 0, units = 0, widest = 0;
    for (int l = 0; l <= nl; l++) {
        if (sizes[l] < 1 || sizes[l] > 4096) return -1;
        m->sizes[l] = sizes[l];
        if (sizes[l] > widest) widest = sizes[l];
    }
    for (int l = 0; l < nl; l++) {
        m->woff[l] = np; np += sizes[l] * sizes[l + 1];
        m->boff[l] = np; np += sizes[l + 1];
        m->uoff[l] = units; units += sizes[l + 1];
    }
    m->np = np; m->units = units; m->widest = widest;
    int pnp = 0, punits = 0;
    for (int l = 0; l <= nl; l++) m->psizes[l] = (sizes[l] + 7) & ~7;
    for (int l = 0; l < nl; l++) {
        m->pwoff[l] = pnp; pnp += m->psizes[l] * m->psizes[l + 1];
        m->pboff[l] = pnp; pnp += m->psizes[l + 1];
        m->puoff[l] = punits; punits += m->psizes[l + 1];
    }
    m->pnp = pnp; m->punits = punits;
    return 0;
}

void hbl_mlp_init_params(const struct hbl_mlp *m, float *w, uint64_t *rng)
{
    for (int l = 0; l < m->nl; l++) {
        int in = m->sizes[l], out = m->sizes[l + 1];
        float lim = sqrtf(6.0f / (float)(in + out));   /* Glorot uniform */
        for (int i = 0; i < in * out; i++) w[m->woff[l] + i] = (float)(2 * hbl_uniform(rng) - 1) * lim;
        for (int j = 0; j < out; j++) w[m->boff[l] + j] = 0.0f;
    }
}

static inline float sigmoidf(float x) { return 1.0f / (1.0f + hbl_expf(-x)); }

void hbl_mlp_forward(const struct hbl_mlp *m, const float *w, const float *x, float *z, float *a)
{
    const float *in = x;
    for (int l = 0; l < m->nl; l++) {
        int ni = m->sizes[l], no = m->sizes[l + 1];
        const float *W = w + m->woff[l], *b = w + m->boff[l];
        float *zl = z + m->uoff[l], *al = a + m->uoff[l];
        for (int j = 0; j < no; j++) {
            const float *row = W + (size_t)j * ni;
            float acc = b[j];
            for (int i = 0; i < ni; i++) acc += row[i] * in[i];
            zl[j] = acc;
        }
        if (l < m->nl - 1) {
            for (int j = 0; j < no; j++) al[j] = zl[j] * sigmoidf(zl[j]);
        } else {
            memcpy(al, zl, (size_t)no * sizeof(float));
        }
        in = al;
    }
}

void hbl_mlp_backward(const struct hbl_mlp *m, const float *w, const float *x, const float *z,
                      const float *a, const float *dout, float *grad, float *scratch)
{
    float *delta = scratch, *prev = scratch + m->widest;
    memcpy(delta, dout, (size_t)m->sizes[m->nl] * sizeof(float));
    for (int l = m->nl - 1; l >= 0; l--) {
        int ni = m->sizes[l], no = m->sizes[l + 1];
        const float *in = l == 0 ? x : a + m->uoff[l - 1];
        const float *W = w + m->woff[l];
        float *gW = grad + m->woff[l], *gb = grad + m->boff[l];
        for (int j = 0; j < no; j++) {
            float d = delta[j];
            gb[j] += d;
            float *grow = gW + (size_t)j * ni;
            for (int i = 0; i < ni; i++) grow[i] += d * in[i];
        }
        if (l == 0) break;
        const float *zp = z + m->uoff[l - 1];
        for (int i = 0; i < ni; i++) prev[i] = 0.0f;
        for (int j = 0; j < no; j++) {
            const float *row = W + (size_t)j * ni;
            float d = delta[j];
            for (int i = 0; i < ni; i++) prev[i] += row[i] * d;
        }
        for (int i = 0; i < ni; i++) {   /* swish'(z) = s (1 + z (1 - s)) */
            float s = sigmoidf(zp[i]);
            prev[i] *= s * (1.0f + zp[i] * (1.0f - s));
        }
        float *t = delta; delta = prev; prev = t;
    }
}

void hbl_adam(float *w, const float *g, float *m1, float *m2, int n, float lr, uint64_t t)
{
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    float c1 = 1.0f / (1.0f - powf(b1, (float)t)), c2 = 1.0f / (1.0f - powf(b2, (float)t));
    for (int i = 0; i < n; i++) {
        m1[i] = b1 * m1[i] + (1 - b1) * g[i];
        m2[i] = b2 * m2[i] + (1 - b2) * g[i] * g[i];
        w[i] -= lr * (m1[i] * c1) / (sqrtf(m2[i] * c2) + eps);
    }
}

void hbl_mlp_transpose(const struct hbl_mlp *m, const float *w, float *wt)
{
    memset(wt, 0, (size_t)m->pnp * sizeof(float));
    for (int l = 0; l < m->nl; l++) {
        int ni = m->sizes[l], no = m->sizes[l + 1], pno = m->psizes[l + 1];
        const float *W = w + m->woff[l];
        float *T = wt + m->pwoff[l];
        for (int j = 0; j < no; j++)
            for (int i = 0; i < ni; i++) T[(size_t)i * pno + j] = W[(size_t)j * ni + i];
        memcpy(wt + m->pboff[l], w + m->boff[l], (size_t)no * sizeof(float));
    }
}

/* nb (1..8) output registers of out = b + T^T in, accumulated at once so the
 * FMA chains run in parallel; nb is a constant after inlining, so acc stays
 * in registers. */
static inline __attribute__((always_inline)) void affine_block(
    const int nb, const float *col, const float *b, const float *in, int ni, int no, float *out)
{
    v8f acc[8];
    for (int k = 0; k < nb; k++) acc[k] = v8_load(b + k * 8);
    for (int i = 0; i < ni; i++, col += no) {
        v8f x = (v8f){} + in[i];
        for (int k = 0; k < nb; k++) acc[k] += v8_load(col + k * 8) * x;
    }
    for (int k = 0; k < nb; k++) v8_store(out + k * 8, acc[k]);
}

/* out = b + T^T in; ni inputs, no outputs (a multiple of 8). */
static void affine_t(const float *T, const float *b, const float *in, int ni, int no, float *out)
{
    int nv = no / 8;
    for (int v0 = 0; v0 < nv; v0 += 8) {
        const float *col = T + v0 * 8, *bb = b + v0 * 8;
        float *o = out + v0 * 8;
        switch (nv - v0 < 8 ? nv - v0 : 8) {
        case 1: affine_block(1, col, bb, in, ni, no, o); break;
        case 2: affine_block(2, col, bb, in, ni, no, o); break;
        case 3: affine_block(3, col, bb, in, ni, no, o); break;
        case 4: affine_block(4, col, bb, in, ni, no, o); break;
        case 5: affine_block(5, col, bb, in, ni, no, o); break;
        case 6: affine_block(6, col, bb, in, ni, no, o); break;
        case 7: affine_block(7, col, bb, in, ni, no, o); break;
        default: affine_block(8, col, bb, in, ni, no, o); break;
        }
    }
}

static void swish(float *v, int n)
{
    for (int j = 0; j < n; j += 8) {
        v8f z = v8_load(v + j);
        v8_store(v + j, z / (1.0f + v8_exp(-z)));
    }
}

static inline __attribute__((always_inline)) const float *infer(
    const struct hbl_mlp *m, const float *wt, const float *x, float *z, const int activate)
{
    const float *in = x;
    for (int l = 0; l < m->nl; l++) {
        int no = m->psizes[l + 1];
        float *zl = z + m->puoff[l];
        affine_t(wt + m->pwoff[l], wt + m->pboff[l], in, m->sizes[l], no, zl);
        if (activate && l < m->nl - 1) swish(zl, no);
        in = zl;
    }
    return z + m->puoff[m->nl - 1];
}

const float *hbl_mlp_infer(const struct hbl_mlp *m, const float *wt, const float *x, float *z)
{
    return infer(m, wt, x, z, 1);
}

/* The same layers without their activations: the multiply-adds alone, which
 * `hbl bench` times to show what part of a decision no exponential can save. */
const float *hbl_mlp_infer_linear(const struct hbl_mlp *m, const float *wt, const float *x, float *z)
{
    return infer(m, wt, x, z, 0);
}

/* ---- reference entry points for the tests ---- */

int32_t hbl_mlp_nparams(const int32_t *sizes, int32_t nlayers)
{
    struct hbl_mlp m;
    return hbl_mlp_init(&m, sizes, nlayers) ? -1 : m.np;
}

void hbl_mlp_forward_ref(const int32_t *sizes, int32_t nlayers, const float *params, const float *x, float *out)
{
    struct hbl_mlp m;
    if (hbl_mlp_init(&m, sizes, nlayers)) return;
    float z[4096], a[4096];
    if (m.units > 4096) return;
    hbl_mlp_forward(&m, params, x, z, a);
    memcpy(out, z + m.uoff[m.nl - 1], (size_t)m.sizes[m.nl] * sizeof(float));
}

void hbl_mlp_grad_ref(const int32_t *sizes, int32_t nlayers, const float *params, const float *x,
                      const float *dout, float *grad)
{
    struct hbl_mlp m;
    if (hbl_mlp_init(&m, sizes, nlayers)) return;
    float z[4096], a[4096], scratch[8192];
    if (m.units > 4096) return;
    memset(grad, 0, (size_t)m.np * sizeof(float));
    hbl_mlp_forward(&m, params, x, z, a);
    hbl_mlp_backward(&m, params, x, z, a, dout, grad, scratch);
}
