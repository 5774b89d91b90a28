/*
 * al_path.c: the request-target normalizer.  Hostile targets must be
 * refused with the reason an operator will see in the log; good targets
 * must decode to exactly the expected segments and parameters; and the
 * re-encoding must parse back to the same thing.
 */

#include <stdio.h>
#include <string.h>

#include "airlock.h"

#include "bestfit.h"
#include "nfkc.h"
#include "tap.h"


typedef struct {
    const char  *target;
    size_t       len;                       /* 0: strlen(target) */
    const char  *why;
} bad_t;

typedef struct {
    const char  *target;
    size_t       nseg;
    const char  *seg[6];
} good_path_t;

typedef struct {
    const char  *target;
    size_t       nparam;
    const char  *kv[8];                     /* name, value, ... */
} good_query_t;

typedef struct {
    const char  *in;
    size_t       len;                       /* 0: strlen(in) */
    int          query;
    const char  *out;
} escape_t;

typedef struct {
    const char  *target;
    uint64_t     drive;                     /* the segments with a drive */
    const char  *seg;                       /* the last, decoded */
} drive_kept_t;

typedef struct {
    const char  *before;                    /* the code point goes between */
    const char  *after;
    unsigned     space:1;                   /* a space-like ends a dot run */
    unsigned     dot:1;                     /* a dot-like starts one */
    unsigned     colon:1;                   /* after a letter: a colon-like
                                               makes a drive */
    unsigned     drive:1;                   /* before ':': any is a drive */
} nfkc_case_t;


#define NFKC_HAS(set, cp)                                                 \
    nfkc_has(set, sizeof(set) / sizeof((set)[0]), cp)


static const char *printable(const char *s, size_t len);
static void test_bad_targets(void);
static void test_good_paths(void);
static void test_good_queries(void);
static void test_limits(void);
static void test_direct(void);
static void test_escape(void);
static void test_escape_plain(void);
static void test_round_trip(void);
static void test_nfkc(void);
static void test_fold(void);
static void test_drives(void);
static void test_drives_nfkc(void);
static const char *fold_want(uint32_t cp);
static size_t nfkc_utf8(char *out, uint32_t cp);
static const char *nfkc_want(const nfkc_case_t *c, uint32_t cp);
static int nfkc_has(const uint32_t *set, size_t n, uint32_t cp);
static size_t nfkc_escape(char *out, uint32_t cp);


static al_path_t   path;
static al_query_t  query;


