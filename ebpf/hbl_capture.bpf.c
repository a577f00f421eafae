// SPDX-License-Identifier: GPL-2.0
/*
 * hbl's block capture: tracepoints only (no kprobes), CO-RE.
 *
 * - Devices are chosen by user space in `devices` (dev_t -> mode).  A
 *   request-based device (blk-mq: NVMe, SCSI, virtio, loop) is captured at
 *   block_rq_issue and block_rq_complete (their BTF forms, which pass the
 *   request: it keys the in-flight table, so requests to one sector in flight
 *   together stay apart) and emitted once, at completion, with its latency.
 *   A bio-based device (device-mapper, md) is captured at block_bio_queue:
 *   emitted there, with no latency (HBL_MODE_BIO), or, in HBL_MODE_BIO_DONE,
 *   kept in the in-flight table under the bio's address and emitted at
 *   block_bio_complete of that bio, with its latency.  The kernel traces a
 *   bio's completion once, in bio_endio, for a bio whose queueing it traced
 *   (BIO_TRACE_COMPLETION) and that no request carried (blk-mq clears the
 *   flag as its request completes): so for a driver that ends the bio it was
 *   given itself, as device-mapper does once every clone it sent below has
 *   ended (user space asks for this mode only there).  A clone queued to a
 *   traced device below is a bio of its own: its own address and records.
 * - block_bio_remap shows a dm device's logical-to-physical mapping, when asked.
 * - Records go to one ring buffer; what cannot be recorded is counted in
 *   `lost`, never dropped silently.
 * - Optional in-kernel heat per extent, for consumers that need only that.
 */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "hbl_event.h"
#include "hbl_capture_common.h"

char LICENSE[] SEC("license") = "GPL";

/* Feature switches, written by the loader into .rodata before the programs are
 * loaded: the verifier then knows their values and removes the code of a switch
 * that is off, instead of every event paying a map lookup to test it. */
const volatile __u32 want_remap = 0;     /* emit block_bio_remap records */
const volatile __u32 extent_shift = 0;   /* > 0: count heat per 2^shift-sector extent */

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u32);     /* dev_t */
    __type(value, __u32);   /* enum hbl_dev_mode */
} devices SEC(".maps");

struct inflight_val { __u64 ts; __u64 sector; __u32 dev; __u32 pid; __u32 bytes; __u8 op; __u8 sync; char comm[16]; };

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, __u64);     /* the request's or the bio's address (two live objects never share one) */
    __type(value, struct inflight_val);
} inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, HBL_LOST_MAX);
    __type(key, __u32);
    __type(value, __u64);
} lost SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1 << 18);
    __type(key, struct hbl_extent_key);
    __type(value, struct hbl_extent_heat);
} extents SEC(".maps");

static __always_inline void count_lost(__u32 why)
{
    __u64 *n = bpf_map_lookup_elem(&lost, &why);
    if (n)
        (*n)++;
}

/* Wake the consumer only once a batch is waiting: a wakeup per record would
 * cost a context switch per I/O.  The consumer also drains on a short timer,
 * so a trickle of records still arrives promptly. */
#define WAKEUP_BYTES (256 << 10)

