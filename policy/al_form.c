/*
 * Form bodies: a field an upstream reads as the request's method.
 *
 * Rack's MethodOverride (Rails, Sinatra), Symfony and Laravel, Express's
 * method-override reading req.body and ASP.NET's HttpMethodOverride with a
 * FormFieldName take a POST whose form has a field "_method" for the
 * method it names: a POST the route allowed would reach the application
 * as a DELETE or a PUT.  The modules refuse the override headers; this is
 * the body's half.  A body an upstream may read as a form (Content-Type
 * application/x-www-form-urlencoded or a type that begins with it, any
 * multipart/ type, or none at all: Rack reads a POST without one as a
 * form) is refused when one of its field names, as any of those parsers
 * reads it, is _method:
 *
 *   - percent-decoded ("%5Fmethod", and System.Web's "%u005Fmethod"),
 *     with '+' a space, and in a quoted multipart name with backslash
 *     escapes undone;
 *   - leading spaces and brackets skipped (PHP's " _method", Rack's
 *     "[]_method"), '.' and ' ' read as '_' (PHP: ".method");
 *   - ended by '[', ']', a space or a NUL (PHP's and Rack's "_method[]",
 *     PHP's "_method%00x");
 *   - in any case (ASP.NET reads form fields without case), a letter
 *     outside ASCII that folds to an ASCII one (the Kelvin sign, the
 *     long s: Go's strings.EqualFold) read as that one.
 *
 * ASP.NET MVC (System.Web.Mvc's GetHttpMethodOverride(), by which
 * [HttpDelete] and AcceptVerbs select an action) reads the method of a
 * POST from the header X-HTTP-Method-Override, then from the form field
 * of that name, in any case: a field of that name, read the same way, is
 * refused as _method is.
 *
 * A urlencoded body is split on '&' and ';'.  A multipart body is not cut
 * on its boundary, which parsers find in different ways: every "name"
 * parameter in it (name="...", name=token) counts, wherever it is, a
 * part's contents included.  A name this scan cannot read as the
 * upstream does is refused as such: in RFC 2231 form (name*=utf-8''...,
 * name*0=...), which parsers decode or ignore, or holding an RFC 2047
 * encoded word ("=?utf-8?B?X21ldGhvZA==?=", which ASP.NET's
 * ContentDispositionHeaderValue decodes).  The body is the one buffer
 * already read for the route, scanned once.
 *
 * The same readers merge a form's fields with the query and the route's
 * path params (PHP's $_REQUEST, Rails' and Laravel's params, ASP.NET
 * MVC's model binding, Spring's @ModelAttribute), the form's field read
 * over the query parameter of the same name, and for ASP.NET and Spring
 * over the path param: "file=../web.config" in the body would stand for
 * the "?file=a.txt" a pattern checked.  So al_form_check() refuses, read
 * the same way, a field named like a path param or like a query
 * parameter with a pattern.
 *
 * No other name is listed, so one that qs (Express's extended
 * body-parser) or express-fileupload reads as a path of keys is read for
 * a part "__proto__", or "constructor" then "prototype"
 * (al_form_path()): such a field sets an object's prototype upstream,
 * through which a value no check saw is read.
 *
 * All of that reads the body as ASCII, and so must the upstream: ASP.NET
 * Core decodes a form in the charset its Content-Type names, and
 * "_method=DELETE" in UTF-16 has no ASCII "_method" in it.  So a form's
 * Content-Type may name no charset but an ASCII-compatible one the
 * parsers know (al_form_charsets[]); any other, "charset*" and an
 * escaped quoted value are refused, wherever "charset" is in the header.
 * A byte order mark is a charset too: ASP.NET Core's FormReader decodes
 * by it (a StreamReader that detects one), so a form that begins with a
 * UTF-16 or UTF-32 one is refused, and one that begins with UTF-8's is
 * read without it, as that reader reads its first field.
 */

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "airlock.h"
#include "al_internal.h"


#define AL_FORM_FIELD      "_method"
#define AL_FORM_FIELD_LEN  (sizeof(AL_FORM_FIELD) - 1)

#define AL_FORM_URLENCODED "application/x-www-form-urlencoded"
#define AL_FORM_MULTIPART  "multipart/"
#define AL_FORM_MULTIPART_DATA  "multipart/form-data"

/* how a name is written */
#define AL_FORM_PLUS       1            /* '+' is a space */
#define AL_FORM_QUOTED     2            /* backslash escapes */
#define AL_FORM_RFC2231    4            /* name*= or name*0: no value read */
#define AL_FORM_ESCAPED    8            /* quoted, with a backslash */
#define AL_FORM_TAIL       16           /* the tail of the last token read */
#define AL_FORM_SINGLE     32           /* quoted in ' (PHP), not " */

/* the most bytes of a name read on past a line end (al_form_joined()) */
#define AL_FORM_JOIN_MAX   256

/* what al_form_char() reads for a "%uXXXX" outside ASCII that folds to
   no ASCII letter */
#define AL_FORM_WIDE       0x100

