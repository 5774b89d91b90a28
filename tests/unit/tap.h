/*
 * A small TAP producer for the C unit tests; prove reads what it prints.
 * Header-only so each test stays one file.
 */

#ifndef AL_TAP_H
#define AL_TAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int  tap_n __attribute__((unused));
static int  tap_failed __attribute__((unused));


static inline void
tap_plan(int n)
{
    printf("1..%d\n", n);
}


static inline int
tap_ok(int cond, const char *name)
{
    tap_n++;
    printf("%sok %d - %s\n", cond ? "" : "not ", tap_n, name);
    if (!cond) {
        tap_failed++;
    }
    fflush(stdout);
    return cond;
}


static inline void
tap_diag(const char *label, const char *value)
{
    printf("# %s%s\n", label, value ? value : "(null)");
}


static inline int
tap_is_str(const char *got, const char *want, const char *name)
{
    int  ok;

    ok = (got != NULL && want != NULL && strcmp(got, want) == 0)
         || (got == NULL && want == NULL);
    if (!tap_ok(ok, name)) {
        printf("# got:      '%s'\n", got ? got : "(null)");
        printf("# expected: '%s'\n", want ? want : "(null)");
    }
    return ok;
}


static inline int
tap_is_int(long got, long want, const char *name)
{
    int  ok;

    ok = tap_ok(got == want, name);
    if (!ok) {
        printf("# got: %ld, expected: %ld\n", got, want);
    }
    return ok;
}


/* a test that cannot run here: counted as passed, with the reason */

static inline void
tap_skip(const char *why)
{
    tap_n++;
    printf("ok %d # SKIP %s\n", tap_n, why);
    fflush(stdout);
}


static inline int
tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif /* AL_TAP_H */
