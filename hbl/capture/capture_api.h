/* The capture consumer's interface (hbl/capture/consumer.c), read by cffi.
 * The request record comes from ctypes_core/hbl_api.h, the event from
 * ebpf/hbl_event.h: neither is repeated here. */
#ifndef HBL_CAPTURE_API_H
#define HBL_CAPTURE_API_H
#include <stdint.h>
#include "hbl_api.h"
#include "hbl_event.h"

struct hbl_capture_stats {
    uint64_t events;          /* I/O records delivered */
    uint64_t remap_events;
    uint64_t remaps_dropped;  /* remap records that found no room in the caller's batch */
    uint64_t lost_ringbuf;    /* records the kernel could not queue (ring buffer full) */
    uint64_t lost_inflight;   /* issues that could not be tracked to completion */
    uint64_t lost_missed;     /* program runs the kernel skipped (a tracepoint hit while a BPF
                               * program already ran on that CPU: its recursion_misses) */
};

struct hbl_capture;
/* ringbuf_bytes: 0 = the program's default (16 MiB), else a power of two >= a page;
 * fast: request-based devices from one BTF tracepoint at completion (no pid/comm,
 * latency from the request's start time) instead of issue + completion */
struct hbl_capture *hbl_capture_open(const char *obj_path, const uint32_t *devs, const uint32_t *modes,
                                     int32_t ndev, int32_t want_remap, int32_t extent_shift,
                                     int64_t ringbuf_bytes, int32_t fast, char *err, int32_t errlen);
void hbl_capture_close(struct hbl_capture *c);
/* Waits up to timeout_ms, then drains up to max requests (and remaps, if given). */
int64_t hbl_capture_poll(struct hbl_capture *c, int32_t timeout_ms, struct hbl_request *out, int64_t max,
                         struct hbl_event *remaps, int64_t maxremap, int64_t *nremap);
void hbl_capture_stats(const struct hbl_capture *c, struct hbl_capture_stats *st);
/* The runs the kernel skipped of the program behind fd (0 where it cannot say) */
uint64_t hbl_prog_misses(int32_t fd);
int64_t hbl_capture_heat(const struct hbl_capture *c, struct hbl_extent_key *keys,
                         struct hbl_extent_heat *vals, int64_t max);
#endif