/* a byte some reader trims from a media type (al_form_kind()) */
#define al_form_blank(c)                                                      \
    ((unsigned char) (c) <= ' ' || (unsigned char) (c) >= 0x7f)


/* the names a field may not have besides _method; re NULL: unchecked */
typedef struct {
    const al_param_t  *params;
    size_t             nparams;
    const al_param_t  *query;
    size_t             nquery;
    unsigned           proto:1;         /* and no prototype key
                                           (al_form_path()) */
} al_form_names_t;


typedef enum {
    AL_FORM_NONE = 0,
    AL_FORM_URL,
    AL_FORM_PARTS
} al_form_kind_t;


static al_form_kind_t al_form_kind(const char *ctype, size_t len);
static int al_form_holds(const char *s, size_t len, const char *lit,
    size_t n);
static int al_form_charset(const char *ctype, size_t len);
static size_t al_form_bom(const unsigned char *p, size_t len);
static const char *al_form_urlencoded(const unsigned char *p, size_t len,
    const al_form_names_t *names);
static int al_form_multipart(const unsigned char *p, size_t len,
    const al_form_names_t *names, const char **why, const char **field);
static size_t al_form_find(const unsigned char *p, size_t len, size_t i,
    size_t *end, unsigned *cid);
static const char *al_form_content_id(const unsigned char *p, size_t len,
    size_t i, size_t max, const al_form_names_t *names);
static size_t al_form_eol(const unsigned char *p, size_t len, size_t i);
static void al_form_param(const unsigned char *p, size_t len, size_t i,
    unsigned single, const unsigned char **v, size_t *vlen, unsigned *flags,
    size_t *tail);
static const char *al_form_joined(const unsigned char *p, size_t len,
    const unsigned char *v, size_t vlen, unsigned flags, size_t max,
    const al_form_names_t *names);
static size_t al_form_longest(const al_form_names_t *names);
static unsigned al_form_char(const unsigned char *p, size_t len, size_t *i,
    unsigned flags);
static unsigned al_form_letter(const unsigned char *p, size_t len,
    size_t *i, unsigned flags);
static const char *al_form_field(const unsigned char *p, size_t len,
    unsigned flags, const al_form_names_t *names);
static const char *al_form_path(const unsigned char *p, size_t len,
    unsigned flags);
static int al_form_is_name(const unsigned char *p, size_t len, size_t i,
    unsigned flags, const char *name, size_t n);
static unsigned al_form_fold(unsigned c);
static int al_form_encoded_word(const unsigned char *p, size_t len,
    unsigned flags);
static int al_form_hex(unsigned c);
static int al_form_alnum(unsigned c);


static const char  al_form_method[] = AL_FORM_FIELD;
static const char  al_form_override[] = "X-HTTP-Method-Override";
static const char  al_form_proto[] = "__proto__";
static const char  al_form_ctor[] = "constructor";

/* a name of those two: the field is a method override */
#define al_form_overrides(f)                                                  \
    ((f) == al_form_method || (f) == al_form_override)


/*
 * The charsets in which the ASCII bytes of a form are those characters
 * and no other bytes make one: UTF-8, US-ASCII and ISO-8859-1 under the
 * names and aliases (IANA's, WHATWG's, glibc's) their readers accept.
 * windows-1252 and the other ASCII-compatible ones are left out: a form
 * in them is rare enough to be refused with the rest (UTF-16, UTF-32,
 * UTF-7, UCS-2, EBCDIC's cp037 and ibm500, ...), and a name a reader
 * does not know is no surer.
 */

static const char *const  al_form_charsets[] = {
    "utf-8", "utf8", "unicode-1-1-utf-8",
    "us-ascii", "ascii", "us", "ansi_x3.4-1968", "iso646-us", "ibm367",
    "cp367", "csascii",
    "iso-8859-1", "iso8859-1", "iso_8859-1", "iso88591", "latin1",
    "latin-1", "l1", "iso-ir-100", "ibm819", "cp819", "csisolatin1"
};


int
al_form_method_check(const char *ctype, size_t ctype_len,
    const unsigned char *body, size_t len, char *why, size_t whylen)
{
    return al_form_check(ctype, ctype_len, body, len, NULL, 0, NULL, 0, 0,
                         why, whylen);
}


