/*
 * Demonstrations from a realizable teacher: labels for the learning agents' decisions from a
 * non-learning policy that acts on the past only, run beside them (results/pretrain/teacher.txt).
 *
 * The oracle's labels (demos.h) depend on each page's next access, which no feature of the agents
 * can predict on an unseen workload.  A teacher's can be imitated: the simulator runs the teacher
 * in a second simulation of the same HSS (hbl_sim.teacher, sim.c), fed every request just before
 * the agents' simulation serves it, and the labels read where the teacher keeps the pages:
 *   a write is labelled fast (device 0) when the teacher's fastest device holds at least half of
 *   its pages after serving it, else the slowest device (the oracle label's two actions);
 *   a migration candidate is labelled promote (device 0) when the teacher's fastest device holds
 *   it, else one device down from the fastest, or stay below it (hbl_demos_move_label's mapping).
 * The labels take the place of the oracle's wherever the policy asks for a teacher (harmonia's
 * demo_teacher); the loss that teaches them is demos.h's.  A page the teacher has not seen has
 * no label.
 */
#ifndef HBL_TEACHER_H
#define HBL_TEACHER_H
#include "demos.h"

/* The teachers by number (demo_teacher=K, from 1): a policy name, or NULL past the table. */
const char *hbl_teacher_name(int k);
/* The label of placing the current request's n pages (slots), or HBL_NO_LABEL (no teacher). */
int hbl_teacher_place_label(const struct hbl_sim *s, const uint32_t *slots, int n);
/* The label of migration candidate `slot` now, or HBL_NO_LABEL. */
int hbl_teacher_move_label(const struct hbl_sim *s, uint32_t slot);

#endif
