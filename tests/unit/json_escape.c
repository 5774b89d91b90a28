/*
 * Unit tests for al_json_escape(), the escaper of every JSON line the
 * modules write (deny log, journal, status, and through al_llm_out_json()
 * the usage log): valid UTF-8 as it is, strictly (no overlong form, no
 * surrogate, nothing past U+10FFFF, no sequence cut short), controls and
 * invalid bytes as \u00XX; al_json_escape_len() the length it writes;
 * the original bytes read back from the line; al_utf8_len() against every
 * code point and every 2, 3 and 4 byte string of interest; al_utf8_cut()
 * never splitting a sequence, and keeping the escaped form of what it
 * keeps.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "airlock.h"
#include "al_llm.h"
#include "al_llm_internal.h"
#include "tap.h"


static void test_cases(void);
static void test_utf8_len(void);
static void test_back(void);
static void test_cut(void);
static void test_format(void);
static void test_llm_out(void);
static void test_llm_cut(void);
static size_t escape(char *out, const char *s, size_t len);
static size_t encode(unsigned char *p, uint32_t cp);
static size_t back(unsigned char *out, const char *e, size_t n);


int
main(void)
{
    test_cases();
    test_utf8_len();
    test_back();
    test_cut();
    test_format();
    test_llm_out();

    return tap_done();
}


/* escapes s into out (NUL-terminated); fails the test when the lengths
   al_json_escape_len() and al_json_escape() give differ */

static size_t
escape(char *out, const char *s, size_t len)
{
    size_t  n, want;

    want = al_json_escape_len(s, len);
    n = (size_t) (al_json_escape(out, s, len) - out);
    out[n] = '\0';

    if (n != want) {
        tap_diag("escape_len", s);
        return (size_t) -1;
    }

    return n;
}


