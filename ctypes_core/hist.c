/* Log-linear histogram of latencies: exact below 128 ns, then 64 buckets per
 * power of two (about 1.5% resolution), so percentiles need bounded memory
 * however long the trace. */
#include <math.h>
#include "hbl_internal.h"

static inline int bucket(uint64_t v)
{
    if (v < 2 * HBL_HIST_SUB) return (int)v;
    int msb = 63 - __builtin_clzll(v);
    int shift = msb - 6;
    return shift * HBL_HIST_SUB + (int)(v >> shift);
}

static inline double bucket_mid(int i)
{
    if (i < 2 * HBL_HIST_SUB) return i;
    int shift = i / HBL_HIST_SUB - 1;
    double lo = (double)((uint64_t)(i - shift * HBL_HIST_SUB) << shift);
    return lo + ((double)(1ULL << shift)) / 2.0;
}

void hbl_hist_add(struct hbl_hist *h, uint64_t v)
{
    h->b[bucket(v)]++;
    if (!h->n || v < h->min) h->min = v;
    if (v > h->max) h->max = v;
    h->n++;
}

double hbl_hist_percentile(const struct hbl_hist *h, double q)
{
    if (!h->n) return 0.0;
    if (q < 0) q = 0;
    if (q > 1) q = 1;
    /* nearest rank: the smallest value with at least q of the samples at or below it */
    uint64_t rank = (uint64_t)ceil(q * (double)h->n), seen = 0;
    if (rank < 1) rank = 1;
    double v = bucket_mid(HBL_HIST_BUCKETS - 1);
    for (int i = 0; i < HBL_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) { v = bucket_mid(i); break; }
    }
    /* the extremes are kept exactly: a bucket's middle never lies outside them */
    if (v < (double)h->min) v = (double)h->min;
    if (v > (double)h->max) v = (double)h->max;
    return v;
}
