/*
 * Form bodies: a field an upstream reads as the request's method.
 *
 * Rack's MethodOverride (Rails, Sinatra), Symfony and Laravel, Express's
 * method-override reading req.body and ASP.NET's HttpMethodOverride with a
 * FormFieldName take a POST whose form has a field "_method" for the
 * method it names: a POST the route allowed would reach the application
 * as a DELETE or a PUT.  The modules refuse the override headers; this is
 * the body's half.  A body an upstream may read as a form (Content-Type
 * application/x-www-form-urlencoded, any multipart/ type, or none at all:
 * Rack reads a POST without one as a form) is refused when one of its
 * field names, as any of those parsers reads it, is _method:
 *
 *   - percent-decoded ("%5Fmethod"), with '+' a space, and in a quoted
 *     multipart name with backslash escapes undone;
 *   - leading spaces and brackets skipped (PHP's " _method", Rack's
 *     "[]_method"), '.' and ' ' read as '_' (PHP: ".method");
 *   - ended by '[', ']', a space or a NUL (PHP's and Rack's "_method[]",
 *     PHP's "_method%00x");
 *   - in any case (ASP.NET reads form fields without case).
 *
 * A urlencoded body is split on '&' and ';'.  A multipart body is not cut
 * on its boundary, which parsers find in different ways: every "name"
 * parameter in it (name="...", name=token, name*=utf-8''...) counts,
 * wherever it is, a part's contents included; a name in RFC 2231
 * sections (name*0=...) is refused as such.  The body is the one buffer
 * already read for the route, scanned once.
 */

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "airlock.h"


#define AL_FORM_FIELD      "_method"
#define AL_FORM_FIELD_LEN  (sizeof(AL_FORM_FIELD) - 1)

#define AL_FORM_URLENCODED "application/x-www-form-urlencoded"
#define AL_FORM_MULTIPART  "multipart/"

/* how a name is written */
#define AL_FORM_PLUS       1            /* '+' is a space */
#define AL_FORM_QUOTED     2            /* backslash escapes */
#define AL_FORM_SECTION    4            /* name*0=: no value read */


typedef enum {
    AL_FORM_NONE = 0,
    AL_FORM_URL,
    AL_FORM_PARTS
} al_form_kind_t;


static al_form_kind_t al_form_kind(const char *ctype, size_t len);
static int al_form_urlencoded(const unsigned char *p, size_t len);
static int al_form_multipart(const unsigned char *p, size_t len,
    const char **why);
static void al_form_param(const unsigned char *p, size_t len, size_t i,
    const unsigned char **v, size_t *vlen, unsigned *flags);
static int al_form_is_method(const unsigned char *p, size_t len,
    unsigned flags);
static int al_form_hex(unsigned c);
static int al_form_alnum(unsigned c);


int
al_form_method_check(const char *ctype, size_t ctype_len,
    const unsigned char *body, size_t len, char *why, size_t whylen)
{
    const char      *bad;
    al_form_kind_t   kind;

    if (len == 0) {
        return 0;
    }

    kind = al_form_kind(ctype, ctype_len);

    bad = NULL;

    if (kind == AL_FORM_URL) {
        if (al_form_urlencoded(body, len)) {
            bad = "form field \"" AL_FORM_FIELD "\" would change the method "
                  "upstream";
        }

    } else if (kind == AL_FORM_PARTS) {
        (void) al_form_multipart(body, len, &bad);
    }

    if (bad == NULL) {
        return 0;
    }

    (void) snprintf(why, whylen, "%s", bad);

    return -1;
}


/*
 * The media type, up to ';', ',', a space or a tab, as PHP and Rack cut
 * it.  No Content-Type, or one without a media type, is a form to Rack.
 */

static al_form_kind_t
al_form_kind(const char *ctype, size_t len)
{
    size_t  i, n;

    if (ctype == NULL) {
        return AL_FORM_URL;
    }

    for (i = 0; i < len && (ctype[i] == ' ' || ctype[i] == '\t'); i++) {
        /* void */
    }

    for (n = i; n < len && ctype[n] != ';' && ctype[n] != ','
                && ctype[n] != ' ' && ctype[n] != '\t'; n++)
    {
        /* void */
    }

    n -= i;

    if (n == 0) {
        return AL_FORM_URL;
    }

    if (n == sizeof(AL_FORM_URLENCODED) - 1
        && strncasecmp(ctype + i, AL_FORM_URLENCODED, n) == 0)
    {
        return AL_FORM_URL;
    }

    if (n >= sizeof(AL_FORM_MULTIPART) - 1
        && strncasecmp(ctype + i, AL_FORM_MULTIPART,
                       sizeof(AL_FORM_MULTIPART) - 1)
           == 0)
    {
        return AL_FORM_PARTS;
    }

    return AL_FORM_NONE;
}


/* 1 when a field of "a=1&b=2;c" is named _method */

static int
al_form_urlencoded(const unsigned char *p, size_t len)
{
    size_t  i, start, name_end;

    start = 0;
    name_end = (size_t) -1;

    for (i = 0; i <= len; i++) {

        if (i < len && p[i] != '&' && p[i] != ';') {
            if (p[i] == '=' && name_end == (size_t) -1) {
                name_end = i;
            }

            continue;
        }

        if (name_end == (size_t) -1) {
            name_end = i;
        }

        if (al_form_is_method(p + start, name_end - start, AL_FORM_PLUS)) {
            return 1;
        }

        start = i + 1;
        name_end = (size_t) -1;
    }

    return 0;
}


