/*
 * The request-target normalizer.  Every route decision is made on the
 * decoded segments and query parameters produced here, and the upstream
 * URI is re-encoded from them with al_uri_escape(), so what was matched is
 * what is forwarded.
 *
 * The rule throughout: a byte sequence that some server, framework or
 * proxy between us and the upstream could read differently from us is
 * refused, never interpreted.  So percent-decoding happens exactly once,
 * and whatever would need a second opinion after it (an encoded '/', '\',
 * ';' or '%', a dot segment, a control byte, raw non-ASCII, invalid or
 * overlong UTF-8, ';' path parameters, empty segments, duplicate query
 * names) ends the parse with a short reason in *why.
 *
 * A dot segment is also what an upstream reads as one: a segment of dots
 * and spaces that begins with a dot ("..%20", "..."; Windows, so IIS and
 * ASP.NET, trims trailing dots and spaces from a name; "..+", a space to
 * a form decoder behind a proxy that decodes the path), the dots
 * including the characters NFKC normalization makes dots of (U+2025 TWO
 * DOT LEADER is ".."), the spaces the characters it makes a space of and
 * the other White_Space ones, which .NET trims like a space (U+00A0,
 * U+3000).  Only a segment whose first decoded byte is '.', 0xE2 or 0xEF,
 * the first bytes of the dot-likes, is looked at.  For the same
 * normalization, a character NFKC turns into a string with '/' or '\'
 * (U+FF0F FULLWIDTH SOLIDUS, U+2100 ACCOUNT OF is "a/c") is refused
 * anywhere in a segment, and so is one it or Windows' best-fit mapping
 * to an ANSI code page turns into '/', '\' or '%' (U+2215 DIVISION SLASH,
 * U+00A5 YEN SIGN in cp932, U+FE6A SMALL PERCENT SIGN): looked for only
 * in a segment with a non-ASCII byte.
 *
 * A segment that starts with a drive ("C:x", "C:..") is refused too:
 * Windows roots such a name on that drive's current directory, and .NET's
 * Path.Combine(root, name) (Python's os.path.join, for another drive)
 * returns it alone, leaving root, as it would "\x" or "/x".  The colon may
 * be one NFKC or best fit makes a ':' (U+FF1A FULLWIDTH COLON, U+2236
 * RATIO), and the letter an ASCII one or any character above U+007F:
 * NFKC and best fit make letters of hundreds (U+FF23, U+0106, U+1D402).
 * al_target_parse_drives() keeps such a segment for al_decide(), which
 * refuses it unless the route takes a drive in that param ("A:B" to a
 * spreadsheet API); one that is a drive and a dot segment ("C:..") it
 * refuses as well.
 */

#include <string.h>

#include "airlock.h"


static const char *al_raw_refusal(unsigned c);
static int al_hex(unsigned c);
static int al_decode(const unsigned char *p, size_t len, int query,
    unsigned char *out, size_t *outlen, const char **why);
static int al_utf8_valid(const unsigned char *p, size_t len);
static int al_dot_segment(const unsigned char *p, size_t len);
static int al_target_split(const char *target, size_t len, al_path_t *path,
    al_query_t *query, int drives, const char **why);
static int al_path_split(al_path_t *path, const char *raw, size_t len,
    int drives, const char **why);
static size_t al_drive_segment(const unsigned char *p, size_t len);
static int al_drive_dots(const unsigned char *p, size_t len);
static size_t al_char_like(const unsigned char *p, size_t len,
    unsigned ascii, const uint32_t *set, size_t n);
static const char *al_separator_like(const unsigned char *p, size_t len);
static uint32_t al_utf8_char(const unsigned char *p, size_t len,
    size_t *n);
static int al_char_in(uint32_t c, const uint32_t *set, size_t n);
static const char *al_fold_char(uint32_t c);


static const char  al_hex_upper[] = "0123456789ABCDEF";


