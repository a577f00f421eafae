/* Small feed-forward networks for the agents: swish hidden layers, a linear
 * output, parameters in one flat float array per copy (so the inference copy,
 * the training copy, gradients and optimizer moments share one layout). */
#ifndef HBL_NN_H
#define HBL_NN_H
#include <stdint.h>
#include <string.h>

#define HBL_MLP_MAX_LAYERS 5    /* weight layers: up to 4 hidden + output */

struct hbl_mlp {
    int nl;                      /* weight layers */
    int sizes[HBL_MLP_MAX_LAYERS + 1];
    int woff[HBL_MLP_MAX_LAYERS], boff[HBL_MLP_MAX_LAYERS];
    int uoff[HBL_MLP_MAX_LAYERS]; /* offset of layer l's outputs in the activation arrays */
    int np;                      /* parameters */
    int units;                   /* sum of sizes[1..nl] */
    int widest;
    /* inference layout: every width rounded up to a multiple of 8 floats (one AVX
     * register), padding weights zero, so the loops need no remainder code */
    int psizes[HBL_MLP_MAX_LAYERS + 1];
    int pwoff[HBL_MLP_MAX_LAYERS], pboff[HBL_MLP_MAX_LAYERS], puoff[HBL_MLP_MAX_LAYERS];
    int pnp, punits;
    /* quantized inference layout (hbl_mlp_quantize): one blob of qbytes, the
     * floats first (per layer: scale, bias, inverse activation scale, each
     * psizes[l+1] long), then the int16 weights, input pairs major:
     * W[(p * psizes[l+1] + j) * 2 + t] is the weight of input 2p+t on output j */
    int qpairs[HBL_MLP_MAX_LAYERS];
    int qsoff[HBL_MLP_MAX_LAYERS], qboff[HBL_MLP_MAX_LAYERS], qaoff[HBL_MLP_MAX_LAYERS], qwoff[HBL_MLP_MAX_LAYERS];
    int qnf, qnw, qbytes;
    /* the output layer's units in groups of qgroup (C51: one group of atoms per
     * action), each padded to qgpad, a multiple of 8, so that a group is whole
     * registers: qout units in all (the whole quantized network: qunits) */
    int qgroup, qgpad, qout, qunits;
};

int hbl_mlp_init(struct hbl_mlp *m, const int32_t *sizes, int nl);
/* Uniform He-style initialisation from a xorshift state. */
void hbl_mlp_init_params(const struct hbl_mlp *m, float *w, uint64_t *rng);
/* Training passes run over a tile of HBL_TILE samples at once, stored
 * unit-major: row r of a tile holds unit r of every sample, so each loop's
 * inner dimension is the samples, contiguous and a whole number of vectors.
 * One sample's dot products (length 7 to 30 here, ragged) do not vectorize;
 * a tile's rows do, and each weight is loaded once per tile, not per sample.
 * The weights keep their row-major layout (the file's and the tests'). */
#define HBL_TILE 64
/* x: sizes[0] rows; z = pre-activations, a = activations (m->units rows each;
 * a is not written for the output layer); the outputs are rows uoff[nl-1].. of z. */
void hbl_mlp_forward(const struct hbl_mlp *m, const float *w, const float *x, float *z, float *a);
/* Adds the gradient of sum(dout * output) over the tile's samples to grad;
 * dout has sizes[nl] rows; scratch holds 2 * widest rows. */
void hbl_mlp_backward(const struct hbl_mlp *m, const float *w, const float *x, const float *z,
                      const float *a, const float *dout, float *grad, float *scratch);

/* One Adam step (Kingma & Ba) with bias correction; t counts steps from 1. */
void hbl_adam(float *w, const float *g, float *m1, float *m2, int n, float lr, uint64_t t);

/* Inference layout (m->pnp floats): each layer's weights transposed (input-major)
 * and padded, so the inner loop runs over a layer's outputs, contiguous and
 * vectorizable. */
