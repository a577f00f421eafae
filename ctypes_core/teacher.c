/* Demonstrations from a realizable teacher: where a non-learning policy keeps the pages (teacher.h). */
#include "teacher.h"

/* The non-learning policies scripts/validate_agents.py compares on the validation sets, in its order. */
static const char *const teachers[] = {"lru", "cde", "smq", "nhit", "seqcutoff", "arc", "lirs", "s3fifo", "wtinylfu"};

const char *hbl_teacher_name(int k)
{
    return k >= 1 && k <= (int)(sizeof(teachers) / sizeof(teachers[0])) ? teachers[k - 1] : NULL;
}

/* 1 when the teacher's fastest device holds the page of slot x, 0 when another device does,
 * -1 when the teacher has not placed it. */
static int held_fast(const struct hbl_sim *s, uint32_t x)
{
    const struct hbl_pagetable *tp = &s->teacher->pt;
    uint32_t t = hbl_pt_find(tp, s->pt.page[x]);
    if (t == HBL_NONE || tp->dev[t] < 0) return -1;
    return tp->dev[t] == 0;
}

int hbl_teacher_place_label(const struct hbl_sim *s, const uint32_t *slots, int n)
{
    if (!s->teacher || n <= 0) return HBL_NO_LABEL;
    int held = 0;
    for (int i = 0; i < n; i++) {
        int h = held_fast(s, slots[i]);
        if (h < 0) return HBL_NO_LABEL;
        held += h;
    }
    return 2 * held >= n ? 0 : hbl_slowest(s);
}

int hbl_teacher_move_label(const struct hbl_sim *s, uint32_t x)
{
    int cur = s->pt.dev[x];
    if (!s->teacher || cur < 0) return HBL_NO_LABEL;
    int h = held_fast(s, x);
    if (h < 0) return HBL_NO_LABEL;
    return h ? 0 : cur == 0 ? 1 : cur;
}