static const bad_t  bad[] = {

    /* dot segments, raw and encoded, in every case combination */
    { "/.", 0, "dot segment" },
    { "/..", 0, "dot segment" },
    { "/a/./b", 0, "dot segment" },
    { "/a/../b", 0, "dot segment" },
    { "/a/..", 0, "dot segment" },
    { "/%2e", 0, "dot segment" },
    { "/%2E", 0, "dot segment" },
    { "/a/%2e%2e/b", 0, "dot segment" },
    { "/a/%2E%2E/b", 0, "dot segment" },
    { "/a/%2e%2E/b", 0, "dot segment" },
    { "/a/%2E%2e/b", 0, "dot segment" },
    { "/a/.%2e/b", 0, "dot segment" },
    { "/a/.%2E/b", 0, "dot segment" },
    { "/a/%2e./b", 0, "dot segment" },
    { "/a/%2E./b", 0, "dot segment" },
    { "/a/%2e?x=1", 0, "dot segment" },

    /*
     * what an upstream reads as a dot segment: Windows (IIS, ASP.NET)
     * trims trailing dots and spaces; NFKC turns U+2024 ONE DOT LEADER,
     * U+2025 TWO DOT LEADER, U+2026 HORIZONTAL ELLIPSIS, U+FE19 and
     * U+FE30 (their vertical forms), U+FE52 SMALL FULL STOP and U+FF0E
     * FULLWIDTH FULL STOP into dots, and U+00A0, U+2000..U+200A, U+3000
     * and the other White_Space characters are spaces to NFKC or to
     * .NET's trimming (test_nfkc() tries every code point)
     */
    { "/a/..%20", 0, "dot segment" },
    { "/a/..%20%20/b", 0, "dot segment" },
    { "/a/.%20", 0, "dot segment" },
    { "/a/...", 0, "dot segment" },
    { "/a/..%2e/b", 0, "dot segment" },
    { "/a/.%20.%20", 0, "dot segment" },

    /*
     * a '+' is a space to a form decoder behind a proxy that decodes the
     * path and sends a raw '+' on (nginx's proxy_pass with a URI)
     */
    { "/a/..+", 0, "dot segment" },
    { "/a/.+/b", 0, "dot segment" },
    { "/a/..%2B/b", 0, "dot segment" },
    { "/a/..%2b", 0, "dot segment" },
    { "/a/.+.+", 0, "dot segment" },
    { "/a/...+%20", 0, "dot segment" },
    { "/a/..+%C2%A0", 0, "dot segment" },
    { "/%E2%80%A4", 0, "dot segment" },
    { "/%E2%80%A4%E2%80%A4/x", 0, "dot segment" },
    { "/%e2%80%a4.", 0, "dot segment" },
    { "/.%E2%80%A4", 0, "dot segment" },
    { "/%E2%80%A5", 0, "dot segment" },
    { "/%E2%80%A6", 0, "dot segment" },
    { "/%EF%B9%92%EF%B9%92", 0, "dot segment" },
    { "/%EF%BC%8E", 0, "dot segment" },
    { "/%EF%BC%8E%EF%BC%8E%20", 0, "dot segment" },
    { "/.%EF%BC%8E", 0, "dot segment" },
    { "/%EF%B8%B0", 0, "dot segment" },
    { "/%EF%B8%99", 0, "dot segment" },
    { "/%EF%B8%B0%EF%B8%99/x", 0, "dot segment" },
    { "/..%E3%80%80", 0, "dot segment" },
    { "/..%C2%A0", 0, "dot segment" },
    { "/..%C2%85", 0, "dot segment" },
    { "/.%E1%9A%80", 0, "dot segment" },
    { "/..%E2%80%A8%E2%80%A9", 0, "dot segment" },
    { "/.%E2%80%AF.%E2%81%9F", 0, "dot segment" },
    { "/%E2%80%A5%E2%80%83", 0, "dot segment" },
    { "/%E2%80%A5%E2%80%87%20", 0, "dot segment" },

    /* and as a separator: NFKC turns U+FF0F into '/', U+FF3C and U+FE68
       into '\', U+2100, U+2101, U+2105 and U+2106 into "a/c", "a/s",
       "c/o" and "c/u", anywhere in a segment */
    { "/x%EF%BC%8F..%EF%BC%8F..", 0, "slash-like character" },
    { "/a%EF%BC%8Fb", 0, "slash-like character" },
    { "/a%EF%BC%BCb", 0, "slash-like character" },
    { "/a%EF%B9%A8b", 0, "slash-like character" },
    { "/%E2%84%80", 0, "slash-like character" },
    { "/x%E2%84%85y", 0, "slash-like character" },
    { "/a%E2%84%81", 0, "slash-like character" },
    { "/caf%C3%A9%E2%84%86", 0, "slash-like character" },

    /* and what Windows' best fit makes a '/', '\' or '%' of: U+2215
       DIVISION SLASH, U+2044 FRACTION SLASH, U+2216 SET MINUS, U+00A5
       YEN SIGN (cp932), U+20A9 WON SIGN (cp949), U+00B4 ACUTE ACCENT
       (cp1253); U+FF05 FULLWIDTH and U+066A ARABIC PERCENT SIGN */
    { "/..%E2%88%95..%E2%88%95etc", 0, "slash-like character" },
    { "/a%E2%88%95b", 0, "slash-like character" },
    { "/..%E2%81%84win.ini", 0, "slash-like character" },
    { "/a%E2%88%96b", 0, "slash-like character" },
    { "/..%C2%A5..%C2%A5x", 0, "slash-like character" },
    { "/..%E2%82%A9x", 0, "slash-like character" },
    { "/a%C2%B4b", 0, "slash-like character" },
    { "/a%EF%BC%852e%EF%BC%852e", 0, "percent-like character" },
    { "/..%EF%BC%852f", 0, "percent-like character" },
    { "/a%D9%AA2f", 0, "percent-like character" },

    /* and NFKC: U+FE6A SMALL PERCENT SIGN */
    { "/..%EF%B9%AA2f..", 0, "percent-like character" },

    /* encoded separators and double encoding */
    { "/a%2Fb", 0, "encoded slash" },
    { "/a%2fb", 0, "encoded slash" },
    { "/..%2f..%2fetc/passwd", 0, "encoded slash" },
    { "/a%5Cb", 0, "encoded backslash" },
    { "/a%5cb", 0, "encoded backslash" },
    { "/a%3Bb", 0, "encoded semicolon" },
    { "/a%3bb", 0, "encoded semicolon" },
    { "/..%3Bx/WEB-INF/web.xml", 0, "encoded semicolon" },
    { "/a\\b", 0, "backslash" },
    { "/..\\..\\etc", 0, "backslash" },
    { "/%252e%252e/x", 0, "double encoding" },
    { "/a%25", 0, "double encoding" },
    { "/a%252Fb", 0, "double encoding" },

    /* control bytes, encoded and raw */
    { "/a%00b", 0, "control character" },
    { "/a%0d%0aSet-Cookie:x", 0, "control character" },
    { "/a%0D%0A", 0, "control character" },
    { "/a%09", 0, "control character" },
    { "/a%7f", 0, "control character" },
    { "/a\0b", 4, "control character" },
    { "/a\rb", 0, "control character" },
    { "/a\nb", 0, "control character" },
    { "/a\x7f", 0, "control character" },

    /* UTF-8 */
    { "/%C0%AE%C0%AE/x", 0, "invalid utf-8" },
    { "/a%C0%AFb", 0, "invalid utf-8" },
    { "/a%c1%bf", 0, "invalid utf-8" },
    { "/%E0%80%AE", 0, "invalid utf-8" },
    { "/%E0%80%AF", 0, "invalid utf-8" },
    { "/%F0%80%80%AF", 0, "invalid utf-8" },
    { "/%ED%A0%80", 0, "invalid utf-8" },
    { "/%ED%BF%BF", 0, "invalid utf-8" },
    { "/%F4%90%80%80", 0, "invalid utf-8" },
    { "/%F5%80%80%80", 0, "invalid utf-8" },
    { "/%FF", 0, "invalid utf-8" },
    { "/%C3", 0, "invalid utf-8" },
    { "/%C3/x", 0, "invalid utf-8" },
    { "/%E2%82", 0, "invalid utf-8" },
    { "/%C3%28", 0, "invalid utf-8" },
    { "/%80", 0, "invalid utf-8" },
    { "/%E2%28%A1", 0, "invalid utf-8" },
    { "/caf\xc3\xa9", 0, "non-ascii byte" },
    { "/a\x80", 0, "non-ascii byte" },
    { "/\xff", 0, "non-ascii byte" },

    /* path params, empty segments, shape */
    { "/a;b", 0, "semicolon" },
    { "/a;jsessionid=1/b", 0, "semicolon" },
    { "/a/;/b", 0, "semicolon" },
    { "//", 0, "empty segment" },
    { "//a", 0, "empty segment" },
    { "/a//b", 0, "empty segment" },
    { "/a/", 0, "empty segment" },
    { "/a/?x=1", 0, "empty segment" },
    { "", 0, "not origin-form" },
    { "a/b", 0, "not origin-form" },
    { "http://x/y", 0, "not origin-form" },
    { "*", 0, "not origin-form" },
    { "?a=1", 0, "not origin-form" },
    { " /a", 0, "not origin-form" },
    { "/a#b", 0, "fragment" },
    { "/a?x=1#b", 0, "fragment" },
    { "/a#", 0, "fragment" },

    /* escapes */
    { "/%zz", 0, "invalid percent escape" },
    { "/%4", 0, "invalid percent escape" },
    { "/a%", 0, "invalid percent escape" },
    { "/%4g", 0, "invalid percent escape" },
    { "/%%41", 0, "invalid percent escape" },
    { "/%4/b", 0, "invalid percent escape" },
    { "/% 4", 0, "invalid percent escape" },

    /* characters that must be escaped */
    { "/a b", 0, "invalid character" },
    { "/a\"b", 0, "invalid character" },
    { "/a<b", 0, "invalid character" },
    { "/a>b", 0, "invalid character" },
    { "/a^b", 0, "invalid character" },
    { "/a`b", 0, "invalid character" },
    { "/{x}", 0, "invalid character" },
    { "/a|b", 0, "invalid character" },
    { "/a}", 0, "invalid character" },
    { "/a[0]", 0, "invalid character" },

    /* queries */
    { "/a?x=1&x=2", 0, "duplicate query parameter" },
    { "/a?x=1&y=2&x", 0, "duplicate query parameter" },
    { "/a?x=1&%78=2", 0, "duplicate query parameter" },
    { "/a?a+b=1&a%20b=2", 0, "duplicate query parameter" },
    { "/a?x=1%0d%0aHost:%20evil", 0, "control character" },
    { "/a?x=%00", 0, "control character" },
    { "/a?x%0a=1", 0, "control character" },
    { "/a?x=\r\n", 0, "control character" },
    { "/a?x=1&&y=2", 0, "empty query item" },
    { "/a?&x=1", 0, "empty query item" },
    { "/a?x=1&", 0, "empty query item" },
    { "/a?&", 0, "empty query item" },
    { "/a?=1", 0, "empty parameter name" },
    { "/a?x=1&=2", 0, "empty parameter name" },
    { "/a?x=%252e", 0, "double encoding" },
    { "/a?x=%25", 0, "double encoding" },
    { "/a?x=1;y=2", 0, "semicolon" },
    { "/a?x=a b", 0, "invalid character" },
    { "/a?x=<script>", 0, "invalid character" },
    { "/a?x={}", 0, "invalid character" },
    { "/a?x=a\\b", 0, "backslash" },
    { "/a?x=\xc3\xa9", 0, "non-ascii byte" },
    { "/a?x=%C0%AF", 0, "invalid utf-8" },
    { "/a?x=%ED%A0%80", 0, "invalid utf-8" },
    { "/a?x=%zz", 0, "invalid percent escape" },
    { "/a?x=%4", 0, "invalid percent escape" },
    { "/a%2f?x=1", 0, "encoded slash" },

    /*
     * a cp932 (Shift-JIS) pair whose trail byte is 0x5C: one character
     * to a Japanese-locale Windows upstream, '\' to a reader of bytes;
     * never forwarded, whichever half is escaped (the lead byte alone is
     * no UTF-8)
     */
    { "/a%81%5C", 0, "encoded backslash" },
    { "/%83%5c/b", 0, "encoded backslash" },
    { "/a%81\\x", 0, "backslash" },
    { "/a\x81\\", 0, "non-ascii byte" },
    { "/%95", 0, "invalid utf-8" },
    { "/%E0%5C", 0, "encoded backslash" },
    { "/a?x=%81%5C", 0, "invalid utf-8" },
    { "/a?x=%FC%5Cb", 0, "invalid utf-8" },
    { "/a?x=%81\\", 0, "backslash" },

    /*
     * a drive: Windows roots "C:x" on drive C's current directory, and
     * .NET's Path.Combine(root, "C:x") is "C:x", root left out; the
     * colon as NFKC or best fit reads it, the letter any non-ASCII
     * character (test_nfkc() tries every code point in both places)
     */
    { "/files/C:x", 0, "drive letter" },
    { "/files/c:..", 0, "drive letter" },
    { "/Z:", 0, "drive letter" },
    { "/files/C%3Aappsettings.json", 0, "drive letter" },
    { "/files/%43%3a", 0, "drive letter" },
    { "/C%EF%BC%9Ax", 0, "drive letter" },
    { "/C%E2%88%B6x", 0, "drive letter" },
    { "/C%D6%89x", 0, "drive letter" },
    { "/C%E2%A9%B4x", 0, "drive letter" },
    { "/%EF%BC%A3:x", 0, "drive letter" },
    { "/%C4%86:x", 0, "drive letter" },
    { "/files/C:x?q=1", 0, "drive letter" }
};


