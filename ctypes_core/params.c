/* Policy parameters: a short list of named numbers, checked against the names
 * each policy declares so a typo is an error rather than a silent default. */
#include <stdio.h>
#include <string.h>
#include "hbl_internal.h"

double hbl_param(const struct hbl_params *p, const char *key, double dflt)
{
    if (!p) return dflt;
    for (int i = 0; i < p->n && i < 32; i++)
        if (!strcmp(p->keys[i], key)) return p->values[i];
    return dflt;
}

int hbl_params_check(const struct hbl_params *p, const char *const *known, char *err, int errlen)
{
    if (!p) return 0;
    for (int i = 0; i < p->n && i < 32; i++) {
        int ok = 0;
        for (const char *const *k = known; k && *k; k++)
            if (!strcmp(*k, p->keys[i])) { ok = 1; break; }
        if (!ok) {
            char list[256] = "";
            for (const char *const *k = known; k && *k; k++) {
                strncat(list, list[0] ? ", " : "", sizeof(list) - strlen(list) - 1);
                strncat(list, *k, sizeof(list) - strlen(list) - 1);
            }
            snprintf(err, errlen, "unknown parameter '%s' (this policy takes: %s)",
                     p->keys[i], list[0] ? list : "none");
            return -1;
        }
    }
    return 0;
}
