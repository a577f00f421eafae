/*
 * rwbs (the block tracepoints' "RWBS" string) to hbl's op code, shared by the
 * CO-RE programs and the bcc ones (plain C, no map or helper use).
 * Returns 0 read, 1 write, 2 discard, 3 flush, 255 for what hbl does not record.
 */
#ifndef HBL_RWBS_H
#define HBL_RWBS_H

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

#endif