int
al_form_check(const char *ctype, size_t ctype_len, const unsigned char *body,
    size_t len, const al_param_t *params, size_t nparams,
    const al_param_t *query, size_t nquery, unsigned query_checked,
    char *why, size_t whylen)
{
    size_t            bom;
    const char       *bad, *field;
    al_form_kind_t    kind;
    al_form_names_t   names;

    if (len == 0) {
        return 0;
    }

    names.params = params;
    names.nparams = nparams;
    names.query = query;
    names.nquery = nquery;
    names.proto = 1;
    field = NULL;

    kind = al_form_kind(ctype, ctype_len);

    bad = NULL;
    bom = (kind != AL_FORM_NONE) ? al_form_bom(body, len) : 0;

    if (kind != AL_FORM_NONE && ctype != NULL
        && !al_form_charset(ctype, ctype_len))
    {
        bad = "form body: the charset must be utf-8, us-ascii or iso-8859-1";

    } else if (kind == AL_FORM_NONE && ctype != NULL && query_checked
               && !al_form_charset(ctype, ctype_len))
    {
        /*
         * System.Web (ASP.NET on .NET Framework) decodes the query of a
         * request with a body in the charset of its Content-Type,
         * whatever the body is: under "text/plain; charset=ibm037" the
         * "KKaKKa" that '^[A-Za-z]+$' took is "../../" to it.  So on a
         * route that checks its query, any body is held to a form's
         * charsets, which read ASCII as ASCII.
         */

        bad = "the charset must be utf-8, us-ascii or iso-8859-1: the "
              "query is read in it";

    } else if (bom == (size_t) -1 && ctype != NULL) {
        bad = "form body: a UTF-16 or UTF-32 byte order mark would have "
              "it read in that charset";

    } else if (kind == AL_FORM_URL) {
        if (bom != (size_t) -1) {
            body += bom;
            len -= bom;
        }

        field = al_form_urlencoded(body, len, &names);

        if (field != NULL) {
            bad = "form field";
        }

    } else if (kind == AL_FORM_PARTS) {
        (void) al_form_multipart(body, len, &names, &bad, &field);
    }

    if (bad == NULL) {
        return 0;
    }

    if (field != NULL && al_form_overrides(field)) {
        (void) snprintf(why, whylen, "%s \"%s\" would change the method "
                        "upstream", bad, field);

    } else if (field == al_form_proto) {
        (void) snprintf(why, whylen, "%s with a \"__proto__\" key would set "
                        "an object's prototype upstream", bad);

    } else if (field == al_form_ctor) {
        (void) snprintf(why, whylen, "%s with a \"constructor\" key holding "
                        "\"prototype\" would set Object.prototype upstream",
                        bad);

    } else if (field != NULL) {
        (void) snprintf(why, whylen, "%s named like the checked param \"%s\" "
                        "would stand for it upstream", bad, field);

    } else {
        (void) snprintf(why, whylen, "%s", bad);
    }

    return -1;
}


int
al_form_charset_check(const char *ctype, size_t ctype_len)
{
    return al_form_charset(ctype, ctype_len) ? 0 : -1;
}


int
al_cookie_check(const al_route_t *route, const char *cookie, size_t len,
    char *why, size_t whylen)
{
    const char       *field;
    al_form_names_t   names;

    names.params = route->params;
    names.nparams = route->nparams;
    names.query = route->query_patterns;
    names.nquery = route->nquery_allow;
    names.proto = 0;

    /* "a=1; b=2" splits on ';' as a form does; no reader takes a method
       override from a cookie, or builds objects from its names */

    field = al_form_urlencoded((const unsigned char *) cookie, len, &names);

    if (field == NULL || al_form_overrides(field)) {
        return 0;
    }

    (void) snprintf(why, whylen, "cookie named like the checked param \"%s\" "
                    "would stand for it upstream", field);

    return -1;
}


/*
 * The media type, up to ';', ',' or a blank, as PHP and Rack cut it, the
 * blanks around it skipped.  A blank is what any reader trims from a
 * type: Rack 3's rstrip (NUL, \t, \n, \v, \f, \r, space), JavaScript's
 * trim() on a header Node reads as Latin-1 (0xA0 too), Go's TrimSpace
 * (UTF-8 U+0085, U+00A0, ...): so every control byte, the space and
 * every byte outside ASCII, none of which a media type has.  No
 * Content-Type, or one without a media type, is a form to Rack.  A type
 * that begins with application/x-www-form-urlencoded is one: Symfony's
 * Request::createFromGlobals() (Laravel's too) parses the body of a PUT,
 * PATCH or DELETE as a form when the header starts with that text.
 * Failing all that, a header that holds either type anywhere is one:
 * Fastify before 4.10.2 chose its body parser by a substring
 * (CVE-2022-41919), so "text/plain; x=application/x-www-form-urlencoded"
 * is a form to it.
 */

static al_form_kind_t
al_form_kind(const char *ctype, size_t len)
{
    size_t  i, n;

    if (ctype == NULL) {
        return AL_FORM_URL;
    }

    for (i = 0; i < len && al_form_blank(ctype[i]); i++) {
        /* void */
    }

    for (n = i; n < len && ctype[n] != ';' && ctype[n] != ','
                && !al_form_blank(ctype[n]); n++)
    {
        /* void */
    }

    n -= i;

    if (n == 0) {
        return AL_FORM_URL;
    }

    /* Symfony takes any type that starts with it, "...urlencodedx" */

    if (n >= sizeof(AL_FORM_URLENCODED) - 1
        && strncasecmp(ctype + i, AL_FORM_URLENCODED,
                       sizeof(AL_FORM_URLENCODED) - 1)
           == 0)
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

    /* Fastify before 4.10.2 takes a type that holds it anywhere */

    if (al_form_holds(ctype, len, AL_FORM_URLENCODED,
                      sizeof(AL_FORM_URLENCODED) - 1))
    {
        return AL_FORM_URL;
    }

    if (al_form_holds(ctype, len, AL_FORM_MULTIPART_DATA,
                      sizeof(AL_FORM_MULTIPART_DATA) - 1))
    {
        return AL_FORM_PARTS;
    }

    return AL_FORM_NONE;
}