/*
 * al_target_parse_drives(), for a route whose param takes a drive: the
 * segment is kept and marked, whatever the colon and letter look like
 */
static const drive_kept_t  drive_kept[] = {
    { "/values/A:B", 0x2, "A:B" },
    { "/values/A:B2", 0x2, "A:B2" },
    { "/values/A1:B2", 0, "A1:B2" },                /* no drive */
    { "/values/Sheet1!A:B", 0, "Sheet1!A:B" },
    { "/models/x:generateContent", 0x2, "x:generateContent" },
    { "/root:/X:", 0x2, "X:" },
    { "/Z:", 0x1, "Z:" },
    { "/A:B/values/x:y", 0x5, "x:y" },
    { "/files/C:x?q=1", 0x2, "C:x" },
    { "/files/C%3Aappsettings.json", 0x2, "C:appsettings.json" },
    { "/files/%43%3a", 0x2, "C:" },
    { "/C%EF%BC%9Ax", 0x1, "C\xef\xbc\x9ax" },
    { "/C%E2%88%B6x", 0x1, "C\xe2\x88\xb6x" },
    { "/%EF%BC%A3:x", 0x1, "\xef\xbc\xa3:x" },
    { "/%C4%86:x", 0x1, "\xc4\x86:x" },
    { "/C:x..", 0x1, "C:x.." },                     /* a name */
    { "/C:..x", 0x1, "C:..x" },
    { "/C:%20..", 0x1, "C: .." }
};

/*
 * and still refused: a drive and a dot segment ("C:..", the parent of
 * drive C's current folder), whatever the colon, the letter and the dots
 * look like, and every other rule
 */
static const bad_t  drive_refused[] = {
    { "/files/c:..", 0, "drive letter" },
    { "/files/C:.", 0, "drive letter" },
    { "/files/C:...", 0, "drive letter" },
    { "/files/c:%2e%2e", 0, "drive letter" },
    { "/files/%43%3A%2E%2E", 0, "drive letter" },
    { "/files/C:..%20", 0, "drive letter" },
    { "/files/C:..+", 0, "drive letter" },
    { "/files/C:.%20.%20", 0, "drive letter" },
    { "/files/C:%E2%80%A5", 0, "drive letter" },
    { "/files/C:%EF%BC%8E%EF%BC%8E", 0, "drive letter" },
    { "/files/C%EF%BC%9A..", 0, "drive letter" },
    { "/files/C%E2%88%B6..", 0, "drive letter" },
    { "/files/C%D6%89..", 0, "drive letter" },
    { "/files/%EF%BC%A3:..", 0, "drive letter" },
    { "/files/c:C:..", 0, "drive letter" },
    { "/files/C:x/..", 0, "dot segment" },
    { "/files/C:x%2F..", 0, "encoded slash" },
    { "/files/C:x%5C..", 0, "encoded backslash" },
    { "/files/C:x%252e", 0, "double encoding" },
    { "/files/C:x%3B..", 0, "encoded semicolon" },
    { "/files/C:x%00", 0, "control character" },
    { "/files/C:x%EF%BC%8F..", 0, "slash-like character" },
    { "/files/C:x//y", 0, "empty segment" },
    { "/files/C:x#y", 0, "fragment" }
};