static void
test_cases(void)
{
    size_t  i;
    char    out[256];

    static const struct {
        const char  *in;
        size_t       len;
        const char  *want;
        const char  *name;
    } cases[] = {
        { "GET /x", 6, "GET /x", "printable ASCII as it is" },
        { "a\"b\\c", 5, "a\\\"b\\\\c", "quote and backslash" },
        { "a\nb\x1b\x7f", 5, "a\\u000ab\\u001b\\u007f",
          "controls and DEL as \\u00XX, as before" },
        { "a\0b", 3, "a\\u0000b", "NUL as \\u0000" },
        { "/logs/caf\xc3\xa9", 11, "/logs/caf\xc3\xa9",
          "a two byte character as it is" },
        { "\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf", 14,
          "\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf",
          "three and four byte characters, U+FFFF, U+10FFFF as they are" },
        { "\xc2\xa0\xc3\xbf", 4, "\xc2\xa0\xc3\xbf",
          "U+00A0 and U+00FF as they are" },
        { "caf\xe9", 4, "caf\\u00e9", "a Latin-1 byte as \\u00e9" },
        { "\xc0\xaf\xc1\xbf", 4, "\\u00c0\\u00af\\u00c1\\u00bf",
          "an overlong two byte form, byte by byte" },
        { "\xe0\x80\xaf", 3, "\\u00e0\\u0080\\u00af",
          "an overlong three byte form" },
        { "\xf0\x8f\xbf\xbf", 4, "\\u00f0\\u008f\\u00bf\\u00bf",
          "an overlong four byte form" },
        { "\xed\xa0\x80\xed\xbf\xbf", 6,
          "\\u00ed\\u00a0\\u0080\\u00ed\\u00bf\\u00bf",
          "surrogates (CESU-8) byte by byte" },
        { "\xf4\x90\x80\x80", 4, "\\u00f4\\u0090\\u0080\\u0080",
          "U+110000 byte by byte" },
        { "\xf5\x80\x80\x80\xff\xfe", 6,
          "\\u00f5\\u0080\\u0080\\u0080\\u00ff\\u00fe",
          "bytes that begin no sequence" },
        { "x\xe2\x82", 3, "x\\u00e2\\u0082",
          "a sequence cut short at the end" },
        { "\xe2\x82x", 3, "\\u00e2\\u0082x",
          "a sequence cut short by ASCII" },
        { "\xc3\xc3\xa9", 3, "\\u00c3\xc3\xa9",
          "a lead byte, then a whole character" },
        { "\x80\xbf", 2, "\\u0080\\u00bf", "lone continuation bytes" },
        { "\xc2\x9b" "31m\xc2\x85", 7, "\\u009b31m\\u0085",
          "C1 controls (CSI, NEL) as \\u00XX" },
        { "a\xe2\x80\xa8" "b\xe2\x80\xa9", 8, "a\\u2028b\\u2029",
          "line and paragraph separators as \\u2028, \\u2029" },
        { "\xe2\x80\xae" "fdp.exe", 10, "\\u202efdp.exe",
          "a right-to-left override as \\u202e" },
        { "\xe2\x81\xa6x\xe2\x81\xa9\xe2\x80\x8f", 10,
          "\\u2066x\\u2069\\u200f", "isolates and a direction mark" },
        { "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", 12,
          "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa",
          "their neighbours U+2027, U+202F, U+2065, U+206A as they are" },
        { "\xe2\x80\xae", 2, "\\u00e2\\u0080",
          "U+202E cut short: the bytes as \\u00XX" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (escape(out, cases[i].in, cases[i].len) == (size_t) -1) {
            tap_ok(0, cases[i].name);
            continue;
        }

        tap_is_str(out, cases[i].want, cases[i].name);
    }
}


static size_t
encode(unsigned char *p, uint32_t cp)
{
    if (cp < 0x80) {
        p[0] = (unsigned char) cp;
        return 1;
    }

    if (cp < 0x800) {
        p[0] = (unsigned char) (0xc0 | (cp >> 6));
        p[1] = (unsigned char) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        p[0] = (unsigned char) (0xe0 | (cp >> 12));
        p[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
        p[2] = (unsigned char) (0x80 | (cp & 0x3f));
        return 3;
    }

    p[0] = (unsigned char) (0xf0 | (cp >> 18));
    p[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
    p[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
    p[3] = (unsigned char) (0x80 | (cp & 0x3f));
    return 4;
}


static void
test_utf8_len(void)
{
    size_t         n, k, bad, valid;
    uint32_t       cp, x;
    unsigned char  p[4];

    /* every code point: its encoding is one valid sequence, but for
       a surrogate's */

    bad = 0;

    for (cp = 0x80; cp <= 0x10ffff; cp++) {
        n = encode(p, cp);
        k = al_utf8_len(p, n);

        if (k != ((cp >= 0xd800 && cp <= 0xdfff) ? 0 : n)
            || (n > 1 && al_utf8_len(p, n - 1) != 0))
        {
            bad++;
        }
    }

    tap_ok(bad == 0, "al_utf8_len: every code point's encoding, "
                     "no surrogate, none cut short");

    /* every string of 2 and 3 bytes with a lead byte 80..FF, and of 4
       below: as many valid as there are code points of that length */

    valid = 0;

    for (x = 0x8000; x <= 0xffff; x++) {
        p[0] = (unsigned char) (x >> 8);
        p[1] = (unsigned char) x;
        valid += (al_utf8_len(p, 2) == 2);
    }

    tap_is_int((long) valid, 0x800 - 0x80, "al_utf8_len: 1920 valid "
               "strings of 2 bytes");

    valid = 0;

    for (x = 0x800000; x <= 0xffffff; x++) {
        p[0] = (unsigned char) (x >> 16);
        p[1] = (unsigned char) (x >> 8);
        p[2] = (unsigned char) x;
        valid += (al_utf8_len(p, 3) == 3);
    }

    tap_is_int((long) valid, 0x10000 - 0x800 - 0x800,
               "al_utf8_len: 61440 valid strings of 3 bytes");

    /* leads F0..F7, the other bytes 7F..C0: every continuation byte
       and one on each side */

    valid = 0;

    for (x = 0; x < 8 * 66 * 66 * 66; x++) {
        p[0] = (unsigned char) (0xf0 + x / (66 * 66 * 66));
        p[1] = (unsigned char) (0x7f + x / (66 * 66) % 66);
        p[2] = (unsigned char) (0x7f + x / 66 % 66);
        p[3] = (unsigned char) (0x7f + x % 66);
        valid += (al_utf8_len(p, 4) == 4);
    }

    tap_is_int((long) valid, 0x110000 - 0x10000,
               "al_utf8_len: 1048576 valid strings of 4 bytes");
}


/*
 * The bytes a line stands for: \u00XX as byte XX, \" and \\ as the byte,
 * other bytes as they are (the test's inputs hold no C1 control).
 */

static size_t
back(unsigned char *out, const char *e, size_t n)
{
    size_t  i, m;

    m = 0;

    for (i = 0; i < n; /* void */) {
        if (e[i] == '\\' && e[i + 1] == 'u') {
            out[m++] = (unsigned char) strtoul((char []) { e[i + 4], e[i + 5],
                                                           '\0' }, NULL, 16);
            i += 6;

        } else if (e[i] == '\\') {
            out[m++] = (unsigned char) e[i + 1];
            i += 2;

        } else {
            out[m++] = (unsigned char) e[i++];
        }
    }

    return m;
}


static void
test_back(void)
{
    size_t         i, j, len, n, bad, ascii;
    uint32_t       seed;
    unsigned char  in[64], got[64];
    char           out[64 * 6 + 1];

    static const unsigned char  bytes[] = {
        'a', '"', '\\', 0x00, 0x1f, 0x7f, 0x80, 0xa0, 0xbf, 0xc0, 0xc3,
        0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff
    };

    bad = 0;
    ascii = 0;
    seed = 12345;

    for (i = 0; i < 200000; i++) {
        len = i % 17;

        for (j = 0; j < len; j++) {
            seed = seed * 1103515245 + 12345;
            in[j] = bytes[(seed >> 16) % sizeof(bytes)];

            /* no C1 control: U+0080..U+009F reads back as one byte */
            if (j > 0 && in[j - 1] == 0xc2 && in[j] < 0xa0) {
                in[j] = 0xa0;
            }
        }

        n = escape(out, (char *) in, len);

        if (n == (size_t) -1 || back(got, out, n) != len
            || memcmp(got, in, len) != 0)
        {
            bad++;
        }

        for (j = 0; j < n; j++) {
            if ((unsigned char) out[j] < 0x20 || out[j] == 0x7f) {
                ascii++;
            }
        }
    }

    tap_ok(bad == 0, "the original bytes read back from every line");
    tap_ok(ascii == 0, "no control byte in a line");
}


static void
test_cut(void)
{
    size_t         i, j, len, max, n, bad, split;
    uint32_t       seed;
    unsigned char  in[24];
    char           whole[24 * 6 + 1], part[24 * 6 + 1];

    static const unsigned char  bytes[] = {
        'a', 0x80, 0x9f, 0xa9, 0xbf, 0xc3, 0xe2, 0xed, 0xf0, 0xf4, 0xff
    };

    tap_is_int((long) al_utf8_cut("caf\xc3\xa9", 5, 4), 3,
               "al_utf8_cut: not inside a two byte character");
    tap_is_int((long) al_utf8_cut("caf\xc3\xa9", 5, 5), 5,
               "al_utf8_cut: all when it fits");
    tap_is_int((long) al_utf8_cut("caf\xc3\xa9!", 6, 5), 5,
               "al_utf8_cut: right after a character");
    tap_is_int((long) al_utf8_cut("\xf0\x9f\x98\x80", 4, 3), 0,
               "al_utf8_cut: not inside a four byte character");
    tap_is_int((long) al_utf8_cut("a\xf0\x9f\x98\x80", 5, 2), 1,
               "al_utf8_cut: ... at any of its bytes");
    tap_is_int((long) al_utf8_cut("a\xc3\xc3", 3, 2), 2,
               "al_utf8_cut: an invalid byte is cut anywhere");
    tap_is_int((long) al_utf8_cut("a\x80\x80\x80\x80", 5, 3), 3,
               "al_utf8_cut: ... lone continuation bytes too");

    /* what is kept is escaped as in the whole string, and no valid
       sequence begins in it and ends past it */

    bad = 0;
    split = 0;
    seed = 99;

    for (i = 0; i < 100000; i++) {
        len = i % 23 + 1;

        for (j = 0; j < len; j++) {
            seed = seed * 1103515245 + 12345;
            in[j] = bytes[(seed >> 16) % sizeof(bytes)];
        }

        (void) escape(whole, (char *) in, len);

        for (max = 0; max <= len; max++) {
            n = al_utf8_cut((char *) in, len, max);

            if (n > max || (max == len && n != len)) {
                bad++;
                continue;
            }

            (void) escape(part, (char *) in, n);

            if (strncmp(whole, part, strlen(part)) != 0) {
                bad++;
            }

            for (j = (n > 3) ? n - 3 : 0; j < n; j++) {
                if (in[j] >= 0x80
                    && j + al_utf8_len(in + j, len - j) > n)
                {
                    split++;
                }
            }

            /* cut short of max only to keep a character whole */

            if (n < max && (in[n] < 0xc2
                            || n + al_utf8_len(in + n, len - n) <= max))
            {
                bad++;
            }
        }
    }

    tap_ok(bad == 0, "al_utf8_cut: what is kept is escaped as in the whole");
    tap_ok(split == 0, "al_utf8_cut: never inside a valid sequence");
}


/*
 * Every character of three bytes: the line breaks and direction controls
 * (13 of them) as \u20XX, every other one as it is.
 */

static void
test_format(void)
{
    size_t         n, k, bad, escaped;
    uint32_t       cp;
    unsigned char  p[4];
    char           out[32], want[16];

    bad = 0;
    escaped = 0;

    for (cp = 0x800; cp <= 0xffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) {
            continue;
        }

        n = encode(p, cp);
        k = escape(out, (char *) p, n);

        if ((cp >= 0x200e && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e)
            || (cp >= 0x2066 && cp <= 0x2069))
        {
            (void) snprintf(want, sizeof(want), "\\u%04x", (unsigned) cp);
            escaped++;

            if (k != 6 || strcmp(out, want) != 0) {
                bad++;
            }

        } else if (k != n || memcmp(out, p, n) != 0) {
            bad++;
        }
    }

    tap_ok(bad == 0 && escaped == 13, "U+200E, U+200F, U+2028..U+202E, "
           "U+2066..U+2069 as \\u20XX, every other character of three "
           "bytes as it is");
}


static void
test_llm_out(void)
{
    char          buf[128];
    al_llm_out_t  o;

    al_llm_out_init(&o, buf, sizeof(buf));
    al_llm_out_json(&o, "caf\xc3\xa9 \xe9\xc2\x9b\x01\n", 11);
    tap_is_str(buf, "\"caf\xc3\xa9 \\u00e9\\u009b\\u0001\\n\"",
               "al_llm_out_json: UTF-8 as it is, an invalid byte and a C1 "
               "control as al_json_escape() writes them");

    al_llm_out_init(&o, buf, sizeof(buf));
    al_llm_out_json(&o, "a\xe2\x80\xae" "b\xe2\x80\xa8\xe2\x82\xac", 11);
    tap_is_str(buf, "\"a\\u202eb\\u2028\xe2\x82\xac\"",
               "al_llm_out_json: a bidi override and a line separator as "
               "\\u20XX, U+20AC as it is");

    test_llm_cut();
}


/* the usage line's model, cut at AL_LLM_MODEL_MAX / 2, not inside é */

static void
test_llm_cut(void)
{
    char              name[AL_LLM_MODEL_MAX], want[AL_LLM_MODEL_MAX];
    char              line[AL_LLM_RECORD_MAX];
    size_t            max;
    json_t           *j, *m;
    json_error_t      err;
    al_llm_record_t   rec;

    max = AL_LLM_MODEL_MAX / 2;

    memset(name, 'm', max - 1);
    memcpy(name + max - 1, "\xc3\xa9xyz", 5);
    memcpy(want, name, max - 1);

    memset(&rec, 0, sizeof(rec));
    rec.time_ms = 1720000000123LL;
    rec.request_id.data = "4f9c2a";
    rec.request_id.len = 6;
    rec.client.data = "agent";
    rec.client.len = 5;
    rec.provider = rec.client;
    rec.status = 200;
    rec.model.data = name;
    rec.model.len = max + 4;

    (void) al_llm_record_format(&rec, line, sizeof(line));

    j = json_loads(line, 0, &err);
    m = (j != NULL) ? json_object_get(j, "model") : NULL;

    tap_ok(m != NULL && json_string_length(m) == max - 1
           && memcmp(json_string_value(m), want, max - 1) == 0,
           "the usage line's model is cut before a character, not in it");

    json_decref(j);
}
