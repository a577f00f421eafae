/*
 * The few kernel types the capture programs read, declared by hand with
 * preserve_access_index: CO-RE relocates every field access against the
 * running kernel's BTF, so layouts that moved between kernels (rwbs grew
 * from 8 to 10 bytes in 6.x) still load unchanged.
 */
#ifndef __VMLINUX_MIN_H
#define __VMLINUX_MIN_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u32 __be32;
typedef __u16 __be16;
typedef __u32 __wsum;
typedef __u32 dev_t;
typedef __u64 sector_t;
typedef _Bool bool;

enum { BPF_MAP_TYPE_HASH = 1, BPF_MAP_TYPE_ARRAY = 2, BPF_MAP_TYPE_PERCPU_ARRAY = 6,
       BPF_MAP_TYPE_RINGBUF = 27 };
enum { BPF_ANY = 0, BPF_NOEXIST = 1, BPF_EXIST = 2 };
enum { BPF_RB_NO_WAKEUP = 1, BPF_RB_FORCE_WAKEUP = 2 };
enum { BPF_RB_AVAIL_DATA = 0 };

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct trace_entry {
    unsigned short type;
    unsigned char flags;
    unsigned char preempt_count;
    int pid;
};

struct trace_event_raw_block_bio_remap {
    struct trace_entry ent;
    dev_t dev;
    sector_t sector;
    unsigned int nr_sector;
    dev_t old_dev;
    sector_t old_sector;
    char rwbs[8];
};

/* for the BTF tracepoints, which pass the request or the bio itself */
struct block_device {
    dev_t bd_dev;
};

struct gendisk {
    struct block_device *part0;
};

struct request_queue {
    struct gendisk *disk;
};

struct request {
    struct request_queue *q;
    unsigned int cmd_flags;
    unsigned int __data_len;
    sector_t __sector;
    struct block_device *part;
    __u64 start_time_ns;
    __u64 io_start_time_ns;
};

struct bvec_iter {
    sector_t bi_sector;
    unsigned int bi_size;
};

struct bio {
    struct block_device *bi_bdev;
    unsigned int bi_opf;
    struct bvec_iter bi_iter;
};

#pragma clang attribute pop

/* a request's flag bits (REQ_SYNC is 1 << __REQ_SYNC): the value is relocated
 * against the running kernel's BTF, the one here is only a placeholder */
enum req_flag_bits { __REQ_SYNC = 11 };

#endif
