/* Demonstrations from the oracle: labels and the large-margin loss (demos.h). */
#include <stdlib.h>
#include <string.h>
#include "demos.h"
#include "nn.h"

void hbl_demos_free(struct hbl_demos *d)
{
    free(d->dist); free(d->first); free(d->next);
    memset(d, 0, sizeof(*d));
}

int hbl_demos_set_future(struct hbl_demos *d, const struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n)
{
    uint32_t ps = s->cfg.page_size;
    uint64_t first;
    hbl_demos_free(d);
    d->first = malloc((n + 1) * sizeof(uint64_t));
    if (!d->first) return -1;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) { d->first[i] = total; total += hbl_req_pages(&reqs[i], ps, &first); }
    d->first[n] = total;
    d->dist = malloc((total ? total : 1) * sizeof(uint32_t));
    if (!d->dist) { hbl_demos_free(d); return -1; }
    /* walk backwards; a scratch page table remembers each page's next access (aux64) */
    struct hbl_pagetable pt;
    if (hbl_pt_init(&pt, 1 << 16)) { hbl_demos_free(d); return -1; }
    for (uint64_t i = n; i-- > 0;) {
        uint32_t np = hbl_req_pages(&reqs[i], ps, &first);
        for (uint32_t j = 0; j < np; j++) {
            uint32_t before = pt.n, x = hbl_pt_get(&pt, first + j);
            if (x == HBL_NONE) { hbl_pt_free(&pt); hbl_demos_free(d); return -1; }
            uint64_t gap = pt.n != before ? UINT32_MAX : pt.aux64[x] - i;
            d->dist[d->first[i] + j] = gap < UINT32_MAX ? (uint32_t)gap : UINT32_MAX;
            pt.aux64[x] = i;
        }
    }
    hbl_pt_free(&pt);
    d->nreq = n;
    return 0;
}

/* How long the fastest device keeps a page nobody accesses: the age of its least recently used
 * page (no cap: a label must not call a page that would hit a miss); all of time while it has room. */
static uint64_t boundary(const struct hbl_sim *s)
{
    uint32_t tail = s->lru_tail[0];
    if (tail == HBL_NONE || s->pt.last[tail] == HBL_NEVER || hbl_free_pages(s, 0) > 0) return HBL_NEVER;
    return s->nreq - s->pt.last[tail];
}

/* The current request's pages in dist, or NULL when the future does not describe it. */
static const uint32_t *pages_now(const struct hbl_demos *d, const struct hbl_sim *s, int n)
{
    if (!hbl_demos_ready(d) || s->nreq >= d->nreq || d->first[s->nreq + 1] - d->first[s->nreq] != (uint64_t)n)
        return NULL;
    return d->dist + d->first[s->nreq];
}

void hbl_demos_observe(struct hbl_demos *d, const struct hbl_sim *s, const uint32_t *slots, int n)
{
    const uint32_t *dist = pages_now(d, s, n);
    if (!dist) return;
    for (int i = 0; i < n; i++) {
        uint32_t x = slots[i];
        if (x >= d->ncap) {
            uint32_t cap = d->ncap ? d->ncap : 4096;
            while (cap <= x) cap *= 2;
            uint64_t *p = realloc(d->next, (size_t)cap * sizeof(*p));
            if (!p) return;   /* no label for pages past the room: HBL_NO_LABEL, not a wrong one */
            for (uint32_t k = d->ncap; k < cap; k++) p[k] = HBL_NEVER;
            d->next = p;
            d->ncap = cap;
        }
        d->next[x] = dist[i] == UINT32_MAX ? HBL_NEVER : s->nreq + dist[i];
    }
}

int hbl_demos_place_label(const struct hbl_demos *d, const struct hbl_sim *s, int n)
{
    const uint32_t *dist = pages_now(d, s, n);
    if (!dist) return HBL_NO_LABEL;
    if (hbl_free_pages(s, 0) >= n) return 0;
    uint64_t b = boundary(s);
    int soon = 0;
    for (int i = 0; i < n; i++) soon += dist[i] != UINT32_MAX && dist[i] < b;
    return 2 * soon >= n ? 0 : hbl_slowest(s);
}

int hbl_demos_move_label(const struct hbl_demos *d, const struct hbl_sim *s, uint32_t x)
{
    int cur = s->pt.dev[x];
    if (!hbl_demos_ready(d) || x >= d->ncap || cur < 0) return HBL_NO_LABEL;
    uint64_t nx = d->next[x];
    if (nx != HBL_NEVER && nx >= s->nreq && nx - s->nreq < boundary(s)) return 0;
    return cur == 0 ? 1 : cur;
}

/* Q of each action from one sample's outputs; p (C51): each action's softmax over its atoms. */
static void q_values(const float *out, int stride, int NA, int A, const float *support, float *q, float *p)
{
    for (int a = 0; a < NA; a++) {
        if (!support) { q[a] = out[a * stride]; continue; }
        const float *l = out + (size_t)a * A * stride;
        float mx = l[0], se = 0, sz = 0;
        for (int j = 1; j < A; j++) mx = l[j * stride] > mx ? l[j * stride] : mx;
        for (int j = 0; j < A; j++) {
            float e = hbl_expf(l[j * stride] - mx);
            p[a * A + j] = e;
            se += e;
            sz += e * support[j];
        }
        for (int j = 0; j < A; j++) p[a * A + j] /= se;
        q[a] = sz / se;
    }
}

/* dout += sign * weight * dQ(a)/d(outputs of a): 1 (DQN); p_j (z_j - Q(a)) per atom (C51) */
static void add_dq(const float *p, const float *support, int a, int A, float q, float g, int stride, float *dout)
{
    if (!support) { dout[a * stride] += g; return; }
    for (int j = 0; j < A; j++) dout[(size_t)(a * A + j) * stride] += g * p[a * A + j] * (support[j] - q);
}

float hbl_demo_margin(const float *out, int32_t stride, int32_t nactions, int32_t atoms, const float *support,
                      int32_t label, float margin, float weight, float *dout)
{
    if (label < 0 || label >= nactions || weight <= 0) return 0;
    int A = support ? atoms : 1;
    float q[8], p[8 * 201];
    if (nactions > 8 || A > 201) return 0;
    q_values(out, stride, nactions, A, support, q, p);
    int best = label;
    float top = q[label];
    for (int a = 0; a < nactions; a++)
        if (a != label && q[a] + margin > top) { top = q[a] + margin; best = a; }
    if (best == label) return 0;   /* the label leads by the margin: no loss, no gradient */
    add_dq(p, support, best, A, q[best], weight, stride, dout);
    add_dq(p, support, label, A, q[label], -weight, stride, dout);
    return weight * (top - q[label]);
}
