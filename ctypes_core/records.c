/* A live device's records sorted out in one pass a poll (hbl_api.h, "Live records"): what the
 * controller did with a numpy call per field (and per member), here a loop over the records.
 * It knows record fields and device numbers, nothing of device mapper or of policies. */
#include "hbl_internal.h"

static int member_of(const struct hbl_rec_notes *s, uint32_t device)
{
    for (int i = 0; i < s->nmembers; i++)
        if (s->member_device[i] == device) return i;
    return -1;
}

static int is_request(const struct hbl_request *q)
{
    return q->op <= HBL_OP_WRITE && q->length > 0;
}

/* The requests of r within the extents noted for hbl_rec_observe; first writes as the
 * written flags were before the call, then the flags set over each write's extents. */
static void note_requests(struct hbl_rec_notes *s, const struct hbl_request *r, uint64_t n)
{
    uint64_t ext = s->extent_bytes, from = s->p_n, k = s->p_n;
    for (uint64_t i = 0; i < n; i++) {
        const struct hbl_request *q = &r[i];
        if (q->device != s->log_device || !is_request(q)) continue;
        uint64_t first = q->offset / ext, last = (q->offset + q->length - 1) / ext;
        if (last >= s->nextents) continue;
        int w = q->op == HBL_OP_WRITE;
        s->p_req[k] = *q;
        s->p_first[k] = (int64_t)first;
        s->p_last[k] = (int64_t)last;
        s->p_write[k] = (uint8_t)w;
        s->p_first_write[k] = (uint8_t)(w && s->written[first] == 0);
        k++;
    }
    for (uint64_t j = from; j < k; j++)
        if (s->p_write[j])
            for (int64_t e = s->p_first[j]; e <= s->p_last[j]; e++) s->written[e] = 1;
    s->p_n = k;
}

void hbl_rec_note(struct hbl_rec_notes *s, const struct hbl_request *r, uint64_t n, int32_t what)
{
    uint64_t ext = s->extent_bytes;
    if (what & HBL_REC_WRITES) s->w_n = 0;
    if (what & HBL_REC_HELD) s->h_n = 0;
    for (uint64_t i = 0; i < n; i++) {
        const struct hbl_request *q = &r[i];
        if (q->device == s->log_device) {
            if ((what & HBL_REC_HELD) && q->op == HBL_OP_WRITE && q->length > 0) {
                s->h_first[s->h_n] = (int64_t)(q->offset / ext);
                s->h_last[s->h_n++] = (int64_t)((q->offset + q->length - 1) / ext);
            }
            continue;
        }
        if (what & HBL_REC_NOTE) s->members++;
        int m = member_of(s, q->device);
        if (m < 0) continue;
        if ((what & HBL_REC_NOTE) && q->op <= HBL_OP_WRITE && q->latency_ns > 0) {
            s->lat_n[m * 2 + q->op]++;
            s->lat_sum[m * 2 + q->op] += (int64_t)q->latency_ns;
        }
        if ((what & HBL_REC_WRITES) && q->op == HBL_OP_WRITE) {
            uint64_t j = s->w_n++;
            s->w_dev[j] = m;
            s->w_off[j] = (int64_t)q->offset;
            s->w_len[j] = q->length;
            s->w_done[j] = (int64_t)(q->time_ns + q->latency_ns);
            s->w_pid[j] = q->pid;
        }
    }
    if (what & HBL_REC_NOTE) {
        note_requests(s, r, n);
        s->records += n;
    }
}

void hbl_rec_observe(struct hbl_rec_notes *s, const int8_t *dev, const double *lat, float *heat, uint32_t *rw,
                     struct hbl_rec_counts *out)
{
    for (uint64_t i = 0; i < s->p_n; i++) {
        struct hbl_request *q = &s->p_req[i];
        int64_t first = s->p_first[i], last = s->p_last[i];
        int w = s->p_write[i];
        q->latency_ns = (uint64_t)lat[dev[first] * 2 + q->op];
        int64_t fast = 0;
        for (int64_t e = first; e <= last; e++) fast += dev[e] == 0;
        if (w) {
            out->writes++;
            out->write_pages += last - first + 1;
            out->fast_write_pages += fast;
        } else {
            out->reads++;
            out->read_pages += last - first + 1;
            out->fast_read_pages += fast;
        }
        out->fast_hits += dev[first] == 0;
        heat[first] += 1.0f;
        rw[first * 2 + w] += 1;
        if (q->time_ns > out->newest_ns) out->newest_ns = q->time_ns;
    }
}

uint64_t hbl_rec_track(const struct hbl_rec_notes *s, const struct hbl_request *r, uint64_t n,
                       int64_t *q_t, int64_t *q_off, int64_t *q_first, uint64_t *qn,
                       int64_t *c_dev, int64_t *c_off, int64_t *c_len, uint64_t *cn)
{
    uint64_t others = 0, a = *qn, b = *cn;
    for (uint64_t i = 0; i < n; i++) {
        const struct hbl_request *q = &r[i];
        if (q->device == s->log_device) {
            if (!is_request(q)) continue;
            q_t[a] = (int64_t)q->time_ns;
            q_off[a] = (int64_t)q->offset;
            q_first[a++] = (int64_t)(q->offset / s->extent_bytes);
            continue;
        }
        others++;
        int m = member_of(s, q->device);
        if (m < 0 || q->latency_ns == 0) continue;
        c_dev[b] = m;
        c_off[b] = (int64_t)q->offset;
        c_len[b++] = q->length;
    }
    *qn = a;
    *cn = b;
    return others;
}
