/*
 * hbl agent core: the public C interface.
 *
 * This file is the single definition of the request record and of every type
 * that crosses the C/Python boundary.  ctypes_core/build.py feeds it to cffi
 * (preprocessor lines are stripped), and hbl/record.py derives the NumPy dtype
 * of a request from the struct below, so the layout exists exactly once.
 */
#ifndef HBL_API_H
#define HBL_API_H
#include <stdint.h>

/* One block request, as read from a trace or captured live. */
struct hbl_request {
    uint64_t time_ns;    /* issue time, ns (epoch or trace-relative) */
    uint64_t offset;     /* logical offset, bytes */
    uint64_t latency_ns; /* measured latency, 0 when unknown */
    uint32_t length;     /* bytes */
    uint32_t pid;        /* issuing process, 0 when unknown */
    uint32_t device;     /* device or volume number, 0 when unknown */
    uint8_t op;          /* enum hbl_op */
    uint8_t _pad[3];
};

enum hbl_op { HBL_OP_READ = 0, HBL_OP_WRITE = 1, HBL_OP_DISCARD = 2, HBL_OP_FLUSH = 3 };
enum { HBL_MAX_DEVICES = 4, HBL_MAX_CHANNELS = 64 };

/* Service model of one device (see hbl/devices.py for the sources). */
struct hbl_device_params {
    double read_latency_ns;    /* fixed cost of one read I/O */
    double write_latency_ns;   /* fixed cost of one write I/O */
    double read_bytes_per_ns;  /* transfer rate */
    double write_bytes_per_ns;
    /* HDD positioning for a non-sequential I/O (all 0 for SSDs): rotation_ns + a seek
     * that grows with the square root of the distance, track_seek_ns for a short hop,
     * seek_ns at a third of span_pages (the average seek of datasheets). */
    double seek_ns;
    double track_seek_ns;
    double rotation_ns;
    double span_pages;
    int64_t capacity_pages;    /* < 0: unlimited */
    int32_t channels;          /* I/Os served in parallel (internal parallelism) */
};

struct hbl_sim_config {
    int32_t ndev;              /* 2..4, fastest first */
    uint32_t page_size;        /* bytes per page (the unit of placement) */
    double speed;              /* open loop: arrival = trace time / speed */
    int32_t queue_depth;       /* > 0: closed loop at this depth, trace times ignored */
    uint32_t migrate_every;    /* requests between two calls of the policy's migrate() */
    uint32_t migrate_max;      /* moves the policy may ask for per call */
    uint32_t timeline_every;   /* requests per timeline row, 0 = no timeline */
    uint64_t seed;
    struct hbl_device_params dev[4];
};

/* Named numeric parameters of a policy ("threshold" = 3, ...). */
struct hbl_params {
    int32_t n;
    char keys[32][32];
    double values[32];
};

struct hbl_sim_stats {
    uint64_t requests;         /* requests served (reads and writes) */
    uint64_t skipped;          /* flush, discard and zero-length requests: not simulated */
    uint64_t reads, writes;
    uint64_t read_bytes, write_bytes;
    uint64_t page_accesses;
    uint64_t fast_page_hits;   /* page accesses served by device 0 */
    uint64_t read_page_accesses;
    uint64_t fast_read_hits;   /* page reads served by device 0 */
    uint64_t promotions;       /* moves to a faster device */
    uint64_t evictions;        /* moves to a slower device */
    uint64_t fallback_evictions; /* of which forced by a full device */
    uint64_t clean_evictions;  /* of which free: the slowest device still had the data */
    uint64_t migrated_bytes;
    uint64_t pages;            /* distinct pages seen */
    double latency_sum_ns;
    double first_arrival_ns, last_completion_ns;
    double busy_ns[4];         /* per device, time its channels were busy (sum / channels) */
    uint64_t used_pages[4];
    uint64_t dev_io_bytes[4];  /* foreground + migration bytes per device */
};

