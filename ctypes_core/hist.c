/* Log-linear histogram of latencies: exact below 128 ns, then 64 buckets per
 * power of two (about 1.5% resolution), so percentiles need bounded memory
 * however long the trace. */
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
    h->n++;
}

double hbl_hist_percentile(const struct hbl_hist *h, double q)
{
    if (!h->n) return 0.0;
    if (q < 0) q = 0;
    if (q > 1) q = 1;
    uint64_t rank = (uint64_t)(q * (double)(h->n - 1)) + 1, seen = 0;
    for (int i = 0; i < HBL_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) return bucket_mid(i);
    }
    return bucket_mid(HBL_HIST_BUCKETS - 1);
}
