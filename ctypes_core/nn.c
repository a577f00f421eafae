/* Feed-forward networks: forward and backward passes for the agents.
 * Compiled with fast-math so the compiler vectorizes the dot products and the
 * exponentials of swish; inference is on the request path and must be tiny. */
#pragma GCC optimize("O3", "fast-math")
#include <math.h>
#include <stdlib.h>
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

#define TV (HBL_TILE / 8)   /* vectors in a tile row */

/* one vector of row r of a tile */
static inline v8f row_v(const float *t, int r, int v) { return v8_load(t + (size_t)r * HBL_TILE + v * 8); }

void hbl_mlp_forward(const struct hbl_mlp *m, const float *w, const float *x, float *z, float *a)
{
    const float *in = x;
    for (int l = 0; l < m->nl; l++) {
        int ni = m->sizes[l], no = m->sizes[l + 1], hidden = l < m->nl - 1;
        const float *W = w + m->woff[l], *b = w + m->boff[l];
        float *zl = z + (size_t)m->uoff[l] * HBL_TILE, *al = a + (size_t)m->uoff[l] * HBL_TILE;
        for (int j = 0; j < no; j++) {
            const float *row = W + (size_t)j * ni;
            v8f acc[TV];
            for (int v = 0; v < TV; v++) acc[v] = (v8f){} + b[j];
            for (int i = 0; i < ni; i++)
                for (int v = 0; v < TV; v++) acc[v] += row[i] * row_v(in, i, v);
            for (int v = 0; v < TV; v++) {
                v8_store(zl + (size_t)j * HBL_TILE + v * 8, acc[v]);
                if (hidden) v8_store(al + (size_t)j * HBL_TILE + v * 8, acc[v] / (1.0f + v8_exp(-acc[v])));
            }
        }
        in = al;
    }
}

void hbl_mlp_backward(const struct hbl_mlp *m, const float *w, const float *x, const float *z,
                      const float *a, const float *dout, float *grad, float *scratch)
{
    const float *delta = dout;
    for (int l = m->nl - 1; l >= 0; l--) {
        int ni = m->sizes[l], no = m->sizes[l + 1];
        const float *in = l == 0 ? x : a + (size_t)m->uoff[l - 1] * HBL_TILE;
        const float *W = w + m->woff[l];
        float *gW = grad + m->woff[l], *gb = grad + m->boff[l];
        for (int j = 0; j < no; j++) {   /* sums over the tile's samples */
            v8f s = {};
            for (int v = 0; v < TV; v++) s += row_v(delta, j, v);
            gb[j] += v8_hsum(s);
            for (int i = 0; i < ni; i++) {
                v8f g = {};
                for (int v = 0; v < TV; v++) g += row_v(delta, j, v) * row_v(in, i, v);
                gW[(size_t)j * ni + i] += v8_hsum(g);
            }
        }
        if (l == 0) break;
        /* the previous layer's delta: W^T delta times swish'(z) = s (1 + z (1 - s)) */
        float *prev = scratch + (size_t)(l & 1) * m->widest * HBL_TILE;
        const float *zp = z + (size_t)m->uoff[l - 1] * HBL_TILE;
        for (int i = 0; i < ni; i++) {
            v8f acc[TV] = {};
            for (int j = 0; j < no; j++)
                for (int v = 0; v < TV; v++) acc[v] += W[(size_t)j * ni + i] * row_v(delta, j, v);
            for (int v = 0; v < TV; v++) {
                v8f zz = row_v(zp, i, v), s = 1.0f / (1.0f + v8_exp(-zz));
                v8_store(prev + (size_t)i * HBL_TILE + v * 8, acc[v] * s * (1.0f + zz * (1.0f - s)));
            }
        }
        delta = prev;
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

/* n samples, one a row (x: n x sizes[0], dout and out: n x sizes[nl]), passed
 * through the training kernels a tile at a time as hbl_agent_train does; the
 * gradient is summed over them.  dout NULL: the forward pass alone. */
static void mlp_ref(const int32_t *sizes, int32_t nlayers, const float *params, const float *x,
                    const float *dout, int32_t n, float *out, float *grad)
{
    struct hbl_mlp m;
    if (hbl_mlp_init(&m, sizes, nlayers)) return;
    const size_t T = HBL_TILE, ni = (size_t)m.sizes[0], no = (size_t)m.sizes[m.nl];
    float *xt = calloc(ni * T, 4), *dt = calloc(no * T, 4), *z = calloc((size_t)m.units * T, 4),
          *a = calloc((size_t)m.units * T, 4), *scratch = calloc(2 * (size_t)m.widest * T, 4);
    if (grad) memset(grad, 0, (size_t)m.np * sizeof(float));
    for (size_t k0 = 0; xt && dt && z && a && scratch && k0 < (size_t)n; k0 += T) {
        size_t nk = (size_t)n - k0 < T ? (size_t)n - k0 : T;
        memset(xt, 0, ni * T * 4);
        memset(dt, 0, no * T * 4);   /* padding samples add nothing */
        for (size_t k = 0; k < nk; k++) {
            for (size_t i = 0; i < ni; i++) xt[i * T + k] = x[(k0 + k) * ni + i];
            for (size_t j = 0; dout && j < no; j++) dt[j * T + k] = dout[(k0 + k) * no + j];
        }
        hbl_mlp_forward(&m, params, xt, z, a);
        if (grad) hbl_mlp_backward(&m, params, xt, z, a, dt, grad, scratch);
        for (size_t k = 0; out && k < nk; k++)
            for (size_t j = 0; j < no; j++) out[(k0 + k) * no + j] = z[((size_t)m.uoff[m.nl - 1] + j) * T + k];
    }
    free(xt); free(dt); free(z); free(a); free(scratch);
}

void hbl_mlp_forward_ref(const int32_t *sizes, int32_t nlayers, const float *params, const float *x,
                         int32_t n, float *out)
{
    mlp_ref(sizes, nlayers, params, x, NULL, n, out, NULL);
}

void hbl_mlp_grad_ref(const int32_t *sizes, int32_t nlayers, const float *params, const float *x,
                      const float *dout, int32_t n, float *grad)
{
    mlp_ref(sizes, nlayers, params, x, dout, n, NULL, grad);
}