/*
 * Every code point above U+007F that NFKC normalization turns into dots,
 * into a string with '/' or '\', or with '%', or into a space, and the
 * White_Space ones (Windows' and .NET's trimming: U+0085, U+00A0,
 * U+3000...), as tests/unit/nfkc.py lists them from Unicode 14.0
 * (Python 3.11's unicodedata; Unicode 17.0 in ICU lists the same), and
 * those it turns into a string with ':' (the colons: from 14.0 only).
 * tests/unit/path.c tries every code point against that list, so a list
 * here cannot lose or gain one unseen; tests/unit/nfkc.t says when a
 * newer Unicode changes it.
 */

static const uint32_t  al_nfkc_dots[] = {
    0x2024, 0x2025, 0x2026,                 /* ONE, TWO DOT LEADER, ... */
    0xfe19, 0xfe30,                         /* their vertical forms */
    0xfe52, 0xff0e                          /* SMALL, FULLWIDTH FULL STOP */
};

static const uint32_t  al_nfkc_slashes[] = {
    0x2100, 0x2101, 0x2105, 0x2106,         /* "a/c", "a/s", "c/o", "c/u" */
    0xfe68, 0xff0f, 0xff3c                  /* SMALL and FULLWIDTH '\', '/' */
};

static const uint32_t  al_nfkc_percents[] = {
    0xfe6a, 0xff05                          /* SMALL, FULLWIDTH PERCENT */
};

static const uint32_t  al_nfkc_colons[] = {
    0x2a74,                                 /* DOUBLE COLON EQUAL: "::=" */
    0xfe13, 0xfe55, 0xff1a                  /* VERTICAL, SMALL, FULLWIDTH */
};

static const uint32_t  al_nfkc_spaces[] = {
    0x0085, 0x00a0, 0x1680,                 /* NEL, NO-BREAK, OGHAM */
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
    0x2008, 0x2009, 0x200a,                 /* EN QUAD .. HAIR SPACE */
    0x2028, 0x2029,                         /* LINE, PARAGRAPH SEPARATOR */
    0x202f, 0x205f, 0x3000                  /* NARROW, MEDIUM, IDEOGRAPHIC */
};

/*
 * What Windows' best fit (WideCharToMultiByte() without
 * WC_NO_BEST_FIT_CHARS, which the ANSI file, CGI and command-line APIs of
 * an IIS or other Windows upstream use) turns into '/' or '\', and into
 * '%', a second decoding, in one of the ANSI code pages, from the WCTABLE
 * sections of Microsoft's tables (unicode.org, MAPPINGS/VENDORS/MICSFT/
 * WindowsBestFit).  The ones NFKC makes the same (U+FF0F, U+FF3C,
 * U+FF05), its dots and its spaces (U+FF0E; U+2000..U+2006, U+3000) are
 * in the lists above.  tests/unit/bestfit.h has them all, and
 * tests/unit/path.c tries every code point against them.
 */

static const uint32_t  al_bestfit_slashes[] = {
    0x00a5,                                 /* YEN SIGN: '\' in cp932 */
    0x00b4,                                 /* ACUTE ACCENT: '/' in 1253 */
    0x2044,                                 /* FRACTION SLASH */
    0x20a9,                                 /* WON SIGN: '\' in cp949 */
    0x2215, 0x2216                          /* DIVISION SLASH, SET MINUS */
};

static const uint32_t  al_bestfit_percents[] = {
    0x066a                                  /* ARABIC PERCENT SIGN */
};

/* to ':', in cp1250, cp1252 and cp1254 (U+FF1A, in most: above) */

static const uint32_t  al_bestfit_colons[] = {
    0x0589,                                 /* ARMENIAN FULL STOP */
    0x2236                                  /* RATIO */
};

#define al_nelts(a)  (sizeof(a) / sizeof((a)[0]))


