/* Multiset matching of rows in one call (the live controller's bookkeeping of requests in
 * flight and of the copier's own I/Os): each row of b ends one equal row of a, the earliest
 * by a's rank (then by index) not ended yet; the rows of b take theirs in index order.  Done
 * with numpy, the same took some twenty calls, each costly under an emulated CPU; here two
 * sorts and a merge. */
#include <stdlib.h>
#include <string.h>
#include "hbl_internal.h"

struct mrow {
    const int64_t *row;
    int64_t rank;
    uint64_t i;
    uint32_t w;
};

static int row_cmp(const struct mrow *x, const struct mrow *y)
{
    for (uint32_t k = 0; k < x->w; k++)
        if (x->row[k] != y->row[k]) return x->row[k] < y->row[k] ? -1 : 1;
    return 0;
}

static int mrow_cmp(const void *pa, const void *pb)
{
    const struct mrow *x = pa, *y = pb;
    int c = row_cmp(x, y);
    if (c) return c;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static struct mrow *sorted_rows(const int64_t *rows, const int64_t *rank, uint64_t n, uint32_t w)
{
    struct mrow *r = malloc((n ? n : 1) * sizeof(*r));
    if (!r) return NULL;
    for (uint64_t i = 0; i < n; i++)
        r[i] = (struct mrow){rows + i * w, rank ? rank[i] : 0, i, w};
    qsort(r, n, sizeof(*r), mrow_cmp);
    return r;
}

int64_t hbl_match_rows(const int64_t *a, const int64_t *rank_a, uint64_t na, const int64_t *b, uint64_t nb,
                       uint32_t w, uint8_t *a_left, uint8_t *b_hit)
{
    memset(a_left, 1, na);
    if (b_hit) memset(b_hit, 0, nb);
    if (!na || !nb) return 0;
    if (w < 1) return -1;
    struct mrow *ra = sorted_rows(a, rank_a, na, w), *rb = sorted_rows(b, NULL, nb, w);
    if (!ra || !rb) {
        free(ra);
        free(rb);
        return -1;
    }
    int64_t matched = 0;
    uint64_t i = 0, j = 0;
    while (i < na && j < nb) {
        int c = row_cmp(&ra[i], &rb[j]);
        if (c < 0) {
            i++;
        } else if (c > 0) {
            j++;
        } else {                     /* the group's earliest a's with its first b's, pairwise */
            a_left[ra[i].i] = 0;
            if (b_hit) b_hit[rb[j].i] = 1;
            matched++;
            i++;
            j++;
        }
    }
    free(ra);
    free(rb);
    return matched;
}
