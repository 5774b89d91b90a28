/*
 * Anchored regular expressions for path params, query values and JSON
 * strings.  Every pattern must match the whole value (PCRE2_ANCHORED |
 * PCRE2_ENDANCHORED), whatever the operator wrote, and every match runs
 * under match and depth limits so a pattern cannot be made to spin.
 *
 * A value with a character that NFKC or Windows' best fit turns into
 * '/', '\', '%', dots or a space must also match as such an upstream
 * reads it (al_fold_like()): '^[^/]+$' refuses "a\u2215b", which a
 * Windows upstream opens as "a/b".
 *
 * A path param or query value (al_regex_match_name()) must also match as
 * Windows reads it as a file name: without an NTFS stream suffix "::$"
 * ("web.config::$DATA" is web.config's own data) and with the trailing
 * dots and spaces of each component trimmed ("web.config. "), so that a
 * pattern refusing a name refuses what opens it.
 */

#define PCRE2_CODE_UNIT_WIDTH 8

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pcre2.h>

#include "airlock.h"


#define AL_REGEX_MATCH_LIMIT   100000
#define AL_REGEX_DEPTH_LIMIT   1000
#define AL_REGEX_FOLD_STACK    512


static int al_regex_match_folded(const al_regex_t *re, const char *s,
    size_t len);
static size_t al_regex_windows(const char *s, size_t len, char *out,
    size_t *outlen);


struct al_regex_s {
    pcre2_code           *code;
    pcre2_match_context  *mctx;
    pcre2_match_data     *md;              /* reused: callers are single
                                               threaded, like a worker */
    int                   jit;             /* JIT code was made */
};


