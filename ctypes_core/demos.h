/*
 * Demonstrations from the oracle: labels for the learning agents' decisions on traces whose
 * future is known (closed-loop replay of a training trace), and the large-margin loss that
 * teaches them (DQfD: Hester et al., "Deep Q-learning from Demonstrations", AAAI'18).
 *
 * The label is the oracle's rule (policies/oracle.c, Belady with bypass, writes=0) applied in
 * the agent's own state: a page belongs on the fastest device if it is accessed again before
 * the fastest device would push it off, else on the slowest.  The oracle's boundary is the
 * farthest next access among the pages it keeps fast; the agents' fast device is kept in LRU
 * order, so here the boundary is how long it keeps an unaccessed page (the age of its least
 * recently used page, uncapped; no boundary while it has room).  A write is labelled fast when
 * there is room, or when at least half its pages are accessed again (read or rewritten) within
 * the boundary; a migration candidate when its next access is within it (a cold page of a faster
 * device otherwise leaves one device down, a page below the fastest stays where it is).  Labels
 * exist only where the future does: in closed-loop replay of a trace handed over whole
 * (hbl.sim.simulate does when a demo parameter asks), never on a live device or an unseen trace,
 * so they teach during pretraining and the agents carry what they learned.  Nothing here knows
 * what an agent is but the loss.
 */
#ifndef HBL_DEMOS_H
#define HBL_DEMOS_H
#include "hbl_internal.h"

#define HBL_NO_LABEL 255

struct hbl_demos {
    uint32_t *dist;      /* per page access, in trace order: requests until that page's next access (UINT32_MAX: none) */
    uint64_t *first;     /* per request (and one past the last): its first page access in dist */
    uint64_t nreq;
    uint64_t *next;      /* per slot: request index of the page's next access (HBL_NEVER: none or unknown) */
    uint32_t ncap;
};

/* The future: the trace the simulation is about to be fed, request for request. */
int hbl_demos_set_future(struct hbl_demos *d, const struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n);
void hbl_demos_free(struct hbl_demos *d);
static inline int hbl_demos_ready(const struct hbl_demos *d) { return d && d->dist; }
/* The current request (s->nreq) is being served on `slots`: note when each page is accessed next. */
void hbl_demos_observe(struct hbl_demos *d, const struct hbl_sim *s, const uint32_t *slots, int n);
/* The label of placing the current request's n pages, or HBL_NO_LABEL (no future, or another trace). */
int hbl_demos_place_label(const struct hbl_demos *d, const struct hbl_sim *s, int n);
/* The label of migration candidate `slot` now, or HBL_NO_LABEL. */
int hbl_demos_move_label(const struct hbl_demos *d, const struct hbl_sim *s, uint32_t slot);

/*
 * The large-margin loss of one sample, J_E = max_a [Q(a) + l(label, a)] - Q(label) with
 * l = margin for a != label and 0 for the label, times `weight`; its gradient with respect to
 * the outputs is added to dout.  out/dout: the sample's outputs `stride` floats apart, action
 * a's at rows a * atoms .. (DQN: atoms = 1, support NULL, Q(a) the output; C51: Q(a) the mean
 * of `support` under the softmax of the action's atoms).  Returns J_E * weight.
 */
float hbl_demo_margin(const float *out, int32_t stride, int32_t nactions, int32_t atoms, const float *support,
                      int32_t label, float margin, float weight, float *dout);

#endif