void hbl_mlp_transpose(const struct hbl_mlp *m, const float *w, float *wt);
/* Its inverse (an agent file of version 1 holds the transposed layout). */
void hbl_mlp_untranspose(const struct hbl_mlp *m, const float *wt, float *w);
/* Forward pass over inference weights: x holds psizes[0] floats (padding zero),
 * z m->punits; returns a pointer to the outputs (in z). */
const float *hbl_mlp_infer(const struct hbl_mlp *m, const float *wt, const float *x, float *z);
/* The same without activations (a benchmark's floor, not a network). */
const float *hbl_mlp_infer_linear(const struct hbl_mlp *m, const float *wt, const float *x, float *z);

/* Quantized inference copy of training-layout weights w: int16 weights per
 * output column, int16 activations per unit, int32 sums (no overflow by
 * construction: the scales come from interval bounds of every unit over all
 * inputs).  Layer 0 takes the inputs as small integers x_q (0..in_max[f]),
 * the network's input being x_q * in_scale[f]. */
/* Lays the quantized outputs out in groups of `group` (0: none). */
void hbl_mlp_group_outputs(struct hbl_mlp *m, int group);
void hbl_mlp_quantize(const struct hbl_mlp *m, const float *w, const float *in_scale, const float *in_max, void *q);
/* Softmax shifts of a quantized copy with grouped outputs: for group k,
 * shift[k], and shift[ngroups + k] = 1 if every output of the group is within
 * [shift - 60, shift + 40] for every input (interval bounds).  Such a group's
 * outputs are then (logit - shift) / ln 2 (its padding units -87 / ln 2): a
 * softmax takes 2^output with no maximum, no clamp and no multiply; 0 if not,
 * and the outputs are the logits. */
static inline const float *hbl_mlp_q_shifts(const struct hbl_mlp *m, const void *q)
{
    return (const float *)q + m->qaoff[m->nl - 1];
}
/* Forward pass over a quantized copy: x holds 2 * qpairs[0] int16 (padding
 * zero); z m->qunits floats, of which only the outputs are written (a hidden
 * layer's sums go straight to its activations), h m->punits int16; returns the
 * outputs (in z; the units padding a group of outputs at -1e30). */
const float *hbl_mlp_infer_q(const struct hbl_mlp *m, const void *q, const int16_t *x, float *z, int16_t *h);

/* exp(x) for |x| < 87 to about 1e-6 relative error, written so that loops of it vectorize. */
static inline float hbl_expf(float x)
{
    x = x < -87.0f ? -87.0f : (x > 87.0f ? 87.0f : x);
    float t = x * 1.44269504f;                    /* x / ln 2 */
    float fi = __builtin_floorf(t), f = t - fi;   /* 2^x = 2^fi * 2^f, f in [0, 1) */
    float p = 1.0f + f * (0.693147182f + f * (0.240226507f + f * (0.0555041087f +
              f * (0.00961812911f + f * (0.00133335581f + f * 0.000154035304f)))));
    union { float f; int32_t i; } u = { p };
    u.i += (int32_t)fi << 23;
    return u.f;
}

/* The inference kernels use GCC vector extensions: one v8f is eight floats (an
 * AVX register where the CPU has one; the compiler splits it elsewhere). */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

static inline v8f v8_load(const float *p) { v8f v; memcpy(&v, p, sizeof(v)); return v; }
static inline void v8_store(float *p, v8f v) { memcpy(p, &v, sizeof(v)); }
#if defined(__AVX__)
#include <immintrin.h>
/* min, max and floor are one instruction each with AVX (v8f is __m256) */
static inline v8f v8_min(v8f a, v8f b) { return _mm256_min_ps(a, b); }
static inline v8f v8_max(v8f a, v8f b) { return _mm256_max_ps(a, b); }
static inline v8f v8_floor(v8f x) { return _mm256_floor_ps(x); }
/* 1/x to 12 bits (where an activation is quantized to 13 bits of a bound, plenty) */
static inline v8f v8_rcp(v8f x) { return _mm256_rcp_ps(x); }
/* to the nearest integer (ties to even) */
static inline v8i v8_rint(v8f x) { return (v8i)_mm256_cvtps_epi32(x); }
#else
static inline v8i v8_rint(v8f x)
{
    v8i r;
    for (int j = 0; j < 8; j++) r[j] = (int32_t)__builtin_lrintf(x[j]);
    return r;
}
static inline v8f v8_rcp(v8f x) { return 1.0f / x; }
static inline v8f v8_min(v8f a, v8f b) { v8i m = a < b; return (v8f)((m & (v8i)a) | (~m & (v8i)b)); }
static inline v8f v8_max(v8f a, v8f b) { v8i m = a > b; return (v8f)((m & (v8i)a) | (~m & (v8i)b)); }
static inline v8f v8_floor(v8f x)
{
    v8i ti = __builtin_convertvector(x, v8i);            /* truncation */
    v8f tf = __builtin_convertvector(ti, v8f);
    v8i above = x < tf;                                  /* -1 where truncation rounded up */
    return __builtin_convertvector(ti + above, v8f);
}
#endif

