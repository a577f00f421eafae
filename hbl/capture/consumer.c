/*
 * The libbpf loader and ring-buffer consumer of hbl's block capture.
 *
 * Loads ebpf/hbl_capture.bpf.o (CO-RE), fills the device filter, attaches the
 * tracepoints and drains the ring buffer straight into arrays of hbl's request
 * record (and, for remaps, of raw events), a batch per call: Python never
 * sees a single event.  Times become wall-clock ns (CLOCK_REALTIME) with the
 * offset between the clocks taken at open.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "capture_api.h"

struct hbl_capture {
    struct bpf_object *obj;
    struct bpf_link *links[8];
    int nlinks;
    struct ring_buffer *rb;
    int lost_fd, extents_fd;
    int64_t clock_offset;
    /* current batch */
    struct hbl_request *out; int64_t n, max;
    struct hbl_event *remaps; int64_t nremap, maxremap;
    uint64_t events, remap_events, dropped_full;
};

static char last_libbpf[512];

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
    if (level == LIBBPF_WARN) vsnprintf(last_libbpf, sizeof(last_libbpf), fmt, args);
    return 0;
}

static int64_t now_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int on_event(void *ctx, void *data, size_t size)
{
    struct hbl_capture *c = ctx;
    const struct hbl_event *e = data;
    if (size < sizeof(*e)) return 0;
    if (e->kind == HBL_EV_REMAP) {
        c->remap_events++;
        if (c->nremap < c->maxremap) c->remaps[c->nremap++] = *e;
        else c->dropped_full++;
        return 0;
    }
    c->events++;
    struct hbl_request *r = &c->out[c->n++];
    r->time_ns = (uint64_t)((int64_t)e->ts_ns + c->clock_offset);
    r->offset = e->sector << 9;
    r->latency_ns = e->latency_ns;
    r->length = e->bytes;
    r->pid = e->pid;
    r->device = e->dev;
    r->op = e->op;
    r->_pad[0] = r->_pad[1] = r->_pad[2] = 0;
    /* stop when the batch is full: the next event stays in the ring */
    return c->n >= c->max ? -E2BIG : 0;
}

void hbl_capture_close(struct hbl_capture *c)
{
    if (!c) return;
    ring_buffer__free(c->rb);
    for (int i = 0; i < c->nlinks; i++) bpf_link__destroy(c->links[i]);
    bpf_object__close(c->obj);
    free(c);
}

/* Write a `const volatile` global of the BPF object before it is loaded: found by
 * name in the BTF of .rodata, whose initial image libbpf loads frozen. */
static int set_rodata(struct bpf_object *obj, const char *var, const void *val, size_t len)
{
    struct btf *btf = bpf_object__btf(obj);
    struct bpf_map *m;
    bpf_object__for_each_map(m, obj) {
        if (!bpf_map__is_internal(m) || !strstr(bpf_map__name(m), ".rodata")) continue;
        size_t size;
        const char *data = bpf_map__initial_value(m, &size);
        int id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
        if (!data || id < 0) return -1;
        const struct btf_type *sec = btf__type_by_id(btf, id);
        const struct btf_var_secinfo *v = btf_var_secinfos(sec);
        for (int i = 0; i < btf_vlen(sec); i++, v++) {
            const struct btf_type *t = btf__type_by_id(btf, v->type);
            if (strcmp(btf__name_by_offset(btf, t->name_off), var)) continue;
            if (v->offset + len > size || v->size != len) return -1;
            char *image = malloc(size);
            if (!image) return -1;
            memcpy(image, data, size);
            memcpy(image + v->offset, val, len);
            int rc = bpf_map__set_initial_value(m, image, size);
            free(image);
            return rc;
        }
    }
    return -1;
}

