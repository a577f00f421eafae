/* A policy written in Python (hbl/sim/plugin.py): every decision is a call back
 * into the interpreter, so it is slow, but nothing in C needs to change. */
#include <stdio.h>
#include "../hbl_internal.h"

static int init(struct hbl_sim *s, void **st, const struct hbl_params *p, char *err, int errlen)
{
    (void)st; (void)p;
    if (!s->plugin) {   /* every decision would call into a class that is not there */
        snprintf(err, errlen, "needs a plugin class: --policy python:FILE.py:CLASS");
        return -1;
    }
    return 0;
}

static void place(void *st, struct hbl_sim *s, const struct hbl_request *r,
                  const uint32_t *slots, int n, int8_t *targets)
{
    (void)st;
    hbl_py_place(s->plugin, r, slots, n, targets);
}

static int migrate(void *st, struct hbl_sim *s, uint32_t *slots, int8_t *targets, int max)
{
    (void)st;
    return hbl_py_migrate(s->plugin, slots, targets, max);
}

const struct hbl_policy_ops hbl_policy_python = {
    .name = "python",
    .doc = "a policy written as a Python class (hbl.plugin.Policy); slow path for experiments",
    .init = init,
    .place = place,
    .migrate = migrate,
};
