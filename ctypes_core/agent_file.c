/*
 * Saved agents: writing a policy's agents to one checksummed file and reading
 * them back, every agent validated before any is changed.
 */
#pragma GCC optimize("O3", "fast-math")
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agent_internal.h"

/* ---- saved agents ----
 * "HBLAGENT", u32 version, char policy[32], u32 count, then per agent: the
 * shape (nfeatures, nbins[16], nactions, nhidden, hidden[4], head, atoms,
 * vmin, vmax), u32 nparams, the inference network (version 2: quantized,
 * m.qbytes; version 1: FP32, transposed layout, quantized at load) and the
 * training weights, optimizer moments and step; finally an FNV-1a 64
 * checksum of everything before it.  Little-endian hosts. */

#define AGENT_MAGIC "HBLAGENT"
#define AGENT_VERSION 2u

struct shape {
    int32_t nfeatures; uint8_t nbins[16]; int32_t nactions, nhidden, hidden[4], head, atoms;
    double vmin, vmax;
};

static void shape_of(const struct hbl_agent_config *c, struct shape *s)
{
    memset(s, 0, sizeof(*s));
    s->nfeatures = c->nfeatures;
    memcpy(s->nbins, c->nbins, 16);
    s->nactions = c->nactions; s->nhidden = c->nhidden;
    memcpy(s->hidden, c->hidden, sizeof(s->hidden));
    s->head = c->head;
    s->atoms = c->head == HBL_HEAD_C51 ? c->atoms : 0;
    s->vmin = c->head == HBL_HEAD_C51 ? c->vmin : 0;
    s->vmax = c->head == HBL_HEAD_C51 ? c->vmax : 0;
}

static void layers(const struct shape *s, char *out, size_t n)
{
    int k = 0;
    out[0] = 0;
    for (int i = 0; i < s->nhidden && i < 4 && k >= 0 && (size_t)k < n; i++)
        k += snprintf(out + k, n - (size_t)k, i ? "x%d" : "%d", s->hidden[i]);
}

/* What differs between a file's agent (f) and this configuration's (m), the first difference named. */
static void shape_diff(const struct shape *f, const struct shape *m, char *out, size_t n)
{
    char a[48], b[48];
    if (f->nactions != m->nactions)   /* first: another HSS's devices also bin the device feature otherwise */
        snprintf(out, n, "%d actions (devices) in the file, %d here", f->nactions, m->nactions);
    else if (f->nfeatures != m->nfeatures || memcmp(f->nbins, m->nbins, 16))
        snprintf(out, n, "%d state features in the file, %d here%s", f->nfeatures, m->nfeatures,
                 f->nfeatures == m->nfeatures ? " (binned differently)" : "");
    else if (f->nhidden != m->nhidden || memcmp(f->hidden, m->hidden, sizeof(f->hidden))) {
        layers(f, a, sizeof(a)); layers(m, b, sizeof(b));
        snprintf(out, n, "hidden layers %s in the file, %s here", a, b);
    } else if (f->head != m->head)
        snprintf(out, n, "another output head (%d in the file, %d here)", f->head, m->head);
    else if (f->atoms != m->atoms)
        snprintf(out, n, "%d atoms in the file, %d here", f->atoms, m->atoms);
    else if (f->vmin != m->vmin || f->vmax != m->vmax)
        snprintf(out, n, "value range %g..%g in the file, %g..%g here (the reward, vmin and vmax parameters set it)",
                 f->vmin, f->vmax, m->vmin, m->vmax);
    else
        snprintf(out, n, "another number of weights");
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ULL; }
    return h;
}

struct wbuf { FILE *f; uint64_t h; int bad; };
static void put(struct wbuf *w, const void *p, size_t n)
{
    if (fwrite(p, 1, n, w->f) != n) w->bad = 1;
    w->h = fnv(w->h, p, n);
}

int32_t hbl_agents_save(const char *path, const char *policy, struct hbl_agent *const *agents,
                        int32_t n, char *err, int32_t errlen)
{
    char tmp[4096];
    struct stat st;
    /* written whole and renamed into place: a rename onto a device, a FIFO or a socket replaces the node
     * (as root, /dev/null became a regular file) */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (a device, a FIFO or a socket): an agent file is written "
                 "whole and renamed into place, which would replace it", path);
        return -1;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    struct wbuf w = { fopen(tmp, "wb"), 0xcbf29ce484222325ULL, 0 };
    if (!w.f) { snprintf(err, errlen, "%s: cannot write", tmp); return -1; }
    char name[32] = {0};
    strncpy(name, policy, sizeof(name) - 1);
    uint32_t version = AGENT_VERSION, count = (uint32_t)n;
    put(&w, AGENT_MAGIC, 8); put(&w, &version, 4); put(&w, name, 32); put(&w, &count, 4);
    for (int k = 0; k < n; k++) { tlock(agents[k]); lock(agents[k]); }   /* a consistent snapshot */
    for (int k = 0; k < n; k++) {
        const struct hbl_agent *ag = agents[k];
        struct shape s;
        shape_of(&ag->cfg, &s);
        uint32_t np = (uint32_t)ag->m.np;
        put(&w, &s, sizeof(s)); put(&w, &np, 4);
        put(&w, ag->q, (size_t)ag->m.qbytes); put(&w, ag->w_train, np * 4u);
        put(&w, ag->m1, np * 4u); put(&w, ag->m2, np * 4u); put(&w, &ag->adam_t, 8);
    }
    for (int k = n - 1; k >= 0; k--) { unlock(agents[k]); tunlock(agents[k]); }
    uint64_t h = w.h;
    if (fwrite(&h, 1, 8, w.f) != 8) w.bad = 1;
    if (fflush(w.f) || w.bad) { fclose(w.f); remove(tmp); snprintf(err, errlen, "%s: write failed", tmp); return -1; }
    fclose(w.f);
    if (rename(tmp, path)) { remove(tmp); snprintf(err, errlen, "%s: cannot rename into place", path); return -1; }
    return 0;
}