/* whether s holds lit, in any case */

static int
al_form_holds(const char *s, size_t len, const char *lit, size_t n)
{
    size_t  i;

    for (i = 0; i + n <= len; i++) {
        if (strncasecmp(s + i, lit, n) == 0) {
            return 1;
        }
    }

    return 0;
}


/*
 * 1 when every "charset" parameter of the Content-Type, wherever it is
 * (after any byte: a quoted boundary counts, and so does the end of
 * another name, "xcharset=utf-16", which Tomcat's getCharacterEncoding()
 * reads as the charset it decodes a form's fields in), names one of
 * al_form_charsets[] in any case, quoted or not; 0 for another, for
 * "charset*" (RFC 2231) and for a quoted value with a backslash, which
 * readers unquote differently.
 */

static int
al_form_charset(const char *ctype, size_t len)
{
    size_t                i, k, vlen;
    unsigned              flags;
    const unsigned char  *p, *v;

    p = (const unsigned char *) ctype;

    for (i = 0; i + 7 <= len; i++) {

        if ((p[i] | 0x20) != 'c' || strncasecmp(ctype + i, "charset", 7) != 0)
        {
            continue;
        }

        al_form_param(p, len, i + 7, 0, &v, &vlen, &flags, NULL);

        if (flags & (AL_FORM_RFC2231 | AL_FORM_ESCAPED)) {
            return 0;
        }

        if (v == NULL) {
            continue;                       /* "charset" with no '=' */
        }

        for (k = 0; k < sizeof(al_form_charsets) / sizeof(char *); k++) {
            if (strlen(al_form_charsets[k]) == vlen
                && strncasecmp((const char *) v, al_form_charsets[k], vlen)
                   == 0)
            {
                break;
            }
        }

        if (k == sizeof(al_form_charsets) / sizeof(char *)) {
            return 0;
        }
    }

    return 1;
}


/*
 * The length of the UTF-8 byte order mark a body begins with, 0 for
 * none, or (size_t) -1 for a UTF-16 or UTF-32 one (FF FE is UTF-32LE's
 * start too; 00 00 FE FF is UTF-32BE's), the ones a .NET StreamReader
 * detects.
 */

static size_t
al_form_bom(const unsigned char *p, size_t len)
{
    if (len >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf) {
        return 3;
    }

    if (len >= 2
        && ((p[0] == 0xfe && p[1] == 0xff) || (p[0] == 0xff && p[1] == 0xfe)))
    {
        return (size_t) -1;
    }

    if (len >= 4 && p[0] == 0 && p[1] == 0 && p[2] == 0xfe && p[3] == 0xff) {
        return (size_t) -1;
    }

    return 0;
}


/* the name a field of "a=1&b=2;c" has (al_form_method,
   al_form_override, or a param's), or NULL */

static const char *
al_form_urlencoded(const unsigned char *p, size_t len,
    const al_form_names_t *names)
{
    const char  *field;

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

        field = al_form_field(p + start, name_end - start, AL_FORM_PLUS,
                              names);
        if (field != NULL) {
            return field;
        }

        start = i + 1;
        name_end = (size_t) -1;
    }

    return NULL;
}


/*
 * 1, with *why, when a "name" parameter anywhere in the body is a method
 * override (_method, X-HTTP-Method-Override), a checked param's name or a
 * prototype key (then in *field too, al_form_field()'s pointer), is in
 * RFC 2231 form or holds an RFC 2047 encoded word.  "name" counts
 * after a byte that is not a letter or a digit, so "filename" does not.
 * The scan goes on right after each "name", not after its value: a
 * quoted value that another parser ends elsewhere cannot hide a name
 * inside it.
 *
 * PHP reads a part's headers in its own way (main/rfc1867.c): a value
 * may be quoted in ' as in " (name='_method'), and a line that begins
 * with a blank or has no ':' is joined to the line before it, the line
 * end taken out (multipart_buffer_headers()), so that a name cut by a
 * line end is whole to it: name="_me<CRLF>thod", name=_me<CRLF>thod,
 * na<CRLF>me=_method.  So "name" is found with a line end between two
 * of its letters too (al_form_find()), a value in ' is read as one in "
 * is, and a value that a line end cut is read on as PHP joins it
 * (al_form_joined()), besides as it is.
 *
 * Rack (Rails, Sinatra), whose MethodOverride takes _method from the
 * parsed form, names a part without a Content-Disposition name by its
 * Content-ID header (Rack 3 also one whose Content-Disposition is over
 * 1536 bytes): so a "Content-ID:" anywhere, its value to the end of its
 * line, is a name too (al_form_content_id()).
 *
 * So values overlap ("name=name=name=..." is as many tokens, each to the
 * end of the body), and reading each to its end made the scan quadratic:
 * a 64 KiB body held an nginx worker for a second and a half, 1 MiB for
 * minutes.  A token that begins inside the last token read is its tail
 * (al_form_param()): its end is that one's, and an encoded word in it
 * would have been found in the whole (a tail begins right after an '=',
 * which no "%XX" holds, so it decodes as that part of the whole does).
 * A quoted value holds the start of no other in the same quotes (the
 * quote that opens one after "name=" closes any value it is in), so
 * each byte is read a bounded number of times; a value is read on past
 * a line end for at most the length of the longest name looked for.
 */

