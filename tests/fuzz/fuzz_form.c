/*
 * libFuzzer target: a form body's _method field (al_form_method_check).
 * The first byte chooses the Content-Type (none, urlencoded, multipart,
 * text/plain), the rest is the body, in a buffer of exactly its length.
 * Invariants: no crash and nothing read past the length; a refusal
 * always says why; text/plain is never refused; and a urlencoded or
 * untyped body with "&_method=x" (or "&%5Fmethod=x") appended, or a
 * multipart body with "; name=\"_method\"" appended, always is.
 */

#include <stdlib.h>
#include <string.h>

#include "airlock.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_check(const char *ctype, const uint8_t *body, size_t len,
    const char *tail);


static const char *const  fuzz_types[] = {
    NULL,
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=b",
    "text/plain"
};


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char  *ctype;

    if (size == 0) {
        return 0;
    }

    ctype = fuzz_types[data[0] & 3];
    data++;
    size--;

    if (fuzz_check(ctype, data, size, NULL) != 0 && (data[-1] & 3) == 3) {
        abort();
    }

    switch (data[-1] & 3) {

    case 0:
    case 1:
        if (fuzz_check(ctype, data, size, "&_method=x") == 0
            || fuzz_check(ctype, data, size, "&%5Fmethod=x") == 0)
        {
            abort();
        }
        break;

    case 2:
        if (fuzz_check(ctype, data, size, "; name=\"_method\"") == 0) {
            abort();
        }
        break;

    default:
        break;
    }

    return 0;
}


/* the check on body + tail, in a buffer of exactly that length */

static int
fuzz_check(const char *ctype, const uint8_t *body, size_t len,
    const char *tail)
{
    int             rc;
    char            why[AL_DETAIL_MAX];
    size_t          tlen;
    unsigned char  *b;

    tlen = (tail != NULL) ? strlen(tail) : 0;

    b = malloc(len + tlen ? len + tlen : 1);
    if (b == NULL) {
        return 0;
    }

    memcpy(b, body, len);
    memcpy(b + len, tail, tlen);

    why[0] = '\0';
    rc = al_form_method_check(ctype, ctype ? strlen(ctype) : 0, b,
                              len + tlen, why, sizeof(why));

    if (rc != 0 && why[0] == '\0') {
        abort();
    }

    free(b);

    return rc;
}