/*
 * The ASCII an upstream that applies NFKC or Windows' best fit reads for
 * each character of the lists above: NFKC's own text where it is longer
 * (U+2100 ACCOUNT OF is "a/c", U+2025 "..", U+2026 "...", U+2A74
 * "::="), so that a pattern refusing ".." sees the two dots the upstream
 * reads; the White_Space ones as a space (what .NET trims).  None is
 * longer than its character's UTF-8, so no value grows.  Sorted for a
 * binary search.  tests/unit/path.c checks that these are exactly the
 * characters of the lists.
 */

typedef struct {
    uint32_t     c;
    const char  *ascii;                     /* at most 3 bytes */
} al_fold_t;

static const al_fold_t  al_folds[] = {
    { 0x0085, " " }, { 0x00a0, " " }, { 0x00a5, "\\" }, { 0x00b4, "/" },
    { 0x0589, ":" }, { 0x066a, "%" }, { 0x1680, " " }, { 0x2000, " " },
    { 0x2001, " " }, { 0x2002, " " }, { 0x2003, " " }, { 0x2004, " " },
    { 0x2005, " " }, { 0x2006, " " }, { 0x2007, " " }, { 0x2008, " " },
    { 0x2009, " " }, { 0x200a, " " }, { 0x2024, "." }, { 0x2025, ".." },
    { 0x2026, "..." }, { 0x2028, " " }, { 0x2029, " " }, { 0x202f, " " },
    { 0x2044, "/" }, { 0x205f, " " }, { 0x20a9, "\\" }, { 0x2100, "a/c" },
    { 0x2101, "a/s" }, { 0x2105, "c/o" }, { 0x2106, "c/u" }, { 0x2215, "/" },
    { 0x2216, "\\" }, { 0x2236, ":" }, { 0x2a74, "::=" }, { 0x3000, " " },
    { 0xfe13, ":" }, { 0xfe19, "..." }, { 0xfe30, ".." }, { 0xfe52, "." },
    { 0xfe55, ":" }, { 0xfe68, "\\" }, { 0xfe6a, "%" }, { 0xff05, "%" },
    { 0xff0e, "." }, { 0xff0f, "/" }, { 0xff1a, ":" }, { 0xff3c, "\\" }
};


/*
 * Byte classes, one table built at compile time:
 *   unreserved   RFC 3986 unreserved
 *   path         pchar without ';' and '%' (the caller handles '%')
 *   query        query chars inside one item: '&' separates items, ';'
 *                is refused
 *   query keep   what a re-encoded query name or value keeps raw: also
 *                '&', '=', '+' and ';' are escaped, which would otherwise
 *                change its meaning
 *   path keep    what a re-encoded path segment keeps raw: what path
 *                accepts but '+', a literal plus to us (RFC 3986) and a
 *                space to an upstream that decodes its path as a form
 *                (PHP's urldecode(), Java's URLDecoder, Go's
 *                QueryUnescape): sent as %2B, it is a plus to both.  A
 *                re-encoded segment parses back to itself.
 */