static int
al_form_multipart(const unsigned char *p, size_t len,
    const al_form_names_t *names, const char **why, const char **field)
{
    size_t                i, w, vlen, tail, max;
    unsigned              flags, cid;
    const char           *f;
    const unsigned char  *v;

    tail = 0;
    w = 0;
    cid = 0;
    max = al_form_longest(names);

    for (i = 0; (i = al_form_find(p, len, i, &w, &cid)) < len; i++) {

        if (cid) {
            f = al_form_content_id(p, len, w, max, names);

            if (f != NULL) {
                *why = "multipart field";
                *field = f;
                return 1;
            }

            continue;
        }

        al_form_param(p, len, w, 1, &v, &vlen, &flags, &tail);

        if (flags & AL_FORM_RFC2231) {
            *why = "multipart name in RFC 2231 form (name*=, name*0=)";
            return 1;
        }

        if (v == NULL) {
            continue;
        }

        if (!(flags & AL_FORM_TAIL)
            && al_form_encoded_word(v, vlen, flags))
        {
            *why = "multipart name with an RFC 2047 encoded word (=?...?=)";
            return 1;
        }

        f = al_form_field(v, vlen, flags, names);

        /* PHP reads no name that begins inside another: no tail */

        if (f == NULL && !(flags & AL_FORM_TAIL)) {
            f = al_form_joined(p, len, v, vlen, flags, max, names);
        }

        if (f != NULL) {
            *why = "multipart field";
            *field = f;
            return 1;
        }
    }

    return 0;
}


/*
 * The offset of the next "name" at or after p[i], in any case and after
 * a byte that is not a letter or a digit, or of the next "content-id"
 * (*cid set), in any case and after any byte (Rack 2 finds it so), or
 * len; *end is the offset right after it.  A line end ("\n" or "\r\n")
 * may come between two of its letters: PHP joins the line that follows.
 */

static size_t
al_form_find(const unsigned char *p, size_t len, size_t i, size_t *end,
    unsigned *cid)
{
    size_t               k, m, n;
    unsigned             c;
    const unsigned char  *word;

    for ( /* void */ ; i < len; i++) {

        c = p[i] | 0x20;

        if (c == 'n' && (i == 0 || !al_form_alnum(p[i - 1]))) {
            word = (const unsigned char *) "name";
            n = 4;
            *cid = 0;

        } else if (c == 'c') {
            word = (const unsigned char *) "content-id";
            n = 10;
            *cid = 1;

        } else {
            continue;
        }

        for (k = i + 1, m = 1; m < n; k++, m++) {
            k = al_form_eol(p, len, k);

            if (k == len) {
                break;
            }

            c = p[k];

            if (c >= 'A' && c <= 'Z') {
                c |= 0x20;
            }

            if (c != word[m]) {
                break;
            }
        }

        if (m == n) {
            *end = k;
            return i;
        }
    }

    return len;
}


/*
 * The name Rack reads in a part's Content-ID, "content-id" having ended
 * before p[i]: blanks ':' blanks (Rack 2's \s* crosses line ends), then
 * the rest of the line, its leading brackets skipped (Rack's
 * normalize_params() skips them), read for at most max bytes, the
 * longest name looked for and one more; compared as al_form_field()
 * compares a name.  NULL: no ':', or another name.
 */

static const char *
al_form_content_id(const unsigned char *p, size_t len, size_t i, size_t max,
    const al_form_names_t *names)
{
    size_t  start;

    while (i < len && al_form_blank(p[i])) {
        i++;
    }

    if (i == len || p[i] != ':') {
        return NULL;
    }

    i++;

    while (i < len && (al_form_blank(p[i]) || p[i] == '[' || p[i] == ']')) {
        i++;
    }

    for (start = i; i < len && i - start < max; i++) {
        if (p[i] == '\r' || p[i] == '\n') {
            break;
        }
    }

    return (i > start) ? al_form_field(p + start, i - start, 0, names)
                       : NULL;
}


/* the offset after the line end "\n" or "\r\n" at p[i], or i: none */

static size_t
al_form_eol(const unsigned char *p, size_t len, size_t i)
{
    if (i < len && p[i] == '\n') {
        return i + 1;
    }

    if (len - i >= 2 && p[i] == '\r' && p[i + 1] == '\n') {
        return i + 2;
    }

    return i;
}


