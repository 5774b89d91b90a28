/*
 * libFuzzer target: the policy loader.  Any bytes either compile into a
 * policy or give an error with a message; never a crash, a leak or a hang.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char          msg[1024];
    al_error_t    err;
    al_policy_t  *p;

    if (size > 65536) {
        return 0;
    }

    memset(&err, 0, sizeof(err));

    p = al_policy_parse("fuzz.yaml", (const char *) data, size, NULL, &err);

    if (p == NULL) {
        if (err.msg[0] == '\0') {
            abort();
        }
        al_error_format(&err, msg, sizeof(msg));
        return 0;
    }

    al_policy_free(p);

    return 0;
}
