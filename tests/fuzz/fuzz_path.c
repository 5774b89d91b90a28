/*
 * libFuzzer target for the request-target normalizer (al_path.c).
 *
 * Arbitrary bytes go to al_target_parse().  When they are accepted, the
 * decoded form is checked against the rules on its own (no '/', '\', '%',
 * control bytes or dot segments in a segment, nor what NFKC or Windows
 * reads as one or as a separator, well-formed UTF-8) and then
 * re-encoded with al_uri_escape() and parsed again: it must come back as
 * the identical segments and parameters.  That round trip is what makes
 * "what is matched is what is forwarded" hold.  al_target_parse_drives()
 * must decide the same, but keep (and mark) what al_target_parse()
 * refuses as a drive letter, and only that.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"

#include "../unit/nfkc.h"


#define NELTS(a)  (sizeof(a) / sizeof((a)[0]))


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_decoded(const char *s, size_t len, int query);
static int utf8_valid(const unsigned char *p, size_t len);
static int dot_like(const char *s, size_t len);
static int has(const uint32_t *set, size_t n, uint32_t cp);
static size_t put(char *out, size_t cap, size_t n, const char *s,
    size_t len, int query);
static int same(const al_str_t *a, const al_str_t *b);
static void check_drives(const uint8_t *data, size_t size, int rc,
    const char *why);


static al_path_t   path, path2, path3;
static al_query_t  query, query2, query3;
static char        uri[4 * AL_URI_MAX];


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t       i, k, n, plus;
    const char  *why;

    why = NULL;

    if (al_target_parse((const char *) data, size, &path, &query, &why)
        != 0)
    {
        if (why == NULL || path.nseg != 0 || query.nparam != 0) {
            abort();
        }

        check_drives(data, size, -1, why);

        return 0;
    }

    check_drives(data, size, 0, NULL);

    if (path.nseg > AL_SEGMENTS_MAX || query.nparam > AL_QUERY_PARAMS_MAX) {
        abort();
    }

    for (i = 0; i < path.nseg; i++) {
        check_decoded(path.seg[i].data, path.seg[i].len, 0);
    }

    for (i = 0; i < query.nparam; i++) {
        if (query.param[i].name.len == 0) {
            abort();
        }

        check_decoded(query.param[i].name.data, query.param[i].name.len, 1);
        check_decoded(query.param[i].value.data, query.param[i].value.len,
                      1);
    }

    /*
     * the path alone: re-encoding makes it no longer but for a '+', sent
     * as %2B (two bytes more where the request had it raw), so it must
     * parse unless those took it past AL_PATH_MAX (the gateway then
     * refuses the request: "upstream URI too long")
     */

    n = 0;
    plus = 0;

    for (i = 0; i < path.nseg; i++) {
        n = put(uri, sizeof(uri), n, "/", 1, -1);
        n = put(uri, sizeof(uri), n, path.seg[i].data, path.seg[i].len, 0);

        for (k = 0; k < path.seg[i].len; k++) {
            plus += (path.seg[i].data[k] == '+');
        }
    }

    if (n == 0) {
        n = put(uri, sizeof(uri), n, "/", 1, -1);
    }

    if (n > sizeof(uri) || n > size + 2 * plus
        || memchr(uri, '+', n) != NULL)
    {
        abort();
    }

    why = NULL;

    if (n <= AL_PATH_MAX || plus == 0) {
        if (al_path_parse(&path2, uri, n, &why) != 0
            || path2.nseg != path.nseg)
        {
            abort();
        }

        for (i = 0; i < path.nseg; i++) {
            if (!same(&path.seg[i], &path2.seg[i])) {
                abort();
            }
        }
    }

    /*
     * The query: '=', '+' and a missing '=' may grow when re-encoded, so
     * only a result that still fits AL_QUERY_MAX has to parse back.
     */

    n = 0;

    for (i = 0; i < query.nparam; i++) {
        if (i > 0) {
            n = put(uri, sizeof(uri), n, "&", 1, -1);
        }

        n = put(uri, sizeof(uri), n, query.param[i].name.data,
                query.param[i].name.len, 1);
        n = put(uri, sizeof(uri), n, "=", 1, -1);
        n = put(uri, sizeof(uri), n, query.param[i].value.data,
                query.param[i].value.len, 1);
    }

    if (n > AL_QUERY_MAX) {
        return 0;
    }

    why = NULL;

    if (al_query_parse(&query2, uri, n, &why) != 0
        || query2.nparam != query.nparam)
    {
        abort();
    }

    for (i = 0; i < query.nparam; i++) {
        if (!same(&query.param[i].name, &query2.param[i].name)
            || !same(&query.param[i].value, &query2.param[i].value))
        {
            abort();
        }
    }

    return 0;
}


/* what a decoded segment (query == 0) or name or value may hold */

static void
check_decoded(const char *s, size_t len, int query)
{
    size_t         i;
    unsigned char  c;

    if (s[len] != '\0') {
        abort();
    }

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        if (c < 0x20 || c == 0x7f || c == '%') {
            abort();
        }

        if (!query && (c == '/' || c == '\\')) {
            abort();
        }
    }

    if (!query && (len == 0 || (len == 1 && s[0] == '.')
                   || (len == 2 && s[0] == '.' && s[1] == '.')))
    {
        abort();
    }

    if (!query && dot_like(s, len)) {
        abort();
    }

    if (!utf8_valid((const unsigned char *) s, len)) {
        abort();
    }
}


/*
 * al_target_parse_drives() on the same bytes: where al_target_parse()
 * took them, the same segments and no drive; where it refused them for
 * another reason, the same refusal; where for a drive letter, a refusal
 * (of a drive and a dot segment, or of what follows the drive) or the
 * segments with a drive marked, each one refused alone.
 */