/*
 * The value of the parameter whose name ended before p[i]: blanks "="
 * blanks, then a quoted string or a token, which ends at a blank.  The
 * blanks are al_form_blank()'s, as for the media type: Go's
 * ParseMediaType trims Unicode spaces (U+00A0) around "=", and ends a
 * token at a byte that is not a token's, so name\xc2\xa0=_method\xc2\xa0
 * is "_method" to it.  *v is NULL when there is no
 * value, and when the name is followed by '*' and a digit or '=' (RFC
 * 2231: name*0=..., name*=utf-8''...), told by AL_FORM_RFC2231 in
 * *flags.  A quoted value has AL_FORM_QUOTED, and AL_FORM_ESCAPED too
 * when it has a backslash; with single, a value may be quoted in ' as
 * PHP reads a multipart header (AL_FORM_SINGLE).  A quoted value ends at
 * its closing quote or a line end.
 *
 * tail (NULL: not kept) is where the last token value read ended, 0
 * before the first.  Values are read in the order they begin, so a token
 * that begins before it begins inside that one, with no byte that ends a
 * token between: it ends there too, and is told by AL_FORM_TAIL.
 */

static void
al_form_param(const unsigned char *p, size_t len, size_t i, unsigned single,
    const unsigned char **v, size_t *vlen, unsigned *flags, size_t *tail)
{
    size_t         start;
    unsigned char  q;

    *v = NULL;
    *vlen = 0;
    *flags = 0;

    if (i < len && p[i] == '*') {
        i++;

        while (i < len && al_form_blank(p[i])) {
            i++;
        }

        if (i < len && (p[i] == '=' || (p[i] >= '0' && p[i] <= '9'))) {
            *flags = AL_FORM_RFC2231;
        }

        return;
    }

    while (i < len && al_form_blank(p[i])) {
        i++;
    }

    if (i == len || p[i] != '=') {
        return;
    }

    i++;

    while (i < len && al_form_blank(p[i])) {
        i++;
    }

    if (i < len && (p[i] == '"' || (single && p[i] == '\''))) {
        q = p[i];
        start = ++i;
        *flags = (q == '"') ? AL_FORM_QUOTED
                            : (AL_FORM_QUOTED | AL_FORM_SINGLE);

        while (i < len && p[i] != q && p[i] != '\r' && p[i] != '\n') {
            if (p[i] == '\\' && len - i > 1) {
                *flags |= AL_FORM_ESCAPED;
                i++;
            }

            i++;
        }

    } else {
        start = i;

        if (tail != NULL && i < *tail) {
            i = *tail;
            *flags = AL_FORM_TAIL;

        } else {
            while (i < len && p[i] != ';' && p[i] != ',' && p[i] != '"'
                   && !al_form_blank(p[i]))
            {
                i++;
            }

            if (tail != NULL) {
                *tail = i;
            }
        }
    }

    *v = p + start;
    *vlen = i - start;
}


/*
 * The name PHP reads when a line end cut the value v (vlen bytes, as
 * al_form_param() read it, with its flags): PHP joins the next line to
 * it, and a quoted value goes on to its closing quote, a token to a
 * blank or ';' (one ends at the line end when the next line begins with
 * a blank).  Any line is joined here, ':' in it or not.  The name is
 * read into a buffer, without the blanks it begins with (PHP skips the
 * spaces a name begins with), up to max bytes, the longest name looked
 * for and the byte after it: no longer name is any of them.  Then it is
 * compared as al_form_field() compares a name, or NULL.
 */

static const char *
al_form_joined(const unsigned char *p, size_t len, const unsigned char *v,
    size_t vlen, unsigned flags, size_t max, const al_form_names_t *names)
{
    size_t           i, n;
    unsigned char    q, c, buf[AL_FORM_JOIN_MAX];
    al_form_names_t  php;

    i = (size_t) (v - p) + vlen;

    if (al_form_eol(p, len, i) == i) {
        return NULL;                        /* not cut by a line end */
    }

    q = (flags & AL_FORM_SINGLE) ? '\'' : '"';
    n = 0;

    /* what was read, then each line joined */

    while (v < p + i && n < max) {
        if (n > 0 || (*v != ' ' && *v != '\t')) {
            buf[n++] = *v;
        }

        v++;
    }

    while (n < max && (i = al_form_eol(p, len, i)) < len) {

        /* an empty line ends the headers; a token, a blank or ';' */

        if (al_form_eol(p, len, i) != i
            || (!(flags & AL_FORM_QUOTED)
                && (al_form_blank(p[i]) || p[i] == ';')))
        {
            break;
        }

        while (i < len && n < max && p[i] != '\r' && p[i] != '\n') {
            c = p[i];

            if (flags & AL_FORM_QUOTED) {
                if (c == q) {
                    goto joined;
                }

                if (c == '\\' && len - i > 1 && p[i + 1] != '\r'
                    && p[i + 1] != '\n')
                {
                    buf[n++] = c;
                    c = p[++i];

                    if (n == max) {
                        break;
                    }
                }

            } else if (al_form_blank(c) || c == ';') {
                goto joined;
            }

            if (n > 0 || (c != ' ' && c != '\t')) {
                buf[n++] = c;
            }

            i++;
        }

        if (i < len && p[i] == '\r' && al_form_eol(p, len, i) == i) {
            break;                          /* a CR alone: no line end */
        }
    }

joined:

    if (n == 0) {
        return NULL;
    }

    /* PHP's names: no prototype keys (no JavaScript reader joins lines) */

    php = *names;
    php.proto = 0;

    return al_form_field(buf, n, flags & AL_FORM_QUOTED, &php);
}