static const good_path_t  good_paths[] = {
    { "/", 0, { NULL } },
    { "/a", 1, { "a" } },
    { "/repos/acme/widgets/pulls", 4,
      { "repos", "acme", "widgets", "pulls" } },
    { "/caf%C3%A9", 1, { "caf\xc3\xa9" } },
    { "/caf%c3%a9", 1, { "caf\xc3\xa9" } },
    { "/%E2%82%AC/%F0%9F%98%80", 2, { "\xe2\x82\xac", "\xf0\x9f\x98\x80" } },
    { "/%EF%BF%BD", 1, { "\xef\xbf\xbd" } },
    { "/%F4%8F%BF%BF", 1, { "\xf4\x8f\xbf\xbf" } },
    { "/a%20b/c%3Fd%23e", 2, { "a b", "c?d#e" } },
    { "/%41%62c", 1, { "Abc" } },
    { "/...a/a../..a", 3, { "...a", "a..", "..a" } },
    { "/%20../a.%20.", 2, { " ..", "a. ." } },
    { "/%E2%80%A4x/x%EF%BC%8E", 2,
      { "\xe2\x80\xa4x", "x\xef\xbc\x8e" } },
    { "/%E2%80%A7/%EF%BC%8D", 2, { "\xe2\x80\xa7", "\xef\xbc\x8d" } },
    { "/%E2%92%88/%E3%8F%82", 2, { "\xe2\x92\x88", "\xe3\x8f\x82" } },
    { "/%C2%A0../a%E3%80%80", 2, { "\xc2\xa0..", "a\xe3\x80\x80" } },
    { "/..a%C2%A0/%E2%84%84", 2, { "..a\xc2\xa0", "\xe2\x84\x84" } },
    { "/.a/a.", 2, { ".a", "a." } },
    { "/+../..+a/.a+/c++", 4, { "+..", "..+a", ".a+", "c++" } },
    { "/v1/chat:completions", 2, { "v1", "chat:completions" } },
    { "/user@host/!$&'()*+,=", 2, { "user@host", "!$&'()*+,=" } },
    { "/-._~", 1, { "-._~" } },
    { "/a?", 1, { "a" } },
    { "/a/b?x=1", 2, { "a", "b" } },
    /* names: in cp932 their trail byte is 0x5C, which Windows reads as
       part of the character (U+30BD, U+8868, U+80FD) */
    { "/%E3%82%BD/%E8%A1%A8..", 2, { "\xe3\x82\xbd", "\xe8\xa1\xa8.." } },
    { "/%E8%83%BD", 1, { "\xe8\x83\xbd" } },
    /* no drive: two letters, a digit, no letter, the colon further on */
    { "/ab:c/1:x/:x/xy:C:/ab%3A", 5, { "ab:c", "1:x", ":x", "xy:C:", "ab:" } },
    { "/C%EF%BC%A1", 1, { "C\xef\xbc\xa1" } }
};


static const good_query_t  good_queries[] = {
    { "/a", 0, { NULL } },
    { "/a?", 0, { NULL } },
    { "/a?x=1", 1, { "x", "1" } },
    { "/a?x=1&y=two", 2, { "x", "1", "y", "two" } },
    { "/a?q=hello+world", 1, { "q", "hello world" } },
    { "/a?q=a%2Bb", 1, { "q", "a+b" } },
    { "/a?flag", 1, { "flag", "" } },
    { "/a?x=", 1, { "x", "" } },
    { "/a?x=a=b", 1, { "x", "a=b" } },
    { "/a?path=/x/y?z", 1, { "path", "/x/y?z" } },
    { "/a?x=%3B%26%3D", 1, { "x", ";&=" } },
    { "/a?x=%2F%5C", 1, { "x", "/\\" } },
    { "/a?n=caf%C3%A9", 1, { "n", "caf\xc3\xa9" } },
    { "/a?a%20b=1&a+c=2", 2, { "a b", "1", "a c", "2" } },
    { "/a?X=1&x=2", 2, { "X", "1", "x", "2" } }
};


static const escape_t  escapes[] = {
    { "abcXYZ019-._~", 0, 0, "abcXYZ019-._~" },
    { "abcXYZ019-._~", 0, 1, "abcXYZ019-._~" },
    { "!$&'()*+,=:@", 0, 0, "!$&'()*%2B,=:@" },
    { "!$&'()*+,=:@", 0, 1, "!$%26'()*%2B,%3D:@" },
    { "/?", 0, 0, "%2F%3F" },
    { "/?", 0, 1, "/?" },
    { ";", 0, 0, "%3B" },
    { ";", 0, 1, "%3B" },
    { "a+b", 0, 0, "a%2Bb" },
    { "a+b", 0, 1, "a%2Bb" },
    { "c++", 0, 0, "c%2B%2B" },
    { "a b", 0, 0, "a%20b" },
    { "a b", 0, 1, "a%20b" },
    { "%#\\", 0, 0, "%25%23%5C" },
    { "caf\xc3\xa9", 0, 0, "caf%C3%A9" },
    { "\0\x7f\xff", 3, 1, "%00%7F%FF" },
    { "", 0, 0, "" }
};


/* "/" cp "." is a dot segment when cp is a dot-like, "/a" cp "b" never */

static const nfkc_case_t  nfkc_cases[] = {
    { "/", "", 0, 1, 0, 0 },
    { "/..", "", 1, 1, 0, 0 },
    { "/.", "/x", 1, 1, 0, 0 },
    { "/", ".", 0, 1, 0, 0 },
    { "/", "%20", 0, 1, 0, 0 },
    { "/a", "b", 0, 0, 1, 0 },
    { "/..", "a", 0, 0, 0, 0 },
    { "/C", "", 0, 0, 1, 0 },
    { "/1", "x", 0, 0, 0, 0 },
    { "/x/", ":y", 0, 0, 0, 1 },
    { "/x/", "%3A", 0, 0, 0, 1 }
};


static const char *
printable(const char *s, size_t len)
{
    size_t         i, n;
    unsigned char  c;
    static char    buf[128];

    n = 0;

    for (i = 0; i < len && n + 5 < sizeof(buf); i++) {
        c = (unsigned char) s[i];

        if (c < 0x20 || c >= 0x7f || c == '#') {
            n += (size_t) snprintf(buf + n, sizeof(buf) - n, "\\x%02x", c);

        } else {
            buf[n++] = (char) c;
        }
    }

    if (i < len) {
        buf[n++] = '.';
        buf[n++] = '.';
    }

    buf[n] = '\0';

    return buf;
}


static void
test_bad_targets(void)
{
    int          rc;
    char         name[256];
    size_t       i, len;
    const char  *why;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        len = bad[i].len ? bad[i].len : strlen(bad[i].target);
        why = NULL;

        rc = al_target_parse(bad[i].target, len, &path, &query, &why);

        snprintf(name, sizeof(name), "refused: %s",
                 printable(bad[i].target, len));

        if (rc != -1) {
            tap_ok(0, name);
            continue;
        }

        tap_is_str(why, bad[i].why, name);
    }
}


static void
test_good_paths(void)
{
    int          ok;
    char         name[256];
    size_t       i, k, len;
    const char  *why, *t;

    for (i = 0; i < sizeof(good_paths) / sizeof(good_paths[0]); i++) {
        t = good_paths[i].target;
        len = strlen(t);
        why = NULL;

        snprintf(name, sizeof(name), "path: %s", printable(t, len));

        if (al_target_parse(t, len, &path, &query, &why) != 0) {
            tap_ok(0, name);
            tap_diag("why: ", why);
            continue;
        }

        ok = (path.nseg == good_paths[i].nseg);

        for (k = 0; ok && k < path.nseg; k++) {
            ok = path.seg[k].len == strlen(good_paths[i].seg[k])
                 && memcmp(path.seg[k].data, good_paths[i].seg[k],
                           path.seg[k].len) == 0
                 && path.seg[k].data[path.seg[k].len] == '\0';
        }

        tap_ok(ok, name);
    }
}