struct hbl_capture *hbl_capture_open(const char *obj_path, const uint32_t *devs, const uint32_t *modes,
                                     int32_t ndev, int32_t want_remap, int32_t extent_shift,
                                     int64_t ringbuf_bytes, int32_t fast, char *err, int32_t errlen)
{
    libbpf_set_print(print_fn);
    struct hbl_capture *c = calloc(1, sizeof(*c));
    if (!c) { snprintf(err, errlen, "out of memory"); return NULL; }
    c->obj = bpf_object__open_file(obj_path, NULL);
    if (!c->obj) {
        snprintf(err, errlen, "cannot open BPF object %s: %s", obj_path, strerror(errno));
        free(c);
        return NULL;
    }
    if (ringbuf_bytes > 0) {
        struct bpf_map *m = bpf_object__find_map_by_name(c->obj, "events");
        if (!m || bpf_map__set_max_entries(m, (uint32_t)ringbuf_bytes)) {
            snprintf(err, errlen, "ring buffer size %lld: must be a power of two, at least a page",
                     (long long)ringbuf_bytes);
            hbl_capture_close(c);
            return NULL;
        }
    }
    /* load only the programs these devices need: every attached tracepoint costs
     * the traced I/O a little, even when the program returns at once */
    int any_rq = 0, any_bio = 0, any_bio_done = 0;
    for (int i = 0; i < ndev; i++) {
        if (modes[i] == HBL_MODE_RQ) any_rq = 1;
        else any_bio = 1;
        if (modes[i] == HBL_MODE_BIO_DONE) any_bio_done = 1;
    }
    struct bpf_program *p;
    bpf_object__for_each_program(p, c->obj) {
        const char *name = bpf_program__name(p);
        int want = !strcmp(name, "hbl_rq_done") ? (any_rq && fast)
                 : !strncmp(name, "hbl_rq_", 7) ? (any_rq && !fast)
                 : !strcmp(name, "hbl_bio_queue") ? any_bio
                 : !strcmp(name, "hbl_bio_done") ? any_bio_done
                 : !strcmp(name, "hbl_bio_remap") ? (want_remap && any_bio) : 1;
        bpf_program__set_autoload(p, want);
    }
    uint32_t remap = (uint32_t)want_remap, shift = (uint32_t)extent_shift;
    if (set_rodata(c->obj, "want_remap", &remap, sizeof(remap)) ||
        set_rodata(c->obj, "extent_shift", &shift, sizeof(shift))) {
        snprintf(err, errlen, "BPF object %s lacks hbl's feature switches (stale build?)", obj_path);
        hbl_capture_close(c);
        return NULL;
    }
    last_libbpf[0] = 0;
    if (bpf_object__load(c->obj)) {
        int e = errno;
        snprintf(err, errlen, "loading the BPF programs failed: %s%s%s", strerror(e),
                 last_libbpf[0] ? "; libbpf: " : "", last_libbpf);
        hbl_capture_close(c);
        return NULL;
    }
    int dfd = bpf_object__find_map_fd_by_name(c->obj, "devices");
    int efd = bpf_object__find_map_fd_by_name(c->obj, "events");
    c->lost_fd = bpf_object__find_map_fd_by_name(c->obj, "lost");
    c->extents_fd = bpf_object__find_map_fd_by_name(c->obj, "extents");
    if (dfd < 0 || efd < 0 || c->lost_fd < 0 || c->extents_fd < 0) {
        snprintf(err, errlen, "BPF object %s lacks hbl's maps (stale build?)", obj_path);
        hbl_capture_close(c);
        return NULL;
    }
    for (int i = 0; i < ndev; i++) {
        if (bpf_map_update_elem(dfd, &devs[i], &modes[i], BPF_ANY)) {
            snprintf(err, errlen, "device filter: %s", strerror(errno));
            hbl_capture_close(c);
            return NULL;
        }
    }
    c->clock_offset = now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC);
    struct bpf_program *prog;
    bpf_object__for_each_program(prog, c->obj) {
        if (c->nlinks == 8) break;
        if (!bpf_program__autoload(prog)) continue;
        last_libbpf[0] = 0;
        struct bpf_link *l = bpf_program__attach(prog);
        if (!l) {
            int e = errno;
            snprintf(err, errlen, "attaching %s failed: %s%s%s", bpf_program__name(prog), strerror(e),
                     last_libbpf[0] ? "; libbpf: " : "", last_libbpf);
            hbl_capture_close(c);
            return NULL;
        }
        c->links[c->nlinks++] = l;
    }
    c->rb = ring_buffer__new(efd, on_event, c, NULL);
    if (!c->rb) {
        snprintf(err, errlen, "ring buffer: %s", strerror(errno));
        hbl_capture_close(c);
        return NULL;
    }
    return c;
}

int64_t hbl_capture_poll(struct hbl_capture *c, int32_t timeout_ms, struct hbl_request *out, int64_t max,
                         struct hbl_event *remaps, int64_t maxremap, int64_t *nremap)
{
    if (max < 1) return 0;
    c->out = out; c->n = 0; c->max = max;
    c->remaps = remaps; c->nremap = 0; c->maxremap = remaps ? maxremap : 0;
    int rc = ring_buffer__poll(c->rb, timeout_ms);
    /* a full batch stops the drain early; keep draining what is ready without waiting */
    while (rc >= 0 && c->n < c->max) {
        rc = ring_buffer__consume(c->rb);
        if (rc <= 0) break;
    }
    if (nremap) *nremap = c->nremap;
    if (rc < 0 && rc != -E2BIG && rc != -EINTR) return rc;
    return c->n;
}

uint64_t hbl_prog_misses(int32_t fd)
{
    struct bpf_prog_info info;
    uint32_t len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) return 0;
    return len >= offsetof(struct bpf_prog_info, recursion_misses) + sizeof(info.recursion_misses)
           ? info.recursion_misses : 0;
}

void hbl_capture_stats(const struct hbl_capture *c, struct hbl_capture_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->events = c->events;
    st->remap_events = c->remap_events;
    st->remaps_dropped = c->dropped_full;
    /* a program the kernel did not run (it was running already on that CPU, e.g. a completion
     * in an interrupt over one in a task) left its request unrecorded: counted, never hidden */
    struct bpf_program *prog;
    bpf_object__for_each_program(prog, c->obj) {
        if (bpf_program__autoload(prog)) st->lost_missed += hbl_prog_misses(bpf_program__fd(prog));
    }
    int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0 || ncpu > 4096) return;
    uint64_t *vals = calloc((size_t)ncpu, sizeof(uint64_t));
    if (!vals) return;
    for (uint32_t k = 0; k < HBL_LOST_MAX; k++) {
        if (bpf_map_lookup_elem(c->lost_fd, &k, vals)) continue;
        uint64_t sum = 0;
        for (int i = 0; i < ncpu; i++) sum += vals[i];
        if (k == HBL_LOST_RINGBUF) st->lost_ringbuf = sum;
        else st->lost_inflight = sum;
    }
    free(vals);
}

int64_t hbl_capture_heat(const struct hbl_capture *c, struct hbl_extent_key *keys,
                         struct hbl_extent_heat *vals, int64_t max)
{
    struct hbl_extent_key k, next;
    int64_t n = 0;
    void *prev = NULL;
    while (n < max && !bpf_map_get_next_key(c->extents_fd, prev, &next)) {
        if (!bpf_map_lookup_elem(c->extents_fd, &next, &vals[n])) keys[n++] = next;
        k = next;
        prev = &k;
    }
    return n;
}