/*
 * The length of the longest name al_form_field() looks for but a
 * prototype key, and a byte for what ends it, at most AL_FORM_JOIN_MAX.
 */

static size_t
al_form_longest(const al_form_names_t *names)
{
    size_t  i, n;

    n = sizeof(al_form_override) - 1;

    for (i = 0; i < names->nparams; i++) {
        n = (names->params[i].name.len > n ? names->params[i].name.len : n);
    }

    for (i = 0; i < names->nquery; i++) {
        if (names->query[i].re != NULL) {
            n = (names->query[i].name.len > n ? names->query[i].name.len : n);
        }
    }

    return (n + 1 < AL_FORM_JOIN_MAX) ? n + 1 : AL_FORM_JOIN_MAX;
}


/*
 * The character at p[*i] of a name as the parsers read it: a backslash
 * escape undone in a quoted one, "%XX" decoded, '+' a space with
 * AL_FORM_PLUS; *i is left on its last byte.
 *
 * "%uXXXX" is decoded too, as System.Web's HttpUtility.UrlDecode (the
 * form ASP.NET MVC reads) decodes it: to the character, which is ASCII,
 * one of the letters al_form_letter() folds (read as its ASCII one
 * here), or else AL_FORM_WIDE, which no name has.
 */

static unsigned
al_form_char(const unsigned char *p, size_t len, size_t *i, unsigned flags)
{
    int       hi, lo;
    size_t    k, n;
    unsigned  c;

    k = *i;
    c = p[k];

    if ((flags & AL_FORM_QUOTED) && c == '\\' && len - k > 1) {
        c = p[++k];

    } else if (c == '%' && len - k > 5 && (p[k + 1] | 0x20) == 'u') {

        for (c = 0, n = 2; n < 6 && (hi = al_form_hex(p[k + n])) >= 0; n++)
        {
            c = c << 4 | (unsigned) hi;
        }

        if (n < 6) {
            c = '%';

        } else {
            k += 5;

            if (c >= 0x80) {
                c = al_fold_letter(c);

                if (c == 0) {
                    c = AL_FORM_WIDE;
                }
            }
        }

    } else if (c == '%' && len - k > 2
               && (hi = al_form_hex(p[k + 1])) >= 0
               && (lo = al_form_hex(p[k + 2])) >= 0)
    {
        c = (unsigned) (hi << 4 | lo);
        k += 2;

    } else if (c == '+' && (flags & AL_FORM_PLUS)) {
        c = ' ';
    }

    *i = k;

    return c;
}


/*
 * The character at p[*i] of a name as al_form_char() reads it, but a
 * letter outside ASCII that a case-insensitive reader folds to an ASCII
 * one (al_fold_letters[]) is read as that one: Go's strings.EqualFold
 * (Echo binds a form field by it) takes the Kelvin sign (U+212A) for 'k'
 * and the long s (U+017F) for 's', and a JSON key is read with those and
 * with U+0130 and U+0131 as 'i' (al_folds_to()); so is a field's name.
 * Its UTF-8 may be escaped byte by byte ("%E2%84%AA"); a "%u212A"
 * al_form_char() folds itself.  *i is left on its last byte.
 */

static unsigned
al_form_letter(const unsigned char *p, size_t len, size_t *i,
    unsigned flags)
{
    size_t         k, n, end[4];
    uint32_t       code;
    unsigned       c, b, letter;
    unsigned char  u[4];

    c = al_form_char(p, len, i, flags);

    if (!al_fold_lead(c)) {
        return c;
    }

    /* the continuation bytes that follow, each as al_form_char() reads
       it; al_utf8_read() takes as many as c needs */

    u[0] = (unsigned char) c;
    end[0] = *i;
    k = *i;

    for (n = 1; n < sizeof(u) && k + 1 < len; n++) {
        k++;
        b = al_form_char(p, len, &k, flags);

        if ((b & ~0x3fu) != 0x80) {
            break;
        }

        u[n] = (unsigned char) b;
        end[n] = k;
    }

    n = al_utf8_read(u, n, &code);
    letter = (n != 0) ? al_fold_letter(code) : 0;

    if (letter == 0) {
        return c;
    }

    *i = end[n - 1];

    return letter;
}


