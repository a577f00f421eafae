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
    hbl_mlp_group_outputs(m, 0);
    return 0;
}

void hbl_mlp_group_outputs(struct hbl_mlp *m, int group)
{
    int nl = m->nl, nout = m->sizes[nl];
    m->qgroup = group > 0 && nout % group == 0 ? group : 0;
    m->qgpad = m->qgroup ? (m->qgroup + 7) & ~7 : 0;
    m->qout = m->qgroup ? nout / m->qgroup * m->qgpad : m->psizes[nl];
    m->qunits = m->puoff[nl - 1] + m->qout;
    int qnf = 0, qnw = 0;
    for (int l = 0; l < nl; l++) {
        int pno = l == nl - 1 ? m->qout : m->psizes[l + 1];
        m->qpairs[l] = (m->sizes[l] + 1) / 2;
        m->qsoff[l] = qnf; m->qboff[l] = qnf + pno; m->qaoff[l] = qnf + 2 * pno; qnf += 3 * pno;
        m->qwoff[l] = qnw; qnw += m->qpairs[l] * pno * 2;
    }
    m->qnf = qnf; m->qnw = qnw;
    m->qbytes = qnf * 4 + qnw * 2;
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

void hbl_mlp_untranspose(const struct hbl_mlp *m, const float *wt, float *w)
{
    for (int l = 0; l < m->nl; l++) {
        int ni = m->sizes[l], no = m->sizes[l + 1], pno = m->psizes[l + 1];
        const float *T = wt + m->pwoff[l];
        float *W = w + m->woff[l];
        for (int j = 0; j < no; j++)
            for (int i = 0; i < ni; i++) W[(size_t)j * ni + i] = T[(size_t)i * pno + j];
        memcpy(w + m->boff[l], wt + m->pboff[l], (size_t)no * sizeof(float));
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

/* ---- quantized inference ---- */

#define Q_ACT 8191.0       /* activations in [-8191, 8191]: 13 bits, so a pair of products stays in int32 */
#define Q_W 32767.0        /* weights in [-32767, 32767] */
#define Q_SUM 2130706432.0 /* 2^31 - 2^24: bound on a unit's sum, the margin covering rounding */

static double swish_d(double z) { return z / (1.0 + exp(-z)); }

void hbl_mlp_quantize(const struct hbl_mlp *m, const float *w, const float *in_scale, const float *in_max, void *q)
{
    float *qf = q;
    int16_t *qw = (int16_t *)((char *)q + (size_t)m->qnf * 4);
    memset(q, 0, (size_t)m->qbytes);
    /* per input of the current layer: its real range [lo, hi], the real value
     * of one quantum (ascale) and the range of x_q, [qlo, qhi] */
    double lo[512], hi[512], ascale[512], qlo[512], qhi[512], nlo[512], nhi[512];
    for (int i = 0; i < m->sizes[0]; i++) {
        lo[i] = 0; hi[i] = (double)in_max[i] * in_scale[i];
        ascale[i] = in_scale[i]; qlo[i] = 0; qhi[i] = in_max[i];
    }
    for (int l = 0; l < m->nl; l++) {
        int ni = m->sizes[l], no = m->sizes[l + 1], hidden = l < m->nl - 1;
        int pno = hidden ? m->psizes[l + 1] : m->qout;
        const float *W = w + m->woff[l], *b = w + m->boff[l];
        float *S = qf + m->qsoff[l], *B = qf + m->qboff[l], *IA = qf + m->qaoff[l];
        int16_t *T = qw + m->qwoff[l];
        double glo[8], ghi[8];   /* bounds of each group's outputs */
        for (int g = 0; g < 8; g++) { glo[g] = 1e300; ghi[g] = -1e300; }
        for (int k = 0; k < no; k++) {
            int j = hidden || !m->qgroup ? k : k / m->qgroup * m->qgpad + k % m->qgroup;   /* k's place */
            const float *row = W + (size_t)k * ni;
            /* the sum's range, in units of the weights' quantum: its larger end
             * bounds it (the weights' rounding adds at most 512 x 8201 / 2 < 2^24) */
            double maxabs = 0, sp = 0, sn = 0, zlo = b[k], zhi = b[k];
            for (int i = 0; i < ni; i++) {
                double wq = row[i] * ascale[i];     /* weight of x_q */
                maxabs = fmax(maxabs, fabs(wq));
                sp += fmax(wq * qlo[i], wq * qhi[i]);
                sn += fmin(wq * qlo[i], wq * qhi[i]);
                zlo += row[i] > 0 ? row[i] * lo[i] : row[i] * hi[i];
                zhi += row[i] > 0 ? row[i] * hi[i] : row[i] * lo[i];
            }
            double s = fmax(maxabs / Q_W, fmax(sp, -sn) / Q_SUM);
            if (!(s > 0)) s = 1;
            for (int i = 0; i < ni; i++)
                T[((size_t)(i / 2) * pno + j) * 2 + (i & 1)] = (int16_t)lrint(row[i] * ascale[i] / s);
            S[j] = (float)s;
            B[j] = b[k];
            if (!hidden) {
                if (m->qgroup) {
                    int g = k / m->qgroup;
                    glo[g] = fmin(glo[g], zlo); ghi[g] = fmax(ghi[g], zhi);
                }
                continue;
            }
            /* swish is smallest at z = -1.2785 (-0.2785) and monotone on either side */
            double hl = fmin(swish_d(zlo), swish_d(zhi)), hh = fmax(swish_d(zlo), swish_d(zhi));
            if (zlo < -1.2785 && zhi > -1.2785) hl = -0.27847;
            double amax = fmax(fabs(hl), fabs(hh));
            IA[j] = amax > 0 ? (float)(Q_ACT / amax) : 0.0f;
            nlo[j] = hl; nhi[j] = hh;
        }
        if (!hidden) {
            int G = m->qgroup ? no / m->qgroup : 0;
            for (int g = 0; g < G; g++) {
                float shift = (float)(ghi[g] - 40), *gs = S + g * m->qgpad, *gb = B + g * m->qgpad;
                int safe = ghi[g] - glo[g] <= 100;
                IA[g] = safe ? shift : 0.0f;
                IA[G + g] = (float)safe;
                for (int i = 0; safe && i < m->qgroup; i++) {
                    gs[i] *= 1.44269504f;
                    gb[i] = (gb[i] - shift) * 1.44269504f;
                }
                /* padding: nothing under a softmax (exp(-87) next to atoms of at least exp(-60)) */
                for (int i = m->qgroup; i < m->qgpad; i++) gb[i] = safe ? -87.0f * 1.44269504f : -1e30f;
            }
            break;
        }
        for (int j = 0; j < no; j++) {
            lo[j] = nlo[j]; hi[j] = nhi[j];
            ascale[j] = IA[j] > 0 ? 1.0 / IA[j] : 0.0;
            /* the quick exp, the approximate reciprocal (12 bits) and the
             * rounding may take an activation up to 3 quanta past its bound: 10 */
            qlo[j] = floor(lo[j] * IA[j]) - 10;
            qhi[j] = ceil(hi[j] * IA[j]) + 10;
        }
    }
}

/* nb (1..8) output registers of z = S * (T^T in) + B, the int32 sums kept in
 * registers as affine_block's float ones are.  A hidden layer (IA not NULL)
 * goes on in the same registers to its activations, quantized to int16 in h
 * (swish, its sigmoid from the quick 2^x and the approximate reciprocal), so
 * that the sums are never stored and read back on the decision path's chain. */
static inline __attribute__((always_inline)) void qaffine_block(
    const int nb, const int16_t *col, const float *S, const float *B, const int16_t *in, int npairs, int no,
    float *z, const float *IA, int16_t *h)
{
    v8i acc[8];
    for (int k = 0; k < nb; k++) acc[k] = (v8i){};
    for (int p = 0; p < npairs; p++, col += 2 * no)
        for (int k = 0; k < nb; k++) acc[k] += v8_madd16(col + k * 16, in + 2 * p);
    for (int k = 0; k < nb; k++) {
        v8f v = __builtin_convertvector(acc[k], v8f) * v8_load(S + k * 8) + v8_load(B + k * 8);
        if (!IA) {
            v8_store(z + k * 8, v);
            continue;
        }
        v8f e = v8_exp2_quick(v8_max(v8_min(v * -1.44269504f, (v8f){} + 125.0f), (v8f){} - 125.0f));
        v = v * v8_load(IA + k * 8) * v8_rcp(1.0f + e);
        v8s hq = __builtin_convertvector(v8_rint(v), v8s);
        memcpy(h + k * 8, &hq, sizeof(hq));
    }
}

static void qaffine(const int16_t *T, const float *S, const float *B, const int16_t *in, int npairs, int no,
                    float *z, const float *IA, int16_t *h)
{
    int nv = no / 8;
    for (int v0 = 0; v0 < nv; v0 += 8) {
        const int16_t *col = T + v0 * 16;
        const float *s = S + v0 * 8, *b = B + v0 * 8, *ia = IA ? IA + v0 * 8 : NULL;
        float *o = z + v0 * 8;
        int16_t *hh = h + v0 * 8;
        switch (nv - v0 < 8 ? nv - v0 : 8) {
        case 1: qaffine_block(1, col, s, b, in, npairs, no, o, ia, hh); break;
        case 2: qaffine_block(2, col, s, b, in, npairs, no, o, ia, hh); break;
        case 3: qaffine_block(3, col, s, b, in, npairs, no, o, ia, hh); break;
        case 4: qaffine_block(4, col, s, b, in, npairs, no, o, ia, hh); break;
        case 5: qaffine_block(5, col, s, b, in, npairs, no, o, ia, hh); break;
        case 6: qaffine_block(6, col, s, b, in, npairs, no, o, ia, hh); break;
        case 7: qaffine_block(7, col, s, b, in, npairs, no, o, ia, hh); break;
        default: qaffine_block(8, col, s, b, in, npairs, no, o, ia, hh); break;
        }
    }
}

/* A network of two hidden layers with every size fixed at compile time: the
 * blocks fully unrolled, no call or branch between the layers (harmonia's
 * placement network, 7 inputs -> 16 -> 16 -> 2 x 11 atoms, is 4 pairs, 16, 16, 32). */
static inline __attribute__((always_inline)) const float *infer_q_fixed(
    const struct hbl_mlp *m, const void *q, const int16_t *x, float *z, int16_t *h,
    const int P0, const int H1, const int H2, const int OUT)
{
    const float *qf = q;
    const int16_t *qw = (const int16_t *)((const char *)q + (size_t)m->qnf * 4);
    int16_t *h1 = h + m->puoff[0], *h2 = h + m->puoff[1];
    float *out = z + m->puoff[2];
    qaffine_block(H1 / 8, qw + m->qwoff[0], qf + m->qsoff[0], qf + m->qboff[0], x, P0, H1, NULL, qf + m->qaoff[0], h1);
    qaffine_block(H2 / 8, qw + m->qwoff[1], qf + m->qsoff[1], qf + m->qboff[1], h1, H1 / 2, H2, NULL,
                  qf + m->qaoff[1], h2);
    qaffine_block(OUT / 8, qw + m->qwoff[2], qf + m->qsoff[2], qf + m->qboff[2], h2, H2 / 2, OUT, out, NULL, NULL);
    return out;
}

const float *hbl_mlp_infer_q(const struct hbl_mlp *m, const void *q, const int16_t *x, float *z, int16_t *h)
{
    if (m->nl == 3 && m->qpairs[0] == 4 && m->psizes[1] == 16 && m->psizes[2] == 16 && m->qout == 32)
        return infer_q_fixed(m, q, x, z, h, 4, 16, 16, 32);
    const float *qf = q;
    const int16_t *qw = (const int16_t *)((const char *)q + (size_t)m->qnf * 4), *in = x;
    for (int l = 0; l < m->nl - 1; l++) {
        int16_t *hl = h + m->puoff[l];
        qaffine(qw + m->qwoff[l], qf + m->qsoff[l], qf + m->qboff[l], in, m->qpairs[l], m->psizes[l + 1],
                NULL, qf + m->qaoff[l], hl);
        in = hl;
    }
    int l = m->nl - 1;
    float *out = z + m->puoff[l];
    qaffine(qw + m->qwoff[l], qf + m->qsoff[l], qf + m->qboff[l], in, m->qpairs[l], m->qout, out, NULL, NULL);
    return out;
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