static void
check_drives(const uint8_t *data, size_t size, int rc, const char *why)
{
    int          refused;
    size_t       i, n;
    const char  *why3, *why1;

    why3 = NULL;

    if (al_target_parse_drives((const char *) data, size, &path3, &query3,
                               &why3)
        != 0)
    {
        /* the strict parse stops at a drive, before what follows it */

        if (rc == 0 || why3 == NULL
            || (strcmp(why3, why) != 0 && strcmp(why, "drive letter") != 0)
            || path3.nseg != 0 || path3.drive != 0 || query3.nparam != 0)
        {
            abort();
        }

        return;
    }

    if (rc == 0) {
        if (path3.drive != 0 || path3.nseg != path.nseg
            || query3.nparam != query.nparam)
        {
            abort();
        }

        for (i = 0; i < path.nseg; i++) {
            if (!same(&path.seg[i], &path3.seg[i])) {
                abort();
            }
        }

        return;
    }

    if (strcmp(why, "drive letter") != 0 || path3.drive == 0
        || path3.nseg == 0
        || (path3.nseg < 64 && (path3.drive >> path3.nseg) != 0))
    {
        abort();
    }

    /* each marked segment, and only those, a drive to the strict parse */

    for (i = 0; i < path3.nseg; i++) {
        uri[0] = '/';
        n = 1 + al_uri_escape(uri + 1, sizeof(uri) - 1, path3.seg[i].data,
                              path3.seg[i].len, 0);
        if (n > sizeof(uri)) {
            abort();
        }

        why1 = NULL;
        refused = (al_path_parse(&path2, uri, n, &why1) != 0);

        if (refused != (int) ((path3.drive >> i) & 1)
            || (refused && strcmp(why1, "drive letter") != 0))
        {
            abort();
        }
    }
}


/*
 * A second reading of what NFKC or Windows makes a dot segment or a
 * separator of, from the table tests/unit/nfkc.py derives from Unicode's
 * data: with the dot-likes written as '.' and the space-likes as ' ', the
 * segment is dots and spaces beginning with a dot; or it holds a
 * slash-like anywhere; or it starts with a drive, an ASCII letter or any
 * other character above U+007F, then ':' or a colon-like.  The segment is
 * well-formed UTF-8 (checked after).
 */

static int
dot_like(const char *s, size_t len)
{
    int                  letter;
    size_t               i, n, k, m;
    char                 buf[AL_PATH_MAX + 1];
    uint32_t             cp;
    const unsigned char  *p;

    p = (const unsigned char *) s;
    n = 0;
    letter = 0;

    for (i = 0; i < len && n < sizeof(buf) - 1; i += k) {
        k = (p[i] < 0x80) ? 1 : (p[i] < 0xe0) ? 2 : (p[i] < 0xf0) ? 3 : 4;
        cp = (k == 1) ? p[i] : (p[i] & (0x7fu >> k));

        for (m = 1; m < k && i + m < len; m++) {
            cp = cp << 6 | (p[i + m] & 0x3f);
        }

        if (has(nfkc_slash, NELTS(nfkc_slash), cp)) {
            return 1;
        }

        if (n == 0) {
            letter = cp >= 0x80 || (cp >= 'a' && cp <= 'z')
                     || (cp >= 'A' && cp <= 'Z');

        } else if (n == 1 && letter
                   && (cp == ':' || has(nfkc_colon, NELTS(nfkc_colon), cp)))
        {
            return 1;
        }

        buf[n++] = has(nfkc_dot, NELTS(nfkc_dot), cp) ? '.'
                   : has(nfkc_space, NELTS(nfkc_space), cp) ? ' '
                   : (cp < 0x80) ? (char) cp : 'x';
    }

    buf[n] = '\0';

    return n > 0 && buf[0] == '.' && strspn(buf, ". ") == n;
}


static int
has(const uint32_t *set, size_t n, uint32_t cp)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (set[i] == cp) {
            return 1;
        }
    }

    return 0;
}


/*
 * An independent UTF-8 check: decode each sequence to a code point and
 * refuse overlong forms, surrogates and anything above U+10FFFF.
 */

static int
utf8_valid(const unsigned char *p, size_t len)
{
    size_t    i, k, n;
    uint32_t  cp, min;

    i = 0;

    while (i < len) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }

        if ((p[i] & 0xe0) == 0xc0) {
            n = 1;
            cp = p[i] & 0x1f;
            min = 0x80;

        } else if ((p[i] & 0xf0) == 0xe0) {
            n = 2;
            cp = p[i] & 0x0f;
            min = 0x800;

        } else if ((p[i] & 0xf8) == 0xf0) {
            n = 3;
            cp = p[i] & 0x07;
            min = 0x10000;

        } else {
            return 0;
        }

        if (len - i <= n) {
            return 0;
        }

        for (k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80) {
                return 0;
            }

            cp = cp << 6 | (p[i + k] & 0x3f);
        }

        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return 0;
        }

        i += n + 1;
    }

    return 1;
}


/* appends s at out + n, escaped (query 0 or 1) or as is (query -1) */

static size_t
put(char *out, size_t cap, size_t n, const char *s, size_t len, int query)
{
    if (n > cap) {
        abort();
    }

    if (query < 0) {
        if (len > cap - n) {
            abort();
        }

        memcpy(out + n, s, len);
        return n + len;
    }

    n += al_uri_escape(out + n, cap - n, s, len, query);

    if (n > cap) {
        abort();
    }

    return n;
}


static int
same(const al_str_t *a, const al_str_t *b)
{
    return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}
