/* Harmonia (Nadig et al., arXiv 2503.20507): a placement agent and a migration
 * agent that coordinate through shared state.  The placement agent is
 * Sibyl's with a seventh feature, the time since the page's last migration,
 * so it sees the migration agent's work; both see the fast device's free
 * capacity and each page's device; the migration agent's reward is measured
 * on the latencies that placement shapes.  Every migrate_every requests the
 * migration agent scores a bounded candidate set (hot pages below the fastest
 * device, cold pages on the faster ones) and queues a bounded batch of moves.
 *
 * Two variants measure the value of coordination:
 *   harmonia-placement-only: the placement agent alone (Sibyl plus the 7th feature);
 *   harmonia-migration-only: the migration agent with a simple placement rule
 *     (writes go to the fastest device, reads move nothing). */
#include <stdio.h>
#include <stdlib.h>
#include "../rl.h"
#include "../admit.h"
#include "../victim.h"

struct state {
    int use_placement, use_migration;
    struct hbl_admit admit;     /* reads the placement agent leaves (read_admit) */
    struct hbl_victim order;    /* which page a full fastest device pushes off (victim) */
    struct hbl_placement_agent pa;
    struct hbl_migration_agent ma;
    struct hbl_demos demos;     /* the oracle's labels, when the simulation hands over the future */
    const char *teacher;        /* demo_teacher: the policy whose labels replace the oracle's (teacher.h) */
};

static const struct hbl_param_doc params[] = {
    HBL_AGENT_PARAMS(HBL_PLACEMENT_PARAM_DOC) HBL_PLACEMENT_SETTINGS(HBL_SETTING_DOC)
    HBL_AGENT_PARAMS(HBL_MIGRATION_PARAM_DOC) HBL_MIGRATION_SETTINGS(HBL_SETTING_DOC)
    HBL_FEATURE_SETTINGS(HBL_SETTING_DOC)
    {"queue_feature", "1: the placement agent also sees how full the background queues of its evictions are "
                      "(an 8th feature; agents trained without it do not load) [ours, an experiment]"},
    {"reuse_feature", "1: the placement agent also sees the workload's regime: the share of recent requests whose page "
                      "was accessed before within the fastest device's characteristic time (about the hit ratio of an LRU "
                      "fast device of its size), a running share over a round of migrate_every requests, in eighths "
                      "(a 9th feature; needs queue_feature=1) [ours, an experiment, results/pretrain/reuse.txt]"},
    {"demo_teacher", "demonstrations (demo, demo_follow and their m_ forms) from a non-learning policy run beside the "
                     "agents on the same requests instead of the oracle: the agents' action is labelled the fastest "
                     "device when that policy's fastest device holds the pages (1 lru, 2 cde, 3 smq, 4 nhit, "
                     "5 seqcutoff, 6 arc, 7 lirs, 8 s3fifo, 9 wtinylfu; ctypes_core/teacher.h); 0: the oracle's "
                     "labels [ours, an experiment, results/pretrain/teacher.txt]", 1},
    {"read_admit", "reads the placement agent does not place: 0 stay where they are; 1 a read promotes its pages "
                   "to the fastest device (promote on miss); 2 as 1, but while that device is full only a page "
                   "accessed at least as often as its least recently used page; 3 promote or stay as learned "
                   "online by regret minimisation, after LeCaR; 4 as 3 with regrets in device time; 5 promote where promoting "
                   "read misses of as many accesses has paid, judged in hindsight; 6 as 5 by the time since the page's "
                   "last access; 7 as 1, but only into free space or in place of a page read admission promoted "
                   "(never a page placed by a write), and those pages leave the fastest device first; 8 as 7, "
                   "each promotion decided as in 6; 9 as 8, the agents counting those pages as free space on "
                   "the fastest device (ctypes_core/admit.c, admit_list.c) "
                   "[ours, an experiment, "
                   "results/pretrain/admit.txt]"},
    {"victim", "the page pushed off the full fastest device to make room (a forced eviction): 0 its least recently "
               "used page; 1 SLRU (Karedla, Love & Wherry, IEEE Computer 27(3), 1994): a page that arrived there and "
               "has not been accessed since goes first, least recently used first, and only when none is left the "
               "least recently used of those accessed again (at most 80% of the device's pages are kept so); 2 as 1, "
               "but only a read protects a page (write-only traffic is ordered as by LRU); 3 2Q's full version "
               "(Johnson & Shasha, VLDB 1994): an access soon after arrival (while in the A1in FIFO) counts for "
               "nothing, a page accessed after it left A1in (remembered in A1out, 50% of the device's pages) "
               "enters the LRU list Am; A1in's oldest goes while A1in holds more than 25% of the device's pages, "
               "else Am's least recently used. Read "
               "admission's pages (read_admit 7-9) still go first; slower devices keep LRU (ctypes_core/victim.c) "
               "[Karedla et al. 1994, Johnson & Shasha 1994; ours to try here, an experiment, "
               "results/pretrain/victim.txt]"},
    {"credit_clean", "1: the hindsight credit of read admission (read_admit 5, 6, 8, 9) and of m_reward=2 "
                     "charges the copy down of the page a promotion pushes off only when that page is dirty "
                     "(a clean one, with a valid copy below, is evicted for free); 0 charges it always "
                     "[ours, an experiment, results/diagnosis/credit.txt F2, results/pretrain/clean-credit.txt]"},
    {"credit_copy", "1: the hindsight credits (reward=2, m_reward=2, read_admit 5, 6, 8, 9) charge a copy (a move's, "
                    "a promotion's write, the copy down of a page pushed off a full device) at the device time the "
                    "run's background I/O has taken per page on each device so far, not a single scattered page's "
                    "(an HDD's background queue is served in LBA order) [ours, an experiment, "
                    "results/diagnosis/write-credit.txt]"},
    {"credit_next", "1: the placement agent's hindsight credit (reward=2) of a decision on a page ends at the page's "
                    "next placement decision (a later write places the page again; a read, with place_reads=1), "
                    "credited with the accesses it had until then, that one not counted (it is the next decision's, "
                    "now queued); 0 counts every access in the horizon as if the page stayed where the first put it "
                    "[ours, an experiment, results/diagnosis/write-credit-next.txt]"},
    {"credit_resident", "1: read admission's hindsight credit (read_admit 5, 6, 8, 9) of a promoted read miss ends "
                        "when its page leaves the fastest device (an eviction), the reads it served there less its "
                        "copy and push-off charges, its horizon the longest it runs; 0 runs it over the whole horizon "
                        "as if the page stayed.  Not the agents' credits (reward=2, m_reward=2) "
                        "[ours, an experiment, results/pretrain/resident-credit.txt]"},
    {NULL, NULL}};