static void
test_good_queries(void)
{
    int          ok;
    char         name[256];
    size_t       i, k, len;
    const char  *why, *t, *n, *v;

    for (i = 0; i < sizeof(good_queries) / sizeof(good_queries[0]); i++) {
        t = good_queries[i].target;
        len = strlen(t);
        why = NULL;

        snprintf(name, sizeof(name), "query: %s", printable(t, len));

        if (al_target_parse(t, len, &path, &query, &why) != 0) {
            tap_ok(0, name);
            tap_diag("why: ", why);
            continue;
        }

        ok = (query.nparam == good_queries[i].nparam);

        for (k = 0; ok && k < query.nparam; k++) {
            n = good_queries[i].kv[2 * k];
            v = good_queries[i].kv[2 * k + 1];

            ok = query.param[k].name.len == strlen(n)
                 && memcmp(query.param[k].name.data, n, strlen(n)) == 0
                 && query.param[k].value.len == strlen(v)
                 && memcmp(query.param[k].value.data, v, strlen(v)) == 0
                 && query.param[k].name.data[strlen(n)] == '\0'
                 && query.param[k].value.data[strlen(v)] == '\0';
        }

        tap_ok(ok, name);
    }
}


static void
test_limits(void)
{
    int          rc;
    size_t       i, n;
    const char  *why;
    static char  buf[2 * AL_PATH_MAX + 2 * AL_QUERY_MAX];

    /* a path of exactly AL_PATH_MAX bytes is fine, one more is not */

    buf[0] = '/';
    memset(buf + 1, 'a', AL_PATH_MAX - 1);

    rc = al_target_parse(buf, AL_PATH_MAX, &path, &query, &why);
    tap_is_int(rc, 0, "path of AL_PATH_MAX bytes");
    tap_is_int((long) path.seg[0].len, AL_PATH_MAX - 1,
               "one long segment kept whole");

    buf[AL_PATH_MAX] = 'a';
    why = NULL;
    rc = al_target_parse(buf, AL_PATH_MAX + 1, &path, &query, &why);
    tap_ok(rc == -1, "path of AL_PATH_MAX + 1 bytes refused");
    tap_is_str(why, "path too long", "path too long");

    why = NULL;
    rc = al_path_parse(&path, buf, AL_PATH_MAX + 1, &why);
    tap_is_str(why, "path too long", "al_path_parse: path too long");

    /* the longest path of single-byte segments fills buf exactly */

    for (i = 0; i < AL_SEGMENTS_MAX; i++) {
        buf[2 * i] = '/';
        buf[2 * i + 1] = (char) ('a' + i % 26);
    }

    rc = al_target_parse(buf, 2 * AL_SEGMENTS_MAX, &path, &query, &why);
    tap_is_int(rc, 0, "AL_SEGMENTS_MAX segments");
    tap_is_int((long) path.nseg, AL_SEGMENTS_MAX, "all segments kept");

    buf[2 * AL_SEGMENTS_MAX] = '/';
    buf[2 * AL_SEGMENTS_MAX + 1] = 'z';
    why = NULL;
    rc = al_target_parse(buf, 2 * AL_SEGMENTS_MAX + 2, &path, &query, &why);
    tap_ok(rc == -1 && path.nseg == 0, "AL_SEGMENTS_MAX + 1 refused");
    tap_is_str(why, "too many segments", "too many segments");

    /* the query: AL_QUERY_MAX bytes, then one more */

    memcpy(buf, "/a?x=", 5);
    memset(buf + 5, 'v', AL_QUERY_MAX - 2);

    rc = al_target_parse(buf, 3 + AL_QUERY_MAX, &path, &query, &why);
    tap_is_int(rc, 0, "query of AL_QUERY_MAX bytes");
    tap_is_int((long) query.param[0].value.len, AL_QUERY_MAX - 2,
               "long value kept whole");

    buf[3 + AL_QUERY_MAX] = 'v';
    why = NULL;
    rc = al_target_parse(buf, 4 + AL_QUERY_MAX, &path, &query, &why);
    tap_ok(rc == -1, "query of AL_QUERY_MAX + 1 bytes refused");
    tap_is_str(why, "query too long", "query too long");

    /* AL_QUERY_PARAMS_MAX one-letter params, then one more */

    n = 3;
    memcpy(buf, "/a?", 3);

    for (i = 0; i < AL_QUERY_PARAMS_MAX; i++) {
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "%sp%zu",
                               i ? "&" : "", i);
    }

    rc = al_target_parse(buf, n, &path, &query, &why);
    tap_is_int(rc, 0, "AL_QUERY_PARAMS_MAX params");
    tap_is_int((long) query.nparam, AL_QUERY_PARAMS_MAX, "all params kept");

    n += (size_t) snprintf(buf + n, sizeof(buf) - n, "&extra");
    why = NULL;
    rc = al_target_parse(buf, n, &path, &query, &why);
    tap_ok(rc == -1 && query.nparam == 0, "AL_QUERY_PARAMS_MAX + 1 refused");
    tap_is_str(why, "too many query parameters", "too many query parameters");

    /* a full query of many items fits query->buf */

    n = 0;

    for (i = 0; i < AL_QUERY_PARAMS_MAX; i++) {
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "%sq%02zu=",
                               i ? "&" : "", i);
    }

    memset(buf + n, 'w', AL_QUERY_MAX - n);
    rc = al_query_parse(&query, buf, AL_QUERY_MAX, &why);
    tap_is_int(rc, 0, "query buffer holds a full query");
    tap_is_int((long) query.param[AL_QUERY_PARAMS_MAX - 1].value.len,
               (long) (AL_QUERY_MAX - n), "last value kept whole");
}