/*
 * 1, with *why, when a "name" parameter anywhere in the body is _method
 * or is given in RFC 2231 sections.  "name" counts after a byte that is
 * not a letter or a digit, so "filename" does not.  The scan goes on
 * right after each "name", not after its value: a quoted value that
 * another parser ends elsewhere cannot hide a name inside it.
 */

static int
al_form_multipart(const unsigned char *p, size_t len, const char **why)
{
    size_t                i, vlen;
    unsigned              flags;
    const unsigned char  *v;

    for (i = 0; len - i >= 4; i++) {

        if ((p[i] | 0x20) != 'n'
            || strncasecmp((const char *) p + i, "name", 4) != 0
            || (i > 0 && al_form_alnum(p[i - 1])))
        {
            continue;
        }

        al_form_param(p, len, i + 4, &v, &vlen, &flags);

        if (flags & AL_FORM_SECTION) {
            *why = "multipart name in RFC 2231 sections (name*0=...)";
            return 1;
        }

        if (v != NULL && al_form_is_method(v, vlen, flags)) {
            *why = "multipart field \"" AL_FORM_FIELD "\" would change the "
                   "method upstream";
            return 1;
        }
    }

    return 0;
}


/*
 * The value of the parameter whose name ended before p[i]: "*"? spaces
 * "=" spaces, then a quoted string or a token.  *v is NULL when there is
 * no value (*flags AL_FORM_SECTION: name*0=).  An extended value
 * (name*=utf-8'en'%5Fmethod) is given from after its charset and
 * language.
 */

static void
al_form_param(const unsigned char *p, size_t len, size_t i,
    const unsigned char **v, size_t *vlen, unsigned *flags)
{
    size_t  start, k;
    int     ext;

    *v = NULL;
    *vlen = 0;
    *flags = 0;

    ext = 0;

    if (i < len && p[i] == '*') {
        i++;

        if (i < len && p[i] >= '0' && p[i] <= '9') {
            *flags = AL_FORM_SECTION;
            return;
        }

        ext = 1;
    }

    while (i < len && (p[i] == ' ' || p[i] == '\t')) {
        i++;
    }

    if (i == len || p[i] != '=') {
        return;
    }

    i++;

    while (i < len && (p[i] == ' ' || p[i] == '\t')) {
        i++;
    }

    if (i < len && p[i] == '"') {
        start = ++i;

        while (i < len && p[i] != '"' && p[i] != '\r' && p[i] != '\n') {
            if (p[i] == '\\' && len - i > 1) {
                i++;
            }

            i++;
        }

        *flags = AL_FORM_QUOTED;

    } else {
        start = i;

        while (i < len && p[i] != ';' && p[i] != ',' && p[i] != ' '
               && p[i] != '\t' && p[i] != '\r' && p[i] != '\n'
               && p[i] != '"')
        {
            i++;
        }
    }

    *v = p + start;
    *vlen = i - start;

    if (ext) {
        /* charset'language'value */

        for (k = 0; k < *vlen && (*v)[k] != '\''; k++) {
            /* void */
        }

        if (k < *vlen) {
            for (k++; k < *vlen && (*v)[k] != '\''; k++) {
                /* void */
            }

            if (k < *vlen) {
                *v += k + 1;
                *vlen -= k + 1;
            }
        }
    }
}


/* 1 when a field name, read as the parsers in the comment above read it,
   is _method */

static int
al_form_is_method(const unsigned char *p, size_t len, unsigned flags)
{
    int       hi, lo, lead;
    size_t    i, n;
    unsigned  c;

    n = 0;
    lead = 1;

    for (i = 0; i < len; i++) {
        c = p[i];

        if ((flags & AL_FORM_QUOTED) && c == '\\' && len - i > 1) {
            c = p[++i];

        } else if (c == '%' && len - i > 2
                   && (hi = al_form_hex(p[i + 1])) >= 0
                   && (lo = al_form_hex(p[i + 2])) >= 0)
        {
            c = (unsigned) (hi << 4 | lo);
            i += 2;

        } else if (c == '+' && (flags & AL_FORM_PLUS)) {
            c = ' ';
        }

        if (lead) {
            if (c == ' ' || c == '\t' || c == '[' || c == ']') {
                continue;
            }

            lead = 0;
        }

        if (n == AL_FORM_FIELD_LEN) {
            return c == '[' || c == ']' || c == ' ' || c == '\t'
                   || c == '\0';
        }

        if (c == '.' || c == ' ') {
            c = '_';

        } else if (c >= 'A' && c <= 'Z') {
            c |= 0x20;
        }

        if (c != (unsigned char) AL_FORM_FIELD[n]) {
            return 0;
        }

        n++;
    }

    return n == AL_FORM_FIELD_LEN;
}


static int
al_form_hex(unsigned c)
{
    if (c >= '0' && c <= '9') {
        return (int) (c - '0');
    }

    c |= 0x20;

    if (c >= 'a' && c <= 'f') {
        return (int) (c - 'a' + 10);
    }

    return -1;
}


static int
al_form_alnum(unsigned c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}
