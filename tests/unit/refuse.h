/*
 * A policy refused at the place marked with a backtick in its text:
 * shared by the unit tests that check policy errors.
 */

#ifndef AL_TEST_REFUSE_H
#define AL_TEST_REFUSE_H

#include <stdio.h>
#include <string.h>

#include "airlock.h"
#include "tap.h"


/*
 * Four assertions: refused, the line and the column of the backtick, and
 * the message.
 */

static void __attribute__((unused))
refuse(const char *name, const char *yaml, const char *want)
{
    char          buf[8192], label[256];
    size_t        i, n;
    unsigned      line, col, l, c;
    al_error_t    err;
    al_policy_t  *p;

    line = 0;
    col = 0;
    l = 1;
    c = 1;
    n = 0;

    for (i = 0; yaml[i] != '\0' && n < sizeof(buf) - 1; i++) {
        if (yaml[i] == '`') {
            line = l;
            col = c;
            continue;
        }

        buf[n++] = yaml[i];

        if (yaml[i] == '\n') {
            l++;
            c = 1;

        } else {
            c++;
        }
    }

    buf[n] = '\0';

    memset(&err, 0, sizeof(err));
    p = al_policy_parse("policy.yaml", buf, n, NULL, &err);

    snprintf(label, sizeof(label), "%s: refused", name);
    if (!tap_ok(p == NULL, label)) {
        al_policy_free(p);
    }

    snprintf(label, sizeof(label), "%s: line", name);
    tap_is_int(err.line, line, label);

    snprintf(label, sizeof(label), "%s: column", name);
    tap_is_int(err.column, col, label);

    snprintf(label, sizeof(label), "%s: says \"%s\"", name, want);
    if (!tap_ok(strstr(err.msg, want) != NULL, label)) {
        tap_diag("message: ", err.msg);
    }
}


#endif /* AL_TEST_REFUSE_H */