/* Harmonia's placement agent, where it differs from Sibyl's:
 * - Its network is smaller (Sibyl: hidden 20, 30, 51 atoms): hidden 16, 16 and 11
 *   atoms did better on the training workloads (pretrained the same way, validated
 *   on the training families' seed-2 traces, 3 seeds: perf 2.458 -> 2.421, cost
 *   219.7 -> 209.9 x Fast-Only, results/pretrain/pretrain.txt) and decides in about two
 *   thirds of the time (results/inference/inference.txt).
 * - No eviction penalty in its reward: in Harmonia, eviction is the migration
 *   agent's work, and charging the placement agent for the evictions its writes
 *   force made it worse on every HSS (the 4 long synthetic workloads, mean x
 *   Fast-Only, penalty 0.1 -> 0: perf 1.946 -> 1.878, cost 119.1 -> 118.1, tri
 *   85.0 -> 84.3, quad 60.2 -> 59.6).  --param penalty=0.1 for Sibyl's.
 * - Its reward is in device time (ours, after Baleen's "disk-head time", FAST'24):
 *   a write placed on the fast device is charged the next device's write time for
 *   each eviction it forces, so filling the fast device is not free.  Decided on
 *   the training workloads (hbl/sim/pretrained.py: 5 synthetic families other than
 *   the evaluation's; validated on their seed-2 traces after 3 pretraining
 *   passes): geomean x Fast-Only perf 2.64 -> 2.48, cost 234.5 -> 219.3 against
 *   the same agents without it (results/pretrain/pretrain.txt).
 * - With a migration agent to move data, it acts on writes only (Harmonia's
 *   division of labour).  Measured on the four 1M-request synthetic workloads:
 *   1.95 x Fast-Only on perf against 2.11 when it also acts on reads (untrained
 *   agents, Sibyl's network; later, with the pretrained agents, acting on reads
 *   was rejected on the training families' validation, results/pretrain/pretrain.txt).
 *   On the short read-heavy MSR slices acting on reads does better, since the
 *   migration agent promotes little there (hm_0: results/diagnosis/missdiag.txt).  Alone
 *   (harmonia-placement-only) it decides reads too, as Sibyl's does. */
#define HARMONIA_PLACEMENT(reads) \
    {.hidden1 = 16, .hidden2 = 16, .atoms = 11, .penalty = 0, .device_time = 1, .place_reads = (reads)}
