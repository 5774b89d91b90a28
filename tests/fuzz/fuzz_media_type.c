/*
 * libFuzzer target: the Content-Type checks of route bodies and the LLM
 * gateway (al_media_type_check, al_media_charset_check).  The input is
 * the header value, in a buffer of exactly its length.  Invariants: no
 * crash and nothing read past the length; what the utf8 check accepts
 * the plain one accepts; a refusal always says why; an accepted value
 * has no charset parameter but utf-8 or utf8 (a second, naive reading of
 * unquoted values finds none).  al_media_charset_check (no media type
 * to want: a body read as JSON whatever its type), the same, and what
 * the utf8 check accepts it accepts.
 */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "airlock.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_other_charset(const char *s, size_t len);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int    plain, utf8, any;
    char  *s, why[128];

    s = malloc(size ? size : 1);
    if (s == NULL) {
        return 0;
    }

    memcpy(s, data, size);

    why[0] = '\0';
    plain = al_media_type_check(s, size, "application/json", 16, 0, why,
                                sizeof(why));
    if (plain != 0 && why[0] == '\0') {
        abort();
    }

    why[0] = '\0';
    utf8 = al_media_type_check(s, size, "application/json", 16, 1, why,
                               sizeof(why));
    if (utf8 != 0 && why[0] == '\0') {
        abort();
    }

    if (utf8 == 0 && (plain != 0 || fuzz_other_charset(s, size))) {
        abort();
    }

    why[0] = '\0';
    any = al_media_charset_check(s, size, why, sizeof(why));
    if (any != 0 && why[0] == '\0') {
        abort();
    }

    if ((any == 0 && fuzz_other_charset(s, size)) || (utf8 == 0 && any != 0))
    {
        abort();
    }

    free(s);

    return 0;
}


/*
 * 1 when some ";" is followed, after blanks, by "charset=" and a value
 * other than utf-8 up to the end, a blank or ";".  It does not know
 * quoting, which could hide a ";" inside a value, so a value with quotes
 * is left to the unit tests.
 */

static int
fuzz_other_charset(const char *s, size_t len)
{
    size_t  i, n;

    if (memchr(s, '"', len) != NULL) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        if (s[i] != ';') {
            continue;
        }

        n = i + 1;

        while (n < len && (s[n] == ' ' || s[n] == '\t')) {
            n++;
        }

        if (len - n < 8 || strncasecmp(s + n, "charset=", 8) != 0) {
            continue;
        }

        n += 8;

        /* utf-8, or utf8, its other name */

        if (len - n >= 5 && strncasecmp(s + n, "utf-8", 5) == 0) {
            n += 5;

        } else if (len - n >= 4 && strncasecmp(s + n, "utf8", 4) == 0) {
            n += 4;

        } else {
            return 1;
        }

        if (n < len && s[n] != ' ' && s[n] != '\t' && s[n] != ';') {
            return 1;
        }
    }

    return 0;
}
