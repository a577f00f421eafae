/*
 * The one record the capture programs emit, read as is by both user-side
 * loaders (hbl/capture: the libbpf consumer in C includes this file; the bcc
 * loader compiles it into its program and reads it with the layout cffi
 * derives from this file).  Keep it free of kernel types.
 */
#ifndef HBL_EVENT_H
#define HBL_EVENT_H

/* Plain C types only (64-bit long long, 32-bit int on both x86-64 and BPF),
 * so the BPF side, the C consumer and cffi all read this file unchanged. */

enum hbl_event_kind { HBL_EV_IO = 0, HBL_EV_REMAP = 1 };
/* ops use hbl's request op codes: 0 read, 1 write, 2 discard, 3 flush */

struct hbl_event {
    unsigned long long ts_ns;       /* bpf_ktime_get_ns() at issue (rq devices) or queue (bio devices) */
    unsigned long long sector;      /* 512-byte sectors on dev */
    unsigned long long latency_ns;  /* issue (bio: queue) to completion; 0 when not measured */
    unsigned long long old_sector;  /* remap: the sector on old_dev */
    unsigned int dev;         /* kernel dev_t: major << 20 | minor */
    unsigned int old_dev;     /* remap: the device the bio came from */
    unsigned int bytes;
    unsigned int pid;
    unsigned char op;
    unsigned char kind;         /* enum hbl_event_kind */
    unsigned char sync;         /* REQ_SYNC seen in rwbs */
    unsigned char _pad[5];
    char comm[16];
};

/* Device filter values: how a device's requests are captured.  RQ: a request-based
 * device, at issue and completion; BIO: a bio-based one, at queue (no latency); BIO_DONE:
 * a bio-based one, at queue and completion (emitted at completion, with its latency). */
enum hbl_dev_mode { HBL_MODE_RQ = 1, HBL_MODE_BIO = 2, HBL_MODE_BIO_DONE = 3 };

/* Lost-record counters (a per-CPU array indexed by these). */
enum hbl_lost { HBL_LOST_RINGBUF = 0, HBL_LOST_INFLIGHT = 1, HBL_LOST_MAX = 2 };

/* In-kernel per-extent heat (optional). */
struct hbl_extent_key { unsigned int dev; unsigned int _pad; unsigned long long extent; };
struct hbl_extent_heat { unsigned long long count; unsigned long long last_ns; unsigned long long reads; unsigned long long writes; };

#endif
