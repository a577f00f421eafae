/*
 * What the CO-RE programs and the bcc ones share (plain C, no map or helper
 * use): rwbs decoding and the filling of an I/O record.  Include after
 * hbl_event.h.
 */
#ifndef HBL_CAPTURE_COMMON_H
#define HBL_CAPTURE_COMMON_H

/* rwbs (the block tracepoints' "RWBS" string) to hbl's op code:
 * 0 read, 1 write, 2 discard, 3 flush, 255 for what hbl does not record. */
static __always_inline unsigned char hbl_op_of(const char *rwbs, unsigned char *sync)
{
    unsigned char op = 255, flush = 0;
    *sync = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        char c = rwbs[i];
        if (!c)
            break;
        if (c == 'W' && op == 255) op = 1;
        else if (c == 'R' && op == 255) op = 0;
        else if (c == 'D' && op == 255) op = 2;
        else if (c == 'F') flush = 1;
        else if (c == 'S') *sync = 1;
    }
    if (op == 255 && flush)
        op = 3;
    return op;
}

static __always_inline void hbl_fill_io(struct hbl_event *e, unsigned long long ts, unsigned long long sector,
                                        unsigned long long latency, unsigned int dev, unsigned int bytes,
                                        unsigned int pid, unsigned char op, unsigned char sync)
{
    e->ts_ns = ts;
    e->sector = sector;
    e->latency_ns = latency;
    e->old_sector = 0;
    e->dev = dev;
    e->old_dev = 0;
    e->bytes = bytes;
    e->pid = pid;
    e->op = op;
    e->kind = HBL_EV_IO;
    e->sync = sync;
}

#endif