static __always_inline void submit(void *e)
{
    __u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
    bpf_ringbuf_submit(e, avail >= WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline __u32 mode_of(__u32 dev)
{
    __u32 *m = bpf_map_lookup_elem(&devices, &dev);
    return m ? *m : 0;
}


static __always_inline void heat(__u32 dev, __u64 sector, __u8 op, __u64 ts)
{
    __u32 shift = extent_shift;
    if (!shift || shift > 63)
        return;
    struct hbl_extent_key k = { .dev = dev, .extent = sector >> shift };
    struct hbl_extent_heat *h = bpf_map_lookup_elem(&extents, &k);
    if (!h) {
        struct hbl_extent_heat z = {};
        bpf_map_update_elem(&extents, &k, &z, BPF_NOEXIST);
        h = bpf_map_lookup_elem(&extents, &k);
        if (!h)
            return;
    }
    __sync_fetch_and_add(&h->count, 1);
    if (op == 0) __sync_fetch_and_add(&h->reads, 1);
    else if (op == 1) __sync_fetch_and_add(&h->writes, 1);
    h->last_ns = ts;
}

/* What the block tracepoints report of a request: the whole disk's dev_t (as
 * block_rq_* do, so a request to a partition counts for its disk), hbl's op
 * code (0 read, 1 write, 2 discard, 3 flush, 255 what hbl does not record),
 * and its first sector (0 where it has none, e.g. a flush). */
static __always_inline __u32 rq_dev(struct request *rq)
{
    return BPF_CORE_READ(rq, q, disk, part0, bd_dev);
}

/* hbl's op code of a request's cmd_flags or a bio's bi_opf (the same REQ_OP_* and flag bits) */
static __always_inline __u8 op_of(__u32 flags, __u8 *sync)
{
    *sync = 0;
    if (bpf_core_enum_value_exists(enum req_flag_bits, __REQ_SYNC))
        *sync = (flags >> bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC)) & 1;
    switch (flags & 0xff) {       /* REQ_OP_*: READ 0, WRITE 1, FLUSH 2, DISCARD 3, SECURE_ERASE 5, WRITE_ZEROES 9 */
    case 0: return 0;
    case 1: case 9: return 1;
    case 2: return 3;
    case 3: case 5: return 2;
    default: return 255;
    }
}

static __always_inline __u64 rq_sector(struct request *rq)
{
    __u64 s = BPF_CORE_READ(rq, __sector);
    return s == (__u64)-1 ? 0 : s;
}

/* The in-flight entry's record, emitted with latency now_ns - its queue time (0: none). */
static __always_inline void emit_done(struct inflight_val *v, __u64 now_ns)
{
    struct hbl_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
        count_lost(HBL_LOST_RINGBUF);
        return;
    }
    hbl_fill_io(e, v->ts, v->sector, now_ns ? now_ns - v->ts : 0, v->dev, v->bytes, v->pid, v->op, v->sync);
    __builtin_memcpy(e->comm, v->comm, sizeof(e->comm));
    heat(v->dev, v->sector, v->op, v->ts);
    submit(e);
}

/* At a completion: the in-flight entry of the request or bio at address k, if any (there is
 * none for another device's, or one issued before capture started), recorded and removed.
 * No device lookup: only traced devices have entries. */
static __always_inline void complete(__u64 k)
{
    struct inflight_val *v = bpf_map_lookup_elem(&inflight, &k);
    if (!v)
        return;
    emit_done(v, bpf_ktime_get_ns());
    bpf_map_delete_elem(&inflight, &k);
}

SEC("tp_btf/block_rq_issue")
int hbl_rq_issue(unsigned long long *ctx)
{
    struct request *rq = (struct request *)ctx[0];
    __u32 dev = rq_dev(rq);
    if (mode_of(dev) != HBL_MODE_RQ)
        return 0;
    struct inflight_val v = {};
    v.op = op_of(BPF_CORE_READ(rq, cmd_flags), &v.sync);
    if (v.op == 255)
        return 0;
    __u64 k = (__u64)rq;
    v.ts = bpf_ktime_get_ns();
    v.sector = rq_sector(rq);
    v.dev = dev;
    v.pid = bpf_get_current_pid_tgid() >> 32;
    v.bytes = BPF_CORE_READ(rq, __data_len);
    bpf_get_current_comm(v.comm, sizeof(v.comm));
    /* a request issued again (requeued) replaces its entry: its latency runs from the last issue */
    if (bpf_map_update_elem(&inflight, &k, &v, BPF_ANY))
        count_lost(HBL_LOST_INFLIGHT);
    return 0;
}

SEC("tp_btf/block_rq_complete")
int hbl_rq_complete(unsigned long long *ctx)
{
    complete(ctx[0]);       /* (request, ...); none left for the rest of a partial completion */
    return 0;
}

/*
 * Fast mode: one BTF tracepoint at completion and nothing at issue.  The
 * latency runs from the request's own start time (set when it was allocated,
 * as block_io_start counts it; io_start_time_ns when the kernel keeps that),
 * so it includes time in the I/O scheduler; pid and comm are unknown at
 * completion and left empty.  No in-flight table: about half the cost.  The
 * device is the disk's, as at issue (rq_dev): rq->part is set only where the
 * queue keeps I/O statistics (queue/iostats), and there the start times too;
 * without them the request is recorded with no latency (0).
 */