al_regex_t *
al_regex_compile(const char *pattern, size_t len, char *err, size_t errsize)
{
    int          rc;
    PCRE2_SIZE   off;
    al_regex_t  *re;
    PCRE2_UCHAR  msg[256];

    re = calloc(1, sizeof(al_regex_t));
    if (re == NULL) {
        snprintf(err, errsize, "out of memory");
        return NULL;
    }

    re->code = pcre2_compile((PCRE2_SPTR) pattern, len,
                             PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_UTF
                             | PCRE2_NEVER_BACKSLASH_C,
                             &rc, &off, NULL);
    if (re->code == NULL) {
        pcre2_get_error_message(rc, msg, sizeof(msg));
        snprintf(err, errsize, "invalid regular expression at offset %zu: "
                 "%s", (size_t) off, (char *) msg);
        free(re);
        return NULL;
    }

    re->jit = (pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0);

    re->mctx = pcre2_match_context_create(NULL);
    re->md = pcre2_match_data_create(1, NULL);
    if (re->mctx == NULL || re->md == NULL) {
        al_regex_free(re);
        snprintf(err, errsize, "out of memory");
        return NULL;
    }

    pcre2_set_match_limit(re->mctx, AL_REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(re->mctx, AL_REGEX_DEPTH_LIMIT);

    return re;
}


/* the memory of the compiled pattern and its JIT code, in bytes */

size_t
al_regex_size(const al_regex_t *re)
{
    size_t  size, jit;

    size = 0;
    jit = 0;

    (void) pcre2_pattern_info(re->code, PCRE2_INFO_SIZE, &size);

    if (re->jit) {
        (void) pcre2_pattern_info(re->code, PCRE2_INFO_JITSIZE, &jit);
    }

    return size + jit;
}


/* 1 on a match; 0 on no match and on any error (limits, bad UTF-8) */

int
al_regex_match(const al_regex_t *re, const char *s, size_t len)
{
    int     rc;
    size_t  i;

    /* pcre2_match() runs the JIT code when there is some, after checking
       the subject is valid UTF-8; pcre2_jit_match() skips that check, so
       it is called directly only for ASCII, which is always valid */

    for (i = 0; i < len; i++) {
        if ((unsigned char) s[i] >= 0x80) {
            break;
        }
    }

    if (re->jit && i == len) {
        rc = pcre2_jit_match(re->code, (PCRE2_SPTR) s, len, 0, 0, re->md,
                             re->mctx);
    } else {
        rc = pcre2_match(re->code, (PCRE2_SPTR) s, len, 0, 0, re->md,
                         re->mctx);
    }

    if (rc < 0 || i == len) {
        return rc >= 0;
    }

    return al_regex_match_folded(re, s, len);
}


/* s matched; 1 when it also matches as an upstream that normalizes reads
   it, or has nothing such an upstream reads otherwise */

static int
al_regex_match_folded(const al_regex_t *re, const char *s, size_t len)
{
    int     rc;
    char   *buf, stack[AL_REGEX_FOLD_STACK];
    size_t  n;

    if (al_fold_like(s, len, NULL, NULL) == 0) {
        return 1;
    }

    buf = (len <= sizeof(stack)) ? stack : malloc(len);
    if (buf == NULL) {
        return 0;
    }

    (void) al_fold_like(s, len, buf, &n);

    rc = pcre2_match(re->code, (PCRE2_SPTR) buf, n, 0, 0, re->md, re->mctx);

    if (buf != stack) {
        free(buf);
    }

    return rc >= 0;
}


/*
 * al_regex_match(), and s must also match as Windows reads it as a file
 * name (al_regex_windows_len()), after the folding al_regex_match() does.
 */

int
al_regex_match_name(const al_regex_t *re, const char *s, size_t len)
{
    int     rc;
    char   *buf, stack[AL_REGEX_FOLD_STACK];
    size_t  n;

    if (!al_regex_match(re, s, len)) {
        return 0;
    }

    if (al_fold_like(s, len, NULL, NULL) == 0
        && al_regex_windows(s, len, NULL, NULL) == 0)
    {
        return 1;
    }

    buf = (len <= sizeof(stack)) ? stack : malloc(len);
    if (buf == NULL) {
        return 0;
    }

    /* both only ever shorten: the second runs in place */

    (void) al_fold_like(s, len, buf, &n);

    if (al_regex_windows(buf, n, buf, &n) == 0) {
        rc = 1;

    } else {
        rc = pcre2_match(re->code, (PCRE2_SPTR) buf, n, 0, 0, re->md,
                         re->mctx) >= 0;
    }

    if (buf != stack) {
        free(buf);
    }

    return rc;
}


/*
 * Writes s as Windows opens it as a file name to out (room for len bytes,
 * which may be s itself): in each component (between '/' and ''), an
 * NTFS stream suffix "::$..." ("::$DATA" names the file's own data) left
 * out, then the trailing dots and spaces Win32 drops, except in a
 * component of dots only ("..", which stays a parent).  With out NULL
 * only counts.  Returns the number of components changed, the length in
 * *outlen.  The look-alikes of those characters are ASCII here already
 * (al_fold_like()).
 */

static size_t
al_regex_windows(const char *s, size_t len, char *out, size_t *outlen)
{
    size_t  i, start, end, k, m, changed;

    changed = 0;
    m = 0;
    start = 0;

    for ( ;; ) {
        for (end = start; end < len && s[end] != '/' && s[end] != '\\';
             end++)
        {
            /* void */
        }

        k = end;

        for (i = start; i + 2 < end; i++) {
            if (s[i] == ':' && s[i + 1] == ':' && s[i + 2] == '$') {
                k = i;
                break;
            }
        }

        for (i = start; i < k && s[i] == '.'; i++) {
            /* void */
        }

        if (i < k) {
            while (k > start && (s[k - 1] == '.' || s[k - 1] == ' ')) {
                k--;
            }
        }

        changed += (k != end);

        if (out != NULL) {
            memmove(out + m, s + start, k - start);
            m += k - start;

            if (end < len) {
                out[m++] = s[end];
            }
        }

        if (end == len) {
            break;
        }

        start = end + 1;
    }

    if (outlen != NULL) {
        *outlen = m;
    }

    return changed;
}


void
al_regex_free(al_regex_t *re)
{
    if (re == NULL) {
        return;
    }

    pcre2_match_data_free(re->md);
    pcre2_match_context_free(re->mctx);
    pcre2_code_free(re->code);
    free(re);
}
