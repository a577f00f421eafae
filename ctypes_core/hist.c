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

/* Nearest rank over buckets b[0..nb) (a histogram, or the sum of several's differences), the value
 * clamped to [min, max] where the extremes are known. */
double hbl_hist_buckets_percentile(const uint64_t *b, int32_t nb, uint64_t min, uint64_t max, double q)
{
    uint64_t n = 0;
    if (nb > HBL_HIST_BUCKETS) nb = HBL_HIST_BUCKETS;
    for (int i = 0; i < nb; i++) n += b[i];
    if (!n) return 0.0;
    if (q < 0) q = 0;
    if (q > 1) q = 1;
    /* nearest rank: the smallest value with at least q of the samples at or below it */
    uint64_t rank = (uint64_t)ceil(q * (double)n), seen = 0;
    if (rank < 1) rank = 1;
    double v = bucket_mid(HBL_HIST_BUCKETS - 1);
    for (int i = 0; i < nb; i++) {
        seen += b[i];
        if (seen >= rank) { v = bucket_mid(i); break; }
    }
    /* the extremes are kept exactly: a bucket's middle never lies outside them */
    if (v < (double)min) v = (double)min;
    if (v > (double)max) v = (double)max;
    return v;
}

double hbl_hist_percentile(const struct hbl_hist *h, double q)
{
    if (!h->n) return 0.0;
    return hbl_hist_buckets_percentile(h->b, HBL_HIST_BUCKETS, h->min, h->max, q);
}
