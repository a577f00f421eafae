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
/* Forward pass over inference weights: x holds psizes[0] floats (padding zero),
 * z m->punits; returns a pointer to the outputs (in z). */
const float *hbl_mlp_infer(const struct hbl_mlp *m, const float *wt, const float *x, float *z);
/* The same without activations (a benchmark's floor, not a network). */
const float *hbl_mlp_infer_linear(const struct hbl_mlp *m, const float *wt, const float *x, float *z);

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
#else
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

/* largest of eight lanes */
static inline float v8_hmax(v8f v)
{
    float m = v[0];
    for (int j = 1; j < 8; j++) m = v[j] > m ? v[j] : m;
    return m;
}

/* sum of eight lanes */
static inline float v8_hsum(v8f v)
{
    float s = 0;
    for (int j = 0; j < 8; j++) s += v[j];
    return s;
}

static inline uint64_t hbl_xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}
static inline double hbl_uniform(uint64_t *s) { return (hbl_xorshift(s) >> 11) * (1.0 / 9007199254740992.0); }

#endif