struct hbl_timeline_row {
    uint64_t requests;         /* cumulative requests at the end of the window */
    double time_ns;            /* simulated time at the end of the window */
    double avg_latency_ns;     /* average over the window */
    double fast_hit_ratio;     /* over the window */
    uint64_t promotions, evictions; /* cumulative */
    uint64_t fast_used_pages;
};

struct hbl_sim;

/* Policy registry: names and one-line descriptions; NULL past the end. */
const char *hbl_policy_name(int32_t i);
const char *hbl_policy_doc(int32_t i);

struct hbl_sim *hbl_sim_new(const struct hbl_sim_config *cfg, const char *policy,
                            const struct hbl_params *params, void *plugin,
                            char *err, int32_t errlen);
void hbl_sim_free(struct hbl_sim *s);
/* Oracle only: hand it the whole trace before feeding it (future knowledge). */
int32_t hbl_sim_set_future(struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n);
int32_t hbl_sim_feed(struct hbl_sim *s, const struct hbl_request *reqs, uint64_t n);
void hbl_sim_get_stats(const struct hbl_sim *s, struct hbl_sim_stats *out);
double hbl_sim_latency_percentile(const struct hbl_sim *s, double q);
uint64_t hbl_sim_timeline(const struct hbl_sim *s, struct hbl_timeline_row *out, uint64_t max);
/* Invariants: every page has one home, no device over capacity, counters agree. 0 = ok. */
int32_t hbl_sim_check(const struct hbl_sim *s, char *err, int32_t errlen);

/* Page state, for Python plugin policies and tests (slot = dense page index). */
int32_t hbl_sim_page_device(const struct hbl_sim *s, uint32_t slot);
uint64_t hbl_sim_page_number(const struct hbl_sim *s, uint32_t slot);
uint32_t hbl_sim_page_count(const struct hbl_sim *s, uint32_t slot);
uint64_t hbl_sim_page_last_access(const struct hbl_sim *s, uint32_t slot);
int64_t hbl_sim_free_pages(const struct hbl_sim *s, int32_t dev);
/* Capacity in force (a policy may lift it: fast-only), < 0 = unlimited. */
int64_t hbl_sim_capacity(const struct hbl_sim *s, int32_t dev);
uint64_t hbl_sim_now_request(const struct hbl_sim *s);
/* Up to max slots of device dev, least recently used first. */
uint64_t hbl_sim_lru_pages(const struct hbl_sim *s, int32_t dev, uint32_t *out, uint64_t max);

/* Trace statistics in one streaming pass: footprint and, if reuse, reuse distance (in distinct pages). */
struct hbl_tstats;
struct hbl_tstats *hbl_tstats_new(uint32_t page_size, int32_t reuse);
void hbl_tstats_free(struct hbl_tstats *t);
int32_t hbl_tstats_feed(struct hbl_tstats *t, const struct hbl_request *reqs, uint64_t n);
uint64_t hbl_tstats_pages(const struct hbl_tstats *t);
/* counts[i] = reuses with distance in [2^i - 1, 2^(i+1) - 1); cold (first) accesses in *cold. */
void hbl_tstats_reuse(const struct hbl_tstats *t, uint64_t *counts, int32_t nbins, uint64_t *cold);

/* Python plugin policies (policy "python"): implemented in hbl/plugin.py. */
#if HBL_CDEF
extern "Python+C" void hbl_py_place(void *plugin, const struct hbl_request *req,
                                    const uint32_t *slots, int32_t n, int8_t *targets);
extern "Python+C" int32_t hbl_py_migrate(void *plugin, uint32_t *slots, int8_t *targets, int32_t max);
#else
void hbl_py_place(void *plugin, const struct hbl_request *req,
                  const uint32_t *slots, int32_t n, int8_t *targets);
int32_t hbl_py_migrate(void *plugin, uint32_t *slots, int8_t *targets, int32_t max);
#endif

#endif