static const struct hbl_placement_defaults with_migration = HARMONIA_PLACEMENT(0), alone = HARMONIA_PLACEMENT(1);

static void destroy(void *v)
{
    struct state *st = v;
    hbl_placement_agent_free(&st->pa);
    hbl_migration_agent_free(&st->ma);
    hbl_demos_free(&st->demos);
    hbl_admit_free(&st->admit);
    hbl_victim_free(&st->order);
    free(st);
}

static int init_variant(struct hbl_sim *s, void **out, const struct hbl_params *p, char *err, int errlen,
                        int placement, int migration)
{
    struct state *st = calloc(1, sizeof(*st));
    if (!st) return -1;
    st->use_placement = placement;
    st->use_migration = migration;
    double admit = hbl_param(p, "read_admit", 0);
    if (hbl_admit_init(&st->admit, s, admit == (int)admit ? (int)admit : -1, err, errlen)) goto fail;
    if (hbl_victim_init(&st->order, s, hbl_param(p, "victim", 0), err, errlen)) goto fail;
    double reuse = hbl_param(p, "reuse_feature", 0);
    if (reuse != 0 && reuse != 1) {
        snprintf(err, errlen, "reuse_feature must be 0 or 1");
        goto fail;
    }
    int queue = hbl_param(p, "queue_feature", 0) != 0;
    if (reuse && !queue) {   /* agents see a prefix of the state: the reuse share comes after the queue's */
        snprintf(err, errlen, "reuse_feature=1 needs queue_feature=1 (its feature is the 9th, after the queue's)");
        goto fail;
    }
    int nfeatures = reuse ? HBL_F_REUSE + 1 : queue ? HBL_F_QUEUE + 1 : HBL_F_QUEUE;
    if (placement && hbl_placement_agent_init(&st->pa, s, p, nfeatures, migration ? &with_migration : &alone,
                                              err, errlen))
        goto fail;
    if (migration && hbl_migration_agent_init(&st->ma, s, p, err, errlen)) goto fail;
    if (migration && hbl_admit_judges(&st->admit) && st->ma.page_reward) {   /* both would tag pages in pt.aux64 */
        snprintf(err, errlen, "read_admit=5, 6, 8 or 9 needs m_reward=0");
        goto fail;
    }
    double clean = hbl_param(p, "credit_clean", 0);
    if (clean != 0 && clean != 1) {
        snprintf(err, errlen, "credit_clean must be 0 or 1");
        goto fail;
    }
    st->admit.q.clean_credit = st->ma.evalq.clean_credit = (uint8_t)clean;
    double copy = hbl_param(p, "credit_copy", 0);
    if (copy != 0 && copy != 1) {
        snprintf(err, errlen, "credit_copy must be 0 or 1");
        goto fail;
    }
    st->admit.q.measured_copy = st->ma.evalq.measured_copy = st->pa.evalq.measured_copy = (uint8_t)copy;
    double next = hbl_param(p, "credit_next", 0);
    if (next != 0 && next != 1) {
        snprintf(err, errlen, "credit_next must be 0 or 1");
        goto fail;
    }
    st->pa.evalq.end_next = (uint8_t)next;
    double resident = hbl_param(p, "credit_resident", 0);
    if (resident != 0 && resident != 1) {
        snprintf(err, errlen, "credit_resident must be 0 or 1");
        goto fail;
    }
    st->admit.resident = (int)resident;
    if (placement && migration && st->ma.page_reward == 2) st->pa.space = st->ma.space;
    st->pa.demos = st->ma.demos = &st->demos;
    double teacher = hbl_param(p, "demo_teacher", 0);
    int k = teacher >= 0 && teacher <= 64 && teacher == (int)teacher ? (int)teacher : -1;
    if (k != 0 && !hbl_teacher_name(k)) {
        snprintf(err, errlen, "demo_teacher must be 0 (the oracle) or 1..9 (ctypes_core/teacher.c)");
        goto fail;
    }
    if ((placement && st->pa.demo) || (migration && st->ma.demo)) st->teacher = hbl_teacher_name(k);
    *out = st;
    return 0;
fail:
    destroy(st);                    /* either agent may be partly built: each free takes that */
    return -1;
}

static int init_both(struct hbl_sim *s, void **o, const struct hbl_params *p, char *e, int n)
{ return init_variant(s, o, p, e, n, 1, 1); }
static int init_placement(struct hbl_sim *s, void **o, const struct hbl_params *p, char *e, int n)
{ return init_variant(s, o, p, e, n, 1, 0); }
static int init_migration(struct hbl_sim *s, void **o, const struct hbl_params *p, char *e, int n)
{ return init_variant(s, o, p, e, n, 0, 1); }