static void
test_direct(void)
{
    int          rc;
    const char  *why;

    why = NULL;
    rc = al_path_parse(&path, "/", 1, &why);
    tap_ok(rc == 0 && path.nseg == 0, "al_path_parse: / has no segments");

    rc = al_path_parse(&path, "a", 1, &why);
    tap_is_str(why, "not origin-form", "al_path_parse: no leading slash");

    why = NULL;
    rc = al_path_parse(&path, "/a?b", 4, &why);
    tap_is_str(why, "invalid character", "al_path_parse: raw ? refused");

    why = NULL;
    rc = al_path_parse(&path, "/a#b", 4, &why);
    tap_is_str(why, "fragment", "al_path_parse: raw # refused");

    /* a failed parse leaves nothing behind to be matched by mistake */

    rc = al_path_parse(&path, "/a/b/%2e%2e", 11, &why);
    tap_ok(rc == -1 && path.nseg == 0, "failed parse clears segments");

    why = NULL;
    rc = al_query_parse(&query, "", 0, &why);
    tap_ok(rc == 0 && query.nparam == 0, "al_query_parse: empty query");

    rc = al_query_parse(&query, "a=1&b=2", 7, &why);
    tap_ok(rc == 0 && query.nparam == 2, "al_query_parse: two params");

    rc = al_query_parse(&query, "a=1&a=2", 7, &why);
    tap_ok(rc == -1 && query.nparam == 0, "failed parse clears params");

    why = NULL;
    rc = al_query_parse(&query, "a=1#", 4, &why);
    tap_is_str(why, "fragment", "al_query_parse: raw # refused");

    /* a query parse failure fails the whole target */

    rc = al_target_parse("/a/b?x=1&x=1", 12, &path, &query, &why);
    tap_ok(rc == -1 && path.nseg == 0, "bad query clears the path too");
}


static void
test_escape(void)
{
    char         out[64], name[128];
    size_t       i, n, len, want;
    const char  *s;

    for (i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++) {
        s = escapes[i].in;
        len = escapes[i].len ? escapes[i].len : strlen(s);
        want = strlen(escapes[i].out);

        memset(out, 'X', sizeof(out));
        n = al_uri_escape(out, sizeof(out), s, len, escapes[i].query);

        snprintf(name, sizeof(name), "escape %s: %s",
                 escapes[i].query ? "query" : "path", printable(s, len));

        tap_ok(n == want && memcmp(out, escapes[i].out, want) == 0
               && out[want] == 'X', name);
    }

    /* truncation: a prefix of the full encoding, never past cap */

    want = strlen("a%20b%C3%A9");

    for (i = 0; i <= want + 1; i++) {
        memset(out, 'X', sizeof(out));
        n = al_uri_escape(out, i, "a b\xc3\xa9", 5, 0);

        if (n != want
            || memcmp(out, "a%20b%C3%A9", i < want ? i : want) != 0
            || out[i < want ? i : want] != 'X')
        {
            break;
        }
    }

    tap_is_int((long) i, (long) want + 2,
               "truncated escape is a prefix, stops at cap, full length");

    n = al_uri_escape(NULL, 0, "%%%", 3, 1);
    tap_is_int((long) n, 9, "cap 0 with NULL out returns the length");
}


/*
 * A byte a re-encoded segment keeps raw is one every upstream reads as
 * itself: a path accepts it raw and reads it so, and a form decoder
 * (urldecode(), URLDecoder: '+' is a space) does too.  So the bytes kept
 * are exactly those the path accepts as themselves, but '+'.
 */

static void
test_escape_plain(void)
{
    int          kept, plain;
    char         t[4], out[4];
    unsigned     c, wrong;
    const char  *why;

    wrong = 256;

    for (c = 0; c < 256; c++) {
        t[0] = '/';
        t[1] = '0';
        t[2] = (char) c;
        t[3] = '0';

        plain = al_path_parse(&path, t, 4, &why) == 0 && path.nseg == 1
                && path.seg[0].len == 3
                && memcmp(path.seg[0].data, t + 1, 3) == 0
                && c != '+';

        kept = al_uri_escape(out, sizeof(out), t + 2, 1, 0) == 1
               && out[0] == (char) c;

        if (kept != plain) {
            wrong = c;
            break;
        }
    }

    tap_is_int((long) wrong, 256, "a segment keeps raw only what every "
               "decoder reads as itself, never '+'");
}


/*
 * Every good target, re-encoded from its decoded form, must parse back to
 * the same segments and parameters.
 */

static void
test_round_trip(void)
{
    int                ok;
    char               uri[AL_URI_MAX], name[256];
    size_t             i, k, n, cap;
    al_path_t          path2;
    al_query_t         query2;
    const char        *why, *t;
    static const char  *targets[] = {
        "/",
        "/caf%C3%A9/a%2Cb/%41",
        "/a%20b/c%3Fd%23e/!$&'()*+,=:@",
        "/a+b/a%2Bb/c%2b%2B+",
        "/x?q=a%2B+b%20c&a+b=%2B",
        "/x?q=hello+world&a%2Bb=c%3D%26d&flag",
        "/x?path=/a/b?c&n=%E2%82%AC&e="
    };

    for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        t = targets[i];
        snprintf(name, sizeof(name), "round trip: %s", t);

        if (al_target_parse(t, strlen(t), &path, &query, &why) != 0) {
            tap_ok(0, name);
            continue;
        }

        n = 0;
        cap = sizeof(uri);

        if (path.nseg == 0) {
            uri[n++] = '/';
        }

        for (k = 0; k < path.nseg; k++) {
            uri[n++] = '/';
            n += al_uri_escape(uri + n, cap - n, path.seg[k].data,
                               path.seg[k].len, 0);
        }

        for (k = 0; k < query.nparam; k++) {
            uri[n++] = k ? '&' : '?';
            n += al_uri_escape(uri + n, cap - n, query.param[k].name.data,
                               query.param[k].name.len, 1);
            uri[n++] = '=';
            n += al_uri_escape(uri + n, cap - n, query.param[k].value.data,
                               query.param[k].value.len, 1);
        }

        if (al_target_parse(uri, n, &path2, &query2, &why) != 0) {
            tap_ok(0, name);
            continue;
        }

        ok = path2.nseg == path.nseg && query2.nparam == query.nparam;

        for (k = 0; ok && k < path.nseg; k++) {
            ok = path2.seg[k].len == path.seg[k].len
                 && memcmp(path2.seg[k].data, path.seg[k].data,
                           path.seg[k].len) == 0;
        }

        for (k = 0; ok && k < query.nparam; k++) {
            ok = query2.param[k].name.len == query.param[k].name.len
                 && query2.param[k].value.len == query.param[k].value.len
                 && memcmp(query2.param[k].name.data,
                           query.param[k].name.data,
                           query.param[k].name.len) == 0
                 && memcmp(query2.param[k].value.data,
                           query.param[k].value.data,
                           query.param[k].value.len) == 0;
        }

        tap_ok(ok, name);
    }
}


/*
 * Every code point above U+007F against tests/unit/nfkc.h, the lists
 * tests/unit/nfkc.py derives from Unicode's data, and bestfit.h, Windows'
 * best-fit ones, in each nfkc_cases[] place: refused as a dot segment or
 * a slash-like or percent-like character exactly when a table says so,
 * and otherwise kept as a name.
 */