SEC("tp_btf/block_rq_complete")
int hbl_rq_done(unsigned long long *ctx)
{
    struct request *rq = (struct request *)ctx[0];
    __u32 nr_bytes = (__u32)ctx[2];
    __u32 dev = rq_dev(rq);
    if (mode_of(dev) != HBL_MODE_RQ)
        return 0;
    __u8 sync, op = op_of(BPF_CORE_READ(rq, cmd_flags), &sync);
    if (op == 255)
        return 0;
    __u64 start = BPF_CORE_READ(rq, io_start_time_ns);
    if (!start)
        start = BPF_CORE_READ(rq, start_time_ns);
    __u64 now = bpf_ktime_get_ns();
    struct hbl_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
        count_lost(HBL_LOST_RINGBUF);
        return 0;
    }
    hbl_fill_io(e, start ? start : now, rq_sector(rq), start ? now - start : 0, dev, nr_bytes, 0, op, sync);
    e->comm[0] = 0;
    heat(dev, e->sector, op, e->ts_ns);
    submit(e);
    return 0;
}

SEC("tp_btf/block_bio_queue")
int hbl_bio_queue(unsigned long long *ctx)
{
    struct bio *bio = (struct bio *)ctx[0];
    __u32 dev = BPF_CORE_READ(bio, bi_bdev, bd_dev);
    __u32 mode = mode_of(dev);
    if (mode != HBL_MODE_BIO && mode != HBL_MODE_BIO_DONE)
        return 0;
    struct inflight_val v = {};
    v.op = op_of(BPF_CORE_READ(bio, bi_opf), &v.sync);
    if (v.op == 255)
        return 0;
    v.ts = bpf_ktime_get_ns();
    v.sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
    v.dev = dev;
    v.pid = bpf_get_current_pid_tgid() >> 32;
    v.bytes = BPF_CORE_READ(bio, bi_iter.bi_size);
    bpf_get_current_comm(v.comm, sizeof(v.comm));
    if (mode == HBL_MODE_BIO) {
        emit_done(&v, 0);
        return 0;
    }
    /* queued once: a bio the driver sends on again (a split's remainder, a requeue) keeps
     * BIO_TRACE_COMPLETION and is not traced here again; its completion ends this entry */
    __u64 k = (__u64)bio;
    if (bpf_map_update_elem(&inflight, &k, &v, BPF_ANY))
        count_lost(HBL_LOST_INFLIGHT);
    return 0;
}

SEC("tp_btf/block_bio_complete")
int hbl_bio_done(unsigned long long *ctx)
{
    complete(ctx[1]);       /* (request_queue, bio): entries only for HBL_MODE_BIO_DONE devices' bios */
    return 0;
}

SEC("tracepoint/block/block_bio_remap")
int hbl_bio_remap(struct trace_event_raw_block_bio_remap *ctx)
{
    if (!want_remap)
        return 0;
    __u32 old_dev = BPF_CORE_READ(ctx, old_dev);
    if (mode_of(old_dev) != HBL_MODE_BIO)
        return 0;
    struct hbl_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
        count_lost(HBL_LOST_RINGBUF);
        return 0;
    }
    char rwbs[8];
    bpf_core_read(rwbs, sizeof(rwbs), &ctx->rwbs);
    __u8 sync;
    e->ts_ns = bpf_ktime_get_ns();
    e->sector = BPF_CORE_READ(ctx, sector);
    e->latency_ns = 0;
    e->old_sector = BPF_CORE_READ(ctx, old_sector);
    e->dev = BPF_CORE_READ(ctx, dev);
    e->old_dev = old_dev;
    e->bytes = BPF_CORE_READ(ctx, nr_sector) << 9;
    e->pid = bpf_get_current_pid_tgid() >> 32;
    e->op = hbl_op_of(rwbs, &sync);
    e->kind = HBL_EV_REMAP;
    e->sync = sync;
    e->comm[0] = 0;
    submit(e);
    return 0;
}