#define AL_UNRES(c)                                                       \
    (((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z')              \
     || ((c) >= '0' && (c) <= '9')                                         \
     || (c) == '-' || (c) == '.' || (c) == '_' || (c) == '~')

#define AL_SUBQ(c)                                                        \
    ((c) == '!' || (c) == '$' || (c) == '\'' || (c) == '(' || (c) == ')'   \
     || (c) == '*' || (c) == ',' || (c) == ':' || (c) == '@')

#define AL_PATHC(c)                                                       \
    (AL_UNRES(c) || AL_SUBQ(c) || (c) == '&' || (c) == '+' || (c) == '=')

#define AL_QUERYC(c)                                                      \
    (AL_UNRES(c) || AL_SUBQ(c) || (c) == '+' || (c) == '=' || (c) == '/'   \
     || (c) == '?')

#define AL_QKEEP(c)                                                       \
    (AL_UNRES(c) || AL_SUBQ(c) || (c) == '/' || (c) == '?')

#define AL_PKEEP(c)                                                       \
    (AL_UNRES(c) || AL_SUBQ(c) || (c) == '&' || (c) == '=')

#define AL_C_UNRES   0x01
#define AL_C_PATH    0x02
#define AL_C_QUERY   0x04
#define AL_C_QKEEP   0x08
#define AL_C_PKEEP   0x10

#define AL_CLASS(c)                                                       \
    ((AL_UNRES(c) ? AL_C_UNRES : 0) | (AL_PATHC(c) ? AL_C_PATH : 0)       \
     | (AL_QUERYC(c) ? AL_C_QUERY : 0) | (AL_QKEEP(c) ? AL_C_QKEEP : 0)   \
     | (AL_PKEEP(c) ? AL_C_PKEEP : 0))

#define AL_C4(c)    AL_CLASS(c), AL_CLASS(c + 1), AL_CLASS(c + 2),         \
                    AL_CLASS(c + 3)
#define AL_C16(c)   AL_C4(c), AL_C4(c + 4), AL_C4(c + 8), AL_C4(c + 12)
#define AL_C64(c)   AL_C16(c), AL_C16(c + 16), AL_C16(c + 32), AL_C16(c + 48)

static const unsigned char  al_class[256] = {
    AL_C64(0), AL_C64(64), AL_C64(128), AL_C64(192)
};

#define al_escape_keep(c, q)                                              \
    (al_class[(c) & 0xff] & ((q) ? AL_C_QKEEP : AL_C_PKEEP))

#if (AL_SEGMENTS_MAX > 64)
#error "al_path_t.drive has a bit per segment"
#endif


int
al_target_parse(const char *target, size_t len, al_path_t *path,
    al_query_t *query, const char **why)
{
    return al_target_split(target, len, path, query, 0, why);
}


int
al_target_parse_drives(const char *target, size_t len, al_path_t *path,
    al_query_t *query, const char **why)
{
    return al_target_split(target, len, path, query, 1, why);
}


static int
al_target_split(const char *target, size_t len, al_path_t *path,
    al_query_t *query, int drives, const char **why)
{
    size_t       plen;
    const char  *q;

    path->nseg = 0;
    path->drive = 0;
    query->nparam = 0;

    if (target == NULL || len == 0 || target[0] != '/') {
        *why = "not origin-form";
        return -1;
    }

    if (memchr(target, '#', len) != NULL) {
        *why = "fragment";
        return -1;
    }

    q = memchr(target, '?', len);
    plen = (q != NULL) ? (size_t) (q - target) : len;

    if (plen > AL_PATH_MAX) {
        *why = "path too long";
        return -1;
    }

    if (q != NULL && len - plen - 1 > AL_QUERY_MAX) {
        *why = "query too long";
        return -1;
    }

    if (al_path_split(path, target, plen, drives, why) != 0) {
        return -1;
    }

    if (q == NULL) {
        return 0;
    }

    if (al_query_parse(query, q + 1, len - plen - 1, why) != 0) {
        path->nseg = 0;
        path->drive = 0;
        return -1;
    }

    return 0;
}


int
al_path_parse(al_path_t *path, const char *raw, size_t len,
    const char **why)
{
    return al_path_split(path, raw, len, 0, why);
}


static int
al_path_split(al_path_t *path, const char *raw, size_t len, int drives,
    const char **why)
{
    size_t                used, dlen;
    const unsigned char  *p, *end, *s, *e;
    unsigned char        *d;

    path->nseg = 0;
    path->drive = 0;

    if (raw == NULL || len == 0 || raw[0] != '/') {
        *why = "not origin-form";
        return -1;
    }

    if (len > AL_PATH_MAX) {
        *why = "path too long";
        return -1;
    }

    if (len == 1) {
        return 0;
    }

    p = (const unsigned char *) raw;
    end = p + len;
    used = 0;

    /* p is at a '/' on every iteration */

    while (p < end) {
        s = p + 1;

        if (s == end || *s == '/') {
            *why = "empty segment";
            goto failed;
        }

        e = memchr(s, '/', (size_t) (end - s));
        if (e == NULL) {
            e = end;
        }

        if (path->nseg == AL_SEGMENTS_MAX) {
            *why = "too many segments";
            goto failed;
        }

        /* decoding never grows a segment; the NUL takes the '/' place */

        if ((size_t) (e - s) + 1 > sizeof(path->buf) - used) {
            *why = "path too long";
            goto failed;
        }

        d = (unsigned char *) path->buf + used;

        if (al_decode(s, (size_t) (e - s), 0, d, &dlen, why) != 0) {
            goto failed;
        }

        if ((d[0] == '.' || d[0] == 0xe2 || d[0] == 0xef)
            && al_dot_segment(d, dlen))
        {
            *why = "dot segment";
            goto failed;
        }

        if (al_drive_segment(d, dlen) != 0) {
            if (!drives || al_drive_dots(d, dlen)) {
                *why = "drive letter";
                goto failed;
            }

            path->drive |= (uint64_t) 1 << path->nseg;
        }

        d[dlen] = '\0';

        path->seg[path->nseg].data = (const char *) d;
        path->seg[path->nseg].len = dlen;
        path->nseg++;

        used += dlen + 1;
        p = e;
    }

    return 0;

failed:

    path->nseg = 0;
    path->drive = 0;
    return -1;
}


int
al_query_parse(al_query_t *query, const char *raw, size_t len,
    const char **why)
{
    size_t                used, nlen, vlen, i;
    const unsigned char  *p, *end, *e, *eq, *nend;
    unsigned char        *name, *value;
    al_query_param_t     *qp;

    query->nparam = 0;

    if (len == 0) {
        return 0;
    }

    if (raw == NULL) {
        *why = "invalid query";
        return -1;
    }

    if (len > AL_QUERY_MAX) {
        *why = "query too long";
        return -1;
    }

    p = (const unsigned char *) raw;
    end = p + len;
    used = 0;

    for ( ;; ) {
        if (p == end || *p == '&') {
            *why = "empty query item";
            goto failed;
        }

        e = memchr(p, '&', (size_t) (end - p));
        if (e == NULL) {
            e = end;
        }

        if (query->nparam == AL_QUERY_PARAMS_MAX) {
            *why = "too many query parameters";
            goto failed;
        }

        eq = memchr(p, '=', (size_t) (e - p));
        if (eq == p) {
            *why = "empty parameter name";
            goto failed;
        }

        /* two NULs; decoding never grows the item */

        if ((size_t) (e - p) + 2 > sizeof(query->buf) - used) {
            *why = "query too long";
            goto failed;
        }

        name = (unsigned char *) query->buf + used;
        nend = (eq != NULL) ? eq : e;

        if (al_decode(p, (size_t) (nend - p), 1, name, &nlen, why) != 0) {
            goto failed;
        }

        name[nlen] = '\0';
        value = name + nlen + 1;
        vlen = 0;

        if (eq != NULL) {
            if (al_decode(eq + 1, (size_t) (e - eq - 1), 1, value, &vlen,
                          why)
                != 0)
            {
                goto failed;
            }
        }

        value[vlen] = '\0';

        for (i = 0; i < query->nparam; i++) {
            if (query->param[i].name.len == nlen
                && memcmp(query->param[i].name.data, name, nlen) == 0)
            {
                *why = "duplicate query parameter";
                goto failed;
            }
        }

        qp = &query->param[query->nparam++];
        qp->name.data = (const char *) name;
        qp->name.len = nlen;
        qp->value.data = (const char *) value;
        qp->value.len = vlen;

        used += nlen + vlen + 2;

        if (e == end) {
            break;
        }

        p = e + 1;
    }

    return 0;

failed:

    query->nparam = 0;
    return -1;
}


size_t
al_uri_escape(char *out, size_t cap, const char *s, size_t len, int query)
{
    char      esc[3];
    size_t    n, i, j;
    unsigned  c;

    n = 0;

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        /* like snprintf: the output is a prefix of the full encoding */

        if (al_escape_keep(c, query)) {
            if (n < cap) {
                out[n] = (char) c;
            }

            n++;
            continue;
        }

        esc[0] = '%';
        esc[1] = al_hex_upper[c >> 4];
        esc[2] = al_hex_upper[c & 0x0f];

        for (j = 0; j < 3; j++, n++) {
            if (n < cap) {
                out[n] = esc[j];
            }
        }
    }

    return n;
}


/*
 * Decodes one path segment or one query name or value into out, which has
 * room for at least len bytes.  Raw bytes are checked against the set the
 * context allows, escapes are decoded once, and the decoded bytes are
 * checked for what a second decoder or a different parser would read
 * otherwise.
 */

static int
al_decode(const unsigned char *p, size_t len, int query, unsigned char *out,
    size_t *outlen, const char **why)
{
    int          hi, lo;
    size_t       i, n;
    unsigned     c, allowed, plus, high, same;
    const char  *like;

    allowed = query ? AL_C_QUERY : AL_C_PATH;
    plus = query ? '+' : 0x100;             /* '+' is a space in a query */
    high = 0;                               /* only escapes go above 0x7f */

    /*
     * Most segments are plain: the leading run of bytes that stand for
     * themselves (allowed raw, neither '%' nor a query's '+') is found
     * first and copied at once; the loop below takes the rest.
     */

    same = query ? AL_C_QKEEP : AL_C_PATH;

    for (i = 0; i < len && (al_class[p[i]] & same); i++) {
        /* void */
    }

    memcpy(out, p, i);
    n = i;

    for ( /* void */ ; i < len; i++) {
        c = p[i];

        if (c != '%') {
            if (!(al_class[c] & allowed)) {
                *why = al_raw_refusal(c);
                return -1;
            }

            out[n++] = (unsigned char) (c == plus ? ' ' : c);
            continue;
        }

        if (len - i < 3) {
            *why = "invalid percent escape";
            return -1;
        }

        hi = al_hex(p[i + 1]);
        lo = al_hex(p[i + 2]);

        if (hi < 0 || lo < 0) {
            *why = "invalid percent escape";
            return -1;
        }

        c = (unsigned) (hi << 4 | lo);
        i += 2;

        if (c < 0x20 || c == 0x7f) {
            *why = "control character";
            return -1;
        }

        if (c == '%') {
            *why = "double encoding";
            return -1;
        }

        if (!query && c == '/') {
            *why = "encoded slash";
            return -1;
        }

        if (!query && c == '\\') {
            *why = "encoded backslash";
            return -1;
        }

        /*
         * a proxy that decodes the path and sends it on as it reads it
         * (nginx's proxy_pass with a URI) hands a servlet container a
         * raw ';', a path parameter it cuts off: "..%3Bx" is ".."
         */

        if (!query && c == ';') {
            *why = "encoded semicolon";
            return -1;
        }

        high |= c;
        out[n++] = (unsigned char) c;
    }

    if ((high & 0x80) && !al_utf8_valid(out, n)) {
        *why = "invalid utf-8";
        return -1;
    }

    if (!query && (high & 0x80)) {
        like = al_separator_like(out, n);

        if (like != NULL) {
            *why = like;
            return -1;
        }
    }

    *outlen = n;

    return 0;
}


static const char *
al_raw_refusal(unsigned c)
{
    if (c < 0x20 || c == 0x7f) {
        return "control character";
    }

    if (c >= 0x80) {
        return "non-ascii byte";
    }

    switch (c) {
    case '\\':
        return "backslash";
    case ';':
        return "semicolon";
    case '#':
        return "fragment";
    }

    return "invalid character";
}


static int
al_hex(unsigned c)
{
    if (c >= '0' && c <= '9') {
        return (int) (c - '0');
    }

    if (c >= 'a' && c <= 'f') {
        return (int) (c - 'a' + 10);
    }

    if (c >= 'A' && c <= 'F') {
        return (int) (c - 'A' + 10);
    }

    return -1;
}


/*
 * Well-formed UTF-8 as in RFC 3629, table 3-7 of Unicode: no overlong
 * forms, no surrogates, nothing above U+10FFFF, no truncated sequences.
 */

static int
al_utf8_valid(const unsigned char *p, size_t len)
{
    size_t    i, n, k;
    unsigned  c, lo, hi;

    i = 0;

    while (i < len) {
        c = p[i];

        if (c < 0x80) {
            i++;
            continue;
        }

        lo = 0x80;
        hi = 0xbf;

        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;

        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            if (c == 0xe0) {
                lo = 0xa0;
            } else if (c == 0xed) {
                hi = 0x9f;
            }

        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            if (c == 0xf0) {
                lo = 0x90;
            } else if (c == 0xf4) {
                hi = 0x8f;
            }

        } else {
            return 0;
        }

        if (len - i - 1 < n) {
            return 0;
        }

        /* the first continuation byte carries the extra bounds */

        if (p[i + 1] < lo || p[i + 1] > hi) {
            return 0;
        }

        for (k = 2; k <= n; k++) {
            if (p[i + k] < 0x80 || p[i + k] > 0xbf) {
                return 0;
            }
        }

        i += n + 1;
    }

    return 1;
}


/*
 * 1 when a decoded segment is dot-likes and space-likes, a dot-like
 * first.  A '+' counts as a space: the segment goes out with it as %2B,
 * but a proxy that decodes the path and sends it on (nginx's proxy_pass
 * with a URI re-escapes only ' ', '#', '%' and '?') hands the upstream a
 * raw '+', which one that decodes its path as a form reads as a space:
 * "..+" is ".. ", which Windows trims to "..".  The segment is
 * well-formed UTF-8 here, as for al_separator_like().
 */

static int
al_dot_segment(const unsigned char *p, size_t len)
{
    size_t  i, n;

    for (i = 0; i < len; i += n) {
        n = al_char_like(p + i, len - i, '.', al_nfkc_dots,
                         al_nelts(al_nfkc_dots));

        if (n == 0) {
            if (i == 0) {
                return 0;
            }

            if (p[i] == '+') {
                n = 1;

            } else {
                n = al_char_like(p + i, len - i, ' ', al_nfkc_spaces,
                                 al_nelts(al_nfkc_spaces));
            }

            if (n == 0) {
                return 0;
            }
        }
    }

    return 1;
}


/*
 * The length of the drive a decoded segment starts with, what Windows
 * reads as one: a letter, an ASCII one or any character above U+007F,
 * and ':' or one of its NFKC and best-fit look-alikes; 0 when it starts
 * with none.  Well-formed UTF-8, as for al_dot_segment().
 */

static size_t
al_drive_segment(const unsigned char *p, size_t len)
{
    size_t    n, k;
    uint32_t  c;

    if (len < 2) {
        return 0;
    }

    if (p[0] < 0x80) {
        if (!((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z')))
        {
            return 0;
        }

        n = 1;

    } else {
        (void) al_utf8_char(p, len, &n);
    }

    if (n >= len) {
        return 0;
    }

    if (p[n] < 0x80) {
        return (p[n] == ':') ? n + 1 : 0;
    }

    c = al_utf8_char(p + n, len - n, &k);

    if (al_char_in(c, al_nfkc_colons, al_nelts(al_nfkc_colons))
        || al_char_in(c, al_bestfit_colons, al_nelts(al_bestfit_colons)))
    {
        return n + k;
    }

    return 0;
}


/*
 * 1 when what follows a segment's drives is a dot segment: "C:..",
 * "C:.", "c:C:...", or with look-alikes, "C" U+FF1A U+2025, which a
 * Windows upstream reads as the parent (or the current) folder on that
 * drive: a param that takes a drive ("A:B") still never names one.
 */

static int
al_drive_dots(const unsigned char *p, size_t len)
{
    size_t  n;

    for ( ;; ) {
        n = al_drive_segment(p, len);
        if (n == 0) {
            break;
        }

        p += n;
        len -= n;
    }

    return len > 0 && al_dot_segment(p, len);
}


/*
 * The length of the character at p when it is ascii or one of set[] (the
 * dot-likes, the space-likes), else 0.
 */

static size_t
al_char_like(const unsigned char *p, size_t len, unsigned ascii,
    const uint32_t *set, size_t n)
{
    size_t    k;
    uint32_t  c;

    if (p[0] == ascii) {
        return 1;
    }

    c = al_utf8_char(p, len, &k);

    return al_char_in(c, set, n) ? k : 0;
}


/*
 * The refusal when the segment has a character NFKC or best fit turns
 * into '/' or '\', or into '%', else NULL.
 */

static const char *
al_separator_like(const unsigned char *p, size_t len)
{
    size_t    i, n;
    uint32_t  c;

    for (i = 0; i < len; i += n) {
        c = al_utf8_char(p + i, len - i, &n);

        if (c < 0x80) {
            continue;
        }

        if (al_char_in(c, al_nfkc_slashes, al_nelts(al_nfkc_slashes))
            || al_char_in(c, al_bestfit_slashes,
                          al_nelts(al_bestfit_slashes)))
        {
            return "slash-like character";
        }

        if (al_char_in(c, al_nfkc_percents, al_nelts(al_nfkc_percents))
            || al_char_in(c, al_bestfit_percents,
                          al_nelts(al_bestfit_percents)))
        {
            return "percent-like character";
        }
    }

    return NULL;
}


/*
 * The code point of the UTF-8 sequence at p, its length in *n.  Only
 * called on bytes al_utf8_valid() accepted; a sequence cut short (never
 * seen) is read as one byte, U+FFFD, so the caller still moves on.
 */

static uint32_t
al_utf8_char(const unsigned char *p, size_t len, size_t *n)
{
    size_t    i;
    uint32_t  c;

    c = p[0];

    if (c < 0x80) {
        *n = 1;
        return c;
    }

    if (c < 0xe0) {
        *n = 2;
        c &= 0x1f;

    } else if (c < 0xf0) {
        *n = 3;
        c &= 0x0f;

    } else {
        *n = 4;
        c &= 0x07;
    }

    if (*n > len) {
        *n = 1;
        return 0xfffd;
    }

    for (i = 1; i < *n; i++) {
        c = c << 6 | (p[i] & 0x3f);
    }

    return c;
}


static int
al_char_in(uint32_t c, const uint32_t *set, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (set[i] == c) {
            return 1;
        }
    }

    return 0;
}


/*
 * Writes s with every character of al_folds[] replaced by its ASCII, as
 * an upstream that normalizes reads it, to out (room for len bytes: no
 * character grows); with out NULL only counts.  Returns the number of
 * characters replaced, the length written in *outlen.  s is valid UTF-8
 * (a sequence cut short is copied as it is).
 */

size_t
al_fold_like(const char *s, size_t len, char *out, size_t *outlen)
{
    size_t                i, k, m, n, folded;
    const char           *a;
    const unsigned char  *p;

    p = (const unsigned char *) s;
    folded = 0;
    m = 0;

    for (i = 0; i < len; i += k) {
        k = 1;
        a = NULL;

        if (p[i] >= 0x80) {
            a = al_fold_char(al_utf8_char(p + i, len - i, &k));
        }

        if (a != NULL) {
            folded++;
        }

        if (out == NULL) {
            continue;
        }

        if (a != NULL) {
            n = strlen(a);              /* no more than k: see al_folds */
            memcpy(out + m, a, n);
            m += n;

        } else {
            memcpy(out + m, p + i, k);
            m += k;
        }
    }

    if (outlen != NULL) {
        *outlen = m;
    }

    return folded;
}


/* the ASCII of a character of al_folds[]; NULL: not one */

static const char *
al_fold_char(uint32_t c)
{
    size_t  lo, hi, mid;

    lo = 0;
    hi = al_nelts(al_folds);

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (al_folds[mid].c == c) {
            return al_folds[mid].ascii;
        }

        if (al_folds[mid].c < c) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    return NULL;
}