/* The future, for demonstrations (demo, demo_follow and their m_ forms; labels only where asked). */
static int set_future(void *v, struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n)
{
    struct state *st = v;
    if (!(st->use_placement && st->pa.demo) && !(st->use_migration && st->ma.demo)) return 0;
    if (st->teacher) return 0;   /* the teacher labels instead */
    return hbl_demos_set_future(&st->demos, s, reqs, n);
}

/* The teacher the simulator runs beside the agents for their labels (demo_teacher), or NULL. */
static const char *teacher(void *v)
{
    return ((struct state *)v)->teacher;
}

/* Read admission's pages the agents count as free (read_admit=9), as of now: before every call
 * that may encode their state (placement, credit, a migration round). */
static void see_spare(struct state *st)
{
    st->pa.feat.spare = st->ma.feat.spare = hbl_admit_spare(&st->admit);
}

static void place(void *v, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    struct state *st = v;
    hbl_admit_observe(&st->admit, s, slots, n, r->op == HBL_OP_WRITE);
    hbl_victim_begin(&st->order);
    see_spare(st);
    if (st->use_placement) {
        hbl_placement_agent_place(&st->pa, s, r, slots, n, targets);
    } else if (r->op == HBL_OP_WRITE) {
        for (int i = 0; i < n; i++) targets[i] = 0;
    }
    if (st->admit.rule && r->op != HBL_OP_WRITE) hbl_admit_read(&st->admit, s, slots, n, targets);
}

static void observe(void *v, struct hbl_sim *s, const struct hbl_request *r,
                    const uint32_t *slots, int n, double lat)
{
    struct state *st = v;
    see_spare(st);
    if (hbl_demos_ready(&st->demos)) hbl_demos_observe(&st->demos, s, slots, n);
    if (st->use_placement) hbl_placement_agent_observe(&st->pa, s, r, slots, n, lat);
    if (st->use_migration) hbl_migration_agent_observe(&st->ma, s, slots, n, r->op == HBL_OP_WRITE, lat);
    hbl_admit_served(&st->admit, s, slots, n, r->op == HBL_OP_WRITE);
    hbl_victim_touch(&st->order, s, slots, n, r->op == HBL_OP_WRITE);
}

/* Rules 7-9 of read admission keep a list of the pages they promoted (admit_list.c); with
 * credit_resident its credit of a promotion ends when the page leaves (admit.c); the victim
 * order keeps its segments (victim.c). */
static void on_move(void *v, struct hbl_sim *s, uint32_t slot, int from, int to, int undone)
{
    struct state *st = v;
    hbl_admit_moved(&st->admit, slot, from, to, undone);
    hbl_admit_resident(&st->admit, s, slot, from, to, undone);
    hbl_victim_moved(&st->order, s, slot, from, to, undone);
}

static uint32_t victim(void *v, struct hbl_sim *s, int dev)
{
    struct state *st = v;
    uint32_t x = hbl_admit_victim(&st->admit, s, dev);
    return x != HBL_NONE ? x : hbl_victim_pick(&st->order, s, dev);
}

static int migrate(void *v, struct hbl_sim *s, uint32_t *slots, int8_t *targets, int max)
{
    struct state *st = v;
    see_spare(st);
    return st->use_migration ? hbl_migration_agent_migrate(&st->ma, s, slots, targets, max) : 0;
}

static int agents(void *v, struct hbl_agent **out)
{
    struct state *st = v;
    int n = 0;
    if (st->use_placement) out[n++] = st->pa.ag;
    if (st->use_migration) out[n++] = st->ma.ag;
    return n;
}

#define HARMONIA(var, nm, dc, in) \
    const struct hbl_policy_ops var = { .name = nm, .doc = dc, \
        .flags = HBL_POLICY_LEARNS | HBL_POLICY_LIVE, .params = params, .init = in, \
        .free = destroy, .place = place, .observe = observe, .migrate = migrate, .agents = agents, \
        .set_future = set_future, .teacher = teacher, .on_move = on_move, .victim = victim }

HARMONIA(hbl_policy_harmonia, "harmonia",
         "Harmonia: RL placement agent + RL migration agent coordinating through shared state", init_both);
HARMONIA(hbl_policy_harmonia_placement_only, "harmonia-placement-only",
         "Harmonia's placement agent alone (7 features, no migration agent)", init_placement);
HARMONIA(hbl_policy_harmonia_migration_only, "harmonia-migration-only",
         "Harmonia's migration agent with writes placed on the fastest device", init_migration);
