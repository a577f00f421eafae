/* Policy parameters: a short list of named numbers, checked against the names
 * each policy declares so a typo is an error rather than a silent default. */
#include <stdio.h>
#include <string.h>
#include "hbl_internal.h"

/* Set only while hbl_policy_defaults() builds a policy: hbl_param() then notes the
 * default each declared parameter falls back to, so defaults are written once, in init(). */
static _Thread_local struct param_recorder {
    const struct hbl_param_doc *names;
    double *values;
    uint8_t *known;
    int max;
} *recorder;

void hbl_params_record(const struct hbl_param_doc *names, double *values, uint8_t *known, int max)
{
    static _Thread_local struct param_recorder r;
    r = (struct param_recorder){names, values, known, max};
    recorder = names ? &r : NULL;
}

/* The last read counts: a policy may read a parameter again to change a shared
 * default (harmonia's penalty, over the placement agent's). */
static void record_default(const char *key, double dflt)
{
    for (int j = 0; recorder && j < recorder->max && recorder->names[j].name; j++)
        if (!strcmp(recorder->names[j].name, key)) {
            recorder->values[j] = dflt;
            recorder->known[j] = 1;
        }
}

double hbl_param(const struct hbl_params *p, const char *key, double dflt)
{
    record_default(key, dflt);
    if (!p) return dflt;
    for (int i = 0; i < p->n && i < 32; i++)
        if (!strcmp(p->keys[i], key)) return p->values[i];
    return dflt;
}

#define PARAM_MAX 2147483647

int hbl_params_check(const struct hbl_params *p, const struct hbl_param_doc *known, char *err, int errlen)
{
    if (!p) return 0;
    for (int i = 0; i < p->n && i < 32; i++) {
        const struct hbl_param_doc *found = NULL;
        for (const struct hbl_param_doc *k = known; k && k->name; k++)
            if (!strcmp(k->name, p->keys[i])) { found = k; break; }
        if (!found) {
            char list[256] = "";
            size_t need = 0;
            int count = 0;
            for (const struct hbl_param_doc *k = known; k && k->name; k++, count++) {
                need += strlen(k->name) + (count ? 2 : 0);
                strncat(list, list[0] ? ", " : "", sizeof(list) - strlen(list) - 1);
                strncat(list, k->name, sizeof(list) - strlen(list) - 1);
            }
            if (need >= sizeof(list))   /* a list that does not fit is not cut in a name: it is pointed to */
                snprintf(err, errlen, "unknown parameter '%s' (this policy takes %d parameters: "
                         "`hbl policies` lists them with their meaning)", p->keys[i], count);
            else
                snprintf(err, errlen, "unknown parameter '%s' (this policy takes: %s)",
                         p->keys[i], list[0] ? list : "none");
            return -1;
        }
        /* Policies cast many parameters to int: a value past int32 or not finite would be
         * undefined there.  The exponent bits are tested because -ffast-math drops isfinite(). */
        uint64_t bits;
        memcpy(&bits, &p->values[i], sizeof(bits));
        if ((bits >> 52 & 0x7ff) == 0x7ff || p->values[i] > PARAM_MAX || p->values[i] < -PARAM_MAX) {
            snprintf(err, errlen, "parameter '%s' must be a finite number within +-%d", p->keys[i], PARAM_MAX);
            return -1;
        }
        if (found->whole && p->values[i] != (double)(int64_t)p->values[i]) {   /* within +-2^31: exact */
            snprintf(err, errlen, "parameter '%s' must be a whole number (got %g)", p->keys[i], p->values[i]);
            return -1;
        }
    }
    return 0;
}