/* The header's magic and version (both readers check these first, with the same words); *count is
 * the number of agents it says the file holds. */
static int check_header(const uint8_t *head, const char *path, uint32_t *count, char *err, int32_t errlen)
{
    uint32_t version;
    if (memcmp(head, AGENT_MAGIC, 8)) { snprintf(err, errlen, "%s: not an hbl agent file", path); return -1; }
    memcpy(&version, head + 8, 4);
    memcpy(count, head + 44, 4);
    if (version != AGENT_VERSION && version != 1) {
        snprintf(err, errlen, "%s: agent file version %u, this hbl reads versions 1 and %u", path, version,
                 AGENT_VERSION);
        return -1;
    }
    return 0;
}

int32_t hbl_agents_file_features(const char *path, char *err, int32_t errlen)
{
    uint8_t head[48];
    struct shape s;
    uint32_t count;
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open", path); return -1; }
    int got = fread(head, 1, sizeof(head), f) == sizeof(head) && fread(&s, 1, sizeof(s), f) == sizeof(s);
    fclose(f);
    if (!got) { snprintf(err, errlen, "%s: not an hbl agent file", path); return -1; }
    if (check_header(head, path, &count, err, errlen)) return -1;
    if (count < 1 || s.nfeatures < 1) { snprintf(err, errlen, "%s: holds no agent", path); return -1; }
    return s.nfeatures;
}

int32_t hbl_agents_load(const char *path, const char *policy, struct hbl_agent *const *agents,
                        int32_t n, char *err, int32_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open", path); return -1; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 56 || size > (1L << 30)) {
        fclose(f);
        snprintf(err, errlen, "%s: not an hbl agent file (size %ld)", path, size);
        return -1;
    }
    uint8_t *buf = malloc((size_t)size);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f); free(buf);
        snprintf(err, errlen, "%s: read failed", path);
        return -1;
    }
    fclose(f);
    int rc = -1;
    uint64_t h, want;
    uint32_t version, count;
    memcpy(&want, buf + size - 8, 8);
    h = fnv(0xcbf29ce484222325ULL, buf, (size_t)size - 8);
    memcpy(&version, buf + 8, 4);
    char name[33] = {0};
    memcpy(name, buf + 12, 32);
    if (check_header(buf, path, &count, err, errlen)) goto out;
    if (h != want) { snprintf(err, errlen, "%s: checksum mismatch: the file is corrupt", path); goto out; }
    if (strcmp(name, policy)) {
        snprintf(err, errlen, "%s: holds agents of policy '%s', not '%s'", path, name, policy);
        goto out;
    }
    if ((int32_t)count != n) { snprintf(err, errlen, "%s: holds %u agents, policy needs %d", path, count, n); goto out; }
    /* validate every agent before touching any: a refused file changes nothing */
    for (int pass = 0; pass < 2; pass++) {
        size_t off = 48;
        for (int k = 0; k < n; k++) {
            struct hbl_agent *ag = agents[k];
            struct shape s, mine;
            uint32_t np;
            if (off + sizeof(s) + 4 > (size_t)size - 8) { snprintf(err, errlen, "%s: truncated", path); goto out; }
            memcpy(&s, buf + off, sizeof(s)); off += sizeof(s);
            memcpy(&np, buf + off, 4); off += 4;
            shape_of(&ag->cfg, &mine);
            if (memcmp(&s, &mine, sizeof(s)) || np != (uint32_t)ag->m.np) {
                char what[160];
                shape_diff(&s, &mine, what, sizeof(what));
                snprintf(err, errlen, "%s: agent %d has another shape than this configuration: %s", path, k, what);
                goto out;
            }
            size_t pn = version == 1 ? (size_t)ag->m.pnp * 4u : (size_t)ag->m.qbytes;
            size_t need = pn + (size_t)np * 12u + 8;
            if (off + need > (size_t)size - 8) { snprintf(err, errlen, "%s: truncated", path); goto out; }
            if (pass == 1) {
                float *w1 = NULL;
                if (version == 1 && !(w1 = malloc((size_t)np * 4u))) {
                    snprintf(err, errlen, "out of memory");
                    goto out;
                }
                tlock(ag);
                lock(ag);
                if (version == 1) {
                    float *wt = (float *)(buf + off);   /* malloc'd: aligned for floats; off is a multiple of 4 */
                    hbl_mlp_untranspose(&ag->m, wt, w1);
                    hbl_mlp_quantize(&ag->m, w1, ag->scale, ag->inmax, ag->q);
                    if (ag->ref) memcpy(ag->ref, wt, pn);
                    free(w1);
                } else {
                    memcpy(ag->q, buf + off, pn);
                }
                ag->ref_valid = ag->ref && version == 1;   /* a version 2 file holds no FP32 inference copy */
                memcpy(ag->w_train, buf + off + pn, np * 4u);
                memcpy(ag->m1, buf + off + pn + np * 4u, np * 4u);
                memcpy(ag->m2, buf + off + pn + np * 8u, np * 4u);
                memcpy(&ag->adam_t, buf + off + pn + np * 12u, 8);
                hbl_ag_cache_invalidate(ag);   /* its decisions were of the old weights */
                ag->loaded = 1;
                unlock(ag);
                tunlock(ag);
            }
            off += need;
        }
        if (off != (size_t)size - 8) { snprintf(err, errlen, "%s: trailing data", path); goto out; }
    }
    rc = 0;
out:
    free(buf);
    return rc;
}