static void
test_nfkc(void)
{
    int          rc;
    char         target[64], name[128], first[96];
    size_t       i, len, before, after, wrong;
    uint32_t     cp;
    const char  *why, *want;

    for (i = 0; i < sizeof(nfkc_cases) / sizeof(nfkc_cases[0]); i++) {
        wrong = 0;
        first[0] = '\0';
        before = strlen(nfkc_cases[i].before);
        after = strlen(nfkc_cases[i].after);
        memcpy(target, nfkc_cases[i].before, before);

        for (cp = 0x80; cp <= 0x10ffff; cp++) {
            if (cp >= 0xd800 && cp <= 0xdfff) {
                continue;
            }

            len = before + nfkc_escape(target + before, cp);
            memcpy(target + len, nfkc_cases[i].after, after);
            len += after;

            why = NULL;
            rc = al_path_parse(&path, target, len, &why);
            want = nfkc_want(&nfkc_cases[i], cp);

            if ((want == NULL && rc == 0)
                || (want != NULL && rc == -1 && strcmp(why, want) == 0))
            {
                continue;
            }

            if (wrong++ == 0) {
                snprintf(first, sizeof(first), "U+%04X: %s, expected %s",
                         (unsigned) cp, rc == 0 ? "accepted" : why,
                         want != NULL ? want : "a name");
            }
        }

        snprintf(name, sizeof(name), "Unicode %s, every code point: %sX%s",
                 NFKC_UNICODE, nfkc_cases[i].before, nfkc_cases[i].after);

        if (!tap_ok(wrong == 0, name)) {
            printf("# %zu code points wrong, the first: %s\n", wrong, first);
        }
    }
}


static const char *
nfkc_want(const nfkc_case_t *c, uint32_t cp)
{
    if (NFKC_HAS(nfkc_slash, cp) || NFKC_HAS(bestfit_slash, cp)) {
        return "slash-like character";
    }

    if (NFKC_HAS(nfkc_percent, cp) || NFKC_HAS(bestfit_percent, cp)) {
        return "percent-like character";
    }

    if (c->dot && (NFKC_HAS(nfkc_dot, cp) || NFKC_HAS(bestfit_dot, cp))) {
        return "dot segment";
    }

    if (c->space
        && (NFKC_HAS(nfkc_space, cp) || NFKC_HAS(bestfit_space, cp)))
    {
        return "dot segment";
    }

    if (c->drive
        || (c->colon
            && (NFKC_HAS(nfkc_colon, cp) || NFKC_HAS(bestfit_colon, cp))))
    {
        return "drive letter";
    }

    return NULL;
}


static int
nfkc_has(const uint32_t *set, size_t n, uint32_t cp)
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
 * al_fold_like(), what the patterns are matched against besides the value:
 * every code point above U+007F is replaced exactly when a list of
 * nfkc.h or bestfit.h has it, by the ASCII that list says it becomes (all
 * of NFKC's text for the few that become more than one character).
 */

static void
test_fold(void)
{
    char         in[8], out[8], first[96];
    size_t       n, len, folded, wrong;
    uint32_t     cp;
    const char  *want;

    wrong = 0;
    first[0] = '\0';

    for (cp = 0x80; cp <= 0x10ffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) {
            continue;
        }

        in[0] = 'x';
        len = 1 + nfkc_utf8(in + 1, cp);
        in[len++] = 'y';

        folded = al_fold_like(in, len, out, &n);
        want = fold_want(cp);

        if (want == NULL
            ? (folded == 0 && n == len && memcmp(in, out, len) == 0)
            : (folded == 1 && n == strlen(want) + 2 && out[0] == 'x'
               && memcmp(out + 1, want, n - 2) == 0 && out[n - 1] == 'y'))
        {
            continue;
        }

        if (wrong++ == 0) {
            snprintf(first, sizeof(first), "U+%04X: %zu replaced, %zu "
                     "bytes, expected %s", (unsigned) cp, folded, n,
                     want != NULL ? want : "none");
        }
    }

    if (!tap_ok(wrong == 0, "al_fold_like(), every code point")) {
        printf("# %zu code points wrong, the first: %s\n", wrong, first);
    }

    folded = al_fold_like("a\xe2\x84\x80\xe2\x80\xa6\xc2\xa5", 9, NULL,
                          NULL);
    tap_ok(folded == 3, "al_fold_like() counts without out");

    folded = al_fold_like("a\xe2\x84\x80\xe2\x80\xa6\xc2\xa5", 9, out,
                          &n);
    tap_ok(folded == 3 && n == 8 && memcmp(out, "aa/c...\\", 8) == 0,
           "U+2100, U+2026, U+00A5: \"a/c\", \"...\", '\\', as NFKC and "
           "best fit read them");
}


/* what a code point is folded to; NULL: kept */

static const char *
fold_want(uint32_t cp)
{
    switch (cp) {
    case 0x00a5: case 0x20a9: case 0x2216: case 0xfe68: case 0xff3c:
        return "\\";

    /* NFKC's own text where it is more than one character */
    case 0x2025: case 0xfe30:
        return "..";
    case 0x2026: case 0xfe19:
        return "...";
    case 0x2100:
        return "a/c";
    case 0x2101:
        return "a/s";
    case 0x2105:
        return "c/o";
    case 0x2106:
        return "c/u";
    case 0x2a74:
        return "::=";
    }

    if (NFKC_HAS(nfkc_slash, cp) || NFKC_HAS(bestfit_slash, cp)) {
        return "/";
    }

    if (NFKC_HAS(nfkc_percent, cp) || NFKC_HAS(bestfit_percent, cp)) {
        return "%";
    }

    if (NFKC_HAS(nfkc_colon, cp) || NFKC_HAS(bestfit_colon, cp)) {
        return ":";
    }

    if (NFKC_HAS(nfkc_dot, cp) || NFKC_HAS(bestfit_dot, cp)) {
        return ".";
    }

    if (NFKC_HAS(nfkc_space, cp) || NFKC_HAS(bestfit_space, cp)) {
        return " ";
    }

    return NULL;
}


/* cp as UTF-8; returns the length */

static size_t
nfkc_utf8(char *out, uint32_t cp)
{
    size_t                      i, n;
    static const unsigned char  lead[] = { 0, 0, 0xc0, 0xe0, 0xf0 };

    n = (cp < 0x800) ? 2 : (cp < 0x10000) ? 3 : 4;

    for (i = n - 1; i > 0; i--) {
        out[i] = (char) (0x80 | (cp & 0x3f));
        cp >>= 6;
    }

    out[0] = (char) (lead[n] | cp);

    return n;
}


/* cp as percent-encoded UTF-8; returns the length */

