/*
 * The capture programs in bcc's dialect, for hosts where researchers use bcc
 * (hbl/capture/bcc_loader.py).  Same events, same record (hbl_event.h), same
 * rules as hbl_capture.bpf.c: request-based devices at issue + completion with
 * latency, bio-based (device-mapper) devices at queue, or at queue + completion
 * with latency (HBL_MODE_BIO_DONE), lost records counted.
 */
#include <uapi/linux/ptrace.h>
#include "hbl_event.h"
#include "hbl_capture_common.h"

BPF_HASH(devices, u32, u32, 64);
/* requests by their first sector; bios (HBL_MODE_BIO_DONE) by the sector after their last,
 * which a driver's partial completions (bio_advance) and splits (bio_trim) leave as it was */
struct inflight_key { u32 dev; u32 _pad; u64 sector; };
struct inflight_val { u64 ts; u64 sector; u32 pid; u32 bytes; u8 op; u8 sync; char comm[16]; };
BPF_HASH(inflight, struct inflight_key, struct inflight_val, 65536);
BPF_RINGBUF_OUTPUT(events, 4096);
BPF_PERCPU_ARRAY(lost, u64, HBL_LOST_MAX);

static __always_inline void count_lost(u32 why)
{
    u64 *n = lost.lookup(&why);
    if (n)
        (*n)++;
}

static __always_inline u32 mode_of(u32 dev)
{
    u32 *m = devices.lookup(&dev);
    return m ? *m : 0;
}

/* At a completion: the in-flight entry keyed (dev, key_sector), if any, recorded with its
 * latency and removed. */
static __always_inline void complete(u32 dev, u64 key_sector)
{
    struct inflight_key k = {};
    k.dev = dev;
    k.sector = key_sector;
    struct inflight_val *v = inflight.lookup(&k);
    if (!v)
        return;
    u64 now = bpf_ktime_get_ns();
    struct hbl_event *e = events.ringbuf_reserve(sizeof(struct hbl_event));
    if (!e) {
        count_lost(HBL_LOST_RINGBUF);
        inflight.delete(&k);
        return;
    }
    hbl_fill_io(e, v->ts, v->sector, now - v->ts, dev, v->bytes, v->pid, v->op, v->sync);
    __builtin_memcpy(e->comm, v->comm, 16);
    inflight.delete(&k);
    events.ringbuf_submit(e, 0);
}


TRACEPOINT_PROBE(block, block_rq_issue)
{
    u32 dev = args->dev;
    if (mode_of(dev) != HBL_MODE_RQ)
        return 0;
    char rwbs[8];
    __builtin_memcpy(rwbs, args->rwbs, 8);
    struct inflight_val v = {};
    v.op = hbl_op_of(rwbs, &v.sync);
    if (v.op == 255)
        return 0;
    struct inflight_key k = {};
    k.dev = dev;
    k.sector = args->sector;
    v.ts = bpf_ktime_get_ns();
    v.sector = args->sector;
    v.pid = bpf_get_current_pid_tgid() >> 32;
    v.bytes = args->bytes ? args->bytes : args->nr_sector << 9;
    __builtin_memcpy(v.comm, args->comm, 16);
    /* keyed by sector (these tracepoints do not pass the request): a second request
     * to a sector already in flight is counted lost, never confused with the first */
    if (inflight.insert(&k, &v))
        count_lost(HBL_LOST_INFLIGHT);
    return 0;
}

TRACEPOINT_PROBE(block, block_rq_complete)
{
    if (mode_of(args->dev) == HBL_MODE_RQ)
        complete(args->dev, args->sector);
    return 0;
}

TRACEPOINT_PROBE(block, block_bio_queue)
{
    u32 dev = args->dev;
    u32 mode = mode_of(dev);
    if (mode != HBL_MODE_BIO && mode != HBL_MODE_BIO_DONE)
        return 0;
    char rwbs[8];
    __builtin_memcpy(rwbs, args->rwbs, 8);
    u8 sync;
    u8 op = hbl_op_of(rwbs, &sync);
    if (op == 255)
        return 0;
    if (mode == HBL_MODE_BIO_DONE) {
        struct inflight_key k = {};
        k.dev = dev;
        k.sector = args->sector + args->nr_sector;
        struct inflight_val v = {};
        v.ts = bpf_ktime_get_ns();
        v.sector = args->sector;
        v.pid = bpf_get_current_pid_tgid() >> 32;
        v.bytes = args->nr_sector << 9;
        v.op = op;
        v.sync = sync;
        __builtin_memcpy(v.comm, args->comm, 16);
        /* a second bio in flight ending at the same sector is counted lost, never confused */
        if (inflight.insert(&k, &v))
            count_lost(HBL_LOST_INFLIGHT);
        return 0;
    }
    struct hbl_event *e = events.ringbuf_reserve(sizeof(struct hbl_event));
    if (!e) {
        count_lost(HBL_LOST_RINGBUF);
        return 0;
    }
    hbl_fill_io(e, bpf_ktime_get_ns(), args->sector, 0, dev, args->nr_sector << 9,
                bpf_get_current_pid_tgid() >> 32, op, sync);
    __builtin_memcpy(e->comm, args->comm, 16);
    events.ringbuf_submit(e, 0);
    return 0;
}

TRACEPOINT_PROBE(block, block_bio_complete)
{
    if (mode_of(args->dev) == HBL_MODE_BIO_DONE)
        complete(args->dev, args->sector + args->nr_sector);
    return 0;
}