/* Eight int32 sums of pairs: w holds 16 int16 (8 outputs x 2 inputs), x2 two
 * int16 inputs; lane j = w[2j] x2[0] + w[2j+1] x2[1] (exact: the quantizer
 * keeps every sum in range, so both versions give the same bits). */
typedef int16_t v8s __attribute__((vector_size(16)));
typedef uint8_t v8u8 __attribute__((vector_size(8)));
#if defined(__AVX2__)
static inline v8i v8_madd16(const int16_t *w, const int16_t *x2)
{
    int32_t x; memcpy(&x, x2, 4);
    return (v8i)_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)w), _mm256_set1_epi32(x));
}
#else
static inline v8i v8_madd16(const int16_t *w, const int16_t *x2)
{
    v8i r;
    for (int j = 0; j < 8; j++) r[j] = (int32_t)w[2 * j] * x2[0] + (int32_t)w[2 * j + 1] * x2[1];
    return r;
}
#endif

/* hbl_expf on eight lanes (the same operations, so the same bits) */
static inline v8f v8_exp(v8f x)
{
    x = v8_max(v8_min(x, (v8f){} + 87.0f), (v8f){} - 87.0f);
    v8f t = x * 1.44269504f;
    v8f tf = v8_floor(t);
    v8f f = t - tf;
    v8f p = 1.0f + f * (0.693147182f + f * (0.240226507f + f * (0.0555041087f +
            f * (0.00961812911f + f * (0.00133335581f + f * 0.000154035304f)))));
    return (v8f)((v8i)p + (__builtin_convertvector(tf, v8i) << 23));
}

/* 2^t for the quantized network, t in [-126, 126]: no clamp, and 2^f of degree
 * 3 (a fitted minimax, relative error 9e-5, below the int16 network's own):
 * four multiply-adds fewer on the decision path's longest chains */
static inline v8f v8_exp2_quick(v8f t)
{
    v8f tf = v8_floor(t);
    v8f f = t - tf;
    v8f p = 1.0f + f * (0.695116616f + f * (0.227645702f + f * 0.0770664121f));
    return (v8f)((v8i)p + (__builtin_convertvector(tf, v8i) << 23));
}

/* largest of eight lanes */
static inline float v8_hsum(v8f v)
{
    v += __builtin_shuffle(v, (v8i){4, 5, 6, 7, 0, 1, 2, 3});
    v += __builtin_shuffle(v, (v8i){2, 3, 0, 1, 6, 7, 4, 5});
    return (v + __builtin_shuffle(v, (v8i){1, 0, 3, 2, 5, 4, 7, 6}))[0];
}
static inline float v8_hmax(v8f v)
{
    v = v8_max(v, __builtin_shuffle(v, (v8i){4, 5, 6, 7, 0, 1, 2, 3}));
    v = v8_max(v, __builtin_shuffle(v, (v8i){2, 3, 0, 1, 6, 7, 4, 5}));
    return v8_max(v, __builtin_shuffle(v, (v8i){1, 0, 3, 2, 5, 4, 7, 6}))[0];
}

static inline uint64_t hbl_xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}
static inline double hbl_uniform(uint64_t *s) { return (hbl_xorshift(s) >> 11) * (1.0 / 9007199254740992.0); }

#endif