/*
 * The name a field has, read as the parsers in the comment above read it:
 * al_form_method (the pointer itself) for _method, al_form_override for
 * X-HTTP-Method-Override, a path param's name, a checked query
 * parameter's name, with names->proto al_form_proto or al_form_ctor
 * (al_form_path()), or NULL for another.
 */

static const char *
al_form_field(const unsigned char *p, size_t len, unsigned flags,
    const al_form_names_t *names)
{
    size_t    i, k, j;
    unsigned  c;

    for (i = 0; i < len; i++) {
        k = i;
        c = al_form_char(p, len, &k, flags);

        if (c != ' ' && c != '\t' && c != '[' && c != ']') {
            break;
        }

        i = k;
    }

    if (al_form_is_name(p, len, i, flags, al_form_method, AL_FORM_FIELD_LEN))
    {
        return al_form_method;
    }

    if (al_form_is_name(p, len, i, flags, al_form_override,
                        sizeof(al_form_override) - 1))
    {
        return al_form_override;
    }

    if (names == NULL) {
        return NULL;
    }

    for (j = 0; j < names->nparams; j++) {
        if (al_form_is_name(p, len, i, flags, names->params[j].name.data,
                            names->params[j].name.len))
        {
            return names->params[j].name.data;
        }
    }

    for (j = 0; j < names->nquery; j++) {
        if (names->query[j].re != NULL
            && al_form_is_name(p, len, i, flags, names->query[j].name.data,
                               names->query[j].name.len))
        {
            return names->query[j].name.data;
        }
    }

    return names->proto ? al_form_path(p, len, flags) : NULL;
}


/*
 * al_form_proto or al_form_ctor when a field's name, read as
 * al_form_char() reads it (percent-decoded) and cut into parts as
 * al_key_path_next() cuts a key, has a part "__proto__", or a part
 * "constructor" then "prototype": qs (Express's extended body-parser)
 * reads "a[b]" as nested keys, with allowDots "a.b" too, and
 * express-fileupload's parseNested a multipart name ("a.__proto__.b",
 * CVE-2020-7699); without their guards such a key sets an object's
 * prototype, or Object.prototype, whose fields every object then reads.
 * Else NULL.  Keys have case in JavaScript: "__PROTO__" is no such part.
 *
 * A multipart token that is the tail of the last one read (AL_FORM_TAIL,
 * al_form_param()) is read only until its second part has ended, its
 * first is not "constructor" or either is too long to be a word: the
 * parts after those are the whole token's, cut at the same characters
 * (a tail begins after an '=', outside any escape) and read already, and
 * reading each tail to its end would make the scan quadratic again.
 */

static const char *
al_form_path(const unsigned char *p, size_t len, unsigned flags)
{
    size_t         i;
    unsigned       hit;
    al_key_path_t  kp;

    al_key_path_init(&kp, 0);
    hit = 0;

    for (i = 0; i < len && hit == 0; i++) {

        if ((flags & AL_FORM_TAIL)
            && (kp.n == sizeof(kp.part) || kp.parts > 1
                || (kp.parts == 1 && !kp.ctor)))
        {
            break;
        }

        hit = al_key_path_next(&kp, al_form_char(p, len, &i, flags));
    }

    if (hit == 0) {
        hit = al_key_path_end(&kp);
    }

    return (hit == AL_KEY_PROTO) ? al_form_proto
           : (hit == AL_KEY_CTOR) ? al_form_ctor : NULL;
}


/*
 * 1 when the field name from p[i] on (leading blanks and brackets
 * skipped) is name: compared in any case (al_form_letter()), '.' and ' '
 * as '_', ended by '[', ']', a blank or a NUL.
 */

static int
al_form_is_name(const unsigned char *p, size_t len, size_t i, unsigned flags,
    const char *name, size_t n)
{
    size_t    m;
    unsigned  c;

    for (m = 0; i < len; i++) {
        c = al_form_letter(p, len, &i, flags);

        if (m == n) {
            return c == '[' || c == ']' || c == ' ' || c == '\t'
                   || c == '\0';
        }

        if (al_form_fold(c) != al_form_fold((unsigned char) name[m])) {
            return 0;
        }

        m++;
    }

    return m == n;
}


static unsigned
al_form_fold(unsigned c)
{
    if (c == '.' || c == ' ') {
        return '_';
    }

    if (c >= 'A' && c <= 'Z') {
        return c | 0x20;
    }

    return c;
}


/*
 * 1 when a name, read as al_form_field() reads it, has "=?" in it:
 * the start of an RFC 2047 encoded word, wherever a decoder may look for
 * one (ASP.NET's takes a whole quoted "=?charset?B?base64?=").
 */

static int
al_form_encoded_word(const unsigned char *p, size_t len, unsigned flags)
{
    size_t    i;
    unsigned  c, prev;

    prev = 0;

    for (i = 0; i < len; i++) {
        c = al_form_char(p, len, &i, flags);

        if (prev == '=' && c == '?') {
            return 1;
        }

        prev = c;
    }

    return 0;
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