static size_t
nfkc_escape(char *out, uint32_t cp)
{
    size_t                      i, n;
    unsigned char               b[4];
    static const unsigned char  lead[] = { 0, 0, 0xc0, 0xe0, 0xf0 };

    n = (cp < 0x800) ? 2 : (cp < 0x10000) ? 3 : 4;

    for (i = n - 1; i > 0; i--) {
        b[i] = (unsigned char) (0x80 | (cp & 0x3f));
        cp >>= 6;
    }

    b[0] = (unsigned char) (lead[n] | cp);

    for (i = 0; i < n; i++) {
        out[3 * i] = '%';
        out[3 * i + 1] = "0123456789ABCDEF"[b[i] >> 4];
        out[3 * i + 2] = "0123456789ABCDEF"[b[i] & 0x0f];
    }

    return 3 * n;
}


/*
 * al_target_parse_drives(): a drive segment kept and marked, a drive and
 * a dot segment refused, and every other refusal of al_target_parse()
 * the same; al_target_parse() keeps refusing every drive.
 */

static void
test_drives(void)
{
    int          rc, ok;
    char         name[256], buf[3 * AL_SEGMENTS_MAX + 8];
    size_t       i, n, len;
    const char  *why, *t, *want;

    for (i = 0; i < sizeof(drive_kept) / sizeof(drive_kept[0]); i++) {
        t = drive_kept[i].target;
        len = strlen(t);
        why = NULL;

        snprintf(name, sizeof(name), "drives kept: %s", printable(t, len));

        rc = al_target_parse_drives(t, len, &path, &query, &why);
        if (rc != 0) {
            tap_ok(0, name);
            tap_diag("why: ", why);
            continue;
        }

        want = drive_kept[i].seg;
        ok = (path.drive == drive_kept[i].drive
              && path.seg[path.nseg - 1].len == strlen(want)
              && memcmp(path.seg[path.nseg - 1].data, want, strlen(want))
                 == 0);
        tap_ok(ok, name);

        rc = al_target_parse(t, len, &path, &query, &why);
        snprintf(name, sizeof(name), "al_target_parse still %s: %s",
                 drive_kept[i].drive ? "refuses" : "takes",
                 printable(t, len));
        tap_ok(drive_kept[i].drive ? rc == -1 && path.nseg == 0
                                     && path.drive == 0
                                     && strcmp(why, "drive letter") == 0
                                   : rc == 0 && path.drive == 0, name);
    }

    for (i = 0; i < sizeof(drive_refused) / sizeof(drive_refused[0]); i++) {
        t = drive_refused[i].target;
        len = strlen(t);

        /* a kept drive before the refusal leaves no mark behind */
        (void) al_target_parse_drives("/A:B", 4, &path, &query, &why);

        why = NULL;
        rc = al_target_parse_drives(t, len, &path, &query, &why);

        snprintf(name, sizeof(name), "drives kept, still refused: %s",
                 printable(t, len));

        if (rc != -1 || path.nseg != 0 || path.drive != 0) {
            tap_ok(0, name);
            continue;
        }

        tap_is_str(why, drive_refused[i].why, name);
    }

    /* every refusal of the table above but a drive's is the same */

    n = 0;
    ok = 1;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (strcmp(bad[i].why, "drive letter") == 0) {
            continue;
        }

        len = bad[i].len ? bad[i].len : strlen(bad[i].target);
        why = NULL;
        rc = al_target_parse_drives(bad[i].target, len, &path, &query, &why);
        n++;

        if (rc != -1 || why == NULL || strcmp(why, bad[i].why) != 0) {
            if (ok) {
                printf("# %s: %s\n", printable(bad[i].target, len),
                       rc == -1 ? why : "accepted");
            }
            ok = 0;
        }
    }

    snprintf(name, sizeof(name), "drives kept: the other %zu refusals "
             "unchanged", n);
    tap_ok(ok && n > 100, name);

    /* the last of 64 segments has the last bit */

    n = 0;
    for (i = 0; i < AL_SEGMENTS_MAX - 1; i++) {
        buf[n++] = '/';
        buf[n++] = 'a';
    }
    memcpy(buf + n, "/C:x", 4);
    n += 4;

    rc = al_target_parse_drives(buf, n, &path, &query, &why);
    tap_ok(rc == 0 && path.nseg == AL_SEGMENTS_MAX
           && path.drive == (uint64_t) 1 << (AL_SEGMENTS_MAX - 1),
           "drives kept: the 64th segment's bit");
}


/*
 * Every code point as the drive's letter and as its colon, before dots
 * and before a name: kept before a name, refused before dots, exactly
 * when al_target_parse() refuses the name as a drive; the separator-likes
 * keep their own refusal.
 */

static void
test_drives_nfkc(void)
{
    int          rc;
    char         target[64], first[96], name[128];
    size_t       i, n, len, wrong;
    uint32_t     cp;
    const char  *why, *strict, *want;

    static const struct {
        const char  *before;
        const char  *after;
    } cases[] = {
        { "/x/", ":.." }, { "/x/", ":x" }, { "/x/C", ".." }, { "/x/C", "x" }
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wrong = 0;
        first[0] = '\0';

        for (cp = 0x80; cp <= 0x10ffff; cp++) {
            if (cp >= 0xd800 && cp <= 0xdfff) {
                continue;
            }

            n = strlen(cases[i].before);
            memcpy(target, cases[i].before, n);
            len = n + nfkc_escape(target + n, cp);
            n = strlen(cases[i].after);
            memcpy(target + len, cases[i].after, n);
            len += n;

            strict = NULL;
            if (al_path_parse(&path, target, len, &strict) == 0) {
                strict = NULL;
            }

            /* what the drives-kept parse must say: the strict refusal,
               but a drive kept before a name */

            want = strict;
            if (strict != NULL && strcmp(strict, "drive letter") == 0
                && cases[i].after[strlen(cases[i].after) - 1] == 'x')
            {
                want = NULL;
            }

            why = NULL;
            rc = al_target_parse_drives(target, len, &path, &query, &why);

            if (rc == 0 && want == NULL
                && path.drive == (strict != NULL ? 0x2u : 0u))
            {
                continue;
            }

            if (rc == -1 && want != NULL && strcmp(why, want) == 0) {
                continue;
            }

            if (wrong++ == 0) {
                snprintf(first, sizeof(first), "U+%04X: %s, expected %s",
                         (unsigned) cp, rc == 0 ? "kept" : why,
                         want != NULL ? want : "kept");
            }
        }

        snprintf(name, sizeof(name), "drives kept, every code point: %sX%s",
                 cases[i].before, cases[i].after);

        if (!tap_ok(wrong == 0, name)) {
            printf("# %zu code points wrong, the first: %s\n", wrong, first);
        }
    }
}


int
main(void)
{
    test_bad_targets();
    test_good_paths();
    test_good_queries();
    test_limits();
    test_direct();
    test_escape();
    test_escape_plain();
    test_round_trip();
    test_nfkc();
    test_fold();
    test_drives();
    test_drives_nfkc();

    return tap_done();
}
